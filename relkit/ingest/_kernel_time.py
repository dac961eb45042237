"""Line times of kernel/syslog logs: wall clocks, boot anchors, reboots.

A line's wall time comes from its framing (ISO with or without offset, ``dmesg
-T``, RFC 3164 without year, epoch seconds). A kernel clock (seconds since boot)
becomes a wall time only through a boot time found in the same log: a line that
carries both (``Mar  4 10:21:40 host-a kernel: [ 9912.004711] ...``) gives
``boot = wall - mono`` for its boot. A kernel clock that falls back starts a new
boot, and anchors never cross boots.
"""

import datetime as dt
import re
import warnings
from pathlib import Path
from typing import Any

import polars as pl

from relkit.errors import IngestError, RelkitWarning
from relkit.ingest._common import localize, parse_iso
from relkit.schema import UTC

_MONTHS = {
    m: i
    for i, m in enumerate(
        [
            "Jan",
            "Feb",
            "Mar",
            "Apr",
            "May",
            "Jun",
            "Jul",
            "Aug",
            "Sep",
            "Oct",
            "Nov",
            "Dec",
        ],
        start=1,
    )
}
_EPOCH_FRAMINGS = ("bgl", "tbird", "hpc")


def parse_reference_date(
    path: str | Path, reference_date: str | dt.date | None
) -> dt.date | None:
    """Return ``reference_date`` as a date (``YYYY-MM-DD`` text accepted)."""
    if reference_date is None or isinstance(reference_date, dt.date):
        return reference_date
    try:
        return dt.date.fromisoformat(str(reference_date).strip())
    except ValueError as exc:
        msg = (
            f"reference date {reference_date!r} is not a date; expected "
            "--reference-date YYYY-MM-DD (the date the log was collected)."
        )
        raise IngestError(path, msg) from exc


def parse_boot_time(
    path: str | Path, boot_time: str | dt.datetime | None, *, where: str = "--boot-time"
) -> dt.datetime | None:
    """Return ``boot_time`` as an aware UTC datetime (ISO 8601 with a zone).

    Also reads ``btime <epoch seconds>`` (the ``/proc/stat`` line) and bare
    epoch seconds. Raises IngestError, naming ``where``, for anything else or a
    time without a zone.
    """
    if boot_time is None or isinstance(boot_time, dt.datetime):
        value = boot_time
    else:
        text = str(boot_time).strip()
        epoch = re.fullmatch(r"(?:btime\s+)?(\d{1,12})", text)
        try:
            value = (
                dt.datetime.fromtimestamp(int(epoch.group(1)), dt.UTC)
                if epoch
                else dt.datetime.fromisoformat(text)
            )
        except ValueError as exc:
            msg = (
                f"{where} {text!r} is no time; expected ISO 8601 with a zone "
                "(e.g. 2025-02-23T03:20:00Z, or `uptime -s` output with its zone "
                "added) or a /proc/stat line 'btime 1740280800'."
            )
            raise IngestError(path, msg) from exc
    if value is None:
        return None
    if value.tzinfo is None:
        msg = (
            f"{where} {value.isoformat()} has no time zone; relkit does not guess "
            "one. Add the zone the host's clock was set to, e.g. "
            f"{value.isoformat()}Z if it was UTC, or give the /proc/stat "
            "'btime <epoch>' line."
        )
        raise IngestError(path, msg)
    return value.astimezone(dt.UTC)


#: The boot-time record beside a log: ``<host>.btime`` (the log's name without
#: its suffixes, as :func:`relkit.ingest._kernel_read.file_host`), holding the
#: ``btime <epoch>`` line of ``/proc/stat`` or an ISO 8601 time with a zone.
BTIME_SUFFIX = ".btime"


def boot_time_record(path: Path, stem: str) -> tuple[dt.datetime, Path] | None:
    """Boot time from ``<stem>.btime`` in the log's directory, if the file exists.

    Only the first non-blank line that is not a comment counts; a
    ``/proc/stat`` copy may hold other lines, so its ``btime`` line is used.
    """
    record = path.parent / f"{stem}{BTIME_SUFFIX}"
    if not record.is_file():
        return None
    lines = [
        ln.strip()
        for ln in record.read_text(encoding="utf-8", errors="replace").splitlines()
        if ln.strip() and not ln.lstrip().startswith("#")
    ]
    btime = [ln for ln in lines if ln.startswith("btime")]
    text = (btime or lines or [""])[0]
    value = parse_boot_time(record, text, where=f"boot time record {record.name}")
    return None if value is None else (value, record)


#: The zone of a local-time stamp is not in the log and relkit does not guess it.
_ZONE_UNKNOWN = (
    "the zone is unknown (the log does not say it, and relkit does not guess). "
    "Pass the zone the host's clock was set to (`timedatectl` on that host "
    "shows it): tz='ZONE' (--tz ZONE, an IANA name such as UTC or "
    "America/Denver)."
)


def _need(path: str | Path, frame: pl.DataFrame, mask: pl.Series, what: str) -> None:
    """Raise IngestError at the first line of ``mask`` (a setting is missing)."""
    first = frame.filter(mask).row(0, named=True)
    msg = f"the line's time {first['wall']!r} ({first['framing']} framing) {what}"
    raise IngestError(path, msg, line_no=int(first["line_no"]))


def wall_times(
    frame: pl.DataFrame,
    *,
    tz: str | None,
    reference_date: dt.date | None,
    path: str | Path = "<lines>",
) -> pl.DataFrame:
    """Parse the ``wall`` text of classified lines into UTC instants.

    Returns a frame (same rows) with ``wall_ts`` (UTC or null), ``bad_time``
    (non-empty wall text that is no valid instant, e.g. Feb 29 of a common year)
    and ``dst_flag``. Raises IngestError at the first line that needs ``tz`` or
    ``reference_date`` when it is missing.
    """
    fr = frame.get_column("framing")
    wall = frame.get_column("wall")
    n = frame.height
    ts = pl.Series("wall_ts", [None] * n, dtype=UTC)
    dst = pl.Series("dst_flag", [None] * n, dtype=pl.String)
    has = wall.is_not_null()
    # ISO / RFC 3339 (offset or zone-less)
    iso = (fr == "iso") & has
    if iso.any():
        sub = pl.DataFrame(
            {"w": wall.zip_with(iso, pl.Series([None] * n, dtype=pl.String))}
        )
        utc, _bad, zoneless, flag = parse_iso(sub, "w", tz)
        if tz is None and (zoneless & iso).any():
            _need(
                path,
                frame,
                zoneless & iso,
                f"has no UTC offset and {_ZONE_UNKNOWN}",
            )
        ts = ts.zip_with(~iso, utc)
        dst = dst.zip_with(~iso, flag)
    naive_local = pl.Series("n", [None] * n, dtype=pl.Datetime("us"))
    dmt = (fr == "dmesg_T") & has
    if dmt.any():
        if tz is None:
            _need(
                path,
                frame,
                dmt,
                f"is local time without a zone (dmesg -T); {_ZONE_UNKNOWN}",
            )
        parsed = wall.str.replace_all(r"\s+", " ").str.to_datetime(
            "%b %d %H:%M:%S %Y", time_unit="us", strict=False
        )
        naive_local = naive_local.zip_with(~dmt, parsed)
    rfc = (fr == "rfc3164") & has
    if rfc.any():
        if reference_date is None and tz is None:
            _need(
                path,
                frame,
                rfc,
                "has neither a year nor a zone (RFC 3164 syslog). Pass the date "
                "the log was collected, reference_date='YYYY-MM-DD' "
                f"(--reference-date YYYY-MM-DD), and: {_ZONE_UNKNOWN}",
            )
        if reference_date is None:
            _need(
                path,
                frame,
                rfc,
                "has no year (RFC 3164 syslog); pass the date the log was "
                "collected, reference_date='YYYY-MM-DD' (--reference-date "
                "YYYY-MM-DD).",
            )
        if tz is None:
            _need(
                path,
                frame,
                rfc,
                f"is local time without a zone (RFC 3164 syslog); {_ZONE_UNKNOWN}",
            )
        assert reference_date is not None
        naive_local = naive_local.zip_with(~rfc, _rfc3164(wall, reference_date))
    local = dmt | rfc
    if local.any():
        assert tz is not None
        out = pl.DataFrame({"n": naive_local}).select(*localize(pl.col("n"), tz))
        ts = ts.zip_with(~local, out.to_series(0).cast(UTC))
        dst = dst.zip_with(~local, out.to_series(1))
    epoch = fr.is_in(_EPOCH_FRAMINGS) & has
    if epoch.any():
        secs = wall.cast(pl.Int64, strict=False)
        from_epoch = (
            (secs * 1_000_000).cast(pl.Datetime("us")).dt.replace_time_zone("UTC")
        )
        ts = ts.zip_with(~epoch, from_epoch)
    bad = has & ts.is_null() & ~(fr.is_in(["dmesg", "kmsg", "bare"]))
    if rfc.any():
        _check_reference_year(frame, ts, rfc, dated=(iso | dmt | epoch), path=path)
    return pl.DataFrame({"wall_ts": ts, "bad_time": bad, "dst_flag": dst})


#: Year-less stamps this far outside the dated lines of their file are suspect.
_YEAR_SLIP = dt.timedelta(days=183)


def _check_reference_year(
    frame: pl.DataFrame,
    ts: pl.Series,
    rfc: pl.Series,
    *,
    dated: pl.Series,
    path: str | Path,
) -> None:
    """Warn when year-less stamps land far from the same lines' dated stamps.

    A year-less syslog stamp takes its year from ``reference_date``; when the
    same file also holds stamps with a year (ISO, ``dmesg -T``, epoch) and the
    year-less ones fall more than half a year outside their range, the
    reference date is most likely wrong, and every MTBF over those lines with it.
    """
    known = ts.filter(dated & ts.is_not_null())
    placed = pl.DataFrame({"ts": ts, "line_no": frame.get_column("line_no")}).filter(
        rfc & ts.is_not_null()
    )
    if known.is_empty() or placed.is_empty():
        return
    lo, hi = known.min(), known.max()
    far = placed.filter(
        (pl.col("ts") < lo - _YEAR_SLIP) | (pl.col("ts") > hi + _YEAR_SLIP)
    )
    if far.is_empty():
        return
    first = far.row(0, named=True)
    msg = (
        f"{path}: {far.height:,} year-less syslog line(s) (first: line "
        f"{first['line_no']}, placed on {first['ts']:%Y-%m-%d} by the reference "
        f"date) fall more than half a year outside the file's dated lines "
        f"({lo:%Y-%m-%d} to {hi:%Y-%m-%d}); check reference_date "
        "(--reference-date), the day the log was collected"
    )
    warnings.warn(msg, RelkitWarning, stacklevel=2)


def _rfc3164(wall: pl.Series, ref: dt.date) -> pl.Series:
    """Year-less ``Mon dd hh:mm:ss`` to naive datetimes, the year from ``ref``.

    A line dated more than one day after ``ref`` belongs to the year before.
    """
    limit = ref + dt.timedelta(days=1)
    parts = wall.str.extract_groups(
        r"^(?P<mon>[A-Z][a-z]{2}) +(?P<day>\d{1,2}) "
        r"(?P<hms>\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)$"
    ).struct.unnest()
    mon = parts["mon"].replace_strict(_MONTHS, default=None, return_dtype=pl.Int64)
    day = parts["day"].cast(pl.Int64, strict=False)
    key = mon * 100 + day
    if limit.year > ref.year:
        year = pl.Series([ref.year] * len(wall), dtype=pl.Int64)
    else:
        lim = limit.month * 100 + limit.day
        year = (key > lim).cast(pl.Int64) * -1 + ref.year
    text = pl.DataFrame({"y": year, "m": mon, "d": day, "h": parts["hms"]}).select(
        pl.format(
            "{}-{}-{} {}",
            pl.col("y"),
            pl.col("m").cast(pl.String).str.zfill(2),
            pl.col("d").cast(pl.String).str.zfill(2),
            pl.col("h"),
        )
    )
    return text.to_series().str.to_datetime(
        "%Y-%m-%d %H:%M:%S%.f", time_unit="us", strict=False
    )


#: Runs of one host per batch up to which :meth:`BootTracker.number` walks the
#: runs in Python; interleaved hosts take the group-by.
_RUNS_IN_PYTHON = 256


class BootTracker:
    """Split kernel clocks into boots and collect one boot time per boot.

    Carries its state across batches of one file: the last kernel clock and
    boot number per host, and the first anchor (``boot = wall - mono``) of each
    (host, boot).
    """

    def __init__(self) -> None:
        self.last: dict[str, tuple[float, int]] = {}
        self.anchors: dict[tuple[str, int], int] = {}  # (host, boot) -> boot epoch us

    def segment(self, frame: pl.DataFrame) -> pl.DataFrame:
        """Return ``line_no, boot_no`` for the lines with a kernel clock.

        ``frame`` needs ``line_no``, ``host``, ``mono_s`` and ``wall_ts``.
        """
        m = frame.filter(pl.col("mono_s").is_not_null()).select(
            "line_no",
            hkey=pl.col("host").fill_null(""),
            mono=pl.col("mono_s"),
            wall_ts=pl.col("wall_ts"),
        )
        if m.is_empty():
            return pl.DataFrame(schema={"line_no": pl.Int64, "boot_no": pl.Int64})
        m = self.number(m)
        self.add_anchors(m.filter(pl.col("wall_ts").is_not_null()))
        return m.select("line_no", "boot_no")

    def number(self, m: pl.DataFrame) -> pl.DataFrame:
        """Add ``boot_no`` to clock lines (``line_no, hkey, mono``), sorted.

        A host's boot number grows by one at each line whose kernel clock is
        below its previous clock line's (of that host). Carries the last
        clock and boot of each host to the next batch. A batch of one host
        (a per-host file, a dmesg dump) is numbered without a group-by.
        """
        if m.is_empty():
            return m.with_columns(boot_no=pl.lit(None, dtype=pl.Int64))
        m = m.sort("line_no")
        keys = m.get_column("hkey")
        first = keys[0]
        if (keys == first).all():
            mono0, seg0 = self.last.get(first, (None, 0))
            prev = pl.col("mono").shift(1, fill_value=mono0)
            fell = (pl.col("mono") < prev).fill_null(False).cast(pl.Int64)
            m = m.with_columns(boot_no=seg0 + fell.cum_sum())
            self.last[first] = (m.get_column("mono")[-1], m.get_column("boot_no")[-1])
            return m
        runs = m.select(
            start=(pl.col("hkey") != pl.col("hkey").shift(1)).fill_null(True)
        )
        n_runs = int(runs.get_column("start").sum())
        if n_runs <= _RUNS_IN_PYTHON:
            return self._number_runs(m, runs.get_column("start"))
        hk = pl.col("hkey")
        c_mono = hk.replace_strict(
            {k: v[0] for k, v in self.last.items()},
            default=None,
            return_dtype=pl.Float64,
        )
        c_seg = hk.replace_strict(
            {k: v[1] for k, v in self.last.items()}, default=0, return_dtype=pl.Int64
        )
        prev = pl.coalesce(pl.col("mono").shift(1).over("hkey"), c_mono)
        fell = (pl.col("mono") < prev).fill_null(False).cast(pl.Int64)
        m = m.with_columns(boot_no=c_seg + fell.cum_sum().over("hkey"))
        last = m.group_by("hkey").agg(pl.col("mono").last(), pl.col("boot_no").last())
        for hkey, mono, seg in last.iter_rows():
            self.last[hkey] = (mono, seg)
        return m

    def _number_runs(self, m: pl.DataFrame, start: pl.Series) -> pl.DataFrame:
        """:meth:`number` for a batch whose hosts come in a few runs of lines.

        Within a run (consecutive lines of one host) a boot starts where the
        clock falls below the line before; at a run's first line, where it
        falls below the host's last clock before the run. Same answer as the
        group-by, with Python work per run instead of per host and line.
        """
        mono = pl.col("mono")
        fell = (mono < mono.shift(1)).fill_null(False) & ~pl.lit(start)
        f = m.with_columns(
            _run=pl.lit(start).cast(pl.Int64).cum_sum() - 1,
            _fell=fell.cast(pl.Int64).cum_sum(),
        )
        firsts = f.filter(pl.lit(start)).select("hkey", "mono", "_fell").rows()
        lasts = (
            f.group_by("_run", maintain_order=True)
            .agg(pl.col("mono").last(), pl.col("_fell").last())
            .select("mono", "_fell")
            .rows()
        )
        seg_at_start = []
        for (hkey, first_mono, fell0), (last_mono, last_fell) in zip(
            firsts, lasts, strict=True
        ):
            prev_mono, seg = self.last.get(hkey, (None, 0))
            if prev_mono is not None and first_mono < prev_mono:
                seg += 1
            seg_at_start.append(seg - fell0)  # boot_no = this + running _fell
            self.last[hkey] = (last_mono, seg + last_fell - fell0)
        base = pl.Series(seg_at_start, dtype=pl.Int64)
        return f.with_columns(
            boot_no=pl.lit(base).gather(pl.col("_run")) + pl.col("_fell")
        ).drop("_run", "_fell")

    def anchor_last_boots(
        self, boot_time: dt.datetime, hkeys: list[str] | None = None
    ) -> int:
        """Anchor each host's last boot at ``boot_time`` unless the log anchors it.

        ``dmesg``, ``uptime -s`` and ``/proc/stat`` describe the boot that was
        running when they were saved: the last boot of the log. Earlier boots
        (the kernel clock fell back) keep their own anchors or none. ``hkeys``:
        only these hosts (one file's, when several files share the tracker).
        Returns the number of boots anchored here.
        """
        since = boot_time - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
        boot_us = since // dt.timedelta(microseconds=1)
        n = 0
        for hkey, (_, boot_no) in self.last.items():
            if hkeys is not None and hkey not in hkeys:
                continue
            if (hkey, boot_no) not in self.anchors:
                self.anchors[(hkey, boot_no)] = boot_us
                n += 1
        return n

    def add_anchors(self, m: pl.DataFrame) -> None:
        """Keep the first anchor of each new (host, boot).

        ``m``: lines with both clocks (``hkey, boot_no, mono, wall_ts``), sorted.
        """
        anchors = (
            m.group_by("hkey", "boot_no")
            .agg(pl.col("wall_ts").first(), pl.col("mono").first())
            .with_columns(
                boot_us=pl.col("wall_ts").dt.epoch("us")
                - (pl.col("mono") * 1e6).round().cast(pl.Int64, strict=False)
            )
        )
        for hkey, seg, boot in anchors.select("hkey", "boot_no", "boot_us").iter_rows():
            self.anchors.setdefault((hkey, seg), boot)

    def resolve(self, kept: pl.DataFrame) -> pl.DataFrame:
        """Add ``ts`` and the ``no_wall_time``/``reboot`` flags to kept lines.

        ``kept`` needs ``line_no, host, mono_s, wall_ts, boot_no, outcome,
        flags``.
        """
        anchors = pl.DataFrame(
            {
                "hkey": [k[0] for k in self.anchors],
                "boot_no": [k[1] for k in self.anchors],
                "boot_us": list(self.anchors.values()),
            },
            schema={"hkey": pl.String, "boot_no": pl.Int64, "boot_us": pl.Int64},
        )
        out = kept.with_columns(hkey=pl.col("host").fill_null("")).join(
            anchors, on=["hkey", "boot_no"], how="left", maintain_order="left"
        )
        from_boot = (
            (
                pl.col("boot_us")
                + (pl.col("mono_s") * 1e6).round().cast(pl.Int64, strict=False)
            )
            .cast(pl.Datetime("us"))
            .dt.replace_time_zone("UTC")
        )
        is_event = pl.col("outcome") == "event"
        first_event = pl.col("line_no") == pl.col("line_no").filter(
            is_event
        ).min().over("hkey", "boot_no")
        out = out.with_columns(ts=pl.coalesce(pl.col("wall_ts"), from_boot))
        out = out.with_columns(
            flags=add_flag(
                add_flag(pl.col("flags"), pl.col("ts").is_null(), "no_wall_time"),
                is_event & (pl.col("boot_no") > 0) & first_event,
                "reboot",
            )
        )
        return out.drop("hkey", "boot_us")


def add_flag(flags: pl.Expr, cond: pl.Expr, name: str | pl.Expr) -> pl.Expr:
    """Append a flag to a comma-separated flags column where ``cond`` holds."""
    new = pl.when(cond.fill_null(False)).then(
        name if isinstance(name, pl.Expr) else pl.lit(name)
    )
    joined = pl.concat_str([flags, new], separator=",", ignore_nulls=True)
    return pl.when(joined == "").then(None).otherwise(joined)


def resolve_times(
    frame: pl.DataFrame,
    *,
    tz: str | None = None,
    reference_date: str | dt.date | None = None,
    path: str | Path = "<lines>",
) -> pl.DataFrame:
    """Give classified lines a UTC time, never guessing one.

    Parameters
    ----------
    frame : pl.DataFrame
        Output of :func:`relkit.ingest.kernel.classify_lines` for a whole log
        (columns ``line_no, outcome, reason, framing, mono_s, wall, host,
        flags``), in file order.
    tz : str, optional
        IANA zone of zone-less stamps (``dmesg -T``, RFC 3164, ISO without
        offset). Required when such a line occurs.
    reference_date : str or datetime.date, optional
        The date the log was collected (``YYYY-MM-DD``); gives RFC 3164 lines
        their year. Required when such a line occurs.
    path : str or Path, default "<lines>"
        Name used in error messages.

    Returns
    -------
    pl.DataFrame
        ``frame`` plus ``ts`` (UTC, null when the line has no wall time) and
        ``boot_no`` (0, 1, ... per host; null without kernel clock). ``flags``
        gains ``no_wall_time`` (an event without resolvable wall time),
        ``reboot`` (the first event after the kernel clock fell back) and
        ``dst_ambiguous``/``dst_nonexistent``. Lines whose wall text is no valid
        date (Feb 29 of a common year) become ``rejected``.

    Raises
    ------
    IngestError
        At the first line that needs ``tz`` or ``reference_date`` when it is
        missing (the message names the fix, ``--tz ZONE`` or
        ``--reference-date YYYY-MM-DD``).

    Notes
    -----
    A kernel clock (seconds since boot) is turned into a wall time only with a
    boot time from the same log and boot: a line carrying both gives
    :math:`t_{boot} = t_{wall} - t_{mono}`. A clock smaller than the previous
    one of the same host starts a new boot; anchors do not cross boots. RFC 3164
    lines dated more than one day after ``reference_date`` belong to the year
    before, so Dec 31 -> Jan 1 works and Feb 29 is valid in leap years only.

    Examples
    --------
    >>> import polars as pl
    >>> from relkit.ingest.kernel import classify_lines
    >>> lines = pl.Series(
    ...     [
    ...         "Mar  4 10:21:40 host-a kernel: [ 100.000000] NVRM: loading x",
    ...         "[  160.500000] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off",
    ...     ]
    ... )
    >>> c = classify_lines(lines).with_columns(host=pl.lit("host-a"))
    >>> out = resolve_times(c, tz="UTC", reference_date="2025-03-05")
    >>> out["ts"][1].isoformat()
    '2025-03-04T10:22:40.500000+00:00'
    >>> resolve_times(c, tz="UTC")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    relkit.errors.IngestError: <lines>:1: ...--reference-date YYYY-MM-DD).
    """
    ref = parse_reference_date(path, reference_date)
    walls = wall_times(frame, tz=tz, reference_date=ref, path=path)
    out = mark_bad_times(frame.with_columns(walls))
    tracker = BootTracker()
    segs = tracker.segment(out)
    out = out.join(segs, on="line_no", how="left", maintain_order="left")
    out = tracker.resolve(out)
    out = out.with_columns(
        flags=add_flag(
            pl.col("flags"), pl.col("dst_flag").is_not_null(), pl.col("dst_flag")
        )
    )
    return out.drop("wall_ts", "bad_time", "dst_flag")


#: Wall times outside [1970, 2200) are a broken clock, not a failure's time.
_EARLIEST = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_LATEST = dt.datetime(2200, 1, 1, tzinfo=dt.UTC)


def mark_bad_times(frame: pl.DataFrame) -> pl.DataFrame:
    """Turn lines whose wall text is no valid instant into ``rejected``."""
    wall_ts = pl.col("wall_ts")
    out_of_range = wall_ts.is_not_null() & (
        (wall_ts < _EARLIEST) | (wall_ts >= _LATEST)
    )
    bad = pl.col("bad_time") | out_of_range
    reason = (
        pl.when(out_of_range)
        .then(
            pl.format(
                "time {} is outside 1970-2199 (an unset or broken clock); fix the "
                "clock's lines or drop them",
                pl.col("wall"),
            )
        )
        .otherwise(
            pl.format(
                "time {} is not a valid date (Feb 29 outside a leap year, or day out "
                "of range); the line was not read",
                pl.col("wall"),
            )
        )
    )
    return frame.with_columns(
        outcome=pl.when(bad).then(pl.lit("rejected")).otherwise(pl.col("outcome")),
        reason=pl.when(bad).then(reason).otherwise(pl.col("reason")),
    )


def options_dict(
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    boot_time: dt.datetime | None = None,
) -> dict[str, Any]:
    """Options recorded with a kernel source (``boot_time`` only when given)."""
    out: dict[str, Any] = {
        "tz": tz,
        "reference_date": None if ref is None else ref.isoformat(),
        "host": host,
    }
    if boot_time is not None:
        out["boot_time"] = boot_time.isoformat()
    return out
