r"""Read Slurm accounting dumps (``sacct -P``) into the store's job tables.

Every field is read as text by DuckDB's CSV reader (one column per line, no
type sniffing: a late row with ``1-02:18:35`` or ``130000_7`` changes nothing,
case C10) and parsed here with polars. Allocation rows become ``jobs`` (one
row per attempt, requeued records of one JobID numbered 1, 2, ...), step rows
(``.batch``, ``.extern``, ``.0``) become ``job_steps`` attached to their
attempt, and the expanded node lists become ``job_nodes``.
"""

from collections.abc import Callable
from pathlib import Path
from typing import Any

import duckdb
import polars as pl

from relkit.errors import IngestError
from relkit.ingest._common import IngestResult, Parsed, check_tz, file_format, ingest
from relkit.ingest._hostlist import expand_hostlists
from relkit.ingest._pseudonym import load_pseudonym_key, pseudonymize
from relkit.ingest._slurm_fields import (
    array_pending_counts,
    duration_seconds,
    gpus_from_tres,
    job_id_parts,
    state_parts,
)
from relkit.schema import UTC
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
    "nodelist": "nodelist",
    "alloctres": "alloctres",
    "allocgres": "allocgres",
    "timelimit": "timelimit",
    "totalcpu": "totalcpu",
    "reason": "reason",
}

_TIME_FORMAT = "%Y-%m-%dT%H:%M:%S"
_TIME_FORMAT_SPACE = "%Y-%m-%d %H:%M:%S"
#: Zones without daylight-saving changes: localising needs one reading.
_FIXED_ZONES = ("UTC", "Etc/UTC", "Etc/GMT", "GMT", "Zulu", "Etc/Zulu", "Universal")
_NO_TIME = ("Unknown", "None", "")
_DELIM = "\x1e"  # never in sacct text: DuckDB returns each line as one field


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
def _read_lines(store: Store, path: Path) -> pl.DataFrame:
    """Every physical line as text (``line_no``, ``line``); blank lines are null."""
    fmt = file_format(path)
    if fmt not in ("text", "gzip"):
        hint = {
            "json": "it looks like JSON; Kubernetes pod/job JSON is --kind k8s",
            "parquet": "it is Parquet, not a sacct text dump",
        }.get(fmt, f"it is not text ({fmt})")
        msg = f"{hint}. --kind sacct expects `sacct -P` output (| separated)."
        raise IngestError(path, msg)
    try:
        frame = store.connection.sql(
            "SELECT line FROM read_csv($path, delim = $delim, header = false, "
            "quote = '', escape = '', columns = {'line': 'VARCHAR'}, "
            "auto_detect = false, compression = 'auto', max_line_size = 67108864)",
            params={"path": str(path), "delim": _DELIM},
        ).pl()
    except duckdb.Error as exc:
        short = str(exc).strip().splitlines()[0] if str(exc).strip() else repr(exc)
        msg = (
            f"cannot be read as text ({short}). Is it UTF-8 `sacct -P` output? "
            "Convert other encodings first, e.g. iconv -f LATIN1 -t UTF-8 IN > OUT."
        )
        raise IngestError(path, msg) from exc
    return frame.with_row_index("line_no", offset=1).select(
        pl.col("line_no").cast(pl.Int64),
        pl.col("line").str.strip_suffix("\r"),
    )


def _header(path: Path, lines: pl.DataFrame) -> tuple[int, list[str], bool]:
    """Find and check the header; return (its line number, names, trailing '|')."""
    text = lines.filter(pl.col("line").str.strip_chars() != "")
    if text.height == 0:
        msg = "the file is empty; expected `sacct -P` output with a header line."
        raise IngestError(path, msg)
    header_no, header = text.row(0)
    following = text["line"][1] if text.height > 1 else ""
    if "|" not in header and (len(header.split()) > 1 or following.startswith("--")):
        msg = (
            "this is fixed-width sacct output (columns padded with spaces, values "
            "such as CANCELLED+ truncated), which cannot be read reliably. Export "
            "with `sacct -P` (--parsable2), e.g. sacct -P --allusers --duplicates "
            "--format=JobID,JobIDRaw,JobName,User,Partition,State,ExitCode,Submit,"
            "Start,End,Elapsed,NNodes,AllocTRES,NodeList"
        )
        raise IngestError(path, msg, line_no=header_no)
    trailing = header.endswith("|")
    names = (header[:-1] if trailing else header).split("|")
    lower = [n.strip().lower() for n in names]
    if "jobid" not in lower:
        msg = (
            f"no JobID column in the header {names[:8]}; expected `sacct -P` "
            "output whose header names sacct fields (JobID|State|Start|End|...). "
            "Other job tables: Kubernetes JSON is --kind k8s."
        )
        raise IngestError(path, msg, line_no=header_no)
    if dups := sorted({c for c in lower if lower.count(c) > 1 and c}):
        msg = f"duplicate header column(s) {dups}; export each field once."
        raise IngestError(path, msg, line_no=header_no)
    return int(header_no), names, trailing


def _localize_pair(naive: pl.Expr, tz: str) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """Both readings of a local time: (earliest UTC, latest UTC, non-existent)."""
    early = naive.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
    late = naive.dt.replace_time_zone(tz, ambiguous="latest", non_existent="null")
    shifted = (naive + pl.duration(hours=1)).dt.replace_time_zone(
        tz, ambiguous="earliest", non_existent="null"
    )
    missing = naive.is_not_null() & early.is_null()
    early = pl.coalesce(early, shifted).dt.convert_time_zone("UTC")
    late = pl.coalesce(late, shifted).dt.convert_time_zone("UTC")
    return early, late, missing


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
    frame = frame.with_columns(
        [_naive(c, _time_format(frame[c])).alias(f"_{c}_naive") for c in cols]
    ).with_columns(
        [
            (
                ~(pl.col(c).is_null() | pl.col(c).is_in(list(_NO_TIME)))
                & pl.col(f"_{c}_naive").is_null()
            ).alias(f"_{c}_bad")
            for c in cols
        ]
    )
    if tz is None:
        present = frame.filter(
            pl.any_horizontal([pl.col(f"_{c}_naive").is_not_null() for c in cols])
            if cols
            else pl.lit(value=False)
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
    out: dict[str, pl.Expr] = {}
    flags: list[pl.Expr] = []
    for c in ("submit", "start", "end"):
        if c not in cols or tz is None:
            out[f"_{c}_e"] = pl.lit(None, dtype=UTC)
            out[f"_{c}_l"] = pl.lit(None, dtype=UTC)
            out[f"_{c}_gap"] = pl.lit(value=False)
            continue
        if tz in _FIXED_ZONES:
            utc = pl.col(f"_{c}_naive").dt.replace_time_zone("UTC")
            early, late, gap = utc, utc, pl.lit(value=False)
        else:
            early, late, gap = _localize_pair(pl.col(f"_{c}_naive"), tz)
        out[f"_{c}_e"], out[f"_{c}_l"], out[f"_{c}_gap"] = early, late, gap
    frame = frame.with_columns(**out)
    el = pl.col("elapsed_s")
    s_e, s_l, e_e, e_l = (
        pl.col(f"_{x}") for x in ("start_e", "start_l", "end_e", "end_l")
    )

    def off(s: pl.Expr, e: pl.Expr) -> pl.Expr:
        return ((e - s).dt.total_microseconds() / 1e6 - el).abs()

    # Elapsed is computed by Slurm from epochs: of the (start, end) readings,
    # take the pair whose difference is Elapsed (earliest first on a tie)
    d = [off(s_e, e_e), off(s_e, e_l), off(s_l, e_e), off(s_l, e_l)]
    best = pl.min_horizontal(d)
    both = s_e.is_not_null() & e_e.is_not_null() & el.is_not_null()
    start = (
        pl.when(both & (d[0] == best))
        .then(s_e)
        .when(both & (d[1] == best))
        .then(s_e)
        .when(both & (d[2] == best))
        .then(s_l)
        .when(both)
        .then(s_l)
        .otherwise(s_e)
    )
    end = (
        pl.when(both & (d[0] == best))
        .then(e_e)
        .when(both & (d[1] == best))
        .then(e_l)
        .when(both & (d[2] == best))
        .then(e_e)
        .when(both)
        .then(e_l)
        .otherwise(e_e)
    )
    frame = frame.with_columns(submit_ts=pl.col("_submit_e"), start_ts=start, _end=end)
    negative = pl.col("_end") < pl.col("start_ts")
    end_from_elapsed = negative & el.is_not_null()
    frame = frame.with_columns(
        end_ts=pl.when(end_from_elapsed)
        .then(pl.col("start_ts") + pl.duration(microseconds=(el * 1e6).cast(pl.Int64)))
        .when(negative)
        .then(pl.lit(None, dtype=UTC))
        .otherwise(pl.col("_end")),
        _negative_no_elapsed=negative & el.is_null(),
    )
    ambiguous = [
        pl.when(pl.col(f"_{c}_e") != pl.col(f"_{c}_l")).then(
            pl.lit(f"dst_ambiguous_{c}")
        )
        for c in ("submit", "start", "end")
    ]
    gaps = [
        pl.when(pl.col(f"_{c}_gap")).then(pl.lit(f"dst_nonexistent_{c}"))
        for c in ("submit", "start", "end")
    ]
    resolved = pl.when(both & ((s_e != s_l) | (e_e != e_l)) & (best < 1.0)).then(
        pl.lit("dst_resolved_by_elapsed")
    )
    flags = [
        *ambiguous,
        *gaps,
        resolved,
        pl.when(end_from_elapsed).then(pl.lit("end_from_elapsed")),
    ]
    return frame.with_columns(
        _time_flags=pl.concat_str(flags, separator=",", ignore_nulls=True)
    )


def _field(frame: pl.DataFrame, name: str) -> pl.Expr:
    return pl.col(name) if name in frame.columns else pl.lit(None, dtype=pl.String)


def _records(path: Path, lines: pl.DataFrame) -> tuple[pl.DataFrame, list[str], int]:
    """Split the data lines into named text fields; return (frame, extras, ignored)."""
    header_no, names, trailing = _header(path, lines)
    header_line = lines.filter(pl.col("line_no") == header_no)["line"][0]
    data = lines.filter(
        (pl.col("line_no") > header_no) & (pl.col("line").str.strip_chars() != "")
    )
    repeated = pl.col("line") == header_line
    n_repeated = int(data.select(repeated.sum()).item())
    data = data.filter(~repeated)
    line = pl.col("line")
    if trailing:
        line = line.str.strip_suffix("|")
    width = len(names)
    data = data.with_columns(
        n_fields=line.str.count_matches("|", literal=True) + 1,
        _parts=line.str.split_exact("|", width - 1),
    )
    lower = [n.strip().lower() for n in names]
    known = {i: SACCT_COLUMNS[n] for i, n in enumerate(lower) if n in SACCT_COLUMNS}
    extras = [names[i] for i, n in enumerate(lower) if n not in SACCT_COLUMNS]
    data = data.with_columns(
        [
            pl.col("_parts")
            .struct.field(f"field_{i}")
            .str.strip_chars()
            .replace("", None)
            .alias(col)
            for i, col in known.items()
        ]
    ).with_columns(_width=pl.lit(width))
    return data, extras, n_repeated


def _parse(
    store: Store,
    path: Path,
    tz: str | None,
    key: bytes | None,
    keep_going: Callable[[], bool] = lambda: True,
) -> Parsed | None:
    lines = _read_lines(store, path)
    if not keep_going():  # the file's hash says: already ingested, skip
        return None
    frame, extras, n_repeated = _records(path, lines)
    n_lines = frame.height + n_repeated
    ids = frame.select(p=job_id_parts(pl.col("jobid"))).unnest("p")
    frame = pl.concat([frame, ids], how="horizontal")
    if "state" in frame.columns:  # keep the raw text for the reject reasons
        frame = frame.rename({"state": "_state_raw"})
    state, uid, state_checks = state_parts(_field(frame, "_state_raw"))
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
    raw_elapsed = _field(frame, "elapsedraw")
    raw_elapsed_num = raw_elapsed.cast(pl.Int64, strict=False)
    nnodes = _field(frame, "nnodes")
    nnodes_num = nnodes.cast(pl.Int64, strict=False)
    # checks: (condition, message); messages are built for the bad rows only
    checks: list[tuple[pl.Expr, pl.Expr]] = [
        (
            pl.col("n_fields") != pl.col("_width"),
            pl.format(
                "expected {} fields as in the header, found {} (a field "
                "containing '|'?)",
                "_width",
                "n_fields",
            ),
        ),
        (pl.col("jobid").is_null(), pl.lit("empty JobID")),
        (
            pl.col("jobid").is_not_null() & pl.col("base_job_id").is_null(),
            pl.format(
                "malformed JobID '{}' (expected e.g. 4108, 4108_7, "
                "4108_[8-15%4], 4120+1, 4100.batch)",
                "jobid",
            ),
        ),
        *state_checks,
        *[
            (pl.col(f"_{c}_why").is_not_null(), pl.col(f"_{c}_why"))
            for c in ("elapsed", "timelimit", "totalcpu")
        ],
        (
            raw_elapsed.is_not_null() & raw_elapsed_num.is_null(),
            pl.format("ElapsedRaw is not a whole number: '{}'", raw_elapsed),
        ),
        (
            nnodes.is_not_null() & (nnodes_num.is_null() | (nnodes_num < 0)),
            pl.format("NNodes is not a whole number >= 0: '{}'", nnodes),
        ),
    ]
    frame = frame.with_columns(
        state=state,
        cancelled_by_uid=uid,
        elapsed_s=pl.coalesce(raw_elapsed_num.cast(pl.Float64), "_elapsed_s"),
        timelimit_s="_timelimit_s",
        total_cpu_s="_totalcpu_s",
        n_nodes_decl=nnodes_num,
        n_gpus=gpus_from_tres(_field(frame, "alloctres"), _field(frame, "allocgres")),
    )
    # no runtime without a start: sacct prints Elapsed 00:00:00 for pending jobs
    frame = _times(frame, tz, path)
    if "start" in frame.columns:
        frame = frame.with_columns(
            elapsed_s=pl.when(pl.col("start_ts").is_not_null()).then(
                pl.col("elapsed_s")
            )
        )
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
    checks.append(
        (
            pl.col("_negative_no_elapsed"),
            pl.lit("End is before Start and no Elapsed to resolve it"),
        )
    )
    is_step = pl.col("step").is_not_null()
    hosts, host_errors = expand_hostlists(
        frame["nodelist"]
        if "nodelist" in frame.columns
        else pl.Series([None] * frame.height, dtype=pl.String)
    )
    frame = frame.with_columns(_host_error=host_errors)
    checks.append((pl.col("_host_error").is_not_null(), pl.col("_host_error")))
    frame = frame.with_columns(
        _bad=pl.any_horizontal([c.fill_null(value=False) for c, _ in checks])
    )
    frame = (
        frame.with_columns(
            _reasons=pl.when(pl.col("_bad")).then(
                pl.concat_str(
                    [pl.when(c.fill_null(value=False)).then(m) for c, m in checks],
                    separator="; ",
                    ignore_nulls=True,
                )
            )
        )
        if frame["_bad"].any()
        else frame.with_columns(_reasons=pl.lit(None, dtype=pl.String))
    )
    bad = frame.filter(pl.col("_reasons").is_not_null())
    good = frame.filter(pl.col("_reasons").is_null())
    rejects = bad.select("line_no", reason="_reasons", raw="line")
    n_hosts = (
        hosts.group_by("index").agg(n=pl.len().cast(pl.Int64))
        if hosts.height
        else pl.DataFrame(schema={"index": pl.UInt32, "n": pl.Int64})
    )
    # the host expansion's ``index`` is the record's row in ``frame``
    good = good.join(
        frame.with_row_index("index").select("index", "line_no"),
        on="line_no",
        how="left",
    )
    good = good.join(n_hosts, on="index", how="left")
    alloc = good.filter(~is_step)
    steps = good.filter(is_step)
    # attempts: requeued records repeat the JobID; number them in time order
    if alloc["jobid"].is_duplicated().any():
        alloc = alloc.sort(
            "jobid", "submit_ts", "start_ts", "line_no", nulls_last=True
        ).with_columns(
            _new=(pl.col("jobid") != pl.col("jobid").shift()).fill_null(value=True)
        )
        alloc = alloc.with_columns(
            _row=pl.int_range(pl.len(), dtype=pl.Int64)
        ).with_columns(
            attempt=(
                pl.col("_row")
                - pl.when(pl.col("_new")).then(pl.col("_row")).forward_fill()
                + 1
            ).cast(pl.Int32)
        )
    else:  # no requeued record: every row is attempt 1
        alloc = alloc.with_columns(attempt=pl.lit(1, dtype=pl.Int32))
    if key is not None:
        alloc = alloc.with_columns(
            [
                pseudonymize(alloc[col], key=key, field=field).alias(col)
                for col, field in (("user", "user"), ("jobname", "name"))
                if col in alloc.columns
            ]
        )
    has_hosts = pl.col("n").is_not_null()
    nnodes_flag = pl.when(
        has_hosts
        & pl.col("n_nodes_decl").is_not_null()
        & (pl.col("n") != pl.col("n_nodes_decl"))
    ).then(pl.lit("nnodes_differs_from_nodelist"))
    jobs = alloc.select(
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
        flags=pl.concat_str(
            [pl.col("_time_flags").replace("", None), nnodes_flag],
            separator=",",
            ignore_nulls=True,
        ).replace("", None),
    )
    # a step belongs to the latest allocation row of its job before it
    owner = pl.concat_str(
        "base_job_id",
        pl.when(pl.col("array_task").is_not_null()).then(
            pl.format("_{}", "array_task")
        ),
        pl.when(pl.col("array_pending").is_not_null()).then(
            pl.format("_[{}]", "array_pending")
        ),
        pl.when(pl.col("het_offset").is_not_null()).then(
            pl.format("+{}", "het_offset")
        ),
        ignore_nulls=True,
    )
    steps = steps.with_columns(_owner=owner).sort("line_no")
    anchors = jobs.select(_owner="job_id", _at="line_no", attempt="attempt").sort("_at")
    steps = steps.join_asof(
        anchors,
        left_on="line_no",
        right_on="_at",
        by="_owner",
        strategy="backward",
        check_sortedness=False,
    )
    job_steps = steps.select(
        "line_no",
        job_id="_owner",
        attempt="attempt",
        step="step",
        state="state",
        exit_code=_field(steps, "exitcode"),
        start_ts="start_ts",
        end_ts="end_ts",
        elapsed_s="elapsed_s",
        n_nodes=pl.coalesce("n_nodes_decl", "n"),
    )
    job_nodes = (
        alloc.select("index", job_id="jobid", attempt="attempt")
        .join(hosts, on="index", how="inner")
        .select("job_id", "attempt", "host")
    )
    options: dict[str, Any] = {}
    if extras:
        options["ignored_columns"] = extras
    ignored = (
        pl.DataFrame(
            {"reason": ["repeated_header"], "n_lines": [n_repeated]},
            schema={"reason": pl.String, "n_lines": pl.Int64},
        )
        if n_repeated
        else None
    )
    return Parsed(
        n_lines=n_lines,
        tables={"jobs": jobs, "job_steps": job_steps, "job_nodes": job_nodes},
        rejects=rejects,
        options=options,
        n_loaded=jobs.height + job_steps.height,
        ignored=ignored,
    )


def read_sacct(
    store: Store,
    path: str | Path,
    *,
    tz: str | None = None,
    replace: bool = False,
    pseudonymize: bool = False,
    pseudonym_key_file: str | Path | None = None,
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
        seconds), ``NNodes``, ``NodeList``, ``AllocTRES`` (GPUs from
        ``gres/gpu=N``) or ``AllocGRES``, ``Timelimit``, ``TotalCPU``,
        ``Reason``. Other columns are ignored (listed in the source's options).
    tz : str, optional
        IANA zone of the dump's times (sacct prints local time without an
        offset), e.g. ``"America/Chicago"``; ``"Z"`` means UTC. Required when
        the file has any time value.
    replace : bool, default False
        Re-read a file ingested before, dropping its earlier rows first.
    pseudonymize : bool, default False
        Replace ``User`` and ``JobName`` by keyed pseudonyms
        (HMAC-SHA256; the same key gives the same pseudonym in every file).
    pseudonym_key_file : str or Path, optional
        File holding the key; default: the environment variable
        ``RELKIT_PSEUDONYM_KEY``.

    Returns
    -------
    IngestResult
        ``n_lines`` data lines = ``n_loaded`` (allocation and step rows) +
        ``n_rejected`` + ``n_ignored`` (repeated header lines).

    Raises
    ------
    IngestError
        If the file is missing, not text, fixed-width ``sacct`` output (the
        message asks for ``sacct -P``), has no ``JobID`` column, has times but
        no ``tz``, ``tz`` is unknown, or (without ``replace``) it changed since
        it was read from the same path.
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
    repeats, each time has two readings: Slurm computes Elapsed from epochs, so
    the pair of Start/End readings that differ by Elapsed is taken (flag
    ``dst_resolved_by_elapsed``); an End before Start becomes Start + Elapsed
    (``end_from_elapsed``), so no negative duration is stored. Node lists are
    expanded strictly (:func:`relkit.ingest.expand_hostlist`). A record is
    rejected, with its line and the reason, for a malformed JobID, State,
    duration, time, NNodes or node list, or a field count different from the
    header's.

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
    key = load_pseudonym_key(pseudonym_key_file) if pseudonymize else None
    return ingest(
        store,
        path,
        kind="sacct",
        options={"tz": tz, "pseudonymize": pseudonymize},
        parse=lambda p, go: _parse(store, p, tz, key, go),
        replace=replace,
        overlap_hash=True,
    )
