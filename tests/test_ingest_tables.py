"""Ingest of normalised events/assets tables: UTC, rejects, kinds, idempotence."""

import gzip
import json
from datetime import UTC, datetime
from pathlib import Path

import blake3
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
    # n5 has no in_service_ts: loaded since issue 9, flagged in_service_unknown
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (6, 3, 3)
    a = store.table("assets").sort("line_no")
    assert a["host"].to_list() == ["n1", "n2", "n5"]
    assert a["gpus"].to_list() == [8, 8, 8]  # n2 leaves gpus empty: default 8
    assert a["out_of_service_ts"].to_list() == [None, utc(2024, 6, 1), None]
    assert a["in_service_ts"].to_list() == [utc(2024, 1, 1), utc(2024, 1, 1), None]
    assert a["flags"].to_list() == [None, None, "in_service_unknown"]
    assert [json.loads(x) for x in a["attrs"]] == [
        {"rack": "r01", "model": "H100"},
        {"rack": "r01"},
        {"rack": "r03", "model": "H100"},
    ]
    reasons = dict(store.table("rejects").select("line_no", "reason").rows())
    assert reasons == {
        4: "negative gpus: '-2'",
        5: "out_of_service_ts '2024-01-01T00:00:00Z' is before in_service_ts "
        "'2024-06-01T00:00:00Z'",
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


# -- assets with documented columns only -----------------------------------------------
_ASSETS_ALL = (
    "host,in_service_ts,out_of_service_ts,gpus,device,system,observed_from_ts\n"
    "n1,2024-01-01T00:00:00Z,,8,,c1,\n"
    "n2,2024-01-01T00:00:00Z,2024-06-01T00:00:00Z,,,c1,2024-02-01T00:00:00Z\n"
    "n3,2024-01-01T00:00:00Z,,4,GPU0,c1,\n"
    "n4,2024-01-01T00:00:00Z,,8,,c2,\n"
)


@pytest.mark.parametrize("fmt", ["csv", "parquet"])
@pytest.mark.parametrize(
    "columns",
    [
        ["host", "in_service_ts"],
        ["host", "in_service_ts", "out_of_service_ts", "gpus", "system"],
        list(_ASSETS_ALL.splitlines()[0].split(",")),
    ],
)
def test_assets_without_extra_columns(
    store: Store, tmp_path: Path, fmt: str, columns: list[str]
) -> None:
    """Regression: a header of documented columns only crashed with a polars
    ShapeError ('attrs' of length 0). Every row loads, attrs is the empty object."""
    frame = pl.read_csv(
        _ASSETS_ALL.encode(), infer_schema=False, columns=columns
    ).select(columns)
    path = tmp_path / f"assets.{fmt}"
    if fmt == "csv":
        frame.write_csv(path)
    else:
        frame.write_parquet(path)
    result = read_file(store, path, kind="assets")
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (4, 4, 0)
    a = store.table("assets").sort("line_no")
    assert a["host"].to_list() == ["n1", "n2", "n3", "n4"]
    assert a["attrs"].to_list() == ["{}"] * 4
    assert a["in_service_ts"].to_list() == [utc(2024, 1, 1)] * 4


# -- changed files and --replace -------------------------------------------------------
_EV = "ts,host,failure_mode\n" + "".join(
    f"2024-03-0{d} 10:00,n{d},gpu/xid_79\n" for d in range(1, 4)
)


def test_grown_file_is_refused(store: Store, tmp_path: Path) -> None:
    """Regression: a log that grew by one line was loaded again as a second source,
    duplicating its first three rows."""
    path = tmp_path / "ev.csv"
    path.write_text(_EV)
    read_file(store, path, kind="events", tz="UTC")
    path.write_text(_EV + "2024-03-04 10:00,n4,gpu/xid_79\n")
    with pytest.raises(IngestError, match="has changed since") as err:
        read_file(store, path, kind="events", tz="UTC")
    msg = str(err.value)
    # the identity printed is the stored one: BLAKE3 of the first bytes, computed
    # here by the blake3 package on the text in memory
    digest = blake3.blake3(_EV.encode()).hexdigest()
    assert f"ingested before as source 1 (3 lines, blake3 {digest[:12]}…)" in msg
    assert "--replace" in msg
    assert "replace=True" in msg
    assert store.table("events").height == 3
    assert store.table("sources").height == 1


def test_grown_file_with_replace_loads_once(store: Store, tmp_path: Path) -> None:
    """With replace=True the earlier source's rows and rejects are dropped in the
    same transaction: 4 + 1 lines give 4 events and 1 reject, not 3 + 4."""
    path = tmp_path / "ev.csv"
    path.write_text(_EV + "bad,n9,gpu/xid_79\n")
    read_file(store, path, kind="events", tz="UTC")
    path.write_text(_EV + "bad,n9,gpu/xid_79\n2024-03-04 10:00,n4,gpu/xid_79\n")
    result = read_file(store, path, kind="events", tz="UTC", replace=True)
    assert (result.source_id, result.n_loaded, result.n_rejected) == (2, 4, 1)
    assert result.replaced == (1,)
    assert result.note == "replaced source 1 (rows dropped)"
    assert result.to_dict()["replaced"] == [1]
    ev = store.table("events")
    assert ev["host"].to_list() == ["n1", "n2", "n3", "n4"]
    assert ev["source_id"].unique().to_list() == [2]
    assert store.table("rejects")["source_id"].to_list() == [2]
    assert store.table("sources")["source_id"].to_list() == [2]
    # The same bytes again: skipped, and no note (same path, same tz).
    again = read_file(store, path, kind="events", tz="UTC")
    assert (again.skipped, again.note) == (True, None)


def test_same_file_other_tz_is_skipped_with_note(store: Store, tmp_path: Path) -> None:
    """Identical bytes are not re-read, but the caller is told that the earlier read
    used another zone and how to re-read it."""
    path = tmp_path / "ev.csv"
    path.write_text(_EV)
    read_file(store, path, kind="events", tz="UTC")
    again = read_file(store, path, kind="events", tz="Europe/Berlin")
    assert again.skipped
    assert again.source_id is None
    assert again.note == (
        "already ingested as source 1 with tz='UTC'; pass replace=True (--replace) "
        "to re-read with tz='Europe/Berlin'"
    )
    assert again.to_dict()["note"] == again.note
    assert store.table("events").height == 3


def test_replace_with_new_tz_changes_ts(store: Store, tmp_path: Path) -> None:
    """IANA tzdb: 2024-03-01 10:00 in Europe/Berlin is CET (UTC+1) = 09:00Z."""
    path = tmp_path / "ev.csv"
    path.write_text(_EV)
    read_file(store, path, kind="events", tz="UTC")
    result = read_file(store, path, kind="events", tz="Europe/Berlin", replace=True)
    assert (result.skipped, result.replaced, result.n_loaded) == (False, (1,), 3)
    ev = store.table("events")
    assert ev["ts"].to_list() == [utc(2024, 3, d, 9) for d in range(1, 4)]
    src = store.table("sources").row(0, named=True)
    assert json.loads(src["options"])["tz"] == "Europe/Berlin"


def test_replace_drops_assets_of_same_path(store: Store, tmp_path: Path) -> None:
    """Assets follow the same rule: the re-read file's rows replace the old ones."""
    path = tmp_path / "assets.csv"
    path.write_text("host,in_service_ts\nn1,2024-01-01T00:00:00Z\n")
    read_files(store, [path], kind="assets")
    path.write_text("host,in_service_ts\nn1,2024-02-01T00:00:00Z\n")
    with pytest.raises(IngestError, match="source 1"):
        read_files(store, [path], kind="assets")
    (result,) = read_files(store, [path], kind="assets", replace=True)
    assert result.replaced == (1,)
    assert store.table("assets")["in_service_ts"].to_list() == [utc(2024, 2, 1)]


# -- value checks ----------------------------------------------------------------------
def test_failure_mode_any_name_kept_as_given(store: Store, tmp_path: Path) -> None:
    """Issue 9 §4: any failure-mode name loads, stripped and lower-cased only.

    Before, 'nocategory', 'a/b/c', '/gpu' and 'gpu/' were rejected for not being
    'category/component', and 'Hardware / GPU HBM' was rewritten to
    'hardware/gpu_hbm'. All 7 rows are now loaded; none is a taxonomy mode, so
    each becomes a declared mode of category 'unknown' counted as a failure.
    """
    path = tmp_path / "ev.csv"
    path.write_text(
        "ts,host,failure_mode\n"
        "2024-03-01T10:00:00Z,n1,Hardware/GPU\n"
        "2024-03-01T10:00:00Z,n2, Hardware / GPU HBM \n"
        "2024-03-01T10:00:00Z,n3,network/ib-link down\n"
        "2024-03-01T10:00:00Z,n4,nocategory\n"
        "2024-03-01T10:00:00Z,n5,a/b/c\n"
        "2024-03-01T10:00:00Z,n6,/gpu\n"
        "2024-03-01T10:00:00Z,n7,gpu/\n"
    )
    result = read_events(store, path)
    assert (result.n_loaded, result.n_rejected) == (7, 0)
    modes = [
        "hardware/gpu",
        "hardware / gpu hbm",
        "network/ib-link down",
        "nocategory",
        "a/b/c",
        "/gpu",
        "gpu/",
    ]
    assert store.table("events").sort("line_no")["failure_mode"].to_list() == modes
    declared = store.table("failure_modes").filter(
        pl.col("declared_source_id").is_not_null()
    )
    assert sorted(declared["failure_mode"]) == sorted(modes)
    assert set(declared["category"]) == {"unknown"}
    assert declared["counts_as_failure"].all()


def test_gpus_integral_float_accepted(store: Store, tmp_path: Path) -> None:
    """Regression: a Parquet float column (8.0) was rejected as 'not a whole number'."""
    path = tmp_path / "assets.parquet"
    pl.DataFrame(
        {
            "host": ["n1", "n2", "n3", "n4"],
            "in_service_ts": [utc(2024, 1, 1)] * 4,
            "gpus": [8.0, 8.5, None, 4e10],
        }
    ).write_parquet(path)
    result = read_file(store, path, kind="assets")
    assert (result.n_loaded, result.n_rejected) == (2, 2)
    assert store.table("assets").select("host", "gpus").rows() == [
        ("n1", 8),
        ("n3", 8),
    ]
    reasons = dict(store.table("rejects").select("line_no", "reason").rows())
    assert reasons == {
        2: "gpus is not a whole number: '8.5'",
        4: "gpus out of range: '40000000000.0' (expected 0 to 2147483647)",
    }


def test_overlapping_asset_windows_rejected(store: Store, tmp_path: Path) -> None:
    """Regression: two rows for the same (host, device) with overlapping windows
    were both loaded, counting that unit's exposure twice. Windows are half-open,
    so n1's [Jan, Jun) and [Jun, open) touch without overlapping."""
    path = tmp_path / "assets.csv"
    path.write_text(
        "host,device,in_service_ts,out_of_service_ts\n"
        "n1,,2024-01-01T00:00:00Z,2024-06-01T00:00:00Z\n"
        "n1,,2024-06-01T00:00:00Z,\n"
        "n1,,2024-03-01T00:00:00Z,2024-04-01T00:00:00Z\n"
        "n1,GPU0,2024-03-01T00:00:00Z,\n"
        "n1,GPU0,2025-01-01T00:00:00Z,\n"
        "n2,,2024-03-01T00:00:00Z,\n"
    )
    result = read_assets(store, path)
    assert (result.n_lines, result.n_loaded, result.n_rejected) == (6, 4, 2)
    assert store.table("assets").sort("line_no")["line_no"].to_list() == [2, 3, 5, 7]
    reasons = dict(store.table("rejects").select("line_no", "reason").rows())
    assert reasons[4].startswith(
        "service window [2024-03-01T00:00:00Z, 2024-04-01T00:00:00Z) overlaps line 2 "
        "([2024-01-01T00:00:00Z, 2024-06-01T00:00:00Z)) of the same host 'n1';"
    )
    assert reasons[6].startswith(
        "service window [2025-01-01T00:00:00Z, open) overlaps line 5 "
        "([2024-03-01T00:00:00Z, open)) of the same host 'n1', device 'GPU0';"
    )
    assert "out_of_service_ts" in reasons[6]


# -- messages --------------------------------------------------------------------------
@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_utf16_is_named(store: Store, tmp_path: Path, encoding: str) -> None:
    """Regression: UTF-16 (with a BOM FF FE / FE FF, or ASCII text without one) was
    reported as 'binary file (NUL bytes)'."""
    path = tmp_path / "ev.csv"
    path.write_bytes(_EV.encode(encoding))
    with pytest.raises(IngestError, match="UTF-16 encoded") as err:
        read_file(store, path, kind="events")
    assert "iconv -f UTF-16 -t UTF-8 IN > OUT" in str(err.value)


def test_latin1_names_line_and_byte_in_line(store: Store, tmp_path: Path) -> None:
    """'é' in Latin-1 is the single byte 0xE9; it follows the 22 bytes
    '2024-03-01T10:00:00Z,n' of line 3, so it is byte 23 of the line (the UTF-8
    BOM of line 1 does not shift it)."""
    path = tmp_path / "ev.csv"
    path.write_bytes(
        b"\xef\xbb\xbfts,host,failure_mode,detail\n"
        b"2024-03-01T10:00:00Z,n1,gpu/xid_79,ok\n"
        b"2024-03-01T10:00:00Z,n\xe9,gpu/xid_79,bad\n"
    )
    with pytest.raises(IngestError) as err:
        read_file(store, path, kind="events")
    assert err.value.line_no == 3
    assert "byte 0xE9 at byte 23 of the line" in str(err.value)
    assert "iconv -f LATIN1 -t UTF-8" in str(err.value)


def test_truncated_parquet_is_named(store: Store, tmp_path: Path) -> None:
    """A cut-off Parquet file keeps its leading PAR1 magic but not its footer."""
    whole = tmp_path / "whole.parquet"
    pl.DataFrame(
        {"ts": ["2024-01-01T00:00:00Z"] * 50, "host": ["n1"] * 50}
    ).write_parquet(whole)
    path = tmp_path / "ev.parquet"
    path.write_bytes(whole.read_bytes()[:40])
    with pytest.raises(IngestError, match="not a readable Parquet file") as err:
        read_file(store, path, kind="events")
    msg = str(err.value)
    assert "LINE 1" not in msg
    assert "read_parquet" not in msg
    assert "\n" not in msg


def test_zoneless_message_names_cli_and_library(store: Store) -> None:
    with pytest.raises(IngestError) as err:
        read_events(store, DATA / "events_zoneless.csv")
    assert "pass --tz ZONE (library: tz='ZONE'), e.g. --tz UTC" in str(err.value)
    assert "read_file(" not in str(err.value)
