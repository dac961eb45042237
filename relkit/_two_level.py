r"""Two-level checkpointing: a fast level in node memory, every k-th persistent.

Re-exported by :mod:`relkit.checkpoint`; all durations are hours.
"""

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass

import polars as pl

from relkit._checks import checked as _checked
from relkit._checks import fraction as _fraction
from relkit._checks import whole as _whole
from relkit._checks import whole_nodes as _n_nodes
from relkit._ettr_model import ettr_value, optimal_interval
from relkit.display import html_table
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.schema import require_columns

__all__ = [
    "NodeKeepingShare",
    "TwoLevelPlan",
    "node_keeping_share",
    "two_level_ettr",
    "two_level_optimum",
]

#: Largest k :func:`two_level_optimum` searches by default.
MAX_PERSISTENT_EVERY = 1000


def _levels(
    fast_cost_h: object,
    persistent_cost_h: object,
    persistent_every: object,
    node_keeping_frac: object,
) -> tuple[float, float, int, float]:
    wf = _checked(fast_cost_h, "fast_cost_h", strict=False)
    wp = _checked(persistent_cost_h, "persistent_cost_h", strict=False)
    k = _whole(persistent_every, "persistent_every", what=" (k = 1: no fast level)")
    p = _fraction(node_keeping_frac, "node_keeping_frac")
    return wf, wp, k, p


def level_terms(wf: float, wp: float, k: float, p: float) -> tuple[float, float]:
    """Return (cost per interval c, lost work m in half-intervals) of k levels.

    c = ((k − 1)w_f + w_p)/k and m = 1 + (1 − p)(k − 1); at k = 1 they are
    w_p and 1.0 exactly, so :func:`ettr_value` is the one-level model.
    """
    return ((k - 1) * wf + wp) / k, 1.0 + (1.0 - p) * (k - 1)


def _rate(n_nodes: object, failures_per_node_day: object) -> float:
    n = _n_nodes(n_nodes)
    rate = _checked(
        failures_per_node_day,
        "failures_per_node_day",
        strict=False,
        unit="per node-day",
    )
    return n * rate / 24.0


def two_level_ettr(
    *,
    n_nodes: int,
    failures_per_node_day: float,
    restart_h: float,
    interval_h: float,
    fast_cost_h: float,
    persistent_cost_h: float,
    persistent_every: int,
    node_keeping_frac: float,
    queue_h: float = 0.0,
) -> float:
    r"""Compute the expected ETTR of a job with two checkpoint levels.

    A fast checkpoint (to host memory or node-local storage) is written every
    Δt of compute; every k-th checkpoint is persistent (to storage that
    outlives the node) instead.

    Parameters
    ----------
    n_nodes : int
        Nodes N the job spans, >= 1.
    failures_per_node_day : float
        Failure rate r_f per node-day, >= 0.
    restart_h : float
        Restart overhead u₀ after each failure in hours, >= 0.
    interval_h : float
        Compute time Δt between two checkpoints (of either level) in hours, > 0.
    fast_cost_h : float
        Blocking write w_f of a fast checkpoint in hours, >= 0.
    persistent_cost_h : float
        Blocking write w_p of a persistent checkpoint in hours, >= 0.
    persistent_every : int
        k >= 1: every k-th checkpoint is persistent (k = 1: every one, i.e.
        no fast level).
    node_keeping_frac : float
        p in [0, 1]: the share of failures after which the node (and the fast
        checkpoint in its memory) survives; see :func:`node_keeping_share`.
    queue_h : float, default 0.0
        Queue wait q per interruption in hours, >= 0.

    Returns
    -------
    float
        Expected ETTR in [0, 1].

    Raises
    ------
    InvalidParameterError
        If a count is not a whole number >= 1, ``node_keeping_frac`` is not in
        [0, 1], or a rate or duration is None, not finite or out of range.

    Notes
    -----
    The first-order model of Kokolis et al. [1]_, applied per level as in the
    multi-level checkpoint models of Moody et al. [2]_ and Di et al. [3]_.
    Over one period of k intervals the job computes kΔt and blocks
    :math:`(k-1)w_f + w_p` writing, so it computes a fraction
    :math:`1/(1 + ((k-1)w_f + w_p)/(k\Delta t))` of its up time. Failures
    come at rate :math:`\lambda = N r_f/24` per hour (Poisson) at a uniform
    point of the period. Each costs u₀ + q and the work since the last
    checkpoint that survives it: a share p keeps the node and rolls back to
    the last checkpoint of either level, Δt/2 on average; the rest lose the
    node and roll back to the last persistent one, kΔt/2 on average. As in
    Kokolis et al.'s one-level model (where the loss is u₀ + Δt/2), the
    expected ETTR is then

    .. math::

        E[\mathrm{ETTR}] \approx
        \frac{1 - \lambda\left(u_0 + q + p\,\frac{\Delta t}{2}
              + (1-p)\,\frac{k\Delta t}{2}\right)}
             {1 + \frac{(k-1)w_f + w_p}{k\,\Delta t}}

    computed as :math:`1 - \lambda(u_0 + q + m\Delta t/2)` over
    :math:`1 + c/\Delta t` with :math:`m = 1 + (1-p)(k-1)` and
    :math:`c = ((k-1)w_f + w_p)/k`, so that k = 1 gives the one-level
    :func:`relkit.checkpoint.expected_ettr` with w = w_p bit for bit,
    whatever p. The same first-order assumptions hold (a persistent write
    also serves as the fast one; restores cost is in u₀; clipped at 0 where
    the model breaks down).

    References
    ----------
    .. [1] A. Kokolis et al., "Revisiting reliability in large-scale machine
       learning research clusters", HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096
    .. [2] A. Moody, G. Bronevetsky, K. Mohror and B. R. de Supinski, "Design,
       modeling, and evaluation of a scalable multi-level checkpointing
       system", SC 2010. doi:10.1109/SC.2010.18
    .. [3] S. Di, M. S. Bouguerra, L. Bautista-Gomez and F. Cappello,
       "Optimization of multi-level checkpoint model for large scale HPC
       applications", IPDPS 2014. doi:10.1109/IPDPS.2014.122

    Examples
    --------
    K1 of Kokolis et al. (2,048 nodes, 5 min restarts) with a 30 s persistent
    write every 4th checkpoint, 3 s in-memory ones and 60 % of failures
    keeping their node:

    >>> round(
    ...     two_level_ettr(
    ...         n_nodes=2048,
    ...         failures_per_node_day=6.5e-3,
    ...         restart_h=5 / 60,
    ...         interval_h=5 / 60,
    ...         fast_cost_h=3 / 3600,
    ...         persistent_cost_h=30 / 3600,
    ...         persistent_every=4,
    ...         node_keeping_frac=0.6,
    ...     ),
    ...     4,
    ... )
    0.8745
    """
    lam = _rate(n_nodes, failures_per_node_day)
    u0 = _checked(restart_h, "restart_h", strict=False)
    q = _checked(queue_h, "queue_h", strict=False)
    dt = _checked(interval_h, "interval_h")
    wf, wp, k, p = _levels(
        fast_cost_h, persistent_cost_h, persistent_every, node_keeping_frac
    )
    c, m = level_terms(wf, wp, k, p)
    return ettr_value(lam, u0 + q, dt, c, lost_factor=m)


@dataclass(frozen=True)
class TwoLevelPlan:
    """The best two-level checkpoint plan, and the one-level plan beside it.

    Parameters
    ----------
    interval_h : float
        Compute time Δt between checkpoints in hours (0.0 when the write
        costs are 0 or the model has broken down).
    persistent_every : int
        k: every k-th checkpoint is persistent.
    persistent_interval_h : float
        kΔt, compute time between persistent checkpoints in hours.
    expected_ettr : float
        Expected ETTR of the plan, in [0, 1].
    node_keeping_frac : float
        The share p of failures that keep their node, as given.
    one_level_interval_h : float
        Optimal interval with persistent checkpoints only (k = 1), hours.
    one_level_ettr : float
        Expected ETTR of that one-level plan.
    """

    interval_h: float
    persistent_every: int
    persistent_interval_h: float
    expected_ettr: float
    node_keeping_frac: float
    one_level_interval_h: float
    one_level_ettr: float

    def to_dict(self) -> dict[str, float | int]:
        """Return the fields as a plain dict.

        Returns
        -------
        dict
            Field name to value.
        """
        return asdict(self)

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("Two-level checkpoint plan", self.to_dict())


def two_level_optimum(
    *,
    n_nodes: int,
    failures_per_node_day: float,
    restart_h: float,
    fast_cost_h: float,
    persistent_cost_h: float,
    node_keeping_frac: float,
    queue_h: float = 0.0,
    persistent_every: int | None = None,
    max_persistent_every: int = MAX_PERSISTENT_EVERY,
) -> TwoLevelPlan:
    r"""Find the interval Δt, and k, that maximise the two-level expected ETTR.

    Parameters
    ----------
    n_nodes : int
        Nodes N the job spans, >= 1.
    failures_per_node_day : float
        Failure rate r_f per node-day, > 0.
    restart_h : float
        Restart overhead u₀ after each failure in hours, >= 0.
    fast_cost_h : float
        Blocking write w_f of a fast checkpoint in hours, >= 0.
    persistent_cost_h : float
        Blocking write w_p of a persistent checkpoint in hours, > 0.
    node_keeping_frac : float
        p in [0, 1], the share of failures that keep their node.
    queue_h : float, default 0.0
        Queue wait q per interruption in hours, >= 0.
    persistent_every : int, optional
        k >= 1 to optimise Δt for this k only; by default k is optimised too,
        over the whole numbers 1 to ``max_persistent_every``.
    max_persistent_every : int, default 1000
        Largest k searched, >= 1.

    Returns
    -------
    TwoLevelPlan
        Δt, k, kΔt and the expected ETTR of the best plan, with the best
        one-level plan (persistent checkpoints only) for comparison.

    Raises
    ------
    InvalidParameterError
        As :func:`two_level_ettr`; also if the rate or ``persistent_cost_h``
        is 0 (no finite optimum).

    Notes
    -----
    For a given k the expression of :func:`two_level_ettr` is the one-level
    model with cost :math:`c = ((k-1)w_f + w_p)/k` and rate
    :math:`\lambda m` in the rework term, :math:`m = 1 + (1-p)(k-1)`, so its
    exact maximiser over Δt is, as for one level (Kokolis et al.),

    .. math::

        \Delta t^*(k) = \sqrt{c^2 + 2c\,(1 - \lambda(u_0+q))/(\lambda m)} - c.

    Over k, the best ETTR :math:`E^*(k)` is maximised on a continuous k in
    [1, k_max] by ``scipy.optimize.minimize_scalar`` (bounded, on log k); the
    whole numbers next to its maximiser, and k = 1 and k_max, are compared
    and the best taken (the smallest k on ties). To first order the loss is
    :math:`\lambda(u_0+q) + \sqrt{2\lambda\,m c}` and :math:`mc` is
    :math:`\alpha j + \beta + \gamma/(j+1)` in j = k − 1 with
    :math:`\gamma = p(w_p - w_f)`: convex, so one maximum, when
    :math:`w_p \ge w_f`, at :math:`k \approx \sqrt{p(w_p-w_f)/((1-p)w_f)}`.
    With p = 1 no failure needs the persistent level and k runs to k_max;
    with :math:`w_f \ge w_p` the fast level never pays and k = 1.

    References
    ----------
    .. [1] A. Kokolis et al., HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096
    .. [2] A. Moody et al., SC 2010. doi:10.1109/SC.2010.18
    .. [3] S. Di et al., IPDPS 2014. doi:10.1109/IPDPS.2014.122

    Examples
    --------
    >>> plan = two_level_optimum(
    ...     n_nodes=2048,
    ...     failures_per_node_day=6.5e-3,
    ...     restart_h=5 / 60,
    ...     fast_cost_h=3 / 3600,
    ...     persistent_cost_h=30 / 3600,
    ...     node_keeping_frac=0.6,
    ... )
    >>> plan.persistent_every, round(plan.interval_h * 60, 2)
    (4, 3.74)
    >>> round(plan.expected_ettr, 4), round(plan.one_level_ettr, 4)
    (0.8776, 0.8644)
    """
    from scipy.optimize import minimize_scalar

    lam = _rate(n_nodes, failures_per_node_day)
    if lam == 0.0:
        msg = (
            "failures_per_node_day must be > 0 here: with no failures there is no "
            "optimum interval (ETTR rises towards 1 as checkpoints get rarer)."
        )
        raise InvalidParameterError(msg)
    u0 = _checked(restart_h, "restart_h", strict=False)
    q = _checked(queue_h, "queue_h", strict=False)
    wp = _checked(persistent_cost_h, "persistent_cost_h")
    wf, wp, k_given, p = _levels(
        fast_cost_h,
        wp,
        1 if persistent_every is None else persistent_every,
        node_keeping_frac,
    )
    k_max = _whole(max_persistent_every, "max_persistent_every")
    a = u0 + q

    def best(k: float) -> tuple[float, float]:
        c, m = level_terms(wf, wp, k, p)
        return optimal_interval(lam, a, c, lost_factor=m)

    if persistent_every is not None:
        k = k_given
    elif k_max == 1:
        k = 1
    else:
        res = minimize_scalar(
            lambda x: -best(math.exp(x))[1],
            bounds=(0.0, math.log(k_max)),
            method="bounded",
            options={"xatol": 1e-6},
        )
        x = math.exp(float(res.x))
        near = {
            1,
            k_max,
            *range(max(1, math.floor(x) - 1), min(k_max, math.ceil(x) + 1) + 1),
        }
        k = max(sorted(near), key=lambda j: best(j)[1])
    dt, ettr = best(k)
    one_dt, one = optimal_interval(lam, a, wp)
    return TwoLevelPlan(
        interval_h=dt,
        persistent_every=k,
        persistent_interval_h=k * dt,
        expected_ettr=ettr,
        node_keeping_frac=p,
        one_level_interval_h=one_dt,
        one_level_ettr=one,
    )


@dataclass(frozen=True)
class NodeKeepingShare:
    """The share of interruptions that keep their node, and the modes counted.

    Parameters
    ----------
    node_keeping_frac : float
        p = n_node_keeping / (n_node_keeping + n_node_losing), in [0, 1].
    n_node_keeping : int
        Interruptions of modes that keep the node.
    n_node_losing : int
        Interruptions of modes that lose the node.
    node_keeping_modes : tuple of str
        Modes counted as keeping the node (with n > 0), sorted.
    node_losing_modes : tuple of str
        Modes counted as losing the node (with n > 0), sorted.
    """

    node_keeping_frac: float
    n_node_keeping: int
    n_node_losing: int
    node_keeping_modes: tuple[str, ...]
    node_losing_modes: tuple[str, ...]

    def to_dict(self) -> dict[str, float | int | tuple[str, ...]]:
        """Return the fields as a plain dict.

        Returns
        -------
        dict
            Field name to value.
        """
        return asdict(self)

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("Share of failures that keep their node", self.to_dict())


def node_keeping_share(
    mode_counts: pl.DataFrame, *, loses_node: Mapping[str, bool] | None = None
) -> NodeKeepingShare:
    r"""Compute the share p of interruptions whose node survives, from the mode mix.

    Parameters
    ----------
    mode_counts : pl.DataFrame
        One row per failure mode (repeats are summed): ``failure_mode``
        (String, not null) and ``n`` (integer >= 0), the interruptions of
        that mode, e.g. from ``relkit.jobs.root_cause_table`` or a count of
        ``relkit.jobs.build_interruptions(...)`` by ``failure_mode``.
    loses_node : mapping of str to bool, optional
        Whether a mode loses the node, for modes the taxonomy does not have
        (e.g. ``{"software/bug": False}``) or to override it.

    Returns
    -------
    NodeKeepingShare
        p and the counts and modes on each side.

    Raises
    ------
    SchemaError
        If a column is missing or has another dtype family.
    InvalidParameterError
        If a mode is null or unknown to the taxonomy and not in
        ``loses_node``, or a count is negative.
    InsufficientDataError
        If the counts sum to 0.

    Notes
    -----
    :math:`p = \sum_{m:\,\lnot L(m)} n_m / \sum_m n_m`, with L the
    ``loses_node`` flag of :data:`relkit.taxonomy.LOSES_NODE` (a node is
    lost when recovery drains or replaces it: hardware and network
    failures, by :data:`relkit.taxonomy.LOSES_NODE_RULE`). It is the p of
    :func:`two_level_ettr`, the share of failures after which an in-memory
    checkpoint survives (Moody et al., doi:10.1109/SC.2010.18, measured
    85 % of failures recoverable from node-local checkpoints on their
    systems).

    Examples
    --------
    >>> import polars as pl
    >>> counts = pl.DataFrame(
    ...     {
    ...         "failure_mode": ["gpu/hbm_uncorrectable", "network/nccl_watchdog"],
    ...         "n": [3, 1],
    ...     }
    ... )
    >>> share = node_keeping_share(counts)
    >>> share.node_keeping_frac, share.node_losing_modes
    (0.25, ('gpu/hbm_uncorrectable',))
    """
    from relkit.taxonomy import LOSES_NODE

    require_columns(mode_counts, ["failure_mode", "n"], where="node_keeping_share")
    if mode_counts.schema["failure_mode"] != pl.String or not (
        mode_counts.schema["n"].is_integer()
    ):
        msg = (
            "node_keeping_share: failure_mode must be String and n an integer "
            f"column; got {dict(mode_counts.schema)}. Cast, e.g. "
            "frame.with_columns(pl.col('n').cast(pl.Int64))."
        )
        raise SchemaError(msg)
    flags = {**LOSES_NODE, **(loses_node or {})}
    sums = (
        mode_counts.group_by("failure_mode").agg(pl.col("n").sum()).sort("failure_mode")
    )
    if sums["failure_mode"].null_count():
        msg = (
            "node_keeping_share: failure_mode is null in some rows (interruptions "
            "with no attributed mode); drop them, frame.drop_nulls('failure_mode'), "
            "or name them and say whether they lose the node with loses_node=."
        )
        raise InvalidParameterError(msg)
    if (sums["n"] < 0).any():
        bad = sums.filter(pl.col("n") < 0).rows()[:5]
        msg = f"node_keeping_share: counts n must be >= 0; got {bad}."
        raise InvalidParameterError(msg)
    unknown = [m for m in sums["failure_mode"] if m not in flags]
    if unknown:
        msg = (
            f"node_keeping_share: mode(s) {unknown[:5]} are not in the taxonomy; "
            "say whether each loses the node, e.g. "
            f"loses_node={{{unknown[0]!r}: False}}."
        )
        raise InvalidParameterError(msg)
    keep = {m: n for m, n in sums.iter_rows() if not flags[m] and n > 0}
    lose = {m: n for m, n in sums.iter_rows() if flags[m] and n > 0}
    n_keep, n_lose = sum(keep.values()), sum(lose.values())
    if n_keep + n_lose == 0:
        msg = "node_keeping_share: the counts sum to 0; there is no mode mix to share."
        raise InsufficientDataError(msg)
    return NodeKeepingShare(
        node_keeping_frac=n_keep / (n_keep + n_lose),
        n_node_keeping=n_keep,
        n_node_losing=n_lose,
        node_keeping_modes=tuple(sorted(keep)),
        node_losing_modes=tuple(sorted(lose)),
    )
