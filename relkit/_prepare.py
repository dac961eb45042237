"""Shared preparation of store tables for the analyses (private).

The store keeps ``failure_mode`` as ``"<root_cause>/<sub_cause>"``; analyses group
by either part, and by unit attributes (``system``, ``host``) that live on assets.
"""

from collections.abc import Sequence

import polars as pl

from relkit.errors import SchemaError

#: Columns an MTBF or survival grouping may use, and where each one lives.
FAILURE_ATTRIBUTES = ("failure_mode", "root_cause", "sub_cause", "code", "severity")
UNIT_ATTRIBUTES = ("system", "host", "device")


def with_cause_columns(events: pl.DataFrame) -> pl.DataFrame:
    """Add ``root_cause``, ``sub_cause`` and ``repair_h`` to an events frame."""
    parts = pl.col("failure_mode").str.split_exact("/", 1)
    return events.with_columns(
        root_cause=parts.struct.field("field_0"),
        sub_cause=pl.coalesce(
            parts.struct.field("field_1"), parts.struct.field("field_0")
        ),
        repair_h=pl.col("repair_s") / 3600.0,
    )


def split_by(by: Sequence[str]) -> tuple[list[str], list[str]]:
    """Split grouping columns into unit attributes and failure attributes.

    Raises
    ------
    SchemaError
        If a column is neither.
    """
    unknown = [c for c in by if c not in FAILURE_ATTRIBUTES + UNIT_ATTRIBUTES]
    if unknown:
        msg = (
            f"cannot group by {unknown}: choose from unit attributes "
            f"{list(UNIT_ATTRIBUTES)} or failure attributes "
            f"{list(FAILURE_ATTRIBUTES)}, "
            "e.g. --by system,root_cause"
        )
        raise SchemaError(msg)
    return [c for c in by if c in UNIT_ATTRIBUTES], [
        c for c in by if c in FAILURE_ATTRIBUTES
    ]
