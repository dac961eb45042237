"""The report's job-interruption sections: Pareto, Table 5 shape, planned (private).

Used by :mod:`relkit.report` through the contract of
:mod:`relkit._report_common`, only when the store holds job records.
"""

import html

import polars as pl

from relkit import _html, answers, charts, datasets
from relkit._report_common import ReportContext, Sections
from relkit.errors import RelkitError
from relkit.jobs import job_interruptions, root_cause_table

__all__ = ["interruptions_of", "interruptions_sections", "table5_beside_llama3"]

#: Interruption kinds the report counts (``not_failure``: cancels, time limits).
_KINDS = ("unexpected", "planned")


def interruptions_of(ctx: ReportContext) -> pl.DataFrame:
    """Attribute the store's job interruptions to incidents, once per report.

    Cached in ``ctx.tables["interruptions"]`` (``tables/interruptions.csv``).
    """
    if "interruptions" not in ctx.tables:
        store = ctx.store
        _, found = job_interruptions(
            store.table("jobs"),
            store.table("job_nodes"),
            ctx.st["events"],
            end_of_log=answers.log_end(ctx.st["sources"]),
            failure_modes=ctx.st.get("failure_modes"),
        )
        ctx.tables["interruptions"] = found
    return ctx.tables["interruptions"]


def uncovered_by_logs(
    interruptions: pl.DataFrame,
    job_nodes: pl.DataFrame,
    events: pl.DataFrame,
    sources: pl.DataFrame,
) -> tuple[int, int]:
    """Count interrupted attempts that ran where and when no log was kept.

    Parameters
    ----------
    interruptions : polars.DataFrame
        ``job_interruptions`` output: ``source_id``, ``job_id``, ``attempt``,
        ``start_ts``, ``end_ts``, ``kind`` (only ``unexpected`` and
        ``planned`` are counted).
    job_nodes : polars.DataFrame
        The store's ``job_nodes`` (``source_id``, ``job_id``, ``attempt``,
        ``host``).
    events, sources : polars.DataFrame
        The store's ``events`` (``ts``, ``host``, ``source_id``) and
        ``sources`` (``source_id``, ``kind``); log files are kinds ``kernel``
        and ``nvsmi``.

    Returns
    -------
    tuple of int
        ``(uncovered, total)``: attempts none of whose hosts has a log span
        (its first to its last log line) overlapping the attempt's run
        (start to end), and the attempts counted. An uncovered attempt can
        only be attributed by its exit state.
    """
    counted = interruptions.filter(pl.col("kind").is_in(_KINDS))
    if not counted.height:
        return 0, 0
    logs = sources.filter(pl.col("kind").is_in(["kernel", "nvsmi"]))["source_id"]
    spans = (
        events.filter(
            pl.col("source_id").cast(pl.Int64).is_in(logs.cast(pl.Int64).implode())
            & pl.col("ts").is_not_null()
            & pl.col("host").is_not_null()
        )
        .group_by("host")
        .agg(log_from=pl.col("ts").min(), log_to=pl.col("ts").max())
    )
    keys = ["source_id", "job_id", "attempt"]
    attempts = counted.select(*keys, "start_ts", "end_ts").unique(keys)
    nodes = job_nodes.select(
        pl.col("source_id").cast(attempts.schema["source_id"]),
        pl.col("job_id").cast(attempts.schema["job_id"]),
        pl.col("attempt").cast(attempts.schema["attempt"]),
        "host",
    )
    covered = (
        attempts.join(nodes, on=keys, how="inner")
        .join(spans, on="host", how="inner")
        .filter(
            (pl.col("log_from") <= pl.col("end_ts").fill_null(pl.col("start_ts")))
            & (pl.col("log_to") >= pl.col("start_ts").fill_null(pl.col("end_ts")))
        )
        .select(keys)
        .unique()
    )
    return attempts.height - covered.height, attempts.height


def table5_beside_llama3(interruptions: pl.DataFrame) -> pl.DataFrame:
    """Llama 3 Table 5's shape of the interruptions, with the paper's counts beside.

    Parameters
    ----------
    interruptions : pl.DataFrame
        From :func:`relkit.jobs.job_interruptions`.

    Returns
    -------
    pl.DataFrame
        :func:`relkit.jobs.root_cause_table` (``kind, component, category,
        interruptions``, ``share`` of its kind) with ``llama3_interruptions``
        ``llama3_share`` (the count over the paper's 419 unexpected
        interruptions, recomputed) and ``llama3_share_as_printed`` (the
        paper's percentage; its Faulty GPU row prints 30.1 % for 148 of 419,
        i.e. 35.3 %, and the printed percentages sum to 94.9 %)
        from the bundled ``llama3_table5`` dataset (Llama Team, "The Llama 3
        Herd of Models", arXiv:2407.21783, 2024, Table 5); null for rows the
        paper has not.
    """
    paper = pl.read_csv(datasets.path("llama3_table5")).select(
        "component",
        llama3_interruptions=pl.col("interruption_count"),
        llama3_share_as_printed=pl.col("pct_of_interruptions_as_printed") / 100.0,
    )
    paper = paper.with_columns(
        llama3_share=pl.col("llama3_interruptions")
        / pl.col("llama3_interruptions").sum(),
        kind=pl.lit("unexpected"),
    )
    return (
        root_cause_table(interruptions)
        .rename({"frac": "share"})
        .join(paper, on=["kind", "component"], how="left", maintain_order="left")
    )


def interruptions_sections(ctx: ReportContext) -> Sections:
    """Build the interruption sections: Pareto by cause, Table 5, planned vs unexpected.

    Parameters
    ----------
    ctx : ReportContext
        The store's frames; its ``jobs`` and ``job_nodes`` are read. Adds the
        CSV tables ``interruptions`` (one row per interrupted attempt),
        ``interruptions_by_cause`` and ``root_cause_table5``.

    Returns
    -------
    list of (str, str) or str
        The sections; or why there are none (no job records).
    """
    jobs = ctx.store.table("jobs")
    if jobs.height == 0:
        return (
            "Interruptions: the store has no job records (ingest a Slurm "
            "`sacct -P` dump with --kind sacct, Kubernetes pod/job JSON with "
            "--kind k8s, or a jobs table with --kind jobs)."
        )
    ctx.progress("attributing job interruptions to incidents")
    try:
        found = interruptions_of(ctx)
    except RelkitError as exc:
        ctx.progress(f"warning: no interruptions: {exc}")
        return f"Interruptions: not computed: {exc}"
    counted = found.filter(pl.col("kind").is_in(_KINDS))
    by_kind = (
        found.group_by("kind")
        .agg(interruptions=pl.len(), jobs=pl.col("job_id").n_unique())
        .sort("kind")
    )
    n = {k: counted.filter(kind=k).height for k in _KINDS}
    other = found.height - counted.height
    intro = (
        f"<p>{jobs.height:,} job records; {found.height:,} attempts ended "
        f"abnormally: {n['unexpected']:,} unexpected interruptions (failures), "
        f"{n['planned']:,} planned (requeues and maintenance)"
        + (
            f", and {other:,} that are not failures (cancelled by a user, time "
            "limit, preemption) and are not counted"
            if other
            else ""
        )
        + ". Each interruption is attributed to an incident on the job's nodes "
        "within 45 minutes before its end, else to its exit state (Llama 3, "
        "arXiv:2407.21783, §3.3.4).</p>"
    )
    uncovered, attempts = uncovered_by_logs(
        found, ctx.store.table("job_nodes"), ctx.st["events"], ctx.st["sources"]
    )
    has_logs = ctx.st["sources"]["kind"].is_in(["kernel", "nvsmi"]).any()
    if uncovered:
        line = (
            f"{uncovered:,} of {attempts:,} interrupted attempts ran on hosts or "
            "at times the kernel logs do not cover"
            if has_logs
            else f"the store holds no kernel or nvidia-smi logs, so all "
            f"{attempts:,} interrupted attempts"
        ) + (
            ": they can only be attributed by their exit state (&quot;no log "
            "signal&quot;, cause unknown). Ingest the logs of those hosts and days "
            "to attribute them."
        )
        line = line[0].upper() + line[1:]
        ctx.progress("warning: " + html.unescape(line))
        intro += f"<p><strong>Warning:</strong> {line}</p>"
    sections = [
        ("Planned and unexpected interruptions", intro + _html.table_html(by_kind))
    ]
    by_cause = (
        counted.group_by("cause", "kind")
        .agg(interruptions=pl.len(), jobs=pl.col("job_id").n_unique())
        .sort(["interruptions", "cause"], descending=[True, False])
    )
    ctx.tables["interruptions_by_cause"] = by_cause
    if by_cause.height:
        labelled = by_cause.select(
            cause=pl.format("{} ({})", "cause", "kind"), interruptions="interruptions"
        )
        chart = ctx.chart(
            charts.interruption_pareto_chart(
                labelled, title="Job interruptions by cause (Pareto)"
            ),
            "interruptions-pareto",
        )
        sections.append(
            (
                "Interruptions by cause",
                "<p>Causes from most to fewest interruptions, with the running "
                "share: the first few bars are where reliability work pays.</p>"
                + chart
                + _html.table_html(by_cause),
            )
        )
    table5 = table5_beside_llama3(found)
    ctx.tables["root_cause_table5"] = table5
    unexpected = table5.filter(kind="unexpected")
    shown = unexpected.filter(
        (pl.col("interruptions") > 0) | pl.col("llama3_interruptions").is_not_null()
    )
    sections.append(
        (
            "Root causes in the shape of Llama 3 Table 5",
            "<p>Unexpected interruptions in the rows of Llama 3 Table 5 (Llama "
            "Team, arXiv:2407.21783, 2024: 419 unexpected interruptions in 54 "
            "days on 16,384 H100 GPUs), the paper's counts and shares beside: "
            "<code>llama3_share</code> recomputed from its counts, "
            "<code>llama3_share_as_printed</code> as the paper prints it (its "
            "Faulty GPU row prints 30.1 % for 148 of 419 = 35.3 %). "
            "Causes that leave no kernel-log line (software bugs, power "
            "supplies, SSDs) can only land in the &quot;no log signal&quot; "
            "rows.</p>"
            + _html.table_html(shown.drop("kind"))
            + (
                "<p>Planned: "
                + html.escape(
                    ", ".join(
                        f"{r['component']} {r['interruptions']:,}"
                        for r in table5.filter(kind="planned").iter_rows(named=True)
                    )
                )
                + ".</p>"
                if n["planned"]
                else ""
            ),
        )
    )
    return sections
