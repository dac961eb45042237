"""The checkpoint interval from per-mode Weibull fits (issue 11 §2: a numeric
optimum for fitted non-exponential failure models, the per-mode Weibull fits)."""

from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import polars as pl
import pytest

import relkit
from relkit import answers, checkpoint
from relkit.errors import InsufficientDataError


def _fleet(tmp_path: Path, *, shape: float, scale_h: float, seed: int) -> relkit.Store:
    """40 nodes in service for 3 years, each failing as a renewal process of
    Weibull(shape, scale_h) gaps of one mode (numpy, seeded)."""
    rng = np.random.default_rng(seed)
    start = datetime(2023, 1, 1, tzinfo=UTC)
    span_h = 3 * 365 * 24.0
    rows = []
    for node in range(40):
        t = 0.0
        while True:
            t += scale_h * rng.weibull(shape)
            if t >= span_h:
                break
            rows.append({"host": f"n{node:02d}", "t_h": t})
    events = (
        pl.DataFrame(rows)
        .select(
            ts=pl.lit(start)
            + pl.duration(seconds=pl.col("t_h") * 3600).cast(pl.Duration("us")),
            host="host",
            failure_mode=pl.lit("gpu/fallen_off_bus"),
        )
        .sort("ts")
    )
    assets = pl.DataFrame({"host": [f"n{i:02d}" for i in range(40)]}).with_columns(
        in_service_ts=pl.lit("2023-01-01T00:00:00Z"),
        out_of_service_ts=pl.lit("2025-12-31T00:00:00Z"),
    )
    events.with_columns(pl.col("ts").dt.to_string("%Y-%m-%dT%H:%M:%S%.fZ")).write_csv(
        tmp_path / "events.csv"
    )
    assets.write_csv(tmp_path / "assets.csv")
    store = relkit.Store(":memory:")
    relkit.read_file(store, tmp_path / "assets.csv", kind="assets")
    relkit.read_file(store, tmp_path / "events.csv", kind="events")
    return store


def test_falling_hazard_is_fitted_and_moves_the_optimum(tmp_path: Path) -> None:
    """Gaps drawn from Weibull(0.6, 2000 h): the per-node fit recovers a shape
    below 1 (its interval excludes 1), and the plan is the renewal-reward
    maximiser of S(t) = S_mode(t)^N with the fitted parameters (the same
    call made here by hand), away from Young's √(2wM) at the model's MTTF."""
    store = _fleet(tmp_path, shape=0.6, scale_h=2000.0, seed=7)
    tables = answers.store_tables(store)
    modes, opt = answers.per_mode_checkpoint_plan(
        **tables, n_nodes=512, cost_h=2 / 60, restart_h=0.1
    )
    (row,) = modes.filter("used").iter_rows(named=True)
    assert row["failure_mode"] == "gpu/fallen_off_bus"
    assert row["weibull_shape_upper"] < 1.0
    assert row["weibull_shape"] == pytest.approx(0.6, abs=0.1)
    by_hand = checkpoint.renewal_optimum(
        cost_h=2 / 60,
        restart_h=0.1,
        components=[(row["weibull_shape"], row["weibull_scale_h"], 512.0)],
    )
    assert opt.interval_h == pytest.approx(by_hand.interval_h, rel=1e-9)
    assert opt.expected_ettr == pytest.approx(by_hand.expected_ettr, rel=1e-9)
    assert abs(opt.interval_h / opt.young_interval_h - 1.0) > 0.02
    assert opt.expected_ettr >= opt.ettr_at_young


def test_too_few_failures_is_refused_by_name(tmp_path: Path) -> None:
    store = _fleet(tmp_path, shape=1.0, scale_h=1e6, seed=3)
    tables = answers.store_tables(store)
    with pytest.raises(InsufficientDataError, match="min_failures"):
        answers.per_mode_checkpoint_plan(
            **tables, n_nodes=8, cost_h=0.01, restart_h=0.1, min_failures=50
        )
