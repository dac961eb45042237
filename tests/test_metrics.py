"""Tests of relkit.metrics: exact MTBF bounds, Garwood rates, mtbf() grouping."""

import math

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.metrics import (
    DEFAULT_CONFIDENCE,
    MTBFBounds,
    failure_rate_bounds,
    mtbf,
    mtbf_bounds,
    mttf_at_scale_h,
)

MTBF_OUT = [
    "n_failures",
    "exposure_h",
    "mtbf_h",
    "mtbf_lower_h",
    "mtbf_upper_h",
    "mtbf_lower_one_sided_h",
    "mttr_h",
    "failures_per_1000_node_days",
    "availability_frac",
    "confidence",
]

# ---------------------------------------------------------------- reference values


def test_ref_mtbf_bounds_chi_square() -> None:
    """r = 7 failures in T = 14,980 h, c = 0.90 -> [1139.3, 4559.7] h.

    Source: shared/reference/README.md (time-terminated chi-square bounds,
    Epstein & Sobel 1953, doi:10.1080/01621459.1953.10483491; MIL-HDBK-781A).
    """
    b = mtbf_bounds(7, exposure_h=14980.0, confidence=0.9)
    assert b.mtbf_h == pytest.approx(2140.0, rel=1e-15)
    assert round(b.lower_h, 1) == 1139.3
    assert round(b.upper_h, 1) == 4559.7
    # one-sided 90 % lower = two-sided 80 % lower
    assert b.lower_one_sided_h == pytest.approx(
        mtbf_bounds(7, exposure_h=14980.0, confidence=0.8).lower_h, rel=1e-14
    )
    assert b.to_dict()["mtbf_h"] == b.mtbf_h


def test_ref_llama3_garwood_rate() -> None:
    """Llama 3: 419 interruptions in 2,048 nodes x 54 days: 3.789e-3
    [3.435e-3, 4.169e-3] per node-day, exact Poisson 95 % (Garwood 1936,
    doi:10.1093/biomet/28.3-4.437; shared/reference/README.md).
    """
    rate, lo, hi, _ = failure_rate_bounds(419, exposure=2048 * 54, confidence=0.95)
    assert f"{rate:.3e}" == "3.789e-03"
    assert f"{lo:.3e}" == "3.435e-03"
    assert f"{hi:.3e}" == "4.169e-03"


def test_ref_garwood_zero_and_textbook() -> None:
    """Garwood 95 % limits for n = 0 are [0, 3.689] and for n = 1 [0.0253, 5.572]
    (the classic exact Poisson table, e.g. Garwood 1936 Table 2)."""
    assert failure_rate_bounds(0, exposure=1.0) == (
        0.0,
        0.0,
        pytest.approx(3.6889, abs=1e-4),
        0.95,
    )
    _, lo, hi, _ = failure_rate_bounds(1, exposure=1.0)
    assert lo == pytest.approx(0.0253, abs=1e-4)
    assert hi == pytest.approx(5.5716, abs=1e-4)


def test_ref_mttf_at_scale() -> None:
    """Kokolis et al. 2025 (arXiv:2410.21680): at r_f = 6.50e-3 per node-day,
    16,384 GPUs -> 1.803 h (paper: 1.8 h); 131,072 GPUs -> 0.2254 h (0.23 h)."""
    assert (
        round(mttf_at_scale_h(failures_per_node_day=6.5e-3, n_nodes=16384 // 8), 3)
        == 1.803
    )
    assert (
        round(mttf_at_scale_h(failures_per_node_day=6.5e-3, n_nodes=131072 // 8), 4)
        == 0.2254
    )
    # the observed 7.9 h at 1,024 GPUs is not on the curve: it gives 28.85 h
    assert (
        round(mttf_at_scale_h(failures_per_node_day=6.5e-3, n_nodes=1024 // 8), 2)
        == 28.85
    )


#: C15 (shared/cases/C15-degenerate-survival-fits.csv): per-unit hours and failed.
C15_UNITS = {
    "xid79": ([9120, 10480, 8875, 6040, 6310], [0, 1, 0, 0, 0]),
    "nvlink_fatal": ([100, 200, 300], [0, 0, 0]),
    "ib_link": ([50], [1]),
    "xid48": ([120, 340, 410, 95, 600, 720, 800, 150], [1, 1, 0, 1, 0, 0, 1, 1]),
}


def test_ref_c15_exponential_fallback_bounds() -> None:
    """C15: exponential fallback with 90 % one-sided chi-square lower bounds.

    xid79 T = 40,825 h, one failure -> point 40,825 h, lower 10,495.6 h; ib_link
    50 h -> 12.85 h; nvlink_fatal 0 failures in 600 h -> lower 260.58 h only.
    """
    xid79 = mtbf_bounds(1, exposure_h=40825.0, confidence=0.9)
    assert xid79.mtbf_h == 40825.0
    assert round(xid79.lower_one_sided_h, 1) == 10495.6
    ib = mtbf_bounds(1, exposure_h=50.0, confidence=0.9)
    assert (ib.mtbf_h, round(ib.lower_one_sided_h, 2)) == (50.0, 12.85)
    nv = mtbf_bounds(0, exposure_h=600.0, confidence=0.9)
    assert nv == MTBFBounds(None, None, None, pytest.approx(260.58, abs=5e-3), 0.9)


def test_ref_c15_through_mtbf_frame() -> None:
    """The same C15 numbers from mtbf(): the all-censored mode is a row with no
    point estimate, only the one-sided lower bound."""
    exposure = pl.DataFrame(
        {
            "mode": list(C15_UNITS),
            "exposure_h": [float(sum(t)) for t, _ in C15_UNITS.values()],
        }
    )
    failures = pl.DataFrame(
        {"mode": [m for m, (_, e) in C15_UNITS.items() for x in e if x]}
    )
    out = mtbf(failures, exposure, by="mode", confidence=0.9)
    assert out.columns == ["mode", *MTBF_OUT]
    assert out["mode"].to_list() == ["ib_link", "nvlink_fatal", "xid48", "xid79"]
    rows = {r["mode"]: r for r in out.to_dicts()}
    assert rows["xid79"]["exposure_h"] == 40825.0
    assert rows["xid79"]["mtbf_h"] == 40825.0
    assert round(rows["xid79"]["mtbf_lower_one_sided_h"], 1) == 10495.6
    assert round(rows["ib_link"]["mtbf_lower_one_sided_h"], 2) == 12.85
    nv = rows["nvlink_fatal"]
    assert nv["n_failures"] == 0
    assert nv["mtbf_h"] is None
    assert nv["mtbf_lower_h"] is None
    assert nv["mtbf_upper_h"] is None
    assert round(nv["mtbf_lower_one_sided_h"], 2) == 260.58
    assert nv["failures_per_1000_node_days"] == 0.0
    assert rows["xid48"]["mtbf_h"] == pytest.approx(3235 / 5)


# ---------------------------------------------------------------- mtbf() grouping


@pytest.fixture
def fleet() -> tuple[pl.DataFrame, pl.DataFrame]:
    """Two systems of 1,000 and 2,000 node-hours; failures by failure_mode."""
    exposure = pl.DataFrame(
        {
            "system": ["s1", "s2"],
            "n_units": [2, 4],
            "exposure_h": [1000.0, 2000.0],
            "exposure_gpu_h": [8000.0, 16000.0],
        }
    )
    failures = pl.DataFrame(
        {
            "system": ["s1", "s1", "s1", "s2", "s2"],
            "failure_mode": [
                "hardware/cpu",
                "hardware/cpu",
                "software/other_software",
                "hardware/cpu",
                "hardware/cpu",
            ],
            "repair_h": [1.0, 3.0, 0.5, None, 4.0],
        }
    )
    return failures, exposure


def test_mtbf_failure_attribute_crossed_with_system(fleet) -> None:
    """failure_mode (failure attribute) x system (unit attribute): the observed
    modes are crossed with every system, so s2/software is a zero-failure row."""
    failures, exposure = fleet
    out = mtbf(failures, exposure, by=["system", "failure_mode"], confidence=0.9)
    assert out.columns == ["system", "failure_mode", *MTBF_OUT]
    assert out["confidence"].to_list() == [0.9] * 4
    assert out.select("system", "failure_mode", "n_failures").rows() == [
        ("s1", "hardware/cpu", 2),
        ("s1", "software/other_software", 1),
        ("s2", "hardware/cpu", 2),
        ("s2", "software/other_software", 0),
    ]
    # modes share their system's exposure
    assert out["exposure_h"].to_list() == [1000.0, 1000.0, 2000.0, 2000.0]
    assert out["mtbf_h"].to_list() == [500.0, 1000.0, 1000.0, None]
    # MTTR: mean of non-null repairs; s2/cpu has one null -> 4.0
    assert out["mttr_h"].to_list() == [2.0, 0.5, 4.0, None]
    # availability = MTBF / (MTBF + MTTR)
    assert out["availability_frac"][0] == pytest.approx(500 / 502, rel=1e-15)
    assert out["availability_frac"][3] is None
    # 1000 * 24 * n / T
    assert out["failures_per_1000_node_days"].to_list() == [48.0, 24.0, 24.0, 0.0]
    zero = out.row(3, named=True)
    assert zero["mtbf_lower_h"] is None
    assert zero["mtbf_upper_h"] is None
    assert zero["mtbf_lower_one_sided_h"] == pytest.approx(
        2000 / -math.log(0.1), rel=1e-12
    )
    assert out.schema["n_failures"] == pl.Int64


def test_mtbf_rows_agree_with_mtbf_bounds(fleet) -> None:
    failures, exposure = fleet
    out = mtbf(failures, exposure, by="system", confidence=0.8)
    for row in out.to_dicts():
        b = mtbf_bounds(row["n_failures"], exposure_h=row["exposure_h"], confidence=0.8)
        assert row["mtbf_h"] == pytest.approx(b.mtbf_h, rel=1e-14)
        assert row["mtbf_lower_h"] == pytest.approx(b.lower_h, rel=1e-14)
        assert row["mtbf_upper_h"] == pytest.approx(b.upper_h, rel=1e-14)
        assert row["mtbf_lower_one_sided_h"] == pytest.approx(
            b.lower_one_sided_h, rel=1e-14
        )


def test_mtbf_by_failure_attribute_only_sums_exposure(fleet) -> None:
    """by=failure_mode with an exposure built by system: exposures are summed."""
    failures, exposure = fleet
    out = mtbf(failures, exposure, by="failure_mode")
    assert out.select("failure_mode", "n_failures", "exposure_h", "mtbf_h").rows() == [
        ("hardware/cpu", 4, 3000.0, 750.0),
        ("software/other_software", 1, 3000.0, 3000.0),
    ]
    total = mtbf(failures, exposure)
    assert total.columns == MTBF_OUT
    assert total.row(0)[:3] == (5, 3000.0, 600.0)
    assert total["mttr_h"][0] == pytest.approx((1 + 3 + 0.5 + 4) / 4)


def test_mtbf_without_repair_column_and_with_null_attribute() -> None:
    exposure = pl.DataFrame({"exposure_h": [100.0]})
    failures = pl.DataFrame({"failure_mode": ["a", None, "a"]})
    out = mtbf(failures, exposure, by="failure_mode")
    assert out["failure_mode"].to_list() == ["a", None]  # nulls last
    assert out["n_failures"].to_list() == [2, 1]
    assert out["mttr_h"].to_list() == [None, None]
    assert out["availability_frac"].to_list() == [None, None]


def test_mtbf_zero_exposure_group_has_null_metrics() -> None:
    exposure = pl.DataFrame({"system": ["a", "b"], "exposure_h": [10.0, 0.0]})
    out = mtbf(pl.DataFrame({"system": ["a"]}), exposure, by="system")
    row = out.row(1, named=True)
    assert row["n_failures"] == 0
    assert row["mtbf_lower_one_sided_h"] is None
    assert row["failures_per_1000_node_days"] is None


def test_mtbf_errors(fleet) -> None:
    failures, exposure = fleet
    with pytest.raises(SchemaError, match=r"failures lacks by column\(s\) \['rack'\]"):
        mtbf(failures, exposure, by="rack")
    with pytest.raises(SchemaError, match="exposure_h"):
        mtbf(failures, exposure.drop("exposure_h"), by="system")
    orphan = pl.concat([failures, pl.DataFrame({"system": ["s9"]})], how="diagonal")
    with pytest.raises(SchemaError, match=r"1 failure\(s\) fall in group\(s\) with no"):
        mtbf(orphan, exposure, by="system")
    with pytest.raises(SchemaError, match="dtypes differ"):
        mtbf(
            failures.with_columns(pl.col("system").cast(pl.Categorical)),
            exposure,
            by="system",
        )
    with pytest.raises(InsufficientDataError, match="no rows"):
        mtbf(failures, exposure.clear(), by="system")
    with pytest.raises(InvalidParameterError, match="confidence"):
        mtbf(failures, exposure, confidence=1.0)


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize("bad", [-1, 1.5, True, None, float("nan"), "3"], ids=repr)
def test_invalid_failure_count(bad: object) -> None:
    with pytest.raises(
        InvalidParameterError, match="n_failures must be a whole number"
    ):
        mtbf_bounds(bad, exposure_h=100.0)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="n_failures"):
        failure_rate_bounds(bad, exposure=100.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0.0, -5.0, float("nan"), float("inf"), None], ids=repr)
def test_invalid_exposure(bad: object) -> None:
    with pytest.raises(InvalidParameterError, match=r"exposure_h must be a finite"):
        mtbf_bounds(3, exposure_h=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match=r"exposure must be a finite"):
        failure_rate_bounds(3, exposure=bad)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.1, 90, float("nan")], ids=repr)
def test_invalid_confidence(bad: float) -> None:
    with pytest.raises(InvalidParameterError, match=r"strictly between 0 and 1"):
        mtbf_bounds(3, exposure_h=100.0, confidence=bad)


def test_mttf_at_scale_errors() -> None:
    with pytest.raises(InvalidParameterError, match="failures_per_node_day"):
        mttf_at_scale_h(failures_per_node_day=0.0, n_nodes=10)
    with pytest.raises(
        InvalidParameterError, match="n_nodes must be a whole number >= 1"
    ):
        mttf_at_scale_h(failures_per_node_day=1e-3, n_nodes=0)


def test_numpy_integer_count_accepted() -> None:
    import numpy as np

    assert mtbf_bounds(np.int64(7), exposure_h=14980.0).mtbf_h == 2140.0
    assert mtbf_bounds(7.0, exposure_h=14980.0).mtbf_h == 2140.0


# ---------------------------------------------------------------- properties


@settings(deadline=None)  # first call imports scipy
@given(
    r=st.integers(0, 10_000),
    t=st.floats(1e-3, 1e9),
    c=st.floats(0.01, 0.999),
)
def test_prop_lower_point_upper_ordered(r: int, t: float, c: float) -> None:
    b = mtbf_bounds(r, exposure_h=t, confidence=c)
    assert b.lower_one_sided_h > 0
    if r == 0:
        assert (b.mtbf_h, b.lower_h, b.upper_h) == (None, None, None)
    else:
        assert b.lower_h <= b.mtbf_h <= b.upper_h
        assert b.lower_h <= b.lower_one_sided_h  # two-sided tail is (1-c)/2
    rate, lo, hi, _ = failure_rate_bounds(r, exposure=t, confidence=c)
    assert lo <= rate <= hi
    if r > 0:  # Garwood and chi-square MTBF bounds are the same interval, inverted
        assert hi == pytest.approx(1 / b.lower_h, rel=1e-10)
        assert lo == pytest.approx(1 / b.upper_h, rel=1e-10)


@settings(deadline=None)  # first call imports scipy
@given(
    r=st.integers(0, 1000),
    t=st.floats(1.0, 1e7),
    k=st.sampled_from([1 / 60, 24.0, 3600.0, 1e-3]),
)
def test_prop_mtbf_scales_with_exposure_unit(r: int, t: float, k: float) -> None:
    """Changing the time unit of T by k scales every MTBF figure by k."""
    a = mtbf_bounds(r, exposure_h=t)
    b = mtbf_bounds(r, exposure_h=t * k)
    assert a.confidence == b.confidence == DEFAULT_CONFIDENCE  # a level, no unit
    hours = [v for k_, v in a.to_dict().items() if k_ != "confidence"]
    scaled = [v for k_, v in b.to_dict().items() if k_ != "confidence"]
    for x, y in zip(hours, scaled, strict=True):
        if x is None:
            assert y is None
        else:
            assert y == pytest.approx(x * k, rel=1e-12)


@settings(deadline=None)  # first call imports scipy
@given(
    counts=st.lists(st.integers(0, 50), min_size=1, max_size=6),
    hours=st.floats(1.0, 1e6),
)
def test_prop_mtbf_frame_point_is_t_over_r(counts: list[int], hours: float) -> None:
    systems = [f"s{i}" for i in range(len(counts))]
    exposure = pl.DataFrame({"system": systems, "exposure_h": [hours] * len(counts)})
    failures = pl.DataFrame(
        {"system": [s for s, n in zip(systems, counts, strict=True) for _ in range(n)]},
        schema={"system": pl.String},
    )
    out = mtbf(failures, exposure, by="system")
    assert out.height == len(counts)
    assert out["n_failures"].to_list() == counts
    for n, m in zip(counts, out["mtbf_h"], strict=True):
        assert (m is None) if n == 0 else m == pytest.approx(hours / n, rel=1e-14)
