"""Turn the simulation's raw records into the frames of :class:`Simulation`."""

from dataclasses import dataclass

import numpy as np
import polars as pl

from relkit.simulate._background import BackgroundResult
from relkit.simulate._config import SimConfig
from relkit.simulate._fleet import Fleet
from relkit.simulate._kernel import DMESG, storm_lines
from relkit.simulate._modes import BEHAVIOUR, table5_row
from relkit.simulate._run import RUN_ID, RunResult
from relkit.simulate._sacct import hostlist

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
    """Slurm job ids: the run's per job sequence, the background's per job."""

    run: dict[int, tuple[str, str, int]]  # job_seq -> (job_id, raw, sort_key)
    raw: np.ndarray  # background job j -> JobIDRaw (int64)
    task: np.ndarray  # background job j -> array task number, or -1 (int32)

    def bg_job_id(self, job: int) -> str:
        """JobID of background job ``job`` (``1234`` or ``1230_4``)."""
        raw, task = int(self.raw[job]), int(self.task[job])
        return f"{raw - task}_{task}" if task >= 0 else str(raw)


def job_ids(cfg: SimConfig, run: RunResult, jobs: pl.DataFrame) -> JobIds:
    """Give jobs Slurm ids in submission order (array tasks get consecutive ids).

    The run's jobs and the background submissions are numbered together in
    the order they were submitted (the run first at equal times); the tasks of
    an array get consecutive raw ids, the array's JobID being the first.
    """
    first: dict[int, float] = {}
    for a in run.attempts:
        first.setdefault(a["job_seq"], a["submit_h"])
    seqs = sorted(first, key=lambda k: (first[k], k))
    run_t = np.array([first[k] for k in seqs], dtype=float)
    sub = jobs["sub"].to_numpy()
    n_sub = int(sub[-1]) + 1 if sub.size else 0
    sub_first = np.searchsorted(sub, np.arange(n_sub))
    sub_t = jobs["submit_h"].to_numpy()[sub_first] if sub.size else np.zeros(0)
    # background tasks submitted strictly before each run job, and run jobs
    # submitted at or before each background submission
    bg_before = np.append(sub_first, sub.size)[np.searchsorted(sub_t, run_t, "left")]
    run_before = np.searchsorted(run_t, sub_t, side="right")
    run_ids = {}
    for r, k in enumerate(seqs):
        base = cfg.first_job_id + int(bg_before[r]) + r
        run_ids[k] = (str(base), str(base), base)
    sub_base = cfg.first_job_id + sub_first + run_before
    raw = (
        sub_base[sub] + np.arange(sub.size) - sub_first[sub]
        if sub.size
        else np.zeros(0, dtype=np.int64)
    )
    return JobIds(
        run=run_ids,
        raw=raw.astype(np.int64),
        task=jobs["task"].to_numpy().astype(np.int32),
    )


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

#: Columns of ``Simulation.jobs`` (and of every chunk written to ``sacct.psv``).
ATTEMPT_COLUMNS = (
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


def finish_attempts(cfg: SimConfig, frame: pl.DataFrame) -> pl.DataFrame:
    """Turn hours into UTC stamps; keep :data:`ATTEMPT_COLUMNS`, sorted by id."""
    start = cfg.start
    return (
        frame.with_columns(
            submit_ts=utc_at(start, pl.col("submit_h")),
            start_ts=utc_at(start, pl.col("start_h")),
            end_ts=utc_at(start, pl.col("end_h")),
        )
        .select(ATTEMPT_COLUMNS)
        .sort("sort_key", "attempt")
    )


def run_attempts(
    cfg: SimConfig, run: RunResult, ids: JobIds, hosts: list[str]
) -> pl.DataFrame:
    """Return the training run's attempts (:data:`ATTEMPT_COLUMNS`)."""
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
    frame = pl.DataFrame(rows, schema=_ATTEMPT_SCHEMA, orient="row")
    return finish_attempts(cfg, frame)


def background_attempts(
    cfg: SimConfig,
    chunk: pl.DataFrame,
    labels: pl.DataFrame,
    ids: JobIds,
    hosts: list[str],
) -> pl.DataFrame:
    """Name a chunk of background attempts (:data:`ATTEMPT_COLUMNS`).

    ``chunk`` has the columns of
    :data:`relkit.simulate._background.RAW_ATTEMPT_SCHEMA`; ``labels`` the
    ``name``, ``user`` and ``partition`` of every job (row = job index).
    """
    job = chunk["job"]
    attrs = labels.select(
        pl.col("name", "user", "partition").gather(job).cast(pl.String)
    )
    raw = pl.Series("raw", ids.raw).gather(job)
    task = pl.Series("task", ids.task).gather(job).cast(pl.Int64)
    host = pl.col("first_node").replace_strict(
        dict(enumerate(hosts)), default=None, return_dtype=pl.String
    )
    frame = pl.concat([chunk, attrs, raw.to_frame(), task.to_frame()], how="horizontal")
    frame = frame.with_columns(
        job_id=pl.when(pl.col("task") >= 0)
        .then(pl.format("{}_{}", pl.col("raw") - pl.col("task"), pl.col("task")))
        .otherwise(pl.col("raw").cast(pl.String)),
        job_id_raw=pl.col("raw").cast(pl.String),
        sort_key="raw",
        uid=10000 + pl.col("user").str.slice(4).cast(pl.Int64),
        first_node=host.fill_null(pl.lit("None assigned")),
        node_list=pl.coalesce("node_list", host, pl.lit("None assigned")),
        start_step=pl.lit(None, dtype=pl.Int64),
        end_step=pl.lit(None, dtype=pl.Int64),
    )
    return finish_attempts(cfg, frame.select(list(_ATTEMPT_SCHEMA)))


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
    hit |= {cid: ids.bg_job_id(job) for cid, job in bg.interrupting.items()}
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
    lines = storm_lines(incidents, hosts, rng, gpu_model=cfg.gpu_model)
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
