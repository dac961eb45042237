r"""Competing risks: cumulative incidence per failure mode, and Gray's test.

Both estimators run on the sorted event table of a survival table (``entry_h``
for left truncation, ``stop_h``, ``observed`` and a failure-mode column), in
:math:`O(n \log n)`, with no random jitter: tied failures of different modes
are counted together, and a failure tied with a censoring comes first (the
censored unit is still at risk at that time), as in Kaplan-Meier.

References
----------
.. [1] O. O. Aalen and S. Johansen, "An empirical transition matrix for
   non-homogeneous Markov chains based on censored observations", Scand. J.
   Statist. 5(3), 1978, 141-150. https://www.jstor.org/stable/4615704
.. [2] M. Marubini and M. G. Valsecchi, *Analysing Survival Data from Clinical
   Trials and Observational Studies*, Wiley, 1995, §10.2 (delta-method
   variance). doi:10.1002/9780470975749
.. [3] J. K. Choudhury, "Non-parametric confidence interval estimation for
   competing risks analysis: application to contraceptive data", Stat. Med.
   21(8), 2002, 1129-1144. doi:10.1002/sim.1070
.. [4] R. J. Gray, "A class of K-sample tests for comparing the cumulative
   incidence of a competing risk", Ann. Statist. 16(3), 1988, 1141-1154.
   doi:10.1214/aos/1176350951
.. [5] P. K. Andersen, Ø. Borgan, R. D. Gill and N. Keiding, *Statistical
   Models Based on Counting Processes*, Springer, 1993.
   doi:10.1007/978-1-4612-4348-9
"""

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import polars as pl

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InsufficientDataError, SchemaError
from relkit.schema import require_columns
from relkit.survival._common import (
    check_confidence,
    check_risk_set,
    entry_for_risk_set,
    prepare,
)
from relkit.survival._tables import split_groups

__all__ = ["cumulative_incidence", "gray_test"]

Transform = Literal["loglog", "cloglog"]


def _at_risk(entry: np.ndarray, stop: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Units at risk at each time: entry < t <= stop, the rule of Kaplan-Meier.

    A unit that entered at ``t > 0`` is not at risk for failures at ``t`` (the
    counting-process risk set of Andersen et al. 1993, §III.3, as lifelines'
    Kaplan-Meier); a censoring at ``t`` still is (failures come first). Units
    entering at 0 are at risk at 0 (a failure at age 0, dead on arrival, fails
    out of the whole starting set, as lifelines counts it), and a spell that
    enters and fails at the same instant ``t > 0`` is at risk at ``t``
    (:func:`relkit.survival._common.entry_for_risk_set`).
    """
    adjusted = entry_for_risk_set(entry, stop)
    adjusted = np.where(entry == 0, -np.inf, adjusted)
    return np.searchsorted(np.sort(adjusted), times, side="left") - np.searchsorted(
        np.sort(stop), times, side="left"
    )


@dataclass(frozen=True)
class _EventTable:
    """Distinct failure times of one group, with risk sets and counts per mode."""

    times: np.ndarray  # (J,) distinct failure times of any mode, increasing
    n_at_risk: np.ndarray  # (J,) at risk at t (see _at_risk)
    modes: list[Any]  # (K,) failure modes, sorted
    d: np.ndarray  # (K, J) failures of each mode at each time


def _event_table(
    entry: np.ndarray, stop: np.ndarray, observed: np.ndarray, modes: np.ndarray
) -> _EventTable:
    times = np.unique(stop[observed])
    kinds = sorted({m for m, o in zip(modes, observed, strict=True) if o}, key=str)
    n = _at_risk(entry, stop, times)
    index = np.searchsorted(times, stop[observed])
    failed = modes[observed]
    d = np.array(
        [np.bincount(index[failed == k], minlength=times.size) for k in kinds],
        dtype=float,
    ).reshape(len(kinds), times.size)
    return _EventTable(times, n.astype(np.int64), kinds, d)


def _aalen_johansen(
    ev: _EventTable,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return (cif (K, J), variance (K, J), survival before each time (J,))."""
    n = ev.n_at_risk.astype(float)
    d_all = ev.d.sum(axis=0)
    surv = np.cumprod(1.0 - d_all / n)
    before = np.concatenate([[1.0], surv[:-1]])
    cif = np.cumsum(before * ev.d / n, axis=1)
    # delta-method variance (Marubini & Valsecchi 1995; Choudhury 2002, eq. 5):
    # Var F_k(t) = sum_j (F(t) - F_j)^2 d_j / (n_j (n_j - d_j))
    #            + sum_j S_{j-1}^2 d_kj (n_j - d_kj) / n_j^3
    #            - 2 sum_j (F(t) - F_j) S_{j-1} d_kj / n_j^2,
    # each sum over t_j <= t; the squares are expanded into running sums.
    last = n == d_all  # every unit at risk fails: the term is 0 * inf, taken 0
    w = np.divide(d_all, n * (n - d_all), out=np.zeros_like(n), where=~last)
    a1 = np.cumsum(w)
    b1 = np.cumsum(w * cif, axis=1)
    c1 = np.cumsum(w * cif**2, axis=1)
    first = cif**2 * a1 - 2.0 * cif * b1 + c1
    second = np.cumsum(before**2 * ev.d * (n - ev.d) / n**3, axis=1)
    u = before * ev.d / n**2
    third = cif * np.cumsum(u, axis=1) - np.cumsum(u * cif, axis=1)
    variance = np.maximum(first + second - 2.0 * third, 0.0)
    return cif, variance, before


def _band(
    cif: np.ndarray, variance: np.ndarray, z: float, transform: Transform
) -> tuple[np.ndarray, np.ndarray]:
    """Pointwise band kept inside [0, 1] by a log(-log) transform."""
    se = np.sqrt(variance)
    with np.errstate(divide="ignore", invalid="ignore"):
        if transform == "loglog":  # g(F) = log(-log F)
            scale = np.exp(z * se / (cif * np.abs(np.log(cif))))
            lower, upper = cif**scale, cif ** (1.0 / scale)
        else:  # g(F) = log(-log(1 - F)), Kaplan-Meier's exponential Greenwood
            s = 1.0 - cif
            scale = np.exp(z * se / (s * np.abs(np.log(s))))
            lower, upper = 1.0 - s ** (1.0 / scale), 1.0 - s**scale
    flat = (cif <= 0.0) | (cif >= 1.0) | (se == 0.0) | ~np.isfinite(scale)
    lower = np.where(flat, cif, lower)
    upper = np.where(flat, cif, upper)
    return np.minimum(lower, cif), np.maximum(upper, cif)


def cumulative_incidence(
    table: pl.DataFrame,
    *,
    mode: str = "failure_mode",
    by: Sequence[str] = (),
    confidence: float = DEFAULT_CONFIDENCE,
    transform: Transform = "loglog",
    invalid: Literal["raise", "drop"] = "raise",
) -> pl.DataFrame:
    r"""Estimate each failure mode's cumulative incidence (Aalen-Johansen).

    Deterministic: tied failures of different modes at one time are counted
    together, with no random jitter (lifelines' ``AalenJohansenFitter`` breaks
    such ties at random); a failure tied with a censoring comes first.

    Parameters
    ----------
    table : pl.DataFrame
        Survival table: ``entry_h`` (h, optional; left truncation), ``stop_h``
        (h), ``observed`` (bool) and a ``mode`` column naming the failure mode
        of observed rows (ignored for censored rows).
    mode : str, default "failure_mode"
        Name of the failure-mode column.
    by : sequence of str, default ()
        Grouping columns (one estimate per group and mode).
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the pointwise band, in (0, 1).
    transform : {"loglog", "cloglog"}, default "loglog"
        Scale of the band: ``loglog`` is :math:`\log(-\log F)` (Choudhury
        2002; lifelines' ``AalenJohansenFitter``), ``cloglog`` is
        :math:`\log(-\log(1 - F))`, the scale of Kaplan-Meier's exponential
        Greenwood band (with one mode the band is then 1 minus the
        Kaplan-Meier band). Both keep the band inside [0, 1].
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.

    Returns
    -------
    pl.DataFrame
        Columns ``<mode>, *by, time_h, cumulative_incidence, lower, upper,
        n_at_risk, n_events``: one row per mode, group and distinct failure
        time of any mode in the group, sorted by mode, group and time.
        ``cumulative_incidence`` is :math:`\hat F_k(t)` just after ``time_h``
        (a fraction in [0, 1]); ``n_at_risk`` counts the units at risk at
        ``time_h`` and ``n_events`` the failures of this mode there. Before
        the first row of a curve :math:`\hat F_k = 0`. Empty (with these
        columns) when no row is observed.

    Raises
    ------
    SchemaError
        If a column is missing, a row is invalid (with ``invalid="raise"``),
        ``confidence`` is outside (0, 1) or ``transform`` is unknown.
    InsufficientDataError
        If a group's risk set empties before a later unit enters, as
        :func:`kaplan_meier` refuses it (the curve after it is not
        identifiable).

    Notes
    -----
    With :math:`n_j = \#\{i: a_i < t_j \le t_i\}` units at risk at
    :math:`t_j` (a unit entering at :math:`t_j` is not yet at risk there, as
    in lifelines' Kaplan-Meier; one censored at :math:`t_j` still is; a
    zero-length spell :math:`a_i = t_i` counts at its own time), :math:`d_j` failures of any mode and
    :math:`d_{kj}` of mode :math:`k`:
    :math:`\hat F_k(t) = \sum_{t_j \le t} \hat S(t_{j-1})\, d_{kj}/n_j`, with
    :math:`\hat S` the all-mode Kaplan-Meier (Aalen & Johansen 1978); hence
    :math:`\sum_k \hat F_k = 1 - \hat S`. Unlike :math:`1 - \hat S_k` with
    other modes censored, this does not overstate the per-mode risk.

    Variance by the delta method (Marubini & Valsecchi 1995, §10.2; Choudhury
    2002, eq. 5; lifelines' ``AalenJohansenFitter``):

    .. math::

        \widehat{V}[\hat F_k(t)] = \sum_{t_j \le t} [\hat F_k(t) - \hat F_k(t_j)]^2
        \frac{d_j}{n_j(n_j - d_j)} + \sum_{t_j \le t} \hat S(t_{j-1})^2
        \frac{d_{kj}(n_j - d_{kj})}{n_j^3} - 2 \sum_{t_j \le t}
        [\hat F_k(t) - \hat F_k(t_j)] \hat S(t_{j-1}) \frac{d_{kj}}{n_j^2}

    (a time where every unit at risk fails adds nothing to the first sum).
    With one mode it equals Greenwood's variance of :math:`1 - \hat S`. The
    band is :math:`g^{-1}(g(\hat F) \pm z\, \widehat{se}\, |g'(\hat F)|)`
    with :math:`g` the chosen transform (Choudhury 2002, §3); where
    :math:`\hat F` is 0 or 1 or the variance is 0 the band is the estimate.

    References
    ----------
    .. [1] O. O. Aalen and S. Johansen, Scand. J. Statist. 5(3), 1978, 141-150.
    .. [2] M. Marubini and M. G. Valsecchi, *Analysing Survival Data from
       Clinical Trials and Observational Studies*, Wiley, 1995.
       doi:10.1002/9780470975749
    .. [3] J. K. Choudhury, Stat. Med. 21(8), 2002, 1129-1144.
       doi:10.1002/sim.1070

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "stop_h": [1.0, 2.0, 3.0],
    ...         "observed": [True, True, False],
    ...         "failure_mode": ["gpu", "net", None],
    ...     }
    ... )
    >>> cumulative_incidence(t)["cumulative_incidence"].round(4).to_list()
    [0.3333, 0.3333, 0.0, 0.3333]
    >>> cumulative_incidence(t, confidence=1.5)
    Traceback (most recent call last):
    ...
    relkit.errors.SchemaError: cumulative_incidence: confidence must be in (0, 1), found 1.5; e.g. 0.95.
    """  # noqa: E501
    where = "cumulative_incidence"
    alpha = check_confidence(confidence, where)
    if transform not in ("loglog", "cloglog"):
        msg = f"{where}: transform must be 'loglog' or 'cloglog', found {transform!r}."
        raise SchemaError(msg)
    from scipy.stats import norm

    z = float(norm.ppf(1.0 - alpha / 2.0))
    by = list(by)
    require_columns(table, [mode], where=where)
    table = prepare(table, by, invalid, where)
    frames = []
    for key, part in split_groups(table, by):
        entry = part["entry_h"].to_numpy()
        stop = part["stop_h"].to_numpy()
        obs = part["observed"].to_numpy().astype(bool)
        if not obs.any():
            continue
        check_risk_set(entry, stop, where, key)
        ev = _event_table(entry, stop, obs, part[mode].to_numpy())
        cif, variance, _ = _aalen_johansen(ev)
        lower, upper = _band(cif, variance, z, transform)
        size = ev.times.size
        for i, k in enumerate(ev.modes):
            frames.append(
                pl.DataFrame(
                    {
                        mode: [k] * size,
                        **{c: [v] * size for c, v in key.items()},
                        "time_h": ev.times,
                        "cumulative_incidence": cif[i],
                        "lower": lower[i],
                        "upper": upper[i],
                        "n_at_risk": ev.n_at_risk,
                        "n_events": ev.d[i].astype(np.int64),
                    },
                    schema_overrides={mode: table.schema[mode]}
                    | {c: table.schema[c] for c in by},
                )
            )
    schema = {
        mode: table.schema[mode],
        **{c: table.schema[c] for c in by},
        "time_h": pl.Float64,
        "cumulative_incidence": pl.Float64,
        "lower": pl.Float64,
        "upper": pl.Float64,
        "n_at_risk": pl.Int64,
        "n_events": pl.Int64,
    }
    if not frames:
        return pl.DataFrame(schema=schema)
    out = pl.concat(frames, how="vertical_relaxed")
    out = out.with_columns(pl.col(c).cast(t) for c, t in schema.items())
    return out.sort([mode, *by, "time_h"], nulls_last=True, maintain_order=True)


# ------------------------------------------------------------------ Gray's test


def _gray_one(
    stop: np.ndarray,
    entry: np.ndarray,
    cause: np.ndarray,
    group: np.ndarray,
    n_groups: int,
    rho: float,
) -> tuple[np.ndarray, np.ndarray]:
    """Scores of groups 0..G-2 and their covariance (Gray 1988, §2).

    ``cause``: 0 censored, 1 the mode of interest, 2 any other mode;
    ``group``: integer codes 0..G-1.
    """
    times = np.unique(stop[cause > 0])
    J, G = times.size, n_groups
    n = np.zeros((G, J))
    d1 = np.zeros((G, J))
    d2 = np.zeros((G, J))
    index = np.searchsorted(times, stop)
    for g in range(G):
        mine = group == g
        n[g] = _at_risk(entry[mine], stop[mine], times)
        for arr, c in ((d1, 1), (d2, 2)):
            sel = mine & (cause == c)
            arr[g] = np.bincount(index[sel], minlength=J)
    live = n > 0
    safe_n = np.where(live, n, 1.0)
    # per group: all-mode Kaplan-Meier S_g and CIF F_g of the mode, before
    # (t-) and after (t) each time
    s_after = np.cumprod(np.where(live, 1.0 - (d1 + d2) / safe_n, 1.0), axis=1)
    s_before = np.concatenate([np.ones((G, 1)), s_after[:, :-1]], axis=1)
    f_after = np.cumsum(np.where(live, s_before * d1 / safe_n, 0.0), axis=1)
    f_before = np.concatenate([np.zeros((G, 1)), f_after[:, :-1]], axis=1)
    # h_g = n_g / S_g(t-) estimates n_g(0) P(uncensored at t): the risk set of
    # the subdistribution is R_g = h_g (1 - F_g(t-)) (Gray 1988, eq. 2.2)
    h = np.where(live, n / np.where(s_before > 0, s_before, 1.0), 0.0)
    r = h * (1.0 - f_before)
    h_sum = h.sum(axis=0)
    r_sum = r.sum(axis=0)
    d1_sum = d1.sum(axis=0)
    # pooled CIF under H0: F0(t) = F0(t-) + d1(t) / sum_g h_g(t)
    f0_after = np.cumsum(np.divide(d1_sum, h_sum, out=np.zeros(J), where=h_sum > 0))
    f0_before = np.concatenate([[0.0], f0_after[:-1]])
    weight = (1.0 - f0_before) ** rho
    # score of group g: sum_t W (d1_g - d1 R_g / sum R)
    expected = np.divide(d1_sum * r, r_sum, out=np.zeros_like(r), where=r_sum > 0)
    score = (weight * (d1 - expected)).sum(axis=1)[: G - 1]
    # a[i, k, t]: derivative of score i in group k's cause-1 counting process
    share = np.divide(h, h_sum, out=np.zeros_like(h), where=h_sum > 0)
    a = weight * h[:, None, :] * (np.eye(G)[:, :, None] - share[None, :, :])
    a = np.where(live[None, :, :], a, 0.0)
    # c[i, k, t] = sum_{u <= t} a[i, k, u] dGamma0(u), dGamma0 = dF0/(1 - F0-)
    dgamma = np.divide(
        d1_sum,
        h_sum * (1.0 - f0_before),
        out=np.zeros(J),
        where=(h_sum > 0) & (f0_before < 1.0),
    )
    c = np.cumsum(a * dgamma, axis=2)
    tail = c[:, :, -1:] - c  # c(tau) - c(t)
    cov = np.zeros((G - 1, G - 1))
    s_after_safe = np.where(s_after > 0, s_after, 1.0)
    # cause-1 part: variance of group k's increment under H0, with the
    # tie correction (1 - (d1 - 1)/(sum h S_k(t-) - 1)) of a hypergeometric draw
    with np.errstate(divide="ignore", invalid="ignore"):
        k1 = np.where(s_after > 0, 1.0 - (1.0 - f0_after) / s_after_safe, 1.0)
        tie1 = np.where(
            d1_sum > 1, 1.0 - (d1_sum - 1.0) / (h_sum * s_before - 1.0), 1.0
        )
        var1 = tie1 * s_before * d1_sum / (h_sum * safe_n)
    var1 = np.where(live & (d1_sum > 0), var1, 0.0)
    # cause-2 part: group k's competing failures move F_k's estimate
    k2 = np.where(s_after > 0, (1.0 - f0_after) / s_after_safe, 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        tie2 = np.where(d2 > 1, 1.0 - (d2 - 1.0) / (n - 1.0), 1.0)
        var2 = tie2 * s_before**2 * d2 / safe_n**2
    var2 = np.where(live & (d2 > 0) & (s_after > 0), var2, 0.0)
    g1 = (a + k1[None, :, :] * tail)[: G - 1]  # (G-1, G, J)
    g2 = (k2[None, :, :] * tail)[: G - 1]
    cov = np.einsum("ikt,jkt,kt->ij", g1, g1, var1) + np.einsum(
        "ikt,jkt,kt->ij", g2, g2, var2
    )
    return score, cov


def gray_test(
    table: pl.DataFrame,
    *,
    group: str,
    mode: str = "failure_mode",
    failure_modes: Sequence[Any] | None = None,
    rho: float = 0.0,
    invalid: Literal["raise", "drop"] = "raise",
) -> pl.DataFrame:
    r"""Compare a failure mode's cumulative incidence between groups (Gray's test).

    Parameters
    ----------
    table : pl.DataFrame
        Survival table as for :func:`cumulative_incidence` (``entry_h``
        optional, ``stop_h``, ``observed``, the ``mode`` column) with a
        ``group`` column.
    group : str
        Column whose values are the groups compared (rows with a null group
        are refused by :func:`validate_survival_table`'s caller; give them a
        value).
    mode : str, default "failure_mode"
        Name of the failure-mode column.
    failure_modes : sequence, optional
        Modes to test, each against all the others as competing events;
        default every observed mode.
    rho : float, default 0.0
        Power of the weight :math:`(1 - \hat F_0(t-))^\rho` (Gray 1988, eq.
        2.3); 0 gives a log-rank-like test, larger values weigh early
        differences more.
    invalid : {"raise", "drop"}, default "raise"
        See :func:`validate_survival_table`.

    Returns
    -------
    pl.DataFrame
        One row per tested mode, sorted: ``<mode>, statistic`` (chi-square),
        ``df`` (groups − 1), ``p_value``, ``n_groups``, ``n_events`` (failures
        of the mode), ``n_units`` and ``status``: ``"ok"``, or why there is no
        statistic (null ``statistic`` and ``p_value``: the score's covariance
        is singular, e.g. a group has no unit at risk at the mode's failure
        times).

    Raises
    ------
    SchemaError
        If a column is missing, a row is invalid, the group column has nulls,
        ``rho`` is negative, or a requested mode is never observed.
    InsufficientDataError
        If fewer than two groups are present.

    Notes
    -----
    For each group :math:`g` and distinct failure time :math:`t`, with
    :math:`n_g(t)` at risk, :math:`\hat S_g` the all-mode Kaplan-Meier and
    :math:`\hat F_g` the mode's cumulative incidence, the subdistribution
    risk set is :math:`R_g(t) = n_g(t)\,(1 - \hat F_g(t-))/\hat S_g(t-)`
    (Gray 1988, §2). The score of group :math:`g` is

    .. math::

        z_g = \sum_t W(t) \Big[d_{1g}(t) - d_1(t)\,
        \frac{R_g(t)}{\sum_l R_l(t)}\Big], \quad
        W(t) = (1 - \hat F_0(t-))^\rho,

    with :math:`d_{1g}` the failures of the mode in group :math:`g` and
    :math:`\hat F_0` the pooled cumulative incidence under
    :math:`H_0: F_1 = \dots = F_G`. Its covariance is Gray's consistent
    estimator (his Theorem 1 and §2.3), which accounts for the estimated
    :math:`\hat F_g` and :math:`\hat S_g` in :math:`R_g` through the
    competing failures. :math:`z' \hat\Sigma^{-1} z` over the first
    :math:`G - 1` groups is chi-square with :math:`G - 1` degrees of freedom.
    Without competing failures :math:`R_g = n_g` and the score is the
    log-rank observed-minus-expected count. Left truncation enters through
    the risk sets :math:`n_g(t)` as in :func:`cumulative_incidence` (an
    extension of the paper, which assumes entry at 0).

    References
    ----------
    .. [1] R. J. Gray, Ann. Statist. 16(3), 1988, 1141-1154.
       doi:10.1214/aos/1176350951

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "stop_h": [1.0, 2.0, 3.0, 4.0, 1.5, 2.5, 3.5, 4.5],
    ...         "observed": [True] * 8,
    ...         "failure_mode": ["gpu", "gpu", "net", "gpu"] + ["net"] * 4,
    ...         "rack": ["a"] * 4 + ["b"] * 4,
    ...     }
    ... )
    >>> gray_test(t, group="rack", failure_modes=["gpu"])["df"].to_list()
    [1]
    """
    from scipy.stats import chi2

    where = "gray_test"
    if not (np.isfinite(rho) and rho >= 0):
        msg = f"{where}: rho must be a finite number >= 0, found {rho!r}; e.g. 0."
        raise SchemaError(msg)
    require_columns(table, [mode, group], where=where)
    table = prepare(table, [group], invalid, where)
    if table[group].null_count():
        msg = (
            f"{where}: {table[group].null_count()} row(s) have no {group!r}; "
            f"fill it, e.g. table.with_columns(pl.col({group!r}).fill_null('unknown'))."
        )
        raise SchemaError(msg)
    levels = table[group].unique().sort().to_list()
    if len(levels) < 2:
        msg = (
            f"{where}: Gray's test compares groups, but {group!r} has "
            f"{len(levels)} value(s) {levels[:5]}; group by a column that varies."
        )
        raise InsufficientDataError(msg)
    observed = table.filter(pl.col("observed"))[mode]
    present = sorted(observed.unique().drop_nulls().to_list(), key=str)
    wanted = present if failure_modes is None else list(failure_modes)
    if missing := [m for m in wanted if m not in present]:
        msg = (
            f"{where}: failure mode(s) {missing} never observed; observed are "
            f"{present[:10]}."
        )
        raise SchemaError(msg)
    codes = table[group].replace_strict(
        {v: i for i, v in enumerate(levels)}, return_dtype=pl.Int64
    )
    entry = table["entry_h"].to_numpy()
    stop = table["stop_h"].to_numpy()
    obs = table["observed"].to_numpy().astype(bool)
    modes = table[mode].to_numpy()
    check_risk_set(entry, stop, where, {})
    rows = []
    for m in wanted:
        cause = np.where(obs, np.where(modes == m, 1, 2), 0)
        score, cov = _gray_one(stop, entry, cause, codes.to_numpy(), len(levels), rho)
        df = len(levels) - 1
        stat: float | None = None
        status = "ok"
        if np.linalg.cond(cov) < 1e12:
            stat = float(score @ np.linalg.solve(cov, score))
        else:
            status = (
                "singular covariance: a group has no unit at risk at this mode's "
                "failure times; merge or drop groups"
            )
        rows.append(
            {
                mode: m,
                "statistic": stat,
                "df": df,
                "p_value": None if stat is None else float(chi2.sf(stat, df)),
                "n_groups": len(levels),
                "n_events": int((cause == 1).sum()),
                "n_units": table.height,
                "status": status,
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            mode: table.schema[mode],
            "statistic": pl.Float64,
            "df": pl.Int64,
            "p_value": pl.Float64,
            "n_groups": pl.Int64,
            "n_events": pl.Int64,
            "n_units": pl.Int64,
            "status": pl.String,
        },
    )
