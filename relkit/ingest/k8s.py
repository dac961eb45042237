r"""Read Kubernetes pod and job records (``kubectl get -o json``) into the job tables.

A pod's container (and failed init container) runs are attempts of its job;
the job is the pod's ``job-name`` label (or its owning Job), else the pod
itself, and the pods of one job that end together are one attempt. Items of
a client-go list without ``kind`` are told by their shape. Go's zero time
(``0001-01-01T00:00:00Z``) and nulls are missing values, never instants; a pod
taken off its node by the taint manager is an infrastructure interruption; a
Job's ``BackoffLimitExceeded`` is its terminal state, not another failure; a
pending pod has no runtime (its wait is queue time). Case C13 of
``cases/README.md`` pins each rule.
"""

import dataclasses
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from relkit.errors import IngestError, InvalidParameterError
from relkit.ingest._common import IngestResult, Parsed, check_file, ingest
from relkit.ingest._k8s_pods import (
    DISRUPTION_STATES,
    GANG_WINDOW_S,
    as_dict,
    job_rows,
    kind_of,
    number_attempts,
    pod_rows,
)
from relkit.ingest._pseudonym import load_pseudonym_key, pseudonymize
from relkit.schema import UTC as UTC_DTYPE
from relkit.store import Store

__all__ = ["DISRUPTION_STATES", "GANG_WINDOW_S", "read_k8s"]


def _items(path: Path) -> list[Any]:
    try:
        doc = json.loads(path.read_text(encoding="utf-8-sig"))
    except UnicodeDecodeError as exc:
        msg = "not UTF-8 text; kubectl writes UTF-8 JSON."
        raise IngestError(path, msg) from exc
    except json.JSONDecodeError as exc:
        msg = (
            f"not valid JSON ({exc.msg} at column {exc.colno}). --kind k8s reads "
            "`kubectl get pods,jobs -o json` output."
        )
        raise IngestError(path, msg, line_no=exc.lineno) from exc
    items: list[Any] | None = None
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        items = list(doc["items"])  # List, PodList, JobList (kind or not)
    elif isinstance(doc, dict) and kind_of(doc)[0] in ("Pod", "Job"):
        items = [doc]
    elif isinstance(doc, list):
        items = doc  # a bare JSON array of objects
    if items == []:
        msg = (
            "the list holds no objects ('items' is empty): nothing to ingest. "
            "`kubectl get` found no pod or job in its namespace (add -A for all "
            "namespaces) or the selector matched none; collect it again."
        )
        raise IngestError(path, msg)
    if items is not None:
        return items
    msg = (
        "no Kubernetes objects found: expected a List with 'items' (a PodList "
        "or JobList, with or without kind), a JSON array of objects, or one "
        "Pod/Job object, as `kubectl get pods,jobs -o json` prints."
    )
    raise IngestError(path, msg)


#: Largest ``gang_window_s``, seconds (an hour: longer merges separate failures).
_MAX_WINDOW_S = 3600.0


def _with_notes(result: IngestResult, notes: list[str]) -> IngestResult:
    """Add the reader's notes to the ingest summary (printed on stderr)."""
    if result.skipped or not notes:
        return result
    return dataclasses.replace(
        result, note="; ".join(n for n in (result.note, *notes) if n)
    )


def _pseudonym(value: str, key: bytes, field: str) -> str:
    return str(pseudonymize(pl.Series([value]), key=key, field=field).item())


def _raw(item: object, key: bytes | None) -> str:
    """Return the ``rejects.raw`` text of an object (no personal data with a key).

    With a pseudonym key only the kind, the pseudonymized name and namespace
    and the phase are kept: labels, annotations, commands, images and
    environment variables may all name people.
    """
    if key is None:
        return json.dumps(item, sort_keys=True)[:2000]
    obj = as_dict(item)
    meta = as_dict(obj.get("metadata"))
    kept = {
        "kind": obj.get("kind"),
        "metadata": {
            k: _pseudonym(v, key, field)
            for k, field in (("name", "name"), ("namespace", "user"))
            if isinstance(v := meta.get(k), str)
        },
        "status": {"phase": as_dict(obj.get("status")).get("phase")},
        "note": "other fields withheld by --pseudonymize",
    }
    return json.dumps(kept, sort_keys=True)


_JOB_SCHEMA = {
    "line_no": pl.Int64,
    "job_id": pl.String,
    "state": pl.String,
    "exit_code": pl.String,
    "submit_ts": UTC_DTYPE,
    "start_ts": UTC_DTYPE,
    "end_ts": UTC_DTYPE,
    "_censor": UTC_DTYPE,
    "n_nodes": pl.Int32,
    "n_gpus": pl.Int32,
    "name": pl.String,
    "namespace": pl.String,
    "het_offset": pl.Int32,
    "reason": pl.String,
    "flags": pl.String,
    "host": pl.String,
    "_pod_start": UTC_DTYPE,
    "_seq": pl.Int64,
    "_job_level": pl.Boolean,
    "attempt": pl.Int32,
}


def _parse(
    path: Path,
    snapshot: datetime | None,
    key: bytes | None,
    window_s: float,
    notes: list[str],
) -> Parsed:
    items = _items(path)
    rows: list[dict[str, Any]] = []
    rejects: list[tuple[int, str, str]] = []
    ignored: dict[str, int] = {}
    by_shape: dict[str, int] = {}
    job_failed: dict[tuple[str | None, str], tuple[int, int]] = {}
    for n, item in enumerate(items, 1):
        kind, shaped = kind_of(item)
        meta = as_dict(as_dict(item).get("metadata"))
        name = meta.get("name")
        if kind not in ("Pod", "Job"):
            reason = "no_kind_not_a_pod_or_job" if shaped else f"kind_{kind}"
            ignored[reason] = ignored.get(reason, 0) + 1
            continue
        if shaped:
            by_shape[kind] = by_shape.get(kind, 0) + 1
        if not isinstance(name, str) or not name:
            rejects.append((n, f"{kind} without metadata.name", _raw(item, key)))
            continue
        try:
            if kind == "Pod":
                got = pod_rows(item, snapshot, hide_names=key is not None)
            else:
                row, failed = job_rows(item)
                ns = row["namespace"]
                job_failed[(ns, row["job_id"])] = (failed, n)
                got = [{**row, "_job_level": True}]
        except (ValueError, TypeError) as exc:
            shown = name if key is None else _pseudonym(name, key, "name")
            rejects.append((n, f"{kind} {shown}: {exc}", _raw(item, key)))
            continue
        rows += [{**r, "line_no": n, "_seq": i} for i, r in enumerate(got)]
    if by_shape:
        told = ", ".join(f"{v} {k}" for k, v in sorted(by_shape.items()))
        notes.append(
            f"{sum(by_shape.values())} object(s) without kind read by their shape "
            f"({told}: a Pod has spec.containers or status.phase, a Job "
            "spec.template with backoffLimit/completions or status.succeeded/failed)"
        )
    if n_other := ignored.get("no_kind_not_a_pod_or_job"):
        notes.append(
            f"{n_other} object(s) without kind are neither a Pod nor a Job by "
            "their shape: ignored"
        )
    # failed pods a Job counts but the dump does not hold: attempts of unknown
    # cause and time (BackoffLimitExceeded itself is the Job's state, no failure)
    failing = ("FAILED", "OUT_OF_MEMORY", "NODE_FAIL")
    for (ns, job), (failed, n) in job_failed.items():
        seen = sum(
            1
            for r in rows
            if not r.get("_job_level")
            and r["job_id"] == job
            and r["namespace"] == ns
            and r["state"] in failing
        )
        rows += [
            {
                "line_no": n,
                "job_id": job,
                "namespace": ns,
                "name": job,
                "state": "FAILED",
                "start_ts": None,
                "end_ts": None,
                "_pod_start": None,
                "flags": "pod_not_in_dump,cause_not_in_record",
                "_seq": 1000 + k,
                "_job_level": False,
            }
            for k in range(max(failed - seen, 0))
        ]
    number_attempts(rows, window_s)
    frame = pl.DataFrame(
        [{c: r.get(c) for c in _JOB_SCHEMA} for r in rows],
        schema=_JOB_SCHEMA,
        orient="row",
    ).with_columns(pl.col("_job_level").fill_null(value=False))
    gangs = frame.filter(
        pl.col("flags").str.contains("pods_ended_together").fill_null(value=False)
    )
    if gangs.height:
        n_attempts = gangs.select("namespace", "job_id", "het_offset", "attempt")
        notes.append(
            f"{gangs.height} pod run(s) of one job that ended within "
            f"{window_s:g} s of each other were counted as "
            f"{n_attempts.n_unique()} attempt(s) (flag pods_ended_together)"
        )
    stop = pl.coalesce("end_ts", "_censor")
    elapsed = (stop - pl.col("start_ts")).dt.total_microseconds() / 1e6
    frame = frame.with_columns(
        elapsed_s=pl.when(elapsed >= 0).then(elapsed),
        flags=pl.concat_str(
            [
                pl.col("flags"),
                pl.when(elapsed < 0).then(pl.lit("end_before_start")),
            ],
            separator=",",
            ignore_nulls=True,
        ).replace("", None),
    )
    if key is not None:
        frame = frame.with_columns(
            job_id=pseudonymize(frame["job_id"], key=key, field="name"),
            name=pseudonymize(frame["name"], key=key, field="name"),
            namespace=pseudonymize(frame["namespace"], key=key, field="user"),
        )
    jobs = frame.select(
        "line_no",
        "job_id",
        "attempt",
        "state",
        "exit_code",
        "submit_ts",
        "start_ts",
        "end_ts",
        "elapsed_s",
        "n_nodes",
        "n_gpus",
        "name",
        "het_offset",
        "reason",
        "namespace",
        "flags",
        scheduler=pl.lit("k8s"),
        base_job_id="job_id",
    )
    nodes = frame.filter(
        pl.col("host").is_not_null() & (pl.col("attempt") >= 1)
    ).select("job_id", "attempt", "host")
    reject_frame = pl.DataFrame(
        rejects,
        schema={"line_no": pl.Int64, "reason": pl.String, "raw": pl.String},
        orient="row",
    )
    ignored_frame = (
        pl.DataFrame(
            {"reason": list(ignored), "n_lines": list(ignored.values())},
            schema={"reason": pl.String, "n_lines": pl.Int64},
        )
        if ignored
        else None
    )
    n_loaded = len(items) - len(rejects) - sum(ignored.values())
    options: dict[str, Any] = {"line_no": "1-based index of the object in the list"}
    return Parsed(
        n_lines=len(items),
        tables={"jobs": jobs, "job_nodes": nodes},
        rejects=reject_frame,
        options=options,
        n_loaded=n_loaded,
        ignored=ignored_frame,
    )


def _snapshot(path: str | Path, value: str | datetime | None) -> datetime | None:
    if value is None:
        return None
    if isinstance(value, str):
        try:
            value = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
        except ValueError as exc:
            msg = (
                f"--snapshot-ts {value!r} is not an ISO 8601 time; give one with a "
                "zone, e.g. 2025-07-01T16:00:00Z."
            )
            raise IngestError(path, msg) from exc
    if value.tzinfo is None:
        msg = (
            f"--snapshot-ts {value.isoformat()} has no zone; add one, e.g. "
            f"{value.strftime('%Y-%m-%dT%H:%M:%S')}Z."
        )
        raise IngestError(path, msg)
    return value.astimezone(UTC)


def read_k8s(
    store: Store,
    path: str | Path,
    *,
    snapshot_ts: str | datetime | None = None,
    replace: bool = False,
    as_of: str | datetime | None = None,
    pseudonymize: bool = False,
    pseudonym_key_file: str | Path | None = None,
    gang_window_s: float = GANG_WINDOW_S,
) -> IngestResult:
    r"""Read Kubernetes pods and Jobs (``kubectl get -o json``) into the job tables.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        JSON as ``kubectl get pods,jobs -A -o json`` prints it: a ``List`` with
        ``items``, or one ``Pod`` or ``Job`` object. A ``PodList``/``JobList``
        as client-go returns it (``{"metadata": {...}, "items": [...]}``, the
        items without ``kind`` or ``apiVersion``) and a bare JSON array of
        objects are read too: an item without ``kind`` is told by its shape
        (:func:`relkit.ingest._k8s_pods.kind_of`; the summary says how many).
        Objects of other kinds, or of neither shape, are counted as ignored.
    snapshot_ts : str or datetime, optional
        When the dump was taken (with a zone, e.g. ``"2025-07-01T16:00:00Z"``):
        running containers are right-censored there (``elapsed_s`` = snapshot −
        start). Without it their ``elapsed_s`` is null (flag
        ``no_snapshot_ts``).
    replace : bool, default False
        Re-read a file ingested before, dropping its earlier rows first.
    as_of : str or datetime, optional
        When the file was collected (ISO 8601 with a zone, or an aware
        datetime; ``--as-of``): stored in UTC as ``as_of_ts`` in the source's
        options, where analysis ends open-ended observation. A zone-less time
        is an error. Also the ``snapshot_ts`` when that is not given.
    pseudonymize : bool, default False
        Replace job ids, pod names and namespaces (free text users choose) by
        keyed pseudonyms (see :func:`relkit.ingest.read_sacct`).
    pseudonym_key_file : str or Path, optional
        File holding the pseudonym key (default ``$RELKIT_PSEUDONYM_KEY``).
    gang_window_s : float, default :data:`GANG_WINDOW_S` (60)
        Seconds: runs of different pods of one job that end within this of
        the first of them are one attempt (one interruption, GPUs summed), in
        [0, 3600]; 0 merges only runs that end at the same second.

    Returns
    -------
    IngestResult
        ``n_lines`` objects = ``n_loaded`` + ``n_rejected`` + ``n_ignored``.
        ``line_no`` of every row is the 1-based index of its object in the list.

    Raises
    ------
    IngestError
        If the file is missing, not JSON, holds no Kubernetes objects, or
        ``snapshot_ts`` has no zone.
    RelkitError
        If ``pseudonymize`` is set and no key is found.
    InvalidParameterError
        If ``gang_window_s`` is not a number of seconds in [0, 3600].

    Notes
    -----
    ``job_id`` is the pod's ``job-name`` label (or the Job owning it, else the
    pod name); ``het_offset`` its ``job-completion-index`` (indexed Jobs: the
    pods of one attempt run side by side, like Slurm's heterogeneous
    components). Attempts are numbered per job in pod start order, then
    restart order; ``host`` (``spec.nodeName``) goes to ``job_nodes``;
    ``n_gpus`` sums the containers' ``nvidia.com/gpu`` (or ``amd.com/gpu``)
    limits, else requests (an init container's, when larger); a pod that
    names no GPU resource has 0 GPUs, never a per-node default.

    The pods of one job (same namespace, ``job-name`` label or owning Job,
    completion index) whose runs end within ``gang_window_s`` (60 s) of the
    first of them are one attempt of the job, not one per pod: the rows keep
    their pod, host and GPUs but share ``attempt`` (flag
    ``pods_ended_together``), so :func:`relkit.jobs.build_job_attempts`
    makes one attempt of them, its GPUs the pods' sum and its hosts their
    union, and a 4-pod job that fails is one interruption, not four. Their
    open runs (running at the snapshot, or pending) are one attempt too
    (``pods_open_together``).

    An init container that fails (exit code other than 0, e.g. reason
    ``Error``; ``CrashLoopBackOff`` while it is retried) ends a failed attempt
    like a container does (flag ``init_container=NAME``): its restarts and
    its ``lastState`` or current ``terminated`` state are the attempts; a run
    that exited 0 is none.

    A container with ``restartCount`` r ended r runs before its current one:
    only the last is in ``lastState``; the earlier ones are ``FAILED`` with
    unknown exit code and reason (flag ``cause_not_in_record``), never given
    the last one's reason. Each container's ended runs are attempts of the
    pod (a sidecar's ``OOMKilled`` is kept; with several containers the flag
    ``container=NAME``, or ``container=#k`` when pseudonymized, says whose),
    in time order, runs of unknown time first; the pod's current state is
    the last attempt: ``RUNNING`` while a container runs, else its
    containers' terminations merged (a failure speaks over a success).
    ``OOMKilled`` is ``OUT_OF_MEMORY``; exit 0 ``COMPLETED``; another exit
    ``FAILED``. A ``DisruptionTarget`` condition sets the last attempt's state
    (:data:`DISRUPTION_STATES`) and, when the container's times are null, its
    end. A pod evicted by the kubelet (``status.reason`` ``Evicted``) without
    that condition (clusters before Kubernetes 1.26) is ``NODE_FAIL`` (flag
    ``evicted_node_pressure``: the node ran low on memory, disk or PIDs),
    unless the message blames the pod's own ephemeral-storage limit
    (``FAILED``, flag ``evicted_own_limit``). Go's zero time and null are
    missing; a missing first start is the pod's ``startTime``. A pending pod
    is ``PENDING`` with no start (queue time); a pod without ``status`` has a
    null state (flag ``no_status``). A ``finishedAt`` before its
    ``startedAt``, or a negative ``restartCount``, rejects the pod: no
    duration is ever negative.
    A Job object is one row with ``attempt`` 0 (its own terminal state and
    reason, e.g. ``BackoffLimitExceeded``; no run of its own, so never an
    attempt of the job); the failed pods it counts that the dump does not
    hold become ``FAILED`` attempts of unknown cause and time.

    With ``pseudonymize``, a rejected object keeps only its kind, pseudonymized
    name and namespace and its phase in ``rejects.raw``, and its reason names
    it by the pseudonym.

    References
    ----------
    .. [1] Kubernetes documentation, "Pod Lifecycle" (container states, pod
       conditions, ``DisruptionTarget``),
       https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle/
    .. [2] Kubernetes documentation, "Node-pressure Eviction",
       https://kubernetes.io/docs/concepts/scheduling-eviction/node-pressure-eviction/
    .. [3] Kubernetes documentation, "Jobs" (``job-name`` and
       ``controller-uid`` labels, pod failures, backoff),
       https://kubernetes.io/docs/concepts/workloads/controllers/job/
    .. [4] Kubernetes documentation, "Init Containers",
       https://kubernetes.io/docs/concepts/workloads/pods/init-containers/

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> from relkit.store import Store
    >>> pod = {
    ...     "kind": "Pod",
    ...     "metadata": {"name": "p-0", "labels": {"job-name": "p"}},
    ...     "spec": {"nodeName": "n1"},
    ...     "status": {
    ...         "phase": "Succeeded",
    ...         "startTime": "2025-07-01T08:00:00Z",
    ...         "containerStatuses": [
    ...             {
    ...                 "restartCount": 0,
    ...                 "state": {
    ...                     "terminated": {
    ...                         "exitCode": 0,
    ...                         "reason": "Completed",
    ...                         "startedAt": "0001-01-01T00:00:00Z",
    ...                         "finishedAt": "2025-07-01T20:00:00Z",
    ...                     }
    ...                 },
    ...             }
    ...         ],
    ...     },
    ... }
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "pods.json"
    >>> _ = f.write_text(json.dumps({"kind": "List", "items": [pod]}))
    >>> store = Store(":memory:")
    >>> read_k8s(store, f).n_loaded
    1
    >>> store.table("jobs").select("job_id", "attempt", "state", "elapsed_s").rows()
    [('p', 1, 'COMPLETED', 43200.0)]
    """
    check_file(path)
    snapshot = _snapshot(path, snapshot_ts if snapshot_ts is not None else as_of)
    if (
        isinstance(gang_window_s, bool)
        or not isinstance(gang_window_s, int | float)
        or not 0 <= gang_window_s <= _MAX_WINDOW_S
    ):
        msg = (
            f"gang_window_s must be seconds in [0, {_MAX_WINDOW_S:g}]; got "
            f"{gang_window_s!r}, e.g. {GANG_WINDOW_S:g}."
        )
        raise InvalidParameterError(msg)
    key = load_pseudonym_key(pseudonym_key_file) if pseudonymize else None
    notes: list[str] = []
    result = ingest(
        store,
        path,
        kind="k8s",
        options={
            "snapshot_ts": None if snapshot is None else snapshot.isoformat(),
            "pseudonymize": pseudonymize,
            "gang_window_s": float(gang_window_s),
        },
        parse=lambda p: _parse(p, snapshot, key, float(gang_window_s), notes),
        replace=replace,
        as_of=as_of,
    )
    return _with_notes(result, notes)
