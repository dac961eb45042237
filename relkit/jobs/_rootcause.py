"""The root-cause table of Llama 3 Table 5 and the time between interruptions.

:func:`root_cause_table` counts the interruptions in the rows of Llama 3's
Table 5 (arXiv:2407.21783), planned and unexpected apart, and
:func:`interruption_summary` gives the mean time between them.
"""

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

import polars as pl

from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.display import html_table
from relkit.errors import InvalidParameterError
from relkit.schema import require_columns
from relkit.taxonomy import FAILURE_MODES, LLAMA3_TABLE5

__all__ = ["InterruptionSummary", "interruption_summary", "root_cause_table"]

_NO_SIGNAL = {
    "infrastructure": ("Node failure, no log signal", "Unattributed"),
    "user": ("Job failure, no log signal", "Unattributed"),
    "unknown": ("Cause unknown", "Unknown"),
}


def _component(frame: pl.DataFrame) -> pl.DataFrame:
    """Add the Table 5 row (component, category) of each interruption."""
    table5 = LLAMA3_TABLE5.select(_row="component", _row_category="category")
    modes = FAILURE_MODES.select(
        "failure_mode", _row="llama3_row", _mode_component="component"
    )
    oom = pl.col("state") == "OUT_OF_MEMORY"
    requeued = (pl.col("kind") == "planned") & pl.col("failure_mode").is_null()
    no_signal = [
        pl.when(pl.col("failure_mode").is_null() & (pl.col("cause") == c)).then(
            pl.lit(v[i])
        )
        for c, v in _NO_SIGNAL.items()
        for i in (0,)
    ]
    no_signal_cat = [
        pl.when(pl.col("failure_mode").is_null() & (pl.col("cause") == c)).then(
            pl.lit(v[1])
        )
        for c, v in _NO_SIGNAL.items()
    ]
    return (
        frame.join(modes, on="failure_mode", how="left")
        .join(table5, on="_row", how="left")
        .with_columns(
            component=pl.coalesce(
                pl.col("_row"),
                pl.when(pl.col("failure_mode").is_not_null()).then(
                    pl.format(
                        "{} ({})",
                        pl.col("_mode_component").fill_null("?"),
                        "failure_mode",
                    )
                ),
                pl.when(oom).then(pl.lit("Out of memory")),
                pl.when(requeued).then(pl.lit("Requeued, no failure logged")),
                *no_signal,
                pl.format("{} ({})", "cause", "state"),
            ),
            category=pl.coalesce(
                pl.col("_row_category"),
                pl.when(pl.col("failure_mode").is_not_null()).then(
                    pl.col("cause").str.to_titlecase()
                ),
                pl.when(oom).then(pl.lit("User")),
                *no_signal_cat,
                pl.col("cause").str.to_titlecase(),
            ),
        )
    )


def _filter(
    frame: pl.DataFrame,
    job_ids: Sequence[str] | None,
    window_start: datetime | None,
    window_end: datetime | None,
    column: str,
) -> pl.DataFrame:
    if job_ids is not None:
        frame = frame.filter(pl.col("job_id").is_in(list(job_ids)))
    if window_start is not None:
        frame = frame.filter(pl.col(column) >= window_start)
    if window_end is not None:
        frame = frame.filter(pl.col(column) < window_end)
    return frame


def root_cause_table(
    interruptions: pl.DataFrame,
    *,
    job_ids: Sequence[str] | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
) -> pl.DataFrame:
    """Count interruptions by root cause in the shape of Llama 3 Table 5.

    Parameters
    ----------
    interruptions : pl.DataFrame
        From :func:`build_interruptions` (``job_id``, ``end_ts``, ``state``,
        ``cause``, ``kind``, ``failure_mode``).
    job_ids : sequence of str, optional
        Only these (logical) jobs, e.g. one training run's job ids.
    window_start, window_end : datetime, optional
        Only interruptions ending in ``[window_start, window_end)`` (UTC).

    Returns
    -------
    pl.DataFrame
        Columns ``kind`` (``unexpected``, ``planned``, ``secondary``),
        ``component``, ``category``, ``interruptions`` (Int64) and ``frac``
        (share of the interruptions of its kind, in [0, 1]; null when the kind
        has none). First the 18 rows of Table 5 in the paper's order (0 where
        none), then the other unexpected causes by count: failure modes without
        a Table 5 row (``"GPU (gpu/unknown_xid)"``), ``Out of memory``, ``Job
        failure, no log signal`` (a non-zero exit with no incident on the
        job's nodes), ``Node failure, no log signal`` (``NODE_FAIL`` or
        ``BOOT_FAIL`` with none), ``Cause unknown``; then the planned rows
        (category ``Planned``) and the secondary ones (category
        ``Secondary``). ``not_failure`` interruptions (user cancels, time
        limits, preemption) are not counted.

    Raises
    ------
    SchemaError
        If a column is missing.

    Notes
    -----
    A failure mode's row is its taxonomy ``llama3_row``
    (:data:`relkit.taxonomy.FAILURE_MODES`). Causes that leave no kernel-log
    line (software bugs, power supplies, SSDs: 130 of the paper's 419) can only
    land in the "no log signal" rows. ``frac`` is recomputed, never copied from
    the paper's printed percentages (which sum to 94.9 %).

    References
    ----------
    .. [1] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024), Table 5.

    Examples
    --------
    >>> import polars as pl
    >>> iv = pl.DataFrame(
    ...     {
    ...         "job_id": "1",
    ...         "end_ts": None,
    ...         "state": "NODE_FAIL",
    ...         "cause": ["hardware", "infrastructure"],
    ...         "kind": "unexpected",
    ...         "failure_mode": ["gpu/hbm_uncorrectable", None],
    ...     }
    ... )
    >>> root_cause_table(iv).filter(pl.col("interruptions") > 0).rows()
    ... # doctest: +NORMALIZE_WHITESPACE
    [('unexpected', 'GPU HBM3 Memory', 'GPU', 1, 0.5),
     ('unexpected', 'Node failure, no log signal', 'Unattributed', 1, 0.5)]
    """
    require_columns(
        interruptions,
        ["job_id", "end_ts", "state", "cause", "kind", "failure_mode"],
        where="root_cause_table",
    )
    frame = _filter(interruptions, job_ids, window_start, window_end, "end_ts")
    counted = _component(frame.filter(pl.col("kind") != "not_failure"))
    unexpected = counted.filter(kind="unexpected")
    by_row = unexpected.group_by("component", "category").agg(
        interruptions=pl.len().cast(pl.Int64)
    )
    paper = LLAMA3_TABLE5.select("component", "category").join(
        by_row, on=["component", "category"], how="left", maintain_order="left"
    )
    others = by_row.join(
        LLAMA3_TABLE5.select("component"), on="component", how="anti"
    ).sort("interruptions", "component", descending=[True, False])
    rows = [
        pl.concat([paper, others]).with_columns(
            kind=pl.lit("unexpected"),
            interruptions=pl.col("interruptions").fill_null(0),
        )
    ]
    for kind, label in (("planned", "Planned"), ("secondary", "Secondary")):
        part = counted.filter(kind=kind)
        if part.height:
            rows.append(
                part.group_by("component")
                .agg(interruptions=pl.len().cast(pl.Int64))
                .sort("interruptions", "component", descending=[True, False])
                .with_columns(kind=pl.lit(kind), category=pl.lit(label))
            )
    out = pl.concat(rows, how="diagonal").select(
        "kind", "component", "category", "interruptions"
    )
    total = pl.col("interruptions").sum().over("kind")
    return out.with_columns(
        frac=pl.when(total > 0).then(pl.col("interruptions") / total)
    )


@dataclass(frozen=True)
class InterruptionSummary:
    """Interruption counts and the mean time between them over a window.

    Parameters
    ----------
    n_unexpected, n_planned, n_secondary : int
        Interruptions of each kind in the window.
    window_start, window_end : datetime or None
        The window (UTC); None when there were no attempts.
    window_h : float
        Its length in hours.
    mtbi_unexpected_h : float or None
        Mean time between unexpected interruptions, ``window_h / n_unexpected``
        (None without any).
    mtbi_unexpected_lower_h, mtbi_unexpected_upper_h : float or None
        Its exact two-sided chi-square bounds (time-terminated).
    mtbi_all_h : float or None
        Mean time between planned and unexpected interruptions together.
    confidence : float
        Level of the bounds.
    """

    n_unexpected: int
    n_planned: int
    n_secondary: int
    window_start: datetime | None
    window_end: datetime | None
    window_h: float
    mtbi_unexpected_h: float | None
    mtbi_unexpected_lower_h: float | None
    mtbi_unexpected_upper_h: float | None
    mtbi_all_h: float | None
    confidence: float

    def to_dict(self) -> dict[str, Any]:
        """Return the fields as a plain dict (for JSON output).

        Returns
        -------
        dict
            Field name to value.
        """
        return asdict(self)

    def _repr_html_(self) -> str:
        """Return a small HTML table for Jupyter."""
        return html_table("Interruption summary", self.to_dict())


def interruption_summary(
    interruptions: pl.DataFrame,
    attempts: pl.DataFrame,
    *,
    job_ids: Sequence[str] | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
) -> InterruptionSummary:
    r"""Count interruptions by kind and the mean time between them.

    Parameters
    ----------
    interruptions : pl.DataFrame
        From :func:`build_interruptions`.
    attempts : pl.DataFrame
        From :func:`build_job_attempts`; their span is the default window.
    job_ids : sequence of str, optional
        Only these (logical) jobs.
    window_start, window_end : datetime, optional
        The observation window (UTC, half-open). Default: from the first
        attempt's start to the last attempt's stop (of ``job_ids``).
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the bounds, in (0, 1).

    Returns
    -------
    InterruptionSummary
        Counts, window and mean times between interruptions (hours).

    Raises
    ------
    SchemaError
        If a column is missing.
    InvalidParameterError
        If ``confidence`` is not in (0, 1), or the window is empty.

    Notes
    -----
    :math:`\mathrm{MTBI} = T / n` with exact chi-square bounds
    (:func:`relkit.metrics.mtbf_bounds`), assuming interruptions arrive as a
    Poisson process. Llama 3 (arXiv:2407.21783): 419 unexpected interruptions
    in 54 days give 3.09 h; with the 47 planned ones, 2.78 h.

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> iv = pl.DataFrame(
    ...     {
    ...         "job_id": "run",
    ...         "end_ts": [datetime(2024, 1, 2, tzinfo=UTC)],
    ...         "state": "FAILED",
    ...         "cause": "hardware",
    ...         "kind": "unexpected",
    ...         "failure_mode": "gpu/hang",
    ...     }
    ... )
    >>> att = pl.DataFrame(
    ...     {
    ...         "job_id": "run",
    ...         "start_ts": [datetime(2024, 1, 1, tzinfo=UTC)],
    ...         "stop_ts": [datetime(2024, 1, 3, tzinfo=UTC)],
    ...     }
    ... )
    >>> interruption_summary(iv, att).mtbi_unexpected_h
    48.0
    """
    from relkit.metrics import mtbf_bounds

    require_columns(
        interruptions, ["job_id", "end_ts", "kind"], where="interruption_summary"
    )
    require_columns(
        attempts, ["job_id", "start_ts", "stop_ts"], where="interruption_summary"
    )
    if job_ids is not None:
        attempts = attempts.filter(pl.col("job_id").is_in(list(job_ids)))
    start = window_start if window_start is not None else attempts["start_ts"].min()
    end = window_end if window_end is not None else attempts["stop_ts"].max()
    frame = _filter(interruptions, job_ids, window_start, window_end, "end_ts")
    counts = {
        k: frame.filter(kind=k).height for k in ("unexpected", "planned", "secondary")
    }
    if start is None or end is None:
        hours = 0.0
    else:
        hours = (end - start).total_seconds() / 3600.0  # type: ignore[operator]
    if hours < 0:
        msg = f"interruption_summary: the window [{start}, {end}) is empty."
        raise InvalidParameterError(msg)
    n = counts["unexpected"]
    n_all = n + counts["planned"]
    mtbi = lower = upper = None
    if hours > 0 and n > 0:
        b = mtbf_bounds(n, exposure_h=hours, confidence=confidence)
        mtbi, lower, upper = b.mtbf_h, b.lower_h, b.upper_h
    return InterruptionSummary(
        n_unexpected=n,
        n_planned=counts["planned"],
        n_secondary=counts["secondary"],
        window_start=start,  # type: ignore[arg-type]
        window_end=end,  # type: ignore[arg-type]
        window_h=hours,
        mtbi_unexpected_h=mtbi,
        mtbi_unexpected_lower_h=lower,
        mtbi_unexpected_upper_h=upper,
        mtbi_all_h=hours / n_all if hours > 0 and n_all else None,
        confidence=confidence,
    )
