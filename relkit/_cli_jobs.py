"""The job-log verbs of the ``relkit`` command (jobs, interruptions, rootcause, ...).

Kept apart from :mod:`relkit.cli` so that file stays small; :mod:`relkit.cli`
registers them with :func:`add_job_verbs` and passes its output helpers in. No
logic of its own: each verb reads store tables and calls the library.
"""

from __future__ import annotations

import argparse
import warnings

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import RelkitError, RelkitWarning

#: ``typing.TYPE_CHECKING`` without importing typing (start-up time, issue 13
#: §3); type checkers read this name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from datetime import datetime
    from typing import Any

    import polars as pl

    Emit = Callable[[Any, str], None]
    Progress = Callable[[str], None]
    ParseInstant = Callable[[str | None, str], datetime | None]
    AddArg = Callable[[argparse.ArgumentParser], None]

#: ``relkit interruptions --format json`` row fields (issue 5).
INTERRUPTION_FIELDS = (
    "job_id",
    "attempt",
    "end_ts",
    "state",
    "cause",
    "failure_mode",
    "host",
    "n_gpus",
    "lost_gpu_h",
    "lost_gpu_h_upper",
    "lost_basis",
)
#: ``relkit rootcause --format json`` row fields (issue 5).
ROOTCAUSE_FIELDS = ("component", "category", "interruptions", "pct")
#: ``relkit scale --format json`` row fields (issue 5).
SCALE_FIELDS = ("gpus", "mttf_h", "mttf_lower_h", "mttf_upper_h")


def _list(text: str | None) -> list[str] | None:
    if text is None:
        return None
    return [t.strip() for t in text.split(",") if t.strip()]


def _ints(text: str, flag: str, *, most: int) -> list[int]:
    items = [t.strip() for t in text.split(",")]
    if "" in items:
        msg = f"{flag} {text!r}: an empty item between commas; e.g. 1024,16384"
        raise RelkitError(msg)
    try:
        values = [int(t) for t in items]
    except ValueError as exc:
        msg = (
            f"{flag} {text!r}: give whole numbers separated by commas, e.g. 1024,16384"
        )
        raise RelkitError(msg) from exc
    if not 1 <= min(values) <= max(values) <= most:
        msg = f"{flag} {text!r}: give whole numbers in [1, {most:,}], e.g. 1024,16384"
        raise RelkitError(msg)
    return values


def _no_jobs(db: str) -> str:
    """Say that a store holds no job records, and which ingest adds them."""
    return (
        f"{db} holds no job records; ingest a job log first, e.g. "
        f"relkit ingest --db {db} --kind sacct --tz UTC sacct.psv"
    )


def _job_tables(args: argparse.Namespace) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Build the attempts and interruptions of the store named by ``--db``."""
    from relkit.answers import log_end
    from relkit.jobs import job_interruptions
    from relkit.store import Store

    with Store(args.db, read_only=True) as store:
        jobs, nodes = store.table("jobs"), store.table("job_nodes")
        events, sources = store.table("events"), store.table("sources")
        modes = store.table("failure_modes")
    if jobs.height == 0:
        raise RelkitError(_no_jobs(args.db))
    return job_interruptions(
        jobs,
        nodes,
        events,
        end_of_log=log_end(sources),
        window_min=args.window_min,
        slack_min=args.slack_min,
        after_end_min=args.after_end_min,
        gpus_per_node=args.gpus_per_node,
        failure_modes=modes,
    )


def _with_losses(
    args: argparse.Namespace, interruptions: pl.DataFrame
) -> tuple[pl.DataFrame, str | None]:
    """Fill ``lost_gpu_h`` from the store's checkpoint log, when it has one."""
    from relkit.answers import interruptions_with_losses
    from relkit.store import Store

    with Store(args.db, read_only=True) as store:
        tables = [store.table(t) for t in ("checkpoints", "jobs", "job_nodes")]
    return interruptions_with_losses(interruptions, *tables)


#: How to export a dump that times the jobs and counts their GPUs.
_EXPORT = (
    "sacct -P --allusers --duplicates --format=JobID,JobIDRaw,State,ExitCode,"
    "Submit,Start,End,Elapsed,AllocNodes,AllocTRES,NodeList"
)


def _say_gaps(
    args: argparse.Namespace,
    attempts: pl.DataFrame,
    interruptions: pl.DataFrame,
    progress: Progress,
    *,
    need: str | None = None,
) -> None:
    """Say on stderr what the job records lack: times, GPU counts.

    With ``need`` (what the command computes), records without any Start or
    End time are an error: the command would print an empty or null answer.
    """
    import polars as pl

    timed = attempts.filter(
        pl.col("start_ts").is_not_null() | pl.col("end_ts").is_not_null()
    )
    if attempts.height and timed.height == 0:
        what = (
            f"the job records in {args.db} have no Start or End time (e.g. a "
            "sacct dump without Start/End columns)"
        )
        if need is not None:
            msg = f"{what}, and {need} needs them; re-export with {_EXPORT}"
            raise RelkitError(msg)
        progress(
            f"warning: {what}: no incident can be matched to an interruption "
            "and no time between interruptions computed; each is counted by "
            f"its state alone. Re-export with {_EXPORT}"
        )
    elif n := interruptions.filter(pl.col("end_ts").is_null()).height:
        progress(
            f"warning: {n} of {interruptions.height} interruptions have no end "
            "time: no incident can be matched to them (their cause is their "
            "state's)"
        )
    if "gpus_assumed" in attempts.columns and (
        n := int(attempts["gpus_assumed"].sum())
    ):
        progress(
            f"warning: {n} job attempt(s) have no GPU count (their dump has no "
            f"AllocTRES): charged --gpus-per-node {args.gpus_per_node} per node"
        )


def _cmd_jobs(args: argparse.Namespace, emit: Emit) -> int:
    from relkit.jobs import JOB_FIELDS, job_table
    from relkit.store import Store

    with Store(args.db, read_only=True) as store:
        table = job_table(store.table("jobs"), store.table("job_nodes"))
    if table.height == 0:  # an empty list would look like an answer
        raise RelkitError(_no_jobs(args.db))
    emit(table.select(JOB_FIELDS), args.format)
    return 0


def _cmd_interruptions(args: argparse.Namespace, emit: Emit, progress: Progress) -> int:
    import polars as pl

    attempts, interruptions = _job_tables(args)
    _say_gaps(args, attempts, interruptions, progress)
    kinds = _list(args.kind)
    if kinds is not None:
        known = {"unexpected", "planned", "secondary", "not_failure"}
        if bad := sorted(set(kinds) - known):
            msg = f"--kind {bad}: choose from {sorted(known)}, e.g. --kind unexpected"
            raise RelkitError(msg)
        interruptions = interruptions.filter(pl.col("kind").is_in(kinds))
    interruptions, note = _with_losses(args, interruptions)
    if note is not None:
        progress(f"note: {note}")
    emit(interruptions.select(INTERRUPTION_FIELDS), args.format)
    return 0


def _cmd_rootcause(
    args: argparse.Namespace,
    emit: Emit,
    parse_instant: ParseInstant,
    progress: Progress,
) -> int:
    import polars as pl

    from relkit.jobs import interruption_summary, root_cause_table

    start = parse_instant(args.window_start, "--window-start")
    end = parse_instant(args.window_end, "--window-end")
    if start is not None and end is not None and start >= end:
        from relkit._cli_format import instant_text

        msg = (
            f"--window-start {instant_text(start)} is not before --window-end "
            f"{instant_text(end)}; swap them"
        )
        raise RelkitError(msg)
    attempts, interruptions = _job_tables(args)
    jobs = _list(args.job)
    if jobs is not None and (
        missing := sorted(set(jobs) - set(attempts["job_id"].to_list()))
    ):
        msg = f"--job {missing[:5]}: no such job in {args.db}; see `relkit jobs`."
        raise RelkitError(msg)
    need = "the time between interruptions (--summary)" if args.summary else None
    _say_gaps(args, attempts, interruptions, progress, need=need)
    window = {"job_ids": jobs, "window_start": start, "window_end": end}
    summary = interruption_summary(interruptions, attempts, **window)
    if args.summary:
        emit(summary.to_dict(), args.format)
        return 0
    table = root_cause_table(interruptions, **window).with_columns(
        pct=pl.col("frac") * 100.0
    )
    if args.format == "table":  # one decimal, as Llama 3's Table 5 prints it
        table = table.with_columns(pl.col("pct").round(1))
    emit(table.select(ROOTCAUSE_FIELDS), args.format)
    progress(
        f"note: pct is each cause's share of its kind: of the "
        f"{summary.n_unexpected:,} unexpected interruptions for the rows above "
        f"Planned, of the {summary.n_planned:,} planned ones for Planned"
    )
    if args.format == "table":
        print()
        emit(summary.to_dict(), "table")
    return 0


def _cmd_check_table(args: argparse.Namespace, emit: Emit) -> int:
    from relkit.ingest import read_paper_table
    from relkit.published import check_table

    findings = check_table(read_paper_table(args.file))
    emit(findings, args.format)
    if args.strict and (n := int((~findings["consistent"]).sum())):
        msg = f"{n} finding(s) in {args.file} (--strict); see the rows above"
        raise RelkitError(msg)
    return 0


def _cmd_scale(args: argparse.Namespace, emit: Emit, progress: Progress) -> int:
    from relkit.scale import MAX_GPUS, node_failure_rate, scale_projection

    per_1000 = args.failures_per_1000_node_days is not None
    given = "--failures-per-1000-node-days" if per_1000 else "--failure-rate"
    if per_1000:  # the same rate per node-day, bounds in the same unit
        args.failure_rate = args.failures_per_1000_node_days / 1000.0
    if args.failure_rate is not None and args.db is not None:
        msg = (
            f"{given} and --db conflict: give the rate, or --db to observe it "
            "from the store, not both"
        )
        raise RelkitError(msg)
    if args.db is not None and args.rate_bounds is not None:
        msg = (
            "--rate-bounds is for a given rate; with --db the bounds are "
            "computed from the store's failures (set their level with "
            "--confidence): drop --rate-bounds"
        )
        raise RelkitError(msg)
    if per_1000:  # (the library warns of a per-node-day rate above 1)
        from relkit._cli_format import rate_unit_warning

        line = rate_unit_warning([args.failure_rate], per_1000=per_1000)
        if line is not None:
            progress(line)
    if args.failure_rate is None and args.db is None:
        msg = (
            "give the node failure rate: --failure-rate R (per node-day, e.g. "
            "0.0065) or --db DB (observed from the store's failures and assets)"
        )
        raise RelkitError(msg)
    lower = upper = None
    if args.failure_rate is not None:
        rate = args.failure_rate
        if args.rate_bounds is not None:
            bounds = _list(args.rate_bounds) or []
            try:
                lower, upper = (
                    float(b) / (1000.0 if per_1000 else 1.0) for b in bounds
                )
            except ValueError as exc:
                msg = f"--rate-bounds {args.rate_bounds!r}: give LOW,HIGH"
                raise RelkitError(msg) from exc
            if not lower <= rate <= upper:
                shown = args.failures_per_1000_node_days if per_1000 else rate
                unit = "per 1000 node-days" if per_1000 else "per node-day"
                msg = (
                    f"--rate-bounds {args.rate_bounds} does not contain {given} "
                    f"{shown:g}: give LOW <= {shown:g} <= HIGH, both {unit} "
                    "like the rate"
                )
                raise RelkitError(msg)
        source = f"given r_f = {rate:g} per node-day"
    else:
        from relkit.answers import mtbf_by

        tables = _store_tables(args.db)
        row = mtbf_by(
            **tables,
            by=(),
            window_min=args.window_min,
            confidence=args.confidence,
        ).row(0, named=True)
        observed = node_failure_rate(
            row["n_failures"],
            node_hours=row["exposure_h"],
            confidence=args.confidence,
        )
        rate, lower, upper = (
            observed.failures_per_node_day,
            observed.lower,
            observed.upper,
        )
        # what relkit mtbf counts (it folds only when given --window-min)
        counted = int(mtbf_by(**tables, by=())["n_failures"][0])
        per_1000_all = 1000.0 * counted / observed.node_days
        source = (
            f"observed r_f = {observed.per_1000_node_days:.3f} per 1000 node-days, "
            f"bounds at confidence {args.confidence:g} "
            f"({observed.n_failures:,} failures in {observed.node_days:,.1f} "
            f"node-days, {row['exposure_basis']}); "
            + (
                f"failures within {args.window_min:g} min of each other count "
                "once, as one job interruption; relkit mtbf, which folds only "
                f"when given --window-min, counts {counted:,} failures "
                f"({per_1000_all:.3f} per 1000 node-days)"
                if args.window_min
                else "every failure record counted (--window-min 0)"
            )
        )
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelkitWarning)
        out = scale_projection(
            _ints(args.gpus, "--gpus", most=MAX_GPUS),
            failures_per_node_day=rate,
            gpus_per_node=args.gpus_per_node,
            rate_lower=lower,
            rate_upper=upper,
        )
    for w in caught:
        progress(f"warning: {w.message}")
    progress(f"projected MTTF(N) = 24 / (N_nodes * r_f) h from the {source}")
    out = out.select(SCALE_FIELDS)
    if args.db is not None:  # given --rate-bounds have no known level
        from relkit._cli_format import with_confidence

        out = with_confidence(out, args.confidence)
    emit(out, args.format)
    return 0


def _store_tables(db: str) -> dict[str, pl.DataFrame]:
    from relkit.answers import store_tables
    from relkit.store import Store

    with Store(db, read_only=True) as store:
        return store_tables(store)


def _cmd_job_mttf(args: argparse.Namespace, emit: Emit, progress: Progress) -> int:
    from relkit.scale import job_mttf_by_size

    attempts, interruptions = _job_tables(args)
    _say_gaps(args, attempts, interruptions, progress, need="job MTTF (time at risk)")
    causes = _list(args.causes) or ["hardware", "network", "infrastructure"]
    emit(
        job_mttf_by_size(
            attempts, interruptions, causes=causes, confidence=args.confidence
        ),
        args.format,
    )
    return 0


def _cmd_failure_share(args: argparse.Namespace, emit: Emit, progress: Progress) -> int:
    from relkit.published import acmetrace_failure_share, failure_share

    if args.acmetrace is not None:
        from relkit import datasets
        from relkit.ingest import read_cluster_summary

        path = args.acmetrace or datasets.path("acmetrace")
        emit(acmetrace_failure_share(read_cluster_summary(path)), args.format)
        return 0
    attempts, interruptions = _job_tables(args)
    _say_gaps(args, attempts, interruptions, progress, need="the share of GPU time")
    emit(failure_share(attempts, by=args.by), args.format)
    return 0


#: ``relkit.jobs.DEFAULT_SLACK_MIN``, written out so that building the parser
#: does not import polars (tests/test_startup.py checks the two agree).
DEFAULT_SLACK_MIN = 45.0


def _job_options(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--slack-min",
        type=float,
        default=DEFAULT_SLACK_MIN,
        help="minutes before a job's end searched for the incident that ended it "
        f"(default {DEFAULT_SLACK_MIN:g}: a 30-min NCCL watchdog timeout and "
        "the teardown)",
    )
    p.add_argument(
        "--after-end-min",
        type=float,
        default=1.0,
        help="minutes after a job's end an incident may be logged (clock skew)",
    )
    p.add_argument(
        "--window-min", type=float, default=10.0, help="incident gap window, min"
    )
    p.add_argument(
        "--gpus-per-node",
        type=int,
        default=8,
        help="GPUs per node where a job record has no GPU count (default 8)",
    )


def add_job_verbs(
    verbs: Any,  # noqa: ANN401 - argparse's private _SubParsersAction
    *,
    emit: Emit,
    progress: Progress,
    parse_instant: ParseInstant,
    add_db: AddArg,
    add_format: AddArg,
) -> None:
    """Register the job-log verbs on the ``relkit`` sub-parsers.

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
    p = verbs.add_parser("jobs", help="list job attempts from sacct / k8s records")
    add_db(p)
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_jobs(a, emit))

    p = verbs.add_parser(
        "interruptions", help="abnormal job ends with their cause and lost GPU-hours"
    )
    add_db(p)
    _job_options(p)
    p.add_argument(
        "--kind",
        help="only these kinds: unexpected, planned, secondary, not_failure "
        "(comma-separated; default all)",
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_interruptions(a, emit, progress))

    p = verbs.add_parser(
        "rootcause", help="interruptions by root cause, in the shape of Llama 3 Table 5"
    )
    add_db(p)
    _job_options(p)
    p.add_argument("--job", help="only these job ids (comma-separated)")
    p.add_argument("--window-start", help="ISO 8601 instant with zone")
    p.add_argument("--window-end", help="ISO 8601 instant with zone")
    p.add_argument(
        "--summary",
        action="store_true",
        help="print the counts and mean time between interruptions instead",
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_rootcause(a, emit, parse_instant, progress))

    p = verbs.add_parser(
        "check-table", help="check a published root-cause table for consistency"
    )
    p.add_argument(
        "file", metavar="FILE", help="CSV: component,category,count,printed pct"
    )
    p.add_argument(
        "--strict",
        action="store_true",
        help="exit 1 when anything does not add up (default: report and exit 0)",
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_check_table(a, emit))

    p = verbs.add_parser(
        "scale", help="projected job MTTF at N GPUs from the node failure rate"
    )
    rate = p.add_mutually_exclusive_group()
    rate.add_argument(
        "--failures-per-node-day",
        "--failure-rate",
        dest="failure_rate",
        type=float,
        help="node failure rate r_f per node-day, e.g. 0.0065",
    )
    rate.add_argument(
        "--failures-per-1000-node-days",
        type=float,
        help="the same rate per 1000 node-days, the unit `relkit mtbf` prints, "
        "e.g. 6.5",
    )
    p.add_argument(
        "--rate-bounds",
        help="bounds of r_f, LOW,HIGH in the unit of the rate given (optional)",
    )
    p.add_argument(
        "--db",
        help="take r_f observed in this store instead of --failure-rate: its "
        "failures folded at --window-min (simultaneous failures, one job "
        "interruption, count once), so fewer than `relkit mtbf` counts "
        "without --window-min (default: not given; $RELKIT_DB is not read "
        "here, as a store would override --failure-rate)",
    )
    p.add_argument(
        "--gpus", required=True, help="job sizes in GPUs, e.g. 1024,16384,131072"
    )
    p.add_argument(
        "--gpus-per-node", type=int, default=8, help="GPUs per node (default: 8)"
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help=f"two-sided level of the bounds (default {DEFAULT_CONFIDENCE:g})",
    )
    p.add_argument(
        "--window-min",
        type=float,
        default=10.0,
        help="with --db: failures of the store within this many minutes of "
        "each other count once (default: 10; 0 counts every record, as "
        "`relkit mtbf` does by default)",
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_scale(a, emit, progress))

    p = verbs.add_parser(
        "job-mttf", help="observed job MTTF per GPU-count bucket, with bounds"
    )
    add_db(p)
    _job_options(p)
    p.add_argument(
        "--causes",
        help="causes counted as failures (default hardware,network,infrastructure)",
    )
    p.add_argument(
        "--confidence",
        type=float,
        default=DEFAULT_CONFIDENCE,
        help=f"two-sided level of the bounds (default {DEFAULT_CONFIDENCE:g})",
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_job_mttf(a, emit, progress))

    p = verbs.add_parser(
        "failure-share", help="failed share of jobs by count and by GPU time"
    )
    add_db(p)
    _job_options(p)
    p.add_argument("--by", help="group column, e.g. partition")
    p.add_argument(
        "--acmetrace",
        nargs="?",
        const="",
        help="the AcmeTrace cluster summary instead (bundled, or FILE)",
    )
    add_format(p)
    p.set_defaults(func=lambda a: _cmd_failure_share(a, emit, progress))
