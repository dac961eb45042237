"""Parsers of ``sacct`` field values, as polars expressions (no type guessing).

Job ids, states, durations and TRES strings are text in the dump; each parser
here returns the parsed value and a reason for values that do not parse, so
the reader can reject the record with its line number.
"""

import polars as pl

__all__ = [
    "JOB_ID_PATTERN",
    "SLURM_STATES",
    "array_pending_counts",
    "duration_seconds",
    "gpus_from_tres",
    "job_id_parts",
    "state_parts",
]

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
    not in the dump). The regex runs once per value (eager series, no
    re-evaluation per field).
    """
    text = raw.cast(pl.String).str.strip_chars()
    # most values are plain HH:MM:SS: slice those, run the regex on the others
    plain = pl.DataFrame({"text": text}).select(
        fast=(pl.col("text").str.len_bytes() == 8)
        & (pl.col("text").str.slice(2, 1) == ":")
        & (pl.col("text").str.slice(5, 1) == ":"),
        d=pl.lit(None, dtype=pl.String),
        h=pl.col("text").str.slice(0, 2),
        m=pl.col("text").str.slice(3, 2),
        s=pl.col("text").str.slice(6, 2),
        f=pl.lit(None, dtype=pl.String),
    )
    fast = plain["fast"].fill_null(value=False)
    g = plain.drop("fast").with_columns(
        [pl.when(fast).then(pl.col(c)).alias(c) for c in ("h", "m", "s")]
    )
    slow = (~fast).arg_true()
    if slow.len():
        parsed = text.gather(slow).str.extract_groups(_DURATION).struct.unnest()
        parsed.columns = ["d", "h", "m", "s", "f"]
        g = g.with_columns(
            [g[c].scatter(slow, parsed[c]).alias(c) for c in ("d", "h", "m", "s", "f")]
        )
    frame = pl.DataFrame({"text": text}).hstack(g)
    frac_len = pl.col("f").str.len_chars()
    d, h, m, sec = (
        pl.col(c).cast(pl.Int64, strict=False).cast(pl.Float64)
        for c in ("d", "h", "m", "s")
    )
    frac = pl.col("f").cast(pl.Int64, strict=False).cast(pl.Float64) / pl.lit(10.0).pow(
        frac_len
    )
    # (the fast path's slices may hold a sign: a number must also be >= 0)
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
    reason = pl.Series("reason", [None] * frame.height, dtype=pl.String)
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


def state_parts(raw: pl.Expr) -> tuple[pl.Expr, pl.Expr, list[tuple[pl.Expr, pl.Expr]]]:
    """Normalise a ``State`` value: ``(state, cancelled_by_uid, checks)``.

    ``CANCELLED by 12345`` becomes ``CANCELLED`` with uid ``"12345"``. A value
    ending in ``+`` was truncated by fixed-width output and is rejected; other
    upper-case words are kept as they are (new Slurm states). ``checks`` are
    (condition, message) pairs of values to reject.
    """
    text = raw.str.strip_chars()
    plain = text.str.contains(r"^[A-Z_]+$")
    g = text.str.extract_groups(r"^([A-Z_]+) by ([0-9]+)$")
    state = pl.when(plain).then(text).otherwise(g.struct.field("1"))
    uid = g.struct.field("2")
    checks = [
        (
            text.str.ends_with("+"),
            pl.format(
                "truncated state '{}' (fixed-width sacct output); export with "
                "sacct -P (--parsable2)",
                text,
            ),
        ),
        (
            text.is_not_null()
            & (text != "")
            & ~text.str.ends_with("+")
            & state.is_null(),
            pl.format("unparseable State: '{}'", text),
        ),
    ]
    return state, uid, checks


def gpus_from_tres(tres: pl.Expr, gres: pl.Expr) -> pl.Expr:
    """GPU count from ``AllocTRES`` (``gres/gpu=8``) or ``AllocGRES`` (``gpu:8``).

    The untyped ``gres/gpu=N`` is the total; without it, the first typed
    ``gres/gpu:a100=N``. Null when neither field names GPUs.
    """
    plain = tres.str.extract(r"(?:^|,)gres/gpu=([0-9]+)")
    typed = tres.str.extract(r"(?:^|,)gres/gpu:[^=,]+=([0-9]+)")
    old = gres.str.extract(r"(?:^|,)gpu(?::[^:,()]+)?:([0-9]+)")
    return pl.coalesce(plain, typed, old).cast(pl.Int64, strict=False)


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
