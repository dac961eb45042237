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

__all__ = [
    "MLEResult",
    "fit_mle",
    "free_start",
    "gradient_hessian",
    "hessian",
    "log_functions",
    "nested_starts",
]

_HALF_LOG_2PI = 0.5 * math.log(2 * math.pi)
_Q_SMALL = 1e-6
#: BFGS stops with "precision loss" when the mean log-likelihood (about 5 for
#: 10^5 spells) cannot be lowered in floating point; with the analytic
#: gradient below this per spell, that point is the maximum (the
#: log-likelihood is then within about n * g^2 / H ~ 1e-7 of it).
_GTOL_STALLED = 1e-6
#: BFGS stops when every component of the mean score is below this; the
#: floating-point noise of a mean over 10^5 spells is about 1e-10, and
#: asking for 1e-8 made the line search spend 50 evaluations at the optimum.
_GTOL = 1e-7


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


def _numeric_partial(
    model: str, x: np.ndarray, t: np.ndarray, kind: str, i: int
) -> np.ndarray:
    """Central difference of one log term in free parameter ``i`` (step 1e-5)."""
    h = 1e-5 * max(1.0, abs(float(x[i])))
    up, down = x.copy(), x.copy()
    up[i] += h
    down[i] -= h
    plus = _log_terms(model, up, t)[kind]()
    minus = _log_terms(model, down, t)[kind]()
    return (plus - minus) / (2 * h)


def _grad_terms(
    model: str, x: np.ndarray, t: np.ndarray
) -> dict[str, Callable[[], tuple[np.ndarray, np.ndarray]]]:
    r"""Return callables giving (ln f, ∇ ln f), (ln S, ∇ ln S), (ln F, ∇ ln F).

    Each gradient has shape ``(k, n)``: one row per free parameter. Analytic
    for the exponential, Weibull, log-normal and log-logistic; for the gamma
    analytic in the scale and by central differences in the shape (the
    derivative of the incomplete gamma in its shape has no cheap form); for
    the generalized gamma analytic in :math:`\mu, \ln\sigma` and by central
    differences in :math:`Q`.
    """
    lt = np.log(t)
    if model in ("exponential", "weibull"):
        log_scale = x[0]
        log_rho = x[1] if model == "weibull" else 0.0
        rho = math.exp(log_rho)
        y = lt - log_scale
        z = np.exp(rho * y)
        k = 2 if model == "weibull" else 1

        def grad(d_scale: np.ndarray, d_rho: np.ndarray) -> np.ndarray:
            return np.stack([d_scale, d_rho][:k])

        def pdf() -> tuple[np.ndarray, np.ndarray]:
            value = log_rho - log_scale + (rho - 1) * y - z
            return value, grad(rho * (z - 1), 1 + rho * y * (1 - z))

        def sf() -> tuple[np.ndarray, np.ndarray]:
            return -z, grad(rho * z, -rho * y * z)

        def cdf() -> tuple[np.ndarray, np.ndarray]:
            ratio = z / np.expm1(z)  # d ln F / d z times z
            return np.log(-np.expm1(-z)), grad(-rho * ratio, rho * y * ratio)

        return {"pdf": pdf, "sf": sf, "cdf": cdf}
    if model == "lognormal":
        sigma = math.exp(x[1])
        w = (lt - x[0]) / sigma
        log_phi = -0.5 * w * w - _HALF_LOG_2PI

        def pdf() -> tuple[np.ndarray, np.ndarray]:
            value = -lt - x[1] - _HALF_LOG_2PI - 0.5 * w * w
            return value, np.stack([w / sigma, w * w - 1])

        def tail(sign: float) -> tuple[np.ndarray, np.ndarray]:
            value = special.log_ndtr(sign * w)
            mills = np.exp(log_phi - value)  # φ(w) / Φ(±w)
            # d ln Φ(±w) = ±mills dw, dw/dμ = -1/σ, dw/d ln σ = -w
            return value, np.stack([-sign * mills / sigma, -sign * mills * w])

        return {"pdf": pdf, "sf": lambda: tail(-1.0), "cdf": lambda: tail(1.0)}
    if model == "loglogistic":
        beta = math.exp(x[1])
        v = beta * (lt - x[0])
        p = special.expit(v)

        def pdf() -> tuple[np.ndarray, np.ndarray]:
            value = x[1] - lt + v - 2 * np.logaddexp(0, v)
            return value, np.stack([-beta * (1 - 2 * p), 1 + v * (1 - 2 * p)])

        def sf() -> tuple[np.ndarray, np.ndarray]:
            return -np.logaddexp(0, v), np.stack([beta * p, -v * p])

        def cdf() -> tuple[np.ndarray, np.ndarray]:
            q = 1 - p
            return -np.logaddexp(0, -v), np.stack([-beta * q, v * q])

        return {"pdf": pdf, "sf": sf, "cdf": cdf}
    if model == "gamma":
        k = math.exp(x[1])
        u = t / math.exp(x[0])
        log_u = np.log(u)
        log_uf = k * log_u - u - special.gammaln(k)  # ln(u f(u)), f Gamma(k, 1)

        def pdf() -> tuple[np.ndarray, np.ndarray]:
            value = (k - 1) * log_u - u - special.gammaln(k) - x[0]
            return value, np.stack([u - k, k * (log_u - special.digamma(k))])

        def sf() -> tuple[np.ndarray, np.ndarray]:
            value = _log_upper(k, u)
            d_scale = np.exp(log_uf - value)
            return value, np.stack([d_scale, _numeric_partial(model, x, t, "sf", 1)])

        def cdf() -> tuple[np.ndarray, np.ndarray]:
            value = _log_lower(k, u)
            d_scale = -np.exp(log_uf - value)
            return value, np.stack([d_scale, _numeric_partial(model, x, t, "cdf", 1)])

        return {"pdf": pdf, "sf": sf, "cdf": cdf}
    if model == "gengamma":
        mu, sigma, q = x[0], math.exp(x[1]), float(x[2])
        values = _log_terms(model, x, t)
        if abs(q) < _Q_SMALL:
            inner = _grad_terms("lognormal", np.array([mu, x[1]]), t)
        else:
            w = (lt - mu) / sigma
            qw = q * w
            a = 1.0 / (q * q)
            log_u = math.log(a) + qw
            log_uf = a * log_u - np.exp(log_u) - special.gammaln(a)  # ln(u f(u))
            # du/dμ = -u q/σ, du/d ln σ = -u q w: so d ln S = ∓ u f(u)/S · q (1/σ, w)
            sign = 1.0 if q > 0 else -1.0

            def tail(kind: str, side: float) -> tuple[np.ndarray, np.ndarray]:
                value = values[kind]()
                g = side * sign * q * np.exp(log_uf - value)
                return value, np.stack([g / sigma, g * w])

            def pdf_ms() -> tuple[np.ndarray, np.ndarray]:
                e = np.expm1(qw) / q
                return values["pdf"](), np.stack([e / sigma, -1 + e * w])

            inner = {
                "pdf": pdf_ms,
                "sf": lambda: tail("sf", 1.0),
                "cdf": lambda: tail("cdf", -1.0),
            }

        def full(kind: str) -> tuple[np.ndarray, np.ndarray]:
            value, g = inner[kind]()
            dq = _numeric_partial(model, x, t, kind, 2)
            return value, np.vstack([g, dq])

        return {kind: (lambda kind=kind: full(kind)) for kind in ("pdf", "sf", "cdf")}
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


def _loglik_gradient_function(
    model: str, data: dict[str, Any]
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    r"""Return x -> (ℓ(x), ∇ℓ(x)), the log-likelihood and its gradient together.

    The same terms as :func:`_loglik_function`; an interval-censored spell's
    :math:`\ln(S(l) - S(u)) = \ln S(l) + \ln(1 - r)`, :math:`r = S(u)/S(l)`,
    has gradient :math:`(\nabla\ln S(l) - r\nabla\ln S(u))/(1 - r)`.
    """
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

    def loglik_grad(x: np.ndarray) -> tuple[float, np.ndarray]:
        x = np.asarray(x, dtype=float)
        grad = np.zeros(x.size)
        if not np.all(np.abs(x) < 700):  # exp() of a free parameter overflows
            return -math.inf, grad
        total = 0.0
        with np.errstate(all="ignore"):
            for t, w, kind, sign in (
                (t_exact, w_exact, "pdf", 1.0),
                (t_right, w_right, "sf", 1.0),
                (t_zero, w_zero, "cdf", 1.0),
                (t_entry, w_entry, "sf", -1.0),
            ):
                if t.size:
                    value, g = _grad_terms(model, x, t)[kind]()
                    total += sign * float(w @ value)
                    grad += sign * (g @ w)
            if t_low.size:
                s_low, g_low = _grad_terms(model, x, t_low)["sf"]()
                s_high, g_high = _grad_terms(model, x, t_high)["sf"]()
                diff = s_high - s_low
                total += float(w_later @ (s_low + np.log(-np.expm1(diff))))
                r = np.exp(diff)
                grad += ((g_low - r * g_high) / -np.expm1(diff)) @ w_later
        if not (math.isfinite(total) and np.isfinite(grad).all()):
            return -math.inf, np.zeros(x.size)
        return total, grad

    return loglik_grad


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


def gradient_hessian(
    grad: Callable[[np.ndarray], np.ndarray], x: np.ndarray, step: float = 1e-4
) -> np.ndarray:
    r"""Hessian by central differences of an analytic gradient (free scale).

    Column :math:`i` is :math:`(g(x + he_i) - g(x - he_i))/2h` with
    :math:`h = 10^{-4}`, then symmetrised: :math:`2k` gradient evaluations
    (6 for three parameters) where :func:`hessian` takes :math:`2k^2 + 1`
    likelihood evaluations. Truncation error :math:`O(h^2)`.
    """
    x = np.asarray(x, dtype=float)
    k = x.size
    out = np.empty((k, k))
    for i in range(k):
        e = np.zeros(k)
        e[i] = step
        out[:, i] = (grad(x + e) - grad(x - e)) / (2 * step)
    return (out + out.T) / 2


def nested_starts(model: str, fitted: dict[str, np.ndarray]) -> list[np.ndarray]:
    r"""Return starts from already fitted nested models (free scale).

    The generalized gamma is the log-normal at :math:`Q = 0` and the Weibull
    at :math:`Q = 1`, :math:`\sigma = 1/\rho`, :math:`\mu = \ln\lambda`
    (Prentice 1974); the gamma and Weibull are the exponential at shape 1.
    """
    out = []
    if model == "gengamma":
        if "weibull" in fitted:
            log_scale, log_rho = fitted["weibull"]
            out.append(np.array([log_scale, -log_rho, 1.0]))
        if "lognormal" in fitted:
            mu, log_sigma = fitted["lognormal"]
            out += [np.array([mu, log_sigma, q]) for q in (0.1, -0.1)]
    elif model in ("gamma", "weibull") and "exponential" in fitted:
        out.append(np.array([fitted["exponential"][0], 0.0]))
    return out


def fit_mle(
    model: str, data: dict[str, Any], fitted: dict[str, np.ndarray] | None = None
) -> MLEResult:
    """Maximise the weighted, truncated and censored log-likelihood of a model.

    Parameters
    ----------
    model : str
        A model of the registry.
    data : dict
        The unique spells of one group: ``lower``, ``upper`` (h), ``exact``
        and ``right`` (bool masks; the rest are interval-censored in
        ``(lower, upper]``), ``entry`` (h) and ``weights`` (counts).
    fitted : dict of str to np.ndarray, optional
        Free parameters of models already fitted to the same data; nested
        ones give extra starts (:func:`nested_starts`).

    Returns
    -------
    MLEResult
        BFGS with the analytic gradient (:func:`_grad_terms`) from the start
        of :func:`free_start` or :func:`nested_starts` with the highest
        likelihood; Nelder-Mead from where BFGS stopped if it reports no
        success. Covariance from :func:`gradient_hessian`.
    """
    from scipy import optimize

    loglik = _loglik_function(model, data)
    loglik_grad = _loglik_gradient_function(model, data)
    scale = float(data["weights"].sum())

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = loglik_grad(x)
        if not math.isfinite(value):
            return 1e300, np.zeros(len(x))
        return -value / scale, -grad / scale

    def value_only(x: np.ndarray) -> float:
        value = loglik(x)
        return -value / scale if math.isfinite(value) else 1e300

    starts = free_start(model, data) + nested_starts(model, fitted or {})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        start = min(starts, key=value_only)
        res = optimize.minimize(
            objective,
            start,
            method="BFGS",
            jac=True,
            options={"gtol": _GTOL, "maxiter": 500},
        )
        stalled = res.status == 2 and np.max(np.abs(res.jac)) < _GTOL_STALLED
        if not res.success and not stalled:  # a second run from where BFGS stopped
            res = optimize.minimize(
                value_only,
                res.x,
                method="Nelder-Mead",
                options={"xatol": 1e-9, "fatol": 1e-13, "maxiter": 4000},
            )
    x = np.asarray(res.x, dtype=float)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            info = -gradient_hessian(lambda v: loglik_grad(v)[1], x)
            if not np.all(np.diag(info) > 0):  # no information on a parameter
                msg = "information matrix has a non-positive diagonal"
                raise ValueError(msg)
            covariance = np.linalg.inv(info)
        except (np.linalg.LinAlgError, ValueError):
            covariance = np.full((x.size, x.size), np.nan)
    return MLEResult(
        x=x,
        log_likelihood=loglik(x),
        covariance=covariance,
        converged=bool(res.success) or stalled,
        message=str(res.message),
    )
