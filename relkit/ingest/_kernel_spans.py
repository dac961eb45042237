"""Per-host spans of a kernel log: when each host's lines begin and end.

A host whose lines hold no failure signal was still watched from its first
line to its last (DESIGN.md §1a: without assets a host is at risk from the
first to the last line of its logs). :class:`relkit.ingest._kernel_read.LineFrames`
counts every host's non-blank lines and keeps its first and last few; this
module gives each end a time and builds the ``log_spans`` rows.
"""

import datetime as dt
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

    Returns
    -------
    pl.DataFrame
        One row per host (``host`` null for lines that name none, when no
        ``host`` was given): ``first_ts`` / ``last_ts`` the time of the host's
        first / last non-blank line with a resolvable time (of the first and
        last :data:`SPAN_LINES` lines; null if none resolves), widened to
        the host's events; ``n_lines`` its non-blank lines. A host named only
        by its events (an NCCL ``host:pid:tid`` prefix) gets a row with
        ``n_lines`` 0 and its events' span. Sorted by host.
    """
    heads, tails = _ends(spans, tracker, tz=tz, ref=ref, host=host, path=path)
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
