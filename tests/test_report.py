"""The offline report on small stores, where most sections have little data."""

from pathlib import Path

import polars as pl
import pytest

from relkit.errors import InsufficientDataError
from relkit.ingest import read_file
from relkit.report import ReportAssumptions, write_report
from relkit.store import Store

ASSETS = """host,in_service_ts,out_of_service_ts,gpus,system,rack
gpu001,2025-01-01T00:00:00Z,,8,clusterA,r1
gpu002,2025-01-01T00:00:00Z,,8,clusterA,r1
gpu003,2025-01-01T00:00:00Z,2025-02-01T00:00:00Z,8,clusterA,r2
gpu004,2025-01-01T00:00:00Z,,8,clusterB,r2
"""
EVENTS = """ts,host,failure_mode,repaired_ts
2025-01-10T00:00:00Z,gpu001,hardware/gpu_hbm,2025-01-10T04:00:00Z
2025-01-20T00:00:00Z,gpu002,network/nic,2025-01-20T01:00:00Z
2025-01-25T00:00:00Z,gpu003,hardware/gpu,
2025-02-15T00:00:00Z,gpu001,software/driver,2025-02-15T00:30:00Z
2025-03-01T00:00:00Z,gpu004,hardware/gpu,2025-03-01T02:00:00Z
"""


@pytest.fixture
def small_store(tmp_path: Path) -> Store:
    (tmp_path / "assets.csv").write_text(ASSETS)
    (tmp_path / "events.csv").write_text(EVENTS)
    store = Store(tmp_path / "small.duckdb")
    read_file(store, tmp_path / "assets.csv", kind="assets")
    read_file(store, tmp_path / "events.csv", kind="events")
    yield store
    store.close()


def test_report_on_a_small_fleet(small_store: Store, tmp_path: Path) -> None:
    """No system reaches 100 failures: the plan shows every system with a failure.

    clusterA has 3 nodes and 4 failures at 4 different instants; its job MTBF is
    calendar time (node-hours / 3) / 4 outages. Hand: open-ended nodes run to
    the events file's last record, gpu004's repair at 2025-03-01 02:00, and
    gpu003 leaves on 02-01, so node-hours = 2 × 1,418 h + 744 h = 3,580 h, node
    MTBF 895 h, job MTBF 298.3 h.
    """
    page = write_report(small_store, tmp_path / "out")
    html = page.read_text(encoding="utf-8")
    assert "No system has 100 failures" in html
    plan = (tmp_path / "out" / "tables" / "checkpoint_plan.csv").read_text()
    header, *rows = plan.strip().splitlines()
    assert header.startswith(
        "system,n_nodes,n_failures,n_interruptions,node_mtbf_h,mtbf_h"
    )
    cluster_a = next(r for r in rows if r.startswith("clusterA,"))
    fields = cluster_a.split(",")
    assert fields[1:4] == ["3", "4", "4"]  # nodes, failures, outages
    assert float(fields[4]) == pytest.approx(3580 / 4)
    assert float(fields[5]) == pytest.approx(3580 / 3 / 4)


def test_report_assumptions_are_stated(small_store: Store, tmp_path: Path) -> None:
    page = write_report(
        small_store, tmp_path / "out", assumptions=ReportAssumptions(cost_h=0.25)
    )
    assert "Assumed checkpoint write 15 min" in page.read_text(encoding="utf-8")


def test_report_on_an_empty_store_says_what_to_ingest(tmp_path: Path) -> None:
    with (
        Store(":memory:") as store,
        pytest.raises(InsufficientDataError, match="ingest"),
    ):
        write_report(store, tmp_path / "out")


def test_demo_shows_lanl_and_gpu_failure_modes(tmp_path: Path) -> None:
    """relkit demo: all 23,739 LANL records (shared/reference/README.md) and the
    gpud kernel-log excerpts: 5 Xid 119 lines on one GPU within 6 min are one
    gsp_firmware incident; 16 Xid 13 one application-error incident; the Xid 43
    (IGNORE in NVIDIA's catalogue, issue 10) one info incident."""
    from relkit.report import run_demo

    summary = run_demo(tmp_path)
    assert (summary["records"], summary["loaded"], summary["rejected"]) == (
        23739,
        23739,
        0,
    )
    assert summary["gpu_incidents"] == (
        "gpu/application_error (user): 1, gpu/gsp_firmware (hardware): 1, "
        "gpu/informational (info): 1"
    )
    # issue 14: one store of the simulated run -> report.html with the GPU, job
    # and goodput sections; the LANL data's own report under lanl/
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    for title in (
        "Xid codes",
        "Interruptions by cause",
        "Root causes in the shape of Llama 3 Table 5",
        "Goodput of training runs",
    ):
        assert f"<h2>{title}</h2>" in page, title
    assert summary["report"] == str(tmp_path / "report.html")
    lanl = (tmp_path / "lanl" / "report.html").read_text(encoding="utf-8")
    assert "<h2>MTBF by system</h2>" in lanl
    assert "<h2>Xid codes</h2>" not in lanl
    # issue 5: the simulated run's interruptions by cause match what was injected
    found, injected = summary["simulated_interruptions"].split(" (injected: ")
    assert found.replace(" unexpected,", " and").replace(" planned", "") == (
        injected.rstrip(")")
    )
    assert "hardware (unexpected)" in summary["interruptions_by_cause"]
    assert (tmp_path / "tables" / "simulated_run_interruptions_by_cause.csv").exists()
    # issue 11: the run's ETTR measured from its checkpoint log, as printed,
    # equals the truth of ground_truth.json to the 4 decimals shown (0.9722)
    measured, true = (
        summary["simulated_run_ettr"].split(" measured")[0],
        summary["simulated_run_ettr"].split("(true ")[1][:6],
    )
    assert measured == true == "0.9722"
    assert "recommended" in summary["checkpoint_interval"]
    by_cause = pl.read_csv(
        tmp_path / "tables" / "simulated_run_interruptions_by_cause.csv"
    )
    assert (by_cause["lost_gpu_h"] <= by_cause["lost_gpu_h_upper"]).all()
    again = run_demo(tmp_path)  # starts afresh, same answer
    assert again["loaded"] == 23739


def test_report_names_xid_codes_outside_the_catalogue(tmp_path: Path) -> None:
    """Issue 10 §1: an Xid code outside NVIDIA's catalogue (999) is not a failure
    by default and the report says so. Hand count: Xid 79 and 48 are two counted
    failures; Xid 999 is one unknown line, not counted."""
    log = tmp_path / "k.log"
    log.write_text(
        "2025-06-01T10:00:00+00:00 gpu01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, "
        "pid=1, GPU has fallen off the bus.\n"
        "2025-06-02T10:00:00+00:00 gpu02 kernel: NVRM: Xid (PCI:0000:3b:00): 999, "
        "pid=1, name=python3\n"
        "2025-06-03T10:00:00+00:00 gpu02 kernel: NVRM: Xid (PCI:0000:5b:00): 48, "
        "pid=1, name=python3\n"
    )
    said: list[str] = []
    with Store(tmp_path / "r.duckdb") as store:
        read_file(store, log, kind="kernel")
        page = write_report(store, tmp_path / "rep", progress=said.append)
    html = page.read_text()
    assert "counted as 2 failures" in html
    assert "(Xid 999 x1)" in html
    assert any("Xid 999 x1" in s and s.startswith("warning:") for s in said)


def test_report_when_no_checkpoint_interval_makes_progress(tmp_path: Path) -> None:
    """A log excerpt of 2 minutes with 3 node failures, the nodes in two systems
    (assets: n1, n2 in s1, n3 in s2, each in service 10:00-10:02): each node is
    at risk 2 min, so system s1's node MTBF is 2 x 2 / 2 = 2 min and a job
    spanning its 2 nodes fails every 2 / 2 = 1.0 min, less than the 5 min
    checkpoint write: no interval makes progress (Daly's model gives ETTR 0).
    The report says so instead of failing on the chart (it used to exit 1 with
    "optimum_interval_h must be a finite number > 0"), and says there is no gap
    between two failures to draw instead of failing on the histogram. (Issue
    14: the per-system sections need units with a system; they used to be
    drawn for any store.)"""
    lines = []
    for host, pci in (("n1", "3b"), ("n2", "5b"), ("n3", "7b")):
        lines += [
            f"2025-06-01T10:00:00+00:00 {host} kernel: NVRM: Xid (PCI:0000:{pci}:00): "
            "79, pid=1, GPU has fallen off the bus.",
            f"2025-06-01T10:02:00+00:00 {host} kernel: NVRM: loading NVIDIA UNIX "
            "x86_64 Kernel Module  550.54.15",
        ]
    log = tmp_path / "k.log"
    log.write_text("\n".join(lines) + "\n")
    assets = tmp_path / "assets.csv"
    assets.write_text(
        "host,in_service_ts,out_of_service_ts,gpus,system\n"
        + "".join(
            f"{h},2025-06-01T10:00:00Z,2025-06-01T10:02:00Z,8,{s}\n"
            for h, s in (("n1", "s1"), ("n2", "s1"), ("n3", "s2"))
        )
    )
    with Store(tmp_path / "r.duckdb") as store:
        read_file(store, log, kind="kernel")
        read_file(store, assets, kind="assets")
        page = write_report(store, tmp_path / "rep")
    html = page.read_text()
    assert "fails every 1.0 min" in html
    assert "no interval makes progress" in html
    assert "has no gap between two failures in the data" in html


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        (
            # one host logging 24 h with no failure: a one-sided bound only, at
            # the default 95 % (relkit.defaults): 2 x 24 / chi2(0.95; 2) = 8.01 h
            [
                "2025-06-01T00:00:00+00:00 q1 kernel: NVRM: loading NVIDIA UNIX "
                "x86_64 Kernel Module  550.54.15",
                "2025-06-02T00:00:00+00:00 q1 kernel: NVRM: loading NVIDIA UNIX "
                "x86_64 Kernel Module  550.54.15",
            ],
            "0 failures in 24 node-hours; no failure, so the MTBF is only bounded "
            "below: at least 8.01 h at 95% confidence.",
        ),
        (
            # one timed line, an Xid 79: a failure with no time at risk
            [
                "2025-06-01T00:00:00+00:00 q2 kernel: NVRM: Xid (PCI:0000:3b:00): "
                "79, pid=1, GPU has fallen off the bus.",
            ],
            "1 failures in 0 node-hours; no measurable time at risk",
        ),
    ],
)
def test_report_on_a_store_with_no_mtbf_to_print(
    tmp_path: Path, lines: list[str], expected: str
) -> None:
    """A store whose MTBF is a lower bound only (no failure) or undefined (no
    time at risk) still gets a report that says so; it used to stop with an
    internal TypeError formatting a null MTBF, or a window_end error from the
    Kaplan-Meier section."""
    log = tmp_path / "k.log"
    log.write_text("\n".join(lines) + "\n")
    with Store(tmp_path / "r.duckdb") as store:
        read_file(store, log, kind="kernel")
        page = write_report(store, tmp_path / "rep")
    assert expected in page.read_text()
