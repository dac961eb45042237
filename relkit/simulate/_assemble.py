"""Turn the simulation's raw records into the frames of :class:`Simulation`."""

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import polars as pl

from relkit.simulate._background import Attempt, BackgroundResult
from relkit.simulate._config import SimConfig
from relkit.simulate._fleet import Fleet
from relkit.simulate._kernel import DMESG, storm_lines
from relkit.simulate._modes import BEHAVIOUR, table5_row
from relkit.simulate._run import RUN_ID, RunResult
from relkit.simulate._sacct import compress_hostlist, hostlist

RUN_USER, RUN_UID = "llm-train", 20001
RUN_NAME = "pretrain-405b"


def utc_at(start: object, hours: pl.Expr) -> pl.Expr:
    return pl.lit(start).dt.cast_time_unit("us") + pl.duration(
        microseconds=(hours * 3.6e9).round(0)
    )


def fleet_truth(fleet: Fleet) -> pl.DataFrame:
    return pl.DataFrame(
        {
            "host": fleet.hosts,
            "batch": fleet.batch.astype(np.int64),
            "lemon": fleet.lemon,
            "rate_multiplier": fleet.multiplier,
        }
    )


@dataclass
class JobIds:
    run: dict[int, tuple[str, str, int]]  # job_seq -> (job_id, raw, sort_key)
    bg: pl.DataFrame  # row j: job, job_id, job_id_raw, sort_key of job j

    def bg_job_id(self, job: int) -> str:
        return str(self.bg["job_id"][job])


def job_ids(
    cfg: SimConfig, run: RunResult, bg: BackgroundResult, jobs: pl.DataFrame
) -> JobIds:
    """Give jobs Slurm ids in submission order (array tasks get consecutive ids)."""
    first: dict[int, float] = {}
    for a in run.attempts:
        first.setdefault(a["job_seq"], a["submit_h"])
    run_rows = pl.DataFrame(
        {"t": list(first.values()), "kind": 0, "key": list(first), "n": 1},
        schema={"t": pl.Float64, "kind": pl.Int64, "key": pl.Int64, "n": pl.Int64},
    )
    subs = jobs.group_by("sub").agg(
        t=pl.col("submit_h").first(), n=pl.len().cast(pl.Int64)
    )
    entries = (
        pl.concat(
            [run_rows, subs.select("t", kind=pl.lit(1, pl.Int64), key="sub", n="n")]
        )
        .sort("t", "kind", "key")
        .with_columns(base=cfg.first_job_id + pl.col("n").cum_sum() - pl.col("n"))
    )
    run_ids = {
        key: (str(base), str(base), base)
        for key, base in entries.filter(pl.col("kind") == 0)
        .select("key", "base")
        .iter_rows()
    }
    bases = entries.filter(pl.col("kind") == 1).select(sub="key", base="base")
    bg_ids = (
        jobs.select("job", "sub", "task")
        .join(bases, on="sub", how="left")
        .with_columns(
            raw=pl.col("base") + pl.col("job") - pl.col("job").min().over("sub")
        )
        .select(
            "job",
            job_id=pl.when(pl.col("task") >= 0)
            .then(pl.format("{}_{}", pl.col("base"), pl.col("task")))
            .otherwise(pl.col("raw").cast(pl.String)),
            job_id_raw=pl.col("raw").cast(pl.String),
            sort_key="raw",
        )
        .sort("job")
    )
    return JobIds(run=run_ids, bg=bg_ids)


_ATTEMPT_SCHEMA = {
    "job_id": pl.String,
    "job_id_raw": pl.String,
    "attempt": pl.Int64,
    "name": pl.String,
    "user": pl.String,
    "uid": pl.Int64,
    "partition": pl.String,
    "state": pl.String,
    "exit_code": pl.String,
    "submit_h": pl.Float64,
    "start_h": pl.Float64,
    "end_h": pl.Float64,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "node_list": pl.String,
    "first_node": pl.String,
    "sort_key": pl.Int64,
    "start_step": pl.Int64,
    "end_step": pl.Int64,
}


def attempts_frame(
    cfg: SimConfig,
    run: RunResult,
    bg: BackgroundResult,
    jobs: pl.DataFrame,
    ids: JobIds,
    hosts: list[str],
) -> pl.DataFrame:
    g = cfg.gpus_per_node
    pre = cfg.host_prefix
    width = len(hosts[0]) - len(pre)
    rows = [
        (
            *ids.run[a["job_seq"]][:2],
            a["attempt_in_job"],
            RUN_NAME,
            RUN_USER,
            RUN_UID,
            "train",
            a["state"],
            a["exit_code"],
            a["submit_h"],
            a["start_h"],
            a["end_h"],
            cfg.run_nodes,
            cfg.run_nodes * g,
            hostlist(pre, width, a["ranges"]),
            hosts[a["ranges"][0][0]],
            ids.run[a["job_seq"]][2],
            a["start_step"],
            a["end_step"],
        )
        for a in run.attempts
    ]
    frames = [pl.DataFrame(rows, schema=_ATTEMPT_SCHEMA, orient="row")]
    if jobs.height:
        frames.append(background_attempts(cfg, bg, jobs, ids, hosts))
    frame = pl.concat(frames, how="vertical_relaxed")
    start = cfg.start
    return frame.with_columns(
        submit_ts=utc_at(start, pl.col("submit_h")),
        start_ts=utc_at(start, pl.col("start_h")),
        end_ts=utc_at(start, pl.col("end_h")),
    ).select(
        "job_id",
        "job_id_raw",
        "attempt",
        "name",
        "user",
        "uid",
        "partition",
        "state",
        "exit_code",
        "submit_ts",
        "start_ts",
        "end_ts",
        "n_nodes",
        "n_gpus",
        "node_list",
        "first_node",
        "sort_key",
        "start_step",
        "end_step",
    )


def background_attempts(
    cfg: SimConfig,
    bg: BackgroundResult,
    jobs: pl.DataFrame,
    ids: JobIds,
    hosts: list[str],
) -> pl.DataFrame:
    """Build the background attempts (and pending jobs) column by column."""
    pre = cfg.host_prefix
    width = len(hosts[0]) - len(pre)
    att = bg.attempts
    multi = {
        k: compress_hostlist(pre, width, a.nodes)
        for k, a in enumerate(att)
        if len(a.nodes) > 1
    }
    n = len(att)

    def ints(get: Callable[[Attempt], int]) -> np.ndarray:
        return np.fromiter((get(a) for a in att), dtype=np.int64, count=n)

    end = np.fromiter(
        (math.nan if a.end_h is None else a.end_h for a in att), float, count=n
    )
    frame = pl.DataFrame(
        {
            "job": ints(lambda a: a.job),
            "attempt": ints(lambda a: a.attempt),
            "state": pl.Series([a.state for a in att], dtype=pl.Categorical),
            "exit_code": pl.Series([a.exit_code for a in att], dtype=pl.Categorical),
            "start_h": np.fromiter((a.start_h for a in att), float, count=n),
            "end_h": pl.Series(end, nan_to_null=True),
            "n_nodes": ints(lambda a: len(a.nodes)),
            "n_gpus": ints(lambda a: a.gpus),
            "_first": ints(lambda a: a.nodes[0]),
        },
        schema={
            "job": pl.Int64,
            "attempt": pl.Int64,
            "state": pl.Categorical,
            "exit_code": pl.Categorical,
            "start_h": pl.Float64,
            "end_h": pl.Float64,
            "n_nodes": pl.Int64,
            "n_gpus": pl.Int64,
            "_first": pl.Int64,
        },
    ).cast({"state": pl.String, "exit_code": pl.String})
    host = pl.col("_first").replace_strict(
        dict(enumerate(hosts)), return_dtype=pl.String
    )
    frame = frame.with_row_index("_k").with_columns(
        first_node=host,
        node_list=pl.col("_k")
        .cast(pl.Int64)
        .replace_strict(multi, default=None, return_dtype=pl.String)
        .fill_null(host),
    )
    pending = pl.DataFrame({"job": bg.pending}, schema={"job": pl.Int64}).join(
        frame.group_by("job").agg(attempt=pl.col("attempt").max()),
        on="job",
        how="left",
    )
    g = cfg.gpus_per_node
    pending = pending.join(jobs.select("job", "gpus"), on="job").select(
        "job",
        attempt=pl.col("attempt").fill_null(0) + 1,
        state=pl.lit("PENDING"),
        exit_code=pl.lit("0:0"),
        start_h=pl.lit(None, dtype=pl.Float64),
        end_h=pl.lit(None, dtype=pl.Float64),
        n_nodes=(pl.col("gpus") + g - 1) // g,
        n_gpus="gpus",
        first_node=pl.lit("None assigned"),
        node_list=pl.lit("None assigned"),
    )
    id_frame = ids.bg
    both = pl.concat(
        [frame.drop("_k", "_first"), pending], how="diagonal_relaxed"
    ).sort("job", "attempt")
    # a requeued attempt is submitted when the one before it ended
    submit = pl.col("end_h").shift(1).over("job")
    return (
        both.join(jobs.select("job", "submit_h", "name", "user", "partition"), on="job")
        .join(id_frame, on="job")
        .with_columns(
            submit_h=pl.when(pl.col("attempt") > 1)
            .then(pl.coalesce(submit, pl.col("submit_h")))
            .otherwise(pl.col("submit_h")),
            uid=10000 + pl.col("user").str.slice(4).cast(pl.Int64),
            start_step=pl.lit(None, dtype=pl.Int64),
            end_step=pl.lit(None, dtype=pl.Int64),
        )
        .select(list(_ATTEMPT_SCHEMA))
    )


def incidents_frame(
    cfg: SimConfig,
    cand: pl.DataFrame,
    run: RunResult,
    bg: BackgroundResult,
    ids: JobIds,
    hosts: list[str],
) -> pl.DataFrame:
    realised = pl.Series("cid", sorted(set(run.realised) | set(bg.realised)), pl.Int64)
    hit = {
        cid: ids.run[run.attempts[k]["job_seq"]][0]
        for cid, k in run.interrupting.items()
    }
    hit |= {
        cid: ids.bg_job_id(bg.attempts[k].job) for cid, k in bg.interrupting.items()
    }
    modes = sorted(BEHAVIOUR)
    info = pl.DataFrame(
        {
            "failure_mode": modes,
            "table5_row": [table5_row(m) for m in modes],
            "logged": [BEHAVIOUR[m].logged for m in modes],
            "counts_as_failure": [BEHAVIOUR[m].counts_as_failure for m in modes],
        }
    )
    inc = (
        cand.join(realised.to_frame(), on="cid", how="semi")
        .sort("t_h", "node", "gpu", "cid")
        .with_columns(
            incident_id=pl.int_range(1, pl.len() + 1, dtype=pl.Int64),
            ts=utc_at(cfg.start, pl.col("t_h")),
            host=pl.col("node").replace_strict(
                dict(enumerate(hosts)), return_dtype=pl.String
            ),
            interrupted_job_id=pl.col("cid").replace_strict(
                hit, default=None, return_dtype=pl.String
            ),
        )
        .join(info, on="failure_mode", how="left")
    )
    return inc.select(
        "incident_id",
        "cid",
        "ts",
        "t_h",
        "host",
        "node",
        "gpu",
        "device",
        "failure_mode",
        "table5_row",
        "logged",
        "counts_as_failure",
        "repair_h",
        "interrupted_job_id",
    )


def lines_frame(
    cfg: SimConfig,
    incidents: pl.DataFrame,
    hosts: list[str],
    framings: list[str],
    rng: np.random.Generator,
) -> pl.DataFrame:
    lines = storm_lines(incidents, hosts, rng)
    fr = pl.col("node").replace_strict(
        dict(enumerate(framings)), return_dtype=pl.String
    )
    host = pl.col("node").replace_strict(dict(enumerate(hosts)), return_dtype=pl.String)
    return (
        lines.filter(pl.col("t_h") < cfg.horizon_h)
        .with_columns(ts=utc_at(cfg.start, pl.col("t_h")), host=host)
        .with_columns(
            file=pl.when(fr.is_in(DMESG) & (pl.col("stream") == "user"))
            .then(pl.format("{}.syslog", pl.col("host")))
            .otherwise(pl.format("{}.log", pl.col("host")))
        )
        .select(
            "incident_id",
            "ts",
            "t_h",
            "host",
            "node",
            "file",
            "stream",
            "tag",
            "msg",
            "is_event",
            "failure_mode",
            "device",
            "code",
            "severity",
        )
    )


def interruptions_frame(
    cfg: SimConfig,
    run: RunResult,
    bg: BackgroundResult,
    attempts: pl.DataFrame,
    incidents: pl.DataFrame,
    hosts: list[str],
    ids: JobIds,
) -> pl.DataFrame:
    by_cid = dict(
        zip(incidents["cid"].to_list(), incidents["incident_id"].to_list(), strict=True)
    )
    seq_of = {a["attempt"]: a for a in run.attempts}
    rows = []
    for x in run.interruptions:
        a = seq_of[x["attempt"]]
        rows.append(
            (
                x["t_h"],
                RUN_ID,
                ids.run[x["job_seq"]][0],
                a["attempt_in_job"],
                None if x["node"] is None else hosts[x["node"]],
                x["failure_mode"],
                x["kind"],
                x["lost_work_h"],
                by_cid.get(x["cid"]),
            )
        )
    for x in bg.interruptions:
        rows.append(
            (
                x["t_h"],
                None,
                ids.bg_job_id(x["job"]),
                x["attempt"],
                hosts[x["node"]],
                x["failure_mode"],
                x["kind"],
                x["lost_work_h"],
                by_cid.get(x["cid"]),
            )
        )
    frame = pl.DataFrame(
        rows,
        schema={
            "t_h": pl.Float64,
            "run_id": pl.String,
            "job_id": pl.String,
            "attempt": pl.Int64,
            "host": pl.String,
            "failure_mode": pl.String,
            "kind": pl.String,
            "lost_work_h": pl.Float64,
            "incident_id": pl.Int64,
        },
        orient="row",
    )
    rows5 = {m: table5_row(m) for m in BEHAVIOUR}
    return (
        frame.with_columns(
            ts=utc_at(cfg.start, pl.col("t_h")),
            table5_row=pl.col("failure_mode").replace_strict(
                rows5, default=None, return_dtype=pl.String
            ),
        )
        .sort("t_h", "job_id")
        .select(
            "ts",
            "run_id",
            "job_id",
            "attempt",
            "host",
            "failure_mode",
            "table5_row",
            "kind",
            "lost_work_h",
            "incident_id",
        )
    )


def processes_frame(
    cfg: SimConfig, run: RunResult, bg: BackgroundResult, incidents: pl.DataFrame
) -> pl.DataFrame:
    g = cfg.gpus_per_node
    busy_node_h = run.busy_node_h + bg.busy_node_h
    busy_gpu_h = run.busy_node_h * g + bg.busy_gpu_h
    counts = dict(
        incidents.group_by("failure_mode").len().iter_rows()  # type: ignore[arg-type]
    )
    rows = []
    for p in cfg.processes:
        b = BEHAVIOUR[p.failure_mode]
        per_node = p.rate_per_unit_h * (g if b.unit == "gpu" else 1)
        if b.job_dependent:
            exposure = busy_gpu_h if b.unit == "gpu" else busy_node_h
        else:
            exposure = cfg.nodes * (g if b.unit == "gpu" else 1) * cfg.horizon_h
        expected = p.rate_per_unit_h * exposure if p.weibull_shape == 1.0 else None
        rows.append(
            (
                p.failure_mode,
                b.unit,
                p.rate_per_unit_h,
                per_node,
                p.weibull_shape,
                table5_row(p.failure_mode),
                b.logged,
                b.job_dependent,
                b.counts_as_failure,
                exposure,
                expected,
                counts.get(p.failure_mode, 0),
            )
        )
    return pl.DataFrame(
        rows,
        schema={
            "failure_mode": pl.String,
            "unit": pl.String,
            "rate_per_unit_h": pl.Float64,
            "rate_per_node_h": pl.Float64,
            "weibull_shape": pl.Float64,
            "table5_row": pl.String,
            "logged": pl.Boolean,
            "job_dependent": pl.Boolean,
            "counts_as_failure": pl.Boolean,
            "exposure_unit_h": pl.Float64,
            "expected_n": pl.Float64,
            "n_injected": pl.Int64,
        },
        orient="row",
    )


def runs_frame(cfg: SimConfig, run: RunResult) -> pl.DataFrame:
    schema = {
        "run_id": pl.String,
        "n_nodes": pl.Int64,
        "n_gpus": pl.Int64,
        "wall_h": pl.Float64,
        "productive_h": pl.Float64,
        "ettr_frac": pl.Float64,
        "lost_work_h": pl.Float64,
        "n_attempts": pl.Int64,
        "n_unexpected": pl.Int64,
        "n_planned": pl.Int64,
        "checkpoint_interval_h": pl.Float64,
        "n_checkpoints": pl.Int64,
        "failures_per_node_day": pl.Float64,
    }
    if not run.summary:
        return pl.DataFrame(schema=schema)
    g = cfg.gpus_per_node
    rate = sum(
        p.rate_per_unit_h * (g if BEHAVIOUR[p.failure_mode].unit == "gpu" else 1)
        for p in cfg.processes
        if BEHAVIOUR[p.failure_mode].interrupts
    )
    row = {k: run.summary.get(k) for k in schema}
    row["failures_per_node_day"] = rate * 24.0
    return pl.DataFrame([row], schema=schema)


def checkpoints_frame(cfg: SimConfig, run: RunResult, ids: JobIds) -> pl.DataFrame:
    job_of = {a["attempt"]: ids.run[a["job_seq"]][0] for a in run.attempts}
    frame = pl.DataFrame(
        run.checkpoints,
        schema={
            "attempt": pl.Int64,
            "step": pl.Int64,
            "start_h": pl.Float64,
            "end_h": pl.Float64,
            "level": pl.String,
        },
        orient="row",
    )
    return frame.select(
        run_id=pl.lit(RUN_ID),
        attempt="attempt",
        job_id=pl.col("attempt").replace_strict(job_of, return_dtype=pl.String),
        step="step",
        start_ts=utc_at(cfg.start, pl.col("start_h")),
        end_ts=utc_at(cfg.start, pl.col("end_h")),
        save_s=(pl.col("end_h") - pl.col("start_h")) * 3600.0,
        level="level",
    )
