"""Fitted hazard and survival curves (model_density) and the per-mode hazard chart."""

import math

import numpy as np
import polars as pl
import pytest

from relkit import charts
from relkit.errors import InsufficientDataError, SchemaError
from relkit.survival import model_density


def _fits(model: str, scale: float, shape: float | None) -> pl.DataFrame:
    return pl.DataFrame(
        {"model": [model], "scale_h": [scale], "shape": [shape], "status": ["ok"]},
        schema={
            "model": pl.String,
            "scale_h": pl.Float64,
            "shape": pl.Float64,
            "status": pl.String,
        },
    )


TABLE = pl.DataFrame({"stop_h": [1.0, 10.0, 100.0], "observed": [True] * 3})


def test_weibull_hazard_and_survival_by_formula():
    """Weibull h(t) = (rho/lam)(t/lam)^(rho-1) and S(t) = exp(-(t/lam)^rho)
    (Klein & Moeschberger 2003, Table 2.2), at lam = 50 h, rho = 0.7."""
    lam, rho = 50.0, 0.7
    out = model_density(TABLE, _fits("weibull", lam, rho), n_points=7, spacing="log")
    t = out["time_h"].to_numpy()
    expected_h = (rho / lam) * (t / lam) ** (rho - 1)
    np.testing.assert_allclose(out["hazard_per_h"].to_numpy(), expected_h, rtol=1e-12)
    np.testing.assert_allclose(
        out["survival"].to_numpy(), np.exp(-((t / lam) ** rho)), rtol=1e-12
    )
    # density = hazard x survival
    np.testing.assert_allclose(
        out["density"].to_numpy(), expected_h * np.exp(-((t / lam) ** rho)), rtol=1e-12
    )


def test_exponential_hazard_is_flat_and_finite_far_in_the_tail():
    """Exponential h(t) = 1/lam everywhere, even at t = 1000 lam where f and S
    both underflow to 0 in double precision (h = f/S computed on the log scale)."""
    table = pl.DataFrame({"stop_h": [1.0, 1.0e6], "observed": [True, True]})
    out = model_density(table, _fits("exponential", 1000.0, None), n_points=5)
    assert out["survival"][-1] == 0.0  # e^-1000 underflows
    np.testing.assert_allclose(out["hazard_per_h"].to_numpy(), 1e-3, rtol=1e-9)


def test_lognormal_hazard_rises_then_falls():
    """The log-normal hazard is not monotone: it rises to a maximum and falls
    (Klein & Moeschberger 2003, section 2.5), unlike any Weibull."""
    table = pl.DataFrame({"stop_h": [0.01, 1000.0], "observed": [True, True]})
    out = model_density(
        table, _fits("lognormal", 10.0, 1.0), n_points=200, spacing="log"
    )
    h = out["hazard_per_h"].to_numpy()
    peak = int(np.argmax(h))
    assert 0 < peak < h.size - 1
    assert math.isclose(out["survival"][0], 1.0, abs_tol=1e-6)


def test_hazard_chart_spec_matches_the_frame():
    """The chart draws the frame's hazards on log-log axes, one line per mode."""
    table = pl.DataFrame(
        {
            "failure_mode": ["a", "a", "b", "b"],
            "stop_h": [1.0, 100.0, 1.0, 100.0],
            "observed": [True] * 4,
        }
    )
    fits = pl.concat(
        [
            _fits("weibull", 50.0, 0.7).with_columns(failure_mode=pl.lit("a")),
            _fits("weibull", 80.0, 1.8).with_columns(failure_mode=pl.lit("b")),
        ]
    )
    curves = model_density(table, fits, by=["failure_mode"], n_points=20, spacing="log")
    spec = charts.hazard_chart(curves, color="failure_mode").to_dict()
    layer = spec["layer"][0]
    assert layer["encoding"]["x"]["scale"]["type"] == "log"
    assert layer["encoding"]["y"]["scale"]["type"] == "log"
    assert layer["encoding"]["color"]["field"] == "failure_mode"
    data = next(iter(spec["datasets"].values()))
    assert len(data) == curves.height
    b = [r for r in data if r["failure_mode"] == "b"]
    # mode b wears out (shape 1.8): its hazard rises with age
    assert b[-1]["hazard_per_h"] > b[0]["hazard_per_h"]


def test_hazard_chart_refusals():
    """Several curves without color, missing columns and nothing drawable are
    refused with the fix named."""
    two = pl.DataFrame(
        {
            "model": ["weibull", "lognormal"],
            "time_h": [1.0, 1.0],
            "hazard_per_h": [0.1, 0.2],
        }
    )
    with pytest.raises(SchemaError, match="color='model'"):
        charts.hazard_chart(two)
    with pytest.raises(SchemaError, match="hazard_per_h"):
        charts.hazard_chart(two.drop("hazard_per_h"))
    zero = two.head(1).with_columns(hazard_per_h=pl.lit(0.0))
    with pytest.raises(InsufficientDataError, match="nothing to draw"):
        charts.hazard_chart(zero)


def test_hazard_chart_says_what_it_left_out():
    """A zero rate cannot sit on a log axis: left out and counted in the subtitle."""
    frame = pl.DataFrame(
        {
            "model": ["weibull"] * 3,
            "time_h": [1.0, 2.0, 3.0],
            "hazard_per_h": [0.1, 0.0, 0.3],
        }
    )
    spec = charts.hazard_chart(frame, title="t").to_dict()
    assert spec["title"]["subtitle"].startswith("1 point(s)")


def test_hazard_chart_renders_offline():
    """The chart renders to SVG with vl-convert (no network)."""
    import vl_convert as vlc

    frame = pl.DataFrame(
        {"model": ["weibull"] * 2, "time_h": [1.0, 10.0], "hazard_per_h": [0.5, 0.05]}
    )
    svg = vlc.vegalite_to_svg(charts.hazard_chart(frame).to_dict())
    assert svg.startswith("<svg")


def test_probability_plot_chart_draws_points_and_line():
    """A Weibull sample (shape 1.5, scale 100 h, 200 units) on Weibull axes:
    the chart embeds probability_plot's points, the fitted line, and axis
    titles of the Weibull paper (ln t, ln(-ln(1 - F)))."""
    from relkit.survival import probability_plot

    rng = np.random.default_rng(7)
    t = 100.0 * rng.weibull(1.5, 200)
    table = pl.DataFrame({"entry_h": 0.0, "stop_h": t, "observed": True})
    points = probability_plot(table, model="weibull")
    spec = charts.probability_plot_chart(points, title="Weibull plot").to_dict()
    dots, line = spec["layer"]
    assert dots["encoding"]["x"]["title"] == "ln t (t in h)"
    assert dots["encoding"]["y"]["title"] == "ln(−ln(1 − F))"
    assert line["encoding"]["y"]["field"] == "y_fitted"
    data = next(iter(spec["datasets"].values()))
    assert len(data) == points.height
    np.testing.assert_allclose(
        sorted(r["y"] for r in data), sorted(points["y"].to_list()), rtol=1e-12
    )


def test_probability_plot_chart_refuses_two_models():
    """Each model has its own axes: a frame of two models is refused."""
    frame = pl.DataFrame(
        {
            "model": ["weibull", "lognormal"],
            "time_h": [1.0, 1.0],
            "cdf_empirical": [0.5, 0.5],
            "x": [0.0, 0.0],
            "y": [0.0, 0.0],
            "y_fitted": [0.0, 0.0],
        }
    )
    with pytest.raises(SchemaError, match="several models"):
        charts.probability_plot_chart(frame)


def test_a_failure_at_entry_counts_alike_in_km_cif_and_nelson_aalen():
    """One risk-set rule (entry < t <= stop; a spell entering and failing at the
    same instant t > 0 is at risk at t). Units: a (0, 10] fails (mode a), b
    (0, 12] fails (a), c enters and fails at 5 (mode b), d (0, 8] censored.
    By hand: at t = 5 four units are at risk (a, b, c, d), one fails:
    S(5) = 3/4; at 10: n = 2 (a, b), S = 3/4 * 1/2 = 3/8; at 12: S = 0.
    H(5) = 1/4, H(10) = 1/4 + 1/2. CIF_b = 1/4 and CIF_a(12) = 3/4, adding up
    to 1 - S(12) = 1 (reviewer's case: KM said 2/3 at 5 before, CIF 1/4)."""
    from relkit.survival import cumulative_incidence, kaplan_meier, nelson_aalen

    t = pl.DataFrame(
        {
            "entry_h": [0.0, 0.0, 5.0, 0.0],
            "stop_h": [10.0, 12.0, 5.0, 8.0],
            "observed": [True, True, True, False],
            "failure_mode": ["a", "a", "b", None],
        }
    )
    km = kaplan_meier(t.drop("failure_mode"))
    assert km["time_h"].to_list() == [0.0, 5.0, 8.0, 10.0, 12.0]
    assert km["n_at_risk"].to_list() == [3, 4, 3, 2, 1]
    np.testing.assert_allclose(
        km["survival"].to_numpy(), [1.0, 0.75, 0.75, 0.375, 0.0], atol=1e-12
    )
    na = nelson_aalen(t.drop("failure_mode"))
    assert na.filter(pl.col("time_h") == 10.0)["cumulative_hazard"][0] == (
        pytest.approx(0.75, abs=1e-12)
    )
    cif = cumulative_incidence(t)
    last = cif.group_by("failure_mode").agg(pl.all().sort_by("time_h").last())
    by_mode = dict(zip(last["failure_mode"], last["cumulative_incidence"], strict=True))
    assert by_mode == pytest.approx({"a": 0.75, "b": 0.25}, abs=1e-12)
    at5 = cif.filter(pl.col("time_h") == 5.0)["cumulative_incidence"].sum()
    assert at5 == pytest.approx(1 - 0.75, abs=1e-12)


def test_a_failure_at_age_zero_counts_out_of_everyone_at_risk():
    """Reviewer's case (dead on arrival): three units enter at age 0, one fails
    at 0, one at 10 h, one is censored at 20 h. By hand S(0) = 2/3, S(10) = 1/3,
    and with one mode CIF = 1 - S: 1/3 then 2/3 (it said 1.0 at every time,
    leaving the units entering at 0 out of the risk set at 0)."""
    from relkit.survival import cumulative_incidence, kaplan_meier

    t = pl.DataFrame(
        {
            "entry_h": [0.0, 0.0, 0.0],
            "stop_h": [0.0, 10.0, 20.0],
            "observed": [True, True, False],
            "failure_mode": ["a", "a", None],
        }
    )
    cif = cumulative_incidence(t)
    np.testing.assert_allclose(
        cif["cumulative_incidence"].to_numpy(), [1 / 3, 2 / 3], atol=1e-12
    )
    assert cif["n_at_risk"].to_list() == [3, 2]
    km = kaplan_meier(t.drop("failure_mode"))
    np.testing.assert_allclose(
        km["survival"].to_numpy()[:2], [2 / 3, 1 / 3], atol=1e-12
    )


def test_probability_plot_chart_thins_and_says_so():
    """3,000 points with max_points=1000: every third point is drawn (step 3,
    the last kept), 1,001 in all, and the subtitle gives the count."""
    n = 3000
    frame = pl.DataFrame(
        {
            "model": ["weibull"] * n,
            "time_h": np.arange(1, n + 1, dtype=float),
            "cdf_empirical": np.linspace(0.001, 0.999, n),
            "x": np.log(np.arange(1, n + 1, dtype=float)),
            "y": np.linspace(-5, 2, n),
            "y_fitted": np.linspace(-5, 2, n),
        }
    )
    spec = charts.probability_plot_chart(frame, title="t", max_points=1000).to_dict()
    data = next(iter(spec["datasets"].values()))
    assert len(data) == 1001
    assert (
        spec["title"]["subtitle"]
        == "1,001 of 3,000 points drawn, evenly along each curve"
    )


def test_nelson_aalen_refuses_where_kaplan_meier_does():
    """Reviewer's case: a unit (0, 5] fails, the next enters at 10 and fails
    there; nobody is at risk between 5 and 10 h while the curve is above 0, so
    Kaplan-Meier refuses, and Nelson-Aalen answered 2.0 silently: now it
    refuses the same data (cumulative incidence refuses it too)."""
    from relkit.errors import InsufficientDataError
    from relkit.survival import cumulative_incidence, kaplan_meier, nelson_aalen

    t = pl.DataFrame(
        {"entry_h": [0.0, 10.0], "stop_h": [5.0, 10.0], "observed": [True, True]}
    )
    for estimator in (kaplan_meier, nelson_aalen):
        with pytest.raises(InsufficientDataError, match="risk set becomes empty"):
            estimator(t)
    with pytest.raises(InsufficientDataError, match="risk set becomes empty"):
        cumulative_incidence(t.with_columns(failure_mode=pl.lit("a")))
