"""Load kernel logs parsed elsewhere (Ray, Spark) into the store, one source per file.

:func:`relkit.distributed.parse_log_batch` turns each log file into rows of
one long Parquet table (``record``: ``source``, ``event``, ``reject``,
``ignored``, ``span``). :func:`read_parsed_logs` writes each file of that
output as the ``kernel`` source :func:`relkit.ingest.kernel.read_kernel`
would have written: the same ``events``, ``log_spans``, ``rejects``,
``ignored`` rows, the same options, and the same skip and refuse rules by the
file's digest and path, so a file ingested either way is recognised as the
same source.
"""

import datetime as dt
import json
import warnings
from pathlib import Path
from typing import Any

import polars as pl

from relkit.errors import IngestError, PartialIngestError, RelkitWarning
from relkit.ingest._common import IngestResult, Parsed, ingest_many
from relkit.ingest.kernel import EVENT_COLUMNS
from relkit.store import HASH_ALGORITHM, Store

__all__ = ["KIND", "MANIFEST", "local_path", "read_parsed_logs"]

#: The ``relkit ingest --kind`` of parsed-log output; sources are ``kernel``.
KIND = "parsed-logs"
SOURCE_KIND = "kernel"
#: The list of input files :func:`relkit.distributed.ray_parse` writes beside
#: its Parquet (JSON: ``files``, each ``path`` as given and ``read_as``, the
#: absolute path or URI the workers read and the rows carry; ``options``).
MANIFEST = "_relkit_manifest.json"
_NULL_PATH = "<no path>"

_NEEDED = (
    "record",
    "path",
    "n_lines",
    "content_hash",
    "content_sha256",
    "options",
    "error",
)
#: Source options that say how a file was read (``options_dict`` of kernel.py).
_READING = ("tz", "reference_date", "host", "boot_time")


def read_parsed_logs(
    store: Store,
    path: str | Path,
    *,
    replace: bool = False,
    as_of: str | dt.datetime | None = None,
) -> list[IngestResult]:
    """Load the Parquet output of :func:`relkit.distributed.ray_parse` into a store.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        A directory of Parquet files (searched recursively) or one Parquet
        file, written by :func:`relkit.distributed.ray_parse` or by Spark's
        ``mapInArrow`` over :func:`relkit.distributed.parse_log_batches`
        (columns :data:`relkit.distributed.OUTPUT_COLUMNS`).
    replace : bool, default False
        Re-read files ingested before (same path or same bytes), dropping
        their earlier rows first, as :func:`relkit.ingest.kernel.read_kernel`.
    as_of : str or datetime, optional
        When the logs were collected (ISO 8601 with a zone): ``as_of_ts`` in
        each source's options.

    Returns
    -------
    list of IngestResult
        One per log file, in path order, ``kind="kernel"``: ``n_lines ==
        n_loaded + n_ignored + n_rejected``; a file whose bytes are in the store
        already is ``skipped`` (with a note when its options differ).

    Raises
    ------
    IngestError
        If the path is missing, is a file that is not Parquet (a raw log:
        use ``--kind kernel``), holds no Parquet, holds a Parquet file that is
        not parsed-log output (named, with its columns), or its manifest is
        unreadable. Nothing is written then.
    PartialIngestError
        When some files were refused: by a worker (its ``error``: not a text
        log, a zone needed, an event without host, no path, ...); because the
        output is incomplete (a file of the manifest without rows, a file
        with rows but not in the manifest, the lines of a file do not add up,
        or its ``source`` row is missing or twice); because their identity is
        of another algorithm than the store's; or because a file read before
        from the same path has changed (without ``replace``). The others are
        written first; ``failures`` names each refused file with its reason.

    Warns
    -----
    RelkitWarning
        When the output has no manifest (Spark's, or written by hand): it is
        loaded, but whether every file's rows are there cannot be checked.

    Notes
    -----
    :func:`relkit.distributed.ray_parse` writes :data:`MANIFEST` beside its
    Parquet: every input file with its path as the user gave it. A file's
    ``path`` in the store is that given path (``sim/kernel/gpu001.log`` stays
    relative, as :func:`relkit.ingest.kernel.read_kernel` records it), its
    ``resolved_path`` option the absolute path (or URI) the workers read.
    Without a manifest the path is the rows' ``path`` (``file:`` URIs as
    local paths, :func:`local_path`). The manifest checks that every file
    has its rows and no other file's rows are mixed in; it does not check
    values edited inside the Parquet by hand (out of scope: the lines of a
    file adding up is the only check of the rows themselves). Time columns
    are UTC.
    """
    p = Path(path)
    if not p.exists():
        msg = "no such file or directory. Check the path."
        raise IngestError(path, msg)
    hint = (
        "--kind parsed-logs loads the Parquet directory written by relkit ingest "
        "--engine ray --out DIR (relkit.distributed.ray_parse) or by Spark's "
        "mapInArrow; read raw logs with --kind kernel"
    )
    if p.is_file() and not _is_parquet(p):
        raise IngestError(path, f"is not Parquet: {hint}.")
    files = sorted(p.rglob("*.parquet")) if p.is_dir() else [p]
    if not files:
        raise IngestError(path, f"holds no Parquet files; {hint}.")
    frames = []
    for f in files:
        try:
            found = pl.read_parquet_schema(f)
        except (pl.exceptions.PolarsError, OSError) as exc:
            short = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc)
            msg = f"{f} is not readable as Parquet ({short}); write the output again."
            raise IngestError(path, msg) from exc
        if missing := [c for c in _NEEDED if c not in found]:
            msg = (
                f"{f} is not relkit's parse output (columns {missing} are missing; "
                f"found {list(found)[:6]}...); move it out of {path} and load again."
            )
            raise IngestError(path, msg)
        frames.append(pl.read_parquet(f))
    frame = pl.concat(frames, how="diagonal_relaxed")
    frame = frame.with_columns(
        pl.col("path").replace({u: local_path(u) for u in frame["path"].drop_nulls()})
    )
    manifest = _read_manifest(path, p.parent if p.is_file() else p)
    if manifest is None:
        warnings.warn(
            RelkitWarning(
                f"{path} has no {MANIFEST} (Spark's output, or written by hand): "
                "whether every log file's rows are present cannot be checked"
            ),
            stacklevel=2,
        )
        shown = {n: n for n in frame["path"].drop_nulls().unique()}
    else:
        shown = manifest
    failures: list[IngestError] = []
    by_path = frame.partition_by("path", as_dict=True, maintain_order=True)
    nulls = by_path.pop((None,), None)
    if nulls is not None:  # a batch row without a path: refused by the parse
        for src in nulls.filter(pl.col("record") == "source").iter_rows(named=True):
            why = src["error"] or "a row without a path"
            failures.append(IngestError(_NULL_PATH, why))
    names = sorted(set(shown) | {k[0] for k in by_path}, key=lambda n: shown.get(n, n))
    legacy = store.holds_sha256(SOURCE_KIND)
    files: list[str] = []
    known: list[tuple[str, tuple[str, ...]]] = []
    reading: list[dict[str, Any]] = []
    parsed: dict[str, Parsed] = {}
    for name in names:
        rows = by_path.get((name,))
        if rows is None:
            msg = (
                f"is listed in {MANIFEST} but the output has no rows for it: a "
                f"Parquet partition of {path} is missing (or was written on another "
                "machine's local disk: --out must be a shared filesystem or object "
                "store on a multi-node cluster); parse again into an empty directory."
            )
            failures.append(IngestError(shown[name], msg))
            continue
        if name not in shown:
            msg = (
                f"has rows in {path} but is not in its {MANIFEST}: the directory "
                "mixes the output of several runs; parse again into an empty "
                "directory."
            )
            failures.append(IngestError(name, msg))
            continue
        try:
            got, ids = _parsed(shown[name], rows, legacy=legacy)
        except IngestError as exc:
            failures.append(exc)
            continue
        files.append(shown[name])
        known.append((_resolved(name), ids))
        # what read_kernel compares to skip with a note: how the file was read
        reading.append({k: got.options[k] for k in _READING if k in got.options})
        parsed[shown[name]] = got
    # checked, skipped or refused, and written as read_kernel does (one look at
    # the store's sources and one transaction for all)
    written = ingest_many(
        store,
        files,
        kind=SOURCE_KIND,
        options=reading,
        parse_many=lambda given: [parsed[g] for g in given],
        replace=replace,
        as_of=as_of,
        known=known,
    )
    results = [r for r in written if isinstance(r, IngestResult)]
    failures += [r for r in written if isinstance(r, IngestError)]
    if failures:
        n_files = len(names) + sum(1 for f in failures if f.path == _NULL_PATH)
        raise PartialIngestError(path, failures, results, n_files)
    return results


def _parsed(
    name: str, rows: pl.DataFrame, *, legacy: bool
) -> tuple[Parsed, tuple[str, ...]]:
    """One file's rows as the store writer takes them, and its identities.

    Raises IngestError when a worker refused the file, its rows are
    incomplete, or its identity is of another algorithm than the store's.
    """
    rec = pl.col("record")
    source = rows.filter(rec == "source")
    if source.height != 1:
        what = "no 'source' row" if source.height == 0 else "several 'source' rows"
        msg = (
            f"the parsed output has {what} for this file (a partition is missing, "
            "or two runs were written to one directory); parse it again into an "
            "empty directory."
        )
        raise IngestError(name, msg)
    src = source.row(0, named=True)
    if src["error"] is not None:
        raise IngestError(name, src["error"], line_no=src.get("error_line_no"))
    content_hash = str(src["content_hash"])
    if not content_hash.startswith(f"{HASH_ALGORITHM}:"):
        msg = (
            f"parsed with the identity {content_hash.partition(':')[0]!r} but the "
            f"store keys files by {HASH_ALGORITHM}; parse it again with this relkit "
            "version."
        )
        raise IngestError(name, msg)
    events = rows.filter(rec == "event").select(EVENT_COLUMNS)
    rejects = rows.filter(rec == "reject").select("line_no", "reason", "raw")
    ignored = (
        rows.filter(rec == "ignored")
        .select("reason", "n_lines")
        .cast({"n_lines": pl.Int64})
    )
    spans = rows.filter(rec == "span").select("host", "first_ts", "last_ts", "n_lines")
    n_lines = int(src["n_lines"])
    n_ignored = int(ignored.get_column("n_lines").sum())
    if events.height + n_ignored + rejects.height != n_lines:
        msg = (
            f"the parsed output is incomplete: {n_lines} lines but {events.height} "
            f"events + {n_ignored} ignored + {rejects.height} rejected (a "
            "partition is missing?); parse it again into an empty directory."
        )
        raise IngestError(name, msg)
    # a store upgraded from schema 6 knows older files by their SHA-256
    ids = (content_hash, str(src["content_sha256"])) if legacy else (content_hash,)
    got = Parsed(
        n_lines=n_lines,
        tables={"events": events, "log_spans": spans},
        rejects=rejects,
        options=json.loads(src["options"]),
        n_loaded=events.height,
        ignored=ignored,
        note=src["note"],
    )
    return got, ids


def local_path(path: str) -> str:
    """Return a ``file:`` URI as the local path it names; other text as it is.

    ``file:/x``, ``file:///x`` and ``file://localhost/x`` (Spark's
    ``binaryFile`` gives ``file:/x``) are ``/x``; a ``file://HOST/x`` of
    another host and every other URI or path are returned unchanged. Percent
    escapes are kept as they are (Spark does not escape its paths).

    Parameters
    ----------
    path : str
        A path or URI.

    Returns
    -------
    str

    Examples
    --------
    >>> [local_path(u) for u in ("file:/a/b", "file:///a/b", "file://localhost/a")]
    ['/a/b', '/a/b', '/a']
    """
    if not path.startswith("file:"):
        return path
    rest = path[len("file:") :]
    if rest.startswith("//"):
        host, _, tail = rest[2:].partition("/")
        if host not in ("", "localhost"):
            return path
        return "/" + tail
    return rest


def _is_parquet(path: Path) -> bool:
    """Whether a file starts with Parquet's magic bytes ``PAR1``."""
    with path.open("rb") as fh:
        return fh.read(4) == b"PAR1"


def _read_manifest(given: str | Path, folder: Path) -> dict[str, str] | None:
    """Read the manifest: ``read_as`` to the path as given (None: no manifest)."""
    where = folder / MANIFEST
    if not where.is_file():
        return None
    try:
        body = json.loads(where.read_text(encoding="utf-8"))
        return {str(f["read_as"]): str(f["path"]) for f in body["files"]}
    except (ValueError, KeyError, TypeError) as exc:
        msg = (
            f"its {MANIFEST} is not readable ({type(exc).__name__}: {exc}); parse "
            "again into an empty directory."
        )
        raise IngestError(given, msg) from exc


def _resolved(name: str) -> str:
    """Return the path a source is known by: a local path resolved, a URI as it is."""
    if "://" in name:
        return name
    return str(Path(name).resolve())
