"""Scale charts: a job's mean time to failure against its GPU count."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import polars as pl

from relkit.charts._theme import chart_title, check_rows
from relkit.errors import InsufficientDataError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["mttf_scale_chart"]

#: published point kind -> shape
_SHAPES = {"observed": "circle", "projected": "diamond"}


def _finite_positive(frame: pl.DataFrame, cols: list[str]) -> pl.DataFrame:
    return frame.with_columns(pl.col(c).cast(pl.Float64) for c in cols).filter(
        *(pl.col(c).is_finite() & (pl.col(c) > 0) for c in ("gpus", "mttf_h"))
    )


def _bounds(frame: pl.DataFrame, where: str) -> list[str]:
    have = [c for c in ("mttf_lower_h", "mttf_upper_h") if c in frame.columns]
    if len(have) == 1:
        msg = f"{where}: give both mttf_lower_h and mttf_upper_h, or neither."
        raise SchemaError(msg)
    return have


def _log_ticks(low: float, high: float, base: int) -> tuple[list[float], list[float]]:
    """Domain and ticks at powers of ``base`` around [low, high] (at most ~10)."""
    first = math.floor(math.log(low, base) + 1e-9)
    last = max(math.ceil(math.log(high, base) - 1e-9), first + 1)
    step = max(1, math.ceil((last - first + 1) / 10))
    last = first + math.ceil((last - first) / step) * step
    ticks = [float(base**k) for k in range(first, last + 1, step)]
    return [float(base**first), float(base**last)], ticks


def mttf_scale_chart(
    projection: pl.DataFrame,
    *,
    observed: pl.DataFrame | None = None,
    published: pl.DataFrame | None = None,
    title: str | None = None,
) -> alt.LayerChart:
    """Draw a job's MTTF against its GPU count: projection, measurements, papers.

    The projected MTTF is a line over base-2 log GPUs and log hours, with a
    band between its bounds when given; MTTFs measured on the store's jobs are
    points with their confidence interval as a vertical rule; published values
    are black points whose shape says whether they were observed or projected
    and whose tooltip names the source.

    Parameters
    ----------
    projection : pl.DataFrame
        E.g. :func:`relkit.scale.scale_projection`: ``gpus`` (> 0) and
        ``mttf_h`` (hours, > 0), optionally ``mttf_lower_h`` and
        ``mttf_upper_h`` (both or neither). Rows with a non-positive or null
        GPU count or MTTF are left out. At most 5,000 rows.
    observed : pl.DataFrame, optional
        Measured job MTTFs: ``gpus``, ``mttf_h`` and optionally the bounds
        (e.g. :func:`relkit.scale.job_mttf_by_size` with ``gpus_max`` as
        ``gpus``); rows without an MTTF (no failure) are left out.
    published : pl.DataFrame, optional
        ``source``, ``gpus``, ``mttf_h``, ``kind`` ("observed" or "projected")
        and ``note``.
    title : str, optional
        Chart title.

    Returns
    -------
    altair.LayerChart
        Layers in order: ``area`` (only with bounds), ``line`` (``mttf_h``
        against ``gpus``), with ``observed`` a ``rule`` (only with bounds) and
        a ``point`` layer, with ``published`` a ``point`` layer (shape by
        ``kind``). x "GPUs in the job (log scale, base 2)", y "MTTF (h, log
        scale)"; ticks at powers of two and of ten.

    Raises
    ------
    SchemaError
        If a column is missing, only one bound is given, or a frame has over
        5,000 rows.
    InsufficientDataError
        If no projection row has a GPU count and an MTTF above 0.

    Examples
    --------
    >>> import polars as pl
    >>> proj = pl.DataFrame({"gpus": [1024, 16384], "mttf_h": [28.8, 1.8]})
    >>> spec = mttf_scale_chart(proj, title="MTTF").to_dict()
    >>> spec["layer"][0]["mark"]["type"], spec["layer"][0]["encoding"]["y"]["title"]
    ('line', 'MTTF (h, log scale)')
    """
    import altair as alt

    where = "mttf_scale_chart"
    require_columns(projection, ["gpus", "mttf_h"], where=where)
    check_rows(projection, where=where, fix="Project fewer GPU counts.")
    band = _bounds(projection, where)
    data = _finite_positive(
        projection.select("gpus", "mttf_h", *band), ["gpus", "mttf_h", *band]
    ).sort("gpus")
    if data.height == 0:
        msg = (
            f"{where}: no projection row has gpus > 0 and mttf_h > 0 "
            f"({projection.height} rows)."
        )
        raise InsufficientDataError(msg)
    frames: list[pl.DataFrame] = [data.select("gpus", "mttf_h")]
    if band:
        frames.append(data.select("gpus", pl.col("mttf_lower_h").alias("mttf_h")))
        frames.append(data.select("gpus", pl.col("mttf_upper_h").alias("mttf_h")))
    points = None
    if observed is not None:
        require_columns(observed, ["gpus", "mttf_h"], where=f"{where} (observed)")
        check_rows(observed, where=f"{where} (observed)", fix="Use fewer sizes.")
        obs_band = _bounds(observed, f"{where} (observed)")
        points = _finite_positive(
            observed.select("gpus", "mttf_h", *obs_band), ["gpus", "mttf_h", *obs_band]
        )
        frames.append(points.select("gpus", "mttf_h"))
    papers = None
    if published is not None:
        cols = ["source", "gpus", "mttf_h", "kind", "note"]
        require_columns(published, cols, where=f"{where} (published)")
        check_rows(published, where=f"{where} (published)", fix="Pick fewer points.")
        papers = _finite_positive(published.select(cols), ["gpus", "mttf_h"])
        frames.append(papers.select("gpus", "mttf_h"))
    span = pl.concat(frames).filter(
        pl.col("mttf_h").is_finite() & (pl.col("mttf_h") > 0)
    )
    x_domain, x_ticks = _log_ticks(span["gpus"].min(), span["gpus"].max(), 2)  # type: ignore[arg-type]
    y_domain, y_ticks = _log_ticks(span["mttf_h"].min(), span["mttf_h"].max(), 10)  # type: ignore[arg-type]
    x = (
        alt.X("gpus:Q")
        .scale(type="log", base=2, domain=x_domain)
        .axis(values=x_ticks, format=",")
        .title("GPUs in the job (log scale, base 2)")
    )
    y_title = "MTTF (h, log scale)"

    def y(col: str) -> Any:  # noqa: ANN401 - alt.Y
        return (
            alt.Y(f"{col}:Q")
            .scale(type="log", domain=y_domain)
            .axis(values=y_ticks, format=",~g")
            .title(y_title)
        )

    tip = [
        alt.Tooltip("gpus:Q").format(",").title("GPUs"),
        alt.Tooltip("mttf_h:Q").format(",.3~g").title("MTTF (h)"),
    ]
    layers: list[Any] = []
    if band:
        layers.append(
            alt.Chart(data)
            .mark_area(opacity=0.15, color="#4c78a8")
            .encode(
                x=x,
                y=y("mttf_lower_h"),
                y2="mttf_upper_h:Q",
                tooltip=[
                    *tip,
                    alt.Tooltip("mttf_lower_h:Q").format(",.3~g").title("lower (h)"),
                    alt.Tooltip("mttf_upper_h:Q").format(",.3~g").title("upper (h)"),
                ],
            )
        )
    layers.append(
        alt.Chart(data)
        .mark_line(strokeWidth=2, point=True, color="#4c78a8")
        .encode(x=x, y=y("mttf_h"), tooltip=tip)
    )
    if points is not None and points.height:
        if "mttf_lower_h" in points.columns:
            layers.append(
                alt.Chart(points.drop_nulls(["mttf_lower_h", "mttf_upper_h"]))
                .mark_rule(color="#e45756")
                .encode(x=x, y=y("mttf_lower_h"), y2="mttf_upper_h:Q")
            )
        layers.append(
            alt.Chart(points.with_columns(kind=pl.lit("measured on this store")))
            .mark_point(filled=True, size=70, color="#e45756", opacity=1)
            .encode(x=x, y=y("mttf_h"), tooltip=[*tip, alt.Tooltip("kind:N")])
        )
    if papers is not None and papers.height:
        kinds = papers["kind"].unique(maintain_order=True).to_list()
        layers.append(
            alt.Chart(papers)
            .mark_point(filled=True, size=110, color="black", opacity=1)
            .encode(
                x=x,
                y=y("mttf_h"),
                shape=alt.Shape("kind:N")
                .scale(domain=kinds, range=[_SHAPES.get(k, "square") for k in kinds])
                .title("published"),
                tooltip=[alt.Tooltip("source:N"), *tip, alt.Tooltip("note:N")],
            )
        )
    return alt.layer(*layers, title=chart_title(title))
