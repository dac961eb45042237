"""The signal corpus: lines written in the shapes operators' real logs print, each
with the event it must give (issue 10 §6).

Every file of ``tests/corpus/`` holds one line per row, tab-separated, with the
expected outcome in front of the line:

- ``expect_mode``: the failure mode the line must give (``mode+flag`` when the
  event must also carry a flag, e.g. ``network/link_down+boot_time``); ``*`` any
  mode; ``-`` no event at all (context or noise); ``~`` an event is optional but
  must not count as a failure.
- ``counted``: ``y`` when the event counts as a failure (the mode's
  ``counts_as_failure``, no ``boot_time`` flag, and for NVSwitch SXid a ``Fatal``
  severity), ``n`` when it does not, ``-`` for no event.
- ``kernel_framings.tsv`` has a third column, ``wall_time``: whether the event
  keeps a wall-clock time.

The expected values are hand-written from public sources, not from relkit's
output: the Xid rows follow the resolution bucket of each code in NVIDIA's Xid
catalogue (https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html:
IGNORE and RESTART_APP are not hardware failures, RESET_GPU, RESTART_BM and the
NVLink/Xid 48 workflows are, Xid 45/154 follow another Xid; Xid 94, a
contained uncorrectable ECC error, is a GPU memory failure as Llama 3 Table 5
counts HBM errors, arXiv:2407.21783); the host rows follow
the kernel's printk formats (arch/x86/kernel/cpu/mce: a ``Machine check events
logged`` notice, the MCi_STATUS UC bit 61; drivers/acpi/apei/ghes.c ``event severity``;
mm/memory-failure.c ``Memory failure: ... recovery action``; drivers/edac CE/UE
lines; the mcelog daemon's syslog record, ``STATUS <MCi_STATUS> MCGSTATUS``
decided by the same UC bit; kernel/panic.c ``Kernel panic - not syncing:``);
the network rows the mlx5 and ib_core messages and the bnxt_en / ice / i40e
``NIC Link is Down|Up`` lines (a down at boot counts unless its port comes up
within 600 s of boot); the NCCL rows NCCL's
``NET/IB : Got completion ... status=12`` and PyTorch's ProcessGroupNCCL errors.

Three more families are files, not lines: ``nvsmi/`` holds ``nvidia-smi -q``
snapshots of two hosts (an A100 and a V100, one file per collection, ingested
newest first) with ``expected.tsv`` (file, line, mode, counted: the events the
counters and the ``Remapped Rows`` state must give); ``jobs/`` holds a ``sacct
-P`` dump and a client-go ``PodList`` with the failed job attempts they must
give (job, attempt, state, GPUs, nodes).

A false event is a line that gives an event (or a counted failure) where none is
expected, or the wrong mode; a missed event is an expected event (or counted
failure) that is not there. Every family must have zero of each.
"""

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import polars as pl
import pytest

from relkit.ingest import read_file
from relkit.ingest.kernel import read_kernel
from relkit.jobs import build_job_attempts
from relkit.store import Store
from relkit.taxonomy import XID_CATALOGUE, XID_MODES

CORPUS = Path(__file__).parent / "corpus"
KERNEL_FAMILIES = (
    "kernel_xid",
    "kernel_host",
    "kernel_network",
    "kernel_nccl",
    "kernel_nvswitch",
)


@dataclass(frozen=True)
class Expected:
    line_no: int
    mode: str
    flag: str | None
    counted: str
    wall_time: str | None
    line: str


def _rows(family: str) -> list[Expected]:
    rows = []
    text = (CORPUS / f"{family}.tsv").read_text(encoding="utf-8")
    for raw in text.splitlines():
        if not raw or raw.startswith("#"):
            continue
        parts = raw.split("\t")
        wall = None
        if family == "kernel_framings":
            mode, counted, wall, line = parts
        else:
            mode, counted, line = parts
        mode, _, flag = mode.partition("+")
        rows.append(Expected(len(rows) + 1, mode, flag or None, counted, wall, line))
    return rows


def _counted(events: pl.DataFrame, failure_modes: pl.DataFrame) -> pl.DataFrame:
    """Whether each event counts as a failure (see the module docstring)."""
    return events.join(
        failure_modes.select("failure_mode", "counts_as_failure"),
        on="failure_mode",
        how="left",
    ).with_columns(
        counted=pl.col("counts_as_failure").fill_null(value=False)
        & ~pl.col("flags").fill_null("").str.contains("boot_time")
        & (
            (pl.col("failure_mode") != "nvswitch/sxid")
            | (pl.col("severity") == "fatal")
        )
    )


def _compare(
    expected: list[Expected], events: pl.DataFrame
) -> tuple[list[str], list[str]]:
    by_line: dict[int, list[dict]] = {}
    for row in events.iter_rows(named=True):
        by_line.setdefault(row["line_no"], []).append(row)
    false, missed = [], []
    for exp in expected:
        got = by_line.get(exp.line_no, [])
        where = f"line {exp.line_no}: {exp.line[:110]}"
        if exp.mode == "-":
            if got:
                false.append(f"{where} -> {[g['failure_mode'] for g in got]}")
            continue
        if exp.mode == "~":
            if any(g["counted"] for g in got):
                false.append(f"{where} -> counted {[g['failure_mode'] for g in got]}")
            continue
        if not got:
            missed.append(f"{where} -> no event (expected {exp.mode})")
            continue
        event = got[0]
        if exp.mode != "*" and event["failure_mode"] != exp.mode:
            false.append(f"{where} -> {event['failure_mode']} (expected {exp.mode})")
        if exp.flag and exp.flag not in (event["flags"] or ""):
            false.append(f"{where} -> flags {event['flags']!r} (expected {exp.flag})")
        if exp.counted == "y" and not event["counted"]:
            missed.append(f"{where} -> {event['failure_mode']} not counted")
        if exp.counted == "n" and event["counted"]:
            false.append(f"{where} -> {event['failure_mode']} counted")
        if exp.wall_time == "y" and event["ts"] is None:
            missed.append(f"{where} -> no wall time")
        if exp.wall_time == "n" and event["ts"] is not None:
            false.append(f"{where} -> wall time {event['ts']} from nowhere")
    return false, missed


def _kernel_events(family: str, tmp: Path) -> Iterator[tuple[Expected, pl.DataFrame]]:
    expected = _rows(family)
    if family == "kernel_framings":
        for exp in expected:
            path = tmp / f"framing{exp.line_no}.log"
            path.write_text(exp.line + "\n", encoding="utf-8")
            with Store(":memory:") as store:
                read_kernel(
                    store,
                    path,
                    host="node-x",
                    tz="UTC",
                    reference_date="2025-03-05",
                )
                events = _counted(store.table("events"), store.table("failure_modes"))
            yield (
                Expected(1, exp.mode, exp.flag, exp.counted, exp.wall_time, exp.line),
                events,
            )
        return
    path = tmp / f"{family}.log"
    path.write_text("".join(e.line + "\n" for e in expected), encoding="utf-8")
    with Store(":memory:") as store:
        read_kernel(store, path)
        events = _counted(store.table("events"), store.table("failure_modes"))
    for exp in expected:
        yield exp, events


def _measure(family: str, tmp: Path) -> dict:
    false, missed, lines, n_events = [], [], 0, 0
    for exp, events in _kernel_events(family, tmp):
        f, m = _compare([exp], events)
        false += f
        missed += m
        lines += 1
        n_events += events.filter(pl.col("line_no") == exp.line_no).height
    return {
        "family": family,
        "lines": lines,
        "events": n_events,
        "false": false,
        "missed": missed,
    }


def _expected_tsv(path: Path) -> list[list[str]]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [row.split("\t") for row in lines if row and not row.startswith("#")]


def _measure_nvsmi() -> dict:
    """The nvsmi family: events by (file, line) against ``nvsmi/expected.tsv``."""
    folder = CORPUS / "nvsmi"
    files = sorted(folder.glob("*.txt"), reverse=True)  # newest first, on purpose
    with Store(":memory:") as store:
        for path in files:
            read_file(store, path, kind="nvsmi", host=path.name.split("-")[0], tz="UTC")
        events = _counted(
            store.table("events").join(
                store.table("sources").select("source_id", "path"), on="source_id"
            ),
            store.table("failure_modes"),
        ).with_columns(file=pl.col("path").str.extract(r"([^/\\]+)$", 1))
    seen: set[tuple[str, int]] = set()
    false, missed = [], []
    for file, line, mode, counted in _expected_tsv(folder / "expected.tsv"):
        here = events.filter(pl.col("file") == file)
        if line != "*":
            here = here.filter(pl.col("line_no") == int(line))
        elif mode != "~":
            here = here.filter(pl.col("failure_mode") == mode)
        seen |= set(here.select("file", "line_no").iter_rows())
        where = f"{file}:{line}"
        if mode == "~":
            if here["counted"].any():
                false.append(f"{where} -> counted {here['failure_mode'].to_list()}")
            continue
        if here.height != 1:
            missed.append(f"{where} -> {here.height} events (expected 1 {mode})")
            continue
        if here["failure_mode"][0] != mode:
            false.append(f"{where} -> {here['failure_mode'][0]} (expected {mode})")
        if here["counted"][0] != (counted == "y"):
            false.append(
                f"{where} -> counted={here['counted'][0]} (expected {counted})"
            )
    for row in events.iter_rows(named=True):
        if (row["file"], row["line_no"]) not in seen:
            false.append(f"{row['file']}:{row['line_no']} -> {row['failure_mode']}")
    n_lines = sum(len(p.read_text().splitlines()) for p in files)
    return {
        "family": "nvsmi",
        "lines": n_lines,
        "events": events.height,
        "false": false,
        "missed": missed,
    }


#: Job states of an attempt that ended without finishing its work.
FAILED_STATES = ("FAILED", "NODE_FAIL", "TIMEOUT", "OUT_OF_MEMORY", "BOOT_FAIL")


def _measure_jobs(family: str, file: str, kind: str) -> dict:
    """A job family: failed attempts against ``jobs/<family>_expected.tsv``."""
    folder = CORPUS / "jobs"
    with Store(":memory:") as store:
        tz = "UTC" if kind == "sacct" else None  # k8s times carry their zone
        result = read_file(store, folder / file, kind=kind, tz=tz)
        attempts = build_job_attempts(store.table("jobs"), store.table("job_nodes"))
    failed = attempts.filter(pl.col("state").is_in(FAILED_STATES))
    got = {
        (
            r["job_id"],
            str(r["attempt"]),
            r["state"],
            str(r["n_gpus"]),
            str(r["n_nodes"]),
        )
        for r in failed.iter_rows(named=True)
    }
    want = {tuple(row) for row in _expected_tsv(folder / f"{family}_expected.tsv")}
    return {
        "family": family,
        "lines": result.n_lines,
        "events": failed.height,
        "false": sorted(got - want),
        "missed": sorted(want - got),
    }


@pytest.fixture(scope="module")
def kernel_table(tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    tmp = tmp_path_factory.mktemp("corpus")
    table = [_measure(f, tmp) for f in (*KERNEL_FAMILIES, "kernel_framings")]
    table += [
        _measure_nvsmi(),
        _measure_jobs("sacct", "sacct.psv", "sacct"),
        _measure_jobs("k8s", "k8s_podlist.json", "k8s"),
    ]
    print("\nsignal corpus (tests/corpus):")
    print(f"{'family':<18}{'lines':>7}{'events':>8}{'false':>7}{'missed':>8}")
    for row in table:
        print(
            f"{row['family']:<18}{row['lines']:>7}{row['events']:>8}"
            f"{len(row['false']):>7}{len(row['missed']):>8}"
        )
    return table


@pytest.mark.parametrize(
    "family", [*KERNEL_FAMILIES, "kernel_framings", "nvsmi", "sacct", "k8s"]
)
def test_corpus_family_has_no_false_and_no_missed_events(
    kernel_table: list[dict], family: str
) -> None:
    """Each family of the corpus: zero false and zero missed events (the
    expectations are hand-written per line; see the module docstring)."""
    [row] = [r for r in kernel_table if r["family"] == family]
    assert row["lines"] > 0
    assert (row["false"], row["missed"]) == ([], [])


def test_xid_catalogue_coverage_is_whole() -> None:
    """Every code of NVIDIA's Xid catalogue maps to a mode of the taxonomy (not
    ``gpu/unknown_xid``): coverage = codes mapped / codes in the catalogue = 1."""
    codes = XID_CATALOGUE["code"].to_list()
    mapped = [
        c for c in codes if XID_MODES.get(c, "gpu/unknown_xid") != "gpu/unknown_xid"
    ]
    print(f"\nXid catalogue coverage: {len(mapped)}/{len(codes)} codes mapped")
    assert len(codes) >= 100
    assert len(mapped) == len(codes)
