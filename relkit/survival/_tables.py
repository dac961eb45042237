r"""Survival tables (events and assets in, entry/stop/observed out) and model densities.

Private module of :mod:`relkit.survival`; import the public names from the package.
A survival table has one row per spell at risk:

- ``unit_id`` (str): the node, system or unit the spell belongs to;
- ``entry_h`` (float, h): time from the spell's origin at which observation
  began (left truncation, lifelines' ``entry``); 0 when watched from the origin;
- ``stop_h`` (float, h): time from the same origin to the failure or to the end
  of observation; ``0 <= entry_h <= stop_h``;
- ``observed`` (bool): True if the spell ended in a failure, False if censored.
"""

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np
import polars as pl

from relkit.errors import RelkitWarning, SchemaError
from relkit.schema import require_columns

__all__ = [
    "REMOVAL_EXITS",
    "build_first_failure_table",
    "build_lifetime_table",
    "build_removal_table",
    "build_tbf_exclusions",
    "build_tbf_table",
    "model_density",
    "split_groups",
    "validate_survival_table",
]

_US_PER_H = 3_600_000_000.0
_EVENT_DERIVED = {"root_cause": 0, "sub_cause": 1}
_MAX_LISTED = 5


def _fmt_span(hours: float) -> str:
    """Format a duration in hours as ``"2 s"``, ``"45 min"`` or ``"120 h"``."""
    seconds = abs(hours) * 3600.0
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{abs(hours):.6g} h"


def _row_problems(table: pl.DataFrame) -> list[tuple[int, str, str]]:
    """Return (0-based row, unit id, reason) for every invalid survival row."""
    ids = (
        table["unit_id"].cast(pl.String).to_list()
        if "unit_id" in table.columns
        else [None] * table.height
    )
    entries = table["entry_h"].to_list()
    stops = table["stop_h"].to_list()
    observed = table["observed"].to_list()
    problems = []
    for i, (uid, entry, stop, obs) in enumerate(
        zip(ids, entries, stops, observed, strict=True)
    ):
        label = uid if uid is not None else f"row {i + 1}"
        if entry is None or stop is None or obs is None:
            reason = "missing entry_h, stop_h or observed"
        elif not (abs(entry) < float("inf") and abs(stop) < float("inf")):
            reason = f"not finite (entry_h = {entry}, stop_h = {stop})"
        elif stop < 0:
            reason = f"ends {_fmt_span(stop)} before it starts"
        elif entry < 0:
            reason = f"observation starts {_fmt_span(entry)} before the unit started"
        elif entry > stop:
            reason = (
                "observation starts after the unit ended "
                f"(entry_h = {entry:.6g} h > stop_h = {stop:.6g} h)"
            )
        else:
            continue
        problems.append((i, label, reason))
    return problems


def _describe(problems: list[tuple[int, str, str]]) -> str:
    shown = "; ".join(
        f"{uid} (data row {i + 1}): {why}" for i, uid, why in problems[:_MAX_LISTED]
    )
    more = len(problems) - _MAX_LISTED
    return shown + (f"; and {more} more" if more > 0 else "")


def validate_survival_table(
    table: pl.DataFrame,
    *,
    invalid: Literal["raise", "drop"] = "raise",
    where: str = "validate_survival_table",
) -> pl.DataFrame:
    r"""Check a survival table row by row; refuse or drop invalid spells.

    Parameters
    ----------
    table : pl.DataFrame
        Columns ``stop_h`` (float, h from the spell's origin), ``observed``
        (bool, or integer 0/1), optional ``entry_h`` (float, h; missing means 0)
        and optional ``unit_id`` (named in messages).
    invalid : {"raise", "drop"}, default "raise"
        ``"raise"`` refuses a table with any invalid row; ``"drop"`` removes the
        invalid rows and warns with a :class:`~relkit.errors.RelkitWarning`
        that names each of them.
    where : str, default "validate_survival_table"
        Name of the calling function, put at the start of messages.

    Returns
    -------
    pl.DataFrame
        The valid rows in input order, with ``entry_h`` added (0.0) if it was
        missing and ``observed`` cast to bool.

    Raises
    ------
    SchemaError
        If a required column is missing or ``observed`` is not boolean/0-1; or,
        with ``invalid="raise"``, if a row is null, not finite, ends before it
        starts (``stop_h < 0``), starts observation before the unit started
        (``entry_h < 0``) or after it ended (``entry_h > stop_h``). The message
        names the unit and 1-based data row of each (first 5).

    Warns
    -----
    RelkitWarning
        With ``invalid="drop"``, naming the dropped rows.

    Notes
    -----
    A valid spell has :math:`0 \le \text{entry} \le \text{stop}`. A failure at
    time 0 (``stop_h == 0``) is valid: Kaplan-Meier counts it at :math:`t=0`;
    parametric fits need :math:`t > 0` and handle it as documented in
    :func:`relkit.survival.fit_lifetime_models`.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "unit_id": ["a", "b"],
    ...         "entry_h": [0.0, 30.0],
    ...         "stop_h": [10.0, 20.0],
    ...         "observed": [True, False],
    ...     }
    ... )
    >>> validate_survival_table(t)
    Traceback (most recent call last):
    ...
    relkit.errors.SchemaError: ...: b (data row 2): observation starts after the unit...
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as w:
    ...     warnings.simplefilter("always")
    ...     validate_survival_table(t, invalid="drop")["unit_id"].to_list()
    ['a']
    >>> str(w[0].message)[:60]
    'validate_survival_table: dropped 1 invalid row(s) of 2: b (d'
    """
    require_columns(table, ["stop_h", "observed"], where=where)
    if invalid not in ("raise", "drop"):
        msg = f"{where}: invalid must be 'raise' or 'drop', found {invalid!r}."
        raise SchemaError(msg)
    if "entry_h" not in table.columns:
        table = table.with_columns(entry_h=pl.lit(0.0))
    obs = table["observed"]
    if obs.dtype != pl.Boolean:
        values = set(obs.drop_nulls().unique().to_list())
        if not obs.dtype.is_integer() or not values <= {0, 1}:
            msg = (
                f"{where}: column 'observed' must be bool (True = failure seen), "
                f"found dtype {obs.dtype} with values {sorted(values, key=str)[:5]}. "
                "Fix: pl.col('observed').cast(pl.Boolean) from 0/1."
            )
            raise SchemaError(msg)
    table = table.with_columns(
        pl.col("observed").cast(pl.Boolean),
        pl.col("entry_h", "stop_h").cast(pl.Float64),
    )
    problems = _row_problems(table)
    if not problems:
        return table
    detail = _describe(problems)
    if invalid == "raise":
        msg = (
            f"{where}: {len(problems)} invalid row(s) of {table.height}: {detail}. "
            "Expected 0 <= entry_h <= stop_h (hours from the unit's start). "
            "Fix the source timestamps, or pass invalid='drop' to drop these rows "
            "(a RelkitWarning lists them)."
        )
        raise SchemaError(msg)
    import warnings

    msg = (
        f"{where}: dropped {len(problems)} invalid row(s) of {table.height}: {detail}."
    )
    warnings.warn(msg, RelkitWarning, stacklevel=3)
    bad = [i for i, _, _ in problems]
    return table.with_row_index("_row").filter(~pl.col("_row").is_in(bad)).drop("_row")


def build_lifetime_table(
    units: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    invalid: Literal["raise", "drop"] = "raise",
) -> pl.DataFrame:
    """Turn unit records with install/observe/end timestamps into a survival table.

    Parameters
    ----------
    units : pl.DataFrame
        One row per unit: ``unit_id`` (str), ``installed_at`` (UTC datetime, the
        origin of the lifetime), ``observed_from`` (UTC datetime when tracking
        began; null means ``installed_at``), ``ended_at`` (UTC datetime of the
        failure or of the end of observation) and ``failed`` (bool or 0/1).
    by : sequence of str, default ()
        Further columns to carry into the output (e.g. ``failure_mode``).
    invalid : {"raise", "drop"}, default "raise"
        What to do with invalid rows; see :func:`validate_survival_table`.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, unit_id, entry_h, stop_h, observed``; one row per unit in
        input order. ``stop_h`` is measured from ``installed_at`` (not
        ``stop_h - entry_h``), ``entry_h = observed_from - installed_at``.

    Raises
    ------
    SchemaError
        If a column is missing, or with ``invalid="raise"`` if a unit ends before
        it starts or its observation starts after it ended (named with its
        1-based data row).

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> d = lambda day: datetime(2025, 1, day, tzinfo=UTC)
    >>> units = pl.DataFrame(
    ...     {
    ...         "unit_id": ["u1", "u2"],
    ...         "installed_at": [d(1), d(1)],
    ...         "observed_from": [None, d(2)],
    ...         "ended_at": [d(3), d(5)],
    ...         "failed": [1, 0],
    ...     }
    ... )
    >>> build_lifetime_table(units)
    shape: (2, 4)
    ┌─────────┬─────────┬────────┬──────────┐
    │ unit_id ┆ entry_h ┆ stop_h ┆ observed │
    │ ---     ┆ ---     ┆ ---    ┆ ---      │
    │ str     ┆ f64     ┆ f64    ┆ bool     │
    ╞═════════╪═════════╪════════╪══════════╡
    │ u1      ┆ 0.0     ┆ 48.0   ┆ true     │
    │ u2      ┆ 24.0    ┆ 96.0   ┆ false    │
    └─────────┴─────────┴────────┴──────────┘
    """
    where = "build_lifetime_table"
    cols = ["unit_id", "installed_at", "observed_from", "ended_at", "failed"]
    require_columns(units, [*by, *cols], where=where)
    start = pl.col("installed_at")
    table = units.select(
        *by,
        pl.col("unit_id").cast(pl.String),
        entry_h=(
            pl.col("observed_from").fill_null(start) - start
        ).dt.total_microseconds()
        / _US_PER_H,
        stop_h=(pl.col("ended_at") - start).dt.total_microseconds() / _US_PER_H,
        observed=pl.col("failed"),
    )
    return validate_survival_table(table, invalid=invalid, where=where)


def _utc(window_end: datetime) -> datetime:
    if not isinstance(window_end, datetime):
        msg = (
            f"window_end must be a datetime (UTC), found {type(window_end).__name__}. "
            "Fix: window_end=relkit.exposure.observation_end(events)."
        )
        raise SchemaError(msg)
    if window_end.tzinfo is None:
        return window_end.replace(tzinfo=UTC)
    return window_end.astimezone(UTC)


def _no_null_keys(frame: pl.DataFrame, cols: Sequence[str], where: str) -> None:
    """Refuse null group keys: joins on them would silently drop rows."""
    for col in cols:
        if n := frame[col].null_count():
            msg = (
                f"{where}: group column {col!r} is null in {n} row(s); every row "
                f"needs a group to be counted. Give every unit a {col} in the "
                "assets file (or group by another column); in the library, fill "
                f"it, e.g. frame.with_columns(pl.col({col!r}).fill_null("
                "'unassigned'))."
            )
            raise SchemaError(msg)


def _event_frame(events: pl.DataFrame, event_by: list[str], where: str) -> pl.DataFrame:
    """Add root_cause/sub_cause from failure_mode when they are asked for."""
    derive = [c for c in event_by if c in _EVENT_DERIVED and c not in events.columns]
    if derive:
        require_columns(events, ["failure_mode"], where=where)
        parts = pl.col("failure_mode").str.split_exact("/", 1)
        events = events.with_columns(
            parts.struct.field(f"field_{_EVENT_DERIVED[c]}").alias(c) for c in derive
        )
    require_columns(events, event_by, where=where)
    _no_null_keys(events, event_by, where)
    return events


def _units_node(assets: pl.DataFrame, unit_by: list[str], where: str) -> pl.DataFrame:
    """One row per host: in_service (null if unknown), observed_from, decom."""
    require_columns(
        assets,
        ["host", "in_service_ts", "out_of_service_ts", "observed_from_ts", *unit_by],
        where=where,
    )
    _no_null_keys(assets, unit_by, where)
    units = (
        assets.group_by("host", *unit_by)
        .agg(
            in_service=pl.when(pl.col("in_service_ts").null_count() == 0).then(
                pl.col("in_service_ts").min()
            ),
            observed_from=pl.coalesce("observed_from_ts", "in_service_ts").min(),
            decom=pl.when(pl.col("out_of_service_ts").null_count() == 0).then(
                pl.col("out_of_service_ts").max()
            ),
        )
        .rename({"host": "unit_id"})
    )
    dup = units.filter(pl.col("unit_id").is_duplicated())["unit_id"].unique().sort()
    if dup.len():
        msg = (
            f"{where}: unit attribute(s) {unit_by} vary within host(s) "
            f"{dup.head(_MAX_LISTED).to_list()}; expected one value per host. "
            "Group by event attributes or fix the assets table."
        )
        raise SchemaError(msg)
    return units


def _units_system(assets: pl.DataFrame, where: str) -> pl.DataFrame:
    require_columns(
        assets,
        ["system", "in_service_ts", "out_of_service_ts", "observed_from_ts"],
        where=where,
    )
    _no_null_keys(assets, ["system"], where)
    return (
        assets.group_by("system")
        .agg(
            in_service=pl.coalesce("in_service_ts", "observed_from_ts").min(),
            observed_from=pl.coalesce("observed_from_ts", "in_service_ts").min(),
            decom=pl.when(pl.col("out_of_service_ts").null_count() == 0).then(
                pl.col("out_of_service_ts").max()
            ),
        )
        .with_columns(unit_id=pl.col("system").cast(pl.String))
        .drop("system")
    )


def _tbf(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    unit: str,
    by: Sequence[str],
    window_end: datetime,
    where: str,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Compute gaps (with gap index and origin) and the exclusion counts."""
    by = list(by)
    end_ts = _utc(window_end)
    if unit == "node":
        unit_by = [c for c in by if c in assets.columns]
        units = _units_node(assets, unit_by, where)
        key = "host"
    elif unit == "system":
        unit_by = [c for c in by if c == "system"]
        if bad := [c for c in by if c in assets.columns and c != "system"]:
            msg = (
                f"{where}: unit='system' can group by event attributes and 'system' "
                f"only, found unit attribute(s) {bad}. Use unit='node' for them."
            )
            raise SchemaError(msg)
        units = _units_system(assets, where)
        if unit_by:
            units = units.with_columns(system=pl.col("unit_id"))
        key = "system"
    else:
        msg = f"{where}: unit must be 'node' or 'system', found {unit!r}."
        raise SchemaError(msg)
    event_by = [c for c in by if c not in unit_by]
    require_columns(events, ["ts", key], where=where)
    prior_col = (
        pl.col("prior").fill_null(False) if "prior" in events.columns else pl.lit(False)
    )
    ev_all = _event_frame(events, event_by, where).select(
        *event_by,
        unit_id=pl.col(key).cast(pl.String),
        ts=pl.col("ts"),
        prior=prior_col,
    )
    # failures before a unit's observation began (before tracking or before the
    # window start) only set the origin of the unit's next gap
    prior = ev_all.filter("prior").drop("prior")
    ev = ev_all.filter(~pl.col("prior")).drop("prior")
    end_expr = pl.min_horizontal(
        pl.col("decom").fill_null(pl.lit(end_ts)), pl.lit(end_ts)
    )
    units = units.with_columns(end=end_expr)
    excl: list[pl.DataFrame] = []

    def excluded(frame: pl.DataFrame, reason: str) -> None:
        if frame.height:
            excl.append(
                frame.group_by(*by, "unit_id")
                .agg(n=pl.len())
                .with_columns(reason=pl.lit(reason))
            )

    # Events: on a known unit, inside its observation window.
    joined = ev.join(units, on="unit_id", how="left", coalesce=True)
    no_unit = joined.filter(pl.col("end").is_null())
    excluded(
        no_unit.with_columns(pl.lit(None).alias(c) for c in unit_by),
        f"failure of a {unit} not in assets",
    )
    joined = joined.filter(pl.col("end").is_not_null())
    outside = (pl.col("ts") < pl.col("observed_from")) | (pl.col("ts") > pl.col("end"))
    excluded(joined.filter(outside), "failure outside the unit's observation window")
    ev = joined.filter(~outside).select("unit_id", "ts", *event_by)

    dead = units.filter(pl.col("observed_from") >= pl.col("end"))
    units = units.filter(pl.col("observed_from") < pl.col("end"))
    combos = ev.select(event_by).unique() if event_by else pl.DataFrame()
    series = units.join(combos, how="cross") if event_by else units
    excluded(
        dead.join(combos, how="cross") if event_by else dead,
        "unit observed for no time",
    )

    # One boundary per failure plus one at the end; a gap runs origin -> boundary.
    ends = series.select(
        "unit_id", *event_by, ts=pl.col("end"), observed=pl.lit(False)
    ).with_columns(prior=pl.lit(False))
    fails = ev.with_columns(observed=pl.lit(True), prior=pl.lit(False))
    skeys = ["unit_id", *event_by]
    last_prior = (
        prior.join(units.select("unit_id", "observed_from"), on="unit_id")
        .filter(pl.col("ts") < pl.col("observed_from"))
        .group_by(skeys)
        .agg(pl.col("ts").max())
        .with_columns(observed=pl.lit(False), prior=pl.lit(True))
    )
    gaps = (
        pl.concat([last_prior, fails, ends], how="diagonal_relaxed")
        .join(series, on=skeys, how="inner", nulls_equal=True)
        .sort(
            [*skeys, "ts", "observed"], descending=[False] * len(skeys) + [False, True]
        )
        .with_columns(origin=pl.col("ts").shift(1).over(skeys, order_by=None))
        .filter(~pl.col("prior"))
        .with_columns(gap_index=pl.int_range(pl.len()).over(skeys))
        # the origin of a unit's first gap: its last failure before observation,
        # else its entry into service; when neither is known (a node in
        # production before tracking), the tracking start, left-truncated there
        .with_columns(
            origin_known=pl.col("origin").is_not_null()
            | pl.col("in_service").is_not_null(),
            origin=pl.coalesce("origin", "in_service", "observed_from"),
        )
    )
    hours = (pl.col("ts") - pl.col("origin")).dt.total_microseconds() / _US_PER_H
    gaps = (
        gaps.with_columns(
            entry_h=pl.max_horizontal(
                (pl.col("observed_from") - pl.col("origin")).dt.total_microseconds()
                / _US_PER_H,
                pl.lit(0.0),
            ),
            stop_h=hours,
        )
        # a censored spell of zero length carries no information
        .filter(pl.col("observed") | (pl.col("stop_h") > pl.col("entry_h")))
        .sort([*by, "unit_id", "origin", "gap_index"], nulls_last=True)
    )
    # a unit with no known start that entered observation at a failure (its
    # first record) has no time observed before it: no gap to measure
    at_entry = ~pl.col("origin_known") & (pl.col("stop_h") <= 0)
    excluded(
        gaps.filter(at_entry),
        "first gap of a unit that entered observation at this failure",
    )
    gaps = gaps.filter(~at_entry)
    table = gaps.select(
        *by, "unit_id", "entry_h", "stop_h", "observed", "gap_index", "origin_known"
    )
    schema = {**{c: table.schema[c] for c in by}, "unit_id": pl.String}
    exclusions = (
        pl.concat(
            [e.select(*by, "unit_id", "reason", "n") for e in excl],
            how="vertical_relaxed",
        ).sort([*by, "unit_id", "reason"], nulls_last=True)
        if excl
        else pl.DataFrame(schema={**schema, "reason": pl.String, "n": pl.UInt32})
    )
    return table, exclusions


def build_tbf_table(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    unit: Literal["node", "system"] = "node",
    by: Sequence[str] = (),
    window_end: datetime,
    with_origin: bool = False,
) -> pl.DataFrame:
    """Build the time-between-failures table of nodes or systems.

    Parameters
    ----------
    events : pl.DataFrame
        One row per failure (store ``events`` table, already filtered to what
        counts as a failure): ``ts`` (UTC datetime), ``host`` (for
        ``unit="node"``) or ``system`` (for ``unit="system"``), and the event
        attributes named in ``by``. ``root_cause`` and ``sub_cause`` are derived
        from ``failure_mode`` (``"root/sub"``) when asked for and absent. An
        optional Boolean ``prior`` marks failures before the unit's observation
        began (before tracking or the window start): they are not gaps, but the
        last of them is the origin of the unit's first observed gap.
    assets : pl.DataFrame
        Store ``assets`` table: ``host``, ``system``, ``in_service_ts`` (may be
        null: in service before tracking), ``out_of_service_ts`` (null: still in
        service), ``observed_from_ts`` (null: same as ``in_service_ts``). Rows
        of the same host (e.g. one per GPU) are merged: earliest in-service and
        observation start, latest decommission (null if any is null).
    unit : {"node", "system"}, default "node"
        ``"node"``: gaps between consecutive failures of one host.
        ``"system"``: the failures of all hosts of a ``system`` merged in time
        order (system-wide time between failures); ``unit_id`` is the system.
    by : sequence of str, default ()
        Grouping columns. Columns of ``assets`` are unit attributes (with
        ``unit="system"`` only ``system``); the others are event attributes, and
        every unit gets one series per combination observed in ``events``.
    window_end : datetime
        End of data (UTC; naive means UTC), e.g.
        :func:`relkit.exposure.observation_end`. Open spells are censored here.
    with_origin : bool, default False
        Add ``origin_known`` (False for a first gap measured from the tracking
        start because the unit's start is unknown).

    Returns
    -------
    pl.DataFrame
        Columns ``*by, unit_id, entry_h, stop_h, observed`` (and
        ``origin_known`` with ``with_origin=True``); one row per gap, sorted
        by ``*by, unit_id`` and time. ``stop_h`` is
        measured from the gap's origin: the previous failure; for the first
        gap the unit's last failure before its observation began (an
        ``events`` row with ``prior`` true), else its ``in_service_ts`` (for
        a system its earliest in-service or observation start), else, for a
        unit in service before tracking with no known start, its tracking
        start (``origin_known`` false: the gap is left-truncated there, and
        its length is a forward-recurrence time, exact under a constant
        hazard). ``entry_h = max(0, observed_from - origin)``.

    Raises
    ------
    SchemaError
        If a required column is missing, ``unit`` is unknown, or a unit attribute
        in ``by`` varies within a host.

    Notes
    -----
    Policies (counts of excluded items: :func:`build_tbf_exclusions`):

    - A node whose ``in_service_ts`` is null has no known origin for its first
      gap: that gap is excluded (the gaps after its first failure are kept).
      A system's origin is its earliest ``in_service_ts``, or its earliest
      ``observed_from_ts`` when that is earlier or in-service dates are unknown.
    - The last gap is right-censored at ``min(out_of_service_ts, window_end)``
      (for a system, at ``window_end`` unless all its units are decommissioned).
      A unit without failures gives one censored row.
    - Failures before ``observed_from`` or after the end, and failures of hosts
      absent from ``assets``, are excluded. Censored gaps of zero length (a
      failure exactly at the end) carry no information and are dropped.
    - Failures at the same instant (frequent at LANL's one-minute resolution)
      give gaps with ``stop_h == 0``, kept: Kaplan-Meier counts them at
      :math:`t=0`, and :func:`relkit.survival.fit_lifetime_models` sets them to
      ``zero_duration_h`` (half a minute by default) and says so in ``status``.

    References
    ----------
    .. [1] B. Schroeder and G. A. Gibson, "A large-scale study of failures in
       high-performance computing systems", DSN 2006. doi:10.1109/DSN.2006.5

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> d = lambda day: datetime(2025, 1, day, tzinfo=UTC)
    >>> assets = pl.DataFrame(
    ...     {
    ...         "host": ["n1", "n2"],
    ...         "system": ["s", "s"],
    ...         "in_service_ts": [d(1), d(1)],
    ...         "out_of_service_ts": [None, d(4)],
    ...         "observed_from_ts": [d(2), None],
    ...     }
    ... )
    >>> events = pl.DataFrame(
    ...     {"ts": [d(3), d(6)], "host": ["n1", "n1"], "system": ["s", "s"]}
    ... )
    >>> build_tbf_table(events, assets, window_end=d(11))
    shape: (4, 4)
    ┌─────────┬─────────┬────────┬──────────┐
    │ unit_id ┆ entry_h ┆ stop_h ┆ observed │
    │ ---     ┆ ---     ┆ ---    ┆ ---      │
    │ str     ┆ f64     ┆ f64    ┆ bool     │
    ╞═════════╪═════════╪════════╪══════════╡
    │ n1      ┆ 24.0    ┆ 48.0   ┆ true     │
    │ n1      ┆ 0.0     ┆ 72.0   ┆ true     │
    │ n1      ┆ 0.0     ┆ 120.0  ┆ false    │
    │ n2      ┆ 0.0     ┆ 72.0   ┆ false    │
    └─────────┴─────────┴────────┴──────────┘
    """
    table, _ = _tbf(
        events, assets, unit=unit, by=by, window_end=window_end, where="build_tbf_table"
    )
    return table.drop("gap_index", *([] if with_origin else ["origin_known"]))


def build_tbf_exclusions(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    unit: Literal["node", "system"] = "node",
    by: Sequence[str] = (),
    window_end: datetime,
) -> pl.DataFrame:
    """Count what :func:`build_tbf_table` left out with the same arguments, and why.

    Parameters
    ----------
    events, assets : pl.DataFrame
        As for :func:`build_tbf_table`.
    unit : {"node", "system"}, default "node"
        Unit of the gaps, as for :func:`build_tbf_table`.
    by : sequence of str, default ()
        Grouping columns, as for :func:`build_tbf_table`.
    window_end : datetime
        End of data (UTC), as for :func:`build_tbf_table`.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, unit_id, reason, n`` (``n``: gaps or failures excluded);
        one row per unit and reason, sorted. Reasons:
        ``"failure outside the unit's observation window"``,
        ``"failure of a node not in assets"`` (or ``system``),
        ``"unit observed for no time"``. Empty when nothing was excluded.

    Raises
    ------
    SchemaError
        As for :func:`build_tbf_table`.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> d = lambda day: datetime(2025, 1, day, tzinfo=UTC)
    >>> assets = pl.DataFrame(
    ...     {
    ...         "host": ["n1"],
    ...         "system": ["s"],
    ...         "in_service_ts": [None],
    ...         "out_of_service_ts": [None],
    ...         "observed_from_ts": [d(2)],
    ...     },
    ...     schema_overrides={"in_service_ts": pl.Datetime("us", "UTC")},
    ... )
    >>> events = pl.DataFrame(
    ...     {"ts": [d(1), d(3)], "host": ["n1", "n1"], "system": ["s", "s"]}
    ... )
    >>> build_tbf_exclusions(events, assets, window_end=d(5))["reason"].to_list()
    ["failure outside the unit's observation window"]
    """
    _, exclusions = _tbf(
        events,
        assets,
        unit=unit,
        by=by,
        window_end=window_end,
        where="build_tbf_exclusions",
    )
    return exclusions


def build_first_failure_table(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    window_end: datetime,
) -> pl.DataFrame:
    """Build the time-to-first-failure table: one row per node (and group).

    Parameters
    ----------
    events, assets : pl.DataFrame
        As for :func:`build_tbf_table` with ``unit="node"``.
    by : sequence of str, default ()
        Unit attributes (columns of ``assets``) or event attributes.
    window_end : datetime
        End of data (UTC); nodes without a failure are censored here or at their
        decommission.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, unit_id, entry_h, stop_h, observed``; one row per node and
        group, sorted. ``stop_h``: hours from ``in_service_ts`` to the first
        observed failure (``observed``) or to the end; ``entry_h =
        max(0, observed_from - in_service)``. Nodes with a null
        ``in_service_ts`` are excluded (their age is unknown); see
        :func:`build_tbf_exclusions`.

    Raises
    ------
    SchemaError
        As for :func:`build_tbf_table`.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> d = lambda day: datetime(2025, 1, day, tzinfo=UTC)
    >>> assets = pl.DataFrame(
    ...     {
    ...         "host": ["n1", "n2"],
    ...         "system": ["s", "s"],
    ...         "in_service_ts": [d(1), d(1)],
    ...         "out_of_service_ts": [None, None],
    ...         "observed_from_ts": [d(2), None],
    ...     }
    ... )
    >>> events = pl.DataFrame(
    ...     {"ts": [d(3), d(6)], "host": ["n1", "n1"], "system": ["s", "s"]}
    ... )
    >>> build_first_failure_table(events, assets, window_end=d(11))
    shape: (2, 4)
    ┌─────────┬─────────┬────────┬──────────┐
    │ unit_id ┆ entry_h ┆ stop_h ┆ observed │
    │ ---     ┆ ---     ┆ ---    ┆ ---      │
    │ str     ┆ f64     ┆ f64    ┆ bool     │
    ╞═════════╪═════════╪════════╪══════════╡
    │ n1      ┆ 24.0    ┆ 48.0   ┆ true     │
    │ n2      ┆ 0.0     ┆ 240.0  ┆ false    │
    └─────────┴─────────┴────────┴──────────┘
    """
    table, _ = _tbf(
        events,
        assets,
        unit="node",
        by=by,
        window_end=window_end,
        where="build_first_failure_table",
    )
    # a unit whose start is unknown has no age: its first failure cannot be placed
    first = table.filter((pl.col("gap_index") == 0) & pl.col("origin_known"))
    return first.drop("gap_index", "origin_known")


#: ``exit`` values of :func:`build_removal_table`, one per class of unit.
REMOVAL_EXITS = ("removed after failure", "removed without failure", "in service")


def build_removal_table(
    events: pl.DataFrame,
    units: pl.DataFrame,
    *,
    by: Sequence[str] = (),
) -> pl.DataFrame:
    r"""Build the age-at-removal-after-failure table: one row per unit (and group).

    Parameters
    ----------
    events : pl.DataFrame
        One row per counted failure: ``host`` (the unit), ``ts`` (UTC datetime
        on the same clock as ``units``) and the event attributes named in
        ``by`` (``root_cause``/``sub_cause`` are derived from ``failure_mode``
        when absent).
    units : pl.DataFrame
        One row per unit: ``host``, ``in_service_ts`` (the age origin; null
        when the install date is unknown), ``observed_from_ts`` (entry into
        observation), ``out_of_service_ts`` (exit from observation),
        ``removed`` (bool: the exit is a declared removal from service, not
        the end of data), ``last_window_start_ts`` (start of the unit's last
        service window) and the unit attributes named in ``by``. On a unit's
        in-service clock (:func:`relkit.observation.to_service_clock`) these
        instants are ages, so a gap between service windows is not age.
    by : sequence of str, default ()
        Unit attributes (columns of ``units``) or event attributes (other
        columns of ``events``); every unit gets one row per combination of
        event attributes seen in ``events``.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, unit_id, entry_h, stop_h, observed, exit``; one row per
        unit and group, sorted by ``*by, unit_id``. ``stop_h``: hours from
        ``in_service_ts`` to ``out_of_service_ts``; ``entry_h = max(0,
        observed_from - in_service)``; ``exit`` one of
        :data:`REMOVAL_EXITS`. Units with a null ``in_service_ts`` (age
        unknown) and units observed for no time are left out; count them from
        ``units``.

    Raises
    ------
    SchemaError
        If a required column is missing or a group key is null.

    Notes
    -----
    The event is *removal after failure*: a unit removed from service
    (``removed``) with at least one failure (of the group's mode) in its last
    service window, :math:`[s_{last}, e_{last}]`, is observed at its age at
    removal. A unit removed without such a failure left for another reason (a
    competing exit) and is right-censored at its removal age; a unit still in
    service is right-censored at its age at the end of observation. Treating
    the competing exit as censoring estimates the cause-specific hazard of
    removal after failure, and assumes the other removals are independent of
    it; the probability of that exit among all exits is a cumulative
    incidence (Kalbfleisch and Prentice, *The Statistical Analysis of Failure
    Time Data*, 2nd ed., Wiley 2002, ch. 8; doi:10.1002/9781118032985).

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> d = lambda day: datetime(2025, 1, day, tzinfo=UTC)
    >>> units = pl.DataFrame(
    ...     {
    ...         "host": ["a", "b", "c"],
    ...         "in_service_ts": [d(1), d(1), d(1)],
    ...         "observed_from_ts": [d(2), d(1), d(1)],
    ...         "out_of_service_ts": [d(5), d(4), d(11)],
    ...         "removed": [True, True, False],
    ...         "last_window_start_ts": [d(1), d(1), d(1)],
    ...     }
    ... )
    >>> events = pl.DataFrame({"host": ["a"], "ts": [d(3)]})
    >>> build_removal_table(events, units).select("unit_id", "stop_h", "exit")
    shape: (3, 3)
    ┌─────────┬────────┬─────────────────────────┐
    │ unit_id ┆ stop_h ┆ exit                    │
    │ ---     ┆ ---    ┆ ---                     │
    │ str     ┆ f64    ┆ str                     │
    ╞═════════╪════════╪═════════════════════════╡
    │ a       ┆ 96.0   ┆ removed after failure   │
    │ b       ┆ 72.0   ┆ removed without failure │
    │ c       ┆ 240.0  ┆ in service              │
    └─────────┴────────┴─────────────────────────┘
    """
    where = "build_removal_table"
    by = list(by)
    cols = [
        "host",
        "in_service_ts",
        "observed_from_ts",
        "out_of_service_ts",
        "removed",
        "last_window_start_ts",
    ]
    unit_by = [c for c in by if c in units.columns]
    event_by = [c for c in by if c not in unit_by]
    require_columns(units, [*cols, *unit_by], where=where)
    _no_null_keys(units, unit_by, where)
    require_columns(events, ["host", "ts"], where=where)
    ev = _event_frame(events, event_by, where).select(
        *event_by, unit_id=pl.col("host").cast(pl.String), ts="ts"
    )
    known = units.filter(
        pl.col("in_service_ts").is_not_null()
        & (pl.col("out_of_service_ts") > pl.col("observed_from_ts"))
    ).with_columns(unit_id=pl.col("host").cast(pl.String))
    combos = ev.select(event_by).unique() if event_by else None
    series = known.join(combos, how="cross") if combos is not None else known
    skeys = ["unit_id", *event_by]
    # a failure in the last service window, up to the removal, ties it to it
    in_last = (
        ev.join(
            known.select("unit_id", "last_window_start_ts", "out_of_service_ts"),
            on="unit_id",
        )
        .filter(
            (pl.col("ts") >= pl.col("last_window_start_ts"))
            & (pl.col("ts") <= pl.col("out_of_service_ts"))
        )
        .select(skeys)
        .unique()
        .with_columns(_failed=pl.lit(True))
    )
    series = series.join(in_last, on=skeys, how="left", nulls_equal=True)
    failed = pl.col("_failed").fill_null(False)
    exit_ = (
        pl.when(pl.col("removed") & failed)
        .then(pl.lit(REMOVAL_EXITS[0]))
        .when(pl.col("removed"))
        .then(pl.lit(REMOVAL_EXITS[1]))
        .otherwise(pl.lit(REMOVAL_EXITS[2]))
    )
    hours = (
        pl.col("out_of_service_ts") - pl.col("in_service_ts")
    ).dt.total_microseconds() / _US_PER_H
    entry = pl.max_horizontal(
        (pl.col("observed_from_ts") - pl.col("in_service_ts")).dt.total_microseconds()
        / _US_PER_H,
        pl.lit(0.0),
    )
    return series.select(
        *by,
        "unit_id",
        entry_h=entry,
        stop_h=hours,
        observed=pl.col("removed") & failed,
        exit=exit_,
    ).sort([*by, "unit_id"], nulls_last=True)


def split_groups(
    table: pl.DataFrame, by: Sequence[str]
) -> list[tuple[dict[str, Any], pl.DataFrame]]:
    """Split a table into (key dict, sub-frame) pairs sorted by key."""
    by = list(by)
    if not by:
        return [({}, table)]
    parts = table.sort(by, nulls_last=True, maintain_order=True).partition_by(
        by, as_dict=True, maintain_order=True
    )
    return [(dict(zip(by, key, strict=True)), part) for key, part in parts.items()]


# ----------------------------------------------------------------- model densities


def _curves(
    model: str, t: np.ndarray, scale: float, shape: float, shape2: float | None = None
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    r"""Density, survival and hazard of a fitted model, from the one model registry.

    The hazard is :math:`h = f/S`, computed as :math:`\exp(\ln f - \ln S)` so it
    stays finite in the far tail where both underflow.
    """
    from relkit.survival._registry import distribution

    dist = distribution(model, scale, shape, shape2)
    log_f, log_s = np.asarray(dist.logpdf(t)), np.asarray(dist.logsf(t))
    return np.exp(log_f), np.exp(log_s), np.exp(log_f - log_s)


def model_density(
    table: pl.DataFrame,
    fits: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    n_points: int = 200,
    spacing: Literal["linear", "log"] = "linear",
) -> pl.DataFrame:
    r"""Evaluate each fitted model's density on a time grid, for histogram overlays.

    Parameters
    ----------
    table : pl.DataFrame
        The survival table that was fitted (``stop_h`` and ``by`` columns); it
        sets each group's grid, ``(0, max stop_h]``.
    fits : pl.DataFrame
        Output of :func:`fit_lifetime_models` (``*by, model, scale_h, shape,
        status``); rows whose status is not ok are skipped.
    by : sequence of str, default ()
        Grouping columns, the same as used for the fit.
    n_points : int, default 200
        Grid points per group (>= 2).
    spacing : {"linear", "log"}, default "linear"
        Evenly spaced grid on ``(0, max]``, or log-spaced on ``[min, max]`` of the
        group's positive ``stop_h`` (for a log time axis).

    Returns
    -------
    pl.DataFrame
        Columns ``*by, model, time_h, density`` (per hour, of the untruncated
        model), ``survival`` (:math:`S(t)`) and ``hazard_per_h``
        (:math:`h(t) = f(t)/S(t)`, failures per unit-hour); ``n_points`` rows
        per group and model, sorted by ``*by``, model order of ``fits``,
        ``time_h``.

    Raises
    ------
    SchemaError
        If a column is missing or ``n_points < 2``.

    Notes
    -----
    Exponential :math:`f = e^{-t/\lambda}/\lambda`; Weibull
    :math:`f = \frac{\rho}{\lambda}(t/\lambda)^{\rho-1}e^{-(t/\lambda)^\rho}`;
    log-normal with median :math:`m` and :math:`\sigma`:
    :math:`f = \phi(\ln(t/m)/\sigma)/(t\sigma)`; log-logistic
    :math:`f = \frac{\beta}{\alpha}(t/\alpha)^{\beta-1}/(1+(t/\alpha)^\beta)^2`;
    gamma and generalized gamma (``shape2`` column, :math:`Q`) as scipy's
    ``gamma`` and ``gengamma`` (see ``relkit.survival._registry``, the one
    place that maps every model's columns to its distribution).

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"stop_h": [1.0, 2.0, 4.0], "observed": [True] * 3})
    >>> fits = pl.DataFrame(
    ...     {
    ...         "model": ["exponential"],
    ...         "scale_h": [2.0],
    ...         "shape": [None],
    ...         "status": ["ok"],
    ...     }
    ... )
    >>> model_density(t, fits, n_points=2)["density"].round(4).to_list()
    [0.1839, 0.0677]
    """
    where = "model_density"
    require_columns(table, ["stop_h", *by], where=where)
    require_columns(fits, ["model", "scale_h", "shape", "status", *by], where=where)
    if n_points < 2:
        msg = f"{where}: n_points must be >= 2, found {n_points}."
        raise SchemaError(msg)
    positive = pl.col("stop_h").filter(pl.col("stop_h") > 0)
    span = {
        tuple(k.values()): (
            float(p.select(positive.min()).item() or 0.0),
            float(p["stop_h"].max() or 0.0),
        )
        for k, p in split_groups(table, by)
    }
    rows: list[pl.DataFrame] = []
    ok = fits.filter(
        pl.col("status").str.starts_with("ok") & pl.col("scale_h").is_not_null()
    )
    for row in ok.iter_rows(named=True):
        key = {c: row[c] for c in by}
        low, top = span.get(tuple(key.values()), (0.0, 0.0))
        if top <= 0:
            continue
        if spacing == "log" and 0 < low < top:
            grid = np.geomspace(low, top, n_points)
        else:
            grid = np.linspace(0.0, top, n_points + 1)[1:]
        dens, surv, hazard = _curves(
            row["model"], grid, row["scale_h"], row["shape"], row.get("shape2")
        )
        rows.append(
            pl.DataFrame(
                {
                    "model": row["model"],
                    "time_h": grid,
                    "density": dens,
                    "survival": surv,
                    "hazard_per_h": hazard,
                }
            ).select(*(pl.lit(v).alias(c) for c, v in key.items()), pl.all())
        )
    if not rows:
        return pl.DataFrame(
            schema={
                **{c: fits.schema[c] for c in by},
                "model": pl.String,
                "time_h": pl.Float64,
                "density": pl.Float64,
                "survival": pl.Float64,
                "hazard_per_h": pl.Float64,
            }
        )
    out = pl.concat(rows, how="vertical_relaxed")
    return out.with_columns(pl.col(c).cast(fits.schema[c]) for c in by)
