"""The report's scale section (issue 14 §2): MTTF and ETTR against GPU count.

Values are recomputed here by hand from the store's counts, not read back from
the functions the section calls: the node rate is failures over node-days with
Garwood's exact bounds from scipy.stats.chi2 (Garwood 1936,
doi:10.1093/biomet/28.3-4.437); MTTF(N) = 1/(N × per-GPU rate) (Kokolis et al.,
HPCA 2025, arXiv:2410.21680); E[ETTR] at the first-order optimum by the
formulas of Kokolis et al. written out below; Llama 3's published point is
54 days × 24 / 419 interruptions (arXiv:2407.21783, Table 5).
"""

import itertools
import math
from pathlib import Path

import polars as pl
import pytest
from report_stores import context, events_only_store, spec_titles, synthetic_store
from scipy import stats

from relkit import answers, charts
from relkit._report_scale import SCALE_GPUS, scale_sections
from relkit.published import published_mttf_points
from relkit.store import Store


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory):
    db = synthetic_store(tmp_path_factory.mktemp("scale") / "s.duckdb")
    with Store(db, read_only=True) as store:
        ctx, said = context(store)
        with charts.enable_theme():
            sections = scale_sections(ctx)
    return ctx, sections, said


def test_mttf_at_16384_gpus_is_one_over_n_times_the_per_gpu_rate(synthetic):
    """The section's MTTF at 16,384 GPUs equals 1/(16,384 × per-GPU rate), the
    per-GPU rate being the node failures counted over node-hours × 8 GPUs (the
    assets' gpus); its bounds are the same with Garwood's chi-square bounds of
    the count at the report's level c: lower chi2.ppf((1-c)/2, 2n)/2, upper
    chi2.ppf((1+c)/2, 2n+2)/2 failures."""
    ctx, sections, said = synthetic
    assert isinstance(sections, list)
    assert [t for t, _ in sections] == ["Scale: MTTF and ETTR against GPU count"]
    assert not [m for m in said if m.startswith("warning")]
    overall = answers.mtbf_of(ctx.obs, unit="node").row(0, named=True)
    n, node_h = overall["n_failures"], overall["exposure_h"]
    assert n >= 30  # node failure incidents of the 264 nodes over 54 days
    per_gpu_h = n / (node_h * 8)
    table = ctx.tables["scale_projection"]
    assert table["gpus"].to_list() == list(SCALE_GPUS)
    row = table.filter(pl.col("gpus") == 16384).row(0, named=True)
    assert row["mttf_h"] == pytest.approx(1.0 / (16384 * per_gpu_h), rel=1e-12)
    alpha = 1.0 - ctx.assumptions.confidence  # two-sided level of the report
    low_count = stats.chi2.ppf(alpha / 2, 2 * n) / 2
    high_count = stats.chi2.ppf(1 - alpha / 2, 2 * n + 2) / 2
    assert row["mttf_upper_h"] == pytest.approx(
        node_h * 8 / (16384 * low_count), rel=1e-9
    )
    assert row["mttf_lower_h"] == pytest.approx(
        node_h * 8 / (16384 * high_count), rel=1e-9
    )
    # MTTF halves with each doubling of the job
    mttf = table["mttf_h"].to_list()
    assert all(a / b == pytest.approx(2.0) for a, b in itertools.pairwise(mttf))
    body = sections[0][1]
    assert f"{1000 * n / (node_h / 24):,.3g} failures per 1000 node-days" in body


def test_ettr_at_the_optimum_by_kokolis_formula(synthetic):
    """E[ETTR] at 16,384 GPUs with the assumed w = 5 min, u0 = 10 min, q = 0:
    λ = 1/MTTF, Δt* = sqrt(w² + 2w(1 - λu0)/λ) - w and
    E = (1 - λ(u0 + Δt*/2)) / (1 + w/Δt*) (Kokolis et al., arXiv:2410.21680)."""
    ctx, _, _ = synthetic
    row = (
        ctx.tables["scale_projection"]
        .filter(pl.col("gpus") == 16384)
        .row(0, named=True)
    )
    w, u0 = 5 / 60, 10 / 60
    lam = 1.0 / row["mttf_h"]
    dt = math.sqrt(w * w + 2 * w * (1 - lam * u0) / lam) - w
    assert row["interval_h"] == pytest.approx(dt, rel=1e-9)
    expected = (1 - lam * (u0 + dt / 2)) / (1 + w / dt)
    assert row["expected_ettr"] == pytest.approx(expected, rel=1e-9)
    assert row["expected_ettr_lower"] < row["expected_ettr"]
    assert row["expected_ettr"] < row["expected_ettr_upper"]


def test_published_points_and_charts(synthetic):
    """Llama 3: 54 × 24 / 419 = 3.093 h at 16,384 GPUs; Kokolis et al.: 7.9 h
    at 1,024 GPUs and 47.7 days = 1,144.8 h at 8 (paper-tables CSV). Both
    charts are placed, titled, with units on the axes."""
    ctx, sections, _ = synthetic
    points = published_mttf_points()
    llama = points.filter(pl.col("source").str.starts_with("Llama 3")).row(
        0, named=True
    )
    assert (llama["gpus"], llama["mttf_h"]) == (16384, pytest.approx(54 * 24 / 419))
    kokolis = dict(
        points.filter(
            pl.col("kind") == "observed", ~pl.col("source").str.contains("Llama")
        )
        .select("gpus", "mttf_h")
        .iter_rows()
    )
    assert kokolis == {8: pytest.approx(47.7 * 24), 1024: pytest.approx(7.9)}
    specs = dict(ctx.charts)
    assert set(specs) == {"mttf-scale", "ettr-scale-fleet"}
    for div, spec in specs.items():
        assert spec.get("title"), div
    assert "MTTF (h, log scale)" in spec_titles(specs["mttf-scale"])
    assert "GPUs in the job (log scale, base 2)" in spec_titles(specs["mttf-scale"])
    assert "Expected ETTR" in spec_titles(specs["ettr-scale-fleet"])
    body = sections[0][1]
    assert "Llama 3 reported one every 3.09 h" in body


def test_measured_job_mttf_by_size(synthetic):
    """The store's jobs give a measured MTTF per size bucket: job-hours over
    interruptions attributed to hardware, network or infrastructure; the
    2,048-GPU training run's bucket has failures (56 unexpected interruptions
    injected, ground_truth.json) and its MTTF is exposure / failures."""
    ctx, _, _ = synthetic
    measured = ctx.tables["job_mttf_by_size"]
    big = measured.filter(pl.col("gpus_max") == 2048).row(0, named=True)
    assert big["n_failures"] > 30
    assert big["mttf_h"] == pytest.approx(big["exposure_h"] / big["n_failures"])


def test_lanl_has_no_gpu_count(lanl_db: Path):
    """LANL's nodes are CPU nodes: no assets.gpus and no jobs, so the section
    is left out with the reason naming what to ingest."""
    with Store(lanl_db, read_only=True) as store:
        ctx, _ = context(store)
        reason = scale_sections(ctx)
    assert isinstance(reason, str)
    assert "no GPU count" in reason
    assert "assets.gpus or jobs.n_gpus" in reason
    assert ctx.tables == {}
    assert ctx.charts == []


def test_store_without_failures_or_gpus(tmp_path: Path):
    """A normalised events file with no assets records no GPU count: reason."""
    db = events_only_store(tmp_path / "e.duckdb", tmp_path / "events.csv")
    with Store(db, read_only=True) as store:
        ctx, _ = context(store)
        reason = scale_sections(ctx)
    assert isinstance(reason, str)
    assert "no GPU count" in reason
