"""The goodput verbs of issue 11 §4: relkit goodput, checkpoint --db, whatif.

Values come from case C18 (cases/README.md: 15 s productive of 64 s, 15/64),
the issue's inverse example (12,500 nodes, 5 min restart, 1 min write, ETTR 0.9
at the optimal interval: 0.4255 failures per 1000 node-days, Kokolis et al.
E[ETTR], arXiv:2410.21680) and hand computations given in each docstring.
"""

import json
from pathlib import Path

import pytest
from shared_paths import SHARED

from relkit.cli import main

C18 = SHARED / "cases" / "C18-goodput-disruption-rework.jsonl"

#: The ``relkit goodput --format json`` fields issue 11 §4 names.
ISSUE_FIELDS = {
    "run_id",
    "evidence",
    "wall_h",
    "productive_h",
    "ettr",
    "ettr_with_queue",
    "n_interruptions",
    "badput_init_h",
    "badput_checkpoint_h",
    "badput_restore_h",
    "badput_lost_progress_h",
    "badput_recovery_h",
    "badput_queue_h",
    "badput_other_h",
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def c18_db(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
    db = str(tmp_path / "c18.duckdb")
    code, _, err = run(capsys, "ingest", "--db", db, "--kind", "checkpoints", str(C18))
    assert code == 0, err
    return db


def test_goodput_json_c18(c18_db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """C18: productive 5 unique steps x 3 s = 15 s of 64 s (ETTR 0.234375, never
    the naive 24/64 = 0.375); start-up 5 s, restore 5 s, 30 s down, 9 s redone."""
    code, out, _ = run(capsys, "goodput", "--db", c18_db, "--format", "json")
    assert code == 0
    (row,) = json.loads(out)
    assert set(row) >= ISSUE_FIELDS
    assert row["run_id"] == "run-7"
    assert row["evidence"] == "step records"
    assert row["ettr"] == pytest.approx(15 / 64, abs=1e-12)
    assert row["ettr"] != pytest.approx(0.375)
    assert row["wall_h"] * 3600 == pytest.approx(64.0)
    assert row["productive_h"] * 3600 == pytest.approx(15.0)
    seconds = {k: row[k] * 3600 for k in ISSUE_FIELDS if k.startswith("badput_")}
    assert seconds == pytest.approx(
        {
            "badput_init_h": 5.0,
            "badput_checkpoint_h": 0.0,
            "badput_restore_h": 5.0,
            "badput_lost_progress_h": 9.0,
            "badput_recovery_h": 30.0,
            "badput_queue_h": 0.0,
            "badput_other_h": 0.0,
        },
        abs=1e-9,
    )
    assert row["n_interruptions"] == 1


def test_goodput_unknown_run_names_the_runs(
    c18_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "goodput", "--db", c18_db, "--run", "run-8")
    assert code == 1
    assert "run-7" in err


def test_goodput_empty_store_says_what_to_ingest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from relkit.store import Store

    db = str(tmp_path / "empty.duckdb")
    Store(db).close()
    code, out, err = run(capsys, "goodput", "--db", db)
    assert code == 1
    assert out == ""
    assert "--kind checkpoints" in err


def test_checkpoint_db_without_save_time_asks_for_cost(
    c18_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """C18's checkpoint is free by construction (save 0 s): no measured cost."""
    code, _, err = run(capsys, "checkpoint", "--db", c18_db)
    assert code == 1
    assert "--cost-h" in err


def test_checkpoint_db_c18_with_cost(
    c18_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """One interruption in 20 s + 14 s of running (34 s): λ = 1/34 per s. With
    w = 1 s, u₀ = 5 s (attempt 2's restore; its start-up is 0), q = 30 s, the
    first-order model breaks down (λ(u₀ + q) > 1, interval 0), so the exact
    exponential renewal-reward model (Daly 2006) decides: the same call made
    here by hand, renewal_optimum with one exponential component of mean
    34 s."""
    code, out, err = run(
        capsys,
        "checkpoint",
        "--db",
        c18_db,
        "--cost-h",
        str(1 / 3600),
        "--format",
        "json",
    )
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["n_failures"] == 1
    assert row["exposure_h"] * 3600 == pytest.approx(34.0)
    assert row["restart_h"] * 3600 == pytest.approx(5.0)
    assert row["queue_h"] * 3600 == pytest.approx(30.0)
    assert row["failure_rate_per_h"] == pytest.approx(3600 / 34)
    from relkit.checkpoint import renewal_optimum

    by_hand = renewal_optimum(
        cost_h=1 / 3600,
        restart_h=5 / 3600,
        components=[(1.0, 34 / 3600, 1.0)],
        downtime_h=30 / 3600,
    )
    assert row["interval_h"] == pytest.approx(by_hand.interval_h, rel=1e-9)
    assert row["expected_ettr"] == pytest.approx(by_hand.expected_ettr, rel=1e-9)
    assert "exponential" in row["method"]
    assert {"interval_lower_h", "interval_upper_h", "expected_ettr_lower"} <= set(row)
    assert "assumed" in err


def test_checkpoint_bundled_run_bounds(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The bundled 54-day run (datasets/synthetic): interval and ETTR inside their
    bounds, the interval near Young's √(2w/λ) (w = 10 s); at 64x the GPUs the
    rate is 64x and, the first-order load being above 0.1 there, the interval
    is the exact exponential renewal-reward optimum at that rate."""
    from relkit import datasets

    raw = datasets.path("synthetic")
    db = str(tmp_path / "s.duckdb")
    for kind, path, extra in (
        ("checkpoints", raw / "checkpoints.jsonl", ()),
        ("sacct", raw / "sacct.psv", ("--tz", "UTC")),
    ):
        code, _, err = run(
            capsys, "ingest", "--db", db, "--kind", kind, *extra, str(path)
        )
        assert code == 0, err
    code, out, _ = run(capsys, "checkpoint", "--db", db, "--format", "json")
    assert code == 0
    (row,) = json.loads(out)
    assert row["interval_lower_h"] < row["interval_h"] < row["interval_upper_h"]
    assert (
        row["expected_ettr_lower"] < row["expected_ettr"] < row["expected_ettr_upper"]
    )
    assert row["cost_h"] * 3600 == pytest.approx(10.0)
    young = (2 * row["cost_h"] / row["failure_rate_per_h"]) ** 0.5
    assert row["interval_h"] == pytest.approx(young, rel=0.05)
    code, out, _ = run(
        capsys, "checkpoint", "--db", db, "--gpus", "131072", "--format", "json"
    )
    (big,) = json.loads(out)
    assert big["gpus"] == 131072
    assert big["failure_rate_per_h"] == pytest.approx(64 * row["failure_rate_per_h"])
    from relkit.checkpoint import renewal_optimum

    # at 131,072 GPUs the first-order load λ(u₀ + q + Δt/2) is above 0.1, so
    # the exact exponential renewal-reward model decides (the same call here)
    lam, w = big["failure_rate_per_h"], big["cost_h"]
    assert lam * (big["restart_h"] + big["queue_h"]) > 0.1
    exact = renewal_optimum(
        cost_h=w,
        restart_h=big["restart_h"],
        components=[(1.0, 1 / lam, 1.0)],
        downtime_h=big["queue_h"],
    )
    assert big["interval_h"] == pytest.approx(exact.interval_h, rel=1e-6)
    assert "exponential" in big["method"]


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("checkpoint", "--cost-h", "0.1"), "--mtbf-h"),
        (("checkpoint", "--mtbf-h", "10", "--cost-h", "0.1", "--gpus", "8"), "--db"),
        (("checkpoint", "--mtbf-h", "10", "--cost-h", "0.1", "--run", "r"), "--db"),
    ],
)
def test_checkpoint_options_that_would_be_ignored_are_refused(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], needle: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert out == ""
    assert needle in err


def test_checkpoint_db_and_mtbf_refused(
    c18_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "checkpoint", "--db", c18_db, "--mtbf-h", "5")
    assert code == 1
    assert "--mtbf-h" in err


def test_whatif_solve_failure_rate_issue_example(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """12,500 nodes (100,000 GPUs), u₀ = 5 min, w = 1 min, ETTR 0.9 at the optimal
    interval → 0.4255 failures per 1000 node-days (issue 11 §2)."""
    code, out, err = run(
        capsys,
        "whatif",
        "--gpus",
        "100000",
        "--restart-h",
        str(5 / 60),
        "--cost-h",
        str(1 / 60),
        "--solve",
        "failure-rate",
        "--target-ettr",
        "0.9",
        "--format",
        "json",
    )
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["failures_per_1000_node_days"] == pytest.approx(0.4255, abs=5e-5)
    assert row["expected_ettr"] == pytest.approx(0.9, abs=1e-9)
    assert row["n_nodes"] == 12500


def test_whatif_sweep_over_gpus(capsys: pytest.CaptureFixture[str]) -> None:
    """ETTR falls with size; at 131,072 GPUs and r_f = 6.5e-3 the job MTTF is
    24/(16,384 x 6.5e-3) = 0.2254 h (reference/README.md, Kokolis)."""
    code, out, _ = run(
        capsys,
        "whatif",
        "--gpus",
        "16384,131072",
        "--failure-rate",
        "0.0065",
        "--restart-h",
        str(5 / 60),
        "--cost-h",
        str(0.5 / 60),
        "--format",
        "json",
    )
    assert code == 0
    small, big = json.loads(out)
    assert big["mttf_h"] == pytest.approx(0.2254, abs=1e-4)
    assert big["expected_ettr"] < small["expected_ettr"]
    assert small["interval_rule"] == "optimal"


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (
            ("--solve", "failure-rate", "--target-ettr", "0.9", "--failure-rate", "1"),
            "what --solve",
        ),
        (("--solve", "failure-rate"), "--target-ettr"),
        (("--target-ettr", "0.9", "--failure-rate", "0.01"), "--solve"),
        (("--failure-rate", "0.01,x"), "numbers"),
        (
            ("--solve", "failure-rate", "--target-ettr", "0.9", "--interval-h", "1"),
            "--interval-h",
        ),
    ],
)
def test_whatif_refuses_contradictions(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], needle: str
) -> None:
    base = ("whatif", "--gpus", "1024", "--restart-h", "0.1", "--cost-h", "0.01")
    code, out, err = run(capsys, *base, *argv)
    assert code == 1
    assert out == ""
    assert needle in err


def test_whatif_no_answer_is_an_error(capsys: pytest.CaptureFixture[str]) -> None:
    """A 2 h restart at 131,072 GPUs and 6.5e-3 failures per node-day: failures
    every 0.23 h cannot reach ETTR 0.9 whatever the write costs."""
    code, out, err = run(
        capsys,
        "whatif",
        "--gpus",
        "131072",
        "--failure-rate",
        "0.0065",
        "--restart-h",
        "2",
        "--solve",
        "cost-h",
        "--target-ettr",
        "0.9",
    )
    assert code == 1
    assert out == ""
    assert "error" in err


def test_interruptions_say_why_lost_gpu_h_is_missing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from relkit import datasets

    db = str(tmp_path / "j.duckdb")
    raw = datasets.path("synthetic")
    run(
        capsys,
        "ingest",
        "--db",
        db,
        "--kind",
        "sacct",
        "--tz",
        "UTC",
        str(raw / "sacct.psv"),
    )
    code, out, err = run(capsys, "interruptions", "--db", db, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert rows
    assert all(r["lost_gpu_h"] is None for r in rows)
    assert all(r["lost_gpu_h_upper"] > 0 for r in rows)
    assert "--kind checkpoints" in err
    run(
        capsys,
        "ingest",
        "--db",
        db,
        "--kind",
        "checkpoints",
        str(raw / "checkpoints.jsonl"),
    )
    code, out, err = run(capsys, "interruptions", "--db", db, "--format", "json")
    rows = json.loads(out)
    assert all(r["lost_gpu_h"] is not None for r in rows)
    assert all(r["lost_gpu_h"] <= r["lost_gpu_h_upper"] for r in rows)
    assert {r["lost_basis"] for r in rows} == {"checkpoint records"}


def test_whatif_flags_the_first_order_models_range(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Row K1 of reference/ettr_model.csv: 2,048 nodes, r_f = 6.5e-3, u₀ = 5 min,
    w = 30 s, optimum 9.6697 min: λ = 2048 x 6.5e-3 / 24 = 0.554667 per h and
    λ(u₀ + Δt*/2) = 0.554667 x (5 + 4.83485)/60 = 0.090917, below the 0.1 flag;
    at 131,072 GPUs the load is 0.49 (flagged)."""
    code, out, err = run(
        capsys,
        "whatif",
        "--gpus",
        "16384",
        "--failure-rate",
        "0.0065",
        "--restart-h",
        str(5 / 60),
        "--cost-h",
        str(0.5 / 60),
        "--format",
        "json",
    )
    assert code == 0
    (row,) = json.loads(out)
    assert row["interval_h"] * 60 == pytest.approx(9.6697, abs=1e-4)
    assert row["first_order_load"] == pytest.approx(0.090917, abs=1e-6)
    assert "first_order_load" not in err
    code, out, err = run(
        capsys,
        "whatif",
        "--gpus",
        "131072",
        "--failure-rate",
        "6.5",
        "--restart-h",
        str(5 / 60),
        "--cost-h",
        str(0.5 / 60),
    )
    assert code == 0
    assert "per 1000 node-days" in err
    assert "no progress" in err


def test_checkpoint_db_says_when_restart_is_unknown(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A run whose only failure ends the log has no restart to measure: u₀ and q
    are taken as 0 and the assumptions say so."""
    log = tmp_path / "one.jsonl"
    records = [
        ("00:00:00", "job_start", {}),
        ("00:01:00", "step_start", {"step": 0}),
        ("01:01:00", "step_end", {"step": 0}),
        ("01:01:30", "checkpoint_saved", {"step": 1, "save_s": 30}),
        ("01:01:30", "step_start", {"step": 1}),
        ("01:30:00", "failure", {"cause": "NODE_FAIL"}),
    ]
    lines = [
        json.dumps(
            {"ts": f"2025-08-01T{t}Z", "run_id": "r", "attempt": 1, "event": e, **x}
        )
        for t, e, x in records
    ]
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = str(tmp_path / "one.duckdb")
    assert run(capsys, "ingest", "--db", db, "--kind", "checkpoints", str(log))[0] == 0
    code, out, err = run(capsys, "checkpoint", "--db", db, "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["n_failures"] == 1
    assert row["restart_h"] == 0.0
    assert any("unknown and taken as 0" in a for a in row["assumptions"])
