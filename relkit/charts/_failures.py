"""Altair chart builders for relkit's aggregated frames.

Every builder takes a tidy polars frame produced by an analysis module, checks
its columns, aggregates in polars where needed so that the embedded dataset
has at most :data:`MAX_ROWS` rows (Altair's ``MaxRowsError`` limit), and returns
the chart without displaying it. This is the only relkit module that imports
Altair; :func:`enable_theme` is relkit's one global action.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt
    from altair.utils.plugin_registry import PluginEnabler

__all__ = [
    "MAX_ROWS",
    "THEME_NAME",
    "badput_waterfall_chart",
    "enable_offline_rendering",
    "enable_theme",
    "ettr_chart",
    "ettr_interval_chart",
    "ettr_scale_chart",
    "events_timeline_chart",
    "kaplan_meier_chart",
    "mtbf_chart",
    "tbf_histogram_chart",
]

#: Largest dataset a chart embeds (Altair raises ``MaxRowsError`` above it).
MAX_ROWS = 5000
#: Name under which :func:`enable_theme` registers relkit's Altair theme.
THEME_NAME = "relkit"

_FONT = (
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
)
_ESTIMATE = "estimate"
_LOWER_ONLY = "lower bound only (0 failures)"
#: bin -> (polars every, axis format, tooltip label format, axis title)
_BINS = {
    "hour": ("1h", "%b %d %H:%M", "%Y-%m-%d %H:00 UTC", "UTC hour"),
    "day": ("1d", "%b %d", "%Y-%m-%d", "UTC day"),
    "week": ("1w", "%b %d", "week of %Y-%m-%d", "UTC week (from Monday)"),
}


def _theme() -> dict[str, Any]:
    return {
        "config": {
            "font": _FONT,
            "view": {"continuousWidth": 560, "continuousHeight": 320, "stroke": None},
            "title": {"fontSize": 15, "anchor": "start", "offset": 10},
            "axis": {
                "labelFontSize": 12,
                "titleFontSize": 13,
                "titleFontWeight": "normal",
                "gridColor": "#e6e6e6",
            },
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "labelLimit": 320},
            "header": {"labelFontSize": 12, "titleFontSize": 13},
            "range": {"category": {"scheme": "tableau10"}},
        }
    }


def enable_offline_rendering(fmt: str = "svg") -> PluginEnabler:
    """Render Altair charts in notebooks as static images, with no network.

    Altair's default output loads Vega from a CDN (jsDelivr), so a notebook
    opened offline, or exported to HTML, shows blank charts. The ``svg`` and
    ``png`` renderers draw the chart in-process with vl-convert and embed the
    image in the output, so it shows wherever the notebook is opened.

    Parameters
    ----------
    fmt : {"svg", "png"}, default "svg"
        The image format of notebook outputs.

    Returns
    -------
    altair.utils.plugin_registry.PluginEnabler
        Altair's enabler; usable as a context manager to restore the previous
        renderer on exit.

    Raises
    ------
    ValueError
        If ``fmt`` is neither ``"svg"`` nor ``"png"``.

    Examples
    --------
    >>> import altair as alt
    >>> with enable_offline_rendering():
    ...     alt.renderers.active
    'svg'
    """
    import altair as alt

    if fmt not in ("svg", "png"):
        msg = f"fmt must be 'svg' or 'png' (rendered offline), found {fmt!r}"
        raise ValueError(msg)
    return alt.renderers.enable(fmt)


def enable_theme() -> PluginEnabler:
    """Register and enable the ``"relkit"`` Altair theme.

    The theme sets readable system fonts, 12–15 px labels and titles, a 560 px
    wide continuous view and the Tableau-10 category colours. This is the one
    global action relkit takes; everything else is a pure function.

    Returns
    -------
    altair.utils.plugin_registry.PluginEnabler
        Altair's enabler. Ignore it to keep the theme on, or use it as a context
        manager to restore the previous theme on exit.

    Examples
    --------
    >>> import altair as alt
    >>> before = alt.theme.active
    >>> with enable_theme():
    ...     alt.theme.active
    'relkit'
    >>> alt.theme.active == before
    True
    """
    import altair as alt

    alt.theme.register(THEME_NAME, enable=False)(_theme)
    return alt.theme.enable(THEME_NAME)


def _check_rows(frame: pl.DataFrame, *, where: str, fix: str) -> None:
    if frame.height > MAX_ROWS:
        msg = (
            f"{where}: the chart would embed {frame.height:,} rows; at most "
            f"{MAX_ROWS:,} are allowed (Altair's MaxRowsError). {fix}"
        )
        raise SchemaError(msg)


def _positive(value: float, *, name: str, where: str) -> float:
    value = float(value)
    if not (math.isfinite(value) and value > 0):
        msg = f"{where}: {name} must be a finite number > 0; found {value!r}."
        raise InvalidParameterError(msg)
    return value


def _title(title: str | None) -> Any:  # noqa: ANN401 (alt.Undefined or str)
    import altair as alt

    return alt.Undefined if title is None else title


def mtbf_chart(
    mtbf_frame: pl.DataFrame,
    *,
    group: str,
    title: str | None = None,
    confidence: float | None = None,
) -> alt.LayerChart:
    r"""Draw MTBF per group with its confidence interval on a log axis.

    Each group is a row: a circle at ``mtbf_h`` with a bar from ``mtbf_lower_h``
    to ``mtbf_upper_h``. A group with no failures has no point estimate; it is
    drawn as a right-pointing triangle at its one-sided lower bound
    ``mtbf_lower_one_sided_h`` (legend "lower bound only (0 failures)"): its
    MTBF is at least that long. Groups are sorted from the longest MTBF (or
    lower bound) to the shortest.

    Parameters
    ----------
    mtbf_frame : pl.DataFrame
        Output of :func:`relkit.metrics.mtbf`, one row per group, with columns
        ``group``, ``n_failures`` (int), ``exposure_h`` (node-hours),
        ``mtbf_h``, ``mtbf_lower_h``, ``mtbf_upper_h`` (h, null when
        ``n_failures`` is 0) and ``mtbf_lower_one_sided_h`` (h). At most 5,000
        rows.
    group : str
        The column naming the groups (drawn on the y axis as text).
    title : str, optional
        Chart title.
    confidence : float, optional
        Confidence level of the bounds in (0, 1), only used in the legend text.

    Returns
    -------
    altair.LayerChart
        A bar layer (interval) and a point layer (estimate or lower bound);
        x is ``MTBF (h)`` on a log scale, y the group, shape the kind of value.
        The tooltip shows the group, n_failures, exposure_h and the bounds.

    Raises
    ------
    SchemaError
        If a required column is missing or the frame has over 5,000 rows.
    InvalidParameterError
        If ``confidence`` is not in (0, 1).

    Notes
    -----
    With :math:`r = 0` failures in exposure :math:`T` the MLE :math:`T/r` does
    not exist; the one-sided lower bound :math:`2T/\chi^2_{1-\alpha}(2)` does.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame(
    ...     {
    ...         "system": ["2", "18"],
    ...         "n_failures": [4, 0],
    ...         "exposure_h": [400.0, 300.0],
    ...         "mtbf_h": [100.0, None],
    ...         "mtbf_lower_h": [45.8, None],
    ...         "mtbf_upper_h": [292.0, None],
    ...         "mtbf_lower_one_sided_h": [55.0, 130.3],
    ...     }
    ... )
    >>> spec = mtbf_chart(frame, group="system").to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['rule', 'point']
    >>> spec["layer"][1]["encoding"]["y"]["sort"]
    ['18', '2']
    """
    import altair as alt

    where = "mtbf_chart"
    cols = [
        group,
        "n_failures",
        "exposure_h",
        "mtbf_h",
        "mtbf_lower_h",
        "mtbf_upper_h",
        "mtbf_lower_one_sided_h",
    ]
    require_columns(mtbf_frame, cols, where=where)
    _check_rows(
        mtbf_frame,
        where=where,
        fix="Group by fewer or coarser columns, or keep the top groups, e.g. "
        "frame.sort('n_failures', descending=True).head(50).",
    )
    if confidence is not None and not 0 < confidence < 1:
        msg = f"{where}: confidence must be in (0, 1); found {confidence!r}."
        raise InvalidParameterError(msg)
    ci = "" if confidence is None else f" ({confidence:.0%} CI)"
    estimate_label = _ESTIMATE + ci
    data = (
        mtbf_frame.select(cols)
        .with_columns(
            pl.col(group).cast(pl.String).fill_null("(missing)"),
            pl.when(pl.col("mtbf_h").is_null())
            .then(pl.lit(_LOWER_ONLY))
            .otherwise(pl.lit(estimate_label))
            .alias("value_kind"),
            pl.coalesce("mtbf_h", "mtbf_lower_one_sided_h").alias("shown_h"),
        )
        .sort(["shown_h", group], descending=[True, False], nulls_last=True)
    )
    order = data[group].to_list()
    y = alt.Y(f"{group}:N").sort(order).title(group.replace("_", " "))
    tooltip = [
        alt.Tooltip(f"{group}:N"),
        alt.Tooltip("value_kind:N").title("value"),
        alt.Tooltip("n_failures:Q").format(","),
        alt.Tooltip("exposure_h:Q").format(",.0f").title("exposure (h)"),
        alt.Tooltip("mtbf_h:Q").format(",.1f").title("MTBF (h)"),
        alt.Tooltip("mtbf_lower_h:Q").format(",.1f").title("lower (h)"),
        alt.Tooltip("mtbf_upper_h:Q").format(",.1f").title("upper (h)"),
        alt.Tooltip("mtbf_lower_one_sided_h:Q")
        .format(",.1f")
        .title("one-sided lower (h)"),
    ]
    x_scale = alt.Scale(type="log")
    base = alt.Chart(data)
    interval = (
        base.transform_filter(alt.datum.value_kind == estimate_label)
        .mark_rule(strokeWidth=2, color="#4c78a8")
        .encode(
            x=alt.X("mtbf_lower_h:Q").scale(x_scale).title("MTBF (h)"),
            x2="mtbf_upper_h:Q",
            y=y,
            tooltip=tooltip,
        )
    )
    points = base.mark_point(filled=True, size=80, opacity=1).encode(
        x=alt.X("shown_h:Q").scale(x_scale).title("MTBF (h)"),
        y=y,
        shape=alt.Shape("value_kind:N")
        .scale(domain=[estimate_label, _LOWER_ONLY], range=["circle", "triangle-right"])
        .title(None)
        .legend(orient="bottom"),
        color=alt.Color("value_kind:N")
        .scale(domain=[estimate_label, _LOWER_ONLY], range=["#4c78a8", "#e45756"])
        .title(None)
        .legend(orient="bottom"),
        tooltip=tooltip,
    )
    return alt.layer(interval, points, title=_title(title))


def _histogram(gaps: np.ndarray, *, binning: str, max_bins: int) -> pl.DataFrame:
    """Density histogram (per hour) of positive gap lengths."""
    gaps = gaps[np.isfinite(gaps) & (gaps > 0)]
    empty = pl.DataFrame(
        schema={
            "bin_start_h": pl.Float64,
            "bin_end_h": pl.Float64,
            "density": pl.Float64,
        }
    )
    if gaps.size == 0:
        return empty
    lo, hi = float(gaps.min()), float(gaps.max())
    n_bins = int(min(max_bins, max(5, math.ceil(2 * gaps.size ** (1 / 3)))))
    if hi <= lo:
        edges = np.array([lo * 0.9, hi * 1.1])
    elif binning == "log":
        edges = np.geomspace(lo, hi, n_bins + 1)
    else:
        edges = np.linspace(0.0, hi, n_bins + 1)
    counts, edges = np.histogram(gaps, bins=edges)
    density = counts / (gaps.size * np.diff(edges))
    return pl.DataFrame(
        {"bin_start_h": edges[:-1], "bin_end_h": edges[1:], "density": density}
    )


def tbf_histogram_chart(
    tbf_table: pl.DataFrame,
    density: pl.DataFrame,
    *,
    title: str | None = None,
    binning: Literal["linear", "log"] = "linear",
    max_bins: int = 60,
) -> alt.LayerChart | alt.FacetChart:
    r"""Draw a density histogram of observed gaps with fitted model densities.

    The histogram is computed in polars/NumPy before it reaches Altair
    (at most ``max_bins`` rows per group). Censored gaps are not in the
    histogram; the fitted densities account for them, so the curves may lie
    to the right of the bars when censoring is heavy.

    Parameters
    ----------
    tbf_table : pl.DataFrame
        Output of :func:`relkit.survival.build_tbf_table` with columns
        ``stop_h`` (gap length in h from the gap's origin) and ``observed``
        (bool); the columns of ``density`` other than ``model``, ``time_h``,
        ``density`` that are also in this frame are the groups.
    density : pl.DataFrame
        Output of :func:`relkit.survival.model_density` with columns ``model``
        (str), ``time_h`` (h) and ``density`` (1/h), plus the group columns.
    title : str, optional
        Chart title.
    binning : {"linear", "log"}, default "linear"
        Equal-width bins from 0, or log-spaced bins with a log x axis.
    max_bins : int, default 60
        Upper limit on the number of bins per group; the number used is
        :math:`\max(5, \lceil 2 n^{1/3} \rceil)` (Rice rule) capped at it.

    Returns
    -------
    altair.LayerChart or altair.FacetChart
        Grey bars (``bin_start_h``..``bin_end_h``, height ``density``) and one
        line per ``model`` (colour), x "Time between failures (h)", y
        "Density (1/h)". Faceted by group (rows) when there are several groups.
        The dataset holds both layers, told apart by the column ``series``.

    Raises
    ------
    SchemaError
        If a required column is missing, or the data exceed 5,000 rows.
    InsufficientDataError
        If there is neither an observed gap nor a density point to draw.
    InvalidParameterError
        If ``max_bins`` is < 1 or ``binning`` is unknown.

    Notes
    -----
    Bar height is :math:`c_k / (n\,w_k)` for :math:`c_k` gaps in bin
    :math:`k` of width :math:`w_k` hours, with :math:`n` observed gaps, so the
    bars integrate to 1 like the model densities.

    Examples
    --------
    >>> import polars as pl
    >>> tbf = pl.DataFrame(
    ...     {
    ...         "unit_id": ["a"] * 4,
    ...         "entry_h": [0.0] * 4,
    ...         "stop_h": [1.0, 2.0, 4.0, 9.0],
    ...         "observed": [True, True, True, False],
    ...     }
    ... )
    >>> dens = pl.DataFrame(
    ...     {
    ...         "model": ["exponential"] * 3,
    ...         "time_h": [0.5, 2.0, 8.0],
    ...         "density": [0.3, 0.2, 0.05],
    ...     }
    ... )
    >>> spec = tbf_histogram_chart(tbf, dens).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['rect', 'line']
    >>> spec["layer"][0]["encoding"]["x"]["title"]
    'Time between failures (h)'
    """
    import altair as alt

    where = "tbf_histogram_chart"
    require_columns(tbf_table, ["stop_h", "observed"], where=where)
    require_columns(density, ["model", "time_h", "density"], where=where)
    if binning not in ("linear", "log"):
        msg = f"{where}: binning must be 'linear' or 'log'; found {binning!r}."
        raise InvalidParameterError(msg)
    if max_bins < 1:
        msg = f"{where}: max_bins must be >= 1; found {max_bins!r}."
        raise InvalidParameterError(msg)
    by = [
        c
        for c in density.columns
        if c not in ("model", "time_h", "density") and c in tbf_table.columns
    ]
    observed = tbf_table.filter(pl.col("observed"))
    hist_parts = []
    for key, part in (
        observed.group_by(by, maintain_order=True) if by else [((), observed)]
    ):
        hist = _histogram(
            part["stop_h"].cast(pl.Float64).to_numpy(),
            binning=binning,
            max_bins=max_bins,
        )
        hist_parts.append(
            hist.with_columns(pl.lit(v).alias(c) for c, v in zip(by, key, strict=True))
        )
    lines = density.select(*by, "model", "time_h", "density").filter(
        pl.col("density").is_finite()
    )
    if binning == "log":
        lines = lines.filter(pl.col("time_h") > 0)
    data = pl.concat(
        [
            *(h.with_columns(series=pl.lit("observed gaps")) for h in hist_parts),
            lines.with_columns(series=pl.lit("model")),
        ],
        how="diagonal_relaxed",
    )
    if data.height == 0:
        msg = (
            f"{where}: nothing to draw; the table has no observed gap "
            f"({tbf_table.height} rows, 0 observed) and the density frame is empty. "
            "Widen the window or pick a group with failures."
        )
        raise InsufficientDataError(msg)
    _check_rows(
        data,
        where=where,
        fix="Pass fewer groups or models, or fewer points, e.g. "
        "relkit.survival.model_density(..., n_points=100).",
    )
    facet_col: str | None = None
    if by and data.select(by).unique().height > 1:
        if len(by) == 1:
            facet_col = by[0]
            data = data.with_columns(pl.col(facet_col).cast(pl.String))
        else:
            facet_col = "group"
            data = data.with_columns(
                pl.concat_str(
                    [pl.col(c).cast(pl.String) for c in by], separator=" / "
                ).alias(facet_col)
            )
    x_title = "Time between failures (h)"
    x_scale = alt.Scale(type="log") if binning == "log" else alt.Scale(zero=True)
    base = alt.Chart(data)
    bars = (
        base.transform_filter(alt.datum.series == "observed gaps")
        .mark_rect(color="#bab0ac", opacity=0.8, stroke="white", strokeWidth=0.5)
        .encode(
            x=alt.X("bin_start_h:Q").scale(x_scale).title(x_title),
            x2="bin_end_h:Q",
            y=alt.Y("density:Q").title("Density (1/h)"),
            y2=alt.datum(0),
            tooltip=[
                alt.Tooltip("bin_start_h:Q").format(",.2f").title("from (h)"),
                alt.Tooltip("bin_end_h:Q").format(",.2f").title("to (h)"),
                alt.Tooltip("density:Q").format(".3g").title("density (1/h)"),
            ],
        )
    )
    curves = (
        base.transform_filter(alt.datum.series == "model")
        .mark_line(strokeWidth=2)
        .encode(
            x=alt.X("time_h:Q").scale(x_scale).title(x_title),
            y=alt.Y("density:Q").title("Density (1/h)"),
            color=alt.Color("model:N").title("Fitted model"),
            tooltip=[
                alt.Tooltip("model:N"),
                alt.Tooltip("time_h:Q").format(",.2f").title("time (h)"),
                alt.Tooltip("density:Q").format(".3g").title("density (1/h)"),
            ],
        )
    )
    if facet_col is not None:
        row = alt.Row(f"{facet_col}:N").title(" / ".join(by))
        return (
            alt.layer(bars, curves)
            .facet(row=row, title=_title(title))
            .resolve_scale(y="independent")
        )
    return alt.layer(bars, curves, title=_title(title))


def kaplan_meier_chart(
    km: pl.DataFrame, *, color: str | None = None, title: str | None = None
) -> alt.LayerChart:
    """Draw Kaplan-Meier survival curves with their confidence bands.

    Parameters
    ----------
    km : pl.DataFrame
        Output of :func:`relkit.survival.kaplan_meier` with columns ``time_h``
        (h), ``survival``, ``survival_lower``, ``survival_upper`` (fractions in
        [0, 1]) and ``n_at_risk``, plus the ``color`` column when given. At most
        5,000 rows.
    color : str, optional
        Group column drawn as one curve (and band) per value, nominal colour.
    title : str, optional
        Chart title.

    Returns
    -------
    altair.LayerChart
        A step-after area (``survival_lower``..``survival_upper``, 20 %
        opacity) under a step-after line of ``survival``; x "Time (h)", y
        "S(t) = P(no failure by t)" formatted as percent on [0, 1].

    Raises
    ------
    SchemaError
        If a required column is missing, the frame has over 5,000 rows, or
        ``color`` is None while another column varies (several curves).

    Examples
    --------
    >>> import polars as pl
    >>> km = pl.DataFrame(
    ...     {
    ...         "time_h": [0.0, 10.0, 25.0],
    ...         "survival": [1.0, 0.8, 0.5],
    ...         "survival_lower": [1.0, 0.6, 0.3],
    ...         "survival_upper": [1.0, 0.95, 0.7],
    ...         "n_at_risk": [10, 8, 4],
    ...     }
    ... )
    >>> spec = kaplan_meier_chart(km).to_dict()
    >>> [
    ...     (layer["mark"]["type"], layer["mark"]["interpolate"])
    ...     for layer in spec["layer"]
    ... ]
    [('area', 'step-after'), ('line', 'step-after')]
    >>> spec["layer"][1]["encoding"]["y"]["axis"]["format"]
    '%'
    """
    import altair as alt

    where = "kaplan_meier_chart"
    cols = ["time_h", "survival", "survival_lower", "survival_upper", "n_at_risk"]
    require_columns(km, cols + ([color] if color else []), where=where)
    _check_rows(
        km,
        where=where,
        fix="Plot fewer groups, or thin the curve on a time grid before charting.",
    )
    if color is None:
        extra = [c for c in km.columns if c not in cols and km[c].n_unique() > 1]
        if extra:
            msg = (
                f"{where}: the frame holds several curves (column(s) {extra} vary) "
                f"but color is None. Pass color={extra[0]!r}, or filter to one group."
            )
            raise SchemaError(msg)
    data = km.select(([color] if color else []) + cols)
    if color:
        data = data.with_columns(pl.col(color).cast(pl.String).fill_null("(missing)"))
    sort_cols = ([color] if color else []) + ["time_h"]
    data = data.sort(sort_cols)
    y_scale = alt.Scale(domain=[0, 1])
    y_title = "S(t) = P(no failure by t)"
    base = alt.Chart(data)
    group_enc: dict[str, Any] = {}
    if color:
        group_enc["color"] = alt.Color(f"{color}:N").title(color.replace("_", " "))
    band = base.mark_area(interpolate="step-after", opacity=0.2).encode(
        x=alt.X("time_h:Q").title("Time (h)"),
        y=alt.Y("survival_lower:Q").scale(y_scale).axis(format="%").title(y_title),
        y2="survival_upper:Q",
        **group_enc,
    )
    line = base.mark_line(interpolate="step-after", strokeWidth=2).encode(
        x=alt.X("time_h:Q").title("Time (h)"),
        y=alt.Y("survival:Q").scale(y_scale).axis(format="%").title(y_title),
        tooltip=[
            *([alt.Tooltip(f"{color}:N")] if color else []),
            alt.Tooltip("time_h:Q").format(",.1f").title("time (h)"),
            alt.Tooltip("survival:Q").format(".1%").title("S(t)"),
            alt.Tooltip("survival_lower:Q").format(".1%").title("lower"),
            alt.Tooltip("survival_upper:Q").format(".1%").title("upper"),
            alt.Tooltip("n_at_risk:Q").format(",").title("at risk"),
        ],
        **group_enc,
    )
    return alt.layer(band, line, title=_title(title))


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
    _check_rows(
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
    return alt.layer(line, rule, point, text, title=_title(title))


def _format_hours(hours: float) -> str:
    if hours < 1:
        return f"{hours * 60:.3g} min"
    return f"{hours:.3g} h"


def events_timeline_chart(
    events: pl.DataFrame,
    *,
    by: str = "code",
    bin: Literal["hour", "day", "week"] = "day",
    max_groups: int = 12,
    title: str | None = None,
) -> alt.Chart:
    """Draw event counts per UTC time bin, stacked by a category column.

    Events are counted in polars before charting, so a frame of any length
    embeds at most (bins × groups) rows, e.g. 30 days × 10 Xid codes = 300.
    Altair's row limit is never switched off.

    Parameters
    ----------
    events : pl.DataFrame
        One row per event with columns ``ts`` (datetime; naive values are
        taken as UTC, rows with a null ``ts`` are left out) and the ``by``
        column, e.g. the store's ``events`` table.
    by : str, default "code"
        Category column for the colour (e.g. ``code`` for the Xid,
        ``failure_mode``); nulls become "(missing)".
    bin : {"hour", "day", "week"}, default "day"
        Width of the UTC time bins; weeks start on Monday.
    max_groups : int, default 12
        Categories beyond the ``max_groups - 1`` most frequent are merged into
        "other", so the legend stays readable and totals are kept.
    title : str, optional
        Chart title.

    Returns
    -------
    altair.Chart
        Stacked bars spanning each bin; dataset columns ``period_start`` and
        ``period_end`` (UTC), ``period_label`` (text), the ``by`` column (str),
        ``n_events`` (count), ``stack_order`` (rank of the category by total
        count) and ``stack_bottom``..``stack_top`` (the bar's extent, stacked in
        polars); one row per non-empty (bin, category), sorted by period then
        rank. x is the period (UTC scale), y "Events per <bin>", colour the
        category.

    Raises
    ------
    SchemaError
        If ``ts`` or ``by`` is missing, or bins × groups exceed 5,000 rows.
    InvalidParameterError
        If ``bin`` is unknown or ``max_groups`` < 2.

    Examples
    --------
    >>> import datetime as dt
    >>> import polars as pl
    >>> t0 = dt.datetime(2025, 4, 1, tzinfo=dt.timezone.utc)
    >>> events = pl.DataFrame(
    ...     {
    ...         "ts": [t0, t0 + dt.timedelta(hours=3), t0 + dt.timedelta(days=1)],
    ...         "code": ["13", "13", "79"],
    ...     }
    ... )
    >>> spec = events_timeline_chart(events).to_dict()
    >>> spec["mark"]["type"], len(spec["datasets"][spec["data"]["name"]])
    ('bar', 2)
    """
    import altair as alt

    where = "events_timeline_chart"
    require_columns(events, ["ts", by], where=where)
    if bin not in _BINS:
        msg = f"{where}: bin must be one of {sorted(_BINS)}; found {bin!r}."
        raise InvalidParameterError(msg)
    if max_groups < 2:
        msg = f"{where}: max_groups must be >= 2; found {max_groups!r}."
        raise InvalidParameterError(msg)
    if not isinstance(events.schema["ts"], pl.Datetime):
        msg = (
            f"{where}: column ts must be a datetime; found {events.schema['ts']}. "
            "Parse it, e.g. pl.col('ts').str.to_datetime(time_zone='UTC')."
        )
        raise SchemaError(msg)
    ts = pl.col("ts")
    if events.schema["ts"].time_zone is None:  # type: ignore[union-attr]
        ts = ts.dt.replace_time_zone("UTC")
    else:
        ts = ts.dt.convert_time_zone("UTC")
    counted = (
        events.lazy()
        .filter(pl.col("ts").is_not_null())
        .select(
            ts.dt.truncate(_BINS[bin][0]).alias("period_start"),
            pl.col(by).cast(pl.String).fill_null("(missing)").alias(by),
        )
        .group_by("period_start", by)
        .agg(pl.len().cast(pl.Int64).alias("n_events"))
        .collect()
    )
    totals = (
        counted.group_by(by)
        .agg(pl.col("n_events").sum())
        .sort(["n_events", by], descending=[True, False])
    )
    order = totals[by].to_list()
    if len(order) > max_groups:
        keep = order[: max_groups - 1]
        counted = (
            counted.with_columns(
                pl.when(pl.col(by).is_in(keep))
                .then(pl.col(by))
                .otherwise(pl.lit("other"))
                .alias(by)
            )
            .group_by("period_start", by)
            .agg(pl.col("n_events").sum())
        )
        order = [*keep, "other"]
    rank = {name: i for i, name in enumerate(order)}
    data = counted.with_columns(
        pl.col("period_start").dt.offset_by(_BINS[bin][0]).alias("period_end"),
        pl.col("period_start").dt.strftime(_BINS[bin][2]).alias("period_label"),
        pl.col(by).replace_strict(rank, return_dtype=pl.Int32).alias("stack_order"),
    ).sort("period_start", "stack_order")
    data = data.with_columns(
        pl.col("n_events").cum_sum().over("period_start").alias("stack_top")
    ).with_columns((pl.col("stack_top") - pl.col("n_events")).alias("stack_bottom"))
    _check_rows(
        data,
        where=where,
        fix=f"Use a coarser bin (e.g. bin='week'), fewer groups (max_groups), or a "
        f"shorter window: events.filter(pl.col('ts') >= start). Groups: {len(order)}.",
    )
    return (
        alt.Chart(data, title=_title(title))
        .mark_bar()
        .encode(
            x=alt.X("period_start:T")
            .scale(type="utc")
            .axis(format=_BINS[bin][1])
            .title(_BINS[bin][3]),
            x2="period_end:T",
            y=alt.Y("stack_bottom:Q").title(f"Events per {bin}"),
            y2="stack_top:Q",
            color=alt.Color(f"{by}:N").sort(order).title(by.replace("_", " ")),
            tooltip=[
                alt.Tooltip("period_label:N").title(bin),
                alt.Tooltip(f"{by}:N"),
                alt.Tooltip("n_events:Q").format(","),
            ],
        )
    )


#: Badput columns of a ``runs`` frame in waterfall order, with their plain names.
_BADPUT_STEPS = (
    ("badput_init_h", "initialisation"),
    ("badput_checkpoint_h", "checkpoint save"),
    ("badput_restore_h", "restore"),
    ("badput_lost_progress_h", "lost progress"),
    ("badput_recovery_h", "recovery"),
    ("badput_queue_h", "queue"),
    ("badput_other_h", "other"),
)
#: waterfall bar kind -> colour
_WATERFALL_KINDS = {
    "wall time": "#4c78a8",
    "badput": "#e45756",
    "unaccounted": "#bab0ac",
    "productive": "#54a24b",
}
_UNACCOUNTED = "unaccounted"
#: display unit -> hours per unit
_HOURS_PER = {"s": 1 / 3600, "min": 1 / 60, "h": 1.0}


def _amount_text(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _waterfall_steps(run: dict[str, Any], *, where: str) -> list[dict[str, Any]]:
    """Bars of one run's waterfall in hours: wall time, badput steps, productive."""
    rid = run["run_id"]
    for col in ("wall_h", "productive_h"):
        value = run[col]
        if value is None or not (math.isfinite(value) and value >= 0):
            msg = f"{where}: run {rid!r} has {col} = {value!r}; need a number >= 0."
            raise SchemaError(msg)
    wall, productive = float(run["wall_h"]), float(run["productive_h"])
    steps = [("wall time", "wall time", 0.0, wall, wall)]
    top = wall
    for col, label in _BADPUT_STEPS:
        value = run[col]
        if value is None:  # not measured: its time shows as unaccounted
            continue
        if not (math.isfinite(value) and value >= 0):
            msg = f"{where}: run {rid!r} has {col} = {value!r}; need a number >= 0."
            raise SchemaError(msg)
        if value > 0:
            steps.append((label, "badput", top - value, top, value))
            top -= value
    residual = top - productive
    tolerance = 1e-6 * wall + 1e-12
    if residual < -tolerance:
        msg = (
            f"{where}: run {rid!r}: productive_h + badput = "
            f"{wall - residual:.6g} h exceeds wall_h = {wall:.6g} h by "
            f"{-residual:.3g} h; time is counted twice. Check the runs frame."
        )
        raise SchemaError(msg)
    if residual > tolerance:
        steps.append((_UNACCOUNTED, "unaccounted", productive, top, residual))
    steps.append(("productive", "productive", 0.0, productive, productive))
    return [
        {
            "run_id": rid,
            "step": label,
            "step_order": order,
            "kind": kind,
            "low_h": low,
            "high_h": high,
            "amount_h": amount,
            "share_of_wall": amount / wall if wall > 0 else None,
        }
        for order, (label, kind, low, high, amount) in enumerate(steps)
    ]


def _run_title(run: dict[str, Any]) -> Any:  # noqa: ANN401 (alt.TitleParams)
    import altair as alt

    ettr = run["ettr"]
    ettr_text = "n/a" if ettr is None or not math.isfinite(ettr) else f"{ettr:.1%}"
    evidence = run["evidence"] if run["evidence"] is not None else "(missing)"
    return alt.TitleParams(
        text=f"Run {run['run_id']}: where the wall time went",
        subtitle=f"ETTR {ettr_text} (productive / wall time); evidence: {evidence}",
    )


def badput_waterfall_chart(
    runs: pl.DataFrame,
    *,
    run_id: str | None = None,
    unit: Literal["auto", "s", "min", "h"] = "auto",
    max_runs: int = 12,
    title: str | None = None,
) -> alt.LayerChart | alt.VConcatChart:
    r"""Draw a waterfall of a run's wall time, down through badput to productive time.

    The first bar is the run's wall time; each badput category then takes its
    share off the top, as a floating bar, until the last bar, the productive
    time, is left. Categories in plain words, in this order: initialisation,
    checkpoint save, restore, lost progress, recovery, queue, other. A
    category that is 0 is left out (no empty bar); a category that is null
    (not measured) is left out too, and its time shows in a grey bar
    "unaccounted" (in no category), which is drawn whenever wall time
    exceeds productive time plus the categories (beyond 1e-6 of wall time).
    The title names the run, the subtitle its ETTR and evidence label.

    Parameters
    ----------
    runs : pl.DataFrame
        One row per run (e.g. the runs frame of :mod:`relkit.jobs`), columns
        ``run_id`` (cast to text), ``evidence`` (text: how the split was
        measured), ``wall_h``, ``productive_h`` (h, >= 0), ``ettr`` (fraction
        in [0, 1], shown as given; null prints "n/a") and the badput columns
        ``badput_init_h``, ``badput_checkpoint_h``, ``badput_restore_h``,
        ``badput_lost_progress_h``, ``badput_recovery_h``, ``badput_queue_h``,
        ``badput_other_h`` (h, >= 0 or null).
    run_id : str, optional
        The run to draw. Default: every run of the frame, in frame order.
    unit : {"auto", "s", "min", "h"}, default "auto"
        Unit of the time axis and labels. ``"auto"`` picks seconds when the
        longest wall time drawn is under 2 min, minutes under 2 h, else hours.
    max_runs : int, default 12
        Most runs drawn at once without ``run_id`` (one waterfall each).
    title : str, optional
        Title above several waterfalls; with one run it replaces the run's
        headline (the subtitle with ETTR and evidence stays).

    Returns
    -------
    altair.LayerChart or altair.VConcatChart
        One run: a bar layer (``low``..``high`` on x "Wall time (<unit>)", y the
        step, colour the kind: "wall time", "badput", "unaccounted",
        "productive") and a text layer (the amount, badput with a minus sign,
        right of each bar). Several runs: one such layer per run, stacked
        vertically, each with its own x scale. Dataset columns: ``run_id``,
        ``step``, ``step_order`` (0 = wall time), ``kind``, ``low_h``,
        ``high_h``, ``amount_h`` (h), ``share_of_wall`` (fraction), ``low``,
        ``high``, ``amount`` (in the display unit) and ``label``; rows in
        step order.

    Raises
    ------
    SchemaError
        If a column is missing, ``run_id`` repeats, a duration is negative,
        NaN or (for ``wall_h``, ``productive_h``) null, productive time plus
        badput exceeds wall time, or the frame holds more than ``max_runs``
        runs and no ``run_id`` is given.
    InvalidParameterError
        If ``run_id`` is not in the frame, ``unit`` is unknown or
        ``max_runs`` < 1.
    InsufficientDataError
        If the frame has no rows.

    Notes
    -----
    Wall time :math:`W = P + \sum_k B_k + U`, with productive time :math:`P`,
    badput categories :math:`B_k` and the unaccounted rest :math:`U \ge 0`;
    ETTR is :math:`P/W` (Kokolis et al., HPCA 2025, arXiv:2410.21680).

    Examples
    --------
    Case C18: 64 s of wall time, 15 s productive.

    >>> import polars as pl
    >>> run = pl.DataFrame(
    ...     {
    ...         "run_id": ["run-7"],
    ...         "evidence": ["step log"],
    ...         "wall_h": [64 / 3600],
    ...         "productive_h": [15 / 3600],
    ...         "ettr": [15 / 64],
    ...         "badput_init_h": [5 / 3600],
    ...         "badput_checkpoint_h": [0.0],
    ...         "badput_restore_h": [5 / 3600],
    ...         "badput_lost_progress_h": [9 / 3600],
    ...         "badput_recovery_h": [30 / 3600],
    ...         "badput_queue_h": [0.0],
    ...         "badput_other_h": [0.0],
    ...     }
    ... )
    >>> spec = badput_waterfall_chart(run).to_dict()
    >>> [(r["step"], r["label"]) for r in spec["datasets"][spec["data"]["name"]]]
    [('wall time', '64 s'), ('initialisation', '−5 s'), ('restore', '−5 s'),
     ('lost progress', '−9 s'), ('recovery', '−30 s'), ('productive', '15 s')]
    >>> spec["title"]["subtitle"]
    'ETTR 23.4% (productive / wall time); evidence: step log'
    """
    import altair as alt

    where = "badput_waterfall_chart"
    cols = [
        "run_id",
        "evidence",
        "wall_h",
        "productive_h",
        "ettr",
        *(col for col, _ in _BADPUT_STEPS),
    ]
    require_columns(runs, cols, where=where)
    if unit not in ("auto", *_HOURS_PER):
        msg = f"{where}: unit must be 'auto', 's', 'min' or 'h'; found {unit!r}."
        raise InvalidParameterError(msg)
    if max_runs < 1:
        msg = f"{where}: max_runs must be >= 1; found {max_runs!r}."
        raise InvalidParameterError(msg)
    data = runs.select(cols).with_columns(
        pl.col("run_id").cast(pl.String),
        pl.col("evidence").cast(pl.String),
        *(pl.col(c).cast(pl.Float64) for c in cols[2:]),
    )
    if data.height == 0:
        msg = f"{where}: the runs frame has no rows; nothing to draw."
        raise InsufficientDataError(msg)
    ids = data["run_id"].to_list()
    if dups := sorted({i for i in ids if ids.count(i) > 1}, key=str):
        msg = (
            f"{where}: run_id must be unique (one row per run); repeated: "
            f"{dups[:5]}. Aggregate attempts into runs first."
        )
        raise SchemaError(msg)
    if run_id is not None:
        data = data.filter(pl.col("run_id") == str(run_id))
        if data.height == 0:
            msg = (
                f"{where}: no run {run_id!r} in the frame; its runs include {ids[:5]}."
            )
            raise InvalidParameterError(msg)
    elif data.height > max_runs:
        msg = (
            f"{where}: the frame holds {data.height:,} runs; at most {max_runs} "
            "waterfalls are drawn at once. Pass run_id='...', or pick runs, e.g. "
            "runs.sort('wall_h', descending=True).head(6), or raise max_runs."
        )
        raise SchemaError(msg)
    rows = data.to_dicts()
    if unit == "auto":
        longest = max(float(r["wall_h"] or 0.0) for r in rows)
        unit = "s" if longest < 2 / 60 else "min" if longest < 2 else "h"
    per = _HOURS_PER[unit]
    frames = []
    for run in rows:
        steps = _waterfall_steps(run, where=where)
        for step in steps:
            for col in ("low", "high", "amount"):
                step[col] = step[f"{col}_h"] / per
            sign = "−" if step["kind"] in ("badput", "unaccounted") else ""
            step["label"] = f"{sign}{_amount_text(step['amount'])} {unit}"
        frames.append(pl.DataFrame(steps))
    seen = {k for steps in frames for k in steps["kind"]}
    kinds = [k for k in _WATERFALL_KINDS if k in seen]  # one legend for all runs
    colour = (
        alt.Color("kind:N")
        .scale(domain=kinds, range=[_WATERFALL_KINDS[k] for k in kinds])
        .title(None)
        .legend(orient="bottom")
    )
    charts = []
    for run, steps in zip(rows, frames, strict=True):
        y = alt.Y("step:N").sort(steps["step"].to_list()).title(None)
        bars = (
            alt.Chart(steps)
            .mark_bar()
            .encode(
                x=alt.X("low:Q").title(f"Wall time ({unit})"),
                x2="high:Q",
                y=y,
                color=colour,
                tooltip=[
                    alt.Tooltip("run_id:N").title("run"),
                    alt.Tooltip("step:N"),
                    alt.Tooltip("amount:Q").format(",.3g").title(f"time ({unit})"),
                    alt.Tooltip("share_of_wall:Q").format(".1%").title("of wall"),
                ],
            )
        )
        labels = (
            alt.Chart(steps)
            .mark_text(align="left", dx=4)
            .encode(x="high:Q", y=y, text="label:N")
        )
        headline = _run_title(run)
        if title is not None and len(rows) == 1:
            headline.text = title
        charts.append(alt.layer(bars, labels, title=headline))
    if len(charts) == 1:
        return charts[0]
    return alt.vconcat(*charts, title=_title(title)).resolve_scale(
        x="independent", y="independent"
    )


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
    _check_rows(
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
    x = alt.X("interval_min:Q").scale(type="log").title("Checkpoint interval (min)")
    y = alt.Y("ettr:Q").axis(format="%").title("ETTR")
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
                y=alt.Y("ettr_lower:Q").axis(format="%").title("ETTR"),
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
        layers.append(
            alt.Chart(points)
            .mark_text(align="left", dx=8, dy=-10)
            .encode(x=x, y=y, text="label:N", color=colour)
        )
    return alt.layer(*layers, title=_title(title))


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
    _check_rows(
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
        _check_rows(published, where=f"{where} (published)", fix="Pick fewer points.")
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
    return alt.layer(*layers, title=_title(title))
