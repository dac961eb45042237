"""The report's Data section: sources, rejects, observation model, sections left out.

Used by :mod:`relkit.report` (private). It states what the report rests on:
every ingested source by kind with its line counts, the rejected lines by
reason, the observation model (exposure basis, end of observation, exclusions,
notes and flags) and one line for each section the data does not support.
"""

import html
import json

import polars as pl

from relkit import _html, answers
from relkit._report_common import ReportContext, counting_rule
from relkit.taxonomy import unknown_xid_note

__all__ = ["data_notes", "data_section"]


def data_notes(ctx: ReportContext) -> list[str]:
    """Say what holds for the events as a whole: no wall time, unknown Xid codes."""
    events = ctx.st["events"]
    return [
        n
        for n in (answers.no_wall_time_note(events), unknown_xid_note(events))
        if n is not None
    ]


def _sources(ctx: ReportContext) -> str:
    sources = ctx.st["sources"]
    ctx.tables["sources"] = sources.drop("content_hash", "options", strict=False)
    by_kind = (
        sources.group_by("kind")
        .agg(
            files=pl.len(),
            lines=pl.col("n_lines").sum(),
            loaded=pl.col("n_loaded").sum(),
            rejected=pl.col("n_rejected").sum(),
            ignored=pl.col("n_ignored").sum() if "n_ignored" in sources.columns else 0,
        )
        .sort("kind")
    )
    ctx.tables["sources_by_kind"] = by_kind
    return (
        f"<p>{sources.height:,} source file(s) ingested (each listed in "
        "tables/sources.csv). Lines read, rows loaded, lines rejected (with a "
        "reason, below) and lines ignored (ordinary log lines that carry no "
        "failure signal), by kind:</p>"
        + _html.table_html(by_kind)
        + _notes_html(ctx, sources)
    )


def source_notes(sources: pl.DataFrame, jobs: pl.DataFrame) -> pl.DataFrame:
    """List the ingest warnings of each source that still hold in the store.

    The store keeps no ingest messages, so the ones that change a figure are
    read again from what was loaded: a job source whose jobs all lack a GPU
    count (no ``AllocTRES``: GPU-hours charge 8 GPUs per node), or all lack
    start and end (no ``Start``/``End``: no interruption timing); and any
    ``note`` or ``notes`` kept in a source's ``options`` JSON.

    Parameters
    ----------
    sources : polars.DataFrame
        The store's ``sources`` (``source_id``, ``path``, ``kind``,
        ``options``).
    jobs : polars.DataFrame
        The store's ``jobs`` (``source_id``, ``n_gpus``, ``start_ts``,
        ``end_ts``).

    Returns
    -------
    polars.DataFrame
        ``path`` and ``note``, one row per note (empty when none).
    """
    rows: list[tuple[str, str]] = []
    name = {
        sid: str(path).replace("\\", "/").rsplit("/", 1)[-1]
        for sid, path in zip(sources["source_id"], sources["path"], strict=True)
    }
    if "options" in sources.columns:
        for sid, options in zip(sources["source_id"], sources["options"], strict=True):
            try:
                opts = json.loads(options or "{}")
            except ValueError:
                continue
            said = opts.get("notes", opts.get("note"))
            for note in [said] if isinstance(said, str) else said or []:
                rows.append((name[sid], str(note)))
    if jobs.height and {"source_id", "n_gpus", "start_ts", "end_ts"} <= set(
        jobs.columns
    ):
        per = jobs.group_by("source_id").agg(
            gpus=pl.col("n_gpus").is_not_null().any(),
            times=(
                pl.col("start_ts").is_not_null() | pl.col("end_ts").is_not_null()
            ).any(),
        )
        for sid, gpus, times in per.sort("source_id").iter_rows():
            path = name.get(sid, str(sid))
            if not times:
                rows.append(
                    (
                        path,
                        "no job has a start or end time (no Start/End column): "
                        "no interruption timing, no incident matched to a job",
                    )
                )
            if not gpus:
                rows.append(
                    (
                        path,
                        "no job has a GPU count (no AllocTRES column): GPU-hours "
                        "charge 8 GPUs per node",
                    )
                )
    return pl.DataFrame(
        rows, schema={"path": pl.String, "note": pl.String}, orient="row"
    )


def _notes_html(ctx: ReportContext, sources: pl.DataFrame) -> str:
    notes = source_notes(sources, ctx.store.table("jobs"))
    if not notes.height:
        return ""
    ctx.tables["source_notes"] = notes
    return (
        "<p>Notes on the sources (from their ingest; they change the figures "
        "below):</p>" + _html.table_html(notes)
    )


def _rejects(ctx: ReportContext) -> str:
    rejects = ctx.store.table("rejects")
    if rejects.height == 0:
        return "<p>No input line was rejected.</p>"
    by_reason = (
        rejects.group_by("reason")
        .agg(lines=pl.len(), first_line_no=pl.col("line_no").min())
        .sort(["lines", "reason"], descending=[True, False])
    )
    ctx.tables["rejects_by_reason"] = by_reason
    return (
        f"<p>{rejects.height:,} input line(s) rejected, by reason (most first; "
        "the lines are in the store's <code>rejects</code> table):</p>"
        + _html.table_html(by_reason, max_rows=20)
    )


def _flag_counts(column: pl.Series) -> pl.DataFrame:
    """Count each flag once per row it marks ("a,b" counts under a and b)."""
    split = column.drop_nulls().str.split(",").explode().str.strip_chars()
    return (
        split.filter(split != "")
        .rename("flags")
        .value_counts(name="n", sort=True)
        .sort(["n", "flags"], descending=[True, False])
    )


def _observation(ctx: ReportContext) -> str:
    obs = ctx.obs
    units = obs.windows["host"].n_unique() if obs.windows.height else 0
    parts = [
        f"<p>Observation model: {units:,} unit(s) at risk; exposure basis "
        f"<em>{html.escape(obs.exposure_basis)}</em>; observation ends "
        f"{html.escape(_html.format_value(obs.observed_until) or 'n/a')}. "
        f"{ctx.st['events'].height:,} events, counted as "
        f"{obs.failures.height:,} failures ("
        + html.escape(counting_rule(ctx.st["sources"], obs.window_min))
        + ")"
        + (
            f", {obs.n_no_wall_time:,} event(s) with no wall time"
            if obs.n_no_wall_time
            else ""
        )
        + ".</p>"
    ]
    excluded = obs.excluded
    if excluded.height:
        ctx.tables["excluded_failures"] = excluded
        reasons = (
            excluded.with_columns(pl.col("reason").str.replace(r" \(.*\)$", ""))
            .group_by("reason")
            .agg(failures=pl.len())
            .sort(["failures", "reason"], descending=[True, False])
        )
        parts.append(
            f"<p>{excluded.height:,} failure(s) fall in no service window of "
            "their unit and are excluded (tables/excluded_failures.csv):</p>"
            + _html.table_html(reasons, max_rows=20)
        )
    else:
        parts.append("<p>No failure falls outside its unit's service windows.</p>")
    flags = [
        (name, frame["flags"])
        for name, frame in (("events", ctx.st["events"]), ("assets", ctx.st["assets"]))
        if "flags" in frame.columns
    ]
    flagged = [
        f"{name}: "
        + ", ".join(
            f"{r['flags']} ×{r['n']:,}"
            for r in _flag_counts(column).head(10).iter_rows(named=True)
        )
        for name, column in flags
        if column.drop_nulls().len()
    ]
    if flagged:
        parts.append(
            "<p>Flags set at ingest (rows kept, marked): "
            + html.escape("; ".join(flagged))
            + ".</p>"
        )
    notes = [*obs.notes, *data_notes(ctx)]
    parts.extend(f'<p class="relkit-note">Note: {html.escape(n)}</p>' for n in notes)
    return "".join(parts)


def data_section(ctx: ReportContext, left_out: list[str]) -> tuple[str, str]:
    """Build the Data section: sources, rejects, observation model, left-out lines.

    Parameters
    ----------
    ctx : ReportContext
        The store's frames. Adds the CSV tables ``sources``,
        ``sources_by_kind``, ``rejects_by_reason`` and ``excluded_failures``
        (where there are any).
    left_out : list of str
        One line per section the data does not support, saying why.

    Returns
    -------
    tuple of (str, str)
        ``("Data", html)``.
    """
    gone = (
        "<h3>Sections left out</h3>"
        + "".join(f'<p class="relkit-left-out">{html.escape(x)}</p>' for x in left_out)
        if left_out
        else ""
    )
    return "Data", _sources(ctx) + _rejects(ctx) + _observation(ctx) + gone
