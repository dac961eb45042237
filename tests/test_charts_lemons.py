"""relkit.charts.lemon_ranking_chart: units ranked by evidence (issue 12 §5/§6)."""

import json
import math
import warnings
from pathlib import Path

import numpy as np
import polars as pl
import pytest
import vl_convert as vlc
from scipy import stats

from relkit import answers, charts
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.repairable import lemon_units
from relkit.store import Store

FDR = 0.05


def _frame(n: list[int], expected: list[float], **extra: list) -> pl.DataFrame:
    """Rows of the lemon frame with p from scipy's Poisson tail, q from scipy's BH."""
    p = stats.poisson.sf(np.asarray(n) - 1, np.asarray(expected))
    p = np.where(np.asarray(n) > 0, p, 1.0)
    q = stats.false_discovery_control(p, method="bh")
    hosts = extra.pop("host", [f"n{k:02d}" for k in range(len(n))])
    return pl.DataFrame(
        {
            "host": hosts,
            "n_failures": n,
            "exposure_h": [720.0] * len(n),
            "expected": expected,
            "p_value": p,
            "q_value": q,
            "lemon": q <= FDR,
            "modes": [f"gpu/hang×{k}" if k else "" for k in n],
            "n_devices": [min(k, 8) for k in n],
            **extra,
        }
    )


def _rows(spec: dict) -> list[dict]:
    return spec["datasets"][spec["data"]["name"]]


def test_ref_ranking_status_and_evidence_match_scipy() -> None:
    """A ten-node fleet tested by relkit.repairable.lemon_units (5 + 1 failures
    over 10 x 720 h). Expected values computed here: the p-values are scipy's
    Poisson tail P(X >= n | 0.6), the q-values scipy's false_discovery_control,
    and each bar's length is -log10 q (numpy); the top bar is the smallest
    p-value and the FDR rule sits at -log10 0.05 = 1.30103.
    """
    from datetime import UTC, datetime, timedelta

    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    failures = pl.DataFrame(
        {
            "host": ["n3"] * 5 + ["n7"],
            "failure_mode": ["gpu/hbm_uncorrectable"] * 4 + ["gpu/hang"] * 2,
            "ts": [t0 + timedelta(days=d) for d in range(6)],
            "device": ["0", "0", "1", "2", "0", "4"],
        }
    )
    exposure = pl.DataFrame(
        {"host": [f"n{k}" for k in range(1, 11)], "exposure_h": [720.0] * 10}
    )
    table = lemon_units(failures, exposure)
    spec = charts.lemon_ranking_chart(table).to_dict()
    json.dumps(spec, allow_nan=False)  # a valid Vega-Lite document, no NaN/inf
    rows = _rows(spec)
    assert len(rows) == 10
    assert [r["rank"] for r in rows] == list(range(1, 11))
    p_n3 = stats.poisson.sf(4, 0.6)
    q = stats.false_discovery_control(
        [p_n3, stats.poisson.sf(0, 0.6), *[1.0] * 8], method="bh"
    )
    top = rows[0]
    assert top["host"] == "n3" == table.sort("p_value")["host"][0]
    assert top["p_value"] == pytest.approx(p_n3, rel=1e-12)
    assert top["evidence"] == pytest.approx(-math.log10(q[0]), rel=1e-12)
    assert rows[1]["host"] == "n7"
    assert rows[1]["evidence"] == pytest.approx(-math.log10(q[1]), rel=1e-12)
    assert all(r["evidence"] == 0.0 for r in rows[2:])  # q = 1
    assert (top["status"], top["count_text"]) == ("lemon", "5 vs 0.6")
    assert top["modes"] == "gpu/hbm_uncorrectable×4, gpu/hang×1"
    assert top["n_devices"] == 3
    assert top["ratio"] == pytest.approx(5 / 0.6)
    assert [r["status"] for r in rows] == ["lemon"] + ["not a lemon"] * 9
    bars, counts, rule, rule_label = spec["layer"]
    assert bars["mark"]["type"] == "bar"
    assert bars["encoding"]["y"]["sort"] == [r["label"] for r in rows]
    assert bars["encoding"]["x"]["field"] == "evidence"
    assert "−log₁₀ q" in bars["encoding"]["x"]["title"]
    assert bars["encoding"]["color"]["scale"]["domain"] == ["lemon", "not a lemon"]
    tips = {t["field"] for t in bars["encoding"]["tooltip"]}
    assert {"modes", "n_devices", "ratio", "p_value", "q_value", "n_failures"} <= tips
    assert {"expected", "exposure_h", "evidence_text", "n_folded"} <= tips
    assert counts["encoding"]["text"]["field"] == "count_text"
    assert rule["mark"]["type"] == "rule"
    assert rule["data"]["values"][0]["threshold"] == pytest.approx(1.30103, abs=1e-5)
    assert rule_label["data"]["values"][0]["rule_text"] == "FDR 5%"
    assert spec["title"]["subtitle"] == "10 units tested, 1 lemon at FDR 5% (q ≤ 0.05)."


def test_p_value_zero_is_capped_and_said() -> None:
    """400 failures against 0.5 expected: scipy's Poisson tail underflows to 0
    (checked here), so -log10 q would be infinite. The bar is capped at 1.1 x
    the longest finite bar (by hand: that bar is -log10 of the second unit's
    q), flagged, lighter, and the tooltip and subtitle say so.
    """
    assert stats.poisson.sf(399, 0.5) == 0.0
    frame = _frame([400, 12, 2, 0, 0], [0.5, 0.5, 0.5, 0.5, 0.5])
    assert frame["p_value"][0] == 0.0
    assert frame["q_value"][0] == 0.0
    spec = charts.lemon_ranking_chart(frame).to_dict()
    json.dumps(spec, allow_nan=False)  # no infinity reaches the spec
    rows = _rows(spec)
    longest = -math.log10(frame["q_value"][1])
    top = rows[0]
    assert top["host"] == "n00"
    assert top["evidence_capped"] is True
    assert top["evidence"] == pytest.approx(1.1 * longest, rel=1e-12)
    assert "underflowed to 0" in top["evidence_text"]
    assert f"capped at {1.1 * longest:.1f}" in top["evidence_text"]
    assert top["count_text"] == "400 vs 0.5 (p = 0, capped)"
    assert rows[1]["evidence_capped"] is False
    assert rows[1]["evidence_text"] == f"{longest:.2f}"
    subtitle = spec["title"]["subtitle"]
    assert isinstance(subtitle, list)
    assert "1 p-value(s) underflowed to 0" in subtitle[1]
    opacity = spec["layer"][0]["encoding"]["opacity"]
    assert opacity["condition"]["test"] == "datum.evidence_capped"


def test_p_zero_everywhere_still_leaves_the_threshold_on_the_axis() -> None:
    """When every tested unit has p = 0 there is no finite bar; the cap is then
    twice the threshold, 2 x -log10(0.05) = 2.60206 (by hand)."""
    frame = _frame([400, 500], [0.5, 0.5])
    rows = _rows(charts.lemon_ranking_chart(frame).to_dict())
    assert [r["evidence"] for r in rows] == pytest.approx([2.60206] * 2, abs=1e-5)


def test_top_limits_rows_and_subtitle_counts_lemons_not_drawn() -> None:
    """40 units, 12 of them with 10 failures against 1 expected (lemons by
    scipy's BH here): top=5 draws 5 and the subtitle says 7 lemons are not
    drawn; the order is the p-value order of the frame."""
    n = [10] * 12 + [1] * 28
    frame = _frame(n, [1.0] * 40)
    n_lemons = int(frame["lemon"].sum())
    assert n_lemons == 12
    spec = charts.lemon_ranking_chart(frame, top=5, title="Fleet A").to_dict()
    rows = _rows(spec)
    assert len(rows) == 5
    assert all(r["status"] == "lemon" for r in rows)
    assert spec["title"]["text"] == "Fleet A"
    assert spec["title"]["subtitle"] == (
        "40 units tested, 12 lemons at FDR 5% (q ≤ 0.05); the 5 with the "
        "strongest evidence are drawn (7 lemons not drawn)."
    )
    # ties in p are broken by the label, so the order is reproducible
    assert [r["host"] for r in rows] == ["n00", "n01", "n02", "n03", "n04"]


def test_c19_row_limit_never_reached() -> None:
    """shared/cases/README.md C19: Altair refuses more than 5,000 rows. A frame
    of 6,000 units with top=5,000 embeds exactly 5,000; top=5,001 is refused
    with the fix named, before Altair could raise MaxRowsError."""
    rng = np.random.default_rng(12)
    n = rng.poisson(1.0, 6000).tolist()
    frame = _frame(n, [1.0] * 6000)
    spec = charts.lemon_ranking_chart(frame, top=5000).to_dict()
    assert len(_rows(spec)) == 5000
    assert spec["title"]["subtitle"].startswith("6,000 units tested")
    with pytest.raises(InvalidParameterError, match=r"top .*\[1, 5,000\]"):
        charts.lemon_ranking_chart(frame, top=5001)


def test_labels_name_gpus_and_use_the_group_when_hosts_repeat() -> None:
    """A GPU frame labels a bar host · device; a frame whose hosts repeat
    across systems (lemon_units within=('system',)) prefixes the system."""
    gpu = _frame([6, 0], [0.5, 0.5], host=["n1", "n1"], device=["3", "5"])
    rows = _rows(charts.lemon_ranking_chart(gpu).to_dict())
    assert [r["label"] for r in rows] == ["n1 · 3", "n1 · 5"]
    grouped = _frame([6, 0], [0.5, 0.5], host=["n1", "n1"], system=["2", "19"])
    spec = charts.lemon_ranking_chart(grouped).to_dict()
    assert [r["label"] for r in _rows(spec)] == ["2 · n1", "19 · n1"]
    assert "system" in {t["field"] for t in spec["layer"][0]["encoding"]["tooltip"]}
    with pytest.raises(SchemaError, match=r"more than once.*'n1'"):
        charts.lemon_ranking_chart(gpu.drop("device"))


def test_unit_without_expected_count_is_drawn_and_said() -> None:
    """baseline='others' leaves a unit alone in its group with expected null
    and p = 1 (relkit.repairable.lemon_units): its bar is 0 long, its text
    says there is no expected count and its ratio is null; numpy integers
    are accepted for top."""
    frame = _frame([6, 0], [0.5, 0.5]).with_columns(
        expected=pl.Series([0.5, None]), p_value=pl.Series([0.0002, 1.0])
    )
    frame = frame.with_columns(
        q_value=pl.Series(stats.false_discovery_control(frame["p_value"]))
    )
    rows = _rows(charts.lemon_ranking_chart(frame, top=np.int64(2)).to_dict())
    assert rows[1]["count_text"] == "0 vs (no expected count)"
    assert rows[1]["ratio"] is None
    assert rows[1]["evidence"] == 0.0


def test_errors_name_the_fix() -> None:
    """Missing columns are named; bad values, options and an FDR that does not
    fit the lemon column are refused with the value to pass."""
    frame = _frame([6, 1, 0], [0.7, 0.7, 0.7])
    with pytest.raises(SchemaError, match=r"q_value.*modes|modes.*q_value"):
        charts.lemon_ranking_chart(frame.drop("q_value", "modes"))
    with pytest.raises(InsufficientDataError, match="no rows"):
        charts.lemon_ranking_chart(frame.head(0))
    for top in (0, 2.5, True):
        with pytest.raises(InvalidParameterError, match="top"):
            charts.lemon_ranking_chart(frame, top=top)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match=r"fdr must be"):
        charts.lemon_ranking_chart(frame, fdr=0.0)
    with pytest.raises(InvalidParameterError, match=r"not set at fdr=1e-05.*fdr=0.1"):
        charts.lemon_ranking_chart(frame, fdr=1e-5)
    bad_p = frame.with_columns(p_value=pl.Series([float("nan"), 0.5, 1.0]))
    with pytest.raises(SchemaError, match=r"p_value null, NaN or outside"):
        charts.lemon_ranking_chart(bad_p)
    bad_q = frame.with_columns(q_value=pl.Series([0.01, 1.5, 1.0]))
    with pytest.raises(SchemaError, match=r"q_value .*'n01'"):
        charts.lemon_ranking_chart(bad_q)


def test_svg_renders_offline() -> None:
    """vl-convert draws the chart in-process (no network): the SVG carries the
    headline, the threshold label and the top unit's count text."""
    frame = _frame([400, 9, 2, 0], [0.5, 0.6, 0.6, 0.6])
    with charts.enable_theme():
        spec = charts.lemon_ranking_chart(frame).to_dict()
    svg = vlc.vegalite_to_svg(spec)
    assert svg.startswith("<svg")
    for text in ("Units ranked by evidence", "FDR 5%", "400 vs 0.5", "n01"):
        assert text in svg


def test_lanl_lemon_ranking_renders(lanl_db: Path) -> None:
    """LANL 1996-2005 (bundled store built in a tmp dir by conftest), nodes
    within their system. Values are tests/test_lemons.py's measured snapshot
    (ours): 5,007 nodes tested, 185 lemons, top s19-n1024 with 119 failures
    against 3.21 expected. The CLI's JSON fields alone (answers.LEMON_FIELDS)
    are enough to draw it."""
    with Store(lanl_db, read_only=True) as store:
        tables = answers.store_tables(store)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the notes are tested in test_lemons
        out = answers.lemons(**tables)
    with charts.enable_theme():
        spec = charts.lemon_ranking_chart(out, title="LANL lemon nodes").to_dict()
        cli_spec = charts.lemon_ranking_chart(
            out.select(answers.LEMON_FIELDS)
        ).to_dict()
    rows = _rows(spec)
    assert len(rows) == 30
    assert (rows[0]["host"], rows[0]["count_text"]) == ("s19-n1024", "119 vs 3.21")
    assert rows[0]["p_value"] == out["p_value"].min()
    assert all(r["status"] == "lemon" for r in rows)
    assert [r["host"] for r in rows] == out["host"].head(30).to_list()
    assert spec["title"]["subtitle"] == (
        "5,007 units tested, 185 lemons at FDR 5% (q ≤ 0.05); the 30 with the "
        "strongest evidence are drawn (155 lemons not drawn)."
    )
    assert [r["host"] for r in _rows(cli_spec)] == [r["host"] for r in rows]
    svg = vlc.vegalite_to_svg(spec)
    assert "LANL lemon nodes" in svg
    assert "s19-n1024" in svg
