"""What every report section builder receives: the store's frames and the assumptions.

A section builder (``relkit._report_<topic>.<topic>_sections``) takes one
:class:`ReportContext` and returns either a list of ``(title, html)`` sections,
or a one-line reason (``str``) when the store holds no data for it; the report
then leaves the section out and says why in that line.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import polars as pl

from relkit import _html
from relkit.defaults import DEFAULT_CONFIDENCE

if TYPE_CHECKING:
    from relkit.observation import Observation
    from relkit.store import Store

__all__ = [
    "ReportAssumptions",
    "ReportContext",
    "Sections",
    "counting_rule",
    "plain_message",
]

#: What a section builder returns: sections to show, or why none is shown.
Sections = list[tuple[str, str]] | str


@dataclass(frozen=True)
class ReportAssumptions:
    """Stated assumptions of the report.

    Parameters
    ----------
    confidence : float
        Two-sided confidence level of MTBF bounds.
    cost_h : float
        Time to write one checkpoint, hours (default 5 min).
    restart_h : float
        Time to restart after a failure, hours (default 10 min).
    min_failures : int
        Systems with fewer failures get no checkpoint plan.
    top_systems : int
        How many of the systems with most records get survival curves.
    given : tuple of str
        Which of ``cost_h`` and ``restart_h`` the user gave: those replace the
        measured save and restart times of checkpointed runs too (the others
        serve only the plans from failure data).
    """

    confidence: float = DEFAULT_CONFIDENCE
    cost_h: float = 5.0 / 60.0
    restart_h: float = 10.0 / 60.0
    min_failures: int = 100
    top_systems: int = 5
    given: tuple[str, ...] = ()


@dataclass
class ReportContext:
    """The store's frames, the observation and the assumptions, for section builders.

    Attributes
    ----------
    store : Store
        The open store (read only).
    st : dict of str to pl.DataFrame
        ``answers.store_tables(store)``: events, assets, sources (and jobs,
        job_nodes, checkpoints where the store has them).
    obs : Observation
        The observation model of ``st`` (time at risk, exclusions, notes).
    assumptions : ReportAssumptions
        Confidence level and checkpoint/restart costs.
    progress : callable
        Called with a short message before each long step.
    tables : dict of str to pl.DataFrame
        The report's CSV tables (``tables/<name>.csv``); builders add to it.
    charts : list of (str, dict)
        Every chart placed on the page as ``(div_id, Vega-Lite spec)``, for
        ``--images`` export; filled by :meth:`chart`.
    """

    store: "Store"
    st: dict[str, pl.DataFrame]
    obs: "Observation"
    assumptions: ReportAssumptions
    progress: Callable[[str], None]
    tables: dict[str, pl.DataFrame] = field(default_factory=dict)
    charts: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def chart(self, chart: Any, div_id: str) -> str:  # noqa: ANN401 - an Altair chart
        """Place an Altair chart on the page: record its spec, return its HTML.

        Parameters
        ----------
        chart : altair.TopLevelMixin
            The chart; it must have a title and axis titles with units.
        div_id : str
            Element id, unique within the page (see ``_html.chart_div``).

        Returns
        -------
        str
            The chart's HTML (interactive, with a static SVG fallback).
        """
        spec = chart.to_dict()
        self.charts.append((div_id, spec))
        return _html.chart_div(spec, div_id)


def counting_rule(sources: pl.DataFrame, window_min: float | None) -> str:
    """Say how events became counted failures, for the store's kinds of source.

    Parameters
    ----------
    sources : polars.DataFrame
        The store's ``sources`` table (column ``kind``).
    window_min : float or None
        The observation's incident window for normalised records, minutes
        (``Observation.window_min``; None when not given).

    Returns
    -------
    str
        A plain clause: log lines (kinds ``kernel``, ``nvsmi``) are folded into
        incidents (one host, device and mode within 10 minutes); normalised
        records (LANL, events tables) count one failure each, as their owner
        curated them, unless a window was given (the rule of
        ``relkit.observation.failure_records``).
    """
    kinds = set(sources["kind"].to_list()) if "kind" in sources.columns else set()
    logs = bool(kinds & {"kernel", "nvsmi"})
    records = bool(kinds & {"events", "lanl", "parsed-logs"})
    parts = []
    if logs:
        parts.append(
            "log lines are folded into incidents (events of one host, device and "
            "mode less than 10 minutes apart are one failure)"
        )
    if records:
        parts.append(
            "each normalised record (LANL, events table) is one failure, as its "
            "owner curated it"
            if window_min is None
            else "normalised records of one host, device and mode less than "
            f"{window_min:g} minutes apart are one failure"
        )
    return "; ".join(parts) if parts else "each record is one failure"


def plain_message(message: str) -> str:
    """Say a library message in the page's plain words.

    A leading function name (``hazard_chart: ``, ``cumulative_incidence_by:``)
    is dropped; a lifelines convergence message (with its links) becomes one
    short sentence.

    Parameters
    ----------
    message : str
        An exception's or warning's text.

    Returns
    -------
    str
        The text to show on the page.
    """
    text = str(message).strip()
    if "http" in text and "conver" in text.lower():
        return (
            "a model fit did not converge cleanly (lifelines' convergence "
            "warning); its estimates are shown with their status and may be "
            "unreliable"
        )
    while True:
        cut = re.sub(r"^[a-z_][a-z0-9_.]*(\(\))?: ", "", text)
        if cut == text:
            break
        text = cut
    return text[:1].upper() + text[1:] if text else text
