"""The report's goodput and checkpoint-decision sections (private).

Used by :mod:`relkit.report` when the store holds a run's checkpoint log:
measured ETTR and badput per run (a waterfall each), then the checkpoint
interval recommended from each run's own interruptions, drawn against the
interval with the run's operating point and the optimum.
"""

import html
import warnings

import polars as pl

from relkit import _html, answers, charts
from relkit._report_common import ReportContext, Sections
from relkit.errors import InsufficientDataError, RelkitError, RelkitWarning
from relkit.jobs import Goodput
from relkit.published import PUBLISHED_ETTR_POINTS

__all__ = ["NO_CHECKPOINTS", "goodput_sections"]

#: Why the goodput sections are left out of a store without a checkpoint log.
NO_CHECKPOINTS = (
    "no checkpoint records in the store: ingest a checkpoint log (relkit ingest "
    "--kind checkpoints) to measure goodput"
)

#: Runs drawn as waterfalls (all of them go to the CSV).
_MAX_WATERFALLS = 6

#: Columns of the runs table shown in the page (all of them go to the CSV).
_SHOWN = (
    "run_id",
    "evidence",
    "n_gpus",
    "wall_h",
    "productive_h",
    "ettr_frac",
    "n_interruptions",
    "badput_init_h",
    "badput_checkpoint_h",
    "badput_restore_h",
    "badput_lost_progress_h",
    "badput_recovery_h",
    "badput_queue_h",
    "badput_other_h",
)

#: Columns of the decision table shown in the page.
_DECISION = (
    "run_id",
    "gpus",
    "n_failures",
    "exposure_h",
    "measured_interval_h",
    "measured_ettr",
    "interval_lower_h",
    "interval_h",
    "interval_upper_h",
    "expected_ettr_lower",
    "expected_ettr",
    "expected_ettr_upper",
    "method",
)


def _items(lines: list[str] | tuple[str, ...]) -> str:
    return "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>"


def _measured(ctx: ReportContext) -> tuple[str, str, Goodput]:
    """Measure the runs' goodput; return the section's title, body and goodput."""
    st = ctx.st
    ctx.progress("goodput of the runs in the checkpoint log")
    goodput = answers.run_goodput(
        st["checkpoints"], st.get("jobs"), st.get("job_nodes")
    )
    for note in goodput.notes:
        ctx.progress(f"note: {note}")
    runs = goodput.runs
    ctx.tables["goodput_runs"] = runs
    ctx.tables["goodput_attempts"] = goodput.attempts
    parts = [
        "<p>Measured from the runs' own checkpoint/step logs, not modelled: ETTR "
        "(effective training time ratio) is productive time (each step that was "
        "kept, counted once) over the wall time from a run's first start to its "
        "last end (Kokolis et al., HPCA 2025, arXiv:2410.21680); the badput "
        "categories add up to the rest. Every row says which evidence it rests "
        "on; hours throughout.</p>",
        _html.table_html(runs.select(_SHOWN)),
    ]
    if goodput.notes:
        parts.append(_items(goodput.notes))
    drawn = runs.head(_MAX_WATERFALLS)
    if runs.height > drawn.height:
        parts.append(
            f"<p>Waterfalls of the first {drawn.height} of {runs.height} runs "
            "(all runs in tables/goodput_runs.csv).</p>"
        )
    for i, run in enumerate(drawn.iter_rows(named=True)):
        parts.append(
            ctx.chart(
                charts.badput_waterfall_chart(drawn, run_id=str(run["run_id"])),
                "badput-waterfall" if i == 0 else f"badput-waterfall-{i + 1}",
            )
        )
    return "Goodput of training runs", "".join(parts), goodput


def _decision(ctx: ReportContext, goodput: Goodput) -> tuple[str, str]:
    """Decide each run's checkpoint interval; draw the first run's ETTR curves."""
    title = "Checkpoint interval of the measured runs"
    confidence = ctx.assumptions.confidence
    try:
        a = ctx.assumptions
        decisions = answers.decide_checkpoints(
            goodput,
            confidence=confidence,
            cost_h=a.cost_h if "cost_h" in a.given else None,
            restart_h=a.restart_h if "restart_h" in a.given else None,
        )
    except RelkitError as exc:
        ctx.progress(f"warning: no checkpoint decision: {exc}")
        return title, (
            f"<p>No checkpoint interval is recommended: {html.escape(str(exc))}</p>"
        )
    ctx.tables["checkpoint_decision"] = decisions.with_columns(
        pl.col("assumptions").list.join("; ")
    )
    parts = [
        f"<p>Each run's own interruption rate (with exact Poisson {confidence:.0%} "
        "bounds), restart overhead, queue wait and checkpoint cost, as measured, "
        "give the interval that maximises the expected ETTR, with the interval's "
        "and the ETTR's bounds from the rate's (Young 1974, "
        "doi:10.1145/361147.361115; Daly 2006, doi:10.1016/j.future.2004.11.016; "
        "Kokolis et al. 2025). The model counts only the run's interruptions; "
        "planned stops and waits for nodes are part of the measured ETTR and not "
        "of the model. Intervals in hours.</p>",
        _html.table_html(decisions.select(_DECISION)),
    ]
    first = decisions.row(0, named=True)
    parts.append(f"<p>Assumptions for run {html.escape(str(first['run_id']))}:</p>")
    parts.append(_items(first["assumptions"]))
    try:
        curve = answers.decision_curve(first)
        sweep = answers.decision_scale_sweep(first)
    except InsufficientDataError as exc:
        parts.append(f"<p>{html.escape(str(exc))}</p>")
        return title, "".join(parts)
    ctx.tables["ettr_by_interval"] = curve
    ctx.tables["ettr_by_gpus"] = sweep
    operating = (
        (first["measured_interval_h"], first["measured_ettr"])
        if first["measured_interval_h"] and first["measured_ettr"] is not None
        else None
    )
    optimum = (
        (first["interval_h"], first["expected_ettr"]) if first["interval_h"] else None
    )
    verdict = ""
    if operating is not None and optimum is not None:
        gain = first["expected_ettr"] - first["measured_ettr"]
        verdict = (
            f"<p>Run {html.escape(str(first['run_id']))} checkpoints every "
            f"{operating[0] * 60:,.1f} min and measured ETTR {operating[1]:.1%}; "
            f"the model's optimum is every {optimum[0] * 60:,.1f} min "
            f"({first['interval_lower_h'] * 60:,.1f}–"
            f"{first['interval_upper_h'] * 60:,.1f} min at {confidence:.0%}) "
            f"for an expected ETTR of {optimum[1]:.1%} "
            f"({first['expected_ettr_lower']:.1%}–{first['expected_ettr_upper']:.1%})"
            f"; {gain * 100:+.1f} percentage points against the measured ETTR, "
            "which also carries planned "
            "stops and waits the model leaves out.</p>"
        )
    parts.append(verdict)
    parts.append(
        ctx.chart(
            charts.ettr_interval_chart(
                curve,
                operating_point=operating,
                optimum=optimum,
                title=f"Run {first['run_id']}: expected ETTR against the "
                "checkpoint interval",
            ),
            "ettr-interval",
        )
    )
    parts.append(
        "<p>The same restart, queue and checkpoint cost at other job sizes, the "
        "run's interruptions in proportion to its GPUs (MTTF(N) = 1/(N r)), at "
        "each size's optimal interval; published values for comparison.</p>"
        + ctx.chart(
            charts.ettr_scale_chart(
                sweep,
                published=PUBLISHED_ETTR_POINTS,
                title=f"Run {first['run_id']}'s failure rate at other job sizes",
            ),
            "ettr-scale",
        )
    )
    return title, "".join(parts)


def goodput_sections(ctx: ReportContext) -> Sections:
    """Build the report's sections on measured goodput and the checkpoint decision.

    Parameters
    ----------
    ctx : ReportContext
        The report's context. ``ctx.st["checkpoints"]`` (the store's checkpoint
        log) is required; ``jobs`` and ``job_nodes`` are used where present
        (submit times, attempt bounds). ``ctx.assumptions.confidence`` is the
        level of the decision's bounds. Adds the CSV tables ``goodput_runs``,
        ``goodput_attempts``, ``checkpoint_decision``, ``ettr_by_interval`` and
        ``ettr_by_gpus``.

    Returns
    -------
    list of (str, str) or str
        Two sections, "Goodput of training runs" (runs table, one badput
        waterfall per run, at most six) and "Checkpoint interval of the measured
        runs" (the decision per run; for the first run ETTR against the
        interval with its measured operating point and the optimum with
        bounds, and ETTR against the job size); or the one-line reason they
        are left out (no checkpoint records, or none that can be measured).

    Notes
    -----
    Measured values come from :func:`relkit.answers.run_goodput` (ETTR =
    productive over wall time, Kokolis et al., HPCA 2025, arXiv:2410.21680)
    and :func:`relkit.answers.decide_checkpoints` (interval maximising the
    expected ETTR at the run's measured rate, with exact Poisson bounds;
    Young 1974, doi:10.1145/361147.361115; Daly 2006,
    doi:10.1016/j.future.2004.11.016). Library warnings are passed to
    ``ctx.progress`` and stated in the page.
    """
    records = ctx.st.get("checkpoints")
    if records is None or records.height == 0:
        return NO_CHECKPOINTS
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelkitWarning)
        try:
            title, body, goodput = _measured(ctx)
        except RelkitError as exc:
            ctx.progress(f"warning: no goodput: {exc}")
            return f"the checkpoint log could not be measured: {exc}"
        sections = [(title, body), _decision(ctx, goodput)]
    said = list(dict.fromkeys(str(w.message) for w in caught))
    for message in said:
        ctx.progress(f"note: {message}")
    if said:
        t, b = sections[-1]
        sections[-1] = (t, b + "".join(f"<p>Note: {html.escape(m)}</p>" for m in said))
    return sections
