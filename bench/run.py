"""Benchmarks as ratios against a baseline measured in the same run.

These machines are noisy, so absolute seconds mean little; each benchmark times
relkit's path and a baseline doing the irreducible part of the same work on the
same data, interleaved, and reports the median ratio.

- ``ingest_lanl``: relkit's LANL ingest (parse, validate, map, write events,
  assets and sources) vs DuckDB ``read_csv`` of the same file into a table with
  every column as text (the bare read).
- ``mtbf_by_system``: exposure + MTBF with chi-square bounds per system vs a bare
  polars ``group_by(...).len()`` over the same events.
- ``cif_32000``: cumulative incidence of 32,000 units vs scikit-survival, or
  lifelines when scikit-survival is absent (``bench/bench_cif.py``).
- ``startup``: ``relkit --version``, ``--help`` and a bad option vs ``python -c
  pass``, fresh processes, target <= 3 (``bench/bench_startup.py``; it also prints
  one JSON line per command).
- ``distributed_parse``: ``relkit.distributed.ray_parse`` on 1 and 2 local Ray
  workers vs ``read_kernel`` on the same simulated archive, lines per second,
  and a stated projection for one day of a 12,500-node fleet
  (``bench/bench_distributed.py``; skipped without ray).

- ``kernel_ingest``: a 10-million-line mixed syslog (1.2 GB) through
  ``read_kernel`` vs DuckDB's plain scan, ``grep -c -F -f KEYWORDS`` and a
  line-by-line Python loop, with peak memory (``bench/bench_kernel_ingest.py``,
  run as its own process; its summary line is printed here).
- ``kernel_dir``: a directory of 1,000 per-host files vs the same lines in one
  file, target <= 1.5 (``bench/bench_kernel_dir.py``; ``--files 10000`` for the
  issue's size).
- ``report``: ``write_report`` on a simulated 3,750-node store of 10^5 events
  and 10^4 jobs (built once, cached in the temporary directory) vs reading its
  tables into polars; target under 30 s on two cores (``bench/bench_report.py``).

Usage: ``python bench/run.py [--repeat N]`` (prints one JSON line per benchmark).
"""

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable

import duckdb

import relkit
from relkit import answers, datasets
from relkit.ingest import read_file


def _time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def compare(
    name: str,
    subject: Callable[[], object],
    baseline: Callable[[], object],
    repeat: int,
) -> dict[str, object]:
    subject()  # warm-up: imports, caches
    baseline()
    ratios, subject_s, baseline_s = [], [], []
    for n in range(repeat):
        print(f"bench {name}: round {n + 1}/{repeat}", file=sys.stderr, flush=True)
        b = _time(baseline)
        s = _time(subject)
        subject_s.append(s)
        baseline_s.append(b)
        ratios.append(s / b)
    return {
        "benchmark": name,
        "ratio_median": round(statistics.median(ratios), 2),
        "ratio_min": round(min(ratios), 2),
        "subject_median_s": round(statistics.median(subject_s), 4),
        "baseline_median_s": round(statistics.median(baseline_s), 4),
        "repeat": repeat,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    lanl = datasets.path("lanl")

    def relkit_ingest() -> None:
        with relkit.Store(":memory:") as store:
            read_file(store, lanl, kind="lanl")

    def duckdb_read() -> None:
        con = duckdb.connect(":memory:")
        con.execute(
            "CREATE TABLE raw AS SELECT * FROM "
            "read_csv(?, header = true, all_varchar = true)",
            [str(lanl)],
        )
        con.close()

    print(json.dumps(compare("ingest_lanl", relkit_ingest, duckdb_read, args.repeat)))

    with relkit.Store(":memory:") as store:
        read_file(store, lanl, kind="lanl")
        events, assets = store.table("events"), store.table("assets")
    print(
        json.dumps(
            compare(
                "mtbf_by_system",
                lambda: answers.mtbf_by(events, assets, by=["system"]),
                lambda: events.group_by("system").len(),
                args.repeat,
            )
        )
    )

    from bench_cif import cif_benchmark  # beside this file

    print(json.dumps(cif_benchmark(32_000, args.repeat)))

    from bench_startup import startup_benchmark  # beside this file

    print(json.dumps(startup_benchmark(15)), flush=True)

    import subprocess
    from pathlib import Path

    here = Path(__file__).parent
    for script in ("bench_kernel_ingest.py", "bench_kernel_dir.py"):
        # their own processes (peak memory is per process); progress on stderr
        out = subprocess.run(
            [sys.executable, str(here / script)],
            check=True,
            stdout=subprocess.PIPE,
            text=True,
        )
        print(out.stdout.strip().splitlines()[-1], flush=True)

    from bench_report import report_benchmark  # beside this file

    print(json.dumps(report_benchmark(repeat=min(args.repeat, 3))), flush=True)

    from bench_distributed import distributed_benchmark  # beside this file

    try:
        import ray  # noqa: F401
    except ImportError:
        print("bench distributed_parse: skipped, ray not installed", file=sys.stderr)
    else:
        print(json.dumps(distributed_benchmark()), flush=True)


if __name__ == "__main__":
    main()
