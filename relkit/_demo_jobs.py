"""The job-log part of ``relkit demo``: a simulated Llama-3-like run, read back.

The bundled ``synthetic`` dataset (``relkit simulate --preset llama3-54d
--nodes 264 --seed 1``: 54 days, a 2,048-GPU run) holds the raw files a
cluster produces; relkit ingests its assets, ``sacct -D -P`` dump and kernel logs
like any other, attributes the run's interruptions, and the demo prints them by
cause and in the shape of Llama 3 Table 5, next to the injected truth in
``ground_truth.json``; from the run's checkpoint log it measures the run's
ETTR and what each interruption cost, and recommends its checkpoint interval.
"""

import json
from pathlib import Path
from typing import Any

import polars as pl

from relkit.store import Store

__all__ = ["ingest_simulated_run", "simulated_interruptions"]


def ingest_simulated_run(
    store: Store,
    progress: Any,  # noqa: ANN401 - the demo's progress callable
) -> dict[str, Any]:
    """Ingest the bundled simulated run's raw files into a store.

    Parameters
    ----------
    store : Store
        An open, writable store (the demo's ``relkit.duckdb``).
    progress : callable
        Called with a short message before each long step.

    Returns
    -------
    dict
        The run's ``ground_truth.json`` (what was injected).
    """
    from relkit import datasets
    from relkit.ingest import read_file, read_path

    raw = datasets.path("synthetic")
    truth = json.loads((raw / "ground_truth.json").read_text(encoding="utf-8"))
    ref_date = truth["ingest"]["kernel"].split("--reference-date ")[1].split()[0]
    progress(
        "ingesting a simulated Llama 3-like run (datasets/synthetic): assets, "
        "sacct dump, kernel logs, checkpoint log"
    )
    read_file(store, raw / "assets.csv", kind="assets")
    read_file(store, raw / "sacct.psv", kind="sacct", tz=truth["ingest"]["sacct_tz"])
    read_path(
        store,
        raw / "kernel",
        kind="kernel",
        tz="UTC",
        reference_date=ref_date,
        host_from_filename=True,
    )
    read_file(store, raw / "checkpoints.jsonl", kind="checkpoints")
    return truth


def simulated_interruptions(
    store: Store,
    out_dir: Path,
    truth: dict[str, Any],
    progress: Any,  # noqa: ANN401 - the demo's progress callable
) -> dict[str, Any]:
    """Count the simulated run's interruptions by cause and measure its goodput.

    Parameters
    ----------
    store : Store
        The store :func:`ingest_simulated_run` filled.
    out_dir : Path
        The demo's output directory:
        ``tables/simulated_run_interruptions_by_cause.csv`` (with the GPU-hours
        each cause lost), ``tables/simulated_run_root_cause_table5.csv`` and
        ``tables/simulated_run_goodput.csv`` are written (names of their own:
        the report beside them writes ``interruptions_by_cause.csv`` and
        ``root_cause_table5.csv`` with other columns).
    truth : dict
        The run's ``ground_truth.json``.
    progress : callable
        Called with a short message before each long step.

    Returns
    -------
    dict
        ``simulated_run`` (what was simulated), ``simulated_interruptions``
        (unexpected and planned counts found, with the injected ones),
        ``interruptions_by_cause`` (``cause (kind): n`` pairs),
        ``simulated_run_ettr`` (measured from the checkpoint log, with the
        truth) and ``checkpoint_interval`` (recommended, with bounds).
    """
    from relkit.answers import decide_checkpoints, log_end, run_goodput
    from relkit.jobs import interruption_losses, job_interruptions, root_cause_table

    progress("the simulated run's interruptions, goodput and checkpoint interval")
    _, interruptions = job_interruptions(
        store.table("jobs"),
        store.table("job_nodes"),
        store.table("events"),
        end_of_log=log_end(store.table("sources")),
    )
    tables = [store.table(t) for t in ("checkpoints", "jobs", "job_nodes")]
    goodput = run_goodput(*tables)  # measured once, for the run and its losses
    interruptions = interruption_losses(interruptions, goodput.attempts)
    decision = decide_checkpoints(goodput).row(0, named=True)
    run = goodput.runs.row(0, named=True)
    by_cause = (
        interruptions.filter(pl.col("kind").is_in(["unexpected", "planned"]))
        .group_by("cause", "kind")
        # lost: work since the last checkpoint, downtime and restart (from the
        # checkpoint log); upper: the whole attempts
        .agg(
            interruptions=pl.len(),
            lost_gpu_h=pl.col("lost_gpu_h").sum(),
            lost_gpu_h_upper=pl.col("lost_gpu_h_upper").sum(),
        )
        .sort("interruptions", "cause", descending=[True, False])
    )
    (out_dir / "tables").mkdir(parents=True, exist_ok=True)
    goodput.runs.write_csv(out_dir / "tables" / "simulated_run_goodput.csv")
    by_cause.write_csv(out_dir / "tables" / "simulated_run_interruptions_by_cause.csv")
    root_cause_table(interruptions).write_csv(
        out_dir / "tables" / "simulated_run_root_cause_table5.csv"
    )
    counts = truth["counts"]
    found = {k: interruptions.filter(kind=k).height for k in ("unexpected", "planned")}
    config = truth["config"]
    return {
        "simulated_run": (
            f"{truth['preset']} preset, {config['days']:g} days, seed "
            f"{truth['seed']} ({config['run_nodes'] * config['gpus_per_node']:,} "
            "GPUs), datasets/synthetic"
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
        "simulated_run_ettr": (
            f"{run['ettr_frac']:.4f} measured from its checkpoint log "
            f"(true {truth['runs'][0]['ettr_frac']:.4f}); badput "
            f"{run['wall_h'] - run['productive_h']:.1f} h of "
            f"{run['wall_h']:.0f} h, {run['badput_lost_progress_h']:.1f} h of it "
            "lost progress"
        ),
        "checkpoint_interval": (
            f"{decision['interval_h'] * 60:.1f} min "
            f"[{decision['interval_lower_h'] * 60:.1f}, "
            f"{decision['interval_upper_h'] * 60:.1f}] recommended (the run "
            f"checkpoints every {run['checkpoint_interval_h'] * 60:.0f} min); "
            f"expected ETTR {decision['expected_ettr']:.4f}"
        ),
    }
