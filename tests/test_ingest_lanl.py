"""Ingest of the LANL failure records 1996-2005 (LA-UR-05-7318).

Reference counts come from shared/reference/README.md ("Real-data facts")
and datasets/lanl/PROVENANCE.md ("Quirks"), both checked on this file's bytes
(sha256 516c88f0...d175).
"""

import json
import os
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest

import relkit.datasets
from relkit.errors import IngestError
from relkit.ingest import read_file, read_lanl
from relkit.ingest.public import parse_lanl_month
from relkit.store import Store

SNIPPET = Path(__file__).parent / "data" / "lanl_snippet.csv"
N_RECORDS = 23_739


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture(scope="module")
def lanl() -> tuple[Store, float]:
    # the ingest's speed is measured in bench/run.py (ingest_lanl, as a ratio
    # against a plain DuckDB read), never asserted here
    store = Store(":memory:")
    read_lanl(store, relkit.datasets.path("lanl"))
    yield store, 0.0
    store.close()


@pytest.fixture(scope="module")
def events(lanl: tuple[Store, float]) -> pl.DataFrame:
    return lanl[0].table("events")


@pytest.fixture(scope="module")
def assets(lanl: tuple[Store, float]) -> pl.DataFrame:
    return (
        lanl[0]
        .table("assets")
        .with_columns(inferred=pl.col("attrs").str.contains('"inferred": true'))
    )


def test_ref_every_record_loaded_or_rejected(lanl: tuple[Store, float]) -> None:
    """PROVENANCE.md: 23,739 records plus one header row."""
    src = lanl[0].table("sources").row(0, named=True)
    assert src["n_lines"] == N_RECORDS
    assert src["n_loaded"] + src["n_rejected"] == N_RECORDS
    assert src["n_rejected"] == 0 == lanl[0].table("rejects").height
    assert lanl[0].table("events").height == N_RECORDS
    assert src["kind"] == "lanl"
    assert json.loads(src["options"])["tracking_start_local"] == "1995-05-01"


def test_ref_root_cause_counts(events: pl.DataFrame) -> None:
    """reference/README.md and PROVENANCE.md: Hardware 14,341; Software 5,361;
    Undetermined 2,652; Network 421; Facilities 362; Human Error 149; none 453."""
    counts = dict(
        events.group_by(root=pl.col("failure_mode").str.split("/").list.first())
        .len()
        .rows()
    )
    assert counts == {
        "hardware": 14_341,
        "software": 5_361,
        "undetermined": 2_652,
        "network": 421,
        "facilities": 362,
        "human_error": 149,
        "unrecorded": 453,
    }


def test_ref_records_per_system(events: pl.DataFrame) -> None:
    """PROVENANCE.md: records per system 2:7104, 18:3997, 19:3284, 16:2680,
    20:2478, 23:564, 8:475, 15:54; system 20 Hardware 1,721 / Software 646."""
    per = dict(events.group_by("system").len().rows())
    assert {k: per[k] for k in ("2", "18", "19", "16", "20", "23", "8", "15")} == {
        "2": 7104,
        "18": 3997,
        "19": 3284,
        "16": 2680,
        "20": 2478,
        "23": 564,
        "8": 475,
        "15": 54,
    }
    s20 = events.filter(system="20")["failure_mode"].str.split("/").list.first()
    assert (s20 == "hardware").sum() == 1721
    assert (s20 == "software").sum() == 646


def test_ref_top_sub_causes(events: pl.DataFrame) -> None:
    """PROVENANCE.md: hardware CPU 5,931, Memory Dimm 2,880, Node Board 915,
    Maintenance 734, Other 710, Power Supply 593; software Other Software 1,174,
    DST 1,127, OS 1,010."""
    per = dict(events.group_by("failure_mode").len().rows())
    assert per["hardware/cpu"] == 5931
    assert per["hardware/memory_dimm"] == 2880
    assert per["hardware/node_board"] == 915
    assert per["hardware/maintenance"] == 734
    assert per["hardware/other"] == 710
    assert per["hardware/power_supply"] == 593
    assert per["software/other_software"] == 1174
    assert per["software/dst"] == 1127
    assert per["software/os"] == 1010
    assert per["unrecorded/unrecorded"] == 453
    assert events.filter(failure_mode="hardware/memory_dimm")[
        "detail"
    ].unique().to_list() == ["Memory Dimm"]


def test_ref_dst_affected(events: pl.DataFrame) -> None:
    """PROVENANCE.md: 24 rows have Down Time != Fixed - Started by exactly ±60 min."""
    flagged = events.filter(pl.col("flags").str.contains("dst_affected"))
    assert flagged.height == 24
    # In UTC those outages last exactly Down Time: the DST change explains the gap.
    real_s = (flagged["repaired_ts"] - flagged["ts"]).dt.total_seconds()
    assert (real_s == flagged["repair_s"]).all()


def test_ref_ambiguous_times_resolved_by_down_time(events: pl.DataFrame) -> None:
    """Hand check of the 2 fall-back-hour records (America/Denver, tz database).

    Line 18568: 10/27/2002 1:36 -> 5:27 (MST, 12:27Z), Down Time 231 min, so the
    start is 1:36 MST = 08:36Z (the later reading). Line 20567: 10/30/2004 23:35 MDT
    (05:35Z) -> 10/31/2004 1:02, Down Time 147 min, so the end is 1:02 MST = 08:02Z.
    """
    amb = events.filter(pl.col("flags").str.contains("dst_ambiguous")).sort("line_no")
    assert amb["line_no"].to_list() == [18568, 20567]
    assert amb["ts"].to_list() == [utc(2002, 10, 27, 8, 36), utc(2004, 10, 31, 5, 35)]
    assert amb["repaired_ts"].to_list() == [
        utc(2002, 10, 27, 12, 27),
        utc(2004, 10, 31, 8, 2),
    ]


def test_ref_hand_checked_times(events: pl.DataFrame) -> None:
    """Line 2: 6/21/2005 10:54 MDT (UTC-6) = 16:54Z; line 22569: 2/7/2002 14:36 MST
    (UTC-7) = 21:36Z, Down Time 59 min; line 12781 (system 17, no node number)."""
    row = events.filter(line_no=2).row(0, named=True)
    assert (row["ts"], row["repaired_ts"]) == (
        utc(2005, 6, 21, 16, 54),
        utc(2005, 6, 21, 17),
    )
    assert (row["host"], row["system"], row["failure_mode"], row["repair_s"]) == (
        "s2-n0",
        "2",
        "hardware/graphics_accel_hdwr",
        360.0,
    )
    winter = events.filter(line_no=22569).row(0, named=True)
    assert (winter["ts"], winter["repair_s"]) == (utc(2002, 2, 7, 21, 36), 3540.0)
    assert (winter["host"], winter["failure_mode"]) == ("s20-n439", "software/os")
    s17 = events.filter(line_no=12781).row(0, named=True)
    assert (s17["host"], s17["flags"]) == ("s17-unknown", "node_unknown")
    assert events["code"].null_count() == events["device"].null_count() == N_RECORDS


def test_ref_month_dates() -> None:
    """PROVENANCE.md: `Nov-96` is Mon-YY, `2-Mar` is YY-Mon (March 2002)."""
    assert parse_lanl_month("Nov-96") == (1996, 11)
    assert parse_lanl_month("Dec-99") == (1999, 12)
    assert parse_lanl_month("2-Mar") == (2002, 3)
    assert parse_lanl_month("5-Nov") == (2005, 11)
    assert parse_lanl_month("current") == "current"
    assert parse_lanl_month("before tracking") == "before tracking"
    assert parse_lanl_month("Foo-99") is None
    assert parse_lanl_month(None) is None


def test_ref_asset_windows(assets: pl.DataFrame) -> None:
    """Month dates are the 1st, 00:00 America/Denver: Jan-97 (MST) = 07:00Z, decom
    5-Nov -> 2005-12-01 07:00Z; system 20 prod 1-Dec = 2001-12-01 07:00Z; system 16
    decom 2-Sep -> 2002-10-01 (month after) MDT = 06:00Z; system 7 `before tracking`
    -> observed from 1995-05-01 MDT = 06:00Z, decom Dec-99 -> 2000-01-01 07:00Z."""
    s2 = assets.filter(host="s2-n1").row(0, named=True)
    assert (s2["in_service_ts"], s2["out_of_service_ts"]) == (
        utc(1997, 1, 1, 7),
        utc(2005, 12, 1, 7),
    )
    assert s2["observed_from_ts"] == s2["in_service_ts"]
    assert s2["gpus"] is None
    s20 = assets.filter(host="s20-n439").row(0, named=True)
    assert (s20["in_service_ts"], s20["out_of_service_ts"]) == (
        utc(2001, 12, 1, 7),
        None,
    )
    s16 = assets.filter(host="s16-n1").row(0, named=True)
    assert s16["out_of_service_ts"] == utc(2002, 10, 1, 6)
    assert s16["line_no"] == 10101  # the node's first record
    s7 = assets.filter(host="s7-n0").row(0, named=True)
    assert s7["in_service_ts"] is None
    assert s7["observed_from_ts"] == utc(1995, 5, 1, 6)
    assert s7["out_of_service_ts"] == utc(2000, 1, 1, 7)
    attrs = json.loads(s7["attrs"])
    assert attrs["in_service"] == "before tracking"
    assert attrs["procsinnode"] == "8"


def test_ref_assets_cover_every_node(
    assets: pl.DataFrame, events: pl.DataFrame
) -> None:
    """Each system's `nodes` column (PROVENANCE.md schema) is its node count; nodes
    that never failed are inferred. System 17 has no `nodes`: one unknown host."""
    nodes = {
        "2": 49, "3": 128, "4": 128, "5": 128, "6": 32, "7": 1, "8": 164, "9": 256,
        "10": 256, "11": 256, "12": 512, "13": 256, "14": 128, "15": 1, "16": 16,
        "17": 1, "18": 1024, "19": 1024, "20": 512, "21": 128, "22": 1, "23": 5,
        "24": 1,
    }  # fmt: skip
    assert dict(assets.group_by("system").len().rows()) == nodes
    assert assets["host"].n_unique() == assets.height == 5007
    assert set(events["host"]) <= set(assets["host"])
    seen = assets.filter(~pl.col("inferred"))
    assert seen.height == events["host"].n_unique() == 5007 - 1430
    assert seen["line_no"].null_count() == 0
    inferred = assets.filter("inferred")
    assert inferred["line_no"].null_count() == inferred.height == 1430
    s14 = inferred.filter(system="14")["host"].str.extract(r"n(\d+)").cast(pl.Int64)
    assert s14.min() >= 128
    assert s14.max() <= 255
    s19 = inferred.filter(system="19")["host"].str.extract(r"n(\d+)").cast(pl.Int64)
    assert s19.min() >= 1024  # system 19 numbers nodes from 1024


def test_no_failure_outside_asset_window(
    assets: pl.DataFrame, events: pl.DataFrame
) -> None:
    j = events.join(assets, on="host")
    start = pl.coalesce("in_service_ts", "observed_from_ts")
    assert j.filter(pl.col("ts") < start).height == 0
    assert j.filter(pl.col("ts") >= pl.col("out_of_service_ts")).height == 0


def test_reingest_is_skipped(lanl: tuple[Store, float]) -> None:
    store = lanl[0]
    again = read_file(store, relkit.datasets.path("lanl"), kind="lanl")
    assert again.skipped
    assert again.source_id is None
    assert store.table("events").height == N_RECORDS
    assert store.table("sources").height == 1


def test_snippet_quirks_and_rejects() -> None:
    """Hand-made rows in tests/data/lanl_snippet.csv: 4/4/2004 2:30 does not exist
    in America/Denver (read as MST = 09:30Z); 10/31/2004 1:30 is ambiguous (earlier
    = MDT = 07:30Z)."""
    with Store(":memory:") as store:
        result = read_lanl(store, SNIPPET)
        assert (result.n_lines, result.n_loaded, result.n_rejected) == (12, 8, 4)
        ev = store.table("events")
        row = ev.filter(line_no=5).row(0, named=True)
        assert (row["ts"], row["flags"]) == (utc(2004, 4, 4, 9, 30), "dst_nonexistent")
        row = ev.filter(line_no=6).row(0, named=True)
        assert (row["ts"], row["flags"]) == (utc(2004, 10, 31, 7, 30), "dst_ambiguous")
        assert ev.filter(line_no=4)["flags"].item() == "dst_affected"
        assert ev.filter(line_no=11)["failure_mode"].item() == "unrecorded/unrecorded"
        reasons = dict(store.table("rejects").select("line_no", "reason").rows())
        assert reasons == {
            7: "bad System: 'x' (expected a whole number)",
            8: "negative Down Time: '-5' minutes",
            9: "unparseable time in column 'Prob Started': '13/45/2004 1:30' "
            "(expected M/D/YYYY h:mm)",
            10: "more than one root-cause column filled: Hardware='CPU', Software='OS'",
        }
        raw = store.table("rejects").filter(line_no=7)["raw"].item()
        assert raw.startswith("x,cluster,49,")


def test_lanl_rejects_other_tables_and_tz(tmp_path: Path) -> None:
    events_csv = tmp_path / "ev.csv"
    events_csv.write_text("ts,host,failure_mode\n2024-01-01T00:00:00Z,n1,gpu/x\n")
    with Store(":memory:") as store:
        with pytest.raises(IngestError, match=r"use --kind events"):
            read_file(store, events_csv, kind="lanl")
        with pytest.raises(IngestError, match="America/Denver"):
            read_file(store, SNIPPET, kind="lanl", tz="UTC")


_SCRIPT = """
import json, sys
from relkit.store import Store
from relkit.ingest import read_lanl
s = Store(":memory:")
read_lanl(s, sys.argv[1])
ev = s.table("events").sort("line_no")
a = s.table("assets").sort("host")
print(json.dumps([str(x) for x in ev["ts"].to_list() + ev["repaired_ts"].to_list()
                  + a["in_service_ts"].to_list() + a["out_of_service_ts"].to_list()]))
"""


def test_independent_of_machine_time_zone() -> None:
    """The same stamps come out under TZ=Asia/Kolkata and TZ=America/Los_Angeles."""
    outs = []
    for zone in ("Asia/Kolkata", "America/Los_Angeles"):
        env = {**os.environ, "TZ": zone}
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(SNIPPET)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent.parent,
        )
        outs.append(json.loads(done.stdout))
    assert outs[0] == outs[1]
    assert "2005-06-21 16:54:00+00:00" in outs[0]


def test_garbage_repair_data_rejected_or_flagged() -> None:
    """Hand-made rows in tests/data/lanl_garbage.csv (template: line 2 of the real
    file, 10:54 -> 11:00 = 6 min). Expected values follow from the row text:
    10/31/2004 1:50 -> 1:10 with Down Time 20 is 1:50 MDT (07:50Z) -> 1:10 MST
    (08:10Z) in the America/Denver fall-back hour, so it is kept."""
    garbage = SNIPPET.with_name("lanl_garbage.csv")
    with Store(":memory:") as store:
        result = read_lanl(store, garbage)
        assert (result.n_lines, result.n_loaded, result.n_rejected) == (11, 6, 5)
        reasons = dict(store.table("rejects").select("line_no", "reason").rows())
        assert reasons == {
            2: "Down Time is not a finite number: 'nan'",
            3: "Down Time is not a finite number: 'inf'",
            4: "Down Time is not a finite number: '-inf'",
            5: "Down Time is not a number: '5 min'",
            6: "Prob Fixed '6/21/2005 10:54' is before Prob Started '6/21/2005 11:00':"
            " the outage ends 6 min before it starts",
        }
        ev = store.table("events").sort("line_no")
        flags = dict(ev.select("line_no", "flags").rows())
        # 1e9, 1e20 and 68 min against a 6 min outage: > 61 min off; 67 is 61 off.
        assert flags == {
            7: "downtime_mismatch",
            8: "downtime_mismatch",
            9: "downtime_mismatch",
            10: None,
            11: "dst_ambiguous,dst_affected",
            12: None,
        }
        row = ev.filter(line_no=11).row(0, named=True)
        assert (row["ts"], row["repaired_ts"]) == (
            utc(2004, 10, 31, 7, 50),
            utc(2004, 10, 31, 8, 10),
        )


def test_ref_real_file_has_no_downtime_mismatch(events: pl.DataFrame) -> None:
    """Checked on the real file (sha256 516c88f0...d175): no record's Down Time is
    off the UTC Fixed - Started by more than 1 min (399 are off by 1 min, the 24
    DST records by 0 in UTC), and no record ends before it starts."""
    assert events.filter(pl.col("flags").str.contains("downtime_mismatch")).height == 0
    real_min = (events["repaired_ts"] - events["ts"]).dt.total_seconds() / 60
    off = (real_min - events["repair_s"] / 60).abs()
    assert (off.max(), (off == 1).sum()) == (1.0, 399)
    assert (events["repaired_ts"] < events["ts"]).sum() == 0
