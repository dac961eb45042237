r"""Survival analysis of failures: tables, Kaplan-Meier, parametric lifetime fits.

The only relkit module that uses lifelines (imported inside functions). Inputs
are survival tables (see :func:`build_tbf_table`): one row per spell with
``entry_h`` (left truncation), ``stop_h`` (hours from the spell's origin) and
``observed`` (True = failure seen, False = right-censored).

Policies
--------
- Invalid spells (``stop_h < 0``, ``entry_h < 0``, ``entry_h > stop_h``, nulls)
  are refused with a :class:`~relkit.errors.SchemaError` naming each unit and
  data row; ``invalid="drop"`` drops them with a
  :class:`~relkit.errors.RelkitWarning` naming them.
- Zero-length failure spells (simultaneous failures; a failure at launch) are
  kept by Kaplan-Meier; parametric fits set them to ``zero_duration_h`` (half
  a minute by default) or drop them, and ``status`` says how many.
- A node with an unknown ``in_service_ts`` loses its first gap
  (:func:`build_tbf_exclusions` counts it).
- lifelines' warnings are recorded in ``status``, never re-raised; its errors
  become ``status`` text or a relkit error (``ConvergenceError``,
  ``InsufficientDataError``). Fits with fewer than 2 failures, non-finite
  parameters, a shape outside [1e-3, 1e3] or a scale above 1000 x the time at
  risk report no parameters.

References
----------
.. [1] E. L. Kaplan and P. Meier, "Nonparametric estimation from incomplete
   observations", JASA 53(282), 1958. doi:10.1080/01621459.1958.10501452
.. [2] C. Davidson-Pilon, "lifelines: survival analysis in Python", JOSS 4(40),
   2019. doi:10.21105/joss.01317
.. [3] J. P. Klein and M. L. Moeschberger, *Survival Analysis: Techniques for
   Censored and Truncated Data*, 2nd ed., Springer, 2003, ch. 3-4.
.. [4] B. Schroeder and G. A. Gibson, "A large-scale study of failures in
   high-performance computing systems", DSN 2006. doi:10.1109/DSN.2006.5
"""

import math
import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import polars as pl

from relkit._survival_tables import (
    build_first_failure_table,
    build_lifetime_table,
    build_tbf_exclusions,
    build_tbf_table,
    model_density,
    split_groups,
    validate_survival_table,
)
from relkit.errors import ConvergenceError, InsufficientDataError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    from lifelines.fitters import ParametricUnivariateFitter

__all__ = [
    "MODELS",
    "build_first_failure_table",
    "build_lifetime_table",
    "build_tbf_exclusions",
    "build_tbf_table",
    "cumulative_incidence",
    "fit_lifetime_models",
    "fit_lifetimes",
    "kaplan_meier",
    "model_density",
    "nelson_aalen",
    "validate_survival_table",
]

Model = Literal["exponential", "weibull", "lognormal", "loglogistic"]
#: The parametric models :func:`fit_lifetime_models` knows, in default order.
MODELS: tuple[Model, ...] = ("exponential", "weibull", "lognormal", "loglogistic")
#: Default stand-in for zero-length failure spells: half LANL's 1-minute resolution.
ZERO_DURATION_H = 0.5 / 60
_SHAPE_RANGE = (1e-3, 1e3)
_SCALE_FACTOR = 1e3
_MAX_ROWS = 5000


def _check_confidence(confidence: float, where: str) -> float:
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        msg = f"{where}: confidence must be in (0, 1), found {confidence!r}; e.g. 0.95."
        raise SchemaError(msg)
    return 1.0 - float(confidence)


def _prepare(
    table: pl.DataFrame,
    by: Sequence[str],
    invalid: Literal["raise", "drop"],
    where: str,
) -> pl.DataFrame:
    require_columns(table, list(by), where=where)
    return validate_survival_table(table, invalid=invalid, where=where)


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
    alpha = _check_confidence(confidence, where)
    if unknown := [m for m in models if m not in MODELS]:
        msg = f"{where}: unknown model(s) {unknown}; choose from {list(MODELS)}."
        raise SchemaError(msg)
    if zero_duration_h is not None and not zero_duration_h > 0:
        msg = f"{where}: zero_duration_h must be > 0 or None, found {zero_duration_h}."
        raise SchemaError(msg)
    table = _prepare(table, by, invalid, where)
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


# ----------------------------------------------------------- non-parametric curves


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


def _check_risk_set(
    entry: np.ndarray, stop: np.ndarray, where: str, key: dict[str, Any]
) -> None:
    """Refuse a group whose risk set empties before a later unit enters.

    As :func:`kaplan_meier` (lifelines refuses such data): after the last
    unit at risk has left, no estimate links the earlier curve to the later
    units, so the curve after that time is not identifiable.
    """
    order = np.argsort(entry, kind="stable")
    first_stop = np.maximum.accumulate(stop[order])
    gaps = np.flatnonzero(entry[order][1:] > first_stop[:-1])
    if gaps.size:
        k = gaps[0]
        detail = (
            f"every unit that entered by {entry[order][k]:g} h has left by "
            f"{first_stop[k]:g} h, and the next enters at {entry[order][k + 1]:g} h"
        )
        raise _empty_risk_set(where, key, detail)


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
    alpha = _check_confidence(confidence, where)
    table = _prepare(table, by, invalid, where)
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
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            try:
                f = cls(alpha=alpha).fit(
                    part["stop_h"].to_numpy(),
                    part["observed"].to_numpy(),
                    entry=part["entry_h"].to_numpy(),
                )
            except StatError as exc:
                raise _empty_risk_set(where, key, str(exc)) from exc
        events = f.event_table
        est = f.survival_function_ if kind == "km" else f.cumulative_hazard_
        ci = f.confidence_interval_
        at_risk = events["at_risk"].reindex(est.index, fill_value=0)
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
            }
        )
    out = pl.concat(frames, how="vertical_relaxed")
    return out.with_columns(pl.col(c).cast(table.schema[c]) for c in by)


def kaplan_meier(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    confidence: float = 0.95,
    invalid: Literal["raise", "drop"] = "raise",
    max_rows: int = _MAX_ROWS,
) -> pl.DataFrame:
    r"""Estimate the survival function by Kaplan-Meier, with delayed entry.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table: ``entry_h`` (h, optional), ``stop_h`` (h), ``observed``
        (bool) and the ``by`` columns.
    by : sequence of str, default ()
        One curve per group.
    confidence : float, default 0.95
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
        n_at_risk``: one row per step point (time 0, and each failure, censoring
        or entry time), sorted by ``*by, time_h``. ``survival`` is
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
    :math:`n_j = \#\{i: a_i \le t_j \le t_i\}` (units that have entered and
    not left; Klein & Moeschberger §4.6). Failures at :math:`t = 0` make
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
    │ 744.0  ┆ 0.333333 ┆ 1         │
    │ 1224.0 ┆ 0.333333 ┆ 1         │
    └────────┴──────────┴───────────┘
    """
    return _curve(table, by, confidence, invalid, max_rows, kind="km")


def nelson_aalen(
    table: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    confidence: float = 0.95,
    invalid: Literal["raise", "drop"] = "raise",
    max_rows: int = _MAX_ROWS,
) -> pl.DataFrame:
    r"""Estimate the cumulative hazard by Nelson-Aalen, with delayed entry.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table, as for :func:`kaplan_meier`.
    by : sequence of str, default ()
        One curve per group.
    confidence : float, default 0.95
        Two-sided level of lifelines' pointwise interval.
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.
    max_rows : int, default 5000
        Row cap, as for :func:`kaplan_meier`.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, time_h, cumulative_hazard, cumulative_hazard_lower,
        cumulative_hazard_upper, n_at_risk``; one row per step point, sorted.

    Raises
    ------
    SchemaError
        If a column is missing or a row is invalid (with ``invalid="raise"``).
    InsufficientDataError
        As for :func:`kaplan_meier`.

    Notes
    -----
    :math:`\hat H(t) = \sum_{t_j \le t} d_j / n_j` with the risk sets of
    :func:`kaplan_meier` (lifelines smooths tied failures, which changes
    :math:`\hat H` slightly where :math:`d_j > 1`).

    References
    ----------
    .. [1] O. Aalen, "Nonparametric inference for a family of counting
       processes", Ann. Statist. 6(4), 1978. doi:10.1214/aos/1176344247

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame({"stop_h": [10.0, 20.0], "observed": [True, True]})
    >>> nelson_aalen(t)["cumulative_hazard"].to_list()
    [0.0, 0.5, 1.5]
    """
    return _curve(table, by, confidence, invalid, max_rows, kind="na")


# -------------------------------------------------------------- competing risks


def cumulative_incidence(
    table: pl.DataFrame,
    *,
    mode: str = "failure_mode",
    by: Sequence[str] = (),
    invalid: Literal["raise", "drop"] = "raise",
) -> pl.DataFrame:
    r"""Estimate each failure mode's cumulative incidence (Aalen-Johansen).

    Deterministic: tied failures of different modes at one time are handled
    exactly, with no random jitter (unlike lifelines' ``AalenJohansenFitter``).

    Parameters
    ----------
    table : pl.DataFrame
        Survival table (``entry_h`` optional, ``stop_h``, ``observed``) with a
        ``mode`` column naming the failure mode of observed rows (ignored for
        censored rows).
    mode : str, default "failure_mode"
        Name of the failure-mode column.
    by : sequence of str, default ()
        Grouping columns (one estimate per group and mode).
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, <mode>, time_h, cumulative_incidence``: one row per
        group, mode and distinct failure time of any mode, sorted.

    Raises
    ------
    SchemaError
        If a column is missing or a row is invalid (with ``invalid="raise"``).
    InsufficientDataError
        If a group's risk set empties before a later unit enters, as
        :func:`kaplan_meier` refuses it (the curve after it is not
        identifiable).

    Notes
    -----
    With :math:`n_j` at risk (delayed entry as in :func:`kaplan_meier`),
    :math:`d_j` failures of any mode and :math:`d_{kj}` of mode :math:`k` at
    :math:`t_j`: :math:`\hat F_k(t) = \sum_{t_j \le t} \hat S(t_{j-1})\,
    d_{kj}/n_j` with :math:`\hat S` the all-mode Kaplan-Meier; hence
    :math:`\sum_k \hat F_k = 1 - \hat S`. Unlike :math:`1 - \hat S_k` with
    other modes censored, this does not overstate the per-mode risk.

    References
    ----------
    .. [1] O. O. Aalen and S. Johansen, Scand. J. Statist. 5(3), 1978, 141-150.
    .. [2] J. P. Klein and M. L. Moeschberger, *Survival Analysis*, 2003, §2.7.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "stop_h": [1.0, 2.0, 3.0],
    ...         "observed": [True, True, False],
    ...         "failure_mode": ["gpu", "net", None],
    ...     }
    ... )
    >>> cumulative_incidence(t)["cumulative_incidence"].round(4).to_list()
    [0.3333, 0.3333, 0.0, 0.3333]
    """
    where = "cumulative_incidence"
    require_columns(table, [mode], where=where)
    table = _prepare(table, by, invalid, where)
    frames = []
    for key, part in split_groups(table, by):
        entry = part["entry_h"].to_numpy()
        stop = part["stop_h"].to_numpy()
        obs = part["observed"].to_numpy()
        modes = part[mode].to_numpy()
        times = np.unique(stop[obs])
        kinds = sorted({m for m, o in zip(modes, obs, strict=True) if o}, key=str)
        if times.size == 0:
            continue
        _check_risk_set(entry, stop, where, key)
        # at risk at t: entered by t and not stopped before t (sorted counts,
        # O(n log n) instead of a pass over the units per failure time)
        n = np.searchsorted(np.sort(entry), times, side="right") - np.searchsorted(
            np.sort(stop), times, side="left"
        )
        index = np.searchsorted(times, stop[obs])
        observed_modes = modes[obs]
        d_k = np.array(
            [
                np.bincount(index[observed_modes == k], minlength=times.size)
                for k in kinds
            ],
            dtype=float,
        )
        surv = np.cumprod(1.0 - d_k.sum(axis=0) / n)
        before = np.concatenate([[1.0], surv[:-1]])
        cif = np.cumsum(before * d_k / n, axis=1)
        for k, values in zip(kinds, cif, strict=True):
            frames.append(
                pl.DataFrame(
                    {
                        mode: [k] * times.size,
                        "time_h": times,
                        "cumulative_incidence": values,
                    }
                ).select(*(pl.lit(v).alias(c) for c, v in key.items()), pl.all())
            )
    schema = {
        **{c: table.schema[c] for c in by},
        mode: table.schema[mode],
        "time_h": pl.Float64,
        "cumulative_incidence": pl.Float64,
    }
    if not frames:
        return pl.DataFrame(schema=schema)
    out = pl.concat(frames, how="vertical_relaxed")
    return out.with_columns(pl.col(c).cast(t) for c, t in schema.items())
