"""Kernel and syslog logs of GPU nodes: classify lines, resolve times, write events.

:func:`classify_lines` is a pure, vectorised function over a batch of lines (no
Python loop per line): it finds each line's framing (``dmesg``, ``dmesg -T``,
RFC 3164, ISO/RFC 3339, ``/dev/kmsg``, and the loghub BGL/Thunderbird/HPC
shapes), then the signal in the message (NVIDIA Xid and SXid, GPU fallen off the
bus, mlx5 link/module/PCIe events, NCCL errors and watchdog timeouts, EDAC and
MCE). :func:`relkit.ingest._kernel_time.resolve_times` turns the framing's time
fields into UTC without guessing. Both stay the full, every-line classifier
(the loghub host/time agreement test uses them).

:func:`read_kernel` streams a plain, gzip or directory input in batches through
a fast path with the same events, rejects and ignored counts on failure lines:
cheap vectorised tests mark keyword candidates and lines carrying a kernel
clock; only candidates are classified and timed, clock lines give their clock
and host for boot numbering (reboots), and the first walled clock line of each
boot is parsed as its anchor. Other lines are counted as ``no_signal`` (or
``blank``) without parsing their framing or time.
"""

import datetime as dt
import gzip
import re
import zlib
from collections.abc import Iterator
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
#: Bytes read per batch (about 2.5e5 lines of 130 bytes).
BATCH_BYTES = 1 << 25
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
    """``PCI:00000000:1B:00`` style -> ``0000:1b:00`` (lower case, 4-digit domain)."""
    return col.str.to_lowercase().str.replace(r"^[0-9a-f]{4}([0-9a-f]{4}:)", "$1")


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
    if kind == "xid_bad":
        return g.select(
            "i",
            outcome=pl.lit("rejected"),
            reason=pl.lit(
                "Xid line without a numeric code after the PCI address; expected "
                "e.g. 'NVRM: Xid (PCI:0000:3b:00): 79, pid=..., ...'"
            ),
        )
    rest = pl.col("rest") if "rest" in g.columns else pl.col("msg")
    detail = rest.str.replace_all(r"\s+", " ").str.strip_chars()
    detail = pl.when(detail == "").then(None).otherwise(detail)
    stated = rest.str.extract(r"\b(Fatal|Non-fatal|Nonfatal|NonFatal|Non-Fatal)\b", 1)
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
        ``gpu_uuid_map``, ``rate_limit_notice``), ``framing`` (``dmesg``,
        ``dmesg_T``, ``rfc3164``, ``iso``, ``kmsg``, ``bgl``, ``tbird``,
        ``hpc``, ``bare``), ``mono_s`` (kernel clock, s since boot), ``wall``
        (the line's own time text, never a date inside the message), ``host``,
        ``code`` (Xid code as text, ``sxid:N``, ``wc_status:N``, ``CE``/``UE``),
        ``device`` (GPU PCI ``dddd:bb:dd``, ``"pci netdev"`` for NIC ports,
        ``mc0``, ``cpu3``), ``failure_mode``, ``severity``, ``count`` (Int64;
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
    sev = pl.col("failure_mode").replace_strict(
        kp.MODE_SEVERITY, default="error", return_dtype=pl.String
    )
    out = out.with_columns(
        severity=pl.when(pl.col("outcome") == "event").then(
            pl.coalesce(pl.col("severity"), sev)
        ),
        flags=pl.lit(None, dtype=pl.String),
    )
    out = link_context(out.select(list(_OUT_SCHEMA)).cast(_OUT_SCHEMA))
    return out


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
        earlier one).

    Notes
    -----
    The rate-limit window uses ``ts`` when both lines have it, else the kernel
    clock ``mono_s`` (same boot assumed within the window).
    """
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
def _split(data: bytes) -> pl.Series:
    r"""Bytes ending in a newline -> lines (invalid UTF-8 and NUL replaced).

    Fast path: polars' multi-threaded CSV reader with a separator byte that the
    data does not contain and no quoting, one column. It is used only when the
    block has no ``\x01`` and no ``\r`` and yields one row per newline;
    otherwise (or on any reader error) the exact split below is used.
    """
    if b"\x01" not in data and b"\r" not in data:
        try:
            lines = pl.read_csv(
                data,
                has_header=False,
                separator="\x01",
                quote_char=None,
                schema={"line": pl.String},
                encoding="utf8-lossy",
            ).to_series()
        except pl.exceptions.PolarsError:  # pragma: no cover - defensive
            lines = None
        if lines is not None and lines.len() == data.count(b"\n"):
            lines = lines.fill_null("")
            if b"\x00" in data:
                lines = lines.str.replace_all("\x00", "\ufffd", literal=True)
            return lines
    text = data.decode("utf-8", errors="replace").replace("\x00", "\ufffd")
    s = pl.Series("line", [text]).str.split("\n").explode()
    return s.slice(0, s.len() - 1).str.strip_suffix("\r")


def _batches(path: Path, batch_bytes: int = BATCH_BYTES) -> Iterator[pl.Series]:
    """Stream a plain or gzip file as batches of lines (bounded memory)."""
    with path.open("rb") as head:
        gz = head.read(2) == b"\x1f\x8b"
    fh = gzip.open(path, "rb") if gz else path.open("rb")  # noqa: SIM115
    try:
        rest = b""
        while block := fh.read(batch_bytes):
            data = rest + block
            cut = data.rfind(b"\n")
            if cut < 0:
                rest = data
                continue
            rest = data[cut + 1 :]
            yield _split(data[: cut + 1])
        if rest:
            yield _split(rest + b"\n")
    except (OSError, EOFError, zlib.error) as exc:
        msg = (
            f"not a readable gzip file ({exc}); it may be truncated. Copy it again "
            "or decompress what is there (zcat FILE > OUT) and ingest OUT."
        )
        raise IngestError(path, msg) from exc
    finally:
        fh.close()


def _file_host(path: Path) -> str:
    """Host name from a file name, rotations included.

    ``host-a.log.gz``, ``host-a.log.1`` and ``host-a.log.2.gz`` all give
    ``host-a``: compression, rotation numbers and log suffixes are removed.
    """
    name = path.name
    for _ in range(4):  # e.g. .log.2.gz: strip in any order, a few layers deep
        name = re.sub(r"\.(gz|log|txt|out|dmesg|syslog|\d+)$", "", name)
    return name


@dataclass(frozen=True)
class _Parsed:
    n_lines: int
    events: pl.DataFrame
    rejects: pl.DataFrame
    ignored: pl.DataFrame


_KEEP_REASONS = ("gpu_uuid_map", "rate_limit_notice")
_KMSG_US = r"^\d{1,4},\d+,(\d+),[^;]*;"


def _prefilter(raw: pl.Series) -> pl.DataFrame:
    """Cheap tests on every line: keyword candidate, blank, carries a kernel clock.

    Returns ``cand``, ``blank`` and ``clock`` (Boolean, one row per line). The
    three regexes are literal-led or anchored, so a line costs a few scans, not
    the capture groups of :data:`relkit.ingest._kernel_patterns.FRAMING`.
    """
    line = pl.col("line")
    return pl.DataFrame({"line": raw}).select(
        cand=line.str.contains(kp.KEYWORDS),
        blank=~line.str.contains(r"\S"),
        clock=line.str.contains(kp.CLOCK),
    )


def _clock_lines(raw: pl.Series, line_no: pl.Series, host: str | None) -> pl.DataFrame:
    """Kernel clock and host of lines known to carry one (:data:`kp.CLOCK`).

    Returns ``line_no, hkey, mono, walled`` (``walled``: the line also has a
    wall stamp, so it can anchor its boot). Agrees with :func:`_framing` on
    ``mono_s`` and ``host`` (checked by a test); lines whose host could come from
    an NCCL message prefix take :func:`_framing` itself.
    """
    line = pl.col("line")
    c = pl.DataFrame({"line": raw, "line_no": line_no}).with_columns(
        k_us=line.str.extract(_KMSG_US, 1),
        mono_txt=line.str.extract(kp.CLOCK_MONO, 1),
        host=line.str.extract(kp.CLOCK_HOST, 1),
        hint=line.str.contains(kp.NCCL_HOST_HINT),
        bracket=line.str.starts_with("["),
    )
    hard = c.get_column("hint") & c.get_column("host").is_null()
    if hard.any():
        full = _framing(raw.filter(hard)).get_column("host")
        host_s = c.get_column("host").scatter(hard.arg_true(), full)
        c = c.with_columns(host=host_s)
    return c.select(
        "line_no",
        hkey=pl.col("host").fill_null(pl.lit(host)).fill_null(""),
        mono=pl.when(pl.col("k_us").is_not_null())
        .then(pl.col("k_us").cast(pl.Float64) / 1e6)
        .otherwise(pl.col("mono_txt").cast(pl.Float64)),
        walled=pl.col("k_us").is_null() & ~pl.col("bracket"),
    )


def _anchor_boots(
    tracker: BootTracker,
    m: pl.DataFrame,
    batch: pl.Series,
    offset: int,
    *,
    tz: str | None,
    ref: dt.date | None,
    path: Path,
) -> None:
    """Give each new (host, boot) of ``m`` its anchor: first valid wall + clock.

    Only the first walled line of each boot without an anchor is parsed
    (framing and wall time); if its wall text is no valid instant, the next one.
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
        lines = batch.gather(first.get_column("line_no") - offset - 1)
        fr = _framing(lines).select("framing", "wall", "host")
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


def _ignored_rest(pre: pl.DataFrame) -> pl.DataFrame:
    """``reason, len`` of the lines that are no candidates (blank or no_signal)."""
    rest = pre.filter(~pl.col("cand"))
    n_blank = int(rest.get_column("blank").sum())
    counts = {"blank": n_blank, "no_signal": rest.height - n_blank}
    return pl.DataFrame(
        {"reason": list(counts), "len": list(counts.values())},
        schema={"reason": pl.String, "len": pl.UInt32},
    ).filter(pl.col("len") > 0)


def _parse(
    path: Path,
    *,
    tz: str | None,
    ref: dt.date | None,
    host: str | None,
    full: bool = False,
) -> _Parsed:
    """Stream one file through classify, times and context; hold only kept rows.

    Per batch, cheap tests find the candidate lines (a keyword) and the lines
    with a kernel clock. Only candidates get :func:`_classify` and their wall
    times; clock lines give their clock and host for boot numbering, and the
    first walled line of each new boot is parsed as its anchor. Other lines are
    counted as ``no_signal`` (or ``blank``) without further parsing.
    ``full=True`` classifies and times every line instead (the reference the
    tests compare the fast path with).
    """
    tracker = BootTracker()
    kept, rejects, ignored = [], [], []
    offset = 0
    for batch in _batches(path):
        n = batch.len()
        pre = _prefilter(batch).with_columns(
            line_no=pl.int_range(offset + 1, offset + 1 + n, dtype=pl.Int64)
        )
        if full:
            pre = pre.with_columns(cand=True)
        cand = pre.get_column("cand")
        c = _classify(batch.filter(cand), pre.get_column("line_no").filter(cand))
        if host is not None:
            c = c.with_columns(host=pl.col("host").fill_null(host))
        c = mark_bad_times(
            c.with_columns(wall_times(c, tz=tz, reference_date=ref, path=path))
        )
        clock = pre.get_column("clock")
        if full:
            seg = tracker.segment(c)
        elif clock.any():
            m = tracker.number(
                _clock_lines(
                    batch.filter(clock), pre.get_column("line_no").filter(clock), host
                )
            )
            _anchor_boots(tracker, m, batch, offset, tz=tz, ref=ref, path=path)
            seg = m.select("line_no", "boot_no")
        else:
            seg = pl.DataFrame(schema={"line_no": pl.Int64, "boot_no": pl.Int64})
        c = c.join(seg, on="line_no", how="left", maintain_order="left")
        bad = c.filter(pl.col("outcome") == "rejected")
        if bad.height:
            rejects.append(
                bad.select(
                    "line_no",
                    "reason",
                    raw=batch.gather(bad.get_column("line_no") - offset - 1),
                )
            )
        ignored.append(
            c.filter(pl.col("outcome") == "ignored").group_by("reason").len()
        )
        ignored.append(_ignored_rest(pre))
        kept.append(
            c.filter(
                (pl.col("outcome") == "event") | pl.col("reason").is_in(_KEEP_REASONS)
            )
        )
        offset += n
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
        if ignored
        else pl.DataFrame(schema={"reason": pl.String, "n_lines": pl.UInt32})
    )
    rej = (
        pl.concat(rejects)
        if rejects
        else pl.DataFrame(
            schema={"line_no": pl.Int64, "reason": pl.String, "raw": pl.String}
        )
    )
    return _Parsed(offset, _events_table(events), rej, ign.cast({"n_lines": pl.Int64}))


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
    Files are streamed in batches of about 32 MB; only event lines and a few
    context lines (GPU UUID maps, rate-limit notices) are held until the file
    ends, so memory is bounded by the batch size and the number of events, not
    of lines (``bench/bench_kernel_ingest.py``: about 0.45 GB peak RSS for a
    1.2 GB, 10-million-line log). Invalid UTF-8 bytes are replaced by U+FFFD,
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
            host=_file_host(f) if host_from_filename else host,
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

    def parse(p: Path) -> Parsed:
        parsed = _parse(p, tz=tz, ref=ref, host=host)
        return Parsed(
            n_lines=parsed.n_lines,
            tables={"events": parsed.events},
            rejects=parsed.rejects,
            options={},
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
    )
