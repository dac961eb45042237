r"""Maximum likelihood of the registry's models with scipy (no lifelines).

Each model's log density, log survival and log CDF are written with
:mod:`scipy.special` on a free parameter vector (logs of the positive
parameters, :math:`Q` as is), the weighted log-likelihood of left-truncated,
right- and interval-censored spells is maximised with
:func:`scipy.optimize.minimize` (BFGS, central-difference gradient) and the
standard errors come from a central-difference Hessian on the free scale
(:func:`hessian`).

Used for the gamma and the generalized gamma: lifelines differentiates their
incomplete gamma functions through ``autograd_gamma``, which takes about a
minute for 7,000 spells (LANL system 2 per node) and gives non-finite
standard errors when a spell is interval-censored from 0.

Generalized gamma (Prentice 1974, lifelines' ``GeneralizedGammaFitter``,
``flexsurv::dgengamma``): with :math:`w = (\ln t - \mu)/\sigma`,
:math:`a = Q^{-2}` and :math:`u = a e^{Qw}`, :math:`S(t) = \Gamma(a, u)/\Gamma(a)`
for :math:`Q > 0` and :math:`\gamma(a, u)/\Gamma(a)` for :math:`Q < 0`; the log
density is written without cancellation as

.. math:: \ln f = -\ln\sigma - \ln t - \tfrac12\ln 2\pi - \mathrm{stirlerr}(a)
          - \frac{\mathrm{expm1}(Qw) - Qw}{Q^2},

with :math:`\mathrm{stirlerr}(a) = \ln\Gamma(a) - (a - \tfrac12)\ln a + a -
\tfrac12\ln 2\pi`, so it tends to the log-normal's as :math:`Q \to 0`
(below :math:`|Q| = 10^{-6}` the log-normal is used).

References
----------
.. [1] R. L. Prentice, "A log gamma model and its maximum likelihood
   estimation", Biometrika 61(3), 1974, 539-544. doi:10.1093/biomet/61.3.539
.. [2] J. P. Klein and M. L. Moeschberger, *Survival Analysis*, 2nd ed.,
   Springer 2003, §3.4-3.5 (truncated and censored likelihood).
   doi:10.1007/b97377
.. [3] C. Loader, "Fast and accurate computation of binomial probabilities",
   2000 (the Stirling-error series).
"""

import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import special

__all__ = ["MLEResult", "fit_mle", "free_start", "hessian", "log_functions"]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_Q_SMALL = 1e-6


def _stirlerr(a: np.ndarray | float) -> np.ndarray:
    """Return ln Γ(a) - (a - 1/2) ln a + a - ln(2π)/2, accurate for large a."""
    a = np.asarray(a, dtype=float)
    big = a >= 15
    safe = np.where(big, a, 15.0)
    series = (
        1 / (12 * safe)
        - 1 / (360 * safe**3)
        + 1 / (1260 * safe**5)
        - 1 / (1680 * safe**7)
    )
    small = np.where(big, 1.0, a)
    direct = special.gammaln(small) - (small - 0.5) * np.log(small) + small
    return np.where(big, series, direct - _HALF_LOG_2PI)


def _log_upper(a: float, u: np.ndarray) -> np.ndarray:
    """Return ln Q(a, u), the regularised upper incomplete gamma, without underflow."""
    with np.errstate(divide="ignore"):
        out = np.log(special.gammaincc(a, u))
    far = ~np.isfinite(out) & (u > a)
    if far.any():  # asymptotic tail (Abramowitz & Stegun 6.5.32)
        x = u[far]
        out[far] = (
            (a - 1) * np.log(x)
            - x
            - special.gammaln(a)
            + np.log1p((a - 1) / x + (a - 1) * (a - 2) / x**2)
        )
    return out


def _log_lower(a: float, u: np.ndarray) -> np.ndarray:
    """Return ln P(a, u), the regularised lower incomplete gamma, without underflow."""
    with np.errstate(divide="ignore"):
        out = np.log(special.gammainc(a, u))
    near = ~np.isfinite(out) & (u < a) & (u > 0)
    if near.any():  # series (A&S 6.5.29), leading terms
        x = u[near]
        out[near] = (
            a * np.log(x)
            - x
            - special.gammaln(a + 1)
            + np.log1p(x / (a + 1) + x**2 / ((a + 1) * (a + 2)))
        )
    return out


def _log_terms(model: str, x: np.ndarray, t: np.ndarray) -> dict[str, Any]:
    """Return the callables (logpdf, logsf, logcdf) of t for free parameters x."""
    lt = np.log(t)
    if model in ("exponential", "weibull"):
        log_scale = x[0]
        log_rho = x[1] if model == "weibull" else 0.0
        rho = np.exp(log_rho)
        z = np.exp(rho * (lt - log_scale))
        return {
            "pdf": lambda: log_rho - log_scale + (rho - 1) * (lt - log_scale) - z,
            "sf": lambda: -z,
            "cdf": lambda: np.log(-np.expm1(-z)),
        }
    if model == "lognormal":
        mu, sigma = x[0], np.exp(x[1])
        w = (lt - mu) / sigma
        return {
            "pdf": lambda: -lt - x[1] - _HALF_LOG_2PI - 0.5 * w * w,
            "sf": lambda: special.log_ndtr(-w),
            "cdf": lambda: special.log_ndtr(w),
        }
    if model == "loglogistic":
        beta = np.exp(x[1])
        v = beta * (lt - x[0])
        return {
            "pdf": lambda: x[1] - lt + v - 2 * np.logaddexp(0, v),
            "sf": lambda: -np.logaddexp(0, v),
            "cdf": lambda: -np.logaddexp(0, -v),
        }
    if model == "gamma":
        k = np.exp(x[1])
        u = t / np.exp(x[0])
        return {
            "pdf": lambda: (k - 1) * np.log(u) - u - special.gammaln(k) - x[0],
            "sf": lambda: _log_upper(k, u),
            "cdf": lambda: _log_lower(k, u),
        }
    if model == "gengamma":
        mu, sigma, q = x[0], np.exp(x[1]), float(x[2])
        if abs(q) < _Q_SMALL:
            return _log_terms("lognormal", np.array([mu, x[1]]), t)
        w = (lt - mu) / sigma
        qw = q * w
        a = 1.0 / (q * q)
        u = a * np.exp(qw)
        lower, upper = (_log_lower, _log_upper) if q > 0 else (_log_upper, _log_lower)
        return {
            "pdf": lambda: (
                -x[1] - lt - _HALF_LOG_2PI - _stirlerr(a) - (np.expm1(qw) - qw) * a
            ),
            "sf": lambda: upper(a, u),
            "cdf": lambda: lower(a, u),
        }
    msg = f"no likelihood for model {model!r}"
    raise ValueError(msg)


def log_functions(
    model: str, x: np.ndarray, t: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return ln f(t), ln S(t) and ln F(t) for free parameters ``x`` (t > 0)."""
    terms = _log_terms(model, np.asarray(x, dtype=float), np.asarray(t, dtype=float))
    return terms["pdf"](), terms["sf"](), terms["cdf"]()


@dataclass(frozen=True)
class MLEResult:
    """A scipy maximum-likelihood fit on the free scale.

    Attributes
    ----------
    x : np.ndarray
        Free parameters at the maximum (logs of positive ones; Q as is).
    log_likelihood : float
        Weighted log-likelihood at ``x``.
    covariance : np.ndarray
        Inverse of the negative Hessian of the log-likelihood at ``x`` on the
        free scale (NaN where the Hessian could not be inverted).
    converged : bool
        Whether the optimiser reported success.
    message : str
        The optimiser's message.
    """

    x: np.ndarray
    log_likelihood: float
    covariance: np.ndarray
    converged: bool
    message: str


def _loglik_function(model: str, data: dict[str, Any]) -> Callable[[np.ndarray], float]:
    """Return ℓ(x): the weighted log-likelihood of the data's spells."""
    lower, upper = data["lower"], data["upper"]
    weights, entry = data["weights"], data["entry"]
    exact = data["exact"]
    right = data["right"]
    interval = ~exact & ~right
    from_zero = interval & (lower == 0)
    later = interval & (lower > 0)
    t_exact, w_exact = lower[exact], weights[exact]
    t_right, w_right = lower[right], weights[right]
    t_zero, w_zero = upper[from_zero], weights[from_zero]
    t_low, t_high, w_later = lower[later], upper[later], weights[later]
    entered = entry > 0
    t_entry, w_entry = entry[entered], weights[entered]

    def loglik(x: np.ndarray) -> float:
        if not np.all(np.abs(x) < 700):  # exp() of a free parameter overflows
            return -math.inf
        with np.errstate(all="ignore"):
            total = 0.0
            if t_exact.size:
                total += float(w_exact @ _log_terms(model, x, t_exact)["pdf"]())
            if t_right.size:
                total += float(w_right @ _log_terms(model, x, t_right)["sf"]())
            if t_zero.size:
                total += float(w_zero @ _log_terms(model, x, t_zero)["cdf"]())
            if t_low.size:
                s_low = _log_terms(model, x, t_low)["sf"]()
                s_high = _log_terms(model, x, t_high)["sf"]()
                total += float(w_later @ (s_low + np.log(-np.expm1(s_high - s_low))))
            if t_entry.size:
                total -= float(w_entry @ _log_terms(model, x, t_entry)["sf"]())
        return total if math.isfinite(total) else -math.inf

    return loglik


def free_start(model: str, data: dict[str, Any]) -> list[np.ndarray]:
    """Return starting points on the free scale, from the log times' moments.

    With :math:`m, s` the weighted mean and standard deviation of the log
    positive times: Weibull-type models start at scale :math:`e^m`, shape
    :math:`1/s`; log-normal at :math:`(m, s)`; gamma at shape 1, scale the
    mean time; generalized gamma at :math:`Q = 1` (the Weibull start) and at
    :math:`Q = 0.1` (near the log-normal), the better one kept.
    """
    times = np.where(data["exact"] | data["right"], data["lower"], data["upper"])
    keep = np.isfinite(times) & (times > 0)
    lt, w = np.log(times[keep]), data["weights"][keep]
    m = float(np.average(lt, weights=w))
    s = max(float(np.sqrt(np.average((lt - m) ** 2, weights=w))), 0.05)
    if model == "exponential":
        return [np.array([m])]
    if model in ("weibull", "loglogistic"):
        return [np.array([m, -math.log(s)])]
    if model == "lognormal":
        return [np.array([m, math.log(s)])]
    if model == "gamma":
        mean = float(np.average(times[keep], weights=w))
        return [np.array([math.log(mean), 0.0])]
    return [np.array([m, math.log(s), 1.0]), np.array([m, math.log(s), 0.1])]


def hessian(
    f: Callable[[np.ndarray], float], x: np.ndarray, step: float = 1e-3
) -> np.ndarray:
    r"""Central-difference Hessian of the scalar ``f`` at ``x`` (free scale).

    :math:`H_{ii} = (f(x + he_i) - 2f(x) + f(x - he_i))/h^2` and
    :math:`H_{ij} = (f(x \pm he_i \pm he_j)\text{ terms})/4h^2`, with
    :math:`h = 10^{-3}` on the log scale: :math:`2k^2 + 1` evaluations
    (19 for three parameters) where :func:`scipy.differentiate.hessian`'s
    adaptive scheme takes thousands; the test suite checks both agree.
    Truncation error :math:`O(h^2)`, rounding :math:`O(\epsilon |f| / h^2)`.
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    f0 = f(x)
    eye = np.eye(k) * step
    out = np.empty((k, k))
    for i in range(k):
        out[i, i] = (f(x + eye[i]) - 2 * f0 + f(x - eye[i])) / step**2
        for j in range(i):
            value = (
                f(x + eye[i] + eye[j])
                - f(x + eye[i] - eye[j])
                - f(x - eye[i] + eye[j])
                + f(x - eye[i] - eye[j])
            ) / (4 * step**2)
            out[i, j] = out[j, i] = value
    return out


def fit_mle(model: str, data: dict[str, Any]) -> MLEResult:
    """Maximise the weighted, truncated and censored log-likelihood of a model.

    Parameters
    ----------
    model : str
        A model of the registry.
    data : dict
        The unique spells of one group: ``lower``, ``upper`` (h), ``exact``
        and ``right`` (bool masks; the rest are interval-censored in
        ``(lower, upper]``), ``entry`` (h) and ``weights`` (counts).

    Returns
    -------
    MLEResult
        The best of the starts of :func:`free_start`.
    """
    from scipy import optimize

    loglik = _loglik_function(model, data)
    scale = float(data["weights"].sum())

    def objective(x: np.ndarray) -> float:
        value = loglik(x)
        return -value / scale if math.isfinite(value) else 1e300

    best = None
    for start in free_start(model, data):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            res = optimize.minimize(
                objective,
                start,
                method="BFGS",
                jac="3-point",
                options={"gtol": 1e-8, "maxiter": 500},
            )
            if not res.success:  # a second run from where BFGS stopped
                res = optimize.minimize(
                    objective,
                    res.x,
                    method="Nelder-Mead",
                    options={"xatol": 1e-9, "fatol": 1e-13, "maxiter": 4000},
                )
        if best is None or res.fun < best.fun:
            best = res
    assert best is not None
    x = np.asarray(best.x, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            info = -hessian(loglik, x)
            covariance = np.linalg.inv(info)
        except (np.linalg.LinAlgError, ValueError):
            covariance = np.full((x.size, x.size), np.nan)
    return MLEResult(
        x=x,
        log_likelihood=loglik(x),
        covariance=covariance,
        converged=bool(best.success),
        message=str(best.message),
    )
