"""Shared preparation of store tables for the analyses (private).

The store keeps ``failure_mode`` as ``"<root_cause>/<sub_cause>"``; analyses group
by either part, and by unit attributes (``system``, ``host``) that live on assets.
"""

from collections.abc import Sequence
from datetime import datetime

import polars as pl

from relkit import exposure
from relkit.errors import InsufficientDataError, SchemaError
from relkit.schema import POLARS_SCHEMAS

#: Columns an MTBF or survival grouping may use, and where each one lives.
FAILURE_ATTRIBUTES = ("failure_mode", "root_cause", "sub_cause", "code", "severity")
UNIT_ATTRIBUTES = ("system", "host", "device")
#: The ``system`` of units whose assets row names none (one group, never dropped).
UNASSIGNED = "unassigned"


def with_cause_columns(events: pl.DataFrame) -> pl.DataFrame:
    """Add ``root_cause``, ``sub_cause`` and ``repair_h`` to an events frame."""
    parts = pl.col("failure_mode").str.split_exact("/", 1)
    return events.with_columns(
        root_cause=parts.struct.field("field_0"),
        sub_cause=pl.coalesce(
            parts.struct.field("field_1"), parts.struct.field("field_0")
        ),
        repair_h=pl.col("repair_s") / 3600.0,
    )


def split_by(
    by: Sequence[str], assets: pl.DataFrame | None = None
) -> tuple[list[str], list[str]]:
    """Split grouping columns into unit attributes and failure attributes.

    ``device`` is a unit attribute when the assets list devices (per-GPU
    assets); otherwise it is the failing device named by the events.

    Raises
    ------
    SchemaError
        If a column is neither.
    """
    unknown = [c for c in by if c not in FAILURE_ATTRIBUTES + UNIT_ATTRIBUTES]
    if unknown:
        msg = (
            f"cannot group by {unknown}: choose from unit attributes "
            f"{list(UNIT_ATTRIBUTES)} or failure attributes "
            f"{list(FAILURE_ATTRIBUTES)}, "
            "e.g. --by system,root_cause"
        )
        raise SchemaError(msg)
    per_device = assets is not None and assets["device"].is_not_null().any()
    units = [c for c in by if c in ("system", "host") or (c == "device" and per_device)]
    return units, [c for c in by if c not in units]


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


def _check_hosts(events: pl.DataFrame, assets: pl.DataFrame) -> None:
    """Refuse failures on unknown hosts or outside every service window."""
    unknown = events.join(assets.select("host").unique(), on="host", how="anti")
    if unknown.height:
        hosts = unknown["host"].unique().sort().to_list()
        msg = (
            f"{unknown.height} failure event(s) on {len(hosts)} host(s) missing from "
            f"the assets table, e.g. {hosts[:5]}: their time at risk is unknown. "
            "Add these hosts to the assets file and ingest it again with --replace, "
            "or remove their events."
        )
        raise InsufficientDataError(msg)
    windows = assets.group_by("host").agg(
        _from=pl.coalesce("in_service_ts", "observed_from_ts").min(),
        _to=pl.when(pl.col("out_of_service_ts").is_null().any())
        .then(None)
        .otherwise(pl.col("out_of_service_ts").max()),
    )
    outside = (
        events.join(windows, on="host")
        .filter((pl.col("ts") < pl.col("_from")) | (pl.col("ts") > pl.col("_to")))
        .sort("ts", "host")
    )
    if outside.height:
        shown = [
            f"{r['host']} at {r['ts']:%Y-%m-%d %H:%M}Z "
            f"(in service {r['_from']:%Y-%m-%d} to "
            f"{'now' if r['_to'] is None else format(r['_to'], '%Y-%m-%d')})"
            for r in outside.head(5).iter_rows(named=True)
        ]
        msg = (
            f"{outside.height} failure event(s) dated outside their host's service "
            f"window, e.g. {'; '.join(shown)}. Fix the in_service_ts / "
            "out_of_service_ts of these hosts in the assets file, or the events' times."
        )
        raise InsufficientDataError(msg)


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
        & (pl.col("_to").is_null() | (pl.col("_from_b") < pl.col("_to")))
        & (pl.col("_to_b").is_null() | (pl.col("_from") < pl.col("_to_b")))
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


def failure_records(
    events: pl.DataFrame,
    *,
    window_min: float = 10.0,
    flap_debounce_min: float = 5.0,
) -> pl.DataFrame:
    """Fold raw log signals into failure incidents; keep other records as they are.

    Events whose ``failure_mode`` is in :data:`relkit.taxonomy.FAILURE_MODES`
    (kernel logs, nvidia-smi) become one row per incident that counts as a
    failure (:func:`relkit.incidents.incidents_as_failures`); lines without
    wall time cannot be placed and are left out (see
    :func:`relkit.incidents.ungrouped_events`). Other events (LANL records,
    normalised failure tables) are already one row per failure.
    """
    from relkit.incidents import INCIDENT_FLAG, build_incidents, incidents_as_failures
    from relkit.taxonomy import FAILURE_MODES

    if "flags" not in events.columns:
        events = events.with_columns(flags=pl.lit(None, dtype=pl.String))
    folded_before = pl.col("flags").fill_null("").str.contains(INCIDENT_FLAG)
    known = (
        pl.col("failure_mode").is_in(FAILURE_MODES["failure_mode"].implode())
        & ~folded_before
    )
    raw = events.filter(known)
    if raw.height == 0:
        return events
    incidents = build_incidents(
        raw, window_min=window_min, flap_debounce_min=flap_debounce_min
    )
    folded = incidents_as_failures(incidents)
    return pl.concat(
        [
            events.filter(~known),
            folded.select(c for c in folded.columns if c in events.columns),
        ],
        how="diagonal_relaxed",
    )


def log_ends(sources: pl.DataFrame | None, events: pl.DataFrame) -> pl.DataFrame:
    """``host, log_end_ts``: when each host's logs end, from the sources table.

    The kernel reader records ``log_end_ts``, the time of a file's last
    non-blank line, in each source's ``options``. A file read for one host
    (``--host``, ``--host-from-filename``) gives that host its end; a file with
    many hosts gives it to every host with an event in it. Lines without a
    failure signal are not stored, so without this the observation of a host
    would end at its last failure.
    """
    schema = {"host": pl.String, "log_end_ts": POLARS_SCHEMAS["events"]["ts"]}
    if sources is None or sources.is_empty() or "options" not in sources.columns:
        return pl.DataFrame(schema=schema)
    opts = sources.select(
        "source_id",
        end=pl.col("options").str.json_path_match("$.log_end_ts"),
        one_host=pl.col("options").str.json_path_match("$.host"),
    ).filter(pl.col("end").is_not_null())
    if opts.is_empty():
        return pl.DataFrame(schema=schema)
    opts = opts.with_columns(
        end=pl.col("end").str.to_datetime(time_zone="UTC", time_unit="us")
    )
    named = opts.filter(pl.col("one_host").is_not_null()).select(
        host="one_host", log_end_ts="end"
    )
    seen = (
        events.filter(pl.col("host").is_not_null())
        .select("host", "source_id")
        .unique()
        .join(opts.filter(pl.col("one_host").is_null()), on="source_id")
        .select("host", log_end_ts="end")
    )
    both = pl.concat([named, seen]).cast(schema)  # type: ignore[arg-type]
    return both.group_by("host").agg(pl.col("log_end_ts").max()).sort("host")


def assumed_assets(
    events: pl.DataFrame, *, gpus_per_node: int = 8, ends: pl.DataFrame | None = None
) -> pl.DataFrame:
    """Assets assumed from the logs: every host seen, at risk over its logs' span.

    Used when the store has no assets table. A host is at risk from the first
    to the last timed line of the log files (sources) it appears in, so an
    unrelated file in the same store does not stretch its time at risk; ``ends``
    (:func:`log_ends`) extends that to the logs' last lines. Each row's
    ``attrs`` says ``{"assumed": true}`` so results can be labelled.
    """
    timed = events.filter(pl.col("ts").is_not_null())
    spans = timed.group_by("source_id").agg(
        _first=pl.col("ts").min(), _last=pl.col("ts").max()
    )
    utc = POLARS_SCHEMAS["assets"]["in_service_ts"]
    hosts = (
        timed.select("host", "source_id", "system")
        .join(spans, on="source_id", how="left", nulls_equal=True)
        .group_by("host")
        .agg(
            system=pl.col("system").drop_nulls().first(),
            in_service_ts=pl.col("_first").min().cast(utc),
            out_of_service_ts=pl.col("_last").max().cast(utc),
        )
        .sort("host")
    )
    if ends is not None and ends.height:
        hosts = hosts.join(ends, on="host", how="left").with_columns(
            out_of_service_ts=pl.max_horizontal("out_of_service_ts", "log_end_ts")
        )
    hosts = hosts.select(
        "host", "system", "in_service_ts", "out_of_service_ts"
    ).with_columns(
        gpus=pl.lit(gpus_per_node, dtype=pl.Int32),
        attrs=pl.lit('{"assumed": true}'),
    )
    return pl.concat(
        [pl.DataFrame(schema=POLARS_SCHEMAS["assets"]), hosts], how="diagonal_relaxed"
    )


def _no_wall_time_message(events: pl.DataFrame) -> str:
    """Say that no event has a wall time, which hosts they are on, and the fix."""
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


def prepare_tables(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    window_end: datetime | None,
    *,
    window_min: float = 10.0,
    gpus_per_node: int = 8,
    sources: pl.DataFrame | None = None,
) -> tuple[pl.DataFrame, pl.DataFrame, datetime]:
    """Check and align the store's tables; return failures, assets and the end.

    - Raw log signals are folded into failure incidents (:func:`failure_records`).
    - With no assets at all, the hosts seen in the logs are assumed at risk over
      the span of the logs (:func:`assumed_assets`), ``gpus_per_node`` each.
    - Events without ``system`` take their host's system from the assets;
      units with none at all are in system ``"unassigned"``.
    - Every failure must be on a known host, inside one of its service windows,
      and no unit may be listed twice at once by two assets files.
    - Each assets file's observation ends at the last record about any of its
      hosts, the last line of their logs included (:func:`log_ends` of
      ``sources``), or at ``window_end`` if earlier, so another fleet's data in
      the same store never stretches this fleet's time at risk.

    Raises
    ------
    InsufficientDataError
        If there are events but none has a wall time, no assets and no events,
        no events and no ``window_end``, or a check fails.
    """
    # the span of observation comes from every timed record, before folding
    records = events.filter(pl.col("ts").is_not_null())
    if events.height and records.height == 0:
        raise InsufficientDataError(_no_wall_time_message(events))
    ends = log_ends(sources, records)
    events = failure_records(events, window_min=window_min)
    if assets.height == 0 and records.height:
        assets = assumed_assets(records, gpus_per_node=gpus_per_node, ends=ends)
    if assets.height == 0:
        msg = (
            f"no assets in the store ({events.height} events): MTBF needs the units "
            "at risk. Ingest them, e.g. `relkit ingest --kind assets FILE` (columns "
            "host, in_service_ts, ...) or `relkit ingest --kind lanl FILE`."
        )
        raise InsufficientDataError(msg)
    if events.height == 0 and window_end is None:
        msg = (
            "no failure events in the store, so the end of observation is unknown; "
            "declare it, e.g. --window-end 2025-01-01T00:00Z (library: window_end=)."
        )
        raise InsufficientDataError(msg)
    _check_overlaps(assets)
    events = _fill_system(events, assets).with_columns(
        pl.col("system").fill_null(UNASSIGNED)
    )
    assets = assets.with_columns(pl.col("system").fill_null(UNASSIGNED))
    _check_hosts(events, assets)
    end = window_end or exposure.observation_end(records if records.height else events)
    if window_end is None and ends.height:
        end = max(end, ends.get_column("log_end_ts").max())  # type: ignore[type-var]
    last = (
        records.group_by("host")
        .agg(_last=pl.max_horizontal(pl.col("ts").max(), pl.col("repaired_ts").max()))
        .join(ends, on="host", how="full", coalesce=True)
        .select("host", _last=pl.max_horizontal("_last", "log_end_ts"))
    )
    source_end = (
        assets.join(last, on="host", how="left")
        .group_by("source_id")
        .agg(_source_end=pl.col("_last").max())
    )
    stop = pl.min_horizontal(pl.coalesce("_source_end", pl.lit(end)), pl.lit(end))
    assets = (
        assets.join(source_end, on="source_id", how="left", nulls_equal=True)
        .with_columns(
            out_of_service_ts=pl.min_horizontal(
                pl.coalesce("out_of_service_ts", stop), stop
            )
        )
        .drop("_source_end")
    )
    return events, assets, end
