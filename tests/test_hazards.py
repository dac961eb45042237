"""Issue 12 §4: Cox PH, Weibull AFT and log-rank by covariate (relkit.survival)."""

import math

import numpy as np
import polars as pl
import pytest

from relkit.answers import hazards_by, store_tables
from relkit.errors import SchemaError
from relkit.survival import cox_hazards, logrank_by, weibull_aft
from relkit.survival._regression import logrank_statistic
from tests.shared_paths import SHARED

C15 = SHARED / "cases" / "C15-degenerate-survival-fits.csv"


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
            "entry_h": np.zeros(n),
        }
    )


@pytest.mark.skipif(not C15.exists(), reason="shared cases absent")
def test_ref_c15_xid48_constant_and_separated() -> None:
    """shared/cases/README.md C15: xid48, 8 units, 6 failures (5 in the README).

    ``sku`` is H100 everywhere: dropped with the note "constant column". Rack r2's
    four units all fail (95, 120, 150, 340 h) before any r1 unit leaves the risk
    set, so at every failure time the failing unit has the largest r2 indicator
    at risk: the partial likelihood rises forever (lifelines: HR 6.2e7, p 0.99).
    relkit reports the level as separated with no ratio, and fits nothing else.
    """
    t = (
        pl.read_csv(C15)
        .filter(mode="xid48")
        .select(
            stop_h=pl.col("duration_h").cast(pl.Float64),
            observed=pl.col("failed").cast(pl.Boolean),
            sku="sku",
            rack="rack",
        )
    )
    for fit in (cox_hazards, weibull_aft):
        res = fit(t, covariates=["sku", "rack"])
        rows = res.hazard_ratios.to_dicts()
        assert len(rows) == 1
        row = rows[0]
        assert (row["covariate"], row["level"], row["reference"]) == (
            "rack",
            "r2",
            "r1",
        )
        assert row["status"] == "separation: level r2 has only failures"
        assert row["hazard_ratio"] is None
        assert row["lower"] is None
        assert any("sku: constant column" in n for n in res.notes)
        assert any("no model fitted" in n for n in res.notes)


def test_ref_cox_equals_lifelines() -> None:
    """Hazard ratios and 95 % intervals equal lifelines' CoxPHFitter to 1e-8.

    Oracle: lifelines 0.30.3 fitted in the test on the same one-hot design
    (reference = the most common rack).
    """
    from lifelines import CoxPHFitter

    t = _three_racks()
    res = cox_hazards(t, covariates=["rack"])
    ref = t["rack"].value_counts(sort=True)["rack"][0]
    design = t.to_dummies("rack").drop(f"rack_{ref}", "entry_h")
    cph = CoxPHFitter().fit(
        design.with_columns(pl.col("observed").cast(pl.Int8)).to_pandas(),
        "stop_h",
        "observed",
    )
    ci = np.exp(cph.confidence_intervals_)
    for row in res.hazard_ratios.iter_rows(named=True):
        name = f"rack_{row['level']}"
        assert row["reference"] == ref
        assert row["hazard_ratio"] == pytest.approx(
            math.exp(cph.params_[name]), rel=1e-8
        )
        assert row["lower"] == pytest.approx(ci.loc[name].iloc[0], rel=1e-8)
        assert row["upper"] == pytest.approx(ci.loc[name].iloc[1], rel=1e-8)
        assert row["p_value"] == pytest.approx(cph.summary.loc[name, "p"], rel=1e-8)
    assert res.concordance == pytest.approx(cph.concordance_index_, rel=1e-12)
    assert set(res.ph_test["level"]) == set(res.hazard_ratios["level"])


def test_ref_cox_two_groups_score_is_zero() -> None:
    r"""Hand check of the maximum: the partial-likelihood score is 0 at β̂.

    Two groups, no ties (times 1..8, group x = 1 for units 2, 3, 5, 8; unit 6
    censored). Cox's score U(β) = Σ_events [x_i − Σ_R x_j e^{βx_j} / Σ_R e^{βx_j}]
    (Cox 1972, doi:10.1111/j.2517-6161.1972.tb00899.x) evaluated by hand in
    numpy must vanish at relkit's log ratio, and its derivative (the observed
    information) gives the reported standard error (to lifelines' stopping
    tolerance: its Newton steps end with the score near 1e-4, not 0).
    """
    stop = np.arange(1.0, 9.0)
    x = np.array([0, 1, 1, 0, 1, 0, 0, 1], dtype=float)
    obs = np.array([1, 1, 1, 1, 1, 0, 1, 1], dtype=bool)
    t = pl.DataFrame({"stop_h": stop, "observed": obs, "g": np.where(x == 1, "y", "n")})
    res = cox_hazards(t, covariates=["g"], reference={"g": "n"})
    beta = res.hazard_ratios["log_hazard_ratio"][0]
    score = info = 0.0
    for i in np.flatnonzero(obs):
        risk = stop >= stop[i]
        w = np.exp(beta * x[risk])
        mean = (x[risk] * w).sum() / w.sum()
        score += x[i] - mean
        info += (x[risk] ** 2 * w).sum() / w.sum() - mean**2
    assert abs(score) < 1e-3  # lifelines stops Newton-Raphson near, not at, 0
    assert res.hazard_ratios["se"][0] == pytest.approx(1 / math.sqrt(info), rel=1e-3)


def test_ref_logrank_truncated_by_hand() -> None:
    r"""Log-rank with left truncation, worked by hand (Klein & Moeschberger §7.3).

    A: (entry, stop, failed) = (0, 2, 1), (1, 4, 1); B: (0, 3, 1), (2.5, 5, 0).
    t=2: at risk A1, A2, B1 (B2 enters at 2.5): n=3, n_A=2, d=d_A=1:
    Z += 1 − 2/3, V += 1·(2/2)·(2/3)(1/3) = 2/9.
    t=3: A2, B1, B2: n_A=1, d=1 (B1): Z += −1/3, V += 2/9.
    t=4: A2, B2: n_A=1, d=d_A=1: Z += 1/2, V += 1/4.
    Z = 1/2, V = 25/36, χ² = (1/4)/(25/36) = 9/25 = 0.36, 1 df.
    """
    t = pl.DataFrame(
        {
            "entry_h": [0.0, 1.0, 0.0, 2.5],
            "stop_h": [2.0, 4.0, 3.0, 5.0],
            "observed": [True, True, True, False],
            "g": ["A", "A", "B", "B"],
        }
    )
    out = logrank_by(t, group="g").row(0, named=True)
    assert out["statistic"] == pytest.approx(0.36, rel=1e-12)
    assert out["degrees_of_freedom"] == 1
    assert out["method"] == "risk set adjusted for entry"
    from scipy import stats

    assert out["p_value"] == pytest.approx(stats.chi2.sf(0.36, 1), rel=1e-12)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ref_logrank_statistic_equals_lifelines_untruncated(seed: int) -> None:
    """Without truncation the entry-adjusted statistic is lifelines' to 1e-10.

    Oracle: lifelines.statistics.multivariate_logrank_test on the same data,
    with ties (times rounded to whole hours).
    """
    from lifelines.statistics import multivariate_logrank_test

    t = _three_racks(seed).with_columns(pl.col("stop_h").round(0))
    stat, dof = logrank_statistic(
        t["entry_h"].to_numpy(),
        t["stop_h"].to_numpy(),
        t["observed"].to_numpy(),
        t["rack"].to_numpy(),
    )
    ref = multivariate_logrank_test(
        t["stop_h"].to_numpy(), t["rack"].to_numpy(), t["observed"].to_numpy()
    )
    assert stat == pytest.approx(ref.test_statistic, rel=1e-10)
    assert dof == ref.degrees_of_freedom


def test_ref_weibull_aft_equals_lifelines() -> None:
    """Time ratios and shape equal lifelines' WeibullAFTFitter; HR = TR^(−ρ).

    Oracle: lifelines fitted in the test. Exponential lives are Weibull with
    ρ = 1, and rack b's true hazard ratio against c is 2 / 0.5 = 4.
    """
    from lifelines import WeibullAFTFitter

    t = _three_racks(seed=4, n=600)
    res = weibull_aft(t, covariates=["rack"], reference={"rack": "c"})
    design = t.to_dummies("rack").drop("rack_c", "entry_h")
    aft = WeibullAFTFitter().fit(
        design.with_columns(pl.col("observed").cast(pl.Int8)).to_pandas(),
        "stop_h",
        "observed",
    )
    rho = math.exp(aft.params_[("rho_", "Intercept")])
    assert res.weibull_shape == pytest.approx(rho, rel=1e-8)
    assert res.weibull_shape_lower < 1 < res.weibull_shape_upper
    b = res.hazard_ratios.filter(level="b").row(0, named=True)
    tr = math.exp(aft.params_[("lambda_", "rack_b")])
    assert b["time_ratio"] == pytest.approx(tr, rel=1e-8)
    assert b["hazard_ratio"] == pytest.approx(tr ** (-rho), rel=1e-8)
    assert b["lower"] < 4 < b["upper"]


def test_level_without_failures_is_separated_others_fitted() -> None:
    """A rack with no failure: HR → 0, flagged; the other racks still fitted.

    The other rack's ratio equals lifelines' fit on the table without the
    separated rack's units (the documented policy), to 1e-8.
    """
    from lifelines import CoxPHFitter

    t = _three_racks(seed=5)
    extra = pl.DataFrame(
        {
            "stop_h": [50.0, 80.0, 120.0],
            "observed": [False] * 3,
            "rack": ["d"] * 3,
            "entry_h": [0.0] * 3,
        }
    )
    res = cox_hazards(pl.concat([t, extra]), covariates=["rack"])
    d = res.hazard_ratios.filter(level="d").row(0, named=True)
    assert d["status"] == "separation: level d has no failures"
    assert d["hazard_ratio"] is None
    ok = res.hazard_ratios.filter(status="ok")
    assert ok.height == 2
    ref = ok["reference"][0]
    design = t.to_dummies("rack").drop(f"rack_{ref}", "entry_h")
    cph = CoxPHFitter().fit(
        design.with_columns(pl.col("observed").cast(pl.Int8)).to_pandas(),
        "stop_h",
        "observed",
    )
    for row in ok.iter_rows(named=True):
        name = f"rack_{row['level']}"
        assert row["hazard_ratio"] == pytest.approx(
            math.exp(cph.params_[name]), rel=1e-8
        )
    assert any("left out of the fit" in n for n in res.notes)


def test_unknown_covariate_names_the_columns() -> None:
    """An unknown covariate is a SchemaError that lists the table's columns."""
    with pytest.raises(SchemaError, match="unknown covariate"):
        cox_hazards(_three_racks(), covariates=["batch"])


def test_numeric_with_few_values_is_said() -> None:
    """A numeric column with 3 values is fitted linearly and a note says so."""
    t = _three_racks().with_columns(slot=pl.Series(np.arange(300) % 3))
    res = cox_hazards(t, covariates=["slot"])
    assert res.hazard_ratios["level"].to_list() == [None]
    assert any("numeric with 3 distinct values" in n for n in res.notes)
    per_level = cox_hazards(t, covariates=["slot"], categorical=["slot"])
    assert per_level.hazard_ratios.height == 2


def test_recover_batch_multiplier_on_simulated_fleet(tmp_path) -> None:
    """The simulator's x3 hardware batch comes out with HR > 1, CI above 1.

    ``llama3-54d`` on 512 nodes, batches b1 (50 %, x1) and b2 (50 %, x3 on
    hardware modes; fleet-mean normalised: 0.50 and 1.51), seed 3, written as
    assets and events files and ingested. Measured (first-failure endpoint,
    all counted failures, 89 incidents): b2 against b1 HR 2.94 [1.82, 4.74],
    p 1.1e-5; log-rank p 3.9e-6. The true ratio of all failures is below 3
    (software modes are not multiplied).
    """
    from relkit.ingest import read_file
    from relkit.simulate import simulate_cluster, simulation_preset
    from relkit.store import Store

    cfg = simulation_preset(
        "llama3-54d", nodes=512, batches=(("b1", 0.5, 1.0), ("b2", 0.5, 3.0))
    )
    sim = simulate_cluster(cfg, seed=3)
    sim.assets.write_csv(tmp_path / "assets.csv")
    sim.incidents.filter("counts_as_failure").select(
        ts=pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%S%.fZ"),
        host="host",
        failure_mode="failure_mode",
    ).write_csv(tmp_path / "events.csv")
    with Store(":memory:") as store:
        read_file(store, tmp_path / "assets.csv", kind="assets")
        read_file(store, tmp_path / "events.csv", kind="events")
        tables = store_tables(store)
    res = hazards_by(**tables, covariates=["batch"])
    row = res.hazard_ratios.row(0, named=True)
    assert (row["level"], row["reference"]) == ("b2", "b1")
    assert row["hazard_ratio"] == pytest.approx(2.94, abs=0.01)
    assert row["lower"] > 1
    assert res.logrank["p_value"][0] < 1e-3
    with pytest.raises(SchemaError, match="attributes"):
        hazards_by(**tables, covariates=["cage"])


def test_recover_lanl_system_first_failure() -> None:
    """LANL (bundled): hazard of a node's first failure by system, Cox.

    Recorded run: 5,003 nodes (4 of 5,007 left out, install date unknown),
    3,573 first failures, reference system 18 (the most common), system 10
    against 18: HR 0.347 [0.288, 0.418]; concordance 0.650; log-rank over the
    19 systems χ² 1253 on 18 df. lifelines halts on a singular Hessian with
    its full Newton step here; relkit refits with step 0.3 and says so.
    """
    from pathlib import Path

    from relkit.ingest import read_file
    from relkit.store import Store

    lanl = Path(__file__).resolve().parents[1] / "datasets" / "lanl"
    with Store(":memory:") as store:
        read_file(store, lanl / "LA-UR-05-7318-failure-data-1996-2005.csv", kind="lanl")
        tables = store_tables(store)
    res = hazards_by(**tables, covariates=["system"])
    assert (res.n_units, res.n_events) == (5003, 3573)
    row = res.hazard_ratios.filter(level="10").row(0, named=True)
    assert row["reference"] == "18"
    assert row["hazard_ratio"] == pytest.approx(0.3472, abs=1e-3)
    assert res.concordance == pytest.approx(0.6502, abs=1e-3)
    assert res.logrank["statistic"][0] == pytest.approx(1252.94, abs=0.1)
    assert any("step size 0.3" in n for n in res.notes)
    # the halted first attempt's warnings (overflow, lifelines' separation hint
    # with its code example) are not the refit's: none is passed on
    assert not [n for n in res.notes if "Warning" in n]


def test_cox_with_left_truncation_fits_and_says_no_ph_test() -> None:
    """Reviewer's case: units entering late (entry_h > 0). The ratio is
    lifelines' CoxPHFitter with entry_col on the same rows (computed here, to
    1e-8); lifelines cannot compute Schoenfeld residuals with entries, so the
    proportional-hazards test is left out with a note, not a crash."""
    import lifelines

    t = pl.DataFrame(
        {
            "entry_h": [0.0, 1, 0, 2.5, 0, 1, 0, 0.5],
            "stop_h": [5.0, 8, 12, 3, 9, 15, 20, 11],
            "observed": [True, True, False, True, True, True, False, True],
            "rack": ["a"] * 4 + ["b"] * 4,
        }
    )
    from relkit.survival import cox_hazards

    res = cox_hazards(t, covariates=["rack"], reference={"rack": "a"})
    ref = lifelines.CoxPHFitter().fit(
        t.with_columns(rack_b=(pl.col("rack") == "b").cast(pl.Float64))
        .drop("rack")
        .to_pandas(),
        duration_col="stop_h",
        event_col="observed",
        entry_col="entry_h",
    )
    row = res.hazard_ratios.row(0, named=True)
    assert row["hazard_ratio"] == pytest.approx(
        float(ref.hazard_ratios_["rack_b"]), rel=1e-8
    )
    assert res.ph_test.height == 0
    assert any("proportional-hazards test not computed" in n for n in res.notes)


def test_weibull_aft_with_clustered_gaps_fits_and_says_it_is_not_clustered() -> None:
    """Reviewer's case (relkit hazards --model weibull-aft --endpoint tbf): gaps
    of one unit carry a cluster column, which lifelines' AFT cannot take (it
    crashed with an internal TypeError). The fit runs with robust intervals,
    its time ratio equals lifelines' WeibullAFTFitter on the same rows without
    the cluster column (computed here, to 1e-6), and a note says the rows count
    as independent."""
    import lifelines

    rng = np.random.default_rng(5)
    n = 80
    rack = np.where(np.arange(n) % 2 == 0, "a", "b")
    scale = np.where(rack == "a", 100.0, 40.0)
    t = pl.DataFrame(
        {
            "entry_h": 0.0,
            "stop_h": scale * rng.weibull(1.3, n),
            "observed": rng.random(n) < 0.8,
            "rack": rack,
            "unit": [f"u{i // 2}" for i in range(n)],
        }
    )
    from relkit.survival import weibull_aft

    res = weibull_aft(
        t, covariates=["rack"], reference={"rack": "a"}, cluster_col="unit"
    )
    ref = lifelines.WeibullAFTFitter().fit(
        t.with_columns(rack_b=(pl.col("rack") == "b").cast(pl.Float64))
        .drop("rack", "unit", "entry_h")
        .to_pandas(),
        duration_col="stop_h",
        event_col="observed",
    )
    row = res.hazard_ratios.row(0, named=True)
    assert row["status"] == "ok"
    assert row["time_ratio"] == pytest.approx(
        math.exp(float(ref.params_[("lambda_", "rack_b")])), rel=1e-6
    )
    assert any("not clustered" in n for n in res.notes)
