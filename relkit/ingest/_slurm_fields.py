"""Parsers of ``sacct`` field values, as polars expressions (no type guessing).

Job ids, states, durations and TRES strings are text in the dump; each parser
here returns the parsed value and a reason for values that do not parse, so
the reader can reject the record with its line number.
"""

from collections.abc import Callable

import polars as pl

from relkit.ingest._sacct_lines import streamed
from relkit.schema import UTC

__all__ = [
    "FIXED_ZONES",
    "JOB_ID_PATTERN",
    "SLURM_STATES",
    "array_pending_counts",
    "duration_seconds",
    "gpus_from_tres",
    "job_id_parts",
    "resolve_times",
    "state_parts",
]

#: Zones without daylight-saving changes: localising needs one reading.
FIXED_ZONES = ("UTC", "Etc/UTC", "Etc/GMT", "GMT", "Zulu", "Etc/Zulu", "Universal")
#: Slack of comparisons with Elapsed, seconds (sacct prints whole seconds).
_TOLERANCE_S = 1.0

#: ``base[_task | _[pending]][+het][.step]``: ``4108_7``, ``4108_[8-15%4]``,
#: ``4120+1``, ``4100.batch``, ``4120+0.0``.
JOB_ID_PATTERN = (
    r"^([0-9]+)(?:_([0-9]+)|_\[([^\]]*)\])?(?:\+([0-9]+))?(?:\.([A-Za-z0-9_\-]+))?$"
)

#: Job states of ``sacct`` (Slurm 23-25 ``job_state_string``).
SLURM_STATES = (
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "COMPLETING",
    "CONFIGURING",
    "DEADLINE",
    "FAILED",
    "LAUNCH_FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PENDING",
    "POWER_UP_NODE",
    "PREEMPTED",
    "RECONFIG_FAIL",
    "REQUEUED",
    "REQUEUE_FED",
    "REQUEUE_HOLD",
    "RESIZING",
    "RESV_DEL_HOLD",
    "REVOKED",
    "RUNNING",
    "SIGNALING",
    "SPECIAL_EXIT",
    "STAGE_OUT",
    "STOPPED",
    "SUSPENDED",
    "TIMEOUT",
    "UPDATE_DB",
)

_DURATION = r"^(?:([0-9]+)-)?(?:([0-9]+):)?([0-9]+):([0-9]+)(?:\.([0-9]+))?$"


def duration_seconds(
    raw: pl.Series, column: str, *, limits: bool = False
) -> tuple[pl.Series, pl.Series]:
    r"""Parse Slurm durations ``[D-][HH:]MM:SS[.fff]`` to float seconds.

    Returns ``(seconds, reason)`` as series. Null or empty is null (never 0).
    Two parts are ``MM:SS`` (TotalCPU ``45:30.500``), never ``HH:MM``; with a
    day part, hours are required (``1-04:18:35``). Minutes and seconds must be
    below 60, hours below 24 after a day part. With ``limits`` (Timelimit),
    ``UNLIMITED`` is +inf and ``Partition_Limit`` null (the partition's limit,
    not in the dump). Plain ``HH:MM:SS`` values (most of a dump) are read as
    clock times; the regex runs once on the others.
    """
    text = raw.cast(pl.String)
    t = pl.col("t")
    clock = t.str.to_time("%H:%M:%S", strict=False)
    fast_ = (clock.is_not_null() & (t.str.len_bytes() == _CLOCK_LEN)).fill_null(
        value=False
    )
    out = (
        text.to_frame("t")
        .lazy()
        .select(seconds=pl.when(fast_).then(clock.cast(pl.Int64) / 1e9), fast=fast_)
        .collect(engine="streaming")
    )
    seconds, fast = out["seconds"], out["fast"]
    reason = pl.repeat(None, text.len(), dtype=pl.String, eager=True).alias("reason")
    slow = (~fast & text.is_not_null()).arg_true()
    if slow.len():
        got, why = _durations_by_regex(text.gather(slow), column, limits=limits)
        seconds = seconds.scatter(slow, got)
        reason = reason.scatter(slow, why)
    return seconds, reason


_CLOCK_LEN = 8  # HH:MM:SS


def _durations_by_regex(
    raw: pl.Series, column: str, *, limits: bool
) -> tuple[pl.Series, pl.Series]:
    """Parse the durations that are not plain ``HH:MM:SS`` (see above)."""
    text = raw.cast(pl.String).str.strip_chars()
    g = text.str.extract_groups(_DURATION).struct.unnest()
    g.columns = ["d", "h", "m", "s", "f"]
    frame = pl.DataFrame({"text": text}).hstack(g)
    frac_len = pl.col("f").str.len_chars()
    d, h, m, sec = (
        pl.col(c).cast(pl.Int64, strict=False).cast(pl.Float64)
        for c in ("d", "h", "m", "s")
    )
    frac = pl.col("f").cast(pl.Int64, strict=False).cast(pl.Float64) / pl.lit(10.0).pow(
        frac_len
    )
    numbers = [
        pl.col(c).is_null() | pl.col(c).cast(pl.Int64, strict=False).is_not_null()
        for c in ("d", "h", "m", "s", "f")
    ]
    valid = (
        pl.all_horizontal(numbers)
        & m.is_not_null()
        & sec.is_not_null()
        & ~(d.is_not_null() & h.is_null())
        & (m >= 0)
        & (m < 60)
        & (sec >= 0)
        & (sec < 60)
        & (h.is_null() | (h >= 0))
        & (d.is_null() | (h < 24))
    ).fill_null(value=False)
    seconds = (
        d.fill_null(0) * 86400
        + h.fill_null(0) * 3600
        + m * 60
        + sec
        + frac.fill_null(0)
    )
    present = pl.col("text").is_not_null() & (pl.col("text") != "")
    special = (
        pl.col("text").is_in(["UNLIMITED", "Partition_Limit", "INVALID"])
        if limits
        else pl.lit(value=False)
    )
    value = pl.when(valid).then(seconds)
    if limits:
        value = (
            pl.when(pl.col("text") == "UNLIMITED")
            .then(pl.lit(float("inf")))
            .when(special)
            .then(pl.lit(None, dtype=pl.Float64))
            .otherwise(value)
        )
    out = frame.select(
        value.cast(pl.Float64).alias("seconds"),
        (present & ~special & ~valid).fill_null(value=False).alias("bad"),
    )
    reason = pl.repeat(None, frame.height, dtype=pl.String, eager=True).alias("reason")
    if out["bad"].any():
        where = out["bad"].arg_true()
        texts = text.gather(where).to_list()
        reason = reason.scatter(
            where,
            [
                f"unparseable duration in {column}: '{t}' (expected [D-]HH:MM:SS, "
                "MM:SS or MM:SS.fff)"
                for t in texts
            ],
        )
    return out["seconds"], reason


def job_id_parts(raw: pl.Expr) -> pl.Expr:
    """Split a ``JobID`` into a struct of text parts (fields named as the columns).

    ``base_job_id``, ``array_task``, ``array_pending`` (``8-15%4``),
    ``het_offset`` (text), ``step``; all null when the id does not match
    :data:`JOB_ID_PATTERN`.
    """
    g = raw.str.extract_groups(JOB_ID_PATTERN)
    return pl.struct(
        base_job_id=g.struct.field("1"),
        array_task=g.struct.field("2"),
        array_pending=g.struct.field("3"),
        het_offset=g.struct.field("4"),
        step=g.struct.field("5"),
    )


def state_parts(raw: pl.Series) -> tuple[pl.Series, pl.Series, pl.Series]:
    """Normalise ``State`` values: ``(state, cancelled_by_uid, reason)``.

    ``CANCELLED by 12345`` becomes ``CANCELLED`` with uid ``"12345"``. A value
    ending in ``+`` was truncated by fixed-width output and is rejected; other
    upper-case words are kept as they are (new Slurm states; the reader flags
    them). ``reason`` says why a value is rejected (null where it is fine).
    Known states skip the regex.
    """
    text = raw.cast(pl.String)
    known = text.is_in(SLURM_STATES).fill_null(value=False)
    state = text.zip_with(known, pl.Series([None], dtype=pl.String))
    uid = pl.repeat(None, text.len(), dtype=pl.String, eager=True)
    reason = pl.repeat(None, text.len(), dtype=pl.String, eager=True)
    other = (~known & text.is_not_null()).arg_true()
    if other.len():
        rest = text.gather(other).str.strip_chars().to_frame("t")
        g = pl.col("t").str.extract_groups(r"^([A-Z_]+) by ([0-9]+)$")
        plain = pl.col("t").str.contains(r"^[A-Z_]+$")
        parsed = rest.with_columns(
            state=pl.when(plain).then("t").otherwise(g.struct.field("1")),
            uid=g.struct.field("2"),
        ).with_columns(
            why=pl.when(pl.col("t").str.ends_with("+"))
            .then(
                pl.format(
                    "truncated state '{}' (fixed-width sacct output); export with "
                    "sacct -P (--parsable2)",
                    "t",
                )
            )
            .when(pl.col("state").is_null() & (pl.col("t") != ""))
            .then(pl.format("unparseable State: '{}'", "t"))
        )
        state = state.scatter(other, parsed["state"])
        uid = uid.scatter(other, parsed["uid"])
        reason = reason.scatter(other, parsed["why"])
    return state, uid, reason


def gpus_from_tres(
    tres: pl.Series | None, gres: pl.Series | None, n: int
) -> tuple[pl.Series, pl.Series]:
    """GPU count from ``AllocTRES`` (``gres/gpu=8``) or ``AllocGRES`` (``gpu:8``).

    Returns ``(n_gpus, bad)`` for ``n`` records (either field may be absent).
    The untyped ``gres/gpu=N`` is the total; without it, the first typed
    ``gres/gpu:a100=N``. A record whose ``AllocTRES`` (or ``AllocGRES``) has a
    value that names no GPU (``billing=64,cpu=64,mem=250G,node=1``: a CPU-only
    job) has 0 GPUs; null only where neither field has a value (the column is
    absent, or empty, as for a job that never started). ``bad`` is the text
    of a GPU count that is not a whole number >= 0 (``gres/gpu=-8``), null
    where the counts are fine. Each pattern runs once, on the records the
    earlier ones left open.
    """
    raw = pl.repeat(None, n, dtype=pl.String, eager=True)
    if tres is not None:
        got = (
            tres.to_frame("t")
            .lazy()
            .select(
                raw=pl.col("t").str.extract(r"gres/gpu=([^,]*)"),
                typed=pl.col("t").str.contains("gres/gpu:", literal=True),
            )
            .collect(engine="streaming")
        )
        raw = got["raw"]
        open_ = (raw.is_null() & got["typed"]).fill_null(value=False)
        if open_.any():
            rows = open_.arg_true()
            typed = tres.gather(rows).str.extract(r"gres/gpu:[^=,]+=([^,]*)")
            raw = raw.scatter(rows, typed)
    if gres is not None:
        rows = (raw.is_null() & gres.is_not_null()).arg_true()
        if rows.len():
            old = gres.gather(rows).str.extract(r"(?:^|,)gpu(?::[^:,()]+)?:([^,(]*)")
            raw = raw.scatter(rows, old)
    count = raw.cast(pl.Int64, strict=False)
    ok = (count >= 0).fill_null(value=False)
    none_s = pl.Series([None], dtype=pl.String)
    none_i = pl.Series([None], dtype=pl.Int64)
    # an allocation that names no GPU has none (a CPU-only job)
    told = pl.repeat(False, n, dtype=pl.Boolean, eager=True)
    for field in (tres, gres):
        if field is not None:
            told = told | field.str.strip_chars().str.len_chars().gt(0).fill_null(
                value=False
            )
    zero = raw.is_null() & told
    gpus = count.zip_with(ok, none_i).zip_with(~zero, pl.Series([0], dtype=pl.Int64))
    return gpus, raw.zip_with(~ok & raw.is_not_null(), none_s)


def _pending_count(spec: str) -> tuple[int | None, int | None]:
    """Count the tasks of an array spec ``8-15%4`` / ``1,3,5-9:2``; (n, max running)."""
    body, _, throttle = spec.partition("%")
    total = 0
    for part in body.split(","):
        rng, _, step_text = part.partition(":")
        lo_text, _, hi_text = rng.partition("-")
        if not lo_text.isdigit() or (hi_text and not hi_text.isdigit()):
            return None, None
        if step_text and not step_text.isdigit():
            return None, None
        lo, hi = int(lo_text), int(hi_text or lo_text)
        step = int(step_text or 1)
        if hi < lo or step < 1:
            return None, None
        total += (hi - lo) // step + 1
    limit = int(throttle) if throttle.isdigit() else None
    if throttle and limit is None:
        return None, None
    return total, limit


def array_pending_counts(pending: pl.Series) -> pl.DataFrame:
    """Count the tasks and throttle of pending array specs.

    Columns ``array_pending_n`` and ``array_max_running``; null where the spec
    is null or malformed.
    """
    values = pending.to_list()
    pairs = [_pending_count(v) if v is not None else (None, None) for v in values]
    return pl.DataFrame(
        {
            "array_pending_n": [p[0] for p in pairs],
            "array_max_running": [p[1] for p in pairs],
        },
        schema={"array_pending_n": pl.Int64, "array_max_running": pl.Int64},
    )


# -- times ------------------------------------------------------------------------
def _readings(frame: pl.DataFrame, col: str, tz: str) -> pl.DataFrame:
    """Add the UTC readings of a local time: ``_{col}_e`` <= ``_{col}_l``.

    They differ in the hour a DST change repeats (both instants) and in the
    gap one skips (the time read with the offset before the change and with
    the one after, an hour apart); ``_{col}_gap`` marks the gap.
    """
    naive = pl.col(f"_{col}_naive")
    if tz in FIXED_ZONES:
        utc = naive.dt.replace_time_zone("UTC")
        return streamed(
            frame,
            utc.alias(f"_{col}_e"),
            utc.alias(f"_{col}_l"),
            pl.lit(value=False).alias(f"_{col}_gap"),
        )
    early = naive.dt.replace_time_zone(tz, ambiguous="earliest", non_existent="null")
    late = naive.dt.replace_time_zone(tz, ambiguous="latest", non_existent="null")
    frame = streamed(
        frame,
        early.dt.convert_time_zone("UTC").alias(f"_{col}_e"),
        late.dt.convert_time_zone("UTC").alias(f"_{col}_l"),
        (naive.is_not_null() & early.is_null()).alias(f"_{col}_gap"),
    )
    if not frame[f"_{col}_gap"].any():
        return frame

    def offset(hours: int) -> pl.Expr:  # local - UTC, a few hours away
        moved = naive + pl.duration(hours=hours)
        local = moved.dt.replace_time_zone(
            tz, ambiguous="earliest", non_existent="null"
        )
        return moved - local.dt.convert_time_zone("UTC").dt.replace_time_zone(None)

    before = (naive - offset(-3)).dt.replace_time_zone("UTC")
    after = (naive - offset(3)).dt.replace_time_zone("UTC")
    gap = pl.col(f"_{col}_gap")
    return streamed(
        frame,
        pl.when(gap)
        .then(pl.min_horizontal(before, after))
        .otherwise(pl.col(f"_{col}_e"))
        .alias(f"_{col}_e"),
        pl.when(gap)
        .then(pl.max_horizontal(before, after))
        .otherwise(pl.col(f"_{col}_l"))
        .alias(f"_{col}_l"),
    )


def _pick_readings(
    frame: pl.DataFrame,
    off: Callable[[pl.Expr, pl.Expr], pl.Expr],
    dur: pl.Expr,
) -> pl.DataFrame:
    """Choose Start/End among their DST readings with Elapsed (see below)."""
    el = pl.col("elapsed_s")
    s_e, s_l, e_e, e_l = (
        pl.col(f"_{x}") for x in ("start_e", "start_l", "end_e", "end_l")
    )
    # of the (start, end) readings, take the pair whose difference is Elapsed
    # (earliest first on a tie)
    d = [off(s_e, e_e), off(s_e, e_l), off(s_l, e_e), off(s_l, e_l)]
    both = s_e.is_not_null() & e_e.is_not_null() & el.is_not_null()
    s_two, e_two = s_e != s_l, e_e != e_l
    frame = streamed(
        frame,
        _best=pl.min_horizontal(d),
        _dst=(both & (s_two | e_two)).fill_null(False),
    )
    best = pl.col("_best")
    pick = [both & (x == best) for x in d]
    frame = streamed(
        frame,
        _start=pl.when(pick[0] | pick[1]).then(s_e).when(both).then(s_l).otherwise(s_e),
        _end=pl.when(pick[0] | pick[2]).then(e_e).when(both).then(e_l).otherwise(e_e),
    )
    # no pair fits, but one within the shift: set the DST-hit time from Elapsed
    shift_s = (
        pl.max_horizontal(
            (s_l - s_e).dt.total_microseconds(), (e_l - e_e).dt.total_microseconds()
        )
        / 1e6
    )
    fix = pl.col("_dst") & (best > _TOLERANCE_S) & (best <= shift_s + _TOLERANCE_S)
    frame = streamed(
        frame,
        _fix_end=(fix & e_two).fill_null(False),
        _fix_start=(fix & ~e_two & s_two).fill_null(False),
    )
    return streamed(
        frame,
        _start=pl.when("_fix_start").then(pl.col("_end") - dur).otherwise("_start"),
        _end=pl.when("_fix_end").then(pl.col("_start") + dur).otherwise("_end"),
    )


def resolve_times(frame: pl.DataFrame, tz: str | None) -> pl.DataFrame:
    r"""Settle Submit/Start/End in UTC; Elapsed decides the DST hours.

    ``frame`` holds ``_{submit,start,end}_naive`` (naive datetimes, null when
    missing) and ``elapsed_s``. Adds ``submit_ts``, ``start_ts``, ``end_ts``
    (UTC), ``_negative_no_elapsed`` (End before Start and no Elapsed: the
    caller rejects the record) and ``_time_flags`` (comma-separated):

    - ``dst_ambiguous_<col>``: the local time happens twice (fall back);
    - ``dst_nonexistent_<col>``: the local time never happened (spring
      forward);
    - ``dst_resolved_by_elapsed``: of the readings of an ambiguous or
      non-existent Start or End, the pair whose difference is Elapsed was
      taken (Slurm computes Elapsed from epochs);
    - ``end_from_elapsed`` / ``start_from_elapsed``: no pair of readings fits
      Elapsed, but one within the DST shift: the ambiguous or non-existent
      time was set from the other and Elapsed (an End before Start becomes
      Start + Elapsed too);
    - ``elapsed_mismatch``: End - Start differs from Elapsed by more than 1 s
      and no DST reading explains it (e.g. a suspended job, whose Elapsed
      leaves out the suspension; or an edited dump). Times are kept.

    Without ``tz`` every time is null (the caller refuses files with times).
    """
    cols = ("submit", "start", "end")
    for c in cols:
        if tz is None:
            frame = streamed(
                frame,
                pl.lit(None, dtype=UTC).alias(f"_{c}_e"),
                pl.lit(None, dtype=UTC).alias(f"_{c}_l"),
                pl.lit(value=False).alias(f"_{c}_gap"),
            )
        else:
            frame = _readings(frame, c, tz)
    el = pl.col("elapsed_s")
    s_e, s_l, e_e, e_l = (
        pl.col(f"_{x}") for x in ("start_e", "start_l", "end_e", "end_l")
    )

    def off(s: pl.Expr, e: pl.Expr) -> pl.Expr:
        return ((e - s).dt.total_microseconds() / 1e6 - el).abs()

    dur = pl.duration(microseconds=(el * 1e6).cast(pl.Int64))
    both = s_e.is_not_null() & e_e.is_not_null() & el.is_not_null()
    s_two, e_two = s_e != s_l, e_e != e_l
    two = frame.select((s_two | e_two).any()).item()
    if not two:  # one reading each (a zone without DST, or no DST hour hit)
        frame = streamed(
            frame,
            _best=off(s_e, e_e),
            _dst=pl.lit(value=False),
            _start=s_e,
            _end=e_e,
            _fix_end=pl.lit(value=False),
            _fix_start=pl.lit(value=False),
        )
    else:
        frame = _pick_readings(frame, off, dur)
    best = pl.col("_best")
    negative = pl.col("_end") < pl.col("_start")
    end_from_elapsed = negative & el.is_not_null()
    frame = streamed(
        frame,
        submit_ts=pl.col("_submit_e"),
        start_ts=pl.col("_start"),
        end_ts=pl.when(end_from_elapsed)
        .then(pl.col("_start") + dur)
        .when(negative)
        .then(pl.lit(None, dtype=UTC))
        .otherwise(pl.col("_end")),
        _negative_no_elapsed=negative & el.is_null(),
        _end_from_elapsed=(end_from_elapsed | pl.col("_fix_end")).fill_null(False),
    )
    mismatch = (
        both
        & ~pl.col("_fix_end")
        & ~pl.col("_fix_start")
        & ~pl.col("_end_from_elapsed")
        & (best > _TOLERANCE_S)
    )
    flags = [
        *[
            pl.when(pl.col(f"_{c}_e") != pl.col(f"_{c}_l")).then(
                pl.when(pl.col(f"_{c}_gap"))
                .then(pl.lit(f"dst_nonexistent_{c}"))
                .otherwise(pl.lit(f"dst_ambiguous_{c}"))
            )
            for c in cols
        ],
        pl.when(pl.col("_dst") & (best <= _TOLERANCE_S)).then(
            pl.lit("dst_resolved_by_elapsed")
        ),
        pl.when("_end_from_elapsed").then(pl.lit("end_from_elapsed")),
        pl.when("_fix_start").then(pl.lit("start_from_elapsed")),
        pl.when(mismatch).then(pl.lit("elapsed_mismatch")),
    ]
    return streamed(
        frame, _time_flags=pl.concat_str(flags, separator=",", ignore_nulls=True)
    )
