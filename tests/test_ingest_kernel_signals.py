"""Kernel-log signals added for issue 3 §2: GPUs missing at boot, odd Xid PCI forms,
one lower-case severity vocabulary.

Line shapes are those the NVIDIA driver prints (NVIDIA/open-gpu-kernel-modules:
``src/nvidia/arch/nvalloc/unix/src/osinit.c`` prints "RmInitAdapter failed!
(0x%x:0x%x:%d)" and "GPU does not have the necessary power cables connected.";
``kernel-open/nvidia/nv.c`` prints "rm_init_adapter failed, device minor number
%d", "The NVIDIA probe routine failed for %d device(s)." and "None of the NVIDIA
devices were initialized."), as they appear in public bug reports (e.g.
NVIDIA/cuda-samples#104: "NVRM: GPU 0000:13:00.0: RmInitAdapter failed!
(0x26:0x56:1463)" then "... rm_init_adapter failed, device minor number 0").
"""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from shared_paths import SHARED

from relkit.incidents import build_incidents, count_failures
from relkit.ingest.kernel import classify_lines, read_kernel
from relkit.store import Store
from relkit.taxonomy import SEVERITIES, table5_shape

CASES = SHARED / "cases"

#: One syslog file, one scenario per host (RFC 3339 stamps, so every line has a
#: wall time). Line numbers are referred to in the tests below.
BOOT_LOG = """\
2025-05-02T08:00:00.100000+00:00 node9 kernel: NVRM: GPU 0000:3b:00.0: GPU does not have the necessary power cables connected.
2025-05-02T08:00:00.200000+00:00 node9 kernel: NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0x65:1460)
2025-05-02T08:00:00.200100+00:00 node9 kernel: NVRM: rm_init_adapter failed, device minor number 3
2025-05-02T08:00:02.000000+00:00 node9 kernel: NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0x65:1460)
2025-05-02T08:00:02.000100+00:00 node9 kernel: NVRM: GPU 0000:3b:00.0: rm_init_adapter failed, device minor number 3
2025-05-02T08:06:00.000000+00:00 node9 kernel: NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0x65:1460)
2025-05-02T08:40:00.000000+00:00 node9 kernel: NVRM: GPU 0000:3b:00.0: RmInitAdapter failed! (0x26:0x65:1460)
2025-05-02T09:00:08.299192+00:00 node10 kernel: NVRM: The NVIDIA GPU 0002:21:00.0
2025-05-02T09:00:08.299193+00:00 node10 kernel: NVRM: (PCI ID: 10de:2204) installed in this system has
2025-05-02T09:00:08.299194+00:00 node10 kernel: NVRM: fallen off the bus and is not responding to commands.
2025-05-02T09:00:08.299233+00:00 node10 kernel: nvidia: probe of 0002:21:00.0 failed with error -1
2025-05-02T09:00:08.299260+00:00 node10 kernel: NVRM: The NVIDIA probe routine failed for 1 device(s).
2025-05-02T09:00:08.299262+00:00 node10 kernel: NVRM: None of the NVIDIA devices were initialized.
2025-05-02T10:00:05.000000+00:00 node11 kernel: NVRM: The NVIDIA GPU 0000:04:00.0 (PCI ID: 10de:20b0)
2025-05-02T10:00:05.000001+00:00 node11 kernel: NVRM: installed in this system is not supported by the
2025-05-02T10:00:05.000002+00:00 node11 kernel: NVRM: NVIDIA 535.183.01 driver release.
2025-05-02T10:00:05.000003+00:00 node11 kernel: NVRM: The NVIDIA probe routine failed for 1 device(s).
2025-05-02T10:00:05.000004+00:00 node11 kernel: NVRM: None of the NVIDIA devices were initialized.
2025-05-02T11:00:00.000000+00:00 node12 kernel: NVRM: BAR1 is 0M @ 0x0 (PCI:0000:0b:00.0)
2025-05-02T11:00:00.000100+00:00 node12 kernel: nvidia: probe of 0000:0b:00.0 failed with error -1
2025-05-02T11:00:00.000200+00:00 node12 kernel: NVRM: None of the NVIDIA devices were initialized.
2025-05-02T12:00:00.000000+00:00 node13 kernel: NVRM: RmInitAdapter failed! (0x30:0xffff:660)
2025-05-02T12:00:00.000100+00:00 node13 kernel: NVRM: rm_init_adapter failed for device bearing minor number 0
"""  # noqa: E501


@pytest.fixture(scope="module")
def boot_events(tmp_path_factory: pytest.TempPathFactory) -> pl.DataFrame:
    path = tmp_path_factory.mktemp("boot") / "boot.log"
    path.write_text(BOOT_LOG)
    with Store(":memory:") as store:
        [result] = read_kernel(store, path)
        assert (result.n_lines, result.n_loaded, result.n_rejected) == (23, 12, 0)
        return store.table("events").sort("line_no")


# -- 1. GPUs missing at boot ---------------------------------------------------------
def test_ref_boot_init_failures_are_fallen_off_bus_events(
    boot_events: pl.DataFrame,
) -> None:
    """node9: the power-cable line, RmInitAdapter and rm_init_adapter lines (with
    and without the 'GPU <pci>:' prefix) are 7 events of gpu/fallen_off_bus on
    0000:3b:00; the PCI-less 'device minor number 3' line (line 3) takes the GPU
    of the RmInitAdapter line printed just before it."""
    node9 = boot_events.filter(host="node9")
    assert node9.select("line_no", "device", "code").rows() == [
        (1, "0000:3b:00", "power_cables"),
        (2, "0000:3b:00", "init_failed"),
        (3, "0000:3b:00", "init_failed"),
        (4, "0000:3b:00", "init_failed"),
        (5, "0000:3b:00", "init_failed"),
        (6, "0000:3b:00", "init_failed"),
        (7, "0000:3b:00", "init_failed"),
    ]
    assert node9["failure_mode"].unique().to_list() == ["gpu/fallen_off_bus"]
    assert node9["severity"].unique().to_list() == ["error"]
    assert node9.filter(line_no=2)["detail"].item() == (
        "RmInitAdapter failed! (0x26:0x65:1460)"
    )


def test_ref_boot_init_failures_fold_into_one_incident(
    boot_events: pl.DataFrame,
) -> None:
    """node9, window 10 min: lines 1-6 (08:00:00.1 to 08:06:00, gaps <= 6 min) are
    one Faulty GPU incident of 6 lines; the retry at 08:40 (34 min later) is a
    second one. Counting lines instead would give 7 failures."""
    inc = build_incidents(boot_events.filter(host="node9"), window_min=10.0)
    assert inc.select("device", "n_events", "n_context", "root_code").rows() == [
        ("0000:3b:00", 6, 0, "power_cables"),
        ("0000:3b:00", 1, 0, "init_failed"),
    ]
    assert inc["failure_mode"].unique().to_list() == ["gpu/fallen_off_bus"]
    assert inc["start_ts"][0] == datetime(2025, 5, 2, 8, 0, 0, 100000, tzinfo=UTC)
    assert inc["end_ts"][0] == datetime(2025, 5, 2, 8, 6, tzinfo=UTC)
    assert inc["counts_as_failure"].to_list() == [True, True]
    shape = table5_shape(inc)
    assert shape.filter(component="Faulty GPU")["n_interruptions"].item() == 2


def test_ref_multiline_fallen_at_probe_and_host_summary(
    boot_events: pl.DataFrame,
) -> None:
    """node10: the three-line 'The NVIDIA GPU 0002:21:00.0 / ... installed in this
    system has / fallen off the bus ...' message is one event on 0002:21:00 (line
    10, the PCI address from the header line 8); the host-level 'None of the
    NVIDIA devices were initialized.' (line 13) is an event without a device that
    joins that GPU's incident as context: 1 incident, not 2."""
    node10 = boot_events.filter(host="node10")
    assert node10.select("line_no", "device", "code").rows() == [
        (10, "0002:21:00", None),
        (13, None, "none_initialized"),
    ]
    inc = build_incidents(node10)
    assert inc.select("device", "n_events", "n_context").rows() == [
        ("0002:21:00", 2, 1)
    ]
    assert inc["start_ts"].item() == inc["end_ts"].item()  # context does not stretch


def test_ref_unsupported_gpu_is_no_failure(boot_events: pl.DataFrame) -> None:
    """node11: a GPU the driver does not support is a configuration problem, not a
    failure: no event, and the 'None of the NVIDIA devices were initialized.'
    that follows it is ignored with reason gpu_unsupported_by_driver."""
    assert boot_events.filter(host="node11").height == 0
    out = classify_lines(pl.Series(BOOT_LOG.splitlines()[13:18]))
    assert out.select("outcome", "reason").rows() == [
        ("ignored", "gpu_message_header"),
        ("ignored", "gpu_unsupported_by_driver"),
        ("ignored", "nvrm_context"),
        ("ignored", "nvrm_context"),
        ("ignored", "gpu_unsupported_by_driver"),
    ]
    one_line = classify_lines(
        pl.Series(
            [
                "NVRM: The NVIDIA GPU 0000:3b:00.0 (PCI ID: 10de:2330) installed in "
                "this system is not supported by the NVIDIA 470.256.02 driver release."
            ]
        )
    )
    assert one_line.select("outcome", "reason", "device").rows() == [
        ("ignored", "gpu_unsupported_by_driver", "0000:3b:00")
    ]


def test_ref_host_level_boot_failures_without_a_device(
    boot_events: pl.DataFrame,
) -> None:
    """node12: 'None of the NVIDIA devices were initialized.' with no device line
    (BAR1 not assigned) is one host-level failure incident (device null); node13,
    an older driver printing no PCI address on either init line: one incident of
    2 lines, not 2."""
    hosts = pl.col("host").is_in(["node12", "node13"])
    inc = build_incidents(boot_events.filter(hosts))
    assert inc.select("host", "device", "n_events", "root_code").rows() == [
        ("node12", None, 1, "none_initialized"),
        ("node13", None, 2, "init_failed"),
    ]
    assert count_failures(inc, by=())["n_failures"].item() == 2


def test_boot_lines_pass_the_keyword_prefilter() -> None:
    """Every new shape carries 'NVRM', a keyword of the fast path's prefilter."""
    from relkit.ingest import _kernel_patterns as kp

    lines = pl.Series([ln for ln in BOOT_LOG.splitlines() if "NVRM" in ln])
    assert lines.str.contains(kp.KEYWORDS).all()


# -- 3. odd PCI forms in Xid lines ---------------------------------------------------
def test_ref_xid_pci_without_domain_is_domain_0000() -> None:
    """An Xid address without a domain ('PCI:3b:00', '3B:00.0') is bus:device in
    domain 0000, as the Xid catalogue prints it (PCI:0000:3b:00); an 8-digit
    domain loses its leading zeros. All three name the same GPU."""
    out = classify_lines(
        pl.Series(
            [
                "[   10.0] NVRM: Xid (PCI:3b:00): 79, pid=1234, name=python3, off",
                "[   11.0] NVRM: Xid (3B:00.0): 79, pid=1234, GPU has fallen off",
                "[   12.0] NVRM: Xid (PCI:00000000:3B:00): 79, pid=1, off",
                "[   13.0] nvidia-nvswitch0: SXid (PCI:c1:00.0): 20009, Non-fatal",
            ]
        )
    )
    assert out.select("outcome", "code", "device", "failure_mode").rows() == [
        ("event", "79", "0000:3b:00", "gpu/fallen_off_bus"),
        ("event", "79", "0000:3b:00", "gpu/fallen_off_bus"),
        ("event", "79", "0000:3b:00", "gpu/fallen_off_bus"),
        ("event", "sxid:20009", "0000:c1:00", "nvswitch/sxid"),
    ]


def test_ref_malformed_xid_pci_is_rejected_with_the_address_reason() -> None:
    """A malformed address ('zz:00', a missing device '0000:3b', an empty one) is
    rejected with a reason naming the PCI address; a valid address with no
    numeric code keeps the numeric-code reason."""
    out = classify_lines(
        pl.Series(
            [
                "[ 1.0] NVRM: Xid (PCI:zz:00): 79, pid=1, GPU has fallen off the bus",
                "[ 2.0] NVRM: Xid (PCI:0000:3b): 79, pid=1",
                "[ 3.0] NVRM: Xid (): 79",
                "[ 4.0] NVRM: Xid (PCI:3b:00): abc, pid=1",
            ]
        )
    )
    assert out["outcome"].to_list() == ["rejected"] * 4
    reasons = out["reason"].to_list()
    assert all("malformed PCI address" in r for r in reasons[:3])
    assert "numeric code" not in " ".join(reasons[:3])
    assert "numeric code" in reasons[3]


# -- 4. one lower-case severity vocabulary -------------------------------------------
def test_ref_stated_severity_words_are_lower_case_vocabulary() -> None:
    """'Fatal' (Xid 149, C01 line 9) -> fatal; 'Non-fatal' / 'Nonfatal' (SXid) ->
    error; lines stating none take their mode's default (link up: info, PCIe
    power: warning, Xid 79: error); every value is in taxonomy.SEVERITIES."""
    out = classify_lines(
        pl.Series(
            [
                "[1.0] NVRM: Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT  Fatal   XC0 i0 "
                "Link 07 (0x021475c6 0x00000000)",
                "[2.0] nvidia-nvswitch2: SXid (PCI:0000:c1:00.0): 20009, Non-fatal, "
                "Link 04 RX Short Error Rate",
                "[3.0] nvidia-nvswitch2: SXid (PCI:0000:c1:00.0): 12028, Nonfatal, x",
                "[4.0] mlx5_core 0000:1d:00.0 enp29s0np0: Link up",
                "[5.0] mlx5_core 0000:5c:00.0: mlx5_pcie_event:299:(pid 1): Detected "
                "insufficient power on the PCIe slot (27W).",
                "[6.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1, off",
            ]
        )
    )
    assert out["severity"].to_list() == [
        "fatal",
        "error",
        "error",
        "info",
        "warning",
        "error",
    ]


@pytest.mark.skipif(not CASES.exists(), reason="shared cases absent")
@pytest.mark.parametrize(
    ("case", "kw"),
    [
        (
            "C01-xid-line-variants.log",
            {"host": "n1", "tz": "UTC", "reference_date": "2025-03-05"},
        ),
        ("C03-xid-storm-dedup.log", {"host": "gpu-node-01", "tz": "UTC"}),
        ("C05-roce-ib-link-flap.log", {}),
    ],
)
def test_case_severities_are_one_vocabulary(
    tmp_path: Path, case: str, kw: dict[str, str]
) -> None:
    """Every event severity of the shared cases is lower case and in SEVERITIES."""
    with Store(tmp_path / "s.duckdb") as store:
        read_kernel(store, CASES / case, **kw)
        sev = store.table("events")["severity"]
    assert sev.null_count() == 0
    assert set(sev.unique().to_list()) <= set(SEVERITIES)
