"""relkit trend / mcf / mtbf --period on the bundled LANL store."""

import json
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
