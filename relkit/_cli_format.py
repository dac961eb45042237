"""How the ``relkit`` command writes a result: a table for reading, JSON/CSV in full.

The table is for a person (issue 14 §4): numbers rounded to what a reader uses
(a 4,543,944 h exposure shows no decimals, a 2.07 h repair time two), thousands
separators, no column that is empty in every row, and system or host ids in
natural order (``2`` before ``10``). JSON and CSV keep every digit and write a
timestamp the same way, ISO 8601 in UTC (``2024-03-04T11:27:16Z``).
"""

from __future__ import annotations

import math
import re
from datetime import UTC, datetime

import polars as pl

from relkit.display import natural_key

__all__ = [
    "ID_COLUMNS",
    "instant_text",
    "is_probability_column",
    "machine_frame",
    "natural_order",
    "natural_ties",
    "probability_text",
    "rate_unit_warning",
    "reading_frame",
    "reading_value",
    "with_confidence",
]

#: Columns holding system, host or unit names: sorted naturally (``gpu2`` before
#: ``gpu10``) where a result was ordered by them.
ID_COLUMNS = frozenset(
    {
        "system",
        "host",
        "hostname",
        "node",
        "unit_id",
        "device",
        "rack",
        "host_id",
        "level",
    }
)

#: Significant digits a table shows of a column's typical value.
_DIGITS = 4
#: Most decimals a table shows (a smaller typical value is shown as 1.2e-05).
_MAX_DECIMALS = 6
#: Smallest size written with a decimal point; smaller values in exponent form.
_SMALLEST_FIXED = 1e-4
#: Most places written before a value goes to exponent form.
_MOST_DECIMALS = 12
#: Name endings of integer columns that are amounts (thousands separators);
#: other integers (ids, years, line numbers, codes) are printed as they are.
_AMOUNT_SUFFIXES = ("_h", "_s", "_days", "_gpus", "_bytes", "_lines")


def instant_text(value: datetime) -> str:
    """Write a time as ISO 8601 in UTC, as the CSV and JSON outputs do.

    Parameters
    ----------
    value : datetime
        A time; with a zone it is converted to UTC and ends in ``Z``, without one
        it is written as it is.

    Returns
    -------
    str
        ``2024-03-04T11:27:16Z``; fractions of a second in groups of three
        digits, only when there are any (``...16.450Z``), as polars'
        ``%.f`` writes them.
    """
    zone = ""
    if value.tzinfo is not None:
        value, zone = value.astimezone(UTC), "Z"
    text = value.strftime("%Y-%m-%dT%H:%M:%S")
    if value.microsecond:
        digits = 3 if value.microsecond % 1000 == 0 else 6
        text += f".{value.microsecond:06d}"[: digits + 1]
    return text + zone


def _instant_expr(name: str, dtype: pl.Datetime) -> pl.Expr:
    col = pl.col(name)
    if dtype.time_zone is not None:
        return col.dt.convert_time_zone("UTC").dt.strftime("%Y-%m-%dT%H:%M:%S%.fZ")
    return col.dt.strftime("%Y-%m-%dT%H:%M:%S%.f")


def natural_order(frame: pl.DataFrame) -> pl.DataFrame:
    """Reorder rows ordered by a text id column so that its numbers sort by value.

    A frame in text order of its first one to three columns, one of them an id
    column of text (:data:`ID_COLUMNS`: system, host, ...), is sorted again by
    the same columns with the ids in natural order, stably (rows with the same
    keys keep their order). Any other frame keeps its order (events by time,
    lemons by rank), and a time or mode column before the id stays first.

    Parameters
    ----------
    frame : polars.DataFrame
        A result.

    Returns
    -------
    polars.DataFrame
        The same rows, ids in natural order (``2`` before ``10``) within the
        leading columns they were sorted by.
    """
    if frame.height < 2:
        return frame
    keys: list[str] = []
    for name in frame.columns[:4]:
        if frame.schema[name].is_nested():
            break
        keys.append(name)
    ids = [k for k in keys if k in ID_COLUMNS and frame.schema[k] == pl.String]
    while ids and not _sorted_by(frame, keys):
        keys.pop()  # the longest prefix the frame is in text order of
        ids = [k for k in ids if k in keys]
    if not ids:
        return frame
    ranks = []
    for name in keys:
        if name not in ids:
            ranks.append(pl.col(name))
            continue
        values = frame[name].unique().to_list()
        rank = {v: i for i, v in enumerate(sorted(values, key=natural_key))}
        ranks.append(
            pl.col(name).replace_strict(rank, default=None, return_dtype=pl.UInt32)
        )
    return frame.sort(ranks, nulls_last=True, maintain_order=True)


def _sorted_by(frame: pl.DataFrame, keys: list[str]) -> bool:
    head = frame.select(keys)
    return head.equals(head.sort(keys, nulls_last=True, maintain_order=True))


def machine_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """Write a frame's times as ISO 8601 text in UTC, for CSV and JSON alike.

    Parameters
    ----------
    frame : polars.DataFrame
        A result; ``Datetime`` columns are converted, others kept in full.

    Returns
    -------
    polars.DataFrame
        The frame with each time as ``2024-03-04T11:27:16Z`` (see
        :func:`instant_text`).
    """
    times = {n: t for n, t in frame.schema.items() if isinstance(t, pl.Datetime)}
    if not times:
        return frame
    return frame.with_columns(_instant_expr(n, t).alias(n) for n, t in times.items())


def _is_amount(name: str) -> bool:
    return (
        name.startswith(("n_", "gpus"))
        or name.endswith(_AMOUNT_SUFFIXES)
        or name in ("nodes", "count", "interruptions")
    )


def _typical(column: pl.Series) -> float | None:
    """Return the median size of a column's non-zero finite values, or None.

    Of an even count, the upper middle one.
    """
    sizes = column.filter(column.is_finite() & (column != 0)).abs().sort()
    return None if sizes.len() == 0 else float(sizes[sizes.len() // 2])


def _decimals(typical: float | None, values: list[float]) -> int | None:
    """Decimals for a column: four significant digits of its typical size.

    Fewer where the last places are 0 in every row shown (``values``); None
    where the typical value is below 10**-6, shown in exponent form instead.
    """
    if typical is None:
        return 0
    decimals = _DIGITS - 1 - math.floor(math.log10(typical))
    if decimals > _MAX_DECIMALS:
        return None
    decimals = max(decimals, 0)
    finite = [v for v in values if math.isfinite(v)]
    # places that are 0 in every row say nothing (a level of 0.95, not 0.9500)
    while decimals > 0 and all(f"{v:.{decimals}f}".endswith("0") for v in finite):
        decimals -= 1
    return decimals


def reading_value(value: float, decimals: int | None) -> str:
    """Write one number for reading: thousands separators, ``decimals`` places.

    A non-zero value is never written as 0 and a value that is not whole never
    as a rounded whole number (``1.0000`` for 0.9999974): where ``decimals``
    would show fewer than three significant digits, or only zeros after the
    point, the value gets the places it needs (``0.0282``, ``0.999997``), or
    exponent form below 1e-4 (``2.82e-05``).

    Parameters
    ----------
    value : float
        The number; NaN and infinities are written ``nan``, ``inf``, ``-inf``.
    decimals : int or None
        Places after the point; None writes three significant digits
        (``1.23e-07``).

    Returns
    -------
    str
        E.g. ``4,543,945`` (0 places), ``2.07`` (2), ``0.9986`` (4).
    """
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "0"
    if decimals is None:
        return _exponent_text(value)
    magnitude = math.floor(math.log10(abs(value)))
    # places for three significant digits: 0.38 -> 0.380, 0.02817 -> 0.0282
    need = 2 - magnitude
    if need > decimals and float(f"{value:.{decimals}f}") != value:
        if abs(value) < _SMALLEST_FIXED:
            return _exponent_text(value)
        decimals = need
    text = f"{value:,.{decimals}f}"
    # 0.9999974 at four places reads 1.0000: add places until it is not whole
    while (
        decimals > 0
        and value != round(value)
        and float(text.replace(",", "")) == round(value)
    ):
        decimals += 1
        if decimals > _MOST_DECIMALS:
            return _exponent_text(value)
        text = f"{value:,.{decimals}f}"
    return text


def _exponent_text(value: float) -> str:
    """Three significant digits in exponent form: ``1.26e-138``."""
    return f"{value:.2e}"


def is_probability_column(name: str) -> bool:
    """Tell whether a column holds p-values or q-values (by its name).

    Parameters
    ----------
    name : str
        A column name: ``p_value``, ``laplace_p_value``, ``q_value``, ``p``.

    Returns
    -------
    bool
        True for ``p``, ``q`` and names ending in ``p_value``, ``q_value``,
        ``_p`` or ``_q``.
    """
    return name in ("p", "q") or name.endswith(("p_value", "q_value", "_p", "_q"))


def probability_text(value: float) -> str:
    """Write a p-value or q-value: three significant digits, exponent below 1e-4.

    Parameters
    ----------
    value : float
        A probability in [0, 1].

    Returns
    -------
    str
        ``0.000740``, ``0.0500``, ``1.26e-138``; ``<1e-300`` for a value that
        underflowed to exactly 0 (it is below the smallest double, not 0).
    """
    if not math.isfinite(value):
        return str(value)
    if value == 0:
        return "<1e-300"
    if value < _SMALLEST_FIXED:
        return _exponent_text(value)
    return f"{value:#.3g}"


def _bound_family(names: list[str]) -> dict[str, str]:
    """Map each confidence-bound column to the estimate it bounds.

    ``beta_lower``/``beta_upper`` belong to ``beta``, ``mtbf_lower_h`` to
    ``mtbf_h``, and bare ``lower``/``upper`` to the column just before the
    first of them (``cumulative_incidence``), so an estimate and its bounds are
    written with the same places.
    """
    family: dict[str, str] = {}
    for i, name in enumerate(names):
        if name in ("lower", "upper"):
            j = i - 1
            while j >= 0 and names[j] in ("lower", "upper"):
                j -= 1
            if j >= 0:
                family[name] = names[j]
            continue
        stem = re.sub(r"_(lower|upper)(_one_sided)?(?=_|$)", "", name)
        if stem != name and stem in names:
            family[name] = stem
    return family


def _number_texts(
    column: pl.Series, whole: pl.Series, shown: pl.Series | None = None
) -> list[str | None]:
    """Write the numbers of ``column``, the rows shown of ``whole``.

    ``whole`` may be the estimate a bound column belongs to (its typical size
    sets the places) and ``shown`` the estimate and its bounds stacked (a
    place is dropped only where all of them end in 0); ``shown`` defaults to
    ``column``.
    """
    values = column.to_list()
    if column.dtype.is_float():
        if is_probability_column(column.name):
            return [None if v is None else probability_text(v) for v in values]
        given = [
            v for v in (column if shown is None else shown).to_list() if v is not None
        ]
        decimals = _decimals(_typical(whole), given)
        return [None if v is None else reading_value(v, decimals) for v in values]
    amount = _is_amount(column.name)
    return [None if v is None else (f"{v:,}" if amount else str(v)) for v in values]


def _is_empty(column: pl.Series) -> bool:
    """All null, or (a list column) nothing but empty lists and nulls."""
    if column.null_count() == column.len():
        return True
    if isinstance(column.dtype, pl.List):
        return bool((column.list.len().fill_null(0) == 0).all())
    return False


def reading_frame(frame: pl.DataFrame, *, rows: int | None = None) -> pl.DataFrame:
    """Prepare a result for the table a person reads.

    Numbers become right-aligned text with thousands separators: a float column
    shows four significant digits of its typical (median) value, so hour
    counts in the thousands show none and fractions four; an integer column
    whose name says it is an amount (``n_*``, ``*_h``, ``*_s``) gets
    separators, other integers (ids, years) are left as they are. Times are
    shown in UTC to the second; a ``|`` in a text cell gets a backslash before it,
    as Markdown escapes it. A missing value is an empty cell, and a column
    empty in every row (null, or an empty list) is left out: it says nothing
    (``--format csv`` and ``json`` keep it).

    Parameters
    ----------
    frame : polars.DataFrame
        A result, full precision.
    rows : int, optional
        The rows the table shows (polars' ``tbl_rows``): a longer frame is
        written for its first and last ``rows // 2`` rows and one between
        (which polars prints as the ``…`` line), the decimals still chosen
        from every row. Default: every row.

    Returns
    -------
    polars.DataFrame
        The frame to print: text columns, list columns as they were.
    """
    if frame.height == 0:
        return frame
    dropped = [c.name for c in frame.get_columns() if _is_empty(c)]
    whole = frame.drop(dropped)
    shown = whole
    if rows is not None and whole.height > rows:
        half = rows // 2
        shown = pl.concat([whole.head(half), whole[half : half + 1], whole.tail(half)])
    family = _bound_family(shown.columns)
    columns = []
    for column in shown.get_columns():
        dtype = column.dtype
        if dtype.is_numeric() and dtype != pl.Boolean:
            key = family.get(column.name, column.name)
            members = [
                n
                for n in shown.columns
                if family.get(n, n) == key and shown.schema[n].is_float()
            ]
            if dtype.is_float() and len(members) > 1:
                texts = _number_texts(
                    column,
                    # the estimate's typical size sets the places of its bounds
                    whole[key] if key in members else whole[column.name],
                    pl.concat([shown[n].cast(pl.Float64) for n in members]),
                )
            else:
                texts = _number_texts(column, whole[column.name])
            # right-aligned under the name, as numbers are
            width = max([len(column.name), *(len(t) for t in texts if t is not None)])
            column = pl.Series(
                column.name,
                ["" if t is None else t.rjust(width) for t in texts],
                dtype=pl.String,
            )
        elif isinstance(dtype, pl.Datetime):
            suffix = "Z" if dtype.time_zone is not None else ""
            expr = pl.col(column.name)
            if dtype.time_zone is not None:
                expr = expr.dt.convert_time_zone("UTC")
            column = (
                shown.select(expr.dt.strftime(f"%Y-%m-%d %H:%M:%S{suffix}"))
                .to_series()
                .fill_null("")
            )
        elif isinstance(dtype, pl.List) and not dtype.inner.is_nested():
            # an empty list (a pending job's hosts) is a blank cell, not []
            column = column.cast(pl.List(pl.String)).list.join(", ")
            column = column.str.replace_all("|", r"\|", literal=True).fill_null("")
        elif dtype == pl.String:
            # a | inside a cell (survival's "max |KM - fitted S|") would end
            # the cell: escaped as Markdown does
            column = column.str.replace_all("|", r"\|", literal=True).fill_null("")
        columns.append(column)
    return pl.DataFrame(columns)


def with_confidence(frame: pl.DataFrame, level: float) -> pl.DataFrame:
    """Add a ``confidence`` column, the level of the frame's bounds.

    Parameters
    ----------
    frame : polars.DataFrame
        A result with ``lower``/``upper`` (or ``*_lower*``/``*_upper*``)
        columns.
    level : float
        The two-sided confidence level the bounds were computed at (0.95).

    Returns
    -------
    polars.DataFrame
        The frame with ``confidence`` just after its last bound column (at the
        end if it has none); unchanged if it already has one.
    """
    if "confidence" in frame.columns:
        return frame
    names = frame.columns
    bounds = [
        i for i, n in enumerate(names) if re.search(r"(^|_)(lower|upper)(_|$)", n)
    ]
    at = bounds[-1] + 1 if bounds else len(names)
    return frame.insert_column(
        at, pl.Series("confidence", [level] * frame.height, pl.Float64)
    )


#: Below this many failures per 1000 node-days (an MTBF above 55 years per
#: node) a rate given per 1000 node-days was most likely meant per node-day.
LOW_PER_1000_RATE = 0.05


def rate_unit_warning(
    rates_per_node_day: list[float] | None, *, per_1000: bool
) -> str | None:
    """Say when a node failure rate looks given in the other unit.

    Parameters
    ----------
    rates_per_node_day : list of float or None
        The rates given, converted to failures per node-day.
    per_1000 : bool
        True where they were given with ``--failures-per-1000-node-days``.

    Returns
    -------
    str or None
        A warning line: above 1 failure per node-day (per node-day option,
        most likely a per-1000 value) or below :data:`LOW_PER_1000_RATE` per
        1000 node-days (per-1000 option, most likely a per-node-day value);
        None where the rates look right. Kokolis et al. (2024,
        arXiv:2410.21680) report 6.50 per 1000 node-days.
    """
    if not rates_per_node_day:
        return None
    if per_1000:
        low = min(rates_per_node_day) * 1000.0
        if low <= 0 or low >= LOW_PER_1000_RATE:
            return None
        years = 1000.0 / low / 365.25
        return (
            f"warning: --failures-per-1000-node-days {low:g} is an MTBF of "
            f"{years:,.0f} years per node; it looks like a per-node-day rate. "
            "Kokolis et al.'s 6.50 per 1000 node-days is "
            "--failures-per-1000-node-days 6.5 (or --failure-rate 0.0065)."
        )
    high = max(rates_per_node_day)
    if high <= 1.0:
        return None
    return (
        f"warning: --failure-rate {high:g} is per node-day: more than one "
        "failure per node per day; it looks like a per-1000-node-days rate. "
        "Kokolis et al.'s 6.50 is per 1000 node-days, i.e. --failure-rate 0.0065 "
        "or --failures-per-1000-node-days 6.5."
    )


def natural_ties(frame: pl.DataFrame, rank: str) -> pl.DataFrame:
    """Order rows that tie on ``rank`` by their ids in natural order.

    Parameters
    ----------
    frame : polars.DataFrame
        A result ranked by ``rank`` (lemons by p-value), its ties in text order
        of the id columns (:data:`ID_COLUMNS`).
    rank : str
        The column the rows are ranked by; a run of equal values is a tie.

    Returns
    -------
    polars.DataFrame
        The same rows in the same rank order, each tie's rows in natural
        order of the id columns (``s12-n10`` after ``s12-n1``, before
        ``s12-n126``... by number: n1, n10, n43, n68, n126).
    """
    ids = [c for c in frame.columns if c in ID_COLUMNS and frame.schema[c] == pl.String]
    if frame.height < 2 or not ids or rank not in frame.columns:
        return frame
    group = (pl.col(rank).ne_missing(pl.col(rank).shift(1))).cum_sum()
    keys: list[pl.Expr] = [group]
    for name in ids:
        values = frame[name].unique().to_list()
        order = {v: i for i, v in enumerate(sorted(values, key=natural_key))}
        keys.append(
            pl.col(name).replace_strict(order, default=None, return_dtype=pl.UInt32)
        )
    return frame.sort(keys, nulls_last=True, maintain_order=True)
