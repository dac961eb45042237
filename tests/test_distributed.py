"""Distributed parsing (relkit.distributed on Ray, Spark) and its loader.

The reference everywhere is the single machine: ``read_kernel`` over the same
directory into another store. The archive is the simulator's (``rsc1``
preset resized: per-host kernel logs in all five framings, ``.syslog``
companions of dmesg hosts, reboots after failures), plus a plain ``dmesg``
log with its ``.btime`` record, a binary file (refused) and a README (skipped).
"""

import argparse
import json
import shutil
import sys
from glob import glob
from pathlib import Path

import polars as pl
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from relkit import answers
from relkit.distributed import (
    SPARK_SCHEMA,
    is_log_file,
    list_logs,
    output_schema,
    parse_log_batch,
    parse_log_batches,
)
from relkit.errors import IngestError, PartialIngestError, RelkitWarning
from relkit.ingest import read_path
from relkit.ingest.kernel import read_kernel
from relkit.ingest.parsed_logs import read_parsed_logs
from relkit.simulate import simulate_cluster, simulation_preset, write_simulation
from relkit.store import Store

#: Ray Data's own deprecation notices, raised inside ray.data.context when it
#: copies its settings (not by relkit's calls).
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:ray.data.context")

#: Nodes of the simulated archive: about 1.4 files per node (dmesg hosts have a
#: .syslog too), so several hundred host files.
NODES = 150
OPTS = {"tz": "UTC", "reference_date": "2023-05-12", "host_from_filename": True}
#: A plain dmesg log (kernel clock only) and its boot time: the Xid at 100 s
#: after a boot at epoch 1683000000 (2023-05-02T04:00:00Z) is 04:01:40 UTC.
DMESG = (
    "[    0.000000] Linux version 6.5.0 (gcc 12)\n"
    "[  100.000000] NVRM: Xid (PCI:0000:9b:00): 79, pid=1, GPU has fallen off "
    "the bus.\n"
    "[  200.000000] eth0: link up\n"
)
BTIME = "btime 1683000000\n"


def _tables(store: Store) -> dict[str, pl.DataFrame]:
    """Store tables with ``source_id`` replaced by the file's name."""
    names = store.table("sources").select(
        "source_id", file=pl.col("path").map_elements(lambda p: Path(p).name)
    )
    out = {}
    for name in ("events", "rejects", "ignored", "log_spans"):
        frame = store.table(name).join(names, on="source_id").drop("source_id")
        out[name] = frame.sort(frame.columns)
    return out


@pytest.fixture(scope="module")
def archive(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("sim")
    cfg = simulation_preset("rsc1", nodes=NODES, days=12)
    write_simulation(simulate_cluster(cfg, seed=11), out)
    logs = out / "kernel"
    (logs / "plain7.log").write_text(DMESG)
    (logs / "plain7.btime").write_text(BTIME)
    (logs / "README.md").write_text("per-host kernel logs\n")
    (logs / "gpu9999.log").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 8)
    # compressed copies of plain logs (other names, so other hosts): a worker
    # must hash and parse the compressed bytes, as read_kernel does
    for name, packed in _compressed(sorted(logs.glob("gpu*.log"))[:4]).items():
        (logs / name).write_bytes(packed)
    return logs


def _compressed(plain: list[Path]) -> dict[str, bytes]:
    """gzip, bzip2, xz and zstd copies of four logs, named ``zNNN.log.<suffix>``."""
    import bz2
    import gzip
    import lzma

    def zstd(data: bytes) -> bytes:  # one zstd frame, as the zstd tool writes
        return pa.compress(data, codec="zstd", asbytes=True)

    packers = (("gz", gzip.compress), ("bz2", bz2.compress), ("xz", lzma.compress))
    packers += (("zst", zstd),)
    return {
        f"z{k}{f.stem}.log.{suffix}": pack(f.read_bytes())
        for k, (f, (suffix, pack)) in enumerate(zip(plain, packers, strict=True))
    }


@pytest.fixture(scope="module")
def single(archive: Path, tmp_path_factory: pytest.TempPathFactory) -> Store:
    """read_kernel over the directory: the single machine's answer."""
    store = Store(tmp_path_factory.mktemp("one") / "one.duckdb")
    with pytest.raises(PartialIngestError) as info:
        read_kernel(store, archive, **OPTS)
    assert [Path(f.path).name for f in info.value.failures] == ["gpu9999.log"]
    return store


@pytest.fixture(scope="module")
def ray_cluster() -> object:
    ray = pytest.importorskip(
        "ray", reason="ray not installed: pip install 'relkit[ray]'"
    )
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
    )
    yield ray
    ray.shutdown()


@pytest.fixture(scope="module")
def parsed(
    archive: Path, ray_cluster: object, tmp_path_factory: pytest.TempPathFactory
) -> tuple[Path, object]:
    """ray_parse on 2 local worker processes."""
    from relkit.distributed import ray_parse

    out = tmp_path_factory.mktemp("parsed") / "pq"
    summary = ray_parse(archive, out, **OPTS)
    return out, summary


@pytest.fixture(scope="module")
def distributed(
    parsed: tuple[Path, object], tmp_path_factory: pytest.TempPathFactory
) -> tuple[Store, PartialIngestError]:
    out, _ = parsed
    store = Store(tmp_path_factory.mktemp("two") / "two.duckdb")
    with pytest.raises(PartialIngestError) as info:
        read_path(store, out, kind="parsed-logs")
    return store, info.value


def test_ray_client_address_without_ray_client_says_how(tmp_path: Path) -> None:
    """--address ray://... without Ray Client: ImportError naming pip install
    'ray[client]' (Ray itself raises a ValueError saying so; relkit keeps the
    fix and makes it the CLI's one-line usage error). Runs before the module's
    Ray fixture starts Ray in this process (an initialised Ray is reused)."""
    ray = pytest.importorskip("ray", reason="ray not installed")
    if ray.is_initialized():
        pytest.skip("Ray is already initialised in this process")
    try:
        import grpc  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("Ray Client (grpc) is installed here")
    from relkit.distributed import ray_parse

    (tmp_path / "n1.log").write_text("2025-03-04T10:22:05+0000 n1 kernel: up\n")
    with pytest.raises(ImportError, match=r"pip install 'ray\[client\]'"):
        ray_parse(tmp_path / "n1.log", tmp_path / "out", address="ray://127.0.0.1:1")
    assert not ray.is_initialized()


def test_ref_ray_ingest_equals_single_machine(
    single: Store, distributed: tuple[Store, PartialIngestError], archive: Path
) -> None:
    """Every row of every table as read_kernel writes it (expected: read_kernel).

    events (all columns), rejects, ignored counts and log_spans are compared
    row for row with ``source_id`` mapped to the file name; sources by file:
    lines, loaded, rejected, ignored, content hash and options (times the file
    proves, resolved path). The archive has several hundred files, all
    framings and reboots, so this is not a vacuous equality.
    """
    store, _ = distributed
    one, two = _tables(single), _tables(store)
    for name in one:
        assert one[name].equals(two[name]), name
    ev = one["events"]
    assert ev.height > 30
    assert ev.get_column("file").n_unique() > 10
    # the .btime record reached the worker: the dmesg Xid has its wall time
    plain = ev.filter(pl.col("file") == "plain7.log")
    assert (
        plain.get_column("ts").to_list()[0].isoformat() == "2023-05-02T04:01:40+00:00"
    )
    cols = ["n_lines", "n_loaded", "n_rejected", "n_ignored", "content_hash"]
    src = [
        s.with_columns(file=pl.col("path").map_elements(lambda p: Path(p).name))
        .select("file", *cols, "options")
        .sort("file")
        for s in (single.table("sources"), store.table("sources"))
    ]
    assert src[0].height > 200  # several hundred host files
    assert src[0].drop("options").equals(src[1].drop("options"))
    opts = [[json.loads(o) for o in s.get_column("options")] for s in src]
    assert opts[0] == opts[1]
    # every line accounted, per file
    s = src[1]
    assert (s["n_loaded"] + s["n_rejected"] + s["n_ignored"] == s["n_lines"]).all()


def test_ref_ray_incidents_and_mtbf_equal_single_machine(
    single: Store, distributed: tuple[Store, PartialIngestError]
) -> None:
    """Incidents and MTBF per failure mode (expected: the single machine's answers)."""
    store, _ = distributed
    a, b = answers.store_tables(single), answers.store_tables(store)
    inc_a = answers.incident_table(
        a["events"], end_of_log=answers.log_end(a["sources"])
    )
    inc_b = answers.incident_table(
        b["events"], end_of_log=answers.log_end(b["sources"])
    )
    assert inc_a.height > 10
    assert inc_a.drop([c for c in inc_a.columns if "source" in c]).equals(
        inc_b.drop([c for c in inc_b.columns if "source" in c])
    )
    m_a = answers.mtbf_by(**a, by=["failure_mode"])
    m_b = answers.mtbf_by(**b, by=["failure_mode"])
    assert m_a.height > 1
    assert m_a.equals(m_b)


def test_ray_refused_file_is_reported_not_dropped(
    parsed: tuple[Path, object],
    distributed: tuple[Store, PartialIngestError],
    single: Store,
) -> None:
    """A binary file in the archive: one error source row, then PartialIngestError.

    Expected: read_kernel refuses the same file with the same reason (its path
    aside) and the other files are loaded; README and .btime are not sources.
    """
    _, summary = parsed
    assert summary.n_refused == 1
    _, err = distributed
    assert [Path(f.path).name for f in err.failures] == ["gpu9999.log"]
    assert "not a kernel/syslog text log" in err.failures[0].reason
    assert err.n_files == len(err.results) + 1
    assert summary.n_files == err.n_files
    names = {Path(p).name for p in single.table("sources").get_column("path")}
    assert "README.md" not in names
    assert "plain7.btime" not in names
    # the summary counts every line of the parsed files
    assert summary.n_lines == summary.n_events + summary.n_ignored + summary.n_rejected
    assert summary.n_lines == sum(r.n_lines for r in err.results)


def test_loading_twice_skips_and_single_machine_knows_the_files(
    parsed: tuple[Path, object],
    single: Store,
    distributed: tuple[Store, PartialIngestError],
) -> None:
    """Same bytes, same identity: a file read either way is the same source.

    Expected: loading the Ray output again skips every file, and loading it
    into the store read_kernel filled skips every file too (read_kernel's rule
    for a file ingested before), writing nothing.
    """
    out, _ = parsed
    store, first = distributed
    assert first.results
    assert all(not r.skipped for r in first.results)
    for target in (store, single):
        n_before = target.table("sources").height
        with pytest.raises(PartialIngestError) as again:
            read_parsed_logs(target, out)
        assert len(again.value.results) == len(first.results)
        assert all(r.skipped for r in again.value.results)
        assert target.table("sources").height == n_before


# -- without Ray -----------------------------------------------------------------------
def _batch(files: list[Path], content: str = "bytes") -> pa.Table:
    return pa.table(
        {"path": [str(f) for f in files], content: [f.read_bytes() for f in files]}
    )


def test_spark_column_names_give_the_same_rows(archive: Path) -> None:
    """``content`` (Spark binaryFile) and ``bytes`` (Ray) parse alike (expected:
    the Ray-named batch), and parse_log_batches yields the same rows."""
    files = sorted(archive.glob("gpu00*"))[:6]
    ray_named = parse_log_batch(_batch(files), **OPTS)
    spark_named = parse_log_batch(_batch(files, "content"), **OPTS)
    assert ray_named.equals(spark_named)
    streamed = pa.Table.from_batches(
        list(parse_log_batches(_batch(files, "content").to_batches(), **OPTS)),
        schema=output_schema(),
    )
    assert streamed.equals(ray_named)
    assert ray_named.schema == output_schema()
    assert SPARK_SCHEMA.startswith("record string, path string, line_no bigint")


def test_parse_log_batch_refuses_other_columns() -> None:
    from relkit.errors import SchemaError

    with pytest.raises(SchemaError, match="'bytes'"):
        parse_log_batch(pa.table({"file": ["x"], "data": [b"y"]}))


def test_is_log_file_is_read_kernels_rule(tmp_path: Path) -> None:
    """list_logs picks the files read_kernel reads from a directory (expected:
    read_kernel's sources): docs, hidden files and .btime records skipped."""
    line = "2025-03-04T10:22:05+0000 n1 kernel: eth0: link up\n"
    for name in ("n1.log", "n2.log.gz.txt", "sub/n3.log", "N4"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(line)
    for name in ("README", "LICENSE.txt", "x.md", "h.json", "n1.btime", ".hid/n5.log"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("btime 1683000000\n")
    (tmp_path / ".n6.log").write_text(line)
    read = read_kernel(Store(":memory:"), tmp_path, tz="UTC")
    files, records = list_logs(str(tmp_path))
    assert sorted(str(Path(r.path).resolve()) for r in read) == files
    assert list(records.values()) == ["btime 1683000000\n"]
    assert not is_log_file("a/.b/c.log")


def test_loader_refuses_incomplete_output(archive: Path, tmp_path: Path) -> None:
    """A partition lost (the ignored rows of one file): the lines no longer add
    up, so that file is refused and named; the others load (hand check)."""
    files = sorted(archive.glob("gpu00[1-3].log"))
    table = parse_log_batch(_batch(files), **OPTS)
    lost = pa.compute.and_(
        pa.compute.equal(table.column("record"), "ignored"),
        pa.compute.equal(table.column("path"), str(files[0])),
    )
    pq.write_table(table.filter(pa.compute.invert(lost)), tmp_path / "p.parquet")
    with (
        pytest.warns(RelkitWarning, match="cannot be checked"),
        pytest.raises(PartialIngestError) as info,
    ):
        read_parsed_logs(Store(":memory:"), tmp_path)
    assert [f.path for f in info.value.failures] == [str(files[0])]
    assert "incomplete" in info.value.failures[0].reason
    assert len(info.value.results) == 2


def test_loader_refuses_a_directory_without_parquet(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no Parquet"):
        read_parsed_logs(Store(":memory:"), tmp_path)


def test_read_path_refuses_reading_options_for_parsed_logs(tmp_path: Path) -> None:
    """--tz was used by the parse; given to the load it would be ignored: refused."""
    with pytest.raises(IngestError, match="--tz is for"):
        read_path(Store(":memory:"), tmp_path, kind="parsed-logs", tz="UTC")


def test_cli_without_ray_says_how_to_install(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Missing ray: one line naming pip install 'relkit[ray]', exit code 2."""
    from relkit._cli_distributed import parse_with_ray

    monkeypatch.setitem(sys.modules, "ray", None)
    args = argparse.Namespace(kind="kernel", out="o", workers=None, paths=["d"])
    with pytest.raises(SystemExit) as info:
        parse_with_ray(args, progress=print)
    assert info.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1
    assert "pip install 'relkit[ray]'" in err[0]


# -- Spark -----------------------------------------------------------------------------
def test_spark_map_in_arrow(archive: Path, tmp_path: Path) -> None:
    """The README's Spark example over a few files equals parse_log_batch's rows."""
    pytest.importorskip("pyspark", reason="pyspark not installed")
    if shutil.which("java") is None:
        pytest.skip("no JVM (java not on PATH): Spark cannot start")
    from pyspark.sql import SparkSession

    logs = tmp_path / "logs"
    logs.mkdir()
    files = sorted(archive.glob("gpu00[1-4].log"))
    for f in files:
        shutil.copy(f, logs / f.name)
    spark = SparkSession.builder.master("local[2]").getOrCreate()
    try:
        frame = spark.read.format("binaryFile").load(str(logs))
        out = str(tmp_path / "parsed")
        frame.select("path", "content").mapInArrow(
            lambda it: parse_log_batches(it, **OPTS), SPARK_SCHEMA
        ).write.parquet(out)
    finally:
        spark.stop()
    store, ref = Store(":memory:"), Store(":memory:")
    with pytest.warns(RelkitWarning, match="cannot be checked"):
        read_parsed_logs(store, out)
    read_kernel(ref, logs, **OPTS)
    one, two = _tables(ref), _tables(store)
    for name in one:
        assert one[name].equals(two[name]), name


def test_cli_parse_with_ray_then_load(
    archive: Path, ray_cluster: object, tmp_path: Path
) -> None:
    """relkit ingest --engine ray's two steps on three files (expected: read_kernel
    over the same three files: same events and lines per file)."""
    from relkit._cli_distributed import parse_with_ray

    logs = tmp_path / "logs"
    logs.mkdir()
    for f in sorted(archive.glob("gpu00[1-3].log")):
        shutil.copy(f, logs / f.name)
    args = argparse.Namespace(
        kind="kernel",
        out=str(tmp_path / "out"),
        workers=None,
        address=None,
        paths=[str(logs)],
        engine="ray",
        host=None,
        boot_time=None,
        **OPTS,
    )
    said: list[str] = []
    load = parse_with_ray(args, progress=said.append)
    assert (load.kind, load.paths, load.tz) == ("parsed-logs", [args.out], None)
    assert "parsed 3 file(s)" in said[-1]
    got = read_path(Store(":memory:"), load.paths[0], kind=load.kind)
    ref = read_kernel(Store(":memory:"), logs, **OPTS)
    assert [(r.n_lines, r.n_loaded) for r in got] == [
        (r.n_lines, r.n_loaded) for r in ref
    ]


# -- review fixes (issue 13 section 4) ------------------------------------------------
def test_ray_compressed_logs_hash_and_parse_as_read_kernel(
    single: Store, distributed: tuple[Store, PartialIngestError], archive: Path
) -> None:
    """.gz/.bz2/.xz/.zst logs: the worker hashes the compressed bytes and parses
    the text inside (expected: read_kernel's sources for the same files, and
    content_digest of the file on disk). Ray's read_binary_files would have
    decompressed them by suffix: the hash of the text, the plain copy's."""
    from relkit.distributed import content_digest

    store, _ = distributed
    packed = sorted(archive.glob("z*.log.*"))
    assert [f.suffix for f in packed] == [".gz", ".bz2", ".xz", ".zst"]
    want = {
        r["path"]: r
        for r in single.table("sources").iter_rows(named=True)
        if Path(r["path"]).name.startswith("z")
    }
    got = {
        r["path"]: r
        for r in store.table("sources").iter_rows(named=True)
        if Path(r["path"]).name.startswith("z")
    }
    assert sorted(got) == sorted(want) == [str(f) for f in packed]
    for f in packed:
        assert got[str(f)]["content_hash"] == content_digest(f)[0]
        assert got[str(f)]["content_hash"] == want[str(f)]["content_hash"]
        for col in ("n_lines", "n_loaded", "n_ignored", "n_rejected"):
            assert got[str(f)][col] == want[str(f)][col], (f.name, col)
    assert sum(r["n_lines"] for r in got.values()) > 100


def test_missing_partition_is_refused_by_the_manifest(
    parsed: tuple[Path, object], tmp_path: Path
) -> None:
    """One Parquet partition deleted: every file whose rows were in it is refused
    by name (expected: the paths of the ``source`` rows of that partition, read
    from it before deleting it); the others load. Before the manifest this
    loaded silently partial (exit 0)."""
    out, _ = parsed
    copy = tmp_path / "pq"
    shutil.copytree(out, copy)
    assert (copy / "_relkit_manifest.json").is_file()
    parts = sorted(copy.glob("*.parquet"))
    assert len(parts) > 1
    lost = pq.read_table(parts[0]).to_pandas()
    gone = sorted(set(lost.loc[lost["record"] == "source", "path"]))
    assert gone
    parts[0].unlink()
    with pytest.raises(PartialIngestError) as info:
        read_parsed_logs(Store(":memory:"), copy)
    missing = sorted(f.path for f in info.value.failures if "partition" in f.reason)
    assert missing == gone
    assert info.value.n_files == len(info.value.results) + len(info.value.failures)


def test_rows_not_in_the_manifest_are_refused(
    parsed: tuple[Path, object], archive: Path, tmp_path: Path
) -> None:
    """A Parquet file of another run dropped into the output: its file is refused
    as not in the manifest (hand check: the file was never listed)."""
    out, _ = parsed
    copy = tmp_path / "pq"
    shutil.copytree(out, copy)
    other = tmp_path / "other" / "n1.log"
    other.parent.mkdir()
    other.write_text("2025-03-04T10:22:05+0000 n1 kernel: eth0: link up\n")
    pq.write_table(parse_log_batch(_batch([other]), **OPTS), copy / "x.parquet")
    with pytest.raises(PartialIngestError) as info:
        read_parsed_logs(Store(":memory:"), copy)
    stray = [f for f in info.value.failures if "not in its" in f.reason]
    assert [f.path for f in stray] == [str(other)]


def test_output_without_manifest_loads_with_a_note(
    archive: Path, tmp_path: Path
) -> None:
    """Spark's output has no manifest: loaded as before, with a RelkitWarning that
    completeness cannot be checked (expected rows: read_kernel of the files)."""
    files = sorted(archive.glob("gpu00[1-3].log"))
    pq.write_table(parse_log_batch(_batch(files), **OPTS), tmp_path / "p.parquet")
    with pytest.warns(RelkitWarning, match="cannot be checked"):
        got = read_parsed_logs(Store(":memory:"), tmp_path)
    ref = [read_kernel(Store(":memory:"), f, **OPTS)[0] for f in files]
    assert [(r.path, r.n_lines, r.n_loaded) for r in got] == [
        (r.path, r.n_lines, r.n_loaded) for r in ref
    ]


@pytest.mark.parametrize("form", ["file:{}", "file://{}", "file://localhost{}"])
def test_file_uris_are_local_paths(form: str, archive: Path, tmp_path: Path) -> None:
    """Spark's ``file:/x`` (and ``file:///x``, ``file://localhost/x``) is the local
    path ``/x``: stored as such, and a changed file at that path is refused, not
    loaded a second time (expected: read_kernel's rule for a changed file)."""
    log = tmp_path / "logs" / "gpu001.log"
    log.parent.mkdir()
    shutil.copy(archive / "gpu001.log", log)
    store = Store(":memory:")
    first = tmp_path / "one"
    first.mkdir()
    batch = pa.table({"path": [form.format(log)], "bytes": [log.read_bytes()]})
    table = parse_log_batch(batch, **OPTS)
    assert set(table.column("path").to_pylist()) == {str(log)}
    pq.write_table(table, first / "p.parquet")
    with pytest.warns(RelkitWarning, match="cannot be checked"):
        (done,) = read_parsed_logs(store, first)
    src = store.table("sources").row(0, named=True)
    assert (done.path, src["path"]) == (str(log), str(log))
    assert json.loads(src["options"])["resolved_path"] == str(log.resolve())
    # the file changes; read again from the same path: refused as read_kernel does
    log.write_bytes(log.read_bytes() + b"2023-05-12T00:00:00+0000 gpu001 kernel: x\n")
    second = tmp_path / "two"
    second.mkdir()
    batch = pa.table({"path": [form.format(log)], "bytes": [log.read_bytes()]})
    pq.write_table(parse_log_batch(batch, **OPTS), second / "p.parquet")
    with (
        pytest.warns(RelkitWarning, match="cannot be checked"),
        pytest.raises(PartialIngestError) as got,
    ):
        read_parsed_logs(store, second)
    with pytest.raises(IngestError) as ref:
        read_kernel(store, log, **OPTS)
    assert "has changed since" in got.value.failures[0].reason
    assert "has changed since" in ref.value.reason
    assert store.table("sources").height == 1


def test_cli_engine_ray_output_equals_kind_kernel(
    archive: Path,
    ray_cluster: object,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``relkit ingest --engine ray`` prints what ``--kind kernel`` prints for the
    same relative directory (expected: its JSON rows: relative paths, n_events,
    the refused binary file with kind kernel; exit code 1 for both), and
    --quiet leaves stderr with the errors only (no progress, no Ray warning)."""
    from relkit.cli import main

    monkeypatch.chdir(tmp_path)
    logs = Path("sim") / "kernel"
    logs.mkdir(parents=True)
    for name in ("gpu001.log", "gpu002.log", "gpu9999.log", "z0gpu001.log.gz"):
        shutil.copy(archive / name, logs / name)
    opts = ["--tz", "UTC", "--reference-date", "2023-05-12", "--host-from-filename"]
    common = ["ingest", "--kind", "kernel", *opts, "--format", "json", "--quiet"]
    codes, outs, errs = [], [], []
    for extra in (["--db", "a.duckdb"], ["--db", "b.duckdb", "--engine", "ray"]):
        args = [*common, *extra]
        if "ray" in extra:
            args += ["--out", "parsed"]
        codes.append(main([*args, str(logs)]))
        got = capsys.readouterr()
        assert got.out, (codes, got.err)
        outs.append(json.loads(got.out))
        errs.append(got.err.strip().splitlines())
    assert codes == [1, 1]
    assert outs[1] == outs[0]
    rows = {Path(r["path"]).name: r for r in outs[0]}
    assert rows["gpu001.log"]["path"] == "sim/kernel/gpu001.log"
    assert "n_events" in rows["gpu001.log"]
    assert rows["gpu9999.log"]["kind"] == "kernel"
    assert len(errs[1]) == len(errs[0])
    assert not [e for e in errs[1] if "parsing" in e or "Ray" in e]
    paths = [
        sorted(Store(db).table("sources").get_column("path").to_list())
        for db in ("a.duckdb", "b.duckdb")
    ]
    assert paths[0] == paths[1]
    assert "sim/kernel/gpu002.log" in paths[0]


def test_parse_is_said_after_the_options_are_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A bad --tz with --engine ray: one error line, no 'parsing ...' line before
    it (hand check: the zone is invalid, so nothing is parsed)."""
    pytest.importorskip("ray", reason="ray not installed")
    from relkit.cli import main

    (tmp_path / "n1.log").write_text("2025-03-04T10:22:05+0000 n1 kernel: up\n")
    code = main(
        [
            "ingest", "--db", str(tmp_path / "d.duckdb"), "--kind", "kernel",
            "--engine", "ray", "--out", str(tmp_path / "out"), "--tz", "Mars/Base",
            str(tmp_path / "n1.log"),
        ]
    )  # fmt: skip
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1
    assert len(err) == 1
    assert "Mars/Base" in err[0]


@pytest.mark.parametrize(
    "extra",
    [["--out", "o"], ["--address", "auto"], ["--workers", "2"]],
)
def test_ray_only_options_need_engine_ray(
    extra: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--out/--address/--workers without --engine ray would be ignored: a usage
    error, exit 2, one line naming --engine ray (hand check)."""
    from relkit.cli import main

    log = tmp_path / "n1.log"
    log.write_text("2025-03-04T10:22:05+0000 n1 kernel: up\n")
    db = tmp_path / "d.duckdb"
    with pytest.raises(SystemExit) as info:
        main(["ingest", "--db", str(db), "--kind", "kernel", *extra, str(log)])
    err = capsys.readouterr().err.strip().splitlines()
    assert info.value.code == 2
    assert len(err) == 1
    assert extra[0] in err[0]
    assert "--engine ray" in err[0]
    assert not db.exists()


def test_out_inside_an_input_directory_is_refused(tmp_path: Path) -> None:
    """--out inside (or equal to) an input directory: refused before Ray starts
    (hand check: the next directory ingest would read the Parquet as logs)."""
    pytest.importorskip("ray", reason="ray not installed")
    from relkit.distributed import ray_parse
    from relkit.errors import InvalidParameterError

    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "n1.log").write_text("2025-03-04T10:22:05+0000 n1 kernel: up\n")
    for out in (logs / "parsed", logs):
        with pytest.raises(InvalidParameterError, match="inside the input directory"):
            ray_parse(logs, out)
    with pytest.raises(InvalidParameterError, match="inside the input directory"):
        ray_parse(str(tmp_path / "**" / "*.log"), logs / "parsed")
    assert not (logs / "parsed").exists()


def test_glob_stays_within_one_path_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``dir/logs/*.log`` does not reach ``dir/logs/sub/x.log``; ``**`` does
    (expected: glob.glob, the shell's rule), for local paths and URIs."""
    monkeypatch.chdir(tmp_path)
    line = "2025-03-04T10:22:05+0000 n1 kernel: eth0: link up\n"
    for name in ("logs/a.log", "logs/b.log", "logs/sub/x.log", "logs/sub/deep/y.log"):
        Path(name).parent.mkdir(parents=True, exist_ok=True)
        Path(name).write_text(line)
    for pattern in ("logs/*.log", "logs/**/*.log", "logs/*/*.log", "logs/?.log"):
        expected = sorted(
            str(Path(g).resolve())
            for g in glob(pattern, recursive=True)  # noqa: PTH207
        )
        assert list_logs(pattern)[0] == expected, pattern
        uri = f"file://{tmp_path.resolve()}/{pattern}"
        assert list_logs(uri)[0] == [f"file://{e}" for e in expected], uri
    assert list_logs("logs/*.log")[0] == [
        str((tmp_path / "logs" / n).resolve()) for n in ("a.log", "b.log")
    ]


def test_parse_log_batch_bad_rows_are_named() -> None:
    """A null path is a refused source row saying so (not a file 'None'); a path
    twice with other bytes is one refused source row; twice with the same bytes
    is read once, with a note (hand check of each row)."""
    line = b"2025-03-04T10:22:05+0000 n1 kernel: NVRM: Xid (PCI:0000:9b:00): 119\n"
    batch = pa.table(
        {
            "path": [None, "a/n1.log", "a/n1.log", "b/n2.log", "b/n2.log"],
            "bytes": [line, line, line, line, line + line],
        }
    )
    out = parse_log_batch(batch, tz="UTC", host_from_filename=True).to_pylist()
    sources = [r for r in out if r["record"] == "source"]
    assert [r["path"] for r in sources] == [None, "a/n1.log", "b/n2.log"]
    assert "no path" in sources[0]["error"]
    assert sources[1]["error"] is None
    assert "read once" in sources[1]["note"]
    assert sources[1]["n_lines"] == 1
    assert "different contents" in sources[2]["error"]
    assert [r["record"] for r in out if r["path"] == "a/n1.log"].count("event") == 1
    assert not [r for r in out if r["path"] == "b/n2.log" and r["record"] != "source"]


def test_parse_log_batch_refuses_text_content() -> None:
    """Content decoded to text is a SchemaError naming the column, not a
    TypeError that kills the job (hand check)."""
    from relkit.errors import SchemaError

    batch = pa.table({"path": ["n1.log"], "content": ["text, not bytes"]})
    with pytest.raises(SchemaError, match="'content' must be binary"):
        parse_log_batch(batch)


def test_loader_names_a_stray_parquet_and_a_raw_log(
    archive: Path, tmp_path: Path
) -> None:
    """An unrelated Parquet file in the output is named as not relkit's parse
    output, and nothing is written; a raw log given to --kind parsed-logs is
    told apart from Parquet (hand check of the messages)."""
    files = sorted(archive.glob("gpu00[1-2].log"))
    pq.write_table(parse_log_batch(_batch(files), **OPTS), tmp_path / "p.parquet")
    pq.write_table(pa.table({"a": [1, 2]}), tmp_path / "stray.parquet")
    store = Store(":memory:")
    with pytest.raises(IngestError, match=r"stray\.parquet is not relkit's parse"):
        read_parsed_logs(store, tmp_path)
    assert store.table("sources").height == 0
    with pytest.raises(IngestError, match="is not Parquet: --kind parsed-logs loads"):
        read_parsed_logs(store, files[0])


def test_ingest_help_describes_parsed_logs(capsys: pytest.CaptureFixture[str]) -> None:
    """relkit ingest --help says what --kind parsed-logs reads (hand check)."""
    from relkit.cli import main

    with pytest.raises(SystemExit):
        main(["ingest", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "parsed-logs: the Parquet directory written by --engine ray" in text
