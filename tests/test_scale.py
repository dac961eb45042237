"""Job MTTF by size, node failure rate and MTTF(N) projection (issue 5 §5)."""

import math
from datetime import UTC, datetime, timedelta

import polars as pl
import pytest

from relkit.errors import InvalidParameterError
from relkit.scale import job_mttf_by_size, node_failure_rate, scale_projection


def test_ref_kokolis_projection() -> None:
    """shared/reference/README.md: MTTF(N) = 1/(N_nodes r_f) at r_f = 6.50e-3 per
    node-day gives 1.803 h at 16,384 GPUs and 0.2254 h at 131,072 (Kokolis et
    al., arXiv:2410.21680: 1.8 h and 0.23 h); 28.85 h at 1,024 GPUs."""
    out = scale_projection(failures_per_node_day=6.5e-3, gpus=[1024, 16384, 131072])
    assert out["mttf_h"].round(4).to_list() == [28.8462, 1.8029, 0.2254]
    assert out["n_nodes"].to_list() == [128, 2048, 16384]
    assert out["basis"].unique().to_list() == ["projected"]
    assert out["mttf_lower_h"].null_count() == 3


def test_projection_bounds_from_rate_bounds() -> None:
    out = scale_projection(
        failures_per_node_day=6.5e-3, gpus=16384, rate_lower=5e-3, rate_upper=8e-3
    )
    row = out.row(0, named=True)
    assert row["mttf_lower_h"] == pytest.approx(24 / (2048 * 8e-3))
    assert row["mttf_upper_h"] == pytest.approx(24 / (2048 * 5e-3))
    with pytest.raises(InvalidParameterError, match="rate_upper"):
        scale_projection(failures_per_node_day=6.5e-3, gpus=16384, rate_upper=1e-3)
    with pytest.raises(InvalidParameterError, match="gpus"):
        scale_projection(failures_per_node_day=6.5e-3, gpus=[0])
    with pytest.raises(InvalidParameterError):
        scale_projection(failures_per_node_day=0.0, gpus=8)


def test_ref_llama3_rate() -> None:
    """shared/reference/README.md: Llama 3 rate, exact Poisson (Garwood) 95 %:
    3.789e-3 [3.435e-3, 4.169e-3] failures per node-day."""
    r = node_failure_rate(419, node_hours=2048 * 54 * 24, confidence=0.95)
    assert r.failures_per_node_day == pytest.approx(3.789e-3, abs=5e-7)
    assert r.lower == pytest.approx(3.435e-3, abs=5e-7)
    assert r.upper == pytest.approx(4.169e-3, abs=5e-7)
    assert r.per_1000_node_days == pytest.approx(3.789, abs=5e-4)


def test_job_mttf_by_size_buckets_and_censoring() -> None:
    """Our definition (job_mttf_by_size Notes): exposure includes censored
    attempts; buckets are (N/2, N]; user failures are not infrastructure."""
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    att = pl.DataFrame(
        {
            "source_id": 1,
            "job_id": ["a", "b", "c", "d"],
            "attempt": 1,
            "start_ts": [t0] * 4,
            "stop_ts": [t0 + timedelta(hours=h) for h in (10, 30, 5, 1)],
            "n_gpus": [8, 8, 1024, 3],
        }
    )
    iv = pl.DataFrame(
        {
            "source_id": 1,
            "job_id": ["a", "c", "d"],
            "attempt": 1,
            "cause": ["hardware", "infrastructure", "user"],
        }
    )
    out = job_mttf_by_size(att, iv)
    rows = out.select(
        "gpus_min", "gpus_max", "n_attempts", "n_failures", "mttf_h"
    ).rows()
    assert rows == [(3, 4, 1, 0, None), (5, 8, 2, 1, 40.0), (513, 1024, 1, 1, 5.0)]
    assert out["basis"].unique().to_list() == ["observed"]
    eight = out.filter(gpus_max=8).row(0, named=True)
    assert eight["mttf_lower_h"] < 40.0 < eight["mttf_upper_h"]
    assert not math.isnan(out.filter(gpus_max=4)["mttf_lower_one_sided_h"][0])


def test_projection_size_range_and_rate_unit_warning() -> None:
    """Review of issue 5: sizes above MAX_GPUS are refused (no int64 overflow);
    a rate above 1 per node-day warns that Kokolis et al.'s 6.50 is per 1000
    node-days (6.5e-3 per node-day)."""
    from relkit.errors import RelkitWarning
    from relkit.scale import MAX_GPUS

    with pytest.raises(InvalidParameterError, match="100,000,000"):
        scale_projection(failures_per_node_day=6.5e-3, gpus=[MAX_GPUS + 1])
    with pytest.warns(
        RelkitWarning,
        match="pass 0.0065 per node-day or failures_per_1000_node_days=6.5",
    ):
        scale_projection(failures_per_node_day=6.5, gpus=[1024])
