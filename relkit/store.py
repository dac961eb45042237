"""The embedded DuckDB store: schema, sources registry, tables out as polars.

Only :mod:`relkit.store` and :mod:`relkit.ingest` touch DuckDB (DESIGN.md §1).
The session time zone is UTC, so no result depends on the machine's zone.
"""

import hashlib
import json
import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import blake3
import duckdb
import polars as pl

from relkit.errors import RelkitError, SchemaError
from relkit.schema import POLARS_SCHEMAS, TABLE_COLUMNS

__all__ = [
    "HASH_ALGORITHM",
    "SCHEMA_VERSION",
    "Store",
    "file_digest",
    "file_identities",
    "file_sha256",
    "locked_store_message",
]

#: Bumped whenever a table's columns change; a store of another version is refused
#: (except the versions in :data:`_UPGRADABLE`, upgraded in place when opened for
#: writing). 3: job-log columns of ``jobs``, ``job_steps``, ``job_nodes.source_id``.
#: 4: ``assets.flags``, ``failure_modes.declared_source_id``, table ``log_spans``.
#: 5: table ``gpu_snapshots`` (``nvidia-smi -q`` snapshots, compared across files).
#: 6: ``checkpoints`` gains ``attempt, restore_s, level, n_gpus, n_nodes, host,
#: status`` and its columns are reordered (``kind`` after ``ts``), for
#: :func:`relkit.ingest.read_checkpoints`.
#: 7: ``sources.sha256`` becomes ``sources.content_hash``, ``"<algorithm>:<hex>"``:
#: ``blake3:`` for files ingested since (:func:`file_digest`), ``sha256:`` for
#: the rows of older stores (their SHA-256 kept as it was).
SCHEMA_VERSION = 7

#: Older schema versions an open for writing upgrades in place, by adding the
#: columns and tables that came later (no row changes: the tables they extend
#: had no reader before), renaming ``sources.sha256`` to ``content_hash`` with
#: its values marked ``sha256:``, and putting every table's columns in the
#: order of :data:`relkit.schema.TABLE_COLUMNS`.
_UPGRADABLE = ("2", "3", "4", "5", "6")

#: The algorithm of the source identity of every new ingest: the prefix of
#: ``sources.content_hash`` (``"blake3:<64 hex digits>"``).
HASH_ALGORITHM = "blake3"

#: Files smaller than this are hashed on one thread: starting a thread pool
#: (about 0.1 ms) costs more than it saves below a few MB.
_PARALLEL_MIN_BYTES = 1 << 22

#: Bytes read per call while hashing (one buffer, reused): as fast as larger
#: blocks on a 2-core machine, and little memory.
_READ_BYTES = 1 << 20

#: Sort keys, so every table comes out in a fixed order.
_SORT_KEYS: dict[str, list[str]] = {
    "sources": ["source_id"],
    "events": ["ts", "host", "source_id", "line_no"],
    "rejects": ["source_id", "line_no"],
    "ignored": ["source_id", "reason"],
    "failure_modes": ["failure_mode"],
    "assets": ["system", "host", "device", "source_id", "line_no"],
    "jobs": ["job_id", "attempt", "source_id", "line_no"],
    "job_steps": ["job_id", "attempt", "step", "source_id", "line_no"],
    "job_nodes": ["job_id", "attempt", "host", "source_id"],
    "checkpoints": ["run_id", "ts", "source_id", "line_no"],
    "log_spans": ["source_id", "host"],
    "gpu_snapshots": ["host", "device", "snapshot_ts", "source_id", "block_no"],
}


def _n_threads() -> int:
    """Return the number of CPUs this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # pragma: no cover - not Linux
        return os.cpu_count() or 1


def file_digest(path: str | Path) -> str:
    """Return the hex BLAKE3 digest of a file's bytes: its identity in the store.

    The file is read in 1 MiB blocks into one reused buffer and hashed on all
    the CPUs the process may use (one thread below 4 MB). The ``blake3``
    package releases the GIL while it hashes a block, so a reader can parse
    the file in another thread meanwhile.

    Parameters
    ----------
    path : str or Path
        File to hash.

    Returns
    -------
    str
        64 lower-case hex digits (the 256-bit default output of BLAKE3).

    Raises
    ------
    OSError
        If the file cannot be opened or read.

    Notes
    -----
    BLAKE3: J. O'Connor, J.-P. Aumasson, S. Neves, Z. Wilcox-O'Hearn, "BLAKE3:
    one function, fast everywhere" (2020), the specification at
    https://github.com/BLAKE3-team/BLAKE3-specs. Its tree mode lets several
    threads hash one file: on 2 cores a 250 MB log hashes in about 0.09 s
    against 0.23 s with SHA-256 (bench/bench_kernel_ingest.py measures it
    against DuckDB's plain scan). The file is read, not memory-mapped
    (``update_mmap`` takes about 0.06 s): a mapped log truncated while it is
    hashed (logrotate's ``copytruncate``) kills the process with SIGBUS, and
    mapped pages count in the process's peak RSS (a 10 GB log would show
    10 GB). The thread pool is the hasher's own, not the ``blake3`` package's
    process-wide one (``max_threads=AUTO``): a process forked after that
    global pool started deadlocks the next time it hashes with it
    (multiprocessing forks on Linux).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.NamedTemporaryFile() as fh:
    ...     file_digest(fh.name)
    'af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262'
    """
    with Path(path).open("rb", buffering=0) as fh:
        size = os.fstat(fh.fileno()).st_size  # 0 for pipes: one thread
        threads = _n_threads() if size >= _PARALLEL_MIN_BYTES else 1
        hasher = blake3.blake3(max_threads=threads)
        buffer = bytearray(_READ_BYTES)
        view = memoryview(buffer)
        while n := fh.readinto(buffer):
            hasher.update(view[:n])
    return hasher.hexdigest()


def file_identities(path: str | Path, *, sha256: bool = False) -> tuple[str, ...]:
    """Return a file's source identities as ``sources.content_hash`` holds them.

    Parameters
    ----------
    path : str or Path
        File to hash.
    sha256 : bool, default False
        Also return its ``"sha256:<hex>"`` identity, to compare with the rows
        of a store upgraded from schema 6 or older (see
        :meth:`Store.holds_sha256`). Costs a SHA-256 of the file.

    Returns
    -------
    tuple of str
        ``("blake3:<hex>",)``, or ``("blake3:<hex>", "sha256:<hex>")`` with
        ``sha256``. The first is the identity a new ``sources`` row gets.

    Raises
    ------
    OSError
        If the file cannot be opened or read.
    """
    ids = (f"{HASH_ALGORITHM}:{file_digest(path)}",)
    return (*ids, f"sha256:{file_sha256(path)}") if sha256 else ids


def file_sha256(path: str | Path) -> str:
    """Return the hex SHA-256 of a file's bytes.

    The source identity of stores before schema 7 (``sources.content_hash``
    values ``"sha256:<hex>"``); new ingests use :func:`file_digest`.

    Parameters
    ----------
    path : str or Path
        File to hash.

    Returns
    -------
    str
        64 lower-case hex digits.

    Raises
    ------
    OSError
        If the file cannot be opened or read.
    """
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _check_duckdb_file(path: Path) -> None:
    """Refuse an existing file that is not a DuckDB database.

    DuckDB would open a CSV as an in-memory database of views and lose every write.
    """
    if path.is_dir():
        msg = (
            f"{path} is a directory; --db takes a store file, e.g. --db relkit.duckdb."
        )
        raise RelkitError(msg)
    with path.open("rb") as fh:
        head = fh.read(12)
    if head and head[8:12] != b"DUCK":
        msg = (
            f"{path} is not a DuckDB database (first bytes {head[:8]!r}); --db takes "
            "a store file. Did you swap --db and an input path? Use e.g. "
            "--db relkit.duckdb."
        )
        raise RelkitError(msg)


def locked_store_message(text: str, path: str | Path, *, writing: bool) -> str | None:
    """Say what to do when another process holds a store's lock, else None.

    DuckDB lets one process open a file for writing, or many read-only; a
    notebook's ``Store(path)`` holds the write lock and every other open fails
    with "Could not set lock on file ... Conflicting lock is held in PROGRAM
    (PID n)". :class:`Store` raises this text instead; the command line may
    call it on DuckDB's own errors.

    Parameters
    ----------
    text : str
        The error's text.
    path : str or Path
        The store's file.
    writing : bool
        Whether this open wanted to write (then the other process may hold it
        read-only or for writing).

    Returns
    -------
    str or None
        One sentence naming the process and the fix, or None when ``text`` is
        not a lock conflict.

    Examples
    --------
    >>> text = 'Could not set lock on file "a.duckdb": Conflicting lock is held '
    >>> text += "in /usr/bin/python3.11 (PID 4242) by user x."
    >>> print(locked_store_message(text, "a.duckdb", writing=False))
    ... # doctest: +NORMALIZE_WHITESPACE
    the store a.duckdb is open for writing in another process (PID 4242,
    python3.11); close it there (store.close()), or open it read-only there
    (Store('a.duckdb', read_only=True)) so that both can read
    """
    import re

    if "Could not set lock on file" not in text:
        return None
    found = re.search(r"held in (.*?) \(PID (\d+)\)", text)
    who = ""
    if found:
        program = re.split(r"[\\/]", found.group(1))[-1]
        who = f" (PID {found.group(2)}, {program})"
    if writing:
        return (
            f"the store {path} is open in another process{who}; relkit ingest "
            "writes to it (as does Store(path) without read_only=True), so close "
            "it there (store.close()) and run this again; to only read, open it "
            "read-only in both"
        )
    return (
        f"the store {path} is open for writing in another process{who}; close it "
        f"there (store.close()), or open it read-only there (Store({str(path)!r}, "
        "read_only=True)) so that both can read"
    )


class Store:
    """An open relkit store (a DuckDB database file or ``:memory:``).

    Parameters
    ----------
    path : str or Path, default "relkit.duckdb"
        Database file; created with the schema if missing. ``":memory:"`` for a
        throw-away store.
    read_only : bool, default False
        Open an existing file without write access.

    Raises
    ------
    RelkitError
        If the file is not a DuckDB database, is held by another process
        (:func:`locked_store_message`), is a DuckDB database of another
        program (tables but no ``relkit_meta``; it is left unchanged), or is a
        relkit store of another schema version (a version-2 to -6 store
        opened read-only is refused with how to upgrade it).
    SchemaError
        If the store was written by a newer relkit (a higher schema version),
        or a table or column of :data:`relkit.schema.TABLE_COLUMNS` is missing
        from a store of this version (a damaged file).

    Notes
    -----
    A store of schema version 2 to 6 opened for writing is upgraded in place
    to version 7 (the columns and tables added since are created, NULL in old
    rows: version 3 added the job-log columns and tables; version 4
    ``assets.flags``, ``failure_modes.declared_source_id`` and the ``log_spans``
    table; version 5 the ``gpu_snapshots`` table; version 6 the
    ``checkpoints`` columns ``attempt, restore_s, level, n_gpus, n_nodes,
    host, status``; version 7 renames ``sources.sha256`` to
    ``sources.content_hash`` and marks its old values ``sha256:<hex>``, new
    ingests writing ``blake3:<hex>``). Old rows are kept, and every table's
    columns end up in the order of :data:`relkit.schema.TABLE_COLUMNS`, as in
    a new store. A file ingested into the old store and read again unchanged
    is still recognised (:func:`file_identities` with ``sha256=True``).
    A store file this object created is removed again when its ``with`` block
    ends in an error while every table is still empty (a failed first ingest
    leaves no empty store behind).

    Examples
    --------
    >>> with Store(":memory:") as store:
    ...     store.table("events").height
    0
    """

    def __init__(
        self, path: str | Path = "relkit.duckdb", *, read_only: bool = False
    ) -> None:
        self.path = str(path)
        self.read_only = read_only
        existed = self.path == ":memory:" or Path(self.path).exists()
        self._created = not existed
        if read_only and self.path != ":memory:" and not Path(self.path).exists():
            msg = (
                f"{self.path}: no such store. "
                f"Create it with `relkit ingest --db {self.path} ...`."
            )
            raise RelkitError(msg)
        if existed and self.path != ":memory:":
            _check_duckdb_file(Path(self.path))
        try:
            self._con = duckdb.connect(self.path, read_only=read_only)
        except duckdb.Error as exc:
            msg = locked_store_message(str(exc), self.path, writing=not read_only)
            msg = msg or f"{self.path}: cannot open as a DuckDB store ({exc})."
            raise RelkitError(msg) from exc
        self._con.execute("SET TimeZone = 'UTC'")
        try:
            self._check_foreign()
            self._check_newer()
            if self._stored_version() == str(SCHEMA_VERSION):
                self._check_complete()  # before CREATE IF NOT EXISTS hides it
            if not read_only:
                self._create_schema()
            self._check_version()
        except BaseException:
            self._con.close()
            raise

    # -- life cycle -------------------------------------------------------------
    def close(self) -> None:
        """Close the connection."""
        self._con.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        empty = exc_type is not None and self._created and self._is_empty()
        self.close()
        if empty:  # a failed first ingest: leave no empty store file behind
            for leftover in (Path(self.path), Path(f"{self.path}.wal")):
                leftover.unlink(missing_ok=True)

    def _is_empty(self) -> bool:
        try:
            return all(
                self._con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0] == 0
                for name in TABLE_COLUMNS
                if name != "failure_modes"  # seeded with the taxonomy
            )
        except duckdb.Error:  # pragma: no cover - a broken connection: keep the file
            return False

    # -- display ----------------------------------------------------------------
    def table_counts(self) -> dict[str, int]:
        """Count the rows of each canonical table.

        Returns
        -------
        dict of str to int
            Table name to row count, in the order of
            :data:`relkit.schema.TABLE_COLUMNS`.

        Raises
        ------
        RelkitError
            If the store is closed.

        Examples
        --------
        >>> with Store(":memory:") as store:
        ...     store.table_counts()["events"]
        0
        """
        try:
            return {
                name: int(
                    self._con.execute(f"SELECT count(*) FROM {name}").fetchall()[0][0]
                )
                for name in TABLE_COLUMNS
            }
        except duckdb.Error as exc:
            msg = f"{self.path}: cannot count rows, the store is closed ({exc})."
            raise RelkitError(msg) from exc

    def _summary(self) -> tuple[str, dict[str, int] | None]:
        """Return the heading line and the counts (None when closed)."""
        mode = "read-only" if self.read_only else "read-write"
        try:
            counts: dict[str, int] | None = self.table_counts()
        except RelkitError:
            counts = None
        state = mode if counts is not None else "closed"
        head = f"Store({self.path!r}, schema version {SCHEMA_VERSION}, {state})"
        return head, counts

    def __repr__(self) -> str:
        """Show the path, schema version, mode and each table's row count."""
        head, counts = self._summary()
        if counts is None:
            return head
        width = max(len(n) for n in counts)
        rows = [f"  {n:<{width}} {c:>12,} rows" for n, c in counts.items()]
        return "\n".join([head, *rows])

    def _repr_html_(self) -> str:
        """Show the same as :meth:`__repr__` as an HTML table, for Jupyter."""
        import html

        head, counts = self._summary()
        if counts is None:
            return f"<p><code>{html.escape(head)}</code></p>"
        rows = "".join(
            f"<tr><td><code>{html.escape(n)}</code></td>"
            f"<td style='text-align:right'>{c:,}</td></tr>"
            for n, c in counts.items()
        )
        return (
            f"<table class='relkit-store'><caption>{html.escape(head)}</caption>"
            f"<tr><th>table</th><th>rows</th></tr>{rows}</table>"
        )

    @property
    def connection(self) -> duckdb.DuckDBPyConnection:
        """The DuckDB connection, for :mod:`relkit.ingest` only."""
        return self._con

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Run a block atomically: all of one file's rows land, or none."""
        self._con.execute("BEGIN TRANSACTION")
        try:
            yield
        except BaseException:
            self._con.execute("ROLLBACK")
            raise
        self._con.execute("COMMIT")

    # -- schema -----------------------------------------------------------------
    def _check_foreign(self) -> None:
        """Refuse a DuckDB file of another program before writing anything to it."""
        tables = [
            r[0]
            for r in self._con.execute(
                "SELECT table_name FROM duckdb_tables() WHERE NOT internal "
                "AND database_name = current_database() UNION "
                "SELECT view_name FROM duckdb_views() WHERE NOT internal "
                "AND database_name = current_database() ORDER BY 1"
            ).fetchall()
        ]
        if tables and "relkit_meta" not in tables:
            shown = ", ".join(tables[:5]) + (
                f", ... ({len(tables)} in all)" if len(tables) > 5 else ""
            )
            msg = (
                f"{self.path} is a DuckDB database but not a relkit store (tables: "
                f"{shown}); it was left unchanged. Use another --db path, e.g. "
                "--db relkit.duckdb."
            )
            raise RelkitError(msg)

    def _create_schema(self) -> None:
        con = self._con
        con.execute(
            "CREATE TABLE IF NOT EXISTS relkit_meta "
            "(key VARCHAR PRIMARY KEY, value VARCHAR)"
        )
        con.execute(
            "INSERT INTO relkit_meta VALUES ('schema_version', ?) "
            "ON CONFLICT DO NOTHING",
            [str(SCHEMA_VERSION)],
        )
        for name, cols in TABLE_COLUMNS.items():
            body = ", ".join(f'"{c}" {t}' for c, t in cols.items())
            con.execute(f"CREATE TABLE IF NOT EXISTS {name} ({body})")
        self._upgrade()
        # the taxonomy, as data, so SQL users can join it; a store made by an
        # older relkit gets the current rows (new modes, e.g. the whole Xid
        # catalogue of issue 10) when opened for writing; declared rows stay
        from relkit.taxonomy import FAILURE_MODES

        names = FAILURE_MODES["failure_mode"].to_list()
        con.execute(
            "DELETE FROM failure_modes WHERE declared_source_id IS NULL "
            "AND list_contains(?, failure_mode)",
            [names],
        )
        kept = con.execute("SELECT failure_mode FROM failure_modes").fetchall()
        taken = {r[0] for r in kept}
        self.append(
            "failure_modes",
            FAILURE_MODES.filter(~pl.col("failure_mode").is_in(sorted(taken))),
        )

    def _upgrade(self) -> None:
        """Bring a store of an upgradable older version to :data:`SCHEMA_VERSION`.

        Renames ``sources.sha256`` (schema 6 and older) to ``content_hash``,
        its values prefixed ``sha256:`` so that they say which algorithm made
        them. Adds every column of :data:`TABLE_COLUMNS` a table lacks (NULL in
        old rows; new tables were created just before), then rebuilds a table whose
        columns are not in the contract's order (``checkpoints`` of schema 5:
        ``ALTER TABLE ADD COLUMN`` appends, the contract puts ``attempt`` after
        ``job_id``), its rows copied by name. All in one transaction.
        """
        con = self._con
        row = con.execute(
            "SELECT value FROM relkit_meta WHERE key = 'schema_version'"
        ).fetchall()
        if not row or row[0][0] not in _UPGRADABLE:
            return
        with self.transaction():
            have = self._column_names("sources")
            if "sha256" in have and "content_hash" not in have:
                con.execute("ALTER TABLE sources RENAME COLUMN sha256 TO content_hash")
                con.execute(
                    "UPDATE sources SET content_hash = 'sha256:' || content_hash "
                    "WHERE content_hash IS NOT NULL"
                )
            for name, cols in TABLE_COLUMNS.items():
                have = self._column_names(name)
                for col, typ in cols.items():
                    if col not in have:
                        con.execute(f'ALTER TABLE {name} ADD COLUMN "{col}" {typ}')
                if self._column_names(name) != list(cols):
                    self._rebuild(name)
            con.execute(
                "UPDATE relkit_meta SET value = ? WHERE key = 'schema_version'",
                [str(SCHEMA_VERSION)],
            )

    def _column_names(self, name: str) -> list[str]:
        """Return a table's column names in their stored order."""
        return [
            r[0]
            for r in self._con.execute(
                "SELECT column_name FROM duckdb_columns() WHERE table_name = ? "
                "AND database_name = current_database() ORDER BY column_index",
                [name],
            ).fetchall()
        ]

    def _rebuild(self, name: str) -> None:
        """Recreate a table with the contract's column order, keeping its rows.

        Columns the contract does not name (none in a relkit store) would be
        dropped, so a table with such columns is left as it is.
        """
        cols = TABLE_COLUMNS[name]
        if set(self._column_names(name)) != set(cols):
            return
        body = ", ".join(f'"{c}" {t}' for c, t in cols.items())
        names = ", ".join(f'"{c}"' for c in cols)
        con = self._con
        con.execute(f"CREATE TABLE _relkit_upgrade_{name} ({body})")
        con.execute(
            f"INSERT INTO _relkit_upgrade_{name} ({names}) SELECT {names} FROM {name}"
        )
        con.execute(f"DROP TABLE {name}")
        con.execute(f"ALTER TABLE _relkit_upgrade_{name} RENAME TO {name}")

    def _stored_version(self) -> str | None:
        """Return ``relkit_meta``'s schema version, None when there is none."""
        try:
            row = self._con.execute(
                "SELECT value FROM relkit_meta WHERE key = 'schema_version'"
            ).fetchall()
        except duckdb.CatalogException:
            return None
        return row[0][0] if row else None

    def _check_newer(self) -> None:
        """Refuse a store written by a newer relkit, before writing to it."""
        found = self._stored_version()
        if found is not None and found.isdigit() and int(found) > SCHEMA_VERSION:
            msg = (
                f"the store {self.path} was written by a newer relkit (schema "
                f"{found}, this relkit reads <= {SCHEMA_VERSION}); upgrade relkit "
                "(pip install -U relkit) to read it."
            )
            raise SchemaError(msg)

    def _check_complete(self) -> None:
        """Refuse a store whose tables or columns were dropped (a damaged file)."""
        rows = self._con.execute(
            "SELECT table_name, column_name FROM duckdb_columns() "
            "WHERE database_name = current_database()"
        ).fetchall()
        have: dict[str, set[str]] = {}
        for table, column in rows:
            have.setdefault(table, set()).add(column)
        for name, cols in TABLE_COLUMNS.items():
            if name not in have:
                what = f"table {name} is missing"
            elif missing := [c for c in cols if c not in have[name]]:
                what = f"table {name} lacks column(s) {', '.join(missing)}"
            else:
                continue
            msg = (
                f"the store {self.path} is damaged or incomplete: {what}; "
                "re-ingest into a new store (--db NEW.duckdb)."
            )
            raise SchemaError(msg)

    def _check_version(self) -> None:
        try:
            row = self._con.execute(
                "SELECT value FROM relkit_meta WHERE key = 'schema_version'"
            ).fetchall()
        except duckdb.CatalogException as exc:  # an empty database opened read-only
            msg = (
                f"{self.path} is an empty DuckDB database, not a relkit store. Create "
                f"a store with `relkit ingest --db {self.path} ...` first."
            )
            raise RelkitError(msg) from exc
        found = row[0][0] if row else None
        if found in _UPGRADABLE:  # opened read-only, so not upgraded in place
            msg = (
                f"{self.path}: store schema version {found}, this relkit needs "
                f"{SCHEMA_VERSION}. Open it once for writing to upgrade it in place "
                f"(e.g. `relkit ingest --db {self.path} FILE`, or Store(path) in "
                "Python), or re-ingest into a new store (--db NEW.duckdb)."
            )
            raise RelkitError(msg)
        if found != str(SCHEMA_VERSION):
            msg = (
                f"{self.path}: store schema version {found}, this relkit needs "
                f"{SCHEMA_VERSION}. Re-ingest into a new store (--db NEW.duckdb)."
            )
            raise RelkitError(msg)

    # -- sources registry -----------------------------------------------------------
    def find_source(self, content_hash: str, kind: str) -> int | None:
        """Return the ``source_id`` of a file already ingested as ``kind``, if any.

        Parameters
        ----------
        content_hash : str
            The file's identity, ``"blake3:<hex>"`` or ``"sha256:<hex>"`` (see
            :func:`file_identities`).
        kind : str
            Ingest kind (``events``, ``assets``, ``lanl``, ...).

        Returns
        -------
        int or None
        """
        rows = self._con.execute(
            "SELECT source_id FROM sources WHERE content_hash = ? AND kind = ? "
            "ORDER BY source_id",
            [content_hash, kind],
        ).fetchall()
        return int(rows[0][0]) if rows else None

    def holds_sha256(self, kind: str) -> bool:
        """Say whether a source of ``kind`` has a SHA-256 identity (a schema-6 row).

        Parameters
        ----------
        kind : str
            Ingest kind.

        Returns
        -------
        bool
            True if a ``sources`` row of ``kind`` has a ``content_hash``
            starting ``sha256:`` (ingested before schema 7): a file's identity
            must then be compared by SHA-256 too.

        Examples
        --------
        >>> with Store(":memory:") as store:
        ...     store.holds_sha256("events")
        False
        """
        rows = self._con.execute(
            "SELECT 1 FROM sources WHERE kind = ? AND "
            "starts_with(content_hash, 'sha256:') LIMIT 1",
            [kind],
        ).fetchall()
        return bool(rows)

    def add_source(
        self,
        path: str | Path,
        *,
        content_hash: str,
        kind: str,
        options: dict[str, Any],
        n_lines: int,
        n_loaded: int,
        n_rejected: int,
        n_ignored: int = 0,
    ) -> int:
        """Register an ingested file and return its new ``source_id``.

        Parameters
        ----------
        path : str or Path
            The file as given by the user.
        content_hash : str
            Its identity, ``"blake3:<hex>"`` (the first of
            :func:`file_identities`).
        kind : str
            Ingest kind.
        options : dict
            Options that shaped the ingest (time zone, reference date), stored as JSON.
        n_lines, n_loaded, n_rejected : int
            Data lines read, rows loaded, lines rejected.
        n_ignored : int, default 0
            Lines recognised as noise (counted by reason in ``ignored``);
            ``n_lines = n_loaded + n_ignored + n_rejected`` for line-based kinds.

        Returns
        -------
        int
            The new ``source_id`` (1, 2, ...).
        """
        (next_id,) = self._con.execute(
            "SELECT coalesce(max(source_id), 0) + 1 FROM sources"
        ).fetchall()[0]
        self._con.execute(
            "INSERT INTO sources VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                next_id,
                str(path),
                content_hash,
                kind,
                json.dumps(options, sort_keys=True, default=str),
                n_lines,
                n_loaded,
                n_rejected,
                datetime.now(UTC),
                n_ignored,
            ],
        )
        return int(next_id)

    def drop_sources(self, source_ids: Sequence[int]) -> int:
        """Delete earlier sources: their rows in every table and their ``sources`` rows.

        Parameters
        ----------
        source_ids : sequence of int
            ``source_id`` values to drop; unknown ids are ignored.

        Returns
        -------
        int
            Number of ``sources`` rows deleted.

        Notes
        -----
        Rows go from every table with a ``source_id`` column (``events``,
        ``assets``, ``rejects``, ``jobs``, ``job_steps``, ``job_nodes``,
        ``checkpoints``, ``log_spans``) and the ``job_nodes`` of dropped jobs
        that no other source still holds. A ``failure_modes`` row a dropped
        source declared (``declared_source_id``) goes when another source
        declares the mode too or no other source's events use it; otherwise it
        passes to the lowest remaining ``source_id`` whose events use it. The
        taxonomy's rows (``declared_source_id`` NULL) always stay. Not atomic by
        itself: call it inside :meth:`transaction` together with the writes it
        belongs to.

        Examples
        --------
        >>> with Store(":memory:") as store:
        ...     store.drop_sources([1])
        0
        """
        ids = [int(i) for i in source_ids]
        if not ids:
            return 0
        con = self._con
        con.execute(
            "DELETE FROM job_nodes n WHERE EXISTS (SELECT 1 FROM jobs j "
            "WHERE list_contains(?, j.source_id) AND j.job_id = n.job_id "
            "AND j.attempt IS NOT DISTINCT FROM n.attempt) AND NOT EXISTS "
            "(SELECT 1 FROM jobs k WHERE NOT list_contains(?, k.source_id) "
            "AND k.job_id = n.job_id AND k.attempt IS NOT DISTINCT FROM n.attempt)",
            [ids, ids],
        )
        self._drop_declared_modes(ids)
        for name, cols in TABLE_COLUMNS.items():
            if name != "sources" and "source_id" in cols:
                con.execute(
                    f"DELETE FROM {name} WHERE list_contains(?, source_id)", [ids]
                )
        (n,) = con.execute(
            "DELETE FROM sources WHERE list_contains(?, source_id)", [ids]
        ).fetchall()[0]
        return int(n)

    def _drop_declared_modes(self, ids: list[int]) -> None:
        """Settle the ``failure_modes`` rows that the sources ``ids`` declared."""
        con = self._con
        con.execute(
            "DELETE FROM failure_modes f WHERE list_contains(?, f.declared_source_id) "
            "AND EXISTS (SELECT 1 FROM failure_modes g WHERE g.failure_mode = "
            "f.failure_mode AND (g.declared_source_id IS NULL OR NOT "
            "list_contains(?, g.declared_source_id)))",
            [ids, ids],
        )
        con.execute(
            "DELETE FROM failure_modes f WHERE list_contains(?, f.declared_source_id) "
            "AND NOT EXISTS (SELECT 1 FROM events e WHERE e.failure_mode = "
            "f.failure_mode AND NOT list_contains(?, e.source_id))",
            [ids, ids],
        )
        con.execute(
            "UPDATE failure_modes f SET declared_source_id = (SELECT min(e.source_id) "
            "FROM events e WHERE e.failure_mode = f.failure_mode AND NOT "
            "list_contains(?, e.source_id)) "
            "WHERE list_contains(?, f.declared_source_id)",
            [ids, ids],
        )

    def rejects(self, source: str | Path | None = None) -> pl.DataFrame:
        """Return the rejected input lines, with the path of the file of each.

        Parameters
        ----------
        source : str or Path, optional
            Only the rejects of this file: a path as given at ingest, or any path
            that resolves to the same file. Default: every source's.

        Returns
        -------
        pl.DataFrame
            ``source`` (the path as given at ingest), ``line_no`` (1-based line of
            the record; for Parquet the row number), ``reason``, ``raw`` (the
            record's text), sorted by ``source_id`` and ``line_no``.

        Raises
        ------
        RelkitError
            If ``source`` names no ingested file (the message lists the ones
            there are).

        Examples
        --------
        >>> with Store(":memory:") as store:
        ...     store.rejects().columns
        ['source', 'line_no', 'reason', 'raw']
        """
        sources = self.table("sources")
        if source is not None:
            resolved = str(Path(source).resolve())
            given = sources.get_column("path").to_list()
            where = [
                json.loads(o or "{}").get("resolved_path")
                for o in sources.get_column("options").to_list()
            ]
            keep = [
                p == str(source) or w == resolved or str(Path(p).resolve()) == resolved
                for p, w in zip(given, where, strict=True)
            ]
            sources = sources.filter(pl.Series(keep, dtype=pl.Boolean))
            if sources.is_empty():
                known = sorted(set(given))
                shown = ", ".join(known[:5]) + (
                    f", ... ({len(known)} in all)" if len(known) > 5 else ""
                )
                msg = (
                    f"{source}: no such source in {self.path} (sources: "
                    f"{shown or 'none'}). Give a path as listed, or leave "
                    "--source out for every file's rejects."
                )
                raise RelkitError(msg)
        return (
            self.table("rejects")
            .join(
                sources.select("source_id", source="path"),
                on="source_id",
                how="inner",
                maintain_order="left",
            )
            .select("source", "line_no", "reason", "raw")
        )

    def next_source_id(self) -> int:
        """Return the ``source_id`` the next :meth:`add_source` will assign."""
        return int(
            self._con.execute(
                "SELECT coalesce(max(source_id), 0) + 1 FROM sources"
            ).fetchall()[0][0]
        )

    def replace_rows(self, name: str, source_id: int, frame: pl.DataFrame) -> int:
        """Replace the rows one source holds in a table (rows derived again).

        Parameters
        ----------
        name : str
            Table name with a ``source_id`` column, e.g. ``"events"``.
        source_id : int
            The source whose rows are deleted before ``frame`` is appended.
        frame : pl.DataFrame
            The new rows, without ``source_id`` (it is set to ``source_id``).

        Returns
        -------
        int
            Number of rows appended.

        Raises
        ------
        SchemaError
            If the table is unknown, has no ``source_id``, or ``frame`` has
            columns the table does not.

        Notes
        -----
        Not atomic by itself: call it inside :meth:`transaction`. The
        ``nvsmi`` reader uses it to derive a later file's events again when an
        earlier snapshot of the same GPU arrives (``relkit.ingest.nvsmi``).
        """
        if "source_id" not in TABLE_COLUMNS.get(name, {}) or name == "sources":
            msg = f"replace_rows: {name!r} is not a table with per-source rows"
            raise SchemaError(msg)
        self._con.execute(f"DELETE FROM {name} WHERE source_id = ?", [source_id])
        return self.append(name, frame.with_columns(source_id=pl.lit(source_id)))

    def set_source_counts(
        self, source_id: int, *, n_loaded: int, n_ignored: int
    ) -> None:
        """Update a source's ``n_loaded`` and ``n_ignored`` after its rows changed.

        Parameters
        ----------
        source_id : int
            The ``sources`` row to update.
        n_loaded, n_ignored : int
            The new counts (``n_lines`` and ``n_rejected`` do not change).

        Notes
        -----
        Not atomic by itself: call it inside :meth:`transaction`, with the
        :meth:`replace_rows` calls it belongs to.
        """
        self._con.execute(
            "UPDATE sources SET n_loaded = ?, n_ignored = ? WHERE source_id = ?",
            [n_loaded, n_ignored, source_id],
        )

    # -- rows in and out ------------------------------------------------------------
    def append(self, name: str, frame: pl.DataFrame) -> int:
        """Append a polars frame to a store table, casting to the table's types.

        Columns the frame lacks are filled with NULL; extra columns are an error.

        Parameters
        ----------
        name : str
            Table name (a key of :data:`relkit.schema.TABLE_COLUMNS`).
        frame : pl.DataFrame
            Rows to append.

        Returns
        -------
        int
            Number of rows appended.

        Raises
        ------
        SchemaError
            If the table is unknown or the frame has columns the table does not.
        """
        if name not in TABLE_COLUMNS:
            msg = f"unknown table {name!r}; tables are {sorted(TABLE_COLUMNS)}"
            raise SchemaError(msg)
        schema = POLARS_SCHEMAS[name]
        if extra := [c for c in frame.columns if c not in schema]:
            msg = (
                f"append({name!r}): columns {extra} are not in the table {list(schema)}"
            )
            raise SchemaError(msg)
        if frame.height == 0:
            return 0
        full = frame.select(
            [
                (pl.col(c) if c in frame.columns else pl.lit(None)).cast(t).alias(c)
                for c, t in schema.items()
            ]
        )
        arrow = full.to_arrow()  # noqa: F841  (read by DuckDB's replacement scan)
        cols = ", ".join(f'"{c}"' for c in schema)
        self._con.execute(f"INSERT INTO {name} ({cols}) SELECT {cols} FROM arrow")
        return full.height

    def table(self, name: str) -> pl.DataFrame:
        """Return a whole store table as a polars frame in its canonical order.

        Parameters
        ----------
        name : str
            One of ``sources, events, rejects, ignored, failure_modes, assets,
            jobs, job_steps, job_nodes, checkpoints, log_spans, gpu_snapshots``.

        Returns
        -------
        pl.DataFrame
            Columns and dtypes as in :data:`relkit.schema.POLARS_SCHEMAS`
            (instants ``Datetime("us", "UTC")``), sorted by the table's key.

        Raises
        ------
        SchemaError
            If ``name`` is not a store table.
        """
        if name not in TABLE_COLUMNS:
            msg = f"unknown table {name!r}; tables are {sorted(TABLE_COLUMNS)}"
            raise SchemaError(msg)
        keys = ", ".join(f'"{k}" NULLS LAST' for k in _SORT_KEYS[name])
        frame = self._con.sql(f"SELECT * FROM {name} ORDER BY {keys}").pl()
        schema = POLARS_SCHEMAS[name]
        return frame.select([pl.col(c).cast(t) for c, t in schema.items()])
