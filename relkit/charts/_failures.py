"""Failure charts: MTBF per group, gaps between failures, survival, event counts."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from relkit.charts._heatmap import natural_order
from relkit.charts._theme import chart_title, check_rows
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = [
    "events_timeline_chart",
    "kaplan_meier_chart",
    "mtbf_chart",
    "tbf_histogram_chart",
]

_ESTIMATE = "estimate"
_LOWER_ONLY = "lower bound only (0 failures)"
#: bin -> (polars every, axis format, tooltip label format, axis title)
_BINS = {
    "hour": ("1h", "%b %d %H:%M", "%Y-%m-%d %H:00 UTC", "UTC hour"),
    "day": ("1d", "%b %d", "%Y-%m-%d", "UTC day"),
    "week": ("1w", "%b %d", "week of %Y-%m-%d", "UTC week (from Monday)"),
}


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
    check_rows(
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
    return alt.layer(interval, points, title=chart_title(title))


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
    check_rows(
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
            .facet(row=row, title=chart_title(title))
            .resolve_scale(y="independent")
        )
    return alt.layer(bars, curves, title=chart_title(title))


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
    check_rows(
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
        groups = natural_order(data[color].unique().to_list())  # 2 before 10
        group_enc["color"] = (
            alt.Color(f"{color}:N").sort(groups).title(color.replace("_", " "))
        )
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
    return alt.layer(band, line, title=chart_title(title))


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
    check_rows(
        data,
        where=where,
        fix=f"Use a coarser bin (e.g. bin='week'), fewer groups (max_groups), or a "
        f"shorter window: events.filter(pl.col('ts') >= start). Groups: {len(order)}.",
    )
    return (
        alt.Chart(data, title=chart_title(title))
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
