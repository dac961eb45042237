"""Runs and measured goodput (issue 11 §1): ETTR, the badput breakdown, lost GPU-hours.

Reference values: case C18 of ``shared/cases/README.md`` (Google's
ml-goodput-measurement ``GoodputDisruptionPartialRestartTest``), hand-worked
examples (the arithmetic is in each docstring), and the simulator's ground
truth (``ground_truth.json``: the run's ``ettr_frac``, ``productive_h``,
``lost_work_h`` per interruption), which relkit's own simulator knows exactly.
"""

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from shared_paths import SHARED

from relkit.errors import InvalidParameterError, SchemaError
from relkit.ingest import read_file, read_sacct
from relkit.jobs import (
    GOODPUT_ATTEMPT_SCHEMA,
    GOODPUT_RUN_SCHEMA,
    Goodput,
    build_interruptions,
    build_job_attempts,
    interruption_losses,
    measure_goodput,
)
from relkit.schema import POLARS_SCHEMAS
from relkit.simulate import simulate_cluster, simulation_preset, write_simulation
from relkit.store import Store

C18 = SHARED / "cases" / "C18-goodput-disruption-rework.jsonl"
T0 = datetime(2025, 8, 1, tzinfo=UTC)
BADPUT = [c for c in GOODPUT_RUN_SCHEMA.names() if c.startswith("badput_")]
ATTEMPT_PARTS = [
    "productive_h",
    "init_h",
    "restore_h",
    "checkpoint_h",
    "lost_progress_h",
    "recovery_h",
    "queue_h",
    "other_h",
]


def at(seconds: float) -> datetime:
    return T0 + timedelta(seconds=seconds)


def records(rows: list[dict[str, Any]]) -> pl.DataFrame:
    """A frame of the store's ``checkpoints`` table from a few dict rows."""
    schema = POLARS_SCHEMAS["checkpoints"]
    full = [{k: r.get(k) for k in schema} for r in rows]
    return pl.DataFrame(full, schema=schema, orient="row")


def read_run_log(path: Path) -> pl.DataFrame:
    """Ingest a run's JSON Lines log (C18's and the simulator's shape)."""
    store = Store(":memory:")
    read_file(store, path, kind="checkpoints")
    return store.table("checkpoints")


def assert_sums(g: Goodput) -> None:
    """Badput categories sum to wall - productive, per run and per attempt."""
    for run in g.runs.iter_rows(named=True):
        badput = sum(run[c] for c in BADPUT)
        assert badput == pytest.approx(run["wall_h"] - run["productive_h"], abs=1e-9)
        mine = g.attempts.filter(run_id=run["run_id"])
        assert mine.height == run["n_attempts"]
        assert float(mine.select(ATTEMPT_PARTS).sum().sum_horizontal()[0]) == (
            pytest.approx(run["wall_h"], abs=1e-9)
        )
    assert g.runs.schema == GOODPUT_RUN_SCHEMA
    assert g.attempts.schema == GOODPUT_ATTEMPT_SCHEMA


# -- C18 ------------------------------------------------------------------------------


@pytest.mark.skipif(not C18.exists(), reason="shared/cases not present")
def test_ref_c18_disruption_rework() -> None:
    """shared/cases/README.md C18: productive 5 unique steps x 3 s = 15 s of a
    64 s run, ETTR 15/64 = 0.234375; badput start-up 5 s (attempt 1, 0 -> 5 s),
    restore 5 s (attempt 2, job_start 50 s -> checkpoint_restored 55 s; no
    restore_s), down 30 s (20 -> 50 s), lost and recomputed 9 s (the first run
    of steps 2-4); checkpoint cost 0; one restart. Not 24/64 = 0.375."""
    g = measure_goodput(read_run_log(C18))
    run = g.runs.row(0, named=True)
    assert run["run_id"] == "run-7"
    assert run["evidence"] == "step records"
    assert run["productive_h"] * 3600 == pytest.approx(15.0, abs=1e-9)
    assert run["wall_h"] * 3600 == pytest.approx(64.0, abs=1e-9)
    assert run["ettr_frac"] == 0.234375
    assert run["badput_init_h"] * 3600 == pytest.approx(5.0, abs=1e-9)
    assert run["badput_restore_h"] * 3600 == pytest.approx(5.0, abs=1e-9)
    assert run["badput_recovery_h"] * 3600 == pytest.approx(30.0, abs=1e-9)
    assert run["badput_lost_progress_h"] * 3600 == pytest.approx(9.0, abs=1e-9)
    assert run["badput_checkpoint_h"] == 0.0
    assert run["badput_queue_h"] == run["badput_other_h"] == 0.0
    assert (run["n_interruptions"], run["n_attempts"]) == (1, 2)
    assert_sums(g)
    # the naive answer (all 8 executions) appears nowhere
    values = [v for v in run.values() if isinstance(v, float)]
    assert 0.375 not in values
    assert all(abs(v * 3600 - 24.0) > 1e-6 for v in values)
    att = g.attempts.rows(named=True)
    assert [a["ended_by"] for a in att] == ["failure", "job_end"]
    assert [a["restored_step"] for a in att] == [None, 2]
    assert att[0]["last_checkpoint_ts"] == at(11)
    # C18's save carries no save_s: said, not silently taken as measured
    assert any("no save_s" in n for n in g.notes)


def test_sparse_marks_two_level_restore() -> None:
    """By hand, 1 s steps. Attempt 1 (0 -> 27.5 s): no restore record, first
    mark 'step 9 ended' at 12 s, so step 0 starts 10 steps x 1 s earlier, at
    2 s (start-up 2 s); checkpoints of 10 steps (12 s) and 20 steps (22 s, in
    memory); failure at 27.5 s. Attempt 2 (30 -> 55 s) restores 10 steps (the
    older checkpoint) at 33 s in 2 s (start-up 1 s), steps 10-29 until 53 s,
    job_end at 55 s (2 s other). Productive 10 + 20 = 30 s; lost: steps
    10-19 of attempt 1 (10 s) + 22 -> 27.5 s after its last mark (5.5 s) =
    15.5 s; recovery 2.5 s; wall 55 s."""
    rows = [
        {"attempt": 1, "ts": at(0), "kind": "job_start", "n_gpus": 16},
        {"attempt": 1, "ts": at(12), "kind": "step_end", "step": 9},
        {"attempt": 1, "ts": at(12), "kind": "checkpoint_saved", "step": 10},
        {"attempt": 1, "ts": at(22), "kind": "step_end", "step": 19},
        {"attempt": 1, "ts": at(22), "kind": "checkpoint_saved", "step": 20},
        {"attempt": 1, "ts": at(27.5), "kind": "failure", "status": "NODE_FAIL"},
        {"attempt": 2, "ts": at(30), "kind": "job_start", "n_gpus": 16},
        {
            "attempt": 2,
            "ts": at(33),
            "kind": "checkpoint_restored",
            "step": 10,
            "restore_s": 2.0,
        },
        {"attempt": 2, "ts": at(43), "kind": "step_end", "step": 19},
        {"attempt": 2, "ts": at(53), "kind": "step_end", "step": 29},
        {"attempt": 2, "ts": at(55), "kind": "job_end", "step": 30},
    ]
    frame = records([{**r, "run_id": "r", "save_s": 0.0} for r in rows])
    g = measure_goodput(frame)
    run = g.runs.row(0, named=True)
    s = {k: v * 3600 for k, v in run.items() if k.endswith("_h") and v is not None}
    assert s["wall_h"] == pytest.approx(55.0)
    assert s["productive_h"] == pytest.approx(30.0)
    assert s["badput_lost_progress_h"] == pytest.approx(15.5)
    assert s["badput_init_h"] == pytest.approx(3.0)
    assert s["badput_restore_h"] == pytest.approx(2.0)
    assert s["badput_recovery_h"] == pytest.approx(2.5)
    assert s["badput_other_h"] == pytest.approx(2.0)
    assert run["ettr_frac"] == pytest.approx(30 / 55)
    assert run["n_gpus"] == 16
    assert_sums(g)
    lost = g.attempts["lost_progress_h"] * 3600
    assert lost.to_list() == pytest.approx([15.5, 0.0])
    assert any("mean step time" in n for n in g.notes)


def test_last_attempt_failed_keeps_its_checkpoint_only() -> None:
    """One attempt: steps of 1 s from 0 s, checkpoint of 5 steps at 5 s, step 7
    ends at 8 s, failure at 8.5 s, no restart: productive 5 s (what the
    checkpoint holds), lost 3.5 s (steps 5-7 and the one in flight)."""
    rows = [
        {"ts": at(0), "kind": "job_start"},
        {"ts": at(0), "kind": "step_start", "step": 0},
        {"ts": at(5), "kind": "checkpoint_saved", "step": 5, "save_s": 0.0},
        {"ts": at(8), "kind": "step_end", "step": 7},
        {"ts": at(8.5), "kind": "failure"},
    ]
    g = measure_goodput(records([{**r, "run_id": "r", "attempt": 1} for r in rows]))
    run = g.runs.row(0, named=True)
    assert run["productive_h"] * 3600 == pytest.approx(5.0)
    assert run["badput_lost_progress_h"] * 3600 == pytest.approx(3.5)
    assert not run["is_open"]
    assert any("no later attempt" in n for n in g.notes)
    assert_sums(g)


def test_open_run_as_of() -> None:
    """A run whose last record is a step_end at 10 s (steps of 1 s from 0 s) is
    open: without as_of it ends there (ETTR 1), with as_of = 14 s the 4 s
    after the last record are other badput and said so; an as_of before the
    last record is refused."""
    rows = [
        {"ts": at(0), "kind": "job_start"},
        {"ts": at(0), "kind": "step_start", "step": 0},
        {"ts": at(10), "kind": "step_end", "step": 9},
    ]
    frame = records([{**r, "run_id": "r", "attempt": 1} for r in rows])
    g = measure_goodput(frame)
    run = g.runs.row(0, named=True)
    assert run["is_open"]
    assert run["ettr_frac"] == 1.0
    assert g.attempts["ended_by"].to_list() == ["open"]
    later = measure_goodput(frame, as_of=at(14))
    run = later.runs.row(0, named=True)
    assert run["wall_h"] * 3600 == pytest.approx(14.0)
    assert run["badput_other_h"] * 3600 == pytest.approx(4.0)
    assert any("open" in n and "as_of" in n for n in later.notes)
    with pytest.raises(InvalidParameterError, match="before the last record"):
        measure_goodput(frame, as_of=at(9))
    with pytest.raises(InvalidParameterError, match="time-zone-aware"):
        measure_goodput(frame, as_of=datetime(2025, 8, 1))


# -- job attempts: evidence (b) and (c) -----------------------------------------------


def sched(rows: list[dict[str, Any]]) -> pl.DataFrame:
    schema = {
        "job_id": pl.String,
        "attempt": pl.Int32,
        "state": pl.String,
        "submit_ts": pl.Datetime("us", "UTC"),
        "start_ts": pl.Datetime("us", "UTC"),
        "end_ts": pl.Datetime("us", "UTC"),
        "n_gpus": pl.Int64,
        "name": pl.String,
    }
    return pl.DataFrame(
        [{k: r.get(k) for k in schema} for r in rows], schema=schema, orient="row"
    )


def hours(h: float) -> datetime:
    return T0 + timedelta(hours=h)


def test_checkpoint_times_with_attempts() -> None:
    """Evidence (b), by hand: checkpoints every 1 h of compute with a 0.1 h save,
    start-up 0.25 h. Attempt 1 (0 -> 5 h, NODE_FAIL) saves at 1.25, 2.35,
    3.45, 4.55 h (ends +0.1): 4 h kept, 0.35 h after its last save lost.
    Attempt 2 (submitted 5 h, started 5.5 h, COMPLETED 8 h) saves at 6.75 and
    7.85 h: 2 h + the 0.05 h after its last save productive. Δt = median
    spacing 1 h, start-up = 1.25 - 0 - 1 = 0.25 h each; productive 6.05 of
    8 h; queue 0.5 h; saves 0.6 h."""
    starts = [1.25, 2.35, 3.45, 4.55, 6.75, 7.85]
    frame = records(
        [
            {
                "run_id": "pre",
                "job_id": "77",
                "ts": hours(s + 0.1),
                "kind": "checkpoint_saved",
                "save_s": 360.0,
            }
            for s in starts
        ]
    )
    att = sched(
        [
            {
                "job_id": "77",
                "attempt": 1,
                "state": "NODE_FAIL",
                "submit_ts": hours(0),
                "start_ts": hours(0),
                "end_ts": hours(5),
                "n_gpus": 64,
            },
            {
                "job_id": "77",
                "attempt": 2,
                "state": "COMPLETED",
                "submit_ts": hours(5),
                "start_ts": hours(5.5),
                "end_ts": hours(8),
                "n_gpus": 64,
            },
        ]
    )
    g = measure_goodput(frame, att)
    run = g.runs.row(0, named=True)
    assert run["evidence"] == "job attempts + checkpoint times"
    assert run["productive_h"] == pytest.approx(6.05)
    assert run["wall_h"] == pytest.approx(8.0)
    assert run["badput_lost_progress_h"] == pytest.approx(0.35)
    assert run["badput_init_h"] == pytest.approx(0.5)
    assert run["badput_checkpoint_h"] == pytest.approx(0.6)
    assert run["badput_queue_h"] == pytest.approx(0.5)
    assert run["checkpoint_interval_h"] == pytest.approx(1.0)
    assert run["checkpoint_save_s"] == pytest.approx(360.0)
    assert (run["n_checkpoints"], run["n_interruptions"], run["n_gpus"]) == (6, 1, 64)
    assert run["queue_before_start_h"] == 0.0
    assert run["ettr_with_queue_frac"] == run["ettr_frac"]
    assert_sums(g)
    assert any("latest checkpoint saved before it" in n for n in g.notes)


def test_modelled_from_attempts_alone() -> None:
    """Evidence (c), by hand, Δt = 1 h, save 0.1 h, restart 0.2 h. Attempt 1
    (0 -> 10 h, NODE_FAIL): loses min(10, 0.5) = 0.5 h, 9.5 h kept = 8 cycles
    of 1.1 h (0.8 h of saves), 8.7 h productive. Attempt 2 (10.5 -> 20 h,
    FAILED, submitted 10 h): 0.2 h restart, loses 0.5 h, 8.8 h kept = 8
    cycles, 8.0 h productive. Attempt 3 (21 -> 30 h, COMPLETED, submitted
    21 h): 0.2 h restart, 8.8 h kept, 8.0 h productive. ETTR = 24.7 / 30;
    queue 0.5 h, recovery 1 h."""
    att = sched(
        [
            {"job_id": "5", "attempt": 1, "state": "NODE_FAIL", "submit_ts": hours(-1),
             "start_ts": hours(0), "end_ts": hours(10), "name": "llm"},
            {"job_id": "5", "attempt": 2, "state": "FAILED", "submit_ts": hours(10),
             "start_ts": hours(10.5), "end_ts": hours(20), "name": "llm"},
            {"job_id": "6", "attempt": 1, "state": "COMPLETED", "submit_ts": hours(21),
             "start_ts": hours(21), "end_ts": hours(30), "name": "llm"},
        ]
    )  # fmt: skip
    with pytest.raises(InvalidParameterError, match="assumed_interval_h"):
        measure_goodput(None, att, run_by="name")
    g = measure_goodput(
        None,
        att,
        run_by="name",
        assumed_interval_h=1.0,
        assumed_cost_h=0.1,
        assumed_restart_h=0.2,
    )
    run = g.runs.row(0, named=True)
    assert run["evidence"] == (
        "ETTR from scheduler records alone (modelled, assumed checkpoint interval 1 h)"
    )
    assert run["productive_h"] == pytest.approx(24.7)
    assert run["ettr_frac"] == pytest.approx(24.7 / 30)
    assert run["badput_lost_progress_h"] == pytest.approx(1.0)
    assert run["badput_checkpoint_h"] == pytest.approx(2.4)
    assert run["badput_init_h"] == pytest.approx(0.4)
    assert run["badput_queue_h"] == pytest.approx(0.5)
    assert run["badput_recovery_h"] == pytest.approx(1.0)
    assert run["queue_before_start_h"] == pytest.approx(1.0)
    assert run["ettr_with_queue_frac"] == pytest.approx(24.7 / 31)
    assert run["n_checkpoints"] is None
    assert_sums(g)
    assert any("modelled" in n for n in g.notes)
    # by job id: the Slurm requeue chain 5 (2 attempts) and job 6 apart
    by_job = measure_goodput(None, att, assumed_interval_h=1.0)
    assert by_job.runs["run_id"].to_list() == ["5", "6"]
    assert by_job.runs["n_attempts"].to_list() == [2, 1]


def test_run_filter_and_bad_options() -> None:
    att = sched(
        [
            {"job_id": "5", "state": "COMPLETED", "start_ts": hours(0),
             "end_ts": hours(1), "name": "a"},
            {"job_id": "6", "state": "COMPLETED", "start_ts": hours(0),
             "end_ts": hours(2), "name": "b"},
        ]
    )  # fmt: skip
    g = measure_goodput(None, att, run="6", assumed_interval_h=1.0)
    assert g.runs["run_id"].to_list() == ["6"]
    with pytest.raises(InvalidParameterError, match=r"run 'x'.*\['5', '6'\]"):
        measure_goodput(None, att, run="x", assumed_interval_h=1.0)
    with pytest.raises(
        InvalidParameterError, match=r"run_by 'partition' \(--run-by, run_by=\)"
    ):
        measure_goodput(None, att, run_by="partition", assumed_interval_h=1.0)
    with pytest.raises(InvalidParameterError, match="assumed_cost_h"):
        measure_goodput(None, att, assumed_interval_h=1.0, assumed_cost_h=-1.0)
    with pytest.raises(InvalidParameterError, match="no records and no job"):
        measure_goodput(None)
    with pytest.raises(SchemaError, match="kind"):
        measure_goodput(pl.DataFrame({"run_id": ["r"], "ts": [T0]}))


# -- interruption_losses ---------------------------------------------------------------


def test_interruption_losses_match_by_job_and_end() -> None:
    """Job 7's interruption at 3 h matches goodput attempt (7, end 3 h + 30 s):
    16 GPUs x (0.5 lost + 0.75 recovery + 0.25 queue + 0.1 + 0.4 start-up and
    restore of the next attempt) = 32 GPU-h; its upper bound, the whole attempt
    (48 GPU-h), pays the same downtime and restart: 48 + 16 x 1.5 = 72 GPU-h.
    Job 8's has no goodput attempt: null, upper bound unchanged. Beyond the
    tolerance, no match."""
    iv = pl.DataFrame(
        {
            "job_id": ["7", "8"],
            "end_ts": [hours(3), hours(3)],
            "n_gpus": [16, 8],
            "lost_gpu_h_upper": [48.0, 24.0],
            "lost_gpu_h": pl.Series([None, None], dtype=pl.Float64),
            "lost_basis": pl.Series([None, None], dtype=pl.String),
        }
    )
    ga = pl.DataFrame(
        {
            "run_id": "r",
            "job_id": ["7", "7"],
            "start_ts": [hours(1), hours(4)],
            "end_ts": [hours(3) + timedelta(seconds=30), hours(6)],
            "n_gpus": 16,
            "lost_progress_h": [0.5, 0.0],
            "recovery_h": [0.75, 0.0],
            "queue_h": [0.25, 0.0],
            "init_h": [0.0, 0.1],
            "restore_h": [0.0, 0.4],
            "evidence": "job attempts + checkpoint times",
        }
    )
    out = interruption_losses(iv, ga)
    assert out.columns == iv.columns
    assert out["lost_gpu_h"].to_list() == [pytest.approx(32.0), None]
    assert out["lost_basis"].to_list() == ["job attempts + checkpoint times", None]
    assert out["lost_gpu_h_upper"].to_list() == [pytest.approx(72.0), 24.0]
    far = interruption_losses(iv, ga, tolerance_s=10)
    assert far["lost_gpu_h"].null_count() == 2
    with pytest.raises(InvalidParameterError, match="tolerance_s"):
        interruption_losses(iv, ga, tolerance_s=-1)


# -- the simulator: measured goodput against the known truth ---------------------------

#: Small runs (96-128 nodes, 10-20 days): llama3-54d brings planned
#: interruptions (about one a day), rsc1 more failures (hourly checkpoints,
#: 10 min restarts); persistent_every=4 with a 2 s in-memory save gives two
#: checkpoint levels (a failure that drains a node restores the older
#: persistent one).
TWO_LEVEL = {"persistent_every": 4, "memory_checkpoint_cost_h": 2 / 3600}
SIMS = {
    "llama3-s1": ("llama3-54d", 1, {}),
    "llama3-s3": ("llama3-54d", 3, {}),
    "llama3-20d-s5": ("llama3-54d", 5, {"days": 20}),
    "two-level-s1": ("llama3-54d", 1, TWO_LEVEL),
    "two-level-s3": ("llama3-54d", 3, TWO_LEVEL),
    "two-level-s4": ("llama3-54d", 4, TWO_LEVEL),
    "rsc1-s2": ("rsc1", 2, {"nodes": 160, "run_nodes": 128}),
    "rsc1-s4": ("rsc1", 4, {"nodes": 160, "run_nodes": 128}),
}


@pytest.fixture(scope="module", params=sorted(SIMS))
def sim_run(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, Any]:
    preset, seed, extra = SIMS[request.param]
    size = {"nodes": 128, "run_nodes": 96, "days": 10, **extra}
    cfg = simulation_preset(
        preset, background_jobs=0, noise_lines_per_node_day=0.0, **size
    )
    sim = simulate_cluster(cfg, seed=seed)
    out = tmp_path_factory.mktemp(request.param)
    write_simulation(sim, out)
    truth = json.loads((out / "ground_truth.json").read_text(encoding="utf-8"))
    log = read_run_log(out / "checkpoints.jsonl")
    store = Store(":memory:")
    read_sacct(store, out / "sacct.psv", tz=truth["ingest"]["sacct_tz"])
    attempts = build_job_attempts(store.table("jobs"), store.table("job_nodes"))
    return {
        "cfg": cfg,
        "truth": truth,
        "run": truth["runs"][0],
        "log": log,
        "attempts": attempts,
        "horizon": cfg.start + timedelta(days=cfg.days),
        "jobs": sim.jobs,
    }


def test_recover_simulated_ettr_from_step_records(sim_run: dict[str, Any]) -> None:
    """ground_truth.json runs[0]: ETTR within 0.005 (the issue's bound; measured
    errors are below 1e-4 on these seeds), productive time within what the
    log cannot show: per planned stop, the part of a step in flight when the
    stop was asked (the simulator counts whole steps), and at the horizon the
    step and save in flight. The run is open at the horizon: the sacct dump
    shows its last attempt running until then, so it is measured up to the
    horizon, the time after the log's last record counted as compute (as
    evidence (b) does). Lost progress is the truth's work since the restored
    checkpoint plus, per failure, at most the step in flight and a save."""
    cfg, run, log = sim_run["cfg"], sim_run["run"], sim_run["log"]
    g = measure_goodput(log, sim_run["attempts"])
    got = g.runs.row(0, named=True)
    assert got["evidence"] == "step records"
    assert got["ettr_frac"] == pytest.approx(run["ettr_frac"], abs=0.005)
    assert got["ettr_frac"] == pytest.approx(run["ettr_frac"], abs=5e-4)
    step_h = cfg.step_time_s / 3600
    save_h = max(cfg.checkpoint_cost_h, cfg.memory_checkpoint_cost_h)
    slack = run["n_planned"] * step_h + 1e-6
    assert run["productive_h"] - slack <= got["productive_h"]
    assert got["productive_h"] <= run["productive_h"] + slack + step_h + save_h
    # the end is the scheduler's (the horizon), as with checkpoint times alone
    assert got["last_end_ts"] == sim_run["horizon"]
    assert any("still running by the scheduler" in n for n in g.notes)
    per_failure = run["n_unexpected"] * (step_h + save_h)
    assert run["lost_work_h"] - 1e-6 <= got["badput_lost_progress_h"]
    assert got["badput_lost_progress_h"] <= run["lost_work_h"] + per_failure
    assert (got["n_attempts"], got["n_interruptions"]) == (
        run["n_attempts"],
        run["n_unexpected"],
    )
    assert got["n_checkpoints"] == run["n_checkpoints"]
    assert got["checkpoint_interval_h"] == pytest.approx(
        run["checkpoint_interval_h"], abs=1e-6
    )
    assert got["n_gpus"] == run["n_gpus"]
    assert got["is_open"]
    # the log's step numbering is the contract's (no count went backwards)
    assert not any("fewer steps" in n for n in g.notes)
    assert_sums(g)
    # up to the horizon: the truth's wall time exactly
    full = measure_goodput(log, sim_run["attempts"], as_of=sim_run["horizon"])
    assert full.runs["wall_h"][0] == pytest.approx(run["wall_h"], abs=1e-9)
    assert_sums(full)


def test_recover_simulated_ettr_from_checkpoint_times(sim_run: dict[str, Any]) -> None:
    """Evidence (b): the sacct attempts (a run: one job name) and the
    checkpoint_saved records alone.
    With one checkpoint level, ETTR within 5e-4 of the truth (measured below
    1e-4). With two levels, a failure that drains a node restores the older
    persistent checkpoint while (b) assumes the latest: it overstates ETTR by
    at most (persistent_every - 1) x Δt per failure over the wall time
    (measured +0.0052 and +0.0094 on the two-level seeds 1 and 3)."""
    cfg, run = sim_run["cfg"], sim_run["run"]
    saves = sim_run["log"].filter(kind="checkpoint_saved")
    # by job name: an attempt that failed before its first save (rsc1 seed 2,
    # job 1006) has no record naming its job id, but it is part of the run
    g = measure_goodput(
        saves, sim_run["attempts"], run_by="name", as_of=sim_run["horizon"]
    )
    got = g.runs.row(0, named=True)
    assert got["evidence"] == "job attempts + checkpoint times"
    assert got["wall_h"] == pytest.approx(run["wall_h"], abs=1e-9)
    assert got["checkpoint_interval_h"] == pytest.approx(
        cfg.checkpoint_interval_h, abs=2 / 3600
    )
    over = (cfg.persistent_every - 1) * cfg.checkpoint_interval_h
    bound = run["n_unexpected"] * over / run["wall_h"]
    assert run["ettr_frac"] - 5e-4 <= got["ettr_frac"]
    assert got["ettr_frac"] <= run["ettr_frac"] + bound + 5e-4
    assert got["n_interruptions"] == run["n_unexpected"]
    several = any("several levels" in n for n in g.notes)
    assert several == (cfg.persistent_every > 1)
    assert_sums(g)


def test_recover_simulated_lost_gpu_hours(sim_run: dict[str, Any]) -> None:
    """Each interruption the sacct dump shows costs the run's GPUs the truth's
    lost work (ground_truth.json interruptions[].lost_work_h), the time to the
    next attempt's start (the simulator's sacct), and that attempt's restart
    (restart_h, or its whole run when a failure ends it sooner): within a step
    and a save per interruption (the step in flight) and 2 s of sacct's whole
    seconds. lost_gpu_h_upper, the whole
    attempt, stays as it was."""
    cfg, truth = sim_run["cfg"], sim_run["truth"]
    g = measure_goodput(sim_run["log"], sim_run["attempts"])
    iv = interruption_losses(
        build_interruptions(sim_run["attempts"], pl.DataFrame()), g.attempts
    )
    assert iv["lost_basis"].to_list() == ["checkpoint records"] * iv.height
    jobs = sim_run["jobs"].filter(partition="train").sort("start_ts")
    spans = list(zip(jobs["start_ts"], jobs["end_ts"], strict=True))
    step_h = cfg.step_time_s / 3600
    save_h = max(cfg.checkpoint_cost_h, cfg.memory_checkpoint_cost_h)
    gpus = cfg.run_nodes * cfg.gpus_per_node
    checked = 0
    for t in truth["interruptions"]:
        if t["run_id"] != "run-1":
            continue
        end = datetime.fromisoformat(t["ts"].replace("Z", "+00:00"))
        later = [(s, e) for s, e in spans if s >= end]
        if not later:
            continue
        start, stop = later[0]
        gap_h = (start - end).total_seconds() / 3600
        # the next attempt restarts for restart_h unless a failure ends it first
        ran_h = cfg.restart_h if stop is None else (stop - start).total_seconds() / 3600
        expected = gpus * (t["lost_work_h"] + gap_h + min(cfg.restart_h, ran_h))
        row = iv.filter((pl.col("end_ts") - end).dt.total_seconds().abs() <= 2).row(
            0, named=True
        )
        tol = gpus * (step_h + save_h + 2 / 3600)
        assert expected - tol <= row["lost_gpu_h"] <= expected + tol
        checked += 1
    assert checked == iv.height > 0


def test_recover_bundled_run_lost_gpu_hours() -> None:
    """The bundled simulated 54-day Llama 3-like run (datasets/synthetic, its
    ground_truth.json): measured ETTR within 5e-4 of the truth's 0.97216 and
    lost progress within a step and a save per failure of its 5.83 h. Its 97
    interruptions charged their whole attempts come to about 2.58 M GPU-hours
    (lost_gpu_h_upper); what they cost the run's 2,048 GPUs (lost work,
    downtime, restart) is about 45,000 GPU-hours, at least the 5.83 h x 2,048
    = 11,941 GPU-hours of work lost."""
    from relkit import datasets

    raw = datasets.path("synthetic")
    truth = json.loads((raw / "ground_truth.json").read_text(encoding="utf-8"))
    run = truth["runs"][0]
    store = Store(":memory:")
    read_sacct(store, raw / "sacct.psv", tz=truth["ingest"]["sacct_tz"])
    read_file(store, raw / "checkpoints.jsonl", kind="checkpoints")
    attempts = build_job_attempts(store.table("jobs"), store.table("job_nodes"))
    g = measure_goodput(store.table("checkpoints"), attempts)
    got = g.runs.row(0, named=True)
    assert got["ettr_frac"] == pytest.approx(run["ettr_frac"], abs=5e-4)
    per_failure = (10 + 10) / 3600  # a 10 s step and a 10 s save (the preset's)
    assert run["lost_work_h"] <= got["badput_lost_progress_h"]
    assert got["badput_lost_progress_h"] <= (
        run["lost_work_h"] + run["n_unexpected"] * per_failure
    )
    assert_sums(g)
    whole = build_interruptions(attempts, pl.DataFrame())
    iv = interruption_losses(whole, g.attempts)
    assert iv.height == run["n_unexpected"] + run["n_planned"] == 97
    assert iv["lost_basis"].to_list() == ["checkpoint records"] * 97
    assert whole["lost_gpu_h_upper"].sum() == pytest.approx(2.58e6, rel=0.01)
    lost = iv["lost_gpu_h"].sum()
    assert lost == pytest.approx(45_000, rel=0.05)
    # the bound pays the same downtime and restart, so it stays above each estimate
    assert (iv["lost_gpu_h"] <= iv["lost_gpu_h_upper"]).all()
    unexpected = iv.filter(kind="unexpected")["lost_gpu_h"].sum()
    assert unexpected >= run["lost_work_h"] * run["n_gpus"]


# -- properties -----------------------------------------------------------------------


@st.composite
def small_runs(draw: st.DrawFn) -> tuple[pl.DataFrame, float]:
    """A run log written step by step, and its productive seconds by construction.

    Uniform step time tau; a checkpoint after every C steps (blocking save w);
    a step_end mark every M steps; attempt 1 may log its first step_start,
    later attempts log the restore of the latest checkpoint. Each attempt but
    the last ends by a failure part-way into a step, the last by a failure or
    a job_end. Kept steps: an attempt's steps below the step the next attempt
    restored (the last attempt: all after a job_end, up to its latest
    checkpoint after a failure).
    """
    tau = draw(st.sampled_from([1.0, 2.5, 10.0]))
    every_ckpt = draw(st.integers(1, 8))
    every_mark = draw(st.integers(1, 12))
    save = draw(st.sampled_from([0.0, 0.5, 3.0]))
    n_att = draw(st.integers(1, 4))
    rows: list[dict[str, Any]] = []
    t = 0.0
    latest = 0
    spans = []  # (restored, reached, ended_by, latest checkpoint after it)
    for k in range(1, n_att + 1):
        t += draw(st.floats(0, 50)) if k > 1 else 0.0
        base = {"run_id": "p", "attempt": k}
        rows.append({**base, "ts": at(t), "kind": "job_start"})
        startup = draw(st.floats(0, 20))
        r = latest
        t += startup
        if k > 1:
            rows.append(
                {
                    **base,
                    "ts": at(t),
                    "kind": "checkpoint_restored",
                    "step": r,
                    "restore_s": startup * draw(st.floats(0, 1)),
                }
            )
        elif draw(st.booleans()):
            rows.append({**base, "ts": at(t), "kind": "step_start", "step": 0})
        n = r
        for _ in range(draw(st.integers(0, 30))):
            t += tau
            n += 1
            if n % every_mark == 0:
                rows.append({**base, "ts": at(t), "kind": "step_end", "step": n - 1})
            if n % every_ckpt == 0:
                t += save
                rows.append(
                    {
                        **base,
                        "ts": at(t),
                        "kind": "checkpoint_saved",
                        "step": n,
                        "save_s": save,
                    }
                )
                latest = n
        last = k == n_att
        if last and draw(st.booleans()):
            t += draw(st.floats(0, 5))
            rows.append({**base, "ts": at(t), "kind": "job_end", "step": n})
            spans.append((r, n, "job_end", latest))
        else:
            t += tau * draw(st.floats(0, 0.99))
            rows.append({**base, "ts": at(t), "kind": "failure"})
            spans.append((r, n, "failure", latest))
    kept = 0
    for k, (r, reached, ended_by, ckpt) in enumerate(spans):
        if k + 1 < len(spans):
            top = spans[k + 1][0]
        elif ended_by == "failure":
            top = max(ckpt, r)
        else:
            top = reached
        kept += max(min(reached, top) - r, 0)
    return records(rows), kept * tau


@given(small_runs())
@settings(max_examples=150)
def test_prop_badput_sums_and_productive_is_kept_steps(
    run: tuple[pl.DataFrame, float],
) -> None:
    """Any run: the categories sum to wall - productive per run and attempt,
    ETTR is in [0, 1], and productive time is the kept steps x the step time
    exactly (uniform steps, so interpolating sparse marks is exact), unless
    the log gives no step time (two marks) to place attempt 1's first step or
    a job_end's last steps, which a note then says. Logs without a step
    record are evidence (c) and left out here."""
    frame, productive_s = run
    # a log without any step record is not evidence (a) (it needs an assumption)
    assume(frame["kind"].is_in(["step_start", "step_end"]).any())
    g = measure_goodput(frame)
    assert_sums(g)
    got = g.runs.row(0, named=True)
    assert got["ettr_frac"] is None or 0.0 <= got["ettr_frac"] <= 1.0
    untimed = ("too few progress records", "give no step time")
    if not any(u in n for n in g.notes for u in untimed):
        assert got["productive_h"] * 3600 == pytest.approx(productive_s, abs=1e-6)


@st.composite
def scheduled_runs(draw: st.DrawFn) -> tuple[pl.DataFrame, pl.DataFrame]:
    """A requeue chain of 1-4 attempts (the last possibly still running) and
    checkpoint saves at random times inside them."""
    rows, saves = [], []
    t = 0.0
    n = draw(st.integers(1, 4))
    for k in range(1, n + 1):
        submit = t
        t += draw(st.floats(0, 2))
        start, duration = t, draw(st.floats(0, 10))
        t += duration
        running = k == n and draw(st.booleans())
        state = (
            "RUNNING"
            if running
            else draw(st.sampled_from(["COMPLETED", "NODE_FAIL", "FAILED", "REQUEUED"]))
        )
        rows.append(
            {
                "job_id": "j",
                "attempt": k,
                "state": state,
                "submit_ts": hours(submit),
                "start_ts": hours(start),
                "end_ts": None if running else hours(t),
                "n_gpus": 8,
            }
        )
        marks = sorted(draw(st.lists(st.floats(0, 1), max_size=5)))
        prev = start
        for f in marks:
            end = start + f * duration
            save = min(draw(st.floats(0, 0.2)), end - prev)
            saves.append(
                {
                    "run_id": "j",
                    "job_id": "j",
                    "ts": hours(end),
                    "kind": "checkpoint_saved",
                    "save_s": save * 3600,
                }
            )
            prev = end
    att = sched(rows).with_columns(
        stop_ts=pl.coalesce("end_ts", pl.lit(hours(t), dtype=pl.Datetime("us", "UTC")))
    )
    return records(saves), att


@given(scheduled_runs(), st.floats(0.1, 5), st.sampled_from([None, hours(100)]))
@settings(max_examples=100)
def test_prop_attempt_evidence_sums(
    run: tuple[pl.DataFrame, pl.DataFrame],
    interval_h: float,
    as_of: datetime | None,
) -> None:
    """Evidence (b) (when saves exist) and (c): the categories sum to wall -
    productive exactly, and ETTR is in [0, 1], with or without an as_of past
    the data."""
    saves, att = run
    levels = [measure_goodput(None, att, assumed_interval_h=interval_h, as_of=as_of)]
    if saves.height:
        try:
            levels.append(measure_goodput(saves, att, as_of=as_of))
        except InvalidParameterError as err:  # saves outside every attempt
            if "fall outside every job attempt" not in str(err):
                raise
    for g in levels:
        assert_sums(g)
        ettr = g.runs["ettr_frac"][0]
        assert ettr is None or 0.0 <= ettr <= 1.0 + 1e-12
