"""One run of :func:`relkit.jobs.measure_goodput`: its attempts, ends and hours.

A run's records are checked (:func:`relkit.jobs._goodput_checks.prepare_records`),
parsed into attempts, matched to the scheduler's attempts and given their
ends before :mod:`relkit.jobs._goodput_account` accounts their time
(:func:`measure_run`); the runs come from
:func:`relkit.jobs._goodput_inputs.group_runs`, and evidence (c), modelled
from attempts alone, is :mod:`relkit.jobs._goodput_model`.
"""

from collections import Counter
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import polars as pl

from relkit.errors import InvalidParameterError
from relkit.jobs._goodput_account import (
    Account,
    Span,
    account_saves,
    account_steps,
    split_gaps,
)
from relkit.jobs._goodput_checks import Unmeasurable, prepare_records
from relkit.jobs._goodput_inputs import (
    AS_OF_OPTION,
    GIVE_ATTEMPTS,
    RUN_BY_OPTION,
    few,
    needs_interval,
    sched_end,
    span_frame,
)
from relkit.jobs._goodput_model import modelled_runs
from relkit.jobs._goodput_records import (
    instant,
    record_attempts,
    saves,
    seconds,
)
from relkit.schema import UTC

__all__ = [
    "GOODPUT_ATTEMPT_SCHEMA",
    "GOODPUT_RUN_SCHEMA",
    "MATCH_TOLERANCE_S",
    "SAVES",
    "STEPS",
    "measure_run",
    "modelled_label",
]

#: How far apart (seconds) a checkpoint-log attempt and a scheduler attempt of
#: the same job id may start, or a goodput attempt and an interruption end, and
#: still be the same attempt. sacct prints whole seconds and the job's own log
#: is written by another clock; a requeued attempt of the same job id starts
#: at least the requeue delay later (minutes: Slurm's default is to wait for
#: the nodes' epilog and the job's ``--begin``), so 120 s keeps them apart.
MATCH_TOLERANCE_S = 120.0

#: ``evidence`` of runs measured from step records (a).
STEPS = "step records"
#: ``evidence`` of runs measured from checkpoint times and attempts (b).
SAVES = "job attempts + checkpoint times"


def modelled_label(interval_h: float) -> str:
    """Return the ``evidence`` of runs modelled from attempts alone (c)."""
    return (
        "ETTR from scheduler records alone (modelled, assumed checkpoint "
        f"interval {interval_h:g} h)"
    )


#: Columns of ``Goodput.runs`` (:func:`relkit.jobs.measure_goodput`), in order.
GOODPUT_RUN_SCHEMA = pl.Schema(
    {
        "run_id": pl.String(),
        "evidence": pl.String(),
        "n_gpus": pl.Int64(),
        "first_submit_ts": UTC,
        "first_start_ts": UTC,
        "last_end_ts": UTC,
        "is_open": pl.Boolean(),
        "wall_h": pl.Float64(),
        "productive_h": pl.Float64(),
        "ettr_frac": pl.Float64(),
        "queue_before_start_h": pl.Float64(),
        "ettr_with_queue_frac": pl.Float64(),
        "n_attempts": pl.Int64(),
        "n_interruptions": pl.Int64(),
        "n_stops": pl.Int64(),
        "badput_init_h": pl.Float64(),
        "badput_checkpoint_h": pl.Float64(),
        "badput_restore_h": pl.Float64(),
        "badput_lost_progress_h": pl.Float64(),
        "badput_recovery_h": pl.Float64(),
        "badput_queue_h": pl.Float64(),
        "badput_other_h": pl.Float64(),
        "n_checkpoints": pl.Int64(),
        "checkpoint_interval_h": pl.Float64(),
        "checkpoint_save_s": pl.Float64(),
    }
)

#: Columns of ``Goodput.attempts``, in order.
GOODPUT_ATTEMPT_SCHEMA = pl.Schema(
    {
        "run_id": pl.String(),
        "attempt": pl.Int64(),
        "job_id": pl.String(),
        "start_ts": UTC,
        "end_ts": UTC,
        "ended_by": pl.String(),
        "n_gpus": pl.Int64(),
        "productive_h": pl.Float64(),
        "init_h": pl.Float64(),
        "restore_h": pl.Float64(),
        "checkpoint_h": pl.Float64(),
        "lost_progress_h": pl.Float64(),
        "recovery_h": pl.Float64(),
        "queue_h": pl.Float64(),
        "other_h": pl.Float64(),
        "last_checkpoint_ts": UTC,
        "restored_step": pl.Int64(),
        "evidence": pl.String(),
    }
)


def _match_sched(
    spans: list[Span], sched: pl.DataFrame | None, origin: datetime, tol_s: float
) -> list[dict[str, Any] | None]:
    """Find each records attempt's scheduler attempt: same job id, start within tol."""
    if sched is None or sched.height == 0:
        return [None] * len(spans)
    rows = (
        sched.filter(pl.col("start_ts").is_not_null())
        .with_columns(
            _start=seconds("start_ts", origin),
            _end=seconds("end_ts", origin),
            _submit=seconds("submit_ts", origin),
            _stop=seconds("stop_ts", origin),
        )
        .to_dicts()
    )
    by_job: dict[Any, list[dict[str, Any]]] = {}
    for r in rows:  # each job's attempts in the frame's order (ties: the first)
        by_job.setdefault(r["job_id"], []).append(r)
    out: list[dict[str, Any] | None] = []
    for sp in spans:
        near = [
            r for r in by_job.get(sp.job_id, ()) if abs(r["_start"] - sp.start) <= tol_s
        ]
        out.append(
            min(near, key=lambda r: abs(r["_start"] - sp.start)) if near else None
        )
    return out


def _sched_spans(
    sched: pl.DataFrame, origin: datetime, notes: list[str], run_id: str
) -> tuple[list[Span], list[float | None]]:
    """Spans of a run's scheduler attempts in start order, and their last run time."""
    never = sched.filter(pl.col("start_ts").is_null()).height
    if never:
        notes.append(
            f"Run {run_id}: {never} job attempt(s) never started and were left out."
        )
    rows = (
        sched.filter(pl.col("start_ts").is_not_null())
        .sort("start_ts", "job_id")
        .with_columns(
            _start=seconds("start_ts", origin),
            _end=seconds("end_ts", origin),
            _submit=seconds("submit_ts", origin),
            _stop=seconds("stop_ts", origin),
        )
        .to_dicts()
    )
    spans = []
    running = []
    for k, r in enumerate(rows, start=1):
        open_ = r["_end"] is None
        spans.append(
            Span(
                attempt=k,
                job_id=r["job_id"],
                start=r["_start"],
                end=r["_end"],
                ended_by="open" if open_ else sched_end(r["state"], r["flags"]),
                submit=r["_submit"],
                n_gpus=r["n_gpus"],
            )
        )
        running.append(r["_stop"])
    return spans, running


def _decide_ends(
    spans: list[Span],
    last_seen: list[float | None],
    *,
    as_of: float | None,
    run_id: str,
    origin: datetime,
    notes: list[str],
) -> bool:
    """Give every span an end; return whether the run is open.

    ``last_seen`` is each attempt's last sign of running (last record, or the
    scheduler's start + elapsed). An attempt that is not the last and has no
    end ends at its last sign (a failure); attempts overlapping the next are
    cut at its start; the last attempt without an end is open: it runs to
    ``as_of`` or its last sign.
    """
    said: Counter[str] = Counter()
    for k, sp in enumerate(spans):
        seen = last_seen[k] if last_seen[k] is not None else sp.start
        if sp.end is None:
            if k < len(spans) - 1:
                sp.end = max(seen, sp.start)  # type: ignore[type-var]
                sp.ended_by = "failure"
                said["no_end"] += 1
            else:
                sp.running_until = max(seen, sp.start)  # type: ignore[type-var]
                if as_of is not None:
                    if as_of < sp.running_until:
                        when = instant(origin, sp.running_until)
                        given = instant(origin, as_of)
                        msg = (
                            f"as_of ({AS_OF_OPTION} {given:%Y-%m-%d %H:%M:%S} UTC) "
                            f"is before the last record of open run {run_id!r} "
                            "(or the scheduler's last sign of it running), "
                            f"{when:%Y-%m-%d %H:%M:%S} UTC; give an as_of at or "
                            "after the end of the data, or none to end open runs "
                            "there."
                        )
                        raise InvalidParameterError(msg)
                    sp.end = as_of
                else:
                    sp.end = sp.running_until
        if sp.end < sp.start:  # type: ignore[operator]
            sp.end = sp.start
            said["backwards"] += 1
        if k < len(spans) - 1 and sp.end > spans[k + 1].start:  # type: ignore[operator]
            sp.end = max(spans[k + 1].start, sp.start)
            said["overlap"] += 1
    if said["no_end"]:
        notes.append(
            f"Run {run_id}: {said['no_end']} attempt(s) before its last have no "
            "job_end or failure; each is taken to end, by a failure, at its last "
            "record."
        )
    if said["backwards"]:
        notes.append(
            f"Run {run_id}: {said['backwards']} attempt(s) end (by the scheduler's "
            "records) before they start by the run's log; each is taken to end "
            "at its start."
        )
    if said["overlap"]:
        notes.append(
            f"Run {run_id}: {said['overlap']} attempt(s) end after the next attempt "
            "starts; they are cut at that start."
        )
    is_open = spans[-1].ended_by == "open"
    if is_open:
        last = spans[-1]
        tail = (last.end or 0.0) - (last.running_until or 0.0)
        when = instant(origin, last.running_until)
        if as_of is not None:
            notes.append(
                f"Run {run_id} is open (its last attempt has not ended); it is "
                f"measured up to as_of ({AS_OF_OPTION}), and the {tail / 3600:.4g} h "
                "after the last sign of it running (its last record, or the "
                f"scheduler's, {when:%Y-%m-%d %H:%M:%S} UTC) count as other badput."
            )
        else:
            notes.append(
                f"Run {run_id} is open (its last attempt has not ended); it is "
                "measured up to the last sign of it running (its last record, or "
                f"the scheduler's), {when:%Y-%m-%d %H:%M:%S} UTC; give as_of "
                f"({AS_OF_OPTION}) to measure it up to a later time."
            )
    return is_open


# -- one run --------------------------------------------------------------------------


@dataclass
class _RunResult:
    evidence: str
    accounts: list[Account]
    is_open: bool
    n_checkpoints: int | None
    interval_s: float | None
    save_s: float | None


def _median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def _measure_steps(
    recs: pl.DataFrame,
    sched: pl.DataFrame | None,
    *,
    run_id: str,
    origin: datetime,
    as_of: float | None,
    notes: list[str],
) -> _RunResult:
    parsed = record_attempts(recs, run_id, notes)
    atts = [a for a, _ in parsed]
    spans = [a.span for a in atts]
    matched = _match_sched(spans, sched, origin, MATCH_TOLERANCE_S)
    ids = {sp.job_id for sp in spans if sp.job_id is not None}
    same_ids = (
        0
        if sched is None or not ids
        else sched.filter(pl.col("job_id").is_in(list(ids))).height
    )
    if same_ids and all(m is None for m in matched):
        notes.append(
            f"Run {run_id}: none of its attempts matches a job attempt of the "
            f"same job id starting within {MATCH_TOLERANCE_S:g} s, although the "
            f"job records hold {same_ids} attempt(s) of its job ids: the times "
            "disagree (check the zone the scheduler dump was ingested with, "
            "relkit ingest --kind sacct --tz), so queue times are unknown and "
            "every wait between attempts counts as recovery."
        )
    from_sched = 0
    for sp, m in zip(spans, matched, strict=True):
        if m is None:
            continue
        sp.submit = m["_submit"]
        if sp.n_gpus is None:
            sp.n_gpus = m["n_gpus"]
        if sp.end is None and m["_end"] is not None:
            sp.end = m["_end"]
            sp.ended_by = sched_end(m["state"], m["flags"])
            from_sched += 1
    if from_sched:
        notes.append(
            f"Run {run_id}: {from_sched} attempt(s) have no job_end or failure "
            "record; their end and how they ended are the scheduler's."
        )
    seen: list[float | None] = [a.last_record for a in atts]
    last, m = atts[-1], matched[-1]
    if (
        last.span.end is None
        and m is not None
        and m["_end"] is None
        and m["_stop"] is not None
        and m["_stop"] > last.last_record
    ):
        seen[-1] = m["_stop"]
        when = instant(origin, m["_stop"])
        notes.append(
            f"Run {run_id}: its last attempt (job {last.span.job_id}) is still "
            "running by the scheduler's records, which show it running until "
            f"{when:%Y-%m-%d %H:%M:%S} UTC, "
            f"{(m['_stop'] - last.last_record) / 3600:.4g} h after the log's last "
            "record; the run is measured up to that time, as from checkpoint "
            "times alone, and that time counts as compute (productive: no failure "
            "is recorded, and the progress records of it are not written yet)."
        )
    is_open = _decide_ends(
        spans,
        seen,
        as_of=as_of,
        run_id=run_id,
        origin=origin,
        notes=notes,
    )
    accounts, _ = account_steps(atts, run_id=run_id, notes=notes)
    spacing: list[float] = []
    for a in atts:
        if a.save_s.size >= 2:
            spacing.extend((a.save_s[1:] - a.save_e[:-1]).tolist())
    saved = recs.filter(pl.col("kind") == "checkpoint_saved")
    s, e, _, unknown = saves(recs.sort("_t", "_order"))
    durations = (e - s)[~unknown].tolist()
    return _RunResult(
        evidence=STEPS,
        accounts=accounts,
        is_open=is_open,
        n_checkpoints=saved.height,
        interval_s=_median(spacing),
        save_s=_median(durations),
    )


def _spans_for(
    recs: pl.DataFrame | None,
    sched: pl.DataFrame | None,
    *,
    run_id: str,
    origin: datetime,
    notes: list[str],
) -> tuple[list[Span], list[float | None]]:
    """Attempt spans from the scheduler when it has them, else from the records."""
    if sched is not None and sched.filter(pl.col("start_ts").is_not_null()).height:
        spans, seen = _sched_spans(sched, origin, notes, run_id)
        if recs is not None and recs.height:
            last = float(recs["_t"].max())  # type: ignore[arg-type]
            if spans[-1].end is None:
                prev = seen[-1]
                seen[-1] = last if prev is None else max(prev, last)
        return spans, seen
    if recs is None or not recs.filter(pl.col("kind") == "job_start").height:
        return [], []
    parsed = record_attempts(recs, run_id, notes)
    return [a.span for a, _ in parsed], [a.last_record for a, _ in parsed]


def _record_span_frame(
    spans: list[Span], seen: list[float | None], origin: datetime, run_id: str
) -> pl.DataFrame:
    """Spans from a run's job records as a frame for :func:`modelled_runs`."""
    return pl.DataFrame(
        {
            "_run": [run_id] * len(spans),
            "job_id": [sp.job_id for sp in spans],
            "submit_ts": [instant(origin, sp.submit) for sp in spans],
            "start_ts": [instant(origin, sp.start) for sp in spans],
            "end_ts": [instant(origin, sp.end) for sp in spans],
            "stop_ts": [instant(origin, x) for x in seen],
            "ended_by": [sp.ended_by for sp in spans],
            "n_gpus": [sp.n_gpus for sp in spans],
        },
        schema={
            "_run": pl.String,
            "job_id": pl.String,
            "submit_ts": UTC,
            "start_ts": UTC,
            "end_ts": UTC,
            "stop_ts": UTC,
            "ended_by": pl.String,
            "n_gpus": pl.Int64,
        },
    )


def measure_run(
    run_id: str,
    recs: pl.DataFrame | None,
    sched: pl.DataFrame | None,
    *,
    as_of: datetime | None,
    interval_h: float | None,
    cost_h: float,
    restart_h: float,
    notes: list[str],
    used: set[str],
    sched_ids: set[str] | None,
) -> tuple[pl.DataFrame, pl.DataFrame] | None:
    """Measure one run from its records and scheduler attempts.

    Returns its run row and attempt rows (the goodput's schemas), or None
    when nothing says when it ran (said in ``notes``). ``used`` gains the
    assumptions the run needed (``interval``, ``cost``, ``restart``);
    ``sched_ids`` are the job ids of all the scheduler's attempts given (None:
    no attempts given), to say why a run has none.

    Raises
    ------
    Unmeasurable
        If the run can only be modelled and ``interval_h`` is None, or its
        records contradict themselves (its step numbering).
    InvalidParameterError
        If ``as_of`` is before the open run's last record.
    """
    starts = []
    if recs is not None and recs.height:
        starts.append(recs["ts"].min())
    if sched is not None and sched["start_ts"].drop_nulls().len():
        starts.append(sched["start_ts"].min())
    if not starts:
        notes.append(f"Run {run_id}: no record and no started attempt; not measured.")
        return None
    origin: datetime = min(starts)  # type: ignore[type-var,assignment]
    as_of_s = None if as_of is None else (as_of - origin).total_seconds()
    kinds: set[str] = set()
    if recs is not None and recs.height:
        recs = prepare_records(
            recs.with_columns(_t=seconds("ts", origin)), run_id, origin, notes
        )
        kinds = set(recs["kind"].unique().to_list())
    if recs is not None and kinds & {"step_start", "step_end"}:
        result = _measure_steps(
            recs, sched, run_id=run_id, origin=origin, as_of=as_of_s, notes=notes
        )
        return _frames(run_id, result, origin, notes)
    spans, seen = _spans_for(recs, sched, run_id=run_id, origin=origin, notes=notes)
    if not spans:
        notes.append(_no_spans(run_id, recs, sched_ids))
        return None
    if recs is not None and "checkpoint_saved" in kinds:
        result = _measure_saves(
            recs,
            spans,
            seen,
            run_id=run_id,
            origin=origin,
            as_of=as_of_s,
            interval_h=interval_h,
            notes=notes,
            used=used,
        )
        return _frames(run_id, result, origin, notes)
    if interval_h is None:
        what = (
            "job attempts"
            if sched is not None and sched.height
            else "job_start and job_end records"
        )
        msg = needs_interval(
            f"run {run_id!r} has no step or checkpoint records, only {what}"
        )
        raise Unmeasurable(msg)
    used.update(("interval", "cost", "restart"))
    frame = (
        span_frame(sched.with_columns(_run=pl.lit(run_id)))
        if sched is not None and sched.height
        else _record_span_frame(spans, seen, origin, run_id)
    )
    runs, attempts = modelled_runs(
        frame,
        evidence=modelled_label(interval_h),
        as_of=as_of,
        interval_s=interval_h * 3600.0,
        cost_s=cost_h * 3600.0,
        restart_s=restart_h * 3600.0,
        notes=notes,
    )
    return (
        runs.select(GOODPUT_RUN_SCHEMA.names()).cast(dict(GOODPUT_RUN_SCHEMA)),
        attempts.select(GOODPUT_ATTEMPT_SCHEMA.names()).cast(
            dict(GOODPUT_ATTEMPT_SCHEMA)
        ),
    )


def _no_spans(
    run_id: str, recs: pl.DataFrame | None, sched_ids: set[str] | None
) -> str:
    """Say why nothing tells when a run ran, and what to give."""
    head = (
        f"Run {run_id}: not measured: its records have no step or job_start "
        "records, so only job attempts could say when it ran"
    )
    if sched_ids is None:
        return f"{head}, and none were given; {GIVE_ATTEMPTS}."
    ids = (
        []
        if recs is None
        else recs["job_id"].drop_nulls().unique(maintain_order=True).to_list()
    )
    if not ids:
        return (
            f"{head}, and its records carry no job id to find them by; give the "
            f"records their job ids, or group the attempts into runs ({RUN_BY_OPTION})."
        )
    return (
        f"{head}, and its job ids {few(ids)} are not among the job records "
        f"(whose job ids are {few(sorted(sched_ids))}); ingest the scheduler's "
        "records of this run (relkit ingest --kind sacct, or --kind k8s), or "
        "check the records' job ids."
    )


def _measure_saves(
    recs: pl.DataFrame,
    spans: list[Span],
    seen: list[float | None],
    *,
    run_id: str,
    origin: datetime,
    as_of: float | None,
    interval_h: float | None,
    notes: list[str],
    used: set[str],
) -> _RunResult:
    is_open = _decide_ends(
        spans, seen, as_of=as_of, run_id=run_id, origin=origin, notes=notes
    )
    s, e, steps, unknown = saves(recs.sort("_t", "_order"))
    if unknown.any():
        notes.append(
            f"Run {run_id}: {int(unknown.sum())} checkpoint save(s) have no "
            "save_s; their blocking time is unknown and counted as 0 s."
        )
    accounts, dt, n_out, assumed = account_saves(
        spans,
        s,
        e,
        steps,
        run_id=run_id,
        interval_s=None if interval_h is None else interval_h * 3600.0,
        tol_s=MATCH_TOLERANCE_S,
        notes=notes,
    )
    if assumed:
        used.add("interval")
    if n_out:
        # a save is made while an attempt runs: one outside every attempt (past
        # the matching tolerance) means the log and the job records disagree
        # in time, as a dump ingested in the wrong zone does (a whole-hour
        # shift moves a few saves out and the ETTR by several points)
        msg = (
            f"Run {run_id}: not measured: {n_out} of its {int(s.size)} "
            "checkpoint saves fall outside every job attempt (by more than "
            f"{MATCH_TOLERANCE_S:g} s), so the checkpoint log and the job records "
            "disagree in time. Check the zone the scheduler dump was ingested "
            "with (relkit ingest --kind sacct --tz, then --replace) and that its "
            "job ids are the run's."
        )
        raise Unmeasurable(msg)
    levels = (
        recs.filter(pl.col("kind") == "checkpoint_saved")["level"]
        .drop_nulls()
        .unique()
        .sort()
        .to_list()
        if "level" in recs.columns
        else []
    )
    if len(levels) > 1:
        notes.append(
            f"Run {run_id}: its checkpoints have several levels ({levels}); a "
            "failure that loses the faster level (a node drained with its "
            "host memory) restores an older checkpoint than the latest "
            "assumed here, so lost progress may be understated and ETTR "
            "overstated; step and checkpoint_restored records would say."
        )
    return _RunResult(
        evidence=SAVES,
        accounts=accounts,
        is_open=is_open,
        n_checkpoints=int(s.size),
        interval_s=dt,
        save_s=_median((e - s)[~unknown].tolist()),
    )


def _frames(
    run_id: str, res: _RunResult, origin: datetime, notes: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Turn a run's accounts into its run row and attempt rows."""
    accounts = res.accounts
    split_gaps(accounts)
    parts = ("productive", "startup", "restore", "save", "lost", "other")
    negative = [
        (acc.span.attempt, part, getattr(acc, part))
        for acc in accounts
        for part in parts
        if getattr(acc, part) < -1e-6
    ]
    if negative:
        number, part, value = negative[0]
        msg = (
            f"Run {run_id}: not measured: its records contradict each other "
            f"(attempt {number} would spend {value:.4g} s on {part}); check the "
            "times of its records and of its job attempts."
        )
        raise Unmeasurable(msg)
    h = 1.0 / 3600.0
    att_rows = []
    for acc in accounts:
        sp = acc.span
        att_rows.append(
            {
                "run_id": run_id,
                "attempt": sp.attempt,
                "job_id": sp.job_id,
                "start_ts": instant(origin, sp.start),
                "end_ts": instant(origin, sp.end),
                "ended_by": sp.ended_by,
                "n_gpus": sp.n_gpus,
                "productive_h": acc.productive * h,
                "init_h": acc.startup * h,
                "restore_h": acc.restore * h,
                "checkpoint_h": acc.save * h,
                "lost_progress_h": acc.lost * h,
                "recovery_h": acc.recovery * h,
                "queue_h": acc.queue * h,
                "other_h": acc.other * h,
                "last_checkpoint_ts": instant(origin, acc.last_checkpoint),
                "restored_step": acc.restored_step,
                "evidence": res.evidence,
            }
        )
    first, last = accounts[0].span, accounts[-1].span
    wall_s = (last.end or first.start) - first.start
    productive_s = sum(a.productive for a in accounts)
    gpus = {a.span.n_gpus for a in accounts if a.span.n_gpus is not None}
    if len(gpus) > 1:
        notes.append(
            f"Run {run_id}: its attempts ran on {sorted(gpus)} GPUs; n_gpus is the "
            "largest."
        )
    queue_s = None
    if first.submit is not None:
        queue_s = max(first.start - first.submit, 0.0)
    run_row = {
        "run_id": run_id,
        "evidence": res.evidence,
        "n_gpus": max(gpus) if gpus else None,
        "first_submit_ts": instant(origin, first.submit),
        "first_start_ts": instant(origin, first.start),
        "last_end_ts": instant(origin, last.end),
        "is_open": res.is_open,
        "wall_h": wall_s * h,
        "productive_h": productive_s * h,
        "ettr_frac": productive_s / wall_s if wall_s > 0 else None,
        "queue_before_start_h": None if queue_s is None else queue_s * h,
        "ettr_with_queue_frac": (
            productive_s / (wall_s + queue_s)
            if queue_s is not None and wall_s + queue_s > 0
            else None
        ),
        "n_attempts": len(accounts),
        "n_interruptions": sum(a.span.ended_by == "failure" for a in accounts),
        "n_stops": sum(a.span.ended_by == "stopped" for a in accounts),
        "badput_init_h": sum(a.startup for a in accounts) * h,
        "badput_checkpoint_h": sum(a.save for a in accounts) * h,
        "badput_restore_h": sum(a.restore for a in accounts) * h,
        "badput_lost_progress_h": sum(a.lost for a in accounts) * h,
        "badput_recovery_h": sum(a.recovery for a in accounts) * h,
        "badput_queue_h": sum(a.queue for a in accounts) * h,
        "badput_other_h": sum(a.other for a in accounts) * h,
        "n_checkpoints": res.n_checkpoints,
        "checkpoint_interval_h": None if res.interval_s is None else res.interval_s * h,
        "checkpoint_save_s": res.save_s,
    }
    return (
        pl.DataFrame([run_row], schema=GOODPUT_RUN_SCHEMA, orient="row"),
        pl.DataFrame(att_rows, schema=GOODPUT_ATTEMPT_SCHEMA, orient="row"),
    )
