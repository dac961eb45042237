"""Stores and report contexts shared by the report section tests.

The bundled simulated run (datasets/synthetic/llama3-54d-264n-seed1: assets,
sacct dump, kernel logs, checkpoint log) is ingested as ``relkit._demo_jobs``
does; LANL comes from the ``lanl_db`` fixture of conftest.py.
"""

import json
from pathlib import Path

import relkit
from relkit import answers, datasets
from relkit._report_common import ReportAssumptions, ReportContext
from relkit.observation import observe


def synthetic_truth() -> dict:
    """The simulated run's ground_truth.json."""
    raw = datasets.path("synthetic")
    return json.loads((raw / "ground_truth.json").read_text(encoding="utf-8"))


def synthetic_store(db: Path, *, with_checkpoints: bool = True) -> Path:
    """Ingest the simulated run's files into a new store at ``db``."""
    raw = datasets.path("synthetic")
    truth = synthetic_truth()
    with relkit.Store(db) as store:
        relkit.read_file(store, raw / "assets.csv", kind="assets")
        relkit.read_file(
            store, raw / "sacct.psv", kind="sacct", tz=truth["ingest"]["sacct_tz"]
        )
        reference = truth["ingest"]["kernel"].split("--reference-date ")[1].split()[0]
        relkit.ingest.read_path(
            store,
            raw / "kernel",
            kind="kernel",
            tz="UTC",
            reference_date=reference,
            host_from_filename=True,
        )
        if with_checkpoints:
            relkit.read_file(store, raw / "checkpoints.jsonl", kind="checkpoints")
    return db


def context(store: relkit.Store, **assumptions: float) -> tuple[ReportContext, list]:
    """A report context of an open store, as ``relkit.report`` builds it.

    ``st`` holds :func:`relkit.answers.store_tables` and the job tables
    (``jobs``, ``job_nodes``, ``checkpoints``); the list collects what the
    builders tell ``progress``.
    """
    said: list[str] = []
    st = answers.store_tables(store)
    obs = observe(**st)
    for name in ("jobs", "job_nodes", "checkpoints"):
        st[name] = store.table(name)
    ctx = ReportContext(
        store=store,
        st=st,
        obs=obs,
        assumptions=ReportAssumptions(**assumptions),  # type: ignore[arg-type]
        progress=said.append,
    )
    return ctx, said


def events_only_store(db: Path, csv: Path) -> Path:
    """Five failures of three hosts from a normalised events file, no assets."""
    csv.write_text(
        "ts,host,failure_mode\n"
        "2024-01-02T00:00:00Z,n1,hardware/cpu\n"
        "2024-01-05T00:00:00Z,n1,hardware/cpu\n"
        "2024-01-09T00:00:00Z,n2,software/os\n"
        "2024-01-12T00:00:00Z,n2,hardware/cpu\n"
        "2024-01-20T00:00:00Z,n3,software/os\n",
        encoding="utf-8",
    )
    with relkit.Store(db) as store:
        relkit.read_file(store, csv, kind="events")
    return db


def spec_titles(spec: dict) -> list[str]:
    """Every axis title of a Vega-Lite spec (layers and concatenations included)."""
    out = []
    for layer in [spec, *spec.get("layer", []), *spec.get("vconcat", [])]:
        for sub in [layer, *layer.get("layer", [])]:
            for channel in ("x", "y"):
                enc = sub.get("encoding", {}).get(channel)
                if isinstance(enc, dict) and "title" in enc:
                    out.append(enc["title"])
    return out


__all__ = [
    "context",
    "events_only_store",
    "spec_titles",
    "synthetic_store",
    "synthetic_truth",
]
