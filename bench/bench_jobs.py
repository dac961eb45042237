"""Benchmark of the job-log path (issue 5 §6): sacct ingest and attribution.

- ``sacct_ingest``: :func:`relkit.ingest.read_sacct` of a generated ``sacct -X
  -P`` dump of 10^6 job attempts (parse, validate, expand node lists, write
  ``jobs``, ``job_nodes`` and ``sources``) against a plain DuckDB read of the
  same file into a table, every column VARCHAR (the bare read). The target is
  a ratio within 3x.
- ``attribution``: :func:`relkit.jobs.build_interruptions` of 10^5 and
  10^6 job attempts against 10^5 incidents on a 2,000-node fleet (jobs of 1 to
  64 nodes, 2.1 on average; 40 % end abnormally); near-linear
  scaling means the 10^6 time is about 10x the 10^5 time (a cross product would
  be 100x).

Progress goes to stderr; one JSON line per result to stdout. Not run by the
tests (it takes minutes). Usage: ``python bench/bench_jobs.py [--attempts N]
[--repeat R] [--steps]``.
"""

import argparse
import json
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import duckdb
import numpy as np
import polars as pl

from relkit.ingest import read_sacct
from relkit.jobs import build_interruptions
from relkit.store import Store

HEADER = (
    "JobID|JobIDRaw|JobName|User|Partition|State|ExitCode|Submit|Start|End|"
    "Elapsed|NNodes|AllocTRES|NodeList"
)
STATES = ["COMPLETED", "FAILED", "NODE_FAIL", "CANCELLED by 1001", "TIMEOUT"]
STATE_P = [0.6, 0.25, 0.05, 0.05, 0.05]
NODES = 2000
SIZES = [1, 2, 4, 8, 16, 64]
SIZE_P = [0.8, 0.08, 0.06, 0.04, 0.015, 0.005]
SPAN_S = 60 * 86400
T0 = datetime(2025, 1, 1, tzinfo=UTC)


def _log(message: str) -> None:
    print(f"bench_jobs: {message}", file=sys.stderr, flush=True)


def _attempt_frame(n: int, rng: np.random.Generator) -> pl.DataFrame:
    """Job attempts on a 2,000-node fleet: mostly single-node jobs."""
    # research-cluster shape (AcmeTrace: 5.7 GPUs per job on average): most
    # jobs on one node, a few large ones; 2.1 nodes per job on average
    size = rng.choice(SIZES, n, p=SIZE_P)
    first = rng.integers(0, NODES - 64, n)
    start = rng.integers(0, SPAN_S, n)
    run = (rng.exponential(3 * 3600, n) + 60).astype(np.int64)
    state = rng.choice(len(STATES), n, p=STATE_P)
    return pl.DataFrame(
        {
            "i": np.arange(n),
            "size": size,
            "first": first,
            "start_s": start,
            "run_s": run,
            "state": np.array(STATES)[state],
        }
    )


def write_dump(path: Path, n: int, *, steps: bool, rng: np.random.Generator) -> int:
    """Write a ``sacct -X -P`` dump of ``n`` attempts (plus steps); return rows."""
    frame = _attempt_frame(n, rng)
    t0 = pl.lit(T0.replace(tzinfo=None))

    def stamp(seconds: pl.Expr) -> pl.Expr:
        return (t0 + pl.duration(seconds=seconds)).dt.strftime("%Y-%m-%dT%H:%M:%S")

    s = pl.col("run_s")
    hms = pl.format(
        "{}:{}:{}",
        ((s % 86400) // 3600).cast(pl.String).str.pad_start(2, "0"),
        ((s % 3600) // 60).cast(pl.String).str.pad_start(2, "0"),
        (s % 60).cast(pl.String).str.pad_start(2, "0"),
    )
    elapsed = (
        pl.when(s >= 86400).then(pl.format("{}-{}", s // 86400, hms)).otherwise(hms)
    )
    first = (pl.col("first") + 1).cast(pl.String).str.zfill(4)
    last = (pl.col("first") + pl.col("size")).cast(pl.String).str.zfill(4)
    nodelist = (
        pl.when(pl.col("size") == 1)
        .then(pl.format("gpu{}", first))
        .otherwise(pl.format("gpu[{}-{}]", first, last))
    )
    job = (pl.col("i") + 100000).cast(pl.String)
    rows = frame.select(
        line=pl.concat_str(
            [
                job,
                job,
                pl.lit("train"),
                pl.format("user{}", pl.col("i") % 300),
                pl.lit("gpu"),
                pl.col("state"),
                pl.when(pl.col("state") == "FAILED")
                .then(pl.lit("1:0"))
                .otherwise(pl.lit("0:0")),
                stamp(pl.col("start_s") - 30),
                stamp(pl.col("start_s")),
                stamp(pl.col("start_s") + s),
                elapsed,
                pl.col("size").cast(pl.String),
                pl.format(
                    "billing={},cpu={},gres/gpu={},mem={}G,node={}",
                    pl.col("size") * 112,
                    pl.col("size") * 112,
                    pl.col("size") * 8,
                    pl.col("size") * 1800,
                    pl.col("size"),
                ),
                nodelist,
            ],
            separator="|",
        ),
        i=pl.col("i"),
    )
    if steps:
        extra = [
            rows.select(
                pl.col("line").str.replace(r"^(\d+)\|(\d+)\|", f"$1.{name}|$2.{name}|"),
                "i",
                o=pl.lit(k),
            )
            for k, name in enumerate(("batch", "extern", "0"), 1)
        ]
        rows = pl.concat([rows.with_columns(o=pl.lit(0)), *extra]).sort("i", "o")
    with path.open("w", encoding="utf-8") as fh:
        fh.write(HEADER + "\n")
        fh.write("\n".join(rows["line"].to_list()) + "\n")
    return rows.height


def _time(fn: object) -> float:
    start = time.perf_counter()
    fn()  # type: ignore[operator]
    return time.perf_counter() - start


def bench_ingest(path: Path, repeat: int) -> dict[str, object]:
    def baseline() -> None:
        con = duckdb.connect(":memory:")
        con.execute(
            "CREATE TABLE t AS SELECT * FROM read_csv(?, delim = '|', header = true, "
            "all_varchar = true, quote = '', escape = '')",
            [str(path)],
        )
        con.close()

    def subject() -> None:
        with Store(":memory:") as store:
            read_sacct(store, path, tz="UTC")

    ratios, subject_s, baseline_s = [], [], []
    for k in range(repeat):
        _log(f"sacct ingest: round {k + 1}/{repeat}")
        b = _time(baseline)
        s = _time(subject)
        baseline_s.append(b)
        subject_s.append(s)
        ratios.append(s / b)
    return {
        "benchmark": "sacct_ingest",
        "ratio_median": round(statistics.median(ratios), 2),
        "subject_median_s": round(statistics.median(subject_s), 3),
        "baseline_median_s": round(statistics.median(baseline_s), 3),
        "repeat": repeat,
        "file_mb": round(path.stat().st_size / 2**20, 1),
    }


def _attempts_for_attribution(n: int, rng: np.random.Generator) -> pl.DataFrame:
    frame = _attempt_frame(n, rng)
    start = pl.lit(T0) + pl.duration(seconds=pl.col("start_s"))
    return frame.select(
        source_id=pl.lit(1, dtype=pl.Int32),
        job_id=(pl.col("i") + 100000).cast(pl.String),
        attempt=pl.lit(1, dtype=pl.Int32),
        state=pl.col("state").str.replace(" by 1001", ""),
        exit_code=pl.lit("1:0"),
        submit_ts=start,
        start_ts=start,
        end_ts=start + pl.duration(seconds=pl.col("run_s")),
        elapsed_s=pl.col("run_s").cast(pl.Float64),
        n_nodes=pl.col("size").cast(pl.Int64),
        n_gpus=(pl.col("size") * 8).cast(pl.Int64),
        hosts=pl.int_ranges(
            pl.col("first"), pl.col("first") + pl.col("size")
        ).list.eval(
            pl.format("gpu{}", (pl.element() + 1).cast(pl.String).str.zfill(4))
        ),
    )


def _incidents(n: int, rng: np.random.Generator) -> pl.DataFrame:
    modes = ["gpu/fallen_off_bus", "gpu/hbm_uncorrectable", "network/link_down"]
    return pl.DataFrame(
        {
            "host": [f"gpu{h + 1:04d}" for h in rng.integers(0, NODES, n)],
            "device": None,
            "failure_mode": np.array(modes)[rng.integers(0, 3, n)],
            "category": "hardware",
            "counts_as_failure": True,
            "_s": rng.integers(0, SPAN_S, n),
        }
    ).select(
        "host",
        "device",
        "failure_mode",
        "category",
        start_ts=pl.lit(T0) + pl.duration(seconds=pl.col("_s")),
        counts_as_failure="counts_as_failure",
    )


def bench_attribution(sizes: list[int], n_incidents: int, repeat: int) -> dict:
    rng = np.random.default_rng(7)
    incidents = _incidents(n_incidents, rng)
    out: dict[str, object] = {"benchmark": "attribution", "incidents": n_incidents}
    times = {}
    for n in sizes:
        attempts = _attempts_for_attribution(n, rng)
        runs = []
        for k in range(repeat):
            _log(f"attribution: {n:,} attempts, round {k + 1}/{repeat}")
            runs.append(_time(lambda a=attempts: build_interruptions(a, incidents)))
        times[n] = statistics.median(runs)
        out[f"seconds_{n}"] = round(times[n], 3)
    lo, hi = min(sizes), max(sizes)
    out["scaling"] = round(times[hi] / times[lo], 2)
    out["size_ratio"] = hi // lo
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--attempts", type=int, default=1_000_000)
    parser.add_argument("--incidents", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument(
        "--steps", action="store_true", help="add .batch/.extern/.0 step rows"
    )
    args = parser.parse_args()
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "sacct.psv"
        _log(f"writing a sacct -P dump of {args.attempts:,} attempts")
        rows = write_dump(path, args.attempts, steps=args.steps, rng=rng)
        _log(f"{rows:,} rows, {path.stat().st_size / 2**20:.0f} MiB")
        result = bench_ingest(path, args.repeat)
        result["rows"] = rows
        print(json.dumps(result), flush=True)
    sizes = [args.attempts // 10, args.attempts]
    print(json.dumps(bench_attribution(sizes, args.incidents, args.repeat)), flush=True)


if __name__ == "__main__":
    main()
