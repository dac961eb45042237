"""relkit lemons on the command line (issue 12 §5)."""

import json
from pathlib import Path

import pytest

from relkit.cli import main


def test_lemons_json_fields_and_note(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LANL: the issue's fields; 185 lemons of 5,007 nodes said on stderr.

    Values as tests/test_lemons.py::test_lanl_lemon_nodes (measured, ours).
    """
    assert main(["lemons", "--db", str(lanl_db), "--format", "json"]) == 0
    captured = capsys.readouterr()
    rows = json.loads(captured.out)
    assert len(rows) == 5007
    fields = ["host", "n_failures", "expected", "p_value", "q_value", "modes"]
    assert {*fields, "n_devices", "exposure_h", "lemon"} <= set(rows[0])
    assert rows[0]["host"] == "s19-n1024"
    assert "5007 node(s) tested, 185 lemon(s) at q <= 0.05" in captured.err
    assert "48 repeat(s)" in captured.err


def test_lemons_only_and_bad_mode(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = str(lanl_db)
    assert main(["lemons", "--db", db, "--lemons-only", "--format", "csv"]) == 0
    assert len(capsys.readouterr().out.strip().splitlines()) == 186
    assert main(["lemons", "--db", db, "--failure-mode", "nope"]) == 1
    err = capsys.readouterr().err
    assert "no counted failure of mode 'nope'" in err
    assert "Traceback" not in err


def test_lemons_refuses_an_empty_store(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from relkit.store import Store

    db = tmp_path / "empty.duckdb"
    with Store(db):
        pass
    assert main(["lemons", "--db", str(db)]) == 1
    err = capsys.readouterr().err
    assert "error:" in err
    assert "Traceback" not in err


def test_bad_fdr_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["lemons", "--fdr", "2"])
    assert stop.value.code == 2
    assert "expected a fraction in (0, 1)" in capsys.readouterr().err


def test_simulate_lemon_options(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--lemon-nodes 3 lists 3 lemon hosts; --rate-trend goes to the ground truth."""
    out = tmp_path / "sim"
    argv = ["simulate", "--nodes", "20", "--days", "3", "--run-nodes", "0"]
    argv += ["--lemon-nodes", "3", "--lemon-multiplier", "5", "--rate-trend", "2"]
    assert main([*argv, "--out", str(out)]) == 0
    truth = json.loads((out / "ground_truth.json").read_text())
    assert len(truth["fleet"]["lemon_hosts"]) == 3
    assert truth["config"]["lemon_multiplier"] == 5.0
    assert truth["rate_trend"]["beta"] == 2.0
    capsys.readouterr()
    assert (
        main(
            [
                "simulate",
                "--nodes",
                "20",
                "--lemon-nodes",
                "21",
                "--out",
                str(tmp_path / "x"),
            ]
        )
        == 1
    )
    assert "--lemon-nodes" in capsys.readouterr().err
