"""The offline HTML report and the demo: the main job end to end.

:func:`write_report` reads the store, runs the analyses through
:mod:`relkit.answers`, and writes ``report.html`` (charts drawn by Vega libraries
inlined in the page, so it opens with no network) plus ``tables/*.csv``.
"""

import html
from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import polars as pl

from relkit import _html, answers, charts, checkpoint, survival
from relkit._report_common import ReportAssumptions
from relkit.errors import InsufficientDataError
from relkit.observation import observe
from relkit.store import Store
from relkit.taxonomy import unknown_xid_note

__all__ = ["ReportAssumptions", "run_demo", "write_report"]

Progress = Callable[[str], None]


def _quiet(_: str) -> None:
    return None


def _top_systems(by_system: pl.DataFrame, n: int) -> list[str]:
    """Return the ``n`` systems with most failures (ties by id), from an MTBF frame."""
    ranked = by_system.sort(["n_failures", "system"], descending=[True, False])
    return ranked.head(n)["system"].to_list()


def _natural_sort(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Sort ids that look numeric as numbers (2 before 10), then the rest as text."""
    return frame.sort(
        pl.col(column).str.to_integer(strict=False), pl.col(column), nulls_last=True
    )


def _checkpoint_section(
    store_tables: dict[str, pl.DataFrame],
    a: ReportAssumptions,
    tables: dict[str, pl.DataFrame],
) -> tuple[str, str]:
    """Checkpoint plans per system and the ETTR curve of the largest system."""
    intro = (
        f"<p>Assumed checkpoint write {a.cost_h * 60:.0f} min and restart "
        f"{a.restart_h * 60:.0f} min. A job spanning a whole system is interrupted "
        "by any node's failure, and once by an outage of many nodes at one "
        "instant, so its MTBF is the system's calendar time over its outages "
        "(Young 1974, doi:10.1145/361147.361115; Daly 2006, "
        "doi:10.1016/j.future.2004.11.016).</p>"
    )
    plan = answers.checkpoint_plan_by_system(
        **store_tables, cost_h=a.cost_h, restart_h=a.restart_h, min_failures=1
    )
    large = plan.filter(pl.col("n_failures") >= a.min_failures)
    shown = large if large.height else plan
    tables["checkpoint_plan"] = shown
    if shown.height == 0:
        return (
            "Checkpoint interval",
            intro + "<p>No system has a recorded failure, "
            "so no interval can be derived from the data.</p>",
        )
    note = (
        f"<p>Systems with at least {a.min_failures} failures.</p>"
        if large.height
        else f"<p>No system has {a.min_failures} failures; every system with a "
        "failure is shown, with wide uncertainty.</p>"
    )
    biggest = shown.sort(["n_nodes", "system"], descending=[True, False]).row(
        0, named=True
    )
    rate = 24.0 / biggest["node_mtbf_h"]
    model = checkpoint.ettr_model(
        n_nodes=biggest["n_nodes"],
        failures_per_node_day=rate,
        restart_h=a.restart_h,
        interval_h=1.0,
        cost_h=a.cost_h,
    )
    curve = checkpoint.ettr_curve(
        n_nodes=biggest["n_nodes"],
        failures_per_node_day=rate,
        restart_h=a.restart_h,
        cost_h=a.cost_h,
    )
    tables["ettr_curve"] = curve
    if not model.optimal_interval_h > 0:
        return (
            "Checkpoint interval",
            intro
            + note
            + _html.table_html(shown)
            + f"<p>System {biggest['system']} ({biggest['n_nodes']} nodes, "
            f"{rate * 1000:.2f} failures per 1000 node-days): a job spanning it "
            f"fails every {model.mttf_h * 60:.1f} min, which leaves no time for "
            f"a {a.cost_h * 60:.0f} min checkpoint and a "
            f"{a.restart_h * 60:.0f} min restart, so no interval makes progress "
            "(ETTR 0; no curve is drawn). Such a rate usually means the data "
            "span too short a time for its failures (a log excerpt): ingest the "
            "whole logs, or an assets table with the units' service windows, "
            "and check exposure_h in relkit mtbf.</p>",
        )
    return (
        "Checkpoint interval",
        intro
        + note
        + _html.table_html(shown)
        + f"<p>System {biggest['system']} ({biggest['n_nodes']} nodes, "
        f"{rate * 1000:.2f} failures per 1000 node-days): expected ETTR "
        f"{model.ettr_at_optimal:.3f} at the optimal interval "
        f"{model.optimal_interval_h * 60:.1f} min (Kokolis et al., HPCA 2025, "
        "arXiv:2410.21680).</p>"
        + _html.chart_div(
            charts.ettr_chart(
                curve, optimum_interval_h=model.optimal_interval_h
            ).to_dict(),
            "ettr",
        ),
    )


def _hours(value: float | None) -> str:
    """Hours as the report prints them: 3 significant digits below 100 h."""
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def _fleet_mtbf_sentence(overall: dict[str, Any], confidence: float) -> str:
    """Say the fleet's MTBF in words, also when it cannot be estimated."""
    n, hours = overall["n_failures"], overall["exposure_h"] or 0.0
    head = f"{n:,} failures in {_hours(hours)} node-hours; "
    if hours <= 0:
        return head + (
            "no measurable time at risk (each unit was observed at a single "
            "instant, e.g. one timed log line per host), so no MTBF can be "
            "estimated: ingest the whole logs, or an assets table with the "
            "units' service windows."
        )
    if hours < 24:  # as relkit mtbf's --min-exposure-h default
        head += f"only {_hours(hours)} node-hours at risk, so the rate says little; "
    if n == 0:
        lower = overall.get("mtbf_lower_one_sided_h")
        return head + (
            f"no failure, so the MTBF is only bounded below: at least "
            f"{_hours(lower)} h at {confidence:.0%} confidence."
        )
    return head + (
        f"node MTBF {_hours(overall['mtbf_h'])} h ({confidence:.0%} bounds "
        f"{_hours(overall['mtbf_lower_h'])}–{_hours(overall['mtbf_upper_h'])} h), "
        f"{overall['failures_per_1000_node_days']:.2f} failures per 1000 "
        "node-days."
    )


def write_report(
    store: Store,
    out_dir: Path,
    *,
    assumptions: ReportAssumptions | None = None,
    progress: Progress = _quiet,
) -> Path:
    """Write ``report.html`` and ``tables/*.csv`` for the data in a store.

    Parameters
    ----------
    store : Store
        An open store with ``events`` and ``assets`` rows.
    out_dir : Path
        Output directory, created if missing.
    assumptions : ReportAssumptions, optional
        Confidence level and checkpoint/restart costs; defaults as documented there.
    progress : callable, optional
        Called with a short message before each long step.

    Returns
    -------
    Path
        The written ``report.html``.

    Raises
    ------
    InsufficientDataError
        If the store holds no events or assets.
    """
    a = assumptions or ReportAssumptions()
    with charts.enable_theme():  # restores the caller's Altair theme afterwards
        return _write_report(store, Path(out_dir), a, progress)


def _write_report(
    store: Store, out_dir: Path, a: ReportAssumptions, progress: Progress
) -> Path:
    out_dir = Path(out_dir)
    tables_dir = out_dir / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    st = answers.store_tables(store)
    events, assets, sources = st["events"], st["assets"], st["sources"]
    rejects = store.table("rejects")
    obs = observe(**st)
    end = obs.observed_until
    no_wall = answers.no_wall_time_note(events)
    if no_wall is not None:
        progress(f"warning: {no_wall}")
    unknown_xid = unknown_xid_note(events)
    if unknown_xid is not None:
        progress(f"warning: {unknown_xid}")
    sections: list[tuple[str, str]] = []
    tables: dict[str, pl.DataFrame] = {}

    progress("MTBF by system and by root cause")
    by_system = _natural_sort(
        answers.mtbf_of(obs, by=["system"], confidence=a.confidence, unit="node"),
        "system",
    )
    by_cause = answers.mtbf_of(
        obs, by=["root_cause"], confidence=a.confidence, unit="node"
    )
    tables |= {"mtbf_by_system": by_system, "mtbf_by_root_cause": by_cause}
    overall = answers.mtbf_of(obs, confidence=a.confidence, unit="node").row(
        0, named=True
    )
    excluded = obs.excluded
    if excluded.height:
        tables["excluded_failures"] = excluded
        reasons = (
            excluded.with_columns(pl.col("reason").str.replace(r" \(.*\)$", ""))
            .group_by("reason")
            .agg(n=pl.len())
            .sort("n", "reason", descending=[True, False])
        )
        excluded_note = (
            f" {excluded.height:,} failure(s) fall in no service window of their "
            "unit and are excluded: "
            + "; ".join(
                f"{r['n']:,} {r['reason']}" for r in reasons.iter_rows(named=True)
            )
            + " (tables/excluded_failures.csv)."
        )
    else:
        excluded_note = " No failure falls outside its unit's service windows."

    sections.append(
        (
            "Data",
            _html.table_html(sources.drop("content_hash", "options"))
            + f"<p>{events.height:,} events, counted as {overall['n_failures']:,} "
            "failures (log lines folded into incidents); "
            f"{assets.height:,} assets rows, exposure basis: "
            f"{overall['exposure_basis']}; {rejects.height:,} rejected input lines. "
            f"Observation ends {end}.{excluded_note}</p>"
            + "".join(
                f"<p>Note: {n}.</p>"
                for n in [*obs.notes, *(x for x in (no_wall, unknown_xid) if x)]
            ),
        )
    )
    sections.append(
        (
            "MTBF by system",
            f"<p>Whole fleet: {_fleet_mtbf_sentence(overall, a.confidence)}</p>"
            + _html.chart_div(
                charts.mtbf_chart(by_system, group="system").to_dict(), "mtbf-system"
            )
            + _html.table_html(by_system),
        )
    )
    sections.append(
        (
            "MTBF by root cause",
            _html.chart_div(
                charts.mtbf_chart(by_cause, group="root_cause").to_dict(), "mtbf-cause"
            )
            + _html.table_html(by_cause),
        )
    )

    progress("fitting lifetime models to the time between failures")
    top = _top_systems(by_system, a.top_systems)
    fits = _natural_sort(answers.survival_by(**st, by=["system"]), "system")
    tables["survival_by_system"] = fits
    largest = answers.time_between_failures(**st, by=["system"]).filter(
        pl.col("system") == top[0]
    )
    models = survival.fit_lifetime_models(largest, by=["system"])
    density = survival.model_density(largest, models, by=["system"], spacing="log")
    try:
        tbf_chart = _html.chart_div(
            charts.tbf_histogram_chart(
                largest,
                density,
                binning="log",
                title=f"System {top[0]}: time between failures",
            ).to_dict(),
            "tbf-hist",
        )
    except InsufficientDataError:
        n_gaps = int(largest["observed"].sum()) if largest.height else 0
        tbf_chart = (
            f"<p>System {top[0]} has no gap between two failures in the data "
            f"({largest.height} interval(s), {n_gaps} observed), so there is no "
            "histogram and no model to draw.</p>"
        )
        progress(f"warning: system {top[0]}: no observed time between failures")
    sections.append(
        (
            "Time between failures (system-wide)",
            "<p>Gaps between consecutive outages anywhere in a system (failures of "
            "many nodes within 60 s are one outage), fitted with "
            f"{len(survival.DEFAULT_MODELS)} lifetime models and ranked by AIC. "
            "A Weibull shape below 1 is a decreasing hazard: failures cluster "
            "(Schroeder &amp; Gibson, DSN 2006, "
            "doi:10.1109/DSN.2006.5).</p>" + _html.table_html(fits) + tbf_chart,
        )
    )

    progress("Kaplan-Meier of time to first failure per node")
    try:
        km = answers.first_failure_survival(**st, systems=top)
        tables["km_first_failure"] = km
        km_body = _html.chart_div(
            charts.kaplan_meier_chart(km, color="system").to_dict(), "km-first"
        )
    except InsufficientDataError as exc:
        progress(f"warning: {exc}")
        km_body = f"<p>No curve: {html.escape(str(exc))}</p>"
    sections.append(
        (
            "Time to first failure per node (Kaplan-Meier)",
            "<p>Nodes already in service when tracking began enter late (left "
            "truncation); nodes that never failed are censored at decommission or "
            "the end of the data.</p>" + km_body,
        )
    )

    from relkit._report_survival import survival_sections

    sections.extend(survival_sections(st, obs, tables, progress=progress))

    progress("checkpoint intervals for a job spanning each system")
    sections.append(_checkpoint_section(st, a, tables))
    from relkit._report_goodput import goodput_section

    measured = goodput_section(
        store, tables, confidence=a.confidence, progress=progress
    )
    if measured is not None:
        sections.append(measured)

    for name, frame in tables.items():
        frame.write_csv(tables_dir / f"{name}.csv")
    sections.append(("Assumptions", _html.table_html(pl.DataFrame([asdict(a)]))))
    page = out_dir / "report.html"
    page.write_text(
        _html.render_page("relkit reliability report", sections), encoding="utf-8"
    )
    return page


def run_demo(out_dir: Path, *, progress: Progress = _quiet) -> dict[str, Any]:
    """Ingest the bundled LANL failure data and write the report.

    Parameters
    ----------
    out_dir : Path
        Output directory: ``relkit.duckdb``, ``report.html`` and ``tables/``.
    progress : callable, optional
        Called with a short message before each long step.

    Returns
    -------
    dict
        Summary: LANL records read, loaded, rejected, systems, fleet MTBF (h);
        the GPU kernel-log excerpts' lines and incidents per failure mode
        (``tables/gpu_incidents_by_mode.csv``); the report's path; and a
        simulated Llama 3-like run's interruptions by cause
        (``tables/interruptions_by_cause.csv``, see ``relkit._demo_jobs``).
    """
    from relkit import datasets
    from relkit.ingest import read_file, read_path

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    for old in ("relkit.duckdb", "gpu-logs.duckdb", "jobs.duckdb"):  # start afresh
        for leftover in (out_dir / old, out_dir / f"{old}.wal"):
            leftover.unlink(missing_ok=True)
    with Store(out_dir / "relkit.duckdb") as store:
        progress("ingesting the LANL failure data (23,739 records)")
        read_file(store, datasets.path("lanl"), kind="lanl")
        page = write_report(store, out_dir, progress=progress)
        st = answers.store_tables(store)
        events = st["events"]
        sources = st["sources"].filter(pl.col("kind") == "lanl").row(0, named=True)
        overall = answers.mtbf_by(**st).row(0, named=True)
    progress("ingesting NVIDIA kernel-log excerpts (gpud fixtures; times read as UTC)")
    with Store(out_dir / "gpu-logs.duckdb") as gpu_store:
        logs = read_path(
            gpu_store,
            datasets.path("gpud"),
            kind="kernel",
            tz="UTC",
            host_from_filename=True,
        )
        incidents = answers.incident_table(
            gpu_store.table("events"),
            end_of_log=answers.log_end(gpu_store.table("sources")),
        )
    by_mode = (
        incidents.group_by("failure_mode", "category")
        .agg(n_incidents=pl.len(), n_events=pl.col("n_events").sum())
        .sort("failure_mode")
    )
    by_mode.write_csv(out_dir / "tables" / "gpu_incidents_by_mode.csv")
    from relkit._demo_jobs import simulated_interruptions  # job logs (issue 5)

    jobs = simulated_interruptions(out_dir, progress)
    return {
        "dataset": "LANL failure data 1996-2005 (LA-UR-05-7318)",
        "records": sources["n_lines"],
        "loaded": sources["n_loaded"],
        "rejected": sources["n_rejected"],
        "systems": events["system"].n_unique(),
        "node_mtbf_h": overall["mtbf_h"],
        "failures_per_1000_node_days": overall["failures_per_1000_node_days"],
        "gpu_log_lines": sum(r.n_lines for r in logs),
        "gpu_incidents": ", ".join(
            f"{r['failure_mode']} ({r['category']}): {r['n_incidents']}"
            for r in by_mode.iter_rows(named=True)
        ),
        "report": str(page),
        **jobs,
    }
