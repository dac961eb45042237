"""Per-host spans of a kernel log: when each host's lines begin and end.

A host whose lines hold no failure signal was still watched from its earliest
line to its latest (DESIGN.md §1a: without assets a host is at risk from the
first to the last line of its logs). :class:`relkit.ingest._kernel_read.LineFrames`
counts every host's non-blank lines and keeps its first and last few;
:class:`WallEnds` finds, batch by batch, each host's earliest and latest
syslog wall stamp wherever it lies in the file (``cat kern.log kern.log.1``
puts the newer day first); this module gives each end a time and builds the
``log_spans`` rows.
"""

import datetime as dt
import threading
from pathlib import Path

import polars as pl

from relkit.errors import IngestError
from relkit.ingest._kernel_classify import split_framing
from relkit.ingest._kernel_read import SPAN_LINES, HostSpan
from relkit.ingest._kernel_time import BootTracker, wall_times
from relkit.schema import UTC

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: Times outside [1970, 2200) are a broken clock (:func:`mark_bad_times`).
EARLIEST = _EPOCH
LATEST = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)
_SPAN_SCHEMA = {
    "host": pl.String,
    "first_ts": UTC,
    "last_ts": UTC,
    "n_lines": pl.Int64,
}


def line_times(
    lines: list[tuple[str, int, str, int | None]],
    tracker: BootTracker,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    path: Path,
) -> list[dt.datetime | None]:
    """UTC time of each ``(hkey, line_no, text, boot_no)``, None if unresolvable.

    A wall stamp is read as for events (None, not an error, when it needs a
    zone or reference date that was not given); a kernel clock alone is
    resolved from the anchor of ``(hkey, boot_no)`` when the log has one.
    """
    if not lines:
        return []
    fr = split_framing(pl.Series("line", [t for _, _, t, _ in lines], dtype=pl.String))
    fr = fr.with_columns(line_no=pl.Series([n for _, n, _, _ in lines]))
    if host is not None:
        fr = fr.with_columns(host=pl.col("host").fill_null(host))
    try:
        walls = wall_times(fr, tz=tz, reference_date=ref, path=path)["wall_ts"]
    except IngestError:  # some line needs tz / reference date: one at a time
        parts = []
        for i in range(fr.height):
            try:
                one = wall_times(fr.slice(i, 1), tz=tz, reference_date=ref, path=path)
                parts.append(one["wall_ts"])
            except IngestError:
                parts.append(pl.Series("wall_ts", [None], dtype=UTC))
        walls = pl.concat(parts)
    # a time outside [1970, 2200) is a broken clock (as for events), no end
    walls = walls.set(~walls.is_between(EARLIEST, LATEST, closed="left"), None)
    out: list[dt.datetime | None] = []
    monos = fr.get_column("mono_s").to_list()
    for (hkey, _, _, boot), wall, mono in zip(lines, walls, monos, strict=True):
        boot_us = None if boot is None else tracker.anchors.get((hkey, boot))
        ts = wall
        if ts is None and mono is not None and boot_us is not None:
            try:
                ts = _EPOCH + dt.timedelta(microseconds=boot_us + round(mono * 1e6))
            except (OverflowError, ValueError):
                ts = None
        out.append(ts if ts is None or EARLIEST <= ts < LATEST else None)
    return out


#: Characters of a syslog line that hold its stamp and orders it: an ISO 8601
#: stamp with nanoseconds and offset is 35.
_KEY_CHARS = 40
#: Lines kept per host and stamp kind at each end: the earliest and latest
#: stamps by text, timed exactly at the end of the file (more than one, so that
#: a stamp that is no instant, Feb 30 say, does not hide the host's true end).
EXTREME_LINES = 4
#: An ISO 8601 stamp that names its UTC offset (needs no ``tz``).
_ISO_OFFSET = r"^\d{4}-\d{2}-\d{2}[T ][\d:.,]+(?:[Zz]|[+-]\d{2}:?\d{2})\s"
_CANDIDATES = {
    "hkey": pl.String,
    "grp": pl.String,
    "key": pl.String,
    "line_no": pl.Int64,
    "line": pl.String,
}


def _extremes(keyed: pl.DataFrame) -> pl.DataFrame:
    """Keep the :data:`EXTREME_LINES` first and last keys per ``hkey, grp``."""
    if keyed.height <= 2 * EXTREME_LINES:
        return keyed
    row = pl.struct("key", "line_no", "line")
    ends = keyed.group_by("hkey", "grp").agg(
        lo=row.bottom_k_by("key", EXTREME_LINES),
        hi=row.top_k_by("key", EXTREME_LINES),
    )
    return (
        pl.concat(
            [
                ends.select("hkey", "grp", e=pl.col(side)).explode("e").unnest("e")
                for side in ("lo", "hi")
            ]
        )
        .unique(["hkey", "line_no"])
        .select(*_CANDIDATES)
    )


def stamp_extremes(rows: pl.DataFrame, *, ref: dt.date | None = None) -> pl.DataFrame:
    """Pick the lines of each host of a batch with the earliest and latest stamp.

    Parameters
    ----------
    rows : pl.DataFrame
        Every line of one batch: ``line_no, line, blank, syslog_host`` (as
        :class:`relkit.ingest._kernel_read.LineFrames` reads them;
        ``syslog_host`` is the host after an ISO 8601 or RFC 3164 stamp that
        starts the line, :data:`relkit.ingest._kernel_patterns.CLOCK_HOST`).
    ref : date, optional
        The reference date of year-less RFC 3164 stamps (without it they
        cannot be timed and are skipped).

    Examples
    --------
    >>> rows = pl.DataFrame(
    ...     {
    ...         "line_no": [1, 2, 3],
    ...         "line": [
    ...             "Mar  5 00:00:01 gpu01 kernel: up",
    ...             "Mar  4 12:00:00 gpu01 kernel: Xid",
    ...             "Mar  4 18:00:00 gpu01 kernel: done",
    ...         ],
    ...         "blank": [False] * 3,
    ...         "syslog_host": ["gpu01"] * 3,
    ...     }
    ... )
    >>> stamp_extremes(rows, ref=dt.date(2025, 3, 6))["line_no"].sort().to_list()
    [1, 2, 3]

    Returns
    -------
    pl.DataFrame
        ``hkey, grp, key, line_no, line``: per syslog host and stamp kind
        (``grp``: ``iso``, or the month of an RFC 3164 stamp) the
        :data:`EXTREME_LINES` lines whose ``key`` comes first and last. Keys
        of different batches compare, so the extremes of a file are the
        extremes of its batches' extremes.

    Notes
    -----
    No line is parsed here (the syslog host was found already, so the stamp
    starts the line): an ISO stamp's text orders like its time among stamps
    of one format and offset, and an RFC 3164 stamp's day and time do within
    its month; which month of which year comes first (a date after ``ref`` +
    1 day is in the year before, as
    :func:`relkit.ingest._kernel_time.wall_times` reads it) is left to the
    exact times of the candidates. Local time
    repeats an hour when summer time ends, and an offset change reorders
    text within one hour: there a line may be passed over for another of the
    same hour. Years outside [1970, 2200) are broken clocks and skipped, as
    for events. Lines starting with a syslog priority (``<6>``) are left to
    the first and last lines of :func:`log_spans`.
    """
    line = pl.col("line")
    first = line.str.slice(0, 1)
    st = rows.filter(pl.col("syslog_host").is_not_null() & ~pl.col("blank")).select(
        "line_no", "line", hkey="syslog_host", _iso=(first >= "0") & (first <= "9")
    )
    iso = st.filter(
        pl.col("_iso") & line.str.slice(0, 4).is_between(pl.lit("1970"), pl.lit("2199"))
    )
    parts = [
        iso.select(
            "hkey",
            grp=pl.lit("iso"),
            key=line.str.slice(0, _KEY_CHARS),
            line_no="line_no",
            line="line",
        )
    ]
    if ref is not None:
        # within one month the day and time order like time; months (and the
        # year of each) are told apart when the few candidates are timed
        parts.append(
            st.filter(~pl.col("_iso") & (first != "<")).select(
                "hkey",
                grp=line.str.slice(0, 3),
                key=line.str.slice(3, _KEY_CHARS),
                line_no="line_no",
                line="line",
            )
        )
    return _extremes(pl.concat(parts).cast(_CANDIDATES))  # type: ignore[arg-type]


class WallEnds:
    """Each host's earliest and latest syslog wall time, gathered batch by batch.

    Call :meth:`add` with every batch of a file's lines (any order, from any
    one thread), then :meth:`ends`: per host key, the earliest and latest
    instant of its ISO 8601 and RFC 3164 stamped lines wherever they are in
    the file. Each batch gives a few candidate lines per host
    (:func:`stamp_extremes`), merged with those of the batches before (a
    bounded frame: hosts × 2 × :data:`EXTREME_LINES`); :meth:`ends` times the
    candidates once (:func:`line_times`). Lines with a kernel clock only
    (dmesg, kmsg), which get their times from boot anchors, and lines with a
    wall stamp but no syslog host (``dmesg -T``, ``dmesg --time-format
    iso``, public archives) are left to :func:`log_spans`' first and last
    lines.
    """

    def __init__(
        self, *, tz: str | None, ref: dt.date | None, host: str | None, path: Path
    ) -> None:
        self.tz, self.ref, self.host, self.path = tz, ref, host, path
        self._cand = pl.DataFrame(schema=_CANDIDATES)
        self._lock = threading.Lock()

    def add(self, rows: pl.DataFrame) -> None:
        """Fold in one batch (``line_no, line, blank, syslog_host``).

        Batches may come in any order, from several threads at once: the
        extremes of a file are the extremes of its batches' extremes.
        """
        ext = stamp_extremes(rows, ref=self.ref if self.tz is not None else None)
        if ext.height:
            with self._lock:
                self._cand = _extremes(pl.concat([self._cand, ext]))

    def ends(self) -> tuple[dict[str, dt.datetime], dict[str, dt.datetime]]:
        """Earliest and latest wall time per host key (hosts with one only)."""
        cand = self._cand
        if self.tz is None:  # a stamp without an offset cannot be timed
            cand = cand.filter(
                (pl.col("grp") == "iso") & pl.col("line").str.contains(_ISO_OFFSET)
            )
        first: dict[str, dt.datetime] = {}
        last: dict[str, dt.datetime] = {}
        if cand.is_empty():
            return first, last
        todo = [(h, n, t, None) for h, n, t in cand.select(
            "hkey", "line_no", "line"
        ).iter_rows()]  # fmt: skip
        times = line_times(
            todo,
            BootTracker(),
            tz=self.tz,
            ref=self.ref,
            host=self.host,
            path=self.path,
        )
        for (hkey, *_), ts in zip(todo, times, strict=True):
            if ts is None:
                continue
            if hkey not in first or ts < first[hkey]:
                first[hkey] = ts
            if hkey not in last or ts > last[hkey]:
                last[hkey] = ts
        return first, last


def _ends(
    spans: dict[str, HostSpan],
    tracker: BootTracker,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    path: Path,
) -> tuple[dict[str, dt.datetime], dict[str, dt.datetime]]:
    """First and last resolvable time among each host's kept end lines.

    Tried in rounds, one line per host and end per round, from the ends
    inwards: the first line of the log's first boot, and the last line of its
    last boot. Both ends of every host are timed in one call per round (a
    round costs a few milliseconds whatever its size, and a directory of
    per-host logs pays it per file).
    """
    found: tuple[dict[str, dt.datetime], dict[str, dt.datetime]] = ({}, {})
    for k in range(SPAN_LINES):
        todo, where = [], []
        for side, first in enumerate((True, False)):
            for hkey, span in spans.items():
                ends = span.head if first else span.tail[::-1]
                if hkey in found[side] or k >= len(ends):
                    continue
                boot = 0 if first else tracker.last.get(hkey, (0.0, 0))[1]
                line_no, text = ends[k]
                todo.append((hkey, line_no, text, boot))
                where.append(side)
        if not todo:
            break
        times = line_times(todo, tracker, tz=tz, ref=ref, host=host, path=path)
        for (hkey, *_), side, ts in zip(todo, where, times, strict=True):
            if ts is not None:
                found[side][hkey] = ts
    return found


def log_spans(
    spans: dict[str, HostSpan],
    tracker: BootTracker,
    events: pl.DataFrame,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    path: Path,
    walls: WallEnds | None = None,
) -> pl.DataFrame:
    """Build the ``log_spans`` rows of one file: ``host, first_ts, last_ts, n_lines``.

    Parameters
    ----------
    spans : dict of str to HostSpan
        From :attr:`relkit.ingest._kernel_read.LineFrames.spans`.
    tracker : BootTracker
        The file's boots and anchors (for lines with a kernel clock only).
    events : pl.DataFrame
        The file's events (``host, ts``), possibly empty.
    tz, ref, host, path
        As for the file's events.
    walls : WallEnds, optional
        Each host's earliest and latest syslog wall time over all its lines
        (fed every batch of the file).

    Returns
    -------
    pl.DataFrame
        One row per host (``host`` null for lines that name none, when no
        ``host`` was given): ``first_ts`` / ``last_ts`` the host's earliest /
        latest time, whatever the order of its lines: the earliest and latest
        of its wall-stamped lines (``walls``), of its first and last
        non-blank lines with a resolvable time (of the first and last
        :data:`SPAN_LINES` lines in file order, which time kernel-clock
        lines through their boot's anchor) and of its events; null if none
        resolves. ``n_lines`` its non-blank lines. A host named only by its
        events (an NCCL ``host:pid:tid`` prefix) gets a row with ``n_lines``
        0 and its events' span. Sorted by host.

    Notes
    -----
    ``cat kern.log kern.log.1`` puts the newer day first: the span runs from
    the older file's first line to the newer file's last, not between the
    lines that happen to open and close the concatenation. Kernel-clock-only
    lines (plain dmesg, kmsg) are timed through the first and last lines of
    the file's first and last boot only.
    """
    heads, tails = _ends(spans, tracker, tz=tz, ref=ref, host=host, path=path)
    if walls is not None:
        w_first, w_last = walls.ends()
        for hkey, ts in w_first.items():
            if hkey in spans and (hkey not in heads or ts < heads[hkey]):
                heads[hkey] = ts
        for hkey, ts in w_last.items():
            if hkey in spans and (hkey not in tails or ts > tails[hkey]):
                tails[hkey] = ts
    rows = pl.DataFrame(
        {
            "hkey": list(spans),
            "first_ts": [heads.get(h) for h in spans],
            "last_ts": [tails.get(h) for h in spans],
            "n_lines": [s.n_lines for s in spans.values()],
        },
        schema={
            "hkey": pl.String,
            "first_ts": UTC,
            "last_ts": UTC,
            "n_lines": pl.Int64,
        },
    )
    if not events.is_empty():
        ev = (
            events.filter(pl.col("ts").is_not_null())
            .group_by(hkey=pl.col("host").fill_null(""))
            .agg(e_first=pl.col("ts").min(), e_last=pl.col("ts").max())
        )
        rows = rows.join(ev, on="hkey", how="full", coalesce=True).select(
            "hkey",
            first_ts=pl.min_horizontal("first_ts", "e_first"),
            last_ts=pl.max_horizontal("last_ts", "e_last"),
            n_lines=pl.col("n_lines").fill_null(0),
        )
    return (
        rows.select(
            host=pl.when(pl.col("hkey") != "").then(pl.col("hkey")),
            first_ts="first_ts",
            last_ts="last_ts",
            n_lines="n_lines",
        )
        .cast(_SPAN_SCHEMA)  # type: ignore[arg-type]
        .sort("host", nulls_last=True)
    )
