r"""Survival analysis of failures: tables, Kaplan-Meier, parametric lifetime fits.

The only relkit module that uses lifelines (imported inside functions). Inputs
are survival tables (see :func:`build_tbf_table`): one row per spell with
``entry_h`` (left truncation), ``stop_h`` (hours from the spell's origin) and
``observed`` (True = failure seen, False = right-censored).

Policies
--------
- Invalid spells (``stop_h < 0``, ``entry_h < 0``, ``entry_h > stop_h``, nulls)
  are refused with a :class:`~relkit.errors.SchemaError` naming each unit and
  data row; ``invalid="drop"`` drops them with a
  :class:`~relkit.errors.RelkitWarning` naming them.
- Zero-length failure spells (simultaneous failures; a failure at launch) are
  kept by Kaplan-Meier; parametric fits interval-censor them in
  ``(0, resolution_h]`` (the time stamps' resolution, see
  :func:`timestamp_resolution_h`), report ``n_zero`` and the shape with them
  left out, and ``status`` says how.
- A node with an unknown ``in_service_ts`` loses its first gap
  (:func:`build_tbf_exclusions` counts it).
- lifelines' warnings are recorded in ``status``, never re-raised; its errors
  become ``status`` text or a relkit error (``ConvergenceError``,
  ``InsufficientDataError``). Fits with fewer than 2 failures, or whose
  likelihood has no interior maximum (status ``no_interior_maximum (...)``),
  report no parameters and are never ranked best.

References
----------
.. [1] E. L. Kaplan and P. Meier, "Nonparametric estimation from incomplete
   observations", JASA 53(282), 1958. doi:10.1080/01621459.1958.10501452
.. [2] C. Davidson-Pilon, "lifelines: survival analysis in Python", JOSS 4(40),
   2019. doi:10.21105/joss.01317
.. [3] J. P. Klein and M. L. Moeschberger, *Survival Analysis: Techniques for
   Censored and Truncated Data*, 2nd ed., Springer, 2003, ch. 3-4.
.. [4] B. Schroeder and G. A. Gibson, "A large-scale study of failures in
   high-performance computing systems", DSN 2006. doi:10.1109/DSN.2006.5
"""

from relkit.survival._common import timestamp_resolution_h
from relkit.survival._competing import cumulative_incidence, gray_test
from relkit.survival._fits import (
    DEFAULT_MODELS,
    MODELS,
    ZERO_DURATION_H,
    fit_lifetime_models,
    fit_lifetimes,
)
from relkit.survival._nonparametric import kaplan_meier, nelson_aalen
from relkit.survival._plots import probability_plot
from relkit.survival._regression import (
    HazardModel,
    cox_hazards,
    logrank_by,
    weibull_aft,
)
from relkit.survival._tables import (
    REMOVAL_EXITS,
    build_first_failure_table,
    build_lifetime_table,
    build_removal_table,
    build_tbf_exclusions,
    build_tbf_table,
    model_density,
    validate_survival_table,
)

__all__ = [
    "DEFAULT_MODELS",
    "MODELS",
    "REMOVAL_EXITS",
    "ZERO_DURATION_H",
    "HazardModel",
    "build_first_failure_table",
    "build_lifetime_table",
    "build_removal_table",
    "build_tbf_exclusions",
    "build_tbf_table",
    "cox_hazards",
    "cumulative_incidence",
    "fit_lifetime_models",
    "fit_lifetimes",
    "gray_test",
    "kaplan_meier",
    "logrank_by",
    "model_density",
    "nelson_aalen",
    "probability_plot",
    "timestamp_resolution_h",
    "validate_survival_table",
    "weibull_aft",
]
