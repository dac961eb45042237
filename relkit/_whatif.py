r"""What-if sweeps of the expected ETTR, and the inverse questions (private).

Re-exported by :mod:`relkit.checkpoint`; all durations are hours.
"""

import itertools
import math
from collections.abc import Sequence
from typing import Literal

import polars as pl

from relkit._checks import checked as _checked
from relkit._checks import whole as _whole
from relkit._ettr_model import ettr_value, optimal_interval
from relkit.errors import InvalidParameterError

__all__ = ["MAX_WHATIF_ROWS", "solve_whatif", "whatif"]

#: Most rows :func:`whatif` builds (the product of the sequences given).
MAX_WHATIF_ROWS = 100_000

Solve = Literal["failure-rate", "restart-h", "cost-h"]

_SCHEMA = {
    "gpus": pl.Int64,
    "n_nodes": pl.Int64,
    "failures_per_node_day": pl.Float64,
    "restart_h": pl.Float64,
    "cost_h": pl.Float64,
    "queue_h": pl.Float64,
    "interval_h": pl.Float64,
    "mttf_h": pl.Float64,
    "expected_ettr": pl.Float64,
    "interval_rule": pl.String,
    "first_order_load": pl.Float64,
}


def _many(value: object) -> list[object]:
    if isinstance(value, str | bytes) or not isinstance(value, Sequence):
        return [value]
    values = list(value)
    if not values:
        msg = "an empty sequence was given; give at least one value."
        raise InvalidParameterError(msg)
    return values


def _nodes(gpus: int, gpus_per_node: int) -> int:
    return -(-gpus // gpus_per_node)


def whatif(
    *,
    gpus: int | Sequence[int],
    failures_per_node_day: float | Sequence[float],
    restart_h: float | Sequence[float],
    cost_h: float | Sequence[float],
    interval_h: float | Sequence[float | None] | None = None,
    queue_h: float | Sequence[float] = 0.0,
    gpus_per_node: int = 8,
) -> pl.DataFrame:
    r"""Tabulate the expected ETTR over every combination of job parameters.

    Parameters
    ----------
    gpus : int or sequence of int
        Job sizes in GPUs, each >= 1 (131,072 and beyond are fine).
    failures_per_node_day : float or sequence of float
        Node failure rates r_f per node-day, each >= 0 (> 0 where the interval
        is the optimal one).
    restart_h : float or sequence of float
        Restart overheads u₀ in hours, each >= 0.
    cost_h : float or sequence of float
        Blocking checkpoint writes w in hours, each >= 0.
    interval_h : float, sequence of float or None, default None
        Checkpoint intervals Δt in hours, each > 0; None (alone or in the
        sequence) means the optimal interval of each combination.
    queue_h : float or sequence of float, default 0.0
        Queue waits q per interruption in hours, each >= 0.
    gpus_per_node : int, default 8
        GPUs per node; N_nodes = ceil(gpus / gpus_per_node).

    Returns
    -------
    pl.DataFrame
        One row per combination, in the order of the product of ``gpus``,
        ``failures_per_node_day``, ``restart_h``, ``cost_h``, ``queue_h``,
        ``interval_h`` (the last varying fastest): ``gpus``, ``n_nodes``,
        ``failures_per_node_day``, ``restart_h``, ``cost_h``, ``queue_h``,
        ``interval_h`` (hours; 0.0 for the optimum when w = 0 or the model
        has broken down), ``mttf_h`` (null at rate 0), ``expected_ettr`` (in
        [0, 1]), ``interval_rule`` ("optimal" or "given") and
        ``first_order_load`` = λ(u₀ + q + Δt/2), the share of each MTTF the
        first-order model charges to a failure: the model is accurate while
        it is well below 1 (its error grows with it; above about 0.1 prefer
        the exact exponential :func:`relkit.checkpoint.exact_interval_h` or
        :func:`relkit.checkpoint.renewal_optimum`), and at 1 or above it
        predicts no progress.

    Raises
    ------
    InvalidParameterError
        If a value is out of range, a sequence is empty, the product has more
        than :data:`MAX_WHATIF_ROWS` rows, or a rate is 0 where the optimal
        interval is asked for.

    Notes
    -----
    Kokolis et al.: :math:`\mathrm{MTTF}(N) = 24/(N_\mathrm{nodes} r_f)`
    hours, :math:`\lambda = 1/\mathrm{MTTF}`, and

    .. math::

        E[\mathrm{ETTR}] \approx
        \frac{1 - \lambda(u_0 + q + \Delta t/2)}{1 + w/\Delta t},
        \qquad
        \Delta t^* = \sqrt{w^2 + 2w(1-\lambda(u_0+q))/\lambda} - w

    (:func:`relkit.checkpoint.expected_ettr`,
    :func:`relkit.checkpoint.ettr_model`).

    References
    ----------
    .. [1] A. Kokolis et al., "Revisiting reliability in large-scale machine
       learning research clusters", HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096

    Examples
    --------
    RSC-1's rate (6.5 per 1000 node-days), 5 min restarts, 30 s writes:

    >>> out = whatif(
    ...     gpus=[16384, 131072],
    ...     failures_per_node_day=6.5e-3,
    ...     restart_h=5 / 60,
    ...     cost_h=0.5 / 60,
    ... )
    >>> out.select("gpus", "mttf_h", "expected_ettr").rows()
    ... # doctest: +NORMALIZE_WHITESPACE
    [(16384, 1.80288..., 0.86438...), (131072, 0.22536..., 0.44816...)]
    """
    sizes = [_whole(g, "gpus", what=" (GPUs in the job)") for g in _many(gpus)]
    gpn = _whole(gpus_per_node, "gpus_per_node")
    rates = [
        _checked(r, "failures_per_node_day", strict=False, unit="per node-day")
        for r in _many(failures_per_node_day)
    ]
    restarts = [_checked(u, "restart_h", strict=False) for u in _many(restart_h)]
    costs = [_checked(w, "cost_h", strict=False) for w in _many(cost_h)]
    queues = [_checked(q, "queue_h", strict=False) for q in _many(queue_h)]
    intervals: list[float | None] = [
        None if dt is None else _checked(dt, "interval_h") for dt in _many(interval_h)
    ]
    n_rows = math.prod(
        len(v) for v in (sizes, rates, restarts, costs, queues, intervals)
    )
    if n_rows > MAX_WHATIF_ROWS:
        msg = (
            f"whatif: the combinations make {n_rows:,} rows; at most "
            f"{MAX_WHATIF_ROWS:,} are allowed. Give fewer values per sequence, "
            "or call whatif once per slice."
        )
        raise InvalidParameterError(msg)
    rows = []
    for g, r, u0, w, q, dt in itertools.product(
        sizes, rates, restarts, costs, queues, intervals
    ):
        n = _nodes(g, gpn)
        lam = n * r / 24.0
        if dt is None:
            if lam == 0.0:
                msg = (
                    "whatif: failures_per_node_day is 0 in a row asking for the "
                    "optimal interval; with no failures there is no optimum "
                    "(ETTR rises towards 1 as checkpoints get rarer). Give "
                    "interval_h, or a rate > 0."
                )
                raise InvalidParameterError(msg)
            best_dt, ettr = optimal_interval(lam, u0 + q, w)
            load = lam * (u0 + q + best_dt / 2.0)
            rows.append((g, n, r, u0, w, q, best_dt, 1 / lam, ettr, "optimal", load))
        else:
            mttf = None if lam == 0.0 else 1 / lam
            ettr = ettr_value(lam, u0 + q, dt, w)
            load = lam * (u0 + q + dt / 2.0)
            rows.append((g, n, r, u0, w, q, dt, mttf, ettr, "given", load))
    return pl.DataFrame(rows, schema=_SCHEMA, orient="row")


def _best(lam: float, per_failure_h: float, w: float) -> float:
    return optimal_interval(lam, per_failure_h, w)[1]


def solve_whatif(
    *,
    target_ettr: float,
    solve: Solve,
    gpus: int,
    failures_per_node_day: float | None = None,
    restart_h: float | None = None,
    cost_h: float | None = None,
    queue_h: float = 0.0,
    gpus_per_node: int = 8,
) -> float:
    r"""Find the rate, restart or write time at which the best ETTR hits a target.

    Parameters
    ----------
    target_ettr : float
        Target expected ETTR at the optimal interval, strictly between 0 and 1.
    solve : {"failure-rate", "restart-h", "cost-h"}
        What to solve for; leave that argument out (None), give the others.
    gpus : int
        Job size in GPUs, >= 1.
    failures_per_node_day : float, optional
        Node failure rate r_f per node-day (> 0), unless solved for.
    restart_h : float, optional
        Restart overhead u₀ in hours (>= 0), unless solved for.
    cost_h : float, optional
        Blocking checkpoint write w in hours (>= 0), unless solved for.
    queue_h : float, default 0.0
        Queue wait q per interruption in hours, >= 0.
    gpus_per_node : int, default 8
        GPUs per node; N_nodes = ceil(gpus / gpus_per_node).

    Returns
    -------
    float
        The largest failure rate (per node-day), restart overhead (hours) or
        checkpoint write (hours) with which the ETTR at the optimal interval
        is the target; every smaller value does better.

    Raises
    ------
    InvalidParameterError
        If ``solve`` is unknown, the solved argument is given or another is
        missing or out of range, the target is not in (0, 1), or no value
        reaches the target (the message says what makes it unreachable).

    Notes
    -----
    :math:`E^* = \max_{\Delta t} E[\mathrm{ETTR}]` of Kokolis et al.'s
    first-order model (:func:`relkit.checkpoint.ettr_model`) falls strictly
    as λ, u₀ or w grows, so the root of :math:`E^* = T` is unique, and
    ``scipy.optimize.brentq`` finds it inside a bracket where the sign is
    known from two bounds, with :math:`a = u_0 + q`:

    - :math:`E^* \ge 1 - \lambda a - \sqrt{2\lambda w}` (the value at Young's
      :math:`\Delta t = \sqrt{2w/\lambda}`, as
      :math:`(A - s)/(1 + s) \ge A - 2s`);
    - :math:`E^* \le T` once :math:`\lambda a \ge 1 - T` or
      :math:`\lambda w \ge 2(1-T)^2/T` (an interval with
      :math:`\lambda\Delta t/2 < 1 - T` spends at least
      :math:`w/(\Delta t + w)` writing).

    So the rate lies between a quarter of the λ solving
    :math:`\lambda a + \sqrt{2\lambda w} = 1 - T` and twice the smaller of
    :math:`(1-T)/a` and :math:`2(1-T)^2/(wT)`; u₀ between 0 and
    :math:`1/\lambda - q` (where E* = 0); w between 0 and
    :math:`4(1-T)^2/(\lambda T)`. No answer exists when the ETTR at the
    bracket's good end (no failures, no restart, no write) is already at or
    below the target.

    References
    ----------
    .. [1] A. Kokolis et al., HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096

    Examples
    --------
    100,000 GPUs, 5 min restarts, 1 min writes, target ETTR 0.9:

    >>> r = solve_whatif(
    ...     target_ettr=0.9,
    ...     solve="failure-rate",
    ...     gpus=100_000,
    ...     restart_h=5 / 60,
    ...     cost_h=1 / 60,
    ... )
    >>> round(r * 1000, 4)  # failures per 1000 node-days
    0.4255
    """
    from scipy.optimize import brentq

    if solve not in ("failure-rate", "restart-h", "cost-h"):
        msg = f"solve must be 'failure-rate', 'restart-h' or 'cost-h'; got {solve!r}."
        raise InvalidParameterError(msg)
    t = target_ettr
    if isinstance(t, bool) or not isinstance(t, int | float) or not 0.0 < t < 1.0:
        msg = (
            f"target_ettr must be strictly between 0 and 1; got {target_ettr!r}. "
            "An ETTR of 1 needs no failures or failures that cost nothing."
        )
        raise InvalidParameterError(msg)
    t = float(t)
    n = _nodes(
        _whole(gpus, "gpus", what=" (GPUs in the job)"),
        _whole(gpus_per_node, "gpus_per_node"),
    )
    q = _checked(queue_h, "queue_h", strict=False)
    given = {
        "failure-rate": ("failures_per_node_day", failures_per_node_day),
        "restart-h": ("restart_h", restart_h),
        "cost-h": ("cost_h", cost_h),
    }
    name, value = given[solve]
    if value is not None:
        msg = f"solve={solve!r} finds {name}; leave it out (got {name}={value!r})."
        raise InvalidParameterError(msg)
    missing = [k for s, (k, v) in given.items() if s != solve and v is None]
    if missing:
        msg = f"solve={solve!r} needs {missing} given."
        raise InvalidParameterError(msg)
    if solve == "failure-rate":
        u0 = _checked(restart_h, "restart_h", strict=False)
        w = _checked(cost_h, "cost_h", strict=False)
        return _solve_rate(t, n, u0 + q, w)
    rate = _checked(failures_per_node_day, "failures_per_node_day", unit="per node-day")
    lam = n * rate / 24.0
    if solve == "restart-h":
        w = _checked(cost_h, "cost_h", strict=False)
        top = _best(lam, q, w)
        if top <= t:
            msg = (
                f"no restart overhead reaches ETTR {t:g}: even with u₀ = 0 the "
                f"failures ({rate:g} per node-day on {n} nodes, MTTF "
                f"{1 / lam:.4g} h) with a {w:g} h write and {q:g} h queue wait "
                f"give at most {top:.6g}. Lower the rate or the write time."
            )
            raise InvalidParameterError(msg)
        hi = 1.0 / lam - q  # E* = 0 there
        return float(
            brentq(lambda u: _best(lam, u + q, w) - t, 0.0, hi, xtol=1e-15 * hi)
        )
    u0 = _checked(restart_h, "restart_h", strict=False)
    top = 1.0 - lam * (u0 + q)  # E* as w -> 0
    if top <= t:
        msg = (
            f"no checkpoint write time reaches ETTR {t:g}: the restarts and queue "
            f"waits alone (λ(u₀ + q) = {lam * (u0 + q):.4g} of the time, MTTF "
            f"{1 / lam:.4g} h) leave at most {max(top, 0.0):.6g}. Shorten the "
            "restart or lower the rate."
        )
        raise InvalidParameterError(msg)
    hi = 4.0 * (1.0 - t) ** 2 / (lam * t)
    return float(brentq(lambda w: _best(lam, u0 + q, w) - t, 0.0, hi, xtol=1e-15 * hi))


def _solve_rate(t: float, n: int, a: float, w: float) -> float:
    from scipy.optimize import brentq

    if a == 0.0 and w == 0.0:
        msg = (
            "no failure rate reaches the target: with no restart overhead, queue "
            "wait or checkpoint write, failures cost nothing in this model "
            "(ETTR 1 at any rate). Give restart_h or cost_h > 0."
        )
        raise InvalidParameterError(msg)
    # E* >= 1 - lam a - sqrt(2 lam w): its root in x = sqrt(lam), rationalised
    x0 = (
        2.0
        * (1.0 - t)
        / (math.sqrt(2.0 * w) + math.sqrt(2.0 * w + 4.0 * a * (1.0 - t)))
    )
    lam_lo = x0 * x0 / 4.0
    caps = []
    if a > 0.0:
        caps.append((1.0 - t) / a)
    if w > 0.0:
        caps.append(2.0 * (1.0 - t) ** 2 / (w * t))
    lam_hi = 2.0 * min(caps)
    lam = brentq(
        lambda x: _best(x, a, w) - t, lam_lo, lam_hi, xtol=1e-15 * lam_lo, rtol=1e-15
    )
    return float(lam) * 24.0 / n
