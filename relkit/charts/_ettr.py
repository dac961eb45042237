"""ETTR charts: expected ETTR against the checkpoint interval and the GPU count."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from relkit.charts._theme import chart_title, check_rows
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "ettr_chart",
    "ettr_interval_chart",
    "ettr_scale_chart",
]


def _positive(value: float, *, name: str, where: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        msg = f"{where}: {name} must be a finite number > 0; found {value!r}."
        raise InvalidParameterError(msg)
    return value


def ettr_chart(
    curve: pl.DataFrame,
    *,
    optimum_interval_h: float,
    title: str | None = None,
) -> alt.LayerChart:
    """Draw expected ETTR against the checkpoint interval, marking the optimum.

    Parameters
    ----------
    curve : pl.DataFrame
        Output of :func:`relkit.checkpoint.ettr_curve` with columns
        ``interval_h`` (h, > 0) and ``ettr_frac`` (fraction in [0, 1]); at most
        5,000 rows.
    optimum_interval_h : float
        The optimal interval in hours (e.g. ``ETTRModel.optimal_interval_h``),
        marked by a vertical rule and a point on the curve; must be > 0.
    title : str, optional
        Chart title.

    Returns
    -------
    altair.LayerChart
        A line of ``ettr_frac`` (y "Expected ETTR", percent format) against
        ``interval_h`` (log x "Checkpoint interval (h)"), a dashed rule at the
        optimum, a point at the curve's ETTR there (log-linear interpolation)
        and a text label.

    Raises
    ------
    SchemaError
        If a required column is missing or the frame has over 5,000 rows.
    InvalidParameterError
        If ``optimum_interval_h`` is not finite and > 0.
    InsufficientDataError
        If the curve has no row with ``interval_h`` > 0.

    Examples
    --------
    >>> import polars as pl
    >>> curve = pl.DataFrame(
    ...     {"interval_h": [0.1, 1.0, 10.0], "ettr_frac": [0.80, 0.93, 0.70]}
    ... )
    >>> spec = ettr_chart(curve, optimum_interval_h=1.0).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['line', 'rule', 'point', 'text']
    >>> spec["layer"][0]["encoding"]["x"]["scale"]
    {'type': 'log'}
    """
    import altair as alt

    where = "ettr_chart"
    require_columns(curve, ["interval_h", "ettr_frac"], where=where)
    check_rows(
        curve,
        where=where,
        fix="Evaluate the curve on fewer intervals, e.g. "
        "ettr_curve(..., intervals_h=np.geomspace(0.01, 100, 200)).",
    )
    opt = _positive(optimum_interval_h, name="optimum_interval_h", where=where)
    data = (
        curve.select("interval_h", "ettr_frac")
        .filter(pl.col("interval_h") > 0, pl.col("ettr_frac").is_finite())
        .sort("interval_h")
    )
    if data.height == 0:
        msg = (
            f"{where}: the curve has no row with interval_h > 0 ({curve.height} rows)."
        )
        raise InsufficientDataError(msg)
    ettr_opt = float(
        np.interp(
            math.log(opt),
            np.log(data["interval_h"].to_numpy()),
            data["ettr_frac"].to_numpy(),
        )
    )
    marker = pl.DataFrame(
        {
            "interval_h": [opt],
            "ettr_frac": [ettr_opt],
            "label": [f"optimum {_format_hours(opt)}: ETTR {ettr_opt:.1%}"],
        }
    )
    x = alt.X("interval_h:Q").scale(type="log").title("Checkpoint interval (h)")
    y = alt.Y("ettr_frac:Q").axis(format="%").title("Expected ETTR")
    tooltip = [
        alt.Tooltip("interval_h:Q").format(",.3g").title("interval (h)"),
        alt.Tooltip("ettr_frac:Q").format(".2%").title("ETTR"),
    ]
    line = alt.Chart(data).mark_line(strokeWidth=2).encode(x=x, y=y, tooltip=tooltip)
    mark = alt.Chart(marker)
    rule = mark.mark_rule(strokeDash=[4, 3], color="#e45756").encode(x=x)
    point = mark.mark_point(filled=True, size=90, color="#e45756").encode(
        x=x, y=y, tooltip=tooltip
    )
    text = mark.mark_text(align="left", dx=8, dy=-10, color="#e45756").encode(
        x=x, y=y, text="label:N"
    )
    return alt.layer(line, rule, point, text, title=chart_title(title))


def _format_hours(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:.3g} min"
    return f"{hours:.3g} h"


def _check_fractions(
    frame: pl.DataFrame, cols: list[str], *, where: str, hint: str
) -> None:
    for col in cols:
        values = frame[col].drop_nulls()
        bad = values.filter(~(values.is_finite() & (values >= 0) & (values <= 1)))
        if bad.len():
            msg = (
                f"{where}: {col} must be a fraction in [0, 1]; found "
                f"{bad.head(5).to_list()}. {hint}"
            )
            raise SchemaError(msg)


def _band_columns(
    frame: pl.DataFrame, value: str, *, where: str
) -> tuple[str, str] | None:
    lower, upper = f"{value}_lower", f"{value}_upper"
    present = [c for c in (lower, upper) if c in frame.columns]
    if not present:
        return None
    if len(present) == 1:
        msg = (
            f"{where}: a band needs both {lower} and {upper}; the frame has only "
            f"{present[0]}. Add the other bound or drop this one."
        )
        raise SchemaError(msg)
    bad = frame.filter(
        (pl.col(lower) > pl.col(value) + 1e-12)
        | (pl.col(value) > pl.col(upper) + 1e-12)
    )
    if bad.height:
        msg = (
            f"{where}: {bad.height} row(s) have {value} outside "
            f"[{lower}, {upper}], e.g. {bad.head(3).rows(named=True)}; a band must "
            "contain its estimate."
        )
        raise SchemaError(msg)
    return lower, upper


def _point_arg(
    point: tuple[float, float] | None, *, name: str, where: str
) -> tuple[float, float] | None:
    if point is None:
        return None
    try:
        interval, ettr = point
        ettr = float(ettr)
    except (TypeError, ValueError):
        msg = f"{where}: {name} must be (interval_h, ettr); found {point!r}."
        raise InvalidParameterError(msg) from None
    interval_h = _positive(interval, name=f"{name}[0] (interval_h)", where=where)
    if not (math.isfinite(ettr) and 0 <= ettr <= 1):
        msg = f"{where}: {name}[1] (ettr) must be a fraction in [0, 1]; found {ettr!r}."
        raise InvalidParameterError(msg)
    return interval_h, ettr


def ettr_interval_chart(
    curve: pl.DataFrame,
    *,
    operating_point: tuple[float, float] | None = None,
    optimum: tuple[float, float] | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    """Draw ETTR against the checkpoint interval with its band and marked points.

    The curve is a line over a log axis of the interval in minutes, with a
    shaded band between its bounds when the frame has them. A measured
    operating point is a diamond labelled "measured"; the optimum a dashed
    vertical rule and a circle labelled "optimum". Both are drawn where given,
    not read off the curve: a measured ETTR may lie off the model.

    Parameters
    ----------
    curve : pl.DataFrame
        Columns ``interval_h`` (h, > 0; rows <= 0 or null are left out) and
        ``ettr`` (fraction in [0, 1]), optionally ``ettr_lower`` and
        ``ettr_upper`` (both or neither, fractions, lower <= ettr <= upper).
        The output of :func:`relkit.checkpoint.ettr_curve` names its column
        ``ettr_frac``; it is read as ``ettr`` when ``ettr`` is absent. At most
        5,000 rows.
    operating_point : tuple of (float, float), optional
        ``(interval_h, ettr)`` of the run as measured: interval in hours > 0,
        ETTR a fraction in [0, 1].
    optimum : tuple of (float, float), optional
        ``(interval_h, ettr)`` of the optimal interval, e.g.
        ``(m.optimal_interval_h, m.ettr_at_optimal)`` of an
        :class:`relkit.checkpoint.ETTRModel`.
    title : str, optional
        Chart title.

    Returns
    -------
    altair.LayerChart
        Layers in order: ``area`` (the band, only with bounds), ``line``
        (``ettr`` against ``interval_min``), then with ``optimum`` a ``rule``,
        then with either point a ``point`` layer (shape and colour by
        ``kind``: "measured" diamond, "optimum" circle) and a ``text`` layer
        (``label``, e.g. "measured 30 min: ETTR 85.0%"). x "Checkpoint
        interval (min)" on a log scale, y "ETTR" in percent. The curve's
        dataset has ``interval_h``, ``interval_min``, ``ettr`` (and the bounds),
        sorted by interval; the markers' ``kind``, ``interval_h``,
        ``interval_min``, ``ettr``, ``label``.

    Raises
    ------
    SchemaError
        If ``interval_h`` or ``ettr`` is missing, only one bound is present, an
        ETTR value is outside [0, 1] (a percentage?), a band misses its
        estimate, or the frame has over 5,000 rows.
    InvalidParameterError
        If a point is not a pair with interval > 0 and ETTR in [0, 1].
    InsufficientDataError
        If no row has ``interval_h`` > 0 and a finite ETTR.

    Examples
    --------
    >>> import polars as pl
    >>> curve = pl.DataFrame(
    ...     {
    ...         "interval_h": [0.05, 0.25, 1.0],
    ...         "ettr": [0.90, 0.86, 0.70],
    ...         "ettr_lower": [0.88, 0.83, 0.64],
    ...         "ettr_upper": [0.92, 0.89, 0.75],
    ...     }
    ... )
    >>> chart = ettr_interval_chart(
    ...     curve, operating_point=(0.5, 0.80), optimum=(0.05, 0.90)
    ... )
    >>> spec = chart.to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['area', 'line', 'rule', 'point', 'text']
    >>> spec["datasets"][spec["layer"][4]["data"]["name"]][0]["label"]
    'measured 30 min: ETTR 80.0%'
    """
    import altair as alt

    where = "ettr_interval_chart"
    if "ettr" not in curve.columns and "ettr_frac" in curve.columns:
        curve = curve.rename({"ettr_frac": "ettr"})
    require_columns(curve, ["interval_h", "ettr"], where=where)
    check_rows(
        curve,
        where=where,
        fix="Evaluate the curve on fewer intervals, e.g. "
        "np.geomspace(1 / 60, 10, 200) hours.",
    )
    band = _band_columns(curve, "ettr", where=where)
    value_cols = ["ettr", *(band or ())]
    data = (
        curve.select("interval_h", *value_cols)
        .with_columns(pl.col(c).cast(pl.Float64) for c in ["interval_h", *value_cols])
        .filter(
            pl.col("interval_h").is_finite() & (pl.col("interval_h") > 0),
            pl.col("ettr").is_finite(),
        )
        .sort("interval_h")
    )
    _check_fractions(data, value_cols, where=where, hint="Divide percentages by 100.")
    if data.height == 0:
        msg = (
            f"{where}: the curve has no row with interval_h > 0 and a finite ettr "
            f"({curve.height} rows)."
        )
        raise InsufficientDataError(msg)
    data = data.with_columns((pl.col("interval_h") * 60).alias("interval_min"))
    data = data.select("interval_h", "interval_min", *value_cols)
    measured = _point_arg(operating_point, name="operating_point", where=where)
    best = _point_arg(optimum, name="optimum", where=where)
    marks = [
        {
            "kind": kind,
            "interval_h": point[0],
            "interval_min": point[0] * 60,
            "ettr": point[1],
            "label": f"{kind} {_format_hours(point[0])}: ETTR {point[1]:.1%}",
        }
        for kind, point in (("measured", measured), ("optimum", best))
        if point is not None
    ]
    shown_min = [
        *data["interval_min"].to_list(),
        *(p[0] * 60 for p in (measured, best) if p is not None),
    ]
    low, high = min(shown_min), max(shown_min)
    ticks = [  # 1-2-5 steps: a log axis labels every power otherwise, overlapping
        m * 10.0**k
        for k in range(math.floor(math.log10(low)), math.ceil(math.log10(high)) + 1)
        for m in (1, 2, 5)
        if low <= m * 10.0**k <= high
    ]
    x = (
        alt.X("interval_min:Q")
        .scale(type="log")
        .axis(values=ticks or None, labelOverlap="greedy")
        .title("Checkpoint interval (min)")
    )
    # the curve's own range, not 0-100 %: near the optimum it is flat
    y = alt.Y("ettr:Q").scale(zero=False).axis(format="%").title("ETTR")
    tooltip = [
        alt.Tooltip("interval_min:Q").format(",.3g").title("interval (min)"),
        alt.Tooltip("ettr:Q").format(".2%").title("expected ETTR"),
    ]
    layers: list[Any] = []
    if band is not None:
        layers.append(
            alt.Chart(data)
            .mark_area(opacity=0.2, color="#4c78a8")
            .encode(
                x=x,
                y=alt.Y("ettr_lower:Q")
                .scale(zero=False)
                .axis(format="%")
                .title("ETTR"),
                y2="ettr_upper:Q",
                tooltip=[
                    *tooltip,
                    alt.Tooltip("ettr_lower:Q").format(".2%").title("lower"),
                    alt.Tooltip("ettr_upper:Q").format(".2%").title("upper"),
                ],
            )
        )
    layers.append(
        alt.Chart(data)
        .mark_line(strokeWidth=2, color="#4c78a8")
        .encode(x=x, y=y, tooltip=tooltip)
    )
    if marks:
        points = pl.DataFrame(marks)
        kinds = points["kind"].to_list()
        colours = {"measured": "#f58518", "optimum": "#e45756"}
        shapes = {"measured": "diamond", "optimum": "circle"}
        if best is not None:
            layers.append(
                alt.Chart(points.filter(kind="optimum"))
                .mark_rule(strokeDash=[4, 3], color=colours["optimum"])
                .encode(x=x)
            )
        colour = (
            alt.Color("kind:N")
            .scale(domain=kinds, range=[colours[k] for k in kinds])
            .title(None)
            .legend(orient="bottom")
        )
        layers.append(
            alt.Chart(points)
            .mark_point(filled=True, size=110, opacity=1)
            .encode(
                x=x,
                y=y,
                color=colour,
                shape=alt.Shape("kind:N")
                .scale(domain=kinds, range=[shapes[k] for k in kinds])
                .title(None)
                .legend(orient="bottom"),
                tooltip=[
                    alt.Tooltip("kind:N").title("point"),
                    alt.Tooltip("interval_min:Q")
                    .format(",.3g")
                    .title("interval (min)"),
                    alt.Tooltip("ettr:Q").format(".2%").title("ETTR"),
                ],
            )
        )
        # labels apart: the optimum's above its point, the measured one's below
        values = [*data[value_cols].to_numpy().ravel().tolist(), *points["ettr"]]
        values = [v for v in values if v is not None and math.isfinite(v)]
        gap = max(0.04 * (max(values) - min(values)), 1e-4)
        labelled = points.with_columns(
            label_ettr=pl.when(pl.col("kind") == "optimum")
            .then(pl.col("ettr") + gap)
            .otherwise(pl.col("ettr") - gap)
        )
        layers.append(
            alt.Chart(labelled)
            .mark_text(align="left", dx=8)
            .encode(x=x, y=alt.Y("label_ettr:Q"), text="label:N", color=colour)
        )
    return alt.layer(*layers, title=chart_title(title))


#: published ``kind`` -> point shape (other kinds get squares)
_PUBLISHED_SHAPES = {
    "observed, lower bound": "triangle-up",
    "observed": "circle",
    "model": "diamond",
}


def _log2_axis(
    low: float, high: float, *, max_ticks: int = 10
) -> tuple[list[int], list[int]]:
    """Domain [2^a, 2^b] around low..high, ticks at every step-th power of two.

    b is raised to the next tick when the step is above 1, so both ends are
    labelled.
    """
    first, last = math.floor(math.log2(low)), math.ceil(math.log2(high))
    last = max(last, first + 1)
    step = max(1, math.ceil((last - first + 1) / max_ticks))
    last = first + math.ceil((last - first) / step) * step
    return [2**first, 2**last], [2**k for k in range(first, last + 1, step)]


def ettr_scale_chart(
    sweep: pl.DataFrame,
    *,
    series: str | None = None,
    published: pl.DataFrame | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    """Draw expected ETTR against the GPU count, with published values overlaid.

    One line (with a point per GPU count) per series over a base-2 log axis of the
    GPU count, a shaded band between the bounds when the sweep has them, and
    the published values as black points whose shape says their kind (a
    triangle for a lower bound) and whose tooltip names the source and the
    conditions.

    Parameters
    ----------
    sweep : pl.DataFrame
        Columns ``gpus`` (> 0; rows <= 0 or null are left out) and
        ``expected_ettr`` (fraction in [0, 1]), optionally
        ``expected_ettr_lower`` and ``expected_ettr_upper`` (both or neither)
        and the ``series`` column. At most 5,000 rows.
    series : str, optional
        Column naming the lines (e.g. ``"interval_rule"``), drawn as colours;
        nulls become "(missing)". Needed when a GPU count repeats.
    published : pl.DataFrame, optional
        Published points, columns ``source``, ``gpus``, ``ettr`` (fraction),
        ``kind`` and ``note``, e.g. :data:`relkit.published.PUBLISHED_ETTR_POINTS`.
    title : str, optional
        Chart title.

    Returns
    -------
    altair.LayerChart
        Layers in order: ``area`` (only with bounds), ``line`` (``expected_ettr``
        against ``gpus``, colour by ``series``), then with ``published`` a
        ``point`` layer (``ettr`` against ``gpus``, shape by ``kind``, tooltip
        ``source``, ``gpus``, ``ettr``, ``kind``, ``note``). x "GPUs (log scale,
        base 2)" from the power of two at or below the smallest GPU count (sweep
        and published) to the one at or above the largest, ticks at powers of
        two (every k-th, the axis then ending on a tick, when there would be
        over 10),
        y "Expected ETTR" in percent. The sweep dataset is sorted by series and
        GPU count.

    Raises
    ------
    SchemaError
        If a column is missing, only one bound is present, an ETTR is outside
        [0, 1], a band misses its estimate, a GPU count repeats without
        ``series``, or a frame has over 5,000 rows.
    InsufficientDataError
        If no sweep row has ``gpus`` > 0 and a finite ``expected_ettr``.

    References
    ----------
    .. [1] A. Kokolis et al., HPCA 2025. arXiv:2410.21680
    .. [2] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024).

    Examples
    --------
    >>> import polars as pl
    >>> from relkit.published import PUBLISHED_ETTR_POINTS
    >>> sweep = pl.DataFrame(
    ...     {"gpus": [1024, 16384, 131072], "expected_ettr": [0.99, 0.93, 0.55]}
    ... )
    >>> spec = ettr_scale_chart(sweep, published=PUBLISHED_ETTR_POINTS).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['line', 'point']
    >>> spec["layer"][0]["encoding"]["x"]["scale"]
    {'type': 'log', 'base': 2, 'domain': [1024, 131072]}
    """
    import altair as alt

    where = "ettr_scale_chart"
    require_columns(
        sweep, ["gpus", "expected_ettr", *([series] if series else [])], where=where
    )
    check_rows(
        sweep,
        where=where,
        fix="Sweep fewer GPU counts, e.g. powers of two, or fewer series.",
    )
    band = _band_columns(sweep, "expected_ettr", where=where)
    value_cols = ["expected_ettr", *(band or ())]
    keys = [series] if series else []
    data = (
        sweep.select(*keys, "gpus", *value_cols)
        .with_columns(pl.col(c).cast(pl.Float64) for c in ["gpus", *value_cols])
        .filter(
            pl.col("gpus").is_finite() & (pl.col("gpus") > 0),
            pl.col("expected_ettr").is_finite(),
        )
    )
    if series:
        data = data.with_columns(pl.col(series).cast(pl.String).fill_null("(missing)"))
    else:
        repeated = data.filter(pl.col("gpus").is_duplicated())
        if repeated.height:
            extra = [
                c
                for c in sweep.columns
                if c not in ("gpus", *value_cols)
                and sweep.filter(pl.col("gpus").is_duplicated())[c].n_unique() > 1
            ]
            fix = f"Pass series={extra[0]!r}" if extra else "Pass series='...'"
            counts = repeated["gpus"].unique().sort().head(5).to_list()
            msg = (
                f"{where}: GPU counts repeat ({counts}) so the sweep holds several "
                f"lines, but series is None. {fix}, or filter to one line."
            )
            raise SchemaError(msg)
    _check_fractions(data, value_cols, where=where, hint="Divide percentages by 100.")
    if data.height == 0:
        msg = (
            f"{where}: the sweep has no row with gpus > 0 and a finite "
            f"expected_ettr ({sweep.height} rows)."
        )
        raise InsufficientDataError(msg)
    data = data.sort([*keys, "gpus"])
    spans = data["gpus"].to_numpy()
    points = None
    if published is not None:
        cols = ["source", "gpus", "ettr", "kind", "note"]
        require_columns(published, cols, where=f"{where} (published)")
        check_rows(published, where=f"{where} (published)", fix="Pick fewer points.")
        points = published.select(cols).with_columns(
            pl.col("gpus").cast(pl.Float64),
            pl.col("ettr").cast(pl.Float64),
            *(pl.col(c).cast(pl.String) for c in ("source", "kind", "note")),
        )
        bad = points.filter(~(pl.col("gpus").is_finite() & (pl.col("gpus") > 0)))
        if bad.height:
            msg = (
                f"{where}: published gpus must be > 0; found "
                f"{bad['gpus'].head(5).to_list()}."
            )
            raise SchemaError(msg)
        _check_fractions(
            points, ["ettr"], where=f"{where} (published)", hint="Divide by 100."
        )
        if points.height:
            spans = np.concatenate([spans, points["gpus"].to_numpy()])
    domain, ticks = _log2_axis(float(spans.min()), float(spans.max()))
    x = (
        alt.X("gpus:Q")
        .scale(type="log", base=2, domain=domain)
        .axis(values=ticks, format=",")
        .title("GPUs (log scale, base 2)")
    )
    y_title = "Expected ETTR"
    colour: dict[str, Any] = {}
    if series:
        colour["color"] = alt.Color(f"{series}:N").title(series.replace("_", " "))
    tooltip = [
        *([alt.Tooltip(f"{series}:N")] if series else []),
        alt.Tooltip("gpus:Q").format(","),
        alt.Tooltip("expected_ettr:Q").format(".2%").title("expected ETTR"),
    ]
    layers: list[Any] = []
    if band is not None:
        layers.append(
            alt.Chart(data)
            .mark_area(opacity=0.15, **({} if series else {"color": "#4c78a8"}))
            .encode(
                x=x,
                y=alt.Y("expected_ettr_lower:Q").axis(format="%").title(y_title),
                y2="expected_ettr_upper:Q",
                tooltip=[
                    *tooltip,
                    alt.Tooltip("expected_ettr_lower:Q").format(".2%").title("lower"),
                    alt.Tooltip("expected_ettr_upper:Q").format(".2%").title("upper"),
                ],
                **colour,
            )
        )
    layers.append(
        alt.Chart(data)
        .mark_line(
            strokeWidth=2, point=True, **({} if series else {"color": "#4c78a8"})
        )
        .encode(
            x=x,
            y=alt.Y("expected_ettr:Q").axis(format="%").title(y_title),
            tooltip=tooltip,
            **colour,
        )
    )
    if points is not None and points.height:
        kinds = points["kind"].unique(maintain_order=True).to_list()
        layers.append(
            alt.Chart(points)
            .mark_point(filled=True, size=120, color="black", opacity=1)
            .encode(
                x=x,
                y=alt.Y("ettr:Q").axis(format="%").title(y_title),
                shape=alt.Shape("kind:N")
                .scale(
                    domain=kinds,
                    range=[_PUBLISHED_SHAPES.get(k, "square") for k in kinds],
                )
                .title("published"),
                tooltip=[
                    alt.Tooltip("source:N"),
                    alt.Tooltip("gpus:Q").format(",").title("GPUs"),
                    alt.Tooltip("ettr:Q").format(".0%").title("ETTR"),
                    alt.Tooltip("kind:N"),
                    alt.Tooltip("note:N"),
                ],
            )
        )
    return alt.layer(*layers, title=chart_title(title))
