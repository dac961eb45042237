"""Altair chart builders for relkit's aggregated frames.

Every builder takes a tidy polars frame produced by an analysis module, checks
its columns, aggregates in polars where needed so that the embedded dataset
has at most :data:`MAX_ROWS` rows (Altair's ``MaxRowsError`` limit), and returns
the chart without displaying it. This is the only relkit module that imports
Altair; :func:`enable_theme` is relkit's one global action.
"""

from relkit.charts._competing import cumulative_incidence_chart
from relkit.charts._ettr import ettr_chart, ettr_interval_chart, ettr_scale_chart
from relkit.charts._failures import (
    events_timeline_chart,
    kaplan_meier_chart,
    mtbf_chart,
    tbf_histogram_chart,
)
from relkit.charts._goodput import badput_waterfall_chart
from relkit.charts._hazards import hazard_ratio_forest_chart
from relkit.charts._heatmap import incident_heatmap_chart, natural_order
from relkit.charts._interruptions import interruption_pareto_chart
from relkit.charts._lemons import lemon_ranking_chart
from relkit.charts._repairable import crow_amsaa_chart, mcf_chart
from relkit.charts._scale import mttf_scale_chart
from relkit.charts._survival import hazard_chart, probability_plot_chart
from relkit.charts._theme import (
    MAX_ROWS,
    THEME_NAME,
    enable_offline_rendering,
    enable_theme,
)

__all__ = [
    "MAX_ROWS",
    "THEME_NAME",
    "badput_waterfall_chart",
    "crow_amsaa_chart",
    "cumulative_incidence_chart",
    "enable_offline_rendering",
    "enable_theme",
    "ettr_chart",
    "ettr_interval_chart",
    "ettr_scale_chart",
    "events_timeline_chart",
    "hazard_chart",
    "hazard_ratio_forest_chart",
    "incident_heatmap_chart",
    "interruption_pareto_chart",
    "kaplan_meier_chart",
    "lemon_ranking_chart",
    "mcf_chart",
    "mtbf_chart",
    "mttf_scale_chart",
    "natural_order",
    "probability_plot_chart",
    "tbf_histogram_chart",
]
