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


# -- schema 6: the checkpoints table of relkit.ingest.read_checkpoints ----------------
#: ``checkpoints`` as schema 5 declared it (no reader wrote it then).
_CHECKPOINTS_V5 = {
    "source_id": "INTEGER",
    "line_no": "BIGINT",
    "run_id": "VARCHAR",
    "job_id": "VARCHAR",
    "ts": "TIMESTAMPTZ",
    "step": "BIGINT",
    "save_s": "DOUBLE",
    "kind": "VARCHAR",
}


def _make_v5(path: Path) -> None:
    """A store as schema 5 left it: today's tables but the 8-column checkpoints,
    with one events row and one checkpoints row written by hand."""
    from relkit.schema import TABLE_COLUMNS

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE relkit_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO relkit_meta VALUES ('schema_version', '5')")
    for name, cols in {**TABLE_COLUMNS, "checkpoints": _CHECKPOINTS_V5}.items():
        body = ", ".join(f'"{c}" {t}' for c, t in cols.items())
        con.execute(f"CREATE TABLE {name} ({body})")
    con.execute(
        "INSERT INTO events (source_id, line_no, ts, host, failure_mode) VALUES "
        "(1, 2, TIMESTAMPTZ '2024-01-01 00:00:00+00', 'n1', 'gpu/xid_79')"
    )
    con.execute(
        "INSERT INTO checkpoints VALUES (1, 3, 'run-1', '1001', "
        "TIMESTAMPTZ '2024-01-01 01:00:00+00', 90, 10.0, 'checkpoint_saved')"
    )
    con.close()


def test_schema_contract_of_checkpoints() -> None:
    """The column contract other modules code against (issue 11 §1), in order."""
    from relkit.schema import POLARS_SCHEMAS, TABLE_COLUMNS

    assert SCHEMA_VERSION == 6
    assert list(TABLE_COLUMNS["checkpoints"].items()) == [
        ("source_id", "INTEGER"),
        ("line_no", "BIGINT"),
        ("run_id", "VARCHAR"),
        ("job_id", "VARCHAR"),
        ("attempt", "INTEGER"),
        ("ts", "TIMESTAMPTZ"),
        ("kind", "VARCHAR"),
        ("step", "BIGINT"),
        ("save_s", "DOUBLE"),
        ("restore_s", "DOUBLE"),
        ("level", "VARCHAR"),
        ("n_gpus", "BIGINT"),
        ("n_nodes", "BIGINT"),
        ("host", "VARCHAR"),
        ("status", "VARCHAR"),
    ]
    with Store(":memory:") as store:
        frame = store.table("checkpoints")
    assert frame.schema == POLARS_SCHEMAS["checkpoints"]
    assert frame.schema["ts"] == pl.Datetime("us", "UTC")


def test_schema_5_store_upgrades_in_place_and_keeps_rows(tmp_path: Path) -> None:
    """A version-5 store is refused read-only with the way to upgrade; opened for
    writing it becomes version 6: checkpoints gains the new columns (NULL in the
    old row), in the contract's order, and every old row stays."""
    path = tmp_path / "v5.duckdb"
    _make_v5(path)
    with pytest.raises(RelkitError, match=r"version 5, this relkit needs 6\. Open it"):
        Store(path, read_only=True)
    with Store(path) as store:
        pass
    with Store(path, read_only=True) as store:
        events = store.table("events")
        ck = store.table("checkpoints")
        cols = [
            r[0]
            for r in store.connection.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = "
                "'checkpoints' ORDER BY column_index"
            ).fetchall()
        ]
    assert events.select("host", "failure_mode").rows() == [("n1", "gpu/xid_79")]
    assert cols == list(ck.columns)  # stored order = the contract's order
    row = ck.row(0, named=True)
    assert (row["run_id"], row["job_id"], row["step"], row["save_s"]) == (
        "run-1",
        "1001",
        90,
        10.0,
    )
    assert row["kind"] == "checkpoint_saved"
    assert [row[c] for c in ("attempt", "restore_s", "level", "host")] == [None] * 4
    con = duckdb.connect(str(path), read_only=True)
    version = con.execute("SELECT value FROM relkit_meta").fetchall()
    tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
    con.close()
    assert version == [("6",)]
    assert not any(t.startswith("_relkit_upgrade") for t in tables)


def test_upgraded_store_takes_a_checkpoint_log(tmp_path: Path) -> None:
    """After the upgrade, read_checkpoints appends by name next to the old row."""
    path = tmp_path / "v5.duckdb"
    _make_v5(path)
    log = tmp_path / "run.jsonl"
    log.write_text(
        '{"ts": "2024-01-01T02:00:00Z", "run": "run-1", "attempt": 2, '
        '"event": "checkpoint_restored", "step": 90, "restore_s": 180}\n'
    )
    with Store(path) as store:
        result = read_file(store, log, kind="checkpoints")
        ck = store.table("checkpoints")
    assert (result.n_loaded, result.n_rejected) == (1, 0)
    assert ck.select("line_no", "attempt", "kind", "step", "restore_s").rows() == [
        (3, None, "checkpoint_saved", 90, None),
        (1, 2, "checkpoint_restored", 90, 180.0),
    ]
