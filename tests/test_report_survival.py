"""The report's sections on survival per failure mode (issue 12 §6, issue 14 §2),
on LANL and on a GPU kernel-log store (the bundled simulated run).

Values are the ones the library answers give on the same store (measured and
pinned in the library's own tests: tests/test_competing.py, tests/test_hazards.py,
tests/test_lemons.py, tests/test_repairable.py); this file checks that the
report shows them, with the section adapting to the data, and that a section
that cannot be computed says why instead of vanishing.
"""

from pathlib import Path

import polars as pl
import pytest
from report_stores import context, synthetic_store, synthetic_truth
from scipy import stats

from relkit import answers, charts, survival
from relkit._report_survival import MIN_FAILURES, survival_sections
from relkit.ingest import read_file
from relkit.store import Store

TITLES = [
    "Survival and hazard per root cause",
    "Competing risks: the first failure's mode",
    "Which groups fail sooner (covariates)",
    "Trends: is the failure rate falling?",
    "Lemon nodes",
]


@pytest.fixture(scope="module")
def lanl_report(lanl_db: Path):
    with Store(lanl_db, read_only=True) as store:
        ctx, said = context(store)
        with charts.enable_theme():
            sections = survival_sections(ctx)
    st = {k: v for k, v in ctx.st.items() if k in answers.STORE_TABLES}
    return st, sections, ctx.tables, said


def test_sections_and_their_tables(lanl_report):
    """LANL has 139 root/sub-cause pairs, so modes are grouped by root cause;
    every section is computed (no 'Not computed'), and its CSV tables exist."""
    _, sections, tables, said = lanl_report
    assert [t for t, _ in sections] == TITLES
    for title, body in sections:
        assert "Not computed" not in body, title
    assert not [m for m in said if m.startswith("warning:")]
    for name in (
        "survival_by_mode_all_models",
        "cumulative_incidence",
        "cumulative_incidence_by_system",
        "gray_test",
        "hazard_ratios",
        "hazard_checks",
        "trend",
        "mean_cumulative_function",
        "mtbf_by_quarter",
        "lemons",
    ):
        assert tables[name].height > 0, name


def test_per_mode_fits_rank_by_aic(lanl_report):
    """Per root cause, rank 1 is the lowest AIC among the interior-maximum fits,
    and the failures counted are the observed gaps of the survival table."""
    st, _, tables, _ = lanl_report
    fits = tables["survival_by_mode_all_models"]
    assert set(fits["root_cause"].to_list()) >= {"hardware", "software", "network"}
    for _, group in fits.group_by("root_cause"):
        ranked = group.filter(pl.col("rank").is_not_null())
        if ranked.height:
            best = ranked.filter(pl.col("rank") == 1)
            assert best["aic"][0] == pytest.approx(ranked["aic"].min(), rel=1e-12)
    table = answers.survival_table(**st, by=["root_cause"], unit="node")
    observed = table.group_by("root_cause").agg(n=pl.col("observed").sum())
    counts = fits.group_by("root_cause").agg(n=pl.col("n_failures").first())
    joined = observed.join(counts, on="root_cause", suffix="_fit")
    assert (joined["n"] == joined["n_fit"]).all()


def test_cumulative_incidence_is_the_library_answer(lanl_report):
    """Hardware's cumulative incidence of the first failure at the last age is
    0.6268 [0.6090, 0.6440] (tests/test_competing.py, LANL by root cause), and
    the modes at the last age add up to 1 - Kaplan-Meier of any first failure."""
    st, _, tables, _ = lanl_report
    cif = tables["cumulative_incidence"]
    last = cif.group_by("failure_mode").agg(pl.all().sort_by("time_h").last())
    hardware = last.filter(pl.col("failure_mode") == "hardware").row(0, named=True)
    assert hardware["cumulative_incidence"] == pytest.approx(0.6268, abs=5e-5)
    assert hardware["lower"] == pytest.approx(0.6090, abs=5e-5)
    assert hardware["upper"] == pytest.approx(0.6440, abs=5e-5)
    risks = answers.competing_risks_by(**st, mode_column="root_cause", min_events=20)
    km = survival.kaplan_meier(risks.table.drop("failure_mode"), max_rows=10**9).sort(
        "time_h"
    )
    total = last["cumulative_incidence"].sum()
    assert total == pytest.approx(1.0 - km["survival"][-1], abs=1e-9)


def test_hazard_ratios_and_lemons_shown(lanl_report):
    """System 10 against system 18: HR 0.347 (tests/test_hazards.py); 185 lemon
    nodes of 5,007 at q <= 0.05, the first s19-n1024 (tests/test_lemons.py)."""
    _, sections, tables, _ = lanl_report
    hr = tables["hazard_ratios"].filter(
        (pl.col("covariate") == "system") & (pl.col("level") == "10")
    )
    assert hr["reference"][0] == "18"
    assert hr["hazard_ratio"][0] == pytest.approx(0.347, abs=5e-4)
    lemons = tables["lemons"]
    assert (lemons.height, int(lemons["lemon"].sum())) == (5007, 185)
    assert lemons["host"][0] == "s19-n1024"
    body = dict(sections)["Lemon nodes"]
    assert "5,007 nodes tested" in body
    assert "185 have improbably many" in body


def test_trend_table_says_system_2_is_improving(lanl_report):
    """System 2's failure rate falls with age: Crow-AMSAA beta 0.828 and both
    tests 'improving' (tests/test_repairable.py, LANL measured trends)."""
    _, _, tables, _ = lanl_report
    row = (
        tables["trend"]
        .filter(pl.col("system").cast(pl.String) == "2")
        .row(0, named=True)
    )
    assert row["beta"] == pytest.approx(0.828, abs=5e-4)
    assert row["laplace_direction"] == row["mil_hdbk_189_direction"] == "improving"


def test_a_section_that_cannot_be_computed_says_why(tmp_path):
    """Five failures of three hosts from a normalised events file, no assets:
    no install dates (no age at first failure: competing risks say why, on the
    page and the progress channel), no attribute to compare, and n3's failure at
    the last instant of the logs (no time at risk) is named in the lemon notes."""
    csv = tmp_path / "events.csv"
    csv.write_text(
        "ts,host,failure_mode\n"
        "2024-01-02T00:00:00Z,n1,hardware/cpu\n"
        "2024-01-05T00:00:00Z,n1,hardware/cpu\n"
        "2024-01-09T00:00:00Z,n2,software/os\n"
        "2024-01-12T00:00:00Z,n2,hardware/cpu\n"
        "2024-01-20T00:00:00Z,n3,software/os\n",
        encoding="utf-8",
    )
    with Store(tmp_path / "s.duckdb") as store:
        read_file(store, csv, kind="events")
        ctx, said = context(store)
        with charts.enable_theme():
            sections = dict(survival_sections(ctx))
    tables = ctx.tables
    assert len(sections) == 5
    competing = sections["Competing risks: the first failure's mode"]
    assert competing.startswith("<p>Not computed:")
    assert "install date" in competing
    assert any(m.startswith("warning: Competing risks") for m in said)
    assert "nothing to compare" in sections["Which groups fail sooner (covariates)"]
    assert "no time at risk" in sections["Lemon nodes"]
    assert "cumulative_incidence" not in tables


@pytest.fixture(scope="module")
def gpu_report(tmp_path_factory: pytest.TempPathFactory):
    db = synthetic_store(tmp_path_factory.mktemp("gpu") / "s.duckdb")
    with Store(db, read_only=True) as store:
        ctx, said = context(store)
        with charts.enable_theme():
            sections = survival_sections(ctx)
    return ctx, sections, said


def test_gpu_store_per_failure_mode(gpu_report):
    """A GPU kernel-log store has a dozen modes, so they are kept as
    failure_mode (not root_cause); every section is computed, its charts are
    placed with titles, and the per-mode counts are the observed gaps of the
    survival table per failure_mode."""
    ctx, sections, said = gpu_report
    assert [t for t, _ in sections] == [
        "Survival and hazard per failure mode",
        *TITLES[1:],
    ]
    for title, body in sections:
        assert "Not computed" not in body, title
    assert not [m for m in said if m.startswith("warning:")]
    specs = dict(ctx.charts)
    assert set(specs) == {"mode-hazard", "mode-km", "cif", "forest", "mcf", "lemons"}
    assert all(spec.get("title") for spec in specs.values())
    st = {k: v for k, v in ctx.st.items() if k in answers.STORE_TABLES}
    fits = ctx.tables["survival_by_mode_all_models"]
    assert fits["failure_mode"].str.starts_with("gpu/").any()
    table = answers.survival_table(**st, by=["failure_mode"], unit="node")
    observed = table.group_by("failure_mode").agg(n=pl.col("observed").sum())
    counts = fits.group_by("failure_mode").agg(n_fit=pl.col("n_failures").first())
    joined = observed.join(counts, on="failure_mode")
    assert joined.height > 3
    assert (joined["n"] == joined["n_fit"]).all()


def test_gpu_store_cumulative_incidence_adds_up(gpu_report):
    """The modes' cumulative incidences at the last age add up to one minus
    the Kaplan-Meier of any first failure (lifelines-backed
    survival.kaplan_meier on the same first-failure table)."""
    ctx, _, _ = gpu_report
    st = {k: v for k, v in ctx.st.items() if k in answers.STORE_TABLES}
    cif = ctx.tables["cumulative_incidence"]
    last = cif.group_by("failure_mode").agg(pl.all().sort_by("time_h").last())
    n_modes = cif["failure_mode"].n_unique()
    risks = answers.competing_risks_by(
        **st, mode_column="failure_mode", min_events=20 if n_modes > 10 else 0
    )
    km = survival.kaplan_meier(risks.table.drop("failure_mode"), max_rows=10**9).sort(
        "time_h"
    )
    assert last["cumulative_incidence"].sum() == pytest.approx(
        1.0 - km["survival"][-1], abs=1e-9
    )


def test_gpu_store_lemons_match_the_truth(gpu_report):
    """The simulated run injected no lemon host (ground_truth.json: lemon_hosts
    is empty) and none is flagged at FDR 5 %; all 264 nodes are tested, and the
    top node's p-value is the Poisson upper tail P(X >= n | expected) from
    scipy.stats.poisson."""
    ctx, _, _ = gpu_report
    assert synthetic_truth()["fleet"]["lemon_hosts"] == []
    lemons = ctx.tables["lemons"]
    assert lemons.height == 264
    assert not lemons["lemon"].any()
    top = lemons.row(0, named=True)
    tail = stats.poisson.sf(top["n_failures"] - 1, top["expected"])
    assert top["p_value"] == pytest.approx(tail, rel=1e-9)
    assert top["p_value"] == lemons["p_value"].min()


def test_too_few_failures_leave_the_sections_out(tmp_path):
    """Two failures are fewer than MIN_FAILURES (3): the reason line."""
    csv = tmp_path / "events.csv"
    csv.write_text(
        "ts,host,failure_mode\n"
        "2024-01-02T00:00:00Z,n1,hardware/cpu\n"
        "2024-01-09T00:00:00Z,n2,software/os\n",
        encoding="utf-8",
    )
    with Store(tmp_path / "s.duckdb") as store:
        read_file(store, csv, kind="events")
        ctx, _ = context(store)
        reason = survival_sections(ctx)
    assert MIN_FAILURES == 3
    assert isinstance(reason, str)
    assert reason.startswith("only 2 failure(s) counted")
    assert ctx.tables == {}
