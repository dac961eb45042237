"""Tests of relkit.charts.hazard_ratio_forest_chart (issue 12 §4/§6).

The chart draws the ``hazard_ratios`` frame of relkit.survival's Cox and
Weibull AFT fits as given, so the expected values are the fitted frame's own
(computed in each test), checked against the chart's embedded dataset and
encodings; where a number is asserted, its source is in the docstring.
"""

import json
import math
from pathlib import Path

import altair as alt
import numpy as np
import polars as pl
import pytest
import vl_convert as vlc

from relkit import charts
from relkit.errors import InsufficientDataError, SchemaError
from relkit.survival import cox_hazards, weibull_aft
from tests.shared_paths import SHARED

C15 = SHARED / "cases" / "C15-degenerate-survival-fits.csv"
LANL = (
    Path(__file__).resolve().parents[1]
    / "datasets"
    / "lanl"
    / "LA-UR-05-7318-failure-data-1996-2005.csv"
)
X_TITLE = "Hazard ratio against the reference (log scale)"


def roundtrip(chart: alt.TopLevelMixin) -> dict:
    """to_dict() validates against the Vega-Lite schema; the JSON must be valid too."""
    spec = chart.to_dict()
    assert json.loads(json.dumps(spec, allow_nan=False)) == spec
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v6")
    return spec


def dataset(spec: dict) -> list[dict]:
    """The rows of the top-level dataset of a chart spec."""
    return spec["datasets"][spec["data"]["name"]]


def layers(spec: dict) -> dict[str, dict]:
    """The four layers by role: reference rule, interval, point, no-ratio text."""
    rule, interval, point, text = spec["spec"]["layer"]
    return {"rule": rule, "interval": interval, "point": point, "text": text}


def _three_racks(seed: int = 1, n: int = 300) -> pl.DataFrame:
    """Exponential lives with rack hazards 1 : 2 : 0.5, uniform censoring."""
    rng = np.random.default_rng(seed)
    rack = rng.choice(["a", "b", "c"], n)
    mult = np.select([rack == "a", rack == "b"], [1.0, 2.0], 0.5)
    life = rng.exponential(100.0 / mult)
    cens = rng.uniform(0, 200, n)
    return pl.DataFrame(
        {
            "stop_h": np.minimum(life, cens),
            "observed": life <= cens,
            "rack": rack,
        }
    )


def _c15_xid48() -> pl.DataFrame:
    """shared/cases/C15 mode xid48 as a survival table (as tests/test_hazards.py)."""
    return (
        pl.read_csv(C15)
        .filter(mode="xid48")
        .select(
            stop_h=pl.col("duration_h").cast(pl.Float64),
            observed=pl.col("failed").cast(pl.Boolean),
            sku="sku",
            rack="rack",
        )
    )


def test_forest_encodings_and_data_match_the_cox_frame() -> None:
    """Every fitted row is drawn at the frame's ratio and bounds, on a log x axis.

    The expected values are cox_hazards' own frame on three simulated racks
    (hazards 1 : 2 : 0.5); the chart must carry them unchanged, labelled
    "<level> vs <reference>", with a rule at HR = 1.
    """
    fit = cox_hazards(_three_racks(), covariates=["rack"])
    frame = fit.hazard_ratios
    spec = roundtrip(charts.hazard_ratio_forest_chart(frame, title="By rack"))
    assert spec["title"] == "By rack"
    rows = {r["level"]: r for r in dataset(spec)}
    assert len(rows) == frame.height == 2
    for want in frame.iter_rows(named=True):
        got = rows[want["level"]]
        assert got["row_label"] == f"{want['level']} vs {want['reference']}"
        for col in ("hazard_ratio", "lower", "upper", "p_value"):
            assert got[col] == pytest.approx(want[col], rel=1e-12)
        assert (got["n_units"], got["n_events"]) == (want["n_units"], want["n_events"])
        assert got["has_ratio"] is True
        assert got["no_ratio_label"] is None
    lay = layers(spec)
    assert lay["rule"]["mark"]["type"] == "rule"
    assert lay["rule"]["encoding"]["x"]["datum"] == 1.0
    assert lay["interval"]["encoding"]["x"]["field"] == "lower"
    assert lay["interval"]["encoding"]["x2"]["field"] == "upper"
    assert lay["point"]["encoding"]["x"]["field"] == "hazard_ratio"
    for role in ("rule", "interval", "point"):
        assert lay[role]["encoding"]["x"]["scale"] == {
            "type": "log",
            "domain": {"unionWith": [0.5, 2.0]},
        }
    assert lay["point"]["encoding"]["x"]["title"] == X_TITLE
    assert lay["point"]["encoding"]["y"]["field"] == "row_label"
    tips = {t["field"] for t in lay["point"]["encoding"]["tooltip"]}
    assert {"hazard_ratio", "lower", "upper", "p_value", "n_units", "n_events"} <= tips
    assert spec["facet"]["row"]["field"] == "covariate"
    assert spec["resolve"]["scale"]["y"] == "independent"


def test_rows_grouped_by_covariate_in_natural_order() -> None:
    """Panels follow the frame's covariate order; levels sort 2 < 10 < 18 < b."""
    frame = pl.DataFrame(
        {
            "covariate": ["system", "system", "system", "batch"],
            "level": ["18", "2", "10", "b2"],
            "reference": ["5", "5", "5", "b1"],
            "hazard_ratio": [1.5, 0.8, 2.0, 3.0],
            "lower": [1.0, 0.5, 1.2, 2.0],
            "upper": [2.2, 1.3, 3.3, 4.5],
            "p_value": [0.05, 0.4, 0.01, 1e-4],
            "n_units": [10, 12, 9, 40],
            "n_events": [5, 4, 6, 20],
            "status": ["ok"] * 4,
        }
    )
    spec = roundtrip(charts.hazard_ratio_forest_chart(frame))
    assert [r["row_label"] for r in dataset(spec)] == [
        "2 vs 5",
        "10 vs 5",
        "18 vs 5",
        "b2 vs b1",
    ]
    assert spec["facet"]["row"]["sort"] == ["system", "batch"]
    assert layers(spec)["point"]["encoding"]["y"]["sort"] is None  # data order


@pytest.mark.skipif(not C15.exists(), reason="shared cases absent")
def test_ref_c15_xid48_separated_rack_is_labelled_not_plotted() -> None:
    """shared/cases/README.md C15, xid48: rack r2's four units all fail first.

    cox_hazards returns one row, rack r2 vs r1, status "separation: level r2
    has only failures", ratio null (tests/test_hazards.py). The chart keeps
    the row, labels it in words, and draws no point or interval for it; the
    SVG drawn offline by vl-convert shows the row and its label.
    """
    frame = cox_hazards(_c15_xid48(), covariates=["sku", "rack"]).hazard_ratios
    spec = roundtrip(charts.hazard_ratio_forest_chart(frame))
    (row,) = dataset(spec)
    assert row["row_label"] == "r2 vs r1"
    assert row["has_ratio"] is False
    assert row["hazard_ratio"] is None
    assert row["no_ratio_label"] == "separated: only failures (HR → ∞), no ratio"
    assert row["status"] == "separation: level r2 has only failures"
    lay = layers(spec)
    for role in ("interval", "point"):
        assert lay[role]["transform"] == [{"filter": "datum.has_ratio"}]
    assert lay["text"]["transform"] == [{"filter": "(!datum.has_ratio)"}]
    assert lay["text"]["encoding"]["text"]["field"] == "no_ratio_label"
    assert lay["text"]["encoding"]["y"]["field"] == "row_label"
    svg = vlc.vegalite_to_svg(spec)
    assert svg.startswith("<svg")
    assert "r2 vs r1" in svg
    assert "separated: only failures" in svg
    assert X_TITLE in svg


def test_level_without_failures_kept_beside_fitted_levels() -> None:
    """A rack with no failure (separated, HR → 0) stays as a labelled row.

    cox_hazards flags rack d ("separation: level d has no failures") and fits
    the other racks; the chart draws those two and labels d, in natural order.
    """
    extra = pl.DataFrame(
        {
            "stop_h": [50.0, 80.0, 120.0],
            "observed": [False] * 3,
            "rack": ["d"] * 3,
        }
    )
    fit = cox_hazards(pl.concat([_three_racks(seed=5), extra]), covariates=["rack"])
    spec = roundtrip(charts.hazard_ratio_forest_chart(fit.hazard_ratios))
    rows = dataset(spec)
    assert [r["level"] for r in rows] == sorted(fit.hazard_ratios["level"])
    d = next(r for r in rows if r["level"] == "d")
    assert d["has_ratio"] is False
    assert d["no_ratio_label"] == "separated: no failures (HR → 0), no ratio"
    drawn = [r for r in rows if r["has_ratio"]]
    assert len(drawn) == 2
    assert all(r["hazard_ratio"] > 0 for r in drawn)
    svg = vlc.vegalite_to_svg(spec)
    assert "separated: no failures" in svg


def test_weibull_aft_frame_carries_time_ratios_in_tooltip() -> None:
    """The AFT frame draws its converted hazard ratio; time ratios in the tooltip.

    weibull_aft's HR = TR^(-ρ) (Klein & Moeschberger §12.2); the chart's x is
    ``hazard_ratio`` and the dataset keeps ``time_ratio`` and its bounds as
    fitted (values from the fit in this test).
    """
    fit = weibull_aft(_three_racks(), covariates=["rack"])
    frame = fit.hazard_ratios
    spec = roundtrip(charts.hazard_ratio_forest_chart(frame))
    lay = layers(spec)
    assert lay["point"]["encoding"]["x"]["field"] == "hazard_ratio"
    tips = {t["field"] for t in lay["point"]["encoding"]["tooltip"]}
    assert {"time_ratio", "time_ratio_lower", "time_ratio_upper"} <= tips
    rows = {r["level"]: r for r in dataset(spec)}
    for want in frame.iter_rows(named=True):
        got = rows[want["level"]]
        assert got["time_ratio"] == pytest.approx(want["time_ratio"], rel=1e-12)
        assert got["hazard_ratio"] == pytest.approx(
            want["time_ratio"] ** (-fit.weibull_shape), rel=1e-8
        )


def test_numeric_covariate_row_reads_per_unit() -> None:
    """A numeric covariate (level and reference null) reads "per unit of slot"."""
    t = _three_racks().with_columns(slot=pl.Series(np.arange(300) % 7, dtype=pl.Int64))
    frame = cox_hazards(t, covariates=["slot"]).hazard_ratios
    assert frame["level"].to_list() == [None]
    spec = roundtrip(charts.hazard_ratio_forest_chart(frame))
    (row,) = dataset(spec)
    assert row["row_label"] == "per unit of slot"
    assert row["hazard_ratio"] == pytest.approx(frame["hazard_ratio"][0], rel=1e-12)


def test_joint_quasi_separation_and_other_statuses_labelled() -> None:
    """Each non-ok status of relkit.survival._regression gets its own words."""
    statuses = [
        "quasi-separation: at every failure time the units of level x at risk "
        "fail first (monotone likelihood)",
        "quasi-separation (joint): the fitted log ratio ran to 14.2; no finite "
        "estimate",
        "dropped: constant once the separated units are left out",
    ]
    frame = pl.DataFrame(
        {
            "covariate": ["c"] * 3,
            "level": ["x", "y", "z"],
            "reference": ["w"] * 3,
            "hazard_ratio": [None, None, None],
            "lower": [None, None, None],
            "upper": [None, None, None],
            "p_value": [None, None, None],
            "n_units": [3, 4, 5],
            "n_events": [2, 2, 0],
            "status": statuses,
        },
        schema_overrides=dict.fromkeys(
            ("hazard_ratio", "lower", "upper", "p_value"), pl.Float64
        ),
    )
    spec = roundtrip(charts.hazard_ratio_forest_chart(frame))
    assert [r["no_ratio_label"] for r in dataset(spec)] == [
        "quasi-separated: monotone likelihood, no ratio",
        "quasi-separated (joint): no finite ratio",
        "dropped: no ratio",
    ]
    assert "quasi-separated (joint)" in vlc.vegalite_to_svg(spec)


def test_errors_name_the_fix() -> None:
    """Missing columns, no rows, repeats, bad ratios and C19's 5,001 rows."""
    frame = cox_hazards(_three_racks(), covariates=["rack"]).hazard_ratios
    missing = r"missing column\(s\) \['p_value', 'status'\]"
    with pytest.raises(SchemaError, match=missing):
        charts.hazard_ratio_forest_chart(frame.drop("p_value", "status"))
    with pytest.raises(InsufficientDataError, match="no rows"):
        charts.hazard_ratio_forest_chart(frame.head(0))
    with pytest.raises(SchemaError, match="repeated"):
        charts.hazard_ratio_forest_chart(pl.concat([frame, frame.head(1)]))
    bad = frame.with_columns(lower=pl.Series([0.0, *frame["lower"][1:]]))
    with pytest.raises(SchemaError, match="finite and > 0"):
        charts.hazard_ratio_forest_chart(bad)
    swapped = frame.with_columns(lower=pl.col("upper"), upper=pl.col("lower"))
    with pytest.raises(SchemaError, match=r"lower .* > upper"):
        charts.hazard_ratio_forest_chart(swapped)
    # case C19: 5,001 rows would raise Altair's MaxRowsError; relkit says why first
    big = pl.DataFrame(
        {
            "covariate": ["node"] * 5001,
            "level": [f"n{i}" for i in range(5001)],
            "reference": ["n0"] * 5001,
            "hazard_ratio": [1.0] * 5001,
            "lower": [0.5] * 5001,
            "upper": [2.0] * 5001,
            "p_value": [0.5] * 5001,
            "n_units": [1] * 5001,
            "n_events": [1] * 5001,
            "status": ["ok"] * 5001,
        }
    )
    with pytest.raises(SchemaError, match=r"5,001 rows; at most 5,000"):
        charts.hazard_ratio_forest_chart(big)
    assert charts.hazard_ratio_forest_chart(big.head(5000)).to_dict()["facet"]


@pytest.mark.skipif(not LANL.exists(), reason="bundled LANL data absent")
def test_recover_lanl_by_system_renders() -> None:
    """LANL (bundled), a node's first failure by system, Cox (answers.hazards_by).

    Recorded in tests/test_hazards.py: reference system 18, system 10 against
    18 HR 0.347. The chart has one row per other system (18 of 19 systems,
    frame order kept by system number), system 10 drawn at the fit's ratio,
    and renders offline to SVG.
    """
    from relkit.answers import hazards_by, store_tables
    from relkit.ingest import read_file
    from relkit.store import Store

    with Store(":memory:") as store:
        read_file(store, LANL, kind="lanl")
        tables = store_tables(store)
    frame = hazards_by(**tables, covariates=["system"]).hazard_ratios
    spec = roundtrip(charts.hazard_ratio_forest_chart(frame, title="LANL"))
    rows = dataset(spec)
    assert len(rows) == frame.height == 18
    levels = [r["level"] for r in rows]
    assert levels == sorted(levels, key=int)
    ten = next(r for r in rows if r["level"] == "10")
    assert ten["row_label"] == "10 vs 18"
    assert ten["hazard_ratio"] == pytest.approx(0.3472, abs=1e-3)
    assert ten["lower"] < ten["hazard_ratio"] < ten["upper"]
    assert all(math.isfinite(r["hazard_ratio"]) for r in rows if r["has_ratio"])
    svg = vlc.vegalite_to_svg(spec)
    assert "10 vs 18" in svg
    assert X_TITLE in svg
