r"""The one registry of parametric lifetime models relkit fits.

Each :class:`ModelSpec` says, in one place, which lifelines fitter estimates
the model (used to cross-check relkit's own scipy fits, see
:mod:`relkit.survival._mle`), how its parameters map onto relkit's columns
(``scale_h``, ``shape``, ``shape2``), and how to evaluate the fitted model
(density, survival, cumulative hazard, quantile) from those columns, through
the matching :mod:`scipy.stats` distribution. The fits
(:func:`relkit.survival.fit_lifetime_models`), :func:`model_density`, the
probability plots and the goodness of fit all read it.

Columns per model
-----------------
============  ==================  ===============  =============
model         ``scale_h``          ``shape``        ``shape2``
============  ==================  ===============  =============
exponential   mean :math:`\lambda`  —                —
weibull       :math:`\lambda`       :math:`\rho`     —
lognormal     median :math:`e^\mu`  :math:`\sigma`   —
loglogistic   :math:`\alpha`        :math:`\beta`    —
gamma         :math:`\theta`        :math:`k`        —
gengamma      :math:`e^\mu`         :math:`\sigma`   :math:`Q`
============  ==================  ===============  =============

The generalized gamma is Prentice's (1974) parametrisation as in lifelines'
``GeneralizedGammaFitter`` (its ``lambda_`` is :math:`Q`) and R's
``flexsurv::dgengamma``: :math:`Q = 0` is the log-normal, :math:`Q = 1` the
Weibull, :math:`Q = \sigma` the gamma.

References
----------
.. [1] R. L. Prentice, "A log gamma model and its maximum likelihood
   estimation", Biometrika 61(3), 1974, 539-544. doi:10.1093/biomet/61.3.539
.. [2] C. Davidson-Pilon, "lifelines: survival analysis in Python", JOSS 4(40),
   2019. doi:10.21105/joss.01317
"""

import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import numpy as np

if TYPE_CHECKING:
    from lifelines.fitters import ParametricUnivariateFitter
    from scipy.stats._distn_infrastructure import rv_continuous_frozen

__all__ = [
    "DEFAULT_MODELS",
    "MODELS",
    "REGISTRY",
    "Model",
    "ModelSpec",
    "cumulative_hazard",
    "density",
    "distribution",
    "gamma_fitter_class",
    "gengamma_fitter_class",
    "quantile",
    "survival",
]

Model = Literal[
    "exponential", "weibull", "lognormal", "loglogistic", "gamma", "gengamma"
]
#: How one relkit column is read from one lifelines parameter: ``"positive"``
#: (the parameter itself, > 0; Wald interval on its log), ``"exp"`` (the
#: exponential of a parameter on the log scale) or ``"real"`` (the parameter,
#: any sign; plain Wald interval).
Transform = Literal["positive", "exp", "real"]


@dataclass(frozen=True)
class ModelSpec:
    """One parametric lifetime model: its fitter, parameters and functions.

    Attributes
    ----------
    name : str
        relkit's name (``models=`` value).
    label : str
        Name in messages, e.g. ``"log-normal"``.
    columns : dict of str to (str, Transform, str)
        relkit column (``scale_h``, ``shape``, ``shape2``) -> (lifelines
        parameter, transform, the parameter's name in messages).
    axes : str or None
        Probability-plot axes on which the model's CDF is a straight line:
        ``"exponential"``, ``"weibull"``, ``"lognormal"``, ``"loglogistic"``,
        or None (none exists; plotted on Weibull axes).
    """

    name: str
    label: str
    columns: dict[str, tuple[str, Transform, str]]
    axes: str | None

    @property
    def n_params(self) -> int:
        """Number of free parameters (k in AIC and BIC)."""
        return len(self.columns)

    def fitter(self, alpha: float) -> "ParametricUnivariateFitter":
        """Return an unfitted lifelines fitter for this model."""
        import lifelines

        classes: dict[str, Callable[[], Any]] = {
            "exponential": lambda: lifelines.ExponentialFitter,
            "weibull": lambda: lifelines.WeibullFitter,
            "lognormal": lambda: lifelines.LogNormalFitter,
            "loglogistic": lambda: lifelines.LogLogisticFitter,
            "gamma": gamma_fitter_class,
            "gengamma": gengamma_fitter_class,
        }
        return _with_truncated_intervals(classes[self.name]())(alpha=alpha)


REGISTRY: dict[str, ModelSpec] = {
    "exponential": ModelSpec(
        "exponential",
        "exponential",
        {"scale_h": ("lambda_", "positive", "mean")},
        "exponential",
    ),
    "weibull": ModelSpec(
        "weibull",
        "Weibull",
        {
            "scale_h": ("lambda_", "positive", "scale"),
            "shape": ("rho_", "positive", "shape"),
        },
        "weibull",
    ),
    "lognormal": ModelSpec(
        "lognormal",
        "log-normal",
        {
            "scale_h": ("mu_", "exp", "median"),
            "shape": ("sigma_", "positive", "sigma"),
        },
        "lognormal",
    ),
    "loglogistic": ModelSpec(
        "loglogistic",
        "log-logistic",
        {
            "scale_h": ("alpha_", "positive", "scale"),
            "shape": ("beta_", "positive", "shape"),
        },
        "loglogistic",
    ),
    "gamma": ModelSpec(
        "gamma",
        "gamma",
        {
            "scale_h": ("lambda_", "positive", "scale"),
            "shape": ("k_", "positive", "shape k"),
        },
        None,
    ),
    "gengamma": ModelSpec(
        "gengamma",
        "generalized gamma",
        {
            "scale_h": ("mu_", "exp", "exp(mu)"),
            "shape": ("ln_sigma_", "exp", "sigma"),
            "shape2": ("lambda_", "real", "Q"),
        },
        None,
    ),
}
#: Every model relkit can fit (``models=`` values).
MODELS: tuple[Model, ...] = (
    "exponential",
    "weibull",
    "lognormal",
    "loglogistic",
    "gamma",
    "gengamma",
)

#: The models fitted by default: the four with closed-form likelihoods. Gamma
#: and generalized gamma need the incomplete gamma function (and a numerical
#: derivative in their shape) at every spell: on 10^5 left-truncated spells
#: they take 5-7 s each against under 1 s for each of the four, so per-mode
#: fits of 10^5 units x 8 modes took 177 s with all six and would not meet
#: issue 12's 60 s. ``models=MODELS`` (``relkit survival --all-models``)
#: ranks all six; on LANL system 2's 7,153 per-node gaps the six took 0.28 s.
DEFAULT_MODELS: tuple[Model, ...] = (
    "exponential",
    "weibull",
    "lognormal",
    "loglogistic",
)

_Q_ZERO = 1e-8  # |Q| below this: the generalized gamma is the log-normal


def distribution(
    model: str, scale_h: float, shape: float | None, shape2: float | None
) -> "rv_continuous_frozen":
    r"""Return the frozen :mod:`scipy.stats` distribution of a fitted model.

    Parameters
    ----------
    model : str
        A key of :data:`REGISTRY`.
    scale_h : float
        ``scale_h`` column (h).
    shape, shape2 : float or None
        ``shape`` and ``shape2`` columns (None where the model has none).

    Returns
    -------
    scipy.stats.rv_continuous frozen distribution
        ``expon``, ``weibull_min``, ``lognorm``, ``fisk`` (log-logistic),
        ``gamma`` or ``gengamma``.

    Notes
    -----
    Generalized gamma (Prentice 1974): for :math:`Q \ne 0`,
    :math:`Q^{-2}(T/e^{\mu})^{Q/\sigma} \sim \mathrm{Gamma}(Q^{-2})`, i.e.
    scipy's ``gengamma(a=1/Q**2, c=Q/sigma, scale=e**mu * (Q**2)**(sigma/Q))``
    (any sign of :math:`Q`); :math:`Q = 0` is ``lognorm(sigma, scale=e**mu)``.
    """
    from scipy import stats

    if model == "exponential":
        return stats.expon(scale=scale_h)
    if model == "weibull":
        return stats.weibull_min(shape, scale=scale_h)
    if model == "lognormal":
        return stats.lognorm(shape, scale=scale_h)
    if model == "loglogistic":
        return stats.fisk(shape, scale=scale_h)
    if model == "gamma":
        return stats.gamma(shape, scale=scale_h)
    if model == "gengamma":
        sigma, q = float(shape or 0.0), float(shape2 or 0.0)
        if abs(q) < _Q_ZERO:
            return stats.lognorm(sigma, scale=scale_h)
        scale = scale_h * math.exp(sigma / q * math.log(q * q))
        return stats.gengamma(1.0 / (q * q), q / sigma, scale=scale)
    msg = f"unknown model {model!r}; choose from {list(REGISTRY)}."
    raise ValueError(msg)


def density(
    model: str,
    t: np.ndarray,
    scale_h: float,
    shape: float | None = None,
    shape2: float | None = None,
) -> np.ndarray:
    """Density f(t) (per hour) of a fitted model, see :func:`distribution`."""
    return np.asarray(distribution(model, scale_h, shape, shape2).pdf(t))


def survival(
    model: str,
    t: np.ndarray,
    scale_h: float,
    shape: float | None = None,
    shape2: float | None = None,
) -> np.ndarray:
    """Survival function S(t) = P(T > t) of a fitted model."""
    return np.asarray(distribution(model, scale_h, shape, shape2).sf(t))


def cumulative_hazard(
    model: str,
    t: np.ndarray,
    scale_h: float,
    shape: float | None = None,
    shape2: float | None = None,
) -> np.ndarray:
    """Cumulative hazard H(t) = -ln S(t) of a fitted model."""
    return -np.asarray(distribution(model, scale_h, shape, shape2).logsf(t))


def quantile(
    model: str,
    p: np.ndarray,
    scale_h: float,
    shape: float | None = None,
    shape2: float | None = None,
) -> np.ndarray:
    """Quantile F^{-1}(p) (h) of a fitted model."""
    return np.asarray(distribution(model, scale_h, shape, shape2).ppf(p))


@functools.cache
def _with_truncated_intervals(cls: type) -> type:
    r"""Give a lifelines fitter a correct interval-censored likelihood with entry.

    lifelines 0.30.3's ``fit_interval_censoring`` accepts ``entry`` but clips
    every censored term :math:`S(l) - S(u)` to at least 1e-25 before adding
    :math:`H(a)`: a right-censored spell of a late entrant then contributes
    :math:`\log 10^{-25} + H(a)`, unbounded as the scale goes to 0 (an
    exponential fit runs to its 1e-9 bound). This subclass maximises

    .. math:: \ell = \sum_{	ext{exact}} \log h(t) - H(t)
              - \sum_{	ext{right}} H(t)
              + \sum_{	ext{interval}} \logigl(S(l) - S(u)igr)
              + \sum H(a),

    with :math:`\log(S(l) - S(u)) = -H(l) + \log(-\mathrm{expm1}(H(l) - H(u)))`
    (exact in floating point) and :math:`S(0) = 1` for intervals from 0 (Klein
    & Moeschberger 2003, §3.5 and §3.4). Weights multiply each term.
    """
    import autograd.numpy as anp

    def nll(
        self: object,
        params: np.ndarray,
        Ts: tuple[np.ndarray, np.ndarray],
        E: np.ndarray,
        entry: np.ndarray,
        weights: np.ndarray,
    ) -> np.ndarray:
        hazard = self._cumulative_hazard  # type: ignore[attr-defined]
        start, stop = Ts
        exact = E.astype(bool)
        right = ~exact & np.isinf(stop)
        inner = ~exact & ~right
        from_zero = inner & (start == 0)
        later = inner & (start > 0)
        ll = (
            weights[exact]
            * (self._log_hazard(params, stop[exact]) - hazard(params, stop[exact]))  # type: ignore[attr-defined]
        ).sum()
        ll = ll - (weights[right] * hazard(params, start[right])).sum()
        ll = (
            ll
            + (
                weights[from_zero]
                * anp.log(-anp.expm1(-hazard(params, stop[from_zero])))
            ).sum()
        )
        h_low = hazard(params, start[later])
        h_high = hazard(params, stop[later])
        ll = (
            ll + (weights[later] * (-h_low + anp.log(-anp.expm1(h_low - h_high)))).sum()
        )
        entered = entry > 0
        ll = ll + (weights[entered] * hazard(params, entry[entered])).sum()
        return -ll / weights.sum()

    return type(
        cls.__name__,
        (cls,),
        {"_negative_log_likelihood_interval_censoring": nll},
    )


def _guarded(
    hazard: Callable[[np.ndarray], np.ndarray], times: np.ndarray
) -> np.ndarray:
    """Evaluate H at finite positive times; H(0) = 0, H(inf) = inf, no NaN gradient.

    autograd differentiates both branches of a ``where``, so the unsafe times
    are replaced by 1 before ``hazard`` sees them (the usual double-where).
    """
    import autograd.numpy as anp
    from autograd.tracer import getval

    t = np.asarray(getval(times), dtype=float)
    inside = (t > 0) & np.isfinite(t)
    if inside.all():
        return hazard(times)
    safe = anp.where(inside, times, 1.0)
    edge = np.where(t > 0, np.inf, 0.0)
    return anp.where(inside, hazard(safe), edge)


def gamma_fitter_class() -> type:
    r"""Return lifelines' fitter of the two-parameter gamma (defined here).

    Returns
    -------
    type
        A ``ParametricUnivariateFitter`` subclass with parameters ``lambda_``
        (scale :math:`\theta`, h) and ``k_`` (shape :math:`k`).

    Notes
    -----
    lifelines' documented way to add a model is a subclass that defines the
    cumulative hazard, :math:`H(t) = -\ln Q(k, t/\theta)` with :math:`Q` the
    regularised upper incomplete gamma function, written with autograd
    primitives. ``autograd.scipy.special.gammaincc`` has no derivative in
    :math:`k`, so this uses ``autograd_gamma.gammainccln`` (MIT), the
    differentiable version lifelines' own ``GeneralizedGammaFitter`` uses
    (installed with lifelines). The log hazard is given in closed form,
    :math:`\ln h = (k-1)\ln t - k\ln\theta - t/\theta - \ln\Gamma(k) + H(t)`.
    """
    import autograd.numpy as anp
    from autograd_gamma import gammainccln, gammaln
    from lifelines.fitters import KnownModelParametricUnivariateFitter

    class GammaFitter(KnownModelParametricUnivariateFitter):  # type: ignore[misc]
        """Two-parameter gamma lifetime model (scale ``lambda_``, shape ``k_``)."""

        _fitted_parameter_names = ("lambda_", "k_")
        _bounds = ((0, None), (0, None))

        def _create_initial_point(
            self, durations: tuple[np.ndarray, ...], *args: object
        ) -> np.ndarray:
            t = np.asarray(durations[0], dtype=float)
            t = t[np.isfinite(t) & (t > 0)]
            mean = float(t.mean()) if t.size else 1.0
            return np.array([mean, 1.0])

        def _cumulative_hazard(
            self, params: np.ndarray, times: np.ndarray
        ) -> np.ndarray:
            lam, k = params
            # H(0) = 0 and H(inf) = inf exactly, without NaN gradients
            # (interval-censored rows run from 0 or to inf)
            return _guarded(lambda t: -gammainccln(k, t / lam), times)

        def _log_hazard(self, params: np.ndarray, times: np.ndarray) -> np.ndarray:
            lam, k = params
            return (
                (k - 1) * anp.log(times)
                - k * anp.log(lam)
                - times / lam
                - gammaln(k)
                - gammainccln(k, times / lam)
            )

    return GammaFitter


def gengamma_fitter_class() -> type:
    r"""Return lifelines' ``GeneralizedGammaFitter`` with :math:`H(0) = 0` exact.

    lifelines evaluates :math:`\log t` inside the cumulative hazard, so an
    interval-censored spell in :math:`(0, r]` gives a NaN gradient at
    :math:`t = 0`; this subclass returns :math:`H(0) = 0` (its true value)
    through a guarded branch and leaves every other time to lifelines.
    """
    from lifelines import GeneralizedGammaFitter

    class GeneralizedGammaFitterAtZero(GeneralizedGammaFitter):  # type: ignore[misc]
        """lifelines' generalized gamma, with H(0) = 0 (see the factory)."""

        def _cumulative_hazard(
            self, params: np.ndarray, times: np.ndarray
        ) -> np.ndarray:
            parent = super()._cumulative_hazard
            return _guarded(lambda t: parent(params, t), times)

    return GeneralizedGammaFitterAtZero
