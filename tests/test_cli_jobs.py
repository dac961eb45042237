"""The job-log verbs of issue 5: JSON row fields, reference values, errors."""

import json
from pathlib import Path

import pytest
from shared_paths import SHARED

import relkit
from relkit.cli import main

DATA = Path(__file__).parent / "data"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def c08_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    db = str(tmp_path / "c08.duckdb")
    code, _, _ = run(
        capsys,
        "ingest",
        "--db",
        db,
        "--kind",
        "sacct",
        "--tz",
        "UTC",
        str(DATA / "sacct_c08.psv"),
        "--format",
        "json",
    )
    assert code == 0
    return db


def test_jobs_json_fields(c08_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 5 §3: rows job_id, base_job_id, array_task, het_offset, attempt,
    state, cancelled_by_uid, submit_ts, start_ts, end_ts, elapsed_s, n_nodes,
    n_gpus, hosts (timestamps UTC)."""
    code, out, _ = run(capsys, "jobs", "--db", c08_db, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert list(rows[0]) == [
        "job_id",
        "base_job_id",
        "array_task",
        "het_offset",
        "attempt",
        "state",
        "cancelled_by_uid",
        "submit_ts",
        "start_ts",
        "end_ts",
        "elapsed_s",
        "n_nodes",
        "n_gpus",
        "hosts",
    ]
    by_id = {r["job_id"]: r for r in rows}
    assert by_id["4102"]["cancelled_by_uid"] == "12345"
    assert by_id["4108_7"]["array_task"] == "7"
    assert by_id["4100"]["start_ts"] == "2025-02-01T09:00:05Z"
    assert by_id["4101"]["hosts"][0] == "gpu005"


def test_interruptions_json_fields(
    c08_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 5 §3: rows job_id, attempt, end_ts, state, cause, failure_mode,
    host, n_gpus, lost_gpu_h, lost_gpu_h_upper, lost_basis; C08: 4101 loses at
    most 17:15:30 x 8 nodes x 8 GPUs (the whole attempt); with no checkpoint
    log in the store what it really lost is unknown (null)."""
    code, out, _ = run(capsys, "interruptions", "--db", c08_db, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert list(rows[0]) == [
        "job_id",
        "attempt",
        "end_ts",
        "state",
        "cause",
        "failure_mode",
        "host",
        "n_gpus",
        "lost_gpu_h",
        "lost_gpu_h_upper",
        "lost_basis",
    ]
    node_fail = next(r for r in rows if r["job_id"] == "4101")
    assert node_fail["lost_gpu_h_upper"] == pytest.approx(138.0667 * 8, abs=0.01)
    assert node_fail["lost_gpu_h"] is None
    assert node_fail["lost_basis"] is None
    code, out, _ = run(
        capsys,
        "interruptions",
        "--db",
        c08_db,
        "--kind",
        "planned",
        "--format",
        "json",
    )
    # C08: 4106's requeue is "interrupted, cause unknown", not planned
    assert json.loads(out) == []


def test_rootcause_json_and_summary(
    c08_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 5 §4: rows component, category, interruptions, pct; planned apart.
    C08 (cases/README.md): 4106's first attempt is "interrupted, cause
    unknown": counted with the unexpected ones as "Cause unknown", never as
    planned; with 4101, 4103, 4108_7 and 4122 that makes 5."""
    code, out, _ = run(capsys, "rootcause", "--db", c08_db, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert list(rows[0]) == ["component", "category", "interruptions", "pct"]
    assert rows[0]["component"] == "Faulty GPU"
    assert [r for r in rows if r["category"] == "Planned"] == []
    unknown = next(r for r in rows if r["component"] == "Cause unknown")
    assert (unknown["category"], unknown["interruptions"]) == ("Unknown", 1)
    code, out, _ = run(
        capsys, "rootcause", "--db", c08_db, "--summary", "--format", "json"
    )
    summary = json.loads(out)
    assert (summary["n_unexpected"], summary["n_planned"]) == (5, 0)
    code, out, _ = run(capsys, "rootcause", "--db", c08_db, "--job", "4101")
    assert code == 0
    assert "Node failure, no log signal" in out


def test_ref_scale_json(capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 5 §5 / shared/reference/README.md: r_f = 6.50 per 1000 node-days
    gives 1.803 h at 16,384 GPUs and 0.2254 h at 131,072."""
    code, out, err = run(
        capsys,
        "scale",
        "--failure-rate",
        "0.0065",
        "--gpus",
        "1024,16384,131072",
        "--format",
        "json",
    )
    assert code == 0
    rows = json.loads(out)
    assert list(rows[0]) == ["gpus", "mttf_h", "mttf_lower_h", "mttf_upper_h"]
    assert [round(r["mttf_h"], 4) for r in rows] == [28.8462, 1.8029, 0.2254]
    assert "projected" in err


def test_ref_check_table_cli(capsys: pytest.CaptureFixture[str]) -> None:
    """datasets/paper-tables/PROVENANCE.md: 35.3 % vs 30.1 %, sum 94.9 %, GPU
    64.0 % vs 58.7 %."""
    path = str(relkit.datasets.path("llama3_table5"))
    code, out, _ = run(capsys, "check-table", path, "--format", "json")
    assert code == 0
    bad = [r for r in json.loads(out) if not r["consistent"]]
    notes = " | ".join(r["note"] for r in bad)
    assert "148 of 419 = 35.3 %, printed 30.1 %" in notes
    assert "add to 94.9 %" in notes
    assert "268/419 = 64.0 %, its printed rows add to 58.7 %" in notes
    assert len(bad) == 3


def test_failure_share_acmetrace(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "failure-share", "--acmetrace", "--format", "json")
    assert code == 0
    assert json.loads(out)[0]["cluster"] == "Seren"


def test_k8s_ingest_cli(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    c13 = SHARED / "cases" / "C13-k8s-pod-job-records.json"
    if not c13.exists():
        pytest.skip("shared cases not present")
    db = str(tmp_path / "k.duckdb")
    code, _, _ = run(
        capsys,
        "ingest",
        "--db",
        db,
        "--kind",
        "k8s",
        "--snapshot-ts",
        "2025-07-01T16:00:00Z",
        str(c13),
    )
    assert code == 0
    code, out, _ = run(capsys, "interruptions", "--db", db, "--format", "json")
    causes = sorted((r["job_id"], r["cause"]) for r in json.loads(out))
    assert ("train-b", "infrastructure") in causes


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["scale", "--gpus", "8"], "give the node failure rate"),
        (["scale", "--failure-rate", "0.0065", "--gpus", "8,x"], "whole numbers"),
        (["check-table", "/no/such.csv"], "no such file"),
        # review of issue 5: a range message, not exit 3; no empty item
        (
            ["scale", "--failure-rate", "0.0065", "--gpus", "99999999999999999999"],
            "give whole numbers in [1, 100,000,000]",
        ),
        (
            ["scale", "--failure-rate", "0.0065", "--gpus", "1024,,2048"],
            "an empty item between commas",
        ),
    ],
)
def test_errors_exit_1(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, _, err = run(capsys, *argv)
    assert code == 1
    assert message in err
    assert "Traceback" not in err


def test_ingest_without_tz_and_empty_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(tmp_path / "x.duckdb")
    code, _, err = run(
        capsys, "ingest", "--db", db, "--kind", "sacct", str(DATA / "sacct_c08.psv")
    )
    assert code == 1
    assert "--tz ZONE" in err
    run(capsys, "ingest", "--db", db, "--kind", "sacct", str(DATA / "sacct_c09.psv"))
    code, _, err = run(capsys, "rootcause", "--db", db, "--job", "nope")
    assert code == 1
    assert "no such job" in err


def test_scale_warns_of_a_rate_per_1000_node_days(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Kokolis et al. print r_f per 1000 node-days (6.50 for RSC-1); --failure-rate
    is per node-day. 6.5 (a node failing 6.5 times a day) is projected, but with
    a warning naming 0.0065."""
    code, _, err = run(capsys, "scale", "--failure-rate", "6.5", "--gpus", "1024")
    assert code == 0
    assert "warning: failures_per_node_day = 6.5" in err
    assert "pass 0.0065" in err
    code, _, err = run(capsys, "scale", "--failure-rate", "0.0065", "--gpus", "1024")
    assert "warning" not in err


def test_check_table_strict_nan_and_duplicates(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Our contract: check-table reports and exits 0; --strict exits 1 on any
    finding (Llama 3 Table 5 has 3, datasets/paper-tables/PROVENANCE.md). A
    NaN or inf percentage is refused; a component typed twice is a finding."""
    path = str(relkit.datasets.path("llama3_table5"))
    code, _, err = run(capsys, "check-table", path, "--strict")
    assert code == 1
    assert "3 finding(s)" in err
    nan = tmp_path / "nan.csv"
    nan.write_text("component,category,count,pct\nGPU,GPU,3,nan\nNIC,Host,1,25\n")
    code, _, err = run(capsys, "check-table", str(nan))
    assert code == 1
    assert "'GPU' (line 2) is nan, not a finite number" in err
    dup = tmp_path / "dup.csv"
    dup.write_text("component,category,count,pct\nGPU,GPU,3,75\nGPU,GPU,1,25\n")
    code, out, _ = run(capsys, "check-table", str(dup), "--format", "json")
    assert code == 0
    bad = [r for r in json.loads(out) if not r["consistent"]]
    assert [(r["check"], r["subject"]) for r in bad] == [("duplicate", "GPU")]
    assert "lines 2, 3" in bad[0]["note"]
    code, _, _ = run(capsys, "check-table", str(dup), "--strict")
    assert code == 1


# -- issue 10 §5: Kubernetes and Slurm as they come ---------------------------------
def test_ingest_headerless_sacct_with_fields(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """sacct_noheader.psv (`sacct --noheader -P`): refused without --fields,
    the message naming the option with an example; read with it (4 jobs, by
    hand); --fields with another kind is refused."""
    db = str(tmp_path / "n.duckdb")
    path = str(DATA / "sacct_noheader.psv")
    base = ("ingest", "--db", db, "--kind", "sacct", "--tz", "UTC")
    code, _, err = run(capsys, *base, path)
    assert code == 1
    assert "--fields JobID,State,Start,End" in err
    assert "Traceback" not in err
    fields = (
        "JobID,JobIDRaw,JobName,Partition,State,ExitCode,Start,End,Elapsed,"
        "AllocNodes,AllocTRES,NodeList"
    )
    code, _, err = run(capsys, *base, "--fields", fields, path)
    assert code == 0, err
    assert "5 loaded, 0 ignored, 0 rejected" in err
    code, out, _ = run(capsys, "jobs", "--db", db, "--format", "json")
    assert sorted(r["job_id"] for r in json.loads(out)) == [
        "9101",
        "9102",
        "9103",
        "9104",
    ]
    k8s = str(DATA / "k8s_podlist_gang.json")
    code, _, err = run(
        capsys, "ingest", "--db", db, "--kind", "k8s", "--fields", "JobID", k8s
    )
    assert code == 1
    assert "--fields is for --kind sacct; --kind k8s does not read it" in err


def test_job_commands_without_times_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """sacct_no_times.psv has no Start, End or AllocTRES. The ingest warns on
    stderr; `interruptions` lists the NODE_FAIL of 9201 (hand count: 1) and
    warns that no incident can be matched and that its 2 nodes were charged
    8 GPUs each; `job-mttf` and `rootcause --summary` need times and exit 1
    with the fix, never an empty table with exit 0."""
    db = str(tmp_path / "t.duckdb")
    code, _, err = run(
        capsys,
        "ingest",
        "--db",
        db,
        "--kind",
        "sacct",
        str(DATA / "sacct_no_times.psv"),
    )
    assert code == 0
    assert "no Start/End column: no interruption timing is possible" in err
    assert "no AllocTRES column" in err
    code, out, err = run(capsys, "interruptions", "--db", db, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert [(r["job_id"], r["n_gpus"]) for r in rows] == [("9201", 16)]
    assert "have no Start or End time" in err
    assert "charged --gpus-per-node 8 per node" in err
    for verb in (["job-mttf"], ["rootcause", "--summary"]):
        code, out, err = run(capsys, *verb, "--db", db)
        assert code == 1, verb
        assert "have no Start or End time" in err
        assert "--format=JobID" in err
        assert "Traceback" not in err


def test_k8s_gang_is_one_interruption_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """k8s_podlist_gang.json through the CLI: the 4 pods of llm-train (8 GPUs
    each, failed within 26 s) are 1 interruption of 32 GPUs; the CPU-only
    etl-daily pod is charged 0 GPUs; the ingest says the objects had no kind
    and how the pods were grouped."""
    db = str(tmp_path / "g.duckdb")
    code, _, err = run(
        capsys,
        "ingest",
        "--db",
        db,
        "--kind",
        "k8s",
        str(DATA / "k8s_podlist_gang.json"),
    )
    assert code == 0
    assert "5 object(s) without kind read by their shape" in err
    assert "4 pods_ended_together" in err
    code, out, _ = run(capsys, "interruptions", "--db", db, "--format", "json")
    got = sorted((r["job_id"], r["attempt"], r["n_gpus"]) for r in json.loads(out))
    assert got == [("etl-daily", 1, 0), ("llm-train", 1, 32)]
