"""Kernel and syslog logs of GPU nodes: read files, resolve times, write events.

The classifier is :mod:`relkit.ingest._kernel_classify` (:func:`classify_lines`,
:func:`link_context`, re-exported here); :func:`resolve_times` turns the
framing's time fields into UTC without guessing. Both stay the full,
every-line reference (the loghub host/time agreement test uses them).

:func:`read_kernel` streams a plain, gzip or directory input in blocks
(:class:`relkit.ingest._kernel_read.LineFrames`) through a fast path with the
same events, rejects and ignored counts: cheap vectorised tests mark keyword
candidates and lines carrying a kernel clock; clock lines give their clock and
host for boot numbering (reboots), the first walled clock line of each boot is
parsed as its anchor, and the candidates, a small share of a log, are
classified and timed in one call at the end. Other lines are counted as
``no_signal`` (or ``blank``) without parsing their framing or time. The file's
BLAKE3 digest (its identity in the store) is computed in a thread meanwhile.
"""

import datetime as dt
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import polars as pl

from relkit.errors import IngestError, PartialIngestError
from relkit.ingest._common import (
    IngestResult,
    Parsed,
    check_file,
    check_tz,
    ingest,
    ingest_many,
)
from relkit.ingest._kernel_classify import (
    AMD_MEMORY,
    MCELOG_RECORD,
    boot_time_links,
    classify_lines,
    classify_numbered,
    link_context,
    split_framing,
)
from relkit.ingest._kernel_read import (
    STREAM_FILE_BYTES,
    LineFrames,
    StreamFrames,
    clock_columns,
    compression,
    file_host,
)
from relkit.ingest._kernel_spans import EARLIEST, LATEST, WallEnds, log_spans
from relkit.ingest._kernel_time import (
    BTIME_SUFFIX,
    BootTracker,
    add_flag,
    boot_time_record,
    mark_bad_times,
    options_dict,
    parse_boot_time,
    parse_reference_date,
    resolve_times,
    wall_times,
)
from relkit.ingest._progress import ProgressMeter
from relkit.store import Store

__all__ = [
    "DATA_SUFFIXES",
    "DOC_STEMS",
    "EVENT_COLUMNS",
    "NOT_LOG_SUFFIXES",
    "KernelLog",
    "classify_lines",
    "is_log_file",
    "link_context",
    "parse_kernel_log",
    "parse_kernel_logs",
    "read_kernel",
    "resolve_times",
]

KIND = "kernel"


# -- reading files ---------------------------------------------------------------------
@dataclass(frozen=True)
class _Parsed:
    n_lines: int
    events: pl.DataFrame
    rejects: pl.DataFrame
    ignored: pl.DataFrame
    #: Time of the last line with a resolvable time (UTC), else None.
    log_end_ts: dt.datetime | None = None
    #: Time of the first non-blank line with a resolvable time (UTC), else None.
    log_start_ts: dt.datetime | None = None
    #: Time of the last non-blank line that has one (any host), else None.
    log_last_ts: dt.datetime | None = None
    #: ``log_spans`` rows: ``host, first_ts, last_ts, n_lines`` per host.
    spans: pl.DataFrame | None = None


@dataclass(frozen=True)
class _StreamCore:
    """What :func:`_parse_frames` found over many files read as one stream.

    Line numbers count over the stream (:attr:`StreamFrames.starts`).
    ``events`` are resolved and linked; ``rejects`` ``line_no, reason, raw``;
    ``ignored`` ``line_no, reason`` of candidate lines ignored;
    ``cand_lines`` the candidate lines' numbers; ``host_files`` each host
    key's files (more than one: those files were linked together).
    """

    tracker: BootTracker
    events: pl.DataFrame
    rejects: pl.DataFrame | None
    ignored: pl.DataFrame | None
    cand_lines: pl.DataFrame | None
    host_files: dict[str, set[int]]


def _file_of(frames: StreamFrames, line_no: pl.Series) -> pl.Series:
    """Index of the file each stream line number falls in."""
    import numpy as np

    read = sorted(
        (frames.starts[k], k)
        for k in range(len(frames.files))
        if k not in frames.failures and k not in frames.alone
    )
    starts = np.array([a for a, _ in read], dtype=np.int64)
    ks = np.array([k for _, k in read], dtype=np.int64)
    at = np.searchsorted(starts, line_no.to_numpy() - 1, side="right") - 1
    return pl.Series("file_no", ks[np.clip(at, 0, None)])


def _host_files(
    frames: StreamFrames,
    clock_files: list[pl.DataFrame],
    rows: pl.DataFrame | None = None,
) -> dict[str, set[int]]:
    """Each host key's files: of its lines' spans, clock lines and kept rows."""
    out = {h: set(fs) for h, fs in frames.host_files.items()}
    parts = list(clock_files)
    if rows is not None and rows.height:
        parts.append(
            rows.select(
                hkey=pl.col("host").fill_null(""),
                file_no=_file_of(frames, rows.get_column("line_no")),
            ).unique()
        )
    for part in parts:
        for hkey, k in part.select("hkey", "file_no").iter_rows():
            out.setdefault(hkey, set()).add(k)
    return out


_KEEP_REASONS = (
    "gpu_uuid_map",
    "rate_limit_notice",
    "boot_marker",
    MCELOG_RECORD,
    AMD_MEMORY,
)

#: Framing of a line (:func:`split_framing`) -> how to name it when its event
#: has no host: what the line lacks.
_HOSTLESS_FRAMING = {
    "dmesg": "dmesg framing ('[ sss.uuuuuu] message'), which carries no host",
    "kmsg": "/dev/kmsg framing, which carries no host",
    "dmesg_T": "dmesg -T framing ('[Mon Feb 23 03:28:16 2025] ...'), no host",
    "rfc3164": (
        "RFC 3164 syslog without a host field ('Feb 23 03:28:16 kernel: ...': "
        "the word after the time is the tag, not a host)"
    ),
    "iso": (
        "an ISO 8601 time without a host field (dmesg --time-format iso, or "
        "syslog written without the host)"
    ),
    "bare": "no framing at all (no time, no host)",
}


def _clock_lines(raw: pl.Series, line_no: pl.Series, host: str | None) -> pl.DataFrame:
    """Kernel clock and host of lines known to carry one (:data:`kp.CLOCK`).

    Returns ``line_no, hkey, mono, walled`` (``walled``: the line also has a
    wall stamp, so it can anchor its boot). Agrees with :func:`split_framing` on
    ``mono_s`` and ``host`` (checked by a test).
    """
    frame = pl.DataFrame({"line": raw, "line_no": line_no}).with_columns(
        **clock_columns(pl.col("line"))
    )
    return _clock_keys(frame, host)


def _clock_keys(frame: pl.DataFrame, host: str | None) -> pl.DataFrame:
    """``line_no, hkey, mono, walled`` of clock lines with :func:`clock_columns`.

    Lines whose host could come from an NCCL message prefix (``hint``) and name
    none in their framing take :func:`split_framing` itself (their text is kept).
    """
    hard = frame.get_column("hint") & frame.get_column("clock_host").is_null()
    if hard.any():
        full = split_framing(frame.get_column("line").filter(hard)).get_column("host")
        host_s = frame.get_column("clock_host").scatter(hard.arg_true(), full)
        frame = frame.with_columns(clock_host=host_s)
    dflt = pl.col("dflt") if "dflt" in frame.columns else pl.lit(host)
    return frame.select(
        "line_no",
        hkey=pl.col("clock_host").fill_null(dflt).fill_null(""),
        mono="mono",
        walled="walled",
    )


def _anchor_boots(
    tracker: BootTracker,
    m: pl.DataFrame,
    lines: pl.DataFrame,
    *,
    tz: str | None,
    ref: dt.date | None,
    path: Path,
) -> None:
    """Give each new (host, boot) of ``m`` its anchor: first valid wall + clock.

    Only the first walled line of each boot without an anchor is parsed
    (framing and wall time); if its wall text is no valid instant, the next one.
    ``lines`` holds ``line_no, line`` of the batch's clock lines.
    """
    known = pl.DataFrame(
        {
            "hkey": [k[0] for k in tracker.anchors],
            "boot_no": [k[1] for k in tracker.anchors],
        },
        schema={"hkey": pl.String, "boot_no": pl.Int64},
    )
    need = m.filter(pl.col("walled")).join(
        known, on=["hkey", "boot_no"], how="anti", maintain_order="left"
    )
    while need.height:
        first = need.unique(["hkey", "boot_no"], keep="first", maintain_order=True)
        text = first.select("line_no").join(
            lines, on="line_no", how="left", maintain_order="left"
        )
        fr = split_framing(text.get_column("line")).select("framing", "wall", "host")
        fr = fr.with_columns(line_no=first.get_column("line_no"))
        wall_ts = wall_times(fr, tz=tz, reference_date=ref, path=path)["wall_ts"]
        got = first.with_columns(wall_ts=wall_ts).filter(
            pl.col("wall_ts").is_not_null()
        )
        tracker.add_anchors(got)
        done = got.select("hkey", "boot_no")
        tried = first.get_column("line_no")
        need = need.filter(~pl.col("line_no").is_in(tried.implode())).join(
            done, on=["hkey", "boot_no"], how="anti", maintain_order="left"
        )


def _parse(
    path: Path,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    full: bool = False,
    keep_going: Callable[[], bool] | None = None,
    boot_time: dt.datetime | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> _Parsed | None:
    """Stream one file through classify, times and context; hold only kept rows.

    :class:`relkit.ingest._kernel_read.LineFrames` gives, per batch, the lines
    that are keyword candidates, blank or carry a kernel clock. Only candidates
    get :func:`classify_numbered` and their wall times; clock lines give their clock and
    host for boot numbering, and the first walled line of each new boot is
    parsed as its anchor. Other lines are counted as ``no_signal`` without
    further parsing. ``full=True`` classifies and times every line instead (the
    reference the tests compare the fast path with). Returns None when
    ``keep_going`` stopped the reading. ``boot_time`` (UTC) anchors the last
    boot of each host that has no anchor in the log.
    """
    walls = WallEnds(tz=tz, ref=ref, host=host, path=path)
    return _parse_frames(
        LineFrames(
            path,
            full=full,
            keep_going=keep_going,
            host=host,
            on_batch=walls.add,
            on_progress=on_progress,
        ),
        tz=tz,
        ref=ref,
        host=host,
        path=path,
        boot_time=boot_time,
        walls=walls,
    )


def _parse_frames(
    frames: LineFrames,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    path: Path,
    boot_time: dt.datetime | None = None,
    walls: WallEnds | None = None,
    boots: dict[int, dt.datetime] | None = None,
) -> _Parsed | _StreamCore | None:
    """:func:`_parse` over the frames of one reader (``walls``: its wall ends).

    Over a :class:`StreamFrames` (many files as one stream) it stops before
    the per-file work and returns a :class:`_StreamCore`; ``boots`` then gives
    a file's boot time by its index.
    """
    tracker = BootTracker()
    clock_files: list[pl.DataFrame] = []
    kept, rejects, ignored = [], [], []
    n_cand = n_blank_rest = 0
    parts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []
    pending: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    no_seg = pl.DataFrame(schema={"line_no": pl.Int64, "boot_no": pl.Int64})

    stream = isinstance(frames, StreamFrames)

    def classified(cands: pl.DataFrame) -> pl.DataFrame:
        c = classify_numbered(
            cands.get_column("line"),
            cands.get_column("line_no"),
            part=cands.get_column("file_no") if stream else None,
        )
        if stream:  # each file's own default host
            c = c.with_columns(host=pl.col("host").fill_null(cands.get_column("dflt")))
        elif host is not None:
            c = c.with_columns(host=pl.col("host").fill_null(host))
        return mark_bad_times(
            c.with_columns(wall_times(c, tz=tz, reference_date=ref, path=path))
        )

    for frame in frames:
        if frames.full:
            frame = frame.with_columns(cand=True)
        keep = ("line_no", "line", "file_no", "dflt") if stream else ("line_no", "line")
        cands = frame.filter(pl.col("cand")).select(keep)
        if not frames.full:
            # a copy: a filtered string column shares its block's whole buffer
            cands = cands.with_columns(
                line=pl.Series(cands.get_column("line").to_list(), dtype=pl.String)
            )
        n_cand += cands.height
        n_blank_rest += int(
            (frame.get_column("blank") & ~frame.get_column("cand")).sum()
        )
        if frames.full:
            c = classified(cands)
            parts.append((c, tracker.segment(c), cands))
            continue
        # candidates wait for one classify call at the end (they are few); the
        # clock lines number boots and anchor them now, batch by batch
        clocks = frame.filter(pl.col("clock"))
        seg = no_seg
        if clocks.height:
            keys = _clock_keys(clocks, host)
            if stream:
                clock_files.append(
                    keys.select("hkey", file_no=clocks.get_column("file_no")).unique()
                )
            m = tracker.number(keys)
            text = clocks.select("line_no", "line")
            try:
                _anchor_boots(tracker, m, text, tz=tz, ref=ref, path=path)
            except IngestError:
                # report the first line that needs tz/reference date: an
                # earlier candidate's, if one needs it too
                classified(pl.concat([*(p[0] for p in pending), cands]))
                raise
            seg = m.select("line_no", "boot_no").join(
                cands, on="line_no", how="semi", maintain_order="left"
            )
        pending.append((cands, seg))
    if boot_time is not None:
        tracker.anchor_last_boots(boot_time)
    if stream and boots:
        files_of = _host_files(frames, clock_files)
        for k, when in boots.items():
            tracker.anchor_last_boots(
                when, hkeys=[h for h, fs in files_of.items() if k in fs]
            )
    if pending and not frames.stopped:
        cands = pl.concat([p[0] for p in pending])
        parts.append((classified(cands), pl.concat([p[1] for p in pending]), cands))
    for c, seg, cands in parts:
        c = c.join(seg, on="line_no", how="left", maintain_order="left")
        bad = c.filter(pl.col("outcome") == "rejected")
        if bad.height:
            rejects.append(
                bad.select("line_no", "reason").join(
                    cands.select("line_no", raw="line"),
                    on="line_no",
                    how="left",
                    maintain_order="left",
                )
            )
        was_ignored = c.filter(pl.col("outcome") == "ignored")
        ignored.append(
            was_ignored.select("line_no", "reason")
            if stream
            else was_ignored.group_by("reason").len()
        )
        kept.append(
            c.filter(
                (pl.col("outcome") == "event") | pl.col("reason").is_in(_KEEP_REASONS)
            )
        )
    if frames.stopped:
        return None
    if frames.last_line is None and not stream:
        raise IngestError(path, _empty_reason(path, frames.n_lines))
    counts = {
        "blank": n_blank_rest,
        "no_signal": frames.n_lines - n_cand - n_blank_rest,
    }
    if not stream:
        ignored.append(
            pl.DataFrame(
                {"reason": list(counts), "len": list(counts.values())},
                schema={"reason": pl.String, "len": pl.UInt32},
            ).filter(pl.col("len") > 0)
        )
    rows = tracker.resolve(pl.concat(kept)) if kept else None
    if rows is None or rows.is_empty():
        events = pl.DataFrame()
    else:
        rows = rows.with_columns(
            flags=add_flag(
                pl.col("flags"), pl.col("dst_flag").is_not_null(), pl.col("dst_flag")
            )
        )
        # re-link across batches (uuid map, duplicates, rate limiting) with ts
        rows = link_context(rows.with_columns(flags=_drop_flags(pl.col("flags"))))
        events = boot_time_links(rows).filter(pl.col("outcome") == "event")
    if stream:
        assert isinstance(frames, StreamFrames)
        return _StreamCore(
            tracker=tracker,
            events=events,
            rejects=pl.concat(rejects) if rejects else None,
            ignored=pl.concat(ignored) if ignored else None,
            cand_lines=pl.concat([p[2].select("line_no") for p in parts])
            if parts
            else None,
            host_files=_host_files(
                frames,
                clock_files,
                rows.select("host", "line_no") if rows is not None else None,
            ),
        )
    if not events.is_empty() and events.get_column("host").null_count():
        raise _hostless_error(path, events)
    ign = (
        pl.concat(ignored)
        .group_by("reason")
        .agg(n_lines=pl.col("len").sum())
        .sort("reason")
    )
    rej = (
        pl.concat(rejects)
        if rejects
        else pl.DataFrame(
            schema={"line_no": pl.Int64, "reason": pl.String, "raw": pl.String}
        )
    )
    end = _log_end(frames, tracker, tz=tz, ref=ref, host=host, path=path)
    if end is not None and not events.is_empty() and events.get_column("ts").max():
        end = max(end, events.get_column("ts").max())  # type: ignore[type-var]
    spans = log_spans(
        frames.spans, tracker, events, tz=tz, ref=ref, host=host, path=path, walls=walls
    ).filter(pl.col("host").is_not_null())  # a span is a host's: journal markers
    if end is not None and spans.get_column("last_ts").max() is not None:
        # lines out of order (cat kern.log kern.log.1): the latest line ends it
        end = max(end, spans.get_column("last_ts").max())  # type: ignore[type-var]
    return _Parsed(
        frames.n_lines,
        _events_table(events),
        rej,
        ign.cast({"n_lines": pl.Int64}),
        log_end_ts=end,
        log_start_ts=spans.get_column("first_ts").min(),  # type: ignore[arg-type]
        log_last_ts=spans.get_column("last_ts").max(),  # type: ignore[arg-type]
        spans=spans,
    )


def _empty_reason(path: Path, n_lines: int) -> str:
    """Why a log without one non-blank line is refused (what it holds, the fix)."""
    kind = compression(path)
    if n_lines:
        what = f"has only blank lines ({n_lines})"
    elif kind:
        what = f"is empty once decompressed ({kind} of no text)"
    else:
        what = "is empty"
    return (
        f"the file {what}: no kernel/syslog line to ingest. The collection or the "
        "copy may have failed: collect or copy the log again, or leave it out."
    )


def _log_end(
    frames: LineFrames,
    tracker: BootTracker,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    path: Path,
) -> dt.datetime | None:
    """UTC time of the file's last non-blank line, or None (:func:`_end_times`)."""
    if frames.last_line is None:
        return None
    line_no, text = frames.last_line
    [end] = _end_times([(line_no, text, host)], tracker, tz=tz, ref=ref, path=path)
    return end


def _end_times(
    lines: list[tuple[int, str, str | None]],
    tracker: BootTracker,
    *,
    tz: str | None,
    ref: dt.date | None,
    path: Path,
) -> list[dt.datetime | None]:
    """UTC time of each ``(line_no, text, host)``: a log's last line, or None.

    A wall stamp is read as usual (None, not an error, when it needs a zone or
    reference date that was not given; None when outside [1970, 2200), a
    broken clock); a kernel clock alone is resolved from the anchor of its
    host's last boot, as for events. ``host`` names lines whose framing
    carries none.
    """
    fr = split_framing(pl.Series("line", [t for _, t, _ in lines], pl.String))
    fr = fr.with_columns(
        line_no=pl.Series([n for n, _, _ in lines], dtype=pl.Int64),
        host=pl.col("host").fill_null(
            pl.Series([h for _, _, h in lines], dtype=pl.String)
        ),
    )
    no_wall = pl.Series("wall_ts", [None], dtype=pl.Datetime("us", "UTC"))
    try:
        walls = wall_times(fr, tz=tz, reference_date=ref, path=path)["wall_ts"]
    except IngestError:  # some line needs tz / reference date: one at a time
        parts = []
        for i in range(fr.height):
            try:
                one = wall_times(fr.slice(i, 1), tz=tz, reference_date=ref, path=path)
                parts.append(one["wall_ts"])
            except IngestError:
                parts.append(no_wall)
        walls = pl.concat(parts)
    out: list[dt.datetime | None] = []
    for wall, mono, hkey in zip(
        walls, fr.get_column("mono_s"), fr.get_column("host"), strict=True
    ):
        if wall is not None:
            out.append(wall if EARLIEST <= wall < LATEST else None)
            continue
        key = hkey or ""
        last = tracker.last.get(key)
        boot_us = None if last is None else tracker.anchors.get((key, last[1]))
        if mono is None or boot_us is None:
            out.append(None)
            continue
        out.append(
            dt.datetime.fromtimestamp(0, dt.UTC)
            + dt.timedelta(microseconds=boot_us + round(mono * 1e6))
        )
    return out


def _drop_flags(flags: pl.Expr) -> pl.Expr:
    """Remove the flags :func:`link_context` sets (before linking a whole file)."""
    kept = flags.str.split(",").list.set_difference(["duplicate_line", "rate_limited"])
    joined = kept.list.join(",")
    return pl.when(joined == "").then(None).otherwise(joined)


def _events_table(events: pl.DataFrame) -> pl.DataFrame:
    """Classified event rows -> ``events`` table columns (pid/name/uuid in detail)."""
    if events.is_empty():
        return pl.DataFrame(schema={"line_no": pl.Int64})
    extra = pl.concat_str(
        [
            pl.format("pid={}", pl.col("pid")),
            pl.format("name={}", pl.col("name")),
            pl.format("uuid={}", pl.col("uuid")),
        ],
        separator=", ",
        ignore_nulls=True,
    )
    detail = (
        pl.when(extra == "")
        .then(pl.col("detail"))
        .otherwise(
            pl.concat_str(
                [pl.col("detail"), pl.format("({})", extra)],
                separator=" ",
                ignore_nulls=True,
            )
        )
    )
    return events.with_columns(detail=detail).select(EVENT_COLUMNS)


#: Columns of a kernel log's ``events`` (:class:`KernelLog`), in order: the
#: ``events`` table's without ``source_id``.
EVENT_COLUMNS = (
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


#: In a directory of logs, files with these suffixes or names are documentation.
#: Of those, the data tables (another ``--kind``): said when left out.
DATA_SUFFIXES = frozenset({".csv", ".psv", ".tsv", ".json", ".jsonl", ".parquet"})
NOT_LOG_SUFFIXES = frozenset({".md", ".rst", ".html", ".pdf", ".py"}) | DATA_SUFFIXES
DOC_STEMS = frozenset({"NOTICE", "LICENSE", "README", "COPYING", "PROVENANCE"})


def is_log_file(relative: str | PurePosixPath) -> bool:
    """Tell whether a file found in a log directory is a log to read.

    The rule of :func:`read_kernel` for a directory (and of
    :func:`relkit.distributed.list_logs`): hidden files and files under hidden
    directories, ``*.btime`` boot-time records, data tables (``.csv .psv .tsv
    .json .jsonl .parquet``) and documentation (``.md .rst .html .pdf .py``,
    ``NOTICE``, ``LICENSE``, ``README``, ``COPYING``, ``PROVENANCE``) are
    skipped.

    Parameters
    ----------
    relative : str or PurePosixPath
        The file's path relative to the directory (``/``-separated).

    Returns
    -------
    bool

    Examples
    --------
    >>> [is_log_file(n) for n in ("gpu1.log.gz", "README.md", ".x", "gpu1.btime")]
    [True, False, False, False]
    """
    rel = PurePosixPath(relative)
    return (
        not any(part.startswith(".") for part in rel.parts)
        and rel.suffix.lower() not in NOT_LOG_SUFFIXES
        and rel.suffix != BTIME_SUFFIX
        and rel.stem.upper() not in DOC_STEMS
    )


def read_kernel(
    store: Store,
    path: str | Path,
    *,
    tz: str | None = None,
    reference_date: str | dt.date | None = None,
    host: str | None = None,
    host_from_filename: bool = False,
    replace: bool = False,
    as_of: str | dt.datetime | None = None,
    boot_time: str | dt.datetime | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[IngestResult]:
    r"""Ingest kernel/syslog logs (a file, a compressed file or a directory of them).

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        A log file (plain, or gzip, xz, bzip2 or zstd compressed, told by its
        magic bytes) or a directory of per-host log files (each file its own
        source, read in name order; hidden files and ``*.btime`` records
        skipped).
    tz : str, optional
        IANA zone of zone-less stamps (``dmesg -T``, RFC 3164, ISO without
        offset): required when such lines occur (``--tz ZONE``).
    reference_date : str or datetime.date, optional
        Date the logs were collected (``YYYY-MM-DD``): gives year-less RFC 3164
        lines their year; required when such lines occur
        (``--reference-date``).
    host : str, optional
        Host of lines whose framing carries none (``dmesg``, ``dmesg -T``,
        kmsg); lines naming a host keep it.
    host_from_filename : bool, default False
        Take that host from each file's name instead (``node7.log.gz`` ->
        ``node7``).
    replace : bool, default False
        Re-read files ingested before, dropping their earlier rows first.
    as_of : str or datetime, optional
        When the logs were collected (ISO 8601 with a zone, or an aware
        datetime; ``--as-of``): ``as_of_ts`` (UTC) in each source's options.
        A zone-less time is an error.
    boot_time : str or datetime, optional
        When the host booted (ISO 8601 with a zone, an aware datetime, or the
        ``/proc/stat`` line ``btime <epoch>``; ``--boot-time``): resolves the
        kernel clock of plain ``dmesg`` lines (seconds since boot) to wall time.
        It anchors the last boot of each host in the file (the one running when
        ``dmesg`` was saved), unless the log anchors that boot itself (a line
        with both a wall stamp and the kernel clock wins). Without it, a file
        ``<host>.btime`` beside the log (``<host>`` is the log's name without
        suffixes, ``node7.log.gz`` -> ``node7.btime``) holding ``btime
        <epoch>`` (``grep btime /proc/stat > node7.btime``) or an ISO 8601
        time with a zone is used. A zone-less time is an error.
    progress : callable, optional
        Gets a one-line message every 2 s of a long read (lines, bytes of the
        file or directory and the share done, lines and bytes per second, time
        left; a directory also files done of all), e.g. ``relkit ingest``
        prints them on stderr (``--quiet`` silences them). Reads shorter than
        2 s say nothing.

    Returns
    -------
    list of IngestResult
        One per file: ``path, kind="kernel", source_id, n_lines, n_loaded,
        n_rejected, skipped, note, replaced, n_ignored`` with ``n_lines ==
        n_loaded + n_ignored + n_rejected``.

    Raises
    ------
    IngestError
        If the path is missing, unreadable or an empty directory; a compressed
        file is corrupt; the file (once decompressed) starts as no text log
        (Parquet, ELF, zip, UTF-16, mostly control or invalid UTF-8 bytes);
        ``boot_time`` or a ``.btime`` record is no time or has no zone;
        ``tz``/``reference_date`` is needed but missing or invalid (at the
        first line that needs it); an event line has no host and neither
        ``host`` nor ``host_from_filename`` is given; without ``replace``, a
        file read before from the same path has changed; or the file is empty
        (0 bytes, nothing once decompressed, or blank lines only).
    PartialIngestError
        For a directory, when some of its files raised one of the errors above:
        the others are ingested first (each its own source), then this error
        names every refused file with its reason (``failures``) and holds the
        others' results (``results``).

    Notes
    -----
    Files are streamed in blocks of about 8 MB; only candidate lines (and
    their events) are held until the file ends, so memory is bounded by the
    block size and the number of candidates, not of lines
    (``bench/bench_kernel_ingest.py``: about 0.3 GB peak RSS for a 1.2 GB,
    10-million-line log). Invalid UTF-8 bytes are replaced by U+FFFD,
    never fatal. Rejected lines go to ``rejects`` with the raw text; ignored
    lines are counted by reason in ``ignored``.

    Each file's source options get ``log_start_ts`` (UTC ISO 8601): the time of
    its first non-blank line with a resolvable time (or its first event's, if
    earlier); ``log_end_ts``: the time of its last non-blank line, when that
    line has one (or its last event's or latest line's, if later: lines out
    of order, as ``cat kern.log kern.log.1``); ``first_record_ts`` /
    ``last_record_ts``: the first and last time any of its lines resolves to
    (the earliest ``first_ts`` and latest ``last_ts`` below, and
    ``log_end_ts``). The
    ``log_spans`` table gets one row per host of the file (``source_id, host,
    first_ts, last_ts, n_lines``): a line's host is the word after its syslog
    stamp, else ``host``; ``first_ts`` / ``last_ts`` the host's earliest /
    latest time whatever the order of its lines: of every ISO 8601 or RFC 3164
    syslog line, of its first and last 8 lines (a kernel clock of a boot with
    an anchor), and of its events; ``n_lines`` its non-blank lines. So a host
    whose lines hold no failure signal is still known to have been watched.

    Only lines containing a failure keyword (``Xid``, ``NVRM``, ``mlx5_``,
    ``NCCL``, ``EDAC``, ...) go through :func:`classify_lines` and the time
    parse; the others are counted as ``no_signal`` (or ``blank``) unparsed.
    Lines with a kernel clock are read for their clock and host on every line,
    so reboots are found as before, and the first line of each boot that also
    carries a wall stamp anchors that boot. Hence ``tz``/``reference_date`` are
    required only when a candidate or anchor line needs them, and a line
    without a failure keyword whose date is invalid (Feb 29 of a common year)
    is counted as ``no_signal``, not rejected.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from relkit.store import Store
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "node1.log"
    >>> _ = f.write_text(
    ...     "2025-03-04T10:22:05+0000 node1 kernel: NVRM: Xid (PCI:0000:9b:00): 119\n"
    ...     "2025-03-04T10:22:06+0000 node1 CRON[5]: (root) CMD (true)\n"
    ... )
    >>> [r] = read_kernel(Store(":memory:"), f)
    >>> (r.n_lines, r.n_loaded, r.n_ignored, r.n_rejected)
    (2, 1, 1, 0)
    """
    p = Path(path)
    check_tz(path, tz)
    ref = parse_reference_date(path, reference_date)
    boot = parse_boot_time(path, boot_time)
    if p.is_dir():
        files = sorted(
            f
            for f in p.rglob("*")
            if f.is_file() and is_log_file(f.relative_to(p).as_posix())
        )
        if not files:
            msg = (
                "has no log files; expected per-host logs inside it (documentation "
                f"such as {sorted(NOT_LOG_SUFFIXES)} and NOTICE/LICENSE/README is "
                "skipped)."
            )
            raise IngestError(path, msg)

    if not p.is_dir():
        # a compressed file's size on disk is not what is read: its progress
        # gives the text read and the rate, without a share or time left
        size = _size_or_zero(p)
        plain = progress is None or _is_plain(p)
        meter = ProgressMeter(progress, str(path), total_bytes=size if plain else None)

        def on_progress(n_bytes: int, n_lines: int) -> None:
            meter.update(
                n_bytes=min(n_bytes, size) if plain else n_bytes, n_lines=n_lines
            )

        return [
            _read_one(
                store,
                p,
                tz=tz,
                ref=ref,
                host=file_host(p) if host_from_filename else host,
                replace=replace,
                as_of=as_of,
                boot=boot,
                on_progress=on_progress if progress is not None else None,
            )
        ]
    sizes = [_size_or_zero(f) for f in files]
    meter = ProgressMeter(
        progress, str(path), total_bytes=sum(sizes) or None, total_files=len(files)
    )
    done_bytes = done_lines = n_done = 0
    # a directory: each file its own source; a bad file does not stop the others.
    # Files are written in rounds (one transaction each); small files are read
    # together as streams (_parse_many)
    results, failures = [], []
    start = 0
    while start < len(files):
        stop, total = start, 0
        while stop < len(files) and stop - start < ROUND_FILES and total < ROUND_BYTES:
            total += sizes[stop]
            stop += 1
        chunk = files[start:stop]
        hosts = [file_host(f) if host_from_filename else host for f in chunk]
        parse_round = _round_parser(
            chunk,
            sizes[start:stop],
            hosts,
            tz=tz,
            ref=ref,
            boot=boot,
            on_progress=None
            if progress is None
            else _offset_progress(meter, done_bytes, done_lines, n_done),
        )
        got = ingest_many(
            store,
            chunk,
            kind=KIND,
            options=[options_dict(tz, ref, h, boot) for h in hosts],
            parse_many=parse_round,
            replace=replace,
            as_of=as_of,
        )
        for item in got:
            if isinstance(item, IngestError):
                failures.append(item)
            else:
                results.append(item)
                done_lines += item.n_lines
        n_done += len(chunk)
        done_bytes += total
        meter.update(n_bytes=done_bytes, n_lines=done_lines, n_files=n_done)
        start = stop
    if failures:
        raise PartialIngestError(path, failures, results, len(files))
    return results


def _size_or_zero(path: Path) -> int:
    """Return a file's size in bytes (0 when unreadable: its error comes later)."""
    try:
        return path.stat().st_size
    except OSError:
        return 0


def _is_plain(path: Path) -> bool:
    """Whether a file is not compressed (False when it cannot be opened)."""
    try:
        return compression(path) is None
    except OSError:
        return False


def _unknown_xid_note(events: pl.DataFrame) -> str | None:
    """Say, for the ingest summary, which Xid codes are outside the catalogue."""
    from relkit.taxonomy import UNKNOWN_XID_MODE, unknown_xid_note

    if events.is_empty() or "failure_mode" not in events.columns:
        return None
    if events.height == 1 and events["failure_mode"][0] != UNKNOWN_XID_MODE:
        return None  # the usual file of a fleet: no polars call
    return unknown_xid_note(events)


def _no_wall_time_note(events: pl.DataFrame, boot_from: str | None) -> str | None:
    """Say how many events lack a wall time and how to give them one."""
    if events.is_empty() or "ts" not in events.columns:
        return None
    n = events.get_column("ts").null_count()
    if n == 0:
        return None
    used = f" ({boot_from} anchors only the log's last boot)" if boot_from else ""
    return (
        f"{n} of {events.height} event(s) have no wall time (flag no_wall_time: "
        f"a kernel clock with no boot time){used}; pass --boot-time (the host's "
        "boot time with its zone, e.g. `uptime -s` plus the zone) or put "
        f"HOST{BTIME_SUFFIX} (grep btime /proc/stat > HOST{BTIME_SUFFIX}) beside "
        "the log, then ingest again with --replace"
    )


def _join_notes(*notes: str | None) -> str | None:
    """Join the non-empty notes with '; ' (None when there is none)."""
    kept = [n for n in notes if n]
    return "; ".join(kept) if kept else None


@dataclass(frozen=True)
class KernelLog:
    """What one kernel/syslog file holds, before it is written to a store.

    Every line is counted: ``n_lines == events.height +
    ignored["n_lines"].sum() + rejects.height``.

    Parameters
    ----------
    n_lines : int
        Lines of the file (decompressed).
    events : pl.DataFrame
        The ``events`` table's columns without ``source_id``: one row per
        failure signal, ``ts`` UTC.
    rejects : pl.DataFrame
        ``line_no, reason, raw`` of the lines that could not be used.
    ignored : pl.DataFrame
        ``reason, n_lines``: noise counted by reason, not kept.
    spans : pl.DataFrame or None
        ``host, first_ts, last_ts, n_lines``: the ``log_spans`` rows.
    options : dict
        The source options the file proves (``log_start_ts``, ``log_end_ts``,
        ``first_record_ts``, ``last_record_ts``, UTC ISO 8601) with the
        reading options (``tz``, ``reference_date``, ``host``, ``boot_time``).
    note : str or None
        What the ingest summary says (unknown Xid codes, events without a wall
        time, the boot time used).
    """

    n_lines: int
    events: pl.DataFrame
    rejects: pl.DataFrame
    ignored: pl.DataFrame
    spans: pl.DataFrame | None
    options: dict[str, object]
    note: str | None


def parse_kernel_log(
    path: str | Path,
    *,
    tz: str | None = None,
    reference_date: str | dt.date | None = None,
    host: str | None = None,
    host_from_filename: bool = False,
    boot_time: str | dt.datetime | None = None,
    name: str | None = None,
) -> KernelLog:
    """Read one kernel/syslog file into events, rejects and counts; no store.

    The store-free half of :func:`read_kernel` (same options, same rows), for
    engines that parse files on many machines (:mod:`relkit.distributed`) and
    write them to a store later.

    Parameters
    ----------
    path : str or Path
        One log file (plain or gzip/xz/bzip2/zstd compressed).
    tz, reference_date, host, host_from_filename, boot_time
        As for :func:`read_kernel`.
    name : str, optional
        The file's name where it came from, when ``path`` is a local copy (an
        object-store key, a path on another machine): gives the host for
        ``host_from_filename`` and the ``<host>.btime`` record's name. The
        ``.btime`` record is looked for beside ``path``.

    Returns
    -------
    KernelLog

    Raises
    ------
    IngestError
        As :func:`read_kernel` for one file.
    """
    p = check_file(path)
    check_tz(path, tz)
    ref = parse_reference_date(path, reference_date)
    boot = parse_boot_time(path, boot_time)
    named = Path(name) if name is not None else p
    host_f = file_host(named) if host_from_filename else host
    parsed = _parse_log(p, tz=tz, ref=ref, host=host_f, boot=boot, named=named)
    assert parsed is not None  # no keep_going: never stopped
    return parsed


def _parse_log(
    path: Path,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    boot: dt.datetime | None,
    named: Path | None = None,
    keep_going: Callable[[], bool] | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> KernelLog | None:
    """:func:`parse_kernel_log` with checked options (None: ``keep_going`` stopped)."""
    reading = options_dict(tz, ref, host, boot)
    record = (
        None
        if boot is not None
        else boot_time_record(path, file_host(named if named is not None else path))
    )
    boot_from = "--boot-time" if boot is not None else None
    if record is not None:
        boot, boot_from = record[0], record[1].name
    parsed = _parse(
        path,
        tz=tz,
        ref=ref,
        host=host,
        keep_going=keep_going,
        boot_time=boot,
        on_progress=on_progress,
    )
    if parsed is None:
        return None
    return _kernel_log(parsed, reading, record, boot, boot_from)


def _kernel_log(
    parsed: _Parsed,
    reading: dict[str, object],
    record: tuple[dt.datetime, Path] | None,
    boot: dt.datetime | None,
    boot_from: str | None,
) -> KernelLog:
    """Build a file's :class:`KernelLog`: rows, the options it proves, notes."""
    options: dict[str, object] = dict(reading)
    for key, ts in (
        ("log_start_ts", parsed.log_start_ts),
        ("log_end_ts", parsed.log_end_ts),
    ):
        if ts is not None:
            options[key] = ts.isoformat()
    # the span the file proves: its first and last line that has a time
    ends = [t for t in (parsed.log_end_ts, parsed.log_last_ts) if t is not None]
    if parsed.log_start_ts is not None:
        options["first_record_ts"] = parsed.log_start_ts.isoformat()
    if ends:
        options["last_record_ts"] = max(ends).isoformat()
    return KernelLog(
        n_lines=parsed.n_lines,
        events=parsed.events,
        rejects=parsed.rejects,
        ignored=parsed.ignored,
        spans=parsed.spans,
        options=options,
        note=_join_notes(
            None if record is None else f"boot time {boot} from {boot_from}",
            _unknown_xid_note(parsed.events),
            _no_wall_time_note(parsed.events, boot_from),
        ),
    )


def _parse_stream(
    files: list[Path],
    *,
    tz: str | None,
    ref: dt.date | None,
    hosts: list[str | None],
    boot: dt.datetime | None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[KernelLog | IngestError | None]:
    """Parse many small files as one stream; per file its log, its error or None.

    The files' lines are read, tested, classified and timed together
    (:class:`StreamFrames`), every host key kept to one file (a file's
    host-less lines apart from another's, duplicates only within a file), then
    split by file: each gets what :func:`_parse_log` gives it alone. None
    marks a file whose host key another file of the stream also carries (two
    logs of one host): its lines were linked across files, so the caller
    reads it on its own. An error that stops the whole stream (a stamp that
    needs ``tz``) makes every file None.
    """
    reading = [options_dict(tz, ref, h, boot) for h in hosts]
    records = [
        None if boot is not None else boot_time_record(f, file_host(f)) for f in files
    ]
    boots = {
        k: (boot if rec is None else rec[0])
        for k, rec in enumerate(records)
        if boot is not None or rec is not None
    }
    stream_path = files[0].parent
    walls = WallEnds(tz=tz, ref=ref, host=None, path=stream_path)
    frames = StreamFrames(files, hosts, on_batch=walls.add, on_progress=on_progress)
    try:
        core = _parse_frames(
            frames,
            tz=tz,
            ref=ref,
            host=None,
            path=stream_path,
            walls=walls,
            boots=boots,
        )
    except IngestError:
        return [None] * len(files)
    assert isinstance(core, _StreamCore)
    shared = {k for fs in core.host_files.values() if len(fs) > 1 for k in fs}
    spans = log_spans(
        frames.spans,
        core.tracker,
        core.events if core.events.height else pl.DataFrame(),
        tz=tz,
        ref=ref,
        host=None,
        path=stream_path,
        walls=walls,
    ).with_columns(hkey=pl.col("host").fill_null(""))
    ends = _log_ends(frames, core.tracker, tz=tz, ref=ref)
    # every per-file piece is computed for all files at once, then split: a
    # directory of 10,000 small logs must not pay polars' cost per call per file
    n_cand = _per_file(frames, core.cand_lines)
    rejects = _split(frames, core.rejects)
    raw_events = _split(frames, core.events if core.events.height else None)
    hostless = {k for k, ev in raw_events.items() if ev.get_column("host").null_count()}
    events = _split(frames, _events_table(core.events)) if core.events.height else {}
    ignored = _ignored_by_file(frames, core.ignored, n_cand)
    file_of_host = {h: next(iter(fs)) for h, fs in core.host_files.items()}
    spans = spans.filter(pl.col("host").is_not_null())
    spans_by = (
        {
            int(k): part
            for (k,), part in spans.with_columns(
                _file=pl.col("hkey").replace_strict(
                    file_of_host, default=-1, return_dtype=pl.Int64
                )
            )
            .drop("hkey")
            .partition_by("_file", as_dict=True, include_key=False)
            .items()
        }
        if spans.height
        else {}
    )
    no_events = _events_table(pl.DataFrame())
    no_rejects = pl.DataFrame(
        schema={"line_no": pl.Int64, "reason": pl.String, "raw": pl.String}
    )
    no_spans = spans.head(0).drop("hkey")
    out: list[KernelLog | IngestError | None] = []
    for k, path in enumerate(files):
        if k in frames.failures:
            out.append(frames.failures[k])
            continue
        if k in shared or k in frames.alone:
            out.append(None)
            continue
        if frames.last_lines[k] is None:
            out.append(IngestError(path, _empty_reason(path, frames.n_lines_f[k])))
            continue
        if k in hostless:
            out.append(_hostless_error(path, raw_events[k]))
            continue
        ev = events.get(k, no_events)
        sp = spans_by.get(k, no_spans)
        first_ts, last_ts = _column_ends(sp)
        end = ends.get(k)
        if end is not None and ev.height and (ev_last := ev["ts"].max()) is not None:
            end = max(end, ev_last)  # type: ignore[type-var]
        if end is not None and last_ts is not None:
            end = max(end, last_ts)
        parsed = _Parsed(
            frames.n_lines_f[k],
            ev,
            rejects.get(k, no_rejects),
            ignored[k],
            log_end_ts=end,
            log_start_ts=first_ts,
            log_last_ts=last_ts,
            spans=sp,
        )
        rec = records[k]
        boot_from = "--boot-time" if boot is not None else None
        if rec is not None:
            boot_from = rec[1].name
        out.append(_kernel_log(parsed, reading[k], rec, boots.get(k), boot_from))
    return out


def _column_ends(
    spans: pl.DataFrame,
) -> tuple[dt.datetime | None, dt.datetime | None]:
    """Earliest ``first_ts`` and latest ``last_ts`` of a file's spans."""
    if spans.height == 1:  # the usual one host per file: no polars call
        return spans["first_ts"][0], spans["last_ts"][0]
    if spans.is_empty():
        return None, None
    return spans["first_ts"].min(), spans["last_ts"].max()  # type: ignore[return-value]


def _ignored_by_file(
    frames: StreamFrames, cand_ignored: pl.DataFrame | None, n_cand: dict[int, int]
) -> dict[int, pl.DataFrame]:
    """Each read file's ``ignored`` rows (``reason, n_lines``), sorted by reason.

    ``blank`` and ``no_signal`` come from the stream's per-file counts, the
    reasons of ignored candidate lines from ``cand_ignored`` (stream-numbered
    ``line_no, reason``).
    """
    read = [
        k
        for k in range(len(frames.files))
        if k not in frames.failures and k not in frames.alone
    ]
    blank = [frames.n_blank_f[k] for k in read]
    rest = [frames.n_lines_f[k] - n_cand.get(k, 0) - frames.n_blank_f[k] for k in read]
    parts = [
        pl.DataFrame(
            {
                "_file": read * 2,
                "reason": ["blank"] * len(read) + ["no_signal"] * len(read),
                "n_lines": blank + rest,
            },
            schema={"_file": pl.Int64, "reason": pl.String, "n_lines": pl.Int64},
        )
    ]
    if cand_ignored is not None and cand_ignored.height:
        parts.append(
            cand_ignored.group_by(
                _file=_file_of(frames, cand_ignored.get_column("line_no")),
                reason="reason",
            ).agg(n_lines=pl.len().cast(pl.Int64))
        )
    counts = (
        pl.concat(parts)
        .filter(pl.col("n_lines") > 0)
        .group_by("_file", "reason")
        .agg(n_lines=pl.col("n_lines").sum())
        .sort("_file", "reason")
    )
    split = {
        int(k): part
        for (k,), part in counts.partition_by(
            "_file", as_dict=True, include_key=False
        ).items()
    }
    empty = counts.head(0).drop("_file")
    return {k: split.get(k, empty) for k in read}


def _split(frames: StreamFrames, rows: pl.DataFrame | None) -> dict[int, pl.DataFrame]:
    """Rows numbered over the stream -> per file, numbered within the file."""
    if rows is None or rows.is_empty():
        return {}
    at = rows.with_columns(_file=_file_of(frames, rows.get_column("line_no")))
    starts = pl.Series("starts", frames.starts, dtype=pl.Int64)
    at = at.with_columns(
        line_no=pl.col("line_no") - pl.lit(starts).gather(pl.col("_file"))
    )
    return {
        int(k): part
        for (k,), part in at.partition_by(
            "_file", as_dict=True, include_key=False
        ).items()
    }


def _per_file(frames: StreamFrames, lines: pl.DataFrame | None) -> dict[int, int]:
    """Count stream lines per file."""
    if lines is None or lines.is_empty():
        return {}
    files = _file_of(frames, lines.get_column("line_no"))
    return dict(files.value_counts().iter_rows())


def _log_ends(
    frames: StreamFrames, tracker: BootTracker, *, tz: str | None, ref: dt.date | None
) -> dict[int, dt.datetime]:
    """Each file's :func:`_log_end`: the time of its last non-blank line, if any."""
    last = [(k, x) for k, x in enumerate(frames.last_lines) if x is not None]
    if not last:
        return {}
    times = _end_times(
        [(n, text, frames.hosts[k]) for k, (n, text) in last],
        tracker,
        tz=tz,
        ref=ref,
        path=frames.files[0],
    )
    return {k: ts for (k, _), ts in zip(last, times, strict=True) if ts is not None}


def _hostless_error(path: Path, events: pl.DataFrame) -> IngestError:
    """Say that a file's event lines carry no host (see :func:`read_kernel`)."""
    hostless = events.filter(pl.col("host").is_null()).sort("line_no")
    first = int(hostless.get_column("line_no")[0])
    framing = hostless.get_column("framing")[0]
    what = _HOSTLESS_FRAMING.get(framing, f"{framing} framing, no host field")
    msg = (
        f"{hostless.height} event line(s) carry no host name: line {first} "
        f"has {what}; expected a host for every event. Pass host='NAME' "
        "(--host NAME) for one host's log, or host_from_filename=True "
        "(--host-from-filename) for per-host files (node7.log -> node7)."
    )
    return IngestError(path, msg, line_no=first)


def _as_parsed(log: KernelLog, reading: dict[str, object]) -> Parsed:
    """Give a :class:`KernelLog` as the store writer takes it (options apart)."""
    tables = {"events": log.events}
    if log.spans is not None:
        tables["log_spans"] = log.spans
    return Parsed(
        n_lines=log.n_lines,
        tables=tables,
        rejects=log.rejects,
        options={k: v for k, v in log.options.items() if k not in reading},
        n_loaded=log.events.height,
        ignored=log.ignored,
        note=log.note,
    )


#: A directory is written in rounds of at most this many files or bytes, each
#: one transaction: an interrupted ingest keeps every round it finished.
ROUND_FILES = 2_000
ROUND_BYTES = 1 << 28
#: Compressed files up to this size are read whole into a stream (their text
#: may be many times larger); larger ones are read on their own.
STREAM_COMPRESSED_BYTES = 1 << 18


def _round_parser(
    chunk: list[Path],
    sizes: list[int],
    hosts: list[str | None],
    *,
    tz: str | None,
    ref: dt.date | None,
    boot: dt.datetime | None,
    on_progress: Callable[[int, int], None] | None,
) -> Callable[[list[Path]], list[Parsed | IngestError]]:
    """``parse_many`` of one round of a directory: the files ingest_many reads."""
    where = {f: i for i, f in enumerate(chunk)}

    def parse(fs: list[Path]) -> list[Parsed | IngestError]:
        hosts_here = [hosts[where[f]] for f in fs]
        logs = _parse_many(
            fs,
            [sizes[where[f]] for f in fs],
            tz=tz,
            ref=ref,
            hosts=hosts_here,
            boot=boot,
            on_progress=on_progress,
        )
        return [
            log
            if isinstance(log, IngestError)
            else _as_parsed(log, options_dict(tz, ref, h, boot))
            for log, h in zip(logs, hosts_here, strict=True)
        ]

    return parse


def _offset_progress(
    meter: ProgressMeter, n_bytes0: int, n_lines0: int, n_files: int
) -> Callable[[int, int], None]:
    """Progress of a round, counted on from what the rounds before it read."""

    def update(n_bytes: int, n_lines: int) -> None:
        meter.update(
            n_bytes=n_bytes0 + n_bytes, n_lines=n_lines0 + n_lines, n_files=n_files
        )

    return update


def _streamable(path: Path, size: int) -> bool:
    """Whether a file is small enough to be read whole with others."""
    if size <= STREAM_COMPRESSED_BYTES:
        return True  # whatever it holds (no need to open it to know)
    if size > STREAM_FILE_BYTES:
        return False
    try:
        return compression(path) is None
    except OSError:
        return False  # its error comes from reading it on its own


def _parse_many(
    files: list[Path],
    sizes: list[int],
    *,
    tz: str | None,
    ref: dt.date | None,
    hosts: list[str | None],
    boot: dt.datetime | None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[KernelLog | IngestError]:
    """Parse a directory's files: small ones as streams, the rest one by one.

    Small files are read as streams (:func:`_parse_stream`) of files with
    different hosts by name (``node7.log`` and ``node7.log.1`` go to different
    streams), so each stream's host keys are its files' own; a file whose
    host key another file of its stream also carries, and every large file,
    is read alone (:func:`_parse_log`). Each file gets what it would get
    alone, in order.
    """
    logs: list[KernelLog | IngestError | None] = [None] * len(files)
    streams: dict[int, list[int]] = {}
    seen: dict[str, int] = {}
    for i, f in enumerate(files):
        if _streamable(f, sizes[i]):
            name = file_host(f)
            streams.setdefault(seen.get(name, 0), []).append(i)
            seen[name] = seen.get(name, 0) + 1
    for idx in streams.values():
        got = _parse_stream(
            [files[i] for i in idx],
            tz=tz,
            ref=ref,
            hosts=[hosts[i] for i in idx],
            boot=boot,
            on_progress=on_progress,
        )
        for i, log in zip(idx, got, strict=True):
            logs[i] = log
    out: list[KernelLog | IngestError] = []
    for i, f in enumerate(files):
        log = logs[i]
        if log is None:
            try:
                log = _parse_log(f, tz=tz, ref=ref, host=hosts[i], boot=boot)
            except IngestError as exc:
                log = exc
        assert log is not None  # no keep_going: never stopped
        out.append(log)
    return out


def parse_kernel_logs(
    paths: Sequence[str | Path],
    *,
    tz: str | None = None,
    reference_date: str | dt.date | None = None,
    host: str | None = None,
    host_from_filename: bool = False,
    boot_time: str | dt.datetime | None = None,
) -> list[KernelLog | IngestError]:
    """:func:`parse_kernel_log` of many files at once; no store.

    Small files are read together as streams, as :func:`read_kernel` reads a
    directory (each file still gets exactly what it gets alone); a file that
    cannot be read is its IngestError in the list, in order, and does not
    stop the others. For engines that parse batches of files on many
    machines (:func:`relkit.distributed.parse_log_batch`).

    Parameters
    ----------
    paths : sequence of str or Path
        Log files (plain or compressed). ``host_from_filename`` takes each
        file's host from its name, and a ``<host>.btime`` record is looked
        for beside each file, as :func:`read_kernel` does.
    tz, reference_date, host, host_from_filename, boot_time
        As for :func:`read_kernel`.

    Returns
    -------
    list of KernelLog or IngestError
        One per path, in order.

    Raises
    ------
    IngestError
        If ``tz``, ``reference_date`` or ``boot_time`` is invalid (for all
        files).
    """
    files = [Path(p) for p in paths]
    anchor = files[0] if files else Path()
    check_tz(anchor, tz)
    ref = parse_reference_date(anchor, reference_date)
    boot = parse_boot_time(anchor, boot_time)
    out: list[KernelLog | IngestError | None] = [None] * len(files)
    good = []
    for i, f in enumerate(files):
        try:
            check_file(f)
        except IngestError as exc:
            out[i] = exc
        else:
            good.append(i)
    logs = _parse_many(
        [files[i] for i in good],
        [_size_or_zero(files[i]) for i in good],
        tz=tz,
        ref=ref,
        hosts=[file_host(files[i]) if host_from_filename else host for i in good],
        boot=boot,
    )
    for i, log in zip(good, logs, strict=True):
        out[i] = log
    return [x for x in out if x is not None]


def _read_one(
    store: Store,
    path: Path,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    replace: bool,
    as_of: str | dt.datetime | None = None,
    boot: dt.datetime | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> IngestResult:
    """Check, hash, skip or refuse, parse and write one kernel-log file."""
    reading = options_dict(tz, ref, host, boot)

    def parse(p: Path, keep_going: Callable[[], bool]) -> Parsed | None:
        log = _parse_log(
            p,
            tz=tz,
            ref=ref,
            host=host,
            boot=boot,
            keep_going=keep_going,
            on_progress=on_progress,
        )
        return None if log is None else _as_parsed(log, reading)

    return ingest(
        store,
        path,
        kind=KIND,
        options=reading,
        parse=parse,
        replace=replace,
        overlap_hash=True,
        as_of=as_of,
    )
