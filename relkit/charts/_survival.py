"""Survival charts: each mode's fitted hazard over age, and probability plots."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from relkit.charts._theme import chart_title, check_rows
from relkit.errors import InsufficientDataError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["hazard_chart", "probability_plot_chart"]

_COLS = ["model", "time_h", "hazard_per_h"]


def hazard_chart(
    curves: pl.DataFrame,
    *,
    color: str | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    r"""Draw each group's fitted hazard rate :math:`h(t)` on log-log axes.

    On log-log axes a Weibull hazard is a straight line of slope
    :math:`\beta - 1`: falling (infant mortality, :math:`\beta < 1`), flat
    (random failures, the exponential) or rising (wear-out, :math:`\beta > 1`),
    so the modes' shapes compare at a glance.

    Parameters
    ----------
    curves : pl.DataFrame
        Output of :func:`relkit.survival.model_density` restricted to one model
        per group (e.g. each group's best): ``model``, ``time_h`` (h, > 0),
        ``hazard_per_h`` (failures per unit-hour, > 0), plus the ``color``
        column when given. Non-positive or non-finite hazards (cannot sit on a
        log axis) are left out and counted in the subtitle. At most 5,000 rows.
    color : str, optional
        Group column: one line per value (e.g. ``failure_mode``).
    title : str, optional
        Chart title.

    Returns
    -------
    altair.LayerChart
        One line per group, x "Age (h)" and y "Hazard rate (failures per
        unit-hour)", both log-scaled; the tooltip names the group, the model,
        the age and the rate.

    Raises
    ------
    SchemaError
        If a required column is missing, the frame has over 5,000 rows, or
        ``color`` is None while the frame holds several groups or models.
    InsufficientDataError
        If no row has a positive, finite hazard.

    Examples
    --------
    >>> import polars as pl
    >>> curves = pl.DataFrame(
    ...     {
    ...         "model": ["weibull"] * 2,
    ...         "time_h": [1.0, 10.0],
    ...         "hazard_per_h": [0.5, 0.05],
    ...     }
    ... )
    >>> spec = hazard_chart(curves).to_dict()
    >>> spec["layer"][0]["encoding"]["y"]["scale"]["type"]
    'log'
    """
    import altair as alt

    where = "hazard_chart"
    require_columns(curves, _COLS + ([color] if color else []), where=where)
    check_rows(
        curves,
        where=where,
        fix="Evaluate fewer grid points per group (model_density n_points).",
    )
    keys = [color] if color else []
    if color is None:
        extra = [c for c in curves.columns if c not in _COLS and c != "density"]
        varying = [c for c in [*extra, "model"] if curves[c].n_unique() > 1]
        if varying:
            msg = (
                f"{where}: the frame holds several curves (column(s) {varying} "
                f"vary) but color is None. Pass color={varying[0]!r}, or filter "
                "to one group and model."
            )
            raise SchemaError(msg)
    finite = (
        pl.col("hazard_per_h").is_finite()
        & (pl.col("hazard_per_h") > 0)
        & (pl.col("time_h") > 0)
    )
    data = curves.filter(finite).select(*keys, *_COLS)
    left_out = curves.height - data.height
    if data.height == 0:
        msg = (
            f"{where}: no row has a positive, finite hazard and age "
            f"({curves.height} row(s)), so there is nothing to draw on log axes."
        )
        raise InsufficientDataError(msg)
    if color:
        data = data.with_columns(pl.col(color).cast(pl.String).fill_null("(missing)"))
    data = data.sort([*keys, "time_h"])
    subtitle = (
        f"{left_out:,} point(s) with a zero or non-finite rate left out"
        if left_out
        else alt.Undefined
    )
    enc: dict[str, Any] = {}
    if color:
        enc["color"] = alt.Color(f"{color}:N").title(color.replace("_", " "))
    line = (
        alt.Chart(data)
        .mark_line(strokeWidth=2)
        .encode(
            x=alt.X("time_h:Q").scale(type="log").title("Age (h)"),
            y=alt.Y("hazard_per_h:Q")
            .scale(type="log")
            .title("Hazard rate (failures per unit-hour)"),
            tooltip=[
                *([alt.Tooltip(f"{color}:N")] if color else []),
                alt.Tooltip("model:N"),
                alt.Tooltip("time_h:Q").format(",.1f").title("age (h)"),
                alt.Tooltip("hazard_per_h:Q").format(".3g").title("h(t) per h"),
            ],
            **enc,
        )
    )
    heading: Any = chart_title(title)
    if subtitle is not alt.Undefined:
        heading = alt.TitleParams(text=title or "", subtitle=subtitle)
    return alt.layer(line, title=heading)


#: Axis titles of :func:`relkit.survival.probability_plot`'s ``x`` and ``y``.
_PROBABILITY_AXES = {
    "exponential": ("t (h)", "−ln(1 − F)"),
    "weibull": ("ln t (t in h)", "ln(−ln(1 − F))"),
    "lognormal": ("ln t (t in h)", "Φ⁻¹(F) (standard normal quantile)"),
    "loglogistic": ("ln t (t in h)", "logit F"),
    "gamma": ("Fitted quantile (h)", "Observed time (h)"),
    "gengamma": ("Fitted quantile (h)", "Observed time (h)"),
}
_PLOT_COLS = ["model", "time_h", "cdf_empirical", "x", "y", "y_fitted"]


def probability_plot_chart(
    points: pl.DataFrame,
    *,
    color: str | None = None,
    title: str | None = None,
    max_points: int = 1000,
) -> alt.LayerChart:
    """Draw a probability plot: the data's points and the fitted model's line.

    On the model's linearising axes the points of data the model fits lie
    along the line; a bend says the model is wrong where it bends (Meeker &
    Escobar, *Statistical Methods for Reliability Data*, Wiley 1998, ch. 6).

    Parameters
    ----------
    points : pl.DataFrame
        Output of :func:`relkit.survival.probability_plot` for one model:
        ``model, time_h, cdf_empirical, x, y, y_fitted`` plus the ``color``
        column when given. At most 5,000 rows.
    color : str, optional
        Group column: one colour per group.
    title : str, optional
        Chart title.
    max_points : int, default 1000
        Most points drawn per group: beyond it the points are thinned evenly
        along the curve (first and last kept), and the subtitle says so.

    Returns
    -------
    altair.LayerChart
        Points at (``x``, ``y``) and the fitted line (``x``, ``y_fitted``;
        rows where it is null draw no line), axes titled for the model.

    Raises
    ------
    SchemaError
        If a required column is missing, the frame holds several models, has
        over 5,000 rows, or several groups while ``color`` is None.
    InsufficientDataError
        If the frame is empty.

    Examples
    --------
    >>> import polars as pl
    >>> pts = pl.DataFrame(
    ...     {
    ...         "model": ["weibull"] * 2,
    ...         "time_h": [1.0, 10.0],
    ...         "cdf_empirical": [0.25, 0.75],
    ...         "x": [0.0, 2.3026],
    ...         "y": [-1.2459, 0.3266],
    ...         "y_fitted": [-1.2, 0.3],
    ...     }
    ... )
    >>> spec = probability_plot_chart(pts).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['point', 'line']
    """
    import altair as alt

    where = "probability_plot_chart"
    require_columns(points, _PLOT_COLS + ([color] if color else []), where=where)
    check_rows(points, where=where, fix="Plot fewer groups.")
    if points.height == 0:
        msg = f"{where}: the frame is empty, so there is no point to draw."
        raise InsufficientDataError(msg)
    models = points["model"].unique().to_list()
    if len(models) > 1:
        msg = (
            f"{where}: the frame holds several models {sorted(models)}; each has "
            "its own axes. Filter to one model."
        )
        raise SchemaError(msg)
    if color is None:
        extra = [c for c in points.columns if c not in _PLOT_COLS]
        if varying := [c for c in extra if points[c].n_unique() > 1]:
            msg = (
                f"{where}: the frame holds several groups (column(s) {varying} "
                f"vary) but color is None. Pass color={varying[0]!r}."
            )
            raise SchemaError(msg)
    x_title, y_title = _PROBABILITY_AXES.get(models[0], ("x", "y"))
    keys = [color] if color else []
    if max_points < 2:
        msg = f"{where}: max_points must be at least 2, found {max_points}."
        raise SchemaError(msg)
    data = points.select(*keys, *_PLOT_COLS).sort([*keys, "x"])
    rank, size = pl.int_range(pl.len()), pl.len()
    if keys:
        rank, size = rank.over(keys), size.over(keys)
    step = (size + max_points - 1) // max_points
    data = data.filter((rank % step == 0) | (rank == size - 1))
    thinned = points.height - data.height
    if color:
        data = data.with_columns(pl.col(color).cast(pl.String).fill_null("(missing)"))
    enc: dict[str, Any] = {}
    if color:
        enc["color"] = alt.Color(f"{color}:N").title(color.replace("_", " "))
    base = alt.Chart(data)
    dots = base.mark_point(filled=True, size=30).encode(
        x=alt.X("x:Q").title(x_title).scale(zero=False),
        y=alt.Y("y:Q").title(y_title).scale(zero=False),
        tooltip=[
            *([alt.Tooltip(f"{color}:N")] if color else []),
            alt.Tooltip("time_h:Q").format(",.2f").title("time (h)"),
            alt.Tooltip("cdf_empirical:Q").format(".3f").title("F (Kaplan-Meier)"),
        ],
        **enc,
    )
    line = (
        base.transform_filter("isValid(datum.y_fitted)")
        .mark_line(strokeDash=[6, 3])
        .encode(x="x:Q", y="y_fitted:Q", **enc)
    )
    heading: Any = chart_title(title)
    if thinned:
        heading = alt.TitleParams(
            text=title or "",
            subtitle=f"{data.height:,} of {points.height:,} points drawn, evenly "
            "along each curve",
        )
    return alt.layer(dots, line, title=heading)
