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
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import polars as pl

from relkit.errors import InvalidParameterError
from relkit.jobs._goodput_checks import DUPLICATE_TOLERANCE_S
from relkit.jobs._goodput_inputs import (
    AS_OF_OPTION,
    COST_OPTION,
    GIVE_ATTEMPTS,
    INTERVAL_OPTION,
    RESTART_OPTION,
    RUN_BY_OPTION,
    normalise_attempts,
)
from relkit.jobs._goodput_measure import measure_records, modelled_only, unused_notes
from relkit.jobs._goodput_records import RECORD_KINDS, normalise_records
from relkit.jobs._goodput_runs import (
    GOODPUT_ATTEMPT_SCHEMA,
    GOODPUT_RUN_SCHEMA,
    MATCH_TOLERANCE_S,
    SAVES,
    STEPS,
)
from relkit.schema import require_columns

__all__ = [
    "DUPLICATE_TOLERANCE_S",
    "GOODPUT_ATTEMPT_SCHEMA",
    "GOODPUT_RUN_SCHEMA",
    "LOST_BASIS",
    "MATCH_TOLERANCE_S",
    "RECORD_KINDS",
    "Goodput",
    "interruption_losses",
    "measure_goodput",
]

#: ``lost_basis`` of :func:`interruption_losses` for each level of evidence.
LOST_BASIS = {
    STEPS: "checkpoint records",
    SAVES: "job attempts + checkpoint times",
    "modelled": "assumed checkpoint interval",
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

    def _repr_html_(self) -> str:
        """Show the runs table and the notes, for Jupyter."""
        import html

        notes = "".join(f"<li>{html.escape(n)}</li>" for n in self.notes)
        return (
            f"<p>Goodput of {self.runs.height:,} run(s), "
            f"{self.attempts.height:,} attempt(s)</p>"
            + self.runs._repr_html_()
            + (f"<ul>{notes}</ul>" if notes else "")
        )


# -- inputs ---------------------------------------------------------------------------


_FLAGS = {
    "assumed_interval_h": INTERVAL_OPTION,
    "assumed_cost_h": COST_OPTION,
    "assumed_restart_h": RESTART_OPTION,
}


def _check_hours(value: object, name: str, *, positive: bool) -> float:
    ok = (
        isinstance(value, int | float)
        and not isinstance(value, bool)
        and math.isfinite(float(value))
        and (float(value) > 0 if positive else float(value) >= 0)
    )
    if not ok:
        need = "> 0" if positive else ">= 0"
        msg = (
            f"{name} ({_FLAGS[name]}) must be a finite number of hours {need}; "
            f"got {value!r}."
        )
        raise InvalidParameterError(msg)
    return float(value)  # type: ignore[arg-type]


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
        (Int; an attempt is keyed by job id and attempt, so a counter that
        restarts with each job id is read right), ``step`` (Int:
        ``step_start``/``step_end`` the 0-based index of the step, or the
        1-based one where the log shows it, see Notes; ``checkpoint_*`` the
        steps the checkpoint holds; ``job_end`` the steps done), ``save_s``
        (Float, ``checkpoint_saved``: blocking save seconds), ``restore_s``
        (Float, ``checkpoint_restored``: restore seconds), ``n_gpus`` (Int,
        ``job_start``), ``status`` (String, ``job_end``: the end status;
        ``failure``: its cause; see ``ended_by`` below), ``level`` (String,
        ``checkpoint_saved``). A save without ``save_s`` takes its time from
        the ``checkpoint_save_start`` before it. ``line_no`` and
        ``source_id`` name the records left out in the notes; other columns
        (``host``, ...) are ignored. None or empty: the runs come from
        ``attempts`` alone (evidence (c)).
    attempts : pl.DataFrame, optional
        Job attempts from :func:`relkit.jobs.build_job_attempts`: ``job_id,
        start_ts, end_ts, state``, and where present ``submit_ts``,
        ``stop_ts``, ``n_gpus``, ``flags`` and the ``run_by`` column. They
        give queue times (``submit_ts``), GPU counts, the end of an open
        run's last attempt (``stop_ts``, when later than the run's last
        record) and, without step records, when each attempt ran.
    run : str, optional
        Measure only this run (its ``run_id``, or its ``run_by`` value). A run
        it names that cannot be measured raises; without it such runs are left
        out with a note.
    run_by : str, optional
        Group the attempts into runs by this column of ``attempts``:
        ``"job_id"`` (a Slurm requeue chain, attempts 1..n of one job id),
        ``"name"`` (resubmissions under one job name) or any other. Default:
        the records' ``run_id`` (attempts join their run by ``job_id``), or
        ``"job_id"`` without records.
    assumed_interval_h : float, optional
        Checkpoint interval in hours, > 0, for runs with no step or
        checkpoint records (required then), and for evidence (b) when no
        attempt saved two checkpoints. Given but not needed, a note says so.
    assumed_cost_h : float, default 0.0
        Blocking save time per checkpoint, hours, >= 0 (evidence (c) only;
        given > 0 with no run modelled, a note says it is not used).
    assumed_restart_h : float, default 0.0
        Start-up and restore time of each attempt after the first, hours,
        >= 0 (evidence (c) only, as ``assumed_cost_h``).
    as_of : datetime, optional
        End of the data (time-zone aware): an open run (its last attempt has
        no ``job_end`` or ``failure`` record, or no scheduler end) is measured
        up to it; it must not be before the open run's last sign of running.
        Closed runs are measured to their end whatever it is (a note says
        so). Default: an open run ends at its last sign of running, the later
        of its last record and the scheduler's ``stop_ts``.

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
        ended by a failure: the failure count the checkpoint decision reads),
        ``n_stops`` (attempts stopped without a failure: ``ended_by``
        ``stopped``); the badput in hours ``badput_init_h``,
        ``badput_checkpoint_h``, ``badput_restore_h``,
        ``badput_lost_progress_h``, ``badput_recovery_h``,
        ``badput_queue_h``, ``badput_other_h``, which sum to ``wall_h -
        productive_h``; ``n_checkpoints`` (saves recorded; null when
        modelled), ``checkpoint_interval_h`` (median compute time between
        two saves of one attempt, or the assumed one), ``checkpoint_save_s``
        (median blocking save).
        ``attempts``: one row per attempt, sorted by ``run_id`` and start,
        columns :data:`GOODPUT_ATTEMPT_SCHEMA`: ``attempt`` (the records'
        number, else 1..n in start order), ``job_id``, ``start_ts``,
        ``end_ts``, ``ended_by`` (``failure``; ``stopped``: a time limit,
        preemption or cancellation, a ``job_end`` or ``failure`` status or
        scheduler state of kind ``not_failure`` in
        :data:`relkit.taxonomy.STATE_CAUSE` (``TIMEOUT``, ``PREEMPTED``,
        ``CANCELLED``, ``DEADLINE``, ``REVOKED``), which loses its work since
        the last checkpoint like a failure but is not counted as one;
        ``job_end``: a completed attempt or a deliberate requeue
        (``REQUEUED``); ``open``), ``n_gpus``, the hours of
        the attempt (``productive_h``, ``init_h``,
        ``restore_h``, ``checkpoint_h``,
        ``lost_progress_h``: its work later redone, ``other_h``) and of the
        gap after it to the next attempt's start (``recovery_h``,
        ``queue_h``), ``last_checkpoint_ts`` (end of its last save),
        ``restored_step`` and ``evidence``. Summed over a run's attempts they
        give the run's columns.
        ``notes``: plain sentences saying what was assumed, estimated or
        left out (the CLI prints them). Every category is >= 0.

    Raises
    ------
    SchemaError
        If ``records`` or ``attempts`` lacks a required column, or ``ts`` is
        not time-zone aware.
    InvalidParameterError
        If ``run`` names no run (the message lists them), ``run_by`` is not a
        column of ``attempts`` or is given without them, an assumed duration
        is negative or not finite, ``as_of`` is naive or earlier than an open
        run's last record, there is nothing to measure, or no run at all can
        be measured (or ``run`` names one that cannot): a run that has only
        job attempts or job records without ``assumed_interval_h``, or whose
        step numbering contradicts itself.

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
    :data:`MATCH_TOLERANCE_S`. When the scheduler shows a run's open last
    attempt running after the log's last record (``stop_ts``), the run ends
    there, as in evidence (b), and the time after its last progress record
    is compute (productive): both levels measure the same wall time.

    Before measuring, each run's records are checked, and what is done is
    said in the notes: copies of a record (same job id, attempt, kind and
    step, and level for checkpoints, within :data:`DUPLICATE_TOLERANCE_S`;
    checkpoint records without a step within 1 s: the ranks of a job each
    logging it, log files concatenated or shipped twice) count once, at the
    earliest time; attempts are keyed by (job id, attempt) and taken in the
    order they started, renumbered 1..n when their numbers repeat across
    job ids; a record stamped before its own attempt's ``job_start``, or
    after the failure or ``job_end`` that ends it, is left out (the notes
    name its ``line_no``); ``step_start``/``step_end`` indices are read as
    1-based (Megatron's iteration counter) when the log itself shows it and
    nothing shows 0-based (a checkpoint of c steps saved right after
    ``step_end`` c, the first ``step_start`` after restoring c steps being
    c + 1, a ``job_end`` of c steps right after ``step_end`` c), and a run
    whose records show both is not measured. Restoring an older checkpoint
    than the latest saved, a checkpoint no save record holds, and a
    ``restore_s`` longer than the time before the first step are noted.

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
            f"as_of ({AS_OF_OPTION}) must be a time-zone-aware instant; got "
            f"{as_of!r}. Give e.g. --as-of 2025-08-02T00:00:00Z, or "
            "as_of=datetime(2025, 8, 2, tzinfo=UTC)."
        )
        raise InvalidParameterError(msg)
    if run_by is not None and attempts is None:
        msg = (
            f"run_by {run_by!r} ({RUN_BY_OPTION}) groups the scheduler's job "
            f"attempts into runs, but no job attempts were given; {GIVE_ATTEMPTS}."
        )
        raise InvalidParameterError(msg)
    recs = normalise_records(records, notes)
    sched = None if attempts is None else normalise_attempts(attempts, notes)
    if recs.height == 0 and (sched is None or sched.height == 0):
        msg = (
            "measure_goodput: no records and no job attempts to measure; ingest a "
            "run's checkpoint and step log (relkit ingest --kind checkpoints; the "
            f"store's checkpoints table), or {GIVE_ATTEMPTS}."
        )
        raise InvalidParameterError(msg)
    used: set[str] = set()
    if recs.height == 0:
        assert sched is not None  # checked above
        runs, atts = modelled_only(
            sched,
            run=run,
            run_by=run_by or "job_id",
            as_of=as_of,
            interval_h=interval_h,
            cost_h=cost_h,
            restart_h=restart_h,
            notes=notes,
        )
        used.update(("interval", "cost", "restart"))
    else:
        runs, atts = measure_records(
            recs,
            sched,
            run=run,
            run_by=run_by,
            as_of=as_of,
            interval_h=interval_h,
            cost_h=cost_h,
            restart_h=restart_h,
            notes=notes,
            used=used,
        )
    unused_notes(
        used,
        interval_h=interval_h,
        cost_h=cost_h,
        restart_h=restart_h,
        runs=runs,
        as_of=as_of,
        notes=notes,
    )
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
    time, not attempt number. ``lost_gpu_h_upper`` and ``lost_node_h_upper``
    (the whole attempt: all its work lost, as if no checkpoint survived) gain
    the same downtime and restart :math:`R + Q + S_{next} + V_{next}` where an
    attempt matches, so the bound stays above the estimate.

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
    ...         "init_h": [0.1, 0.2],
    ...         "restore_h": [0.0, 0.3],
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
        "init_h",
        "restore_h",
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
    nxt = pl.col("init_h").shift(-1).over("run_id", order_by="start_ts").fill_null(
        0.0
    ) + pl.col("restore_h").shift(-1).over("run_id", order_by="start_ts").fill_null(0.0)
    basis = (
        pl.when(pl.col("evidence") == STEPS)
        .then(pl.lit(LOST_BASIS[STEPS]))
        .when(pl.col("evidence") == SAVES)
        .then(pl.lit(LOST_BASIS[SAVES]))
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
        _down=pl.col("recovery_h") + pl.col("queue_h") + nxt,
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
        .select("_row", "_ggpus", "_hours", "_down", "_basis")
    )
    out = frame.join(pairs, on="_row", how="left")
    gpus = pl.coalesce(
        pl.col("n_gpus").cast(pl.Float64), pl.col("_ggpus").cast(pl.Float64)
    )
    # the upper bound pays the same downtime and restart as the estimate
    widen = [
        (pl.col(col) + pl.col("_down").fill_null(0.0) * size).alias(col)
        for col, size in (
            ("lost_gpu_h_upper", gpus),
            ("lost_node_h_upper", pl.col("n_nodes").cast(pl.Float64)),
        )
        if col in out.columns
        and (col != "lost_node_h_upper" or "n_nodes" in out.columns)
    ]
    out = out.with_columns(widen)
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
        .drop("_row", "_ggpus", "_hours", "_down", "_basis")
    )
