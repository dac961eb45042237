"""Rows of Kubernetes Pod and Job objects: helpers of :mod:`relkit.ingest.k8s`.

A pod's container (and init container) runs are attempts of its job; the pods
of one job that end together are one attempt (:func:`number_attempts`); an
object without ``kind`` is told by its shape (:func:`kind_of`).
"""

from datetime import UTC, datetime, timedelta
from typing import Any

__all__ = [
    "DISRUPTION_STATES",
    "GANG_WINDOW_S",
    "as_dict",
    "bad_ts",
    "job_rows",
    "kind_of",
    "number_attempts",
    "pod_rows",
    "ts",
]

#: ``DisruptionTarget`` condition reason -> the job state relkit records.
#: ``DeletionByTaintManager`` (NoExecute taint, e.g. a node not ready),
#: ``TerminationByKubelet`` (node-pressure eviction, graceful node shutdown) and
#: ``DeletionByPodGC`` (the node is gone) are infrastructure: ``NODE_FAIL``;
#: ``PreemptionByScheduler`` is ``PREEMPTED``; ``EvictionByEvictionAPI``
#: (``kubectl drain``, an operator's planned action) is ``REQUEUED``.
DISRUPTION_STATES: dict[str, str] = {
    "DeletionByTaintManager": "NODE_FAIL",
    "TerminationByKubelet": "NODE_FAIL",
    "DeletionByPodGC": "NODE_FAIL",
    "PreemptionByScheduler": "PREEMPTED",
    "EvictionByEvictionAPI": "REQUEUED",
}

_GO_ZERO_YEAR = 1
_GPU_RESOURCES = ("nvidia.com/gpu", "amd.com/gpu")


def ts(value: object) -> datetime | None:
    """Parse an RFC 3339 instant; None for null, empty and Go's zero time."""
    if not isinstance(value, str) or not value.strip():
        return None
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if parsed.tzinfo is None or parsed.year <= _GO_ZERO_YEAR:
        return None
    return parsed.astimezone(UTC)


def bad_ts(value: object) -> bool:
    """Tell a non-empty time string that is not RFC 3339."""
    if not isinstance(value, str) or not value.strip():
        return False
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return True
    return parsed.tzinfo is None


def as_dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _container_gpus(container: object) -> int:
    """GPUs one container asks for: its limit, else its request, else 0."""
    resources = as_dict(as_dict(container).get("resources"))
    for part in ("limits", "requests"):
        values = as_dict(resources.get(part))
        hits = [(r, values[r]) for r in _GPU_RESOURCES if r in values]
        if hits:
            total = 0
            for name, value in hits:
                text = str(value).strip()
                if not text.isdigit():
                    msg = f"{part} {name}={value!r} is not a whole number >= 0"
                    raise ValueError(msg)
                total += int(text)
            return total
    return 0


def gpus(spec: dict[str, Any]) -> int | None:
    """Return the GPUs a pod spec asks for (``nvidia.com/gpu``, ``amd.com/gpu``).

    Parameters
    ----------
    spec : dict
        A Pod's ``spec`` (or a Job's ``spec.template.spec``).

    Returns
    -------
    int or None
        The pod's effective request, as the scheduler counts it: the larger
        of the sum over ``containers`` and the largest ``initContainers``
        request (init containers run one at a time, before the others). 0
        when no container names a GPU resource (a CPU-only pod); None when the
        spec lists no containers at all (the record does not say).

    Raises
    ------
    ValueError
        If a GPU limit or request is not a whole number >= 0.

    References
    ----------
    .. [1] Kubernetes documentation, "Init Containers: Resource sharing
       within containers",
       https://kubernetes.io/docs/concepts/workloads/pods/init-containers/
    """
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        return None
    main = sum(_container_gpus(c) for c in containers)
    init = [_container_gpus(c) for c in spec.get("initContainers") or []]
    return max([main, *init])


def _job_of(meta: dict[str, Any]) -> str:
    labels = as_dict(meta.get("labels"))
    for key in ("batch.kubernetes.io/job-name", "job-name"):
        if labels.get(key):
            return str(labels[key])
    for owner in meta.get("ownerReferences") or []:
        if as_dict(owner).get("kind") == "Job" and as_dict(owner).get("name"):
            return str(owner["name"])
    return str(meta.get("name"))


def _index_of(meta: dict[str, Any]) -> int | None:
    for where in ("labels", "annotations"):
        value = as_dict(meta.get(where)).get("batch.kubernetes.io/job-completion-index")
        if value is not None and str(value).isdigit():
            return int(value)
    return None


def _terminated_state(term: dict[str, Any]) -> tuple[str, str | None]:
    reason = term.get("reason")
    code = term.get("exitCode")
    if reason == "OOMKilled":
        return "OUT_OF_MEMORY", None if code is None else str(code)
    if code == 0 or reason == "Completed":
        return "COMPLETED", "0"
    if code is None:
        return "FAILED", None
    return "FAILED", str(code)


def _ended_run(term: dict[str, Any], flags: str | None) -> dict[str, Any]:
    """Return the row of one ended container run (a ``terminated`` state)."""
    state, code = _terminated_state(term)
    return {
        "state": state,
        "exit_code": code,
        "reason": term.get("reason"),
        "start_ts": ts(term.get("startedAt")),
        "end_ts": ts(term.get("finishedAt")),
        "flags": flags,
    }


#: Kubelet eviction messages that blame the pod's own limits, not the node
#: (``pkg/kubelet/eviction/helpers.go``); other evictions are node pressure.
_OWN_LIMIT = ("exceeds the total limit", "exceeded its local ephemeral storage")
#: The state that speaks for a pod whose containers ended differently.
_POD_STATE_PRIORITY = ("NODE_FAIL", "OUT_OF_MEMORY", "FAILED", "COMPLETED")


def _eviction(status: dict[str, Any]) -> tuple[str, str] | None:
    """(state, flag) of a pod the kubelet evicted, or None."""
    if status.get("reason") != "Evicted":
        return None
    message = str(status.get("message") or "")
    if any(m in message for m in _OWN_LIMIT):
        return "FAILED", "evicted_own_limit"
    return "NODE_FAIL", "evicted_node_pressure"


def _restarts(container: dict[str, Any]) -> int:
    value = container.get("restartCount") or 0
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        msg = f"restartCount {value!r} is not a whole number >= 0"
        raise ValueError(msg)
    return value


def _container_rows(
    container: dict[str, Any], tag: str | None, label: str = "container"
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return a container's ended runs before the current one, and its state.

    A container restarted r times ended r runs: only the last is in
    ``lastState``; the earlier ones failed (a restart follows an exit), but
    when, why and with which code is not in the record.
    """
    restarts = _restarts(container)
    last = as_dict(as_dict(container.get("lastState")).get("terminated"))
    flag = None if tag is None else f"{label}={tag}"
    rows: list[dict[str, Any]] = []
    for _ in range(1, restarts if last else restarts + 1):
        rows.append(
            {
                "state": "FAILED",
                "exit_code": None,
                "reason": None,
                "start_ts": None,
                "end_ts": None,
                "flags": ",".join(f for f in ("cause_not_in_record", flag) if f),
            }
        )
    if last and restarts >= 1:
        rows.append(_ended_run(last, flag))
    return rows, as_dict(container.get("state"))


def _init_failures(status: dict[str, Any], *, hide_names: bool) -> list[dict[str, Any]]:
    """Return the failed runs of a pod's init containers (flag ``init_container``).

    An init container runs to completion before the pod's containers start;
    one that exits non-zero is restarted (``restartPolicy`` ``Always`` or
    ``OnFailure``: ``CrashLoopBackOff`` between tries) or fails the pod
    (``Never``). Each failed run is a failed attempt of the pod's job, like a
    container's; a run that exited 0 is no attempt.
    """
    out: list[dict[str, Any]] = []
    for k, container in enumerate(status.get("initContainerStatuses") or [], 1):
        container = as_dict(container)
        tag = f"#{k}" if hide_names else str(container.get("name") or f"#{k}")
        rows, now = _container_rows(container, tag, "init_container")
        term = as_dict(now.get("terminated"))
        if term:
            rows.append(_ended_run(term, f"init_container={tag}"))
        out += [r for r in rows if r["state"] != "COMPLETED"]
    return out


def _time_order(row: dict[str, Any]) -> tuple[int, datetime]:
    """Sort key of ended runs: unknown times first, then by end (or start)."""
    at = row["end_ts"] or row["start_ts"]
    return (0, datetime.min.replace(tzinfo=UTC)) if at is None else (1, at)


def pod_rows(
    item: dict[str, Any], snapshot: datetime | None, *, hide_names: bool = False
) -> list[dict[str, Any]]:
    """Return one pod's attempts (time order) as job rows without ``attempt``.

    Every container's restarts end an attempt of the pod (a sidecar's
    ``OOMKilled`` is kept, not merged away), and so does every failed run of
    an init container (:func:`_init_failures`); the pod's current state is
    the last attempt: running while any container runs, else the containers'
    terminations merged (a failure speaks over a success). A GPU limit that
    is not a whole number raises ValueError (the pod is rejected).
    """
    meta, spec, status = (as_dict(item.get(k)) for k in ("metadata", "spec", "status"))
    for where, value in (
        ("status.startTime", status.get("startTime")),
        ("metadata.creationTimestamp", meta.get("creationTimestamp")),
    ):
        if bad_ts(value):
            msg = f"{where} is not an RFC 3339 time: {value!r}"
            raise ValueError(msg)
    base = {
        "job_id": _job_of(meta),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "het_offset": _index_of(meta),
        "submit_ts": ts(meta.get("creationTimestamp")),
        "n_nodes": 1 if spec.get("nodeName") else None,
        "n_gpus": gpus(spec),
        "host": spec.get("nodeName"),
        "_pod_start": ts(status.get("startTime")),
    }
    if not status:
        return [
            {
                **base,
                "state": None,
                "reason": None,
                "start_ts": None,
                "end_ts": None,
                "flags": "no_status",
            }
        ]
    conditions = [as_dict(c) for c in status.get("conditions") or []]
    disruption = next(
        (
            c
            for c in conditions
            if c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        ),
        None,
    )
    evicted = None if disruption is not None else _eviction(status)
    statuses = [as_dict(c) for c in status.get("containerStatuses") or []]
    phase = status.get("phase")
    init_failed = _init_failures(status, hide_names=hide_names)
    if not statuses and not init_failed:
        scheduled = next((c for c in conditions if c.get("type") == "PodScheduled"), {})
        state = {"Pending": "PENDING", "Succeeded": "COMPLETED", "Running": "RUNNING"}
        row = {
            **base,
            "state": state.get(str(phase), "FAILED" if phase == "Failed" else None),
            "reason": (disruption or {}).get("reason")
            or status.get("reason")
            or scheduled.get("reason"),
            "start_ts": None,
            "end_ts": None,
            "flags": None if phase else "no_phase",
        }
        if disruption is not None:
            row["state"] = DISRUPTION_STATES.get(
                str(disruption.get("reason")), "FAILED"
            )
            if disruption.get("reason") == "EvictionByEvictionAPI":
                row["flags"] = "evicted_by_api"
            row["end_ts"] = ts(disruption.get("lastTransitionTime"))
            row["start_ts"] = base["_pod_start"]
        elif evicted is not None:
            row["state"], row["flags"] = evicted
            row["start_ts"] = base["_pod_start"]
        return [row]
    multi = len(statuses) > 1
    ended: list[dict[str, Any]] = list(init_failed)
    running: list[dict[str, Any]] = []
    terminated: list[tuple[dict[str, Any], str | None]] = []
    for k, container in enumerate(statuses, 1):
        tag = (f"#{k}" if hide_names else str(container.get("name"))) if multi else None
        rows, now = _container_rows(container, tag)
        ended += rows
        if "running" in now:
            running.append(as_dict(now["running"]))
        elif "terminated" in now:
            terminated.append((as_dict(now["terminated"]), tag))
    final: dict[str, Any] | None = None
    if running:
        # a container that ended for good while others run: an ended run
        for term, tag in terminated:
            run = _ended_run(term, None if tag is None else f"container={tag}")
            if run["state"] != "COMPLETED":
                ended.append(run)
        starts = [t for r in running if (t := ts(r.get("startedAt"))) is not None]
        final = {
            "state": "RUNNING",
            "exit_code": None,
            "reason": None,
            "start_ts": max(starts) if starts else None,
            "end_ts": None,
            "flags": None if snapshot is not None else "no_snapshot_ts",
            "_censor": snapshot,
        }
    elif terminated:
        states = [(_terminated_state(t), t, tag) for t, tag in terminated]
        (state, code), term, tag = min(
            states, key=lambda x: _POD_STATE_PRIORITY.index(x[0][0])
        )
        starts = [t for _, x, _ in states if (t := ts(x.get("startedAt")))]
        ends = [t for _, x, _ in states if (t := ts(x.get("finishedAt")))]
        flags = [] if tag is None else [f"container={tag}"]
        final = {
            "state": state,
            "exit_code": code,
            "reason": term.get("reason"),
            "start_ts": min(starts) if starts else None,
            "end_ts": max(ends) if ends else None,
        }
        if disruption is not None:
            final["state"] = DISRUPTION_STATES.get(str(disruption.get("reason")), state)
            final["reason"] = disruption.get("reason")
            if final["reason"] == "EvictionByEvictionAPI":
                flags.append("evicted_by_api")
            if final["end_ts"] is None:
                final["end_ts"] = ts(disruption.get("lastTransitionTime"))
                flags.append("end_from_disruption_condition")
        elif evicted is not None and state != "COMPLETED":
            final["state"] = evicted[0]
            final["reason"] = "Evicted"
            flags.append(evicted[1])
        final["flags"] = ",".join(flags) or None
    rows = sorted(ended, key=_time_order) + ([final] if final is not None else [])
    if not rows:  # e.g. a container still being created: not started yet
        waiting = as_dict(as_dict(statuses[0].get("state")).get("waiting"))
        return [
            {
                **base,
                "state": "PENDING",
                "reason": waiting.get("reason"),
                "start_ts": None,
                "end_ts": None,
                "flags": None,
            }
        ]
    # the first attempt starts with the pod when its container time is missing
    if rows[0]["start_ts"] is None and base["_pod_start"] is not None:
        rows[0]["start_ts"] = base["_pod_start"]
        rows[0]["flags"] = ",".join(
            f for f in (rows[0]["flags"], "start_from_pod_start") if f
        )
    for row in rows:
        if row["start_ts"] and row["end_ts"] and row["end_ts"] < row["start_ts"]:
            msg = (
                f"a container's finishedAt {row['end_ts'].isoformat()} is before "
                f"its startedAt {row['start_ts'].isoformat()}; no duration can be "
                "negative"
            )
            raise ValueError(msg)
    return [{**base, **row} for row in rows]


def job_rows(item: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Return a Job object's own terminal record and its count of failed pods."""
    meta, status = as_dict(item.get("metadata")), as_dict(item.get("status"))
    conditions = [as_dict(c) for c in status.get("conditions") or []]
    final = next(
        (
            c
            for c in conditions
            if c.get("type") in ("Failed", "Complete") and c.get("status") == "True"
        ),
        None,
    )
    if final is not None:
        state = "FAILED" if final.get("type") == "Failed" else "COMPLETED"
    elif int(status.get("active") or 0) > 0:
        state = "RUNNING"
    else:
        state = "PENDING"
    row = {
        "job_id": str(meta.get("name")),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "het_offset": None,
        "submit_ts": ts(meta.get("creationTimestamp")),
        "n_nodes": None,
        "n_gpus": gpus(
            as_dict(as_dict(as_dict(item.get("spec")).get("template")).get("spec"))
        ),
        "host": None,
        "state": state,
        "exit_code": None,
        "reason": (final or {}).get("reason"),
        "start_ts": ts(status.get("startTime")),
        "end_ts": ts(status.get("completionTime"))
        or ts((final or {}).get("lastTransitionTime")),
        "flags": "job_level_record",
    }
    failed = status.get("failed")
    return row, int(failed) if isinstance(failed, int) and failed > 0 else 0


#: Keys only a Job's ``spec`` or ``status`` holds (batch/v1): an object with
#: ``spec.template`` and one of them is a Job, not a Deployment or DaemonSet.
_JOB_SPEC_KEYS = (
    "backoffLimit",
    "backoffLimitPerIndex",
    "completions",
    "parallelism",
    "completionMode",
    "activeDeadlineSeconds",
    "ttlSecondsAfterFinished",
    "podFailurePolicy",
    "successPolicy",
    "manualSelector",
)
_JOB_STATUS_KEYS = ("succeeded", "failed", "completionTime", "uncountedTerminatedPods")
_JOB_CONDITIONS = ("Complete", "Failed", "FailureTarget", "SuccessCriteriaMet")
_POD_STATUS_KEYS = ("phase", "containerStatuses", "initContainerStatuses")


def kind_of(item: object) -> tuple[str | None, bool]:
    """Return an object's kind and whether it was told by its shape.

    Parameters
    ----------
    item : object
        One element of a list's ``items`` (or of a bare JSON array).

    Returns
    -------
    kind : str or None
        ``kind`` when the object names it; else ``"Pod"`` for an object with
        ``spec.containers``, ``status.phase``, ``status.containerStatuses``
        or ``status.initContainerStatuses``, ``"Job"`` for one with
        ``spec.template`` and a key only a Job has (``backoffLimit``,
        ``completions``, ``parallelism``, ... in ``spec``; ``succeeded``,
        ``failed``, ``completionTime`` or a ``Complete``/``Failed`` condition
        in ``status``); None when neither shape fits.
    by_shape : bool
        True when the object has no ``kind`` (client-go's typed lists, e.g. a
        ``JobList`` marshalled from Go, leave the items' ``kind`` and
        ``apiVersion`` empty).

    References
    ----------
    .. [1] Kubernetes API reference, "Pod v1 core" and "Job v1 batch",
       https://kubernetes.io/docs/reference/kubernetes-api/workload-resources/
    """
    obj = as_dict(item)
    kind = obj.get("kind")
    if isinstance(kind, str) and kind:
        return kind, False
    spec, status = as_dict(obj.get("spec")), as_dict(obj.get("status"))
    if "template" in spec:
        conditions = {as_dict(c).get("type") for c in status.get("conditions") or []}
        if (
            any(k in spec for k in _JOB_SPEC_KEYS)
            or any(k in status for k in _JOB_STATUS_KEYS)
            or conditions & set(_JOB_CONDITIONS)
        ):
            return "Job", True
        return None, True
    if "containers" in spec or any(k in status for k in _POD_STATUS_KEYS):
        return "Pod", True
    return None, True


#: How close the ends of runs of different pods of one job must be for them
#: to be one attempt, seconds: within the same minute as the first of them.
#: A multi-pod training job fails as a gang: when one rank dies, torchrun's
#: elastic agent stops the other workers, NCCL aborts the communicator on
#: every rank, and the Job controller marks or deletes the remaining pods, all
#: within seconds; the kubelet reports the pods' ends within its status
#: update period (10 s by default).
GANG_WINDOW_S = 60.0

#: Row states of a pod's current, open run: the open runs of a job's pods
#: in one state are one attempt.
_OPEN = ("RUNNING", "PENDING")


def _run_key(row: dict[str, Any]) -> tuple[bool, datetime, int, int]:
    """Order of a run in its job: pod start (unknown last), object, run."""
    start = row.get("_pod_start")
    at = start if start is not None else datetime.max.replace(tzinfo=UTC)
    return (start is None, at, int(row["line_no"]), int(row["_seq"]))


def _add_flag(row: dict[str, Any], flag: str) -> None:
    row["flags"] = ",".join(f for f in (row.get("flags"), flag) if f)


def number_attempts(
    rows: list[dict[str, Any]], window_s: float = GANG_WINDOW_S
) -> list[dict[str, Any]]:
    """Give the runs of each job their ``attempt``, the runs of a gang one number.

    Parameters
    ----------
    rows : list of dict
        Job rows of one file (:func:`pod_rows`, :func:`job_rows` with
        ``_job_level`` True), each with ``namespace, job_id, het_offset,
        state, end_ts`` (UTC), ``_pod_start``, ``line_no`` (the pod's object)
        and ``_seq`` (its run).
    window_s : float, default :data:`GANG_WINDOW_S`
        Seconds after the first end within which the runs of other pods of
        the job join its attempt.

    Returns
    -------
    list of dict
        ``rows``, each with ``attempt`` set (0 for a Job's own record), in
        place. Runs of different pods of one job (same namespace, job name
        and completion index) that ended within ``window_s`` of the first of
        them are one attempt, flagged ``pods_ended_together``: a 4-pod job
        whose pods all fail within 30 s is one interruption, its GPUs the sum
        of the pods'. The open runs of its pods (``RUNNING``, or ``PENDING``)
        are one attempt too (``pods_open_together``). A pod is in an
        attempt at most once; runs of unknown end (restarts whose record is
        lost) are attempts of their own. Attempts are numbered 1, 2, ... in
        the order of their first run (pod start, then object, then run).
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        if row.get("_job_level"):
            row["attempt"] = 0
            continue
        key = (row.get("namespace"), row.get("job_id"), row.get("het_offset"))
        groups.setdefault(key, []).append(row)
    window = timedelta(seconds=window_s)
    for members in groups.values():
        clusters: list[list[dict[str, Any]]] = []
        ended = sorted(
            (r for r in members if r.get("end_ts") is not None),
            key=lambda r: (r["end_ts"], r["line_no"], r["_seq"]),
        )
        gangs: list[list[dict[str, Any]]] = []
        for row in ended:
            home = next(
                (
                    g
                    for g in reversed(gangs)
                    if g[0]["end_ts"] >= row["end_ts"] - window
                    and all(m["line_no"] != row["line_no"] for m in g)
                ),
                None,
            )
            if home is None:
                gangs.append([row])
            else:
                home.append(row)
        clusters += gangs
        open_runs: dict[str, list[dict[str, Any]]] = {}
        for row in members:
            if row.get("end_ts") is not None:
                continue
            if row.get("state") in _OPEN:
                open_runs.setdefault(row["state"], []).append(row)
            else:
                clusters.append([row])
        clusters += list(open_runs.values())
        clusters.sort(key=lambda c: min(_run_key(r) for r in c))
        for n, cluster in enumerate(clusters, 1):
            pods = {r["line_no"] for r in cluster}
            flag = (
                "pods_ended_together"
                if cluster[0].get("end_ts")
                else "pods_open_together"
            )
            for row in cluster:
                row["attempt"] = n
                if len(pods) > 1:
                    _add_flag(row, flag)
    return rows
