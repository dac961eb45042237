"""Repairable-system charts: the mean cumulative function and the Crow-AMSAA plot."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import polars as pl

from relkit.charts._heatmap import natural_order
from relkit.charts._theme import MAX_ROWS, chart_title
from relkit.errors import InsufficientDataError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["crow_amsaa_chart", "mcf_chart"]

#: Points of each fitted power-law curve.
_FIT_POINTS = 60
_MISSING = "(missing)"


def _finite_or_null(*cols: str) -> list[pl.Expr]:
    """NaN and infinities become null (JSON has no NaN; Vega-Lite skips nulls)."""
    return [
        pl.when(pl.col(c).is_finite()).then(pl.col(c)).otherwise(None).alias(c)
        for c in cols
    ]


def _groups(
    frame: pl.DataFrame, color: str | None, known: list[str], where: str
) -> pl.DataFrame:
    """Refuse several curves without ``color``; cast the colour column to text."""
    if color is None:
        extra = [c for c in frame.columns if c not in known and frame[c].n_unique() > 1]
        if extra:
            msg = (
                f"{where}: the frame holds several curves (column(s) {extra} vary) "
                f"but color is None. Pass color={extra[0]!r}, or filter to one group."
            )
            raise SchemaError(msg)
        return frame
    return frame.with_columns(pl.col(color).cast(pl.String).fill_null(_MISSING))


def _thin_index(n: int, keep: int) -> np.ndarray:
    """About ``keep`` row positions of ``n``, evenly spaced, first and last kept."""
    if n <= keep:
        return np.arange(n)
    return np.unique(np.round(np.linspace(0, n - 1, keep)).astype(np.int64))


def _thin_log_index(times: np.ndarray, keep: int) -> np.ndarray:
    """About ``keep`` positions of sorted positive ``times``, evenly spaced in log."""
    n = times.size
    if n <= keep:
        return np.arange(n)
    grid = np.geomspace(times[0], times[-1], keep)
    idx = np.searchsorted(times, grid, side="right") - 1
    return np.unique(np.clip(np.r_[0, idx, n - 1], 0, n - 1))


def _thin(
    data: pl.DataFrame, color: str | None, budget: int, *, log: bool, where: str
) -> tuple[pl.DataFrame, str | None]:
    """Keep at most ``budget`` rows, split evenly between the groups; say so."""
    if data.height <= budget:
        return data, None
    parts = data.partition_by(color, maintain_order=True) if color else [data]
    per_group = budget // len(parts)
    if per_group < 2:
        msg = (
            f"{where}: {len(parts):,} groups cannot share {budget:,} drawn points "
            f"(Altair's limit is {MAX_ROWS:,} rows). Plot fewer groups, e.g. "
            f"frame.filter(pl.col({color!r}).is_in([...]))."
        )
        raise SchemaError(msg)
    kept = []
    for part in parts:
        times = part["time_h"].to_numpy()
        idx = (
            _thin_log_index(times, per_group)
            if log
            else _thin_index(part.height, per_group)
        )
        kept.append(part[idx])
    out = pl.concat(kept)
    note = (
        f"{out.height:,} of {data.height:,} points drawn (evenly spaced per "
        "group); the curve is exact at each drawn point"
    )
    return out, note


def mcf_chart(
    mcf: pl.DataFrame,
    *,
    color: str | None = None,
    title: str | None = None,
    max_points: int = MAX_ROWS,
) -> alt.LayerChart:
    r"""Draw the mean cumulative function of recurrent failures with its band.

    A step line of :math:`\hat M(t)`, the mean number of failures per unit by
    age :math:`t`, over a step area between its pointwise bounds, one colour
    per group. A line bending upward is a unit population failing faster
    with age; bending downward, slower (Nelson 2003, ch. 2).

    Parameters
    ----------
    mcf : pl.DataFrame
        Output of :func:`relkit.repairable.mean_cumulative_function` or
        :func:`relkit.answers.mcf_by`: ``time_h`` (age, h), ``mcf`` (failures
        per unit), ``lower`` and ``upper`` (its bounds), optionally
        ``n_at_risk`` (shown in the tooltip), plus the ``color`` column.
    color : str, optional
        Group column drawn as one curve and band per value (nominal colour;
        null shows as "(missing)").
    title : str, optional
        Chart title.
    max_points : int, optional
        Most points drawn (evenly thinned per group, first and last kept, the
        subtitle says so); a lighter page. At most Altair's row limit.

    Returns
    -------
    altair.LayerChart
        A step-after area (``lower``..``upper``, 20 % opacity) under a
        step-after line of ``mcf``; x "Age (h)", y "Mean cumulative failures
        per unit". One dataset with columns ``[color], time_h, mcf, lower,
        upper[, n_at_risk]``, sorted by group and time; non-finite bounds are
        null. Above 5,000 rows (Altair's limit) each group keeps an equal
        share of evenly spaced rows, its first and last included, and the
        subtitle says how many of how many were drawn.

    Raises
    ------
    SchemaError
        If a required column is missing, ``color`` is None while another
        column varies (several curves), or there are too many groups to draw
        two points each within 5,000 rows.
    InsufficientDataError
        If the frame has no rows.

    References
    ----------
    .. [1] W. B. Nelson, *Recurrent Events Data Analysis for Product Repairs,
       Disease Recurrences, and Other Applications*, SIAM, 2003.
       doi:10.1137/1.9780898718454

    Examples
    --------
    >>> import polars as pl
    >>> m = pl.DataFrame(
    ...     {
    ...         "time_h": [2.0, 3.0, 4.0, 6.0],
    ...         "mcf": [1 / 3, 2 / 3, 1.0, 1.5],
    ...         "lower": [0.06, 0.2, 0.4, 0.7],
    ...         "upper": [1.8, 2.2, 2.5, 3.2],
    ...     }
    ... )
    >>> spec = mcf_chart(m).to_dict()
    >>> [(la["mark"]["type"], la["mark"]["interpolate"]) for la in spec["layer"]]
    [('area', 'step-after'), ('line', 'step-after')]
    >>> spec["layer"][1]["encoding"]["x"]["title"]
    'Age (h)'
    """
    import altair as alt

    where = "mcf_chart"
    cols = ["time_h", "mcf", "lower", "upper"]
    require_columns(mcf, cols + ([color] if color else []), where=where)
    if mcf.height == 0:
        msg = f"{where}: the MCF frame has no rows (no failures); nothing to draw."
        raise InsufficientDataError(msg)
    extra = ["n_at_risk"] if "n_at_risk" in mcf.columns else []
    data = _groups(mcf, color, cols + extra + ["std_error"], where)
    group = [color] if color else []
    data = (
        data.select(*group, *cols, *extra)
        .with_columns(pl.col(cols).cast(pl.Float64))
        .with_columns(_finite_or_null(*cols))
        .sort([*group, "time_h"])
    )
    data, note = _thin(data, color, min(max_points, MAX_ROWS), log=False, where=where)
    group_enc: dict[str, Any] = {}
    if color:
        data = data.with_columns(pl.col(color).cast(pl.String))
        groups = natural_order(data[color].drop_nulls().unique().to_list())
        group_enc["color"] = (
            alt.Color(f"{color}:N").sort(groups).title(color.replace("_", " "))
        )
    x = alt.X("time_h:Q").title("Age (h)")
    y_title = "Mean cumulative failures per unit"
    base = alt.Chart(data)
    band = base.mark_area(interpolate="step-after", opacity=0.2).encode(
        x=x, y=alt.Y("lower:Q").title(y_title), y2="upper:Q", **group_enc
    )
    line = base.mark_line(interpolate="step-after", strokeWidth=2).encode(
        x=x,
        y=alt.Y("mcf:Q").title(y_title),
        tooltip=[
            *([alt.Tooltip(f"{color}:N")] if color else []),
            alt.Tooltip("time_h:Q").format(",.1f").title("age (h)"),
            alt.Tooltip("mcf:Q").format(".3g").title("failures per unit"),
            alt.Tooltip("lower:Q").format(".3g").title("lower"),
            alt.Tooltip("upper:Q").format(".3g").title("upper"),
            *(
                [alt.Tooltip("n_at_risk:Q").format(",").title("at risk")]
                if extra
                else []
            ),
        ],
        **group_enc,
    )
    head: Any = chart_title(title)
    if note:
        head = alt.TitleParams(text=title or "", subtitle=note)
    return alt.layer(band, line, title=head)


def _verdict(beta: float, lower: float | None, upper: float | None) -> str:
    """Plain words for the shape: improving, deteriorating or no clear trend."""
    if lower is None or upper is None or not (math.isfinite(lower + upper)):
        side = "improving" if beta < 1 else "deteriorating" if beta > 1 else "steady"
        return f"β = {beta:.3g} (no bounds): {side}?"
    span = f"β = {beta:.3g} [{lower:.3g}, {upper:.3g}]"
    if upper < 1:
        return f"{span}: improving (failures arriving more slowly)"
    if lower > 1:
        return f"{span}: deteriorating (failures arriving faster)"
    return f"{span}: no clear trend (interval holds 1)"


def crow_amsaa_chart(
    mcf: pl.DataFrame,
    fit: pl.DataFrame,
    *,
    color: str | None = None,
    title: str | None = None,
    max_points: int = MAX_ROWS - 1000,
) -> alt.LayerChart:
    r"""Draw cumulative failures against age on log-log axes with the power law.

    The observed points are the mean cumulative failures per unit by age
    (for one unit observed from age 0, its cumulative failure count against
    its cumulative operating time, the Duane plot); the dashed curve is the
    fitted Crow-AMSAA expectation :math:`N(t) = \lambda t^\beta`, a straight
    line of slope :math:`\beta` on log-log axes. Slope below 1: failures
    arrive ever more slowly (improving, burn-in or reliability growth);
    above 1: ever faster (deteriorating, wear-out). The subtitle (one group)
    or the end of each curve (several) states :math:`\hat\beta`, its bounds
    and that verdict.

    Parameters
    ----------
    mcf : pl.DataFrame
        Output of :func:`relkit.repairable.mean_cumulative_function` or
        :func:`relkit.answers.mcf_by`: ``time_h`` (age, h) and ``mcf``
        (failures per unit), plus the ``color`` column. Points at age 0 or
        with no failures cannot sit on log axes and are left out (counted in
        the subtitle).
    fit : pl.DataFrame
        Output of :func:`relkit.repairable.crow_amsaa` on the same units:
        ``beta``, ``beta_lower``, ``beta_upper``, ``lambda_per_h_beta``
        (failures per unit per hour^β) and ``at_age_h`` (last age of the
        fit), plus the ``color`` column. A group whose fit is null (its
        ``note`` says why) gets points and no curve, and the subtitle names
        it.
    color : str, optional
        Group column in both frames, one colour per value.
    title : str, optional
        Chart title.
    max_points : int, optional
        Most points drawn (evenly thinned per group, first and last kept, the
        subtitle says so); a lighter page. At most Altair's row limit.

    Returns
    -------
    altair.LayerChart
        Layers: points (``time_h``, ``mcf``), the dashed fitted curves
        (columns ``[color], time_h, expected_failures, beta, label``, 60 ages
        per group spaced evenly in log from the first failure to
        ``at_age_h``) and their labels. x "Age, cumulative operating time (h)"
        and y "Cumulative failures per unit", both log scale. Points above
        4,000 rows are thinned evenly in log age per group, said in the
        subtitle.

    Raises
    ------
    SchemaError
        If a required column is missing in either frame, ``color`` is None
        while a column of ``mcf`` varies or ``fit`` has several rows, or
        there are too many groups to draw within Altair's 5,000 rows.
    InsufficientDataError
        If no point has a positive age and count.

    Notes
    -----
    Under the power-law process the expected failures per unit by age
    :math:`t` are :math:`\lambda t^\beta` (Crow 1974), and Nelson's MCF
    estimates that same function without assuming a model, also for units
    entering late, so points scattered about the line support the fit.

    References
    ----------
    .. [1] L. H. Crow, "Reliability analysis for complex, repairable systems",
       in *Reliability and Biometry*, SIAM, 1974 (pages not checked).

    Examples
    --------
    >>> import polars as pl
    >>> m = pl.DataFrame({"time_h": [30.0, 150, 400, 800], "mcf": [1.0, 2, 3, 4]})
    >>> f = pl.DataFrame(
    ...     {
    ...         "beta": [0.6113],
    ...         "beta_lower": [0.17],
    ...         "beta_upper": [1.2],
    ...         "lambda_per_h_beta": [0.0589],
    ...         "at_age_h": [1000.0],
    ...     }
    ... )
    >>> spec = crow_amsaa_chart(m, f).to_dict()
    >>> spec["layer"][0]["encoding"]["x"]["scale"]["type"]
    'log'
    >>> spec["title"]["subtitle"]
    'β = 0.611 [0.17, 1.2]: no clear trend (interval holds 1)'
    """
    import altair as alt

    where = "crow_amsaa_chart"
    group = [color] if color else []
    require_columns(mcf, ["time_h", "mcf", *group], where=where)
    fit_cols = ["beta", "beta_lower", "beta_upper", "lambda_per_h_beta", "at_age_h"]
    require_columns(fit, [*fit_cols, *group], where=where)
    known = ["time_h", "mcf", "lower", "upper", "std_error", "n_at_risk"]
    points = _groups(mcf, color, known, where)
    if color is None and fit.height > 1:
        msg = (
            f"{where}: fit has {fit.height} rows (several groups) but color is "
            "None. Pass the group column as color=..., or filter both frames."
        )
        raise SchemaError(msg)
    if color:
        fit = fit.with_columns(pl.col(color).cast(pl.String).fill_null(_MISSING))
    points = points.select(*group, "time_h", "mcf").with_columns(
        pl.col("time_h", "mcf").cast(pl.Float64)
    )
    usable = (pl.col("time_h") > 0) & (pl.col("mcf") > 0)
    usable = usable & pl.col("time_h").is_finite() & pl.col("mcf").is_finite()
    n_left_out = points.height - points.filter(usable).height
    points = points.filter(usable).sort([*group, "time_h"])
    if points.height == 0:
        msg = (
            f"{where}: no point with a positive age and failure count to draw on "
            f"log axes ({n_left_out} left out)."
        )
        raise InsufficientDataError(msg)
    notes = []
    if n_left_out:
        notes.append(f"{n_left_out} point(s) at age 0 or with no failures left out")
    points, thin_note = _thin(
        points, color, min(max_points, MAX_ROWS - 1000), log=True, where=where
    )
    if thin_note:
        notes.append(thin_note)
    first = points.group_by(group or pl.lit(0)).agg(pl.col("time_h").min())
    first_of = dict(zip(first[first.columns[0]], first["time_h"], strict=True))
    curves, no_fit = [], []
    for row in fit.iter_rows(named=True):
        key = row[color] if color else 0
        beta, lam, end = row["beta"], row["lambda_per_h_beta"], row["at_age_h"]
        if key not in first_of:
            continue
        if None in (beta, lam, end) or not math.isfinite(beta * lam * end):
            no_fit.append(str(key) if color else "the fit")
            continue
        ages = np.geomspace(min(first_of[key], end), end, _FIT_POINTS)
        curves.append(
            pl.DataFrame(
                {
                    **({color: [key] * ages.size} if color else {}),
                    "time_h": ages,
                    "expected_failures": lam * ages**beta,
                    "beta": [beta] * ages.size,
                    "label": [_verdict(beta, row["beta_lower"], row["beta_upper"])]
                    * ages.size,
                }
            )
        )
    if no_fit:
        notes.append(f"no power-law fit for {', '.join(no_fit[:5])}")
    x = alt.X("time_h:Q").scale(type="log").title("Age, cumulative operating time (h)")
    y_title = "Cumulative failures per unit"
    group_enc: dict[str, Any] = {}
    if color:
        group_enc["color"] = alt.Color(f"{color}:N").title(color.replace("_", " "))
    layers: list[Any] = [
        alt.Chart(points)
        .mark_point(filled=True, size=22, opacity=0.7)
        .encode(
            x=x,
            y=alt.Y("mcf:Q").scale(type="log").title(y_title),
            tooltip=[
                *([alt.Tooltip(f"{color}:N")] if color else []),
                alt.Tooltip("time_h:Q").format(",.1f").title("age (h)"),
                alt.Tooltip("mcf:Q").format(".3g").title("failures per unit"),
            ],
            **group_enc,
        )
    ]
    subtitle = list(notes)
    if curves:
        lines = pl.concat(curves)
        layers.append(
            alt.Chart(lines)
            .mark_line(strokeDash=[6, 3], strokeWidth=2)
            .encode(
                x=x,
                y=alt.Y("expected_failures:Q").scale(type="log").title(y_title),
                tooltip=[
                    *([alt.Tooltip(f"{color}:N")] if color else []),
                    alt.Tooltip("label:N").title("Crow-AMSAA"),
                    alt.Tooltip("time_h:Q").format(",.1f").title("age (h)"),
                    alt.Tooltip("expected_failures:Q")
                    .format(".3g")
                    .title("λ t^β (expected)"),
                ],
                **group_enc,
            )
        )
        if color:
            ends = lines.group_by(color, maintain_order=True).last()
            layers.append(
                alt.Chart(ends)
                .mark_text(align="left", dx=4, fontSize=11)
                .encode(
                    x=x,
                    y=alt.Y("expected_failures:Q").scale(type="log"),
                    text="label:N",
                    **group_enc,
                )
            )
        else:
            subtitle.insert(0, lines["label"][0])
    head: Any = chart_title(title)
    if subtitle:
        head = alt.TitleParams(
            text=title or "", subtitle=subtitle[0] if len(subtitle) == 1 else subtitle
        )
    return alt.layer(*layers, title=head)
