"""Shared fixtures: the bundled LANL data ingested once per test session."""

import os
from pathlib import Path

import polars as pl
import pytest
from hypothesis import settings

import relkit.datasets
from relkit.ingest import read_file
from relkit.store import Store

# Property tests explore a fixed sequence of examples (derandomize) so that a run
# on CI is reproducible, and have no per-example deadline (the machines are
# shared and noisy). `HYPOTHESIS_PROFILE=explore` searches afresh.
settings.register_profile("relkit", derandomize=True, deadline=None)
settings.register_profile("explore", deadline=None)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "relkit"))


@pytest.fixture(scope="session")
def lanl_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store file holding the whole LANL failure data (23,739 records)."""
    db = tmp_path_factory.mktemp("lanl") / "lanl.duckdb"
    with Store(db) as store:
        read_file(store, relkit.datasets.path("lanl"), kind="lanl")
    return db


@pytest.fixture(scope="session")
def lanl_tables(lanl_db: Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """The LANL ``events`` and ``assets`` tables as polars frames."""
    with Store(lanl_db, read_only=True) as store:
        return store.table("events"), store.table("assets")
