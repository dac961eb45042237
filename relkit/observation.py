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
  last line of its logs (``log_spans``), hosts without a failure signal
  included.
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
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import polars as pl

from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.schema import POLARS_SCHEMAS, require_columns
from relkit.schema import UTC as UTC_DTYPE

__all__ = [
    "ASSUMED_BASIS",
    "FAILURE_ATTRIBUTES",
    "MIN_EXPOSURE_H",
    "UNASSIGNED",
    "Observation",
    "build_exposure",
    "collection_times",
    "exposure_by",
    "failure_records",
    "no_wall_time_message",
    "observation_end",
    "observe",
    "place_failures",
    "service_windows",
    "split_by",
    "system_incidents",
    "to_service_clock",
]

_US_PER_H = 3_600_000_000.0
_TS_COLUMNS = ("in_service_ts", "out_of_service_ts", "observed_from_ts")

#: Failure attributes derived from ``failure_mode`` or kept on events.
FAILURE_ATTRIBUTES = ("failure_mode", "root_cause", "sub_cause", "code", "severity")
#: The ``system`` of units whose assets row names none (one group, never dropped).
UNASSIGNED = "unassigned"
#: Groups with less time at risk than this (unit-hours, one unit-day) get a
#: warning: a rate over less than a day of observation says little.
MIN_EXPOSURE_H = 24.0
#: ``exposure_basis`` of results that rest on the logs alone (no assets).
ASSUMED_BASIS = "logs: each host from the first to the last line of its logs"

_ASSET_COLUMNS = (
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
def _utc(value: datetime | None, name: str) -> datetime | None:
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


def _epoch_us(value: datetime, name: str) -> int:
    value = _utc(value, name)  # type: ignore[assignment]
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


def _hours(later: pl.Expr, earlier: pl.Expr) -> pl.Expr:
    return (later - earlier).dt.total_microseconds().cast(pl.Float64) / _US_PER_H


def _lit_ts(value: datetime | None) -> pl.Expr:
    return pl.lit(value, dtype=UTC_DTYPE)


def _fmt(ts: datetime | None) -> str:
    return "open" if ts is None else f"{ts:%Y-%m-%dT%H:%MZ}"


# -- the legacy one-window exposure (kept public) --------------------------------
def observation_end(events: pl.DataFrame) -> datetime:
    """Return the latest failure or repair timestamp of an events frame.

    This is *not* the end of observation of a fleet (see :func:`observe`,
    which uses the sources' collection time); it is kept for callers that
    only have failure records and say so.

    Parameters
    ----------
    events : pl.DataFrame
        UTC datetime columns ``ts`` and, optionally, ``repaired_ts`` (nulls
        ignored).

    Returns
    -------
    datetime
        ``max(ts, repaired_ts)`` over all rows, timezone-aware UTC.

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
        Service windows, one row each: UTC datetime columns ``in_service_ts``,
        ``out_of_service_ts`` (null = still in service), ``observed_from_ts``
        (null = same as ``in_service_ts``), integer ``gpus`` (null = unknown)
        and every ``by`` column. ``host`` (and ``device`` when present) name
        the unit; a unit with several rows counts once in ``n_units``.
    by : str or sequence of str, default ()
        Unit attributes to group by, e.g. ``"system"``.
    window_start : datetime, optional
        Start of the observation window (UTC; naive datetimes are read as UTC).
    window_end : datetime
        End of the observation window (UTC), required: open-ended windows run
        to it.

    Returns
    -------
    pl.DataFrame
        One row per group with at least one unit at risk, sorted by ``by``
        (nulls last): the ``by`` columns, ``n_units`` (Int64: distinct units
        with positive time at risk), ``exposure_h`` (unit-hours) and
        ``exposure_gpu_h`` (GPU-hours; null when any unit of the group has
        null ``gpus``).

    Raises
    ------
    InvalidParameterError
        If ``window_end`` is missing, a window bound is not a datetime, or
        ``window_start`` is after ``window_end``.
    SchemaError
        If a required column is missing or not a datetime, or a row has
        neither ``in_service_ts`` nor ``observed_from_ts``.

    Notes
    -----
    Per window, with :math:`s` = in-service time, :math:`o` = tracking start
    (each filling the other when null), :math:`d` = out-of-service time
    (null = :math:`W_e`) and window :math:`[W_s, W_e]`:

    .. math::

        t = \max\bigl(0,\ \min(d, W_e) - \max(s, o, W_s)\bigr),\qquad
        \text{exposure\_h} = \sum t,\quad
        \text{exposure\_gpu\_h} = \sum t \cdot \text{gpus}

    Examples
    --------
    Node a runs the whole 10-day window (240 h); node b starts tracking on day
    2 and retires on day 6 (96 h); node c retired before the window (0 h).

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
            "build_exposure: window_end is required (open-ended windows run to "
            "it); relkit.observation.observe() finds the end of data."
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
        pl.coalesce(ins, obs), pl.coalesce(obs, ins), pl.lit(start_us, dtype=pl.Int64)
    )
    leave = pl.min_horizontal(pl.coalesce(out, pl.lit(end_us)), pl.lit(end_us))
    keys = [c for c in ("host", "device") if c in assets.columns]
    unit = (pl.struct(keys) if keys else pl.int_range(pl.len(), dtype=pl.Int64)).alias(
        "_unit"
    )
    windows = assets.select(
        *by_cols,
        unit,
        pl.coalesce(ins, obs).is_null().alias("_no_start"),
        pl.col("gpus").cast(pl.Float64).alias("_gpus"),
        entry.alias("_entry"),
        leave.alias("_leave"),
    )
    if n_bad := int(windows["_no_start"].sum()):
        hosts = (
            assets.filter(windows["_no_start"])
            .select(pl.col("host") if "host" in assets.columns else pl.first())
            .to_series()
            .head(5)
            .to_list()
        )
        msg = (
            f"build_exposure: {n_bad} unit(s) have neither in_service_ts nor "
            f"observed_from_ts (first: {hosts}); set observed_from_ts to when "
            "tracking began, or "
            "use relkit.observation.observe(), which enters them at their first "
            "record."
        )
        raise SchemaError(msg)
    windows = windows.with_columns(
        exposure_h=(pl.col("_leave") - pl.col("_entry")).cast(pl.Float64) / _US_PER_H
    ).filter(pl.col("exposure_h") > 0)
    return _sum_exposure(windows, by_cols)


def _sum_exposure(windows: pl.DataFrame, by_cols: list[str]) -> pl.DataFrame:
    gpu_h = pl.col("exposure_h") * pl.col("_gpus")
    aggs = [
        pl.col("_unit").n_unique().cast(pl.Int64).alias("n_units"),
        pl.col("exposure_h").sum(),
        pl.when(pl.col("_gpus").null_count() > 0)
        .then(pl.lit(None, dtype=pl.Float64))
        .otherwise(gpu_h.sum())
        .alias("exposure_gpu_h"),
    ]
    if not by_cols:
        if windows.height == 0:
            return pl.DataFrame(
                schema={
                    "n_units": pl.Int64,
                    "exposure_h": pl.Float64,
                    "exposure_gpu_h": pl.Float64,
                }
            )
        return windows.select(aggs)
    return windows.group_by(by_cols).agg(aggs).sort(by_cols, nulls_last=True)


# -- what one failure is ----------------------------------------------------------
#: Incident gap window of raw log signals when none is given, minutes.
LOG_WINDOW_MIN = 10.0


def _fold_records(records: pl.DataFrame, window_min: float) -> pl.DataFrame:
    """Fold records of one host, device and mode within ``window_min``.

    A record within the window of the previous one joins it; the first
    record stands for the run, and its repair runs to the latest repair.
    """
    if records.height == 0:
        return records
    keys = ["host", "device", "failure_mode"]
    step = int(window_min * 60 * 1_000_000)
    timed = records.filter(pl.col("ts").is_not_null()).sort([*keys, "ts"])
    gap = pl.col("ts").dt.epoch("us").diff().over(keys)
    run = (gap.is_null() | (gap > step)).cum_sum().over(keys)
    agg = [pl.all().exclude(*keys, "_run").first()]
    if "repaired_ts" in records.columns:
        agg.append(pl.col("repaired_ts").max().alias("_repaired"))
    folded = timed.with_columns(_run=run).group_by([*keys, "_run"]).agg(*agg)
    if "repaired_ts" in records.columns:
        folded = folded.with_columns(
            repaired_ts=pl.col("_repaired"),
            repair_s=pl.when(pl.col("_repaired").is_not_null())
            .then((pl.col("_repaired") - pl.col("ts")).dt.total_microseconds() / 1e6)
            .otherwise(pl.col("repair_s")),
        ).drop("_repaired")
    untimed = records.filter(pl.col("ts").is_null())
    return pl.concat([folded.drop("_run").select(records.columns), untimed]).sort(
        "ts", "source_id", "line_no", nulls_last=True
    )


def failure_records(
    events: pl.DataFrame,
    *,
    window_min: float | None = None,
    flap_debounce_min: float = 5.0,
    failure_modes: pl.DataFrame | None = None,
    sources: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Fold raw log signals into failure incidents; keep other records as they are.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table.
    window_min : float, optional
        Largest gap between signals of one incident, minutes
        (:func:`relkit.incidents.build_incidents`). Raw log signals are always
        folded (10 min when not given). Normalised records (LANL, events
        tables) are one failure each as their owner curated them, and are
        folded the same way (same host, device and mode within the window)
        only when a window is given.
    flap_debounce_min : float, default 5.0
        Link transitions of one port within this many minutes are one incident.
    failure_modes : pl.DataFrame, optional
        The store's ``failure_modes`` table (``failure_mode``,
        ``counts_as_failure``): rows of a mode that their own file declared
        not to count as a failure are left out (another file's rows of the
        same mode, which declared nothing, still count).
    sources : pl.DataFrame, optional
        The store's ``sources`` table: which file declared which modes
        (``declared_modes`` in its options) and which files are logs (kinds
        ``kernel``, ``nvsmi``). Without it, every event of a taxonomy mode is
        taken as a log signal.

    Returns
    -------
    pl.DataFrame
        One row per failure. Events whose ``failure_mode`` is in
        :data:`relkit.taxonomy.FAILURE_MODES` (kernel logs, nvidia-smi)
        become one row per incident that counts as a failure
        (:func:`relkit.incidents.incidents_as_failures`); lines without wall
        time cannot be placed and are left out (the callers say how many).
        Other events (LANL records, normalised failure tables) are one row per
        failure, as their owner curated them, unless ``window_min`` is given.
    """
    from relkit.incidents import INCIDENT_FLAG, build_incidents, incidents_as_failures
    from relkit.taxonomy import FAILURE_MODES

    if "flags" not in events.columns:
        events = events.with_columns(flags=pl.lit(None, dtype=pl.String))
    has_sources = sources is not None and sources.height > 0
    if failure_modes is not None and failure_modes.height:
        not_counted = failure_modes.filter(
            ~pl.col("failure_mode").is_in(FAILURE_MODES["failure_mode"].implode())
            & (pl.col("counts_as_failure") == False)  # noqa: E712
        ).select("failure_mode")
        if not_counted.height and has_sources:
            declared = (
                sources.select(  # type: ignore[union-attr]
                    pl.col("source_id").cast(events.schema["source_id"]),
                    failure_mode=pl.col("options")
                    .str.json_path_match("$.declared_modes")
                    .str.json_decode(pl.List(pl.String)),
                )
                .explode("failure_mode")
                .join(not_counted, on="failure_mode", how="semi")
            )
            events = events.join(declared, on=["source_id", "failure_mode"], how="anti")
        elif not_counted.height:
            events = events.join(not_counted, on="failure_mode", how="anti")
    folded_before = pl.col("flags").fill_null("").str.contains(INCIDENT_FLAG)
    known = (
        pl.col("failure_mode").is_in(FAILURE_MODES["failure_mode"].implode())
        & ~folded_before
    )
    if has_sources and "kind" in sources.columns:  # type: ignore[union-attr]
        # a normalised events file may name taxonomy modes: its rows are
        # records (one failure each), not log lines to fold
        logs = sources.filter(  # type: ignore[union-attr]
            pl.col("kind").is_in(["kernel", "nvsmi"])
        )["source_id"].cast(events.schema["source_id"])
        known = known & pl.col("source_id").is_in(logs.implode())
    raw = events.filter(known)
    records = events.filter(~known)
    if window_min is not None:
        records = _fold_records(records, window_min)
    if raw.height == 0:
        return records
    incidents = build_incidents(
        raw,
        window_min=LOG_WINDOW_MIN if window_min is None else window_min,
        flap_debounce_min=flap_debounce_min,
    )
    folded = incidents_as_failures(incidents)
    return pl.concat(
        [records, folded.select(c for c in folded.columns if c in events.columns)],
        how="diagonal_relaxed",
    )


def system_incidents(
    failures: pl.DataFrame,
    *,
    by: Sequence[str] = ("system",),
    resolution_s: float = 60.0,
) -> pl.DataFrame:
    """Count simultaneous failures of many units as one system incident.

    Parameters
    ----------
    failures : pl.DataFrame
        One row per unit failure: ``ts`` (UTC) and every ``by`` column.
    by : sequence of str, default ("system",)
        The system a job spans; failures of different groups never merge.
    resolution_s : float, default 60.0
        Failures of one group whose start times lie within this many seconds
        of the previous one are one incident. 60 s is the resolution of the
        LANL records (minutes); with exact clocks, simultaneous outages of a
        whole system still start within seconds of each other.

    Returns
    -------
    pl.DataFrame
        One row per system incident: the ``by`` columns, ``ts`` (the first
        failure), ``n_units`` (failures folded), sorted by ``by`` then ``ts``.

    Notes
    -----
    Per-unit rates count each unit's failure (each unit was at risk and
    failed). A job spanning the system is interrupted once by a system-wide
    outage, so the job MTBF behind a checkpoint plan (Daly 2006,
    doi:10.1016/j.future.2004.11.016) and the system's time between failures
    count incidents. LANL system 2 has 1,707 zero-length gaps out of 7,105
    from whole-system outages (issue 9 §4).

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> f = pl.DataFrame(
    ...     {
    ...         "system": ["s"] * 4,
    ...         "ts": [
    ...             datetime(2024, 1, 1, 0, 0, tzinfo=UTC),
    ...             datetime(2024, 1, 1, 0, 0, tzinfo=UTC),
    ...             datetime(2024, 1, 1, 0, 0, 30, tzinfo=UTC),
    ...             datetime(2024, 1, 1, 5, 0, tzinfo=UTC),
    ...         ],
    ...     }
    ... )
    >>> system_incidents(f)["n_units"].to_list()
    [3, 1]
    """
    if not 0 <= resolution_s <= 86_400:
        msg = f"resolution_s {resolution_s} must be between 0 and 86400 seconds."
        raise InvalidParameterError(msg)
    by = list(by)
    require_columns(failures, ["ts", *by], where="system_incidents")
    step = int(resolution_s * 1_000_000)
    timed = failures.filter(pl.col("ts").is_not_null()).sort([*by, "ts"])
    gap = pl.col("ts").dt.epoch("us").diff().over(by) if by else None
    if gap is None:
        gap = pl.col("ts").dt.epoch("us").diff()
    new = gap.is_null() | (gap > step)
    run = new.cum_sum().over(by) if by else new.cum_sum()
    return (
        timed.with_columns(_run=run)
        .group_by([*by, "_run"])
        .agg(ts=pl.col("ts").min(), n_units=pl.len().cast(pl.Int64))
        .drop("_run")
        .sort([*by, "ts"])
    )


# -- when data was collected ------------------------------------------------------
def collection_times(
    sources: pl.DataFrame | None, events: pl.DataFrame
) -> pl.DataFrame:
    """When each source's collection began and ended.

    Parameters
    ----------
    sources : pl.DataFrame or None
        The store's ``sources`` table; ``options`` (JSON) may hold ``as_of_ts``
        (given at ingest), ``log_start_ts``/``log_end_ts`` (first and last line
        of a log) and ``first_record_ts``/``last_record_ts``.
    events : pl.DataFrame
        The store's ``events`` table: a source whose options say nothing spans
        its records (``ts``, ``repaired_ts``).

    Returns
    -------
    pl.DataFrame
        ``source_id, first_ts, last_ts, basis`` per source with any time:
        ``last_ts`` is ``as_of_ts`` when given (basis ``"as-of"``), else the
        last line or record (basis ``"last record"``).
    """
    schema = {
        "source_id": pl.Int32,
        "first_ts": UTC_DTYPE,
        "last_ts": UTC_DTYPE,
        "basis": pl.String,
    }
    spans = (
        events.filter(pl.col("ts").is_not_null())
        .group_by("source_id")
        .agg(
            _ev_first=pl.col("ts").min(),
            _ev_last=pl.max_horizontal(
                pl.col("ts").max(),
                pl.col("repaired_ts").max()
                if "repaired_ts" in events.columns
                else pl.col("ts").max(),
            ),
        )
        .cast({"source_id": pl.Int32})
    )
    if sources is None or sources.is_empty() or "options" not in sources.columns:
        return spans.select(
            "source_id",
            first_ts="_ev_first",
            last_ts="_ev_last",
            basis=pl.lit("last record"),
        ).cast(schema)  # type: ignore[arg-type]

    def opt(key: str) -> pl.Expr:
        return (
            pl.col("options")
            .str.json_path_match(f"$.{key}")
            .str.to_datetime(time_zone="UTC", time_unit="us", strict=False)
        )

    # an inventory's dates say when units served, not when data was collected
    # (see _observed_until); only its --as-of is a collection time. A LANL
    # file is both: its failure records (events) say when collection ended.
    records = (
        ~pl.col("kind").is_in(["assets", "lanl"])
        if "kind" in sources.columns
        else pl.lit(True)
    )
    opts = sources.select(
        pl.col("source_id").cast(pl.Int32),
        _as_of=opt("as_of_ts"),
        _first=pl.when(records).then(
            pl.coalesce(opt("log_start_ts"), opt("first_record_ts"))
        ),
        _last=pl.when(records).then(
            pl.coalesce(opt("log_end_ts"), opt("last_record_ts"))
        ),
    )
    both = opts.join(spans, on="source_id", how="full", coalesce=True)
    return (
        both.select(
            "source_id",
            first_ts=pl.min_horizontal("_first", "_ev_first"),
            last_ts=pl.coalesce("_as_of", pl.max_horizontal("_last", "_ev_last")),
            basis=pl.when(pl.col("_as_of").is_not_null())
            .then(pl.lit("as-of"))
            .otherwise(pl.lit("last record")),
        )
        .filter(pl.col("last_ts").is_not_null() | pl.col("first_ts").is_not_null())
        .cast(schema)  # type: ignore[arg-type]
        .sort("source_id")
    )


def _host_spans(
    events: pl.DataFrame, log_spans: pl.DataFrame | None, sources: pl.DataFrame | None
) -> pl.DataFrame:
    """``host, source_id, first_ts, last_ts``: what each source says of each host."""
    schema = {
        "host": pl.String,
        "source_id": pl.Int32,
        "first_ts": UTC_DTYPE,
        "last_ts": UTC_DTYPE,
    }
    parts = [
        events.filter(pl.col("ts").is_not_null() & pl.col("host").is_not_null())
        .group_by("host", "source_id")
        .agg(first_ts=pl.col("ts").min(), last_ts=pl.col("ts").max())
        .cast(schema)  # type: ignore[arg-type]
    ]
    if log_spans is not None and log_spans.height:
        parts.append(
            log_spans.select("host", "source_id", "first_ts", "last_ts").cast(schema)  # type: ignore[arg-type]
        )
    if sources is not None and sources.height and "options" in sources.columns:
        # a per-host log (--host, --host-from-filename) spans its host wholly
        one = sources.select(
            host=pl.col("options").str.json_path_match("$.host"),
            source_id=pl.col("source_id"),
            first_ts=pl.col("options")
            .str.json_path_match("$.log_start_ts")
            .str.to_datetime(time_zone="UTC", time_unit="us", strict=False),
            last_ts=pl.col("options")
            .str.json_path_match("$.log_end_ts")
            .str.to_datetime(time_zone="UTC", time_unit="us", strict=False),
        ).filter(pl.col("host").is_not_null())
        parts.append(one.cast(schema))  # type: ignore[arg-type]
    return (
        pl.concat(parts)
        .group_by("host", "source_id")
        .agg(pl.col("first_ts").min(), pl.col("last_ts").max())
        .sort("host", "source_id")
    )


# -- service windows ----------------------------------------------------------------
def _assumed_assets(
    host_spans: pl.DataFrame,
    events: pl.DataFrame,
    gpus_per_node: int,
) -> pl.DataFrame:
    """Assets from the logs: each host from its first to its last line."""
    system = (
        events.filter(pl.col("host").is_not_null() & pl.col("system").is_not_null())
        .group_by("host")
        .agg(system=pl.col("system").sort().first())
    )
    hosts = (
        host_spans.group_by("host")
        .agg(
            in_service_ts=pl.col("first_ts").min(),
            out_of_service_ts=pl.col("last_ts").max(),
        )
        .join(system, on="host", how="left")
        .filter(pl.col("in_service_ts").is_not_null())
        .sort("host")
    )
    utc = POLARS_SCHEMAS["assets"]["in_service_ts"]
    hosts = hosts.select(
        pl.lit(None, dtype=pl.Int32).alias("source_id"),
        pl.lit(None, dtype=pl.Int64).alias("line_no"),
        "host",
        pl.lit(None, dtype=pl.String).alias("device"),
        "system",
        pl.lit(gpus_per_node, dtype=pl.Int32).alias("gpus"),
        pl.lit(None, dtype=utc).alias("in_service_ts"),
        pl.col("out_of_service_ts").cast(utc),
        pl.col("in_service_ts").cast(utc).alias("observed_from_ts"),
        pl.lit('{"assumed": true}').alias("attrs"),
    )
    return hosts


def _attr_keys(assets: pl.DataFrame) -> list[str]:
    if "attrs" not in assets.columns or assets.height == 0:
        return []
    keys: dict[str, None] = {}
    for text in assets["attrs"].drop_nulls().unique().to_list():
        import json

        try:
            obj = json.loads(text)
        except ValueError:
            continue
        if isinstance(obj, dict):
            keys.update(
                dict.fromkeys(k for k, v in obj.items() if not isinstance(v, dict))
            )
    return [k for k in keys if k not in _ASSET_COLUMNS and k != "assumed"]


def split_by(
    by: Sequence[str],
    assets: pl.DataFrame,
    events: pl.DataFrame | None = None,
    *,
    attributes: Sequence[str] | None = None,
) -> tuple[list[str], list[str]]:
    """Split grouping columns into unit attributes and failure attributes.

    Parameters
    ----------
    by : sequence of str
        Requested grouping columns.
    assets : pl.DataFrame
        The assets table; its columns ``system``, ``host``, ``device`` (when
        devices are units) and every key of its ``attrs`` JSON (``rack``,
        ``batch``, ``model``, …) are unit attributes.
    events : pl.DataFrame, optional
        The events table; its columns, plus ``root_cause``/``sub_cause``
        derived from ``failure_mode``, are failure attributes.
    attributes : sequence of str, optional
        The keys of ``attrs`` when already known (e.g.
        :attr:`Observation.attributes`); read from ``assets`` otherwise.

    Returns
    -------
    tuple of list of str
        ``(unit attributes, failure attributes)`` in the order given.

    Raises
    ------
    SchemaError
        If a column is neither, or ``device`` is asked for where devices are
        not units (node-level assets): each device would get the whole
        fleet's exposure.
    """
    per_device = "device" in assets.columns and assets["device"].is_not_null().any()
    attr_keys = list(attributes) if attributes is not None else _attr_keys(assets)
    unit_cols = {"system", "host", *attr_keys} | ({"device"} if per_device else set())
    event_cols = set(FAILURE_ATTRIBUTES) | {"category"}
    if events is not None:
        event_cols |= set(events.columns) - {
            "source_id", "line_no", "ts", "repaired_ts", "repair_s", "mono_s",
            "count", "detail", "flags",
        }  # fmt: skip
    if "device" in by and not per_device:
        msg = (
            "cannot group by device: the assets list nodes, not devices, so "
            "every device would be given its whole node's time at risk. Group "
            "by host (per-node MTBF), or ingest per-GPU assets (a device "
            "column) to make GPUs the units."
        )
        raise SchemaError(msg)
    event_cols -= unit_cols | {"device", "repair_h"}
    unknown = [c for c in by if c not in unit_cols | event_cols]
    if unknown:
        msg = (
            f"cannot group by {unknown}: choose unit attributes "
            f"{sorted(unit_cols)} or failure attributes {sorted(event_cols)}, "
            "e.g. --by system,root_cause"
        )
        raise SchemaError(msg)
    units = [c for c in by if c in unit_cols]
    return units, [c for c in by if c not in units]


def service_windows(
    assets: pl.DataFrame,
    *,
    observed_until: pl.DataFrame,
    first_records: pl.DataFrame,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    attributes: Sequence[str] = (),
) -> pl.DataFrame:
    """Each service window of each unit, clipped to the time it was at risk.

    Parameters
    ----------
    assets : pl.DataFrame
        The store's ``assets`` table (one row per service window).
    observed_until : pl.DataFrame
        ``source_id, observed_until_ts, basis, cap_declared``: the end of
        data of each assets file's open-ended units, and whether it also
        ends windows with a declared removal (a file that is both records
        and inventory, as LANL's).
    first_records : pl.DataFrame
        ``host, first_ts``: the first record of each host (entry of units whose
        install date is unknown) and ``host = None`` for the fleet's first.
    window_start, window_end : datetime, optional
        The declared window (UTC).
    attributes : sequence of str
        Keys of ``attrs`` to add as columns (e.g. ``rack``).

    Returns
    -------
    pl.DataFrame
        The assets columns with ``in_service_ts`` (age origin, null when
        unknown), ``observed_from_ts`` (entry into observation),
        ``out_of_service_ts`` (exit from observation, never null),
        ``exposure_h`` (>= 0), ``left_truncated``, ``in_service_unknown``,
        ``exit_basis`` and the ``attributes``.
    """
    start = _utc(window_start, "window_start")
    end = _utc(window_end, "window_end")
    fleet_first = first_records.filter(pl.col("host").is_null())["first_ts"]
    fleet_first_ts = fleet_first.item() if fleet_first.len() else None
    host_first = first_records.filter(pl.col("host").is_not_null())
    w = (
        assets.join(
            observed_until.select(
                pl.col("source_id").cast(assets.schema["source_id"]),
                "observed_until_ts",
                "basis",
                "cap_declared",
            ),
            on="source_id",
            how="left",
            nulls_equal=True,
        )
        .join(host_first.select("host", _host_first="first_ts"), on="host", how="left")
        .with_columns(
            in_service_unknown=pl.col("in_service_ts").is_null(),
        )
    )
    declared_out = pl.col("out_of_service_ts").is_not_null()
    entry = pl.max_horizontal(
        pl.coalesce(
            "in_service_ts",
            "observed_from_ts",
            "_host_first",
            _lit_ts(fleet_first_ts),
        ),
        pl.coalesce("observed_from_ts", "in_service_ts"),
        _lit_ts(start),
    )
    data_end = _lit_ts(end) if end is not None else pl.col("observed_until_ts")
    # a declared removal is honoured; only a window end, or the last record of
    # a file that is itself the inventory (LANL), cuts it short
    cap = pl.when(pl.col("cap_declared")).then(data_end).otherwise(_lit_ts(end))
    leave = pl.min_horizontal(pl.coalesce("out_of_service_ts", data_end), cap)
    basis = (
        pl.when(declared_out & (pl.col("out_of_service_ts") <= data_end))
        .then(pl.lit("out_of_service_ts"))
        .when(declared_out & ~pl.col("cap_declared") & (end is None))
        .then(pl.lit("out_of_service_ts, after the end of data"))
        .when(pl.lit(end is not None))
        .then(pl.lit("window_end"))
        .otherwise(pl.col("basis"))
    )
    w = w.with_columns(
        observed_from_ts=entry,
        out_of_service_ts=leave,
        exit_basis=basis,
        left_truncated=pl.col("in_service_ts").is_null()
        | (entry > pl.col("in_service_ts")),
    ).with_columns(
        exposure_h=pl.max_horizontal(
            _hours(pl.col("out_of_service_ts"), pl.col("observed_from_ts")),
            pl.lit(0.0),
        ).fill_null(0.0)
    )
    for key in attributes:
        w = w.with_columns(pl.col("attrs").str.json_path_match(f"$.{key}").alias(key))
    return w.drop("_host_first", "observed_until_ts", "basis", "cap_declared")


def exposure_by(
    windows: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    unit: Literal["node", "gpu"] = "node",
    gpus_per_node: int = 8,
) -> pl.DataFrame:
    """Sum time at risk per group of units, in node-hours or GPU-hours.

    Parameters
    ----------
    windows : pl.DataFrame
        From :func:`service_windows`: ``host``, ``device``, ``gpus``,
        ``observed_from_ts``, ``out_of_service_ts``, ``exposure_h`` and the
        ``by`` columns.
    by : sequence of str
        Unit attributes to group by.
    unit : {"node", "gpu"}
        ``"node"``: node-hours (with per-GPU assets, the time any GPU of the
        node is in service, overlapping windows counted once). ``"gpu"``:
        GPU-hours (with node assets, hours × ``gpus``, ``gpus_per_node`` where
        it is null).
    gpus_per_node : int, default 8
        GPUs of a node whose assets row leaves ``gpus`` empty.

    Returns
    -------
    pl.DataFrame
        ``*by, n_units, exposure_h`` (unit-hours of ``unit``), one row per
        group with time at risk.
    """
    by = list(by)
    per_device = windows["device"].is_not_null().any()
    at_risk = windows.filter(pl.col("exposure_h") > 0)
    if unit == "gpu":
        if per_device:
            hours = pl.col("exposure_h")
            key = pl.struct("host", "device")
        else:
            hours = pl.col("exposure_h") * pl.col("gpus").fill_null(gpus_per_node)
            key = pl.col("host")
        frame = at_risk.select(*by, _unit=key, exposure_h=hours.cast(pl.Float64))
    elif unit == "node":
        if per_device:
            at_risk = _union_per_host(at_risk, by)
        frame = at_risk.select(*by, _unit=pl.col("host"), exposure_h="exposure_h")
    else:
        msg = f"unit must be 'node' or 'gpu', found {unit!r}."
        raise InvalidParameterError(msg)
    aggs = [
        pl.col("_unit").n_unique().cast(pl.Int64).alias("n_units"),
        pl.col("exposure_h").sum(),
    ]
    if not by:
        if frame.height == 0:
            return pl.DataFrame(schema={"n_units": pl.Int64, "exposure_h": pl.Float64})
        return frame.select(aggs)
    return frame.group_by(by).agg(aggs).sort(by, nulls_last=True)


def _union_per_host(windows: pl.DataFrame, by: list[str]) -> pl.DataFrame:
    """Merge the overlapping windows of a node's GPUs into node windows."""
    keys = ["host", *[c for c in by if c != "host"]]
    merged = (
        windows.sort([*keys, "observed_from_ts"])
        .with_columns(_reach=pl.col("out_of_service_ts").cum_max().shift(1).over(keys))
        .with_columns(
            _run=(
                pl.col("_reach").is_null()
                | (pl.col("observed_from_ts") > pl.col("_reach"))
            )
            .cum_sum()
            .over(keys)
        )
        .group_by([*keys, "_run"])
        .agg(
            observed_from_ts=pl.col("observed_from_ts").min(),
            out_of_service_ts=pl.col("out_of_service_ts").max(),
        )
    )
    return merged.with_columns(
        exposure_h=_hours(pl.col("out_of_service_ts"), pl.col("observed_from_ts"))
    )


def place_failures(
    failures: pl.DataFrame,
    windows: pl.DataFrame,
    *,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Keep failures inside a window of their unit; exclude the rest, with reasons.

    Parameters
    ----------
    failures : pl.DataFrame
        One row per failure: ``ts``, ``host``, ``device``, ``source_id``,
        ``line_no``, ``failure_mode``.
    windows : pl.DataFrame
        From :func:`service_windows`.
    window_start, window_end : datetime, optional
        The declared window: failures outside it are outside the question
        (neither kept nor excluded). The window is half-open,
        ``[window_start, window_end)``, so adjacent windows never count one
        failure twice.

    Returns
    -------
    tuple of pl.DataFrame
        ``(kept, excluded)``. ``excluded`` has ``source_id, line_no, ts, host,
        device, failure_mode, reason``: ``"host not in the assets table"``,
        ``"before the unit entered service"``, ``"before tracking began"``,
        ``"between two service windows"`` or ``"after the unit left
        service"``, each with the unit's dates.
    """
    start = _utc(window_start, "window_start")
    end = _utc(window_end, "window_end")
    timed = failures.filter(pl.col("ts").is_not_null())
    if start is not None:
        timed = timed.filter(pl.col("ts") >= start)
    if end is not None:
        timed = timed.filter(pl.col("ts") < end)
    per_device = windows["device"].is_not_null().any()
    keys = ["host", "device"] if per_device else ["host"]
    timed = timed.with_row_index("_fid")
    removed = (
        pl.col("exit_basis").fill_null("").str.starts_with("out_of_service_ts")
        if "exit_basis" in windows.columns
        else pl.lit(True)
    )
    spans = windows.select(
        *keys,
        _in=pl.col("in_service_ts"),
        _from="observed_from_ts",
        _to="out_of_service_ts",
        _by_removal=removed,
    )
    pairs = timed.select("_fid", *keys, "ts").join(
        spans, on=keys, how="inner", nulls_equal=True
    )
    if per_device:
        # a failure naming no GPU of the inventory (a node-level fault, or a
        # device the inventory does not list) is judged by its node's windows
        matched = pairs["_fid"].unique().implode()
        pairs = pl.concat(
            [
                pairs,
                timed.filter(~pl.col("_fid").is_in(matched))
                .select("_fid", "host", "ts")
                .join(spans.drop("device"), on="host", how="inner")
                .with_columns(device=pl.lit(None, dtype=pl.String))
                .select(pairs.columns),
            ]
        )
    inside = pairs.filter(
        (pl.col("ts") >= pl.col("_from")) & (pl.col("ts") <= pl.col("_to"))
    )["_fid"].unique()
    kept = timed.filter(pl.col("_fid").is_in(inside.implode()))
    out = timed.filter(~pl.col("_fid").is_in(inside.implode()))
    if out.height == 0:
        empty = out.drop("_fid").head(0).with_columns(reason=pl.lit(None, pl.String))
        return kept.drop("_fid"), empty
    known = pairs.group_by("_fid").agg(
        _first_in=pl.col("_in").min(),
        _first_from=pl.col("_from").min(),
        _last_to=pl.col("_to").max(),
        _removed=pl.col("_by_removal").sort_by("_to").last(),
        _n=pl.len(),
    )
    out = out.join(known, on="_fid", how="left")
    reason = (
        pl.when(pl.col("_n").is_null())
        .then(pl.lit("host not in the assets table (its time at risk is unknown)"))
        .when(pl.col("_first_in").is_not_null() & (pl.col("ts") < pl.col("_first_in")))
        .then(
            pl.format(
                "before the unit entered service ({})",
                pl.col("_first_in").dt.strftime("%Y-%m-%dT%H:%MZ"),
            )
        )
        .when(pl.col("ts") < pl.col("_first_from"))
        .then(
            pl.format(
                "before tracking began ({})",
                pl.col("_first_from").dt.strftime("%Y-%m-%dT%H:%MZ"),
            )
        )
        .when((pl.col("ts") > pl.col("_last_to")) & pl.col("_removed"))
        .then(
            pl.format(
                "after the unit left service ({})",
                pl.col("_last_to").dt.strftime("%Y-%m-%dT%H:%MZ"),
            )
        )
        .when(pl.col("ts") > pl.col("_last_to"))
        .then(
            pl.format(
                "after the end of observation ({})",
                pl.col("_last_to").dt.strftime("%Y-%m-%dT%H:%MZ"),
            )
        )
        .otherwise(pl.lit("between two service windows of the unit"))
    )
    excluded = out.with_columns(reason=reason).drop(
        "_fid", "_first_in", "_first_from", "_last_to", "_removed", "_n"
    )
    return kept.drop("_fid"), excluded


def _window_attributes(
    failures: pl.DataFrame, windows: pl.DataFrame, attributes: Sequence[str]
) -> pl.DataFrame:
    """Give each failure the attributes of the window it happened in.

    A unit may move (another rack, another batch) between windows, so the
    attributes come from the window holding the failure, not the unit's first.
    """
    per_device = windows["device"].is_not_null().any()
    keys = ["host", "device"] if per_device else ["host"]
    spans = windows.select(
        *keys, "observed_from_ts", "out_of_service_ts", *attributes
    ).with_row_index("_wid")
    tagged = failures.drop(*[a for a in attributes if a in failures.columns])
    tagged = tagged.with_row_index("_kid")
    match = (
        tagged.select("_kid", *keys, "ts")
        .join(spans, on=keys, how="inner", nulls_equal=True)
        .filter(
            (pl.col("ts") >= pl.col("observed_from_ts"))
            & (pl.col("ts") <= pl.col("out_of_service_ts"))
        )
        .sort("_kid", "_wid")
        .unique("_kid", keep="first")
        .select("_kid", *attributes)
    )
    return tagged.join(match, on="_kid", how="left").drop("_kid")


def _with_cause(failures: pl.DataFrame) -> pl.DataFrame:
    """Add ``root_cause``, ``sub_cause`` (of ``failure_mode``) and ``repair_h``."""
    parts = pl.col("failure_mode").str.split_exact("/", 1)
    return failures.with_columns(
        root_cause=parts.struct.field("field_0"),
        sub_cause=pl.coalesce(
            parts.struct.field("field_1"), parts.struct.field("field_0")
        ),
        repair_h=pl.col("repair_s") / 3600.0,
    )


_CLOCK_ZERO = datetime(1970, 1, 1, tzinfo=UTC)


def to_service_clock(
    windows: pl.DataFrame, failures: pl.DataFrame, prior: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    r"""Move each node's windows and failures onto its in-service clock.

    Parameters
    ----------
    windows : pl.DataFrame
        :func:`service_windows` (one row per service window; ``host``,
        ``in_service_ts``, ``observed_from_ts``, ``out_of_service_ts``,
        ``exposure_h`` and unit attributes).
    failures : pl.DataFrame
        Failures inside a window (``host``, ``ts``).
    prior : pl.DataFrame
        Failures before observation began (``host``, ``ts``).

    Returns
    -------
    tuple of pl.DataFrame
        ``(units, failures)``: one assets-shaped row per node and the failures
        (with ``prior`` true for the prior ones), their instants replaced by
        ``1970-01-01T00:00Z`` plus the node's hours in service until then. A
        gap between two windows is neither age nor exposure, so differences of
        these instants are times in service. ``in_service_ts`` is the clock's
        zero, or null when the node's first install date is unknown.

    Notes
    -----
    Window :math:`w` of a node starts service at
    :math:`s_w` (``in_service_ts``, else its entry into observation) and ends
    at :math:`e_w`; an instant :math:`t \in [s_w, e_w]` is at clock
    :math:`\sum_{v<w}(e_v - s_v) + (t - s_w)`.
    """
    attrs = [
        c
        for c in windows.columns
        if c
        not in {
            "source_id",
            "line_no",
            "in_service_ts",
            "observed_from_ts",
            "out_of_service_ts",
            "exposure_h",
            "exit_basis",
            "left_truncated",
            "in_service_unknown",
            "attrs",
            "device",
            "gpus",
        }
    ]
    w = (
        windows.with_columns(_s=pl.coalesce("in_service_ts", "observed_from_ts"))
        .filter(
            pl.col("_s").is_not_null() & (pl.col("out_of_service_ts") >= pl.col("_s"))
        )
        .sort("host", "_s")
        .with_columns(_len=_hours(pl.col("out_of_service_ts"), pl.col("_s")))
        .with_columns(
            _offset=pl.col("_len").cum_sum().shift(1, fill_value=0.0).over("host"),
            _w=pl.int_range(pl.len()).over("host"),
        )
    )

    def clock(hours: pl.Expr) -> pl.Expr:
        return _lit_ts(_CLOCK_ZERO) + pl.duration(
            microseconds=(hours * _US_PER_H).round(0).cast(pl.Int64)
        )

    first = w.filter(pl.col("_w") == 0).select(
        "host", _known=pl.col("in_service_ts").is_not_null()
    )
    observed = w.filter(pl.col("exposure_h") > 0)
    units = (
        observed.group_by("host")
        .agg(
            *[pl.col(c).first() for c in attrs if c != "host"],
            observed_from_ts=(
                pl.col("_offset") + _hours(pl.col("observed_from_ts"), pl.col("_s"))
            )
            .sort_by("_s")
            .first(),
            out_of_service_ts=(pl.col("_offset") + pl.col("_len")).max(),
        )
        .join(first, on="host", how="left")
        .with_columns(
            in_service_ts=pl.when("_known").then(_lit_ts(_CLOCK_ZERO)),
            observed_from_ts=clock(pl.col("observed_from_ts")),
            out_of_service_ts=clock(pl.col("out_of_service_ts")),
        )
        .drop("_known")
    )
    both = pl.concat(
        [
            failures.with_columns(prior=pl.lit(False)),
            prior.with_columns(prior=pl.lit(True)),
        ],
        how="diagonal_relaxed",
    ).with_row_index("_fid")
    # a failure before the first window (a unit whose install date is unknown,
    # failing before tracking began) sits before the clock's zero
    before_first = pl.col("prior") & (pl.col("_w") == 0) & (pl.col("ts") < pl.col("_s"))
    placed = (
        both.select("_fid", "host", "ts", "prior")
        .join(
            w.select("host", "_s", "_offset", "_w", _e="out_of_service_ts"), on="host"
        )
        .filter(
            ((pl.col("ts") >= pl.col("_s")) & (pl.col("ts") <= pl.col("_e")))
            | before_first
        )
        .group_by("_fid")
        .agg(_clock=(pl.col("_offset") + _hours(pl.col("ts"), pl.col("_s"))).first())
    )
    moved = (
        both.join(placed, on="_fid", how="inner")
        .with_columns(ts=clock(pl.col("_clock")))
        .drop("_fid", "_clock")
    )
    return units, moved


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
        f"{first['host']} to {_fmt(first['out_of_service_ts'])}: if that removal "
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

    def exposure(
        self,
        by: Sequence[str] = (),
        *,
        unit: Literal["node", "gpu"] = "node",
        gpus_per_node: int = 8,
    ) -> pl.DataFrame:
        """Time at risk per group (:func:`exposure_by`)."""
        return exposure_by(self.windows, by=by, unit=unit, gpus_per_node=gpus_per_node)


def _fill_system(events: pl.DataFrame, assets: pl.DataFrame) -> pl.DataFrame:
    """Give events their host's system; refuse events that name another one."""
    host_system = (
        assets.filter(pl.col("system").is_not_null())
        .group_by("host")
        .agg(pl.col("system").sort().first().alias("_asset_system"))
    )
    joined = events.join(host_system, on="host", how="left")
    clash = joined.filter(
        pl.col("system").is_not_null()
        & pl.col("_asset_system").is_not_null()
        & (pl.col("system") != pl.col("_asset_system"))
    )
    if clash.height:
        shown = [
            f"{r['host']} (event: {r['system']!r}, assets: {r['_asset_system']!r})"
            for r in clash.unique(["host", "system"])
            .sort("host")
            .head(5)
            .iter_rows(named=True)
        ]
        msg = (
            f"{clash.height} failure event(s) name another system than their host's "
            f"assets row, e.g. {'; '.join(shown)}. Fix the events' system column or "
            "leave it empty (it is then taken from the assets)."
        )
        raise InsufficientDataError(msg)
    return joined.with_columns(
        pl.coalesce("system", "_asset_system").alias("system")
    ).drop("_asset_system")


def _check_overlaps(assets: pl.DataFrame) -> None:
    """Refuse one unit listed in service twice at once by different files."""
    keyed = assets.select(
        "source_id",
        "line_no",
        "host",
        "device",
        _from=pl.coalesce("in_service_ts", "observed_from_ts"),
        _to=pl.col("out_of_service_ts"),
    )
    pairs = keyed.join(keyed, on=["host", "device"], nulls_equal=True, suffix="_b")
    both = pairs.filter(
        (pl.col("source_id") < pl.col("source_id_b"))
        & (
            pl.col("_to").is_null()
            | pl.col("_from_b").is_null()
            | (pl.col("_from_b") < pl.col("_to"))
        )
        & (
            pl.col("_to_b").is_null()
            | pl.col("_from").is_null()
            | (pl.col("_from") < pl.col("_to_b"))
        )
    )
    if both.height:
        shown = [
            f"{r['host']} in sources {r['source_id']} and {r['source_id_b']}"
            for r in both.sort("host").head(5).iter_rows(named=True)
        ]
        msg = (
            f"{both.height} unit(s) are in service at the same time in two assets "
            f"files, e.g. {'; '.join(shown)}, which would count their time at risk "
            "twice. Keep one inventory per fleet: re-ingest the newer file with "
            "--replace, or remove the duplicate rows."
        )
        raise InsufficientDataError(msg)


def no_wall_time_message(events: pl.DataFrame) -> str:
    """Say that no event has a wall time, which hosts they are on, and the fix.

    Parameters
    ----------
    events : pl.DataFrame
        The events without wall time (``host`` column).

    Returns
    -------
    str
        The message, with the fix (ingest with wall-clock stamps).
    """
    hosts = events["host"].drop_nulls().unique().sort().to_list()
    return (
        f"{events.height} event(s) were ingested (on {len(hosts)} host(s), e.g. "
        f"{hosts[:5]}) but none has a wall time (ts is null, flag no_wall_time), "
        "so neither the failures nor the hosts' time at risk can be placed in "
        "time. Plain dmesg stamps are seconds since boot; relkit resolves them "
        "only from a boot anchor in the same log (a line with both a wall-clock "
        "stamp and the kernel clock, as syslog prints 'kernel: [  5.1] ...'). "
        "Ingest the same logs with wall times: `dmesg -T` or `dmesg "
        "--time-format iso` output, or the syslog/journal copy (/var/log/kern.log, "
        "`journalctl -k -o short-iso`), e.g.\n"
        "    relkit ingest --kind kernel --tz UTC kern.log\n"
        "(library: relkit.ingest.kernel.read_kernel(store, 'kern.log', tz='UTC'))."
    )


def _observed_until(
    assets: pl.DataFrame,
    collected: pl.DataFrame,
    host_spans: pl.DataFrame,
    kinds: pl.DataFrame,
) -> pl.DataFrame:
    """End of data per assets file, and whether it caps declared removals.

    Its ``--as-of``; else the latest collection time (``--as-of`` or last
    record) of the file's own records and of the sources that name its hosts
    (events, logs); else of every other source of the store. An inventory's
    dates are not a collection time (a removal may be planned, in the
    future), so an inventory (kind ``assets``) keeps its declared removals
    exactly (``cap_declared`` false); a file that is both records and
    inventory (LANL) ends every window at its last record.
    """
    own = collected.select(
        "source_id",
        _own=pl.when(pl.col("basis") == "as-of").then(pl.col("last_ts")),
    )
    related = (
        assets.select("source_id", "host")
        .unique()
        .join(host_spans.select("host", _src="source_id"), on="host", how="inner")
        .join(
            collected.select(_src="source_id", _last="last_ts", _basis="basis"),
            on="_src",
            how="inner",
        )
        .filter(pl.col("_src") != pl.col("source_id"))
        .group_by("source_id")
        .agg(
            _rel=pl.col("_last").max(),
            _rel_basis=pl.col("_basis").sort_by("_last").last(),
        )
    )
    asset_ids = set(assets["source_id"].drop_nulls().to_list())
    others = collected.filter(~pl.col("source_id").is_in(list(asset_ids)))
    any_last = others["last_ts"].max() if others.height else None
    return (
        assets.select("source_id")
        .unique()
        .cast({"source_id": pl.Int32})
        .join(own, on="source_id", how="left")
        .join(related.cast({"source_id": pl.Int32}), on="source_id", how="left")
        .join(
            collected.select("source_id", _self="last_ts"), on="source_id", how="left"
        )
        .join(kinds, on="source_id", how="left")
        .select(
            "source_id",
            # a file whose records are also events is records and inventory
            cap_declared=pl.when(pl.col("kind").is_not_null())
            .then(pl.col("kind") != "assets")
            .otherwise(pl.col("_self").is_not_null()),
            observed_until_ts=pl.coalesce(
                "_own",
                pl.max_horizontal("_rel", "_self"),
                _lit_ts(any_last),
            ),
            basis=pl.when(pl.col("_own").is_not_null())
            .then(pl.lit("as-of given at ingest"))
            .when(pl.col("_rel").is_not_null() | pl.col("_self").is_not_null())
            .then(pl.lit("collection time: last record of the fleet's sources"))
            .otherwise(pl.lit("collection time: last record of the store's sources")),
        )
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
    start = _utc(window_start, "window_start")
    end = _utc(window_end, "window_end")
    if start is not None and end is not None and start >= end:
        msg = f"window_start {start} is not before window_end {end}; swap them."
        raise InvalidParameterError(msg)
    records = events.filter(pl.col("ts").is_not_null())
    n_no_wall = events.height - records.height
    if events.height and records.height == 0:
        raise InsufficientDataError(no_wall_time_message(events))
    collected = collection_times(sources, events)
    spans = _host_spans(events, log_spans, sources)
    failures = failure_records(
        events, window_min=window_min, failure_modes=failure_modes, sources=sources
    )
    assumed = assets.height == 0
    if assumed:
        assets = _assumed_assets(spans, records, gpus_per_node)
        if assets.height == 0:
            msg = (
                f"no assets in the store and no timed log lines ({events.height} "
                "events): MTBF needs the units at risk. Ingest them, e.g. "
                "`relkit ingest --kind assets FILE` (columns host, in_service_ts, "
                "...) or `relkit ingest --kind lanl FILE`, or logs with wall times."
            )
            raise InsufficientDataError(msg)
    else:
        _check_overlaps(assets)
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
    failures = _fill_system(failures, assets).with_columns(
        pl.col("system").fill_null(UNASSIGNED)
    )
    assets = assets.with_columns(pl.col("system").fill_null(UNASSIGNED))
    attributes = tuple(_attr_keys(assets))
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
        until = _observed_until(assets, collected, spans, kinds)
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
    kept = _with_cause(kept)
    if attributes:
        kept = _window_attributes(kept, windows, attributes)
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
        prior_failures=_with_cause(prior),
        notes=tuple(_notes(windows)),
    )
