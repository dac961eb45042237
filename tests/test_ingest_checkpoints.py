"""``relkit ingest --kind checkpoints`` (issue 11 §1): a run's checkpoint/step log.

Expected values are read by hand off the few lines each test writes, off case
C18 (``shared/cases/C18-goodput-disruption-rework.jsonl``: 22 records of one
run, ``shared/cases/README.md`` C18), or off the simulator's own file, whose
records are counted and compared one by one.
"""

import datetime as dt
import json
from collections import Counter
from pathlib import Path

import polars as pl
import pytest
from shared_paths import SHARED

from relkit.cli import main
from relkit.errors import IngestError
from relkit.ingest import (
    KINDS,
    looks_like_checkpoints,
    read_checkpoints,
    read_file,
)
from relkit.ingest.checkpoints import CHECKPOINT_EVENTS
from relkit.schema import POLARS_SCHEMAS
from relkit.simulate import simulate_cluster, simulation_preset, write_simulation
from relkit.store import Store

C18 = SHARED / "cases" / "C18-goodput-disruption-rework.jsonl"


def utc(*args: int) -> dt.datetime:
    return dt.datetime(*args, tzinfo=dt.UTC)


@pytest.fixture
def store() -> Store:
    with Store(":memory:") as s:
        yield s


def _options(store: Store, source_id: int = 1) -> dict:
    row = store.table("sources").filter(source_id=source_id)
    return json.loads(row.get_column("options")[0])


def _reasons(store: Store) -> dict[int, str]:
    return dict(store.table("rejects").select("line_no", "reason").rows())


def test_kind_is_known_everywhere() -> None:
    assert "checkpoints" in KINDS
    assert CHECKPOINT_EVENTS == (
        "job_start",
        "step_start",
        "step_end",
        "checkpoint_save_start",
        "checkpoint_saved",
        "checkpoint_restored",
        "failure",
        "job_end",
    )


# -- case C18 ----------------------------------------------------------------------
def test_ref_c18_read_exactly(store: Store) -> None:
    """C18: attempt 1 runs steps 0-4 (3 s each after a 5 s start), saves the state
    before step 2 at +11 s, fails on gpu017 (NODE_FAIL) at +20 s; attempt 2 starts
    at +50 s, restores step 2 at +55 s, redoes steps 2-4 and ends COMPLETED with
    final_step 5 at +64 s. The run is named by "job": "run-7"; there is no
    job_id; "note" is not read."""
    if not C18.is_file():
        pytest.skip("shared cases not present")
    result = read_file(store, C18, kind="checkpoints")
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (22, 22, 0)
    assert result.n_ignored == 0
    ck = store.table("checkpoints")
    assert ck.schema == POLARS_SCHEMAS["checkpoints"]
    assert ck["line_no"].to_list() == list(range(1, 23))  # sorted by ts, line
    assert set(ck["run_id"]) == {"run-7"}
    assert ck["job_id"].null_count() == 22
    steps = ["step_start", "step_end"]
    attempt1 = ["job_start", *steps, *steps, "checkpoint_saved", *steps * 3, "failure"]
    attempt2 = ["job_start", "checkpoint_restored", *steps * 3, "job_end"]
    assert ck["kind"].to_list() == attempt1 + attempt2
    assert ck["attempt"].to_list() == [1] * 13 + [2] * 9
    step1 = [None, 0, 0, 1, 1, 2, 2, 2, 3, 3, 4, 4, None]
    step2 = [None, 2, 2, 2, 3, 3, 4, 4, 5]
    assert ck["step"].to_list() == step1 + step2
    assert ck["ts"].dtype == pl.Datetime("us", "UTC")
    seconds = [int((t - utc(2025, 8, 1)).total_seconds()) for t in ck["ts"]]
    at1 = [0, 5, 8, 8, 11, 11, 11, 14, 14, 17, 17, 20, 20]
    at2 = [50, 55, 55, 58, 58, 61, 61, 64, 64]
    assert seconds == at1 + at2
    failure = ck.filter(kind="failure").row(0, named=True)
    assert (failure["host"], failure["status"]) == ("gpu017", "NODE_FAIL")
    end = ck.filter(kind="job_end").row(0, named=True)
    assert (end["status"], end["step"]) == ("COMPLETED", 5)
    saved = ck.filter(kind="checkpoint_saved").row(0, named=True)
    assert saved["save_s"] is None  # C18 gives no save_s and no start_ts
    assert _options(store)["ignored_fields"] == ["note"]
    assert _options(store)["format"] == "jsonl"


# -- the simulator's file ----------------------------------------------------------
@pytest.fixture(scope="module")
def simulated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    cfg = simulation_preset("llama3-54d", nodes=66, days=4)
    out = tmp_path_factory.mktemp("sim")
    write_simulation(simulate_cluster(cfg, seed=3), out)
    return out / "checkpoints.jsonl"


def test_recover_simulator_log_every_line_a_row(store: Store, simulated: Path) -> None:
    """relkit simulate's checkpoints.jsonl: every line is a row, no reject; the
    kinds count as the file's events; each row's step, save_s, restore_s,
    n_gpus, job_id, attempt and ts are its record's."""
    recs = [json.loads(line) for line in simulated.read_text().splitlines()]
    result = read_file(store, simulated, kind="checkpoints")
    assert (result.n_lines, result.n_loaded) == (len(recs), len(recs))
    assert (result.n_rejected, result.n_ignored) == (0, 0)
    ck = store.table("checkpoints").sort("line_no")
    kinds = Counter(ck["kind"].to_list())
    assert kinds == Counter(r["event"] for r in recs)
    assert {"job_start", "step_end", "checkpoint_saved", "job_end"} <= set(kinds)
    got = ck.to_dicts()
    for rec, row in zip(recs, got, strict=True):
        assert row["run_id"] == rec["run"]
        assert row["job_id"] == rec["job_id"]
        assert row["attempt"] == rec["attempt"]
        want_ts = dt.datetime.fromisoformat(rec["ts"])
        assert row["ts"] == want_ts
        event = rec["event"]
        if event in ("step_end", "checkpoint_saved", "checkpoint_restored"):
            assert row["step"] == rec["step"]
        if event == "checkpoint_saved":
            assert row["save_s"] == rec["save_s"]
            assert row["level"] == rec["level"]
        if event == "checkpoint_restored":
            assert row["restore_s"] == rec["restore_s"]
        if event == "job_start":
            assert (row["n_gpus"], row["n_nodes"]) == (rec["gpus"], rec["nodes"])
        if event == "job_end":
            assert (row["step"], row["status"]) == (rec["final_step"], rec["status"])
        if event == "failure":
            assert (row["host"], row["status"]) == (rec["node"], rec["cause"])
    assert "ignored_fields" not in _options(store)  # start_ts is read


# -- the table form ----------------------------------------------------------------
def test_csv_of_checkpoint_times(store: Store, tmp_path: Path) -> None:
    """Each row is a checkpoint_saved record: run_id from run_id, else job_id;
    job_id as given. Line 4 has neither (rejected), line 5 a step of 1.5 and a
    negative save_s (both reasons); 'rack' is listed as ignored."""
    path = tmp_path / "ck.csv"
    path.write_text(
        "job_id,run_id,ts,step,save_s,level,rack\n"
        "4108,,2025-03-01T00:15:00Z,90,12.5,persistent,r1\n"
        ",llama-a,2025-03-01T00:30:00+01:00,180,,,r1\n"
        ",,2025-03-01T00:45:00Z,270,10,,r1\n"
        "4108,llama-a,2025-03-01T01:00:00Z,1.5,-3,,r1\n"
    )
    result = read_checkpoints(store, path)
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (4, 2, 2)
    ck = store.table("checkpoints").sort("line_no")
    assert ck.select(
        "line_no", "run_id", "job_id", "ts", "kind", "step", "save_s", "level"
    ).rows() == [
        (
            2,
            "4108",
            "4108",
            utc(2025, 3, 1, 0, 15),
            "checkpoint_saved",
            90,
            12.5,
            "persistent",
        ),
        (
            3,
            "llama-a",
            None,
            utc(2025, 2, 28, 23, 30),
            "checkpoint_saved",
            180,
            None,
            None,
        ),
    ]
    assert _reasons(store) == {
        4: "no run: 'run_id', 'job_id' all missing or empty",
        5: "step is not a whole number: '1.5'; save_s is negative: '-3'",
    }
    options = _options(store)
    assert options["format"] == "csv"
    assert options["ignored_columns"] == ["rack"]


def test_parquet_table_and_tz(store: Store, tmp_path: Path) -> None:
    """The table form as Parquet, with zone-less times read in --tz: 09:00 in
    Europe/Berlin (CET, +01:00) is 08:00 UTC. A float step column (as Parquet
    writers make of a column with nulls) is whole at 500.0, rejected at 1.5."""
    path = tmp_path / "ck.parquet"
    pl.DataFrame(
        {
            "run_id": ["r1", "r1"],
            "ts": ["2025-01-10 09:00:00", "2025-01-10 10:00:00"],
            "step": [500.0, 1.5],
        }
    ).write_parquet(path)
    assert looks_like_checkpoints(path)
    result = read_checkpoints(store, path, tz="Europe/Berlin")
    assert (result.n_loaded, result.n_rejected) == (1, 1)
    row = store.table("checkpoints").row(0, named=True)
    assert (row["run_id"], row["ts"], row["step"]) == ("r1", utc(2025, 1, 10, 8), 500)
    assert _reasons(store) == {2: "step is not a whole number: '1.5'"}
    assert _options(store)["format"] == "parquet"


def test_table_without_run_or_ts_is_refused_with_the_right_kind(
    store: Store, tmp_path: Path
) -> None:
    path = tmp_path / "ev.csv"
    path.write_text("ts,host,failure_mode\n2025-01-01T00:00:00Z,n1,gpu/xid_79\n")
    with pytest.raises(IngestError) as err:
        read_checkpoints(store, path)
    message = str(err.value)
    assert message.startswith(f"{path}:1: --kind checkpoints expects JSON Lines")
    assert "use --kind events" in message


# -- bad input ---------------------------------------------------------------------
def test_zoneless_ts_without_tz_names_file_line_and_fix(
    store: Store, tmp_path: Path
) -> None:
    """Line 1 has Z; line 2 has no offset: the file is refused at line 2."""
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"ts": "2025-08-01T00:00:00Z", "run": "r", "event": "job_start"}\n'
        '{"ts": "2025-08-01T00:00:05", "run": "r", "event": "step_start", '
        '"step": 0}\n'
    )
    with pytest.raises(IngestError) as err:
        read_checkpoints(store, path)
    assert str(err.value) == (
        f"{path}:2: timestamp '2025-08-01T00:00:05' in field 'ts' has no UTC "
        "offset (Z, +01:00) and no time zone was given. Fix: name the zone the "
        "log was written in: pass --tz ZONE (library: tz='ZONE'), e.g. --tz UTC; "
        "or write the timestamps with offsets."
    )
    assert store.table("sources").is_empty()
    result = read_checkpoints(store, path, tz="UTC")
    assert (result.n_loaded, result.n_rejected) == (2, 0)
    assert store.table("checkpoints")["ts"].to_list() == [
        utc(2025, 8, 1),
        utc(2025, 8, 1, 0, 0, 5),
    ]


def test_bad_records_become_rejects_with_reasons(store: Store, tmp_path: Path) -> None:
    """One good line per kind of fault around it; the blank line 3 is ignored.

    Lines: 1 good; 2 unknown event; 3 blank; 4 no run; 5 garbage; 6 step 1.5;
    7 step_end without step; 8 unparseable ts; 9 start_ts after ts; 10 good,
    save_s from start_ts (10 - 4 = 6 s); 11 an array; 12 no ts; 13 no event;
    14 a string run id kept, attempt "x" rejected."""
    path = tmp_path / "run.jsonl"
    lines = [
        {
            "ts": "2025-08-01T00:00:00Z",
            "job": "run-7",
            "event": "job_start",
            "gpus": 16,
            "nodes": 2,
        },
        {"ts": "2025-08-01T00:00:05Z", "job": "run-7", "event": "restart"},
        None,
        {"ts": "2025-08-01T00:00:06Z", "event": "step_end", "step": 1},
        "garbage here",
        {
            "ts": "2025-08-01T00:00:07Z",
            "run": "r",
            "event": "step_end",
            "step": 1.5,
        },
        {"ts": "2025-08-01T00:00:07Z", "run": "r", "event": "step_end"},
        {"ts": "yesterday", "run": "r", "event": "checkpoint_saved", "step": 3},
        {
            "ts": "2025-08-01T00:00:10Z",
            "run": "r",
            "event": "checkpoint_saved",
            "step": 3,
            "start_ts": "2025-08-01T00:00:12Z",
        },
        {
            "ts": "2025-08-01T00:00:10Z",
            "run_id": "r",
            "event": "checkpoint_saved",
            "step": 3,
            "start_ts": "2025-08-01T00:00:04Z",
            "level": "memory",
        },
        [1, 2],
        {"run": "r", "event": "job_end"},
        {"ts": "2025-08-01T00:00:11Z", "run": "r"},
        {
            "ts": "2025-08-01T00:00:12Z",
            "run": "r",
            "event": "failure",
            "attempt": "x",
        },
    ]
    text = "".join(
        "\n" if x is None else (x if isinstance(x, str) else json.dumps(x)) + "\n"
        for x in lines
    )
    path.write_text(text)
    result = read_checkpoints(store, path)
    assert (result.n_lines, result.n_loaded, result.n_ignored) == (14, 2, 1)
    assert result.n_rejected == 11
    assert result.n_lines == result.n_loaded + result.n_ignored + result.n_rejected
    events = ", ".join(CHECKPOINT_EVENTS)
    assert _reasons(store) == {
        2: f"unknown event 'restart'; expected one of {events}",
        4: "no run: 'run_id', 'run', 'job' all missing or empty",
        5: "not valid JSON (Expecting value at column 1)",
        6: "step is not a whole number: 1.5",
        7: "step_end without 'step'",
        8: "unparseable timestamp in field 'ts': 'yesterday'",
        9: "start_ts '2025-08-01T00:00:12Z' is after ts '2025-08-01T00:00:10Z'",
        11: "not a JSON object: an array",
        12: "'ts' is missing or empty",
        13: "'event' is missing or empty",
        14: "attempt is not a whole number: 'x'",
    }
    raw = dict(store.table("rejects").select("line_no", "raw").rows())
    assert raw[5] == "garbage here"
    ck = store.table("checkpoints").sort("line_no")
    assert ck.select(
        "line_no", "kind", "n_gpus", "n_nodes", "save_s", "level"
    ).rows() == [
        (1, "job_start", 16, 2, None, None),
        (10, "checkpoint_saved", None, None, 6.0, "memory"),
    ]
    ignored = store.table("ignored").select("reason", "n_lines").rows()
    assert ignored == [("blank line", 1)]


def test_all_rejected_library_and_cli(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Both lines rejected: the result says so, the command exits 1 naming the
    file and the top reason, and the rejects stay in the store."""
    path = tmp_path / "bad.jsonl"
    path.write_text(
        'garbage\n{"ts": "2025-08-01T00:00:06Z", "event": "step_end", "step": 1}\n'
    )
    with Store(":memory:") as store:
        assert read_checkpoints(store, path).all_rejected
    db = tmp_path / "s.duckdb"
    code = main(["ingest", "--db", str(db), "--kind", "checkpoints", str(path)])
    err = capsys.readouterr().err
    assert code == 1
    assert (
        f'{path}: all 2 records were rejected; top reason (1×): "not valid JSON '
        '(Expecting value at column 1)"'
    ) in err
    assert "Traceback" not in err
    with Store(db, read_only=True) as store:
        assert store.table("rejects")["line_no"].to_list() == [1, 2]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("\n\n", "the file holds only blank lines"),
        (
            '[{"ts": "2025-08-01T00:00:00Z", "event": "job_start"}]\n',
            "one JSON array of 1 item(s), not JSON Lines",
        ),
        (
            '{\n "apiVersion": "v1",\n "items": []\n}\n',
            "it looks like Kubernetes JSON (kubectl get -o json): use --kind k8s",
        ),
        (
            '{\n "ts": "2025-08-01T00:00:00Z",\n "event": "job_start"\n}\n',
            "one JSON object spread over several lines",
        ),
    ],
)
def test_whole_file_refusals(
    store: Store, tmp_path: Path, text: str, expected: str
) -> None:
    path = tmp_path / "f.json"
    path.write_text(text)
    with pytest.raises(IngestError, match="^" + str(path)) as err:
        read_checkpoints(store, path)
    assert expected in str(err.value)


def test_dst_times_are_noted(store: Store, tmp_path: Path) -> None:
    """Europe/Berlin 2025-10-26 02:30 happens twice (the earlier, +02:00, is
    taken: 00:30 UTC); 2025-03-30 02:30 never happens (read as +01:00: 01:30
    UTC). checkpoints has no flags column, so the note and options say it."""
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"ts": "2025-10-26T02:30:00", "run": "r", "event": "job_start"}\n'
        '{"ts": "2025-03-30T02:30:00", "run": "r", "event": "job_start"}\n'
    )
    result = read_checkpoints(store, path, tz="Europe/Berlin")
    assert result.n_loaded == 2
    assert sorted(store.table("checkpoints")["ts"].to_list()) == [
        utc(2025, 3, 30, 1, 30),
        utc(2025, 10, 26, 0, 30),
    ]
    assert result.note == (
        "1 ts in a fall-back hour read as the earlier instant (line 1); 1 ts in "
        "a spring-forward gap read as standard time (+1 h) (line 2)"
    )
    options = _options(store)
    assert (options["n_dst_ambiguous"], options["n_dst_nonexistent"]) == (1, 1)


# -- kinds, options, detection -----------------------------------------------------
def test_looks_like_checkpoints(tmp_path: Path) -> None:
    cases = {
        "a.jsonl": '{"event": "job_start", "ts": "2025-01-01T00:00:00Z"}\n',
        "b.csv": "job_id,ts,step,save_s\n1,2025-01-01T00:00:00Z,1,1\n",
        "c.csv": "run_id;ts\nr;2025-01-01T00:00:00Z\n",
        "d.csv": "ts,host,failure_mode\n",  # events
        "e.csv": "job_id,ts,host\n",  # not exactly the shape
        "f.json": '{"kind": "PodList", "items": []}\n',
        "g.csv": "job_id,step\n",  # no ts
    }
    got = {}
    for name, text in cases.items():
        (tmp_path / name).write_text(text)
        got[name] = looks_like_checkpoints(tmp_path / name)
    assert got == {
        "a.jsonl": True,
        "b.csv": True,
        "c.csv": True,
        "d.csv": False,
        "e.csv": False,
        "f.json": False,
        "g.csv": False,
    }
    assert not looks_like_checkpoints(tmp_path / "missing.jsonl")
    assert not looks_like_checkpoints(tmp_path)


@pytest.mark.parametrize("kind", ["events", "assets", "k8s", "sacct"])
def test_other_kinds_point_to_checkpoints(
    store: Store, tmp_path: Path, kind: str
) -> None:
    """A checkpoint log given as another kind fails as before, and the message
    now names --kind checkpoints."""
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"ts": "2025-08-01T00:00:00Z", "run": "r", "event": "job_start"}\n'
    )
    with pytest.raises(IngestError, match="use --kind checkpoints"):
        read_file(store, path, kind=kind)


def test_unread_options_refused(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"ts": "2025-08-01T00:00:00Z", "run": "r", "event": "job_start"}\n'
    )
    with pytest.raises(IngestError, match="--host is for --kind kernel or nvsmi"):
        read_file(store, path, kind="checkpoints", host="n1")


def test_same_bytes_skipped_and_replace(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"ts": "2025-08-01T00:00:00Z", "run": "r", "event": "job_start"}\n'
    )
    assert read_file(store, path, kind="checkpoints").n_loaded == 1
    assert read_file(store, path, kind="checkpoints").skipped
    again = read_file(store, path, kind="checkpoints", replace=True)
    assert again.replaced == (1,)
    assert store.table("checkpoints")["source_id"].to_list() == [2]


# -- command line ------------------------------------------------------------------
def test_cli_round_trip(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """relkit ingest --kind checkpoints: exit 0, the counts on stderr, the JSON
    result on stdout, the rows in the store."""
    path = tmp_path / "run.jsonl"
    path.write_text(
        '{"ts": "2025-08-01T00:00:00Z", "run": "r", "event": "job_start"}\n'
        '{"ts": "2025-08-01T00:00:03Z", "run": "r", "event": "step_end", "step": 0}\n'
        '{"ts": "2025-08-01T00:00:04Z", "run": "r", "event": "boom"}\n'
    )
    db = tmp_path / "s.duckdb"
    code = main(
        [
            "ingest",
            "--db",
            str(db),
            "--kind",
            "checkpoints",
            "--format",
            "json",
            str(path),
        ]
    )
    captured = capsys.readouterr()
    assert code == 0
    assert f"{path}: 2 loaded, 0 ignored, 1 rejected" in captured.err
    assert "1 × \"unknown event 'boom'" in captured.err
    (row,) = json.loads(captured.out)
    assert (row["kind"], row["n_loaded"], row["n_rejected"]) == ("checkpoints", 2, 1)
    with Store(db, read_only=True) as store:
        assert store.table("checkpoints")["kind"].to_list() == [
            "job_start",
            "step_end",
        ]


def test_cli_zoneless_exit_code_and_message(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "run.jsonl"
    path.write_text('{"ts": "2025-08-01 00:00:00", "run": "r", "event": "job_start"}\n')
    code = main(
        [
            "ingest",
            "--db",
            str(tmp_path / "s.duckdb"),
            "--kind",
            "checkpoints",
            str(path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert f"{path}:1: timestamp '2025-08-01 00:00:00' in field 'ts' has no" in err
    assert "--tz ZONE" in err
    assert not (tmp_path / "s.duckdb").exists()  # a failed first ingest
