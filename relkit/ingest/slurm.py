r"""Read Slurm accounting dumps (``sacct -P``) into the store's job tables.

Every field is read as text by DuckDB's CSV reader (one column per line, no
type sniffing: a late row with ``1-02:18:35`` or ``130000_7`` changes nothing,
case C10) and parsed here with polars. Allocation rows become ``jobs`` (one
row per attempt, requeued records of one JobID numbered 1, 2, ...), step rows
(``.batch``, ``.extern``, ``.0``) become ``job_steps`` attached to their
attempt, and the expanded node lists become ``job_nodes``.
"""

import dataclasses
import datetime as dt
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from relkit.errors import IngestError
from relkit.ingest._common import IngestResult, Parsed, check_tz, ingest
from relkit.ingest._pseudonym import load_pseudonym_key, pseudonymize
from relkit.ingest._sacct_jobs import attempts, expand_nodes, step_outcome_flags
from relkit.ingest._sacct_jobs import steps as attach_steps
from relkit.ingest._sacct_lines import (
    Layout,
    check_fields,
    dedupe_lines,
    find_layouts,
    read_lines,
    split_fields,
    streamed,
)
from relkit.ingest._slurm_fields import (
    SLURM_STATES,
    array_pending_counts,
    duration_seconds,
    gpus_from_tres,
    job_id_parts,
    resolve_times,
    state_parts,
)
from relkit.schema import POLARS_SCHEMAS
from relkit.store import Store

__all__ = ["SACCT_COLUMNS", "parse_job_ids", "read_sacct"]

#: ``sacct`` header name (lower case) -> relkit's name for it. Only ``JobID`` is
#: required; the columns present decide what is known.
SACCT_COLUMNS: dict[str, str] = {
    "jobid": "jobid",
    "jobidraw": "jobidraw",
    "jobname": "jobname",
    "user": "user",
    "partition": "partition",
    "state": "state",
    "exitcode": "exitcode",
    "submit": "submit",
    "start": "start",
    "end": "end",
    "elapsed": "elapsed",
    "elapsedraw": "elapsedraw",
    "nnodes": "nnodes",
    "allocnodes": "allocnodes",
    "nodelist": "nodelist",
    "alloctres": "alloctres",
    "allocgres": "allocgres",
    "timelimit": "timelimit",
    "totalcpu": "totalcpu",
    "reason": "reason",
}

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
_TIME_FORMAT_SPACE = "%Y-%m-%d %H:%M:%S"
_NO_TIME = ("Unknown", "None", "")


def parse_job_ids(job_ids: pl.Series) -> pl.DataFrame:
    """Decompose Slurm job ids into base job, array task, het offset and step.

    Parameters
    ----------
    job_ids : pl.Series
        ``JobID`` strings as ``sacct`` prints them (``4108_7``,
        ``4108_[8-15%4]``, ``4120+1``, ``4100.batch``, ``4120+0.0``).

    Returns
    -------
    pl.DataFrame
        One row per input, in order: ``job_id`` (the input), ``base_job_id``
        (text), ``array_task`` (text, null unless an array task),
        ``array_pending`` (the pending spec, e.g. ``"8-15%4"``),
        ``array_pending_n`` (Int64, tasks the spec stands for),
        ``array_max_running`` (Int64, the ``%`` throttle), ``het_offset``
        (Int64, heterogeneous component), ``step`` (``batch``, ``extern``,
        ``0``, ...) and ``valid`` (Boolean: the id fits the grammar).

    Notes
    -----
    Ids stay text: ``130000_7`` is array 130000, task 7 (DuckDB's sniffer reads
    it as the number 1300007, case C10). The grammar is
    ``base[_task|_[spec]][+offset][.step]``.

    Examples
    --------
    >>> out = parse_job_ids(
    ...     pl.Series(["4108_7", "4108_[8-15%4]", "4120+1", "4100.extern"])
    ... )
    >>> out.drop("valid").rows()  # doctest: +NORMALIZE_WHITESPACE
    [('4108_7', '4108', '7', None, None, None, None, None),
     ('4108_[8-15%4]', '4108', None, '8-15%4', 8, 4, None, None),
     ('4120+1', '4120', None, None, None, None, 1, None),
     ('4100.extern', '4100', None, None, None, None, None, 'extern')]
    """
    frame = pl.DataFrame({"job_id": job_ids.cast(pl.String)})
    parts = frame.select(
        "job_id", p=job_id_parts(pl.col("job_id").str.strip_chars())
    ).unnest("p")
    counts = array_pending_counts(parts["array_pending"])
    return pl.concat([parts, counts], how="horizontal").select(
        "job_id",
        "base_job_id",
        "array_task",
        "array_pending",
        "array_pending_n",
        "array_max_running",
        pl.col("het_offset").cast(pl.Int64),
        "step",
        valid=pl.col("base_job_id").is_not_null(),
    )


# -- reading ------------------------------------------------------------------------
def _naive(col: str, fmt: str) -> pl.Expr:
    """Parse a sacct time column to naive datetimes (null where it does not parse)."""
    return pl.col(col).str.to_datetime(fmt, time_unit="us", strict=False)


def _time_format(values: pl.Series) -> str:
    """``T`` or space between date and time (as SLURM_TIME_FORMAT may print)."""
    sample = values.drop_nulls().head(1000)
    spaced = sample.str.contains(r"^[0-9]{4}-[0-9]{2}-[0-9]{2} ").sum()
    return _TIME_FORMAT_SPACE if spaced > sample.len() // 2 else _TIME_FORMAT


def _times(frame: pl.DataFrame, tz: str | None, path: Path) -> pl.DataFrame:
    """Parse Submit/Start/End in ``tz``; Elapsed resolves the DST hours."""
    cols = [c for c in ("submit", "start", "end") if c in frame.columns]
    frame = streamed(
        frame,
        *[_naive(c, _time_format(frame[c])).alias(f"_{c}_naive") for c in cols],
        *[
            pl.lit(None, dtype=pl.Datetime("us")).alias(f"_{c}_naive")
            for c in ("submit", "start", "end")
            if c not in cols
        ],
    ).with_columns(
        [
            (
                ~(pl.col(c).is_null() | pl.col(c).is_in(list(_NO_TIME)))
                & pl.col(f"_{c}_naive").is_null()
            ).alias(f"_{c}_bad")
            for c in cols
        ]
    )
    if tz is None and cols:
        present = frame.filter(
            pl.any_horizontal([pl.col(f"_{c}_naive").is_not_null() for c in cols])
        )
        if present.height:
            line = int(present["line_no"][0])
            msg = (
                "sacct prints local times without a UTC offset, so the zone is "
                "needed: pass --tz ZONE with the cluster's zone (library: "
                "tz='ZONE'), e.g. --tz America/Chicago, or --tz UTC if the dump "
                "was made with TZ=UTC."
            )
            raise IngestError(path, msg, line_no=line)
    return resolve_times(frame, tz)


def _field(frame: pl.DataFrame, name: str) -> pl.Expr:
    return pl.col(name) if name in frame.columns else pl.lit(None, dtype=pl.String)


def _node_count(frame: pl.DataFrame) -> pl.Expr:
    """Nodes of a record: ``AllocNodes`` (0 while pending), else ``NNodes``.

    sacct: AllocNodes is the number of nodes allocated, 0 if the job is
    pending; NNodes the nodes allocated, or requested while pending.
    """
    alloc = _field(frame, "allocnodes").cast(pl.Int64, strict=False)
    nnodes = _field(frame, "nnodes").cast(pl.Int64, strict=False)
    return pl.coalesce(pl.when(alloc > 0).then(alloc), nnodes, alloc)


def _records(
    path: Path, lines: pl.DataFrame
) -> tuple[pl.DataFrame, list[Layout], list[str], dict[str, int]]:
    """Split the data lines into named text fields, header by header.

    Returns ``(frame, layouts, extras, ignored)``: one row per record with the
    relkit-named text fields of its header (null where its header lacks the
    column), ``layout`` (index into ``layouts``), ``n_fields``, ``_width``,
    ``_layout_problem``; the header names relkit does not read; and counts of
    ignored lines by reason (``repeated_header``, ``new_header``,
    ``duplicate_record``).
    """
    data, layouts, later = find_layouts(path, lines)
    ignored: dict[str, int] = {}
    n_same = int(later["same"].sum())
    if n_same:
        ignored["repeated_header"] = n_same
    if later.height - n_same:
        ignored["new_header"] = later.height - n_same
    parts = []
    for k, layout in enumerate(layouts):
        rows = data if len(layouts) == 1 else data.filter(pl.col("layout") == k)
        if rows.height == 0 and k > 0:  # (the first layout names the columns)
            continue
        part = split_fields(rows, layout, SACCT_COLUMNS).with_columns(
            _layout_problem=pl.lit(layout.problem, dtype=pl.String)
        )
        parts.append(part)
    if len(parts) == 1:
        frame = parts[0]
    else:
        frame = pl.concat(parts, how="diagonal").sort("line_no")
    extras = list(
        dict.fromkeys(
            n for lay in layouts for n in lay.names if n.lower() not in SACCT_COLUMNS
        )
    )
    # the same record twice in the file (a dump appended twice, overlapping
    # dumps concatenated) is one record
    fields = [c for c in dict.fromkeys(SACCT_COLUMNS.values()) if c in frame.columns]
    frame = dedupe_lines(frame, ["line"] if len(layouts) == 1 else fields)
    n_repeat = int(frame["_repeat"].sum())
    if n_repeat:
        ignored["duplicate_record"] = n_repeat
        frame = frame.filter(~pl.col("_repeat"))
    return frame.drop("_repeat"), layouts, extras, ignored


def _summary_notes(
    columns: list[str], jobs: pl.DataFrame, ignored: dict[str, int]
) -> list[str]:
    """Return what the ingest summary says besides the counts (on stderr)."""
    notes = []
    if n := ignored.get("duplicate_record"):
        notes.append(
            f"{n} record(s) repeat an earlier line of the file exactly (e.g. "
            "concatenated dumps): each counted once, not as a requeue "
            "(ignored: duplicate_record)"
        )
    missing = [c.title() for c in ("start", "end") if c not in columns]
    if missing:
        notes.append(
            f"warning: the dump has no {'/'.join(missing)} column: no "
            "interruption timing is possible (no attempt start or end, no "
            "incident matched to a job's end, no time between interruptions); "
            "export with sacct -P --format=JobID,State,Start,End,Elapsed,"
            "AllocNodes,AllocTRES,NodeList,..."
        )
    started = jobs.filter(
        pl.col("start_ts").is_not_null() | pl.col("elapsed_s").is_not_null()
    )
    unknown = started.filter(pl.col("n_gpus").is_null()).height
    if "alloctres" not in columns and "allocgres" not in columns:
        if jobs.height:
            notes.append(
                "warning: the dump has no AllocTRES column: GPU counts are "
                "unknown, and the job commands charge --gpus-per-node (default "
                "8) per node; export AllocTRES (gres/gpu=N) for the real counts"
            )
    elif unknown:
        notes.append(
            f"warning: {unknown} started job record(s) have an empty "
            "AllocTRES/AllocGRES: their GPU count is unknown (the job commands "
            "charge --gpus-per-node per node for them)"
        )
    return notes


def _personal_columns(layout: Layout) -> dict[int, str]:
    """Positions of the personal fields of a layout -> pseudonym field."""
    field = {"user": "user", "jobname": "name"}
    return {i: field[n] for i, n in enumerate(layout.lower) if n in field}


def _safe_raw(bad: pl.DataFrame, layouts: list[Layout], key: bytes | None) -> pl.Series:
    """Return the raw text of rejected lines (personal fields pseudonymized).

    A line whose field count differs from its header's cannot have its user
    and job name told apart from the other fields: its text is withheld.
    """
    if key is None:
        return bad["line"]
    out: list[str] = []
    for line, layout_no, n_fields, width in bad.select(
        "line", "layout", "n_fields", "_width"
    ).iter_rows():
        layout = layouts[layout_no]
        if n_fields != width:
            out.append(_WITHHELD)
            continue
        text = line[:-1] if layout.trailing and line.endswith("|") else line
        values = text.split("|")
        for i, fld in _personal_columns(layout).items():
            value = values[i].strip()
            if value:
                values[i] = pseudonymize(pl.Series([value]), key=key, field=fld).item()
        out.append("|".join(values) + ("|" if layout.trailing else ""))
    return pl.Series("raw", out, dtype=pl.String)


#: ``rejects.raw`` of a line whose personal fields cannot be found.
_WITHHELD = (
    "(raw line withheld: --pseudonymize, and its field count differs from its "
    "header's, so its user and job name fields cannot be located)"
)


def _checks(frame: pl.DataFrame) -> list[tuple[pl.Expr, pl.Expr]]:
    """(condition, reason) of the records to reject, field by field."""
    raw_elapsed = _field(frame, "elapsedraw")
    nnodes = _field(frame, "nnodes")
    nnodes_num = nnodes.cast(pl.Int64, strict=False)
    alloc_nodes = _field(frame, "allocnodes")
    alloc_nodes_num = alloc_nodes.cast(pl.Int64, strict=False)
    checks: list[tuple[pl.Expr, pl.Expr]] = [
        (pl.col("_layout_problem").is_not_null(), pl.col("_layout_problem")),
        (pl.col("jobid").is_null(), pl.lit("empty JobID")),
        (
            pl.col("jobid").is_not_null() & pl.col("base_job_id").is_null(),
            pl.format(
                "malformed JobID '{}' (expected e.g. 4108, 4108_7, "
                "4108_[8-15%4], 4120+1, 4100.batch)",
                "jobid",
            ),
        ),
        (pl.col("_state_why").is_not_null(), pl.col("_state_why")),
        *[
            (pl.col(f"_{c}_why").is_not_null(), pl.col(f"_{c}_why"))
            for c in ("elapsed", "timelimit", "totalcpu")
        ],
        (
            raw_elapsed.is_not_null()
            & raw_elapsed.cast(pl.Int64, strict=False).is_null(),
            pl.format("ElapsedRaw is not a whole number: '{}'", raw_elapsed),
        ),
        (
            nnodes.is_not_null() & (nnodes_num.is_null() | (nnodes_num < 0)),
            pl.format("NNodes is not a whole number >= 0: '{}'", nnodes),
        ),
        (
            alloc_nodes.is_not_null()
            & (alloc_nodes_num.is_null() | (alloc_nodes_num < 0)),
            pl.format("AllocNodes is not a whole number >= 0: '{}'", alloc_nodes),
        ),
        (
            pl.col("_gpus_bad").is_not_null(),
            pl.format(
                "GPU count '{}' in AllocTRES/AllocGRES is not a whole number >= 0",
                "_gpus_bad",
            ),
        ),
    ]
    checks += [
        (
            pl.col(f"_{c}_bad"),
            pl.format(
                f"unparseable time in {c.title()}: '{{}}' (expected "
                "YYYY-MM-DDTHH:MM:SS, Unknown or None)",
                c,
            ),
        )
        for c in ("submit", "start", "end")
        if c in frame.columns
    ]
    checks += [
        (
            pl.col("_negative_no_elapsed"),
            pl.lit("End is before Start and no Elapsed to resolve it"),
        ),
        (pl.col("_host_error").is_not_null(), pl.col("_host_error")),
    ]
    return checks


def _reasons(frame: pl.DataFrame, checks: list[tuple[pl.Expr, pl.Expr]]) -> pl.Series:
    """One reason per record to reject (the checks that fail, joined), else null.

    A record under a header that cannot be read, or whose field count differs
    from its header's, gets that reason alone: its fields are not where the
    header says, and their values would mislead.
    """
    wrong_width = pl.col("n_fields") != pl.col("_width")
    bad = (
        frame.lazy()
        .select(
            pl.any_horizontal([c.fill_null(value=False) for c, _ in checks])
            | wrong_width
        )
        .collect(engine="streaming")
        .to_series()
    )
    if not bad.any():
        return pl.repeat(None, frame.height, dtype=pl.String, eager=True).alias(
            "_reasons"
        )
    return frame.select(
        pl.when(pl.col("_layout_problem").is_not_null())
        .then(pl.col("_layout_problem"))
        .when(wrong_width)
        .then(
            pl.format(
                "expected {} fields as in the header, found {} (a field "
                "containing '|'?)",
                "_width",
                "n_fields",
            )
        )
        .when(bad)
        .then(
            pl.concat_str(
                [pl.when(c.fill_null(value=False)).then(m) for c, m in checks],
                separator="; ",
                ignore_nulls=True,
            )
        )
        .alias("_reasons")
    ).to_series()


def _job_ids(frame: pl.DataFrame) -> pl.DataFrame:
    """Add the JobID parts; ``4100`` and ``4100.batch`` skip the full regex."""
    jid = pl.col("jobid")
    simple = jid.str.contains(r"^[0-9]+(?:\.[A-Za-z0-9_\-]+)?$").fill_null(value=False)
    dot = jid.str.find(".", literal=True)
    parts = (
        frame.select("jobid")
        .lazy()
        .select(
            _simple=simple,
            base_job_id=pl.when(simple).then(
                pl.when(dot.is_null()).then(jid).otherwise(jid.str.slice(0, dot))
            ),
            array_task=pl.lit(None, dtype=pl.String),
            array_pending=pl.lit(None, dtype=pl.String),
            het_offset=pl.lit(None, dtype=pl.String),
            step=pl.when(simple & dot.is_not_null()).then(jid.str.slice(dot + 1)),
        )
        .collect(engine="streaming")
    )
    other = (~parts["_simple"]).arg_true()
    parts = parts.drop("_simple")
    if other.len():
        rest = (
            frame["jobid"]
            .gather(other)
            .to_frame("jobid")
            .select(p=job_id_parts(pl.col("jobid")))
            .unnest("p")
        )
        parts = parts.with_columns(
            [parts[c].scatter(other, rest[c]).alias(c) for c in rest.columns]
        )
    return pl.concat([frame, parts], how="horizontal")


def _parse(
    store: Store,
    path: Path,
    tz: str | None,
    key: bytes | None,
    keep_going: Callable[[], bool] = lambda: True,
    *,
    fields: tuple[str, ...] | None = None,
    notes: list[str] | None = None,
) -> Parsed | None:
    del store  # the lines are read with polars, not through the store
    notes = [] if notes is None else notes
    lines = read_lines(path)
    if not keep_going():  # the file's hash says: already ingested, skip
        return None
    if fields is not None:  # a header-less dump: --fields is its header
        header = pl.DataFrame(
            {"line_no": [0], "line": ["|".join(fields)], "bad_utf8": [False]},
            schema=lines.schema,
        )
        lines = pl.concat([header, lines])
    frame, layouts, extras, ignored = _records(path, lines)
    n_lines = frame.height + sum(ignored.values())
    frame = _job_ids(frame).with_row_index("index")
    state, uid, state_why = state_parts(
        frame["state"]
        if "state" in frame.columns
        else pl.repeat(None, frame.height, dtype=pl.String, eager=True)
    )
    if "state" in frame.columns:
        frame = frame.drop("state")
    for col, label in (
        ("elapsed", "Elapsed"),
        ("timelimit", "Timelimit"),
        ("totalcpu", "TotalCPU"),
    ):
        if col not in frame.columns:
            frame = frame.with_columns(
                pl.lit(None, dtype=pl.Float64).alias(f"_{col}_s"),
                pl.lit(None, dtype=pl.String).alias(f"_{col}_why"),
            )
            continue
        values, why = duration_seconds(frame[col], label, limits=col == "timelimit")
        frame = frame.with_columns(values.alias(f"_{col}_s"), why.alias(f"_{col}_why"))
    n_gpus, gpus_bad = gpus_from_tres(
        frame["alloctres"] if "alloctres" in frame.columns else None,
        frame["allocgres"] if "allocgres" in frame.columns else None,
        frame.height,
    )
    raw_elapsed_num = _field(frame, "elapsedraw").cast(pl.Int64, strict=False)
    frame = frame.with_columns(
        state=state,
        cancelled_by_uid=uid,
        _state_why=state_why,
        elapsed_s=pl.coalesce(raw_elapsed_num.cast(pl.Float64), "_elapsed_s"),
        timelimit_s="_timelimit_s",
        total_cpu_s="_totalcpu_s",
        n_nodes_decl=_node_count(frame),
        n_gpus=n_gpus,
        _gpus_bad=gpus_bad,
    )
    # no runtime without a start: sacct prints Elapsed 00:00:00 for pending jobs
    frame = _times(frame, tz, path)
    if "start" in frame.columns:
        frame = frame.with_columns(
            elapsed_s=pl.when(pl.col("start_ts").is_not_null()).then(
                pl.col("elapsed_s")
            )
        )
    is_step = pl.col("step").is_not_null()
    nodelist = (
        frame["nodelist"]
        if "nodelist" in frame.columns
        else pl.repeat(None, frame.height, dtype=pl.String, eager=True)
    )
    hosts, list_of, host_errors, n_repeated, n_hosts = expand_nodes(
        nodelist, frame["n_nodes_decl"]
    )
    frame = frame.with_columns(
        _host_error=host_errors, _host_repeats=n_repeated, _list=list_of
    )
    reasons = _reasons(frame, _checks(frame))
    if fields is not None:  # there is no header: --fields gave the columns
        reasons = reasons.str.replace(
            r"^expected (\d+) fields as in the header, found (\d+) \([^)]*\)",
            "--fields names $1 columns, the line has $2: list every column of "
            "the dump's sacct --format, in order",
        )
    frame = frame.with_columns(_reasons=reasons)
    if frame["_reasons"].null_count() == frame.height:  # nothing to reject
        bad, good = frame.clear(), frame
    else:
        bad = frame.filter(pl.col("_reasons").is_not_null())
        good = (
            frame.lazy()
            .filter(pl.col("_reasons").is_null())
            .collect(engine="streaming")
        )
    rejects = bad.select("line_no", reason="_reasons", raw=_safe_raw(bad, layouts, key))
    good = good.with_columns(n=n_hosts.gather(good["index"]))
    if good["step"].null_count() == good.height:  # no step rows
        alloc, steps = attempts(good), good.clear()
    else:
        alloc = attempts(good.lazy().filter(~is_step).collect(engine="streaming"))
        steps = good.lazy().filter(is_step).collect(engine="streaming")
    if key is not None:
        alloc = alloc.with_columns(
            [
                pseudonymize(alloc[col], key=key, field=field).alias(col)
                for col, field in (("user", "user"), ("jobname", "name"))
                if col in alloc.columns
            ]
        )
    has_hosts = pl.col("n").is_not_null()
    row_flags = [
        pl.col("_time_flags").replace("", None),
        pl.when(
            has_hosts
            & pl.col("n_nodes_decl").is_not_null()
            & (pl.col("n") != pl.col("n_nodes_decl"))
        ).then(pl.lit("nnodes_differs_from_nodelist")),
        pl.when(pl.col("_host_repeats") > 0).then(pl.lit("nodelist_repeats_hosts")),
        pl.when(
            pl.col("state").is_not_null() & ~pl.col("state").is_in(SLURM_STATES)
        ).then(pl.lit("unknown_state")),
        pl.when(pl.col("bad_utf8")).then(pl.lit("invalid_utf8_replaced")),
    ]
    jobs = (
        alloc.lazy()
        .select(
            "line_no",
            job_id="jobid",
            attempt="attempt",
            state="state",
            exit_code=_field(alloc, "exitcode"),
            submit_ts="submit_ts",
            start_ts="start_ts",
            end_ts="end_ts",
            elapsed_s="elapsed_s",
            n_nodes=pl.coalesce("n_nodes_decl", "n"),
            n_gpus="n_gpus",
            user=_field(alloc, "user"),
            name=_field(alloc, "jobname"),
            partition=_field(alloc, "partition"),
            scheduler=pl.lit("slurm"),
            job_id_raw=_field(alloc, "jobidraw"),
            base_job_id="base_job_id",
            array_task="array_task",
            array_pending="array_pending",
            het_offset=pl.col("het_offset").cast(pl.Int32),
            cancelled_by_uid="cancelled_by_uid",
            reason=_field(alloc, "reason"),
            timelimit_s="timelimit_s",
            total_cpu_s="total_cpu_s",
            flags=pl.concat_str(row_flags, separator=",", ignore_nulls=True).replace(
                "", None
            ),
        )
        .collect(engine="streaming")
    )
    job_steps, orphans = attach_steps(steps, jobs)
    if job_steps.height:
        jobs = step_outcome_flags(jobs, job_steps)
    if orphans.height:
        orphans = orphans.select(
            "line_no", "reason", raw=_safe_raw(orphans, layouts, key)
        )
        rejects = pl.concat([rejects, orphans])
    # the hosts of each allocation row: those of its (distinct) list
    job_nodes = (
        alloc.lazy()
        .select("_list", job_id="jobid", attempt="attempt")
        .join(hosts.lazy().rename({"index": "_list"}), on="_list", how="inner")
        .select("job_id", "attempt", "host")
        .collect(engine="streaming")
    )
    options: dict[str, Any] = {}
    if extras:
        options["ignored_columns"] = extras
    notes += _summary_notes(frame.columns, jobs, ignored)
    ignored_frame = (
        pl.DataFrame(
            {"reason": list(ignored), "n_lines": list(ignored.values())},
            schema={"reason": pl.String, "n_lines": pl.Int64},
        )
        if ignored
        else None
    )
    # in the store's types and one chunk, the store writes it twice as fast
    types = POLARS_SCHEMAS["jobs"]
    jobs = jobs.select([pl.col(c).cast(types[c]) for c in jobs.columns]).rechunk()
    return Parsed(
        n_lines=n_lines,
        tables={"jobs": jobs, "job_steps": job_steps, "job_nodes": job_nodes},
        rejects=rejects.sort("line_no"),
        options=options,
        n_loaded=jobs.height + job_steps.height,
        ignored=ignored_frame,
    )


def read_sacct(
    store: Store,
    path: str | Path,
    *,
    tz: str | None = None,
    replace: bool = False,
    as_of: str | dt.datetime | None = None,
    pseudonymize: bool = False,
    pseudonym_key_file: str | Path | None = None,
    fields: Sequence[str] | str | None = None,
) -> IngestResult:
    r"""Read a ``sacct -P`` dump into ``jobs``, ``job_steps`` and ``job_nodes``.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        ``sacct -P`` (``--parsable2``) or ``-p`` output with its header line,
        plain or gzip-compressed. Any column order; ``JobID`` is required and
        the other columns present decide what is known: ``JobIDRaw``,
        ``JobName``, ``User``, ``Partition``, ``State``, ``ExitCode``,
        ``Submit``, ``Start``, ``End``, ``Elapsed`` (or ``ElapsedRaw``,
        seconds), ``AllocNodes`` or ``NNodes``, ``NodeList``, ``AllocTRES``
        (GPUs from ``gres/gpu=N``) or ``AllocGRES``, ``Timelimit``,
        ``TotalCPU``, ``Reason``. Other columns are ignored (listed in the
        source's options). A dump without ``Start``/``End`` is read, with a
        warning in the summary (``note``) that no interruption timing is
        possible.
    tz : str, optional
        IANA zone of the dump's times (sacct prints local time without an
        offset), e.g. ``"America/Chicago"``; ``"Z"`` means UTC. Required when
        the file has any time value.
    replace : bool, default False
        Re-read a file ingested before, dropping its earlier rows first.
    as_of : str or datetime, optional
        When the file was collected (ISO 8601 with a zone, or an aware
        datetime; ``--as-of``): stored in UTC as ``as_of_ts`` in the source's
        options, where analysis ends open-ended observation. A zone-less time
        is an error.
    pseudonymize : bool, default False
        Replace ``User`` and ``JobName`` by keyed pseudonyms
        (HMAC-SHA256; the same key gives the same pseudonym in every file).
    pseudonym_key_file : str or Path, optional
        File holding the key; default: the environment variable
        ``RELKIT_PSEUDONYM_KEY``.
    fields : sequence of str or str, optional
        The column names of a header-less dump (``sacct --noheader -P``), in
        the order of its ``--format`` list, e.g. ``"JobID,State,Start,End"``
        or ``["JobID", "State", "Start", "End"]`` (``--fields``). They are the
        header of the lines until the file's own header, if it has one.

    Returns
    -------
    IngestResult
        ``n_lines`` data lines = ``n_loaded`` (allocation and step rows) +
        ``n_rejected`` + ``n_ignored`` (header lines after the first, records
        the file repeats).

    Raises
    ------
    IngestError
        If the file is missing, not text, fixed-width ``sacct`` output (the
        message asks for ``sacct -P``), has no header naming ``JobID`` (the
        message names ``fields``/``--fields`` for a ``--noheader`` dump),
        ``fields`` is malformed, has times but no ``tz``, ``tz`` is unknown,
        or (without ``replace``) it changed since it was read from the same
        path.
    RelkitError
        If ``pseudonymize`` is set and no key of at least 16 bytes is found.

    Notes
    -----
    Job ids stay text and are decomposed (:func:`parse_job_ids`). Rows with a
    step (``4100.batch``, ``.extern``, ``.0``) go to ``job_steps``, attached to
    the latest allocation row of their job above them; the others are
    attempts: rows repeating a JobID (``--duplicates``: requeued runs) are
    attempts 1, 2, ... in order of Submit, Start and line. ``State``
    ``CANCELLED by 12345`` is state ``CANCELLED`` with ``cancelled_by_uid``
    ``"12345"``. ``Unknown``, ``None`` and empty fields are NULL, never 0; a
    job that never started has NULL ``elapsed_s`` (sacct prints ``00:00:00``).
    Durations are ``[D-]HH:MM:SS``, ``MM:SS[.fff]`` (two parts are always
    minutes:seconds); Timelimit ``UNLIMITED`` is +inf and ``Partition_Limit``
    NULL. Times are read in ``tz`` and stored in UTC. In the hour a DST change
    repeats, each time has two readings, and a time in the hour it skips has
    two too (with the offset before and after the change): Slurm computes
    Elapsed from epochs, so the pair of Start/End readings that differ by
    Elapsed is taken (flag ``dst_resolved_by_elapsed``); where no pair does
    but one within the shift, the time the DST change hit is set from the
    other and Elapsed (``end_from_elapsed``, ``start_from_elapsed``). An End
    before Start becomes Start + Elapsed (``end_from_elapsed``), so no
    negative duration is stored; End - Start differing from Elapsed beyond
    that is flagged ``elapsed_mismatch`` (Elapsed leaves out suspended time).

    Every header line sets the layout of the lines after it, so dumps with
    different ``--format`` orders can be concatenated (``new_header``,
    ``repeated_header`` in ``ignored``); a BOM or ``\r`` around a header does
    not hide it. A record the file holds twice (the same line again, e.g.
    from concatenated dumps) is counted once, never as a requeue
    (``duplicate_record``; the summary says how many); across files,
    :func:`relkit.jobs.drop_repeated_records` keeps one copy. Bytes
    that are not UTF-8 are replaced by U+FFFD and the row flagged
    ``invalid_utf8_replaced``.

    GPUs: a record whose ``AllocTRES`` names no ``gres/gpu`` (a CPU-only job)
    has 0 GPUs. Only where the dump has no ``AllocTRES`` (nor ``AllocGRES``)
    column, or a started job's field is empty, is the count unknown (null):
    the job commands then charge ``--gpus-per-node`` per node, and the
    ingest summary says so. Nodes: ``AllocNodes`` (0 for a pending job, then
    ``NNodes``, the nodes it requested).

    Node lists are expanded strictly (:func:`relkit.ingest.expand_hostlist`),
    a host named twice once (``nodelist_repeats_hosts``); a list naming more
    hosts than NNodes (or :data:`relkit.ingest._hostlist.MAX_HOSTS`) is
    rejected before it is expanded. An allocation whose steps failed or were
    cancelled is flagged ``steps_failed`` / ``steps_cancelled``; a state
    Slurm does not document is kept and flagged ``unknown_state``. A record
    is rejected, with its line and the reason, for a malformed JobID, State,
    duration, time, NNodes, GPU count (``gres/gpu=-8``) or node list, a field
    count different from its header's, a header naming a column twice, or a
    step whose job is not above it. With ``pseudonymize``, ``rejects.raw``
    holds the line with its user and job name pseudonymized (or nothing but
    a note, when its fields cannot be told apart).

    References
    ----------
    .. [1] SchedMD, ``sacct`` manual, https://slurm.schedmd.com/sacct.html

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from relkit.store import Store
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "sacct.psv"
    >>> _ = f.write_text(
    ...     "JobID|State|Start|End|Elapsed|NodeList\n"
    ...     "4101|NODE_FAIL|2025-02-01T10:00:10|2025-02-02T03:15:40|17:15:30|g[5-6]\n"
    ...     "4101.batch|CANCELLED|2025-02-01T10:00:10|2025-02-02T03:15:41|17:15:31|g5\n"
    ... )
    >>> store = Store(":memory:")
    >>> read_sacct(store, f, tz="UTC").n_loaded
    2
    >>> store.table("job_nodes").select("job_id", "attempt", "host").rows()
    [('4101', 1, 'g5'), ('4101', 1, 'g6')]
    >>> read_sacct(Store(":memory:"), f)
    Traceback (most recent call last):
    ...
    relkit.errors.IngestError: ...sacct.psv:2: sacct prints local times without ...
    """
    if tz is not None and tz.strip() in ("Z", "z"):
        tz = "UTC"
    tz = check_tz(path, tz)
    names = check_fields(path, fields)
    key = load_pseudonym_key(pseudonym_key_file) if pseudonymize else None
    notes: list[str] = []
    result = ingest(
        store,
        path,
        kind="sacct",
        options={
            "tz": tz,
            "pseudonymize": pseudonymize,
            **({} if names is None else {"fields": list(names)}),
        },
        parse=lambda p, go: _parse(store, p, tz, key, go, fields=names, notes=notes),
        replace=replace,
        overlap_hash=True,
        as_of=as_of,
    )
    if result.skipped or not notes:
        return result
    return dataclasses.replace(
        result, note="; ".join(n for n in (result.note, *notes) if n)
    )
