"""relkit trend / mcf / mtbf --period on the bundled LANL store."""

import json
import math
from pathlib import Path

import pytest

from relkit.cli import main


def test_trend_json_is_one_document(
    lanl_db: Path, capsys: pytest.CaptureFixture
) -> None:
    """relkit trend --by system --format json: one JSON list, a row per LANL system
    (22 systems with failures) with the three tests and the Crow-AMSAA fields;
    system 2's beta as measured in tests/test_repairable.py (0.8285)."""
    assert (
        main(["trend", "--db", str(lanl_db), "--by", "system", "--format", "json"]) == 0
    )
    rows = json.loads(capsys.readouterr().out)
    by_system = {r["system"]: r for r in rows}
    assert len(rows) >= 22
    for field in ("laplace_p_value", "lewis_robinson_statistic",
                  "mil_hdbk_189_direction", "beta", "current_mtbf_h",
                  "current_mtbf_lower_h", "current_mtbf_upper_h"):  # fmt: skip
        assert field in rows[0]
    assert by_system["2"]["beta"] == pytest.approx(0.8285, abs=1e-3)


def test_trend_unknown_mode_is_one_line(
    lanl_db: Path, capsys: pytest.CaptureFixture
) -> None:
    """An unknown --failure-mode exits 1 with one line naming known modes."""
    code = main(["trend", "--db", str(lanl_db), "--failure-mode", "nope/none"])
    err = capsys.readouterr().err
    assert code == 1
    assert "the modes with failures are" in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_mtbf_period_quarter(lanl_db: Path, capsys: pytest.CaptureFixture) -> None:
    """relkit mtbf --period quarter --format json: the quarters' failures add up to
    the whole store's 23,739 LANL records less the exclusions (the same sum as
    relkit mtbf without --period)."""
    assert main(["mtbf", "--db", str(lanl_db), "--format", "json"]) == 0
    whole = json.loads(capsys.readouterr().out)
    assert (
        main(["mtbf", "--db", str(lanl_db), "--period", "quarter", "--format", "json"])
        == 0
    )
    rows = json.loads(capsys.readouterr().out)
    assert sum(r["n_failures"] for r in rows) == sum(r["n_failures"] for r in whole)
    assert rows[0]["period_start"] < rows[-1]["period_start"]


# The reviewer's case c1 (issue 12): five nodes, and its events alone ("na").
_C1_ASSETS = """host,in_service_ts,out_of_service_ts,gpus,system,rack
n1,2025-01-01T00:00:00Z,,8,A,r1
n2,2025-01-01T00:00:00Z,2025-02-01T00:00:00Z,8,A,r1
n3,2025-02-15T00:00:00Z,,8,A,
n4,2025-01-01T00:00:00Z,2025-01-20T00:00:00Z,8,A,r2
n4,2025-02-10T00:00:00Z,,8,A,r2
n5,2025-01-01T00:00:00Z,,8,A,r2
"""
_C1_EVENTS = """ts,host,failure_mode,device
2025-01-10 00:00:00,n1,hardware/gpu_hbm,0
2025-01-10 00:00:00,n1,hardware/gpu_hbm,0
2025-02-05 00:00:00,n1,hardware/gpu_hbm,1
2025-03-01 00:00:00,n1,software/driver,
2025-01-15 00:00:00,n2,hardware/gpu_hbm,2
2025-02-10 00:00:00,n2,hardware/gpu_hbm,2
2025-02-15 00:00:00,n3,hardware/gpu_hbm,0
2025-03-10 00:00:00,n3,software/driver,
2025-01-30 00:00:00,n4,hardware/gpu_hbm,3
2025-02-20 00:00:00,n4,hardware/gpu_hbm,3
2025-02-25 00:00:00,n9,hardware/gpu_hbm,0
"""


def _c1_store(tmp_path: Path, *, with_assets: bool) -> str:
    db = str(tmp_path / ("c1.duckdb" if with_assets else "na.duckdb"))
    (tmp_path / "events.csv").write_text(_C1_EVENTS)
    (tmp_path / "assets.csv").write_text(_C1_ASSETS)
    common = ["--tz", "UTC", "--as-of", "2025-04-01T00:00Z"]
    if with_assets:
        kind = ["ingest", "--db", db, "--kind", "assets", *common]
        assert main([*kind, str(tmp_path / "assets.csv")]) == 0
    kind = ["ingest", "--db", db, "--kind", "events", *common]
    assert main([*kind, str(tmp_path / "events.csv")]) == 0
    return db


def test_trend_events_only_first_and_last_records_are_not_failures(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """With no assets each host's window runs from its first to its last record,
    both failures here. By hand (reviewer, issue 12): the first failure of each
    host is its clock's origin (5 rows: n1 twice, n2, n3, n4) and the one at its
    window's end makes it failure-terminated (n1, n2, n3, n4), so only n1's
    2025-02-05 failure remains, at 624 h of n1's 1200 h (01-10 to 03-01):
    MIL-HDBK-189 2 ln(1200/624) = 1.3079 on df 2, p = 2 min(F, 1 - F) with
    F = 1 - exp(-1.3079/2) = 0.480, so p = 0.960, no evidence (was p 0.0012,
    "deteriorating"); Laplace (624 - 600)/sqrt(1200^2/12) = 0.0693."""
    db = _c1_store(tmp_path, with_assets=False)
    capsys.readouterr()
    assert main(["trend", "--db", db, "--format", "json"]) == 0
    out = capsys.readouterr()
    (row,) = json.loads(out.out)
    assert row["n_failures"] == 1
    assert row["mil_hdbk_189_statistic"] == pytest.approx(2 * math.log(1200 / 624))
    assert row["mil_hdbk_189_p_value"] == pytest.approx(0.960, abs=1e-3)
    assert row["mil_hdbk_189_direction"] == "no evidence"
    assert row["laplace_statistic"] == pytest.approx(24 / (1200 / math.sqrt(12)))
    assert "origin of that unit's clock" in out.err
    assert "failure-terminated" in out.err
    assert "n9" in out.err  # its one failure has no time at risk: said


def test_trend_and_mcf_say_failures_outside_windows(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """c1 has 3 failures outside every service window (by hand: n4 on 01-30
    between its windows, n2 on 02-10 after its 02-01 removal, n9 not in
    assets), as relkit mtbf says: trend and mcf carry n_excluded 3 and say so."""
    db = _c1_store(tmp_path, with_assets=True)
    capsys.readouterr()
    assert main(["trend", "--db", db, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert json.loads(out.out)[0]["n_excluded"] == 3
    assert "3 failure(s) outside every service window" in out.err
    assert main(["mcf", "--db", db, "--format", "json"]) == 0
    out = capsys.readouterr()
    assert {r["n_excluded"] for r in json.loads(out.out)} == {3}
    assert "3 failure(s) outside every service window" in out.err


def test_mtbf_period_edges(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """c1 by month, data ending 2025-04-01 on a boundary. By hand: 3 months and no
    2025-04-01 row; n_excluded 1 in January (n4 01-30), 2 in February (n2 02-10,
    n9 02-25), 0 in March; February's units are n1, n3, n4, n5 (n2 was removed
    02-01, so it is not in February and no "no measurable time" warning is
    given); its exposure is 672 (n1) + 336 (n3 from 02-15) + 456 (n4 from
    02-10) + 672 (n5) = 2136 h. By quarter, one row ending 2025-04-01."""
    db = _c1_store(tmp_path, with_assets=True)
    capsys.readouterr()
    assert main(["mtbf", "--db", db, "--period", "month", "--format", "json"]) == 0
    out = capsys.readouterr()
    rows = json.loads(out.out)
    assert [r["period_start"][:10] for r in rows] == [
        "2025-01-01", "2025-02-01", "2025-03-01",
    ]  # fmt: skip
    assert [r["period_end"][:10] for r in rows] == [
        "2025-02-01", "2025-03-01", "2025-04-01",
    ]  # fmt: skip
    assert [r["n_excluded"] for r in rows] == [1, 2, 0]
    assert [r["n_units"] for r in rows] == [4, 4, 4]
    assert rows[1]["exposure_h"] == pytest.approx(2136.0)
    assert "no measurable time" not in out.err
    assert main(["mtbf", "--db", db, "--period", "quarter", "--format", "json"]) == 0
    (q,) = json.loads(capsys.readouterr().out)
    assert q["period_end"][:10] == "2025-04-01"


def test_mtbf_period_partial_last_period(
    tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Events only: observation ends at the last record, 2025-03-10. The quarter
    row ends at the calendar boundary 2025-04-01 (was null) and its warning says
    observation ends earlier."""
    db = _c1_store(tmp_path, with_assets=False)
    capsys.readouterr()
    assert main(["mtbf", "--db", db, "--period", "quarter", "--format", "json"]) == 0
    (q,) = json.loads(capsys.readouterr().out)
    assert q["period_end"][:10] == "2025-04-01"
    assert "observation ends at 2025-03-10" in q["warning"]
