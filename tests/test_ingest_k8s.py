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
    state; BackoffLimitExceeded is not a 4th failure. The job-level row is
    attempt 0 (review of issue 5: never a null attempt)."""
    e = c13.filter(job_id="train-e")
    attempts = e.filter(pl.col("attempt") >= 1)
    assert attempts["state"].to_list() == ["FAILED"] * 3
    assert attempts["exit_code"].to_list() == [None] * 3
    assert e["attempt"].null_count() == 0
    job = e.filter(attempt=0).row(0, named=True)
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


# -- the break-it review of issue 5 ---------------------------------------------------
def _pod(name: str, status: dict, **spec: object) -> dict:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "ml", "labels": {"job-name": name}},
        "spec": {"nodeName": "gpu005", **spec},
        "status": status,
    }


def _read(tmp_path: Path, *items: dict, **kw: object) -> Store:
    f = tmp_path / "pods.json"
    f.write_text(json.dumps({"kind": "List", "items": list(items)}))
    store = Store(":memory:")
    read_k8s(store, f, snapshot_ts=SNAPSHOT, **kw)
    return store


def _terminated(code: int, reason: str, start: str, end: str) -> dict:
    return {
        "terminated": {
            "exitCode": code,
            "reason": reason,
            "startedAt": start,
            "finishedAt": end,
        }
    }


def test_evicted_for_node_pressure_is_infrastructure(tmp_path: Path) -> None:
    """Review repro k/ev.json. Kubernetes "Node-pressure Eviction": the kubelet
    evicts pods when the node runs low on memory, disk or PIDs, with the
    message "The node was low on resource: ..."; without a DisruptionTarget
    condition (before 1.26) the pod was blamed on the user. It is NODE_FAIL
    (infrastructure); exceeding the pod's own storage limit stays the user's."""
    status = {
        "phase": "Failed",
        "reason": "Evicted",
        "message": "The node was low on resource: ephemeral-storage.",
        "startTime": "2025-07-01T08:00:00Z",
        "containerStatuses": [
            {
                "name": "c",
                "restartCount": 0,
                "state": _terminated(
                    137, "Error", "2025-07-01T08:00:05Z", "2025-07-01T10:00:05Z"
                ),
            }
        ],
    }
    own = status | {
        "message": "Pod ephemeral local storage usage exceeds the total limit of "
        "containers 10Gi."
    }
    store = _read(tmp_path, _pod("ev", status), _pod("own", own))
    jobs = store.table("jobs").sort("job_id")
    assert jobs.select("job_id", "state", "flags").rows() == [
        ("ev", "NODE_FAIL", "evicted_node_pressure"),
        ("own", "FAILED", "evicted_own_limit"),
    ]
    attempts = build_job_attempts(jobs, store.table("job_nodes"))
    causes = build_interruptions(attempts, pl.DataFrame()).sort("job_id")
    assert causes["cause"].to_list() == ["infrastructure", "user"]


def test_multi_container_pod_keeps_each_termination(tmp_path: Path) -> None:
    """Review repro (k/hostile.json twoctr-0): container a restarted once after
    OOMKilled, b twice (last Error). Each restart ended a run of the pod: 1
    run of unknown cause, the OOM (a), the Error (b), then the running pod;
    the OOM is no longer lost under b's restarts."""
    status = {
        "phase": "Running",
        "startTime": "2025-07-01T08:00:00Z",
        "containerStatuses": [
            {
                "name": "a",
                "restartCount": 1,
                "state": {"running": {"startedAt": "2025-07-01T09:00:00Z"}},
                "lastState": _terminated(
                    137, "OOMKilled", "2025-07-01T08:00:00Z", "2025-07-01T08:59:00Z"
                ),
            },
            {
                "name": "b",
                "restartCount": 2,
                "state": {"running": {"startedAt": "2025-07-01T10:00:00Z"}},
                "lastState": _terminated(
                    1, "Error", "2025-07-01T09:00:00Z", "2025-07-01T09:59:00Z"
                ),
            },
        ],
    }
    jobs = _read(tmp_path, _pod("two", status)).table("jobs")
    assert jobs.select("attempt", "state", "reason", "flags").rows() == [
        (1, "FAILED", None, "cause_not_in_record,container=b,start_from_pod_start"),
        (2, "OUT_OF_MEMORY", "OOMKilled", "container=a"),
        (3, "FAILED", "Error", "container=b"),
        (4, "RUNNING", None, None),
    ]
    assert jobs["elapsed_s"][3] == 6 * 3600.0  # 10:00 to the 16:00 snapshot


def test_no_negative_duration_and_no_silent_gaps(tmp_path: Path) -> None:
    """Review repro (k/hostile.json): finishedAt before startedAt is rejected
    (never end < start); a negative restartCount is rejected; a pod without
    status is flagged ``no_status``; the others load."""
    neg = _pod(
        "neg",
        {
            "phase": "Failed",
            "containerStatuses": [
                {
                    "name": "c",
                    "restartCount": 0,
                    "state": _terminated(
                        1, "Error", "2025-07-01T09:00:00Z", "2025-07-01T08:00:00Z"
                    ),
                }
            ],
        },
    )
    minus = _pod(
        "minus",
        {
            "phase": "Running",
            "containerStatuses": [
                {"name": "c", "restartCount": -1, "state": {"running": {}}}
            ],
        },
    )
    bare = {"kind": "Pod", "metadata": {"name": "bare"}, "spec": {}}
    store = _read(tmp_path, neg, minus, bare)
    reasons = store.table("rejects")["reason"].to_list()
    assert "finishedAt 2025-07-01T08:00:00+00:00 is before" in reasons[0]
    assert "restartCount -1" in reasons[1]
    assert store.table("jobs").select("job_id", "state", "flags").rows() == [
        ("bare", None, "no_status")
    ]


def test_pseudonymized_rejects_hold_no_names(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review (privacy) repro p/kp.json: with --pseudonymize, a rejected pod's
    raw JSON (labels, annotations, service account) and its reason named the
    user. Now both use the pseudonym and keep no other field."""
    monkeypatch.setenv("RELKIT_PSEUDONYM_KEY", "k" * 32)
    pod = _pod("alice-bad-0", {"phase": "Succeeded", "startTime": "bad"})
    pod["metadata"]["namespace"] = "user-alice"
    pod["metadata"]["annotations"] = {"owner": "alice"}
    store = _read(tmp_path, pod, pseudonymize=True)
    rejects = store.table("rejects")
    assert "alice" not in str(rejects.rows())
    assert rejects["reason"][0].startswith("Pod job-")
    assert json.loads(rejects["raw"][0])["metadata"]["name"].startswith("job-")
