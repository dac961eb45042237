r"""Read a training run's checkpoint and step log into the store's ``checkpoints``.

Two shapes are read (``relkit ingest --kind checkpoints``):

- **JSON Lines**, one record per line, as a training loop logs its progress
  and as ``relkit simulate`` writes ``checkpoints.jsonl`` (case C18 of
  ``cases/README.md`` is one run of it): ``{"ts": "2025-08-01T00:00:08Z",
  "job": "run-7", "attempt": 1, "event": "step_end", "step": 0}``. ``event``
  is one of :data:`CHECKPOINT_EVENTS`; fields that are not read (C18's
  ``"note"``) are ignored and listed in the source's options.
- **A table of checkpoint times per job** (CSV, or Parquet): a header with
  ``job_id`` or ``run_id`` (either or both), ``ts`` and optionally ``step``,
  ``save_s``, ``level`` (:data:`CHECKPOINT_CSV_COLUMNS`); every row is a
  ``checkpoint_saved`` record.

Step convention (C18's, and the simulator's): a ``step_start``/``step_end``
record's ``step`` is the 0-based index of the step (``step_end`` with step 4:
five steps done); a checkpoint's ``step`` is the number of steps it holds
(the index of the next step to run); ``job_end``'s ``final_step`` is the
number of steps done.

Every line becomes a row or a reject with its line number and a reason
(nothing is dropped silently); blank lines of a JSON Lines file are counted in
the ``ignored`` table.
"""

import json
import math
import re
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from relkit.errors import IngestError
from relkit.ingest._common import (
    IngestResult,
    Parsed,
    StringTable,
    check_tz,
    file_format,
    guess_kind,
    ingest,
    parse_iso,
    read_csv_strings,
    read_parquet_strings,
)
from relkit.schema import CHECKPOINT_KINDS
from relkit.store import Store

__all__ = [
    "CHECKPOINT_CSV_COLUMNS",
    "CHECKPOINT_EVENTS",
    "looks_like_checkpoints",
    "read_checkpoints",
]

#: The ``event`` values a record may have; each is the ``kind`` of its row.
CHECKPOINT_EVENTS = CHECKPOINT_KINDS

#: Header columns of the table form (``ts`` and one of ``run_id``/``job_id``
#: required).
CHECKPOINT_CSV_COLUMNS = ("run_id", "job_id", "ts", "step", "save_s", "level")

#: JSON fields naming the run, the first given wins (C18 names it ``"job"``).
_RUN_FIELDS = ("run_id", "run", "job")
#: CSV columns naming the run.
_CSV_RUN_FIELDS = ("run_id", "job_id")
#: Every JSON field some record kind reads; others are listed as ignored.
_KNOWN_FIELDS = frozenset(
    {
        "event",
        "ts",
        *_RUN_FIELDS,
        "job_id",
        "attempt",
        "step",
        "final_step",
        "start_ts",
        "save_s",
        "restore_s",
        "level",
        "gpus",
        "nodes",
        "node",
        "host",
        "cause",
        "status",
    }
)
_STEP_EVENTS = ("step_start", "step_end")
_CHECKPOINT_KINDS = ("checkpoint_save_start", "checkpoint_saved", "checkpoint_restored")
_INT32_MAX = 2**31 - 1  # checkpoints.attempt is an INTEGER column
_INT64_MAX = 2**63 - 1
_DIGITS = re.compile(r"\s*\+?\d+(?:\.0*)?\s*")  # "90", "90.0" (Parquet floats)
#: Why a blank line of a JSON Lines file is not a record (``ignored.reason``).
BLANK = "blank line"

#: Output columns of a record, in the contract's order (``ts`` as text first).
_ROW = (
    "run_id",
    "job_id",
    "attempt",
    "ts",
    "kind",
    "step",
    "save_s",
    "restore_s",
    "level",
    "n_gpus",
    "n_nodes",
    "host",
    "status",
    "start_ts",
)
_ROW_TYPES: dict[str, pl.DataType] = {
    "line_no": pl.Int64(),
    "run_id": pl.String(),
    "job_id": pl.String(),
    "attempt": pl.Int64(),
    "ts": pl.String(),
    "kind": pl.String(),
    "step": pl.Int64(),
    "save_s": pl.Float64(),
    "restore_s": pl.Float64(),
    "level": pl.String(),
    "n_gpus": pl.Int64(),
    "n_nodes": pl.Int64(),
    "host": pl.String(),
    "status": pl.String(),
    "start_ts": pl.String(),
    "reason": pl.String(),
    "raw": pl.String(),
}


# -- one record's fields -----------------------------------------------------------
def _show(value: object) -> str:
    """Show a value as it was written, for a reason: ``'abc'``, ``4.5``, ``true``."""
    if isinstance(value, str):
        return repr(value)
    return json.dumps(value)


def _whole(rec: dict[str, Any], field: str, hi: int) -> tuple[int | None, str | None]:
    """Read a whole number 0..hi (JSON integer, ``4.0``, or ``"4"``/``"4.0"``)."""
    value = rec.get(field)
    if value is None:
        return None, None
    n: int | None = None
    if isinstance(value, bool):
        n = None
    elif isinstance(value, int):
        n = value
    elif isinstance(value, float) and value.is_integer():
        n = int(value)
    elif isinstance(value, str) and _DIGITS.fullmatch(value):
        n = int(value.strip().removeprefix("+").split(".")[0])
    if n is None:
        return None, f"{field} is not a whole number: {_show(value)}"
    if not 0 <= n <= hi:
        return None, f"{field} out of range: {n} (expected 0 to {hi})"
    return n, None


def _seconds(rec: dict[str, Any], field: str) -> tuple[float | None, str | None]:
    """Read a finite duration >= 0 in seconds (a JSON number or one as text)."""
    value = rec.get(field)
    if value is None:
        return None, None
    x: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        x = float(value)
    elif isinstance(value, str):
        try:
            x = float(value)
        except ValueError:
            x = None
    if x is None or not math.isfinite(x):
        return None, f"{field} is not a number of seconds: {_show(value)}"
    if x < 0:
        return None, f"{field} is negative: {_show(value)}"
    return x, None


def _text(rec: dict[str, Any], field: str) -> tuple[str | None, str | None]:
    """Read an identifier or label as text (a number as its digits); "" is None."""
    value = rec.get(field)
    if value is None:
        return None, None
    if isinstance(value, str):
        return value.strip() or None, None
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value), None
    if isinstance(value, float) and value.is_integer():
        return str(int(value)), None
    return None, f"{field} is not text or a whole number: {_show(value)}"


def _check(rec: object, run_fields: Sequence[str]) -> tuple[dict[str, Any], list[str]]:
    """Validate one record; return its row values and the reasons it is bad."""
    row: dict[str, Any] = dict.fromkeys(_ROW)
    if not isinstance(rec, dict):
        kind = "an array" if isinstance(rec, list) else f"{_show(rec)}"
        return row, [f"not a JSON object: {kind}"]
    reasons: list[str] = []

    def take(column: str, got: tuple[Any, str | None]) -> None:
        value, why = got
        if why is not None:
            reasons.append(why)
        elif value is not None:
            row[column] = value

    event = rec.get("event")
    if event is None or event == "":
        reasons.append("'event' is missing or empty")
    elif not isinstance(event, str) or event not in CHECKPOINT_EVENTS:
        reasons.append(
            f"unknown event {_show(event)}; expected one of "
            f"{', '.join(CHECKPOINT_EVENTS)}"
        )
    else:
        row["kind"] = event
    for field in run_fields:
        run, why = _text(rec, field)
        if why is not None:
            reasons.append(why)
            break
        if run is not None:
            row["run_id"] = run
            break
    else:
        names = ", ".join(f"'{f}'" for f in run_fields)
        reasons.append(f"no run: {names} all missing or empty")
    ts = rec.get("ts")
    if ts is None or ts == "":
        reasons.append("'ts' is missing or empty")
    elif not isinstance(ts, str):
        reasons.append(f"ts is not ISO 8601 text: {_show(ts)}")
    else:
        row["ts"] = ts
    take("job_id", _text(rec, "job_id"))
    take("attempt", _whole(rec, "attempt", _INT32_MAX))
    kind = row["kind"]
    if kind in _STEP_EVENTS or kind in _CHECKPOINT_KINDS:
        take("step", _whole(rec, "step", _INT64_MAX))
        if kind in _STEP_EVENTS and rec.get("step") is None:
            reasons.append(f"{kind} without 'step'")
    if kind in _CHECKPOINT_KINDS:
        take("level", _text(rec, "level"))
    if kind == "checkpoint_saved":
        take("save_s", _seconds(rec, "save_s"))
        start = rec.get("start_ts")
        if isinstance(start, str) and start.strip():
            row["start_ts"] = start
        elif start not in (None, ""):
            reasons.append(f"start_ts is not ISO 8601 text: {_show(start)}")
    elif kind == "checkpoint_restored":
        take("restore_s", _seconds(rec, "restore_s"))
    elif kind == "job_start":
        take("n_gpus", _whole(rec, "gpus", _INT64_MAX))
        take("n_nodes", _whole(rec, "nodes", _INT64_MAX))
    elif kind == "failure":
        host_field = "node" if rec.get("node") not in (None, "") else "host"
        take("host", _text(rec, host_field))
        take("status", _text(rec, "cause"))
    elif kind == "job_end":
        take("step", _whole(rec, "final_step", _INT64_MAX))
        take("status", _text(rec, "status"))
    return row, reasons


# -- the two shapes ----------------------------------------------------------------
def _split_lines(data: bytes) -> list[bytes]:
    """Split into physical lines (LF or CRLF); a final newline ends the last one."""
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    return [line.removesuffix(b"\r") for line in lines]


def _refuse_document(path: Path, text: str) -> None:
    """Raise IngestError for one JSON document (array, object over many lines)."""
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return
    if isinstance(doc, list):
        msg = (
            f"one JSON array of {len(doc)} item(s), not JSON Lines. --kind "
            "checkpoints reads one record per line; convert it first, e.g. "
            "jq -c '.[]' IN > OUT.jsonl"
        )
        raise IngestError(path, msg)
    if isinstance(doc, dict) and ("items" in doc or "apiVersion" in doc):
        msg = (
            "it looks like Kubernetes JSON (kubectl get -o json): use --kind k8s. "
            "--kind checkpoints reads JSON Lines records with event and ts."
        )
        raise IngestError(path, msg)
    if isinstance(doc, dict):
        msg = (
            "one JSON object spread over several lines, not JSON Lines. --kind "
            "checkpoints reads one record per line; convert it first, e.g. "
            "jq -c . IN > OUT.jsonl"
        )
        raise IngestError(path, msg)


def _jsonl_rows(
    path: Path,
) -> tuple[list[dict[str, Any]], int, int, list[str]]:
    """Read JSON Lines: row dicts (reason set for bad ones), lines, blanks, extras."""
    data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
    lines = _split_lines(data)
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        msg = (
            "the file holds only blank lines: no records to ingest. The "
            "collection or the copy may have failed: collect it again."
        )
        raise IngestError(path, msg)
    try:
        head = json.loads(lines[first])
    except (json.JSONDecodeError, UnicodeDecodeError):
        head = None
    if not isinstance(head, dict):  # perhaps one JSON document, not JSON Lines
        _refuse_document(path, data.decode("utf-8", errors="replace"))
    rows: list[dict[str, Any]] = []
    extras: set[str] = set()
    blank = 0
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            blank += 1
            continue
        try:
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raw = line.decode("utf-8", errors="replace")
            why = (
                f"not UTF-8 text: byte 0x{line[exc.start]:02X} at byte "
                f"{exc.start + 1} of the line"
            )
            rows.append(dict.fromkeys(_ROW) | {"line_no": n, "reason": why, "raw": raw})
            continue
        try:
            rec = json.loads(text)
        except json.JSONDecodeError as exc:
            why = f"not valid JSON ({exc.msg} at column {exc.colno})"
            rows.append(
                dict.fromkeys(_ROW) | {"line_no": n, "reason": why, "raw": text}
            )
            continue
        row, reasons = _check(rec, _RUN_FIELDS)
        if isinstance(rec, dict):
            extras.update(k for k in rec if k not in _KNOWN_FIELDS)
        rows.append(
            row | {"line_no": n, "reason": "; ".join(reasons) or None, "raw": text}
        )
    return rows, len(lines), blank, sorted(extras)


def _table_rows(
    store: Store, path: Path, fmt: str
) -> tuple[list[dict[str, Any]], int, list[str]]:
    """Read the CSV/Parquet table form: one checkpoint_saved row dict per record."""
    table: StringTable = (
        read_parquet_strings(store, path)
        if fmt == "parquet"
        else read_csv_strings(path)
    )
    lower = [c.strip().lower() for c in table.columns]
    if dups := sorted({c for c in lower if lower.count(c) > 1}):
        msg = f"duplicate header column(s) {dups}; found {table.columns}. Rename one."
        raise IngestError(path, msg, line_no=1)
    if "ts" not in lower or not set(_CSV_RUN_FIELDS) & set(lower):
        guess = guess_kind(table.columns)
        hint = (
            f" The header looks like {guess} data: use --kind {guess}." if guess else ""
        )
        msg = (
            "--kind checkpoints expects JSON Lines records with event and ts, or a "
            "table whose header has ts and job_id or run_id (optional step, "
            f"save_s, level); found the header {table.columns}.{hint}"
        )
        raise IngestError(path, msg, line_no=1)
    known = [(i, c) for i, c in enumerate(lower) if c in CHECKPOINT_CSV_COLUMNS]
    extras = [
        table.columns[i] for i, c in enumerate(lower) if c not in CHECKPOINT_CSV_COLUMNS
    ]
    width = len(table.columns)
    frame = table.frame.select(
        "line_no", "n_fields", "record", *[f"c{i}" for i, _ in known]
    )
    rows = []
    for values in frame.iter_rows():
        line_no, n_fields, record, *cells = values
        rec: dict[str, Any] = {"event": "checkpoint_saved"}
        for (_, name), cell in zip(known, cells, strict=True):
            text = cell.strip() if cell is not None else None
            rec[name] = text or None
        row, reasons = _check(rec, _CSV_RUN_FIELDS)
        if n_fields != width:
            reasons.insert(
                0, f"expected {width} fields as in the header, found {n_fields}"
            )
        rows.append(
            row
            | {
                "line_no": line_no,
                "reason": "; ".join(reasons) or None,
                "raw": table.raw(record),
            }
        )
    return rows, len(rows), extras


# -- times and the frame -----------------------------------------------------------
def _zoneless_error(path: Path, line_no: int, field: str, value: str) -> IngestError:
    msg = (
        f"timestamp {value!r} in field {field!r} has no UTC offset (Z, +01:00) and "
        "no time zone was given. Fix: name the zone the log was written in: pass "
        "--tz ZONE (library: tz='ZONE'), e.g. --tz UTC; or write the timestamps "
        "with offsets."
    )
    return IngestError(path, msg, line_no=line_no)


def _frame(path: Path, rows: list[dict[str, Any]], tz: str | None) -> pl.DataFrame:
    """Rows to a frame with ``ts``/``start_ts`` parsed to UTC and every reason set."""
    frame = pl.DataFrame(rows, schema=_ROW_TYPES)
    ts, ts_bad, ts_zoneless, ts_flag = parse_iso(frame, "ts", tz)
    start, start_bad, start_zoneless, _ = parse_iso(frame, "start_ts", tz)
    if tz is None:
        hits = []
        for field, zoneless in (("ts", ts_zoneless), ("start_ts", start_zoneless)):
            if zoneless.any():
                i = int(zoneless.arg_true()[0])
                hits.append((int(frame["line_no"][i]), field, str(frame[field][i])))
        if hits:
            raise _zoneless_error(path, *min(hits))
    frame = frame.with_columns(
        ts_utc=ts,
        start_utc=start,
        ts_bad=ts_bad,
        start_bad=start_bad,
        dst=ts_flag,
    )
    late = pl.col("start_utc") > pl.col("ts_utc")
    time_reasons = pl.concat_str(
        [
            pl.when("ts_bad").then(
                pl.format("unparseable timestamp in field 'ts': '{}'", "ts")
            ),
            pl.when("start_bad").then(
                pl.format("unparseable timestamp in field 'start_ts': '{}'", "start_ts")
            ),
            pl.when(late).then(
                pl.format("start_ts '{}' is after ts '{}'", "start_ts", "ts")
            ),
        ],
        separator="; ",
        ignore_nulls=True,
    )
    reason = pl.concat_str(
        [pl.col("reason"), pl.when(time_reasons != "").then(time_reasons)],
        separator="; ",
        ignore_nulls=True,
    )
    saved = (pl.col("ts_utc").dt.epoch("us") - pl.col("start_utc").dt.epoch("us")) / 1e6
    return frame.with_columns(
        reason=pl.when(reason != "").then(reason),
        save_s=pl.coalesce(
            "save_s", pl.when(pl.col("kind") == "checkpoint_saved").then(saved)
        ),
    )


def _dst_note(good: pl.DataFrame) -> tuple[str | None, dict[str, Any]]:
    """Say how many local times fell in a DST change (``checkpoints`` has no flags)."""
    parts, options = [], {}
    for flag, what in (
        ("dst_ambiguous", "in a fall-back hour read as the earlier instant"),
        ("dst_nonexistent", "in a spring-forward gap read as standard time (+1 h)"),
    ):
        lines = good.filter(pl.col("dst") == flag)["line_no"].to_list()
        if lines:
            shown = ", ".join(map(str, lines[:5])) + (", …" if len(lines) > 5 else "")
            parts.append(
                f"{len(lines)} ts {what} (line{'s' if len(lines) > 1 else ''} {shown})"
            )
            options[f"n_{flag}"] = len(lines)
    return ("; ".join(parts) or None), options


def _parse(store: Store, path: Path, tz: str | None) -> Parsed:
    fmt = file_format(path)
    if fmt not in ("json", "text", "parquet"):
        _refuse_format(path, fmt)
    options: dict[str, Any] = {"tz": tz}
    ignored = None
    jsonl = fmt == "json" or (fmt == "text" and _starts_like_jsonl(path))
    if jsonl:
        rows, n_lines, blank, extras = _jsonl_rows(path)
        options["format"] = "jsonl"
        if extras:
            options["ignored_fields"] = extras
        if blank:
            ignored = pl.DataFrame(
                {"reason": [BLANK], "n_lines": [blank]},
                schema={"reason": pl.String, "n_lines": pl.Int64},
            )
    else:
        rows, n_lines, extras = _table_rows(store, path, fmt)
        options["format"] = "parquet" if fmt == "parquet" else "csv"
        if extras:
            options["ignored_columns"] = extras
    frame = _frame(path, rows, tz)
    good = frame.filter(pl.col("reason").is_null())
    bad = frame.filter(pl.col("reason").is_not_null())
    checkpoints = good.select(
        "line_no",
        "run_id",
        "job_id",
        pl.col("attempt").cast(pl.Int32),
        ts="ts_utc",
        kind="kind",
        step="step",
        save_s="save_s",
        restore_s="restore_s",
        level="level",
        n_gpus="n_gpus",
        n_nodes="n_nodes",
        host="host",
        status="status",
    )
    note, dst = _dst_note(good)
    return Parsed(
        n_lines=n_lines,
        tables={"checkpoints": checkpoints},
        rejects=bad.select("line_no", "reason", "raw"),
        options=options | dst,
        n_loaded=checkpoints.height,
        ignored=ignored,
        note=note,
    )


def _starts_like_jsonl(path: Path) -> bool:
    """Tell a text file whose first non-blank lines include one starting ``{``.

    A file of blank lines counts too (the JSON Lines reader refuses it by name).
    """
    with path.open("rb") as fh:
        head = fh.read(1 << 16)
    lines = [ln.strip() for ln in head.split(b"\n") if ln.strip()][:20]
    # no line at all: the JSON Lines reader says the file holds only blank lines
    return not lines or any(ln.startswith(b"{") for ln in lines)


def _refuse_format(path: Path, fmt: str) -> None:
    fixes = {
        "gzip": "it is gzip-compressed; decompress it first (gunzip FILE)",
        "zip": "it is a zip archive; unpack it first (unzip FILE)",
        "compressed": "it is compressed (xz/bzip2/zstd); decompress it first",
        "utf16": (
            "it is UTF-16 encoded text; convert it to UTF-8 first, e.g. "
            "iconv -f UTF-16 -t UTF-8 IN > OUT"
        ),
        "binary": "it is a binary file (NUL bytes), not text",
    }
    msg = (
        f"{fixes.get(fmt, fmt)}. --kind checkpoints expects JSON Lines records with "
        "event and ts, or a CSV/Parquet table with ts and job_id or run_id."
    )
    raise IngestError(path, msg)


# -- public ------------------------------------------------------------------------
def looks_like_checkpoints(path: str | Path) -> bool:
    r"""Tell whether a file has the shape :func:`read_checkpoints` reads.

    Parameters
    ----------
    path : str or Path
        Any file; a missing or unreadable one is not a checkpoint log.

    Returns
    -------
    bool
        True for JSON Lines whose first record is an object with ``event`` and
        ``ts``, and for a CSV or Parquet table whose columns are exactly of
        :data:`CHECKPOINT_CSV_COLUMNS`, with ``ts`` and ``job_id`` or
        ``run_id`` among them. The content decides, not the file name.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "ck.csv"
    >>> _ = f.write_text("job_id,ts,step\n4108,2025-01-01T00:00:00Z,90\n")
    >>> looks_like_checkpoints(f)
    True
    >>> _ = f.write_text("ts,host,failure_mode\n")
    >>> looks_like_checkpoints(f)
    False
    """
    p = Path(path)
    try:
        fmt = file_format(p)
        if fmt == "parquet":
            names = list(pl.read_parquet_schema(p))
        elif fmt in ("json", "text"):
            with p.open("rb") as fh:
                head = fh.read(1 << 16).removeprefix(b"\xef\xbb\xbf")
            line = next((ln for ln in head.split(b"\n") if ln.strip()), b"").strip()
            if line.startswith(b"{"):
                rec = json.loads(line)
                return isinstance(rec, dict) and "event" in rec and "ts" in rec
            text = line.decode("utf-8")
            delim = max((",", "\t", ";", "|"), key=text.count)
            names = [c.strip().strip('"') for c in text.split(delim)]
        else:
            return False
    except (OSError, ValueError, pl.exceptions.PolarsError):
        return False
    lower = [c.lower() for c in names]
    return (
        len(set(lower)) == len(lower)
        and set(lower) <= set(CHECKPOINT_CSV_COLUMNS)
        and "ts" in lower
        and bool(set(_CSV_RUN_FIELDS) & set(lower))
    )


def read_checkpoints(
    store: Store,
    path: str | Path,
    *,
    tz: str | None = None,
    replace: bool = False,
    as_of: str | datetime | None = None,
) -> IngestResult:
    r"""Read a training run's checkpoint/step log into the store's ``checkpoints``.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        JSON Lines, one record per line (recognised by a line starting with
        ``{``), or a CSV/Parquet table of checkpoint times. A JSON Lines
        record is an object with ``event`` (one of :data:`CHECKPOINT_EVENTS`),
        ``ts`` (ISO 8601 with ``Z`` or ``±hh:mm``) and the run in ``run_id``,
        else ``run``, else ``job``; optional ``job_id`` (the scheduler's),
        ``attempt``, ``step``, and per event: ``checkpoint_saved`` ``save_s``
        (s), ``start_ts``, ``level``; ``checkpoint_restored`` ``restore_s``
        (s), ``level``; ``job_start`` ``gpus``, ``nodes``; ``failure``
        ``node`` (or ``host``), ``cause``; ``job_end`` ``status``,
        ``final_step``. Other fields are ignored (listed in the source's
        options as ``ignored_fields``). The table's header has ``ts`` and
        ``job_id`` or ``run_id`` (either or both), optionally ``step``,
        ``save_s``, ``level`` (case-insensitive; other columns ignored and
        listed as ``ignored_columns``); each row is a ``checkpoint_saved``
        record.
    tz : str, optional
        IANA zone of timestamps written without an offset (e.g. ``"UTC"``).
        Timestamps with an offset ignore it.
    replace : bool, default False
        Re-read the file even if it was ingested before, dropping the rows of
        the earlier sources of the same path (or the same bytes) first, in the
        same transaction (``--replace``).
    as_of : str or datetime, optional
        When the file was collected (ISO 8601 with a zone, or an aware
        datetime; ``--as-of``), stored in UTC as ``as_of_ts`` in the source's
        options.

    Returns
    -------
    IngestResult
        ``n_lines`` (physical lines, blank ones included; table rows for the
        table form) ``= n_loaded + n_ignored + n_rejected``; ``n_ignored`` the
        blank lines; ``skipped=True`` if the same bytes were ingested as
        checkpoints before. ``note`` names the zone-less times that fell in a
        DST change (read as in :func:`relkit.ingest.read_events`).
        ``all_rejected`` is True when no record could be used; the command
        line then exits 1.

    Raises
    ------
    IngestError
        If the file is missing, empty, only blank lines, compressed, UTF-16
        or binary; one JSON document (an array, an object over several lines,
        Kubernetes JSON: the message gives the ``jq`` or ``--kind`` fix); a
        table without ``ts`` and ``job_id``/``run_id`` columns (the message
        suggests the right ``--kind``); ``tz`` is unknown; a ``ts`` or
        ``start_ts`` has no offset and no ``tz`` was given (the message names
        the first such line and the fix ``--tz ZONE``); or, without
        ``replace``, the file was read from the same path before and changed
        since.

    Notes
    -----
    Rows of ``checkpoints`` (:data:`relkit.schema.TABLE_COLUMNS`): ``run_id``,
    ``job_id``, ``attempt``, ``ts`` (UTC; for ``checkpoint_saved`` the end
    of the save), ``kind`` (the event), ``step``, ``save_s``, ``restore_s``,
    ``level``, ``n_gpus``, ``n_nodes``, ``host``, ``status``. ``step`` is the
    0-based index of the step for ``step_start``/``step_end``, the number of
    steps a checkpoint holds for ``checkpoint_*``, and ``final_step`` (steps
    done) for ``job_end``; NULL for other events. ``save_s`` is the record's
    ``save_s``, else :math:`epoch(ts) - epoch(start\_ts)`. Identifiers stay
    text (``"job_id": 1001`` is ``"1001"``); a number may be written as JSON
    number or as digits in text.

    A record is rejected (line number, reason, raw text) when its line is not
    UTF-8 or not valid JSON, not an object, has no or an unknown ``event``, no
    run, no ``ts``, an unparseable ``ts`` or ``start_ts``, ``start_ts`` after
    ``ts``, a ``step``/``attempt``/``gpus``/``nodes``/``final_step`` that is
    not a whole number >= 0, a ``save_s``/``restore_s`` that is not a number
    >= 0, a ``step_start``/``step_end`` without ``step``, or (tables) a field
    count other than the header's. Every reason of a record is given,
    separated by ``; ``. Blank lines of JSON Lines are counted in ``ignored``
    (reason ``blank line``); a table's blank lines are no records.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from relkit.store import Store
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> _ = f.write_text(
    ...     '{"ts": "2025-08-01T00:00:00Z", "job": "run-7", "event": "job_start"}\n'
    ...     '{"ts": "2025-08-01T00:00:08Z", "job": "run-7", "event": "step_end", '
    ...     '"step": 0}\n'
    ...     '{"ts": "2025-08-01T00:00:09Z", "job": "run-7", "event": "restart"}\n'
    ... )
    >>> store = Store(":memory:")
    >>> read_checkpoints(store, f).reject_summary()  # doctest: +ELLIPSIS
    '1 rejected: 1 × "unknown event \'restart\'; expected one of job_start, ...'
    >>> store.table("checkpoints").select("run_id", "kind", "step").rows()
    [('run-7', 'job_start', None), ('run-7', 'step_end', 0)]
    """
    tz = check_tz(path, tz)
    return ingest(
        store,
        path,
        kind="checkpoints",
        options={"tz": tz},
        parse=lambda p: _parse(store, p, tz),
        replace=replace,
        as_of=as_of,
    )
