"""The report's failure sections: MTBF by mode, incidents, Xid codes, heatmap (private).

Used by :mod:`relkit.report` through the contract of
:mod:`relkit._report_common`: :func:`failures_sections` takes the context and
returns its sections, or the one line saying why there are none;
:func:`system_sections` does the same for the per-system sections of
LANL-shaped data (MTBF by system, time between outages, time to first
failure, checkpoint plan per system).
"""

import html
from typing import Any

import polars as pl

from relkit import _html, answers, charts, checkpoint, survival
from relkit._report_common import ReportContext, Sections, counting_rule
from relkit.errors import InsufficientDataError, RelkitError
from relkit.taxonomy import XID_CATALOGUE

__all__ = [
    "JOB_TABLES",
    "XID_CODE",
    "answer_tables",
    "failures_sections",
    "fleet_mtbf_sentence",
    "hours_text",
    "incidents_of",
    "lanl_shaped",
    "mode_column",
    "system_sections",
]

#: More failure modes than this are grouped by their root cause (LANL's 139).
_MAX_MODES = 20
#: Hosts drawn one per row of the heatmap; above it, racks (or systems).
_MAX_HOSTS = 60
#: Tables the report reads besides :func:`relkit.answers.store_tables`.
JOB_TABLES = ("jobs", "job_nodes", "checkpoints")
#: An Xid code as the kernel reader stores it: the number as text (SXid
#: codes are ``sxid:N``, link and memory codes other words).
XID_CODE = r"^\d+$"


def mode_column(events: pl.DataFrame) -> str:
    """``failure_mode``, or ``root_cause`` when there are too many modes to read.

    LANL's records name 139 "root/sub-cause" pairs, its six root causes are
    the readable grouping; a GPU fleet's dozen or so modes stay as they are.
    """
    many = events["failure_mode"].drop_nulls().n_unique() > _MAX_MODES
    return "root_cause" if many and "root_cause" in events.columns else "failure_mode"


def hours_text(value: float | None) -> str:
    """Print hours as the report does: whole from 100 h, else 3 significant digits."""
    if value is None:
        return "n/a"
    return f"{value:,.0f}" if value >= 100 else f"{value:.3g}"


def fleet_mtbf_sentence(overall: dict[str, Any], confidence: float) -> str:
    """Say the fleet's MTBF in words, also when it cannot be estimated."""
    n, hours = overall["n_failures"], overall["exposure_h"] or 0.0
    head = f"{n:,} failures in {hours_text(hours)} node-hours; "
    if hours <= 0:
        return head + (
            "no measurable time at risk (each unit was observed at a single "
            "instant, e.g. one timed log line per host), so no MTBF can be "
            "estimated: ingest the whole logs, or an assets table with the "
            "units' service windows."
        )
    if hours < 24:  # as relkit mtbf's --min-exposure-h default
        head += (
            f"only {hours_text(hours)} node-hours at risk, so the rate says little; "
        )
    if n == 0:
        lower = overall.get("mtbf_lower_one_sided_h")
        return head + (
            f"no failure, so the MTBF is only bounded below: at least "
            f"{hours_text(lower)} h at {confidence:.0%} confidence."
        )
    low, high = hours_text(overall["mtbf_lower_h"]), hours_text(overall["mtbf_upper_h"])
    return head + (
        f"node MTBF {hours_text(overall['mtbf_h'])} h ({confidence:.0%} bounds "
        f"{low}–{high} h), "
        f"{overall['failures_per_1000_node_days']:.2f} failures per 1000 "
        "node-days."
    )


def incidents_of(ctx: ReportContext) -> pl.DataFrame:
    """Fold the store's events into incidents, once per report.

    Cached in ``ctx.tables["incidents"]`` (written as ``tables/incidents.csv``).
    """
    if "incidents" not in ctx.tables:
        st = ctx.st
        ctx.tables["incidents"] = answers.incident_table(
            st["events"],
            end_of_log=answers.log_end(st["sources"]),
            failure_modes=st.get("failure_modes"),
        )
    return ctx.tables["incidents"]


def _mtbf_by_mode(ctx: ReportContext) -> tuple[str, str]:
    a = ctx.assumptions
    col = mode_column(ctx.obs.failures)
    ctx.progress(f"MTBF by {col}")
    frame = answers.mtbf_of(ctx.obs, by=[col], confidence=a.confidence, unit="node")
    frame = frame.sort(["n_failures", col], descending=[True, False])
    ctx.tables["mtbf_by_mode"] = frame
    if col == "root_cause":
        ctx.tables["mtbf_by_root_cause"] = frame
    overall = answers.mtbf_of(ctx.obs, confidence=a.confidence, unit="node").row(
        0, named=True
    )
    ctx.tables["mtbf_fleet"] = pl.DataFrame([overall])
    by_system = answers.mtbf_of(
        ctx.obs, by=["system"], confidence=a.confidence, unit="node"
    )
    ctx.tables["mtbf_by_system"] = _html.natural_sort(by_system, "system")
    unit = frame["unit"][0] if frame.height else "node"
    shown = frame.select(
        col,
        "n_failures",
        "n_units",
        "exposure_h",
        "mtbf_h",
        "mtbf_lower_h",
        "mtbf_upper_h",
        "mtbf_lower_one_sided_h",
        "failures_per_1000_node_days",
        "n_excluded",
        "n_folded",
        "warning",
    )
    # the same in every row (the whole fleet's time at risk), or all zero: said
    # once in the text, not repeated in a column (tables/mtbf_by_mode.csv has all)
    same = [
        c
        for c in ("n_units", "exposure_h")
        if shown.height > 1 and shown[c].n_unique() == 1
    ]
    zero = [
        c for c in ("n_excluded", "n_folded") if not (shown[c].fill_null(0) != 0).any()
    ]
    shown = shown.drop(same, *zero)
    grouping = "root cause" if col == "root_cause" else "failure mode"
    body = (
        f"<p>Whole fleet: {fleet_mtbf_sentence(overall, a.confidence)}</p>"
        f"<p>Failures per {grouping} ("
        + html.escape(counting_rule(ctx.st["sources"], ctx.obs.window_min))
        + f"), over the {unit}-hours at risk of the whole fleet; MTBF with exact "
        f"chi-square bounds at {a.confidence:.0%} confidence (two-sided), and a "
        "one-sided lower bound where a mode has no failure (Epstein & Sobel "
        "1953, doi:10.1080/01621459.1953.10501194). Exposure basis: "
        f"{html.escape(ctx.obs.exposure_basis)}.</p>"
    )
    if frame.height == 0:
        return f"MTBF by {grouping}", body + "<p>No failure is counted.</p>"
    chart = charts.mtbf_chart(
        frame.head(40),
        group=col,
        confidence=a.confidence,
        title=f"MTBF by {grouping} ({unit}-hours per failure)",
    )
    return (
        f"MTBF by {grouping}",
        body + ctx.chart(chart, "mtbf-mode") + _html.table_html(shown),
    )


def _incidents_by_mode(ctx: ReportContext, incidents: pl.DataFrame) -> tuple[str, str]:
    events = ctx.st["events"]
    raw = events.group_by("failure_mode").agg(
        events=pl.len(), event_hosts=pl.col("host").n_unique()
    )
    folded = incidents.group_by("failure_mode").agg(
        category=pl.col("category").first(),
        counts_as_failure=pl.col("counts_as_failure").first(),
        incidents=pl.len(),
        hosts=pl.col("host").n_unique(),
        open_at_end=pl.col("is_open").sum(),
    )
    frame = (
        raw.join(folded, on="failure_mode", how="full", coalesce=True)
        .with_columns(
            pl.col("incidents").fill_null(0),
            pl.col("events").fill_null(0),
            hosts=pl.coalesce("hosts", "event_hosts"),
        )
        .select(
            "failure_mode",
            "category",
            "counts_as_failure",
            "events",
            "incidents",
            "hosts",
            "open_at_end",
        )
        .sort(["incidents", "events", "failure_mode"], descending=[True, True, False])
    )
    ctx.tables["incidents_by_mode"] = frame
    folded_away = frame.filter(pl.col("incidents") == 0, pl.col("events") > 0)
    note = (
        "<p>Modes with events but no incident of their own were folded into "
        "the incident they accompany (e.g. Xid 45, a channel clean-up after "
        "another Xid): " + html.escape(", ".join(folded_away["failure_mode"])) + ".</p>"
        if folded_away.height
        else ""
    )
    return (
        "Incidents by failure mode",
        f"<p>{events.height:,} events folded into {incidents.height:,} incidents: "
        "events of one host, device and mode less than 10 minutes apart are one "
        "incident; sympathetic codes join the incident they follow; link flaps "
        "within 5 minutes are one. <code>counts_as_failure</code> says whether "
        "the mode is counted in MTBF (informational and precursor modes are "
        "not).</p>" + note + _html.table_html(frame),
    )


def _xid_codes(ctx: ReportContext, incidents: pl.DataFrame) -> tuple[str, str] | None:
    events = ctx.st["events"].filter(
        pl.col("code").is_not_null() & pl.col("code").str.contains(XID_CODE)
    )
    if events.height == 0:
        return None
    by_code = events.group_by("code").agg(
        events=pl.len(),
        hosts=pl.col("host").n_unique(),
        failure_mode=pl.col("failure_mode").mode().first(),
    )
    roots = (
        incidents.filter(
            pl.col("root_code").is_not_null()
            & pl.col("root_code").cast(pl.String).str.contains(XID_CODE)
        )
        .group_by(pl.col("root_code").cast(pl.String).alias("code"))
        .agg(incidents=pl.len())
    )
    names = XID_CATALOGUE.select(
        pl.col("code").cast(pl.String), "name", "resolution_bucket"
    )
    frame = (
        by_code.join(roots, on="code", how="left")
        .join(names, on="code", how="left")
        .with_columns(
            pl.col("incidents").fill_null(0),
            pl.col("name").fill_null("(not in NVIDIA's catalogue)"),
            _n=pl.col("code").cast(pl.Int64),
        )
        .sort("_n")
        .select(
            pl.col("_n").alias("xid"),
            "name",
            "failure_mode",
            "events",
            "incidents",
            "hosts",
            "resolution_bucket",
        )
    )
    ctx.tables["xid_codes"] = frame
    return (
        "Xid codes",
        "<p>NVIDIA Xid codes in the kernel logs: name and resolution bucket "
        "from NVIDIA's Xid catalogue (relkit.taxonomy.XID_CATALOGUE), event "
        "lines, incidents whose root is the code (a code folded into another "
        "code's incident counts 0 here) and hosts that logged it.</p>"
        + _html.table_html(frame),
    )


def heatmap_unit(ctx: ReportContext, incidents: pl.DataFrame) -> str:
    """Row unit of the heatmap: host when few, else rack (assets) or system."""
    if incidents["host"].n_unique() <= _MAX_HOSTS:
        return "host"
    if "rack" in ctx.obs.attributes:
        return "rack"
    if "system" in incidents.columns and incidents["system"].n_unique() > 1:
        return "system"
    return "host"


def _heatmap(ctx: ReportContext, incidents: pl.DataFrame) -> tuple[str, str] | None:
    counted = incidents.filter(pl.col("counts_as_failure").fill_null(value=True))
    if counted.height == 0:
        return None
    unit = heatmap_unit(ctx, counted)
    if unit == "rack":
        racks = ctx.obs.windows.select("host", "rack").unique("host")
        counted = counted.join(racks, on="host", how="left").with_columns(
            pl.col("rack").fill_null("(no rack)")
        )
    try:
        chart = charts.incident_heatmap_chart(counted, unit=unit)
    except RelkitError as exc:
        ctx.progress(f"warning: no incident heatmap: {exc}")
        return "Incidents by host and time", f"<p>{html.escape(str(exc))}</p>"
    why = (
        f"{counted['host'].n_unique():,} hosts are too many rows to read, so "
        f"incidents are summed per {unit}. "
        if unit != "host"
        else ""
    )
    return (
        f"Incidents by {unit} and time",
        f"<p>Counted failures (incidents of modes that count) per {unit} and "
        f"time bin. {why}Beyond 60 rows, the {unit}s with fewest incidents "
        "fold into one row. A dark cell is a unit that failed repeatedly in a "
        "short time.</p>" + ctx.chart(chart, "incident-heatmap"),
    )


def failures_sections(ctx: ReportContext) -> Sections:
    """Build the failure sections: MTBF by mode, incidents, Xid codes, heatmap.

    Parameters
    ----------
    ctx : ReportContext
        The store's frames and the assumptions. Adds the CSV tables
        ``mtbf_by_mode``, ``incidents`` (one row per incident),
        ``incidents_by_mode`` and ``xid_codes``.

    Returns
    -------
    list of (str, str) or str
        The sections; or why there are none (no events in the store).
    """
    events = ctx.st["events"]
    if events.height == 0 and ctx.obs.windows.height == 0:
        return (
            "Failures: the store has no failure events (ingest kernel logs with "
            "--kind kernel, nvidia-smi snapshots with --kind nvsmi, or an events "
            "table with --kind events)."
        )
    if events.height and events["ts"].null_count() == events.height:
        return (
            "Failures: no event has a wall time (boot-relative kernel stamps "
            "only), so none can be placed in time; ingest with --reference-date "
            "or logs with dates."
        )
    sections = [_mtbf_by_mode(ctx)]
    if events.height == 0:  # time at risk but no failure signal: the bound only
        return sections
    ctx.progress("folding events into incidents")
    try:
        incidents = incidents_of(ctx)
    except RelkitError as exc:
        ctx.progress(f"warning: no incidents: {exc}")
        sections.append(
            ("Incidents by failure mode", f"<p>{html.escape(str(exc))}</p>")
        )
        return sections
    sections.append(_incidents_by_mode(ctx, incidents))
    for extra in (_xid_codes(ctx, incidents), _heatmap(ctx, incidents)):
        if extra is not None:
            sections.append(extra)
    return sections


def _top_systems(by_system: pl.DataFrame, n: int) -> list[str]:
    """Return the ``n`` systems with most failures (ties by id), from an MTBF frame."""
    ranked = by_system.sort(["n_failures", "system"], descending=[True, False])
    return ranked.head(n)["system"].to_list()


def answer_tables(st: dict[str, pl.DataFrame]) -> dict[str, pl.DataFrame]:
    """Keep the tables the ``answers`` functions take as keywords (no job tables)."""
    return {k: v for k, v in st.items() if k not in JOB_TABLES}


def _checkpoint_section(ctx: ReportContext) -> tuple[str, str]:
    """Checkpoint plans per system and the ETTR curve of the largest system."""
    a, tables = ctx.assumptions, ctx.tables
    intro = (
        f"<p>Assumed checkpoint write {a.cost_h * 60:.0f} min and restart "
        f"{a.restart_h * 60:.0f} min. A job spanning a whole system is interrupted "
        "by any node's failure, and once by an outage of many nodes at one "
        "instant, so its MTBF is the system's calendar time over its outages "
        "(Young 1974, doi:10.1145/361147.361115; Daly 2006, "
        "doi:10.1016/j.future.2004.11.016).</p>"
    )
    plan = answers.checkpoint_plan_by_system(
        **answer_tables(ctx.st), cost_h=a.cost_h, restart_h=a.restart_h, min_failures=1
    )
    large = plan.filter(pl.col("n_failures") >= a.min_failures)
    shown = _html.natural_sort(large if large.height else plan, "system")
    tables["checkpoint_plan"] = shown
    if shown.height == 0:
        return (
            "Checkpoint interval per system",
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
    head = (
        intro
        + note
        + _html.table_html(shown)
        + f"<p>System {html.escape(str(biggest['system']))} ({biggest['n_nodes']} "
        f"nodes, {rate * 1000:.2f} failures per 1000 node-days): "
    )
    if not model.optimal_interval_h > 0:
        return (
            "Checkpoint interval per system",
            head + f"a job spanning it fails every {model.mttf_h * 60:.1f} min, "
            f"which leaves no time for a {a.cost_h * 60:.0f} min checkpoint and a "
            f"{a.restart_h * 60:.0f} min restart, so no interval makes progress "
            "(ETTR 0; no curve is drawn). Such a rate usually means the data "
            "span too short a time for its failures (a log excerpt): ingest the "
            "whole logs, or an assets table with the units' service windows, "
            "and check exposure_h in relkit mtbf.</p>",
        )
    curve = checkpoint.ettr_curve(
        n_nodes=biggest["n_nodes"],
        failures_per_node_day=rate,
        restart_h=a.restart_h,
        cost_h=a.cost_h,
    )
    tables["ettr_curve"] = curve
    chart = charts.ettr_chart(
        curve,
        optimum_interval_h=model.optimal_interval_h,
        title=f"System {biggest['system']}: expected ETTR against checkpoint interval",
    )
    return (
        "Checkpoint interval per system",
        head + f"expected ETTR {model.ettr_at_optimal:.3f} at the optimal interval "
        f"{model.optimal_interval_h * 60:.1f} min (Kokolis et al., HPCA 2025, "
        "arXiv:2410.21680).</p>" + ctx.chart(chart, "ettr"),
    )


def lanl_shaped(ctx: ReportContext) -> bool:
    """Whether the data is LANL-shaped: LANL sources, or units named by system.

    Parameters
    ----------
    ctx : ReportContext
        The report's context.

    Returns
    -------
    bool
        True when a source is of kind ``lanl`` or the units carry more than
        one ``system`` (the per-system sections then have something to
        compare).
    """
    if (ctx.st["sources"]["kind"] == "lanl").any():
        return True
    windows = ctx.obs.windows
    return "system" in windows.columns and windows["system"].drop_nulls().n_unique() > 1


def system_sections(ctx: ReportContext) -> Sections:
    """Build the per-system sections of LANL-shaped data.

    MTBF by system, the time between system-wide outages of the system with
    most failures (lifetime models ranked by AIC, histogram), time to each
    node's first failure (Kaplan-Meier) and the checkpoint plan of a job
    spanning each system.

    Parameters
    ----------
    ctx : ReportContext
        The report's context; adds the CSV tables ``survival_by_system``,
        ``km_first_failure``, ``checkpoint_plan`` and ``ettr_curve``.

    Returns
    -------
    list of (str, str) or str
        The sections, or why they are left out (no system in the data).
    """
    if ctx.st["events"].height == 0 or not lanl_shaped(ctx):
        return (
            "Per system (MTBF by system, time between failures, "
            "checkpoint plan per system): the units carry no system (they are "
            "for LANL-shaped data, or assets with a system column)."
        )
    a, st, progress = ctx.assumptions, answer_tables(ctx.st), ctx.progress
    sections: list[tuple[str, str]] = []
    progress("MTBF by system")
    by_system = ctx.tables.get("mtbf_by_system")
    if by_system is None:
        by_system = _html.natural_sort(
            answers.mtbf_of(
                ctx.obs, by=["system"], confidence=a.confidence, unit="node"
            ),
            "system",
        )
        ctx.tables["mtbf_by_system"] = by_system
    by_system = by_system.filter(pl.col("system").is_not_null())
    chart = charts.mtbf_chart(
        by_system,
        group="system",
        confidence=a.confidence,
        title="MTBF by system (node-hours per failure)",
    )
    sections.append(
        (
            "MTBF by system",
            ctx.chart(chart, "mtbf-system") + _html.table_html(by_system),
        )
    )
    if not by_system.height:
        return sections
    progress("fitting lifetime models to the time between failures")
    top = _top_systems(by_system, a.top_systems)
    fits = _html.natural_sort(answers.survival_by(**st, by=["system"]), "system")
    ctx.tables["survival_by_system"] = fits
    largest = answers.time_between_failures(**st, by=["system"]).filter(
        pl.col("system") == top[0]
    )
    models = survival.fit_lifetime_models(largest, by=["system"])
    density = survival.model_density(largest, models, by=["system"], spacing="log")
    try:
        tbf_chart = ctx.chart(
            charts.tbf_histogram_chart(
                largest,
                density,
                binning="log",
                title=f"System {top[0]}: time between failures",
            ),
            "tbf-hist",
        )
    except InsufficientDataError:
        n_gaps = int(largest["observed"].sum()) if largest.height else 0
        tbf_chart = (
            f"<p>System {html.escape(str(top[0]))} has no gap between two failures "
            f"in the data ({largest.height} interval(s), {n_gaps} observed), so "
            "there is no histogram and no model to draw.</p>"
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
        ctx.tables["km_first_failure"] = km
        km_chart = charts.kaplan_meier_chart(
            km, color="system", title="Nodes without a failure, by system"
        )
        km_body = ctx.chart(km_chart, "km-first")
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
    progress("checkpoint intervals for a job spanning each system")
    sections.append(_checkpoint_section(ctx))
    return sections
