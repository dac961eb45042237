r"""Time at risk: unit-hours and GPU-hours per group from the assets table.

Exposure is the denominator of every rate and MTBF. A unit is at risk from the
latest of its entry into service, the start of tracking and the window start,
until the earliest of its retirement and the window end (right-censoring).
"""

from collections.abc import Sequence
from datetime import UTC, datetime

import polars as pl

from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.schema import UTC as UTC_DTYPE
from relkit.schema import require_columns

__all__ = ["build_exposure", "observation_end"]

_US_PER_H = 3_600_000_000.0
_TS_COLUMNS = ("in_service_ts", "out_of_service_ts", "observed_from_ts")


def _epoch_us(value: datetime, name: str) -> int:
    if not isinstance(value, datetime):
        msg = (
            f"{name} must be a datetime (UTC), e.g. "
            f"datetime(2005, 1, 1, tzinfo=UTC); got {value!r}."
        )
        raise InvalidParameterError(msg)
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def _ts_epoch(frame: pl.DataFrame, column: str, where: str) -> pl.Expr:
    dtype = frame.schema[column]
    if dtype == pl.Null:
        return pl.lit(None, dtype=pl.Int64)
    if not isinstance(dtype, pl.Datetime):
        msg = (
            f"{where}: column {column!r} must be a UTC datetime, found {dtype}. "
            f"Parse it, e.g. pl.col({column!r}).str.to_datetime(time_zone='UTC')."
        )
        raise SchemaError(msg)
    return pl.col(column).dt.epoch("us")


def observation_end(events: pl.DataFrame) -> datetime:
    """Return the end of the data: the latest failure or repair timestamp.

    Parameters
    ----------
    events : pl.DataFrame
        The events table: UTC datetime columns ``ts`` and, optionally,
        ``repaired_ts`` (nulls ignored).

    Returns
    -------
    datetime
        ``max(ts, repaired_ts)`` over all rows, timezone-aware UTC. Use it as
        ``window_end`` of :func:`build_exposure` when no window is declared.

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
    epochs = [_ts_epoch(events, c, "observation_end").max() for c in cols]
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
        The assets table, one row per unit (node or device): UTC datetime
        columns ``in_service_ts``, ``out_of_service_ts`` (null = still in
        service), ``observed_from_ts`` (null = same as ``in_service_ts``),
        integer ``gpus`` (null = unknown) and every ``by`` column.
    by : str or sequence of str, default ()
        Unit attributes to group by, e.g. ``"system"``.
    window_start : datetime, optional
        Start of the observation window (UTC; naive datetimes are read as UTC).
        Default: no clipping at the start.
    window_end : datetime
        End of the observation window (UTC), required; units still in service
        are right-censored here. Use :func:`observation_end` for the end of data.

    Returns
    -------
    pl.DataFrame
        One row per group with at least one unit at risk, sorted by ``by``
        (nulls last): the ``by`` columns, ``n_units`` (Int64: units with
        positive time at risk), ``exposure_h`` (unit-hours, node-hours when the
        rows are nodes) and ``exposure_gpu_h`` (GPU-hours; null when any unit
        of the group has null ``gpus``).

    Raises
    ------
    InvalidParameterError
        If ``window_end`` is missing, a window bound is not a datetime, or
        ``window_start`` is after ``window_end``.
    SchemaError
        If a required column is missing or not a datetime, or a unit has
        neither ``in_service_ts`` nor ``observed_from_ts``.

    Notes
    -----
    Per unit, with :math:`s` = in-service time, :math:`o` = tracking start
    (each filling the other when null), :math:`d` = out-of-service time
    (null = :math:`W_e`) and window :math:`[W_s, W_e]`:

    .. math::

        t = \max\bigl(0,\ \min(d, W_e) - \max(s, o, W_s)\bigr),\qquad
        \text{exposure\_h} = \sum t,\quad
        \text{exposure\_gpu\_h} = \sum t \cdot \text{gpus}

    Time before tracking began is never counted: failures were not recorded
    then (left truncation). Units with :math:`t = 0` (retired before the
    window, or entering after it) are not counted in ``n_units``; a group whose
    units all have :math:`t = 0` is absent. Durations come from integer epoch
    microseconds, so no Duration dtype appears.

    Examples
    --------
    Node a runs the whole 10-day window (240 h); node b starts tracking on day
    2 (its in-service date is unknown) and retires on day 6 (96 h); node c
    retired before the window (0 h, not counted).

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
            "build_exposure: window_end is required (units still in service are "
            "censored there); pass window_end=observation_end(events)."
        )
        raise InvalidParameterError(msg)
    end_us = _epoch_us(window_end, "window_end")
    start_us = None if window_start is None else _epoch_us(window_start, "window_start")
    if start_us is not None and start_us > end_us:
        msg = (
            f"build_exposure: window_start {window_start} is after window_end "
            f"{window_end}; swap them."
        )
        raise InvalidParameterError(msg)
    require_columns(assets, [*_TS_COLUMNS, "gpus", *by_cols], where="build_exposure")
    ins, out, obs = (_ts_epoch(assets, c, "build_exposure") for c in _TS_COLUMNS)
    entry = pl.max_horizontal(
        pl.coalesce(ins, obs),
        pl.coalesce(obs, ins),
        pl.lit(start_us, dtype=pl.Int64),
    )
    leave = pl.min_horizontal(pl.coalesce(out, pl.lit(end_us)), pl.lit(end_us))
    units = assets.select(
        *by_cols,
        pl.coalesce(ins, obs).is_null().alias("_no_start"),
        pl.col("gpus").cast(pl.Float64).alias("_gpus"),
        entry.alias("_entry"),
        leave.alias("_leave"),
    )
    if n_bad := int(units["_no_start"].sum()):
        hosts = (
            assets.filter(units["_no_start"])
            .select(pl.col("host") if "host" in assets.columns else pl.first())
            .to_series()
            .head(5)
            .to_list()
        )
        msg = (
            f"build_exposure: {n_bad} unit(s) have neither in_service_ts nor "
            f"observed_from_ts (first: {hosts}); set observed_from_ts to when "
            "tracking began."
        )
        raise SchemaError(msg)
    units = units.with_columns(
        exposure_h=(pl.col("_leave") - pl.col("_entry")).cast(pl.Float64) / _US_PER_H
    ).filter(pl.col("exposure_h") > 0)
    gpu_h = pl.col("exposure_h") * pl.col("_gpus")
    aggs = [
        pl.len().cast(pl.Int64).alias("n_units"),
        pl.col("exposure_h").sum(),
        pl.when(pl.col("_gpus").null_count() > 0)
        .then(pl.lit(None, dtype=pl.Float64))
        .otherwise(gpu_h.sum())
        .alias("exposure_gpu_h"),
    ]
    if not by_cols:
        if units.height == 0:
            return pl.DataFrame(
                schema={
                    "n_units": pl.Int64,
                    "exposure_h": pl.Float64,
                    "exposure_gpu_h": pl.Float64,
                }
            )
        return units.select(aggs)
    return units.group_by(by_cols).agg(aggs).sort(by_cols, nulls_last=True)
