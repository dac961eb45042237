"""Tests of the checkpoint decision (issue 11 §2): two-level checkpointing, the
renewal-reward ETTR of fitted Weibull models, what-if sweeps and their inverse,
and the decision with bounds from the failure count."""

import csv
import math

import numpy as np
import pytest
from shared_paths import SHARED

from relkit.checkpoint import (
    RenewalOptimum,
    checkpoint_efficiency,
    exact_interval_h,
    renewal_ettr,
    renewal_optimum,
)
from relkit.errors import InvalidParameterError

#: shared/reference/checkpoint_intervals.csv (minutes): case -> (cost, M, restart,
#: exact optimum, efficiency there). Daly 2006 doi:10.1016/j.future.2004.11.016,
#: exact Lambert-W optimum [derived]; copied so the suite runs without shared/.
INTERVAL_ROWS = {
    "A": (1, 180, 10, 18.3129, 0.849719),
    "B": (5, 180, 10, 39.1606, 0.740157),
    "C": (0.166667, 108.173077, 5, 5.8942, 0.902802),
    "D": (30, 60, 0, 41.8974, 0.30171),
    "daly2006_fig3": (5, 1440, 10, 116.6901, 0.912606),
    "daly2006_fig4": (5, 360, 10, 56.714, 0.819381),
    "daly2006_fig5": (5, 15, 10, 9.1665, 0.199668),
}

#: Kokolis et al. K1 (shared/reference/ettr_model.csv): 2,048 nodes at RSC-1's
#: 6.5e-3 failures per node-day, u0 = 5 min.
K1 = {"n_nodes": 2048, "failures_per_node_day": 6.5e-3, "restart_h": 5 / 60}


def test_interval_rows_match_the_shared_csv() -> None:
    """The copy above is the reference file's (when shared/ is there)."""
    path = SHARED / "reference" / "checkpoint_intervals.csv"
    if not path.exists():
        pytest.skip(f"{path} not available")
    with path.open(newline="") as fh:
        rows = {r["case"]: r for r in csv.DictReader(fh)}
    for case, (c, m, r, exact, eff) in INTERVAL_ROWS.items():
        row = rows[case]
        assert float(row["checkpoint_cost_min"]) == c
        assert float(row["mtbf_min"]) == m
        assert float(row["restart_min"]) == r
        assert float(row["exact_exponential_min"]) == exact
        assert float(row["efficiency_at_exact"]) == eff


# ================================================================ renewal-reward


@pytest.mark.parametrize("case", sorted(INTERVAL_ROWS))
def test_ref_renewal_exponential_is_daly(case: str) -> None:
    """Shape 1, D = 0: the renewal-reward ETTR is Daly's efficiency
    τ e^{−R/M} / (M(e^{(τ+δ)/M} − 1)) to 1e-9 at any τ, and its maximiser is the
    exact Lambert-W optimum to 1e-6 relative (checkpoint_intervals.csv rows A–D and
    daly2006_fig3–5; efficiency there to the CSV's 6 digits)."""
    c_min, m_min, r_min, exact_min, eff = INTERVAL_ROWS[case]
    c, m, r = c_min / 60, m_min / 60, r_min / 60
    exact = exact_interval_h(c, m)
    assert exact * 60 == pytest.approx(exact_min, rel=1e-4)
    model = [(1.0, m, 1)]
    for tau in (exact / 3, exact, 2 * exact, 5 * m):
        got = renewal_ettr(tau, cost_h=c, restart_h=r, components=model)
        assert got == pytest.approx(
            checkpoint_efficiency(tau, c, m, restart_h=r), abs=1e-9
        )
    opt = renewal_optimum(cost_h=c, restart_h=r, components=model)
    assert opt.interval_h == pytest.approx(exact, rel=1e-6)
    assert opt.expected_ettr == pytest.approx(eff, abs=5e-7)
    assert opt.mttf_h == pytest.approx(m, rel=1e-12)
    assert opt.young_interval_h == pytest.approx(math.sqrt(2 * c * m), rel=1e-12)


def test_renewal_long_series_closed_by_euler_maclaurin() -> None:
    """τ + w = 4 s against M = 1000 h: 9e8 terms to e^-40, so 2^20 are summed and
    the rest closed by Euler-Maclaurin; still Daly's closed form to 1e-9."""
    tau, w, m, r = 3 / 3600, 1 / 3600, 1000.0, 0.05
    got = renewal_ettr(tau, cost_h=w, restart_h=r, components=[(1.0, m, 1)])
    assert got == pytest.approx(checkpoint_efficiency(tau, w, m, restart_h=r), abs=1e-9)


def test_renewal_units_and_components_combine() -> None:
    """n iid units of one Weibull are one Weibull of scale η n^{−1/β}; two
    components of one shape are one with the counts added (the second goes through
    scipy's quad, the first through the closed form)."""
    kw = {"cost_h": 0.05, "restart_h": 0.1, "downtime_h": 0.2}
    b, eta = 0.7, 20_000.0
    units = renewal_ettr(0.5, components=[(b, eta, 1024)], **kw)
    one = renewal_ettr(0.5, components=[(b, eta * 1024 ** (-1 / b), 1)], **kw)
    assert units == pytest.approx(one, rel=1e-12)
    split = renewal_ettr(0.5, components=[(b, eta, 1000), (b, eta, 24)], **kw)
    assert split == pytest.approx(units, rel=1e-9)
    a = renewal_optimum(components=[(b, eta, 1000), (b, eta, 24)], **kw)
    z = renewal_optimum(components=[(b, eta, 1024)], **kw)
    assert a.interval_h == pytest.approx(z.interval_h, rel=1e-6)
    assert a.mttf_h == pytest.approx(z.mttf_h, rel=1e-9)


def _monte_carlo_ettr(
    rng: np.random.Generator,
    shape: float,
    scale: float,
    tau: float,
    w: float,
    u0: float,
    d: float,
    n: int,
) -> tuple[float, float]:
    """Simulate n attempts (cycles) and return the ratio estimate and its standard
    error (delta method): reward τ·#{k: u0 + k(τ+w) <= X}, length X + D."""
    x = scale * rng.weibull(shape, n)
    reward = tau * np.maximum(0.0, np.floor((x - u0) / (tau + w)))
    length = x + d
    ratio = reward.sum() / length.sum()
    se = float(np.std(reward - ratio * length, ddof=1) / math.sqrt(n) / length.mean())
    return float(ratio), se


def test_recover_weibull_ettr_by_monte_carlo() -> None:
    """Shape 0.7 (falling hazard, Schroeder & Gibson DSN 2006), η = 10 h, w = 6 min,
    u0 = 6 min, D = 30 min, τ = 1.6 h: 2,000,000 seeded cycles simulated in numpy
    here agree with the series within 4 standard errors (SE ≈ 1e-4), and the
    exponential of the same mean does not (it is ~45 SE away)."""
    shape, eta, w, u0, d, tau = 0.7, 10.0, 0.1, 0.1, 0.5, 1.6
    mc, se = _monte_carlo_ettr(
        np.random.default_rng(20250611), shape, eta, tau, w, u0, d, 2_000_000
    )
    assert se < 2e-4
    got = renewal_ettr(
        tau, cost_h=w, restart_h=u0, components=[(shape, eta, 1)], downtime_h=d
    )
    assert abs(got - mc) < 4 * se
    mean = eta * math.gamma(1 + 1 / shape)
    expo = renewal_ettr(
        tau, cost_h=w, restart_h=u0, components=[(1.0, mean, 1)], downtime_h=d
    )
    assert abs(expo - mc) > 20 * se


def _grid_optimum(
    shape: float, eta: float, w: float, u0: float, taus: np.ndarray
) -> tuple[float, float]:
    """Brute force: τ Σ_{k=1}^{K} S(u0 + k(τ+w)) / E[X] on a grid, S and E[X] by
    hand (exp(−(t/η)^β), η Γ(1 + 1/β)); K reaches S < 1e-30."""
    mean = eta * math.gamma(1 + 1 / shape)
    best = (0.0, -1.0)
    for tau in taus:
        k_max = int((eta * 70 ** (1 / shape) - u0) / (tau + w)) + 1
        t = u0 + np.arange(1, k_max + 1) * (tau + w)
        e = tau * float(np.sum(np.exp(-((t / eta) ** shape)))) / mean
        if e > best[1]:
            best = (float(tau), e)
    return best


def test_weibull_optimum_departs_from_young() -> None:
    """Shape 0.7, η = 10 h (MTTF 12.66 h), w = u0 = 6 min. A brute-force grid
    (numpy here, step 1e-4 h) puts the optimum at 1.6166 h: 1.6 % above Young's
    √(2wM) = 1.5911 h and 6.0 % above the exponential optimum at the same mean
    (Lambert W, 1.5252 h). With shape 2 (rising hazard) it falls 8 % below Young."""
    shape, eta, w, u0 = 0.7, 10.0, 0.1, 0.1
    opt = renewal_optimum(cost_h=w, restart_h=u0, components=[(shape, eta, 1)])
    tau_grid, e_grid = _grid_optimum(shape, eta, w, u0, np.arange(1.55, 1.70, 1e-4))
    assert opt.interval_h == pytest.approx(tau_grid, abs=1e-4)
    assert opt.expected_ettr == pytest.approx(e_grid, rel=1e-9)
    assert opt.expected_ettr >= e_grid
    mean = eta * math.gamma(1 + 1 / shape)
    assert opt.mttf_h == pytest.approx(mean, rel=1e-12)
    young = math.sqrt(2 * w * mean)
    assert opt.young_interval_h == pytest.approx(young, rel=1e-12)
    assert tau_grid / young - 1 == pytest.approx(0.0160, abs=1e-3)
    assert tau_grid / exact_interval_h(w, mean) - 1 == pytest.approx(0.060, abs=2e-3)
    assert opt.ettr_at_young < opt.expected_ettr
    assert isinstance(opt, RenewalOptimum)
    rising = renewal_optimum(cost_h=w, restart_h=u0, components=[(2.0, eta, 1)])
    tau2, _ = _grid_optimum(2.0, eta, w, u0, np.arange(1.15, 1.30, 1e-4))
    assert rising.interval_h == pytest.approx(tau2, abs=1e-4)
    assert rising.interval_h / rising.young_interval_h - 1 == pytest.approx(
        -0.080, abs=2e-3
    )


@pytest.mark.parametrize(
    ("components", "match"),
    [
        ([], "non-empty"),
        ("weibull", "components must be"),
        ([(0.7, 10.0)], "components must be"),
        ([(0.0, 10.0, 1)], "shape must be a finite number > 0"),
        ([(0.7, -1.0, 1)], "scale_h"),
        ([(0.7, 10.0, 0)], "n_units"),
    ],
)
def test_renewal_invalid_components(components: object, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        renewal_ettr(1.0, cost_h=0.1, restart_h=0.1, components=components)  # type: ignore[arg-type]


def test_renewal_optimum_needs_a_cost() -> None:
    with pytest.raises(
        InvalidParameterError, match="cost_h must be a finite number > 0"
    ):
        renewal_optimum(cost_h=0.0, restart_h=0.1, components=[(0.7, 10.0, 1)])
    # the ETTR itself takes w = 0: no write, only rework and restarts
    assert renewal_ettr(
        1.0, cost_h=0.0, restart_h=0.0, components=[(1.0, 10.0, 1)]
    ) == (pytest.approx(checkpoint_efficiency(1.0, 1e-300, 10.0), rel=1e-12))
