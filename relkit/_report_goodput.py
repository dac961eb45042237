"""The goodput and checkpoint-decision section of the report (private).

Used by :mod:`relkit.report` when the store holds a run's checkpoint log.
"""

import html
from collections.abc import Callable

import polars as pl

from relkit import _html, answers, charts
from relkit.errors import InsufficientDataError, RelkitError
from relkit.published import PUBLISHED_ETTR_POINTS
from relkit.store import Store

__all__ = ["goodput_section"]

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


def goodput_section(
    store: Store,
    tables: dict[str, pl.DataFrame],
    *,
    confidence: float,
    progress: Callable[[str], None],
) -> tuple[str, str] | None:
    """Build the report section on measured goodput and the checkpoint decision.

    Parameters
    ----------
    store : Store
        The open store; its ``checkpoints``, ``jobs`` and ``job_nodes`` are read.
    tables : dict of str to pl.DataFrame
        CSV tables of the report; ``goodput_runs``, ``goodput_attempts``,
        ``checkpoint_decision`` and ``ettr_by_gpus`` are added.
    confidence : float
        Two-sided level of the decision's bounds.
    progress : callable
        Called with warnings and steps.

    Returns
    -------
    tuple of (str, str) or None
        Title and HTML body; None when the store has no checkpoint records.
    """
    records = store.table("checkpoints")
    if records.height == 0:
        return None
    progress("goodput of the runs in the checkpoint log")
    try:
        goodput = answers.run_goodput(
            records, store.table("jobs"), store.table("job_nodes")
        )
    except RelkitError as exc:
        progress(f"warning: no goodput: {exc}")
        body = (
            f"<p>The checkpoint log could not be measured: {html.escape(str(exc))}</p>"
        )
        return "Goodput of training runs", body
    for note in goodput.notes:
        progress(f"note: {note}")
    runs = goodput.runs
    tables["goodput_runs"] = runs
    tables["goodput_attempts"] = goodput.attempts
    parts = [
        "<p>Measured from the runs' own checkpoint/step logs, not modelled: ETTR "
        "is productive time (each step that was kept, counted once) over the wall "
        "time from a run's first start to its last end (Kokolis et al., HPCA "
        "2025, arXiv:2410.21680); the badput categories add up to the rest. "
        "Every row says which evidence it rests on.</p>",
        _html.table_html(runs.select(_SHOWN)),
    ]
    if goodput.notes:
        parts.append(
            "<ul>"
            + "".join(f"<li>{html.escape(n)}</li>" for n in goodput.notes)
            + "</ul>"
        )
    if runs.height:
        shown = runs.head(12)
        parts.append(
            _html.chart_div(
                charts.badput_waterfall_chart(shown).to_dict(), "badput-waterfall"
            )
        )
    try:
        decisions = answers.decide_checkpoints(goodput, confidence=confidence)
    except RelkitError as exc:
        progress(f"warning: no checkpoint decision: {exc}")
        parts.append(
            f"<p>No checkpoint interval is recommended: {html.escape(str(exc))}</p>"
        )
        return "Goodput of training runs", "".join(parts)
    tables["checkpoint_decision"] = decisions.with_columns(
        pl.col("assumptions").list.join("; ")
    )
    parts.append(
        "<h3>The checkpoint interval, from the failures measured on the run</h3>"
        f"<p>Each run's own interruption rate (with exact Poisson {confidence:.0%} "
        "bounds), restart overhead, queue wait and checkpoint cost, as measured, "
        "give the interval that maximises the expected ETTR and its bounds. The "
        "model counts only the run's interruptions; planned stops and waits for "
        "nodes are part of the measured ETTR and not of the model.</p>"
        + _html.table_html(decisions.select(_DECISION))
    )
    first = decisions.row(0, named=True)
    parts.append(
        "<ul>"
        + "".join(f"<li>{html.escape(a)}</li>" for a in first["assumptions"])
        + "</ul>"
    )
    try:
        curve = answers.decision_curve(first)
        sweep = answers.decision_scale_sweep(first)
    except InsufficientDataError as exc:
        parts.append(f"<p>{html.escape(str(exc))}</p>")
        return "Goodput of training runs", "".join(parts)
    tables["ettr_by_gpus"] = sweep
    operating = (
        (first["measured_interval_h"], first["measured_ettr"])
        if first["measured_interval_h"] and first["measured_ettr"] is not None
        else None
    )
    optimum = (
        (first["interval_h"], first["expected_ettr"]) if first["interval_h"] else None
    )
    parts.append(
        _html.chart_div(
            charts.ettr_interval_chart(
                curve, operating_point=operating, optimum=optimum
            ).to_dict(),
            "ettr-interval",
        )
    )
    parts.append(
        "<p>The same restart, queue and checkpoint cost at other job sizes, "
        "failures in proportion to the GPUs (MTTF(N) = 1/(N r)), at each size's "
        "optimal interval; published values for comparison.</p>"
        + _html.chart_div(
            charts.ettr_scale_chart(sweep, published=PUBLISHED_ETTR_POINTS).to_dict(),
            "ettr-scale",
        )
    )
    return "Goodput of training runs", "".join(parts)
