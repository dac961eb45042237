"""The job-log part of ``relkit demo``: a simulated Llama-3-like run, read back.

The simulator (:mod:`relkit.simulate`, preset ``llama3-54d`` shortened to 8
days) writes the raw files a cluster produces; relkit ingests the ``sacct -P``
dump and the kernel logs like any other and attributes the run's
interruptions, which the demo prints by cause next to the injected truth.
"""

import json
from pathlib import Path
from typing import Any

import polars as pl

from relkit.store import Store

DEMO_DAYS = 8.0
DEMO_SEED = 1


def simulated_interruptions(
    out_dir: Path,
    progress: Any,  # noqa: ANN401 - the demo's progress callable
) -> dict[str, Any]:
    """Simulate a short Llama 3 run, ingest its logs, count interruptions by cause.

    Parameters
    ----------
    out_dir : Path
        The demo's output directory: ``simulated-run/`` (raw files),
        ``jobs.duckdb`` and ``tables/interruptions_by_cause.csv`` are written.
    progress : callable
        Called with a short message before each long step.

    Returns
    -------
    dict
        ``simulated_run`` (what was simulated), ``simulated_interruptions``
        (unexpected and planned counts found, with the injected ones) and
        ``interruptions_by_cause`` (``cause (kind): n`` pairs).
    """
    from relkit.fleet import log_end
    from relkit.ingest import read_file, read_path
    from relkit.interruptions import job_interruptions
    from relkit.simulate import simulate_cluster, simulation_preset, write_simulation

    raw = out_dir / "simulated-run"
    progress(f"simulating a {DEMO_DAYS:g}-day Llama 3-like run (relkit.simulate)")
    config = simulation_preset("llama3-54d", days=DEMO_DAYS, noise_lines_per_node_day=0)
    write_simulation(simulate_cluster(config, seed=DEMO_SEED), raw, force=True)
    truth = json.loads((raw / "ground_truth.json").read_text(encoding="utf-8"))
    ref_date = truth["ingest"]["kernel"].split("--reference-date ")[1].split()[0]
    db = out_dir / "jobs.duckdb"
    for leftover in (db, Path(f"{db}.wal")):
        leftover.unlink(missing_ok=True)
    progress("ingesting its sacct dump and kernel logs, attributing interruptions")
    with Store(db) as store:
        read_file(
            store, raw / "sacct.psv", kind="sacct", tz=truth["ingest"]["sacct_tz"]
        )
        read_path(
            store,
            raw / "kernel",
            kind="kernel",
            tz="UTC",
            reference_date=ref_date,
            host_from_filename=True,
        )
        _, interruptions = job_interruptions(
            store.table("jobs"),
            store.table("job_nodes"),
            store.table("events"),
            end_of_log=log_end(store.table("sources")),
        )
    by_cause = (
        interruptions.group_by("cause", "kind")
        .agg(interruptions=pl.len(), lost_gpu_h=pl.col("lost_gpu_h").sum())
        .sort("interruptions", "cause", descending=[True, False])
    )
    (out_dir / "tables").mkdir(parents=True, exist_ok=True)
    by_cause.write_csv(out_dir / "tables" / "interruptions_by_cause.csv")
    counts = truth["counts"]
    found = {k: interruptions.filter(kind=k).height for k in ("unexpected", "planned")}
    return {
        "simulated_run": (
            f"llama3-54d preset, {DEMO_DAYS:g} days, seed {DEMO_SEED} "
            f"({config.run_nodes * config.gpus_per_node:,} GPUs)"
        ),
        "simulated_interruptions": (
            f"{found['unexpected']} unexpected, {found['planned']} planned "
            f"(injected: {counts['interruptions_unexpected']} and "
            f"{counts['interruptions_planned']})"
        ),
        "interruptions_by_cause": ", ".join(
            f"{r['cause']} ({r['kind']}): {r['interruptions']}"
            for r in by_cause.iter_rows(named=True)
        ),
    }
