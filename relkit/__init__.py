"""relkit: reliability answers from GPU cluster failure and job logs.

The main job in five calls::

    store = relkit.Store(":memory:")
    relkit.read_file(store, relkit.datasets.path("lanl"), kind="lanl")
    events, assets = store.table("events"), store.table("assets")
    relkit.mtbf_by(events, assets, by=["system"])  # MTBF with exact bounds
    relkit.survival_by(events, assets, by=["system"])  # Weibull & co., by AIC

Modules: :mod:`relkit.store`, :mod:`relkit.ingest`, :mod:`relkit.exposure`,
:mod:`relkit.metrics`, :mod:`relkit.survival`, :mod:`relkit.checkpoint`,
:mod:`relkit.fleet`, :mod:`relkit.charts` (Altair), :mod:`relkit.report`.
"""

from relkit import datasets as datasets
from relkit.checkpoint import (
    CheckpointIntervals,
    ETTRModel,
    checkpoint_intervals,
    daly_interval_h,
    ettr_curve,
    ettr_model,
    exact_interval_h,
    expected_ettr,
    young_interval_h,
)
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
from relkit.exposure import build_exposure, observation_end
from relkit.fleet import (
    checkpoint_plan_by_system,
    first_failure_survival,
    mtbf_by,
    survival_by,
)
from relkit.ingest import IngestResult, read_file, read_files
from relkit.metrics import (
    MTBFBounds,
    failure_rate_bounds,
    mtbf,
    mtbf_bounds,
    mttf_at_scale_h,
)
from relkit.store import Store
from relkit.survival import (
    build_first_failure_table,
    build_tbf_table,
    fit_lifetime_models,
    fit_lifetimes,
    kaplan_meier,
)

__version__ = "0.1.0"

__all__ = [
    "CensoringWarning",
    "CheckpointIntervals",
    "ConvergenceError",
    "ETTRModel",
    "IngestError",
    "IngestResult",
    "InsufficientDataError",
    "InvalidParameterError",
    "MTBFBounds",
    "RelkitError",
    "RelkitWarning",
    "SchemaError",
    "Store",
    "__version__",
    "build_exposure",
    "build_first_failure_table",
    "build_tbf_table",
    "checkpoint_intervals",
    "checkpoint_plan_by_system",
    "daly_interval_h",
    "ettr_curve",
    "ettr_model",
    "exact_interval_h",
    "expected_ettr",
    "failure_rate_bounds",
    "first_failure_survival",
    "fit_lifetime_models",
    "fit_lifetimes",
    "kaplan_meier",
    "mtbf",
    "mtbf_bounds",
    "mtbf_by",
    "mttf_at_scale_h",
    "observation_end",
    "read_file",
    "read_files",
    "survival_by",
    "young_interval_h",
]
