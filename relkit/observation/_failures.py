"""What one failure is, and which failures fall in a window (private)."""

from collections.abc import Sequence
from datetime import datetime
from typing import NamedTuple

import polars as pl

from relkit.errors import InvalidParameterError
from relkit.observation._base import as_utc
from relkit.schema import require_columns

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
    count_unknown_xid: bool = False,
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
    count_unknown_xid : bool, default False
        Count incidents of Xid codes outside NVIDIA's catalogue
        (``gpu/unknown_xid``) as failures (not counted by default).

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
    records = _drop_taxonomy_non_failures(
        events.filter(~known),
        sources if has_sources else None,
        count_unknown_xid=count_unknown_xid,
    )
    if window_min is not None:
        records = _fold_records(records, window_min)
    if raw.height == 0:
        return records
    incidents = build_incidents(
        raw,
        window_min=LOG_WINDOW_MIN if window_min is None else window_min,
        flap_debounce_min=flap_debounce_min,
        count_unknown_xid=count_unknown_xid,
    )
    folded = incidents_as_failures(incidents)
    return pl.concat(
        [records, folded.select(c for c in folded.columns if c in events.columns)],
        how="diagonal_relaxed",
    )


def _drop_taxonomy_non_failures(
    records: pl.DataFrame,
    sources: pl.DataFrame | None,
    *,
    count_unknown_xid: bool,
) -> pl.DataFrame:
    """Leave out normalised records of a taxonomy mode that is no failure.

    A normalised events file may name a taxonomy mode whose
    ``counts_as_failure`` is false (``gpu/informational``): its records are
    not failures, as the same mode from a kernel log is not, unless that file
    declared the mode itself (``declared_modes`` in its source options).
    """
    from relkit.taxonomy import FAILURE_MODES

    off = FAILURE_MODES.filter(~pl.col("counts_as_failure"))["failure_mode"]
    if count_unknown_xid:
        off = off.filter(off != "gpu/unknown_xid")
    drop = pl.col("failure_mode").is_in(off.implode())
    if sources is not None and "options" in sources.columns:
        declared = (
            sources.select(
                pl.col("source_id").cast(records.schema["source_id"]),
                failure_mode=pl.col("options")
                .str.json_path_match("$.declared_modes")
                .str.json_decode(pl.List(pl.String)),
            )
            .explode("failure_mode")
            .drop_nulls()
        )
        flagged = records.join(
            declared.unique().with_columns(_declared=pl.lit(value=True)),
            on=["source_id", "failure_mode"],
            how="left",
        )
        return flagged.filter(~drop | pl.col("_declared").fill_null(value=False)).drop(
            "_declared"
        )
    return records.filter(~drop)


def node_failures(
    failures: pl.DataFrame, *, window_min: float | None = None
) -> pl.DataFrame:
    """Fold the failures of one node's GPUs (and other parts) into node failures.

    Parameters
    ----------
    failures : pl.DataFrame
        One row per unit failure (:attr:`relkit.observation.Observation.failures`):
        ``ts``, ``host``, ``device``, ``failure_mode``, ``flags``, ``source_id``,
        ``line_no``.
    window_min : float, optional
        Largest gap between failures of one node failure, minutes: the
        incident window of the observation (:func:`failure_records`). Log
        signals (rows flagged ``incident``) fold with :data:`LOG_WINDOW_MIN`
        when it is None; normalised records (LANL, events tables), one
        failure each as their owner curated them, fold only when it is given.

    Returns
    -------
    pl.DataFrame
        One row per node failure, the columns of ``failures`` plus
        ``n_folded`` (Int64: the other failures folded into it). A failure of
        a host that starts within the window of the previous one on the same
        host (any device, any mode) joins it; the first stands for the node
        failure: its ``ts``, ``device``, ``failure_mode``, ``code`` and
        ``severity``, so grouping by ``failure_mode`` counts each node
        failure once, under the mode of its first signal. A repair runs to the
        latest repair of the failures folded, when there are several
        (``repaired_ts``, ``repair_s``, ``repair_h`` when present); a failure
        alone keeps its own. Sorted by ``ts``.

    Notes
    -----
    A node is the unit of ``--unit node``: four GPUs of a host falling off the
    bus within two seconds (a PCIe switch or the host's power) take the node
    down once, and an NVLink fault reported by Xid 144-150 on seven GPUs over
    six minutes is one fault of the NVLink fabric. Counting them as four or
    seven node failures would divide the node MTBF by that factor. Per-GPU
    answers (``--unit gpu``) and ``relkit incidents`` keep one failure per GPU.
    The fold chains like the incident fold (:func:`failure_records`): a gap
    equal to the window still joins.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> f = pl.DataFrame(
    ...     {
    ...         "ts": [datetime(2025, 3, 4, 18, 0, s, tzinfo=UTC) for s in (0, 1, 2)],
    ...         "host": ["gpu05"] * 3,
    ...         "device": ["0000:18:00", "0000:2a:00", "0000:3b:00"],
    ...         "failure_mode": ["gpu/fallen_off_bus"] * 3,
    ...         "flags": ["incident"] * 3,
    ...         "source_id": [1] * 3,
    ...         "line_no": [1, 2, 3],
    ...     }
    ... )
    >>> node_failures(f).select("device", "n_folded").rows()
    [('0000:18:00', 2)]
    """
    from relkit.incidents import INCIDENT_FLAG

    n = pl.lit(0, dtype=pl.Int64).alias("n_folded")
    if failures.height == 0:
        return failures.with_columns(n)
    flags = (
        pl.col("flags").fill_null("").str.contains(INCIDENT_FLAG)
        if "flags" in failures.columns
        else pl.lit(value=False)
    )
    foldable = pl.lit(value=True) if window_min is not None else flags
    window = LOG_WINDOW_MIN if window_min is None else window_min
    step = int(window * 60 * 1_000_000)
    order = [c for c in ("ts", "source_id", "line_no") if c in failures.columns]
    fold = failures.filter(foldable & pl.col("ts").is_not_null()).sort(
        ["host", *order], nulls_last=True
    )
    keep = failures.filter(~(foldable & pl.col("ts").is_not_null())).with_columns(n)
    if fold.height == 0:
        return keep
    gap = pl.col("ts").dt.epoch("us").diff().over("host")
    run = (gap.is_null() | (gap > step)).cum_sum().over("host")
    agg = [pl.all().exclude("host", "_run").first(), (pl.len() - 1).alias("n_folded")]
    repairs = {"repaired_ts", "repair_s"} <= set(fold.columns)
    if repairs:
        agg.append(pl.col("repaired_ts").max().alias("_repaired"))
    folded = fold.with_columns(_run=run).group_by("host", "_run").agg(*agg)
    if repairs:
        # a failure alone keeps its own repair (a link's down time, not its span)
        alone = pl.col("n_folded") == 0
        folded = folded.with_columns(
            repaired_ts=pl.when(alone)
            .then(pl.col("repaired_ts"))
            .otherwise(pl.col("_repaired")),
            repair_s=pl.when(~alone & pl.col("_repaired").is_not_null())
            .then((pl.col("_repaired") - pl.col("ts")).dt.total_microseconds() / 1e6)
            .otherwise(pl.col("repair_s")),
        )
        if "repair_h" in fold.columns:
            folded = folded.with_columns(repair_h=pl.col("repair_s") / 3600.0)
    folded = folded.select(*failures.columns, pl.col("n_folded").cast(pl.Int64))
    return pl.concat([folded, keep.cast(folded.schema)]).sort(  # type: ignore[arg-type]
        order or "host", nulls_last=True
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


class PlacedFailures(NamedTuple):
    """What :func:`place_failures` returns; unpacks as ``kept, excluded``.

    Parameters
    ----------
    kept : pl.DataFrame
        Failures inside a service window of their unit.
    excluded : pl.DataFrame
        The others, with ``reason``.
    """

    kept: pl.DataFrame
    excluded: pl.DataFrame


def place_failures(
    failures: pl.DataFrame,
    windows: pl.DataFrame,
    *,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
) -> PlacedFailures:
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
    PlacedFailures
        Named tuple ``(kept, excluded)``. ``excluded`` has ``source_id,
        line_no, ts, host, device, failure_mode, reason``: ``"host not in
        the assets table"``,
        ``"before the unit entered service"``, ``"before tracking began"``,
        ``"between two service windows"`` or ``"after the unit left
        service"``, each with the unit's dates.
    """
    start = as_utc(window_start, "window_start")
    end = as_utc(window_end, "window_end")
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
        return PlacedFailures(kept.drop("_fid"), empty)
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
    return PlacedFailures(kept.drop("_fid"), excluded)


def window_attributes(
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


def with_cause(failures: pl.DataFrame) -> pl.DataFrame:
    """Add ``root_cause``, ``sub_cause`` (of ``failure_mode``) and ``repair_h``."""
    parts = pl.col("failure_mode").str.split_exact("/", 1)
    return failures.with_columns(
        root_cause=parts.struct.field("field_0"),
        sub_cause=pl.coalesce(
            parts.struct.field("field_1"), parts.struct.field("field_0")
        ),
        repair_h=pl.col("repair_s") / 3600.0,
    )


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
        "stamp and the kernel clock, as syslog prints 'kernel: [  5.1] ...') "
        "or from the host's boot time: ingest them again with `relkit ingest "
        "--kind kernel --replace --boot-time BOOT LOG` (BOOT: ISO 8601 with the "
        "zone, or 'btime EPOCH' from /proc/stat), or put HOST.btime (grep btime "
        "/proc/stat > HOST.btime) beside each log. Or ingest the same logs with "
        "wall times: `dmesg -T` or `dmesg "
        "--time-format iso` output, or the syslog/journal copy (/var/log/kern.log, "
        "`journalctl -k -o short-iso`), e.g.\n"
        "    relkit ingest --kind kernel --tz UTC kern.log\n"
        "(library: relkit.ingest.kernel.read_kernel(store, 'kern.log', tz='UTC'))."
    )
