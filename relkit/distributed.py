"""Parse a fleet's raw kernel logs on many machines (Ray Data, Spark), load on one.

The raw logs of a large fleet (12,500 nodes, one file per host per day) are too
many for one machine; what they reduce to (failure events, counts of ignored
lines, rejects, per-host spans) is small. :func:`parse_log_batch` is the
reduction of one batch of files as a pure function over Arrow: a table of
``path`` and file content in, one long table of parsed records out. It runs
as Ray Data's ``map_batches`` (:func:`ray_parse`, the optional extra
``relkit[ray]``) or Spark's ``mapInArrow`` (:func:`parse_log_batches`), and
the Parquet it writes is loaded into the store by
:func:`relkit.ingest.parsed_logs.read_parsed_logs` (``relkit ingest --kind
parsed-logs DIR``), each file a ``kernel`` source exactly as
:func:`relkit.ingest.kernel.read_kernel` would have written it.

Each file is parsed whole by :func:`relkit.ingest.kernel.parse_kernel_log`,
which resolves times per host within the file (boots and their anchors), as
``read_kernel`` does for each file of a directory; so the distributed answer is
the single machine's. Nothing here opens a store; pyarrow and ray are imported
inside the functions, so ``import relkit.distributed`` is cheap and works
without ray.
"""

from __future__ import annotations

import datetime as dt
import fnmatch
import json
import re
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any, Literal

from relkit.errors import IngestError, InvalidParameterError
from relkit.ingest.kernel import (
    BTIME_SUFFIX,
    EVENT_COLUMNS,
    NOT_LOG_SUFFIXES,
    KernelLog,
    is_log_file,
)

if TYPE_CHECKING:
    import polars as pl
    import pyarrow as pa

__all__ = [
    "OUTPUT_COLUMNS",
    "RECORDS",
    "SPARK_SCHEMA",
    "ParseSummary",
    "content_digest",
    "is_log_file",
    "list_logs",
    "list_logs_as_given",
    "output_schema",
    "parse_log_batch",
    "parse_log_batches",
    "ray_parse",
    "read_and_parse",
]

#: Values of the ``record`` column, one row per record.
RECORDS = ("source", "event", "reject", "ignored", "span")

#: Output columns and their Arrow types (``ts``-like columns: UTC microseconds).
OUTPUT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("record", "string"),
    ("path", "string"),
    ("line_no", "int64"),
    ("ts", "timestamp"),
    ("host", "string"),
    ("device", "string"),
    ("code", "string"),
    ("failure_mode", "string"),
    ("severity", "string"),
    ("detail", "string"),
    ("flags", "string"),
    ("count", "int64"),
    ("mono_s", "float64"),
    ("reason", "string"),
    ("raw", "string"),
    ("n_lines", "int64"),
    ("first_ts", "timestamp"),
    ("last_ts", "timestamp"),
    ("content_hash", "string"),
    ("content_sha256", "string"),
    ("options", "string"),
    ("note", "string"),
    ("error", "string"),
    ("error_line_no", "int64"),
)

#: The output schema as a Spark DDL string (``df.mapInArrow(fn, SPARK_SCHEMA)``).
_SPARK_TYPES = {
    "string": "string",
    "int64": "bigint",
    "float64": "double",
    "timestamp": "timestamp",
}
SPARK_SCHEMA = ", ".join(f"{n} {_SPARK_TYPES[k]}" for n, k in OUTPUT_COLUMNS)

#: In a directory of logs, files with these suffixes or names are documentation
#: (the rule of :func:`relkit.ingest.kernel.read_kernel` for a directory).
# the directory rule is read_kernel's own (one copy)

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def output_schema() -> pa.Schema:
    """Return the Arrow schema of :func:`parse_log_batch`'s output.

    Returns
    -------
    pyarrow.Schema
        :data:`OUTPUT_COLUMNS` as Arrow types; timestamps are
        ``timestamp[us, tz=UTC]``.
    """
    import pyarrow as pa

    types = {
        "string": pa.string(),
        "int64": pa.int64(),
        "float64": pa.float64(),
        "timestamp": pa.timestamp("us", tz="UTC"),
    }
    return pa.schema([(name, types[kind]) for name, kind in OUTPUT_COLUMNS])


def content_digest(path: str | Path) -> tuple[str, str]:
    """Return a file's source identities as the store's ``content_hash`` holds them.

    The identity the store keys sources by (:func:`relkit.store.file_identities`),
    so a file parsed on a worker and one read by
    :func:`relkit.ingest.kernel.read_kernel` are recognised as the same source.

    Parameters
    ----------
    path : str or Path
        A local file.

    Returns
    -------
    tuple of str
        ``("blake3:<hex>", "sha256:<hex>")``: the identity of new ingests
        (:data:`relkit.store.HASH_ALGORITHM`) and the one of stores upgraded
        from schema 6 or older.
    """
    from relkit.store import file_identities

    first, sha = file_identities(path, sha256=True)
    return first, sha


def _local_name(path: str) -> str:
    """Return a path as the loader records it (:func:`local_path`)."""
    from relkit.ingest.parsed_logs import local_path

    return local_path(path)


def _sidecar_key(path: str) -> str:
    """Return the key of a log's ``<host>.btime`` record (no scheme)."""
    from relkit.ingest._kernel_read import file_host

    plain = PurePosixPath(_SCHEME.sub("", _local_name(path)))
    return str(plain.parent / f"{file_host(Path(plain.name))}{BTIME_SUFFIX}")


def _record_key(path: str) -> str:
    """Return the key of a ``.btime`` record file itself (no scheme)."""
    return str(PurePosixPath(_SCHEME.sub("", _local_name(path))))


def parse_log_batch(
    batch: pa.RecordBatch | pa.Table,
    *,
    tz: str | None = None,
    reference_date: str | dt.date | None = None,
    host: str | None = None,
    host_from_filename: bool = False,
    boot_time: str | dt.datetime | None = None,
    boot_records: Mapping[str, str] | None = None,
) -> pa.Table:
    r"""Parse a batch of kernel/syslog files given as bytes; one row per record.

    A pure function over Arrow, without a store: Ray Data's ``map_batches``
    (``batch_format="pyarrow"``; :func:`ray_parse`) and, through
    :func:`parse_log_batches`, Spark's ``mapInArrow``. Each file is written
    to a temporary file and read by
    :func:`relkit.ingest.kernel.parse_kernel_log` (its original name given,
    for the host and the boot-time record), so the rows are those
    :func:`relkit.ingest.kernel.read_kernel` writes for the file.

    Parameters
    ----------
    batch : pyarrow.RecordBatch or pyarrow.Table
        One row per file: ``path`` (string: its name or URI, as Ray's
        ``read_binary_files(include_paths=True)`` and Spark's ``binaryFile``
        source give it; ``file:/x`` URIs are recorded as the local path
        ``/x``) and its content, ``bytes`` (Ray) or ``content`` (Spark),
        binary. Other columns are ignored. A row without a path is a refused
        ``source`` row (``path`` null, ``error`` saying so); a path given
        twice is one ``source`` row: read once (with a note) when the bytes
        are the same, refused when they differ. The caller chooses the
        files: a directory's documentation and ``*.btime`` records are left
        out by :func:`list_logs` (:func:`is_log_file`), not here.
    tz, reference_date, host, host_from_filename, boot_time
        As for :func:`relkit.ingest.kernel.read_kernel`.
    boot_records : mapping of str to str, optional
        Text of ``<host>.btime`` boot-time records by their path (scheme-less,
        as :func:`list_logs` gives them): a log ``DIR/node7.log`` gets the
        record ``DIR/node7.btime`` when there is one, as ``read_kernel`` reads
        it from beside the log. Without it (and without ``boot_time``) plain
        ``dmesg`` kernel clocks have no wall time (flag ``no_wall_time``).

    Returns
    -------
    pyarrow.Table
        :func:`output_schema`, rows of every file in batch order, ``path``
        on every row, ``record`` saying what the row is:

        - ``source``: one per file: ``n_lines`` (lines in the file),
          ``content_hash`` and ``content_sha256`` (:func:`content_digest` of
          its bytes),
          ``options`` (JSON: the reading options and the times the file proves,
          ``log_start_ts``, ``log_end_ts``, ``first_record_ts``,
          ``last_record_ts``), ``note``; a file that cannot be read has
          ``error`` (why, and the fix) and ``error_line_no`` instead, and no
          other rows: one bad file never stops the job.
        - ``event``: the ``events`` table's columns (``line_no, ts, host,
          device, code, failure_mode, severity, detail, flags, count,
          mono_s``; ``ts`` UTC).
        - ``reject``: ``line_no, reason, raw``.
        - ``ignored``: ``reason, n_lines`` (noise counted by reason).
        - ``span``: ``host, first_ts, last_ts, n_lines`` (the ``log_spans``
          rows: a host's first and last time in the file, UTC).

        Every line is counted: a source's ``n_lines`` is its ``event`` rows +
        its ``ignored`` ``n_lines`` + its ``reject`` rows.

    Raises
    ------
    SchemaError
        If the batch has no ``path`` column or no ``bytes``/``content`` column,
        or that column is not binary (text decoded from the files).

    Notes
    -----
    A file's bytes are held in memory once (the batch) and once on local disk
    (the temporary copy); give Ray and Spark small batches (Ray:
    ``batch_size=1``) for large files. The small files of a batch are read
    together as one stream (:func:`relkit.ingest.kernel.parse_kernel_logs`),
    each still getting what it gets alone.

    Examples
    --------
    >>> import pyarrow as pa
    >>> line = b"2025-03-04T10:22:05+0000 n1 kernel: NVRM: Xid (PCI:0000:9b:00): 119\n"
    >>> batch = pa.table({"path": ["logs/n1.log"], "bytes": [line + b"hello\n"]})
    >>> out = parse_log_batch(batch)
    >>> out.column("record").to_pylist()
    ['source', 'event', 'ignored', 'span']
    >>> out.column("n_lines").to_pylist()[0], out.column("code").to_pylist()[1]
    (2, '119')

    Spark, on the same function (``pyspark`` and a JVM)::

        from pyspark.sql import SparkSession
        from relkit.distributed import SPARK_SCHEMA, parse_log_batches

        spark = SparkSession.builder.getOrCreate()
        files = spark.read.format("binaryFile").load("logs/")  # path, content
        parsed = files.select("path", "content").mapInArrow(
            lambda it: parse_log_batches(it, tz="UTC", host_from_filename=True),
            SPARK_SCHEMA,
        )
        parsed.write.parquet("parsed/")  # relkit ingest --kind parsed-logs parsed/
    """
    import pyarrow as pa

    from relkit.errors import SchemaError

    names = batch.schema.names
    content = "bytes" if "bytes" in names else "content" if "content" in names else None
    if "path" not in names or content is None:
        msg = (
            f"parse_log_batch expects columns 'path' and 'bytes' (Ray "
            f"read_binary_files(include_paths=True)) or 'content' (Spark "
            f"binaryFile); found {names}."
        )
        raise SchemaError(msg)
    kind = batch.schema.field(content).type
    if not (
        pa.types.is_binary(kind)
        or pa.types.is_large_binary(kind)
        or pa.types.is_fixed_size_binary(kind)
        or (hasattr(pa.types, "is_binary_view") and pa.types.is_binary_view(kind))
    ):
        msg = (
            f"parse_log_batch: column {content!r} must be binary (the file's bytes, "
            f"as read_binary_files and binaryFile give them); found {kind}. Do not "
            "decode the files to text first."
        )
        raise SchemaError(msg)
    paths = batch.column("path").to_pylist()
    contents = batch.column(content).to_pylist()
    opts = {
        "tz": tz,
        "reference_date": reference_date,
        "host": host,
        "host_from_filename": host_from_filename,
        "boot_time": boot_time,
    }
    records = {_record_key(k): v for k, v in (boot_records or {}).items()}
    seen: dict[str, list[bytes]] = {}
    for p, data in zip(paths, contents, strict=True):
        if p is not None:
            seen.setdefault(_local_name(str(p)), []).append(
                b"" if data is None else data
            )
    parts = []
    todo: list[tuple[int, str, bytes, int]] = []  # (slot, name, bytes, copies)
    for row, p in enumerate(paths):
        if p is None:
            reason = (
                f"row {row} of the batch has no path (null); every file needs its "
                "path (its name gives the host and the boot-time record)"
            )
            parts.append(_error_row(None, reason, None, (None, None)))
            continue
        name = _local_name(str(p))
        copies = seen.pop(name, None)
        if copies is None:  # a later copy of a path already parsed
            continue
        if len(copies) > 1 and any(c != copies[0] for c in copies[1:]):
            reason = (
                f"given {len(copies)} times in one batch with different contents; "
                "none was read. List each file once"
            )
            parts.append(_error_row(name, reason, None, (None, None)))
            continue
        todo.append((len(parts), name, copies[0], len(copies)))
        parts.append(None)  # filled below, in the batch's order
    for (slot, _, _, copies), table in zip(
        todo, _parse_files([(n, d) for _, n, d, _ in todo], opts, records), strict=True
    ):
        if copies > 1:
            table = _add_note(
                table, f"given {copies} times in one batch (same bytes): read once"
            )
        parts[slot] = table
    schema = output_schema()
    if not parts:
        return schema.empty_table()
    return pa.concat_tables([t.cast(schema) for t in parts])


def _add_note(table: pa.Table, note: str) -> pa.Table:
    """Append a note to the ``source`` row of one file's rows."""
    import pyarrow.compute as pc

    is_source = pc.equal(table.column("record"), "source")
    old = table.column("note")
    joined = pc.if_else(
        pc.is_null(old), note, pc.binary_join_element_wise(old, note, "; ")
    )
    column = pc.if_else(is_source, joined, old)
    return table.set_column(table.schema.get_field_index("note"), "note", column)


def parse_log_batches(
    batches: Iterable[pa.RecordBatch],
    **options: Any,  # noqa: ANN401
) -> Iterator[pa.RecordBatch]:
    """Spark ``mapInArrow`` face of :func:`parse_log_batch`.

    Parameters
    ----------
    batches : iterable of pyarrow.RecordBatch
        Spark's batches of a ``binaryFile`` frame (``path``, ``content``).
    **options
        Keyword arguments of :func:`parse_log_batch`.

    Yields
    ------
    pyarrow.RecordBatch
        The parsed records (:func:`output_schema`; Spark: :data:`SPARK_SCHEMA`).
    """
    for batch in batches:
        yield from parse_log_batch(batch, **options).to_batches()


def _parse_files(
    files: list[tuple[str, bytes]], opts: dict[str, Any], records: Mapping[str, str]
) -> list[pa.Table]:
    """Each file's rows, the small ones read together as one stream.

    The files are written to a temporary directory each (their names kept: a
    name gives the host and the boot-time record) and parsed by
    :func:`relkit.ingest.kernel.parse_kernel_logs`, as a directory ingest
    reads them; an unexpected error falls back to one file at a time, so it
    is charged to the file that caused it.
    """
    from relkit.ingest._kernel_read import file_host
    from relkit.ingest.kernel import parse_kernel_logs

    if len(files) <= 1:
        return [_parse_one(name, data, opts, records) for name, data in files]
    with tempfile.TemporaryDirectory(prefix="relkit-") as tmp:
        locals_, ids = [], []
        for i, (name, data) in enumerate(files):
            folder = Path(tmp) / str(i)
            folder.mkdir()
            local = folder / (PurePosixPath(name).name or "log")
            local.write_bytes(data)
            record = records.get(_sidecar_key(name))
            if record is not None:
                sidecar = folder / f"{file_host(Path(local.name))}{BTIME_SUFFIX}"
                sidecar.write_text(record, encoding="utf-8")
            locals_.append(local)
            ids.append(content_digest(local))
        try:
            logs = parse_kernel_logs(locals_, **opts)
        except IngestError as exc:  # an option wrong for every file
            return [
                _error_row(name, exc.reason, exc.line_no, ids[i])
                for i, (name, _) in enumerate(files)
            ]
        except Exception:  # a bug: find the file that causes it, one by one
            return [_parse_one(name, data, opts, records) for name, data in files]
        out = []
        for (name, _), local, ident, log in zip(files, locals_, ids, logs, strict=True):
            if isinstance(log, IngestError):
                reason = log.reason.replace(str(local), name)
                out.append(_error_row(name, reason, log.line_no, ident))
            else:
                out.append(_log_rows(name, log, ident))
        return out


def _parse_one(
    path: str, data: bytes, opts: dict[str, Any], records: Mapping[str, str]
) -> pa.Table:
    """One file's rows (a ``source`` row with ``error`` when it is refused)."""
    from relkit.ingest._kernel_read import file_host
    from relkit.ingest.kernel import parse_kernel_log

    name = _local_name(path)
    ids: tuple[str | None, str | None] = (None, None)
    with tempfile.TemporaryDirectory(prefix="relkit-") as tmp:
        local = Path(tmp) / (PurePosixPath(name).name or "log")
        local.write_bytes(data)
        record = records.get(_sidecar_key(path))
        if record is not None:
            sidecar = Path(tmp) / f"{file_host(Path(local.name))}{BTIME_SUFFIX}"
            sidecar.write_text(record, encoding="utf-8")
        try:
            ids = content_digest(local)
            log = parse_kernel_log(local, name=name, **opts)
        except IngestError as exc:
            reason = exc.reason.replace(str(local), name)
            return _error_row(path, reason, exc.line_no, ids)
        except Exception as exc:  # a bug must not stop the fleet's job: say it
            reason = (
                f"internal error while parsing ({type(exc).__name__}: {exc}); "
                "please report it with the file"
            )
            return _error_row(path, reason, None, ids)
    return _log_rows(path, log, ids)


def _log_rows(
    path: str, log: KernelLog, ids: tuple[str | None, str | None]
) -> pa.Table:
    """Give one parsed file's rows: ``source``, events, rejects, counts, spans."""
    import polars as pl

    source = pl.DataFrame(
        {
            "record": ["source"],
            "n_lines": [log.n_lines],
            "content_hash": [ids[0]],
            "content_sha256": [ids[1]],
            "options": [json.dumps(log.options, sort_keys=True, default=str)],
            "note": [log.note],
        },
        schema={
            "record": pl.String,
            "n_lines": pl.Int64,
            "content_hash": pl.String,
            "content_sha256": pl.String,
            "options": pl.String,
            "note": pl.String,
        },
    )
    frames: list[pl.DataFrame] = [source]
    if log.events.height:
        frames.append(
            log.events.select(EVENT_COLUMNS).with_columns(record=pl.lit("event"))
        )
    if log.rejects.height:
        frames.append(
            log.rejects.select("line_no", "reason", "raw").with_columns(
                record=pl.lit("reject")
            )
        )
    if log.ignored.height:
        frames.append(
            log.ignored.select("reason", "n_lines").with_columns(
                record=pl.lit("ignored")
            )
        )
    if log.spans is not None and log.spans.height:
        frames.append(
            log.spans.select("host", "first_ts", "last_ts", "n_lines").with_columns(
                record=pl.lit("span")
            )
        )
    frame = pl.concat(frames, how="diagonal_relaxed").with_columns(path=pl.lit(path))
    return _conform(frame)


def _error_row(
    path: str | None,
    reason: str,
    line_no: int | None,
    ids: tuple[str | None, str | None],
) -> pa.Table:
    import polars as pl

    frame = pl.DataFrame(
        {
            "record": ["source"],
            "path": [path],
            "content_hash": [ids[0]],
            "content_sha256": [ids[1]],
            "error": [reason],
            "error_line_no": [line_no],
        },
        schema={
            "record": pl.String,
            "path": pl.String,
            "content_hash": pl.String,
            "content_sha256": pl.String,
            "error": pl.String,
            "error_line_no": pl.Int64,
        },
    )
    return _conform(frame)


def _conform(frame: pl.DataFrame) -> pa.Table:
    """Add the missing output columns as nulls, in order, as Arrow."""
    import polars as pl

    dtypes = {
        "string": pl.String,
        "int64": pl.Int64,
        "float64": pl.Float64,
        "timestamp": pl.Datetime("us", "UTC"),
    }
    cols = [
        pl.col(name).cast(dtypes[kind])
        if name in frame.columns
        else pl.lit(None, dtype=dtypes[kind]).alias(name)
        for name, kind in OUTPUT_COLUMNS
    ]
    return frame.select(cols).to_arrow().cast(output_schema())


# -- finding the files -----------------------------------------------------------------
def list_logs(paths: str | Sequence[str]) -> tuple[list[str], dict[str, str]]:
    """Expand directories and globs into log files, with their boot-time records.

    Local paths and any URI :mod:`pyarrow.fs` opens (``s3://``, ``gs://``,
    ``hdfs://``, ``abfs://``; the ones Ray Data reads) are listed the same
    way. A directory is walked recursively and its files are chosen by
    :func:`is_log_file` (the rule of :func:`relkit.ingest.kernel.read_kernel`);
    a glob keeps the matching files that rule keeps, with the shell's
    semantics: ``*``, ``?`` and ``[...]`` match within one path segment
    (``logs/*.log`` does not reach ``logs/sub/x.log``), only ``**`` crosses
    directories (``logs/**/*.log``), and only then is the base directory
    walked recursively (local paths: :func:`glob.glob`; URIs: the same rule
    on the listed keys). A file named explicitly is always taken.

    Parameters
    ----------
    paths : str or sequence of str
        Directories, files, globs or URIs.

    Returns
    -------
    tuple of (list of str, dict of str to str)
        The log files, sorted (local ones absolute, URIs with their scheme),
        and the text of every ``*.btime`` record found beside them, by its
        scheme-less path (the ``boot_records`` of :func:`parse_log_batch`).

    Raises
    ------
    IngestError
        If a path does not exist, or nothing to read was found.
    """
    found, records = list_logs_as_given(paths)
    return sorted({worker for worker, _ in found}), records


def list_logs_as_given(
    paths: str | Sequence[str],
) -> tuple[list[tuple[str, str]], dict[str, str]]:
    """Return :func:`list_logs`'s files each with its path as the user gave it.

    The form ``read_kernel`` records as a source's ``path``: a file of a
    directory given as ``sim/kernel`` is ``sim/kernel/gpu001.log`` (relative
    stays relative), a glob's match as :func:`glob.glob` returns it, a URI as
    it is.

    Parameters
    ----------
    paths : str or sequence of str
        As for :func:`list_logs`.

    Returns
    -------
    tuple of (list of (str, str), dict of str to str)
        ``(worker, given)`` pairs sorted by ``worker`` (the absolute path or URI
        the workers read), and the ``*.btime`` records as :func:`list_logs`.

    Raises
    ------
    IngestError
        As :func:`list_logs`.
    """
    import pyarrow.fs as pafs

    files: dict[str, str] = {}
    records: dict[str, str] = {}
    near_dirs: set[tuple[str, str]] = set()  # (scheme, dir) to look for .btime
    given = [paths] if isinstance(paths, str | Path) else list(paths)
    for raw in given:
        text = str(raw)
        glob_at = re.search(r"[*?\[]", text)
        if _SCHEME.match(text):
            # a URI's glob part is no URI (``?`` would start its query)
            cut = text.rfind("/", 0, glob_at.start()) if glob_at else len(text)
            fs, root = pafs.FileSystem.from_uri(text[:cut])
            root += text[cut:]
            scheme = text.split("://", 1)[0] + "://"
        else:
            fs, root, scheme = pafs.LocalFileSystem(), str(Path(text).resolve()), ""
        if glob_at:
            for worker, shown, base in _glob(fs, text, root, scheme):
                if is_log_file(_rel(worker[len(scheme) :], base)):
                    files.setdefault(worker, shown)
                    near_dirs.add((scheme, worker[len(scheme) :].rsplit("/", 1)[0]))
            continue
        info = fs.get_file_info(root)
        if info.type == pafs.FileType.NotFound:
            msg = "no such file or directory. Check the path (or the URI)."
            raise IngestError(text, msg)
        if info.type == pafs.FileType.Directory:
            for i in _walk(fs, root):
                rel = _rel(i.path, root)
                if rel.endswith(BTIME_SUFFIX) and not any(
                    p.startswith(".") for p in PurePosixPath(rel).parts
                ):
                    records[_record_key(i.path)] = _read_text(fs, i.path)
                elif is_log_file(rel):
                    shown = scheme + i.path if scheme else str(Path(text) / rel)
                    files.setdefault(scheme + i.path, shown)
        else:
            files.setdefault(scheme + root, text if scheme else str(Path(text)))
            near_dirs.add((scheme, root.rsplit("/", 1)[0] or "/"))
    for scheme, folder in sorted(near_dirs):
        fs = pafs.FileSystem.from_uri(scheme + folder)[0] if scheme else None
        fs = fs or pafs.LocalFileSystem()
        for i in fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
            name = i.path.rsplit("/", 1)[-1]
            if (
                i.type == pafs.FileType.File
                and name.endswith(BTIME_SUFFIX)
                and not name.startswith(".")
            ):
                records.setdefault(_record_key(i.path), _read_text(fs, i.path))
    if not files:
        msg = (
            "has no log files; expected per-host logs (documentation such as "
            f"{sorted(NOT_LOG_SUFFIXES)}, NOTICE/LICENSE/README, hidden files and "
            "*.btime records are skipped)."
        )
        raise IngestError(", ".join(map(str, given)), msg)
    return sorted(files.items()), records


def _read_text(fs: Any, path: str) -> str:  # noqa: ANN401
    with fs.open_input_stream(path, compression=None) as fh:
        return fh.read().decode("utf-8", "replace")


def _glob(
    fs: Any,  # noqa: ANN401
    text: str,
    root: str,
    scheme: str,
) -> list[tuple[str, str, str]]:
    """Files matching a glob: ``(worker path, path as given, base directory)``.

    ``*`` stays within a segment; ``**`` (a whole segment) crosses directories.
    """
    import glob as globbing

    import pyarrow.fs as pafs

    parts = root.split("/")
    first = next(k for k, part in enumerate(parts) if re.search(r"[*?\[]", part))
    base = "/".join(parts[:first]) or "/"
    if not scheme:  # local: the shell's rule, as glob.glob has it
        return [
            (str(Path(g).resolve()), g, base)
            for g in globbing.glob(text, recursive="**" in text)  # noqa: PTH207
            if Path(g).is_file()
        ]
    if "**" in root:
        pattern = _glob_regex(root)
        return [
            (scheme + i.path, scheme + i.path, base)
            for i in _walk(fs, base)
            if pattern.fullmatch(i.path)
        ]
    # no **: one listing per level, never the whole tree under the base
    level = [base]
    for k, part in enumerate(parts[first:], first):
        last = k == len(parts) - 1
        nxt = []
        for folder in level:
            if not re.search(r"[*?\[]", part):
                nxt.append(f"{folder.rstrip('/')}/{part}")
                continue
            selector = pafs.FileSelector(folder, allow_not_found=True)
            for i in fs.get_file_info(selector):
                name = i.path.rsplit("/", 1)[-1]
                wanted = pafs.FileType.File if last else pafs.FileType.Directory
                if i.type == wanted and fnmatch.fnmatchcase(name, part):
                    nxt.append(i.path)
        level = nxt
    infos = fs.get_file_info(level) if level else []
    return [
        (scheme + i.path, scheme + i.path, base)
        for i in infos
        if i.type == pafs.FileType.File
    ]


def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob: ``*``, ``?``, ``[..]`` within a segment, ``**/`` any depth."""
    out, k = [], 0
    while k < len(pattern):
        c = pattern[k]
        if pattern.startswith("**/", k):
            out.append("(?:[^/]*/)*")
            k += 3
        elif pattern.startswith("**", k):
            out.append(".*")
            k += 2
        elif c == "*":
            out.append("[^/]*")
            k += 1
        elif c == "?":
            out.append("[^/]")
            k += 1
        elif c == "[" and (end := pattern.find("]", k + 2)) != -1:
            body = pattern[k + 1 : end]
            body = "^" + body[1:] if body.startswith("!") else body
            out.append(f"[{body.replace(chr(92), chr(92) * 2)}]")
            k = end + 1
        else:
            out.append(re.escape(c))
            k += 1
    return re.compile("".join(out))


def _walk(fs: Any, root: str) -> list[Any]:  # noqa: ANN401
    import pyarrow.fs as pafs

    selector = pafs.FileSelector(root, recursive=True)
    return [i for i in fs.get_file_info(selector) if i.type == pafs.FileType.File]


def _rel(path: str, base: str) -> str:
    return path[len(base) :].lstrip("/") if path.startswith(base) else path


# -- Ray -------------------------------------------------------------------------------
@dataclass(frozen=True)
class ParseSummary:
    """What :func:`ray_parse` did.

    Parameters
    ----------
    out_dir : str
        Where the Parquet files are.
    n_files : int
        Log files parsed (refused ones included).
    n_refused : int
        Files a worker could not read (``source`` rows with ``error``).
    n_lines : int
        Lines of the files read.
    n_events, n_rejected, n_ignored : int
        Event rows, rejected lines and ignored lines;
        ``n_lines == n_events + n_rejected + n_ignored``.
    n_boot_records : int
        ``*.btime`` records passed to the workers.
    workers : int or None
        CPUs of the Ray cluster used.
    wall_s : float
        Wall time of the parse and write, seconds (Ray start-up excluded).
    lines_per_s : float
        ``n_lines / wall_s``.
    """

    out_dir: str
    n_files: int
    n_refused: int
    n_lines: int
    n_events: int
    n_rejected: int
    n_ignored: int
    n_boot_records: int
    workers: int | None
    wall_s: float
    lines_per_s: float

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a dict (for JSON output).

        Returns
        -------
        dict
        """
        return asdict(self)


def ray_parse(
    paths: str | Sequence[str],
    out_dir: str | Path,
    *,
    address: Literal["auto", "local"] | str | None = None,
    num_workers: int | None = None,
    tz: str | None = None,
    reference_date: str | dt.date | None = None,
    host: str | None = None,
    host_from_filename: bool = False,
    boot_time: str | dt.datetime | None = None,
    batch_size: int = 32,
    progress: Callable[[str], None] | None = None,
) -> ParseSummary:
    """Parse kernel/syslog logs on a Ray cluster and write Parquet for the store.

    The files :func:`list_logs` finds are read on the workers as raw bytes
    (``pyarrow.fs`` with ``compression=None``: a ``.gz`` file is hashed as
    its compressed bytes, as :func:`relkit.ingest.kernel.read_kernel` hashes
    it, and decompressed by its magic bytes; Ray's ``read_binary_files``
    would decompress by the file name's suffix), parsed by
    ``map_batches(parse_log_batch)`` and written with ``write_parquet(out_dir)``
    beside a manifest, ``_relkit_manifest.json``
    (:data:`relkit.ingest.parsed_logs.MANIFEST`: every input file, its path as
    given and the options). Load the output with ``relkit ingest --kind
    parsed-logs OUT_DIR`` (:func:`relkit.ingest.parsed_logs.read_parsed_logs`),
    which refuses an output with a file of the manifest missing.

    Parameters
    ----------
    paths : str or sequence of str
        Directories, globs, files, or URIs Ray Data reads (``s3://bucket/logs/``,
        ``gs://``, ``hdfs://``; the workers need the credentials). In a
        directory, documentation, hidden files and ``*.btime`` records are
        skipped as :func:`relkit.ingest.kernel.read_kernel` skips them; the
        records are read on the driver and given to the workers
        (``boot_records``).
    out_dir : str or Path
        Output directory (local or a URI); must not hold files already
        (Parquet of two runs would mix) and must not be inside an input
        directory. On a cluster of several machines it must be a shared
        filesystem or an object store (``s3://...``): each worker writes its
        partitions where it runs, so a local directory would hold only the
        driver machine's share (the loader then refuses the missing files).
    address : {"auto", "local"} or str, optional
        ``"auto"``: join the running cluster (``ray start`` / ``RAY_ADDRESS``);
        ``"local"``: start a Ray instance on this machine for the call; any
        other text: a Ray address (``ray://head:10001`` needs Ray Client,
        ``pip install 'ray[client]'``). Default: a Ray already initialised in
        this process, else ``"local"``.
    num_workers : int, optional
        CPUs of a local instance (default: all of the machine's).
    tz, reference_date, host, host_from_filename, boot_time
        As for :func:`relkit.ingest.kernel.read_kernel`.
    batch_size : int, default 32
        Files per ``map_batches`` call: a worker reads its batch's small files
        as one stream, as a directory ingest does (the fixed cost per file is
        then small); the batch's files are held in the worker's memory, so
        lower it for large files.
    progress : callable, optional
        Gets one line once the options are checked and the files listed
        (``parsing N file(s) ... on Ray``).

    Returns
    -------
    ParseSummary

    Raises
    ------
    ImportError
        If ray is not installed (``pip install 'relkit[ray]'``), or a
        ``ray://`` address is given without Ray Client (``pip install
        'ray[client]'``).
    IngestError
        If a path is missing, nothing is found to read, or an option is
        invalid (zone, reference date, boot time). A file the workers cannot
        read does not raise: it is a ``source`` row with ``error``, reported
        when loaded.
    InvalidParameterError
        If ``out_dir`` already holds files or is inside an input directory, or
        ``batch_size`` < 1.
    """
    import ray

    from relkit.ingest._common import check_tz
    from relkit.ingest._kernel_time import parse_boot_time, parse_reference_date

    label = str(paths if isinstance(paths, str | Path) else ", ".join(map(str, paths)))
    check_tz(label, tz)
    parse_reference_date(label, reference_date)
    parse_boot_time(label, boot_time)
    if batch_size < 1:
        msg = f"batch_size must be at least 1; found {batch_size}."
        raise InvalidParameterError(msg)
    out = str(out_dir)
    given = [paths] if isinstance(paths, str | Path) else list(paths)
    _check_out(out, [str(g) for g in given])
    _check_empty(out)
    # the workers' working directory is not this one: give them the full path
    target = out if _SCHEME.match(out) else str(Path(out).resolve())
    found, records = list_logs_as_given(paths)
    files = [worker for worker, _ in found]
    options = {
        "tz": tz,
        "reference_date": reference_date,
        "host": host,
        "host_from_filename": host_from_filename,
        "boot_time": boot_time,
    }
    started_here = _start_ray(ray, address, num_workers)
    try:
        workers = int(ray.cluster_resources().get("CPU", 0)) or None
        if progress is not None:
            where = address or "local"
            progress(
                f"parsing {len(files)} file(s) of {label} on Ray ({where}, "
                f"{workers} CPU(s)) into {out}"
            )
        began = time.perf_counter()
        _write_manifest(out, found, options, len(records))
        ds = ray.data.from_items(
            [{"path": f} for f in files], override_num_blocks=max(1, len(files))
        )
        ds = ds.map_batches(
            read_and_parse,
            batch_size=batch_size,
            batch_format="pyarrow",
            fn_kwargs={**options, "boot_records": records},
        )
        ds.write_parquet(target)
        wall_s = time.perf_counter() - began
    finally:
        if started_here:
            ray.shutdown()
    return _summary(target, len(files), len(records), workers, wall_s)


def _start_ray(ray: Any, address: str | None, num_workers: int | None) -> bool:  # noqa: ANN401
    """Start or join Ray as ``address`` says; True when this call started it."""
    if ray.is_initialized():
        return False
    if address in (None, "local"):
        ray.init(
            num_cpus=num_workers,
            include_dashboard=False,
            log_to_driver=False,
            configure_logging=False,
        )
        return True
    try:
        ray.init(address=address, log_to_driver=False, configure_logging=False)
    except ValueError as exc:
        if "ray[client]" not in str(exc):
            raise
        msg = (
            f"--address {address} is a Ray Client address, which needs Ray Client: "
            "pip install 'ray[client]' (or run relkit on the head node with "
            "--address auto)"
        )
        raise ImportError(msg) from exc
    return True


def read_and_parse(batch: pa.Table, **options: Any) -> pa.Table:  # noqa: ANN401
    """Read each ``path`` of a batch as raw bytes, then :func:`parse_log_batch`.

    The Ray step of :func:`ray_parse`: the file is opened with
    :mod:`pyarrow.fs` (local paths and URIs) and ``compression=None``, so its
    bytes are the file's own (a ``.gz`` file stays compressed: its identity
    is that of :func:`relkit.ingest.kernel.read_kernel`, which decompresses by
    the magic bytes).

    Parameters
    ----------
    batch : pyarrow.Table
        One column ``path``: absolute local paths or URIs.
    **options
        Keyword arguments of :func:`parse_log_batch`.

    Returns
    -------
    pyarrow.Table
        :func:`parse_log_batch`'s rows; a file that cannot be opened is a
        ``source`` row with ``error``.
    """
    import pyarrow as pa
    import pyarrow.fs as pafs

    paths = [str(p) for p in batch.column("path").to_pylist()]
    good: list[str] = []
    data: list[bytes] = []
    parts = []
    for path in paths:
        try:
            if _SCHEME.match(path):
                fs, key = pafs.FileSystem.from_uri(path)
            else:
                fs, key = pafs.LocalFileSystem(), path
            with fs.open_input_stream(key, compression=None) as fh:
                data.append(fh.read())
            good.append(path)
        except OSError as exc:
            reason = f"cannot be read on the worker ({exc}); check the path and access"
            parts.append(_error_row(path, reason, None, (None, None)))
    if good:
        parts.append(
            parse_log_batch(pa.table({"path": good, "bytes": data}), **options)
        )
    if not parts:
        return output_schema().empty_table()
    return pa.concat_tables([t.cast(output_schema()) for t in parts])


def _write_manifest(
    out: str,
    found: Sequence[tuple[str, str]],
    options: Mapping[str, Any],
    n_records: int,
) -> None:
    """Write the list of input files beside the Parquet (the loader checks it)."""
    import pyarrow.fs as pafs

    from relkit.ingest.parsed_logs import MANIFEST

    body = {
        "format": "relkit parsed-logs",
        "version": 1,
        "files": [{"path": shown, "read_as": worker} for worker, shown in found],
        "options": {k: None if v is None else str(v) for k, v in options.items()},
        "n_boot_records": n_records,
    }
    text = json.dumps(body, indent=1, sort_keys=True).encode()
    if _SCHEME.match(out):
        fs, root = pafs.FileSystem.from_uri(out)
    else:
        fs, root = pafs.LocalFileSystem(), str(Path(out).resolve())
    fs.create_dir(root, recursive=True)
    with fs.open_output_stream(f"{root.rstrip('/')}/{MANIFEST}") as fh:
        fh.write(text)


def _check_out(out: str, given: Sequence[str]) -> None:
    """Refuse an output directory inside (or equal to) an input directory."""
    import pyarrow.fs as pafs

    def key(text: str) -> str:
        if _SCHEME.match(text):
            return text.rstrip("/")
        return str(Path(text).resolve())

    where = key(out)
    for text in given:
        glob_at = re.search(r"[*?\[]", text)
        if glob_at:
            if "**" not in text:
                continue  # a one-level glob never reaches into a subdirectory
            folder = key(text[: glob_at.start()].rsplit("/", 1)[0] or "/")
        else:
            folder = key(text)
            if _SCHEME.match(text):
                fs, root = pafs.FileSystem.from_uri(text)
                if fs.get_file_info(root).type != pafs.FileType.Directory:
                    continue
            elif not Path(text).is_dir():
                continue
        if where == folder or where.startswith(folder.rstrip("/") + "/"):
            msg = (
                f"--out {out} is inside the input directory {text}: the next "
                "directory ingest would read the Parquet as logs. Give an --out "
                "outside it, e.g. next to it."
            )
            raise InvalidParameterError(msg)


def _check_empty(out: str) -> None:
    import pyarrow.fs as pafs

    fs, root = (
        pafs.FileSystem.from_uri(out)
        if _SCHEME.match(out)
        else (pafs.LocalFileSystem(), str(Path(out).resolve()))
    )
    info = fs.get_file_info(root)
    if info.type == pafs.FileType.File:
        msg = f"--out {out} is a file; give a directory for the Parquet output."
        raise InvalidParameterError(msg)
    if info.type == pafs.FileType.Directory and fs.get_file_info(
        pafs.FileSelector(root, recursive=True)
    ):
        msg = (
            f"--out {out} already holds files; the Parquet of two runs would mix. "
            "Give a new or empty directory."
        )
        raise InvalidParameterError(msg)


def _summary(
    out: str, n_files: int, n_records: int, workers: int | None, wall_s: float
) -> ParseSummary:
    """Count the records written (from the Parquet output itself)."""
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

    table = pads.dataset(out, format="parquet").to_table(
        columns=["record", "n_lines", "error"]
    )
    rec = table.column("record")

    def where(kind: str) -> pa.Table:
        return table.filter(pc.equal(rec, kind))

    sources = where("source")
    n_lines = int(pc.sum(sources.column("n_lines")).as_py() or 0)
    ignored = int(pc.sum(where("ignored").column("n_lines")).as_py() or 0)
    return ParseSummary(
        out_dir=out,
        n_files=n_files,
        n_refused=int(pc.sum(pc.is_valid(sources.column("error"))).as_py() or 0),
        n_lines=n_lines,
        n_events=where("event").num_rows,
        n_rejected=where("reject").num_rows,
        n_ignored=ignored,
        n_boot_records=n_records,
        workers=workers,
        wall_s=wall_s,
        lines_per_s=n_lines / wall_s if wall_s > 0 else float("nan"),
    )
