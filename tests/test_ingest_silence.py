"""Issue 9, ingest side: any failure mode, unknown install dates, collection
spans (``--as-of``, record spans, per-host ``log_spans``), nothing silent.

Every expected value is computed by hand from the few lines written here; the
docstrings say how.
"""

import datetime as dt
import json
from pathlib import Path

import duckdb
import pytest

from relkit.cli import main
from relkit.errors import IngestError, RelkitError
from relkit.ingest import read_assets, read_events, read_file, read_kernel
from relkit.schema import TABLE_COLUMNS
from relkit.store import SCHEMA_VERSION, Store


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


@pytest.fixture
def store() -> Store:
    with Store(":memory:") as s:
        yield s


def _options(store: Store, source_id: int = 1) -> dict:
    row = store.table("sources").filter(source_id=source_id)
    return json.loads(row.get_column("options")[0])


# -- 1. any failure-mode name --------------------------------------------------------
def test_ref_non_taxonomy_mode_loads_with_its_category(
    store: Store, tmp_path: Path
) -> None:
    """Issue 9 §4 reproduction: ``gpu_memory_uce`` was rejected on every row.

    Three rows of the mode: line 2 states category hardware, line 3 states none
    (takes line 2's), line 4 gives counts_as_failure 'no' while line 2 left it
    empty (so the mode's value is the first stated one, False). Line 5 names a
    taxonomy mode (gpu/fallen_off_bus: hardware, counts) but says software: the
    taxonomy wins and the row is flagged.
    """
    path = tmp_path / "uce.csv"
    path.write_text(
        "ts,host,failure_mode,category,counts_as_failure\n"
        "2025-03-01T00:00:00Z,g1,GPU_Memory_UCE,Hardware,\n"
        "2025-03-02T00:00:00Z,g2,gpu_memory_uce,,\n"
        "2025-03-03T00:00:00Z,g3,gpu_memory_uce,,no\n"
        "2025-03-04T00:00:00Z,g4,gpu/fallen_off_bus,software,\n"
    )
    result = read_events(store, path)
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (4, 4, 0)
    ev = store.table("events").sort("line_no")
    assert ev["failure_mode"].to_list() == ["gpu_memory_uce"] * 3 + [
        "gpu/fallen_off_bus"
    ]
    assert ev["flags"].to_list() == [None, None, None, "category_from_taxonomy"]
    modes = store.table("failure_modes")
    uce = modes.filter(failure_mode="gpu_memory_uce").row(0, named=True)
    assert (uce["category"], uce["counts_as_failure"]) == ("hardware", False)
    assert uce["declared_source_id"] == 1
    bus = modes.filter(failure_mode="gpu/fallen_off_bus").row(0, named=True)
    assert (bus["category"], bus["counts_as_failure"], bus["declared_source_id"]) == (
        "hardware",
        True,
        None,
    )
    assert _options(store)["declared_modes"] == ["gpu_memory_uce"]
    assert result.flag_counts == (("category_from_taxonomy", 1),)


def test_mode_without_category_column_is_unknown_and_counts(
    store: Store, tmp_path: Path
) -> None:
    """No category columns: a non-taxonomy mode is 'unknown', counted (issue 9)."""
    path = tmp_path / "ev.csv"
    path.write_text("ts,host,failure_mode\n2025-03-01T00:00:00Z,g1,psu_trip\n")
    assert read_events(store, path).n_loaded == 1
    row = (
        store.table("failure_modes").filter(failure_mode="psu_trip").row(0, named=True)
    )
    assert (row["category"], row["counts_as_failure"]) == ("unknown", True)


def test_two_files_disagreeing_on_a_mode_reject_naming_both(
    store: Store, tmp_path: Path
) -> None:
    """File a declares gpu_memory_uce hardware; file b says network on line 2 and
    nothing on line 3: line 2 is rejected naming source 1 and its path, line 3
    is loaded with a's category. A bad category value is rejected too."""
    a = tmp_path / "a.csv"
    a.write_text(
        "ts,host,failure_mode,category\n2025-03-01T00:00:00Z,g1,gpu_memory_uce,hardware\n"
    )
    b = tmp_path / "b.csv"
    b.write_text(
        "ts,host,failure_mode,category\n"
        "2025-03-02T00:00:00Z,g2,gpu_memory_uce,network\n"
        "2025-03-03T00:00:00Z,g3,gpu_memory_uce,\n"
        "2025-03-04T00:00:00Z,g4,fan,cooling\n"
    )
    read_events(store, a)
    result = read_events(store, b)
    assert (result.n_loaded, result.n_rejected) == (1, 2)
    reasons = dict(store.table("rejects").select("line_no", "reason").rows())
    assert reasons[2].startswith(
        "failure_mode 'gpu_memory_uce' has category 'network' here but 'hardware' "
        f"in source 1 ({a})"
    )
    assert reasons[4].startswith("category 'cooling' is not one of hardware, ")
    assert (
        store.table("failure_modes").filter(failure_mode="gpu_memory_uce").height == 1
    )


def test_replace_may_change_a_declared_category(store: Store, tmp_path: Path) -> None:
    """Re-reading a file with --replace drops its old declaration first, so a
    corrected category is taken (one failure_modes row, the new source's)."""
    path = tmp_path / "ev.csv"
    path.write_text("ts,host,failure_mode\n2025-03-01T00:00:00Z,g1,psu_trip\n")
    read_events(store, path)
    path.write_text(
        "ts,host,failure_mode,category\n2025-03-01T00:00:00Z,g1,psu_trip,hardware\n"
    )
    result = read_events(store, path, replace=True)
    assert (result.n_loaded, result.n_rejected, result.replaced) == (1, 0, (1,))
    rows = store.table("failure_modes").filter(failure_mode="psu_trip")
    assert rows.select("category", "declared_source_id").rows() == [("hardware", 2)]


def test_dropping_the_declaring_source_hands_the_mode_on(
    store: Store, tmp_path: Path
) -> None:
    """Files a and b both use psu_trip (a declared it). Dropping a passes the row
    to b (source 2); dropping b too removes it."""
    for name, day in (("a", 1), ("b", 2)):
        (tmp_path / f"{name}.csv").write_text(
            f"ts,host,failure_mode\n2025-03-0{day}T00:00:00Z,g1,psu_trip\n"
        )
        read_events(store, tmp_path / f"{name}.csv")
    modes = store.table("failure_modes").filter(failure_mode="psu_trip")
    assert modes["declared_source_id"].to_list() == [1]
    with store.transaction():
        store.drop_sources([1])
    modes = store.table("failure_modes").filter(failure_mode="psu_trip")
    assert modes["declared_source_id"].to_list() == [2]
    with store.transaction():
        store.drop_sources([2])
    assert store.table("failure_modes").filter(failure_mode="psu_trip").is_empty()
    assert store.table("failure_modes").height > 0  # the taxonomy stays


# -- 2. unknown install dates ---------------------------------------------------------
def test_ref_unknown_install_date_is_accepted_and_flagged(
    store: Store, tmp_path: Path
) -> None:
    """Issue 9 §3: rows with an empty in_service_ts were all rejected ("0 loaded,
    40712 rejected", exit 0). Now: n1 has observed_from_ts (entry there), n2 has
    neither (entry at its first record, left NULL for analysis), n3 is a usual
    row; all three load, n1 and n2 flagged in_service_unknown."""
    path = tmp_path / "assets.csv"
    path.write_text(
        "host,in_service_ts,observed_from_ts,out_of_service_ts\n"
        "n1,,2025-01-10T00:00:00Z,\n"
        "n2,,,\n"
        "n3,2024-06-01T00:00:00Z,,2025-02-01T00:00:00Z\n"
    )
    result = read_assets(store, path)
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (3, 3, 0)
    a = store.table("assets").sort("line_no")
    assert a.select("host", "in_service_ts", "observed_from_ts", "flags").rows() == [
        ("n1", None, utc(2025, 1, 10), "in_service_unknown"),
        ("n2", None, None, "in_service_unknown"),
        ("n3", utc(2024, 6, 1), None, None),
    ]
    assert result.flag_counts == (("in_service_unknown", 2),)
    # record span: min/max over in/out/observed of the loaded rows
    opts = _options(store)
    assert opts["first_record_ts"] == "2024-06-01T00:00:00+00:00"
    assert opts["last_record_ts"] == "2025-02-01T00:00:00+00:00"


def test_overlap_checks_cope_with_unknown_starts(store: Store, tmp_path: Path) -> None:
    """Unit g1: line 2 [unknown, 2025-01-01); line 3 [2025-01-01, open) follows it
    (half-open windows touch, no overlap); line 4 [unknown, open) overlaps line 2
    (an unknown start reaches back). Unit g2: line 5 observed from 2025-02-01,
    open; line 6 [2025-01-01, 2025-03-01) overlaps it."""
    path = tmp_path / "assets.csv"
    path.write_text(
        "host,in_service_ts,observed_from_ts,out_of_service_ts\n"
        "g1,,,2025-01-01T00:00:00Z\n"
        "g1,2025-01-01T00:00:00Z,,\n"
        "g1,,,\n"
        "g2,,2025-02-01T00:00:00Z,\n"
        "g2,2025-01-01T00:00:00Z,,2025-03-01T00:00:00Z\n"
    )
    result = read_assets(store, path)
    assert (result.n_loaded, result.n_rejected) == (3, 2)
    reasons = dict(store.table("rejects").select("line_no", "reason").rows())
    assert reasons[4].startswith(
        "service window [unknown start, open) overlaps line 2 ([unknown start, "
        "2025-01-01T00:00:00Z))"
    )
    assert reasons[6].startswith(
        "service window [2025-01-01T00:00:00Z, 2025-03-01T00:00:00Z) overlaps "
        "line 5 ([2025-02-01T00:00:00Z, open))"
    )


# -- schema 4 and its upgrade ---------------------------------------------------------
def _make_v3(path: Path) -> None:
    """A store as schema 3 left it: no assets.flags, no declared_source_id, no
    log_spans (built from today's DDL minus the schema-4 additions)."""
    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE relkit_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO relkit_meta VALUES ('schema_version', '3')")
    new = {("assets", "flags"), ("failure_modes", "declared_source_id")}
    for name, cols in TABLE_COLUMNS.items():
        if name == "log_spans":
            continue
        body = ", ".join(f'"{c}" {t}' for c, t in cols.items() if (name, c) not in new)
        con.execute(f"CREATE TABLE {name} ({body})")
    con.execute(
        "INSERT INTO assets (source_id, line_no, host, in_service_ts) "
        "VALUES (1, 2, 'n1', TIMESTAMPTZ '2024-01-01 00:00:00+00')"
    )
    con.close()


def test_schema_3_store_is_upgraded_in_place(tmp_path: Path) -> None:
    """A version-3 store opened read-only is refused with the way to upgrade; opened
    for writing it gains the schema-4 columns and table, old rows kept (NULL)."""
    path = tmp_path / "old.duckdb"
    _make_v3(path)
    with pytest.raises(RelkitError, match="Open it once for writing"):
        Store(path, read_only=True)
    with Store(path) as store:
        assets = store.table("assets")
        assert assets.select("host", "flags").rows() == [("n1", None)]
        assert store.table("log_spans").is_empty()
        assert "declared_source_id" in store.table("failure_modes").columns
    with Store(path, read_only=True) as store:  # now version 4
        assert store.table("assets").height == 1
    con = duckdb.connect(str(path), read_only=True)
    version = con.execute("SELECT value FROM relkit_meta").fetchall()
    con.close()
    assert version == [(str(SCHEMA_VERSION),)] == [("7",)]


# -- 3. collection spans --------------------------------------------------------------
def _dmesg_iso(path: Path) -> None:
    """41 ``dmesg --time-format iso`` lines, 05:39:15 → 12:02:15 (the 6 h 23 min
    span split in 40 steps of 574.5 s), the Xid 48 at line 11 (issue 9 §2)."""
    t0 = dt.datetime(2025, 6, 11, 5, 39, 15)
    lines = []
    for i in range(41):
        t = t0 + dt.timedelta(seconds=i * 574.5)
        stamp = t.strftime("%Y-%m-%dT%H:%M:%S,") + f"{t.microsecond:06d}+00:00"
        msg = (
            "NVRM: Xid (PCI:0000:3b:00): 48, pid=2412, name=python3, Ch 00000008"
            if i == 10
            else f"kernel: usb 1-{i % 4 + 1}: USB disconnect, device number {i}"
        )
        lines.append(f"{stamp} {msg}")
    path.write_text("\n".join(lines) + "\n")


def test_ref_dmesg_iso_log_spans_its_lines_not_its_failure(
    store: Store, tmp_path: Path
) -> None:
    """Issue 9 §2 reproduction: gpu01 was watched 05:39:15 → 12:02:15, 6 h 23 min
    = 6.3833 h, although its one failure line is at 07:15:00 (line 11: 10 steps
    of 574.5 s after 05:39:15). One log_spans row, 41 lines."""
    log = tmp_path / "gpu01-dmesg.log"
    _dmesg_iso(log)
    (result,) = read_kernel(store, log, host="gpu01")
    assert (result.n_lines, result.n_loaded) == (41, 1)
    spans = store.table("log_spans")
    assert spans.rows() == [
        (1, "gpu01", utc(2025, 6, 11, 5, 39, 15), utc(2025, 6, 11, 12, 2, 15), 41)
    ]
    hours = (spans["last_ts"][0] - spans["first_ts"][0]).total_seconds() / 3600
    assert hours == pytest.approx(6 + 23 / 60)
    assert store.table("events")["ts"].to_list() == [utc(2025, 6, 11, 7, 15)]
    opts = _options(store)
    assert (
        opts["log_start_ts"] == opts["first_record_ts"] == "2025-06-11T05:39:15+00:00"
    )
    assert opts["log_end_ts"] == opts["last_record_ts"] == "2025-06-11T12:02:15+00:00"


def test_syslog_of_several_hosts_has_a_span_per_host(
    store: Store, tmp_path: Path
) -> None:
    """Three hosts in one syslog; only node-b has a failure line. node-a: lines
    1, 4 (10:00:00 → 10:30:00, 2 lines); node-b: lines 2, 5, 7 (10:05 → 11:00, 3
    lines); node-c: lines 3, 6 (10:10 → 10:50, 2 lines). The blank line 8 is
    nobody's. Every host is known at risk, not only node-b."""
    log = tmp_path / "syslog"
    log.write_text(
        "2025-03-04T10:00:00+00:00 node-a systemd[1]: Started session-1.scope.\n"
        "2025-03-04T10:05:00+00:00 node-b kernel: [  100.000000] usb 1-1: reset\n"
        "2025-03-04T10:10:00+00:00 node-c CRON[5]: (root) CMD (true)\n"
        "2025-03-04T10:30:00+00:00 node-a CRON[6]: (root) CMD (true)\n"
        "2025-03-04T10:40:00+00:00 node-b kernel: [ 2500.000000] NVRM: Xid "
        "(PCI:0000:3b:00): 79, pid=1, GPU has fallen off the bus.\n"
        "2025-03-04T10:50:00+00:00 node-c sshd[7]: Accepted publickey for root\n"
        "2025-03-04T11:00:00+00:00 node-b kernel: [ 3700.000000] usb 1-1: reset\n"
        "\n"
    )
    (result,) = read_kernel(store, log)
    assert result.n_loaded == 1
    assert store.table("log_spans").select(
        "host", "first_ts", "last_ts", "n_lines"
    ).rows() == [
        ("node-a", utc(2025, 3, 4, 10), utc(2025, 3, 4, 10, 30), 2),
        ("node-b", utc(2025, 3, 4, 10, 5), utc(2025, 3, 4, 11), 3),
        ("node-c", utc(2025, 3, 4, 10, 10), utc(2025, 3, 4, 10, 50), 2),
    ]
    opts = _options(store)
    assert opts["log_start_ts"] == "2025-03-04T10:00:00+00:00"
    assert opts["log_end_ts"] == "2025-03-04T11:00:00+00:00"


def test_span_ends_skip_lines_without_time(store: Store, tmp_path: Path) -> None:
    """The first line is a plain dmesg clock with no anchor (no time), so the span
    starts at line 2's wall stamp; line 4 is a broken clock (year 9999), so the
    span ends at line 3. log_end_ts (the last line's time) stays unset."""
    log = tmp_path / "h.log"
    log.write_text(
        "[    5.000000] Linux version 6.8.0\n"
        "2025-03-04T10:00:00+00:00 kernel: usb 1-1: reset\n"
        "2025-03-04T10:20:00+00:00 kernel: usb 1-1: reset\n"
        "9999-12-31T23:59:59+00:00 kernel: usb 1-1: reset\n"
    )
    read_kernel(store, log, host="h")
    assert store.table("log_spans").select("first_ts", "last_ts", "n_lines").rows() == [
        (utc(2025, 3, 4, 10), utc(2025, 3, 4, 10, 20), 4)
    ]
    opts = _options(store)
    assert "log_end_ts" not in opts
    assert opts["last_record_ts"] == "2025-03-04T10:20:00+00:00"


#: Two days of gpu01's kern.log as `cat kern.log kern.log.1` gives them: the newer
#: day (Mar 5-6) first, then the older one (Mar 4, boot at kernel clock 1 s).
_ROTATED = [
    "Mar  5 00:00:01 gpu01 kernel: [86400.000000] mlx5_core 0000:1d:00.0 "
    "enp29s0np0: Link up",
    "Mar  5 12:00:00 gpu01 kernel: [129600.000000] systemd[1]: Started Daily apt "
    "upgrade.",
    "Mar  6 00:00:00 gpu01 kernel: [172800.000000] EXT4-fs (nvme0n1p2): re-mounted",
    "Mar  4 00:00:01 gpu01 kernel: [    1.000000] Linux version 5.15.0-105-generic "
    "(buildd@lcy02-amd64-001)",
    "Mar  4 12:00:00 gpu01 kernel: [43200.000000] NVRM: Xid (PCI:0000:18:00): 48, "
    "pid=1, name=python3, Ch 00000008",
    "Mar  4 18:00:00 gpu01 kernel: [64800.000000] systemd[1]: Started Session 3 of "
    "user root.",
]


@pytest.mark.parametrize("order", ["as_catted", "sorted"])
def test_span_runs_from_earliest_to_latest_line_whatever_the_order(
    tmp_path: Path, order: str
) -> None:
    """`cat kern.log kern.log.1` (newer day first) and the time-sorted file give
    one span: gpu01 from its earliest line, Mar 4 00:00:01 (line 4 as catted),
    to its latest, Mar 6 00:00:00 (line 3), not from line 1 to line 6 (Mar 5
    00:00:01 → Mar 4 18:00, which gave 12 h). Exposure 48 h − 1 s = 47.99972 h;
    one failure (the Xid 48; the mlx5 'Link up' is no failure): MTBF 47.99972 h.
    log_end_ts, the collection time, is the latest line too."""
    lines = _ROTATED if order == "as_catted" else _ROTATED[3:] + _ROTATED[:3]
    log = tmp_path / "kern.log"
    log.write_text("\n".join(lines) + "\n")
    with Store(":memory:") as store:
        read_kernel(store, log, tz="UTC", reference_date="2025-03-06")
        spans = store.table("log_spans").select("host", "first_ts", "last_ts")
        assert spans.rows() == [
            ("gpu01", utc(2025, 3, 4, 0, 0, 1), utc(2025, 3, 6, 0, 0, 0))
        ]
        opts = _options(store)
        assert opts["log_start_ts"] == "2025-03-04T00:00:01+00:00"
        assert opts["log_end_ts"] == "2025-03-06T00:00:00+00:00"
        from relkit import answers

        row = answers.mtbf_by(**answers.store_tables(store)).row(0, named=True)
    hours = 48 - 1 / 3600
    assert (row["n_units"], row["n_failures"]) == (1, 1)
    assert row["exposure_h"] == pytest.approx(hours)
    assert row["mtbf_h"] == pytest.approx(hours)


def test_span_ends_are_found_in_any_batch_and_any_order(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Read in batches of 100 bytes (one or two lines each), lines out of order.

    node-a (ISO, two offsets): 12:00+01:00 = 11:00Z, 10:30Z (line 4), 18:00+01:00
    = 17:00Z (line 2), 16:45:00.5Z, and a broken clock (year 9999, skipped):
    10:30Z → 17:00Z, although the text '18:00+01:00' and '16:45Z' order otherwise
    across offsets. node-b (RFC 3164, reference date 2025-03-05, UTC): Mar 5
    01:00, Mar 4 09:00, Mar 5 07:15:30 (line 9), Dec 31 23:00 (line 5: after
    the reference date + 1 day, so 2024-12-31) and Feb 30 (no date, skipped):
    2024-12-31 23:00 → 2025-03-05 07:15:30. The lines reversed, read in one
    batch, give the same spans."""
    lines = [
        "2025-03-04T12:00:00+01:00 node-a CRON[1]: (root) CMD (true)",
        "2025-03-04T18:00:00+01:00 node-a CRON[3]: (root) CMD (true)",
        "Mar  5 01:00:00 node-b systemd[1]: Started session 2.",
        "2025-03-04T10:30:00Z node-a CRON[2]: (root) CMD (true)",
        "Dec 31 23:00:00 node-b systemd[1]: Started session 1.",
        "9999-12-31T23:59:59Z node-a CRON[9]: (root) CMD (true)",
        "Feb 30 10:00:00 node-b systemd[1]: Started session 9.",
        "2025-03-04T16:45:00.5Z node-a CRON[4]: (root) CMD (true)",
        "Mar  5 07:15:30 node-b systemd[1]: Started session 4.",
        "Mar  4 09:00:00 node-b systemd[1]: Started session 3.",
    ]
    expected = [
        ("node-a", utc(2025, 3, 4, 10, 30), utc(2025, 3, 4, 17, 0), 5),
        ("node-b", utc(2024, 12, 31, 23, 0), utc(2025, 3, 5, 7, 15, 30), 5),
    ]
    from relkit.ingest import _kernel_read

    log = tmp_path / "syslog"
    log.write_text("\n".join(lines) + "\n")
    whole = _kernel_read.block_batches
    with monkeypatch.context() as m:
        m.setattr(_kernel_read, "block_batches", lambda p: whole(p, 100))
        with Store(":memory:") as store:
            read_kernel(store, log, tz="UTC", reference_date="2025-03-05")
            got = store.table("log_spans").drop("source_id").rows()
    assert got == expected
    log.write_text("\n".join(reversed(lines)) + "\n")
    with Store(":memory:") as store:
        read_kernel(store, log, tz="UTC", reference_date="2025-03-05")
        assert store.table("log_spans").drop("source_id").rows() == expected


def test_as_of_is_stored_in_utc_and_needs_a_zone(store: Store, tmp_path: Path) -> None:
    """14:00+02:00 is 12:00Z; a zone-less --as-of is refused with the fix."""
    path = tmp_path / "ev.csv"
    path.write_text(
        "ts,host,failure_mode,repaired_ts\n"
        "2025-03-01T00:00:00Z,g1,psu_trip,2025-03-01T06:00:00Z\n"
        "2025-02-27T12:00:00Z,g2,psu_trip,\n"
    )
    with pytest.raises(IngestError, match=r"has no time zone; add one, e\.g\."):
        read_events(store, path, as_of="2025-03-10T14:00:00")
    read_events(store, path, as_of="2025-03-10T14:00:00+02:00")
    opts = _options(store)
    assert opts["as_of_ts"] == "2025-03-10T12:00:00+00:00"
    # record span: min over ts/repaired_ts = line 3's ts, max = line 2's repair
    assert opts["first_record_ts"] == "2025-02-27T12:00:00+00:00"
    assert opts["last_record_ts"] == "2025-03-01T06:00:00+00:00"


def test_sacct_record_span_is_over_submit_start_end(
    store: Store, tmp_path: Path
) -> None:
    """Job 1 submitted 00:00, ran 01:00-03:00; job 2 submitted 02:00, started 04:00,
    still running: the span is 00:00 → 04:00 (max over submit/start/end)."""
    path = tmp_path / "sacct.psv"
    path.write_text(
        "JobID|State|Submit|Start|End\n"
        "1|COMPLETED|2025-01-01T00:00:00|2025-01-01T01:00:00|2025-01-01T03:00:00\n"
        "2|RUNNING|2025-01-01T02:00:00|2025-01-01T04:00:00|Unknown\n"
    )
    read_file(store, path, kind="sacct", tz="UTC", as_of="2025-01-01T05:00:00Z")
    opts = _options(store)
    assert opts["first_record_ts"] == "2025-01-01T00:00:00+00:00"
    assert opts["last_record_ts"] == "2025-01-01T04:00:00+00:00"
    assert opts["as_of_ts"] == "2025-01-01T05:00:00+00:00"


# -- 4. nothing silent (CLI) ----------------------------------------------------------
def test_ref_all_rejected_exits_non_zero_and_keeps_rejects(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 9 §5: a file with every row rejected exited 0. Lines 2 and 4 say
    'yesterday', line 3 '2024-13-01': the summary counts 2 × and 1 × with their
    lines; the exit code is 1 and the rejects stay in the store."""
    db, path = tmp_path / "s.duckdb", tmp_path / "assets.csv"
    path.write_text("host,in_service_ts\nn1,yesterday\nn2,2024-13-01\nn3,yesterday\n")
    code = main(["ingest", "--db", str(db), "--kind", "assets", str(path)])
    err = capsys.readouterr().err
    assert code == 1
    assert (
        "3 rejected: 2 × \"unparseable timestamp in column 'in_service_ts': "
        "'yesterday'\" (lines 2, 4); 1 × \"unparseable timestamp in column "
        "'in_service_ts': '2024-13-01'\" (line 3)"
    ) in err
    assert f"{path}: all 3 records were rejected; top reason (2×)" in err
    assert "Traceback" not in err
    assert main(["rejects", "--db", str(db), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [(r["source"], r["line_no"]) for r in rows] == [
        (str(path), 2),
        (str(path), 3),
        (str(path), 4),
    ]
    assert rows[1]["raw"] == "n2,2024-13-01"
    assert set(rows[0]) == {"source", "line_no", "reason", "raw"}


def test_rejects_source_filter_and_unknown_source(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--source keeps one file's rejects (csv); an unknown path is an error."""
    db = tmp_path / "s.duckdb"
    for name in ("a", "b"):
        (tmp_path / f"{name}.csv").write_text(
            f"ts,host,failure_mode\nnot-a-time,{name},psu\n2025-01-01T00:00Z,n,psu\n"
        )
        assert (
            main(
                [
                    "ingest",
                    "--db",
                    str(db),
                    "--kind",
                    "events",
                    str(tmp_path / f"{name}.csv"),
                ]
            )
            == 0
        )
    capsys.readouterr()
    b = str(tmp_path / "b.csv")
    assert main(["rejects", "--db", str(db), "--source", b, "--format", "csv"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "source,line_no,reason,raw"
    assert out[1:] == [
        f"{b},2,unparseable timestamp in column 'ts': 'not-a-time',\"not-a-time,b,psu\""
    ]
    assert main(["rejects", "--db", str(db), "--source", "nope.csv"]) == 1
    assert "no such source" in capsys.readouterr().err


def test_events_list_flags_and_ingest_counts_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """tests/data/events_zoneless.csv read in Europe/Berlin: one time in the
    spring-forward gap, one in the fall-back hour (see test_ingest_tables); the
    summary counts the flags and `relkit events` shows them."""
    db = tmp_path / "s.duckdb"
    data = Path(__file__).parent / "data" / "events_zoneless.csv"
    args = ["ingest", "--db", str(db), "--kind", "events", "--tz", "Europe/Berlin"]
    assert main([*args, str(data)]) == 0
    err = capsys.readouterr().err
    assert "flags: 1 dst_ambiguous, 1 dst_nonexistent" in err
    assert main(["events", "--db", str(db), "--format", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["flags"] for r in rows] == [None, "dst_nonexistent", "dst_ambiguous"]


def test_events_show_a_declared_category(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`relkit events` gives a declared mode the category its file stated."""
    db, path = tmp_path / "s.duckdb", tmp_path / "ev.csv"
    path.write_text(
        "ts,host,failure_mode,category\n2025-03-01T00:00:00Z,g1,gpu_memory_uce,hardware\n"
    )
    assert main(["ingest", "--db", str(db), "--kind", "events", str(path)]) == 0
    capsys.readouterr()
    assert main(["events", "--db", str(db), "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["failure_mode"], row["category"]) == ("gpu_memory_uce", "hardware")


def test_cli_as_of_zone_less_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A zone-less --as-of is refused before anything is read, with the fix."""
    log = tmp_path / "gpu01.log"
    _dmesg_iso(log)
    db = tmp_path / "s.duckdb"
    argv = ["ingest", "--db", str(db), "--kind", "kernel", "--host", "gpu01"]
    assert main([*argv, "--as-of", "2025-06-11T12:05", str(log)]) == 1
    err = capsys.readouterr().err
    assert "--as-of: '2025-06-11T12:05' has no time zone; add one" in err
    assert not db.exists()
    assert main([*argv, "--as-of", "2025-06-11T12:05Z", str(log)]) == 0
    with Store(db, read_only=True) as store:
        assert _options(store)["as_of_ts"] == "2025-06-11T12:05:00+00:00"
        assert store.table("log_spans").height == 1
