"""Attempts, steps and nodes of parsed ``sacct`` records.

Helpers of :mod:`relkit.ingest.slurm`: requeued records of one JobID become
attempts 1, 2, ...; step rows attach to the latest allocation row of their job
above them, and their outcome marks the attempt (``steps_failed``,
``steps_cancelled``); each distinct node list is expanded once.
"""

import numpy as np
import polars as pl

from relkit.ingest._hostlist import expand_hostlists_counted
from relkit.ingest._sacct_lines import streamed

__all__ = ["attempts", "expand_nodes", "step_outcome_flags", "steps"]


def _field(frame: pl.DataFrame, name: str) -> pl.Expr:
    return pl.col(name) if name in frame.columns else pl.lit(None, dtype=pl.String)


def attempts(alloc: pl.DataFrame) -> pl.DataFrame:
    """Give the allocation rows of each JobID attempt numbers 1, 2, ... by time."""
    # a hash pass first: most dumps repeat no JobID
    hashed = alloc.lazy().select(pl.col("jobid").hash()).collect(engine="streaming")
    if hashed.to_series().n_unique() == alloc.height or (
        alloc["jobid"].n_unique() == alloc.height
    ):
        return streamed(alloc, attempt=pl.lit(1, dtype=pl.Int32))
    alloc = alloc.sort(
        "jobid", "submit_ts", "start_ts", "line_no", nulls_last=True
    ).with_columns(
        _new=(pl.col("jobid") != pl.col("jobid").shift()).fill_null(value=True)
    )
    return alloc.with_columns(_row=pl.int_range(pl.len(), dtype=pl.Int64)).with_columns(
        attempt=(
            pl.col("_row")
            - pl.when(pl.col("_new")).then(pl.col("_row")).forward_fill()
            + 1
        ).cast(pl.Int32)
    )


def expand_nodes(
    nodelist: pl.Series, nnodes: pl.Series
) -> tuple[pl.DataFrame, pl.Series, pl.Series, pl.Series, pl.Series]:
    """Expand each distinct (NodeList, NNodes) once; map the results to records.

    Returns ``(hosts, list_of, errors, n_repeated, n_hosts)``: ``hosts``
    (``index`` of the distinct list, ``host``), and per record the index of
    its list, the list's error, repeated names and host count (null for no
    host). Step rows repeat their job's list, and single-node jobs share a
    node: the distinct lists are a fraction of the records.
    """
    keys = pl.DataFrame({"_e": nodelist, "_c": nnodes})
    distinct = keys.unique(maintain_order=False).with_row_index("_u")
    hosts, errors, repeats = expand_hostlists_counted(
        distinct["_e"], max_hosts=distinct["_c"]
    )
    list_of = (
        keys.lazy()
        .join(
            distinct.lazy(),
            on=["_e", "_c"],
            how="left",
            nulls_equal=True,
            maintain_order="left",
        )
        .select("_u")
        .collect(engine="streaming")
        .to_series()
        .cast(pl.UInt32)
    )
    counts = np.bincount(hosts["index"].to_numpy(), minlength=distinct.height)
    n = pl.Series(counts, dtype=pl.Int64).gather(list_of)
    n = n.zip_with(n > 0, pl.Series([None], dtype=pl.Int64))
    return hosts, list_of, errors.gather(list_of), repeats.gather(list_of), n


#: Step states that mean the step itself failed.
_STEP_FAILED = ("FAILED", "OUT_OF_MEMORY", "NODE_FAIL", "BOOT_FAIL", "LAUNCH_FAILED")


def step_outcome_flags(jobs: pl.DataFrame, job_steps: pl.DataFrame) -> pl.DataFrame:
    """Add ``steps_failed`` / ``steps_cancelled`` to the attempts' flags.

    ``steps_failed``: a step other than ``.extern`` failed (``FAILED``,
    ``OUT_OF_MEMORY``, ...); else ``steps_cancelled``: one was cancelled (the
    scheduler signalled the job, as ``scontrol requeue`` does). What a
    ``REQUEUED`` attempt's steps say tells a deliberate requeue from one after
    a failure (:func:`relkit.jobs.build_interruptions`).
    """
    work = job_steps.filter(pl.col("step") != "extern")
    if work.height == 0:
        return jobs
    outcome = work.group_by("job_id", "attempt").agg(
        _failed=pl.col("state").is_in(_STEP_FAILED).any(),
        _cancelled=(pl.col("state") == "CANCELLED").any(),
    )
    flag = (
        pl.when(pl.col("_failed"))
        .then(pl.lit("steps_failed"))
        .when(pl.col("_cancelled"))
        .then(pl.lit("steps_cancelled"))
    )
    return (
        jobs.join(outcome, on=["job_id", "attempt"], how="left", maintain_order="left")
        .with_columns(
            flags=pl.concat_str(
                [pl.col("flags"), flag], separator=",", ignore_nulls=True
            ).replace("", None)
        )
        .drop("_failed", "_cancelled")
    )


def steps(steps: pl.DataFrame, jobs: pl.DataFrame) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Attach step rows to their attempt; return (job_steps, orphans + reason).

    A step belongs to the latest allocation row of its job above it. A step
    with none (a cut or filtered dump) is rejected: its job is not in the file.
    """
    owner = pl.concat_str(
        "base_job_id",
        pl.when(pl.col("array_task").is_not_null()).then(
            pl.format("_{}", "array_task")
        ),
        pl.when(pl.col("array_pending").is_not_null()).then(
            pl.format("_[{}]", "array_pending")
        ),
        pl.when(pl.col("het_offset").is_not_null()).then(
            pl.format("+{}", "het_offset")
        ),
        ignore_nulls=True,
    )
    if steps.height == 0:
        empty = steps.head(0).with_columns(
            _owner=pl.lit(None, pl.String),
            attempt=pl.lit(None, pl.Int32),
            reason=pl.lit(None, pl.String),
        )
        return _step_rows(empty), empty
    steps = steps.with_columns(_owner=owner).sort("line_no")
    anchors = jobs.select(_owner="job_id", _at="line_no", attempt="attempt").sort("_at")
    steps = steps.join_asof(
        anchors,
        left_on="line_no",
        right_on="_at",
        by="_owner",
        strategy="backward",
        check_sortedness=False,
    )
    orphan = pl.col("attempt").is_null()
    rejects = steps.filter(orphan).with_columns(
        reason=pl.format(
            "step {} of job {}, whose allocation row is not above it in the file "
            "(a cut or filtered dump? export with sacct -P --duplicates)",
            "jobid",
            "_owner",
        ),
    )
    return _step_rows(steps.filter(~orphan)), rejects


def _step_rows(steps: pl.DataFrame) -> pl.DataFrame:
    """Return the ``job_steps`` columns of attached step records."""
    return steps.select(
        "line_no",
        job_id="_owner",
        attempt="attempt",
        step="step",
        state="state",
        exit_code=_field(steps, "exitcode"),
        start_ts="start_ts",
        end_ts="end_ts",
        elapsed_s="elapsed_s",
        n_nodes=pl.coalesce("n_nodes_decl", "n"),
    )
