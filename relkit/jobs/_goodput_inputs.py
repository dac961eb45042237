"""Inputs of :func:`relkit.jobs.measure_goodput`: job attempts, runs, messages.

The scheduler's attempts are checked and completed, records and attempts
are split into runs (:func:`group_runs`), and the notes and errors name each
option for both users: the ``relkit`` flag and the library keyword.
"""

from typing import Any

import polars as pl

from relkit.errors import InvalidParameterError
from relkit.jobs._goodput_model import SPAN_COLUMNS
from relkit.jobs._goodput_records import STOP_STATES
from relkit.schema import UTC, require_columns
from relkit.taxonomy import PLANNED_FLAGS

__all__ = [
    "AS_OF_OPTION",
    "COST_OPTION",
    "GIVE_ATTEMPTS",
    "INTERVAL_OPTION",
    "RESTART_OPTION",
    "RUN_BY_OPTION",
    "bad_run_by",
    "few",
    "group_runs",
    "needs_interval",
    "normalise_attempts",
    "sched_end",
    "span_frame",
]

#: How the notes and errors name an option for both users: the CLI flag and
#: the keyword of :func:`relkit.jobs.measure_goodput`.
INTERVAL_OPTION = "--assume-interval-h, assumed_interval_h="
COST_OPTION = "--assume-cost-h, assumed_cost_h="
RESTART_OPTION = "--assume-restart-h, assumed_restart_h="
AS_OF_OPTION = "--as-of, as_of="
RUN_BY_OPTION = "--run-by, run_by="
#: How to give the scheduler's records, for both users.
GIVE_ATTEMPTS = (
    "ingest the scheduler's records (relkit ingest --kind sacct, or --kind k8s), "
    "or pass them as attempts (relkit.jobs.build_job_attempts)"
)


def needs_interval(what: str) -> str:
    """Say that ``what`` can only be modelled and which options to give."""
    return (
        f"{what}: its goodput can only be modelled from when its attempts ran; "
        f"give the run's checkpoint interval in hours ({INTERVAL_OPTION}) and, "
        f"if known, its blocking save and restart times ({COST_OPTION}; "
        f"{RESTART_OPTION})."
    )


# -- attempts -------------------------------------------------------------------------


def normalise_attempts(attempts: pl.DataFrame, notes: list[str]) -> pl.DataFrame:
    """Scheduler attempts with the optional columns the goodput reads.

    Attempts that end before they start are left out (said in ``notes``).
    """
    require_columns(
        attempts, ["job_id", "start_ts", "end_ts", "state"], where="measure_goodput"
    )
    backwards = attempts.filter(pl.col("end_ts") < pl.col("start_ts"))
    if backwards.height:
        ids = backwards["job_id"].cast(pl.String).unique(maintain_order=True)
        notes.append(
            f"{backwards.height} job attempt(s) end before they start (job ids "
            f"{ids.head(5).to_list()}) and were left out."
        )
        attempts = attempts.filter(
            ~(pl.col("end_ts") < pl.col("start_ts")).fill_null(value=False)
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


def sched_end(state: str | None, flags: str | None) -> str:
    """Tell how a scheduler attempt ended: job_end, stopped or failure.

    ``job_end``: completed, or deliberately requeued; ``stopped``: a state of
    :data:`relkit.taxonomy.STATE_CAUSE` of kind ``not_failure`` (time limit,
    preemption, cancellation); anything else a failure.
    """
    if state == "COMPLETED":
        return "job_end"
    planned = flags is not None and any(f in flags.split(",") for f in PLANNED_FLAGS)
    if state == "REQUEUED" and planned:
        return "job_end"
    if state in STOP_STATES:
        return "stopped"
    return "failure"


# -- runs ------------------------------------------------------------------------------


def few(values: list[Any], n: int = 5) -> str:
    """Name the first ``n`` values, and how many more there are."""
    text = ", ".join(repr(v) for v in values[:n])
    return f"[{text}" + (f", ... ({len(values)} in all)]" if len(values) > n else "]")


def bad_run_by(run_by: str, columns: list[str]) -> str:
    """Say that ``run_by`` is not a column of the attempts, and what to give."""
    return (
        f"run_by {run_by!r} ({RUN_BY_OPTION}) is not a column of the job "
        f"attempts; give one of {columns} (a Slurm requeue chain: job_id; "
        "resubmissions under one job name: name)."
    )


def group_runs(
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
            raise InvalidParameterError(bad_run_by(run_by, sched.columns))
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
            lost = recs.filter(pl.col("run_id").is_null())
            if lost.height:
                ids = lost["job_id"].unique(maintain_order=True).to_list()
                notes.append(
                    f"{lost.height} record(s) were left out: their job ids "
                    f"{few(ids)} are not among the job records (runs are grouped "
                    f"by the job attempts' {run_by}; "
                    f"{few(keyed['job_id'].unique(maintain_order=True).to_list())} "
                    "are)."
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
        known = set(sched["job_id"].drop_nulls().to_list())
        foreign = [j for j in pairs["job_id"].to_list() if j not in known]
        if foreign:
            notes.append(
                f"The records' job ids {few(foreign)} are not among the job "
                f"records (whose job ids are {few(sorted(known))}); the runs "
                "that carry them get no queue times, GPU counts or attempt "
                "spans from the scheduler (check that the records and the "
                "scheduler's dump are of the same cluster and period)."
            )
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


def span_frame(sched: pl.DataFrame) -> pl.DataFrame:
    """Give scheduler attempts (run key ``_run``) the columns of evidence (c).

    ``ended_by``: ``open`` without an end, ``job_end`` for ``COMPLETED`` or a
    deliberate requeue (:data:`relkit.taxonomy.PLANNED_FLAGS`), ``stopped``
    for a time limit, preemption or cancellation (:data:`STOP_STATES`), else
    ``failure``.
    """
    planned = (
        pl.col("flags")
        .str.contains("(^|,)(" + "|".join(PLANNED_FLAGS) + ")(,|$)")
        .fill_null(value=False)
    )
    ended_by = (
        pl.when(pl.col("end_ts").is_null())
        .then(pl.lit("open"))
        .when(pl.col("state") == "COMPLETED")
        .then(pl.lit("job_end"))
        .when((pl.col("state") == "REQUEUED") & planned)
        .then(pl.lit("job_end"))
        .when(pl.col("state").is_in(STOP_STATES))
        .then(pl.lit("stopped"))
        .otherwise(pl.lit("failure"))
    )
    return sched.with_columns(ended_by=ended_by).select(SPAN_COLUMNS)
