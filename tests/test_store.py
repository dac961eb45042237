"""The DuckDB store: foreign files, schema version, table names, appends."""

import hashlib
import multiprocessing
import multiprocessing.queues
import shutil
from pathlib import Path

import blake3
import duckdb
import polars as pl
import pytest

from relkit.errors import IngestError, RelkitError, SchemaError
from relkit.ingest import read_file
from relkit.store import SCHEMA_VERSION, Store, file_digest, file_identities

DATA = Path(__file__).parent / "data"


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
    before = file_digest(path)
    for read_only in (False, True):
        with pytest.raises(RelkitError) as err:
            Store(path, read_only=read_only)
        assert str(err.value) == (
            f"{path} is a DuckDB database but not a relkit store (tables: {table}); "
            "it was left unchanged. Use another --db path, e.g. --db relkit.duckdb."
        )
    assert _tables(path) == [table]
    assert file_digest(path) == before


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
    before = file_digest(path)
    for read_only in (False, True):
        with pytest.raises(RelkitError, match="is not a DuckDB database") as err:
            Store(path, read_only=read_only)
        assert "Did you swap --db and an input path?" in str(err.value)
    assert file_digest(path) == before
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


#: ``sources`` as schemas 2 to 6 declared it: the bare hex SHA-256 in ``sha256``.
_SOURCES_V6 = {
    "source_id": "INTEGER",
    "path": "VARCHAR",
    "sha256": "VARCHAR",
    "kind": "VARCHAR",
    "options": "VARCHAR",
    "n_lines": "BIGINT",
    "n_loaded": "BIGINT",
    "n_rejected": "BIGINT",
    "ingested_at": "TIMESTAMPTZ",
    "n_ignored": "BIGINT",
}


def _make_v5(path: Path) -> None:
    """A store as schema 5 left it: today's tables but the 8-column checkpoints,
    with one events row and one checkpoints row written by hand."""
    from relkit.schema import TABLE_COLUMNS

    con = duckdb.connect(str(path))
    con.execute("CREATE TABLE relkit_meta (key VARCHAR PRIMARY KEY, value VARCHAR)")
    con.execute("INSERT INTO relkit_meta VALUES ('schema_version', '5')")
    old = {"checkpoints": _CHECKPOINTS_V5, "sources": _SOURCES_V6}
    for name, cols in {**TABLE_COLUMNS, **old}.items():
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

    assert SCHEMA_VERSION == 7
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
    writing it becomes version 7: checkpoints gains the new columns (NULL in the
    old row), in the contract's order, sources.sha256 becomes content_hash, and
    every old row stays."""
    path = tmp_path / "v5.duckdb"
    _make_v5(path)
    with pytest.raises(RelkitError, match=r"version 5, this relkit needs 7\. Open it"):
        Store(path, read_only=True)
    with Store(path) as store:
        pass
    with Store(path, read_only=True) as store:
        events = store.table("events")
        ck = store.table("checkpoints")
        sources = store.table("sources")
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
    assert version == [("7",)]
    assert not any(t.startswith("_relkit_upgrade") for t in tables)
    assert sources.columns[:3] == ["source_id", "path", "content_hash"]


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


# -- schema 7: source identity by BLAKE3, content_hash, schema-6 stores -------------
def _spec_input(n: int) -> bytes:
    """The input of the BLAKE3 test vectors: bytes 0, 1, ..., 250 repeated."""
    return bytes(i % 251 for i in range(n))


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (0, "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262"),
        (1025, "d00278ae47eb27b34faecf67b4fe263f82d5412916c1ffd97c8cb7fb814b8444"),
    ],
)
def test_file_digest_is_blake3(tmp_path: Path, n: int, expected: str) -> None:
    """The official BLAKE3 test vectors (test_vectors/test_vectors.json of
    github.com/BLAKE3-team/BLAKE3, first 32 bytes of ``hash``) for inputs of 0
    and 1025 bytes; file_identities prefixes the algorithm, and its SHA-256
    identity is hashlib's."""
    path = tmp_path / f"v{n}.bin"
    path.write_bytes(_spec_input(n))
    assert file_digest(path) == expected
    sha = hashlib.sha256(_spec_input(n)).hexdigest()
    assert file_identities(path) == (f"blake3:{expected}",)
    assert file_identities(path, sha256=True) == (f"blake3:{expected}", f"sha256:{sha}")


def test_file_digest_of_a_large_file_is_the_one_thread_digest(tmp_path: Path) -> None:
    """A file of 5 MB (above the size hashed on several threads) has the digest
    the blake3 package computes on one thread from the bytes in memory (BLAKE3's
    tree makes the two equal by construction)."""
    data = _spec_input(5_000_000)
    path = tmp_path / "big.bin"
    path.write_bytes(data)
    assert file_digest(path) == blake3.blake3(data, max_threads=1).hexdigest()


def _as_v6(db: Path, files: dict[int, Path]) -> None:
    """Turn a store into what schema 6 wrote: ``sources.sha256`` (third column)
    holding the bare hex SHA-256 of each file (hashlib, as schema 6's
    ``file_sha256`` computed it) and ``schema_version`` 6. Every other column
    and row is as the ingest wrote it (the readers did not change)."""
    con = duckdb.connect(str(db))
    con.execute("ALTER TABLE sources RENAME COLUMN content_hash TO sha256")
    for source_id, f in files.items():
        con.execute(
            "UPDATE sources SET sha256 = ? WHERE source_id = ?",
            [hashlib.sha256(f.read_bytes()).hexdigest(), source_id],
        )
    con.execute("UPDATE relkit_meta SET value = '6' WHERE key = 'schema_version'")
    cols = con.execute(
        "SELECT column_name FROM duckdb_columns() "
        "WHERE table_name = 'sources' ORDER BY column_index"
    ).fetchall()
    con.close()
    assert [c for (c,) in cols] == list(_SOURCES_V6)


def _v6_store(tmp_path: Path, name: str, kind: str, **opts: object) -> Path:
    """A schema-6 store holding one source: a copy of tests/data/``name``."""
    log = tmp_path / name
    shutil.copyfile(DATA / name, log)
    db = tmp_path / "v6.duckdb"
    with Store(db) as store:
        read_file(store, log, kind=kind, **opts)
    _as_v6(db, {1: log})
    return log


def test_schema_6_store_keeps_sha256_marked(tmp_path: Path) -> None:
    """A version-6 store is refused read-only with the way to upgrade; opened
    for writing, sources.sha256 becomes content_hash ``sha256:<hex>`` (the hex
    hashlib computes on the file), in third place, and the rows stay."""
    log = _v6_store(tmp_path, "lanl_snippet.csv", "lanl")
    db = tmp_path / "v6.duckdb"
    with pytest.raises(RelkitError, match=r"version 6, this relkit needs 7\. Open it"):
        Store(db, read_only=True)
    con = duckdb.connect(str(db), read_only=True)
    n_events = con.execute("SELECT count(*) FROM events").fetchall()[0][0]
    con.close()
    with Store(db) as store:
        assert store.holds_sha256("lanl")
        assert not store.holds_sha256("events")
    with Store(db, read_only=True) as store:
        sources = store.table("sources")
        events = store.table("events")
    assert sources.columns[:4] == ["source_id", "path", "content_hash", "kind"]
    sha = hashlib.sha256(log.read_bytes()).hexdigest()
    assert sources.select("source_id", "content_hash", "kind").rows() == [
        (1, f"sha256:{sha}", "lanl")
    ]
    assert events.height == n_events > 0


@pytest.mark.parametrize(
    ("name", "kind", "opts"),
    [
        ("lanl_snippet.csv", "lanl", {}),  # hashed before the parse
        ("kernel_nccl_edac.log", "kernel", {"host": "gpu-7"}),  # hashed meanwhile
    ],
)
def test_upgraded_store_skips_the_unchanged_file(
    tmp_path: Path, name: str, kind: str, opts: dict[str, object]
) -> None:
    """Regression guard for the schema-7 switch to BLAKE3: a file ingested into a
    schema-6 store (SHA-256 identity) and read again unchanged is skipped, not
    refused as changed; the same bytes under another path are skipped too, with
    the note naming source 1. Nothing is written either time."""
    log = _v6_store(tmp_path, name, kind, **opts)
    db = tmp_path / "v6.duckdb"
    with Store(db) as store:
        before = store.table("events")
        again = read_file(store, log, kind=kind, **opts)
        copy = tmp_path / f"copy-{name}"
        shutil.copyfile(log, copy)
        moved = read_file(store, copy, kind=kind, **opts)
        assert (again.skipped, again.source_id, again.note) == (True, None, None)
        assert (moved.skipped, moved.source_id) == (True, None)
        assert moved.note == (
            f"the same bytes were already ingested as source 1 from {log}"
        )
        assert store.table("sources").height == 1
        assert store.table("events").equals(before)


def test_upgraded_store_refuses_the_changed_file(tmp_path: Path) -> None:
    """A file of a schema-6 store that changed since is refused, the message
    printing the stored identity as it is (``sha256`` and its first 12 hex
    digits, hashlib's); with replace it is read again, its new row identified by
    BLAKE3 (the blake3 package on the new bytes) and source 1 dropped."""
    log = _v6_store(tmp_path, "lanl_snippet.csv", "lanl")
    old_sha = hashlib.sha256(log.read_bytes()).hexdigest()
    lines = log.read_text().splitlines(keepends=True)
    log.write_text("".join(lines[:-1]))  # the last record went missing
    db = tmp_path / "v6.duckdb"
    with Store(db) as store:
        n_old = store.table("sources")["n_lines"][0]
        with pytest.raises(IngestError, match="has changed since") as err:
            read_file(store, log, kind="lanl")
        assert f"source 1 ({n_old} lines, sha256 {old_sha[:12]}…)" in str(err.value)
        assert store.table("sources").height == 1
        result = read_file(store, log, kind="lanl", replace=True)
        sources = store.table("sources")
    assert (result.source_id, result.replaced) == (2, (1,))
    new = blake3.blake3(log.read_bytes()).hexdigest()
    assert sources.select("source_id", "content_hash").rows() == [(2, f"blake3:{new}")]


def _digest_into(path: Path, out: "multiprocessing.queues.Queue[str]") -> None:
    out.put(file_digest(path))


def test_file_digest_works_in_a_forked_child(tmp_path: Path) -> None:
    """Regression guard: with the blake3 package's process-wide thread pool
    (``max_threads=AUTO``), a child forked after the parent hashed a large file
    hung for ever on its next hash. The child's digest equals the parent's."""
    path = tmp_path / "big.bin"
    path.write_bytes(_spec_input(5_000_000))
    parent = file_digest(path)
    ctx = multiprocessing.get_context("fork")
    out = ctx.Queue()
    child = ctx.Process(target=_digest_into, args=(path, out))
    child.start()
    try:
        got = out.get(timeout=300)  # a hang guard, not a timing
    finally:
        child.join(timeout=60)
        if child.is_alive():  # pragma: no cover - the regression
            child.kill()
    assert got == parent
    assert child.exitcode == 0
