r"""Optimal checkpoint intervals and the expected ETTR of large training jobs.

Two closed-form models assume independent exponential (Poisson) failures:

- Young/Daly: a job of MTBF M writes a checkpoint of cost δ every τ of
  compute and restarts in R after a failure; which τ maximises useful work?
- Kokolis et al.: the expected Effective Training Time Ratio of a job on N
  nodes with per-node failure rate r_f, restart overhead u₀, queue wait q,
  checkpoint interval Δt and blocking checkpoint write w
  (:func:`expected_ettr`, :func:`ettr_model`, :func:`ettr_curve`).

Built on them:

- the decision with bounds from the failure count's uncertainty
  (:func:`checkpoint_decision`);
- two-level checkpointing, a fast level in node memory and every k-th
  checkpoint persistent (:func:`two_level_ettr`, :func:`two_level_optimum`),
  with the share of failures that keep their node from the mode mix
  (:func:`node_keeping_share`);
- fitted non-exponential (Weibull) failure models by renewal-reward
  (:func:`renewal_ettr`, :func:`renewal_optimum`);
- what-if sweeps and the inverse questions (:func:`whatif`,
  :func:`solve_whatif`).

All durations are hours, rates per hour unless named (per node-day).
"""

import math
import warnings
from dataclasses import asdict, dataclass
from typing import Literal

import polars as pl

from relkit._checks import checked as _checked
from relkit._decision import CheckpointDecision, checkpoint_decision
from relkit._ettr_model import ETTRModel, ettr_curve, ettr_model, expected_ettr
from relkit._renewal import (
    Component,
    RenewalOptimum,
    renewal_ettr,
    renewal_optimum,
)
from relkit._two_level import (
    NodeKeepingShare,
    TwoLevelPlan,
    node_keeping_share,
    two_level_ettr,
    two_level_optimum,
)
from relkit._whatif import solve_whatif, whatif
from relkit.display import html_table
from relkit.errors import InvalidParameterError, RelkitWarning, SchemaError

__all__ = [
    "CheckpointDecision",
    "CheckpointIntervals",
    "Component",
    "ETTRModel",
    "NodeKeepingShare",
    "RenewalOptimum",
    "TwoLevelPlan",
    "checkpoint_decision",
    "checkpoint_efficiency",
    "checkpoint_intervals",
    "daly_interval_h",
    "ettr_curve",
    "ettr_model",
    "exact_interval_h",
    "expected_ettr",
    "node_keeping_share",
    "plan_checkpoints",
    "renewal_ettr",
    "renewal_optimum",
    "solve_whatif",
    "two_level_ettr",
    "two_level_optimum",
    "whatif",
    "young_interval_h",
]

DalyBranch = Literal["delta<2M", "delta>=2M"]


def _warn_degenerate(d: float, m: float, where: str) -> None:
    """Warn when the checkpoint cost δ is not below the MTBF M (swapped?)."""
    if d >= m:
        msg = (
            f"{where}: cost_h = {d:g} h is not below mtbf_h = {m:g} h, so a "
            "checkpoint takes as long as the mean time between failures and the "
            "job barely progresses (the answer is degenerate). Check that "
            "cost_h and mtbf_h are not swapped and that both are in hours."
        )
        warnings.warn(msg, RelkitWarning, stacklevel=3)


def young_interval_h(*, cost_h: float, mtbf_h: float) -> float:
    r"""Compute Young's first-order optimum checkpoint interval.

    Parameters
    ----------
    cost_h : float
        Time to write one checkpoint δ in hours, > 0.
    mtbf_h : float
        MTBF M of the whole job (all its nodes) in hours, > 0.

    Returns
    -------
    float
        Compute time between checkpoints τ in hours (excluding δ).

    Raises
    ------
    InvalidParameterError
        If either argument is None, not finite or <= 0.

    Warns
    -----
    RelkitWarning
        If ``cost_h >= mtbf_h``: the answer is degenerate (efficiency near 0),
        most often because the two arguments were swapped.

    Notes
    -----
    :math:`\tau = \sqrt{2\delta M}`, valid for δ << M under exponential
    failures; it ignores the restart time and failures during checkpoints.

    References
    ----------
    .. [1] J. W. Young, CACM 17(9), 1974. doi:10.1145/361147.361115
    .. [2] J. T. Daly, FGCS 22(3), 2006. doi:10.1016/j.future.2004.11.016

    Examples
    --------
    >>> round(young_interval_h(cost_h=5 / 60, mtbf_h=24.0) * 60, 1)  # minutes
    120.0
    >>> young_interval_h(cost_h=0.0, mtbf_h=24.0)
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: cost_h must be a finite number > 0 ...
    """
    d = _checked(cost_h, "cost_h")
    m = _checked(mtbf_h, "mtbf_h")
    _warn_degenerate(d, m, "young_interval_h")
    return math.sqrt(2.0 * d * m)


def _daly_higher(d: float, m: float) -> tuple[float, DalyBranch]:
    if d >= 2.0 * m:
        return m, "delta>=2M"
    x = d / (2.0 * m)
    tau = math.sqrt(2.0 * d * m) * (1.0 + math.sqrt(x) / 3.0 + x / 9.0) - d
    return tau, "delta<2M"


def daly_interval_h(
    *,
    cost_h: float,
    mtbf_h: float,
    restart_h: float = 0.0,
    order: Literal["higher", "first"] = "higher",
) -> float:
    r"""Compute Daly's optimum checkpoint interval (higher or first order).

    Parameters
    ----------
    cost_h : float
        Time to write one checkpoint δ in hours, > 0.
    mtbf_h : float
        MTBF M of the whole job in hours, > 0.
    restart_h : float, default 0.0
        Restart time R in hours, >= 0 (used by the first-order formula only).
    order : {"higher", "first"}, default "higher"
        Which of Daly's estimates to return.

    Returns
    -------
    float
        Compute time between checkpoints τ in hours (excluding δ).

    Raises
    ------
    InvalidParameterError
        If a duration is None, not finite, or out of range, or ``order`` is
        not "higher" or "first".

    Warns
    -----
    RelkitWarning
        If ``cost_h >= mtbf_h``: the answer is degenerate (efficiency near 0),
        most often because the two arguments were swapped.

    Notes
    -----
    First order: :math:`\tau = \sqrt{2\delta(M+R)}`. Higher order, for
    :math:`\delta < 2M`:

    .. math::

        \tau = \sqrt{2\delta M}\left[1 + \tfrac13\sqrt{\tfrac{\delta}{2M}}
        + \tfrac19\tfrac{\delta}{2M}\right] - \delta

    and :math:`\tau = M` for :math:`\delta \ge 2M` (checkpointing barely
    helps there; :func:`checkpoint_intervals` reports the branch). Both assume
    exponential failures; the higher-order estimate matches the exact optimum
    (:func:`exact_interval_h`) to third order in :math:`\sqrt{\delta/M}`.

    References
    ----------
    .. [1] J. W. Young, CACM 17(9), 1974. doi:10.1145/361147.361115
    .. [2] J. T. Daly, FGCS 22(3), 2006. doi:10.1016/j.future.2004.11.016

    Examples
    --------
    Daly 2006, Fig. 3 (M = 24 h, δ = 5 min, R = 10 min): τ ≈ 117 min.

    >>> round(daly_interval_h(cost_h=5 / 60, mtbf_h=24.0) * 60, 1)
    116.7
    >>> first = daly_interval_h(
    ...     cost_h=5 / 60, mtbf_h=24.0, restart_h=10 / 60, order="first"
    ... )
    >>> round(first * 60, 1)
    120.4
    """
    d = _checked(cost_h, "cost_h")
    m = _checked(mtbf_h, "mtbf_h")
    _warn_degenerate(d, m, "daly_interval_h")
    r = _checked(restart_h, "restart_h", strict=False)
    if order == "first":
        return math.sqrt(2.0 * d * (m + r))
    if order == "higher":
        return _daly_higher(d, m)[0]
    msg = f"order must be 'higher' or 'first'; got {order!r}."
    raise InvalidParameterError(msg)


def _exact(d: float, m: float) -> float:
    from scipy.special import lambertw

    x = d / m
    if x < 1e-5:
        # Series of 1 + W0(-exp(-1 - x)) at the branch point, s = sqrt(2x);
        # lambertw loses digits there (its argument is within x/e of -1/e).
        # m * s = sqrt(2 d m), formed without the underflow of d / m.
        s = math.sqrt(2.0 * x)
        root = math.sqrt(2.0 * d) * math.sqrt(m)
        return root * (1.0 - s / 3.0 + s**2 / 36.0 + s**3 / 270.0)
    w = lambertw(-math.exp(-(1.0 + x)), 0)
    return m * (1.0 + float(w.real))


def exact_interval_h(*, cost_h: float, mtbf_h: float) -> float:
    r"""Compute the exact optimum checkpoint interval under exponential failures.

    Parameters
    ----------
    cost_h : float
        Time to write one checkpoint δ in hours, > 0.
    mtbf_h : float
        MTBF M of the whole job in hours, > 0.

    Returns
    -------
    float
        The τ in hours that maximises :func:`checkpoint_efficiency`; always
        below M.

    Raises
    ------
    InvalidParameterError
        If either argument is None, not finite or <= 0.

    Warns
    -----
    RelkitWarning
        If ``cost_h >= mtbf_h``: the answer is degenerate (efficiency near 0),
        most often because the two arguments were swapped.

    Notes
    -----
    Setting :math:`d\eta/d\tau = 0` in Daly's efficiency gives
    :math:`e^{(\tau+\delta)/M}(1-\tau/M) = 1`, whose root in (0, M) is

    .. math::

        \tau^* = M\left[1 + W_0\!\left(-e^{-(1+\delta/M)}\right)\right]

    with :math:`W_0` the principal branch of Lambert W
    (``scipy.special.lambertw``). It does not depend on R. For δ/M < 1e-5 the
    series :math:`M(s - s^2/3 + s^3/36 + s^4/270)`, :math:`s=\sqrt{2\delta/M}`,
    is used instead, where Lambert W loses precision.

    References
    ----------
    .. [1] J. W. Young, CACM 17(9), 1974. doi:10.1145/361147.361115
    .. [2] J. T. Daly, FGCS 22(3), 2006. doi:10.1016/j.future.2004.11.016

    Examples
    --------
    >>> round(exact_interval_h(cost_h=5 / 60, mtbf_h=24.0) * 60, 4)  # Daly Fig. 3, min
    116.6901
    """
    d = _checked(cost_h, "cost_h")
    m = _checked(mtbf_h, "mtbf_h")
    _warn_degenerate(d, m, "exact_interval_h")
    return _exact(d, m)


def _efficiency(tau: float, d: float, m: float, r: float) -> float:
    z = (tau + d) / m
    log_expm1 = z + math.log1p(-math.exp(-z)) if z > 30.0 else math.log(math.expm1(z))
    eta = math.exp(math.log(tau) - r / m - math.log(m) - log_expm1)
    return min(1.0, eta)


def checkpoint_efficiency(
    interval_h: float, *, cost_h: float, mtbf_h: float, restart_h: float = 0.0
) -> float:
    r"""Compute the expected useful fraction of wall time for a checkpoint interval.

    Parameters
    ----------
    interval_h : float
        Compute time between checkpoints τ in hours, > 0.
    cost_h : float
        Time to write one checkpoint δ in hours, > 0.
    mtbf_h : float
        MTBF M of the whole job in hours, > 0.
    restart_h : float, default 0.0
        Restart time R after each failure in hours, >= 0.

    Returns
    -------
    float
        Efficiency η in [0, 1]: solve time divided by expected wall time.

    Raises
    ------
    InvalidParameterError
        If a duration is None, not finite or out of range.

    Warns
    -----
    RelkitWarning
        If ``cost_h >= mtbf_h``: the answer is degenerate (efficiency near 0),
        most often because the two arguments were swapped.

    Notes
    -----
    Daly's expected wall time under exponential failures gives

    .. math::

        \eta(\tau) = \frac{\tau\, e^{-R/M}}{M\left(e^{(\tau+\delta)/M} - 1\right)}

    computed in log space, so large :math:`(\tau+\delta)/M` underflows to 0
    rather than overflowing.

    References
    ----------
    .. [1] J. W. Young, CACM 17(9), 1974. doi:10.1145/361147.361115
    .. [2] J. T. Daly, FGCS 22(3), 2006. doi:10.1016/j.future.2004.11.016

    Examples
    --------
    >>> eta = checkpoint_efficiency(
    ...     116.6901 / 60, cost_h=5 / 60, mtbf_h=24.0, restart_h=10 / 60
    ... )
    >>> round(eta, 6)
    0.912606
    """
    tau = _checked(interval_h, "interval_h")
    d = _checked(cost_h, "cost_h")
    m = _checked(mtbf_h, "mtbf_h")
    _warn_degenerate(d, m, "checkpoint_efficiency")
    r = _checked(restart_h, "restart_h", strict=False)
    return _efficiency(tau, d, m, r)


@dataclass(frozen=True)
class CheckpointIntervals:
    r"""Optimum checkpoint intervals of one job by each rule, in hours.

    Parameters
    ----------
    young_h : float
        Young's :math:`\sqrt{2\delta M}`.
    daly_first_order_h : float
        Daly's first order :math:`\sqrt{2\delta(M+R)}`.
    daly_h : float
        Daly's higher-order estimate.
    daly_branch : {"delta<2M", "delta>=2M"}
        Which case of Daly's higher-order formula applied (τ = M in the second).
    exact_h : float
        Exact maximiser of the efficiency under exponential failures.
    efficiency_at_exact : float
        Efficiency η at ``exact_h``, in [0, 1].
    """

    young_h: float
    daly_first_order_h: float
    daly_h: float
    daly_branch: DalyBranch
    exact_h: float
    efficiency_at_exact: float

    def to_dict(self) -> dict[str, float | str]:
        """Return the fields as a plain dict.

        Returns
        -------
        dict
            Field name to value.
        """
        return asdict(self)

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("Optimum checkpoint intervals (hours)", self.to_dict())


def checkpoint_intervals(
    *, cost_h: float, mtbf_h: float, restart_h: float = 0.0
) -> CheckpointIntervals:
    r"""Compute the optimum checkpoint interval by every rule at once.

    Parameters
    ----------
    cost_h : float
        Time to write one checkpoint δ in hours, > 0.
    mtbf_h : float
        MTBF M of the whole job in hours, > 0.
    restart_h : float, default 0.0
        Restart time R in hours, >= 0.

    Returns
    -------
    CheckpointIntervals
        Young, Daly first and higher order (with its branch), the exact
        optimum and the efficiency there.

    Raises
    ------
    InvalidParameterError
        If a duration is None, not finite or out of range.

    Warns
    -----
    RelkitWarning
        If ``cost_h >= mtbf_h``: the answer is degenerate (efficiency near 0),
        most often because the two arguments were swapped.

    Notes
    -----
    See :func:`young_interval_h`, :func:`daly_interval_h`,
    :func:`exact_interval_h` and :func:`checkpoint_efficiency`.

    References
    ----------
    .. [1] J. W. Young, CACM 17(9), 1974. doi:10.1145/361147.361115
    .. [2] J. T. Daly, FGCS 22(3), 2006. doi:10.1016/j.future.2004.11.016

    Examples
    --------
    Daly 2006, Fig. 5 (δ = 5 min, M = 15 min, R = 10 min), in minutes:

    >>> ci = checkpoint_intervals(cost_h=5 / 60, mtbf_h=15 / 60, restart_h=10 / 60)
    >>> {k: round(v * 60, 4) for k, v in ci.to_dict().items() if k.endswith("_h")}
    ... # doctest: +NORMALIZE_WHITESPACE
    {'young_h': 12.2474, 'daly_first_order_h': 15.8114,
     'daly_h': 9.1409, 'exact_h': 9.1665}
    >>> ci.daly_branch, round(ci.efficiency_at_exact, 6)
    ('delta<2M', 0.199668)
    """
    d = _checked(cost_h, "cost_h")
    m = _checked(mtbf_h, "mtbf_h")
    _warn_degenerate(d, m, "checkpoint_intervals")
    r = _checked(restart_h, "restart_h", strict=False)
    daly, branch = _daly_higher(d, m)
    exact = _exact(d, m)
    return CheckpointIntervals(
        young_h=math.sqrt(2.0 * d * m),
        daly_first_order_h=math.sqrt(2.0 * d * (m + r)),
        daly_h=daly,
        daly_branch=branch,
        exact_h=exact,
        efficiency_at_exact=_efficiency(exact, d, m, r),
    )


def plan_checkpoints(
    mtbf_frame: pl.DataFrame, *, cost_h: float, restart_h: float
) -> pl.DataFrame:
    r"""Compute checkpoint intervals for each row of an MTBF table.

    Parameters
    ----------
    mtbf_frame : pl.DataFrame
        Output of :func:`relkit.metrics.mtbf` (or any frame with a float
        ``mtbf_h`` column, hours). Each row's MTBF is taken as that of a job
        spanning the whole group (e.g. a whole system).
    cost_h : float
        Time to write one checkpoint δ in hours, > 0.
    restart_h : float
        Restart time R in hours, >= 0.

    Returns
    -------
    pl.DataFrame
        One row per input row, same order: the group columns (every input
        column except the metric columns of :func:`relkit.metrics.mtbf`),
        ``mtbf_h``, ``young_h``, ``daly_h``, ``daly_branch``, ``exact_h``,
        ``efficiency_at_exact``, ``cost_h``, ``restart_h``. Rows with a null
        or non-positive ``mtbf_h`` (no failure seen) get null intervals.

    Raises
    ------
    SchemaError
        If ``mtbf_frame`` has no ``mtbf_h`` column.
    InvalidParameterError
        If ``cost_h`` or ``restart_h`` is out of range.

    Warns
    -----
    RelkitWarning
        Once, if some row has ``mtbf_h <= cost_h``: its intervals are
        degenerate (efficiency near 0).

    Notes
    -----
    Applies :func:`checkpoint_intervals` row by row; ``daly_h`` is Daly's
    higher-order estimate. With zero failures there is no MTBF to plan with;
    substitute ``mtbf_lower_one_sided_h`` for a conservative plan.

    References
    ----------
    .. [1] J. W. Young, CACM 17(9), 1974. doi:10.1145/361147.361115
    .. [2] J. T. Daly, FGCS 22(3), 2006. doi:10.1016/j.future.2004.11.016

    Examples
    --------
    >>> import polars as pl
    >>> f = pl.DataFrame({"system": ["a", "b"], "mtbf_h": [24.0, None]})
    >>> out = plan_checkpoints(f, cost_h=5 / 60, restart_h=10 / 60)
    >>> out.select("system", "daly_h", "daly_branch").to_dicts()
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'system': 'a', 'daly_h': 1.94483..., 'daly_branch': 'delta<2M'},
     {'system': 'b', 'daly_h': None, 'daly_branch': None}]
    """
    from relkit.metrics import MTBF_COLUMNS

    d = _checked(cost_h, "cost_h")
    r = _checked(restart_h, "restart_h", strict=False)
    if "mtbf_h" not in mtbf_frame.columns:
        msg = (
            f"plan_checkpoints: mtbf_frame lacks 'mtbf_h'; it has "
            f"{mtbf_frame.columns}. Build it with relkit.metrics.mtbf(...)."
        )
        raise SchemaError(msg)
    groups = [c for c in mtbf_frame.columns if c not in MTBF_COLUMNS]
    rows: dict[str, list[float | str | None]] = {
        k: []
        for k in ("young_h", "daly_h", "daly_branch", "exact_h", "efficiency_at_exact")
    }
    degenerate: list[float] = []
    for m in mtbf_frame["mtbf_h"].cast(pl.Float64).to_list():
        if m is None or not math.isfinite(m) or m <= 0:
            for values in rows.values():
                values.append(None)
            continue
        with warnings.catch_warnings(record=True) as seen:
            warnings.simplefilter("always", RelkitWarning)
            ci = checkpoint_intervals(cost_h=d, mtbf_h=m, restart_h=r)
        if seen:
            degenerate.append(m)
        for k, values in rows.items():
            values.append(getattr(ci, k))
    if degenerate:
        msg = (
            f"plan_checkpoints: {len(degenerate)} row(s) have mtbf_h <= cost_h = "
            f"{d:g} h (e.g. mtbf_h = {degenerate[:5]}); their intervals are "
            "degenerate (the job barely progresses between failures)."
        )
        warnings.warn(msg, RelkitWarning, stacklevel=2)
    extra = pl.DataFrame(
        rows,
        schema={
            "young_h": pl.Float64,
            "daly_h": pl.Float64,
            "daly_branch": pl.String,
            "exact_h": pl.Float64,
            "efficiency_at_exact": pl.Float64,
        },
    )
    return pl.concat(
        [
            mtbf_frame.select(*groups, pl.col("mtbf_h").cast(pl.Float64)),
            extra,
        ],
        how="horizontal",
    ).with_columns(cost_h=pl.lit(d), restart_h=pl.lit(r))
