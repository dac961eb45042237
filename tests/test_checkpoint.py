"""Tests of relkit.checkpoint: Young/Daly/exact intervals and the Kokolis ETTR model."""

import csv
import math
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from shared_paths import SHARED

from relkit.checkpoint import (
    CheckpointIntervals,
    ETTRModel,
    checkpoint_efficiency,
    checkpoint_intervals,
    daly_interval_h,
    ettr_curve,
    ettr_model,
    exact_interval_h,
    expected_ettr,
    plan_checkpoints,
    young_interval_h,
)
from relkit.errors import InvalidParameterError, RelkitWarning, SchemaError
from relkit.metrics import mtbf

REFERENCE = SHARED / "reference"


def sig4(x: float) -> str:
    """Format to 4 significant figures: the precision the references are quoted to."""
    return f"{x:.4g}"


def agree4(got: float, ref: float) -> bool:
    """Agree to 4 significant figures: relative difference below 1e-4.

    (Comparing rounded strings fails at rounding boundaries: 9.16650 vs 9.1665.)
    """
    return math.isclose(got, ref, rel_tol=1e-4)


def read_reference(name: str) -> list[dict[str, str]]:
    path = REFERENCE / name
    if not path.exists():
        pytest.skip(f"{path} not available")
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


# ---------------------------------------------------------------- reference values

#: Rows of shared/reference/checkpoint_intervals.csv (minutes), kept here so the
#: suite has them without shared/. Daly 2006 prints tau_opt = 117, 57, 9.1 min for
#: Figs 3, 4, 5 (doi:10.1016/j.future.2004.11.016).
DALY_ROWS = {
    "daly2006_fig3": (5, 1440, 10, 120.0, 120.4159, 116.6898, 116.6901, 0.912606),
    "daly2006_fig4": (5, 360, 10, 60.0, 60.8276, 56.713, 56.714, 0.819381),
    "daly2006_fig5": (5, 15, 10, 12.2474, 15.8114, 9.1409, 9.1665, 0.199668),
}


def check_interval_row(
    cost_min: float,
    mtbf_min: float,
    restart_min: float,
    young: float,
    daly1: float,
    daly: float,
    exact: float,
    eff: float,
) -> None:
    ci = checkpoint_intervals(
        cost_h=cost_min / 60, mtbf_h=mtbf_min / 60, restart_h=restart_min / 60
    )
    assert agree4(ci.young_h * 60, young)
    assert agree4(ci.daly_first_order_h * 60, daly1)
    assert agree4(ci.daly_h * 60, daly)
    assert agree4(ci.exact_h * 60, exact)
    assert agree4(ci.efficiency_at_exact, eff)
    # the single-rule functions agree with the bundle
    c, m, r = cost_min / 60, mtbf_min / 60, restart_min / 60
    assert young_interval_h(cost_h=c, mtbf_h=m) == ci.young_h
    assert (
        daly_interval_h(cost_h=c, mtbf_h=m, restart_h=r, order="first")
        == ci.daly_first_order_h
    )
    assert daly_interval_h(cost_h=c, mtbf_h=m, restart_h=r) == ci.daly_h
    assert exact_interval_h(cost_h=c, mtbf_h=m) == ci.exact_h
    assert (
        checkpoint_efficiency(ci.exact_h, cost_h=c, mtbf_h=m, restart_h=r)
        == ci.efficiency_at_exact
    )


@pytest.mark.parametrize("case", sorted(DALY_ROWS))
def test_ref_daly_2006_figures(case: str) -> None:
    """Daly 2006 Figs 3-5 (tau_opt 117, 57, 9.1 min) and the derived exact optimum.

    Source: shared/reference/checkpoint_intervals.csv rows daly2006_fig3/4/5.
    """
    check_interval_row(*DALY_ROWS[case])


def test_ref_daly_fig3_printed_value() -> None:
    """Daly 2006, Fig. 3: M = 24 h, delta = 5 min gives tau_opt of about 117 min."""
    assert daly_interval_h(cost_h=5 / 60, mtbf_h=24.0) * 60 == pytest.approx(
        117, abs=0.5
    )
    assert daly_interval_h(cost_h=5 / 60, mtbf_h=6.0) * 60 == pytest.approx(57, abs=0.5)
    assert daly_interval_h(cost_h=5 / 60, mtbf_h=0.25) * 60 == pytest.approx(
        9.1, abs=0.05
    )


def test_ref_checkpoint_intervals_csv() -> None:
    """Every row of shared/reference/checkpoint_intervals.csv to 4 significant figures.

    Sources: Young 1974 doi:10.1145/361147.361115; Daly 2006
    doi:10.1016/j.future.2004.11.016; exact Lambert-W optimum [derived].
    """
    rows = read_reference("checkpoint_intervals.csv")
    assert len(rows) >= 7
    for row in rows:
        check_interval_row(
            *(
                float(row[k])
                for k in (
                    "checkpoint_cost_min",
                    "mtbf_min",
                    "restart_min",
                    "young_min",
                    "daly_first_order_min",
                    "daly_higher_order_min",
                    "exact_exponential_min",
                    "efficiency_at_exact",
                )
            )
        )


#: Rows K1 of shared/reference/ettr_model.csv (Kokolis et al., HPCA 2025,
#: arXiv:2410.21680): nodes, r_f, u0 (min), w (min), rule, interval (min), ettr.
K1_ROWS = [
    (2048, 0.0065, 5, 0.5, "young", 10.4006, 0.8642),
    (2048, 0.0065, 5, 0.5, "exact_max", 9.6697, 0.8644),
]


def check_ettr_row(
    nodes: int,
    rate: float,
    restart_min: float,
    cost_min: float,
    rule: str,
    interval_min: float,
    ettr: float,
) -> None:
    lam_per_h = nodes * rate / 24
    u0, w = restart_min / 60, cost_min / 60
    model = ettr_model(
        n_nodes=nodes,
        failures_per_node_day=rate,
        restart_h=u0,
        interval_h=interval_min / 60,
        cost_h=w,
    )
    assert agree4(model.ettr, ettr)
    assert model.mttf_h == pytest.approx(1 / lam_per_h, rel=1e-12)
    got = expected_ettr(
        n_nodes=nodes,
        failures_per_node_day=rate,
        restart_h=u0,
        interval_h=interval_min / 60,
        cost_h=w,
    )
    assert got == model.ettr
    if rule == "young":
        assert agree4(math.sqrt(2 * w / lam_per_h) * 60, interval_min)
    elif rule == "exact_max":
        assert agree4(model.optimal_interval_h * 60, interval_min)
        assert agree4(model.ettr_at_optimal, ettr)


@pytest.mark.parametrize("row", K1_ROWS, ids=lambda r: str(r[4]))
def test_ref_kokolis_k1(row: tuple) -> None:
    """Kokolis et al. 2025 ETTR model, case K1 (2,048 nodes at RSC-1's 6.5e-3).

    Source: shared/reference/ettr_model.csv, rows K1.
    """
    check_ettr_row(*row)


def test_ref_kokolis_fixed_intervals() -> None:
    """Kokolis et al. 2025: 16,000 GPUs, u0 = 5 min, w = 0: ETTR "0.7" at 60 min and
    "0.93" at 5 min; the formula gives 0.684 and 0.9323 (ettr_model.csv, rows fixed).
    """
    kw = {"n_nodes": 2000, "failures_per_node_day": 6.5e-3, "restart_h": 5 / 60}
    assert sig4(expected_ettr(**kw, interval_h=1.0)) == "0.684"
    assert sig4(expected_ettr(**kw, interval_h=5 / 60)) == "0.9323"
    assert expected_ettr(**kw, interval_h=1.0) == pytest.approx(0.7, abs=0.02)


def test_ref_ettr_model_csv() -> None:
    """Every row of shared/reference/ettr_model.csv (Kokolis et al. 2025) to 4 s.f."""
    rows = read_reference("ettr_model.csv")
    assert len(rows) >= 9
    for row in rows:
        check_ettr_row(
            int(row["nodes"]),
            float(row["failures_per_node_day"]),
            float(row["restart_min"]),
            float(row["checkpoint_cost_min"]),
            row["interval_rule"],
            float(row["interval_min"]),
            float(row["ettr"]),
        )


# ---------------------------------------------------------------- branches, decisions


def test_daly_branch_delta_at_least_2m() -> None:
    """Daly's higher-order rule returns tau = M once delta >= 2M, and says so.

    delta >= M is degenerate (the job barely progresses), so each call warns.
    """
    with pytest.warns(RelkitWarning, match="cost_h = 3 h is not below mtbf_h = 1 h"):
        ci = checkpoint_intervals(cost_h=3.0, mtbf_h=1.0, restart_h=0.5)
    assert ci.daly_branch == "delta>=2M"
    assert ci.daly_h == 1.0
    with pytest.warns(RelkitWarning, match="swapped"):
        assert daly_interval_h(cost_h=2.0, mtbf_h=1.0) == 1.0  # boundary delta = 2M
    with pytest.warns(RelkitWarning, match="degenerate"):
        ci_199 = checkpoint_intervals(cost_h=1.99, mtbf_h=1.0)
    assert ci_199.daly_branch == "delta<2M"
    # exact optimum is still below M and positive
    assert 0 < ci.exact_h < 1.0
    assert ci.to_dict()["daly_branch"] == "delta>=2M"
    assert isinstance(ci, CheckpointIntervals)


def test_daly_first_order_uses_restart() -> None:
    # sqrt(2 * 0.1 * (10 + 2.5)) = sqrt(2.5)
    assert daly_interval_h(
        cost_h=0.1, mtbf_h=10.0, restart_h=2.5, order="first"
    ) == pytest.approx(math.sqrt(2.5), rel=1e-15)
    # the higher-order estimate does not depend on R
    assert daly_interval_h(cost_h=0.1, mtbf_h=10.0, restart_h=2.5) == daly_interval_h(
        cost_h=0.1, mtbf_h=10.0
    )


@pytest.mark.parametrize("x", [1e-10, 1e-7, 0.99999e-5, 1.00001e-5, 1e-3, 0.5, 5.0])
def test_exact_solves_optimality_condition(x: float) -> None:
    """tau* solves e^{(tau+delta)/M}(1 - tau/M) = 1, i.e. log1p(-u) + u + x = 0.

    Checked on both sides of delta/M = 1e-5, where a series replaces Lambert W.
    """
    m = 3.0
    with warnings.catch_warnings():  # x >= 1 is degenerate (warned), still solved
        warnings.simplefilter("ignore", RelkitWarning)
        u = exact_interval_h(cost_h=x * m, mtbf_h=m) / m
    assert abs(math.log1p(-u) + u + x) <= 1e-9 * x


def test_exact_series_branch_is_continuous() -> None:
    below = exact_interval_h(cost_h=0.99999e-5, mtbf_h=1.0)
    above = exact_interval_h(cost_h=1.00001e-5, mtbf_h=1.0)
    assert 0 < below < above
    assert above / below == pytest.approx(math.sqrt(1.00001 / 0.99999), rel=1e-7)


def test_efficiency_extremes_are_finite() -> None:
    with pytest.warns(RelkitWarning, match="degenerate"):  # delta = M
        eta_big = checkpoint_efficiency(1e6, cost_h=1.0, mtbf_h=1.0)
    assert eta_big == 0.0  # underflows, no overflow
    eta = checkpoint_efficiency(1e-9, cost_h=1e-9, mtbf_h=1e9)
    assert 0 < eta <= 1.0


def test_ettr_w_zero_optimum_is_limit() -> None:
    """With w = 0 the optimum is the limit dt -> 0: 0.0 h and ETTR 1 - lambda*u0."""
    m = ettr_model(
        n_nodes=2000, failures_per_node_day=6.5e-3, restart_h=5 / 60, interval_h=1.0
    )
    lam = 2000 * 6.5e-3 / 24
    assert m.optimal_interval_h == 0.0
    assert m.ettr_at_optimal == pytest.approx(1 - lam * 5 / 60, rel=1e-15)
    assert m.ettr_at_optimal > m.ettr
    assert set(m.to_dict()) == {
        "mttf_h",
        "ettr",
        "optimal_interval_h",
        "ettr_at_optimal",
    }
    assert isinstance(m, ETTRModel)


def test_ettr_clipped_at_zero_when_model_breaks_down() -> None:
    """131,072 GPUs (MTTF 0.2254 h) with a 15-min restart: lambda*u0 > 1."""
    kw = {"n_nodes": 16384, "failures_per_node_day": 6.5e-3, "restart_h": 0.25}
    assert expected_ettr(**kw, interval_h=0.1, cost_h=0.01) == 0.0
    with pytest.warns(RelkitWarning, match="no interval gives any progress"):
        m = ettr_model(**kw, interval_h=0.1, cost_h=0.01)
    assert m.mttf_h == pytest.approx(0.2254, abs=5e-5)
    assert (m.ettr, m.optimal_interval_h, m.ettr_at_optimal) == (0.0, 0.0, 0.0)
    # a long interval alone can also break the model: lambda*dt/2 >= 1
    assert (
        expected_ettr(
            n_nodes=1, failures_per_node_day=24.0, restart_h=0.0, interval_h=3
        )
        == 0.0
    )


def test_ettr_zero_rate() -> None:
    """No failures: ETTR = 1/(1 + w/dt); no optimum exists, so ettr_model refuses."""
    got = expected_ettr(
        n_nodes=8, failures_per_node_day=0.0, restart_h=0.1, interval_h=1.0, cost_h=0.25
    )
    assert got == pytest.approx(0.8)
    with pytest.raises(
        InvalidParameterError, match="failures_per_node_day must be > 0"
    ):
        ettr_model(n_nodes=8, failures_per_node_day=0.0, restart_h=0.1, interval_h=1.0)


def test_ettr_curve_grid_contains_optimum() -> None:
    kw = {
        "n_nodes": 2048,
        "failures_per_node_day": 6.5e-3,
        "restart_h": 5 / 60,
        "cost_h": 0.5 / 60,
    }
    curve = ettr_curve(**kw)
    best = ettr_model(**kw, interval_h=1.0)
    assert curve.columns == ["interval_h", "ettr_frac"]
    assert curve.schema["interval_h"] == pl.Float64
    assert curve.height == 400
    assert curve["interval_h"].is_sorted()
    assert curve["ettr_frac"].min() >= 0.0
    assert curve["ettr_frac"].max() <= 1.0
    assert curve["ettr_frac"].max() == pytest.approx(best.ettr_at_optimal, rel=1e-15)
    top = curve.filter(pl.col("ettr_frac") == pl.col("ettr_frac").max())
    assert top["interval_h"][0] == pytest.approx(best.optimal_interval_h, rel=1e-12)
    assert curve["interval_h"].max() == pytest.approx(2 * best.mttf_h)
    assert curve["ettr_frac"][-1] == 0.0  # beyond 2*(MTTF - u0) the model is clipped


def test_ettr_curve_given_intervals() -> None:
    curve = ettr_curve(
        n_nodes=2000,
        failures_per_node_day=6.5e-3,
        restart_h=5 / 60,
        cost_h=0.0,
        intervals_h=[1.0, 5 / 60],
    )
    assert curve["interval_h"].to_list() == [5 / 60, 1.0]
    assert [sig4(v) for v in curve["ettr_frac"]] == ["0.9323", "0.684"]
    with pytest.raises(InvalidParameterError, match="at most 400"):
        ettr_curve(
            n_nodes=1,
            failures_per_node_day=1e-3,
            restart_h=0.1,
            cost_h=0.1,
            intervals_h=np.linspace(0.1, 10, 401),
        )
    with pytest.raises(InvalidParameterError, match=r"intervals_h must be finite"):
        ettr_curve(
            n_nodes=1,
            failures_per_node_day=1e-3,
            restart_h=0.1,
            cost_h=0.1,
            intervals_h=[1.0, float("nan"), -2.0],
        )


def test_plan_checkpoints_over_mtbf_frame() -> None:
    failures = pl.DataFrame({"system": ["a"] * 4 + ["b"] * 2})
    exposure = pl.DataFrame(
        {"system": ["a", "b", "c"], "exposure_h": [96.0, 96.0, 50.0]}
    )
    frame = mtbf(failures, exposure, by="system")
    plan = plan_checkpoints(frame, cost_h=5 / 60, restart_h=10 / 60)
    assert plan.columns == [
        "system",
        "mtbf_h",
        "young_h",
        "daly_h",
        "daly_branch",
        "exact_h",
        "efficiency_at_exact",
        "cost_h",
        "restart_h",
    ]
    assert plan["system"].to_list() == ["a", "b", "c"]
    assert plan["mtbf_h"].to_list()[:2] == [24.0, 48.0]
    ci = checkpoint_intervals(cost_h=5 / 60, mtbf_h=24.0, restart_h=10 / 60)
    row = plan.row(0, named=True)
    assert row["daly_h"] == ci.daly_h
    assert row["exact_h"] == ci.exact_h
    assert row["efficiency_at_exact"] == ci.efficiency_at_exact
    assert row["daly_branch"] == "delta<2M"
    assert sig4(row["daly_h"] * 60) == "116.7"  # Daly Fig. 3
    assert plan.row(2, named=True)["young_h"] is None  # no failures, no plan
    assert plan["cost_h"].to_list() == [5 / 60] * 3
    with pytest.raises(SchemaError, match="mtbf_h"):
        plan_checkpoints(pl.DataFrame({"x": [1.0]}), cost_h=0.1, restart_h=0.0)


# ---------------------------------------------------------------- error paths

BAD_POSITIVE = [0.0, -1.0, float("nan"), float("inf"), None, True, "1"]


@pytest.mark.parametrize("bad", BAD_POSITIVE, ids=repr)
def test_invalid_cost_raises(bad: object) -> None:
    with pytest.raises(
        InvalidParameterError, match=r"cost_h must be a finite number > 0"
    ):
        young_interval_h(cost_h=bad, mtbf_h=24.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match=r"cost_h .*> 0 \(hours\); got"):
        checkpoint_intervals(cost_h=bad, mtbf_h=24.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", BAD_POSITIVE, ids=repr)
def test_invalid_mtbf_raises(bad: object) -> None:
    for fn in (
        young_interval_h,
        daly_interval_h,
        exact_interval_h,
        checkpoint_intervals,
    ):
        with pytest.raises(
            InvalidParameterError, match=r"mtbf_h must be a finite number > 0"
        ):
            fn(cost_h=0.1, mtbf_h=bad)  # type: ignore[operator]


def test_error_messages_name_value() -> None:
    with pytest.raises(InvalidParameterError) as info:
        daly_interval_h(cost_h=0.1, mtbf_h=-1.0)
    assert str(info.value) == "mtbf_h must be a finite number > 0 (hours); got -1.0."
    with pytest.raises(InvalidParameterError, match=r"restart_h .*>= 0.*got -0.5"):
        checkpoint_intervals(cost_h=0.1, mtbf_h=1.0, restart_h=-0.5)
    with pytest.raises(
        InvalidParameterError, match="order must be 'higher' or 'first'"
    ):
        daly_interval_h(cost_h=0.1, mtbf_h=1.0, order="third")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="interval_h"):
        checkpoint_efficiency(0.0, cost_h=0.1, mtbf_h=1.0)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n_nodes": 0}, "n_nodes must be a whole number >= 1"),
        ({"n_nodes": 2.5}, "n_nodes must be a whole number >= 1"),
        ({"n_nodes": None}, "n_nodes"),
        ({"failures_per_node_day": -1e-3}, "failures_per_node_day .*>= 0"),
        ({"failures_per_node_day": float("nan")}, "failures_per_node_day"),
        ({"restart_h": -1.0}, "restart_h"),
        ({"interval_h": 0.0}, "interval_h must be a finite number > 0"),
        ({"cost_h": -0.1}, "cost_h .*>= 0"),
    ],
)
def test_invalid_ettr_inputs_raise(kwargs: dict, match: str) -> None:
    base = {
        "n_nodes": 16,
        "failures_per_node_day": 1e-3,
        "restart_h": 0.1,
        "interval_h": 1.0,
        "cost_h": 0.01,
    }
    with pytest.raises(InvalidParameterError, match=match):
        expected_ettr(**{**base, **kwargs})
    with pytest.raises(InvalidParameterError, match=match):
        ettr_model(**{**base, **kwargs})


# ---------------------------------------------------------------- properties

durations = st.floats(1e-3, 1e3)


@pytest.mark.filterwarnings("ignore:.*degenerate:relkit.errors.RelkitWarning")
@settings(deadline=None)  # first call imports scipy
@given(c=durations, m=durations)
def test_prop_daly_below_young(c: float, m: float) -> None:
    """Daly's higher-order interval is shorter than Young's when delta < 2M."""
    assume(c < 2 * m)
    assert daly_interval_h(cost_h=c, mtbf_h=m) < young_interval_h(cost_h=c, mtbf_h=m)


@pytest.mark.filterwarnings("ignore:.*degenerate:relkit.errors.RelkitWarning")
@settings(deadline=None)  # first call imports scipy
@given(c=durations, m=durations, r=st.floats(0, 1e3))
def test_prop_exact_maximises_efficiency(c: float, m: float, r: float) -> None:
    """The Lambert-W optimum beats a dense grid and a numerical optimiser."""
    from scipy.optimize import minimize_scalar

    tau = exact_interval_h(cost_h=c, mtbf_h=m)
    assert 0 < tau <= m
    best = checkpoint_efficiency(tau, cost_h=c, mtbf_h=m, restart_h=r)
    assert 0 <= best <= 1
    grid = np.geomspace(tau / 50, m * 5, 801)
    others = [
        checkpoint_efficiency(float(t), cost_h=c, mtbf_h=m, restart_h=r) for t in grid
    ]
    assert max(others) <= best * (1 + 1e-9) + 1e-300
    res = minimize_scalar(
        lambda lt: -checkpoint_efficiency(float(np.exp(lt)), cost_h=c, mtbf_h=m),
        bounds=(math.log(tau / 100), math.log(m)),
        method="bounded",
        options={"xatol": 1e-10},
    )
    assert -res.fun <= checkpoint_efficiency(tau, cost_h=c, mtbf_h=m) * (1 + 1e-9)
    if 1e-4 < c / m < 10:
        assert float(np.exp(res.x)) == pytest.approx(tau, rel=1e-3)


@pytest.mark.filterwarnings(
    "ignore:ettr_model.*no interval:relkit.errors.RelkitWarning"
)
@settings(deadline=None)  # first call imports scipy
@given(
    n=st.integers(1, 100_000),
    rate=st.one_of(st.just(0.0), st.floats(1e-9, 1.0)),
    u0=st.floats(0, 10),
    dt=st.floats(1e-4, 1e3),
    w=st.floats(0, 10),
)
def test_prop_ettr_in_unit_interval(
    n: int, rate: float, u0: float, dt: float, w: float
) -> None:
    got = expected_ettr(
        n_nodes=n, failures_per_node_day=rate, restart_h=u0, interval_h=dt, cost_h=w
    )
    assert 0.0 <= got <= 1.0
    if rate > 0:
        m = ettr_model(
            n_nodes=n, failures_per_node_day=rate, restart_h=u0, interval_h=dt, cost_h=w
        )
        assert 0.0 <= m.ettr_at_optimal <= 1.0
        assert m.ettr <= m.ettr_at_optimal + 1e-12
        assert m.optimal_interval_h >= 0.0


def test_extreme_scales_do_not_underflow() -> None:
    """δ/M = 1e-600 underflows to 0; the optimum is still Young's √(2δM) = √2 h."""
    out = checkpoint_intervals(cost_h=1e-300, mtbf_h=1e300)
    assert out.exact_h == pytest.approx(2**0.5)
    assert 0.0 <= out.efficiency_at_exact <= 1.0


def test_denormal_checkpoint_cost_does_not_underflow() -> None:
    """w = 5e-324 h (found by Hypothesis): Δt* ≈ √(2w(1 − λu₀)/λ), finite and > 0."""
    model = ettr_model(
        n_nodes=96,
        failures_per_node_day=1.0,
        restart_h=0.0,
        interval_h=1.0,
        cost_h=5e-324,
    )
    assert 0.0 < model.optimal_interval_h < 1e-150
    assert model.ettr_at_optimal == pytest.approx(1.0)


# ---------------------------------------------------------------- the queue term


def test_queue_zero_is_todays_model_exactly() -> None:
    """queue_h = 0 (the default) leaves every number of the model bit for bit."""
    kw = {
        "n_nodes": 2048,
        "failures_per_node_day": 6.5e-3,
        "restart_h": 5 / 60,
        "interval_h": 10.4006 / 60,
        "cost_h": 0.5 / 60,
    }
    assert expected_ettr(**kw, queue_h=0.0) == expected_ettr(**kw)
    assert ettr_model(**kw, queue_h=0.0) == ettr_model(**kw)
    curve_kw = {k: v for k, v in kw.items() if k != "interval_h"}
    assert ettr_curve(**curve_kw, queue_h=0.0).equals(ettr_curve(**curve_kw))


def test_queue_is_paid_per_failure_like_the_restart() -> None:
    """Hand computation: 2,000 nodes at 6.5e-3 (λ = 0.541667/h), Δt = 1 h, u₀ = 5 min,
    q = 10 min, w = 0: 1 − 0.541667·(5/60 + 10/60 + 1/2) = 0.59375.

    The queue wait adds to u₀ in every term, so the model with (u₀, q) equals the
    one with (u₀ + q, 0), and the optimum uses u₀ + q.
    """
    kw = {"n_nodes": 2000, "failures_per_node_day": 6.5e-3, "interval_h": 1.0}
    got = expected_ettr(**kw, restart_h=5 / 60, queue_h=10 / 60)
    assert got == pytest.approx(0.59375, rel=1e-12)
    lam = 2000 * 6.5e-3 / 24
    u0, q, w = 5 / 60, 10 / 60, 0.5 / 60
    with_q = ettr_model(**kw, restart_h=u0, queue_h=q, cost_h=w)
    folded = ettr_model(**kw, restart_h=u0 + q, cost_h=w)
    assert with_q == folded
    # Δt* = sqrt(w² + 2w(1 − λ(u₀+q))/λ) − w, by hand
    hand = math.sqrt(w * w + 2 * w * (1 - lam * (u0 + q)) / lam) - w
    assert with_q.optimal_interval_h == pytest.approx(hand, rel=1e-12)
    assert (
        with_q.ettr_at_optimal
        < ettr_model(**kw, restart_h=u0, cost_h=w).ettr_at_optimal
    )
    curve = ettr_curve(
        n_nodes=2000,
        failures_per_node_day=6.5e-3,
        restart_h=u0,
        cost_h=w,
        queue_h=q,
    )
    assert curve["ettr_frac"].max() == pytest.approx(with_q.ettr_at_optimal, rel=1e-15)


def test_queue_must_be_a_duration() -> None:
    base = {
        "n_nodes": 16,
        "failures_per_node_day": 1e-3,
        "restart_h": 0.1,
        "interval_h": 1.0,
        "cost_h": 0.01,
    }
    for bad in (-0.1, float("nan"), None, "1"):
        with pytest.raises(InvalidParameterError, match=r"queue_h .*>= 0"):
            expected_ettr(**base, queue_h=bad)  # type: ignore[arg-type]
