"""The main job's questions, answered from the store's ``events`` and ``assets``.

Thin compositions of :mod:`relkit.exposure`, :mod:`relkit.metrics`,
:mod:`relkit.survival` and :mod:`relkit.checkpoint`, shared by the command line,
the report and the notebooks so that all three give the same numbers.
"""

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Literal

import polars as pl

from relkit import checkpoint, exposure, metrics, survival
from relkit._prepare import prepare_tables as _prepare_tables
from relkit._prepare import split_by, with_cause_columns

__all__ = [
    "ASSUMED_BASIS",
    "checkpoint_plan_by_system",
    "event_table",
    "first_failure_survival",
    "incident_table",
    "log_end",
    "mtbf_by",
    "survival_by",
    "time_between_failures",
]


#: ``exposure_basis`` of results that rest on assumed assets.
ASSUMED_BASIS = "assumed: hosts seen in the logs over the log span"


def _unique(by: Sequence[str]) -> list[str]:
    """Return the grouping columns in order, each once."""
    return list(dict.fromkeys(by))


def mtbf_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    confidence: float = 0.9,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    window_min: float = 10.0,
    gpus_per_node: int = 8,
    sources: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Compute MTBF per group from the store's events and assets tables.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table (``ts``, ``host``, ``system``, ``failure_mode``,
        ``repair_s``). Kernel-log and nvidia-smi signals are folded into incidents
        first and each failure incident counts once; other rows (LANL records,
        normalised failure tables) count one failure each.
    assets : pl.DataFrame
        The store's ``assets`` table: the units at risk and their service windows.
    by : sequence of str, default ()
        Grouping columns: unit attributes (``system``, ``host``, ``device``) and/or
        failure attributes (``failure_mode``, ``root_cause``, ``sub_cause``, ``code``,
        ``severity``).
    confidence : float, default 0.9
        Two-sided confidence level of the bounds, in (0, 1).
    window_start, window_end : datetime, optional
        Observation window (UTC). ``window_end`` defaults to the end of the data.
    window_min : float, default 10.0
        Incident gap window for log signals, minutes (see
        :func:`relkit.incidents.build_incidents`).
    gpus_per_node : int, default 8
        GPUs per host when, with no assets table, the hosts seen in the logs are
        assumed at risk over the span of the logs.

    sources : pl.DataFrame, optional
        The store's ``sources`` table: kernel logs record when they end
        (``log_end_ts``), which extends each host's observation past its last
        failure to its logs' last line. Without it, observation ends at the last
        failure or repair record.

    Returns
    -------
    pl.DataFrame
        One row per group, columns as :func:`relkit.metrics.mtbf`, then
        ``exposure_basis``: ``"assets"``, or ``"assumed: hosts seen in the logs
        over the log span"`` when no assets table was ingested.

    Raises
    ------
    SchemaError
        If a ``by`` column is not a known attribute.
    InsufficientDataError
        If the store holds no events or no assets.
    """
    by = _unique(by)
    unit_by, _ = split_by(by, assets)
    events, assets, end = _prepare_tables(
        events,
        assets,
        window_end,
        window_min=window_min,
        gpus_per_node=gpus_per_node,
        sources=sources,
    )
    # a declared window is half-open [start, end), so adjacent windows never
    # count one failure twice; the default end is the last record, kept inside
    inside = pl.col("ts") < end if window_end is not None else pl.col("ts") <= end
    failures = with_cause_columns(events).filter(inside)
    if window_start is not None:
        failures = failures.filter(pl.col("ts") >= window_start)
    at_risk = exposure.build_exposure(
        assets, by=unit_by, window_start=window_start, window_end=end
    )
    assumed = assets["attrs"].str.contains('"assumed": true', literal=True).any()
    basis = ASSUMED_BASIS if assumed else "assets"
    result = metrics.mtbf(failures, at_risk, by=list(by), confidence=confidence)
    return result.with_columns(exposure_basis=pl.lit(basis))


def _tbf_tables(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str],
    unit: Literal["node", "system"],
    window_end: datetime | None,
    sources: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Return the time-between-failures table and its exclusions."""
    by = _unique(by)
    split_by(by, assets)
    events, assets, end = _prepare_tables(events, assets, window_end, sources=sources)
    failures = with_cause_columns(events)
    args = {"unit": unit, "by": by, "window_end": end}
    return (
        survival.build_tbf_table(failures, assets, **args),
        survival.build_tbf_exclusions(failures, assets, **args),
    )


def time_between_failures(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    unit: Literal["node", "system"] = "system",
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Build the time-between-failures table of each group, ready to fit.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table.
    assets : pl.DataFrame
        The store's ``assets`` table.
    by : sequence of str, default ()
        Grouping columns, as in :func:`mtbf_by`.
    unit : {"node", "system"}, default "system"
        Gaps between failures of the same node, or of the whole group.
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of the data.

    sources : pl.DataFrame, optional
        The store's ``sources`` table: kernel logs record when they end
        (``log_end_ts``), which extends each host's observation past its last
        failure to its logs' last line. Without it, observation ends at the last
        failure or repair record.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, unit_id, entry_h, stop_h, observed`` as
        :func:`relkit.survival.build_tbf_table`.

    Raises
    ------
    SchemaError
        If a ``by`` column is not a known attribute.
    InsufficientDataError
        If the store holds no assets, or failures on hosts it does not list.
    """
    return _tbf_tables(
        events, assets, by=by, unit=unit, window_end=window_end, sources=sources
    )[0]


def survival_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    unit: Literal["node", "system"] = "system",
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Fit lifetime models to the time between failures of each group.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table.
    assets : pl.DataFrame
        The store's ``assets`` table.
    by : sequence of str, default ()
        Grouping columns, as in :func:`mtbf_by`.
    unit : {"node", "system"}, default "system"
        Gaps between failures of the same node, or of the whole group.
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of the data.

    sources : pl.DataFrame, optional
        The store's ``sources`` table: kernel logs record when they end
        (``log_end_ts``), which extends each host's observation past its last
        failure to its logs' last line. Without it, observation ends at the last
        failure or repair record.

    Returns
    -------
    pl.DataFrame
        One row per group, columns as :func:`relkit.survival.fit_lifetimes`, plus
        ``n_excluded``: gaps left out because their origin is unknown (a node in
        service before tracking began with no known start) or they fall outside
        every unit's window; :func:`relkit.survival.build_tbf_exclusions` lists them.

    Raises
    ------
    SchemaError
        If a ``by`` column is not a known attribute.
    InsufficientDataError
        If the store holds no events or no assets.
    """
    by = _unique(by)
    table, excluded = _tbf_tables(
        events, assets, by=by, unit=unit, window_end=window_end, sources=sources
    )
    fits = survival.fit_lifetimes(table, by=by)
    if by:
        counts = excluded.group_by(by).agg(n_excluded=pl.col("n").sum())
        counts = counts.cast({c: fits.schema[c] for c in by})
        fits = fits.join(counts, on=by, how="left")
    else:
        fits = fits.with_columns(n_excluded=pl.lit(int(excluded["n"].sum())))
    return fits.with_columns(pl.col("n_excluded").fill_null(0).cast(pl.Int64))


def first_failure_survival(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    systems: Sequence[str] | None = None,
    confidence: float = 0.95,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Kaplan-Meier curve of each node's time to its first failure, per system.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table.
    assets : pl.DataFrame
        The store's ``assets`` table.
    systems : sequence of str, optional
        Systems to include; all by default.
    confidence : float, default 0.95
        Level of the pointwise confidence band.
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of the data.

    sources : pl.DataFrame, optional
        The store's ``sources`` table: kernel logs record when they end
        (``log_end_ts``), which extends each host's observation past its last
        failure to its logs' last line. Without it, observation ends at the last
        failure or repair record.

    Returns
    -------
    pl.DataFrame
        Columns as :func:`relkit.survival.kaplan_meier` with ``system`` first.

    Raises
    ------
    InsufficientDataError
        If the store holds no events or no assets.

    Notes
    -----
    Time runs from a node's entry into service. Nodes already in service when
    tracking began enter late (left truncation); nodes never failing are
    right-censored at decommission or the end of the data.
    """
    events, assets, end = _prepare_tables(events, assets, window_end, sources=sources)
    if systems is not None:
        events = events.filter(pl.col("system").is_in(list(systems)))
        assets = assets.filter(pl.col("system").is_in(list(systems)))
    table = survival.build_first_failure_table(
        with_cause_columns(events), assets, by=["system"], window_end=end
    )
    return survival.kaplan_meier(table, by=["system"], confidence=confidence)


def checkpoint_plan_by_system(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    cost_h: float,
    restart_h: float,
    min_failures: int = 100,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Plan checkpoints for a job that spans each whole system.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table.
    assets : pl.DataFrame
        The store's ``assets`` table.
    cost_h : float
        Assumed time to write one checkpoint, hours (> 0).
    restart_h : float
        Assumed time to restart after a failure, hours (>= 0).
    min_failures : int, default 100
        Systems with fewer recorded failures are left out.
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of the data.

    sources : pl.DataFrame, optional
        The store's ``sources`` table: kernel logs record when they end
        (``log_end_ts``), which extends each host's observation past its last
        failure to its logs' last line. Without it, observation ends at the last
        failure or repair record.

    Returns
    -------
    pl.DataFrame
        One row per system, sorted by job MTBF: ``system``, ``n_nodes``,
        ``n_failures``, ``node_mtbf_h``, ``mtbf_h`` (the job's MTBF), then the
        interval columns of :func:`relkit.checkpoint.plan_checkpoints`.

    Raises
    ------
    InvalidParameterError
        If the costs are out of range.

    Notes
    -----
    A job holding all :math:`N` nodes of a system is interrupted by any node's
    failure. With node failures at a constant rate, the job's MTBF is the
    system's node MTBF divided by the nodes at risk,
    :math:`M_{job} = M_{node} / N = T_{calendar} / r` when every node shares the
    system's window, which is what Young's and Daly's formulas need as
    :math:`M` (Daly 2006, doi:10.1016/j.future.2004.11.016).
    """
    events, assets, end = _prepare_tables(events, assets, window_end, sources=sources)
    nodes = exposure.build_exposure(assets, by=["system"], window_end=end).select(
        "system", n_nodes="n_units"
    )
    by_system = mtbf_by(
        events, assets, by=["system"], window_end=window_end, sources=sources
    )
    job = (
        by_system.filter(pl.col("n_failures") >= min_failures)
        .join(nodes, on="system", how="left")
        .select(
            "system",
            "n_nodes",
            node_mtbf_h="mtbf_h",
            mtbf_h=pl.col("mtbf_h") / pl.col("n_nodes"),
        )
        .sort("mtbf_h", "system")
    )
    plan = checkpoint.plan_checkpoints(job, cost_h=cost_h, restart_h=restart_h)
    counts = by_system.select("system", "n_failures")
    return plan.join(counts, on="system", how="left").select(
        "system", "n_nodes", "n_failures", pl.exclude("system", "n_nodes", "n_failures")
    )


def event_table(
    events: pl.DataFrame, *, failure_mode: str | None = None
) -> pl.DataFrame:
    """List failure-log events with their taxonomy category.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table.
    failure_mode : str, optional
        Keep only this mode (e.g. ``"gpu/hbm_uncorrectable"``).

    Returns
    -------
    pl.DataFrame
        ``ts, host, device, code, failure_mode, category, severity, count,
        source_id, line_no``, sorted by time (rows without wall time last);
        ``category`` from :data:`relkit.taxonomy.FAILURE_MODES`, or the part of
        ``failure_mode`` before the ``/`` for modes outside the taxonomy.
    """
    from relkit.taxonomy import FAILURE_MODES

    if failure_mode is not None:
        events = events.filter(pl.col("failure_mode") == failure_mode)
    categories = FAILURE_MODES.select("failure_mode", _category="category")
    return (
        events.join(categories, on="failure_mode", how="left")
        .with_columns(
            category=pl.coalesce(
                "_category", pl.col("failure_mode").str.split("/").list.first()
            )
        )
        .select(
            "ts",
            "host",
            "device",
            "code",
            "failure_mode",
            "category",
            "severity",
            "count",
            "source_id",
            "line_no",
        )
        .sort("ts", "source_id", "line_no", nulls_last=True)
    )


def log_end(sources: pl.DataFrame) -> datetime | None:
    """Time of the last line of the store's logs, if the readers recorded one.

    Parameters
    ----------
    sources : pl.DataFrame
        The store's ``sources`` table (``options`` JSON text per source; the
        kernel reader records ``log_end_ts``, the UTC time of a file's last
        non-blank line with a resolvable time).

    Returns
    -------
    datetime or None
        The latest ``log_end_ts`` over all sources (UTC), or None if none has
        one.

    Examples
    --------
    >>> src = pl.DataFrame(
    ...     {
    ...         "options": [
    ...             '{"log_end_ts": "2025-05-02T12:00:00+00:00"}',
    ...             '{"tz": "UTC"}',
    ...         ]
    ...     }
    ... )
    >>> log_end(src)
    datetime.datetime(2025, 5, 2, 12, 0, tzinfo=datetime.timezone.utc)
    """
    if sources.is_empty() or "options" not in sources.columns:
        return None
    ends = [
        datetime.fromisoformat(v).astimezone(UTC)
        for text in sources.get_column("options").drop_nulls().to_list()
        if (v := json.loads(text).get("log_end_ts"))
    ]
    return max(ends) if ends else None


def incident_table(
    events: pl.DataFrame,
    *,
    window_min: float = 10.0,
    flap_debounce_min: float = 5.0,
    end_of_log: datetime | None = None,
) -> pl.DataFrame:
    """Fold the failure-log events of a store into incidents.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table; rows outside the taxonomy (LANL records,
        normalised failure tables) are already one row per failure and are left
        out here.
    window_min : float, default 10.0
        Largest gap between events of one incident, minutes.
    flap_debounce_min : float, default 5.0
        Link down/up transitions of one port within this many minutes are one
        incident.
    end_of_log : datetime, optional
        End of observation (aware): an incident still open then is
        right-censored there (e.g. :func:`log_end` of the store's sources). It
        is moved to the last event if earlier. Defaults to the last event.

    Returns
    -------
    pl.DataFrame
        Columns as :func:`relkit.incidents.build_incidents`, starting with
        ``host, device, failure_mode, category, start_ts, end_ts, n_events,
        is_open, lower_bound_count``.
    """
    from relkit.incidents import build_incidents
    from relkit.taxonomy import FAILURE_MODES

    known = pl.col("failure_mode").is_in(FAILURE_MODES["failure_mode"].implode())
    raw = events.filter(known)
    last = raw.get_column("ts").max() if raw.height else None
    if end_of_log is not None and last is not None:
        end_of_log = max(end_of_log, last)  # type: ignore[type-var]
    incidents = build_incidents(
        raw,
        window_min=window_min,
        flap_debounce_min=flap_debounce_min,
        end_of_log=end_of_log,
    )
    first = [
        "host",
        "device",
        "failure_mode",
        "category",
        "start_ts",
        "end_ts",
        "n_events",
        "is_open",
        "lower_bound_count",
    ]
    return incidents.select(*first, pl.exclude(first))
