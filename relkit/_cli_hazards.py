"""The ``relkit hazards`` verb: hazard ratios by asset attribute.

Argument parsing over :func:`relkit.answers.hazards_by`; no logic of its own.
"""

from __future__ import annotations

import argparse
import math

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

#: ``relkit hazards`` row fields (issue 12 §4), in order.
HAZARD_FIELDS = (
    "covariate",
    "level",
    "reference",
    "hazard_ratio",
    "lower",
    "upper",
    "p_value",
    "status",
    "n_units",
    "n_events",
)

#: Extra fields of the Weibull AFT rows.
AFT_FIELDS = ("time_ratio", "time_ratio_lower", "time_ratio_upper")


def _split(text: str | None) -> list[str]:
    return [c.strip() for c in text.split(",") if c.strip()] if text else []


def _clean(value: object) -> object:
    """Make a value JSON-safe: NaN and infinities become null."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_clean(v) for v in value]
    return value


def _document(result: Any, rows: pl.DataFrame) -> dict[str, Any]:  # noqa: ANN401
    """Return the whole answer as one JSON-ready dict."""
    import polars as pl

    logrank = result.logrank if result.logrank is not None else pl.DataFrame()
    checks: dict[str, Any] = {
        "model": result.model,
        "confidence": result.confidence,
        "n_units": result.n_units,
        "n_events": result.n_events,
        "concordance": result.concordance,
        "proportional_hazards_test": result.ph_test.to_dicts(),
        "logrank": logrank.to_dicts(),
    }
    if result.model == "weibull_aft":
        checks["weibull_shape"] = result.weibull_shape
        checks["weibull_shape_lower"] = result.weibull_shape_lower
        checks["weibull_shape_upper"] = result.weibull_shape_upper
    return _clean(
        {
            "hazard_ratios": rows.to_dicts(),
            "checks": checks,
            "notes": list(result.notes),
        }
    )


def _cmd_hazards(
    args: argparse.Namespace,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
) -> int:
    import json

    from relkit.answers import hazards_by, store_tables
    from relkit.errors import RelkitError
    from relkit.store import Store

    covariates = _split(args.covariates)
    if not covariates:
        msg = "--covariates: name at least one asset attribute, e.g. rack,batch"
        raise RelkitError(msg)
    with Store(args.db, read_only=True) as store:
        tables = store_tables(store)
    result = hazards_by(
        **tables,
        covariates=covariates,
        failure_mode=args.failure_mode,
        endpoint=args.endpoint,
        model="weibull_aft" if args.model == "weibull-aft" else "cox",
        categorical=_split(args.categorical),
        confidence=args.confidence,
        window_end=parse_instant(args.window_end, "--window-end"),
    )
    fields = HAZARD_FIELDS + (AFT_FIELDS if result.model == "weibull_aft" else ())
    from relkit._cli_format import with_confidence

    rows = with_confidence(result.hazard_ratios.select(fields), result.confidence)
    if args.format == "json":
        print(json.dumps(_document(result, rows), indent=2, default=str))
    else:
        emit(rows, args.format)
        if args.format == "table":
            _print_checks(result, emit)
        else:  # csv: one document on stdout, the checks on stderr
            progress(
                f"checks: n_units {result.n_units}, n_events {result.n_events}, "
                f"concordance {result.concordance}"
            )
    for note in result.notes:
        progress(f"note: {note}")
    if not (rows["status"] == "ok").any():
        progress(
            "error: no hazard ratio could be estimated (see the statuses and "
            "notes above); choose covariates that vary between units with failures"
        )
        return 1
    return 0


def _print_checks(result: Any, emit: Emit) -> None:  # noqa: ANN401
    print()
    line = (
        f"model {result.model}: {result.n_units:,} units, {result.n_events:,} "
        f"failures, concordance "
        + (f"{result.concordance:.4f}" if result.concordance is not None else "n/a")
    )
    if result.model == "weibull_aft" and result.weibull_shape is not None:
        line += (
            f", Weibull shape {result.weibull_shape:.4g} "
            f"[{result.weibull_shape_lower:.4g}, {result.weibull_shape_upper:.4g}]"
        )
    print(line)
    if result.ph_test.height:
        print("\nproportional-hazards test (Schoenfeld residuals, rank of time):")
        emit(result.ph_test, "table")
    if result.logrank is not None and result.logrank.height:
        print("\nlog-rank test between the levels of each covariate:")
        emit(result.logrank, "table")


def add_hazards_verbs(
    verbs: Any,  # noqa: ANN401 - argparse's private _SubParsersAction
    *,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
    add_db: AddArg,
    add_format: AddArg,
) -> None:
    """Register ``relkit hazards``.

    Parameters
    ----------
    verbs : argparse subparsers
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
        "hazards",
        help="hazard ratios by asset attribute (Cox PH or Weibull AFT) with the "
        "proportional-hazards and log-rank tests",
    )
    add_db(p)
    p.add_argument(
        "--covariates",
        required=True,
        help="asset attributes, comma-separated, e.g. rack,batch",
    )
    p.add_argument(
        "--failure-mode",
        help="only this failure mode (e.g. gpu/hang) or root cause (e.g. gpu)",
    )
    p.add_argument(
        "--model",
        choices=("cox", "weibull-aft"),
        default="cox",
        help="Cox proportional hazards or a Weibull accelerated failure time "
        "model (default: cox)",
    )
    p.add_argument(
        "--endpoint",
        choices=("first-failure", "tbf"),
        default="first-failure",
        help="age at a node's first failure (default), or every gap between "
        "its failures (variance clustered on the node)",
    )
    p.add_argument(
        "--categorical",
        help="numeric attributes to treat as categorical (one ratio per level)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help=f"interval level (default {DEFAULT_CONFIDENCE:g})",
    )
    p.add_argument("--window-end", help="end of observation, ISO 8601 with a zone")
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_hazards(a, emit, progress, parse_instant))
