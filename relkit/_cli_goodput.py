"""The goodput and checkpoint verbs of ``relkit``: goodput, checkpoint, whatif.

Argument parsing over :mod:`relkit.answers` and :mod:`relkit.checkpoint`; no
logic of its own beyond checking that every option given is used.
"""

from __future__ import annotations

import argparse

from relkit.defaults import DEFAULT_CONFIDENCE
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

#: ``relkit goodput --format json`` row fields (issue 11 §4), in order.
GOODPUT_FIELDS = (
    "run_id",
    "evidence",
    "n_gpus",
    "first_start_ts",
    "last_end_ts",
    "is_open",
    "wall_h",
    "productive_h",
    "ettr",
    "queue_before_start_h",
    "ettr_with_queue",
    "n_attempts",
    "n_interruptions",
    "n_stops",
    "badput_init_h",
    "badput_checkpoint_h",
    "badput_restore_h",
    "badput_lost_progress_h",
    "badput_recovery_h",
    "badput_queue_h",
    "badput_other_h",
    "n_checkpoints",
    "checkpoint_interval_h",
    "checkpoint_save_s",
)

#: ``relkit checkpoint --db`` fields (issue 11 §4), in order.
DECISION_FIELDS = (
    "run_id",
    "evidence",
    "gpus",
    "interval_h",
    "interval_lower_h",
    "interval_upper_h",
    "expected_ettr",
    "expected_ettr_lower",
    "expected_ettr_upper",
    "method",
    "assumptions",
    "measured_interval_h",
    "measured_ettr",
    "young_interval_h",
    "failure_rate_per_h",
    "failure_rate_lower_per_h",
    "failure_rate_upper_per_h",
    "n_failures",
    "exposure_h",
    "cost_h",
    "restart_h",
    "queue_h",
)


def _numbers(text: str | None, flag: str, *, kind: type = float) -> list[Any] | None:
    """Read a comma-separated list of numbers given to ``flag``."""
    if text is None:
        return None
    out = []
    for part in text.split(","):
        try:
            out.append(kind(part.strip()))
        except ValueError:
            what = "whole numbers" if kind is int else "numbers"
            msg = (
                f"{flag} {text!r}: expected {what} separated by commas, e.g. {flag} 1,2"
            )
            raise RelkitError(msg) from None
    return out


def _one(values: list[Any] | None) -> Any:  # noqa: ANN401 - a number or a list
    if values is None:
        return None
    return values[0] if len(values) == 1 else values


def _goodput(args: argparse.Namespace, parse_instant: ParseInstant) -> Any:  # noqa: ANN401
    from relkit.answers import run_goodput
    from relkit.store import Store

    with Store(args.db, read_only=True) as store:
        tables = {
            name: store.table(name) for name in ("checkpoints", "jobs", "job_nodes")
        }
    return run_goodput(
        tables["checkpoints"],
        tables["jobs"],
        tables["job_nodes"],
        run=args.run,
        run_by=args.run_by,
        assumed_interval_h=args.assume_interval_h,
        assumed_cost_h=args.assume_cost_h,
        assumed_restart_h=args.assume_restart_h,
        as_of=parse_instant(args.as_of, "--as-of"),
    )


def _cmd_goodput(
    args: argparse.Namespace,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
) -> int:
    result = _goodput(args, parse_instant)
    for note in result.notes:
        progress(f"note: {note}")
    if result.runs.height == 0:
        msg = "no run could be measured (the notes above say why)"
        raise RelkitError(msg)
    runs = result.runs.rename(
        {"ettr_frac": "ettr", "ettr_with_queue_frac": "ettr_with_queue"}
    )
    emit(runs.select(GOODPUT_FIELDS), args.format)
    return 0


def _cmd_checkpoint(
    args: argparse.Namespace,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
) -> int:
    import polars as pl

    from relkit.answers import decide_checkpoints
    from relkit.checkpoint import checkpoint_intervals

    store_only = ("run", "gpus", "run_by", "as_of", "assume_interval_h")
    if args.db is None:
        missing = [f for f in ("mtbf_h", "cost_h") if getattr(args, f) is None]
        if missing:
            msg = (
                "give either --db DB (the interval from a measured run) or "
                "--mtbf-h M --cost-h C (the closed forms); missing: "
                + ", ".join("--" + m.replace("_", "-") for m in missing)
            )
            raise RelkitError(msg)
        given = [f for f in store_only if getattr(args, f) is not None]
        if given:
            msg = "these options need --db (they choose a measured run): " + ", ".join(
                "--" + f.replace("_", "-") for f in given
            )
            raise RelkitError(msg)
        result = checkpoint_intervals(
            cost_h=args.cost_h, mtbf_h=args.mtbf_h, restart_h=args.restart_h or 0.0
        )
        emit(result.to_dict(), args.format)
        return 0
    if args.mtbf_h is not None:
        msg = (
            "--mtbf-h is the closed-form question; with --db the failure rate is "
            "measured on the run. Drop one of them."
        )
        raise RelkitError(msg)
    if not 0.0 < args.confidence < 1.0:
        msg = f"--confidence {args.confidence} must be between 0 and 1, e.g. 0.95"
        raise RelkitError(msg)
    goodput = _goodput(args, parse_instant)
    for note in goodput.notes:
        progress(f"note: {note}")
    decisions = decide_checkpoints(
        goodput,
        run=args.run,
        gpus=args.gpus,
        confidence=args.confidence,
        cost_h=args.cost_h,
        restart_h=args.restart_h,
    )
    if decisions.height == 0:
        msg = "no run could be measured, so there is no decision (see the notes above)"
        raise RelkitError(msg)
    for row in decisions.iter_rows(named=True):
        for line in row["assumptions"]:
            progress(f"{row['run_id']}: assumed: {line}")
    from relkit._cli_format import with_confidence

    shown = with_confidence(decisions.select(DECISION_FIELDS), args.confidence)
    if args.format == "csv":  # items hold ';' themselves: one per line of the cell
        shown = shown.with_columns(pl.col("assumptions").list.join("\n"))
    emit(shown, args.format)
    return 0


#: Above this first-order load λ(u₀ + q + Δt/2) the model's ETTR is flagged.
FIRST_ORDER_LOAD_WARN = 0.1


def _say_validity(table: pl.DataFrame, progress: Progress) -> None:
    """Warn where the first-order model is outside its range, or predicts 0."""
    import polars as pl

    dead = table.filter(pl.col("first_order_load") >= 1.0)
    if dead.height:
        progress(
            f"warning: {dead.height} row(s) (e.g. {dead['gpus'][0]:,} GPUs) have "
            "restart + queue + half an interval at or beyond the job's MTTF: the "
            "model predicts no progress at any interval (ETTR 0, interval 0)"
        )
    rough = table.filter(
        pl.col("first_order_load").is_between(FIRST_ORDER_LOAD_WARN, 1.0, closed="left")
    )
    if rough.height:
        worst = rough.sort("first_order_load").row(-1, named=True)
        progress(
            f"warning: {rough.height} row(s) have first_order_load = "
            "λ(u0 + q + Δt/2) above "
            f"{FIRST_ORDER_LOAD_WARN} (up to {worst['first_order_load']:.2f} at "
            f"{worst['gpus']:,} GPUs): Kokolis et al.'s first-order E[ETTR] is only "
            "approximate there; the exact exponential optimum is relkit checkpoint "
            f"--mtbf-h {worst['mttf_h']:.4g} --cost-h {worst['cost_h']:.4g} "
            f"--restart-h {worst['restart_h'] + worst['queue_h']:.4g}"
        )


def _say_rate_units(
    rates: list[float] | None, progress: Progress, *, per_1000: bool = False
) -> None:
    from relkit._cli_format import rate_unit_warning

    if (line := rate_unit_warning(rates, per_1000=per_1000)) is not None:
        progress(line)


def _cmd_whatif(args: argparse.Namespace, emit: Emit, progress: Progress) -> int:
    import polars as pl

    from relkit.checkpoint import solve_whatif, whatif

    gpus = _numbers(args.gpus, "--gpus", kind=int)
    per_1000 = _numbers(
        args.failures_per_1000_node_days, "--failures-per-1000-node-days"
    )
    values = {
        "failure-rate": [r / 1000.0 for r in per_1000]
        if per_1000 is not None
        else _numbers(args.failure_rate, "--failures-per-node-day"),
        "restart-h": _numbers(args.restart_h, "--restart-h"),
        "cost-h": _numbers(args.cost_h, "--cost-h"),
    }
    interval = _numbers(args.interval_h, "--interval-h")
    _say_rate_units(values["failure-rate"], progress, per_1000=per_1000 is not None)
    if args.solve is None:
        if args.target_ettr is not None:
            msg = "--target-ettr needs --solve failure-rate|restart-h|cost-h"
            raise RelkitError(msg)
        missing = [f"--{k}" for k, v in values.items() if v is None]
        if missing:
            msg = (
                "the sweep needs "
                + ", ".join(missing)
                + " (comma-separated lists allowed)"
            )
            raise RelkitError(msg)
        table = whatif(
            gpus=_one(gpus),
            failures_per_node_day=_one(values["failure-rate"]),
            restart_h=_one(values["restart-h"]),
            cost_h=_one(values["cost-h"]),
            interval_h=_one(interval),
            queue_h=args.queue_h,
            gpus_per_node=args.gpus_per_node,
        )
        _say_validity(table, progress)
        emit(table, args.format)
        return 0
    if args.target_ettr is None:
        msg = f"--solve {args.solve} needs --target-ettr, e.g. --target-ettr 0.9"
        raise RelkitError(msg)
    if values[args.solve] is not None:
        msg = f"--{args.solve} is what --solve {args.solve} finds; do not give it"
        raise RelkitError(msg)
    if interval is not None:
        msg = (
            "--interval-h is not used by --solve: the ETTR is taken at the "
            "optimal interval"
        )
        raise RelkitError(msg)
    others = {k: v for k, v in values.items() if k != args.solve}
    missing = [f"--{k}" for k, v in others.items() if v is None]
    several = [f"--{k}" for k, v in others.items() if v is not None and len(v) > 1]
    if missing or several:
        msg = (
            f"--solve {args.solve} needs one value each of "
            + ", ".join(f"--{k}" for k in others)
            + (f"; missing {', '.join(missing)}" if missing else "")
            + (f"; several given to {', '.join(several)}" if several else "")
        )
        raise RelkitError(msg)
    rows = []
    for n in gpus:
        kwargs = {
            "failures_per_node_day": (values["failure-rate"] or [None])[0],
            "restart_h": (values["restart-h"] or [None])[0],
            "cost_h": (values["cost-h"] or [None])[0],
        }
        value = solve_whatif(
            target_ettr=args.target_ettr,
            solve=args.solve,
            gpus=n,
            queue_h=args.queue_h,
            gpus_per_node=args.gpus_per_node,
            **kwargs,
        )
        name = {
            "failure-rate": "failures_per_node_day",
            "restart-h": "restart_h",
            "cost-h": "cost_h",
        }[args.solve]
        kwargs[name] = value
        check = whatif(
            gpus=n, queue_h=args.queue_h, gpus_per_node=args.gpus_per_node, **kwargs
        )
        row = check.row(0, named=True)
        row["solved"] = name
        row["target_ettr"] = args.target_ettr
        if name == "failures_per_node_day":
            row["failures_per_1000_node_days"] = value * 1000.0
        rows.append(row)
    solved = pl.DataFrame(rows)
    _say_validity(solved, progress)
    emit(solved, args.format)
    return 0


def _add_run_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--run", help="only this run (its run_id)")
    p.add_argument(
        "--run-by",
        help="without checkpoint records, group job attempts into runs by this "
        "column: job_id (a Slurm requeue chain), name (the job name), or any "
        "job-attempt column",
    )
    p.add_argument(
        "--assume-interval-h",
        type=float,
        help="with scheduler records alone: the run's checkpoint interval, hours "
        "(the ETTR is then modelled, not measured)",
    )
    p.add_argument(
        "--assume-cost-h",
        type=float,
        default=0.0,
        help="with --assume-interval-h: blocking checkpoint write, hours (default 0)",
    )
    p.add_argument(
        "--assume-restart-h",
        type=float,
        default=0.0,
        help="with --assume-interval-h: restart overhead per interruption, hours "
        "(default 0)",
    )
    p.add_argument(
        "--as-of",
        help="end of an open run (ISO 8601 with a zone); default its last record",
    )


def add_goodput_verbs(
    verbs: Any,  # noqa: ANN401 - argparse's private _SubParsersAction
    *,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
    add_db: AddArg,
    add_format: AddArg,
) -> None:
    """Register the goodput, checkpoint and whatif verbs on the ``relkit`` sub-parsers.

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
        "goodput", help="measured ETTR and badput of training runs, from their logs"
    )
    add_db(p)
    _add_run_options(p)
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_goodput(a, emit, progress, parse_instant))

    p = verbs.add_parser(
        "checkpoint",
        help="checkpoint interval: from a measured run (--db) or the closed forms "
        "(--mtbf-h, --cost-h: Young, Daly, exact)",
    )
    p.add_argument(
        "--db",
        help="store with the run's checkpoint log / job records: recommend the "
        "interval from its measured failures, restarts and checkpoint cost "
        "(default: not given, no store is read; $RELKIT_DB is not read here, "
        "as a store would override --mtbf-h)",
    )
    p.add_argument(
        "--mtbf-h", type=float, help="closed forms: MTBF of the whole job, hours"
    )
    p.add_argument(
        "--cost-h",
        type=float,
        help="checkpoint write time, hours (with --db: instead of the measured one)",
    )
    p.add_argument(
        "--restart-h",
        type=float,
        help="restart time, hours (with --db: instead of the measured one; "
        "closed forms: default 0)",
    )
    p.add_argument("--gpus", type=int, help="with --db: target job size in GPUs")
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help="with --db: two-sided level of the bounds "
        f"(default {DEFAULT_CONFIDENCE:g})",
    )
    _add_run_options(p)
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_checkpoint(a, emit, progress, parse_instant))

    p = verbs.add_parser(
        "whatif",
        help="expected ETTR swept over GPUs, failure rate, restart, checkpoint "
        "cost and interval, or the value that reaches a target ETTR",
    )
    p.add_argument(
        "--gpus", required=True, help="GPU counts, comma-separated, e.g. 16384,131072"
    )
    p.add_argument(
        "--gpus-per-node", type=int, default=8, help="GPUs per node (default: 8)"
    )
    rate = p.add_mutually_exclusive_group()
    rate.add_argument(
        "--failures-per-node-day",
        "--failure-rate",
        dest="failure_rate",
        help="node failure rate r_f per node-day, list allowed, e.g. 0.0065",
    )
    rate.add_argument(
        "--failures-per-1000-node-days",
        help="the same rate per 1000 node-days (as `relkit mtbf` prints it), "
        "list allowed, e.g. 6.5",
    )
    p.add_argument("--restart-h", help="restart overhead u0, hours, list allowed")
    p.add_argument("--cost-h", help="blocking checkpoint write w, hours, list allowed")
    p.add_argument(
        "--interval-h",
        help="checkpoint interval, hours, list allowed (default optimal)",
    )
    p.add_argument(
        "--queue-h", type=float, default=0.0, help="queue wait per interruption, hours"
    )
    p.add_argument(
        "--solve",
        choices=("failure-rate", "restart-h", "cost-h"),
        help="find the value of this quantity that gives --target-ettr",
    )
    p.add_argument("--target-ettr", type=float, help="target ETTR, a fraction")
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_whatif(a, emit, progress))
