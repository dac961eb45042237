"""The report's goodput section (issue 11 §4): measured ETTR, badput waterfall,
the decision with its bounds and the ETTR charts, from a store with a run's
checkpoint log; no section without one. Values: the bundled simulated run
(datasets/synthetic, ground_truth.json: ETTR 0.97216), read through the same
functions as ``relkit goodput`` and ``relkit checkpoint --db``."""

import json
from pathlib import Path

import polars as pl
import pytest

import relkit
from relkit import datasets
from relkit.report import write_report


def _store(tmp_path: Path, *, with_checkpoints: bool) -> relkit.Store:
    """The bundled simulated run's assets, sacct dump and kernel logs."""
    raw = datasets.path("synthetic")
    truth = json.loads((raw / "ground_truth.json").read_text(encoding="utf-8"))
    store = relkit.Store(tmp_path / "s.duckdb")
    relkit.read_file(store, raw / "assets.csv", kind="assets")
    relkit.read_file(
        store, raw / "sacct.psv", kind="sacct", tz=truth["ingest"]["sacct_tz"]
    )
    reference = truth["ingest"]["kernel"].split("--reference-date ")[1].split()[0]
    relkit.ingest.read_path(
        store,
        raw / "kernel",
        kind="kernel",
        tz="UTC",
        reference_date=reference,
        host_from_filename=True,
    )
    if with_checkpoints:
        relkit.read_file(store, raw / "checkpoints.jsonl", kind="checkpoints")
    return store


@pytest.fixture(scope="module")
def reports(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The report of one store before and after its checkpoint log is ingested."""
    tmp = tmp_path_factory.mktemp("goodput-report")
    with _store(tmp, with_checkpoints=False) as store:
        write_report(store, tmp / "without")
        raw = datasets.path("synthetic")
        relkit.read_file(store, raw / "checkpoints.jsonl", kind="checkpoints")
        write_report(store, tmp / "with")
    return tmp / "without", tmp / "with"


def test_report_has_measured_goodput_and_decision(reports: tuple[Path, Path]) -> None:
    report_dir = reports[1]
    truth = json.loads(
        (datasets.path("synthetic") / "ground_truth.json").read_text(encoding="utf-8")
    )
    page = (report_dir / "report.html").read_text(encoding="utf-8")
    assert "Goodput of training runs" in page
    for div in ("badput-waterfall", "ettr-interval", "ettr-scale"):
        assert f'id="{div}"' in page
    assert "cdn.jsdelivr" not in page
    runs = pl.read_csv(report_dir / "tables" / "goodput_runs.csv")
    (row,) = runs.iter_rows(named=True)
    assert row["evidence"] == "step records"
    assert row["ettr_frac"] == pytest.approx(truth["runs"][0]["ettr_frac"], abs=5e-4)
    decision = pl.read_csv(report_dir / "tables" / "checkpoint_decision.csv").row(
        0, named=True
    )
    assert decision["interval_lower_h"] < decision["interval_h"]
    assert decision["interval_h"] < decision["interval_upper_h"]
    sweep = pl.read_csv(report_dir / "tables" / "ettr_by_gpus.csv")
    assert sweep["gpus"].max() >= 131072
    assert sweep["expected_ettr"].is_sorted(descending=True)


def test_report_without_checkpoint_log_has_no_goodput_section(
    reports: tuple[Path, Path],
) -> None:
    out = reports[0]
    page = (out / "report.html").read_text(encoding="utf-8")
    assert "Goodput of training runs" not in page
    assert not (out / "tables" / "goodput_runs.csv").exists()
