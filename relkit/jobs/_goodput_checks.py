"""Checks of one run's records before :func:`relkit.jobs.measure_goodput` parses them.

Logs as they come from clusters: every rank writes every record (copies a
few hundred milliseconds apart), log files are concatenated or shipped twice,
the attempt counter restarts with each job id (torchrun's restart count), a
record is stamped before the job_start of its own attempt (a clock or a
generator gone wrong), steps are numbered from 1 (Megatron's iteration
counter). :func:`prepare_records` folds the copies, keys the attempts by job
id and attempt in the order they started, leaves out the records that
contradict their attempt, and reads the step numbering from the log itself;
everything it assumes or drops is said in ``notes``.
"""

from datetime import datetime
from typing import Any

import numpy as np
import polars as pl

from relkit.errors import InvalidParameterError
from relkit.jobs._goodput_records import instant

__all__ = [
    "DUPLICATE_TOLERANCE_S",
    "Unmeasurable",
    "prepare_records",
    "where",
]

#: Records of one run with the same job id, attempt, kind and step (and a
#: checkpoint's level) this close in time (seconds) are copies of one record
#: (checkpoint records without a step: within 1 s):
#: the ranks of a job that each log it a few hundred milliseconds apart, or a
#: line shipped twice. The earliest is kept. A restarted attempt takes longer
#: than this to come back (Slurm requeues wait for the epilog; torchrun
#: re-creates the process group), and its records carry another attempt or
#: job id anyway, so the same step run again by a later attempt stays apart.
DUPLICATE_TOLERANCE_S = 60.0

#: Checkpoint records without a step say less of which save they are: copies
#: of them must be this close (seconds). Two saves of one attempt a minute
#: apart are real (a periodic save, then a final one at a requeue).
_UNNAMED_COPY_S = 1.0

#: A step_end this close (seconds) to a save's start is the step just before it.
_SAME_INSTANT_S = 1.0

_ENDS = ("failure", "job_end")
_PROGRESS = ("step_start", "step_end")
_KEY = ("job_id", "attempt", "kind", "step", "level")
_NUMBERED = (
    "checkpoint_save_start",
    "checkpoint_saved",
    "checkpoint_restored",
    "job_end",
)


class Unmeasurable(InvalidParameterError):
    """A run whose records cannot be measured as they are (said in the message)."""


def where(frame: pl.DataFrame, origin: datetime, *, limit: int = 5) -> str:
    """Name records by their source lines (else their times), the first ``limit``."""
    rows = frame.sort("_t").head(limit)
    lines = rows["line_no"].to_list() if "line_no" in rows.columns else []
    if lines and all(x is not None for x in lines):
        sources = (
            rows["source_id"].drop_nulls().unique().to_list()
            if "source_id" in rows.columns
            else []
        )
        text = ("line " if len(lines) == 1 else "lines ") + ", ".join(
            str(x) for x in lines
        )
        if len(sources) == 1:
            text += f" of source {sources[0]}"
    else:
        stamps = [instant(origin, float(t)) for t in rows["_t"]]
        text = "records at " + ", ".join(f"{t:%Y-%m-%d %H:%M:%S} UTC" for t in stamps)
    return text + (" ..." if frame.height > limit else "")


def span_text(seconds: float) -> str:
    """Say a duration in the unit that reads best: s, min or h."""
    if abs(seconds) < 120:
        return f"{seconds:.3g} s"
    if abs(seconds) < 7200:
        return f"{seconds / 60:.3g} min"
    return f"{seconds / 3600:.4g} h"


def _number_attempts(recs: pl.DataFrame, tol_s: float) -> pl.DataFrame:
    """Attempt numbers from job_start records, for records without them.

    A job_start opens the next attempt, unless it comes within ``tol_s`` of
    the previous one with no failure or job_end between (a copy of it).
    """
    kinds = recs["kind"].to_list()
    times = recs["_t"].to_numpy()
    numbers = np.zeros(len(kinds), dtype=np.int64)
    k = 0
    last_start: float | None = None
    ended = False
    for i, (kind, t) in enumerate(zip(kinds, times, strict=True)):
        if kind == "job_start":
            copy = last_start is not None and not ended and t - last_start <= tol_s
            if not copy:
                k += 1
                last_start = float(t)
                ended = False
        elif kind in _ENDS:
            ended = True
        numbers[i] = max(k, 1)
    return recs.with_columns(attempt=pl.Series(numbers))


def _fold(recs: pl.DataFrame, tol_s: float) -> tuple[pl.DataFrame, int]:
    """Keep the earliest of each group of copies; return the records and copies."""
    key = list(_KEY)
    ordered = recs.with_row_index("_row").sort([*key, "_t", "_row"], nulls_last=True)
    new = pl.any_horizontal(
        [pl.col(c).ne_missing(pl.col(c).shift(1)).fill_null(value=True) for c in key]
    )
    g = ordered.select(new.cast(pl.Int64).cum_sum()).to_series().to_numpy()
    t = ordered["_t"].to_numpy()
    named = (
        ordered["step"].is_not_null() | ordered["kind"].is_in(["job_start", *_ENDS])
    ).to_numpy()
    tol = np.where(named, tol_s, min(tol_s, _UNNAMED_COPY_S))
    sizes = np.bincount(g)
    copy = np.zeros(t.size, dtype=bool)
    anchor_g, anchor_t = -1, 0.0
    for i in np.flatnonzero(sizes[g] > 1):
        if g[i] != anchor_g or t[i] - anchor_t > tol[i]:
            anchor_g, anchor_t = int(g[i]), float(t[i])
        else:
            copy[i] = True
    if not copy.any():
        return recs, 0
    kept = ordered.filter(pl.Series(~copy)).sort("_row").drop("_row")
    return kept, int(copy.sum())


def _key_attempts(recs: pl.DataFrame, run_id: str, notes: list[str]) -> pl.DataFrame:
    """Give each record ``_akey``: its attempt by (job id, attempt), 1..n by start.

    Records without a job id take the one of the records before them (else
    after them) with the same attempt number, in time order.
    """
    recs = recs.sort("_t", "_order").with_columns(
        job_id=pl.col("job_id").forward_fill().backward_fill().over("attempt")
    )
    starts = (
        recs.group_by("job_id", "attempt")
        .agg(
            _start=pl.col("_t").filter(pl.col("kind") == "job_start").min(),
            _first=pl.col("_t").min(),
        )
        .with_columns(_start=pl.coalesce("_start", "_first"))
        .sort("_start", "attempt", "job_id", nulls_last=True)
        .with_columns(
            _akey=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),
            _number=pl.col("attempt"),
        )
    )
    repeated = starts.filter(pl.col("attempt").is_duplicated())
    if repeated.height:
        numbers = sorted(repeated["attempt"].unique().to_list())
        jobs = sorted(repeated["job_id"].drop_nulls().unique().to_list())
        notes.append(
            f"Run {run_id}: attempt number(s) {numbers[:5]} repeat under job ids "
            f"{jobs[:5]} (a counter that restarts with each job, as torchrun's "
            f"restart count does); its {starts.height} attempts are told apart by "
            "job id and attempt, taken in the order they started, and numbered "
            f"1-{starts.height}."
        )
        starts = starts.with_columns(_number=pl.col("_akey"))
    return (
        recs.join(
            starts.select("job_id", "attempt", "_akey", "_number"),
            on=["job_id", "attempt"],
            how="left",
            nulls_equal=True,
        )
        .with_columns(attempt=pl.col("_number"))
        .drop("_number")
    )


def _drop_contradictions(
    recs: pl.DataFrame, run_id: str, origin: datetime, notes: list[str]
) -> pl.DataFrame:
    """Leave out records stamped before their attempt's job_start or after its end.

    The end is the attempt's first failure or job_end record not itself
    stamped before its job_start.
    """
    start = pl.col("_t").filter(pl.col("kind") == "job_start").min().over("_akey")
    flagged = recs.with_columns(
        _early=(pl.col("_t") < start).fill_null(value=False), _begin=start
    )
    early = flagged.filter("_early")
    if early.height:
        first = early.sort("_t").row(0, named=True)
        ahead = span_text(first["_begin"] - first["_t"])
        began = instant(origin, first["_begin"])
        notes.append(
            f"Run {run_id}: {early.height} record(s) are stamped before the "
            "job_start of their own attempt and were left out of the measurement "
            f"({where(early, origin)}; the first, a {first['kind']} of attempt "
            f"{first['attempt']}, is {ahead} before that attempt's job_start "
            f"at {began:%Y-%m-%d %H:%M:%S} UTC)."
        )
        recs = flagged.filter(~pl.col("_early")).drop("_early", "_begin")
    end = pl.col("_t").filter(pl.col("kind").is_in(_ENDS)).min().over("_akey")
    late = ((pl.col("_t") > end) & ~pl.col("kind").is_in(_ENDS)).fill_null(value=False)
    dropped = recs.filter(late)
    if dropped.height:
        notes.append(
            f"Run {run_id}: {dropped.height} record(s) are stamped after the "
            "failure or job_end that ends their own attempt and were left out of "
            f"the measurement ({where(dropped, origin)})."
        )
        recs = recs.filter(~late)
    return recs


def _votes(recs: pl.DataFrame) -> tuple[list[str], list[str]]:
    """Tell what the records say of their step numbering: from 1, from 0.

    Returns one example sentence per record that shows steps counted from 1,
    and per record that shows them counted from 0.
    """
    one: list[str] = []
    zero: list[str] = []
    progress = recs.filter(
        pl.col("kind").is_in(_PROGRESS) & pl.col("step").is_not_null()
    )
    if progress.height == 0:
        return one, zero
    if (progress["step"] == 0).any():
        zero.append("a step_start or step_end of step 0")
    ordered = recs.sort("_t", "_order")
    cols = ordered.select("_akey", "kind", "step", "_t", "save_s")
    akey, kinds, steps, times, save_s = (cols[c].to_list() for c in cols.columns)
    groups: dict[Any, list[int]] = {}  # each attempt's rows, in first-seen order
    for i, key in enumerate(akey):
        groups.setdefault(key, []).append(i)
    progress_kinds, numbered = set(_PROGRESS), set(_NUMBERED)
    for rows in groups.values():
        prog = [i for i in rows if kinds[i] in progress_kinds and steps[i] is not None]
        if not prog:
            continue
        p_t = np.asarray([times[i] for i in prog], dtype=float)
        p_kind = [kinds[i] for i in prog]
        p_step = [steps[i] for i in prog]
        for i in rows:
            if kinds[i] not in numbered or steps[i] is None:
                continue
            c, kind, t = int(steps[i]), kinds[i], float(times[i])
            if kind == "checkpoint_restored":
                j = int(np.searchsorted(p_t, t - 1e-9, side="left"))
                if j >= len(p_kind) or p_kind[j] != "step_start":
                    continue
                if p_step[j] == c + 1:
                    one.append(
                        f"the first step_start after restoring {c} steps is {c + 1}"
                    )
                elif p_step[j] == c:
                    zero.append(
                        f"the first step_start after restoring {c} steps is {c}"
                    )
                continue
            at = t
            if kind == "checkpoint_saved" and save_s[i] is not None:
                at = t - float(save_s[i])
            j = int(np.searchsorted(p_t, at + 1e-9, side="right")) - 1
            if j < 0 or p_kind[j] != "step_end":
                continue
            what = "job_end of" if kind == "job_end" else "checkpoint of"
            if kind != "job_end" and at - p_t[j] > _SAME_INSTANT_S:
                continue
            if p_step[j] == c:
                one.append(f"a {what} {c} steps right after step_end {c}")
            elif p_step[j] == c - 1:
                zero.append(f"a {what} {c} steps right after step_end {c - 1}")
    return one, zero


def _step_numbering(recs: pl.DataFrame, run_id: str, notes: list[str]) -> pl.DataFrame:
    """Read step indices as 0-based, or as 1-based where the log shows it."""
    one, zero = _votes(recs)
    if not one:
        return recs
    if zero:
        msg = (
            f"Run {run_id}: not measured: its step numbering contradicts itself: "
            f"{len(one)} record(s) count steps from 1 ({one[0]}) and {len(zero)} "
            f"from 0 ({zero[0]}). step_start and step_end must carry the 0-based "
            "index of the step, checkpoints and job_end the steps done; fix the "
            "log's step fields and ingest it again (relkit ingest --kind "
            "checkpoints)."
        )
        raise Unmeasurable(msg)
    notes.append(
        f"Run {run_id}: its step_start and step_end indices count from 1 (as "
        f"Megatron's iteration counter does), as its own records show ({one[0]}"
        + (f"; {len(one)} such records" if len(one) > 1 else "")
        + "): they are taken as 1-based and lowered by 1 to the 0-based index "
        "the measurement reads."
    )
    return recs.with_columns(
        step=pl.when(pl.col("kind").is_in(_PROGRESS))
        .then(pl.col("step") - 1)
        .otherwise(pl.col("step"))
    )


def prepare_records(
    recs: pl.DataFrame,
    run_id: str,
    origin: datetime,
    notes: list[str],
    *,
    tol_s: float = DUPLICATE_TOLERANCE_S,
) -> pl.DataFrame:
    """Fold copies, key attempts, drop contradictions, read the step numbering.

    ``recs`` are one run's records with ``_t`` (seconds since ``origin``) and
    ``_order``. Returns them sorted by time with ``attempt`` (the records'
    number, else counted from job_start records, else 1..n in start order when
    numbers repeat across job ids) and ``_akey`` (1..n in start order).

    Raises
    ------
    Unmeasurable
        If the step numbering contradicts itself.
    """
    recs = recs.sort("_t", "_order")
    if recs["attempt"].null_count():
        recs = _number_attempts(recs, tol_s)
        if recs["kind"].is_in(["job_start", *_PROGRESS]).any():
            notes.append(
                f"Run {run_id}: records without attempt numbers; attempts are "
                "counted from its job_start records in time order (a job_start "
                f"within {tol_s:g} s of the previous one with no failure or "
                "job_end between is a copy of it)."
            )
    recs, n_copies = _fold(recs, tol_s)
    if n_copies:
        notes.append(
            f"Run {run_id}: {n_copies} record(s) repeat an earlier record of the "
            "same job id, attempt, kind and step (and level, for checkpoints) "
            f"within {tol_s:g} s, or a checkpoint record without a step within "
            f"{_UNNAMED_COPY_S:g} s (the ranks of a job each logging it, or lines "
            "shipped twice), and were folded into it: each is counted once, at "
            "its earliest time."
        )
    recs = _key_attempts(recs, run_id, notes)
    recs = _drop_contradictions(recs, run_id, origin, notes)
    recs = _step_numbering(recs, run_id, notes)
    return recs.sort("_t", "_order")
