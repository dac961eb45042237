"""Non-parametric curves: Kaplan-Meier and Nelson-Aalen (CIF: see _competing)."""

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InsufficientDataError
from relkit.survival._common import (
    MAX_ROWS,
    check_confidence,
    entry_for_risk_set,
    prepare,
)
from relkit.survival._tables import split_groups

__all__ = ["kaplan_meier", "nelson_aalen"]


def _thin(frame: pl.DataFrame, budget: int) -> pl.DataFrame:
    """Keep at most ``budget`` rows, evenly spaced, always the first and last."""
    if frame.height <= budget:
        return frame
    keep = np.unique(np.linspace(0, frame.height - 1, max(budget, 2)).round())
    return frame[keep.astype(np.int64)]


def _empty_risk_set(
    where: str, key: dict[str, Any], detail: str
) -> InsufficientDataError:
    label = f" in group {key}" if key else ""
    msg = (
        f"{where}: the risk set becomes empty{label} before later units enter "
        f"({detail}), so the curve after that time is not identifiable. Expected "
        "overlapping spells; fix entry_h/stop_h or group less finely."
    )
    return InsufficientDataError(msg)


def _bracket(
    value: np.ndarray, lo: np.ndarray, hi: np.ndarray, *, km: bool
) -> tuple[np.ndarray, np.ndarray]:
    """Make the interval contain the estimate (lifelines can give (1, 1) at S = 0)."""
    lo = np.where(np.isnan(lo), value, lo)
    hi = np.where(np.isnan(hi), value, hi)
    if km:
        lo = np.where(value == 0, 0.0, lo)
        hi = np.where(value == 0, 0.0, hi)
    return np.minimum(lo, value), np.maximum(hi, value)


def _curve(
    table: pl.DataFrame,
    by: Sequence[str],
    confidence: float,
    invalid: Literal["raise", "drop"],
    max_rows: int,
    *,
    kind: str,
) -> pl.DataFrame:
    import lifelines
    from lifelines.exceptions import StatError

    where = "kaplan_meier" if kind == "km" else "nelson_aalen"
    alpha = check_confidence(confidence, where)
    table = prepare(table, by, invalid, where)
    names = (
        ("survival", "survival_lower", "survival_upper")
        if kind == "km"
        else ("cumulative_hazard", "cumulative_hazard_lower", "cumulative_hazard_upper")
    )
    groups = split_groups(table, by)
    budget = max(max_rows // max(len(groups), 1), 2)
    frames = []
    for key, part in groups:
        if part.height == 0:
            continue
        cls = (
            lifelines.KaplanMeierFitter if kind == "km" else lifelines.NelsonAalenFitter
        )
        options = {} if kind == "km" else {"nelson_aalen_smoothing": False}
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            try:
                stop = part["stop_h"].to_numpy()
                entry = part["entry_h"].to_numpy()
                moved = entry_for_risk_set(entry, stop)
                if kind != "km":
                    # Nelson-Aalen would answer across a gap in the risk set
                    # that Kaplan-Meier refuses: refuse the same data
                    lifelines.KaplanMeierFitter().fit(
                        stop, part["observed"].to_numpy(), entry=moved
                    )
                f = cls(alpha=alpha, **options).fit(
                    stop, part["observed"].to_numpy(), entry=moved
                )
            except StatError as exc:
                raise _empty_risk_set(where, key, str(exc)) from exc
        events = f.event_table
        est = f.survival_function_ if kind == "km" else f.cumulative_hazard_
        ci = f.confidence_interval_
        # the n of the estimate: lifelines' at_risk counts the units entering
        # at t > 0, which are not at risk for failures at t (entry < t <= stop);
        # at t = 0 the units entering then are the ones at risk
        entering = events["entrance"].where(events.index > 0, 0)
        at_risk = (events["at_risk"] - entering).reindex(est.index, fill_value=0)
        value = est.iloc[:, 0].to_numpy()
        lower, upper = _bracket(
            value, ci.iloc[:, 0].to_numpy(), ci.iloc[:, 1].to_numpy(), km=kind == "km"
        )
        curve = pl.DataFrame(
            {
                "time_h": est.index.to_numpy().astype(float),
                names[0]: value,
                names[1]: lower,
                names[2]: upper,
                "n_at_risk": at_risk.to_numpy().astype(np.int64),
            }
        )
        # the instants just before a zero-length spell (its moved entry) are
        # not times of the data: no row for them
        shifted = moved[moved != entry]
        if shifted.size:
            curve = curve.filter(~pl.col("time_h").is_in(shifted.tolist()))
        curve = _thin(curve, budget)
        frames.append(
            curve.select(*(pl.lit(v).alias(c) for c, v in key.items()), pl.all())
        )
    if not frames:
        return pl.DataFrame(
            schema={
                **{c: table.schema[c] for c in by},
                "time_h": pl.Float64,
                **dict.fromkeys(names, pl.Float64),
                "n_at_risk": pl.Int64,
                "confidence": pl.Float64,
            }
        )
    out = pl.concat(frames, how="vertical_relaxed")
    return out.with_columns(pl.col(c).cast(table.schema[c]) for c in by).with_columns(
        confidence=pl.lit(float(confidence), dtype=pl.Float64)
    )


def kaplan_meier(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    confidence: float = DEFAULT_CONFIDENCE,
    invalid: Literal["raise", "drop"] = "raise",
    max_rows: int = MAX_ROWS,
) -> pl.DataFrame:
    r"""Estimate the survival function by Kaplan-Meier, with delayed entry.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table: ``entry_h`` (h, optional), ``stop_h`` (h), ``observed``
        (bool) and the ``by`` columns.
    by : sequence of str, default ()
        One curve per group.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the pointwise interval (lifelines' exponential
        Greenwood, log(-log) scale).
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.
    max_rows : int, default 5000
        Cap on rows returned (Altair's limit): a longer curve keeps evenly spaced
        step points (including the first and last), each exact, with
        ``max_rows // n_groups`` per group.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, time_h, survival, survival_lower, survival_upper,
        n_at_risk, confidence`` (the level of the bounds): one row per step
        point (time 0, and each failure, censoring or entry time), sorted by
        ``*by, time_h``. ``survival`` is
        :math:`\hat S(t)` just after ``time_h``; ``n_at_risk`` counts units at
        risk at ``time_h`` (lifelines' ``event_table.at_risk``).

    Raises
    ------
    SchemaError
        If a column is missing or a row is invalid (with ``invalid="raise"``).
    InsufficientDataError
        If, with delayed entry, the risk set empties in the first half of a
        group's event table while units enter later (lifelines' ``StatError``:
        the curve after that time is not identifiable). A later gap in the
        risk set is accepted: :math:`\hat S` carries over it unchanged.

    Notes
    -----
    Product-limit estimator :math:`\hat S(t) = \prod_{t_j \le t} (1 - d_j/n_j)`,
    with :math:`d_j` failures at :math:`t_j` and, under left truncation,
    :math:`n_j = \#\{i: a_i < t_j \le t_i\}` (units that have entered before
    :math:`t_j` and not left; Klein & Moeschberger §4.6), the ``n_at_risk``
    column. A spell entering and failing at the same instant :math:`t > 0` is
    at risk at :math:`t` (its failure was seen as observation began), as in
    :func:`cumulative_incidence`, so the two agree. Failures at :math:`t = 0` make
    :math:`\hat S(0) < 1`. With delayed entry :math:`\hat S` is conditional on
    surviving to the earliest entry.

    References
    ----------
    .. [1] E. L. Kaplan and P. Meier, JASA 53(282), 1958.
       doi:10.1080/01621459.1958.10501452
    .. [2] C. Davidson-Pilon, JOSS 4(40), 2019. doi:10.21105/joss.01317

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "entry_h": [0.0, 0.0, 744.0, 0.0],
    ...         "stop_h": [240.0, 0.0, 1224.0, 720.0],
    ...         "observed": [True, True, False, False],
    ...     }
    ... )
    >>> kaplan_meier(t).select("time_h", "survival", "n_at_risk")
    shape: (5, 3)
    ┌────────┬──────────┬───────────┐
    │ time_h ┆ survival ┆ n_at_risk │
    │ ---    ┆ ---      ┆ ---       │
    │ f64    ┆ f64      ┆ i64       │
    ╞════════╪══════════╪═══════════╡
    │ 0.0    ┆ 0.666667 ┆ 3         │
    │ 240.0  ┆ 0.333333 ┆ 2         │
    │ 720.0  ┆ 0.333333 ┆ 1         │
    │ 744.0  ┆ 0.333333 ┆ 0         │
    │ 1224.0 ┆ 0.333333 ┆ 1         │
    └────────┴──────────┴───────────┘
    """
    return _curve(table, by, confidence, invalid, max_rows, kind="km")


def nelson_aalen(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    confidence: float = DEFAULT_CONFIDENCE,
    invalid: Literal["raise", "drop"] = "raise",
    max_rows: int = MAX_ROWS,
) -> pl.DataFrame:
    r"""Estimate the cumulative hazard by Nelson-Aalen, with delayed entry.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table, as for :func:`kaplan_meier`.
    by : sequence of str, default ()
        One curve per group.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of lifelines' pointwise interval.
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.
    max_rows : int, default 5000
        Row cap, as for :func:`kaplan_meier`.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, time_h, cumulative_hazard, cumulative_hazard_lower,
        cumulative_hazard_upper, n_at_risk, confidence`` (the level of the
        bounds); one row per step point, sorted.

    Raises
    ------
    SchemaError
        If a column is missing or a row is invalid (with ``invalid="raise"``).
    InsufficientDataError
        As for :func:`kaplan_meier`.

    Notes
    -----
    :math:`\hat H(t) = \sum_{t_j \le t} d_j / n_j` with the risk sets of
    :func:`kaplan_meier` (Klein & Moeschberger eq. 4.2.3): tied failures count
    :math:`d_j/n_j`, not lifelines' default smoothed
    :math:`\sum_{i<d_j} 1/(n_j - i)` (``nelson_aalen_smoothing=False``).

    References
    ----------
    .. [1] O. Aalen, "Nonparametric inference for a family of counting
       processes", Ann. Statist. 6(4), 1978. doi:10.1214/aos/1176344247
    .. [2] J. P. Klein and M. L. Moeschberger, *Survival Analysis*, 2nd ed.,
       Springer, 2003, §4.2.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"stop_h": [10.0, 20.0], "observed": [True, True]})
    >>> nelson_aalen(t)["cumulative_hazard"].to_list()
    [0.0, 0.5, 1.5]
    """
    return _curve(table, by, confidence, invalid, max_rows, kind="na")
