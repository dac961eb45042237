"""Kubernetes pod and Job JSON ingest: case C13 of shared/cases/README.md."""

import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from shared_paths import SHARED

from relkit.errors import IngestError, InvalidParameterError
from relkit.ingest import read_k8s
from relkit.jobs import build_interruptions, build_job_attempts
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


# -- issue 10 §5: Kubernetes as it comes --------------------------------------------
DATA = Path(__file__).parent / "data"
GANG = DATA / "k8s_podlist_gang.json"  # a PodList as client-go returns it
INIT = DATA / "k8s_init_failures.json"  # a bare JSON array, no kind


def _attempts_and_interruptions(
    store: Store, **kw: object
) -> tuple[pl.DataFrame, pl.DataFrame]:
    from relkit.jobs import job_interruptions

    return job_interruptions(
        store.table("jobs"), store.table("job_nodes"), store.table("events"), **kw
    )


def test_client_go_podlist_without_kind_is_read_by_shape() -> None:
    """k8s_podlist_gang.json is ``{"metadata": {...}, "items": [...]}`` with no
    ``kind``/``apiVersion`` anywhere (client-go's typed PodList marshalled to
    JSON). Hand count: 5 items, all pods (``spec.containers``), all loaded;
    the summary says they were read by shape."""
    store = Store(":memory:")
    result = read_k8s(store, GANG)
    assert (result.n_lines, result.n_loaded, result.n_ignored) == (5, 5, 0)
    assert result.note is not None
    assert "5 object(s) without kind read by their shape (5 Pod" in result.note
    assert sorted(store.table("jobs")["job_id"].unique()) == ["etl-daily", "llm-train"]


def test_four_pod_job_failing_together_is_one_interruption() -> None:
    """The 4 pods of Job llm-train (8 nvidia.com/gpu each, started 08:00:03,
    containers failed at 20:00:05, :12, :20, :31, i.e. within 26 s) are one
    interruption with 4 x 8 = 32 GPUs. The window is the attempt's span,
    08:00:03 to 20:00:31 = 43 228 s = 12.00778 h; one interruption: MTTI
    12.00778 h. Counting each pod (the old reading, gang_window_s=0 here) gives
    4 interruptions of 8 GPUs and an MTTI of 12.00778 / 4 = 3.00194 h."""
    from relkit.jobs import interruption_summary

    store = Store(":memory:")
    result = read_k8s(store, GANG)
    assert result.note is not None
    assert "counted as 1 attempt(s)" in result.note
    attempts, iv = _attempts_and_interruptions(store, gpus_per_node=8)
    train = iv.filter(job_id="llm-train")
    assert train.select("attempt", "state", "n_gpus", "n_nodes").rows() == [
        (1, "FAILED", 32, 4)
    ]
    summary = interruption_summary(iv, attempts, job_ids=["llm-train"])
    assert summary.n_unexpected == 1
    assert summary.mtbi_unexpected_h == pytest.approx(43228 / 3600)
    # each pod its own attempt (window 0 s: the ends differ): four, MTTI / 4
    apart = Store(":memory:")
    read_k8s(apart, GANG, gang_window_s=0)
    attempts, iv = _attempts_and_interruptions(apart, gpus_per_node=8)
    train = iv.filter(job_id="llm-train")
    assert train["n_gpus"].to_list() == [8, 8, 8, 8]
    summary = interruption_summary(iv, attempts, job_ids=["llm-train"])
    assert summary.mtbi_unexpected_h == pytest.approx(43228 / 3600 / 4)


def test_pod_without_gpu_request_has_zero_gpus() -> None:
    """etl-daily's pod asks for cpu and memory only (no nvidia.com/gpu in
    limits or requests): 0 GPUs, and no per-node default is charged even when
    one is given (gpus_per_node=8 used to make it 8 GPUs)."""
    store = Store(":memory:")
    read_k8s(store, GANG)
    etl = store.table("jobs").filter(job_id="etl-daily")
    assert etl["n_gpus"].to_list() == [0]
    attempts, iv = _attempts_and_interruptions(store, gpus_per_node=8)
    row = attempts.filter(job_id="etl-daily").row(0, named=True)
    assert (row["n_gpus"], row["gpus_assumed"]) == (0, False)
    assert iv.filter(job_id="etl-daily")["lost_gpu_h_upper"].to_list() == [0.0]


def test_init_container_failures_are_attempts() -> None:
    """k8s_init_failures.json, a bare JSON array without kinds. Hand count:
    prep-data-tx7pq's init container fetch-shards exited 1 (Error) at
    10:02:10 after starting 10:00:04 (126 s), restartPolicy Never: one failed
    attempt of prep-data. eval-suite-m2k9d's init container wait-for-ckpt is
    in CrashLoopBackOff with restartCount 3: three failed runs, the last
    (exit 1, 11:03:40-11:03:41) in lastState, two of unknown time. The Job
    prep-data (spec.template, backoffLimit) is read by shape as the Job's
    own record (attempt 0, BackoffLimitExceeded); its failed: 1 is the pod
    above, so no attempt is added. The Service-like object is ignored."""
    store = Store(":memory:")
    result = read_k8s(store, INIT)
    assert (result.n_lines, result.n_loaded, result.n_ignored) == (4, 3, 1)
    jobs = store.table("jobs").sort("job_id", "attempt")
    prep = jobs.filter(job_id="prep-data")
    assert prep.select(
        "attempt", "state", "exit_code", "reason", "elapsed_s"
    ).rows() == [
        (0, "FAILED", None, "BackoffLimitExceeded", 134.0),
        (1, "FAILED", "1", "Error", 126.0),
    ]
    assert prep["flags"][1] == "init_container=fetch-shards"
    ev = jobs.filter(job_id="eval-suite")
    assert ev["attempt"].to_list() == [1, 2, 3]
    assert ev["state"].to_list() == ["FAILED"] * 3
    assert ev["exit_code"].to_list() == [None, None, "1"]
    assert all("init_container=wait-for-ckpt" in f for f in ev["flags"])
    _, iv = _attempts_and_interruptions(store)
    assert iv.group_by("job_id").len().sort("job_id").rows() == [
        ("eval-suite", 3),
        ("prep-data", 1),
    ]
    ignored = store.table("ignored")["reason"].to_list()
    assert ignored == ["no_kind_not_a_pod_or_job"]


def test_joblist_without_kind_and_workloads_that_are_not_jobs(tmp_path: Path) -> None:
    """A JobList as client-go returns it (no kind on the list or its items):
    the Job (spec.template with completions/backoffLimit, status.failed 2) is
    read by shape; a Deployment-shaped item (spec.template with replicas, no
    Job key) is not taken for a Job. Hand count: 1 Job row (attempt 0) and
    the 2 failed pods it counts that the list does not hold, as attempts of
    unknown cause; 1 ignored."""
    job = {
        "metadata": {"name": "sweep-7", "namespace": "ml", "uid": "u1"},
        "spec": {
            "completions": 1,
            "parallelism": 1,
            "backoffLimit": 1,
            "template": {"spec": {"containers": [{"name": "c"}]}},
        },
        "status": {
            "failed": 2,
            "startTime": "2025-07-01T08:00:00Z",
            "conditions": [
                {
                    "type": "Failed",
                    "status": "True",
                    "reason": "BackoffLimitExceeded",
                    "lastTransitionTime": "2025-07-01T09:00:00Z",
                }
            ],
        },
    }
    deploy = {
        "metadata": {"name": "web", "namespace": "ml"},
        "spec": {"replicas": 2, "template": {"spec": {"containers": [{"name": "w"}]}}},
        "status": {"replicas": 2, "readyReplicas": 2},
    }
    f = tmp_path / "jobs.json"
    f.write_text(
        json.dumps({"metadata": {"resourceVersion": "9"}, "items": [job, deploy]})
    )
    store = Store(":memory:")
    result = read_k8s(store, f)
    assert (result.n_lines, result.n_loaded, result.n_ignored) == (2, 1, 1)
    rows = store.table("jobs").sort("attempt")
    assert rows.select("attempt", "state", "flags").rows() == [
        (0, "FAILED", "job_level_record"),
        (1, "FAILED", "pod_not_in_dump,cause_not_in_record"),
        (2, "FAILED", "pod_not_in_dump,cause_not_in_record"),
    ]


def test_pods_failing_apart_or_one_pod_twice_are_separate_attempts(
    tmp_path: Path,
) -> None:
    """Two pods of job j: pod a fails at 10:00:00, pod b at 12:00:00 (2 h
    apart, beyond the 60 s window): 2 attempts. Pod c of job k restarted once
    (lastState failed 10:00:00) and failed again at 10:00:30: a pod is in an
    attempt at most once, so 2 attempts although 30 s apart."""

    def pod(name: str, job: str, end: str, **status: object) -> dict:
        term = _terminated(1, "Error", "2025-07-01T08:00:00Z", end)
        return {
            "metadata": {"name": name, "labels": {"job-name": job}},
            "spec": {"nodeName": f"n-{name}", "containers": [{"name": "x"}]},
            "status": {
                "phase": "Failed",
                "startTime": "2025-07-01T08:00:00Z",
                "containerStatuses": [{"name": "x", "state": term, **status}],
            },
        }

    last = _terminated(1, "Error", "2025-07-01T08:00:00Z", "2025-07-01T10:00:00Z")
    f = tmp_path / "pods.json"
    items = [
        pod("a", "j", "2025-07-01T10:00:00Z"),
        pod("b", "j", "2025-07-01T12:00:00Z"),
        pod("c", "k", "2025-07-01T10:00:30Z", restartCount=1, lastState=last),
    ]
    f.write_text(json.dumps(items))
    store = Store(":memory:")
    read_k8s(store, f)
    _, iv = _attempts_and_interruptions(store)
    assert iv.sort("job_id", "attempt").select("job_id", "attempt").rows() == [
        ("j", 1),
        ("j", 2),
        ("k", 1),
        ("k", 2),
    ]
    with pytest.raises(InvalidParameterError, match="gang_window_s"):
        read_k8s(Store(":memory:"), f, gang_window_s=-1)


def test_gpu_limit_not_a_number_rejects_the_pod(tmp_path: Path) -> None:
    """A pod whose nvidia.com/gpu limit is "8x" is a reject naming the field,
    never a pod of unknown (then 8 per node) GPUs."""
    bad = _pod(
        "p",
        {"phase": "Running"},
        containers=[{"name": "c", "resources": {"limits": {"nvidia.com/gpu": "8x"}}}],
    )
    f = tmp_path / "pods.json"
    f.write_text(json.dumps({"kind": "List", "items": [bad]}))
    store = Store(":memory:")
    result = read_k8s(store, f)
    assert (result.n_loaded, result.n_rejected) == (0, 1)
    reason = store.table("rejects")["reason"].item()
    assert "limits nvidia.com/gpu='8x' is not a whole number >= 0" in reason


@pytest.mark.parametrize("text", ['{"kind": "List", "items": []}', "[]"])
def test_empty_list_is_said(tmp_path: Path, text: str) -> None:
    """`kubectl get pods -o json` in a namespace with no pod prints a List with
    no items: nothing to ingest, said by name (it ingested with exit 0)."""
    path = tmp_path / "pods.json"
    path.write_text(text)
    with Store(":memory:") as store, pytest.raises(IngestError, match="no objects"):
        read_k8s(store, path)
