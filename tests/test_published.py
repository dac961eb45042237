"""Consistency checks of published tables; failure shares (issue 5 §4-5)."""

from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

import relkit
from relkit.errors import IngestError
from relkit.ingest import read_cluster_summary, read_paper_table
from relkit.published import acmetrace_failure_share, check_table, failure_share


@pytest.fixture(scope="module")
def table5() -> pl.DataFrame:
    return check_table(read_paper_table(relkit.datasets.path("llama3_table5")))


def test_ref_table5_faulty_gpu(table5: pl.DataFrame) -> None:
    """datasets/paper-tables/PROVENANCE.md: Faulty GPU prints 30.1 % but
    148/419 = 35.3 %; every other row matches count/419 within rounding."""
    rows = table5.filter(check="row")
    bad = rows.filter(~pl.col("consistent"))
    assert bad["subject"].to_list() == ["Faulty GPU"]
    assert bad["printed_pct"][0] == 30.1
    assert round(bad["recomputed_pct"][0], 1) == 35.3
    assert rows.height == 18


def test_ref_table5_total(table5: pl.DataFrame) -> None:
    """PROVENANCE.md: the printed percentages add to 94.9 %, not 100 %."""
    total = table5.filter(check="total").row(0, named=True)
    assert round(total["printed_pct"], 1) == 94.9
    assert not total["consistent"]


def test_ref_table5_gpu_category(table5: pl.DataFrame) -> None:
    """PROVENANCE.md: the GPU share printed as 58.7 % (the sum of the printed
    GPU rows) is 268/419 = 64.0 % by count."""
    gpu = table5.filter(check="category", subject="GPU").row(0, named=True)
    assert round(gpu["printed_pct"], 1) == 58.7
    assert round(gpu["recomputed_pct"], 1) == 64.0
    assert not gpu["consistent"]
    assert table5.filter(check="category", consistent=False).height == 1


def test_read_paper_table_errors(tmp_path: Path) -> None:
    f = tmp_path / "t.csv"
    f.write_text("component,category,count\nGPU,GPU,3\n")
    with pytest.raises(IngestError, match="no 'pct_printed' column"):
        read_paper_table(f)
    f.write_text("component,category,count,pct\nGPU,GPU,three,3\n")
    with pytest.raises(IngestError, match=r"t.csv:2: .*whole number"):
        read_paper_table(f)


def test_ref_acmetrace_shares() -> None:
    """datasets/acmetrace/PROVENANCE.md headline values: Seren fail_rate_gpu
    0.429 and fail_rate_gpu_time 0.124; Kalos 0.397/0.08; Philly 0.305/0.386;
    Helios 0.155/0.093; PAI has none."""
    out = acmetrace_failure_share(
        read_cluster_summary(relkit.datasets.path("acmetrace"))
    )
    got = {
        r["cluster"]: (r["failed_frac"], r["failed_gpu_time_frac"])
        for r in out.iter_rows(named=True)
    }
    assert got == {
        "Seren": (0.429, 0.124),
        "Kalos": (0.397, 0.08),
        "Philly": (0.305, 0.386),
        "Helios": (0.155, 0.093),
        "PAI": (None, None),
    }
    seren = out.row(0, named=True)
    # recomputed from the GPU-seconds columns, the published fraction holds
    assert seren["failed_gpu_time_frac_recomputed"] == pytest.approx(0.124, abs=5e-4)


def test_failure_share_from_attempts() -> None:
    """Our definition: shares among attempts that ran and ended."""
    t = [datetime(2025, 1, 1, h, tzinfo=UTC) for h in range(10)]
    att = pl.DataFrame(
        {
            "state": ["FAILED", "FAILED", "COMPLETED", "CANCELLED", "RUNNING"],
            "start_ts": [t[0]] * 5,
            "stop_ts": [t[1], t[1], t[8], t[0], t[9]],
            "n_gpus": [8, 8, 8, 8, 8],
            "partition": ["a", "a", "a", "b", "a"],
        }
    )
    out = failure_share(att)
    row = out.row(0, named=True)
    assert row["n_attempts"] == 4
    assert row["failed_frac"] == 0.5
    assert row["failed_gpu_time_frac"] == pytest.approx(2 / 10)
    assert failure_share(att, by="partition")["partition"].to_list() == ["a", "b"]


def test_check_table_refuses_non_finite_and_flags_duplicates() -> None:
    """Review of issue 5: NaN and inf are no printed percentages (refused with
    the row named); a component on two rows is a finding, never consistent."""
    from relkit.errors import InvalidParameterError

    t = pl.DataFrame(
        {
            "component": ["a", "b"],
            "category": ["X", "X"],
            "interruption_count": [3, 1],
            "pct_printed": [float("inf"), 25.0],
        }
    )
    with pytest.raises(InvalidParameterError, match="'a' is inf, not a finite"):
        check_table(t)
    dup = t.with_columns(component=pl.lit("a"), pct_printed=pl.Series([75.0, 25.0]))
    out = check_table(dup).filter(check="duplicate")
    assert out.select("subject", "consistent").rows() == [("a", False)]


def test_ref_published_ettr_points() -> None:
    """The ETTR values papers print, and nothing else: Llama 3 (arXiv:2407.21783)
    "higher than 90% effective training time" on 16,384 H100 GPUs over the
    54-day snapshot (a floor); Kokolis et al. (arXiv:2410.21680), RSC-1 with
    16,000 GPUs, r_f = 6.50/1000 node-days, u0 = 5 min: ETTR "0.7" at a 60 min
    and "0.93" at a 5 min interval (shared/reference/README.md "Expected ETTR",
    datasets/paper-tables/PROVENANCE.md)."""
    from relkit.published import PUBLISHED_ETTR_POINTS as points

    assert relkit.PUBLISHED_ETTR_POINTS is points
    assert points.schema == pl.Schema(
        {
            "source": pl.String,
            "gpus": pl.Int64,
            "ettr": pl.Float64,
            "kind": pl.String,
            "note": pl.String,
        }
    )
    llama = "Llama 3 (Dubey et al., arXiv:2407.21783)"
    kokolis = "Kokolis et al., HPCA 2025 (arXiv:2410.21680)"
    assert points.select("source", "gpus", "ettr", "kind").rows() == [
        (llama, 16384, 0.90, "observed, lower bound"),
        (kokolis, 16000, 0.7, "model"),
        (kokolis, 16000, 0.93, "model"),
    ]
    notes = points["note"].to_list()
    assert '"higher than 90% effective training time"' in notes[0]
    assert "54-day" in notes[0]
    for note, interval, printed in zip(
        notes[1:], ("60 min", "5 min"), ('"0.7"', '"0.93"'), strict=True
    ):
        assert "RSC-1" in note
        assert "6.50 failures per 1000 node-days" in note
        assert "u0 = 5 min" in note
        assert note.endswith(f"interval {interval}: ETTR {printed}")


def test_published_kokolis_points_agree_with_the_model_to_printed_precision() -> None:
    """The printed "0.7" and "0.93" are the expected-ETTR model rounded (0.684
    and 0.9323, shared/reference/ettr_model.csv rows `fixed`)."""
    from relkit.published import PUBLISHED_ETTR_POINTS as points

    model = points.filter(kind="model")
    for gpus, printed, interval_min, digits in zip(
        model["gpus"], model["ettr"], (60, 5), (1, 2), strict=True
    ):
        value = relkit.expected_ettr(
            n_nodes=gpus // 8,
            failures_per_node_day=6.5e-3,
            restart_h=5 / 60,
            interval_h=interval_min / 60,
        )
        assert round(value, digits) == printed


def test_published_node_failure_rates_from_the_paper_tables() -> None:
    """RSC-1 6.50 and RSC-2 2.34 failures per 1000 node-days as Kokolis et al. print
    them; Llama 3: 419 unexpected interruptions (the sum of Table 5's counts) over
    2,048 nodes x 54 days = 3.7887 per 1000 node-days, with Garwood bounds
    chi2.ppf(0.025, 838)/2 and chi2.ppf(0.975, 840)/2 over the node-days (scipy)."""
    from scipy.stats import chi2

    from relkit.published import published_node_failure_rates

    rates = published_node_failure_rates()
    per_1000 = dict(
        zip(rates["cluster"], rates["failures_per_1000_node_days"], strict=True)
    )
    assert per_1000["RSC-1"] == pytest.approx(6.50)
    assert per_1000["RSC-2"] == pytest.approx(2.34)
    llama = rates.filter(pl.col("source").str.starts_with("Llama")).row(0, named=True)
    node_days = 2048 * 54
    assert llama["failures_per_node_day"] == pytest.approx(419 / node_days)
    assert llama["lower"] == pytest.approx(chi2.ppf(0.025, 838) / 2 / node_days)
    assert llama["upper"] == pytest.approx(chi2.ppf(0.975, 840) / 2 / node_days)
    assert llama["confidence"] == 0.95


def test_published_mttf_points_from_the_paper_tables() -> None:
    """Kokolis et al.: 47.7 days at 8 GPUs, 7.9 h at 1,024, projections 1.8 h and
    0.23 h; Llama 3: 54 x 24 / 419 = 3.0931 h at 16,384 GPUs."""
    from relkit.published import published_mttf_points

    points = published_mttf_points()
    kokolis = points.filter(pl.col("source").str.starts_with("Kokolis"))
    assert dict(zip(kokolis["gpus"], kokolis["mttf_h"], strict=True)) == pytest.approx(
        {8: 47.7 * 24, 1024: 7.9, 16384: 1.8, 131072: 0.23}
    )
    llama = points.filter(pl.col("source").str.starts_with("Llama")).row(0, named=True)
    assert (llama["gpus"], llama["mttf_h"]) == (16384, pytest.approx(54 * 24 / 419))
