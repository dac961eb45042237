"""Parametric lifetime fits (maximum likelihood via lifelines), per group."""

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from relkit.errors import ConvergenceError, SchemaError
from relkit.survival._common import check_confidence, prepare
from relkit.survival._tables import split_groups

if TYPE_CHECKING:
    from lifelines.fitters import ParametricUnivariateFitter

__all__ = ["MODELS", "ZERO_DURATION_H", "fit_lifetime_models", "fit_lifetimes"]

Model = Literal["exponential", "weibull", "lognormal", "loglogistic"]
#: The parametric models :func:`fit_lifetime_models` knows, in default order.
MODELS: tuple[Model, ...] = ("exponential", "weibull", "lognormal", "loglogistic")
#: Default stand-in for zero-length failure spells: half LANL's 1-minute resolution.
ZERO_DURATION_H = 0.5 / 60
_SHAPE_RANGE = (1e-3, 1e3)
_SCALE_FACTOR = 1e3


# ----------------------------------------------------------------- parametric fits


def _fitter(model: str, alpha: float) -> "ParametricUnivariateFitter":
    import lifelines

    classes = {
        "exponential": lifelines.ExponentialFitter,
        "weibull": lifelines.WeibullFitter,
        "lognormal": lifelines.LogNormalFitter,
        "loglogistic": lifelines.LogLogisticFitter,
    }
    return classes[model](alpha=alpha)


def _params(model: str, f: "ParametricUnivariateFitter") -> dict[str, float]:
    r"""Map lifelines' fitted parameters onto relkit's scale/shape columns.

    Confidence intervals of positive parameters are Wald intervals on the log
    scale, :math:`\theta \exp(\pm z\,\mathrm{se}/\theta)` (delta method), so a
    shape or scale bound is never negative; the log-normal :math:`\mu` is
    already on the log scale, and its median is :math:`e^{\mu}`.
    """
    from scipy.stats import norm

    z = float(norm.ppf(1.0 - f.alpha / 2.0))
    se = f.summary["se(coef)"]
    name = {
        "exponential": ("lambda_", None),
        "weibull": ("lambda_", "rho_"),
        "lognormal": ("mu_", "sigma_"),
        "loglogistic": ("alpha_", "beta_"),
    }[model]

    def interval(param: str) -> tuple[float, float, float]:
        value, err = float(f.params_[param]), float(se[param])
        if param == "mu_":
            return math.exp(value), math.exp(value - z * err), math.exp(value + z * err)
        spread = math.exp(z * err / value) if value > 0 else math.inf
        return value, value / spread, value * spread

    scale, shape = name
    out = dict(
        zip(("scale_h", "scale_lower_h", "scale_upper_h"), interval(scale), strict=True)
    )
    if shape is not None:
        out |= dict(
            zip(("shape", "shape_lower", "shape_upper"), interval(shape), strict=True)
        )
    return out


def _fit_one(
    model: str,
    t: np.ndarray,
    e: np.ndarray,
    entry: np.ndarray,
    alpha: float,
    exposure_h: float,
    errors: str,
) -> dict[str, Any]:
    """Fit one model; return its row (parameters, aic, status)."""
    from lifelines.exceptions import ConvergenceError as LifelinesConvergenceError

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            f = _fitter(model, alpha).fit(t, e, entry=entry if entry.any() else None)
            row: dict[str, Any] = _params(model, f)
        except Exception as exc:  # lifelines raises many kinds; never leak them
            if errors == "raise":
                first = str(exc).splitlines()[0] if str(exc) else ""
                msg = (
                    f"fit_lifetime_models: the {model} fit failed "
                    f"({type(exc).__name__}: {first}). Pass errors='status' to get "
                    "the failure in the status column instead."
                )
                raise ConvergenceError(msg) from exc
            kind = (
                "failed to converge"
                if isinstance(exc, LifelinesConvergenceError)
                else "fit failed"
            )
            return {"status": f"{kind} ({type(exc).__name__})"}
    warned = sorted({w.category.__name__ for w in caught})
    values = [v for v in row.values() if v is not None]
    shape = row.get("shape")
    if not all(math.isfinite(v) for v in (row["scale_h"], row.get("shape", 1.0))):
        status = "implausible fit: non-finite parameter"
    elif shape is not None and not _SHAPE_RANGE[0] <= shape <= _SHAPE_RANGE[1]:
        status = (
            f"implausible fit: shape {shape:.3g} outside "
            f"[{_SHAPE_RANGE[0]:g}, {_SHAPE_RANGE[1]:g}]"
        )
    elif row["scale_h"] > _SCALE_FACTOR * exposure_h:
        status = (
            f"implausible fit: scale {row['scale_h']:.3g} h > "
            f"{_SCALE_FACTOR:g} x the time at risk ({exposure_h:.6g} h)"
        )
    else:
        status = "ok"
        if not all(math.isfinite(v) for v in values):
            status += " (confidence interval unavailable)"
        if warned:
            status += f" (lifelines warned: {', '.join(warned)})"
        row |= {"aic": float(f.AIC_), "log_likelihood": float(f.log_likelihood_)}
        return row | {"status": status}
    if warned:
        status += f" (lifelines warned: {', '.join(warned)})"
    return {"status": status}


_LONG_SCHEMA = {
    "model": pl.String,
    "n_units": pl.Int64,
    "n_failures": pl.Int64,
    "aic": pl.Float64,
    "log_likelihood": pl.Float64,
    "scale_h": pl.Float64,
    "scale_lower_h": pl.Float64,
    "scale_upper_h": pl.Float64,
    "shape": pl.Float64,
    "shape_lower": pl.Float64,
    "shape_upper": pl.Float64,
    "status": pl.String,
}


def fit_lifetime_models(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    models: Sequence[Model] = MODELS,
    confidence: float = 0.95,
    zero_duration_h: float | None = ZERO_DURATION_H,
    invalid: Literal["raise", "drop"] = "raise",
    errors: Literal["status", "raise"] = "status",
) -> pl.DataFrame:
    r"""Fit parametric lifetime models by maximum likelihood, per group.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table: ``entry_h`` (h, optional, 0 if absent), ``stop_h`` (h
        from the origin), ``observed`` (bool), optional ``unit_id``, and the
        ``by`` columns; e.g. from :func:`build_tbf_table`.
    by : sequence of str, default ()
        Columns to fit separately by.
    models : sequence of {"exponential", "weibull", "lognormal", "loglogistic"}
        Models to fit (lifelines ``ExponentialFitter``, ``WeibullFitter``,
        ``LogNormalFitter``, ``LogLogisticFitter``).
    confidence : float, default 0.95
        Two-sided level of the Wald intervals on the parameters.
    zero_duration_h : float or None, default 0.5/60 (half a minute)
        Stand-in for spells with ``stop_h == 0`` (simultaneous failures), since
        the likelihoods need :math:`t > 0`; None drops those spells instead.
        Either way ``status`` says how many.
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
        Columns ``*by, model, n_units`` (distinct ``unit_id``, or rows),
        ``n_failures, aic, log_likelihood, scale_h, scale_lower_h,
        scale_upper_h, shape, shape_lower, shape_upper, status``. Scale and
        shape: exponential mean (shape null); Weibull :math:`\lambda, \rho`
        (``weibull_scale_h``, ``weibull_shape``); log-normal median
        :math:`e^{\mu}` and :math:`\sigma`; log-logistic :math:`\alpha, \beta`.
        Parameters are null unless ``status`` starts with ``"ok"``.
        ``status``: ``"ok"``, ``"insufficient failures (n=1, need ≥2)"``,
        ``"all censored (0 failures in 3 units)"``, ``"implausible fit: ..."``
        (shape outside [1e-3, 1e3], or scale above 1000 x the time at risk),
        ``"failed to converge (...)"``; warnings lifelines raised are named in
        it (``"ok (lifelines warned: ApproximationWarning)"``), never re-raised.

    Raises
    ------
    SchemaError
        If a column is missing or a row is invalid (with ``invalid="raise"``).
    ConvergenceError
        With ``errors="raise"``, when lifelines fails to fit a model.

    Notes
    -----
    With left truncation at :math:`a_i` (``entry_h``), failure or censoring
    time :math:`t_i` (``stop_h``) and :math:`\delta_i` (``observed``), the
    log-likelihood maximised is

    .. math:: \ell = \sum_i \delta_i \log h(t_i) - H(t_i) + H(a_i),

    i.e. each unit contributes :math:`f(t_i)/S(a_i)` or :math:`S(t_i)/S(a_i)`
    (Klein & Moeschberger §3.4). AIC :math:`= 2k - 2\ell`. Fewer than two
    failures give no fit: use :func:`relkit.metrics.mtbf_bounds` for
    chi-square bounds instead.

    References
    ----------
    .. [1] C. Davidson-Pilon, JOSS 4(40), 2019. doi:10.21105/joss.01317
    .. [2] J. P. Klein and M. L. Moeschberger, *Survival Analysis*, 2003.

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
    >>> fits.select("model", "scale_h", "shape", "status").with_columns(
    ...     pl.col("scale_h", "shape").round(3)
    ... )
    shape: (2, 4)
    ┌─────────────┬──────────┬───────┬────────┐
    │ model       ┆ scale_h  ┆ shape ┆ status │
    │ ---         ┆ ---      ┆ ---   ┆ ---    │
    │ str         ┆ f64      ┆ f64   ┆ str    │
    ╞═════════════╪══════════╪═══════╪════════╡
    │ exponential ┆ 2140.0   ┆ null  ┆ ok     │
    │ weibull     ┆ 2046.725 ┆ 1.146 ┆ ok     │
    └─────────────┴──────────┴───────┴────────┘
    """
    where = "fit_lifetime_models"
    alpha = check_confidence(confidence, where)
    if unknown := [m for m in models if m not in MODELS]:
        msg = f"{where}: unknown model(s) {unknown}; choose from {list(MODELS)}."
        raise SchemaError(msg)
    if zero_duration_h is not None and not zero_duration_h > 0:
        msg = f"{where}: zero_duration_h must be > 0 or None, found {zero_duration_h}."
        raise SchemaError(msg)
    table = prepare(table, by, invalid, where)
    rows = []
    for key, part in split_groups(table, by):
        n_units = (
            part["unit_id"].n_unique() if "unit_id" in part.columns else part.height
        )
        zero = part["stop_h"] == 0
        n_zero = int(zero.sum())
        note = ""
        if n_zero and zero_duration_h is None:
            part = part.filter(~zero)
            note = f"; {n_zero} zero-length spell(s) dropped"
        elif n_zero:
            part = part.with_columns(
                stop_h=pl.when(zero).then(zero_duration_h).otherwise("stop_h")
            )
            note = f"; {n_zero} zero-length spell(s) set to {zero_duration_h:.4g} h"
        n_fail = int(part["observed"].sum())
        base = {**key, "n_units": n_units, "n_failures": n_fail}
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
            t = part["stop_h"].to_numpy()
            a = part["entry_h"].to_numpy()
            e = part["observed"].to_numpy().astype(int)
            exposure = float(np.sum(t - a))
            fits = {m: _fit_one(m, t, e, a, alpha, exposure, errors) for m in models}
        for m, fit in fits.items():
            fit["status"] += note
            rows.append(base | {"model": m} | fit)
    key_schema = {c: table.schema[c] for c in by}
    return pl.DataFrame(rows, schema={**key_schema, **_LONG_SCHEMA}).select(
        *by, *_LONG_SCHEMA
    )


def fit_lifetimes(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    models: Sequence[Model] = MODELS,
    confidence: float = 0.95,
    zero_duration_h: float | None = ZERO_DURATION_H,
    invalid: Literal["raise", "drop"] = "raise",
) -> pl.DataFrame:
    """Fit lifetime models per group and summarise: best model by AIC, Weibull shape.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table (``entry_h``, ``stop_h``, ``observed``, ``by`` columns).
    by : sequence of str, default ()
        Columns to fit separately by.
    models : sequence of str, default all of :data:`MODELS`
        Candidate models; ``"weibull"`` is always fitted for the Weibull columns.
    confidence : float, default 0.95
        Two-sided level of the Weibull shape interval.
    zero_duration_h : float or None, default 0.5/60
        See :func:`fit_lifetime_models`.
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.

    Returns
    -------
    pl.DataFrame
        One row per group, sorted by ``*by``. Columns ``*by, n_units,
        n_failures, best_model`` (minimum AIC among fits with status ok; null
        if none), ``aic`` (of the best model), ``weibull_shape,
        weibull_shape_lower, weibull_shape_upper`` (Wald interval of lifelines'
        ``rho_``), ``weibull_scale_h`` (h), ``status``: with fewer than
        2 failures the reason there is no fit (``"insufficient failures (n=1,
        need ≥2)"``, ``"all censored (0 failures in 3 units)"``); otherwise
        ``"ok"`` (or ``"no model fitted"``) followed by ``"; model: status"``
        for each model that did not fit cleanly and by notes such as
        ``"; 3 zero-length spell(s) set to 0.008333 h"``.

    Raises
    ------
    SchemaError
        If a column is missing or a row is invalid (with ``invalid="raise"``).

    See Also
    --------
    fit_lifetime_models : Every model's parameters and status.

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
    long = fit_lifetime_models(
        table,
        by=by,
        models=models,
        confidence=confidence,
        zero_duration_h=zero_duration_h,
        invalid=invalid,
    )
    rows = []
    for key, part in split_groups(long, by):
        ok = part.filter(pl.col("status").str.starts_with("ok"))
        best = ok.sort("aic", maintain_order=True).head(1)
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
            first = "ok" if ok.height else "no model fitted"
            status = "; ".join([first, *bad, *notes])
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
                "status": status,
            }
        )
    schema = {
        **{c: long.schema[c] for c in by},
        "n_units": pl.Int64,
        "n_failures": pl.Int64,
        "best_model": pl.String,
        "aic": pl.Float64,
        "weibull_shape": pl.Float64,
        "weibull_shape_lower": pl.Float64,
        "weibull_shape_upper": pl.Float64,
        "weibull_scale_h": pl.Float64,
        "status": pl.String,
    }
    return pl.DataFrame(rows, schema=schema)
