"""Job attempts, interruption attribution and the root-cause table (issue 5 §3-4)."""

import json
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest

from relkit.answers import log_end
from relkit.errors import InvalidParameterError, SchemaError
from relkit.ingest import read_file, read_path, read_sacct
from relkit.jobs import (
    build_interruptions,
    build_job_attempts,
    interruption_summary,
    job_interruptions,
    job_table,
    root_cause_table,
)
from relkit.schema import POLARS_SCHEMAS
from relkit.store import Store

DATA = Path(__file__).parent / "data"
NO_INCIDENTS = pl.DataFrame()


def t(h: float) -> datetime:
    return datetime(2025, 2, 1, tzinfo=UTC) + timedelta(hours=h)


@pytest.fixture
def c08() -> tuple[pl.DataFrame, pl.DataFrame]:
    store = Store(":memory:")
    read_sacct(store, DATA / "sacct_c08.psv", tz="UTC")
    attempts = build_job_attempts(store.table("jobs"), store.table("job_nodes"))
    return attempts, build_interruptions(attempts, NO_INCIDENTS)


def test_ref_c08_logical_jobs(c08: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """C08: 13 logical jobs; 4106 is one job with 2 attempts; 4120 is one job on
    3 nodes; 4123 is right-censored at Start + Elapsed = 09:12:44."""
    attempts, _ = c08
    assert attempts["job_id"].n_unique() == 13
    assert attempts.filter(job_id="4106")["attempt"].to_list() == [1, 2]
    het = attempts.filter(job_id="4120").row(0, named=True)
    assert (het["n_nodes"], het["n_components"]) == (3, 2)
    run = attempts.filter(job_id="4123").row(0, named=True)
    assert run["is_censored"]
    assert run["stop_ts"] == datetime(2025, 2, 2, 9, 12, 44, tzinfo=UTC)


def test_ref_c08_attribution(c08: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    """C08 'Attribution': infra 4101 NODE_FAIL (17:15:30 x 8 = 138.07 node-h)
    and 4122 BOOT_FAIL (0 s); 4106's first attempt interrupted, cause unknown
    (6:22:00 x 4 = 25.47 node-h; an interruption, not a planned one: nothing
    in the record says the requeue was deliberate); user/app 4103 OOM and
    4108_7 FAILED; policy
    4104 TIMEOUT; scheduler 4105 PREEMPTED; 4102 a user action, not a failure;
    4107 and the pending range no interruptions."""
    _, iv = c08
    by_job = {r["job_id"]: r for r in iv.iter_rows(named=True)}
    assert set(by_job) == {
        "4101",
        "4102",
        "4103",
        "4104",
        "4105",
        "4106",
        "4108_7",
        "4122",
    }
    assert by_job["4101"]["cause"] == "infrastructure"
    assert by_job["4101"]["lost_node_h_upper"] == pytest.approx(138.07, abs=0.005)
    assert by_job["4122"]["cause"] == "infrastructure"
    assert by_job["4122"]["lost_node_h_upper"] == 0.0
    assert (by_job["4106"]["attempt"], by_job["4106"]["cause"]) == (1, "unknown")
    assert by_job["4106"]["kind"] == "unexpected"
    assert by_job["4106"]["lost_node_h_upper"] == pytest.approx(25.47, abs=0.005)
    # without a run's goodput nothing says what was really lost
    assert iv["lost_gpu_h"].null_count() == iv.height
    assert iv["lost_basis"].null_count() == iv.height
    assert by_job["4103"]["cause"] == by_job["4108_7"]["cause"] == "user"
    assert by_job["4104"]["cause"] == "policy"
    assert by_job["4105"]["cause"] == "scheduler"
    assert (by_job["4102"]["cause"], by_job["4102"]["kind"]) == (
        "user_action",
        "not_failure",
    )
    # the CANCELLED steps of 4101 are consequences, not interruptions of their own
    assert iv.filter(job_id="4101").height == 1


def test_job_table_rows(c08: tuple[pl.DataFrame, pl.DataFrame]) -> None:
    store = Store(":memory:")
    read_sacct(store, DATA / "sacct_c08.psv", tz="UTC")
    table = job_table(store.table("jobs"), store.table("job_nodes"))
    assert table.height == 15
    row = table.filter(job_id="4120+1").row(0, named=True)
    assert (row["base_job_id"], row["het_offset"], row["hosts"]) == (
        "4120",
        1,
        ["cpu007"],
    )


def _attempt(
    job: str,
    state: str,
    start: float,
    end: float,
    hosts: list[str],
    exit_code: str | None = "1:0",
    attempt: int = 1,
) -> dict[str, object]:
    return {
        "source_id": 1,
        "job_id": job,
        "attempt": attempt,
        "state": state,
        "exit_code": exit_code,
        "submit_ts": t(start),
        "start_ts": t(start),
        "end_ts": t(end),
        "elapsed_s": (end - start) * 3600.0,
        "n_nodes": len(hosts),
        "n_gpus": 8 * len(hosts),
        "hosts": hosts,
    }


def _incident(
    host: str, at: float, mode: str, category: str = "hardware", *, counts: bool = True
) -> dict[str, object]:
    return {
        "host": host,
        "device": None,
        "failure_mode": mode,
        "category": category,
        "start_ts": t(at),
        "counts_as_failure": counts,
    }


def test_attribution_window_and_preference() -> None:
    """Our rules (build_interruptions Notes): an incident logged up to slack_min
    before the end explains it; a failure beats a non-failure; one after the
    end (beyond after_end_min) or long before it does not count; an incident on
    another host never does."""
    att = pl.DataFrame(
        [
            _attempt("a", "NODE_FAIL", 0, 10, ["n1", "n2"]),
            _attempt("b", "FAILED", 0, 10, ["n3"]),
            _attempt("c", "FAILED", 0, 10, ["n4"]),
            _attempt("d", "NODE_FAIL", 0, 10, ["n5"]),
        ]
    )
    inc = pl.DataFrame(
        [
            _incident("n2", 10 - 5 / 60, "gpu/hbm_uncorrectable"),
            _incident(
                "n2", 10 - 2 / 60, "network/cable_module", "network", counts=False
            ),
            _incident("n3", 10 + 5 / 60, "gpu/fallen_off_bus"),  # after the end
            _incident("n4", 3, "gpu/hang"),  # hours before: the job went on
            _incident("n9", 10, "gpu/hang"),  # not a host of any job
            _incident("n5", 10 - 1 / 60, "gpu/application_error", "user", counts=False),
        ]
    )
    iv = build_interruptions(att, inc)
    got = {
        r["job_id"]: (r["cause"], r["failure_mode"], r["host"])
        for r in iv.iter_rows(named=True)
    }
    assert got == {
        "a": ("hardware", "gpu/hbm_uncorrectable", "n2"),
        "b": ("user", None, None),
        "c": ("user", None, None),
        "d": ("user", "gpu/application_error", "n5"),
    }
    wide = build_interruptions(att, inc, slack_min=8 * 60, after_end_min=10)
    assert wide.filter(job_id="b")["failure_mode"].to_list() == ["gpu/fallen_off_bus"]
    assert wide.filter(job_id="c")["failure_mode"].to_list() == ["gpu/hang"]


def test_boot_fail_matched_before_start() -> None:
    att = pl.DataFrame([_attempt("bf", "BOOT_FAIL", 5, 5, ["n1"])])
    inc = pl.DataFrame([_incident("n1", 5 - 3 / 60, "gpu/fallen_off_bus")])
    assert build_interruptions(att, inc)["cause"].to_list() == ["hardware"]


def test_requeued_planned_only_with_a_sign_of_a_deliberate_requeue() -> None:
    """REQUEUED with no failure logged is planned only when its steps were
    cancelled and none failed (``steps_cancelled``, as ``scontrol requeue``
    leaves them); without that sign it is "interrupted, cause unknown"
    (cases/README.md C08, 4106); with a failure logged, it is an unexpected
    interruption of that cause."""
    att = pl.DataFrame(
        [
            _attempt("p", "REQUEUED", 0, 5, ["n1"], exit_code="0:0"),
            _attempt("q", "REQUEUED", 0, 5, ["n2"], exit_code="0:0"),
            _attempt("r", "REQUEUED", 0, 5, ["n3"], exit_code="0:0"),
            _attempt("s", "REQUEUED", 0, 5, ["n4"], exit_code="0:0"),
        ]
    ).with_columns(
        flags=pl.Series(["steps_cancelled", "steps_cancelled", None, "steps_failed"])
    )
    inc = pl.DataFrame([_incident("n2", 5 - 1 / 60, "network/link_down", "network")])
    iv = build_interruptions(att, inc).sort("job_id")
    assert iv.select("job_id", "cause", "kind").rows() == [
        ("p", "unknown", "planned"),
        ("q", "network", "unexpected"),
        ("r", "unknown", "unexpected"),
        ("s", "unknown", "unexpected"),
    ]


def test_secondary_preemption_for_requeue() -> None:
    """Kokolis et al. (arXiv:2410.21680): jobs preempted to make room for the
    requeue of a job a hardware failure interrupted are secondary."""
    att = pl.DataFrame(
        [
            _attempt("big", "NODE_FAIL", 0, 10, ["n1", "n2"]),
            _attempt("big", "COMPLETED", 10.2, 20, ["n2", "n3"], attempt=2),
            _attempt("small", "PREEMPTED", 1, 10.19, ["n3"], exit_code="0:0"),
            _attempt("other", "PREEMPTED", 1, 10.19, ["n7"], exit_code="0:0"),
        ]
    )
    inc = pl.DataFrame([_incident("n1", 10 - 1 / 60, "gpu/fallen_off_bus")])
    iv = build_interruptions(att, inc)
    small = iv.filter(job_id="small").row(0, named=True)
    assert (small["cause"], small["kind"], small["primary_job_id"]) == (
        "secondary",
        "secondary",
        "big",
    )
    assert iv.filter(job_id="other")["cause"].to_list() == ["scheduler"]


def test_root_cause_rows_and_fracs() -> None:
    """Our table: Table 5's 18 rows in the paper's order, then other causes,
    then planned; frac within each kind."""
    iv = pl.DataFrame(
        {
            "job_id": "r",
            "end_ts": None,
            "state": ["FAILED", "NODE_FAIL", "NODE_FAIL", "FAILED", "REQUEUED"],
            "cause": ["hardware", "hardware", "infrastructure", "user", "unknown"],
            "kind": ["unexpected"] * 4 + ["planned"],
            "failure_mode": [
                "gpu/hbm_uncorrectable",
                "gpu/unknown_xid",
                None,
                None,
                None,
            ],
        }
    )
    table = root_cause_table(iv)
    assert table.head(18)["component"].to_list()[:3] == [
        "Faulty GPU",
        "GPU HBM3 Memory",
        "Software Bug",
    ]
    rest = table.slice(18).select("kind", "component", "interruptions", "frac").rows()
    assert rest == [
        ("unexpected", "GPU (gpu/unknown_xid)", 1, 0.25),
        ("unexpected", "Job failure, no log signal", 1, 0.25),
        ("unexpected", "Node failure, no log signal", 1, 0.25),
        ("planned", "Requeued, no failure logged", 1, 1.0),
    ]
    with pytest.raises(SchemaError, match="missing column"):
        root_cause_table(iv.drop("kind"))


def test_ref_llama3_mtbi() -> None:
    """shared/reference/README.md: 419 unexpected interruptions in 54 days is
    one every 54*24/419 = 3.09 h; with the 47 planned, 2.78 h."""
    n_u, n_p = 419, 47
    iv = pl.DataFrame(
        {
            "job_id": "run",
            "end_ts": [t(1.0)] * (n_u + n_p),
            "kind": ["unexpected"] * n_u + ["planned"] * n_p,
        }
    )
    att = pl.DataFrame({"job_id": ["run"], "start_ts": [t(0)], "stop_ts": [t(54 * 24)]})
    s = interruption_summary(iv, att)
    assert s.mtbi_unexpected_h == pytest.approx(3.09, abs=0.005)
    assert s.mtbi_all_h == pytest.approx(2.78, abs=0.005)
    assert s.mtbi_unexpected_lower_h < s.mtbi_unexpected_h < s.mtbi_unexpected_upper_h


def test_bad_parameters() -> None:
    att = pl.DataFrame([_attempt("a", "FAILED", 0, 1, ["n1"])])
    with pytest.raises(InvalidParameterError, match="slack_min"):
        build_interruptions(att, NO_INCIDENTS, slack_min=-1)
    with pytest.raises(SchemaError, match="missing column"):
        build_interruptions(att.drop("hosts"), NO_INCIDENTS)


def _simulate_and_ingest(tmp: Path, days: float, seed: int) -> tuple[Store, dict]:
    from relkit.simulate import simulate_cluster, simulation_preset, write_simulation

    cfg = simulation_preset("llama3-54d", days=days, noise_lines_per_node_day=0)
    out = tmp / "sim"
    write_simulation(simulate_cluster(cfg, seed=seed), out)
    truth = json.loads((out / "ground_truth.json").read_text())
    ref_date = truth["ingest"]["kernel"].split("--reference-date ")[1].split()[0]
    store = Store(":memory:")
    read_file(store, out / "sacct.psv", kind="sacct", tz=truth["ingest"]["sacct_tz"])
    read_path(
        store,
        out / "kernel",
        kind="kernel",
        tz="UTC",
        reference_date=ref_date,
        host_from_filename=True,
    )
    return store, truth


def _check_recovery(store: Store, truth: dict) -> None:
    _, iv = job_interruptions(
        store.table("jobs"),
        store.table("job_nodes"),
        store.table("events"),
        end_of_log=log_end(store.table("sources")),
    )
    table = root_cause_table(iv)
    got = {
        r["component"]: r["interruptions"]
        for r in table.filter(kind="unexpected").iter_rows(named=True)
    }
    expected = Counter(
        x["table5_row"] for x in truth["interruptions"] if x["kind"] == "unexpected"
    )
    logged = {
        "Faulty GPU",
        "GPU HBM3 Memory",
        "Network Switch/Cable",
        "GPU SRAM Memory",
        "GPU System Processor",
        "NIC",
        "NCCL Watchdog Timeouts",
        "CPU",
        "System Memory",
    }
    for row in logged:
        assert got[row] == expected.get(row, 0), row
    failed_unlogged = {
        "Software Bug",
        "Dependency",
        "Silent Data Corruption",
        "GPU Thermal Interface + Sensor",
    }
    node_unlogged = {
        "Host Maintenance",
        "SSD",
        "Power Supply",
        "Server Chassis",
        "IO Expansion Board",
    }
    assert got.get("Job failure, no log signal", 0) == sum(
        expected.get(r, 0) for r in failed_unlogged
    )
    assert got.get("Node failure, no log signal", 0) == sum(
        expected.get(r, 0) for r in node_unlogged
    )
    counts = truth["counts"]
    assert iv.filter(kind="unexpected").height == counts["interruptions_unexpected"]
    assert iv.filter(kind="planned").height == counts["interruptions_planned"]


def test_recover_llama3_root_causes_short(tmp_path: Path) -> None:
    """Simulator ground truth (relkit.simulate, llama3-54d shortened to 8 days):
    every row with a kernel-log signal is recovered exactly; the rows without
    one (software bugs, SSDs, ...) land in the two 'no log signal' rows."""
    store, truth = _simulate_and_ingest(tmp_path, days=8, seed=3)
    _check_recovery(store, truth)


@pytest.mark.slow
def test_recover_llama3_root_causes_54_days(tmp_path: Path) -> None:
    """The whole llama3-54d preset (Table 5 of arXiv:2407.21783 as rates)."""
    store, truth = _simulate_and_ingest(tmp_path, days=54, seed=1)
    _check_recovery(store, truth)


# -- the break-it review of issue 5 ---------------------------------------------------
def test_ref_nccl_watchdog_delay_is_inside_the_default_window() -> None:
    """PyTorch ProcessGroupNCCL (``ProcessGroupNCCL.hpp``): a hung collective is
    aborted after the process-group timeout, 10 min since PyTorch 2.2 and 30
    min before (and where set explicitly); a stuck watchdog is killed by the
    heartbeat monitor (``TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC``, 480 s); then
    Slurm tears down. Review repro: an Xid 79 40 min before a FAILED end was
    blamed on the user. With the default 45 min it is hardware; an incident
    7 h before the end (the job went on) is still not blamed."""
    att = pl.DataFrame(
        [
            _attempt("x", "FAILED", 0, 10, ["n1"]),
            _attempt("y", "FAILED", 0, 10, ["n2"]),
        ]
    )
    inc = pl.DataFrame(
        [
            _incident("n1", 10 - 40 / 60, "gpu/fallen_off_bus"),
            _incident("n2", 3, "gpu/fallen_off_bus"),
        ]
    )
    iv = build_interruptions(att, inc).sort("job_id")
    assert iv.select("job_id", "cause", "failure_mode").rows() == [
        ("x", "hardware", "gpu/fallen_off_bus"),
        ("y", "user", None),
    ]
    narrow = build_interruptions(att, inc, slack_min=15).sort("job_id")
    assert narrow["cause"].to_list() == ["user", "user"]


def test_incident_before_the_attempt_started_does_not_end_it() -> None:
    """Simulator, llama3-54d seed 1 (54 days): an NCCL watchdog incident ended
    job 1223 at 22:11:01 on gpu1224; job 1224 started on the same nodes at
    22:12:01 and ended 19 min later of silent data corruption. With any
    slack of 25 min or more the window reached back to the incident and
    blamed it for 1224 too; the window now starts at the attempt's start
    (launch failures excepted)."""
    att = pl.DataFrame(
        [
            _attempt("1223", "FAILED", 0, 10, ["n1"]),
            _attempt("1224", "FAILED", 10 + 1 / 60, 10 + 20 / 60, ["n1"]),
            _attempt("bf", "BOOT_FAIL", 20, 20, ["n2"]),
        ]
    )
    inc = pl.DataFrame(
        [
            _incident("n1", 10, "network/nccl_watchdog", "network"),
            _incident("n2", 20 - 5 / 60, "gpu/fallen_off_bus"),
        ]
    )
    iv = build_interruptions(att, inc).sort("job_id")
    assert iv.select("job_id", "cause").rows() == [
        ("1223", "network"),
        ("1224", "user"),
        ("bf", "hardware"),
    ]


def test_overlapping_daily_dumps_count_a_job_once(tmp_path: Path) -> None:
    """Review repro a/day1.psv, a/day2.psv: ``sacct -S/-E`` dumps of two days
    both hold job 9001 (it ran across midnight). It is one interruption, not
    two, even though the second dump has a Partition column more; a requeued
    attempt of 9002 (another Start) in the second file stays an attempt of its
    own."""
    head = "JobID|State|ExitCode|Start|End|Elapsed|NNodes|NodeList"
    fail = (
        "9001|NODE_FAIL|1:0|2025-03-01T00:00:00|2025-03-01T12:00:00|12:00:00|2|g[1-2]"
    )
    req1 = "9002|REQUEUED|0:0|2025-03-01T00:00:00|2025-03-01T01:00:00|01:00:00|1|g3"
    req2 = "9002|FAILED|1:0|2025-03-01T02:00:00|2025-03-01T03:00:00|01:00:00|1|g3"
    day1, day2 = tmp_path / "day1.psv", tmp_path / "day2.psv"
    day1.write_text(f"{head}\n{fail}\n{req1}\n")
    # the second dump has one more column: the records are still the same
    day2.write_text(
        "\n".join(
            [f"{head}|Partition", f"{fail}|gpu", f"{req1}|gpu", f"{req2}|gpu", ""]
        )
    )
    store = Store(":memory:")
    read_sacct(store, day1, tz="UTC")
    read_sacct(store, day2, tz="UTC")
    jobs, nodes = store.table("jobs"), store.table("job_nodes")
    assert job_table(jobs, nodes).select("job_id", "state").rows() == [
        ("9001", "NODE_FAIL"),
        ("9002", "REQUEUED"),
        ("9002", "FAILED"),
    ]
    _, iv = job_interruptions(jobs, nodes, store.table("events"))
    assert sorted(iv.select("job_id", "state").rows()) == [
        ("9001", "NODE_FAIL"),
        ("9002", "FAILED"),
        ("9002", "REQUEUED"),
    ]
    assert root_cause_table(iv).filter(kind="unexpected")["interruptions"].sum() == 3


def test_normalised_events_interrupt_jobs_like_kernel_events(tmp_path: Path) -> None:
    """A normalised ``gpu_memory_uce`` event (issue 9 §4) is an incident too.

    Job 9001 ends NODE_FAIL at 12:00 on g1, g2; two rows of the mode on g1 at
    11:50 and 11:55 fold into one incident (gap 5 min <= 10) starting 11:50,
    inside the 45 min attribution slack, so it is the cause. The mode is
    outside the taxonomy with no "/", so its category, the cause, is "unknown";
    with a failure_modes row saying "hardware" it is "hardware".
    """
    psv = tmp_path / "a.psv"
    psv.write_text(
        "JobID|State|ExitCode|Start|End|Elapsed|NNodes|NodeList\n"
        "9001|NODE_FAIL|1:0|2025-03-01T00:00:00|2025-03-01T12:00:00|12:00:00|2|"
        "g[1-2]\n"
    )
    store = Store(":memory:")
    read_sacct(store, psv, tz="UTC")
    schema = POLARS_SCHEMAS["events"]
    at = [datetime(2025, 3, 1, 11, m, tzinfo=UTC) for m in (50, 55)]
    rows = [
        {
            "source_id": 9,
            "line_no": i,
            "ts": t,
            "host": "g1",
            "failure_mode": "gpu_memory_uce",
        }
        for i, t in enumerate(at, start=2)
    ]
    events = pl.DataFrame(
        [dict.fromkeys(schema.names()) | r for r in rows], schema=schema
    )
    jobs, nodes = store.table("jobs"), store.table("job_nodes")
    _, iv = job_interruptions(jobs, nodes, events)
    cols = ("job_id", "cause", "failure_mode", "host", "incident_ts")
    assert iv.select(cols).rows() == [
        ("9001", "unknown", "gpu_memory_uce", "g1", at[0])
    ]
    modes = pl.DataFrame(
        {
            "failure_mode": ["gpu_memory_uce"],
            "category": ["hardware"],
            "counts_as_failure": [True],
        }
    )
    _, iv = job_interruptions(jobs, nodes, events, failure_modes=modes)
    assert iv["cause"].to_list() == ["hardware"]


# -- issue 10 §5 ----------------------------------------------------------------------
def test_cpu_only_job_loses_no_gpu_hours() -> None:
    """sacct_gpu_cpu_mix.psv, by hand: 9101 (FAILED, AllocTRES without
    gres/gpu, 2 h on 2 nodes) loses at most 0 GPU-hours even with gpus_per_node=8
    (it was charged 2 x 8 x 2 = 32); 9102 (NODE_FAIL, gres/gpu=32, 6 h) loses
    32 x 6 = 192 GPU-hours, once although its line is in the file twice."""
    store = Store(":memory:")
    read_sacct(store, DATA / "sacct_gpu_cpu_mix.psv", tz="UTC")
    _, iv = job_interruptions(
        store.table("jobs"),
        store.table("job_nodes"),
        store.table("events"),
        gpus_per_node=8,
    )
    assert iv.select("job_id", "n_gpus", "lost_gpu_h_upper").sort("job_id").rows() == [
        ("9101", 0, 0.0),
        ("9102", 32, 192.0),
    ]
