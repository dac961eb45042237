"""Adapters for public failure datasets: the LANL 1996-2005 failure records.

The LANL file (LA-UR-05-7318) lists one node outage per line with local
America/Denver times and Excel-mangled month dates for each node's install,
production and decommission. :func:`read_lanl` turns it into ``events`` (one per
record) and ``assets`` (one per node, including the nodes that never failed).
"""

import json
import re
from collections import Counter
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import polars as pl

from relkit.errors import IngestError
from relkit.ingest._common import (
    IngestResult,
    Parsed,
    file_format,
    guess_kind,
    ingest,
    localize,
    read_csv_strings,
    reject_format,
    rejects_frame,
)
from relkit.store import Store

__all__ = [
    "DOWNTIME_TOLERANCE_MIN",
    "LANL_COLUMNS",
    "LANL_TZ",
    "parse_lanl_month",
    "read_lanl",
]

#: Local time zone of the LANL timestamps (Los Alamos, New Mexico).
LANL_TZ = "America/Denver"

#: Minutes Down Time may differ from Prob Fixed - Prob Started before a record is
#: flagged ``downtime_mismatch``: the 60 min of a DST change plus 1 min rounding.
DOWNTIME_TOLERANCE_MIN = 61

#: Header of the LANL CSV, in file order.
LANL_COLUMNS = (
    "System",
    "machine type",
    "nodes",
    "procstot",
    "procsinnode",
    "nodenum",
    "nodenumz",
    "node install",
    "node prod",
    "node decom",
    "fru type",
    "mem",
    "cputype",
    "memtype",
    "num intercon",
    "purpose",
    "Prob Started",
    "Prob Fixed",
    "Down Time",
    "Facilities",
    "Hardware",
    "Human Error",
    "Network",
    "Undetermined",
    "Software",
    "Same Event",
)
_ROOTS = (
    "Facilities",
    "Hardware",
    "Human Error",
    "Network",
    "Undetermined",
    "Software",
)
#: Node attributes kept in ``assets.attrs`` (JSON key -> LANL column).
_ATTRS = {
    "machine_type": "machine type",
    "procsinnode": "procsinnode",
    "mem": "mem",
    "fru_type": "fru type",
    "purpose": "purpose",
    "nodenumz": "nodenumz",
    "node_install": "node install",
    "node_prod": "node prod",
    "node_decom": "node decom",
}
_MONTHS = {
    m: i
    for i, m in enumerate(
        (
            "jan",
            "feb",
            "mar",
            "apr",
            "may",
            "jun",
            "jul",
            "aug",
            "sep",
            "oct",
            "nov",
            "dec",
        ),
        start=1,
    )
}
_TIME_FORMAT = "%m/%d/%Y %H:%M"
_T = TypeVar("_T")
#: window(system, host, prod, decom, first record, last record) -> asset row parts
_Window = Callable[
    [str, str, str | None, str | None, datetime | None, datetime | None], dict[str, Any]
]


def parse_lanl_month(text: str | None) -> tuple[int, int] | str | None:
    """Parse a LANL ``node install/prod/decom`` value (Excel-mangled month dates).

    Parameters
    ----------
    text : str or None
        The cell text.

    Returns
    -------
    tuple of (int, int), str or None
        ``(year, month)`` for a date; the literal ``"current"`` or
        ``"before tracking"``; None for an empty cell or text that is none of these.

    Notes
    -----
    Two formats occur because Excel re-read ``YY-Mon`` as day-month: ``Nov-96`` is
    Mon-YY (1996-11; YY >= 50 is 19YY, else 20YY), ``2-Mar`` is Y-Mon with the year
    200Y (2002-03). All LANL systems went into production 1996-2005.

    Examples
    --------
    >>> (
    ...     parse_lanl_month("Nov-96"),
    ...     parse_lanl_month("2-Mar"),
    ...     parse_lanl_month("current"),
    ... )
    ((1996, 11), (2002, 3), 'current')
    >>> parse_lanl_month("before tracking"), parse_lanl_month(""), parse_lanl_month("x")
    ('before tracking', None, None)
    """
    if text is None:
        return None
    t = text.strip().lower()
    if t in ("current", "before tracking"):
        return t
    m = re.fullmatch(r"([a-z]{3})-(\d{2})", t)
    if m and m.group(1) in _MONTHS:
        yy = int(m.group(2))
        return (1900 + yy if yy >= 50 else 2000 + yy, _MONTHS[m.group(1)])
    m = re.fullmatch(r"(\d{1,2})-([a-z]{3})", t)
    if m and m.group(2) in _MONTHS:
        return (2000 + int(m.group(1)), _MONTHS[m.group(2)])
    return None


def _next_month(ym: tuple[int, int]) -> tuple[int, int]:
    y, m = ym
    return (y + 1, 1) if m == 12 else (y, m + 1)


def _month_of(ts: datetime) -> tuple[int, int]:
    return (ts.year, ts.month)


def _mode(counter: Counter[_T]) -> _T | None:
    """Most common value; ties go to the value seen first (Counter keeps order)."""
    return max(counter, key=lambda v: counter[v]) if counter else None


def _slug(expr: pl.Expr) -> pl.Expr:
    return (
        expr.str.to_lowercase().str.replace_all(r"[^a-z0-9]+", "_").str.strip_chars("_")
    )


def _events(path: Path) -> tuple[pl.DataFrame, Any]:
    """Read, validate and map the LANL records; return records with ``reason``."""
    fmt = file_format(path)
    if fmt != "text":
        reject_format(path, fmt, "lanl")
    table = read_csv_strings(path)
    if missing := [c for c in LANL_COLUMNS if c not in table.columns]:
        guess = guess_kind(table.columns)
        hint = f" It looks like {guess} data: use --kind {guess}." if guess else ""
        msg = (
            f"missing LANL column(s) {missing}. Expected the LA-UR-05-7318 header "
            f"{list(LANL_COLUMNS)}; found {table.columns}.{hint}"
        )
        raise IngestError(path, msg, line_no=1)
    names = {f"c{i}": c for i, c in enumerate(table.columns) if c in LANL_COLUMNS}
    f = table.frame.select(*names, "line_no", "n_fields", "record").rename(names)
    f = f.with_columns(pl.col(pl.String).str.strip_chars().replace("", None))
    started = pl.col("Prob Started").str.to_datetime(_TIME_FORMAT, strict=False)
    fixed = pl.col("Prob Fixed").str.to_datetime(_TIME_FORMAT, strict=False)
    ts, ts_flag = localize(started, LANL_TZ)
    rep, rep_flag = localize(fixed, LANL_TZ)
    filled = [pl.col(c).is_not_null().cast(pl.Int32) for c in _ROOTS]
    f = f.with_columns(
        started=started,
        fixed=fixed,
        ts=ts,
        repaired_ts=rep,
        ts_flag=ts_flag,
        rep_flag=rep_flag,
        down_min=pl.col("Down Time").cast(pl.Float64, strict=False),
        n_roots=pl.sum_horizontal(filled),
        root=pl.coalesce(
            [pl.when(pl.col(c).is_not_null()).then(pl.lit(c)) for c in _ROOTS]
        ),
        sub=pl.coalesce([pl.col(c) for c in _ROOTS]),
    )

    f = f.with_columns(_resolve_ambiguous())

    def unparseable(col: str) -> pl.Expr:
        return (
            pl.when(pl.col(col).is_null())
            .then(pl.lit(f"empty {col!r}"))
            .otherwise(
                pl.format(
                    f"unparseable time in column {col!r}: '{{}}' "
                    "(expected M/D/YYYY h:mm)",
                    col,
                )
            )
        )

    roots_text = pl.concat_str(
        [
            pl.when(pl.col(c).is_not_null()).then(pl.format(f"{c}='{{}}'", c))
            for c in _ROOTS
        ],
        separator=", ",
        ignore_nulls=True,
    )
    reasons = [
        pl.when(pl.col("n_fields") != len(table.columns)).then(
            pl.format(f"expected {len(table.columns)} fields, found {{}}", "n_fields")
        ),
        pl.when(~pl.col("System").fill_null("").str.contains(r"^\d+$")).then(
            pl.format(
                "bad System: '{}' (expected a whole number)",
                pl.col("System").fill_null(""),
            )
        ),
        pl.when(
            pl.col("nodenum").is_not_null() & ~pl.col("nodenum").str.contains(r"^\d+$")
        ).then(pl.format("bad nodenum: '{}' (expected a whole number)", "nodenum")),
        pl.when(pl.col("started").is_null()).then(unparseable("Prob Started")),
        pl.when(pl.col("fixed").is_null()).then(unparseable("Prob Fixed")),
        pl.when(pl.col("down_min").is_null()).then(
            pl.format(
                "Down Time is not a number: '{}'", pl.col("Down Time").fill_null("")
            )
        ),
        pl.when(~pl.col("down_min").is_finite()).then(
            pl.format("Down Time is not a finite number: '{}'", "Down Time")
        ),
        pl.when(pl.col("down_min").is_finite() & (pl.col("down_min") < 0)).then(
            pl.format("negative Down Time: '{}' minutes", "Down Time")
        ),
        pl.when(
            (pl.col("fixed") < pl.col("started"))
            & (pl.col("repaired_ts") < pl.col("ts"))
        ).then(
            pl.format(
                "Prob Fixed '{}' is before Prob Started '{}': the outage ends {} min "
                "before it starts",
                "Prob Fixed",
                "Prob Started",
                (pl.col("started") - pl.col("fixed")).dt.total_minutes(),
            )
        ),
        pl.when(pl.col("n_roots") > 1).then(
            pl.format("more than one root-cause column filled: {}", roots_text)
        ),
    ]
    reason = pl.concat_str(reasons, separator="; ", ignore_nulls=True)
    f = f.with_columns(reason=pl.when(reason != "").then(reason))
    return f, table


def _resolve_ambiguous() -> list[pl.Expr]:
    """Pick the instant of a fall-back-hour time that agrees with Down Time.

    A wall-clock time in the repeated hour is two instants an hour apart. The
    record's Down Time tells which one: of the (start, end) readings, the one
    whose UTC difference is closest to Down Time wins (ties keep the earlier).
    """
    hour = pl.duration(hours=1)
    ts, rep, down = pl.col("ts"), pl.col("repaired_ts"), pl.col("down_min")
    ts_late = (
        pl.when(pl.col("ts_flag") == "dst_ambiguous").then(ts + hour).otherwise(ts)
    )
    rep_late = (
        pl.when(pl.col("rep_flag") == "dst_ambiguous").then(rep + hour).otherwise(rep)
    )

    def miss(start: pl.Expr, end: pl.Expr) -> pl.Expr:
        return ((end - start).dt.total_minutes() - down).abs().fill_null(0)

    base = miss(ts, rep)
    pick_ts = miss(ts_late, rep) < base
    pick_rep = ~pick_ts & (miss(ts, rep_late) < base)
    pick_both = ~pick_ts & ~pick_rep & (miss(ts_late, rep_late) < base)
    return [
        pl.when(pick_ts | pick_both).then(ts_late).otherwise(ts).alias("ts"),
        pl.when(pick_rep | pick_both)
        .then(rep_late)
        .otherwise(rep)
        .alias("repaired_ts"),
    ]


def _event_rows(good: pl.DataFrame) -> pl.DataFrame:
    local_diff_min = (pl.col("fixed") - pl.col("started")).dt.total_minutes()
    dst_affected = (local_diff_min - pl.col("down_min")).abs() == 60
    real_min = (pl.col("repaired_ts") - pl.col("ts")).dt.total_seconds() / 60
    mismatch = (real_min - pl.col("down_min")).abs() > DOWNTIME_TOLERANCE_MIN
    flags = (
        pl.concat_list(
            [
                pl.col("ts_flag"),
                pl.col("rep_flag"),
                pl.when(dst_affected).then(pl.lit("dst_affected")),
                pl.when(mismatch).then(pl.lit("downtime_mismatch")),
                pl.when(pl.col("nodenum").is_null()).then(pl.lit("node_unknown")),
            ]
        )
        .list.drop_nulls()
        .list.unique(maintain_order=True)
    )
    unrecorded = pl.col("root").is_null()
    return good.select(
        "line_no",
        ts="ts",
        host=_host(),
        device=pl.lit(None, dtype=pl.String),
        system="System",
        code=pl.lit(None, dtype=pl.String),
        failure_mode=pl.when(unrecorded)
        .then(pl.lit("unrecorded/unrecorded"))
        .otherwise(
            pl.concat_str([_slug(pl.col("root")), _slug(pl.col("sub"))], separator="/")
        ),
        severity=pl.lit(None, dtype=pl.String),
        detail="sub",
        repaired_ts="repaired_ts",
        repair_s=pl.col("down_min") * 60.0,
        flags=pl.when(flags.list.len() > 0).then(flags.list.join(",")),
    )


def _host() -> pl.Expr:
    return pl.concat_str(
        [pl.lit("s"), pl.col("System"), pl.lit("-"), pl.lit("n") + pl.col("nodenum")]
    ).fill_null(pl.concat_str([pl.lit("s"), pl.col("System"), pl.lit("-unknown")]))


def _assets(good: pl.DataFrame) -> tuple[pl.DataFrame, dict[str, Any]]:
    """One asset per node seen, plus inferred never-failed nodes of each system."""
    tracking = _month_of(good["started"].min())  # first month of the file
    cols = ["System", "nodenum", "nodes", "line_no", "started", *_ATTRS.values()]
    nodes: dict[tuple[str, str | None], dict[str, Any]] = {}
    for row in good.select(cols).iter_rows(named=True):
        key = (row["System"], row["nodenum"])
        node = nodes.setdefault(
            key,
            {"line_no": row["line_no"], "first": row["started"], "last": row["started"]}
            | {k: Counter() for k in _ATTRS}
            | {"nodes": Counter()},
        )
        node["line_no"] = min(node["line_no"], row["line_no"])
        node["first"] = min(node["first"], row["started"])
        node["last"] = max(node["last"], row["started"])
        node["nodes"][row["nodes"]] += 1
        for k, col in _ATTRS.items():
            node[k][row[col]] += 1
    notes: dict[str, Any] = {
        "tracking_start_local": f"{tracking[0]}-{tracking[1]:02d}-01",
        "conflicting_node_attrs": [],
        "unknown_windows": [],
        "unparsed_dates": [],
    }
    out: list[dict[str, Any]] = []

    def window(
        sysname: str,
        host: str,
        prod: str | None,
        decom: str | None,
        first: datetime | None,
        last: datetime | None,
    ) -> dict[str, Any]:
        attrs: dict[str, Any] = {}
        p, d = parse_lanl_month(prod), parse_lanl_month(decom)
        for label, text, val in (("prod", prod, p), ("decom", decom, d)):
            if text is not None and val is None:
                notes["unparsed_dates"].append(f"{host} node {label} {text!r}")
        if p == "before tracking":
            in_service, observed = None, tracking
            attrs["in_service"] = "before tracking"
        elif isinstance(p, tuple):
            in_service = observed = p
        else:  # blank or unreadable: known only from the records
            in_service = None
            observed = _month_of(first) if first is not None else tracking
            attrs["in_service"] = "unknown"
            notes["unknown_windows"].append(host)
        if d == "current":
            out_service = None
        elif isinstance(d, tuple):
            out_service = _next_month(d)  # the node served during its decom month
        elif last is not None:
            out_service = _next_month(_month_of(last))
            attrs["out_of_service"] = "unknown: month after the last record"
        else:
            out_service = None
            attrs["out_of_service"] = "unknown"
        return {
            "system": sysname,
            "host": host,
            "in_month": in_service,
            "out_month": out_service,
            "observed_month": observed,
            "attrs": attrs,
        }

    by_system: dict[str, list[tuple[str | None, dict[str, Any]]]] = {}
    for (sysname, nodenum), node in nodes.items():
        by_system.setdefault(sysname, []).append((nodenum, node))
        host = (
            f"s{sysname}-n{nodenum}" if nodenum is not None else f"s{sysname}-unknown"
        )
        w = window(
            sysname, host, _mode(node["node_prod"]), _mode(node["node_decom"]),
            node["first"], node["last"],
        )  # fmt: skip
        attrs = {k: _mode(node[k]) for k in _ATTRS}
        if conflicts := {k: dict(node[k]) for k in _ATTRS if len(node[k]) > 1}:
            attrs["conflicts"] = {
                k: {str(v): n for v, n in c.items()} for k, c in conflicts.items()
            }
            notes["conflicting_node_attrs"].append(host)
        w["attrs"] = {k: v for k, v in attrs.items() if v is not None} | w["attrs"]
        out.append(w | {"line_no": node["line_no"]})
    inferred = _inferred(by_system, window)
    notes["n_inferred_nodes"] = len(inferred)
    out.extend(inferred)
    months = [(r["in_month"], r["out_month"], r["observed_month"]) for r in out]
    frame = pl.DataFrame(
        {
            "line_no": [r["line_no"] for r in out],
            "host": [r["host"] for r in out],
            "system": [r["system"] for r in out],
            "in_local": [_dt(m[0]) for m in months],
            "out_local": [_dt(m[1]) for m in months],
            "obs_local": [_dt(m[2]) for m in months],
            "attrs": [json.dumps(r["attrs"], ensure_ascii=False) for r in out],
        },
        schema={
            "line_no": pl.Int64,
            "host": pl.String,
            "system": pl.String,
            "in_local": pl.Datetime("us"),
            "out_local": pl.Datetime("us"),
            "obs_local": pl.Datetime("us"),
            "attrs": pl.String,
        },
    )
    assets = frame.select(
        "line_no",
        "host",
        "system",
        gpus=pl.lit(None, dtype=pl.Int32),
        in_service_ts=localize(pl.col("in_local"), LANL_TZ)[0],
        out_of_service_ts=localize(pl.col("out_local"), LANL_TZ)[0],
        observed_from_ts=localize(pl.col("obs_local"), LANL_TZ)[0],
        attrs="attrs",
    )
    return assets, notes


def _dt(ym: tuple[int, int] | None) -> datetime | None:
    return datetime(ym[0], ym[1], 1) if ym is not None else None


def _inferred(
    by_system: dict[str, list[tuple[str | None, dict[str, Any]]]], window: _Window
) -> list[dict[str, Any]]:
    """Nodes of each system that never failed: numbers in the system's range not seen.

    The range is ``nodenumz`` in ``[lo, lo + nodes)`` with ``lo`` the multiple of
    ``nodes`` at or below the smallest seen ``nodenumz`` (system 14's nodes are
    129-255 of a 128-node system), mapped to ``nodenum`` by the system's usual
    offset (1 for systems numbered from 1, 1024 for system 19). At most
    ``nodes - seen`` are added, so a system never exceeds its ``nodes`` count.
    """
    rows: list[dict[str, Any]] = []
    for sysname, members in sorted(by_system.items(), key=lambda kv: int(kv[0])):
        sizes = Counter()
        offsets, zs, seen = Counter(), [], set()
        windows, attr_modes = Counter(), {k: Counter() for k in _ATTRS}
        for nodenum, node in members:
            sizes.update(node["nodes"])
            z = _mode(node["nodenumz"])
            if nodenum is None or z is None or not str(z).isdigit():
                continue
            seen.add(int(nodenum))
            zs.append(int(z))
            offsets[int(nodenum) - int(z)] += 1
            windows[(_mode(node["node_prod"]), _mode(node["node_decom"]))] += 1
            for k in _ATTRS:
                attr_modes[k][_mode(node[k])] += 1
        size = _mode(sizes)
        if not zs or size is None or not str(size).isdigit() or int(size) <= len(seen):
            continue
        n, offset = int(size), _mode(offsets)
        lo = (min(zs) // n) * n
        missing = [z + offset for z in range(lo, lo + n) if z + offset not in seen]
        prod, decom = _mode(windows)
        for nodenum in missing[: n - len(seen)]:
            host = f"s{sysname}-n{nodenum}"
            w = window(sysname, host, prod, decom, None, None)
            attrs = {k: _mode(attr_modes[k]) for k in _ATTRS if k != "nodenumz"}
            attrs = {k: v for k, v in attrs.items() if v is not None}
            w["attrs"] = (
                {"inferred": True, "nodenumz": str(nodenum - offset)}
                | attrs
                | w["attrs"]
            )
            rows.append(w | {"line_no": None})
    return rows


def _parse(path: Path) -> Parsed:
    f, table = _events(path)
    good = f.filter(pl.col("reason").is_null())
    bad = f.filter(pl.col("reason").is_not_null())
    events = _event_rows(good)
    assets, notes = _assets(good) if good.height else (pl.DataFrame(), {})
    return Parsed(
        n_lines=f.height,
        tables={"events": events, "assets": assets} if good.height else {},
        rejects=rejects_frame(table, bad),
        options={"tz": LANL_TZ, **notes},
        n_loaded=events.height,
    )


def read_lanl(
    store: Store,
    path: str | Path,
    *,
    replace: bool = False,
    as_of: str | datetime | None = None,
) -> IngestResult:
    """Read the LANL failure records 1996-2005 (LA-UR-05-7318) into the store.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        The LANL CSV, e.g. ``relkit.datasets.path("lanl")`` (23,739 records and
        a header of 26 columns, see ``datasets/lanl/PROVENANCE.md``).
    replace : bool, default False
        Re-read a file ingested before, dropping the earlier sources' rows first
        (see :func:`relkit.ingest.read_file`).
    as_of : str or datetime, optional
        When the file was collected (ISO 8601 with a zone, or an aware
        datetime; ``--as-of``): stored in UTC as ``as_of_ts`` in the source's
        options, where analysis ends open-ended observation. A zone-less time
        is an error.

    Returns
    -------
    IngestResult
        ``n_lines`` records, each an ``events`` row or a ``rejects`` row; the
        ``assets`` rows (one per node) are not counted. ``skipped=True`` if the
        same file was ingested as ``lanl`` before.

    Raises
    ------
    IngestError
        If the file is missing, unreadable, not text, or lacks a LANL column (the
        message lists expected and found columns and suggests a ``--kind``).

    Notes
    -----
    Events: ``ts``/``repaired_ts`` are ``Prob Started``/``Prob Fixed`` read as
    America/Denver wall-clock time and stored in UTC. In the fall-back hour the
    instant that agrees with Down Time is taken, the earlier one when Down Time
    cannot tell (flag ``dst_ambiguous``); a time in the
    spring-forward gap is read as standard time (+1 h, flag ``dst_nonexistent``).
    ``repair_s = 60 * Down Time`` (Down Time wins over the timestamps); flag
    ``dst_affected`` marks the 24 records whose Down Time differs from the local
    Fixed - Started by exactly 60 min (the outage spans a DST change).
    ``failure_mode`` is ``"<root>/<sub>"`` in lower snake case from the one filled
    root-cause column (``hardware/memory_dimm``); none filled gives
    ``unrecorded/unrecorded``; ``detail`` keeps the sub-cause text.
    ``host = f"s{System}-n{nodenum}"``, ``system = System``. System 17 has no node
    numbers: its host is ``s17-unknown`` (flag ``node_unknown``). Rejected: bad
    System or nodenum, unparseable times, Down Time missing, not a finite number
    (``nan``, ``inf``) or negative, Prob Fixed before Prob Started both as
    wall-clock times and in UTC after the DST readings above (an outage across a
    clock change may end "before" it starts in one of them), more than one
    root-cause column. Flag
    ``downtime_mismatch`` (kept, as the dataset is the reference) marks Down Time
    differing from the UTC Fixed - Started by more than
    :data:`DOWNTIME_TOLERANCE_MIN` = 61 min (a DST hour plus rounding); no record
    of the real file has it (checked: the largest difference is 60 min, the
    DST records; 399 differ by 1 min, none has Fixed before Started).

    Assets: one per node seen (``line_no`` of its first record), the most common
    value when records of a node disagree (listed in ``attrs["conflicts"]``).
    ``in_service_ts`` is the first day of the ``node prod`` month (00:00 local);
    ``out_of_service_ts`` the first day of the month after ``node decom`` (the
    node served during that month), NULL for ``current``. ``before tracking``
    gives a NULL ``in_service_ts``, ``observed_from_ts`` = the first day of the
    month of the file's earliest record (1995-05-01 local; an assumption) and
    ``attrs["in_service"] = "before tracking"``. A node without prod/decom
    dates (system 17) is observed from the month of its first record to the
    month after its last. ``gpus`` is NULL (CPU nodes). Nodes of a system that
    never failed are added as inferred assets (``attrs["inferred"] = true``,
    ``line_no`` NULL) with the system's most common prod/decom window, so that
    exposure counts every node at risk.

    References
    ----------
    .. [1] B. Schroeder, G. A. Gibson, "A large-scale study of failures in
       high-performance computing systems", DSN 2006. doi:10.1109/DSN.2006.5

    Examples
    --------
    >>> import relkit.datasets
    >>> from relkit.store import Store
    >>> store = Store(":memory:")
    >>> read_lanl(store, relkit.datasets.path("lanl")).n_loaded
    23739
    """
    return ingest(
        store,
        path,
        kind="lanl",
        options={},
        parse=_parse,
        replace=replace,
        as_of=as_of,
    )
