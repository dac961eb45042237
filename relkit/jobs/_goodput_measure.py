"""Every run of :func:`relkit.jobs.measure_goodput`, and what was not used.

:func:`measure_records` measures the runs the records name one at a time,
leaving out (with a note) those that cannot be measured; :func:`modelled_only`
models every group of attempts at once when there are no records;
:func:`unused_notes` says which assumptions given were not needed and where
``as_of`` does not apply.
"""

from datetime import datetime

import polars as pl

from relkit.errors import InvalidParameterError
from relkit.jobs._goodput_checks import Unmeasurable
from relkit.jobs._goodput_inputs import (
    AS_OF_OPTION,
    COST_OPTION,
    INTERVAL_OPTION,
    RESTART_OPTION,
    bad_run_by,
    group_runs,
    needs_interval,
    span_frame,
)
from relkit.jobs._goodput_model import modelled_runs
from relkit.jobs._goodput_runs import (
    GOODPUT_ATTEMPT_SCHEMA,
    GOODPUT_RUN_SCHEMA,
    measure_run,
    modelled_label,
)

__all__ = ["measure_records", "modelled_only", "unused_notes"]


def unused_notes(
    used: set[str],
    *,
    interval_h: float | None,
    cost_h: float,
    restart_h: float,
    runs: pl.DataFrame,
    as_of: datetime | None,
    notes: list[str],
) -> None:
    """Say which assumptions given were not used, and where as_of does not apply."""
    if interval_h is not None and "interval" not in used:
        notes.append(
            f"assumed_interval_h ({INTERVAL_OPTION.split(',')[0]}) is not used: "
            "every run has step records or checkpoint times (an attempt with two "
            "saves gives the interval)."
        )
    for value, key, name, flag in (
        (cost_h, "cost", "assumed_cost_h", COST_OPTION),
        (restart_h, "restart", "assumed_restart_h", RESTART_OPTION),
    ):
        if value > 0 and key not in used:
            notes.append(
                f"{name} ({flag.split(',')[0]}) is not used: only runs modelled "
                "from scheduler records alone use it, and every run has step "
                "records or checkpoint times."
            )
    if as_of is None or runs.height == 0:
        return
    closed = runs.filter(~pl.col("is_open"))
    if closed.height == 0:
        return
    ids = closed["run_id"].to_list()
    before = closed.filter(pl.col("last_end_ts") > as_of)["run_id"].to_list()
    notes.append(
        f"as_of ({AS_OF_OPTION.split(',')[0]} {as_of:%Y-%m-%d %H:%M:%S %Z}) does "
        f"not apply to the {len(ids)} closed run(s) {ids[:5]}"
        + (" ..." if len(ids) > 5 else "")
        + ": each is measured to its end"
        + (
            f"; {len(before)} of them ({before[:5]}) end after as_of, and are "
            "measured to that end all the same"
            if before
            else ""
        )
        + "."
    )


def _pick(run: str | None, run_ids: list[str]) -> None:
    if run is not None and run not in run_ids:
        msg = (
            f"run {run!r} (--run, run=) is not among the {len(run_ids)} run(s) "
            f"found: {run_ids[:20]}" + (" ..." if len(run_ids) > 20 else "") + "."
        )
        raise InvalidParameterError(msg)


def _modelled_note(
    n: int, n_open: int, *, interval_h: float, cost_h: float, restart_h: float
) -> str:
    return (
        f"{n} run(s) are modelled from scheduler records alone, not measured: "
        f"each attempt after the first spends {restart_h:g} h ({RESTART_OPTION}) "
        "on start-up and restore, each attempt ended by a failure or a stop loses "
        f"min(its run time, {interval_h:g} h / 2) of work, and each checkpoint "
        f"interval of {interval_h:g} h ({INTERVAL_OPTION}) costs {cost_h:g} h "
        f"({COST_OPTION})."
        + (
            f" {n_open} of them are open (their last attempt has not ended)."
            if n_open
            else ""
        )
    )


def modelled_only(
    sched: pl.DataFrame,
    *,
    run: str | None,
    run_by: str,
    as_of: datetime | None,
    interval_h: float | None,
    cost_h: float,
    restart_h: float,
    notes: list[str],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Evidence (c) for every group of attempts at once (no records at all)."""
    if run_by not in sched.columns:
        raise InvalidParameterError(bad_run_by(run_by, sched.columns))
    keyed = sched.with_columns(_run=pl.col(run_by).cast(pl.String))
    missing = keyed.filter(pl.col("_run").is_null()).height
    if missing:
        notes.append(f"{missing} job attempt(s) have no {run_by} and belong to no run.")
        keyed = keyed.filter(pl.col("_run").is_not_null())
    if run is not None:
        _pick(run, keyed["_run"].unique().sort().to_list())
        keyed = keyed.filter(pl.col("_run") == run)
    if interval_h is None:
        first = keyed["_run"].min()
        msg = needs_interval(
            f"run {first!r} has no step or checkpoint records, only job attempts "
            f"(as do all {keyed['_run'].n_unique()} run(s) by {run_by})"
        )
        raise InvalidParameterError(msg)
    runs, atts = modelled_runs(
        span_frame(keyed),
        evidence=modelled_label(interval_h),
        as_of=as_of,
        interval_s=interval_h * 3600.0,
        cost_s=cost_h * 3600.0,
        restart_s=restart_h * 3600.0,
        notes=notes,
    )
    notes.append(
        _modelled_note(
            runs.height,
            int(runs["is_open"].sum()),
            interval_h=interval_h,
            cost_h=cost_h,
            restart_h=restart_h,
        )
    )
    return (
        runs.select(GOODPUT_RUN_SCHEMA.names()).cast(dict(GOODPUT_RUN_SCHEMA)),
        atts.select(GOODPUT_ATTEMPT_SCHEMA.names()).cast(dict(GOODPUT_ATTEMPT_SCHEMA)),
    )


def measure_records(
    recs: pl.DataFrame,
    sched: pl.DataFrame | None,
    *,
    run: str | None,
    run_by: str | None,
    as_of: datetime | None,
    interval_h: float | None,
    cost_h: float,
    restart_h: float,
    notes: list[str],
    used: set[str],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Measure the runs the records name, one at a time.

    A run that cannot be measured is left out with a note, unless ``run``
    names it or no run at all can be measured: then the refusal is raised.
    """
    by_records, by_sched = group_runs(recs, sched, run_by, notes)
    sched_ids = (
        None if sched is None else set(sched["job_id"].drop_nulls().cast(pl.String))
    )
    run_ids = sorted(set(by_records) | set(by_sched))
    _pick(run, run_ids)
    if run is not None:
        run_ids = [run]
    runs = [GOODPUT_RUN_SCHEMA.to_frame()]
    atts = [GOODPUT_ATTEMPT_SCHEMA.to_frame()]
    modelled = modelled_open = 0
    refused: list[str] = []
    for run_id in run_ids:
        try:
            out = measure_run(
                run_id,
                by_records.get(run_id),
                by_sched.get(run_id),
                as_of=as_of,
                interval_h=interval_h,
                cost_h=cost_h,
                restart_h=restart_h,
                notes=notes,
                used=used,
                sched_ids=sched_ids,
            )
        except Unmeasurable as err:
            if run is not None:
                raise
            refused.append(str(err))
            continue
        if out is None:
            continue
        runs.append(out[0])
        atts.append(out[1])
        if out[0]["evidence"][0].startswith("ETTR from"):
            modelled += 1
            modelled_open += bool(out[0]["is_open"][0])
    if refused and len(runs) == 1:
        more = f" ({len(refused) - 1} more run(s) likewise)" if len(refused) > 1 else ""
        msg = f"no run could be measured: {refused[0]}{more}"
        raise InvalidParameterError(msg)
    for reason in refused:
        notes.append(f"Left out of the measurement: {reason}")
    if modelled:
        assert interval_h is not None  # measure_run refuses a model without it
        notes.append(
            _modelled_note(
                modelled,
                modelled_open,
                interval_h=interval_h,
                cost_h=cost_h,
                restart_h=restart_h,
            )
        )
    return pl.concat(runs), pl.concat(atts)
