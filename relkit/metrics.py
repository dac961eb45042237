r"""Failure metrics with exact bounds: MTBF, failure rates, MTTR, availability.

All durations are hours. Confidence bounds are exact under a homogeneous Poisson
process (exponential times between failures), time-terminated observation: the
chi-square bounds of Epstein & Sobel for the MTBF, Garwood's for the rate.
"""

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from numbers import Integral, Real
from typing import NamedTuple

import numpy as np
import polars as pl

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.display import html_table
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError

__all__ = [
    "DEFAULT_CONFIDENCE",
    "FailureRateBounds",
    "MTBFBounds",
    "failure_rate_bounds",
    "mtbf",
    "mtbf_bounds",
    "mttf_at_scale_h",
    "per_node_day",
]

#: Output columns of :func:`mtbf` after the ``by`` columns, in order.
MTBF_COLUMNS = (
    "n_failures",
    "exposure_h",
    "mtbf_h",
    "mtbf_lower_h",
    "mtbf_upper_h",
    "mtbf_lower_one_sided_h",
    "mttr_h",
    "failures_per_1000_node_days",
    "availability_frac",
    "confidence",
)


def _check_confidence(confidence: object) -> float:
    if (
        isinstance(confidence, bool)
        or not isinstance(confidence, Real)
        or not 0.0 < float(confidence) < 1.0
    ):
        msg = (
            f"confidence must be a number strictly between 0 and 1 (e.g. 0.95); "
            f"got {confidence!r}."
        )
        raise InvalidParameterError(msg)
    return float(confidence)


def _check_count(n_failures: object, name: str = "n_failures") -> int:
    ok = not isinstance(n_failures, bool) and (
        isinstance(n_failures, Integral)
        or (
            isinstance(n_failures, Real)
            and math.isfinite(float(n_failures))
            and float(n_failures).is_integer()
        )
    )
    if not ok or int(n_failures) < 0:  # type: ignore[call-overload]
        msg = (
            f"{name} must be a whole number of failures >= 0; got {n_failures!r}. "
            "Count failures with len(frame) or frame.height."
        )
        raise InvalidParameterError(msg)
    return int(n_failures)  # type: ignore[call-overload]


def _check_positive(value: object, name: str, unit: str) -> float:
    if (
        value is None
        or isinstance(value, bool)
        or not isinstance(value, Real)
        or not math.isfinite(float(value))
        or float(value) <= 0.0
    ):
        msg = f"{name} must be a finite number > 0 ({unit}); got {value!r}."
        raise InvalidParameterError(msg)
    return float(value)


@dataclass(frozen=True)
class MTBFBounds:
    """Point estimate and exact chi-square confidence bounds of an MTBF.

    Parameters
    ----------
    mtbf_h : float or None
        Point estimate T / r in hours; None when r = 0 (no failure seen).
    lower_h : float or None
        Lower two-sided bound in hours; None when r = 0.
    upper_h : float or None
        Upper two-sided bound in hours; None when r = 0 (the bound is infinite).
    lower_one_sided_h : float
        One-sided lower bound in hours at the same confidence; defined for r = 0.
    confidence : float
        The confidence level of the bounds, in (0, 1).
    """

    mtbf_h: float | None
    lower_h: float | None
    upper_h: float | None
    lower_one_sided_h: float
    confidence: float

    def to_dict(self) -> dict[str, float | None]:
        """Return the fields as a plain dict.

        Returns
        -------
        dict
            Keys ``mtbf_h``, ``lower_h``, ``upper_h``, ``lower_one_sided_h``,
            ``confidence``.
        """
        return asdict(self)

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("MTBF with exact chi-square bounds", self.to_dict())


def mtbf_bounds(
    n_failures: int, *, exposure_h: float, confidence: float = DEFAULT_CONFIDENCE
) -> MTBFBounds:
    r"""Compute the MTBF and its exact chi-square bounds (time-terminated test).

    Parameters
    ----------
    n_failures : int
        Number of failures r observed, >= 0.
    exposure_h : float
        Total time on test T in hours (unit-hours summed over units), > 0.
        Keyword-only, so a count and an exposure cannot be swapped.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Confidence level c, strictly between 0 and 1.

    Returns
    -------
    MTBFBounds
        ``mtbf_h`` = T/r, two-sided ``lower_h``/``upper_h`` and the one-sided
        ``lower_one_sided_h``, all in hours, and the ``confidence`` used.

    Raises
    ------
    InvalidParameterError
        If ``n_failures`` is not a whole number >= 0, ``exposure_h`` is not
        finite and > 0, or ``confidence`` is not in (0, 1).

    Notes
    -----
    For a time-terminated test with r failures in total time T, assuming
    independent exponential times between failures (constant hazard),

    .. math::

        \hat\theta = T/r,\quad
        \left[\frac{2T}{\chi^2_{(1+c)/2;\,2r+2}},\;
        \frac{2T}{\chi^2_{(1-c)/2;\,2r}}\right],\quad
        \theta_{L,1} = \frac{2T}{\chi^2_{c;\,2r+2}}

    where :math:`\chi^2_{p;\nu}` is the p-quantile of the chi-square
    distribution with ν degrees of freedom. With r = 0 there is no point
    estimate and the upper bound is infinite (:math:`\chi^2_{p;0}=0`), so
    ``mtbf_h``, ``lower_h`` and ``upper_h`` are None and only the one-sided
    lower bound is reported: "with confidence c the MTBF is at least ...".

    References
    ----------
    .. [1] B. Epstein and M. Sobel, "Life testing", JASA 48(263), 1953.
       doi:10.1080/01621459.1953.10483491
    .. [2] MIL-HDBK-781A, Handbook for reliability test methods, plans and
       environments, 1996, section 5.

    Examples
    --------
    >>> b = mtbf_bounds(7, exposure_h=14980.0, confidence=0.9)
    >>> round(b.mtbf_h, 1), round(b.lower_h, 1), round(b.upper_h, 1)
    (2140.0, 1139.3, 4559.7)
    >>> b0 = mtbf_bounds(0, exposure_h=600.0, confidence=0.9)  # no failure in 600 h
    >>> b0.mtbf_h, b0.upper_h, round(b0.lower_one_sided_h, 2)
    (None, None, 260.58)
    >>> mtbf_bounds(1, exposure_h=0.0)
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: exposure_h must be a finite number > 0 ...
    """
    from scipy.stats import chi2

    r = _check_count(n_failures)
    t = _check_positive(exposure_h, "exposure_h", "hours")
    c = _check_confidence(confidence)
    lower_one = float(2.0 * t / chi2.ppf(c, 2 * r + 2))
    if r == 0:
        return MTBFBounds(None, None, None, lower_one, confidence)
    lower = float(2.0 * t / chi2.ppf((1.0 + c) / 2.0, 2 * r + 2))
    upper = float(2.0 * t / chi2.ppf((1.0 - c) / 2.0, 2 * r))
    return MTBFBounds(t / r, lower, upper, lower_one, confidence)


class FailureRateBounds(NamedTuple):
    """A failure rate with its exact two-sided Poisson bounds.

    Unpacks as ``rate, lower, upper, confidence``; all rates are failures per
    unit of the exposure given to :func:`failure_rate_bounds`.

    Parameters
    ----------
    rate : float
        Point estimate n / E.
    lower : float
        Lower two-sided bound (0 when n = 0).
    upper : float
        Upper two-sided bound.
    confidence : float
        The confidence level of the bounds, in (0, 1).
    """

    rate: float
    lower: float
    upper: float
    confidence: float

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("Failure rate with exact Poisson bounds", self._asdict())


def failure_rate_bounds(
    n_failures: int, *, exposure: float, confidence: float = DEFAULT_CONFIDENCE
) -> FailureRateBounds:
    r"""Compute a failure rate and its exact Poisson (Garwood) confidence interval.

    Parameters
    ----------
    n_failures : int
        Number of failures n observed, >= 0.
    exposure : float
        Exposure E in any unit (node-days, GPU-hours, ...), > 0. The rate is
        per that unit. Keyword-only, so a count and an exposure cannot be
        swapped.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided confidence level c, strictly between 0 and 1.

    Returns
    -------
    FailureRateBounds
        Named tuple ``(rate, lower, upper, confidence)``, rates in failures
        per unit of ``exposure``.

    Raises
    ------
    InvalidParameterError
        If ``n_failures`` is not a whole number >= 0, ``exposure`` is not
        finite and > 0, or ``confidence`` is not in (0, 1).

    Notes
    -----
    With n ~ Poisson(λE), the exact central interval is

    .. math::

        \hat\lambda = n/E,\quad
        \left[\frac{\chi^2_{(1-c)/2;\,2n}}{2E},\;
        \frac{\chi^2_{(1+c)/2;\,2n+2}}{2E}\right]

    with the lower bound 0 when n = 0. It is conservative (coverage >= c).

    References
    ----------
    .. [1] F. Garwood, "Fiducial limits for the Poisson distribution",
       Biometrika 28(3-4), 1936. doi:10.1093/biomet/28.3-4.437

    Examples
    --------
    Llama 3 pre-training: 419 unexpected interruptions on 2,048 nodes in 54 days.

    >>> rate, lo, hi, level = failure_rate_bounds(419, exposure=2048 * 54)
    >>> f"{rate:.3e} [{lo:.3e}, {hi:.3e}] at {level}"
    '3.789e-03 [3.435e-03, 4.169e-03] at 0.95'
    """
    from scipy.stats import chi2

    n = _check_count(n_failures)
    e = _check_positive(exposure, "exposure", "exposure units")
    c = _check_confidence(confidence)
    lower = 0.0 if n == 0 else float(chi2.ppf((1.0 - c) / 2.0, 2 * n) / (2.0 * e))
    upper = float(chi2.ppf((1.0 + c) / 2.0, 2 * n + 2) / (2.0 * e))
    return FailureRateBounds(n / e, lower, upper, confidence)


def per_node_day(
    *,
    failures_per_node_day: float | None = None,
    failures_per_1000_node_days: float | None = None,
    where: str = "rate",
) -> float:
    """Return a node failure rate per node-day, given in either unit.

    Parameters
    ----------
    failures_per_node_day : float, optional
        The rate r_f in failures per node-day (e.g. 6.5e-3 for RSC-1).
    failures_per_1000_node_days : float, optional
        The same rate per 1000 node-days, the unit Kokolis et al. print and
        :func:`mtbf` reports (e.g. 6.5 for RSC-1).
    where : str, default "rate"
        Name of the calling function, for the error message.

    Returns
    -------
    float
        The rate per node-day (not yet checked for range).

    Raises
    ------
    InvalidParameterError
        If both or neither of the two rates are given.

    Examples
    --------
    >>> per_node_day(failures_per_1000_node_days=6.5)
    0.0065
    """
    given = [
        name
        for name, value in (
            ("failures_per_node_day", failures_per_node_day),
            ("failures_per_1000_node_days", failures_per_1000_node_days),
        )
        if value is not None
    ]
    if len(given) != 1:
        msg = (
            f"{where}: give exactly one of failures_per_node_day (e.g. 6.5e-3) or "
            f"failures_per_1000_node_days (e.g. 6.5); got {given or 'neither'}."
        )
        raise InvalidParameterError(msg)
    if failures_per_node_day is not None:
        return failures_per_node_day
    assert failures_per_1000_node_days is not None  # for type checkers
    if isinstance(failures_per_1000_node_days, bool) or not isinstance(
        failures_per_1000_node_days, Real
    ):
        return failures_per_1000_node_days  # the caller's check names it
    return float(failures_per_1000_node_days) / 1000.0


def mttf_at_scale_h(
    *,
    n_nodes: int,
    failures_per_node_day: float | None = None,
    failures_per_1000_node_days: float | None = None,
) -> float:
    r"""Project the mean time to failure of a job spanning ``n_nodes`` nodes.

    Parameters
    ----------
    n_nodes : int
        Number of nodes N the job spans, >= 1 (GPUs / GPUs per node).
    failures_per_node_day : float, optional
        Failure rate r_f of one node, in failures per node-day, > 0.
    failures_per_1000_node_days : float, optional
        The same rate per 1000 node-days; give exactly one of the two.

    Returns
    -------
    float
        MTTF(N) in hours.

    Raises
    ------
    InvalidParameterError
        If the rate is not finite and > 0 (a zero rate has no finite MTTF),
        both or neither rate is given, or ``n_nodes`` is not a whole number
        >= 1.

    Notes
    -----
    Kokolis et al.: :math:`\mathrm{MTTF}(N) = 1/(N r_f)` days, i.e.
    :math:`24/(N r_f)` hours, assuming independent nodes with a constant
    failure rate, and that any node failure interrupts the job. It is a
    projection: an observed MTTF at one scale need not lie on this curve.

    References
    ----------
    .. [1] A. Kokolis et al., "Revisiting reliability in large-scale machine
       learning research clusters", HPCA 2025. arXiv:2410.21680

    Examples
    --------
    RSC-1 rate 6.50 per 1000 node-days, 16,384 GPUs = 2,048 nodes of 8 GPUs:

    >>> round(mttf_at_scale_h(n_nodes=16384 // 8, failures_per_node_day=6.5e-3), 3)
    1.803
    >>> round(mttf_at_scale_h(n_nodes=2048, failures_per_1000_node_days=6.5), 3)
    1.803
    """
    per_node_day(  # exactly one of the two
        failures_per_node_day=failures_per_node_day,
        failures_per_1000_node_days=failures_per_1000_node_days,
        where="mttf_at_scale_h",
    )
    if failures_per_node_day is not None:
        rate = _check_positive(
            failures_per_node_day, "failures_per_node_day", "per node-day"
        )
    else:
        rate = (
            _check_positive(
                failures_per_1000_node_days,
                "failures_per_1000_node_days",
                "per 1000 node-days",
            )
            / 1000.0
        )
    n = _check_count(n_nodes, "n_nodes")
    if n < 1:
        msg = f"n_nodes must be a whole number >= 1; got {n_nodes!r}."
        raise InvalidParameterError(msg)
    return 24.0 / (n * rate)


def _as_by(by: str | Sequence[str]) -> list[str]:
    return [by] if isinstance(by, str) else list(by)


def _chi2_ppf(q: float, df: np.ndarray) -> np.ndarray:
    """chi2.ppf with df = 0 mapped to 0 (its limit), without warnings."""
    from scipy.stats import chi2

    out = np.zeros(df.shape, dtype=float)
    pos = df > 0
    out[pos] = chi2.ppf(q, df[pos])
    return out


def mtbf(
    failures: pl.DataFrame,
    exposure: pl.DataFrame,
    *,
    by: str | Sequence[str] = (),
    confidence: float = DEFAULT_CONFIDENCE,
) -> pl.DataFrame:
    r"""Compute MTBF, bounds, MTTR and availability per group.

    Parameters
    ----------
    failures : pl.DataFrame
        One row per failure. Must have every ``by`` column; an optional float
        column ``repair_h`` (hours down per failure, nulls ignored) gives MTTR.
    exposure : pl.DataFrame
        Time at risk from :func:`relkit.exposure.build_exposure`: column
        ``exposure_h`` (float, unit-hours, e.g. node-hours) plus the ``by``
        columns that are unit attributes (e.g. ``system``). Rows are summed
        over any other grouping, so an exposure built ``by="system"`` also
        serves ``by=()``.
    by : str or sequence of str, default ()
        Grouping columns. Those in ``exposure`` are unit attributes; the others
        are failure attributes (e.g. ``failure_mode``, ``root_cause``) and share
        the exposure of their unit group.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Confidence level of the bounds, in (0, 1).

    Returns
    -------
    pl.DataFrame
        One row per group, sorted by ``by`` (nulls last): the ``by`` columns,
        ``n_failures`` (Int64), ``exposure_h``, ``mtbf_h``, ``mtbf_lower_h``,
        ``mtbf_upper_h`` (two-sided), ``mtbf_lower_one_sided_h``, ``mttr_h``
        (hours), ``failures_per_1000_node_days``, ``availability_frac`` and
        ``confidence`` (the level of the bounds, the same on every row).
        Groups are the observed combinations of the failure attributes crossed
        with every exposure group, so groups with zero failures are present:
        their ``mtbf_h``, ``mtbf_lower_h``, ``mtbf_upper_h``, ``mttr_h`` and
        ``availability_frac`` are null and ``mtbf_lower_one_sided_h`` is set.

    Raises
    ------
    SchemaError
        If a ``by`` column is missing from ``failures``, ``exposure`` has no
        ``exposure_h``, unit-attribute dtypes differ between the frames, or a
        failure falls in a group with no exposure.
    InsufficientDataError
        If ``exposure`` has no rows.
    InvalidParameterError
        If ``confidence`` is not in (0, 1).

    Notes
    -----
    Per group, with r failures and exposure T (:func:`mtbf_bounds`):
    :math:`\mathrm{MTBF}=T/r`, exact chi-square bounds (time-terminated),
    :math:`\mathrm{rate}=1000\cdot 24\,r/T` per 1000 node-days (when T is in
    node-hours), :math:`\mathrm{MTTR}=\overline{\mathrm{repair\_h}}` and
    availability :math:`A=\mathrm{MTBF}/(\mathrm{MTBF}+\mathrm{MTTR})`.
    The bounds assume a constant failure rate within each group; groups with
    T <= 0 get null metrics.

    References
    ----------
    .. [1] B. Epstein and M. Sobel, "Life testing", JASA 48(263), 1953.
       doi:10.1080/01621459.1953.10483491

    Examples
    --------
    Two systems of 1,000 node-hours each; three failures on system a, none on b:

    >>> import polars as pl
    >>> exp = pl.DataFrame({"system": ["a", "b"], "exposure_h": [1000.0, 1000.0]})
    >>> fails = pl.DataFrame({"system": ["a"] * 3, "repair_h": [1.0, 2.0, 3.0]})
    >>> out = mtbf(fails, exp, by="system")
    >>> out.select("system", "n_failures", "mtbf_h", "mttr_h").to_dicts()
    ... # doctest: +NORMALIZE_WHITESPACE
    [{'system': 'a', 'n_failures': 3, 'mtbf_h': 333.33..., 'mttr_h': 2.0},
     {'system': 'b', 'n_failures': 0, 'mtbf_h': None, 'mttr_h': None}]
    >>> round(out["mtbf_lower_one_sided_h"][1], 1)  # 2000 h / chi2(0.95; 2)
    333.8
    """
    c = _check_confidence(confidence)
    by_cols = _as_by(by)
    if missing := [col for col in by_cols if col not in failures.columns]:
        msg = (
            f"mtbf: failures lacks by column(s) {missing}; it has "
            f"{failures.columns}. Add them, e.g. derive root_cause with "
            "pl.col('failure_mode').str.split('/').list.first()."
        )
        raise SchemaError(msg)
    if "exposure_h" not in exposure.columns:
        msg = (
            f"mtbf: exposure lacks column 'exposure_h'; it has {exposure.columns}. "
            "Build it with relkit.exposure.build_exposure(assets, window_end=...)."
        )
        raise SchemaError(msg)
    if exposure.height == 0:
        msg = "mtbf: exposure has no rows (no unit was at risk in the window)."
        raise InsufficientDataError(msg)
    unit_by = [col for col in by_cols if col in exposure.columns]
    attr_by = [col for col in by_cols if col not in exposure.columns]
    if wrong := [
        f"{col}: failures {failures.schema[col]} vs exposure {exposure.schema[col]}"
        for col in unit_by
        if failures.schema[col] != exposure.schema[col]
    ]:
        msg = f"mtbf: by column dtypes differ ({'; '.join(wrong)}). Cast one side."
        raise SchemaError(msg)

    exp_sum = pl.col("exposure_h").cast(pl.Float64).sum()
    if unit_by:
        units = exposure.group_by(unit_by).agg(exp_sum)
    else:
        units = exposure.select(exp_sum)
    if unit_by:
        orphans = failures.join(units, on=unit_by, how="anti", nulls_equal=True)
        if orphans.height:
            first = orphans.select(unit_by).unique(maintain_order=True).head(5)
            msg = (
                f"mtbf: {orphans.height} failure(s) fall in group(s) with no "
                f"exposure, e.g. {first.to_dicts()}. Restrict failures to the "
                "exposure's units, e.g. failures.join(exposure.select(by), "
                "on=by, how='semi'), or build exposure over the same assets."
            )
            raise SchemaError(msg)
    grid = units
    if attr_by:
        attrs = failures.select(attr_by).unique()
        grid = units.join(attrs, how="cross")

    has_repair = "repair_h" in failures.columns
    aggs = [pl.len().cast(pl.Int64).alias("n_failures")]
    aggs.append(
        pl.col("repair_h").cast(pl.Float64).mean().alias("mttr_h")
        if has_repair
        else pl.lit(None, dtype=pl.Float64).alias("mttr_h")
    )
    if by_cols:
        counts = failures.group_by(by_cols).agg(aggs)
        out = grid.join(counts, on=by_cols, how="left", nulls_equal=True)
    else:
        counts = failures.select(aggs)
        out = grid.join(counts, how="cross")
    out = out.with_columns(pl.col("n_failures").fill_null(0))

    r = out["n_failures"].to_numpy().astype(float)
    t = out["exposure_h"].to_numpy().astype(float)
    valid = np.isfinite(t) & (t > 0)
    t_safe = np.where(valid, t, 1.0)
    has_r = valid & (r > 0)
    r_safe = np.where(r > 0, r, 1.0)

    def col(values: np.ndarray, mask: np.ndarray) -> pl.Series:
        return pl.Series(
            [float(v) if m else None for v, m in zip(values, mask, strict=True)],
            dtype=pl.Float64,
        )

    point = t_safe / r_safe
    lower = 2 * t_safe / _chi2_ppf((1 + c) / 2, 2 * r + 2)
    upper_den = _chi2_ppf((1 - c) / 2, 2 * r)
    upper = 2 * t_safe / np.where(upper_den > 0, upper_den, 1.0)
    lower_one = 2 * t_safe / _chi2_ppf(c, 2 * r + 2)
    rate = 1000.0 * 24.0 * r / t_safe
    out = out.with_columns(
        mtbf_h=col(point, has_r),
        mtbf_lower_h=col(lower, has_r),
        mtbf_upper_h=col(upper, has_r),
        mtbf_lower_one_sided_h=col(lower_one, valid),
        failures_per_1000_node_days=col(rate, valid),
    ).with_columns(
        availability_frac=pl.col("mtbf_h") / (pl.col("mtbf_h") + pl.col("mttr_h")),
        confidence=pl.lit(c, dtype=pl.Float64),
    )
    out = out.select(*by_cols, *MTBF_COLUMNS)
    if by_cols:
        out = out.sort(by_cols, nulls_last=True)
    return out
