"""``relkit ingest --engine ray``: parse kernel logs on Ray, then load the Parquet.

Argument parsing over :func:`relkit.distributed.ray_parse`; the load is the
ordinary ``relkit ingest --kind parsed-logs OUT`` (``_cmd_ingest`` goes on
with the arguments :func:`parse_with_ray` returns), so the per-file summary,
the refused files and the exit code are those of any directory ingest.
"""

from __future__ import annotations

import argparse
import sys

from relkit.errors import RelkitError

#: ``typing.TYPE_CHECKING`` without importing typing (start-up, issue 13 §3).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

    Progress = Callable[[str], None]

#: Exit code of a usage error (missing ray), as argparse's.
EXIT_USAGE = 2


def add_engine_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--engine``, ``--address``, ``--workers`` and ``--out`` to ``ingest``.

    Parameters
    ----------
    parser : argparse.ArgumentParser
        The ``relkit ingest`` parser.
    """
    parser.add_argument(
        "--engine",
        choices=("local", "ray"),
        default="local",
        help="kernel logs: parse here (local, default) or on a Ray cluster (ray; "
        "pip install 'relkit[ray]'), writing Parquet to --out, then load it",
    )
    parser.add_argument(
        "--address",
        help="--engine ray: 'auto' joins the running cluster (ray start), 'local' "
        "starts one on this machine (default), or a Ray Client address "
        "ray://HOST:10001 (needs pip install 'ray[client]')",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="--engine ray --address local: CPUs to use (default: all)",
    )
    parser.add_argument(
        "--out",
        help="--engine ray: new or empty directory for the parsed Parquet, not "
        "inside an input directory; on a multi-node cluster a shared filesystem "
        "or object store (s3://...). Load it again with --kind parsed-logs OUT",
    )


def check_engine_options(args: argparse.Namespace) -> None:
    """Refuse ``--out``, ``--address`` and ``--workers`` without ``--engine ray``.

    They would be ignored by a local ingest, so they are refused as a usage
    error: one line on stderr, exit code 2.

    Parameters
    ----------
    args : argparse.Namespace
        ``relkit ingest`` arguments.

    Raises
    ------
    SystemExit
        With code 2 when one of them is given without ``--engine ray``.
    """
    if args.engine == "ray":
        return
    given = [
        flag
        for flag, value in (
            ("--out", args.out),
            ("--address", args.address),
            ("--workers", args.workers),
        )
        if value is not None
    ]
    if given:
        one = len(given) == 1
        _usage_error(
            f"{', '.join(given)} {'is' if one else 'are'} for --engine ray (parse "
            f"on a Ray cluster); add --engine ray or drop {'it' if one else 'them'}"
        )


def parse_with_ray(
    args: argparse.Namespace, *, progress: Progress
) -> argparse.Namespace:
    """Parse ``args.paths`` on Ray into ``args.out``; return the load's arguments.

    Parameters
    ----------
    args : argparse.Namespace
        ``relkit ingest`` arguments with ``--engine ray``; ``--quiet`` silences
        the progress lines and Ray's own warnings.
    progress : callable
        Prints a line on stderr: once the options are checked and the files
        listed (``parsing N file(s) ... on Ray``), and after the parse.

    Returns
    -------
    argparse.Namespace
        A copy of ``args`` for ``--kind parsed-logs OUT`` (the reading options,
        used by the parse, cleared).

    Raises
    ------
    RelkitError
        If ``--kind`` is not ``kernel``, ``--out`` is missing, or the parse
        fails (a missing path, an option the logs need, ``--out`` not empty
        or inside an input directory).
    SystemExit
        With code 2 and one line on stderr when ray (or, for a ``ray://``
        address, Ray Client) is not installed.
    """
    if args.kind != "kernel":
        msg = (
            f"--engine ray parses kernel/syslog logs; --kind {args.kind} is read "
            "on this machine. Drop --engine ray or use --kind kernel."
        )
        raise RelkitError(msg)
    if not args.out:
        msg = (
            "--engine ray needs --out DIR: a new or empty directory (shared by "
            "the workers on a multi-node cluster) for the parsed Parquet, loaded "
            "into the store afterwards."
        )
        raise RelkitError(msg)
    if args.workers is not None and args.workers < 1:
        msg = f"--workers {args.workers} must be at least 1."
        raise RelkitError(msg)
    quiet = bool(getattr(args, "quiet", False))
    say: Progress = (lambda _line: None) if quiet else progress
    try:
        import ray
    except ImportError:  # ray missing (or sys.modules['ray'] = None)
        _usage_error(
            "--engine ray needs Ray; install it with pip install 'relkit[ray]'"
        )
    import logging

    import ray.data

    from relkit.distributed import ray_parse

    # one summary line on stderr, not Ray Data's progress bars and INFO logs;
    # --quiet: not Ray's warnings either (errors still are)
    logging.getLogger("ray").setLevel(logging.ERROR if quiet else logging.WARNING)
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    ray.data.DataContext.get_current().enable_progress_bars = False
    try:
        summary = ray_parse(
            args.paths,
            args.out,
            address=args.address or "local",
            num_workers=args.workers,
            tz=args.tz,
            reference_date=args.reference_date,
            host=args.host,
            host_from_filename=args.host_from_filename,
            boot_time=args.boot_time,
            progress=say,
        )
    except ImportError as exc:  # a ray:// address without Ray Client
        _usage_error(str(exc))
    refused = f", {summary.n_refused} refused" if summary.n_refused else ""
    say(
        f"parsed {summary.n_files} file(s){refused} on {summary.workers} CPU(s): "
        f"{summary.n_lines:,} lines ({summary.n_events} events, "
        f"{summary.n_ignored:,} ignored, {summary.n_rejected} rejected) in "
        f"{summary.wall_s:.1f} s ({summary.lines_per_s:,.0f} lines/s); loading"
    )
    load = argparse.Namespace(**vars(args))
    load.kind = "parsed-logs"
    load.paths = [args.out]
    load.engine = "local"
    load.out = load.address = load.workers = None
    load.tz = load.reference_date = load.host = load.boot_time = None
    load.host_from_filename = False
    return load


def _usage_error(message: str) -> NoReturn:
    """Print one usage-error line and exit with code 2."""
    print(f"relkit ingest: error: {message}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)
