r"""The observation model: when a unit is at risk, and which failures count.

Every rate, MTBF and survival curve in relkit rests on the rule below; this
module is its one home (DESIGN.md §1a).

- A *unit* is a node (assets without ``device``) or a GPU (assets with
  ``device``). A unit may have several service windows (rows of the assets
  table); it counts once in ``n_units`` and its exposure is the sum of its
  windows.
- A unit is at risk over each of its windows, from
  ``max(in_service_ts, observed_from_ts, window_start)`` to
  ``min(out_of_service_ts, window_end, end of data)``.
- An explicit ``out_of_service_ts`` of an inventory is honoured exactly, even
  after the end of data (and then said in :attr:`Observation.notes`); a file
  that is both records and inventory (LANL) ends every window at its last
  record. A declared ``window_end`` clips every window and extends open-ended
  ones to it (the user says they watched until then).
- Without a declared end, an open-ended unit runs to the *end of data*: the
  collection time of the sources that speak about its fleet (an ``--as-of``
  given at ingest, else the last line of the logs or the last record of the
  event and job files that name the fleet's hosts), never its last failure.
- A unit whose install date is unknown enters at ``observed_from_ts``, else at
  its first record, else at the first record of its fleet's sources: it is
  left-truncated and its age is unknown (flag ``in_service_unknown``).
- Without assets, each host seen in the logs is at risk from the first to the
  last line of its logs (``log_spans``: its earliest to its latest time,
  whatever the order of the lines), hosts without a failure signal included.
  A host whose logs have one timed instant and a failure was observed when it
  failed: the failure counts and the host is a unit with 0 h at risk
  (:func:`instant_units`; answers say so in ``warning``).
- Per node (``unit="node"``) the failures of one host within the incident
  window of each other are one node failure (:func:`node_failures`); per GPU
  each GPU's failure counts.
- A failure in no window of its unit (before service, before tracking, in a
  gap, after removal, or on a unit not in the inventory) is excluded and
  reported with its reason, never counted and never a reason to refuse the
  rest of the data.

Worked example (the reproduction of issue 9 §1): 16 nodes in service from
2025-03-01T00:00Z to 2025-03-31T00:00Z and 3 failures: exposure is
:math:`16 \times 720 = 11{,}520` node-hours, MTBF 3,840 h, whatever the time of
the last failure.

All functions here are pure: frames in, frames out. The composition that reads
the store's tables and calls them is :mod:`relkit.answers`.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Literal

import polars as pl

from relkit.errors import InsufficientDataError, InvalidParameterError
from relkit.observation._base import (
    ASSUMED_BASIS,
    FAILURE_ATTRIBUTES,
    MIN_EXPOSURE_H,
    UNASSIGNED,
    as_utc,
    fmt_ts,
)
from relkit.observation._clock import ServiceClock, to_service_clock
from relkit.observation._exposure import (
    build_exposure,
    exposure_by,
    instant_units,
    observation_end,
)
from relkit.observation._failures import (
    LOG_WINDOW_MIN,
    PlacedFailures,
    failure_records,
    no_wall_time_message,
    node_failures,
    place_failures,
    system_incidents,
    window_attributes,
    with_cause,
)
from relkit.observation._windows import (
    assumed_assets,
    attr_keys,
    check_overlaps,
    collection_times,
    fill_system,
    host_spans,
    observed_until_by_source,
    service_windows,
    split_by,
)
from relkit.schema import UTC as UTC_DTYPE

__all__ = [
    "ASSUMED_BASIS",
    "FAILURE_ATTRIBUTES",
    "LOG_WINDOW_MIN",
    "MIN_EXPOSURE_H",
    "UNASSIGNED",
    "Observation",
    "PlacedFailures",
    "ServiceClock",
    "build_exposure",
    "collection_times",
    "exposure_by",
    "failure_records",
    "instant_units",
    "no_wall_time_message",
    "node_failures",
    "observation_end",
    "observe",
    "place_failures",
    "restrict_to_mode",
    "service_windows",
    "split_by",
    "system_incidents",
    "to_service_clock",
]


def _notes(windows: pl.DataFrame) -> list[str]:
    """Say which declared removals lie after the end of the failure data."""
    late = windows.filter(
        pl.col("exit_basis") == "out_of_service_ts, after the end of data"
    )
    if late.height == 0:
        return []
    first = late.sort("out_of_service_ts").row(-1, named=True)
    return [
        f"{late['host'].n_unique()} unit(s) are counted at risk to a declared "
        f"out_of_service_ts after the last record of the failure data, e.g. "
        f"{first['host']} to {fmt_ts(first['out_of_service_ts'])}: if that removal "
        "is planned, or failures were not recorded until then, declare where "
        "observation ends (--window-end; library: window_end=)"
    ]


@dataclass(frozen=True)
class Observation:
    """The observation model applied to one store: what was at risk, and when.

    Parameters
    ----------
    failures : pl.DataFrame
        One row per failure inside a window of its unit, with ``system``
        filled from the assets (``"unassigned"`` when none) and
        ``root_cause``, ``sub_cause``, ``repair_h``.
    excluded : pl.DataFrame
        Failures in no window of their unit, with ``reason``.
    windows : pl.DataFrame
        :func:`service_windows` of every unit (assets-shaped; the dates are
        the at-risk window, ``in_service_ts`` the age origin).
    exposure_basis : str
        Where the time at risk comes from, in words.
    observed_until : datetime or None
        The end of data of open-ended units (latest over the fleets), or the
        declared ``window_end``.
    n_no_wall_time : int
        Events that could not be placed in time (no wall time).
    prior_failures : pl.DataFrame
        Failures of units in service before their observation began (before
        tracking, or before ``window_start``): not counted, but the last of
        them is the origin of the unit's first observed gap.
    notes : tuple of str
        What a reader should know about the time at risk, in words (e.g.
        declared removals after the last record of the failure data).
    attributes : tuple of str
        Asset attributes (keys of ``attrs``) available for grouping.
    window_min : float or None
        The incident window given to :func:`observe` (None: log signals
        folded with :data:`LOG_WINDOW_MIN`, records not folded); node
        failures (:func:`node_failures`) fold with the same window.
    """

    failures: pl.DataFrame
    excluded: pl.DataFrame
    windows: pl.DataFrame
    exposure_basis: str
    observed_until: datetime | None
    n_no_wall_time: int
    attributes: tuple[str, ...]
    prior_failures: pl.DataFrame
    notes: tuple[str, ...] = ()
    window_min: float | None = None

    def _repr_html_(self) -> str:
        """Return a small HTML summary for Jupyter (counts, not the frames)."""
        from relkit.display import html_table

        exposure_h = (
            float(self.windows["exposure_h"].sum())
            if "exposure_h" in self.windows.columns
            else None
        )
        hosts = "host" if "host" in self.windows.columns else None
        return html_table(
            "Observation (what was at risk, and when)",
            {
                "failures kept": self.failures.height,
                "failures excluded": self.excluded.height,
                "failures before observation": self.prior_failures.height,
                "events without wall time": self.n_no_wall_time,
                "units": self.windows[hosts].n_unique() if hosts else None,
                "service windows": self.windows.height,
                "exposure_h": exposure_h,
                "exposure basis": self.exposure_basis,
                "observed until": (
                    self.observed_until.isoformat() if self.observed_until else None
                ),
                "attributes": ", ".join(self.attributes) or None,
                "notes": "; ".join(self.notes) or None,
            },
        )

    def exposure(
        self,
        by: Sequence[str] = (),
        *,
        unit: Literal["node", "gpu"] = "node",
        gpus_per_node: int = 8,
        with_failed_instants: bool = False,
    ) -> pl.DataFrame:
        """Time at risk per group (:func:`exposure_by`).

        ``with_failed_instants``: units that failed in a window of zero length
        (:func:`instant_units`) count in ``n_units`` with 0 h.
        """
        return exposure_by(
            self.windows,
            by=by,
            unit=unit,
            gpus_per_node=gpus_per_node,
            failures=self.failures if with_failed_instants else None,
        )


def restrict_to_mode(obs: Observation, failure_mode: str | None) -> Observation:
    """Keep the failures of one failure mode, or of every mode of one root cause.

    The one rule every answer selects a mode by: ``failure_mode`` is a mode as
    the events name it (``gpu/hbm_uncorrectable``, LANL's ``hardware/cpu``), or
    a root cause, the part before the ``/`` (``gpu``, ``hardware``), which keeps
    all of its modes. The units, their windows and exposure are unchanged: a
    unit with no failure of the mode is still at risk of it.

    Parameters
    ----------
    obs : Observation
        Output of :func:`observe`.
    failure_mode : str or None
        The mode or root cause; None keeps every failure.

    Returns
    -------
    Observation
        ``obs`` with ``failures``, ``excluded`` and ``prior_failures`` restricted.

    Raises
    ------
    InsufficientDataError
        If no counted failure has that mode or root cause; the message names
        the modes with failures, and how many of this mode's failures fall in
        no service window of their unit.

    Examples
    --------
    >>> import polars as pl
    >>> obs = Observation(
    ...     failures=pl.DataFrame(
    ...         {"failure_mode": ["gpu/hang", "gpu/xid", "net/link"]}
    ...     ),
    ...     excluded=pl.DataFrame(
    ...         {"failure_mode": []}, schema={"failure_mode": pl.String}
    ...     ),
    ...     windows=pl.DataFrame(),
    ...     exposure_basis="assets",
    ...     observed_until=None,
    ...     n_no_wall_time=0,
    ...     attributes=(),
    ...     prior_failures=pl.DataFrame(
    ...         {"failure_mode": []}, schema={"failure_mode": pl.String}
    ...     ),
    ... )
    >>> restrict_to_mode(obs, "gpu").failures["failure_mode"].to_list()
    ['gpu/hang', 'gpu/xid']
    """
    if failure_mode is None:
        return obs
    present = sorted(obs.failures["failure_mode"].drop_nulls().unique().to_list())
    if failure_mode in present:
        keep = pl.col("failure_mode") == failure_mode
    elif "/" not in failure_mode and any(
        m.startswith(failure_mode + "/") for m in present
    ):
        keep = pl.col("failure_mode").str.starts_with(failure_mode + "/")
    else:
        excluded = obs.excluded
        n_excl = (
            int((excluded["failure_mode"] == failure_mode).sum())
            if "failure_mode" in excluded.columns
            else 0
        )
        why = (
            f" Its {n_excl} failure(s) fall in no service window of their unit "
            "(`relkit rejects --db DB` lists them)."
            if n_excl
            else ""
        )
        near = [m for m in present if failure_mode.lower() in m.lower()]
        hint = f" Modes like it: {near}." if near else ""
        msg = (
            f"no counted failure of mode {failure_mode!r}.{why} Give a mode "
            f"(exactly as the events name it) or a root cause (the part before "
            f"'/'); the modes with failures are {present}.{hint}"
        )
        raise InsufficientDataError(msg)

    def cut(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.filter(keep) if "failure_mode" in frame.columns else frame

    return replace(
        obs,
        failures=obs.failures.filter(keep),
        excluded=cut(obs.excluded),
        prior_failures=cut(obs.prior_failures),
    )


def observe(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    window_min: float | None = None,
    gpus_per_node: int = 8,
    count_unknown_xid: bool = False,
) -> Observation:
    """Apply the observation model to a store's tables.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table.
    assets : pl.DataFrame
        The store's ``assets`` table (may be empty: then each host seen in the
        logs is at risk from the first to the last line of its logs).
    sources : pl.DataFrame, optional
        The store's ``sources`` table: collection times (``as_of_ts``,
        ``log_start_ts``/``log_end_ts``, ``first_record_ts``/``last_record_ts``).
    log_spans : pl.DataFrame, optional
        The store's ``log_spans`` table (``source_id, host, first_ts,
        last_ts``): hosts of multi-host logs, failure signal or not.
    failure_modes : pl.DataFrame, optional
        The store's ``failure_modes`` table (declared non-failure modes).
    window_start, window_end : datetime, optional
        The declared window (UTC). A declared end clips every window and
        extends open-ended units to it.
    window_min : float, optional
        Incident gap window, minutes: log signals are folded with 10 min when
        not given; normalised records only when given (:func:`failure_records`).
    gpus_per_node : int, default 8
        GPUs per host assumed when there are no assets.
    count_unknown_xid : bool, default False
        Count Xid codes outside NVIDIA's catalogue (``gpu/unknown_xid``) as
        failures (:func:`failure_records`).

    Returns
    -------
    Observation

    Raises
    ------
    InsufficientDataError
        If events exist but none has a wall time; if there are neither assets
        nor timed events; if an open-ended unit has no end of data (no
        source says when collection ended) and no ``window_end``; if two
        assets files list one unit at once, or an event names another system
        than its host's.
    InvalidParameterError
        If ``window_start`` is not before ``window_end``.
    """
    start = as_utc(window_start, "window_start")
    end = as_utc(window_end, "window_end")
    if start is not None and end is not None and start >= end:
        msg = f"window_start {start} is not before window_end {end}; swap them."
        raise InvalidParameterError(msg)
    records = events.filter(pl.col("ts").is_not_null())
    n_no_wall = events.height - records.height
    if events.height and records.height == 0:
        raise InsufficientDataError(no_wall_time_message(events))
    collected = collection_times(sources, events)
    spans = host_spans(events, log_spans, sources)
    failures = failure_records(
        events,
        window_min=window_min,
        failure_modes=failure_modes,
        sources=sources,
        count_unknown_xid=count_unknown_xid,
    )
    assumed = assets.height == 0
    if assumed:
        assets = assumed_assets(spans, records, gpus_per_node)
        if assets.height == 0:
            msg = (
                f"no assets in the store and no timed log lines ({events.height} "
                "events): MTBF needs the units at risk. Ingest them, e.g. "
                "`relkit ingest --kind assets FILE` (columns host, in_service_ts, "
                "...) or `relkit ingest --kind lanl FILE`, or logs with wall times."
            )
            raise InsufficientDataError(msg)
    else:
        check_overlaps(assets)
    # a unit whose assets row names no system takes the one its events name
    named = (
        failures.filter(pl.col("host").is_not_null() & pl.col("system").is_not_null())
        .group_by("host")
        .agg(_event_system=pl.col("system").sort().first())
    )
    assets = (
        assets.join(named, on="host", how="left")
        .with_columns(pl.coalesce("system", "_event_system").alias("system"))
        .drop("_event_system")
    )
    failures = fill_system(failures, assets).with_columns(
        pl.col("system").fill_null(UNASSIGNED)
    )
    assets = assets.with_columns(pl.col("system").fill_null(UNASSIGNED))
    attributes = tuple(attr_keys(assets))
    if assumed:
        until = pl.DataFrame(
            {
                "source_id": [None],
                "observed_until_ts": [None],
                "basis": [ASSUMED_BASIS],
                "cap_declared": [True],
            },
            schema={
                "source_id": pl.Int32,
                "observed_until_ts": UTC_DTYPE,
                "basis": pl.String,
                "cap_declared": pl.Boolean,
            },
        )
    else:
        kinds = (
            sources.select(pl.col("source_id").cast(pl.Int32), "kind")
            if sources is not None and "kind" in sources.columns
            else pl.DataFrame(schema={"source_id": pl.Int32, "kind": pl.String})
        )
        until = observed_until_by_source(assets, collected, spans, kinds)
    open_units = assets.filter(pl.col("out_of_service_ts").is_null())
    if end is None and open_units.height:
        missing = open_units.join(
            until.filter(pl.col("observed_until_ts").is_not_null()).cast(
                {"source_id": assets.schema["source_id"]}
            ),
            on="source_id",
            how="anti",
        )
        if missing.height:
            hosts = missing["host"].unique().sort().head(5).to_list()
            msg = (
                f"{missing['host'].n_unique()} unit(s) are still in service "
                f"(out_of_service_ts empty, e.g. {hosts}) but no source says when "
                "data collection ended, so their time at risk has no end. Declare "
                "when it ended: --window-end YYYY-MM-DDTHH:MMZ (library: "
                "window_end=), or ingest the inventory with --as-of "
                "YYYY-MM-DDTHH:MMZ."
            )
            raise InsufficientDataError(msg)
    firsts = pl.concat(
        [
            spans.group_by("host").agg(first_ts=pl.col("first_ts").min()),
            pl.DataFrame(
                {"host": [None], "first_ts": [collected["first_ts"].min()]},
                schema={"host": pl.String, "first_ts": UTC_DTYPE},
            ),
        ]
    )
    windows = service_windows(
        assets,
        observed_until=until,
        first_records=firsts,
        window_start=start,
        window_end=end,
        attributes=attributes,
    )
    if assumed:
        windows = windows.with_columns(exit_basis=pl.lit(ASSUMED_BASIS))
    kept, excluded = place_failures(
        failures, windows, window_start=start, window_end=end
    )
    before_start = (
        failures.filter(pl.col("ts") < start) if start is not None else failures.head(0)
    )
    prior = pl.concat(
        [
            before_start,
            excluded.filter(pl.col("reason").str.starts_with("before tracking")).drop(
                "reason"
            ),
        ],
        how="diagonal_relaxed",
    ).join(windows.select("host").unique(), on="host", how="semi")
    kept = with_cause(kept)
    if attributes:
        kept = window_attributes(kept, windows, attributes)
    if end is not None and not assumed and open_units.height == 0:
        observed_until = end
        basis = "assets: every unit's declared service window, within --window-end"
    elif end is not None:
        observed_until, basis = end, "assets: open-ended units to --window-end"
    elif assumed:
        observed_until, basis = windows["out_of_service_ts"].max(), ASSUMED_BASIS
    else:
        observed_until = until["observed_until_ts"].max()
        basis = "assets: open-ended units to the " + (
            until["basis"].sort().to_list()[-1].removeprefix("collection time: ")
            if until.height
            else "end of data"
        )
        if open_units.height == 0:
            basis = "assets: every unit's declared service window"
            observed_until = windows["out_of_service_ts"].max()
    return Observation(
        failures=kept,
        excluded=excluded,
        windows=windows,
        exposure_basis=basis,
        observed_until=observed_until,
        n_no_wall_time=n_no_wall,
        attributes=attributes,
        prior_failures=with_cause(prior),
        notes=tuple(_notes(windows)),
        window_min=window_min,
    )
