"""The job-log part of ``relkit demo``: a simulated Llama-3-like run, read back.

The bundled ``synthetic`` dataset (``relkit simulate --preset llama3-54d
--nodes 264 --seed 1``: 54 days, a 2,048-GPU run) holds the raw files a
cluster produces; relkit ingests its assets, ``sacct -D -P`` dump and kernel logs
like any other, attributes the run's interruptions, and the demo prints them by
cause and in the shape of Llama 3 Table 5, next to the injected truth in
``ground_truth.json``.
"""

import json
from pathlib import Path
from typing import Any

import polars as pl

from relkit.store import Store


def simulated_interruptions(
    out_dir: Path,
    progress: Any,  # noqa: ANN401 - the demo's progress callable
) -> dict[str, Any]:
    """Ingest the bundled simulated run, count its interruptions by cause.

    Parameters
    ----------
    out_dir : Path
        The demo's output directory: ``jobs.duckdb``,
        ``tables/interruptions_by_cause.csv`` and
        ``tables/root_cause_table5.csv`` are written.
    progress : callable
        Called with a short message before each long step.

    Returns
    -------
    dict
        ``simulated_run`` (what was simulated), ``simulated_interruptions``
        (unexpected and planned counts found, with the injected ones) and
        ``interruptions_by_cause`` (``cause (kind): n`` pairs).
    """
    from relkit import datasets
    from relkit.answers import log_end
    from relkit.ingest import read_file, read_path
    from relkit.jobs import job_interruptions, root_cause_table

    raw = datasets.path("synthetic")
    truth = json.loads((raw / "ground_truth.json").read_text(encoding="utf-8"))
    ref_date = truth["ingest"]["kernel"].split("--reference-date ")[1].split()[0]
    db = out_dir / "jobs.duckdb"
    for leftover in (db, Path(f"{db}.wal")):
        leftover.unlink(missing_ok=True)
    progress(
        "ingesting a simulated Llama 3-like run (datasets/synthetic): assets, "
        "sacct dump, kernel logs; attributing interruptions"
    )
    with Store(db) as store:
        read_file(store, raw / "assets.csv", kind="assets")
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
        # the whole attempts' GPU-hours: an upper bound of the work lost (no
        # checkpoint log is read here)
        .agg(
            interruptions=pl.len(),
            lost_gpu_h_upper=pl.col("lost_gpu_h_upper").sum(),
        )
        .sort("interruptions", "cause", descending=[True, False])
    )
    (out_dir / "tables").mkdir(parents=True, exist_ok=True)
    by_cause.write_csv(out_dir / "tables" / "interruptions_by_cause.csv")
    root_cause_table(interruptions).write_csv(
        out_dir / "tables" / "root_cause_table5.csv"
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
    }
