r"""Check published reliability tables, and compare failure shares by count and time.

Published tables get typed in, rounded and summarised by hand; a tool should
flag what does not add up rather than copy it. :func:`check_table` checks a
root-cause table (rows of component, category, count and printed percentage,
like Llama 3's Table 5) for internal consistency; :func:`failure_share`
contrasts the share of jobs that failed by count with their share of GPU time,
from job attempts; :func:`acmetrace_failure_share` reads the same contrast out
of the AcmeTrace cluster summary (Hu et al., NSDI 2024).
:data:`PUBLISHED_ETTR_POINTS` holds the effective-training-time ratios papers
print, for charts to overlay on modelled curves.
"""

import math

import polars as pl

from relkit import datasets
from relkit.errors import InvalidParameterError
from relkit.metrics import failure_rate_bounds
from relkit.schema import require_columns

__all__ = [
    "PUBLISHED_ETTR_POINTS",
    "acmetrace_failure_share",
    "check_table",
    "failure_share",
    "published_mttf_points",
    "published_node_failure_rates",
]

_LLAMA3 = "Llama 3 (Dubey et al., arXiv:2407.21783)"
_KOKOLIS = "Kokolis et al., HPCA 2025 (arXiv:2410.21680)"
_RSC1 = (
    "RSC-1 whole-cluster example of the expected-ETTR model: r_f = 6.50 failures "
    "per 1000 node-days, restart overhead u0 = 5 min, checkpoint write w ~ 0, "
)

#: ETTR values printed in papers, one row per value: ``source`` (paper and
#: arXiv id), ``gpus`` (Int64, GPUs of the job), ``ettr`` (Float64, fraction as
#: printed), ``kind`` ("observed, lower bound": a measured floor; "model": the
#: paper's expected-ETTR model) and ``note`` (the conditions, quoting the
#: paper). Only printed numbers: Llama 3 §3.3.4 reports "higher than 90%
#: effective training time" (useful training time over elapsed time) for the
#: 54-day snapshot of 405B pre-training on 16,384 H100 GPUs; Kokolis et al.
#: print ETTR "0.7" at a 60 min and "0.93" at a 5 min checkpoint interval for
#: 16,000 GPUs on RSC-1 (the first-order model gives 0.684 and 0.9323; see
#: :func:`relkit.checkpoint.expected_ettr`). Overlay with
#: :func:`relkit.charts.ettr_scale_chart`.
PUBLISHED_ETTR_POINTS = pl.DataFrame(
    [
        (
            _LLAMA3,
            16384,
            0.90,
            "observed, lower bound",
            '"higher than 90% effective training time" during the 54-day '
            "snapshot of Llama 3 405B pre-training on 16,384 H100 GPUs "
            "(section 3.3.4)",
        ),
        (_KOKOLIS, 16000, 0.7, "model", _RSC1 + 'interval 60 min: ETTR "0.7"'),
        (_KOKOLIS, 16000, 0.93, "model", _RSC1 + 'interval 5 min: ETTR "0.93"'),
    ],
    schema={
        "source": pl.String,
        "gpus": pl.Int64,
        "ettr": pl.Float64,
        "kind": pl.String,
        "note": pl.String,
    },
    orient="row",
)

#: Columns of :func:`check_table`'s result.
FINDING_COLUMNS = (
    "check",
    "subject",
    "printed_pct",
    "recomputed_pct",
    "difference_pct",
    "consistent",
    "note",
)


def check_table(table: pl.DataFrame, *, rounding_pct: float = 0.05) -> pl.DataFrame:
    r"""Check a published root-cause table for internal consistency.

    Parameters
    ----------
    table : pl.DataFrame
        From :func:`relkit.ingest.read_paper_table`: ``component``,
        ``category`` (String), ``interruption_count`` (Int64) and
        ``pct_printed`` (Float64, percent as printed; null where none).
    rounding_pct : float, default 0.05
        Half of the printed precision, in percentage points (0.05 for one
        decimal): a printed value within this of the recomputed one is
        consistent. Sums allow it once per row summed.

    Returns
    -------
    pl.DataFrame
        One row per check, columns :data:`FINDING_COLUMNS`:

        - ``check="total"``: the printed percentages' sum against 100 %;
        - ``check="row"``: each row's printed percentage against
          count / total × 100 (subject: the component);
        - ``check="category"``: each category's share by count against the
          sum of its printed percentages (subject: the category);
        - ``check="duplicate"``: a component on more than one row (typed
          twice?), never consistent; its percentages are null.

        ``printed_pct`` and ``recomputed_pct`` are percent;
        ``difference_pct`` = printed − recomputed; ``consistent`` is True
        within the rounding allowance; ``note`` says what disagrees, in words.

    Raises
    ------
    SchemaError
        If a column is missing.
    InvalidParameterError
        If the counts add to 0, ``rounding_pct`` is negative, or a printed
        percentage is not a finite number (NaN, inf); the message names the
        rows.

    Notes
    -----
    For row i with count :math:`n_i` and total :math:`N = \sum n_i`, the
    recomputed share is :math:`100\,n_i/N`; a row is consistent when
    :math:`|p_i - 100 n_i / N| \le` ``rounding_pct``; a sum of k printed values
    when it is within k × ``rounding_pct``. On Llama 3's Table 5 this flags
    Faulty GPU (printed 30.1 %, 148/419 = 35.3 %), the printed total (94.9 %)
    and the GPU category (58.7 % printed, 268/419 = 64.0 % by count).

    References
    ----------
    .. [1] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024), Table 5.

    Examples
    --------
    >>> import polars as pl
    >>> t = pl.DataFrame(
    ...     {
    ...         "component": ["a", "b"],
    ...         "category": ["X", "X"],
    ...         "interruption_count": [3, 1],
    ...         "pct_printed": [70.0, 25.0],
    ...     }
    ... )
    >>> check_table(t).select("check", "subject", "consistent").rows()
    [('total', 'all rows', False), ('row', 'a', False), ('row', 'b', True),
     ('category', 'X', False)]
    """
    require_columns(
        table,
        ["component", "category", "interruption_count", "pct_printed"],
        where="check_table",
    )
    if rounding_pct < 0:
        msg = f"rounding_pct must be >= 0; got {rounding_pct!r}."
        raise InvalidParameterError(msg)
    pct = table["pct_printed"].cast(pl.Float64)
    if bad := [
        (row["component"], row.get("line_no"), row["pct_printed"])
        for row, p in zip(table.iter_rows(named=True), pct, strict=True)
        if p is not None and not math.isfinite(p)
    ]:
        where = ", ".join(
            f"{comp!r}" + (f" (line {line})" if line is not None else "")
            for comp, line, _ in bad[:5]
        )
        msg = (
            f"check_table: the printed percentage of {where} is {bad[0][2]!r}, not "
            "a finite number; type the value as printed (e.g. 30.1), or leave the "
            "cell empty where the table prints none."
        )
        raise InvalidParameterError(msg)
    total = int(table["interruption_count"].sum())
    if total <= 0:
        msg = "check_table: the counts add to 0; nothing to check."
        raise InvalidParameterError(msg)
    findings: list[dict[str, object]] = []

    def add(
        check: str, subject: str, printed: float, recomputed: float, k: int, what: str
    ) -> None:
        diff = printed - recomputed
        ok = abs(diff) <= k * rounding_pct + 1e-9
        note = "consistent within rounding" if ok else what
        findings.append(
            {
                "check": check,
                "subject": subject,
                "printed_pct": printed,
                "recomputed_pct": recomputed,
                "difference_pct": diff,
                "consistent": ok,
                "note": note,
            }
        )

    printed = table.filter(pl.col("pct_printed").is_not_null())
    add(
        "total",
        "all rows",
        float(printed["pct_printed"].sum()),
        100.0 * printed["interruption_count"].sum() / total,
        printed.height,
        f"the printed percentages add to {printed['pct_printed'].sum():.1f} %, "
        "not 100 %",
    )
    for comp, count, pct in printed.select(
        "component", "interruption_count", "pct_printed"
    ).iter_rows():
        add(
            "row",
            comp,
            pct,
            100.0 * count / total,
            1,
            f"{comp} is {count} of {total} = {100.0 * count / total:.1f} %, "
            f"printed {pct:.1f} %",
        )
    cats = (
        table.group_by("category", maintain_order=True)
        .agg(
            n=pl.col("interruption_count").sum(),
            p=pl.col("pct_printed").sum(),
            k=pl.col("pct_printed").is_not_null().sum(),
        )
        .filter(pl.col("k") > 0)
    )
    for cat, n, p, k in cats.select("category", "n", "p", "k").iter_rows():
        add(
            "category",
            cat,
            p,
            100.0 * n / total,
            k,
            f"{cat}'s share by count is {n}/{total} = {100.0 * n / total:.1f} %, "
            f"its printed rows add to {p:.1f} %",
        )
    key = pl.col("component").str.strip_chars().str.to_lowercase()
    lines = (
        pl.col("line_no").cast(pl.String)
        if "line_no" in table.columns
        else (pl.int_range(pl.len()) + 1).cast(pl.String)
    )
    dups = (
        table.with_columns(_key=key, _line=lines)
        .group_by("_key", maintain_order=True)
        .agg(pl.col("component").first(), n=pl.len(), where=pl.col("_line"))
        .filter(pl.col("n") > 1)
    )
    unit = "lines" if "line_no" in table.columns else "rows"
    for comp, n, where in dups.select("component", "n", "where").iter_rows():
        findings.append(
            {
                "check": "duplicate",
                "subject": comp,
                "printed_pct": None,
                "recomputed_pct": None,
                "difference_pct": None,
                "consistent": False,
                "note": f"{comp} is on {n} rows ({unit} {', '.join(where)}): "
                "typed twice? Both counts are in the total",
            }
        )
    return pl.DataFrame(
        findings,
        schema={
            "check": pl.String,
            "subject": pl.String,
            "printed_pct": pl.Float64,
            "recomputed_pct": pl.Float64,
            "difference_pct": pl.Float64,
            "consistent": pl.Boolean,
            "note": pl.String,
        },
        orient="row",
    )


def failure_share(attempts: pl.DataFrame, *, by: str | None = None) -> pl.DataFrame:
    r"""Compare the share of job attempts that failed by count and by GPU time.

    Parameters
    ----------
    attempts : pl.DataFrame
        From :func:`relkit.jobs.build_job_attempts`: ``state``,
        ``start_ts``, ``stop_ts`` (UTC), ``n_gpus``, and ``by`` if given.
    by : str, optional
        Group column, e.g. ``"partition"``.

    Returns
    -------
    pl.DataFrame
        Per group (sorted): ``n_attempts`` (attempts that ran and ended),
        ``gpu_h`` (their GPU-hours), then for ``completed``, ``cancelled``
        and ``failed`` the share by count (``<x>_frac``) and by GPU time
        (``<x>_gpu_time_frac``), in [0, 1]. Failed is every other end state
        (``FAILED``, ``NODE_FAIL``, ``OUT_OF_MEMORY``, ``TIMEOUT``, ...), as in
        AcmeTrace.

    Raises
    ------
    SchemaError
        If a column is missing.

    Notes
    -----
    Many short jobs fail and few long ones: the failed share by count can be
    far above the failed share of GPU time (AcmeTrace's Seren: 42.9 % of GPU
    jobs, 12.4 % of their GPU time).

    References
    ----------
    .. [1] Q. Hu et al., "Characterization of Large Language Model Development
       in the Datacenter", NSDI 2024 (AcmeTrace).

    Examples
    --------
    >>> from datetime import datetime, UTC
    >>> import polars as pl
    >>> t = lambda h: datetime(2025, 1, 1, h, tzinfo=UTC)
    >>> att = pl.DataFrame(
    ...     {
    ...         "state": ["FAILED", "COMPLETED"],
    ...         "start_ts": [t(0), t(0)],
    ...         "stop_ts": [t(1), t(9)],
    ...         "n_gpus": [8, 8],
    ...     }
    ... )
    >>> failure_share(att).select("failed_frac", "failed_gpu_time_frac").rows()
    [(0.5, 0.1)]
    """
    cols = ["state", "start_ts", "stop_ts", "n_gpus"]
    require_columns(attempts, [*cols, *([by] if by else [])], where="failure_share")
    from relkit.taxonomy import OPEN_STATES

    ran = attempts.filter(
        pl.col("start_ts").is_not_null()
        & pl.col("stop_ts").is_not_null()
        & ~pl.col("state").is_in(OPEN_STATES)
    ).with_columns(
        _gpu_h=(pl.col("stop_ts") - pl.col("start_ts")).dt.total_microseconds()
        / 3.6e9
        * pl.col("n_gpus"),
        _end=pl.when(pl.col("state") == "COMPLETED")
        .then(pl.lit("completed"))
        .when(pl.col("state") == "CANCELLED")
        .then(pl.lit("cancelled"))
        .otherwise(pl.lit("failed")),
    )
    keys = [by] if by else []
    aggs = [
        pl.len().cast(pl.Int64).alias("n_attempts"),
        pl.col("_gpu_h").sum().alias("gpu_h"),
    ]
    for end in ("completed", "cancelled", "failed"):
        is_end = pl.col("_end") == end
        aggs += [
            is_end.mean().alias(f"{end}_frac"),
            (pl.col("_gpu_h").filter(is_end).sum() / pl.col("_gpu_h").sum()).alias(
                f"{end}_gpu_time_frac"
            ),
        ]
    if keys:
        return ran.group_by(keys).agg(aggs).sort(keys, nulls_last=True)
    return ran.select(aggs)


def acmetrace_failure_share(summary: pl.DataFrame) -> pl.DataFrame:
    r"""Read the failure share by count and by GPU time out of AcmeTrace's summary.

    Parameters
    ----------
    summary : pl.DataFrame
        AcmeTrace ``cluster_summary.csv`` (Hu et al., NSDI 2024) as read by
        ``pl.read_csv``: columns ``id``, ``gpu_job_num``, ``fail_rate_gpu``,
        ``fail_rate_gpu_time``, ``complete_gpu_time``, ``cancel_gpu_time``,
        ``fail_gpu_time`` (GPU-seconds).

    Returns
    -------
    pl.DataFrame
        One row per cluster, in file order: ``cluster``, ``gpu_jobs``,
        ``failed_frac`` (share of GPU jobs that failed), ``failed_gpu_time_frac``
        (share of GPU time in failed jobs, as published),
        ``failed_gpu_time_frac_recomputed`` (fail / (complete + cancel + fail)
        GPU time) and ``count_over_time`` (``failed_frac`` /
        ``failed_gpu_time_frac``). Nulls where the summary has none (PAI).

    Raises
    ------
    SchemaError
        If a column is missing.

    References
    ----------
    .. [1] Q. Hu et al., "Characterization of Large Language Model Development
       in the Datacenter", NSDI 2024. Data: InternLM/AcmeTrace, CC BY 4.0.

    Examples
    --------
    >>> import relkit
    >>> s = pl.read_csv(relkit.datasets.path("acmetrace"))
    >>> acmetrace_failure_share(s).select(
    ...     "cluster", "failed_frac", "failed_gpu_time_frac"
    ... ).row(0)
    ('Seren', 0.429, 0.124)
    """
    require_columns(
        summary,
        [
            "id",
            "gpu_job_num",
            "fail_rate_gpu",
            "fail_rate_gpu_time",
            "complete_gpu_time",
            "cancel_gpu_time",
            "fail_gpu_time",
        ],
        where="acmetrace_failure_share",
    )
    num = [
        pl.col(c).cast(pl.Float64, strict=False)
        for c in (
            "fail_rate_gpu",
            "fail_rate_gpu_time",
            "complete_gpu_time",
            "cancel_gpu_time",
            "fail_gpu_time",
        )
    ]
    s = summary.with_columns(num)
    time_sum = (
        pl.col("complete_gpu_time")
        + pl.col("cancel_gpu_time")
        + pl.col("fail_gpu_time")
    )
    return s.select(
        cluster=pl.col("id").cast(pl.String),
        gpu_jobs=pl.col("gpu_job_num").cast(pl.Int64, strict=False),
        failed_frac=pl.col("fail_rate_gpu"),
        failed_gpu_time_frac=pl.col("fail_rate_gpu_time"),
        failed_gpu_time_frac_recomputed=pl.col("fail_gpu_time") / time_sum,
        count_over_time=pl.col("fail_rate_gpu") / pl.col("fail_rate_gpu_time"),
    )


#: Llama 3's 54-day snapshot of 405B pre-training (Dubey et al.,
#: arXiv:2407.21783, §3.3.4): its GPUs, nodes (8 GPUs each) and days; the
#: interruptions are the Table 5 rows' counts (``datasets.path("llama3_table5")``).
_LLAMA3_GPUS, _LLAMA3_DAYS = 16_384, 54
#: Kokolis et al.'s job-MTTF rows (metric -> GPUs) in ``datasets.path("kokolis_rsc")``.
_KOKOLIS_MTTF_ROWS = {
    "job_mttf_8_gpus": 8,
    "job_mttf_1024_gpus": 1024,
    "job_mttf_16384_gpus": 16384,
    "job_mttf_131072_gpus": 131072,
}
_HOURS_PER = {"hours": 1.0, "days": 24.0}


def _llama3_interruptions() -> int:
    return int(pl.read_csv(datasets.path("llama3_table5"))["interruption_count"].sum())


def published_mttf_points() -> pl.DataFrame:
    """Read the job MTTFs papers print, from the bundled paper tables.

    Returns
    -------
    pl.DataFrame
        ``source``, ``gpus`` (Int64), ``mttf_h`` (hours), ``kind``
        ("observed" or "projected") and ``note``, sorted by ``gpus``: Kokolis
        et al.'s job MTTF at 8 GPUs (47.7 days) and 1,024 GPUs (7.9 h),
        observed on Meta's RSC, and their projections at 16,384 (1.8 h) and
        131,072 GPUs (0.23 h) from RSC-1's 6.50 failures per 1000 node-days;
        Llama 3's 16,384-GPU run, interrupted 419 times unexpectedly in 54
        days (the sum of Table 5's counts): one every 54 × 24 / 419 = 3.09 h.
        Overlay with :func:`relkit.charts.mttf_scale_chart`.

    References
    ----------
    .. [1] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine
       Learning Research Clusters", HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096
    .. [2] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024), §3.3.4 and Table 5.

    Examples
    --------
    >>> points = published_mttf_points()
    >>> points.filter(pl.col("source").str.starts_with("Llama"))["mttf_h"].round(2)[0]
    3.09
    """
    kokolis = pl.read_csv(datasets.path("kokolis_rsc"))
    rows = [
        {
            "source": _KOKOLIS,
            "gpus": _KOKOLIS_MTTF_ROWS[r["metric"]],
            "mttf_h": float(r["value"]) * _HOURS_PER[r["unit"]],
            "kind": r["kind"],
            "note": f"{r['cluster']}: {r['value']:g} {r['unit']}"
            + (f" ({r['note']})" if r["note"] else ""),
        }
        for r in kokolis.filter(
            pl.col("metric").is_in(list(_KOKOLIS_MTTF_ROWS))
        ).iter_rows(named=True)
    ]
    n = _llama3_interruptions()
    rows.append(
        {
            "source": _LLAMA3,
            "gpus": _LLAMA3_GPUS,
            "mttf_h": _LLAMA3_DAYS * 24.0 / n,
            "kind": "observed",
            "note": f"{n} unexpected interruptions of the 405B pre-training on "
            f"{_LLAMA3_GPUS:,} H100 GPUs in {_LLAMA3_DAYS} days (Table 5)",
        }
    )
    return pl.DataFrame(
        rows,
        schema={
            "source": pl.String,
            "gpus": pl.Int64,
            "mttf_h": pl.Float64,
            "kind": pl.String,
            "note": pl.String,
        },
    ).sort("gpus", "source")


def published_node_failure_rates(*, confidence: float | None = None) -> pl.DataFrame:
    """Node failure rates papers print or imply, per node-day and per 1000 node-days.

    Parameters
    ----------
    confidence : float, optional
        Two-sided level of the Llama 3 rate's exact Poisson bounds; default
        :data:`relkit.defaults.DEFAULT_CONFIDENCE`. Kokolis et al. print no
        bounds, so their rows have null bounds.

    Returns
    -------
    pl.DataFrame
        ``source``, ``cluster``, ``failures_per_node_day``, ``lower``,
        ``upper`` (per node-day), ``failures_per_1000_node_days``,
        ``confidence`` and ``note``: RSC-1 (6.50) and RSC-2 (2.34 failures per
        1000 node-days, Kokolis et al.), and Llama 3's unexpected
        interruptions per node-day, 419 / (2,048 nodes × 54 days) = 3.79 per
        1000 node-days, with Garwood (1936) bounds.

    References
    ----------
    .. [1] A. Kokolis et al., HPCA 2025. arXiv:2410.21680,
       doi:10.1109/HPCA61900.2025.00096
    .. [2] Llama Team, AI @ Meta, arXiv:2407.21783 (2024), Table 5.
    .. [3] F. Garwood, Biometrika 28 (1936) 437-442, doi:10.1093/biomet/28.3-4.437

    Examples
    --------
    >>> rates = published_node_failure_rates()
    >>> rates["failures_per_1000_node_days"].round(2).to_list()
    [6.5, 2.34, 3.79]
    """
    from relkit.defaults import DEFAULT_CONFIDENCE

    level = DEFAULT_CONFIDENCE if confidence is None else confidence
    kokolis = pl.read_csv(datasets.path("kokolis_rsc")).filter(
        metric="node_failure_rate"
    )
    rows = [
        {
            "source": _KOKOLIS,
            "cluster": r["cluster"],
            "failures_per_node_day": float(r["value"]) / 1000.0,
            "lower": None,
            "upper": None,
            "note": f"printed: {r['value']:g} {r['unit']}",
        }
        for r in kokolis.iter_rows(named=True)
    ]
    n = _llama3_interruptions()
    node_days = _LLAMA3_GPUS / 8 * _LLAMA3_DAYS
    bounds = failure_rate_bounds(n, exposure=node_days, confidence=level)
    rows.append(
        {
            "source": _LLAMA3,
            "cluster": f"{_LLAMA3_GPUS:,} H100 GPUs",
            "failures_per_node_day": n / node_days,
            "lower": bounds.lower,
            "upper": bounds.upper,
            "note": f"{n} unexpected interruptions / ({_LLAMA3_GPUS // 8:,} nodes "
            f"× {_LLAMA3_DAYS} days)",
        }
    )
    frame = pl.DataFrame(
        rows,
        schema={
            "source": pl.String,
            "cluster": pl.String,
            "failures_per_node_day": pl.Float64,
            "lower": pl.Float64,
            "upper": pl.Float64,
            "note": pl.String,
        },
    )
    return frame.with_columns(
        failures_per_1000_node_days=pl.col("failures_per_node_day") * 1000.0,
        confidence=pl.when(pl.col("lower").is_not_null()).then(pl.lit(level)),
    ).select(
        "source",
        "cluster",
        "failures_per_node_day",
        "lower",
        "upper",
        "failures_per_1000_node_days",
        "confidence",
        "note",
    )
