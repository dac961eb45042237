"""A directory of kernel logs, read as streams, against its files read one by one.

``read_kernel`` on a directory packs small files into shared blocks, classifies
and times them together and writes them in rounds (issue 13 §2). Each file must
still get exactly what it gets when read alone: the same events, spans,
rejects, ignored counts, source options, notes and errors, and the same source
ids in file-name order. The expected values here are the one-by-one reads.
"""

import gzip
import json
from pathlib import Path

import polars as pl
import pytest
from polars.testing import assert_frame_equal

from relkit.errors import IngestError, PartialIngestError
from relkit.ingest import kernel
from relkit.ingest.kernel import read_kernel
from relkit.simulate import simulate_cluster, write_simulation
from relkit.store import Store
from tests.test_simulate import boosted

TABLES = ("events", "log_spans", "rejects", "ignored")


def _one_by_one(folder: Path, **kw: object) -> tuple[Store, list[object]]:
    """Each file of the directory read alone, in the directory's order."""
    store = Store(":memory:")
    got: list[object] = []
    files = sorted(
        f
        for f in folder.rglob("*")
        if f.is_file() and f.suffix not in (".btime", ".md")
    )
    for f in files:
        try:
            got.extend(read_kernel(store, f, **kw))
        except IngestError as exc:
            got.append(exc)
    return store, got


def _as_directory(folder: Path, **kw: object) -> tuple[Store, list[object]]:
    store = Store(":memory:")
    try:
        got: list[object] = list(read_kernel(store, folder, **kw))
    except PartialIngestError as exc:
        got = [*exc.results, *exc.failures]
    return store, got


def _summary(items: list[object]) -> list[tuple]:
    """Results and errors by file, comparable across the two ways."""
    out = []
    for r in items:
        if isinstance(r, IngestError):
            out.append((Path(r.path).name, "error", r.reason, r.line_no))
        else:
            out.append(
                (
                    Path(r.path).name,
                    r.source_id,
                    r.n_lines,
                    r.n_loaded,
                    r.n_ignored,
                    r.n_rejected,
                    r.skipped,
                    r.note,
                    r.flag_counts,
                )
            )
    return sorted(out, key=lambda t: (t[0], str(t[1])))


def assert_same_store(a: Store, b: Store) -> None:
    for name in TABLES:
        assert_frame_equal(a.table(name), b.table(name), check_row_order=True)
    sa = a.table("sources").drop("ingested_at").sort("source_id")
    sb = b.table("sources").drop("ingested_at").sort("source_id")
    assert_frame_equal(sa.drop("options"), sb.drop("options"))
    assert [json.loads(o) for o in sa["options"]] == [
        json.loads(o) for o in sb["options"]
    ]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A simulated fleet's kernel logs: five framings, reboots, and for dmesg
    hosts a .log and a .syslog file of the same host."""
    out = tmp_path_factory.mktemp("fleet")
    write_simulation(simulate_cluster(boosted(nodes=30, days=5), seed=3), out)
    cmd = json.loads((out / "ground_truth.json").read_text())["ingest"]["kernel"]
    kw = {
        "tz": cmd.split("--tz ")[1].split()[0],
        "reference_date": cmd.split("--reference-date ")[1].split()[0],
        "host_from_filename": True,
    }
    return out / "kernel", kw


def test_simulated_fleet_equals_one_by_one(fleet: tuple[Path, dict]) -> None:
    """Every table and source row of the directory ingest equals the files'
    one-by-one ingest (source ids in name order too), and the events are many."""
    folder, kw = fleet
    a, got_a = _as_directory(folder, **kw)
    b, got_b = _one_by_one(folder, **kw)
    assert _summary(got_a) == _summary(got_b)
    assert_same_store(a, b)
    assert a.table("events").height > 100


def test_rounds_and_small_blocks_change_nothing(
    fleet: tuple[Path, dict], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds of 7 files and 64 KiB stream blocks give the same store."""
    folder, kw = fleet
    b, _ = _one_by_one(folder, **kw)
    monkeypatch.setattr(kernel, "ROUND_FILES", 7)
    from relkit.ingest import _kernel_read

    monkeypatch.setattr(_kernel_read, "BATCH_BYTES", 1 << 16)
    original = _kernel_read.StreamFrames.__init__

    def small(self, *args, **kwargs):
        kwargs["batch_bytes"] = 1 << 16
        original(self, *args, **kwargs)

    monkeypatch.setattr(_kernel_read.StreamFrames, "__init__", small)
    a, _ = _as_directory(folder, **kw)
    assert_same_store(a, b)


ISO = "2025-03-04T10:{m:02d}:00+00:00 {h} kernel: [{s:>10.6f}] {msg}\n"
XID = "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off"
NOISE = "eth0: link becomes ready"
HEADER = "NVRM: GPU at PCI:0000:3b:00: GPU-1f2e3d4c-0000-1111-2222-333344445555"


def _iso(host: str, msgs: list[str], start: int = 0) -> str:
    return "".join(
        ISO.format(m=start + i, h=host, s=100.0 + i, msg=m) for i, m in enumerate(msgs)
    )


def _dmesg(msgs: list[str], clock0: float = 5.0) -> str:
    return "".join(f"[{clock0 + i:>12.6f}] {m}\n" for i, m in enumerate(msgs))


@pytest.fixture
def hard(tmp_path: Path) -> Path:
    """Files that stress the streams: two logs naming one host, host-less dmesg
    logs with identical lines, gzip, a binary and empty files, identical bytes,
    a boot-time record, a rotated pair and one that needs a reference date."""
    d = tmp_path / "logs"
    d.mkdir()
    (d / "a.log").write_text(_iso("gpu1", [NOISE, XID, NOISE]))
    (d / "b.log").write_text(_iso("gpu1", [NOISE, NOISE, XID], start=30))
    same = [HEADER, XID, NOISE, XID]
    (d / "c.log").write_text(_dmesg(same))
    (d / "d.log").write_text(_dmesg([*same, NOISE]))
    (d / "e.log.gz").write_bytes(gzip.compress(_iso("gpu5", [XID, NOISE]).encode()))
    (d / "f.log").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 4)
    (d / "g.log").write_bytes(b"")
    (d / "h.log").write_text("\n   \n\n")
    (d / "i.log").write_text(_iso("gpu9", [XID]))
    (d / "i2.log").write_text(_iso("gpu9", [XID]))
    (d / "j.log").write_text(_dmesg([NOISE, XID], clock0=100.0))
    (d / "j.btime").write_text("btime 1741082400\n")
    (d / "k.log").write_text(_iso("gpu7", [NOISE, XID], start=40))
    (d / "k.log.1").write_text(_iso("gpu7", [XID, NOISE], start=0))
    (d / "l.log").write_text(
        "Mar  4 10:22:05 gpu8 kernel: NVRM: Xid (PCI:0000:3b:00): 79, off\n"
    )
    (d / "README.md").write_text("not a log\n")
    return d


@pytest.mark.parametrize(
    "kw",
    [
        {"host_from_filename": True, "tz": "UTC", "reference_date": "2025-03-05"},
        {"host_from_filename": True},
        {"host": "rack1", "tz": "UTC", "reference_date": "2025-03-05"},
        {},
    ],
    ids=["by-name", "no-tz", "one-host", "no-host"],
)
def test_hard_directory_equals_one_by_one(hard: Path, kw: dict) -> None:
    """Each file's result or error, and every stored row, equals what the file
    gives read alone (in name order), whatever the options: host-less events
    without a host are each file's own error, a shared host falls back to
    reading alone, the second of two identical files is skipped with the note
    naming the first, binary/empty files are refused with their reasons, and
    without --reference-date only the file that needs it fails."""
    a, got_a = _as_directory(hard, **kw)
    b, got_b = _one_by_one(hard, **kw)
    assert _summary(got_a) == _summary(got_b)
    assert_same_store(a, b)
    names = {t[0]: t for t in _summary(got_a)}
    assert names["f.log"][1] == "error"
    assert "ELF" in names["f.log"][2]
    assert names["g.log"][1] == "error"
    assert names["i2.log"][6] is True  # skipped: the same bytes as i.log


def test_interrupted_directory_keeps_finished_rounds(
    hard: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rounds of 4 files; the third round's parse is interrupted: the files of
    the first two rounds are committed whole, none of the third's."""
    monkeypatch.setattr(kernel, "ROUND_FILES", 4)
    calls = {"n": 0}
    real = kernel._parse_many

    def stop_third(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == 3:
            raise KeyboardInterrupt
        return real(*args, **kwargs)

    monkeypatch.setattr(kernel, "_parse_many", stop_third)
    store = Store(":memory:")
    with pytest.raises(KeyboardInterrupt):
        read_kernel(store, hard, host_from_filename=True, tz="UTC",
                    reference_date="2025-03-05")  # fmt: skip
    sources = store.table("sources")
    written = sorted(Path(p).name for p in sources["path"])
    # rounds: [a b c d] [e.log.gz f g h] [i i2 j k] ...: f, g, h are refused
    assert written == ["a.log", "b.log", "c.log", "d.log", "e.log.gz"]
    per_source = store.table("events").group_by("source_id").len()
    assert set(per_source["source_id"]) <= set(sources["source_id"])
    n = sources.select(pl.col("n_lines").sum()).item()
    counted = (
        store.table("events").height
        + store.table("rejects").height
        + store.table("ignored").select(pl.col("n_lines").sum()).item()
    )
    assert n == counted  # every line of a committed file is accounted


def test_cli_many_files_with_a_late_note_prints_every_row(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """150 files, the 121st a host-less dmesg Xid without a boot time (its
    result has a note, the 120 before none): every --format prints all 150
    rows and exits 0 (the table's column types come from every row, not the
    first 100; a reviewer's reproduction crashed with exit 3 after writing)."""
    from relkit.cli import main

    logs = tmp_path / "logs"
    logs.mkdir()
    for h in range(150):
        (logs / f"node{h:05d}.log").write_text(_iso(f"node{h:05d}", [NOISE] * 3))
    (logs / "node00120.log").write_text(_dmesg([XID]))
    db = str(tmp_path / "s.duckdb")
    argv = ["ingest", "--db", db, "--kind", "kernel", "--quiet", "--host-from-filename"]
    assert main([*argv, "--format", "json", str(logs)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert len(rows) == 150
    assert "no wall time" in rows[120]["note"]
    (logs / "node99999.log").write_text(_iso("node99999", [XID]))
    for fmt in ("table", "csv"):  # a re-run: 150 skipped (no id), one new
        db2 = str(tmp_path / f"s-{fmt}.duckdb")
        assert main([*argv[:2], db2, *argv[3:], str(logs)]) == 0
        capsys.readouterr()
        assert main([*argv[:2], db2, *argv[3:], "--format", fmt, str(logs)]) == 0
        assert "node99999" in capsys.readouterr().out


def test_file_ending_in_many_blank_lines_keeps_its_events(tmp_path: Path) -> None:
    """One Xid line then 100 blank lines (more than the 64 looked at first):
    1 event, 100 blank lines ignored, not 'only blank lines' (by hand)."""
    f = tmp_path / "n1.log"
    f.write_text(_iso("n1", [XID]) + "\n" * 100)
    [r] = read_kernel(Store(":memory:"), f)
    assert (r.n_lines, r.n_loaded, r.n_ignored) == (101, 1, 100)


def test_byte_order_mark_does_not_spoil_line_one(tmp_path: Path) -> None:
    """A UTF-8 BOM before an ISO syslog Xid line: the line keeps its host and
    time (2025-03-04T10:00:00Z, from the line), as without the BOM."""
    f = tmp_path / "bom.log"
    f.write_bytes(b"\xef\xbb\xbf" + _iso("a3", [XID]).encode())
    store = Store(":memory:")
    [r] = read_kernel(store, f)
    assert r.n_loaded == 1
    ev = store.table("events")
    assert ev["host"].to_list() == ["a3"]
    assert ev["ts"][0].isoformat() == "2025-03-04T10:00:00+00:00"


def test_small_compressed_file_of_large_text_is_read_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A gzip file small on disk whose text is larger than a stream takes
    (STREAM_FILE_BYTES, lowered to 2 kB here) is read alone, not held whole in
    memory; the directory still equals its files read one by one."""
    from relkit.ingest import _kernel_read

    monkeypatch.setattr(_kernel_read, "STREAM_FILE_BYTES", 2048)
    d = tmp_path / "logs"
    d.mkdir()
    (d / "big.log.gz").write_bytes(gzip.compress(_iso("g1", [NOISE] * 60).encode()))
    (d / "small.log").write_text(_iso("g2", [XID]))
    alone = []
    real = kernel._parse_log

    def spy(f, **kw):
        alone.append(f.name)
        return real(f, **kw)

    monkeypatch.setattr(kernel, "_parse_log", spy)
    a, got_a = _as_directory(d)
    assert alone == ["big.log.gz"]
    b, got_b = _one_by_one(d)
    assert _summary(got_a) == _summary(got_b)
    assert_same_store(a, b)


def test_cli_directory_lists_refused_files_in_name_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory of 3 files, the first (by name) binary: stderr names it as
    file 1/3 and the others 2/3 and 3/3; --format json lists them in the same
    order; exit 1 (a file could not be ingested)."""
    from relkit.cli import main

    d = tmp_path / "logs"
    d.mkdir()
    (d / "a.log").write_bytes(b"\x7fELF\x02\x01\x01" + bytes(range(256)) * 4)
    (d / "b.log").write_text(_iso("b", [XID]))
    (d / "c.log").write_text(_iso("c", [NOISE]))
    db = str(tmp_path / "s.duckdb")
    code = main(["ingest", "--db", db, "--kind", "kernel", "--format", "json", str(d)])
    out, err = capsys.readouterr()
    assert code == 1
    assert [Path(r["path"]).name for r in json.loads(out)] == [
        "a.log",
        "b.log",
        "c.log",
    ]
    lines = [x for x in err.splitlines() if "file " in x]
    assert "file 1/3 error" in lines[0]
    assert "a.log" in lines[0]
    assert "file 2/3" in lines[1]
    assert "b.log" in lines[1]
