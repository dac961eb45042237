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
from relkit.ingest._common import IngestResult, as_of_option, record_span
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
_EVENTS = (
    "line_no",
    "ts",
    "host",
    "device",
    "code",
    "failure_mode",
    "severity",
    "detail",
    "flags",
    "count",
    "mono_s",
)
#: Source options that say how a file was read (``options_dict`` of kernel.py).
_READING = ("tz", "reference_date", "host", "boot_time")
_TOP_REASONS = 3
_FIRST_LINES = 5


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
    as_of_opts = as_of_option(path, as_of)
    results: list[IngestResult] = []
    failures: list[IngestError] = []
    by_path = frame.partition_by("path", as_dict=True, maintain_order=True)
    nulls = by_path.pop((None,), None)
    if nulls is not None:  # a batch row without a path: refused by the parse
        for src in nulls.filter(pl.col("record") == "source").iter_rows(named=True):
            why = src["error"] or "a row without a path"
            failures.append(IngestError(_NULL_PATH, why))
    names = sorted(set(shown) | {k[0] for k in by_path}, key=lambda n: shown.get(n, n))
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
            results.append(
                _load_one(
                    store,
                    shown[name],
                    rows,
                    resolved=_resolved(name),
                    replace=replace,
                    as_of=as_of_opts,
                    legacy=store.holds_sha256(SOURCE_KIND),
                )
            )
        except IngestError as exc:
            failures.append(exc)
    if failures:
        n_files = len(names) + sum(1 for f in failures if f.path == _NULL_PATH)
        raise PartialIngestError(path, failures, results, n_files)
    return results


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


def _load_one(
    store: Store,
    name: str,
    rows: pl.DataFrame,
    *,
    resolved: str,
    replace: bool,
    as_of: dict[str, str],
    legacy: bool,
) -> IngestResult:
    """Check, skip or refuse, and write one file's rows as a kernel source."""
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
    events = rows.filter(rec == "event").select(_EVENTS)
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
    same_path, same_bytes = _earlier(store, ids, resolved)
    tables = {"events": events, "log_spans": spans}
    proven = json.loads(src["options"])
    options = {
        **as_of,
        **record_span(tables),
        **proven,
        "resolved_path": resolved,
    }
    if not replace and same_bytes:
        # the options read_kernel compares: how the file was read, and as_of
        given = {k: proven[k] for k in _READING if k in proven} | as_of
        note = _skip_note(same_bytes[0], resolved, given)
        return IngestResult(name, SOURCE_KIND, None, 0, 0, 0, skipped=True, note=note)
    if not replace and same_path:
        ids = ", ".join(str(r["source_id"]) for r in same_path)
        msg = (
            f"ingested before as source {ids} from this path ({resolved}); the "
            "file has changed since. Re-read it with --replace (library: "
            "replace=True), which drops the earlier rows first, or ingest the new "
            "lines as a file of their own."
        )
        raise IngestError(name, msg)
    drop = tuple(sorted(r["source_id"] for r in same_path + same_bytes))
    with store.transaction():
        source_id = store.next_source_id()
        for table, frame in tables.items():
            if frame.height:
                store.append(table, frame.with_columns(source_id=pl.lit(source_id)))
        store.append("rejects", rejects.with_columns(source_id=pl.lit(source_id)))
        store.append("ignored", ignored.with_columns(source_id=pl.lit(source_id)))
        got = store.add_source(
            name,
            content_hash=content_hash,
            kind=SOURCE_KIND,
            options=options,
            n_lines=n_lines,
            n_loaded=events.height,
            n_rejected=rejects.height,
            n_ignored=n_ignored,
        )
        if got != source_id:  # pragma: no cover - concurrent writer
            msg = "the store changed during ingest; retry with one writer at a time."
            raise IngestError(name, msg)
        store.drop_sources(drop)
    notes = [src["note"]] if src["note"] else []
    if drop:
        ids = ", ".join(map(str, drop))
        notes.append(
            f"replaced source{'s' if len(drop) > 1 else ''} {ids} (rows dropped)"
        )
    last, as_of_ts = options.get("last_record_ts"), options.get("as_of_ts")
    if (
        as_of_ts
        and last
        and dt.datetime.fromisoformat(str(last))
        > dt.datetime.fromisoformat(str(as_of_ts))
    ):
        notes.append(f"the file's last record ({last}) is after --as-of {as_of_ts}")
    top, n_reasons = _top_rejects(rejects)
    return IngestResult(
        name,
        SOURCE_KIND,
        source_id,
        n_lines,
        events.height,
        rejects.height,
        skipped=False,
        note="; ".join(notes) or None,
        replaced=drop,
        n_ignored=n_ignored,
        top_rejects=top,
        n_reasons=n_reasons,
        flag_counts=_flag_counts(events),
    )


def _resolved(name: str) -> str:
    """Return the path a source is known by: a local path resolved, a URI as it is."""
    if "://" in name:
        return name
    return str(Path(name).resolve())


def _earlier(
    store: Store, ids: tuple[str, ...], resolved: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Kernel sources from the same path (other bytes), and of the same bytes."""
    sources = store.table("sources").filter(pl.col("kind") == SOURCE_KIND)
    same_path, same_bytes = [], []
    for row in sources.iter_rows(named=True):
        options = json.loads(row["options"] or "{}")
        where = options.get("resolved_path") or _resolved(row["path"])
        row = row | {"options": options, "resolved_path": where}
        if row["content_hash"] in ids:
            same_bytes.append(row)
        elif where == resolved:
            same_path.append(row)
    return same_path, same_bytes


def _skip_note(
    known: dict[str, Any], resolved: str, options: dict[str, Any]
) -> str | None:
    """Why a file with known bytes was skipped, when that is not obvious."""
    old = known["options"]
    if diff := [k for k, v in options.items() if old.get(k) != v]:
        was = ", ".join(f"{k}={old.get(k)!r}" for k in diff)
        now = ", ".join(f"{k}={options[k]!r}" for k in diff)
        return (
            f"already ingested as source {known['source_id']} with {was}; pass "
            f"replace=True (--replace) to re-read with {now}"
        )
    if known["resolved_path"] != resolved:
        return (
            f"the same bytes were already ingested as source {known['source_id']} "
            f"from {known['path']}"
        )
    return None


def _top_rejects(
    rejects: pl.DataFrame,
) -> tuple[tuple[tuple[str, int, tuple[int, ...]], ...], int]:
    """Most frequent reject reasons with their first lines (IngestResult's form)."""
    if rejects.is_empty():
        return (), 0
    top = (
        rejects.group_by("reason")
        .agg(
            n=pl.len(),
            lines=pl.col("line_no").sort().head(_FIRST_LINES),
            first=pl.col("line_no").min(),
        )
        .sort(["n", "first"], descending=[True, False])
    )
    rows = tuple(
        (str(r), int(n), tuple(int(x) for x in lines))
        for r, n, lines in top.head(_TOP_REASONS).select("reason", "n", "lines").rows()
    )
    return rows, top.height


def _flag_counts(events: pl.DataFrame) -> tuple[tuple[str, int], ...]:
    """Count the flags of the loaded events, most frequent first."""
    if events.is_empty():
        return ()
    counts = (
        events.select(flag=pl.col("flags").str.split(","))
        .explode("flag")
        .drop_nulls()
        .filter(pl.col("flag") != "")
        .group_by("flag")
        .len()
        .sort(["len", "flag"], descending=[True, False])
    )
    return tuple((str(f), int(n)) for f, n in counts.rows())
