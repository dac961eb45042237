"""Tests of ``relkit cif`` (issue 12 §3): fields, formats, notes, exit codes."""

import csv
import io
import json
from pathlib import Path

import pytest

from relkit.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cif_json_is_one_document_with_the_issue_fields(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LANL by root cause (the library's answer, tests/test_competing.py):
    rows carry failure_mode, time_h, cumulative_incidence, lower, upper,
    n_at_risk, n_events; hardware ends at 0.6268 [0.6090, 0.6440]; the note
    about 4 undated nodes is in the document and on stderr."""
    code, out, err = run(
        capsys, "cif", "--db", str(lanl_db), "--mode-column", "root_cause",
        "--format", "json",
    )  # fmt: skip
    assert code == 0, err
    doc = json.loads(out)
    assert set(doc) == {"cumulative_incidence", "gray_test", "notes"}
    assert doc["gray_test"] == []
    rows = doc["cumulative_incidence"]
    assert list(rows[0]) == [
        "failure_mode",
        "time_h",
        "cumulative_incidence",
        "lower",
        "upper",
        "confidence",
        "n_at_risk",
        "n_events",
    ]
    hw = [r for r in rows if r["failure_mode"] == "hardware"][-1]
    assert hw["cumulative_incidence"] == pytest.approx(0.6268, abs=5e-5)
    assert (hw["lower"], hw["upper"]) == pytest.approx((0.6090, 0.6440), abs=5e-5)
    assert sum(r["n_events"] for r in rows) == 3573
    assert any("no known install date" in n for n in doc["notes"])
    assert "note: 4 of 5007 node(s)" in err


def test_cif_by_group_csv_and_table(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--by system: CSV has the group column after failure_mode and only the
    curves on stdout; Gray's tests go to stderr (hardware: df 18). The table
    format prints them as a second table. --failure-mode keeps one mode."""
    code, out, err = run(
        capsys, "cif", "--db", str(lanl_db), "--mode-column", "root_cause",
        "--by", "system", "--failure-mode", "hardware", "--format", "csv",
    )  # fmt: skip
    assert code == 0, err
    rows = list(csv.DictReader(io.StringIO(out)))
    assert list(rows[0])[:3] == ["failure_mode", "system", "time_h"]
    assert {r["failure_mode"] for r in rows} == {"hardware"}
    assert "Gray's test, hardware between system: chi2" in err
    assert ", df 18," in err
    code, out, err = run(
        capsys, "cif", "--db", str(lanl_db), "--mode-column", "root_cause",
        "--by", "system", "--failure-mode", "software",
    )  # fmt: skip
    assert code == 0, err
    assert "Gray's test between groups of system (Gray 1988):" in out
    assert "| software     | system |" in out


def test_cif_errors_are_one_line_with_the_fix(
    lanl_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A mode with no first failure, a bad level and a store without failures
    exit 1 with one line naming the fix, never a traceback."""
    code, _, err = run(
        capsys, "cif", "--db", str(lanl_db), "--mode-column", "root_cause",
        "--failure-mode", "gpu",
    )  # fmt: skip
    assert code == 1
    assert "no first failure of mode(s) ['gpu']" in err
    assert "Traceback" not in err
    code, _, err = run(capsys, "cif", "--db", str(lanl_db), "--confidence", "95")
    assert code == 1
    assert "--confidence 95.0 must be between 0 and 1" in err
    assets = tmp_path / "assets.csv"
    assets.write_text(
        "host,in_service_ts,out_of_service_ts\n"
        "n1,2025-01-01T00:00:00Z,2025-02-01T00:00:00Z\n"
        "n2,2025-01-01T00:00:00Z,2025-02-01T00:00:00Z\n",
        encoding="utf-8",
    )
    db = str(tmp_path / "quiet.duckdb")
    code, _, err = run(capsys, "ingest", "--db", db, "--kind", "assets", str(assets))
    assert code == 0, err
    code, out, err = run(capsys, "cif", "--db", db, "--format", "json")
    assert code == 1
    assert out == ""
    assert "none of the 2 node(s) failed while observed" in err
    assert len(err.strip().splitlines()) == 1
