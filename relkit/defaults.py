"""Defaults shared by the library, the command line and the report.

This module imports nothing, so the command line can read the defaults
without loading polars or scipy. Every public function with a ``confidence``
parameter defaults to :data:`DEFAULT_CONFIDENCE` (the same object), and every
result with bounds states the level it used.
"""

__all__ = ["DEFAULT_CONFIDENCE"]

#: Default two-sided confidence level of every interval relkit computes: 0.95,
#: the field's usual level (lifelines' ``alpha=0.05``; the intervals of
#: Meeker, Escobar & Pascual, *Statistical Methods for Reliability Data*,
#: 2nd ed., Wiley 2022). One-sided bounds use the same level.
DEFAULT_CONFIDENCE: float = 0.95
