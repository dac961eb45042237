"""Evidence (c) of :func:`relkit.jobs.measure_goodput`: ETTR modelled from attempts.

One polars pass over every run's attempts at once (a cluster's scheduler
records hold millions of jobs, each of which may be a run of its own).
"""

from datetime import datetime

import polars as pl

from relkit.errors import InvalidParameterError
from relkit.jobs._goodput_account import INTERRUPTED

__all__ = ["modelled_runs"]

#: Columns of the attempts frame :func:`modelled_runs` reads.
SPAN_COLUMNS = (
    "_run",
    "job_id",
    "submit_ts",
    "start_ts",
    "end_ts",
    "stop_ts",
    "ended_by",
    "n_gpus",
)


def _s(expr: pl.Expr) -> pl.Expr:
    """Seconds of a duration expression (float)."""
    return expr.dt.total_microseconds().cast(pl.Float64) / 1e6


def modelled_runs(
    spans: pl.DataFrame,
    *,
    evidence: str,
    as_of: datetime | None,
    interval_s: float,
    cost_s: float,
    restart_s: float,
    notes: list[str],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Model the time of every run's attempts from their spans alone.

    Each attempt after a run's first starts with ``restart_s`` of start-up and
    restore (all of it if shorter); an attempt ended by a failure or a stop
    (``ended_by`` ``stopped``: a time limit, preemption, cancellation) then loses
    ``min(its remaining run time, interval_s / 2)`` of work; the rest is
    cycles of ``interval_s`` of compute and a save of ``cost_s``. An open last
    attempt runs to ``as_of`` (or its last sign of running, ``stop_ts``); the
    time after that sign is ``other``. The gap before the next attempt is
    ``queue`` after its submit time, ``recovery`` before.

    Parameters
    ----------
    spans : pl.DataFrame
        Columns :data:`SPAN_COLUMNS`: the run key ``_run``, the attempt's
        ``job_id``, ``submit_ts``, ``start_ts``, ``end_ts`` (null: not
        ended), ``stop_ts`` (last sign of running), ``ended_by``
        (``failure``, ``stopped``, ``job_end``, ``open``) and ``n_gpus``.
    evidence : str
        The ``evidence`` label of the rows.
    as_of : datetime, optional
        End of an open run.
    interval_s, cost_s, restart_s : float
        Assumed checkpoint interval, blocking save and restart, seconds.
    notes : list of str
        Sentences about what was assumed are appended.

    Returns
    -------
    runs : pl.DataFrame
        One row per run with the columns of the goodput's run frame (in any
        order; ``run_id`` the run key).
    attempts : pl.DataFrame
        One row per attempt with the columns of the goodput's attempt frame.

    Raises
    ------
    InvalidParameterError
        If ``as_of`` is before an open run's last sign of running.
    """
    never = spans.filter(pl.col("start_ts").is_null()).height
    if never:
        notes.append(f"{never} job attempt(s) never started and were left out.")
    f = (
        spans.filter(pl.col("start_ts").is_not_null())
        .sort("_run", "start_ts", "job_id")
        .with_columns(
            attempt=(pl.int_range(pl.len()).over("_run") + 1).cast(pl.Int64),
            _last=pl.int_range(pl.len()).over("_run") == pl.len().over("_run") - 1,
            _next_start=pl.col("start_ts").shift(-1).over("_run"),
            _next_submit=pl.col("submit_ts").shift(-1).over("_run"),
        )
    )
    open_ = pl.col("end_ts").is_null()
    seen = pl.max_horizontal(pl.coalesce("stop_ts", "start_ts"), "start_ts")
    f = f.with_columns(_seen=seen)
    late = f.filter(open_ & pl.col("_last"))
    if as_of is not None and late.height:
        early = late.filter(pl.col("_seen") > as_of)
        if early.height:
            first = early.row(0, named=True)
            msg = (
                f"as_of (--as-of, {as_of:%Y-%m-%d %H:%M:%S %Z}) is before the last "
                f"record of open run {first['_run']!r} (the scheduler shows it "
                f"running until {first['_seen']:%Y-%m-%d %H:%M:%S} UTC); give an "
                "as_of at or after the end of the data, or none to end open runs "
                "there."
            )
            raise InvalidParameterError(msg)
    run_end = (
        pl.col("_seen") if as_of is None else pl.lit(as_of, dtype=f["start_ts"].dtype)
    )
    f = f.with_columns(
        _end=pl.when(open_ & ~pl.col("_last"))
        .then(pl.col("_seen"))
        .when(open_)
        .then(run_end)
        .otherwise(pl.col("end_ts")),
        ended_by=pl.when(open_ & ~pl.col("_last"))
        .then(pl.lit("failure"))
        .otherwise(pl.col("ended_by")),
    )
    cut = ~pl.col("_last") & (pl.col("_end") > pl.col("_next_start"))
    n_open = f.filter(open_ & ~pl.col("_last")).height
    n_cut = f.filter(cut).height
    f = f.with_columns(
        _end=pl.when(cut)
        .then(pl.max_horizontal("_next_start", "start_ts"))
        .otherwise(pl.col("_end"))
    )
    f = f.with_columns(
        _running=pl.when(open_ & pl.col("_last"))
        .then(pl.min_horizontal("_seen", "_end"))
        .otherwise(pl.col("_end"))
    )
    duration = _s(pl.col("_running") - pl.col("start_ts"))
    f = f.with_columns(
        _startup=pl.when(pl.col("attempt") > 1)
        .then(pl.min_horizontal(pl.lit(restart_s), duration))
        .otherwise(0.0),
        _dur=duration,
    )
    work = pl.col("_dur") - pl.col("_startup")
    f = f.with_columns(
        _lost=pl.when(pl.col("ended_by").is_in(INTERRUPTED))
        .then(pl.min_horizontal(work, pl.lit(interval_s / 2.0)))
        .otherwise(0.0)
    )
    kept = work - pl.col("_lost")
    cycles = pl.when(kept > 0).then((kept / (interval_s + cost_s)).floor()).otherwise(0)
    gap = pl.max_horizontal(_s(pl.col("_next_start") - pl.col("_end")), pl.lit(0.0))
    queue = pl.min_horizontal(
        pl.max_horizontal(
            _s(pl.col("_next_start") - pl.col("_next_submit")).fill_null(0.0),
            pl.lit(0.0),
        ),
        gap,
    )
    f = f.with_columns(
        _save=cycles * cost_s,
        _productive=kept - cycles * cost_s,
        _other=_s(pl.col("_end") - pl.col("_running")),
        _gap=gap.fill_null(0.0),
        _queue=queue.fill_null(0.0),
    )
    h = 1.0 / 3600.0
    attempts = f.select(
        run_id="_run",
        attempt="attempt",
        job_id="job_id",
        start_ts="start_ts",
        end_ts="_end",
        ended_by="ended_by",
        n_gpus="n_gpus",
        productive_h=pl.col("_productive") * h,
        init_h=pl.col("_startup") * h,
        restore_h=pl.lit(0.0),
        checkpoint_h=pl.col("_save") * h,
        lost_progress_h=pl.col("_lost") * h,
        recovery_h=(pl.col("_gap") - pl.col("_queue")) * h,
        queue_h=pl.col("_queue") * h,
        other_h=pl.col("_other") * h,
        last_checkpoint_ts=pl.lit(None, dtype=f["start_ts"].dtype),
        restored_step=pl.lit(None, dtype=pl.Int64),
        evidence=pl.lit(evidence),
    )
    wall = _s(pl.col("_end").last() - pl.col("start_ts").first())
    productive = pl.col("_productive").sum()
    queue_before = pl.max_horizontal(
        _s(pl.col("start_ts").first() - pl.col("submit_ts").first()), pl.lit(0.0)
    )
    runs = (
        f.group_by("_run", maintain_order=True)
        .agg(
            n_gpus=pl.col("n_gpus").max(),
            _gpu_kinds=pl.col("n_gpus").drop_nulls().n_unique(),
            first_submit_ts=pl.col("submit_ts").first(),
            first_start_ts=pl.col("start_ts").first(),
            last_end_ts=pl.col("_end").last(),
            is_open=pl.col("ended_by").last() == "open",
            _wall=wall,
            _productive=productive,
            _queue_before=queue_before,
            n_attempts=pl.len().cast(pl.Int64),
            n_interruptions=(pl.col("ended_by") == "failure").sum().cast(pl.Int64),
            n_stops=(pl.col("ended_by") == "stopped").sum().cast(pl.Int64),
            badput_init_h=pl.col("_startup").sum() * h,
            badput_checkpoint_h=pl.col("_save").sum() * h,
            badput_lost_progress_h=pl.col("_lost").sum() * h,
            badput_recovery_h=(pl.col("_gap") - pl.col("_queue")).sum() * h,
            badput_queue_h=pl.col("_queue").sum() * h,
            badput_other_h=pl.col("_other").sum() * h,
        )
        .with_columns(
            run_id="_run",
            evidence=pl.lit(evidence),
            wall_h=pl.col("_wall") * h,
            productive_h=pl.col("_productive") * h,
            ettr_frac=pl.when(pl.col("_wall") > 0).then(
                pl.col("_productive") / pl.col("_wall")
            ),
            queue_before_start_h=pl.col("_queue_before") * h,
            ettr_with_queue_frac=pl.when(
                pl.col("_queue_before").is_not_null()
                & (pl.col("_wall") + pl.col("_queue_before") > 0)
            ).then(pl.col("_productive") / (pl.col("_wall") + pl.col("_queue_before"))),
            badput_restore_h=pl.lit(0.0),
            n_checkpoints=pl.lit(None, dtype=pl.Int64),
            checkpoint_interval_h=pl.lit(interval_s * h),
            checkpoint_save_s=pl.lit(cost_s),
        )
    )
    if n_open:
        notes.append(
            f"{n_open} job attempt(s) before the last of their run have no end; "
            "each is taken to end, by a failure, at its last sign of running."
        )
    if n_cut:
        notes.append(
            f"{n_cut} job attempt(s) end after the next attempt of their run "
            "starts; they are cut at that start."
        )
    varied = runs.filter(pl.col("_gpu_kinds") > 1).height
    if varied:
        notes.append(
            f"{varied} run(s) ran their attempts on different GPU counts; n_gpus "
            "is the largest."
        )
    return runs, attempts
