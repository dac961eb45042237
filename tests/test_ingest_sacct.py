"""Slurm ``sacct -P`` ingest: cases C08, C09, C10 of shared/cases/README.md.

``tests/data/sacct_c08.psv`` and ``sacct_c09.psv`` are copies of the case inputs.
"""

import gzip
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from shared_paths import SHARED

from relkit.errors import IngestError, RelkitError
from relkit.ingest import parse_job_ids, read_file, read_sacct
from relkit.store import Store

DATA = Path(__file__).parent / "data"
C08 = DATA / "sacct_c08.psv"
C09 = DATA / "sacct_c09.psv"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def c08() -> Store:
    store = Store(":memory:")
    read_sacct(store, C08, tz="UTC")
    return store


def test_ref_c08_rows_steps_and_nodes(c08: Store) -> None:
    """C08: 21 rows = 15 allocation rows + 6 step rows, nothing rejected."""
    jobs, steps = c08.table("jobs"), c08.table("job_steps")
    assert (jobs.height, steps.height, c08.table("rejects").height) == (15, 6, 0)
    src = c08.table("sources").row(0, named=True)
    assert (src["n_lines"], src["n_loaded"], src["n_rejected"]) == (21, 21, 0)
    # the 6 steps attach to their jobs; 4101's CANCELLED steps stay steps
    assert sorted(set(steps["job_id"])) == ["4100", "4101"]
    assert steps.filter(job_id="4101", state="CANCELLED")["step"].sort().to_list() == [
        "0",
        "batch",
    ]
    assert steps.filter(job_id="4100", step="extern")["attempt"].to_list() == [1]


def test_ref_c08_job_id_decomposition(c08: Store) -> None:
    """C08: ``4108_7`` -> (4108, 7), ``4120+1`` -> (4120, het 1), ids stay text."""
    jobs = c08.table("jobs")
    row = jobs.filter(job_id="4108_7").row(0, named=True)
    assert (row["base_job_id"], row["array_task"], row["job_id_raw"]) == (
        "4108",
        "7",
        "4115",
    )
    het = jobs.filter(job_id="4120+1").row(0, named=True)
    assert (het["base_job_id"], het["het_offset"], het["job_id_raw"]) == (
        "4120",
        1,
        "4121",
    )
    pending = jobs.filter(job_id="4108_[8-15%4]").row(0, named=True)
    assert pending["array_pending"] == "8-15%4"


def test_ref_c08_pending_array_range() -> None:
    """C08: ``4108_[8-15%4]`` -> pending tasks 8-15 (8 tasks, at most 4 at once);
    ``4100.extern`` -> step ``extern``."""
    out = parse_job_ids(pl.Series(["4108_[8-15%4]", "4100.extern", "4120+0.0", "x1"]))
    assert out.row(0, named=True)["array_pending_n"] == 8
    assert out.row(0, named=True)["array_max_running"] == 4
    assert out.row(1, named=True)["step"] == "extern"
    assert out.row(2, named=True)["het_offset"] == 0
    assert out["valid"].to_list() == [True, True, True, False]


def test_ref_c08_states_normalised(c08: Store) -> None:
    """C08: ``CANCELLED by 12345`` -> CANCELLED with uid 12345; REQUEUED then
    COMPLETED under one JobID are attempts 1 and 2 of job 4106."""
    jobs = c08.table("jobs")
    cancelled = jobs.filter(job_id="4102").row(0, named=True)
    assert (cancelled["state"], cancelled["cancelled_by_uid"]) == ("CANCELLED", "12345")
    assert jobs.filter(job_id="4106").select("attempt", "state").rows() == [
        (1, "REQUEUED"),
        (2, "COMPLETED"),
    ]
    assert set(jobs["state"]) == {
        "COMPLETED",
        "NODE_FAIL",
        "CANCELLED",
        "OUT_OF_MEMORY",
        "TIMEOUT",
        "PREEMPTED",
        "REQUEUED",
        "PENDING",
        "FAILED",
        "BOOT_FAIL",
        "RUNNING",
    }


def test_ref_c08_nulls_never_zero(c08: Store) -> None:
    """C08: 4107 and the 4108 pending range have NULL start/end and no runtime
    (sacct prints Elapsed 00:00:00); BOOT_FAIL keeps its real 0 s; 4123 is
    running with End Unknown and Elapsed 03:12:40."""
    jobs = c08.table("jobs")
    for job in ("4107", "4108_[8-15%4]"):
        row = jobs.filter(job_id=job).row(0, named=True)
        assert (row["start_ts"], row["end_ts"], row["elapsed_s"]) == (None, None, None)
    assert jobs.filter(job_id="4122")["elapsed_s"].to_list() == [0.0]
    running = jobs.filter(job_id="4123").row(0, named=True)
    assert running["end_ts"] is None
    assert running["elapsed_s"] == 3 * 3600 + 12 * 60 + 40


def test_ref_c08_node_lists(c08: Store) -> None:
    """C08: 4101 ran on gpu005-gpu012; PENDING ``None assigned`` has no host."""
    nodes = c08.table("job_nodes")
    assert nodes.filter(job_id="4101")["host"].to_list() == [
        f"gpu{i:03d}" for i in range(5, 13)
    ]
    assert nodes.filter(job_id="4107").height == 0


def test_ref_c08_fixed_width_refused(tmp_path: Path) -> None:
    """C08 / NVIDIA cloudai PR #461: fixed-width output (``CANCELLED+``) is
    refused with a message asking for -P."""
    f = tmp_path / "fixed.txt"
    f.write_text(
        "JobID           JobName      State ExitCode\n"
        "------------ ---------- ---------- --------\n"
        "4102               train CANCELLED+      0:0\n"
    )
    with pytest.raises(IngestError, match=r"fixed-width.*sacct -P"):
        read_sacct(Store(":memory:"), f, tz="UTC")


def test_truncated_state_in_parsable_output_rejected(tmp_path: Path) -> None:
    f = tmp_path / "s.psv"
    f.write_text("JobID|State\n1|CANCELLED+\n2|COMPLETED\n")
    store = Store(":memory:")
    result = read_sacct(store, f)
    assert (result.n_loaded, result.n_rejected) == (1, 1)
    reason = store.table("rejects")["reason"][0]
    assert "truncated state 'CANCELLED+'" in reason
    assert "sacct -P" in reason


def test_ref_c09_durations() -> None:
    """C09 table (cases/README.md), seconds: Elapsed 0, 44 702, 101 915,
    3 888 001, 2 764 799, NULL; TotalCPU 0.005, 178 813, 2 730.5, 7 776 000,
    59.999, NULL; Timelimit 600, 86 400, 172 800, UNLIMITED (+inf here),
    Partition_Limit (NULL), NULL. Blanks are NULL, never 0."""
    store = Store(":memory:")
    read_sacct(store, C09)  # no time columns: no --tz needed
    rows = store.table("jobs").select(
        "job_id", "elapsed_s", "total_cpu_s", "timelimit_s"
    )
    assert rows.rows() == [
        ("5001", 0.0, pytest.approx(0.005), 600.0),
        ("5002", 44702.0, 178813.0, 86400.0),
        ("5003", 101915.0, 2730.5, 172800.0),
        ("5004", 3888001.0, 7776000.0, float("inf")),
        ("5005", 2764799.0, pytest.approx(59.999), None),
        ("5006", None, None, None),
    ]


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("1-04:18", "unparseable duration"),
        ("00:61:00", "unparseable duration"),
        ("1a:00:00", "unparseable duration"),
        ("-1:00:00", "unparseable duration"),
        ("UNLIMITED", "unparseable duration"),  # only Timelimit may say so
    ],
)
def test_bad_durations_rejected(tmp_path: Path, value: str, reason: str) -> None:
    """Our rules: a day part needs HH:MM:SS; minutes and seconds below 60."""
    f = tmp_path / "d.psv"
    f.write_text(f"JobID|Elapsed\n1|{value}\n")
    store = Store(":memory:")
    assert read_sacct(store, f).n_rejected == 1
    assert reason in store.table("rejects")["reason"][0]


def test_ref_c10_late_rows_not_sniffed(tmp_path: Path) -> None:
    """C10: 30 002 rows all loaded; ``130000_7`` stays (130000, 7) with elapsed
    94 715 s (DuckDB's sniffer reads it as 1300007 and Elapsed as TIME); the
    PENDING job has NULL times."""
    gen = SHARED / "cases" / "C10-duckdb-sniffer-late-rows.py"
    if not gen.exists():
        pytest.skip("shared cases not present")
    out = tmp_path / "c10.psv"
    subprocess.run([sys.executable, str(gen), str(out)], check=True)
    store = Store(":memory:")
    result = read_sacct(store, out, tz="UTC")
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (30002, 30002, 0)
    jobs = store.table("jobs")
    failed = jobs.filter(job_id="130000_7").row(0, named=True)
    assert (failed["base_job_id"], failed["array_task"]) == ("130000", "7")
    assert failed["elapsed_s"] == 94715.0
    pending = jobs.filter(job_id="130001").row(0, named=True)
    assert (pending["start_ts"], pending["end_ts"], pending["elapsed_s"]) == (
        None,
        None,
        None,
    )
    assert jobs.filter(pl.col("elapsed_s") == 3600.0).height == 30000


def test_tz_required_for_local_times() -> None:
    """sacct prints zone-less local times: without --tz the error names the line
    and the fix."""
    with pytest.raises(IngestError, match=r"sacct_c08.psv:2: .*--tz ZONE"):
        read_sacct(Store(":memory:"), C08)


def test_tz_z_means_utc(c08: Store) -> None:
    store = Store(":memory:")
    read_sacct(store, C08, tz="Z")
    assert store.table("jobs")["start_ts"].equals(c08.table("jobs")["start_ts"])


def test_local_zone_converted(tmp_path: Path) -> None:
    store = Store(":memory:")
    read_sacct(store, C08, tz="America/Chicago")
    row = store.table("jobs").filter(job_id="4100").row(0, named=True)
    assert row["start_ts"] == utc(2025, 2, 1, 15, 0, 5)  # CST = UTC-6


def test_dst_fall_back_resolved_by_elapsed(tmp_path: Path) -> None:
    """America/Chicago, 2024-11-03: 01:00-02:00 happens twice. Start 01:30 (CDT,
    06:30Z) and End 01:10 (CST, 07:10Z) with Elapsed 00:40:00: only that pair
    of readings is 40 min apart (tz database rules)."""
    f = tmp_path / "dst.psv"
    f.write_text(
        "JobID|State|Start|End|Elapsed\n"
        "1|COMPLETED|2024-11-03T01:30:00|2024-11-03T01:10:00|00:40:00\n"
    )
    store = Store(":memory:")
    read_sacct(store, f, tz="America/Chicago")
    row = store.table("jobs").row(0, named=True)
    assert (row["start_ts"], row["end_ts"]) == (
        utc(2024, 11, 3, 6, 30),
        utc(2024, 11, 3, 7, 10),
    )
    assert "dst_resolved_by_elapsed" in row["flags"]


def test_end_before_start_never_negative(tmp_path: Path) -> None:
    """No negative durations: an End before Start becomes Start + Elapsed."""
    f = tmp_path / "neg.psv"
    f.write_text(
        "JobID|State|Start|End|Elapsed\n"
        "1|FAILED|2025-01-01T10:00:00|2025-01-01T09:00:00|00:10:00\n"
        "2|FAILED|2025-01-01T10:00:00|2025-01-01T09:00:00|\n"
    )
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert (result.n_loaded, result.n_rejected) == (1, 1)
    row = store.table("jobs").row(0, named=True)
    assert row["end_ts"] == utc(2025, 1, 1, 10, 10)
    assert row["flags"] == "end_from_elapsed"
    assert "End is before Start" in store.table("rejects")["reason"][0]


def test_malformed_nodelist_rejected_with_name(tmp_path: Path) -> None:
    """C20's malformed ``gpu[001-`` inside a dump: the record is rejected with a
    reason naming the list, the others load."""
    f = tmp_path / "n.psv"
    f.write_text("JobID|NodeList\n1|gpu[001-\n2|gpu[001-002]\n")
    store = Store(":memory:")
    result = read_sacct(store, f)
    assert (result.n_loaded, result.n_rejected) == (1, 1)
    rej = store.table("rejects").row(0, named=True)
    assert rej["line_no"] == 2
    assert "malformed host list 'gpu[001-'" in rej["reason"]
    assert store.table("job_nodes")["host"].to_list() == ["gpu001", "gpu002"]


def test_any_column_order_trailing_pipe_and_repeated_header(tmp_path: Path) -> None:
    """``sacct -p`` ends lines with '|'; concatenated dumps repeat the header
    (counted as ignored, not rejected); GPUs come from AllocTRES."""
    f = tmp_path / "p.psv"
    head = "NodeList|AllocTRES|JobID|State|"
    f.write_text(
        f"{head}\n"
        "g[1-2]|cpu=8,gres/gpu=16,node=2|7|COMPLETED|\n"
        f"{head}\n"
        "g3|cpu=8,gres/gpu:a100=4,node=1|8|FAILED|\n"
    )
    store = Store(":memory:")
    result = read_sacct(store, f)
    assert (result.n_lines, result.n_loaded, result.n_ignored) == (3, 2, 1)
    assert store.table("jobs").select("job_id", "n_gpus", "n_nodes").rows() == [
        ("7", 16, 2),
        ("8", 4, 1),
    ]


def test_wrong_field_count_rejected(tmp_path: Path) -> None:
    f = tmp_path / "w.psv"
    f.write_text("JobID|JobName|State\n1|a|b|COMPLETED\n2|x|COMPLETED\n")
    store = Store(":memory:")
    assert read_sacct(store, f).n_rejected == 1
    assert "expected 3 fields" in store.table("rejects")["reason"][0]


def test_gzip_and_no_jobid_header(tmp_path: Path) -> None:
    gz = tmp_path / "s.psv.gz"
    gz.write_bytes(gzip.compress(C08.read_bytes()))
    store = Store(":memory:")
    assert read_sacct(store, gz, tz="UTC").n_loaded == 21
    bad = tmp_path / "b.csv"
    bad.write_text("ts,host,failure_mode\n2024-01-01,n1,gpu/x\n")
    with pytest.raises(IngestError, match="no JobID column"):
        read_sacct(store, bad)


def test_reingest_skipped_and_replace(c08: Store) -> None:
    """The shared ingest mechanism: same bytes skipped; --replace drops the
    earlier rows of jobs, steps and nodes."""
    assert read_sacct(c08, C08, tz="UTC").skipped
    again = read_sacct(c08, C08, tz="UTC", replace=True)
    assert again.replaced == (1,)
    assert c08.table("jobs").height == 15
    assert c08.table("job_nodes").height == 57
    assert c08.table("job_steps").height == 6


def test_pseudonymize(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Users and job names become keyed pseudonyms: the same key gives the same
    pseudonym across files; no raw name is stored; a short key is refused."""
    monkeypatch.setenv("RELKIT_PSEUDONYM_KEY", "k" * 32)
    a, b = tmp_path / "a.psv", tmp_path / "b.psv"
    a.write_text("JobID|User|JobName\n1|alice|secret-run\n")
    b.write_text("JobID|User|JobName\n2|alice|other\n")
    store = Store(":memory:")
    read_file(store, a, kind="sacct", pseudonymize=True)
    read_file(store, b, kind="sacct", pseudonymize=True)
    users = store.table("jobs")["user"].to_list()
    assert users[0] == users[1]
    assert users[0].startswith("user-")
    assert "alice" not in str(store.table("jobs").rows())
    assert "kkkk" not in store.table("sources")["options"][0]
    monkeypatch.setenv("RELKIT_PSEUDONYM_KEY", "short")
    with pytest.raises(RelkitError, match="at least 16"):
        read_sacct(Store(":memory:"), a, pseudonymize=True)
    monkeypatch.delenv("RELKIT_PSEUDONYM_KEY")
    with pytest.raises(RelkitError, match="RELKIT_PSEUDONYM_KEY is not set"):
        read_sacct(Store(":memory:"), a, pseudonymize=True)
    key = tmp_path / "key.txt"
    key.write_text("0123456789abcdef0123\n")
    s2 = Store(":memory:")
    read_sacct(s2, a, pseudonymize=True, pseudonym_key_file=key)
    assert s2.table("jobs")["user"][0].startswith("user-")
