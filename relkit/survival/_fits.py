"""Parametric lifetime fits (maximum likelihood with scipy), per group."""

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import polars as pl

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import ConvergenceError, SchemaError
from relkit.survival._common import check_confidence, duration_resolution_h, prepare
from relkit.survival._gof import GOF_NAME, km_distance
from relkit.survival._mle import fit_mle
from relkit.survival._registry import DEFAULT_MODELS, MODELS, REGISTRY, Model
from relkit.survival._tables import split_groups

__all__ = [
    "DEFAULT_MODELS",
    "MODELS",
    "ZERO_DURATION_H",
    "fit_lifetime_models",
    "fit_lifetimes",
]

#: The former default stand-in for zero-length failure spells (half LANL's
#: 1-minute resolution). No longer a default: pass it as ``zero_duration_h``
#: to get the old answer.
ZERO_DURATION_H = 0.5 / 60
_SHAPE_RANGE = (1e-3, 1e3)
_SCALE_FACTOR = 1e3
NO_INTERIOR = "no_interior_maximum"


def _columns(
    model: str, x: np.ndarray, covariance: np.ndarray, alpha: float
) -> dict[str, float]:
    r"""Map the free parameters onto relkit's columns, with Wald intervals.

    Positive parameters are estimated on the log scale, so their intervals
    are :math:`\exp(\hat v \pm z\,\mathrm{se}(\hat v))` (the delta-method
    interval :math:`\theta \exp(\pm z\,\mathrm{se}(\theta)/\theta)`), never
    negative; a parameter of any sign (generalized gamma :math:`Q`) gets a
    plain Wald interval.
    """
    from scipy.stats import norm

    z = float(norm.ppf(1.0 - alpha / 2.0))
    diag = np.diag(covariance)
    se = np.sqrt(np.where(diag >= 0, diag, np.nan))
    out: dict[str, float] = {}
    for i, (column, (_, kind, _)) in enumerate(REGISTRY[model].columns.items()):
        value, err = float(x[i]), float(se[i])
        if kind == "real":
            est, low, high = value, value - z * err, value + z * err
        else:
            est, low, high = _exp(value), _exp(value - z * err), _exp(value + z * err)
        base = column.removesuffix("_h")
        unit = "_h" if column.endswith("_h") else ""
        out |= {column: est, f"{base}_lower{unit}": low, f"{base}_upper{unit}": high}
    return out


def _exp(x: float) -> float:
    """Return exp(x), or inf where it would overflow (huge errors)."""
    if not math.isfinite(x):
        return x if x != -math.inf else 0.0
    return math.exp(x) if x < 709.0 else math.inf


def _no_interior_reason(
    model: str,
    row: dict[str, float],
    covariance: np.ndarray,
    smallest_h: float,
    exposure_h: float,
) -> str | None:
    """Say why a fit has no interior maximum, or None if it has one."""
    spec = REGISTRY[model]
    names = {c: n for c, (_, _, n) in spec.columns.items()}
    for column, (_, kind, _) in spec.columns.items():
        if column != "scale_h" and kind != "real" and not math.isnan(row[column]):
            continue  # a shape of 0 or inf is said by the range check below
        if not math.isfinite(row[column]) or row[column] == 0:
            return f"{spec.label} {names[column]} {row[column]}"
    for column, (_, kind, _) in spec.columns.items():
        if column != "scale_h" and kind != "real":
            value = row[column]
            if not _SHAPE_RANGE[0] <= value <= _SHAPE_RANGE[1]:
                return (
                    f"{spec.label} {names[column]} {value:.3g} outside "
                    f"[{_SHAPE_RANGE[0]:g}, {_SHAPE_RANGE[1]:g}]"
                )
    scale = row["scale_h"]
    if scale < smallest_h / _SCALE_FACTOR:
        return (
            f"{spec.label} {names['scale_h']} {scale:.3g} h, below 1/{_SCALE_FACTOR:g}"
            f" of the shortest time {smallest_h:.4g} h"
        )
    if scale > _SCALE_FACTOR * exposure_h:
        return (
            f"{spec.label} {names['scale_h']} {scale:.3g} h, above "
            f"{_SCALE_FACTOR:g} x the time at risk {exposure_h:.6g} h"
        )
    if not np.isfinite(covariance).all():
        return f"{spec.label}: standard errors not finite"
    if np.linalg.eigvalsh((covariance + covariance.T) / 2).min() <= 0:
        return f"{spec.label}: Hessian not positive definite"
    return None


def _fit_one(
    model: str,
    data: dict[str, np.ndarray],
    alpha: float,
    errors: str,
    fitted: dict[str, np.ndarray] | None = None,
) -> dict[str, Any]:
    """Fit one model on unique rows with weights (scipy, see ``_mle``).

    ``fitted`` holds the free parameters of the group's models fitted so far
    (nested ones start the next fit); this fit's are added when it converged.
    """
    try:
        res = fit_mle(model, data, fitted) if fitted else fit_mle(model, data)
    except (ValueError, FloatingPointError, np.linalg.LinAlgError) as exc:
        if errors == "raise":
            msg = (
                f"fit_lifetime_models: the {model} fit failed "
                f"({type(exc).__name__}: {exc}). Pass errors='status' to get "
                "the failure in the status column instead."
            )
            raise ConvergenceError(msg) from exc
        return {"status": f"fit failed ({type(exc).__name__})"}
    row: dict[str, Any] = _columns(model, res.x, res.covariance, alpha)
    reason = _no_interior_reason(
        model, row, res.covariance, data["smallest_h"], data["exposure_h"]
    )
    if reason is not None:
        return {"status": f"{NO_INTERIOR} ({reason})"}
    if not res.converged:
        if errors == "raise":
            msg = (
                f"fit_lifetime_models: the {model} fit did not converge "
                f"({res.message}). Pass errors='status' to get the failure in "
                "the status column instead."
            )
            raise ConvergenceError(msg)
        return {"status": f"failed to converge ({res.message})"}
    if fitted is not None:
        fitted[model] = res.x
    loglik = res.log_likelihood
    k = REGISTRY[model].n_params
    return row | {
        "log_likelihood": loglik,
        "aic": 2 * k - 2 * loglik,
        "bic": k * math.log(data["n_failures"]) - 2 * loglik,
        "status": "ok",
    }


def _arrays(part: pl.DataFrame, resolution_h: float) -> dict[str, Any]:
    """Collapse a group to unique (entry, stop, observed) rows with counts.

    Zero-length failure spells become interval-censored in (0, resolution];
    zero-length censored spells carry no information and are left out.
    """
    kept = part.filter((pl.col("stop_h") > 0) | pl.col("observed"))
    rows = (
        kept.group_by("entry_h", "stop_h", "observed")
        .agg(weight=pl.len())
        .sort("entry_h", "stop_h", "observed")
    )
    if rows.height == 1:  # one weighted row: keep the rows as they are
        rows = kept.select("entry_h", "stop_h", "observed", weight=pl.lit(1))
    stop = rows["stop_h"].to_numpy().astype(float)
    observed = rows["observed"].to_numpy().astype(bool)
    zero = stop == 0
    interval = bool(zero.any())
    lower = stop.copy()
    upper = np.where(observed, stop, np.inf)
    upper[zero] = resolution_h
    exact = observed & ~zero
    entry = rows["entry_h"].to_numpy().astype(float)
    weights = rows["weight"].to_numpy().astype(float)
    positive = np.concatenate([stop[stop > 0], upper[zero]])
    return {
        "lower": lower,
        "upper": upper if interval else lower,
        "exact": exact,
        "right": ~observed,
        "interval": interval,
        "entry": entry,
        "weights": weights,
        "n_failures": int(weights[observed].sum()),
        "smallest_h": float(positive.min()) if positive.size else 1.0,
        "exposure_h": float(
            np.sum(weights * (np.where(zero, resolution_h, stop) - entry))
        ),
    }


_LONG_SCHEMA = {
    "model": pl.String,
    "n_units": pl.Int64,
    "n_failures": pl.Int64,
    "n_zero": pl.Int64,
    "rank": pl.Int64,
    "aic": pl.Float64,
    "delta_aic": pl.Float64,
    "bic": pl.Float64,
    "log_likelihood": pl.Float64,
    "scale_h": pl.Float64,
    "scale_lower_h": pl.Float64,
    "scale_upper_h": pl.Float64,
    "shape": pl.Float64,
    "shape_lower": pl.Float64,
    "shape_upper": pl.Float64,
    "shape2": pl.Float64,
    "shape2_lower": pl.Float64,
    "shape2_upper": pl.Float64,
    "shape_if_zero_dropped": pl.Float64,
    "status": pl.String,
}


def _check_models(models: Sequence[str], where: str) -> None:
    if unknown := [m for m in models if m not in MODELS]:
        msg = f"{where}: unknown model(s) {unknown}; choose from {list(MODELS)}."
        raise SchemaError(msg)


def fit_lifetime_models(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    models: Sequence[Model] = DEFAULT_MODELS,
    confidence: float = DEFAULT_CONFIDENCE,
    resolution_h: float | None = None,
    zero_duration_h: float | None = None,
    invalid: Literal["raise", "drop"] = "raise",
    errors: Literal["status", "raise"] = "status",
) -> pl.DataFrame:
    r"""Fit parametric lifetime models by maximum likelihood, per group, ranked.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table: ``entry_h`` (h, optional, 0 if absent), ``stop_h`` (h
        from the origin), ``observed`` (bool), optional ``unit_id``, and the
        ``by`` columns; e.g. from :func:`build_tbf_table`.
    by : sequence of str, default ()
        Columns to fit separately by.
    models : sequence of str, default :data:`DEFAULT_MODELS`
        All six by default; any of :data:`MODELS`: ``"exponential",
        "weibull", "lognormal", "loglogistic", "gamma", "gengamma"``, each
        fitted by maximising its likelihood with :func:`scipy.optimize.minimize`
        (BFGS on the log of each positive parameter) with standard errors from
        a central-difference Hessian; the four lifelines fits well give the
        same log-likelihood as lifelines' fitters to 1e-6 (tested) about 20x
        faster, and gamma and generalized gamma in milliseconds where
        lifelines' autograd took a minute.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the Wald intervals on the parameters.
    resolution_h : float, optional
        Resolution of the time stamps the durations came from (h), e.g.
        :func:`timestamp_resolution_h` of the events' ``ts``. A failure spell
        of length 0 is interval-censored in ``(0, resolution_h]``. If None,
        it is inferred from the failure times themselves (the coarsest of
        1 h, 1 min, 1 s, 1 ms, 1 µs they are all multiples of) and ``status``
        says so.
    zero_duration_h : float, optional
        The old stand-in: set zero-length failure spells to this many hours
        instead of interval-censoring them (``status`` says so). Not the
        default: any stand-in decides the Weibull shape of data with many
        zero gaps.
    invalid : {"raise", "drop"}, default "raise"
        Invalid rows (see :func:`validate_survival_table`) raise or are dropped
        with a :class:`~relkit.errors.RelkitWarning`.
    errors : {"status", "raise"}, default "status"
        A fit that fails is reported in ``status`` or raised as
        :class:`~relkit.errors.ConvergenceError`.

    Returns
    -------
    pl.DataFrame
        One row per group and model, sorted by ``*by`` then ``models`` order.
        Columns:

        - ``*by, model``; ``n_units`` (distinct ``unit_id``, or rows);
          ``n_failures`` (observed spells, zero-length ones included);
          ``n_zero`` (zero-length failure spells);
        - ``rank`` (1 = lowest AIC among the group's fits whose status starts
          with ``"ok"``; null for the others) and ``delta_aic`` (AIC minus the
          group's lowest); ``aic``, ``bic``, ``log_likelihood``;
        - ``scale_h, scale_lower_h, scale_upper_h, shape, shape_lower,
          shape_upper, shape2, shape2_lower, shape2_upper``: exponential mean
          (no shape); Weibull :math:`\lambda, \rho`; log-normal median
          :math:`e^{\mu}` and :math:`\sigma`; log-logistic
          :math:`\alpha, \beta`; gamma scale :math:`\theta` and shape
          :math:`k`; generalized gamma :math:`e^{\mu}, \sigma` and ``shape2``
          :math:`Q` (Prentice 1974, as lifelines' ``lambda_``).
        - ``shape_if_zero_dropped``: the shape fitted with the zero-length
          spells left out (null when there are none, or the model has no
          shape), to show how much they move the answer: leaving them out
          is what merging simultaneous failures into one event does.
        - ``status``: ``"ok"``; ``"insufficient failures (n=1, need ≥2)"``;
          ``"all censored (0 failures in 3 units)"``;
          ``"no_interior_maximum (log-normal median 2.6e-10 h, ...)"``;
          ``"failed to converge (<optimiser message>)"``; ``"fit failed
          (ValueError)"``; notes on zero-length spells follow after ``"; "``.

        Parameters and criteria are null unless ``status`` starts with "ok".

    Raises
    ------
    SchemaError
        If a column is missing, a model unknown, a row invalid (with
        ``invalid="raise"``) or a resolution not positive.
    ConvergenceError
        With ``errors="raise"``, when a model's fit fails or does not converge.

    Notes
    -----
    With left truncation at :math:`a_i` (``entry_h``), failure or censoring
    time :math:`t_i` (``stop_h``) and :math:`\delta_i` (``observed``), the
    log-likelihood maximised is

    .. math:: \ell = \sum_i \delta_i \log h(t_i) - H(t_i) + H(a_i),

    i.e. each unit contributes :math:`f(t_i)/S(a_i)` or :math:`S(t_i)/S(a_i)`
    (Klein & Moeschberger §3.4); a zero-length failure spell contributes
    :math:`(1 - S(r))/S(a_i)` (interval-censored in :math:`(0, r]`). Rows
    are collapsed to unique ``(entry_h, stop_h, observed)`` with counts as
    weights (the same likelihood, fewer terms).

    AIC :math:`= 2k - 2\ell`; BIC :math:`= k \ln d - 2\ell` with :math:`d`
    the number of observed failures, not of units: under censoring the
    information grows with the events (Volinsky & Raftery 2000).

    A fit has **no interior maximum** when the likelihood keeps rising toward
    the edge of the parameter space, so the optimiser stops wherever it
    gives up: a parameter non-finite; a shape-like parameter outside
    [1e-3, 1e3]; a scale below 1/1000 of the shortest time or above 1000 x
    the time at risk; or standard errors non-finite or a Hessian not
    positive definite. Such a fit reports no parameters and takes no rank.
    Fewer than two failures give no fit: use
    :func:`relkit.metrics.mtbf_bounds` for chi-square bounds instead.

    References
    ----------
    .. [1] C. Davidson-Pilon, JOSS 4(40), 2019. doi:10.21105/joss.01317
    .. [2] J. P. Klein and M. L. Moeschberger, *Survival Analysis*, 2003.
    .. [3] C. T. Volinsky and A. E. Raftery, "Bayesian information criterion
       for censored survival models", Biometrics 56(1), 2000, 256-262.
       doi:10.1111/j.0006-341X.2000.00256.x
    .. [4] R. L. Prentice, Biometrika 61(3), 1974. doi:10.1093/biomet/61.3.539

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "stop_h": [120.0, 340, 510, 760, 980, 1150, 1400, 1720] + [2000.0] * 4,
    ...         "observed": [True] * 4 + [False] + [True] * 3 + [False] * 4,
    ...     }
    ... )
    >>> fits = fit_lifetime_models(t, models=["exponential", "weibull"])
    >>> fits.select("model", "rank", "scale_h", "shape", "status").with_columns(
    ...     pl.col("scale_h", "shape").round(3)
    ... )
    shape: (2, 5)
    ┌─────────────┬──────┬──────────┬───────┬────────┐
    │ model       ┆ rank ┆ scale_h  ┆ shape ┆ status │
    │ ---         ┆ ---  ┆ ---      ┆ ---   ┆ ---    │
    │ str         ┆ i64  ┆ f64      ┆ f64   ┆ str    │
    ╞═════════════╪══════╪══════════╪═══════╪════════╡
    │ exponential ┆ 1    ┆ 2140.0   ┆ null  ┆ ok     │
    │ weibull     ┆ 2    ┆ 2046.725 ┆ 1.146 ┆ ok     │
    └─────────────┴──────┴──────────┴───────┴────────┘
    """
    where = "fit_lifetime_models"
    alpha = check_confidence(confidence, where)
    _check_models(models, where)
    for name, value in (
        ("zero_duration_h", zero_duration_h),
        ("resolution_h", resolution_h),
    ):
        if value is not None and not (math.isfinite(value) and value > 0):
            msg = f"{where}: {name} must be > 0 or None, found {value}."
            raise SchemaError(msg)
    table = prepare(table, by, invalid, where)
    rows = []
    for key, part in split_groups(table, by):
        rows.extend(
            _fit_group(part, key, models, alpha, resolution_h, zero_duration_h, errors)
        )
    key_schema = {c: table.schema[c] for c in by}
    out = pl.DataFrame(rows, schema={**key_schema, **_LONG_SCHEMA})
    ok = pl.col("status").str.starts_with("ok")
    lowest = pl.col("aic").filter(ok).min()
    out = out.with_columns(
        rank=pl.when(ok)
        .then(pl.col("aic").rank("ordinal").over([*by, ok]))
        .cast(pl.Int64),
        delta_aic=pl.when(ok).then(pl.col("aic") - (lowest.over(by) if by else lowest)),
    )
    return out.select(*by, *_LONG_SCHEMA)


def _fit_group(
    part: pl.DataFrame,
    key: dict[str, Any],
    models: Sequence[str],
    alpha: float,
    resolution_h: float | None,
    zero_duration_h: float | None,
    errors: str,
) -> list[dict[str, Any]]:
    """Fit every model to one group; return its rows (rank filled later)."""
    n_units = part["unit_id"].n_unique() if "unit_id" in part.columns else part.height
    zero = part["stop_h"] == 0
    n_zero = int((zero & part["observed"]).sum())
    n_zero_censored = int((zero & ~part["observed"]).sum())
    notes = []
    if n_zero_censored:
        notes.append(
            f"{n_zero_censored} zero-length censored spell(s) left out (no information)"
        )
    if n_zero and zero_duration_h is not None:
        part = part.with_columns(
            stop_h=pl.when(zero & pl.col("observed"))
            .then(zero_duration_h)
            .otherwise("stop_h")
        )
        notes.append(
            f"{n_zero} zero-length spell(s) set to {zero_duration_h:.4g} h "
            "(zero_duration_h given)"
        )
        resolution = zero_duration_h
    elif n_zero:
        observed_stops = part.filter(pl.col("observed"))["stop_h"].to_numpy()
        resolution = (
            resolution_h
            if resolution_h is not None
            else duration_resolution_h(observed_stops)
        )
        how = (
            "resolution_h given"
            if resolution_h is not None
            else "resolution inferred from the failure times; pass resolution_h "
            "to set it"
        )
        notes.append(
            f"{n_zero} zero-length spell(s) interval-censored in "
            f"(0, {resolution:.4g} h] ({how})"
        )
    else:
        resolution = resolution_h or 1.0
    n_fail = int(part["observed"].sum())
    base = {**key, "n_units": n_units, "n_failures": n_fail, "n_zero": n_zero}
    if n_fail == 0:
        fits = {
            m: {"status": f"all censored (0 failures in {n_units} units)"}
            for m in models
        }
    elif n_fail < 2:
        fits = {
            m: {"status": f"insufficient failures (n={n_fail}, need ≥2)"}
            for m in models
        }
    else:
        data = _arrays(part, resolution)
        found: dict[str, np.ndarray] = {}
        fits = {m: _fit_one(m, data, alpha, errors, found) for m in models}
        if n_zero:
            kept = part.filter(~zero)
            dropped = (
                _arrays(kept, resolution) if int(kept["observed"].sum()) >= 2 else None
            )
            found_dropped: dict[str, np.ndarray] = {}
            for m, fit in fits.items():
                if dropped is None or "shape" not in REGISTRY[m].columns:
                    continue
                alt = _fit_one(m, dropped, alpha, "status", found_dropped)
                if alt["status"].startswith("ok"):
                    fit["shape_if_zero_dropped"] = alt["shape"]
    note = "".join(f"; {n}" for n in notes)
    return [
        base | {"model": m} | fit | {"status": fit["status"] + note}
        for m, fit in fits.items()
    ]


_SUMMARY_SCHEMA = {
    "n_units": pl.Int64,
    "n_failures": pl.Int64,
    "best_model": pl.String,
    "aic": pl.Float64,
    "weibull_shape": pl.Float64,
    "weibull_shape_lower": pl.Float64,
    "weibull_shape_upper": pl.Float64,
    "weibull_scale_h": pl.Float64,
    "n_zero": pl.Int64,
    "weibull_shape_if_zero_dropped": pl.Float64,
    "bic": pl.Float64,
    "gof_statistic": pl.Float64,
    "gof_name": pl.String,
    "status": pl.String,
}


def fit_lifetimes(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    models: Sequence[Model] = DEFAULT_MODELS,
    confidence: float = DEFAULT_CONFIDENCE,
    resolution_h: float | None = None,
    zero_duration_h: float | None = None,
    invalid: Literal["raise", "drop"] = "raise",
) -> pl.DataFrame:
    """Fit lifetime models per group and summarise: best model by AIC, Weibull shape.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table (``entry_h``, ``stop_h``, ``observed``, ``by`` columns).
    by : sequence of str, default ()
        Columns to fit separately by.
    models : sequence of str, default :data:`DEFAULT_MODELS`
        Candidate models (any of :data:`MODELS`); ``"weibull"`` is always
        fitted for the Weibull columns.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the Weibull shape interval.
    resolution_h, zero_duration_h : float, optional
        Handling of zero-length failure spells; see :func:`fit_lifetime_models`.
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.

    Returns
    -------
    pl.DataFrame
        One row per group, sorted by ``*by``. Columns ``*by, n_units,
        n_failures, best_model`` (rank 1 of :func:`fit_lifetime_models`: the
        lowest AIC among fits with an interior maximum; null if none),
        ``aic`` (of the best model), ``weibull_shape, weibull_shape_lower,
        weibull_shape_upper`` (Wald interval on the log scale),
        ``weibull_scale_h`` (h), ``n_zero`` (zero-length failure spells),
        ``weibull_shape_if_zero_dropped``, ``bic`` (of the best model),
        ``gof_statistic`` and ``gof_name`` (goodness of fit of the best model,
        see :func:`probability_plot`), ``status``: with fewer than 2 failures
        the reason there is no fit (``"insufficient failures (n=1, need
        ≥2)"``, ``"all censored (0 failures in 3 units)"``); otherwise
        ``"ok"`` (or ``"no model fitted"``) followed by ``"; model: status"``
        for each model that did not fit cleanly and by notes such as
        ``"; 3 zero-length spell(s) interval-censored in (0, 0.01667 h]
        (...)"``.

    Raises
    ------
    SchemaError
        If a column is missing or a row is invalid (with ``invalid="raise"``).

    See Also
    --------
    fit_lifetime_models : Every model's parameters, rank and status.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "mode": ["a"] * 3 + ["b"] * 2,
    ...         "stop_h": [10.0, 25.0, 40.0, 5.0, 9.0],
    ...         "observed": [True, True, False, True, False],
    ...     }
    ... )
    >>> fit_lifetimes(t, by=["mode"], models=["exponential", "weibull"])[
    ...     ["mode", "n_failures", "best_model", "status"]
    ... ]
    shape: (2, 4)
    ┌──────┬────────────┬─────────────┬─────────────────────────────────┐
    │ mode ┆ n_failures ┆ best_model  ┆ status                          │
    │ ---  ┆ ---        ┆ ---         ┆ ---                             │
    │ str  ┆ i64        ┆ str         ┆ str                             │
    ╞══════╪════════════╪═════════════╪═════════════════════════════════╡
    │ a    ┆ 2          ┆ exponential ┆ ok                              │
    │ b    ┆ 1          ┆ null        ┆ insufficient failures (n=1, ne… │
    └──────┴────────────┴─────────────┴─────────────────────────────────┘
    """
    models = list(dict.fromkeys([*models, "weibull"]))
    _check_models(models, "fit_lifetimes")
    table = prepare(table, by, invalid, "fit_lifetimes")
    long = fit_lifetime_models(
        table,
        by=by,
        models=models,
        confidence=confidence,
        resolution_h=resolution_h,
        zero_duration_h=zero_duration_h,
    )
    data = {tuple(k.values()): p for k, p in split_groups(table, by)}
    rows = []
    for key, part in split_groups(long, by):
        best = part.filter(pl.col("rank") == 1)
        weib = part.filter(pl.col("model") == "weibull").row(0, named=True)
        statuses = part["status"].to_list()
        if part["n_failures"][0] < 2:
            status = statuses[0]  # no model fitted, for one shared reason
        else:
            heads = [s.split(";")[0] for s in statuses]
            bad = [
                f"{m}: {h}"
                for m, h in zip(part["model"], heads, strict=True)
                if h != "ok"
            ]
            notes = [n.strip() for n in statuses[0].split(";")[1:]]
            first = "ok" if best.height else "no model fitted"
            status = "; ".join([first, *bad, *notes])
        gof = None
        if best.height:
            b = best.row(0, named=True)
            gof = km_distance(
                data[tuple(key.values())],
                b["model"],
                b["scale_h"],
                b["shape"],
                b["shape2"],
            )
        rows.append(
            {
                **key,
                "n_units": part["n_units"][0],
                "n_failures": part["n_failures"][0],
                "best_model": best["model"][0] if best.height else None,
                "aic": best["aic"][0] if best.height else None,
                "weibull_shape": weib["shape"],
                "weibull_shape_lower": weib["shape_lower"],
                "weibull_shape_upper": weib["shape_upper"],
                "weibull_scale_h": weib["scale_h"],
                "n_zero": part["n_zero"][0],
                "weibull_shape_if_zero_dropped": weib["shape_if_zero_dropped"],
                "bic": best["bic"][0] if best.height else None,
                "gof_statistic": gof,
                "gof_name": GOF_NAME if gof is not None else None,
                "status": status,
            }
        )
    schema = {**{c: long.schema[c] for c in by}, **_SUMMARY_SCHEMA}
    return pl.DataFrame(rows, schema=schema)
