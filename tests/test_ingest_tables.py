"""Ingest of normalised events/assets tables: UTC, rejects, kinds, idempotence."""

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from relkit.errors import IngestError
from relkit.ingest import IngestResult, read_assets, read_events, read_file, read_files
from relkit.store import Store

DATA = Path(__file__).parent / "data"


def utc(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


@pytest.fixture
def store() -> Store:
    with Store(":memory:") as s:
        yield s


def test_ref_offsets_become_utc(store: Store) -> None:
    """ISO 8601 offsets (RFC 3339 §5.6): 13:00+01:00 = 12:00Z and
    12:00.250-0500 = 17:00:00.250Z."""
    result = read_events(store, DATA / "events_offsets.csv")
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (3, 3, 0)
    ev = store.table("events").sort("line_no")
    assert ev["ts"].to_list() == [
        utc(2024, 3, 1, 12),
        utc(2024, 3, 1, 12),
        utc(2024, 3, 1, 17, 0, 0, 250_000),
    ]
    assert ev["line_no"].to_list() == [2, 3, 4]
    assert ev["repair_s"].to_list() == [9000.0, None, 21600.0]
    assert ev["detail"][2] == "link down, port 1"
    assert ev["code"].to_list() == ["79", "48", None]
    assert ev["system"].to_list() == ["c1", "c1", "c1"]


def test_zoneless_without_tz_names_line_and_fix(store: Store) -> None:
    path = DATA / "events_zoneless.csv"
    with pytest.raises(IngestError, match=r"--tz UTC") as err:
        read_events(store, path)
    assert err.value.line_no == 3
    assert str(err.value).startswith(f"{path}:3:")
    assert store.table("events").height == 0
    assert store.table("sources").height == 0


def test_ref_zoneless_with_tz_and_dst(store: Store) -> None:
    """Europe/Berlin (IANA tzdb): 2024-03-31 02:30 does not exist (spring forward),
    read as standard time = 01:30Z; 2024-10-27 02:30 is ambiguous, the earlier
    instant is CEST = 00:30Z."""
    read_events(store, DATA / "events_zoneless.csv", tz="Europe/Berlin")
    ev = store.table("events").sort("line_no")
    assert ev["ts"].to_list() == [
        utc(2024, 3, 1, 12),
        utc(2024, 3, 31, 1, 30),
        utc(2024, 10, 27, 0, 30),
    ]
    assert ev["flags"].to_list() == [None, "dst_nonexistent", "dst_ambiguous"]
    # 04:00 CEST = 02:00Z, so the outage is 30 min in real time.
    assert ev["repair_s"][1] == 1800.0


def test_malformed_rows_are_rejected_with_lines(store: Store) -> None:
    result = read_events(store, DATA / "events_malformed.csv")
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (7, 2, 5)
    assert store.table("events")["line_no"].sort().to_list() == [2, 10]
    rj = store.table("rejects")
    assert rj["line_no"].to_list() == [3, 4, 6, 8, 9]
    reasons = dict(zip(rj["line_no"], rj["reason"], strict=True))
    assert reasons[3] == "unparseable timestamp in column 'ts': 'not-a-time'"
    assert reasons[4] == "empty required field 'host'"
    assert "repaired_ts '2024-03-01T11:00:00Z' is before ts" in reasons[6]
    assert reasons[8] == "expected 5 fields as in the header, found 6"
    assert "'2024-02-30T12:00:00Z'" in reasons[9]
    raw = dict(zip(rj["line_no"], rj["raw"], strict=True))
    assert raw[6] == (
        '2024-03-01T12:00:00Z,n4,gpu/xid_79,"quoted\nnewline",2024-03-01T11:00:00Z'
    )
    assert raw[3] == "not-a-time,n2,gpu/xid_79,bad ts,"
    src = store.table("sources").row(0, named=True)
    assert (src["n_lines"], src["n_loaded"], src["n_rejected"]) == (7, 2, 5)


def test_reingest_is_skipped(store: Store) -> None:
    first = read_file(store, DATA / "events_offsets.csv", kind="events")
    again = read_file(store, DATA / "events_offsets.csv", kind="events")
    assert first.source_id == 1
    assert not first.skipped
    assert again == IngestResult(
        str(DATA / "events_offsets.csv"), "events", None, 0, 0, 0, skipped=True
    )
    assert store.table("events").height == 3
    assert store.table("sources").height == 1


def test_assets_rejects_and_attrs(store: Store) -> None:
    result = read_assets(store, DATA / "assets.csv")
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (6, 2, 4)
    a = store.table("assets").sort("line_no")
    assert a["host"].to_list() == ["n1", "n2"]
    assert a["gpus"].to_list() == [8, 8]  # n2 leaves gpus empty: default 8
    assert a["out_of_service_ts"].to_list() == [None, utc(2024, 6, 1)]
    assert [json.loads(x) for x in a["attrs"]] == [
        {"rack": "r01", "model": "H100"},
        {"rack": "r01"},
    ]
    reasons = dict(store.table("rejects").select("line_no", "reason").rows())
    assert reasons == {
        4: "negative gpus: '-2'",
        5: "out_of_service_ts '2024-01-01T00:00:00Z' is before in_service_ts "
        "'2024-06-01T00:00:00Z'",
        6: "empty required field 'in_service_ts'",
        7: "gpus is not a whole number: 'eight'",
    }


def test_parquet_input(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "events.parquet"
    pl.DataFrame(
        {
            "ts": [utc(2024, 5, 1, 8), None, utc(2024, 5, 2, 9)],
            "host": ["a", "b", None],
            "failure_mode": ["gpu/xid_79", "gpu/xid_79", "gpu/xid_79"],
            "repaired_ts": [utc(2024, 5, 1, 9), None, None],
        }
    ).write_parquet(path)
    result = read_file(store, path, kind="events")
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (3, 1, 2)
    ev = store.table("events")
    assert ev.select("line_no", "ts", "repair_s").rows() == [
        (1, utc(2024, 5, 1, 8), 3600.0)
    ]
    assert store.table("rejects")["reason"].to_list() == [
        "empty required field 'ts'",
        "empty required field 'host'",
    ]


def test_wrong_kind_lanl_as_assets(store: Store) -> None:
    with pytest.raises(IngestError, match=r"use --kind lanl") as err:
        read_file(store, DATA / "lanl_snippet.csv", kind="assets")
    msg = str(err.value)
    assert "['host', 'in_service_ts']" in msg
    assert "Prob Started" in msg
    assert err.value.line_no == 1


def test_wrong_kind_events_as_assets_suggests_events(store: Store) -> None:
    with pytest.raises(IngestError, match=r"use --kind events"):
        read_file(store, DATA / "events_offsets.csv", kind="assets")


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        (gzip.compress(b"ts,host,failure_mode\n"), "gunzip"),
        (b'{"items": []}', "JSON"),
        (b"\x00\x01\x02binary", "binary"),
    ],
)
def test_wrong_format_is_clear(
    store: Store, tmp_path: Path, payload: bytes, needle: str
) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(payload)
    with pytest.raises(IngestError, match=needle) as err:
        read_file(store, path, kind="events")
    assert "ts, host, failure_mode" in str(err.value)
    assert str(path) in str(err.value)


def test_missing_file_and_directory(store: Store, tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file"):
        read_file(store, tmp_path / "nope.csv", kind="events")
    with pytest.raises(IngestError, match="is a directory"):
        read_file(store, tmp_path, kind="events")


def test_bad_tz_and_kind(store: Store) -> None:
    with pytest.raises(IngestError, match="unknown time zone 'Mars/Base'"):
        read_file(store, DATA / "events_zoneless.csv", kind="events", tz="Mars/Base")
    with pytest.raises(IngestError, match="unknown kind 'jobs'"):
        read_file(store, DATA / "events_zoneless.csv", kind="jobs")  # type: ignore[arg-type]


def test_read_files_progress(store: Store) -> None:
    seen: list[IngestResult] = []
    paths = [DATA / "events_offsets.csv", DATA / "events_malformed.csv"]
    out = read_files(store, paths, kind="events", progress=seen.append)
    assert out == seen
    assert [r.n_loaded for r in out] == [3, 2]
    assert out[1].to_dict()["n_rejected"] == 5


def test_failed_file_leaves_store_unchanged(store: Store, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("ts,host\n2024-01-01T00:00:00Z,n1\n")
    with pytest.raises(
        IngestError, match=r"missing required column\(s\) \['failure_mode'\]"
    ):
        read_files(store, [DATA / "events_offsets.csv", bad], kind="events")
    assert store.table("sources")["n_loaded"].to_list() == [3]


_cell = st.sampled_from(
    [
        "2024-01-01T00:00:00Z",
        "2024-02-30T00:00:00Z",
        "junk",
        "",
        "2024-01-01 00:00+0100",
    ]
)
_text = st.text(alphabet='ab ,"\n', max_size=6)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(rows=st.lists(st.tuples(_cell, _text, _text, _cell), max_size=15))
def test_prop_every_record_loaded_or_rejected(
    tmp_path_factory: pytest.TempPathFactory, rows: list[tuple[str, str, str, str]]
) -> None:
    import csv

    path = tmp_path_factory.mktemp("prop") / "ev.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["ts", "host", "failure_mode", "repaired_ts"])
        w.writerows(rows)
    with Store(":memory:") as s:
        result = read_events(s, path)
        assert result.n_lines == len(rows)  # csv.writer never writes a blank line
        assert result.n_loaded + result.n_rejected == result.n_lines
        assert s.table("events").height == result.n_loaded
        assert s.table("rejects").height == result.n_rejected


def test_write_is_atomic(store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    """A failure after the rows are appended rolls the whole file back."""

    def boom(*args: object, **kwargs: object) -> int:
        msg = "disk full"
        raise OSError(msg)

    monkeypatch.setattr(Store, "add_source", boom)
    with pytest.raises(OSError, match="disk full"):
        read_file(store, DATA / "events_malformed.csv", kind="events")
    assert store.table("events").height == 0
    assert store.table("rejects").height == 0
    monkeypatch.undo()
    assert read_file(store, DATA / "events_malformed.csv", kind="events").n_loaded == 2
