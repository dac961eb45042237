"""Read published interruption tables (e.g. Llama 3 Table 5) as typed-in CSV.

These tables are small and checked, not stored: :func:`read_paper_table`
returns a polars frame for :func:`relkit.published.check_table`.
"""

from pathlib import Path

import polars as pl

from relkit.errors import IngestError
from relkit.ingest._common import check_file, file_format, read_csv_strings

__all__ = ["PAPER_TABLE_COLUMNS", "read_cluster_summary", "read_paper_table"]

#: Column -> accepted header names (lower case), first the canonical one.
PAPER_TABLE_COLUMNS: dict[str, tuple[str, ...]] = {
    "component": ("component", "root_cause", "cause"),
    "category": ("category",),
    "interruption_count": ("interruption_count", "interruptions", "count"),
    "pct_printed": ("pct_of_interruptions_as_printed", "pct_printed", "pct"),
}


def read_paper_table(path: str | Path) -> pl.DataFrame:
    r"""Read a published root-cause table (component, category, count, printed %).

    Parameters
    ----------
    path : str or Path
        CSV with a header naming ``component``, ``category``,
        ``interruption_count`` and the printed percentage
        ``pct_of_interruptions_as_printed`` (also accepted: ``interruptions``
        or ``count``; ``pct_printed`` or ``pct``), one row per table row, as in
        ``datasets/paper-tables/llama3_table5_unexpected_interruptions.csv``.

    Returns
    -------
    pl.DataFrame
        Columns ``line_no`` (Int64), ``component``, ``category`` (String),
        ``interruption_count`` (Int64) and ``pct_printed`` (Float64, percent as
        printed, null where the table prints none), in file order.

    Raises
    ------
    IngestError
        If the file is missing or not a CSV, a column is missing, or a count is
        not a whole number >= 0 or a percentage not a number (the message names
        the line).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "t.csv"
    >>> _ = f.write_text(
    ...     "component,category,interruptions,pct\nGPU,GPU,3,75\nNIC,Host,1,25\n"
    ... )
    >>> read_paper_table(f).rows()
    [(2, 'GPU', 'GPU', 3, 75.0), (3, 'NIC', 'Host', 1, 25.0)]
    """
    p = check_file(path)
    if (fmt := file_format(p)) != "text":
        msg = f"expected a CSV text file, found {fmt}."
        raise IngestError(path, msg)
    table = read_csv_strings(p)
    lower = [c.strip().lower() for c in table.columns]
    rename: dict[str, str] = {}
    for col, names in PAPER_TABLE_COLUMNS.items():
        hit = next((n for n in names if n in lower), None)
        if hit is None:
            msg = (
                f"no {col!r} column (accepted: {list(names)}); found {table.columns}. "
                "Expected component, category, interruption_count, "
                "pct_of_interruptions_as_printed."
            )
            raise IngestError(path, msg, line_no=1)
        rename[f"c{lower.index(hit)}"] = col
    frame = table.frame.rename(rename).select(
        "line_no", *[pl.col(c).str.strip_chars() for c in PAPER_TABLE_COLUMNS]
    )
    count = pl.col("interruption_count").cast(pl.Int64, strict=False)
    pct = pl.col("pct_printed").str.strip_suffix("%").cast(pl.Float64, strict=False)
    checked = frame.with_columns(_count=count, _pct=pct)
    bad = checked.filter(
        pl.col("_count").is_null()
        | (pl.col("_count") < 0)
        | (pl.col("pct_printed").is_not_null() & pl.col("_pct").is_null())
        | pl.col("component").is_null()
    )
    if bad.height:
        line, comp, raw_count, raw_pct = bad.select(
            "line_no", "component", "interruption_count", "pct_printed"
        ).row(0)
        msg = (
            f"row {comp!r}: interruption_count {raw_count!r} must be a whole number "
            f">= 0 and the printed percentage {raw_pct!r} a number (or empty); "
            "the component must not be empty."
        )
        raise IngestError(path, msg, line_no=line)
    return checked.select(
        "line_no",
        "component",
        "category",
        interruption_count="_count",
        pct_printed="_pct",
    )


def read_cluster_summary(path: str | Path) -> pl.DataFrame:
    """Read a cluster summary table (AcmeTrace ``cluster_summary.csv``) as text.

    Parameters
    ----------
    path : str or Path
        CSV with a header line, e.g. ``relkit.datasets.path("acmetrace")``.

    Returns
    -------
    pl.DataFrame
        Every column as String (no type guessing; empty cells null), in file
        order; :func:`relkit.published.acmetrace_failure_share` casts what it
        uses.

    Raises
    ------
    IngestError
        If the file is missing or not a CSV text file.

    Examples
    --------
    >>> import relkit
    >>> read_cluster_summary(relkit.datasets.path("acmetrace"))["id"].to_list()
    ['Seren', 'Kalos', 'Philly', 'Helios', 'PAI']
    """
    p = check_file(path)
    if (fmt := file_format(p)) != "text":
        msg = f"expected a CSV text file, found {fmt}."
        raise IngestError(path, msg)
    table = read_csv_strings(p)
    return table.frame.rename(
        {f"c{i}": name for i, name in enumerate(table.columns)}
    ).select(table.columns)
