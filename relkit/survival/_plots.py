r"""Probability-plot data: Kaplan-Meier plotting positions on a model's axes.

References
----------
.. [1] W. Q. Meeker and L. A. Escobar, *Statistical Methods for Reliability
   Data*, Wiley, 1998, §6.4 (plotting positions at the midpoint of each
   Kaplan-Meier jump, with censoring) and §6.2 (linearising axes).
   ISBN 978-0-471-14328-4.
.. [2] E. L. Kaplan and P. Meier, JASA 53(282), 1958.
   doi:10.1080/01621459.1958.10501452
"""

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from relkit.errors import RelkitWarning, SchemaError
from relkit.survival._common import prepare
from relkit.survival._fits import fit_lifetime_models
from relkit.survival._gof import km_curve
from relkit.survival._registry import MODELS, REGISTRY, quantile, survival
from relkit.survival._tables import split_groups

__all__ = ["probability_plot"]

_SCHEMA = {
    "model": pl.String,
    "time_h": pl.Float64,
    "cdf_empirical": pl.Float64,
    "x": pl.Float64,
    "y": pl.Float64,
    "y_fitted": pl.Float64,
}


def _axes(axes: str | None, t: np.ndarray, f: np.ndarray) -> tuple[Any, Any]:
    """Return (x, y) of times t and CDF values f on the model's straight axes."""
    from scipy import special

    with np.errstate(divide="ignore", invalid="ignore"):
        if axes == "exponential":
            return t, -np.log1p(-f)
        if axes == "weibull":
            return np.log(t), np.log(-np.log1p(-f))
        if axes == "lognormal":
            return np.log(t), special.ndtri(f)
        return np.log(t), special.logit(f)  # log-logistic


def probability_plot(
    table: pl.DataFrame,
    *,
    model: str,
    by: Sequence[str] = (),
    fits: pl.DataFrame | None = None,
    invalid: Literal["raise", "drop"] = "raise",
) -> pl.DataFrame:
    r"""Probability-plot points and the fitted line of one model, per group.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table: ``entry_h`` (h, optional), ``stop_h`` (h),
        ``observed`` (bool) and the ``by`` columns.
    model : str
        One of :data:`MODELS`.
    by : sequence of str, default ()
        Columns to plot separately by.
    fits : pl.DataFrame, optional
        Rows of :func:`fit_lifetime_models` (``*by, model, scale_h, shape,
        shape2, status``) to draw the line from; fitted here if None.
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.

    Returns
    -------
    pl.DataFrame
        One row per group and distinct positive failure time: ``*by, model,
        time_h`` (h), ``cdf_empirical`` (plotting position :math:`\hat F`),
        ``x, y`` (the point on the model's axes) and ``y_fitted`` (the fitted
        model on the same axes at ``x``; null when the fit is not ok).
        Axes: exponential :math:`t` vs :math:`-\ln(1-F)`; Weibull :math:`\ln t`
        vs :math:`\ln(-\ln(1-F))`; log-normal :math:`\ln t` vs
        :math:`\Phi^{-1}(F)`; log-logistic :math:`\ln t` vs
        :math:`\mathrm{logit}\,F`; gamma and generalized gamma (no straight
        axes) a Q-Q plot: ``x`` the fitted model's quantile of :math:`\hat F`,
        ``y`` the observed time, ``y_fitted = x``.

    Raises
    ------
    SchemaError
        If the model is unknown, a column is missing or a row invalid.

    Warns
    -----
    RelkitWarning
        When zero-length failure spells are left out of the points (no
        logarithm; they still lower Kaplan-Meier), or a group's fit is not ok
        (its ``y_fitted`` is null), or Kaplan-Meier is not identifiable for a
        group (no rows for it).

    Notes
    -----
    :math:`\hat F(t_j) = 1 - \tfrac12\bigl(\hat S(t_j^-) + \hat S(t_j)\bigr)`,
    the midpoint of the Kaplan-Meier jump at each failure time (Meeker &
    Escobar 1998, §6.4), with delayed entry so censoring and left truncation
    are honoured. Under left truncation :math:`\hat S` estimates
    :math:`S(t)/S(a_0)` (:math:`a_0` the earliest entry), so the fitted line
    uses the same conditional CDF :math:`1 - S_\theta(t)/S_\theta(a_0)`.
    """
    where = "probability_plot"
    if model not in MODELS:
        msg = f"{where}: unknown model {model!r}; choose from {list(MODELS)}."
        raise SchemaError(msg)
    table = prepare(table, by, invalid, where)
    if fits is None:
        fits = fit_lifetime_models(table, by=by, models=[model])
    fitted = {
        tuple(r[c] for c in by): r
        for r in fits.filter(pl.col("model") == model).iter_rows(named=True)
    }
    frames = []
    n_zero = 0
    for key, part in split_groups(table, by):
        label = ", ".join(f"{k}={v}" for k, v in key.items()) or "the table"
        n_zero += int(((part["stop_h"] == 0) & part["observed"]).sum())
        curve = km_curve(part)
        times = np.unique(
            part.filter(pl.col("observed") & (pl.col("stop_h") > 0))[
                "stop_h"
            ].to_numpy()
        )
        if curve is None or times.size == 0:
            warnings.warn(
                f"{where}: no plotting positions for {label} (no positive failure "
                "time, or Kaplan-Meier not identifiable under delayed entry).",
                RelkitWarning,
                stacklevel=2,
            )
            continue
        steps, est, a0 = curve
        pos = np.searchsorted(steps, times)
        after = est[pos]
        before = np.where(pos > 0, est[np.maximum(pos - 1, 0)], 1.0)
        cdf = 1.0 - 0.5 * (before + after)
        row = fitted.get(tuple(key.values()))
        ok = row is not None and str(row["status"]).startswith("ok")
        if not ok:
            status = row["status"] if row is not None else "no fit given"
            warnings.warn(
                f"{where}: the {model} fit for {label} is not ok ({status}); "
                "y_fitted is null.",
                RelkitWarning,
                stacklevel=2,
            )
        params = (row["scale_h"], row["shape"], row["shape2"]) if ok else None
        axes = REGISTRY[model].axes
        if axes is None:
            if params is None:
                x = np.full(times.size, np.nan)
            else:
                s0 = survival(model, np.array([a0]), *params)[0] if a0 > 0 else 1.0
                x = quantile(model, 1.0 - (1.0 - cdf) * s0, *params)
            y, line = times, x
        else:
            x, y = _axes(axes, times, cdf)
            if params is None:
                line = np.full(times.size, np.nan)
            else:
                s = survival(model, times, *params)
                if a0 > 0:
                    s = s / survival(model, np.array([a0]), *params)[0]
                _, line = _axes(axes, times, 1.0 - s)
        frames.append(
            pl.DataFrame(
                {
                    **{c: [v] * times.size for c, v in key.items()},
                    "model": [model] * times.size,
                    "time_h": times,
                    "cdf_empirical": cdf,
                    "x": x,
                    "y": y,
                    "y_fitted": line,
                },
                schema={**{c: table.schema[c] for c in by}, **_SCHEMA},
                strict=False,
            ).with_columns(pl.col("x", "y", "y_fitted").fill_nan(None))
        )
    if n_zero:
        warnings.warn(
            f"{where}: {n_zero} zero-length failure spell(s) have no point (no "
            "logarithm of 0); they still lower the Kaplan-Meier positions.",
            RelkitWarning,
            stacklevel=2,
        )
    schema = {**{c: table.schema[c] for c in by}, **_SCHEMA}
    if not frames:
        return pl.DataFrame(schema=schema)
    return pl.concat(frames).select(*schema)
