"""Progress of long kernel-log reads: what it says, when, and --quiet."""

import json
from pathlib import Path

import pytest

from relkit.cli import main
from relkit.ingest import _progress, read_path
from relkit.ingest._progress import ProgressMeter
from relkit.store import Store

LINE = "2025-03-04T10:22:{s:02d}+0000 node{h} kernel: [ {s}.5] eth0: link ready\n"
XID = "2025-03-04T10:23:00+0000 node{h} kernel: NVRM: Xid (PCI:0000:3b:00): 79, off\n"


class FakeClock:
    """Seconds that advance by ``step`` at each reading."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def test_meter_says_share_rate_and_time_left() -> None:
    """Hand computation: 4 s after the start, 250 MB of 1 GB and 2 million lines
    read: 25 %, 2,000,000 / 4 s = 500,000 lines/s, 250 MB / 4 s = 62.5 MB/s
    (printed 62, no decimals above 10), and 750 MB at 62.5 MB/s = 12 s left."""
    said: list[str] = []
    clock = FakeClock(4.0)  # start at 4, the update reads 8: 4 s in
    meter = ProgressMeter(said.append, "big.log", total_bytes=10**9, clock=clock)
    meter.update(n_bytes=250 * 10**6, n_lines=2_000_000)
    assert said == [
        "big.log: 2,000,000 lines, 250 MB of 1.00 GB (25%); 500,000 lines/s, "
        "62 MB/s, about 12 s left"
    ]


def test_meter_is_quiet_within_two_seconds_and_when_silenced() -> None:
    """A read shorter than EVERY_S says nothing; say=None says nothing ever."""
    said: list[str] = []
    meter = ProgressMeter(said.append, "f", clock=FakeClock(0.5))
    for k in range(3):  # 0.5, 1.0, 1.5 s after the start
        meter.update(n_bytes=k, n_lines=k)
    assert said == []
    ProgressMeter(None, "f", clock=FakeClock(10)).update(n_bytes=1, n_lines=1)


def test_directory_progress_counts_files_and_bytes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the 2 s throttle off, a directory of 3 per-host files reports files
    done of 3 and its bytes; the last message has 3/3 files, every line and
    100 % of the bytes (sum of the files' sizes)."""
    monkeypatch.setattr(_progress, "EVERY_S", 0.0)
    for h in range(3):
        text = "".join(LINE.format(s=s, h=h) for s in range(5)) + XID.format(h=h)
        (tmp_path / f"node{h}.log").write_text(text)
    total = sum(f.stat().st_size for f in tmp_path.iterdir())
    said: list[str] = []
    with Store(":memory:") as store:
        got = read_path(
            store,
            tmp_path,
            kind="kernel",
            host_from_filename=True,
            progress=said.append,
        )
    assert [r.n_loaded for r in got] == [1, 1, 1]
    assert said, "no progress said"
    assert said[-1].startswith(f"{tmp_path}: 3/3 files, 18 lines, ")
    assert f"{_progress._size(total)} of {_progress._size(total)} (100%)" in said[-1]


def _fleet(folder: Path, n: int) -> None:
    for h in range(n):
        (folder / f"node{h}.log").write_text(
            LINE.format(s=1, h=h) + XID.format(h=h) + LINE.format(s=2, h=h)
        )


def test_cli_directory_of_many_files_is_one_line_and_json_lists_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """25 files (> 20): stderr has one summary line naming 25 files read and
    75 lines (25 x 3, counted by hand), and no line per file (progress lines
    may come, on a slow machine); --format json lists all
    25 files on stdout; a second run says 25 skipped."""
    logs = tmp_path / "logs"
    logs.mkdir()
    _fleet(logs, 25)
    db = str(tmp_path / "s.duckdb")
    argv = ["ingest", "--db", db, "--kind", "kernel", "--host-from-filename"]
    assert main([*argv, "--format", "json", str(logs)]) == 0
    out, err = capsys.readouterr()
    rows = json.loads(out)
    assert len(rows) == 25
    assert sum(r["n_events"] for r in rows) == 25
    lines = [x for x in err.splitlines() if x.strip()]
    summary = [x for x in lines if "file(s) read" in x]
    assert len(summary) == 1, err
    assert not any(".log:" in x for x in lines), err  # no line per file
    assert "25 file(s) read, 0 skipped" in summary[0]
    assert "75 lines: 25 loaded, 50 ignored, 0 rejected" in summary[0]
    assert main([*argv, str(logs)]) == 0
    _, err = capsys.readouterr()
    assert "0 file(s) read, 25 skipped (already ingested)" in err


def test_cli_quiet_says_nothing_on_success(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """--quiet: no progress and no per-file line on stderr (throttle off, so the
    progress would otherwise be said); stdout still has the table."""
    monkeypatch.setattr(_progress, "EVERY_S", 0.0)
    logs = tmp_path / "logs"
    logs.mkdir()
    _fleet(logs, 3)
    db = str(tmp_path / "s.duckdb")
    argv = ["ingest", "--db", db, "--kind", "kernel", "--host-from-filename"]
    assert main([*argv, "--quiet", str(logs)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert "node2.log" in out
    # without --quiet the same run (on a new store) says where it is
    assert main([*argv, "--db", str(tmp_path / "t.duckdb"), str(logs)]) == 0
    _, err = capsys.readouterr()
    assert "3/3 files" in err
