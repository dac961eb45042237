"""Hazard-ratio forest chart: one row per covariate level, ratio and interval."""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import polars as pl

from relkit.charts._theme import chart_title, check_rows
from relkit.errors import InsufficientDataError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["hazard_ratio_forest_chart"]

#: Columns every hazard-ratio frame has (relkit.survival.HazardModel).
_REQUIRED = [
    "covariate",
    "level",
    "reference",
    "hazard_ratio",
    "lower",
    "upper",
    "p_value",
    "n_units",
    "n_events",
    "status",
]
#: Columns the Weibull AFT frame adds; shown in the tooltip when present.
_TIME_RATIO = ["time_ratio", "time_ratio_lower", "time_ratio_upper"]
_NO_RATIO_COLOUR = "#e45756"
_RATIO_COLOUR = "#4c78a8"


def _no_ratio_label(status: str | None) -> str:
    """Short text drawn on a row whose ratio has no finite estimate."""
    text = (status or "").strip()
    if text.startswith("separation:"):
        if text.endswith("has no failures"):
            return "separated: no failures (HR → 0), no ratio"
        if text.endswith("has only failures"):
            return "separated: only failures (HR → ∞), no ratio"
        return "separated: no ratio"
    if text.startswith("quasi-separation (joint)"):
        return "quasi-separated (joint): no finite ratio"
    if text.startswith("quasi-separation"):
        return "quasi-separated: monotone likelihood, no ratio"
    if not text or text == "ok":
        return "no estimate (ratio is null)"
    head = text.split(":", 1)[0].strip()
    return f"{head}: no ratio"


def _level_key(level: str | None) -> tuple[int, float, str]:
    """Sort levels naturally: numbers by value (2 before 10), then text."""
    if level is None:
        return (0, 0.0, "")
    if re.fullmatch(r"[+-]?\d+(\.\d+)?", level):
        return (1, float(level), level)
    return (2, 0.0, level)


def _row_label(covariate: str, level: str | None, reference: str | None) -> str:
    if level is None:  # a numeric covariate: one ratio per unit of the column
        return f"per unit of {covariate}"
    if reference is None:
        return str(level)
    return f"{level} vs {reference}"


def hazard_ratio_forest_chart(
    hazard_ratios: pl.DataFrame, *, title: str | None = None
) -> alt.FacetChart:
    r"""Draw a forest plot of hazard ratios with their intervals on a log axis.

    One row per (covariate, level): a point at the hazard ratio and a
    horizontal line from ``lower`` to ``upper``, with a dashed vertical rule at
    HR = 1 (no difference from the reference level). Rows are grouped by
    covariate (one panel each, headed by the covariate's name, in the frame's
    order) and labelled with the reference level named, e.g. ``"b2 vs b1"``; a
    numeric covariate's row reads ``"per unit of <column>"``. Within a panel
    levels are in natural order (``2`` before ``10``).

    A level whose ratio has no finite estimate (``status`` not ``"ok"``:
    separation, quasi-separation, or a null ratio) is not dropped: its row is
    kept and carries a red text instead of a point, e.g. ``"separated: only
    failures (HR → ∞), no ratio"``. The tooltip shows the ratio, its interval,
    the p-value, ``n_units``, ``n_events`` and the full ``status``.

    Parameters
    ----------
    hazard_ratios : pl.DataFrame
        The ``hazard_ratios`` frame of :func:`relkit.survival.cox_hazards`,
        :func:`relkit.survival.weibull_aft` or
        :func:`relkit.answers.hazards_by`: one row per (covariate, level) with
        ``covariate`` (text), ``level``, ``reference`` (text; null for a
        numeric covariate), ``hazard_ratio``, ``lower``, ``upper`` (ratios
        > 0, null when not estimated), ``p_value``, ``n_units``, ``n_events``
        (counts) and ``status`` (``"ok"`` or why there is no ratio). The
        Weibull AFT frame's ``time_ratio``, ``time_ratio_lower`` and
        ``time_ratio_upper`` are shown in the tooltip when present; the x axis
        is always the hazard ratio (the AFT's :math:`TR^{-\rho}`). At most
        5,000 rows.
    title : str, optional
        Chart title.

    Returns
    -------
    altair.FacetChart
        A layer of four marks faceted by ``covariate`` (rows, independent y
        scales): the rule at HR = 1, the interval (``lower`` to ``upper``),
        the point (``hazard_ratio``) and the text of rows without a ratio. x
        is "Hazard ratio against the reference (log scale)" on a log scale
        whose domain always spans at least 0.5 to 2, y the row label.
        Dataset columns: the input's, plus ``row_label``, ``has_ratio``
        (bool) and ``no_ratio_label`` (text, null where a ratio is drawn).

    Raises
    ------
    SchemaError
        If a required column is missing, a (covariate, level) pair repeats, a
        drawn ratio or bound is not finite and > 0, ``lower`` > ``upper``, or
        the frame has over 5,000 rows.
    InsufficientDataError
        If the frame has no rows.

    Notes
    -----
    The ratios are drawn as given. For Cox's model a level's ratio is
    :math:`e^{\hat\beta}` with the Wald interval
    :math:`e^{\hat\beta \pm z\,\mathrm{se}}` (Cox 1972,
    doi:10.1111/j.2517-6161.1972.tb00899.x); a log axis makes the interval
    symmetric about the point and ratios 2 and 1/2 equally far from 1. A
    separated level's likelihood has no maximum (Heinze & Schemper 2001,
    doi:10.1111/j.0006-341X.2001.00114.x), so no point can be drawn.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame(
    ...     {
    ...         "covariate": ["batch", "rack"],
    ...         "level": ["b2", "r2"],
    ...         "reference": ["b1", "r1"],
    ...         "hazard_ratio": [2.94, None],
    ...         "lower": [1.82, None],
    ...         "upper": [4.74, None],
    ...         "p_value": [1.1e-5, None],
    ...         "n_units": [256, 4],
    ...         "n_events": [60, 4],
    ...         "status": ["ok", "separation: level r2 has only failures"],
    ...     }
    ... )
    >>> spec = hazard_ratio_forest_chart(frame).to_dict()
    >>> [
    ...     (r["row_label"], r["no_ratio_label"])
    ...     for r in spec["datasets"][spec["data"]["name"]]
    ... ]
    [('b2 vs b1', None), ('r2 vs r1', 'separated: only failures (HR → ∞), no ratio')]
    >>> spec["spec"]["layer"][2]["encoding"]["x"]["scale"]["type"]
    'log'
    """
    import altair as alt

    where = "hazard_ratio_forest_chart"
    require_columns(hazard_ratios, _REQUIRED, where=where)
    check_rows(
        hazard_ratios,
        where=where,
        fix="Fit fewer levels, e.g. lump rare levels into 'other' before the fit, "
        "or draw one covariate: frame.filter(covariate='rack').",
    )
    if hazard_ratios.height == 0:
        msg = (
            f"{where}: the hazard-ratio frame has no rows; nothing to draw. Fit "
            "covariates that vary between units, e.g. cox_hazards(table, "
            "covariates=['rack'])."
        )
        raise InsufficientDataError(msg)
    extra = [c for c in _TIME_RATIO if c in hazard_ratios.columns]
    data = hazard_ratios.select(_REQUIRED + extra).with_columns(
        pl.col("covariate", "level", "reference", "status").cast(pl.String),
        pl.col("hazard_ratio", "lower", "upper", "p_value", *extra).cast(pl.Float64),
        pl.col("n_units", "n_events").cast(pl.Int64),
    )
    pairs = data.select("covariate", "level")
    if dups := pairs.filter(pairs.is_duplicated()).unique(maintain_order=True).rows():
        msg = (
            f"{where}: each (covariate, level) must appear once; repeated: "
            f"{dups[:5]}. Draw one model's hazard_ratios frame at a time."
        )
        raise SchemaError(msg)
    rows = data.to_dicts()
    for row in rows:
        ok = row["status"] == "ok" and row["hazard_ratio"] is not None
        row["has_ratio"] = ok
        row["no_ratio_label"] = None if ok else _no_ratio_label(row["status"])
        row["row_label"] = _row_label(row["covariate"], row["level"], row["reference"])
        if not ok:
            continue
        bad = {
            c: row[c]
            for c in ("hazard_ratio", "lower", "upper")
            if row[c] is not None and not (math.isfinite(row[c]) and row[c] > 0)
        }
        if bad:
            msg = (
                f"{where}: {row['covariate']} {row['row_label']!r} has {bad}; "
                "ratios on a log axis must be finite and > 0 (set status to say "
                "why there is no ratio, and the ratio to null)."
            )
            raise SchemaError(msg)
        lo, hi = row["lower"], row["upper"]
        if lo is not None and hi is not None and lo > hi:
            msg = (
                f"{where}: {row['covariate']} {row['row_label']!r} has lower "
                f"{lo:.4g} > upper {hi:.4g}; pass the interval's bounds in order."
            )
            raise SchemaError(msg)
    covariates = list(dict.fromkeys(r["covariate"] for r in rows))
    rows.sort(key=lambda r: (covariates.index(r["covariate"]), _level_key(r["level"])))
    schema = {
        **data.schema,
        "has_ratio": pl.Boolean,
        "no_ratio_label": pl.String,
        "row_label": pl.String,
    }
    frame = pl.DataFrame(rows, schema=schema, orient="row")
    y = alt.Y("row_label:N").sort(None).title(None)
    x_title = "Hazard ratio against the reference (log scale)"
    # the domain always spans 0.5..2, so a chart of separated rows alone has width
    x_scale = alt.Scale(type="log", domain={"unionWith": [0.5, 2.0]})
    tooltip = [
        alt.Tooltip("covariate:N"),
        alt.Tooltip("row_label:N").title("level"),
        alt.Tooltip("hazard_ratio:Q").format(".3g").title("hazard ratio"),
        alt.Tooltip("lower:Q").format(".3g"),
        alt.Tooltip("upper:Q").format(".3g"),
        alt.Tooltip("p_value:Q").format(".2g").title("p-value"),
        alt.Tooltip("n_units:Q").format(",").title("units"),
        alt.Tooltip("n_events:Q").format(",").title("failures"),
        *(
            alt.Tooltip(f"{c}:Q").format(".3g").title(c.replace("_", " "))
            for c in extra
        ),
        alt.Tooltip("status:N"),
    ]
    base = alt.Chart()
    estimated = base.transform_filter(alt.datum.has_ratio)
    reference_rule = base.mark_rule(
        color="#888888", strokeDash=[4, 4], strokeWidth=1
    ).encode(x=alt.datum(1.0, scale=x_scale))
    interval = estimated.mark_rule(strokeWidth=2, color=_RATIO_COLOUR).encode(
        x=alt.X("lower:Q").scale(x_scale).title(x_title),
        x2="upper:Q",
        y=y,
        tooltip=tooltip,
    )
    points = estimated.mark_point(
        filled=True, size=70, opacity=1, color=_RATIO_COLOUR
    ).encode(
        x=alt.X("hazard_ratio:Q").scale(x_scale).title(x_title),
        y=y,
        tooltip=tooltip,
    )
    no_ratio = (
        base.transform_filter(~alt.datum.has_ratio)
        .mark_text(align="left", dx=6, color=_NO_RATIO_COLOUR, fontStyle="italic")
        .encode(
            x=alt.datum(1.0, scale=x_scale),
            y=y,
            text=alt.Text("no_ratio_label:N"),
            tooltip=tooltip,
        )
    )
    row_header = (
        alt.Row("covariate:N")
        .sort(covariates)
        .title(None)
        .header(labelAngle=0, labelAlign="left", labelFontWeight="bold")
    )
    return (
        alt.layer(reference_rule, interval, points, no_ratio, data=frame)
        .facet(row=row_header, title=chart_title(title))
        .resolve_scale(y="independent")
    )
