"""Time at risk summed per group: unit-hours, node-hours, GPU-hours (private)."""

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import polars as pl

from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.observation._base import (
    TS_COLUMNS,
    US_PER_H,
    epoch_us,
    hours_between,
    ts_epoch,
)
from relkit.schema import UTC as UTC_DTYPE
from relkit.schema import require_columns


# -- the legacy one-window exposure (kept public) --------------------------------
def observation_end(events: pl.DataFrame) -> datetime:
    """Return the latest failure or repair timestamp of an events frame.

    This is *not* the end of observation of a fleet (see :func:`observe`,
    which uses the sources' collection time); it is kept for callers that
    only have failure records and say so.

    Parameters
    ----------
    events : pl.DataFrame
        UTC datetime columns ``ts`` and, optionally, ``repaired_ts`` (nulls
        ignored).

    Returns
    -------
    datetime
        ``max(ts, repaired_ts)`` over all rows, timezone-aware UTC.

    Raises
    ------
    SchemaError
        If ``ts`` is missing or not a datetime column.
    InsufficientDataError
        If there is no non-null timestamp.

    Examples
    --------
    >>> import polars as pl
    >>> from datetime import datetime, UTC
    >>> ev = pl.DataFrame(
    ...     {
    ...         "ts": [
    ...             datetime(2005, 1, 1, tzinfo=UTC),
    ...             datetime(2005, 3, 1, tzinfo=UTC),
    ...         ],
    ...         "repaired_ts": [datetime(2005, 3, 5, tzinfo=UTC), None],
    ...     }
    ... )
    >>> observation_end(ev)
    datetime.datetime(2005, 3, 5, 0, 0, tzinfo=zoneinfo.ZoneInfo(key='UTC'))
    """
    require_columns(events, ["ts"], where="observation_end")
    cols = [c for c in ("ts", "repaired_ts") if c in events.columns]
    epochs = [ts_epoch(events, c, "observation_end").max() for c in cols]
    latest = events.select(pl.max_horizontal(epochs).alias("end")).item()
    if latest is None:
        msg = "observation_end: events has no non-null ts or repaired_ts."
        raise InsufficientDataError(msg)
    return pl.select(pl.lit(latest).cast(UTC_DTYPE)).item()


def build_exposure(
    assets: pl.DataFrame,
    *,
    by: str | Sequence[str] = (),
    window_start: datetime | None = None,
    window_end: datetime | None = None,
) -> pl.DataFrame:
    r"""Sum each group's time at risk in unit-hours and GPU-hours.

    Parameters
    ----------
    assets : pl.DataFrame
        Service windows, one row each: UTC datetime columns ``in_service_ts``,
        ``out_of_service_ts`` (null = still in service), ``observed_from_ts``
        (null = same as ``in_service_ts``), integer ``gpus`` (null = unknown)
        and every ``by`` column. ``host`` (and ``device`` when present) name
        the unit; a unit with several rows counts once in ``n_units``.
    by : str or sequence of str, default ()
        Unit attributes to group by, e.g. ``"system"``.
    window_start : datetime, optional
        Start of the observation window (UTC; naive datetimes are read as UTC).
    window_end : datetime
        End of the observation window (UTC), required: open-ended windows run
        to it.

    Returns
    -------
    pl.DataFrame
        One row per group with at least one unit at risk, sorted by ``by``
        (nulls last): the ``by`` columns, ``n_units`` (Int64: distinct units
        with positive time at risk), ``exposure_h`` (unit-hours) and
        ``exposure_gpu_h`` (GPU-hours; null when any unit of the group has
        null ``gpus``).

    Raises
    ------
    InvalidParameterError
        If ``window_end`` is missing, a window bound is not a datetime, or
        ``window_start`` is after ``window_end``.
    SchemaError
        If a required column is missing or not a datetime, or a row has
        neither ``in_service_ts`` nor ``observed_from_ts``.

    Notes
    -----
    Per window, with :math:`s` = in-service time, :math:`o` = tracking start
    (each filling the other when null), :math:`d` = out-of-service time
    (null = :math:`W_e`) and window :math:`[W_s, W_e]`:

    .. math::

        t = \max\bigl(0,\ \min(d, W_e) - \max(s, o, W_s)\bigr),\qquad
        \text{exposure\_h} = \sum t,\quad
        \text{exposure\_gpu\_h} = \sum t \cdot \text{gpus}

    Examples
    --------
    Node a runs the whole 10-day window (240 h); node b starts tracking on day
    2 and retires on day 6 (96 h); node c retired before the window (0 h).

    >>> import polars as pl
    >>> from datetime import datetime, UTC
    >>> def d(day):
    ...     return datetime(2024, 1, day, tzinfo=UTC)
    >>> assets = pl.DataFrame(
    ...     {
    ...         "host": ["a", "b", "c"],
    ...         "system": ["s1", "s1", "s1"],
    ...         "gpus": [8, 4, 8],
    ...         "in_service_ts": [d(1), None, d(1)],
    ...         "out_of_service_ts": [None, d(6), d(1)],
    ...         "observed_from_ts": [None, d(2), None],
    ...     }
    ... )
    >>> build_exposure(assets, by="system", window_end=d(11)).to_dicts()
    [{'system': 's1', 'n_units': 2, 'exposure_h': 336.0, 'exposure_gpu_h': 2304.0}]
    """
    by_cols = [by] if isinstance(by, str) else list(by)
    if window_end is None:
        msg = (
            "build_exposure: window_end is required (open-ended windows run to "
            "it); relkit.observation.observe() finds the end of data."
        )
        raise InvalidParameterError(msg)
    end_us = epoch_us(window_end, "window_end")
    start_us = None if window_start is None else epoch_us(window_start, "window_start")
    if start_us is not None and start_us > end_us:
        msg = (
            f"build_exposure: window_start {window_start} is after window_end "
            f"{window_end}; swap them."
        )
        raise InvalidParameterError(msg)
    require_columns(assets, [*TS_COLUMNS, "gpus", *by_cols], where="build_exposure")
    ins, out, obs = (ts_epoch(assets, c, "build_exposure") for c in TS_COLUMNS)
    entry = pl.max_horizontal(
        pl.coalesce(ins, obs), pl.coalesce(obs, ins), pl.lit(start_us, dtype=pl.Int64)
    )
    leave = pl.min_horizontal(pl.coalesce(out, pl.lit(end_us)), pl.lit(end_us))
    keys = [c for c in ("host", "device") if c in assets.columns]
    unit = (pl.struct(keys) if keys else pl.int_range(pl.len(), dtype=pl.Int64)).alias(
        "_unit"
    )
    windows = assets.select(
        *by_cols,
        unit,
        pl.coalesce(ins, obs).is_null().alias("_no_start"),
        pl.col("gpus").cast(pl.Float64).alias("_gpus"),
        entry.alias("_entry"),
        leave.alias("_leave"),
    )
    if n_bad := int(windows["_no_start"].sum()):
        hosts = (
            assets.filter(windows["_no_start"])
            .select(pl.col("host") if "host" in assets.columns else pl.first())
            .to_series()
            .head(5)
            .to_list()
        )
        msg = (
            f"build_exposure: {n_bad} unit(s) have neither in_service_ts nor "
            f"observed_from_ts (first: {hosts}); set observed_from_ts to when "
            "tracking began, or "
            "use relkit.observation.observe(), which enters them at their first "
            "record."
        )
        raise SchemaError(msg)
    windows = windows.with_columns(
        exposure_h=(pl.col("_leave") - pl.col("_entry")).cast(pl.Float64) / US_PER_H
    ).filter(pl.col("exposure_h") > 0)
    return _sum_exposure(windows, by_cols)


def _sum_exposure(windows: pl.DataFrame, by_cols: list[str]) -> pl.DataFrame:
    gpu_h = pl.col("exposure_h") * pl.col("_gpus")
    aggs = [
        pl.col("_unit").n_unique().cast(pl.Int64).alias("n_units"),
        pl.col("exposure_h").sum(),
        pl.when(pl.col("_gpus").null_count() > 0)
        .then(pl.lit(None, dtype=pl.Float64))
        .otherwise(gpu_h.sum())
        .alias("exposure_gpu_h"),
    ]
    if not by_cols:
        if windows.height == 0:
            return pl.DataFrame(
                schema={
                    "n_units": pl.Int64,
                    "exposure_h": pl.Float64,
                    "exposure_gpu_h": pl.Float64,
                }
            )
        return windows.select(aggs)
    return windows.group_by(by_cols).agg(aggs).sort(by_cols, nulls_last=True)


def instant_units(
    windows: pl.DataFrame,
    failures: pl.DataFrame,
    *,
    unit: Literal["node", "gpu"] = "node",
) -> pl.DataFrame:
    """Find the units observed for no measurable time (a zero-length window).

    Parameters
    ----------
    windows : pl.DataFrame
        From :func:`relkit.observation.service_windows` (``host``, ``device``,
        ``exposure_h``, attributes).
    failures : pl.DataFrame
        Failures kept inside a window of their unit
        (:func:`relkit.observation.place_failures`): ``host``, ``device``.
    unit : {"node", "gpu"}
        Units are hosts, or (host, device) pairs where devices are units and
        ``unit="gpu"``.

    Returns
    -------
    pl.DataFrame
        One window row per such unit (its first), with ``n_failures`` (Int64,
        0 when it did not fail). A unit whose every window has zero length
        (entry = exit: a host whose logs have a single timed instant, one line,
        without assets) was observed, so it is a unit at risk; a failure it
        holds happened while it was observed, so it counts; but its time at
        risk is unknown and taken as 0 h.
    """
    per_device = windows["device"].is_not_null().any()
    keys = ["host", "device"] if per_device and unit == "gpu" else ["host"]
    positive = windows.filter(pl.col("exposure_h") > 0).select(keys).unique()
    counts = (
        failures.filter(pl.col("ts").is_not_null())
        .group_by(keys)
        .agg(n_failures=pl.len().cast(pl.Int64))
    )
    return (
        windows.filter(pl.col("observed_from_ts") == pl.col("out_of_service_ts"))
        .join(positive, on=keys, how="anti", nulls_equal=True)
        .unique(keys, keep="first", maintain_order=True)
        .join(counts, on=keys, how="left", nulls_equal=True)
        .with_columns(pl.col("n_failures").fill_null(0))
        .sort(keys)
    )


def exposure_by(
    windows: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    unit: Literal["node", "gpu"] = "node",
    gpus_per_node: int = 8,
    failures: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Sum time at risk per group of units, in node-hours or GPU-hours.

    Parameters
    ----------
    windows : pl.DataFrame
        From :func:`service_windows`: ``host``, ``device``, ``gpus``,
        ``observed_from_ts``, ``out_of_service_ts``, ``exposure_h`` and the
        ``by`` columns.
    by : sequence of str
        Unit attributes to group by.
    unit : {"node", "gpu"}
        ``"node"``: node-hours (with per-GPU assets, the time any GPU of the
        node is in service, overlapping windows counted once). ``"gpu"``:
        GPU-hours (with node assets, hours × ``gpus``, ``gpus_per_node`` where
        it is null).
    gpus_per_node : int, default 8
        GPUs of a node whose assets row leaves ``gpus`` empty.
    failures : pl.DataFrame, optional
        The failures kept in the windows: a unit that failed in a window of
        zero length (:func:`instant_units`) then counts in ``n_units`` with
        0 h, so its group has a row and its failure is not charged to
        another unit's time.

    Returns
    -------
    pl.DataFrame
        ``*by, n_units, exposure_h`` (unit-hours of ``unit``; ``n_units``
        counts GPUs with ``unit="gpu"``, a node's ``gpus`` each), one row per
        group with time at risk (or, given ``failures``, with a failed unit).
    """
    by = list(by)
    per_device = windows["device"].is_not_null().any()
    at_risk = windows.filter(pl.col("exposure_h") > 0)
    unit_weight = (
        pl.col("gpus").fill_null(gpus_per_node).cast(pl.Int64)
        if unit == "gpu" and not per_device
        else pl.lit(1, dtype=pl.Int64)
    )
    if unit == "gpu":
        if per_device:
            hours = pl.col("exposure_h")
            key = pl.struct("host", "device")
        else:
            hours = pl.col("exposure_h") * pl.col("gpus").fill_null(gpus_per_node)
            key = pl.col("host")
        frame = at_risk.select(
            *by, _unit=key, exposure_h=hours.cast(pl.Float64), _w=unit_weight
        )
    elif unit == "node":
        if per_device:
            at_risk = _union_per_host(at_risk, by)
        frame = at_risk.select(
            *by, _unit=pl.col("host"), exposure_h="exposure_h", _w=pl.lit(1)
        )
    else:
        msg = f"unit must be 'node' or 'gpu', found {unit!r}."
        raise InvalidParameterError(msg)
    if failures is not None:
        instant = instant_units(windows, failures, unit=unit)
        if instant.height:
            key = (
                pl.struct("host", "device")
                if per_device and unit == "gpu"
                else pl.col("host")
            )
            zero = instant.select(
                *by, _unit=key, exposure_h=pl.lit(0.0), _w=unit_weight
            )
            frame = pl.concat([frame, zero.cast(frame.schema)])  # type: ignore[arg-type]
    # a node of 8 GPUs is 8 units when they are counted per GPU
    aggs = [
        pl.struct("_unit", "_w")
        .unique()
        .struct.field("_w")
        .sum()
        .cast(pl.Int64)
        .alias("n_units"),
        pl.col("exposure_h").sum(),
    ]
    if not by:
        if frame.height == 0:
            return pl.DataFrame(schema={"n_units": pl.Int64, "exposure_h": pl.Float64})
        return frame.select(aggs)
    return frame.group_by(by).agg(aggs).sort(by, nulls_last=True)


def _union_per_host(windows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Merge the overlapping windows of a node's GPUs into node windows."""
    keys = ["host", *[c for c in by if c != "host"]]
    merged = (
        windows.sort([*keys, "observed_from_ts"])
        .with_columns(_reach=pl.col("out_of_service_ts").cum_max().shift(1).over(keys))
        .with_columns(
            _run=(
                pl.col("_reach").is_null()
                | (pl.col("observed_from_ts") > pl.col("_reach"))
            )
            .cum_sum()
            .over(keys)
        )
        .group_by([*keys, "_run"])
        .agg(
            observed_from_ts=pl.col("observed_from_ts").min(),
            out_of_service_ts=pl.col("out_of_service_ts").max(),
        )
    )
    return merged.with_columns(
        exposure_h=hours_between(
            pl.col("out_of_service_ts"), pl.col("observed_from_ts")
        )
    )
