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


# -- the break-it review of issue 5 ---------------------------------------------------
HEAD = (
    "JobID|JobIDRaw|JobName|User|Partition|State|ExitCode|Submit|Start|End|"
    "Elapsed|NNodes|AllocTRES|NodeList"
)


def _row(job: str, name: str = "j", user: str = "alice", **kw: str) -> str:
    f = {
        "state": "COMPLETED",
        "start": "2025-02-01T09:00:05",
        "end": "2025-02-01T10:00:05",
        "elapsed": "01:00:00",
        "nnodes": "1",
        "tres": "gres/gpu=8",
        "nodes": "gpu001",
    } | kw
    return (
        f"{job}|{job}|{name}|{user}|gpu|{f['state']}|0:0|2025-02-01T09:00:00|"
        f"{f['start']}|{f['end']}|{f['elapsed']}|{f['nnodes']}|{f['tres']}|"
        f"{f['nodes']}"
    )


def test_ref_c08_dump_twice_counts_each_record_once(tmp_path: Path) -> None:
    """C08 (cases/README.md: 21 rows, 15 allocation rows, 6 steps; 4106 is one
    job with 2 attempts) appended to itself: the second copy's header and 21
    records are ignored as repeats, never attempts 3 and 4 of 4106."""
    f = tmp_path / "twice.psv"
    f.write_bytes(C08.read_bytes() * 2)
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert (result.n_lines, result.n_loaded, result.n_ignored) == (43, 21, 22)
    ignored = dict(store.table("ignored").select("reason", "n_lines").rows())
    assert ignored == {"repeated_header": 1, "duplicate_record": 21}
    jobs = store.table("jobs")
    assert jobs.height == 15
    assert jobs.filter(job_id="4106")["attempt"].to_list() == [1, 2]


def test_identical_line_is_one_record_requeue_stays_two(tmp_path: Path) -> None:
    """Review repro h/duprec.psv: the same NODE_FAIL line twice is one attempt
    (ignored 'duplicate_record'); a requeued record (same JobID, another
    Start) stays attempt 2 (C08's rule for requeues)."""
    f = tmp_path / "dup.psv"
    requeued = _row("7001", start="2025-02-01T10:05:00", end="2025-02-01T11:05:00")
    f.write_text("\n".join([HEAD, _row("7001"), _row("7001"), requeued]) + "\n")
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert (result.n_loaded, result.n_ignored, result.n_rejected) == (2, 1, 0)
    assert store.table("jobs")["attempt"].to_list() == [1, 2]


def test_new_header_switches_the_column_layout(tmp_path: Path) -> None:
    """Review repro h/duphdr2.psv: two dumps concatenated, the second with User
    and JobName swapped. The lines after a header are read with that header:
    job 7002 is user bob, job name myjob (not user=myjob)."""
    f = tmp_path / "two.psv"
    swapped = HEAD.replace("JobName|User", "User|JobName")
    f.write_text(
        "\n".join([HEAD, _row("7001"), swapped, _row("7002", "bob", "myjob")]) + "\n"
    )
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert (result.n_loaded, result.n_ignored, result.n_rejected) == (2, 1, 0)
    rows = store.table("jobs").select("job_id", "user", "name").rows()
    assert rows == [("7001", "alice", "j"), ("7002", "bob", "myjob")]
    assert store.table("ignored")["reason"].to_list() == ["new_header"]


def test_repeated_header_with_bom_is_a_header(tmp_path: Path) -> None:
    """Review repro h/bom2.psv: two CRLF dumps with a BOM each, cat'ed. The
    second BOM'd header is a header (not 'malformed JobID'); its record repeats
    the first."""
    f = tmp_path / "bom.psv"
    one = ("\ufeff" + HEAD + "\r\n" + _row("7001") + "\r\n").encode()
    f.write_bytes(one * 2)
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert (result.n_loaded, result.n_ignored, result.n_rejected) == (1, 2, 0)


def test_later_header_naming_a_column_twice_rejects_its_lines(
    tmp_path: Path,
) -> None:
    """Our rule: lines under a header that cannot be read are rejected with
    the reason, never parsed with the first header's layout."""
    f = tmp_path / "bad.psv"
    f.write_text("JobID|State\n1|COMPLETED\nJobID|State|State\n2|FAILED|FAILED\n")
    store = Store(":memory:")
    result = read_sacct(store, f)
    assert (result.n_loaded, result.n_rejected, result.n_ignored) == (1, 1, 1)
    assert "names column(s) ['state'] twice" in store.table("rejects")["reason"][0]


def test_non_utf8_byte_loads_the_line_flagged(tmp_path: Path) -> None:
    """Review repro h/latin1.psv: one Latin-1 byte in a JobName refused the
    whole file. Now the line loads, the byte replaced (U+FFFD) and the row
    flagged; the other lines are untouched."""
    f = tmp_path / "latin1.psv"
    f.write_bytes(
        (HEAD + "\n").encode()
        + _row("7001", "caf\udce9", "alice").encode("utf-8", "surrogateescape")
        + b"\n"
        + (_row("7002") + "\n").encode()
    )
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert (result.n_loaded, result.n_rejected) == (2, 0)
    jobs = store.table("jobs")
    assert jobs["name"].to_list() == ["caf\ufffd", "j"]
    assert jobs["flags"].to_list() == ["invalid_utf8_replaced", None]


def test_ref_dst_gap_resolved_by_elapsed(tmp_path: Path) -> None:
    """tz database: America/Denver skips 02:00-03:00 on 2025-03-09 (MST -7 to
    MDT -6); Europe/Berlin 02:00-03:00 on 2025-03-30 (CET +1 to CEST +2).
    Denver Start 02:30 (never happened), End 03:30 MDT = 09:30Z, Elapsed 1 h:
    Start = End - Elapsed = 08:30Z. Berlin Start 01:30 CET = 00:30Z, End 02:30
    (never happened), Elapsed 30 min: End = Start + Elapsed = 01:00Z. Either
    way End - Start = Elapsed, never 0 s or 3600 s (review repro)."""
    den, ber = tmp_path / "den.psv", tmp_path / "ber.psv"
    den.write_text(
        "JobID|State|Start|End|Elapsed\n"
        "8003|COMPLETED|2025-03-09T02:30:00|2025-03-09T03:30:00|01:00:00\n"
    )
    ber.write_text(
        "JobID|State|Start|End|Elapsed\n"
        "8102|COMPLETED|2025-03-30T01:30:00|2025-03-30T02:30:00|00:30:00\n"
    )
    store = Store(":memory:")
    read_sacct(store, den, tz="America/Denver")
    read_sacct(store, ber, tz="Europe/Berlin")
    rows = store.table("jobs").select("job_id", "start_ts", "end_ts", "flags").rows()
    assert rows == [
        (
            "8003",
            utc(2025, 3, 9, 8, 30),
            utc(2025, 3, 9, 9, 30),
            "dst_nonexistent_start,dst_resolved_by_elapsed",
        ),
        (
            "8102",
            utc(2025, 3, 30, 0, 30),
            utc(2025, 3, 30, 1, 0),
            "dst_nonexistent_end,end_from_elapsed",
        ),
    ]


def test_elapsed_mismatch_flagged_not_accepted(tmp_path: Path) -> None:
    """Review repro (Denver 8006): Start 05:00, End 06:00 and Elapsed 05:00:00
    disagree by 4 h, which no DST reading explains: flagged
    ``elapsed_mismatch``, times kept (Slurm's Elapsed leaves out suspended
    time, so this is not rejected)."""
    f = tmp_path / "m.psv"
    f.write_text(
        "JobID|State|Start|End|Elapsed\n"
        "8006|COMPLETED|2025-02-01T05:00:00|2025-02-01T06:00:00|05:00:00\n"
        "8007|COMPLETED|2025-02-01T05:00:00|2025-02-01T06:00:00|01:00:00\n"
    )
    store = Store(":memory:")
    read_sacct(store, f, tz="America/Denver")
    assert store.table("jobs")["flags"].to_list() == ["elapsed_mismatch", None]


def test_hostlist_blow_up_rejected_before_expansion(tmp_path: Path) -> None:
    """Review repro h/huge.psv: ``gpu[1-999999]`` on 30 lines took 3.3 GB. A
    list naming more hosts than NNodes, or than MAX_HOSTS (100,000) without
    NNodes, is rejected with the line and reason; nothing is expanded."""
    f = tmp_path / "huge.psv"
    lines = [HEAD]
    lines += [_row(str(9000 + i), nnodes="2", nodes="gpu[1-999999]") for i in range(30)]
    lines.append(_row("9100", nnodes="", nodes="gpu[1-999999]"))
    lines.append(_row("9101", nnodes="2", nodes="gpu[1-3]"))
    f.write_text("\n".join(lines) + "\n")
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert (result.n_loaded, result.n_rejected) == (0, 32)
    reasons = store.table("rejects")["reason"].to_list()
    assert "more than the record's NNodes = 2" in reasons[0]
    assert "more than relkit's limit of 100,000 hosts" in reasons[30]
    assert "names 3 hosts, more than the record's NNodes = 2" in reasons[31]
    assert store.table("job_nodes").height == 0


def test_review_misc_fields(tmp_path: Path) -> None:
    """Review repro h/misc.psv: an unknown state is flagged (kept: attribution
    treats it as unexpected), a negative GPU count rejects the line, a step
    whose job is not in the file is rejected, and a host named twice is kept
    once (flagged)."""
    f = tmp_path / "misc.psv"
    f.write_text(
        "\n".join(
            [
                HEAD,
                _row("7011", state="WEIRD_STATE"),
                _row("7012", tres="billing=8,gres/gpu=-8"),
                _row("9999.batch", nodes="gpu004"),
                _row("7014", nnodes="2", nodes="gpu[001-002],gpu001"),
            ]
        )
        + "\n"
    )
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert (result.n_loaded, result.n_rejected) == (2, 2)
    jobs = store.table("jobs")
    assert jobs.select("job_id", "flags").rows() == [
        ("7011", "unknown_state"),
        ("7014", "nodelist_repeats_hosts"),
    ]
    reasons = store.table("rejects")["reason"].to_list()
    assert "GPU count '-8'" in reasons[0]
    assert (
        "step 9999.batch of job 9999, whose allocation row is not above" in (reasons[1])
    )
    hosts = store.table("job_nodes").filter(job_id="7014")["host"].to_list()
    assert hosts == ["gpu001", "gpu002"]


def test_pseudonymize_keeps_no_raw_name_in_rejects(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review (privacy): with --pseudonymize, rejects.raw held the whole raw
    line. Now its user and job name are the same pseudonyms as in ``jobs``;
    a line whose fields cannot be told apart (a '|' in a name) is withheld."""
    monkeypatch.setenv("RELKIT_PSEUDONYM_KEY", "k" * 32)
    f = tmp_path / "p.psv"
    f.write_text(
        "\n".join(
            [
                HEAD,
                _row("7001", "secretproj", "alice", state="NODE_FAIL"),
                _row("7002", "alice_llm", "alice", elapsed="-1:00"),
                _row("7003", "a|b", "alice"),
            ]
        )
        + "\n"
    )
    store = Store(":memory:")
    assert read_sacct(store, f, tz="UTC", pseudonymize=True).n_rejected == 2
    rejects = store.table("rejects")
    text = str(rejects.rows()) + str(store.table("jobs").rows())
    assert "alice" not in text
    assert "secretproj" not in text
    user = store.table("jobs")["user"][0]
    assert f"|{user}|gpu|" in rejects["raw"][0]
    assert rejects["raw"][1].startswith("(raw line withheld")


def test_skip_note_says_earlier_ingest_was_not_pseudonymized(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Review (privacy): re-ingesting with --pseudonymize a file loaded without
    it is skipped (same bytes); the note must say raw names are in the store
    and how to replace them."""
    monkeypatch.setenv("RELKIT_PSEUDONYM_KEY", "k" * 32)
    f = tmp_path / "a.psv"
    f.write_text(f"{HEAD}\n{_row('7001')}\n")
    store = Store(":memory:")
    read_sacct(store, f, tz="UTC")
    again = read_sacct(store, f, tz="UTC", pseudonymize=True)
    assert again.skipped
    assert "WITHOUT pseudonymization" in again.note
    assert "--replace --pseudonymize" in again.note
    read_sacct(store, f, tz="UTC", pseudonymize=True, replace=True)
    assert store.table("jobs")["user"][0].startswith("user-")


def test_padded_fields_stripped_and_blank_lines_keep_numbers(tmp_path: Path) -> None:
    """Our reader: white space around a field is not part of the value (a
    hand-aligned dump), inside one it is ("CANCELLED by 1001"); blank lines
    keep the physical line numbers of the lines after them."""
    f = tmp_path / "pad.psv"
    f.write_text(
        "JobID | State | Elapsed\n\n1 | CANCELLED by 1001 | 01:00:00\n\n2|BAD STATE|\n"
    )
    store = Store(":memory:")
    result = read_sacct(store, f)
    assert (result.n_loaded, result.n_rejected) == (1, 1)
    row = store.table("jobs").row(0, named=True)
    assert (row["line_no"], row["state"], row["cancelled_by_uid"]) == (
        3,
        "CANCELLED",
        "1001",
    )
    rej = store.table("rejects").row(0, named=True)
    assert (rej["line_no"], rej["reason"]) == (5, "unparseable State: 'BAD STATE'")


def test_header_only_dump_loads_nothing(tmp_path: Path) -> None:
    """vcell PR #1913 (cited in C08): sacct prints a header even when no job
    matches; that is an empty result, not an error (review repro
    h/headeronly.psv exited 3)."""
    f = tmp_path / "h.psv"
    f.write_text(HEAD + "\n")
    result = read_sacct(Store(":memory:"), f, tz="UTC")
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (0, 0, 0)


# -- issue 10 §5: Slurm as it comes -------------------------------------------------
MIX = DATA / "sacct_gpu_cpu_mix.psv"  # 6 data lines, one a repeat of the line above
NOHEADER = DATA / "sacct_noheader.psv"  # the same records, once, `sacct --noheader`
NO_TIMES = DATA / "sacct_no_times.psv"  # no Start, End, AllocTRES
MIX_FIELDS = (
    "JobID,JobIDRaw,JobName,Partition,State,ExitCode,Start,End,Elapsed,"
    "AllocNodes,AllocTRES,NodeList"
)


def test_cpu_only_job_has_zero_gpus_and_alloc_nodes_is_read() -> None:
    """sacct_gpu_cpu_mix.psv, by hand: 9101's AllocTRES
    ``billing=128,cpu=128,mem=500G,node=2`` names no gres/gpu: 0 GPUs (a
    per-node default made it 16); AllocNodes 2. 9102 ``gres/gpu=32`` on
    AllocNodes 4; 9104 the typed ``gres/gpu:h100=8`` on 1 node; 9103 is
    pending: AllocNodes 0 and an empty AllocTRES, so its GPUs are unknown."""
    store = Store(":memory:")
    read_sacct(store, MIX, tz="UTC")
    jobs = store.table("jobs").sort("job_id")
    assert jobs.select("job_id", "n_nodes", "n_gpus").rows() == [
        ("9101", 2, 0),
        ("9102", 4, 32),
        ("9103", 0, None),
        ("9104", 1, 8),
    ]
    from relkit.jobs import build_job_attempts

    attempts = build_job_attempts(jobs, store.table("job_nodes"), gpus_per_node=8)
    cpu = attempts.filter(job_id="9101").row(0, named=True)
    assert (cpu["n_gpus"], cpu["gpus_assumed"]) == (0, False)


def test_alloc_nodes_not_a_number_is_rejected(tmp_path: Path) -> None:
    """An AllocNodes field that is no whole number is a reject with its
    reason and line, not a silent null."""
    f = tmp_path / "s.psv"
    f.write_text("JobID|State|AllocNodes\n1|COMPLETED|two\n2|COMPLETED|3\n")
    store = Store(":memory:")
    result = read_sacct(store, f)
    assert (result.n_loaded, result.n_rejected) == (1, 1)
    reject = store.table("rejects").row(0, named=True)
    assert reject["line_no"] == 2
    assert "AllocNodes is not a whole number >= 0: 'two'" in reject["reason"]


def test_identical_repeated_record_is_not_a_requeue_and_is_counted() -> None:
    """Line 5 of sacct_gpu_cpu_mix.psv repeats line 4 (9102 NODE_FAIL)
    character for character: one record, attempt 1 only (a requeue would be
    attempt 2), and the summary says 1 repeat. 6 data lines = 5 loaded
    (4 allocations + 1 step) + 1 ignored."""
    store = Store(":memory:")
    result = read_sacct(store, MIX, tz="UTC")
    assert (result.n_lines, result.n_loaded, result.n_ignored) == (6, 5, 1)
    assert store.table("jobs").filter(job_id="9102")["attempt"].to_list() == [1]
    assert result.note is not None
    assert "1 record(s) repeat an earlier line of the file exactly" in result.note


def test_dump_without_alloctres_says_a_per_node_default_applies() -> None:
    """sacct_no_times.psv has no AllocTRES column at all: GPU counts are
    unknown (null, never 0) and the summary says the job commands charge
    --gpus-per-node per node."""
    store = Store(":memory:")
    result = read_sacct(store, NO_TIMES)
    assert store.table("jobs")["n_gpus"].to_list() == [None, None]
    assert result.note is not None
    assert "no AllocTRES column" in result.note
    assert "--gpus-per-node" in result.note
    # a dump with the column says nothing of a default
    assert "AllocTRES" not in (read_sacct(Store(":memory:"), MIX, tz="UTC").note or "")


def test_dump_without_start_end_is_accepted_with_a_warning() -> None:
    """sacct_no_times.psv (JobID|State|ExitCode|Elapsed|AllocNodes|NodeList):
    both records load (no --tz needed: no time in the file), with no start
    or end, and the summary warns that no interruption timing is possible."""
    store = Store(":memory:")
    result = read_sacct(store, NO_TIMES)
    assert (result.n_loaded, result.n_rejected) == (2, 0)
    jobs = store.table("jobs").sort("job_id")
    assert jobs.select("job_id", "state", "start_ts", "end_ts", "elapsed_s").rows() == [
        ("9201", "NODE_FAIL", None, None, 18000.0),
        ("9202", "COMPLETED", None, None, 3600.0),
    ]
    assert result.note is not None
    assert "no Start/End column: no interruption timing is possible" in result.note


def test_headerless_dump_read_with_fields_and_refused_without() -> None:
    """sacct_noheader.psv is sacct_gpu_cpu_mix.psv without its header and
    without the repeated line (`sacct --noheader -P`). Without fields the
    refusal names --fields with an example; with the --format list as
    fields, the same 4 jobs and 1 step load as from the file with a header,
    line numbers unchanged (the first record is line 1)."""
    with pytest.raises(IngestError, match="the first line is a record") as err:
        read_sacct(Store(":memory:"), NOHEADER, tz="UTC")
    assert "--fields JobID,State,Start,End" in str(err.value)
    store = Store(":memory:")
    result = read_sacct(store, NOHEADER, tz="UTC", fields=MIX_FIELDS)
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (5, 5, 0)
    jobs = store.table("jobs").sort("job_id")
    assert jobs.select("line_no", "job_id", "n_nodes", "n_gpus").rows() == [
        (1, "9101", 2, 0),
        (3, "9102", 4, 32),
        (4, "9103", 0, None),
        (5, "9104", 1, 8),
    ]
    assert store.table("job_steps")["job_id"].to_list() == ["9101"]
    # a list of names works as the string does
    again = Store(":memory:")
    read_sacct(again, NOHEADER, tz="UTC", fields=MIX_FIELDS.split(","))
    assert again.table("jobs").height == 4


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ("State,Start,End", "no JobID"),
        ("JobID,,State", "an empty name"),
        ("JobID,State,state", "named twice"),
        ("JobID,Start Time", "are not sacct field names"),
    ],
)
def test_bad_fields_refused_with_the_option_named(fields: str, message: str) -> None:
    with pytest.raises(IngestError, match=message) as err:
        read_sacct(Store(":memory:"), NOHEADER, tz="UTC", fields=fields)
    assert "--fields" in str(err.value)


def test_started_job_with_empty_alloctres_is_said(tmp_path: Path) -> None:
    """Two started jobs, one with ``cpu=8,node=1`` (0 GPUs), one with an empty
    AllocTRES field: its GPU count stays unknown and the summary counts it
    (1), naming the per-node charge."""
    f = tmp_path / "s.psv"
    f.write_text(
        "JobID|State|Start|End|AllocTRES\n"
        "1|COMPLETED|2025-03-01T08:00:00|2025-03-01T09:00:00|cpu=8,node=1\n"
        "2|COMPLETED|2025-03-01T08:00:00|2025-03-01T09:00:00|\n"
    )
    store = Store(":memory:")
    result = read_sacct(store, f, tz="UTC")
    assert store.table("jobs").sort("job_id")["n_gpus"].to_list() == [0, None]
    assert result.note is not None
    assert "1 started job record(s) have an empty AllocTRES/AllocGRES" in result.note


def test_fields_too_few_for_the_line_names_fields(tmp_path: Path) -> None:
    """A header-less dump whose lines have 10 fields, read with --fields naming
    4: the reject says what --fields named, not "as in the header" (there is no
    header), and how to fix it."""
    dump = tmp_path / "nh.psv"
    dump.write_text(
        "9001|9001|train|alice|gpu|FAILED|1:0|2025-04-01T09:00:00|"
        "2025-04-01T09:00:05|2025-04-01T09:40:05\n"
    )
    with Store(":memory:") as store:
        result = read_sacct(
            store, dump, tz="UTC", fields=["JobID", "State", "Start", "End"]
        )
        reasons = store.table("rejects")["reason"].to_list()
    assert (result.n_loaded, result.n_rejected) == (0, 1)
    assert reasons == [
        "--fields names 4 columns, the line has 10: list every column of the "
        "dump's sacct --format, in order"
    ]
