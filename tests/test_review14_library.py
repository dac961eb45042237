"""Issue 14 §5 review: library defects that were silent or misleading.

Each test names where its expected value comes from (a hand computation in the
docstring, or a peer library computed in the test).
"""

import re
import subprocess
import sys
import warnings
from pathlib import Path

import duckdb
import polars as pl
import pytest

import relkit
import relkit.datasets
from relkit import answers, observation, repairable
from relkit.checkpoint import (
    Component,
    checkpoint_decision,
    renewal_ettr,
    renewal_optimum,
)
from relkit.display import format_value
from relkit.errors import (
    IngestError,
    InvalidParameterError,
    RelkitError,
    RelkitWarning,
    SchemaError,
)
from relkit.ingest import read_path
from relkit.jobs import JobInterruptions
from relkit.simulate import simulate_cluster, simulation_preset
from relkit.store import Store, locked_store_message


def _trend_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    ev = pl.DataFrame({"unit_id": ["a"] * 5, "time_h": [1.0, 2, 4, 8, 16]})
    un = pl.DataFrame({"unit_id": ["a"], "exit_h": [100.0]})
    return ev, un


@pytest.mark.parametrize("alpha", [0.95, 0.9, 0.51, 0.0, 1.0])
def test_trend_tests_refuses_a_confidence_level_as_alpha(alpha: float) -> None:
    """alpha 0.95 would name a trend at p = 0.8 (review: LANL systems 5, 6).

    A significance level lies in (0, 0.5]; the message names the likely mix-up
    with --confidence.
    """
    ev, un = _trend_frames()
    with pytest.raises(InvalidParameterError, match=r"significance level.*confidence"):
        repairable.trend_tests(ev, un, alpha=alpha)


def test_trend_tests_alpha_boundary_and_laplace_value() -> None:
    """alpha 0.5 is accepted; the Laplace statistic is hand-derived.

    Times 1, 2, 4, 8, 16 in (0, 100]: U = (sum t / n - T/2) / (T sqrt(1/(12 n)))
    = (6.2 - 50) / (100 * sqrt(1/60)) = -43.8 / 12.9099 = -3.3927 (improving).
    """
    ev, un = _trend_frames()
    out = repairable.trend_tests(ev, un, alpha=0.5)
    lap = out.filter(pl.col("test") == "laplace")
    assert lap["statistic"][0] == pytest.approx(-3.3927, abs=1e-4)
    assert lap["direction"][0] == "improving"


def test_trend_by_refuses_alpha_095_on_lanl(lanl_tables) -> None:
    """On LANL, trend_by(alpha=0.95) used to label systems 5 and 6
    "deteriorating" at p 0.67 / 0.80 (review reproduction); now refused."""
    events, assets = lanl_tables
    with pytest.raises(InvalidParameterError, match="did you mean --confidence"):
        answers.trend_by(events, assets, by=["system"], alpha=0.95)


# --- 2, 3: a file of the wrong kind; a directory that fails part-way ---------


def _synthetic() -> Path:
    return relkit.datasets.path("synthetic")


def test_jsonl_read_as_kernel_warns_and_names_checkpoints(tmp_path: Path) -> None:
    """The bundled run's checkpoints.jsonl read as a kernel log: every line is
    ignored (review: 0 loaded, 7,879 ignored, silent). Expected: a warning that
    names JSON Lines and --kind checkpoints; the counts are the file's lines."""
    f = _synthetic() / "checkpoints.jsonl"
    n_lines = sum(1 for line in f.read_text().splitlines() if line.strip())
    with Store(tmp_path / "k.duckdb") as store, pytest.warns(RelkitWarning) as rec:
        [r] = read_path(store, f, kind="kernel")
    assert (r.n_loaded, r.n_rejected, r.n_ignored) == (0, 0, n_lines)
    text = " ".join(str(w.message) for w in rec)
    assert "JSON Lines" in text
    assert "--kind checkpoints" in text


def test_sacct_dump_read_as_kernel_warns_and_names_sacct(tmp_path: Path) -> None:
    """sacct.psv under a .log name read as kernel: the warning names the pipe
    header's first columns (JobID, JobIDRaw, JobName: the file's first line)."""
    f = tmp_path / "s.log"
    f.write_bytes((_synthetic() / "sacct.psv").read_bytes())
    with Store(tmp_path / "k.duckdb") as store, pytest.warns(RelkitWarning) as rec:
        [r] = read_path(store, f, kind="kernel")
    assert r.n_loaded == 0
    text = " ".join(str(w.message) for w in rec)
    assert "pipe-separated" in text
    assert "JobID, JobIDRaw, JobName" in text
    assert "--kind sacct" in text


def test_kernel_directory_leaves_out_data_tables_and_says_so(tmp_path: Path) -> None:
    """A dir of gpu001.log, gpu002.log, sacct.psv, assets.csv: only the two logs
    are read (review: sacct.psv was read as a log, .csv skipped silently); the
    warning names both tables. The quiet real logs (every line ignored, no
    NVIDIA lines) get no wrong-kind warning."""
    d = tmp_path / "d"
    d.mkdir()
    src = _synthetic()
    for name in ("kernel/gpu001.log", "kernel/gpu002.log", "sacct.psv", "assets.csv"):
        (d / Path(name).name).write_bytes((src / name).read_bytes())
    with Store(tmp_path / "k.duckdb") as store, pytest.warns(RelkitWarning) as rec:
        results = read_path(store, d, kind="kernel")
    assert [Path(r.path).name for r in results] == ["gpu001.log", "gpu002.log"]
    messages = [str(w.message) for w in rec]
    assert len(messages) == 1, messages
    assert "assets.csv, sacct.psv" in messages[0]


def test_quiet_syslog_alone_gives_no_warning(tmp_path: Path) -> None:
    """A real kernel log with no failure lines is a quiet node: no warning."""
    with (
        Store(tmp_path / "k.duckdb") as store,
        warnings.catch_warnings(),
    ):
        warnings.simplefilter("error", RelkitWarning)
        [r] = read_path(store, _synthetic() / "kernel" / "gpu001.log", kind="kernel")
    assert r.n_loaded == 0
    assert r.n_ignored == r.n_lines > 0


def test_directory_failing_part_way_says_what_was_kept(tmp_path: Path) -> None:
    """d/a.psv (sacct) then d/b.csv (assets) as --kind sacct: b.csv fails and
    a.psv stays loaded. The error says "1 of 2 files ... kept"; the jobs kept
    equal a.psv ingested alone into another store (peer: the same reader)."""
    d = tmp_path / "d"
    d.mkdir()
    (d / "a.psv").write_bytes((_synthetic() / "sacct.psv").read_bytes())
    (d / "b.csv").write_bytes((_synthetic() / "assets.csv").read_bytes())
    with Store(tmp_path / "m.duckdb") as store:
        with pytest.raises(IngestError, match=r"1 of 2 files .* \(kept; re-run"):
            read_path(store, d, kind="sacct", tz="UTC")
        kept = store.table("jobs").height
    with Store(tmp_path / "alone.duckdb") as store:
        read_path(store, d / "a.psv", kind="sacct", tz="UTC")
        assert kept == store.table("jobs").height > 0


# --- 4: the store: held by another process, damaged, newer ------------------

_HOLD = (
    "import sys, time, relkit; s = relkit.Store(sys.argv[1]); "
    "print('held', flush=True); time.sleep(60)"
)


@pytest.mark.parametrize("read_only", [False, True])
def test_store_held_by_another_process_names_pid_and_fix(
    tmp_path: Path, *, read_only: bool
) -> None:
    """Another process holds Store(path) for writing (DuckDB allows one writer);
    opening it again gives one sentence naming that process's PID (the child's
    pid, known here) and store.close(), not DuckDB's raw lock text."""
    db = tmp_path / "lock.duckdb"
    Store(db).close()
    child = subprocess.Popen(
        [sys.executable, "-c", _HOLD, str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "held"
        with pytest.raises(RelkitError) as err:
            Store(db, read_only=read_only)
    finally:
        child.kill()
        child.wait()
        if child.stdout is not None:
            child.stdout.close()
    text = str(err.value)
    assert f"PID {child.pid}" in text
    assert "store.close()" in text
    assert "read_only=True" in text
    assert "Could not set lock" not in text


def test_locked_store_message_leaves_other_errors_alone() -> None:
    """Only DuckDB's lock conflict is translated (None otherwise)."""
    assert locked_store_message("IO Error: disk full", "x.duckdb", writing=True) is None


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        ("DROP TABLE events", "table events is missing"),
        ("ALTER TABLE jobs DROP COLUMN state", "table jobs lacks column(s) state"),
    ],
)
@pytest.mark.parametrize("read_only", [True, False])
def test_damaged_store_is_a_schema_error(
    tmp_path: Path, damage: str, expected: str, *, read_only: bool
) -> None:
    """A table or column of the schema contract dropped by hand: SchemaError
    naming it on open (read-only, as `relkit mtbf` opens it, and for writing,
    where CREATE TABLE IF NOT EXISTS would otherwise hide the loss)."""
    db = tmp_path / "dmg.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute(damage)
    con.close()
    with pytest.raises(SchemaError, match=re.escape(expected) + ".*re-ingest"):
        Store(db, read_only=read_only)
    con = duckdb.connect(str(db), read_only=True)  # left as it was
    tables = {r[0] for r in con.execute("SHOW TABLES").fetchall()}
    con.close()
    assert ("events" in tables) == ("events" not in damage)


def test_store_of_a_newer_schema_says_upgrade(tmp_path: Path) -> None:
    """schema_version 99 > SCHEMA_VERSION: 'written by a newer relkit'."""
    db = tmp_path / "new.duckdb"
    Store(db).close()
    con = duckdb.connect(str(db))
    con.execute("UPDATE relkit_meta SET value = '99' WHERE key = 'schema_version'")
    con.close()
    for read_only in (True, False):
        with pytest.raises(SchemaError, match=r"newer relkit \(schema 99.*upgrade"):
            Store(db, read_only=read_only)


# --- 5: (shape, scale_h, n_units) components cannot be swapped silently -------

_KW = {"cost_h": 5 / 60, "restart_h": 10 / 60}


def test_component_named_tuple_gives_the_daly_optimum() -> None:
    """Component(shape=1, scale_h=24, n_units=1): exponential, mean 24 h, w 5
    min, R 10 min: Daly 2006 Fig. 3's exact optimum 116.69 min (the Lambert-W
    interval of relkit.checkpoint.exact_interval_h, the same as the plain
    tuple (1.0, 24.0, 1)). doi:10.1016/j.future.2004.11.016"""
    named = renewal_optimum(components=[Component(1.0, 24.0, 1)], **_KW)
    plain = renewal_optimum(components=[(1.0, 24.0, 1)], **_KW)
    assert named.interval_h * 60 == pytest.approx(116.69, abs=0.01)
    assert named == plain
    assert Component(0.7, 5000.0, 1024)._fields == ("shape", "scale_h", "n_units")


_HALF = [(0.7, 5000.0, 256.5)]
_DECIDE = {"n_failures": 20, "exposure_h": 200.0, "cost_h": 0.05, "restart_h": 0.1}


@pytest.mark.parametrize(
    "call",
    [
        lambda: renewal_ettr(1.0, components=_HALF, **_KW),
        lambda: renewal_optimum(components=_HALF, **_KW),
        lambda: checkpoint_decision(**_DECIDE, model=_HALF),
    ],
    ids=["ettr", "optimum", "decision"],
)
def test_fractional_n_units_is_refused_naming_the_order(call) -> None:
    """n_units 256.5 is no number of GPUs: refused, the message names the
    order (shape, scale_h, n_units), in all three public entry points."""
    with pytest.raises(InvalidParameterError, match=r"\(shape, scale_h, n_units\)"):
        call()


@pytest.mark.parametrize(
    ("comps", "doubt"),
    [
        ([(24.0, 1.0, 1)], "shape 24 is outside [0.05, 20]"),
        ([(1.0, 1, 24.0)], "n_units 24.0 is a float while scale_h 1 is not"),
    ],
)
def test_swapped_component_warns(comps: list, doubt: str) -> None:
    """The review's swaps of (1.0, 24.0, 1): shape 24 (ETTR 0.713 instead of
    0.9) and scale 1 h with 24.0 units (ETTR 0.011). Both still compute (the
    values are valid) but warn naming the order."""
    with pytest.warns(RelkitWarning, match=re.escape(doubt) + ".*order"):
        renewal_ettr(1.0, components=comps, **_KW)


def test_good_components_do_not_warn() -> None:
    """Ordinary fits (shape 0.7, float scale, int or integral-float n) are
    quiet, e.g. the per-mode plan's (shape, scale_h, 512.0)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RelkitWarning)
        renewal_ettr(1.0, components=[(0.7, 5000.0, 512.0), (1.2, 900.0, 8)], **_KW)
        checkpoint_decision(
            n_failures=20,
            exposure_h=200.0,
            cost_h=0.05,
            restart_h=0.1,
            model=[Component(0.7, 10.0, 1)],
            scale=2.5,
        )


# --- 6: #16, a CSV given as --kind sacct -------------------------------------


def test_lanl_csv_as_sacct_is_named_a_csv_not_fixed_width(tmp_path: Path) -> None:
    """The bundled LANL CSV (header: System,machine type,nodes,...; its first
    line) read as sacct was called "fixed-width sacct output" (#16). Expected:
    a comma-separated table, its first columns, and --kind lanl."""
    with (
        Store(tmp_path / "s.duckdb") as store,
        pytest.raises(IngestError) as err,
    ):
        read_path(store, relkit.datasets.path("lanl"), kind="sacct", tz="UTC")
    text = str(err.value)
    assert "comma-separated" in text
    assert "(System, machine type, nodes, ...)" in text
    assert "--kind lanl" in text
    assert "fixed-width" not in text


# --- 7: #23, readable HTML and named results ---------------------------------


def test_mtbf_bounds_html_writes_hours_whole_with_commas() -> None:
    """mtbf_bounds(3, exposure_h=1e6): MTBF = 1e6 / 3 = 333,333.3 h (hand), shown
    as 333,333 (was 3.333e+05); the chi-square bounds come from scipy."""
    from scipy import stats

    html = relkit.mtbf_bounds(3, exposure_h=1e6)._repr_html_()
    assert "<td>333,333</td>" in html
    lower = 2e6 / stats.chi2.ppf(0.975, 8)  # time-terminated: 2T / chi2(2n+2)
    assert f"<td>{lower:,.0f}</td>" in html
    assert "e+0" not in html
    assert format_value(2140.0) == "2,140"
    assert format_value(2.5e-5) == "2.5e-05"


def test_job_interruptions_html_counts() -> None:
    """Three attempts of two jobs, one interruption (hand counts)."""
    ji = JobInterruptions(
        pl.DataFrame({"job_id": ["1", "1", "2"], "attempt": [1, 2, 1]}),
        pl.DataFrame({"job_id": ["1"], "attempt": [1]}),
    )
    html = ji._repr_html_()
    for field, value in (("jobs", 2), ("attempts", 3), ("interruptions", 1)):
        assert f"{field}</th><td>{value}</td>" in html


def test_observation_html_and_named_tuples_on_lanl(lanl_tables) -> None:
    """On LANL: Observation shows its counts; place_failures and
    to_service_clock return named tuples. Placing the kept failures again keeps
    them all (excluded empty); the clock moves kept + prior failures."""
    events, assets = lanl_tables
    obs = observation.observe(events, assets)
    html = obs._repr_html_()
    assert f"failures kept</th><td>{obs.failures.height:,}</td>" in html
    assert f"service windows</th><td>{obs.windows.height:,}</td>" in html
    placed = observation.place_failures(obs.failures, obs.windows)
    assert isinstance(placed, observation.PlacedFailures)
    assert placed.kept.height == obs.failures.height
    assert placed.excluded.height == 0
    clock = observation.to_service_clock(obs.windows, obs.failures, obs.prior_failures)
    assert isinstance(clock, observation.ServiceClock)
    units, moved = clock  # still unpacks
    assert moved.height == obs.failures.height + obs.prior_failures.height
    assert units is clock.units


def test_simulation_html_counts() -> None:
    """A 2-day, 16-node rsc1 run: the summary's counts are the frames' heights."""
    cfg = simulation_preset("rsc1", nodes=16, days=2)
    sim = simulate_cluster(cfg, seed=3)
    html = sim._repr_html_()
    assert "nodes</th><td>16</td>" in html
    assert f"incidents</th><td>{sim.incidents.height:,}</td>" in html
    assert f"jobs</th><td>{sim.jobs.height:,}</td>" in html
