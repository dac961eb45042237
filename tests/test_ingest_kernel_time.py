"""Issue 10 §3 and §5 (kernel part): time and host on lines that lack them, and
compressed or binary inputs.

Lines are written for these tests in the public shapes: RFC 3164 syslog as
rsyslog writes it when the host field is dropped (``Feb 23 03:28:16 kernel:
...``), ``dmesg -r`` (``<prio>[seconds.micros] msg``, util-linux dmesg(1)),
plain ``dmesg``; boot times as ``/proc/stat`` prints them (``btime <epoch>``,
proc(5)) and ``uptime -s`` (local ``YYYY-MM-DD HH:MM:SS``, no zone).
"""

import bz2
import datetime as dt
import gzip
import lzma
from pathlib import Path

import polars as pl
import pytest
import zstandard

from relkit.cli import main
from relkit.errors import IngestError
from relkit.ingest import read_file
from relkit.ingest.kernel import read_kernel
from relkit.store import Store

UTC = dt.UTC
XID79 = "NVRM: Xid (PCI:0000:3b:00): 79, pid=21877, GPU has fallen off the bus."


def _events(path: Path, **kw: object) -> pl.DataFrame:
    with Store(":memory:") as store:
        read_kernel(store, path, **kw)  # type: ignore[arg-type]
        return store.table("events")


# -- syslog without host -----------------------------------------------------------
def test_ref_rfc3164_without_host_keeps_wall_time(tmp_path: Path) -> None:
    """Issue 10 §3: "Feb 23 03:28:16 kernel: ..." has no host field; with --host,
    --tz UTC and --reference-date 2025-02-24 its time is 2025-02-23T03:28:16Z
    (the stamp read as UTC in the reference year), not dropped."""
    f = tmp_path / "kern.log"
    f.write_text(f"Feb 23 03:28:16 kernel: {XID79}\n")
    ev = _events(f, host="gpu-1", tz="UTC", reference_date="2025-02-24")
    assert ev.select("host", "ts").row(0) == (
        "gpu-1",
        dt.datetime(2025, 2, 23, 3, 28, 16, tzinfo=UTC),
    )
    assert ev["flags"].to_list() == [None]


def test_ref_rfc3164_without_host_kernel_clock_anchors(tmp_path: Path) -> None:
    """The same framing with a kernel clock anchors its boot: a later plain
    dmesg line at [ 160.5] of that boot is 03:28:16 - 100 s + 160.5 s =
    03:29:16.5 (hand arithmetic)."""
    f = tmp_path / "kern.log"
    f.write_text(
        "Feb 23 03:28:16 kernel: [  100.000000] NVRM: loading NVIDIA UNIX driver\n"
        f"[  160.500000] {XID79}\n"
    )
    ev = _events(f, host="gpu-1", tz="UTC", reference_date="2025-02-24")
    assert ev["ts"].to_list() == [
        dt.datetime(2025, 2, 23, 3, 29, 16, 500000, tzinfo=UTC)
    ]


@pytest.mark.parametrize(
    ("kw", "says"),
    [
        ({}, "neither a year nor a zone"),
        ({"tz": "UTC"}, "has no year"),
        ({"reference_date": "2025-02-24"}, "the zone is unknown"),
    ],
)
def test_ref_rfc3164_without_host_says_what_is_missing(
    tmp_path: Path, kw: dict[str, str], says: str
) -> None:
    """Without --reference-date and/or --tz the error names what is missing
    (year, zone or both), the line (1) and the option to pass."""
    f = tmp_path / "kern.log"
    f.write_text(f"Feb 23 03:28:16 kernel: {XID79}\n")
    with pytest.raises(IngestError, match=says) as err:
        _events(f, host="gpu-1", **kw)
    assert err.value.line_no == 1
    text = str(err.value)
    if "year" in says:
        assert "--reference-date YYYY-MM-DD" in text
    if "zone" in says:
        assert "--tz ZONE" in text


def test_ref_dmesg_T_zone_is_never_named_as_detected(tmp_path: Path) -> None:
    """Issue 10 §3: dmesg -T prints local time with no zone; the error says the
    zone is unknown and asks for --tz, and names no example zone such as
    Europe/Berlin as if it had been found."""
    f = tmp_path / "dmesg-T.log"
    f.write_text(f"[Sun Feb 23 03:28:16 2025] {XID79}\n")
    with pytest.raises(IngestError) as err:
        _events(f, host="gpu-1")
    text = str(err.value)
    assert "the zone is unknown" in text
    assert "--tz ZONE" in text
    assert "Europe/Berlin" not in text
    assert "detected" not in text


# -- dmesg -r ----------------------------------------------------------------------
def test_ref_dmesg_r_priority_prefix_keeps_kernel_clock(tmp_path: Path) -> None:
    """Issue 10 §3: "<4>[1084456.074562] ..." (dmesg -r) keeps its kernel clock
    1084456.074562 s; with --boot-time 2025-01-01T00:00Z it is 2025-01-01 +
    1084456.074562 s = 2025-01-13T13:14:16.074562Z (hand arithmetic: 12 days
    1036800 s, 47656 s = 13:14:16)."""
    f = tmp_path / "dmesg-r.log"
    f.write_text(
        f"<6>[    0.000000] Linux version 6.8.0\n<4>[1084456.074562] {XID79}\n"
    )
    ev = _events(f, host="gpu-1")
    assert ev.select("mono_s", "ts", "flags").row(0) == (
        1084456.074562,
        None,
        "no_wall_time",
    )
    ev = _events(f, host="gpu-1", boot_time="2025-01-01T00:00:00Z")
    assert ev["ts"].to_list() == [
        dt.datetime(2025, 1, 13, 13, 14, 16, 74562, tzinfo=UTC)
    ]


# -- boot time ---------------------------------------------------------------------
DMESG = f"""\
[    0.000000] Linux version 6.8.0-45-generic (buildd@host) #45 SMP
[ 1843.308145] {XID79}
"""


def test_ref_boot_time_resolves_plain_dmesg(tmp_path: Path) -> None:
    """Issue 10 §3: --boot-time 2025-02-23T04:20:00+01:00 (= 03:20:00Z) puts the
    Xid at kernel clock 1843.308145 s at 03:20:00 + 30 min 43.308145 s =
    03:50:43.308145Z (hand arithmetic); the option is recorded with the source."""
    f = tmp_path / "node7.log"
    f.write_text(DMESG)
    with Store(":memory:") as store:
        read_kernel(store, f, host="node7", boot_time="2025-02-23T04:20:00+01:00")
        ev = store.table("events")
        options = store.table("sources")["options"].item()
    assert ev["ts"].to_list() == [
        dt.datetime(2025, 2, 23, 3, 50, 43, 308145, tzinfo=UTC)
    ]
    assert '"boot_time": "2025-02-23T03:20:00+00:00"' in options


def test_ref_btime_record_beside_the_log(tmp_path: Path) -> None:
    """Issue 10 §3: node7.btime beside node7.log holding /proc/stat lines
    (btime 1740280800 = 2025-02-23T03:20:00Z, by date -u -d @1740280800) gives
    the same time; the ingest note names the record; in a directory the
    .btime file is not read as a log."""
    d = tmp_path / "logs"
    d.mkdir()
    (d / "node7.log").write_text(DMESG)
    (d / "node7.btime").write_text("cpu  10 0 20 300\nbtime 1740280800\n")
    with Store(":memory:") as store:
        results = read_kernel(store, d, host_from_filename=True)
        ev = store.table("events")
    assert [Path(r.path).name for r in results] == ["node7.log"]
    assert "from node7.btime" in (results[0].note or "")
    assert ev["ts"].to_list() == [
        dt.datetime(2025, 2, 23, 3, 50, 43, 308145, tzinfo=UTC)
    ]


def test_ref_boot_time_without_zone_is_refused(tmp_path: Path) -> None:
    """`uptime -s` prints local time without a zone: relkit refuses to guess."""
    f = tmp_path / "node7.log"
    f.write_text(DMESG)
    with pytest.raises(IngestError, match="has no time zone"):
        _events(f, host="node7", boot_time="2025-02-23 04:20:00")
    with pytest.raises(IngestError, match="is no time"):
        _events(f, host="node7", boot_time="yesterday")


def test_ref_log_anchor_wins_over_boot_time(tmp_path: Path) -> None:
    """A boot anchored by the log itself (a line with wall stamp and kernel clock:
    boot = 10:00:00 - 100 s) keeps that anchor; --boot-time only fills boots the
    log does not anchor. Xid at [ 160.5] -> 10:01:00.5Z (hand arithmetic)."""
    f = tmp_path / "node7.log"
    f.write_text(
        "2025-03-04T10:00:00+00:00 node7 kernel: [  100.000000] NVRM: loading x\n"
        f"[  160.500000] {XID79}\n"
    )
    ev = _events(f, host="node7", boot_time="2025-03-04T00:00:00Z")
    assert ev["ts"].to_list() == [dt.datetime(2025, 3, 4, 10, 1, 0, 500000, tzinfo=UTC)]


def test_ref_no_wall_time_note_at_ingest(tmp_path: Path) -> None:
    """Without a boot time, the ingest note says 1 of 1 event lacks wall time and
    names --boot-time and the HOST.btime record (the fix)."""
    f = tmp_path / "node7.log"
    f.write_text(DMESG)
    with Store(":memory:") as store:
        [r] = read_kernel(store, f, host="node7")
    assert "1 of 1 event(s) have no wall time" in (r.note or "")
    assert "--boot-time" in (r.note or "")
    assert "HOST.btime" in (r.note or "")


def _relkit(
    capsys: pytest.CaptureFixture[str], db: Path, verb: str, *args: str
) -> tuple[int, str]:
    code = main([verb, "--db", str(db), *args])
    return code, capsys.readouterr().err


def test_ref_commands_say_events_lack_wall_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 10 §3: with one host's events all lacking wall time, incidents, mtbf
    and report exit 1 naming --boot-time; with a second host that has wall
    times, incidents and mtbf warn on stderr that 1 of 3 events lacks one
    (hand count: node7's 1 Xid; node8's 2 Xid lines have times)."""
    db = tmp_path / "s.duckdb"
    (tmp_path / "node7.log").write_text(DMESG)
    log7 = str(tmp_path / "node7.log")
    code, err = _relkit(
        capsys, db, "ingest", "--kind", "kernel", "--host", "node7", log7
    )
    assert code == 0, err
    assert "--boot-time" in err
    for verb in (["incidents"], ["mtbf"], ["report", "--out", str(tmp_path / "r")]):
        code, err = _relkit(capsys, db, *verb)
        assert code == 1, (verb, err)
        assert "--boot-time" in err, verb
        assert "Traceback" not in err
    (tmp_path / "node8.log").write_text(
        f"2025-02-23T03:00:00Z node8 kernel: {XID79}\n"
        "2025-02-23T09:00:00Z node8 kernel: usb 1-1: new high-speed USB device\n"
        f"2025-02-24T09:00:00Z node8 kernel: {XID79}\n"
        "2025-02-26T09:00:00Z node8 kernel: usb 1-1: new high-speed USB device\n"
    )
    log8 = str(tmp_path / "node8.log")
    assert _relkit(capsys, db, "ingest", "--kind", "kernel", log8)[0] == 0
    for verb in ("incidents", "mtbf"):
        code, err = _relkit(capsys, db, verb)
        assert code == 0, (verb, err)
        assert "1 of 3 event(s) have no wall time" in err, verb
        assert "--boot-time" in err, verb


# -- compressed and binary files ---------------------------------------------------
LOG = (
    f"2025-03-04T10:22:05+00:00 node1 kernel: {XID79}\n"
    "2025-03-04T10:22:06+00:00 node1 CRON[5]: (root) CMD (true)\n"
)


@pytest.mark.parametrize(
    ("suffix", "pack"),
    [
        (".gz", gzip.compress),
        (".xz", lzma.compress),
        (".bz2", bz2.compress),
        (".zst", lambda b: zstandard.ZstdCompressor().compress(b)),
    ],
)
def test_ref_compressed_logs_read_like_gzip(
    tmp_path: Path, suffix: str, pack: object
) -> None:
    """Issue 10 §5: the same 2-line log compressed four ways gives 2 lines, 1
    event, 1 ignored (hand count); the host comes from node1.log<suffix>."""
    f = tmp_path / f"node1.log{suffix}"
    f.write_bytes(pack(LOG.encode()))  # type: ignore[operator]
    with Store(":memory:") as store:
        [r] = read_kernel(store, f, host_from_filename=True)
        ev = store.table("events")
    assert (r.n_lines, r.n_loaded, r.n_ignored, r.n_rejected) == (2, 1, 1, 0)
    assert ev["host"].to_list() == ["node1"]


def test_ref_truncated_xz_is_refused(tmp_path: Path) -> None:
    """A cut xz file is an error naming xzcat, not a silent partial read."""
    f = tmp_path / "node1.log.xz"
    f.write_bytes(lzma.compress(LOG.encode() * 2000)[:200])
    with Store(":memory:") as store, pytest.raises(IngestError, match="xzcat"):
        read_kernel(store, f)


@pytest.mark.parametrize(
    ("data", "says"),
    [
        (b"PAR1" + bytes(range(256)) * 4, "a Parquet file"),
        (b"\x7fELF\x02\x01\x01" + bytes(600), "an ELF binary"),
        (bytes((i * 7919 + 13) % 256 for i in range(4096)), "binary data"),
        (LOG.encode("utf-16"), "UTF-16 text"),
        (LOG.encode("utf-16-le"), "UTF-16 text"),
    ],
)
def test_ref_binary_file_as_kernel_is_refused(
    tmp_path: Path, data: bytes, says: str
) -> None:
    """Issue 10 §5: a binary file given as --kind kernel is refused (before: 0
    events, exit 0), also inside a compression."""
    f = tmp_path / "thing.log"
    f.write_bytes(data)
    with Store(":memory:") as store, pytest.raises(IngestError, match=says):
        read_kernel(store, f)
    z = tmp_path / "thing.log.zst"
    z.write_bytes(zstandard.ZstdCompressor().compress(data))
    with (
        Store(":memory:") as store,
        pytest.raises(IngestError, match="inside the zstd"),
    ):
        read_kernel(store, z)


def test_ref_log_with_nul_run_is_still_read(tmp_path: Path) -> None:
    """A log with a NUL run where the host crashed mid-write is text: the 2
    lines, a line of 4096 NULs, then the first line cut at 90 bytes (still an
    Xid line) -> 4 lines, 2 events (hand count); not refused as binary."""
    f = tmp_path / "node1.log"
    f.write_bytes(LOG.encode() + b"\x00" * 4096 + b"\n" + LOG.encode()[:90] + b"\n")
    with Store(":memory:") as store:
        [r] = read_kernel(store, f)
    assert (r.n_lines, r.n_loaded) == (4, 2)


@pytest.mark.parametrize(
    ("suffix", "pack"),
    [(".xz", lzma.compress), (".bz2", bz2.compress)],
)
def test_ref_other_kinds_refuse_xz_bz2_like_gzip(
    tmp_path: Path, suffix: str, pack: object
) -> None:
    """The table kinds refuse xz and bzip2 with "decompress it first", as gzip."""
    f = tmp_path / f"events.csv{suffix}"
    f.write_bytes(pack(b"ts,host,failure_mode\n"))  # type: ignore[operator]
    with Store(":memory:") as store, pytest.raises(IngestError, match="decompress it"):
        read_file(store, f, kind="events")


def test_ref_journalctl_short_precise_keeps_microseconds(tmp_path: Path) -> None:
    """`journalctl -o short-precise` prints RFC 3164 stamps with microseconds
    ("Mar 04 10:22:31.184022 host-b kernel: ..."); the time keeps them:
    2025-03-04T10:22:31.184022Z with --tz UTC --reference-date 2025-03-05."""
    f = tmp_path / "journal.log"
    f.write_text(f"Mar 04 10:22:31.184022 host-b kernel: {XID79}\n")
    ev = _events(f, tz="UTC", reference_date="2025-03-05")
    assert ev.select("host", "ts").row(0) == (
        "host-b",
        dt.datetime(2025, 3, 4, 10, 22, 31, 184022, tzinfo=UTC),
    )


@pytest.mark.parametrize(
    ("reference", "warned"), [("2024-04-26", True), ("2025-03-10", False)]
)
def test_a_reference_date_a_year_off_the_dated_lines_is_said(
    reference: str,
    warned: bool,  # noqa: FBT001 - a parametrize argument
) -> None:
    """Case C01 holds host-a's year-less line 4 ``Mar  4 10:21:40`` beside ISO lines of
    2025-03-04. With a reference date of 2024-04-26 (another log's) the year-less line
    is placed on 2024-03-04, a year before every dated line: its MTBF would move by a
    year of exposure, so it is said; with the right date (2025-03-10) it is not."""
    import warnings

    from shared_paths import SHARED

    from relkit import Store, read_file
    from relkit.errors import RelkitWarning

    with warnings.catch_warnings(record=True) as caught, Store(":memory:") as store:
        warnings.simplefilter("always")
        read_file(
            store,
            SHARED / "cases" / "C01-xid-line-variants.log",
            kind="kernel",
            tz="UTC",
            reference_date=reference,
            host="node01",
        )
    said = [
        str(w.message)
        for w in caught
        if issubclass(w.category, RelkitWarning) and "year-less" in str(w.message)
    ]
    if warned:  # one message (said once per reading pass of the file)
        assert len(set(said)) == 1
        assert "line 4, placed on 2024-03-04" in said[0]
        assert "(2025-03-04 to 2025-03-04)" in said[0]
    else:
        assert said == []
