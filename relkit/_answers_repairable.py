"""Repairable-system answers from the store's tables: MCF, trends, MTBF per period.

Compositions of :mod:`relkit.observation` (what was at risk, and when) with
:mod:`relkit.repairable` and :func:`relkit.answers.mtbf_of`-style counting;
re-exported by :mod:`relkit.answers`.
"""

import dataclasses
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal, NamedTuple

import polars as pl

from relkit import repairable
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InsufficientDataError, InvalidParameterError, RelkitWarning
from relkit.observation import (
    ASSUMED_BASIS,
    FAILURE_ATTRIBUTES,
    MIN_EXPOSURE_H,
    Observation,
    node_failures,
    observe,
    restrict_to_mode,
    split_by,
    to_service_clock,
)

__all__ = [
    "PERIODS",
    "RepairableFrames",
    "mcf_by",
    "mtbf_by_period",
    "repairable_frames",
    "trend_by",
]

#: Calendar periods of :func:`mtbf_by_period`, as polars truncation rules.
PERIODS = {"month": "1mo", "quarter": "1q"}

_US_PER_H = 3_600_000_000.0
#: Zero of the age clock of :func:`relkit.observation.to_service_clock`.
CLOCK_ZERO = datetime(1970, 1, 1, tzinfo=UTC)


def _hours(col: str, origin: datetime) -> pl.Expr:
    return (pl.col(col) - pl.lit(origin)).dt.total_microseconds() / _US_PER_H


class RepairableFrames(NamedTuple):
    """Failure times and observation windows of repairable units, and notes.

    Unpacks as ``events, units, notes``.

    Parameters
    ----------
    events : pl.DataFrame
        ``unit_id``, ``time_h`` and the failure attributes of ``by``.
    units : pl.DataFrame
        ``unit_id``, ``entry_h``, ``exit_h`` and the unit attributes of ``by``.
    notes : list of str
        Failures folded or left out, in words.
    """

    events: pl.DataFrame
    units: pl.DataFrame
    notes: list[str]


def repairable_frames(
    obs: Observation,
    *,
    by: Sequence[str] = (),
    failure_mode: str | None = None,
    clock: Literal["age", "calendar"] = "age",
) -> RepairableFrames:
    """Turn an observation into the events and units of :mod:`relkit.repairable`.

    Parameters
    ----------
    obs : relkit.observation.Observation
        The observation model applied to a store.
    by : sequence of str, default ()
        Grouping columns (unit attributes such as ``system`` and failure
        attributes such as ``failure_mode``).
    failure_mode : str, optional
        Keep only this failure mode's node failures
        (:func:`relkit.observation.restrict_to_mode`: a mode such as
        ``gpu/hang``, or a root cause such as ``gpu`` for all of its modes).
    clock : {"age", "calendar"}, default "age"
        ``"age"``: hours in service of each node (gaps between its service
        windows do not count; :func:`relkit.observation.to_service_clock`).
        ``"calendar"``: hours since the earliest entry into observation, each
        service window a unit of its own.

    Returns
    -------
    RepairableFrames
        Named tuple ``(events, units, notes)``: ``events`` with ``unit_id``, ``time_h``
        and the failure attributes of ``by``; ``units`` with ``unit_id``,
        ``entry_h``, ``exit_h`` and the unit attributes of ``by``; ``notes``
        in words (failures folded, failures left out).

    Raises
    ------
    SchemaError
        If a ``by`` column is not a known attribute.
    InsufficientDataError
        If no unit has time at risk.
    """
    by = list(dict.fromkeys(by))
    unit_by, fail_by = split_by(
        by, obs.windows, obs.failures, attributes=obs.attributes
    )
    windows = obs.windows.filter(pl.col("exposure_h") > 0)
    if windows.height == 0:
        msg = (
            "no unit has time at risk, so there is no failure process to "
            "analyse. Ingest an assets table with the units' service windows, "
            "or logs with wall times."
        )
        raise InsufficientDataError(msg)
    notes = []
    # one mode's failures, folded among themselves: a burst of another mode
    # must not absorb them
    obs = restrict_to_mode(obs, failure_mode)
    failures = node_failures(obs.failures, window_min=obs.window_min)
    n_folded = int(failures["n_folded"].sum()) if failures.height else 0
    if n_folded:
        notes.append(
            f"{n_folded} failure(s) of a node within the incident window of an "
            "earlier one were folded into it (one node failure each burst)"
        )
    n_failures = failures.height
    failures = failures.join(windows.select("host").unique(), on="host", how="semi")
    if n_instant := n_failures - failures.height:
        hosts = (
            obs.windows.filter(pl.col("exposure_h") <= 0)["host"]
            .unique()
            .sort()
            .head(5)
            .to_list()
        )
        notes.append(
            f"{n_instant} failure(s) of units observed for no measurable time "
            f"({', '.join(hosts)}) are left out: they have no time at risk"
        )
    # no assets: a host's window runs from its first to its last record, so it
    # is bounded by its own records (DESIGN.md §1a)
    bounded = (
        obs.windows.group_by("host")
        .agg(records_bounded=(pl.col("exit_basis") == ASSUMED_BASIS).all())
        .filter(pl.col("records_bounded"))["host"]
        .to_list()
        if "exit_basis" in obs.windows.columns
        else []
    )
    keep_f = [c for c in fail_by if c in failures.columns]
    if clock == "age":
        units, moved = to_service_clock(windows, failures, failures.head(0))
        moved = moved.filter(~pl.col("prior"))
        if moved.height < failures.height:
            notes.append(
                f"{failures.height - moved.height} failure(s) fall in no service "
                "window on the age clock and are left out"
            )
        unit_frame = units.select(
            pl.col("host").alias("unit_id"),
            _hours("observed_from_ts", CLOCK_ZERO).alias("entry_h"),
            _hours("out_of_service_ts", CLOCK_ZERO).alias("exit_h"),
            *[pl.col(c) for c in unit_by],
            records_bounded=pl.col("host").is_in(bounded),
        )
        event_frame = moved.select(
            pl.col("host").alias("unit_id"),
            _hours("ts", CLOCK_ZERO).alias("time_h"),
            *keep_f,
        )
    elif clock == "calendar":
        origin = windows["observed_from_ts"].min()
        w = windows.sort("host", "observed_from_ts").with_columns(
            unit_id=pl.format("{}#{}", "host", pl.int_range(pl.len()).over("host"))
        )
        unit_frame = w.select(
            "unit_id",
            _hours("observed_from_ts", origin).alias("entry_h"),
            _hours("out_of_service_ts", origin).alias("exit_h"),
            *[pl.col(c) for c in unit_by],
            records_bounded=pl.col("host").is_in(bounded),
        )
        placed = failures.join(
            w.select("host", "unit_id", "observed_from_ts", "out_of_service_ts"),
            on="host",
        ).filter(
            (pl.col("ts") >= pl.col("observed_from_ts"))
            & (pl.col("ts") <= pl.col("out_of_service_ts"))
        )
        placed = placed.unique(
            [c for c in ("host", "ts", "source_id", "line_no") if c in placed.columns],
            keep="first",
            maintain_order=True,
        )
        event_frame = placed.select(
            "unit_id", _hours("ts", origin).alias("time_h"), *keep_f
        )
    else:
        msg = f"clock must be 'age' or 'calendar', found {clock!r}."
        raise InvalidParameterError(msg)
    event_frame, n_origin = _drop_origins(event_frame, unit_frame)
    if n_origin:
        notes.append(
            f"{n_origin} failure(s) at the start of a window bounded by its own "
            "records (no assets: each host from its first to its last record) are "
            "the origin of that unit's clock, not failures within it, and are not "
            "counted"
        )
    return RepairableFrames(event_frame, unit_frame, notes)


def _drop_origins(
    events: pl.DataFrame, units: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """Drop the failures at the entry of a records-bounded unit (its origin)."""
    joined = events.join(
        units.select("unit_id", "entry_h", "records_bounded"), on="unit_id", how="left"
    )
    origin = pl.col("records_bounded").fill_null(value=False) & (
        (pl.col("time_h") - pl.col("entry_h")).abs() < 1e-9
    )
    kept = joined.filter(~origin).drop("entry_h", "records_bounded")
    return kept, events.height - kept.height


def _drop_terminators(
    events: pl.DataFrame, units: pl.DataFrame
) -> tuple[pl.DataFrame, int]:
    """Drop one failure at the exit of each records-bounded unit.

    A window that ends on its own last record ends on a failure when that
    record is one (an events file): the unit is failure-terminated, so that
    failure is not a random time and leaves the count while its time stays the
    unit's end, the failure-terminated form of the Laplace and MIL-HDBK-189
    tests per unit (MIL-HDBK-189C §5.3).
    """
    ends = units.filter(pl.col("records_bounded")).select("unit_id", "exit_h")
    if ends.height == 0 or events.height == 0:
        return events, 0
    indexed = events.with_row_index("_row")
    last = (
        indexed.join(ends, on="unit_id")
        .filter((pl.col("time_h") - pl.col("exit_h")).abs() < 1e-9)
        .group_by("unit_id")
        .agg(pl.col("_row").first())
    )
    kept = indexed.join(last.select("_row"), on="_row", how="anti").drop("_row")
    return kept, last.height


def _observe(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    sources: pl.DataFrame | None,
    log_spans: pl.DataFrame | None,
    failure_modes: pl.DataFrame | None,
    window_start: datetime | None,
    window_end: datetime | None,
    window_min: float | None,
) -> Observation:
    return observe(
        events,
        assets,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
        window_start=window_start,
        window_end=window_end,
        window_min=window_min,
    )


def mcf_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    failure_mode: str | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    window_min: float | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Mean cumulative function of node failures against age, per group.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    by : sequence of str, default ()
        Grouping columns (``system``, any asset attribute, ``failure_mode``).
    failure_mode : str, optional
        Only this mode's node failures
        (:func:`relkit.observation.restrict_to_mode`: a mode such as
        ``gpu/hang``, or a root cause such as ``gpu`` for all of its modes).
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the bounds.
    window_start, window_end : datetime, optional
        Observation window (UTC), as :func:`relkit.answers.mtbf_by`.
    window_min : float, optional
        Incident gap window, minutes, as :func:`relkit.answers.mtbf_by`.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    pl.DataFrame
        As :func:`relkit.repairable.mean_cumulative_function`: ``*by, time_h,
        mcf, lower, upper, std_error, n_at_risk`` with ``time_h`` the age in
        service (hours), and ``n_excluded`` (failures outside every service
        window of their unit, per group where they carry its columns, else the
        total; a :class:`~relkit.errors.RelkitWarning` says how many).

    Raises
    ------
    SchemaError
        If a ``by`` column or the failure mode is unknown.
    InsufficientDataError
        As :func:`relkit.observation.observe`, or when no unit has time at
        risk.

    Notes
    -----
    Failures of one node within the incident window of each other count once
    (:func:`relkit.observation.node_failures`), as in ``relkit mtbf``.
    """
    obs = _observe(
        events, assets, sources, log_spans, failure_modes,
        window_start, window_end, window_min,
    )  # fmt: skip
    by = list(dict.fromkeys(by))
    ev, units, notes = repairable_frames(obs, by=by, failure_mode=failure_mode)
    for note in notes:
        warnings.warn(note, RelkitWarning, stacklevel=2)
    excluded = _excluded_by(restrict_to_mode(obs, failure_mode), by)
    if n_ex := int(excluded["n_excluded"].sum()):
        warnings.warn(
            f"{n_ex} failure(s) outside every service window of their unit were "
            "excluded (n_excluded); `relkit rejects --db DB` lists them",
            RelkitWarning,
            stacklevel=2,
        )
    out = repairable.mean_cumulative_function(
        ev, units.drop("records_bounded"), by=by, confidence=confidence
    )
    return _with_excluded(out, excluded, by)


def trend_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    failure_mode: str | None = None,
    unit: Literal["node", "fleet"] = "node",
    clock: Literal["age", "calendar"] = "age",
    confidence: float = DEFAULT_CONFIDENCE,
    alpha: float = 0.05,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    window_min: float | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Trend tests and Crow-AMSAA fit of the failure process, per group.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    by : sequence of str, default ()
        Grouping columns (``system``, any asset attribute, ``failure_mode``).
    failure_mode : str, optional
        Only this mode's node failures
        (:func:`relkit.observation.restrict_to_mode`: a mode such as
        ``gpu/hang``, or a root cause such as ``gpu`` for all of its modes).
    unit : {"node", "fleet"}, default "node"
        ``"node"``: each node is a repairable system, the nodes of a group
        pooled (MIL-HDBK-189C's multiple systems). ``"fleet"``: the group's
        node failures as one process in calendar time, from the first entry
        to the last exit (its rate also moves with the number of nodes in
        service, which ``note`` says when it changes).
    clock : {"age", "calendar"}, default "age"
        For ``unit="node"``: time is each node's age in service, or calendar
        hours (see :func:`repairable_frames`). ``"fleet"`` is calendar time.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the Crow-AMSAA bounds.
    alpha : float, default 0.05
        Level at which a test's direction names a trend.
    window_start, window_end, window_min, sources, log_spans, failure_modes
        As :func:`mcf_by`.

    Returns
    -------
    pl.DataFrame
        One row per group: ``*by``, for each test of
        :data:`relkit.repairable.TREND_TESTS` its ``<test>_statistic``,
        ``<test>_p_value`` and ``<test>_direction``; the Crow-AMSAA columns
        ``beta, beta_lower, beta_upper, lambda_per_h_beta, current_mtbf_h,
        current_mtbf_lower_h, current_mtbf_upper_h, at_age_h``; then
        ``n_failures, n_units, total_time_h, n_excluded, unit, clock`` and
        ``note``. With no assets a unit's window is bounded by its own records:
        a failure at its start is its clock's origin, and one at its end makes
        it failure-terminated (left out of ``n_failures``, its time the unit's
        end; MIL-HDBK-189C §5.3); ``note`` says how many.

    Raises
    ------
    SchemaError
        If a ``by`` column or the failure mode is unknown.
    InvalidParameterError
        If ``unit`` or ``clock`` is unknown.
    InsufficientDataError
        As :func:`mcf_by`.

    Notes
    -----
    See :func:`relkit.repairable.trend_tests` and
    :func:`relkit.repairable.crow_amsaa` for the statistics and their sources.
    """
    if unit not in ("node", "fleet"):
        msg = f"unit must be 'node' or 'fleet', found {unit!r}."
        raise InvalidParameterError(msg)
    obs = _observe(
        events, assets, sources, log_spans, failure_modes,
        window_start, window_end, window_min,
    )  # fmt: skip
    by = list(dict.fromkeys(by))
    use_clock = "calendar" if unit == "fleet" else clock
    ev, units, notes = repairable_frames(
        obs, by=by, failure_mode=failure_mode, clock=use_clock
    )
    if unit == "fleet":
        unit_by = [c for c in by if c in units.columns]
        fleet = units.group_by(unit_by or pl.lit(0).alias("_all")).agg(
            entry_h=pl.col("entry_h").min(),
            exit_h=pl.col("exit_h").max(),
            _n=pl.len(),
            _varies=(pl.col("entry_h").n_unique() > 1)
            | (pl.col("exit_h").n_unique() > 1),
            records_bounded=pl.col("records_bounded").all(),
        )
        key = pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("") for c in unit_by]
            or [pl.lit("fleet")],
            separator="|",
        )
        fleet = fleet.with_columns(unit_id=key)
        ev = ev.join(units.select("unit_id", *unit_by), on="unit_id").with_columns(
            unit_id=key
        )
        if fleet["_varies"].any():
            notes.append(
                "unit=fleet: the number of nodes in service changes over the "
                "period, so a trend may be the fleet growing or shrinking; "
                "unit=node tests each node's own rate"
            )
        units = fleet.select(
            "unit_id", "entry_h", "exit_h", "records_bounded", *unit_by
        )
        ev = ev.drop([c for c in unit_by if c in ev.columns])
    ev, n_term = _drop_terminators(ev, units)
    if n_term:
        notes.append(
            f"{n_term} unit(s) end on a failure at the last of their own records "
            "(no assets): failure-terminated, so that failure is left out of the "
            "count and its time is the unit's end (MIL-HDBK-189C §5.3)"
        )
    excluded = _excluded_by(restrict_to_mode(obs, failure_mode), by)
    if n_ex := int(excluded["n_excluded"].sum()):
        notes.append(
            f"{n_ex} failure(s) outside every service window of their unit were "
            "excluded (n_excluded); `relkit rejects --db DB` lists them"
        )
    tests = repairable.trend_tests(ev, units, by=by, alpha=alpha)
    fits = repairable.crow_amsaa(ev, units, by=by, confidence=confidence)
    wide = None
    for name in repairable.TREND_TESTS:
        part = tests.filter(pl.col("test") == name).select(
            *by,
            pl.col("statistic").alias(f"{name}_statistic"),
            pl.col("p_value").alias(f"{name}_p_value"),
            pl.col("direction").alias(f"{name}_direction"),
            *(["n_failures", "n_units", "total_time_h"] if wide is None else []),
        )
        wide = (
            part
            if wide is None
            else wide.join(part, on=by, how="left", nulls_equal=True)
            if by
            else pl.concat([wide, part], how="horizontal")
        )
    fit_cols = [
        "beta", "beta_lower", "beta_upper", "lambda_per_h_beta", "current_mtbf_h",
        "current_mtbf_lower_h", "current_mtbf_upper_h", "at_age_h",
    ]  # fmt: skip
    fits = fits.select(*by, *fit_cols, pl.col("note").alias("_fit_note"))
    if wide is None or wide.height == 0:
        msg = "no failures to test in any group" + (
            f" of mode {failure_mode!r}" if failure_mode else ""
        )
        raise InsufficientDataError(msg)
    out = (
        wide.join(fits, on=by, how="left", nulls_equal=True)
        if by
        else pl.concat([wide, fits], how="horizontal")
    )
    general = "; ".join(notes) if notes else None
    note = pl.concat_str(
        [pl.col("_fit_note"), pl.lit(general, dtype=pl.String)],
        separator="; ",
        ignore_nulls=True,
    )
    out = _with_excluded(out, excluded, by)
    return out.with_columns(
        unit=pl.lit(unit),
        clock=pl.lit(use_clock),
        note=pl.when(note != "").then(note),
    ).select(
        *by,
        *[
            f"{t}_{s}"
            for t in repairable.TREND_TESTS
            for s in ("statistic", "p_value", "direction")
        ],
        *fit_cols,
        "n_failures",
        "n_units",
        "total_time_h",
        "n_excluded",
        "unit",
        "clock",
        "note",
    )


def _excluded_by(obs: Observation, by: Sequence[str]) -> pl.DataFrame:
    """Failures outside every service window of their unit, per group of ``by``.

    Grouped by the columns of ``by`` the excluded failures carry (their
    failure attributes, and the unit attributes of their host's windows);
    one total row when they carry none.
    """
    ex = obs.excluded
    if "failure_mode" in ex.columns:
        parts = pl.col("failure_mode").str.split_exact("/", 1)
        ex = ex.with_columns(
            root_cause=parts.struct.field("field_0"),
            sub_cause=pl.coalesce(
                parts.struct.field("field_1"), parts.struct.field("field_0")
            ),
        )
    attrs = [c for c in by if c not in ex.columns and c in obs.windows.columns]
    if attrs:
        host_attrs = obs.windows.select("host", *attrs).unique("host", keep="first")
        ex = ex.join(host_attrs, on="host", how="left")
    keys = [c for c in by if c in ex.columns]
    if not keys or keys != list(by):
        return pl.DataFrame(
            {"n_excluded": [ex.height]}, schema={"n_excluded": pl.Int64}
        )
    return ex.group_by(keys).agg(n_excluded=pl.len().cast(pl.Int64))


def _with_excluded(
    out: pl.DataFrame, excluded: pl.DataFrame, by: Sequence[str]
) -> pl.DataFrame:
    """Join ``n_excluded`` per group (the total on every row if not per group)."""
    keys = [c for c in excluded.columns if c != "n_excluded"]
    if not keys:
        return out.with_columns(n_excluded=pl.lit(int(excluded["n_excluded"].sum())))
    excluded = excluded.cast({c: out.schema[c] for c in keys if c in out.columns})
    return out.join(excluded, on=keys, how="left", nulls_equal=True).with_columns(
        pl.col("n_excluded").fill_null(0).cast(pl.Int64)
    )


def mtbf_by_period(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    period: Literal["month", "quarter"] = "month",
    by: Sequence[str] = (),
    confidence: float = DEFAULT_CONFIDENCE,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    window_min: float | None = None,
    gpus_per_node: int = 8,
    unit: Literal["node", "gpu"] | None = None,
    min_exposure_h: float = MIN_EXPOSURE_H,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
    obs: Observation | None = None,
) -> pl.DataFrame:
    """MTBF per calendar month or quarter (UTC), with the bounds of ``mtbf_by``.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    period : {"month", "quarter"}, default "month"
        Calendar period, UTC.
    by, confidence, window_start, window_end, window_min, gpus_per_node, unit
        As :func:`relkit.answers.mtbf_by`.
    min_exposure_h : float, default 24.0
        Periods and groups with less time at risk get a ``warning``.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.
    obs : relkit.observation.Observation, optional
        An observation already made (then the tables and window are not read
        again).

    Returns
    -------
    pl.DataFrame
        The columns of :func:`relkit.answers.mtbf_by` with ``period_start``
        and ``period_end`` (UTC) first: one row per period and group. Each
        unit's time at risk is split at the period boundaries and each failure
        counts in the period holding its time, so the periods' failures and
        exposure add up to the whole window's.

    Raises
    ------
    InvalidParameterError
        If ``period`` is unknown.
    SchemaError, InsufficientDataError
        As :func:`relkit.answers.mtbf_by`.

    Notes
    -----
    The bounds are the exact chi-square bounds of
    :func:`relkit.metrics.mtbf` per period. Node failures are folded within
    each period: a burst straddling a period boundary counts once in each
    period it touches, which ``warning`` says where it happens.
    """
    from relkit.answers import mtbf_of  # composition above this module

    if period not in PERIODS:
        msg = f"period must be one of {sorted(PERIODS)}, found {period!r}."
        raise InvalidParameterError(msg)
    if obs is None:
        obs = _observe(
            events, assets, sources, log_spans, failure_modes,
            window_start, window_end, window_min,
        )  # fmt: skip
    w = obs.windows
    at_risk = w.filter(pl.col("exposure_h") > 0)
    if at_risk.height == 0:
        msg = "no unit has time at risk, so there is no period to report."
        raise InsufficientDataError(msg)
    first = at_risk["observed_from_ts"].min()
    last = at_risk["out_of_service_ts"].max()
    if obs.failures.height:
        last = max(last, obs.failures["ts"].max())  # type: ignore[type-var]
    starts = pl.datetime_range(
        pl.lit(first).dt.truncate(PERIODS[period]),
        pl.lit(last),
        interval=PERIODS[period],
        eager=True,
    ).to_list()
    # data ending exactly on a boundary open no period there (its [end, end)
    # would hold nothing); the last period holds its end instant instead
    if len(starts) > 1 and starts[-1] == last:
        starts = starts[:-1]
    final_end = pl.select(
        pl.lit(starts[-1], dtype=pl.Datetime("us", "UTC")).dt.offset_by(PERIODS[period])
    ).item()
    bounds = [*starts[1:], final_end]
    by = list(dict.fromkeys(by))
    # a failure attribute (failure_mode, root_cause, ...) splits failures, not
    # exposure: every value seen in the whole window gets a row in every
    # period, with zero failures where it had none (else those periods vanish)
    fail_by = [c for c in by if c in FAILURE_ATTRIBUTES]
    win_by = [c for c in by if c not in fail_by]
    universe = (
        mtbf_of(obs, by=by, unit=unit, gpus_per_node=gpus_per_node).select(by).unique()
        if fail_by
        else None
    )
    frames = []
    for i, (p_start, p_end) in enumerate(zip(starts, bounds, strict=True)):
        is_first, is_last = i == 0, i == len(starts) - 1
        # in service during the period: a window overlapping it for some time,
        # or a window of one instant inside it (the last period holds its end);
        # a window that ended at the period's start is not in it
        instant = pl.col("out_of_service_ts") == pl.col("observed_from_ts")
        at_start = pl.col("observed_from_ts") >= p_start
        before_end = (
            pl.col("observed_from_ts") <= p_end
            if is_last
            else pl.col("observed_from_ts") < p_end
        )
        overlaps = (pl.col("out_of_service_ts") > p_start) & (
            pl.col("observed_from_ts") < p_end
        )
        clipped = (
            w.filter(overlaps | (instant & at_start & before_end))
            .with_columns(
                observed_from_ts=pl.max_horizontal("observed_from_ts", pl.lit(p_start)),
                out_of_service_ts=pl.min_horizontal("out_of_service_ts", pl.lit(p_end)),
            )
            .with_columns(
                exposure_h=pl.max_horizontal(
                    (pl.col("out_of_service_ts") - pl.col("observed_from_ts"))
                    .dt.total_microseconds()
                    .cast(pl.Float64)
                    / _US_PER_H,
                    pl.lit(0.0),
                )
            )
        )
        inside = (pl.col("ts") >= p_start) & (
            pl.col("ts") <= p_end if is_last else pl.col("ts") < p_end
        )
        # excluded failures by their time; those before the first or after the
        # last period count in it, so the periods add up to the whole window
        ex_inside = (pl.lit(is_first) | (pl.col("ts") >= p_start)) & (
            pl.lit(is_last) | (pl.col("ts") < p_end)
        )
        sub = dataclasses.replace(
            obs,
            windows=clipped,
            failures=obs.failures.filter(inside),
            excluded=obs.excluded.filter(ex_inside),
        )
        if clipped.height == 0 and sub.failures.height == 0:
            continue
        part = mtbf_of(
            sub,
            by=by,
            confidence=confidence,
            unit=unit,
            gpus_per_node=gpus_per_node,
            min_exposure_h=min_exposure_h,
        )
        if universe is not None:
            missing = universe.join(
                part.select(by), on=by, how="anti", nulls_equal=True
            )
            if missing.height:
                zero = mtbf_of(
                    dataclasses.replace(sub, failures=sub.failures.head(0)),
                    by=win_by,
                    confidence=confidence,
                    unit=unit,
                    gpus_per_node=gpus_per_node,
                    min_exposure_h=min_exposure_h,
                )
                zero = zero.drop([c for c in fail_by if c in zero.columns])
                filled = (
                    missing.join(zero, on=win_by, how="inner", nulls_equal=True)
                    if win_by
                    else missing.join(zero, how="cross")
                )
                part = pl.concat([part, filled], how="diagonal_relaxed")
        if is_last and last < p_end:
            cut = (
                f"observation ends at {last:%Y-%m-%dT%H:%MZ}, before this "
                f"{period} ends: a partial {period}"
            )
            part = part.with_columns(
                warning=pl.concat_str(
                    [pl.col("warning"), pl.lit(cut)], separator="; ", ignore_nulls=True
                )
            )
        frames.append(
            part.with_columns(
                period_start=pl.lit(p_start, dtype=pl.Datetime("us", "UTC")),
                period_end=pl.lit(p_end, dtype=pl.Datetime("us", "UTC")),
            )
        )
    out = pl.concat(frames, how="diagonal_relaxed")
    whole = mtbf_of(obs, by=(), unit=unit, gpus_per_node=gpus_per_node)
    n_whole, n_sum = int(whole["n_failures"].sum()), int(out["n_failures"].sum())
    if n_sum != n_whole:
        note = (
            f"{n_sum - n_whole} node failure(s) counted twice: bursts straddle a "
            "period boundary and are folded within each period"
        )
        out = out.with_columns(
            warning=pl.concat_str(
                [pl.col("warning"), pl.lit(note)], separator="; ", ignore_nulls=True
            )
        )
    return out.select(
        "period_start", "period_end", *by, pl.exclude("period_start", "period_end", *by)
    ).sort(["period_start", *by], nulls_last=True)
