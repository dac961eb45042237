r"""Renewal-reward expected ETTR for fitted (Weibull) failure models (private).

Re-exported by :mod:`relkit.checkpoint`; all durations are hours.
"""

import math
import numbers
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from relkit._checks import checked as _checked
from relkit.display import html_table
from relkit.errors import InvalidParameterError, RelkitWarning

__all__ = [
    "Component",
    "JobSurvival",
    "RenewalOptimum",
    "WeibullComponent",
    "check_components",
    "ettr_of",
    "optimum_of",
    "renewal_ettr",
    "renewal_optimum",
]

#: (Weibull shape β, Weibull scale η in hours, number of iid units n).
WeibullComponent = tuple[float, float, float]

#: Weibull shapes outside this range are said (a swapped tuple puts a scale
#: or a unit count there); fitted GPU/node failure shapes lie near 0.5 to 3.
SHAPE_RANGE = (0.05, 20.0)


class Component(NamedTuple):
    """One Weibull failure mode of a job: ``Component(shape, scale_h, n_units)``.

    A plain ``(shape, scale_h, n_units)`` tuple is accepted wherever a
    component is; naming the fields keeps them from being swapped.

    Parameters
    ----------
    shape : float
        Weibull shape β (> 0; < 1 infant mortality, 1 exponential).
    scale_h : float
        Weibull scale η in hours (> 0).
    n_units : int
        Number of iid units (GPUs, nodes) failing by this mode, a positive
        integer.

    Examples
    --------
    >>> Component(shape=0.7, scale_h=5000.0, n_units=1024)
    Component(shape=0.7, scale_h=5000.0, n_units=1024)
    """

    shape: float
    scale_h: float
    n_units: int


def check_components(
    components: object, where: str, *, stacklevel: int = 3
) -> list[WeibullComponent]:
    """Check a user's ``(shape, scale_h, n_units)`` components, say doubtful ones.

    Parameters
    ----------
    components : sequence of Component or (float, float, int)
        As :class:`JobSurvival`, with ``n_units`` a positive integer (an int,
        or a float with an integer value).
    where : str
        The calling function, for messages.
    stacklevel : int, default 3
        For the warnings: the frame of the user's call.

    Returns
    -------
    list of tuple
        The components as ``(float, float, float)``.

    Raises
    ------
    InvalidParameterError
        As :class:`JobSurvival`, or if an ``n_units`` is not an integer (e.g.
        256.5): the message names the order (shape, scale_h, n_units).

    Warns
    -----
    RelkitWarning
        If a shape lies outside [0.05, 20], or ``n_units`` is a float while
        ``scale_h`` is an int (``(1.0, 1, 24.0)``): both look like a swapped
        tuple.
    """
    rows = _components(components)
    order = (
        "components are (shape, scale_h, n_units), e.g. "
        "relkit.checkpoint.Component(shape=0.7, scale_h=5000.0, n_units=1024)"
    )
    for item, (shape, _scale, n) in zip(components, rows, strict=True):  # type: ignore[call-overload]
        if not float(n).is_integer():
            msg = (
                f"{where}: n_units must be a whole number of units, found {n:g} in "
                f"{tuple(item)!r}; {order}."
            )
            raise InvalidParameterError(msg)
        lo, hi = SHAPE_RANGE
        doubt = None
        if not lo <= shape <= hi:
            doubt = f"Weibull shape {shape:g} is outside [{lo:g}, {hi:g}]"
        elif isinstance(item[2], float) and isinstance(item[1], numbers.Integral):
            doubt = f"n_units {item[2]!r} is a float while scale_h {item[1]!r} is not"
        if doubt is not None:
            msg = (
                f"{where}: in {tuple(item)!r} the {doubt}: is the tuple in the "
                f"order (shape, scale_h, n_units)? {order}."
            )
            warnings.warn(msg, RelkitWarning, stacklevel=stacklevel)
    return rows


#: The series of :func:`renewal_ettr` is summed term by term while the
#: survival falls by at most e^-40 from its first term (the rest is below
#: 4e-18 of it), for at most this many terms; beyond, Euler-Maclaurin.
_DROP = 40.0
_MAX_TERMS = 1 << 20
_CHUNK = 1 << 16


class JobSurvival:
    r"""Survival S(t) of a job whose units fail by fitted Weibull modes.

    Parameters
    ----------
    components : sequence of (float, float, float)
        ``(shape, scale_h, n_units)`` per component: n_units iid units (> 0;
        fractional n scales the hazard) each failing by a Weibull with that
        shape β (> 0) and scale η (hours, > 0). The job fails at the first
        failure of any unit in any component.

    Raises
    ------
    InvalidParameterError
        If ``components`` is empty or a value is not finite and > 0.

    Notes
    -----
    :math:`S(t) = \exp(-\sum_i n_i (t/\eta_i)^{\beta_i})` (the minimum over
    independent units), evaluated as
    :math:`\exp(\sum_i n_i\,\log S_i(t))` with ``scipy.stats.weibull_min``.
    """

    def __init__(self, components: Sequence[WeibullComponent]) -> None:
        rows = _components(components)
        self.shape = np.array([r[0] for r in rows])
        self.scale_h = np.array([r[1] for r in rows])
        self.n_units = np.array([r[2] for r in rows])

    @property
    def single(self) -> bool:
        """Return True for one component (closed forms apply).

        Returns
        -------
        bool
            Whether the model has one component.
        """
        return self.shape.size == 1

    def _one(self) -> tuple[float, float]:
        """Return (β, η_eff) of a one-component model: η n^(−1/β)."""
        b = float(self.shape[0])
        return b, float(self.scale_h[0]) * float(self.n_units[0]) ** (-1.0 / b)

    def sf(self, t: np.ndarray) -> np.ndarray:
        """Return S(t) at times t (hours).

        Parameters
        ----------
        t : np.ndarray
            Times in hours, >= 0.

        Returns
        -------
        np.ndarray
            Survival probabilities.
        """
        from scipy.stats import weibull_min

        t = np.asarray(t, dtype=float)
        log_s = np.zeros_like(t)
        for b, eta, n in zip(self.shape, self.scale_h, self.n_units, strict=True):
            log_s += n * weibull_min.logsf(t, b, scale=eta)
        return np.exp(log_s)

    def cumulative_hazard(self, t: float) -> float:
        """Return H(t) = Σ n (t/η)^β.

        Parameters
        ----------
        t : float
            Time in hours, >= 0.

        Returns
        -------
        float
            Cumulative hazard.
        """
        return float(np.sum(self.n_units * (t / self.scale_h) ** self.shape))

    def hazard(self, t: float) -> float:
        """Return h(t) = Σ n β/η (t/η)^(β−1), per hour.

        Parameters
        ----------
        t : float
            Time in hours, > 0.

        Returns
        -------
        float
            Hazard rate.
        """
        z = self.shape / self.scale_h * (t / self.scale_h) ** (self.shape - 1.0)
        return float(np.sum(self.n_units * z))

    def time_at(self, cumulative_hazard: float) -> float:
        """Return the t with H(t) equal to the given value.

        Parameters
        ----------
        cumulative_hazard : float
            Target H, > 0.

        Returns
        -------
        float
            Time in hours.
        """
        from scipy.optimize import brentq

        if self.single:
            b, eta = self._one()
            return eta * cumulative_hazard ** (1.0 / b)
        # each component alone reaches H by its own time, so the sum does too
        hi = float(
            np.max(
                self.scale_h * (cumulative_hazard / self.n_units) ** (1 / self.shape)
            )
        )
        return float(
            brentq(
                lambda t: self.cumulative_hazard(t) - cumulative_hazard,
                0.0,
                hi,
                xtol=1e-12 * hi,
            )
        )

    def mean_h(self) -> float:
        """Return E[X] = ∫₀^∞ S(t) dt, hours.

        Returns
        -------
        float
            The job's mean time to failure.
        """
        if self.single:
            from scipy.stats import weibull_min

            b, eta = self._one()
            return float(weibull_min.mean(b, scale=eta))
        return self.tail_integral(0.0)

    def tail_integral(self, start_h: float) -> float:
        """Return ∫ S(t) dt from start_h to infinity, hours.

        Parameters
        ----------
        start_h : float
            Lower limit in hours, >= 0.

        Returns
        -------
        float
            The integral.
        """
        if self.single:
            from scipy.special import gamma, gammaincc

            b, eta = self._one()
            x = (start_h / eta) ** b
            return float(eta * gamma(1.0 + 1.0 / b) * gammaincc(1.0 / b, x))
        from scipy.integrate import quad

        def sf(t: float) -> float:  # exp(-H(t)): S without weibull_min's overhead
            return math.exp(-self.cumulative_hazard(t))

        # split at the median of the rest, so quad sees where the mass is
        mid = self.time_at(self.cumulative_hazard(start_h) + math.log(2.0))
        head = quad(sf, start_h, mid, limit=200, epsabs=0.0, epsrel=1e-12)[0]
        rest = quad(sf, mid, math.inf, limit=200, epsabs=0.0, epsrel=1e-12)[0]
        return float(head + rest)


def _components(components: object) -> list[WeibullComponent]:
    hint = (
        "components must be a non-empty sequence of (shape, scale_h, n_units), "
        "e.g. [(0.7, 5000.0, 1024)] for 1,024 GPUs of Weibull shape 0.7 and "
        "scale 5,000 h"
    )
    if isinstance(components, str | bytes) or not isinstance(components, Sequence):
        msg = f"{hint}; got {components!r}."
        raise InvalidParameterError(msg)
    rows: list[WeibullComponent] = []
    for item in components:
        if isinstance(item, str | bytes) or not (
            isinstance(item, Sequence) and len(item) == 3
        ):
            msg = f"{hint}; got the item {item!r}."
            raise InvalidParameterError(msg)
        shape = _checked(item[0], "shape", unit="Weibull shape")
        scale = _checked(item[1], "scale_h")
        n = _checked(item[2], "n_units", unit="units")
        rows.append((shape, scale, n))
    if not rows:
        msg = f"{hint}; got an empty sequence."
        raise InvalidParameterError(msg)
    return rows


def completed_intervals(surv: JobSurvival, restart_h: float, period_h: float) -> float:
    r"""Return Σ_{k≥1} S(u₀ + k·(τ + w)): the expected checkpoints per attempt.

    Summed term by term until S falls e^-40 below its first term (at most
    2^20 terms), the rest by Euler-Maclaurin:
    ∫ f + f/2 − f'/12 with f(x) = S(u₀ + x·h).
    """
    t1 = restart_h + period_h
    h1 = surv.cumulative_hazard(t1)
    t_end = surv.time_at(h1 + _DROP)
    n_terms = max(1, math.ceil((t_end - restart_h) / period_h))
    n_terms = min(n_terms, _MAX_TERMS)
    total = 0.0
    for start in range(1, n_terms + 1, _CHUNK):
        k = np.arange(start, min(start + _CHUNK, n_terms + 1), dtype=float)
        total += float(np.sum(surv.sf(restart_h + k * period_h)))
    t_next = restart_h + (n_terms + 1) * period_h
    s_next = float(surv.sf(np.array([t_next]))[0])
    if s_next > 0.0:
        total += (
            surv.tail_integral(t_next) / period_h
            + s_next / 2.0
            + period_h * surv.hazard(t_next) * s_next / 12.0
        )
    return total


def renewal_ettr(
    interval_h: float,
    *,
    cost_h: float,
    restart_h: float,
    components: Sequence[WeibullComponent],
    downtime_h: float = 0.0,
) -> float:
    r"""Compute the expected ETTR for a fitted failure model by renewal-reward.

    Parameters
    ----------
    interval_h : float
        Compute time τ between checkpoints in hours, > 0.
    cost_h : float
        Blocking checkpoint write w in hours, >= 0.
    restart_h : float
        Restart overhead u₀ at the start of each attempt in hours, >= 0
        (failures may strike during it).
    components : sequence of Component or (float, float, int)
        The job's failure model: ``(shape, scale_h, n_units)`` Weibull
        components (:class:`Component`, :class:`JobSurvival`), ``n_units`` a
        positive integer; ``[(1.0, M, 1)]`` is exponential with mean M.
    downtime_h : float, default 0.0
        Downtime D after each interruption (recovery, queue) in hours, >= 0,
        during which the job cannot fail.

    Returns
    -------
    float
        Expected ETTR in [0, 1]: the long-run share of wall time spent on
        computation that a checkpoint saved.

    Raises
    ------
    InvalidParameterError
        If a duration or component is out of range.

    Notes
    -----
    Each attempt starts with u₀, then repeats [compute τ, write w] until the
    time to interruption X (from the attempt's start, renewing at each
    restart, survival S) ends it; D passes before the next attempt. The
    attempts are the cycles of a renewal-reward process [1]_: the reward of
    a cycle is the saved work :math:`\tau\,\#\{k \ge 1: u_0 + k(\tau+w) \le
    X\}` and its length X + D, so the long-run ETTR is

    .. math::

        E[\mathrm{ETTR}] = \frac{\tau \sum_{k\ge1} S(u_0 + k(\tau + w))}
                                {E[X] + D},
        \qquad E[X] = \int_0^\infty S(t)\,dt.

    With one exponential component of mean M and D = 0 the series is
    geometric and this is Daly's efficiency [2]_
    :math:`\tau e^{-u_0/M} / (M(e^{(\tau+w)/M} - 1))`
    (:func:`relkit.checkpoint.checkpoint_efficiency`). E[X] is the Weibull
    mean for one component and ``scipy.integrate.quad`` of S otherwise. The
    series is summed term by term until S has fallen by e^-40 (at most 2^20
    terms), then closed by Euler-Maclaurin (the integral of the rest plus
    half its first term and the derivative correction). A Weibull shape
    below 1 (falling hazard, as Schroeder and Gibson [3]_ found for HPC
    systems) makes early failures likelier than the exponential of the same
    mean, which moves the optimum interval away from Young's.

    References
    ----------
    .. [1] S. M. Ross, Stochastic Processes, 2nd ed., Wiley, 1996, §3.6
       (renewal reward processes). ISBN 978-0-471-12062-9
    .. [2] J. T. Daly, FGCS 22(3), 2006. doi:10.1016/j.future.2004.11.016
    .. [3] B. Schroeder and G. A. Gibson, DSN 2006. doi:10.1109/DSN.2006.5

    Examples
    --------
    Daly 2006, Fig. 3 (M = 24 h, w = 5 min, u₀ = 10 min) at τ = 116.69 min:

    >>> round(
    ...     renewal_ettr(
    ...         116.6901 / 60,
    ...         cost_h=5 / 60,
    ...         restart_h=10 / 60,
    ...         components=[(1.0, 24.0, 1)],
    ...     ),
    ...     6,
    ... )
    0.912606
    """
    rows = check_components(components, "renewal_ettr")
    return ettr_of(
        JobSurvival(rows),
        interval_h,
        cost_h=cost_h,
        restart_h=restart_h,
        downtime_h=downtime_h,
    )


def ettr_of(
    surv: "JobSurvival",
    interval_h: float,
    *,
    cost_h: float,
    restart_h: float,
    downtime_h: float = 0.0,
) -> float:
    """Return :func:`renewal_ettr` for a built :class:`JobSurvival`.

    For relkit's own scaled models (a hazard multiplied by a rate ratio as a
    fractional ``n_units``), which :func:`check_components` would refuse.

    Parameters
    ----------
    surv : JobSurvival
        The job's survival.
    interval_h, cost_h, restart_h, downtime_h : float
        As :func:`renewal_ettr`.

    Returns
    -------
    float
    """
    tau = _checked(interval_h, "interval_h")
    w = _checked(cost_h, "cost_h", strict=False)
    u0 = _checked(restart_h, "restart_h", strict=False)
    d = _checked(downtime_h, "downtime_h", strict=False)
    return _ettr(surv, tau, w, u0, d, surv.mean_h())


def _ettr(
    surv: JobSurvival, tau: float, w: float, u0: float, d: float, mean: float
) -> float:
    value = tau * completed_intervals(surv, u0, tau + w) / (mean + d)
    return min(1.0, max(0.0, value))


@dataclass(frozen=True)
class RenewalOptimum:
    """The interval maximising the renewal-reward ETTR, beside Young's.

    Parameters
    ----------
    interval_h : float
        Maximiser τ* of :func:`renewal_ettr`, hours.
    expected_ettr : float
        Expected ETTR at τ*.
    mttf_h : float
        The job's mean time to failure E[X] under the model, hours.
    young_interval_h : float
        Young's √(2wM) at M = ``mttf_h``, hours.
    ettr_at_young : float
        Expected ETTR under the model at Young's interval.
    """

    interval_h: float
    expected_ettr: float
    mttf_h: float
    young_interval_h: float
    ettr_at_young: float

    def to_dict(self) -> dict[str, float]:
        """Return the fields as a plain dict.

        Returns
        -------
        dict
            Field name to value.
        """
        return asdict(self)

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table(
            "Optimum interval under a fitted failure model", self.to_dict()
        )


def renewal_optimum(
    *,
    cost_h: float,
    restart_h: float,
    components: Sequence[WeibullComponent],
    downtime_h: float = 0.0,
) -> RenewalOptimum:
    r"""Find the checkpoint interval that maximises the renewal-reward ETTR.

    Parameters
    ----------
    cost_h : float
        Blocking checkpoint write w in hours, > 0.
    restart_h : float
        Restart overhead u₀ in hours, >= 0.
    components : sequence of Component or (float, float, int)
        ``(shape, scale_h, n_units)`` Weibull components of the job's failure
        model (see :func:`renewal_ettr`), ``n_units`` a positive integer.
    downtime_h : float, default 0.0
        Downtime D after each interruption in hours, >= 0.

    Returns
    -------
    RenewalOptimum
        τ*, the ETTR there, the model's MTTF, Young's interval at that MTTF
        and the ETTR Young's interval would give.

    Raises
    ------
    InvalidParameterError
        If a duration or component is out of range (w must be > 0: without a
        checkpoint cost the ETTR rises as τ → 0 and has no maximiser;
        ``n_units`` not a whole number: :func:`check_components`).

    Warns
    -----
    RelkitWarning
        If a component looks swapped (:func:`check_components`).

    Notes
    -----
    The ETTR of :func:`renewal_ettr` is evaluated on 61 log-spaced τ from
    Young's :math:`\tau_Y = \sqrt{2 w M}` / 1000 to 1000 τ_Y, and the best
    grid point's neighbours bracket ``scipy.optimize.minimize_scalar``
    (bounded, on log τ, xatol 1e-10). For one exponential component and
    D = 0 the maximiser is the Lambert-W optimum of
    :func:`relkit.checkpoint.exact_interval_h`.

    References
    ----------
    .. [1] S. M. Ross, Stochastic Processes, 2nd ed., Wiley, 1996, §3.6.
       ISBN 978-0-471-12062-9
    .. [2] J. W. Young, CACM 17(9), 1974. doi:10.1145/361147.361115
    .. [3] J. T. Daly, FGCS 22(3), 2006. doi:10.1016/j.future.2004.11.016

    Examples
    --------
    Daly 2006, Fig. 3 as an exponential model: the exact optimum 116.69 min.

    >>> opt = renewal_optimum(
    ...     cost_h=5 / 60, restart_h=10 / 60, components=[(1.0, 24.0, 1)]
    ... )
    >>> round(opt.interval_h * 60, 2), round(opt.young_interval_h * 60, 2)
    (116.69, 120.0)
    """
    rows = check_components(components, "renewal_optimum")
    return optimum_of(
        JobSurvival(rows), cost_h=cost_h, restart_h=restart_h, downtime_h=downtime_h
    )


def optimum_of(
    surv: "JobSurvival", *, cost_h: float, restart_h: float, downtime_h: float = 0.0
) -> "RenewalOptimum":
    """Return :func:`renewal_optimum` for a built :class:`JobSurvival`.

    See :func:`ettr_of` (relkit's own scaled models).

    Parameters
    ----------
    surv : JobSurvival
        The job's survival.
    cost_h, restart_h, downtime_h : float
        As :func:`renewal_optimum`.

    Returns
    -------
    RenewalOptimum
    """
    w = _checked(cost_h, "cost_h")
    u0 = _checked(restart_h, "restart_h", strict=False)
    d = _checked(downtime_h, "downtime_h", strict=False)
    return _optimum(surv, w, u0, d)


def _optimum(surv: JobSurvival, w: float, u0: float, d: float) -> RenewalOptimum:
    from scipy.optimize import minimize_scalar

    mean = surv.mean_h()
    young = math.sqrt(2.0 * w * mean)

    def loss(log_tau: float) -> float:
        return -_ettr(surv, math.exp(log_tau), w, u0, d, mean)

    grid = np.linspace(
        math.log(young) - 3 * math.log(10), math.log(young) + 3 * math.log(10), 61
    )
    values = [loss(float(x)) for x in grid]
    i = int(np.argmin(values))
    lo, hi = float(grid[max(0, i - 1)]), float(grid[min(grid.size - 1, i + 1)])
    res = minimize_scalar(
        loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-10}
    )
    best_x, best = (float(res.x), -float(res.fun))
    if -values[i] > best:  # the bracket's end was better (an edge optimum)
        best_x, best = float(grid[i]), -values[i]
    return RenewalOptimum(
        interval_h=math.exp(best_x),
        expected_ettr=best,
        mttf_h=mean,
        young_interval_h=young,
        ettr_at_young=_ettr(surv, young, w, u0, d, mean),
    )
