r"""Reading kernel/syslog files as frames of the lines the classifier needs.

:class:`LineFrames` streams a plain or compressed (gzip, xz, bzip2, zstd; told
by their magic bytes, not the name) file in blocks of bytes split at
newlines (polars' CSV reader on one string column, or an exact decode when a
block holds the reader's separator byte) and yields, per block, the lines that
are failure candidates (a keyword of
:data:`relkit.ingest._kernel_patterns.KEYWORDS`), blank, or carry a kernel
clock, each with its 1-based line number, flags and clock columns. Other lines
are only counted. ``full=True`` keeps every line (the reference the tests
compare the prefilter with).

Invalid UTF-8 becomes U+FFFD; a run of NUL bytes (a power loss) that starts a
line is dropped, a line of NULs only becomes one NUL (ignored as ``nul_bytes``),
other NUL bytes become U+FFFD (:func:`_nul_runs`); a ``\r`` before the newline
is removed, and a last line without a newline is a line.
"""

import bz2
import gzip
import lzma
import queue
import re
import threading
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, TypeVar

import polars as pl

from relkit.errors import IngestError
from relkit.ingest import _kernel_patterns as kp

#: Bytes read per batch (about 6e4 lines of 130 bytes); below glibc's largest
#: mmap threshold, so batch buffers are reused rather than faulted in afresh.
BATCH_BYTES = 1 << 23
T = TypeVar("T")
U = TypeVar("U")
#: Blocks of one file tested at once (threads; polars releases the GIL).
WORKERS = 2
#: The one-column CSV reading of a log: a separator byte lines should not contain.
_SEP = "\x01"
_LINE = {"line": pl.String}


def split_block(data: bytes) -> pl.Series:
    r"""Bytes ending in a newline -> lines (invalid UTF-8 and NUL replaced).

    Fast path: polars' multi-threaded CSV reader with a separator byte that the
    data does not contain and no quoting, one column: one row per newline, a
    ``\r`` before it removed, an empty line null. Used when the block has no
    ``\x01`` and does not start with a byte-order mark (which the reader
    drops); otherwise (or on any reader error) the exact split below.
    ``tests/test_ingest_kernel.py`` checks both agree on random bytes.
    """
    if _SEP.encode() not in data and not data.startswith(b"\xef\xbb\xbf"):
        try:
            lines = pl.read_csv(
                data,
                has_header=False,
                separator=_SEP,
                quote_char=None,
                schema=_LINE,
                encoding="utf8-lossy",
            ).to_series()
        except pl.exceptions.PolarsError:  # pragma: no cover - defensive
            lines = None
        if lines is not None:
            lines = lines.fill_null("")
            return _nul_runs(lines) if b"\x00" in data else lines
    text = data.decode("utf-8", errors="replace")
    s = pl.Series("line", [text]).str.split("\n").explode()
    s = s.slice(0, s.len() - 1).str.strip_suffix("\r")
    return _nul_runs(s) if "\x00" in text else s


def _nul_runs(lines: pl.Series) -> pl.Series:
    r"""Lines with NUL bytes: a line of NULs only -> one NUL, a leading run dropped.

    A host that lost power while writing its syslog leaves a run of NUL bytes
    where the lost data was, with no newline after it: the run ends a line or
    starts the next one (``\x00\x00...\x00Jun  4 07:00:00 h1 kernel: Linux version
    ...``). The run before a line's text is dropped, so the line is read; a
    line of NULs only becomes ``"\x00"`` (ignored as ``nul_bytes``); other NUL
    bytes become U+FFFD.
    """
    only = lines.str.contains(r"^\x00+$")
    return (
        pl.select(
            pl.when(only)
            .then(pl.lit("\x00"))
            .otherwise(
                pl.lit(lines)
                .str.replace(r"^\x00+", "")
                .str.replace_all("\x00", "\ufffd", literal=True)
            )
        )
        .to_series()
        .alias(lines.name)
    )


#: Magic bytes of the compressions the kernel reader opens -> name.
COMPRESSIONS = {
    b"\x1f\x8b": "gzip",
    b"\xfd7zXZ\x00": "xz",
    b"BZh": "bzip2",
    b"\x28\xb5\x2f\xfd": "zstd",
}
#: How to decompress each by hand (for error messages).
_UNPACK = {
    "gzip": "zcat FILE > OUT",
    "xz": "xzcat FILE > OUT",
    "bzip2": "bzcat FILE > OUT",
    "zstd": "zstdcat FILE > OUT",
}


def compression(path: Path) -> str | None:
    """``gzip``, ``xz``, ``bzip2`` or ``zstd`` by the file's magic bytes, else None."""
    with path.open("rb") as head:
        start = head.read(6)
    return next((n for m, n in COMPRESSIONS.items() if start.startswith(m)), None)


def is_gzip(path: Path) -> bool:
    """Whether a file starts with the gzip magic bytes."""
    return compression(path) == "gzip"


def _open(path: Path, kind: str | None) -> IO[bytes]:
    """Open a file for reading bytes, decompressing ``kind`` on the fly."""
    if kind == "gzip":
        return gzip.open(path, "rb")
    if kind == "xz":
        return lzma.open(path, "rb")
    if kind == "bzip2":
        return bz2.open(path, "rb")
    if kind == "zstd":
        return _ZstdFrames(path)  # type: ignore[return-value]
    return path.open("rb")


class _ZstdFrames:
    """Read a zstd file frame after frame; a last frame cut short is an error.

    ``zstandard``'s stream reader returns what it decoded of a truncated file
    and stops without error. A decompression object per frame tells when its
    frame ended (``eof``; the bytes after it, ``unused_data``, start the next
    frame), so input that ends inside a frame raises ``ZstdError``, as gzip,
    xz and bzip2 raise ``EOFError``.
    """

    def __init__(self, path: Path) -> None:
        import zstandard

        self._raw = path.open("rb")
        self._dctx = zstandard.ZstdDecompressor()
        self._obj = self._dctx.decompressobj()
        self._fed = False  # the current frame has had input
        self._out = bytearray()
        self._done = False

    def _feed(self, data: bytes) -> None:
        while data:
            if self._obj.eof:
                self._obj = self._dctx.decompressobj()
                self._fed = False
            self._out += self._obj.decompress(data)
            self._fed = True
            data = self._obj.unused_data if self._obj.eof else b""

    def read(self, size: int) -> bytes:
        """Up to ``size`` decompressed bytes; ``b""`` at the end of the file."""
        while len(self._out) < size and not self._done:
            chunk = self._raw.read(1 << 20)
            if not chunk:
                self._done = True
                if self._fed and not self._obj.eof:
                    import zstandard

                    msg = "input ends inside a zstd frame"
                    raise zstandard.ZstdError(msg)
                break
            self._feed(chunk)
        out = bytes(self._out[:size])
        del self._out[:size]
        return out

    def close(self) -> None:
        """Close the file."""
        self._raw.close()


#: Leading bytes of binary formats that are never a log (Parquet, ELF, zip,
#: SQLite, PNG, PDF).
_BINARY_MAGIC = {
    b"PAR1": "a Parquet file",
    b"\x7fELF": "an ELF binary",
    b"PK\x03\x04": "a zip archive",
    b"SQLite format 3\x00": "an SQLite database",
    b"\x89PNG": "a PNG image",
    b"%PDF": "a PDF document",
}
#: Share of control or invalid-UTF-8 characters (NUL runs aside) above which the
#: start of a file is binary, not a log with a few damaged bytes; at least
#: :data:`BINARY_MIN` such characters are needed (a short log with a few bad
#: bytes stays text).
BINARY_FRAC = 0.10
BINARY_MIN = 16


#: Control characters that do not occur in a text log (tab, newlines, form
#: feed and escape do).
_CONTROL_BYTES = bytes(i for i in range(32) if chr(i) not in "\t\n\r\x0c\x1b")


def binary_kind(head: bytes) -> str | None:
    """Say what a file's first (decompressed) bytes are, if they are no text log.

    Returns a description (``"a Parquet file"``, ``"UTF-16 text"``, ``"binary
    data"``) or None for text. A log may hold a few NUL runs (a host that
    crashed mid-write) or bad bytes; those stay text. Binary means: a known
    magic number, UTF-16 (a byte-order mark, or every other byte NUL), or more
    than :data:`BINARY_FRAC` (and at least :data:`BINARY_MIN`) of the
    characters left after dropping NUL bytes are control characters or invalid
    UTF-8.
    """
    for magic, what in _BINARY_MAGIC.items():
        if head.startswith(magic):
            return what
    if head.startswith((b"\xff\xfe", b"\xfe\xff")):
        return "UTF-16 text"
    n = len(head) - len(head) % 2
    even, odd = head[0:n:2], head[1:n:2]
    if n >= 8 and (
        (odd.count(0) == len(odd) and 0 not in even)
        or (even.count(0) == len(even) and 0 not in odd)
    ):
        return "UTF-16 text"
    kept = head.replace(b"\x00", b"")
    if not kept:
        return "binary data (NUL bytes only)" if head else None
    # counted in C (a directory of 10,000 logs checks each): a control byte is
    # one character of the decoded text, an invalid sequence one U+FFFD
    n_control = len(kept) - len(kept.translate(None, _CONTROL_BYTES))
    if kept.isascii():
        text_len, n_invalid = len(kept), 0
    else:
        text = kept.decode("utf-8", errors="replace")
        text_len, n_invalid = len(text), text.count("\ufffd")
    bad = n_control + n_invalid
    return "binary data" if bad > max(BINARY_FRAC * text_len, BINARY_MIN) else None


def _refuse_binary(path: Path, head: bytes, kind: str | None) -> None:
    """Raise IngestError when the first bytes are no text log (see binary_kind)."""
    what = binary_kind(head)
    if what is None:
        return
    inside = f" inside the {kind} compression" if kind else ""
    fix = (
        "convert it to UTF-8 first, e.g. iconv -f UTF-16 -t UTF-8 IN > OUT"
        if what == "UTF-16 text"
        else "pass the kernel/syslog text itself (dmesg, /var/log/kern.log, "
        "journalctl -k), plain or gzip/xz/bzip2/zstd-compressed"
    )
    msg = f"is {what}{inside}, not a kernel/syslog text log; {fix}."
    raise IngestError(path, msg)


#: A UTF-8 byte-order mark: dropped at the start of a file (else line 1 would
#: not start with its stamp).
_BOM = b"\xef\xbb\xbf"
#: Bytes looked at to tell a binary file from a log.
_HEAD_BYTES = 1 << 16


def block_batches(
    path: Path, batch_bytes: int = BATCH_BYTES
) -> Iterator[tuple[bytes, pl.Series]]:
    """Stream a plain or compressed file as batches: bytes and their lines.

    Each batch is a block of whole lines (``bytes`` ending in a newline) and
    its lines (:func:`split_block`); memory is bounded by ``batch_bytes``.

    Raises IngestError for a damaged compressed file, or one whose first bytes
    are no text log (Parquet, ELF, UTF-16, random bytes; :func:`binary_kind`).
    """
    kind = compression(path)
    fh = _open(path, kind)
    try:
        rest = b""
        first = True
        while block := fh.read(batch_bytes):
            if first:
                _refuse_binary(path, block[:_HEAD_BYTES], kind)
                block = block.removeprefix(_BOM)  # Windows editors write one
                first = False
            data = rest + block
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            rest = data[cut + 1 :]
            whole = data[: cut + 1]
            yield whole, split_block(whole)
        if rest:
            yield rest + b"\n", split_block(rest + b"\n")
    except (OSError, EOFError, zlib.error, lzma.LZMAError, _ZstdError) as exc:
        msg = (
            f"not a readable {kind or 'log'} file ({exc}); it may be truncated. "
            "Copy it again or decompress what is there "
            f"({_UNPACK.get(kind or '', 'cat FILE > OUT')}) and ingest OUT."
        )
        raise IngestError(path, msg) from exc
    finally:
        fh.close()


try:
    from zstandard import ZstdError as _ZstdError
except ImportError:  # pragma: no cover - a dependency; .zst files then fail

    class _ZstdError(Exception):  # type: ignore[no-redef]
        """Stand-in when zstandard is missing."""


def file_host(path: Path) -> str:
    """Host name from a file name, rotations included.

    ``host-a.log.gz``, ``host-a.log.1`` and ``host-a.log.2.gz`` all give
    ``host-a``: compression, rotation numbers and log suffixes are removed.
    """
    name = path.name
    for _ in range(4):  # e.g. .log.2.gz: strip in any order, a few layers deep
        name = re.sub(r"\.(gz|xz|bz2|zst|log|txt|out|dmesg|syslog|\d+)$", "", name)
    return name


def _flags(line: pl.Expr, cand: pl.Series | None = None) -> dict[str, pl.Expr]:
    """``cand``, ``blank`` and ``clock`` of each line (cheap, literal-led tests).

    ``cand``: the keyword test's answer when the caller has it already
    (:func:`keyword_lines`).
    """
    return {
        "cand": line.str.contains(kp.KEYWORDS) if cand is None else pl.lit(cand),
        "blank": line.str.contains(r"^\s*$"),
        "clock": line.str.contains(kp.CLOCK),
    }


_KEYWORD_DB: list[object] = []


def _keyword_database() -> object | None:
    """:data:`kp.KEYWORDS` compiled for Hyperscan (multi-line), or None without it."""
    if not _KEYWORD_DB:
        try:
            import hyperscan
        except ImportError:  # pragma: no cover - a dependency; the regex path works
            _KEYWORD_DB.append(None)
        else:
            db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
            db.compile(
                expressions=[kp.KEYWORDS.encode()],
                ids=[0],
                elements=1,
                flags=[hyperscan.HS_FLAG_MULTILINE],
            )
            _KEYWORD_DB.append(db)
    return _KEYWORD_DB[0]


_SCRATCH = threading.local()


def _scratch(db: object) -> object:
    """Return the calling thread's Hyperscan scratch space (one per scan)."""
    space = getattr(_SCRATCH, "space", None)
    if space is None:
        import hyperscan

        space = _SCRATCH.space = hyperscan.Scratch(db)
    return space


def keyword_lines(data: bytes, lines: pl.Series) -> pl.Series | None:
    r"""Which lines of a block hold a keyword, from one scan of its bytes.

        The block's bytes are scanned once for :data:`kp.KEYWORDS` (Hyperscan,
        multi-line: ``^`` after each newline) and each match is given to the line
        it ends in, by the lines' byte lengths. That holds only when every line is
        its bytes plus one newline: ASCII text without ``
    `` or NUL (which
        :func:`split_block` changes). Returns None otherwise, or without
        Hyperscan: then each line is tested with the regex (the same answer,
        slower; ``tests/test_ingest_kernel.py`` checks both agree).
    """
    if b"\r" in data or b"\x00" in data or not data.isascii():
        return None
    db = _keyword_database()
    if db is None:
        return None
    import numpy as np

    ends = np.cumsum(lines.str.len_bytes().to_numpy().astype(np.int64) + 1)
    if not ends.size or ends[-1] != len(data):
        return None
    hits: list[int] = []

    def on_match(_id: int, _start: int, end: int, _flags: int, _ctx: object) -> None:
        hits.append(end)

    db.scan(  # type: ignore[attr-defined]
        data, match_event_handler=on_match, scratch=_scratch(db)
    )
    mask = np.zeros(ends.size, dtype=bool)
    if hits:
        # a match ending at byte e (exclusive) lies in the line whose end > e - 1
        mask[
            np.searchsorted(ends, np.asarray(hits, dtype=np.int64) - 1, side="right")
        ] = True
    return pl.Series("cand", mask)


_KMSG_US = r"^\d{1,4},\d+,(\d+),[^;]*;"


def clock_columns(
    line: pl.Expr, syslog_host: pl.Expr | None = None
) -> dict[str, pl.Expr]:
    """Kernel clock of a :data:`kp.CLOCK` line and the host its framing names.

    ``mono`` (s since boot: the kmsg microseconds or the first ``[ s.us]``),
    ``clock_host`` (the word after an ISO/RFC 3164 stamp, else null),
    ``walled`` (the line also has a wall stamp) and ``hint`` (the host may come
    from an NCCL ``host:pid:tid [rank]`` prefix instead: such lines need the
    full framing). Meaningful on clock lines only. ``syslog_host``: the
    :data:`kp.CLOCK_HOST` capture when the caller has it already.
    """
    k_us = line.str.extract(_KMSG_US, 1)
    return {
        "mono": pl.when(k_us.is_not_null())
        .then(k_us.cast(pl.Float64) / 1e6)
        .otherwise(line.str.extract(kp.CLOCK_MONO, 1).cast(pl.Float64)),
        "clock_host": (
            line.str.extract(kp.CLOCK_HOST, 1) if syslog_host is None else syslog_host
        ),
        "walled": k_us.is_null() & ~line.str.contains(r"^(?:<\d{1,3}>)?\["),
        "hint": line.str.contains(kp.NCCL_HOST_HINT),
    }


_BRACKET = r"^\[\s*\d+\.\d+\]"


def _bracket_clock(line: pl.Expr) -> dict[str, pl.Expr]:
    """:func:`clock_columns` of plain dmesg lines (``[ sss.uuuuuu] msg``), cheaply.

    The clock is the text between the first brackets (no regex capture), there
    is no wall stamp and no framing host.
    """
    inner = line.str.slice(1, line.str.find("]", literal=True) - 1)
    return {
        "mono": inner.str.strip_chars_start().cast(pl.Float64),
        "clock_host": pl.lit(None, dtype=pl.String),
        "walled": pl.lit(value=False),
        "hint": line.str.contains(kp.NCCL_HOST_HINT),
    }


def _kept(frame: pl.DataFrame, *, full: bool) -> pl.DataFrame:
    """Add the flags, keep the needed lines and add their clocks (``full``: flags).

    Plain dmesg lines, most clock lines of a dmesg file, take
    :func:`_bracket_clock`; syslog and kmsg lines :func:`clock_columns`. The
    text of a clock line that is neither a candidate nor needed for its boot
    anchor or host is dropped (null), so held memory follows candidates.
    """
    if "cand" not in frame.columns:
        frame = frame.with_columns(**_flags(pl.col("line")))
    if full:
        return frame.drop("syslog_host", strict=False)
    frame = frame.filter(pl.col("cand") | pl.col("blank") | pl.col("clock"))
    dm = frame.get_column("line").str.contains(_BRACKET)
    known = pl.col("syslog_host") if "syslog_host" in frame.columns else None
    parts = [
        part.with_columns(**cols)
        for part, cols in (
            (frame.filter(dm), _bracket_clock(pl.col("line"))),
            (frame.filter(~dm), clock_columns(pl.col("line"), known)),
        )
        if part.height
    ]
    if not parts:
        return frame.drop("syslog_host", strict=False).with_columns(
            mono=pl.lit(None, dtype=pl.Float64),
            clock_host=pl.lit(None, dtype=pl.String),
            walled=pl.lit(value=False),
            hint=pl.lit(value=False),
        )
    frame = pl.concat(parts).sort("line_no") if len(parts) > 1 else parts[0]
    need_text = (
        pl.col("cand")
        | (pl.col("clock") & pl.col("walled"))
        | (pl.col("clock") & pl.col("hint") & pl.col("clock_host").is_null())
    )
    return frame.with_columns(line=pl.when(need_text).then(pl.col("line"))).drop(
        "syslog_host", strict=False
    )


#: Lines kept per host at each end of a log (the first and last non-blank
#: lines), of which the first (last) with a resolvable time gives its span.
SPAN_LINES = 8


def _batch_spans(frame: pl.DataFrame, default_host: pl.Expr) -> pl.DataFrame:
    """Per host of a batch: non-blank line count and first/last lines.

    ``frame`` has ``line_no, line, blank, syslog_host`` (and ``file_no`` when
    it holds several files). The host of a line is the word after its syslog
    stamp (``syslog_host``: :data:`kp.CLOCK_HOST`, as for clock lines), else
    ``default_host`` (the ``host`` option, or each file's), else ``""``.
    Returns ``hkey, n_lines, head_no, head, tail_no, tail`` (lists of at most
    :data:`SPAN_LINES`) and, with ``file_no``, ``files`` (the files whose
    lines carry the host key), hosts in order of first appearance.
    """
    some = ~pl.col("blank")
    files = (
        [pl.col("file_no").filter(some).unique().alias("files")]
        if "file_no" in frame.columns
        else []
    )
    return (
        frame.with_columns(
            hkey=pl.col("syslog_host").fill_null(default_host).fill_null("")
        )
        .group_by("hkey", maintain_order=True)
        .agg(
            *files,
            n_lines=some.sum(),
            head_no=pl.col("line_no").filter(some).head(SPAN_LINES),
            head=pl.col("line").filter(some).head(SPAN_LINES),
            tail_no=pl.col("line_no").filter(some).tail(SPAN_LINES),
            tail=pl.col("line").filter(some).tail(SPAN_LINES),
        )
        .filter(pl.col("n_lines") > 0)
    )


def _fold_spans(
    into: dict[str, "HostSpan"],
    spans: pl.DataFrame,
    host_files: dict[str, set[int]] | None = None,
) -> None:
    """Fold a batch's :func:`_batch_spans` into the spans so far (file order)."""
    for row in spans.iter_rows(named=True):
        into.setdefault(row["hkey"], HostSpan()).add(
            row["n_lines"],
            list(zip(row["head_no"], row["head"], strict=True)),
            list(zip(row["tail_no"], row["tail"], strict=True)),
        )
        if host_files is not None:
            host_files.setdefault(row["hkey"], set()).update(row["files"])


def _block_rows(
    data: bytes,
    batch: pl.Series,
    offset: int,
    *,
    full: bool,
    on_batch: Callable[[pl.DataFrame], None] | None,
    **extra: pl.Series,
) -> pl.DataFrame:
    """Give a block's lines their numbers (from ``offset + 1``), host and flags.

    ``extra`` columns (a stream's ``file_no``, ``dflt``) ride along;
    ``on_batch`` gets ``line_no, line, blank, syslog_host`` of every line.
    """
    n = batch.len()
    cand = None if full or not n else keyword_lines(data, batch)
    rows = pl.DataFrame({"line": batch, **extra}).with_columns(
        line_no=pl.int_range(offset + 1, offset + 1 + n, dtype=pl.Int64),
        syslog_host=pl.col("line").str.extract(kp.CLOCK_HOST, 1),
        **_flags(pl.col("line"), cand),
    )
    if on_batch is not None:
        on_batch(rows.select("line_no", "line", "blank", "syslog_host"))
    return rows


def _in_order(
    jobs: Iterator[tuple[Callable[[], T], U]], workers: int | None = None
) -> Iterator[tuple[T, U]]:
    """Run ``(job, tag)`` pairs in :data:`WORKERS` threads; yield results in order.

    At most ``workers`` jobs run ahead of the one yielded (bounded memory);
    stopping early cancels the jobs not started.
    """
    from collections import deque
    from concurrent.futures import Future, ThreadPoolExecutor

    workers = WORKERS if workers is None else workers
    ahead: deque[tuple[Future[T], U]] = deque()
    with ThreadPoolExecutor(workers, thread_name_prefix="relkit-block") as pool:
        try:
            for job, tag in jobs:
                ahead.append((pool.submit(job), tag))
                while len(ahead) > workers:
                    future, got = ahead.popleft()
                    yield future.result(), got
            while ahead:
                future, got = ahead.popleft()
                yield future.result(), got
        finally:
            for future, _ in ahead:
                future.cancel()


def last_nonblank(lines: pl.Series) -> tuple[int, str] | None:
    """Index (0-based) and text of the last line that is not blank, or None.

    Blank as :meth:`str.strip` tells it; the last 64 lines are looked at first,
    the whole batch only when they are all blank.
    """
    n = lines.len()
    tail = lines.tail(64).to_list()
    for i in range(len(tail) - 1, -1, -1):
        if tail[i].strip():
            return n - len(tail) + i, tail[i]
    if n <= len(tail):
        return None
    some = (lines.head(n - len(tail)).str.strip_chars() != "").arg_true()
    for i in reversed(some.to_list()):  # polars and Python agree on all but
        if lines[i].strip():  # a few control characters: Python decides
            return i, lines[i]
    return None


class HostSpan:
    """What one host's lines of a file hold: their count and both ends."""

    __slots__ = ("head", "n_lines", "tail")

    def __init__(self) -> None:
        self.n_lines = 0
        #: ``(line_no, text)`` of the host's first non-blank lines, in order.
        self.head: list[tuple[int, str]] = []
        #: ``(line_no, text)`` of its last non-blank lines, in order.
        self.tail: list[tuple[int, str]] = []

    def add(
        self, n: int, head: list[tuple[int, str]], tail: list[tuple[int, str]]
    ) -> None:
        """Fold in one batch's lines of the host (batches in file order)."""
        self.n_lines += n
        if len(self.head) < SPAN_LINES:
            self.head.extend(head[: SPAN_LINES - len(self.head)])
        self.tail = (self.tail + tail)[-SPAN_LINES:]


class LineFrames:
    """Kept lines of one file as frames, and the file's line count at the end.

    Iterate for frames ``line_no`` (Int64, from 1), ``line`` (String, null where
    not needed), ``cand``, ``blank``, ``clock`` (Boolean) and the clock columns
    of :func:`clock_columns`, in file order. After the loop, ``n_lines`` is
    the number of lines read, ``last_line`` the last non-blank line (its
    time ends the log's observation) and ``spans`` a :class:`HostSpan` per
    host key (the syslog host of a line, else ``host``, else ``""``), in order
    of first appearance. ``on_progress``, if given, is called with the bytes
    (decompressed) and lines read after each block. ``keep_going`` is asked
    between frames; when it
    returns False the iteration stops early (``stopped``). ``on_batch``, if
    given, is called with every batch's ``line_no, line, blank, syslog_host``
    (all its lines; e.g. :meth:`relkit.ingest._kernel_spans.WallEnds.add`).

    The lines' flags, clocks and host keys are computed in the thread that
    reads the next blocks (:func:`_prefetch`), while the caller works on the
    previous frame.
    """

    def __init__(
        self,
        path: Path,
        *,
        full: bool = False,
        keep_going: Callable[[], bool] | None = None,
        host: str | None = None,
        on_batch: Callable[[pl.DataFrame], None] | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        self.path = path
        self.on_progress = on_progress
        #: Bytes read so far (decompressed).
        self.n_bytes = 0
        self.full = full
        self.on_batch = on_batch
        self.keep_going = keep_going or (lambda: True)
        self.host = host
        self.n_lines = 0
        self.stopped = False
        #: ``(line_no, text)`` of the file's last non-blank line, if any.
        self.last_line: tuple[int, str] | None = None
        #: Host key -> its lines' count and ends (complete after the loop).
        self.spans: dict[str, HostSpan] = {}

    def _prepare(
        self, data: bytes, batch: pl.Series, offset: int
    ) -> tuple[pl.DataFrame, pl.DataFrame, tuple[int, str] | None, int]:
        """Test, number and filter one block's lines (in a worker thread).

        Returns the kept frame, the block's spans per host, its last non-blank
        line and its byte count; :meth:`_fold` folds them in file order.
        """
        rows = _block_rows(data, batch, offset, full=self.full, on_batch=self.on_batch)
        spans = _batch_spans(rows, pl.lit(self.host, dtype=pl.String))
        return _kept(rows, full=self.full), spans, last_nonblank(batch), len(data)

    def _fold(
        self,
        got: tuple[pl.DataFrame, pl.DataFrame, tuple[int, str] | None, int],
        n_lines: int,
    ) -> pl.DataFrame:
        """Fold one prepared block into the file's spans and counts (in order)."""
        kept, spans, last, n_bytes = got
        _fold_spans(self.spans, spans)
        if last is not None:
            self.last_line = (self.n_lines + last[0] + 1, last[1])
        self.n_lines += n_lines
        self.n_bytes += n_bytes
        if self.on_progress is not None:
            self.on_progress(self.n_bytes, self.n_lines)
        return kept

    def _prepared(self) -> Iterator[pl.DataFrame]:
        """Frames of :func:`_kept` per block, spans and counts updated (thread).

        Blocks are split here, in file order, tested in :data:`WORKERS`
        threads at once (:func:`_in_order`) and folded in file order.
        """
        offset = 0

        def jobs() -> Iterator[tuple[Callable[[], object], int]]:
            nonlocal offset
            for data, batch in block_batches(self.path):
                start, offset = offset, offset + batch.len()
                yield (
                    (lambda d=data, b=batch, o=start: self._prepare(d, b, o)),
                    (offset - start),
                )

        for got, n_lines in _in_order(jobs()):
            yield self._fold(got, n_lines)  # type: ignore[arg-type]

    def __iter__(self) -> Iterator[pl.DataFrame]:
        for frame in _prefetch(self._prepared()):
            if not self.keep_going():
                self.stopped = True
                return
            yield frame


_END = object()


def _prefetch(batches: Iterator[T], depth: int = 2) -> Iterator[T]:
    """Yield ``batches`` while a thread reads the next ones (at most ``depth``).

    Reading and splitting a block (file read, polars' CSV split, which releases
    the GIL) overlaps with the caller's work on the previous one; the bounded
    queue keeps memory at a few blocks. An error while reading is raised here,
    at the block where it happened; stopping early stops the thread.
    """
    ready: queue.Queue[object] = queue.Queue(maxsize=depth)
    stop = threading.Event()

    def offer(item: object) -> bool:
        while not stop.is_set():
            try:
                ready.put(item, timeout=0.1)
            except queue.Full:
                continue
            return True
        return False

    def read() -> None:
        try:
            for batch in batches:
                if not offer(batch):
                    return
        except BaseException as exc:  # handed to the consumer
            offer(exc)
            return
        offer(_END)

    worker = threading.Thread(target=read, name="relkit-read", daemon=True)
    worker.start()
    try:
        while (item := ready.get()) is not _END:
            if isinstance(item, BaseException):
                raise item
            yield item  # type: ignore[misc]
    finally:
        stop.set()
        worker.join()


#: Files up to this size are read whole and packed with others into one stream
#: (:class:`StreamFrames`); larger ones are read on their own in blocks.
STREAM_FILE_BYTES = 1 << 22


def read_whole(path: Path, limit: int | None = None) -> bytes | None:
    """Read a small log whole (decompressed), checked as :func:`block_batches` is.

    Returns None when it decompresses to more than ``limit`` bytes (a small
    compressed file may hold gigabytes: it is read alone, in blocks). Raises
    IngestError for a damaged compressed file or one that is no text log.
    """
    kind = None
    try:
        raw = path.read_bytes()  # one open for a plain file
        kind = next((n for m, n in COMPRESSIONS.items() if raw.startswith(m)), None)
        data = raw
        if kind is not None:
            fh = _open(path, kind)
            most = (1 << 40) if limit is None else limit + 1
            try:
                data = fh.read(most)
            finally:
                fh.close()
            if limit is not None and len(data) > limit:
                return None
    except (OSError, EOFError, zlib.error, lzma.LZMAError, _ZstdError) as exc:
        msg = (
            f"not a readable {kind or 'log'} file ({exc}); it may be truncated. "
            "Copy it again or decompress what is there "
            f"({_UNPACK.get(kind or '', 'cat FILE > OUT')}) and ingest OUT."
        )
        raise IngestError(path, msg) from exc
    _refuse_binary(path, data[:_HEAD_BYTES], kind)
    return data.removeprefix(_BOM)


class StreamFrames:
    """Kept lines of many small files as one stream of frames.

    The files are read whole (:func:`read_whole`), packed into blocks of about
    :data:`BATCH_BYTES` and split, tested and filtered as :class:`LineFrames`
    does one file's blocks, so a directory of 10,000 host logs costs about
    what their lines cost in one file. Frames have :class:`LineFrames`'
    columns, with ``line_no`` counted over the whole stream (file ``k``'s
    line ``n`` is ``starts[k] + n``), and ``file_no`` (the file's index) and
    ``dflt`` (the host of lines that name none: ``hosts[k]``).

    After the loop: ``starts``, ``n_lines_f``, ``n_blank_f`` and
    ``last_lines`` (the last non-blank line per file, stream-numbered),
    ``failures`` (file index -> IngestError, files that could not be read;
    they add no line), ``spans`` (host key -> :class:`HostSpan`, keyed as
    :class:`LineFrames` keys them, with each line's ``dflt``) and
    ``host_files`` (host key -> the files whose lines carry it). A host key
    of more than one file means those files' lines were linked together:
    the caller reads them again one by one.
    """

    full = False
    stopped = False
    last_line = None

    def __init__(
        self,
        files: list[Path],
        hosts: list[str | None],
        *,
        on_batch: Callable[[pl.DataFrame], None] | None = None,
        on_progress: Callable[[int, int], None] | None = None,
        batch_bytes: int = BATCH_BYTES,
    ) -> None:
        self.files, self.hosts = files, hosts
        self.on_batch, self.on_progress = on_batch, on_progress
        self.batch_bytes = batch_bytes
        n = len(files)
        self.starts = [0] * n
        self.n_lines_f = [0] * n
        self.n_blank_f = [0] * n
        self.last_lines: list[tuple[int, str] | None] = [None] * n
        self.failures: dict[int, IngestError] = {}
        #: Files too large once decompressed: left out, to be read alone.
        self.alone: set[int] = set()
        self.spans: dict[str, HostSpan] = {}
        self.host_files: dict[str, set[int]] = {}
        self.n_lines = 0
        self.n_bytes = 0

    def _groups(self) -> Iterator[list[tuple[int, bytes]]]:
        group: list[tuple[int, bytes]] = []
        size = 0
        for k, path in enumerate(self.files):
            try:
                data = read_whole(path, limit=STREAM_FILE_BYTES)
            except IngestError as exc:
                self.failures[k] = exc
                continue
            if data is None:
                self.alone.add(k)
                continue
            if data and not data.endswith(b"\n"):
                data += b"\n"  # a last line without a newline is a line
            group.append((k, data))
            size += len(data)
            if size >= self.batch_bytes:
                yield group
                group, size = [], 0
        if group:
            yield group

    def _prepared(self) -> Iterator[pl.DataFrame]:
        """Frames per group of files: tested in :data:`WORKERS` threads, in order."""

        def jobs() -> Iterator[tuple[Callable[[], object], None]]:
            for group in self._groups():
                counts = [d.count(b"\n") for _, d in group]
                offset = self.n_lines
                for (k, _), c in zip(group, counts, strict=True):
                    self.starts[k], self.n_lines_f[k] = self.n_lines, c
                    self.n_lines += c
                yield (lambda g=group, c=counts, o=offset: self._prepare(g, c, o)), None

        for got, _ in _in_order(jobs()):
            yield self._fold(got)  # type: ignore[arg-type]

    def _prepare(
        self, group: list[tuple[int, bytes]], counts: list[int], offset: int
    ) -> tuple[
        pl.DataFrame, pl.DataFrame, list[tuple[int, tuple[int, str]]], int, pl.DataFrame
    ]:
        """Split, test and filter one group of files (in a worker thread)."""
        import numpy as np

        ks = [k for k, _ in group]
        data = b"".join(d for _, d in group)
        batch = split_block(data) if data else pl.Series("line", [], pl.String)
        rows = _block_rows(
            data,
            batch,
            offset,
            full=False,
            on_batch=self.on_batch,
            file_no=pl.Series("file_no", np.repeat(ks, counts), dtype=pl.Int64),
            dflt=pl.Series("dflt", [self.hosts[k] for k in ks], dtype=pl.String).gather(
                pl.Series(np.repeat(np.arange(len(ks)), counts))
            ),
        )
        lasts = []
        local = 0
        for k, c in zip(ks, counts, strict=True):
            last = last_nonblank(batch.slice(local, c))
            if last is not None:
                lasts.append((k, last))
            local += c
        spans = _batch_spans(rows, pl.col("dflt"))
        blank = rows.group_by("file_no").agg(pl.col("blank").sum())
        return _kept(rows, full=False), spans, lasts, len(data), blank

    def _fold(
        self,
        got: tuple[
            pl.DataFrame,
            pl.DataFrame,
            list[tuple[int, tuple[int, str]]],
            int,
            pl.DataFrame,
        ],
    ) -> pl.DataFrame:
        """Fold one group into the per-file counts and per-host spans (in order)."""
        kept, spans, lasts, n_bytes, blank = got
        for k, b in blank.iter_rows():
            self.n_blank_f[k] = b
        for k, (i, text) in lasts:
            self.last_lines[k] = (self.starts[k] + i + 1, text)
        _fold_spans(self.spans, spans, self.host_files)
        self.n_bytes += n_bytes
        if self.on_progress is not None:
            self.on_progress(self.n_bytes, self.n_lines)
        return kept

    def __iter__(self) -> Iterator[pl.DataFrame]:
        yield from _prefetch(self._prepared())
