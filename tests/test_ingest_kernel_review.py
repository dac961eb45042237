"""Review of issue 10: kernel-log inputs in real shapes that the reader missed.

Every line here was written for these tests in the public shape its program
prints (not copied from a third-party log):

- the ``mcelog`` daemon's record in syslog (github.com/andikleen/mcelog):
  ``mcelog[pid]: Hardware event. This is not a software error.``, ``MCE n``,
  ``CPU n BANK m ...``, ``MCA: ...``, ``STATUS <MCi_STATUS> MCGSTATUS <hex>``,
  ``MCGCAP ...``, and page.c's ``Corrected memory errors on page ... exceed
  threshold ...``. MCi_STATUS bit 61 is UC, bit 57 PCC; MCA error code
  ``0000 0000 1MMM CCCC`` is a memory-controller error (Intel SDM Vol. 3B).
- ``kernel/panic.c``: ``Kernel panic - not syncing: %s`` and the closing
  ``---[ end Kernel panic - not syncing: %s ]---``; the machine-check handler's
  ``Timeout: Not all CPUs entered broadcast exception handler``.
- NIC drivers' ``netdev_info`` link lines: bnxt_en ``NIC Link is Down`` /
  ``NIC Link is Up, %u Mbps %s duplex, Flow control: %s``, ice ``NIC Link is
  up %sbps Full Duplex, ...``, i40e ``NIC Link is Down``; mlx5 ``Link down``.
"""

import gzip
from pathlib import Path

import polars as pl
import pytest

from relkit.cli import main
from relkit.errors import IngestError, PartialIngestError
from relkit.incidents import build_incidents, count_failures
from relkit.ingest import read_file
from relkit.ingest.kernel import read_kernel
from relkit.store import Store


def _read(tmp_path: Path, text: str, **kw: object) -> tuple[pl.DataFrame, object]:
    path = tmp_path / "node.log"
    path.write_text(text)
    with Store(":memory:") as store:
        [result] = read_kernel(store, path, **kw)  # type: ignore[arg-type]
        events = store.table("events")
        ignored = store.table("ignored")
    return events.sort("line_no"), (result, ignored)


def _counted(events: pl.DataFrame) -> int:
    """Failures after folding into incidents (the number MTBF divides by)."""
    incidents = build_incidents(events.filter(pl.col("ts").is_not_null()))
    return int(count_failures(incidents)["n_failures"].sum())


# -- 1. mcelog daemon records ----------------------------------------------------------
_P = "2025-06-02T05:00:01.000000+00:00 cpu20 mcelog[1234]: "
MCELOG_UE = (
    "2025-06-02T05:00:00.900000+00:00 cpu20 kernel: mce: [Hardware Error]: "
    "Machine check events logged\n"
    + "".join(
        _P + line + "\n"
        for line in (
            "Hardware event. This is not a software error.",
            "MCE 0",
            "CPU 3 BANK 7 TSC 4b6e6d7bd0f0",
            "MISC 9022400086 ADDR 1b5ec4d80",
            "TIME 1717304401 Sun Jun  2 05:00:01 2024",
            "MCG status:",
            "MCi status:",
            "Uncorrected error",
            "Processor context corrupt",
            "MCA: MEMORY CONTROLLER RD_CHANNEL1_ERR",
            "STATUS be00000000800400 MCGSTATUS 5",
            "MCGCAP 7000c16 APICID 0 SOCKETID 0",
        )
    )
)
_Q = "2025-06-02T06:00:00.000000+00:00 cpu21 mcelog[99]: "
MCELOG_OTHERS = "".join(
    _Q + line + "\n"
    for line in (
        "Hardware event. This is not a software error.",
        "MCE 1",
        "CPU 0 BANK 13",
        "Corrected error",
        "MCA: MEMORY CONTROLLER RD_CHANNEL0_ERR",
        "STATUS 9c00004001010090 MCGSTATUS 0",
        "Hardware event. This is not a software error.",
        "MCE 2",
        "CPU 9 BANK 4",
        "Uncorrected error",
        "MCA: Instruction CACHE Level-2 Instruction-Fetch Error",
        "STATUS b200000000040151 MCGSTATUS 0",
        "Corrected memory errors on page 1b5ec4000 exceed threshold 10 in 24h: "
        "11 in 24h",
    )
)


def test_ref_mcelog_uncorrected_memory_record_is_one_failure(tmp_path: Path) -> None:
    """Hand count over MCELOG_UE (13 lines): the kernel's notice (line 1,
    host/mce_notice, not a failure) and one mcelog record of 12 lines. STATUS
    be00000000800400: first digit b = 1011, bit 61 UC set; second digit e =
    1110, bit 57 PCC set -> uncorrected, fatal. Its MCA line says MEMORY
    CONTROLLER -> host/memory_ue, device cpu3 (the record's "CPU 3 BANK 7"),
    on the STATUS line (line 12). The other 11 mcelog lines are context: 2 kept
    (CPU, MCA: reason mcelog_record), 9 mcelog_context. 2 events, 1 failure."""
    ev, (result, ignored) = _read(tmp_path, MCELOG_UE)
    got = ev.select("line_no", "device", "failure_mode", "severity").rows()
    assert got == [
        (1, None, "host/mce_notice", "info"),
        (12, "cpu3", "host/memory_ue", "fatal"),
    ]
    assert ev["detail"][1].startswith("MCA: MEMORY CONTROLLER RD_CHANNEL1_ERR; ")
    reasons = dict(ignored.select("reason", "n_lines").iter_rows())
    assert reasons == {"mcelog_record": 2, "mcelog_context": 9}
    assert result.n_lines == 13  # type: ignore[attr-defined]
    assert _counted(ev) == 1


def test_ref_mcelog_corrected_cache_and_threshold_lines(tmp_path: Path) -> None:
    """Hand count over MCELOG_OTHERS (13 lines): record 1 STATUS
    9c00004001010090 (9 = 1001: bit 61 clear) is corrected ->
    host/mce_corrected (warning), cpu0, not a failure. Record 2 STATUS
    b200000000040151 (b = 1011: UC; 2 = 0010: PCC) with MCA code 0x0151, a
    cache error, not the memory controller -> host/mce, fatal, cpu9: 1
    failure. The threshold line is host/memory_ce, a warning, no failure."""
    ev, _ = _read(tmp_path, MCELOG_OTHERS)
    got = ev.select("line_no", "device", "failure_mode", "severity", "code").rows()
    assert got == [
        (6, "cpu0", "host/mce_corrected", "warning", "mcelog"),
        (12, "cpu9", "host/mce", "fatal", "mcelog"),
        (13, None, "host/memory_ce", "warning", "ce_threshold"),
    ]
    assert _counted(ev) == 1


def test_ref_mcelog_status_decides_memory_by_its_error_code() -> None:
    """STATUS bc00000000000091 alone (no MCA line before it): UC set (b), MCA
    code 0x0091 = 0000 0000 1001 0001, a memory-controller read error on
    channel 1 -> host/memory_ue (1 event)."""
    from relkit.ingest.kernel import classify_lines

    out = classify_lines(
        pl.Series(["Jun  2 10:00:00 n1 mcelog: STATUS bc00000000000091 MCGSTATUS 0"])
    )
    assert out.select("outcome", "failure_mode").rows() == [("event", "host/memory_ue")]


# -- 2. kernel panics ------------------------------------------------------------------
PANIC_LOG = """\
2025-06-02T07:00:00.000000+00:00 n22 kernel: Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b
2025-06-02T07:00:00.100000+00:00 n22 kernel: ---[ end Kernel panic - not syncing: Attempted to kill init! exitcode=0x0000000b ]---
2025-06-02T08:00:00.000000+00:00 n23 kernel: {1}[Hardware Error]: event severity: fatal
2025-06-02T08:00:00.500000+00:00 n23 kernel: Kernel panic - not syncing: Fatal hardware error!
2025-06-02T09:00:00.000000+00:00 n24 kernel: Kernel panic - not syncing: Timeout: Not all CPUs entered broadcast exception handler
2025-06-02T10:00:00.000000+00:00 n25 kernel: mce: [Hardware Error]: CPU 2: Machine Check Exception: 5 Bank 4: be00000000800400
2025-06-02T10:00:01.000000+00:00 n25 kernel: Kernel panic - not syncing: Fatal machine check
2025-06-02T11:00:00.000000+00:00 n26 kernel: Kernel panic - not syncing: VFS: Unable to mount root fs on unknown-block(0,0)
"""  # noqa: E501


def test_ref_kernel_panics(tmp_path: Path) -> None:
    """Hand count over PANIC_LOG (8 lines): n22's panic without a record is
    host/kernel_panic (fatal), its closing '---[ end ...' line is context
    (kernel_panic_end), no second event. n23's panic 0.5 s after a fatal GHES
    record joins it (host/ghes_fatal). n24's broadcast timeout is the MCE
    handler's panic: host/mce. n25's panic takes the record's mode and device
    (host/mce, cpu2). n26 mounts no root: host/kernel_panic. Events 7;
    incidents counted: n22, n23 (one), n24, n25 (one), n26 = 5."""
    ev, (_, ignored) = _read(tmp_path, PANIC_LOG)
    got = ev.select("line_no", "host", "device", "failure_mode", "severity").rows()
    assert got == [
        (1, "n22", None, "host/kernel_panic", "fatal"),
        (3, "n23", None, "host/ghes_fatal", "fatal"),
        (4, "n23", None, "host/ghes_fatal", "fatal"),
        (5, "n24", None, "host/mce", "fatal"),
        (6, "n25", "cpu2", "host/mce", "fatal"),
        (7, "n25", "cpu2", "host/mce", "fatal"),
        (8, "n26", None, "host/kernel_panic", "fatal"),
    ]
    assert dict(ignored.select("reason", "n_lines").iter_rows()) == {
        "kernel_panic_end": 1
    }
    assert _counted(ev) == 5


# -- 3. a port down at boot that never comes up ----------------------------------------
def test_ref_link_down_at_boot_needs_the_port_up_soon(tmp_path: Path) -> None:
    """Hand count (5 lines, one boot of gpu-2 at 06:00:00): port A goes down at
    20 s and up at 30 s -> link_down_at_boot (boot_time, not counted). Port B
    goes down at 25 s and never up -> network/link_down, an open outage
    (counted). Port C goes down at 40 s and up only at 700 s, past
    BOOT_LINK_UP_S = 600 s -> network/link_down, counted. Failures: 2."""
    text = (
        "Jun  4 06:00:20 gpu-2 kernel: [   20.000000] mlx5_core 0000:1d:00.0 "
        "enp29s0np0: Link down\n"
        "Jun  4 06:00:25 gpu-2 kernel: [   25.000000] mlx5_core 0000:5c:00.0 "
        "enp92s0np0: Link down\n"
        "Jun  4 06:00:30 gpu-2 kernel: [   30.000000] mlx5_core 0000:1d:00.0 "
        "enp29s0np0: Link up\n"
        "Jun  4 06:00:40 gpu-2 kernel: [   40.000000] mlx5_core 0000:9a:00.0 "
        "enp154s0np0: Link down\n"
        "Jun  4 06:11:40 gpu-2 kernel: [  700.000000] mlx5_core 0000:9a:00.0 "
        "enp154s0np0: Link up\n"
    )
    ev, _ = _read(tmp_path, text, tz="UTC", reference_date="2025-06-04")
    got = ev.select("line_no", "failure_mode", "flags").rows()
    assert got == [
        (1, "network/link_down_at_boot", "boot_time"),
        (2, "network/link_down", None),
        (3, "network/link_up", None),
        (4, "network/link_down", None),
        (5, "network/link_up", None),
    ]
    assert _counted(ev) == 2


# -- 6. link lines of other drivers ----------------------------------------------------
NIC_LOG = """\
2025-06-02T09:00:00+00:00 gpu1 kernel: mlx5_core 0000:1d:00.0 enp29s0np0:  Link down
2025-06-02T09:00:01+00:00 gpu1 kernel: bnxt_en 0000:3b:00.0 enp59s0f0np0: NIC Link is Down
2025-06-02T09:00:02+00:00 gpu1 kernel: bnxt_en 0000:3b:00.0 enp59s0f0np0: NIC Link is Up, 100000 Mbps full duplex, Flow control: none
2025-06-02T09:00:03+00:00 gpu1 kernel: ice 0000:86:00.0 ens1f0: NIC Link is Down
2025-06-02T09:00:04+00:00 gpu1 kernel: ice 0000:86:00.0 ens1f0: NIC Link is up 100 Gbps Full Duplex, Requested FEC: RS-FEC, Negotiated FEC: RS-FEC, Autoneg Advertised: On, Autoneg Negotiated: True, Flow Control: None
2025-06-02T09:00:05+00:00 gpu1 kernel: i40e 0000:5e:00.1 ens2f1: NIC Link is Down
2025-06-02T09:00:06+00:00 gpu1 kernel: [  999.000000] ice 0000:86:00.0 ens1f0: NIC Link is Up 100 Gbps Full Duplex, Flow Control: None
"""  # noqa: E501


def test_ref_nic_driver_link_lines(tmp_path: Path) -> None:
    """Hand count over NIC_LOG (7 lines): 4 downs (mlx5 with two spaces,
    bnxt_en, ice, i40e) and 3 ups (bnxt_en, ice 'up', ice 'Up'), each on its
    port 'pci netdev'. Open downs: mlx5 enp29s0np0 and i40e ens2f1; bnxt_en and
    ice came back. Failures (one per down incident): 4."""
    ev, _ = _read(tmp_path, NIC_LOG)
    got = ev.select("line_no", "device", "failure_mode").rows()
    assert got == [
        (1, "0000:1d:00 enp29s0np0", "network/link_down"),
        (2, "0000:3b:00 enp59s0f0np0", "network/link_down"),
        (3, "0000:3b:00 enp59s0f0np0", "network/link_up"),
        (4, "0000:86:00 ens1f0", "network/link_down"),
        (5, "0000:86:00 ens1f0", "network/link_up"),
        (6, "0000:5e:00 ens2f1", "network/link_down"),
        (7, "0000:86:00 ens1f0", "network/link_up"),
    ]
    assert _counted(ev) == 4


# -- 7. the message for a syslog line without a host -----------------------------------
def test_ref_hostless_rfc3164_line_names_its_framing(tmp_path: Path) -> None:
    """One RFC 3164 line without a host field, no --host: refused at line 1,
    naming that framing (not dmesg/kmsg) and both fixes."""
    path = tmp_path / "kern.log"
    path.write_text("Feb 23 03:28:16 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1\n")
    with Store(":memory:") as store, pytest.raises(IngestError) as err:
        read_kernel(store, path, tz="UTC", reference_date="2025-03-01")
    msg = str(err.value)
    assert "RFC 3164 syslog without a host field" in msg
    assert "dmesg/kmsg" not in msg
    assert "--host NAME" in msg
    assert "--host-from-filename" in msg
    assert err.value.line_no == 1


# -- 4. and 5. bad and empty files -----------------------------------------------------
def _bad_dir(tmp_path: Path) -> Path:
    d = tmp_path / "logs"
    d.mkdir()
    (d / "node9.log").write_text(
        "2025-06-02T05:00:00+00:00 node9 kernel: NVRM: Xid (PCI:0000:3b:00): 79, "
        "pid=1, off\n"
    )
    (d / "node10.log").write_bytes(b"")
    (d / "node11.log").write_bytes("hello kernel\n".encode("utf-16"))
    return d


def test_ref_bad_files_in_a_directory_do_not_block_it(tmp_path: Path) -> None:
    """node9.log (1 Xid line) good, node10.log empty, node11.log UTF-16: the
    good file is ingested (1 source, 1 event), then PartialIngestError names
    the 2 bad files with their reasons ('2 of 3')."""
    d = _bad_dir(tmp_path)
    with Store(":memory:") as store:
        with pytest.raises(PartialIngestError) as err:
            read_kernel(store, d, host_from_filename=True)
        assert store.table("events").height == 1
        assert store.table("sources").height == 1
    exc = err.value
    assert [Path(f.path).name for f in exc.failures] == ["node10.log", "node11.log"]
    assert "empty" in exc.failures[0].reason
    assert "UTF-16" in exc.failures[1].reason
    assert [Path(r.path).name for r in exc.results] == ["node9.log"]  # type: ignore[attr-defined]
    assert "2 of 3 file(s) could not be ingested" in str(exc)


def test_ref_cli_directory_with_bad_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI on the same directory: exit 1, each bad file named on stderr,
    the good one loaded, and the summary '2 of 3 file(s) could not be
    ingested'."""
    d = _bad_dir(tmp_path)
    db = str(tmp_path / "r.duckdb")
    code = main(
        ["ingest", "--db", db, "--kind", "kernel", "--host-from-filename", str(d)]
    )
    _, err = capsys.readouterr()
    assert code == 1
    assert "node10.log: the file is empty" in err
    assert "node11.log: is UTF-16 text" in err
    assert "node9.log: 1 loaded" in err
    assert "2 of 3 file(s) could not be ingested" in err


@pytest.mark.parametrize(
    ("name", "data", "needle"),
    [
        ("empty.log", b"", "the file is empty (0 bytes)"),
        ("empty.log.gz", gzip.compress(b""), "empty once decompressed (gzip"),
        ("blank.log", b"\n  \n", "only blank lines (2)"),
    ],
)
def test_ref_empty_kernel_log_is_said(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    name: str,
    data: bytes,
    needle: str,
) -> None:
    """An empty file, an empty .gz and a file of 2 blank lines: no '0 loaded'
    with exit 0; each is refused saying it is empty, exit 1 (nothing useful)."""
    path = tmp_path / name
    path.write_bytes(data)
    db = str(tmp_path / "r.duckdb")
    code = main(["ingest", "--db", db, "--kind", "kernel", "--host", "n1", str(path)])
    _, err = capsys.readouterr()
    assert code == 1
    assert needle in err


@pytest.mark.parametrize(
    ("kind", "extra"),
    [
        ("events", {}),
        ("assets", {}),
        ("sacct", {}),
        ("k8s", {}),
        ("nvsmi", {"host": "n1", "tz": "UTC"}),
    ],
)
def test_ref_empty_file_of_every_kind_is_said(
    tmp_path: Path, kind: str, extra: dict[str, str]
) -> None:
    """A 0-byte file of each other kind is refused with 'the file is empty'
    (k8s used to say 'not valid JSON', nvsmi 'no banner in 0 line(s)')."""
    path = tmp_path / "empty.txt"
    path.write_bytes(b"")
    with Store(":memory:") as store, pytest.raises(IngestError, match="file is empty"):
        read_file(store, path, kind=kind, **extra)  # type: ignore[arg-type]
