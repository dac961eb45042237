"""Tests of relkit.survival: reference oracles, cases C14/C15, recovery, properties."""

import importlib
import math
from datetime import UTC, datetime

import numpy as np
import polars as pl
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from lifelines import WeibullFitter
from shared_paths import SHARED

import relkit.datasets as relkit_datasets
from relkit import survival
from relkit.errors import (
    ConvergenceError,
    InsufficientDataError,
    RelkitWarning,
    SchemaError,
)
from relkit.survival import (
    build_first_failure_table,
    build_lifetime_table,
    build_tbf_exclusions,
    build_tbf_table,
    cumulative_incidence,
    fit_lifetime_models,
    fit_lifetimes,
    kaplan_meier,
    model_density,
    nelson_aalen,
    validate_survival_table,
)

CASES = SHARED / "cases"
LANL = relkit_datasets.path("lanl")  # the bundled copy of the LANL data

# Oracle S1 (shared/reference/README.md, "Survival oracles")
S1_T = [120.0, 340, 510, 760, 980, 1150, 1400, 1720, 2000, 2000, 2000, 2000]
S1_E = [1, 1, 1, 1, 0, 1, 1, 1, 0, 0, 0, 0]
S1_L = [0.0, 0, 100, 200, 0, 300, 0, 500, 0, 250, 600, 0]
S1_KM_TIMES = [120.0, 340, 510, 760, 1150, 1400, 1720]


def s1_table(*, truncated: bool) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "unit_id": [f"g{i:02d}" for i in range(1, 13)],
            "entry_h": S1_L if truncated else [0.0] * 12,
            "stop_h": S1_T,
            "observed": [bool(e) for e in S1_E],
        }
    )


def km_at(km: pl.DataFrame, t: float) -> float:
    """Survival just after t (step function, right-continuous)."""
    return km.filter(pl.col("time_h") <= t)["survival"][-1]


# ------------------------------------------------------------------ oracle S1


@pytest.mark.parametrize(("truncated", "mtbf_h"), [(False, 2140.00), (True, 1861.43)])
def test_ref_s1_exponential_mtbf(truncated, mtbf_h):
    """Oracle S1: exponential MTBF 14980/7 = 2140.00 h; with truncation 1861.43 h."""
    fits = fit_lifetime_models(s1_table(truncated=truncated), models=["exponential"])
    assert fits["status"].to_list() == ["ok"]
    assert round(fits["scale_h"][0], 2) == mtbf_h
    assert fits["n_failures"][0] == 7
    assert fits["n_units"][0] == 12


@pytest.mark.parametrize(
    ("truncated", "scale_h", "shape", "loglik"),
    [(False, 2046.72, 1.14589, -60.6025), (True, 1863.19, 0.949368, -59.6951)],
)
def test_ref_s1_weibull(truncated, scale_h, shape, loglik):
    """Oracle S1 Weibull MLE [cross-checked]: right-censored lambda 2046.72 h,
    rho 1.14589, loglik -60.6025; with left truncation lambda 1863.19 h,
    rho 0.949368, loglik -59.6951 (the survivor-bias trap flips the hazard)."""
    table = s1_table(truncated=truncated)
    fits = fit_lifetime_models(table, models=["weibull"]).row(0, named=True)
    assert fits["scale_h"] == pytest.approx(scale_h, abs=0.01)
    assert fits["shape"] == pytest.approx(shape, abs=5e-6)
    assert fits["log_likelihood"] == pytest.approx(loglik, abs=5e-5)
    assert fits["aic"] == pytest.approx(4 - 2 * loglik, abs=1e-4)
    summary = fit_lifetimes(table).row(0, named=True)
    assert summary["weibull_shape"] == pytest.approx(shape, abs=5e-6)
    assert summary["weibull_scale_h"] == pytest.approx(scale_h, abs=0.01)
    assert summary["weibull_shape_lower"] < shape < summary["weibull_shape_upper"]
    # Wald interval on log(rho_): the estimate is the geometric midpoint, and the
    # half-width is z * se / rho with lifelines' standard error (delta method).
    low, high = summary["weibull_shape_lower"], summary["weibull_shape_upper"]
    assert (low * high) ** 0.5 == pytest.approx(summary["weibull_shape"], rel=1e-9)
    f = WeibullFitter().fit(
        table["stop_h"].to_numpy(),
        table["observed"].to_numpy(),
        entry=table["entry_h"].to_numpy(),
    )
    se = float(f.summary.loc["rho_", "se(coef)"])
    z = 1.959963984540054
    assert math.log(high / summary["weibull_shape"]) == pytest.approx(
        z * se / summary["weibull_shape"], rel=1e-4
    )
    assert summary["status"] == "ok"
    assert summary["best_model"] in survival.MODELS


@pytest.mark.parametrize(
    ("truncated", "expected"),
    [
        (False, [0.91667, 0.83333, 0.75, 0.66667, 0.57143, 0.47619, 0.38095]),
        (True, [0.85714, 0.76190, 0.67725, 0.60200, 0.51600, 0.43000, 0.34400]),
    ],
)
def test_ref_s1_kaplan_meier(truncated, expected):
    """Oracle S1 Kaplan-Meier at 120..1720 h, without and with truncation."""
    km = kaplan_meier(s1_table(truncated=truncated))
    got = [round(km_at(km, t), 5) for t in S1_KM_TIMES]
    assert got == pytest.approx(expected, abs=1e-5)
    assert km["n_at_risk"][0] == (6 if truncated else 12)  # at t = 0
    assert (km["survival_lower"] <= km["survival"]).all()
    assert (km["survival"] <= km["survival_upper"]).all()


def test_ref_s1_nelson_aalen_without_ties():
    """Oracle S1 data: Nelson-Aalen H(120) = 1/12 and H(340) = 1/12 + 1/11 (no ties)."""
    na = nelson_aalen(s1_table(truncated=False))
    h = dict(zip(na["time_h"], na["cumulative_hazard"], strict=True))
    assert h[120.0] == pytest.approx(1 / 12)
    assert h[340.0] == pytest.approx(1 / 12 + 1 / 11)


# ------------------------------------------------------------------ oracle S2


def s2_table() -> pl.DataFrame:
    t = [30.0, 55, 80, 110, 150, 170, 220, 260, 300, 340, 400, 400]
    k = [1, 2, 1, 1, 2, 0, 1, 2, 0, 1, 0, 0]
    names = {0: None, 1: "gpu", 2: "network"}
    return pl.DataFrame(
        {
            "stop_h": t,
            "observed": [x > 0 for x in k],
            "failure_mode": [names[x] for x in k],
        }
    )


def test_ref_s2_cumulative_incidence():
    """Oracle S2 [cross-checked]: Aalen-Johansen CIF of mode 1 at 30, 80, 110, 220,
    340 = 0.083333, 0.16667, 0.25, 0.34722, 0.47685; mode 2 at 55, 150, 260 =
    0.083333, 0.16667, 0.26389."""
    cif = cumulative_incidence(s2_table())

    def at(mode: str, t: float) -> float:
        return cif.filter((pl.col("failure_mode") == mode) & (pl.col("time_h") == t))[
            "cumulative_incidence"
        ].item()

    gpu = [at("gpu", t) for t in (30, 80, 110, 220, 340)]
    net = [at("network", t) for t in (55, 150, 260)]
    assert gpu == pytest.approx([0.083333, 0.16667, 0.25, 0.34722, 0.47685], abs=5e-6)
    assert net == pytest.approx([0.083333, 0.16667, 0.26389], abs=5e-6)


def test_ref_s2_matches_lifelines_aalen_johansen():
    """S2 has no tied failure times, so lifelines' AalenJohansenFitter (jitter
    only for ties) must agree with relkit's deterministic product."""
    import warnings

    from lifelines import AalenJohansenFitter

    table = s2_table()
    codes = (
        table["failure_mode"]
        .replace_strict({"gpu": 1, "network": 2}, default=0)
        .to_numpy()
    )
    cif = cumulative_incidence(table)
    for code, mode in ((1, "gpu"), (2, "network")):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            aj = AalenJohansenFitter(seed=0).fit(
                table["stop_h"].to_numpy(), codes, event_of_interest=code
            )
        ours = cif.filter(pl.col("failure_mode") == mode)
        theirs = aj.cumulative_density_.reindex(ours["time_h"].to_numpy()).iloc[:, 0]
        np.testing.assert_allclose(ours["cumulative_incidence"], theirs, atol=1e-12)


# ------------------------------------------------------------------ case C14


def c14_units() -> pl.DataFrame:
    return pl.read_csv(
        CASES / "C14-bad-durations-and-truncation.csv", try_parse_dates=True
    )


def test_ref_c14_refuses_invalid_rows():
    """Case C14: by default refuse, naming u03 (data row 3, ends 2 s before it
    starts) and u05 (data row 5, observation starts after the unit ended)."""
    with pytest.raises(SchemaError) as info:
        build_lifetime_table(c14_units())
    msg = str(info.value)
    assert "2 invalid row(s) of 6" in msg
    assert "u03 (data row 3): ends 2 s before it starts" in msg
    assert "u05 (data row 5): observation starts after the unit ended" in msg
    assert "invalid='drop'" in msg
    for unit in ("u01", "u02", "u04", "u06"):
        assert unit not in msg


def test_ref_c14_drop_option_lists_rows_and_km():
    """Case C14: invalid='drop' proceeds, warns naming u03 and u05; on u01, u02,
    u04, u06 with entry (u04 entry 744 h, stop from install) KM S(0) = 0.6667 and
    S(240 h) = 0.3333 flat to 1224 h."""
    with pytest.warns(RelkitWarning, match=r"u03 \(data row 3\).*u05 \(data row 5\)"):
        table = build_lifetime_table(c14_units(), invalid="drop")
    assert table["unit_id"].to_list() == ["u01", "u02", "u04", "u06"]
    u04 = table.filter(pl.col("unit_id") == "u04").row(0, named=True)
    assert (u04["entry_h"], u04["stop_h"], u04["observed"]) == (744.0, 1224.0, False)
    km = kaplan_meier(table)
    assert km_at(km, 0.0) == pytest.approx(0.6667, abs=5e-5)
    flat = km.filter(pl.col("time_h").is_between(240.0, 1224.0))
    assert flat["survival"].to_list() == pytest.approx([1 / 3] * flat.height)
    assert flat["time_h"].max() == 1224.0
    # fits refuse the raw rows too, and drop them when asked
    raw = c14_units().select(
        "unit_id",
        entry_h=pl.lit(0.0),
        stop_h=(pl.col("ended_at") - pl.col("installed_at")).dt.total_seconds() / 3600,
        observed=pl.col("failed").cast(pl.Boolean),
    )
    with pytest.raises(SchemaError, match="u03"):
        kaplan_meier(raw)
    with pytest.raises(SchemaError, match="u03"):
        fit_lifetimes(raw)


def test_ref_c14_zero_duration_policy():
    """Case C14: u02 failed at 0 h. Kept for KM; parametric fits interval-censor it
    in (0, r] with r the resolution (1 h here, inferred from the failure times
    240 h) and say so; the old half-minute stand-in is available on request.
    Expected exponential mean: scipy's bounded maximisation of the likelihood
    written out by hand (f(240) (1 - S(1)) S(1224)/S(744) S(720)) in the test."""
    from scipy import optimize

    with pytest.warns(RelkitWarning):
        table = build_lifetime_table(c14_units(), invalid="drop")
    fits = fit_lifetime_models(table, models=["exponential"])
    assert fits["status"][0] == (
        "ok; 1 zero-length spell(s) interval-censored in (0, 1 h] (resolution "
        "inferred from the failure times; pass resolution_h to set it)"
    )
    assert fits["n_zero"][0] == 1

    def loglik(lam):
        return (
            -np.log(lam)
            - 240 / lam
            + np.log(-np.expm1(-1 / lam))
            - (1224 - 744) / lam
            - 720 / lam
        )

    best = optimize.minimize_scalar(
        lambda x: -loglik(np.exp(x)),
        bounds=(0, 15),
        method="bounded",
        options={"xatol": 1e-12},
    )
    assert fits["scale_h"][0] == pytest.approx(np.exp(best.x), rel=1e-6)
    assert fits["log_likelihood"][0] == pytest.approx(-best.fun, abs=1e-6)
    old = fit_lifetime_models(
        table, models=["exponential"], zero_duration_h=survival.ZERO_DURATION_H
    )
    assert old["status"][0] == (
        "ok; 1 zero-length spell(s) set to 0.008333 h (zero_duration_h given)"
    )
    # exposure: 240 + 1/120 + (1224 - 744) + 720 h over 2 failures
    assert old["scale_h"][0] == pytest.approx((240 + 1 / 120 + 480 + 720) / 2, rel=1e-6)


# ------------------------------------------------------------------ case C15


def c15_table() -> pl.DataFrame:
    return pl.read_csv(CASES / "C15-degenerate-survival-fits.csv").select(
        "unit_id",
        "mode",
        stop_h=pl.col("duration_h").cast(pl.Float64),
        observed=pl.col("failed").cast(pl.Boolean),
    )


def test_ref_c15_degenerate_fits_per_mode():
    """Case C15: xid79 (1 failure in 5) and ib_link (1 unit) get no Weibull
    parameters and 'insufficient failures (n=1, need ≥2)'; nvlink_fatal (all
    censored) says so; xid48 (5 failures in 8) fits. No raw lifelines error or
    warning reaches the caller (pytest turns warnings into errors)."""
    fits = fit_lifetimes(c15_table(), by=["mode"])
    rows = {r["mode"]: r for r in fits.iter_rows(named=True)}
    assert list(fits["mode"]) == ["ib_link", "nvlink_fatal", "xid48", "xid79"]
    for mode, n_units in (("xid79", 5), ("ib_link", 1)):
        r = rows[mode]
        assert r["status"] == "insufficient failures (n=1, need ≥2)"
        assert (r["n_units"], r["n_failures"]) == (n_units, 1)
        assert r["weibull_shape"] is None
        assert r["weibull_scale_h"] is None
        assert r["best_model"] is None
    r = rows["nvlink_fatal"]
    assert r["status"] == "all censored (0 failures in 3 units)"
    assert r["weibull_shape"] is None
    r = rows["xid48"]
    assert (r["n_units"], r["n_failures"]) == (8, 5)
    # five failures cannot pin the generalized gamma's three parameters: its
    # Hessian is singular, it is marked and left out, the others rank (it is
    # not a default model: only fit_lifetime_models(models=MODELS) fits it)
    assert r["status"] == "ok"
    six = fit_lifetime_models(
        c15_table().filter(pl.col("mode") == "xid48"), models=survival.MODELS
    )
    gengamma = six.filter(pl.col("model") == "gengamma").row(0, named=True)
    assert gengamma["status"] == (
        "no_interior_maximum (generalized gamma: standard errors not finite)"
    )
    assert gengamma["rank"] is None
    assert six["rank"].drop_nulls().sort().to_list() == [1, 2, 3, 4, 5]
    assert 0.3 < r["weibull_shape"] < 5
    assert 100 < r["weibull_scale_h"] < 5000
    assert r["best_model"] in survival.MODELS


def test_ref_c15_xid48_kaplan_meier():
    """Case C15, mode xid48 (hand-computed product limit): failures at 95, 120, 150,
    340 h with 8 at risk give 7/8, 6/8, 5/8, 1/2; censored at 410, 600, 720; the
    last unit fails at 800 h -> 0."""
    km = kaplan_meier(c15_table(), by=["mode"]).filter(pl.col("mode") == "xid48")
    got = {t: round(km_at(km, t), 6) for t in (95, 120, 150, 340, 720, 800)}
    assert got == {95: 0.875, 120: 0.75, 150: 0.625, 340: 0.5, 720: 0.5, 800: 0.0}
    assert km.filter(pl.col("time_h") == 800.0)["n_at_risk"].item() == 1


def test_implausible_fit_is_marked_not_reported():
    """lifelines returns rho = 3.6e22 for three failures at the same time with no
    warning (as in C15); relkit marks it and reports no parameters."""
    t = pl.DataFrame({"stop_h": [100.0, 100.0, 100.0], "observed": [True] * 3})
    row = fit_lifetime_models(t, models=["weibull"]).row(0, named=True)
    assert row["status"].startswith("no_interior_maximum (Weibull shape ")
    assert "outside [0.001, 1000]" in row["status"]
    assert row["shape"] is None
    assert row["aic"] is None
    summary = fit_lifetimes(t, models=["weibull"]).row(0, named=True)
    assert summary["best_model"] is None
    assert summary["status"].startswith("no model fitted; weibull: no_interior_max")


def test_fit_failure_wrapped(monkeypatch):
    """An exception inside the maximum-likelihood fit becomes status text, or
    relkit's ConvergenceError with errors='raise'; the raw exception never
    leaks."""

    def broken(model, data):
        msg = "delta contains nan value(s)"
        raise ValueError(msg)

    monkeypatch.setattr(survival._fits, "fit_mle", broken)
    table = s1_table(truncated=False)
    fits = fit_lifetime_models(table, models=["weibull"])
    assert fits["status"][0] == "fit failed (ValueError)"
    assert fits["scale_h"][0] is None
    with pytest.raises(ConvergenceError, match="weibull fit failed") as info:
        fit_lifetime_models(table, models=["weibull"], errors="raise")
    assert isinstance(info.value.__cause__, ValueError)


def test_non_convergence_becomes_status(monkeypatch):
    """An optimiser that stops without converging (at an interior point) is
    said in status with its message, and reports no parameters; with
    errors='raise' it is relkit's ConvergenceError. The oracle S1 exponential
    MLE is 2140 h (total time / failures, by hand), so the point is interior."""
    from relkit.survival._mle import MLEResult

    def stalled(model, data):
        return MLEResult(
            x=np.array([np.log(2140.0)]),
            log_likelihood=-60.0,
            covariance=np.array([[1 / 7]]),
            converged=False,
            message="Maximum number of iterations has been exceeded.",
        )

    monkeypatch.setattr(survival._fits, "fit_mle", stalled)
    table = s1_table(truncated=False)
    fits = fit_lifetime_models(table, models=["exponential"])
    assert fits["status"][0] == (
        "failed to converge (Maximum number of iterations has been exceeded.)"
    )
    assert fits["scale_h"][0] is None
    assert fits["rank"][0] is None
    with pytest.raises(ConvergenceError, match="did not converge"):
        fit_lifetime_models(table, models=["exponential"], errors="raise")


# ------------------------------------------------------------------ recovery


def simulate_truncated_weibull(rng, *, shape, scale, n):
    """Left-truncated (entry ~ U(0, scale/2)), randomly censored Weibull lifetimes."""
    entry = rng.uniform(0, scale / 2, size=4 * n)
    life = scale * rng.weibull(shape, size=4 * n)
    keep = life > entry  # units that failed before entry are never seen
    entry, life = entry[keep][:n], life[keep][:n]
    censor = entry + rng.exponential(2 * scale, size=n)
    return pl.DataFrame(
        {
            "unit_id": [f"u{i}" for i in range(n)],
            "entry_h": entry,
            "stop_h": np.minimum(life, censor),
            "observed": life <= censor,
        }
    )


@pytest.mark.parametrize(("shape", "seed"), [(0.7, 1), (1.5, 2)])
def test_recover_weibull_shape_with_truncation(shape, seed):
    """Simulated Weibull(shape, 1000 h), n = 2000, random censoring and left
    truncation: fitting with entry recovers shape and scale."""
    rng = np.random.default_rng(seed)
    table = simulate_truncated_weibull(rng, shape=shape, scale=1000.0, n=2000)
    assert 0.2 < (~table["observed"]).mean() < 0.6  # censoring is substantial
    row = fit_lifetimes(table, models=["weibull"]).row(0, named=True)
    assert row["weibull_shape"] == pytest.approx(shape, abs=0.08)
    assert row["weibull_scale_h"] == pytest.approx(1000.0, rel=0.1)
    width = row["weibull_shape_upper"] - row["weibull_shape_lower"]
    assert 0 < width < 0.25 * shape


def test_recover_truncation_matters():
    """Ignoring entry biases the Weibull shape (survivor bias); with entry it is
    recovered (same simulation, shape 0.7)."""
    rng = np.random.default_rng(7)
    table = simulate_truncated_weibull(rng, shape=0.7, scale=1000.0, n=2000)
    naive = fit_lifetimes(table.drop("entry_h"), models=["weibull"])["weibull_shape"][0]
    right = fit_lifetimes(table, models=["weibull"])["weibull_shape"][0]
    assert abs(right - 0.7) < 0.08
    assert naive - 0.7 > 0.15


# ------------------------------------------------------------------ properties


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(
        st.tuples(
            st.floats(0, 100, allow_nan=False),
            st.floats(0, 100, allow_nan=False),
            st.booleans(),
        ),
        min_size=1,
        max_size=30,
    )
)
def test_prop_km_nonincreasing_in_unit_interval(data):
    """S(t) never rises, stays in [0, 1], and the interval brackets it."""
    table = pl.DataFrame(
        {
            "entry_h": [min(a, b) for a, b, _ in data],
            "stop_h": [max(a, b) for a, b, _ in data],
            "observed": [e for _, _, e in data],
        }
    )
    try:
        km = kaplan_meier(table)
    except InsufficientDataError:
        assume(False)  # risk set empties early: refused, tested below
    s = km["survival"].to_numpy()
    assert np.all((s >= 0) & (s <= 1))
    assert np.all(np.diff(s) <= 1e-12)
    assert np.all(np.diff(km["time_h"].to_numpy()) > 0)
    assert np.all(km["survival_lower"].to_numpy() <= s + 1e-12)
    assert np.all(km["survival_upper"].to_numpy() >= s - 1e-12)


@settings(max_examples=40, deadline=None)
@given(
    data=st.lists(
        st.tuples(st.integers(1, 20), st.sampled_from([None, "a", "b", "c"])),
        min_size=1,
        max_size=30,
    )
)
def test_prop_cif_sums_to_one_minus_km(data):
    """Sum over modes of the Aalen-Johansen CIF = 1 - KM of all modes (ties too)."""
    table = pl.DataFrame(
        {
            "stop_h": [float(t) for t, _ in data],
            "observed": [m is not None for _, m in data],
            "failure_mode": [m for _, m in data],
        }
    )
    cif = cumulative_incidence(table)
    if cif.height == 0:
        return
    total = (
        cif.group_by("time_h").agg(pl.col("cumulative_incidence").sum()).sort("time_h")
    )
    km = kaplan_meier(table)
    for t, f in total.iter_rows():
        assert f == pytest.approx(1 - km_at(km, t), abs=1e-12)


def test_km_thinned_to_row_cap():
    """More than 5000 step points: thinned to <= 5000 rows, keeping exact steps."""
    rng = np.random.default_rng(3)
    n = 12000
    table = pl.DataFrame(
        {
            "grp": rng.choice(["a", "b"], size=n),
            "stop_h": rng.exponential(100.0, size=n),
            "observed": rng.random(n) < 0.7,
        }
    )
    full = kaplan_meier(table, by=["grp"], max_rows=10**9)
    thin = kaplan_meier(table, by=["grp"])
    assert full.height > 5000
    assert thin.height <= 5000
    joined = thin.join(full, on=["grp", "time_h"], suffix="_full")
    assert joined.height == thin.height
    np.testing.assert_array_equal(joined["survival"], joined["survival_full"])
    for g in ("a", "b"):
        f, t = full.filter(pl.col("grp") == g), thin.filter(pl.col("grp") == g)
        assert t["time_h"][0] == f["time_h"][0]
        assert t["time_h"][-1] == f["time_h"][-1]


def test_ref_model_density_matches_scipy():
    """Densities equal scipy.stats (weibull_min, lognorm, fisk, expon) at the grid."""
    from scipy import stats

    table = pl.DataFrame({"stop_h": [50.0, 400.0], "observed": [True, True]})
    fits = pl.DataFrame(
        {
            "model": ["exponential", "weibull", "lognormal", "loglogistic"],
            "scale_h": [200.0, 150.0, 120.0, 180.0],
            "shape": [None, 0.8, 1.2, 2.5],
            "status": ["ok"] * 4,
        }
    )
    dens = model_density(table, fits, n_points=50)
    assert dens.height == 200
    grid = np.linspace(0, 400, 51)[1:]
    expected = {
        "exponential": stats.expon(scale=200).pdf(grid),
        "weibull": stats.weibull_min(0.8, scale=150).pdf(grid),
        "lognormal": stats.lognorm(1.2, scale=120).pdf(grid),
        "loglogistic": stats.fisk(2.5, scale=180).pdf(grid),
    }
    for model, values in expected.items():
        got = dens.filter(pl.col("model") == model)
        np.testing.assert_allclose(got["time_h"], grid)
        np.testing.assert_allclose(got["density"], values, rtol=1e-10)


def test_model_density_from_fits_by_group():
    """model_density consumes fit_lifetime_models output and skips failed fits:
    xid48 has 5 ok fits of the six (gengamma has no interior maximum), 20
    points each; the other modes have none (fewer than 2 failures)."""
    table = c15_table()
    fits = fit_lifetime_models(table, by=["mode"], models=survival.MODELS)
    dens = model_density(table, fits, by=["mode"], n_points=20)
    assert dens["mode"].unique().to_list() == ["xid48"]
    assert dens.height == 5 * 20
    assert dens["time_h"].max() == 800.0
    assert (dens["density"] > 0).all()


# ------------------------------------------------------------- survival tables


def d(day: int, hour: int = 0) -> datetime:
    return datetime(2025, 1, day, hour, tzinfo=UTC)


TS = pl.Datetime("us", "UTC")


@pytest.fixture
def fleet():
    """Four nodes of system s: n1 left-truncated (tracked from day 3), n2 with
    unknown in-service date, n3 decommissioned on day 6, n4 never failed."""
    assets = pl.DataFrame(
        {
            "host": ["n1", "n2", "n3", "n4"],
            "system": ["s"] * 4,
            "in_service_ts": [d(1), None, d(1), d(1)],
            "out_of_service_ts": [None, None, d(6), None],
            "observed_from_ts": [d(3), d(1), None, None],
        },
        schema_overrides=dict.fromkeys(("in_service_ts", "out_of_service_ts"), TS),
    )
    events = pl.DataFrame(
        {
            "ts": [d(4), d(4), d(6, 12), d(2), d(5), d(3), d(12), d(5)],
            "host": ["n1", "n1", "n1", "n2", "n2", "n3", "n3", "n9"],
            "system": ["s"] * 7 + ["zz"],
            "failure_mode": [
                "hardware/cpu",
                "software/os",
                "hardware/memory_dimm",
                "hardware/cpu",
                "software/os",
                "hardware/cpu",
                "hardware/cpu",
                "hardware/cpu",
            ],
        }
    )
    return events, assets


def rows(table: pl.DataFrame) -> list[tuple]:
    return table.select(
        pl.exclude("entry_h", "stop_h", "observed"), "entry_h", "stop_h", "observed"
    ).rows()


def test_build_tbf_table_node_hand_computed(fleet):
    """Hand-computed gaps: n1 first gap from install (day 1) with entry 48 h, two
    failures at the same instant (0 h gap, kept), censored at window end day 11;
    n2 (in_service NULL, tracked from day 1): its first gap runs from the
    tracking start, left-truncated there (issue 9 §3: not dropped), day 1 → 2
    = 24 h; n3 censored at its decommission
    (day 6), its day-12 failure outside the window; n4 one censored row."""
    events, assets = fleet
    table = build_tbf_table(events, assets, window_end=d(11))
    assert table.columns == ["unit_id", "entry_h", "stop_h", "observed"]
    assert rows(table) == [
        ("n1", 48.0, 72.0, True),
        ("n1", 0.0, 0.0, True),
        ("n1", 0.0, 60.0, True),
        ("n1", 0.0, 108.0, False),
        ("n2", 0.0, 24.0, True),
        ("n2", 0.0, 72.0, True),
        ("n2", 0.0, 144.0, False),
        ("n3", 0.0, 48.0, True),
        ("n3", 0.0, 72.0, False),
        ("n4", 0.0, 240.0, False),
    ]
    excl = build_tbf_exclusions(events, assets, window_end=d(11))
    assert excl.rows() == [
        ("n3", "failure outside the unit's observation window", 1),
        ("n9", "failure of a node not in assets", 1),
    ]


def test_build_tbf_table_system_hand_computed(fleet):
    """System s: all failures merged from the earliest start (day 1): gaps 24, 24,
    24, 0 (same instant), 24, 36 h, then censored 108 h at window end; n9 (system
    zz, not in assets) and the day-12 failure are excluded."""
    events, assets = fleet
    table = build_tbf_table(events, assets, unit="system", window_end=d(11))
    assert rows(table) == [
        ("s", 0.0, 24.0, True),
        ("s", 0.0, 24.0, True),
        ("s", 0.0, 24.0, True),
        ("s", 0.0, 0.0, True),
        ("s", 0.0, 24.0, True),
        ("s", 0.0, 36.0, True),
        ("s", 0.0, 108.0, False),
    ]
    excl = build_tbf_exclusions(events, assets, unit="system", window_end=d(11))
    assert excl.rows() == [
        ("s", "failure outside the unit's observation window", 1),
        ("zz", "failure of a system not in assets", 1),
    ]
    # fits interval-censor the 0-h gap in (0, 1 h] (the gaps are whole hours)
    fit = fit_lifetime_models(table, models=["exponential"]).row(0, named=True)
    assert fit["status"].startswith(
        "ok; 1 zero-length spell(s) interval-censored in (0, 1 h]"
    )
    assert fit["n_zero"] == 1
    # with the old half-minute stand-in, the closed-form mean
    fit = fit_lifetime_models(
        table, models=["exponential"], zero_duration_h=0.5 / 60
    ).row(0, named=True)
    assert fit["status"] == (
        "ok; 1 zero-length spell(s) set to 0.008333 h (zero_duration_h given)"
    )
    assert fit["scale_h"] == pytest.approx((240 + 1 / 120) / 6)


def test_build_tbf_table_system_all_decommissioned():
    """A system whose units are all out of service ends at its last decommission."""
    assets = pl.DataFrame(
        {
            "host": ["a", "b"],
            "system": ["t", "t"],
            "in_service_ts": [d(1), d(2)],
            "out_of_service_ts": [d(5), d(7)],
            "observed_from_ts": [d(2), None],
        }
    )
    events = pl.DataFrame({"ts": [d(3)], "host": ["a"], "system": ["t"]})
    table = build_tbf_table(events, assets, unit="system", window_end=d(20))
    # origin day 1 (earliest install), observed from day 2 (entry 24 h)
    assert rows(table) == [("t", 24.0, 48.0, True), ("t", 0.0, 96.0, False)]


def test_build_tbf_table_by_root_cause(fleet):
    """by=root_cause (derived from failure_mode) with a unit attribute (system):
    one series per node and root cause; nodes without such failures are censored."""
    events, assets = fleet
    table = build_tbf_table(
        events, assets, by=["system", "root_cause"], window_end=d(11)
    )
    assert table.columns == [
        "system",
        "root_cause",
        "unit_id",
        "entry_h",
        "stop_h",
        "observed",
    ]
    sw = table.filter(pl.col("root_cause") == "software")
    assert rows(sw) == [
        ("s", "software", "n1", 48.0, 72.0, True),
        ("s", "software", "n1", 0.0, 168.0, False),
        ("s", "software", "n2", 0.0, 96.0, True),
        ("s", "software", "n2", 0.0, 144.0, False),
        ("s", "software", "n3", 0.0, 120.0, False),
        ("s", "software", "n4", 0.0, 240.0, False),
    ]
    hw = table.filter(
        (pl.col("root_cause") == "hardware") & (pl.col("unit_id") == "n1")
    )
    assert rows(hw) == [
        ("s", "hardware", "n1", 48.0, 72.0, True),
        ("s", "hardware", "n1", 0.0, 60.0, True),
        ("s", "hardware", "n1", 0.0, 108.0, False),
    ]


def test_build_first_failure_table(fleet):
    """First failure: n1 at 72 h with entry 48 h; n2 excluded (age unknown); n3 at
    48 h; n4 censored at 240 h."""
    events, assets = fleet
    table = build_first_failure_table(events, assets, window_end=d(11))
    assert rows(table) == [
        ("n1", 48.0, 72.0, True),
        ("n3", 0.0, 48.0, True),
        ("n4", 0.0, 240.0, False),
    ]


def test_km_empty_risk_set_refused():
    """lifelines raises StatError when, with delayed entry, nobody is at risk
    between spells; relkit raises InsufficientDataError (a relkit error) instead."""
    table = pl.DataFrame(
        {"entry_h": [0.0, 5.0], "stop_h": [1.0, 6.0], "observed": [True, True]}
    )
    with pytest.raises(InsufficientDataError, match="risk set becomes empty"):
        kaplan_meier(table)
    # a later gap is accepted (C14 needs it: u04 enters at 744 h after u06 left
    # at 720 h); once S = 0 it stays 0 and its interval is (0, 0)
    late = pl.DataFrame(
        {"entry_h": [0.0, 0, 0, 9], "stop_h": [1.0, 2, 3, 10], "observed": [True] * 4}
    )
    km = kaplan_meier(late)
    assert km["survival"].to_list() == pytest.approx([1.0, 2 / 3, 1 / 3, 0, 0, 0])
    assert km["time_h"].to_list() == [0.0, 1, 2, 3, 9, 10]
    assert km["survival_upper"][-1] == 0.0


def test_validate_rejects_bad_columns():
    """Messages say what was expected and found."""
    with pytest.raises(SchemaError, match="missing column"):
        validate_survival_table(pl.DataFrame({"stop_h": [1.0]}))
    with pytest.raises(SchemaError, match="must be bool"):
        validate_survival_table(pl.DataFrame({"stop_h": [1.0], "observed": [2]}))
    with pytest.raises(SchemaError, match=r"row 1 \(data row 1\): not finite"):
        validate_survival_table(
            pl.DataFrame({"stop_h": [float("inf")], "observed": [1]})
        )
    with pytest.raises(SchemaError, match="unknown model"):
        fit_lifetimes(s1_table(truncated=False), models=["gompertz"])


# ------------------------------------------------------------------ LANL


def _lanl_reader():
    try:
        ingest = importlib.import_module("relkit.ingest")
    except ImportError:
        return None
    return getattr(ingest, "read_file", None)


@pytest.mark.skipif(
    _lanl_reader() is None or not LANL.exists(),
    reason="relkit.ingest.read_file (kind 'lanl') or the LANL data is not available",
)
def test_ref_lanl_system_tbf_weibull_shape_below_one():
    """Schroeder & Gibson (DSN 2006, doi:10.1109/DSN.2006.5): system-wide time
    between failures is Weibull with decreasing hazard (shape < 1) — checked for
    the five systems with most records (2, 18, 19, 16, 20)."""
    from relkit.exposure import observation_end
    from relkit.store import Store

    store = Store(":memory:")
    _lanl_reader()(store, LANL, kind="lanl")
    events, assets = store.table("events"), store.table("assets")
    end = observation_end(events)
    systems = ["2", "18", "19", "16", "20"]
    table = build_tbf_table(
        events.filter(pl.col("system").is_in(systems)),
        assets.filter(pl.col("system").is_in(systems)),
        unit="system",
        by=["system"],
        window_end=end,
    )
    fits = fit_lifetimes(table, by=["system"], models=["exponential", "weibull"])
    assert sorted(fits["system"]) == sorted(systems)
    for row in fits.iter_rows(named=True):
        assert row["n_failures"] > 500, row
        assert row["weibull_shape"] < 1.0, row
        assert row["weibull_shape_upper"] < 1.0, row


def test_build_tbf_table_arguments(fleet):
    """A naive window_end is read as UTC; an unknown unit is refused by name."""
    events, assets = fleet
    aware = build_tbf_table(events, assets, window_end=d(11))
    naive = build_tbf_table(events, assets, window_end=datetime(2025, 1, 11))
    assert aware.equals(naive)
    with pytest.raises(SchemaError, match="unit must be 'node' or 'system'"):
        build_tbf_table(events, assets, unit="rack", window_end=d(11))
    with pytest.raises(SchemaError, match="unit='system' can group by event"):
        build_tbf_table(events, assets, unit="system", by=["host"], window_end=d(11))


def test_null_group_keys_are_refused_not_dropped() -> None:
    """A null `system` would fall out of every join; the message says how to fill it."""
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    assets = pl.DataFrame(
        {
            "host": ["a"],
            "system": [None],
            "in_service_ts": [t0],
            "out_of_service_ts": [None],
            "observed_from_ts": [None],
        },
        schema_overrides={
            "system": pl.String,
            "out_of_service_ts": pl.Datetime("us", "UTC"),
            "observed_from_ts": pl.Datetime("us", "UTC"),
        },
    )
    events = pl.DataFrame(
        {"ts": [datetime(2025, 1, 5, tzinfo=UTC)], "host": ["a"], "system": [None]},
        schema_overrides={"system": pl.String},
    )
    with pytest.raises(SchemaError, match="fill_null"):
        build_tbf_table(
            events,
            assets,
            unit="system",
            by=["system"],
            window_end=datetime(2025, 2, 1, tzinfo=UTC),
        )


def test_cumulative_incidence_refuses_an_empty_risk_set_as_km_does() -> None:
    """Issue 12 §1: unit A is at risk over (0, 1] and fails, unit B enters at 2
    and fails at 3. Kaplan-Meier refuses (nothing links the curve after 1 h to
    B); cumulative incidence answered F_gpu = 1.0 at 3 h. Both refuse now."""
    table = pl.DataFrame(
        {
            "entry_h": [0.0, 2.0],
            "stop_h": [1.0, 3.0],
            "observed": [True, True],
            "failure_mode": ["gpu", "net"],
        }
    )
    with pytest.raises(InsufficientDataError, match="risk set becomes empty"):
        kaplan_meier(table)
    with pytest.raises(InsufficientDataError, match="next enters at 2 h"):
        cumulative_incidence(table)


def _naive_cif(table: pl.DataFrame) -> dict[tuple[str, float], float]:
    """The Aalen-Johansen sum of the docstring, one pass per failure time."""
    entry = table["entry_h"].to_numpy()
    stop = table["stop_h"].to_numpy()
    obs = table["observed"].to_numpy()
    modes = table["failure_mode"].to_numpy()
    times = np.unique(stop[obs])
    kinds = sorted({m for m, o in zip(modes, obs, strict=True) if o})
    # the docstring's risk set: entry < t <= stop; units entering at 0 are at
    # risk at 0, and zero-length spells at their own time
    n = np.array(
        [
            np.sum(
                ((entry < t) | (entry == 0) | (entry == stop))
                & (entry <= t)
                & (stop >= t)
            )
            for t in times
        ]
    )
    d = np.array(
        [[np.sum(obs & (stop == t) & (modes == k)) for t in times] for k in kinds]
    )
    s = np.cumprod(1.0 - d.sum(axis=0) / n)
    before = np.concatenate([[1.0], s[:-1]])
    cif = np.cumsum(before * d / n, axis=1)
    return {
        (k, t): v
        for k, row in zip(kinds, cif, strict=True)
        for t, v in zip(times, row, strict=True)
    }


@given(st.integers(min_value=0, max_value=2**31 - 1))
@settings(max_examples=40, deadline=None)
def test_prop_cumulative_incidence_equals_the_naive_sum(seed: int) -> None:
    """The sorted-count computation (O(n log n)) gives the docstring's sum
    computed naively, with ties across modes and delayed entry, to 1e-12."""
    rng = np.random.default_rng(seed)
    n = int(rng.integers(2, 60))
    entry = rng.integers(0, 5, n).astype(float)
    stop = entry + rng.integers(1, 20, n).astype(float)  # integer times: ties
    stop[0] = max(stop.max(), entry.max() + 1)  # one unit spans every entry
    entry[0] = 0.0
    table = pl.DataFrame(
        {
            "entry_h": entry,
            "stop_h": stop,
            "observed": rng.random(n) < 0.7,
            "failure_mode": rng.choice(["gpu", "net", "host"], n),
        }
    )
    if not table["observed"].any():
        return
    ours = cumulative_incidence(table)
    naive = _naive_cif(table)
    assert ours.height == len(naive)
    for k, t, v in ours.select("failure_mode", "time_h", "cumulative_incidence").rows():
        assert v == pytest.approx(naive[(k, t)], abs=1e-12)
