"""Fold storms of failure-log lines into incidents, so MTBF counts failures.

A failing GPU prints many lines: five Xid 119 GSP time-outs in six minutes, an
application's Xid 13 followed by one Xid 45 clean-up line per channel, two Xid 79
plus a "fallen off the bus" line. A flapping NIC port prints a "Link down" and a
"Link up" per flap. :func:`build_incidents` turns the store's ``events`` into one
row per incident, with the taxonomy's category and whether it counts as a failure
(:mod:`relkit.taxonomy`); :func:`count_failures` and :func:`incidents_as_failures`
hand the failures to MTBF.

Rules (all vectorised in polars: sort, gap flags, ``cum_sum`` run ids, as-of joins):

- **Gap window.** Per (host, device, failure_mode), consecutive events whose gap
  is at most ``window_min`` form one incident.
- **Sympathetic codes.** ``gpu/sympathetic`` events (Xid 45, 154) fold into the
  nearest incident of another ``gpu/*`` mode on the same host and device whose
  span comes within ``window_min`` of them (NVIDIA's catalogue for Xid 45: "Not
  Solo: IGNORE (follow other Xid)"); the rest form their own info incidents.
- **An application Xid, then a reset Xid on the same GPU.** Xid 13, 31 (or any
  RESTART_APP code) followed within seconds by Xid 109 (context-switch
  timeout), 46 or 158 on the same host and PCI address gives two incidents:
  the application's (``gpu/application_error``, category ``user``, not
  counted) and the hang (``gpu/hang``, hardware, counted once). The hang is
  counted because NVIDIA's catalogue sends Xid 109 to RESET_GPU whatever
  preceded it: the GPU left service until reset, so it is a GPU failure for
  MTBF even when an application's fault triggered it; the application's Xid
  never counts, with or without a hang after it. Xid 45 and 154 lines that
  follow fold into the nearest of the two (sympathetic codes, above).
- **Xid 171 and 172 detail an Xid 48.** An Xid 171 (uncorrectable DRAM error)
  or 172 (uncorrectable SRAM error) on the same host and PCI address within
  ``window_min`` of an Xid 48 (double-bit ECC error) joins the Xid 48's
  incident as context and names its mode: ``gpu/sram_uncorrectable`` after a
  172, ``gpu/hbm_uncorrectable`` after a 171. One uncorrectable error is one
  failure, as NVIDIA's catalogue describes both codes ("additional to Xid 48
  ... to differentiate DRAM/SRAM"); a 171 or 172 with no Xid 48 near it is an
  incident of its own mode.
- **Codes outside NVIDIA's catalogue.** ``gpu/unknown_xid`` incidents (e.g.
  Xid 999) are kept, category ``unknown``, and counted only with
  ``count_unknown_xid=True`` (``relkit mtbf --count-unknown-xid``).
- **Link flaps.** ``network/link_down`` and ``network/link_up`` of one port
  (host, device, where device is the "pci netdev" key) form one
  ``network/link_down`` incident from its first down to the up after which no
  down follows within ``flap_debounce_min``. Duplicate lines (flag
  ``duplicate_line``, or the same port, mode and time as the line before) are
  counted in ``n_events`` but are not transitions. A port still down at
  ``end_of_log`` gives an open (right-censored) incident. A "Link up" with no
  down before it (e.g. at boot) is not an incident and not a failure.
- **Context lines.** A ``network/cable_module`` event (``mlx5_port_module_event
  ... Cable error``: it names the PCI function, not the netdev) joins the link
  incident of the same host and PCI address (any netdev on it) nearest in time,
  within ``window_min`` of its span; a ``gpu/fallen_off_bus`` event without a
  device (the host-level ``None of the NVIDIA devices were initialized``) joins
  the nearest ``gpu/fallen_off_bus`` incident with a device on the same host,
  within ``window_min``. Context lines are counted in ``n_events`` and
  ``n_context`` but never move an incident's start, end, down time or
  transitions. Context lines with no such incident form their own incidents.
- **Modes outside the taxonomy.** Normalised events (``relkit ingest --kind
  events``, LANL records, any user mode such as ``gpu_memory_uce`` or
  ``hardware/memory``) fold by the gap window like any other mode. A taxonomy
  mode takes its category and counts-as-failure from :mod:`relkit.taxonomy`;
  another mode from the events' own ``category`` / ``counts_as_failure``
  columns when present, else from a ``failure_modes`` table (the store's), else
  the part of the mode before ``/`` when it is a taxonomy category, else
  ``unknown``; it counts as a failure unless a column or the table says not.
- **Rate limiting.** An incident with any event flagged ``rate_limited`` has
  ``lower_bound_count`` True: its raw line count is a lower bound.
- **No wall time.** Events whose ``ts`` is NULL cannot be placed in time and are
  not grouped; :func:`ungrouped_events` returns them (reason ``no_wall_time``),
  with the orphan "Link up" lines (reason ``link_up_without_down``), so every
  input row is either in one incident or listed there.
"""

import math
from collections.abc import Sequence
from datetime import UTC as _UTC
from datetime import datetime, timedelta

import polars as pl

from relkit.errors import InvalidParameterError, SchemaError
from relkit.schema import UTC, require_columns
from relkit.taxonomy import CATEGORIES, FAILURE_MODES

__all__ = [
    "INCIDENT_FLAG",
    "INCIDENT_SCHEMA",
    "build_incidents",
    "count_failures",
    "incidents_as_failures",
    "ungrouped_events",
]

LINK_DOWN = "network/link_down"
LINK_UP = "network/link_up"
SYMPATHETIC = "gpu/sympathetic"
SXID = "nvswitch/sxid"
CABLE = "network/cable_module"
FALLEN = "gpu/fallen_off_bus"
UNKNOWN_XID = "gpu/unknown_xid"
HBM = "gpu/hbm_uncorrectable"
#: Xid codes that add detail to an Xid 48 (NVIDIA's catalogue: "Additional to
#: Xid 48 providing more details on particulars of fault to differentiate
#: DRAM/SRAM"): 171 uncorrectable DRAM error, 172 uncorrectable SRAM error.
XID48_DETAIL = ("171", "172")

#: Columns of the events frame that incident building reads (the store's types).
EVENT_COLUMNS = (
    "ts",
    "host",
    "device",
    "code",
    "failure_mode",
    "severity",
    "flags",
    "source_id",
    "line_no",
)

#: Output schema of :func:`build_incidents`, in column order.
INCIDENT_SCHEMA = pl.Schema(
    {
        "host": pl.String(),
        "device": pl.String(),
        "failure_mode": pl.String(),
        "category": pl.String(),
        "start_ts": UTC,
        "end_ts": UTC,
        "n_events": pl.Int64(),
        "n_sympathetic": pl.Int64(),
        "n_context": pl.Int64(),
        "is_open": pl.Boolean(),
        "lower_bound_count": pl.Boolean(),
        "root_code": pl.String(),
        "counts_as_failure": pl.Boolean(),
        "down_s": pl.Float64(),
        "n_down_transitions": pl.Int64(),
        "severity": pl.String(),
        "system": pl.String(),
        "source_id": pl.Int32(),
        "line_no": pl.Int64(),
    }
)

#: Optional columns of the events frame that give a non-taxonomy mode its
#: category and whether it counts as a failure.
OPTIONAL_EVENT_COLUMNS = ("category", "counts_as_failure")
#: Columns :func:`build_incidents` reads from its ``failure_modes`` argument.
FAILURE_MODE_COLUMNS = ("failure_mode", "category", "counts_as_failure")

_TRUE = ("true", "t", "yes", "y", "1")
_FALSE = ("false", "f", "no", "n", "0")

_UNGROUPED_NO_TIME = "no_wall_time"
_UNGROUPED_ORPHAN_UP = "link_up_without_down"


# -- input checks -------------------------------------------------------------
def _minutes(value: float, name: str) -> timedelta:
    """Check a window in minutes (finite, >= 0) and return it as a timedelta."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        ok = False
    else:
        ok = math.isfinite(value) and value >= 0
    if not ok:
        msg = (
            f"{name} must be a finite number of minutes >= 0, found {value!r}; "
            f"e.g. {name}=10.0."
        )
        raise InvalidParameterError(msg)
    return timedelta(minutes=float(value))


def _flag(name: str) -> pl.Expr:
    """Return True where the comma-separated ``flags`` column holds ``name``."""
    return (
        pl.col("flags")
        .str.contains(rf"(?:^|,)\s*{name}\s*(?:,|$)")
        .fill_null(value=False)
    )


def _as_bool(frame: pl.DataFrame, column: str, *, where: str) -> pl.Expr:
    """Read a yes/no column: Boolean, integer 0/1, or text true/false/yes/no/1/0."""
    dtype = frame.schema[column]
    col = pl.col(column)
    if dtype == pl.Boolean or dtype == pl.Null:
        return col.cast(pl.Boolean)
    if dtype.is_integer():
        bad = frame.filter(~col.is_in([0, 1]) & col.is_not_null())
        if bad.height == 0:
            return col.cast(pl.Boolean)
        found = bad.get_column(column).unique().sort().head(5).to_list()
    elif dtype == pl.String:
        text = col.str.strip_chars().str.to_lowercase()
        bad = frame.filter(
            ~text.is_in([*_TRUE, *_FALSE]) & col.is_not_null() & (text != "")
        )
        if bad.height == 0:
            return (
                pl.when(text.is_in(_TRUE))
                .then(pl.lit(value=True))
                .when(text.is_in(_FALSE))
                .then(pl.lit(value=False))
            )
        found = bad.get_column(column).unique().sort().head(5).to_list()
    else:
        found = [str(dtype)]
    msg = (
        f"{where}: column {column} must hold true/false (Boolean, 0/1 or the "
        f"words true/false/yes/no), found {found}. Fix the input, e.g. "
        f"pl.col('{column}') == 'Y' for a Y/N column."
    )
    raise SchemaError(msg)


def _mode_table(failure_modes: pl.DataFrame | None) -> pl.DataFrame:
    """Check a ``failure_modes`` frame: ``failure_mode, _fm_category, _fm_counts``."""
    where = "build_incidents(failure_modes=...)"
    if failure_modes is None:
        return pl.DataFrame(
            schema={
                "failure_mode": pl.String,
                "_fm_category": pl.String,
                "_fm_counts": pl.Boolean,
            }
        )
    require_columns(failure_modes, list(FAILURE_MODE_COLUMNS), where=where)
    table = failure_modes.select(
        pl.col("failure_mode").cast(pl.String),
        _fm_category=pl.col("category").cast(pl.String),
        _fm_counts=_as_bool(failure_modes, "counts_as_failure", where=where),
    ).filter(pl.col("failure_mode").is_not_null())
    repeated = table.filter(pl.col("failure_mode").is_duplicated())
    if repeated.height:
        names = repeated.get_column("failure_mode").unique().sort().head(5).to_list()
        msg = (
            f"{where}: one row per failure_mode expected, found repeated {names}; "
            "keep one, e.g. failure_modes.unique('failure_mode', keep='first')."
        )
        raise SchemaError(msg)
    return table


def _prepare(events: pl.DataFrame, *, where: str) -> pl.DataFrame:
    """Check the events frame and return the columns used, with a row index."""
    require_columns(events, list(EVENT_COLUMNS), where=where)
    dtype = events.schema["ts"]
    if not isinstance(dtype, pl.Datetime) or dtype.time_zone != "UTC":
        msg = (
            f"{where}: column ts must be a UTC datetime (the store's events.ts), "
            f"found {dtype}. Convert it, e.g. "
            "pl.col('ts').dt.replace_time_zone('UTC') for naive UTC times."
        )
        raise SchemaError(msg)
    system = pl.col("system") if "system" in events.columns else pl.lit(None)
    category = (
        pl.col("category").cast(pl.String)
        if "category" in events.columns
        else pl.lit(None, dtype=pl.String)
    )
    counts = (
        _as_bool(events, "counts_as_failure", where=where)
        if "counts_as_failure" in events.columns
        else pl.lit(None, dtype=pl.Boolean)
    )
    return (
        events.with_row_index("_row")
        .select(
            "_row",
            pl.col("ts").cast(UTC),
            *(pl.col(c).cast(pl.String) for c in ("host", "device", "code")),
            *(pl.col(c).cast(pl.String) for c in ("failure_mode", "severity", "flags")),
            pl.col("source_id").cast(pl.Int32),
            pl.col("line_no").cast(pl.Int64),
            system.cast(pl.String).alias("system"),
            category.alias("_category"),
            counts.alias("_counts_col"),
        )
        .with_columns(_rate=_flag("rate_limited"), _dupflag=_flag("duplicate_line"))
    )


def _seconds(delta: pl.Expr) -> pl.Expr:
    """Convert a Duration expression to float seconds."""
    return delta.dt.total_microseconds().cast(pl.Float64) / 1e6


def _new_run(keys: Sequence[str], gap: timedelta | None) -> pl.Expr:
    """Flag the first row of a run: a new key, or (with ``gap``) a long gap.

    The frame must be sorted by ``keys`` then ``ts``.
    """
    new = pl.int_range(pl.len()) == 0
    for key in keys:
        new = new | pl.col(key).ne_missing(pl.col(key).shift(1))
    if gap is not None:
        new = new | ((pl.col("ts") - pl.col("ts").shift(1)) > gap)
    return new


# -- the three kinds of grouping ----------------------------------------------
_ORDER = ("ts", "source_id", "line_no")


def _gap_runs(frame: pl.DataFrame, window: timedelta) -> pl.DataFrame:
    """Give each row a run id: same (host, device, mode), gaps <= window."""
    keys = ["host", "device", "failure_mode"]
    return frame.sort([*keys, *_ORDER], nulls_last=True).with_columns(
        _run=_new_run(keys, window).cum_sum().cast(pl.Int64)
    )


def _fold_sympathetic(
    generic: pl.DataFrame, symp: pl.DataFrame, window: timedelta
) -> pl.DataFrame:
    """Attach each sympathetic event to the nearest GPU incident within the window.

    Returns ``symp`` with ``_target``: the ``_run`` of that incident, or null.
    """
    port = ["host", "device"]
    incidents = (
        generic.filter(pl.col("failure_mode").str.starts_with("gpu/"))
        .group_by("_run")
        .agg(
            pl.col("host").first(),
            pl.col("device").first(),
            _start=pl.col("ts").min(),
            _end=pl.col("ts").max(),
        )
        .filter(pl.col("device").is_not_null())
        .sort([*port, "_start", "_run"])
        .with_columns(_cm_end=pl.col("_end").cum_max().over(port))
        .with_columns(
            _cm_run=pl.when(pl.col("_end") == pl.col("_cm_end")).then(pl.col("_run"))
        )
        .with_columns(pl.col("_cm_run").forward_fill().over(port))
    )
    symp = symp.sort([*port, *_ORDER], nulls_last=True)
    # backward: among incidents started at or before the event, the one reaching
    # furthest (running max of the end); forward: the first one starting after it
    back = symp.join_asof(
        incidents.select(*port, "_start", "_cm_end", "_cm_run"),
        left_on="ts",
        right_on="_start",
        by=port,
        strategy="backward",
        check_sortedness=False,
    ).drop("_start")
    both = back.join_asof(
        incidents.select(*port, _f_start="_start", _f_run="_run"),
        left_on="ts",
        right_on="_f_start",
        by=port,
        strategy="forward",
        allow_exact_matches=False,
        check_sortedness=False,
    )
    w_s = window.total_seconds()
    d_back = pl.when(pl.col("_cm_end").is_not_null()).then(
        pl.max_horizontal(_seconds(pl.col("ts") - pl.col("_cm_end")), 0.0)
    )
    d_fwd = _seconds(pl.col("_f_start") - pl.col("ts"))
    target = (
        pl.when((d_back <= w_s) & ~(d_fwd < d_back).fill_null(value=False))
        .then(pl.col("_cm_run"))
        .when(d_fwd <= w_s)
        .then(pl.col("_f_run"))
    )
    return both.with_columns(_target=target).drop(
        "_cm_end", "_cm_run", "_f_start", "_f_run"
    )


def _fold_context(
    context: pl.DataFrame, targets: pl.DataFrame, window: timedelta
) -> pl.DataFrame:
    r"""Attach each context event to the nearest target incident of its key.

    ``context`` has ``_row, host, _key, ts``; ``targets`` one row per incident:
    ``host, _key, _run, _start, _end``. Returns ``context`` with ``_target``: the
    ``_run`` at the smallest distance :math:`\max(0, start - t, t - end)` within
    ``window`` (the earlier incident on a tie), or null.
    """
    w_s = window.total_seconds()
    pairs = (
        context.select("_row", "host", "_key", "ts")
        .join(targets, on=["host", "_key"], how="inner")
        .with_columns(
            _dist=pl.max_horizontal(
                _seconds(pl.col("_start") - pl.col("ts")),
                _seconds(pl.col("ts") - pl.col("_end")),
                pl.lit(0.0),
            )
        )
        .filter(pl.col("_dist") <= w_s)
        .sort("_row", "_dist", "_start", "_run")
        .unique("_row", keep="first", maintain_order=True)
        .select("_row", _target="_run")
    )
    return context.join(pairs, on="_row", how="left", maintain_order="left")


def _spans(runs: pl.DataFrame, key: pl.Expr, end: datetime | None) -> pl.DataFrame:
    """One row per run of ``runs``: ``host, _key, _run, _start, _end``.

    An open run (link still down) ends at ``end``, the end of the log.
    """
    is_open = pl.col("_open").any() if "_open" in runs.columns else pl.lit(value=False)
    return (
        runs.filter(pl.col("_run").is_not_null())
        .with_columns(_key=key)
        .group_by("_run")
        .agg(
            pl.col("host").first(),
            pl.col("_key").first(),
            _start=pl.col("ts").min(),
            _end=pl.when(is_open)
            .then(pl.lit(end, dtype=UTC))
            .otherwise(pl.col("ts").max()),
        )
    )


def _link_runs(links: pl.DataFrame, debounce: timedelta) -> pl.DataFrame:
    """Run the link state machine of every port, without a loop over rows.

    Adds ``_dup`` (a duplicate line, not a transition), ``_trans`` (a down
    transition), ``_dur_s`` (seconds down, on the up that ends a down period),
    ``_run`` (incident id; null for an up with no down before it) and ``_open``.
    """
    port = ["host", "device"]
    is_down = pl.col("failure_mode") == LINK_DOWN
    links = links.sort([*port, *_ORDER], nulls_last=True).with_columns(
        _dup=~_new_run(port, None)
        & (pl.col("failure_mode") == pl.col("failure_mode").shift(1))
        & ((pl.col("ts") == pl.col("ts").shift(1)) | pl.col("_dupflag"))
    )
    prev = pl.col("failure_mode").shift(1).over(port)
    states = (
        links.filter(~pl.col("_dup"))
        .with_columns(
            _trans=is_down & (prev.is_null() | (prev == LINK_UP)),
            _recovery=~is_down & (prev == LINK_DOWN),
        )
        .with_columns(
            _last_rec=pl.when("_recovery").then(pl.col("ts")).forward_fill().over(port),
            _down_from=pl.when("_trans").then(pl.col("ts")).forward_fill().over(port),
        )
        .with_columns(
            _start=pl.col("_trans")
            & (
                pl.col("_last_rec").is_null()
                | ((pl.col("ts") - pl.col("_last_rec")) > debounce)
            ),
            _dur_s=pl.when("_recovery").then(
                _seconds(pl.col("ts") - pl.col("_down_from"))
            ),
        )
        .with_columns(
            _seq=pl.col("_start").cum_sum().over(port),
            _gseq=pl.col("_start").cum_sum().cast(pl.Int64),
        )
        .with_columns(
            _open=is_down.last().over([*port, "_seq"]),
            _end=pl.col("ts").filter("_recovery").max().over([*port, "_seq"]),
        )
        .with_columns(
            _member=(pl.col("_seq") > 0)
            & (pl.col("_open") | (pl.col("ts") <= pl.col("_end")).fill_null(False))
        )
        .select("_row", "_trans", "_dur_s", "_gseq", "_member", "_open")
    )
    joined = links.join(states, on="_row", how="left", maintain_order="left")
    # a duplicate line belongs where the line it repeats belongs
    # duplicates keep null _trans/_dur_s: they are no transition and no duration
    return joined.with_columns(
        pl.col(c).forward_fill().over(port) for c in ("_gseq", "_member", "_open")
    ).with_columns(
        _trans=pl.col("_trans").fill_null(value=False),
        _run=pl.when("_member").then(pl.col("_gseq")),
    )


def _assign(
    timed: pl.DataFrame,
    window: timedelta,
    debounce: timedelta,
    end: datetime | None,
) -> pl.DataFrame:
    """Give every event with wall time its incident (``_part``, ``_run``)."""
    mode = pl.col("failure_mode")
    is_link = mode.is_in([LINK_DOWN, LINK_UP]).fill_null(value=False)
    is_symp = (mode == SYMPATHETIC).fill_null(value=False)
    is_cable = (mode == CABLE).fill_null(value=False)
    is_host_gpu = ((mode == FALLEN) & pl.col("device").is_null()).fill_null(value=False)
    is_detail = (
        pl.col("code").is_in(XID48_DETAIL) & mode.str.starts_with("gpu/")
    ).fill_null(value=False)
    extra = {
        "_refine": pl.lit(value=False),
        "_folded": pl.lit(value=False),
        "_context": pl.lit(value=False),
        "_dup": pl.lit(value=False),
        "_trans": pl.lit(value=False),
        "_dur_s": pl.lit(None, dtype=pl.Float64),
        "_open": pl.lit(value=False),
    }
    generic = _gap_runs(
        timed.filter(~is_link & ~is_symp & ~is_cable & ~is_host_gpu & ~is_detail),
        window,
    )
    # Xid 171/172 detail the Xid 48 of the same GPU: they join its incident and
    # name its mode (DRAM or SRAM) instead of counting a second failure
    detail = _fold_context(
        timed.filter(is_detail).with_columns(_key=pl.col("device")),
        _spans(
            generic.filter((pl.col("failure_mode") == HBM) & (pl.col("code") == "48")),
            pl.col("device"),
            end,
        ),
        window,
    )
    # a 171/172 with no Xid 48 near it is an incident of its own mode, which
    # sympathetic lines may join like any other GPU incident
    lone = _gap_runs(
        detail.filter(pl.col("_target").is_null()).select(timed.columns), window
    ).with_columns(pl.col("_run") + (generic["_run"].max() or 0))
    generic = pl.concat([generic, lone], how="vertical_relaxed")
    symp = _fold_sympathetic(generic, timed.filter(is_symp), window)
    folded = symp.filter(pl.col("_target").is_not_null()).with_columns(
        _run=pl.col("_target"), **{**extra, "_folded": pl.lit(value=True)}
    )
    links = _link_runs(timed.filter(is_link), debounce)
    # context lines: a cable event joins its port's link incident (same PCI
    # address, any netdev); a host-level GPU line joins a device's GPU incident
    pci = pl.col("device").str.split(" ").list.first()
    cable = _fold_context(
        timed.filter(is_cable).with_columns(_key=pl.col("device")),
        _spans(links, pci, end),
        window,
    )
    host_gpu = _fold_context(
        timed.filter(is_host_gpu).with_columns(_key=pl.lit("")),
        _spans(
            generic.filter(
                (pl.col("failure_mode") == FALLEN) & pl.col("device").is_not_null()
            ),
            pl.lit(""),
            end,
        ),
        window,
    )
    as_context = {
        **extra,
        "_folded": pl.lit(value=True),
        "_context": pl.lit(value=True),
    }
    to_gpu = host_gpu.filter(pl.col("_target").is_not_null()).with_columns(
        _run=pl.col("_target"), **as_context
    )
    to_link = cable.filter(pl.col("_target").is_not_null()).with_columns(
        _run=pl.col("_target"), **as_context
    )
    to_48 = detail.filter(pl.col("_target").is_not_null()).with_columns(
        _run=pl.col("_target"), **{**as_context, "_refine": pl.lit(value=True)}
    )
    alone = pl.concat(
        [
            symp.filter(pl.col("_target").is_null()),
            cable.filter(pl.col("_target").is_null()),
            host_gpu.filter(pl.col("_target").is_null()),
        ],
        how="diagonal",
    )
    solo = _gap_runs(alone, window)
    columns = [*timed.columns, "_run", *extra]
    return pl.concat(
        [
            pl.concat(
                [generic.with_columns(**extra), folded, to_gpu, to_48],
                how="diagonal",
            )
            .with_columns(_part=pl.lit(0, pl.Int8))
            .select(*columns, "_part"),
            solo.with_columns(**extra, _part=pl.lit(1, pl.Int8)).select(
                *columns, "_part"
            ),
            pl.concat(
                [
                    links.with_columns(
                        _folded=pl.lit(value=False), _context=pl.lit(value=False)
                    ),
                    to_link,
                ],
                how="diagonal",
            )
            .with_columns(_part=pl.lit(2, pl.Int8))
            .select(*columns, "_part"),
        ],
        how="vertical_relaxed",
    )


def _end_of_log(timed: pl.DataFrame, end_of_log: datetime | None) -> datetime | None:
    """Check ``end_of_log`` (aware, not before the last event) or default it."""
    last = timed["ts"].max()
    if end_of_log is None:
        return last
    if end_of_log.tzinfo is None:
        msg = (
            f"end_of_log must carry a time zone, found naive {end_of_log}; "
            "e.g. datetime(2025, 5, 2, 12, tzinfo=datetime.UTC)."
        )
        raise InvalidParameterError(msg)
    end = end_of_log.astimezone(_UTC)
    if last is not None and end < last:
        msg = (
            f"end_of_log {end:%Y-%m-%dT%H:%M:%S}Z is before the last event "
            f"({last:%Y-%m-%dT%H:%M:%S}Z); pass the time the log ends "
            "(its last line), or filter the events first."
        )
        raise InvalidParameterError(msg)
    return end


def build_incidents(
    events: pl.DataFrame,
    *,
    window_min: float = 10.0,
    flap_debounce_min: float = 5.0,
    end_of_log: datetime | None = None,
    failure_modes: pl.DataFrame | None = None,
    count_unknown_xid: bool = False,
) -> pl.DataFrame:
    r"""Fold failure-log events into incidents.

    Parameters
    ----------
    events : pl.DataFrame
        The store's ``events`` table (or rows of it): ``ts`` (UTC datetime, may be
        null), ``host``, ``device``, ``code``, ``failure_mode``, ``severity``,
        ``flags`` (comma-separated, e.g. ``"rate_limited,duplicate_line"``),
        ``source_id``, ``line_no``; ``system`` is carried when present.
        Optional ``category`` (text) and ``counts_as_failure`` (Boolean, 0/1
        or true/false text) give modes outside the taxonomy their category
        and whether they count (ignored for taxonomy modes).
    window_min : float, default 10.0
        Largest gap in minutes between consecutive events of one incident, and
        how near a sympathetic Xid must be to the incident it folds into (>= 0).
    flap_debounce_min : float, default 5.0
        Link flaps: a "Link down" within this many minutes of the port's last
        recovery continues the same incident (>= 0).
    end_of_log : datetime, optional
        End of observation (time-zone aware), where open link incidents are
        censored. Defaults to the last event's ``ts``; pass the log's last line
        time when it is later (a trailing line that is not an event).
    failure_modes : pl.DataFrame, optional
        Category and counts-as-failure of modes outside the taxonomy, one row
        per ``failure_mode`` with ``category`` and ``counts_as_failure``
        (Boolean), e.g. the store's ``failure_modes`` table
        (``store.table("failure_modes")``). Used where the events carry no
        ``category`` / ``counts_as_failure`` of their own.
    count_unknown_xid : bool, default False
        Count ``gpu/unknown_xid`` incidents (Xid codes outside NVIDIA's
        catalogue) as failures. By default they are kept, category
        ``unknown``, and not counted (:mod:`relkit.taxonomy`).

    Returns
    -------
    pl.DataFrame
        One row per incident, sorted by ``host, device, failure_mode,
        start_ts``, columns as :data:`INCIDENT_SCHEMA`:

        - ``host``, ``device``, ``failure_mode``: the incident's key (link
          incidents have mode ``network/link_down``);
        - ``category``, ``counts_as_failure``: from :mod:`relkit.taxonomy`
          (``nvswitch/sxid`` counts only when an event's severity is fatal).
          A mode outside the taxonomy takes, in this order, the first non-null
          value of the incident's own events' ``category`` /
          ``counts_as_failure`` columns, the ``failure_modes`` row of its mode,
          for the category the part of the mode before ``/`` when that is one
          of :data:`relkit.taxonomy.CATEGORIES` (``hardware/memory`` →
          ``hardware``), and last ``"unknown"`` and True;
        - ``start_ts``, ``end_ts`` (UTC): first and last event, folded
          sympathetic ones included, context lines not; ``end_ts`` is null for
          an open incident;
        - ``n_events``: raw lines, folded, context and duplicate lines included;
        - ``n_sympathetic``: ``gpu/sympathetic`` lines in the incident;
        - ``n_context``: context lines attached to it (a cable/module event of
          the link's PCI address; a host-level GPU line), see Notes;
        - ``is_open``: a link still down at ``end_of_log`` (right-censored);
        - ``lower_bound_count``: an event was flagged ``rate_limited``;
        - ``root_code``: the first code of the incident's own mode (of a
          folded sympathetic line if none; never of a context line);
        - ``down_s``: link incidents only, seconds down summed over down→up
          pairs, plus ``end_of_log`` − last down when open (a lower bound);
        - ``n_down_transitions``: link incidents only, up→down changes
          (duplicate lines excluded);
        - ``severity``: a fatal severity if any event has one, else the first
          of a line that is not context;
        - ``system``: the first non-null ``system``;
        - ``source_id``, ``line_no``: the incident's first own event.

    Raises
    ------
    SchemaError
        If a column is missing, ``ts`` is not a UTC datetime, a
        ``counts_as_failure`` column holds something other than true/false, or
        ``failure_modes`` lacks a column or repeats a mode.
    InvalidParameterError
        If a window is negative or not finite, or ``end_of_log`` is naive or
        before the last event.

    Notes
    -----
    Events with a null ``ts`` are not grouped, and neither is a "Link up" with
    no down before it on its port; :func:`ungrouped_events` lists both, so
    :math:`\sum n\_events + |\mathrm{ungrouped}| = |\mathrm{events}|`.
    A sympathetic event folds into the incident of another ``gpu/*`` mode on the
    same host and device at the smallest distance
    :math:`\max(0, t-\mathrm{end}, \mathrm{start}-t) \le` ``window_min``
    (the earlier incident on a tie). Context lines attach the same way, without
    extending the incident: a ``network/cable_module`` event to the link
    incident of the same host whose port (``"pci netdev"``) has its PCI address
    (an open incident spans to ``end_of_log``), a ``gpu/fallen_off_bus`` event
    without a device to a ``gpu/fallen_off_bus`` incident with one on the same
    host. C05 (``cases/README.md``): the ``Cable error, High Temperature`` line
    at 07:59:58.41 is context of host-a's 08:00:01.1-08:00:47.5 flap incident.

    References
    ----------
    .. [1] NVIDIA, "Xid Errors" (Xid 45: "Not Solo: IGNORE (follow other Xid)"),
       https://docs.nvidia.com/deploy/xid-errors/

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> t = [datetime(2025, 2, 23, 18, 35, s, tzinfo=UTC) for s in (31, 32, 32)]
    >>> ev = pl.DataFrame(
    ...     {
    ...         "ts": t,
    ...         "host": "n1",
    ...         "device": "0000:61:00",
    ...         "code": ["13", "45", "45"],
    ...         "failure_mode": ["gpu/application_error"] + ["gpu/sympathetic"] * 2,
    ...         "severity": None,
    ...         "flags": None,
    ...         "source_id": 1,
    ...         "line_no": [13, 14, 15],
    ...     }
    ... )
    >>> inc = build_incidents(ev)
    >>> inc.select("failure_mode", "category", "n_events", "n_sympathetic").rows()
    [('gpu/application_error', 'user', 3, 2)]

    A mode outside the taxonomy (a normalised events table) folds the same way:

    >>> t = [datetime(2025, 3, 1, 0, m, tzinfo=UTC) for m in (0, 4, 30)]
    >>> ev = ev.head(0).vstack(
    ...     pl.DataFrame(
    ...         {
    ...             "ts": t,
    ...             "host": "n1",
    ...             "device": None,
    ...             "code": None,
    ...             "failure_mode": "hardware/memory",
    ...             "severity": None,
    ...             "flags": None,
    ...             "source_id": 1,
    ...             "line_no": [2, 3, 4],
    ...         },
    ...         schema=ev.schema,
    ...     )
    ... )
    >>> build_incidents(ev).select("category", "n_events", "counts_as_failure").rows()
    [('hardware', 2, True), ('hardware', 1, True)]
    """
    window = _minutes(window_min, "window_min")
    debounce = _minutes(flap_debounce_min, "flap_debounce_min")
    prepared = _prepare(events, where="build_incidents")
    modes = _mode_table(failure_modes)
    timed = prepared.filter(pl.col("ts").is_not_null())
    end = _end_of_log(timed, end_of_log)
    if timed.height == 0:
        return pl.DataFrame(schema=INCIDENT_SCHEMA)
    rows = _assign(timed, window, debounce, end).filter(pl.col("_run").is_not_null())
    own = ~pl.col("_folded")
    span = ~pl.col("_context")
    fatal = pl.col("severity").str.to_lowercase() == "fatal"
    is_link = pl.col("_part") == 2
    grouped = (
        rows.sort("_part", "_run", *_ORDER)
        .group_by("_part", "_run", maintain_order=True)
        .agg(
            pl.col("host").filter(span).first(),
            pl.col("device").filter(span).first(),
            failure_mode=pl.coalesce(
                pl.col("failure_mode").filter("_refine").last(),
                pl.col("failure_mode").filter(own).first(),
            ),
            start_ts=pl.col("ts").filter(span).min(),
            _last=pl.col("ts").filter(span).max(),
            n_events=pl.len().cast(pl.Int64),
            n_sympathetic=(pl.col("failure_mode") == SYMPATHETIC).sum().cast(pl.Int64),
            n_context=pl.col("_context").sum().cast(pl.Int64),
            is_open=pl.col("_open").filter(span).last(),
            lower_bound_count=pl.col("_rate").any(),
            root_code=pl.coalesce(
                pl.col("code").filter(own).drop_nulls().first(),
                pl.col("code").filter(span).drop_nulls().first(),
            ),
            _fatal=fatal.any(),
            severity=pl.coalesce(
                pl.col("severity").filter(fatal).first(),
                pl.col("severity").filter(span).drop_nulls().first(),
                pl.col("severity").drop_nulls().first(),
            ),
            system=pl.col("system").drop_nulls().first(),
            _ev_category=pl.col("_category").filter(own).drop_nulls().first(),
            _ev_counts=pl.col("_counts_col").filter(own).drop_nulls().first(),
            source_id=pl.col("source_id").filter(own).first(),
            line_no=pl.col("line_no").filter(own).first(),
            _closed_s=pl.col("_dur_s").sum(),
            _trans=pl.col("_trans").sum().cast(pl.Int64),
            _last_down=pl.col("ts").filter("_trans").max(),
        )
    )
    censored_s = _seconds(pl.lit(end, dtype=UTC) - pl.col("_last_down"))
    taxonomy = FAILURE_MODES.select(
        "failure_mode", "category", _counts="counts_as_failure"
    )
    prefix = pl.col("failure_mode").str.extract(r"^([^/]+)/", 1)
    out = (
        grouped.join(taxonomy, on="failure_mode", how="left")
        .join(modes, on="failure_mode", how="left")
        .with_columns(
            is_open=is_link & pl.col("is_open"),
            end_ts=pl.when(is_link & pl.col("is_open"))
            .then(pl.lit(None, dtype=UTC))
            .otherwise(pl.col("_last")),
            category=pl.coalesce(
                "category",
                "_ev_category",
                "_fm_category",
                pl.when(prefix.is_in(CATEGORIES)).then(prefix),
                pl.lit("unknown"),
            ),
            counts_as_failure=pl.when(pl.col("failure_mode") == SXID)
            .then(pl.col("_fatal").fill_null(value=False))
            .when(pl.col("failure_mode") == UNKNOWN_XID)
            .then(pl.lit(count_unknown_xid))
            .otherwise(
                pl.coalesce("_counts", "_ev_counts", "_fm_counts", pl.lit(value=True))
            ),
            down_s=pl.when(is_link).then(
                pl.col("_closed_s")
                + pl.when(pl.col("is_open")).then(censored_s).otherwise(0.0)
            ),
            n_down_transitions=pl.when(is_link).then(pl.col("_trans")),
        )
        .select(INCIDENT_SCHEMA.names())
        .cast(dict(INCIDENT_SCHEMA))
        .sort("host", "device", "failure_mode", "start_ts", nulls_last=True)
    )
    return out


def ungrouped_events(
    events: pl.DataFrame, *, flap_debounce_min: float = 5.0
) -> pl.DataFrame:
    """List the events :func:`build_incidents` puts in no incident, with the reason.

    Parameters
    ----------
    events : pl.DataFrame
        The events frame given to :func:`build_incidents` (same columns).
    flap_debounce_min : float, default 5.0
        As in :func:`build_incidents` (it decides which "Link up" lines end an
        incident).

    Returns
    -------
    pl.DataFrame
        The ungrouped rows with the input's columns plus ``reason``:
        ``"no_wall_time"`` (null ``ts``: the line's time is unknown, e.g. a
        ``dmesg`` stamp with no boot time in the log) or
        ``"link_up_without_down"`` (a "Link up" with no earlier down on its port,
        such as at boot: a recovery marker of nothing, not a failure). Sorted by
        ``source_id, line_no``.

    Raises
    ------
    SchemaError
        If a column is missing or ``ts`` is not a UTC datetime.
    InvalidParameterError
        If ``flap_debounce_min`` is negative or not finite.

    Examples
    --------
    >>> import polars as pl
    >>> from datetime import datetime, UTC
    >>> ev = pl.DataFrame(
    ...     {
    ...         "ts": [None, datetime(2025, 5, 2, 9, tzinfo=UTC)],
    ...         "host": ["a", "c"],
    ...         "device": ["0000:3b:00", "0000:1d:00 enp29s0np0"],
    ...         "code": ["79", None],
    ...         "failure_mode": ["gpu/fallen_off_bus", "network/link_up"],
    ...         "severity": None,
    ...         "flags": ["no_wall_time", None],
    ...         "source_id": 1,
    ...         "line_no": [2, 15],
    ...     }
    ... )
    >>> ungrouped_events(ev).select("line_no", "reason").rows()
    [(2, 'no_wall_time'), (15, 'link_up_without_down')]
    """
    debounce = _minutes(flap_debounce_min, "flap_debounce_min")
    prepared = _prepare(events, where="ungrouped_events")
    no_time = prepared.filter(pl.col("ts").is_null()).select(
        "_row", reason=pl.lit(_UNGROUPED_NO_TIME)
    )
    links = prepared.filter(
        pl.col("ts").is_not_null()
        & pl.col("failure_mode").is_in([LINK_DOWN, LINK_UP]).fill_null(value=False)
    )
    orphans = (
        _link_runs(links, debounce)
        .filter(pl.col("_run").is_null())
        .select("_row", reason=pl.lit(_UNGROUPED_ORPHAN_UP))
    )
    reasons = pl.concat([no_time, orphans])
    return (
        events.with_row_index("_row")
        .join(reasons, on="_row", how="inner")
        .sort("source_id", "line_no", "_row", nulls_last=True)
        .drop("_row")
    )


def count_failures(
    incidents: pl.DataFrame, *, by: Sequence[str] = ("failure_mode",)
) -> pl.DataFrame:
    """Count the incidents that are failures, per group.

    Parameters
    ----------
    incidents : pl.DataFrame
        Output of :func:`build_incidents` (at least ``counts_as_failure``,
        ``n_events``, ``lower_bound_count`` and the ``by`` columns).
    by : sequence of str, default ("failure_mode",)
        Grouping columns, e.g. ``("category",)`` or ``("host", "failure_mode")``;
        ``()`` for one total.

    Returns
    -------
    pl.DataFrame
        One row per group with at least one failure, sorted by ``by``: the ``by``
        columns, ``n_failures`` (incidents, Int64), ``n_events`` (the raw lines
        behind them, Int64) and ``n_lower_bound`` (failures whose line count is a
        lower bound, Int64). With ``by=()``, one row (zeros when none).

    Raises
    ------
    SchemaError
        If a column is missing.

    Examples
    --------
    >>> import polars as pl
    >>> inc = pl.DataFrame(
    ...     {
    ...         "failure_mode": ["gpu/gsp_firmware", "gpu/application_error"],
    ...         "counts_as_failure": [True, False],
    ...         "n_events": [5, 13],
    ...         "lower_bound_count": [True, False],
    ...     }
    ... )
    >>> count_failures(inc).rows()
    [('gpu/gsp_firmware', 1, 5, 1)]
    """
    by = list(dict.fromkeys(by))
    require_columns(
        incidents,
        [*by, "counts_as_failure", "n_events", "lower_bound_count"],
        where="count_failures",
    )
    failures = incidents.filter(pl.col("counts_as_failure").fill_null(value=False))
    aggs = [
        pl.len().cast(pl.Int64).alias("n_failures"),
        pl.col("n_events").sum().cast(pl.Int64),
        pl.col("lower_bound_count").sum().cast(pl.Int64).alias("n_lower_bound"),
    ]
    if not by:
        return failures.select(aggs)
    return failures.group_by(by).agg(aggs).sort(by, nulls_last=True)


#: ``flags`` of the failure rows made from incidents (already de-duplicated).
INCIDENT_FLAG = "incident"


def incidents_as_failures(incidents: pl.DataFrame) -> pl.DataFrame:
    """Turn failure incidents into the failure rows MTBF reads (one per incident).

    Parameters
    ----------
    incidents : pl.DataFrame
        Output of :func:`build_incidents`.

    Returns
    -------
    pl.DataFrame
        One row per incident with ``counts_as_failure``, in the shape of the
        store's ``events`` that :func:`relkit.answers.mtbf_by` counts: ``ts``
        (= ``start_ts``, UTC), ``host``, ``device``, ``system``,
        ``failure_mode``, ``code`` (= ``root_code``), ``severity``,
        ``repair_s``, ``repaired_ts``, ``source_id``, ``line_no`` and ``flags``
        (:data:`INCIDENT_FLAG`, so a row is never folded again). Sorted by
        ``ts, host``.

    Raises
    ------
    SchemaError
        If a column of :data:`INCIDENT_SCHEMA` is missing.

    Notes
    -----
    ``repair_s`` is known only for closed link incidents (``down_s``) and
    ``repaired_ts`` is then their ``end_ts``. For the other modes the log shows
    when a storm of lines ended, not when the unit was repaired, so both are
    null (MTTR ignores nulls) rather than the seconds-long span of the storm; an
    open incident's down time is a lower bound, so it is null too.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> t0 = datetime(2025, 5, 2, 8, 0, 1, tzinfo=UTC)
    >>> inc = pl.DataFrame(
    ...     {
    ...         "start_ts": [t0],
    ...         "end_ts": [datetime(2025, 5, 2, 8, 0, 47, tzinfo=UTC)],
    ...         "host": "host-a",
    ...         "device": "0000:5c:00 enp92s0np0",
    ...         "system": None,
    ...         "failure_mode": "network/link_down",
    ...         "root_code": None,
    ...         "severity": None,
    ...         "counts_as_failure": True,
    ...         "is_open": False,
    ...         "down_s": 18.9,
    ...         "source_id": 1,
    ...         "line_no": 2,
    ...     }
    ... )
    >>> incidents_as_failures(inc).select("failure_mode", "repair_s").rows()
    [('network/link_down', 18.9)]
    """
    needed = [
        "start_ts",
        "end_ts",
        "host",
        "device",
        "system",
        "failure_mode",
        "root_code",
        "severity",
        "counts_as_failure",
        "is_open",
        "down_s",
        "source_id",
        "line_no",
    ]
    require_columns(incidents, needed, where="incidents_as_failures")
    closed_link = (pl.col("failure_mode") == LINK_DOWN) & ~pl.col("is_open").fill_null(
        value=False
    )
    return (
        incidents.filter(pl.col("counts_as_failure").fill_null(value=False))
        .select(
            ts=pl.col("start_ts").cast(UTC),
            host=pl.col("host").cast(pl.String),
            device=pl.col("device").cast(pl.String),
            system=pl.col("system").cast(pl.String),
            failure_mode=pl.col("failure_mode").cast(pl.String),
            code=pl.col("root_code").cast(pl.String),
            severity=pl.col("severity").cast(pl.String),
            repair_s=pl.when(closed_link).then(pl.col("down_s").cast(pl.Float64)),
            repaired_ts=pl.when(closed_link).then(pl.col("end_ts").cast(UTC)),
            source_id=pl.col("source_id").cast(pl.Int32),
            line_no=pl.col("line_no").cast(pl.Int64),
            flags=pl.lit(INCIDENT_FLAG),
        )
        .sort("ts", "host", nulls_last=True)
    )
