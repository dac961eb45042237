"""Helpers shared by the modules of :mod:`relkit.survival` (not public API)."""

from collections.abc import Sequence
from typing import Literal

import polars as pl

from relkit.errors import SchemaError
from relkit.schema import require_columns
from relkit.survival._tables import validate_survival_table

#: Largest number of curve rows returned by default (evenly thinned beyond it).
MAX_ROWS = 5000


def check_confidence(confidence: float, where: str) -> float:
    """Return ``alpha = 1 - confidence``; refuse a level outside (0, 1)."""
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        msg = f"{where}: confidence must be in (0, 1), found {confidence!r}; e.g. 0.95."
        raise SchemaError(msg)
    return 1.0 - float(confidence)


def prepare(
    table: pl.DataFrame,
    by: Sequence[str],
    invalid: Literal["raise", "drop"],
    where: str,
) -> pl.DataFrame:
    """Check the ``by`` columns and validate the survival table's spells."""
    require_columns(table, list(by), where=where)
    return validate_survival_table(table, invalid=invalid, where=where)
