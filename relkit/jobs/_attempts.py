"""Job attempts: one row per logical attempt of a job from the store's records.

:func:`build_job_attempts` turns the store's ``jobs`` and ``job_nodes`` into
one row per logical job attempt (Slurm's heterogeneous components merged);
:func:`drop_repeated_records` keeps one copy of records several sources hold;
:func:`job_table` lists the records with their hosts (``relkit jobs``).
"""

import polars as pl

from relkit.errors import InvalidParameterError
from relkit.schema import UTC, require_columns
from relkit.taxonomy import OPEN_STATES, STATE_PRIORITY

__all__ = [
    "ATTEMPT_SCHEMA",
    "JOB_COLUMNS",
    "JOB_FIELDS",
    "build_job_attempts",
    "drop_repeated_records",
    "job_table",
]

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


#: Job-record columns the attempt and interruption builders read.
JOB_COLUMNS = [
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
    require_columns(jobs, [*JOB_COLUMNS, "base_job_id"], where="job_table")
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
    require_columns(jobs, JOB_COLUMNS, where="build_job_attempts")
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
    rank = {s: i for i, s in enumerate(STATE_PRIORITY)}
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
