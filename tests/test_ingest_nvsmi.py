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

from relkit.cli import main
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


# -- issue 10 §4: the V100 layout, standing states, snapshots across files ----------
V100_T10 = DATA / "nvsmi_v100_gpu01-2025-06-01T10.txt"
V100_T11 = DATA / "nvsmi_v100_gpu01-2025-06-01T11.txt"
#: The events T11 makes after T10 (lines of the T11 file, 61 lines each; counted
#: in the fixture): SBE Device Memory 3 -> 5 (line 37), DBE Device Memory 0 -> 1
#: (line 46), DBE Register File 0 -> 1 (line 47), Pending Page Blacklist Yes (57).
V100_EVENTS = [
    (37, "gpu/precursor", "warning", 2, "ecc_corrected"),
    (46, "gpu/hbm_uncorrectable", "error", 1, None),
    (47, "gpu/sram_uncorrectable", "error", 1, None),
    (57, "gpu/precursor", "warning", 1, "retirement_pending"),
]
_EV_COLS = ["line_no", "failure_mode", "severity", "count", "flags"]


def _v100_copy(tmp_path: Path) -> tuple[Path, Path]:
    """The two V100 snapshots as one host's collection files, named as gathered."""
    t10 = tmp_path / "gpu01-2025-06-01T10.txt"
    t11 = tmp_path / "gpu01-2025-06-01T11.txt"
    t10.write_text(V100_T10.read_text())
    t11.write_text(V100_T11.read_text())
    return t10, t11


def test_v100_layout_is_read() -> None:
    """The V100 layout (Single/Double Bit per memory structure) fills its columns:
    T11 by hand: aggregate DBE Device Memory 1, Register File 1, Total 2, Texture
    Memory N/A (null); SBE Device Memory 5; retired pages 1 / 1, pending Yes;
    ``Remapped Rows : N/A`` leaves the remap flags null."""
    snap = parse_nvsmi(V100_T11.read_text(), tz="UTC").row(0, named=True)
    assert snap["device"] == "0000:1a:00"
    assert snap["n_aggregate_dbe_device_memory"] == 1
    assert snap["n_aggregate_dbe_register_file"] == 1
    assert snap["n_aggregate_dbe_total"] == 2
    assert snap["n_aggregate_dbe_texture_memory"] is None
    assert snap["n_aggregate_sbe_device_memory"] == 5
    assert snap["n_volatile_dbe_device_memory"] == 1
    assert (snap["n_retired_sbe_pages"], snap["n_retired_dbe_pages"]) == (1, 1)
    assert snap["is_retirement_pending"] is True
    assert snap["is_remap_pending"] is None
    assert snap["n_aggregate_dram_ue"] is None  # not the Ampere layout
    assert snap["field_line_no"]["n_aggregate_dbe_device_memory"] == 46


def test_v100_double_bit_events_within_a_file() -> None:
    """T10 then T11 as one ``nvidia-smi -l`` file (lines of T11 + 61): the DBE in
    Device Memory is an HBM uncorrectable event, in the Register File an SRAM one;
    the SBE rise is a corrected-error warning (count 2 = 5 - 3); the pending page
    retirement a warning; the Total line makes no event of its own."""
    text = V100_T10.read_text() + V100_T11.read_text()
    events = nvsmi_events(parse_nvsmi(text, tz="UTC"), host="gpu01")
    expected = [(line + 61, *rest) for line, *rest in V100_EVENTS]
    assert events.select(_EV_COLS).rows() == expected
    assert events["ts"].unique().to_list() == [datetime(2025, 6, 1, 11, tzinfo=UTC)]
    assert "Double Bit / Device Memory: 0 -> 1 (+1)" in events["detail"][1]


def test_v100_first_snapshot_alone_has_no_ecc_events() -> None:
    """T10 alone: its counts (SBE 3) are from before observation, pending No: no
    event. T11 alone: only its standing state, the pending retirement (line 57)."""
    assert nvsmi_events(parse_nvsmi(V100_T10.read_text(), tz="UTC")).height == 0
    events = nvsmi_events(parse_nvsmi(V100_T11.read_text(), tz="UTC"))
    assert events.select(_EV_COLS).rows() == [V100_EVENTS[-1]]


def test_retired_pages_pending_older_driver_key() -> None:
    """Older drivers print ``Retired Pages → Pending : Yes``; it is the same flag."""
    text = V100_T11.read_text().replace(
        "Pending Page Blacklist    ", "Pending" + " " * 19
    )
    assert "        Pending                           : Yes" in text
    snap = parse_nvsmi(text, tz="UTC")
    assert snap["is_retirement_pending"].to_list() == [True]


@pytest.mark.parametrize("order", ["in_time_order", "reversed"])
def test_v100_files_compared_across_ingests(tmp_path: Path, order: str) -> None:
    """One host's two collection files ingested one by one into a store on disk
    (separate Store opens, as separate ``relkit ingest`` runs): T11's source holds
    the four events of V100_EVENTS at its own lines, whatever the order. In reverse
    order, T11 first has only its pending retirement; ingesting T10 derives T11's
    events again and updates its counts (n_loaded 4, n_ignored 61 - 4)."""
    t10, t11 = _v100_copy(tmp_path)
    db = tmp_path / "s.duckdb"
    paths = [t10, t11] if order == "in_time_order" else [t11, t10]
    results = []
    for path in paths:
        with Store(db) as store:
            results.append(read_nvsmi(store, path, tz="UTC", host="gpu01"))
    with Store(db, read_only=True) as store:
        sources = store.table("sources")
        events = store.table("events")
    sid = {Path(p).name: s for s, p in sources.select("source_id", "path").rows()}
    mine = events.filter(source_id=sid[t11.name]).sort("line_no")
    assert mine.select(_EV_COLS).rows() == V100_EVENTS
    assert events.filter(source_id=sid[t10.name]).height == 0
    row = sources.filter(source_id=sid[t11.name]).row(0, named=True)
    assert (row["n_lines"], row["n_loaded"], row["n_ignored"]) == (61, 4, 57)
    assert "compared with 1 snapshot(s) of host gpu01" in results[1].note
    if order == "reversed":
        assert results[0].n_loaded == 1  # alone: the pending retirement only
        assert f"events of source(s) {sid[t11.name]} derived again" in results[1].note
        assert t10.name in mine["detail"][0]


def test_v100_files_any_order_on_one_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``relkit ingest --kind nvsmi T11 T10`` (later file first): the store ends with
    T11's four events (V100_EVENTS), as in time order; the summary says what each
    file held and that T11's events were derived again."""
    t10, t11 = _v100_copy(tmp_path)
    db = tmp_path / "cli.duckdb"
    argv = ["ingest", "--db", str(db), "--kind", "nvsmi", "--tz", "UTC"]
    assert main([*argv, "--host", "gpu01", str(t11), str(t10)]) == 0
    err = capsys.readouterr().err
    assert "1 snapshot(s) of 1 GPU(s), ECC counters Single/Double Bit" in err
    assert "derived again" in err
    with Store(db, read_only=True) as store:
        events = store.table("events").sort("line_no")
    assert events.select(_EV_COLS).rows() == V100_EVENTS


def test_counter_drop_between_files_is_a_reset(tmp_path: Path) -> None:
    """A third file at 12:00 after a reboot: volatile DBE Device Memory 1 -> 0
    (line 27 is its first fallen counter) and the pending page retired (Yes -> No):
    one counter_reset info event, flags counter_reset and retirement_resolved."""
    t10, t11 = _v100_copy(tmp_path)
    text = t11.read_text().replace("11:00:00", "12:00:00")
    for line in (18, 27, 28):  # volatile counts back to 0 after the reset
        text = _set(text, line, "0")
    text = _set(_set(_set(text, 25, "0"), 34, "0"), 57, "No")
    t12 = tmp_path / "gpu01-2025-06-01T12.txt"
    t12.write_text(text)
    store = Store(":memory:")
    for path in (t12, t10, t11):
        read_nvsmi(store, path, tz="UTC", host="gpu01")
    sid = dict(store.table("sources").select("path", "source_id").rows())
    reset = store.table("events").filter(source_id=sid[str(t12)])
    assert reset.select("line_no", "failure_mode", "severity").rows() == [
        (18, "gpu/counter_reset", "info")
    ]
    assert reset["flags"][0].split(",") == ["counter_reset", "retirement_resolved"]
    assert store.table("events").filter(source_id=sid[str(t11)]).height == 4


def _a100_block(hour: int, pending: str, failure: str = "No") -> str:
    """C06's 1c section (Ampere layout) alone at ``hour``:00 with Remapped Rows
    Pending / Remapping Failure Occurred set (lines 31 and 32 of the block)."""
    head = C06_PARTS[0].read_text().split("\n")[:8]
    head[3] = head[3].replace("10:00:00", f"{hour:02d}:00:00")
    text = "\n".join(head) + "\n" + C06_PARTS[1].read_text()
    return _set(_set(text, 31, pending), 32, failure)


def test_pending_remap_once_per_appearance() -> None:
    """Pending: Yes at 10:00 and 11:00 is one warning (10:00, line 31); No at 12:00
    resolves it (a counter_reset, remap_resolved); Yes again at 13:00 is a new
    warning (line 31 + 3 × 39 = 148; a block is 8 + 31 lines)."""
    blocks = [_a100_block(10, "Yes"), _a100_block(11, "Yes")]
    blocks += [_a100_block(12, "No"), _a100_block(13, "Yes")]
    assert [b.count("\n") for b in blocks] == [39] * 4
    events = nvsmi_events(parse_nvsmi("".join(blocks), tz="UTC"))
    pending = events.filter(pl.col("flags").str.contains("remap_pending"))
    assert pending["line_no"].to_list() == [31, 148]
    assert pending["ts"].dt.hour().to_list() == [10, 13]
    resolved = events.filter(failure_mode="gpu/counter_reset")
    assert resolved["line_no"].to_list() == [31 + 2 * 39]
    assert "remap_resolved" in resolved["flags"][0]


def test_remap_failure_not_repeated_across_files(tmp_path: Path) -> None:
    """Remapping Failure Occurred: Yes in two files of one GPU (10:00, 11:00) is one
    RMA event, in the first file at line 32; the second file adds none."""
    store = Store(":memory:")
    for hour in (11, 10):
        path = tmp_path / f"n1-{hour}.txt"
        path.write_text(_a100_block(hour, "No", failure="Yes"))
        read_nvsmi(store, path, tz="UTC", host="n1")
    events = store.table("events")
    assert events.select("line_no", "failure_mode", "ts").rows() == [
        (32, "gpu/row_remap_failure", datetime(2025, 6, 9, 10, tzinfo=UTC))
    ]


def test_other_host_is_not_compared(tmp_path: Path) -> None:
    """Snapshots of another host never serve as a baseline: T10 of host gpu02 and
    T11 of gpu01 give T11 only its pending retirement (line 57)."""
    t10, t11 = _v100_copy(tmp_path)
    store = Store(":memory:")
    read_nvsmi(store, t10, tz="UTC", host="gpu02")
    result = read_nvsmi(store, t11, tz="UTC", host="gpu01")
    assert result.n_loaded == 1
    assert "compared with" not in (result.note or "")
