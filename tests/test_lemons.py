"""relkit.repairable.lemon_units and relkit.answers.lemons (issue 12 §5)."""

from datetime import UTC, datetime, timedelta
from pathlib import Path

import numpy as np
import polars as pl
import pytest
from scipy import stats

from relkit import answers
from relkit.errors import InsufficientDataError, RelkitWarning, SchemaError
from relkit.repairable import lemon_units
from relkit.store import Store

T0 = datetime(2025, 3, 1, tzinfo=UTC)


def _fleet(
    counts: dict[str, int], n_units: int = 10
) -> tuple[pl.DataFrame, pl.DataFrame]:
    rows = [
        (host, T0 + timedelta(days=k)) for host, n in counts.items() for k in range(n)
    ]
    failures = pl.DataFrame(
        {
            "host": [h for h, _ in rows],
            "failure_mode": ["gpu/fallen_off_bus"] * len(rows),
            "ts": [t for _, t in rows],
        }
    )
    exposure = pl.DataFrame(
        {"host": [f"n{k}" for k in range(1, n_units + 1)], "exposure_h": 720.0}
    )
    return failures, exposure


def test_ref_p_values_are_scipy_poisson_tails_and_q_values_bh() -> None:
    """p = scipy.stats.poisson.sf(n - 1, mu), q = false_discovery_control(p).

    10 nodes of 720 h, counts n1..n3 = 6, 2, 1 (9 failures in 7,200 h): by
    hand mu = 9/7200 x 720 = 0.9 for every node; p(n1) = P(X >= 6 | 0.9) =
    3.0e-4 (scipy), and BH over the ten p-values (seven of 1) gives q(n1) =
    10 x p(n1) / 1 = 3.0e-3 (Benjamini and Hochberg 1995,
    doi:10.1111/j.2517-6161.1995.tb02031.x).
    """
    failures, exposure = _fleet({"n1": 6, "n2": 2, "n3": 1})
    out = lemon_units(failures, exposure)
    assert out["expected"].to_list() == pytest.approx([0.9] * 10)
    n = out["n_failures"].to_numpy()
    p = np.where(n > 0, stats.poisson.sf(n - 1, 0.9), 1.0)
    assert out["p_value"].to_numpy() == pytest.approx(p, rel=1e-12)
    assert out["q_value"].to_numpy() == pytest.approx(
        stats.false_discovery_control(p), rel=1e-12
    )
    assert out["q_value"][0] == pytest.approx(10 * stats.poisson.sf(5, 0.9))
    assert out["host"][0] == "n1"
    assert out.filter(pl.col("lemon"))["host"].to_list() == ["n1"]


def test_leave_one_out_baseline_by_hand() -> None:
    """baseline='others': mu(n1) = (9 - 6)/(7200 - 720) x 720 = 1/3 (by hand)."""
    failures, exposure = _fleet({"n1": 6, "n2": 2, "n3": 1})
    out = lemon_units(failures, exposure, baseline="others")
    row = out.filter(pl.col("host") == "n1").row(0, named=True)
    assert row["expected"] == pytest.approx(1 / 3)
    assert row["p_value"] == pytest.approx(stats.poisson.sf(5, 1 / 3))


def test_bursts_are_folded_and_said() -> None:
    """Three signals 2 min apart on n1 are one failure (10 min window); said."""
    failures = pl.DataFrame(
        {
            "host": ["n1"] * 3 + ["n2"],
            "failure_mode": ["gpu/hang"] * 4,
            "device": ["0000:18:00", "0000:2a:00", "0000:18:00", None],
            "ts": [T0 + timedelta(minutes=2 * k) for k in range(3)] + [T0],
        }
    )
    exposure = pl.DataFrame({"host": ["n1", "n2", "n3"], "exposure_h": 100.0})
    with pytest.warns(RelkitWarning, match="2 repeat"):
        out = lemon_units(failures, exposure)
    row = out.filter(pl.col("host") == "n1").row(0, named=True)
    assert (row["n_failures"], row["n_folded"], row["n_devices"]) == (1, 2, 1)
    kept = lemon_units(failures, exposure, burst_window_h=None)
    n1 = kept.filter(pl.col("host") == "n1").row(0, named=True)
    assert (n1["n_failures"], n1["n_devices"]) == (3, 2)


def test_modes_name_what_drove_the_unit() -> None:
    failures = pl.DataFrame(
        {
            "host": ["n1"] * 4,
            "failure_mode": ["gpu/hbm_uncorrectable"] * 3 + ["gpu/fallen_off_bus"],
            "ts": [T0 + timedelta(days=k) for k in range(4)],
        }
    )
    exposure = pl.DataFrame({"host": ["n1", "n2"], "exposure_h": 100.0})
    out = lemon_units(failures, exposure)
    assert out["modes"][0] == "gpu/hbm_uncorrectable×3, gpu/fallen_off_bus×1"
    assert out.filter(pl.col("host") == "n2")["modes"][0] == ""


def test_by_mode_uses_each_modes_rate() -> None:
    """Per (unit, mode): mu = n_mode / E x e; summed over modes, the all-mode mu."""
    failures = pl.DataFrame(
        {
            "host": ["n1", "n1", "n2", "n3"],
            "failure_mode": ["a", "a", "b", "b"],
            "ts": [T0 + timedelta(days=k) for k in range(4)],
        }
    )
    exposure = pl.DataFrame({"host": ["n1", "n2", "n3", "n4"], "exposure_h": 50.0})
    out = lemon_units(failures, exposure, by_mode=True)
    assert out.height == 8
    assert out["expected"].to_list() == pytest.approx([0.5] * 8)
    whole = lemon_units(failures, exposure)
    per = out.group_by("host").agg(pl.col("expected").sum()).sort("host")
    assert per["expected"].to_list() == pytest.approx(
        whole.sort("host")["expected"].to_list()
    )


def test_within_groups_get_their_own_rate() -> None:
    """Group a: 4 failures over 2 x 100 h (mu 2 each); group b: 0 (warned)."""
    failures = pl.DataFrame(
        {
            "host": ["a1"] * 4,
            "system": ["a"] * 4,
            "failure_mode": ["x"] * 4,
            "ts": [T0 + timedelta(days=k) for k in range(4)],
        }
    )
    exposure = pl.DataFrame(
        {"host": ["a1", "a2", "b1"], "system": ["a", "a", "b"], "exposure_h": 100.0}
    )
    with pytest.warns(RelkitWarning, match="no failure"):
        out = lemon_units(failures, exposure, within=["system"])
    assert out.filter(pl.col("host") == "a1")["expected"][0] == pytest.approx(2.0)
    assert out.filter(pl.col("host") == "b1")["p_value"][0] == 1.0


def test_gpu_unit_counts_silent_gpus_in_the_correction() -> None:
    """unit='gpu' with 8 GPUs per host: 16 tests, 14 of them unnamed (p = 1)."""
    failures = pl.DataFrame(
        {
            "host": ["n1"] * 3,
            "device": ["0000:18:00"] * 3,
            "failure_mode": ["gpu/hang"] * 3,
            "ts": [T0 + timedelta(days=k) for k in range(3)],
        }
    )
    exposure = pl.DataFrame({"host": ["n1", "n2"], "exposure_h": 100.0, "gpus": 8})
    with pytest.warns(RelkitWarning, match="15 GPU"):
        out = lemon_units(failures, exposure, unit="gpu")
    row = out.row(0, named=True)
    assert row["expected"] == pytest.approx(3 / 16)
    p = stats.poisson.sf(2, 3 / 16)
    assert row["q_value"] == pytest.approx(
        stats.false_discovery_control([p] + [1.0] * 15)[0]
    )


def test_errors_name_the_fix() -> None:
    failures, exposure = _fleet({"n1": 1})
    with pytest.raises(SchemaError, match="exposure_h"):
        lemon_units(failures, exposure.drop("exposure_h"))
    with pytest.raises(InsufficientDataError, match="no unit has time at risk"):
        lemon_units(failures, exposure.with_columns(exposure_h=pl.lit(0.0)))
    with (
        pytest.warns(RelkitWarning, match="left out"),
        pytest.raises(InsufficientDataError, match="same hosts"),
    ):
        lemon_units(failures.with_columns(host=pl.lit("zz")), exposure)


def test_lanl_lemon_nodes(lanl_db: Path) -> None:
    """LANL 1996-2005 (bundled), per node within its system, fleet baseline.

    Measured (ours, a snapshot): 5,007 nodes tested, 185 lemons at q <= 0.05;
    the top one is s19-n1024 with 119 failures against 3.21 expected from
    system 19's rate (48 repeats within 10 min folded). Checked by hand here:
    its expected count is system 19's failures / node-hours x its node-hours,
    and its p-value scipy's Poisson tail P(X >= 119) at that count.
    """
    with Store(lanl_db, read_only=True) as store:
        tables = answers.store_tables(store)
    with pytest.warns(RelkitWarning) as said:
        out = answers.lemons(**tables)
    notes = " ".join(str(w.message) for w in said)
    assert "23 systems" in notes
    assert "48 repeat(s)" in notes
    assert out.height == 5007
    assert int(out["lemon"].sum()) == 185
    top = out.row(0, named=True)
    assert (top["host"], top["n_failures"]) == ("s19-n1024", 119)
    with pytest.warns(RelkitWarning):
        sys19 = answers.lemons(**tables, within=()).height
    assert sys19 == 5007
    s19 = out.filter(pl.col("system") == "19")
    rate = s19["n_failures"].sum() / s19["exposure_h"].sum()
    assert top["expected"] == pytest.approx(rate * top["exposure_h"])
    assert top["expected"] == pytest.approx(3.207, abs=1e-3)
    assert top["p_value"] == pytest.approx(stats.poisson.sf(118, top["expected"]))
