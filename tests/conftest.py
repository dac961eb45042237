"""Shared fixtures: the bundled LANL data ingested once per test session."""

from pathlib import Path

import polars as pl
import pytest

import relkit.datasets
from relkit.ingest import read_file
from relkit.store import Store


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
