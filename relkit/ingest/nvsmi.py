"""Reader of ``nvidia-smi -q`` snapshots: per-GPU ECC counters and row remapping.

``nvidia-smi -q`` (also ``-d ECC,ROW_REMAPPER`` and repeated ``-l`` blocks)
prints one block per run: a ``==============NVSMI LOG==============`` banner, a
zone-less ``Timestamp`` line, then one indented section per GPU headed
``GPU 00000000:1B:00.0``. Both ECC layouts are read: A100/H100 ``SRAM/DRAM
Correctable/Uncorrectable`` and the V100 (Volta and older) ``Single Bit/Double
Bit`` counts per memory structure. :func:`parse_nvsmi` turns the text into one
row per snapshot and GPU, :func:`nvsmi_events` turns consecutive snapshots of a
GPU into events (new uncorrectable and corrected errors from the *aggregate*
deltas, counter resets, pending remaps and page retirements, remap failures),
and :func:`read_nvsmi` writes those events to the store with every line
accounted for, keeping the snapshots (table ``gpu_snapshots``) so that files of
one host collected one by one are compared in time order whatever the order
they are ingested in.
"""

import gzip
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from relkit.errors import IngestError
from relkit.ingest._common import (
    IngestResult,
    Parsed,
    check_file,
    check_tz,
    file_format,
    ingest,
    localize,
)
from relkit.schema import POLARS_SCHEMAS, UTC, require_columns
from relkit.store import Store, file_identities

__all__ = [
    "normalize_pci",
    "nvsmi_events",
    "parse_nvsmi",
    "read_nvsmi",
]

#: The ``kind`` of an nvidia-smi source in the ``sources`` table.
KIND = "nvsmi"
#: Reason in the ``ignored`` table for lines read as part of a snapshot.
IGNORED_REASON = "nvsmi snapshot line"
BANNER = "==============NVSMI LOG=============="

_BANNER_RE = re.compile(r"^\s*=+\s*NVSMI LOG\s*=+\s*$")
_GPU_RE = re.compile(
    r"^GPU\s+([0-9A-Fa-f]{4,8}):([0-9A-Fa-f]{2}):([0-9A-Fa-f]{2})\.([0-7])\s*$"
)
_TS_RE = re.compile(
    r"^[A-Za-z]{3}\s+([A-Za-z]{3})\s+(\d{1,2})\s+(\d{1,2}):(\d{2}):(\d{2})\s+(\d{4})$"
)
_INT_RE = re.compile(r"^\d+$")
#: Values nvidia-smi prints for a field the GPU or driver does not report.
_NOT_AVAILABLE = frozenset({"N/A", "[N/A]", "Not Supported", "[Not Supported]"})
_MONTH_NAMES = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec"
_MONTHS = {m: i for i, m in enumerate(_MONTH_NAMES.split(), 1)}

_ECC_KEYS = {
    "SRAM Correctable": "sram_ce",
    "SRAM Uncorrectable": "sram_ue",
    "SRAM Uncorrectable Parity": "sram_ue_parity",
    "SRAM Uncorrectable SEC-DED": "sram_ue_secded",
    "DRAM Correctable": "dram_ce",
    "DRAM Uncorrectable": "dram_ue",
}
#: The Volta (V100) and older layout: ``ECC Errors → Volatile|Aggregate → Single
#: Bit|Double Bit → <memory structure>``. ``Total`` is their sum.
_BIT_KEYS = {"Single Bit": "sbe", "Double Bit": "dbe"}
_STRUCT_KEYS = {
    "Device Memory": "device_memory",
    "Register File": "register_file",
    "L1 Cache": "l1_cache",
    "L2 Cache": "l2_cache",
    "Texture Memory": "texture_memory",
    "Texture Shared": "texture_shared",
    "CBU": "cbu",
    "Total": "total",
}
#: Section path (below the GPU header) -> (column, value type).
_FIELDS: dict[tuple[str, ...], tuple[str, str]] = {
    **{
        ("ECC Errors", scope.title(), key): (f"n_{scope}_{name}", "count")
        for scope in ("volatile", "aggregate")
        for key, name in _ECC_KEYS.items()
    },
    **{
        ("ECC Errors", scope.title(), bits, key): (f"n_{scope}_{b}_{name}", "count")
        for scope in ("volatile", "aggregate")
        for bits, b in _BIT_KEYS.items()
        for key, name in _STRUCT_KEYS.items()
    },
    ("Retired Pages", "Single Bit ECC"): ("n_retired_sbe_pages", "count"),
    ("Retired Pages", "Double Bit ECC"): ("n_retired_dbe_pages", "count"),
    ("Retired Pages", "Pending Page Blacklist"): ("is_retirement_pending", "bool"),
    # older drivers print the same flag as "Pending"
    ("Retired Pages", "Pending"): ("is_retirement_pending", "bool"),
    ("Remapped Rows", "Correctable Error"): ("n_remapped_ce_rows", "count"),
    ("Remapped Rows", "Uncorrectable Error"): ("n_remapped_ue_rows", "count"),
    ("Remapped Rows", "Pending"): ("is_remap_pending", "bool"),
    ("Remapped Rows", "Remapping Failure Occurred"): ("is_remap_failure", "bool"),
}
_LABELS: dict[str, str] = {}
for _path, (_col, _) in _FIELDS.items():
    _LABELS.setdefault(_col, " / ".join(_path))
_COLUMNS = list(_LABELS)
_VOLATILE = [c for c in _COLUMNS if c.startswith("n_volatile_")]
_AGGREGATE = [c for c in _COLUMNS if c.startswith("n_aggregate_")]
_SRAM_STRUCTS = [
    n for n in _STRUCT_KEYS.values() if n not in ("device_memory", "total")
]
#: Aggregate uncorrectable counters -> failure mode of their new errors (the
#: V100 ``Double Bit`` counts map onto the same modes as Ampere's DRAM / SRAM).
_UE_MODES = {
    "n_aggregate_dram_ue": "gpu/hbm_uncorrectable",
    "n_aggregate_sram_ue": "gpu/sram_uncorrectable",
    "n_aggregate_sram_ue_parity": "gpu/sram_uncorrectable",
    "n_aggregate_sram_ue_secded": "gpu/sram_uncorrectable",
    "n_aggregate_dbe_device_memory": "gpu/hbm_uncorrectable",
    **{f"n_aggregate_dbe_{n}": "gpu/sram_uncorrectable" for n in _SRAM_STRUCTS},
}
#: Aggregate corrected counters, whose rise is a warning (``gpu/precursor``).
_CE_COLUMNS = [
    "n_aggregate_sram_ce",
    "n_aggregate_dram_ce",
    "n_aggregate_sbe_device_memory",
    *(f"n_aggregate_sbe_{n}" for n in _SRAM_STRUCTS),
]
#: Standing states: column -> (failure mode, severity, flag, what it means).
_STATES = {
    "is_remap_pending": (
        "gpu/precursor",
        "warning",
        "remap_pending",
        "warning: a row remap waits for a GPU reset (Remapped Rows / Pending: "
        "Yes); the uncorrectable error behind it is in the DRAM Uncorrectable count",
    ),
    "is_retirement_pending": (
        "gpu/precursor",
        "warning",
        "retirement_pending",
        "warning: a retired page waits for a GPU reset or reboot to be blacklisted "
        "(Retired Pages / Pending Page Blacklist: Yes)",
    ),
    "is_remap_failure": (
        "gpu/row_remap_failure",
        "critical",
        "rma_signal",
        "RMA signal: Remapped Rows / Remapping Failure Occurred: Yes",
    ),
}
#: The Pending flags whose Yes -> No is "resolved by reset" in a counter_reset.
_RESOLVED = {
    "is_remap_pending": ("remap_resolved", "remap resolved by reset", "Remapped Rows"),
    "is_retirement_pending": (
        "retirement_resolved",
        "page retirement resolved by reset",
        "Retired Pages",
    ),
}

#: polars schema of :func:`parse_nvsmi`'s frame.
SNAPSHOT_SCHEMA = pl.Schema(
    {
        "snapshot_ts": UTC,
        "block_no": pl.Int64(),
        "line_no": pl.Int64(),
        "device": pl.String(),
        **{
            col: (pl.Int64() if kind == "count" else pl.Boolean())
            for col, kind in _FIELDS.values()
        },
        "ts_flag": pl.String(),
        "field_line_no": pl.Struct(dict.fromkeys(_COLUMNS, pl.Int64())),
    }
)
_EVENT_SCHEMA = pl.Schema(
    {c: t for c, t in POLARS_SCHEMAS["events"].items() if c != "source_id"}
)


# -- parsing --------------------------------------------------------------------------
@dataclass
class _Gpu:
    block_no: int
    line_no: int
    device: str
    values: dict[str, Any] = field(default_factory=dict)
    lines: dict[str, int] = field(default_factory=dict)


@dataclass
class _Scan:
    n_lines: int
    gpus: list[_Gpu]
    block_ts: dict[int, datetime | None]
    rejects: list[tuple[int, str, str]]


def normalize_pci(bus_id: str) -> str | None:
    """Return a GPU bus id as ``dddd:bb:dd`` lower case, the join key with Xid lines.

    Parameters
    ----------
    bus_id : str
        ``DOMAIN:BUS:DEVICE.FUNCTION`` as nvidia-smi prints it, with an 8-digit
        (or 4-digit) hexadecimal domain, e.g. ``"00000000:1B:00.0"``.

    Returns
    -------
    str or None
        ``"0000:1b:00"``: the domain with at least 4 hex digits (leading zeros
        beyond 4 dropped), bus and device lower case, the function dropped;
        None if ``bus_id`` is not a bus id.

    Examples
    --------
    >>> normalize_pci("00000000:1B:00.0")
    '0000:1b:00'
    >>> normalize_pci("00000001:C3:00.0")
    '0001:c3:00'
    >>> print(normalize_pci("GPU-5f1d"))
    None
    """
    m = _GPU_RE.match(f"GPU {bus_id.strip()}")
    if m is None:
        return None
    return f"{int(m[1], 16):04x}:{m[2].lower()}:{m[3].lower()}"


def _split_lines(text_or_lines: str | bytes | Iterable[str]) -> list[str]:
    """Physical lines without their line terminators (LF or CR LF)."""
    if isinstance(text_or_lines, bytes):
        text_or_lines = text_or_lines.decode("utf-8-sig", errors="replace")
    if isinstance(text_or_lines, str):
        lines = text_or_lines.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
    else:
        lines = [str(x).rstrip("\n") for x in text_or_lines]
    return [x.removesuffix("\r") for x in lines]


def _timestamp(value: str) -> datetime | None:
    m = _TS_RE.match(value.strip())
    if m is None or m[1].title() not in _MONTHS:
        return None
    try:
        return datetime(
            int(m[6]), _MONTHS[m[1].title()], int(m[2]), int(m[3]), int(m[4]), int(m[5])
        )
    except ValueError:
        return None


def _value(kind: str, raw: str) -> tuple[Any, str | None]:
    """Parse a field value: ``(value, None)`` or ``(None, reason)``."""
    v = raw.strip()
    if v in _NOT_AVAILABLE:
        return None, None
    if kind == "count":
        if not _INT_RE.match(v):
            return None, "an integer or N/A"
        n = int(v)
        if not -(2**63) <= n < 2**63:  # the events and snapshot columns are Int64
            return None, "an integer below 2**63 (a counter that large is corrupt)"
        return n, None
    if v in ("Yes", "No"):
        return v == "Yes", None
    return None, "Yes, No or N/A"


def _scan(lines: list[str], *, tz: str | None, source: str) -> _Scan:
    """Walk the lines once: blocks, GPU sections, the known fields, rejects."""
    gpus: list[_Gpu] = []
    block_ts: dict[int, datetime | None] = {}
    rejects: list[tuple[int, str, str]] = []
    block = 0
    gpu: _Gpu | None = None
    orphan: int | None = None  # line of a rejected GPU header whose lines follow
    stack: list[str] = []
    for line_no, line in enumerate(lines, 1):
        text = line.rstrip()
        if not text.strip():
            continue
        if _BANNER_RE.match(text):
            block += 1
            block_ts[block] = None
            gpu, orphan, stack = None, None, []
            continue
        if block == 0:
            reason = f"line outside an NVSMI LOG block (no {BANNER!r} banner before it)"
            rejects.append((line_no, reason, line))
            continue
        indent = len(text) - len(text.lstrip())
        key, colon, raw = text.strip().partition(":")
        key = key.strip()
        if indent == 0:
            gpu, orphan, stack = None, None, []
            if text.startswith("GPU "):
                device = normalize_pci(text[4:])
                if device is None:
                    orphan = line_no
                    reason = (
                        "GPU section header without a PCI bus id "
                        "(expected e.g. 'GPU 00000000:1B:00.0')"
                    )
                    rejects.append((line_no, reason, line))
                    continue
                gpu = _Gpu(block, line_no, device)
                gpus.append(gpu)
            elif key == "Timestamp" and colon:
                stamp = _timestamp(raw)
                if stamp is None:
                    reason = (
                        f"unparseable snapshot Timestamp {raw.strip()!r} (expected "
                        "e.g. 'Mon Jun  9 10:00:00 2025')"
                    )
                    rejects.append((line_no, reason, line))
                elif tz is None:
                    msg = (
                        f"snapshot Timestamp {raw.strip()!r} has no time zone "
                        "(nvidia-smi prints the host's local time) and no zone was "
                        "given. Fix: pass --tz ZONE (library: tz='ZONE') with the "
                        "zone of the host that ran nvidia-smi, e.g. --tz UTC."
                    )
                    raise IngestError(source, msg, line_no=line_no)
                else:
                    block_ts[block] = stamp
            continue
        if orphan is not None:
            reason = f"line of a GPU section whose header (line {orphan}) was rejected"
            rejects.append((line_no, reason, line))
            continue
        if gpu is None:
            continue  # an indented line of the block header: nothing to read
        level = max(indent // 4, 1)
        path = [*stack[: level - 1], key]
        if not colon or not raw.strip():
            stack = path
            continue
        spec = _FIELDS.get(tuple(path))
        if spec is None:
            continue
        col, kind = spec
        if col in gpu.lines:
            reason = (
                f"duplicate field {_LABELS[col]} of GPU {gpu.device} "
                f"(first at line {gpu.lines[col]})"
            )
            rejects.append((line_no, reason, line))
            continue
        value, expected = _value(kind, raw)
        if expected is not None:
            reason = (
                f"malformed value {raw.strip()!r} for {_LABELS[col]} of GPU "
                f"{gpu.device}; expected {expected}"
            )
            rejects.append((line_no, reason, line))
            continue
        gpu.values[col] = value
        gpu.lines[col] = line_no
    if block == 0:
        first = next((x.strip() for x in lines if x.strip()), "")
        msg = (
            f"not nvidia-smi -q output: no {BANNER!r} banner in {len(lines)} line(s)"
            f" (first non-blank line: {first[:60]!r}). Save the text output of "
            "`nvidia-smi -q` (XML from -x is not read); kernel logs are --kind kernel."
        )
        raise IngestError(source, msg)
    return _Scan(len(lines), gpus, block_ts, rejects)


def _snapshot_frame(scan: _Scan, tz: str | None) -> pl.DataFrame:
    rows = [
        {
            "naive": scan.block_ts.get(g.block_no),
            "block_no": g.block_no,
            "line_no": g.line_no,
            "device": g.device,
            **{c: g.values.get(c) for c in _COLUMNS},
            "field_line_no": {c: g.lines.get(c) for c in _COLUMNS},
        }
        for g in scan.gpus
    ]
    schema = {
        "naive": pl.Datetime("us"),
        **{c: t for c, t in SNAPSHOT_SCHEMA.items() if c not in ("snapshot_ts",)},
    }
    del schema["ts_flag"]
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    if tz is None:
        utc, flag = pl.lit(None, dtype=UTC), pl.lit(None, dtype=pl.String)
    else:
        utc, flag = localize(pl.col("naive"), tz)
    frame = frame.with_columns(snapshot_ts=utc, ts_flag=flag)
    return frame.select(SNAPSHOT_SCHEMA.names()).cast(dict(SNAPSHOT_SCHEMA))


def parse_nvsmi(
    text_or_lines: str | bytes | list[str],
    *,
    tz: str | None = None,
    source: str = "<nvsmi>",
) -> pl.DataFrame:
    """Parse ``nvidia-smi -q`` text into one row per snapshot and GPU.

    Parameters
    ----------
    text_or_lines : str, bytes or list of str
        The whole output (one or more ``-l`` blocks), or its lines. Bytes are
        decoded as UTF-8, bad bytes replaced.
    tz : str, optional
        IANA zone of the zone-less ``Timestamp`` lines (the zone of the host
        that ran nvidia-smi), e.g. ``"UTC"``. Required when a block has a
        ``Timestamp``.
    source : str, default "<nvsmi>"
        Name of the input in error messages (the file path).

    Returns
    -------
    pl.DataFrame
        One row per GPU section, in file order, with columns (schema
        :data:`SNAPSHOT_SCHEMA`):

        - ``snapshot_ts`` (Datetime UTC): the block's ``Timestamp`` in UTC; null
          if the block has none or it does not parse.
        - ``block_no`` (Int64): 1-based number of the ``NVSMI LOG`` block.
        - ``line_no`` (Int64): line of the ``GPU 00000000:1B:00.0`` header.
        - ``device`` (String): PCI address ``dddd:bb:dd`` lower case
          (``0000:1b:00``), as in the Xid events.
        - ``n_{volatile,aggregate}_{sram_ce, sram_ue, sram_ue_parity,
          sram_ue_secded, dram_ce, dram_ue}`` (Int64): ECC error counts of the
          ``ECC Errors`` section (``Uncorrectable Parity`` and ``SEC-DED`` on
          drivers that split SRAM uncorrectable errors); volatile counts since the
          last driver load, aggregate counts over the GPU's life (inforom).
        - ``n_{volatile,aggregate}_{sbe,dbe}_{device_memory, register_file,
          l1_cache, l2_cache, texture_memory, texture_shared, cbu, total}``
          (Int64): the V100 layout, ``ECC Errors → Volatile|Aggregate → Single
          Bit|Double Bit → Device Memory, Register File, …, Total``.
        - ``n_retired_sbe_pages``, ``n_retired_dbe_pages`` (Int64),
          ``is_retirement_pending`` (Boolean): ``Retired Pages`` (``Pending Page
          Blacklist``, or ``Pending`` on older drivers).
        - ``n_remapped_ce_rows``, ``n_remapped_ue_rows`` (Int64),
          ``is_remap_pending``, ``is_remap_failure`` (Boolean): ``Remapped Rows``
          (``Correctable Error``, ``Uncorrectable Error``, ``Pending``,
          ``Remapping Failure Occurred``).
        - ``ts_flag`` (String): ``dst_ambiguous`` / ``dst_nonexistent`` when the
          local time is ambiguous or skipped in ``tz``, else null.
        - ``field_line_no`` (Struct of Int64): the line each value was read from.

        A field that is ``N/A``, absent (e.g. ``-d ECC`` output has no
        ``Remapped Rows``) or malformed is null, never 0.

    Raises
    ------
    IngestError
        If the text has no ``NVSMI LOG`` banner (not ``nvidia-smi -q`` output),
        or a block has a ``Timestamp`` and ``tz`` is None (the message names
        ``source``, the line and the fix ``--tz ZONE``), or ``tz`` is not an IANA
        zone.

    Notes
    -----
    Sections are told apart by their indentation (4 spaces a level), so only
    ``Remapped Rows → Pending`` is the remap flag: ``ECC Mode → Pending``
    (``Enabled``) and ``Retired Pages → Pending Page Blacklist`` are other
    fields (case C06: ``grep Pending`` finds 12 lines, 4 of them remap flags).
    The ``Bank Remap Availability Histogram`` and all other sections are read
    past. Malformed values (``abc`` for a counter) are null here;
    :func:`read_nvsmi` writes them to ``rejects`` with their line.

    References
    ----------
    .. [1] NVIDIA, "nvidia-smi" manual page (``-q``, ``-l``, ``-d
       ECC,ROW_REMAPPER``); NVIDIA A100 "Row Remapping" (NVIDIA GPU Memory Error
       Management, DU-10491-001).
    .. [2] relkit case C06 (``shared/cases/README.md``), after mlx-debug-doc
       ``compute/accelerator/nvidia/debug.md``.

    Examples
    --------
    >>> text = '''
    ... ==============NVSMI LOG==============
    ... Timestamp                 : Mon Jun  9 10:00:00 2025
    ... GPU 00000000:1C:00.0
    ...     ECC Mode
    ...         Pending           : Enabled
    ...     Retired Pages
    ...         Single Bit ECC    : N/A
    ...     Remapped Rows
    ...         Pending           : Yes
    ... '''
    >>> snaps = parse_nvsmi(text, tz="UTC")
    >>> snaps.select("device", "n_retired_sbe_pages", "is_remap_pending").row(0)
    ('0000:1c:00', None, True)
    >>> str(snaps["snapshot_ts"][0])
    '2025-06-09 10:00:00+00:00'
    >>> parse_nvsmi(text)
    Traceback (most recent call last):
    ...
    relkit.errors.IngestError: <nvsmi>:3: snapshot Timestamp ... pass --tz ZONE ...
    """
    check_tz(source, tz)
    scan = _scan(_split_lines(text_or_lines), tz=tz, source=source)
    return _snapshot_frame(scan, tz)


# -- events ---------------------------------------------------------------------------
def _event(
    row: dict[str, Any], host: str | None, *, line_no: int, **values: object
) -> dict[str, Any]:
    flags = [row.get("ts_flag")] if row.get("ts_flag") else []
    if row["snapshot_ts"] is None:
        flags.append("no_wall_time")
    flags += values.pop("flags", [])
    return {
        "line_no": line_no,
        "ts": row["snapshot_ts"],
        "host": host,
        "device": row["device"],
        "count": 1,
        **values,
        "flags": ",".join(flags) or None,
    }


def _where(old: tuple[Any, int, dict[str, Any]], row: dict[str, Any]) -> str:
    """Name the earlier snapshot a value came from (same file: block and line)."""
    _, line, before = old
    if before.get("source") == row.get("source"):
        return f"the snapshot of block {before['block_no']} (line {line})"
    ts = before["snapshot_ts"]
    when = ts.strftime("%Y-%m-%dT%H:%M:%SZ") if ts is not None else "no Timestamp"
    return f"the snapshot of {when} in {before.get('path')} (line {line})"


def _gpu_events(
    rows: list[dict[str, Any]], host: str | None
) -> list[tuple[Any, dict[str, Any]]]:
    """Events of one GPU's snapshots in time order, each with its snapshot's source.

    ``rows`` may come from several files (``source`` and ``path`` keys tell them
    apart); an event belongs to the source of the later snapshot.
    """
    out: list[tuple[Any, dict[str, Any]]] = []
    known: dict[str, tuple[Any, int, dict[str, Any]]] = {}  # col -> (value, line, row)
    for row in rows:
        lines = row.get("field_line_no") or {}
        mine: list[dict[str, Any]] = []

        def line_of(col: str, row: dict[str, Any] = row, lines: dict = lines) -> int:
            return int(lines.get(col) or row["line_no"])

        rises = [
            (col, known[col], row[col])
            for col in [*_UE_MODES, *_CE_COLUMNS]
            if row.get(col) is not None and col in known and row[col] > known[col][0]
        ]
        for col, old, new in rises:
            since = f"{old[0]} -> {new} (+{new - old[0]}) since {_where(old, row)}"
            if col in _UE_MODES:
                what = {"failure_mode": _UE_MODES[col], "severity": "error"}
                detail = f"{_LABELS[col]}: {since}"
                flags: list[str] = []
            else:
                what = {"failure_mode": "gpu/precursor", "severity": "warning"}
                detail = f"warning: corrected ECC errors, {_LABELS[col]}: {since}"
                flags = ["ecc_corrected"]
            mine.append(
                _event(
                    row,
                    host,
                    line_no=line_of(col),
                    **what,
                    detail=detail,
                    count=new - old[0],
                    flags=flags,
                )
            )
        drops = [
            (col, known[col][0], row[col])
            for col in _VOLATILE + _AGGREGATE
            if row.get(col) is not None and col in known and row[col] < known[col][0]
        ]
        resolved = [
            col
            for col in _RESOLVED
            if row.get(col) is False and col in known and known[col][0] is True
        ]
        if drops or resolved:
            parts, flags = [], []
            if drops:
                what = ", ".join(f"{_LABELS[c]} {a} -> {b}" for c, a, b in drops)
                parts.append(f"counters dropped ({what})")
                flags.append("counter_reset")
                if any(c in _AGGREGATE for c, _, _ in drops):
                    parts.append("aggregate counters cleared or GPU replaced")
                    flags.append("aggregate_reset")
            for col in resolved:
                flag, text, section = _RESOLVED[col]
                parts.append(f"{text} ({section} Pending: Yes -> No)")
                flags.append(flag)
            first = min(line_of(c) for c, _, _ in drops) if drops else None
            mine.append(
                _event(
                    row,
                    host,
                    line_no=first or line_of(resolved[0]),
                    failure_mode="gpu/counter_reset",
                    severity="info",
                    detail="info: GPU reset (reboot or driver reload): "
                    + "; ".join(parts),
                    flags=flags,
                )
            )
        for col, (mode, severity, flag, text) in _STATES.items():
            before = known.get(col)
            if row.get(col) is not True or (before is not None and before[0]):
                continue  # not set, or set already: one event per appearance
            detail = text
            if col == "is_remap_failure":
                detail += (
                    f" (uncorrectable rows remapped: {row.get('n_remapped_ue_rows')})"
                )
            if before is not None:
                detail += f"; it was No in {_where(before, row)}"
            mine.append(
                _event(
                    row,
                    host,
                    line_no=line_of(col),
                    failure_mode=mode,
                    severity=severity,
                    detail=detail,
                    flags=[flag],
                )
            )
        out += [(row.get("source"), e) for e in mine]
        for col in _COLUMNS:
            if row.get(col) is not None:
                known[col] = (row[col], line_of(col), row)
    return out


def _timelines(rows: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Group snapshot rows into per-GPU timelines in time order.

    Snapshots with a ``Timestamp`` are ordered by it (then source, block, line),
    across files; snapshots without one can only be ordered inside their file,
    so they form a timeline of their own per file and GPU.
    """
    groups: dict[tuple[Any, ...], list[dict[str, Any]]] = {}
    for row in rows:
        apart = row.get("source") if row["snapshot_ts"] is None else None
        groups.setdefault((row["device"], row["snapshot_ts"] is None, apart), [])
        groups[(row["device"], row["snapshot_ts"] is None, apart)].append(row)

    def order(row: dict[str, Any]) -> tuple[Any, ...]:
        return (
            row["snapshot_ts"] or 0,
            row.get("rank", 0),
            row["block_no"],
            row["line_no"],
        )

    return [
        sorted(part, key=order)
        for _, part in sorted(groups.items(), key=lambda kv: str(kv[0]))
    ]


def nvsmi_events(snapshots: pl.DataFrame, *, host: str | None = None) -> pl.DataFrame:
    """Turn consecutive snapshots of each GPU into events (the ``events`` shape).

    Parameters
    ----------
    snapshots : pl.DataFrame
        :func:`parse_nvsmi` output. Required columns ``snapshot_ts`` (Datetime
        UTC), ``block_no``, ``line_no`` (Int64), ``device`` (String); counter
        and flag columns of :data:`SNAPSHOT_SCHEMA` that are absent count as
        null; without ``field_line_no`` events carry the GPU header's line.
    host : str, optional
        Host that ran nvidia-smi (the output does not name it), put in ``host``
        so events join with the host's kernel log; null if not given.

    Returns
    -------
    pl.DataFrame
        The ``events`` table's columns without ``source_id``, sorted by
        ``line_no``; ``ts`` is the later snapshot's time. Rows:

        - ``gpu/hbm_uncorrectable`` (``DRAM Uncorrectable``; V100 ``Double Bit
          → Device Memory``) or ``gpu/sram_uncorrectable`` (``SRAM
          Uncorrectable``, ``… Parity``, ``… SEC-DED``; V100 ``Double Bit →
          Register File``, ``L1 Cache``, ``L2 Cache``, ``Texture Memory``,
          ``Texture Shared``, ``CBU``), severity ``error``: an aggregate
          uncorrectable counter rose; ``count`` is the increase, ``line_no`` the
          counter's line. One event per counter that rose; ``Total`` (their sum)
          makes none.
        - ``gpu/precursor``, severity ``warning`` (category info; never a
          failure), flag ``ecc_corrected``: an aggregate corrected counter rose
          (``SRAM/DRAM Correctable``; V100 ``Single Bit`` per structure but
          ``Total``); ``count`` is the increase.
        - ``gpu/precursor``, severity ``warning``, flag ``remap_pending``:
          ``Remapped Rows → Pending`` turned ``Yes`` (a remap waits for a GPU
          reset; Xid 63's signal), or flag ``retirement_pending``: ``Retired
          Pages → Pending Page Blacklist`` (V100) turned ``Yes``.
        - ``gpu/counter_reset``, severity ``info`` (category info; never a
          failure): counters fell between snapshots, a GPU reset, reboot or
          driver reload (flag ``counter_reset``; ``aggregate_reset`` too when an
          aggregate count fell: inforom cleared or GPU replaced), and/or a
          pending remap or page retirement cleared (flags ``remap_resolved`` /
          ``retirement_resolved``, detail "remap resolved by reset"). One event
          per GPU and interval, at the first fallen counter's line (else the
          ``Pending`` line); ``count`` is 1.
        - ``gpu/row_remap_failure``, severity ``critical``, flag
          ``rma_signal``: ``Remapping Failure Occurred`` turned ``Yes`` (or is
          ``Yes`` in the GPU's first snapshot), the RMA criterion for A100/H100.

    Raises
    ------
    SchemaError
        If a required column is missing.

    Notes
    -----
    Snapshots of a GPU are compared in time order (``snapshot_ts``, then
    ``block_no``; snapshots without a ``Timestamp`` in file order) with the last
    known value of each counter, so an ``N/A`` or malformed value in between
    does not hide an increase. New uncorrectable errors come from the
    **aggregate** delta, never the volatile one: volatile counts restart at 0
    on every driver load, so their delta mixes errors with resets (C06: GPU
    ``1c``, volatile DRAM UE 1 → 0 is a reset, aggregate 3 → 3 means no new
    error). A fall is never emitted as a negative count. The first snapshot of a
    GPU is the baseline: its absolute counts are errors from before the
    observation window, not new events. Standing states (a pending remap, a
    pending page retirement, a remap failure) are state, not deltas: each is an
    event in the first snapshot that shows it, the GPU's first included, and
    again only after a snapshot showed it cleared (``No``; ``N/A`` keeps the
    last known state), so a GPU sampled every hour with a pending remap makes
    one warning, not one per hour. Retired-page and remapped-row counts are
    kept in the snapshots but make no events (the uncorrectable error behind a
    retired page or remapped row is already in the aggregate count); a
    pending remap is a warning, not a failure (the failure is that error, and
    NVIDIA's guidance is a GPU reset, after which the remap applies).

    Examples
    --------
    >>> block = '''==============NVSMI LOG==============
    ... Timestamp                 : Mon Jun  9 {t}:00:00 2025
    ... GPU 00000000:1C:00.0
    ...     ECC Errors
    ...         Aggregate
    ...             DRAM Uncorrectable : {n}
    ... '''
    >>> text = block.format(t=10, n=3) + block.format(t=12, n=5)
    >>> events = nvsmi_events(parse_nvsmi(text, tz="UTC"), host="n1")
    >>> events.select("line_no", "device", "failure_mode", "count").row(0)
    (12, '0000:1c:00', 'gpu/hbm_uncorrectable', 2)
    """
    require_columns(
        snapshots,
        ["snapshot_ts", "block_no", "line_no", "device"],
        where="nvsmi_events",
    )
    rows = [
        event
        for timeline in _timelines(list(snapshots.iter_rows(named=True)))
        for _, event in _gpu_events(timeline, host)
    ]
    return pl.DataFrame(rows, schema=_EVENT_SCHEMA).sort("line_no")


# -- snapshots in the store ------------------------------------------------------------
def _events_frame(rows: list[dict[str, Any]]) -> pl.DataFrame:
    return pl.DataFrame(rows, schema=_EVENT_SCHEMA).sort("line_no")


def _ignored_frame(n_ignored: int) -> pl.DataFrame:
    return pl.DataFrame(
        {"reason": [IGNORED_REASON], "n_lines": [n_ignored]},
        schema={"reason": pl.String, "n_lines": pl.Int64},
    ).filter(pl.col("n_lines") > 0)


def _snapshot_rows(snaps: pl.DataFrame, host: str) -> pl.DataFrame:
    """Return the ``gpu_snapshots`` rows of one file (without ``source_id``)."""
    fields = [
        json.dumps(
            {
                c: [row[c], line]
                for c, line in (row["field_line_no"] or {}).items()
                if line is not None
            },
            sort_keys=True,
        )
        for row in snaps.iter_rows(named=True)
    ]
    return snaps.select(
        "line_no",
        pl.lit(host).alias("host"),
        "device",
        "snapshot_ts",
        "block_no",
        "ts_flag",
    ).with_columns(fields=pl.Series(fields, dtype=pl.String))


def _stored_snapshots(store: Store, host: str, p: Path) -> list[dict[str, Any]]:
    """Return the snapshots of ``host`` in the store, as :func:`_gpu_events` reads them.

    Sources of the same path or bytes as ``p`` are left out: a ``replace`` read
    drops them in the same transaction.
    """
    stored = store.table("gpu_snapshots").filter(pl.col("host") == host)
    if stored.is_empty():
        return []
    ids = file_identities(p, sha256=store.holds_sha256(KIND))
    resolved = str(p.resolve())
    paths: dict[int, str] = {}
    for src in store.table("sources").filter(kind=KIND).iter_rows(named=True):
        options = json.loads(src["options"] or "{}")
        where = options.get("resolved_path") or str(Path(src["path"]).resolve())
        if src["content_hash"] not in ids and where != resolved:
            paths[src["source_id"]] = src["path"]
    rows = []
    for row in stored.filter(pl.col("source_id").is_in(list(paths))).iter_rows(
        named=True
    ):
        fields = json.loads(row["fields"] or "{}")
        rows.append(
            {
                "source": row["source_id"],
                "path": paths[row["source_id"]],
                "rank": row["source_id"],
                "snapshot_ts": row["snapshot_ts"],
                "block_no": row["block_no"],
                "line_no": row["line_no"],
                "device": row["device"],
                "ts_flag": row["ts_flag"],
                **{c: v for c, (v, _) in fields.items() if c in _LABELS},
                "field_line_no": {
                    c: line for c, (_, line) in fields.items() if c in _LABELS
                },
            }
        )
    return rows


_COMPARED = ["line_no", "ts", "device", "failure_mode", "severity", "detail", "flags"]


def _changed_sources(
    store: Store,
    earlier: list[dict[str, Any]],
    derived: dict[Any, list[dict[str, Any]]],
) -> dict[int, pl.DataFrame]:
    """Return the earlier sources whose events change with the new snapshots."""
    sources = {row["source"] for row in earlier}
    if not sources:
        return {}
    stored = store.table("events").filter(pl.col("source_id").is_in(list(sources)))
    changed = {}
    for sid in sorted(sources):
        frame = _events_frame(derived.get(sid, []))
        old = stored.filter(source_id=sid).sort("line_no")
        cols = [*_COMPARED, "count"]
        if old.select(cols).rows() != frame.select(cols).rows():
            changed[sid] = frame
    return changed


def _rewrite_source(store: Store, source_id: int, events: pl.DataFrame) -> None:
    """Replace an nvsmi source's events (derived again) and its counts."""
    src = store.table("sources").filter(source_id=source_id).row(0, named=True)
    n_ignored = src["n_lines"] - events.height - src["n_rejected"]
    store.replace_rows("events", source_id, events)
    store.replace_rows("ignored", source_id, _ignored_frame(n_ignored))
    store.set_source_counts(source_id, n_loaded=events.height, n_ignored=n_ignored)


def _found_note(
    snaps: pl.DataFrame,
    earlier: list[dict[str, Any]],
    changed: dict[int, pl.DataFrame],
    host: str,
) -> str:
    """Say what the file held and what it was compared with (ingest summary)."""
    layouts = []
    lines = snaps["field_line_no"].struct.unnest() if snaps.height else pl.DataFrame()
    for name, prefix in (
        ("Single/Double Bit (V100 layout)", ("_sbe_", "_dbe_")),
        ("SRAM/DRAM (A100/H100 layout)", ("_sram_", "_dram_")),
    ):
        cols = [
            c
            for c in lines.columns
            if c in _VOLATILE + _AGGREGATE and any(x in c for x in prefix)
        ]
        if (
            cols
            and lines.select(pl.any_horizontal(pl.col(cols).is_not_null()).any()).item()
        ):
            layouts.append(name)
    ecc = f"ECC counters {' and '.join(layouts)}" if layouts else "no ECC counters"
    n_gpus = snaps["device"].n_unique()
    note = f"{snaps.height} snapshot(s) of {n_gpus} GPU(s), {ecc}"
    if n_untimed := snaps["snapshot_ts"].null_count():
        note += (
            f"; {n_untimed} snapshot(s) without a Timestamp compared within this "
            "file only"
        )
    if earlier:
        ids = sorted({row["source"] for row in earlier})
        note += (
            f"; compared with {len(earlier)} snapshot(s) of host {host} already in "
            f"the store (source(s) {', '.join(map(str, ids))}), in time order"
        )
    if changed:
        ids = ", ".join(map(str, changed))
        note += (
            f"; events of source(s) {ids} derived again (this file's snapshots "
            "come before theirs)"
        )
    return note


# -- the file reader -------------------------------------------------------------------
_FORMAT_FIXES = {
    "zip": "it is a zip archive; unpack it first (unzip FILE)",
    "compressed": "it is compressed (xz/bzip2/zstd); decompress it first",
    "utf16": "it is UTF-16 text; convert it first: iconv -f UTF-16 -t UTF-8 IN > OUT",
    "binary": "it is a binary file (NUL bytes), not text",
    "parquet": "it is Parquet, not the text output of nvidia-smi -q",
}


def _read_lines(path: Path) -> list[str]:
    fmt = file_format(path)  # "json" (a line starting "[", e.g. dmesg) is text here
    if fmt in _FORMAT_FIXES:
        msg = (
            f"{_FORMAT_FIXES[fmt]}. --kind nvsmi expects the text output of "
            "`nvidia-smi -q` (plain or gzip)."
        )
        raise IngestError(path, msg)
    data = path.read_bytes()
    if fmt == "gzip":
        try:
            data = gzip.decompress(data)
        except (OSError, EOFError) as exc:
            msg = f"a damaged gzip file ({exc}); copy it again or gunzip -t FILE."
            raise IngestError(path, msg) from exc
    return _split_lines(data)


def read_nvsmi(
    store: Store,
    path: str | Path,
    *,
    tz: str | None = None,
    host: str | None = None,
    replace: bool = False,
    as_of: str | datetime | None = None,
) -> IngestResult:
    r"""Ingest one ``nvidia-smi -q`` file (``--kind nvsmi``): events, ignored, rejects.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        Text output of ``nvidia-smi -q`` (one block or repeated ``-l`` blocks),
        plain or gzip.
    tz : str, optional
        IANA zone of the zone-less snapshot ``Timestamp`` lines, e.g. ``"UTC"``;
        required when the file has one (``--tz``).
    host : str, optional
        Host that ran nvidia-smi, stored in ``events.host``.
    replace : bool, default False
        Re-read a file ingested before, dropping its earlier rows in the same
        transaction (``--replace``), as :func:`relkit.ingest.read_file`.
    as_of : str or datetime, optional
        When the file was collected (ISO 8601 with a zone, or an aware
        datetime; ``--as-of``): stored in UTC as ``as_of_ts`` in the source's
        options, where analysis ends open-ended observation. A zone-less time
        is an error.

    Returns
    -------
    IngestResult
        ``n_lines == n_loaded + n_ignored + n_rejected``: each event
        (:func:`nvsmi_events`) is one line (``n_loaded``); every other line of a
        block (banner, header, GPU sections, blanks) is ignored with reason
        ``"nvsmi snapshot line"``; malformed values, unparseable ``Timestamp``
        lines and lines before the first banner are rejected.
        ``skipped=True`` when the same bytes were ingested as ``nvsmi`` before.

    Raises
    ------
    IngestError
        If the file is missing, unreadable, not text (or gzip text), has no
        ``NVSMI LOG`` banner, has a ``Timestamp`` and ``tz`` is None, ``tz`` is
        unknown, or (without ``replace``) was read from the same path before and
        has changed since.

    Notes
    -----
    Writes ``events``, ``rejects``, ``ignored`` (``source_id, reason,
    n_lines``), ``gpu_snapshots`` (one row per snapshot and GPU: ``host,
    device, snapshot_ts``, the values read as JSON ``fields``) and the
    ``sources`` row (``n_ignored`` set) in one :meth:`Store.transaction`. See
    :func:`nvsmi_events` for which deltas become events (first snapshots are a
    baseline).

    Files of one host (``host``) are compared with each other: this file's
    snapshots join those of the same host already in the store (other paths;
    the sources a ``replace`` drops are left out), each GPU's timeline is read
    in time order, and an event belongs to the file of the later snapshot, at
    its line. A file older than files already stored (``relkit ingest T11
    T10``) makes the later files' events change: they are derived again in the
    same transaction (their ``events``, ``ignored`` and ``sources`` counts
    replaced), and the result's ``note`` names them. So the store ends the
    same whatever the order of ingest. The ``note`` also says how many
    snapshots and GPUs the file held, which ECC layout, and how many stored
    snapshots it was compared with. Stores from before schema 5 hold no
    snapshots, so their nvsmi files are not compared (re-ingest them with
    ``--replace``).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "smi.txt"
    >>> _ = f.write_text(
    ...     "==============NVSMI LOG==============\n"
    ...     "Timestamp : Mon Jun  9 10:00:00 2025\n"
    ...     "GPU 00000000:1B:00.0\n"
    ...     "    Remapped Rows\n"
    ...     "        Remapping Failure Occurred : Yes\n"
    ... )
    >>> store = Store(":memory:")
    >>> r = read_nvsmi(store, f, tz="UTC", host="n1")
    >>> r.n_lines, r.n_loaded, r.n_ignored, r.n_rejected
    (5, 1, 4, 0)
    >>> store.table("events")["failure_mode"].to_list()
    ['gpu/row_remap_failure']
    >>> read_nvsmi(store, f, tz="UTC", host="n1").skipped
    True
    """
    p = check_file(path)
    check_tz(path, tz)
    if host is None or not host.strip():
        msg = (
            "nvidia-smi -q output never names its host, and the events must join "
            "the host's other logs and assets: pass --host NAME (library: host=)."
        )
        raise IngestError(path, msg)

    def parse(p: Path) -> Parsed:
        scan = _scan(_read_lines(p), tz=tz, source=str(path))
        snaps = _snapshot_frame(scan, tz)
        earlier = _stored_snapshots(store, host, p)
        new_rows = [
            {**row, "source": None, "path": str(path), "rank": store.next_source_id()}
            for row in snaps.iter_rows(named=True)
        ]
        derived: dict[Any, list[dict[str, Any]]] = {}
        for timeline in _timelines(earlier + new_rows):
            for owner, event in _gpu_events(timeline, host):
                derived.setdefault(owner, []).append(event)
        events = _events_frame(derived.get(None, []))
        changed = _changed_sources(store, earlier, derived)
        rejects = pl.DataFrame(
            scan.rejects,
            schema={"line_no": pl.Int64, "reason": pl.String, "raw": pl.String},
            orient="row",
        )
        event_lines = set(events["line_no"].to_list())
        if len(event_lines) != events.height or event_lines & set(
            rejects["line_no"].to_list()
        ):  # pragma: no cover - a bug
            msg = "internal error: a line counted twice. Please report this with it."
            raise IngestError(path, msg)
        n_ignored = scan.n_lines - events.height - rejects.height

        def after_write(_source_id: int) -> None:
            for sid, frame in changed.items():
                _rewrite_source(store, sid, frame)

        return Parsed(
            n_lines=scan.n_lines,
            tables={"events": events, "gpu_snapshots": _snapshot_rows(snaps, host)},
            rejects=rejects,
            options={},
            n_loaded=events.height,
            ignored=_ignored_frame(n_ignored),
            note=_found_note(snaps, earlier, changed, host),
            after_write=after_write if changed else None,
        )

    return ingest(
        store,
        p,
        kind=KIND,
        options={"tz": tz, "host": host},
        parse=parse,
        replace=replace,
        as_of=as_of,
    )
