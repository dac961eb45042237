"""Charts of repairable systems: the MCF with its band and the Crow-AMSAA plot."""

import json
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import vl_convert as vlc

from relkit import answers, charts
from relkit.errors import InsufficientDataError, SchemaError
from relkit.repairable import crow_amsaa, mean_cumulative_function
from relkit.store import Store

#: ReliaWiki "Crow-AMSAA Parameter Estimation Example" (ReliaSoft), 22 failures,
#: failure-terminated at 620 h (as in tests/test_repairable.py).
RELIAWIKI_TIMES = [2.7, 10.3, 12.5, 30.6, 57.0, 61.3, 80.0, 109.5, 125.0, 128.6,
                   143.8, 167.9, 229.2, 296.7, 320.6, 328.2, 366.2, 396.7, 421.1,
                   438.2, 501.2, 620.0]  # fmt: skip


def roundtrip(chart: object) -> dict:
    """to_dict() validates against the Vega-Lite schema; the JSON must be valid."""
    spec = chart.to_dict()  # type: ignore[attr-defined]
    assert json.loads(json.dumps(spec, allow_nan=False)) == spec
    return spec


def layer_rows(spec: dict, i: int) -> list[dict]:
    """Rows of layer i's dataset (a layer with its own data, or the top one)."""
    data = spec["layer"][i].get("data", spec.get("data"))
    return spec["datasets"][data["name"]]


@pytest.fixture
def hand_mcf() -> pl.DataFrame:
    """mean_cumulative_function's hand example (its Notes): A on [0, 10] fails at
    2, 6 h; B on [0, 8] at 4 h; C on [0, 5] at 3 h -> MCF 1/3, 2/3, 1, 3/2."""
    ev = pl.DataFrame({"unit_id": ["A", "A", "B", "C"], "time_h": [2.0, 6, 4, 3]})
    un = pl.DataFrame({"unit_id": ["A", "B", "C"], "exit_h": [10.0, 8, 5]})
    return mean_cumulative_function(ev, un)


@pytest.fixture
def reliawiki() -> tuple[pl.DataFrame, pl.DataFrame]:
    ev = pl.DataFrame({"unit_id": ["s"] * 22, "time_h": RELIAWIKI_TIMES})
    un = pl.DataFrame({"unit_id": ["s"], "exit_h": [620.0]})
    mcf = mean_cumulative_function(ev, un)
    fit = crow_amsaa(ev, un, terminated="failure")
    return mcf, fit


def test_mcf_chart_band_and_line_are_the_frame(hand_mcf: pl.DataFrame) -> None:
    """The band's lower/upper and the line's mcf are the frame's values (hand
    example: 1/3, 2/3, 1, 3/2 at 2, 3, 4, 6 h), step-after, units on the axes."""
    spec = roundtrip(charts.mcf_chart(hand_mcf, title="MCF"))
    band, line = spec["layer"]
    assert (band["mark"]["type"], line["mark"]["type"]) == ("area", "line")
    assert band["mark"]["interpolate"] == line["mark"]["interpolate"] == "step-after"
    assert band["encoding"]["y"]["field"] == "lower"
    assert band["encoding"]["y2"]["field"] == "upper"
    assert line["encoding"]["x"]["title"] == "Age (h)"
    rows = layer_rows(spec, 1)
    assert [r["time_h"] for r in rows] == [2.0, 3.0, 4.0, 6.0]
    np.testing.assert_allclose([r["mcf"] for r in rows], [1 / 3, 2 / 3, 1, 1.5])
    np.testing.assert_allclose([r["lower"] for r in rows], hand_mcf["lower"])
    np.testing.assert_allclose([r["upper"] for r in rows], hand_mcf["upper"])
    assert spec["title"] == "MCF"


def test_mcf_chart_missing_columns_are_named(hand_mcf: pl.DataFrame) -> None:
    with pytest.raises(SchemaError, match="lower"):
        charts.mcf_chart(hand_mcf.drop("lower"))
    with pytest.raises(SchemaError, match="system"):
        charts.mcf_chart(hand_mcf, color="system")
    two = pl.concat([hand_mcf.with_columns(system=pl.lit(s)) for s in ("2", "20")])
    with pytest.raises(SchemaError, match="color='system'"):
        charts.mcf_chart(two)
    with pytest.raises(InsufficientDataError):
        charts.mcf_chart(hand_mcf.clear())


@pytest.fixture(scope="module")
def lanl_mcf(lanl_db: Path) -> pl.DataFrame:
    with Store(lanl_db, read_only=True) as store:
        tables = answers.store_tables(store)
    return answers.mcf_by(**tables, by=["system"])


def test_mcf_chart_lanl_per_system_stays_under_5000_rows(
    lanl_mcf: pl.DataFrame,
) -> None:
    """LANL per system: 21,434 MCF rows over 22 systems (system 2 alone 5,397,
    measured), beyond Altair's 5,000 (case C19). The chart keeps every system,
    each system's first and last point exactly, and says what it drew."""
    assert lanl_mcf.height > charts.MAX_ROWS
    spec = roundtrip(charts.mcf_chart(lanl_mcf, color="system"))
    rows = pl.DataFrame(layer_rows(spec, 1))
    assert rows.height <= charts.MAX_ROWS
    assert set(rows["system"]) == set(lanl_mcf["system"])
    ends = lanl_mcf.group_by("system").agg(
        pl.col("time_h").last(), pl.col("mcf").last()
    )
    drawn_ends = rows.group_by("system").agg(
        pl.col("time_h").last(), pl.col("mcf").last()
    )
    joined = ends.join(drawn_ends, on="system", suffix="_drawn")
    np.testing.assert_allclose(joined["mcf"], joined["mcf_drawn"], rtol=1e-12)
    assert (joined["time_h"] == joined["time_h_drawn"]).all()
    assert f"of {lanl_mcf.height:,} points drawn" in spec["title"]["subtitle"]


def test_crow_amsaa_chart_reliawiki_line_is_the_fit(
    reliawiki: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    """ReliaWiki example: beta 0.6142, lambda 0.4239 (failure-terminated at
    620 h). The curve is lambda t^beta; at 620 h it is n = 22, since the MLE
    sets lambda = n / T^beta. Points are the cumulative counts 1..22. Both axes
    log; the subtitle states beta's bounds and the verdict."""
    mcf, fit = reliawiki
    spec = roundtrip(charts.crow_amsaa_chart(mcf, fit))
    points, curve = layer_rows(spec, 0), layer_rows(spec, 1)
    assert [p["mcf"] for p in points] == pytest.approx(list(range(1, 23)))
    beta, lam = fit["beta"].item(), fit["lambda_per_h_beta"].item()
    assert beta == pytest.approx(0.6142, abs=1e-4)
    assert lam == pytest.approx(0.4239, abs=1e-4)
    t = np.array([r["time_h"] for r in curve])
    np.testing.assert_allclose(
        [r["expected_failures"] for r in curve], lam * t**beta, rtol=1e-12
    )
    assert t[0] == pytest.approx(2.7)
    assert t[-1] == pytest.approx(620.0)
    assert curve[-1]["expected_failures"] == pytest.approx(22.0, rel=1e-9)
    for layer in spec["layer"][:2]:
        assert layer["encoding"]["x"]["scale"]["type"] == "log"
        assert layer["encoding"]["y"]["scale"]["type"] == "log"
    lo, hi = fit["beta_lower"].item(), fit["beta_upper"].item()
    subtitle = spec["title"]["subtitle"]
    assert f"[{lo:.3g}, {hi:.3g}]" in subtitle
    assert ("improving" in subtitle) == (hi < 1)


def test_crow_amsaa_chart_groups_and_a_group_without_fit() -> None:
    """Two groups: 'a' (4 failures, beta 0.6113 per crow_amsaa's docstring) and
    'b' (1 failure: no fit). 'b' gets points, no curve, and the subtitle names
    it; 'a' gets a curve and an end label."""
    ev = pl.DataFrame(
        {"unit_id": ["a"] * 4 + ["b"], "time_h": [30.0, 150, 400, 800, 50]}
    )
    un = pl.DataFrame(
        {"unit_id": ["a", "b"], "exit_h": [1000.0, 1000], "grp": ["a", "b"]}
    )
    mcf = mean_cumulative_function(ev, un, by=["grp"])
    fit = crow_amsaa(ev, un, by=["grp"])
    spec = roundtrip(charts.crow_amsaa_chart(mcf, fit, color="grp", title="t"))
    assert {r["grp"] for r in layer_rows(spec, 0)} == {"a", "b"}
    assert {r["grp"] for r in layer_rows(spec, 1)} == {"a"}
    (label,) = layer_rows(spec, 2)
    assert label["label"].startswith("β = 0.611")
    assert "no power-law fit for b" in spec["title"]["subtitle"]
    with pytest.raises(SchemaError, match="color"):
        charts.crow_amsaa_chart(mcf.filter(pl.col("grp") == "a").drop("grp"), fit)
    with pytest.raises(SchemaError, match="lambda_per_h_beta"):
        charts.crow_amsaa_chart(mcf, fit.drop("lambda_per_h_beta"), color="grp")


def test_charts_render_offline_to_svg(
    hand_mcf: pl.DataFrame, reliawiki: tuple[pl.DataFrame, pl.DataFrame]
) -> None:
    """Both specs draw in-process with vl-convert (no network), axis titles in."""
    svg = vlc.vegalite_to_svg(charts.mcf_chart(hand_mcf).to_dict())
    assert svg.startswith("<svg")
    assert "Age (h)" in svg
    svg = vlc.vegalite_to_svg(charts.crow_amsaa_chart(*reliawiki).to_dict())
    assert svg.startswith("<svg")
    assert "Cumulative failures per unit" in svg
