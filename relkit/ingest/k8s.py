r"""Read Kubernetes pod and job records (``kubectl get -o json``) into the job tables.

A pod's container restarts are attempts of its job; the job is the pod's
``job-name`` label (or its owning Job), else the pod itself. Go's zero time
(``0001-01-01T00:00:00Z``) and nulls are missing values, never instants; a pod
taken off its node by the taint manager is an infrastructure interruption; a
Job's ``BackoffLimitExceeded`` is its terminal state, not another failure; a
pending pod has no runtime (its wait is queue time). Case C13 of
``cases/README.md`` pins each rule.
"""

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import polars as pl

from relkit.errors import IngestError
from relkit.ingest._common import IngestResult, Parsed, check_file, ingest
from relkit.ingest._pseudonym import load_pseudonym_key, pseudonymize
from relkit.schema import UTC as UTC_DTYPE
from relkit.store import Store

__all__ = ["DISRUPTION_STATES", "read_k8s"]

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


def _ts(value: object) -> datetime | None:
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


def _bad_ts(value: object) -> bool:
    """Tell a non-empty time string that is not RFC 3339."""
    if not isinstance(value, str) or not value.strip():
        return False
    try:
        parsed = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return True
    return parsed.tzinfo is None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _gpus(spec: dict[str, Any]) -> int | None:
    total, seen = 0, False
    for container in spec.get("containers") or []:
        resources = _dict(_dict(container).get("resources"))
        for part in ("limits", "requests"):
            values = _dict(resources.get(part))
            hits = [values[r] for r in _GPU_RESOURCES if r in values]
            if hits:
                try:
                    total += sum(int(str(h)) for h in hits)
                except ValueError:
                    return None
                seen = True
                break
    return total if seen else None


def _job_of(meta: dict[str, Any]) -> str:
    labels = _dict(meta.get("labels"))
    for key in ("batch.kubernetes.io/job-name", "job-name"):
        if labels.get(key):
            return str(labels[key])
    for owner in meta.get("ownerReferences") or []:
        if _dict(owner).get("kind") == "Job" and _dict(owner).get("name"):
            return str(owner["name"])
    return str(meta.get("name"))


def _index_of(meta: dict[str, Any]) -> int | None:
    for where in ("labels", "annotations"):
        value = _dict(meta.get(where)).get("batch.kubernetes.io/job-completion-index")
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
    container: dict[str, Any], tag: str | None
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Return a container's ended runs before the current one, and its state.

    A container restarted r times ended r runs: only the last is in
    ``lastState``; the earlier ones failed (a restart follows an exit), but
    when, why and with which code is not in the record.
    """
    restarts = _restarts(container)
    last = _dict(_dict(container.get("lastState")).get("terminated"))
    flag = None if tag is None else f"container={tag}"
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
        state, code = _terminated_state(last)
        rows.append(
            {
                "state": state,
                "exit_code": code,
                "reason": last.get("reason"),
                "start_ts": _ts(last.get("startedAt")),
                "end_ts": _ts(last.get("finishedAt")),
                "flags": flag,
            }
        )
    return rows, _dict(container.get("state"))


def _time_order(row: dict[str, Any]) -> tuple[int, datetime]:
    """Sort key of ended runs: unknown times first, then by end (or start)."""
    at = row["end_ts"] or row["start_ts"]
    return (0, datetime.min.replace(tzinfo=UTC)) if at is None else (1, at)


def _pod_rows(
    item: dict[str, Any], snapshot: datetime | None, *, hide_names: bool = False
) -> list[dict[str, Any]]:
    """Return one pod's attempts (time order) as job rows without ``attempt``.

    Every container's restarts end an attempt of the pod (a sidecar's
    ``OOMKilled`` is kept, not merged away); the pod's current state is the
    last attempt: running while any container runs, else the containers'
    terminations merged (a failure speaks over a success).
    """
    meta, spec, status = (_dict(item.get(k)) for k in ("metadata", "spec", "status"))
    for where, value in (
        ("status.startTime", status.get("startTime")),
        ("metadata.creationTimestamp", meta.get("creationTimestamp")),
    ):
        if _bad_ts(value):
            msg = f"{where} is not an RFC 3339 time: {value!r}"
            raise ValueError(msg)
    base = {
        "job_id": _job_of(meta),
        "name": meta.get("name"),
        "namespace": meta.get("namespace"),
        "het_offset": _index_of(meta),
        "submit_ts": _ts(meta.get("creationTimestamp")),
        "n_nodes": 1 if spec.get("nodeName") else None,
        "n_gpus": _gpus(spec),
        "host": spec.get("nodeName"),
        "_pod_start": _ts(status.get("startTime")),
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
    conditions = [_dict(c) for c in status.get("conditions") or []]
    disruption = next(
        (
            c
            for c in conditions
            if c.get("type") == "DisruptionTarget" and c.get("status") == "True"
        ),
        None,
    )
    evicted = None if disruption is not None else _eviction(status)
    statuses = [_dict(c) for c in status.get("containerStatuses") or []]
    phase = status.get("phase")
    if not statuses:
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
            row["end_ts"] = _ts(disruption.get("lastTransitionTime"))
            row["start_ts"] = base["_pod_start"]
        elif evicted is not None:
            row["state"], row["flags"] = evicted
            row["start_ts"] = base["_pod_start"]
        return [row]
    multi = len(statuses) > 1
    ended: list[dict[str, Any]] = []
    running: list[dict[str, Any]] = []
    terminated: list[tuple[dict[str, Any], str | None]] = []
    for k, container in enumerate(statuses, 1):
        tag = (f"#{k}" if hide_names else str(container.get("name"))) if multi else None
        rows, now = _container_rows(container, tag)
        ended += rows
        if "running" in now:
            running.append(_dict(now["running"]))
        elif "terminated" in now:
            terminated.append((_dict(now["terminated"]), tag))
    final: dict[str, Any] | None = None
    if running:
        # a container that ended for good while others run: an ended run
        for term, tag in terminated:
            state, code = _terminated_state(term)
            if state != "COMPLETED":
                ended.append(
                    {
                        "state": state,
                        "exit_code": code,
                        "reason": term.get("reason"),
                        "start_ts": _ts(term.get("startedAt")),
                        "end_ts": _ts(term.get("finishedAt")),
                        "flags": None if tag is None else f"container={tag}",
                    }
                )
        starts = [t for r in running if (t := _ts(r.get("startedAt"))) is not None]
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
        starts = [t for _, x, _ in states if (t := _ts(x.get("startedAt")))]
        ends = [t for _, x, _ in states if (t := _ts(x.get("finishedAt")))]
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
                final["end_ts"] = _ts(disruption.get("lastTransitionTime"))
                flags.append("end_from_disruption_condition")
        elif evicted is not None and state != "COMPLETED":
            final["state"] = evicted[0]
            final["reason"] = "Evicted"
            flags.append(evicted[1])
        final["flags"] = ",".join(flags) or None
    rows = sorted(ended, key=_time_order) + ([final] if final is not None else [])
    if not rows:  # e.g. a container still being created: not started yet
        waiting = _dict(_dict(statuses[0].get("state")).get("waiting"))
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


def _job_rows(item: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """Return a Job object's own terminal record and its count of failed pods."""
    meta, status = _dict(item.get("metadata")), _dict(item.get("status"))
    conditions = [_dict(c) for c in status.get("conditions") or []]
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
        "submit_ts": _ts(meta.get("creationTimestamp")),
        "n_nodes": None,
        "n_gpus": _gpus(
            _dict(_dict(_dict(item.get("spec")).get("template")).get("spec"))
        ),
        "host": None,
        "state": state,
        "exit_code": None,
        "reason": (final or {}).get("reason"),
        "start_ts": _ts(status.get("startTime")),
        "end_ts": _ts(status.get("completionTime"))
        or _ts((final or {}).get("lastTransitionTime")),
        "flags": "job_level_record",
    }
    failed = status.get("failed")
    return row, int(failed) if isinstance(failed, int) and failed > 0 else 0


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
    if isinstance(doc, dict) and isinstance(doc.get("items"), list):
        return list(doc["items"])
    if isinstance(doc, dict) and doc.get("kind") in ("Pod", "Job"):
        return [doc]
    if isinstance(doc, list):
        return doc
    msg = (
        "no Kubernetes objects found: expected a List with 'items' or a Pod/Job "
        "object, as `kubectl get pods,jobs -o json` prints."
    )
    raise IngestError(path, msg)


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
    obj = _dict(item)
    meta = _dict(obj.get("metadata"))
    kept = {
        "kind": obj.get("kind"),
        "metadata": {
            k: _pseudonym(v, key, field)
            for k, field in (("name", "name"), ("namespace", "user"))
            if isinstance(v := meta.get(k), str)
        },
        "status": {"phase": _dict(obj.get("status")).get("phase")},
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
}


def _parse(path: Path, snapshot: datetime | None, key: bytes | None) -> Parsed:
    items = _items(path)
    rows: list[dict[str, Any]] = []
    rejects: list[tuple[int, str, str]] = []
    ignored: dict[str, int] = {}
    job_failed: dict[tuple[str | None, str], tuple[int, int]] = {}
    for n, item in enumerate(items, 1):
        kind = _dict(item).get("kind")
        meta = _dict(_dict(item).get("metadata"))
        name = meta.get("name")
        if kind not in ("Pod", "Job"):
            reason = f"kind_{kind}" if isinstance(kind, str) else "no_kind"
            ignored[reason] = ignored.get(reason, 0) + 1
            continue
        if not isinstance(name, str) or not name:
            rejects.append((n, f"{kind} without metadata.name", _raw(item, key)))
            continue
        try:
            if kind == "Pod":
                got = _pod_rows(item, snapshot, hide_names=key is not None)
            else:
                row, failed = _job_rows(item)
                ns = row["namespace"]
                job_failed[(ns, row["job_id"])] = (failed, n)
                got = [{**row, "_job_level": True}]
        except (ValueError, TypeError) as exc:
            shown = name if key is None else _pseudonym(name, key, "name")
            rejects.append((n, f"{kind} {shown}: {exc}", _raw(item, key)))
            continue
        rows += [{**r, "line_no": n, "_seq": i} for i, r in enumerate(got)]
    frame = pl.DataFrame(
        [{c: r.get(c) for c in _JOB_SCHEMA} for r in rows],
        schema=_JOB_SCHEMA,
        orient="row",
    ).with_columns(pl.col("_job_level").fill_null(value=False))
    # failed pods a Job counts but the dump does not hold: attempts of unknown
    # cause and time (BackoffLimitExceeded itself is the Job's state, no failure)
    pods = frame.filter(~pl.col("_job_level"))
    extra: list[dict[str, Any]] = []
    for (ns, job), (failed, n) in job_failed.items():
        seen = pods.filter(
            (pl.col("job_id") == job)
            & (pl.col("namespace").eq_missing(ns))
            & pl.col("state").is_in(["FAILED", "OUT_OF_MEMORY", "NODE_FAIL"])
        ).height
        extra += [
            {
                "line_no": n,
                "job_id": job,
                "namespace": ns,
                "name": job,
                "state": "FAILED",
                "flags": "pod_not_in_dump,cause_not_in_record",
                "_seq": 1000 + k,
                "_job_level": False,
            }
            for k in range(max(failed - seen, 0))
        ]
    if extra:
        frame = pl.concat(
            [frame, pl.DataFrame(extra, schema=_JOB_SCHEMA, orient="row")],
            how="vertical",
        ).with_columns(pl.col("_job_level").fill_null(value=False))
    attempts = (
        frame.filter(~pl.col("_job_level"))
        .sort("job_id", "het_offset", "_pod_start", "line_no", "_seq", nulls_last=True)
        .with_columns(
            attempt=pl.int_range(1, pl.len() + 1, dtype=pl.Int32).over(
                "namespace", "job_id", "het_offset"
            )
        )
    )
    # a Job's own record is attempt 0: it is no run of its own
    job_level = frame.filter(pl.col("_job_level")).with_columns(
        attempt=pl.lit(0, dtype=pl.Int32)
    )
    frame = pl.concat([attempts, job_level], how="diagonal")
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
) -> IngestResult:
    r"""Read Kubernetes pods and Jobs (``kubectl get -o json``) into the job tables.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        JSON as ``kubectl get pods,jobs -A -o json`` prints it: a ``List`` with
        ``items``, or one ``Pod`` or ``Job`` object. Objects of other kinds are
        counted as ignored.
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

    Notes
    -----
    ``job_id`` is the pod's ``job-name`` label (or the Job owning it, else the
    pod name); ``het_offset`` its ``job-completion-index`` (indexed Jobs: the
    pods of one attempt run side by side, like Slurm's heterogeneous
    components). Attempts are numbered per job in pod start order, then
    restart order; ``host`` (``spec.nodeName``) goes to ``job_nodes``;
    ``n_gpus`` sums the containers' ``nvidia.com/gpu`` limits.

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
    key = load_pseudonym_key(pseudonym_key_file) if pseudonymize else None
    return ingest(
        store,
        path,
        kind="k8s",
        options={
            "snapshot_ts": None if snapshot is None else snapshot.isoformat(),
            "pseudonymize": pseudonymize,
        },
        parse=lambda p: _parse(p, snapshot, key),
        replace=replace,
        as_of=as_of,
    )
