"""Shared machinery of the readers: file checks, CSV/Parquet to strings, times, writing.

Every reader turns a file into string columns first (no type guessing), then
parses and validates the values with polars, and finally writes one file's rows,
rejects and ``sources`` row inside one :meth:`relkit.store.Store.transaction`.
"""

import csv
import datetime as dt
import io
import json
import re
import stat
import zoneinfo
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import duckdb
import numpy as np
import polars as pl

from relkit.display import html_table
from relkit.errors import IngestError
from relkit.schema import UTC
from relkit.store import Store, file_identities

#: Header columns each kind needs (required) and understands (optional).
REQUIRED: dict[str, tuple[str, ...]] = {
    "events": ("ts", "host", "failure_mode"),
    "assets": ("host", "in_service_ts"),
}
OPTIONAL: dict[str, tuple[str, ...]] = {
    "events": (
        "device",
        "code",
        "severity",
        "detail",
        "repaired_ts",
        "system",
        "category",
        "counts_as_failure",
    ),
    "assets": ("out_of_service_ts", "gpus", "device", "system", "observed_from_ts"),
}
#: A few header names that give the LANL failure file away.
LANL_MARKERS = ("Prob Started", "Prob Fixed", "Down Time", "nodenum")

_ISO = (
    r"^\s*(\d{4})-(\d{2})-(\d{2})"
    r"(?:[T ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d{1,9}))?)?)?"
    r"\s*(Z|z|UTC|[+-]\d{2}(?::?\d{2})?)?\s*$"
)


@dataclass(frozen=True)
class IngestResult:
    """What one file's ingest did.

    Parameters
    ----------
    path : str
        The file as given.
    kind : str
        Ingest kind (``events``, ``assets``, ``lanl``).
    source_id : int or None
        The new ``sources`` row, or None when the file was skipped.
    n_lines : int
        Data lines (records) in the file; ``n_loaded + n_ignored + n_rejected``
        always.
    n_loaded : int
        Records that became rows of the target table.
    n_rejected : int
        Records written to ``rejects`` with a reason.
    skipped : bool
        True if the same bytes were already ingested as this kind (nothing written).
    note : str or None, default None
        What the caller should know besides the counts: why a skipped file was
        not re-read although its options differ (``"already ingested as source 3
        with tz='UTC'; pass replace=True (--replace) to re-read with
        tz='Europe/Berlin'"``), or which earlier sources a ``replace=True`` read
        dropped.
    replaced : tuple of int, default ()
        ``source_id`` of the earlier sources whose rows were dropped before this
        read (``replace=True`` only).
    n_ignored : int, default 0
        Lines recognised as noise (kernel and nvidia-smi logs), counted by reason
        in the ``ignored`` table; 0 for table kinds.
    top_rejects : tuple of (str, int, tuple of int), default ()
        The most frequent reject reasons (at most :data:`TOP_REASONS`), each
        with its count and first line numbers (at most :data:`FIRST_LINES`),
        most frequent first (ties: earliest line first).
    n_reasons : int, default 0
        Distinct reject reasons in all.
    flag_counts : tuple of (str, int), default ()
        Flags the reader set on the loaded rows (``events.flags``,
        ``assets.flags``, ``jobs.flags``: ``no_wall_time``, ``dst_ambiguous``,
        ``in_service_unknown``, ...) with the number of rows carrying each,
        most frequent first.
    """

    path: str
    kind: str
    source_id: int | None
    n_lines: int
    n_loaded: int
    n_rejected: int
    skipped: bool
    note: str | None = None
    replaced: tuple[int, ...] = ()
    n_ignored: int = 0
    top_rejects: tuple[tuple[str, int, tuple[int, ...]], ...] = ()
    n_reasons: int = 0
    flag_counts: tuple[tuple[str, int], ...] = ()

    @property
    def all_rejected(self) -> bool:
        """True when the file had records and every one was rejected."""
        return (
            not self.skipped and self.n_lines > 0 and (self.n_rejected == self.n_lines)
        )

    def reject_summary(self) -> str | None:
        """Return the top reject reasons as one line, or None without rejects.

        Returns
        -------
        str or None
            ``'3 rejected: 2 × "reason" (lines 4, 9); 1 × "other" (line 7)'``;
            ``'; and N more reasons'`` when there are more than shown, ``…``
            after the line numbers when a reason has more lines than shown.

        Examples
        --------
        >>> r = IngestResult(
        ...     "f.csv",
        ...     "assets",
        ...     1,
        ...     3,
        ...     0,
        ...     3,
        ...     skipped=False,
        ...     top_rejects=(("bad ts", 2, (4, 9)), ("no host", 1, (7,))),
        ...     n_reasons=2,
        ... )
        >>> print(r.reject_summary())
        3 rejected: 2 × "bad ts" (lines 4, 9); 1 × "no host" (line 7)
        """
        if not self.n_rejected:
            return None
        parts = []
        for reason, n, lines in self.top_rejects:
            shown = ", ".join(map(str, lines)) + (", …" if n > len(lines) else "")
            parts.append(f'{n} × "{reason}" (line{"s" if n > 1 else ""} {shown})')
        more = self.n_reasons - len(self.top_rejects)
        if more > 0:
            parts.append(f"and {more} more reason{'s' if more > 1 else ''}")
        return f"{self.n_rejected} rejected: " + "; ".join(parts)

    def flag_summary(self) -> str | None:
        """Return the flag counts as one line, or None when no row has a flag.

        Returns
        -------
        str or None
            ``'12 no_wall_time, 1 dst_ambiguous'``.
        """
        if not self.flag_counts:
            return None
        return ", ".join(f"{n} {flag}" for flag, n in self.flag_counts)

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (for JSON output).

        Returns
        -------
        dict
            Field name to value (``replaced`` as a list); ``top_rejects`` and
            ``flag_counts`` as the one-line texts of :meth:`reject_summary` and
            :meth:`flag_summary` (None when empty), ``n_reasons`` left out.
        """
        out = asdict(self)
        out["replaced"] = list(self.replaced)
        out["top_rejects"] = self.reject_summary()
        out["flag_counts"] = self.flag_summary()
        del out["n_reasons"]
        return out

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("Ingested file", self.to_dict())


@dataclass(frozen=True)
class StringTable:
    """A file read as strings: one row per record, plus where each record came from."""

    frame: pl.DataFrame  # all String columns + line_no (Int64) + n_fields (Int64)
    columns: list[str]  # header names, as in the file (stripped)
    raw: Callable[[int], str]  # record index -> raw text


@dataclass(frozen=True)
class Parsed:
    """A reader's output for one file, before writing."""

    n_lines: int
    tables: dict[str, pl.DataFrame]
    rejects: pl.DataFrame  # line_no, reason, raw
    options: dict[str, Any]
    n_loaded: int
    ignored: pl.DataFrame | None = None  # reason, n_lines (noise counted, not kept)
    # what the reader found, put in IngestResult.note (e.g. nvsmi snapshots)
    note: str | None = None
    # called inside the write transaction with the new source_id, after the
    # replaced sources were dropped (nvsmi: derive later files' events again)
    after_write: Callable[[int], None] | None = None


# -- files ---------------------------------------------------------------------------
def check_file(path: str | Path) -> Path:
    """Return ``path`` as a Path if it is a readable non-empty file, else raise.

    Raises IngestError for a missing path, a directory, an unreadable file or an
    empty one (0 bytes; :data:`EMPTY_FILE`).
    """
    p = Path(path)
    if not p.exists():
        msg = "no such file. Check the path (relative to the current directory)."
        raise IngestError(path, msg)
    if p.is_dir():
        msg = "is a directory, not a file. Pass the files inside it, e.g. DIR/*.csv."
        raise IngestError(path, msg)
    try:
        with p.open("rb") as fh:
            first = fh.read(1)
    except OSError as exc:
        msg = f"cannot be read ({exc.strerror}). Fix permissions, e.g. chmod u+r FILE."
        raise IngestError(path, msg) from exc
    if not first:
        raise IngestError(path, EMPTY_FILE)
    return p


def _checked_identities(path: Path, *, sha256: bool) -> tuple[str, ...]:
    """:func:`check_file` and :func:`relkit.store.file_identities` in one read.

    The same refusals and messages as :func:`check_file` (missing, a
    directory, unreadable, empty), from one ``stat`` and the read that hashes
    the file: a directory of 10,000 logs checks each.
    """
    try:
        st = path.stat()
    except (FileNotFoundError, NotADirectoryError):
        msg = "no such file. Check the path (relative to the current directory)."
        raise IngestError(path, msg) from None
    except OSError as exc:
        msg = f"cannot be read ({exc.strerror}). Fix permissions, e.g. chmod u+r FILE."
        raise IngestError(path, msg) from exc
    if stat.S_ISDIR(st.st_mode):
        msg = "is a directory, not a file. Pass the files inside it, e.g. DIR/*.csv."
        raise IngestError(path, msg)
    if st.st_size == 0 and stat.S_ISREG(st.st_mode):
        raise IngestError(path, EMPTY_FILE)
    try:
        return file_identities(path, sha256=sha256)
    except OSError as exc:
        msg = f"cannot be read ({exc.strerror}). Fix permissions, e.g. chmod u+r FILE."
        raise IngestError(path, msg) from exc


#: Why an empty file is refused (every kind): nothing in it, so nothing to load.
EMPTY_FILE = (
    "the file is empty (0 bytes): nothing to ingest. The collection or the copy "
    "may have failed: collect or copy it again, or leave the file out."
)


def file_format(path: Path) -> str:
    """Guess a file's format from its first bytes (parquet, gzip, json, text, ...)."""
    with path.open("rb") as fh:
        head = fh.read(8192)
    if head.startswith(b"PAR1"):
        return "parquet"
    if head.startswith(b"\x1f\x8b"):
        return "gzip"
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    if head.startswith((b"\xfd7zXZ", b"BZh", b"\x28\xb5\x2f\xfd")):
        return "compressed"
    if head.startswith((b"\xff\xfe", b"\xfe\xff")) or _utf16_without_bom(head):
        return "utf16"
    if b"\x00" in head:
        return "binary"
    if head.lstrip(b"\xef\xbb\xbf \t\r\n")[:1] in (b"{", b"["):
        return "json"
    return "text"


def _utf16_without_bom(head: bytes) -> bool:
    """Tell ASCII text in UTF-16: every other byte NUL, the others not."""
    n = len(head) - len(head) % 2
    even, odd = head[0:n:2], head[1:n:2]
    return n >= 4 and (
        (odd.count(0) == len(odd) and 0 not in even)
        or (even.count(0) == len(even) and 0 not in odd)
    )


def header_hint(kind: str) -> str:
    """Return the expected header of a kind, for error messages."""
    if kind == "lanl":
        return "the LANL header (System, nodenum, Prob Started, Prob Fixed, ...)"
    cols = ", ".join(REQUIRED[kind])
    return f"a header with {cols} (optional: {', '.join(OPTIONAL[kind])})"


def guess_kind(columns: list[str]) -> str | None:
    """Return the kind a header looks like, or None."""
    names = {c.strip().lower() for c in columns}
    if all(m.lower() in names for m in LANL_MARKERS):
        return "lanl"
    for kind in ("events", "assets"):
        if set(REQUIRED[kind]) <= names:
            return kind
    return None


_HEADER_FIELD = re.compile(r"^[A-Za-z_][A-Za-z0-9_ ./()#%-]{0,39}$")


def looks_like_table(path: str | Path) -> str | None:
    r"""Describe the table a text file looks like, with the ``--kind`` to use.

    Used in messages when a file read as one kind yields nothing (a kernel log
    that is really a ``sacct -P`` dump, a CSV read as ``sacct``). Only the first
    non-empty line is looked at: JSON (Lines), or a header of at least three
    name-like fields separated by ``|``, ``,`` or tabs.

    Parameters
    ----------
    path : str or Path
        Any file; a missing or unreadable one gives None.

    Returns
    -------
    str or None
        A phrase such as ``"a pipe-separated table with a header (JobID,
        JobName, State, ...); a Slurm sacct -P dump is --kind sacct"``, or None
        when the file does not look like a table.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "x.txt"
    >>> _ = f.write_text("ts,host,failure_mode\n2024-01-01,n1,gpu/xid_79\n")
    >>> looks_like_table(f)
    'a comma-separated table with a header (ts, host, failure_mode); use --kind events'
    >>> _ = f.write_text("Mar  4 10:22:05 n1 kernel: eth0: link up, 100 Mbps, full\n")
    >>> looks_like_table(f) is None
    True
    """
    p = Path(path)
    try:
        fmt = file_format(p)
        with p.open("rb") as fh:
            head = fh.read(65536).decode("utf-8", errors="replace")
    except OSError:
        return None
    lines = [x.strip().lstrip("\ufeff") for x in head.splitlines()]
    first = next((x for x in lines if x), "")
    if fmt == "json":
        try:
            record = json.loads(first)
        except ValueError:
            record = None
        if isinstance(record, dict) and {"event", "ts"} <= set(record):
            return (
                "JSON Lines of a training run's checkpoint/step log; use "
                "--kind checkpoints"
            )
        if first in ("{", "[") or (
            isinstance(record, dict) and {"apiVersion", "items"} & set(record)
        ):  # journald's JSON export (MESSAGE, __REALTIME_TIMESTAMP) is a log
            return "Kubernetes JSON (kubectl get -o json); use --kind k8s"
        return None
    if fmt != "text" or not first:
        return None
    for sep, name in (("|", "pipe"), ("\t", "tab"), (",", "comma")):
        fields = [f.strip().strip('"') for f in first.split(sep)]
        fields = [f for f in fields if f] if sep == "|" else fields
        if len(fields) < 3 or not all(_HEADER_FIELD.match(f) for f in fields):
            continue
        shown = ", ".join(fields[:3]) + (", ..." if len(fields) > 3 else "")
        what = f"a {name}-separated table with a header ({shown})"
        if sep == "|":
            return f"{what}; a Slurm sacct -P dump is --kind sacct"
        names = {f.lower() for f in fields}
        if "ts" in names and names & {"job_id", "run_id"} and "host" not in names:
            return f"{what}; a checkpoint table is --kind checkpoints"
        kind = guess_kind(fields)
        if kind is not None:
            return f"{what}; use --kind {kind}"
        return f"{what}; tables are --kind events, assets, lanl or checkpoints"
    return None


def reject_format(path: Path, fmt: str, kind: str) -> None:
    """Raise IngestError for a file whose bytes cannot be the kind (gzip, JSON, ...)."""
    expected = f"--kind {kind} expects a CSV or Parquet file with {header_hint(kind)}"
    if kind == "lanl":
        expected = f"--kind lanl expects the LANL CSV with {header_hint(kind)}"
    fixes = {
        "gzip": "it is gzip-compressed; decompress it first (gunzip FILE)",
        "zip": "it is a zip archive; unpack it first (unzip FILE)",
        "compressed": "it is compressed (xz/bzip2/zstd); decompress it first",
        "utf16": (
            "it is UTF-16 encoded text; convert it to UTF-8 first, e.g. "
            "iconv -f UTF-16 -t UTF-8 IN > OUT"
        ),
        "binary": "it is a binary file (NUL bytes), not text",
        "json": "it looks like JSON; Kubernetes pod/job JSON is --kind k8s",
        "parquet": "it is Parquet; the LANL reader takes the original CSV",
    }
    msg = f"{fixes[fmt]}. {expected}."
    raise IngestError(path, msg)


def _delimiter(header_line: str) -> str:
    counts = {d: header_line.count(d) for d in (",", "\t", ";", "|")}
    best = max(counts, key=lambda d: counts[d])
    return best if counts[best] > 0 else ","


def read_csv_strings(path: Path) -> StringTable:
    r"""Read a CSV file as strings, keeping each record's physical line number.

    The dialect is RFC 4180 (``"`` quotes, ``""`` escapes); the delimiter is the
    most frequent of ``, \t ; |`` in the header line. Line 1 is the header; a
    record's ``line_no`` is the physical line it starts on, so quoted newlines and
    blank lines do not shift later numbers. Blank lines are not records. Empty
    fields are null; nothing is converted to another type.
    """
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        data = exc.object  # the bytes after a UTF-8 BOM, which exc.start counts in
        line = data[: exc.start].count(b"\n") + 1
        col = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        msg = (
            f"not UTF-8 text: byte 0x{data[exc.start]:02X} at byte {col} of the line "
            "is not valid UTF-8 (Latin-1 or Windows-1252?). Convert the file first, "
            "e.g. iconv -f LATIN1 -t UTF-8 IN > OUT"
        )
        raise IngestError(path, msg, line_no=line) from exc
    lines = list(io.StringIO(text, newline=""))
    if not lines:
        msg = "the file is empty; expected a header line and data lines."
        raise IngestError(path, msg)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(lines[0]))
    try:
        header = [h.strip() for h in next(reader)]
        records: list[list[str]] = []
        starts: list[int] = []
        ends: list[int] = []
        prev = reader.line_num
        for rec in reader:
            if rec:  # a blank line is not a record
                records.append(rec)
                starts.append(prev + 1)
                ends.append(reader.line_num)
            prev = reader.line_num
    except csv.Error as exc:
        msg = f"not a readable CSV ({exc}). Check the quoting near this line."
        raise IngestError(path, msg, line_no=reader.line_num) from exc
    width = len(header)
    data: dict[str, list[str | None]] = {f"c{i}": [] for i in range(width)}
    for rec in records:
        for i in range(width):
            value = rec[i] if i < len(rec) else ""
            data[f"c{i}"].append(value if value.strip() != "" else None)
    frame = pl.DataFrame(data, schema=dict.fromkeys(data, pl.String))
    frame = frame.with_columns(
        line_no=pl.Series(starts, dtype=pl.Int64),
        n_fields=pl.Series([len(r) for r in records], dtype=pl.Int64),
        record=pl.int_range(pl.len(), dtype=pl.Int64),
    )

    def raw(i: int) -> str:
        return "".join(lines[starts[i] - 1 : ends[i]]).rstrip("\r\n")

    return StringTable(frame=frame, columns=header, raw=raw)


def read_parquet_strings(store: Store, path: Path) -> StringTable:
    """Read a Parquet file with DuckDB, every column cast to VARCHAR.

    ``line_no`` is the 1-based row number (Parquet has no lines and no header).
    Timestamps with a zone come out as ``YYYY-MM-DD hh:mm:ss+00`` (the store's
    session zone is UTC); zone-less ones need ``tz``.
    """
    con = store.connection
    try:
        desc = con.execute(
            "DESCRIBE SELECT * FROM read_parquet(?)", [str(path)]
        ).fetchall()
        names = [row[0] for row in desc]
        casts = ", ".join(
            f'CAST("{n.replace(chr(34), chr(34) * 2)}" AS VARCHAR) AS c{i}'
            for i, n in enumerate(names)
        )
        frame = con.sql(
            f"SELECT {casts}, file_row_number "
            "FROM read_parquet(?, file_row_number = true) ORDER BY file_row_number",
            params=[str(path)],
        ).pl()
    except duckdb.Error as exc:
        short = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc)
        msg = (
            f"not a readable Parquet file ({short}). It may be truncated or still "
            "being written: copy it again, or export it anew."
        )
        raise IngestError(path, msg) from exc
    frame = frame.with_columns(
        [
            pl.col(f"c{i}").cast(pl.String).replace("", None).alias(f"c{i}")
            for i in range(len(names))
        ]
    )
    frame = frame.with_columns(
        line_no=(pl.col("file_row_number") + 1).cast(pl.Int64),
        n_fields=pl.lit(len(names), dtype=pl.Int64),
        record=pl.int_range(pl.len(), dtype=pl.Int64),
    ).drop("file_row_number")
    rows = frame.select([f"c{i}" for i in range(len(names))]).rows()

    def raw(i: int) -> str:
        return json.dumps(dict(zip(names, rows[i], strict=True)))

    return StringTable(frame=frame, columns=names, raw=raw)


# -- collection times ---------------------------------------------------------------
def as_of_option(path: str | Path, as_of: str | dt.datetime | None) -> dict[str, str]:
    """Validate an ``as_of`` instant and return ``{"as_of_ts": UTC ISO}`` (or {}).

    Raises IngestError for text that is no ISO 8601 time or a time without zone.
    """
    if as_of is None:
        return {}
    value = as_of
    if isinstance(value, str):
        try:
            value = dt.datetime.fromisoformat(value.strip())
        except ValueError as exc:
            msg = (
                f"--as-of {as_of!r} is not an ISO 8601 time; give the file's "
                "collection time with a zone, e.g. --as-of 2025-06-11T12:05:00Z"
            )
            raise IngestError(path, msg) from exc
    if not isinstance(value, dt.datetime):
        msg = f"as_of must be a datetime or ISO 8601 text; found {type(as_of)}"
        raise IngestError(path, msg)
    if value.tzinfo is None or value.utcoffset() is None:
        example = value.strftime("%Y-%m-%dT%H:%M:%SZ")
        msg = (
            f"--as-of {as_of!s} has no time zone; add one, e.g. --as-of {example} "
            "for UTC or an offset such as +02:00 (library: an aware datetime)"
        )
        raise IngestError(path, msg)
    return {"as_of_ts": value.astimezone(dt.UTC).isoformat()}


#: Tables whose instants are no records of the file (spans, declared modes).
_NOT_RECORDS = ("failure_modes", "log_spans")


def record_span(tables: dict[str, pl.DataFrame]) -> dict[str, str]:
    """``first_record_ts`` / ``last_record_ts``: min and max of every instant loaded.

    Over all UTC columns of the reader's tables (events ``ts, repaired_ts``;
    jobs ``submit_ts, start_ts, end_ts``; assets ``in_service_ts,
    out_of_service_ts, observed_from_ts``; ...), rejected records left out.
    Empty when no loaded record has a time.
    """
    lows, highs = [], []
    for name, frame in tables.items():
        if name in _NOT_RECORDS or frame.is_empty():
            continue
        cols = [c for c, t in frame.schema.items() if isinstance(t, pl.Datetime)]
        if not cols:
            continue
        got = frame.select(
            lo=pl.min_horizontal([pl.col(c).min() for c in cols]),
            hi=pl.max_horizontal([pl.col(c).max() for c in cols]),
        ).row(0)
        if got[0] is not None:
            lows.append(got[0])
            highs.append(got[1])
    if not lows:
        return {}
    return {
        "first_record_ts": min(lows).astimezone(dt.UTC).isoformat(),
        "last_record_ts": max(highs).astimezone(dt.UTC).isoformat(),
    }


#: Reasons and first line numbers :class:`IngestResult` keeps of a file's rejects.
TOP_REASONS = 3
FIRST_LINES = 5


def _top_rejects(
    rejects: pl.DataFrame,
) -> tuple[tuple[tuple[str, int, tuple[int, ...]], ...], int]:
    if rejects.is_empty():
        return (), 0
    top = (
        rejects.group_by("reason")
        .agg(
            n=pl.len(),
            lines=pl.col("line_no").sort().head(FIRST_LINES),
            first=pl.col("line_no").min(),
        )
        .sort(["n", "first"], descending=[True, False])
    )
    rows = tuple(
        (str(r), int(n), tuple(int(x) for x in lines))
        for r, n, lines in top.head(TOP_REASONS).select("reason", "n", "lines").rows()
    )
    return rows, top.height


def _flag_counts_by(
    frame: pl.DataFrame, key: str
) -> dict[int, tuple[tuple[str, int], ...]]:
    """:func:`_flag_counts` of each ``key`` (a source id) of one table at once."""
    counts = (
        frame.select(key, flag=pl.col("flags").cast(pl.String).str.split(","))
        .explode("flag")
        .drop_nulls()
        .filter(pl.col("flag") != "")
        .group_by(key, "flag")
        .len()
        .sort([key, "len", "flag"], descending=[False, True, False])
    )
    out: dict[int, list[tuple[str, int]]] = {}
    for sid, flag, n in counts.iter_rows():
        out.setdefault(int(sid), []).append((str(flag), int(n)))
    return {k: tuple(v) for k, v in out.items()}


def _merge_counts(
    a: tuple[tuple[str, int], ...], b: tuple[tuple[str, int], ...]
) -> tuple[tuple[str, int], ...]:
    """Sum two flag counts, most frequent first, then by name."""
    total: dict[str, int] = dict(a)
    for flag, n in b:
        total[flag] = total.get(flag, 0) + n
    return tuple(sorted(total.items(), key=lambda t: (-t[1], t[0])))


def _flag_counts(tables: dict[str, pl.DataFrame]) -> tuple[tuple[str, int], ...]:
    parts = [
        frame.select(flag=pl.col("flags").cast(pl.String).str.split(","))
        .explode("flag")
        .drop_nulls()
        for frame in tables.values()
        if "flags" in frame.columns and frame.height
    ]
    if not parts:
        return ()
    counts = (
        pl.concat(parts)
        .filter(pl.col("flag") != "")
        .group_by("flag")
        .len()
        .sort(["len", "flag"], descending=[True, False])
    )
    return tuple((str(f), int(n)) for f, n in counts.rows())


# -- times ----------------------------------------------------------------------------
def check_tz(path: str | Path, tz: str | None) -> str | None:
    """Validate an IANA zone name (None passes)."""
    if tz is None:
        return None
    try:
        zoneinfo.ZoneInfo(tz)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError) as exc:
        msg = (
            f"unknown time zone {tz!r}. Use an IANA name such as UTC, "
            "America/Denver or Europe/Berlin (--tz ZONE)."
        )
        raise IngestError(path, msg) from exc
    return tz


def localize(naive: pl.Expr, tz: str) -> tuple[pl.Expr, pl.Expr]:
    """Local wall-clock times in ``tz`` to UTC, never dropping one.

    Returns the UTC expression and a flags expression (``dst_ambiguous``: the
    fall-back hour, the earlier instant is taken; ``dst_nonexistent``: a time in
    the spring-forward gap, read as standard time, i.e. shifted +1 h).
    """
    early = naive.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
    late = naive.dt.replace_time_zone(tz, ambiguous="latest", non_existent="null")
    shifted = (naive + pl.duration(hours=1)).dt.replace_time_zone(
        tz, ambiguous="earliest", non_existent="null"
    )
    utc = pl.coalesce(early, shifted).dt.convert_time_zone("UTC")
    flag = (
        pl.when(naive.is_not_null() & early.is_null())
        .then(pl.lit("dst_nonexistent"))
        .when(early != late)
        .then(pl.lit("dst_ambiguous"))
    )
    return utc, flag


def parse_iso(
    frame: pl.DataFrame, column: str, tz: str | None
) -> tuple[pl.Series, pl.Series, pl.Series, pl.Series]:
    """Parse an ISO 8601 string column.

    Returns ``(utc, bad, zoneless, flags)``: the UTC instants (null if empty or
    bad), a mask of non-empty values that do not parse, a mask of values without
    a UTC offset, and DST flags from :func:`localize`.
    """
    s = frame[column]
    g = s.str.extract_groups(_ISO).struct.unnest()
    g.columns = ["y", "mo", "d", "h", "mi", "s", "f", "z"]
    stamp = pl.concat_str(
        [
            pl.col("y"),
            pl.lit("-"),
            pl.col("mo"),
            pl.lit("-"),
            pl.col("d"),
            pl.lit(" "),
            pl.col("h").fill_null("00"),
            pl.lit(":"),
            pl.col("mi").fill_null("00"),
            pl.lit(":"),
            pl.col("s").fill_null("00"),
        ]
    )
    micros = (
        pl.col("f").fill_null("").str.pad_end(6, "0").str.slice(0, 6).cast(pl.Int64)
    )
    naive = stamp.str.to_datetime("%Y-%m-%d %H:%M:%S", time_unit="us", strict=False)
    naive = naive + pl.duration(microseconds=micros)
    z = pl.col("z")
    sign = pl.when(z.str.starts_with("-")).then(-1).otherwise(1)
    digits = z.str.replace_all(r"[^0-9]", "")
    off_min = (
        pl.when(z.str.to_uppercase().is_in(["Z", "UTC"]))
        .then(0)
        .otherwise(
            sign
            * (
                digits.str.slice(0, 2).cast(pl.Int64) * 60
                + digits.str.slice(2, 2).str.pad_end(2, "0").cast(pl.Int64)
            )
        )
    )
    with_offset = (naive - pl.duration(minutes=off_min)).dt.replace_time_zone("UTC")
    if tz is not None:
        local, flag = localize(naive, tz)
    else:
        local, flag = pl.lit(None, dtype=UTC), pl.lit(None, dtype=pl.String)
    out = g.select(
        utc=pl.when(z.is_not_null()).then(with_offset).otherwise(local),
        ok=naive.is_not_null(),
        zoneless=naive.is_not_null() & z.is_null(),
        flag=pl.when(z.is_null()).then(flag),
    )
    bad = s.is_not_null() & ~out["ok"].fill_null(False)
    return out["utc"].cast(UTC), bad, out["zoneless"].fill_null(False), out["flag"]


def slug(text: str) -> str:
    """Lower snake case of a label: ``"Memory Dimm"`` -> ``"memory_dimm"``."""
    return re.sub(r"[^a-z0-9]+", "_", text.strip().lower()).strip("_") or "unknown"


# -- writing --------------------------------------------------------------------------
def rejects_frame(table: StringTable, records: pl.DataFrame) -> pl.DataFrame:
    """Build ``rejects`` rows (line_no, reason, raw) from records with a ``reason``."""
    return pl.DataFrame(
        {
            "line_no": records["line_no"],
            "reason": records["reason"],
            "raw": [table.raw(i) for i in records["record"].to_list()],
        },
        schema={"line_no": pl.Int64, "reason": pl.String, "raw": pl.String},
    )


def _earlier(
    store: Store, kind: str, ids: tuple[str, ...], resolved: str
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """Return the sources of ``kind`` from the same path, and of the same bytes.

    ``ids`` are the file's identities (:func:`relkit.store.file_identities`):
    its ``blake3:`` one, and its ``sha256:`` one when the store holds rows of
    ``kind`` from before schema 7.
    """
    same_path, same_bytes = [], []
    # only rows that can match are decoded (the store may hold thousands)
    opts = pl.col("options").fill_null("{}")
    maybe = (
        pl.col("content_hash").is_in(list(ids))
        | opts.str.contains(json.dumps(resolved)[1:-1], literal=True)
        | ~opts.str.contains('"resolved_path"', literal=True)
    )
    candidates = store.table("sources").filter(pl.col("kind") == kind).filter(maybe)
    for row in candidates.iter_rows(named=True):
        options = json.loads(row["options"] or "{}")
        where = options.get("resolved_path") or str(Path(row["path"]).resolve())
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
    if options.get("pseudonymize") and not old.get("pseudonymize"):
        # privacy first: the store still holds the raw names of that ingest
        return (
            f"already ingested as source {known['source_id']} WITHOUT "
            "pseudonymization: the store holds its raw user and job names. To "
            "replace them with pseudonyms, re-read it with --replace "
            "--pseudonymize (library: replace=True, pseudonymize=True)"
        )
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


def _identity_text(content_hash: str | None) -> str:
    """``"blake3:af1349b9f5f9…"`` as ``"blake3 af1349b9f5f9…"`` for a message."""
    algorithm, _, digest = (content_hash or "unknown:").partition(":")
    return f"{algorithm} {digest[:12]}…"


def _changed_message(earlier: list[dict[str, Any]]) -> str:
    ids = [str(r["source_id"]) for r in earlier]
    what = ", ".join(
        f"{r['source_id']} ({r['n_lines']} line{'' if r['n_lines'] == 1 else 's'}, "
        f"{_identity_text(r['content_hash'])})"
        for r in earlier
    )
    which = f"source {ids[0]}'s" if len(ids) == 1 else f"sources {', '.join(ids)}'"
    return (
        f"ingested before as source{'s' if len(ids) > 1 else ''} {what} from this "
        f"path ({earlier[0]['resolved_path']}); "
        f"the file has changed since. Re-read it with --replace (library: "
        f"replace=True), which drops {which} rows first, or ingest the new "
        "lines as a file of their own."
    )


def ingest(
    store: Store,
    path: str | Path,
    *,
    kind: str,
    options: dict[str, Any],
    parse: Callable[..., Parsed | None],
    replace: bool = False,
    overlap_hash: bool = False,
    as_of: str | dt.datetime | None = None,
) -> IngestResult:
    """Check, hash, skip if known, refuse if changed, parse and write one file.

    The source's options get ``as_of_ts`` (``as_of`` in UTC, the collection
    time the user gave) and ``first_record_ts`` / ``last_record_ts`` (the span
    of the loaded records' times, :func:`record_span`, unless the reader set
    them itself), all UTC ISO 8601 text.

    Without ``replace``, a file whose bytes were ingested as ``kind`` before is
    skipped (with a note if ``options`` differ), and a file read from the same
    path before but changed since is refused. With ``replace``, the earlier
    sources of the same path or the same bytes lose their rows, in the same
    transaction that writes the new ones.

    With ``overlap_hash``, the file is hashed in a thread while ``parse(path,
    keep_going)`` runs; ``parse`` must call ``keep_going()`` between batches and
    return None when it says stop (the file is then skipped or refused as
    without overlap). For large logs this hides most of the hash's cost.
    """
    p = check_file(path)
    resolved = str(p.resolve())
    options = {**options, **as_of_option(path, as_of)}

    # a store upgraded from schema 6 identifies older files by SHA-256: the file's
    # SHA-256 is computed too (only then), so an unchanged file is still skipped
    legacy = store.holds_sha256(kind)

    def decide(ids: tuple[str, ...]) -> tuple[IngestResult | None, tuple[int, ...]]:
        same_path, same_bytes = _earlier(store, kind, ids, resolved)
        if not replace and same_bytes:
            note = _skip_note(same_bytes[0], resolved, options)
            skip = IngestResult(str(path), kind, None, 0, 0, 0, skipped=True, note=note)
            return skip, ()
        if not replace and same_path:
            raise IngestError(path, _changed_message(same_path))
        return None, tuple(sorted(r["source_id"] for r in same_path + same_bytes))

    if overlap_hash:
        # hash in a thread while parsing (blake3 releases the GIL); the parse
        # asks keep_going() between batches and stops once the hash says skip
        with ThreadPoolExecutor(max_workers=1) as pool:
            future = pool.submit(file_identities, p, sha256=legacy)
            verdict: list[tuple[IngestResult | None, tuple[int, ...]]] = []

            def keep_going() -> bool:
                if future.done() and not verdict:
                    verdict.append(decide(future.result()))
                return not verdict or verdict[0][0] is None

            maybe = parse(p, keep_going)  # type: ignore[call-arg]
            ids = future.result()
        skip, drop = verdict[0] if verdict else decide(ids)
        if skip is not None:
            return skip
        assert maybe is not None  # keep_going stops only for a skip
        parsed = maybe
    else:
        ids = file_identities(p, sha256=legacy)
        skip, drop = decide(ids)
        if skip is not None:
            return skip
        parsed = parse(p)
    n_rejected = parsed.rejects.height
    ignored = parsed.ignored
    n_ignored = 0 if ignored is None else int(ignored["n_lines"].sum())
    if parsed.n_loaded + n_ignored + n_rejected != parsed.n_lines:  # pragma: no cover
        msg = (
            f"internal error: {parsed.n_lines} lines but {parsed.n_loaded} loaded + "
            f"{n_ignored} ignored + {n_rejected} rejected. Please report this with "
            "the file."
        )
        raise IngestError(path, msg)
    with store.transaction():
        source_id = store.next_source_id()
        for name, frame in parsed.tables.items():
            # failure_modes keys its rows by mode; the source only declared them
            key = "declared_source_id" if name == "failure_modes" else "source_id"
            store.append(name, frame.with_columns(pl.lit(source_id).alias(key)))
        store.append(
            "rejects", parsed.rejects.with_columns(source_id=pl.lit(source_id))
        )
        if ignored is not None:
            store.append("ignored", ignored.with_columns(source_id=pl.lit(source_id)))
        got = store.add_source(
            str(path),
            content_hash=ids[0],
            kind=kind,
            options={
                **options,
                **record_span(parsed.tables),
                **parsed.options,
                "resolved_path": resolved,
            },
            n_lines=parsed.n_lines,
            n_loaded=parsed.n_loaded,
            n_rejected=n_rejected,
            n_ignored=n_ignored,
        )
        if got != source_id:  # pragma: no cover - concurrent writer
            msg = "the store changed during ingest; retry with one writer at a time."
            raise IngestError(path, msg)
        store.drop_sources(drop)
        if parsed.after_write is not None:
            parsed.after_write(source_id)
    return _written(
        path, kind, source_id, parsed, drop, options, _flag_counts(parsed.tables)
    )


def _written(
    path: str | Path,
    kind: str,
    source_id: int,
    parsed: Parsed,
    drop: tuple[int, ...],
    options: dict[str, Any],
    flag_counts: tuple[tuple[str, int], ...],
) -> IngestResult:
    """Return the IngestResult of a file written as ``source_id``, with notes.

    Notes: the reader's, the sources it replaced (``drop``), and a last record
    after ``as_of_ts`` (of ``options``).
    """
    notes = [parsed.note] if parsed.note else []
    if drop:
        ids = ", ".join(map(str, drop))
        notes.append(
            f"replaced source{'s' if len(drop) > 1 else ''} {ids} (rows dropped)"
        )
    last = parsed.options.get("last_record_ts")
    if last is None:
        last = record_span(parsed.tables).get("last_record_ts")
    as_of_ts = options.get("as_of_ts")
    if (
        as_of_ts
        and last
        and dt.datetime.fromisoformat(last) > dt.datetime.fromisoformat(as_of_ts)
    ):
        notes.append(f"the file's last record ({last}) is after --as-of {as_of_ts}")
    top, n_reasons = _top_rejects(parsed.rejects)
    n_ignored = 0 if parsed.ignored is None else int(parsed.ignored["n_lines"].sum())
    return IngestResult(
        str(path),
        kind,
        source_id,
        parsed.n_lines,
        parsed.n_loaded,
        parsed.rejects.height,
        skipped=False,
        note="; ".join(notes) or None,
        replaced=drop,
        n_ignored=n_ignored,
        top_rejects=top,
        n_reasons=n_reasons,
        flag_counts=flag_counts,
    )


def _known_sources(
    store: Store, kind: str, hashes: set[str], paths: set[str]
) -> list[dict[str, Any]]:
    """Return the sources of ``kind`` with one of ``hashes`` or from ``paths``.

    Options decoded, with the ``resolved_path`` each is known by; only the rows
    that can match are decoded (a store may hold 100,000 sources).
    """
    sources = store.table("sources").filter(pl.col("kind") == kind)
    where = pl.col("options").fill_null("{}").str.json_path_match("$.resolved_path")
    maybe = (
        pl.col("content_hash").is_in(list(hashes))
        | where.is_in(list(paths))
        | where.is_null()  # an old row without it: resolved from its path below
    )
    rows = []
    for row in sources.filter(maybe).iter_rows(named=True):
        options = json.loads(row["options"] or "{}")
        where = options.get("resolved_path") or str(Path(row["path"]).resolve())
        rows.append(row | {"options": options, "resolved_path": where})
    return rows


def ingest_many(
    store: Store,
    paths: Sequence[str | Path],
    *,
    kind: str,
    options: list[dict[str, Any]],
    parse_many: Callable[[list[Any]], list[Parsed | IngestError]],
    replace: bool = False,
    as_of: str | dt.datetime | None = None,
    known: list[tuple[str, tuple[str, ...]]] | None = None,
) -> list[IngestResult | IngestError]:
    """:func:`ingest` for many files at once: one look at the store, one write.

    Each file is checked, identified, skipped or refused exactly as
    :func:`ingest` would (the store's sources are read once for all, not once
    per file), the files to read are parsed together by ``parse_many`` (one
    :class:`Parsed` or IngestError per file, in order), and all are written in
    one transaction, each its own source with ``source_id`` in file order.
    A file whose bytes equal an earlier file's of the same call is left to a
    later round, so it is skipped (or, with ``replace``, replaces it) as when
    the files are read one after the other. Returns one IngestResult or
    IngestError per path, in order.

    ``known`` gives, per path, its resolved path and identities when the
    files are not here to check and hash (parsed elsewhere:
    :mod:`relkit.ingest.parsed_logs`); ``parse_many`` then gets those paths
    as given.
    """
    out: list[IngestResult | IngestError | None] = [None] * len(paths)
    legacy = store.holds_sha256(kind)
    todo = list(range(len(paths)))
    while todo:
        checked: dict[int, tuple[Any, str, dict[str, Any], tuple[str, ...]]] = {}
        for i in todo:
            path = paths[i]
            try:
                opts = {**options[i], **as_of_option(path, as_of)}
                if known is None:
                    p: Any = Path(path)
                    ids = _checked_identities(p, sha256=legacy)
                    resolved = str(p.resolve())
                else:
                    p = path
                    resolved, ids = known[i]
            except IngestError as exc:
                out[i] = exc
                continue
            checked[i] = (p, resolved, opts, ids)
        by_hash: dict[str, list[dict[str, Any]]] = {}
        by_path: dict[str, list[dict[str, Any]]] = {}
        hashes = {h for *_, ids in checked.values() for h in ids}
        where = {resolved for _, resolved, _, _ in checked.values()}
        for row in _known_sources(store, kind, hashes, where):
            by_hash.setdefault(row["content_hash"], []).append(row)
            by_path.setdefault(row["resolved_path"], []).append(row)
        now, later, seen = [], [], set()
        plans: dict[int, tuple[Any, str, dict[str, Any], tuple[str, ...]]] = {}
        for i, (p, resolved, opts, ids) in checked.items():
            path = paths[i]
            if seen.intersection(ids):
                later.append(i)  # the same bytes as a file of this round
                continue
            same_bytes = [r for h in ids for r in by_hash.get(h, [])]
            same_bytes.sort(key=lambda r: r["source_id"])
            same_path = [
                r for r in by_path.get(resolved, []) if r["content_hash"] not in ids
            ]
            if not replace and same_bytes:
                note = _skip_note(same_bytes[0], resolved, opts)
                out[i] = IngestResult(
                    str(path), kind, None, 0, 0, 0, skipped=True, note=note
                )
                continue
            if not replace and same_path:
                out[i] = IngestError(path, _changed_message(same_path))
                continue
            seen.update(ids)
            drop = tuple(sorted({r["source_id"] for r in same_path + same_bytes}))
            plans[i] = (p, resolved, opts, ids)
            now.append((i, drop))
        if now:
            parsed = parse_many([plans[i][0] for i, _ in now])
            _write_many(store, kind, paths, plans, now, parsed, out)
        todo = later
    return [r for r in out if r is not None]


def _write_many(
    store: Store,
    kind: str,
    paths: Sequence[str | Path],
    plans: dict[int, tuple[Any, str, dict[str, Any], tuple[str, ...]]],
    now: list[tuple[int, tuple[int, ...]]],
    parsed: list[Parsed | IngestError],
    out: list[IngestResult | IngestError | None],
) -> None:
    """Write the parsed files of one :func:`ingest_many` round in one transaction."""
    good = []
    for (i, drop), got in zip(now, parsed, strict=True):
        if isinstance(got, IngestError):
            out[i] = got
            continue
        n_ignored = 0 if got.ignored is None else int(got.ignored["n_lines"].sum())
        if got.n_loaded + n_ignored + got.rejects.height != got.n_lines:
            msg = (  # pragma: no cover - an internal error
                f"internal error: {got.n_lines} lines but {got.n_loaded} loaded + "
                f"{n_ignored} ignored + {got.rejects.height} rejected. Please "
                "report this with the file."
            )
            out[i] = IngestError(paths[i], msg)
            continue
        good.append((i, drop, got, n_ignored))
    if not good:
        return
    with store.transaction():
        first = store.next_source_id()
        # one append per table for the whole round (source ids added at once)
        tables: dict[str, list[tuple[int, pl.DataFrame]]] = {}
        sources = []
        for n, (i, _, got, n_ignored) in enumerate(good):
            source_id = first + n
            _, resolved, opts, ids = plans[i]
            assert got.after_write is None  # not for readers that need it
            named = [*got.tables.items(), ("rejects", got.rejects)]
            if got.ignored is not None:
                named.append(("ignored", got.ignored))
            for name, frame in named:
                if frame.height:
                    tables.setdefault(name, []).append((source_id, frame))
            span = (
                {}
                if {"first_record_ts", "last_record_ts"} <= got.options.keys()
                else record_span(got.tables)
            )
            sources.append(
                {
                    "source_id": source_id,
                    "path": str(paths[i]),
                    "content_hash": ids[0],
                    "kind": kind,
                    "options": json.dumps(
                        {**opts, **span, **got.options, "resolved_path": resolved},
                        sort_keys=True,
                        default=str,
                    ),
                    "n_lines": got.n_lines,
                    "n_loaded": got.n_loaded,
                    "n_rejected": got.rejects.height,
                    "ingested_at": dt.datetime.now(dt.UTC),
                    "n_ignored": n_ignored,
                }
            )
        flags: dict[int, tuple[tuple[str, int], ...]] = {}
        for name, parts in tables.items():
            whole = pl.concat([f for _, f in parts], how="diagonal_relaxed")
            ids_col = pl.Series(
                np.repeat([sid for sid, _ in parts], [f.height for _, f in parts]),
                dtype=pl.Int32,
            )
            # failure_modes keys its rows by mode; the source only declared them
            key = "declared_source_id" if name == "failure_modes" else "source_id"
            whole = whole.with_columns(ids_col.alias(key))
            store.append(name, whole)
            if "flags" in whole.columns and name not in ("rejects", "ignored"):
                for sid, counted in _flag_counts_by(whole, key).items():
                    flags[sid] = _merge_counts(flags.get(sid, ()), counted)
        store.append("sources", pl.DataFrame(sources))
        drops = sorted({d for _, drop, _, _ in good for d in drop})
        store.drop_sources(drops)
    for n, (i, drop, got, _) in enumerate(good):
        source_id = first + n
        out[i] = _written(
            paths[i], kind, source_id, got, drop, plans[i][2], flags.get(source_id, ())
        )
