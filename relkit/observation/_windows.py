"""Service windows: when each unit is at risk, when collection ended (private)."""

from collections.abc import Sequence
from datetime import datetime

import polars as pl

from relkit.errors import InsufficientDataError, SchemaError
from relkit.observation._base import (
    ASSET_COLUMNS,
    FAILURE_ATTRIBUTES,
    as_utc,
    hours_between,
    lit_ts,
)
from relkit.schema import POLARS_SCHEMAS
from relkit.schema import UTC as UTC_DTYPE


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
    # (see observed_until_by_source); only its --as-of is a collection time. A LANL
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


def host_spans(
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
def assumed_assets(
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


def attr_keys(assets: pl.DataFrame) -> list[str]:
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
    return [k for k in keys if k not in ASSET_COLUMNS and k != "assumed"]


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
    keys = list(attributes) if attributes is not None else attr_keys(assets)
    unit_cols = {"system", "host", *keys} | ({"device"} if per_device else set())
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
    start = as_utc(window_start, "window_start")
    end = as_utc(window_end, "window_end")
    fleet_first = first_records.filter(pl.col("host").is_null())["first_ts"]
    fleet_first_ts = fleet_first.min() if fleet_first.len() else None
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
            lit_ts(fleet_first_ts),
        ),
        pl.coalesce("observed_from_ts", "in_service_ts"),
        lit_ts(start),
    )
    data_end = lit_ts(end) if end is not None else pl.col("observed_until_ts")
    # a declared removal is honoured; only a window end, or the last record of
    # a file that is itself the inventory (LANL), cuts it short
    cap = pl.when(pl.col("cap_declared")).then(data_end).otherwise(lit_ts(end))
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
            hours_between(pl.col("out_of_service_ts"), pl.col("observed_from_ts")),
            pl.lit(0.0),
        ).fill_null(0.0)
    )
    for key in attributes:
        w = w.with_columns(pl.col("attrs").str.json_path_match(f"$.{key}").alias(key))
    return w.drop("_host_first", "observed_until_ts", "basis", "cap_declared")


def fill_system(events: pl.DataFrame, assets: pl.DataFrame) -> pl.DataFrame:
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


def check_overlaps(assets: pl.DataFrame) -> None:
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


def observed_until_by_source(
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
                lit_ts(any_last),
            ),
            basis=pl.when(pl.col("_own").is_not_null())
            .then(pl.lit("as-of given at ingest"))
            .when(pl.col("_rel").is_not_null() | pl.col("_self").is_not_null())
            .then(pl.lit("collection time: last record of the fleet's sources"))
            .otherwise(pl.lit("collection time: last record of the store's sources")),
        )
    )
