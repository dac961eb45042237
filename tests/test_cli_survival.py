"""``relkit survival`` through ``relkit.cli.main``: fields, stderr notes, exits.

Expected values are worked by hand in the docstrings (the same fleet as
tests/test_survival_endpoints.py) or are the store's own modes.
"""

import json
from pathlib import Path

import pytest

from relkit.cli import main
from relkit.ingest import read_file
from relkit.store import Store

ASSETS = (
    "host,in_service_ts,observed_from_ts,out_of_service_ts\n"
    "a,2021-01-01T00:00Z,,2021-01-11T00:00Z\n"
    "a,2021-01-21T00:00Z,,2021-01-31T00:00Z\n"
    "b,2020-12-01T00:00Z,2021-01-01T00:00Z,2021-02-05T00:00Z\n"
    "c,2021-01-01T00:00Z,,\n"
    "e,2021-01-01T00:00Z,,\n"
)
EVENTS = (
    "ts,host,failure_mode\n"
    "2021-01-05T00:00Z,a,hw/x\n"
    "2021-01-25T00:00Z,a,hw/y\n"
    "2021-01-03T00:00Z,c,hw/x\n"
    "2021-01-09T00:00Z,e,hw/x\n"
)
END = "2021-02-10T00:00Z"


@pytest.fixture
def db(tmp_path: Path) -> str:
    path = tmp_path / "s.duckdb"
    with Store(path) as store:
        for kind, text in (("assets", ASSETS), ("events", EVENTS)):
            src = tmp_path / f"{kind}.csv"
            src.write_text(text, encoding="utf-8")
            read_file(store, src, kind=kind, tz="UTC")
    return str(path)


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["survival", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_removal_json_fields_and_classes(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """a removed after a failure in its last window (event), b removed without
    one, c and e still in service: 1, 1, 2 on stderr and in the fields."""
    code, out, err = _run(
        capsys,
        "--db",
        db,
        "--endpoint",
        "removal",
        "--window-end",
        END,
        "--format",
        "json",
    )
    assert code == 0, err
    (row,) = json.loads(out)
    for field in (
        "endpoint",
        "unit",
        "failure_mode",
        "n_units",
        "n_failures",
        "n_origin_unknown",
        "n_excluded",
        "best_model",
        "status",
    ):
        assert field in row
    assert (row["endpoint"], row["unit"], row["failure_mode"]) == (
        "removal",
        "node",
        None,
    )
    assert (row["n_units"], row["n_failures"]) == (4, 1)
    assert (
        row["n_removed_after_failure"],
        row["n_removed_without_failure"],
        row["n_in_service"],
    ) == (1, 1, 2)
    assert "1 unit(s) removed after a failure" in err
    assert "1 removed without one" in err
    assert "2 still in service" in err


def test_first_failure_per_mode_rows(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """By mode: hw/x fails first on a (96 h), c (48 h), e (192 h): 3 failures of
    4 units; hw/y on a only: 1 failure, too few to fit, said on stderr."""
    code, out, err = _run(
        capsys,
        "--db",
        db,
        "--endpoint",
        "first-failure",
        "--by",
        "failure_mode",
        "--window-end",
        END,
        "--format",
        "json",
    )
    assert code == 0, err
    rows = {r["failure_mode"]: r for r in json.loads(out)}
    assert (rows["hw/x"]["n_units"], rows["hw/x"]["n_failures"]) == (4, 3)
    assert rows["hw/y"]["n_failures"] == 1
    assert "insufficient failures" in err


def test_unknown_mode_exits_non_zero_naming_the_modes(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = _run(
        capsys,
        "--db",
        db,
        "--failure-mode",
        "hw/z",
        "--unit",
        "node",
        "--window-end",
        END,
    )
    assert code == 1
    assert out == ""
    assert "['hw/x', 'hw/y']" in err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 2  # progress line + one error line


def test_system_unit_with_an_age_is_one_line(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(
        capsys, "--db", db, "--endpoint", "first-failure", "--unit", "system"
    )
    assert code == 1
    assert "--unit node" in err


def test_all_models_ranks_each_group(
    db: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """hw/x per node: gaps 96 h, 48 h, 192 h and the censored rests; every
    model of the six gets a row, ranks 1.. among the fits that are ok, and
    resolution_h is the stamps' (midnights here: the coarsest candidate, 1 h)."""
    code, out, err = _run(
        capsys,
        "--db",
        db,
        "--failure-mode",
        "hw/x",
        "--unit",
        "node",
        "--all-models",
        "--window-end",
        END,
        "--format",
        "json",
    )
    assert code == 0, err
    rows = json.loads(out)
    models = {r["model"] for r in rows}
    assert models == {
        "exponential",
        "weibull",
        "lognormal",
        "loglogistic",
        "gamma",
        "gengamma",
    }
    assert {r["resolution_h"] for r in rows} == {1.0}
    ranks = sorted(r["rank"] for r in rows if r["rank"] is not None)
    assert ranks == list(range(1, len(ranks) + 1))
    assert {r["failure_mode"] for r in rows} == {"hw/x"}
    assert {r["n_failures"] for r in rows} == {3}
