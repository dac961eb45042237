"""Tests of issue 12 §1: the model registry, no_interior_maximum, zero-length
spells, ranking, goodness of fit and Nelson-Aalen without tie smoothing."""

import warnings
from datetime import datetime

import numpy as np
import polars as pl
import pytest

from relkit.survival import (
    MODELS,
    fit_lifetime_models,
    fit_lifetimes,
    nelson_aalen,
    timestamp_resolution_h,
)
from relkit.survival._registry import REGISTRY, survival


def no_interior_table() -> pl.DataFrame:
    """30 left-truncated units, 6 failures: late entries that fail 0.25-2 h after
    entry, 24 units censored 200-1500 h after entry."""
    entry = np.r_[[500.0, 800, 1200, 1500, 2000, 2600], np.linspace(100, 3000, 24)]
    stop = np.r_[
        entry[:6] + np.array([0.5, 1, 0.25, 2, 0.75, 1.5]),
        entry[6:] + np.linspace(200, 1500, 24),
    ]
    return pl.DataFrame(
        {"entry_h": entry, "stop_h": stop, "observed": [True] * 6 + [False] * 24}
    )


def test_ref_no_interior_maximum_left_out_of_the_ranking():
    """Issue 12 §1 reproduction. lifelines itself (called here) stops the Weibull
    at its scale bound 1e-9 h and the log-normal at a median below 1e-9 h, and the
    log-normal has the lowest AIC of the four: relkit (scipy on the log scale,
    whose scale runs further toward 0) marks both no_interior_maximum, reports
    nulls and ranks only the interior fits."""
    import lifelines

    t = no_interior_table()
    args = (t["stop_h"].to_numpy(), t["observed"].to_numpy())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        wb = lifelines.WeibullFitter().fit(*args, entry=t["entry_h"].to_numpy())
        ln = lifelines.LogNormalFitter().fit(*args, entry=t["entry_h"].to_numpy())
        ex = lifelines.ExponentialFitter().fit(*args, entry=t["entry_h"].to_numpy())
    assert wb.lambda_ < 1e-8
    assert np.exp(ln.mu_) < 1e-8
    assert ln.AIC_ < wb.AIC_
    assert ln.AIC_ < ex.AIC_
    fits = fit_lifetime_models(t)
    rows = {r["model"]: r for r in fits.iter_rows(named=True)}
    assert rows["weibull"]["status"].startswith("no_interior_maximum (Weibull scale ")
    assert rows["lognormal"]["status"].startswith(
        "no_interior_maximum (log-normal median "
    )
    assert "below 1/1000 of the shortest time" in rows["weibull"]["status"]
    for m in ("weibull", "lognormal"):
        r = rows[m]
        assert r["scale_h"] is None
        assert r["shape"] is None
        assert r["aic"] is None
        assert r["rank"] is None
        assert r["bic"] is None
    ranked = fits.filter(pl.col("rank").is_not_null()).sort("rank")
    assert ranked["model"].to_list() == ["loglogistic", "exponential"]
    assert ranked["delta_aic"][0] == 0.0
    assert ranked["delta_aic"][1] == pytest.approx(ranked["aic"][1] - ranked["aic"][0])
    summary = fit_lifetimes(t).row(0, named=True)
    assert summary["best_model"] == "loglogistic"
    assert summary["weibull_shape"] is None
    assert "weibull: no_interior_maximum" in summary["status"]


def test_ref_bic_uses_the_number_of_failures():
    """BIC = k ln(d) - 2 loglik with d observed failures (Volinsky & Raftery 2000,
    doi:10.1111/j.0006-341X.2000.00256.x); oracle S1 has d = 7 of 12 units."""
    t = pl.DataFrame(
        {
            "stop_h": [120.0, 340, 510, 760, 980, 1150, 1400, 1720] + [2000.0] * 4,
            "observed": [True] * 4 + [False] + [True] * 3 + [False] * 4,
        }
    )
    fits = fit_lifetime_models(t, models=["exponential", "weibull"])
    for r in fits.iter_rows(named=True):
        k = REGISTRY[r["model"]].n_params
        assert r["bic"] == pytest.approx(k * np.log(7) - 2 * r["log_likelihood"])
        assert r["aic"] == pytest.approx(2 * k - 2 * r["log_likelihood"])


def test_ref_gamma_fit_matches_scipy_maximum_likelihood():
    """The gamma fitter (lifelines subclass) gives scipy's maximum-likelihood
    estimate: scipy.optimize on scipy.stats.gamma log pdf/sf, computed here."""
    from scipy import optimize, stats

    rng = np.random.default_rng(3)
    life = rng.gamma(2.5, 100.0, 400)
    cens = rng.uniform(0, 600, 400)
    stop, obs = np.minimum(life, cens), life <= cens
    t = pl.DataFrame({"stop_h": stop, "observed": obs})
    row = fit_lifetime_models(t, models=["gamma"]).row(0, named=True)

    def nll(p):
        k, th = np.exp(p)
        return -(
            stats.gamma.logpdf(stop[obs], k, scale=th).sum()
            + stats.gamma.logsf(stop[~obs], k, scale=th).sum()
        )

    best = optimize.minimize(
        nll,
        np.log([2.0, 100.0]),
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 5000},
    )
    k, theta = np.exp(best.x)
    assert row["status"] == "ok"
    assert row["shape"] == pytest.approx(k, rel=1e-4)
    assert row["scale_h"] == pytest.approx(theta, rel=1e-4)
    assert row["log_likelihood"] == pytest.approx(-best.fun, abs=1e-6)
    assert row["shape_lower"] < row["shape"] < row["shape_upper"]


@pytest.mark.parametrize("q", [-0.7, 0.5, 1.0])
def test_ref_gengamma_registry_matches_lifelines(q):
    """The registry's generalized gamma (scipy gengamma) has lifelines'
    GeneralizedGammaFitter survival function, for Q of either sign."""
    import lifelines

    mu, sigma = 4.0, 0.8
    times = np.array([5.0, 20.0, 60.0, 200.0])
    expected = lifelines.GeneralizedGammaFitter()._survival_function(
        np.array([mu, np.log(sigma), q]), times
    )
    got = survival("gengamma", times, np.exp(mu), sigma, q)
    np.testing.assert_allclose(got, expected, rtol=1e-9)


def test_ref_nelson_aalen_counts_ties_as_d_over_n():
    """Klein & Moeschberger eq. 4.2.3, by hand: failures at 1, 1, 2, 3 h (4 at
    risk): H(1) = 2/4 = 0.5, H(2) = 0.5 + 1/2 = 1.0, H(3) = 1.0 + 1/1 = 2.0
    (lifelines' default smoothing would give 1/4 + 1/3 at 1 h)."""
    t = pl.DataFrame({"stop_h": [1.0, 1.0, 2.0, 3.0], "observed": [True] * 4})
    na = nelson_aalen(t)
    assert na["time_h"].to_list() == [0.0, 1.0, 2.0, 3.0]
    assert na["cumulative_hazard"].to_list() == pytest.approx([0.0, 0.5, 1.0, 2.0])


def test_timestamp_resolution():
    """Minute stamps give 1/60 h; one stamp with seconds gives 1 s; µs stays µs."""
    minutes = pl.Series([datetime(2005, 1, 1, 3, 7), datetime(2005, 1, 2, 4, 0)])
    assert timestamp_resolution_h(minutes) == pytest.approx(1 / 60)
    seconds = pl.Series([datetime(2005, 1, 1, 3, 7), datetime(2005, 1, 1, 3, 7, 5)])
    assert timestamp_resolution_h(seconds) == pytest.approx(1 / 3600)
    micro = pl.Series([datetime(2005, 1, 1, 3, 7, 5, 3)])
    assert timestamp_resolution_h(micro) == pytest.approx(1 / 3.6e9)


def test_zero_spells_resolution_given_and_sensitivity():
    """A given resolution is used and said; shape_if_zero_dropped equals the
    Weibull shape fitted to the same table without the zero spells."""
    rng = np.random.default_rng(5)
    stop = np.round(rng.weibull(0.7, 300) * 100, 0)  # whole hours, some 0
    t = pl.DataFrame({"stop_h": stop, "observed": [True] * 300})
    n_zero = int((stop == 0).sum())
    assert n_zero > 0
    row = fit_lifetime_models(t, models=["weibull"], resolution_h=1.0).row(
        0, named=True
    )
    assert row["n_zero"] == n_zero
    assert (
        f"{n_zero} zero-length spell(s) interval-censored in (0, 1 h]"
        in (row["status"])
    )
    assert "(resolution_h given)" in row["status"]
    dropped = fit_lifetime_models(
        t.filter(pl.col("stop_h") > 0), models=["weibull"]
    ).row(0, named=True)
    assert row["shape_if_zero_dropped"] == pytest.approx(dropped["shape"], rel=1e-9)
    assert row["shape"] < dropped["shape"]  # short gaps pull the shape down


def test_gof_statistic_is_the_km_distance():
    """gof_statistic of an exponential fit to untruncated, uncensored data equals
    max |KM - exp(-t/mean)| over the failure times, computed here from the
    empirical survival function (KM without censoring)."""
    stop = np.array([10.0, 25.0, 40.0, 70.0, 130.0])
    t = pl.DataFrame({"stop_h": stop, "observed": [True] * 5})
    row = fit_lifetimes(t, models=["exponential"]).row(0, named=True)
    mean = stop.mean()
    fitted = np.exp(-stop / mean)
    after = 1 - np.arange(1, 6) / 5
    before = 1 - np.arange(0, 5) / 5
    expected = max(np.abs(after - fitted).max(), np.abs(before - fitted).max())
    assert row["gof_statistic"] == pytest.approx(expected, rel=1e-9)
    assert row["gof_name"] == "max |KM - fitted S| at failure times"


def test_models_registry_is_complete():
    """Every model in MODELS has a registry entry, a scale column and a fitter."""
    assert set(MODELS) == set(REGISTRY)
    for spec in REGISTRY.values():
        assert "scale_h" in spec.columns
        assert spec.fitter(0.05) is not None


# -- the scipy maximum-likelihood path --------------------------------------------


def _truncated_weibull(rng, n=600, shape=0.8, scale=200.0):
    """Left-truncated (entry ~ U(0, 100)), randomly censored Weibull lifetimes."""
    entry = rng.uniform(0, 100, 4 * n)
    life = scale * rng.weibull(shape, 4 * n)
    keep = life > entry
    entry, life = entry[keep][:n], life[keep][:n]
    cens = entry + rng.exponential(3 * scale, n)
    return pl.DataFrame(
        {"entry_h": entry, "stop_h": np.minimum(life, cens), "observed": life <= cens}
    )


@pytest.mark.parametrize(
    "model", ["exponential", "weibull", "lognormal", "loglogistic"]
)
def test_ref_scipy_fits_match_lifelines_loglik(model):
    """relkit's scipy fit of a left-truncated, censored sample reaches lifelines'
    maximum log-likelihood (its fitter, computed here) to 1e-6, and the same
    parameters to 1e-4."""
    t = _truncated_weibull(np.random.default_rng(11))
    f = REGISTRY[model].fitter(0.05)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        f.fit(t["stop_h"].to_numpy(), t["observed"].to_numpy(), entry=t["entry_h"])
    row = fit_lifetime_models(t, models=[model]).row(0, named=True)
    assert row["status"] == "ok"
    assert row["log_likelihood"] == pytest.approx(f.log_likelihood_, abs=1e-6)
    param, kind, _ = REGISTRY[model].columns["scale_h"]
    expected = f.params_[param] if kind == "positive" else np.exp(f.params_[param])
    assert row["scale_h"] == pytest.approx(expected, rel=1e-4)


def test_ref_gamma_matches_scipy_gamma_fit_uncensored():
    """Uncensored gamma sample: scipy.stats.gamma.fit (floc=0, its own MLE,
    computed here) gives the same shape and scale to 1e-4."""
    from scipy import stats

    x = np.random.default_rng(2).gamma(0.6, 50.0, 800)
    k, _, theta = stats.gamma.fit(x, floc=0)
    row = fit_lifetime_models(
        pl.DataFrame({"stop_h": x, "observed": [True] * x.size}), models=["gamma"]
    ).row(0, named=True)
    assert row["shape"] == pytest.approx(k, rel=1e-4)
    assert row["scale_h"] == pytest.approx(theta, rel=1e-4)


@pytest.mark.parametrize("model", ["gamma", "gengamma"])
def test_ref_optimum_matches_brute_force_minimize(model):
    """The log-likelihood at relkit's optimum (truncated, censored, 5 zero
    spells interval-censored in (0, 1 h]) equals a brute-force Nelder-Mead on
    scipy.stats' own logpdf/logsf/logcdf from a different start (computed
    here); relkit's is never lower by more than 1e-6."""
    from scipy import optimize, stats

    rng = np.random.default_rng(4)
    t = _truncated_weibull(rng, n=400)
    t = pl.concat(
        [
            t,
            pl.DataFrame(
                {"entry_h": [0.0] * 5, "stop_h": [0.0] * 5, "observed": [True] * 5}
            ),
        ]
    )
    row = fit_lifetime_models(t, models=[model], resolution_h=1.0).row(0, named=True)
    assert row["status"].startswith("ok")
    entry, stop, obs = (t[c].to_numpy() for c in ("entry_h", "stop_h", "observed"))
    exact, zero, right = obs & (stop > 0), obs & (stop == 0), ~obs

    def dist(p):
        if model == "gamma":
            return stats.gamma(np.exp(p[1]), scale=np.exp(p[0]))
        sigma, q = np.exp(p[1]), p[2]
        scale = np.exp(p[0]) * (q * q) ** (sigma / q)
        return stats.gengamma(1 / q**2, q / sigma, scale=scale)

    def nll(p):
        d = dist(p)
        with np.errstate(all="ignore"):
            ll = (
                d.logpdf(stop[exact]).sum()
                + d.logsf(stop[right]).sum()
                + d.logcdf(np.ones(zero.sum())).sum()
                - d.logsf(entry[entry > 0]).sum()
            )
        return -ll if np.isfinite(ll) else 1e300

    start = [np.log(150.0), 0.3] if model == "gamma" else [5.0, 0.2, 0.6]
    best = optimize.minimize(
        nll,
        start,
        method="Nelder-Mead",
        options={"xatol": 1e-10, "fatol": 1e-12, "maxiter": 20000, "maxfev": 20000},
    )
    assert row["log_likelihood"] == pytest.approx(-best.fun, abs=1e-4)
    assert row["log_likelihood"] >= -best.fun - 1e-6
    assert np.isfinite(row["shape_lower"])
    assert np.isfinite(row["shape_upper"])


def test_ref_gengamma_limits_are_weibull_and_lognormal():
    """Prentice (1974): Q = 1 is the Weibull with sigma = 1/rho, mu = ln lambda;
    Q -> 0 the log-normal. relkit's generalized-gamma log density, survival and
    CDF equal the Weibull's at Q = 1 (to 1e-10) and the log-normal's at
    Q = 1e-5 (to 1e-4; the difference is O(Q)); scipy.stats computes both
    references here. On a Weibull sample its maximum log-likelihood is at least
    the Weibull fit's (nested model) and within 2 units of it."""
    from scipy import stats

    from relkit.survival._mle import log_functions

    t = np.array([0.5, 3.0, 40.0, 300.0, 2000.0])
    lam, rho = 120.0, 0.7
    got = log_functions("gengamma", np.array([np.log(lam), -np.log(rho), 1.0]), t)
    wb = stats.weibull_min(rho, scale=lam)
    for a, b in zip(got, (wb.logpdf(t), wb.logsf(t), wb.logcdf(t)), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-10)
    mu, sigma = 4.0, 1.3
    got = log_functions("gengamma", np.array([mu, np.log(sigma), 1e-5]), t)
    ln = stats.lognorm(sigma, scale=np.exp(mu))
    for a, b in zip(got, (ln.logpdf(t), ln.logsf(t), ln.logcdf(t)), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-4, atol=1e-4)
    sample = _truncated_weibull(np.random.default_rng(8), n=500)
    fits = fit_lifetime_models(sample, models=["weibull", "gengamma"])
    ll = dict(zip(fits["model"], fits["log_likelihood"], strict=True))
    assert ll["weibull"] - 1e-6 <= ll["gengamma"] <= ll["weibull"] + 2.0


def test_central_difference_hessian_matches_scipy_differentiate():
    """relkit's 19-evaluation Hessian equals scipy.differentiate.hessian's
    adaptive one (computed here) to 1e-5 relative at a generalized-gamma
    optimum."""
    from scipy.differentiate import hessian as scipy_hessian

    from relkit.survival import _fits
    from relkit.survival._mle import _loglik_function, fit_mle, hessian

    data = _fits._arrays(_truncated_weibull(np.random.default_rng(9), n=300), 1.0)
    res = fit_mle("gengamma", data)
    f = _loglik_function("gengamma", data)

    def vec(xi):
        flat = xi.reshape(xi.shape[0], -1)
        return np.array([f(flat[:, j]) for j in range(flat.shape[1])]).reshape(
            xi.shape[1:]
        )

    ref = scipy_hessian(vec, res.x).ddf
    np.testing.assert_allclose(hessian(f, res.x), ref, rtol=1e-5, atol=1e-3)


def _mixed_spells(rng: np.random.Generator) -> dict:
    """60 spells of every kind the likelihood has: 20 exact failures, 15 right-
    censored, 10 interval-censored from 0, 15 interval-censored in (l, u] with
    l > 0; 40 of them left-truncated; integer weights 1-3."""
    n = 60
    lower = rng.uniform(5.0, 400.0, n)
    upper = lower.copy()
    exact = np.zeros(n, bool)
    right = np.zeros(n, bool)
    exact[:20] = True
    right[20:35] = True
    upper[20:35] = np.inf
    lower[35:45] = 0.0
    upper[35:45] = rng.uniform(0.5, 30.0, 10)
    upper[45:] = lower[45:] + rng.uniform(1.0, 50.0, 15)
    entry = np.where(np.arange(n) % 3 == 0, 0.0, rng.uniform(0.0, 1.0, n))
    entry = np.minimum(entry * lower, np.where(lower > 0, lower, 0.0))
    return {
        "lower": lower,
        "upper": upper,
        "exact": exact,
        "right": right,
        "entry": entry,
        "weights": rng.integers(1, 4, n).astype(float),
    }


_GRAD_POINTS = {
    "exponential": lambda r: np.array([r.uniform(4, 6)]),
    "weibull": lambda r: np.array([r.uniform(4, 6), r.uniform(-0.7, 0.7)]),
    "lognormal": lambda r: np.array([r.uniform(4, 6), r.uniform(-0.7, 0.7)]),
    "loglogistic": lambda r: np.array([r.uniform(4, 6), r.uniform(-0.7, 0.7)]),
    "gamma": lambda r: np.array([r.uniform(4, 6), r.uniform(-0.7, 0.7)]),
    "gengamma": lambda r: np.array(
        [r.uniform(4, 6), r.uniform(-0.7, 0.3), r.choice([-1, 1]) * r.uniform(0.2, 1.5)]
    ),
}


@pytest.mark.parametrize("model", MODELS)
def test_analytic_gradient_matches_central_differences(model):
    """The log-likelihood's gradient (analytic; for gamma and generalized gamma
    central differences in the shape / Q only) equals central differences of
    the log-likelihood itself (step 1e-5 on the free scale, truncation error
    ~1e-10, computed here) to 1e-6 relative at 5 random points, on spells of every
    kind: exact, right-censored, interval-censored from 0 and from l > 0, left-
    truncated, weighted."""
    from relkit.survival._mle import _loglik_function, _loglik_gradient_function

    rng = np.random.default_rng(12)
    data = _mixed_spells(rng)
    f = _loglik_function(model, data)
    fg = _loglik_gradient_function(model, data)
    for _ in range(5):
        x = _GRAD_POINTS[model](rng)
        value, grad = fg(x)
        assert value == pytest.approx(f(x), rel=1e-12)
        step = np.eye(x.size) * 1e-5
        numeric = np.array([(f(x + e) - f(x - e)) / 2e-5 for e in step])
        np.testing.assert_allclose(grad, numeric, rtol=1e-6, atol=1e-6 * abs(value))


@pytest.mark.parametrize("model", ["weibull", "gamma", "gengamma"])
def test_gradient_hessian_matches_likelihood_hessian(model):
    """The Hessian by central differences of the analytic gradient (2k gradient
    evaluations) equals scipy.differentiate.hessian of the log-likelihood
    (computed here) to 1e-5 relative at the fitted maximum of 300 left-truncated
    Weibull spells."""
    from scipy.differentiate import hessian as scipy_hessian

    from relkit.survival import _fits
    from relkit.survival._mle import (
        _loglik_function,
        _loglik_gradient_function,
        fit_mle,
        gradient_hessian,
    )

    data = _fits._arrays(_truncated_weibull(np.random.default_rng(9), n=300), 1.0)
    res = fit_mle(model, data)
    f = _loglik_function(model, data)
    fg = _loglik_gradient_function(model, data)

    def vec(xi):
        flat = xi.reshape(xi.shape[0], -1)
        return np.array([f(flat[:, j]) for j in range(flat.shape[1])]).reshape(
            xi.shape[1:]
        )

    ref = scipy_hessian(vec, res.x).ddf
    got = gradient_hessian(lambda v: fg(v)[1], res.x)
    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-3)


# -- probability plots -------------------------------------------------------------


def test_probability_plot_by_hand_exponential():
    """Failures at 10, 20, 30, 40 h, no censoring, exponential mean 25 h given:
    Kaplan-Meier steps 1 -> .75 -> .5 -> .25 -> 0, so the midpoint plotting
    positions (Meeker & Escobar 1998 §6.4) are F = .125, .375, .625, .875;
    exponential axes x = t, y = -ln(1 - F), fitted line y = t / 25."""
    from relkit.survival import probability_plot

    t = pl.DataFrame({"stop_h": [10.0, 20, 30, 40], "observed": [True] * 4})
    fits = pl.DataFrame(
        {
            "model": ["exponential"],
            "scale_h": [25.0],
            "shape": [None],
            "shape2": [None],
            "status": ["ok"],
        },
        schema_overrides={"shape": pl.Float64, "shape2": pl.Float64},
    )
    pp = probability_plot(t, model="exponential", fits=fits)
    assert pp.columns == ["model", "time_h", "cdf_empirical", "x", "y", "y_fitted"]
    F = np.array([0.125, 0.375, 0.625, 0.875])
    np.testing.assert_allclose(pp["cdf_empirical"], F, rtol=1e-12)
    np.testing.assert_allclose(pp["x"], [10, 20, 30, 40])
    np.testing.assert_allclose(pp["y"], -np.log(1 - F), rtol=1e-12)
    np.testing.assert_allclose(pp["y_fitted"], np.array([10, 20, 30, 40]) / 25)


def test_probability_plot_weibull_sample_lies_on_the_line():
    """2,000 uncensored Weibull(shape 1.5, scale 100 h) lifetimes: on Weibull axes
    every point lies within 0.04 of the fitted line on the probability scale
    (the DKW inequality bounds sup |F_n - F| > 0.04 by 2 exp(-2 n 0.04^2) =
    0.003 for n = 2000), and the least-squares slope of the points between
    F = 0.05 and 0.95 is the shape (1.5, within 5 %)."""
    from relkit.survival import probability_plot

    life = 100 * np.random.default_rng(21).weibull(1.5, 2000)
    t = pl.DataFrame({"stop_h": life, "observed": [True] * life.size})
    pp = probability_plot(t, model="weibull")
    fitted_cdf = 1 - np.exp(-np.exp(pp["y_fitted"].to_numpy()))
    assert np.abs(pp["cdf_empirical"].to_numpy() - fitted_cdf).max() < 0.04
    mid = pp.filter(pl.col("cdf_empirical").is_between(0.05, 0.95))
    slope = np.polyfit(mid["x"].to_numpy(), mid["y"].to_numpy(), 1)[0]
    assert slope == pytest.approx(1.5, rel=0.05)


def test_probability_plot_qq_for_gamma_and_warns_on_zero_spells():
    """Gamma has no straight axes: a Q-Q plot whose y_fitted is x; on a gamma
    sample (shape 2, scale 50 h) observed and fitted quantiles agree within 10 %
    between F = 0.1 and 0.9. A zero-length failure spell gets no point and a
    RelkitWarning says so."""
    from relkit.errors import RelkitWarning
    from relkit.survival import probability_plot

    life = np.random.default_rng(5).gamma(2.0, 50.0, 1500)
    t = pl.DataFrame({"stop_h": np.r_[life, 0.0], "observed": [True] * 1501})
    with pytest.warns(RelkitWarning, match="1 zero-length failure spell"):
        pp = probability_plot(t, model="gamma")
    assert (pp["y_fitted"] == pp["x"]).all()
    mid = pp.filter(pl.col("cdf_empirical").is_between(0.1, 0.9))
    assert ((mid["y"] / mid["x"] - 1).abs() < 0.1).all()
