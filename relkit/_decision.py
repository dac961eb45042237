r"""The checkpoint decision with bounds from the failure rate's uncertainty (private).

Re-exported by :mod:`relkit.checkpoint`; all durations are hours.
"""

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from numbers import Real

from relkit._checks import checked as _checked
from relkit._ettr_model import ettr_value, optimal_interval
from relkit._renewal import (
    JobSurvival,
    RenewalOptimum,
    WeibullComponent,
    check_components,
    ettr_of,
    optimum_of,
)
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.display import html_table
from relkit.errors import InvalidParameterError

__all__ = ["CheckpointDecision", "checkpoint_decision"]


@dataclass(frozen=True)
class CheckpointDecision:
    """A checkpoint interval with its expected ETTR and their bounds.

    Parameters
    ----------
    interval_h : float or None
        Recommended compute time Δt between checkpoints, hours; None when no
        failure was seen (no point estimate of the rate to plan with).
    interval_lower_h : float
        The optimal interval at the upper rate bound, hours.
    interval_upper_h : float or None
        The optimal interval at the lower rate bound, hours; None when no
        failure was seen (the lower rate bound is 0).
    expected_ettr : float or None
        Expected ETTR at ``interval_h`` and the measured rate, in [0, 1].
    expected_ettr_lower : float
        Expected ETTR at ``interval_h`` (``interval_lower_h`` when no failure
        was seen) if the rate is at its upper bound.
    expected_ettr_upper : float
        The same at the lower rate bound.
    failure_rate_per_h : float
        λ: failures per hour of the (scaled) job, n_failures / exposure_h ×
        scale.
    failure_rate_lower_per_h : float
        Lower confidence bound of λ (0 when no failure was seen).
    failure_rate_upper_per_h : float
        Upper confidence bound of λ (one-sided when no failure was seen).
    young_interval_h : float or None
        Young's √(2wM) at the point MTTF M, hours, for comparison; None when
        no failure was seen.
    method : str
        The model behind the numbers.
    assumptions : tuple of str
        The assumptions the numbers rest on, as plain sentences.
    """

    interval_h: float | None
    interval_lower_h: float
    interval_upper_h: float | None
    expected_ettr: float | None
    expected_ettr_lower: float
    expected_ettr_upper: float
    failure_rate_per_h: float
    failure_rate_lower_per_h: float
    failure_rate_upper_per_h: float
    young_interval_h: float | None
    method: str
    assumptions: tuple[str, ...]

    def to_dict(self) -> dict[str, float | str | list[str] | None]:
        """Return the fields as a plain dict (``assumptions`` as a list).

        Returns
        -------
        dict
            Field name to value, ready for ``json.dumps``.
        """
        out = asdict(self)
        out["assumptions"] = list(self.assumptions)
        return out

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("Checkpoint interval decision with bounds", self.to_dict())


def _ettr_at(lam: float, a: float, dt: float, w: float) -> float:
    """Return the ETTR of interval dt at rate lam.

    At dt = 0 (the model broke down at the rate planned for) it is the ETTR at
    lam's own optimum: 1 with no failures (the limit of rare checkpoints).
    """
    if dt > 0.0:
        return ettr_value(lam, a, dt, w)
    return 1.0 if lam == 0.0 else optimal_interval(lam, a, w)[1]


def _pct(confidence: float) -> str:
    return f"{confidence * 100:g} %"


def checkpoint_decision(
    *,
    n_failures: int,
    exposure_h: float,
    restart_h: float,
    cost_h: float,
    queue_h: float = 0.0,
    confidence: float = DEFAULT_CONFIDENCE,
    scale: float = 1.0,
    model: Sequence[WeibullComponent] | None = None,
) -> CheckpointDecision:
    r"""Decide the checkpoint interval, with bounds from the failure count.

    Parameters
    ----------
    n_failures : int
        Interruptions of the job counted, >= 0.
    exposure_h : float
        Hours the job ran (at its observed size) while they were counted, > 0.
    restart_h : float
        Restart overhead u₀ per interruption in hours, >= 0.
    cost_h : float
        Blocking checkpoint write w in hours, > 0.
    queue_h : float, default 0.0
        Queue wait q per interruption in hours, >= 0.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided confidence level of the rate bounds, in (0, 1) (one-sided
        when ``n_failures`` is 0).
    scale : float, default 1.0
        Factor, > 0, from the observed job to the target one, e.g. target GPUs
        / observed GPUs: failures proportional to the job's size.
    model : sequence of Component or (float, float, int), optional
        A fitted failure model of the job at its observed size, as
        ``(shape, scale_h, n_units)`` Weibull components
        (:class:`relkit.checkpoint.Component`, ``n_units`` a positive integer;
        a doubtful tuple is warned of, see
        :func:`relkit.checkpoint.renewal_ettr`); its hazard is multiplied by
        ``scale``. Without it failures are exponential (Poisson).

    Returns
    -------
    CheckpointDecision
        The interval, its expected ETTR, the rate, their bounds, Young's
        interval, the method and the assumptions.

    Raises
    ------
    InvalidParameterError
        If ``exposure_h`` is not > 0, a count, duration, confidence, scale or
        model component is out of range, or ``model`` is given with no
        failure counted.

    Notes
    -----
    :math:`\hat\lambda = n/E \times s` with exact Poisson (Garwood) bounds
    :math:`[\chi^2_{(1-c)/2;2n}, \chi^2_{(1+c)/2;2n+2}]/(2E) \times s`
    (:func:`relkit.metrics.failure_rate_bounds`); with n = 0 only the
    one-sided upper bound :math:`\chi^2_{c;2}/(2E)\,s = -\ln(1-c)\,s/E`.

    Without ``model``, Kokolis et al.'s first-order E[ETTR] with the queue
    term, :math:`(1 - \lambda(u_0 + q + \Delta t/2))/(1 + w/\Delta t)`, and
    its exact maximiser :math:`\Delta t^* = \sqrt{w^2 + 2w(1 - \lambda(u_0 +
    q))/\lambda} - w` (:func:`relkit.checkpoint.ettr_model`). Both fall as
    λ grows (Δt* and the ETTR at any fixed Δt), so the bounds of λ map to
    bounds of each: the interval at the upper rate is ``interval_lower_h``,
    and the ETTR of ``interval_h`` at the upper rate is
    ``expected_ettr_lower`` (where the model has broken down, λ(u₀ + q) >= 1
    and ``interval_h`` is 0, the ETTR bounds are each rate's own optimum).

    With ``model``, the renewal-reward ETTR of
    :func:`relkit.checkpoint.renewal_ettr` (u₀ at the start of each attempt,
    q as downtime) and its numeric maximiser; the fitted shapes are taken as
    known and the rate bounds scale the hazard by
    :math:`\lambda_\mathrm{bound}/\hat\lambda` (the bounds of the interval
    are then sorted, the larger hazard giving the shorter interval).

    References
    ----------
    .. [1] A. Kokolis et al., "Revisiting reliability in large-scale machine
       learning research clusters", HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096
    .. [2] F. Garwood, Biometrika 28(3-4), 1936. doi:10.1093/biomet/28.3-4.437
    .. [3] J. W. Young, CACM 17(9), 1974. doi:10.1145/361147.361115

    Examples
    --------
    Llama 3 pre-training (419 interruptions in 54 days of 16,384 GPUs), with
    10 min restarts and 1 min writes:

    >>> d = checkpoint_decision(
    ...     n_failures=419, exposure_h=54 * 24, restart_h=10 / 60, cost_h=1 / 60
    ... )
    >>> [
    ...     round(x * 60, 1)
    ...     for x in (d.interval_lower_h, d.interval_h, d.interval_upper_h)
    ... ]
    [16.8, 17.8, 18.8]
    >>> round(d.expected_ettr_lower, 4), round(d.expected_ettr, 4)
    (0.8407, 0.8504)
    >>> checkpoint_decision(n_failures=3, exposure_h=0.0, restart_h=0.1, cost_h=0.01)
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: exposure_h must be > 0 hours: ...the run...
    """
    from relkit.metrics import failure_rate_bounds, mtbf_bounds

    if (
        isinstance(exposure_h, bool)
        or not isinstance(exposure_h, Real)
        or not (math.isfinite(float(exposure_h)) and float(exposure_h) > 0.0)
    ):
        msg = (
            f"exposure_h must be > 0 hours: the hours the job ran while its "
            f"{n_failures!r} failures were counted; got {exposure_h!r}. With no "
            "exposure there is no rate. Pass the run's wall time, e.g. "
            "exposure_h=(end - start).total_seconds() / 3600."
        )
        raise InvalidParameterError(msg)
    e = float(exposure_h)
    u0 = _checked(restart_h, "restart_h", strict=False)
    w = _checked(cost_h, "cost_h")
    q = _checked(queue_h, "queue_h", strict=False)
    s = _checked(scale, "scale", unit="target size / observed size")
    if n_failures == 0 and not isinstance(n_failures, bool):
        b = mtbf_bounds(0, exposure_h=e, confidence=confidence)
        rate, lo, hi = 0.0, 0.0, s / b.lower_one_sided_h
    else:
        bounds = failure_rate_bounds(n_failures, exposure=e, confidence=confidence)
        rate, lo, hi = s * bounds.rate, s * bounds.lower, s * bounds.upper
    c = float(confidence)
    n = int(n_failures)
    common = [
        f"Each failure costs the restart overhead u₀ = {u0:g} h and the queue "
        f"wait q = {q:g} h, and the work done since the last checkpoint.",
        f"Each checkpoint blocks training for w = {w:g} h.",
    ]
    if s != 1.0:
        common.append(
            f"The rate is scaled ×{s:g} to the target GPU count (failures in "
            "proportion to the job's size)."
        )
    if n == 0:
        bound_note = (
            f"No failure was observed in {e:g} h: only a one-sided {_pct(c)} "
            f"upper bound of the rate exists ({hi:.4g} per hour); "
            "interval_lower_h and expected_ettr_lower are at that rate, and "
            "there is no point estimate of the interval."
        )
    else:
        bound_note = (
            f"The rate bounds are exact Poisson (Garwood) two-sided {_pct(c)} "
            "bounds. The interval at the upper rate is interval_lower_h, and the "
            "ETTR bounds are those of interval_h at the rate bounds."
        )
    if model is not None:
        return _with_model(model, n, e, u0, w, q, s, rate, lo, hi, common, bound_note)
    a = u0 + q
    lower_dt = optimal_interval(hi, a, w)[0]
    if n == 0:
        at = lower_dt
        return CheckpointDecision(
            interval_h=None,
            interval_lower_h=lower_dt,
            interval_upper_h=None,
            expected_ettr=None,
            expected_ettr_lower=_ettr_at(hi, a, at, w),
            expected_ettr_upper=_ettr_at(0.0, a, at, w),
            failure_rate_per_h=0.0,
            failure_rate_lower_per_h=0.0,
            failure_rate_upper_per_h=hi,
            young_interval_h=None,
            method="Kokolis et al. first-order E[ETTR], exponential failures",
            assumptions=(
                "Failures are a Poisson process (exponential times between failures).",
                *common,
                bound_note,
            ),
        )
    dt, ettr = optimal_interval(rate, a, w)
    assumptions = [
        f"Failures are a Poisson process at the measured rate: {n} in {e:g} h, "
        f"λ = {rate:.4g} per hour (MTTF {1 / rate:.4g} h).",
        *common,
        bound_note,
        "The first-order model holds while λ(u₀ + q + Δt/2) is well below 1.",
    ]
    if rate * a >= 1.0:
        assumptions.append(
            "λ(u₀ + q) >= 1: restarts and queue waits alone fill the MTTF, so the "
            "model predicts no progress at any interval (interval 0, ETTR 0)."
        )
    return CheckpointDecision(
        interval_h=dt,
        interval_lower_h=lower_dt,
        interval_upper_h=optimal_interval(lo, a, w)[0],
        expected_ettr=ettr,
        expected_ettr_lower=_ettr_at(hi, a, dt, w),
        expected_ettr_upper=_ettr_at(lo, a, dt, w),
        failure_rate_per_h=rate,
        failure_rate_lower_per_h=lo,
        failure_rate_upper_per_h=hi,
        young_interval_h=math.sqrt(2.0 * w / rate),
        method="Kokolis et al. first-order E[ETTR], exponential failures",
        assumptions=tuple(assumptions),
    )


def _scaled(model: Sequence[WeibullComponent], factor: float) -> list[WeibullComponent]:
    return [(b, eta, n * factor) for b, eta, n in model]


def _with_model(
    model: Sequence[WeibullComponent],
    n: int,
    e: float,
    u0: float,
    w: float,
    q: float,
    s: float,
    rate: float,
    lo: float,
    hi: float,
    common: list[str],
    bound_note: str,
) -> CheckpointDecision:
    if n == 0:
        msg = (
            "model is given but n_failures is 0: a fitted failure model needs "
            "failures; drop model= for the one-sided exponential statement."
        )
        raise InvalidParameterError(msg)
    model = check_components(model, "checkpoint_decision(model=)", stacklevel=4)
    base = _scaled(model, s)
    shapes = ", ".join(f"{float(c[0]):g}" for c in base)
    kw = {"cost_h": w, "restart_h": u0, "downtime_h": q}

    def optimum(components: list[WeibullComponent]) -> RenewalOptimum:
        return optimum_of(JobSurvival(components), **kw)

    best = optimum(base)
    at_hi = optimum(_scaled(base, hi / rate)).interval_h
    at_lo = optimum(_scaled(base, lo / rate)).interval_h
    dt = best.interval_h
    # a fitted model's ETTR need not be monotone in the rate (a very regular
    # Weibull can gain from a higher hazard at a fixed interval): the bounds are
    # the extremes over the rate's bounds and the estimate, so they contain it
    at_bounds = [
        ettr_of(JobSurvival(_scaled(base, r / rate)), dt, **kw) for r in (hi, lo)
    ]
    return CheckpointDecision(
        interval_h=dt,
        interval_lower_h=min(at_hi, at_lo, dt),
        interval_upper_h=max(at_hi, at_lo, dt),
        expected_ettr=best.expected_ettr,
        expected_ettr_lower=min(*at_bounds, best.expected_ettr),
        expected_ettr_upper=max(*at_bounds, best.expected_ettr),
        failure_rate_per_h=rate,
        failure_rate_lower_per_h=lo,
        failure_rate_upper_per_h=hi,
        young_interval_h=best.young_interval_h,
        method=(
            "renewal-reward, Weibull (shape 1: exponential, Daly's exact model), "
            "numeric maximiser"
            if all(float(c[0]) == 1.0 for c in base)
            else f"renewal-reward, Weibull (shape {shapes}; {len(base)} component"
            f"{'s' if len(base) > 1 else ''}), numeric maximiser"
        ),
        assumptions=(
            f"Times to interruption follow the fitted Weibull model, renewing at "
            f"each restart (MTTF {best.mttf_h:.4g} h); {n} failures in {e:g} h "
            f"give λ = {rate:.4g} per hour.",
            *common,
            "The queue wait is downtime after each interruption, when the job "
            "cannot fail.",
            bound_note,
            "The fitted shapes are taken as known; the rate bounds scale the "
            "model's hazard by λ_bound/λ.",
        ),
    )
