"""Tests of relkit.charts: specs validate, carry units, and stay under 5,000 rows."""

import datetime as dt
import json

import altair as alt
import numpy as np
import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import relkit
from relkit import charts
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError

XID_CODES = [13, 31, 43, 45, 48, 63, 74, 79, 94, 119]
T0 = dt.datetime(2025, 4, 1, tzinfo=dt.UTC)


def c19_events(n_rows: int = 5001) -> pl.DataFrame:
    """Rows of shared/cases/C19-altair-5001-xid-events.py, built in code.

    With n_rows = 5001 they span 2025-04-01..2025-04-30 UTC (one event every
    517 s) and Xid 13 occurs 501 times, each other code 500 times.
    """
    step_s = 517 * 5001 / n_rows  # keep the 30-day span for larger n
    i = np.arange(n_rows)
    return pl.DataFrame(
        {
            "ts": [T0 + dt.timedelta(seconds=float(k * step_s)) for k in i],
            "host": [f"host-{(k * 13) % 64 + 1:03d}" for k in i],
            "code": [str(XID_CODES[(k * 7) % 10]) for k in i],
        },
        schema_overrides={"ts": pl.Datetime("us", "UTC")},
    )


def dataset(spec: dict) -> list[dict]:
    """The rows of the top-level dataset of a chart spec."""
    return spec["datasets"][spec["data"]["name"]]


def roundtrip(chart: alt.TopLevelMixin) -> dict:
    """to_dict() validates against the Vega-Lite schema; the JSON must be valid too."""
    spec = chart.to_dict()
    assert json.loads(json.dumps(spec, allow_nan=False)) == spec
    assert spec["$schema"].startswith("https://vega.github.io/schema/vega-lite/v6")
    return spec


@pytest.fixture
def mtbf_frame() -> pl.DataFrame:
    return pl.DataFrame(
        {
            "system": ["2", "18", "20", "7"],
            "n_failures": [40, 0, 12, 3],
            "exposure_h": [4000.0, 3000.0, 2400.0, 900.0],
            "mtbf_h": [100.0, None, 200.0, 300.0],
            "mtbf_lower_h": [78.0, None, 120.0, 110.0],
            "mtbf_upper_h": [130.0, None, 380.0, 1100.0],
            "mtbf_lower_one_sided_h": [80.0, 1303.0, 130.0, 130.0],
        }
    )


@pytest.fixture
def tbf_and_density() -> tuple[pl.DataFrame, pl.DataFrame]:
    rng = np.random.default_rng(7)
    gaps = rng.weibull(0.7, 400) * 50.0
    tbf = pl.DataFrame(
        {
            "system": ["a"] * 200 + ["b"] * 200,
            "unit_id": ["system"] * 400,
            "entry_h": [0.0] * 400,
            "stop_h": gaps,
            "observed": rng.random(400) < 0.9,
        }
    )
    t = np.linspace(0.5, 300.0, 200)
    density = pl.concat(
        [
            pl.DataFrame(
                {"system": s, "model": m, "time_h": t, "density": np.exp(-t / 60) / 60}
            )
            for s in ("a", "b")
            for m in ("exponential", "weibull")
        ]
    )
    return tbf, density


@pytest.fixture
def km_frame() -> pl.DataFrame:
    return pl.concat(
        [
            pl.DataFrame(
                {
                    "system": s,
                    "time_h": [0.0, 10.0, 20.0, 50.0],
                    "survival": [1.0, 0.9, 0.8, 0.6],
                    "survival_lower": [1.0, 0.8, 0.7, 0.45],
                    "survival_upper": [1.0, 0.97, 0.9, 0.75],
                    "n_at_risk": [50, 45, 40, 30],
                }
            )
            for s in ("2", "18")
        ]
    )


@pytest.fixture
def restore_theme():
    before = alt.theme.active
    yield
    alt.theme.enable(before)


# --- theme -------------------------------------------------------------------


def test_enable_theme_sets_width_and_restores(restore_theme) -> None:
    km = pl.DataFrame({"time_h": [0.0], "survival": [1.0], "survival_lower": [1.0]})
    km = km.with_columns(survival_upper=pl.lit(1.0), n_at_risk=pl.lit(3))
    with charts.enable_theme():
        assert alt.theme.active == "relkit"
        spec = charts.kaplan_meier_chart(km).to_dict()
    assert spec["config"]["view"]["continuousWidth"] == 560
    assert spec["config"]["axis"]["labelFontSize"] >= 12
    assert alt.theme.active == "default"
    charts.enable_theme()
    assert alt.theme.active == "relkit"


# --- MTBF --------------------------------------------------------------------


def test_mtbf_chart_encodings(mtbf_frame: pl.DataFrame) -> None:
    spec = roundtrip(charts.mtbf_chart(mtbf_frame, group="system", title="MTBF"))
    rule, point = spec["layer"]
    assert rule["mark"]["type"] == "rule"
    assert point["mark"]["type"] == "point"
    for layer in (rule, point):
        x = layer["encoding"]["x"]
        assert x["title"] == "MTBF (h)"
        assert x["scale"] == {"type": "log"}
        assert layer["encoding"]["y"]["type"] == "nominal"
    assert rule["encoding"]["x"]["field"] == "mtbf_lower_h"
    assert rule["encoding"]["x2"]["field"] == "mtbf_upper_h"
    assert spec["title"] == "MTBF"
    tips = {t["field"] for t in point["encoding"]["tooltip"]}
    assert {"n_failures", "exposure_h", "mtbf_lower_one_sided_h"} <= tips


def test_mtbf_chart_sorts_by_mtbf_with_lower_bound_for_zero_failures(
    mtbf_frame: pl.DataFrame,
) -> None:
    spec = roundtrip(charts.mtbf_chart(mtbf_frame, group="system"))
    # longest first; system 18 (0 failures) ranks by its lower bound 1303 h
    assert spec["layer"][1]["encoding"]["y"]["sort"] == ["18", "7", "20", "2"]
    rows = {r["system"]: r for r in dataset(spec)}
    assert rows["18"]["value_kind"] == "lower bound only (0 failures)"
    assert rows["18"]["shown_h"] == 1303.0
    assert rows["18"]["mtbf_h"] is None
    assert rows["2"]["shown_h"] == 100.0
    assert rows["2"]["value_kind"] == "estimate"
    shape = spec["layer"][1]["encoding"]["shape"]["scale"]
    marker = dict(zip(shape["domain"], shape["range"], strict=True))
    assert marker == {
        "estimate": "circle",
        "lower bound only (0 failures)": "triangle-right",
    }
    # the interval layer draws estimates only
    assert spec["layer"][0]["transform"] == [
        {"filter": "(datum.value_kind === 'estimate')"}
    ]


def test_mtbf_chart_confidence_in_legend(mtbf_frame: pl.DataFrame) -> None:
    spec = roundtrip(charts.mtbf_chart(mtbf_frame, group="system", confidence=0.9))
    assert spec["layer"][1]["encoding"]["shape"]["scale"]["domain"][0] == (
        "estimate (90% CI)"
    )
    with pytest.raises(InvalidParameterError, match="confidence"):
        charts.mtbf_chart(mtbf_frame, group="system", confidence=90)


def test_mtbf_chart_errors(mtbf_frame: pl.DataFrame) -> None:
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['root_cause'\]"):
        charts.mtbf_chart(mtbf_frame, group="root_cause")
    with pytest.raises(SchemaError, match="mtbf_upper_h"):
        charts.mtbf_chart(mtbf_frame.drop("mtbf_upper_h"), group="system")
    big = pl.concat([mtbf_frame] * 1251)  # 5,004 rows
    with pytest.raises(SchemaError, match=r"5,004 rows; at most 5,000"):
        charts.mtbf_chart(big, group="system")


# --- TBF histogram -----------------------------------------------------------


def test_ref_tbf_histogram_density_by_hand() -> None:
    """Hand computation: gaps 1, 2, 4 h → 5 bins of 0.8 h on [0, 4]; each hit bin
    has density 1 / (3 × 0.8) = 0.41667 /h; the censored 9 h gap is left out."""
    tbf = pl.DataFrame(
        {
            "unit_id": ["a"] * 4,
            "entry_h": [0.0] * 4,
            "stop_h": [1.0, 2.0, 4.0, 9.0],
            "observed": [True, True, True, False],
        }
    )
    dens = pl.DataFrame({"model": ["exponential"], "time_h": [1.0], "density": [0.2]})
    spec = roundtrip(charts.tbf_histogram_chart(tbf, dens))
    bars = [r for r in dataset(spec) if r["series"] == "observed gaps"]
    assert [r["bin_start_h"] for r in bars] == pytest.approx([0, 0.8, 1.6, 2.4, 3.2])
    assert [r["density"] for r in bars] == pytest.approx(
        [0, 1 / 2.4, 1 / 2.4, 0, 1 / 2.4]
    )


def test_tbf_histogram_integrates_to_one_and_faceted(tbf_and_density) -> None:
    tbf, density = tbf_and_density
    spec = roundtrip(charts.tbf_histogram_chart(tbf, density, title="TBF"))
    assert spec["facet"]["row"]["field"] == "system"
    assert spec["title"] == "TBF"
    rows = pl.DataFrame(dataset(spec))
    bars = rows.filter(pl.col("series") == "observed gaps")
    area = bars.group_by("system").agg(
        ((pl.col("bin_end_h") - pl.col("bin_start_h")) * pl.col("density"))
        .sum()
        .alias("area")
    )
    assert area["area"].to_list() == pytest.approx([1.0, 1.0])
    assert bars.group_by("system").len()["len"].max() <= 60
    assert rows.height <= charts.MAX_ROWS
    bar, line = spec["spec"]["layer"]
    assert bar["mark"]["type"] == "rect"
    assert line["mark"]["type"] == "line"
    assert bar["encoding"]["x"]["title"] == "Time between failures (h)"
    assert line["encoding"]["x"]["title"].endswith("(h)")
    assert line["encoding"]["color"] == {
        "field": "model",
        "title": "Fitted model",
        "type": "nominal",
    }
    assert line["encoding"]["y"]["title"] == "Density (1/h)"


def test_tbf_histogram_log_bins(tbf_and_density) -> None:
    tbf, density = tbf_and_density
    one = tbf.filter(pl.col("system") == "a")
    spec = roundtrip(
        charts.tbf_histogram_chart(
            one, density.filter(pl.col("system") == "a"), binning="log", max_bins=12
        )
    )
    assert "facet" not in spec
    assert spec["layer"][0]["encoding"]["x"]["scale"] == {"type": "log"}
    bars = [r for r in dataset(spec) if r["series"] == "observed gaps"]
    assert len(bars) == 12
    ratios = [r["bin_end_h"] / r["bin_start_h"] for r in bars]
    assert ratios == pytest.approx([ratios[0]] * 12)  # equal on a log scale
    observed = one.filter("observed")["stop_h"]
    assert bars[0]["bin_start_h"] == pytest.approx(observed.min())
    assert bars[-1]["bin_end_h"] == pytest.approx(observed.max())


def test_tbf_histogram_errors(tbf_and_density) -> None:
    tbf, density = tbf_and_density
    with pytest.raises(SchemaError, match="observed"):
        charts.tbf_histogram_chart(tbf.drop("observed"), density)
    with pytest.raises(InvalidParameterError, match="binning"):
        charts.tbf_histogram_chart(tbf, density, binning="sqrt")  # type: ignore[arg-type]
    empty = tbf.filter(pl.lit(value=False))
    with pytest.raises(InsufficientDataError, match="nothing to draw"):
        charts.tbf_histogram_chart(empty, density.clear())
    many = pl.concat([density] * 7)  # 5,600 density rows
    with pytest.raises(SchemaError, match="n_points"):
        charts.tbf_histogram_chart(tbf, many)


# --- Kaplan-Meier ------------------------------------------------------------


def test_kaplan_meier_chart_encodings(km_frame: pl.DataFrame) -> None:
    spec = roundtrip(charts.kaplan_meier_chart(km_frame, color="system", title="KM"))
    band, line = spec["layer"]
    assert band["mark"] == {"type": "area", "interpolate": "step-after", "opacity": 0.2}
    assert line["mark"]["type"] == "line"
    assert line["mark"]["interpolate"] == "step-after"
    assert band["encoding"]["y"]["field"] == "survival_lower"
    assert band["encoding"]["y2"]["field"] == "survival_upper"
    for layer in (band, line):
        enc = layer["encoding"]
        assert enc["x"]["title"] == "Time (h)"
        assert enc["y"]["axis"]["format"] == "%"
        assert enc["y"]["title"] == "S(t) = P(no failure by t)"
        assert enc["y"]["scale"]["domain"] == [0, 1]
        assert enc["color"]["type"] == "nominal"
        assert enc["color"]["field"] == "system"
    rows = dataset(spec)
    assert len(rows) == 8
    assert [r["system"] for r in rows[:4]] == ["18"] * 4  # sorted by group, time


def test_kaplan_meier_chart_without_color_and_errors(km_frame: pl.DataFrame) -> None:
    spec = roundtrip(
        charts.kaplan_meier_chart(km_frame.filter(pl.col("system") == "2"))
    )
    assert "color" not in spec["layer"][1]["encoding"]
    with pytest.raises(SchemaError, match="color='system'"):
        charts.kaplan_meier_chart(km_frame)
    with pytest.raises(SchemaError, match="site"):
        charts.kaplan_meier_chart(km_frame, color="site")
    with pytest.raises(SchemaError, match="5,000"):
        charts.kaplan_meier_chart(pl.concat([km_frame] * 626))


# --- ETTR --------------------------------------------------------------------


def test_ettr_chart_marks_optimum() -> None:
    intervals = np.geomspace(0.01, 100.0, 201)  # 1.0 h is grid point 100
    cost_h, mtbf_h = 0.1, 10.0
    curve = pl.DataFrame(
        {
            "interval_h": intervals,
            "ettr_frac": intervals / (intervals + cost_h) * np.exp(-intervals / mtbf_h),
        }
    )
    spec = roundtrip(charts.ettr_chart(curve, optimum_interval_h=1.0, title="ETTR"))
    line, rule, point, text = spec["layer"]
    assert [line["mark"]["type"], rule["mark"]["type"], point["mark"]["type"]] == [
        "line",
        "rule",
        "point",
    ]
    assert line["encoding"]["x"]["title"] == "Checkpoint interval (h)"
    assert line["encoding"]["x"]["scale"] == {"type": "log"}
    assert line["encoding"]["y"]["title"] == "Expected ETTR"
    assert line["encoding"]["y"]["axis"]["format"] == "%"
    marker = spec["datasets"][point["data"]["name"]][0]
    expected = 1.0 / 1.1 * np.exp(-0.1)
    assert marker["interval_h"] == 1.0
    assert marker["ettr_frac"] == pytest.approx(expected, rel=1e-9)
    assert marker["label"] == f"optimum 1 h: ETTR {expected:.1%}"
    assert text["encoding"]["text"]["field"] == "label"


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_ettr_chart_rejects_bad_optimum(bad: float) -> None:
    curve = pl.DataFrame({"interval_h": [0.1, 1.0], "ettr_frac": [0.5, 0.6]})
    with pytest.raises(InvalidParameterError, match="optimum_interval_h"):
        charts.ettr_chart(curve, optimum_interval_h=bad)


# --- events timeline (case C19) ----------------------------------------------


def test_c19_raw_frame_would_hit_altair_row_limit() -> None:
    """Case C19 as seen with Altair 6.3.0: a 5,001-row frame raises MaxRowsError."""
    events = c19_events()
    with pytest.raises(alt.MaxRowsError, match="5001"):
        alt.Chart(events).mark_tick().encode(x="ts:T").to_dict()


@pytest.mark.parametrize("n_rows", [5001, 50_000])
def test_c19_events_timeline_aggregates_and_keeps_totals(n_rows: int) -> None:
    events = c19_events(n_rows)
    assert events.height == n_rows
    spec = roundtrip(charts.events_timeline_chart(events, by="code", bin="day"))
    rows = pl.DataFrame(dataset(spec))
    assert rows.height <= 300  # ≤ 30 UTC days × 10 codes
    assert rows["period_start"].n_unique() == 30
    totals = dict(rows.group_by("code").agg(pl.col("n_events").sum()).iter_rows())
    expected = dict(events.group_by("code").len().iter_rows())
    assert totals == expected
    assert sum(totals.values()) == n_rows
    if n_rows == 5001:
        assert totals["13"] == 501
        assert {v for k, v in totals.items() if k != "13"} == {500}
    # stacked in polars: bars of a day tile [0, day total] without gaps
    for _, day in rows.group_by("period_start"):
        day = day.sort("stack_order")
        assert day["stack_bottom"][0] == 0
        assert day["stack_bottom"][1:].to_list() == day["stack_top"][:-1].to_list()
    # Altair's row limit was not switched off
    assert alt.data_transformers.active == "default"
    assert alt.data_transformers.options.get("max_rows", 5000) == 5000


def test_events_timeline_encodings_are_utc() -> None:
    spec = roundtrip(charts.events_timeline_chart(c19_events(), title="Xid per day"))
    enc = spec["encoding"]
    assert spec["mark"]["type"] == "bar"
    assert enc["x"]["type"] == "temporal"
    assert enc["x"]["scale"] == {"type": "utc"}
    assert enc["x2"]["field"] == "period_end"
    assert enc["y"]["title"] == "Events per day"
    assert enc["color"]["type"] == "nominal"
    assert enc["color"]["field"] == "code"
    # Xid 13 has the most events, the others tie and sort by code text
    assert enc["color"]["sort"][:3] == ["13", "119", "31"]
    first = dataset(spec)[0]
    assert first["period_start"].startswith("2025-04-01T00:00:00")
    assert first["period_label"] == "2025-04-01"


def test_events_timeline_naive_and_other_timezones_are_utc() -> None:
    local = dt.timezone(dt.timedelta(hours=8))
    ev = pl.DataFrame(
        {
            # 2025-04-02 07:00+08:00 is 2025-04-01 23:00 UTC
            "ts": [dt.datetime(2025, 4, 2, 7, tzinfo=local)],
            "code": ["79"],
        }
    )
    rows = dataset(charts.events_timeline_chart(ev).to_dict())
    assert rows[0]["period_label"] == "2025-04-01"
    naive = ev.with_columns(pl.col("ts").dt.replace_time_zone(None))
    rows = dataset(charts.events_timeline_chart(naive).to_dict())
    assert rows[0]["period_label"] == "2025-04-01"


def test_events_timeline_lumps_rare_groups_into_other() -> None:
    events = c19_events()
    spec = roundtrip(charts.events_timeline_chart(events, max_groups=4, bin="week"))
    rows = pl.DataFrame(dataset(spec))
    totals = dict(rows.group_by("code").agg(pl.col("n_events").sum()).iter_rows())
    assert totals == {"13": 501, "119": 500, "31": 500, "other": 3500}
    assert spec["encoding"]["color"]["sort"] == ["13", "119", "31", "other"]
    assert set(rows["period_label"].str.slice(0, 8)) == {"week of "}


def test_events_timeline_too_fine_raises_with_fix() -> None:
    n = 6000
    ev = pl.DataFrame(
        {
            "ts": [T0 + dt.timedelta(hours=k) for k in range(n)],
            "code": ["13"] * n,
        }
    )
    with pytest.raises(SchemaError, match="bin='week'"):
        charts.events_timeline_chart(ev, bin="hour")
    rows = dataset(charts.events_timeline_chart(ev, bin="day").to_dict())
    assert sum(r["n_events"] for r in rows) == n


def test_events_timeline_errors() -> None:
    ev = c19_events(20)
    with pytest.raises(SchemaError, match="xid"):
        charts.events_timeline_chart(ev, by="xid")
    with pytest.raises(InvalidParameterError, match="bin"):
        charts.events_timeline_chart(ev, bin="month")  # type: ignore[arg-type]
    with pytest.raises(SchemaError, match="datetime"):
        charts.events_timeline_chart(ev.with_columns(pl.col("ts").cast(pl.String)))


def test_charts_never_disable_max_rows() -> None:
    """C19: relkit must not switch Altair's row limit off anywhere (every module
    of the relkit package, charts' private modules included)."""
    from pathlib import Path

    import relkit

    files = sorted(Path(relkit.__file__).parent.rglob("*.py"))
    assert any(f.parent.name == "charts" for f in files)
    offending = [str(f) for f in files if "disable_max_rows" in f.read_text("utf-8")]
    assert offending == []


# --- badput waterfall (issue 11 §4) -------------------------------------------

BADPUT_COLUMNS = [
    "badput_init_h",
    "badput_checkpoint_h",
    "badput_restore_h",
    "badput_lost_progress_h",
    "badput_recovery_h",
    "badput_queue_h",
    "badput_other_h",
]


def runs_frame(**runs: dict[str, float | None]) -> pl.DataFrame:
    """One row per run from seconds: wall, productive and badput by short name."""
    rows = []
    for run_id, s in runs.items():
        row = {
            "run_id": run_id,
            "evidence": s.get("evidence", "step log"),
            "wall_h": s["wall"] / 3600,
            "productive_h": s["productive"] / 3600,
            "ettr": s["productive"] / s["wall"],
        }
        for col in BADPUT_COLUMNS:
            short = col.removeprefix("badput_").removesuffix("_h")
            value = s.get(short, 0.0)
            row[col] = None if value is None else value / 3600
        rows.append(row)
    schema = {"run_id": pl.String, "evidence": pl.String}
    schema |= dict.fromkeys(["wall_h", "productive_h", "ettr"], pl.Float64)
    schema |= dict.fromkeys(BADPUT_COLUMNS, pl.Float64)
    return pl.DataFrame(rows, schema=schema)


#: Case C18 (shared/cases/C18-goodput-disruption-rework.jsonl), in seconds.
C18 = {"wall": 64, "productive": 15, "init": 5, "restore": 5, "recovery": 30}
C18 |= {"lost_progress": 9}


def test_ref_c18_badput_waterfall() -> None:
    """C18: 64 s wall = 15 s productive + 5 init + 5 restore + 9 lost progress
    + 30 recovery; ETTR 15/64 = 23.4 %. The bars step down from 64 s to 15 s."""
    spec = roundtrip(charts.badput_waterfall_chart(runs_frame(**{"run-7": C18})))
    bars, text = spec["layer"]
    rows = dataset(spec)
    got = [
        (r["step"], r["kind"], r["low"], r["high"], r["amount"], r["label"])
        for r in rows
    ]
    assert [g[:2] for g in got] == [
        ("wall time", "wall time"),
        ("initialisation", "badput"),
        ("restore", "badput"),
        ("lost progress", "badput"),
        ("recovery", "badput"),
        ("productive", "productive"),
    ]
    expected = [(0, 64, 64), (59, 64, 5), (54, 59, 5), (45, 54, 9), (15, 45, 30)]
    expected.append((0, 15, 15))
    for g, (low, high, amount) in zip(got, expected, strict=True):
        assert g[2:5] == pytest.approx((low, high, amount), abs=1e-9)
    assert [g[5] for g in got] == ["64 s", "−5 s", "−5 s", "−9 s", "−30 s", "15 s"]
    assert [r["step_order"] for r in rows] == list(range(6))
    assert rows[4]["amount_h"] == pytest.approx(30 / 3600)
    assert rows[4]["share_of_wall"] == pytest.approx(30 / 64)
    # zero categories (checkpoint save, queue, other) are left out
    assert not {"checkpoint save", "queue", "other"} & {r["step"] for r in rows}
    assert spec["title"] == {
        "text": "Run run-7: where the wall time went",
        "subtitle": "ETTR 23.4% (productive / wall time); evidence: step log",
    }
    enc = bars["encoding"]
    assert bars["mark"]["type"] == "bar"
    assert (enc["x"]["field"], enc["x2"]["field"]) == ("low", "high")
    assert enc["x"]["title"] == "Wall time (s)"
    assert enc["y"]["sort"] == [r["step"] for r in rows]
    scale = enc["color"]["scale"]
    assert dict(zip(scale["domain"], scale["range"], strict=True)) == {
        "wall time": "#4c78a8",
        "badput": "#e45756",
        "productive": "#54a24b",
    }
    assert text["mark"]["type"] == "text"
    assert text["encoding"]["text"]["field"] == "label"
    assert text["encoding"]["x"]["field"] == "high"


def test_badput_waterfall_unmeasured_category_is_unaccounted() -> None:
    """A null category is not measured: its time is the grey 'unaccounted' bar,
    so the bars still step down from wall time to productive time."""
    run = C18 | {"lost_progress": None}
    rows = dataset(charts.badput_waterfall_chart(runs_frame(r=run)).to_dict())
    by_step = {r["step"]: r for r in rows}
    assert "lost progress" not in by_step
    gap = by_step["unaccounted"]
    assert gap["kind"] == "unaccounted"
    assert (gap["low"], gap["high"]) == pytest.approx((15, 24))
    assert gap["label"] == "−9 s"
    assert [r["step"] for r in rows][-2:] == ["unaccounted", "productive"]


def test_badput_waterfall_refuses_time_counted_twice() -> None:
    with pytest.raises(SchemaError, match=r"exceeds wall_h .* counted twice"):
        charts.badput_waterfall_chart(runs_frame(r=C18 | {"queue": 10}))
    with pytest.raises(SchemaError, match="badput_restore_h = -"):
        charts.badput_waterfall_chart(runs_frame(r=C18 | {"restore": -5}))


def test_badput_waterfall_several_runs_and_units() -> None:
    two = runs_frame(
        a=C18,
        b={"wall": 7200, "productive": 3600, "queue": 1800, "other": None},
    )
    chart = charts.badput_waterfall_chart(two, title="Runs")
    spec = roundtrip(chart)
    assert spec["title"] == "Runs"
    assert spec["resolve"]["scale"] == {"x": "independent", "y": "independent"}
    first, second = spec["vconcat"]
    assert first["title"]["text"] == "Run a: where the wall time went"
    assert second["title"]["subtitle"].startswith("ETTR 50.0%")
    # auto unit: the longest wall time is 2 h, so hours for both runs
    assert first["layer"][0]["encoding"]["x"]["title"] == "Wall time (h)"
    rows_b = spec["datasets"][second["data"]["name"]]
    assert [(r["step"], r["label"]) for r in rows_b] == [
        ("wall time", "2 h"),
        ("queue", "−0.5 h"),
        ("unaccounted", "−0.5 h"),
        ("productive", "1 h"),
    ]
    # one colour legend for all runs: the union of kinds, fixed colours
    for sub in (first, second):
        assert sub["layer"][0]["encoding"]["color"]["scale"]["domain"] == [
            "wall time",
            "badput",
            "unaccounted",
            "productive",
        ]
    one = charts.badput_waterfall_chart(two, run_id="a", unit="min", title="C18")
    spec = roundtrip(one)
    assert spec["title"]["text"] == "C18"
    assert [r["label"] for r in dataset(spec)][:2] == ["1.07 min", "−0.0833 min"]
    # auto unit: minutes under 2 h of wall time
    hour = runs_frame(c={"wall": 3600, "productive": 3000, "other": 600})
    spec = charts.badput_waterfall_chart(hour).to_dict()
    assert spec["layer"][0]["encoding"]["x"]["title"] == "Wall time (min)"
    assert [r["label"] for r in dataset(spec)] == ["60 min", "−10 min", "50 min"]


def test_badput_waterfall_caps_runs_and_errors() -> None:
    many = runs_frame(**{f"run-{k:02d}": C18 for k in range(13)})
    with pytest.raises(SchemaError, match=r"13 runs; at most 12 .* run_id="):
        charts.badput_waterfall_chart(many)
    spec = charts.badput_waterfall_chart(many, max_runs=13).to_dict()
    assert len(spec["vconcat"]) == 13
    assert dataset(charts.badput_waterfall_chart(many, run_id="run-03").to_dict())
    with pytest.raises(InvalidParameterError, match="no run 'run-99'"):
        charts.badput_waterfall_chart(many, run_id="run-99")
    with pytest.raises(SchemaError, match=r"repeated: \['a'\]"):
        charts.badput_waterfall_chart(runs_frame(a=C18).vstack(runs_frame(a=C18)))
    with pytest.raises(SchemaError, match="badput_queue_h"):
        charts.badput_waterfall_chart(many.drop("badput_queue_h"))
    with pytest.raises(InsufficientDataError, match="no rows"):
        charts.badput_waterfall_chart(many.clear())
    with pytest.raises(InvalidParameterError, match="unit"):
        charts.badput_waterfall_chart(many, run_id="run-00", unit="d")  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="max_runs"):
        charts.badput_waterfall_chart(many, max_runs=0)


# --- ETTR against the checkpoint interval, with bounds -------------------------


@pytest.fixture
def banded_curve() -> pl.DataFrame:
    """Kokolis model, 2,000 nodes, u0 = 5 min, w = 0: ETTR 0.9323 at 5 min and
    0.684 at 60 min (shared/reference/ettr_model.csv rows `fixed`), with a band
    from the rate ±15 %."""
    intervals_h = [5 / 60, 0.25, 1.0]

    def ettr(rate: float) -> list[float]:
        return [
            relkit.expected_ettr(
                n_nodes=2000,
                failures_per_node_day=rate,
                restart_h=5 / 60,
                interval_h=dt,
            )
            for dt in intervals_h
        ]

    return pl.DataFrame(
        {
            "interval_h": [1.0, 5 / 60, 0.25],  # unsorted on purpose
            "ettr": [ettr(6.5e-3)[i] for i in (2, 0, 1)],
            "ettr_lower": [ettr(6.5e-3 * 1.15)[i] for i in (2, 0, 1)],
            "ettr_upper": [ettr(6.5e-3 * 0.85)[i] for i in (2, 0, 1)],
        }
    )


def test_ettr_interval_chart_band_measured_and_optimum(banded_curve) -> None:
    chart = charts.ettr_interval_chart(
        banded_curve,
        operating_point=(0.5, 0.80),
        optimum=(5 / 60, 0.9323),
        title="ETTR vs interval",
    )
    spec = roundtrip(chart)
    band, line, rule, point, text = spec["layer"]
    assert [lay["mark"]["type"] for lay in spec["layer"]] == [
        "area",
        "line",
        "rule",
        "point",
        "text",
    ]
    assert spec["title"] == "ETTR vs interval"
    for layer in (band, line, rule, point, text):
        x = layer["encoding"]["x"]
        assert x["field"] == "interval_min"
        assert x["scale"] == {"type": "log"}
        assert x["title"] == "Checkpoint interval (min)"
    assert (band["encoding"]["y"]["field"], band["encoding"]["y2"]["field"]) == (
        "ettr_lower",
        "ettr_upper",
    )
    assert line["encoding"]["y"]["field"] == "ettr"
    assert line["encoding"]["y"]["axis"]["format"] == "%"
    curve = spec["datasets"][line["data"]["name"]]
    assert band["data"] == line["data"]
    assert [r["interval_min"] for r in curve] == pytest.approx([5, 15, 60])
    assert curve[0]["ettr"] == pytest.approx(0.9323, abs=5e-5)
    assert curve[2]["ettr"] == pytest.approx(0.684, abs=5e-4)
    for r in curve:
        assert r["ettr_lower"] < r["ettr"] < r["ettr_upper"]
    marks = spec["datasets"][point["data"]["name"]]
    assert [(m["kind"], m["interval_min"], m["ettr"], m["label"]) for m in marks] == [
        ("measured", 30.0, 0.80, "measured 30 min: ETTR 80.0%"),
        ("optimum", pytest.approx(5.0), 0.9323, "optimum 5 min: ETTR 93.2%"),
    ]
    # the rule stands at the optimum only
    assert [m["kind"] for m in spec["datasets"][rule["data"]["name"]]] == ["optimum"]
    assert rule["mark"]["strokeDash"] == [4, 3]
    shape = point["encoding"]["shape"]["scale"]
    assert dict(zip(shape["domain"], shape["range"], strict=True)) == {
        "measured": "diamond",
        "optimum": "circle",
    }
    assert point["encoding"]["color"]["field"] == "kind"
    assert text["encoding"]["text"]["field"] == "label"


def test_ettr_interval_chart_reads_ettr_curve_output() -> None:
    """relkit.checkpoint.ettr_curve names its column ettr_frac: read as ettr."""
    curve = relkit.ettr_curve(
        n_nodes=2000,
        failures_per_node_day=6.5e-3,
        restart_h=5 / 60,
        cost_h=0.0,
        intervals_h=[5 / 60, 1.0],
    )
    spec = roundtrip(charts.ettr_interval_chart(curve))
    assert [lay["mark"]["type"] for lay in spec["layer"]] == ["line"]
    rows = dataset(spec)
    assert [r["ettr"] for r in rows] == curve["ettr_frac"].to_list()
    only_measured = charts.ettr_interval_chart(curve, operating_point=(1.0, 0.7))
    spec = roundtrip(only_measured)
    assert [lay["mark"]["type"] for lay in spec["layer"]] == ["line", "point", "text"]


def test_ettr_interval_chart_errors(banded_curve) -> None:
    with pytest.raises(SchemaError, match="both ettr_lower and ettr_upper"):
        charts.ettr_interval_chart(banded_curve.drop("ettr_upper"))
    with pytest.raises(SchemaError, match=r"fraction in \[0, 1\].*Divide"):
        charts.ettr_interval_chart(
            banded_curve.with_columns(pl.col("ettr", "ettr_upper") * 100)
        )
    swapped = banded_curve.rename({"ettr_lower": "ettr_upper", "ettr_upper": "x"})
    with pytest.raises(SchemaError, match="contain its estimate"):
        charts.ettr_interval_chart(swapped.rename({"x": "ettr_lower"}))
    with pytest.raises(SchemaError, match="interval_h"):
        charts.ettr_interval_chart(banded_curve.drop("interval_h"))
    with pytest.raises(InsufficientDataError, match="no row with interval_h > 0"):
        charts.ettr_interval_chart(banded_curve.with_columns(interval_h=pl.lit(0.0)))
    with pytest.raises(SchemaError, match="5,000"):
        charts.ettr_interval_chart(pl.concat([banded_curve] * 1667))
    for bad, match in [
        ((0.0, 0.5), "operating_point"),
        ((1.0, 1.5), r"operating_point\[1\] \(ettr\)"),
        ((1.0,), "must be \\(interval_h, ettr\\)"),
        (0.5, "must be \\(interval_h, ettr\\)"),
        ((1.0, "high"), "must be \\(interval_h, ettr\\)"),
    ]:
        with pytest.raises(InvalidParameterError, match=match):
            charts.ettr_interval_chart(banded_curve, operating_point=bad)  # type: ignore[arg-type]
    with pytest.raises(InvalidParameterError, match="optimum"):
        charts.ettr_interval_chart(banded_curve, optimum=(float("nan"), 0.9))


# --- expected ETTR against GPU count, with published points --------------------


@pytest.fixture
def scale_sweep() -> pl.DataFrame:
    """Kokolis model (r_f = 6.5e-3, u0 = 5 min, w = 0) at two intervals, 1,024 to
    131,072 GPUs, with a ±0.02 band."""
    rows = []
    for rule, dt_h in (("60 min", 1.0), ("5 min", 5 / 60)):
        for k in range(10, 18):
            e = relkit.expected_ettr(
                n_nodes=2**k // 8,
                failures_per_node_day=6.5e-3,
                restart_h=5 / 60,
                interval_h=dt_h,
            )
            rows.append(
                {
                    "interval_rule": rule,
                    "gpus": 2**k,
                    "expected_ettr": e,
                    "expected_ettr_lower": max(0.0, e - 0.02),
                    "expected_ettr_upper": min(1.0, e + 0.02),
                }
            )
    return pl.DataFrame(rows)


def test_ettr_scale_chart_lines_band_and_published(scale_sweep) -> None:
    from relkit.published import PUBLISHED_ETTR_POINTS

    spec = roundtrip(
        charts.ettr_scale_chart(
            scale_sweep,
            series="interval_rule",
            published=PUBLISHED_ETTR_POINTS,
            title="ETTR at scale",
        )
    )
    band, line, points = spec["layer"]
    assert [lay["mark"]["type"] for lay in spec["layer"]] == ["area", "line", "point"]
    assert spec["title"] == "ETTR at scale"
    for layer in (band, line, points):
        x = layer["encoding"]["x"]
        assert x["field"] == "gpus"
        assert x["scale"] == {"type": "log", "base": 2, "domain": [1024, 131072]}
        assert x["axis"]["values"] == [2**k for k in range(10, 18)]
        assert x["title"] == "GPUs (log scale, base 2)"
        assert layer["encoding"]["y"]["title"] == "Expected ETTR"
        assert layer["encoding"]["y"]["axis"]["format"] == "%"
    assert line["mark"]["point"] is True
    assert line["encoding"]["color"]["field"] == "interval_rule"
    assert band["encoding"]["color"]["field"] == "interval_rule"
    assert (band["encoding"]["y"]["field"], band["encoding"]["y2"]["field"]) == (
        "expected_ettr_lower",
        "expected_ettr_upper",
    )
    sweep = spec["datasets"][line["data"]["name"]]
    assert len(sweep) == 16
    assert [r["interval_rule"] for r in sweep[:8]] == ["5 min"] * 8  # sorted
    assert [r["gpus"] for r in sweep[:8]] == [2**k for k in range(10, 18)]
    at_16k = {r["interval_rule"]: r for r in sweep if r["gpus"] == 16384}
    # by hand: 1 - (2048 nodes * 6.5e-3 / 24 h) * (5/60 + 1/2) h = 0.67644
    assert at_16k["60 min"]["expected_ettr"] == pytest.approx(0.67644, abs=1e-5)
    # the published points, exactly as printed, with their sources
    published = spec["datasets"][points["data"]["name"]]
    assert [(r["source"], r["gpus"], r["ettr"], r["kind"]) for r in published] == [
        (
            "Llama 3 (Dubey et al., arXiv:2407.21783)",
            16384,
            0.9,
            "observed, lower bound",
        ),
        ("Kokolis et al., HPCA 2025 (arXiv:2410.21680)", 16000, 0.7, "model"),
        ("Kokolis et al., HPCA 2025 (arXiv:2410.21680)", 16000, 0.93, "model"),
    ]
    assert points["encoding"]["y"]["field"] == "ettr"
    assert points["mark"]["color"] == "black"
    tips = [t["field"] for t in points["encoding"]["tooltip"]]
    assert tips == ["source", "gpus", "ettr", "kind", "note"]
    shape = points["encoding"]["shape"]["scale"]
    assert dict(zip(shape["domain"], shape["range"], strict=True)) == {
        "observed, lower bound": "triangle-up",
        "model": "diamond",
    }


def test_ettr_scale_chart_one_line_and_wide_axis() -> None:
    gpus = [2**k for k in range(3, 21)]  # 8 .. 1,048,576 GPUs
    sweep = pl.DataFrame({"gpus": gpus, "expected_ettr": np.linspace(1, 0.1, 18)})
    spec = roundtrip(charts.ettr_scale_chart(sweep))
    (line,) = spec["layer"]
    assert line["mark"] == {"type": "line", "strokeWidth": 2, "point": True} | {
        "color": "#4c78a8"
    }
    x = line["encoding"]["x"]
    # 18 powers of two: every second one, the axis extended to end on a tick
    assert x["scale"]["domain"] == [8, 2**21]
    assert x["axis"]["values"] == [2**k for k in range(3, 22, 2)]
    assert "color" not in line["encoding"]
    assert [r["gpus"] for r in dataset(spec)] == gpus
    # a published point outside the sweep widens the axis to its power of two
    far = pl.DataFrame(
        {"source": ["s"], "gpus": [3_000_000], "ettr": [0.5], "kind": ["k"]}
    ).with_columns(note=pl.lit("n"))
    spec = roundtrip(charts.ettr_scale_chart(sweep, published=far))
    x = spec["layer"][0]["encoding"]["x"]
    assert x["scale"]["domain"] == [8, 2**23]  # 2**22 > 3e6, step 2
    assert x["axis"]["values"][-1] == 2**23
    shape = spec["layer"][1]["encoding"]["shape"]["scale"]
    assert (shape["domain"], shape["range"]) == (["k"], ["square"])


def test_ettr_scale_chart_errors(scale_sweep) -> None:
    with pytest.raises(SchemaError, match="series='interval_rule'"):
        charts.ettr_scale_chart(scale_sweep)
    with pytest.raises(SchemaError, match="both expected_ettr_lower"):
        charts.ettr_scale_chart(
            scale_sweep.drop("expected_ettr_lower"), series="interval_rule"
        )
    with pytest.raises(SchemaError, match=r"fraction in \[0, 1\]"):
        charts.ettr_scale_chart(
            scale_sweep.with_columns(pl.col("expected_ettr") * 100).drop(
                "expected_ettr_lower", "expected_ettr_upper"
            ),
            series="interval_rule",
        )
    with pytest.raises(SchemaError, match="'rule'"):
        charts.ettr_scale_chart(scale_sweep, series="rule")
    published = pl.DataFrame(
        {"source": ["s"], "gpus": [1024], "ettr": [90.0], "kind": ["k"], "note": ["n"]}
    )
    with pytest.raises(SchemaError, match=r"published.*fraction"):
        charts.ettr_scale_chart(
            scale_sweep, series="interval_rule", published=published
        )
    with pytest.raises(SchemaError, match=r"published.*note"):
        charts.ettr_scale_chart(
            scale_sweep, series="interval_rule", published=published.drop("note")
        )
    with pytest.raises(InsufficientDataError, match="gpus > 0"):
        charts.ettr_scale_chart(scale_sweep.with_columns(gpus=pl.lit(0)))


@settings(max_examples=30, deadline=None)
@given(
    badput=st.lists(st.one_of(st.none(), st.floats(0, 50)), min_size=7, max_size=7),
    productive=st.floats(0, 100),
    extra=st.floats(0, 20),
)
def test_prop_waterfall_steps_down_from_wall_to_productive(
    badput: list[float | None], productive: float, extra: float
) -> None:
    """Every bar starts where the previous badput bar ended; the amounts below
    wall time add up to it; the last bar is the productive time."""
    known = sum(b for b in badput if b is not None)
    run = {"wall": productive + known + extra, "productive": productive}
    run |= {
        c.removeprefix("badput_").removesuffix("_h"): b
        for c, b in zip(BADPUT_COLUMNS, badput, strict=True)
    }
    if run["wall"] == 0:
        return
    rows = dataset(charts.badput_waterfall_chart(runs_frame(r=run)).to_dict())
    wall, *steps, last = rows
    assert (wall["step"], last["step"]) == ("wall time", "productive")
    assert last["high_h"] == pytest.approx(productive / 3600, abs=1e-12)
    top = wall["high_h"]
    for step in steps:
        assert step["high_h"] == pytest.approx(top, abs=1e-12)
        assert step["amount_h"] > 0
        top = step["low_h"]
    # an unattributed residue within the chart's tolerance (1e-6 of wall time,
    # badput_waterfall_chart's docstring) is not a bar: Hypothesis found wall =
    # productive + 1e-5 s, a residue of 2.8e-9 h
    tolerance = 1e-6 * wall["high_h"] + 1e-12
    assert top == pytest.approx(productive / 3600, abs=tolerance)
    assert sum(s["amount_h"] for s in steps) + last["amount_h"] == pytest.approx(
        wall["amount_h"], abs=tolerance
    )


def test_kaplan_meier_legend_lists_systems_in_natural_order() -> None:
    """Systems 2, 10 and 18 appear in the legend as 2, 10, 18, not text order 10, 18, 2.

    The LANL report draws one curve per system; text order put 10 and 18 before 2
    (issue 14 §2: "system ids sort naturally everywhere").
    """
    import polars as pl

    from relkit.charts import kaplan_meier_chart

    km = pl.DataFrame(
        {
            "system": ["10", "10", "2", "2", "18", "18"],
            "time_h": [0.0, 5.0, 0.0, 3.0, 0.0, 7.0],
            "survival": [1.0, 0.5, 1.0, 0.4, 1.0, 0.6],
            "survival_lower": [1.0, 0.3, 1.0, 0.2, 1.0, 0.4],
            "survival_upper": [1.0, 0.7, 1.0, 0.6, 1.0, 0.8],
            "n_at_risk": [4, 2, 5, 3, 6, 4],
        }
    )
    spec = kaplan_meier_chart(km, color="system").to_dict()
    for layer in spec["layer"]:
        assert layer["encoding"]["color"]["sort"] == ["2", "10", "18"]
