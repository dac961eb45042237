"""The ``relkit survival`` verb: lifetime models per endpoint, mode and unit.

Argument parsing over :func:`relkit.answers.survival_by`; no logic of its own
beyond saying on stderr what was counted and what was left out.
"""

from __future__ import annotations

import argparse

from relkit.errors import RelkitError

#: ``typing.TYPE_CHECKING`` without importing typing (start-up time, issue 13
#: §3); type checkers read this name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    import polars as pl

    Emit = Callable[[Any, str], None]
    Progress = Callable[[str], None]
    ParseInstant = Callable[[str | None, str], Any]
    AddArg = Callable[[argparse.ArgumentParser], None]


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _sum(result: pl.DataFrame, by: list[str], col: str) -> int:
    if col not in result.columns or result.height == 0:
        return 0
    # with --all-models each group has one row per model: count groups once
    keys = [*_GROUP_COLUMNS, *by]
    return int(result.unique(subset=keys)[col].sum())


#: Columns naming a group; with ``--by`` its columns come after them.
_GROUP_COLUMNS = {"endpoint", "unit", "failure_mode"}


def _say_counts(
    result: pl.DataFrame, endpoint: str, by: list[str], progress: Progress
) -> None:
    """Say on stderr what each group count means, where it is not zero."""
    if endpoint == "removal":
        progress(
            "removal: "
            f"{_sum(result, by, 'n_removed_after_failure')} unit(s) removed after a "
            "failure in their last service window (events), "
            f"{_sum(result, by, 'n_removed_without_failure')} removed without one "
            "(censored at removal: a competing exit), "
            f"{_sum(result, by, 'n_in_service')} still in service (censored at the "
            "end of data)"
        )
    if n := _sum(result, by, "n_origin_unknown"):
        what = (
            "first gap(s) measured from the tracking start of units with no "
            "known install date (left-truncated there)"
            if endpoint == "tbf"
            else "unit(s) with no known install date left out (their age is unknown)"
        )
        progress(f"note: {n} {what} (n_origin_unknown)")
    if n := _sum(result, by, "n_failed_before_entry"):
        progress(
            f"note: {n} unit(s) failed before they entered observation and are "
            "left out: their first failure was not seen (n_failed_before_entry)"
        )
    if n := _sum(result, by, "n_excluded"):
        progress(
            f"note: {n} failure(s) outside every service window of their unit "
            "were excluded (n_excluded); `relkit rejects --db DB` lists them"
        )
    if n := _sum(result, by, "n_node_level"):
        progress(
            f"note: {n} failure(s) of non-GPU modes (network, NVSwitch, host, "
            "software) are not counted per GPU (n_node_level): --unit node counts "
            "them"
        )
    if n := _sum(result, by, "n_origin_failures"):
        progress(
            f"note: {n} failure(s) open their unit's observation (its window starts "
            "at its own first record, no assets): they are the origin of its "
            "first gap, not a gap's end (n_origin_failures)"
        )


def add_survival_verbs(
    verbs: Any,  # noqa: ANN401 - argparse's private _SubParsersAction
    *,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
    add_db: AddArg,
    add_format: AddArg,
) -> None:
    """Register the ``survival`` verb on ``verbs``.

    Parameters
    ----------
    verbs : argparse._SubParsersAction
        The sub-command registry of :func:`relkit.cli.build_parser`.
    emit, progress, parse_instant, add_db, add_format : callable
        The CLI's output, stderr, time parsing and shared-option helpers.
    """

    def cmd_survival(args: argparse.Namespace) -> int:
        import polars as pl

        from relkit.answers import store_tables, survival_by
        from relkit.store import Store

        start = parse_instant(args.window_start, "--window-start")
        end = parse_instant(args.window_end, "--window-end")
        if start is not None and end is not None and start >= end:
            msg = f"--window-start {start} is not before --window-end {end}; swap them"
            raise RelkitError(msg)
        if args.unit == "system" and args.endpoint != "tbf":
            msg = (
                f"--endpoint {args.endpoint} is an age of a node or a GPU; a system "
                "has no age in service: use --unit node or --unit gpu"
            )
            raise RelkitError(msg)
        with Store(args.db, read_only=True) as store:
            tables = store_tables(store)
        progress(
            f"fitting lifetime models to the {args.endpoint} survival table"
            + (f" of {args.failure_mode}" if args.failure_mode else "")
        )
        result = survival_by(
            **tables,
            by=_columns(args.by),
            endpoint=args.endpoint,
            unit=args.unit,
            failure_mode=args.failure_mode,
            all_models=args.all_models,
            window_start=start,
            window_end=end,
        )
        _say_counts(result, args.endpoint, _columns(args.by), progress)
        if result.height == 0 or int(result["n_failures"].sum()) == 0:
            modes = (
                tables["events"]["failure_mode"].drop_nulls().unique().sort().to_list()
            )
            msg = (
                f"no failure counted for --endpoint {args.endpoint}"
                + (f" --failure-mode {args.failure_mode}" if args.failure_mode else "")
                + f"; the store's modes are {modes[:20]}"
            )
            raise RelkitError(msg)
        for row in (
            result.filter(~pl.col("status").str.starts_with("ok"))
            .head(5)
            .iter_rows(named=True)
        ):
            group = {
                k: row[k]
                for k in _columns(args.by) or ["failure_mode"]
                if row.get(k) is not None
            }
            progress(f"note: {group or 'all units'}: {row['status']}")
        from relkit._cli_format import with_confidence
        from relkit.defaults import DEFAULT_CONFIDENCE

        # survival_by's Weibull shape bounds are at the library's default level
        emit(with_confidence(result, DEFAULT_CONFIDENCE), args.format)
        return 0

    p = verbs.add_parser(
        "survival",
        help="lifetime models of time between failures, age at first failure or "
        "age at removal, per failure mode and unit",
    )
    add_db(p)
    p.add_argument(
        "--endpoint",
        choices=("tbf", "first-failure", "removal"),
        default="tbf",
        help="tbf: time between failures; first-failure: age in service at the "
        "first failure; removal: age at removal from service after a failure "
        "(default tbf)",
    )
    p.add_argument(
        "--failure-mode",
        help="only this mode's failures (e.g. gpu/hbm_uncorrectable) or a root "
        "cause's (e.g. gpu: all its modes)",
    )
    p.add_argument(
        "--by",
        help="comma-separated grouping, e.g. system or failure_mode (one row per "
        "mode; for tbf a failure of another mode does not end a gap)",
    )
    p.add_argument(
        "--unit",
        choices=("node", "gpu", "system"),
        help="node (host), gpu (host:device, GPU-level modes only) or system "
        "(tbf only, simultaneous failures one outage); default system for tbf, "
        "node for the ages",
    )
    p.add_argument(
        "--all-models",
        action="store_true",
        help="print all six models' rows per group (exponential, Weibull, log-normal, "
        "log-logistic, gamma, generalized gamma), ranked by AIC (default: one row "
        "per group, the best of the first four)",
    )
    p.add_argument(
        "--window-start",
        help="ISO 8601 instant with zone; earlier failures set the first gap's origin",
    )
    p.add_argument(
        "--window-end", help="ISO 8601 instant with zone (default: end of data)"
    )
    add_format(p)
    p.set_defaults(func=cmd_survival)
