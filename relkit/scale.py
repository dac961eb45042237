r"""Job reliability by size, the node failure rate, and MTTF at larger scale.

Observed and projected values are kept apart: :func:`job_mttf_by_size`
measures the mean time to an infrastructure interruption of the jobs that ran,
per GPU-count bucket; :func:`node_failure_rate` measures r_f, failures per
node-day, from the failure logs; :func:`scale_projection` projects the MTTF of
a job of N GPUs from r_f with Kokolis et al.'s series model
MTTF(N) = 1 / (N_nodes r_f). Every frame carries a ``basis`` column
(``observed`` or ``projected``).
"""

import math
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import polars as pl

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.display import html_table
from relkit.errors import InvalidParameterError, RelkitWarning
from relkit.metrics import (
    failure_rate_bounds,
    mtbf_bounds,
    mttf_at_scale_h,
    per_node_day,
)
from relkit.schema import require_columns
from relkit.taxonomy import INFRA_CAUSES

__all__ = [
    "MAX_GPUS",
    "NodeFailureRate",
    "job_mttf_by_size",
    "node_failure_rate",
    "scale_projection",
]


#: Largest job size :func:`scale_projection` takes, GPUs: a thousand times
#: the 100k-GPU clusters of 2024, far beyond any projection that means
#: something, and safely inside 64-bit integers.
MAX_GPUS = 100_000_000

#: A node failure rate above this, per node-day, is more than one failure per
#: node a day: most likely a rate per 1000 node-days given by mistake.
_SUSPECT_RATE = 1.0


def _gpus_list(gpus: int | Sequence[int]) -> list[int]:
    values = [gpus] if isinstance(gpus, int) else list(gpus)
    if not values or any(
        isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= MAX_GPUS
        for g in values
    ):
        msg = (
            f"gpus must be whole numbers in [1, {MAX_GPUS:,}], e.g. [1024, 16384]; "
            f"got {gpus!r}."
        )
        raise InvalidParameterError(msg)
    return values


def scale_projection(
    gpus: int | Sequence[int],
    *,
    failures_per_node_day: float | None = None,
    failures_per_1000_node_days: float | None = None,
    gpus_per_node: int = 8,
    rate_lower: float | None = None,
    rate_upper: float | None = None,
) -> pl.DataFrame:
    r"""Project the mean time to failure of a job of N GPUs from the node rate.

    Parameters
    ----------
    gpus : int or sequence of int
        Job sizes in GPUs (each >= 1), e.g. ``[1024, 16384, 131072]``.
    failures_per_node_day : float, optional
        Node failure rate r_f, failures per node-day (> 0), e.g. 6.5e-3 for
        Meta's RSC-1.
    failures_per_1000_node_days : float, optional
        The same rate per 1000 node-days (6.50 for RSC-1, as Kokolis et al.
        and :func:`relkit.metrics.mtbf` print it). Give exactly one of the two.
    gpus_per_node : int, default 8
        GPUs per node; N_nodes = ceil(gpus / gpus_per_node).
    rate_lower, rate_upper : float, optional
        Confidence bounds of r_f, in the unit of the rate given; they give
        ``mttf_upper_h`` and ``mttf_lower_h``. Without them the bounds are null.

    Returns
    -------
    pl.DataFrame
        One row per size, in the given order: ``gpus``, ``n_nodes``,
        ``mttf_h`` (hours), ``mttf_lower_h``, ``mttf_upper_h`` (from the rate's
        upper and lower bound; null when not given or when the lower rate is
        0) and ``basis`` = ``"projected"``.

    Raises
    ------
    InvalidParameterError
        If both or neither rate is given, a rate is not finite and > 0
        (``rate_lower`` may be 0), the bounds do not bracket the rate, a
        size is not a whole number in [1, :data:`MAX_GPUS`], or
        ``gpus_per_node`` not a whole number >= 1.

    Warns
    -----
    RelkitWarning
        If ``failures_per_node_day`` is above 1 (more than one failure per
        node a day): Kokolis et al. print rates per 1000 node-days (6.50 for
        RSC-1), which this function takes divided by 1000 (6.5e-3).

    Notes
    -----
    :math:`\mathrm{MTTF}(N) = 24 / (N_\mathrm{nodes}\, r_f)` hours: independent
    nodes with a constant rate, any node failure interrupting the job
    (:func:`relkit.metrics.mttf_at_scale_h`). It is a projection: Kokolis et
    al.'s observed 7.9 h at 1,024 GPUs is not on this curve (it gives 28.85 h).

    References
    ----------
    .. [1] A. Kokolis et al., "Revisiting reliability in large-scale machine
       learning research clusters", HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096

    Examples
    --------
    RSC-1, r_f = 6.50 per 1000 node-days (paper: 1.8 h and 0.23 h):

    >>> out = scale_projection([16384, 131072], failures_per_1000_node_days=6.5)
    >>> [round(x, 4) for x in out["mttf_h"]]
    [1.8029, 0.2254]
    """
    scale = 1.0 if failures_per_1000_node_days is None else 1000.0
    rate_in_unit = per_node_day(
        failures_per_node_day=failures_per_node_day,
        failures_per_1000_node_days=failures_per_1000_node_days,
        where="scale_projection",
    )
    if scale != 1.0:
        rate_in_unit = failures_per_1000_node_days  # type: ignore[assignment]
    sizes = _gpus_list(gpus)
    if (
        isinstance(failures_per_node_day, int | float)
        and failures_per_1000_node_days is None
        and failures_per_node_day > _SUSPECT_RATE
    ):
        msg = (
            f"failures_per_node_day = {failures_per_node_day:g} is more than one "
            "failure per node a day; the rate is per node-day. If "
            f"{failures_per_node_day:g} is per 1000 node-days (as Kokolis et al. "
            f"print it), pass {failures_per_node_day / 1000:g} per node-day or "
            f"failures_per_1000_node_days={failures_per_node_day:g}."
        )
        warnings.warn(msg, RelkitWarning, stacklevel=2)
    if (
        isinstance(gpus_per_node, bool)
        or not isinstance(gpus_per_node, int)
        or (gpus_per_node < 1)
    ):
        msg = f"gpus_per_node must be a whole number >= 1; got {gpus_per_node!r}."
        raise InvalidParameterError(msg)
    name = "failures_per_node_day" if scale == 1.0 else "failures_per_1000_node_days"
    if (
        isinstance(rate_in_unit, int | float)
        and rate_lower is not None
        and (not math.isfinite(rate_lower) or not 0 <= rate_lower <= rate_in_unit)
    ):
        msg = f"rate_lower {rate_lower!r} must be in [0, {name} = {rate_in_unit!r}]."
        raise InvalidParameterError(msg)
    if (
        isinstance(rate_in_unit, int | float)
        and rate_upper is not None
        and (not math.isfinite(rate_upper) or rate_upper < rate_in_unit)
    ):
        msg = (
            f"rate_upper {rate_upper!r} must be finite and >= {name} = "
            f"{rate_in_unit!r}."
        )
        raise InvalidParameterError(msg)

    def mttf(rate: float, nodes: int) -> float:
        return mttf_at_scale_h(n_nodes=nodes, **{name: rate})

    rows = []
    for g in sizes:
        nodes = -(-g // gpus_per_node)
        rows.append(
            {
                "gpus": g,
                "n_nodes": nodes,
                "mttf_h": mttf(rate_in_unit, nodes),
                "mttf_lower_h": None if rate_upper is None else mttf(rate_upper, nodes),
                "mttf_upper_h": None
                if rate_lower is None or rate_lower == 0
                else mttf(rate_lower, nodes),
                "basis": "projected",
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "gpus": pl.Int64,
            "n_nodes": pl.Int64,
            "mttf_h": pl.Float64,
            "mttf_lower_h": pl.Float64,
            "mttf_upper_h": pl.Float64,
            "basis": pl.String,
        },
        orient="row",
    )


@dataclass(frozen=True)
class NodeFailureRate:
    """A node failure rate r_f with exact Poisson bounds.

    Parameters
    ----------
    n_failures : int
        Failures counted.
    node_days : float
        Exposure, node-days.
    failures_per_node_day : float
        r_f = n_failures / node_days.
    lower, upper : float
        Exact (Garwood) two-sided bounds of r_f, per node-day.
    confidence : float
        Level of the bounds.
    basis : str
        Where the numbers come from (``"observed"``, with the exposure basis).
    """

    n_failures: int
    node_days: float
    failures_per_node_day: float
    lower: float
    upper: float
    confidence: float
    basis: str

    @property
    def per_1000_node_days(self) -> float:
        """R_f per 1000 node-days (the unit Kokolis et al. print)."""
        return 1000.0 * self.failures_per_node_day

    @property
    def failures_per_1000_node_days(self) -> float:
        """R_f per 1000 node-days, the name :func:`relkit.metrics.mtbf` uses."""
        return self.per_1000_node_days

    def to_dict(self) -> dict[str, Any]:
        """Return the fields (and ``per_1000_node_days``) as a plain dict.

        Returns
        -------
        dict
            Field name to value.
        """
        return {**asdict(self), "per_1000_node_days": self.per_1000_node_days}

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("Node failure rate r_f", self.to_dict())


def node_failure_rate(
    n_failures: int,
    *,
    node_hours: float,
    confidence: float = DEFAULT_CONFIDENCE,
    basis: str = "observed",
) -> NodeFailureRate:
    r"""Compute the node failure rate r_f per node-day with exact bounds.

    Parameters
    ----------
    n_failures : int
        Failure incidents counted (>= 0), e.g. the ``n_failures`` of
        :func:`relkit.answers.mtbf_by` with ``by=()``.
    node_hours : float
        Node-hours at risk (> 0), e.g. its ``exposure_h`` when the assets rows
        are nodes. Keyword-only, so a count and hours cannot be swapped.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the bounds, in (0, 1).
    basis : str, default "observed"
        Label of where the numbers come from.

    Returns
    -------
    NodeFailureRate
        r_f per node-day with its Garwood bounds.

    Raises
    ------
    InvalidParameterError
        If a count, exposure or level is out of range.

    References
    ----------
    .. [1] F. Garwood, "Fiducial limits for the Poisson distribution",
       Biometrika 28(3-4), 1936. doi:10.1093/biomet/28.3-4.437
    .. [2] A. Kokolis et al., HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096

    Examples
    --------
    Llama 3: 419 unexpected interruptions on 2,048 nodes in 54 days:

    >>> r = node_failure_rate(419, node_hours=2048 * 54 * 24, confidence=0.95)
    >>> f"{r.failures_per_node_day:.3e} [{r.lower:.3e}, {r.upper:.3e}]"
    '3.789e-03 [3.435e-03, 4.169e-03]'
    """
    node_days = float(node_hours) / 24.0 if isinstance(node_hours, int | float) else 0
    rate, lower, upper, _ = failure_rate_bounds(
        n_failures, exposure=node_days, confidence=confidence
    )
    return NodeFailureRate(
        n_failures=int(n_failures),
        node_days=node_days,
        failures_per_node_day=rate,
        lower=lower,
        upper=upper,
        confidence=confidence,
        basis=basis,
    )


def job_mttf_by_size(
    attempts: pl.DataFrame,
    interruptions: pl.DataFrame,
    *,
    causes: Sequence[str] = INFRA_CAUSES,
    confidence: float = DEFAULT_CONFIDENCE,
) -> pl.DataFrame:
    r"""Measure the job mean time to failure per GPU-count bucket.

    Parameters
    ----------
    attempts : pl.DataFrame
        From :func:`relkit.jobs.build_job_attempts`: ``source_id,
        job_id, attempt, start_ts, stop_ts`` (UTC), ``n_gpus``.
    interruptions : pl.DataFrame
        From :func:`relkit.jobs.build_interruptions`: ``source_id,
        job_id, attempt, cause``.
    causes : sequence of str, default ("hardware", "network", "infrastructure")
        Causes that count as a failure of the job (the default: failures of the
        infrastructure, not of the job's own code).
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the bounds, in (0, 1).

    Returns
    -------
    pl.DataFrame
        One row per bucket with at least one attempt that ran, by size:
        ``gpus_min``, ``gpus_max`` (the bucket (gpus_max/2, gpus_max], powers
        of two), ``n_attempts``, ``n_failures``, ``exposure_h`` (job-hours:
        the summed run time of the attempts, censored ones included),
        ``mttf_h`` (exposure_h / n_failures; null without a failure),
        ``mttf_lower_h``, ``mttf_upper_h`` (exact chi-square bounds,
        time-terminated), ``mttf_lower_one_sided_h``, ``confidence`` (the
        level of the bounds) and ``basis`` = ``"observed"``. Attempts with no
        GPU count are left out.

    Raises
    ------
    SchemaError
        If a column is missing.
    InvalidParameterError
        If ``confidence`` is not in (0, 1).

    Notes
    -----
    Each attempt is at risk from its start to its stop (end, or the censoring
    time of a running one); an attempt interrupted by one of ``causes`` is a
    failure. Under a constant hazard the MLE of the MTTF is the total time at
    risk over the failures, which uses the censored attempts (never the mean
    of the failed attempts' run times).

    References
    ----------
    .. [1] A. Kokolis et al., HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096 (job MTTF by size: 47.7 days at 8
       GPUs, 7.9 h at 1,024 GPUs).

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> t = lambda h: datetime(2025, 1, 1, h, tzinfo=UTC)
    >>> att = pl.DataFrame(
    ...     {
    ...         "source_id": 1,
    ...         "job_id": ["a", "b"],
    ...         "attempt": 1,
    ...         "start_ts": [t(0), t(0)],
    ...         "stop_ts": [t(10), t(20)],
    ...         "n_gpus": [8, 8],
    ...     }
    ... )
    >>> iv = pl.DataFrame(
    ...     {"source_id": [1], "job_id": ["a"], "attempt": [1], "cause": ["hardware"]}
    ... )
    >>> job_mttf_by_size(att, iv).select("gpus_max", "n_failures", "mttf_h").rows()
    [(8, 1, 30.0)]
    """
    require_columns(
        attempts,
        ["source_id", "job_id", "attempt", "start_ts", "stop_ts", "n_gpus"],
        where="job_mttf_by_size",
    )
    require_columns(
        interruptions,
        ["source_id", "job_id", "attempt", "cause"],
        where="job_mttf_by_size",
    )
    keys = ["source_id", "job_id", "attempt"]
    failed = (
        interruptions.filter(pl.col("cause").is_in(list(causes)))
        .select(keys)
        .unique()
        .with_columns(_failed=pl.lit(value=True))
    )
    ran = attempts.filter(
        pl.col("start_ts").is_not_null()
        & pl.col("stop_ts").is_not_null()
        & (pl.col("n_gpus") > 0)
    )
    exp_h = (pl.col("stop_ts") - pl.col("start_ts")).dt.total_microseconds() / 3.6e9
    bucket = (
        pl.lit(2.0).pow(pl.col("n_gpus").cast(pl.Float64).log(2).ceil()).cast(pl.Int64)
    )
    grouped = (
        ran.join(failed, on=keys, how="left")
        .with_columns(_h=exp_h, gpus_max=bucket)
        .group_by("gpus_max")
        .agg(
            n_attempts=pl.len().cast(pl.Int64),
            n_failures=pl.col("_failed").fill_null(value=False).sum().cast(pl.Int64),
            exposure_h=pl.col("_h").sum(),
        )
        .sort("gpus_max")
    )
    rows = []
    for g, n_att, n_fail, hours in grouped.select(
        "gpus_max", "n_attempts", "n_failures", "exposure_h"
    ).iter_rows():
        b = (
            mtbf_bounds(n_fail, exposure_h=hours, confidence=confidence)
            if hours > 0
            else None
        )
        rows.append(
            {
                "gpus_min": g // 2 + 1 if g > 1 else 1,
                "gpus_max": g,
                "n_attempts": n_att,
                "n_failures": n_fail,
                "exposure_h": hours,
                "mttf_h": None if b is None else b.mtbf_h,
                "mttf_lower_h": None if b is None else b.lower_h,
                "mttf_upper_h": None if b is None else b.upper_h,
                "mttf_lower_one_sided_h": None if b is None else b.lower_one_sided_h,
                "confidence": float(confidence),
                "basis": "observed",
            }
        )
    return pl.DataFrame(
        rows,
        schema={
            "gpus_min": pl.Int64,
            "gpus_max": pl.Int64,
            "n_attempts": pl.Int64,
            "n_failures": pl.Int64,
            "exposure_h": pl.Float64,
            "mttf_h": pl.Float64,
            "mttf_lower_h": pl.Float64,
            "mttf_upper_h": pl.Float64,
            "mttf_lower_one_sided_h": pl.Float64,
            "confidence": pl.Float64,
            "basis": pl.String,
        },
        orient="row",
    )
