"""The report's sections on survival per failure mode (issue 12, private).

Used by :mod:`relkit.report`. Each section adapts to the store: failure modes
are grouped by ``root_cause`` where the events carry one (LANL) and by
``failure_mode`` otherwise; covariates are the asset attributes that vary; a
section that cannot be computed says why in the page and on the progress
channel instead of disappearing.
"""

import html
import warnings
from collections.abc import Callable
from typing import Any

import polars as pl

from relkit import _html, answers, charts, survival
from relkit._report_common import ReportContext, Sections, plain_message
from relkit.answers import STORE_TABLES
from relkit.errors import RelkitError, RelkitWarning
from relkit.observation import Observation

__all__ = ["MIN_FAILURES", "MIN_FIT_FAILURES", "survival_sections"]

#: Fewer failures than this leave the survival sections out, with the reason.
MIN_FAILURES = 3
#: Fewest failures of one group for its lifetime model to be shown and drawn.
MIN_FIT_FAILURES = 5

#: More failure modes than this are grouped by their root cause.
_MAX_MODES = 20
#: Most groups drawn in one per-mode chart (the most failures first).
_MAX_DRAWN = 10
#: Largest number of levels an attribute may have to be a covariate here.
_MAX_LEVELS = 40
#: Modes with fewer first failures are folded into "other" in the CIF chart.
_MIN_EVENTS = 20
#: Points per chart of curves (Altair allows 5,000; fewer keep the page light).
_CHART_POINTS = 2400
#: Rows of the lemon table shown in the page (all go to the CSV).
_LEMONS_SHOWN = 20


def _mode_column(events: pl.DataFrame) -> str:
    """``failure_mode``, or ``root_cause`` when there are too many modes to read.

    LANL's records name 139 "root/sub-cause" pairs; its six root causes are the
    readable grouping. A GPU fleet's dozen or so modes stay as they are.
    """
    if events["failure_mode"].drop_nulls().n_unique() > _MAX_MODES:
        return "root_cause"
    return "failure_mode"


def _covariates(obs: Observation) -> list[str]:
    """Return the unit attributes with 2 to ``_MAX_LEVELS`` levels."""
    windows = obs.windows.unique("host")
    out = []
    for col in ["system", *[a for a in obs.attributes if a != "system"]]:
        if col not in windows.columns:
            continue
        if 2 <= windows[col].drop_nulls().n_unique() <= _MAX_LEVELS:
            out.append(col)
    return out


def _failed(title: str, exc: Exception, progress: Callable[[str], None]) -> str:
    progress(f"warning: {title}: {exc}")
    return f"<p>Not computed: {html.escape(plain_message(str(exc)))}</p>"


def _notes(notes: tuple[str, ...] | list[str]) -> str:
    said = dict.fromkeys(plain_message(n) for n in notes)
    return "".join(f"<p>Note: {html.escape(n)}</p>" for n in said)


def _per_mode(
    st: dict[str, pl.DataFrame],
    col: str,
    tables: dict[str, pl.DataFrame],
    progress: Callable[[str], None],
    chart: Callable[[Any, str], str],
) -> str:
    progress(f"lifetime models of each node's time between failures per {col}")
    fits = answers.survival_by(**st, by=[col], unit="node", all_models=True)
    tables["survival_by_mode_all_models"] = fits
    best = fits.filter(pl.col("rank") == 1)
    few = (
        fits.group_by(col)
        .agg(pl.col("n_failures").max())
        .filter(pl.col("n_failures").fill_null(0) < MIN_FIT_FAILURES)
    )
    best = best.join(few, on=col, how="anti")
    few_said = (
        f"<p>{few.height:,} group(s) with fewer than {MIN_FIT_FAILURES} failures "
        "are neither shown nor drawn: a lifetime model fitted to so few gaps "
        "says nothing (their rows are in "
        "tables/survival_by_mode_all_models.csv).</p>"
        if few.height
        else ""
    )
    if not best.height:
        return (
            f"<p>No {col.replace('_', ' ')} has {MIN_FIT_FAILURES} failures or "
            "more: no lifetime model is shown.</p>" + few_said
        )
    drawn = best.sort("n_failures", descending=True).head(_MAX_DRAWN)[col].to_list()
    table = answers.survival_table(**st, by=[col], unit="node")
    n_points = max(min(80, _CHART_POINTS // max(len(drawn), 1)), 2)
    curves = survival.model_density(
        table.filter(pl.col(col).is_in(drawn)),
        best.filter(pl.col(col).is_in(drawn)),
        by=[col],
        n_points=n_points,
        spacing="log",
    )
    km = survival.kaplan_meier(
        table.filter(pl.col(col).is_in(drawn)).drop("origin_known", strict=False),
        by=[col],
        max_rows=max(_CHART_POINTS // max(len(drawn), 1), 50),
    )
    shown = best.select(
        col,
        "model",
        "n_units",
        "n_failures",
        "scale_h",
        "shape",
        "shape_lower",
        "shape_upper",
        "aic",
        "delta_aic",
        "n_zero",
        "status",
    ).sort("n_failures", descending=True)
    no_fit = fits.filter(pl.col("rank").is_null()).select(col).unique().height
    return (
        f"<p>Each node's gaps between failures of one {col.replace('_', ' ')} "
        "(a failure of another mode does not end the gap), on the node's "
        "in-service clock, left-truncated where the node was in service before "
        "the data began. Every model is fitted by maximum likelihood and ranked "
        "by AIC; fits with no interior maximum are never ranked. The best "
        "model's hazard shows whether a mode burns in (falling hazard), is "
        f"random (flat) or wears out (rising); the charts draw the {len(drawn)} "
        f"groups with the most failures. {no_fit} group(s) have no "
        "model with an interior maximum (all rows in "
        "tables/survival_by_mode_all_models.csv).</p>"
        + few_said
        + _html.table_html(shown)
        + chart(
            charts.hazard_chart(
                curves, color=col, title="Fitted hazard per mode (best model)"
            ),
            "mode-hazard",
        )
        + chart(
            charts.kaplan_meier_chart(
                km, color=col, title="Time between failures per mode (Kaplan-Meier)"
            ),
            "mode-km",
        )
    )


def _competing(
    st: dict[str, pl.DataFrame],
    obs: Observation,
    col: str,
    tables: dict[str, pl.DataFrame],
    progress: Callable[[str], None],
    chart: Callable[[Any, str], str],
) -> str:
    progress(f"cumulative incidence of each node's first failure by {col}")
    groups = _systems(obs)
    # many modes are folded below _MIN_EVENTS first failures so the chart stays
    # readable; a few modes are all drawn, however rare
    modes = obs.failures["failure_mode"]
    if col == "root_cause":  # the part before '/', as the observation derives it
        modes = modes.str.split("/").list.first()
    n_modes = modes.n_unique()
    min_events = _MIN_EVENTS if n_modes > _MAX_DRAWN else 0
    whole = answers.competing_risks_by(**st, mode_column=col, min_events=min_events)
    tables["cumulative_incidence"] = whole.cumulative_incidence
    risks = whole
    if groups:
        risks = answers.competing_risks_by(
            **st, mode_column=col, min_events=min_events, by=groups
        )
        tables["cumulative_incidence_by_system"] = risks.cumulative_incidence
    n_modes = max(whole.cumulative_incidence["failure_mode"].n_unique(), 1)
    cif = chart(
        charts.cumulative_incidence_chart(
            whole.cumulative_incidence,
            title="Cumulative incidence of the first failure, by mode",
            max_points=max(_CHART_POINTS // n_modes - 1, 2),
        ),
        "cif",
    )
    gray = ""
    if risks.gray.height:
        tables["gray_test"] = risks.gray
        gray = (
            "<p>Gray's test (Gray 1988, doi:10.1214/aos/1176350951): does each "
            "mode's cumulative incidence differ between systems?</p>"
            + _html.table_html(risks.gray)
        )
    last = whole.cumulative_incidence.group_by("failure_mode").agg(
        pl.all().sort_by("time_h").last()
    )
    page = (
        "<p>The chance that a node's first failure, by a given age in service, is "
        "of each mode, with the others competing (Aalen-Johansen; bands by the "
        "delta method). The curves add up to one minus the Kaplan-Meier of any "
        "first failure."
        + (
            f" Modes with fewer than {min_events} first failures are folded into "
            "one group.</p>"
            if min_events
            else "</p>"
        )
        + cif
        + _html.table_html(
            last.select(
                "failure_mode", "time_h", "cumulative_incidence", "lower", "upper"
            ).sort("cumulative_incidence", descending=True)
        )
        + gray
        + _notes(whole.notes)
    )
    for note in whole.notes:
        progress(f"note: {note}")
    return page


def _covariate_section(
    st: dict[str, pl.DataFrame],
    obs: Observation,
    tables: dict[str, pl.DataFrame],
    progress: Callable[[str], None],
    chart: Callable[[Any, str], str],
) -> str:
    covariates = _covariates(obs)
    if not covariates:
        return (
            "<p>No unit attribute (system, or an assets column such as rack or "
            f"batch) has 2 to {_MAX_LEVELS} levels, so there is nothing to "
            "compare.</p>"
        )
    progress(f"Cox proportional hazards of the first failure on each of {covariates}")
    ratios, checks, notes = [], [], []
    for covariate in covariates:
        try:
            model = answers.hazards_by(**st, covariates=[covariate])
        except RelkitError as exc:
            notes.append(f"{covariate}: not fitted ({exc})")
            continue
        ratios.append(model.hazard_ratios)
        checks.append(
            {
                "covariate": covariate,
                "n_units": model.n_units,
                "n_events": model.n_events,
                "concordance": model.concordance,
                "ph_test_min_p_value": (
                    float(model.ph_test["p_value"].min())
                    if model.ph_test.height
                    else None
                ),
                "logrank_p_value": (
                    float(model.logrank["p_value"].min())
                    if model.logrank is not None and model.logrank.height
                    else None
                ),
            }
        )
        notes.extend(f"{covariate}: {n}" for n in model.notes)
    body = (
        "<p>Cox proportional hazards of each node's age at first failure on each "
        f"attribute alone ({', '.join(covariates)}; Efron ties, left truncation): "
        "unadjusted hazard ratios against each attribute's most common level. "
        "Attributes that vary together (a system and its machine type) are not "
        "told apart here; fit them jointly with <code>relkit hazards "
        "--covariates</code>. A level whose nodes all or never fail (separation) "
        "gets no ratio, never a meaningless one.</p>"
    )
    if ratios:
        both = pl.concat(ratios, how="diagonal_relaxed")
        tables["hazard_ratios"] = both
        body += chart(
            charts.hazard_ratio_forest_chart(
                both, title="Hazard ratios against the reference level"
            ),
            "forest",
        )
        tables["hazard_checks"] = pl.DataFrame(checks)
        body += (
            "<p>Checks per attribute: concordance, the smallest p-value of the "
            "proportional-hazards test (Schoenfeld residuals, rank transform; "
            "small means the ratio changes with age) and of the log-rank test "
            "between levels.</p>" + _html.table_html(tables["hazard_checks"])
        )
    return body + _notes(notes)


def _systems(obs: Observation) -> list[str]:
    """``["system"]`` when the units belong to two systems or more, else ``[]``."""
    windows = obs.windows
    if "system" in windows.columns and windows["system"].drop_nulls().n_unique() > 1:
        return ["system"]
    return []


def _trend(
    st: dict[str, pl.DataFrame],
    obs: Observation,
    tables: dict[str, pl.DataFrame],
    progress: Callable[[str], None],
    chart: Callable[[Any, str], str],
) -> str:
    by = _systems(obs)
    progress("trend tests and Crow-AMSAA per " + (by[0] if by else "fleet"))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelkitWarning)
        trends = answers.trend_by(**st, by=by)
        mcf = answers.mcf_by(**st, by=by)
    trend_notes = list(dict.fromkeys(str(w.message) for w in caught))
    for message in trend_notes:
        progress(f"note: trend tests: {message}")
    trends = _html.natural_sort(trends, by[0]) if by else trends
    tables["trend"] = trends
    tables["mean_cumulative_function"] = mcf
    if by:
        top = (
            trends.sort("n_failures", descending=True)
            .head(4)[by[0]]
            .cast(pl.String)
            .to_list()
        )
        mcf = mcf.filter(pl.col(by[0]).cast(pl.String).is_in(top))
    # evenly spaced points of each curve, always its last (the page stays light)
    keys = by or [pl.lit(0)]
    mcf = mcf.filter(
        (pl.int_range(pl.len()).over(keys) % (pl.len().over(keys) // 600 + 1) == 0)
        | (pl.int_range(pl.len()).over(keys) == pl.len().over(keys) - 1)
    )
    shown = trends.select(
        *by,
        "n_units",
        "n_failures",
        "laplace_p_value",
        "laplace_direction",
        "mil_hdbk_189_p_value",
        "mil_hdbk_189_direction",
        "beta",
        "beta_lower",
        "beta_upper",
        "current_mtbf_h",
    )
    progress("MTBF per quarter")
    quarters = answers.mtbf_by_period(**st, period="quarter")
    tables["mtbf_by_quarter"] = quarters
    quarter_html = (
        "<p>MTBF per calendar quarter (UTC; all quarters in "
        "tables/mtbf_by_quarter.csv):</p>" + _html.table_html(quarters.tail(8))
    )
    tested = shown.filter(pl.col("laplace_direction").is_not_null())
    if not tested.height:
        return (
            "<p>No trend test could be computed (too few failures per unit "
            "clock; notes below).</p>"
            + "".join(
                f"<p>Note (trend tests): {html.escape(n)}</p>" for n in trend_notes
            )
            + quarter_html
        )
    return (
        "<p>A node is repaired and returns: its failures are a point process on "
        "its in-service clock. The Laplace and MIL-HDBK-189 tests ask whether "
        "the failure rate changes with age; Crow-AMSAA's β is below 1 when it "
        "falls (improving) and above 1 when it rises (deteriorating). The "
        "current MTBF is the power law's at the end of the data.</p>"
        + _html.table_html(shown)
        + "".join(
            f"<p>Note on the trend tests and the mean cumulative failures (the "
            f"MTBF per quarter below counts every failure): "
            f"{html.escape(plain_message(n))}</p>"
            for n in trend_notes
        )
        + chart(
            charts.mcf_chart(
                mcf,
                color=by[0] if by else None,
                title="Mean cumulative failures per node over age",
            ),
            "mcf",
        )
        + quarter_html
    )


def _lemons(
    st: dict[str, pl.DataFrame],
    tables: dict[str, pl.DataFrame],
    progress: Callable[[str], None],
    chart: Callable[[Any, str], str],
) -> str:
    progress("lemon nodes (exact Poisson tail, Benjamini-Hochberg)")
    found = answers.lemons(**st)
    tables["lemons"] = found
    n_lemons = int(found["lemon"].sum())
    return (
        f"<p>{found.height:,} nodes tested against their group's failure rate for "
        f"their time at risk; {n_lemons:,} have improbably many failures at a "
        "false-discovery rate of 5 % (exact Poisson upper tail, "
        "Benjamini-Hochberg 1995, doi:10.1111/j.2517-6161.1995.tb02031.x). "
        "Repeats within a burst count once.</p>"
        + chart(
            charts.lemon_ranking_chart(found, title="Nodes ranked by evidence"),
            "lemons",
        )
        + _html.table_html(found.head(_LEMONS_SHOWN))
    )


def survival_sections(ctx: ReportContext) -> Sections:
    """Build the report's sections on survival, risks, trends and lemons.

    Parameters
    ----------
    ctx : ReportContext
        The report's context: ``ctx.st`` (the store's ``events``, ``assets``,
        ``sources``, ``log_spans``, ``failure_modes``; job tables are not
        read), ``ctx.obs`` (failures and units at risk). Each section adds its
        CSV tables to ``ctx.tables`` and tells ``ctx.progress`` each step and
        each section that could not be computed.

    Returns
    -------
    list of (str, str) or str
        (title, HTML body) per section: survival and hazard per failure mode
        (``failure_mode``, or ``root_cause`` where there are more than 20
        modes, as in LANL), competing risks of the first failure (cumulative
        incidence), covariates (Cox), trends and repairable systems (Laplace,
        MIL-HDBK-189, Crow-AMSAA, MCF), lemon nodes. A section that cannot be
        computed holds the reason. The one-line reason instead when fewer than
        :data:`MIN_FAILURES` failures are counted.

    Notes
    -----
    The computations and their sources are those of
    :func:`relkit.answers.survival_by`, :func:`relkit.answers.competing_risks_by`
    (Aalen-Johansen; Gray 1988, doi:10.1214/aos/1176350951),
    :func:`relkit.answers.hazards_by` (Cox, Efron ties),
    :func:`relkit.answers.trend_by`, :func:`relkit.answers.mcf_by` and
    :func:`relkit.answers.lemons` (exact Poisson tail, Benjamini-Hochberg 1995,
    doi:10.1111/j.2517-6161.1995.tb02031.x).
    """
    st = {k: v for k, v in ctx.st.items() if k in STORE_TABLES}
    obs, tables, progress = ctx.obs, ctx.tables, ctx.progress
    n_failures = obs.failures.height
    if n_failures < MIN_FAILURES:
        return (
            f"only {n_failures} failure(s) counted in the store, too few for "
            f"survival curves, cumulative incidence or trends (at least "
            f"{MIN_FAILURES}): ingest failure logs (relkit ingest --kind kernel, "
            "--kind lanl or --kind events)"
        )
    col = _mode_column(st["events"])
    builders: list[tuple[str, Callable[[], str]]] = [
        (
            f"Survival and hazard per {col.replace('_', ' ')}",
            lambda: _per_mode(st, col, tables, progress, ctx.chart),
        ),
        (
            "Competing risks: the first failure's mode",
            lambda: _competing(st, obs, col, tables, progress, ctx.chart),
        ),
        (
            "Which groups fail sooner (covariates)",
            lambda: _covariate_section(st, obs, tables, progress, ctx.chart),
        ),
        (
            "Trends: is the failure rate falling?",
            lambda: _trend(st, obs, tables, progress, ctx.chart),
        ),
        ("Lemon nodes", lambda: _lemons(st, tables, progress, ctx.chart)),
    ]
    sections = []
    for title, build in builders:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", RelkitWarning)
            try:
                body = build()
            except RelkitError as exc:
                body = _failed(title, exc, progress)
        said = list(dict.fromkeys(str(w.message) for w in caught))
        for message in said:
            progress(f"note: {message}")
        sections.append((title, body + _notes(said)))
    return sections
