"""``relkit ingest --engine ray``: parse kernel logs on Ray, then load the Parquet.

Argument parsing over :func:`relkit.distributed.ray_parse`; the load is the
ordinary ``relkit ingest --kind parsed-logs OUT`` (``_cmd_ingest`` goes on
with the arguments :func:`parse_with_ray` returns), so the per-file summary,
the refused files and the exit code are those of any directory ingest.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from relkit.errors import RelkitError

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
        "starts one on this machine (default), or a Ray address ray://HOST:10001",
    )
    parser.add_argument(
        "--workers",
        type=int,
        help="--engine ray --address local: CPUs to use (default: all)",
    )
    parser.add_argument(
        "--out",
        help="--engine ray: new or empty local directory for the parsed "
        "Parquet; load it again with --kind parsed-logs OUT",
    )


def parse_with_ray(
    args: argparse.Namespace, *, progress: Progress
) -> argparse.Namespace:
    """Parse ``args.paths`` on Ray into ``args.out``; return the load's arguments.

    Parameters
    ----------
    args : argparse.Namespace
        ``relkit ingest`` arguments with ``--engine ray``.
    progress : callable
        Prints a line on stderr.

    Returns
    -------
    argparse.Namespace
        A copy of ``args`` for ``--kind parsed-logs OUT`` (the reading options,
        used by the parse, cleared).

    Raises
    ------
    RelkitError
        If ``--kind`` is not ``kernel``, ``--out`` is missing, or the parse
        fails (a missing path, an option the logs need).
    SystemExit
        With code 2 and one line on stderr when ray is not installed.
    """
    if args.kind != "kernel":
        msg = (
            f"--engine ray parses kernel/syslog logs; --kind {args.kind} is read "
            "on this machine. Drop --engine ray or use --kind kernel."
        )
        raise RelkitError(msg)
    if not args.out:
        msg = (
            "--engine ray needs --out DIR: a new or empty local directory "
            "for the parsed Parquet, loaded into the store afterwards."
        )
        raise RelkitError(msg)
    if args.workers is not None and args.workers < 1:
        msg = f"--workers {args.workers} must be at least 1."
        raise RelkitError(msg)
    try:
        import ray
    except ImportError:  # ray missing (or sys.modules['ray'] = None)
        print(
            "relkit ingest: error: --engine ray needs Ray; install it with "
            "pip install 'relkit[ray]'",
            file=sys.stderr,
        )
        raise SystemExit(EXIT_USAGE) from None
    import logging

    import ray.data

    from relkit.distributed import ray_parse

    # one summary line on stderr, not Ray Data's progress bars and INFO logs
    logging.getLogger("ray").setLevel(logging.WARNING)
    logging.getLogger("ray.data").setLevel(logging.ERROR)
    ray.data.DataContext.get_current().enable_progress_bars = False
    where = args.address or "local"
    progress(f"parsing {', '.join(args.paths)} on Ray ({where}) into {args.out}")
    summary = ray_parse(
        args.paths,
        args.out,
        address=where,
        num_workers=args.workers,
        tz=args.tz,
        reference_date=args.reference_date,
        host=args.host,
        host_from_filename=args.host_from_filename,
        boot_time=args.boot_time,
    )
    refused = f", {summary.n_refused} refused" if summary.n_refused else ""
    progress(
        f"parsed {summary.n_files} file(s){refused} on {summary.workers} CPU(s): "
        f"{summary.n_lines:,} lines ({summary.n_events} events, "
        f"{summary.n_ignored:,} ignored, {summary.n_rejected} rejected) in "
        f"{summary.wall_s:.1f} s ({summary.lines_per_s:,.0f} lines/s); loading"
    )
    load = argparse.Namespace(**vars(args))
    load.kind = "parsed-logs"
    load.paths = [args.out]
    load.engine = "local"
    load.tz = load.reference_date = load.host = load.boot_time = None
    load.host_from_filename = False
    return load
