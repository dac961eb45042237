"""The main job's questions, answered from the store's tables (composition).

Thin compositions of :mod:`relkit.observation` (what was at risk, and when),
:mod:`relkit.metrics`, :mod:`relkit.survival` and :mod:`relkit.checkpoint`,
shared by the command line, the report and the notebooks so that all three give
the same numbers for the same store.
"""

import json
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Literal

import polars as pl

from relkit import checkpoint, metrics
from relkit._answers_competing import (
    OTHER_MODE,
    CompetingRisks,
    FirstFailureModes,
    competing_risks_by,
    cumulative_incidence_by,
    first_failure_modes,
    gray_test_by,
)
from relkit._answers_goodput import (
    FIRST_ORDER_LOAD_LIMIT,
    SWEEP_GPUS,
    LossesFilled,
    PerModePlan,
    decide_checkpoints,
    decision_curve,
    decision_scale_sweep,
    interruptions_with_losses,
    per_mode_checkpoint_plan,
    run_goodput,
)
from relkit._answers_hazards import hazards_by
from relkit._answers_lemons import LEMON_FIELDS, lemons
from relkit._answers_repairable import (
    PERIODS,
    RepairableFrames,
    mcf_by,
    mtbf_by_period,
    repairable_frames,
    trend_by,
)
from relkit._answers_survival import (
    ENDPOINTS,
    GPU_COMPONENTS,
    GPUFailures,
    first_failure_survival,
    gpu_failures,
    gpu_mode,
    survival_by,
    survival_table,
    time_between_failures,
)
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InsufficientDataError, SchemaError
from relkit.observation import (
    ASSUMED_BASIS,
    MIN_EXPOSURE_H,
    Observation,
    instant_units,
    node_failures,
    observe,
    split_by,
    system_incidents,
)

if TYPE_CHECKING:
    from relkit.store import Store

__all__ = [
    "ASSUMED_BASIS",
    "ENDPOINTS",
    "FIRST_ORDER_LOAD_LIMIT",
    "GPU_COMPONENTS",
    "LEMON_FIELDS",
    "OTHER_MODE",
    "PERIODS",
    "SWEEP_GPUS",
    "CompetingRisks",
    "FirstFailureModes",
    "GPUFailures",
    "LossesFilled",
    "PerModePlan",
    "RepairableFrames",
    "checkpoint_plan_by_system",
    "competing_risks_by",
    "cumulative_incidence_by",
    "decide_checkpoints",
    "decision_curve",
    "decision_scale_sweep",
    "event_table",
    "excluded_failures",
    "first_failure_modes",
    "first_failure_survival",
    "gpu_failures",
    "gpu_mode",
    "gray_test_by",
    "hazards_by",
    "incident_table",
    "interruptions_with_losses",
    "lemons",
    "log_end",
    "mcf_by",
    "mtbf_by",
    "mtbf_by_period",
    "mtbf_of",
    "no_wall_time_note",
    "per_mode_checkpoint_plan",
    "repairable_frames",
    "run_goodput",
    "store_tables",
    "survival_by",
    "survival_table",
    "time_between_failures",
    "trend_by",
]


def _unique(by: Sequence[str]) -> list[str]:
    """Return the grouping columns in order, each once."""
    return list(dict.fromkeys(by))


#: The store tables every answer reads, as keyword arguments of the functions here.
STORE_TABLES = ("events", "assets", "sources", "log_spans", "failure_modes")


def store_tables(store: "Store") -> dict[str, pl.DataFrame]:
    """Read the tables every answer needs, keyed as the functions here take them.

    Parameters
    ----------
    store : relkit.store.Store
        An open store.

    Returns
    -------
    dict of str to pl.DataFrame
        ``events``, ``assets``, ``sources``, ``log_spans`` and
        ``failure_modes`` (those the store's schema has), so that
        ``mtbf_by(**store_tables(store))`` gives the command line's answer.

    Examples
    --------
    >>> from relkit.store import Store
    >>> with Store(":memory:") as store:
    ...     tables = store_tables(store)
    >>> tables["events"].height, "assets" in tables
    (0, True)
    """
    out = {}
    for name in STORE_TABLES:
        try:
            out[name] = store.table(name)
        except SchemaError:  # a store schema without the table
            continue
    return out


def mtbf_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
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
    count_unknown_xid: bool = False,
) -> pl.DataFrame:
    """Compute MTBF per group from the store's tables.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table. Kernel-log and nvidia-smi signals are
        folded into incidents first and each failure incident counts once;
        other rows (LANL records, normalised failure tables) count one failure
        each.
    assets : pl.DataFrame
        The store's ``assets`` table: the units at risk and their service
        windows (empty: hosts seen in the logs, over their logs' span).
    by : sequence of str, default ()
        Grouping columns: unit attributes (``system``, ``host``, ``device``
        where devices are units, and any asset attribute such as ``rack`` or
        ``batch``) and/or failure attributes (``failure_mode``,
        ``root_cause``, ``sub_cause``, ``code``, ``severity``, any events
        column).
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided confidence level of the bounds, in (0, 1).
    window_start, window_end : datetime, optional
        Observation window (UTC), half-open. A declared end clips every window
        and extends open-ended units to it; without it, open-ended units run
        to the end of data (the sources' collection time).
    window_min : float, optional
        Incident gap window, minutes (see
        :func:`relkit.observation.failure_records`): log signals are folded
        with 10 min when not given; normalised records only when given.
    gpus_per_node : int, default 8
        GPUs per host when the assets leave ``gpus`` empty or there are none.
    unit : {"node", "gpu"}, optional
        The unit of time at risk: node-hours (default for node assets) or
        GPU-hours (default for per-GPU assets). Rates are per 1000 node-days
        or GPU-days accordingly.
    min_exposure_h : float, default 24.0
        Groups with less time at risk (unit-hours) get a ``warning``.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names (when collection ended, hosts of
        multi-host logs, declared failure modes).
    count_unknown_xid : bool, default False
        Count Xid codes outside NVIDIA's catalogue (``gpu/unknown_xid``) as
        failures; by default they are kept but not counted.

    Returns
    -------
    pl.DataFrame
        One row per group: the ``by`` columns, ``n_units``, the columns of
        :func:`relkit.metrics.mtbf` (``failures_per_1000_node_days`` renamed
        ``failures_per_1000_gpu_days`` when ``unit="gpu"``), then ``unit``,
        ``n_excluded`` (failures of the group's units in none of their
        windows, see :func:`excluded_failures`), ``n_folded`` (failures of a
        node's GPUs or parts folded into an earlier failure of the same node,
        ``unit="node"`` only), ``observed_until`` (UTC, the latest exit from
        observation of the group's units), ``exposure_basis`` and ``warning``
        (null, or why the row says little).

    Notes
    -----
    With ``unit="node"`` a failure is a node failure: the failures of one
    host that start within the incident window of the previous one (10 min,
    or ``window_min``; any GPU, any mode) are one
    (:func:`relkit.observation.node_failures`), counted under the
    ``failure_mode``, ``code`` and ``severity`` of the first; the others are
    in ``n_folded``. ``unit="gpu"`` counts each GPU's failure.

    A unit observed in a window of zero length (without assets: a host whose
    logs have a single timed instant) counts in ``n_units`` with 0 h, and a
    failure it holds counts (it was observed when it failed); its time at risk
    is unknown, and its rows say so in ``warning``
    (:func:`relkit.observation.instant_units`).

    Raises
    ------
    SchemaError
        If a ``by`` column is not a known attribute, or is ``device`` where
        devices are not units.
    InsufficientDataError
        If events lack wall time, or nothing says when open-ended units stop
        being observed (see :func:`relkit.observation.observe`).
    """
    obs = observe(
        events,
        assets,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
        window_start=window_start,
        window_end=window_end,
        window_min=window_min,
        gpus_per_node=gpus_per_node,
        count_unknown_xid=count_unknown_xid,
    )
    return mtbf_of(
        obs,
        by=by,
        confidence=confidence,
        unit=unit,
        gpus_per_node=gpus_per_node,
        min_exposure_h=min_exposure_h,
    )


def mtbf_of(
    obs: Observation,
    *,
    by: Sequence[str] = (),
    confidence: float = DEFAULT_CONFIDENCE,
    unit: Literal["node", "gpu"] | None = None,
    gpus_per_node: int = 8,
    min_exposure_h: float = MIN_EXPOSURE_H,
) -> pl.DataFrame:
    """MTBF per group of an observation already made (``observation.observe``).

    Parameters and result as :func:`mtbf_by`, which calls it; use it to
    answer several groupings of one store without observing it again.

    Parameters
    ----------
    obs : relkit.observation.Observation
        The observation model applied to a store.
    by, confidence, unit, gpus_per_node, min_exposure_h
        As :func:`mtbf_by`.

    Returns
    -------
    pl.DataFrame
        As :func:`mtbf_by`.

    Raises
    ------
    SchemaError
        If a ``by`` column is not a known attribute.
    """
    by = _unique(by)
    unit_by, _ = split_by(by, obs.windows, obs.failures, attributes=obs.attributes)
    per_device = obs.windows["device"].is_not_null().any()
    unit = unit or ("gpu" if per_device else "node")
    at_risk = obs.exposure(
        unit_by, unit=unit, gpus_per_node=gpus_per_node, with_failed_instants=True
    )
    if not unit_by and at_risk.height == 0:
        at_risk = pl.DataFrame({"n_units": [0], "exposure_h": [0.0]})
    failures = obs.failures
    if unit == "node" and "device" not in unit_by:
        failures = node_failures(failures, window_min=obs.window_min)
    n_no_device = 0
    if "device" in unit_by:
        # node-level failures (no GPU of the inventory named) belong to no
        # device's row; they count in node-level answers
        devices = obs.windows.select("host", "device").unique()
        on_device = failures.join(devices, on=["host", "device"], how="semi")
        n_no_device = failures.height - on_device.height
        failures = on_device
    for col in unit_by:
        if col in failures.columns and col in at_risk.columns:
            failures = failures.with_columns(pl.col(col).cast(at_risk.schema[col]))
    result = metrics.mtbf(failures, at_risk, by=list(by), confidence=confidence)
    counts = at_risk.select(*unit_by, "n_units")
    result = (
        result.join(counts, on=unit_by, how="left", nulls_equal=True)
        if unit_by
        else result.with_columns(
            n_units=pl.lit(counts["n_units"].sum(), dtype=pl.Int64)
        )
    )
    excluded = _excluded_counts(obs, unit_by, by)
    if unit_by or [c for c in by if c not in unit_by]:
        keys = [c for c in by if c in excluded.columns]
        result = result.join(excluded, on=keys, how="left", nulls_equal=True)
    else:
        result = result.with_columns(n_excluded=pl.lit(excluded["n_excluded"].sum()))
    result = _with_folded(result, failures, by)
    rate = f"failures_per_1000_{unit}_days"
    if unit != "node":
        result = result.rename({"failures_per_1000_node_days": rate})
    warning = (
        pl.when(pl.col("exposure_h") < min_exposure_h)
        .then(
            pl.format(
                "only {} {}-hours at risk (under {} h): the rate says little",
                pl.col("exposure_h").round(2),
                pl.lit(unit),
                pl.lit(min_exposure_h),
            )
        )
        .otherwise(pl.lit(None, dtype=pl.String))
    )
    if n_no_device:
        note = (
            f"{n_no_device} node-level failure(s) name no GPU of the inventory "
            "and are in no device's row (they count per node: --unit node)"
        )
        warning = pl.concat_str(
            [warning, pl.lit(note)], separator="; ", ignore_nulls=True
        )
    result = _with_instant_note(result, obs, unit_by, unit)
    warning = pl.concat_str(
        [warning, pl.col("_instant")], separator="; ", ignore_nulls=True
    )
    warning = pl.when(warning != "").then(warning)
    # each group is observed until the latest exit of its units' windows
    instant = instant_units(obs.windows, obs.failures, unit=unit)  # type: ignore[arg-type]
    until = pl.concat(
        [
            obs.windows.filter(pl.col("exposure_h") > 0),
            instant.select(obs.windows.columns),
        ]
    )
    if unit_by:
        until = until.group_by(unit_by).agg(
            observed_until=pl.col("out_of_service_ts").max()
        )
        result = result.join(
            until.cast({c: result.schema[c] for c in unit_by}),
            on=unit_by,
            how="left",
            nulls_equal=True,
        )
    else:
        result = result.with_columns(
            observed_until=pl.lit(
                until["out_of_service_ts"].max(), dtype=pl.Datetime("us", "UTC")
            )
        )
    return (
        result.with_columns(
            pl.col("n_excluded").fill_null(0).cast(pl.Int64),
            unit=pl.lit(unit),
            exposure_basis=pl.lit(obs.exposure_basis),
            warning=warning,
        )
        .drop("_instant")
        .select(*by, "n_units", pl.exclude(*by, "n_units"))
    )


def _with_folded(
    result: pl.DataFrame, failures: pl.DataFrame, by: list[str]
) -> pl.DataFrame:
    """Add ``n_folded``: failures folded into node failures, per group."""
    if "n_folded" not in failures.columns:
        return result.with_columns(n_folded=pl.lit(0, dtype=pl.Int64))
    if not by:
        return result.with_columns(
            n_folded=pl.lit(int(failures["n_folded"].sum()), dtype=pl.Int64)
        )
    folded = failures.group_by(by).agg(n_folded=pl.col("n_folded").sum())
    folded = folded.cast({c: result.schema[c] for c in by})
    return result.join(folded, on=by, how="left", nulls_equal=True).with_columns(
        pl.col("n_folded").fill_null(0).cast(pl.Int64)
    )


def _with_instant_note(
    result: pl.DataFrame, obs: Observation, unit_by: list[str], unit: str
) -> pl.DataFrame:
    """Add ``_instant``: the group's units with no measurable time at risk."""
    instant = instant_units(obs.windows, obs.failures, unit=unit)  # type: ignore[arg-type]
    if instant.height == 0:
        return result.with_columns(_instant=pl.lit(None, dtype=pl.String))
    why = (
        "one timed instant in its logs"
        if obs.exposure_basis == ASSUMED_BASIS
        else "a service window of zero length"
    )
    name = (
        pl.concat_str("host", pl.col("device").fill_null(""), separator=" ")
        .str.strip_chars()
        .alias("_name")
        if unit == "gpu" and "device" in instant.columns
        else pl.col("host").alias("_name")
    )
    per = (
        instant.with_columns(name)
        .group_by(unit_by)
        .agg(
            _names=pl.col("_name").sort().head(5),
            _n=pl.len(),
            _f=pl.col("n_failures").sum(),
        )
        if unit_by
        else instant.with_columns(name).select(
            _names=pl.col("_name").sort().head(5).implode(),
            _n=pl.len(),
            _f=pl.col("n_failures").sum(),
        )
    )
    per = per.with_columns(
        _instant=pl.format(
            "{} unit(s) observed for no measurable time ({}: {}): their time "
            "at risk is unknown and taken as 0 h{}",
            pl.col("_n"),
            pl.col("_names").list.join(", "),
            pl.lit(why),
            pl.when(pl.col("_f") > 0)
            .then(
                pl.format(
                    "; their {} failure(s) count, so the MTBF is understated",
                    pl.col("_f"),
                )
            )
            .otherwise(pl.lit("")),
        )
    ).select(*unit_by, "_instant")
    if not unit_by:
        return result.with_columns(_instant=pl.lit(per["_instant"][0]))
    per = per.cast({c: result.schema[c] for c in unit_by})
    return result.join(per, on=unit_by, how="left", nulls_equal=True)


def _excluded_counts(
    obs: Observation, unit_by: list[str], by: list[str]
) -> pl.DataFrame:
    """Excluded failures per group (unit attributes from the windows)."""
    ex = obs.excluded
    parts = pl.col("failure_mode").str.split_exact("/", 1)
    ex = ex.with_columns(
        root_cause=parts.struct.field("field_0"),
        sub_cause=pl.coalesce(
            parts.struct.field("field_1"), parts.struct.field("field_0")
        ),
    )
    attrs = [c for c in unit_by if c not in ex.columns]
    if attrs:
        host_attrs = obs.windows.select("host", *attrs).unique("host", keep="first")
        ex = ex.join(host_attrs, on="host", how="left")
    keys = [c for c in by if c in ex.columns]
    if not keys:
        return pl.DataFrame({"n_excluded": [ex.height]})
    return ex.group_by(keys).agg(n_excluded=pl.len())


def excluded_failures(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
) -> pl.DataFrame:
    """List the failures that fall in no service window of their unit.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.
    window_start, window_end : datetime, optional
        The declared window (UTC).

    Returns
    -------
    pl.DataFrame
        ``source_id, line_no, ts, host, device, failure_mode, reason``, sorted
        by time: failures before service, before tracking, between two
        windows, after removal, or on a host missing from the assets.
    """
    obs = observe(
        events,
        assets,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
        window_start=window_start,
        window_end=window_end,
    )
    return obs.excluded.select(
        "source_id", "line_no", "ts", "host", "device", "failure_mode", "reason"
    ).sort("ts", "source_id", "line_no", nulls_last=True)


def checkpoint_plan_by_system(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    cost_h: float,
    restart_h: float,
    min_failures: int = 100,
    window_end: datetime | None = None,
    resolution_s: float = 60.0,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Plan checkpoints for a job that spans each whole system.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    cost_h : float
        Assumed time to write one checkpoint, hours (> 0).
    restart_h : float
        Assumed time to restart after a failure, hours (>= 0).
    min_failures : int, default 100
        Systems with fewer node failures are left out.
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of data.
    resolution_s : float, default 60.0
        Node failures of one system within this many seconds are one
        interruption of the job (:func:`relkit.observation.system_incidents`).
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    pl.DataFrame
        One row per system, sorted by job MTBF: ``system``, ``n_nodes``,
        ``n_failures`` (node failures), ``n_interruptions`` (system incidents),
        ``node_mtbf_h``, ``mtbf_h`` (the job's MTBF), then the interval
        columns of :func:`relkit.checkpoint.plan_checkpoints`.

    Raises
    ------
    InvalidParameterError
        If the costs are out of range.

    Notes
    -----
    A job holding all :math:`N` nodes of a system is interrupted by any node's
    failure, and once by a failure of many nodes at one instant. Its MTBF is
    the system's node-hours over :math:`N` (the system's calendar time when
    every node shares it) divided by the number of system incidents
    :math:`r_s`: :math:`M_{job} = (T_{node}/N) / r_s`, which is what Young's
    and Daly's formulas need as :math:`M` (Daly 2006,
    doi:10.1016/j.future.2004.11.016). Counting each node record instead
    would charge one outage of the whole system as many interruptions.
    """
    obs = observe(
        events,
        assets,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    nodes = obs.exposure(["system"], unit="node")
    node_counts = obs.failures.group_by("system").agg(n_failures=pl.len())
    incidents = (
        system_incidents(obs.failures, by=["system"], resolution_s=resolution_s)
        .group_by("system")
        .agg(n_interruptions=pl.len())
    )
    job = (
        nodes.join(node_counts, on="system", how="inner")
        .join(incidents, on="system", how="inner")
        .filter(pl.col("n_failures") >= min_failures)
        .select(
            "system",
            n_nodes="n_units",
            n_failures=pl.col("n_failures").cast(pl.Int64),
            n_interruptions=pl.col("n_interruptions").cast(pl.Int64),
            node_mtbf_h=pl.col("exposure_h") / pl.col("n_failures"),
            mtbf_h=pl.col("exposure_h") / pl.col("n_units") / pl.col("n_interruptions"),
        )
        .sort("mtbf_h", "system")
    )
    plan = checkpoint.plan_checkpoints(
        job.select("system", "n_nodes", "node_mtbf_h", "mtbf_h"),
        cost_h=cost_h,
        restart_h=restart_h,
    )
    counts = job.select("system", "n_failures", "n_interruptions")
    first = ["system", "n_nodes", "n_failures", "n_interruptions"]
    return plan.join(counts, on="system", how="left").select(*first, pl.exclude(first))


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


def no_wall_time_note(events: pl.DataFrame) -> str | None:
    """Say how many events have no wall time, on which hosts, and the fix.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` (``ts``, UTC, null where the line had no
        resolvable time; ``host``).

    Returns
    -------
    str or None
        One sentence for stderr or a report, naming ``--boot-time`` and the
        ``HOST.btime`` record of :func:`relkit.ingest.kernel.read_kernel`; None
        when every event has a wall time.

    Examples
    --------
    >>> ev = pl.DataFrame(
    ...     {"ts": [None], "host": ["node7"]},
    ...     schema={"ts": pl.Datetime("us", "UTC"), "host": pl.String},
    ... )
    >>> print(no_wall_time_note(ev))  # doctest: +ELLIPSIS
    1 of 1 event(s) have no wall time (flag no_wall_time; host(s) ['node7']) ...
    """
    if "ts" not in events.columns or not (n := events["ts"].null_count()):
        return None
    hosts = (
        events.filter(pl.col("ts").is_null())["host"].drop_nulls().unique().sort()
    ).to_list()
    more = f" and {len(hosts) - 5} more" if len(hosts) > 5 else ""
    return (
        f"{n} of {events.height} event(s) have no wall time (flag no_wall_time; "
        f"host(s) {hosts[:5]}{more}) and are left out of incidents and counts. "
        "Their stamps are kernel clocks (seconds since boot) with no boot time in "
        "the log: ingest them again with the host's boot time, `relkit ingest "
        "--kind kernel --replace --boot-time BOOT LOG` (BOOT: ISO 8601 with the "
        "zone, e.g. `uptime -s` output plus the host's zone, or 'btime EPOCH' "
        "from /proc/stat), or put HOST.btime (grep btime /proc/stat > "
        "HOST.btime) beside each log"
    )


def incident_table(
    events: pl.DataFrame,
    *,
    window_min: float = 10.0,
    flap_debounce_min: float = 5.0,
    end_of_log: datetime | None = None,
    failure_modes: pl.DataFrame | None = None,
    count_unknown_xid: bool = False,
) -> pl.DataFrame:
    """Fold the failure-log events of a store into incidents.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table: kernel-log signals and normalised records
        alike (same host, device and mode within the window are one incident).
    window_min : float, default 10.0
        Largest gap between events of one incident, minutes.
    flap_debounce_min : float, default 5.0
        Link down/up transitions of one port within this many minutes are one
        incident.
    end_of_log : datetime, optional
        End of observation (aware): an incident still open then is
        right-censored there (e.g. :func:`log_end` of the store's sources). It
        is moved to the last event if earlier. Defaults to the last event.
    failure_modes : pl.DataFrame, optional
        The store's ``failure_modes`` table: category and counts-as-failure of
        modes outside the taxonomy.
    count_unknown_xid : bool, default False
        Count ``gpu/unknown_xid`` incidents (Xid codes outside NVIDIA's
        catalogue) as failures.

    Returns
    -------
    pl.DataFrame
        Columns as :func:`relkit.incidents.build_incidents`, starting with
        ``host, device, failure_mode, category, start_ts, end_ts, n_events,
        is_open, lower_bound_count``.

    Raises
    ------
    InsufficientDataError
        If there are events but none has a wall time (nothing can be placed).
    """
    from relkit.incidents import build_incidents
    from relkit.observation import no_wall_time_message

    raw = events
    if raw.height and raw["ts"].null_count() == raw.height:
        raise InsufficientDataError(no_wall_time_message(raw))
    last = raw.get_column("ts").max() if raw.height else None
    if end_of_log is not None and last is not None:
        end_of_log = max(end_of_log, last)  # type: ignore[type-var]
    incidents = build_incidents(
        raw,
        window_min=window_min,
        flap_debounce_min=flap_debounce_min,
        end_of_log=end_of_log,
        failure_modes=failure_modes,
        count_unknown_xid=count_unknown_xid,
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
