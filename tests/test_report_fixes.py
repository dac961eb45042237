"""Checks of the report fixes from issue 14's review (defects in §2)."""

from __future__ import annotations

import polars as pl

from relkit.report import trend_verdict


def _trend(directions, lap=None, mil=None):
    n = len(directions)
    return pl.DataFrame(
        {
            "system": [str(i + 1) for i in range(n)],
            "laplace_direction": directions,
            "laplace_p_value": lap or [0.01] * n,
            "mil_hdbk_189_p_value": mil or [0.01] * n,
        },
        schema_overrides={"laplace_direction": pl.String},
    )


def test_trend_verdict_counts_every_system():
    """Hand count: 2 deteriorating, 3 improving, 1 no evidence of 6; the first
    row (deteriorating) must not speak for the fleet."""
    t = _trend(
        [
            "deteriorating",
            "improving",
            "improving",
            "no evidence",
            "improving",
            "deteriorating",
        ]
    )
    assert trend_verdict(t) == (
        "2 of 6 systems deteriorating, 3 improving, 1 no evidence (Laplace, 5 %)"
    )


def test_trend_verdict_empty_when_no_test_ran():
    """A store with 0 failures has a trend row with null direction: nothing is
    said (it used to print 'failure rate None')."""
    assert trend_verdict(_trend([None])) == ""
    assert trend_verdict(None) == ""


def test_trend_verdict_names_both_tests_when_they_disagree():
    """Laplace p 0.90 (no evidence at 5 %) with MIL-HDBK-189 p 2e-5: both are
    named, as in the reviewer's 4-failure row."""
    text = trend_verdict(_trend(["no evidence"], lap=[0.90], mil=[2e-5]))
    assert "Laplace test (p 0.9)" in text
    assert "MIL-HDBK-189" in text
    assert "2e-05" in text


INFO_CSV = (
    "ts,host,failure_mode,code,device,severity,detail,repaired_ts\n"
    "2025-01-10 00:00:00,gpu001,gpu/informational,43,0000:3b:00,info,Xid 43,\n"
    "2025-01-12 00:00:00,gpu002,gpu/informational,43,0000:3b:00,info,Xid 43,\n"
    "2025-01-15 00:00:00,gpu001,gpu/informational,43,0000:3b:00,info,Xid 43,\n"
)


def test_informational_records_of_an_events_file_are_no_failures(tmp_path):
    """The taxonomy says gpu/informational counts_as_failure false; three such
    records in a normalised events CSV are 0 failures (they were 3, MTBF 40 h),
    as the same mode from a kernel log is. Hand: 0 failures, exposure 120 h
    (gpu001 from Jan 10 to Jan 15)."""
    from relkit import answers
    from relkit.ingest import read_file
    from relkit.store import Store

    (tmp_path / "info.csv").write_text(INFO_CSV)
    store = Store(tmp_path / "info.duckdb")
    read_file(store, tmp_path / "info.csv", kind="events", tz="UTC")
    st = answers.store_tables(store)
    store.close()
    row = answers.mtbf_by(**st).row(0, named=True)
    assert row["n_failures"] == 0
    assert row["exposure_h"] == 120.0


def test_counting_rule_follows_the_store_kinds():
    """The rule of relkit.observation.failure_records, per kind of source: logs
    fold at 10 min; LANL and events records count one each unless a window
    was given (then folded at that window)."""
    from relkit._report_common import counting_rule

    lanl = pl.DataFrame({"kind": ["lanl"]})
    assert "each normalised record" in counting_rule(lanl, None)
    assert "incident" not in counting_rule(lanl, None)
    assert "less than 30 minutes apart" in counting_rule(lanl, 30.0)
    kern = pl.DataFrame({"kind": ["kernel", "sacct"]})
    text = counting_rule(kern, None)
    assert "10 minutes" in text
    assert "normalised" not in text


def test_uncovered_by_logs_counts_attempts_outside_the_logs():
    """Hand: logs of host a from Feb 10 to Feb 20. Job 1 on a, Feb 12-13:
    covered. Job 2 on a, Feb 1-2: before the logs. Job 3 on b: no logs of b.
    Job 4 cancelled (not_failure): not counted. So 2 of 3."""
    from datetime import UTC, datetime

    from relkit._report_interruptions import uncovered_by_logs

    def d(day):
        return datetime(2025, 2, day, tzinfo=UTC)

    found = pl.DataFrame(
        {
            "source_id": [2, 2, 2, 2],
            "job_id": ["1", "2", "3", "4"],
            "attempt": [1, 1, 1, 1],
            "start_ts": [d(12), d(1), d(12), d(1)],
            "end_ts": [d(13), d(2), d(13), d(2)],
            "kind": ["unexpected", "unexpected", "planned", "not_failure"],
        }
    )
    job_nodes = pl.DataFrame(
        {
            "source_id": [2, 2, 2, 2],
            "job_id": ["1", "2", "3", "4"],
            "attempt": [1, 1, 1, 1],
            "host": ["a", "a", "b", "b"],
        }
    )
    events = pl.DataFrame(
        {"ts": [d(10), d(20)], "host": ["a", "a"], "source_id": [1, 1]}
    )
    sources = pl.DataFrame({"source_id": [1, 2], "kind": ["kernel", "sacct"]})
    assert uncovered_by_logs(found, job_nodes, events, sources) == (2, 3)


def test_source_notes_read_again_from_the_jobs():
    """C08 has Start/End but no AllocTRES (n_gpus all null): one note; C09 has
    neither (start, end and n_gpus all null): two notes. Hand count: 3."""
    from datetime import UTC, datetime

    from relkit._report_data import source_notes

    t = datetime(2025, 2, 1, tzinfo=UTC)
    sources = pl.DataFrame(
        {
            "source_id": [1, 2],
            "path": ["x/C08.psv", "x/C09.psv"],
            "kind": ["sacct", "sacct"],
            "options": ['{"tz": "UTC"}', '{"tz": "UTC"}'],
        }
    )
    jobs = pl.DataFrame(
        {
            "source_id": [1, 1, 2],
            "n_gpus": [None, None, None],
            "start_ts": [t, None, None],
            "end_ts": [t, t, None],
        },
        schema_overrides={"n_gpus": pl.Int32},
    )
    notes = source_notes(sources, jobs)
    assert notes["path"].to_list() == ["C08.psv", "C09.psv", "C09.psv"]
    assert "AllocTRES" in notes["note"][0]
    assert "Start/End" in notes["note"][1]


def test_report_cost_h_reaches_the_measured_run(tmp_path):
    """C18's run logs no save time: without --cost-h no interval is decided;
    with cost_h 0.01 h given, the page's decision uses it (cost_h 0.01 in
    tables/checkpoint_decision.csv) and its interval equals
    answers.decide_checkpoints(goodput, cost_h=0.01) computed here."""
    from shared_paths import SHARED

    from relkit import answers
    from relkit.ingest import read_file
    from relkit.report import ReportAssumptions, write_report
    from relkit.store import Store

    store = Store(tmp_path / "gp.duckdb")
    read_file(
        store,
        SHARED / "cases" / "C18-goodput-disruption-rework.jsonl",
        kind="checkpoints",
    )
    write_report(
        store,
        tmp_path / "rep",
        assumptions=ReportAssumptions(cost_h=0.01, given=("cost_h",)),
    )
    got = pl.read_csv(tmp_path / "rep" / "tables" / "checkpoint_decision.csv")
    goodput = answers.run_goodput(
        store.table("checkpoints"), store.table("jobs"), store.table("job_nodes")
    )
    want = answers.decide_checkpoints(goodput, cost_h=0.01)
    store.close()
    assert got["cost_h"][0] == 0.01
    assert abs(got["interval_h"][0] - want["interval_h"][0]) < 1e-12


def test_confidence_reaches_the_weibull_shape_test(tmp_path):
    """--confidence 0.9: the simulated run's Weibull-shape assumption is stated
    at 90 % (it said 95 % whatever the level), and its 90 % interval lies
    inside the 95 % one (a narrower two-sided level, same fit)."""
    import re

    from report_stores import synthetic_store

    from relkit import answers
    from relkit.store import Store

    db = synthetic_store(tmp_path / "s.duckdb")
    with Store(db, read_only=True) as store:
        goodput = answers.run_goodput(
            store.table("checkpoints"), store.table("jobs"), store.table("job_nodes")
        )
    texts = {}
    for level in (0.9, 0.95):
        row = answers.decide_checkpoints(goodput, confidence=level).row(0, named=True)
        texts[level] = next(t for t in row["assumptions"] if "Weibull shape of" in t)
    assert "at 90%" in texts[0.9]
    assert "at 95%" in texts[0.95]
    pattern = r"\[([\d.]+), ([\d.]+)\]"
    low90, high90 = map(float, re.search(pattern, texts[0.9]).groups())
    low95, high95 = map(float, re.search(pattern, texts[0.95]).groups())
    assert low95 < low90
    assert high90 < high95


def test_scale_sweep_leaves_hopeless_sizes_empty():
    """0.5 failures per node-day, 8 GPUs per node: at 65,536 GPUs (8,192
    nodes) λ = 8192 × 0.5 / 24 = 170.7 per hour, and the first-order load
    λ(u0 + Δt/2) with u0 = 10 min is already 28 > 1: no interval works, so
    interval_h and ETTR are null (they were 0). At 1,024 GPUs (load 0.61 < 1)
    the values are checkpoint.whatif's, computed here."""
    from relkit import checkpoint
    from relkit._report_scale import ettr_sweep

    sweep = ettr_sweep(0.5, 0.4, 0.6, cost_h=1 / 12, restart_h=1 / 6, gpus_per_node=8)
    big = sweep.filter(pl.col("gpus") == 65_536).row(0, named=True)
    assert big["interval_h"] is None
    assert big["expected_ettr"] is None
    assert big["first_order_load"] > 1
    want = checkpoint.whatif(
        gpus=[1024],
        failures_per_node_day=0.5,
        restart_h=1 / 6,
        cost_h=1 / 12,
        gpus_per_node=8,
    ).row(0, named=True)
    small = sweep.filter(pl.col("gpus") == 1024).row(0, named=True)
    assert small["interval_h"] == want["interval_h"]
    assert small["expected_ettr"] == want["expected_ettr"]


def test_mcf_chart_legend_in_natural_order():
    """Systems 1, 2, 10 (integers, as LANL's): the legend reads 1, 2, 10, not
    the text order 1, 10, 2."""
    from relkit import charts

    mcf = pl.DataFrame(
        {
            "system": [10, 10, 2, 2, 1, 1],
            "time_h": [1.0, 2.0] * 3,
            "mcf": [0.1, 0.2] * 3,
            "lower": [0.05, 0.1] * 3,
            "upper": [0.2, 0.4] * 3,
        }
    )
    spec = charts.mcf_chart(mcf, color="system", title="MCF").to_dict()
    sorts = [
        layer["encoding"]["color"]["sort"]
        for layer in spec["layer"]
        if "color" in layer.get("encoding", {})
    ]
    assert sorts
    assert all(s == ["1", "2", "10"] for s in sorts)


def test_kernel_cases_few_failures_per_mode_and_trend_note(tmp_path):
    """Cases C01, C03, C05 ingested as the reviewer did (host node01,
    reference date 2025-03-10): 6 counted failures over 4 modes, none with 5
    (hand count of tables/survival_by_mode_all_models.csv: at most 2 per
    mode), so no lifetime model is shown or drawn and the page says why; the
    note that the trend tests leave out failures at a window's start stands
    with the trend table, before the MTBF per quarter (which counts them)."""
    from report_stores import context
    from shared_paths import SHARED

    from relkit import charts
    from relkit._report_survival import survival_sections
    from relkit.ingest import read_file
    from relkit.store import Store

    db = tmp_path / "kern.duckdb"
    with Store(db) as store:
        for case in (
            "C01-xid-line-variants",
            "C03-xid-storm-dedup",
            "C05-roce-ib-link-flap",
        ):
            read_file(
                store,
                SHARED / "cases" / f"{case}.log",
                kind="kernel",
                tz="UTC",
                reference_date="2025-03-10",
                host="node01",
            )
    with Store(db, read_only=True) as store:
        ctx, _ = context(store)
        with charts.enable_theme():
            sections = dict(survival_sections(ctx))
    per_mode = sections["Survival and hazard per failure mode"]
    assert "No failure mode has 5 failures or more" in per_mode
    assert "mode-hazard" not in per_mode
    trend = sections["Trends: is the failure rate falling?"]
    note = trend.find("at the start of a window")
    assert 0 < note < trend.find("MTBF per calendar quarter")


def test_heatmap_time_axis_names_the_month():
    """Incidents over 3 weeks (daily bins): the axis format carries the month
    ("%b %d", e.g. "Mar 07"), not the weekday alone ("Thu 07")."""
    from datetime import UTC, datetime, timedelta

    from relkit import charts

    t = datetime(2025, 3, 1, tzinfo=UTC)
    incidents = pl.DataFrame(
        {"host": ["n2", "n10", "n2"], "start_ts": [t, t, t + timedelta(days=21)]}
    )
    spec = charts.incident_heatmap_chart(incidents).to_dict()
    x = spec["encoding"]["x"]
    assert x["axis"]["format"] == "%b %d"
    assert x["scale"]["type"] == "utc"


def test_output_directory_checked_before_any_work(tmp_path):
    """A file where tables/ goes, a directory where report.html goes, and an
    out path under a file: each refused with one line naming the path (they
    were raw [Errno 17], [Errno 21], [Errno 20] after the whole computation)."""
    import pytest

    from relkit.errors import RelkitError
    from relkit.report import check_out_dir

    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "tables").write_text("")
    with pytest.raises(RelkitError, match="tables is a file"):
        check_out_dir(tmp_path / "a")
    (tmp_path / "b" / "report.html").mkdir(parents=True)
    with pytest.raises(RelkitError, match=r"report\.html is a directory"):
        check_out_dir(tmp_path / "b")
    (tmp_path / "f").write_text("")
    with pytest.raises(RelkitError, match=r"not a directory|cannot create"):
        check_out_dir(tmp_path / "f" / "out")
    check_out_dir(tmp_path / "fine")
    assert (tmp_path / "fine").is_dir()


def test_plain_message_drops_function_names_and_links():
    """The reviewer's texts: 'hazard_chart: no row has…' and
    'cumulative_incidence_by: none of…' lose the function name; a lifelines
    convergence message with a URL becomes one sentence without the URL."""
    from relkit._report_common import plain_message

    assert plain_message("hazard_chart: no row has a finite hazard") == (
        "No row has a finite hazard"
    )
    assert plain_message("cumulative_incidence_by: none of the 4 node(s)").startswith(
        "None of the 4"
    )
    said = plain_message(
        "Fitting did not converge. Please see "
        "https://lifelines.readthedocs.io/en/latest/Examples.html#problems"
    )
    assert "http" not in said
    assert "converge" in said


def test_small_hours_and_near_whole_percents():
    """Hand: 0.0178 h × 60 = 1.068 min → "1.07 min"; 0.00277778 h × 3600 =
    10 s; availability 0.9997 is 99.97 %, not "100.0 %"; 0.97215 stays
    "97.2 %"; exactly 1.0 is "100.0 %"."""
    from relkit._html import format_value

    assert format_value(0.0178, "wall_h") == "1.07 min"
    assert format_value(0.00277778, "cost_h") == "10 s"
    assert format_value(0.9997, "availability_frac") == "99.97 %"
    assert format_value(0.97215, "ettr_frac") == "97.2 %"
    assert format_value(1.0, "availability_frac") == "100.0 %"


def test_table_html_says_constant_columns_once():
    """A quarter table shaped like mtbf_by_quarter (3 rows, confidence 0.95,
    unit node and n_excluded 0 in every row): those 3 columns leave the table
    (7 columns → 4) and are said once above it; a column whose values differ
    stays."""
    import re

    from relkit._html import table_html

    frame = pl.DataFrame(
        {
            "period_start": ["2025-01", "2025-04", "2025-07"],
            "n_failures": [4, 2, 1],
            "mtbf_h": [549.0, 1132.0, 900.0],
            "confidence": [0.95] * 3,
            "unit": ["node"] * 3,
            "n_excluded": [0] * 3,
            "n_folded": [0, 1, 0],
        }
    )
    out = table_html(frame)
    header = re.search(r"<thead>.*?</thead>", out, re.S).group(0)
    assert header.count("</th>") == 4
    assert "In every row: confidence 0.95, unit node, n_excluded 0." in out


def test_pareto_count_axis_has_whole_ticks():
    """Counts 2 and 1: the count axis steps by at least 1 (no 0.5 ticks)."""
    from relkit import charts

    spec = charts.interruption_pareto_chart(
        pl.DataFrame({"cause": ["a", "b"], "interruptions": [2, 1]}), title="P"
    ).to_dict()
    axes = [
        layer["encoding"]["y"].get("axis", {})
        for layer in spec.get("layer", [spec])
        if layer.get("encoding", {}).get("y", {}).get("field") == "interruptions"
    ]
    assert axes
    assert axes[0]["tickMinStep"] == 1
