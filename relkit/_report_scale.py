"""The report's scale section: a job's MTTF and ETTR against its GPU count (private).

Used by :mod:`relkit.report`. The store's measured node failure rate (every
counted failure incident over the node-hours at risk, with exact Poisson
bounds) is projected to jobs of 1,024 to 131,072 GPUs with Kokolis et al.'s
series model, MTTF(N) = 1/(N_nodes r_f), beside the values papers print and the
job MTTFs measured on the store's own jobs.
"""

import html
import warnings

import polars as pl

from relkit import _html, answers, charts, checkpoint
from relkit._report_common import ReportContext, Sections
from relkit.errors import RelkitError, RelkitWarning
from relkit.published import PUBLISHED_ETTR_POINTS, published_mttf_points
from relkit.scale import job_mttf_by_size, node_failure_rate, scale_projection

__all__ = ["SCALE_GPUS", "ettr_sweep", "scale_sections"]

#: Job sizes of the section, GPUs: 1,024 to 131,072 (powers of two).
SCALE_GPUS = tuple(2**k for k in range(10, 18))

#: Llama 3's 54-day snapshot of 405B pre-training (Dubey et al.,
#: arXiv:2407.21783, §3.3.4): its GPUs.
_LLAMA3_GPUS = 16_384


def _gpus_per_node(st: dict[str, pl.DataFrame]) -> tuple[int | None, str]:
    """Return GPUs per node from the assets (gpus, or GPU rows) or the jobs."""
    assets = st["assets"]
    if assets.height:
        nodes = assets.filter(pl.col("device").is_null() & (pl.col("gpus") > 0))
        if nodes.height:
            g = int(nodes["gpus"].median())  # type: ignore[arg-type]
            return g, f"{g} GPUs per node (median of the assets' gpus)"
        devices = assets.filter(pl.col("device").is_not_null())
        if devices.height:
            per = devices.group_by("host").agg(n=pl.col("device").n_unique())
            g = int(per["n"].median())  # type: ignore[arg-type]
            return g, f"{g} GPUs per node (median of the assets' GPUs per host)"
    jobs = st.get("jobs")
    if jobs is not None and jobs.height:
        sized = jobs.filter((pl.col("n_gpus") > 0) & (pl.col("n_nodes") > 0))
        if sized.height:
            g = round(float((sized["n_gpus"] / sized["n_nodes"]).median()))  # type: ignore[arg-type]
            if g >= 1:
                return g, f"{g} GPUs per node (median of the jobs' n_gpus / n_nodes)"
    return None, ""


def _hours(value: float | None) -> str:
    if value is None:
        return "n/a"
    if value >= 48:
        return f"{value:,.0f} h ({value / 24:,.1f} days)"
    return f"{value:#.3g} h" if value >= 1 else f"{value * 60:#.3g} min"


def ettr_sweep(
    rate: float,
    lower: float,
    upper: float,
    *,
    cost_h: float,
    restart_h: float,
    gpus_per_node: int,
) -> pl.DataFrame:
    """Tabulate the ETTR at the optimal interval per job size, rate and bounds.

    Parameters
    ----------
    rate, lower, upper : float
        Failures per node-day and its bounds.
    cost_h, restart_h : float
        Checkpoint write and restart, hours.
    gpus_per_node : int
        GPUs per node.

    Returns
    -------
    polars.DataFrame
        ``gpus, interval_h, expected_ettr_lower, expected_ettr,
        expected_ettr_upper, first_order_load`` from
        :func:`relkit.checkpoint.whatif` (Kokolis et al. 2025,
        arXiv:2410.21680) per size of :data:`SCALE_GPUS`. Where the
        first-order load reaches 1 no interval works: ``interval_h`` and the
        ETTR are null, not 0.
    """
    out = None
    for name, r in (
        ("expected_ettr", rate),
        ("expected_ettr_lower", upper),
        ("expected_ettr_upper", lower),
    ):
        table = checkpoint.whatif(
            gpus=list(SCALE_GPUS),
            failures_per_node_day=r,
            restart_h=restart_h,
            cost_h=cost_h,
            gpus_per_node=gpus_per_node,
        )
        if out is None:
            out = table.select(
                "gpus",
                "interval_h",
                pl.col("expected_ettr"),
                "first_order_load",
            )
        else:
            out = out.join(
                table.select("gpus", pl.col("expected_ettr").alias(name)), on="gpus"
            )
    assert out is not None
    # no interval works where the first-order load reaches 1 (a failure is
    # expected before a checkpoint and restart complete): null, not 0
    works = (pl.col("first_order_load") < 1) & (pl.col("expected_ettr") > 0)
    out = out.with_columns(
        interval_h=pl.when(works).then("interval_h"),
        **{
            c: pl.when(pl.col(c) > 0).then(c)
            for c in ("expected_ettr", "expected_ettr_lower", "expected_ettr_upper")
        },
    )
    return out.select(
        "gpus",
        "interval_h",
        "expected_ettr_lower",
        "expected_ettr",
        "expected_ettr_upper",
        "first_order_load",
    )


def _observed_jobs(ctx: ReportContext) -> pl.DataFrame | None:
    """Measure the job MTTF by size on the store's jobs (None without jobs)."""
    st = ctx.st
    jobs = st.get("jobs")
    if jobs is None or jobs.height == 0 or "job_nodes" not in st:
        return None
    from relkit.jobs import build_job_attempts, job_interruptions

    ctx.progress("job MTTF by size, measured on the store's jobs")
    interruptions = ctx.tables.get("interruptions")  # the interruption section's
    if interruptions is None:
        attempts, interruptions = job_interruptions(
            jobs,
            st["job_nodes"],
            st["events"],
            end_of_log=answers.log_end(st["sources"]),
            failure_modes=st.get("failure_modes"),
        )
    else:
        attempts = build_job_attempts(jobs, st["job_nodes"])
    measured = job_mttf_by_size(
        attempts, interruptions, confidence=ctx.assumptions.confidence
    )
    return measured if measured.height else None


def _section(ctx: ReportContext) -> Sections:
    st, a = ctx.st, ctx.assumptions
    gpus_per_node, gpus_said = _gpus_per_node(st)
    if gpus_per_node is None:
        return (
            "the store records no GPU count (assets.gpus or jobs.n_gpus), so "
            "failures cannot be scaled to jobs of N GPUs: ingest an assets table "
            "with a gpus column, or the scheduler's job records"
        )
    ctx.progress("node failure rate and its projection to 131,072 GPUs")
    overall = answers.mtbf_of(ctx.obs, confidence=a.confidence, unit="node").row(
        0, named=True
    )
    n, hours = int(overall["n_failures"]), float(overall["exposure_h"] or 0.0)
    if hours <= 0:
        return (
            "no node-hours at risk in the store, so there is no failure rate to "
            "project to larger jobs: ingest the whole logs, or an assets table "
            "with the units' service windows"
        )
    if n == 0:
        return (
            f"no failure counted in {hours:,.0f} node-hours, so there is no "
            "failure rate to project to larger jobs"
        )
    rate = node_failure_rate(n, node_hours=hours, confidence=a.confidence)
    r, lo, hi = rate.failures_per_node_day, rate.lower, rate.upper
    projection = scale_projection(
        gpus=list(SCALE_GPUS),
        failures_per_node_day=r,
        gpus_per_node=gpus_per_node,
        rate_lower=lo,
        rate_upper=hi,
    )
    sweep = ettr_sweep(
        r,
        lo,
        hi,
        cost_h=a.cost_h,
        restart_h=a.restart_h,
        gpus_per_node=gpus_per_node,
    )
    table = projection.join(sweep, on="gpus").drop("basis")
    ctx.tables["scale_projection"] = table
    per_gpu = r / gpus_per_node
    observed = _observed_jobs(ctx)
    published = published_mttf_points()
    ctx.tables["published_mttf"] = published
    at = projection.filter(pl.col("gpus") == _LLAMA3_GPUS).row(0, named=True)
    llama = published.filter(pl.col("source").str.starts_with("Llama 3")).row(
        0, named=True
    )
    overloaded = table.filter(pl.col("first_order_load") > 0.1)
    parts = [
        f"<p>Measured on this store: {n:,} failure incidents in "
        f"{hours:,.0f} node-hours ({overall['exposure_basis']}), r_f = "
        f"{rate.per_1000_node_days:,.3g} failures per 1000 node-days "
        f"({1000 * lo:,.3g}–{1000 * hi:,.3g} at {a.confidence:.0%}, exact Poisson; "
        f"Garwood 1936, doi:10.1093/biomet/28.3-4.437); with {gpus_said}, "
        f"{1000 * per_gpu:,.3g} per 1000 GPU-days. A job of N GPUs is "
        "interrupted by any of its nodes' failures: MTTF(N) = 24 / (N_nodes "
        "r_f) hours (Kokolis et al., HPCA 2025, arXiv:2410.21680), a projection "
        "that assumes independent nodes with a constant rate. At "
        f"{_LLAMA3_GPUS:,} GPUs that is one interruption every "
        f"{_hours(at['mttf_h'])} ({_hours(at['mttf_lower_h'])}–"
        f"{_hours(at['mttf_upper_h'])}); Llama 3 reported one every "
        f"{_hours(llama['mttf_h'])} at that size.</p>",
        ctx.chart(
            charts.mttf_scale_chart(
                projection,
                observed=None
                if observed is None
                else observed.rename({"gpus_max": "gpus"}).select(
                    "gpus", "mttf_h", "mttf_lower_h", "mttf_upper_h"
                ),
                published=published,
                title="Mean time to failure of a job against its size",
            ),
            "mttf-scale",
        ),
    ]
    if observed is not None:
        ctx.tables["job_mttf_by_size"] = observed
        parts.append(
            "<p>Measured job MTTF per size bucket (GPUs in (max/2, max]): "
            "job-hours at risk over interruptions attributed to hardware, "
            "network or infrastructure, exact bounds. Small jobs need not fall "
            "on the projection: a job shares its nodes' failures only while it "
            "runs.</p>"
            + _html.table_html(
                observed.select(
                    "gpus_min",
                    "gpus_max",
                    "n_attempts",
                    "n_failures",
                    "exposure_h",
                    "mttf_h",
                    "mttf_lower_h",
                    "mttf_upper_h",
                )
            )
        )
    parts.append(
        f"<p>Expected ETTR at each size's optimal checkpoint interval, with the "
        f"assumed {a.cost_h * 60:,.3g} min checkpoint write and "
        f"{a.restart_h * 60:,.3g} min restart (Kokolis et al.'s first-order "
        "model, E[ETTR] ≈ (1 − λ(u0 + Δt/2)) / (1 + w/Δt)); the band is the "
        "rate's bounds. Published ETTRs for comparison.</p>"
        + ctx.chart(
            charts.ettr_scale_chart(
                sweep,
                published=PUBLISHED_ETTR_POINTS,
                title="Expected ETTR against the job's size at this fleet's "
                "failure rate",
            ),
            "ettr-scale-fleet",
        )
        + _html.table_html(table)
    )
    hopeless = table.filter(pl.col("interval_h").is_null())
    if hopeless.height:
        parts.append(
            f"<p>From {int(hopeless['gpus'].min()):,} GPUs no checkpoint interval "
            "works: the first-order load λ(u0 + Δt/2) reaches 1, a failure is "
            "expected before a checkpoint and a restart complete, so the "
            "interval and the ETTR are left empty (not 0).</p>"
        )
    if overloaded.height:
        parts.append(
            f"<p>From {int(overloaded['gpus'].min()):,} GPUs the first-order "
            "load λ(u0 + Δt/2) is above 0.1, where the model is only "
            "approximate and optimistic (Daly 2006, "
            "doi:10.1016/j.future.2004.11.016).</p>"
        )
    return [("Scale: MTTF and ETTR against GPU count", "".join(parts))]


def scale_sections(ctx: ReportContext) -> Sections:
    """Build the report's section on MTTF and ETTR against the job's GPU count.

    Parameters
    ----------
    ctx : ReportContext
        The report's context: ``ctx.obs`` (failures and node-hours at risk),
        ``ctx.st["assets"]`` (``gpus``) or ``ctx.st["jobs"]`` (``n_gpus``,
        ``n_nodes``) for the GPUs per node, and where the store has jobs,
        ``jobs``, ``job_nodes``, ``events`` and ``sources`` for the job MTTF
        measured per size. ``ctx.assumptions`` gives the confidence level and
        the checkpoint write and restart times. Adds the CSV tables
        ``scale_projection``, ``published_mttf`` and ``job_mttf_by_size``.

    Returns
    -------
    list of (str, str) or str
        One section, "Scale: MTTF and ETTR against GPU count" (the measured
        node rate with exact bounds; MTTF against 1,024 to 131,072 GPUs with
        bounds, the store's measured job MTTFs and the published values;
        expected ETTR against GPUs with the published ETTRs); or the reason it
        is left out: no GPU count, no time at risk, or no failure counted.

    Notes
    -----
    r_f = failures / node-days with Garwood's exact Poisson bounds
    (:func:`relkit.scale.node_failure_rate`); MTTF(N) = 24 / (N_nodes r_f)
    hours, N_nodes = ceil(N / GPUs per node), so with 8 GPUs per node the MTTF
    at 16,384 GPUs is 1 / (16,384 × the per-GPU rate) days
    (:func:`relkit.scale.scale_projection`; Kokolis et al., HPCA 2025,
    arXiv:2410.21680, doi:10.1109/HPCA61900.2025.00096). ETTR at the optimal
    interval is :func:`relkit.checkpoint.whatif`. A failure is a node failure
    incident as in ``relkit mtbf --unit node``.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelkitWarning)
        try:
            result = _section(ctx)
        except RelkitError as exc:
            ctx.progress(f"warning: no scale section: {exc}")
            return f"the failure rate could not be projected to larger jobs: {exc}"
    said = list(dict.fromkeys(str(w.message) for w in caught))
    for message in said:
        ctx.progress(f"note: {message}")
    if said and isinstance(result, list):
        title, body = result[-1]
        result[-1] = (
            title,
            body + "".join(f"<p>Note: {html.escape(m)}</p>" for m in said),
        )
    return result
