"""The observation model of issue 9: when a unit is at risk, what a unit is.

Every expected value is computed by hand in the test's docstring from the rule
of DESIGN.md §1a: a unit is at risk over each of its service windows, from
``max(in_service_ts, observed_from_ts, window_start)`` to
``min(out_of_service_ts, window_end, end of data)``. Chi-square bounds follow
Epstein & Sobel 1953 (doi:10.1080/01621459.1953.10483491), time-terminated:
lower = 2T / χ²(1 − α/2; 2r + 2), upper = 2T / χ²(α/2; 2r).
"""

import itertools
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from scipy.stats import chi2

from relkit import answers
from relkit.cli import main
from relkit.errors import InsufficientDataError, SchemaError
from relkit.ingest import read_file
from relkit.observation import observe, system_incidents
from relkit.store import Store


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _store(tmp_path: Path, files: dict[str, str]) -> Path:
    """Ingest ``{kind: csv text}`` into a new store file; return its path."""
    db = tmp_path / "s.duckdb"
    with Store(db) as store:
        for kind, text in files.items():
            path = tmp_path / f"{kind}.csv"
            path.write_text(text, encoding="utf-8")
            read_file(store, path, kind=kind, tz="UTC")
    return db


def _tables(db: Path) -> dict[str, pl.DataFrame]:
    with Store(db, read_only=True) as store:
        return answers.store_tables(store)


MARCH_ASSETS = "host,in_service_ts,out_of_service_ts\n" + "".join(
    f"g{i:02d},2025-03-01T00:00Z,2025-03-31T00:00Z\n" for i in range(16)
)
MARCH_EVENTS = (
    "ts,host,failure_mode\n"
    "2025-03-04T00:00Z,g01,gpu/hbm_uncorrectable\n"
    "2025-03-12T00:00Z,g02,gpu/hbm_uncorrectable\n"
    "2025-03-27T00:00Z,g03,gpu/hbm_uncorrectable\n"
)


def test_ref_explicit_out_of_service_is_honoured(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 9 §1: 16 assets in service 03-01 → 03-31 (720 h each), 3 failures.

    T = 16 × 720 = 11,520 h, MTBF = 11,520 / 3 = 3,840 h; 90 % bounds
    2T/χ²(0.95; 8) = 23,040 / 15.5073 = 1,485.75 h and 2T/χ²(0.05; 6) =
    23,040 / 1.63538 = 14,088.44 h. The old code ended observation at the last
    failure (03-27): 10,017 h and MTBF 3,339 h.
    """
    db = _store(tmp_path, {"assets": MARCH_ASSETS, "events": MARCH_EVENTS})
    code, out, err = _run(
        capsys, "mtbf", "--db", str(db), "--confidence", "0.9", "--format", "json"
    )
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["n_units"] == 16
    assert row["exposure_h"] == pytest.approx(11_520)
    assert row["mtbf_h"] == pytest.approx(3_840)
    assert row["mtbf_lower_h"] == pytest.approx(1_485.75, abs=0.01)
    assert row["mtbf_upper_h"] == pytest.approx(14_088.44, abs=0.01)
    assert row["exposure_basis"] == "assets: every unit's declared service window"
    assert row["observed_until"].startswith("2025-03-31T00:00:00")


JAN_ASSETS = (
    "host,in_service_ts,out_of_service_ts\n"
    "g1,2020-01-01T00:00Z,2020-01-31T00:00Z\n"
    "g2,2020-01-01T00:00Z,\n"
    "g3,2020-01-25T00:00Z,\n"
)
JAN_EVENTS = "ts,host,failure_mode\n2020-01-10T00:00Z,g1,gpu/hbm_uncorrectable\n"


def test_ref_declared_window_end_is_applied_and_extends_open_units(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 9 §1: g1 [Jan 1, Jan 31] = 720 h, g2 from Jan 1 open and g3 from
    Jan 25 open, extended to the declared end Jan 31: 720 h and 144 h. Total
    720 + 720 + 144 = 1,584 h (the old code gave 432 h)."""
    db = _store(tmp_path, {"assets": JAN_ASSETS, "events": JAN_EVENTS})
    code, out, err = _run(
        capsys,
        "mtbf",
        "--db",
        str(db),
        "--window-end",
        "2020-01-31T00:00Z",
        "--format",
        "json",
    )
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["n_units"], row["n_failures"]) == (3, 1)
    assert row["exposure_h"] == pytest.approx(1_584)
    assert row["exposure_basis"] == "assets: open-ended units to --window-end"
    # a declared start is applied as well: from Jan 20, g1 10 d, g2 10 d, g3 6 d
    code, out, err = _run(
        capsys,
        "mtbf",
        "--db",
        str(db),
        "--window-start",
        "2020-01-20T00:00Z",
        "--window-end",
        "2020-01-31T00:00Z",
        "--format",
        "json",
    )
    (row,) = json.loads(out)
    assert row["exposure_h"] == pytest.approx((11 + 11 + 6) * 24)
    assert row["n_failures"] == 0


def test_open_units_run_to_the_collection_time_not_the_last_failure(
    tmp_path: Path,
) -> None:
    """Without a declared end, open-ended units run to the end of data: the
    events file's collection time. With no --as-of that is its last record
    (Jan 10): g1 720 h (declared), g2 Jan 1 → 10 216 h, g3 enters after it
    (0 h): 936 h, 2 units. With `ingest --as-of 2020-01-31T00:00Z` on the
    events file: 720 + 720 + 144 = 1,584 h, 3 units."""
    db = _store(tmp_path, {"assets": JAN_ASSETS, "events": JAN_EVENTS})
    row = answers.mtbf_by(**_tables(db)).row(0, named=True)
    assert (row["n_units"], row["exposure_h"]) == (2, pytest.approx(936))
    assert "open-ended units to the last record" in row["exposure_basis"]
    (tmp_path / "asof").mkdir()
    db = tmp_path / "asof" / "s.duckdb"
    with Store(db) as store:
        for kind, text in (("assets", JAN_ASSETS), ("events", JAN_EVENTS)):
            path = tmp_path / "asof" / f"{kind}.csv"
            path.write_text(text, encoding="utf-8")
            as_of = datetime(2020, 1, 31, tzinfo=UTC) if kind == "events" else None
            read_file(store, path, kind=kind, tz="UTC", as_of=as_of)
    row = answers.mtbf_by(**_tables(db)).row(0, named=True)
    assert (row["n_units"], row["exposure_h"]) == (3, pytest.approx(1_584))
    assert row["observed_until"] == datetime(2020, 1, 31, tzinfo=UTC)


def test_a_planned_removal_does_not_stretch_other_units(tmp_path: Path) -> None:
    """Break-it review: x3 is due out on 2026-06-30; the events end on Jan 31
    2025. A declared removal is honoured (issue 9 §1): x3 keeps Jan 1 2025 →
    Jun 30 2026 (13,080 h), with a note that it lies after the data's end;
    x1 and x2, still in service, run to the data's end only: 2 × 720 h (not
    13,080 h each). --window-end Jan 31 gives 3 × 720 h."""
    assets = (
        "host,in_service_ts,out_of_service_ts\n"
        "x1,2025-01-01T00:00Z,\n"
        "x2,2025-01-01T00:00Z,\n"
        "x3,2025-01-01T00:00Z,2026-06-30T00:00Z\n"
    )
    events = (
        "ts,host,failure_mode\n"
        "2025-01-20T00:00Z,x1,host/mce\n"
        "2025-01-31T00:00Z,x2,host/mce\n"
    )
    db = _store(tmp_path, {"assets": assets, "events": events})
    obs = observe(**_tables(db))
    hours = dict(obs.windows.select("host", "exposure_h").iter_rows())
    assert hours == {"x1": 720.0, "x2": 720.0, "x3": 13_080.0}
    # the declared removal after the data's end is honoured, and said
    (note,) = obs.notes
    assert note.startswith("1 unit(s) are counted at risk to a declared")
    assert "x3 to 2026-06-30T00:00Z" in note
    assert "--window-end" in note
    end = datetime(2025, 1, 31, tzinfo=UTC)
    row = answers.mtbf_by(**_tables(db), window_end=end).row(0, named=True)
    assert row["exposure_h"] == pytest.approx(3 * 30 * 24)


def test_ref_store_with_assets_and_no_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 9 §1: assets and no failures is a valid question. T = 11,520 h,
    r = 0: no point estimate, one-sided 90 % lower bound 2T / χ²(0.9; 2) =
    23,040 / 4.60517 = 5,003.07 h."""
    db = _store(tmp_path, {"assets": MARCH_ASSETS})
    code, out, err = _run(
        capsys,
        "mtbf",
        "--db",
        str(db),
        "--by",
        "system",
        "--confidence",
        "0.9",
        "--format",
        "json",
    )
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["system"], row["n_failures"], row["mtbf_h"]) == ("unassigned", 0, None)
    expected = 2 * 11_520 / chi2.ppf(0.9, 2)
    assert row["mtbf_lower_one_sided_h"] == pytest.approx(expected)
    assert row["mtbf_lower_one_sided_h"] == pytest.approx(5_003.07, abs=0.01)


def test_units_with_several_windows_count_once(tmp_path: Path) -> None:
    """A node in service Jan 1–11 and again Jan 21–31 is one unit with 480 h;
    a failure on Jan 15 (in its gap) is excluded and named, one on Jan 5
    counts. Node b (Jan 1–31, 720 h) has none: T = 1,200 h, 2 units."""
    assets = (
        "host,in_service_ts,out_of_service_ts\n"
        "a,2021-01-01T00:00Z,2021-01-11T00:00Z\n"
        "a,2021-01-21T00:00Z,2021-01-31T00:00Z\n"
        "b,2021-01-01T00:00Z,2021-01-31T00:00Z\n"
    )
    events = (
        "ts,host,failure_mode\n"
        "2021-01-05T00:00Z,a,gpu/hbm_uncorrectable\n"
        "2021-01-15T00:00Z,a,gpu/hbm_uncorrectable\n"
        "2021-02-15T00:00Z,b,gpu/hbm_uncorrectable\n"
    )
    db = _store(tmp_path, {"assets": assets, "events": events})
    tables = _tables(db)
    row = answers.mtbf_by(**tables).row(0, named=True)
    assert (row["n_units"], row["n_failures"], row["n_excluded"]) == (2, 1, 2)
    assert row["exposure_h"] == pytest.approx(480 + 720)
    excluded = answers.excluded_failures(**tables)
    assert excluded["host"].to_list() == ["a", "b"]
    assert excluded["reason"].to_list() == [
        "between two service windows of the unit",
        "after the unit left service (2021-01-31T00:00Z)",
    ]
    # the CLI names them in `relkit rejects`, with file and line, after ingest's
    assert main(["rejects", "--db", str(db), "--format", "json"]) == 0


def test_rejects_lists_ingest_rejects_and_excluded_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """One bad assets line (ingest) and one failure after its node left service
    (observation): `relkit rejects` lists both with file, line and reason."""
    assets = (
        "host,in_service_ts,out_of_service_ts\n"
        "a,2021-01-01T00:00Z,2021-01-11T00:00Z\n"
        "b,yesterday,\n"
    )
    events = "ts,host,failure_mode\n2021-01-15T00:00Z,a,gpu/hbm_uncorrectable\n"
    db = _store(tmp_path, {"assets": assets, "events": events})
    code, out, err = _run(capsys, "rejects", "--db", str(db), "--format", "json")
    assert code == 0, err
    rows = json.loads(out)
    assert [(Path(r["source"]).name, r["line_no"]) for r in rows] == [
        ("assets.csv", 3),
        ("events.csv", 2),
    ]
    assert set(rows[0]) == {"source", "line_no", "reason", "raw"}
    assert rows[1]["reason"] == (
        "excluded from MTBF: failure after the unit left service (2021-01-11T00:00Z)"
    )
    assert rows[1]["raw"] == "2021-01-15T00:00:00Z a gpu/hbm_uncorrectable"


def test_unknown_install_date_enters_at_tracking_start_left_truncated() -> None:
    """A unit with no in_service_ts enters at observed_from_ts (Jan 11), or,
    with neither, at its first record (a failure on Jan 21), left-truncated
    with its age unknown. Window end Jan 31: a 480 h, b 240 h, c 720 h."""

    def d(day: int) -> datetime:
        return datetime(2022, 1, day, tzinfo=UTC)

    assets = pl.DataFrame(
        {
            "source_id": [1, 1, 1],
            "line_no": [2, 3, 4],
            "host": ["a", "b", "c"],
            "in_service_ts": [None, None, d(1)],
            "observed_from_ts": [d(11), None, None],
        },
        schema_overrides={
            "source_id": pl.Int32,
            "in_service_ts": pl.Datetime("us", "UTC"),
            "observed_from_ts": pl.Datetime("us", "UTC"),
        },
    )
    events = pl.DataFrame(
        {
            "source_id": [2],
            "line_no": [2],
            "ts": [d(21)],
            "host": ["b"],
            "failure_mode": ["gpu/hbm_uncorrectable"],
        },
        schema_overrides={"source_id": pl.Int32},
    )
    from relkit.schema import POLARS_SCHEMAS

    assets = pl.concat(
        [pl.DataFrame(schema=POLARS_SCHEMAS["assets"]), assets], how="diagonal_relaxed"
    )
    events = pl.concat(
        [pl.DataFrame(schema=POLARS_SCHEMAS["events"]), events], how="diagonal_relaxed"
    )
    obs = observe(events, assets, window_end=d(31))
    w = obs.windows.sort("host")
    assert w["exposure_h"].to_list() == [480.0, 240.0, 720.0]
    assert w["left_truncated"].to_list() == [True, True, False]
    assert w["in_service_unknown"].to_list() == [True, True, False]
    assert obs.failures.height == 1


def _rack_store(tmp_path: Path) -> Path:
    assets = (
        "host,in_service_ts,rack,gpus\n"
        "a,2023-01-01T00:00Z,r1,8\n"
        "b,2023-01-01T00:00Z,r1,8\n"
        "c,2023-01-01T00:00Z,r2,4\n"
    )
    events = (
        "ts,host,failure_mode,device\n"
        "2023-01-02T00:00Z,a,gpu/hbm_uncorrectable,0000:3b:00\n"
        "2023-01-03T00:00Z,c,gpu/hbm_uncorrectable,0000:3b:00\n"
        "2023-01-04T00:00Z,c,gpu_memory_uce,0000:5d:00\n"
    )
    return _store(tmp_path, {"assets": assets, "events": events})


def test_by_any_asset_attribute_with_its_own_exposure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--by rack (an extra assets column): r1 has 2 nodes, r2 one. Window Jan 1
    → Jan 11 (240 h): r1 480 node-h and 1 failure, r2 240 node-h and 2."""
    db = _rack_store(tmp_path)
    code, out, err = _run(
        capsys,
        "mtbf",
        "--db",
        str(db),
        "--by",
        "rack",
        "--window-end",
        "2023-01-11T00:00Z",
        "--format",
        "json",
    )
    assert code == 0, err
    rows = {r["rack"]: r for r in json.loads(out)}
    assert rows["r1"]["n_units"] == 2
    assert rows["r1"]["exposure_h"] == pytest.approx(480)
    assert rows["r1"]["n_failures"] == 1
    assert rows["r2"]["exposure_h"] == pytest.approx(240)
    assert rows["r2"]["n_failures"] == 2


def test_unit_gpu_labels_rates_per_gpu_day(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--unit gpu: GPU-hours = 240 h × (8 + 8 + 4) = 4,800; 3 failures give
    1000 × 24 × 3 / 4,800 = 15 failures per 1000 GPU-days."""
    db = _rack_store(tmp_path)
    code, out, err = _run(
        capsys,
        "mtbf",
        "--db",
        str(db),
        "--unit",
        "gpu",
        "--window-end",
        "2023-01-11T00:00Z",
        "--format",
        "json",
    )
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["unit"] == "gpu"
    assert row["exposure_h"] == pytest.approx(4_800)
    assert row["failures_per_1000_gpu_days"] == pytest.approx(15)
    assert "failures_per_1000_node_days" not in row


def test_by_device_on_node_assets_is_a_clear_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = _rack_store(tmp_path)
    code, _, err = _run(capsys, "mtbf", "--db", str(db), "--by", "device")
    assert code != 0
    assert "cannot group by device: the assets list nodes" in err
    assert "Traceback" not in err


def test_per_gpu_assets_make_devices_units() -> None:
    """Two GPUs of node n (Jan 1–11 and Jan 6–16): 240 + 240 GPU-hours; as
    node-hours the node is at risk Jan 1–16 once (360 h), overlaps merged."""

    def d(day: int) -> datetime:
        return datetime(2024, 1, day, tzinfo=UTC)

    from relkit.schema import POLARS_SCHEMAS

    assets = pl.concat(
        [
            pl.DataFrame(schema=POLARS_SCHEMAS["assets"]),
            pl.DataFrame(
                {
                    "source_id": [1, 1],
                    "host": ["n", "n"],
                    "device": ["0000:3b:00", "0000:5d:00"],
                    "gpus": [1, 1],
                    "in_service_ts": [d(1), d(6)],
                    "out_of_service_ts": [d(11), d(16)],
                },
                schema_overrides={"source_id": pl.Int32, "gpus": pl.Int32},
            ),
        ],
        how="diagonal_relaxed",
    )
    events = pl.DataFrame(schema=POLARS_SCHEMAS["events"])
    gpu = answers.mtbf_by(events, assets, by=["device"])
    assert gpu["exposure_h"].to_list() == [240.0, 240.0]
    assert gpu["unit"].unique().to_list() == ["gpu"]
    node = answers.mtbf_by(events, assets, unit="node").row(0, named=True)
    assert (node["n_units"], node["exposure_h"]) == (1, 360.0)


def test_any_failure_mode_name_is_a_failure(tmp_path: Path) -> None:
    """Issue 9 §4: `gpu_memory_uce` is not a taxonomy mode; it loads, with
    category unknown, and counts as a failure (2 of the 3 failures here are
    on node c, rack r2)."""
    db = _rack_store(tmp_path)
    out = answers.mtbf_by(
        **_tables(db),
        by=["failure_mode"],
        window_end=datetime(2023, 1, 11, tzinfo=UTC),
    )
    counts = dict(out.select("failure_mode", "n_failures").iter_rows())
    assert counts == {"gpu/hbm_uncorrectable": 2, "gpu_memory_uce": 1}


def test_small_exposure_gets_a_warning(tmp_path: Path) -> None:
    """Under 24 unit-hours at risk the row carries a warning, not a bare rate:
    3 nodes × 6 h = 18 h."""
    db = _rack_store(tmp_path)
    row = answers.mtbf_by(
        **_tables(db), window_end=datetime(2023, 1, 1, 6, tzinfo=UTC)
    ).row(0, named=True)
    assert row["exposure_h"] == pytest.approx(18)
    assert row["warning"].startswith("only 18.0 node-hours at risk (under 24.0 h)")


def test_open_units_with_no_known_end_ask_for_one(tmp_path: Path) -> None:
    """An inventory of open-ended units and nothing else: no source says when
    collection ended, so the answer asks for --window-end or --as-of."""
    db = _store(tmp_path, {"assets": "host,in_service_ts\na,2023-01-01T00:00Z\n"})
    with pytest.raises(InsufficientDataError, match=r"--window-end.*--as-of"):
        answers.mtbf_by(**_tables(db))


def test_system_incidents_fold_simultaneous_failures() -> None:
    """Three nodes down at 00:00:00, 00:00:00 and 00:00:50 are one outage (60 s
    resolution); one at 00:02:00 another: 2 incidents. With resolution 0 the
    00:00:50 record is its own: 3."""

    def t(m: int, s: int = 0) -> datetime:
        return datetime(2024, 1, 1, 0, m, s, tzinfo=UTC)

    f = pl.DataFrame({"system": ["s"] * 4, "ts": [t(0), t(0), t(0, 50), t(2)]})
    assert system_incidents(f)["n_units"].to_list() == [3, 1]
    assert system_incidents(f, resolution_s=0)["n_units"].to_list() == [2, 1, 1]


def test_lanl_system_2_outages_count_once_for_the_job(
    lanl_tables: tuple[pl.DataFrame, pl.DataFrame],
) -> None:
    """LANL system 2 (49 nodes): 7,104 node records, of which 1,707 share their
    start time with the previous record (1,707 zero-length gaps of 7,105, issue
    9 §4): 5,397 outages at one instant, 5,356 within 60 s. The job spanning
    the system sees each outage once: calendar time / outages, not / records.
    """
    events, assets = lanl_tables
    starts = sorted(events.filter(system="2")["ts"].to_list())
    zero = sum(a == b for a, b in itertools.pairwise(starts))
    assert (len(starts), zero) == (7_104, 1_707)
    plan = answers.checkpoint_plan_by_system(
        events, assets, cost_h=5 / 60, restart_h=1 / 6
    ).filter(system="2")
    row = plan.row(0, named=True)
    assert (row["n_failures"], row["n_interruptions"]) == (7_104, 5_356)
    calendar_h = row["node_mtbf_h"] * 7_104 / 49
    assert row["mtbf_h"] == pytest.approx(calendar_h / 5_356)
    # each record as an interruption would give 10.5 h; outages give 13.9 h
    assert calendar_h / 7_104 == pytest.approx(10.51, abs=0.01)
    assert row["mtbf_h"] == pytest.approx(13.94, abs=0.01)


def test_incidents_exit_1_when_no_event_has_wall_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Plain dmesg with no anchor: incidents says so and exits 1, as mtbf."""
    log = tmp_path / "n1.log"
    log.write_text(
        "[    5.100000] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen\n"
    )
    db = tmp_path / "k.duckdb"
    with Store(db) as store:
        read_file(store, log, kind="kernel", host="n1")
    for verb in ("incidents", "mtbf"):
        code, out, err = _run(capsys, verb, "--db", str(db))
        assert code == 1, verb
        assert "none has a wall time" in err
        assert out == ""


def test_incidents_fold_normalised_events(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Normalised events fold as kernel events (issue 9 §4): n1 at 00:00,
    00:04, 00:09 and 00:30, n2 at 00:01, window 10 min → 3 incidents."""
    events = "ts,host,failure_mode\n" + "".join(
        f"2024-05-01T00:{m:02d}Z,{h},gpu_memory_uce\n"
        for h, m in (("n1", 0), ("n1", 4), ("n1", 9), ("n1", 30), ("n2", 1))
    )
    db = _store(tmp_path, {"events": events})
    code, out, err = _run(
        capsys, "incidents", "--db", str(db), "--window-min", "10", "--format", "json"
    )
    assert code == 0, err
    rows = json.loads(out)
    assert [(r["host"], r["n_events"]) for r in rows] == [
        ("n1", 3),
        ("n1", 1),
        ("n2", 1),
    ]


def test_unknown_group_column_names_the_choices(tmp_path: Path) -> None:
    db = _rack_store(tmp_path)
    with pytest.raises(SchemaError, match=r"cannot group by \['shelf'\].*'rack'"):
        answers.mtbf_by(**_tables(db), by=["shelf"])


def test_age_counts_time_in_service_only(tmp_path: Path) -> None:
    """Node a serves Jan 1–11 and Jan 21–31 (2021); failures on Jan 5 and Jan 25.
    On its in-service clock: Jan 5 is 96 h, Jan 25 is 240 + 96 = 336 h, the end
    240 + 240 = 480 h. Gaps: 96 h (from install), 336 − 96 = 240 h (not the
    480 calendar hours: the 10 days out of service are neither age nor
    exposure), then 144 h censored."""
    assets = (
        "host,in_service_ts,out_of_service_ts\n"
        "a,2021-01-01T00:00Z,2021-01-11T00:00Z\n"
        "a,2021-01-21T00:00Z,2021-01-31T00:00Z\n"
    )
    events = (
        "ts,host,failure_mode\n"
        "2021-01-05T00:00Z,a,gpu/hbm_uncorrectable\n"
        "2021-01-25T00:00Z,a,gpu/hbm_uncorrectable\n"
    )
    tables = _tables(_store(tmp_path, {"assets": assets, "events": events}))
    table = answers.time_between_failures(**tables, unit="node")
    assert table.select("entry_h", "stop_h", "observed").rows() == [
        (0.0, 96.0, True),
        (0.0, 240.0, True),
        (0.0, 144.0, False),
    ]


def test_failure_before_tracking_sets_the_next_gaps_origin(tmp_path: Path) -> None:
    """Node b in service 2020-12-01, tracked from 2021-01-01; a failure on
    2020-12-25 (before tracking: not counted, but the origin of the next gap)
    and one on 2021-01-05. First observed gap: origin Dec 25, entry = Jan 1 −
    Dec 25 = 168 h, stop = Jan 5 − Dec 25 = 264 h; then Jan 5 → Jan 31 = 624 h
    censored. The same holds with a declared window start instead of a
    tracking start (entry = window start − last failure)."""
    assets = (
        "host,in_service_ts,observed_from_ts,out_of_service_ts\n"
        "b,2020-12-01T00:00Z,2021-01-01T00:00Z,2021-01-31T00:00Z\n"
    )
    events = (
        "ts,host,failure_mode\n"
        "2020-12-25T00:00Z,b,gpu/hbm_uncorrectable\n"
        "2021-01-05T00:00Z,b,gpu/hbm_uncorrectable\n"
    )
    tables = _tables(_store(tmp_path, {"assets": assets, "events": events}))
    expected = [(168.0, 264.0, True), (0.0, 624.0, False)]
    table = answers.time_between_failures(**tables, unit="node")
    assert table.select("entry_h", "stop_h", "observed").rows() == expected
    assert answers.mtbf_by(**tables)["n_failures"].to_list() == [1]

    assets_open = (
        "host,in_service_ts,out_of_service_ts\nb,2020-12-01T00:00Z,2021-01-31T00:00Z\n"
    )
    (tmp_path / "w").mkdir()
    tables = _tables(_store(tmp_path / "w", {"assets": assets_open, "events": events}))
    table = answers.time_between_failures(
        **tables, unit="node", window_start=datetime(2021, 1, 1, tzinfo=UTC)
    )
    assert table.select("entry_h", "stop_h", "observed").rows() == expected


def test_node_in_service_before_tracking_keeps_its_first_gap(tmp_path: Path) -> None:
    """No install date, tracked from Jan 1: the first gap runs from the tracking
    start (left-truncated there, not dropped): Jan 1 → Jan 4 = 72 h, then 648 h
    censored to Jan 31; survival_by counts it in n_origin_unknown."""
    assets = "host,in_service_ts,observed_from_ts\nc,,2021-01-01T00:00Z\n"
    events = "ts,host,failure_mode\n2021-01-04T00:00Z,c,gpu/hbm_uncorrectable\n"
    tables = _tables(_store(tmp_path, {"assets": assets, "events": events}))
    end = datetime(2021, 1, 31, tzinfo=UTC)
    table = answers.time_between_failures(**tables, unit="node", window_end=end)
    assert table.select("entry_h", "stop_h", "observed").rows() == [
        (0.0, 72.0, True),
        (0.0, 648.0, False),
    ]
    fits = answers.survival_by(**tables, unit="node", window_end=end)
    assert fits.select("n_origin_unknown", "n_excluded").row(0) == (1, 0)


def _dmesg_iso(path: Path, n: int = 41, xid_at: int = 11) -> None:
    """A `dmesg --time-format iso` log of n lines from 05:39:15 to 12:02:15
    (evenly spaced), an Xid 48 on line ``xid_at``, the rest ordinary lines."""
    t0 = datetime(2025, 6, 11, 5, 39, 15)
    t1 = datetime(2025, 6, 11, 12, 2, 15)
    lines = []
    for i in range(n):
        t = t0 + (t1 - t0) * i / (n - 1)
        stamp = t.strftime("%Y-%m-%dT%H:%M:%S,%f") + "+00:00"
        msg = (
            "NVRM: Xid (PCI:0000:3b:00): 48, pid=2112, name=python, DBE (0x1)"
            if i == xid_at - 1
            else f"systemd[1]: Started session {i} of user root."
        )
        lines.append(f"{stamp} kernel: {msg}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_ref_exposure_from_logs_alone_is_the_logs_span(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 9 §2: 41 lines, 05:39:15 → 12:02:15, one Xid 48 on line 11: the host
    is at risk 6 h 23 min = 6.3833 h (the old code gave 12.5 s, MTBF 0.0035 h);
    under 24 h at risk the row carries a warning, also on stderr."""
    log = tmp_path / "dmesg.log"
    _dmesg_iso(log)
    db = tmp_path / "k.duckdb"
    with Store(db) as store:
        read_file(store, log, kind="kernel", host="gpu01")
    code, out, err = _run(capsys, "mtbf", "--db", str(db), "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["exposure_h"] == pytest.approx(6 + 23 / 60)
    assert row["mtbf_h"] == pytest.approx(6 + 23 / 60)
    assert row["exposure_basis"] == answers.ASSUMED_BASIS
    assert "warning: only 6.38 node-hours at risk" in err


def test_hosts_without_failure_signals_are_at_risk(tmp_path: Path) -> None:
    """A syslog of two hosts, 10:00 → 14:00; only gpu01 has an Xid. Both are at
    risk over their own lines: gpu01 10:00 → 14:00 (4 h), gpu02 10:30 → 13:30
    (3 h): 7 node-hours, 2 units."""
    lines = [
        "2025-06-11T10:00:00+00:00 gpu01 kernel: systemd[1]: Started session 1.",
        "2025-06-11T10:30:00+00:00 gpu02 kernel: systemd[1]: Started session 1.",
        "2025-06-11T11:00:00+00:00 gpu01 kernel: NVRM: Xid (PCI:0000:3b:00): 48,"
        " pid=2112, name=python, DBE (0x1)",
        "2025-06-11T13:30:00+00:00 gpu02 kernel: systemd[1]: Started session 2.",
        "2025-06-11T14:00:00+00:00 gpu01 kernel: systemd[1]: Started session 2.",
    ]
    log = tmp_path / "syslog"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    with Store(":memory:") as store:
        read_file(store, log, kind="kernel", tz="UTC")
        tables = answers.store_tables(store)
    row = answers.mtbf_by(**tables).row(0, named=True)
    assert (row["n_units"], row["n_failures"]) == (2, 1)
    assert row["exposure_h"] == pytest.approx(7.0)


def test_one_store_one_answer_on_the_bundled_simulated_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 9 §4: `relkit mtbf`, the library snippet of the README
    (`mtbf_by(**store_tables(store))`) and the report's MTBF table give the
    same fleet MTBF for the same store (they once differed: 8,345 h vs 8,031 h).
    264 nodes at risk until the logs' collection time: 264 × 54 × 24 =
    342,144 node-hours (datasets/synthetic/.../ground_truth.json)."""
    import relkit.datasets
    from relkit.ingest import read_path
    from relkit.report import write_report

    data = relkit.datasets.path("synthetic")
    truth = json.loads((data / "ground_truth.json").read_text(encoding="utf-8"))
    ref = truth["ingest"]["kernel"].split("--reference-date ")[1].split()[0]
    db = tmp_path / "sim.duckdb"
    with Store(db) as store:
        read_file(store, data / "assets.csv", kind="assets")
        read_path(
            store,
            data / "kernel",
            kind="kernel",
            tz="UTC",
            reference_date=ref,
            host_from_filename=True,
        )
        library = answers.mtbf_by(**answers.store_tables(store)).row(0, named=True)
        write_report(store, tmp_path / "report")
    code, out, err = _run(capsys, "mtbf", "--db", str(db), "--format", "json")
    assert code == 0, err
    (cli,) = json.loads(out)
    report = pl.read_csv(tmp_path / "report" / "tables" / "mtbf_by_system.csv")
    report_mtbf = report["exposure_h"].sum() / report["n_failures"].sum()
    assert cli["exposure_h"] == pytest.approx(264 * 54 * 24, rel=1e-6)
    assert cli["mtbf_h"] == pytest.approx(library["mtbf_h"], rel=1e-12)
    assert report_mtbf == pytest.approx(cli["mtbf_h"], rel=1e-12)
    assert cli["n_failures"] == library["n_failures"] == report["n_failures"].sum()


def test_a_files_declaration_covers_its_own_rows_only(tmp_path: Path) -> None:
    """Break-it review: e6 declares `hardware/gpu_hbm` not a failure (its own
    row); e1, ingested after it and declaring nothing, has 3 rows of the same
    mode, which count (a mode outside the taxonomy defaults to a failure)."""
    db = tmp_path / "s.duckdb"
    files = {
        "e6": "ts,host,failure_mode,counts_as_failure\n"
        "2025-03-20T00:00Z,g09,hardware/gpu_hbm,false\n",
        "e1": MARCH_EVENTS.replace("gpu/hbm_uncorrectable", "hardware/gpu_hbm"),
    }
    with Store(db) as store:
        path = tmp_path / "assets.csv"
        path.write_text(MARCH_ASSETS, encoding="utf-8")
        read_file(store, path, kind="assets", tz="UTC")
        for name, text in files.items():
            path = tmp_path / f"{name}.csv"
            path.write_text(text, encoding="utf-8")
            read_file(store, path, kind="events", tz="UTC")
    assert answers.mtbf_by(**_tables(db))["n_failures"].to_list() == [3]


def test_records_with_taxonomy_mode_names_are_not_folded(tmp_path: Path) -> None:
    """Break-it review: a normalised events file naming a taxonomy mode
    (host/mce) is records, one failure each: n00 at 00:00, 00:05, 00:12 and
    n01 at 00:05 are 4 failures (MTBF 11,520 / 4 = 2,880 h), not 2 incidents;
    with --window-min 10 they fold as log lines do (gaps of 5 and 7 min chain
    n00's three into one incident), n01 apart: 2."""
    events = "ts,host,failure_mode\n" + "".join(
        f"2025-03-04T00:{m:02d}Z,{h},host/mce\n"
        for h, m in (("g00", 0), ("g00", 5), ("g00", 12), ("g01", 5))
    )
    tables = _tables(_store(tmp_path, {"assets": MARCH_ASSETS, "events": events}))
    row = answers.mtbf_by(**tables).row(0, named=True)
    assert (row["n_failures"], row["mtbf_h"]) == (4, pytest.approx(2_880))
    folded = answers.mtbf_by(**tables, window_min=10).row(0, named=True)
    assert folded["n_failures"] == 2


def test_a_failure_takes_the_attributes_of_its_window(tmp_path: Path) -> None:
    """Break-it review: h2 sits in rack r1 Jan 1–11 and in r2 Jan 11–21; its
    failure on Jan 15 belongs to r2. r1: 0 failures over 240 h, r2: 1 over
    240 h."""
    assets = (
        "host,in_service_ts,out_of_service_ts,rack\n"
        "h2,2025-01-01T00:00Z,2025-01-11T00:00Z,r1\n"
        "h2,2025-01-11T00:00Z,2025-01-21T00:00Z,r2\n"
    )
    events = "ts,host,failure_mode\n2025-01-15T00:00Z,h2,hardware/gpu_hbm\n"
    tables = _tables(_store(tmp_path, {"assets": assets, "events": events}))
    out = answers.mtbf_by(**tables, by=["rack"])
    assert out.select("rack", "n_failures", "exposure_h").rows() == [
        ("r1", 0, 240.0),
        ("r2", 1, 240.0),
    ]


def test_units_without_install_date_in_survival(tmp_path: Path) -> None:
    """Break-it review. u1: no install date, tracked from Jan 10, failures on
    Jan 5 (before tracking: the origin) and Jan 20: first gap entry 120 h
    (Jan 5 → 10), stop 360 h (Jan 5 → 20), then 264 h censored (Jan 20 → 31).
    u3: no dates at all; its first record is its Jan 15 failure, so it enters
    there: no gap before it (excluded, said), then 384 h censored."""
    assets = "host,in_service_ts,observed_from_ts\nu1,,2025-01-10T00:00Z\nu3,,\n"
    events = (
        "ts,host,failure_mode\n"
        "2025-01-05T00:00Z,u1,hardware/gpu_hbm\n"
        "2025-01-20T00:00Z,u1,hardware/gpu_hbm\n"
        "2025-01-15T00:00Z,u3,hardware/gpu_hbm\n"
    )
    tables = _tables(_store(tmp_path, {"assets": assets, "events": events}))
    end = datetime(2025, 1, 31, tzinfo=UTC)
    table = answers.time_between_failures(**tables, unit="node", window_end=end)
    assert table.select("unit_id", "entry_h", "stop_h", "observed").rows() == [
        ("u1", 120.0, 360.0, True),
        ("u1", 0.0, 264.0, False),
        ("u3", 0.0, 384.0, False),
    ]
    fits = answers.survival_by(**tables, unit="node", window_end=end)
    # u1's Jan 5 (before tracking) is excluded; u3's Jan 15 opens its own
    # window (no dates: its first record), so it is its gap's origin, counted
    # apart (n_origin_failures), not an exclusion
    assert fits["n_excluded"].to_list() == [1]
    assert fits["n_origin_failures"].to_list() == [1]


def test_node_level_failures_on_per_gpu_assets(tmp_path: Path) -> None:
    """Break-it review: per-GPU assets of nodes g1 and g2, all Jan 1–11 (2025).
    Failures: g1/0 Jan 3, g1/1 Jan 4, g2 with no device Jan 5 (a memory UE),
    g2 device 0000:ff:00 (not in the inventory) Jan 8. Per node (the time any
    GPU of the node serves): 2 × 240 h, 4 failures, MTBF 120 h. By device the
    two node-level failures are in no device's row, and the row says so."""
    assets = "host,in_service_ts,out_of_service_ts,device\n" + "".join(
        f"{h},2025-01-01T00:00Z,2025-01-11T00:00Z,{d}\n"
        for h in ("g1", "g2")
        for d in ("0000:3b:00", "0000:5d:00")
    )
    events = (
        "ts,host,failure_mode,device\n"
        "2025-01-03T00:00Z,g1,gpu/hbm_uncorrectable,0000:3b:00\n"
        "2025-01-04T00:00Z,g1,gpu/hbm_uncorrectable,0000:5d:00\n"
        "2025-01-05T00:00Z,g2,host/memory_ue,\n"
        "2025-01-08T00:00Z,g2,gpu/hbm_uncorrectable,0000:ff:00\n"
    )
    tables = _tables(_store(tmp_path, {"assets": assets, "events": events}))
    node = answers.mtbf_by(**tables, unit="node").row(0, named=True)
    assert (node["n_units"], node["n_failures"], node["n_excluded"]) == (2, 4, 0)
    assert node["mtbf_h"] == pytest.approx(120)
    by_device = answers.mtbf_by(**tables, by=["host", "device"])
    assert by_device["n_failures"].sum() == 2
    assert "2 node-level failure(s) name no GPU" in by_device["warning"][0]


def _kernel_db(tmp_path: Path, lines: list[str]) -> Path:
    """Ingest kernel-log ``lines`` (ISO stamps with a zone) into a new store."""
    log = tmp_path / "kern.log"
    log.write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "k.duckdb"
    with Store(db) as store:
        read_file(store, log, kind="kernel")
    return db


ONE_LINE_HOST = [
    "2025-03-04T10:00:00Z gpuA kernel: NVRM: Xid (PCI:0000:3b:00): 13, pid=1, "
    "name=python, Graphics Exception",
    "2025-03-04T20:00:00Z gpuA kernel: NVRM: Xid (PCI:0000:3b:00): 31, pid=1, "
    "name=python, MMU Fault",
    "2025-03-04T15:00:00Z gpuB kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, "
    "GPU has fallen off the bus.",
]


def test_host_with_one_timed_line_is_a_unit_observed_for_no_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """gpuA's lines run 10:00 → 20:00 (10 h; Xid 13 and 31 are application
    errors, no failure); gpuB has one line, its Xid 79 at 15:00: observed at
    that instant only, 0 h. The failure happened while gpuB was logging, so it
    counts and gpuB is a unit: n_units 2, 1 failure in 10 h, MTBF 10 h (it was
    charged to gpuA's time as if gpuA had failed, n_units 1). By host: gpuA 0
    failures, 10 h, one-sided lower bound 2·10/χ²(0.9; 2) = 4.343 h; gpuB 1
    failure, 0 h, MTBF and bounds null (no time), and a warning, also on
    stderr (it was exit 1 with a library caller's message)."""
    db = _kernel_db(tmp_path, ONE_LINE_HOST)
    code, out, err = _run(capsys, "mtbf", "--db", str(db), "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["n_units"], row["n_failures"]) == (2, 1)
    assert row["exposure_h"] == pytest.approx(10.0)
    assert row["mtbf_h"] == pytest.approx(10.0)
    assert "1 unit(s) observed for no measurable time (gpuB" in row["warning"]
    assert "observed for no measurable time (gpuB" in err
    code, out, err = _run(
        capsys,
        "mtbf",
        "--db",
        str(db),
        "--by",
        "host",
        "--confidence",
        "0.9",
        "--format",
        "json",
    )
    assert code == 0, err
    a, b = json.loads(out)
    assert (a["host"], a["n_units"], a["n_failures"]) == ("gpuA", 1, 0)
    assert a["exposure_h"] == pytest.approx(10.0)
    assert a["mtbf_lower_one_sided_h"] == pytest.approx(20 / chi2.ppf(0.9, 2))
    assert (b["host"], b["n_units"], b["n_failures"], b["exposure_h"]) == (
        "gpuB",
        1,
        1,
        0.0,
    )
    assert b["mtbf_h"] is b["mtbf_lower_h"] is b["mtbf_lower_one_sided_h"] is None
    assert b["observed_until"].startswith("2025-03-04T15:00:00")
    assert "one timed instant in its logs" in b["warning"]
    assert "gpuB: one timed instant" in err
    assert "failures.join" not in err


def _bus_lines(host: str, stamps_buses_codes: list[tuple[str, str, int]]) -> list[str]:
    messages = {79: "GPU has fallen off the bus."}
    return [
        f"2025-03-04T{hms}Z {host} kernel: NVRM: Xid (PCI:0000:{bus}:00): {code}, "
        f"pid=0, {messages.get(code, 'name=nccl, NVLINK: Error (0x0)')}"
        for hms, bus, code in stamps_buses_codes
    ]


def test_gpus_of_one_host_failing_together_are_one_node_failure(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Four GPUs of gpu05 fall off the bus at 18:00:00, :01, :02, :02 (one
    node outage). gpu05's lines span 18:00:00 → 18:00:02, 2 s = 1/1800 h.
    --unit node (default): 1 failure, 3 folded, MTBF 2 s; --unit gpu: 4
    failures over 8 GPUs × 2 s = 16 s, MTBF 4 s; `relkit incidents` keeps one
    incident per GPU (4)."""
    rows = [
        ("18:00:00", "18", 79),
        ("18:00:01", "2a", 79),
        ("18:00:02", "3b", 79),
        ("18:00:02", "5d", 79),
    ]
    db = _kernel_db(tmp_path, _bus_lines("gpu05", rows))
    argv = ("mtbf", "--db", str(db), "--by", "host", "--format", "json")
    code, out, err = _run(capsys, *argv)
    assert code == 0, err
    (node,) = json.loads(out)
    assert (node["n_failures"], node["n_folded"], node["unit"]) == (1, 3, "node")
    assert node["mtbf_h"] == pytest.approx(2 / 3600)
    assert "3 failure(s) within 10 min of an earlier failure of the same node" in err
    code, out, err = _run(capsys, *argv, "--unit", "gpu")
    assert code == 0, err
    (gpu,) = json.loads(out)
    assert (gpu["n_failures"], gpu["n_folded"]) == (4, 0)
    assert gpu["mtbf_h"] == pytest.approx(16 / 3600 / 4)
    code, out, err = _run(capsys, "incidents", "--db", str(db), "--format", "json")
    assert code == 0, err
    assert len(json.loads(out)) == 4


def test_nvlink_errors_on_seven_gpus_are_one_node_failure(tmp_path: Path) -> None:
    """NVLink Xids 144-150 on 7 GPUs of gpu07, one a minute 18:00 → 18:06 (each
    within 10 min of the one before): one node failure, mode gpu/nvlink, 6
    folded. Then Xid 79 at 18:17 (11 min after 18:06: a new node failure) and
    an Xid 79 at 19:00 followed by an Xid 145 at 19:01 on another GPU: one node
    failure of mode gpu/fallen_off_bus (the first signal's), 1 folded. Lines
    08:00 → 20:00: 12 h. Node: 3 failures, MTBF 4 h; by failure_mode:
    gpu/nvlink 1 (6 folded), gpu/fallen_off_bus 2 (1 folded). Per GPU: 8
    nvlink and 2 fallen-off-bus failures. With --window-min 0.5 nothing folds
    (every gap is 1 min or more): 10 node failures."""
    nvlink = [
        (f"18:0{i}:00", bus, 144 + i)
        for i, bus in enumerate(["18", "2a", "3b", "5d", "9a", "ab", "ba"])
    ]
    lines = [
        "2025-03-04T08:00:00Z gpu07 kernel: systemd[1]: Started Session 1.",
        *_bus_lines(
            "gpu07",
            [*nvlink, ("18:17:00", "18", 79), ("19:00:00", "2a", 79),
             ("19:01:00", "3b", 145)],
        ),
        "2025-03-04T20:00:00Z gpu07 kernel: systemd[1]: Started Session 2.",
    ]  # fmt: skip
    tables = _tables(_kernel_db(tmp_path, lines))
    node = answers.mtbf_by(**tables).row(0, named=True)
    assert (node["n_failures"], node["n_folded"]) == (3, 7)
    assert node["exposure_h"] == pytest.approx(12.0)
    assert node["mtbf_h"] == pytest.approx(4.0)
    modes = answers.mtbf_by(**tables, by=["failure_mode"])
    assert modes.select("failure_mode", "n_failures", "n_folded").rows() == [
        ("gpu/fallen_off_bus", 2, 1),
        ("gpu/nvlink", 1, 6),
    ]
    per_gpu = answers.mtbf_by(**tables, by=["failure_mode"], unit="gpu")
    assert per_gpu.select("failure_mode", "n_failures").rows() == [
        ("gpu/fallen_off_bus", 2),
        ("gpu/nvlink", 8),
    ]
    narrow = answers.mtbf_by(**tables, window_min=0.5).row(0, named=True)
    assert (narrow["n_failures"], narrow["n_folded"]) == (10, 0)


#: p1 logs for 24 h with one Xid 79; p2 logs a single line and never fails.
ONE_LINE_HOST_NO_FAILURE = [
    "2025-03-04T00:00:00Z p1 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module"
    "  550.54.15",
    "2025-03-04T10:00:00Z p1 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has "
    "fallen off the bus.",
    "2025-03-05T00:00:00Z p1 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module"
    "  550.54.15",
    "2025-03-04T15:00:00Z p2 kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module"
    "  550.54.15",
]


def test_host_with_one_timed_line_and_no_failure_is_still_a_unit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """p2 was seen logging at one instant and did not fail: it is a unit at risk
    for 0 h, like a one-line host that failed (it used to vanish from n_units
    and from --by host). Hand count: n_units 2, 1 failure in 24 h (p1), MTBF
    24 h; by host p2 has 0 failures, 0 h and the warning. With --unit gpu the
    units are GPUs (8 per node by default): n_units 16, 24 h x 8 = 192 GPU-hours
    (n_units used to count the 2 hosts)."""
    db = _kernel_db(tmp_path, ONE_LINE_HOST_NO_FAILURE)
    code, out, err = _run(capsys, "mtbf", "--db", str(db), "--format", "json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["n_units"], row["n_failures"]) == (2, 1)
    assert row["exposure_h"] == pytest.approx(24.0)
    assert "1 unit(s) observed for no measurable time (p2" in row["warning"]
    assert "failure(s) count" not in row["warning"]
    code, out, err = _run(
        capsys, "mtbf", "--db", str(db), "--by", "host", "--format", "json"
    )
    assert code == 0, err
    p1, p2 = json.loads(out)
    assert (p1["host"], p1["n_failures"], p1["exposure_h"]) == ("p1", 1, 24.0)
    assert (p2["host"], p2["n_units"], p2["n_failures"], p2["exposure_h"]) == (
        "p2",
        1,
        0,
        0.0,
    )
    code, out, err = _run(
        capsys, "mtbf", "--db", str(db), "--unit", "gpu", "--format", "json"
    )
    assert code == 0, err
    (row,) = json.loads(out)
    assert (row["n_units"], row["n_failures"]) == (16, 1)
    assert row["exposure_h"] == pytest.approx(192.0)
