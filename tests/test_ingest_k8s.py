"""Kubernetes pod and Job JSON ingest: case C13 of shared/cases/README.md."""

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from shared_paths import SHARED

from relkit.errors import IngestError
from relkit.ingest import read_k8s
from relkit.interruptions import build_interruptions, build_job_attempts
from relkit.store import Store

C13 = SHARED / "cases" / "C13-k8s-pod-job-records.json"
SNAPSHOT = "2025-07-01T16:00:00Z"  # the snapshot time C13 states


@pytest.fixture
def c13() -> pl.DataFrame:
    if not C13.exists():
        pytest.skip("shared cases not present")
    store = Store(":memory:")
    result = read_k8s(store, C13, snapshot_ts=SNAPSHOT)
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (5, 5, 0)
    return store.table("jobs")


def test_ref_c13_train_a_restarts(c13: pl.DataFrame) -> None:
    """C13: train-a has 4 attempts, 3 terminated; only the last terminated one
    is OOMKilled (user/app), the other 2 have no cause; the running attempt is
    censored at 16:00:00Z, 6 600 s in."""
    a = c13.filter(job_id="train-a").sort("attempt")
    assert a["attempt"].to_list() == [1, 2, 3, 4]
    assert a["state"].to_list() == ["FAILED", "FAILED", "OUT_OF_MEMORY", "RUNNING"]
    assert a["reason"].to_list() == [None, None, "OOMKilled", None]
    assert a["exit_code"].to_list() == [None, None, "137", None]
    assert a["elapsed_s"][3] == 6600.0
    assert a["end_ts"][3] is None


def test_ref_c13_train_b_taint_eviction(c13: pl.DataFrame) -> None:
    """C13: train-b is an infrastructure failure at 10:31:07Z, 9 067 s from the
    pod's startTime (the container's times are null)."""
    b = c13.filter(job_id="train-b").row(0, named=True)
    assert b["state"] == "NODE_FAIL"
    assert b["reason"] == "DeletionByTaintManager"
    assert b["end_ts"] == datetime(2025, 7, 1, 10, 31, 7, tzinfo=UTC)
    assert b["elapsed_s"] == 9067.0


def test_ref_c13_train_c_go_zero_time(c13: pl.DataFrame) -> None:
    """C13: the zero time is missing, so the runtime is 43 200 s from startTime,
    never about 6.4e10 s."""
    c = c13.filter(job_id="train-c").row(0, named=True)
    assert (c["state"], c["elapsed_s"]) == ("COMPLETED", 43200.0)


def test_ref_c13_train_d_pending(c13: pl.DataFrame) -> None:
    """C13: train-d has no runtime and is not a failure (queue wait)."""
    d = c13.filter(job_id="train-d").row(0, named=True)
    assert (d["state"], d["start_ts"], d["elapsed_s"]) == ("PENDING", None, None)
    assert d["reason"] == "Unschedulable"


def test_ref_c13_train_e_backoff_not_a_fourth_failure(c13: pl.DataFrame) -> None:
    """C13: train-e has 3 pod failures (cause unknown) and 1 job-level terminal
    state; BackoffLimitExceeded is not a 4th failure."""
    e = c13.filter(job_id="train-e")
    attempts = e.filter(pl.col("attempt").is_not_null())
    assert attempts["state"].to_list() == ["FAILED"] * 3
    assert attempts["exit_code"].to_list() == [None] * 3
    job = e.filter(pl.col("attempt").is_null()).row(0, named=True)
    assert (job["state"], job["reason"]) == ("FAILED", "BackoffLimitExceeded")


def test_ref_c13_causes(c13: pl.DataFrame) -> None:
    """C13 through attribution: train-b infrastructure, train-a's OOM user, its
    other two restarts and train-e's 3 failures unknown; train-c, train-d and
    the Job-level record are no interruptions."""
    nodes = pl.DataFrame(
        schema={
            "source_id": pl.Int32,
            "job_id": pl.String,
            "attempt": pl.Int32,
            "host": pl.String,
        }
    )
    attempts = build_job_attempts(c13, nodes)
    iv = build_interruptions(attempts, pl.DataFrame())
    got = iv.group_by("job_id", "cause").len().sort("job_id", "cause").rows()
    assert got == [
        ("train-a", "unknown", 2),
        ("train-a", "user", 1),
        ("train-b", "infrastructure", 1),
        ("train-e", "unknown", 3),
    ]


def test_snapshot_needs_zone_and_running_without_it(tmp_path: Path) -> None:
    if not C13.exists():
        pytest.skip("shared cases not present")
    with pytest.raises(IngestError, match="has no zone"):
        read_k8s(Store(":memory:"), C13, snapshot_ts="2025-07-01T16:00:00")
    store = Store(":memory:")
    read_k8s(store, C13)
    run = store.table("jobs").filter(state="RUNNING").row(0, named=True)
    assert (run["elapsed_s"], run["flags"]) == (None, "no_snapshot_ts")


def test_other_kinds_ignored_and_bad_json(tmp_path: Path) -> None:
    f = tmp_path / "svc.json"
    f.write_text(json.dumps({"kind": "List", "items": [{"kind": "Service"}]}))
    result = read_k8s(Store(":memory:"), f)
    assert (result.n_lines, result.n_loaded, result.n_ignored) == (1, 0, 1)
    bad = tmp_path / "bad.json"
    bad.write_text('{"kind": "List", "items": [')
    with pytest.raises(IngestError, match="not valid JSON"):
        read_k8s(Store(":memory:"), bad)
