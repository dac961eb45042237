"""Repairable systems: mean cumulative function, trend tests, Crow-AMSAA, lemon units.

A node is a repairable system: it fails, is repaired and returns to service, so
its failures form a point process in its own service time rather than one
lifetime. This package answers the questions asked of such processes.
"""

__all__: list[str] = []
