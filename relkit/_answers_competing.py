"""Competing risks of each unit's first failure, answered from the store (composition).

Re-exported by :mod:`relkit.answers`. The competing events are the failure
modes of each node's first failure: time is the node's age in service at that
failure (:func:`relkit.observation.to_service_clock`), left-truncated when the
node was in service before tracking began, right-censored at decommission or
the end of observation (:func:`relkit.observation.observe`). The estimates are
:func:`relkit.survival.cumulative_incidence` and :func:`relkit.survival.gray_test`.
"""

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, NamedTuple

import polars as pl

from relkit import survival
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InsufficientDataError, RelkitWarning, SchemaError
from relkit.observation import observe, to_service_clock

__all__ = [
    "OTHER_MODE",
    "CompetingRisks",
    "FirstFailureModes",
    "competing_risks_by",
    "cumulative_incidence_by",
    "first_failure_modes",
    "gray_test_by",
]

#: Name of the mode that rare modes are folded into (``min_events``).
OTHER_MODE = "other"


@dataclass(frozen=True)
class CompetingRisks:
    """Cumulative incidence per mode and Gray's tests, with what to know.

    Parameters
    ----------
    cumulative_incidence : pl.DataFrame
        :func:`relkit.survival.cumulative_incidence` with ``failure_mode``
        first, then the ``by`` columns.
    gray : pl.DataFrame
        :func:`relkit.survival.gray_test` per mode between the ``by`` groups
        (column ``group``: the groups compared, in words); empty without
        ``by``.
    table : pl.DataFrame
        The survival table: ``*by, unit_id, entry_h, stop_h, observed,
        failure_mode``, one row per node.
    notes : tuple of str
        Units left out, modes folded, ties broken, in words.
    """

    cumulative_incidence: pl.DataFrame
    gray: pl.DataFrame
    table: pl.DataFrame
    notes: tuple[str, ...]


class FirstFailureModes(NamedTuple):
    """The first-failure table per node by failure mode, and its notes.

    Unpacks as ``table, notes``.

    Parameters
    ----------
    table : pl.DataFrame
        ``*by, unit_id, entry_h, stop_h, observed, failure_mode`` (hours of age).
    notes : list of str
        What was folded or left out, in words.
    """

    table: pl.DataFrame
    notes: list[str]


def first_failure_modes(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    mode_column: str = "failure_mode",
    min_events: int = 0,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> FirstFailureModes:
    """Build the competing-risks table of each node's first failure.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    by : sequence of str, default ()
        Unit attributes (``system`` or columns of the assets, e.g. ``rack``).
    mode_column : str, default "failure_mode"
        Failure column naming the competing events (``root_cause`` for
        LANL's root causes).
    min_events : int, default 0
        Modes with fewer first failures than this (over all groups) are
        folded into ``"other"``, and a note names them.
    window_end : datetime, optional
        End of observation (UTC); default the end of data.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    FirstFailureModes
        Named tuple ``(table, notes)``: the table ``*by, unit_id, entry_h,
        stop_h, observed, failure_mode`` (hours of age in service; one row
        per node) and the notes.

    Raises
    ------
    SchemaError
        If a ``by`` column is not a unit attribute, or ``mode_column`` is not
        a failure column.
    InsufficientDataError
        As :func:`relkit.observation.observe`; when no node has time at risk
        with a known install date.
    """
    where = "cumulative_incidence_by"
    by = list(dict.fromkeys(by))
    obs = observe(
        events,
        assets,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    notes: list[str] = []
    failures = obs.failures
    if mode_column not in failures.columns:
        known = [c for c in ("failure_mode", "root_cause", "code") if c in failures]
        msg = f"{where}: {mode_column!r} is not a failure column; use one of {known}."
        raise SchemaError(msg)
    windows = obs.windows.filter(pl.col("exposure_h") > 0)
    if bad := [c for c in by if c not in windows.columns]:
        msg = (
            f"{where}: by={bad} is not a unit attribute; the competing events are "
            f"the modes of each node's first failure, so group by unit attributes "
            f"such as {['system', *obs.attributes][:6]}."
        )
        raise SchemaError(msg)
    if obs.excluded.height:
        notes.append(
            f"{obs.excluded.height} failure(s) in no service window of their unit "
            "are left out (relkit.answers.excluded_failures lists them)"
        )
    prior = obs.prior_failures
    if prior.height:
        hosts = prior["host"].unique().sort()
        notes.append(
            f"{hosts.len()} node(s) failed before observation began (e.g. "
            f"{hosts.head(3).to_list()}): their first failure is not observed, so "
            "they are left out"
        )
        windows = windows.filter(~pl.col("host").is_in(hosts.implode()))
        failures = failures.filter(~pl.col("host").is_in(hosts.implode()))
    if windows.height == 0:
        msg = (
            f"{where}: no unit has time at risk, so there is no first failure to "
            "estimate. Ingest the whole logs, or an assets table with the units' "
            "service windows."
        )
        raise InsufficientDataError(msg)
    failures = failures.with_columns(_mode=pl.col(mode_column).cast(pl.String))
    units, on_clock = to_service_clock(windows, failures, failures.head(0))
    table = survival.build_first_failure_table(
        on_clock.select("host", "ts", *[c for c in by if c in on_clock.columns]),
        units,
        by=by,
        window_end=units["out_of_service_ts"].max(),
    )
    n_nodes = units["host"].n_unique()
    unknown = n_nodes - table["unit_id"].n_unique()
    if unknown:
        notes.append(
            f"{unknown} of {n_nodes} node(s) have no known install date (in service "
            "before tracking, age unknown): their age at first failure cannot be "
            "placed, so they are left out"
        )
    if table.height == 0:
        msg = (
            f"{where}: none of the {n_nodes} node(s) has a known install date, so "
            "no age at first failure can be placed. Ingest assets with "
            "in_service_ts."
        )
        raise InsufficientDataError(msg)
    # the mode of each node's first failure; modes tied at that instant are
    # broken by name (one unit, one first event), and said
    first = (
        on_clock.filter(~pl.col("prior"))
        .filter(pl.col("ts") == pl.col("ts").min().over("host"))
        .group_by("host")
        .agg(
            failure_mode=pl.col("_mode").unique().sort().first(),
            _n=pl.col("_mode").n_unique(),
        )
    )
    tied = first.filter(pl.col("_n") > 1)
    if tied.height:
        notes.append(
            f"{tied.height} node(s) have first failures of several modes at one "
            f"instant (e.g. {tied['host'].sort().head(3).to_list()}): the first mode "
            "by name is counted"
        )
    table = table.join(
        first.select(unit_id="host", failure_mode="failure_mode"),
        on="unit_id",
        how="left",
    ).with_columns(
        failure_mode=pl.when("observed").then(
            pl.col("failure_mode").fill_null("unknown")
        )
    )
    if min_events > 0:
        counts = table.filter("observed").group_by("failure_mode").len()
        rare = counts.filter(pl.col("len") < min_events)["failure_mode"].sort()
        if rare.len():
            notes.append(
                f"{rare.len()} mode(s) with fewer than {min_events} first failures "
                f"are folded into {OTHER_MODE!r}: {rare.to_list()[:10]}"
            )
            table = table.with_columns(
                failure_mode=pl.when(pl.col("failure_mode").is_in(rare.implode()))
                .then(pl.lit(OTHER_MODE))
                .otherwise("failure_mode")
            )
    return FirstFailureModes(table, notes)


def _check_modes(
    cif: pl.DataFrame, modes: Sequence[str] | None, min_events: int
) -> pl.DataFrame:
    if modes is None:
        return cif
    present = cif["failure_mode"].unique().sort().to_list()
    if missing := [m for m in modes if m not in present]:
        msg = (
            f"cumulative_incidence_by: no first failure of mode(s) {missing}; the "
            f"modes of first failures are {present[:12]}"
            + (
                f" (modes with fewer than {min_events} are folded into "
                f"{OTHER_MODE!r}; lower min_events to see them)."
                if min_events > 0
                else "."
            )
            + (
                " A root cause competes as one mode with mode_column='root_cause' "
                "(--mode-column root_cause)."
                if any("/" not in m for m in missing)
                and any(str(p).startswith(f"{m}/") for m in missing for p in present)
                else ""
            )
        )
        raise SchemaError(msg)
    return cif.filter(pl.col("failure_mode").is_in(list(modes)))


def competing_risks_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    modes: Sequence[str] | None = None,
    unit: Literal["node"] = "node",
    endpoint: Literal["first-failure"] = "first-failure",
    mode_column: str = "failure_mode",
    min_events: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> CompetingRisks:
    """Estimate each first-failure mode's cumulative incidence; test groups (Gray).

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    by : sequence of str, default ()
        Unit attributes; one curve per group and mode, and Gray's test per
        mode between the groups.
    modes : sequence of str, optional
        Modes to report (all modes still compete); default all.
    unit : {"node"}, default "node"
        The unit whose first failure is counted.
    endpoint : {"first-failure"}, default "first-failure"
        Age in service at the first failure.
    mode_column : str, default "failure_mode"
        Failure column naming the competing events, e.g. ``root_cause``.
    min_events : int, default 0
        Fold modes with fewer first failures into ``"other"`` (with a note).
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the pointwise bands.
    window_end : datetime, optional
        End of observation (UTC); default the end of data.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names (``failure_modes`` is the
        table of declared non-failure modes, as :func:`relkit.answers.store_tables`
        gives it; the modes to report are ``modes``).

    Returns
    -------
    CompetingRisks

    Raises
    ------
    SchemaError
        If ``unit`` or ``endpoint`` is not supported, a ``by`` column is not a
        unit attribute, or a requested mode has no first failure.
    InsufficientDataError
        When no node has a first failure (nothing to estimate), or as
        :func:`first_failure_modes`.

    Notes
    -----
    Aalen-Johansen with delta-method bands (Marubini & Valsecchi 1995,
    doi:10.1002/9780470975749); Gray 1988 (doi:10.1214/aos/1176350951). See
    :func:`relkit.survival.cumulative_incidence` and
    :func:`relkit.survival.gray_test`.
    """
    where = "cumulative_incidence_by"
    if unit != "node":
        msg = f"{where}: unit={unit!r} is not supported; use unit='node'."
        raise SchemaError(msg)
    if endpoint != "first-failure":
        msg = (
            f"{where}: endpoint={endpoint!r} is not supported for competing risks; "
            "use 'first-failure' (time between failures: relkit survival)."
        )
        raise SchemaError(msg)
    by = list(dict.fromkeys(by))
    table, notes = first_failure_modes(
        events,
        assets,
        by=by,
        mode_column=mode_column,
        min_events=min_events,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    if not table["observed"].any():
        msg = (
            f"{where}: none of the {table.height} node(s) failed while observed, so "
            "there is no cumulative incidence to estimate."
        )
        raise InsufficientDataError(msg)
    cif = survival.cumulative_incidence(table, by=by, confidence=confidence)
    cif = _check_modes(cif, modes, min_events)
    gray = pl.DataFrame(
        schema={
            "failure_mode": pl.String,
            "group": pl.String,
            "statistic": pl.Float64,
            "df": pl.Int64,
            "p_value": pl.Float64,
            "n_groups": pl.Int64,
            "n_events": pl.Int64,
            "n_units": pl.Int64,
            "status": pl.String,
        }
    )
    if by:
        keyed = table.with_columns(
            _group=pl.concat_str(
                [pl.col(c).cast(pl.String).fill_null("(missing)") for c in by],
                separator=", ",
            )
        )
        if keyed["_group"].n_unique() < 2:
            notes.append(
                f"Gray's test needs two groups; {by} has one value among the units, "
                "so no test is given"
            )
        else:
            wanted = cif["failure_mode"].unique().sort().to_list()
            gray = (
                survival.gray_test(keyed, group="_group", failure_modes=wanted)
                .with_columns(group=pl.lit(", ".join(by)))
                .select(gray.columns)
            )
            bad = gray.filter(pl.col("status") != "ok")
            if bad.height:
                notes.append(
                    f"Gray's test has no statistic for {bad.height} mode(s) "
                    f"{bad['failure_mode'].to_list()[:8]}: {bad['status'][0]}"
                )
    return CompetingRisks(cif, gray, table, tuple(notes))


def _warn(notes: Sequence[str]) -> None:
    for note in notes:
        warnings.warn(note, RelkitWarning, stacklevel=3)


def cumulative_incidence_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    modes: Sequence[str] | None = None,
    unit: Literal["node"] = "node",
    endpoint: Literal["first-failure"] = "first-failure",
    mode_column: str = "failure_mode",
    min_events: int = 0,
    confidence: float = DEFAULT_CONFIDENCE,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Estimate the cumulative incidence of each mode of the nodes' first failures.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    by, modes, unit, endpoint, mode_column, min_events, confidence : optional
        As for :func:`competing_risks_by`.
    window_end : datetime, optional
        End of observation (UTC); default the end of data.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    pl.DataFrame
        Columns ``failure_mode, *by, time_h, cumulative_incidence, lower,
        upper, n_at_risk, n_events`` (:func:`relkit.survival.cumulative_incidence`;
        ``time_h`` is age in service, hours).

    Raises
    ------
    SchemaError, InsufficientDataError
        As :func:`competing_risks_by`.

    Warns
    -----
    RelkitWarning
        One per note of :class:`CompetingRisks` (units left out, modes folded).
    """
    result = competing_risks_by(
        events,
        assets,
        by=by,
        modes=modes,
        unit=unit,
        endpoint=endpoint,
        mode_column=mode_column,
        min_events=min_events,
        confidence=confidence,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    _warn(result.notes)
    return result.cumulative_incidence


def gray_test_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str],
    modes: Sequence[str] | None = None,
    mode_column: str = "failure_mode",
    min_events: int = 0,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Test each first-failure mode between the groups of ``by`` (Gray's test).

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    by : sequence of str
        Unit attributes whose combined values are the groups (at least one).
    modes, mode_column, min_events : optional
        As for :func:`competing_risks_by`.
    window_end : datetime, optional
        End of observation (UTC); default the end of data.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    pl.DataFrame
        One row per mode: ``failure_mode, group, statistic, df, p_value,
        n_groups, n_events, n_units, status`` (:func:`relkit.survival.gray_test`).

    Raises
    ------
    SchemaError
        If ``by`` is empty, or as :func:`competing_risks_by`.
    InsufficientDataError
        If the units form fewer than two groups, or as
        :func:`competing_risks_by`.

    Warns
    -----
    RelkitWarning
        One per note of :class:`CompetingRisks`.
    """
    if not by:
        msg = "gray_test_by: give by=[...] (the unit attribute whose groups differ)."
        raise SchemaError(msg)
    result = competing_risks_by(
        events,
        assets,
        by=by,
        modes=modes,
        mode_column=mode_column,
        min_events=min_events,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    if result.gray.height == 0:
        msg = (
            f"gray_test_by: the units form fewer than two groups of {list(by)}, so "
            "there is nothing to compare."
        )
        raise InsufficientDataError(msg)
    _warn(result.notes)
    return result.gray
