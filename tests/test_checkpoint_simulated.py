"""The checkpoint decision against the simulator (issue 11 §3).

relkit's own simulator knows the truth a real cluster hides: the failure rate
of the run's nodes, u₀, q and w as configured, and the run's true ETTR. Four
checks tie the decision to it:

1. the measured ETTR of simulated runs (from their written logs) agrees with
   Kokolis et al.'s first-order E[ETTR] at the true rate, within Monte Carlo
   error, where the model's assumptions hold;
2. the interval recommended from one measured run lies in the flat region of
   the simulated ETTR curve (same seeds, a grid of intervals);
3. the measured badput categories sum to wall - productive;
4. the rate bounds of the decision cover the true rate for most seeds.

The configuration is ``llama3-54d`` cut to a 128-node run on 160 nodes for 60
days, with 16 spare nodes (the preset gives 4: set with ``SimConfig.replace``,
since ``simulation_preset(nodes=..., spare_nodes=...)`` raises a TypeError),
no planned interruptions, one checkpoint level and exponential failures:
λ = 128 x 3.844e-3 / 24 = 0.0205 interruptions per hour (Llama 3's Table 5
rates, :mod:`relkit.simulate._presets`). u₀ = 15 min, q = 30 min, Δt = 1 h and
w = 1 min are chosen, not sourced: they make each term of the model worth
several standard errors of the seeds' mean (λu₀ = 0.005, λq = 0.010,
λΔt/2 = 0.010 against an SE near 0.0014), while λ(u₀ + q + Δt/2) = 0.026
keeps the model's own bias far below that SE.
"""

import json
import math
from typing import Any

import polars as pl
import pytest
from scipy import stats

from relkit import Store, read_file
from relkit.answers import decide_checkpoints, run_goodput
from relkit.checkpoint import expected_ettr, renewal_ettr
from relkit.jobs import GOODPUT_RUN_SCHEMA
from relkit.simulate import (
    SimConfig,
    simulate_cluster,
    simulation_preset,
    write_simulation,
)

SEEDS = (1, 2, 3, 4, 5, 6, 7, 8)
#: Standard errors allowed between the seeds' mean difference and 0. The
#: difference over its SE from the seeds' spread is Student-t with 7 degrees of
#: freedom: P(|t| > 3) = 2.0 %.
K_SE = 3.0
#: A checkpoint interval "in the flat region": its simulated ETTR within this of
#: the simulated best (absolute, 0.5 %; issue 11 §3).
FLAT_BAND = 0.005
#: Checkpoint intervals (hours) of the simulated ETTR curve.
GRID_H = (0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 2.0, 3.0, 4.0)
BADPUT = [c for c in GOODPUT_RUN_SCHEMA.names() if c.startswith("badput_")]


def config(**changes: Any) -> SimConfig:
    """The module's configuration (see the module docstring), with changes."""
    cfg = simulation_preset(
        "llama3-54d",
        nodes=160,
        run_nodes=128,
        days=60,
        planned_per_day=0.0,
        background_jobs=0,
        noise_lines_per_node_day=0.0,
        restart_h=0.25,
        requeue_h=0.5,
        checkpoint_interval_h=1.0,
        checkpoint_cost_h=1 / 60,
    )
    return cfg.replace(spare_nodes=16, **changes)


def true_rate_per_h(cfg: SimConfig) -> float:
    """λ of the run: its nodes x the interrupting rate per node-day / 24."""
    return cfg.run_nodes * cfg.failures_per_node_day(counted_only=False) / 24.0


@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, Any]]:
    """Each seed's run simulated, written, ingested and measured."""
    cfg = config()
    out: list[dict[str, Any]] = []
    for seed in SEEDS:
        sim = simulate_cluster(cfg, seed=seed)
        path = tmp_path_factory.mktemp(f"seed{seed}")
        write_simulation(sim, path)
        truth = json.loads((path / "ground_truth.json").read_text(encoding="utf-8"))
        store = Store(":memory:")
        read_file(store, path / "checkpoints.jsonl", kind="checkpoints")
        read_file(
            store, path / "sacct.psv", kind="sacct", tz=truth["ingest"]["sacct_tz"]
        )
        g = run_goodput(
            store.table("checkpoints"), store.table("jobs"), store.table("job_nodes")
        )
        out.append(
            {
                "seed": seed,
                "cfg": cfg,
                "true": sim.runs.row(0, named=True),
                "jobs": sim.jobs.filter(partition="train").sort("start_ts"),
                "goodput": g,
                "measured": g.runs.row(0, named=True),
                "decision": decide_checkpoints(g, confidence=0.9).row(0, named=True),
            }
        )
    return out


def test_recover_measured_ettr_matches_model(measured: list[dict[str, Any]]) -> None:
    """Measured ETTR (run_goodput on each seed's checkpoints.jsonl and sacct.psv)
    minus expected_ettr at the run's own interval, the true rate (the
    simulator's failures_per_node_day of the interrupting modes, ground truth)
    and the configured u₀, q, w: the seeds' mean difference lies within
    K_SE = 3 standard errors of 0, the SE estimated from the seeds' spread
    (sample SD / √8; Student-t, 7 degrees of freedom).

    What else separates them, each well below that SE (1.4e-3 on these
    seeds; the Poisson count gives 1.7e-3: √(λ·wall·E[L²])/wall/√8 with L
    the wall time lost per failure, u₀ + q + a uniform share of Δt + w):
    - the model's own bias, first order in λ (Δt/2 lost per failure, none
      during u₀, λ per wall hour though no failure strikes during q): against
      the exact renewal-reward ETTR of the simulated mechanics (renewal_ettr,
      exponential, downtime q) it is -1.9e-4 at λ(u₀ + q + Δt/2) = 0.026,
      asserted below 3e-4 and below SE/4;
    - the span's ends (the first attempt pays u₀ with no failure before it,
      the last keeps its unsaved work and has no q): the true ETTR's mean
      minus the renewal ETTR was -1.0e-4 ± 2.4e-4 over 400 other seeds
      (1000-1399, measured while writing this test);
    - the log's measurement, within 1e-4 of the truth (tests/test_goodput.py;
      below 2e-5 on these seeds).
    The run never waits for nodes (asserted), so q is the configured requeue.
    """
    diffs = []
    for m in measured:
        cfg, true, jobs = m["cfg"], m["true"], m["jobs"]
        gaps_h = (
            (jobs["start_ts"].shift(-1) - jobs["end_ts"]).dt.total_microseconds()
            / 3.6e9
        ).drop_nulls()
        assert gaps_h.len() == true["n_unexpected"] >= 10
        assert (gaps_h - cfg.requeue_h).abs().max() < 1e-6
        assert m["measured"]["n_interruptions"] == true["n_unexpected"]
        assert m["measured"]["checkpoint_interval_h"] == pytest.approx(
            true["checkpoint_interval_h"], abs=1e-6
        )
        model = expected_ettr(
            n_nodes=true["n_nodes"],
            failures_per_node_day=true["failures_per_node_day"],
            restart_h=cfg.restart_h,
            interval_h=true["checkpoint_interval_h"],
            cost_h=cfg.checkpoint_cost_h,
            queue_h=cfg.requeue_h,
        )
        diffs.append(m["measured"]["ettr_frac"] - model)
    cfg = measured[0]["cfg"]
    lam = true_rate_per_h(cfg)
    assert lam == pytest.approx(0.0205, abs=1e-4)
    dt = measured[0]["true"]["checkpoint_interval_h"]
    x = lam * (cfg.restart_h + cfg.requeue_h + dt / 2)
    assert x < 0.03
    exact = renewal_ettr(
        dt,
        cost_h=cfg.checkpoint_cost_h,
        restart_h=cfg.restart_h,
        components=[(1.0, 1 / lam, 1)],
        downtime_h=cfg.requeue_h,
    )
    model = expected_ettr(
        n_nodes=cfg.run_nodes,
        failures_per_node_day=measured[0]["true"]["failures_per_node_day"],
        restart_h=cfg.restart_h,
        interval_h=dt,
        cost_h=cfg.checkpoint_cost_h,
        queue_h=cfg.requeue_h,
    )
    n = len(diffs)
    mean = sum(diffs) / n
    sd = math.sqrt(sum((d - mean) ** 2 for d in diffs) / (n - 1))
    se = sd / math.sqrt(n)
    assert 0 < se < 0.003
    # the model's bias is well below the Monte Carlo error
    assert abs(model - exact) < 3e-4
    assert abs(model - exact) < se / 4
    assert abs(mean) <= K_SE * se
    # the test can fail: the model's terms are each several SEs
    for term in (lam * cfg.requeue_h, lam * dt / 2):
        assert term > K_SE * se


def test_prop_measured_badput_sums_to_wall_minus_productive(
    measured: list[dict[str, Any]],
) -> None:
    """Every measured category (init, checkpoint, restore, lost progress,
    recovery, queue, other) adds up to wall - productive on each run: an
    identity of the breakdown, so to float rounding (1e-9 h)."""
    for m in measured:
        run = m["measured"]
        badput = sum(run[c] for c in BADPUT)
        assert badput == pytest.approx(run["wall_h"] - run["productive_h"], abs=1e-9)


def test_recover_rate_bounds_cover_true_rate(measured: list[dict[str, Any]]) -> None:
    """The true λ (ground truth) lies inside the decision's 90 % two-sided
    Garwood bounds [failure_rate_lower_per_h, failure_rate_upper_per_h] for at
    least 6 of the 8 seeds. Garwood bounds cover with probability >= 90 %, so
    the misses are at most Binomial(8, 0.1): 3 or more misses has probability
    3.8 % (scipy.stats.binom.sf(2, 8, 0.1)); that is the chance this check
    fails on a correct library. The interval's own bounds are ordered."""
    lam = true_rate_per_h(measured[0]["cfg"])
    covered = 0
    for m in measured:
        d = m["decision"]
        assert d["n_failures"] == m["true"]["n_unexpected"]
        assert d["failure_rate_lower_per_h"] < d["failure_rate_per_h"]
        assert d["failure_rate_per_h"] < d["failure_rate_upper_per_h"]
        covered += d["failure_rate_lower_per_h"] <= lam <= d["failure_rate_upper_per_h"]
        assert d["interval_lower_h"] <= d["interval_h"] <= d["interval_upper_h"]
    assert stats.binom.sf(2, len(SEEDS), 0.1) == pytest.approx(0.0381, abs=1e-4)
    assert covered >= len(SEEDS) - 2


def simulated_ettr(interval_h: float) -> tuple[float, list[pl.DataFrame]]:
    """The seeds' mean true ETTR at one interval, and each seed's attempts."""
    cfg = config(checkpoint_interval_h=interval_h)
    step_h = cfg.step_time_s / 3600
    total, attempts = 0.0, []
    for seed in SEEDS:
        sim = simulate_cluster(cfg, seed=seed)
        run = sim.runs.row(0, named=True)
        # the simulator checkpoints after whole steps of 10 s
        assert run["checkpoint_interval_h"] == pytest.approx(
            max(1, round(interval_h / step_h)) * step_h, abs=1e-9
        )
        total += run["ettr_frac"]
        attempts.append(sim.jobs.select("start_ts", "end_ts"))
    return total / len(SEEDS), attempts


def test_recover_recommended_interval_is_in_flat_region(
    measured: list[dict[str, Any]],
) -> None:
    """The interval decide_checkpoints recommends from ONE measured run (seed
    1's, checkpointing at the configured 1 h) gives, simulated on the 8 seeds,
    a mean true ETTR within FLAT_BAND = 0.005 (issue 11 §3) of the best mean
    over GRID_H (the same seeds: common random numbers, since the failure draws
    and the attempts' start and end times do not depend on the interval, as
    asserted here). The simulator rounds an interval to whole 10 s steps
    (under 5 s off). A clearly bad interval, 8 x the recommendation, is
    outside the band: its mean simulated ETTR is 0.07 below the best (the
    model: it loses λ·8Δt*/2 ≈ 0.10 to rework against √(2wλ) ≈ 0.026 lost at
    the optimum). On these seeds: best 0.96067 (at 1.25 h), recommendation
    1.232 h (Young 1.258 h) at 0.96030, 8 x it (9.85 h) at 0.88931."""
    decision = measured[0]["decision"]
    rec_h = decision["interval_h"]
    assert decision["interval_lower_h"] <= rec_h <= decision["interval_upper_h"]
    curve = {}
    reference = None
    for dt in GRID_H:
        curve[dt], attempts = simulated_ettr(dt)
        if reference is None:
            reference = attempts
        for a, b in zip(attempts, reference, strict=True):
            assert a.equals(b)
    best = max(curve.values())
    # the grid brackets the optimum: both ends are below the best
    assert curve[GRID_H[0]] < best - FLAT_BAND
    assert curve[GRID_H[-1]] < best
    at_rec, _ = simulated_ettr(rec_h)
    assert at_rec >= best - FLAT_BAND
    at_bad, _ = simulated_ettr(8 * rec_h)
    assert at_bad < best - FLAT_BAND
