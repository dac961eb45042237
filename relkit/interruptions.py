r"""Job attempts, their interruptions, and the root-cause table of Llama 3 Table 5.

Failures matter because they interrupt jobs. :func:`build_job_attempts` turns
the store's ``jobs`` and ``job_nodes`` into one row per logical job attempt
(Slurm's heterogeneous components merged); :func:`build_interruptions` ties
each attempt that ended abnormally to the failure incidents logged on its nodes
shortly before its end (an interval join: polars ``join_where`` on host and
time, never a cross product)
and gives it a cause; :func:`root_cause_table` counts the interruptions in the
rows of Llama 3's Table 5, planned and unexpected apart, and
:func:`interruption_summary` gives the mean time between them.

Causes (``cause``):

- from the matched incident's taxonomy category: ``hardware``, ``network``,
  ``software``, ``user`` (application Xids), ``maintenance``, ``unknown``;
- without an incident, from the scheduler's state: ``infrastructure``
  (``NODE_FAIL``, ``BOOT_FAIL``, ``LAUNCH_FAILED``, a Kubernetes taint
  eviction), ``user`` (``FAILED`` with an exit code, ``OUT_OF_MEMORY``),
  ``unknown`` (``REQUEUED`` without a sign of a deliberate requeue, a
  failure whose exit code is not recorded),
  ``user_action`` (``CANCELLED``), ``policy`` (``TIMEOUT``, ``DEADLINE``),
  ``scheduler`` (``PREEMPTED``), ``secondary`` (preempted to make room for the
  requeue of a job a failure interrupted).

Kinds (``kind``): ``unexpected`` (failures, and interruptions of unknown
cause), ``planned`` (a deliberate requeue with no failure incident: a
``REQUEUED`` Slurm attempt whose steps were cancelled, not failed, as
``scontrol requeue`` leaves them, or a Kubernetes pod evicted through the
Eviction API by ``kubectl drain``; an operator's or automation's action, such
as Llama 3's 47 planned interruptions), ``secondary``, and ``not_failure``
(user actions, time limits, preemption). A ``REQUEUED`` attempt without such
a sign (no step rows, or failed steps) is "interrupted, cause unknown" (case
C08 of ``cases/README.md``): requeues follow failures too (``RequeueExit``,
a job script that requeues itself after a crash).
"""

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import polars as pl

from relkit.errors import InvalidParameterError
from relkit.incidents import build_incidents
from relkit.schema import UTC, require_columns
from relkit.taxonomy import FAILURE_MODES, LLAMA3_TABLE5

__all__ = [
    "ATTEMPT_SCHEMA",
    "DEFAULT_SLACK_MIN",
    "INTERRUPTION_SCHEMA",
    "JOB_FIELDS",
    "PLANNED_FLAGS",
    "InterruptionSummary",
    "build_interruptions",
    "build_job_attempts",
    "drop_repeated_records",
    "interruption_summary",
    "job_interruptions",
    "job_table",
    "root_cause_table",
]

#: Scheduler state -> (cause, kind) when no incident explains the end.
STATE_CAUSE: dict[str, tuple[str, str]] = {
    "NODE_FAIL": ("infrastructure", "unexpected"),
    "BOOT_FAIL": ("infrastructure", "unexpected"),
    "LAUNCH_FAILED": ("infrastructure", "unexpected"),
    "FAILED": ("user", "unexpected"),
    "OUT_OF_MEMORY": ("user", "unexpected"),
    "SPECIAL_EXIT": ("user", "unexpected"),
    "REQUEUED": ("unknown", "unexpected"),
    "CANCELLED": ("user_action", "not_failure"),
    "TIMEOUT": ("policy", "not_failure"),
    "DEADLINE": ("policy", "not_failure"),
    "PREEMPTED": ("scheduler", "not_failure"),
    "REVOKED": ("scheduler", "not_failure"),
}

#: States of attempts that have not ended (right-censored or queued).
OPEN_STATES = (
    "RUNNING",
    "PENDING",
    "SUSPENDED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESV_DEL_HOLD",
    "RESIZING",
    "CONFIGURING",
    "COMPLETING",
    "SIGNALING",
    "STAGE_OUT",
    "STOPPED",
    "POWER_UP_NODE",
    "UPDATE_DB",
)

#: States whose end is explained by a failure incident on the job's nodes when
#: one is found (others are decided by the user or the scheduler).
ATTRIBUTED_STATES = ("NODE_FAIL", "BOOT_FAIL", "LAUNCH_FAILED", "FAILED", "REQUEUED")

#: Default of ``slack_min``: how long before an attempt's end the incident that
#: ended it may have been logged, minutes. A GPU that fails mid-collective
#: hangs it; PyTorch's watchdog aborts the hung collective after the process
#: group timeout: 10 min for NCCL since PyTorch 2.2
#: (``kProcessGroupNCCLDefaultTimeout``, pytorch/pytorch PR #110947), 30 min
#: before that and for the other backends (``default_pg_timeout``), and 30 min
#: is what many training stacks still set explicitly. A watchdog stuck in a
#: CUDA call on the dead GPU is killed by the heartbeat monitor
#: (``TORCH_NCCL_HEARTBEAT_TIMEOUT_SEC``: 480 s, 600 s in 2.2-2.3). Then Slurm
#: tears the job down (``KillWait`` 30 s, ``UnkillableStepTimeout`` 60 s,
#: epilogs). 30 + 10 + 5 min = 45 min covers the 30-min timeout with a
#: heartbeat abort and the teardown.
DEFAULT_SLACK_MIN = 45.0

#: States of attempts that failed as they started: an incident just before
#: the start may explain them.
_LAUNCH_STATES = ("BOOT_FAIL", "LAUNCH_FAILED")

#: Causes that are infrastructure failures (for job MTTF and secondary losses).
INFRA_CAUSES = ("hardware", "network", "infrastructure")

#: Component state that speaks for a heterogeneous job (first match wins).
_STATE_PRIORITY = (
    "NODE_FAIL",
    "BOOT_FAIL",
    "LAUNCH_FAILED",
    "FAILED",
    "OUT_OF_MEMORY",
    "SPECIAL_EXIT",
    "REQUEUED",
    "PREEMPTED",
    "TIMEOUT",
    "DEADLINE",
    "CANCELLED",
    "REVOKED",
    *OPEN_STATES,
    "COMPLETED",
)

#: Columns of :func:`build_job_attempts`, in order.
ATTEMPT_SCHEMA = pl.Schema(
    {
        "source_id": pl.Int32(),
        "job_id": pl.String(),
        "attempt": pl.Int32(),
        "scheduler": pl.String(),
        "state": pl.String(),
        "exit_code": pl.String(),
        "cancelled_by_uid": pl.String(),
        "reason": pl.String(),
        "submit_ts": UTC,
        "start_ts": UTC,
        "end_ts": UTC,
        "stop_ts": UTC,
        "elapsed_s": pl.Float64(),
        "is_censored": pl.Boolean(),
        "n_nodes": pl.Int64(),
        "n_gpus": pl.Int64(),
        "gpus_assumed": pl.Boolean(),
        "n_components": pl.Int64(),
        "hosts": pl.List(pl.String()),
        "name": pl.String(),
        "user": pl.String(),
        "partition": pl.String(),
        "flags": pl.String(),
    }
)

#: Flags of a job record that mark a deliberate requeue (``planned``): a
#: ``REQUEUED`` Slurm attempt whose steps were cancelled and none failed
#: (:func:`relkit.ingest.read_sacct`), a pod evicted through the Eviction API
#: (:func:`relkit.ingest.read_k8s`).
PLANNED_FLAGS = ("steps_cancelled", "evicted_by_api")

#: Columns of :func:`build_interruptions`, in order.
INTERRUPTION_SCHEMA = pl.Schema(
    {
        "source_id": pl.Int32(),
        "job_id": pl.String(),
        "attempt": pl.Int32(),
        "start_ts": UTC,
        "end_ts": UTC,
        "state": pl.String(),
        "exit_code": pl.String(),
        "cause": pl.String(),
        "kind": pl.String(),
        "failure_mode": pl.String(),
        "host": pl.String(),
        "device": pl.String(),
        "incident_ts": UTC,
        "primary_job_id": pl.String(),
        "n_nodes": pl.Int64(),
        "n_gpus": pl.Int64(),
        "elapsed_s": pl.Float64(),
        "lost_node_h": pl.Float64(),
        "lost_gpu_h": pl.Float64(),
    }
)

_JOB_COLUMNS = [
    "source_id",
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
]


def _check_slack(slack_min: float, name: str = "slack_min") -> float:
    if not isinstance(slack_min, int | float) or not 0 <= float(slack_min) < 1e6:
        msg = f"{name} must be a number of minutes in [0, 1e6); got {slack_min!r}."
        raise InvalidParameterError(msg)
    return float(slack_min)


#: Columns that tell one job record from another (with its hosts): not where
#: it was read, nor the numbering, flags or optional columns (Partition,
#: AllocTRES, ...) its file's ``--format`` gave it.
_IDENTITY = (
    "scheduler",
    "namespace",
    "job_id",
    "het_offset",
    "name",
    "state",
    "exit_code",
    "submit_ts",
    "start_ts",
    "end_ts",
    "elapsed_s",
)


def drop_repeated_records(jobs: pl.DataFrame, job_nodes: pl.DataFrame) -> pl.DataFrame:
    """Keep one copy of job records that several sources hold.

    ``sacct -S/-E`` dumps of consecutive days overlap: a job that ran across
    midnight is in both files, and counting it twice would double its
    interruption. Records of different sources with the same job id, name,
    state, exit code, Submit, Start, End, Elapsed and hosts are one record
    (where it was read, its attempt number, flags and the columns a file's
    ``--format`` may add or leave out are not compared).

    Parameters
    ----------
    jobs : pl.DataFrame
        The store's ``jobs`` table (at least ``source_id, job_id, attempt``;
        of ``scheduler, namespace, het_offset, name, state, exit_code,
        submit_ts, start_ts, end_ts, elapsed_s`` those it has are compared).
    job_nodes : pl.DataFrame
        The store's ``job_nodes`` table (``source_id, job_id, attempt,
        host``): the hosts are compared too.

    Returns
    -------
    pl.DataFrame
        ``jobs`` without the repeated copies, in its order. Of each set of
        equal records, the copies of the source holding the most of them are
        kept (the lowest ``source_id`` on a tie), so records a file holds
        twice on purpose (a Kubernetes pod's restarts of unknown time) keep
        their count. Requeued attempts differ in their start: they are never
        merged. Within one file, ``read_sacct`` already counted repeats once.

    Raises
    ------
    SchemaError
        If a key column is missing.

    Examples
    --------
    >>> import polars as pl
    >>> jobs = pl.DataFrame(
    ...     {
    ...         "source_id": [1, 2, 2],
    ...         "job_id": ["9001", "9001", "9002"],
    ...         "attempt": [1, 1, 1],
    ...         "state": ["NODE_FAIL", "NODE_FAIL", "COMPLETED"],
    ...     }
    ... )
    >>> nodes = pl.DataFrame(
    ...     schema={
    ...         "source_id": pl.Int64,
    ...         "job_id": pl.String,
    ...         "attempt": pl.Int64,
    ...         "host": pl.String,
    ...     }
    ... )
    >>> drop_repeated_records(jobs, nodes).rows()
    [(1, '9001', 1, 'NODE_FAIL'), (2, '9002', 1, 'COMPLETED')]
    """
    keys = ["source_id", "job_id", "attempt"]
    require_columns(jobs, keys, where="drop_repeated_records")
    require_columns(job_nodes, [*keys, "host"], where="drop_repeated_records")
    if jobs.height == 0 or jobs["source_id"].n_unique() < 2:
        return jobs
    hosts = job_nodes.group_by(keys).agg(_hosts=pl.col("host").unique().sort())
    same = [c for c in _IDENTITY if c in jobs.columns]
    keyed = (
        jobs.with_row_index("_row")
        .join(hosts, on=keys, how="left", nulls_equal=False)
        .with_columns(_key=pl.struct([*same, "_hosts"]))
    )
    per_source = keyed.group_by("_key", "source_id").agg(_n=pl.len())
    best = per_source.sort(
        "_n", "source_id", descending=[True, False], maintain_order=True
    ).unique("_key", keep="first", maintain_order=True)
    kept = keyed.join(
        best.select("_key", "source_id"), on=["_key", "source_id"], how="semi"
    )
    return jobs.filter(
        pl.int_range(pl.len()).is_in(kept["_row"].cast(pl.Int64).implode())
    )


#: Columns of :func:`job_table`, in order: the ``relkit jobs`` row fields (issue 5).
JOB_FIELDS = (
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
)


def job_table(jobs: pl.DataFrame, job_nodes: pl.DataFrame) -> pl.DataFrame:
    """List the job records with their hosts (the ``relkit jobs`` rows).

    Parameters
    ----------
    jobs : pl.DataFrame
        The store's ``jobs`` table (one row per attempt of a job or
        heterogeneous component; ``attempt`` 0 for a Kubernetes Job's own
        record).
    job_nodes : pl.DataFrame
        The store's ``job_nodes`` table (``source_id, job_id, attempt, host``).

    Returns
    -------
    pl.DataFrame
        One row per ``jobs`` row, sorted by ``base_job_id, job_id, attempt``
        (a record several sources hold, such as a job in two overlapping
        daily dumps, once: :func:`drop_repeated_records`):
        ``job_id, base_job_id, array_task, het_offset, attempt, state,
        cancelled_by_uid, submit_ts, start_ts, end_ts`` (UTC), ``elapsed_s``
        (seconds, null without a start), ``n_nodes, n_gpus`` and ``hosts``
        (list of host names, in name order).

    Raises
    ------
    SchemaError
        If a column is missing.
    """
    require_columns(jobs, [*_JOB_COLUMNS, "base_job_id"], where="job_table")
    require_columns(
        job_nodes, ["source_id", "job_id", "attempt", "host"], where="job_table"
    )
    jobs = drop_repeated_records(jobs, job_nodes)
    hosts = job_nodes.group_by("source_id", "job_id", "attempt").agg(
        hosts=pl.col("host").unique().sort()
    )
    out = jobs.join(
        hosts, on=["source_id", "job_id", "attempt"], how="left", nulls_equal=False
    )
    return out.sort(
        "base_job_id", "job_id", "attempt", "source_id", nulls_last=True
    ).select(
        *JOB_FIELDS[:-1],
        pl.col("hosts").fill_null(pl.lit([], dtype=pl.List(pl.String))),
    )


def build_job_attempts(
    jobs: pl.DataFrame,
    job_nodes: pl.DataFrame,
    *,
    gpus_per_node: int | None = None,
) -> pl.DataFrame:
    """Merge the store's job records into one row per logical job attempt.

    Parameters
    ----------
    jobs : pl.DataFrame
        The store's ``jobs`` table: ``source_id, job_id, attempt, state,
        exit_code, submit_ts, start_ts, end_ts`` (UTC), ``elapsed_s`` (s),
        ``n_nodes, n_gpus``; optional ``scheduler, cancelled_by_uid, reason,
        name, user, partition``. Rows with ``attempt`` 0 (a Kubernetes Job's
        own record, no run of its own) or null are left out.
    job_nodes : pl.DataFrame
        The store's ``job_nodes`` table: ``source_id, job_id, attempt, host``.
    gpus_per_node : int, optional
        GPUs per node for attempts whose record has no GPU count (``n_gpus`` =
        ``n_nodes`` × this; ``gpus_assumed`` True). Default: leave them null.

    Returns
    -------
    pl.DataFrame
        Columns :data:`ATTEMPT_SCHEMA`, sorted by ``source_id, job_id,
        attempt``. ``job_id`` is the logical job: Slurm's heterogeneous
        components ``4120+0`` and ``4120+1`` are one job ``4120`` (its hosts the
        union, its GPUs the sum, its state the component's that speaks for the
        job: a failure over a success); array tasks stay jobs of their own
        (``4108_7``). Rows sharing a job id and attempt are merged the same
        way: the pods of one Kubernetes job that ended together
        (:func:`relkit.ingest.read_k8s`, flag ``pods_ended_together``) are one
        attempt, one interruption, their GPUs summed. A record several
        sources hold (overlapping daily ``sacct`` dumps) is counted once
        (:func:`drop_repeated_records`), so its interruption is too.
        ``stop_ts`` is ``end_ts``, or ``start_ts + elapsed_s`` for an attempt
        still running (``is_censored`` True: right-censored there).
        ``n_nodes`` counts the distinct hosts when known.

    Raises
    ------
    SchemaError
        If a column is missing.
    InvalidParameterError
        If ``gpus_per_node`` is not a whole number >= 1.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> t0, t1 = (
    ...     datetime(2025, 2, 1, 16, tzinfo=UTC),
    ...     datetime(2025, 2, 1, 18, tzinfo=UTC),
    ... )
    >>> jobs = pl.DataFrame(
    ...     {
    ...         "source_id": 1,
    ...         "job_id": ["4120+0", "4120+1"],
    ...         "attempt": 1,
    ...         "state": "COMPLETED",
    ...         "exit_code": "0:0",
    ...         "submit_ts": t0,
    ...         "start_ts": t0,
    ...         "end_ts": t1,
    ...         "elapsed_s": 7200.0,
    ...         "n_nodes": [2, 1],
    ...         "n_gpus": None,
    ...     }
    ... )
    >>> nodes = pl.DataFrame(
    ...     {
    ...         "source_id": 1,
    ...         "job_id": ["4120+0", "4120+0", "4120+1"],
    ...         "attempt": 1,
    ...         "host": ["gpu044", "gpu045", "cpu007"],
    ...     }
    ... )
    >>> build_job_attempts(jobs, nodes).select("job_id", "n_nodes", "hosts").rows()
    [('4120', 3, ['cpu007', 'gpu044', 'gpu045'])]
    """
    require_columns(jobs, _JOB_COLUMNS, where="build_job_attempts")
    require_columns(
        job_nodes,
        ["source_id", "job_id", "attempt", "host"],
        where="build_job_attempts",
    )
    if gpus_per_node is not None and (
        isinstance(gpus_per_node, bool)
        or not isinstance(gpus_per_node, int)
        or gpus_per_node < 1
    ):
        msg = f"gpus_per_node must be a whole number >= 1; got {gpus_per_node!r}."
        raise InvalidParameterError(msg)
    optional = [
        "scheduler",
        "cancelled_by_uid",
        "reason",
        "name",
        "user",
        "partition",
        "flags",
    ]
    jobs = drop_repeated_records(jobs, job_nodes)
    rows = jobs.filter(pl.col("attempt") >= 1).with_columns(
        [
            pl.lit(None, dtype=pl.String).alias(c)
            for c in optional
            if c not in jobs.columns
        ]
    )
    keys = ["source_id", "job_id", "attempt"]
    hosts = job_nodes.group_by(keys).agg(_hosts=pl.col("host"))
    rank = {s: i for i, s in enumerate(_STATE_PRIORITY)}
    rows = (
        rows.join(hosts, on=keys, how="left")
        .with_columns(
            _logical=pl.col("job_id").str.replace(r"\+[0-9]+$", ""),
            _rank=pl.col("state").replace_strict(
                rank, default=len(rank) - 1, return_dtype=pl.Int64
            ),
        )
        .sort("source_id", "_logical", "attempt", "_rank", "job_id")
    )
    grouped = rows.group_by(
        "source_id", "_logical", "attempt", maintain_order=True
    ).agg(
        scheduler=pl.col("scheduler").first(),
        state=pl.col("state").first(),
        exit_code=pl.col("exit_code").first(),
        cancelled_by_uid=pl.col("cancelled_by_uid").first(),
        reason=pl.col("reason").first(),
        submit_ts=pl.col("submit_ts").min(),
        start_ts=pl.col("start_ts").min(),
        end_ts=pl.col("end_ts").max(),
        elapsed_s=pl.col("elapsed_s").max(),
        _nodes_decl=pl.col("n_nodes").cast(pl.Int64).sum(),
        _nodes_known=pl.col("n_nodes").is_not_null().any(),
        n_gpus=pl.col("n_gpus").cast(pl.Int64).sum(),
        _gpus_known=pl.col("n_gpus").is_not_null().all(),
        n_components=pl.len().cast(pl.Int64),
        hosts=pl.col("_hosts")
        .list.explode(keep_nulls=False, empty_as_null=False)
        .drop_nulls()
        .unique()
        .sort(),
        name=pl.col("name").first(),
        user=pl.col("user").first(),
        partition=pl.col("partition").first(),
        flags=pl.col("flags").drop_nulls().unique(maintain_order=True).str.join(","),
    )
    n_hosts = pl.col("hosts").list.len()
    n_nodes = (
        pl.when(n_hosts > 0)
        .then(n_hosts.cast(pl.Int64))
        .when(pl.col("_nodes_known"))
        .then(pl.col("_nodes_decl"))
    )
    gpus_known = pl.col("_gpus_known")
    assumed = ~gpus_known & pl.lit(gpus_per_node is not None)
    stop = pl.coalesce(
        pl.col("end_ts"),
        pl.col("start_ts")
        + pl.duration(microseconds=(pl.col("elapsed_s") * 1e6).cast(pl.Int64)),
    )
    out = grouped.with_columns(
        job_id=pl.col("_logical"),
        n_nodes=n_nodes,
    ).with_columns(
        n_gpus=pl.when(gpus_known)
        .then(pl.col("n_gpus"))
        .when(assumed)
        .then(pl.col("n_nodes") * (gpus_per_node or 0)),
        gpus_assumed=assumed & pl.col("n_nodes").is_not_null(),
        stop_ts=pl.when(pl.col("start_ts").is_not_null()).then(stop),
        is_censored=pl.col("state").is_in(OPEN_STATES)
        & pl.col("end_ts").is_null()
        & pl.col("start_ts").is_not_null(),
    )
    return (
        out.select(ATTEMPT_SCHEMA.names())
        .cast(dict(ATTEMPT_SCHEMA))
        .sort("source_id", "job_id", "attempt")
    )


def _has_flag(flags: list[str]) -> pl.Expr:
    """Tell rows whose ``flags`` (comma-separated) hold one of ``flags``."""
    pattern = "(^|,)(" + "|".join(flags) + ")(,|$)"
    return pl.col("flags").str.contains(pattern).fill_null(value=False)


def _abnormal(attempts: pl.DataFrame) -> pl.DataFrame:
    """Keep attempts that ended, and not as COMPLETED (nor cancelled unstarted)."""
    state = pl.col("state")
    never_ran = pl.col("start_ts").is_null() & state.is_in(
        ["CANCELLED", "TIMEOUT", "DEADLINE", "PREEMPTED", "REVOKED"]
    )
    return attempts.filter(
        state.is_not_null() & ~state.is_in([*OPEN_STATES, "COMPLETED"]) & ~never_ran
    )


def _match_incidents(
    ended: pl.DataFrame, incidents: pl.DataFrame, slack_us: int, after_us: int
) -> pl.DataFrame:
    """Find the best incident per attempt on its hosts in [end - s, end + a]."""
    keys = ["source_id", "job_id", "attempt"]
    slack = pl.duration(microseconds=slack_us)
    windows = (
        ended.filter(
            pl.col("state").is_in(ATTRIBUTED_STATES)
            | ~pl.col("state").is_in(list(STATE_CAUSE))
        )
        .filter(pl.col("end_ts").is_not_null())
        .select(
            *keys,
            "hosts",
            # an incident logged before the attempt started did not end it
            # (the job started on the node anyway); a launch failure may
            # follow one: its window reaches back before the start
            _lo=pl.when(
                pl.col("state").is_in(_LAUNCH_STATES) | pl.col("start_ts").is_null()
            )
            .then(pl.col("end_ts") - slack)
            .otherwise(pl.max_horizontal(pl.col("end_ts") - slack, pl.col("start_ts"))),
            _hi=pl.col("end_ts") + pl.duration(microseconds=after_us),
            _end="end_ts",
        )
        .explode("hosts")
        .rename({"hosts": "_host"})
        .filter(pl.col("_host").is_not_null())
    )
    empty = pl.DataFrame(
        schema={
            **{k: ended.schema[k] for k in keys},
            "failure_mode": pl.String,
            "_category": pl.String,
            "host": pl.String,
            "device": pl.String,
            "incident_ts": UTC,
        }
    )
    if windows.height == 0 or incidents.height == 0:
        return empty
    inc = incidents.filter(
        pl.col("start_ts").is_not_null() & (pl.col("category") != "info")
    ).select(
        _ihost="host",
        device="device",
        failure_mode="failure_mode",
        _category="category",
        incident_ts="start_ts",
        _counts=pl.col("counts_as_failure").fill_null(value=True),
    )
    if inc.height == 0:
        return empty
    pairs = windows.join_where(
        inc,
        pl.col("_host") == pl.col("_ihost"),
        pl.col("incident_ts") >= pl.col("_lo"),
        pl.col("incident_ts") <= pl.col("_hi"),
    )
    # failures first, then the incident nearest the end
    pairs = pairs.with_columns(
        _dist=(pl.col("incident_ts") - pl.col("_end")).dt.total_microseconds().abs()
    )
    best = (
        pairs.sort([*keys, "_counts", "_dist"], descending=[False] * 3 + [True, False])
        .unique(subset=keys, keep="first", maintain_order=True)
        .select(
            *keys,
            "failure_mode",
            "_category",
            host="_ihost",
            device="device",
            incident_ts="incident_ts",
        )
    )
    return best


def _secondary(
    ended: pl.DataFrame, attempts: pl.DataFrame, failed: pl.DataFrame, slack_us: int
) -> pl.DataFrame:
    """Preempted attempts that made room for the requeue of a failed job.

    ``failed``: keys of attempts interrupted by an infrastructure failure. Their
    next attempt's start S is matched with PREEMPTED attempts that ended in
    [S - slack, S] on a shared host.
    """
    keys = ["source_id", "job_id", "attempt"]
    preempted = ended.filter(
        pl.col("state") == "PREEMPTED", pl.col("end_ts").is_not_null()
    )
    if preempted.height == 0 or failed.height == 0:
        return pl.DataFrame(
            schema={**{k: ended.schema[k] for k in keys}, "primary_job_id": pl.String}
        )
    requeues = (
        failed.select("source_id", "job_id", attempt=pl.col("attempt") + 1)
        .join(attempts, on=keys, how="inner")
        .filter(pl.col("start_ts").is_not_null())
        .select(
            _src="source_id",
            primary_job_id="job_id",
            _start="start_ts",
            _from=pl.col("start_ts") - pl.duration(microseconds=slack_us),
            _host="hosts",
        )
        .explode("_host")
    )
    pre = preempted.select(*keys, "end_ts", _phost="hosts").explode("_phost")
    pairs = pre.join_where(
        requeues,
        pl.col("_phost") == pl.col("_host"),
        pl.col("source_id") == pl.col("_src"),
        pl.col("end_ts") <= pl.col("_start"),
        pl.col("end_ts") >= pl.col("_from"),
    )
    return (
        pairs.filter(pl.col("job_id") != pl.col("primary_job_id"))
        .unique(subset=keys, keep="first", maintain_order=True)
        .select(*keys, "primary_job_id")
    )


def build_interruptions(
    attempts: pl.DataFrame,
    incidents: pl.DataFrame,
    *,
    slack_min: float = DEFAULT_SLACK_MIN,
    after_end_min: float = 1.0,
) -> pl.DataFrame:
    r"""Give every abnormally ended job attempt its cause and lost time.

    Parameters
    ----------
    attempts : pl.DataFrame
        Job attempts from :func:`build_job_attempts` (columns
        :data:`ATTEMPT_SCHEMA`; ``flags``, ``submit_ts`` and the descriptive
        columns may be missing).
    incidents : pl.DataFrame
        Failure incidents from :func:`relkit.incidents.build_incidents` (as
        :func:`job_interruptions` builds them from the store's events):
        ``host``, ``device``,
        ``failure_mode``, ``category``, ``start_ts`` (UTC),
        ``counts_as_failure``. May be empty (no failure logs ingested).
    slack_min : float, default 45.0
        How many minutes before an attempt's end the incident that ended it may
        have been logged (:data:`DEFAULT_SLACK_MIN`): a GPU failure hangs the
        job's collectives until PyTorch's NCCL watchdog gives up (10 min by
        default since PyTorch 2.2, 30 min before and where set explicitly),
        then the job is torn down. Raise it for longer collective timeouts.
        In [0, 1e6).
    after_end_min : float, default 1.0
        How many minutes after the end an incident's log time may be and still
        be the cause (clocks of nodes and scheduler differ slightly). In
        [0, 1e6).

    Returns
    -------
    pl.DataFrame
        One row per attempt that ended and not as ``COMPLETED`` (attempts
        cancelled before they started are not interruptions), columns
        :data:`INTERRUPTION_SCHEMA`, sorted by ``end_ts`` (nulls last),
        ``job_id``, ``attempt``: the attempt's ``source_id, job_id, attempt,
        start_ts, end_ts, state, exit_code``; ``cause`` and ``kind`` (see the
        module docstring); the matched incident's ``failure_mode``, ``host``,
        ``device`` and start ``incident_ts`` (null without one);
        ``primary_job_id`` for a secondary interruption; ``n_nodes``,
        ``n_gpus``, ``elapsed_s``; ``lost_node_h`` and ``lost_gpu_h``, the
        attempt's whole run time times its nodes or GPUs (an upper bound of the
        work lost: checkpoints are not considered here).

    Raises
    ------
    SchemaError
        If a column is missing from either frame.
    InvalidParameterError
        If ``slack_min`` is out of range.

    Notes
    -----
    An attempt ending ``NODE_FAIL``, ``BOOT_FAIL``, ``LAUNCH_FAILED``,
    ``FAILED`` or ``REQUEUED`` (or in a state relkit does not know) is matched
    with the incidents (category other than ``info``) on its hosts that start
    within :math:`[\max(t_{end} - s, t_{start}), t_{end} + a]` (``slack_min``,
    ``after_end_min``): a range join on host and time (``join_where``), whose
    cost grows with the matches, not with attempts × incidents. Of several,
    one that counts as a failure is preferred, then the one nearest the end.
    The window ends shortly after the end, not ``slack_min`` after it, and
    starts ``slack_min`` before the end, not before the start: on a 2,048-node
    run (the simulator's ``llama3-54d``), nodes the job had just released
    failing after its end, and errors the job survived for hours, gave 13 of
    468 interruptions a wrong cause with :math:`[t_{start} - s, t_{end} + s]`.
    Nor does it reach before the attempt's start: the failure that ended the
    previous attempt of a run, on a node the requeued attempt started on
    again a minute later, did not end the requeued one (it would, on the
    54-day run, with any ``slack_min`` of 25 min or more). For a
    ``BOOT_FAIL`` or ``LAUNCH_FAILED`` (start = end) the window is the
    ``slack_min`` before the start. The incident's category is the
    cause. Without a match the state decides (:data:`STATE_CAUSE`).
    ``CANCELLED``, ``TIMEOUT``, ``DEADLINE``, ``PREEMPTED`` and
    ``OUT_OF_MEMORY`` are never attributed to an incident. A ``REQUEUED``
    attempt without a failure incident is ``planned`` when its ``flags``
    show a deliberate requeue (:data:`PLANNED_FLAGS`: its steps were
    cancelled, none failed; a pod drained through the Eviction API), and
    otherwise ``unexpected`` with cause ``unknown`` (case C08: "interrupted,
    cause unknown"). A requeue of a node that died without a log line looks
    deliberate too; its count is an upper bound of the planned ones.

    A ``PREEMPTED`` attempt that ended at most ``slack_min`` before the start
    of the next attempt of another job on a shared host, whose previous
    attempt an infrastructure failure (``hardware``, ``network``,
    ``infrastructure``) interrupted, is ``secondary``: it made room for the
    requeue. Kokolis et al. found 16 % of the loss from hardware failures in
    such secondary interruptions.

    References
    ----------
    .. [1] A. Kokolis et al., "Revisiting reliability in large-scale machine
       learning research clusters", HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096
    .. [2] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024), §3.3.4.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> t = lambda h, m=0: datetime(2025, 2, 1, h, m, tzinfo=UTC)
    >>> att = pl.DataFrame(
    ...     {
    ...         "source_id": 1,
    ...         "job_id": ["4101", "4103"],
    ...         "attempt": 1,
    ...         "state": ["NODE_FAIL", "OUT_OF_MEMORY"],
    ...         "exit_code": ["1:0", "0:125"],
    ...         "start_ts": [t(10), t(11)],
    ...         "end_ts": [t(12), t(12)],
    ...         "elapsed_s": [7200.0, 3600.0],
    ...         "n_nodes": [2, 1],
    ...         "n_gpus": [16, 8],
    ...         "hosts": [["gpu005", "gpu006"], ["gpu015"]],
    ...     }
    ... )
    >>> inc = pl.DataFrame(
    ...     {
    ...         "host": ["gpu006"],
    ...         "device": ["0000:3b:00"],
    ...         "failure_mode": ["gpu/fallen_off_bus"],
    ...         "category": ["hardware"],
    ...         "start_ts": [t(11, 58)],
    ...         "counts_as_failure": [True],
    ...     }
    ... )
    >>> out = build_interruptions(att, inc)
    >>> out.select("job_id", "cause", "failure_mode", "host", "lost_gpu_h").rows()
    [('4101', 'hardware', 'gpu/fallen_off_bus', 'gpu006', 32.0),
     ('4103', 'user', None, None, 8.0)]
    """
    slack_us = round(_check_slack(slack_min) * 60e6)
    after_us = round(_check_slack(after_end_min, "after_end_min") * 60e6)
    require_columns(
        attempts,
        [c for c in _JOB_COLUMNS if c != "submit_ts"] + ["hosts"],
        where="build_interruptions",
    )
    if incidents.height or incidents.width:
        require_columns(
            incidents,
            [
                "host",
                "device",
                "failure_mode",
                "category",
                "start_ts",
                "counts_as_failure",
            ],
            where="build_interruptions",
        )
    keys = ["source_id", "job_id", "attempt"]
    if "flags" not in attempts.columns:
        attempts = attempts.with_columns(flags=pl.lit(None, dtype=pl.String))
    ended = _abnormal(attempts)
    match = _match_incidents(ended, incidents, slack_us, after_us)
    causes = pl.DataFrame(
        {
            "state": list(STATE_CAUSE),
            "_state_cause": [c for c, _ in STATE_CAUSE.values()],
            "_state_kind": [k for _, k in STATE_CAUSE.values()],
        }
    )
    out = (
        ended.join(match, on=keys, how="left")
        .join(causes, on="state", how="left")
        .with_columns(
            _state_cause=pl.when(
                (pl.col("state") == "FAILED") & pl.col("exit_code").is_null()
            )
            .then(pl.lit("unknown"))
            .otherwise(pl.col("_state_cause").fill_null("unknown")),
            _state_kind=pl.when(
                (pl.col("state") == "REQUEUED") & _has_flag(list(PLANNED_FLAGS))
            )
            .then(pl.lit("planned"))
            .otherwise(pl.col("_state_kind").fill_null("unexpected")),
        )
        .with_columns(
            cause=pl.coalesce("_category", "_state_cause"),
            kind=pl.when(pl.col("_category").is_not_null())
            .then(pl.lit("unexpected"))
            .otherwise(pl.col("_state_kind")),
        )
    )
    failed = out.filter(pl.col("cause").is_in(INFRA_CAUSES)).select(keys)
    secondary = _secondary(ended, attempts, failed, slack_us)
    out = out.join(secondary, on=keys, how="left").with_columns(
        cause=pl.when(pl.col("primary_job_id").is_not_null())
        .then(pl.lit("secondary"))
        .otherwise(pl.col("cause")),
        kind=pl.when(pl.col("primary_job_id").is_not_null())
        .then(pl.lit("secondary"))
        .otherwise(pl.col("kind")),
    )
    hours = pl.col("elapsed_s") / 3600.0
    out = out.with_columns(
        lost_node_h=hours * pl.col("n_nodes"),
        lost_gpu_h=hours * pl.col("n_gpus"),
    )
    return (
        out.select(INTERRUPTION_SCHEMA.names())
        .cast(dict(INTERRUPTION_SCHEMA))
        .sort("end_ts", "job_id", "attempt", nulls_last=True)
    )


# -- the root-cause table -------------------------------------------------------------
_NO_SIGNAL = {
    "infrastructure": ("Node failure, no log signal", "Unattributed"),
    "user": ("Job failure, no log signal", "Unattributed"),
    "unknown": ("Cause unknown", "Unknown"),
}


def _component(frame: pl.DataFrame) -> pl.DataFrame:
    """Add the Table 5 row (component, category) of each interruption."""
    table5 = LLAMA3_TABLE5.select(_row="component", _row_category="category")
    modes = FAILURE_MODES.select(
        "failure_mode", _row="llama3_row", _mode_component="component"
    )
    oom = pl.col("state") == "OUT_OF_MEMORY"
    requeued = (pl.col("kind") == "planned") & pl.col("failure_mode").is_null()
    no_signal = [
        pl.when(pl.col("failure_mode").is_null() & (pl.col("cause") == c)).then(
            pl.lit(v[i])
        )
        for c, v in _NO_SIGNAL.items()
        for i in (0,)
    ]
    no_signal_cat = [
        pl.when(pl.col("failure_mode").is_null() & (pl.col("cause") == c)).then(
            pl.lit(v[1])
        )
        for c, v in _NO_SIGNAL.items()
    ]
    return (
        frame.join(modes, on="failure_mode", how="left")
        .join(table5, on="_row", how="left")
        .with_columns(
            component=pl.coalesce(
                pl.col("_row"),
                pl.when(pl.col("failure_mode").is_not_null()).then(
                    pl.format(
                        "{} ({})",
                        pl.col("_mode_component").fill_null("?"),
                        "failure_mode",
                    )
                ),
                pl.when(oom).then(pl.lit("Out of memory")),
                pl.when(requeued).then(pl.lit("Requeued, no failure logged")),
                *no_signal,
                pl.format("{} ({})", "cause", "state"),
            ),
            category=pl.coalesce(
                pl.col("_row_category"),
                pl.when(pl.col("failure_mode").is_not_null()).then(
                    pl.col("cause").str.to_titlecase()
                ),
                pl.when(oom).then(pl.lit("User")),
                *no_signal_cat,
                pl.col("cause").str.to_titlecase(),
            ),
        )
    )


def _filter(
    frame: pl.DataFrame,
    job_ids: Sequence[str] | None,
    window_start: datetime | None,
    window_end: datetime | None,
    column: str,
) -> pl.DataFrame:
    if job_ids is not None:
        frame = frame.filter(pl.col("job_id").is_in(list(job_ids)))
    if window_start is not None:
        frame = frame.filter(pl.col(column) >= window_start)
    if window_end is not None:
        frame = frame.filter(pl.col(column) < window_end)
    return frame


def root_cause_table(
    interruptions: pl.DataFrame,
    *,
    job_ids: Sequence[str] | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
) -> pl.DataFrame:
    """Count interruptions by root cause in the shape of Llama 3 Table 5.

    Parameters
    ----------
    interruptions : pl.DataFrame
        From :func:`build_interruptions` (``job_id``, ``end_ts``, ``state``,
        ``cause``, ``kind``, ``failure_mode``).
    job_ids : sequence of str, optional
        Only these (logical) jobs, e.g. one training run's job ids.
    window_start, window_end : datetime, optional
        Only interruptions ending in ``[window_start, window_end)`` (UTC).

    Returns
    -------
    pl.DataFrame
        Columns ``kind`` (``unexpected``, ``planned``, ``secondary``),
        ``component``, ``category``, ``interruptions`` (Int64) and ``frac``
        (share of the interruptions of its kind, in [0, 1]; null when the kind
        has none). First the 18 rows of Table 5 in the paper's order (0 where
        none), then the other unexpected causes by count: failure modes without
        a Table 5 row (``"GPU (gpu/unknown_xid)"``), ``Out of memory``, ``Job
        failure, no log signal`` (a non-zero exit with no incident on the
        job's nodes), ``Node failure, no log signal`` (``NODE_FAIL`` or
        ``BOOT_FAIL`` with none), ``Cause unknown``; then the planned rows
        (category ``Planned``) and the secondary ones (category
        ``Secondary``). ``not_failure`` interruptions (user cancels, time
        limits, preemption) are not counted.

    Raises
    ------
    SchemaError
        If a column is missing.

    Notes
    -----
    A failure mode's row is its taxonomy ``llama3_row``
    (:data:`relkit.taxonomy.FAILURE_MODES`). Causes that leave no kernel-log
    line (software bugs, power supplies, SSDs: 130 of the paper's 419) can only
    land in the "no log signal" rows. ``frac`` is recomputed, never copied from
    the paper's printed percentages (which sum to 94.9 %).

    References
    ----------
    .. [1] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024), Table 5.

    Examples
    --------
    >>> import polars as pl
    >>> iv = pl.DataFrame(
    ...     {
    ...         "job_id": "1",
    ...         "end_ts": None,
    ...         "state": "NODE_FAIL",
    ...         "cause": ["hardware", "infrastructure"],
    ...         "kind": "unexpected",
    ...         "failure_mode": ["gpu/hbm_uncorrectable", None],
    ...     }
    ... )
    >>> root_cause_table(iv).filter(pl.col("interruptions") > 0).rows()
    ... # doctest: +NORMALIZE_WHITESPACE
    [('unexpected', 'GPU HBM3 Memory', 'GPU', 1, 0.5),
     ('unexpected', 'Node failure, no log signal', 'Unattributed', 1, 0.5)]
    """
    require_columns(
        interruptions,
        ["job_id", "end_ts", "state", "cause", "kind", "failure_mode"],
        where="root_cause_table",
    )
    frame = _filter(interruptions, job_ids, window_start, window_end, "end_ts")
    counted = _component(frame.filter(pl.col("kind") != "not_failure"))
    unexpected = counted.filter(kind="unexpected")
    by_row = unexpected.group_by("component", "category").agg(
        interruptions=pl.len().cast(pl.Int64)
    )
    paper = LLAMA3_TABLE5.select("component", "category").join(
        by_row, on=["component", "category"], how="left", maintain_order="left"
    )
    others = by_row.join(
        LLAMA3_TABLE5.select("component"), on="component", how="anti"
    ).sort("interruptions", "component", descending=[True, False])
    rows = [
        pl.concat([paper, others]).with_columns(
            kind=pl.lit("unexpected"),
            interruptions=pl.col("interruptions").fill_null(0),
        )
    ]
    for kind, label in (("planned", "Planned"), ("secondary", "Secondary")):
        part = counted.filter(kind=kind)
        if part.height:
            rows.append(
                part.group_by("component")
                .agg(interruptions=pl.len().cast(pl.Int64))
                .sort("interruptions", "component", descending=[True, False])
                .with_columns(kind=pl.lit(kind), category=pl.lit(label))
            )
    out = pl.concat(rows, how="diagonal").select(
        "kind", "component", "category", "interruptions"
    )
    total = pl.col("interruptions").sum().over("kind")
    return out.with_columns(
        frac=pl.when(total > 0).then(pl.col("interruptions") / total)
    )


@dataclass(frozen=True)
class InterruptionSummary:
    """Interruption counts and the mean time between them over a window.

    Parameters
    ----------
    n_unexpected, n_planned, n_secondary : int
        Interruptions of each kind in the window.
    window_start, window_end : datetime or None
        The window (UTC); None when there were no attempts.
    window_h : float
        Its length in hours.
    mtbi_unexpected_h : float or None
        Mean time between unexpected interruptions, ``window_h / n_unexpected``
        (None without any).
    mtbi_unexpected_lower_h, mtbi_unexpected_upper_h : float or None
        Its exact two-sided chi-square bounds (time-terminated).
    mtbi_all_h : float or None
        Mean time between planned and unexpected interruptions together.
    confidence : float
        Level of the bounds.
    """

    n_unexpected: int
    n_planned: int
    n_secondary: int
    window_start: datetime | None
    window_end: datetime | None
    window_h: float
    mtbi_unexpected_h: float | None
    mtbi_unexpected_lower_h: float | None
    mtbi_unexpected_upper_h: float | None
    mtbi_all_h: float | None
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (for JSON output).

        Returns
        -------
        dict
            Field name to value.
        """
        return asdict(self)


def interruption_summary(
    interruptions: pl.DataFrame,
    attempts: pl.DataFrame,
    *,
    job_ids: Sequence[str] | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    confidence: float = 0.9,
) -> InterruptionSummary:
    r"""Count interruptions by kind and the mean time between them.

    Parameters
    ----------
    interruptions : pl.DataFrame
        From :func:`build_interruptions`.
    attempts : pl.DataFrame
        From :func:`build_job_attempts`; their span is the default window.
    job_ids : sequence of str, optional
        Only these (logical) jobs.
    window_start, window_end : datetime, optional
        The observation window (UTC, half-open). Default: from the first
        attempt's start to the last attempt's stop (of ``job_ids``).
    confidence : float, default 0.9
        Two-sided level of the bounds, in (0, 1).

    Returns
    -------
    InterruptionSummary
        Counts, window and mean times between interruptions (hours).

    Raises
    ------
    SchemaError
        If a column is missing.
    InvalidParameterError
        If ``confidence`` is not in (0, 1), or the window is empty.

    Notes
    -----
    :math:`\mathrm{MTBI} = T / n` with exact chi-square bounds
    (:func:`relkit.metrics.mtbf_bounds`), assuming interruptions arrive as a
    Poisson process. Llama 3 (arXiv:2407.21783): 419 unexpected interruptions
    in 54 days give 3.09 h; with the 47 planned ones, 2.78 h.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> iv = pl.DataFrame(
    ...     {
    ...         "job_id": "run",
    ...         "end_ts": [datetime(2024, 1, 2, tzinfo=UTC)],
    ...         "state": "FAILED",
    ...         "cause": "hardware",
    ...         "kind": "unexpected",
    ...         "failure_mode": "gpu/hang",
    ...     }
    ... )
    >>> att = pl.DataFrame(
    ...     {
    ...         "job_id": "run",
    ...         "start_ts": [datetime(2024, 1, 1, tzinfo=UTC)],
    ...         "stop_ts": [datetime(2024, 1, 3, tzinfo=UTC)],
    ...     }
    ... )
    >>> interruption_summary(iv, att).mtbi_unexpected_h
    48.0
    """
    from relkit.metrics import mtbf_bounds

    require_columns(
        interruptions, ["job_id", "end_ts", "kind"], where="interruption_summary"
    )
    require_columns(
        attempts, ["job_id", "start_ts", "stop_ts"], where="interruption_summary"
    )
    if job_ids is not None:
        attempts = attempts.filter(pl.col("job_id").is_in(list(job_ids)))
    start = window_start if window_start is not None else attempts["start_ts"].min()
    end = window_end if window_end is not None else attempts["stop_ts"].max()
    frame = _filter(interruptions, job_ids, window_start, window_end, "end_ts")
    counts = {
        k: frame.filter(kind=k).height for k in ("unexpected", "planned", "secondary")
    }
    if start is None or end is None:
        hours = 0.0
    else:
        hours = (end - start).total_seconds() / 3600.0  # type: ignore[operator]
    if hours < 0:
        msg = f"interruption_summary: the window [{start}, {end}) is empty."
        raise InvalidParameterError(msg)
    n = counts["unexpected"]
    n_all = n + counts["planned"]
    mtbi = lower = upper = None
    if hours > 0 and n > 0:
        b = mtbf_bounds(n, hours, confidence=confidence)
        mtbi, lower, upper = b.mtbf_h, b.lower_h, b.upper_h
    return InterruptionSummary(
        n_unexpected=n,
        n_planned=counts["planned"],
        n_secondary=counts["secondary"],
        window_start=start,  # type: ignore[arg-type]
        window_end=end,  # type: ignore[arg-type]
        window_h=hours,
        mtbi_unexpected_h=mtbi,
        mtbi_unexpected_lower_h=lower,
        mtbi_unexpected_upper_h=upper,
        mtbi_all_h=hours / n_all if hours > 0 and n_all else None,
        confidence=confidence,
    )


def job_interruptions(
    jobs: pl.DataFrame,
    job_nodes: pl.DataFrame,
    events: pl.DataFrame,
    *,
    end_of_log: datetime | None = None,
    window_min: float = 10.0,
    slack_min: float = DEFAULT_SLACK_MIN,
    after_end_min: float = 1.0,
    gpus_per_node: int | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Build job attempts and their interruptions from a store's tables.

    Parameters
    ----------
    jobs, job_nodes : pl.DataFrame
        The store's ``jobs`` and ``job_nodes`` tables.
    events : pl.DataFrame
        The store's ``events`` table, folded into incidents with
        :func:`relkit.incidents.build_incidents`: kernel-log and nvidia-smi
        signals and rows of normalised event tables alike (modes outside the
        taxonomy included); may be empty.
    end_of_log : datetime, optional
        End of the failure logs (open link incidents are censored there), e.g.
        the latest ``log_end_ts`` of the store's ``sources``; moved to the last
        event when earlier.
    window_min : float, default 10.0
        Incident gap window, minutes.
    slack_min, after_end_min : float, default 45.0 and 1.0
        Attribution window around each attempt's end, minutes before and after
        (:func:`build_interruptions`, :data:`DEFAULT_SLACK_MIN`).
    gpus_per_node : int, optional
        GPUs per node where a job record has no GPU count.
    failure_modes : pl.DataFrame, optional
        The store's ``failure_modes`` table (``failure_mode, category,
        counts_as_failure``): category of modes outside the taxonomy, as in
        :func:`relkit.incidents.build_incidents`.

    Returns
    -------
    attempts : pl.DataFrame
        :func:`build_job_attempts` of the tables.
    interruptions : pl.DataFrame
        :func:`build_interruptions` of the attempts against the incidents.

    Raises
    ------
    SchemaError
        If a table lacks a column.
    InvalidParameterError
        If a window, slack or ``gpus_per_node`` is out of range.
    """
    attempts = build_job_attempts(jobs, job_nodes, gpus_per_node=gpus_per_node)
    last = events.get_column("ts").max() if "ts" in events.columns else None
    if end_of_log is not None and last is not None:
        end_of_log = max(end_of_log, last)  # type: ignore[type-var]
    incidents = build_incidents(
        events,
        window_min=window_min,
        end_of_log=end_of_log,
        failure_modes=failure_modes,
    )
    return attempts, build_interruptions(
        attempts, incidents, slack_min=slack_min, after_end_min=after_end_min
    )
