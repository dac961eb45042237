"""Tests of competing risks: Aalen-Johansen cumulative incidence with bands,
Gray's test, the store composition, the chart (issue 12 §3)."""

import math
import warnings

import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lifelines import AalenJohansenFitter, KaplanMeierFitter
from lifelines.statistics import multivariate_logrank_test

from relkit.errors import InsufficientDataError, RelkitWarning, SchemaError
from relkit.survival import cumulative_incidence, gray_test, kaplan_meier

BMT_FTIME = [
    0.67,
    9.5,
    131.77,
    24.03,
    1.47,
    2.23,
    124.83,
    10.53,
    123.9,
    2.0,
    1.7,
    6.33,
    2.3,
    3.57,
    0.4,
    0.87,
    121.1,
    5.27,
    7.5,
    6.3,
    6.13,
    2.8,
    5.37,
    2.87,
    10.9,
    3.07,
    1.7,
    114.7,
    1.8,
    114.1,
    35.0,
    112.93,
    3.63,
    112.23,
    1.67,
    7.63,
    7.53,
    110.37,
    20.93,
    6.03,
    2.83,
    9.63,
    3.17,
    9.97,
    5.7,
    106.13,
    2.53,
    4.2,
    9.17,
    8.73,
    85.1,
    4.8,
    3.57,
    8.0,
    82.6,
    81.67,
    6.0,
    6.2,
    3.47,
    4.23,
    1.0,
    7.47,
    6.1,
    77.0,
    76.03,
    28.53,
    1.97,
    13.07,
    1.43,
    72.93,
    71.83,
    67.8,
    8.17,
    7.57,
    2.4,
    70.2,
    3.03,
    5.87,
    68.83,
    1.1,
    9.13,
    6.07,
    3.3,
    59.17,
    1.23,
    58.23,
    58.0,
    56.6,
    3.6,
    1.6,
    5.63,
    4.4,
    13.8,
    49.27,
    9.2,
    8.63,
    6.7,
    1.1,
    5.43,
    45.3,
    12.57,
    43.67,
    11.8,
    43.2,
    4.17,
    6.63,
    42.5,
    1.87,
    1.23,
    41.3,
    3.9,
    4.57,
    4.4,
    3.7,
    3.4,
    20.83,
    8.6,
    1.3,
    0.37,
    0.27,
    35.5,
    35.5,
    4.07,
    7.93,
    17.23,
    3.43,
    2.0,
    8.8,
    32.63,
    12.17,
    7.2,
    9.0,
    6.0,
    29.9,
    29.2,
    28.7,
    42.17,
    0.13,
    3.63,
    12.27,
    26.13,
    4.73,
    3.93,
    24.77,
    2.03,
    6.6,
    9.43,
    5.0,
    1.87,
    5.6,
    19.9,
    1.2,
    5.23,
    3.5,
    2.8,
    1.47,
    7.63,
    2.23,
    0.87,
    7.2,
    3.23,
    3.57,
    4.57,
    1.77,
    16.83,
    16.6,
    16.13,
    2.7,
    10.3,
    15.17,
    7.0,
    2.53,
    14.5,
    2.3,
    10.2,
    9.97,
    7.63,
]
BMT_STATUS = (
    "2102220201222122022212112110101020121022222210112202220021212220012120"
    "0021101102112010002112202121201020210120222221212200111222022210001211"
    "0120121111012222112222220002101101001"
)
BMT_AML = (
    "0100000000011000010100001001011100010110111111011111100101101011111000"
    "0100011110110101101111111010001011011111111110110001000011101111011101"
    "1110100101011111001101110100011111111"
)


def _table(stop, modes, entry=None, **extra) -> pl.DataFrame:
    """A survival table from stop times and modes (None = censored)."""
    cols = {
        "stop_h": [float(t) for t in stop],
        "observed": [m is not None for m in modes],
        "failure_mode": list(modes),
        **extra,
    }
    if entry is not None:
        cols["entry_h"] = [float(a) for a in entry]
    return pl.DataFrame(cols, schema_overrides={"failure_mode": pl.String})


def _untied(seed: int, n: int = 80) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.exponential(10.0, n), rng.integers(0, 3, n)  # 0 = censored


# --------------------------------------------------------------- the estimator


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_ref_matches_lifelines_aalen_johansen_on_untied_data(seed: int) -> None:
    """lifelines' AalenJohansenFitter (0.30.3) on continuous, untied times (so
    it jitters nothing): its cumulative_density_, variance_ and log(-log)
    band (Collett p. 411 / Marubini & Valsecchi delta method) equal ours to
    1e-10 at every failure time, for both modes."""
    t, e = _untied(seed)
    table = _table(t, [None if k == 0 else f"m{k}" for k in e])
    cif = cumulative_incidence(table, confidence=0.9)
    for code in (1, 2):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # lifelines' own deprecations
            aj = AalenJohansenFitter(alpha=0.1).fit(t, e, event_of_interest=code)
        ours = cif.filter(pl.col("failure_mode") == f"m{code}")
        times = ours["time_h"].to_numpy()
        theirs = aj.cumulative_density_.reindex(times).iloc[:, 0].to_numpy()
        ci = aj.confidence_interval_.reindex(times).to_numpy()
        np.testing.assert_allclose(ours["cumulative_incidence"], theirs, atol=1e-10)
        # lifelines gives NaN where every unit at risk fails (0 * inf in the
        # first sum); relkit takes that term as 0, so its band is finite there
        # (and where F = 0, before the mode's first failure: log 0)
        ok = np.isfinite(ci).all(axis=1)
        f = ours["cumulative_incidence"].to_numpy()
        assert ok[f > 0][:-1].all()
        np.testing.assert_allclose(
            ours["lower"].filter(ok), ci[ok].min(axis=1), atol=1e-10
        )
        np.testing.assert_allclose(
            ours["upper"].filter(ok), ci[ok].max(axis=1), atol=1e-10
        )
        assert ours["lower"].is_finite().all()
        assert ours["upper"].is_finite().all()
        assert ours["n_events"].sum() == int((e == code).sum())


def test_ref_ties_by_hand() -> None:
    """Six units: gpu, net and a censoring all at 2 h; gpu at 4 h; censored at
    5 h; net at 6 h. By hand: n(2) = 6 (the unit censored at 2 h is at risk:
    failures first), S(2) = 4/6; F_gpu(2) = 1/6, F_net(2) = 1/6; n(4) = 3,
    F_gpu(4) = 1/6 + (2/3)(1/3) = 7/18, S(4) = 4/9; n(6) = 1, F_net(6) =
    1/6 + 4/9 = 11/18 (sum 1 = 1 - S(6)). Delta-method variance of F_gpu:
    at 2 h 1·1·5/6³ = 5/216; at 4 h (7/18-1/6)²·2/(6·4) + 5/216 +
    (2/3)²·1·2/3³ - 2·(7/18-1/6)·1·1/6² = 16/3888 + 5/216 + 8/243 - 8/648."""
    table = _table([2, 2, 2, 4, 5, 6], ["gpu", "net", None, "gpu", None, "net"])
    cif = cumulative_incidence(table, confidence=0.95)

    def row(mode: str, t: float) -> dict:
        hit = (pl.col("failure_mode") == mode) & (pl.col("time_h") == t)
        return cif.filter(hit).row(0, named=True)

    assert row("gpu", 2)["cumulative_incidence"] == pytest.approx(1 / 6, abs=1e-15)
    assert row("net", 2)["cumulative_incidence"] == pytest.approx(1 / 6, abs=1e-15)
    assert row("gpu", 4)["cumulative_incidence"] == pytest.approx(7 / 18, abs=1e-15)
    assert row("net", 6)["cumulative_incidence"] == pytest.approx(11 / 18, abs=1e-15)
    assert [row("gpu", t)["n_at_risk"] for t in (2, 4, 6)] == [6, 3, 1]
    assert [row("gpu", t)["n_events"] for t in (2, 4, 6)] == [1, 1, 0]
    z = 1.959963984540054
    for t, f, var in (
        (2, 1 / 6, 5 / 216),
        (4, 7 / 18, 16 / 3888 + 5 / 216 + 8 / 243 - 8 / 648),
    ):
        se = math.sqrt(var) / (f * abs(math.log(f)))
        assert row("gpu", t)["lower"] == pytest.approx(f ** math.exp(z * se), rel=1e-12)
        assert row("gpu", t)["upper"] == pytest.approx(
            f ** math.exp(-z * se), rel=1e-12
        )


def test_ref_a_unit_entering_at_a_failure_time_is_not_at_risk_there() -> None:
    """Units (entry, stop): A (0, 3] censored, B (0, 1] fails 'a', C (1, 2]
    censored. C enters at 1 h, so the risk set at 1 h is {A, B}: F_a(1) = 1/2
    (counting-process risk set a_i < t <= t_i; lifelines' Kaplan-Meier gives
    S(1) = 0.5 on the same data). Counting C would give 1/3."""
    table = _table([3, 1, 2], [None, "a", None], entry=[0, 0, 1])
    row = cumulative_incidence(table).row(0, named=True)
    assert row["cumulative_incidence"] == pytest.approx(0.5, abs=1e-15)
    assert row["n_at_risk"] == 2
    km = KaplanMeierFitter().fit([3, 1, 2], [0, 1, 0], entry=[0, 0, 1])
    assert float(km.survival_function_.loc[1.0].iloc[0]) == pytest.approx(0.5)


@settings(max_examples=60, deadline=None)
@given(
    data=st.lists(
        st.tuples(
            st.integers(0, 6),  # entry
            st.integers(1, 15),  # time in study after entry
            st.sampled_from([None, "a", "b", "c"]),
        ),
        min_size=2,
        max_size=40,
    )
)
def test_prop_sum_of_modes_is_one_minus_km(data: list) -> None:
    """For any data with ties and delayed entry: Σ_k F_k(t) = 1 - S(t) at every
    failure time, S from lifelines' KaplanMeierFitter with the same entries;
    every band lies in [0, 1] and contains its estimate."""
    entry = [float(a) for a, _, _ in data]
    stop = [a + d for a, d, _ in data]
    modes = [m for _, _, m in data]
    # one unit spans every entry, so the risk set never empties
    entry[0], stop[0] = 0.0, max(stop) + 1
    table = _table(stop, modes, entry=entry)
    cif = cumulative_incidence(table)
    if cif.height == 0:
        assert not any(m is not None for m in modes[1:]) or modes[0] is None
        return
    total = cif.group_by("time_h").agg(pl.col("cumulative_incidence").sum())
    km = KaplanMeierFitter().fit(stop, [m is not None for m in modes], entry=entry)
    for t, f in total.iter_rows():
        s = float(km.survival_function_.loc[:t].iloc[-1, 0])
        assert f == pytest.approx(1.0 - s, abs=1e-12)
    f = cif["cumulative_incidence"].to_numpy()
    assert np.all((cif["lower"].to_numpy() >= 0) & (cif["upper"].to_numpy() <= 1))
    assert np.all((cif["lower"].to_numpy() <= f) & (f <= cif["upper"].to_numpy()))


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_ref_one_mode_band_is_the_kaplan_meier_band(seed: int) -> None:
    """With one mode, F = 1 - S and, on the cloglog scale log(-log(1 - F)),
    the band is 1 minus Kaplan-Meier's exponential Greenwood band (lifelines,
    via relkit.survival.kaplan_meier), with delayed entry and integer-time
    ties; to 1e-10."""
    rng = np.random.default_rng(seed)
    n = 120
    entry = rng.integers(0, 4, n).astype(float)
    stop = entry + rng.integers(1, 30, n)
    entry[0], stop[0] = 0.0, stop.max() + 1
    observed = rng.random(n) < 0.7
    table = _table(stop, ["x" if o else None for o in observed], entry=entry)
    cif = cumulative_incidence(table, transform="cloglog", confidence=0.9)
    km = kaplan_meier(table, confidence=0.9)
    both = cif.join(km, on="time_h", how="inner")
    assert both.height == cif.height
    np.testing.assert_allclose(
        both["cumulative_incidence"], 1 - both["survival"], atol=1e-12
    )
    np.testing.assert_allclose(both["lower"], 1 - both["survival_upper"], atol=1e-10)
    np.testing.assert_allclose(both["upper"], 1 - both["survival_lower"], atol=1e-10)


def test_refuses_a_bad_confidence_and_transform() -> None:
    table = _table([1, 2], ["a", None])
    with pytest.raises(SchemaError, match="confidence must be in"):
        cumulative_incidence(table, confidence=95)
    with pytest.raises(SchemaError, match="'loglog' or 'cloglog'"):
        cumulative_incidence(table, transform="arcsine")  # type: ignore[arg-type]


# ----------------------------------------------------------------- Gray's test


def _bmtcrr() -> pl.DataFrame:
    status = [int(c) for c in BMT_STATUS]
    return _table(
        BMT_FTIME,
        [None if s == 0 else ("relapse", "trm")[s - 1] for s in status],
        D=["AML" if c == "1" else "ALL" for c in BMT_AML],
    )


def test_ref_gray_bmtcrr() -> None:
    """Scrucca, Santucci & Aversa's bmtcrr data (177 transplant patients, Bone
    Marrow Transplant. 45:1388-1395, 2010, doi:10.1038/bmt.2009.359; columns
    ftime, Status, D as shipped in the casebase R package, MIT). R's
    cmprsk::cuminc(ftime, Status, D) prints Gray's test for cause 1 (relapse)
    stat 2.8623325, p 0.09067592, and for cause 2 (transplant-related
    mortality) stat 0.4481279, p 0.50322531, df 1."""
    table = _bmtcrr()
    assert table.height == 177
    out = gray_test(table, group="D").sort("failure_mode")
    assert out["failure_mode"].to_list() == ["relapse", "trm"]
    assert out["statistic"].to_list() == pytest.approx([2.8623325, 0.4481279], abs=5e-7)
    assert out["p_value"].to_list() == pytest.approx([0.09067592, 0.50322531], abs=5e-8)
    assert out["df"].to_list() == [1, 1]
    assert out["n_events"].to_list() == [56, 75]


def test_gray_does_not_depend_on_the_order_of_groups() -> None:
    """The statistic is a quadratic form in G - 1 of the G scores; which group
    is left out must not matter (Gray 1988, §2). bmtcrr by Phase (4 groups,
    df 3) with the labels renamed to reverse their order."""
    table = _bmtcrr().with_columns(
        phase=pl.Series([("CR1", "CR2", "CR3", "Relapse")[i % 4] for i in range(177)])
    )
    a = gray_test(table, group="phase")
    b = gray_test(
        table.with_columns(
            pl.col("phase").replace(
                {"CR1": "z", "CR2": "y", "CR3": "x", "Relapse": "w"}
            )
        ),
        group="phase",
    )
    assert a["df"].to_list() == [3, 3]
    np.testing.assert_allclose(a["statistic"], b["statistic"], rtol=1e-10)


@pytest.mark.parametrize("seed", [7, 8])
def test_gray_without_competing_events_is_the_log_rank_test(seed: int) -> None:
    """With one mode only, R_g = n_g and Gray's score is the log-rank
    observed-minus-expected count; his variance estimator is not the
    hypergeometric one, so the statistics agree asymptotically, not exactly:
    on 20,000 units in 3 groups under H0 (same exponential, exponential
    censoring) the statistic is within 2 % of lifelines'
    multivariate_logrank_test and the p-values within 0.01."""
    rng = np.random.default_rng(seed)
    n = 20_000
    group = rng.integers(0, 3, n)
    t, c = rng.exponential(10.0, n), rng.exponential(20.0, n)
    observed = t <= c
    stop = np.minimum(t, c)
    table = _table(
        stop, ["x" if o else None for o in observed], grp=[str(g) for g in group]
    )
    ours = gray_test(table, group="grp").row(0, named=True)
    theirs = multivariate_logrank_test(stop, group, observed)
    assert ours["statistic"] == pytest.approx(theirs.test_statistic, rel=0.02)
    assert ours["p_value"] == pytest.approx(theirs.p_value, abs=0.01)
    assert ours["df"] == 2


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), shift=st.integers(1, 50))
def test_prop_late_entry_of_everyone_changes_nothing(seed: int, shift: int) -> None:
    """Every unit entering at the same age c, with stops c + t: the risk set
    at c + t is the risk set at t of the untruncated data (a_i < t), so the
    curves shift by c unchanged and Gray's statistic is the same; it is a
    chi-square value (>= 0) with a p-value in [0, 1]."""
    rng = np.random.default_rng(seed)
    n = 60
    t = rng.integers(1, 30, n).astype(float)  # integer times: ties
    modes = rng.choice(["a", "b", "x"], n).tolist()
    modes = [None if m == "x" else m for m in modes]
    group = rng.choice(["g1", "g2", "g3"], n).tolist()
    if len(set(group)) < 3 or not {"a", "b"} <= set(modes):
        return
    plain = _table(t, modes, grp=group)
    late = _table(t + shift, modes, entry=[float(shift)] * n, grp=group)
    a, b = cumulative_incidence(plain), cumulative_incidence(late)
    np.testing.assert_allclose(a["time_h"] + shift, b["time_h"], atol=1e-12)
    for col in ("cumulative_incidence", "lower", "upper", "n_at_risk"):
        np.testing.assert_allclose(a[col], b[col], atol=1e-12)
    ga, gb = gray_test(plain, group="grp"), gray_test(late, group="grp")
    np.testing.assert_allclose(ga["statistic"], gb["statistic"], rtol=1e-9)
    assert (ga["statistic"] >= 0).all()
    assert ga["p_value"].is_between(0, 1).all()


def test_gray_refuses_one_group_and_unknown_modes() -> None:
    table = _bmtcrr()
    with pytest.raises(InsufficientDataError, match="compares groups"):
        gray_test(table.with_columns(D=pl.lit("ALL")), group="D")
    with pytest.raises(SchemaError, match="never observed"):
        gray_test(table, group="D", failure_modes=["gvhd"])
    with pytest.raises(SchemaError, match="rho must be"):
        gray_test(table, group="D", rho=-1.0)


# ---------------------------------------------------------- store composition


@pytest.fixture(scope="module")
def lanl_store_tables(lanl_db) -> dict[str, pl.DataFrame]:
    from relkit.answers import store_tables
    from relkit.store import Store

    with Store(lanl_db, read_only=True) as store:
        return store_tables(store)


def test_ref_lanl_cumulative_incidence_by_root_cause(lanl_store_tables) -> None:
    """The bundled LANL failure data (Schroeder & Gibson, DSN 2006,
    doi:10.1109/DSN.2006.5), each node's first failure on its in-service
    clock, competing root causes. Measured (relkit, this data): 5,003 nodes
    with a known install date (4 of 5,007 left out, said), 3,573 first
    failures; at the last failure age, 38,533.8 h, hardware's cumulative
    incidence is 0.6268 [0.6090, 0.6440] (95 %), software's 0.1237 [0.1109,
    0.1372], undetermined 0.0689. Checked here beside what must hold: the
    modes sum to 1 - Kaplan-Meier of the same first failures, the events
    to the table's failures."""
    from relkit import answers

    result = answers.competing_risks_by(**lanl_store_tables, mode_column="root_cause")
    assert result.table.height == 5003
    assert int(result.table["observed"].sum()) == 3573
    assert any(
        "4 of 5007 node(s) have no known install date" in n for n in result.notes
    )
    cif = result.cumulative_incidence
    last = cif.group_by("failure_mode").agg(pl.all().sort_by("time_h").last())
    got = {r["failure_mode"]: r for r in last.iter_rows(named=True)}
    assert set(got) == {
        "facilities",
        "hardware",
        "human_error",
        "network",
        "software",
        "undetermined",
        "unrecorded",
    }
    hw = got["hardware"]
    assert hw["time_h"] == pytest.approx(38533.8, abs=0.05)
    assert hw["cumulative_incidence"] == pytest.approx(0.6268, abs=5e-5)
    assert (hw["lower"], hw["upper"]) == pytest.approx((0.6090, 0.6440), abs=5e-5)
    assert got["software"]["cumulative_incidence"] == pytest.approx(0.1237, abs=5e-5)
    assert cif["n_events"].sum() == 3573
    km = kaplan_meier(result.table)
    total = sum(r["cumulative_incidence"] for r in got.values())
    assert total == pytest.approx(1 - km["survival"][-1], abs=1e-12)


def test_lanl_gray_by_system_and_folded_modes(lanl_store_tables) -> None:
    """LANL by system with min_events=20: facilities (14 first failures) and
    unrecorded (5) are folded into 'other' and the note names them; Gray's
    test for hardware between the 19 systems with dated nodes has df 18 and
    p < 1e-6 (systems differ widely, Schroeder & Gibson 2006 Fig. 1); modes
    whose covariance is singular (a system with no node at risk at their
    failure ages) have a null statistic with a status and a note, never a
    number."""
    from relkit import answers

    result = answers.competing_risks_by(
        **lanl_store_tables, by=["system"], mode_column="root_cause", min_events=20
    )
    assert any(
        "folded into 'other'" in n and "facilities" in n and "unrecorded" in n
        for n in result.notes
    )
    gray = {r["failure_mode"]: r for r in result.gray.iter_rows(named=True)}
    assert "facilities" not in gray
    assert gray["hardware"]["df"] == 18
    assert gray["hardware"]["p_value"] < 1e-6
    for row in gray.values():
        assert (row["statistic"] is None) == (row["status"] != "ok")
    with pytest.warns(RelkitWarning) as caught:
        out = answers.gray_test_by(
            **lanl_store_tables, by=["system"], mode_column="root_cause", min_events=20
        )
    said = [str(w.message) for w in caught]
    assert said == list(result.notes)
    assert out.height == len(gray)


def test_composition_refuses_what_it_cannot_answer(lanl_store_tables) -> None:
    from relkit import answers

    with pytest.raises(SchemaError, match="not a unit attribute"):
        answers.cumulative_incidence_by(**lanl_store_tables, by=["root_cause"])
    with pytest.raises(SchemaError, match="no first failure of mode"):
        answers.cumulative_incidence_by(
            **lanl_store_tables, mode_column="root_cause", modes=["gpu"]
        )
    with pytest.raises(SchemaError, match="not supported"):
        answers.cumulative_incidence_by(**lanl_store_tables, endpoint="tbf")
    with pytest.raises(SchemaError, match="give by="):
        answers.gray_test_by(**lanl_store_tables, by=[])


@pytest.mark.slow
def test_recover_simulated_run_by_failure_mode() -> None:
    """The bundled simulated run (datasets/synthetic/llama3-54d-264n-seed1,
    ingested as its ground_truth.json says): 264 nodes over 54 days, 40 first
    failures in 9 logged modes (measured). Every node is watched from 0 h to
    the end, so the modes sum to 40/264 at the last failure. For the two
    commonest Xid modes the true CIF at that age, (λ_k/Λ)(1 - exp(-ΛT)) with
    λ_k = 8 GPUs x the mode's rate per GPU-hour and Λ the ground truth's
    r_f per node-day / 24, lies inside the 95 % band."""
    import json as _json

    from relkit import answers, datasets
    from relkit.ingest import read_file, read_path
    from relkit.store import Store

    raw = datasets.path("synthetic")
    truth = _json.loads((raw / "ground_truth.json").read_text(encoding="utf-8"))
    with Store(":memory:") as store:
        read_file(store, raw / "assets.csv", kind="assets")
        read_path(
            store,
            raw / "kernel",
            kind="kernel",
            tz="UTC",
            reference_date="2024-04-26",
            host_from_filename=True,
        )
        tables = answers.store_tables(store)
    result = answers.competing_risks_by(**tables)
    assert result.table.height == 264
    assert int(result.table["observed"].sum()) == 40
    cif = result.cumulative_incidence
    last = cif.group_by("failure_mode").agg(pl.all().sort_by("time_h").last())
    assert last.height == 9
    assert last["cumulative_incidence"].sum() == pytest.approx(40 / 264, abs=1e-12)
    rates = {p["failure_mode"]: p for p in truth["config"]["processes"]}
    big = 8 * truth["failure_rate_per_node_day"]["r_f"] / 24 / 8  # per node-hour
    for mode in ("gpu/fallen_off_bus", "gpu/hbm_uncorrectable"):
        row = last.filter(pl.col("failure_mode") == mode).row(0, named=True)
        lam = 8 * rates[mode]["rate_per_unit_h"]
        t = row["time_h"]
        true = lam / big * (1 - math.exp(-big * t))
        assert row["lower"] <= true <= row["upper"]


# ---------------------------------------------------------------------- chart


def _chart_frame() -> pl.DataFrame:
    return cumulative_incidence(_bmtcrr(), by=["D"])


def test_chart_spec_steps_bands_and_units() -> None:
    """Spec of the chart on the bmtcrr curves: a step-after band (lower ..
    upper) under a step-after line, colour nominal by mode, x in hours, y in
    [0, 1] as percent, a facet per group; every curve starts at (0, 0)."""
    import json as _json

    from relkit import charts

    chart = charts.cumulative_incidence_chart(_chart_frame(), group="D", title="bmt")
    spec = _json.loads(_json.dumps(chart.to_dict()))
    band, line = spec["spec"]["layer"]
    assert band["mark"] == {"type": "area", "interpolate": "step-after", "opacity": 0.2}
    assert line["mark"]["interpolate"] == "step-after"
    assert band["encoding"]["y"]["field"] == "lower"
    assert band["encoding"]["y2"]["field"] == "upper"
    for layer in (band, line):
        enc = layer["encoding"]
        assert enc["x"]["title"].endswith("(h)")
        assert enc["y"]["axis"]["format"] == "%"
        assert enc["y"]["scale"]["domain"] == [0, 1]
        assert enc["color"] == {
            "field": "failure_mode",
            "title": "failure mode",
            "type": "nominal",
        }
    assert spec["facet"]["field"] == "D"
    rows = next(iter(spec["datasets"].values()))
    origins = [r for r in rows if r["time_h"] == 0.0]
    assert len(origins) == 4  # 2 modes x 2 groups
    assert all(r["cumulative_incidence"] == 0.0 for r in origins)


def test_chart_renders_offline_and_stays_under_the_row_cap() -> None:
    """vl-convert draws it to SVG and PNG with no network; a LANL-sized frame
    (7 modes x 3,500 times) is thinned to max_points per curve."""
    import vl_convert as vlc

    from relkit import charts

    chart = charts.cumulative_incidence_chart(_chart_frame(), group="D")
    assert vlc.vegalite_to_svg(chart.to_json()).startswith("<svg")
    assert vlc.vegalite_to_png(chart.to_json())[:4] == b"\x89PNG"
    rng = np.random.default_rng(9)
    n = 25_000
    table = _table(
        rng.exponential(10.0, n),
        rng.choice(["a", "b", "c", "d", "e", "f", "g"], n).tolist(),
    )
    big = charts.cumulative_incidence_chart(cumulative_incidence(table), max_points=300)
    rows = next(iter(big.to_dict()["datasets"].values()))
    assert len(rows) <= 7 * 301
    with pytest.raises(SchemaError, match="group='D'"):
        charts.cumulative_incidence_chart(_chart_frame())
