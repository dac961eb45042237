r"""The Kokolis et al. expected-ETTR model of a large training job (private).

Re-exported by :mod:`relkit.checkpoint`; all durations are hours.
"""

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np
import polars as pl

from relkit._checks import checked as _checked
from relkit._checks import whole_nodes as _n_nodes
from relkit.display import html_table
from relkit.errors import InvalidParameterError, RelkitWarning
from relkit.metrics import per_node_day

__all__ = [
    "ETTRModel",
    "ettr_curve",
    "ettr_model",
    "ettr_value",
    "expected_ettr",
    "optimal_interval",
]


def _rate_arg(
    failures_per_node_day: object, failures_per_1000_node_days: object, where: str
) -> float:
    """Return the node rate per node-day, given in exactly one of two units."""
    per_node_day(
        failures_per_node_day=failures_per_node_day,  # type: ignore[arg-type]
        failures_per_1000_node_days=failures_per_1000_node_days,  # type: ignore[arg-type]
        where=where,
    )
    if failures_per_node_day is not None:
        return _checked(
            failures_per_node_day,
            "failures_per_node_day",
            strict=False,
            unit="per node-day",
        )
    per_1000 = _checked(
        failures_per_1000_node_days,
        "failures_per_1000_node_days",
        strict=False,
        unit="per 1000 node-days",
    )
    return per_1000 / 1000.0


def _ettr_args(
    n_nodes: object,
    failures_per_node_day: object,
    restart_h: object,
    cost_h: object,
    queue_h: object = 0.0,
    *,
    positive_rate: bool,
) -> tuple[float, float, float]:
    """Return (λ per hour, u₀ + q in hours, w in hours) after checking them."""
    n = _n_nodes(n_nodes)
    rate = _checked(
        failures_per_node_day,
        "failures_per_node_day",
        strict=False,
        unit="per node-day",
    )
    if positive_rate and rate == 0.0:
        msg = (
            "failures_per_node_day must be > 0 here: with no failures the MTTF is "
            "infinite and ETTR = 1/(1 + w/Δt) has no optimum interval; got 0."
        )
        raise InvalidParameterError(msg)
    u0 = _checked(restart_h, "restart_h", strict=False)
    w = _checked(cost_h, "cost_h", strict=False)
    q = _checked(queue_h, "queue_h", strict=False)
    lam = n * rate / 24.0
    if positive_rate and not (lam > 0.0 and math.isfinite(1.0 / lam)):
        msg = (
            f"failures_per_node_day={failures_per_node_day!r} on {n} node(s) gives "
            "a job MTTF too long to represent as a float; use a larger rate."
        )
        raise InvalidParameterError(msg)
    return lam, u0 + q, w


def ettr_value(
    lam: float, per_failure_h: float, dt: float, w: float, *, lost_factor: float = 1.0
) -> float:
    """Return the first-order E[ETTR], clipped to [0, 1].

    ``(1 − λ(a + m·Δt/2)) / (1 + w/Δt)`` with a = u₀ + q hours paid per
    failure and m the work lost per failure in half-intervals (1 for one
    level; with m = 1.0 the value is bit for bit the one-level model).
    """
    value = (1.0 - lam * (per_failure_h + dt / 2.0 * lost_factor)) / (1.0 + w / dt)
    return 0.0 if math.isnan(value) or value <= 0.0 else min(1.0, value)


def optimal_interval(
    lam: float, per_failure_h: float, w: float, *, lost_factor: float = 1.0
) -> tuple[float, float]:
    """Return (Δt*, E[ETTR] at Δt*) of :func:`ettr_value`, hours.

    Δt* = √(w² + 2w(1 − λa)/(λm)) − w, its exact maximiser; (0, 0) when
    λa >= 1 and (0, 1 − λa) when w = 0 (the limit Δt → 0).
    """
    head = 1.0 - lam * per_failure_h
    if head <= 0.0:
        return 0.0, 0.0
    if w == 0.0:
        return 0.0, head
    # sqrt(w^2 + a) - w with a = 2 w head / (lam m), rationalised against
    # cancellation; m = 1.0 leaves lam * m == lam exactly
    lam_m = lam * lost_factor
    a = 2.0 * w * head / lam_m
    if a > 0.0:
        dt = a / (math.sqrt(w * w + a) + w)
    else:  # 2 w head / lam underflowed (w near the smallest float): dt ~ sqrt(a)
        dt = math.sqrt(2.0 * w) * math.sqrt(head / lam_m)
    if not (math.isfinite(dt) and dt > 0.0):
        msg = (
            f"the optimal interval is out of floating-point range (w={w!r} h, "
            f"MTTF={1.0 / lam!r} h); check the units of cost_h and the rate."
        )
        raise InvalidParameterError(msg)
    return dt, ettr_value(lam, per_failure_h, dt, w, lost_factor=lost_factor)


def expected_ettr(
    *,
    n_nodes: int,
    failures_per_node_day: float | None = None,
    failures_per_1000_node_days: float | None = None,
    restart_h: float,
    interval_h: float,
    cost_h: float = 0.0,
    queue_h: float = 0.0,
) -> float:
    r"""Compute the expected ETTR of a job (Kokolis et al. first-order model).

    Parameters
    ----------
    n_nodes : int
        Nodes N the job spans, >= 1.
    failures_per_node_day : float, optional
        Failure rate r_f per node-day, >= 0.
    failures_per_1000_node_days : float, optional
        The same rate per 1000 node-days (as :func:`relkit.metrics.mtbf` and
        Kokolis et al. print it); give exactly one of the two.
    restart_h : float
        Restart overhead u₀ after each failure in hours, >= 0.
    interval_h : float
        Checkpoint interval Δt in hours, > 0.
    cost_h : float, default 0.0
        Blocking checkpoint write w in hours, >= 0.
    queue_h : float, default 0.0
        Queue wait q in hours, >= 0: how long each interruption waits in the
        queue before the next attempt starts, paid per failure like u₀.

    Returns
    -------
    float
        Expected ETTR in [0, 1]: productive training time over wall time.

    Raises
    ------
    InvalidParameterError
        If ``n_nodes`` is not a whole number >= 1, both or neither of the
        two rates is given, or a rate or duration is not finite or out of
        range.

    Notes
    -----
    With :math:`\lambda = N r_f / 24` failures per hour,

    .. math::

        E[\mathrm{ETTR}] \approx
        \frac{1 - \lambda\,(u_0 + q + \Delta t/2)}{1 + w/\Delta t}

    assuming Poisson failures and that each failure loses half an interval of
    work plus u₀ and the queue wait q (the ETTR of Kokolis et al. divides by
    the run's wall time, queue waits between attempts included; with q = 0
    this is their model exactly). This first-order model breaks down when
    :math:`\lambda(u_0 + q + \Delta t/2) \ge 1` (failures as frequent as
    the restart-plus-rework they cause); the value is then clipped at 0
    instead of going negative.

    References
    ----------
    .. [1] A. Kokolis et al., HPCA 2025. arXiv:2410.21680

    Examples
    --------
    16,000 GPUs (2,000 nodes) on RSC-1, checkpointing hourly, 5 min restarts:
    the paper quotes ETTR "0.7".

    >>> round(
    ...     expected_ettr(
    ...         n_nodes=2000,
    ...         failures_per_node_day=6.5e-3,
    ...         restart_h=5 / 60,
    ...         interval_h=1.0,
    ...     ),
    ...     3,
    ... )
    0.684

    The same job waiting 10 min in the queue after each interruption:
    1 − 0.5417·(5 + 10 + 30)/60.

    >>> round(
    ...     expected_ettr(
    ...         n_nodes=2000,
    ...         failures_per_node_day=6.5e-3,
    ...         restart_h=5 / 60,
    ...         interval_h=1.0,
    ...         queue_h=10 / 60,
    ...     ),
    ...     5,
    ... )
    0.59375
    """
    lam, a, w = _ettr_args(
        n_nodes,
        _rate_arg(failures_per_node_day, failures_per_1000_node_days, "expected_ettr"),
        restart_h,
        cost_h,
        queue_h,
        positive_rate=False,
    )
    dt = _checked(interval_h, "interval_h")
    return ettr_value(lam, a, dt, w)


@dataclass(frozen=True)
class ETTRModel:
    """Expected ETTR of a job at one interval, and at the optimal interval.

    Parameters
    ----------
    mttf_h : float
        Job mean time to failure 1/λ in hours.
    ettr : float
        Expected ETTR at the given interval, in [0, 1].
    optimal_interval_h : float
        Interval Δt* maximising the expected ETTR, hours (0.0 when w = 0 or
        when the model has broken down, λ(u₀ + q) >= 1).
    ettr_at_optimal : float
        Expected ETTR at ``optimal_interval_h`` (its limit when that is 0).
    """

    mttf_h: float
    ettr: float
    optimal_interval_h: float
    ettr_at_optimal: float

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
        return html_table("Expected ETTR (Kokolis et al. model)", self.to_dict())


def ettr_model(
    *,
    n_nodes: int,
    failures_per_node_day: float | None = None,
    failures_per_1000_node_days: float | None = None,
    restart_h: float,
    interval_h: float,
    cost_h: float = 0.0,
    queue_h: float = 0.0,
) -> ETTRModel:
    r"""Compute the expected ETTR, the job MTTF and the optimal interval.

    Parameters
    ----------
    n_nodes : int
        Nodes N the job spans, >= 1.
    failures_per_node_day : float, optional
        Failure rate r_f per node-day, > 0.
    failures_per_1000_node_days : float, optional
        The same rate per 1000 node-days; give exactly one of the two.
    restart_h : float
        Restart overhead u₀ after each failure in hours, >= 0.
    interval_h : float
        Checkpoint interval Δt in hours, > 0.
    cost_h : float, default 0.0
        Blocking checkpoint write w in hours, >= 0.
    queue_h : float, default 0.0
        Queue wait q in hours, >= 0: how long each interruption waits in the
        queue before the next attempt starts, paid per failure like u₀.

    Returns
    -------
    ETTRModel
        ``mttf_h``, ``ettr`` at ``interval_h``, ``optimal_interval_h`` and
        ``ettr_at_optimal``.

    Raises
    ------
    InvalidParameterError
        As :func:`expected_ettr`, and if the rate is 0 (no finite optimum).

    Warns
    -----
    RelkitWarning
        If the model has broken down, :math:`\lambda(u_0 + q) \ge 1`: the job
        fails more often than it can restart, so every ETTR is 0 (check the
        rate's unit: per node-day, not per 1000 node-days).

    Notes
    -----
    :math:`\mathrm{MTTF} = 1/\lambda`, :math:`\lambda = N r_f/24` per hour.
    The expected ETTR of :func:`expected_ettr` is maximised at

    .. math::

        \Delta t^* = \sqrt{w^2 + 2w(1-\lambda (u_0 + q))/\lambda} - w

    (close to Young's :math:`\sqrt{2w/\lambda}`; setting the derivative of
    the expression to 0 gives a quadratic in Δt whose positive root this
    is). With w = 0 the ETTR rises as Δt → 0: ``optimal_interval_h`` is 0.0
    and ``ettr_at_optimal`` the limit :math:`1 - \lambda (u_0 + q)`. When
    :math:`\lambda (u_0 + q) \ge 1` the restarts and queue waits alone
    exceed the MTTF, the model predicts no progress at any interval, and both
    are 0.0.

    References
    ----------
    .. [1] A. Kokolis et al., HPCA 2025. arXiv:2410.21680

    Examples
    --------
    K1: 2,048 nodes, r_f = 6.5e-3, u₀ = 5 min, w = 30 s, Δt = Young's 10.40 min.

    >>> m = ettr_model(
    ...     n_nodes=2048,
    ...     failures_per_node_day=6.5e-3,
    ...     restart_h=5 / 60,
    ...     interval_h=10.4006 / 60,
    ...     cost_h=0.5 / 60,
    ... )
    >>> round(m.mttf_h, 3), round(m.ettr, 4)
    (1.803, 0.8642)
    >>> round(m.optimal_interval_h * 60, 4), round(m.ettr_at_optimal, 4)
    (9.6697, 0.8644)
    """
    lam, a, w = _ettr_args(
        n_nodes,
        _rate_arg(failures_per_node_day, failures_per_1000_node_days, "ettr_model"),
        restart_h,
        cost_h,
        queue_h,
        positive_rate=True,
    )
    dt = _checked(interval_h, "interval_h")
    best_dt, best = optimal_interval(lam, a, w)
    if lam * a >= 1.0:
        msg = (
            f"ettr_model: the job fails every {1.0 / lam:.3g} h on average but "
            f"each failure costs {a:.3g} h of restart and queue, so no interval "
            "gives any progress (ETTR = 0). Check the rate's unit: "
            "failures_per_node_day, or failures_per_1000_node_days for rates "
            "printed per 1000 node-days."
        )
        warnings.warn(msg, RelkitWarning, stacklevel=2)
    return ETTRModel(
        mttf_h=1.0 / lam,
        ettr=ettr_value(lam, a, dt, w),
        optimal_interval_h=best_dt,
        ettr_at_optimal=best,
    )


def ettr_curve(
    *,
    n_nodes: int,
    failures_per_node_day: float | None = None,
    failures_per_1000_node_days: float | None = None,
    restart_h: float,
    cost_h: float,
    queue_h: float = 0.0,
    intervals_h: Sequence[float] | np.ndarray | None = None,
) -> pl.DataFrame:
    r"""Tabulate expected ETTR against the checkpoint interval.

    Parameters
    ----------
    n_nodes : int
        Nodes N the job spans, >= 1.
    failures_per_node_day : float, optional
        Failure rate r_f per node-day, > 0 (>= 0 when ``intervals_h`` is given).
    failures_per_1000_node_days : float, optional
        The same rate per 1000 node-days; give exactly one of the two.
    restart_h : float
        Restart overhead u₀ in hours, >= 0.
    cost_h : float
        Blocking checkpoint write w in hours, >= 0.
    queue_h : float, default 0.0
        Queue wait q per interruption in hours, >= 0 (see :func:`expected_ettr`).
    intervals_h : sequence of float, optional
        Intervals Δt in hours (each > 0, at most 400). Default: 400 log-spaced
        points from min(MTTF/10⁴, Δt*/10) to 2·MTTF, which spans the optimum
        and the point where ETTR reaches 0.

    Returns
    -------
    pl.DataFrame
        Columns ``interval_h`` and ``ettr_frac`` (in [0, 1]), one row per
        interval, sorted by ``interval_h``.

    Raises
    ------
    InvalidParameterError
        As :func:`expected_ettr`; also if ``intervals_h`` has more than 400
        values or a value that is not finite and > 0.

    Notes
    -----
    Evaluates :func:`expected_ettr` pointwise (clipped at 0 where the
    first-order model breaks down).

    References
    ----------
    .. [1] A. Kokolis et al., HPCA 2025. arXiv:2410.21680

    Examples
    --------
    >>> curve = ettr_curve(
    ...     n_nodes=2048,
    ...     failures_per_node_day=6.5e-3,
    ...     restart_h=5 / 60,
    ...     cost_h=0.5 / 60,
    ... )
    >>> curve.height, round(curve["ettr_frac"].max(), 4)
    (400, 0.8644)
    """
    lam, a, w = _ettr_args(
        n_nodes,
        _rate_arg(failures_per_node_day, failures_per_1000_node_days, "ettr_curve"),
        restart_h,
        cost_h,
        queue_h,
        positive_rate=intervals_h is None,
    )
    if intervals_h is None:
        mttf = 1.0 / lam
        best_dt, _ = optimal_interval(lam, a, w)
        low = min(mttf * 1e-4, best_dt / 10.0) if best_dt > 0 else mttf * 1e-4
        grid = np.geomspace(low, 2.0 * mttf, 399)
        if best_dt > 0:
            grid = np.append(grid, best_dt)
        values = np.unique(grid)
    else:
        values = np.asarray(intervals_h, dtype=float).ravel()
        if values.size > 400:
            msg = (
                f"intervals_h has {values.size} values; at most 400 are allowed "
                "(charts take <= 5,000 rows). Thin it, e.g. np.geomspace(a, b, 200)."
            )
            raise InvalidParameterError(msg)
        bad = values[~(np.isfinite(values) & (values > 0))]
        if bad.size:
            msg = (
                f"intervals_h must be finite and > 0 (hours); found {bad[:5].tolist()}."
            )
            raise InvalidParameterError(msg)
        values = np.sort(values)
    return pl.DataFrame(
        {
            "interval_h": values,
            "ettr_frac": [ettr_value(lam, a, float(v), w) for v in values],
        },
        schema={"interval_h": pl.Float64, "ettr_frac": pl.Float64},
    )
