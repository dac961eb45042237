"""The report verbs of ``relkit``: report and demo.

Argument parsing over :func:`relkit.report.write_report` and
:func:`relkit.report.run_demo`; no logic of its own beyond checking the
options.
"""

from __future__ import annotations

import argparse
import math

from relkit.errors import InvalidParameterError, RelkitError

#: ``typing.TYPE_CHECKING`` without importing typing (start-up time, issue 13
#: §3); type checkers read this name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path
    from typing import Any

    Emit = Callable[[Any, str], None]
    Progress = Callable[[str], None]
    ParseInstant = Callable[[str | None, str], Any]
    AddArg = Callable[[argparse.ArgumentParser], None]

__all__ = ["add_report_verbs"]

#: ReportAssumptions' defaults, repeated here so that --help needs no polars;
#: tests/test_report_sections.py checks they agree.
DEFAULT_COST_MIN = 5.0
DEFAULT_RESTART_MIN = 10.0
DEFAULT_TITLE = "relkit reliability report"


def _out_dir(text: str) -> Path:
    from pathlib import Path

    out = Path(text)
    if out.exists() and not out.is_dir():
        msg = f"--out {text}: exists and is not a directory; give a directory path"
        raise RelkitError(msg)
    return out


def _assumptions(args: argparse.Namespace) -> Any:  # noqa: ANN401 - ReportAssumptions
    from relkit.report import ReportAssumptions

    if not 0 < args.confidence < 1:
        msg = f"--confidence must be in (0, 1), e.g. 0.95; found {args.confidence}"
        raise InvalidParameterError(msg)
    given = {"cost_h": args.cost_h, "restart_h": args.restart_h}
    for flag, value in (("--cost-h", args.cost_h), ("--restart-h", args.restart_h)):
        if value is not None and not (math.isfinite(value) and value >= 0):
            msg = f"{flag} must be a number of hours >= 0, e.g. 0.083; found {value}"
            raise InvalidParameterError(msg)
    return ReportAssumptions(
        confidence=args.confidence,
        cost_h=DEFAULT_COST_MIN / 60.0 if args.cost_h is None else args.cost_h,
        restart_h=DEFAULT_RESTART_MIN / 60.0
        if args.restart_h is None
        else args.restart_h,
        given=tuple(k for k, v in given.items() if v is not None),
    )


def _cmd_report(args: argparse.Namespace, progress: Progress) -> int:
    from relkit.report import write_report
    from relkit.store import Store

    assumptions = _assumptions(args)
    out = _out_dir(args.out)
    with Store(args.db, read_only=True) as store:
        page = write_report(
            store,
            out,
            title=args.title,
            assumptions=assumptions,
            images=args.images,
            progress=progress,
        )
    progress(f"report written to {page}")
    if args.images:
        progress(f"chart images (PNG and SVG) in {page.parent / 'images'}")
    return 0


def _cmd_demo(args: argparse.Namespace, emit: Emit, progress: Progress) -> int:
    from relkit.report import run_demo

    summary = run_demo(_out_dir(args.out), progress=progress)
    emit(summary, args.format)
    return 0


def add_report_verbs(
    verbs: Any,  # noqa: ANN401 - argparse's private _SubParsersAction
    *,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
    add_db: AddArg,
    add_format: AddArg,
) -> None:
    """Register the report and demo verbs on the ``relkit`` sub-parsers.

    Parameters
    ----------
    verbs : argparse sub-parsers action
        What ``ArgumentParser.add_subparsers`` returned.
    emit : callable
        ``emit(result, fmt)`` prints a frame or dict as table, JSON or CSV.
    progress : callable
        ``progress(message)`` prints to stderr.
    parse_instant : callable
        ``parse_instant(text, flag)`` reads an ISO 8601 instant (unused here).
    add_db, add_format : callable
        Add the ``--db`` and ``--format`` options to a parser.
    """
    from relkit.defaults import DEFAULT_CONFIDENCE

    p = verbs.add_parser(
        "report",
        help="write the offline HTML report and CSV tables",
        description="Write the offline HTML report of a store (report.html,\n"
        "tables/*.csv; with --images, images/*.png and *.svg). Its sections\n"
        "follow the data: failures, Xid codes, interruptions, goodput, survival,\n"
        "scale, and per-system sections for LANL-shaped data; a section the\n"
        "data cannot support is left out with one line saying why.",
        epilog="example:\n  relkit report --db fleet.duckdb --out report/ "
        "--cost-h 0.083 --restart-h 0.17 --images\n",
    )
    add_db(p)
    p.add_argument("--out", required=True, help="output directory, created if missing")
    p.add_argument(
        "--title",
        default=DEFAULT_TITLE,
        help="title of the page (default: %(default)s)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help="two-sided confidence level of MTBF, rate and interval bounds "
        "(default: %(default)s)",
    )
    p.add_argument(
        "--cost-h",
        type=float,
        default=None,
        help="time to write one checkpoint, hours, for the per-system and scale "
        "checkpoint plans, and instead of the measured save time of checkpointed "
        f"runs when given (default: {DEFAULT_COST_MIN:g} min = "
        f"{DEFAULT_COST_MIN / 60:.4g} h; runs: as measured)",
    )
    p.add_argument(
        "--restart-h",
        type=float,
        default=None,
        help="time to restart a job after a failure, hours, also instead of the "
        f"measured restart of checkpointed runs when given (default: "
        f"{DEFAULT_RESTART_MIN:g} min = {DEFAULT_RESTART_MIN / 60:.4g} h; runs: "
        "as measured)",
    )
    p.add_argument(
        "--images",
        action="store_true",
        help="also write every chart as images/<id>.png and images/<id>.svg for "
        "slides, rendered offline (default: off)",
    )
    p.set_defaults(func=lambda a: _cmd_report(a, progress))

    p = verbs.add_parser(
        "demo",
        help="write the reports of the bundled simulated run and LANL data",
        description="Ingest the bundled simulated Llama 3-like run (assets, sacct,\n"
        "kernel logs, checkpoint log) into OUT/relkit.duckdb and write its\n"
        "report OUT/report.html; the LANL failure data's report goes to\n"
        "OUT/lanl/report.html. Prints a summary.",
        epilog="example:\n  relkit demo --out out/\n",
    )
    p.add_argument("--out", default="out", help="output directory (default: out/)")
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_demo(a, emit, progress))
