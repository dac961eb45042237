"""The report's goodput sections (issue 14 §2): measured ETTR, badput waterfall,
the decision with its bounds and ETTR against the interval with the operating
point and the optimum; the reason line without a checkpoint log.

Values: the bundled simulated run (datasets/synthetic, ground_truth.json: ETTR
0.97216, checkpoint interval 0.25 h); the optimum recomputed here by hand with
Kokolis et al.'s first-order formula (arXiv:2410.21680), written out below.
"""

import math
from pathlib import Path

import pytest
from report_stores import (
    context,
    events_only_store,
    spec_titles,
    synthetic_store,
    synthetic_truth,
)

from relkit import charts
from relkit._report_goodput import NO_CHECKPOINTS, goodput_sections
from relkit.store import Store


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):
    db = synthetic_store(tmp_path_factory.mktemp("goodput") / "s.duckdb")
    with Store(db, read_only=True) as store:
        ctx, said = context(store)
        with charts.enable_theme():
            sections = goodput_sections(ctx)
    return ctx, sections, said


def test_sections_and_measured_ettr(synthetic):
    """Two sections; the run's measured ETTR is the injected one within 5e-4
    (ground_truth.json), on step records; the waterfall is drawn."""
    ctx, sections, said = synthetic
    assert [t for t, _ in sections] == [
        "Goodput of training runs",
        "Checkpoint interval of the measured runs",
    ]
    assert not [m for m in said if m.startswith("warning")]
    truth = synthetic_truth()["runs"][0]
    (run,) = ctx.tables["goodput_runs"].iter_rows(named=True)
    assert run["evidence"] == "step records"
    assert run["ettr_frac"] == pytest.approx(truth["ettr_frac"], abs=5e-4)
    assert run["checkpoint_interval_h"] == pytest.approx(
        truth["checkpoint_interval_h"], rel=0.02
    )
    specs = dict(ctx.charts)
    assert {"badput-waterfall", "ettr-interval", "ettr-scale"} <= set(specs)
    assert "cdn.jsdelivr" not in "".join(b for _, b in sections)


def test_decision_optimum_by_kokolis_formula(synthetic):
    """The first-order optimum Δt* = sqrt(w² + 2w(1 - λ(u0+q))/λ) - w and
    E[ETTR] = (1 - λ(u0 + q + Δt/2)) / (1 + w/Δt), with the decision's measured
    λ (interruptions per hour of running), w, u0 and q; the interval's bounds
    bracket it and come from the rate's bounds (a higher rate, a shorter
    interval)."""
    ctx, _, _ = synthetic
    d = ctx.tables["checkpoint_decision"].row(0, named=True)
    assert d["method"] == "Kokolis et al. first-order E[ETTR], exponential failures"
    lam, w, u0, q = d["failure_rate_per_h"], d["cost_h"], d["restart_h"], d["queue_h"]
    assert lam == pytest.approx(d["n_failures"] / d["exposure_h"], rel=1e-12)
    dt = math.sqrt(w * w + 2 * w * (1 - lam * (u0 + q)) / lam) - w
    assert d["interval_h"] == pytest.approx(dt, rel=1e-6)
    ettr = (1 - lam * (u0 + q + dt / 2)) / (1 + w / dt)
    assert d["expected_ettr"] == pytest.approx(ettr, rel=1e-6)
    assert d["interval_lower_h"] < d["interval_h"] < d["interval_upper_h"]
    assert d["expected_ettr_lower"] < d["expected_ettr"] < d["expected_ettr_upper"]


def test_ettr_chart_marks_operating_point_and_optimum(synthetic):
    """The ETTR-vs-interval chart marks the run's measured interval (0.25 h =
    15 min, ground truth) with its measured ETTR, and the optimum from the
    decision; titles and axis units are set."""
    ctx, sections, _ = synthetic
    spec = dict(ctx.charts)["ettr-interval"]
    assert spec["title"].startswith("Run run-1")
    assert "Checkpoint interval (min)" in spec_titles(spec)
    marks = [
        row
        for values in spec["datasets"].values()
        for row in values
        if isinstance(row, dict) and "kind" in row
    ]
    kinds = {m["kind"]: m for m in marks}
    d = ctx.tables["checkpoint_decision"].row(0, named=True)
    assert kinds["measured"]["interval_h"] == pytest.approx(d["measured_interval_h"])
    assert kinds["measured"]["interval_min"] == pytest.approx(15.0, rel=0.02)
    assert kinds["measured"]["ettr"] == pytest.approx(d["measured_ettr"])
    assert kinds["optimum"]["interval_h"] == pytest.approx(d["interval_h"])
    body = dict(sections)["Checkpoint interval of the measured runs"]
    assert f"every {d['interval_h'] * 60:,.1f} min" in body
    curve = ctx.tables["ettr_by_interval"]
    # the optimum is the curve's maximum (61 log-spaced points around it)
    assert curve["ettr_frac"].max() <= d["expected_ettr"] + 1e-9


def test_store_without_checkpoint_log(tmp_path: Path):
    """The simulated run's store without its checkpoint log: the reason line,
    no table, no chart."""
    db = synthetic_store(tmp_path / "s.duckdb", with_checkpoints=False)
    with Store(db, read_only=True) as store:
        ctx, _ = context(store)
        assert goodput_sections(ctx) == NO_CHECKPOINTS
    assert ctx.tables == {}
    assert ctx.charts == []
    assert "relkit ingest --kind checkpoints" in NO_CHECKPOINTS


def test_lanl_and_events_only_stores_give_the_reason(lanl_db: Path, tmp_path: Path):
    """LANL and a normalised events file have no checkpoint log."""
    db = events_only_store(tmp_path / "e.duckdb", tmp_path / "events.csv")
    for path in (lanl_db, db):
        with Store(path, read_only=True) as store:
            ctx, _ = context(store)
            assert goodput_sections(ctx) == NO_CHECKPOINTS
