r"""Crow-AMSAA (power-law NHPP) fits of repairable units' failures."""

from collections.abc import Sequence
from typing import Literal

import numpy as np
import polars as pl
from scipy import optimize, stats

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InvalidParameterError
from relkit.repairable._frames import GroupData, iter_groups
from relkit.repairable._trend import check_terminated

__all__ = ["crow_amsaa"]

_SCHEMA = {
    "beta": pl.Float64,
    "beta_unbiased": pl.Float64,
    "beta_lower": pl.Float64,
    "beta_upper": pl.Float64,
    "lambda_per_h_beta": pl.Float64,
    "current_mtbf_h": pl.Float64,
    "current_mtbf_lower_h": pl.Float64,
    "current_mtbf_upper_h": pl.Float64,
    "at_age_h": pl.Float64,
    "n_failures": pl.Int64,
    "n_units": pl.Int64,
    "total_time_h": pl.Float64,
    "beta_bounds": pl.String,
    "note": pl.String,
}

#: Search range of the shape beta; an optimum at its edge is no interior maximum.
_BETA_RANGE = (1e-3, 1e3)


def _xlogx(x: np.ndarray, beta: float, power: int) -> np.ndarray:
    """x**beta * ln(x)**power, with 0 at x = 0."""
    out = np.zeros_like(x)
    pos = x > 0
    out[pos] = x[pos] ** beta * np.log(x[pos]) ** power
    return out


def _fit(g: GroupData, terminated: str, z: float, confidence: float) -> dict:
    scale = float(g.exit_h.max())
    s, e = g.entry_h / scale, g.exit_h / scale
    t = g.event_h / scale
    n = t.size
    out: dict[str, object] = {
        "n_failures": n,
        "n_units": int(s.size),
        "total_time_h": float((g.exit_h - g.entry_h).sum()),
        "at_age_h": scale,
    }
    if n < 2:
        return out | {"note": f"{n} failure(s): Crow-AMSAA needs at least 2"}
    if (t <= 0).any():
        return out | {
            "note": "a failure at age 0: ln(0) in the likelihood; give "
            "failures a positive age"
        }
    sum_log_t = float(np.log(t).sum())

    def score(beta: float) -> float:
        denom = np.sum(e**beta - s**beta)
        num = np.sum(_xlogx(e, beta, 1) - _xlogx(s, beta, 1))
        return n / beta + sum_log_t - n * num / denom

    lo, top = _BETA_RANGE
    # widen the bracket while the score stays finite (e**beta underflows late)
    hi = 2.0
    while hi < top and np.isfinite(score(hi)) and score(hi) > 0:
        hi *= 2
    if not (score(lo) > 0 > score(hi)):
        return out | {
            "note": f"no interior maximum of the likelihood in beta in [{lo}, {hi}]"
        }
    beta = float(optimize.brentq(score, lo, hi, xtol=1e-14, rtol=1e-14))
    lam_u = n / float(np.sum(e**beta - s**beta))
    # observed information of (lambda, beta) in the scaled clock
    i_ll = n / lam_u**2
    i_lb = float(np.sum(_xlogx(e, beta, 1) - _xlogx(s, beta, 1)))
    i_bb = n / beta**2 + lam_u * float(np.sum(_xlogx(e, beta, 2) - _xlogx(s, beta, 2)))
    cov = np.linalg.inv(np.array([[i_ll, i_lb], [i_lb, i_bb]]))
    # current MTBF at the last age, u* = 1: ln M = -ln lambda - ln beta
    grad = np.array([-1 / lam_u, -1 / beta])
    se_log_m = float(np.sqrt(grad @ cov @ grad))
    mtbf_u = 1 / (lam_u * beta)
    exact = bool(np.all(s == 0) and np.allclose(e, 1.0, rtol=0, atol=1e-12))
    if exact:
        # Crow 1974: 2 n beta / beta_hat ~ chi-square(2n), 2(n-1) failure-terminated
        df = 2 * n if terminated == "time" else 2 * (n - 1)
        q = (1 - confidence) / 2
        b_lo = beta * stats.chi2.ppf(q, df) / (2 * n)
        b_hi = beta * stats.chi2.ppf(1 - q, df) / (2 * n)
        unbiased = beta * ((n - 1) if terminated == "time" else (n - 2)) / n
        method = f"chi-square, {df} df (Crow 1974)"
    else:
        w = float(np.exp(z * np.sqrt(cov[1, 1]) / beta))
        b_lo, b_hi, unbiased = beta / w, beta * w, None
        method = "Fisher information, log scale (units observed over unequal windows)"
    return out | {
        "beta": beta,
        "beta_unbiased": unbiased,
        "beta_lower": float(b_lo),
        "beta_upper": float(b_hi),
        "lambda_per_h_beta": lam_u / scale**beta,
        "current_mtbf_h": mtbf_u * scale,
        "current_mtbf_lower_h": mtbf_u * scale * float(np.exp(-z * se_log_m)),
        "current_mtbf_upper_h": mtbf_u * scale * float(np.exp(z * se_log_m)),
        "beta_bounds": method,
    }


def crow_amsaa(
    events: pl.DataFrame,
    units: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    terminated: Literal["time", "failure"] = "time",
    confidence: float = DEFAULT_CONFIDENCE,
) -> pl.DataFrame:
    r"""Fit the Crow-AMSAA power-law process and its current (instantaneous) MTBF.

    Parameters
    ----------
    events : pl.DataFrame
        One row per failure: ``unit_id``, ``time_h`` (hours of age, > 0).
    units : pl.DataFrame
        One row per unit: ``unit_id``, ``entry_h`` (0 when absent), ``exit_h``.
    by : sequence of str, default ()
        Grouping columns (see :func:`mean_cumulative_function`).
    terminated : {"time", "failure"}, default "time"
        As :func:`trend_tests`; it changes the unbiased shape and its bounds.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the bounds, in (0, 1).

    Returns
    -------
    pl.DataFrame
        One row per group: ``*by``, ``beta`` (MLE :math:`\hat\beta`),
        ``beta_unbiased`` (Crow's :math:`\bar\beta`, null where it does not
        apply), ``beta_lower``, ``beta_upper``, ``lambda_per_h_beta``
        (:math:`\hat\lambda`, failures per unit per hour^β),
        ``current_mtbf_h`` (the instantaneous MTBF of one unit at
        ``at_age_h``, the latest exit), its bounds ``current_mtbf_lower_h`` and
        ``current_mtbf_upper_h``, ``n_failures``, ``n_units``,
        ``total_time_h``, ``beta_bounds`` (the method) and ``note`` (why the
        fit is empty, when it is).

    Raises
    ------
    SchemaError
        As :func:`mean_cumulative_function`.
    InvalidParameterError
        If ``confidence`` is not in (0, 1), or ``terminated`` does not fit
        the data (as :func:`trend_tests`).

    Notes
    -----
    Each unit's failures follow a Poisson process of intensity
    :math:`\rho(t) = \lambda\beta t^{\beta-1}` in its age :math:`t`
    (Crow 1974). Unit :math:`q` observed on :math:`(S_q, T_q]` contributes
    :math:`\sum_i \ln\rho(t_{qi}) - \lambda(T_q^\beta - S_q^\beta)` to the log
    likelihood; :math:`\hat\lambda = n / \sum_q (T_q^\beta - S_q^\beta)` and
    :math:`\hat\beta` solves the profile score by Brent's method. For units
    all observed from 0 to one :math:`T` this is the closed form
    :math:`\hat\beta = n / \sum\ln(T/t_i)` (failure-terminated: :math:`T` the
    last failure), :math:`\hat\lambda = n / (kT^{\hat\beta})` of MIL-HDBK-189C
    §5.3, with the exact bounds
    :math:`\hat\beta\chi^2_{\alpha/2}(2n)/(2n) \le \beta \le
    \hat\beta\chi^2_{1-\alpha/2}(2n)/(2n)` (:math:`2(n-1)` degrees of freedom
    failure-terminated) and the unbiased
    :math:`\bar\beta = (n-1)\hat\beta/n` (time-terminated) or
    :math:`(n-2)\hat\beta/n` (failure-terminated). Otherwise the shape's
    bounds are the Fisher-information bounds on :math:`\ln\hat\beta`.

    The current MTBF at age :math:`T` is
    :math:`1/(\hat\lambda\hat\beta T^{\hat\beta-1})`; its bounds are Fisher
    information bounds on its logarithm (delta method), not Crow's (1982)
    tabled exact bounds, so they are approximate for few failures.

    References
    ----------
    .. [1] L. H. Crow, "Reliability analysis for complex, repairable systems",
       in *Reliability and Biometry*, SIAM, 1974 (pages not checked; no DOI).
    .. [2] L. H. Crow, "Confidence interval procedures for the Weibull
       process with applications to reliability growth", 1982 (title and
       abstract checked; journal, volume and DOI not confirmed),
       https://scilit.net/publications/4357c3c482c9edd945dc5b835a8f7bd9
    .. [3] US Department of Defense, MIL-HDBK-189C, *Reliability Growth
       Management*, 2011, §5.3 (public domain).
    .. [4] ReliaSoft, "Crow-AMSAA Parameter Estimation Example" (22 failures
       to 620 h: beta 0.6142, lambda 0.4239),
       https://reliawiki.com/index.php/Crow-AMSAA_Parameter_Estimation_Example

    Examples
    --------
    >>> import polars as pl
    >>> ev = pl.DataFrame({"unit_id": ["a"] * 4, "time_h": [30.0, 150, 400, 800]})
    >>> un = pl.DataFrame({"unit_id": ["a"], "exit_h": [1000.0]})
    >>> fit = crow_amsaa(ev, un)
    >>> round(fit["beta"].item(), 4), fit["beta_bounds"].item()
    (0.6113, 'chi-square, 8 df (Crow 1974)')
    """
    if not (isinstance(confidence, float | int) and 0 < confidence < 1):
        msg = f"crow_amsaa: confidence must be in (0, 1), e.g. 0.9; not {confidence!r}."
        raise InvalidParameterError(msg)
    z = float(stats.norm.ppf(0.5 + confidence / 2))
    by = list(dict.fromkeys(by))
    rows = []
    for g in iter_groups(events, units, by=by, where="crow_amsaa"):
        term = check_terminated(terminated, g, "crow_amsaa")
        rows.append({**g.key, **dict.fromkeys(_SCHEMA), **_fit(g, term, z, confidence)})
    if not rows:
        return pl.DataFrame(schema=_SCHEMA)
    frame = pl.DataFrame(rows, schema_overrides=_SCHEMA, infer_schema_length=None)
    return frame.select(*by, *_SCHEMA)
