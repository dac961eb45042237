"""Input frames of the repairable-systems analyses: checks and grouping (private).

Every analysis of :mod:`relkit.repairable` takes two plain frames:

- ``events``: one row per failure, ``unit_id`` and ``time_h`` (the unit's age
  or any common clock, hours), plus optional grouping columns;
- ``units``: one row per unit, ``unit_id``, ``entry_h`` (when observation of
  the unit began on the same clock; 0 when the column is absent) and
  ``exit_h`` (when it ended), plus optional unit attributes.

A grouping column found in ``units`` is a unit attribute (a unit belongs to one
group); a column found only in ``events`` is a failure attribute (every unit is
at risk of every group's failures, as for ``failure_mode``).
"""

import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import polars as pl

from relkit.errors import InsufficientDataError, RelkitWarning, SchemaError

__all__ = ["GroupData", "iter_groups", "place_events"]


@dataclass(frozen=True)
class GroupData:
    """One group's units and failures as arrays, on one clock (hours).

    ``entry_h``, ``exit_h``: per unit (sorted by unit); ``event_unit``: index
    of each failure's unit into those arrays; ``event_h``: its time.
    """

    key: dict[str, Any]
    entry_h: np.ndarray
    exit_h: np.ndarray
    event_unit: np.ndarray
    event_h: np.ndarray


def _require(frame: pl.DataFrame, cols: Sequence[str], name: str, where: str) -> None:
    if missing := [c for c in cols if c not in frame.columns]:
        msg = (
            f"{where}: {name} lacks column(s) {missing}; it has {frame.columns}. "
            "Give events as (unit_id, time_h) and units as (unit_id, entry_h, "
            "exit_h), e.g. frame.rename({'host': 'unit_id', 'age_h': 'time_h'})."
        )
        raise SchemaError(msg)


def _check_units(units: pl.DataFrame, where: str) -> pl.DataFrame:
    _require(units, ["unit_id", "exit_h"], "units", where)
    if "entry_h" not in units.columns:
        units = units.with_columns(entry_h=pl.lit(0.0))
    units = units.with_columns(pl.col("entry_h", "exit_h").cast(pl.Float64))
    bad = units.filter(
        pl.col("entry_h").is_null()
        | pl.col("exit_h").is_null()
        | ~pl.col("entry_h").is_finite()
        | ~pl.col("exit_h").is_finite()
        | (pl.col("exit_h") < pl.col("entry_h"))
    )
    if bad.height:
        ids = bad["unit_id"].head(5).to_list()
        msg = (
            f"{where}: {bad.height} unit(s) have a missing, infinite or reversed "
            f"window (exit_h < entry_h), e.g. {ids}; give each unit "
            "entry_h <= exit_h in hours."
        )
        raise SchemaError(msg)
    if units["unit_id"].is_duplicated().any():
        dup = units.filter(pl.col("unit_id").is_duplicated())["unit_id"]
        msg = (
            f"{where}: unit_id {dup.unique().head(5).to_list()} appear more than "
            "once in units; give one row per unit (put a unit's windows on its "
            "service clock first, see relkit.observation.to_service_clock)."
        )
        raise SchemaError(msg)
    return units


def place_events(
    events: pl.DataFrame, units: pl.DataFrame, *, where: str
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Check both frames and keep the failures inside their unit's window.

    A failure of an unknown unit or outside its unit's ``[entry_h, exit_h]``
    is dropped with a :class:`~relkit.errors.RelkitWarning` naming how many.
    """
    _require(events, ["unit_id", "time_h"], "events", where)
    units = _check_units(units, where)
    events = events.with_columns(pl.col("time_h").cast(pl.Float64))
    if events["time_h"].is_null().any() or not events["time_h"].is_finite().all():
        msg = f"{where}: events have missing or infinite time_h; drop or fix them."
        raise SchemaError(msg)
    joined = events.join(
        units.select("unit_id", "entry_h", "exit_h"), on="unit_id", how="left"
    )
    inside = (pl.col("time_h") >= pl.col("entry_h")) & (
        pl.col("time_h") <= pl.col("exit_h")
    )
    kept = joined.filter(inside.fill_null(value=False))
    n_out = joined.height - kept.height
    if n_out:
        unknown = joined.filter(pl.col("entry_h").is_null())
        warnings.warn(
            f"{where}: {n_out} failure(s) left out: {unknown.height} of units not "
            f"in units, {n_out - unknown.height} outside their unit's "
            "[entry_h, exit_h] window.",
            RelkitWarning,
            stacklevel=3,
        )
    return kept.drop("entry_h", "exit_h"), units


def iter_groups(
    events: pl.DataFrame,
    units: pl.DataFrame,
    *,
    by: Sequence[str],
    where: str,
) -> Iterator[GroupData]:
    """Yield each group's units and failures (see the module docstring)."""
    by = list(dict.fromkeys(by))
    events, units = place_events(events, units, where=where)
    unit_by = [c for c in by if c in units.columns]
    event_by = [c for c in by if c not in units.columns]
    if missing := [c for c in event_by if c not in events.columns]:
        msg = (
            f"{where}: grouping column(s) {missing} are in neither units "
            f"{units.columns} nor events {events.columns}."
        )
        raise SchemaError(msg)
    if unit_by:
        events = events.drop([c for c in unit_by if c in events.columns]).join(
            units.select("unit_id", *unit_by), on="unit_id", how="left"
        )
    unit_keys = (
        units.select(unit_by).unique().sort(unit_by, nulls_last=True).to_dicts()
        if unit_by
        else [{}]
    )
    event_keys = (
        events.select(event_by).unique().sort(event_by, nulls_last=True).to_dicts()
        if event_by
        else [{}]
    )
    if units.height == 0:
        msg = f"{where}: no units given, so nothing was at risk."
        raise InsufficientDataError(msg)
    for ukey in unit_keys:
        members = units
        for col, value in ukey.items():
            members = members.filter(
                pl.col(col).is_null() if value is None else pl.col(col) == value
            )
        members = members.sort("unit_id")
        index = {u: i for i, u in enumerate(members["unit_id"].to_list())}
        for ekey in event_keys:
            key = {**ukey, **ekey}
            mine = events
            for col, value in key.items():
                mine = mine.filter(
                    pl.col(col).is_null() if value is None else pl.col(col) == value
                )
            yield GroupData(
                key={c: key[c] for c in by},
                entry_h=members["entry_h"].to_numpy().astype(float),
                exit_h=members["exit_h"].to_numpy().astype(float),
                event_unit=np.array(
                    [index[u] for u in mine["unit_id"].to_list()], dtype=np.int64
                ),
                event_h=mine["time_h"].to_numpy().astype(float),
            )
