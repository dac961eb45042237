"""Column contracts of the canonical tables and derived frames.

The store's tables (DESIGN.md §3) are declared once here, as DuckDB DDL types and
as polars dtypes, so ingest writes and analysis reads the same contract.
"""

import polars as pl

from relkit.errors import SchemaError

__all__ = [
    "CHECKPOINT_KINDS",
    "POLARS_SCHEMAS",
    "TABLE_COLUMNS",
    "UTC",
    "require_columns",
]

UTC = pl.Datetime("us", "UTC")

#: The ``kind`` of a row of the ``checkpoints`` table: the ``event`` of a
#: record of a run's checkpoint/step log (case C18 of cases/README.md).
CHECKPOINT_KINDS = (
    "job_start",
    "step_start",
    "step_end",
    "checkpoint_save_start",
    "checkpoint_saved",
    "checkpoint_restored",
    "failure",
    "job_end",
)

#: DuckDB column types of every store table, in column order.
#: ``sources.content_hash`` is a file's identity as ``"<algorithm>:<hex>"``:
#: ``"blake3:<64 hex>"`` (:func:`relkit.store.file_digest`) for ingests since
#: schema 7, ``"sha256:<64 hex>"`` for rows of a store upgraded from schema 6
#: or older (until then the column was ``sha256`` and held the bare hex).
TABLE_COLUMNS: dict[str, dict[str, str]] = {
    "sources": {
        "source_id": "INTEGER",
        "path": "VARCHAR",
        "content_hash": "VARCHAR",
        "kind": "VARCHAR",
        "options": "VARCHAR",
        "n_lines": "BIGINT",
        "n_loaded": "BIGINT",
        "n_rejected": "BIGINT",
        "ingested_at": "TIMESTAMPTZ",
        "n_ignored": "BIGINT",
    },
    "events": {
        "source_id": "INTEGER",
        "line_no": "BIGINT",
        "ts": "TIMESTAMPTZ",
        "host": "VARCHAR",
        "device": "VARCHAR",
        "system": "VARCHAR",
        "code": "VARCHAR",
        "failure_mode": "VARCHAR",
        "severity": "VARCHAR",
        "detail": "VARCHAR",
        "repaired_ts": "TIMESTAMPTZ",
        "repair_s": "DOUBLE",
        "flags": "VARCHAR",
        "count": "BIGINT",
        "mono_s": "DOUBLE",
    },
    "rejects": {
        "source_id": "INTEGER",
        "line_no": "BIGINT",
        "reason": "VARCHAR",
        "raw": "VARCHAR",
    },
    "ignored": {
        "source_id": "INTEGER",
        "reason": "VARCHAR",
        "n_lines": "BIGINT",
    },
    "failure_modes": {
        "failure_mode": "VARCHAR",
        "component": "VARCHAR",
        "category": "VARCHAR",
        "counts_as_failure": "BOOLEAN",
        "llama3_row": "VARCHAR",
        "description": "VARCHAR",
        # schema 4: modes a normalised events file declared (NULL: the taxonomy)
        "declared_source_id": "INTEGER",
    },
    "assets": {
        "source_id": "INTEGER",
        "line_no": "BIGINT",
        "host": "VARCHAR",
        "device": "VARCHAR",
        "system": "VARCHAR",
        "gpus": "INTEGER",
        "in_service_ts": "TIMESTAMPTZ",
        "out_of_service_ts": "TIMESTAMPTZ",
        "observed_from_ts": "TIMESTAMPTZ",
        "attrs": "VARCHAR",
        # schema 4: comma-separated flags (in_service_unknown, dst_ambiguous, ...)
        "flags": "VARCHAR",
    },
    "jobs": {
        "source_id": "INTEGER",
        "line_no": "BIGINT",
        "job_id": "VARCHAR",
        "attempt": "INTEGER",
        "state": "VARCHAR",
        "exit_code": "VARCHAR",
        "submit_ts": "TIMESTAMPTZ",
        "start_ts": "TIMESTAMPTZ",
        "end_ts": "TIMESTAMPTZ",
        "elapsed_s": "DOUBLE",
        "n_nodes": "INTEGER",
        "n_gpus": "INTEGER",
        "user": "VARCHAR",
        "name": "VARCHAR",
        "partition": "VARCHAR",
        # schema 3: job-log ingest (sacct -P, Kubernetes pod/job JSON)
        "scheduler": "VARCHAR",
        "job_id_raw": "VARCHAR",
        "base_job_id": "VARCHAR",
        "array_task": "VARCHAR",
        "array_pending": "VARCHAR",
        "het_offset": "INTEGER",
        "cancelled_by_uid": "VARCHAR",
        "reason": "VARCHAR",
        "timelimit_s": "DOUBLE",
        "total_cpu_s": "DOUBLE",
        "namespace": "VARCHAR",
        "flags": "VARCHAR",
    },
    "job_steps": {
        "source_id": "INTEGER",
        "line_no": "BIGINT",
        "job_id": "VARCHAR",
        "attempt": "INTEGER",
        "step": "VARCHAR",
        "state": "VARCHAR",
        "exit_code": "VARCHAR",
        "start_ts": "TIMESTAMPTZ",
        "end_ts": "TIMESTAMPTZ",
        "elapsed_s": "DOUBLE",
        "n_nodes": "INTEGER",
    },
    "job_nodes": {
        "source_id": "INTEGER",
        "job_id": "VARCHAR",
        "attempt": "INTEGER",
        "host": "VARCHAR",
    },
    # schema 4: what span of time each host's lines of a kernel log cover
    "log_spans": {
        "source_id": "INTEGER",
        "host": "VARCHAR",
        "first_ts": "TIMESTAMPTZ",
        "last_ts": "TIMESTAMPTZ",
        "n_lines": "BIGINT",
    },
    # schema 5: nvidia-smi -q snapshots, so later files compare with earlier ones
    "gpu_snapshots": {
        "source_id": "INTEGER",
        "line_no": "BIGINT",
        "host": "VARCHAR",
        "device": "VARCHAR",
        "snapshot_ts": "TIMESTAMPTZ",
        "block_no": "BIGINT",
        "ts_flag": "VARCHAR",
        # JSON {column: [value, line_no]} of the counters and flags read
        "fields": "VARCHAR",
    },
    # schema 6: a training run's log (relkit.ingest.checkpoints), one row per
    # record: job_start, step_start, step_end, checkpoint_save_start,
    # checkpoint_saved, checkpoint_restored, failure, job_end
    "checkpoints": {
        "source_id": "INTEGER",
        "line_no": "BIGINT",
        # the run ("run_id", else "run", else "job"); never NULL
        "run_id": "VARCHAR",
        # scheduler job id ("job_id"), NULL when the record has none
        "job_id": "VARCHAR",
        "attempt": "INTEGER",
        # the record's instant; checkpoint_saved: the end of the save
        "ts": "TIMESTAMPTZ",
        "kind": "VARCHAR",
        # step_start/step_end: 0-based index of the step; checkpoint_*: steps the
        # checkpoint holds (index of the next step to run); job_end: steps done
        "step": "BIGINT",
        # checkpoint_saved: blocking save time (save_s, or ts - start_ts)
        "save_s": "DOUBLE",
        # checkpoint_restored: restore time
        "restore_s": "DOUBLE",
        # checkpoint level (persistent, memory, ...)
        "level": "VARCHAR",
        # job_start: GPUs and nodes of the attempt
        "n_gpus": "BIGINT",
        "n_nodes": "BIGINT",
        # failure: the node named
        "host": "VARCHAR",
        # failure: its cause; job_end: the end status
        "status": "VARCHAR",
    },
}

_DUCK_TO_POLARS: dict[str, pl.DataType] = {
    "INTEGER": pl.Int32(),
    "BIGINT": pl.Int64(),
    "DOUBLE": pl.Float64(),
    "VARCHAR": pl.String(),
    "TIMESTAMPTZ": UTC,
    "BOOLEAN": pl.Boolean(),
}

#: polars schema of every store table as :func:`relkit.store.Store.table` returns it.
POLARS_SCHEMAS: dict[str, pl.Schema] = {
    name: pl.Schema({col: _DUCK_TO_POLARS[t] for col, t in cols.items()})
    for name, cols in TABLE_COLUMNS.items()
}


def require_columns(
    frame: pl.DataFrame, columns: dict[str, pl.DataType] | list[str], *, where: str
) -> None:
    """Check that a frame has the columns (and dtypes) a function needs.

    Parameters
    ----------
    frame : pl.DataFrame
        The frame to check.
    columns : dict of str to polars dtype, or list of str
        Required column names; with a dict, also their dtypes.
    where : str
        The calling function's name, put at the start of the message.

    Raises
    ------
    SchemaError
        If a column is missing, or has another dtype than required.

    Examples
    --------
    >>> import polars as pl
    >>> require_columns(pl.DataFrame({"a": [1]}), ["a"], where="f")
    >>> require_columns(pl.DataFrame({"a": [1]}), ["a", "b"], where="f")
    Traceback (most recent call last):
    ...
    relkit.errors.SchemaError: f: missing column(s) ['b']; the frame has ['a']...
    """
    names = list(columns)
    if missing := [c for c in names if c not in frame.columns]:
        msg = (
            f"{where}: missing column(s) {missing}; the frame has {frame.columns}. "
            "Rename the columns, e.g. frame.rename({'old': 'new'}), or build the "
            "frame with the relkit function that produces it."
        )
        raise SchemaError(msg)
    if isinstance(columns, dict):
        wrong = {
            c: (str(frame.schema[c]), str(t))
            for c, t in columns.items()
            if frame.schema[c] != t
        }
        if wrong:
            detail = ", ".join(
                f"{c} is {a}, expected {b}" for c, (a, b) in wrong.items()
            )
            msg = (
                f"{where}: wrong column type(s): {detail}. "
                "Cast with pl.col(...).cast(...)."
            )
            raise SchemaError(msg)
