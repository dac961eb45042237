"""Time at risk: unit-hours and GPU-hours per group (public re-export).

The observation model (service windows, units, end of data, exclusions) lives
in :mod:`relkit.observation`; this module keeps the names callers import.
"""

from relkit.observation import build_exposure, observation_end

__all__ = ["build_exposure", "observation_end"]
