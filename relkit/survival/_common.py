"""Helpers shared by the modules of :mod:`relkit.survival` (not public API)."""

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from relkit.errors import InsufficientDataError, SchemaError
from relkit.schema import require_columns
from relkit.survival._tables import validate_survival_table

#: Largest number of curve rows returned by default (evenly thinned beyond it).
MAX_ROWS = 5000


def check_confidence(confidence: float, where: str) -> float:
    """Return ``alpha = 1 - confidence``; refuse a level outside (0, 1)."""
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        msg = f"{where}: confidence must be in (0, 1), found {confidence!r}; e.g. 0.95."
        raise SchemaError(msg)
    return 1.0 - float(confidence)


def prepare(
    table: pl.DataFrame,
    by: Sequence[str],
    invalid: Literal["raise", "drop"],
    where: str,
) -> pl.DataFrame:
    """Check the ``by`` columns and validate the survival table's spells."""
    require_columns(table, list(by), where=where)
    return validate_survival_table(table, invalid=invalid, where=where)


#: Candidate time-stamp resolutions, coarsest first, in microseconds.
_RESOLUTIONS_US = (3_600_000_000, 60_000_000, 1_000_000, 1_000, 1)


def timestamp_resolution_h(ts: pl.Series) -> float:
    """Infer the resolution of time stamps: the coarsest unit dividing them all.

    Parameters
    ----------
    ts : pl.Series
        Time stamps (``Datetime``, any time unit and zone); nulls are ignored.

    Returns
    -------
    float
        Resolution in hours: the largest of 1 h, 1 min, 1 s, 1 ms and 1 µs that
        divides every stamp (time since the Unix epoch); 1 µs if none larger.

    Raises
    ------
    SchemaError
        If ``ts`` is not a Datetime series or holds no non-null stamp.

    Notes
    -----
    A gap between two stamps recorded to resolution :math:`r` is known only
    to lie within :math:`r` of the difference; a gap recorded as 0 lies in
    :math:`[0, r)`, which :func:`relkit.survival.fit_lifetime_models` treats
    as interval-censored in :math:`(0, r]`.

    Examples
    --------
    >>> from datetime import datetime
    >>> import polars as pl
    >>> ts = pl.Series([datetime(2005, 1, 1, 3, 7), datetime(2005, 1, 2, 4, 0)])
    >>> timestamp_resolution_h(ts) * 60
    1.0
    """
    where = "timestamp_resolution_h"
    if not isinstance(ts.dtype, pl.Datetime):
        msg = f"{where}: expected a Datetime series, found {ts.dtype}."
        raise SchemaError(msg)
    us = ts.drop_nulls().dt.cast_time_unit("us").dt.epoch("us")
    if us.len() == 0:
        msg = f"{where}: the series holds no time stamp (all null or empty)."
        raise SchemaError(msg)
    for step in _RESOLUTIONS_US:
        if bool((us % step == 0).all()):
            return step / 3.6e9
    return 1 / 3.6e9  # pragma: no cover  (1 µs divides every µs stamp)


def duration_resolution_h(durations_h: np.ndarray) -> float:
    """Infer the resolution of durations (h): the coarsest unit they are multiples of.

    Durations computed from stamps of resolution :math:`r` are multiples of
    :math:`r`; this returns the largest of 1 h, 1 min, 1 s, 1 ms and 1 µs of
    which every positive finite value is a multiple (to 1e-6 of the unit, as
    hours are floats), else 1 µs.
    """
    values = durations_h[np.isfinite(durations_h) & (durations_h > 0)]
    if values.size == 0:
        return 1 / 3.6e9
    for step in _RESOLUTIONS_US:
        r = step / 3.6e9
        k = values / r
        if np.all(np.abs(k - np.round(k)) < 1e-6 * np.maximum(1.0, k * 1e-6)):
            return r
    return 1 / 3.6e9


def entry_for_risk_set(entry: np.ndarray, stop: np.ndarray) -> np.ndarray:
    """Entries as the risk set ``entry < t <= stop`` needs them, one rule for all.

    A unit entering at ``t`` is not at risk for failures at ``t`` (the
    counting-process risk set; Andersen et al., *Statistical Models Based on
    Counting Processes*, Springer 1993, §III.3; lifelines' convention). A spell
    that enters and ends at the same instant ``t > 0`` (a failure seen as
    observation began) would then fail out of no risk set, so it is at risk at
    its own instant: its entry moves to the float just before ``t``. Kaplan-Meier,
    Nelson-Aalen, cumulative incidence, the log-rank test and Cox all use this,
    so the cumulative incidences add up to one minus Kaplan-Meier.

    Parameters
    ----------
    entry, stop : numpy.ndarray
        Entry and stop times (h) of the spells, same shape.

    Returns
    -------
    numpy.ndarray
        ``entry`` with the zero-length spells' entries moved just before their
        stop.
    """
    entry = np.asarray(entry, dtype=float)
    stop = np.asarray(stop, dtype=float)
    zero = (entry == stop) & (stop > 0)
    return np.where(zero, np.nextafter(stop, -np.inf), entry)


def check_risk_set(
    entry: np.ndarray, stop: np.ndarray, where: str, key: dict[str, Any]
) -> None:
    """Refuse a group whose risk set empties before a later unit enters.

    As :func:`relkit.survival.kaplan_meier` (lifelines refuses such data):
    after the last unit at risk has left, no estimate links the earlier curve
    to the later units, so the curve after that time is not identifiable.
    """
    order = np.argsort(entry, kind="stable")
    first_stop = np.maximum.accumulate(stop[order])
    gaps = np.flatnonzero(entry[order][1:] > first_stop[:-1])
    if gaps.size:
        k = gaps[0]
        label = f" in group {key}" if key else ""
        msg = (
            f"{where}: the risk set becomes empty{label} before later units enter "
            f"(every unit that entered by {entry[order][k]:g} h has left by "
            f"{first_stop[k]:g} h, and the next enters at {entry[order][k + 1]:g} "
            "h), so the curve after that time is not identifiable. Expected "
            "overlapping spells; fix entry_h/stop_h or group less finely."
        )
        raise InsufficientDataError(msg)
