"""Tests of relkit.exposure: time at risk with censoring, truncation and windows."""

from datetime import UTC, datetime, timedelta

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.exposure import build_exposure, observation_end
from relkit.metrics import mtbf
from relkit.schema import POLARS_SCHEMAS

T0 = datetime(2024, 1, 1, tzinfo=UTC)


def day(d: float) -> datetime:
    """T0 + d days."""
    return T0 + timedelta(days=d)


def assets_frame(rows: list[dict]) -> pl.DataFrame:
    """An assets frame with the store's exact schema (Int32 gpus, UTC us datetimes)."""
    base = dict.fromkeys(POLARS_SCHEMAS["assets"].names())
    return pl.DataFrame(
        [{**base, "source_id": 1, **r} for r in rows], schema=POLARS_SCHEMAS["assets"]
    )


@pytest.fixture
def assets() -> pl.DataFrame:
    """Five nodes on two systems; window [day 0, day 10] is 240 h.

    n1 s1: in service day -5, still in service        -> censored at end: 240 h
    n2 s1: in service day 2, retired day 7             -> 120 h
    n3 s1: in service unknown, tracked from day 4      -> 144 h (left truncation)
    n4 s2: in service day -30, tracked from day 1,
           retired day 12 (after the window)           -> 216 h
    n5 s2: retired day -1 (before the window)          -> 0 h, not counted
    """
    return assets_frame(
        [
            {"host": "n1", "system": "s1", "gpus": 8, "in_service_ts": day(-5)},
            {
                "host": "n2",
                "system": "s1",
                "gpus": 8,
                "in_service_ts": day(2),
                "out_of_service_ts": day(7),
            },
            {"host": "n3", "system": "s1", "gpus": 4, "observed_from_ts": day(4)},
            {
                "host": "n4",
                "system": "s2",
                "gpus": 8,
                "in_service_ts": day(-30),
                "observed_from_ts": day(1),
                "out_of_service_ts": day(12),
            },
            {
                "host": "n5",
                "system": "s2",
                "gpus": 8,
                "in_service_ts": day(-20),
                "out_of_service_ts": day(-1),
            },
        ]
    )


def test_exposure_by_system_hand_computed(assets: pl.DataFrame) -> None:
    out = build_exposure(assets, by="system", window_start=day(0), window_end=day(10))
    assert out.columns == ["system", "n_units", "exposure_h", "exposure_gpu_h"]
    assert out.schema == pl.Schema(
        {
            "system": pl.String,
            "n_units": pl.Int64,
            "exposure_h": pl.Float64,
            "exposure_gpu_h": pl.Float64,
        }
    )
    assert out.rows() == [
        ("s1", 3, 240.0 + 120.0 + 144.0, 240.0 * 8 + 120.0 * 8 + 144.0 * 4),
        ("s2", 1, 216.0, 216.0 * 8),
    ]


def test_exposure_total_and_no_duration_dtype(assets: pl.DataFrame) -> None:
    out = build_exposure(assets, window_start=day(0), window_end=day(10))
    assert out.rows() == [(4, 720.0, 5184.0)]
    assert not any(isinstance(t, pl.Duration) for t in out.schema.dtypes())


def test_exposure_without_window_start_counts_from_entry(assets: pl.DataFrame) -> None:
    """No window_start: n1 counts from day -5 (360 h), n4 from tracking day 1 and
    n5 from day -20 to day -1 (456 h)."""
    out = build_exposure(assets, by="host", window_end=day(10))
    got = dict(zip(out["host"], out["exposure_h"], strict=True))
    assert got == {"n1": 360.0, "n2": 120.0, "n3": 144.0, "n4": 216.0, "n5": 456.0}


def test_exposure_window_clipping_and_censoring(assets: pl.DataFrame) -> None:
    """A window [day 3, day 6]: everyone still alive is clipped to it."""
    out = build_exposure(assets, by="host", window_start=day(3), window_end=day(6))
    got = dict(zip(out["host"], out["exposure_h"], strict=True))
    assert got == {"n1": 72.0, "n2": 72.0, "n3": 48.0, "n4": 72.0}


def test_exposure_null_gpus_gives_null_gpu_hours(assets: pl.DataFrame) -> None:
    a = assets.with_columns(
        gpus=pl.when(pl.col("host") == "n3").then(None).otherwise(pl.col("gpus"))
    )
    out = build_exposure(a, by="system", window_start=day(0), window_end=day(10))
    assert out["exposure_gpu_h"].to_list() == [None, 1728.0]
    assert out["exposure_h"].to_list() == [504.0, 216.0]


def test_exposure_naive_window_is_utc(assets: pl.DataFrame) -> None:
    naive = build_exposure(assets, window_end=datetime(2024, 1, 11))
    aware = build_exposure(assets, window_end=day(10))
    assert naive.equals(aware)


def test_exposure_subsecond_precision() -> None:
    a = assets_frame([{"host": "x", "gpus": 1, "in_service_ts": T0}])
    out = build_exposure(a, window_end=T0 + timedelta(seconds=1, microseconds=8))
    assert out["exposure_h"][0] == pytest.approx(1.000008 / 3600, rel=1e-12)


def test_exposure_all_outside_window_gives_empty() -> None:
    a = assets_frame(
        [{"host": "x", "system": "s", "gpus": 1, "in_service_ts": day(20)}]
    )
    assert build_exposure(a, window_end=day(10)).height == 0
    assert build_exposure(a, by="system", window_end=day(10)).height == 0


def test_exposure_multiple_by_and_null_group(assets: pl.DataFrame) -> None:
    a = assets.with_columns(
        device=pl.when(pl.col("host") == "n1").then(None).otherwise(pl.lit("gpu"))
    )
    out = build_exposure(
        a, by=["system", "device"], window_start=day(0), window_end=day(10)
    )
    assert out.select("system", "device", "n_units").rows() == [
        ("s1", "gpu", 2),
        ("s1", None, 1),
        ("s2", "gpu", 1),
    ]


def test_exposure_feeds_mtbf(assets: pl.DataFrame) -> None:
    """build_exposure -> mtbf(): 3 failures on s1 over 504 node-hours."""
    exposure = build_exposure(
        assets, by="system", window_start=day(0), window_end=day(10)
    )
    failures = pl.DataFrame({"system": ["s1"] * 3, "failure_mode": ["a", "a", "b"]})
    out = mtbf(failures, exposure, by=["system", "failure_mode"])
    assert out.select("system", "failure_mode", "mtbf_h").rows() == [
        ("s1", "a", 252.0),
        ("s1", "b", 504.0),
        ("s2", "a", None),
        ("s2", "b", None),
    ]
    total = mtbf(failures, exposure)
    assert total["mtbf_h"][0] == 240.0  # 720 node-hours / 3


def test_exposure_errors(assets: pl.DataFrame) -> None:
    with pytest.raises(InvalidParameterError, match="window_end is required"):
        build_exposure(assets)
    with pytest.raises(
        InvalidParameterError, match=r"window_start .* is after window_end"
    ):
        build_exposure(assets, window_start=day(5), window_end=day(1))
    with pytest.raises(InvalidParameterError, match="window_end must be a datetime"):
        build_exposure(assets, window_end="2024-01-10")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['rack'\]"):
        build_exposure(assets, by="rack", window_end=day(10))
    with pytest.raises(SchemaError, match="must be a UTC datetime"):
        build_exposure(
            assets.with_columns(pl.col("in_service_ts").cast(pl.String)),
            window_end=day(10),
        )
    orphan = assets_frame([{"host": "lost", "gpus": 8}])
    with pytest.raises(SchemaError, match=r"neither in_service_ts nor .*\['lost'\]"):
        build_exposure(orphan, window_start=day(0), window_end=day(10))


def test_observation_end() -> None:
    ev = pl.DataFrame(
        {"ts": [day(1), day(3)], "repaired_ts": [day(2), None]},
        schema={
            "ts": POLARS_SCHEMAS["events"]["ts"],
            "repaired_ts": POLARS_SCHEMAS["events"]["ts"],
        },
    )
    assert observation_end(ev) == day(3)
    assert observation_end(ev.with_columns(repaired_ts=pl.lit(day(4)))) == day(4)
    assert observation_end(ev.drop("repaired_ts")) == day(3)
    assert observation_end(ev).tzinfo is not None
    with pytest.raises(InsufficientDataError, match="no non-null ts"):
        observation_end(ev.clear())
    with pytest.raises(SchemaError, match="ts"):
        observation_end(pl.DataFrame({"host": ["a"]}))


@settings(deadline=None)  # first call imports scipy
@given(
    entries=st.lists(
        st.tuples(
            st.integers(-100, 300),  # in service, hours from T0
            st.one_of(st.none(), st.integers(1, 400)),  # life length, None = alive
            st.integers(0, 100),  # tracking delay after in service
            st.integers(1, 8),
        ),
        min_size=1,
        max_size=12,
    ),
    start=st.integers(0, 100),
    length=st.integers(1, 200),
)
def test_prop_exposure_matches_per_unit_formula(entries, start, length) -> None:
    """Total exposure is the sum of per-unit clipped intervals; by-group sums add up."""
    h = timedelta(hours=1)
    rows, expected, expected_gpu, n_pos = [], 0.0, 0.0, 0
    for i, (ins, life, delay, gpus) in enumerate(entries):
        rows.append(
            {
                "host": f"h{i}",
                "system": f"s{i % 3}",
                "gpus": gpus,
                "in_service_ts": T0 + ins * h,
                "observed_from_ts": T0 + (ins + delay) * h,
                "out_of_service_ts": None if life is None else T0 + (ins + life) * h,
            }
        )
        end = start + length if life is None else min(ins + life, start + length)
        t = max(0, end - max(ins + delay, start))
        expected += t
        expected_gpu += t * gpus
        n_pos += t > 0
    a = assets_frame(rows)
    ws, we = T0 + start * h, T0 + (start + length) * h
    total = build_exposure(a, window_start=ws, window_end=we)
    by_sys = build_exposure(a, by="system", window_start=ws, window_end=we)
    if n_pos == 0:
        assert total.height == 0
        assert by_sys.height == 0
        return
    assert total.rows() == [(n_pos, float(expected), float(expected_gpu))]
    assert by_sys["exposure_h"].sum() == pytest.approx(expected)
    assert by_sys["n_units"].sum() == n_pos
    assert (by_sys["exposure_h"] <= by_sys["n_units"] * length).all()
