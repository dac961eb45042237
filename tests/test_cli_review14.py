"""Defects the issue 14 review found in the command line, one test each.

Expected values are worked by hand in each docstring (or read from the CSV
output of the same command, where the point is how the table writes a value
that CSV keeps in full).
"""

import re
from pathlib import Path

import pytest

from relkit._cli_format import probability_text, reading_frame, reading_value
from relkit.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _table(out: str) -> list[dict[str, str]]:
    """Parse a markdown table printed by the CLI into rows of cell text."""
    lines = [line for line in out.splitlines() if line.startswith("|")]
    cells = re.compile(r"(?<!\\)\|")
    head = [c.strip() for c in cells.split(lines[0].strip("|"))]
    return [
        dict(zip(head, (c.strip() for c in cells.split(line[1:-1])), strict=True))
        for line in lines[2:]
    ]


def test_small_values_keep_three_significant_digits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A 1,048,576-GPU fleet's MTTF is 0.0282 h, not 0.

    By hand: 8 GPUs a node, so 1,048,576 GPUs = 131,072 nodes; at 6.5 failures
    per 1000 node-days (0.0065 per node-day) MTTF = 24 / (131072 * 0.0065) =
    24 / 851.968 = 0.028170 h -> 0.0282 (three significant digits); one node:
    24 / 0.0065 = 3,692.3 h -> 3,692.
    """
    code, out, _ = run(
        capsys, "scale", "--failures-per-1000-node-days", "6.5", "--gpus", "8,1048576"
    )
    assert code == 0
    rows = _table(out)
    assert [r["mttf_h"] for r in rows] == ["3,692", "0.0282"]


def test_reading_value_never_rounds_to_zero_or_one() -> None:
    """Hand-written cases of the rule: >= 3 significant digits, no false 0 or 1.

    0.0002 at 3 places would read 0.000 -> 0.000200; 0.9999974 at 4 places
    would read 1.0000 -> 0.999997 (the first place where it is not 1);
    0.38037 at 2 places (2 digits) -> 0.380; 3.4e-6 -> exponent 3.40e-06; 0.95
    at 2 places is exact and stays 0.95; an exact 0 is 0.
    """
    assert reading_value(0.0002, 3) == "0.000200"
    assert reading_value(0.9999974, 4) == "0.999997"
    assert reading_value(0.38037, 2) == "0.380"
    assert reading_value(3.4e-6, 4) == "3.40e-06"
    assert reading_value(0.95, 2) == "0.95"
    assert reading_value(0.0, 4) == "0"
    assert reading_value(4543944.5333, 0) == "4,543,945"


def test_p_and_q_values_have_their_own_rule() -> None:
    """p/q-values: 3 significant digits, exponent below 1e-4, 0 as <1e-300.

    By hand: 0.00074 -> 0.000740; 1.26e-138 -> 1.26e-138; 0.0485 -> 0.0485;
    6.3e-135 -> 6.30e-135; a Laplace p-value that underflowed to 0.0 is below
    the smallest double, written <1e-300.
    """
    assert probability_text(0.00074) == "0.000740"
    assert probability_text(1.26e-138) == "1.26e-138"
    assert probability_text(0.0485) == "0.0485"
    assert probability_text(6.3e-135) == "6.30e-135"
    assert probability_text(0.0) == "<1e-300"


def test_lanl_lemons_p_values_are_not_zero(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LANL's top lemon (s19-n1024, 119 failures against 3.207 expected) has
    p = P(X >= 119 | Poisson(3.207)), about 1.3e-138 (CSV), shown in exponent
    form, never as 0; the table's value matches the CSV's to 3 digits."""
    import polars as pl

    code, out, _ = run(capsys, "lemons", "--db", str(lanl_db), "--format", "csv")
    assert code == 0
    from io import StringIO

    full = pl.read_csv(StringIO(out))
    code, out, _ = run(capsys, "lemons", "--db", str(lanl_db))
    rows = _table(out)
    assert rows[0]["host"] == full["host"][0]
    assert float(rows[0]["p_value"]) == pytest.approx(full["p_value"][0], rel=5e-3)
    assert float(rows[0]["q_value"]) == pytest.approx(full["q_value"][0], rel=5e-3)
    assert full["p_value"][0] < 1e-100
    assert all(r["p_value"] not in ("0", "0.000") for r in rows)


def test_an_estimate_and_its_bounds_share_places() -> None:
    """cumulative_incidence, lower and upper are written with the same places.

    By hand: the family's values 0.1234, 0.1, 0.15 have median 0.1234 -> four
    significant digits = 4 places for all three (a place is dropped only when
    it is 0 in every value of the family, and 0.1234's last place is not):
    0.1234, 0.1000, 0.1500 (before, lower and upper were written 0.1 / 0.15).
    """
    import polars as pl

    frame = pl.DataFrame(
        {"cumulative_incidence": [0.1234], "lower": [0.1], "upper": [0.15]}
    )
    shown = reading_frame(frame)
    assert [shown[c][0].strip() for c in shown.columns] == [
        "0.1234",
        "0.1000",
        "0.1500",
    ]


@pytest.fixture(scope="module")
def small_fleet(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Two nodes in service 1000 h each; failures (t in h from 2025-01-01):
    n1 at 100, 300 and 300h+5min; n2 at 500. So 4 failure records; folded at
    10 min the two n1 failures 5 min apart count once: 3."""
    where = tmp_path_factory.mktemp("small")
    (where / "assets.csv").write_text(
        "host,in_service_ts,out_of_service_ts,gpus,system\n"
        "n1,2025-01-01T00:00:00Z,2025-02-11T16:00:00Z,8,1\n"
        "n2,2025-01-01T00:00:00Z,2025-02-11T16:00:00Z,8,2\n"
    )
    (where / "events.csv").write_text(
        "ts,host,failure_mode\n"
        "2025-01-05T04:00:00Z,n1,hardware/gpu\n"
        "2025-01-13T12:00:00Z,n1,hardware/gpu\n"
        "2025-01-13T12:05:00Z,n1,network/nic\n"
        "2025-01-21T20:00:00Z,n2,hardware/gpu\n"
    )
    db = str(where / "small.duckdb")
    for kind in ("assets", "events"):
        assert (
            main(["ingest", "--db", db, "--kind", kind, str(where / f"{kind}.csv")])
            == 0
        )
    return db


def test_scale_db_states_level_and_folding(
    small_fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """scale --db: the bounds' level is a column and in the note; the note says
    how many failures mtbf counts without folding.

    By hand: 2 nodes x 1000 h = 2000 node-h = 83.333 node-days. Folded at 10 min,
    3 failures: r_f = 3 / 83.333 = 0.036 per node-day = 36.000 per 1000;
    mtbf counts 4: 48.000 per 1000. MTTF at 8 GPUs (1 node) = 24 / 0.036 =
    666.67 h -> 666.7.
    """
    code, out, err = run(capsys, "scale", "--db", small_fleet, "--gpus", "8")
    assert code == 0
    rows = _table(out)
    assert rows[0]["confidence"] == "0.95"
    assert rows[0]["mttf_h"] == "666.7"
    assert "r_f = 36.000 per 1000 node-days, bounds at confidence 0.95" in err
    assert "(3 failures in 83.3 node-days" in err
    assert "counts 4 failures (48.000 per 1000 node-days)" in err


def test_bounds_carry_their_level(
    small_fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """trend, mcf, cif and hazards print the level their bounds were computed
    at: the --confidence given (0.8 here), in every format."""
    for verb, extra in (
        ("trend", []),
        ("mcf", []),
        ("cif", []),
    ):
        code, out, _ = run(
            capsys, verb, "--db", small_fleet, "--confidence", "0.8", *extra
        )
        assert code == 0, verb
        assert {r["confidence"] for r in _table(out)} == {"0.8"}, verb
        code, out, _ = run(
            capsys, verb, "--db", small_fleet, "--confidence", "0.8", "--format", "csv"
        )
        assert out.splitlines()[0].split(",").count("confidence") == 1


def test_scale_refuses_conflicting_rate_options(
    small_fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--db with a given rate conflict; --db with --rate-bounds is refused; bounds
    not containing the rate are said in the option's own unit (6.5 per 1000
    node-days, not 0.0065)."""
    code, _, err = run(
        capsys,
        "scale",
        "--db",
        small_fleet,
        "--failures-per-1000-node-days",
        "6.5",
        "--gpus",
        "8",
    )
    assert code != 0
    assert "--failures-per-1000-node-days and --db conflict" in err
    code, _, err = run(
        capsys, "scale", "--db", small_fleet, "--rate-bounds", "1,2", "--gpus", "8"
    )
    assert code != 0
    assert "drop --rate-bounds" in err
    code, _, err = run(
        capsys,
        "scale",
        "--failures-per-1000-node-days",
        "6.5",
        "--rate-bounds",
        "0.005,0.008",
        "--gpus",
        "8",
    )
    assert code != 0
    assert "--failures-per-1000-node-days 6.5" in err
    assert "per 1000 node-days" in err
    assert err.count("\n") == 1


def test_events_unknown_mode_is_an_error(
    small_fleet: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """An unknown --failure-mode exits 1 and names the store's modes (the small
    fleet's events have exactly hardware/gpu and network/nic); a known one
    lists its events (3 hardware/gpu rows)."""
    code, out, err = run(
        capsys, "events", "--db", small_fleet, "--failure-mode", "bogus/mode"
    )
    assert code == 1
    assert out == ""
    assert "its modes are hardware/gpu, network/nic" in err
    code, out, err = run(
        capsys, "events", "--db", small_fleet, "--failure-mode", "hardware/gpus"
    )
    assert code == 1
    assert "did you mean hardware/gpu" in err
    code, out, _ = run(
        capsys, "events", "--db", small_fleet, "--failure-mode", "hardware/gpu"
    )
    assert code == 0
    assert len(_table(out)) == 3


@pytest.mark.parametrize(
    "argv",
    [
        ["scale", "--gpus", "16384"],
        ["whatif", "--gpus", "16384", "--restart-h", "0.5", "--cost-h", "0.05"],
        [
            "ettr",
            "--gpus",
            "16384",
            "--restart-h",
            "0.5",
            "--interval-h",
            "1",
            "--cost-h",
            "0.05",
        ],
    ],
)
def test_a_per_node_day_rate_in_the_per_1000_option_is_warned(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """0.0065 given per 1000 node-days is an MTBF of 1000 / 0.0065 = 153,846
    node-days = 421 years (/ 365.25): warned as a per-node-day rate; 6.5 per
    1000 node-days (Kokolis et al.'s value) is not warned."""
    code, _, err = run(capsys, *argv, "--failures-per-1000-node-days", "0.0065")
    assert code == 0
    assert "is an MTBF of 421 years per node; it looks like a per-node-day rate" in err
    code, _, err = run(capsys, *argv, "--failures-per-1000-node-days", "6.5")
    assert "looks like a per-node-day rate" not in err


def test_natural_ties_and_level_order() -> None:
    """Rows tied on the rank keep their rank, ids in natural order within a tie
    (hand-made: p 0.1 for s12-n10, s12-n126, s12-n1 -> n1, n10, n126; then
    p 0.2 for s2-n1 stays last); a hazards-style level table sorts 2 < 10."""
    import polars as pl

    from relkit._cli_format import natural_order, natural_ties

    frame = pl.DataFrame(
        {
            "system": ["12", "12", "12", "2"],
            "host": ["s12-n10", "s12-n126", "s12-n1", "s2-n1"],
            "p_value": [0.1, 0.1, 0.1, 0.2],
        }
    )
    assert natural_ties(frame, "p_value")["host"].to_list() == [
        "s12-n1",
        "s12-n10",
        "s12-n126",
        "s2-n1",
    ]
    levels = pl.DataFrame(
        {"covariate": ["system"] * 3, "level": ["10", "2", "3"], "x": [1, 2, 3]}
    )
    assert natural_order(levels)["level"].to_list() == ["2", "3", "10"]


def test_survival_by_system_in_natural_order(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LANL systems 2, 3, 4, ... 10, ... 24 (natural order), behind the
    all-null failure_mode column that the table leaves out."""
    code, out, _ = run(capsys, "survival", "--db", str(lanl_db), "--by", "system")
    assert code == 0
    systems = [r["system"] for r in _table(out)]
    assert systems[:3] == ["2", "3", "4"]
    assert systems == sorted(systems, key=int)


def test_a_bar_in_a_cell_does_not_break_the_table(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """survival's gof_name is "max |KM - fitted S| at failure times" (CSV); the
    table writes its bars escaped (\\|), so every row has as many cells as the
    header."""
    code, out, _ = run(capsys, "survival", "--db", str(lanl_db))
    assert code == 0
    rows = _table(out)
    assert rows[0]["gof_name"] == r"max \|KM - fitted S\| at failure times"


@pytest.fixture(scope="module")
def simulated_run(tmp_path_factory: pytest.TempPathFactory) -> str:
    """The bundled simulated run ingested as ``relkit demo`` does it."""
    from relkit._demo_jobs import ingest_simulated_run
    from relkit.store import Store

    db = str(tmp_path_factory.mktemp("sim") / "fleet.duckdb")
    with Store(db) as store:
        ingest_simulated_run(store, lambda _message: None)
    return db


def _store_examples() -> list[tuple[str, list[str]]]:
    """Help examples that need only a store (not a file to ingest or report)."""
    import shlex

    from relkit._cli_help import EXAMPLES

    found = []
    for verb, lines in EXAMPLES.items():
        for line in lines:
            words = shlex.split(line)
            if ">" in words:
                words = words[: words.index(">")]
            if "--db" in words and verb not in ("ingest", "report", "rejects"):
                found.append((line, words[1:]))
    return found


@pytest.mark.parametrize(("line", "argv"), _store_examples())
def test_every_store_example_runs(
    line: str,
    argv: list[str],
    simulated_run: str,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Each help example that reads a store exits 0 on the simulated run's store
    and prints a result (`goodput --run-by job` failed: the column is job_id)."""
    argv = [simulated_run if a == "fleet.duckdb" else a for a in argv]
    code, out, err = run(capsys, *argv)
    assert code == 0, (line, err)
    assert out.strip(), line


def test_relkit_db_errors_name_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A missing store named by RELKIT_DB says the path came from it; a blank
    RELKIT_DB is unset (the default relkit.duckdb, looked up in the working
    directory); an explicit --db is not blamed on the variable."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("RELKIT_DB", "nope.duckdb")
    code, _, err = run(capsys, "mtbf")
    assert code == 1
    assert "nope.duckdb: no such store" in err
    assert "came from $RELKIT_DB" in err
    code, _, err = run(capsys, "mtbf", "--db", "other.duckdb")
    assert "RELKIT_DB" not in err
    monkeypatch.setenv("RELKIT_DB", "  ")
    code, _, err = run(capsys, "mtbf")
    assert code == 1
    assert "relkit.duckdb: no such store" in err
    assert "RELKIT_DB" not in err


def test_rootcause_pct_one_decimal_and_window_times_iso(
    simulated_run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """rootcause on the simulated run: 17 Faulty GPU of 56 unexpected
    interruptions = 30.357 % -> 30.4 (one decimal, CSV keeps 30.357...); the
    41 planned requeues are 100.0 % of the planned, said in the note. A swapped
    window is written in ISO form with Z."""
    code, out, err = run(capsys, "rootcause", "--db", simulated_run)
    assert code == 0
    rows = {r["component"]: r for r in _table(out) if "component" in r}
    assert rows["Faulty GPU"]["pct"] == "30.4"
    assert rows["Requeued, no failure logged"]["pct"] == "100.0"
    assert "of the 56 unexpected interruptions" in err
    assert "of the 41 planned ones for Planned" in err
    code, _, err = run(
        capsys,
        "rootcause",
        "--db",
        simulated_run,
        "--window-start",
        "2024-04-01T00:00Z",
        "--window-end",
        "2024-03-01T00:00Z",
    )
    assert code == 1
    assert (
        "--window-start 2024-04-01T00:00:00Z is not before --window-end "
        "2024-03-01T00:00:00Z" in err
    )


def test_cif_one_group_says_grays_test_needs_two(
    simulated_run: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """The simulated run's assets have one system, so cif --by system has one
    group: no empty Gray's-test table, a note that the test needs two."""
    code, out, err = run(capsys, "cif", "--db", simulated_run, "--by", "system")
    assert code == 0
    assert "Gray's test between" not in out
    assert "Gray's test needs two or more groups of system" in err


def test_an_empty_list_cell_is_blank() -> None:
    """A pending job has no hosts: its cell is blank, not []; a running job's
    hosts read "gpu1, gpu2" (hand-made two-row frame)."""
    import polars as pl

    frame = pl.DataFrame({"job_id": ["1", "2"], "hosts": [["gpu1", "gpu2"], []]})
    shown = reading_frame(frame)
    assert shown["hosts"].to_list() == ["gpu1, gpu2", ""]


def test_an_unknown_option_prints_the_verbs_usage(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """relkit mtbf --bogus: exit 2 with mtbf's usage line and its error, not the
    top-level usage."""
    with pytest.raises(SystemExit) as stop:
        main(["mtbf", "--bogus"])
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: relkit mtbf ")
    assert "relkit mtbf: error: unrecognized arguments: --bogus" in err
