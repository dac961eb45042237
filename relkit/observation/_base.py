"""Constants and small time helpers of the observation model (private)."""

from datetime import UTC, datetime

import polars as pl

from relkit.errors import InvalidParameterError, SchemaError
from relkit.schema import UTC as UTC_DTYPE

US_PER_H = 3_600_000_000.0


TS_COLUMNS = ("in_service_ts", "out_of_service_ts", "observed_from_ts")


#: Failure attributes derived from ``failure_mode`` or kept on events.
FAILURE_ATTRIBUTES = ("failure_mode", "root_cause", "sub_cause", "code", "severity")


#: The ``system`` of units whose assets row names none (one group, never dropped).
UNASSIGNED = "unassigned"


#: Groups with less time at risk than this (unit-hours, one unit-day) get a
#: warning: a rate over less than a day of observation says little.
MIN_EXPOSURE_H = 24.0


#: ``exposure_basis`` of results that rest on the logs alone (no assets).
ASSUMED_BASIS = "logs: each host from the first to the last line of its logs"


ASSET_COLUMNS = (
    "source_id",
    "line_no",
    "host",
    "device",
    "system",
    "gpus",
    "in_service_ts",
    "out_of_service_ts",
    "observed_from_ts",
    "attrs",
)


# -- helpers --------------------------------------------------------------------
def as_utc(value: datetime | None, name: str) -> datetime | None:
    if value is None:
        return None
    if not isinstance(value, datetime):
        msg = (
            f"{name} must be a datetime (UTC), e.g. "
            f"datetime(2005, 1, 1, tzinfo=UTC); got {value!r}."
        )
        raise InvalidParameterError(msg)
    if value.tzinfo is None:
        return value.replace(tzinfo=UTC)
    return value.astimezone(UTC)


def epoch_us(value: datetime, name: str) -> int:
    value = as_utc(value, name)  # type: ignore[assignment]
    delta = value - datetime(1970, 1, 1, tzinfo=UTC)
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def ts_epoch(frame: pl.DataFrame, column: str, where: str) -> pl.Expr:
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


def hours_between(later: pl.Expr, earlier: pl.Expr) -> pl.Expr:
    return (later - earlier).dt.total_microseconds().cast(pl.Float64) / US_PER_H


def lit_ts(value: datetime | None) -> pl.Expr:
    return pl.lit(value, dtype=UTC_DTYPE)


def fmt_ts(ts: datetime | None) -> str:
    return "open" if ts is None else f"{ts:%Y-%m-%dT%H:%MZ}"
