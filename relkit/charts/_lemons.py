"""Lemon ranking chart: units ranked by the evidence that they fail too often."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING

import polars as pl

from relkit.charts._theme import MAX_ROWS, check_rows
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.repairable import DEFAULT_FDR
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["lemon_ranking_chart"]

#: Columns the chart needs (``relkit lemons --format json`` has them all).
_REQUIRED = (
    "host",
    "n_failures",
    "expected",
    "p_value",
    "q_value",
    "lemon",
    "modes",
    "n_devices",
)
#: Columns of :func:`relkit.repairable.lemon_units` that are values, not keys.
_VALUES = frozenset(
    {*_REQUIRED, "exposure_h", "ratio", "n_folded"} - {"host"},
)
#: Key columns that make up a row's label when present, in this order.
_LABEL_KEYS = ("host", "device", "failure_mode")
_LEMON = "lemon"
_NOT_LEMON = "not a lemon"
#: A p-value of 0 is scipy's Poisson tail underflowing: the true value is
#: below this (measured: the last non-zero tails are ~1e-309 to 1e-311).
_UNDERFLOW_BOUND = 1e-300


def _labels(data: pl.DataFrame, *, where: str) -> tuple[pl.DataFrame, list[str]]:
    """Add a unique text ``label`` per row; return it and the extra key columns."""
    keys = [c for c in _LABEL_KEYS if c in data.columns]
    extra = [c for c in data.columns if c not in _VALUES and c not in _LABEL_KEYS]

    def joined(cols: list[str]) -> pl.Expr:
        return pl.concat_str(
            [pl.col(c).cast(pl.String).fill_null("(missing)") for c in cols],
            separator=" · ",
        )

    out = data.with_columns(label=joined(keys))
    if out["label"].n_unique() < out.height and extra:
        out = out.with_columns(label=joined([*extra, *keys]))
    if out["label"].n_unique() < out.height:
        dup = out.filter(pl.col("label").is_duplicated())["label"].unique().sort()
        msg = (
            f"{where}: the frame lists {dup.len()} unit(s) more than once, e.g. "
            f"{dup.head(5).to_list()}; pass one row per unit (the output of "
            "relkit.answers.lemons or relkit lemons --format json)."
        )
        raise SchemaError(msg)
    return out, extra


def _check_values(data: pl.DataFrame, *, where: str) -> None:
    """Refuse p- and q-values outside [0, 1] (or null, NaN) and a null lemon flag."""
    for col in ("p_value", "q_value"):
        bad = data.filter(
            pl.col(col).is_null()
            | pl.col(col).is_nan()
            | (pl.col(col) < 0)
            | (pl.col(col) > 1)
        )
        if bad.height:
            msg = (
                f"{where}: {bad.height} row(s) have {col} null, NaN or outside "
                f"[0, 1], e.g. {bad.select('label', col).head(5).rows()}; pass the "
                "output of relkit.answers.lemons (or relkit.repairable.lemon_units)."
            )
            raise SchemaError(msg)
    if n_null := data["lemon"].null_count():
        msg = f"{where}: {n_null} row(s) have lemon = null; need True or False."
        raise SchemaError(msg)


def _check_fdr(data: pl.DataFrame, fdr: float, *, where: str) -> None:
    """Check that ``lemon`` is ``q_value <= fdr``; else say which FDR fits."""
    if not (isinstance(fdr, int | float) and 0.0 < fdr < 1.0):
        msg = f"{where}: fdr must be a number in (0, 1), e.g. 0.05; got {fdr!r}."
        raise InvalidParameterError(msg)
    mismatch = data.filter(pl.col("lemon") != (pl.col("q_value") <= fdr))
    if mismatch.height:
        q_lemon = data.filter(pl.col("lemon"))["q_value"].max()
        q_other = data.filter(~pl.col("lemon"))["q_value"].min()
        fits = (
            f"lemons have q up to {q_lemon:.3g}"
            if q_lemon is not None
            else "no row is a lemon"
        ) + (f", the others q from {q_other:.3g}" if q_other is not None else "")
        msg = (
            f"{where}: the lemon column was not set at fdr={fdr:g} ({fits}; "
            f"{mismatch.height} row(s) disagree). Pass the FDR the frame was "
            "computed with, e.g. fdr=0.1 for relkit lemons --fdr 0.1."
        )
        raise InvalidParameterError(msg)


def lemon_ranking_chart(
    lemons: pl.DataFrame,
    *,
    top: int = 30,
    fdr: float = DEFAULT_FDR,
    title: str | None = None,
) -> alt.LayerChart:
    r"""Draw the units ranked by the evidence that they fail too often (lemons).

    One horizontal bar per unit, strongest evidence at the top: the bar's
    length is :math:`-\log_{10} q`, the Benjamini-Hochberg adjusted p-value,
    so the FDR threshold is a vertical line at :math:`-\log_{10}(\text{fdr})`
    and the lemons (red) are exactly the bars that cross it. Units are ranked
    by ``p_value`` (then more failures first, then the label), which orders
    them as ``q_value`` does. Beside each bar its failure count against the
    count expected from the fleet's rate ("119 vs 3.21"); the tooltip adds
    the ratio of the two, the p- and q-values, time at risk, the failure
    modes and the number of GPUs involved. The subtitle says how many units
    were tested, how many are lemons and how many are drawn.

    A p-value of 0 means scipy's Poisson tail underflowed (the true p-value
    is below 1e-300): its bar is capped just beyond the longest finite bar,
    the tooltip says so, and so does the subtitle.

    Parameters
    ----------
    lemons : pl.DataFrame
        One row per tested unit, as :func:`relkit.answers.lemons`,
        :func:`relkit.repairable.lemon_units` or ``relkit lemons --format
        json`` give it: ``host`` (str), ``n_failures`` (int), ``expected``
        (failures expected from the baseline rate; may be null),
        ``p_value``, ``q_value`` (in [0, 1]), ``lemon`` (bool, ``q_value <=
        fdr``), ``modes`` (str), ``n_devices`` (int); optional ``device``
        and ``failure_mode`` (part of the label), ``exposure_h`` (h),
        ``ratio``, ``n_folded`` (in the tooltip). Any other column (e.g.
        ``system``) is shown in the tooltip and prefixed to the label when the
        label alone would repeat. Every tested unit should be in the frame:
        the subtitle counts its rows as the units tested.
    top : int, default 30
        Number of units drawn, from the strongest evidence down (at most
        5,000, Altair's row limit).
    fdr : float, default 0.05
        The false-discovery rate the ``lemon`` column was computed with
        (``relkit lemons --fdr``); checked against ``lemon`` and drawn as the
        threshold.
    title : str, optional
        Headline; default "Units ranked by evidence of too many failures".

    Returns
    -------
    altair.LayerChart
        Layers: bars (x ``evidence`` from 0, y ``label`` sorted by ``rank``,
        colour ``status``: "lemon" or "not a lemon"), the count text beside
        each bar, the FDR rule and its label. Dataset columns: ``rank``
        (1 = smallest p-value), the input columns, ``label``, ``ratio``
        (``n_failures / expected``, null when expected is 0 or null),
        ``evidence`` (:math:`-\log_{10} q`, capped where q is 0),
        ``evidence_capped`` (bool), ``evidence_text`` (what the tooltip says),
        ``status`` and ``count_text``; ``top`` rows at most, in rank order.

    Raises
    ------
    SchemaError
        If a required column is missing, a p- or q-value is null, NaN or
        outside [0, 1], ``lemon`` is null, or a unit appears twice.
    InsufficientDataError
        If the frame has no rows.
    InvalidParameterError
        If ``top`` is not an integer in [1, 5000], ``fdr`` is not in (0, 1),
        or the ``lemon`` column disagrees with ``q_value <= fdr``.

    Notes
    -----
    The test behind the values (exact Poisson upper tail per unit,
    Benjamini-Hochberg across units, Benjamini and Hochberg 1995,
    doi:10.1111/j.2517-6161.1995.tb02031.x) is described in
    :func:`relkit.repairable.lemon_units`. BH q-values are non-decreasing in
    the p-value, so ranking by p and drawing :math:`-\log_{10} q` keep the
    bars in decreasing order, and :math:`q \le \text{fdr} \iff -\log_{10} q
    \ge -\log_{10} \text{fdr}` puts the threshold on the same axis.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame(
    ...     {
    ...         "host": ["n1", "n2", "n3"],
    ...         "n_failures": [6, 1, 0],
    ...         "expected": [0.7, 0.7, 0.7],
    ...         "p_value": [8.6e-5, 0.50, 1.0],
    ...         "q_value": [2.6e-4, 0.75, 1.0],
    ...         "lemon": [True, False, False],
    ...         "modes": ["gpu/hbm_uncorrectable×5, gpu/hang×1", "gpu/hang×1", ""],
    ...         "n_devices": [2, 1, 0],
    ...     }
    ... )
    >>> spec = lemon_ranking_chart(frame).to_dict()
    >>> rows = spec["datasets"][spec["data"]["name"]]
    >>> [(r["label"], r["status"], r["count_text"]) for r in rows]
    [('n1', 'lemon', '6 vs 0.7'), ('n2', 'not a lemon', '1 vs 0.7'),
     ('n3', 'not a lemon', '0 vs 0.7')]
    >>> spec["title"]["subtitle"]
    '3 units tested, 1 lemon at FDR 5% (q ≤ 0.05).'
    >>> lemon_ranking_chart(frame, fdr=1e-4)
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: lemon_ranking_chart: the lemon column was
    not set at fdr=0.0001 (lemons have q up to 0.00026, the others q from 0.75;
    1 row(s) disagree). Pass the FDR the frame was computed with, e.g. fdr=0.1
    for relkit lemons --fdr 0.1.
    """
    import altair as alt

    where = "lemon_ranking_chart"
    require_columns(lemons, list(_REQUIRED), where=where)
    if (
        isinstance(top, bool)
        or not isinstance(top, numbers.Integral)
        or not 1 <= top <= MAX_ROWS
    ):
        msg = (
            f"{where}: top must be a whole number of units in [1, {MAX_ROWS:,}] "
            f"(Altair's row limit); got {top!r}."
        )
        raise InvalidParameterError(msg)
    if lemons.height == 0:
        msg = (
            f"{where}: the frame has no rows; nothing to rank. Run "
            "relkit.answers.lemons on a store with failures."
        )
        raise InsufficientDataError(msg)
    data = lemons.with_columns(
        pl.col("n_failures").cast(pl.Int64),
        pl.col("expected").cast(pl.Float64),
        pl.col("p_value").cast(pl.Float64),
        pl.col("q_value").cast(pl.Float64),
        pl.col("lemon").cast(pl.Boolean),
        pl.col("modes").cast(pl.String).fill_null(""),
        pl.col("n_devices").cast(pl.Int64),
    )
    data, extra = _labels(data, where=where)
    _check_values(data, where=where)
    _check_fdr(data, fdr, where=where)

    n_tested = data.height
    n_lemons = int(data["lemon"].sum())
    threshold = -math.log10(fdr)
    data = data.with_columns(
        ratio=pl.when(pl.col("expected") > 0).then(
            pl.col("n_failures") / pl.col("expected")
        ),
        # + 0.0 turns -0.0 (q = 1) into 0.0
        evidence=pl.when(pl.col("q_value") > 0).then(-pl.col("q_value").log10() + 0.0),
        evidence_capped=pl.col("q_value") == 0,
    )
    longest = data["evidence"].max()
    cap = max(1.1 * float(longest or 0.0), 2.0 * threshold)
    n_capped = int(data["evidence_capped"].sum())
    data = (
        data.sort(
            ["p_value", "n_failures", "label"],
            descending=[False, True, False],
        )
        .with_row_index("rank", offset=1)
        .head(top)
        .with_columns(
            pl.col("rank").cast(pl.Int64),
            evidence=pl.col("evidence").fill_null(cap),
            evidence_text=pl.when(pl.col("evidence_capped"))
            .then(
                pl.lit(
                    f"p underflowed to 0 (true p < {_UNDERFLOW_BOUND:.0e}); "
                    f"bar capped at {cap:.1f}"
                )
            )
            .otherwise(
                pl.col("evidence").map_elements(
                    lambda e: f"{e:.2f}", return_dtype=pl.String
                )
            ),
            status=pl.when(pl.col("lemon"))
            .then(pl.lit(_LEMON))
            .otherwise(pl.lit(_NOT_LEMON)),
            count_text=pl.format(
                "{} vs {}{}",
                pl.col("n_failures"),
                pl.col("expected").map_elements(
                    lambda e: f"{e:.3g}", return_dtype=pl.String
                ),
                pl.when(pl.col("evidence_capped"))
                .then(pl.lit(" (p = 0, capped)"))
                .otherwise(pl.lit("")),
            ).fill_null(pl.format("{} vs (no expected count)", pl.col("n_failures"))),
        )
    )
    check_rows(data, where=where, fix="Pass a smaller top=.")
    shown = data.height
    shown_lemons = int(data["lemon"].sum())

    lemon_word = "lemon" if n_lemons == 1 else "lemons"
    subtitle = [
        f"{n_tested:,} units tested, {n_lemons:,} {lemon_word} at FDR {fdr:.0%} "
        f"(q ≤ {fdr:g})"
        + (
            f"; the {shown:,} with the strongest evidence are drawn"
            + (
                f" ({n_lemons - shown_lemons:,} lemons not drawn)"
                if shown_lemons < n_lemons
                else ""
            )
            if shown < n_tested
            else ""
        )
        + "."
    ]
    if n_capped:
        subtitle.append(
            f"{n_capped:,} p-value(s) underflowed to 0 (p < {_UNDERFLOW_BOUND:.0e}); "
            f"their bars are capped at {cap:.1f}."
        )
    headline = alt.TitleParams(
        text=title or "Units ranked by evidence of too many failures",
        subtitle=subtitle if len(subtitle) > 1 else subtitle[0],
    )

    order = data["label"].to_list()
    y = alt.Y("label:N").sort(order).title(None)
    x_title = "Evidence, −log₁₀ q (q: p-value adjusted for testing every unit)"
    tooltip = [
        alt.Tooltip("rank:Q"),
        *(alt.Tooltip(f"{c}:N") for c in _LABEL_KEYS if c in data.columns),
        *(alt.Tooltip(f"{c}:N") for c in extra),
        alt.Tooltip("status:N").title("status"),
        alt.Tooltip("n_failures:Q").format(",").title("failures"),
        alt.Tooltip("expected:Q").format(",.3g").title("expected failures"),
        alt.Tooltip("ratio:Q").format(",.3g").title("observed / expected"),
        *(
            [alt.Tooltip("exposure_h:Q").format(",.0f").title("time at risk (h)")]
            if "exposure_h" in data.columns
            else []
        ),
        alt.Tooltip("p_value:Q").format(".3g").title("p-value"),
        alt.Tooltip("q_value:Q").format(".3g").title("q-value (BH)"),
        alt.Tooltip("evidence_text:N").title("−log₁₀ q"),
        alt.Tooltip("modes:N").title("failure modes"),
        alt.Tooltip("n_devices:Q").format(",").title("GPUs involved"),
        *(
            [alt.Tooltip("n_folded:Q").format(",").title("repeats folded")]
            if "n_folded" in data.columns
            else []
        ),
    ]
    base = alt.Chart()  # the layer's dataset, embedded once at the top
    bars = base.mark_bar().encode(
        x=alt.X("evidence:Q").scale(zero=True).title(x_title),
        y=y,
        color=alt.Color("status:N")
        .scale(domain=[_LEMON, _NOT_LEMON], range=["#e45756", "#bab0ac"])
        .title(None)
        .legend(orient="bottom"),
        opacity=alt.condition(
            alt.datum.evidence_capped, alt.value(0.55), alt.value(1.0)
        ),
        tooltip=tooltip,
    )
    counts = base.mark_text(align="left", dx=4, fontSize=11).encode(
        x="evidence:Q", y=y, text="count_text:N", tooltip=tooltip
    )
    rule_data = alt.Data(
        values=[{"threshold": threshold, "rule_text": f"FDR {fdr:.0%}"}]
    )
    rule = (
        alt.Chart(rule_data)
        .mark_rule(strokeDash=[4, 3], color="#333333")
        .encode(
            x="threshold:Q",
            tooltip=[
                alt.Tooltip("rule_text:N").title("threshold"),
                alt.Tooltip("threshold:Q").format(".2f").title("−log₁₀ fdr"),
            ],
        )
    )
    rule_label = (
        alt.Chart(rule_data)
        .mark_text(align="left", baseline="top", dx=3, dy=-14, fontSize=11)
        .encode(x="threshold:Q", y=alt.value(0), text="rule_text:N")
    )
    return alt.layer(bars, counts, rule, rule_label, data=data, title=headline)
