"""Per-attempt time accounting of a run for :func:`relkit.jobs.measure_goodput`.

Each function takes one run's attempts, already parsed into plain Python and
numpy values (seconds since the run's origin), and returns one
:class:`Account` per attempt: how each second of the attempt, and of the gap
after it, was spent. Two levels of evidence:

- :func:`account_steps`: step and checkpoint records (``step_start``,
  ``step_end``, ``checkpoint_saved``, ``checkpoint_restored``);
- :func:`account_saves`: attempt spans plus checkpoint save times only.

(Attempt spans alone, modelled with an assumed interval, are
:mod:`relkit.jobs._goodput_model`.)

Every second of an attempt lands in exactly one category, and every second of
the gap before the next attempt in ``recovery`` or ``queue``, so the
categories sum to the run's wall time minus its productive time.
"""

import bisect
import itertools
import math
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

__all__ = [
    "INTERRUPTED",
    "Account",
    "RecordAttempt",
    "Span",
    "account_saves",
    "account_steps",
    "split_gaps",
]


#: ``ended_by`` values of attempts that lose the work after their last
#: checkpoint: a failure, or a stop that is not one (time limit, preemption,
#: cancellation).
INTERRUPTED = ("failure", "stopped")


@dataclass
class Span:
    """One attempt's span: when it ran and how it ended (seconds since origin).

    ``end`` is None while the attempt is open; ``running_until`` is the last
    instant a record shows it running (an open attempt's last record, or the
    scheduler's start + elapsed).
    """

    attempt: int
    job_id: str | None
    start: float
    end: float | None
    ended_by: str
    submit: float | None = None
    n_gpus: int | None = None
    running_until: float | None = None


@dataclass
class RecordAttempt:
    """One attempt's step and checkpoint records, parsed (seconds since origin).

    ``mark_t``/``mark_n``: progress marks, "``n`` steps done at ``t``" (a
    ``step_end`` of index i is i + 1 steps done, a ``step_start`` of index i
    is i, a checkpoint holding c steps is c at its save's start and end).
    ``save_s``/``save_e``: blocking save intervals, sorted and disjoint.
    """

    span: Span
    last_record: float
    restore_t: float | None = None
    restore_dur: float | None = None
    restored: int | None = None
    step_start_t: float | None = None
    step_start_i: int | None = None
    mark_t: np.ndarray = field(default_factory=lambda: np.zeros(0))
    mark_n: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    save_s: np.ndarray = field(default_factory=lambda: np.zeros(0))
    save_e: np.ndarray = field(default_factory=lambda: np.zeros(0))
    save_steps: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    final_n: int | None = None


@dataclass
class Account:
    """Seconds of one attempt by category, and of the gap after it."""

    span: Span
    productive: float = 0.0
    startup: float = 0.0
    restore: float = 0.0
    save: float = 0.0
    lost: float = 0.0
    recovery: float = 0.0
    queue: float = 0.0
    other: float = 0.0
    last_checkpoint: float | None = None
    restored_step: int | None = None
    end_dt: datetime | None = None


def split_gaps(accounts: list[Account]) -> None:
    """Charge the gap after each attempt to ``queue`` and ``recovery``.

    The gap from an attempt's end to the next attempt's start is ``queue`` for
    the part after the next attempt's submit time (when known), the rest
    ``recovery``.
    """
    for cur, nxt in itertools.pairwise(accounts):
        end = cur.span.end if cur.span.end is not None else cur.span.start
        gap = max(nxt.span.start - end, 0.0)
        queue = 0.0
        if nxt.span.submit is not None:
            queue = min(max(nxt.span.start - nxt.span.submit, 0.0), gap)
        cur.queue = queue
        cur.recovery = gap - queue


def _save_curve(starts: np.ndarray, ends: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Cumulative blocking save time up to each instant of ``t``.

    ``starts``/``ends`` are sorted, disjoint save intervals.
    """
    if starts.size == 0:
        return np.zeros_like(t, dtype=float)
    lengths = ends - starts
    before = np.concatenate([[0.0], np.cumsum(lengths)])
    i = np.searchsorted(starts, t, side="right") - 1
    inside = np.clip(t - starts[np.maximum(i, 0)], 0.0, lengths[np.maximum(i, 0)])
    return np.where(i >= 0, before[np.maximum(i, 0)] + inside, 0.0)


def _segments(
    t: np.ndarray, n: np.ndarray, starts: np.ndarray, ends: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Save time, compute time and steps done between consecutive marks."""
    cum = _save_curve(starts, ends, t)
    saved = np.diff(cum)
    compute = np.diff(t) - saved
    return saved, np.maximum(compute, 0.0), np.diff(n)


def _first_mark_is_step_start(a: RecordAttempt) -> bool:
    return (
        a.step_start_t is not None
        and a.mark_t.size > 0
        and a.step_start_t <= float(a.mark_t[0])
    )


def _real_start(a: RecordAttempt) -> float | None:
    """Return the instant compute started when a record shows it, else None."""
    if _first_mark_is_step_start(a):
        return a.step_start_t
    if a.restore_t is not None and (a.mark_t.size == 0 or a.restore_t <= a.mark_t[0]):
        return a.restore_t
    return None


def _step_time(attempts: list[RecordAttempt], starts: list[int | None]) -> float | None:
    """Mean compute time per step over the segments between observed marks."""
    compute = steps = 0.0
    for a, r in zip(attempts, starts, strict=True):
        t, n = a.mark_t, a.mark_n
        c0 = _real_start(a)
        if c0 is not None and r is not None:
            t = np.concatenate([[c0], t])
            n = np.concatenate([[r], n])
        if t.size < 2:
            continue
        n = np.maximum.accumulate(n)
        _, comp, dn = _segments(t, n, a.save_s, a.save_e)
        moving = dn > 0
        compute += float(comp[moving].sum())
        steps += float(dn[moving].sum())
    return compute / steps if steps > 0 else None


def account_steps(
    attempts: list[RecordAttempt],
    *,
    run_id: str,
    notes: list[str],
) -> tuple[list[Account], float | None]:
    """Account each attempt's time from its step and checkpoint records.

    Parameters
    ----------
    attempts : list of RecordAttempt
        The run's attempts in order, their spans' ends already decided
        (an open attempt's ``end`` is the run's end).
    run_id : str
        For the notes.
    notes : list of str
        Sentences about assumptions are appended.

    Returns
    -------
    accounts : list of Account
        One per attempt, gaps not yet split (:func:`split_gaps`).
    step_time_s : float or None
        Mean compute time per step (None without two marks).
    """
    said: Counter[str] = Counter()
    example: dict[str, str] = {}
    # steps each attempt starts from (None: it ran no step)
    starts: list[int | None] = []
    # steps of the saves before the attempt: sorted, and as a set
    saved_before: list[int] = []
    saved_set: set[int] = set()
    untold = 0  # saves before the attempt whose steps are not recorded
    for k, a in enumerate(attempts):
        if a.restored is not None:
            r: int | None = a.restored
            num = a.span.attempt
            if not untold and saved_before and a.restored < saved_before[-1]:
                said["older"] += 1
                example.setdefault(
                    "older",
                    f"attempt {num} restored {a.restored} steps while a checkpoint "
                    f"of {saved_before[-1]} had been saved",
                )
            if not untold and a.restored > 0 and a.restored not in saved_set:
                said["unsaved"] += 1
                if "unsaved" not in example:
                    example["unsaved"] = (
                        f"attempt {num} restored {a.restored} steps; the log's saves "
                        f"before it hold {sorted(saved_set)[-5:] or 'none'}"
                    )
        elif _first_mark_is_step_start(a):
            r = a.step_start_i
        elif a.mark_t.size == 0:
            r = None
        elif k == 0:
            r = 0
        else:
            first_n = int(a.mark_n[0])
            i = bisect.bisect_right(saved_before, first_n)
            r = saved_before[i - 1] if i else 0
            said["guess_restore"] += 1
        starts.append(r)
        new = [int(c) for c in a.save_steps if c >= 0]
        for c in new:  # usually past the last one: an append
            if not saved_before or c >= saved_before[-1]:
                saved_before.append(c)
            else:
                bisect.insort(saved_before, c)
        saved_set.update(new)
        untold += int((a.save_steps < 0).sum())
    # the smallest start of the attempts after each one (None: none after it)
    later_min: list[int | None] = [None] * len(starts)
    lowest: int | None = None
    for k in range(len(starts) - 1, -1, -1):
        later_min[k] = lowest
        if starts[k] is not None:
            lowest = starts[k] if lowest is None else min(lowest, starts[k])  # type: ignore[type-var]
    tau = _step_time(attempts, starts)
    accounts = []
    for k, a in enumerate(attempts):
        sp = a.span
        end = sp.end if sp.end is not None else a.last_record
        r = starts[k]
        if later_min[k] is not None:
            keep_below = float(later_min[k])  # type: ignore[arg-type]
        elif sp.ended_by in INTERRUPTED:
            held = [c for c in a.save_steps.tolist() if c >= 0]
            keep_below = float(max([r or 0, *held]))
            said["last_failed"] += 1
        else:
            keep_below = math.inf
        acc = Account(span=sp, restored_step=a.restored)
        if a.save_e.size:
            acc.last_checkpoint = float(a.save_e[-1])
        t, n = a.mark_t, a.mark_n
        past = t > end
        if past.any():
            said["after_end"] += int(past.sum())
            t, n = t[~past], n[~past]
        c0 = _real_start(a)
        if r is None or t.size == 0:
            # no step ran: start-up (and restore) until the end, or for an open
            # attempt until its last record (after which nothing is known)
            seen = a.last_record if sp.ended_by == "open" else end
            c0 = min(a.restore_t if a.restore_t is not None else seen, end)
            t = np.zeros(0)
            n = np.zeros(0, dtype=np.int64)
        elif c0 is None:
            if tau is None:
                c0 = sp.start
                said["no_step_time"] += 1
            else:
                c0 = float(t[0]) - (int(n[0]) - r) * tau
                said["extrapolated"] += 1
        c0 = min(max(c0, sp.start), end)
        if t.size:
            keep = t >= c0
            t = np.concatenate([[c0], t[keep]])
            n = np.concatenate([[r], n[keep]])
            if (np.diff(n) < 0).any():
                said["backwards"] += int((np.diff(n) < 0).sum())
            n = np.maximum.accumulate(n)
            saved, comp, dn = _segments(t, n, a.save_s, a.save_e)
            moving = dn > 0
            kept_steps = np.clip(keep_below - n[:-1], 0.0, dn)
            frac = np.where(moving, kept_steps / np.where(moving, dn, 1), 0.0)
            acc.save = float(saved.sum())
            acc.productive = float((comp * frac)[moving].sum())
            acc.lost = float((comp * (1.0 - frac))[moving].sum())
            acc.other = float(comp[~moving].sum())
            last_t, last_n = float(t[-1]), int(n[-1])
        else:
            last_t, last_n = c0, r or 0
        tail = end - last_t
        running = sp.running_until
        if sp.ended_by in INTERRUPTED:
            acc.lost += tail
        elif (
            sp.ended_by == "open"
            and t.size
            and running is not None
            and running > a.last_record
        ):
            # the scheduler shows the attempt running after its last record:
            # compute whose progress records are not written yet
            known = max(a.last_record, last_t)
            work = max(min(running, end) - known, 0.0)
            acc.productive += work
            acc.other += tail - work
        elif sp.ended_by == "job_end" and a.final_n is not None and a.final_n > last_n:
            # steps the job_end says were done after the last mark
            if tau is None:
                work = tail
                said["untimed_final"] += 1
            else:
                work = min(tail, (a.final_n - last_n) * tau)
            kept = min(max(keep_below - last_n, 0.0), a.final_n - last_n)
            share = kept / (a.final_n - last_n)
            acc.productive += work * share
            acc.lost += work * (1.0 - share)
            acc.other += tail - work
        else:
            acc.other += tail
        pre = c0 - sp.start
        if a.restore_dur is not None:
            restore = a.restore_dur
        elif a.restore_t is not None:
            restore = a.restore_t - sp.start
        else:
            restore = 0.0
        if a.restore_dur is not None and (restore < 0 or restore > pre + 1e-6):
            key = "restore_negative" if restore < 0 else "restore_long"
            said[key] += 1
            example.setdefault(
                key,
                f"attempt {sp.attempt}: restore_s {restore:g} s, "
                f"{pre:g} s from its start to its first step",
            )
        acc.restore = min(max(restore, 0.0), pre)
        acc.startup = pre - acc.restore
        accounts.append(acc)
    if said["guess_restore"]:
        notes.append(
            f"Run {run_id}: {said['guess_restore']} attempt(s) after the first have "
            "no checkpoint_restored or step_start record; each is taken to have "
            "restored the latest checkpoint saved before it that its first "
            "progress record allows."
        )
    if said["extrapolated"]:
        notes.append(
            f"Run {run_id}: {said['extrapolated']} attempt(s) have no "
            "checkpoint_restored or step_start record to say when their first "
            "step started; it is placed before their first progress record by "
            f"the run's mean step time ({tau:.6g} s per step), the time before "
            "it counted as start-up."
        )
    if said["no_step_time"]:
        notes.append(
            f"Run {run_id}: {said['no_step_time']} attempt(s) give no instant for "
            "their first step and the run has too few progress records for a "
            "step time; their steps are taken to start at the attempt's start "
            "(no start-up time)."
        )
    if said["untimed_final"]:
        notes.append(
            f"Run {run_id}: {said['untimed_final']} attempt(s) end (job_end) with "
            "more steps done than their last progress record shows, and the run's "
            "records give no step time; the time from that record to the job_end "
            "is counted as those steps."
        )
    if said["backwards"]:
        notes.append(
            f"Run {run_id}: {said['backwards']} progress record(s) within an "
            "attempt show fewer steps done than an earlier record; the larger "
            "count is kept (check the step numbering: step_start/step_end carry "
            "the 0-based index of the step, checkpoints the steps they hold)."
        )
    if said["after_end"]:
        notes.append(
            f"Run {run_id}: {said['after_end']} progress record(s) are later than "
            "the end of their attempt and were left out."
        )
    if said["last_failed"]:
        notes.append(
            f"Run {run_id}: its last attempt ended by a failure or a stop and no "
            "later attempt is in the records; its steps past its latest checkpoint "
            "count as lost progress (a restart would redo them)."
        )
    if said["older"]:
        notes.append(
            f"Run {run_id}: {said['older']} attempt(s) restored an older checkpoint "
            f"than the latest saved before them ({example['older']}); the later "
            "checkpoint is taken to be lost or corrupt (or of a faster level lost "
            "with its node), and the work after the restored step counts as lost "
            "progress."
        )
    if said["unsaved"]:
        notes.append(
            f"Run {run_id}: {said['unsaved']} attempt(s) restored a checkpoint that "
            f"no checkpoint_saved record of the log holds ({example['unsaved']}); "
            "the restored step is taken as the record gives it (a checkpoint "
            "saved before the log begins, or a save record missing)."
        )
    if said["restore_long"]:
        notes.append(
            f"Run {run_id}: {said['restore_long']} attempt(s) give a restore_s "
            "longer than the time from their start to their first step "
            f"({example['restore_long']}); the restore is taken as all of that "
            "time, with no start-up."
        )
    if said["restore_negative"]:
        notes.append(
            f"Run {run_id}: {said['restore_negative']} attempt(s) give a negative "
            f"restore_s ({example['restore_negative']}); it is taken as 0 s, the "
            "time before their first step counted as start-up."
        )
    return accounts, tau


def _assign_saves(
    spans: list[Span], s: np.ndarray, e: np.ndarray, ends: np.ndarray, tol_s: float
) -> np.ndarray:
    """Index of the attempt each save belongs to (-1 for none)."""
    starts = np.array([sp.start for sp in spans])
    i = np.searchsorted(starts, s, side="right") - 1
    ok = (i >= 0) & (e <= ends[np.maximum(i, 0)] + tol_s)
    return np.where(ok, i, -1)


def account_saves(
    spans: list[Span],
    save_start: np.ndarray,
    save_end: np.ndarray,
    save_steps: np.ndarray,
    *,
    run_id: str,
    interval_s: float | None,
    tol_s: float,
    notes: list[str],
) -> tuple[list[Account], float | None, int, bool]:
    """Account each attempt's time from its span and its checkpoint save times.

    Parameters
    ----------
    spans : list of Span
        The run's attempts in start order, every ``end`` decided (an open
        attempt's is the run's end; its ``running_until`` the last instant a
        record shows it running).
    save_start, save_end : np.ndarray
        Each save's blocking interval (seconds since origin), sorted by end.
    save_steps : np.ndarray
        Steps each checkpoint holds, -1 where unknown.
    run_id : str
        For the notes.
    interval_s : float or None
        Checkpoint interval to use when the saves give none (assumed).
    tol_s : float
        How far past its attempt's recorded end a save may end (clock and
        rounding of the scheduler's times).
    notes : list of str
        Sentences about assumptions are appended.

    Returns
    -------
    accounts : list of Account
        One per span, gaps not yet split.
    interval_s : float or None
        The checkpoint interval used (median compute time between two saves
        of one attempt).
    n_unassigned : int
        Saves outside every attempt (left out).
    assumed : bool
        Whether ``interval_s`` was used (no attempt saved two checkpoints).
    """
    ends = np.array([_end(sp) for sp in spans])
    owner = _assign_saves(spans, save_start, save_end, ends, tol_s)
    n_out = int((owner < 0).sum())
    spacing = []
    for k in range(len(spans)):
        mine = owner == k
        if mine.sum() >= 2:
            s, e = save_start[mine], save_end[mine]
            spacing.extend((s[1:] - e[:-1]).tolist())
    measured = float(np.median(spacing)) if spacing else None
    dt = measured if measured is not None else interval_s
    if measured is None:
        if interval_s is None:
            notes.append(
                f"Run {run_id}: no attempt saved two checkpoints, so the "
                "checkpoint interval (and from it the start-up time) is unknown; "
                "start-up is taken as 0 (give the run's checkpoint interval to "
                "estimate it: --assume-interval-h, assumed_interval_h=)."
            )
        else:
            notes.append(
                f"Run {run_id}: no attempt saved two checkpoints; the assumed "
                f"checkpoint interval of {interval_s / 3600:g} h is used to "
                "estimate start-up time."
            )
    # start-up (with restore) of attempts that saved
    ups: dict[int, float] = {}
    for k, sp in enumerate(spans):
        mine = np.flatnonzero(owner == k)
        if mine.size and dt is not None:
            first = max(float(save_start[mine[0]]), sp.start)
            ups[k] = min(max(first - sp.start - dt, 0.0), first - sp.start)
    typical = float(np.median(list(ups.values()))) if ups else 0.0
    accounts = []
    n_guessed = 0
    last_step = -1
    for k, sp in enumerate(spans):
        mine = np.flatnonzero(owner == k)
        end = float(ends[k])
        running = _running(sp)
        acc = Account(span=sp, restored_step=last_step if last_step >= 0 else None)
        if k in ups:
            up = ups[k]
        else:
            up = typical if dt is not None else 0.0
            n_guessed += dt is not None
        up = min(up, running - sp.start)
        c0 = sp.start + up
        s = np.clip(save_start[mine], c0, running)
        e = np.clip(save_end[mine], c0, running)
        acc.save = float((e - s).sum())
        if mine.size:
            acc.last_checkpoint = float(save_end[mine[-1]])
            steps = save_steps[mine]
            if (steps >= 0).any():
                last_step = int(steps[steps >= 0][-1])
        last = float(e[-1]) if mine.size else c0
        acc.startup = up
        before = last - c0 - acc.save
        tail = running - last
        if sp.ended_by in INTERRUPTED:
            acc.productive, acc.lost = before, tail
        else:
            acc.productive = before + tail
        acc.other = end - running
        accounts.append(acc)
    notes.append(
        f"Run {run_id}: measured from job attempts and checkpoint save times "
        "(no step records): each attempt is assumed to restore the latest "
        "checkpoint saved before it, so the work after an interrupted attempt's "
        "last save is lost progress; the checkpoint interval is the median "
        "compute time between two saves of one attempt"
        + (f" ({dt / 3600:.4g} h)" if dt is not None else "")
        + ", and an attempt's start-up and restore (not told apart, both counted "
        "as start-up) is its first save's start minus its start minus that "
        "interval."
    )
    if n_guessed:
        notes.append(
            f"Run {run_id}: {n_guessed} attempt(s) saved no checkpoint; their "
            f"start-up is taken as the run's median ({typical / 3600:.4g} h)."
        )
    return accounts, dt, n_out, measured is None and interval_s is not None


def _end(sp: Span) -> float:
    if sp.end is None:
        msg = "internal: a span's end must be decided before accounting"
        raise RuntimeError(msg)
    return sp.end


def _running(sp: Span) -> float:
    """Return the last instant the attempt is known to run.

    Its end, or for an open one the last record showing it running (not past
    the run's end).
    """
    end = _end(sp)
    if sp.ended_by != "open" or sp.running_until is None:
        return end
    return min(max(sp.running_until, sp.start), end)
