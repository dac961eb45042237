"""relkit: reliability answers from GPU cluster failure and job logs."""

from relkit.errors import (
    CensoringWarning,
    ConvergenceError,
    IngestError,
    InsufficientDataError,
    RelkitError,
    RelkitWarning,
    SchemaError,
)
from relkit.store import Store

__version__ = "0.1.0"

__all__ = [
    "CensoringWarning",
    "ConvergenceError",
    "IngestError",
    "InsufficientDataError",
    "RelkitError",
    "RelkitWarning",
    "SchemaError",
    "Store",
    "__version__",
]
