"""relkit: reliability answers from GPU cluster failure and job logs.

The main job in five calls::

    store = relkit.Store(":memory:")
    relkit.read_file(store, relkit.datasets.path("lanl"), kind="lanl")
    # or relkit.read_path(store, "logs/", kind="kernel"): a directory of files
    tables = relkit.store_tables(store)  # events, assets, sources, ...
    relkit.mtbf_by(**tables, by=["system"])  # MTBF with exact bounds
    relkit.survival_by(**tables, by=["system"])  # Weibull & co., by AIC

Modules: :mod:`relkit.store`, :mod:`relkit.ingest`, :mod:`relkit.observation`
(when units are at risk), :mod:`relkit.exposure`,
:mod:`relkit.metrics`, :mod:`relkit.survival`, :mod:`relkit.checkpoint`,
:mod:`relkit.answers`, :mod:`relkit.charts` (Altair), :mod:`relkit.report`,
:mod:`relkit.simulate` (synthetic clusters with known ground truth),
:mod:`relkit.jobs`, :mod:`relkit.scale`, :mod:`relkit.published` (job logs:
interruptions, root causes, MTTF at scale, published-table checks).
"""

import importlib

from relkit.errors import (
    CensoringWarning,
    ConvergenceError,
    IngestError,
    InsufficientDataError,
    InvalidParameterError,
    RelkitError,
    RelkitWarning,
    SchemaError,
)

#: ``typing.TYPE_CHECKING`` without importing typing (start-up time, issue 13
#: §3); type checkers read this name as True.
TYPE_CHECKING = False
if TYPE_CHECKING:  # the names, for type checkers; imported on first use
    from relkit.answers import (
        checkpoint_plan_by_system,
        excluded_failures,
        first_failure_survival,
        mtbf_by,
        mtbf_of,
        store_tables,
        survival_by,
        time_between_failures,
    )
    from relkit.checkpoint import (
        CheckpointDecision,
        CheckpointIntervals,
        ETTRModel,
        NodeKeepingShare,
        RenewalOptimum,
        TwoLevelPlan,
        checkpoint_decision,
        checkpoint_intervals,
        daly_interval_h,
        ettr_curve,
        ettr_model,
        exact_interval_h,
        expected_ettr,
        node_keeping_share,
        renewal_ettr,
        renewal_optimum,
        solve_whatif,
        two_level_ettr,
        two_level_optimum,
        whatif,
        young_interval_h,
    )
    from relkit.defaults import DEFAULT_CONFIDENCE
    from relkit.exposure import build_exposure, observation_end
    from relkit.ingest import IngestResult, read_file, read_files, read_path
    from relkit.jobs import (
        Goodput,
        InterruptionSummary,
        build_interruptions,
        build_job_attempts,
        interruption_losses,
        interruption_summary,
        job_interruptions,
        job_table,
        measure_goodput,
        root_cause_table,
    )
    from relkit.metrics import (
        FailureRateBounds,
        MTBFBounds,
        failure_rate_bounds,
        mtbf,
        mtbf_bounds,
        mttf_at_scale_h,
    )
    from relkit.observation import Observation, observe, system_incidents
    from relkit.published import (
        PUBLISHED_ETTR_POINTS,
        acmetrace_failure_share,
        check_table,
        failure_share,
    )
    from relkit.scale import (
        NodeFailureRate,
        job_mttf_by_size,
        node_failure_rate,
        scale_projection,
    )
    from relkit.simulate import (
        FailureProcess,
        SimConfig,
        Simulation,
        simulate_cluster,
        simulation_preset,
        write_simulation,
    )
    from relkit.store import Store
    from relkit.survival import (
        build_first_failure_table,
        build_tbf_table,
        fit_lifetime_models,
        fit_lifetimes,
        kaplan_meier,
    )
del TYPE_CHECKING  # not part of the API

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_CONFIDENCE",
    "PUBLISHED_ETTR_POINTS",
    "CensoringWarning",
    "CheckpointDecision",
    "CheckpointIntervals",
    "ConvergenceError",
    "ETTRModel",
    "FailureProcess",
    "FailureRateBounds",
    "Goodput",
    "IngestError",
    "IngestResult",
    "InsufficientDataError",
    "InterruptionSummary",
    "InvalidParameterError",
    "MTBFBounds",
    "NodeFailureRate",
    "NodeKeepingShare",
    "Observation",
    "RelkitError",
    "RelkitWarning",
    "RenewalOptimum",
    "SchemaError",
    "SimConfig",
    "Simulation",
    "Store",
    "TwoLevelPlan",
    "__version__",
    "acmetrace_failure_share",
    "build_exposure",
    "build_first_failure_table",
    "build_interruptions",
    "build_job_attempts",
    "build_tbf_table",
    "check_table",
    "checkpoint_decision",
    "checkpoint_intervals",
    "checkpoint_plan_by_system",
    "daly_interval_h",
    "ettr_curve",
    "ettr_model",
    "exact_interval_h",
    "excluded_failures",
    "expected_ettr",
    "failure_rate_bounds",
    "failure_share",
    "first_failure_survival",
    "fit_lifetime_models",
    "fit_lifetimes",
    "interruption_losses",
    "interruption_summary",
    "job_interruptions",
    "job_mttf_by_size",
    "job_table",
    "kaplan_meier",
    "measure_goodput",
    "mtbf",
    "mtbf_bounds",
    "mtbf_by",
    "mtbf_of",
    "mttf_at_scale_h",
    "node_failure_rate",
    "node_keeping_share",
    "observation_end",
    "observe",
    "read_file",
    "read_files",
    "read_path",
    "renewal_ettr",
    "renewal_optimum",
    "root_cause_table",
    "scale_projection",
    "simulate_cluster",
    "simulation_preset",
    "solve_whatif",
    "store_tables",
    "survival_by",
    "system_incidents",
    "time_between_failures",
    "two_level_ettr",
    "two_level_optimum",
    "whatif",
    "write_simulation",
    "young_interval_h",
]

#: module -> the public names it defines. They are imported on first use
#: (PEP 562), so that ``import relkit`` and the ``relkit`` command start
#: without loading DuckDB, polars, scipy, lifelines or Altair.
_EXPORTS: dict[str, tuple[str, ...]] = {
    "relkit.answers": (
        "checkpoint_plan_by_system",
        "excluded_failures",
        "first_failure_survival",
        "mtbf_by",
        "mtbf_of",
        "store_tables",
        "survival_by",
        "time_between_failures",
    ),
    "relkit.checkpoint": (
        "CheckpointDecision",
        "CheckpointIntervals",
        "ETTRModel",
        "NodeKeepingShare",
        "RenewalOptimum",
        "TwoLevelPlan",
        "checkpoint_decision",
        "checkpoint_intervals",
        "daly_interval_h",
        "ettr_curve",
        "ettr_model",
        "exact_interval_h",
        "expected_ettr",
        "node_keeping_share",
        "renewal_ettr",
        "renewal_optimum",
        "solve_whatif",
        "two_level_ettr",
        "two_level_optimum",
        "whatif",
        "young_interval_h",
    ),
    "relkit.defaults": ("DEFAULT_CONFIDENCE",),
    "relkit.exposure": (
        "build_exposure",
        "observation_end",
    ),
    "relkit.ingest": (
        "IngestResult",
        "read_file",
        "read_files",
        "read_path",
    ),
    "relkit.jobs": (
        "Goodput",
        "InterruptionSummary",
        "build_interruptions",
        "build_job_attempts",
        "interruption_losses",
        "interruption_summary",
        "job_interruptions",
        "job_table",
        "measure_goodput",
        "root_cause_table",
    ),
    "relkit.metrics": (
        "FailureRateBounds",
        "MTBFBounds",
        "failure_rate_bounds",
        "mtbf",
        "mtbf_bounds",
        "mttf_at_scale_h",
    ),
    "relkit.observation": (
        "Observation",
        "observe",
        "system_incidents",
    ),
    "relkit.published": (
        "PUBLISHED_ETTR_POINTS",
        "acmetrace_failure_share",
        "check_table",
        "failure_share",
    ),
    "relkit.scale": (
        "NodeFailureRate",
        "job_mttf_by_size",
        "node_failure_rate",
        "scale_projection",
    ),
    "relkit.simulate": (
        "FailureProcess",
        "SimConfig",
        "Simulation",
        "simulate_cluster",
        "simulation_preset",
        "write_simulation",
    ),
    "relkit.store": ("Store",),
    "relkit.survival": (
        "build_first_failure_table",
        "build_tbf_table",
        "fit_lifetime_models",
        "fit_lifetimes",
        "kaplan_meier",
    ),
}
_SOURCE = {name: module for module, names in _EXPORTS.items() for name in names}


def __getattr__(name: str) -> object:
    """Import a public name, or a submodule such as ``relkit.charts``, on first use.

    The value is then kept in the module, so the import runs once (PEP 562).
    """
    if name in _SOURCE:
        value = getattr(importlib.import_module(_SOURCE[name]), name)
    elif name.startswith("__"):
        msg = f"module {__name__!r} has no attribute {name!r}"
        raise AttributeError(msg)
    else:  # a submodule not imported yet, e.g. ``relkit.datasets``
        try:
            value = importlib.import_module(f"{__name__}.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"{__name__}.{name}":
                raise  # the submodule exists but needs what is not installed
            msg = f"module {__name__!r} has no attribute {name!r}"
            raise AttributeError(msg) from None
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """List the public names, imported or not, beside the module's own."""
    return sorted(set(globals()) | set(__all__))
