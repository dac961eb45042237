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
    assert by_id["4100"]["start_ts"] == "2025-02-01T09:00:05+00:00"
    assert by_id["4101"]["hosts"][0] == "gpu005"


def test_interruptions_json_fields(
    c08_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 5 §3: rows job_id, attempt, end_ts, state, cause, failure_mode,
    host, n_gpus, lost_gpu_h; C08: 4101 loses 17:15:30 x 8 nodes x 8 GPUs."""
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
    ]
    node_fail = next(r for r in rows if r["job_id"] == "4101")
    assert node_fail["lost_gpu_h"] == pytest.approx(138.0667 * 8, abs=0.01)
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
    assert [r["job_id"] for r in json.loads(out)] == ["4106"]


def test_rootcause_json_and_summary(
    c08_db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 5 §4: rows component, category, interruptions, pct; planned apart."""
    code, out, _ = run(capsys, "rootcause", "--db", c08_db, "--format", "json")
    assert code == 0
    rows = json.loads(out)
    assert list(rows[0]) == ["component", "category", "interruptions", "pct"]
    assert rows[0]["component"] == "Faulty GPU"
    planned = [r for r in rows if r["category"] == "Planned"]
    assert planned == [
        {
            "component": "Requeued, no failure logged",
            "category": "Planned",
            "interruptions": 1,
            "pct": 100.0,
        }
    ]
    code, out, _ = run(
        capsys, "rootcause", "--db", c08_db, "--summary", "--format", "json"
    )
    summary = json.loads(out)
    assert (summary["n_unexpected"], summary["n_planned"]) == (4, 1)
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
