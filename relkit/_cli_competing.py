"""The competing-risks verb of ``relkit``: cif (cumulative incidence per mode).

Argument parsing over :func:`relkit.answers.competing_risks_by`; no logic of
its own. ``--format json`` prints one document ``{"cumulative_incidence":
[...], "gray_test": [...], "notes": [...]}``; the table format prints Gray's
tests as a second table under the curves; CSV prints the curves on stdout and
Gray's tests on stderr (one CSV document on stdout).
"""

from __future__ import annotations

import argparse
import math

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import RelkitError

#: ``typing.TYPE_CHECKING`` without importing typing (start-up time, issue 13
#: §3); type checkers read this name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    Emit = Callable[[Any, str], None]
    Progress = Callable[[str], None]
    ParseInstant = Callable[[str | None, str], Any]
    AddArg = Callable[[argparse.ArgumentParser], None]

#: ``relkit cif`` row fields after ``failure_mode`` and the ``--by`` columns.
CIF_FIELDS = (
    "time_h",
    "cumulative_incidence",
    "lower",
    "upper",
    "n_at_risk",
    "n_events",
)
#: ``relkit cif --by`` Gray's test fields, in order.
GRAY_FIELDS = (
    "failure_mode",
    "group",
    "statistic",
    "df",
    "p_value",
    "n_groups",
    "n_events",
    "n_units",
    "status",
)


def _split(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _clean(value: Any) -> Any:  # noqa: ANN401 - any JSON value
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_clean(v) for v in value]
    return value


def _cmd_cif(
    args: argparse.Namespace,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
) -> int:
    import json

    from relkit.answers import competing_risks_by, store_tables
    from relkit.store import Store

    if not 0.0 < args.confidence < 1.0:
        msg = f"--confidence {args.confidence} must be between 0 and 1, e.g. 0.95"
        raise RelkitError(msg)
    if args.min_events < 0:
        msg = f"--min-events {args.min_events} must be 0 or more, e.g. 5"
        raise RelkitError(msg)
    by = _split(args.by)
    with Store(args.db, read_only=True) as store:
        tables = store_tables(store)
    result = competing_risks_by(
        **tables,
        by=by,
        modes=args.failure_mode,
        mode_column=args.mode_column,
        min_events=args.min_events,
        confidence=args.confidence,
        window_end=parse_instant(args.window_end, "--window-end"),
    )
    from relkit._cli_format import with_confidence

    curves = with_confidence(
        result.cumulative_incidence.select("failure_mode", *by, *CIF_FIELDS),
        args.confidence,
    )
    gray = result.gray.select(GRAY_FIELDS)
    if args.format == "json":
        document = {
            "cumulative_incidence": curves.to_dicts(),
            "gray_test": gray.to_dicts(),
            "notes": list(result.notes),
        }
        print(json.dumps(_clean(document), indent=2, default=str))
    else:
        emit(curves, args.format)
        if by and args.format == "table" and gray.height == 0:
            progress(
                f"note: Gray's test needs two or more groups of {', '.join(by)}; "
                "the store has one, so there is no test"
            )
        elif by and args.format == "table":
            print()
            print(f"Gray's test between groups of {', '.join(by)} (Gray 1988):")
            emit(gray, "table")
        elif by:  # csv: one document on stdout, the tests on stderr
            for row in gray.iter_rows(named=True):
                stat = row["statistic"]
                shown = (
                    f"chi2 {stat:.4g}, df {row['df']}, p {row['p_value']:.4g}"
                    if stat is not None
                    else row["status"]
                )
                progress(
                    f"Gray's test, {row['failure_mode']} between {row['group']}: "
                    f"{shown}"
                )
    for note in result.notes:
        progress(f"note: {note}")
    return 0


def add_competing_verbs(
    verbs: Any,  # noqa: ANN401 - argparse's private _SubParsersAction
    *,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
    add_db: AddArg,
    add_format: AddArg,
) -> None:
    """Register the ``cif`` verb on the ``relkit`` sub-parsers.

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
        "cif",
        help="cumulative incidence of each failure mode of the nodes' first "
        "failures (Aalen-Johansen, competing risks) with bands; Gray's test "
        "between --by groups",
    )
    add_db(p)
    p.add_argument(
        "--by",
        help="comma-separated unit attributes (system, rack, ...): one curve per "
        "group, and Gray's test per mode between the groups",
    )
    p.add_argument(
        "--failure-mode",
        action="append",
        metavar="M",
        help="report only this mode (repeat for several); every mode still competes",
    )
    p.add_argument(
        "--mode-column",
        default="failure_mode",
        help="failure column naming the competing events (default failure_mode; "
        "root_cause for LANL's root causes)",
    )
    p.add_argument(
        "--min-events",
        type=int,
        default=0,
        help="fold modes with fewer first failures into 'other' (said on stderr; "
        "default 0: none folded)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help=f"two-sided level of the pointwise bands (default {DEFAULT_CONFIDENCE:g})",
    )
    p.add_argument(
        "--window-end", help="ISO 8601 instant with zone (default: end of data)"
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_cif(a, emit, progress, parse_instant))
