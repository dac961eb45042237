"""Every public chart builder, read through ``to_dict()`` (issue 14 §3).

The builders are enumerated from ``relkit.charts.__all__``: a builder without
a row in :data:`CASES` fails :func:`test_every_builder_has_a_case`, so a new
one is covered by adding one row (a function that builds its arguments for
``n`` input rows). For each builder, on a frame shaped like what relkit's
analysis functions return (most are those functions' own output on simulated
lives), the spec must have a title, every drawn x/y axis a title, and every
quantitative axis title a unit; and a frame of more than ``MAX_ROWS`` rows
must be aggregated or thinned below the limit, or refused with relkit's error
(never embedded over it).
"""

import datetime as dt
import inspect
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import altair as alt
import numpy as np
import polars as pl
import pytest
from scipy import stats

from relkit import charts
from relkit.checkpoint import ettr_curve
from relkit.errors import InvalidParameterError, SchemaError
from relkit.repairable import crow_amsaa, mean_cumulative_function
from relkit.scale import scale_projection
from relkit.survival import cumulative_incidence, kaplan_meier, probability_plot

T0 = dt.datetime(2025, 4, 1, tzinfo=dt.UTC)
BIG = charts.MAX_ROWS + 1_000

Args = tuple[tuple[Any, ...], dict[str, Any]]


# --- representative inputs, n rows each ------------------------------------


def _lives(n: int, seed: int = 3) -> pl.DataFrame:
    """Weibull(0.8) lives, scale 500 h, censored uniformly in [0, 1500] h,
    in two racks and three failure modes (the shape of build_tbf_table)."""
    rng = np.random.default_rng(seed)
    life = 500.0 * rng.weibull(0.8, n)
    cens = rng.uniform(0, 1500, n)
    return pl.DataFrame(
        {
            "stop_h": np.minimum(life, cens),
            "observed": life <= cens,
            "rack": rng.choice(["r01", "r02"], n),
            "failure_mode": np.where(
                life <= cens, rng.choice(["gpu/xid79", "gpu/xid48", "nvlink"], n), None
            ),
        }
    )


def _repair_events(n: int) -> tuple[pl.DataFrame, pl.DataFrame]:
    """n failures spread over 20 nodes observed for 2,000 h (power-law arrivals)."""
    rng = np.random.default_rng(5)
    units = pl.DataFrame(
        {"unit_id": [f"n{k:02d}" for k in range(20)], "exit_h": [2000.0] * 20}
    )
    events = pl.DataFrame(
        {
            "unit_id": [f"n{k % 20:02d}" for k in range(n)],
            "time_h": np.sort(2000.0 * rng.random(n) ** 0.7),
        }
    )
    return events, units


def mtbf_args(n: int) -> Args:
    rng = np.random.default_rng(1)
    k = rng.integers(1, 400, n)
    exposure = rng.uniform(1e5, 1e6, n)
    chi = stats.chi2
    frame = pl.DataFrame(
        {
            "system": [str(i + 2) for i in range(n)],
            "n_failures": k,
            "exposure_h": exposure,
            "mtbf_h": exposure / k,
            "mtbf_lower_h": 2 * exposure / chi.ppf(0.95, 2 * k + 2),
            "mtbf_upper_h": 2 * exposure / chi.ppf(0.05, 2 * k),
            "mtbf_lower_one_sided_h": 2 * exposure / chi.ppf(0.9, 2 * k + 2),
        }
    )
    return (frame,), {"group": "system", "confidence": 0.9}


def tbf_args(n: int) -> Args:
    lives = _lives(n).select("stop_h", "observed", "rack")
    t = np.linspace(1.0, 1500.0, 200)
    density = pl.concat(
        [
            pl.DataFrame(
                {
                    "rack": r,
                    "model": m,
                    "time_h": t,
                    "density": stats.weibull_min.pdf(t, 0.8, scale=500.0),
                }
            )
            for r in ("r01", "r02")
            for m in ("exponential", "weibull")
        ]
    )
    return (lives, density), {}


def km_args(n: int) -> Args:
    """relkit.survival.kaplan_meier by rack; it thins itself to MAX_ROWS, so
    the too-long input repeats its steps."""
    km = kaplan_meier(_lives(n), by=["rack"])
    if n > charts.MAX_ROWS:
        km = pl.concat([km] * (n // km.height + 1)).head(n)
    return (km,), {"color": "rack"}


def hazard_args(n: int) -> Args:
    t = np.linspace(1.0, 1500.0, max(n // 2, 2))
    frame = pl.concat(
        [
            pl.DataFrame(
                {
                    "rack": r,
                    "model": "weibull",
                    "time_h": t,
                    "hazard_per_h": 0.8 / 500 * (t / 500) ** -0.2 * f,
                }
            )
            for r, f in (("r01", 1.0), ("r02", 1.5))
        ]
    )
    return (frame,), {"color": "rack"}


def probability_args(n: int) -> Args:
    lives = _lives(2 * n)  # about half are failures, the plot's points
    return (probability_plot(lives, model="weibull", by=["rack"]),), {"color": "rack"}


def cif_args(n: int) -> Args:
    lives = _lives(n).with_columns(pl.col("failure_mode").fill_null("censored"))
    lives = lives.with_columns(
        failure_mode=pl.when("observed").then("failure_mode").otherwise(None)
    )
    return (cumulative_incidence(lives, mode="failure_mode"),), {}


def forest_args(n: int) -> Args:
    levels = [f"r{k:02d}" for k in range(max(n, 2))]
    rng = np.random.default_rng(2)
    hr = rng.lognormal(0, 0.4, len(levels))
    frame = pl.DataFrame(
        {
            "covariate": "rack",
            "level": levels,
            "reference": "r00",
            "hazard_ratio": hr,
            "lower": hr * 0.7,
            "upper": hr * 1.4,
            "p_value": rng.random(len(levels)),
            "n_units": 50,
            "n_events": 20,
            "status": "ok",
        }
    )
    return (frame,), {}


def mcf_args(n: int) -> Args:
    return (mean_cumulative_function(*_repair_events(n)),), {}


def crow_amsaa_args(n: int) -> Args:
    events, units = _repair_events(n)
    return (mean_cumulative_function(events, units), crow_amsaa(events, units)), {}


def lemon_args(n: int) -> Args:
    rng = np.random.default_rng(4)
    k = rng.poisson(3.0, n)
    k[:3] = [25, 18, 14]
    expected = np.full(n, 3.0)
    p = np.where(k > 0, stats.poisson.sf(k - 1, expected), 1.0)
    q = stats.false_discovery_control(p, method="bh")
    frame = pl.DataFrame(
        {
            "host": [f"gpu-node-{i:04d}" for i in range(n)],
            "n_failures": k,
            "exposure_h": 720.0,
            "expected": expected,
            "p_value": p,
            "q_value": q,
            "lemon": q <= 0.05,
            "modes": [f"gpu/xid79×{j}" if j else "" for j in k],
            "n_devices": np.minimum(k, 8),
        }
    )
    return (frame,), {"fdr": 0.05}


def _intervals(n: int) -> np.ndarray:
    return np.geomspace(1 / 60, 24.0, max(n, 3))


def ettr_args(n: int) -> Args:
    """relkit.checkpoint.ettr_curve (2,000 nodes, 6.5e-3 failures per node-day);
    beyond its 400 intervals the same curve is concatenated (a too-long input)."""
    curve = ettr_curve(
        n_nodes=2000,
        failures_per_node_day=6.5e-3,
        restart_h=5 / 60,
        cost_h=1 / 60,
        intervals_h=_intervals(min(n, 400)),
    )
    if n > 400:
        curve = pl.concat([curve] * (n // curve.height + 1)).head(n)
    return (curve,), {"optimum_interval_h": 0.5}


def ettr_interval_args(n: int) -> Args:
    curve, _ = ettr_args(n)
    return curve, {"operating_point": (0.25, 0.9), "optimum": (0.5, 0.93)}


def ettr_scale_args(n: int) -> Args:
    gpus = np.unique(np.geomspace(1024, 131072, max(n, 2)).astype(int))
    sweep = pl.DataFrame(
        {"gpus": gpus, "expected_ettr": np.exp(-gpus / 4e5)},
        schema_overrides={"gpus": pl.Int64},
    )
    return (sweep,), {}


def timeline_args(n: int) -> Args:
    step = 30 * 86400 / n  # a month of events
    frame = pl.DataFrame(
        {
            "ts": [T0 + dt.timedelta(seconds=k * step) for k in range(n)],
            "code": [str([13, 31, 48, 79, 94][k % 5]) for k in range(n)],
        },
        schema_overrides={"ts": pl.Datetime("us", "UTC")},
    )
    return (frame,), {}


def waterfall_args(n: int) -> Args:
    rows = max(n, 1)
    frame = pl.DataFrame(
        {
            "run_id": [f"run-{k}" for k in range(rows)],
            "evidence": "step records",
            "wall_h": 1296.0,
            "productive_h": 1260.0,
            "ettr_frac": 1260.0 / 1296.0,
            "badput_init_h": 0.05,
            "badput_checkpoint_h": 14.05,
            "badput_restore_h": 4.85,
            "badput_lost_progress_h": 5.9,
            "badput_recovery_h": 0.0,
            "badput_queue_h": 11.15,
            "badput_other_h": 0.0,
        }
    )
    return (frame,), {"run_id": "run-0"}


def heatmap_args(n: int) -> Args:
    step = 54 * 86400 / n
    frame = pl.DataFrame(
        {
            "start_ts": [T0 + dt.timedelta(seconds=k * step) for k in range(n)],
            "host": [f"gpu-node-{(k * 7) % 264:03d}" for k in range(n)],
        },
        schema_overrides={"start_ts": pl.Datetime("us", "UTC")},
    )
    return (frame,), {}


def pareto_args(n: int) -> Args:
    rows = max(n, 2)
    frame = pl.DataFrame(
        {
            "cause": [f"cause {k:04d}" for k in range(rows)],
            "interruptions": np.arange(rows, 0, -1),
        }
    )
    return (frame,), {}


def mttf_scale_args(n: int) -> Args:
    gpus = np.unique(np.geomspace(8, 131072, max(n, 2)).astype(int))
    if n > charts.MAX_ROWS:
        gpus = np.arange(8, 8 * (n + 1), 8)
    return (scale_projection(gpus.tolist(), failures_per_node_day=6.5e-3),), {}


@dataclass(frozen=True)
class Case:
    """How to call one builder; ``small`` rows for the spec checks."""

    build: Callable[[int], Args]
    small: int = 60


#: One row per public builder. Add a row when you add a builder.
CASES: dict[str, Case] = {
    "badput_waterfall_chart": Case(waterfall_args, small=1),
    "crow_amsaa_chart": Case(crow_amsaa_args),
    "cumulative_incidence_chart": Case(cif_args),
    "ettr_chart": Case(ettr_args),
    "ettr_interval_chart": Case(ettr_interval_args),
    "ettr_scale_chart": Case(ettr_scale_args, small=12),
    "events_timeline_chart": Case(timeline_args, small=500),
    "hazard_chart": Case(hazard_args),
    "hazard_ratio_forest_chart": Case(forest_args, small=4),
    "incident_heatmap_chart": Case(heatmap_args, small=200),
    "interruption_pareto_chart": Case(pareto_args, small=6),
    "kaplan_meier_chart": Case(km_args),
    "lemon_ranking_chart": Case(lemon_args, small=200),
    "mcf_chart": Case(mcf_args),
    "mtbf_chart": Case(mtbf_args, small=12),
    "mttf_scale_chart": Case(mttf_scale_args, small=12),
    "probability_plot_chart": Case(probability_args),
    "tbf_histogram_chart": Case(tbf_args, small=400),
}


def _is_builder(name: str) -> bool:
    """A public function of relkit.charts that returns an Altair chart."""
    obj = getattr(charts, name)
    if not callable(obj) or isinstance(obj, type):
        return False
    return "Chart" in str(inspect.signature(obj).return_annotation)


BUILDERS = sorted(n for n in charts.__all__ if _is_builder(n))
COVERED = sorted(set(BUILDERS) & set(CASES))


def test_every_builder_has_a_case() -> None:
    """relkit.charts.__all__ is the list: a new builder needs a row in CASES."""
    assert len(BUILDERS) >= 15, BUILDERS
    assert all(n.endswith("_chart") for n in BUILDERS)
    assert sorted(set(BUILDERS) - set(CASES)) == []
    assert sorted(set(CASES) - set(BUILDERS)) == [], "a row for no public builder"


# --- reading a spec ----------------------------------------------------------


def _views(spec: dict) -> Iterator[dict]:
    """Every (sub)spec that may hold an encoding: layers, concats, facets."""
    yield spec
    for key in ("layer", "vconcat", "hconcat", "concat"):
        for sub in spec.get(key, []):
            yield from _views(sub)
    if isinstance(spec.get("spec"), dict):
        yield from _views(spec["spec"])


def _title_text(title: object) -> str:
    if isinstance(title, dict):
        title = title.get("text", "")
    if isinstance(title, list):
        title = " ".join(map(str, title))
    return str(title or "").strip()


@dataclass(frozen=True)
class Axis:
    """One layer's x or y encoding, as far as its title goes."""

    kind: str  # the encoding type: quantitative, temporal, nominal, ordinal
    title: str  # explicit title text ("" when none)
    hidden: bool  # title set to null on purpose (Altair's title=None)
    percent: bool  # tick labels formatted as % (the unit is on every tick)


def _axis_titles(spec: dict) -> dict[str, list[Axis]]:
    """Per positional channel, every layer's drawn x/y axis.

    A title may sit on the encoding or its ``axis``; ``axis: null`` draws no
    axis (nothing to title). In a layer the explicit title of one layer names
    the shared axis (Vega-Lite prefers explicit titles), so the check asks for
    one title per channel. A title set to null is accepted only on a
    nominal/ordinal axis whose labels are the categories (hosts, steps);
    a missing one would show the raw field name.
    """
    found: dict[str, list[Axis]] = {}
    for view in _views(spec):
        for channel in ("x", "y"):
            enc = view.get("encoding", {}).get(channel)
            if not isinstance(enc, dict) or enc.get("axis", {}) is None:
                continue
            if "field" not in enc and "aggregate" not in enc:
                continue  # a constant (datum/value) position
            axis = enc.get("axis") or {}
            hidden = ("title" in enc and enc["title"] is None) or (
                "title" in axis and axis["title"] is None
            )
            found.setdefault(channel, []).append(
                Axis(
                    kind=enc.get("type", ""),
                    title=_title_text(enc.get("title") or axis.get("title")),
                    hidden=hidden,
                    percent="%" in str(axis.get("format", "")),
                )
            )
    return found


#: A unit in a quantitative axis title: "(h)", "min", "%", "GPUs", "per …",
#: or a unitless quantity named as such (share, count, fraction, ETTR, ratio,
#: probability or a survival/incidence/MCF quantity, whose unit is "per unit").
UNIT = re.compile(
    r"\((?:[^)]*\b(?:h|min|s|days?|%|GPUs?|nodes?|hours?)\b[^)]*)\)"
    r"|\bper\b|/|%|\bGPUs?\b|\bshare\b|\bcount\b|\bnumber\b|\bfraction\b|\bETTR\b"
    r"|\bratio\b|\bprobability\b|\bP\(|\bS\(t\)|\bF\(t\)|\bincidence\b|\bMCF\b"
    r"|\bfailures\b|\binterruptions\b|\bevents\b|\bincidents\b|\bln\b|\blog",
    re.IGNORECASE,
)


def _spec(name: str, n: int) -> dict:
    args, kwargs = CASES[name].build(n)
    return getattr(charts, name)(*args, **kwargs).to_dict()


# --- the checks ----------------------------------------------------------------


#: Builders that draw no title unless given one (issue 14 §2 asks for one on
#: every chart: the report passes it). When a builder gains a default title,
#: remove it here; the test says so.
NO_DEFAULT_TITLE = {
    "crow_amsaa_chart",
    "cumulative_incidence_chart",
    "ettr_chart",
    "ettr_interval_chart",
    "ettr_scale_chart",
    "events_timeline_chart",
    "hazard_chart",
    "hazard_ratio_forest_chart",
    "kaplan_meier_chart",
    "mcf_chart",
    "mtbf_chart",
    "mttf_scale_chart",
    "probability_plot_chart",
    "tbf_histogram_chart",
}


def _titles(spec: dict) -> list[str]:
    return [t for t in (_title_text(v.get("title")) for v in _views(spec)) if t]


@pytest.mark.parametrize("name", COVERED)
def test_spec_has_a_title(name: str) -> None:
    """A title by default, or (listed builders) the one given, at the top."""
    spec = _spec(name, CASES[name].small)
    if name not in NO_DEFAULT_TITLE:
        assert _titles(spec), f"{name}: no chart title"
        return
    assert not _titles(spec), (
        f"{name} now has a default title: drop it from NO_DEFAULT_TITLE"
    )
    args, kwargs = CASES[name].build(CASES[name].small)
    given = getattr(charts, name)(*args, **kwargs, title="Given <title>").to_dict()
    assert _title_text(given.get("title")) == "Given <title>"


@pytest.mark.parametrize("name", COVERED)
def test_spec_axes_have_titles_and_units(name: str) -> None:
    spec = _spec(name, CASES[name].small)
    axes = _axis_titles(spec)
    assert axes, f"{name}: no positional axis drawn"
    for channel, entries in axes.items():
        named = [a.title for a in entries if a.title]
        category = all(a.hidden and a.kind in {"nominal", "ordinal"} for a in entries)
        assert named or category, f"{name}: {channel} axis has no title ({entries})"
        for a in entries:
            if a.kind == "quantitative" and a.title and not a.percent:
                assert UNIT.search(a.title), (
                    f"{name}: {channel} title {a.title!r} names no unit"
                )


def _embedded_rows(spec: dict) -> list[int]:
    """Rows of every dataset embedded in the spec (top-level and inline)."""
    sizes = [len(rows) for rows in spec.get("datasets", {}).values()]
    for view in _views(spec):
        values = view.get("data", {}).get("values") if view.get("data") else None
        if isinstance(values, list):
            sizes.append(len(values))
    return sizes


@pytest.mark.parametrize("name", COVERED)
def test_over_max_rows_is_aggregated_or_refused(name: str) -> None:
    """An input of MAX_ROWS + 1,000 rows never embeds more than MAX_ROWS."""
    args, kwargs = CASES[name].build(BIG)
    big = any(isinstance(a, pl.DataFrame) and a.height > charts.MAX_ROWS for a in args)
    assert big, f"{name}: the big case is under the limit"
    refusal = None
    try:
        chart = getattr(charts, name)(*args, **kwargs)
    except (SchemaError, InvalidParameterError) as err:
        refusal = str(err)
    if refusal is not None:  # refused: the message names the limit
        assert f"{charts.MAX_ROWS:,}" in refusal, f"{name}: {refusal}"
        return
    _assert_within_limit(chart, name)


def _assert_within_limit(chart: alt.TopLevelMixin, name: str) -> None:
    with alt.data_transformers.enable("default"):  # Altair's MaxRowsError applies
        spec = chart.to_dict()
    sizes = _embedded_rows(spec)
    assert sizes, f"{name}: no data embedded"
    assert max(sizes) <= charts.MAX_ROWS, f"{name}: embeds {max(sizes)} rows"


def test_limit_check_catches_an_oversized_chart() -> None:
    """The check above fails on a chart that embeds MAX_ROWS + 1 rows as is."""
    raw = pl.DataFrame({"time_h": np.arange(charts.MAX_ROWS + 1, dtype=float)})
    chart = alt.Chart(raw).mark_tick().encode(x=alt.X("time_h:Q", title="Time (h)"))
    with pytest.raises((alt.MaxRowsError, AssertionError)):
        _assert_within_limit(chart, "raw")


def test_no_disable_max_rows_anywhere() -> None:
    """C19: no module of relkit switches Altair's row limit off."""
    from pathlib import Path

    import relkit

    files = sorted(Path(relkit.__file__).parent.rglob("*.py"))
    assert len(files) > 20
    offending = [f.name for f in files if "disable_max_rows" in f.read_text("utf-8")]
    assert offending == []


@pytest.mark.parametrize(
    ("title", "has_unit"),
    [
        ("Time (h)", True),
        ("Checkpoint interval (min)", True),
        ("MTBF (h, log scale)", True),
        ("Failures per 1,000 node-days", True),
        ("GPUs in the job", True),
        ("Share of wall time", True),
        ("ETTR", True),
        ("Time", False),
        ("MTBF", False),
        ("Checkpoint interval", False),
        ("mtbf_h", False),
    ],
)
def test_unit_pattern(title: str, has_unit: bool) -> None:  # noqa: FBT001
    """The unit check refuses a bare quantity name (or a raw column name)."""
    assert bool(UNIT.search(title)) is has_unit
