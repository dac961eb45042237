"""Incident heatmap: incidents per unit (host or rack) and time bin."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING

import polars as pl

from relkit.charts._theme import MAX_ROWS, chart_title, check_rows
from relkit.display import natural_key
from relkit.errors import InsufficientDataError, InvalidParameterError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["incident_heatmap_chart", "natural_order"]

#: Candidate time bins, finest first: (polars ``every``, plain name, length).
_BINS = (
    ("1h", "1 hour", timedelta(hours=1)),
    ("6h", "6 hours", timedelta(hours=6)),
    ("1d", "1 day", timedelta(days=1)),
    ("1w", "1 week", timedelta(weeks=1)),
    ("1mo", "1 month", timedelta(days=30.44)),
    ("3mo", "3 months", timedelta(days=91.3)),
    ("1y", "1 year", timedelta(days=365.25)),
)


def natural_order(values: list[str]) -> list[str]:
    """Sort ids naturally: digit runs as numbers, so ``n2`` comes before ``n10``.

    Parameters
    ----------
    values : list of str
        Ids (hosts, racks, systems); nulls are not allowed.

    Returns
    -------
    list of str
        The same ids, sorted.

    Examples
    --------
    >>> natural_order(["n10", "n2", "m1", "2", "10"])
    ['2', '10', 'm1', 'n2', 'n10']
    """
    return sorted(values, key=natural_key)


def incident_heatmap_chart(
    incidents: pl.DataFrame,
    *,
    unit: str = "host",
    max_units: int = 60,
    max_bins: int = 60,
    title: str | None = None,
) -> alt.Chart:
    """Draw incidents per unit and time bin as a heatmap.

    Each cell counts the incidents that started in a time bin on one unit
    (a host, or a rack when the caller passes ``unit="rack"``). The bin is the
    finest of 1 hour, 6 hours, 1 day, 1 week, 1 month, 3 months or 1 year that
    keeps the span within ``max_bins`` bins; units beyond the ``max_units``
    with most incidents are folded into one row ``other (N units)``. Only cells
    with incidents are embedded, so the data stays under
    :data:`relkit.charts.MAX_ROWS` rows (at most ``max_units + 1`` times
    ``max_bins``). Units sort naturally on the y axis (``n2`` before ``n10``).

    Parameters
    ----------
    incidents : pl.DataFrame
        One row per incident with ``start_ts`` (UTC datetime) and ``unit``
        (text); e.g. :func:`relkit.answers.incident_table`.
    unit : str, default "host"
        The column that names the rows of the heatmap.
    max_units : int, default 60
        Most units drawn as their own row (>= 1).
    max_bins : int, default 60
        Most time bins across the span (>= 1).
    title : str, optional
        Chart title; default names the unit and the bin.

    Returns
    -------
    altair.Chart
        ``rect`` marks: x the bin (UTC), y the unit, colour the incident count;
        tooltips give the unit, the bin and the count.

    Raises
    ------
    SchemaError
        If a column is missing.
    InsufficientDataError
        If no incident has a start time and a unit.
    InvalidParameterError
        If ``max_units`` or ``max_bins`` is below 1, or their product is
        above :data:`relkit.charts.MAX_ROWS`.

    Examples
    --------
    >>> import datetime as dt
    >>> import polars as pl
    >>> t = dt.datetime(2025, 1, 1, tzinfo=dt.UTC)
    >>> frame = pl.DataFrame(
    ...     {"host": ["n10", "n2", "n2"], "start_ts": [t, t, t + dt.timedelta(days=3)]}
    ... )
    >>> spec = incident_heatmap_chart(frame).to_dict()
    >>> spec["encoding"]["y"]["sort"], spec["encoding"]["color"]["title"]
    (['n2', 'n10'], 'incidents (count)')
    """
    import altair as alt

    where = "incident_heatmap_chart"
    require_columns(incidents, [unit, "start_ts"], where=where)
    if max_units < 1 or max_bins < 1 or (max_units + 1) * max_bins > MAX_ROWS:
        msg = (
            f"{where}: max_units and max_bins must be >= 1 with (max_units + 1) x "
            f"max_bins <= {MAX_ROWS:,}; found {max_units!r} and {max_bins!r}."
        )
        raise InvalidParameterError(msg)
    rows = incidents.select(
        pl.col(unit).cast(pl.String).alias("unit"), "start_ts"
    ).drop_nulls()
    if rows.height == 0:
        msg = f"{where}: no incident has both a start time and a {unit}; no chart."
        raise InsufficientDataError(msg)
    first, last = rows["start_ts"].min(), rows["start_ts"].max()
    span = last - first  # type: ignore[operator]
    every, name, length = next((b for b in _BINS if span / b[2] < max_bins), _BINS[-1])
    ranked = (
        rows.group_by("unit")
        .agg(n=pl.len())
        .sort(["n", "unit"], descending=[True, False])
    )
    kept = ranked.head(max_units)["unit"].to_list()
    n_other = ranked.height - len(kept)
    other = f"other ({n_other:,} {unit}s)"
    cells = (
        rows.with_columns(
            unit=pl.when(pl.col("unit").is_in(kept))
            .then(pl.col("unit"))
            .otherwise(pl.lit(other)),
            bin_start=pl.col("start_ts").dt.truncate(every),
        )
        .group_by("unit", "bin_start")
        .agg(incidents=pl.len())
        .with_columns(bin_end=pl.col("bin_start").dt.offset_by(every))
        .sort("unit", "bin_start")
    )
    check_rows(cells, where=where, fix="Lower max_units or max_bins.")
    order = natural_order(kept) + ([other] if n_other else [])
    label = unit
    heading = chart_title(title or f"Incidents per {label} and {name}")
    return (
        alt.Chart(cells, title=heading)
        .mark_rect()
        .encode(
            x=alt.X(
                "bin_start:T",
                title=f"time (UTC, bins of {name})",
                # the month always shows (not "Thu 07"), the hour for hour bins
                axis=alt.Axis(
                    format="%b %d %H:%M"
                    if length < timedelta(days=1)
                    else ("%b %d" if length < timedelta(days=30) else "%b %Y")
                ),
                scale=alt.Scale(type="utc"),
            ),
            x2="bin_end:T",
            y=alt.Y("unit:N", sort=order, title=label),
            color=alt.Color(
                "incidents:Q",
                title="incidents (count)",
                scale=alt.Scale(scheme="oranges"),
            ),
            tooltip=[
                alt.Tooltip("unit:N", title=label),
                alt.Tooltip("bin_start:T", title="bin start (UTC)"),
                alt.Tooltip("incidents:Q", title="incidents"),
            ],
        )
    )
