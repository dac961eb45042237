"""Kernel and syslog logs of GPU nodes: classify lines, resolve times, write events.

:func:`classify_lines` is a pure, vectorised function over a batch of lines (no
Python loop per line): it finds each line's framing (``dmesg``, ``dmesg -T``,
RFC 3164, ISO/RFC 3339, ``/dev/kmsg``, and the loghub BGL/Thunderbird/HPC
shapes), then the signal in the message (NVIDIA Xid and SXid, GPU fallen off the
bus or not initialised at boot, mlx5 link/module/PCIe events, NCCL errors and
watchdog timeouts, EDAC and MCE). :func:`relkit.ingest._kernel_time.resolve_times`
turns the framing's time fields into UTC without guessing. Both stay the full,
every-line classifier (the loghub host/time agreement test uses them).

:func:`read_kernel` streams a plain, gzip or directory input in blocks
(:class:`relkit.ingest._kernel_read.LineFrames`) through a fast path with the
same events, rejects and ignored counts: cheap vectorised tests mark keyword
candidates and lines carrying a kernel clock; clock lines give their clock and
host for boot numbering (reboots), the first walled clock line of each boot is
parsed as its anchor, and the candidates, a small share of a log, are
classified and timed in one call at the end. Other lines are counted as
``no_signal`` (or ``blank``) without parsing their framing or time. The file's
SHA-256 (its identity in the store) is computed in a thread meanwhile.
"""

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import polars as pl

from relkit.errors import IngestError
from relkit.ingest import _kernel_patterns as kp
from relkit.ingest._common import (
    IngestResult,
    Parsed,
    check_tz,
    ingest,
)
from relkit.ingest._kernel_read import LineFrames, clock_columns, file_host
from relkit.ingest._kernel_time import (
    BootTracker,
    _add_flag,
    mark_bad_times,
    options_dict,
    parse_reference_date,
    resolve_times,
    wall_times,
)
from relkit.store import Store

__all__ = [
    "classify_lines",
    "link_context",
    "read_kernel",
    "resolve_times",
]

KIND = "kernel"
#: Window (s) around a "Rate limiting ... printing 1 of every N" line in which
#: Xid events of the same host and GPU are flagged ``rate_limited``.
RATE_LIMIT_WINDOW_S = 600.0

_OUT_SCHEMA = {
    "line_no": pl.Int64,
    "outcome": pl.String,
    "reason": pl.String,
    "framing": pl.String,
    "mono_s": pl.Float64,
    "wall": pl.String,
    "host": pl.String,
    "code": pl.String,
    "device": pl.String,
    "failure_mode": pl.String,
    "severity": pl.String,
    "count": pl.Int64,
    "detail": pl.String,
    "pid": pl.Int64,
    "name": pl.String,
    "uuid": pl.String,
    "flags": pl.String,
    "line_hash": pl.UInt64,
}
_SIGNAL_COLS = [
    c
    for c in _OUT_SCHEMA
    if c not in ("line_no", "framing", "mono_s", "wall", "host", "flags", "line_hash")
]


def _xid_modes() -> dict[int, str]:
    """Xid code -> failure mode: relkit.taxonomy's table when present."""
    try:
        from relkit.taxonomy import XID_MODES

        return dict(XID_MODES)
    except ImportError:  # the taxonomy module is built separately
        return dict(kp.XID_MODES)


def _pci(col: pl.Expr) -> pl.Expr:
    """``00000000:1B:00`` -> ``0000:1b:00``; ``3b:00`` (no domain) -> ``0000:3b:00``.

    Lower case; an 8-digit domain loses its leading ``0000``; a bus:device
    without a domain is in domain 0000 (:data:`kp.PCI_XID`).
    """
    low = col.str.to_lowercase().str.replace(r"^0000([0-9a-f]{4}:)", "$1")
    return (
        pl.when(low.str.count_matches(":") == 1)
        .then(pl.concat_str(pl.lit("0000:"), low))
        .otherwise(low)
    )


def _framing(raw: pl.Series) -> pl.DataFrame:
    """Split lines into framing, time fields, host and message (vectorised)."""
    g = raw.str.extract_groups(kp.FRAMING).struct.unnest()
    msg_cols = [
        "k_msg",
        "d_msg",
        "t_msg",
        "i_msg",
        "x_msg",
        "r_msg",
        "b_msg",
        "u_msg",
        "h_msg",
    ]
    names = ["kmsg", "dmesg", "dmesg_T", "iso", "iso", "rfc3164", "bgl", "tbird", "hpc"]
    framing = pl.when(pl.col(msg_cols[0]).is_not_null()).then(pl.lit(names[0]))
    for col, name in zip(msg_cols[1:], names[1:], strict=True):
        framing = framing.when(pl.col(col).is_not_null()).then(pl.lit(name))
    msg = pl.coalesce([pl.col(c) for c in msg_cols] + [pl.lit(raw)])
    nccl_host = msg.str.extract(kp.NCCL_HOST, 1)
    return g.select(
        framing=framing.otherwise(pl.lit("bare")),
        msg=msg,
        mono_s=pl.coalesce(
            pl.col("d_mono", "i_mono", "x_mono", "r_mono").cast(pl.Float64),
            pl.col("k_us").cast(pl.Float64, strict=False) / 1e6,
        ),
        wall=pl.coalesce(
            "t_wall", "i_wall", "x_wall", "r_wall", "b_epoch", "u_epoch", "h_epoch"
        ),
        host=pl.coalesce("i_host", "r_host", "b_host", "u_host", "h_host", nccl_host),
    )


def _signal_kind(msg: pl.Expr) -> pl.Expr:
    """Name of the first signal pattern the message matches (null if none)."""
    expr = pl.when(msg.str.contains(kp.SIGNALS[0][1])).then(pl.lit(kp.SIGNALS[0][0]))
    for name, pattern in kp.SIGNALS[1:]:
        expr = expr.when(msg.str.contains(pattern)).then(pl.lit(name))
    return expr.otherwise(None)


def _groups(sub: pl.DataFrame, kind: str) -> pl.DataFrame:
    """Named groups of signal ``kind`` on the messages of ``sub``."""
    pattern = dict(kp.SIGNALS)[kind]
    return sub.get_column("msg").str.extract_groups(pattern).struct.unnest()


def _signals(cand: pl.DataFrame, xid_modes: dict[int, str]) -> pl.DataFrame:
    """Classify candidate lines (columns ``i, msg``) into signal columns."""
    cand = cand.with_columns(kind=_signal_kind(pl.col("msg")))
    parts = []
    for kind, sub in cand.filter(pl.col("kind").is_not_null()).group_by(
        "kind", maintain_order=True
    ):
        name = str(kind[0])
        parts.append(_one_kind(name, sub, xid_modes))
    rest = cand.filter(pl.col("kind").is_null()).select(
        "i", outcome=pl.lit("ignored"), reason=pl.lit("no_signal")
    )
    parts.append(rest)
    return pl.concat(parts, how="diagonal_relaxed")


_FALLEN = "gpu/fallen_off_bus"
#: Reasons of rejected Xid lines, by signal pattern.
_XID_REJECTS = {
    "xid_bad": (
        "Xid line without a numeric code after the PCI address; expected "
        "e.g. 'NVRM: Xid (PCI:0000:3b:00): 79, pid=..., ...'"
    ),
    "xid_bad_pci": (
        "Xid line with a malformed PCI address in 'Xid (...)'; expected a hex "
        "address domain:bus:device ('0000:3b:00', function '.0' optional) or "
        "bus:device ('3b:00', read as domain 0000), e.g. "
        "'NVRM: Xid (PCI:0000:3b:00): 79, pid=..., ...'"
    ),
}


def _one_kind(kind: str, sub: pl.DataFrame, xid_modes: dict[int, str]) -> pl.DataFrame:
    """Signal columns of lines that all match pattern ``kind``."""
    g = pl.concat([sub.select("i", "msg"), _groups(sub, kind)], how="horizontal")
    ev = pl.lit("event")
    if kind in kp.CONTEXT_REASON:
        cols = {"outcome": pl.lit("ignored"), "reason": pl.lit(kp.CONTEXT_REASON[kind])}
        if "pci" in g.columns:
            cols["device"] = _pci(pl.col("pci"))
        if "uuid" in g.columns:
            cols["uuid"] = pl.col("uuid")
        if "every" in g.columns:
            cols["detail"] = pl.format("printing 1 of every {}", pl.col("every"))
        return g.select("i", **cols)
    if kind in _XID_REJECTS:
        return g.select(
            "i", outcome=pl.lit("rejected"), reason=pl.lit(_XID_REJECTS[kind])
        )
    from relkit.taxonomy import STATED_SEVERITY

    rest = pl.col("rest") if "rest" in g.columns else pl.col("msg")
    detail = rest.str.replace_all(r"\s+", " ").str.strip_chars()
    detail = pl.when(detail == "").then(None).otherwise(detail)
    stated = (
        rest.str.extract(r"\b(Fatal|Non-fatal|Nonfatal|NonFatal|Non-Fatal)\b", 1)
        .str.to_lowercase()
        .str.replace("-", "", literal=True)
        .replace_strict(STATED_SEVERITY, default=None, return_dtype=pl.String)
    )
    if kind in ("xid", "sxid"):
        pid = rest.str.extract(r"^pid='?([^,']*)'?", 1)
        name = rest.str.extract(r"^(?:pid=[^,]*,\s*)?name=([^,]*)", 1).str.strip_chars()
        body = rest.str.replace(r"^(?:pid=[^,]*,\s*)?(?:name=[^,]*,\s*)?", "")
        body = body.str.replace_all(r"\s+", " ").str.strip_chars()
        if kind == "xid":
            mode = (
                pl.col("code")
                .cast(pl.Int64, strict=False)
                .replace_strict(
                    xid_modes, default="gpu/unknown_xid", return_dtype=pl.String
                )
            )
            code = pl.col("code")
        else:
            mode = pl.lit("nvswitch/sxid")
            code = pl.format("sxid:{}", pl.col("code"))
        return g.select(
            "i",
            outcome=ev,
            code=code,
            device=_pci(pl.col("pci")),
            failure_mode=mode,
            severity=stated,
            detail=pl.when(body == "").then(None).otherwise(body),
            pid=pl.when(pid == "<unknown>")
            .then(None)
            .otherwise(pid)
            .cast(pl.Int64, strict=False),
            name=pl.when(name.is_in(["<unknown>", ""])).then(None).otherwise(name),
        )
    cols: dict[str, pl.Expr] = {"outcome": ev, "detail": detail, "severity": stated}
    if kind == "fallen":
        cols |= {
            "device": _pci(pl.col("pci")),
            "failure_mode": pl.lit("gpu/fallen_off_bus"),
        }
        cols["detail"] = pl.col("msg").str.replace(r"^NVRM:\s*", "").str.strip_chars()
    elif kind == "link":
        cols |= {
            "device": pl.format("{} {}", _pci(pl.col("pci")), pl.col("netdev")),
            "failure_mode": pl.format("network/link_{}", pl.col("state")),
            "detail": pl.format("Link {}", pl.col("state")),
        }
    elif kind in ("cable", "pcie_power"):
        mode = "network/cable_module" if kind == "cable" else "network/pcie_power"
        cols |= {"device": _pci(pl.col("pci")), "failure_mode": pl.lit(mode)}
    elif kind == "nccl_error":
        cols |= {
            "code": pl.format("wc_status:{}", pl.col("code")),
            "device": pl.col("msg").str.extract(r"\b(?:hca|dev) ([A-Za-z0-9_:]+)", 1),
            "failure_mode": pl.lit("network/nccl_error"),
            "detail": pl.col("msg")
            .str.extract(r"(Got completion.*)$", 1)
            .str.replace_all(r"\s+", " "),
        }
    elif kind == "nccl_watchdog":
        cols["failure_mode"] = pl.lit("network/nccl_watchdog")
    elif kind == "edac":
        cols |= {
            "device": pl.format("mc{}", pl.col("mc")),
            "failure_mode": pl.when(pl.col("kind") == "CE")
            .then(pl.lit("host/memory_ce"))
            .otherwise(pl.lit("host/memory_ue")),
            "count": pl.col("n").cast(pl.Int64, strict=False).fill_null(1),
            "code": pl.col("kind"),
        }
    elif kind == "mce":
        cols |= {
            "device": pl.when(pl.col("cpu").is_not_null()).then(
                pl.format("cpu{}", pl.col("cpu"))
            ),
            "failure_mode": pl.lit("host/mce"),
            "detail": pl.col("msg").str.extract(r"\[Hardware Error\]:\s*(.*)$", 1),
        }
    elif kind == "memory_ue":
        cols["failure_mode"] = pl.lit("host/memory_ue")
    elif kind in kp.GPU_BOOT_CODES:
        cols |= {
            "failure_mode": pl.lit(_FALLEN),
            "code": pl.lit(kp.GPU_BOOT_CODES[kind], dtype=pl.String),
        }
        if "pci" in g.columns:
            cols["device"] = _pci(pl.col("pci"))
    return g.select("i", **cols)


def classify_lines(lines: pl.Series, *, offset: int = 0) -> pl.DataFrame:
    r"""Classify a batch of kernel/syslog lines: framing, time fields, signal.

    Parameters
    ----------
    lines : pl.Series
        Lines of text without line terminators (String; nulls read as empty).
    offset : int, default 0
        Lines before this batch in its file; ``line_no = offset + 1, ...``.

    Returns
    -------
    pl.DataFrame
        One row per line, in order. Columns: ``line_no`` (1-based),
        ``outcome`` (``event``, ``ignored`` or ``rejected``), ``reason`` (why
        ignored/rejected, e.g. ``no_signal``, ``nvrm_context``,
        ``gpu_uuid_map``, ``rate_limit_notice``, ``gpu_unsupported_by_driver``),
        ``framing`` (``dmesg``,
        ``dmesg_T``, ``rfc3164``, ``iso``, ``kmsg``, ``bgl``, ``tbird``,
        ``hpc``, ``bare``), ``mono_s`` (kernel clock, s since boot), ``wall``
        (the line's own time text, never a date inside the message), ``host``,
        ``code`` (Xid code as text, ``sxid:N``, ``wc_status:N``, ``CE``/``UE``;
        ``init_failed``, ``power_cables``, ``none_initialized`` for GPUs not
        initialised at boot), ``device`` (GPU PCI ``dddd:bb:dd``, ``"pci
        netdev"`` for NIC ports, ``mc0``, ``cpu3``), ``failure_mode``,
        ``severity`` (:data:`relkit.taxonomy.SEVERITIES`), ``count`` (Int64;
        1, or the count an EDAC line states), ``detail``, ``pid`` (Int64),
        ``name``, ``uuid`` (from an earlier ``NVRM: GPU at PCI:`` line of the
        same batch), ``flags`` (``duplicate_line``) and ``line_hash``.

    Notes
    -----
    Pure and vectorised: one regex over all lines finds the framing; only lines
    containing a keyword (``Xid``, ``NVRM``, ``mlx5_``, ``NCCL``, ``EDAC``, ...)
    go through the signal patterns of :mod:`relkit.ingest._kernel_patterns`.
    Xid codes map to failure modes by NVIDIA's Xid catalogue [1]_ (via
    :mod:`relkit.taxonomy` when available).

    References
    ----------
    .. [1] NVIDIA, "Xid Errors", https://docs.nvidia.com/deploy/xid-errors/

    Examples
    --------
    >>> import polars as pl
    >>> out = classify_lines(
    ...     pl.Series(
    ...         [
    ...             "[ 1843.308145] NVRM: Xid (PCI:0000:3B:00.0): 79, pid=21877, off",
    ...             "[ 2210.000000] NVRM: Xid (PCI:0000:66:00): abc, pid=2280636",
    ...         ]
    ...     )
    ... )
    >>> out.select("line_no", "outcome", "code", "device", "failure_mode", "pid")
    shape: (2, 6)
    ┌─────────┬──────────┬──────┬────────────┬────────────────────┬───────┐
    │ line_no ┆ outcome  ┆ code ┆ device     ┆ failure_mode       ┆ pid   │
    │ ---     ┆ ---      ┆ ---  ┆ ---        ┆ ---                ┆ ---   │
    │ i64     ┆ str      ┆ str  ┆ str        ┆ str                ┆ i64   │
    ╞═════════╪══════════╪══════╪════════════╪════════════════════╪═══════╡
    │ 1       ┆ event    ┆ 79   ┆ 0000:3b:00 ┆ gpu/fallen_off_bus ┆ 21877 │
    │ 2       ┆ rejected ┆ null ┆ null       ┆ null               ┆ null  │
    └─────────┴──────────┴──────┴────────────┴────────────────────┴───────┘
    """
    raw = lines.cast(pl.String).fill_null("")
    line_no = pl.int_range(offset + 1, offset + 1 + raw.len(), eager=True)
    return _classify(raw, line_no)


def _classify(raw: pl.Series, line_no: pl.Series) -> pl.DataFrame:
    """:func:`classify_lines` of lines with the given (increasing) line numbers."""
    n = raw.len()
    base = _framing(raw).with_columns(
        i=pl.int_range(n, dtype=pl.Int64),
        line_hash=raw.hash(),
        blank=raw.str.strip_chars() == "",
    )
    cand = base.filter(pl.col("msg").str.contains(kp.KEYWORDS)).select("i", "msg")
    sig = _signals(cand, _xid_modes()) if cand.height else None
    out = base.drop("msg")
    if sig is not None:
        out = out.join(sig, on="i", how="left", maintain_order="left")
    out = out.with_columns(
        [
            pl.lit(None, dtype=_OUT_SCHEMA[c]).alias(c)
            for c in _SIGNAL_COLS
            if c not in out.columns
        ]
    )
    out = out.with_columns(
        outcome=pl.col("outcome").fill_null("ignored"),
        reason=pl.when(pl.col("outcome").is_null())
        .then(
            pl.when(pl.col("blank"))
            .then(pl.lit("blank"))
            .otherwise(pl.lit("no_signal"))
        )
        .otherwise(pl.col("reason")),
        count=pl.when(pl.col("outcome") == "event").then(pl.col("count").fill_null(1)),
        line_no=pl.lit(line_no.cast(pl.Int64)).gather(pl.col("i")),
    )
    from relkit.taxonomy import MODE_SEVERITY

    sev = pl.col("failure_mode").replace_strict(
        MODE_SEVERITY, default="error", return_dtype=pl.String
    )
    out = out.with_columns(
        severity=pl.when(pl.col("outcome") == "event").then(
            pl.coalesce(pl.col("severity"), sev)
        ),
        flags=pl.lit(None, dtype=pl.String),
    )
    out = link_context(out.select(list(_OUT_SCHEMA)).cast(_OUT_SCHEMA))
    return out


#: A device-less GPU line continues the NVRM message of an earlier line of its
#: host at most this many seconds (kernel clock or wall time) before it, or, when
#: neither line has a time, at most :data:`CONTINUATION_LINES` lines before it.
CONTINUATION_S = 60.0
CONTINUATION_LINES = 10
_NONE_INITIALIZED = kp.GPU_BOOT_CODES["gpu_none_initialized"]
_UNSUPPORTED = kp.CONTEXT_REASON["gpu_unsupported"]


def _after(rows: pl.DataFrame, marks: pl.DataFrame, *, take: list[str]) -> pl.DataFrame:
    """``line_no`` of ``rows`` and the ``take`` columns of the last earlier mark.

    Only pairs of the same host whose gap is within :data:`CONTINUATION_S` (or
    :data:`CONTINUATION_LINES` lines when neither has a time) are returned.
    """
    t = [c for c in ("ts",) if c in rows.columns]
    cols = ["_hk", "line_no", "mono_s", *t]
    j = rows.select(cols).join_asof(
        marks.select(*cols, *take, _line_m="line_no"),
        on="line_no",
        by="_hk",
        strategy="backward",
        allow_exact_matches=False,
        suffix="_m",
        check_sortedness=False,
    )
    gap = (pl.col("mono_s") - pl.col("mono_s_m")).abs()
    if t:
        gap = pl.coalesce(
            (pl.col("ts") - pl.col("ts_m")).dt.total_microseconds().abs() / 1e6, gap
        )
    near = (
        pl.when(gap.is_not_null())
        .then(gap <= CONTINUATION_S)
        .otherwise(pl.col("line_no") - pl.col("_line_m") <= CONTINUATION_LINES)
    )
    return j.filter(pl.col("_line_m").is_not_null() & near).select("line_no", *take)


def _gpu_boot_context(frame: pl.DataFrame) -> pl.DataFrame:
    """Continue multi-line GPU boot messages (see :func:`link_context`)."""
    ev = pl.col("outcome") == "event"
    fallen = ev & (pl.col("failure_mode") == _FALLEN)
    f = frame.with_columns(_hk=pl.col("host").fill_null("")).sort("line_no")
    targets = f.filter(
        fallen
        & pl.col("device").is_null()
        & pl.col("code").ne_missing(_NONE_INITIALIZED)
    )
    anchors = f.filter(
        pl.col("device").is_not_null()
        & (fallen | (pl.col("reason") == kp.CONTEXT_REASON["gpu_header"]))
    )
    if targets.height and anchors.height:
        fill = _after(targets, anchors.rename({"device": "_dev"}), take=["_dev"])
        frame = (
            frame.join(fill, on="line_no", how="left", maintain_order="left")
            .with_columns(device=pl.coalesce("device", "_dev"))
            .drop("_dev")
        )
    summary = f.filter(ev & (pl.col("code") == _NONE_INITIALIZED))
    unsupported = f.filter(pl.col("reason") == _UNSUPPORTED)
    if summary.height and unsupported.height:
        drop = _after(summary, unsupported, take=[]).get_column("line_no")
        hit = pl.col("line_no").is_in(drop.implode())
        blank = ["code", "device", "failure_mode", "severity", "count", "detail"]
        frame = frame.with_columns(
            outcome=pl.when(hit).then(pl.lit("ignored")).otherwise("outcome"),
            reason=pl.when(hit).then(pl.lit(_UNSUPPORTED)).otherwise("reason"),
            **{c: pl.when(~hit).then(c) for c in blank},
        )
    return frame


def link_context(
    frame: pl.DataFrame, *, window_s: float = RATE_LIMIT_WINDOW_S
) -> pl.DataFrame:
    """Carry context lines onto events: GPU UUID, rate limiting, duplicates.

    Parameters
    ----------
    frame : pl.DataFrame
        Classified lines in file order (:func:`classify_lines` columns; ``ts``
        optional, UTC).
    window_s : float, default 600
        Seconds around a ``Rate limiting ... printing 1 of every N`` line in
        which events of the same host and device get the ``rate_limited`` flag.

    Returns
    -------
    pl.DataFrame
        ``frame`` with ``uuid`` filled on events after a ``NVRM: GPU at PCI:``
        map line of the same host and device, and ``flags`` extended by
        ``rate_limited`` and ``duplicate_line`` (an event line identical to an
        earlier one). GPU boot messages printed over several lines are joined:

        - a ``gpu/fallen_off_bus`` event without a PCI address (``NVRM: fallen
          off the bus and is not responding to commands.``, ``NVRM:
          rm_init_adapter failed, device minor number 3``) takes the device of
          the line it continues: the last earlier ``NVRM: The NVIDIA GPU <pci>``
          header or ``gpu/fallen_off_bus`` event with a device on its host;
        - ``NVRM: None of the NVIDIA devices were initialized.`` after a line
          saying the driver does not support the GPU (``... installed in this
          system is not supported``) is no failure: it becomes ``ignored`` with
          reason ``gpu_unsupported_by_driver``.

    Notes
    -----
    The rate-limit window uses ``ts`` when both lines have it, else the kernel
    clock ``mono_s`` (same boot assumed within the window). A line continues
    another one of its host at most ``CONTINUATION_S`` = 60 s after it (same
    clock rule), or, when neither has a time, at most ``CONTINUATION_LINES`` =
    10 lines after it. Across the batches of :func:`read_kernel` only events are
    kept, so a header line and its continuation split by a batch boundary (one
    in 32 MB) are not joined; the continuation then stays a host-level event.
    """
    frame = _gpu_boot_context(frame)
    ev = pl.col("outcome") == "event"
    keyed = pl.col("reason").is_in(["gpu_uuid_map"]) | ev
    out = frame.with_columns(
        uuid=pl.when(keyed)
        .then(
            pl.col("uuid")
            .forward_fill()
            .over(
                pl.col("host").fill_null(""),
                pl.col("device").fill_null(""),
                order_by="line_no",
            )
        )
        .otherwise(pl.col("uuid")),
    )
    dup = ev & (
        pl.int_range(pl.len()).over("line_hash", "outcome", order_by="line_no") > 0
    )
    flags = _add_flag(pl.col("flags"), dup, "duplicate_line")
    marks = out.filter(pl.col("reason") == "rate_limit_notice")
    if marks.height:
        t = "ts" if "ts" in out.columns else None
        m_cols = ["host", "device", "mono_s"] + ([t] if t else [])
        evs = out.filter(ev & pl.col("device").is_not_null()).select("line_no", *m_cols)
        j = evs.join(
            marks.select(m_cols), on=["host", "device"], nulls_equal=True, suffix="_m"
        )
        gap = (pl.col("mono_s") - pl.col("mono_s_m")).abs()
        if t:
            gap = pl.coalesce(
                (pl.col(t) - pl.col(f"{t}_m")).dt.total_microseconds().abs() / 1e6, gap
            )
        limited = j.filter(gap <= window_s).get_column("line_no").unique()
        flags = _add_flag(
            flags, pl.col("line_no").is_in(limited.implode()), "rate_limited"
        )
    return out.with_columns(flags=flags)


# -- reading files ---------------------------------------------------------------------
@dataclass(frozen=True)
class _Parsed:
    n_lines: int
    events: pl.DataFrame
    rejects: pl.DataFrame
    ignored: pl.DataFrame
    #: Time of the last line with a resolvable time (UTC), else None.
    log_end_ts: dt.datetime | None = None


_KEEP_REASONS = ("gpu_uuid_map", "rate_limit_notice")


def _clock_lines(raw: pl.Series, line_no: pl.Series, host: str | None) -> pl.DataFrame:
    """Kernel clock and host of lines known to carry one (:data:`kp.CLOCK`).

    Returns ``line_no, hkey, mono, walled`` (``walled``: the line also has a
    wall stamp, so it can anchor its boot). Agrees with :func:`_framing` on
    ``mono_s`` and ``host`` (checked by a test).
    """
    frame = pl.DataFrame({"line": raw, "line_no": line_no}).with_columns(
        **clock_columns(pl.col("line"))
    )
    return _clock_keys(frame, host)


def _clock_keys(frame: pl.DataFrame, host: str | None) -> pl.DataFrame:
    """``line_no, hkey, mono, walled`` of clock lines with :func:`clock_columns`.

    Lines whose host could come from an NCCL message prefix (``hint``) and name
    none in their framing take :func:`_framing` itself (their text is kept).
    """
    hard = frame.get_column("hint") & frame.get_column("clock_host").is_null()
    if hard.any():
        full = _framing(frame.get_column("line").filter(hard)).get_column("host")
        host_s = frame.get_column("clock_host").scatter(hard.arg_true(), full)
        frame = frame.with_columns(clock_host=host_s)
    return frame.select(
        "line_no",
        hkey=pl.col("clock_host").fill_null(pl.lit(host)).fill_null(""),
        mono="mono",
        walled="walled",
    )


def _anchor_boots(
    tracker: BootTracker,
    m: pl.DataFrame,
    lines: pl.DataFrame,
    *,
    tz: str | None,
    ref: dt.date | None,
    path: Path,
) -> None:
    """Give each new (host, boot) of ``m`` its anchor: first valid wall + clock.

    Only the first walled line of each boot without an anchor is parsed
    (framing and wall time); if its wall text is no valid instant, the next one.
    ``lines`` holds ``line_no, line`` of the batch's clock lines.
    """
    known = pl.DataFrame(
        {
            "hkey": [k[0] for k in tracker.anchors],
            "boot_no": [k[1] for k in tracker.anchors],
        },
        schema={"hkey": pl.String, "boot_no": pl.Int64},
    )
    need = m.filter(pl.col("walled")).join(
        known, on=["hkey", "boot_no"], how="anti", maintain_order="left"
    )
    while need.height:
        first = need.unique(["hkey", "boot_no"], keep="first", maintain_order=True)
        text = first.select("line_no").join(
            lines, on="line_no", how="left", maintain_order="left"
        )
        fr = _framing(text.get_column("line")).select("framing", "wall", "host")
        fr = fr.with_columns(line_no=first.get_column("line_no"))
        wall_ts = wall_times(fr, tz=tz, reference_date=ref, path=path)["wall_ts"]
        got = first.with_columns(wall_ts=wall_ts).filter(
            pl.col("wall_ts").is_not_null()
        )
        tracker.add_anchors(got)
        done = got.select("hkey", "boot_no")
        tried = first.get_column("line_no")
        need = need.filter(~pl.col("line_no").is_in(tried.implode())).join(
            done, on=["hkey", "boot_no"], how="anti", maintain_order="left"
        )


def _parse(
    path: Path,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    full: bool = False,
    keep_going: Callable[[], bool] | None = None,
) -> _Parsed | None:
    """Stream one file through classify, times and context; hold only kept rows.

    :class:`relkit.ingest._kernel_read.LineFrames` gives, per batch, the lines
    that are keyword candidates, blank or carry a kernel clock. Only candidates
    get :func:`_classify` and their wall times; clock lines give their clock and
    host for boot numbering, and the first walled line of each new boot is
    parsed as its anchor. Other lines are counted as ``no_signal`` without
    further parsing. ``full=True`` classifies and times every line instead (the
    reference the tests compare the fast path with). Returns None when
    ``keep_going`` stopped the reading.
    """
    return _parse_frames(
        LineFrames(path, full=full, keep_going=keep_going),
        tz=tz,
        ref=ref,
        host=host,
        path=path,
    )


def _parse_frames(
    frames: LineFrames,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    path: Path,
) -> _Parsed | None:
    """:func:`_parse` over the frames of one reader."""
    tracker = BootTracker()
    kept, rejects, ignored = [], [], []
    n_cand = n_blank_rest = 0
    parts: list[tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]] = []
    pending: list[tuple[pl.DataFrame, pl.DataFrame]] = []
    no_seg = pl.DataFrame(schema={"line_no": pl.Int64, "boot_no": pl.Int64})

    def classified(cands: pl.DataFrame) -> pl.DataFrame:
        c = _classify(cands.get_column("line"), cands.get_column("line_no"))
        if host is not None:
            c = c.with_columns(host=pl.col("host").fill_null(host))
        return mark_bad_times(
            c.with_columns(wall_times(c, tz=tz, reference_date=ref, path=path))
        )

    for frame in frames:
        if frames.full:
            frame = frame.with_columns(cand=True)
        cands = frame.filter(pl.col("cand")).select("line_no", "line")
        if not frames.full:
            # a copy: a filtered string column shares its block's whole buffer
            cands = cands.with_columns(
                line=pl.Series(cands.get_column("line").to_list(), dtype=pl.String)
            )
        n_cand += cands.height
        n_blank_rest += int(
            (frame.get_column("blank") & ~frame.get_column("cand")).sum()
        )
        if frames.full:
            c = classified(cands)
            parts.append((c, tracker.segment(c), cands))
            continue
        # candidates wait for one classify call at the end (they are few); the
        # clock lines number boots and anchor them now, batch by batch
        clocks = frame.filter(pl.col("clock"))
        seg = no_seg
        if clocks.height:
            m = tracker.number(_clock_keys(clocks, host))
            text = clocks.select("line_no", "line")
            try:
                _anchor_boots(tracker, m, text, tz=tz, ref=ref, path=path)
            except IngestError:
                # report the first line that needs tz/reference date: an
                # earlier candidate's, if one needs it too
                classified(pl.concat([*(p[0] for p in pending), cands]))
                raise
            seg = m.select("line_no", "boot_no").join(
                cands, on="line_no", how="semi", maintain_order="left"
            )
        pending.append((cands, seg))
    if pending and not frames.stopped:
        cands = pl.concat([p[0] for p in pending])
        parts.append((classified(cands), pl.concat([p[1] for p in pending]), cands))
    for c, seg, cands in parts:
        c = c.join(seg, on="line_no", how="left", maintain_order="left")
        bad = c.filter(pl.col("outcome") == "rejected")
        if bad.height:
            rejects.append(
                bad.select("line_no", "reason").join(
                    cands.select("line_no", raw="line"),
                    on="line_no",
                    how="left",
                    maintain_order="left",
                )
            )
        ignored.append(
            c.filter(pl.col("outcome") == "ignored").group_by("reason").len()
        )
        kept.append(
            c.filter(
                (pl.col("outcome") == "event") | pl.col("reason").is_in(_KEEP_REASONS)
            )
        )
    if frames.stopped:
        return None
    counts = {
        "blank": n_blank_rest,
        "no_signal": frames.n_lines - n_cand - n_blank_rest,
    }
    ignored.append(
        pl.DataFrame(
            {"reason": list(counts), "len": list(counts.values())},
            schema={"reason": pl.String, "len": pl.UInt32},
        ).filter(pl.col("len") > 0)
    )
    rows = tracker.resolve(pl.concat(kept)) if kept else None
    if rows is None or rows.is_empty():
        events = pl.DataFrame()
    else:
        rows = rows.with_columns(
            flags=_add_flag(
                pl.col("flags"), pl.col("dst_flag").is_not_null(), pl.col("dst_flag")
            )
        )
        # re-link across batches (uuid map, duplicates, rate limiting) with ts
        rows = link_context(rows.with_columns(flags=_drop_flags(pl.col("flags"))))
        events = rows.filter(pl.col("outcome") == "event")
    if not events.is_empty() and events.get_column("host").null_count():
        first = int(events.filter(pl.col("host").is_null()).get_column("line_no").min())
        msg = (
            "event lines carry no host name (dmesg/kmsg framing); expected a "
            "host for every event. Pass host='NAME' (--host NAME), or "
            "host_from_filename=True (--host-from-filename) for per-host files."
        )
        raise IngestError(path, msg, line_no=first)
    ign = (
        pl.concat(ignored)
        .group_by("reason")
        .agg(n_lines=pl.col("len").sum())
        .sort("reason")
    )
    rej = (
        pl.concat(rejects)
        if rejects
        else pl.DataFrame(
            schema={"line_no": pl.Int64, "reason": pl.String, "raw": pl.String}
        )
    )
    end = _log_end(frames, tracker, tz=tz, ref=ref, host=host, path=path)
    if end is not None and not events.is_empty() and events.get_column("ts").max():
        end = max(end, events.get_column("ts").max())  # type: ignore[type-var]
    return _Parsed(
        frames.n_lines,
        _events_table(events),
        rej,
        ign.cast({"n_lines": pl.Int64}),
        log_end_ts=end,
    )


def _log_end(
    frames: LineFrames,
    tracker: BootTracker,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    path: Path,
) -> dt.datetime | None:
    """UTC time of the file's last non-blank line, or None if it has none.

    A wall stamp is read as usual (None, not an error, when it needs a zone or
    reference date that was not given); a kernel clock alone is resolved from
    its boot's anchor, as for events.
    """
    if frames.last_line is None:
        return None
    line_no, text = frames.last_line
    fr = _framing(pl.Series("line", [text])).with_columns(line_no=pl.lit(line_no))
    if host is not None:
        fr = fr.with_columns(host=pl.col("host").fill_null(host))
    try:
        wall = wall_times(fr, tz=tz, reference_date=ref, path=path)["wall_ts"][0]
    except IngestError:
        wall = None
    if wall is not None:
        return wall
    mono = fr.get_column("mono_s")[0]
    hkey = fr.get_column("host")[0] or ""
    if mono is None or hkey not in tracker.last:
        return None
    boot_us = tracker.anchors.get((hkey, tracker.last[hkey][1]))
    if boot_us is None:
        return None
    return dt.datetime.fromtimestamp(0, dt.UTC) + dt.timedelta(
        microseconds=boot_us + round(mono * 1e6)
    )


def _drop_flags(flags: pl.Expr) -> pl.Expr:
    """Remove the flags :func:`link_context` sets (before linking a whole file)."""
    kept = flags.str.split(",").list.set_difference(["duplicate_line", "rate_limited"])
    joined = kept.list.join(",")
    return pl.when(joined == "").then(None).otherwise(joined)


def _events_table(events: pl.DataFrame) -> pl.DataFrame:
    """Classified event rows -> ``events`` table columns (pid/name/uuid in detail)."""
    if events.is_empty():
        return pl.DataFrame(schema={"line_no": pl.Int64})
    extra = pl.concat_str(
        [
            pl.format("pid={}", pl.col("pid")),
            pl.format("name={}", pl.col("name")),
            pl.format("uuid={}", pl.col("uuid")),
        ],
        separator=", ",
        ignore_nulls=True,
    )
    detail = (
        pl.when(extra == "")
        .then(pl.col("detail"))
        .otherwise(
            pl.concat_str(
                [pl.col("detail"), pl.format("({})", extra)],
                separator=" ",
                ignore_nulls=True,
            )
        )
    )
    return events.select(
        "line_no",
        "ts",
        "host",
        "device",
        "code",
        "failure_mode",
        "severity",
        detail=detail,
        flags="flags",
        count="count",
        mono_s="mono_s",
    )


#: In a directory of logs, files with these suffixes or names are documentation.
_NOT_LOGS = frozenset({".md", ".rst", ".html", ".pdf", ".json", ".csv", ".py"})
_DOC_STEMS = frozenset({"NOTICE", "LICENSE", "README", "COPYING", "PROVENANCE"})


def read_kernel(
    store: Store,
    path: str | Path,
    *,
    tz: str | None = None,
    reference_date: str | dt.date | None = None,
    host: str | None = None,
    host_from_filename: bool = False,
    replace: bool = False,
) -> list[IngestResult]:
    r"""Ingest kernel/syslog logs (a file, a .gz file or a directory of them).

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        A log file (plain or gzip) or a directory of per-host log files (each
        file its own source, read in name order; hidden files skipped).
    tz : str, optional
        IANA zone of zone-less stamps (``dmesg -T``, RFC 3164, ISO without
        offset): required when such lines occur (``--tz ZONE``).
    reference_date : str or datetime.date, optional
        Date the logs were collected (``YYYY-MM-DD``): gives year-less RFC 3164
        lines their year; required when such lines occur
        (``--reference-date``).
    host : str, optional
        Host of lines whose framing carries none (``dmesg``, ``dmesg -T``,
        kmsg); lines naming a host keep it.
    host_from_filename : bool, default False
        Take that host from each file's name instead (``node7.log.gz`` ->
        ``node7``).
    replace : bool, default False
        Re-read files ingested before, dropping their earlier rows first.

    Returns
    -------
    list of IngestResult
        One per file: ``path, kind="kernel", source_id, n_lines, n_loaded,
        n_rejected, skipped, note, replaced, n_ignored`` with ``n_lines ==
        n_loaded + n_ignored + n_rejected``.

    Raises
    ------
    IngestError
        If the path is missing, unreadable or an empty directory; a gzip file is
        corrupt; ``tz``/``reference_date`` is needed but missing or invalid (at
        the first line that needs it); an event line has no host and neither
        ``host`` nor ``host_from_filename`` is given; or, without ``replace``, a
        file read before from the same path has changed.

    Notes
    -----
    Files are streamed in blocks of about 8 MB; only candidate lines (and
    their events) are held until the file ends, so memory is bounded by the
    block size and the number of candidates, not of lines
    (``bench/bench_kernel_ingest.py``: about 0.3 GB peak RSS for a 1.2 GB,
    10-million-line log). Invalid UTF-8 bytes are replaced by U+FFFD,
    never fatal. Rejected lines go to ``rejects`` with the raw text; ignored
    lines are counted by reason in ``ignored``.

    Only lines containing a failure keyword (``Xid``, ``NVRM``, ``mlx5_``,
    ``NCCL``, ``EDAC``, ...) go through :func:`classify_lines` and the time
    parse; the others are counted as ``no_signal`` (or ``blank``) unparsed.
    Lines with a kernel clock are read for their clock and host on every line,
    so reboots are found as before, and the first line of each boot that also
    carries a wall stamp anchors that boot. Hence ``tz``/``reference_date`` are
    required only when a candidate or anchor line needs them, and a line
    without a failure keyword whose date is invalid (Feb 29 of a common year)
    is counted as ``no_signal``, not rejected.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from relkit.store import Store
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "node1.log"
    >>> _ = f.write_text(
    ...     "2025-03-04T10:22:05+0000 node1 kernel: NVRM: Xid (PCI:0000:9b:00): 119\n"
    ...     "2025-03-04T10:22:06+0000 node1 CRON[5]: (root) CMD (true)\n"
    ... )
    >>> [r] = read_kernel(Store(":memory:"), f)
    >>> (r.n_lines, r.n_loaded, r.n_ignored, r.n_rejected)
    (2, 1, 1, 0)
    """
    p = Path(path)
    check_tz(path, tz)
    ref = parse_reference_date(path, reference_date)
    if p.is_dir():
        files = sorted(
            f
            for f in p.rglob("*")
            if f.is_file()
            and not any(part.startswith(".") for part in f.relative_to(p).parts)
            and not f.name.startswith(".")
            and f.suffix.lower() not in _NOT_LOGS
            and f.stem.upper() not in _DOC_STEMS
        )
        if not files:
            msg = (
                "has no log files; expected per-host logs inside it (documentation "
                f"such as {sorted(_NOT_LOGS)} and NOTICE/LICENSE/README is skipped)."
            )
            raise IngestError(path, msg)
    else:
        files = [p]
    return [
        _read_one(
            store,
            f,
            tz=tz,
            ref=ref,
            host=file_host(f) if host_from_filename else host,
            replace=replace,
        )
        for f in files
    ]


def _read_one(
    store: Store,
    path: Path,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    replace: bool,
) -> IngestResult:
    """Check, hash, skip or refuse, parse and write one kernel-log file."""

    def parse(p: Path, keep_going: Callable[[], bool]) -> Parsed | None:
        parsed = _parse(p, tz=tz, ref=ref, host=host, keep_going=keep_going)
        if parsed is None:
            return None
        end = parsed.log_end_ts
        return Parsed(
            n_lines=parsed.n_lines,
            tables={"events": parsed.events},
            rejects=parsed.rejects,
            options={} if end is None else {"log_end_ts": end.isoformat()},
            n_loaded=parsed.events.height,
            ignored=parsed.ignored,
        )

    return ingest(
        store,
        path,
        kind=KIND,
        options=options_dict(tz, ref, host),
        parse=parse,
        replace=replace,
        overlap_hash=True,
    )
