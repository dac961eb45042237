"""Tests of relkit.ingest.nvsmi: ``nvidia-smi -q`` snapshots (case C06).

Expected values come from shared/cases/README.md, case C06 ("``nvidia-smi -q``
ECC and row-remap blocks"). The C06 input is kept in tests/data as four
snippets (``nvsmi_c06_[a-d]_*.txt``, lines 1-39, 40-70, 71-109, 110-140 of
shared/cases/C06-nvidia-smi-ecc-remap.txt) whose concatenation is that file.
"""

import gzip
import re
import tempfile
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_paths import SHARED

from relkit.errors import IngestError
from relkit.ingest.nvsmi import (
    normalize_pci,
    nvsmi_events,
    parse_nvsmi,
    read_nvsmi,
)
from relkit.store import Store

DATA = Path(__file__).parent / "data"
SHARED_C06 = SHARED / "cases" / "C06-nvidia-smi-ecc-remap.txt"
C06_PARTS = sorted(DATA.glob("nvsmi_c06_*.txt"))
C06 = "".join(p.read_text() for p in C06_PARTS)
H100 = (DATA / "nvsmi_h100_remap_failure.txt").read_text()
MALFORMED = DATA / "nvsmi_malformed_counter.txt"


def _set(text: str, line_no: int, value: str) -> str:
    """Replace the value after ``:`` on one line (1-based) of nvidia-smi text."""
    lines = text.split("\n")
    key, _, _ = lines[line_no - 1].partition(":")
    lines[line_no - 1] = f"{key}: {value}"
    return "\n".join(lines)


def _c06_third_block(*, dram_ue_1c: int) -> str:
    """C06's second block again at 14:00, with 1c's aggregate DRAM UE set.

    Lines 71-140 of C06 are the 12:00 block; its line 54 (1c aggregate DRAM
    Uncorrectable, line 124 of the file) is set to ``dram_ue_1c``.
    """
    block = "".join(p.read_text() for p in C06_PARTS[2:])
    block = block.replace("Mon Jun  9 12:00:00 2025", "Mon Jun  9 14:00:00 2025")
    return _set(block, 124 - 70, str(dram_ue_1c))


@pytest.fixture
def c06_file(tmp_path: Path) -> Path:
    path = tmp_path / "C06-nvidia-smi-ecc-remap.txt"
    path.write_text(C06)
    return path


@pytest.fixture
def c06_snapshots() -> pl.DataFrame:
    return parse_nvsmi(C06, tz="UTC")


@pytest.fixture
def c06_events(c06_snapshots: pl.DataFrame) -> pl.DataFrame:
    return nvsmi_events(c06_snapshots, host="node1")


# -- C06 ------------------------------------------------------------------------------
def test_ref_c06_snippets_are_the_case_input() -> None:
    """The four snippets concatenate to shared/cases/C06 byte for byte (140 lines)."""
    assert len(C06_PARTS) == 4
    assert C06.count("\n") == 140
    if not SHARED_C06.exists():
        pytest.skip("shared/cases is not available")
    assert SHARED_C06.read_text() == C06


def test_ref_c06_pci_normalised(c06_snapshots: pl.DataFrame) -> None:
    """C06: per GPU the PCI is normalised to 0000:1b:00 / 0000:1c:00 (joins C01)."""
    assert c06_snapshots["device"].to_list() == [
        "0000:1b:00",
        "0000:1c:00",
        "0000:1b:00",
        "0000:1c:00",
    ]
    assert c06_snapshots["line_no"].to_list() == [9, 40, 79, 110]
    assert c06_snapshots["block_no"].to_list() == [1, 1, 2, 2]
    assert normalize_pci("00000000:1B:00.0") == "0000:1b:00"


def test_ref_c06_retired_pages_null(c06_snapshots: pl.DataFrame) -> None:
    """C06: ``Retired Pages`` values (N/A) are NULL, not 0 and not an error."""
    for col in ("n_retired_sbe_pages", "n_retired_dbe_pages", "is_retirement_pending"):
        assert c06_snapshots[col].null_count() == 4, col


def test_ref_c06_remap_pending_values(c06_snapshots: pl.DataFrame) -> None:
    """C06: the four remap-pending values are [No, Yes, No, No]; grep finds 12.

    ``ECC Mode -> Pending : Enabled`` and ``Pending Page Blacklist`` are not remap
    flags.
    """
    naive = [line for line in C06.splitlines() if "Pending" in line]
    assert len(naive) == 12
    assert c06_snapshots["is_remap_pending"].to_list() == [False, True, False, False]


def test_ref_c06_no_new_uncorrectable(
    c06_snapshots: pl.DataFrame, c06_events: pl.DataFrame
) -> None:
    """C06: new UEs between the snapshots are 0 for both GPUs.

    They come from the aggregate delta (1c: 3 -> 3), not the volatile delta
    (1 -> 0 = -1).
    """
    one_c = c06_snapshots.filter(device="0000:1c:00")
    assert one_c["n_aggregate_dram_ue"].to_list() == [3, 3]
    assert one_c["n_volatile_dram_ue"].to_list() == [1, 0]
    ue = c06_events.filter(pl.col("failure_mode").str.ends_with("_uncorrectable"))
    assert ue.height == 0


def test_ref_c06_volatile_drop_is_counter_reset(c06_events: pl.DataFrame) -> None:
    """C06: a volatile drop is a counter reset for both GPUs; no negative counts.

    1b: volatile DRAM Correctable 12 -> 0 (line 87); 1c: volatile DRAM
    Uncorrectable 1 -> 0 (line 119); both at the 12:00 snapshot.
    """
    resets = c06_events.filter(failure_mode="gpu/counter_reset")
    assert resets["device"].to_list() == ["0000:1b:00", "0000:1c:00"]
    assert resets["line_no"].to_list() == [87, 119]
    assert all("counter_reset" in f.split(",") for f in resets["flags"])
    assert resets["severity"].to_list() == ["info", "info"]
    assert (c06_events["count"] >= 1).all()
    assert c06_events.height == 3  # + 1c's pending remap at 10:00 (line 62)
    assert set(c06_events["host"]) == {"node1"}


def test_ref_c06_remap_resolved_by_reset(c06_events: pl.DataFrame) -> None:
    """C06: 1c's pending remap (Yes at 10:00, No at 12:00) is "resolved by reset"."""
    resets = c06_events.filter(failure_mode="gpu/counter_reset")
    one_c = resets.filter(device="0000:1c:00").row(0, named=True)
    assert "remap_resolved" in one_c["flags"].split(",")
    assert "remap resolved by reset" in one_c["detail"]
    one_b = resets.filter(device="0000:1b:00").row(0, named=True)
    assert "remap_resolved" not in one_b["flags"]


def test_ref_c06_no_rma_signal(
    c06_snapshots: pl.DataFrame, c06_events: pl.DataFrame
) -> None:
    """C06: ``Remapping Failure Occurred`` is No throughout, so no RMA signal."""
    assert c06_snapshots["is_remap_failure"].to_list() == [False] * 4
    assert c06_events.filter(failure_mode="gpu/row_remap_failure").height == 0


def test_ref_c06_timestamp_needs_tz(c06_file: Path) -> None:
    """C06: the snapshot ``Timestamp`` has no zone; without tz the error names the
    file, line 4 and the fix ``--tz ZONE``."""
    store = Store(":memory:")
    with pytest.raises(IngestError, match=r"--tz ZONE") as info:
        read_nvsmi(store, c06_file, host="n1")
    assert info.value.line_no == 4
    assert info.value.path == str(c06_file)
    assert "Mon Jun  9 10:00:00 2025" in str(info.value)
    assert store.table("sources").height == 0
    with pytest.raises(IngestError, match=r"^<nvsmi>:4: .*--tz ZONE"):
        parse_nvsmi(C06)


def test_ref_c06_times_with_tz(c06_snapshots: pl.DataFrame) -> None:
    """C06 snapshots at 10:00 and 12:00 are 10:00 / 12:00 UTC with tz="UTC".

    With tz="Europe/Berlin" (CEST, UTC+2 on 9 June 2025) they are 08:00 / 10:00.
    """
    assert c06_snapshots["snapshot_ts"].unique(maintain_order=True).to_list() == [
        datetime(2025, 6, 9, 10, tzinfo=UTC),
        datetime(2025, 6, 9, 12, tzinfo=UTC),
    ]
    berlin = parse_nvsmi(C06, tz="Europe/Berlin")
    assert berlin["snapshot_ts"].dt.hour().to_list() == [8, 8, 10, 10]


def test_ref_c06_every_line_accounted(c06_file: Path) -> None:
    """C06 (140 lines): 3 events (2 counter resets at 12:00, 1c's pending remap at
    10:00) + 137 ignored snapshot lines + 0 rejected."""
    store = Store(":memory:")
    result = read_nvsmi(store, c06_file, tz="UTC", host="node1")
    assert (result.n_lines, result.n_loaded, result.n_ignored, result.n_rejected) == (
        140,
        3,
        137,
        0,
    )
    assert result.kind == "nvsmi"
    ignored = store.table("ignored")
    assert ignored.select("reason", "n_lines").rows() == [("nvsmi snapshot line", 137)]
    source = store.table("sources").row(0, named=True)
    assert (source["n_lines"], source["n_loaded"], source["n_ignored"]) == (140, 3, 137)
    assert store.table("events").height == 3
    assert store.table("events")["count"].to_list() == [1, 1, 1]
    assert store.table("gpu_snapshots").height == 4
    assert result.note.startswith("4 snapshot(s) of 2 GPU(s), ECC counters SRAM/DRAM")


# -- beyond C06 -----------------------------------------------------------------------
def test_ref_third_snapshot_new_uncorrectable() -> None:
    """C06 plus a synthetic 14:00 snapshot with 1c aggregate DRAM UE 3 -> 5.

    Gives one ``gpu/hbm_uncorrectable`` event with count 2 at line 194 (= 124 + 70),
    14:00 UTC, and no other new event in that interval.
    """
    text = C06 + _c06_third_block(dram_ue_1c=5)
    events = nvsmi_events(parse_nvsmi(text, tz="UTC"))
    ue = events.filter(failure_mode="gpu/hbm_uncorrectable")
    assert ue.select("device", "line_no", "count").rows() == [("0000:1c:00", 194, 2)]
    assert ue["ts"].to_list() == [datetime(2025, 6, 9, 14, tzinfo=UTC)]
    assert events.filter(pl.col("line_no") > 140).height == 1


def test_ref_aggregate_drop_is_a_reset_not_negative() -> None:
    """An aggregate count that falls (3 -> 0: inforom cleared or GPU replaced) is a
    counter reset flagged ``aggregate_reset``, never a negative count."""
    text = C06 + _c06_third_block(dram_ue_1c=0)
    events = nvsmi_events(parse_nvsmi(text, tz="UTC")).filter(pl.col("line_no") > 140)
    assert events.select("failure_mode", "line_no").rows() == [
        ("gpu/counter_reset", 194)
    ]
    assert "aggregate_reset" in events["flags"][0]
    assert (events["count"] >= 1).all()


def test_ref_first_snapshot_is_baseline() -> None:
    """C06's first block alone (1c: aggregate DRAM UE 3, pending remap) is the
    baseline: absolute counts are not new events; only the pending remap, a
    standing state, is (line 62 = 39 + 23, C06_PARTS[1] line 23)."""
    first = "".join(p.read_text() for p in C06_PARTS[:2])
    events = nvsmi_events(parse_nvsmi(first, tz="UTC"))
    assert events.select("line_no", "failure_mode", "severity", "flags").rows() == [
        (62, "gpu/precursor", "warning", "remap_pending")
    ]


def test_ref_h100_sram_and_rma_signal() -> None:
    """nvsmi_h100_remap_failure.txt (H100 layout: SRAM Uncorrectable Parity /
    SEC-DED split): ``Remapping Failure Occurred: Yes`` (line 42) is an RMA
    signal in the first snapshot; a second snapshot with aggregate SEC-DED 1 -> 3
    (line 24 -> 74) gives one SRAM event of count 2 and no second RMA event."""
    snaps = parse_nvsmi(H100, tz="UTC")
    cols = ["device", "n_aggregate_sram_ue_secded", "n_aggregate_sram_ue"]
    assert snaps.select(*cols, "is_remap_failure").rows() == [
        ("0000:c3:00", 1, None, True)
    ]
    first = nvsmi_events(snaps)
    assert first.select("failure_mode", "line_no", "severity", "flags").rows() == [
        ("gpu/row_remap_failure", 42, "critical", "rma_signal")
    ]
    second = _set(H100.replace("08:30:00", "09:30:00"), 24, "3")
    events = nvsmi_events(parse_nvsmi(H100 + second, tz="UTC"))
    assert events.select("failure_mode", "line_no", "count").rows() == [
        ("gpu/row_remap_failure", 42, 1),
        ("gpu/sram_uncorrectable", 74, 2),
    ]


def test_ref_malformed_counter_rejected() -> None:
    """nvsmi_malformed_counter.txt: ``DRAM Correctable : abc`` (line 18) and the
    shell prompt before the banner (line 1) are rejected with line and reason; the
    value is null in the snapshot; 25 lines = 0 events + 23 ignored + 2 rejected."""
    store = Store(":memory:")
    result = read_nvsmi(store, MALFORMED, tz="UTC", host="n1")
    assert (result.n_lines, result.n_loaded, result.n_ignored, result.n_rejected) == (
        25,
        0,
        23,
        2,
    )
    rejects = store.table("rejects")
    assert rejects["line_no"].to_list() == [1, 18]
    assert "outside an NVSMI LOG block" in rejects["reason"][0]
    assert "'abc'" in rejects["reason"][1]
    assert "DRAM Correctable" in rejects["reason"][1]
    assert rejects["raw"][1].strip() == "DRAM Correctable              : abc"
    snaps = parse_nvsmi(MALFORMED.read_text(), tz="UTC")
    assert snaps["n_volatile_dram_ce"].to_list() == [None]
    assert snaps["n_aggregate_dram_ce"].to_list() == [40]
    assert snaps["is_remap_pending"].to_list() == [None]  # -d ECC: no Remapped Rows


def test_ref_skip_refuse_replace(c06_file: Path) -> None:
    """Same bytes are skipped; a changed file is refused; replace re-reads it."""
    store = Store(":memory:")
    read_nvsmi(store, c06_file, tz="UTC", host="n1")
    assert read_nvsmi(store, c06_file, tz="UTC", host="n1").skipped
    c06_file.write_text(C06 + _c06_third_block(dram_ue_1c=5))
    with pytest.raises(IngestError, match="--replace"):
        read_nvsmi(store, c06_file, tz="UTC", host="n1")
    result = read_nvsmi(store, c06_file, tz="UTC", host="n1", replace=True)
    assert result.replaced == (1,)
    assert store.table("events").height == 4
    assert store.table("ignored")["n_lines"].to_list() == [210 - 4]
    assert store.table("sources")["source_id"].to_list() == [2]


def test_ref_gzip_and_not_nvsmi(tmp_path: Path) -> None:
    """A gzip file reads as its text; a file without the NVSMI LOG banner (a kernel
    log line) is refused with a pointer to --kind kernel."""
    gz = tmp_path / "smi.txt.gz"
    gz.write_bytes(gzip.compress(C06.encode()))
    assert read_nvsmi(Store(":memory:"), gz, tz="UTC", host="n1").n_loaded == 3
    kern = tmp_path / "kern.log"
    kern.write_text("[  5.1] NVRM: Xid (PCI:0000:1b:00): 79, GPU has fallen off\n")
    with pytest.raises(IngestError, match="--kind kernel"):
        read_nvsmi(Store(":memory:"), kern, tz="UTC", host="n1")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    junk=st.lists(
        st.one_of(
            st.text(max_size=40),
            st.sampled_from(
                [
                    "            DRAM Uncorrectable            : 7",
                    "            DRAM Uncorrectable            : x1",
                    "        Pending                           : Maybe",
                    "GPU 00000000:1D:00.0",
                    "GPU bogus",
                    "==============NVSMI LOG==============",
                    "Timestamp : Mon Jun  9 13:00:00 2025",
                    "Timestamp : not a time",
                ]
            ),
        ),
        max_size=12,
    ),
    at=st.integers(0, 140),
)
def test_prop_every_line_counted_once(junk: list[str], at: int) -> None:
    """Random lines inserted anywhere in C06 never crash ingest, and every line is
    counted exactly once: n_lines = n_loaded + n_ignored + n_rejected. (A NUL byte
    makes the whole file binary, refused by design: test_binary_file_refused.)"""
    lines = C06.split("\n")[:-1]
    junk = [
        re.sub(r"[\x00\r\n\x0b\x0c\x1c-\x1e\x85\u2028\u2029]", " ", j) for j in junk
    ]
    text = "\n".join(lines[:at] + junk + lines[at:]) + "\n"
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "smi.txt"
        path.write_bytes(text.encode("utf-8", errors="replace"))
        store = Store(":memory:")
        r = read_nvsmi(store, path, tz="UTC", host="n1")
        assert r.n_lines == len(lines) + len(junk)
        assert r.n_lines == r.n_loaded + r.n_ignored + r.n_rejected
        assert store.table("rejects").height == r.n_rejected
        assert (store.table("events")["count"] >= 1).all()


def test_binary_file_refused(tmp_path: Path) -> None:
    """A NUL byte marks the file as binary: refused whole, with the expected format."""
    path = tmp_path / "smi.txt"
    path.write_bytes(C06.encode() + b"\x00\n")
    with pytest.raises(IngestError, match="binary"):
        read_nvsmi(Store(":memory:"), path, tz="UTC")


def test_host_is_required(tmp_path: Path) -> None:
    """nvidia-smi -q never prints the host; events without one could not join."""
    path = tmp_path / "smi.txt"
    path.write_text(C06)
    with pytest.raises(IngestError, match="--host NAME"):
        read_nvsmi(Store(":memory:"), path, tz="UTC")


def test_counter_beyond_int64_is_rejected(tmp_path: Path) -> None:
    """A counter of 10**26 cannot be a real count: a reject with its line."""
    path = tmp_path / "smi.txt"
    path.write_text(
        C06.replace(
            "DRAM Uncorrectable            : 3",
            "DRAM Uncorrectable            : " + "9" * 26,
            1,
        )
    )
    store = Store(":memory:")
    r = read_nvsmi(store, path, tz="UTC", host="n1")
    assert r.n_rejected == 1
    assert "2**63" in store.table("rejects")["reason"][0]
