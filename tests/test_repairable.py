"""relkit.repairable (MCF, trend tests, Crow-AMSAA) and its answers on LANL."""

import math
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from relkit import answers
from relkit.errors import InvalidParameterError, RelkitWarning
from relkit.repairable import crow_amsaa, mean_cumulative_function, trend_tests
from relkit.store import Store

#: ReliaWiki "Crow-AMSAA Parameter Estimation Example" (ReliaSoft), 22 failures,
#: failure-terminated at 620 h:
#: https://reliawiki.com/index.php/Crow-AMSAA_Parameter_Estimation_Example
RELIAWIKI_TIMES = [2.7, 10.3, 12.5, 30.6, 57.0, 61.3, 80.0, 109.5, 125.0, 128.6,
                   143.8, 167.9, 229.2, 296.7, 320.6, 328.2, 366.2, 396.7, 421.1,
                   438.2, 501.2, 620.0]  # fmt: skip


def _one(times: list[float], end: float) -> tuple[pl.DataFrame, pl.DataFrame]:
    ev = pl.DataFrame({"unit_id": ["s"] * len(times), "time_h": times})
    return ev, pl.DataFrame({"unit_id": ["s"], "exit_h": [end]})


def test_ref_mcf_hand_example() -> None:
    """Hand computation in mean_cumulative_function's Notes: A [0,10] fails at 2, 6;
    B [0,8] at 4; C [0,5] at 3. MCF 1/3, 2/3, 1, 3/2; at risk 3, 3, 3, 2; robust
    variance 6/81 at 2 h (brackets 2/9, -1/9, -1/9) and 1/8 at 6 h."""
    ev = pl.DataFrame({"unit_id": ["A", "A", "B", "C"], "time_h": [2.0, 6, 4, 3]})
    un = pl.DataFrame({"unit_id": ["A", "B", "C"], "exit_h": [10.0, 8, 5]})
    out = mean_cumulative_function(ev, un, confidence=0.95)
    assert out["mcf"].to_list() == pytest.approx([1 / 3, 2 / 3, 1.0, 1.5], abs=1e-12)
    assert out["n_at_risk"].to_list() == [3, 3, 3, 2]
    assert out["std_error"][0] ** 2 == pytest.approx(6 / 81, abs=1e-12)
    assert out["std_error"][3] ** 2 == pytest.approx(1 / 8, abs=1e-12)
    z = stats.norm.ppf(0.975)
    se = math.sqrt(1 / 8)
    assert out["lower"][3] == pytest.approx(1.5 * math.exp(-z * se / 1.5), rel=1e-12)
    assert out["upper"][3] == pytest.approx(1.5 * math.exp(z * se / 1.5), rel=1e-12)


def test_ref_mcf_equals_nelson_aalen_without_recurrences() -> None:
    """At most one failure per unit, no truncation, no ties: the MCF is the
    Nelson-Aalen cumulative hazard, computed here by lifelines' NelsonAalenFitter
    (its tie smoothing does not act on untied data)."""
    from lifelines import NelsonAalenFitter

    rng = np.random.default_rng(7)
    n = 60
    life = rng.weibull(0.8, n) * 100
    cens = rng.uniform(20, 200, n)
    stop = np.minimum(life, cens)
    observed = life <= cens
    ids = [f"u{i}" for i in range(n)]
    ev = pl.DataFrame({"unit_id": ids, "time_h": stop}).filter(pl.Series(observed))
    un = pl.DataFrame({"unit_id": ids, "exit_h": stop})
    mcf = mean_cumulative_function(ev, un)
    naf = NelsonAalenFitter().fit(stop, observed)
    expected = naf.cumulative_hazard_at_times(mcf["time_h"].to_numpy()).to_numpy()
    np.testing.assert_allclose(mcf["mcf"].to_numpy(), expected, rtol=0, atol=1e-10)


def test_mcf_left_truncation_changes_the_risk_set() -> None:
    """Hand: B enters at 5 h, so at A's failure at 3 h only A is at risk (1/1) and
    at B's at 6 h both are (1/2): MCF 1, 1.5."""
    ev = pl.DataFrame({"unit_id": ["A", "B"], "time_h": [3.0, 6.0]})
    un = pl.DataFrame(
        {"unit_id": ["A", "B"], "entry_h": [0.0, 5.0], "exit_h": [10.0, 10]}
    )
    out = mean_cumulative_function(ev, un)
    assert out["n_at_risk"].to_list() == [1, 2]
    assert out["mcf"].to_list() == pytest.approx([1.0, 1.5])


def test_failure_outside_its_window_is_said() -> None:
    """A failure at 12 h of a unit observed to 10 h is left out with a warning."""
    ev = pl.DataFrame({"unit_id": ["A", "A"], "time_h": [3.0, 12.0]})
    un = pl.DataFrame({"unit_id": ["A"], "exit_h": [10.0]})
    with pytest.warns(RelkitWarning, match="1 failure"):
        out = mean_cumulative_function(ev, un)
    assert out.height == 1


def test_ref_laplace_hand_example() -> None:
    """Hand: failures 1, 2, 4, 8, 16 h in (0, 100]: U = (31 - 5*50) /
    sqrt(5 * 100**2 / 12) = -3.39272; two-sided p = 2 Phi(-3.39272) (scipy).
    MIL-HDBK-189: 2 sum ln(100/t) = 32.1888 against chi-square(10)."""
    out = trend_tests(*_one([1.0, 2, 4, 8, 16], 100.0))
    lap = out.row(0, named=True)
    u = (31 - 250) / math.sqrt(5 * 100**2 / 12)
    assert lap["statistic"] == pytest.approx(u, rel=1e-12)
    assert lap["p_value"] == pytest.approx(2 * stats.norm.cdf(u), rel=1e-9)
    assert lap["direction"] == "improving"
    mil = out.row(2, named=True)
    x = 2 * sum(math.log(100 / t) for t in (1, 2, 4, 8, 16))
    assert mil["statistic"] == pytest.approx(x, rel=1e-12)
    assert mil["df"] == 10
    assert mil["p_value"] == pytest.approx(2 * stats.chi2.sf(x, 10), rel=1e-9)


def test_prop_laplace_of_uniform_times_is_standard_normal() -> None:
    """Under a constant rate the failures given their number are uniform, so the
    Laplace statistic is N(0, 1): over 400 seeded fleets its mean is near 0 and its
    variance near 1, and the MIL-HDBK statistic's mean near 2n (scipy's chi2)."""
    rng = np.random.default_rng(3)
    laps, mils = [], []
    for _ in range(400):
        n = 30
        t = rng.uniform(0, 50, n)
        ev = pl.DataFrame({"unit_id": ["a"] * n, "time_h": t})
        un = pl.DataFrame({"unit_id": ["a"], "exit_h": [50.0]})
        out = trend_tests(ev, un)
        laps.append(out["statistic"][0])
        mils.append(out["statistic"][2])
    assert abs(np.mean(laps)) < 4 / math.sqrt(400)
    assert abs(np.var(laps) - 1) < 0.25
    assert abs(np.mean(mils) - stats.chi2.mean(60)) < 4 * stats.chi2.std(60) / 20


def test_ref_crow_amsaa_reliawiki_example() -> None:
    """ReliaWiki's Crow-AMSAA example (URL above): beta 0.6142, lambda 0.4239
    (failure-terminated). Unbiased (n-2)/n beta = 0.5584 (MIL-HDBK-189C).
    Current MTBF = 1/(lambda beta T^(beta-1)) = T/(n beta) = 620/(22*0.6142)."""
    fit = crow_amsaa(
        *_one(RELIAWIKI_TIMES, 620.0), terminated="failure", confidence=0.9
    ).row(0, named=True)
    assert round(fit["beta"], 4) == 0.6142
    assert round(fit["lambda_per_h_beta"], 4) == 0.4239
    assert fit["beta_unbiased"] == pytest.approx(fit["beta"] * 20 / 22)
    assert fit["current_mtbf_h"] == pytest.approx(620 / (22 * fit["beta"]), rel=1e-9)
    lo = fit["beta"] * stats.chi2.ppf(0.05, 42) / 44
    assert fit["beta_lower"] == pytest.approx(lo, rel=1e-12)
    assert (
        fit["current_mtbf_lower_h"]
        < fit["current_mtbf_h"]
        < fit["current_mtbf_upper_h"]
    )


def test_mil_statistic_is_two_n_over_beta() -> None:
    """One unit from 0, time-terminated: the MIL-HDBK-189 statistic is 2n/beta_hat
    (beta_hat = n / sum ln(T/t_i), Crow 1974), so the test and the fit agree."""
    ev, un = _one(RELIAWIKI_TIMES[:-1], 700.0)
    fit = crow_amsaa(ev, un).row(0, named=True)
    mil = trend_tests(ev, un).row(2, named=True)
    assert mil["statistic"] == pytest.approx(2 * 21 / fit["beta"], rel=1e-10)
    assert fit["beta"] < 1
    assert mil["direction"] == "improving"


def test_failure_terminated_fleet_is_refused() -> None:
    """terminated='failure' is a one-system form; two units are refused."""
    ev = pl.DataFrame({"unit_id": ["a", "b"], "time_h": [1.0, 2.0]})
    un = pl.DataFrame({"unit_id": ["a", "b"], "exit_h": [1.0, 2.0]})
    with pytest.raises(InvalidParameterError, match="terminated='time'"):
        trend_tests(ev, un, terminated="failure")


@pytest.fixture(scope="module")
def lanl(lanl_db: Path) -> dict[str, pl.DataFrame]:
    with Store(lanl_db, read_only=True) as store:
        return answers.store_tables(store)


def test_mtbf_by_period_adds_up_to_the_whole_window(lanl: dict) -> None:
    """LANL per system: the quarters' failures and node-hours sum to mtbf_by's
    whole-window figures (exposure split at boundaries, failures by time)."""
    whole = answers.mtbf_by(**lanl, by=["system"])
    per = answers.mtbf_by_period(**lanl, period="quarter", by=["system"])
    summed = per.group_by("system").agg(pl.col("n_failures", "exposure_h").sum())
    joined = whole.join(summed, on="system", suffix="_sum")
    assert joined.height == whole.height
    assert (joined["n_failures"] == joined["n_failures_sum"]).all()
    np.testing.assert_allclose(
        joined["exposure_h"], joined["exposure_h_sum"], rtol=1e-9
    )
    assert (per["period_start"].dt.month().is_in([1, 4, 7, 10])).all()


def test_mtbf_by_period_per_mode_keeps_quarters_without_failures(lanl: dict) -> None:
    """Reviewer's case: by failure mode, a quarter with no failure of a mode is a
    row with 0 failures and that quarter's node-hours (not left out), so each
    mode's quarters add up to the whole window: facilities/chillers has 35
    failures in 42 quarters over the fleet's 1.21e8 node-hours (mtbf_by)."""
    whole = answers.mtbf_by(**lanl, by=["root_cause", "failure_mode"])
    per = answers.mtbf_by_period(
        **lanl, period="quarter", by=["root_cause", "failure_mode"]
    )
    n_quarters = per["period_start"].n_unique()
    summed = per.group_by("failure_mode").agg(
        pl.len().alias("n_rows"), pl.col("n_failures", "exposure_h").sum()
    )
    joined = whole.join(summed, on="failure_mode", suffix="_sum")
    assert joined.height == whole.height
    assert (joined["n_rows"] == n_quarters).all()
    assert (joined["n_failures"] == joined["n_failures_sum"]).all()
    np.testing.assert_allclose(
        joined["exposure_h"], joined["exposure_h_sum"], rtol=1e-9
    )
    chillers = per.filter(pl.col("failure_mode") == "facilities/chillers")
    assert chillers["n_failures"].sum() == 35
    assert (chillers["n_failures"] == 0).sum() > 0
    assert chillers.filter(pl.col("n_failures") == 0)["mtbf_h"].null_count() == (
        chillers.filter(pl.col("n_failures") == 0).height
    )


def test_lanl_trend_per_system_measured(lanl: dict) -> None:
    """Measured on the bundled LANL data (node failures on each node's age clock,
    nodes pooled per system): system 2 (49 nodes, 7,104 failures) Laplace
    p 4.1e-264, MIL-HDBK-189 p 1.1e-60, beta 0.828 [0.813, 0.845]: improving;
    system 20 (512 nodes, 2,478 failures) Laplace p 9.3e-198, MIL p 2.4e-167,
    beta 0.602: improving; system 18 (3,997 failures) Laplace p 0.44, MIL p 0.0017
    deteriorating, beta 1.05. Self-consistency: beta < 1 exactly when the
    MIL-HDBK statistic exceeds its 2n mean (improving), for every system."""
    out = answers.trend_by(**lanl, by=["system"])
    rows = {r["system"]: r for r in out.iter_rows(named=True)}
    s2, s20, s18 = rows["2"], rows["20"], rows["18"]
    assert s2["n_failures"] == 7104
    assert s2["mil_hdbk_189_direction"] == "improving"
    assert s2["beta"] == pytest.approx(0.8285, abs=1e-3)
    assert s20["beta"] == pytest.approx(0.6023, abs=1e-3)
    assert s20["laplace_direction"] == "improving"
    assert s18["mil_hdbk_189_direction"] == "deteriorating"
    assert s18["beta"] > 1
    for r in rows.values():
        if r["beta"] is not None and r["mil_hdbk_189_direction"] != "no evidence":
            assert (r["beta"] < 1) == (r["mil_hdbk_189_direction"] == "improving")


def _hpp_staggered(
    rng: np.random.Generator, n_units: int, rate_per_h: float
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Homogeneous Poisson failures on staggered windows: entry U(0, 2000) h,
    length U(100, 1000) h, one common rate (the trend tests' null)."""
    entry = rng.uniform(0, 2000, n_units)
    exit_ = entry + rng.uniform(100, 1000, n_units)
    counts = rng.poisson(rate_per_h * (exit_ - entry))
    unit = np.repeat(np.arange(n_units), counts)
    times = rng.uniform(entry[unit], exit_[unit])
    ev = pl.DataFrame({"unit_id": [f"u{i}" for i in unit], "time_h": times},
                      schema={"unit_id": pl.String, "time_h": pl.Float64})  # fmt: skip
    un = pl.DataFrame(
        {"unit_id": [f"u{i}" for i in range(n_units)], "entry_h": entry,
         "exit_h": exit_}
    )  # fmt: skip
    return ev, un


def test_recover_trend_tests_keep_their_level_under_late_entry() -> None:
    """Null simulation: 200 units observed on staggered windows, each expecting
    0.03-0.3 failures (rate 1/3000 per h), 400 seeds, alpha 0.05. Every test
    must reject about 5 % (binomial sd 1.1 %, band 2-9 %). The Lewis-Robinson
    CV of window-cut gaps was 0.73 here and rejected 15.4 % (3,000 seeds); the
    robust between-unit CV (trend_tests Notes, Lawless and Nadeau 1995) 4.7 %."""
    rejected = dict.fromkeys(("laplace", "lewis_robinson", "mil_hdbk_189"), 0)
    n_seeds = 400
    for seed in range(n_seeds):
        ev, un = _hpp_staggered(np.random.default_rng(seed), 200, 1 / 3000)
        out = trend_tests(ev, un)
        for row in out.iter_rows(named=True):
            rejected[row["test"]] += row["p_value"] < 0.05
    rates = {k: v / n_seeds for k, v in rejected.items()}
    assert all(0.02 <= r <= 0.09 for r in rates.values()), rates
    note = trend_tests(*_hpp_staggered(np.random.default_rng(0), 200, 1 / 3000))
    assert "robust" in note.filter(pl.col("test") == "lewis_robinson")["note"][0]


def test_lewis_robinson_single_unit_uses_the_gaps_cv() -> None:
    """Hand check: one unit on [0, 100] h failing at 1, 2, 4, 8, 16 h. Gaps
    1, 1, 2, 4, 8: mean 3.2, squared deviations 34.8, sd (ddof 1)
    sqrt(34.8/4) = 2.9496, CV 0.92175;
    Laplace U = (31 - 250) / (100 sqrt(5/12)) = -3.39276; LR = U / CV = -3.6808."""
    ev, un = _one([1.0, 2, 4, 8, 16], 100.0)
    out = trend_tests(ev, un)
    lr = out.filter(pl.col("test") == "lewis_robinson")
    cv = math.sqrt(34.8 / 4) / 3.2
    u = (31 - 250) / (100 * math.sqrt(5 / 12))
    assert lr["statistic"][0] == pytest.approx(u / cv, rel=1e-12)
    assert "5 gaps" in lr["note"][0]
