"""The ``relkit lemons`` verb: units that fail improbably often for their exposure.

Argument parsing over :func:`relkit.answers.lemons`; no logic of its own.
"""

from __future__ import annotations

import argparse
import warnings

from relkit.errors import RelkitWarning

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


def _fdr(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        msg = f"--fdr {text!r}: expected a fraction in (0, 1), e.g. --fdr 0.05"
        raise argparse.ArgumentTypeError(msg)
    return value


def _cmd_lemons(
    args: argparse.Namespace,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
) -> int:
    import polars as pl

    from relkit.answers import LEMON_FIELDS, lemons, store_tables
    from relkit.store import Store

    with Store(args.db, read_only=True) as store:
        tables = store_tables(store)
    within = (
        ()
        if args.within == "none"
        else tuple(c.strip() for c in args.within.split(",") if c.strip())
    )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelkitWarning)
        out = lemons(
            **tables,
            failure_mode=args.failure_mode,
            unit=args.unit,
            fdr=args.fdr,
            within=within,
            by_mode=args.by_mode,
            baseline=args.baseline,
            window_start=parse_instant(args.window_start, "--window-start"),
            window_end=parse_instant(args.window_end, "--window-end"),
        )
    for w in caught:
        if issubclass(w.category, RelkitWarning):
            progress(f"note: {w.message}")
    n_lemons = int(out["lemon"].sum())
    what = "GPU(s)" if args.unit == "gpu" else "node(s)"
    pairs = " (unit, mode) pairs" if args.by_mode else ""
    # GPUs that never failed have no device name: tested but not listed
    done = "listed" if args.unit == "gpu" else "tested"
    progress(
        f"{out.height:,} {what}{pairs} {done}, {n_lemons:,} lemon(s) at q <= "
        f"{args.fdr:g} (exact Poisson tail, Benjamini-Hochberg)"
    )
    if args.lemons_only:
        out = out.filter(pl.col("lemon"))
    keys = [c for c in out.columns if c not in (*LEMON_FIELDS, "ratio", "n_folded")]
    extra = [c for c in keys if c != "device"]
    cols = [
        *extra,
        "host",
        *(["device"] if "device" in out.columns else []),
        *[c for c in LEMON_FIELDS if c != "host"],
    ]
    from relkit._cli_format import natural_ties

    out = natural_ties(out.select(list(dict.fromkeys(cols))), "p_value")
    emit(out, args.format)
    return 0


def add_lemon_verbs(
    verbs: Any,  # noqa: ANN401 - argparse's private _SubParsersAction
    *,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
    add_db: AddArg,
    add_format: AddArg,
) -> None:
    """Register ``relkit lemons``.

    Parameters
    ----------
    verbs : argparse._SubParsersAction
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
        "lemons",
        help="lemon nodes: failure counts improbably high for their time at risk "
        "(exact Poisson tail, Benjamini-Hochberg across units)",
    )
    add_db(p)
    p.add_argument(
        "--failure-mode",
        help="test only this mode's failures (e.g. hardware/cpu) or a root "
        "cause's (e.g. hardware: all its modes)",
    )
    p.add_argument(
        "--fdr",
        type=_fdr,
        default=0.05,
        help="false-discovery rate at which a unit is a lemon (default 0.05)",
    )
    p.add_argument(
        "--unit",
        choices=("node", "gpu"),
        default="node",
        help="test hosts (default) or GPUs (host + device)",
    )
    p.add_argument(
        "--within",
        default="system",
        help="unit attributes whose groups get their own fleet rate, comma-"
        "separated, or 'none' for the whole store's rate (default system)",
    )
    p.add_argument(
        "--baseline",
        choices=("fleet", "others"),
        default="fleet",
        help="expected count from the group's rate (fleet, default) or the rate "
        "of the other units (others: leave-one-out)",
    )
    p.add_argument(
        "--by-mode",
        action="store_true",
        help="one test per unit and failure mode, against the mode's fleet rate",
    )
    p.add_argument("--lemons-only", action="store_true", help="print only the lemons")
    p.add_argument("--window-start", help="ISO 8601 instant with zone")
    p.add_argument("--window-end", help="ISO 8601 instant with zone")
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_lemons(a, emit, progress, parse_instant))
