"""The DuckDB store: foreign files, schema version, table names, appends."""

from pathlib import Path

import duckdb
import polars as pl
import pytest

from relkit.errors import IngestError, RelkitError, SchemaError
from relkit.ingest import read_file
from relkit.store import SCHEMA_VERSION, Store, file_sha256


def _tables(path: Path) -> list[str]:
    con = duckdb.connect(str(path), read_only=True)
    try:
        return [r[0] for r in con.execute("SHOW TABLES").fetchall()]
    finally:
        con.close()


@pytest.mark.parametrize("table", ["events", "measurements"])
def test_foreign_duckdb_refused_and_unchanged(tmp_path: Path, table: str) -> None:
    """Regression: a DuckDB file of another program got relkit's tables added (or,
    with its own ``events`` table, failed with a BinderException)."""
    path = tmp_path / "other.duckdb"
    con = duckdb.connect(str(path))
    con.execute(f"CREATE TABLE {table} (id INTEGER, note VARCHAR)")
    con.execute(f"INSERT INTO {table} VALUES (1, 'theirs')")
    con.close()
    before = file_sha256(path)
    for read_only in (False, True):
        with pytest.raises(RelkitError) as err:
            Store(path, read_only=read_only)
        assert str(err.value) == (
            f"{path} is a DuckDB database but not a relkit store (tables: {table}); "
            "it was left unchanged. Use another --db path, e.g. --db relkit.duckdb."
        )
    assert _tables(path) == [table]
    assert file_sha256(path) == before


def test_schema_version_mismatch(tmp_path: Path) -> None:
    path = tmp_path / "old.duckdb"
    with Store(path) as store:
        store.connection.execute(
            "UPDATE relkit_meta SET value = '0' WHERE key = 'schema_version'"
        )
    with pytest.raises(RelkitError) as err:
        Store(path)
    assert str(err.value) == (
        f"{path}: store schema version 0, this relkit needs {SCHEMA_VERSION}. "
        "Re-ingest into a new store (--db NEW.duckdb)."
    )


def test_not_a_database(tmp_path: Path) -> None:
    """Regression: DuckDB 2 opens a CSV as an in-memory database of views, so
    ``--db events.csv`` (arguments swapped) silently lost every write."""
    path = tmp_path / "events.csv"
    path.write_text("ts,host,failure_mode\n2024-01-01T00:00:00Z,n1,gpu/x\n")
    before = file_sha256(path)
    for read_only in (False, True):
        with pytest.raises(RelkitError, match="is not a DuckDB database") as err:
            Store(path, read_only=read_only)
        assert "Did you swap --db and an input path?" in str(err.value)
    assert file_sha256(path) == before
    with pytest.raises(RelkitError, match="is a directory"):
        Store(tmp_path)


def test_table_unknown_name() -> None:
    with Store(":memory:") as store, pytest.raises(SchemaError) as err:
        store.table("event")
    assert str(err.value).startswith("unknown table 'event'; tables are ['assets',")


def test_append_extra_column() -> None:
    frame = pl.DataFrame({"host": ["n1"], "rack": ["r1"]})
    with Store(":memory:") as store:
        with pytest.raises(SchemaError, match=r"columns \['rack'\] are not in"):
            store.append("assets", frame)
        with pytest.raises(SchemaError, match="unknown table 'nodes'"):
            store.append("nodes", frame)
        assert store.append("assets", frame.drop("rack")) == 1
        assert store.table("assets").select("host", "gpus").rows() == [("n1", None)]


def test_drop_sources_removes_every_table_row(tmp_path: Path) -> None:
    path = tmp_path / "ev.csv"
    path.write_text("ts,host,failure_mode\n2024-01-01T00:00:00Z,n1,gpu/x\nbad,n2,a/b\n")
    with Store(":memory:") as store:
        read_file(store, path, kind="events")
        with store.transaction():
            assert store.drop_sources([1, 7]) == 1
        for name in ("sources", "events", "rejects"):
            assert store.table(name).height == 0


def test_failed_first_ingest_leaves_no_file(tmp_path: Path) -> None:
    """A new store whose first ingest fails is removed; an existing one is kept."""
    db = tmp_path / "new.duckdb"
    with pytest.raises(IngestError), Store(db) as store:
        read_file(store, tmp_path / "missing.csv", kind="events")
    assert not db.exists()
    assert not Path(f"{db}.wal").exists()
    Store(db).close()
    with pytest.raises(IngestError), Store(db) as store:
        read_file(store, tmp_path / "missing.csv", kind="events")
    assert db.exists()


def test_new_store_holds_the_taxonomy() -> None:
    """The failure_modes table is relkit.taxonomy.FAILURE_MODES (issue 3 §2)."""
    from relkit.taxonomy import FAILURE_MODES

    with Store(":memory:") as store:
        modes = store.table("failure_modes")
    assert modes.height == FAILURE_MODES.height
    row = modes.filter(failure_mode="gpu/hbm_uncorrectable").row(0, named=True)
    assert (row["category"], row["counts_as_failure"], row["llama3_row"]) == (
        "hardware",
        True,
        "GPU HBM3 Memory",
    )
