"""Records of :func:`relkit.jobs.measure_goodput`: a run's log, parsed by attempt.

:func:`normalise_records` checks and completes the store's ``checkpoints``
records; :func:`record_attempts` parses one run's records into its attempts
(spans, progress marks, saves, restores) for
:mod:`relkit.jobs._goodput_account`.
"""

import math
from collections import Counter
from datetime import datetime, timedelta

import numpy as np
import polars as pl

from relkit.errors import SchemaError
from relkit.jobs._goodput_account import INTERRUPTED, RecordAttempt, Span
from relkit.schema import CHECKPOINT_KINDS, UTC, require_columns
from relkit.taxonomy import STATE_CAUSE

__all__ = [
    "INTERRUPTED",
    "RECORD_KINDS",
    "STOP_STATES",
    "end_kind",
    "instant",
    "normalise_records",
    "record_attempts",
    "saves",
    "seconds",
]

#: ``kind`` values of the store's ``checkpoints`` records.
RECORD_KINDS = CHECKPOINT_KINDS

#: job_end statuses that end an attempt in order (anything else is a failure).
_CLEAN_END = ("COMPLETED", "REQUEUED", "SUCCEEDED", "SUCCESS", "DONE", "OK")

#: Scheduler states that stop a job without a failure (time limit, preemption,
#: cancellation): :data:`relkit.taxonomy.STATE_CAUSE` kind ``not_failure``.
STOP_STATES = tuple(s for s, (_, kind) in STATE_CAUSE.items() if kind == "not_failure")


def end_kind(kind: str, status: str | None) -> str:
    """Tell how a record ends its attempt: ``job_end``, ``stopped`` or ``failure``.

    A ``job_end`` without a status or with a clean one (``COMPLETED``, a
    deliberate ``REQUEUED``) is ``job_end``; a ``job_end`` or ``failure`` whose
    status is a state of :data:`STOP_STATES` (``TIMEOUT``, ``PREEMPTED``,
    ``CANCELLED``, ``DEADLINE``, ``REVOKED``; ``CANCELLED by 123`` too) is
    ``stopped``; anything else is ``failure``.
    """
    words = (status or "").strip().upper().split()
    word = words[0] if words else ""
    if kind == "job_end" and (not word or word in _CLEAN_END):
        return "job_end"
    if word in STOP_STATES:
        return "stopped"
    return "failure"


_RECORD_OPTIONAL: dict[str, pl.DataType] = {
    "job_id": pl.String(),
    "attempt": pl.Int64(),
    "step": pl.Int64(),
    "save_s": pl.Float64(),
    "restore_s": pl.Float64(),
    "n_gpus": pl.Int64(),
    "status": pl.String(),
    "level": pl.String(),
}


def normalise_records(records: pl.DataFrame | None, notes: list[str]) -> pl.DataFrame:
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
            f"Datetime (UTC); it is {dtype}. Ingest the log (relkit ingest --kind "
            "checkpoints, or relkit.ingest.read_file(store, path, "
            "kind='checkpoints')) and measure the store's checkpoints table, or "
            "convert the column, e.g. pl.col('ts').dt.replace_time_zone('UTC')."
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


def seconds(col: str, origin: datetime) -> pl.Expr:
    return (pl.col(col) - pl.lit(origin, dtype=UTC)).dt.total_microseconds().cast(
        pl.Float64
    ) / 1e6


def instant(origin: datetime, s: float | None) -> datetime | None:
    if s is None or not math.isfinite(s):
        return None
    return origin + timedelta(microseconds=round(s * 1e6))


def saves(
    frame: pl.DataFrame,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Blocking save intervals of checkpoint_saved records (sorted, disjoint).

    ``frame`` has ``_t`` (seconds) and ``kind``, ``save_s``, ``step``. A save
    without ``save_s`` takes its time from the checkpoint_save_start record
    before it (after the previous save), else 0 s: the last array flags those.
    """
    saved = frame.filter(pl.col("kind") == "checkpoint_saved").sort("_t")
    starts = frame.filter(pl.col("kind") == "checkpoint_save_start")["_t"]
    return _save_intervals(
        saved["_t"].to_numpy().astype(float),
        saved["save_s"].to_numpy().astype(float),
        saved["step"].fill_null(-1).to_numpy().astype(np.int64),
        starts.to_numpy().astype(float),
    )


def _save_intervals(
    e: np.ndarray, dur: np.ndarray, steps: np.ndarray, save_starts: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`saves` on arrays: ends, durations (NaN: unknown), steps, starts."""
    dur = dur.copy()
    unknown = np.isnan(dur)
    if unknown.any() and save_starts.size:
        st = np.sort(save_starts)
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


def _float(values: list) -> np.ndarray:
    """Floats of a list with None as NaN."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def record_attempts(
    recs: pl.DataFrame, run_id: str, notes: list[str]
) -> list[tuple[RecordAttempt, pl.DataFrame]]:
    """Parse a run's records into attempts (in order), ends not yet decided.

    ``recs`` come from :func:`relkit.jobs._goodput_checks.prepare_records`
    (``_akey``: the attempt, 1..n in start order; ``attempt``: its number).
    """
    said: Counter[str] = Counter()
    recs = recs.sort("_t", "_order")
    groups = recs.partition_by("_akey", as_dict=True, maintain_order=True)
    ordered = sorted(groups.items(), key=lambda kv: kv[0][0])
    out = []
    for _, g in ordered:
        # the group's columns once, as arrays and lists (rows in time order)
        kinds = g["kind"].to_numpy()
        t = g["_t"].to_numpy().astype(float)
        step = g["step"].to_list()
        has_step = np.array([v is not None for v in step], dtype=bool)
        gpus_all, job_ids = g["n_gpus"].to_list(), g["job_id"].to_list()
        status, restore_s = g["status"].to_list(), g["restore_s"].to_list()
        save_s = g["save_s"].to_list()
        number = g["attempt"][0]

        def where(kind: str, kinds: np.ndarray = kinds) -> np.ndarray:
            return np.flatnonzero(kinds == kind)

        start_rows = where("job_start")
        if start_rows.size:
            start = float(t[start_rows[0]])
            gpus = [gpus_all[i] for i in start_rows if gpus_all[i] is not None]
        else:
            start = float(t.min())
            gpus = [v for v in gpus_all if v is not None]
            said["no_start"] += 1
        ends = np.flatnonzero((kinds == "failure") | (kinds == "job_end"))
        end: float | None = None
        ended_by = "open"
        final_n = None
        if ends.size:
            i = ends[0]
            end = float(t[i])
            ended_by = end_kind(kinds[i], status[i])
        finals = [step[i] for i in where("job_end") if step[i] is not None]
        if finals:
            final_n = int(finals[0])
        known_ids = [v for v in job_ids if v is not None]
        span = Span(
            attempt=int(number),
            job_id=known_ids[0] if known_ids else None,
            start=start,
            end=end,
            ended_by=ended_by,
            n_gpus=int(gpus[0]) if gpus else None,
        )
        att = RecordAttempt(span=span, last_record=float(t.max()), final_n=final_n)
        restored = where("checkpoint_restored")
        if restored.size:
            i = restored[0]
            att.restore_t = float(t[i])
            att.restore_dur = restore_s[i]
            att.restored = step[i]
        starts = np.flatnonzero((kinds == "step_start") & has_step)
        if starts.size:
            att.step_start_t = float(t[starts[0]])
            att.step_start_i = int(step[starts[0]])
        ends_ = np.flatnonzero((kinds == "step_end") & has_step)
        saved = where("checkpoint_saved")  # in time order, as saves() sorts them
        s, e, steps, unknown = _save_intervals(
            t[saved],
            _float([save_s[i] for i in saved]),
            np.array(
                [-1 if step[i] is None else step[i] for i in saved], dtype=np.int64
            ),
            t[where("checkpoint_save_start")],
        )
        said["save_unknown"] += int(unknown.sum())
        known = steps >= 0
        mark_t = np.concatenate([t[starts], t[ends_], s[known], e[known]])
        mark_n = np.concatenate(
            [
                np.array([step[i] for i in starts], dtype=np.int64),
                np.array([step[i] for i in ends_], dtype=np.int64) + 1,
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
