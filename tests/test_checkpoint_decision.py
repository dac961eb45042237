"""Tests of the checkpoint decision (issue 11 §2): two-level checkpointing, the
renewal-reward ETTR of fitted Weibull models, what-if sweeps and their inverse,
and the decision with bounds from the failure count."""

import csv
import json
import math

import numpy as np
import polars as pl
import pytest
from hypothesis import given
from hypothesis import strategies as st
from shared_paths import SHARED

from relkit.checkpoint import (
    CheckpointDecision,
    NodeKeepingShare,
    RenewalOptimum,
    TwoLevelPlan,
    checkpoint_decision,
    checkpoint_efficiency,
    ettr_model,
    exact_interval_h,
    expected_ettr,
    node_keeping_share,
    renewal_ettr,
    renewal_optimum,
    solve_whatif,
    two_level_ettr,
    two_level_optimum,
    whatif,
)
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError

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


# ================================================================ two levels


@pytest.mark.parametrize("p", [0.0, 0.3, 0.7, 1.0])
@pytest.mark.parametrize("dt", [2 / 60, 10 / 60, 1.5])
def test_two_level_k1_is_the_one_level_model_exactly(p: float, dt: float) -> None:
    """k = 1 (no fast level) is Kokolis et al.'s model with w = w_p, bit for bit,
    whatever p and the fast write cost (issue 11 §2)."""
    kw = {**K1, "interval_h": dt, "queue_h": 0.05}
    one = expected_ettr(**kw, cost_h=30 / 3600)
    two = two_level_ettr(
        **kw,
        fast_cost_h=7 / 3600,
        persistent_cost_h=30 / 3600,
        persistent_every=1,
        node_keeping_frac=p,
    )
    assert two == one


@given(
    n=st.integers(1, 20_000),
    rate=st.floats(0, 0.1),
    u0=st.floats(0, 2),
    dt=st.floats(1e-3, 10),
    wf=st.floats(0, 1),
    wp=st.floats(0, 1),
    p=st.floats(0, 1),
)
def test_prop_two_level_k1_is_one_level(
    n: int, rate: float, u0: float, dt: float, wf: float, wp: float, p: float
) -> None:
    one = expected_ettr(
        n_nodes=n, failures_per_node_day=rate, restart_h=u0, interval_h=dt, cost_h=wp
    )
    two = two_level_ettr(
        n_nodes=n,
        failures_per_node_day=rate,
        restart_h=u0,
        interval_h=dt,
        fast_cost_h=wf,
        persistent_cost_h=wp,
        persistent_every=1,
        node_keeping_frac=p,
    )
    assert two == one


def test_two_level_hand_computation() -> None:
    """Hand computation of issue 11's formula: λ = 2048·6.5e-3/24 = 0.554667/h,
    u0 = 5 min, q = 2 min, Δt = 5 min, k = 4, w_f = 3 s, w_p = 30 s, p = 0.6:
    (1 − λ(u0 + q + pΔt/2 + (1−p)kΔt/2)) / (1 + ((k−1)w_f + w_p)/(kΔt))."""
    lam = 2048 * 6.5e-3 / 24
    u0, q, dt, k, wf, wp, p = 5 / 60, 2 / 60, 5 / 60, 4, 3 / 3600, 30 / 3600, 0.6
    hand = (1 - lam * (u0 + q + p * dt / 2 + (1 - p) * k * dt / 2)) / (
        1 + ((k - 1) * wf + wp) / (k * dt)
    )
    got = two_level_ettr(
        **K1,
        queue_h=q,
        interval_h=dt,
        fast_cost_h=wf,
        persistent_cost_h=wp,
        persistent_every=k,
        node_keeping_frac=p,
    )
    assert got == pytest.approx(hand, rel=1e-14)
    assert round(hand, 6) == 0.856605  # the same by hand: 0.884444 / 1.0325
    # p = 0 and k = 1 likewise gives the one-level model
    assert two_level_ettr(
        **K1,
        interval_h=dt,
        fast_cost_h=wf,
        persistent_cost_h=wp,
        persistent_every=1,
        node_keeping_frac=0.0,
    ) == expected_ettr(**K1, interval_h=dt, cost_h=wp)


def _brute_two_level(
    lam: float, a: float, wf: float, wp: float, p: float, ks: range
) -> tuple[int, float, float]:
    """Grid search of issue 11's formula, independent of relkit: (k, Δt, ETTR)."""
    dts = np.geomspace(1e-3, 2.0, 40_001)
    best = (0, 0.0, -1.0)
    for k in ks:
        e = (1 - lam * (a + p * dts / 2 + (1 - p) * k * dts / 2)) / (
            1 + ((k - 1) * wf + wp) / (k * dts)
        )
        i = int(np.argmax(e))
        if e[i] > best[2]:
            best = (k, float(dts[i]), float(e[i]))
    return best


def test_two_level_optimum_matches_a_brute_force_grid() -> None:
    """The optimum over Δt and integer k against a 40,001-point grid in Δt for each
    k = 1..40 (numpy in this test); Δt for fixed k against scipy's bounded search."""
    from scipy.optimize import minimize_scalar

    lam = 2048 * 6.5e-3 / 24
    wf, wp, p = 3 / 3600, 30 / 3600, 0.6
    plan = two_level_optimum(
        **K1, fast_cost_h=wf, persistent_cost_h=wp, node_keeping_frac=p
    )
    k, dt, e = _brute_two_level(lam, 5 / 60, wf, wp, p, range(1, 41))
    assert plan.persistent_every == k == 4
    assert plan.interval_h == pytest.approx(dt, rel=5e-4)  # grid step 3.3e-4
    assert plan.expected_ettr >= e
    assert plan.expected_ettr == pytest.approx(e, rel=1e-8)
    assert plan.persistent_interval_h == 4 * plan.interval_h
    # first order (docstring): k ≈ sqrt(p (w_p − w_f) / ((1 − p) w_f)) = 3.67
    assert math.sqrt(p * (wp - wf) / ((1 - p) * wf)) == pytest.approx(3.674, abs=1e-3)
    # the one-level plan beside it is Kokolis K1 (ettr_model.csv: 9.6697 min, 0.8644)
    assert plan.one_level_interval_h * 60 == pytest.approx(9.6697, rel=1e-4)
    assert plan.one_level_ettr == pytest.approx(0.8644, abs=5e-5)
    assert plan.expected_ettr > plan.one_level_ettr
    # fixed k: the closed-form Δt*(k) is scipy's numeric maximiser
    for kk in (2, 4, 9):
        fixed = two_level_optimum(
            **K1,
            fast_cost_h=wf,
            persistent_cost_h=wp,
            node_keeping_frac=p,
            persistent_every=kk,
        )
        res = minimize_scalar(
            lambda x, kk=kk: (
                -two_level_ettr(
                    **K1,
                    interval_h=math.exp(x),
                    fast_cost_h=wf,
                    persistent_cost_h=wp,
                    persistent_every=kk,
                    node_keeping_frac=p,
                )
            ),
            bounds=(math.log(1e-3), math.log(2.0)),
            method="bounded",
            options={"xatol": 1e-10},
        )
        assert fixed.persistent_every == kk
        assert fixed.interval_h == pytest.approx(math.exp(res.x), rel=1e-5)
        assert fixed.expected_ettr == pytest.approx(-res.fun, rel=1e-12)


def test_two_level_optimum_k1_is_kokolis_exactly() -> None:
    kw = {"fast_cost_h": 1 / 3600, "persistent_cost_h": 0.5 / 60}
    plan = two_level_optimum(**K1, **kw, node_keeping_frac=0.4, persistent_every=1)
    one = ettr_model(**K1, interval_h=1.0, cost_h=0.5 / 60)
    assert plan.interval_h == one.optimal_interval_h
    assert plan.expected_ettr == one.ettr_at_optimal
    assert (plan.interval_h, plan.expected_ettr) == (
        plan.one_level_interval_h,
        plan.one_level_ettr,
    )


def test_two_level_optimum_edges() -> None:
    """w_f >= w_p: the fast level never pays (k = 1). p = 1: no failure needs the
    persistent level, so k runs to the cap. k_max = 1 forbids the fast level."""
    slow_fast = two_level_optimum(
        **K1, fast_cost_h=1 / 60, persistent_cost_h=0.5 / 60, node_keeping_frac=0.9
    )
    assert slow_fast.persistent_every == 1
    capped = two_level_optimum(
        **K1,
        fast_cost_h=1 / 3600,
        persistent_cost_h=1 / 60,
        node_keeping_frac=1.0,
        max_persistent_every=50,
    )
    assert capped.persistent_every == 50
    one = two_level_optimum(
        **K1,
        fast_cost_h=1 / 3600,
        persistent_cost_h=1 / 60,
        node_keeping_frac=0.5,
        max_persistent_every=1,
    )
    assert one.persistent_every == 1
    assert isinstance(one, TwoLevelPlan)
    assert set(one.to_dict()) == {
        "interval_h",
        "persistent_every",
        "persistent_interval_h",
        "expected_ettr",
        "node_keeping_frac",
        "one_level_interval_h",
        "one_level_ettr",
    }


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"persistent_every": 0}, "persistent_every must be a whole number >= 1"),
        ({"persistent_every": 2.5}, "persistent_every"),
        (
            {"node_keeping_frac": 1.2},
            r"node_keeping_frac must be a fraction in \[0, 1\]",
        ),
        ({"node_keeping_frac": None}, "node_keeping_frac"),
        ({"fast_cost_h": -1.0}, "fast_cost_h"),
        ({"persistent_cost_h": float("nan")}, "persistent_cost_h"),
    ],
)
def test_two_level_invalid_inputs(kwargs: dict, match: str) -> None:
    base = {
        **K1,
        "interval_h": 0.1,
        "fast_cost_h": 0.001,
        "persistent_cost_h": 0.01,
        "persistent_every": 4,
        "node_keeping_frac": 0.5,
    }
    with pytest.raises(InvalidParameterError, match=match):
        two_level_ettr(**{**base, **kwargs})


def test_two_level_optimum_needs_failures_and_a_persistent_cost() -> None:
    kw = {"restart_h": 0.1, "fast_cost_h": 0.001, "node_keeping_frac": 0.5}
    with pytest.raises(
        InvalidParameterError, match="failures_per_node_day must be > 0"
    ):
        two_level_optimum(
            n_nodes=8, failures_per_node_day=0.0, persistent_cost_h=0.01, **kw
        )
    with pytest.raises(InvalidParameterError, match=r"persistent_cost_h .*> 0"):
        two_level_optimum(
            n_nodes=8, failures_per_node_day=1e-3, persistent_cost_h=0.0, **kw
        )


# ---------------------------------------------------------------- node_keeping_share


def test_node_keeping_share_by_hand() -> None:
    """Hand count: hardware 5 + 2 and a link down 1 lose the node (8); an NCCL
    watchdog 3 and an application error 2 keep it (5): p = 5/13. A repeated mode
    is summed; a mode with n = 0 is not listed."""
    counts = pl.DataFrame(
        {
            "failure_mode": [
                "gpu/fallen_off_bus",
                "host/mce",
                "network/link_down",
                "network/nccl_watchdog",
                "gpu/application_error",
                "gpu/fallen_off_bus",
                "gpu/hang",
            ],
            "n": [3, 2, 1, 3, 2, 2, 0],
        }
    )
    share = node_keeping_share(counts)
    assert share.node_keeping_frac == 5 / 13
    assert (share.n_node_keeping, share.n_node_losing) == (5, 8)
    assert share.node_keeping_modes == (
        "gpu/application_error",
        "network/nccl_watchdog",
    )
    assert share.node_losing_modes == (
        "gpu/fallen_off_bus",
        "host/mce",
        "network/link_down",
    )
    assert isinstance(share, NodeKeepingShare)
    assert share.to_dict()["node_keeping_frac"] == 5 / 13


def test_node_keeping_share_unknown_modes_and_overrides() -> None:
    counts = pl.DataFrame(
        {
            "failure_mode": ["software/bug", "host/ssd", "gpu/hbm_uncorrectable"],
            "n": [6, 1, 3],
        }
    )
    with pytest.raises(
        InvalidParameterError, match=r"not in the taxonomy.*loses_node="
    ):
        node_keeping_share(counts)
    share = node_keeping_share(
        counts, loses_node={"software/bug": False, "host/ssd": True}
    )
    assert share.node_keeping_frac == 0.6
    # an override of a taxonomy mode wins
    flipped = node_keeping_share(
        counts,
        loses_node={
            "software/bug": False,
            "host/ssd": True,
            "gpu/hbm_uncorrectable": False,
        },
    )
    assert flipped.node_keeping_frac == 0.9


def test_node_keeping_share_errors() -> None:
    with pytest.raises(SchemaError, match="missing column"):
        node_keeping_share(pl.DataFrame({"failure_mode": ["gpu/hang"]}))
    with pytest.raises(SchemaError, match="integer"):
        node_keeping_share(pl.DataFrame({"failure_mode": ["gpu/hang"], "n": [1.5]}))
    with pytest.raises(InvalidParameterError, match="null"):
        node_keeping_share(
            pl.DataFrame({"failure_mode": [None, "gpu/hang"], "n": [1, 1]})
        )
    with pytest.raises(InvalidParameterError, match=">= 0"):
        node_keeping_share(pl.DataFrame({"failure_mode": ["gpu/hang"], "n": [-1]}))
    with pytest.raises(InsufficientDataError, match="sum to 0"):
        node_keeping_share(pl.DataFrame({"failure_mode": ["gpu/hang"], "n": [0]}))


def test_mode_mix_to_two_level_plan() -> None:
    """The measured mix feeds the plan: p from the counts, then the optimum."""
    counts = pl.DataFrame(
        {
            "failure_mode": ["gpu/hbm_uncorrectable", "network/nccl_watchdog"],
            "n": [4, 6],
        }
    )
    p = node_keeping_share(counts).node_keeping_frac
    plan = two_level_optimum(
        **K1, fast_cost_h=3 / 3600, persistent_cost_h=30 / 3600, node_keeping_frac=p
    )
    assert plan.node_keeping_frac == 0.6
    lam = 2048 * 6.5e-3 / 24
    assert (
        plan.persistent_every
        == _brute_two_level(lam, 5 / 60, 3 / 3600, 30 / 3600, 0.6, range(1, 41))[0]
    )


# ================================================================ renewal-reward


@pytest.mark.parametrize("case", sorted(INTERVAL_ROWS))
def test_ref_renewal_exponential_is_daly(case: str) -> None:
    """Shape 1, D = 0: the renewal-reward ETTR is Daly's efficiency
    τ e^{−R/M} / (M(e^{(τ+δ)/M} − 1)) to 1e-9 at any τ, and its maximiser is the
    exact Lambert-W optimum to 1e-6 relative (checkpoint_intervals.csv rows A–D and
    daly2006_fig3–5; efficiency there to the CSV's 6 digits)."""
    c_min, m_min, r_min, exact_min, eff = INTERVAL_ROWS[case]
    c, m, r = c_min / 60, m_min / 60, r_min / 60
    exact = exact_interval_h(cost_h=c, mtbf_h=m)
    assert exact * 60 == pytest.approx(exact_min, rel=1e-4)
    model = [(1.0, m, 1)]
    for tau in (exact / 3, exact, 2 * exact, 5 * m):
        got = renewal_ettr(tau, cost_h=c, restart_h=r, components=model)
        assert got == pytest.approx(
            checkpoint_efficiency(tau, cost_h=c, mtbf_h=m, restart_h=r), abs=1e-9
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
    assert got == pytest.approx(
        checkpoint_efficiency(tau, cost_h=w, mtbf_h=m, restart_h=r), abs=1e-9
    )


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
    assert tau_grid / exact_interval_h(cost_h=w, mtbf_h=mean) - 1 == pytest.approx(
        0.060, abs=2e-3
    )
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
    ) == (
        pytest.approx(checkpoint_efficiency(1.0, cost_h=1e-300, mtbf_h=10.0), rel=1e-12)
    )


# ================================================================ what-if


def test_ref_solve_failure_rate_kokolis() -> None:
    """Issue 11: 12,500 nodes (100,000 GPUs), 5 min restart, 1 min blocking write,
    target 0.9 → 0.4255 failures per 1000 node-days ("E[ETTR] of Kokolis et al.,
    solved by hand with scipy's brentq")."""
    kw = {"gpus": 100_000, "restart_h": 5 / 60, "cost_h": 1 / 60}
    r = solve_whatif(target_ettr=0.9, solve="failure-rate", **kw)
    assert round(r * 1000, 4) == 0.4255
    back = whatif(**kw, failures_per_node_day=r)
    assert back["n_nodes"].item() == 12_500
    assert back["expected_ettr"].item() == pytest.approx(0.9, abs=1e-9)


@pytest.mark.parametrize("q", [0.0, 0.25])
def test_solve_round_trips(q: float) -> None:
    """Solve, then evaluate at the optimal interval: the target to 1e-9."""
    base = {"gpus": 100_000, "queue_h": q}
    u0 = solve_whatif(
        target_ettr=0.9,
        solve="restart-h",
        failures_per_node_day=2e-4,
        cost_h=1 / 60,
        **base,
    )
    w = solve_whatif(
        target_ettr=0.85,
        solve="cost-h",
        failures_per_node_day=2e-4,
        restart_h=5 / 60,
        **base,
    )
    r = solve_whatif(
        target_ettr=0.8, solve="failure-rate", restart_h=0.1, cost_h=0.02, **base
    )
    rows = [
        (whatif(failures_per_node_day=2e-4, restart_h=u0, cost_h=1 / 60, **base), 0.9),
        (whatif(failures_per_node_day=2e-4, restart_h=5 / 60, cost_h=w, **base), 0.85),
        (whatif(failures_per_node_day=r, restart_h=0.1, cost_h=0.02, **base), 0.8),
    ]
    for frame, target in rows:
        assert frame["interval_rule"].item() == "optimal"
        assert frame["expected_ettr"].item() == pytest.approx(target, abs=1e-9)
    assert u0 > 0
    assert w > 0
    # every smaller value does better
    better = whatif(
        failures_per_node_day=2e-4, restart_h=0.9 * u0, cost_h=1 / 60, **base
    )
    assert better["expected_ettr"].item() > 0.9


def test_solve_rate_with_zero_write_or_zero_restart() -> None:
    """w = 0: E* = 1 − λu0 (the limit Δt → 0), so λ = 0.1/u0 exactly; u0 = 0:
    E* ≈ 1 − √(2λw), both by hand."""
    r = solve_whatif(
        target_ettr=0.9, solve="failure-rate", gpus=8, restart_h=0.5, cost_h=0.0
    )
    assert r == pytest.approx(24 * 0.1 / 0.5, rel=1e-12)
    r0 = solve_whatif(
        target_ettr=0.99, solve="failure-rate", gpus=8, restart_h=0.0, cost_h=1e-4
    )
    lam = r0 / 24
    assert 1 - math.sqrt(2 * lam * 1e-4) == pytest.approx(0.99, abs=2e-4)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        # the restart alone makes 0.9 impossible: λu0 = 12500·1e-3/24·(5/60) = 0.043,
        # then w pushes it below; with u0 = 15 min it is 0.13 > 0.1
        (
            {"solve": "cost-h", "failures_per_node_day": 1e-3, "restart_h": 0.25},
            "restarts and queue waits alone",
        ),
        (
            {"solve": "restart-h", "failures_per_node_day": 5e-3, "cost_h": 0.1},
            "even with u₀ = 0",
        ),
        (
            {"solve": "failure-rate", "restart_h": 0.0, "cost_h": 0.0},
            "failures cost nothing",
        ),
        ({"solve": "cost-h", "failures_per_node_day": 1e-3}, "needs \\['restart_h'\\]"),
        (
            {
                "solve": "cost-h",
                "failures_per_node_day": 1e-3,
                "restart_h": 0.1,
                "cost_h": 1.0,
            },
            "leave it out",
        ),
        ({"solve": "queue", "restart_h": 0.1, "cost_h": 0.1}, "solve must be"),
    ],
)
def test_solve_no_answer_says_why(kwargs: dict, match: str) -> None:
    with pytest.raises(InvalidParameterError, match=match):
        solve_whatif(target_ettr=0.9, gpus=100_000, **kwargs)


@pytest.mark.parametrize("target", [1.0, 0.0, 1.5, float("nan"), True])
def test_solve_target_must_be_inside_0_1(target: object) -> None:
    with pytest.raises(InvalidParameterError, match="strictly between 0 and 1"):
        solve_whatif(
            target_ettr=target,  # type: ignore[arg-type]
            solve="failure-rate",
            gpus=8,
            restart_h=0.1,
            cost_h=0.1,
        )


def test_whatif_grid_and_references() -> None:
    """One row per combination; MTTF(N) = 24/(N r_f) (Kokolis; README: 131,072 GPUs
    at 6.5e-3 → 0.2254 h); given intervals are the ETTR of ettr_model.csv rows
    'fixed' (0.684 at 60 min, 0.9323 at 5 min); the optimum is K1's 9.6697 min."""
    out = whatif(
        gpus=[16_000, 16_384, 131_072],
        failures_per_node_day=6.5e-3,
        restart_h=5 / 60,
        cost_h=[0.0, 0.5 / 60],
        interval_h=[None, 1.0, 5 / 60],
    )
    assert out.height == 3 * 2 * 3
    assert out.columns == [
        "gpus",
        "n_nodes",
        "failures_per_node_day",
        "restart_h",
        "cost_h",
        "queue_h",
        "interval_h",
        "mttf_h",
        "expected_ettr",
        "interval_rule",
        "first_order_load",
    ]
    assert out["interval_rule"].to_list()[:3] == ["optimal", "given", "given"]
    fixed = out.filter(
        (pl.col("gpus") == 16_000)
        & (pl.col("cost_h") == 0.0)
        & (pl.col("interval_rule") == "given")
    )
    assert [f"{x:.4g}" for x in fixed["expected_ettr"]] == ["0.684", "0.9323"]
    k1 = out.filter(
        (pl.col("gpus") == 16_384)
        & (pl.col("cost_h") > 0)
        & (pl.col("interval_rule") == "optimal")
    ).row(0, named=True)
    assert k1["interval_h"] * 60 == pytest.approx(9.6697, rel=1e-4)
    assert k1["expected_ettr"] == pytest.approx(0.8644, abs=5e-5)
    big = out.filter(pl.col("gpus") == 131_072)
    assert big["n_nodes"].unique().to_list() == [16_384]
    assert big["mttf_h"][0] == pytest.approx(0.2254, abs=5e-5)
    # every row is expected_ettr / ettr_model of its own parameters
    for row in out.iter_rows(named=True):
        kw = {
            "n_nodes": row["n_nodes"],
            "failures_per_node_day": row["failures_per_node_day"],
            "restart_h": row["restart_h"],
            "cost_h": row["cost_h"],
        }
        if row["interval_rule"] == "given":
            assert row["expected_ettr"] == expected_ettr(
                **kw, interval_h=row["interval_h"]
            )
        else:
            m = ettr_model(**kw, interval_h=1.0)
            assert (row["interval_h"], row["expected_ettr"]) == (
                m.optimal_interval_h,
                m.ettr_at_optimal,
            )


def test_whatif_beyond_131072_gpus_and_odd_node_counts() -> None:
    """A million GPUs, a queue wait, and a partial node (ceil(gpus / gpus_per_node))."""
    out = whatif(
        gpus=[1_000_000, 9],
        failures_per_node_day=[1e-4, 0.0],
        restart_h=0.1,
        cost_h=0.01,
        interval_h=0.5,
        queue_h=0.2,
    )
    assert out["n_nodes"].to_list() == [125_000, 125_000, 2, 2]
    assert out["mttf_h"][0] == pytest.approx(24 / (125_000 * 1e-4), rel=1e-12)
    assert out["mttf_h"][1] is None  # rate 0: no failures, no MTTF
    assert out["expected_ettr"][1] == pytest.approx(1 / (1 + 0.01 / 0.5), rel=1e-15)
    assert out["expected_ettr"][0] == expected_ettr(
        n_nodes=125_000,
        failures_per_node_day=1e-4,
        restart_h=0.1,
        interval_h=0.5,
        cost_h=0.01,
        queue_h=0.2,
    )


def test_whatif_refusals() -> None:
    with pytest.raises(InvalidParameterError, match="optimal interval"):
        whatif(gpus=8, failures_per_node_day=0.0, restart_h=0.1, cost_h=0.1)
    with pytest.raises(InvalidParameterError, match="at most 100,000"):
        whatif(
            gpus=list(range(1, 101)),
            failures_per_node_day=[1e-3] * 50,
            restart_h=[0.1] * 30,
            cost_h=0.1,
        )
    with pytest.raises(InvalidParameterError, match="gpus must be a whole number >= 1"):
        whatif(gpus=[0], failures_per_node_day=1e-3, restart_h=0.1, cost_h=0.1)
    with pytest.raises(InvalidParameterError, match="empty"):
        whatif(gpus=[], failures_per_node_day=1e-3, restart_h=0.1, cost_h=0.1)
    with pytest.raises(
        InvalidParameterError, match="interval_h must be a finite number > 0"
    ):
        whatif(
            gpus=8, failures_per_node_day=1e-3, restart_h=0.1, cost_h=0.1, interval_h=0
        )


# ================================================================ the decision


def test_ref_decision_llama3_rate_bounds() -> None:
    """Llama 3 (shared/reference/README.md): 419 interruptions on 2,048 nodes in 54
    days, exact Poisson (Garwood) 95 %: 3.789e-3 [3.435e-3, 4.169e-3] per node-day.
    As a job-level rate over 54·24 h, ×24/2048 gives those per node-day."""
    d = checkpoint_decision(
        n_failures=419,
        exposure_h=54 * 24,
        restart_h=10 / 60,
        cost_h=1 / 60,
        confidence=0.95,
    )
    per_node_day = [
        x * 24 / 2048
        for x in (
            d.failure_rate_per_h,
            d.failure_rate_lower_per_h,
            d.failure_rate_upper_per_h,
        )
    ]
    assert [f"{x:.3e}" for x in per_node_day] == ["3.789e-03", "3.435e-03", "4.169e-03"]
    # the interval and ETTR are Kokolis' optimum at that rate (ettr_model)
    m = ettr_model(
        n_nodes=2048,
        failures_per_node_day=419 / (2048 * 54),
        restart_h=10 / 60,
        interval_h=1.0,
        cost_h=1 / 60,
    )
    assert d.interval_h == pytest.approx(m.optimal_interval_h, rel=1e-12)
    assert d.expected_ettr == pytest.approx(m.ettr_at_optimal, rel=1e-12)
    assert d.interval_lower_h < d.interval_h < d.interval_upper_h
    assert d.expected_ettr_lower < d.expected_ettr < d.expected_ettr_upper
    # the bounds are the model at the rate bounds: the upper rate gives the lower
    up = ettr_model(
        n_nodes=2048,
        failures_per_node_day=4.169e-3,
        restart_h=10 / 60,
        interval_h=d.interval_h,
        cost_h=1 / 60,
    )
    assert d.interval_lower_h == pytest.approx(up.optimal_interval_h, rel=1e-3)
    assert d.expected_ettr_lower == pytest.approx(up.ettr, rel=1e-4)
    assert d.young_interval_h == pytest.approx(
        math.sqrt(2 * (1 / 60) / d.failure_rate_per_h), rel=1e-12
    )
    assert d.method.startswith("Kokolis et al.")


def test_ref_decision_rate_bounds_are_the_mtbf_bounds() -> None:
    """README: r = 7, T = 14,980 h, c = 0.90 → MTBF [1139.3, 4559.7] h, so the rate
    is within [1/4559.7, 1/1139.3] per hour."""
    d = checkpoint_decision(
        n_failures=7, exposure_h=14_980.0, restart_h=0.1, cost_h=0.05, confidence=0.9
    )
    assert 1 / d.failure_rate_upper_per_h == pytest.approx(1139.3, abs=0.05)
    assert 1 / d.failure_rate_lower_per_h == pytest.approx(4559.7, abs=0.05)
    assert d.failure_rate_per_h == 7 / 14_980


def test_decision_no_failure_is_one_sided() -> None:
    """n = 0: only the one-sided upper rate bound, −ln(1 − c)/T (README: 600 h at
    90 % → MTBF at least 260.58 h); no point estimate of the interval."""
    d = checkpoint_decision(
        n_failures=0, exposure_h=600.0, restart_h=0.1, cost_h=0.05, confidence=0.9
    )
    assert d.failure_rate_upper_per_h == pytest.approx(-math.log(0.1) / 600, rel=1e-12)
    assert 1 / d.failure_rate_upper_per_h == pytest.approx(260.58, abs=0.005)
    assert (d.failure_rate_per_h, d.failure_rate_lower_per_h) == (0.0, 0.0)
    assert (d.interval_h, d.interval_upper_h, d.expected_ettr) == (None, None, None)
    assert d.young_interval_h is None
    lam = d.failure_rate_upper_per_h
    hand = math.sqrt(0.05**2 + 2 * 0.05 * (1 - lam * 0.1) / lam) - 0.05
    assert d.interval_lower_h == pytest.approx(hand, rel=1e-12)
    assert d.expected_ettr_upper == pytest.approx(1 / (1 + 0.05 / hand), rel=1e-12)
    assert any("one-sided" in a for a in d.assumptions)


def test_decision_scale_queue_and_errors() -> None:
    base = {"n_failures": 12, "exposure_h": 300.0, "restart_h": 0.1, "cost_h": 0.02}
    one = checkpoint_decision(**base)
    two = checkpoint_decision(**base, scale=2.0)
    assert two.failure_rate_per_h == 2 * one.failure_rate_per_h
    assert two.failure_rate_upper_per_h == 2 * one.failure_rate_upper_per_h
    assert two.interval_h < one.interval_h
    assert any("×2" in a for a in two.assumptions)
    assert not any("scaled" in a for a in one.assumptions)
    queued = checkpoint_decision(**base, queue_h=0.3)
    folded = checkpoint_decision(**{**base, "restart_h": 0.4})
    assert queued.interval_h == folded.interval_h
    assert queued.expected_ettr_lower == folded.expected_ettr_lower
    assert any("q = 0.3 h" in a for a in queued.assumptions)
    with pytest.raises(
        InvalidParameterError, match=r"exposure_h must be > 0 hours.*Pass"
    ):
        checkpoint_decision(**{**base, "exposure_h": 0.0})
    with pytest.raises(
        InvalidParameterError, match="n_failures must be a whole number"
    ):
        checkpoint_decision(**{**base, "n_failures": -1})
    with pytest.raises(InvalidParameterError, match="confidence"):
        checkpoint_decision(**base, confidence=1.0)
    with pytest.raises(InvalidParameterError, match="cost_h"):
        checkpoint_decision(**{**base, "cost_h": 0.0})
    with pytest.raises(InvalidParameterError, match="scale"):
        checkpoint_decision(**base, scale=0.0)


def test_decision_breakdown_says_so() -> None:
    """λ(u0 + q) >= 1: no progress at any interval, said in the assumptions."""
    d = checkpoint_decision(n_failures=50, exposure_h=10.0, restart_h=0.3, cost_h=0.01)
    assert (d.interval_h, d.expected_ettr) == (0.0, 0.0)
    assert any("no progress" in a for a in d.assumptions)


def test_decision_to_dict_is_json() -> None:
    d = checkpoint_decision(n_failures=3, exposure_h=100.0, restart_h=0.1, cost_h=0.02)
    out = d.to_dict()
    assert list(out) == [
        "interval_h",
        "interval_lower_h",
        "interval_upper_h",
        "expected_ettr",
        "expected_ettr_lower",
        "expected_ettr_upper",
        "failure_rate_per_h",
        "failure_rate_lower_per_h",
        "failure_rate_upper_per_h",
        "young_interval_h",
        "method",
        "assumptions",
    ]
    assert json.loads(json.dumps(out))["assumptions"] == list(d.assumptions)
    assert isinstance(d, CheckpointDecision)
    assert all(isinstance(a, str) and a.endswith(".") for a in d.assumptions)
    assert any("Poisson process at the measured rate" in a for a in d.assumptions)
    assert any("u₀ = 0.1 h" in a for a in d.assumptions)


def test_decision_with_a_weibull_model() -> None:
    """With a fitted model the interval is the renewal-reward maximiser; an
    exponential model (D = 0) gives the exact Lambert-W optimum at its mean."""
    base = {"n_failures": 20, "exposure_h": 200.0, "restart_h": 0.1, "cost_h": 0.05}
    expo = checkpoint_decision(**base, model=[(1.0, 10.0, 1)])
    assert expo.interval_h == pytest.approx(
        exact_interval_h(cost_h=0.05, mtbf_h=10.0), rel=1e-6
    )
    assert expo.method.startswith("renewal-reward, Weibull")
    weib = checkpoint_decision(**base, model=[(0.7, 10.0, 1)], scale=2.0, queue_h=0.2)
    best = renewal_optimum(
        cost_h=0.05, restart_h=0.1, components=[(0.7, 10.0, 2.0)], downtime_h=0.2
    )
    assert weib.interval_h == best.interval_h
    assert weib.expected_ettr == best.expected_ettr
    assert weib.young_interval_h == best.young_interval_h
    assert weib.interval_lower_h < weib.interval_h < weib.interval_upper_h
    assert weib.expected_ettr_lower < weib.expected_ettr < weib.expected_ettr_upper
    assert "shape 0.7" in weib.method
    # the upper rate bound scales the hazard by λ_up/λ: for one unit, the
    # scale η·(2·ratio)^(-1/β) (n_units is a whole number, review 14 §5); the
    # optimum is flat, so the two forms agree to 1e-8, not to rounding
    ratio = weib.failure_rate_upper_per_h / weib.failure_rate_per_h
    at_up = renewal_optimum(
        cost_h=0.05,
        restart_h=0.1,
        components=[(0.7, 10.0 * (2.0 * ratio) ** (-1 / 0.7), 1)],
        downtime_h=0.2,
    )
    assert weib.interval_lower_h == pytest.approx(at_up.interval_h, rel=1e-6)
    with pytest.raises(
        InvalidParameterError, match="model is given but n_failures is 0"
    ):
        checkpoint_decision(**{**base, "n_failures": 0}, model=[(0.7, 10.0, 1)])
    with pytest.raises(InvalidParameterError, match="components must be"):
        checkpoint_decision(**base, model=[(0.7, 10.0)])  # type: ignore[list-item]
