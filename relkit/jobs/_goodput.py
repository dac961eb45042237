r"""Runs across attempts and their measured goodput: ETTR and the badput breakdown.

:func:`measure_goodput` follows a training run across its attempts (requeues
and resubmissions) and splits its wall time into productive time and badput
categories, from the best evidence at hand: step records, checkpoint save
times with the scheduler's attempts, or the scheduler's attempts alone with an
assumed checkpoint interval. :func:`interruption_losses` charges each
interruption of :func:`relkit.jobs.build_interruptions` the GPU-hours it
really cost the run.
"""

import math
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import numpy as np
import polars as pl

from relkit.errors import InvalidParameterError, SchemaError
from relkit.jobs._goodput_account import (
    Account,
    RecordAttempt,
    Span,
    account_modelled,
    account_saves,
    account_steps,
    split_gaps,
)
from relkit.schema import UTC, require_columns
from relkit.taxonomy import PLANNED_FLAGS

__all__ = [
    "GOODPUT_ATTEMPT_SCHEMA",
    "GOODPUT_RUN_SCHEMA",
    "LOST_BASIS",
    "MATCH_TOLERANCE_S",
    "RECORD_KINDS",
    "Goodput",
    "interruption_losses",
    "measure_goodput",
]

#: ``kind`` values of the store's ``checkpoints`` records.
RECORD_KINDS = (
    "job_start",
    "step_start",
    "step_end",
    "checkpoint_save_start",
    "checkpoint_saved",
    "checkpoint_restored",
    "failure",
    "job_end",
)

#: How far apart (seconds) a checkpoint-log attempt and a scheduler attempt of
#: the same job id may start, or a goodput attempt and an interruption end, and
#: still be the same attempt. sacct prints whole seconds and the job's own log
#: is written by another clock; a requeued attempt of the same job id starts
#: at least the requeue delay later (minutes: Slurm's default is to wait for
#: the nodes' epilog and the job's ``--begin``), so 120 s keeps them apart.
MATCH_TOLERANCE_S = 120.0

_STEPS = "step records"
_SAVES = "job attempts + checkpoint times"


def _modelled(interval_h: float) -> str:
    return (
        "ETTR from scheduler records alone (modelled, assumed checkpoint "
        f"interval {interval_h:g} h)"
    )


#: ``lost_basis`` of :func:`interruption_losses` for each level of evidence.
LOST_BASIS = {
    _STEPS: "checkpoint records",
    _SAVES: "job attempts + checkpoint times",
    "modelled": "assumed checkpoint interval",
}

#: Columns of :attr:`Goodput.runs`, in order.
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
        "badput_startup_h": pl.Float64(),
        "badput_checkpoint_save_h": pl.Float64(),
        "badput_checkpoint_restore_h": pl.Float64(),
        "badput_lost_progress_h": pl.Float64(),
        "badput_recovery_h": pl.Float64(),
        "badput_queue_h": pl.Float64(),
        "badput_other_h": pl.Float64(),
        "n_checkpoints": pl.Int64(),
        "checkpoint_interval_h": pl.Float64(),
        "checkpoint_save_s": pl.Float64(),
    }
)

#: Columns of :attr:`Goodput.attempts`, in order.
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
        "startup_h": pl.Float64(),
        "checkpoint_restore_h": pl.Float64(),
        "checkpoint_save_h": pl.Float64(),
        "lost_progress_h": pl.Float64(),
        "recovery_h": pl.Float64(),
        "queue_h": pl.Float64(),
        "other_h": pl.Float64(),
        "last_checkpoint_ts": UTC,
        "restored_step": pl.Int64(),
        "evidence": pl.String(),
    }
)

#: job_end statuses that end an attempt in order (anything else is a failure).
_CLEAN_END = ("COMPLETED", "REQUEUED", "SUCCEEDED", "SUCCESS", "DONE", "OK")

_RECORD_OPTIONAL: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "attempt": pl.Int64(),
    "step": pl.Int64(),
    "save_s": pl.Float64(),
    "restore_s": pl.Float64(),
    "n_gpus": pl.Int64(),
    "status": pl.String(),
}


@dataclass(frozen=True)
class Goodput:
    """Measured goodput of training runs: per run, per attempt, and what was assumed.

    Parameters
    ----------
    runs : pl.DataFrame
        One row per run, columns :data:`GOODPUT_RUN_SCHEMA` (see
        :func:`measure_goodput`).
    attempts : pl.DataFrame
        One row per attempt, columns :data:`GOODPUT_ATTEMPT_SCHEMA`.
    notes : tuple of str
        Plain sentences: what was assumed, estimated or left out.
    """

    runs: pl.DataFrame
    attempts: pl.DataFrame
    notes: tuple[str, ...]

    def to_dict(self) -> dict[str, Any]:
        """Return runs, attempts and notes as plain Python (for JSON output).

        Returns
        -------
        dict
            ``runs`` and ``attempts`` as lists of row dicts, ``notes`` a list.
        """
        return {
            "runs": self.runs.to_dicts(),
            "attempts": self.attempts.to_dicts(),
            "notes": list(self.notes),
        }


# -- inputs ---------------------------------------------------------------------------


def _check_hours(value: object, name: str, *, positive: bool) -> float:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
        and (float(value) > 0 if positive else float(value) >= 0)
    )
    if not ok:
        need = "> 0" if positive else ">= 0"
        msg = f"{name} must be a finite number of hours {need}; got {value!r}."
        raise InvalidParameterError(msg)
    return float(value)  # type: ignore[arg-type]


def _records(records: pl.DataFrame | None, notes: list[str]) -> pl.DataFrame:
    """Give the records every optional column, ``ts`` in UTC, usable rows only."""
    if records is None or (records.height == 0 and records.width == 0):
        records = pl.DataFrame(
            schema={"run_id": pl.String, "ts": UTC, "kind": pl.String}
        )
    require_columns(records, ["run_id", "ts", "kind"], where="measure_goodput")
    dtype = records.schema["ts"]
    if not isinstance(dtype, pl.Datetime) or dtype.time_zone is None:
        msg = (
            f"measure_goodput: records column 'ts' must be a time-zone-aware "
            f"Datetime (UTC); it is {dtype}. Read the log with relkit.ingest "
            "(kind 'checkpoints') or convert it, e.g. "
            "pl.col('ts').dt.replace_time_zone('UTC')."
        )
        raise SchemaError(msg)
    frame = records.with_columns(
        [
            (pl.col(c) if c in records.columns else pl.lit(None)).cast(t).alias(c)
            for c, t in _RECORD_OPTIONAL.items()
        ]
    ).with_columns(
        pl.col("ts").dt.convert_time_zone("UTC").dt.cast_time_unit("us"),
        pl.col("run_id").cast(pl.String),
        pl.col("kind").cast(pl.String),
    )
    bad = frame.filter(pl.col("ts").is_null() | pl.col("run_id").is_null())
    if bad.height:
        notes.append(
            f"{bad.height} record(s) have no time or no run_id and were left out."
        )
        frame = frame.filter(
            pl.col("ts").is_not_null() & pl.col("run_id").is_not_null()
        )
    unknown = frame.filter(~pl.col("kind").is_in(RECORD_KINDS))
    if unknown.height:
        kinds = sorted(unknown["kind"].cast(pl.String).fill_null("null").unique())
        notes.append(
            f"{unknown.height} record(s) of kind {kinds[:5]} are not step, "
            f"checkpoint or job records ({', '.join(RECORD_KINDS)}) and were "
            "left out."
        )
        frame = frame.filter(pl.col("kind").is_in(RECORD_KINDS))
    order = {k: i for i, k in enumerate(RECORD_KINDS)}
    return frame.with_columns(
        _order=pl.col("kind").replace_strict(order, return_dtype=pl.Int8)
    )


def _attempts(attempts: pl.DataFrame) -> pl.DataFrame:
    """Scheduler attempts with the optional columns the goodput reads."""
    require_columns(
        attempts, ["job_id", "start_ts", "end_ts", "state"], where="measure_goodput"
    )
    extra: dict[str, pl.DataType] = {
        "attempt": pl.Int64(),
        "submit_ts": UTC,
        "stop_ts": UTC,
        "n_gpus": pl.Int64(),
        "flags": pl.String(),
    }
    return attempts.with_columns(
        [
            (pl.col(c) if c in attempts.columns else pl.lit(None)).cast(t).alias(c)
            for c, t in extra.items()
        ]
    )


def _sched_end(state: str | None, flags: str | None) -> str:
    """Tell how a scheduler attempt ended: job_end (done, or requeued) or failure."""
    if state == "COMPLETED":
        return "job_end"
    planned = flags is not None and any(f in flags.split(",") for f in PLANNED_FLAGS)
    if state == "REQUEUED" and planned:
        return "job_end"
    return "failure"


# -- runs -----------------------------------------------------------------------------


def _group_runs(
    recs: pl.DataFrame,
    sched: pl.DataFrame | None,
    run_by: str | None,
    notes: list[str],
) -> tuple[dict[str, pl.DataFrame], dict[str, pl.DataFrame]]:
    """Split records and scheduler attempts by run: two dicts keyed by run id."""
    by_records: dict[str, pl.DataFrame] = {}
    by_sched: dict[str, pl.DataFrame] = {}
    if sched is not None and run_by is not None:
        if run_by not in sched.columns:
            msg = (
                f"run_by={run_by!r} is not a column of the attempts; give one of "
                f"{sched.columns} (a Slurm requeue chain: run_by='job_id'; by "
                "job name: run_by='name')."
            )
            raise InvalidParameterError(msg)
        keyed = sched.with_columns(_run=pl.col(run_by).cast(pl.String))
        missing = keyed.filter(pl.col("_run").is_null()).height
        if missing:
            notes.append(
                f"{missing} job attempt(s) have no {run_by} and belong to no run."
            )
        keyed = keyed.filter(pl.col("_run").is_not_null())
        if recs.height:
            runs_of = keyed.select("job_id", "_run").unique()
            recs = recs.drop("run_id").join(
                runs_of.rename({"_run": "run_id"}), on="job_id", how="left"
            )
            lost = recs.filter(pl.col("run_id").is_null()).height
            if lost:
                notes.append(
                    f"{lost} record(s) have a job_id of no job attempt and were "
                    f"left out (runs are grouped by the attempts' {run_by})."
                )
            recs = recs.filter(pl.col("run_id").is_not_null())
            wanted = set(recs["run_id"].unique().to_list())
            extra = keyed.filter(~pl.col("_run").is_in(list(wanted)))
            if extra.height:
                notes.append(
                    f"{extra['_run'].n_unique()} group(s) of job attempts by "
                    f"{run_by} have no record and were not measured."
                )
            keyed = keyed.filter(pl.col("_run").is_in(list(wanted)))
        for (key,), part in keyed.partition_by("_run", as_dict=True).items():
            by_sched[str(key)] = part
    elif sched is not None and recs.height:
        pairs = recs.filter(pl.col("job_id").is_not_null()).select("job_id", "run_id")
        pairs = pairs.unique(maintain_order=True)
        shared = pairs.filter(pl.col("job_id").is_duplicated())
        if shared.height:
            notes.append(
                f"job id(s) {sorted(shared['job_id'].unique().to_list())[:5]} appear "
                "in the records of several runs; their attempts go to the first."
            )
            pairs = pairs.unique("job_id", keep="first", maintain_order=True)
        keyed = sched.join(pairs.rename({"run_id": "_run"}), on="job_id", how="left")
        other = keyed.filter(pl.col("_run").is_null())
        if other.height:
            notes.append(
                f"{other.height} job attempt(s) of {other['job_id'].n_unique()} job "
                "id(s) that no record names were not measured (not part of a "
                "run in the records)."
            )
        for (key,), part in (
            keyed.filter(pl.col("_run").is_not_null())
            .partition_by("_run", as_dict=True)
            .items()
        ):
            by_sched[str(key)] = part
    elif sched is not None:
        keyed = sched.with_columns(_run=pl.col("job_id").cast(pl.String))
        for (key,), part in keyed.partition_by("_run", as_dict=True).items():
            by_sched[str(key)] = part
    if recs.height:
        for (key,), part in recs.partition_by("run_id", as_dict=True).items():
            by_records[str(key)] = part
    return by_records, by_sched


def _seconds(col: str, origin: datetime) -> pl.Expr:
    return (pl.col(col) - pl.lit(origin, dtype=UTC)).dt.total_microseconds().cast(
        pl.Float64
    ) / 1e6


def _instant(origin: datetime, s: float | None) -> datetime | None:
    if s is None or not math.isfinite(s):
        return None
    return origin + timedelta(microseconds=round(s * 1e6))


def _saves(
    frame: pl.DataFrame,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Blocking save intervals of checkpoint_saved records (sorted, disjoint).

    ``frame`` has ``_t`` (seconds) and ``kind``, ``save_s``, ``step``. A save
    without ``save_s`` takes its time from the checkpoint_save_start record
    before it (after the previous save), else 0 s: the last array flags those.
    """
    saved = frame.filter(pl.col("kind") == "checkpoint_saved").sort("_t")
    e = saved["_t"].to_numpy().astype(float)
    dur = saved["save_s"].to_numpy().astype(float)
    steps = saved["step"].fill_null(-1).to_numpy().astype(np.int64)
    unknown = np.isnan(dur)
    starts = frame.filter(pl.col("kind") == "checkpoint_save_start")["_t"]
    if unknown.any() and starts.len():
        st = np.sort(starts.to_numpy().astype(float))
        prev_end = np.concatenate([[-np.inf], e[:-1]])
        i = np.searchsorted(st, e, side="right") - 1
        found = (i >= 0) & (st[np.maximum(i, 0)] >= prev_end)
        fill = unknown & found
        dur[fill] = e[fill] - st[np.maximum(i, 0)][fill]
        unknown = unknown & ~found
    dur = np.where(np.isnan(dur), 0.0, np.maximum(dur, 0.0))
    s = e - dur
    # overlapping saves (a save logged inside another): clip to keep them disjoint
    if s.size > 1:
        s = np.maximum(s, np.concatenate([[-np.inf], np.maximum.accumulate(e)[:-1]]))
        s = np.minimum(s, e)
    return s, e, steps, unknown


def _record_attempts(
    recs: pl.DataFrame, run_id: str, notes: list[str]
) -> list[tuple[RecordAttempt, pl.DataFrame]]:
    """Parse a run's records into attempts (in order), ends not yet decided."""
    said: Counter[str] = Counter()
    recs = recs.sort("_t", "_order")
    if recs["attempt"].null_count():
        recs = recs.with_columns(
            attempt=(pl.col("kind") == "job_start").cum_sum().clip(lower_bound=1)
        )
        notes.append(
            f"Run {run_id}: records without attempt numbers; attempts are "
            "counted from its job_start records in time order."
        )
    groups = recs.partition_by("attempt", as_dict=True, maintain_order=True)
    ordered = sorted(groups.items(), key=lambda kv: kv[0][0])
    out = []
    for (number,), g in ordered:
        kinds = g["kind"]
        t = g["_t"]

        def rows(
            kind: str, g: pl.DataFrame = g, kinds: pl.Series = kinds
        ) -> pl.DataFrame:
            return g.filter(kinds == kind)

        start_rows = rows("job_start")
        if start_rows.height:
            start = float(start_rows["_t"][0])
            gpus = start_rows["n_gpus"].drop_nulls()
        else:
            start = float(t.min())  # type: ignore[arg-type]
            gpus = g["n_gpus"].drop_nulls()
            said["no_start"] += 1
        ends = g.filter(kinds.is_in(["failure", "job_end"]))
        end: float | None = None
        ended_by = "open"
        final_n = None
        if ends.height:
            first = ends.row(0, named=True)
            end = float(first["_t"])
            status = (first["status"] or "").upper()
            clean = first["kind"] == "job_end" and (
                first["status"] is None or status in _CLEAN_END
            )
            ended_by = "job_end" if clean else "failure"
        finals = rows("job_end")["step"].drop_nulls()
        if finals.len():
            final_n = int(finals[0])
        span = Span(
            attempt=int(number),
            job_id=g["job_id"].drop_nulls()[0]
            if g["job_id"].drop_nulls().len()
            else None,
            start=start,
            end=end,
            ended_by=ended_by,
            n_gpus=int(gpus[0]) if gpus.len() else None,
        )
        att = RecordAttempt(span=span, last_record=float(t.max()), final_n=final_n)  # type: ignore[arg-type]
        restored = rows("checkpoint_restored")
        if restored.height:
            row = restored.row(0, named=True)
            att.restore_t = float(row["_t"])
            att.restore_dur = row["restore_s"]
            att.restored = row["step"]
        starts = rows("step_start").filter(pl.col("step").is_not_null())
        if starts.height:
            att.step_start_t = float(starts["_t"][0])
            att.step_start_i = int(starts["step"][0])
        ends_ = rows("step_end").filter(pl.col("step").is_not_null())
        s, e, steps, unknown = _saves(g)
        said["save_unknown"] += int(unknown.sum())
        known = steps >= 0
        mark_t = np.concatenate(
            [
                starts["_t"].to_numpy().astype(float),
                ends_["_t"].to_numpy().astype(float),
                s[known],
                e[known],
            ]
        )
        mark_n = np.concatenate(
            [
                starts["step"].to_numpy().astype(np.int64),
                ends_["step"].to_numpy().astype(np.int64) + 1,
                steps[known],
                steps[known],
            ]
        )
        order = np.lexsort((mark_n, mark_t))
        att.mark_t, att.mark_n = mark_t[order], mark_n[order]
        att.save_s, att.save_e, att.save_steps = s, e, steps
        out.append((att, g))
    if said["no_start"]:
        notes.append(
            f"Run {run_id}: {said['no_start']} attempt(s) have no job_start record; "
            "each is taken to start at its first record."
        )
    if said["save_unknown"]:
        notes.append(
            f"Run {run_id}: {said['save_unknown']} checkpoint save(s) have no save_s "
            "(nor a checkpoint_save_start record); their blocking time is unknown "
            "and counted as 0 s."
        )
    return out


def _match_sched(
    spans: list[Span], sched: pl.DataFrame | None, origin: datetime, tol_s: float
) -> list[dict[str, Any] | None]:
    """Find each records attempt's scheduler attempt: same job id, start within tol."""
    if sched is None or sched.height == 0:
        return [None] * len(spans)
    rows = (
        sched.filter(pl.col("start_ts").is_not_null())
        .with_columns(
            _start=_seconds("start_ts", origin),
            _end=_seconds("end_ts", origin),
            _submit=_seconds("submit_ts", origin),
            _stop=_seconds("stop_ts", origin),
        )
        .to_dicts()
    )
    out: list[dict[str, Any] | None] = []
    for sp in spans:
        near = [
            r
            for r in rows
            if r["job_id"] == sp.job_id and abs(r["_start"] - sp.start) <= tol_s
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
            _start=_seconds("start_ts", origin),
            _end=_seconds("end_ts", origin),
            _submit=_seconds("submit_ts", origin),
            _stop=_seconds("stop_ts", origin),
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
                ended_by="open" if open_ else _sched_end(r["state"], r["flags"]),
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
                        when = _instant(origin, sp.running_until)
                        msg = (
                            f"as_of is before the last record of open run {run_id!r} "
                            f"({when:%Y-%m-%d %H:%M:%S} UTC); give an as_of at or "
                            "after the end of the data, or leave it out to end "
                            "open runs at their last record."
                        )
                        raise InvalidParameterError(msg)
                    sp.end = as_of
                else:
                    sp.end = sp.running_until
        if k < len(spans) - 1 and sp.end > spans[k + 1].start:  # type: ignore[operator]
            sp.end = max(spans[k + 1].start, sp.start)
            said["overlap"] += 1
    if said["no_end"]:
        notes.append(
            f"Run {run_id}: {said['no_end']} attempt(s) before its last have no "
            "job_end or failure; each is taken to end, by a failure, at its last "
            "record."
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
        when = _instant(origin, last.running_until)
        if as_of is not None:
            notes.append(
                f"Run {run_id} is open (its last attempt has not ended); it is "
                f"measured up to as_of, and the {tail / 3600:.4g} h after its last "
                f"record ({when:%Y-%m-%d %H:%M:%S} UTC) count as other badput."
            )
        else:
            notes.append(
                f"Run {run_id} is open (its last attempt has not ended); it is "
                f"measured up to its last record ({when:%Y-%m-%d %H:%M:%S} UTC). "
                "Pass as_of to measure it up to a later time."
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
    parsed = _record_attempts(recs, run_id, notes)
    atts = [a for a, _ in parsed]
    spans = [a.span for a in atts]
    matched = _match_sched(spans, sched, origin, MATCH_TOLERANCE_S)
    from_sched = 0
    for sp, m in zip(spans, matched, strict=True):
        if m is None:
            continue
        sp.submit = m["_submit"]
        if sp.n_gpus is None:
            sp.n_gpus = m["n_gpus"]
        if sp.end is None and m["_end"] is not None:
            sp.end = m["_end"]
            sp.ended_by = _sched_end(m["state"], m["flags"])
            from_sched += 1
    if from_sched:
        notes.append(
            f"Run {run_id}: {from_sched} attempt(s) have no job_end or failure "
            "record; their end and how they ended are the scheduler's."
        )
    is_open = _decide_ends(
        spans,
        [a.last_record for a in atts],
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
    s, e, _, unknown = _saves(recs.sort("_t", "_order"))
    durations = (e - s)[~unknown].tolist()
    return _RunResult(
        evidence=_STEPS,
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
    parsed = _record_attempts(recs, run_id, notes)
    return [a.span for a, _ in parsed], [a.last_record for a, _ in parsed]


def _measure_run(
    run_id: str,
    recs: pl.DataFrame | None,
    sched: pl.DataFrame | None,
    *,
    as_of: datetime | None,
    interval_h: float | None,
    cost_h: float,
    restart_h: float,
    notes: list[str],
) -> tuple[_RunResult, datetime] | None:
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
    if recs is not None and recs.height:
        recs = recs.with_columns(_t=_seconds("ts", origin))
    kinds = (
        set(recs["kind"].unique().to_list())
        if recs is not None and recs.height
        else set()
    )
    if kinds & {"step_start", "step_end"}:
        assert recs is not None
        result = _measure_steps(
            recs, sched, run_id=run_id, origin=origin, as_of=as_of_s, notes=notes
        )
        return result, origin
    spans, seen = _spans_for(recs, sched, run_id=run_id, origin=origin, notes=notes)
    if not spans:
        notes.append(
            f"Run {run_id}: its records have no step records, and no job_start "
            "record or job attempt says when it ran; not measured (give the job "
            "attempts, e.g. relkit.jobs.build_job_attempts of the sacct dump)."
        )
        return None
    if "checkpoint_saved" in kinds:
        assert recs is not None
        is_open = _decide_ends(
            spans, seen, as_of=as_of_s, run_id=run_id, origin=origin, notes=notes
        )
        s, e, steps, unknown = _saves(recs.sort("_t", "_order"))
        if unknown.any():
            notes.append(
                f"Run {run_id}: {int(unknown.sum())} checkpoint save(s) have no "
                "save_s; "
                "their blocking time is unknown and counted as 0 s."
            )
        accounts, dt, n_out = account_saves(
            spans,
            s,
            e,
            steps,
            run_id=run_id,
            interval_s=None if interval_h is None else interval_h * 3600.0,
            tol_s=MATCH_TOLERANCE_S,
            notes=notes,
        )
        if n_out:
            notes.append(
                f"Run {run_id}: {n_out} checkpoint save(s) fall outside every "
                "attempt and were left out."
            )
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
        return (
            _RunResult(
                evidence=_SAVES,
                accounts=accounts,
                is_open=is_open,
                n_checkpoints=int(s.size),
                interval_s=dt,
                save_s=_median((e - s)[~unknown].tolist()),
            ),
            origin,
        )
    if interval_h is None:
        msg = (
            f"run {run_id!r} has no step or checkpoint records, only job "
            "attempts: its goodput can only be modelled. Pass assumed_interval_h "
            "(the run's checkpoint interval in hours, e.g. assumed_interval_h=1.0) "
            "and optionally assumed_cost_h and assumed_restart_h."
        )
        raise InvalidParameterError(msg)
    is_open = _decide_ends(
        spans, seen, as_of=as_of_s, run_id=run_id, origin=origin, notes=notes
    )
    accounts = account_modelled(
        spans,
        interval_s=interval_h * 3600.0,
        cost_s=cost_h * 3600.0,
        restart_s=restart_h * 3600.0,
    )
    return (
        _RunResult(
            evidence=_modelled(interval_h),
            accounts=accounts,
            is_open=is_open,
            n_checkpoints=None,
            interval_s=interval_h * 3600.0,
            save_s=cost_h * 3600.0,
        ),
        origin,
    )


def _rows(
    run_id: str, res: _RunResult, origin: datetime, notes: list[str]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    accounts = res.accounts
    split_gaps(accounts)
    h = 1.0 / 3600.0
    att_rows = []
    for acc in accounts:
        sp = acc.span
        att_rows.append(
            {
                "run_id": run_id,
                "attempt": sp.attempt,
                "job_id": sp.job_id,
                "start_ts": _instant(origin, sp.start),
                "end_ts": _instant(origin, sp.end),
                "ended_by": sp.ended_by,
                "n_gpus": sp.n_gpus,
                "productive_h": acc.productive * h,
                "startup_h": acc.startup * h,
                "checkpoint_restore_h": acc.restore * h,
                "checkpoint_save_h": acc.save * h,
                "lost_progress_h": acc.lost * h,
                "recovery_h": acc.recovery * h,
                "queue_h": acc.queue * h,
                "other_h": acc.other * h,
                "last_checkpoint_ts": _instant(origin, acc.last_checkpoint),
                "restored_step": acc.restored_step,
                "evidence": res.evidence,
            }
        )
    first, last = accounts[0].span, accounts[-1].span
    wall_s = (last.end or first.start) - first.start
    productive_s = sum(a.productive for a in accounts)
    wall, productive = wall_s * h, productive_s * h
    gpus = {a.span.n_gpus for a in accounts if a.span.n_gpus is not None}
    if len(gpus) > 1:
        notes.append(
            f"Run {run_id}: its attempts ran on {sorted(gpus)} GPUs; n_gpus is the "
            "largest."
        )
    queue_before = None
    if first.submit is not None:
        queue_before = max(first.start - first.submit, 0.0) * h
    run_row = {
        "run_id": run_id,
        "evidence": res.evidence,
        "n_gpus": max(gpus) if gpus else None,
        "first_submit_ts": _instant(origin, first.submit),
        "first_start_ts": _instant(origin, first.start),
        "last_end_ts": _instant(origin, last.end),
        "is_open": res.is_open,
        "wall_h": wall,
        "productive_h": productive,
        "ettr_frac": productive_s / wall_s if wall_s > 0 else None,
        "queue_before_start_h": queue_before,
        "ettr_with_queue_frac": (
            productive_s / (wall_s + queue_before * 3600.0)
            if queue_before is not None and wall_s + queue_before > 0
            else None
        ),
        "n_attempts": len(accounts),
        "n_interruptions": sum(a.span.ended_by == "failure" for a in accounts),
        "badput_startup_h": sum(a.startup for a in accounts) * h,
        "badput_checkpoint_save_h": sum(a.save for a in accounts) * h,
        "badput_checkpoint_restore_h": sum(a.restore for a in accounts) * h,
        "badput_lost_progress_h": sum(a.lost for a in accounts) * h,
        "badput_recovery_h": sum(a.recovery for a in accounts) * h,
        "badput_queue_h": sum(a.queue for a in accounts) * h,
        "badput_other_h": sum(a.other for a in accounts) * h,
        "n_checkpoints": res.n_checkpoints,
        "checkpoint_interval_h": None if res.interval_s is None else res.interval_s * h,
        "checkpoint_save_s": res.save_s,
    }
    return run_row, att_rows


def measure_goodput(
    records: pl.DataFrame | None,
    attempts: pl.DataFrame | None = None,
    *,
    run: str | None = None,
    run_by: str | None = None,
    assumed_interval_h: float | None = None,
    assumed_cost_h: float = 0.0,
    assumed_restart_h: float = 0.0,
    as_of: datetime | None = None,
) -> Goodput:
    r"""Measure the goodput (ETTR) of training runs and break down their badput.

    Parameters
    ----------
    records : pl.DataFrame or None
        The store's ``checkpoints`` records (one row per record of a run's
        log): ``run_id`` (String), ``ts`` (Datetime, UTC), ``kind`` (one of
        :data:`RECORD_KINDS`); optional ``job_id`` (String), ``attempt``
        (Int), ``step`` (Int: ``step_start``/``step_end`` the 0-based index of
        the step; ``checkpoint_*`` the steps the checkpoint holds;
        ``job_end`` the steps done), ``save_s`` (Float, ``checkpoint_saved``:
        blocking save seconds), ``restore_s`` (Float,
        ``checkpoint_restored``: restore seconds), ``n_gpus`` (Int,
        ``job_start``), ``status`` (String, ``job_end``: the end status,
        ``failure``: its cause). None or empty: the runs come from
        ``attempts`` alone (evidence (c)).
    attempts : pl.DataFrame, optional
        Job attempts from :func:`relkit.jobs.build_job_attempts`: ``job_id,
        start_ts, end_ts, state``, and where present ``submit_ts``,
        ``stop_ts``, ``n_gpus``, ``flags`` and the ``run_by`` column. They
        give queue times (``submit_ts``), GPU counts and, without step
        records, when each attempt ran.
    run : str, optional
        Measure only this run (its ``run_id``, or its ``run_by`` value).
    run_by : str, optional
        Group the attempts into runs by this column of ``attempts``:
        ``"job_id"`` (a Slurm requeue chain, attempts 1..n of one job id),
        ``"name"`` (resubmissions under one job name) or any other. Default:
        the records' ``run_id`` (attempts join their run by ``job_id``), or
        ``"job_id"`` without records.
    assumed_interval_h : float, optional
        Checkpoint interval in hours, > 0, for runs with no step or
        checkpoint records (required then), and for evidence (b) when no
        attempt saved two checkpoints.
    assumed_cost_h : float, default 0.0
        Blocking save time per checkpoint, hours, >= 0 (evidence (c) only).
    assumed_restart_h : float, default 0.0
        Start-up and restore time of each attempt after the first, hours,
        >= 0 (evidence (c) only).
    as_of : datetime, optional
        End of the data (time-zone aware): an open run (its last attempt has
        no ``job_end`` or ``failure`` record, or no scheduler end) is measured
        up to it. Default: up to its last record.

    Returns
    -------
    Goodput
        ``runs``: one row per run, sorted by ``run_id``, columns
        :data:`GOODPUT_RUN_SCHEMA`: ``evidence`` (see Notes); ``n_gpus`` (the
        largest of its attempts'); ``first_submit_ts`` (the first attempt's
        submit time, null unless ``attempts`` give it), ``first_start_ts``,
        ``last_end_ts`` (UTC); ``is_open``; ``wall_h`` (first start to last
        end), ``productive_h``, ``ettr_frac`` = productive / wall;
        ``queue_before_start_h`` (first submit to first start, null when
        unknown) and ``ettr_with_queue_frac`` = productive / (wall +
        queue_before_start); ``n_attempts``, ``n_interruptions`` (attempts
        ended by a failure); the badput in hours ``badput_startup_h``,
        ``badput_checkpoint_save_h``, ``badput_checkpoint_restore_h``,
        ``badput_lost_progress_h``, ``badput_recovery_h``,
        ``badput_queue_h``, ``badput_other_h``, which sum to ``wall_h -
        productive_h``; ``n_checkpoints`` (saves recorded; null when
        modelled), ``checkpoint_interval_h`` (median compute time between
        two saves of one attempt, or the assumed one), ``checkpoint_save_s``
        (median blocking save).
        ``attempts``: one row per attempt, sorted by ``run_id`` and start,
        columns :data:`GOODPUT_ATTEMPT_SCHEMA`: ``attempt`` (the records'
        number, else 1..n in start order), ``job_id``, ``start_ts``,
        ``end_ts``, ``ended_by`` (``failure``, ``job_end``: a completed
        attempt or a deliberate requeue, ``open``), ``n_gpus``, the hours of
        the attempt (``productive_h``, ``startup_h``,
        ``checkpoint_restore_h``, ``checkpoint_save_h``,
        ``lost_progress_h``: its work later redone, ``other_h``) and of the
        gap after it to the next attempt's start (``recovery_h``,
        ``queue_h``), ``last_checkpoint_ts`` (end of its last save),
        ``restored_step`` and ``evidence``. Summed over a run's attempts they
        give the run's columns.
        ``notes``: plain sentences saying what was assumed, estimated or
        left out (the CLI prints them).

    Raises
    ------
    SchemaError
        If ``records`` or ``attempts`` lacks a required column, or ``ts`` is
        not time-zone aware.
    InvalidParameterError
        If ``run`` names no run (the message lists them), ``run_by`` is not a
        column of ``attempts`` or is given without them, an assumed duration
        is negative or not finite, ``as_of`` is naive or earlier than an open
        run's last record, a run has only job attempts and
        ``assumed_interval_h`` is not given, or there is nothing to measure.

    Notes
    -----
    ETTR is Kokolis et al.'s Effective Training Time Ratio [1]_: productive
    time over the wall time of the run across its attempts,

    .. math:: \mathrm{ETTR} = \frac{\sum_{\text{kept steps}} t_{\text{step}}}
              {t_{\text{last end}} - t_{\text{first start}}},

    so the downtime between attempts (recovery and queue) counts against it.
    Kokolis et al. count the time the run waited in the scheduler's queue
    too; ``ettr_with_queue_frac`` adds the wait before the first start
    (``queue_before_start_h``) to the wall time, the waits between attempts
    being inside it already. Productive time counts every step once, in the
    execution that is kept, as Google's ml-goodput-measurement does [2]_ (its
    ``GoodputDisruptionPartialRestartTest``, case C18: 5 unique steps of 3 s in
    a 64 s run give 15/64, not the 24/64 of all 8 executions).

    Three levels of evidence, named in ``evidence``:

    (a) ``"step records"``: ``step_start``/``step_end`` records (sparse ones
        too, e.g. one ``step_end`` every 180 steps) with the checkpoint
        records. Each progress record is a mark "n steps done at t"
        (``step_end`` of index i: i + 1; ``step_start`` of index i: i; a
        checkpoint of c steps: c at its save's start and end). Between two
        marks, the time outside blocking saves is compute, shared evenly by
        the steps between them (a uniform step time within a segment). A
        step's execution is lost progress when a later attempt restored a
        checkpoint holding fewer steps (it was redone), and productive
        otherwise; the time after an attempt's last mark is lost progress
        when a failure ended it (the step in flight at a failure counts as
        lost), other badput after a ``job_end``. Start-up is the attempt's
        start to its first step (the first ``step_start``, else the restore;
        without either, the first mark less its steps at the run's mean step
        time) less the restore: ``restore_s``, or ``job_start`` to
        ``checkpoint_restored`` without it. A run's last attempt ended by a
        failure keeps only the steps of its latest checkpoint.
    (b) ``"job attempts + checkpoint times"``: checkpoint save times (no step
        records) and the attempts' spans. Each attempt is assumed to restore
        the latest checkpoint saved before it; the checkpoint interval Δt is
        the median compute time between two saves of one attempt, and an
        attempt's start-up and restore (one number, counted as start-up) is
        its first save's start - its start - Δt. An interrupted attempt's
        work after its last save is lost progress.
    (c) ``"ETTR from scheduler records alone (modelled, assumed checkpoint
        interval X h)"``: attempts only. Each attempt after the first starts
        with ``assumed_restart_h``; each attempt ended by a failure loses
        min(its remaining run time, Δt/2) of work; the rest is compute in
        cycles of Δt and a save of ``assumed_cost_h``. Productive time is
        modelled, not measured.

    The gap between an attempt's end and the next attempt's start is
    ``queue`` from the next attempt's submit time (when ``attempts`` give
    it) and ``recovery`` before. Scheduler attempts are matched to the
    records' attempts by job id and a start within
    :data:`MATCH_TOLERANCE_S`.

    References
    ----------
    .. [1] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine
       Learning Research Clusters", HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096
    .. [2] Google, ml-goodput-measurement,
       https://github.com/AI-Hypercomputer/ml-goodput-measurement
       (``ml_goodput_measurement/tests/goodput_test.py``, 0.0.3 "Fix Goodput
       calculation with disruptions").

    Examples
    --------
    Case C18: steps 0-4 of 3 s, a checkpoint of 2 steps, a failure at 20 s,
    30 s down, a restart that restores 2 steps in 5 s and redoes 2-4:

    >>> from datetime import datetime, timedelta, UTC
    >>> import polars as pl
    >>> t0 = datetime(2025, 8, 1, tzinfo=UTC)
    >>> rows = [(1, 0, "job_start", None), (2, 50, "job_start", None)]
    >>> for a, t, first in ((1, 5, 0), (2, 55, 2)):
    ...     for i in range(first, 5):
    ...         rows += [(a, t, "step_start", i), (a, t + 3, "step_end", i)]
    ...         t += 3
    >>> rows += [(1, 11, "checkpoint_saved", 2), (1, 20, "failure", None)]
    >>> rows += [(2, 55, "checkpoint_restored", 2), (2, 64, "job_end", 5)]
    >>> records = pl.DataFrame(
    ...     {
    ...         "run_id": "run-7",
    ...         "attempt": [r[0] for r in rows],
    ...         "ts": [t0 + timedelta(seconds=r[1]) for r in rows],
    ...         "kind": [r[2] for r in rows],
    ...         "step": [r[3] for r in rows],
    ...     }
    ... )
    >>> g = measure_goodput(records)
    >>> g.runs.select("wall_h", "productive_h", "ettr_frac").row(0)
    (0.017777777777777778, 0.004166666666666667, 0.234375)
    >>> [round(x * 3600, 6) for x in g.attempts["lost_progress_h"]]
    [9.0, 0.0]

    A run with only scheduler records needs an assumed interval:

    >>> att = pl.DataFrame(
    ...     {
    ...         "job_id": "9",
    ...         "start_ts": [t0],
    ...         "end_ts": [t0 + timedelta(hours=2)],
    ...         "state": "COMPLETED",
    ...     }
    ... )
    >>> measure_goodput(None, att)
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: run '9' has no step or checkpoint ...
    """
    notes: list[str] = []
    interval_h = (
        None
        if assumed_interval_h is None
        else _check_hours(assumed_interval_h, "assumed_interval_h", positive=True)
    )
    cost_h = _check_hours(assumed_cost_h, "assumed_cost_h", positive=False)
    restart_h = _check_hours(assumed_restart_h, "assumed_restart_h", positive=False)
    if as_of is not None and (not isinstance(as_of, datetime) or as_of.tzinfo is None):
        msg = (
            f"as_of must be a time-zone-aware datetime; got {as_of!r}. Give "
            "e.g. datetime(2025, 8, 2, tzinfo=UTC)."
        )
        raise InvalidParameterError(msg)
    if run_by is not None and attempts is None:
        msg = (
            f"run_by={run_by!r} groups job attempts, but no attempts were given; "
            "pass them, e.g. measure_goodput(records, build_job_attempts(jobs, "
            "job_nodes), run_by='job_id')."
        )
        raise InvalidParameterError(msg)
    recs = _records(records, notes)
    sched = None if attempts is None else _attempts(attempts)
    if recs.height == 0 and (sched is None or sched.height == 0):
        msg = (
            "measure_goodput: no records and no job attempts to measure; give the "
            "store's checkpoints table (relkit ingest --kind checkpoints) or job "
            "attempts (relkit.jobs.build_job_attempts)."
        )
        raise InvalidParameterError(msg)
    by_records, by_sched = _group_runs(recs, sched, run_by, notes)
    run_ids = sorted(set(by_records) | set(by_sched))
    if run is not None:
        if run not in run_ids:
            msg = (
                f"run {run!r} is not among the {len(run_ids)} run(s) found: "
                f"{run_ids[:20]}" + (" ..." if len(run_ids) > 20 else "") + "."
            )
            raise InvalidParameterError(msg)
        run_ids = [run]
    run_rows: list[dict[str, Any]] = []
    att_rows: list[dict[str, Any]] = []
    modelled = modelled_open = 0
    for run_id in run_ids:
        run_notes: list[str] = []
        out = _measure_run(
            run_id,
            by_records.get(run_id),
            by_sched.get(run_id),
            as_of=as_of,
            interval_h=interval_h,
            cost_h=cost_h,
            restart_h=restart_h,
            notes=run_notes,
        )
        if out is not None:
            res, origin = out
            row, rows = _rows(run_id, res, origin, run_notes)
            run_rows.append(row)
            att_rows.extend(rows)
            if res.evidence.startswith("ETTR from"):
                # one sentence for all modelled runs (a cluster has thousands)
                modelled += 1
                modelled_open += res.is_open
                run_notes = [n for n in run_notes if " is open " not in n]
        notes.extend(run_notes)
    if modelled:
        notes.append(
            f"{modelled} run(s) are modelled from scheduler records alone, not "
            f"measured: each attempt after the first spends {restart_h:g} h "
            "(assumed_restart_h) on start-up and restore, each attempt ended by a "
            f"failure loses min(its run time, {interval_h:g} h / 2) of work, and "
            f"each checkpoint interval of {interval_h:g} h (assumed_interval_h) "
            f"costs {cost_h:g} h (assumed_cost_h)."
            + (
                f" {modelled_open} of them are open: measured up to "
                + ("as_of" if as_of is not None else "their last start + elapsed")
                + "."
                if modelled_open
                else ""
            )
        )
    runs = pl.DataFrame(run_rows, schema=GOODPUT_RUN_SCHEMA, orient="row")
    atts = pl.DataFrame(att_rows, schema=GOODPUT_ATTEMPT_SCHEMA, orient="row")
    return Goodput(
        runs=runs.sort("run_id"),
        attempts=atts.sort("run_id", "start_ts", "attempt"),
        notes=tuple(notes),
    )


def interruption_losses(
    interruptions: pl.DataFrame,
    goodput_attempts: pl.DataFrame,
    *,
    tolerance_s: float = MATCH_TOLERANCE_S,
) -> pl.DataFrame:
    r"""Fill each interruption's GPU-hours really lost, from the run's goodput.

    Parameters
    ----------
    interruptions : pl.DataFrame
        From :func:`relkit.jobs.build_interruptions` (``job_id``, ``end_ts``,
        ``n_gpus``, ``lost_gpu_h``, ``lost_basis``; other columns are kept).
    goodput_attempts : pl.DataFrame
        :attr:`Goodput.attempts` of :func:`measure_goodput` (columns
        :data:`GOODPUT_ATTEMPT_SCHEMA`).
    tolerance_s : float, default 120.0
        How far apart (seconds) an interruption's end and its goodput
        attempt's end may be (:data:`MATCH_TOLERANCE_S`: sacct prints whole
        seconds; the run's log has its own clock). In [0, 86400].

    Returns
    -------
    pl.DataFrame
        ``interruptions`` in its order, with ``lost_gpu_h`` and
        ``lost_basis`` filled where an attempt of the goodput matches (same
        ``job_id``, ``end_ts`` within ``tolerance_s``, the nearest) and left
        null otherwise (no checkpoint or goodput evidence for that job).

    Raises
    ------
    SchemaError
        If a column is missing.
    InvalidParameterError
        If ``tolerance_s`` is out of range.

    Notes
    -----
    .. math:: \mathrm{lost\_gpu\_h} = G \cdot (L + R + Q + S_{next} + V_{next})

    with G the attempt's GPUs (the interruption's ``n_gpus``, else the goodput
    attempt's), L its lost progress (work since the checkpoint the next
    attempt restored, and the step in flight), R + Q the downtime to the next
    attempt's start (recovery and queue), and :math:`S_{next} + V_{next}`
    the next attempt's start-up and restore. ``lost_basis`` says what the
    figure rests on: ``"checkpoint records"`` (step records),
    ``"job attempts + checkpoint times"``, or ``"assumed checkpoint
    interval"`` (modelled). The scheduler numbers attempts per job id while a
    run's log numbers them across the run, so the match is on job id and end
    time, not attempt number. ``lost_gpu_h_upper`` (the whole attempt) is
    left as it is.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> t = lambda h: datetime(2025, 2, 1, h, tzinfo=UTC)
    >>> iv = pl.DataFrame(
    ...     {
    ...         "job_id": ["7"],
    ...         "end_ts": [t(3)],
    ...         "n_gpus": [16],
    ...         "lost_gpu_h": pl.Series([None], dtype=pl.Float64),
    ...         "lost_basis": pl.Series([None], dtype=pl.String),
    ...     }
    ... )
    >>> ga = pl.DataFrame(
    ...     {
    ...         "run_id": "r",
    ...         "job_id": ["7", "7"],
    ...         "start_ts": [t(1), t(4)],
    ...         "end_ts": [t(3), t(6)],
    ...         "n_gpus": 16,
    ...         "lost_progress_h": [0.5, 0.0],
    ...         "recovery_h": [0.75, 0.0],
    ...         "queue_h": [0.25, 0.0],
    ...         "startup_h": [0.1, 0.2],
    ...         "checkpoint_restore_h": [0.0, 0.3],
    ...         "evidence": "step records",
    ...     }
    ... )
    >>> interruption_losses(iv, ga).select("lost_gpu_h", "lost_basis").row(0)
    (32.0, 'checkpoint records')
    """
    require_columns(
        interruptions, ["job_id", "end_ts", "n_gpus"], where="interruption_losses"
    )
    need = [
        "run_id",
        "job_id",
        "start_ts",
        "end_ts",
        "n_gpus",
        "lost_progress_h",
        "recovery_h",
        "queue_h",
        "startup_h",
        "checkpoint_restore_h",
        "evidence",
    ]
    require_columns(goodput_attempts, need, where="interruption_losses")
    if (
        isinstance(tolerance_s, bool)
        or not isinstance(tolerance_s, int | float)
        or not 0 <= tolerance_s <= 86400
    ):
        msg = (
            "tolerance_s must be a number of seconds in [0, 86400]; got "
            f"{tolerance_s!r}."
        )
        raise InvalidParameterError(msg)
    nxt = pl.col("startup_h").shift(-1).over("run_id", order_by="start_ts").fill_null(
        0.0
    ) + pl.col("checkpoint_restore_h").shift(-1).over(
        "run_id", order_by="start_ts"
    ).fill_null(0.0)
    basis = (
        pl.when(pl.col("evidence") == _STEPS)
        .then(pl.lit(LOST_BASIS[_STEPS]))
        .when(pl.col("evidence") == _SAVES)
        .then(pl.lit(LOST_BASIS[_SAVES]))
        .when(pl.col("evidence").str.starts_with("ETTR from"))
        .then(pl.lit(LOST_BASIS["modelled"]))
    )
    losses = goodput_attempts.select(
        "job_id",
        _gend="end_ts",
        _ggpus="n_gpus",
        _hours=pl.col("lost_progress_h")
        + pl.col("recovery_h")
        + pl.col("queue_h")
        + nxt,
        _basis=basis,
    ).filter(pl.col("_gend").is_not_null())
    frame = interruptions.with_row_index("_row")
    tol_us = round(float(tolerance_s) * 1e6)
    pairs = (
        frame.select("_row", "job_id", "end_ts")
        .join(losses, on="job_id", how="inner")
        .with_columns(
            _dist=(pl.col("end_ts") - pl.col("_gend")).dt.total_microseconds().abs()
        )
        .filter(pl.col("_dist") <= tol_us)
        .sort("_row", "_dist")
        .unique("_row", keep="first", maintain_order=True)
        .select("_row", "_ggpus", "_hours", "_basis")
    )
    out = frame.join(pairs, on="_row", how="left")
    gpus = pl.coalesce(
        pl.col("n_gpus").cast(pl.Float64), pl.col("_ggpus").cast(pl.Float64)
    )
    return (
        out.with_columns(
            lost_gpu_h=pl.when(pl.col("_hours").is_not_null())
            .then(gpus * pl.col("_hours"))
            .otherwise(
                pl.col("lost_gpu_h") if "lost_gpu_h" in out.columns else pl.lit(None)
            )
            .cast(pl.Float64),
            lost_basis=pl.when(pl.col("_hours").is_not_null())
            .then(pl.col("_basis"))
            .otherwise(
                pl.col("lost_basis") if "lost_basis" in out.columns else pl.lit(None)
            )
            .cast(pl.String),
        )
        .sort("_row")
        .drop("_row", "_ggpus", "_hours", "_basis")
    )
