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

from relkit.errors import InvalidParameterError
from relkit.schema import require_columns

__all__ = [
    "PUBLISHED_ETTR_POINTS",
    "acmetrace_failure_share",
    "check_table",
    "failure_share",
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
