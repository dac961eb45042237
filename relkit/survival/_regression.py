r"""Covariates of the hazard: Cox proportional hazards, Weibull AFT, log-rank.

Inputs are survival tables (one row per unit or spell: ``entry_h``, ``stop_h``,
``observed``) with one column per covariate (asset attributes such as rack,
batch or model). lifelines does the fitting; this module prepares the design
matrix, checks what a fit cannot estimate and turns lifelines' warnings and
errors into notes, statuses and relkit errors.

Policies
--------
- Categorical covariates (text, Boolean, and numeric columns named in
  ``categorical``) are one-hot encoded against a reference level: the most
  common level (ties: the first in sorted order) unless ``reference`` names
  one. Every row names its reference.
- A numeric column with at most :data:`FEW_LEVELS` distinct values is fitted as
  a linear effect and a note says so (pass it in ``categorical`` for one ratio
  per level).
- Rows with a null covariate are left out with a note; a constant column is
  dropped with the note ``"constant column"``.
- Separation (monotone likelihood): when at every failure time the failing
  unit's indicator of a level is the largest (or the smallest) in the risk set,
  the partial likelihood has no maximum and the ratio runs to infinity (or 0).
  Such a level is detected before fitting (the check of Heinze & Schemper
  [3]_), reported with ``status`` ``"separation: level X has no failures"``,
  ``"separation: level X has only failures"`` or ``"quasi-separation: ..."`` and
  null ratios, and its units are left out of the fit, so the other covariates
  are estimated on the remaining units (said in a note). A coefficient that
  still runs away after the fit (:math:`|\beta| >` :data:`RUNAWAY_LOG_RATIO`, a
  joint separation of several columns) gets ``status`` ``"quasi-separation
  (joint)"`` and null ratios.
- lifelines' warnings become notes; its errors become
  :class:`~relkit.errors.ConvergenceError`.

References
----------
.. [1] D. R. Cox, "Regression models and life-tables", JRSS B 34(2), 1972.
   doi:10.1111/j.2517-6161.1972.tb00899.x
.. [2] C. Davidson-Pilon, "lifelines: survival analysis in Python", JOSS 4(40),
   2019. doi:10.21105/joss.01317
.. [3] G. Heinze and M. Schemper, "A solution to the problem of monotone
   likelihood in Cox regression", Biometrics 57(1), 2001.
   doi:10.1111/j.0006-341X.2001.00114.x
.. [4] P. M. Grambsch and T. M. Therneau, "Proportional hazards tests and
   diagnostics based on weighted residuals", Biometrika 81(3), 1994.
   doi:10.1093/biomet/81.3.515
.. [5] J. P. Klein and M. L. Moeschberger, *Survival Analysis: Techniques for
   Censored and Truncated Data*, 2nd ed., Springer, 2003, §7.3.
   doi:10.1007/b97377
"""

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import polars as pl

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import ConvergenceError, InsufficientDataError, SchemaError
from relkit.survival._common import check_confidence, entry_for_risk_set
from relkit.survival._tables import validate_survival_table

__all__ = [
    "FEW_LEVELS",
    "RUNAWAY_LOG_RATIO",
    "HazardModel",
    "cox_hazards",
    "logrank_by",
    "logrank_statistic",
    "weibull_aft",
]

#: A numeric covariate with at most this many distinct values gets a note.
FEW_LEVELS = 5

#: A fitted log ratio beyond this (a ratio above 22,000) is a runaway.
RUNAWAY_LOG_RATIO = 10.0

_RATIO_SCHEMA = {
    "covariate": pl.String,
    "level": pl.String,
    "reference": pl.String,
    "hazard_ratio": pl.Float64,
    "lower": pl.Float64,
    "upper": pl.Float64,
    "p_value": pl.Float64,
    "log_hazard_ratio": pl.Float64,
    "se": pl.Float64,
    "n_units": pl.Int64,
    "n_events": pl.Int64,
    "status": pl.String,
}
_AFT_EXTRA = {
    "time_ratio": pl.Float64,
    "time_ratio_lower": pl.Float64,
    "time_ratio_upper": pl.Float64,
}
_PH_SCHEMA = {
    "covariate": pl.String,
    "level": pl.String,
    "statistic": pl.Float64,
    "p_value": pl.Float64,
}


@dataclass(frozen=True)
class HazardModel:
    """A fitted regression of the hazard on covariates, with its checks.

    Parameters
    ----------
    model : str
        ``"cox"`` or ``"weibull_aft"``.
    hazard_ratios : pl.DataFrame
        One row per covariate level (categorical) or covariate (numeric):
        ``covariate, level, reference, hazard_ratio, lower, upper, p_value,
        log_hazard_ratio, se, n_units, n_events, status``; the Weibull AFT adds
        ``time_ratio, time_ratio_lower, time_ratio_upper``. ``level`` is null
        for a numeric covariate (its ratio is per unit of the column);
        ``reference`` is null for a numeric covariate. ``status`` is ``"ok"``
        or says why the ratio is null.
    ph_test : pl.DataFrame
        Proportional-hazards test per fitted column (Cox only; empty for the
        AFT): ``covariate, level, statistic, p_value``.
    concordance : float or None
        Harrell's concordance index of the fit.
    n_units, n_events : int
        Rows and failures in the fit (after the rows left out).
    notes : tuple of str
        Everything left out, dropped or decided, in words.
    weibull_shape, weibull_shape_lower, weibull_shape_upper : float or None
        The AFT's common Weibull shape ρ and its interval (None for Cox).
    confidence : float
        Level of the intervals.
    logrank : pl.DataFrame or None
        Log-rank tests between the levels of each covariate, when computed
        (:func:`logrank_by`).
    """

    model: str
    hazard_ratios: pl.DataFrame
    ph_test: pl.DataFrame
    concordance: float | None
    n_units: int
    n_events: int
    notes: tuple[str, ...] = ()
    weibull_shape: float | None = None
    weibull_shape_lower: float | None = None
    weibull_shape_upper: float | None = None
    confidence: float = DEFAULT_CONFIDENCE
    logrank: pl.DataFrame | None = field(default=None)


@dataclass
class _Design:
    """The design matrix and what was decided building it."""

    frame: pl.DataFrame  # entry_h, stop_h, observed, cluster, indicator columns
    columns: list[tuple[str, str | None, str | None]]  # (covariate, level, ref)
    names: list[str]  # design column names, aligned with ``columns``
    separated: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _is_categorical(dtype: pl.DataType) -> bool:
    return dtype in (pl.String, pl.Boolean, pl.Categorical) or isinstance(
        dtype, pl.Enum | pl.Categorical
    )


def _risk_extremes(
    entry: np.ndarray, stop: np.ndarray, observed: np.ndarray, x: np.ndarray
) -> tuple[bool, bool]:
    r"""Return (runs to +inf, runs to -inf) for one design column.

    The partial likelihood is monotone in :math:`\beta` when at every failure
    time the failing unit's value is the largest (+inf) or the smallest (-inf)
    in its risk set :math:`\{j: e_j < t \le s_j\}` (Heinze & Schemper 2001).
    """
    up = down = True
    for i in np.flatnonzero(observed):
        t = stop[i]
        at_risk = ((entry < t) | (entry == 0)) & (stop >= t)
        at_risk[i] = True  # a zero-length spell is at risk at its own failure
        xs = x[at_risk]
        if x[i] < xs.max():
            up = False
        if x[i] > xs.min():
            down = False
        if not (up or down):
            break
    return up, down


def _design(
    table: pl.DataFrame,
    covariates: Sequence[str],
    categorical: Sequence[str],
    reference: Mapping[str, str],
    cluster_col: str | None,
    where: str,
) -> _Design:
    """Validate, encode and check the covariates (see the module's policies)."""
    covariates = list(dict.fromkeys(covariates))
    if not covariates:
        msg = f"{where}: no covariates given; name at least one, e.g. ['rack']."
        raise SchemaError(msg)
    missing = [c for c in [*covariates, *categorical] if c not in table.columns]
    if missing:
        msg = (
            f"{where}: unknown covariate(s) {missing}; the table has "
            f"{sorted(table.columns)}."
        )
        raise SchemaError(msg)
    if cluster_col is not None and cluster_col not in table.columns:
        msg = f"{where}: cluster_col {cluster_col!r} is not a column of the table."
        raise SchemaError(msg)
    notes: list[str] = []
    table = validate_survival_table(table, where=where)
    null_rows = table.filter(pl.any_horizontal(pl.col(covariates).is_null()))
    if null_rows.height:
        counts = {c: table[c].null_count() for c in covariates if table[c].null_count()}
        notes.append(
            f"{null_rows.height} of {table.height} rows left out: no value of "
            f"{counts} (null)"
        )
        table = table.filter(~pl.any_horizontal(pl.col(covariates).is_null()))
    keep = [c for c in ("entry_h", "stop_h", "observed") if c in table.columns]
    out = table.select(
        *keep, *([pl.col(cluster_col).alias("_cluster")] if cluster_col else [])
    )
    if "entry_h" not in out.columns:
        out = out.with_columns(entry_h=pl.lit(0.0))
    cols: list[tuple[str, str | None, str | None]] = []
    names: list[str] = []
    separated: list[dict[str, Any]] = []
    entry = out["entry_h"].to_numpy()
    stop = out["stop_h"].to_numpy()
    observed = out["observed"].to_numpy().astype(bool)
    for cov in covariates:
        values = table[cov]
        if values.n_unique() < 2:
            notes.append(
                f"{cov}: constant column (every row {values[0]!r}) dropped: "
                "it carries no contrast"
                if values.len()
                else f"{cov}: no rows"
            )
            continue
        if _is_categorical(values.dtype) or cov in categorical:
            text = values.cast(pl.String)
            counts = text.value_counts(sort=True).sort(
                ["count", cov], descending=[True, False]
            )
            ref = reference.get(cov)
            levels = sorted(counts[cov].to_list())
            if ref is None:
                ref = counts[cov][0]
            elif str(ref) not in levels:
                msg = (
                    f"{where}: reference level {ref!r} of {cov} is not among its "
                    f"levels {levels[:20]}."
                )
                raise SchemaError(msg)
            ref = str(ref)
            for level in levels:
                if level == ref:
                    continue
                x = (text == level).cast(pl.Float64).to_numpy()
                name = f"{cov}={level}"
                up, down = _risk_extremes(entry, stop, observed, x)
                in_level = x == 1
                n_fail = int(observed[in_level].sum())
                if up or down:
                    if n_fail == 0:
                        why = f"separation: level {level} has no failures"
                    elif n_fail == int(in_level.sum()):
                        why = f"separation: level {level} has only failures"
                    else:
                        side = "first" if up else "last"
                        why = (
                            f"quasi-separation: at every failure time the units of "
                            f"level {level} at risk fail {side} (monotone "
                            "likelihood)"
                        )
                    separated.append(
                        {
                            "covariate": cov,
                            "level": level,
                            "reference": ref,
                            "name": name,
                            "status": why,
                            "n_units": int(in_level.sum()),
                            "n_events": n_fail,
                            "x": x,
                        }
                    )
                    continue
                out = out.with_columns(pl.Series(name, x))
                cols.append((cov, level, ref))
                names.append(name)
        else:
            if values.n_unique() <= FEW_LEVELS:
                notes.append(
                    f"{cov}: numeric with {values.n_unique()} distinct values, "
                    "fitted as one ratio per unit of the column; name it as "
                    f"categorical (--categorical {cov}; library: categorical=) "
                    "for one ratio per level"
                )
            out = out.with_columns(values.cast(pl.Float64).alias(cov))
            cols.append((cov, None, None))
            names.append(cov)
    if separated:
        drop = np.zeros(out.height, dtype=bool)
        for s in separated:
            drop |= s["x"] == 1
        left = [f"{s['covariate']}={s['level']}" for s in separated]
        notes.append(
            f"{int(drop.sum())} unit(s) of the separated level(s) {left} left out "
            "of the fit (their ratio has no finite estimate); the other ratios "
            "are estimated without them"
        )
        out = out.filter(pl.Series(~drop))
        # a column that became constant without those units carries no contrast
        for name, col in zip(list(names), list(cols), strict=True):
            if out[name].n_unique() < 2:
                notes.append(
                    f"{name}: constant once the separated units are left out; dropped"
                )
                names.remove(name)
                cols.remove(col)
                out = out.drop(name)
    return _Design(out, cols, names, separated, notes)


def _pandas(design: _Design) -> Any:  # noqa: ANN401 - a pandas frame
    frame = design.frame.select(
        "entry_h",
        "stop_h",
        pl.col("observed").cast(pl.Int8),
        *(["_cluster"] if "_cluster" in design.frame.columns else []),
        *design.names,
    )
    return frame.to_pandas()


def _fit(fitter: Any, df: Any, *, truncated: bool, robust: bool) -> list[str]:  # noqa: ANN401
    """Fit with lifelines; return its warnings as text; errors become relkit's."""
    from lifelines.exceptions import ConvergenceError as LifelinesConvergence

    kwargs: dict[str, Any] = {"duration_col": "stop_h", "event_col": "observed"}
    if truncated:
        kwargs["entry_col"] = "entry_h"
        df = df.assign(
            entry_h=entry_for_risk_set(
                df["entry_h"].to_numpy(), df["stop_h"].to_numpy()
            )
        )
    else:
        df = df.drop(columns=["entry_h"])
    if "_cluster" in df.columns and type(fitter).__name__ == "CoxPHFitter":
        kwargs["cluster_col"] = "_cluster"
    if robust:
        kwargs["robust"] = True
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        retried = []
        try:
            try:
                fitter.fit(df, **kwargs)
            except LifelinesConvergence:
                if type(fitter).__name__ != "CoxPHFitter":
                    raise
                # lifelines' full Newton step can overshoot into a singular
                # Hessian with many small levels; a shorter step reaches the
                # same maximum (the step changes the path, not the optimum)
                del caught[:]  # the halted attempt's overflow warnings are moot
                fitter.fit(df, **kwargs, fit_options={"step_size": 0.3})
                retried.append(
                    "lifelines' Newton-Raphson halted on a singular Hessian; "
                    "refitted with step size 0.3 (same likelihood maximum)"
                )
        except (LifelinesConvergence, ValueError, np.linalg.LinAlgError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
            msg = (
                f"{type(fitter).__name__} did not converge ({first}); check the "
                "covariates for separation or collinearity, or fit fewer of them."
            )
            raise ConvergenceError(msg) from exc
    texts = []
    for w in caught:
        line = str(w.message).strip().splitlines()[0] if str(w.message) else ""
        # lifelines appends a code example ("For example, try the following
        # code: ...") that means nothing to a relkit user: keep the diagnosis
        line = line.split(" For example,")[0].strip()
        texts.append(f"lifelines {w.category.__name__}: {line}")
    return retried + list(dict.fromkeys(texts))


def _count(design: _Design) -> tuple[int, int]:
    return design.frame.height, int(design.frame["observed"].sum())


def _level_counts(design: _Design, name: str, level: str | None) -> tuple[int, int]:
    if level is None:  # a numeric covariate: every unit
        return _count(design)
    mask = design.frame[name] == 1
    return int(mask.sum()), int(design.frame.filter(mask)["observed"].sum())


def _separated_rows(design: _Design, extra: Mapping[str, Any]) -> list[dict]:
    return [
        {
            "covariate": s["covariate"],
            "level": s["level"],
            "reference": s["reference"],
            "n_units": s["n_units"],
            "n_events": s["n_events"],
            "status": s["status"],
            **extra,
        }
        for s in design.separated
    ]


def _prepare(
    table: pl.DataFrame,
    covariates: Sequence[str],
    categorical: Sequence[str],
    reference: Mapping[str, str] | None,
    cluster_col: str | None,
    where: str,
) -> _Design:
    design = _design(
        table, covariates, list(categorical), dict(reference or {}), cluster_col, where
    )
    n, d = _count(design)
    why = None
    if not design.names:
        why = "no covariate left to fit" + (
            f" ({'; '.join(design.notes)})" if design.notes else ": none varies"
        )
    elif d < 2:
        why = (
            f"{d} failure(s) among {n} units after the rows left out; a hazard "
            "regression needs at least 2"
        )
    if why is not None and not design.separated:
        msg = f"{where}: {why}. Give covariates that vary between units with failures."
        raise InsufficientDataError(msg)
    if why is not None:
        design.notes.append(f"no model fitted: {why}")
        design.names, design.columns = [], []
    return design


def _unfit(
    model: str, design: _Design, confidence: float, schema: Mapping[str, Any]
) -> HazardModel:
    """Build the result when only separated levels remain: their rows and the notes."""
    n, d = _count(design)
    return HazardModel(
        model=model,
        hazard_ratios=pl.DataFrame(
            _separated_rows(design, {}), schema=dict(schema), orient="row"
        ),
        ph_test=pl.DataFrame(schema=_PH_SCHEMA),
        concordance=None,
        n_units=n,
        n_events=d,
        notes=tuple(design.notes),
        confidence=confidence,
    )


def cox_hazards(
    table: pl.DataFrame,
    *,
    covariates: Sequence[str],
    categorical: Sequence[str] = (),
    reference: Mapping[str, str] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    cluster_col: str | None = None,
) -> HazardModel:
    r"""Fit a Cox proportional-hazards model: a hazard ratio per covariate level.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table: ``entry_h`` (optional; hours of left truncation),
        ``stop_h`` (hours), ``observed`` (Boolean: failure seen), and the
        covariate columns. One row per unit (or spell, with ``cluster_col``).
    covariates : sequence of str
        Columns to regress on. Text and Boolean columns are categorical.
    categorical : sequence of str, default ()
        Numeric columns to treat as categorical (one ratio per level).
    reference : mapping of str to str, optional
        Reference level per categorical covariate; default the most common.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Level of the two-sided Wald intervals.
    cluster_col : str, optional
        Column identifying the unit when it has several rows (e.g. gaps
        between failures of one node): robust (sandwich) variance clustered on
        it.

    Returns
    -------
    HazardModel
        ``hazard_ratios`` (see :class:`HazardModel`), ``ph_test`` per fitted
        column, ``concordance``, ``n_units``, ``n_events``, ``notes``.

    Raises
    ------
    SchemaError
        If a covariate or ``cluster_col`` is not a column, a reference level is
        unknown, or the survival table is invalid.
    InsufficientDataError
        If no covariate varies, or fewer than 2 failures remain, and no level
        was separated. (When only separated levels remain, the result has
        their rows, no fitted ratio, and a note "no model fitted".)
    ConvergenceError
        If lifelines' Newton-Raphson fails (wrapping its error).

    Notes
    -----
    The hazard of unit :math:`i` is :math:`h_0(t)\exp(x_i^\top\beta)`;
    :math:`\beta` maximises the partial likelihood with Efron's handling of
    tied failure times (lifelines' default, and the only one it offers) [1]_
    [2]_. Left truncation: a unit is in the risk set at :math:`t` when
    ``entry_h`` :math:`< t \le` ``stop_h`` (lifelines' ``entry_col``). The
    ratio of a level is :math:`\exp(\hat\beta)` against the reference level,
    with the Wald interval :math:`\exp(\hat\beta \pm z\,\mathrm{se})`.

    Checks: the proportional-hazards test of Grambsch and Therneau [4]_
    (scaled Schoenfeld residuals against the rank of time, lifelines'
    ``proportional_hazard_test(time_transform="rank")``), one chi-square
    statistic with 1 degree of freedom per fitted column; a small p-value says
    the ratio changes with age. Separation is detected before the fit (module
    policies; Heinze and Schemper [3]_).

    References
    ----------
    See the module's references [1]_ to [4]_.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "stop_h": [5.0, 8.0, 12.0, 3.0, 9.0, 15.0, 20.0, 11.0],
    ...         "observed": [True, True, False, True, True, True, False, True],
    ...         "rack": ["a", "a", "a", "a", "b", "b", "b", "b"],
    ...     }
    ... )
    >>> fit = cox_hazards(t, covariates=["rack"])
    >>> fit.hazard_ratios.select("level", "reference", "status").row(0)
    ('b', 'a', 'ok')
    """
    where = "cox_hazards"
    alpha = check_confidence(confidence, where)
    design = _prepare(table, covariates, categorical, reference, cluster_col, where)
    if not design.names:
        return _unfit("cox", design, confidence, _RATIO_SCHEMA)
    from lifelines import CoxPHFitter
    from lifelines.statistics import proportional_hazard_test

    df = _pandas(design)
    truncated = bool((design.frame["entry_h"] > 0).any())
    cph = CoxPHFitter(alpha=alpha)
    notes = list(design.notes)
    fit_notes = _fit(cph, df, truncated=truncated, robust=cluster_col is not None)
    if not truncated:
        df = df.drop(columns=["entry_h"])
    summary = cph.summary
    ci = cph.confidence_intervals_
    rows = []
    for (cov, level, ref), name in zip(design.columns, design.names, strict=True):
        coef = float(summary.loc[name, "coef"])
        se = float(summary.loc[name, "se(coef)"])
        lo, hi = (float(v) for v in ci.loc[name])
        n_u, n_e = _level_counts(design, name, level)
        ok = math.isfinite(coef) and abs(coef) <= RUNAWAY_LOG_RATIO
        ok = ok and math.isfinite(lo) and math.isfinite(hi)
        rows.append(
            {
                "covariate": cov,
                "level": level,
                "reference": ref,
                "hazard_ratio": math.exp(coef) if ok else None,
                "lower": math.exp(lo) if ok else None,
                "upper": math.exp(hi) if ok else None,
                "p_value": float(summary.loc[name, "p"]) if ok else None,
                "log_hazard_ratio": coef if ok else None,
                "se": se if ok else None,
                "n_units": n_u,
                "n_events": n_e,
                "status": "ok"
                if ok
                else (
                    f"quasi-separation (joint): the fitted log ratio ran to "
                    f"{coef:.3g}; no finite estimate"
                ),
            }
        )
    if any(r["status"] != "ok" for r in rows):
        fit_notes = [n for n in fit_notes if "ConvergenceWarning" not in n]
    notes.extend(fit_notes)
    rows.extend(_separated_rows(design, {}))
    ratios = pl.DataFrame(rows, schema=_RATIO_SCHEMA, orient="row")
    ph = _ph_test(proportional_hazard_test, cph, df, design, notes)
    n, d = _count(design)
    return HazardModel(
        model="cox",
        hazard_ratios=ratios,
        ph_test=ph,
        concordance=float(cph.concordance_index_),
        n_units=n,
        n_events=d,
        notes=tuple(notes),
        confidence=confidence,
    )


def _ph_test(
    test: Any,  # noqa: ANN401
    cph: Any,  # noqa: ANN401
    df: Any,  # noqa: ANN401
    design: _Design,
    notes: list[str],
) -> pl.DataFrame:
    """Grambsch-Therneau test per column, rank transform; failures become a note."""
    if "entry_h" in df.columns and bool((df["entry_h"] > 0).any()):
        n_late = int((df["entry_h"] > 0).sum())
        notes.append(
            "proportional-hazards test not computed: lifelines computes the "
            "Schoenfeld residuals it rests on only without left truncation, and "
            f"{n_late} unit(s) entered late; compare the levels' Kaplan-Meier "
            "curves (relkit survival --by COL), or fit the gaps (--endpoint tbf)"
        )
        return pl.DataFrame(schema=_PH_SCHEMA)
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        try:
            result = test(cph, df, time_transform="rank")
        except (
            ValueError,
            NotImplementedError,
            np.linalg.LinAlgError,
            ZeroDivisionError,
        ) as exc:
            notes.append(f"proportional-hazards test not computed: {exc}")
            return pl.DataFrame(schema=_PH_SCHEMA)
    summary = result.summary
    rows = []
    for (cov, level, _), name in zip(design.columns, design.names, strict=True):
        if name in summary.index:
            stat = float(summary.loc[name, "test_statistic"])
            p = float(summary.loc[name, "p"])
            rows.append(
                {
                    "covariate": cov,
                    "level": level,
                    "statistic": stat if math.isfinite(stat) else None,
                    "p_value": p if math.isfinite(p) else None,
                }
            )
    return pl.DataFrame(rows, schema=_PH_SCHEMA, orient="row")


def weibull_aft(
    table: pl.DataFrame,
    *,
    covariates: Sequence[str],
    categorical: Sequence[str] = (),
    reference: Mapping[str, str] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    cluster_col: str | None = None,
) -> HazardModel:
    r"""Fit a Weibull accelerated-failure-time model: time ratios per level.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table as for :func:`cox_hazards`.
    covariates, categorical, reference, confidence, cluster_col
        As for :func:`cox_hazards`.

    Returns
    -------
    HazardModel
        ``hazard_ratios`` with ``time_ratio, time_ratio_lower,
        time_ratio_upper`` (the acceleration factor of the level against the
        reference: > 1 means longer lives) and the equivalent Weibull
        ``hazard_ratio, lower, upper``; ``weibull_shape`` ρ with its interval;
        ``ph_test`` empty, ``concordance``.

    Raises
    ------
    SchemaError, InsufficientDataError, ConvergenceError
        As for :func:`cox_hazards`.

    Notes
    -----
    lifelines' ``WeibullAFTFitter``: :math:`S(t\mid x) =
    \exp(-(t/\lambda(x))^{\rho})` with :math:`\log\lambda(x) = \beta_0 +
    x^\top\beta` and one shape :math:`\rho` for all units [2]_. The time
    ratio of a level is :math:`TR = e^{\beta}`. A Weibull AFT is also a
    proportional-hazards model, with :math:`HR = TR^{-\rho} =
    e^{-\rho\beta}`; its interval is the Wald interval of
    :math:`-\rho\beta` with the delta-method variance
    :math:`\rho^2(\mathrm{var}\,\beta + \beta^2\mathrm{var}\log\rho +
    2\beta\,\mathrm{cov}(\beta, \log\rho))` (Klein & Moeschberger [5]_
    §12.2). Separation is handled as in :func:`cox_hazards`.

    References
    ----------
    See the module's references.
    """
    where = "weibull_aft"
    alpha = check_confidence(confidence, where)
    design = _prepare(table, covariates, categorical, reference, cluster_col, where)
    if not design.names:
        return _unfit(
            "weibull_aft", design, confidence, {**_RATIO_SCHEMA, **_AFT_EXTRA}
        )
    from lifelines import WeibullAFTFitter

    df = _pandas(design)
    truncated = bool((design.frame["entry_h"] > 0).any())
    aft = WeibullAFTFitter(alpha=alpha)
    notes = list(design.notes)
    if "_cluster" in df.columns:
        # lifelines' AFT has no cluster_col: a robust (sandwich) variance that
        # treats the rows as independent is the nearest it offers
        df = df.drop(columns=["_cluster"])
        notes.append(
            f"the Weibull AFT's intervals are robust (sandwich) but not clustered "
            f"on {cluster_col!r}: lifelines' AFT has no cluster variance, so "
            "rows of one unit count as independent"
        )
    notes.extend(_fit(aft, df, truncated=truncated, robust=cluster_col is not None))
    from scipy import stats

    z = float(stats.norm.ppf(1 - alpha / 2))
    params = aft.params_
    cov_m = aft.variance_matrix_
    log_rho = float(params[("rho_", "Intercept")])
    var_lr = float(cov_m.loc[("rho_", "Intercept"), ("rho_", "Intercept")])
    rho = math.exp(log_rho)
    summary = aft.summary
    rows = []
    for (cov, level, ref), name in zip(design.columns, design.names, strict=True):
        key = ("lambda_", name)
        beta = float(params[key])
        var_b = float(cov_m.loc[key, key])
        cov_b = float(cov_m.loc[key, ("rho_", "Intercept")])
        se_b = math.sqrt(var_b) if var_b >= 0 else math.nan
        log_hr = -rho * beta
        var_hr = rho**2 * (var_b + beta**2 * var_lr + 2 * beta * cov_b)
        se_hr = math.sqrt(var_hr) if var_hr >= 0 else math.nan
        n_u, n_e = _level_counts(design, name, level)
        ok = all(map(math.isfinite, (beta, se_b, log_hr, se_hr)))
        # a runaway fit can keep -rho*beta small while beta (the log time
        # ratio) and rho run off: neither may leave the plausible range
        ok = (
            ok
            and abs(log_hr) <= RUNAWAY_LOG_RATIO
            and abs(beta) <= RUNAWAY_LOG_RATIO
            and abs(log_rho) <= RUNAWAY_LOG_RATIO
        )
        rows.append(
            {
                "covariate": cov,
                "level": level,
                "reference": ref,
                "hazard_ratio": math.exp(log_hr) if ok else None,
                "lower": math.exp(log_hr - z * se_hr) if ok else None,
                "upper": math.exp(log_hr + z * se_hr) if ok else None,
                "p_value": float(summary.loc[key, "p"]) if ok else None,
                "log_hazard_ratio": log_hr if ok else None,
                "se": se_hr if ok else None,
                "n_units": n_u,
                "n_events": n_e,
                "status": "ok"
                if ok
                else (
                    "no_interior_maximum: the fit ran off (log time ratio "
                    f"{beta:.3g}, shape {rho:.3g}); no finite estimate"
                    if abs(log_hr) <= RUNAWAY_LOG_RATIO
                    else f"quasi-separation (joint): the fitted log ratio ran to "
                    f"{log_hr:.3g}; no finite estimate"
                ),
                "time_ratio": math.exp(beta) if ok else None,
                "time_ratio_lower": math.exp(beta - z * se_b) if ok else None,
                "time_ratio_upper": math.exp(beta + z * se_b) if ok else None,
            }
        )
    rows.extend(_separated_rows(design, {}))
    ratios = pl.DataFrame(rows, schema={**_RATIO_SCHEMA, **_AFT_EXTRA}, orient="row")
    try:  # a fit that ran off predicts no finite medians to rank
        concordance: float | None = float(aft.concordance_index_)
    except (ValueError, ZeroDivisionError):
        concordance = None
        notes.append(
            f"the Weibull AFT has no interior maximum (shape {rho:.3g}): its "
            "predictions are not finite, so no concordance; use the Cox model"
        )
    n, d = _count(design)
    se_lr = math.sqrt(var_lr) if var_lr >= 0 else math.nan
    return HazardModel(
        model="weibull_aft",
        hazard_ratios=ratios,
        ph_test=pl.DataFrame(schema=_PH_SCHEMA),
        concordance=concordance,
        n_units=n,
        n_events=d,
        notes=tuple(notes),
        weibull_shape=rho,
        weibull_shape_lower=math.exp(log_rho - z * se_lr),
        weibull_shape_upper=math.exp(log_rho + z * se_lr),
        confidence=confidence,
    )


def logrank_statistic(
    entry_h: np.ndarray,
    stop_h: np.ndarray,
    observed: np.ndarray,
    group: np.ndarray,
) -> tuple[float, int]:
    r"""Return the k-sample log-rank statistic and its degrees of freedom.

    Parameters
    ----------
    entry_h, stop_h : np.ndarray
        Entry (left truncation) and stop times, hours, one per unit.
    observed : np.ndarray
        Booleans, True where the unit failed at ``stop_h``.
    group : np.ndarray
        Group label per unit.

    Returns
    -------
    tuple of (float, int)
        :math:`\chi^2` statistic and its degrees of freedom (groups − 1).

    Notes
    -----
    At each distinct failure time :math:`t` with :math:`d` failures among the
    :math:`n` units at risk (``entry_h`` :math:`< t \le` ``stop_h``; a unit
    entering at 0 is at risk at :math:`t = 0`, as lifelines counts it), group
    :math:`j` has :math:`n_j` at risk and :math:`d_j` failures. With
    :math:`Z_j = \sum_t (d_j - d\,n_j/n)` and
    :math:`V_{jl} = \sum_t d\,\frac{n_j}{n}(\delta_{jl} - \frac{n_l}{n})
    \frac{n-d}{n-1}`, the statistic is :math:`Z^\top V^{-1} Z` over the first
    :math:`k-1` groups, :math:`\chi^2_{k-1}` under equal hazards (Klein &
    Moeschberger [5]_ §7.3, eqs. 7.3.3-7.3.5). Left truncation enters only
    through the risk set.
    """
    stop = np.asarray(stop_h, dtype=float)
    # one risk-set rule with Kaplan-Meier and cumulative incidence: a spell
    # entering and failing at t > 0 is at risk at t
    entry = entry_for_risk_set(np.asarray(entry_h, dtype=float), stop)
    obs = np.asarray(observed, dtype=bool)
    labels, g = np.unique(np.asarray(group), return_inverse=True)
    k = labels.size
    z = np.zeros(k)
    v = np.zeros((k, k))
    for t in np.unique(stop[obs]):
        at_risk = ((entry < t) | (entry == 0)) & (stop >= t)
        died = at_risk & obs & (stop == t)
        n_j = np.bincount(g[at_risk], minlength=k).astype(float)
        d_j = np.bincount(g[died], minlength=k).astype(float)
        n, d = n_j.sum(), d_j.sum()
        if n == 0:
            continue
        e = n_j / n
        z += d_j - d * e
        if n > 1:
            v += d * (n - d) / (n - 1) * (np.diag(e) - np.outer(e, e))
    zz, vv = z[:-1], v[:-1, :-1]
    stat = float(zz @ np.linalg.solve(vv, zz)) if k > 1 else 0.0
    return stat, k - 1


def logrank_by(
    table: pl.DataFrame,
    *,
    group: str | Sequence[str],
) -> pl.DataFrame:
    r"""Log-rank test of equal hazards between the levels of each group column.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table: ``entry_h`` (optional), ``stop_h``, ``observed`` and
        the group column(s).
    group : str or sequence of str
        Column(s) whose levels are compared, one test per column.

    Returns
    -------
    pl.DataFrame
        One row per column: ``covariate, n_levels, statistic,
        degrees_of_freedom, p_value, method, status``. ``method`` says which
        computation was used; ``status`` is ``"ok"`` or why no test was made
        (one level; no failure; a singular variance).

    Raises
    ------
    SchemaError
        If a group column is missing or the table is invalid.

    Notes
    -----
    Without left truncation, lifelines' ``multivariate_logrank_test`` [2]_.
    lifelines' log-rank takes no entry times, so with left truncation the
    statistic of :func:`logrank_statistic` is computed with the risk set
    adjusted for entry (Klein & Moeschberger [5]_ §7.3); it equals lifelines'
    on untruncated data (tested to 1e-10). The p-value is the
    :math:`\chi^2_{k-1}` upper tail (scipy).
    """
    groups = [group] if isinstance(group, str) else list(group)
    missing = [c for c in groups if c not in table.columns]
    if missing:
        msg = f"logrank_by: unknown column(s) {missing}; the table has {table.columns}."
        raise SchemaError(msg)
    table = validate_survival_table(table, where="logrank_by")
    from scipy import stats

    rows = []
    for col in groups:
        t = table.filter(pl.col(col).is_not_null())
        entry = (
            t["entry_h"].to_numpy() if "entry_h" in t.columns else np.zeros(t.height)
        )
        levels = t[col].cast(pl.String).to_numpy()
        n_levels = int(np.unique(levels).size) if t.height else 0
        truncated = bool((entry > 0).any())
        method: Literal["lifelines", "risk set adjusted for entry"] = (
            "risk set adjusted for entry" if truncated else "lifelines"
        )
        row: dict[str, Any] = {
            "covariate": col,
            "n_levels": n_levels,
            "statistic": None,
            "degrees_of_freedom": None,
            "p_value": None,
            "method": method,
            "status": "ok",
        }
        if n_levels < 2:
            row["status"] = "one level: nothing to compare"
        elif not t["observed"].any():
            row["status"] = "no failure: nothing to compare"
        else:
            try:
                if truncated:
                    stat, dof = logrank_statistic(
                        entry, t["stop_h"].to_numpy(), t["observed"].to_numpy(), levels
                    )
                    p = float(stats.chi2.sf(stat, dof))
                else:
                    from lifelines.statistics import multivariate_logrank_test

                    res = multivariate_logrank_test(
                        t["stop_h"].to_numpy(), levels, t["observed"].to_numpy()
                    )
                    stat, dof, p = (
                        float(res.test_statistic),
                        int(res.degrees_of_freedom),
                        float(res.p_value),
                    )
                row.update(statistic=stat, degrees_of_freedom=dof, p_value=p)
            except np.linalg.LinAlgError:
                row["status"] = (
                    "singular variance (no failure while two levels at risk)"
                )
        rows.append(row)
    return pl.DataFrame(
        rows,
        schema={
            "covariate": pl.String,
            "n_levels": pl.Int64,
            "statistic": pl.Float64,
            "degrees_of_freedom": pl.Int64,
            "p_value": pl.Float64,
            "method": pl.String,
            "status": pl.String,
        },
        orient="row",
    )
