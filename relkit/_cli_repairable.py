"""The repairable-system verbs of ``relkit``: trend (and mcf).

Argument parsing over :mod:`relkit.answers`; no logic of its own.
"""

from __future__ import annotations

import argparse
import warnings

from relkit.defaults import DEFAULT_CONFIDENCE

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

__all__ = ["add_repairable_verbs"]


def _columns(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _tables(db: str) -> dict[str, pl.DataFrame]:
    from relkit.answers import store_tables
    from relkit.store import Store

    with Store(db, read_only=True) as store:
        return store_tables(store)


def _cmd_trend(
    args: argparse.Namespace, emit: Emit, progress: Progress, parse: ParseInstant
) -> int:
    from relkit._cli_format import with_confidence
    from relkit.answers import trend_by

    result = trend_by(
        **_tables(args.db),
        by=_columns(args.by),
        failure_mode=args.failure_mode,
        unit=args.unit,
        clock=args.clock,
        confidence=args.confidence,
        alpha=args.alpha,
        window_start=parse(args.window_start, "--window-start"),
        window_end=parse(args.window_end, "--window-end"),
        window_min=args.window_min,
    )
    notes = result["note"].drop_nulls().unique(maintain_order=True).to_list()
    for note in notes[:5]:
        progress(f"note: {note}")
    emit(with_confidence(result, args.confidence), args.format)
    return 0


def _cmd_mcf(
    args: argparse.Namespace, emit: Emit, progress: Progress, parse: ParseInstant
) -> int:
    from relkit._cli_format import with_confidence
    from relkit.answers import mcf_by
    from relkit.errors import RelkitWarning

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelkitWarning)
        result = mcf_by(
            **_tables(args.db),
            by=_columns(args.by),
            failure_mode=args.failure_mode,
            confidence=args.confidence,
            window_start=parse(args.window_start, "--window-start"),
            window_end=parse(args.window_end, "--window-end"),
            window_min=args.window_min,
        )
    for w in caught:
        if issubclass(w.category, RelkitWarning):
            progress(f"note: {w.message}")
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if result.height == 0:
        progress("note: no failure in any group: the MCF is 0 throughout")
    emit(with_confidence(result, args.confidence), args.format)
    return 0


def _common(p: argparse.ArgumentParser, add_db: AddArg) -> None:
    add_db(p)
    p.add_argument(
        "--by", help="comma-separated grouping: system, any assets column, failure_mode"
    )
    p.add_argument(
        "--failure-mode",
        help="only this mode (e.g. gpu/fallen_off_bus) or root cause (e.g. gpu)",
    )
    p.add_argument("--window-start", help="ISO 8601 instant with zone")
    p.add_argument(
        "--window-end", help="ISO 8601 instant with zone (default: end of data)"
    )
    p.add_argument(
        "--window-min",
        type=float,
        help="incident gap window, min (as relkit mtbf): a node's failures within "
        "it are one node failure",
    )


def add_repairable_verbs(
    verbs: Any,  # noqa: ANN401 - argparse's private _SubParsersAction
    *,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
    add_db: AddArg,
    add_format: AddArg,
) -> None:
    """Register the ``trend`` and ``mcf`` verbs on the ``relkit`` sub-parsers.

    Parameters
    ----------
    verbs : argparse sub-parsers action
        What ``ArgumentParser.add_subparsers`` returned.
    emit : callable
        ``emit(result, fmt)`` prints a frame or dict as table, JSON or CSV.
    progress : callable
        ``progress(message)`` prints to stderr.
    parse_instant : callable
        ``parse_instant(text, flag)`` reads an ISO 8601 instant with a zone.
    add_db, add_format : callable
        Add the ``--db`` and ``--format`` options to a parser.
    """
    p = verbs.add_parser(
        "trend",
        help="is the failure rate rising or falling? Laplace, Lewis-Robinson, "
        "MIL-HDBK-189 tests and the Crow-AMSAA fit with the current MTBF",
    )
    _common(p, add_db)
    p.add_argument(
        "--unit",
        choices=("node", "fleet"),
        default="node",
        help="node: each node a repairable system, pooled per group (default); "
        "fleet: the group's failures as one process in calendar time",
    )
    p.add_argument(
        "--clock",
        choices=("age", "calendar"),
        default="age",
        help="time of a node failure: its age in service (default) or calendar "
        "hours (--unit fleet is always calendar)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help="two-sided level of the Crow-AMSAA bounds "
        f"(default {DEFAULT_CONFIDENCE:g})",
    )
    p.add_argument(
        "--alpha",
        type=float,
        default=0.05,
        help="level at which a test names a trend (default 0.05)",
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_trend(a, emit, progress, parse_instant))

    p = verbs.add_parser(
        "mcf", help="mean cumulative number of node failures against age (Nelson)"
    )
    _common(p, add_db)
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help=f"two-sided level of the bounds (default {DEFAULT_CONFIDENCE:g})",
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_mcf(a, emit, progress, parse_instant))
