"""Readers of normalised event and asset tables (CSV or Parquet) into the store.

Every column is read as text (no type guessing), then parsed and checked here:
a record with a bad value goes to ``rejects`` with its line number and a reason
naming the column and the value, and the other records still load.
"""

import json
from datetime import datetime
from pathlib import Path
from typing import Any

import polars as pl

from relkit.errors import IngestError
from relkit.ingest._common import (
    OPTIONAL,
    REQUIRED,
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
    reject_format,
    rejects_frame,
)
from relkit.ingest._modes import mode_columns, settle_modes, value_reasons
from relkit.store import Store

__all__ = ["read_assets", "read_events"]

#: Flag of an asset row whose ``in_service_ts`` is empty (install date unknown).
FLAG_IN_SERVICE_UNKNOWN = "in_service_unknown"

#: GPUs per node when an assets file leaves ``gpus`` empty.
DEFAULT_GPUS = 8
_INT32_MAX = 2**31 - 1  # assets.gpus is an INTEGER column


def _read_strings(store: Store, path: Path, kind: str) -> StringTable:
    fmt = file_format(path)
    if fmt == "parquet":
        return read_parquet_strings(store, path)
    if fmt != "text":
        reject_format(path, fmt, kind)
    return read_csv_strings(path)


def _named(path: Path, table: StringTable, kind: str) -> tuple[pl.DataFrame, list[str]]:
    """Check the header and name the columns; return the frame and the extra names."""
    lower = [c.lower() for c in table.columns]
    if dups := sorted({c for c in lower if lower.count(c) > 1}):
        msg = f"duplicate header column(s) {dups}; found {table.columns}. Rename one."
        raise IngestError(path, msg, line_no=1)
    if missing := [c for c in REQUIRED[kind] if c not in lower]:
        guess = guess_kind(table.columns)
        hint = (
            f" The header looks like {guess} data: use --kind {guess}."
            if guess and guess != kind
            else ""
        )
        msg = (
            f"missing required column(s) {missing} for --kind {kind}. Expected header "
            f"columns {list(REQUIRED[kind])} (optional {list(OPTIONAL[kind])}); found "
            f"{table.columns}.{hint} Otherwise rename the header, e.g. timestamp -> ts."
        )
        raise IngestError(path, msg, line_no=1)
    known = set(REQUIRED[kind]) | set(OPTIONAL[kind])
    names = {f"c{i}": (c if c in known else f"x{i}") for i, c in enumerate(lower)}
    extras = [table.columns[i] for i, c in enumerate(lower) if c not in known]
    frame = table.frame.rename(names).with_columns(
        pl.col(pl.String).str.strip_chars().replace("", None)
    )
    absent = [c for c in OPTIONAL[kind] if c not in frame.columns]
    frame = frame.with_columns([pl.lit(None, dtype=pl.String).alias(c) for c in absent])
    return frame, extras


def _times(
    path: Path, frame: pl.DataFrame, columns: list[str], tz: str | None
) -> pl.DataFrame:
    """Parse timestamp columns into ``<col>_utc``, ``<col>_bad``, ``<col>_flag``."""
    first: tuple[int, str, str] | None = None
    out = []
    for col in columns:
        utc, bad, zoneless, flag = parse_iso(frame, col, tz)
        if tz is None and zoneless.any():
            i = int(zoneless.arg_true()[0])
            hit = (int(frame["line_no"][i]), col, str(frame[col][i]))
            first = hit if first is None or hit < first else first
        out += [
            utc.alias(f"{col}_utc"),
            bad.alias(f"{col}_bad"),
            flag.alias(f"{col}_flag"),
        ]
    if first is not None:
        line, col, value = first
        msg = (
            f"timestamp {value!r} in column {col!r} has no UTC offset (Z, +01:00) and "
            "no time zone was given. Fix: name the zone the file was written in: "
            "pass --tz ZONE (library: tz='ZONE'), e.g. --tz UTC; or add offsets to "
            "the timestamps."
        )
        raise IngestError(path, msg, line_no=line)
    return frame.with_columns(out)


def _bad_time(col: str) -> pl.Expr:
    return pl.when(pl.col(f"{col}_bad")).then(
        pl.format(f"unparseable timestamp in column {col!r}: '{{}}'", pl.col(col))
    )


def _common_reasons(width: int, required: tuple[str, ...]) -> list[pl.Expr]:
    reasons = [
        pl.when(pl.col("n_fields") != width).then(
            pl.format(
                f"expected {width} fields as in the header, found {{}}", "n_fields"
            )
        )
    ]
    reasons += [
        pl.when(pl.col(c).is_null()).then(pl.lit(f"empty required field {c!r}"))
        for c in required
    ]
    return reasons


def _split(
    frame: pl.DataFrame, reasons: list[pl.Expr]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    reason = pl.concat_str(reasons, separator="; ", ignore_nulls=True)
    frame = frame.with_columns(reason=pl.when(reason != "").then(reason))
    return frame.filter(pl.col("reason").is_null()), frame.filter(
        pl.col("reason").is_not_null()
    )


def _flags(*cols: str) -> pl.Expr:
    joined = (
        pl.concat_list([pl.col(c) for c in cols])
        .list.drop_nulls()
        .list.unique(maintain_order=True)
    )
    return pl.when(joined.list.len() > 0).then(joined.list.join(","))


def _parse_events(store: Store, path: Path, tz: str | None, *, replace: bool) -> Parsed:
    table = _read_strings(store, path, "events")
    frame, extras = _named(path, table, "events")
    frame = mode_columns(_times(path, frame, ["ts", "repaired_ts"], tz))
    reasons = _common_reasons(len(table.columns), REQUIRED["events"])
    reasons += [
        *value_reasons(),
        _bad_time("ts"),
        _bad_time("repaired_ts"),
        pl.when(pl.col("repaired_ts_utc") < pl.col("ts_utc")).then(
            pl.format("repaired_ts '{}' is before ts '{}'", "repaired_ts", "ts")
        ),
    ]
    good, bad = _split(frame, reasons)
    good, disagree, new_modes = settle_modes(store, path, good, replace=replace)
    bad = pl.concat(
        [b.select("line_no", "reason", "record") for b in (bad, disagree)]
    ).sort("line_no")
    events = good.select(
        "line_no",
        ts=pl.col("ts_utc"),
        host="host",
        device="device",
        system="system",
        code="code",
        failure_mode="mode",
        severity="severity",
        detail="detail",
        repaired_ts=pl.col("repaired_ts_utc"),
        repair_s=(
            pl.col("repaired_ts_utc").dt.epoch("us") - pl.col("ts_utc").dt.epoch("us")
        )
        / 1e6,
        flags=_flags("ts_flag", "repaired_ts_flag", "mode_flag"),
    )
    options: dict[str, Any] = {"ignored_columns": extras} if extras else {}
    if new_modes.height:
        options["declared_modes"] = new_modes.get_column("failure_mode").to_list()
    return Parsed(
        n_lines=frame.height,
        tables={"events": events, "failure_modes": new_modes},
        rejects=rejects_frame(table, bad),
        options=options,
        n_loaded=events.height,
    )


def _overlaps(
    good: pl.DataFrame, bad: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Reject rows whose service window overlaps an earlier row of the same unit.

    The unit is (host, device), an empty device being the whole host. Windows are
    half-open ``[start, out_of_service_ts)`` with ``start = in_service_ts``, or
    ``observed_from_ts`` when the install date is unknown; an empty end is open
    and an unknown start (neither time given) reaches back without limit. Rows
    are taken in line order and a row overlapping an accepted earlier one is
    rejected (so a unit's exposure is never counted twice).
    """
    accepted: dict[tuple[str, str | None], list[tuple[int, Any, Any]]] = {}
    reasons: list[str | None] = []
    cols = ["line_no", "host", "device", "start_utc", "out_of_service_ts_utc"]
    for line, host, device, start, end in good.sort("line_no").select(cols).rows():
        earlier = accepted.setdefault((host, device), [])
        hit = next(
            (
                other
                for other in earlier
                if (other[2] is None or start is None or start < other[2])
                and (end is None or other[1] is None or other[1] < end)
            ),
            None,
        )
        if hit is None:
            earlier.append((line, start, end))
            reasons.append(None)
            continue
        unit = f"host {host!r}" + (f", device {device!r}" if device else "")
        reasons.append(
            f"service window {_window(start, end)} overlaps line {hit[0]} "
            f"({_window(hit[1], hit[2])}) of the same {unit}; a unit's windows must "
            "not overlap: end the earlier one with out_of_service_ts, or drop a row"
        )
    if not any(reasons):
        return good, bad
    marked = good.sort("line_no").with_columns(
        reason=pl.Series(reasons, dtype=pl.String)
    )
    return marked.filter(pl.col("reason").is_null()), pl.concat(
        [bad, marked.filter(pl.col("reason").is_not_null())]
    ).sort("line_no")


def _window(start: datetime | None, end: datetime | None) -> str:
    def iso(t: datetime) -> str:
        return t.strftime("%Y-%m-%dT%H:%M:%SZ")

    first = iso(start) if start is not None else "unknown start"
    return f"[{first}, {iso(end) if end is not None else 'open'})"


def _parse_assets(store: Store, path: Path, tz: str | None) -> Parsed:
    table = _read_strings(store, path, "assets")
    frame, extras = _named(path, table, "assets")
    frame = _times(
        path, frame, ["in_service_ts", "out_of_service_ts", "observed_from_ts"], tz
    )
    gpus = pl.col("gpus")
    number = gpus.cast(pl.Float64, strict=False)  # "8", "8.0" (Parquet floats), "1e3"
    whole = number.is_finite() & (number == number.round())
    fits = whole & (number.abs() <= _INT32_MAX)
    frame = frame.with_columns(
        gpus_int=pl.when(gpus.is_null())
        .then(DEFAULT_GPUS)
        .when(fits)
        .then(number.cast(pl.Int64, strict=False))
    )
    frame = frame.with_columns(
        start_utc=pl.coalesce("in_service_ts_utc", "observed_from_ts_utc"),
        unknown_flag=pl.when(pl.col("in_service_ts").is_null()).then(
            pl.lit(FLAG_IN_SERVICE_UNKNOWN)
        ),
    )
    reasons = _common_reasons(len(table.columns), ("host",))
    reasons += [
        _bad_time("in_service_ts"),
        _bad_time("out_of_service_ts"),
        _bad_time("observed_from_ts"),
        pl.when(gpus.is_not_null() & ~whole.fill_null(False)).then(
            pl.format("gpus is not a whole number: '{}'", gpus)
        ),
        pl.when(whole & ~fits).then(
            pl.format(f"gpus out of range: '{{}}' (expected 0 to {_INT32_MAX})", gpus)
        ),
        pl.when(pl.col("gpus_int") < 0).then(pl.format("negative gpus: '{}'", gpus)),
        pl.when(pl.col("out_of_service_ts_utc") < pl.col("in_service_ts_utc")).then(
            pl.format(
                "out_of_service_ts '{}' is before in_service_ts '{}'",
                "out_of_service_ts",
                "in_service_ts",
            )
        ),
    ]
    good, bad = _split(frame, reasons)
    good, bad = _overlaps(good, bad)
    extra_cols = [c for c in good.columns if c.startswith("x")]
    rows = good.select(extra_cols).rows() if extra_cols else [()] * good.height
    attrs = [
        json.dumps(
            {k: v for k, v in zip(extras, row, strict=True) if v is not None},
            ensure_ascii=False,
        )
        for row in rows
    ]
    assets = good.select(
        "line_no",
        host="host",
        device="device",
        system="system",
        gpus=pl.col("gpus_int"),
        in_service_ts=pl.col("in_service_ts_utc"),
        out_of_service_ts=pl.col("out_of_service_ts_utc"),
        observed_from_ts=pl.col("observed_from_ts_utc"),
        flags=_flags(
            "unknown_flag",
            "in_service_ts_flag",
            "out_of_service_ts_flag",
            "observed_from_ts_flag",
        ),
    ).with_columns(attrs=pl.Series(attrs, dtype=pl.String))
    return Parsed(
        n_lines=frame.height,
        tables={"assets": assets},
        rejects=rejects_frame(table, bad),
        options={"attrs_columns": extras} if extras else {},
        n_loaded=assets.height,
    )


def read_events(
    store: Store,
    path: str | Path,
    *,
    tz: str | None = None,
    replace: bool = False,
    as_of: str | datetime | None = None,
) -> IngestResult:
    r"""Read a normalised events table (CSV or Parquet) into the store's ``events``.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        CSV (header on line 1; delimiter ``,``, tab, ``;`` or ``|``) or Parquet
        (recognised by its magic bytes). Required columns ``ts``, ``host``,
        ``failure_mode``; optional ``device``, ``code``, ``severity``, ``detail``,
        ``repaired_ts``, ``system``, ``category``, ``counts_as_failure``. Header
        names are matched case-insensitively; other columns are ignored (listed
        in the source's options).
    tz : str, optional
        IANA zone of timestamps written without an offset (e.g. ``"UTC"``).
        Timestamps with an offset (``Z``, ``+01:00``, ``+0100``) ignore it.
    replace : bool, default False
        Re-read the file even if it was ingested before, dropping the rows of the
        earlier sources of the same path (or the same bytes) first, in the same
        transaction (``--replace``). Without it, a changed file at a path read
        before is an error and identical bytes are skipped.
    as_of : str or datetime, optional
        When the file was collected (ISO 8601 with a zone, or an aware
        datetime; ``--as-of``): stored in UTC as ``as_of_ts`` in the source's
        options, where analysis ends open-ended observation. A zone-less time
        is an error.

    Returns
    -------
    IngestResult
        Counts of the file's data records, loaded rows and rejects, or
        ``skipped=True`` if the same bytes were ingested as events before (with a
        ``note`` if ``tz`` differs from that earlier read).

    Raises
    ------
    IngestError
        If the file is missing, unreadable or not a CSV/Parquet table (UTF-16,
        Latin-1, compressed and truncated files are named as such); if a
        required header column is missing (the message lists expected and found
        columns and suggests the right ``--kind``); if ``tz`` is unknown; if a
        timestamp has no offset and no ``tz`` was given (the message names the
        first such line and the fix ``--tz ZONE``); or, without ``replace``, if
        the file was read from the same path before and has changed since.

    Notes
    -----
    Every value is read as text and parsed here. ``ts`` and ``repaired_ts`` are
    ISO 8601 (``2024-03-01T12:00:00Z``, ``2024-03-01 13:00:00+01:00``, optional
    fraction) and stored in UTC; zone-less times are read in ``tz`` (in the
    fall-back hour the earlier instant is taken and flag ``dst_ambiguous`` set;
    a time in the spring-forward gap is read as standard time, flag
    ``dst_nonexistent``). :math:`repair\_s = epoch(repaired\_ts) - epoch(ts)`.
    ``failure_mode`` may be any name; it is stored stripped and in lower case,
    otherwise as given (``"GPU_Memory_UCE"`` -> ``gpu_memory_uce``). Its
    category and whether it counts as a failure:

    - a mode of the taxonomy (:data:`relkit.taxonomy.FAILURE_MODES`, e.g.
      ``gpu/hbm_uncorrectable``) keeps the taxonomy's; a row that states others
      in ``category``/``counts_as_failure`` is loaded with the flag
      ``category_from_taxonomy``;
    - any other mode takes the file's ``category`` (one of
      :data:`relkit.taxonomy.CATEGORIES`, any case) and ``counts_as_failure``
      (``true/false``, ``yes/no``, ``1/0``) of its first row that states them,
      else ``unknown`` and True. The file's new modes are added to the store's
      ``failure_modes`` table (``component``, ``llama3_row`` NULL;
      ``declared_source_id`` = this file's ``source_id``; listed in the
      source's options as ``declared_modes``), so analysis finds every mode's
      category there. A mode another file declared before keeps that file's
      values.

    A record is rejected (line number, reason naming column and value, raw text)
    when a required field is empty, a timestamp does not parse, ``repaired_ts``
    precedes ``ts``, ``category`` or ``counts_as_failure`` is not a valid value,
    its stated category or counts_as_failure for a non-taxonomy mode disagrees
    with an earlier line of the file or with the file that declared the mode
    (the reason names both: line, or source id and path), or its field count
    differs from the header's. Flags (``events.flags``, comma-separated):
    ``dst_ambiguous``, ``dst_nonexistent``, ``category_from_taxonomy``. CSV
    ``line_no`` is the physical line a record starts on (header = line 1, quoted
    newlines counted); for Parquet it is the 1-based row number.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from relkit.store import Store
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "ev.csv").write_text(
    ...     "ts,host,failure_mode\n"
    ...     "2024-03-01T12:00:00+01:00,n1,gpu/xid_79\n"
    ...     "yesterday,n2,gpu/xid_79\n"
    ... )
    >>> store = Store(":memory:")
    >>> read_events(store, d / "ev.csv").to_dict()  # doctest: +NORMALIZE_WHITESPACE
    {'path': '...ev.csv', 'kind': 'events', 'source_id': 1, 'n_lines': 2,
     'n_loaded': 1, 'n_rejected': 1, 'skipped': False, 'note': None, 'replaced': [],
     'n_ignored': 0, 'top_rejects': '1 rejected: 1 × "unparseable timestamp in
     column \'ts\': \'yesterday\'" (line 3)', 'flag_counts': None}
    >>> store.table("events")["ts"].to_list()
    [datetime.datetime(2024, 3, 1, 11, 0, tzinfo=zoneinfo.ZoneInfo(key='UTC'))]
    >>> store.table("rejects")["reason"].to_list()
    ["unparseable timestamp in column 'ts': 'yesterday'"]

    A mode outside the taxonomy, with its category from the file:

    >>> _ = (d / "uce.csv").write_text(
    ...     "ts,host,failure_mode,category\n2024-03-02T00:00:00Z,n1,gpu_memory_uce,"
    ...     "hardware\n"
    ... )
    >>> read_events(store, d / "uce.csv").n_loaded
    1
    >>> store.table("failure_modes").filter(failure_mode="gpu_memory_uce").select(
    ...     "category", "counts_as_failure", "declared_source_id"
    ... ).rows()
    [('hardware', True, 2)]
    """
    tz = check_tz(path, tz)
    return ingest(
        store,
        path,
        kind="events",
        options={"tz": tz},
        parse=lambda p: _parse_events(store, p, tz, replace=replace),
        replace=replace,
        as_of=as_of,
    )


def read_assets(
    store: Store,
    path: str | Path,
    *,
    tz: str | None = None,
    replace: bool = False,
    as_of: str | datetime | None = None,
) -> IngestResult:
    r"""Read a normalised assets table (CSV or Parquet) into the store's ``assets``.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        CSV or Parquet with required header columns ``host``, ``in_service_ts``
        (the install date; its values may be empty: unknown); optional
        ``out_of_service_ts`` (empty = still in service), ``gpus`` (whole number
        >= 0; empty = 8), ``device``, ``system``, ``observed_from_ts`` (when
        observation of the unit began). Every further column goes into
        ``attrs`` as a JSON object of string values (empty values left out).
    tz : str, optional
        IANA zone of timestamps written without an offset.
    replace : bool, default False
        Re-read the file even if it was ingested before, dropping the rows of the
        earlier sources of the same path (or the same bytes) first, in the same
        transaction (``--replace``). Without it, a changed file at a path read
        before is an error and identical bytes are skipped.
    as_of : str or datetime, optional
        When the file was collected (ISO 8601 with a zone, or an aware
        datetime; ``--as-of``): stored in UTC as ``as_of_ts`` in the source's
        options, where analysis ends open-ended observation. A zone-less time
        is an error.

    Returns
    -------
    IngestResult
        Counts of data records, loaded rows and rejects, or ``skipped=True``.

    Raises
    ------
    IngestError
        As :func:`read_events`: unreadable or wrong-format file, missing required
        columns, unknown ``tz``, zone-less timestamps without ``tz``, or a changed
        file read before (without ``replace``).

    Notes
    -----
    A row with an empty ``in_service_ts`` (install date unknown) is loaded with
    ``in_service_ts`` NULL and the flag ``in_service_unknown``: the unit enters
    observation at ``observed_from_ts`` if given, else (``observed_from_ts``
    NULL too) at its first record, which analysis finds; its age at entry is
    unknown (left-truncated). Flags (``assets.flags``, comma-separated):
    ``in_service_unknown``, and ``dst_ambiguous`` / ``dst_nonexistent`` for a
    zone-less time read in ``tz``.

    Rejected (with line number and reason): empty ``host``, an unparseable
    timestamp, ``gpus`` negative or not a whole number (``8.0``, as Parquet
    float columns give, is 8), ``out_of_service_ts`` before ``in_service_ts``, a
    wrong field count, and a service window that overlaps an earlier row's of
    the same ``(host, device)`` in the file (the reason names that line), so
    that no unit's exposure counts twice. A window is ``[start,
    out_of_service_ts)`` with ``start`` the ``in_service_ts``, else the
    ``observed_from_ts``; with neither, the start is unknown and the window
    reaches back without limit (it overlaps every other window of the unit
    that starts before its end). ``attrs`` is ``"{}"`` when the file
    has no further columns.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from relkit.store import Store
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> _ = (d / "assets.csv").write_text(
    ...     "host,in_service_ts,gpus,rack\nn1,2024-01-01,8,r1\nn2,2024-01-01,-1,r1\n"
    ... )
    >>> store = Store(":memory:")
    >>> read_assets(store, d / "assets.csv", tz="UTC").n_rejected
    1
    >>> store.table("assets").select("host", "gpus", "attrs").rows()
    [('n1', 8, '{"rack": "r1"}')]

    An unknown install date is accepted and flagged:

    >>> _ = (d / "old.csv").write_text("host,in_service_ts\nn9,\n")
    >>> read_assets(store, d / "old.csv").n_loaded
    1
    >>> store.table("assets").filter(host="n9").select("in_service_ts", "flags").rows()
    [(None, 'in_service_unknown')]
    """
    tz = check_tz(path, tz)
    return ingest(
        store,
        path,
        kind="assets",
        options={"tz": tz},
        parse=lambda p: _parse_assets(store, p, tz),
        replace=replace,
        as_of=as_of,
    )
