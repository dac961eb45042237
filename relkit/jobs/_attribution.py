"""Interruptions: attempts that ended abnormally, tied to the failure that ended them.

:func:`build_interruptions` ties each attempt that ended abnormally to the
failure incidents logged on its nodes shortly before its end (an interval
join: polars ``join_where`` on host and time, never a cross product) and gives
it a cause and a kind (see :mod:`relkit.jobs`).
"""

from datetime import datetime
from typing import NamedTuple

import polars as pl

from relkit.errors import InvalidParameterError
from relkit.incidents import build_incidents
from relkit.jobs._attempts import JOB_COLUMNS, build_job_attempts
from relkit.schema import UTC, require_columns
from relkit.taxonomy import (
    ATTRIBUTED_STATES,
    INFRA_CAUSES,
    LAUNCH_STATES,
    OPEN_STATES,
    PLANNED_FLAGS,
    STATE_CAUSE,
)

__all__ = [
    "DEFAULT_SLACK_MIN",
    "INTERRUPTION_SCHEMA",
    "JobInterruptions",
    "build_interruptions",
    "job_interruptions",
]

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
        "lost_node_h_upper": pl.Float64(),
        "lost_gpu_h_upper": pl.Float64(),
        "lost_gpu_h": pl.Float64(),
        "lost_basis": pl.String(),
    }
)


def _check_slack(slack_min: float, name: str = "slack_min") -> float:
    if not isinstance(slack_min, int | float) or not 0 <= float(slack_min) < 1e6:
        msg = f"{name} must be a number of minutes in [0, 1e6); got {slack_min!r}."
        raise InvalidParameterError(msg)
    return float(slack_min)


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
                pl.col("state").is_in(LAUNCH_STATES) | pl.col("start_ts").is_null()
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
        ``n_gpus``, ``elapsed_s``; ``lost_node_h_upper`` and
        ``lost_gpu_h_upper``, the attempt's whole run time times its nodes or
        GPUs: an **upper bound** of the work lost, since checkpoints are not
        considered here (the 97 interruptions of the bundled simulated 54-day
        run, ``datasets/synthetic``, add up to about 2.58 M GPU-hours; its
        ``ground_truth.json`` says 5.83 h of the 2,048-GPU run's work were
        lost, and with downtime and restarts they cost it about 45,000
        GPU-hours); ``lost_gpu_h``
        and ``lost_basis``, null here: the GPU-hours the interruption really
        cost and what that rests on, which :func:`interruption_losses` fills
        from the run's goodput (:func:`measure_goodput`).

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
    >>> cols = ["job_id", "cause", "failure_mode", "host", "lost_gpu_h_upper"]
    >>> out.select(cols).rows()
    [('4101', 'hardware', 'gpu/fallen_off_bus', 'gpu006', 32.0),
     ('4103', 'user', None, None, 8.0)]
    """
    slack_us = round(_check_slack(slack_min) * 60e6)
    after_us = round(_check_slack(after_end_min, "after_end_min") * 60e6)
    require_columns(
        attempts,
        [c for c in JOB_COLUMNS if c != "submit_ts"] + ["hosts"],
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
        lost_node_h_upper=hours * pl.col("n_nodes"),
        lost_gpu_h_upper=hours * pl.col("n_gpus"),
        lost_gpu_h=pl.lit(None, dtype=pl.Float64),
        lost_basis=pl.lit(None, dtype=pl.String),
    )
    return (
        out.select(INTERRUPTION_SCHEMA.names())
        .cast(dict(INTERRUPTION_SCHEMA))
        .sort("end_ts", "job_id", "attempt", nulls_last=True)
    )


class JobInterruptions(NamedTuple):
    """Job attempts and their interruptions, from a store's tables.

    Unpacks as ``attempts, interruptions``.

    Parameters
    ----------
    attempts : pl.DataFrame
        :func:`build_job_attempts` of the tables.
    interruptions : pl.DataFrame
        :func:`build_interruptions` of the attempts against the incidents.
    """

    attempts: pl.DataFrame
    interruptions: pl.DataFrame

    def _repr_html_(self) -> str:
        """Return a small HTML summary for Jupyter (counts, not the frames)."""
        from relkit.display import html_table

        jobs = (
            self.attempts["job_id"].n_unique()
            if "job_id" in self.attempts.columns
            else None
        )
        return html_table(
            "Job attempts and their interruptions",
            {
                "jobs": jobs,
                "attempts": self.attempts.height,
                "interruptions": self.interruptions.height,
            },
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
) -> JobInterruptions:
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
    return JobInterruptions(
        attempts,
        build_interruptions(
            attempts, incidents, slack_min=slack_min, after_end_min=after_end_min
        ),
    )
