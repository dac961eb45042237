"""Interruption charts: the Pareto of job interruptions by cause."""

from __future__ import annotations

from typing import TYPE_CHECKING

import polars as pl

from relkit.charts._theme import chart_title, check_rows
from relkit.errors import InsufficientDataError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["interruption_pareto_chart"]


def interruption_pareto_chart(
    by_cause: pl.DataFrame,
    *,
    cause: str = "cause",
    count: str = "interruptions",
    title: str | None = None,
) -> alt.LayerChart:
    """Draw a Pareto chart of interruptions: bars by cause and the cumulative share.

    Causes are sorted from the most interruptions to the fewest (ties by name);
    a line over the bars gives the running share of all interruptions, so the
    few causes that make most of the interruptions stand out.

    Parameters
    ----------
    by_cause : pl.DataFrame
        One row per cause: ``cause`` (text) and ``count`` (integer >= 0), e.g.
        interruptions grouped by ``cause`` or by Table 5 ``component``. At most
        5,000 rows.
    cause, count : str, default "cause" and "interruptions"
        Column names.
    title : str, optional
        Chart title; default "Job interruptions by cause (Pareto)".

    Returns
    -------
    altair.LayerChart
        A bar layer (interruptions, left axis) and a line with points
        (cumulative share of all interruptions in %, right axis).

    Raises
    ------
    SchemaError
        If a column is missing or the frame has over 5,000 rows.
    InsufficientDataError
        If the counts add up to zero.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"cause": ["user", "hardware"], "interruptions": [3, 9]})
    >>> spec = interruption_pareto_chart(frame).to_dict()
    >>> spec["layer"][0]["encoding"]["x"]["sort"]
    ['hardware', 'user']
    >>> [v["cumulative_pct"] for v in spec["datasets"][spec["data"]["name"]]]
    [75.0, 100.0]
    """
    import altair as alt

    where = "interruption_pareto_chart"
    require_columns(by_cause, [cause, count], where=where)
    check_rows(by_cause, where=where, fix="Group the causes more coarsely.")
    frame = (
        by_cause.select(
            pl.col(cause).cast(pl.String).fill_null("(none)").alias("cause"),
            pl.col(count).cast(pl.Int64).alias("interruptions"),
        )
        .group_by("cause")
        .agg(pl.col("interruptions").sum())
        .filter(pl.col("interruptions") > 0)
        .sort(["interruptions", "cause"], descending=[True, False])
    )
    total = frame["interruptions"].sum() if frame.height else 0
    if total == 0:
        msg = f"{where}: no interruption to draw (all counts are zero)."
        raise InsufficientDataError(msg)
    frame = frame.with_columns(
        cumulative_pct=(pl.col("interruptions").cum_sum() * 100.0 / total).round(2)
    )
    order = frame["cause"].to_list()
    x = alt.X("cause:N", sort=order, title="cause", axis=alt.Axis(labelAngle=-30))
    base = alt.Chart(
        frame, title=chart_title(title or "Job interruptions by cause (Pareto)")
    )
    bars = base.mark_bar(color="#4c78a8").encode(
        x=x,
        y=alt.Y(
            "interruptions:Q",
            title="interruptions (count)",
            axis=alt.Axis(tickMinStep=1, format="d"),  # whole counts only
        ),
        tooltip=["cause:N", "interruptions:Q", "cumulative_pct:Q"],
    )
    line = base.mark_line(color="#e45756", point=True).encode(
        x=x,
        y=alt.Y(
            "cumulative_pct:Q",
            title="cumulative share of interruptions (%)",
            scale=alt.Scale(domain=[0, 100]),
        ),
        tooltip=["cause:N", "interruptions:Q", "cumulative_pct:Q"],
    )
    width = min(640, max(320, 64 * frame.height))
    return (
        alt.layer(bars, line)
        .resolve_scale(y="independent")
        .properties(width=width, height=300)
    )
