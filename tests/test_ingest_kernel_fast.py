"""The kernel reader's fast path against the exact one, on other people's shapes.

The fast path (:func:`relkit.ingest.kernel.read_kernel`) tests each line for a
failure keyword by one scan of the block's bytes
(:func:`relkit.ingest._kernel_read.keyword_lines`), reads kernel clocks only to
number boots, and classifies and times the few candidate lines; the exact path
(``_parse(..., full=True)``) classifies and times every line. Both must give the
same events, rejects, ignored counts, host spans and log ends on the
simulator's logs: every framing, several reboots per host, rotated files, and
blocks small enough that boots and hosts straddle block boundaries.
"""

import json
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from relkit.ingest import _kernel_patterns as kp
from relkit.ingest import _kernel_read, kernel
from relkit.ingest._kernel_time import parse_reference_date
from relkit.simulate import simulate_cluster, write_simulation
from tests.test_simulate import boosted


@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    """A simulated fleet's kernel logs (five framings, reboots), with one host's
    log rotated into two files (``HOST.log.1`` older, ``HOST.log`` newer)."""
    out = tmp_path_factory.mktemp("sim")
    sim = simulate_cluster(boosted(nodes=24, days=6), seed=11)
    write_simulation(sim, out)
    assert len(sim.reboots) >= 3, "the simulation should reboot hosts"
    assert set(sim.framings) == {"iso", "rfc3339", "rfc3164", "dmesg_T", "dmesg_iso"}
    logs = sorted((out / "kernel").glob("*.log"))
    rotated = logs[0]
    lines = rotated.read_text().splitlines(keepends=True)
    half = len(lines) // 2
    rotated.with_name(rotated.name + ".1").write_text("".join(lines[:half]))
    rotated.write_text("".join(lines[half:]))
    truth = json.loads((out / "ground_truth.json").read_text())
    cmd = truth["ingest"]["kernel"]
    tz = cmd.split("--tz ")[1].split()[0]
    ref = cmd.split("--reference-date ")[1].split()[0]
    return out / "kernel", {"tz": tz, "ref": ref}


def _files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.is_file())


@pytest.mark.parametrize("batch_bytes", [None, 4096])
def test_fast_path_equals_exact_on_simulated_logs(
    simulated: tuple[Path, dict], batch_bytes: int | None, monkeypatch
) -> None:
    """Every simulated file (several framings, reboots, a rotated pair) gives the
    same events, rejects, ignored counts, spans and log ends on both paths; with
    4 KiB blocks, boots and hosts cross block boundaries. Expected: the exact
    path (every line classified and timed), the reference the fast path must
    equal (issue 13 §1)."""
    folder, opts = simulated
    if batch_bytes is not None:
        whole = _kernel_read.block_batches
        monkeypatch.setattr(
            _kernel_read, "block_batches", lambda p: whole(p, batch_bytes)
        )
    ref = parse_reference_date(folder, opts["ref"])
    n_events = 0
    for path in _files(folder):
        kw = {"tz": opts["tz"], "ref": ref, "host": _kernel_read.file_host(path)}
        fast = kernel._parse(path, **kw)
        full = kernel._parse(path, full=True, **kw)
        assert fast.n_lines == full.n_lines, path.name
        assert_frame_equal(fast.events, full.events)
        assert_frame_equal(fast.rejects, full.rejects)
        assert_frame_equal(fast.ignored, full.ignored)
        assert_frame_equal(fast.spans, full.spans)
        assert (fast.log_start_ts, fast.log_end_ts, fast.log_last_ts) == (
            full.log_start_ts,
            full.log_end_ts,
            full.log_last_ts,
        )
        n_events += fast.events.height
    assert n_events > 100  # the comparison covered real failure storms


def test_simulated_reboots_are_numbered_alike(simulated: tuple[Path, dict]) -> None:
    """The boot numbers the fast path gives the kernel-clock lines of each file
    (its BootTracker after the read) equal those of the exact path. Expected:
    the exact path's boots; the simulation reboots hosts, so some file has more
    than one boot."""
    folder, _ = simulated
    most = 0
    for path in _files(folder):
        host = _kernel_read.file_host(path)
        boots = {}
        for full in (False, True):
            tracker = kernel.BootTracker()
            parts = []
            for frame in _kernel_read.LineFrames(path, full=full, host=host):
                if full:  # every line's framing: its clock and host
                    c = kernel.classify_numbered(frame["line"], frame["line_no"])
                    m = c.filter(pl.col("mono_s").is_not_null()).select(
                        "line_no",
                        hkey=pl.col("host").fill_null(host),
                        mono="mono_s",
                    )
                else:  # the fast path's clock lines
                    m = kernel._clock_keys(frame.filter(pl.col("clock")), host)
                if m.height:
                    parts.append(tracker.number(m).select("line_no", "hkey", "boot_no"))
            boots[full] = pl.concat(parts) if parts else None
            most = max(most, max((b for _, b in tracker.last.values()), default=0))
        if boots[False] is None:
            assert boots[True] is None
            continue
        assert_frame_equal(boots[False], boots[True])
    assert most >= 1, "no simulated file holds a reboot"


_LINE = st.one_of(
    st.sampled_from(
        [
            "2025-03-04T10:22:05+0000 n1 kernel: [ 12.5] NVRM: Xid (PCI:0000:3b:00) 79",
            "Mar  4 10:22:05 n1 kernel: mlx5_core 0000:5c:00.0 eth0: Link down",
            "-- Boot 1f2e --",
            "  -- not a marker",
            "[    0.000000] Linux version 6.8.0-45-generic (buildd@lcy02)",
            "[    0.000000] Linux version x",
            "sshd[1]: Accepted publickey for root",
            "EDAC MC0: 1 CE memory read error",
            "Machine check events logged",
            "",
            "   ",
        ]
    ),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=40),
    st.text(alphabet="XidNVRM \r\x00-é", max_size=20),
)


@settings(max_examples=200, deadline=None)
@given(st.lists(_LINE, min_size=1, max_size=30))
def test_keyword_scan_agrees_with_the_regex(lines: list[str]) -> None:
    """keyword_lines (one Hyperscan pass over a block's bytes) marks exactly the
    lines the keyword regex (:data:`kp.KEYWORDS`, polars, line by line) marks, or
    declines (None) for blocks it cannot map (CR, NUL, non-ASCII bytes).
    Expected: the regex on each line of split_block's lines."""
    data = ("\n".join(lines) + "\n").encode()
    split = _kernel_read.split_block(data)
    got = _kernel_read.keyword_lines(data, split)
    if got is None:
        assert b"\r" in data or b"\x00" in data or not data.isascii()
        return
    assert got.to_list() == split.str.contains(kp.KEYWORDS).to_list()


def test_keyword_scan_maps_a_real_block() -> None:
    """On a public dmesg excerpt (GPUd's Xid 119 fixture, plain ASCII), the scan
    maps every line and agrees with the regex; the fixture holds Xid lines."""
    path = Path(__file__).parents[1] / "datasets" / "gpud" / "dmesg-with-xid-119.log"
    if not path.exists():
        pytest.skip("fixture absent")
    data = path.read_bytes()
    if not data.endswith(b"\n"):
        data += b"\n"
    split = _kernel_read.split_block(data)
    got = _kernel_read.keyword_lines(data, split)
    if got is None:
        pytest.skip("fixture is not plain ASCII")
    want = split.str.contains(kp.KEYWORDS)
    assert got.to_list() == want.to_list()
    assert want.sum() > 0


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.lists(
            st.tuples(st.sampled_from(["a", "b", "c", ""]), st.integers(0, 30)),
            min_size=1,
            max_size=40,
        ),
        min_size=1,
        max_size=4,
    )
)
def test_boot_numbers_by_runs_equal_the_group_by(batches: list) -> None:
    """BootTracker.number walking runs of one host in Python gives the boots the
    group-by gives (the reference: a host's boot grows where its clock falls
    below its previous clock line), batch after batch with carried state."""
    from relkit.ingest import _kernel_time

    got = {}
    for runs_in_python in (10**9, -1):  # always runs / always the group-by
        old = _kernel_time._RUNS_IN_PYTHON
        _kernel_time._RUNS_IN_PYTHON = runs_in_python
        try:
            tracker = kernel.BootTracker()
            out, line = [], 0
            for batch in batches:
                m = pl.DataFrame(
                    {
                        "line_no": list(range(line + 1, line + 1 + len(batch))),
                        "hkey": [h for h, _ in batch],
                        "mono": [float(x) for _, x in batch],
                    }
                )
                line += len(batch)
                out.extend(tracker.number(m).get_column("boot_no").to_list())
            got[runs_in_python] = (out, dict(tracker.last))
        finally:
            _kernel_time._RUNS_IN_PYTHON = old
    assert got[10**9] == got[-1]
