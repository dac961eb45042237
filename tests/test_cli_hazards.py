"""relkit hazards (issue 12 §4) on the bundled LANL data."""

import json
from pathlib import Path

import pytest

from relkit.cli import main

LANL = (
    Path(__file__).resolve().parents[1]
    / "datasets"
    / "lanl"
    / "LA-UR-05-7318-failure-data-1996-2005.csv"
)


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store with the bundled LANL records."""
    path = str(tmp_path_factory.mktemp("lanl") / "lanl.duckdb")
    assert (
        main(["ingest", "--db", path, "--kind", "lanl", str(LANL), "--format", "json"])
        == 0
    )
    return path


def test_json_is_one_document(db: str, capsys: pytest.CaptureFixture[str]) -> None:
    """One JSON document with hazard_ratios, checks and notes.

    Values as recorded in tests/test_hazards.py (LANL, Cox by system): system 10
    against 18, HR 0.347; 18 ratios plus the log-rank over 19 systems.
    """
    capsys.readouterr()
    rc = main(["hazards", "--db", db, "--covariates", "system", "--format", "json"])
    out = capsys.readouterr()
    assert rc == 0
    doc = json.loads(out.out)
    assert set(doc) == {"hazard_ratios", "checks", "notes"}
    rows = {r["level"]: r for r in doc["hazard_ratios"]}
    assert len(rows) == 18
    assert rows["10"]["hazard_ratio"] == pytest.approx(0.3472, abs=1e-3)
    assert rows["10"]["reference"] == "18"
    assert doc["checks"]["logrank"][0]["degrees_of_freedom"] == 18
    assert len(doc["checks"]["proportional_hazards_test"]) == 18
    assert "note:" in out.err


def test_unknown_covariate_one_line(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown covariate: exit 1, one line naming the attributes available."""
    capsys.readouterr()
    rc = main(["hazards", "--db", db, "--covariates", "rack", "--format", "json"])
    err = capsys.readouterr().err.strip()
    assert rc == 1
    assert len(err.splitlines()) == 1
    assert "unknown covariate(s) ['rack']" in err
    assert "system" in err
