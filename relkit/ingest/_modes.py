"""Failure modes of normalised events files: taxonomy modes and declared ones.

A normalised events file may name any failure mode. A mode of the taxonomy
(:data:`relkit.taxonomy.FAILURE_MODES`) keeps the taxonomy's category and
counts-as-failure; any other mode takes them from the file's optional
``category`` and ``counts_as_failure`` columns (default ``unknown`` and True)
and is recorded in the store's ``failure_modes`` table with the
``declared_source_id`` of the file that introduced it, so analysis joins one
table for every mode. One mode has one category and one counts-as-failure
value in a store: rows that disagree with an earlier line of the file or with
another file are rejected with a reason naming both.
"""

import json
from pathlib import Path

import polars as pl

from relkit.store import Store
from relkit.taxonomy import CATEGORIES, FAILURE_MODES

_TRUE = ("true", "t", "yes", "y", "1")
_FALSE = ("false", "f", "no", "n", "0")

#: Flag of an event whose file stated another category or counts_as_failure for
#: a taxonomy mode than the taxonomy's (the taxonomy's is used).
FLAG_TAXONOMY = "category_from_taxonomy"


def mode_columns(frame: pl.DataFrame) -> pl.DataFrame:
    """Add ``mode`` (stripped, lower case), ``cat`` and ``caf`` (parsed columns).

    ``cat`` is the stated category in lower case (null if empty), ``caf`` the
    stated counts_as_failure as a boolean (null if empty or not a boolean).
    """
    caf = pl.col("counts_as_failure").str.to_lowercase()
    return frame.with_columns(
        mode=pl.col("failure_mode").str.strip_chars().str.to_lowercase(),
        cat=pl.col("category").str.strip_chars().str.to_lowercase(),
        caf=pl.when(caf.is_in(_TRUE))
        .then(pl.lit(value=True))
        .when(caf.is_in(_FALSE))
        .then(pl.lit(value=False)),
    )


def value_reasons() -> list[pl.Expr]:
    """Reasons for a ``category`` or ``counts_as_failure`` value that is no value."""
    allowed = ", ".join(CATEGORIES)
    return [
        pl.when(pl.col("cat").is_not_null() & ~pl.col("cat").is_in(CATEGORIES)).then(
            pl.format(f"category '{{}}' is not one of {allowed}", pl.col("category"))
        ),
        pl.when(
            pl.col("counts_as_failure").is_not_null() & pl.col("caf").is_null()
        ).then(
            pl.format(
                "counts_as_failure must be true or false (or yes/no, 1/0); found '{}'",
                pl.col("counts_as_failure"),
            )
        ),
    ]


def _declared(store: Store, path: Path, *, replace: bool) -> pl.DataFrame:
    """Modes other files declared: ``mode, s_cat, s_caf, s_where``.

    With ``replace``, the declarations of earlier sources of the same path are
    left out (their rows are about to be dropped).
    """
    modes = store.table("failure_modes").filter(
        pl.col("declared_source_id").is_not_null()
    )
    sources = store.table("sources").select("source_id", "path", "options")
    resolved = str(path.resolve())
    same = [
        sid
        for sid, p, opts in sources.rows()
        if replace
        and (json.loads(opts or "{}").get("resolved_path") or str(Path(p).resolve()))
        == resolved
    ]
    return (
        modes.filter(~pl.col("declared_source_id").is_in(same))
        .join(
            sources.select("source_id", "path"),
            left_on="declared_source_id",
            right_on="source_id",
            how="left",
        )
        .select(
            mode="failure_mode",
            s_cat="category",
            s_caf="counts_as_failure",
            s_where=pl.format("source {} ({})", "declared_source_id", "path"),
        )
    )


def settle_modes(
    store: Store, path: Path, good: pl.DataFrame, *, replace: bool
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame]:
    """Give each good row its mode's category; split off rows that disagree.

    Parameters
    ----------
    store : Store
        The store the file goes to (its ``failure_modes`` and ``sources``).
    path : Path
        The file (to leave out its own earlier declarations under ``replace``).
    good : pl.DataFrame
        Rows that passed the other checks, with ``line_no, mode, cat, caf``.
    replace : bool
        The read replaces earlier sources of the same path.

    Returns
    -------
    tuple of pl.DataFrame
        ``(kept, disagreeing, new_modes)``: the columns of ``good`` plus
        ``mode_flag`` (:data:`FLAG_TAXONOMY` or null) and ``reason`` (null for
        kept rows; for the rows whose stated category or counts_as_failure
        disagrees with the mode's, why); and the ``failure_modes`` rows of the
        modes this file introduces.
    """
    tax = FAILURE_MODES.select(
        mode="failure_mode", t_cat="category", t_caf="counts_as_failure"
    )
    ordered = good.sort("line_no")
    first = ordered.group_by("mode", maintain_order=True).agg(
        f_cat=pl.col("cat").drop_nulls().first(),
        f_cat_line=pl.col("line_no").filter(pl.col("cat").is_not_null()).first(),
        f_caf=pl.col("caf").drop_nulls().first(),
        f_caf_line=pl.col("line_no").filter(pl.col("caf").is_not_null()).first(),
    )
    rows = (
        ordered.join(tax, on="mode", how="left", maintain_order="left")
        .join(first, on="mode", how="left", maintain_order="left")
        .join(
            _declared(store, path, replace=replace),
            on="mode",
            how="left",
            maintain_order="left",
        )
    )
    in_tax = pl.col("t_cat").is_not_null()
    in_store = pl.col("s_where").is_not_null()
    in_file = "; a mode has one {0} in a file: make the file's rows agree"
    across = (
        "; a mode has one {0} in a store: make the files agree (re-read the other "
        "with --replace to change it)"
    )

    def clash(col: str, what: str, *, stored: bool) -> pl.Expr:
        s_col, f_col = ("s_" + col, "f_" + col)
        where = "in {}" if stored else "on line {}"
        other = pl.col(s_col) if stored else pl.col(f_col)
        stated = (
            pl.col(col).is_not_null() & ~in_tax & (in_store if stored else ~in_store)
        )
        fix = (across if stored else in_file).format(what)
        return pl.when(stated & (pl.col(col) != other)).then(
            pl.format(
                f"failure_mode '{{}}' has {what} '{{}}' here but '{{}}' {where}{fix}",
                "mode",
                col,
                other,
                "s_where" if stored else f"{f_col}_line",
            )
        )

    reason = pl.concat_str(
        [
            clash("cat", "category", stored=True),
            clash("cat", "category", stored=False),
            clash("caf", "counts_as_failure", stored=True),
            clash("caf", "counts_as_failure", stored=False),
        ],
        separator="; ",
        ignore_nulls=True,
    )
    rows = rows.with_columns(
        reason=pl.when(reason != "").then(reason),
        mode_flag=pl.when(
            in_tax
            & (
                (pl.col("cat").is_not_null() & (pl.col("cat") != pl.col("t_cat")))
                | (pl.col("caf").is_not_null() & (pl.col("caf") != pl.col("t_caf")))
            )
        ).then(pl.lit(FLAG_TAXONOMY)),
    )
    kept = rows.filter(pl.col("reason").is_null())
    bad = rows.filter(pl.col("reason").is_not_null())
    new = (
        kept.filter(~in_tax & ~in_store)
        .group_by("mode", maintain_order=True)
        .agg(pl.col("f_cat").first(), pl.col("f_caf").first())
        .select(
            failure_mode="mode",
            component=pl.lit(None, dtype=pl.String),
            category=pl.col("f_cat").fill_null("unknown"),
            counts_as_failure=pl.col("f_caf").fill_null(value=True),
            llama3_row=pl.lit(None, dtype=pl.String),
            description=pl.when(pl.col("f_cat").is_null())
            .then(
                pl.lit("not in the relkit taxonomy; the events file gives no category")
            )
            .otherwise(
                pl.lit("not in the relkit taxonomy; category from the events file")
            ),
        )
    )
    drop = [c for c in rows.columns if c not in good.columns and c != "mode_flag"]
    return kept.drop(drop), bad.drop(drop), new
