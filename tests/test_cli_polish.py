"""The command line as operators expect it (issue 14 §4).

Tables for reading (decimals, thousands separators, no empty columns, ids in
natural order), one timestamp form in CSV and JSON, errors said once, a closed
pipe that ends quietly, every verb's help with a summary, an example and each
option's default, a store locked by another process named in one line,
``RELKIT_DB`` and shell completion.

The small fleet below is worked by hand: three nodes in systems ``1``, ``2``
and ``10`` (text ids, so text order would be 1, 10, 2), each with a declared
service window and failures inside it:

- ``gpu1`` (system 1): 2025-01-01 to 2025-01-11 = 10 d = 240 h, 1 failure:
  MTBF 240 h, 1 / 10 node-days = 100 per 1000 node-days;
- ``gpu2`` (system 2): 2025-01-01 to 2025-02-12T16:00 = 42 d 16 h = 1,024 h,
  3 failures: MTBF 1024 / 3 = 341.333... h, 3 / (1024 / 24) d = 70.3125 per
  1000 node-days;
- ``gpu10`` (system 10): 2024-01-01 to 2025-01-01 = 366 d (a leap year) =
  8,784 h, 2 failures: MTBF 4,392 h, 2 / 366 d = 5.464... per 1000 node-days.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from relkit._cli_format import instant_text, natural_order, reading_value
from relkit.cli import build_parser, main

ASSETS = """host,in_service_ts,out_of_service_ts,gpus,system
gpu1,2025-01-01T00:00:00Z,2025-01-11T00:00:00Z,8,1
gpu2,2025-01-01T00:00:00Z,2025-02-12T16:00:00Z,8,2
gpu10,2024-01-01T00:00:00Z,2025-01-01T00:00:00Z,8,10
"""
EVENTS = """ts,host,failure_mode
2025-01-05T00:00:00Z,gpu1,hardware/gpu
2025-01-03T00:00:00Z,gpu2,hardware/gpu
2025-01-13T00:00:00Z,gpu2,hardware/gpu
2025-01-23T00:00:00Z,gpu2,network/nic
2024-03-01T00:00:00Z,gpu10,hardware/gpu
2024-09-01T12:30:00Z,gpu10,hardware/gpu
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _relkit(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relkit", *argv],
        capture_output=True,
        text=True,
        check=False,
        **kwargs,  # type: ignore[arg-type]
    )


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The hand-worked three-node fleet of the module docstring, in a store."""
    where = tmp_path_factory.mktemp("fleet")
    (where / "assets.csv").write_text(ASSETS)
    (where / "events.csv").write_text(EVENTS)
    db = str(where / "fleet.duckdb")
    for kind in ("assets", "events"):
        code = main(["ingest", "--db", db, "--kind", kind, str(where / f"{kind}.csv")])
        assert code == 0
    return db


def _table(out: str) -> list[dict[str, str]]:
    """Parse a markdown table printed by the CLI into rows of cell text."""
    lines = [line for line in out.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in lines]
    header = cells[0]
    return [dict(zip(header, row, strict=True)) for row in cells[2:]]


# -- tables for reading --------------------------------------------------------------
def test_mtbf_table_is_formatted_for_reading(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Hand computation (module docstring): exposures 240, 1,024, 8,784 h (the
    median, 1,024, has four digits: no decimals); MTBF 240, 341.33, 4,392 h
    (median 341.3: one decimal); rates 100, 70.3125, 5.4645 per 1000
    node-days (median 70.3: two decimals). Systems 1, 2, 10 in that order."""
    code, out, _ = run(capsys, "mtbf", "--db", fleet, "--by", "system")
    assert code == 0
    rows = _table(out)
    assert [r["system"] for r in rows] == ["1", "2", "10"]
    assert [r["exposure_h"] for r in rows] == ["240", "1,024", "8,784"]
    assert [r["mtbf_h"] for r in rows] == ["240.0", "341.3", "4,392.0"]
    assert [r["failures_per_1000_node_days"] for r in rows] == [
        "100.00",
        "70.31",
        "5.46",
    ]
    assert [r["n_failures"] for r in rows] == ["1", "3", "2"]
    # the default level, 0.95 (relkit.defaults), without places that are 0
    assert [r["confidence"] for r in rows] == ["0.95"] * 3
    # no repair times were given: mttr_h and availability_frac are null in
    # every row, and the warning column is empty, so the table leaves them out
    assert {"mttr_h", "availability_frac", "warning"}.isdisjoint(rows[0])
    assert "null" not in out


def test_machine_formats_keep_full_precision_and_order(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """CSV and JSON keep every digit (1024 / 3 = 341.3333333333333 as a float),
    every column (mttr_h empty), natural order, and one time form."""
    code, out_csv, _ = run(
        capsys, "mtbf", "--db", fleet, "--by", "system", "--format", "csv"
    )
    assert code == 0
    lines = out_csv.splitlines()
    header = lines[0].split(",")
    assert "mttr_h" in header
    rows = [dict(zip(header, line.split(","), strict=False)) for line in lines[1:]]
    assert [r["system"] for r in rows] == ["1", "2", "10"]
    assert float(rows[1]["mtbf_h"]) == 1024 / 3
    assert rows[1]["mtbf_h"] == repr(1024 / 3)
    code, out_json, _ = run(
        capsys, "mtbf", "--db", fleet, "--by", "system", "--format", "json"
    )
    got = json.loads(out_json)
    assert [r["system"] for r in got] == ["1", "2", "10"]
    assert got[1]["mtbf_h"] == 1024 / 3
    assert got[2]["failures_per_1000_node_days"] == pytest.approx(2 / 366 * 1000)
    # the end of gpu2's service window, 2025-02-12T16:00Z, written alike
    assert rows[1]["observed_until"] == "2025-02-12T16:00:00Z"
    assert got[1]["observed_until"] == "2025-02-12T16:00:00Z"


def test_event_times_are_the_same_in_csv_and_json(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The events file's six times, as written there (ISO 8601, Z), in both."""
    _, out_csv, _ = run(capsys, "events", "--db", fleet, "--format", "csv")
    _, out_json, _ = run(capsys, "events", "--db", fleet, "--format", "json")
    csv_ts = [line.split(",")[0] for line in out_csv.splitlines()[1:]]
    json_ts = [r["ts"] for r in json.loads(out_json)]
    assert csv_ts == json_ts
    want = sorted(line.split(",")[0] for line in EVENTS.splitlines()[1:])
    assert json_ts == want


def test_jobs_times_are_the_same_in_csv_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An sacct dump made with TZ=UTC: job 7 started 2025-02-01T09:00:05."""
    dump = tmp_path / "sacct.psv"
    dump.write_text(
        "JobID|State|Submit|Start|End|Elapsed|AllocNodes|AllocTRES|NodeList\n"
        "7|COMPLETED|2025-02-01T09:00:00|2025-02-01T09:00:05|2025-02-01T10:00:05|"
        "01:00:00|1|billing=8,cpu=8,gres/gpu=8,node=1|gpu001\n"
    )
    db = str(tmp_path / "s.duckdb")
    args = ("--db", db, "--kind", "sacct", "--tz", "UTC", str(dump))
    assert run(capsys, "ingest", *args)[0] == 0
    _, out_csv, _ = run(capsys, "jobs", "--db", db, "--format", "csv")
    _, out_json, _ = run(capsys, "jobs", "--db", db, "--format", "json")
    header, row = out_csv.splitlines()
    csv_row = dict(zip(header.split(","), row.split(","), strict=False))
    job = json.loads(out_json)[0]
    for name in ("submit_ts", "start_ts", "end_ts"):
        assert csv_row[name] == job[name]
    assert job["start_ts"] == "2025-02-01T09:00:05Z"
    assert job["end_ts"] == "2025-02-01T10:00:05Z"
    _, table, _ = run(capsys, "jobs", "--db", db)
    (shown,) = _table(table)
    assert shown["elapsed_s"] == "3,600"  # 1 h; was 3600.0000
    assert shown["start_ts"] == "2025-02-01 09:00:05Z"


def test_ingest_table_leaves_out_empty_columns(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A clean file: no note, nothing replaced (``[]``), no rejects: the table
    shows none of those columns; --format csv keeps them all."""
    csv = tmp_path / "events.csv"
    csv.write_text(EVENTS)
    db = str(tmp_path / "s.duckdb")
    code, out, _ = run(capsys, "ingest", "--db", db, "--kind", "events", str(csv))
    assert code == 0
    (row,) = _table(out)
    assert {"note", "replaced", "top_rejects", "flag_counts"}.isdisjoint(row)
    assert row["n_loaded"] == "6"
    assert "[]" not in out
    assert "null" not in out


def test_reading_value_and_instant_text() -> None:
    """Hand-written: separators every three digits, the places asked for; a
    time with a zone in UTC with Z (09:00 at +02:00 is 07:00Z)."""
    from datetime import UTC, datetime, timedelta, timezone

    assert reading_value(4543944.5333, 0) == "4,543,945"
    assert reading_value(2.07021, 2) == "2.07"
    assert reading_value(1.234e-7, None) == "1.23e-07"
    plus2 = timezone(timedelta(hours=2))
    assert instant_text(datetime(2025, 3, 4, 9, 0, tzinfo=plus2)) == (
        "2025-03-04T07:00:00Z"
    )
    assert instant_text(datetime(2025, 3, 4, 9, 0, 1, 100000, tzinfo=UTC)) == (
        "2025-03-04T09:00:01.100Z"
    )


def test_natural_order_only_where_rows_were_ordered_by_the_id() -> None:
    """Hosts in text order (gpu1, gpu10, gpu2) become gpu1, gpu2, gpu10, rows of
    one host keeping their order; a frame in time order is left alone."""
    import polars as pl

    by_host = pl.DataFrame(
        {"host": ["gpu1", "gpu10", "gpu10", "gpu2"], "k": [1, 2, 3, 4]}
    )
    assert natural_order(by_host)["k"].to_list() == [1, 4, 2, 3]
    by_time = pl.DataFrame({"host": ["gpu2", "gpu10", "gpu1"], "k": [1, 2, 3]})
    assert natural_order(by_time)["k"].to_list() == [1, 2, 3]


def test_lanl_systems_in_natural_order(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LANL's 22 systems are numbered 2 to 24 (no 1; systems 17 and 21 are in
    the data); their text order would put 10 before 2."""
    code, out, _ = run(capsys, "mtbf", "--db", str(lanl_db), "--by", "system")
    assert code == 0
    systems = [int(r["system"]) for r in _table(out)]
    assert systems == sorted(systems)
    assert systems[:3] == [2, 3, 4]


# -- errors and pipes ----------------------------------------------------------------
def test_one_file_ingest_error_is_said_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A zone-less sacct dump: one error line naming --tz, nothing on stdout."""
    dump = tmp_path / "sacct.psv"
    dump.write_text(
        "JobID|State|Start|End\n7|COMPLETED|2025-02-01T09:00:05|2025-02-01T10:00:05\n"
    )
    db = tmp_path / "s.duckdb"
    code, out, err = run(
        capsys, "ingest", "--db", str(db), "--kind", "sacct", str(dump)
    )
    assert code == 1
    assert out == ""
    assert err.count("\n") == 1
    assert err.startswith(f"relkit ingest: error: {dump}:2: ")
    assert "--tz" in err
    assert not db.exists()  # a new store left empty is removed


@pytest.mark.parametrize("fmt", ["json", "csv", "table"])
def test_closed_pipe_ends_quietly(lanl_db: Path, fmt: str) -> None:
    """``relkit events --db LANL | head -1``: 23,739 events, far more than a
    pipe holds, so writing goes on after the reader has gone. No traceback, no
    "Exception ignored" line; the exit code is 141 (128 + SIGPIPE) or, when
    everything fitted in the pipe before it closed, 0."""
    argv = ["events", "--db", str(lanl_db), "--format", fmt]
    proc = subprocess.Popen(
        [sys.executable, "-m", "relkit", *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    first = proc.stdout.readline()
    proc.stdout.close()
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = proc.wait()
    assert first
    assert err == "" or err.startswith("relkit: note:"), err
    assert "Traceback" not in err
    assert "Exception ignored" not in err
    assert "BrokenPipeError" not in err
    assert code in (0, 141)


def test_closed_pipe_through_the_shell(lanl_db: Path) -> None:
    """The operator's line, ``relkit mtbf --by host ... | head -1``, in bash
    with pipefail: the one line arrives, stderr is silent of Python."""
    line = (
        f"set -o pipefail; {sys.executable} -m relkit mtbf --db {lanl_db} "
        "--by host --format csv | head -1"
    )
    done = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, check=False
    )
    assert done.stdout.startswith("host,")
    assert done.stdout.count("\n") == 1
    assert "Traceback" not in done.stderr
    assert "Exception ignored" not in done.stderr
    assert done.returncode in (0, 141)


# -- help ----------------------------------------------------------------------------
def test_every_verb_help_has_summary_example_and_defaults() -> None:
    """Walk the full parser: a one-line summary (listed by ``relkit --help``) and
    a description, an example that runs the verb (``relkit VERB ...``) and, for
    every option, its default (or that it is required)."""
    parser = build_parser()
    (sub,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    summaries = {a.dest: a.help or "" for a in sub._choices_actions}
    verbs = dict(sub.choices)
    assert {"mtbf", "ingest", "jobs", "report", "demo", "completion"} <= set(verbs)
    missing = []
    for name, parser in verbs.items():
        text = parser.format_help()
        summary = summaries[name].strip()
        if not summary or "\n" in summary or not parser.description:
            missing.append(f"{name}: description")
        if f"relkit {name} " not in (parser.epilog or ""):
            missing.append(f"{name}: example")
        formatter = parser._get_formatter()
        for action in parser._actions:
            if not action.option_strings or action.dest == "help":
                continue
            said = formatter._expand_help(action) if action.help else ""
            if "default" not in said.lower() and "(required)" not in said:
                missing.append(f"{name} {action.option_strings[-1]}")
        assert "usage: relkit" in text
    assert missing == []


def test_help_shows_defaults_and_examples(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``relkit incidents --help``: the gap window's default, 10 min, and the
    switch --count-unknown-xid, off unless given."""
    with pytest.raises(SystemExit) as done:
        main(["incidents", "--help"])
    assert done.value.code == 0
    out = " ".join(capsys.readouterr().out.split())  # unwrapped
    assert "gap window, min (default: 10.0)" in out
    assert "example: relkit incidents --db fleet.duckdb" in out
    assert out.count("Fold log events into incidents.") == 1


# -- a store held by another process -------------------------------------------------
HOLD = """
import sys
from relkit.store import Store
store = Store(sys.argv[1], read_only=sys.argv[2] == "ro")
print("open", flush=True)
sys.stdin.readline()
store.close()
"""


def _holder(db: str, mode: str) -> subprocess.Popen[str]:
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLD, db, mode],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    assert proc.stdout.readline().strip() == "open"
    return proc


def _release(proc: subprocess.Popen[str]) -> None:
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write("\n")
    proc.stdin.close()
    proc.wait(timeout=60)
    proc.stdout.close()


def test_store_open_in_a_notebook_is_said_in_one_line(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A second process holds the store read-write (a notebook's
    ``Store(path)``): each verb says so in one line, with the holder's PID and
    the two fixes, not DuckDB's lock message."""
    holder = _holder(fleet, "rw")
    try:
        code, out, err = run(capsys, "mtbf", "--db", fleet)
        code_in, _, err_in = run(
            capsys, "ingest", "--db", fleet, "--kind", "events", fleet
        )
    finally:
        _release(holder)
    assert code == 1
    assert out == ""
    assert err == (
        f"relkit mtbf: error: the store {fleet} is open for writing in another "
        f"process (PID {holder.pid}, {Path(sys.executable).resolve().name}); close "
        "it there "
        f"(store.close()), or open it read-only there (Store({fleet!r}, "
        "read_only=True)) so that both can read\n"
    )
    assert code_in == 1
    assert err_in.count("\n") == 1
    assert f"(PID {holder.pid}, " in err_in
    assert "relkit ingest writes to it" in err_in
    assert "Conflicting lock" not in err + err_in


def test_read_only_verbs_share_a_store_opened_read_only(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A notebook holding ``Store(path, read_only=True)``: read-only verbs open
    the store read-only too, so both read (mtbf of systems 1, 2, 10: 1, 3 and
    2 failures; the events file's 6 events)."""
    holder = _holder(fleet, "ro")
    try:
        code, out, err = run(
            capsys, "mtbf", "--db", fleet, "--by", "system", "--format", "json"
        )
        others = {
            verb: run(capsys, verb, "--db", fleet, "--format", "json")
            for verb in ("events", "incidents", "rejects", "lemons", "mcf", "cif")
        }
    finally:
        _release(holder)
    assert code == 0, err
    assert [r["n_failures"] for r in json.loads(out)] == [1, 3, 2]
    assert {verb: done[0] for verb, done in others.items()} == dict.fromkeys(others, 0)
    assert len(json.loads(others["events"][1])) == 6


# -- RELKIT_DB and completion ---------------------------------------------------------
def test_relkit_db_sets_the_default_store(
    fleet: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """With RELKIT_DB set, ``relkit mtbf`` reads that store (6 failures in all)
    and the help names it."""
    monkeypatch.setenv("RELKIT_DB", fleet)
    code, out, err = run(capsys, "mtbf", "--format", "json")
    assert code == 0, err
    assert sum(r["n_failures"] for r in json.loads(out)) == 6
    with pytest.raises(SystemExit):
        main(["jobs", "--help"])
    # argparse wraps long paths at hyphens: compare without white space
    help_text = "".join(capsys.readouterr().out.split())
    assert f"$RELKIT_DBifset,elserelkit.duckdb;now{fleet})" in help_text


def test_relkit_db_is_used_by_the_command(fleet: str) -> None:
    """The same through the installed entry point's module, in a fresh process."""
    env = {**os.environ, "RELKIT_DB": fleet}
    done = _relkit("events", "--format", "csv", env=env)
    assert done.returncode == 0, done.stderr
    assert len(done.stdout.splitlines()) == 1 + 6  # header and six events


def test_bash_completion_script(tmp_path: Path) -> None:
    """``relkit completion bash``: a script bash parses (``bash -n``) that
    completes the verbs of the full parser and their options."""
    done = _relkit("completion", "bash")
    assert done.returncode == 0, done.stderr
    script = tmp_path / "relkit.bash"
    script.write_text(done.stdout)
    check = subprocess.run(
        ["bash", "-n", str(script)], capture_output=True, text=True, check=False
    )
    assert check.returncode == 0, check.stderr
    for verb in ("ingest", "mtbf", "jobs", "survival", "completion"):
        assert verb in done.stdout
    assert "--window-start" in done.stdout
    assert "complete " in done.stdout


@pytest.mark.parametrize("shell", ["zsh", "tcsh"])
def test_other_shells_get_a_script(
    shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """zsh and tcsh scripts name relkit's verbs too (no shell here to parse
    them, so their text is checked)."""
    code, out, _ = run(capsys, "completion", shell)
    assert code == 0
    assert "mtbf" in out
    assert "relkit" in out


def test_row_warnings_said_once_per_kind(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Monthly rows under 800 node-hours each carry a warning. By hand: a 31-day
    month is 744 h (system 10's Jan, Mar, May, Jul, Aug, Oct and Dec 2024, and
    system 2's Jan 2025: 8 rows), a 30-day one 720 h (Apr, Jun, Sep, Nov 2024:
    4 rows), February 2024 696 h; system 1's 240 h and system 2's last 280 h
    (Feb 1 to 12 16:00) are one row each. Five kinds, each said once."""
    code, _, err = run(
        capsys,
        "mtbf",
        "--db",
        fleet,
        "--by",
        "system",
        "--period",
        "month",
        "--min-exposure-h",
        "800",
    )
    assert code == 0
    said = [line for line in err.splitlines() if "node-hours at risk" in line]
    assert len(said) == 5
    assert said[0] == (
        "relkit: warning: only 744.0 node-hours at risk (under 800.0 h): the rate "
        "says little (8 rows, e.g. system 10, period_start 2024-01-01T00:00:00Z)"
    )
    assert said[2].endswith(
        "(4 rows, e.g. system 10, period_start 2024-04-01T00:00:00Z)"
    )
    assert "whole window: 6 failure(s) over 10,048 unit-hours" in err  # 240+1024+8784


def test_an_empty_job_list_is_an_error(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The fleet has failures but no job records: ``relkit jobs`` says so in one
    line with the ingest to run, instead of printing an empty table."""
    code, out, err = run(capsys, "jobs", "--db", fleet)
    assert code == 1
    assert out == ""
    assert err == (
        f"relkit jobs: error: {fleet} holds no job records; ingest a job log "
        f"first, e.g. relkit ingest --db {fleet} --kind sacct --tz UTC sacct.psv\n"
    )


def test_natural_order_within_a_leading_mode(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--by failure_mode,system``: systems 1, 2, 10 within each mode. By hand
    from the events file: hardware/gpu 1, 2 and 2 failures; network/nic 0, 1
    (system 2, 2025-01-23) and 0."""
    code, out, _ = run(capsys, "mtbf", "--db", fleet, "--by", "failure_mode,system")
    assert code == 0
    rows = _table(out)
    assert [(r["failure_mode"], r["system"], r["n_failures"]) for r in rows] == [
        ("hardware/gpu", "1", "1"),
        ("hardware/gpu", "2", "2"),
        ("hardware/gpu", "10", "2"),
        ("network/nic", "1", "0"),
        ("network/nic", "2", "1"),
        ("network/nic", "10", "0"),
    ]


def test_every_example_parses() -> None:
    """Each example in the help is a command the full parser accepts (options,
    choices and required arguments as written)."""
    import shlex

    from relkit._cli_help import EXAMPLES

    parser = build_parser()
    for verb, lines in EXAMPLES.items():
        for line in lines:
            words = shlex.split(line)
            if ">" in words:
                words = words[: words.index(">")]
            assert words[:2] == ["relkit", verb], line
            args = parser.parse_args(words[1:])
            assert args.verb == verb


def test_ingest_goes_on_when_stderr_is_closed(tmp_path: Path) -> None:
    """``relkit ingest A B C 2>&1 | head -1``: the reader of the progress lines
    has gone after the first, but all three files (one event each) are
    ingested, and nothing Python-made is printed."""
    paths = []
    for k, host in enumerate(("gpu1", "gpu2", "gpu10"), 1):
        path = tmp_path / f"events{k}.csv"
        path.write_text(f"ts,host,failure_mode\n2025-01-0{k}T00:00:00Z,{host},x/y\n")
        paths.append(str(path))
    db = tmp_path / "s.duckdb"
    line = (
        f"{sys.executable} -m relkit ingest --db {db} --kind events "
        f"{' '.join(paths)} 2>&1 | head -1"
    )
    done = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, check=False
    )
    assert done.stdout.startswith("relkit: [1/3] ")
    assert "Traceback" not in done.stdout + done.stderr
    listed = _relkit("events", "--db", str(db), "--format", "json")
    assert [r["host"] for r in json.loads(listed.stdout)] == ["gpu1", "gpu2", "gpu10"]


def test_an_empty_table_says_so(fleet: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The fleet's two files were read without a reject: the table has its
    header and stderr says there are no rows."""
    code, out, err = run(capsys, "rejects", "--db", fleet)
    assert code == 0
    assert _table(out) == []
    assert err == "relkit: note: the result has no rows\n"


def test_main_help_names_the_environment(capsys: pytest.CaptureFixture[str]) -> None:
    """``relkit --help`` names RELKIT_DB and the completion verb."""
    with pytest.raises(SystemExit):
        main(["--help"])
    out = capsys.readouterr().out
    assert "RELKIT_DB     the store of every verb with --db" in out
    assert "relkit completion bash" in out


def test_scale_table_separates_gpu_counts(capsys: pytest.CaptureFixture[str]) -> None:
    """``relkit scale --failure-rate 0.0065 --gpus 1024,16384,131072``: job MTTF
    = 24 / (N_nodes r_f) h with 8 GPUs a node (Kokolis et al. 2025,
    arXiv:2410.21680): 24 / (128 x 0.0065) = 28.846 h, 24 / (2048 x 0.0065) =
    1.803 h, 24 / (16384 x 0.0065) = 0.225 h (median 1.803: three decimals)."""
    code, out, _ = run(
        capsys, "scale", "--failure-rate", "0.0065", "--gpus", "1024,16384,131072"
    )
    assert code == 0
    rows = _table(out)
    assert [r["gpus"] for r in rows] == ["1,024", "16,384", "131,072"]
    assert [r["mttf_h"] for r in rows] == ["28.846", "1.803", "0.225"]


def test_window_error_writes_times_as_iso(
    fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A window in 1990: the fleet's first unit entered service on 2024-01-01
    (gpu10) and its last event is 2025-01-23 (gpu2's NIC): one line, the times
    as the CSV writes them."""
    code, _, err = run(
        capsys,
        "mtbf",
        "--db",
        fleet,
        "--window-start",
        "1990-01-01T00:00Z",
        "--window-end",
        "1991-01-01T00:00Z",
    )
    assert code == 1
    assert err == (
        "relkit mtbf: error: no unit was at risk in the window "
        "[1990-01-01T00:00:00Z, 1991-01-01T00:00:00Z): units enter service from "
        "2024-01-01T00:00:00Z, and the failure data ends at 2025-01-23T00:00:00Z. "
        "Choose a window that overlaps them, or check the assets' dates.\n"
    )


def test_ingest_table_does_not_repeat_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Two files, the second refused (an events file given as sacct): its
    reason is on stderr once; the table marks the row, --format json keeps
    the reason."""
    good = tmp_path / "good.csv"
    good.write_text(EVENTS)
    bad = tmp_path / "bad.csv"
    bad.write_text(EVENTS)
    db = str(tmp_path / "s.duckdb")
    assert run(capsys, "ingest", "--db", db, "--kind", "events", str(good))[0] == 0
    code, out, err = run(capsys, "ingest", "--db", db, "--kind", "sacct", str(bad))
    assert code == 1
    assert err.count("no JobID column") == 1
    code, out, err = run(
        capsys, "ingest", "--db", db, "--kind", "sacct", str(bad), str(bad)
    )
    assert code == 1
    assert err.count("no JobID column") == 2  # once per file given
    assert [r["error"] for r in _table(out)] == ["refused (above)"] * 2
    assert "no JobID column" not in out


def test_a_long_table_shows_its_ends(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LANL's 23,739 events: the table shows the first and last 100 (polars'
    ``…`` line between) and says how many there are; the last row is the last
    event by time in the JSON."""
    code, out, err = run(capsys, "events", "--db", str(lanl_db))
    assert code == 0
    rows = _table(out)
    assert len(rows) == 201  # 100, the "..." line, 100
    assert rows[100]["ts"] == "..."
    assert "the table has 23,739 rows (200 shown)" in err
    _, out_json, _ = run(capsys, "events", "--db", str(lanl_db), "--format", "json")
    events = json.loads(out_json)
    assert len(events) == 23739
    assert rows[-1]["ts"] == events[-1]["ts"].replace("T", " ")
    assert rows[0]["ts"] == events[0]["ts"].replace("T", " ")


def test_bash_completion_completes(tmp_path: Path) -> None:
    """Sourced in bash, the script completes ``relkit mt`` to the one verb that
    starts so (mtbf) and ``relkit ingest --kind s`` to the one kind (sacct)."""
    done = _relkit("completion", "bash")
    script = tmp_path / "relkit.bash"
    script.write_text(done.stdout)
    line = (
        f"source {script}; "
        "COMP_WORDS=(relkit mt); COMP_CWORD=1; _shtab_relkit relkit mt relkit; "
        'echo "${COMPREPLY[@]}"; '
        "COMP_WORDS=(relkit ingest --kind s); COMP_CWORD=3; "
        '_shtab_relkit relkit s --kind; echo "${COMPREPLY[@]}"'
    )
    got = subprocess.run(
        ["bash", "-c", line], capture_output=True, text=True, check=False
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.split("\n")[:2] == ["mtbf", "sacct"]
