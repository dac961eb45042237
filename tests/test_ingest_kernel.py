"""Kernel/syslog ingest: the C01, C03, C05 expectations, gpud fixtures, times, safety.

Case expectations are from shared/cases/README.md (C01, C03, C05); the
inputs are read from shared/cases and skipped when absent. The gpud
fixtures are the Apache-2.0 copies in datasets/gpud (see its NOTICE).
"""

import datetime as dt
import gzip
import shutil
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_paths import SHARED

from relkit.errors import IngestError
from relkit.ingest.kernel import classify_lines, read_kernel, resolve_times
from relkit.store import Store

CASES = SHARED / "cases"
DATA = Path(__file__).parent / "data"
GPUD = Path(__file__).parents[1] / "datasets" / "gpud"
C01 = CASES / "C01-xid-line-variants.log"
C03 = CASES / "C03-xid-storm-dedup.log"
C05 = CASES / "C05-roce-ib-link-flap.log"
UTC = dt.UTC

needs_cases = pytest.mark.skipif(not CASES.exists(), reason="shared cases absent")


def _lines(path: Path) -> pl.Series:
    return pl.Series(path.read_text().splitlines())


def _events(path: Path, **kw: object) -> pl.DataFrame:
    with Store(":memory:") as store:
        read_kernel(store, path, **kw)
        return store.table("events").sort("line_no")


# -- C01 ----------------------------------------------------------------------------
@needs_cases
def test_ref_c01_ten_xid_events_in_order() -> None:
    """C01: exactly 10 GPU Xid events, in order 79,13,43,119,94,48,31,149,154,46."""
    out = classify_lines(_lines(C01))
    xid = out.filter(pl.col("failure_mode").str.starts_with("gpu/"))
    assert xid["code"].to_list() == [
        "79", "13", "43", "119", "94", "48", "31", "149", "154", "46",
    ]  # fmt: skip
    assert xid["device"].to_list() == [
        "0000:3b:00", "0000:5d:00", "0000:5d:00", "0000:9b:00", "0000:b5:00",
        "0000:17:00", "0000:af:00", "0018:01:00", "0018:01:00", "0000:3f:00",
    ]  # fmt: skip


@needs_cases
def test_ref_c01_pid_name_null_when_absent_or_unknown() -> None:
    """C01: pid and name are NULL when absent or <unknown> (line 3 quotes it)."""
    out = classify_lines(_lines(C01)).filter(pl.col("outcome") == "event")
    row = {r["line_no"]: r for r in out.iter_rows(named=True)}
    assert row[3]["pid"] is None
    assert row[3]["name"] is None
    assert row[11]["pid"] is None
    assert row[11]["name"] is None
    assert (row[2]["pid"], row[2]["name"]) == (21877, None)
    assert (row[4]["pid"], row[4]["name"]) == (33120, "python3")


@needs_cases
def test_ref_c01_uuid_map_line_gives_uuid_and_is_no_event() -> None:
    """C01: the first event gets GPU-…03b from the map line, which is not an event."""
    out = classify_lines(_lines(C01))
    assert out.row(0, named=True)["outcome"] == "ignored"
    assert out.row(0, named=True)["reason"] == "gpu_uuid_map"
    assert out.row(1, named=True)["uuid"] == "GPU-00000000-0000-0000-0000-00000000003b"


@needs_cases
def test_ref_c01_xid149_subcode_severity_link() -> None:
    """C01: Xid 149 keeps NETIR_LINK_EVT, the line's 'Fatal' as severity fatal (the
    lower-case vocabulary of relkit.taxonomy.SEVERITIES) and link 7."""
    row = classify_lines(_lines(C01)).filter(pl.col("code") == "149").row(0, named=True)
    assert row["severity"] == "fatal"
    assert row["detail"].startswith("NETIR_LINK_EVT Fatal")
    assert "Link 07" in row["detail"]


@needs_cases
def test_ref_c01_abc_rejected_sxid_not_xid_driver_line_ignored() -> None:
    """C01: `abc` rejected at line 13; SXid is nvswitch, never Xid 20009; no time from
    the driver-load message."""
    out = classify_lines(_lines(C01))
    row = {r["line_no"]: r for r in out.iter_rows(named=True)}
    assert row[13]["outcome"] == "rejected"
    assert "numeric code" in row[13]["reason"]
    assert (row[14]["failure_mode"], row[14]["code"]) == ("nvswitch/sxid", "sxid:20009")
    assert (
        "20009"
        not in out.filter(pl.col("failure_mode").str.starts_with("gpu/"))[
            "code"
        ].to_list()
    )
    assert row[12]["outcome"] == "ignored"
    assert row[12]["wall"] is None
    assert row[12]["reason"] == "driver_load"


@needs_cases
def test_ref_c01_times() -> None:
    """C01: line 5 10:22:05Z; line 6 09:22:31.184022Z; line 7 kmsg 7421.193311 s
    after boot; lines 2, 8–11 monotonic only (flagged no_wall_time)."""
    ev = _events(C01, tz="UTC", reference_date="2025-03-05", host="gpu-node")
    row = {r["line_no"]: r for r in ev.iter_rows(named=True)}
    assert row[5]["ts"] == dt.datetime(2025, 3, 4, 10, 22, 5, tzinfo=UTC)
    assert row[6]["ts"] == dt.datetime(2025, 3, 4, 9, 22, 31, 184022, tzinfo=UTC)
    assert row[7]["mono_s"] == pytest.approx(7421.193311)
    assert row[2]["mono_s"] == pytest.approx(1843.308145)
    for n in (2, 7, 8, 9, 10, 11):
        assert row[n]["ts"] is None
        assert "no_wall_time" in row[n]["flags"]
    # lines 3 and 4: local times resolved only with the configured zone and year
    assert row[3]["ts"] == dt.datetime(2025, 3, 4, 10, 15, 2, tzinfo=UTC)
    assert row[4]["ts"] == dt.datetime(2025, 3, 4, 10, 21, 40, tzinfo=UTC)
    ev_b = _events(C01, tz="Europe/Berlin", reference_date="2025-03-05", host="g")
    assert ev_b.filter(line_no=3)["ts"].item() == dt.datetime(
        2025, 3, 4, 9, 15, 2, tzinfo=UTC
    )


@needs_cases
def test_ref_c01_missing_tz_and_reference_date_messages() -> None:
    """C01: zone-less lines 3/4 need --tz and --reference-date; the error names the
    file, the first line that needs it, and the fix."""
    with Store(":memory:") as store, pytest.raises(IngestError) as err:
        read_kernel(store, C01, host="g", reference_date="2025-03-05")
    assert err.value.line_no == 3
    assert "--tz ZONE" in str(err.value)
    assert str(C01) in str(err.value)
    with Store(":memory:") as store, pytest.raises(IngestError) as err:
        read_kernel(store, C01, host="g", tz="UTC")
    assert err.value.line_no == 4
    assert "--reference-date YYYY-MM-DD" in str(err.value)


@needs_cases
def test_ref_c01_accounting() -> None:
    """C01: 14 lines = 11 events (10 Xid + SXid) + 2 ignored + 1 rejected."""
    with Store(":memory:") as store:
        [r] = read_kernel(store, C01, tz="UTC", reference_date="2025-03-05", host="g")
        rej = store.table("rejects")
    assert (r.n_lines, r.n_loaded, r.n_ignored, r.n_rejected) == (14, 11, 2, 1)
    assert rej["line_no"].to_list() == [13]
    assert rej["raw"].item().endswith("abc, pid=2280636")


def test_recover_dmesg_without_host_asks_for_host(tmp_path: Path) -> None:
    """Issue 3 §1: a dmesg file has no host; the error asks for --host."""
    f = tmp_path / "dmesg.log"
    f.write_text("[ 1.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, off the bus\n")
    with Store(":memory:") as store, pytest.raises(IngestError, match="--host NAME"):
        read_kernel(store, f)


# -- C03 ----------------------------------------------------------------------------
@needs_cases
def test_ref_c03_storm_lines_modes_and_flags() -> None:
    """C03: 20 raw Xid lines (5×119 on 9b, 13, 12×45, 2×79) plus the no-Xid
    "fallen off the bus" on 61; RPC-history and rate-limit lines are not events;
    the 119s carry rate_limited."""
    ev = _events(C03, tz="UTC", host="node-c03")
    xid = ev.filter(pl.col("code").is_not_null())
    assert xid.height == 20
    counts = dict(xid.group_by("code").len().iter_rows())
    assert counts == {"119": 5, "13": 1, "45": 12, "79": 2}
    assert set(xid.filter(code="119")["device"]) == {"0000:9b:00"}
    assert set(xid.filter(code="119")["failure_mode"]) == {"gpu/gsp_firmware"}
    assert set(xid.filter(code="45")["failure_mode"]) == {"gpu/sympathetic"}
    assert xid.filter(code="13")["failure_mode"].item() == "gpu/application_error"
    assert all("rate_limited" in f for f in xid.filter(code="119")["flags"])
    assert xid.filter(pl.col("code") != "119")["flags"].is_null().all()
    fallen = ev.filter(pl.col("code").is_null())
    assert fallen.select("line_no", "device", "failure_mode").rows() == [
        (27, "0000:61:00", "gpu/fallen_off_bus")
    ]
    assert ev.height == 21
    assert not ev["line_no"].is_in([3, 4, 5, 6, 7, 10]).any()
    assert ev.filter(line_no=2)["ts"].item() == dt.datetime(
        2025, 2, 23, 16, 24, 18, tzinfo=UTC
    )


@needs_cases
def test_ref_c03_ignored_counts() -> None:
    """C03: 28 lines = 21 events + 7 ignored (map, 5 RPC-history, rate limit)."""
    with Store(":memory:") as store:
        [r] = read_kernel(store, C03, tz="UTC", host="n")
        ign = dict(store.table("ignored").select("reason", "n_lines").iter_rows())
    assert (r.n_lines, r.n_loaded, r.n_ignored, r.n_rejected) == (28, 21, 7, 0)
    assert ign == {"gpu_uuid_map": 1, "nvrm_context": 5, "rate_limit_notice": 1}


# -- C05 ----------------------------------------------------------------------------
@needs_cases
def test_ref_c05_link_events_per_port() -> None:
    """C05: 8 Link-down lines (the duplicate flagged), keyed (host, pci netdev);
    the cable event is network/cable_module; PCIe power is a warning; CRON ignored."""
    ev = _events(C05)
    down = ev.filter(failure_mode="network/link_down")
    assert down.height == 8
    assert down.filter(pl.col("flags") == "duplicate_line")["line_no"].to_list() == [3]
    assert down.filter(host="host-a")["device"].unique().to_list() == [
        "0000:5c:00 enp92s0np0"
    ]
    boot = ev.filter(host="host-c", failure_mode="network/link_up")
    assert boot["device"].item() == "0000:1d:00 enp29s0np0"
    assert ev.filter(host="host-b")["device"].item() == "0000:1d:00 enp29s0np0"
    power = ev.filter(failure_mode="network/pcie_power")
    assert (power["host"].item(), power["severity"].item()) == ("host-c", "warning")
    cable = ev.filter(failure_mode="network/cable_module")
    assert "High Temperature" in cable["detail"].item()
    assert ev.height == 17
    assert 18 not in ev["line_no"].to_list()


# -- NCCL, EDAC, MCE ----------------------------------------------------------------
def test_ref_nccl_edac_mce_snippet() -> None:
    """Issue 3 §2: NCCL status 12 in both formats, watchdog timeout, EDAC CE count 3,
    UE, MCE; decode lines ignored (tests/data/kernel_nccl_edac.log). Issue 10 §2:
    line 5 ("Machine check events logged") is a notice, not a failure; line 6's
    MCi_STATUS be00... has bit 61 (UC) set, so it stays host/mce."""
    ev = _events(DATA / "kernel_nccl_edac.log", host="gpu-7")
    modes = ev.select("line_no", "failure_mode", "count").rows()
    assert modes == [
        (1, "host/memory_ce", 3),
        (4, "host/memory_ue", 1),
        (5, "host/mce_notice", 1),
        (6, "host/mce", 1),
        (12, "network/nccl_error", 1),
        (13, "network/nccl_error", 1),
        (15, "network/nccl_watchdog", 1),
    ]
    assert ev.filter(line_no=1)["device"].item() == "mc0"
    assert "channel:1" in ev.filter(line_no=1)["detail"].item()
    assert ev.filter(line_no=12)["code"].item() == "wc_status:12"
    assert ev.filter(line_no=12)["device"].item() == "mlx5_0"
    assert set(ev["host"]) == {"gpu-7"}


# -- gpud fixtures ------------------------------------------------------------------
def test_ref_gpud_xid119_fixture() -> None:
    """gpud dmesg-with-xid-119.log: 5 Xid 119 on 0000:9b:00 (16:24:18–16:30:13), all
    rate-limited; RPC history and stack trace lines are not events."""
    ev = _events(GPUD / "dmesg-with-xid-119.log", tz="UTC", host="gpud")
    assert ev["code"].to_list() == ["119"] * 5
    assert set(ev["device"]) == {"0000:9b:00"}
    assert ev["line_no"].to_list() == [3, 38, 40, 42, 43]
    assert ev["ts"].min() == dt.datetime(2025, 2, 23, 16, 24, 18, tzinfo=UTC)
    assert ev["ts"].max() == dt.datetime(2025, 2, 23, 16, 30, 13, tzinfo=UTC)
    assert all("rate_limited" in f for f in ev["flags"])
    assert "uuid=GPU-509665ad-b600-ac93-3616-d754b23d636d" in ev["detail"][0]


def test_ref_gpud_xid13_xid43_excerpt() -> None:
    """gpud dmesg.decode.iso.log lines 1–17: 16× Xid 13 then Xid 43 on 0000:38:00,
    ISO with decimal comma; pid '<unknown>' is NULL (no pid= in detail)."""
    ev = _events(GPUD / "dmesg-xid13-xid43-excerpt.log", host="gpud")
    assert ev["code"].to_list() == ["13"] * 16 + ["43"]
    assert set(ev["device"]) == {"0000:38:00"}
    assert ev["ts"][0] == dt.datetime(2025, 1, 21, 4, 41, 44, 283302, tzinfo=UTC)
    assert "pid=" not in ev["detail"][0]
    assert "pid=2924364, name=pt_main_thread" in ev["detail"][16]


# -- times --------------------------------------------------------------------------
def test_ref_rfc3164_year_rollover() -> None:
    """Issue 3 §1: year-less syslog across New Year with reference date 2025-01-01:
    Dec 31 belongs to 2024, Jan 1 to 2025."""
    ev = _events(DATA / "kernel_rollover.log", tz="UTC", reference_date="2025-01-01")
    assert ev["ts"].to_list() == [
        dt.datetime(2024, 12, 31, 23, 59, 58, tzinfo=UTC),
        dt.datetime(2025, 1, 1, 0, 0, 3, tzinfo=UTC),
    ]


def test_ref_rfc3164_feb29_leap_year_only() -> None:
    """Issue 3 §1: Feb 29 is valid in 2024 (leap), rejected with a reason in 2025."""
    path = DATA / "kernel_feb29.log"
    ev = _events(path, tz="UTC", reference_date="2024-03-01")
    assert ev["ts"][1] == dt.datetime(2024, 2, 29, 12, 0, tzinfo=UTC)
    with Store(":memory:") as store:
        [r] = read_kernel(store, path, tz="UTC", reference_date="2025-03-01")
        rej = store.table("rejects")
    assert (r.n_loaded, r.n_ignored, r.n_rejected) == (1, 1, 1)
    assert rej["line_no"].item() == 2
    assert "Feb 29" in rej["reason"].item()


def test_ref_boot_anchor_and_reboot() -> None:
    """Issue 3 §1: a line with wall and kernel clock gives the boot time (10:21:40 −
    9912.004711 s); line 2 (9950 s) is 10:22:17.995289Z; after the clock falls back
    the anchor does not carry: line 4 has no wall time and is flagged reboot. The
    date inside the driver-load message is not taken."""
    ev = _events(
        DATA / "kernel_reboot.log", tz="UTC", reference_date="2025-03-05", host="host-a"
    )
    rows = {r["line_no"]: r for r in ev.iter_rows(named=True)}
    assert rows[2]["ts"] == dt.datetime(2025, 3, 4, 10, 22, 17, 995289, tzinfo=UTC)
    assert rows[2]["flags"] is None
    assert rows[4]["ts"] is None
    assert rows[4]["flags"] == "no_wall_time,reboot"


def test_ref_resolve_times_pure() -> None:
    """Issue 3 §1: ISO offsets (+01:00, +0000, Z) convert without tz."""
    lines = pl.Series(
        [
            "2025-03-04T10:22:31.5+01:00 h kernel: NVRM: Xid (PCI:0000:3b:00): 79",
            "2025-03-04T10:22:31+0000 h kernel: NVRM: Xid (PCI:0000:3b:00): 79",
            "2025-03-04T10:22:31Z h kernel: NVRM: Xid (PCI:0000:3b:00): 79",
        ]
    )
    out = resolve_times(classify_lines(lines))
    assert out["ts"].to_list() == [
        dt.datetime(2025, 3, 4, 9, 22, 31, 500000, tzinfo=UTC),
        dt.datetime(2025, 3, 4, 10, 22, 31, tzinfo=UTC),
        dt.datetime(2025, 3, 4, 10, 22, 31, tzinfo=UTC),
    ]


# -- files --------------------------------------------------------------------------
@needs_cases
def test_ref_gzip_and_directory_input(tmp_path: Path) -> None:
    """Issue 3 §1: plain or gzip files, and a directory of per-host files (host from
    the file name); each file is its own source."""
    d = tmp_path / "logs"
    d.mkdir()
    with gzip.open(d / "node-a.log.gz", "wb") as fh:
        fh.write(C03.read_bytes())
    shutil.copy(GPUD / "dmesg-xid13-xid43-excerpt.log", d / "node-b.log")
    with Store(":memory:") as store:
        res = read_kernel(store, d, tz="UTC", host_from_filename=True)
        ev = store.table("events")
        src = store.table("sources")
    assert [r.n_loaded for r in res] == [21, 17]
    assert set(ev["host"]) == {"node-a", "node-b"}
    assert src["n_ignored"].to_list() == [7, 0]
    with Store(":memory:") as store:
        read_kernel(store, d, tz="UTC", host_from_filename=True)
        again = read_kernel(store, d, tz="UTC", host_from_filename=True)
    assert all(r.skipped for r in again)


# -- safety -------------------------------------------------------------------------
_line = st.one_of(
    st.binary(max_size=120).map(lambda b: b.replace(b"\n", b" ")),
    st.sampled_from(
        [
            b"[ 12.5] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, off",
            b"[ 12.5] NVRM: Xid (PCI:0000:3b",
            b"Mar  4 10:21:40 h kernel: [ 99.1] NVRM: Xid (PCI:0000:5d:00): 43",
            b"2025-03-04T10:22:05+0000 h kernel: EDAC MC0: 3 CE err",
            b"\xff\xfe NVRM: Xid (PCI:0000:3b:00): 1\xc3",
            b"3,18822,74211,-;NVRM: Xid (PCI:0000:17:00): 48",
            b"",
        ]
    ),
)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(lines=st.lists(_line, max_size=30), cut=st.integers(0, 40))
def test_prop_random_lines_counted_once(
    tmp_path_factory: pytest.TempPathFactory, lines: list[bytes], cut: int
) -> None:
    """Issue 3 §4: random bytes, truncated and non-UTF-8 lines never crash ingest,
    and every line is counted exactly once (n_lines = loaded + ignored + rejected).
    Issue 10 §5: a file whose start is mostly random bytes is refused as binary
    (IngestError), exactly when binary_kind says so."""
    from relkit.ingest._kernel_read import binary_kind

    data = b"\n".join([b"# relkit property test", *lines])
    data = data[: len(data) - cut] if cut < len(data) else data
    f = tmp_path_factory.mktemp("prop") / "h.log"
    f.write_bytes(data)
    if binary_kind(data[: 1 << 16]) is not None:
        with Store(":memory:") as store, pytest.raises(IngestError, match="binary"):
            read_kernel(store, f, tz="UTC", reference_date="2025-03-05", host="h")
        return
    with Store(":memory:") as store:
        [r] = read_kernel(store, f, tz="UTC", reference_date="2025-03-05", host="h")
        n_rej = store.table("rejects").height
        n_ign = int(store.table("ignored")["n_lines"].sum())
    expected = data.count(b"\n") + (0 if data.endswith(b"\n") else 1)
    assert r.n_lines == expected
    assert r.n_lines == r.n_loaded + r.n_ignored + r.n_rejected
    assert (n_rej, n_ign) == (r.n_rejected, r.n_ignored)


# -- fast path (read_kernel) vs the full classifier ----------------------------------
_FIXTURES = [
    (C01, {"tz": "UTC", "reference_date": "2025-03-05", "host": "g"}),
    (C03, {"tz": "UTC", "host": "n"}),
    (C05, {}),
    (DATA / "kernel_nccl_edac.log", {"host": "gpu-7"}),
    (
        DATA / "kernel_reboot.log",
        {"tz": "UTC", "reference_date": "2025-03-05", "host": "host-a"},
    ),
    (DATA / "kernel_rollover.log", {"tz": "UTC", "reference_date": "2025-01-01"}),
    (DATA / "kernel_feb29.log", {"tz": "UTC", "reference_date": "2025-03-01"}),
    (GPUD / "dmesg-with-xid-119.log", {"tz": "UTC", "host": "gpud"}),
    (GPUD / "dmesg-xid13-xid43-excerpt.log", {"host": "gpud"}),
]


@pytest.mark.parametrize(
    ("path", "kw"), _FIXTURES, ids=lambda v: getattr(v, "name", "")
)
def test_ref_fast_path_equals_full_parse(path: Path, kw: dict[str, str]) -> None:
    """read_kernel's fast path (keyword prefilter, clocks only for boots) gives the
    same events, rejects and ignored counts as classifying and timing every line."""
    if not path.exists():
        pytest.skip("fixture absent")
    from polars.testing import assert_frame_equal

    from relkit.ingest import kernel
    from relkit.ingest._kernel_time import parse_reference_date

    opts = {
        "tz": kw.get("tz"),
        "ref": parse_reference_date(path, kw.get("reference_date")),
        "host": kw.get("host"),
    }
    fast = kernel._parse(path, **opts)
    full = kernel._parse(path, full=True, **opts)
    assert fast.n_lines == full.n_lines
    assert_frame_equal(fast.events, full.events)
    assert_frame_equal(fast.rejects, full.rejects)
    assert_frame_equal(fast.ignored, full.ignored)


_ISO_STAMPS = [
    "2025-03-04T10:22:05+0000",
    "2025-03-04 10:22:05.5Z",
    "2025-03-04T10:22:05",
]
_HEADERS = st.one_of(
    st.builds(
        lambda p, m: f"{p}[{m}] ",
        st.sampled_from(["", "<4>", "<12>"]),  # dmesg -r: priority, then clock
        st.sampled_from(["  12.5", "1.000001", "9912.0"]),
    ),
    st.builds(  # syslog without a host field (issue 10 §3)
        lambda p, ts, tag, m: f"{p}{ts} {tag}{m}",
        st.sampled_from(["", "<6>"]),
        st.sampled_from([*_ISO_STAMPS, "Mar  4 10:21:40", "Feb 23 03:28:16"]),
        st.sampled_from(["kernel: ", "systemd[1]: ", "h: a: "]),
        st.sampled_from(["", "[ 99.1] ", "[12.5]", "[ 1] "]),
    ),
    st.builds(
        lambda p, ts, h, tag, m: f"{p}{ts} {h} {tag}{m}",
        st.sampled_from(["", "<6>"]),
        st.sampled_from([*_ISO_STAMPS, "Mar  4 10:21:40", "Dec 31 23:59:59"]),
        st.sampled_from(["host-a", "n7", "[x]", "h:"]),
        st.sampled_from(["", "kernel: ", "sshd[12]: ", "a: b: "]),
        st.sampled_from(["", "[ 99.1] ", "[12.5]", "[ 1] "]),
    ),
    st.builds(
        lambda p, ts, m: f"{p}{ts} {m}",
        st.sampled_from(["", "kern  :info  : "]),
        st.sampled_from(_ISO_STAMPS),
        st.sampled_from(["", "[  5.25] ", "[5.25]"]),
    ),
    st.builds(lambda us: f"6,1234,{us},-;", st.integers(0, 10**12)),
    st.sampled_from(["", "[Tue Mar  4 10:15:02 2025] ", "- 1117838570 2005.06.03 "]),
)
_MESSAGES = st.sampled_from(
    [
        "NVRM: Xid (PCI:0000:3b:00): 79, pid=1, off",
        "gpu-7:1234:5690 [3] NCCL WARN Got completion with error 12",
        "node9:1:2 [0] hello [ 3.5] there",
        "CRON[5]: (root) CMD (true) [ 7.25]",
        "",
    ]
)


@settings(max_examples=300, deadline=None)
@given(head=_HEADERS, msg=_MESSAGES)
def test_prop_clock_lines_agree_with_framing(head: str, msg: str) -> None:
    """The cheap clock test/extraction of the fast path agrees with the full framing
    regex on which lines carry a kernel clock, its value and the line's host."""
    from relkit.ingest import _kernel_patterns as kp
    from relkit.ingest import kernel

    raw = pl.Series([head + msg])
    full = kernel.split_framing(raw).row(0, named=True)
    has_clock = bool(raw.str.contains(kp.CLOCK)[0])
    assert has_clock == (full["mono_s"] is not None)
    if has_clock:
        cheap = kernel._clock_lines(raw, pl.Series([1]), None).row(0, named=True)
        assert cheap["mono"] == full["mono_s"]
        assert cheap["hkey"] == (full["host"] or "")
        assert cheap["walled"] == (full["wall"] is not None)


@settings(max_examples=60, deadline=None)
@given(data=st.lists(_line, max_size=40))
def test_prop_fast_split_equals_exact_split(data: list[bytes]) -> None:
    """The CSV-reader split of a block equals the exact decode-and-split."""
    from relkit.ingest import _kernel_read

    block = b"\n".join([*data, b""])
    if not block:
        return
    exact = block.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    expected = [s.removesuffix("\r") for s in exact.split("\n")[:-1]]
    assert _kernel_read.split_block(block).to_list() == expected


def test_ref_no_signal_lines_need_no_time(tmp_path: Path) -> None:
    """Fast path (documented change): lines without a failure keyword are counted as
    no_signal without parsing their time, so a zone-less, year-less syslog without
    signals needs neither --tz nor --reference-date, and an invalid date in such a
    line is no reject."""
    f = tmp_path / "quiet.log"
    f.write_text(
        "Feb 29 12:00:00 node9 CRON[5]: (root) CMD (true)\n"
        "Mar  1 00:00:01 node9 sshd[7]: Accepted publickey for root\n"
        "\n"
    )
    with Store(":memory:") as store:
        [r] = read_kernel(store, f)
        ign = dict(store.table("ignored").select("reason", "n_lines").iter_rows())
    assert (r.n_lines, r.n_loaded, r.n_ignored, r.n_rejected) == (3, 0, 3, 0)
    assert ign == {"blank": 1, "no_signal": 2}


def test_broken_clocks_are_rejected_or_kept_without_time(tmp_path: Path) -> None:
    """Year 10000 and year 1 stamps are an unset/broken clock: rejected with the
    reason; a dmesg clock of 1e20 s gives no wall time (kept, flagged), never a
    crash. Found by a break-it review."""
    log = tmp_path / "edge.log"
    log.write_text(
        "9999-12-31T23:59:59-1400 h kernel: NVRM: Xid (PCI:0000:3b:00): 79, x\n"
        "0001-01-01T00:00:00+1400 h kernel: NVRM: Xid (PCI:0000:3b:00): 79, x\n"
        "2025-01-01T00:00:00+0000 h kernel: NVRM: Xid (PCI:0000:3b:00): 79, x\n"
        "[99999999999999999999.000000] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, x\n"
    )
    with Store(":memory:") as store:
        (r,) = read_kernel(store, log, host="h")
        rejects = store.table("rejects")
        events = store.table("events").sort("line_no")
    assert (r.n_lines, r.n_loaded, r.n_rejected) == (4, 2, 2)
    assert rejects["line_no"].to_list() == [1, 2]
    assert rejects["reason"].str.contains("outside 1970-2199").all()
    assert events["flags"].to_list() == [None, "no_wall_time"]


def test_directory_tree_and_rotated_logs_share_the_host(tmp_path: Path) -> None:
    """Rotated files (gpu017.log, .log.1, .log.2.gz) are one host; subdirectories
    are read too; documentation files are skipped."""
    line = "[Sun Feb 23 16:24:18 2025] NVRM: Xid (PCI:0000:9b:00): 79, x\n"
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "gpu017.log").write_text(line)
    (tmp_path / "gpu017.log.1").write_text(line.replace("16:24", "15:24"))
    (tmp_path / "a" / "gpu017.log.2.gz").write_bytes(
        gzip.compress(line.replace("16:24", "14:24").encode())
    )
    (tmp_path / "a" / "b" / "gpu018.log").write_text(line.replace("16:24", "13:24"))
    (tmp_path / "README.md").write_text("Xid (PCI:0000:9b:00): 79 in prose\n")
    with Store(":memory:") as store:
        results = read_kernel(store, tmp_path, tz="UTC", host_from_filename=True)
        hosts = store.table("events")["host"].to_list()
    assert len(results) == 4
    assert sorted(hosts) == ["gpu017", "gpu017", "gpu017", "gpu018"]


@needs_cases
def test_ref_c05_log_end_is_the_last_line_time() -> None:
    """C05: the log's observation ends at its last line (host-b's CRON line at
    2025-05-02T12:00:00Z, which names no failure), not at the last event (the
    11:30 Link down), so an open incident's down time can run to 12:00."""
    with Store(":memory:") as store:
        read_kernel(store, C05)
        opts = store.table("sources").get_column("options").to_list()
    assert '"log_end_ts": "2025-05-02T12:00:00+00:00"' in opts[0]


def test_log_end_from_a_boot_anchor_and_a_kernel_clock(tmp_path: Path) -> None:
    """A last line with only a kernel clock ends the log at its boot's anchor +
    clock. Hand computation for tests/data/kernel_reboot.log: line 1 anchors the
    first boot, 10:21:40 local (UTC) - 9912.004711 s; the clock then falls back
    (line 3), a new boot with no walled line, so line 4 has no time and the log
    end is None. Dropping the reboot lines, line 2's [9950.0] gives
    10:21:40 + (9950 - 9912.004711) s = 10:22:17.995289Z."""
    lines = (DATA / "kernel_reboot.log").read_text().splitlines()
    with Store(":memory:") as store:
        read_kernel(
            store,
            DATA / "kernel_reboot.log",
            tz="UTC",
            reference_date="2025-03-05",
            host="host-a",
        )
        opts = store.table("sources").get_column("options").to_list()
    assert "log_end_ts" not in opts[0]
    short = tmp_path / "host-a.log"
    short.write_text("\n".join(lines[:2]) + "\n\n")
    with Store(":memory:") as store:
        read_kernel(store, short, tz="UTC", reference_date="2025-03-05", host="host-a")
        opts = store.table("sources").get_column("options").to_list()
    assert '"log_end_ts": "2025-03-04T10:22:17.995289+00:00"' in opts[0]
