"""Competing-risks chart: cumulative incidence per failure mode with bands."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from relkit.charts._theme import chart_title, check_rows
from relkit.errors import SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["cumulative_incidence_chart"]

_COLS = ["time_h", "cumulative_incidence", "lower", "upper"]


def _thin(frame: pl.DataFrame, keys: list[str], budget: int) -> pl.DataFrame:
    """Keep at most ``budget`` step points per curve, always the first and last."""
    return (
        frame.with_columns(_i=pl.int_range(pl.len()).over(keys), _n=pl.len().over(keys))
        .filter(
            (pl.col("_n") <= budget)
            | (pl.col("_i") == pl.col("_n") - 1)
            | (
                (pl.col("_i") * (budget - 1) // (pl.col("_n") - 1))
                != ((pl.col("_i") - 1) * (budget - 1) // (pl.col("_n") - 1))
            )
        )
        .drop("_i", "_n")
    )


def cumulative_incidence_chart(
    cif: pl.DataFrame,
    *,
    group: str | None = None,
    mode: str = "failure_mode",
    title: str | None = None,
    max_points: int = 400,
) -> alt.LayerChart | alt.FacetChart:
    """Draw each failure mode's cumulative incidence as a step curve with its band.

    Parameters
    ----------
    cif : pl.DataFrame
        Output of :func:`relkit.survival.cumulative_incidence` or
        :func:`relkit.answers.cumulative_incidence_by`: ``<mode>``,
        ``time_h`` (h), ``cumulative_incidence``, ``lower``, ``upper``
        (fractions in [0, 1]), plus the ``group`` column when given. Each
        curve starts at 0 at time 0 (a point is added).
    group : str, optional
        Group column: one facet per value (curves of one group side by side).
    mode : str, default "failure_mode"
        The failure-mode column (colour).
    title : str, optional
        Chart title.
    max_points : int, default 400
        Step points kept per curve (evenly spaced, the last kept), so that
        the chart embeds at most 5,000 rows (Altair's limit).

    Returns
    -------
    altair.LayerChart or altair.FacetChart
        A step-after band (``lower``..``upper``, 20 % opacity) under a
        step-after line, colour by mode; x "Age in service (h)", y
        "P(failed by t) of the mode" on [0, 1] as percent; faceted by
        ``group`` when given.

    Raises
    ------
    SchemaError
        If a column is missing, another column varies while ``group`` is
        None (several groups in one frame), or the thinned frame still has
        over 5,000 rows.

    Examples
    --------
    >>> import polars as pl
    >>> cif = pl.DataFrame(
    ...     {
    ...         "failure_mode": ["gpu", "gpu", "net"],
    ...         "time_h": [10.0, 20.0, 15.0],
    ...         "cumulative_incidence": [0.1, 0.2, 0.1],
    ...         "lower": [0.05, 0.1, 0.04],
    ...         "upper": [0.2, 0.3, 0.2],
    ...     }
    ... )
    >>> spec = cumulative_incidence_chart(cif).to_dict()
    >>> [layer["mark"]["type"] for layer in spec["layer"]]
    ['area', 'line']
    """
    import altair as alt

    where = "cumulative_incidence_chart"
    require_columns(cif, [mode, *_COLS] + ([group] if group else []), where=where)
    keys = [mode] + ([group] if group else [])
    if group is None:
        extra = [
            c
            for c in cif.columns
            if c not in (*keys, *_COLS, "n_at_risk", "n_events")
            and cif[c].n_unique() > 1
        ]
        if extra:
            msg = (
                f"{where}: the frame holds several groups (column(s) {extra} vary) "
                f"but group is None. Pass group={extra[0]!r}, or filter to one group."
            )
            raise SchemaError(msg)
    data = cif.select(*keys, *_COLS).with_columns(
        pl.col(c).cast(pl.String).fill_null("(missing)") for c in keys
    )
    origin = (
        data.group_by(keys)
        .agg()
        .with_columns(
            time_h=pl.lit(0.0),
            cumulative_incidence=pl.lit(0.0),
            lower=pl.lit(0.0),
            upper=pl.lit(0.0),
        )
    )
    data = pl.concat([origin, data.filter(pl.col("time_h") > 0)], how="diagonal")
    data = _thin(data.sort([*keys, "time_h"]), keys, max(max_points, 2))
    check_rows(
        data,
        where=where,
        fix="Lower max_points, or plot fewer groups or modes.",
    )
    y_scale = alt.Scale(domain=[0, 1])
    y_title = "P(failed by t) of the mode"
    color = alt.Color(f"{mode}:N").title(mode.replace("_", " "))
    x = alt.X("time_h:Q").title("Age in service (h)")
    base = alt.Chart(data)
    band = base.mark_area(interpolate="step-after", opacity=0.2).encode(
        x=x,
        y=alt.Y("lower:Q").scale(y_scale).axis(format="%").title(y_title),
        y2="upper:Q",
        color=color,
    )
    tooltip: list[Any] = [
        alt.Tooltip(f"{mode}:N"),
        *([alt.Tooltip(f"{group}:N")] if group else []),
        alt.Tooltip("time_h:Q").format(",.1f").title("age (h)"),
        alt.Tooltip("cumulative_incidence:Q").format(".2%").title("F(t)"),
        alt.Tooltip("lower:Q").format(".2%").title("lower"),
        alt.Tooltip("upper:Q").format(".2%").title("upper"),
    ]
    line = base.mark_line(interpolate="step-after", strokeWidth=2).encode(
        x=x,
        y=alt.Y("cumulative_incidence:Q")
        .scale(y_scale)
        .axis(format="%")
        .title(y_title),
        color=color,
        tooltip=tooltip,
    )
    if group:
        return alt.layer(band, line).facet(
            facet=alt.Facet(f"{group}:N").title(group.replace("_", " ")),
            columns=3,
            title=chart_title(title),
        )
    return alt.layer(band, line, title=chart_title(title))
