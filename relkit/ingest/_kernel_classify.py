"""Classify kernel/syslog lines: framing, signal, failure mode, context.

:func:`classify_lines` is a pure, vectorised function over a batch of lines (no
Python loop per line): it finds each line's framing (``dmesg``, ``dmesg -T``,
RFC 3164, ISO/RFC 3339, ``/dev/kmsg``, and the loghub BGL/Thunderbird/HPC
shapes), then the signal in the message (NVIDIA Xid and SXid, GPUs fallen off
the bus or failing at boot, mlx5 link/module/PCIe events, NIC drivers' ``NIC
Link is Down|Up``, InfiniBand port states, NCCL and PyTorch ProcessGroupNCCL
errors and watchdog timeouts, EDAC, MCE notices and records, the mcelog
daemon's records, APEI GHES severities, memory-failure recovery, kernel
panics).
:func:`link_context` carries context lines (GPU UUID maps, rate-limit notices,
duplicates, boot-failure and machine-check continuations) onto events, and
:func:`boot_time_links` marks link downs at boot. The patterns and code tables
are data in :mod:`relkit.ingest._kernel_patterns`; reading files is
:mod:`relkit.ingest.kernel`.
"""

import datetime as dt

import polars as pl

from relkit.ingest import _kernel_patterns as kp
from relkit.ingest._kernel_time import add_flag
from relkit.schema import UTC

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
    """Xid code -> failure mode: NVIDIA's whole Xid catalogue, from relkit.taxonomy."""
    from relkit.taxonomy import XID_MODES

    return dict(XID_MODES)


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


def split_framing(raw: pl.Series) -> pl.DataFrame:
    """Split lines into framing, time fields, host and message (vectorised)."""
    g = raw.str.extract_groups(kp.FRAMING).struct.unnest()
    msg_cols = [
        "k_msg",
        "d_msg",
        "t_msg",
        "i_msg",
        "x_msg",
        "r_msg",
        "s_msg",
        "b_msg",
        "u_msg",
        "h_msg",
    ]
    names = [
        "kmsg",
        "dmesg",
        "dmesg_T",
        "iso",
        "iso",
        "rfc3164",
        "rfc3164",
        "bgl",
        "tbird",
        "hpc",
    ]
    framing = pl.when(pl.col(msg_cols[0]).is_not_null()).then(pl.lit(names[0]))
    for col, name in zip(msg_cols[1:], names[1:], strict=True):
        framing = framing.when(pl.col(col).is_not_null()).then(pl.lit(name))
    msg = pl.coalesce([pl.col(c) for c in msg_cols] + [pl.lit(raw)])
    # the mcelog daemon's lines name it only in their syslog tag: keep it
    tag = pl.coalesce("i_tag", "x_tag", "r_tag", "s_tag")
    msg = (
        pl.when(tag.str.starts_with("mcelog") & ~msg.str.starts_with("mcelog:"))
        .then(pl.concat_str(pl.lit("mcelog: "), msg))
        .otherwise(msg)
    )
    nccl_host = msg.str.extract(kp.NCCL_HOST, 1)
    return g.select(
        framing=framing.otherwise(pl.lit("bare")),
        msg=msg,
        mono_s=pl.coalesce(
            pl.col("d_mono", "i_mono", "x_mono", "r_mono", "s_mono").cast(pl.Float64),
            pl.col("k_us").cast(pl.Float64, strict=False) / 1e6,
        ),
        wall=pl.coalesce(
            "t_wall",
            "i_wall",
            "x_wall",
            "r_wall",
            "s_wall",
            "b_epoch",
            "u_epoch",
            "h_epoch",
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


#: MCi_STATUS bits 63..60 (the first hex digit): bit 61 is UC, "error uncorrected"
#: (Intel SDM Vol. 3B §16.3.2.2 "IA32_MCi_STATUS MSRs"; AMD APM Vol. 2 §9.3.2.3).
_UC_BIT = {f"{d:x}": bool(d & 0b0010) for d in range(16)}
#: Bits 59..56 (the second digit): bit 57 is PCC, "processor context corrupt".
_PCC_BIT = {f"{d:x}": bool(d & 0b0010) for d in range(16)}
#: APEI GHES severity words (drivers/acpi/apei/ghes.c) -> SEVERITIES.
_GHES_SEVERITY = {
    "fatal": "fatal",
    "recoverable": "error",
    "corrected": "warning",
    "info": "info",
}
#: PyTorch's ``NCCL error in: ...`` lines whose NCCL result is the network's:
#: ncclSystemError ("unhandled system error": a socket or IB verbs call failed)
#: and ncclRemoteError ("remote process exited or there was a network error").
#: The others (cuda error, internal error, invalid usage/argument) are no
#: network failure: ignored with reason ``nccl_not_network_error``.
_NCCL_NETWORK = r"(?i)unhandled system error|remote process exited|network error"
_HOST_NET_KINDS = (
    "ib_port",
    "ib_port_state",
    "ghes",
    "mce_notice",
    "mce",
    "mce_panic",
    "memory_failure",
    "nccl_torch",
)
_LINK_IGNORED_STATES = ("INIT", "ARMED")


def _status_bits(status: pl.Expr) -> tuple[pl.Expr, pl.Expr]:
    """UC (bit 61) and PCC (bit 57) of a 16-digit lower-case MCi_STATUS word."""
    uc = status.str.slice(0, 1).replace_strict(
        _UC_BIT, default=None, return_dtype=pl.Boolean
    )
    pcc = status.str.slice(1, 1).replace_strict(
        _PCC_BIT, default=None, return_dtype=pl.Boolean
    )
    return uc, pcc


def _mce_record(
    uncorrected: pl.Expr, fatal: pl.Expr, memory: pl.Expr | None = None
) -> dict[str, pl.Expr]:
    """Mode and severity of one machine-check record, whoever printed it.

    Uncorrected -> ``host/mce`` (``host/memory_ue`` where ``memory``), and
    ``fatal`` severity where ``fatal`` (PCC, or the line says so); corrected ->
    ``host/mce_corrected``, ``warning``. The kernel's own record, the mcelog
    daemon's and the AMD decoder's are all decided here.
    """
    mode = (
        pl.when(uncorrected)
        if memory is None
        else pl.when(uncorrected & memory)
        .then(pl.lit("host/memory_ue"))
        .when(uncorrected)
    )
    return {
        "failure_mode": mode.then(pl.lit("host/mce")).otherwise(
            pl.lit("host/mce_corrected")
        ),
        "severity": pl.when(uncorrected & fatal)
        .then(pl.lit("fatal"))
        .when(~uncorrected)
        .then(pl.lit("warning")),
    }


#: Code of the events of mcelog records, and the reason of their kept context
#: lines (``CPU n BANK m``, ``MCA: ...``).
MCELOG_CODE = "mcelog"
MCELOG_RECORD = "mcelog_record"
_PANIC = "host/kernel_panic"
#: Code of the events of the AMD decoder's records (``MCn_STATUS[...]`` lines),
#: and the reason of their ``Unified Memory Controller`` / ``DRAM ECC error``
#: context lines (kept: they make an uncorrected record ``host/memory_ue``).
AMD_MCA_CODE = "amd_mca"
AMD_MEMORY = "mce_amd_memory"


def _amd_status_cols() -> dict[str, pl.Expr]:
    """Signal columns of the AMD decoder's ``CPU:n (f:m:s) MCk_STATUS[...]`` line.

    Decided as the Intel record (:func:`_host_net_cols`, kind ``mce``): the
    STATUS word's UC bit (61) set -> ``host/mce`` (``fatal`` when PCC, bit 57,
    is set too), clear -> ``host/mce_corrected`` (``warning``); the bracket's
    ``UE`` / ``CE`` / ``-`` (deferred) flag decides when the word is short.
    Device ``cpuN``; an uncorrected record followed by a ``Unified Memory
    Controller`` / ``DRAM ECC error`` line becomes ``host/memory_ue``
    (:func:`link_context`).
    """
    status = pl.col("status").str.to_lowercase().str.zfill(16)
    long = pl.col("status").str.len_chars() == 16
    uc, pcc = _status_bits(status)
    uc = pl.when(long).then(uc).otherwise(pl.col("kind") == "UE")
    pcc = (
        pl.when(long)
        .then(pcc)
        .otherwise(pl.col("flags").str.contains(r"(?:^|\|)PCC(?:\||$)"))
    )
    return {
        "code": pl.lit(AMD_MCA_CODE),
        "device": pl.format("cpu{}", pl.col("cpu")),
        **_mce_record(uc, pcc),
        "detail": pl.col("msg").str.extract(r"\[Hardware Error\]:\s*(.*)$", 1),
    }


def _mcelog_status_cols() -> dict[str, pl.Expr]:
    """Signal columns of an mcelog record's ``STATUS <hex> MCGSTATUS <hex>`` line.

    Decided as the kernel's own record (:func:`_host_net_cols`, kind ``mce``):
    MCi_STATUS bit 61 (UC) set -> ``host/mce`` (``fatal`` when bit 57, PCC, is
    set too), clear -> ``host/mce_corrected`` (``warning``). An uncorrected
    record whose MCA error code (bits 15..0) is a memory-controller error
    (``0000 0000 1MMM CCCC``, bit 12 aside; Intel SDM Vol. 3B §16.9.2
    "Compound Error Codes", memory controller errors) is
    ``host/memory_ue``; so is one whose ``MCA:`` line says ``MEMORY
    CONTROLLER`` (:func:`link_context`).
    """
    status = pl.col("status").str.to_lowercase().str.zfill(16)
    uc, pcc = _status_bits(status)
    mcacod = status.str.slice(12, 4).str.to_integer(base=16, strict=False)
    memory = (mcacod.cast(pl.Int64) & 0xEF80) == 0x0080
    return {
        "code": pl.lit(MCELOG_CODE),
        **_mce_record(uc, pcc, memory),
        "detail": pl.format(
            "STATUS {} MCGSTATUS {}", pl.col("status"), pl.col("mcgstatus")
        ),
    }


def _host_net_cols(kind: str, rest: pl.Expr) -> dict[str, pl.Expr]:
    """Signal columns of the InfiniBand, MCE, GHES, memory-failure, torch kinds."""
    if kind in ("ib_port", "ib_port_state"):
        state = pl.col("state")
        early = state.is_in(_LINK_IGNORED_STATES)
        return {
            "outcome": pl.when(early)
            .then(pl.lit("ignored"))
            .otherwise(pl.lit("event")),
            "reason": pl.when(early).then(pl.lit("link_init")),
            "device": pl.when(pl.col("port").is_not_null())
            .then(pl.format("{} port {}", pl.col("ibdev"), pl.col("port")))
            .otherwise(pl.col("ibdev")),
            "failure_mode": pl.when(state == "DOWN")
            .then(pl.lit("network/link_down"))
            .when(state == "ACTIVE")
            .then(pl.lit("network/link_up")),
            "detail": pl.format("Link {}", state),
        }
    if kind == "ghes":
        return {
            "failure_mode": pl.when(pl.col("sev") == "fatal")
            .then(pl.lit("host/ghes_fatal"))
            .otherwise(pl.lit("host/ghes_nonfatal")),
            "severity": pl.col("sev").replace_strict(
                _GHES_SEVERITY, default=None, return_dtype=pl.String
            ),
            "code": pl.col("sev"),
            "detail": pl.format("event severity: {}", pl.col("sev")),
        }
    if kind == "mce_notice":
        return {"failure_mode": pl.lit("host/mce_notice")}
    if kind in ("mce", "mce_panic"):
        if kind == "mce_panic":
            return {
                "failure_mode": pl.lit("host/mce"),
                "severity": pl.lit("fatal"),
                "code": pl.lit("panic"),
            }
        status = rest.str.extract(
            r"Bank \d+: ([0-9a-fA-F]{16})\b", 1
        ).str.to_lowercase()
        uc, pcc = _status_bits(status)
        said_fatal = rest.str.contains(r"(?i)\b(?:fatal|panic)")
        failure = (
            pl.col("exc").is_not_null()
            | rest.str.contains(r"(?i)uncorrect|fatal|panic")
            | uc.fill_null(value=True)  # no readable status: as before, a failure
        )
        return {
            "device": pl.format("cpu{}", pl.col("cpu")),
            **_mce_record(failure, said_fatal | pcc.fill_null(value=False)),
            "detail": pl.col("msg").str.extract(r"\[Hardware Error\]:\s*(.*)$", 1),
        }
    if kind == "memory_failure":
        return {
            "failure_mode": pl.lit("host/memory_ue"),
            "code": pl.lit("memory_failure"),
            "detail": pl.format("pfn {}: {}", pl.col("pfn"), rest),
        }
    # nccl_torch
    net = rest.str.contains(_NCCL_NETWORK)
    return {
        "outcome": pl.when(net).then(pl.lit("event")).otherwise(pl.lit("ignored")),
        "reason": pl.when(~net).then(pl.lit("nccl_not_network_error")),
        "failure_mode": pl.when(net).then(pl.lit("network/nccl_error")),
        "code": pl.when(net).then(
            pl.format(
                "nccl:{}",
                rest.str.extract(r"^([^,(]+)", 1)
                .str.strip_chars()
                .str.replace_all(" ", "_"),
            )
        ),
        "detail": pl.when(net).then(
            pl.format("NCCL error in: {}, {}", pl.col("where"), rest)
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
    if kind in ("mcelog_cpu", "mcelog_mca"):
        # a record's CPU and MCA decode: kept, for its STATUS line (link_context)
        cols = {"outcome": pl.lit("ignored"), "reason": pl.lit(MCELOG_RECORD)}
        if kind == "mcelog_cpu":
            cols["device"] = pl.format("cpu{}", pl.col("cpu"))
        else:
            cols["detail"] = pl.col("rest").str.replace_all(r"\s+", " ")
        return g.select("i", **cols)
    if kind in _XID_REJECTS:
        return g.select(
            "i", outcome=pl.lit("rejected"), reason=pl.lit(_XID_REJECTS[kind])
        )
    from relkit.taxonomy import STATED_SEVERITY

    rest = pl.col("rest") if "rest" in g.columns else pl.col("msg")
    if "rest2" in g.columns:
        rest = pl.coalesce(rest, pl.col("rest2"))
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
    elif kind in ("link", "nic_link"):
        state = pl.col("state").str.to_lowercase()
        cols |= {
            "device": pl.format("{} {}", _pci(pl.col("pci")), pl.col("netdev")),
            "failure_mode": pl.format("network/link_{}", state),
            "detail": pl.format("Link {}", state),
        }
        if kind == "nic_link":
            cols["detail"] = rest.str.replace_all(r"\s+", " ").str.strip_chars()
    elif kind == "mcelog_status":
        cols |= _mcelog_status_cols()
    elif kind == "mce_amd":
        cols |= _amd_status_cols()
    elif kind == "mcelog_ce_threshold":
        cols |= {
            "failure_mode": pl.lit("host/memory_ce"),
            "severity": pl.lit("warning"),
            "code": pl.lit("ce_threshold"),
        }
    elif kind == "kernel_panic":
        cols |= {"failure_mode": pl.lit(_PANIC), "code": pl.lit("panic")}
    elif kind in _HOST_NET_KINDS:
        cols |= _host_net_cols(kind, rest)
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
        initialised at boot; ``panic`` for a kernel panic, ``mcelog`` for an
        mcelog record, ``ce_threshold`` for its corrected-error threshold line,
        ``memory_failure``, the GHES severity word, ``nccl:<error>`` for
        PyTorch NCCL errors), ``device`` (GPU PCI ``dddd:bb:dd``, ``"pci
        netdev"`` for NIC ports, ``"mlx5_0 port 1"`` for InfiniBand ports,
        ``mc0``, ``cpu3``), ``failure_mode``,
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
    return classify_numbered(raw, line_no)


def classify_numbered(
    raw: pl.Series,
    line_no: pl.Series,
    *,
    part: pl.Series | None = None,
) -> pl.DataFrame:
    """:func:`classify_lines` of lines with the given (increasing) line numbers.

    ``part`` (one value per line, e.g. the file a line comes from when the
    lines of several files are classified together) keeps parts apart: lines
    of different parts are never duplicates of each other, and lines whose
    framing names no host are linked only within their part (their ``host``
    stays null).
    """
    n = raw.len()
    base = split_framing(raw).with_columns(
        i=pl.int_range(n, dtype=pl.Int64),
        line_hash=raw.hash() if part is None else pl.struct(raw, part).hash(),
        blank=raw.str.strip_chars() == "",
    )
    if part is not None:
        # a placeholder host per part for host-less lines, removed after linking
        base = base.with_columns(
            host=pl.coalesce(
                pl.col("host"), pl.lit(_NO_HOST) + pl.lit(part).cast(pl.String)
            )
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
    if part is not None:
        out = out.with_columns(
            host=pl.when(~pl.col("host").str.starts_with(_NO_HOST)).then("host")
        )
    return out


#: Prefix of the placeholder host of a part's host-less lines (no host name
#: holds a control character).
_NO_HOST = "\x1f"


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


#: Host-level lines that continue a record of the same mode with a device: a
#: ``Kernel panic ... machine check`` after the CPU's machine-check record, a
#: ``Memory failure`` or ``Uncorrected hardware memory error`` line after the EDAC
#: UE of the memory controller. They take its device, so both are one incident.
_HOST_CONTINUED = ("host/mce", "host/memory_ue")


#: Modes of the records a ``Kernel panic - not syncing: ...`` line of the same
#: host may follow (within :data:`CONTINUATION_S`): the panic is their
#: consequence and takes their mode and device (one incident).
_PANIC_AFTER = ("host/mce", "host/ghes_fatal", "host/memory_ue")


def _mcelog_context(frame: pl.DataFrame) -> pl.DataFrame:
    """Give mcelog STATUS events their record's CPU and MCA decode.

    The last earlier ``CPU n BANK m`` line of the host (continuation rule)
    gives the device ``cpuN``, the last earlier ``MCA: ...`` line its text to
    the detail; an uncorrected record whose MCA line says ``MEMORY
    CONTROLLER`` becomes ``host/memory_ue``.
    """
    ev = pl.col("outcome") == "event"
    f = frame.with_columns(_hk=pl.col("host").fill_null("")).sort("line_no")
    targets = f.filter(ev & (pl.col("code") == MCELOG_CODE))
    ctx = f.filter(pl.col("reason") == MCELOG_RECORD)
    if not (targets.height and ctx.height):
        return frame
    cpu = ctx.filter(pl.col("device").is_not_null()).rename({"device": "_dev"})
    mca = ctx.filter(pl.col("detail").is_not_null()).rename({"detail": "_mca"})
    for marks, take in ((cpu, "_dev"), (mca, "_mca")):
        got = _after(targets, marks, take=[take]) if marks.height else None
        if got is None or got.is_empty():
            frame = frame.with_columns(pl.lit(None, dtype=pl.String).alias(take))
        else:
            frame = frame.join(got, on="line_no", how="left", maintain_order="left")
    has_mca = pl.col("_mca").is_not_null() & ~pl.col("detail").fill_null(
        ""
    ).str.starts_with("MCA:")
    memory = pl.col("_mca").str.contains("MEMORY CONTROLLER").fill_null(value=False)
    return frame.with_columns(
        device=pl.coalesce("device", "_dev"),
        detail=pl.when(has_mca)
        .then(pl.format("{}; {}", pl.col("_mca"), pl.col("detail")))
        .otherwise("detail"),
        failure_mode=pl.when((pl.col("failure_mode") == "host/mce") & memory)
        .then(pl.lit("host/memory_ue"))
        .otherwise("failure_mode"),
    ).drop("_dev", "_mca")


def _amd_memory_context(frame: pl.DataFrame) -> pl.DataFrame:
    """Make an uncorrected AMD record of the memory controller ``host/memory_ue``.

    A ``Unified Memory Controller Ext. Error Code`` or ``DRAM ECC error`` line
    (reason ``mce_amd_memory``) belongs to the last earlier ``MCn_STATUS``
    event of its host (continuation rule, :func:`_after`); that event, if
    ``host/mce``, becomes ``host/memory_ue``.
    """
    f = frame.with_columns(_hk=pl.col("host").fill_null("")).sort("line_no")
    targets = f.filter(pl.col("reason") == AMD_MEMORY)
    marks = f.filter(
        (pl.col("outcome") == "event") & (pl.col("code") == AMD_MCA_CODE)
    ).with_columns(_rec=pl.col("line_no"))
    if not (targets.height and marks.height):
        return frame
    recs = _after(targets, marks, take=["_rec"]).get_column("_rec")
    hit = pl.col("line_no").is_in(recs.implode()) & (
        pl.col("failure_mode") == "host/mce"
    )
    return frame.with_columns(
        failure_mode=pl.when(hit)
        .then(pl.lit("host/memory_ue"))
        .otherwise("failure_mode")
    )


def _before_in_time(targets: pl.DataFrame, anchors: pl.DataFrame) -> pl.DataFrame:
    """``line_no`` of ``targets`` and ``_mode, _dev`` of the anchor just before.

    Same host, and the anchor at most :data:`CONTINUATION_S` before the target:
    by wall time ``_ts`` when both have one, whatever the line order (``cat
    kern.log kern.log.1``); else by kernel clock on an earlier line of the same
    boot; else, when neither line has any time, at most
    :data:`CONTINUATION_LINES` lines before it. A target whose wall text is
    not resolved yet (``_pending``) is left for the pass with times.
    """
    tol = dt.timedelta(seconds=CONTINUATION_S)
    take = ["_mode", "_dev"]
    got = []
    tw = targets.filter(pl.col("_ts").is_not_null()).sort("_ts")
    aw = anchors.filter(pl.col("_ts").is_not_null()).sort("_ts")
    if tw.height and aw.height:
        got.append(
            tw.select("_hk", "line_no", "_ts")
            .join_asof(
                aw.select("_hk", "_ts", *take),
                on="_ts",
                by="_hk",
                strategy="backward",
                tolerance=tol,
                check_sortedness=False,
            )
            .filter(pl.col("_mode").is_not_null())
            .select("line_no", *take)
        )
    for kind in ("mono", "none"):
        t = targets.filter(pl.col("_tk") == kind).sort("line_no")
        a = anchors.filter(pl.col("_tk") == kind).sort("line_no")
        if not (t.height and a.height):
            continue
        j = t.select("_hk", "_boot", "line_no", "mono_s").join_asof(
            a.select(
                "_hk", "_boot", "line_no", *take, _line_m="line_no", _mono_m="mono_s"
            ),
            on="line_no",
            by=["_hk", "_boot"],
            strategy="backward",
            allow_exact_matches=False,
            check_sortedness=False,
        )
        if kind == "mono":
            near = (pl.col("mono_s") - pl.col("_mono_m")).is_between(
                0.0, CONTINUATION_S
            )
        else:
            near = pl.col("line_no") - pl.col("_line_m") <= CONTINUATION_LINES
        got.append(
            j.filter(pl.col("_line_m").is_not_null() & near).select("line_no", *take)
        )
    if not got:
        return pl.DataFrame(
            schema={"line_no": pl.Int64, "_mode": pl.String, "_dev": pl.String}
        )
    return pl.concat(got)


def _panic_context(frame: pl.DataFrame) -> pl.DataFrame:
    """Join a kernel panic to the failure record of its host just before it.

    Any ``Kernel panic - not syncing:`` event without a device (``host/
    kernel_panic``, or ``host/mce`` for the machine-check handler's panics)
    takes the mode and device of the latest ``host/mce``, ``host/ghes_fatal``
    or ``host/memory_ue`` event of its host at most :data:`CONTINUATION_S`
    before it (wall time; kernel clock when a line has none; see
    :func:`_before_in_time`). A record after the panic, or longer before it,
    is no cause: the panic stays as it is.
    """
    ev = pl.col("outcome") == "event"
    ts = pl.col("ts") if "ts" in frame.columns else pl.lit(None, dtype=UTC)
    boot = pl.col("boot_no") if "boot_no" in frame.columns else pl.lit(0)
    f = frame.with_columns(
        _hk=pl.col("host").fill_null(""), _ts=ts, _boot=boot.fill_null(-1)
    ).with_columns(
        _tk=pl.when(pl.col("_ts").is_not_null())
        .then(pl.lit("wall"))
        .when(pl.col("wall").is_not_null())
        .then(pl.lit("pending"))
        .when(pl.col("mono_s").is_not_null())
        .then(pl.lit("mono"))
        .otherwise(pl.lit("none"))
    )
    targets = f.filter(
        ev
        & (pl.col("code") == "panic")
        & pl.col("device").is_null()
        & pl.col("failure_mode").is_in([_PANIC, "host/mce"])
    )
    anchors = f.filter(
        ev
        & pl.col("failure_mode").is_in(_PANIC_AFTER)
        & ~((pl.col("code") == "panic") & pl.col("device").is_null())
    ).rename({"failure_mode": "_mode", "device": "_dev"})
    if not (targets.height and anchors.height):
        return frame
    got = _before_in_time(targets, anchors)
    if got.is_empty():
        return frame
    hit = pl.col("_mode").is_not_null()
    return (
        frame.join(got, on="line_no", how="left", maintain_order="left")
        .with_columns(
            failure_mode=pl.when(hit).then("_mode").otherwise("failure_mode"),
            device=pl.when(hit).then("_dev").otherwise("device"),
        )
        .drop("_mode", "_dev")
    )


def _host_context(frame: pl.DataFrame) -> pl.DataFrame:
    """Give device-less MCE panic / memory-failure events their record's device."""
    frame = _panic_context(_amd_memory_context(_mcelog_context(frame)))
    ev = pl.col("outcome") == "event"
    f = frame.with_columns(_hk=pl.col("host").fill_null("")).sort("line_no")
    fills = []
    for mode in _HOST_CONTINUED:
        this = ev & (pl.col("failure_mode") == mode)
        # a panic joins its record by time only (_panic_context)
        targets = f.filter(
            this & pl.col("device").is_null() & pl.col("code").ne_missing("panic")
        )
        anchors = f.filter(this & pl.col("device").is_not_null())
        if targets.height and anchors.height:
            fills.append(
                _after(targets, anchors.rename({"device": "_dev"}), take=["_dev"])
            )
    if not fills:
        return frame
    return (
        frame.join(pl.concat(fills), on="line_no", how="left", maintain_order="left")
        .with_columns(device=pl.coalesce("device", "_dev"))
        .drop("_dev")
    )


#: A link down at most this many seconds after boot (kernel clock, or wall time
#: after a ``Linux version`` boot line of the host) on a port with no earlier
#: link up in that boot is port bring-up, not an outage, if the port comes up
#: in that boot at most :data:`BOOT_LINK_UP_S` seconds after boot.
BOOT_LINK_S = 300.0
#: The bring-up must end by then (the boot window plus 5 minutes): a port still
#: down later, or never up again in the log, had an outage.
BOOT_LINK_UP_S = 600.0
_LINK_DOWN = "network/link_down"
_LINK_UP = "network/link_up"
_LINK_AT_BOOT = "network/link_down_at_boot"


def boot_time_links(rows: pl.DataFrame) -> pl.DataFrame:
    """Re-mode link downs at boot, on ports that come up soon, as ``link_down_at_boot``.

    Parameters
    ----------
    rows : pl.DataFrame
        Classified lines with times (``line_no, outcome, reason, host, device,
        failure_mode, severity, mono_s, flags``; ``ts`` and ``boot_no``
        optional), events and ``boot_marker`` context lines.

    Returns
    -------
    pl.DataFrame
        ``rows`` where a ``network/link_down`` event is within
        :data:`BOOT_LINK_S` seconds of its boot, its port (host, device) had no
        ``network/link_up`` earlier in that boot and has one later in that boot
        at most :data:`BOOT_LINK_UP_S` seconds after boot: its mode becomes
        ``network/link_down_at_boot`` (not a failure), severity ``info``, and
        ``flags`` gains ``boot_time``. The time since boot is the kernel clock
        ``mono_s``; a line without one uses its wall time ``ts`` after the
        host's last ``Linux version ...`` line (reason ``boot_marker``). A
        down at boot on a port that stays down (no up in time, or none at all)
        stays ``network/link_down``: an outage, open until the port comes up.
    """
    ev = pl.col("outcome") == "event"
    down = ev & (pl.col("failure_mode") == _LINK_DOWN)
    up = (ev & (pl.col("failure_mode") == _LINK_UP)).cast(pl.Int64)
    marker = (pl.col("reason") == "boot_marker").fill_null(value=False)
    f = rows.with_columns(
        _hk=pl.col("host").fill_null(""),
        _dev=pl.col("device").fill_null(""),
        _boot=pl.col("boot_no") if "boot_no" in rows.columns else pl.lit(0),
        _ts=pl.col("ts") if "ts" in rows.columns else pl.lit(None, dtype=UTC),
    ).with_columns(
        _mseq=marker.cast(pl.Int64).cum_sum().over("_hk", order_by="line_no"),
        _mts=pl.when(marker)
        .then(pl.col("_ts"))
        .forward_fill()
        .over("_hk", order_by="line_no"),
    )
    ups_clock = up.cum_sum().over("_hk", "_dev", "_boot", order_by="line_no") - up
    ups_mark = up.cum_sum().over("_hk", "_dev", "_mseq", order_by="line_no") - up
    since_mark = (pl.col("_ts") - pl.col("_mts")).dt.total_microseconds() / 1e6
    by_clock = pl.col("mono_s").is_not_null() & (pl.col("mono_s") <= BOOT_LINK_S)
    by_mark = (
        pl.col("mono_s").is_null()
        & since_mark.is_between(0.0, BOOT_LINK_S)
        & (pl.col("_mseq") > 0)
    )
    # the port comes up in the same boot by BOOT_LINK_UP_S (any up of the boot
    # is after a down that had none before it)
    up_b = up.cast(pl.Boolean)
    up_clock = (
        (up_b & (pl.col("mono_s") <= BOOT_LINK_UP_S))
        .fill_null(value=False)
        .any()
        .over("_hk", "_dev", "_boot")
    )
    up_mark = (
        (up_b & pl.col("mono_s").is_null() & (since_mark <= BOOT_LINK_UP_S))
        .fill_null(value=False)
        .any()
        .over("_hk", "_dev", "_mseq")
    )
    at_boot = (
        down
        & (
            (by_clock & (ups_clock == 0) & up_clock)
            | (by_mark & (ups_mark == 0) & up_mark)
        )
    ).fill_null(value=False)
    f = f.with_columns(_at_boot=at_boot)
    return f.with_columns(
        failure_mode=pl.when("_at_boot")
        .then(pl.lit(_LINK_AT_BOOT))
        .otherwise(pl.col("failure_mode")),
        severity=pl.when("_at_boot").then(pl.lit("info")).otherwise(pl.col("severity")),
        flags=add_flag(pl.col("flags"), pl.col("_at_boot"), "boot_time"),
    ).drop("_hk", "_dev", "_boot", "_ts", "_mseq", "_mts", "_at_boot")


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
          reason ``gpu_unsupported_by_driver``;
        - a ``Kernel panic - not syncing: Fatal machine check`` line takes the
          device (``cpuN``) of the uncorrected machine-check record before it,
          and a ``Memory failure: ...: recovery action`` or ``Uncorrected
          hardware memory error`` line the device (``mcN``) of the EDAC UE
          before it, on the same host (the continuation rule below), so a
          record and its consequence form one incident;
        - any ``Kernel panic - not syncing: ...`` event (``host/kernel_panic``,
          or a machine-check handler's ``host/mce`` panic) after a
          ``host/mce``, ``host/ghes_fatal`` or ``host/memory_ue`` event of its
          host takes that event's mode and device (same rule);
        - an mcelog ``STATUS ...`` event takes the device (``cpuN``) of its
          record's ``CPU n BANK m`` line and the text of its ``MCA: ...`` line
          (reason ``mcelog_record``, same rule); an uncorrected record whose
          MCA line says ``MEMORY CONTROLLER`` becomes ``host/memory_ue``.

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
    frame = _host_context(_gpu_boot_context(frame))
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
    flags = add_flag(pl.col("flags"), dup, "duplicate_line")
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
        flags = add_flag(
            flags, pl.col("line_no").is_in(limited.implode()), "rate_limited"
        )
    return out.with_columns(flags=flags)
