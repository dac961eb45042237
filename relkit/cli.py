"""The ``relkit`` command: argument parsing over the library, no logic of its own.

Every verb prints a readable table by default, or JSON / CSV with ``--format``.
Errors go to stderr as one readable message with a non-zero exit code, never
as a traceback (set ``RELKIT_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import warnings

from relkit import __version__ as _VERSION
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import PartialIngestError, RelkitError, RelkitWarning

#: ``typing.TYPE_CHECKING`` without importing typing: polars, json and datetime
#: are imported where they run, so `relkit --help` stays quick (issue 13 §3);
#: type checkers read this name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from datetime import datetime
    from typing import Any

    import polars as pl

__all__ = ["main"]

EXIT_USAGE = 2
EXIT_DATA = 1
EXIT_INTERNAL = 3
EXIT_INTERRUPTED = 130
EXIT_CLOSED_PIPE = 141


def _progress(message: str) -> None:
    _say(f"relkit: {message}")


def _say(line: str) -> None:
    """Print a line on stderr; if its reader has gone (2>&1 | head), work on."""
    try:
        print(line, file=sys.stderr, flush=True)
    except BrokenPipeError:
        _to_devnull(sys.stderr)


def _to_devnull(stream: object) -> None:
    """Point a closed pipe's stream at the null device, so writing ends quietly."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):  # not a file (a test's capture)
        pass


def _json_default(value: object) -> object:
    from datetime import date, datetime

    from relkit._cli_format import instant_text

    if isinstance(value, datetime):  # as CSV writes it: ISO 8601 in UTC
        return instant_text(value)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)


def _clean(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def _emit(
    result: pl.DataFrame | dict[str, Any] | list[dict[str, Any]], fmt: str
) -> None:
    import json

    import polars as pl

    from relkit._cli_format import machine_frame, natural_order, reading_frame

    if isinstance(result, pl.DataFrame):
        frame = natural_order(result)  # system and host ids: 2 before 10
        rows = [
            {k: _clean(v) for k, v in r.items()}
            for r in machine_frame(frame).to_dicts()
        ]
    else:
        rows = [
            {k: _clean(v) for k, v in r.items()}
            for r in ([result] if isinstance(result, dict) else result)
        ]
        # every row decides a column's type (a note or an id may first appear
        # after row 100: a directory of many files), mixed types become text
        frame = pl.DataFrame(rows, infer_schema_length=None, strict=False)
    if fmt == "json":
        payload: object = rows[0] if isinstance(result, dict) else rows
        print(json.dumps(payload, indent=2, default=_json_default))
    elif fmt == "csv":
        nested = [c for c, t in frame.schema.items() if t.is_nested()]
        flat = machine_frame(frame).with_columns(
            pl.col(c).cast(pl.List(pl.String)).list.join(";") for c in nested
        )
        sys.stdout.write(flat.write_csv())
    elif isinstance(result, dict):
        _print_pairs(result)
    else:
        height = frame.height
        frame = reading_frame(frame, rows=200)
        with pl.Config(
            tbl_rows=200,
            tbl_cols=30,
            tbl_width_chars=1000,
            tbl_formatting="ASCII_MARKDOWN",
            tbl_hide_dataframe_shape=True,
            tbl_hide_column_data_types=True,
            fmt_str_lengths=300,
        ):
            print(frame)
        if height == 0:
            _progress("note: the result has no rows")
        cut = [
            f"{height:,} rows (200 shown)" if height > 200 else "",
            f"{frame.width} columns (30 shown)" if frame.width > 30 else "",
        ]
        if shown := " and ".join(c for c in cut if c):
            _progress(f"note: the table has {shown}; --format csv or json gives all")


def _print_pairs(result: dict[str, Any]) -> None:
    """Print a one-row result as ``name  value`` lines, numbers for reading."""
    from datetime import datetime

    from relkit._cli_format import instant_text

    width = max(len(k) for k in result)
    for key, value in result.items():
        if isinstance(value, float):
            # four significant digits, whole numbers from 1,000 up
            shown: object = f"{value:.4g}" if abs(value) < 1e3 else f"{value:,.0f}"
        elif isinstance(value, int) and not isinstance(value, bool):
            shown = f"{value:,}" if key.startswith("n_") else value
        elif isinstance(value, datetime):
            shown = instant_text(value)
        elif value is None or value == []:
            continue  # nothing to say (--format json shows it as null)
        else:
            shown = value
        print(f"{key:<{width}}  {shown}")


def _parse_instant(text: str | None, flag: str) -> datetime | None:
    from datetime import datetime

    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError as exc:
        msg = (
            f"{flag}: cannot read {text!r} as a time; "
            "give ISO 8601 with a zone, e.g. 2004-01-01T00:00Z"
        )
        raise RelkitError(msg) from exc
    if value.tzinfo is None:
        example = value.strftime("%Y-%m-%dT%H:%MZ")
        msg = f"{flag}: {text!r} has no time zone; add one, e.g. {example} for UTC"
        raise RelkitError(msg)
    return value


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


# -- verbs ---------------------------------------------------------------------------
#: A directory ingest lists its files one line each up to this many; above, one
#: summary line (and each file's notes) on stderr.
_FILES_LISTED = 20


def _directory_summary(
    where: str, path: str, done: list, took: float, n_failed: int = 0
) -> str:
    """One line for a directory's files: loaded, skipped, refused, lines, rate."""
    n_skipped = sum(r.skipped for r in done)
    n_lines = sum(r.n_lines for r in done)
    n_loaded = sum(r.n_loaded for r in done)
    n_rejected = sum(r.n_rejected for r in done)
    n_ignored = sum(r.n_ignored or 0 for r in done)
    rate = f", {n_lines / took:,.0f} lines/s" if took > 0 else ""
    return (
        f"{where} {path}: {len(done) - n_skipped:,} file(s) read, {n_skipped:,} "
        f"skipped (already ingested), {n_failed:,} refused (below); "
        f"{n_lines:,} lines: {n_loaded:,} loaded, "
        f"{n_ignored:,} ignored, {n_rejected:,} rejected ({took:.1f} s{rate}); "
        "--format json lists every file"
    )


def _cmd_ingest(args: argparse.Namespace) -> int:
    from pathlib import Path

    from relkit._cli_distributed import check_engine_options, parse_with_ray

    check_engine_options(args)  # --out/--address/--workers need --engine ray
    if args.engine == "ray":  # parse on Ray, then load its output as parsed-logs
        args = parse_with_ray(args, progress=_progress)
    from relkit.ingest import read_path
    from relkit.store import Store

    as_of = _parse_instant(args.as_of, "--as-of")
    results, failed, refused = [], 0, []
    only_error = ""  # the one file given could not be read: this is the error
    n_files = 0  # files tried: a directory counts its files
    with Store(args.db) as store:
        for n, path in enumerate(args.paths, 1):
            started = time.perf_counter()
            where_n = f"[{n}/{len(args.paths)}]"
            try:
                done = read_path(
                    store,
                    path,
                    kind=args.kind,
                    tz=args.tz,
                    replace=args.replace,
                    reference_date=args.reference_date,
                    host=args.host,
                    host_from_filename=args.host_from_filename,
                    pseudonymize=args.pseudonymize,
                    pseudonym_key_file=args.pseudonym_key_file,
                    snapshot_ts=args.snapshot_ts,
                    as_of=as_of,
                    boot_time=args.boot_time,
                    fields=args.fields,
                    progress=None if args.quiet else _progress,
                )
            except PartialIngestError as exc:
                # a directory: the good files were ingested, the bad ones named
                done = exc.results  # type: ignore[assignment]
                bad_files = list(exc.failures)
                n_here = exc.n_files
            except RelkitError as exc:
                failed += 1
                n_files += 1
                if len(args.paths) == 1:  # said once, as the command's error
                    only_error = str(exc)
                else:
                    _progress(f"{where_n} error: {exc}")
                results.append(
                    {"path": str(path), "kind": args.kind, "error": str(exc)}
                )
                continue
            else:
                bad_files = []
                n_here = len(done)
            n_files += n_here
            took = time.perf_counter() - started
            in_dir = Path(path).is_dir()
            # a directory's files in the order they were read (name order),
            # refused ones among them; many files: one line for all, and the
            # files' notes and errors only (--format json gives every file)
            items: list = sorted([*done, *bad_files], key=lambda r: Path(r.path).parts)
            brief = args.quiet or (in_dir and n_here > _FILES_LISTED)
            if in_dir and n_here > _FILES_LISTED and not args.quiet:
                _progress(_directory_summary(where_n, path, done, took, len(bad_files)))
            kind = "kernel" if args.kind == "parsed-logs" else args.kind
            for k, result in enumerate(items, 1):
                where = (
                    f"{where_n} file {k}/{n_here} {result.path}"
                    if in_dir
                    else f"{where_n} {result.path}"
                )
                if isinstance(result, RelkitError):
                    failed += 1
                    _progress(f"{where_n} file {k}/{n_here} error: {result}")
                    results.append(
                        {"path": result.path, "kind": kind, "error": result.reason}
                    )
                    continue
                row = result.to_dict()
                if result.skipped:
                    state = "skipped (already ingested)"
                else:
                    ignored = row.get("n_ignored")
                    extra = f", {ignored} ignored" if ignored is not None else ""
                    state = (
                        f"{result.n_loaded} loaded{extra}, {result.n_rejected} rejected"
                    )
                if args.kind in ("kernel", "nvsmi", "parsed-logs"):
                    row = {"n_events": result.n_loaded, **row}
                note = f"; {result.note}" if result.note else ""
                # a directory's files are read together: its time is in the
                # summary, not per file
                took_here = "" if in_dir else f" ({took:.1f} s)"
                if brief:
                    if note and not args.quiet:
                        _progress(f"{where}{note}")
                else:
                    _progress(f"{where}: {state}{took_here}{note}")
                    if rejected := result.reject_summary():
                        _progress(f"  {rejected}")
                    if flagged := result.flag_summary():
                        _progress(f"  flags: {flagged}")
                if result.all_rejected:
                    refused.append(result)
                results.append(row)
        if only_error:
            if args.format != "table":  # the record, for a program reading it
                _emit(results, args.format)
            raise RelkitError(only_error)
        if results and args.format == "table":  # each error is on stderr above
            _emit(
                [
                    {**r, "error": "refused (above)"} if "error" in r else r
                    for r in results
                ],
                args.format,
            )
        elif results:
            _emit(results, args.format)
        if failed or refused:
            # raised inside the store's block, so a new store left empty is removed
            parts = []
            if failed:
                parts.append(
                    f"{failed} of {n_files} file(s) could not be ingested (above)"
                )
            for result in refused:
                reason, count, _lines = result.top_rejects[0]
                parts.append(
                    f"{result.path}: all {result.n_rejected} records were rejected; "
                    f'top reason ({count}×): "{reason}". The rejects are kept: '
                    f"`relkit rejects --db {args.db} --source {result.path}` lists "
                    "them"
                )
            raise RelkitError("; ".join(parts))
    return 0


def _open_tables(db: str) -> dict[str, pl.DataFrame]:
    """Read the store tables every answer needs (``answers.store_tables``)."""
    from relkit.answers import store_tables
    from relkit.store import Store

    with Store(db, read_only=True) as store:
        return store_tables(store)


def _say_empty_inventories(sources: pl.DataFrame, basis: str) -> None:
    """Warn when an assets file loaded nothing, so exposure came from elsewhere."""
    import polars as pl

    empty = sources.filter((pl.col("kind") == "assets") & (pl.col("n_loaded") == 0))
    for row in empty.iter_rows(named=True):
        _progress(
            f"warning: assets file {row['path']} loaded no rows "
            f"({row['n_rejected']} rejected; `relkit rejects --db DB --source "
            f"{row['path']}` says why), so time at risk is {basis}"
        )


def _say_exclusions(obs_excluded: pl.DataFrame) -> None:
    """Name the failures left out of every window, by reason, on stderr."""
    import polars as pl

    if obs_excluded.height == 0:
        return
    reasons = (
        obs_excluded.with_columns(pl.col("reason").str.replace(r" \(.*\)$", ""))
        .group_by("reason")
        .agg(n=pl.len())
        .sort("n", "reason", descending=[True, False])
    )
    shown = "; ".join(f"{r['n']} {r['reason']}" for r in reasons.iter_rows(named=True))
    _progress(
        f"{obs_excluded.height} failure(s) in no service window of their unit were "
        f"excluded ({shown}); `relkit rejects --db DB` lists them"
    )


def _say_node_fold(result: pl.DataFrame, window_min: float | None) -> None:
    """Say how many GPU (or part) failures were folded into node failures."""
    from relkit.observation import LOG_WINDOW_MIN

    if "n_folded" not in result.columns or not (n := int(result["n_folded"].sum())):
        return
    window = LOG_WINDOW_MIN if window_min is None else window_min
    _progress(
        f"note: {n} failure(s) within {window:g} min of an earlier failure of the "
        "same node (other GPUs or parts) are folded into that node failure "
        "(n_folded): --unit node counts node outages, --unit gpu each GPU's "
        "failure, --window-min sets the window"
    )


def _say_no_wall_time(events: pl.DataFrame) -> None:
    """Say how many events lack a wall time and how to give them one."""
    from relkit.answers import no_wall_time_note

    if (note := no_wall_time_note(events)) is not None:
        _progress(f"warning: {note}")


def _say_unknown_xid(events: pl.DataFrame, *, counted: bool) -> None:
    """Name the Xid codes outside NVIDIA's catalogue, and how to count them."""
    from relkit.taxonomy import unknown_xid_note

    if (note := unknown_xid_note(events, counted=counted)) is not None:
        _progress(f"note: {note}")


def _check_options(args: argparse.Namespace) -> None:
    """Range checks of numeric and text options, with the flag in the message."""
    for flag in ("window_min", "flap_debounce_min"):
        value = getattr(args, flag, None)
        if value is not None and not (0 <= value <= 1e7):
            msg = (
                f"--{flag.replace('_', '-')} {value} must be between 0 and 1e7 minutes"
            )
            raise RelkitError(msg)
    gpus = getattr(args, "gpus_per_node", None)
    if gpus is not None and not (1 <= gpus <= 1024):
        msg = f"--gpus-per-node {gpus} must be a whole number from 1 to 1024"
        raise RelkitError(msg)
    host = getattr(args, "host", None)
    if host is not None and not host.strip():
        msg = "--host is empty; give the host name, e.g. --host gpu017"
        raise RelkitError(msg)


def _window(args: argparse.Namespace) -> tuple[datetime | None, datetime | None]:
    start = _parse_instant(getattr(args, "window_start", None), "--window-start")
    end = _parse_instant(getattr(args, "window_end", None), "--window-end")
    if start is not None and end is not None and start >= end:
        from relkit._cli_format import instant_text

        fix = "give a later end" if start == end else "swap them"
        msg = (
            f"--window-start {instant_text(start)} is not before --window-end "
            f"{instant_text(end)}; {fix}"
        )
        raise RelkitError(msg)
    return start, end


def _cmd_mtbf(args: argparse.Namespace) -> int:
    import polars as pl

    from relkit.answers import mtbf_of
    from relkit.observation import observe

    start, end = _window(args)
    tables = _open_tables(args.db)
    obs = observe(
        **tables,
        window_start=start,
        window_end=end,
        window_min=args.window_min,
        gpus_per_node=args.gpus_per_node,
        count_unknown_xid=args.count_unknown_xid,
    )
    result = mtbf_of(
        obs,
        by=_columns(args.by),
        confidence=args.confidence,
        unit=args.unit,
        gpus_per_node=args.gpus_per_node,
        min_exposure_h=args.min_exposure_h,
    )
    if args.period is not None:
        from relkit.answers import mtbf_by_period

        # the whole window's totals, ungrouped: a failure attribute in --by
        # splits failures, not time at risk, so its rows' exposures overlap
        whole = mtbf_of(obs, unit=args.unit, gpus_per_node=args.gpus_per_node)
        result = mtbf_by_period(
            obs.failures,
            obs.windows,
            obs=obs,
            period=args.period,
            by=_columns(args.by),
            confidence=args.confidence,
            unit=args.unit,
            gpus_per_node=args.gpus_per_node,
            min_exposure_h=args.min_exposure_h,
        )
        _progress(
            f"{result.height:,} {args.period} row(s); whole window: "
            f"{int(whole['n_failures'].sum()):,} failure(s) over "
            f"{whole['exposure_h'].sum():,.0f} unit-hours"
        )
    if obs.windows["exposure_h"].sum() == 0:
        first = (
            tables["assets"]
            .select(pl.coalesce("in_service_ts", "observed_from_ts").min())
            .item()
        )
        last = tables["events"]["ts"].max()
        window = (
            f" in the window [{_shown(start) if start else 'start'}, "
            f"{_shown(end) if end else 'end'})"
            if start or end
            else ""
        )
        msg = (
            f"no unit was at risk{window}: units enter service from "
            f"{_shown(first)}, and the failure data ends at {_shown(last)}. "
            "Choose a window that overlaps them, or check the assets' dates."
        )
        raise RelkitError(msg)
    _say_exclusions(obs.excluded)
    _say_unknown_xid(tables["events"], counted=args.count_unknown_xid)
    _say_empty_inventories(tables["sources"], obs.exposure_basis)
    for note in obs.notes:
        _progress(f"warning: {note}")
    _say_no_wall_time(tables["events"])
    _say_node_fold(result, obs.window_min)
    _say_row_warnings(result, [*_columns(args.by), "period_start"])
    _emit(result, args.format)
    return 0


def _say_row_warnings(result: pl.DataFrame, keys: list[str]) -> None:
    """Say each kind of a result's row warnings once, with its rows' count.

    The same warning on many rows (a partial last quarter of every system) is
    one line naming the first such row; the ``warning`` column has them all.
    """
    import polars as pl

    if "warning" not in result.columns:
        return
    warned = result.filter(pl.col("warning").is_not_null())
    kinds = warned.group_by("warning", maintain_order=True).agg(
        n=pl.len(), first=pl.struct(pl.all()).first()
    )
    for text, n, first in kinds.head(5).iter_rows():
        where = ", ".join(
            f"{k} {_shown(first[k])}" for k in keys if first.get(k) is not None
        )
        rows = f"{n} rows, e.g. {where}" if n > 1 else where
        _progress(f"warning: {text}" + (f" ({rows})" if rows else ""))
    if kinds.height > 5:
        _progress(
            f"note: {kinds.height - 5} more kinds of warning; the warning column "
            "(--format csv) has each row's"
        )


def _shown(value: object) -> str:
    """Write a group key for a message: a time as ISO 8601 in UTC."""
    from datetime import datetime

    from relkit._cli_format import instant_text

    return instant_text(value) if isinstance(value, datetime) else str(value)


def _cmd_events(args: argparse.Namespace) -> int:
    import polars as pl

    from relkit.answers import event_table
    from relkit.store import Store

    with Store(args.db, read_only=True) as store:
        events = store.table("events")
        modes = store.table("failure_modes")
    if args.failure_mode is not None:
        known = events["failure_mode"].drop_nulls().unique().to_list()
        if args.failure_mode not in known:
            import difflib

            near = difflib.get_close_matches(args.failure_mode, known, n=3)
            listed = sorted(near or known)
            msg = (
                f"--failure-mode {args.failure_mode}: no event of that mode in "
                f"{args.db}; "
                + (
                    "none has a mode (no events)"
                    if not known
                    else ("did you mean " if near else "its modes are ")
                    + ", ".join(listed[:12])
                    + (f", ... ({len(known)} modes in all)" if len(listed) > 12 else "")
                )
            )
            raise RelkitError(msg)
    listed = event_table(events, failure_mode=args.failure_mode)
    # the readers' flags per row, and the category of modes a file declared
    flags = events.group_by("source_id", "line_no").agg(
        flags=pl.col("flags").drop_nulls().unique(maintain_order=True).str.join(",")
    )
    listed = (
        listed.join(flags, on=["source_id", "line_no"], how="left")
        .join(
            modes.select("failure_mode", _declared="category"),
            on="failure_mode",
            how="left",
        )
        .with_columns(
            category=pl.coalesce("_declared", "category"),
            flags=pl.when(pl.col("flags") != "").then(pl.col("flags")),
        )
        .drop("_declared")
        .sort("ts", "source_id", "line_no", nulls_last=True)
    )
    _emit(listed, args.format)
    return 0


def _cmd_rejects(args: argparse.Namespace) -> int:
    import polars as pl

    from relkit.answers import excluded_failures, store_tables
    from relkit.store import Store

    with Store(args.db, read_only=True) as store:
        rejects = store.rejects(args.source)
        tables = store_tables(store)
    # failures that were read but fall in no service window of their unit
    try:
        excluded = excluded_failures(**tables)
    except RelkitError as exc:
        _progress(f"failures outside service windows not checked: {exc}")
        excluded = None
    if excluded is not None and excluded.height:
        paths = tables["sources"].select("source_id", source="path")
        rows = excluded.join(paths, on="source_id", how="left").select(
            "source",
            "line_no",
            reason=pl.lit("excluded from MTBF: failure ") + pl.col("reason"),
            raw=pl.format(
                "{} {} {}",
                pl.col("ts").dt.strftime("%Y-%m-%dT%H:%M:%SZ"),
                pl.col("host"),
                pl.col("failure_mode"),
            ),
        )
        if args.source is not None:
            from pathlib import Path

            wanted = str(Path(args.source).resolve())
            keep = [
                p for p in rows["source"].unique().to_list()
                if p is not None and str(Path(p).resolve()) == wanted
            ]  # fmt: skip
            rows = rows.filter(pl.col("source").is_in(keep))
        rejects = pl.concat([rejects, rows.cast(rejects.schema)], how="vertical")
    _emit(rejects, args.format)
    return 0


def _cmd_incidents(args: argparse.Namespace) -> int:
    from relkit.answers import incident_table, log_end, store_tables
    from relkit.store import Store

    with Store(args.db, read_only=True) as store:
        tables = store_tables(store)
    result = incident_table(
        tables["events"],
        window_min=args.window_min,
        flap_debounce_min=args.flap_debounce_min,
        end_of_log=log_end(tables["sources"]),
        failure_modes=tables.get("failure_modes"),
        count_unknown_xid=args.count_unknown_xid,
    )
    _say_unknown_xid(tables["events"], counted=args.count_unknown_xid)
    _say_no_wall_time(tables["events"])
    _emit(result, args.format)
    return 0


def _cmd_ettr(args: argparse.Namespace) -> int:
    from relkit.checkpoint import ettr_model
    from relkit.errors import InvalidParameterError

    if args.gpus_per_node < 1 or args.gpus < 1:
        msg = (
            f"--gpus ({args.gpus}) and --gpus-per-node ({args.gpus_per_node}) must be "
            "whole numbers >= 1, e.g. --gpus 16384 --gpus-per-node 8"
        )
        raise InvalidParameterError(msg)
    if args.gpus % args.gpus_per_node:
        msg = (
            f"--gpus {args.gpus} is not a whole number of nodes of "
            f"--gpus-per-node {args.gpus_per_node}"
        )
        raise InvalidParameterError(msg)
    from relkit._cli_format import rate_unit_warning

    # the other way round (above 1 per node-day) ettr_model warns itself
    per_1000 = args.failures_per_1000_node_days is not None
    rate = args.failures_per_1000_node_days / 1000.0 if per_1000 else None
    line = rate_unit_warning(None if rate is None else [rate], per_1000=True)
    if line is not None:
        _progress(line)
    result = ettr_model(
        n_nodes=args.gpus // args.gpus_per_node,
        failures_per_node_day=args.failure_rate,
        failures_per_1000_node_days=args.failures_per_1000_node_days,
        restart_h=args.restart_h,
        interval_h=args.interval_h,
        cost_h=args.cost_h,
    )
    _emit(result.to_dict(), args.format)
    return 0


def _weibull_shapes(values: list[str] | None) -> dict[str, float]:
    """Parse repeated ``--weibull-shape MODE=BETA`` options."""
    shapes: dict[str, float] = {}
    for text in values or []:
        mode, sep, beta = text.partition("=")
        try:
            value = float(beta)
        except ValueError:
            value = math.nan
        if not sep or not mode.strip() or not math.isfinite(value):
            msg = (
                f"--weibull-shape {text!r}: expected MODE=BETA with BETA a number, "
                "e.g. --weibull-shape gpu/fallen_off_bus=0.7"
            )
            raise RelkitError(msg)
        shapes[mode.strip()] = value
    return shapes


def _cmd_simulate(args: argparse.Namespace) -> int:
    from relkit.simulate import simulate_to_files, simulation_preset

    if not args.out.strip():
        msg = "--out is empty; give the directory to write into, e.g. --out sim/"
        raise RelkitError(msg)
    changes = {
        name: getattr(args, name)
        for name in (
            "checkpoint_interval_h",
            "checkpoint_cost_h",
            "restart_h",
            "noise_lines_per_node_day",
            "lemon_nodes",
            "lemon_multiplier",
            "rate_trend",
        )
        if getattr(args, name) is not None
    }
    config = simulation_preset(
        args.preset,
        nodes=args.nodes,
        days=args.days,
        run_nodes=args.run_nodes,
        background_jobs=args.background_jobs,
        weibull_shapes=_weibull_shapes(args.weibull_shape),
        **changes,
    )
    summary = simulate_to_files(
        config,
        args.out,
        seed=args.seed,
        force=args.force,
        allow_big=args.yes_big,
        progress=_progress,
    )
    _progress(f"simulation written to {summary['out']} ({summary['seconds']:.1f} s)")
    summary = {k: v for k, v in summary.items() if k != "ingest"}
    summary["out"] = str(summary["out"])
    _emit(summary, args.format)
    return 0


# -- parser --------------------------------------------------------------------------
def _add_format(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--format",
        choices=("table", "json", "csv"),
        default="table",
        help="output format (default: a readable table)",
    )


def _add_count_unknown_xid(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--count-unknown-xid",
        action="store_true",
        help="count Xid codes outside NVIDIA's Xid catalogue (gpu/unknown_xid) "
        "as failures; by default they are kept, named on stderr, not counted",
    )


def _add_db(parser: argparse.ArgumentParser) -> None:
    from relkit._cli_help import STORE_ENV, store_default

    parser.add_argument(
        "--db",
        default=store_default(),
        help=f"store file (default: ${STORE_ENV} if set, else relkit.duckdb; "
        "now %(default)s)",
    )


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """argparse's formatter with each option's default, and the width looked up once.

    An option whose help does not name its default gets one: ``(default: X)``,
    ``(default: off)`` for a switch, ``(default: not given)``, or
    ``(required)``. The examples at the end keep their lines. argparse makes a
    formatter for every option it adds (to check its help text) and each asks
    the terminal for its width; relkit adds hundreds, and start-up is measured
    (``bench/bench_startup.py``).
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        if (
            not action.option_strings
            or action.default == argparse.SUPPRESS
            or "default" in text.lower()
        ):
            return action.help
        if action.required:
            told = "required"
        elif action.nargs == 0:  # a switch: store_true and the like
            told = "default: off"
        elif action.default is None:
            from relkit._cli_help import unset_default

            told = f"default: {unset_default(self._prog.split()[-1], action.dest)}"
        else:
            told = "default: %(default)s"
        return f"{text} ({told})" if text else f"({told})"

    _width: int | None = None

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        if width is None:
            if _HelpFormatter._width is None:
                import shutil

                _HelpFormatter._width = shutil.get_terminal_size().columns - 2
            width = _HelpFormatter._width
        super().__init__(prog, indent_increment, max_help_position, width)


class _Parser(argparse.ArgumentParser):
    """An ArgumentParser whose help uses :class:`_HelpFormatter` by default."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:  # noqa: ANN401
        kwargs.setdefault("formatter_class", _HelpFormatter)
        super().__init__(*args, **kwargs)


class _Absorb:
    """Stands in for a verb's parser whose options are not needed this run."""

    def __getattr__(self, name: str) -> Callable[..., _Absorb]:
        return self._absorb

    def _absorb(self, *args: object, **kwargs: object) -> _Absorb:
        return self


class _Verbs:
    """``add_subparsers()``'s action, building only the options of ``only``.

    Every verb is registered (``relkit --help`` lists it, a wrong verb is
    named among the choices), but a verb other than ``only`` gets a bare
    parser and its options go to :class:`_Absorb`: start-up builds one verb's
    options, not all of them (``bench/bench_startup.py``).
    """

    def __init__(self, verbs: argparse._SubParsersAction, only: str) -> None:
        self._verbs, self._only = verbs, only

    def add_parser(self, name: str, **kwargs: Any) -> argparse.ArgumentParser:  # noqa: ANN401
        if name == self._only:
            return self._verbs.add_parser(name, **kwargs)
        self._verbs.add_parser(name, help=kwargs.get("help"))
        return _Absorb()  # type: ignore[return-value]

    def __getattr__(self, name: str) -> Any:  # noqa: ANN401
        return getattr(self._verbs, name)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """Build the argument parser of the ``relkit`` command.

    Parameters
    ----------
    only : str, optional
        Build the options of this verb only (the others are listed, with
        their help line, but take no options); ``""``: no verb's options
        (enough for ``relkit --help``). Default: every verb's.

    Returns
    -------
    argparse.ArgumentParser
        The parser, with one sub-command per verb.
    """
    parser = _Parser(
        prog="relkit",
        description="Reliability answers from GPU cluster failure and job logs.",
        epilog="environment:\n"
        "  RELKIT_DB     the store of every verb with --db (default relkit.duckdb)\n"
        "  RELKIT_DEBUG  1: show the traceback of an internal error\n\n"
        "examples:\n"
        "  relkit ingest --db fleet.duckdb --kind lanl failures.csv\n"
        "  relkit mtbf --db fleet.duckdb --by system\n"
        "  relkit VERB --help              each verb's options and examples\n"
        "  relkit completion bash > ~/.local/share/bash-completion/completions/"
        "relkit",
    )
    parser.add_argument("--version", action="version", version=f"relkit {_VERSION}")
    verbs: Any = parser.add_subparsers(
        dest="verb", required=True, metavar="VERB", parser_class=_Parser
    )
    subparsers = verbs
    if only is not None:
        verbs = _Verbs(verbs, only)

    p = verbs.add_parser("ingest", help="read raw files into the store")
    _add_db(p)
    p.add_argument(
        "--kind",
        required=True,
        choices=(
            "events",
            "assets",
            "lanl",
            "kernel",
            "nvsmi",
            "sacct",
            "k8s",
            "checkpoints",
            "parsed-logs",
        ),
        help="normalised events or assets CSV/Parquet, the LANL failure data, "
        "kernel/syslog logs (file, .gz or directory), nvidia-smi -q snapshots, "
        "Slurm sacct -P dumps, Kubernetes pod/job JSON, a training run's "
        "checkpoint/step log (JSON Lines, or CSV of ts,job_id|run_id,step,save_s), "
        "or parsed-logs: the Parquet directory written by --engine ray --out DIR "
        "(or Spark), each log file loaded as a kernel source",
    )
    p.add_argument(
        "--tz", help="IANA zone of zone-less timestamps, e.g. UTC or America/Denver"
    )
    p.add_argument(
        "--reference-date",
        help="kernel logs: date the log was collected (YYYY-MM-DD), for year-less "
        "syslog stamps",
    )
    p.add_argument("--host", help="kernel/nvsmi logs: host, for framings without one")
    p.add_argument(
        "--host-from-filename",
        action="store_true",
        help="kernel logs: the host is the file name (gpu017.log -> gpu017)",
    )
    p.add_argument(
        "--boot-time",
        help="kernel logs: when the host booted (ISO 8601 with zone, e.g. "
        "2025-02-23T03:20:00Z, or 'btime EPOCH' from /proc/stat); gives plain "
        "dmesg kernel-clock stamps a wall time (the log's last boot). Without "
        "it, HOST.btime beside the log (grep btime /proc/stat > HOST.btime) is "
        "used",
    )
    p.add_argument(
        "--quiet",
        action="store_true",
        help="no progress or per-file lines on stderr (errors and the rejected "
        "files' reasons still are)",
    )
    p.add_argument(
        "--replace",
        action="store_true",
        help="re-read a file ingested before (changed, or with other options), "
        "dropping the rows of its earlier ingest first",
    )
    p.add_argument(
        "--pseudonymize",
        action="store_true",
        help="sacct/k8s: replace user and job names by keyed pseudonyms (key from "
        "$RELKIT_PSEUDONYM_KEY or --pseudonym-key-file)",
    )
    p.add_argument("--pseudonym-key-file", help="file holding the pseudonym key")
    p.add_argument(
        "--snapshot-ts",
        help="k8s: when the dump was taken (ISO 8601 with zone); running pods are "
        "censored there",
    )
    p.add_argument(
        "--fields",
        help="sacct: the columns of a header-less dump (sacct --noheader -P), in "
        "its --format order, e.g. JobID,State,Start,End,Elapsed,AllocNodes,"
        "AllocTRES,NodeList",
    )
    p.add_argument(
        "--as-of",
        help="when the files were collected (ISO 8601 with zone, e.g. "
        "2025-06-11T12:05Z): where open-ended observation of their units ends",
    )
    p.add_argument("paths", nargs="+", metavar="PATH")
    from relkit._cli_distributed import add_engine_options

    add_engine_options(p)
    _add_format(p)
    p.set_defaults(func=_cmd_ingest)

    p = verbs.add_parser("mtbf", help="MTBF per group with exact chi-square bounds")
    _add_db(p)
    p.add_argument(
        "--by",
        help="comma-separated grouping: system, host, any assets column (rack, "
        "batch, ...), device (per-GPU assets) and failure attributes "
        "(failure_mode, root_cause, code, ...), e.g. system,root_cause",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help=f"two-sided level (default {DEFAULT_CONFIDENCE:g})",
    )
    p.add_argument("--window-start", help="ISO 8601 instant with zone")
    p.add_argument(
        "--window-end", help="ISO 8601 instant with zone (default: end of data)"
    )
    p.add_argument(
        "--window-min",
        type=float,
        help="incident gap window, min: log signals are folded with 10 when not "
        "given; normalised records (events tables, LANL) only when given",
    )
    p.add_argument(
        "--gpus-per-node",
        type=int,
        default=8,
        help="GPUs per host when there are no assets (hosts from the logs; "
        "default 8); an assets file without a gpus column was given 8 at ingest",
    )
    p.add_argument(
        "--unit",
        choices=("node", "gpu"),
        help="unit of time at risk: node-hours or GPU-hours (default: node, or gpu "
        "for per-GPU assets); rates are per 1000 node-days or GPU-days",
    )
    p.add_argument(
        "--min-exposure-h",
        type=float,
        default=24.0,
        help="warn for groups with less time at risk, unit-hours (default 24)",
    )
    p.add_argument(
        "--period",
        choices=("month", "quarter"),
        help="one row per calendar month or quarter (UTC) and group: exposure "
        "split at the period boundaries, failures in the period of their time",
    )
    _add_count_unknown_xid(p)
    _add_format(p)
    p.set_defaults(func=_cmd_mtbf)

    p = verbs.add_parser("events", help="list failure-log events with their category")
    _add_db(p)
    p.add_argument("--failure-mode", help="only this mode, e.g. gpu/hbm_uncorrectable")
    _add_format(p)
    p.set_defaults(func=_cmd_events)

    p = verbs.add_parser(
        "rejects", help="list the input lines ingest could not use, with reasons"
    )
    _add_db(p)
    p.add_argument("--source", help="only this file (its path as ingested)")
    _add_format(p)
    p.set_defaults(func=_cmd_rejects)

    p = verbs.add_parser("incidents", help="fold log events into incidents")
    _add_db(p)
    p.add_argument("--window-min", type=float, default=10.0, help="gap window, min")
    p.add_argument(
        "--flap-debounce-min", type=float, default=5.0, help="link-flap debounce, min"
    )
    _add_count_unknown_xid(p)
    _add_format(p)
    p.set_defaults(func=_cmd_incidents)

    p = verbs.add_parser(
        "ettr", help="expected ETTR of a training run (Kokolis et al. 2025)"
    )
    p.add_argument("--gpus", type=int, required=True, help="GPUs in the job")
    p.add_argument(
        "--gpus-per-node", type=int, default=8, help="GPUs per node (default: 8)"
    )
    rate = p.add_mutually_exclusive_group(required=True)
    rate.add_argument(
        "--failures-per-node-day",
        "--failure-rate",
        dest="failure_rate",
        type=float,
        help="node failure rate r_f per node-day, e.g. 0.0065 (give this or the next)",
    )
    rate.add_argument(
        "--failures-per-1000-node-days",
        type=float,
        help="the same rate per 1000 node-days, as `relkit mtbf` prints it, e.g. 6.5",
    )
    p.add_argument(
        "--restart-h", type=float, required=True, help="restart overhead u0, hours"
    )
    p.add_argument(
        "--interval-h", type=float, required=True, help="checkpoint interval, hours"
    )
    p.add_argument(
        "--cost-h", type=float, default=0.0, help="blocking checkpoint write, hours"
    )
    _add_format(p)
    p.set_defaults(func=_cmd_ettr)

    p = verbs.add_parser(
        "simulate",
        help="write a simulated cluster's raw logs with known ground truth",
    )
    p.add_argument(
        "--preset",
        choices=("llama3-54d", "rsc1"),
        default="llama3-54d",
        help="llama3-54d (Llama 3 Table 5) or rsc1 (Kokolis et al. RSC-1)",
    )
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--out", required=True, help="output directory (new or empty)")
    p.add_argument("--force", action="store_true", help="overwrite a non-empty --out")
    p.add_argument("--nodes", type=int, help="nodes in the fleet")
    p.add_argument("--days", type=float, help="simulated span, days")
    p.add_argument("--run-nodes", type=int, help="nodes of the training run (0: none)")
    p.add_argument(
        "--checkpoint-interval-h",
        type=float,
        help="run's checkpoint interval, hours (at least one training step, 10 s)",
    )
    p.add_argument(
        "--checkpoint-cost-h", type=float, help="blocking checkpoint write, hours"
    )
    p.add_argument("--restart-h", type=float, help="restart overhead u0, hours")
    p.add_argument(
        "--background-jobs", type=int, help="background jobs over the span (>= 0)"
    )
    p.add_argument(
        "--noise-lines-per-node-day",
        type=float,
        help="ordinary log lines per node-day besides failures",
    )
    p.add_argument(
        "--weibull-shape",
        action="append",
        metavar="MODE=BETA",
        help="Weibull shape of a failure mode's process, e.g. "
        "gpu/fallen_off_bus=0.7 (< 1: decreasing hazard, > 1: increasing); "
        "repeat for several modes (default: exponential, 1)",
    )
    p.add_argument(
        "--lemon-nodes",
        type=int,
        help="nodes whose hardware failure rates are multiplied by "
        "--lemon-multiplier (listed in ground_truth.json as lemon_hosts; "
        "default: the preset's share of the fleet)",
    )
    p.add_argument(
        "--lemon-multiplier",
        type=float,
        help="hardware rate multiplier of lemon nodes, >= 1 (default: the "
        "preset's, 10 for llama3-54d, 20 for rsc1)",
    )
    p.add_argument(
        "--rate-trend",
        type=float,
        metavar="BETA",
        help="power-law (Crow-AMSAA) trend of the hardware failure rate in "
        "calendar time, intensity proportional to t^(BETA-1) with the same mean "
        "rate: > 1 rising, < 1 falling (0.1 to 10; default 1, no trend)",
    )
    p.add_argument(
        "--yes-big",
        action="store_true",
        help="run even when the estimated output is over the size limits "
        "(5e8 log lines, 1e7 jobs) or the free disk space",
    )
    _add_format(p)
    p.set_defaults(func=_cmd_simulate)

    from relkit._cli_competing import add_competing_verbs  # cif
    from relkit._cli_goodput import add_goodput_verbs  # goodput, checkpoint, whatif
    from relkit._cli_hazards import add_hazards_verbs  # hazards
    from relkit._cli_jobs import add_job_verbs  # jobs, interruptions, rootcause, ...
    from relkit._cli_lemons import add_lemon_verbs  # lemons
    from relkit._cli_repairable import add_repairable_verbs  # trend, mcf
    from relkit._cli_report import add_report_verbs  # report, demo
    from relkit._cli_survival import add_survival_verbs  # survival

    add_report_verbs(
        verbs,
        emit=_emit,
        progress=_progress,
        parse_instant=_parse_instant,
        add_db=_add_db,
        add_format=_add_format,
    )
    add_goodput_verbs(
        verbs,
        emit=_emit,
        progress=_progress,
        parse_instant=_parse_instant,
        add_db=_add_db,
        add_format=_add_format,
    )

    add_job_verbs(
        verbs,
        emit=_emit,
        progress=_progress,
        parse_instant=_parse_instant,
        add_db=_add_db,
        add_format=_add_format,
    )
    add_survival_verbs(
        verbs,
        emit=_emit,
        progress=_progress,
        parse_instant=_parse_instant,
        add_db=_add_db,
        add_format=_add_format,
    )
    add_lemon_verbs(
        verbs,
        emit=_emit,
        progress=_progress,
        parse_instant=_parse_instant,
        add_db=_add_db,
        add_format=_add_format,
    )
    add_hazards_verbs(
        verbs,
        emit=_emit,
        progress=_progress,
        parse_instant=_parse_instant,
        add_db=_add_db,
        add_format=_add_format,
    )
    add_repairable_verbs(
        verbs,
        emit=_emit,
        progress=_progress,
        parse_instant=_parse_instant,
        add_db=_add_db,
        add_format=_add_format,
    )
    add_competing_verbs(
        verbs,
        emit=_emit,
        progress=_progress,
        parse_instant=_parse_instant,
        add_db=_add_db,
        add_format=_add_format,
    )

    p = verbs.add_parser(
        "completion", help="print a shell completion script for relkit (shtab)"
    )
    p.add_argument("shell", choices=("bash", "zsh", "tcsh"), help="the shell")
    p.set_defaults(func=_cmd_completion)

    # a summary and examples for each verb whose options were built
    built = {
        name: verb
        for name, verb in subparsers.choices.items()
        if only is None or name == only
    }
    if built:
        from relkit._cli_help import describe_verbs

        describe_verbs(built, {a.dest: a.help for a in subparsers._choices_actions})
    parser.verb_parsers = built  # type: ignore[attr-defined] # main's usage errors
    return parser


def _cmd_completion(args: argparse.Namespace) -> int:
    """Print the completion script of the full parser for ``args.shell``."""
    import shtab

    print(shtab.complete(build_parser(), shell=args.shell), end="")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``relkit`` command.

    Parameters
    ----------
    argv : sequence of str, optional
        Arguments without the program name; defaults to ``sys.argv[1:]``.

    Returns
    -------
    int
        Exit code: 0 success, 1 bad data or arguments, 2 usage error, 3 internal
        error, 130 interrupted (Ctrl-C).
    """
    given = list(sys.argv[1:] if argv is None else argv)
    if given == ["--version"]:  # no verb's parser is needed for this one
        print(f"relkit {_VERSION}")
        return 0
    # only the verb given needs its options (or none, for `relkit --help`)
    verb = given[0] if given and not given[0].startswith("-") else ""
    parser = build_parser(only=verb)
    args, unknown = parser.parse_known_args(given)
    if unknown:  # the verb's usage, not the top level's (relkit mtbf --bogus)
        verbs = getattr(parser, "verb_parsers", None) or {}
        (verbs.get(getattr(args, "verb", None)) or parser).error(
            f"unrecognized arguments: {' '.join(unknown)}"
        )
    func: Callable[[argparse.Namespace], int] = args.func
    # a store path that came from $RELKIT_DB is said to have, in an error
    args.db_from_env = (
        getattr(args, "db", None) is not None
        and not any(g == "--db" or g.startswith("--db=") for g in given)
        and bool(os.environ.get("RELKIT_DB", "").strip())
    )
    with warnings.catch_warnings():  # restores the warning machinery after
        warnings.showwarning = _note_printer(args.verb, warnings.showwarning)
        code = _run(func, args)
    try:
        sys.stdout.flush()  # here, not at exit, where a closed pipe is noisy
    except BrokenPipeError:
        return _closed_pipe()
    return code


def _closed_pipe() -> int:
    """End quietly when stdout's reader has gone (``relkit jobs | head -1``).

    stdout is pointed at the null device, so Python's flush at exit finds
    nothing to write (no "Exception ignored" line); the exit code is the
    shell's for a process ended by SIGPIPE, 128 + 13.
    """
    _to_devnull(sys.stdout)
    return EXIT_CLOSED_PIPE


def _note_printer(verb: str, shown: Callable[..., None]) -> Callable[..., None]:
    """Print relkit's warnings as one-line notes, others as Python does.

    relkit's warnings are notes for the user: one line on stderr, never
    Python's ``file:line: RelkitWarning:`` with the machine's paths.
    """

    def show(
        message: Warning | str,
        category: type[Warning],
        filename: str,
        lineno: int,
        file: object = None,
        line: str | None = None,
    ) -> None:
        if issubclass(category, RelkitWarning):
            _say(f"relkit: note: {message}")  # as _progress
        else:
            shown(message, category, filename, lineno, file, line)

    return show


#: Verbs that write to the store (the others open it read-only).
_WRITING_VERBS = frozenset({"ingest"})


def _locked_store(text: str, args: argparse.Namespace) -> str | None:
    """Say what to do when another process holds the store's lock, else None.

    DuckDB lets one process open a file for writing, or many read-only; a
    notebook's ``Store(path)`` holds the write lock and every other open fails
    with "Could not set lock on file ... Conflicting lock is held in PROGRAM
    (PID n)".
    """
    import re

    if "Could not set lock on file" not in text:
        return None
    found = re.search(r"held in (.*?) \(PID (\d+)\)", text)
    who = ""
    if found:
        program = re.split(r"[\\/]", found.group(1))[-1]
        who = f" (PID {found.group(2)}, {program})"
    db = getattr(args, "db", None) or "the store"
    if args.verb in _WRITING_VERBS:
        return (
            f"the store {db} is open in another process{who}; relkit {args.verb} "
            "writes to it, so close it there (store.close()) and run this again"
        )
    return (
        f"the store {db} is open for writing in another process{who}; close it "
        f"there (store.close()), or open it read-only there (Store({db!r}, "
        "read_only=True)) so that both can read"
    )


def _run(func: Callable[[argparse.Namespace], int], args: argparse.Namespace) -> int:
    """Run a verb; turn relkit's errors into one line and an exit code."""
    try:
        _check_options(args)
        return func(args)
    except RelkitError as exc:
        text = _locked_store(str(exc), args) or str(exc)
        if getattr(args, "db_from_env", False) and args.db in text:
            text += f" (--db {args.db} came from $RELKIT_DB; give --db or unset it)"
        _say(f"relkit {args.verb}: error: {text}")
        return EXIT_DATA
    except BrokenPipeError:
        return _closed_pipe()
    except (OSError, ValueError) as exc:
        _say(f"relkit {args.verb}: error: {exc}")
        return EXIT_DATA
    except KeyboardInterrupt:
        _say(f"relkit {args.verb}: interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:
        if text := _locked_store(str(exc), args):  # DuckDB's own error
            _say(f"relkit {args.verb}: error: {text}")
            return EXIT_DATA
        if os.environ.get("RELKIT_DEBUG"):
            raise
        _say(
            f"relkit {args.verb}: internal error: {type(exc).__name__}: {exc}\n"
            "This is a bug in relkit; rerun with RELKIT_DEBUG=1 for the traceback."
        )
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
