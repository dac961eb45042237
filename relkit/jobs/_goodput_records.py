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
        number = g["attempt"][0]
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
            ended_by = end_kind(first["kind"], first["status"])
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
        s, e, steps, unknown = saves(g)
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
