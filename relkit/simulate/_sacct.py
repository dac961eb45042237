"""The ``sacct -D -P`` dump of every job attempt, as Slurm prints it.

``sacct --allusers --duplicates --parsable2 --format=JobID,JobIDRaw,JobName,User,
Partition,State,ExitCode,Submit,Start,End,Elapsed,NNodes,AllocTRES,NodeList``
(``-a -D -P``): a header line, ``|``-separated fields, local times without
offset, elapsed as ``[D-]HH:MM:SS``, node lists compressed
(``gpu[0001-0004,0010]``), one row per allocation followed by its ``.batch``,
``.extern`` and ``.0`` steps. With ``--duplicates`` every requeued attempt of a
job has its own rows under the same JobID (plain ``sacct -P`` would print only
the last one). Rows are ordered by JobIDRaw, then attempt.
"""

import heapq
from collections.abc import Callable, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import TextIO

import numpy as np
import polars as pl

from relkit.simulate._config import SimConfig

HEADER = (
    "JobID|JobIDRaw|JobName|User|Partition|State|ExitCode|Submit|Start|End|"
    "Elapsed|NNodes|AllocTRES|NodeList"
)
CPUS_PER_GPU = 14
MEM_GB_PER_GPU = 225
CHUNK = 50_000
#: Run files merged at once by :class:`SacctSpool` (open files at a time).
MERGE_FAN_IN = 64

# (state of the allocation) -> ((state, exit) of .batch, of .extern, of .0)
_STEPS = {
    "COMPLETED": (("COMPLETED", "0:0"), ("COMPLETED", "0:0"), ("COMPLETED", "0:0")),
    "FAILED": (("FAILED", None), ("COMPLETED", "0:0"), ("FAILED", None)),
    "NODE_FAIL": (("CANCELLED", "0:15"), ("COMPLETED", "0:0"), ("CANCELLED", "0:9")),
    "CANCELLED": (("CANCELLED", "0:15"), ("COMPLETED", "0:0"), ("CANCELLED", "0:15")),
    "TIMEOUT": (("CANCELLED", "0:15"), ("COMPLETED", "0:0"), ("CANCELLED", "0:15")),
    "OUT_OF_MEMORY": (
        ("OUT_OF_MEMORY", "0:125"),
        ("COMPLETED", "0:0"),
        ("OUT_OF_MEMORY", "0:125"),
    ),
    "PREEMPTED": (("CANCELLED", "0:15"), ("COMPLETED", "0:0"), ("CANCELLED", "0:15")),
    "REQUEUED": (("CANCELLED", "0:15"), ("COMPLETED", "0:0"), ("CANCELLED", "0:15")),
    "RUNNING": (("RUNNING", "0:0"), ("RUNNING", "0:0"), ("RUNNING", "0:0")),
}


def node_ranges(nodes: Sequence[int]) -> list[tuple[int, int]]:
    """Return the runs of consecutive node indices, ``[(first, last), ...]``."""
    arr = np.asarray(nodes, dtype=np.int64)
    if arr.size == 0:
        return []
    step = np.diff(arr)
    if (step <= 0).any():
        arr = np.sort(arr)
        arr = arr[np.concatenate([[True], np.diff(arr) > 0])]
        step = np.diff(arr)
    cut = np.flatnonzero(step != 1)
    lo = np.concatenate([[arr[0]], arr[cut + 1]])
    hi = np.concatenate([arr[cut], [arr[-1]]])
    return list(zip(lo.tolist(), hi.tolist(), strict=True))


def hostlist(prefix: str, width: int, ranges: Sequence[tuple[int, int]]) -> str:
    """Format 0-based node index runs as a Slurm host list (``gpu[0001-0004,0010]``).

    Host ``i`` is ``prefix`` + ``i + 1`` zero padded to ``width`` digits; no
    runs give ``None assigned``, as ``sacct`` prints for a pending job.
    """
    if not ranges:
        return "None assigned"
    if len(ranges) == 1 and ranges[0][0] == ranges[0][1]:
        return f"{prefix}{ranges[0][0] + 1:0{width}d}"
    parts = [
        f"{lo + 1:0{width}d}" if lo == hi else f"{lo + 1:0{width}d}-{hi + 1:0{width}d}"
        for lo, hi in ranges
    ]
    return f"{prefix}[{','.join(parts)}]"


def compress_hostlist(prefix: str, width: int, nodes: Sequence[int]) -> str:
    """Compress 0-based node indices into a Slurm host list."""
    return hostlist(prefix, width, node_ranges(nodes))


def _elapsed(seconds: pl.Expr) -> pl.Expr:
    s = seconds.cast(pl.Int64)
    hms = pl.format(
        "{}:{}:{}",
        ((s % 86400) // 3600).cast(pl.String).str.pad_start(2, "0"),
        ((s % 3600) // 60).cast(pl.String).str.pad_start(2, "0"),
        (s % 60).cast(pl.String).str.pad_start(2, "0"),
    )
    return pl.when(s >= 86400).then(pl.format("{}-{}", s // 86400, hms)).otherwise(hms)


def _text(chunk: pl.DataFrame, cfg: SimConfig) -> pl.DataFrame:
    """Format a chunk of attempts: columns ``key`` (sortable text) and ``line``."""
    end_of_span = pl.lit(cfg.start).dt.cast_time_unit("us") + pl.duration(
        hours=cfg.horizon_h
    )
    base = chunk.with_columns(
        _start=pl.col("start_ts").dt.truncate("1s"),
        _end=pl.col("end_ts").dt.truncate("1s"),
        _submit=pl.col("submit_ts").dt.truncate("1s"),
    ).with_columns(
        _elapsed=(
            pl.coalesce("_end", end_of_span.dt.truncate("1s")) - pl.col("_start")
        ).dt.total_seconds()
    )
    return _rows(base, cfg.local_tz)


def write_sacct(
    path: Path,
    attempts: pl.DataFrame,
    cfg: SimConfig,
    *,
    progress: Callable[[str], None] | None = None,
) -> int:
    """Write the attempts as ``sacct -D -P`` rows, in chunks; return the row count.

    ``attempts`` columns: ``job_id``, ``job_id_raw``, ``name``, ``user``,
    ``uid``, ``partition``, ``state``, ``exit_code``, ``submit_ts``,
    ``start_ts``, ``end_ts`` (UTC, nulls for pending / running),
    ``n_nodes``, ``n_gpus``, ``node_list`` (compressed), ``first_node``,
    ``sort_key``.
    """
    rows = 0
    ordered = attempts.sort("sort_key", "attempt")
    n = ordered.height
    with path.open("w", encoding="utf-8") as fh:
        fh.write(HEADER + "\n")
        for lo in range(0, n, CHUNK):
            text = _text(ordered.slice(lo, CHUNK), cfg)["line"]
            fh.write("\n".join(text.to_list()) + "\n")
            rows += text.len()
            if progress is not None and lo // CHUNK % 10 == 9:
                progress(f"sacct: {lo + CHUNK:,} of {n:,} attempts")
    return rows


class SacctSpool:
    """Write ``sacct.psv`` from attempts that arrive in any order, in bounded memory.

    Each chunk of attempts is formatted, sorted and written to a run file under
    ``tmp``; :meth:`finish` merges the runs into the dump, in the order
    :func:`write_sacct` writes (JobIDRaw, attempt, then the steps), so both
    give the same bytes.
    """

    def __init__(self, tmp: Path, cfg: SimConfig) -> None:
        self.tmp = tmp
        self.cfg = cfg
        self.runs: list[Path] = []
        self.n_attempts = 0
        tmp.mkdir(parents=True, exist_ok=True)

    def add(self, chunk: pl.DataFrame) -> None:
        """Format a chunk of attempts and spill it to a sorted run file."""
        if chunk.height == 0:
            return
        self.n_attempts += chunk.height
        text = _text(chunk, self.cfg).sort("key")
        path = self.tmp / f"run{len(self.runs):06d}.txt"
        body = text.select(pl.concat_str("key", "line", separator="\t"))
        path.write_text("\n".join(body.to_series().to_list()) + "\n", "utf-8")
        self.runs.append(path)

    def finish(self, path: Path) -> int:
        """Merge the runs into ``path``; remove them; return the row count."""
        runs = list(self.runs)
        while len(runs) > MERGE_FAN_IN:  # stay far below the open-file limit
            merged = self.tmp / f"merge{len(self.runs):06d}.txt"
            self.runs.append(merged)
            with merged.open("w", encoding="utf-8") as fh:
                _merge(runs[:MERGE_FAN_IN], fh, keep_key=True)
            for p in runs[:MERGE_FAN_IN]:
                p.unlink()
            runs = [*runs[MERGE_FAN_IN:], merged]
        with path.open("w", encoding="utf-8") as fh:
            fh.write(HEADER + "\n")
            rows = _merge(runs, fh, keep_key=False)
        for p in runs:
            p.unlink()
        self.tmp.rmdir()
        return rows


def _merge(runs: list[Path], fh: TextIO, *, keep_key: bool) -> int:
    """Merge sorted run files (``key<TAB>line``) into ``fh``; return the lines."""
    rows = 0
    with ExitStack() as stack:
        files = [stack.enter_context(p.open(encoding="utf-8")) for p in runs]
        buf: list[str] = []
        for line in heapq.merge(*files):
            buf.append(line if keep_key else line.split("\t", 1)[1])
            if len(buf) >= CHUNK:
                fh.write("".join(buf))
                rows += len(buf)
                buf.clear()
        fh.write("".join(buf))
        rows += len(buf)
    return rows


def _local(col: str, tz: str) -> pl.Expr:
    return (
        pl.when(pl.col(col).is_null())
        .then(pl.lit("Unknown"))
        .otherwise(
            pl.col(col).dt.convert_time_zone(tz).dt.strftime("%Y-%m-%dT%H:%M:%S")
        )
    )


def _rows(base: pl.DataFrame, tz: str) -> pl.DataFrame:
    """Allocation and step rows of a chunk of attempts, in sacct order.

    Returns ``key`` (JobIDRaw, attempt and row kind as fixed-width text, so
    that text order is sacct order) and ``line``.
    """
    gpus = pl.col("n_gpus")
    cpus = gpus * CPUS_PER_GPU
    state = (
        pl.when(pl.col("state") == "CANCELLED")
        .then(pl.format("CANCELLED by {}", pl.col("uid")))
        .otherwise(pl.col("state"))
    )
    started = pl.col("_start").is_not_null()
    alloc = base.with_row_index("_i").select(
        "_i",
        "sort_key",
        "attempt",
        _o=pl.lit(0),
        JobID="job_id",
        JobIDRaw="job_id_raw",
        JobName="name",
        User="user",
        Partition="partition",
        State=state,
        ExitCode="exit_code",
        Submit=_local("_submit", tz),
        Start=_local("_start", tz),
        End=_local("_end", tz),
        Elapsed=pl.when(started)
        .then(_elapsed(pl.col("_elapsed")))
        .otherwise(pl.lit("00:00:00")),
        NNodes=pl.col("n_nodes").cast(pl.String),
        AllocTRES=pl.when(started)
        .then(
            pl.format(
                "billing={},cpu={},gres/gpu={},mem={}G,node={}",
                cpus,
                cpus,
                gpus,
                gpus * MEM_GB_PER_GPU,
                pl.col("n_nodes"),
            )
        )
        .otherwise(pl.lit("")),
        NodeList="node_list",
    )
    steps = []
    run = base.with_row_index("_i").filter(started)
    per_node = (gpus / pl.col("n_nodes")).ceil().cast(pl.Int64)
    for k, (suffix, nodes) in enumerate(
        ((".batch", "first"), (".extern", "all"), (".0", "all")), start=1
    ):
        st = pl.col("state").replace_strict(
            {s: v[k - 1][0] for s, v in _STEPS.items()}, return_dtype=pl.String
        )
        ex = pl.col("state").replace_strict(
            {s: v[k - 1][1] for s, v in _STEPS.items()}, return_dtype=pl.String
        )
        one = nodes == "first"
        n_nodes = pl.lit(1) if one else pl.col("n_nodes")
        n_gpu = per_node if one else gpus
        start = pl.col("_start") + pl.duration(seconds=2 if suffix == ".0" else 0)
        start = pl.min_horizontal(start, pl.coalesce("_end", start))
        tres = (
            pl.format("billing={},cpu={},node={}", cpus, cpus, n_nodes)
            if suffix == ".extern"
            else pl.format(
                "cpu={},gres/gpu={},mem={}G,node={}",
                n_gpu * CPUS_PER_GPU,
                n_gpu,
                n_gpu * MEM_GB_PER_GPU,
                n_nodes,
            )
        )
        steps.append(
            run.with_columns(_s=start).select(
                "_i",
                "sort_key",
                "attempt",
                _o=pl.lit(k),
                JobID=pl.format("{}{}", pl.col("job_id"), pl.lit(suffix)),
                JobIDRaw=pl.format("{}{}", pl.col("job_id_raw"), pl.lit(suffix)),
                JobName=pl.lit("batch" if suffix == ".batch" else "extern")
                if suffix != ".0"
                else pl.col("name"),
                User=pl.lit(""),
                Partition=pl.lit(""),
                State=st,
                ExitCode=ex.fill_null(pl.col("exit_code")),
                Submit=_local("_s", tz),
                Start=_local("_s", tz),
                End=_local("_end", tz),
                Elapsed=_elapsed(
                    pl.col("_elapsed")
                    - (pl.col("_s") - pl.col("_start")).dt.total_seconds()
                ),
                NNodes=n_nodes.cast(pl.String),
                AllocTRES=tres,
                NodeList=pl.col("first_node") if one else pl.col("node_list"),
            )
        )
    allrows = pl.concat([alloc, *steps], how="vertical_relaxed").sort("_i", "_o")
    return allrows.select(
        key=pl.format(
            "{}{}{}",
            pl.col("sort_key").cast(pl.String).str.pad_start(13, "0"),
            pl.col("attempt").cast(pl.String).str.pad_start(7, "0"),
            pl.col("_o").cast(pl.String),
        ),
        line=pl.concat_str(
            pl.exclude("_i", "_o", "sort_key", "attempt"), separator="|"
        ),
    )
