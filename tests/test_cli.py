"""The command-line contract of issue 2 §5: verbs, JSON field names, errors."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from relkit.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_ref_checkpoint_json_daly_fig3(capsys: pytest.CaptureFixture[str]) -> None:
    """Daly 2006 Fig. 3 (doi:10.1016/j.future.2004.11.016).

    M = 24 h, δ = 5 min, R = 10 min.

    Row ``daly2006_fig3`` of shared/reference/checkpoint_intervals.csv (min):
    Young 120.0, Daly first order 120.4159, higher order 116.6898, exact 116.6901,
    efficiency 0.912606.
    """
    code, out, _ = run(
        capsys,
        "checkpoint",
        "--mtbf-h",
        "24",
        "--cost-h",
        str(5 / 60),
        "--restart-h",
        str(10 / 60),
        "--format",
        "json",
    )
    assert code == 0
    got = json.loads(out)
    assert set(got) == {
        "young_h",
        "daly_first_order_h",
        "daly_h",
        "daly_branch",
        "exact_h",
        "efficiency_at_exact",
    }
    assert got["young_h"] * 60 == pytest.approx(120.0, rel=1e-4)
    assert got["daly_first_order_h"] * 60 == pytest.approx(120.4159, rel=1e-4)
    assert got["daly_h"] * 60 == pytest.approx(116.6898, rel=1e-4)
    assert got["exact_h"] * 60 == pytest.approx(116.6901, rel=1e-4)
    assert got["efficiency_at_exact"] == pytest.approx(0.912606, rel=1e-4)


def test_ref_ettr_json_kokolis_fixed(capsys: pytest.CaptureFixture[str]) -> None:
    """Kokolis et al. 2025 (arXiv:2410.21680).

    16,000 GPUs, r_f = 6.5e-3, u0 = 5 min, Δt = 1 h.

    Row ``fixed`` of shared/reference/ettr_model.csv: E[ETTR] = 0.684; MTTF = 1/λ with
    λ = 2000 × 6.5e-3 / 24 per hour → 1.8462 h.
    """
    code, out, _ = run(
        capsys,
        "ettr",
        "--gpus",
        "16000",
        "--failure-rate",
        "0.0065",
        "--restart-h",
        str(5 / 60),
        "--interval-h",
        "1",
        "--format",
        "json",
    )
    assert code == 0
    got = json.loads(out)
    assert {"mttf_h", "ettr", "optimal_interval_h", "ettr_at_optimal"} <= set(got)
    assert got["ettr"] == pytest.approx(0.684, abs=5e-4)
    assert got["mttf_h"] == pytest.approx(24 / (2000 * 0.0065), rel=1e-6)


@pytest.mark.parametrize(
    ("argv", "needle"),
    [
        (("checkpoint", "--mtbf-h", "0", "--cost-h", "0.1"), "mtbf"),
        (("checkpoint", "--mtbf-h", "10", "--cost-h", "-1"), "cost"),
        (("checkpoint", "--mtbf-h", "nan", "--cost-h", "0.1"), "mtbf"),
        (
            (
                "ettr",
                "--gpus",
                "12",
                "--failure-rate",
                "0.01",
                "--restart-h",
                "0.1",
                "--interval-h",
                "1",
            ),
            "gpus-per-node",
        ),
    ],
)
def test_bad_parameters_give_a_message_not_a_traceback(
    capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], needle: str
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 1
    assert out == ""
    assert needle in err.lower()
    assert "Traceback" not in err


def test_ingest_missing_zone_names_file_line_and_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "events.csv"
    csv.write_text("ts,host,failure_mode\n2025-01-01 10:00:00,gpu001,hardware/gpu\n")
    code, _, err = run(
        capsys,
        "ingest",
        "--db",
        str(tmp_path / "s.duckdb"),
        "--kind",
        "events",
        str(csv),
    )
    assert code == 1
    assert str(csv) in err
    assert "--tz" in err
    assert "Traceback" not in err


def test_ingest_json_and_reingest_is_skipped(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "events.csv"
    csv.write_text(
        "ts,host,failure_mode\n"
        "2025-01-01T10:00:00Z,gpu001,hardware/gpu\n"
        "not-a-time,gpu002,hardware/gpu\n"
    )
    db = str(tmp_path / "s.duckdb")
    code, out, _ = run(
        capsys, "ingest", "--db", db, "--kind", "events", str(csv), "--format", "json"
    )
    assert code == 0
    (first,) = json.loads(out)
    assert {
        k: first[k] for k in ("kind", "n_lines", "n_loaded", "n_rejected", "skipped")
    } == {
        "kind": "events",
        "n_lines": 2,
        "n_loaded": 1,
        "n_rejected": 1,
        "skipped": False,
    }
    assert first["path"] == str(csv)
    code, out, _ = run(
        capsys, "ingest", "--db", db, "--kind", "events", str(csv), "--format", "json"
    )
    assert json.loads(out)[0]["skipped"] is True


def test_mtbf_on_an_empty_store_says_what_to_do(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "empty.duckdb"
    code, _, err = run(capsys, "mtbf", "--db", str(db))
    assert code == 1
    assert "relkit ingest" in err


def test_module_entry_point_runs() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "relkit",
            "checkpoint",
            "--mtbf-h",
            "3",
            "--cost-h",
            "0.0167",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0
    assert "daly_h" in done.stdout


MTBF_FIELDS = {
    "n_failures",
    "exposure_h",
    "mtbf_h",
    "mtbf_lower_h",
    "mtbf_upper_h",
    "mtbf_lower_one_sided_h",
    "mttr_h",
    "failures_per_1000_node_days",
}
SURVIVAL_FIELDS = {
    "n_units",
    "n_failures",
    "best_model",
    "aic",
    "weibull_shape",
    "weibull_shape_lower",
    "weibull_shape_upper",
    "weibull_scale_h",
}


def test_mtbf_json_contract_on_lanl(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 2 §5 field names; counts from shared/reference/README.md."""
    code, out, _ = run(
        capsys, "mtbf", "--db", str(lanl_db), "--by", "root_cause", "--format", "json"
    )
    assert code == 0
    rows = json.loads(out)
    assert all(MTBF_FIELDS | {"root_cause"} <= set(r) for r in rows)
    assert {r["root_cause"]: r["n_failures"] for r in rows}["hardware"] == 14341
    assert sum(r["n_failures"] for r in rows) == 23739


def test_mtbf_csv_and_table_formats(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "mtbf", "--db", str(lanl_db), "--format", "csv")
    assert code == 0
    header, row = out.strip().splitlines()
    assert header.startswith("n_units,n_failures,exposure_h,mtbf_h")
    assert row.startswith("5007,23739,")
    code, out, _ = run(capsys, "mtbf", "--db", str(lanl_db), "--by", "system")
    assert code == 0
    assert "mtbf_lower_one_sided_h" in out


def test_survival_json_contract_on_lanl(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(
        capsys,
        "survival",
        "--db",
        str(lanl_db),
        "--by",
        "system",
        "--unit",
        "system",
        "--format",
        "json",
    )
    assert code == 0, err
    rows = {r["system"]: r for r in json.loads(out)}
    assert all(set(r) >= SURVIVAL_FIELDS for r in rows.values())
    # unit=system: 2,478 node records of system 20 are 2,386 system outages
    # (records within 60 s are one outage, issue 9 §4); see test_answers
    assert rows["20"]["n_failures"] == 2386
    assert rows["20"]["weibull_shape"] < 1


def test_mtbf_window_needs_a_zone(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(
        capsys, "mtbf", "--db", str(lanl_db), "--window-start", "2003-01-01"
    )
    assert code == 1
    assert "no time zone" in err


def test_report_command_writes_page_and_tables(
    lanl_db: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "report", "--db", str(lanl_db), "--out", str(tmp_path))
    assert code == 0, err
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "MTBF by system" in page
    assert 'src="http' not in page
    assert {p.name for p in (tmp_path / "tables").iterdir()} >= {
        "mtbf_by_system.csv",
        "mtbf_by_root_cause.csv",
        "survival_by_system.csv",
        "checkpoint_plan.csv",
    }


def test_replace_rereads_a_grown_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log that grew is refused, then re-read whole with --replace: no duplicates."""
    csv = tmp_path / "events.csv"
    csv.write_text("ts,host,failure_mode\n2025-01-01T10:00:00Z,gpu001,hardware/gpu\n")
    db = str(tmp_path / "s.duckdb")
    assert run(capsys, "ingest", "--db", db, "--kind", "events", str(csv))[0] == 0
    with csv.open("a") as fh:
        fh.write("2025-01-02T10:00:00Z,gpu002,network/nic\n")
    code, _, err = run(capsys, "ingest", "--db", db, "--kind", "events", str(csv))
    assert code == 1
    assert "--replace" in err
    code, out, _ = run(
        capsys,
        "ingest",
        "--db",
        db,
        "--kind",
        "events",
        "--replace",
        str(csv),
        "--format",
        "json",
    )
    assert code == 0
    assert json.loads(out)[0]["n_loaded"] == 2
    from relkit.store import Store

    with Store(db, read_only=True) as store:
        assert store.table("events").height == 2


def test_one_bad_file_does_not_stop_the_others(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = tmp_path / "good.csv"
    good.write_text("ts,host,failure_mode\n2025-01-01T10:00:00Z,gpu001,hardware/gpu\n")
    other = tmp_path / "other.csv"
    other.write_text("ts,host,failure_mode\n2025-01-03T10:00:00Z,gpu003,hardware/gpu\n")
    code, out, err = run(
        capsys,
        "ingest",
        "--db",
        str(tmp_path / "s.duckdb"),
        "--kind",
        "events",
        str(good),
        str(tmp_path / "missing.csv"),
        str(other),
        "--format",
        "json",
    )
    assert code == 1
    rows = json.loads(out)
    assert [r.get("n_loaded") for r in rows] == [1, None, 1]
    assert "missing.csv" in rows[1]["path"]
    assert "no such file" in rows[1]["error"].lower()
    assert "missing.csv" in err
    assert "1 of 3 file(s)" in err


def test_gpus_per_node_zero_is_a_message(capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(
        capsys,
        "ettr",
        "--gpus",
        "16384",
        "--gpus-per-node",
        "0",
        "--failure-rate",
        "0.0065",
        "--restart-h",
        "0.1",
        "--interval-h",
        "1",
    )
    assert code == 1
    assert "--gpus-per-node" in err
    assert "Traceback" not in err


def test_ingest_csv_output_flattens_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    csv = tmp_path / "events.csv"
    csv.write_text("ts,host,failure_mode\n2025-01-01T10:00:00Z,gpu001,hardware/gpu\n")
    code, out, err = run(
        capsys,
        "ingest",
        "--db",
        str(tmp_path / "s.duckdb"),
        "--kind",
        "events",
        str(csv),
        "--format",
        "csv",
    )
    assert code == 0, err
    header, row = out.strip().splitlines()
    assert "replaced" in header.split(",")
    assert row.split(",")[header.split(",").index("n_loaded")] == "1"


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (("incidents", "--window-min", "1e15"), "--window-min"),
        (("mtbf", "--gpus-per-node", "0"), "--gpus-per-node"),
        (("ingest", "--kind", "kernel", "--host", " ", "x.log"), "--host"),
    ],
)
def test_out_of_range_options_name_the_flag(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...], flag: str
) -> None:
    code, _, err = run(capsys, argv[0], "--db", str(tmp_path / "s.duckdb"), *argv[1:])
    assert code == 1
    assert flag in err
    assert "Traceback" not in err


def test_ref_c05_incidents_open_link_runs_to_the_last_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """C05 (../shared/cases/README.md): host-b's port goes down at 11:30:00 and the
    log's last line is at 12:00:00, so `relkit incidents` shows one open,
    right-censored incident down for 1800 s (not 0 s at its own last event); host-a's
    flaps are one incident from 08:00:01.1 to 08:00:47.5, down 18.9 s."""
    from shared_paths import SHARED

    c05 = SHARED / "cases" / "C05-roce-ib-link-flap.log"
    if not c05.exists():
        pytest.skip("shared cases absent")
    db = str(tmp_path / "c05.duckdb")
    assert run(capsys, "ingest", "--kind", "kernel", "--db", db, str(c05))[0] == 0
    code, out, _ = run(capsys, "incidents", "--db", db, "--format", "json")
    assert code == 0
    links = {
        r["host"]: r
        for r in json.loads(out)
        if r["failure_mode"] == "network/link_down"
    }
    assert sorted(links) == ["host-a", "host-b"]
    assert links["host-b"]["is_open"] is True
    assert links["host-b"]["down_s"] == pytest.approx(1800.0)
    assert links["host-a"]["down_s"] == pytest.approx(18.9)
    assert links["host-a"]["start_ts"] == "2025-05-02T08:00:01.100Z"
    assert links["host-a"]["end_ts"] == "2025-05-02T08:00:47.500Z"


@pytest.mark.parametrize(
    ("kind", "option", "file"),
    [
        ("events", ["--host", "gpu01"], "datasets/examples/events.csv"),
        ("events", ["--reference-date", "2025-03-05"], "datasets/examples/events.csv"),
        ("sacct", ["--host-from-filename"], "tests/data/sacct_c08.psv"),
        ("sacct", ["--snapshot-ts", "2025-01-01T00:00Z"], "tests/data/sacct_c08.psv"),
        ("k8s", ["--tz", "UTC"], "tests/data/k8s_podlist_gang.json"),
        ("k8s", ["--fields", "JobID,State"], "tests/data/k8s_podlist_gang.json"),
        ("kernel", ["--pseudonymize"], "tests/data/kernel_reboot.log"),
        ("nvsmi", ["--host-from-filename"], "tests/data/nvsmi_c06_a_1000_1b.txt"),
    ],
)
def test_ingest_refuses_an_option_its_kind_would_ignore(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    kind: str,
    option: list[str],
    file: str,
) -> None:
    """Silence is a bug: an option the kind does not read (a --tz on Kubernetes
    JSON, whose times carry their zone; a --host on a sacct dump) would change
    nothing, so ingest refuses it by name and writes nothing (exit 1)."""
    root = Path(__file__).parents[1]
    extra = ["--tz", "UTC"] if kind in ("events", "sacct", "nvsmi") else []
    db = str(tmp_path / "s.duckdb")
    code, _, err = run(
        capsys, "ingest", "--db", db, "--kind", kind, *extra, *option, str(root / file)
    )
    assert code == 1
    assert f"{option[0]} is for --kind" in err
    assert f"--kind {kind} does not read it" in err


def test_relkit_warnings_print_as_one_line_notes(capsys):
    """A RelkitWarning reaching the command line prints as 'relkit: note: ...'
    (the form of every verb's progress notes), one line with no file path
    (Python's default shows 'path/to/module.py:LINE: RelkitWarning: ...');
    other warnings keep Python's own display."""
    import warnings

    from relkit.cli import _note_printer
    from relkit.errors import RelkitWarning

    seen = []
    show = _note_printer("lemons", lambda *a, **k: seen.append(a[1]))
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = show
        warnings.warn("48 repeats folded", RelkitWarning, stacklevel=1)
        warnings.warn("something else", UserWarning, stacklevel=1)
    err = capsys.readouterr().err
    assert err == "relkit: note: 48 repeats folded\n"
    assert seen == [UserWarning]


def test_a_cut_table_says_so(capsys):
    """Reviewer: `relkit mcf` on LANL printed 201 of 21,196 rows with a bare
    '...' row; a table cut for the terminal now says how many rows it has and
    how to get them all."""
    import polars as pl

    from relkit.cli import _emit

    _emit(pl.DataFrame({"a": list(range(250))}), "table")
    err = capsys.readouterr().err
    assert "250 rows (200 shown)" in err
    assert "--format csv or json" in err
    _emit(pl.DataFrame({"a": [1, 2]}), "table")
    assert capsys.readouterr().err == ""
