"""Repairable systems: mean cumulative function, trend tests, Crow-AMSAA, lemon units.

A node is a repairable system: it fails, is repaired and returns to service, so
its failures form a point process in its own service time rather than one
lifetime. This package answers the questions asked of such processes.
"""

from relkit.repairable._crow_amsaa import crow_amsaa
from relkit.repairable._lemons import DEFAULT_BURST_WINDOW_H, DEFAULT_FDR, lemon_units
from relkit.repairable._mcf import mean_cumulative_function
from relkit.repairable._trend import TREND_TESTS, trend_tests

__all__: list[str] = [
    "DEFAULT_BURST_WINDOW_H",
    "DEFAULT_FDR",
    "TREND_TESTS",
    "crow_amsaa",
    "lemon_units",
    "mean_cumulative_function",
    "trend_tests",
]
