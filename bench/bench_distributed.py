"""Kernel-log parsing on Ray (relkit.distributed) vs read_kernel on one machine.

Simulates an archive of per-host kernel logs (``rsc1`` preset resized:
``--nodes`` nodes over ``--days`` days with ``--noise`` ordinary lines per
node-day, all five framings, reboots) and measures, in one run:

- ``single``: :func:`relkit.ingest.kernel.read_kernel` over the directory into
  a fresh ``Store(":memory:")`` (the single-machine baseline);
- ``ray_1``, ``ray_2``: :func:`relkit.distributed.ray_parse` on a local Ray
  instance of 1 and 2 worker CPUs (read, parse, write Parquet; Ray's start-up
  is timed apart, ``startup_s``), then the load into a store
  (:func:`relkit.ingest.parsed_logs.read_parsed_logs`, ``load_s``).

It prints one JSON line per measurement (lines per second) and a summary line
with ``ray_2_over_ray_1`` (the speed-up of a second worker; linear would be 2)
and ``ray_2_over_single``, and a **projection, not a measurement**: the wall
time to parse one day of a 12,500-node fleet (100,000 GPUs), assuming the
measured lines per second per worker CPU holds on every worker (linear
scaling, no shared bottleneck in the object store or the network), for two
assumed volumes: 40,000 lines per node-day (issue 13: "hundreds of millions
of lines a day" for 12,500 nodes, 5e8 / 12,500) and 1,000,000 (a verbose fleet;
an assumption, not a measured figure), on 64 and 512 worker CPUs. Progress
goes to stderr.

Usage: ``python bench/bench_distributed.py [--nodes N] [--days D] [--noise L]``.
"""

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

FLEET_NODES = 12_500
#: lines per node-day -> where the figure comes from
VOLUMES = {
    40_000: "issue 13: hundreds of millions of lines a day for 12,500 nodes (5e8)",
    1_000_000: "assumed: a verbose fleet (not measured)",
}
CPUS = (64, 512)


def _say(msg: str) -> None:
    print(f"bench distributed: {msg}", file=sys.stderr, flush=True)


def _archive(root: Path, nodes: int, days: float, noise: float) -> tuple[Path, dict]:
    from relkit.simulate import simulate_cluster, simulation_preset, write_simulation

    cfg = simulation_preset(
        "rsc1", nodes=nodes, days=days, noise_lines_per_node_day=noise
    )
    summary = write_simulation(simulate_cluster(cfg, seed=1), root / "sim")
    cmd = summary["ingest"]["kernel"].split()
    opts = {
        "tz": cmd[cmd.index("--tz") + 1],
        "reference_date": cmd[cmd.index("--reference-date") + 1],
        "host_from_filename": True,
    }
    return root / "sim" / "kernel", opts


def _single(logs: Path, opts: dict) -> dict:
    from relkit.ingest.kernel import read_kernel
    from relkit.store import Store

    began = time.perf_counter()
    with Store(":memory:") as store:
        results = read_kernel(store, logs, **opts)
    wall = time.perf_counter() - began
    lines = sum(r.n_lines for r in results)
    return {
        "measurement": "single",
        "files": len(results),
        "lines": lines,
        "wall_s": round(wall, 2),
        "lines_per_s": round(lines / wall),
    }


def _ray(logs: Path, opts: dict, workers: int, root: Path) -> dict:
    import logging

    import ray
    import ray.data

    from relkit.distributed import ray_parse
    from relkit.ingest.parsed_logs import read_parsed_logs
    from relkit.store import Store

    logging.getLogger("ray").setLevel(logging.WARNING)
    began = time.perf_counter()
    ray.init(
        num_cpus=workers,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    ray.data.DataContext.get_current().enable_progress_bars = False
    startup = time.perf_counter() - began
    try:
        out = root / f"parsed_{workers}"
        summary = ray_parse(logs, out, **opts)
    finally:
        ray.shutdown()
    began = time.perf_counter()
    with Store(":memory:") as store:
        loaded = read_parsed_logs(store, out)
    load = time.perf_counter() - began
    assert sum(r.n_lines for r in loaded) == summary.n_lines
    return {
        "measurement": f"ray_{workers}",
        "workers": workers,
        "files": summary.n_files,
        "lines": summary.n_lines,
        "startup_s": round(startup, 2),
        "wall_s": round(summary.wall_s, 2),
        "lines_per_s": round(summary.lines_per_s),
        "load_s": round(load, 2),
    }


def distributed_benchmark(
    nodes: int = 200, days: float = 10, noise: float = 500
) -> dict:
    """Measure and project; returns the summary line (also printed by main)."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    with tempfile.TemporaryDirectory(prefix="relkit-bench-") as tmp:
        root = Path(tmp)
        _say(f"simulating {nodes} nodes x {days} days ({noise} noise lines/node-day)")
        logs, opts = _archive(root, nodes, days, noise)
        _say("single machine: read_kernel")
        single = _single(logs, opts)
        print(json.dumps(single), flush=True)
        rays = {}
        for workers in (1, 2):
            _say(f"ray_parse on {workers} local worker(s)")
            rays[workers] = _ray(logs, opts, workers, root)
            print(json.dumps(rays[workers]), flush=True)
    per_cpu = rays[2]["lines_per_s"] / 2
    projection = [
        {
            "lines_per_node_day": volume,
            "source_of_volume": source,
            "fleet_lines_per_day": FLEET_NODES * volume,
            "worker_cpus": cpus,
            "projected_wall_h": round(
                FLEET_NODES * volume / (per_cpu * cpus) / 3600, 2
            ),
        }
        for volume, source in VOLUMES.items()
        for cpus in CPUS
    ]
    return {
        "benchmark": "distributed_parse",
        "files": single["files"],
        "lines": single["lines"],
        "single_lines_per_s": single["lines_per_s"],
        "ray_1_lines_per_s": rays[1]["lines_per_s"],
        "ray_2_lines_per_s": rays[2]["lines_per_s"],
        "ray_2_over_ray_1": round(rays[2]["lines_per_s"] / rays[1]["lines_per_s"], 2),
        "ray_2_over_single": round(rays[2]["lines_per_s"] / single["lines_per_s"], 2),
        "target": "ray_2_over_ray_1 near 2 (linear in workers)",
        "projection_note": (
            "PROJECTION, not a measurement: one day of a 12,500-node fleet at the "
            "measured lines/s per worker CPU of ray_2, assuming linear scaling"
        ),
        "projection": projection,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--days", type=float, default=10)
    parser.add_argument("--noise", type=float, default=500)
    args = parser.parse_args()
    print(json.dumps(distributed_benchmark(args.nodes, args.days, args.noise)))


if __name__ == "__main__":
    main()
