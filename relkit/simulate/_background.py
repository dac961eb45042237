"""Background research jobs on the batch partition: a small Slurm-like scheduler.

Jobs arrive as a Poisson process (a few as job arrays), ask for 1 to 1,024 GPUs
in the shape Kokolis et al. report for Meta's research clusters (most jobs
under one node, most GPU time in jobs of 256 GPUs or more), and run FIFO with
backfill on the first nodes with room (best fit for jobs under one node, whole
nodes otherwise). A failure on a node ends the attempts running there
(NODE_FAIL, or FAILED for a GPU error of one job); most jobs are requeued
under their id after a NODE_FAIL and start again from scratch. A drained node
takes no job until repaired.
"""

import bisect
import heapq
import math
from array import array
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from relkit.simulate._config import SimConfig
from relkit.simulate._modes import BEHAVIOUR
from relkit.simulate._sacct import compress_hostlist

#: Job sizes in GPUs and their probabilities, shaped after Kokolis et al.'s
#: description of Meta's research clusters (most jobs under one node, most GPU time
#: in jobs of 256 GPUs or more); the numbers themselves are assumed, not read from
#: the paper. Drawn (requested run time up to the time limit, before failures),
#: about 64 % of jobs ask for less than one node and about 63 % of GPU time is in
#: jobs of >= 256 GPUs (tests/test_simulate.py checks both, drawn and simulated).
SIZE_GPUS = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024])
SIZE_PROB = np.array(
    [0.445, 0.10, 0.10, 0.20, 0.06, 0.04, 0.025, 0.015, 0.012, 0.0023, 0.0007]
)
#: Median run time of a job of g GPUs: 0.32 h * sqrt(g); log-normal, σ = 1. Drawn,
#: this gives about 37.5 GPU-hours per job, as Kokolis et al.'s 150 M GPU-hours
#: over 4 M jobs; at rsc1's 240,000 jobs a month on 1,864 background nodes that
#: offers about 84 % of their GPU time (the paper quotes 83-85 % utilisation).
MEDIAN_H_PER_SQRT_GPU = 0.32
DURATION_SIGMA = 1.0
#: Time limits users pick from (hours); a job's is the first >= 3 x its median.
TIME_LIMITS_H = np.array([1.0, 2.0, 4.0, 8.0, 12.0, 24.0, 48.0, 72.0])
#: Jobs the scheduler looks at per pass (Slurm's bf_max_job_test, smaller).
BACKFILL_DEPTH = 64
#: A job waiting this long stops backfilling behind it (no starvation).
RESERVE_AFTER_H = 6.0
JOB_NAMES = (
    "train",
    "finetune",
    "eval",
    "sweep",
    "pretrain",
    "sft",
    "rlhf",
    "data-prep",
    "bench",
    "notebook",
)
N_USERS = 300


#: Finished attempts handed on per chunk (bounded memory when written to files).
CHUNK = 10_000
_EXIT = {
    "FAILED": "1:0",
    "CANCELLED": "0:15",
    "OUT_OF_MEMORY": "0:125",
    "PREEMPTED": "0:0",
}


@dataclass(slots=True)
class Attempt:
    """A running attempt of a background job (hours since start; compact)."""

    job: int
    attempt: int
    submit_h: float
    start_h: float
    nodes: list[int]
    gpus: int
    planned_state: str
    planned_exit: str


#: Columns of the attempt chunks :func:`simulate_background` hands on: one row per
#: attempt (``end_h`` null while running at the end of the span; pending jobs
#: at the end have a row with null ``start_h`` and ``first_node`` -1;
#: ``node_list`` is the compressed host list of multi-node attempts, else null).
RAW_ATTEMPT_SCHEMA = {
    "job": pl.Int64,
    "attempt": pl.Int64,
    "submit_h": pl.Float64,
    "start_h": pl.Float64,
    "end_h": pl.Float64,
    "state": pl.String,
    "exit_code": pl.String,
    "n_nodes": pl.Int64,
    "n_gpus": pl.Int64,
    "first_node": pl.Int64,
    "node_list": pl.String,
}


@dataclass
class BackgroundResult:
    """Interruptions, realised candidates and totals of the batch partition.

    The attempts themselves are handed to the ``emit`` callable of
    :func:`simulate_background` in chunks (or kept in ``chunks``).
    """

    interruptions: list[dict] = field(default_factory=list)
    realised: list[int] = field(default_factory=list)
    interrupting: dict[int, int] = field(default_factory=dict)  # cid -> job
    reboots: list[tuple[int, float]] = field(default_factory=list)
    busy_node_h: float = 0.0
    busy_gpu_h: float = 0.0
    n_attempts: int = 0
    n_pending: int = 0
    chunks: list[pl.DataFrame] = field(default_factory=list)


OUTCOMES = pl.Enum(["COMPLETED", "FAILED", "CANCELLED", "OUT_OF_MEMORY", "PREEMPTED"])
PARTITIONS = pl.Enum(["batch", "scavenge"])
JOB_SCHEMA = {
    "job": pl.Int64,
    "sub": pl.Int64,
    "task": pl.Int64,
    "submit_h": pl.Float64,
    "gpus": pl.Int64,
    "duration_h": pl.Float64,
    "limit_h": pl.Float64,
    "outcome": OUTCOMES,
    "outcome_frac": pl.Float64,
    "requeue": pl.Boolean,
    "user": pl.Enum([f"user{k:03d}" for k in range(1, N_USERS + 1)]),
    "name": pl.Enum(list(JOB_NAMES)),
    "partition": PARTITIONS,
}


def draw_jobs(cfg: SimConfig, rng: np.random.Generator) -> pl.DataFrame:
    """Draw the background jobs: one row per job (array tasks are jobs).

    Columns: ``job`` (index), ``sub`` (submission index; array tasks share it),
    ``task`` (array task number or -1), ``submit_h``, ``gpus``, ``duration_h``
    (run time if nothing stops it), ``limit_h``, ``outcome`` (``COMPLETED``,
    ``FAILED``, ``CANCELLED``, ``OUT_OF_MEMORY``, ``PREEMPTED``),
    ``outcome_frac`` (where in the run a non-completing outcome ends it),
    ``requeue``, ``user``, ``name``, ``partition`` (the text columns as
    ``pl.Enum``, so a million jobs stay small).
    """
    from scipy import stats

    n = cfg.background_jobs
    g = cfg.gpus_per_node
    if n == 0:
        return pl.DataFrame(schema=JOB_SCHEMA)
    cap = max(1, min(1024, cfg.batch_nodes * g // 4))
    sizes = SIZE_GPUS[cap >= SIZE_GPUS]
    probs = SIZE_PROB[: sizes.size] / SIZE_PROB[: sizes.size].sum()
    # submissions: 5 % are arrays of 2-32 tasks
    est = n + 8
    is_array = rng.random(est) < 0.05
    tasks = np.where(is_array, rng.integers(2, 33, size=est), 1)
    while tasks.sum() < n:
        more = rng.random(est) < 0.05
        is_array = np.concatenate([is_array, more])
        tasks = np.concatenate([tasks, np.where(more, rng.integers(2, 33, est), 1)])
    ends = np.cumsum(tasks)
    n_sub = int(np.searchsorted(ends, n) + 1)
    tasks = tasks[:n_sub].copy()
    tasks[-1] -= int(ends[n_sub - 1] - n)
    is_array = is_array[:n_sub] & (tasks > 1)
    submit = np.sort(rng.random(n_sub)) * cfg.horizon_h
    sub_size = rng.choice(sizes, size=n_sub, p=probs)
    sub_size = np.where(is_array, np.minimum(sub_size, 8), sub_size)
    user_w = 1.0 / np.arange(1, N_USERS + 1)
    sub_user = rng.choice(N_USERS, size=n_sub, p=user_w / user_w.sum())
    sub_name = rng.integers(0, len(JOB_NAMES), size=n_sub)
    scavenge = rng.random(n_sub) < 0.1
    sub = np.repeat(np.arange(n_sub), tasks)
    task = np.arange(n) - np.repeat(ends[:n_sub] - tasks, tasks)
    task = np.where(np.repeat(is_array, tasks), task, -1)
    gpus = sub_size[sub]
    median = MEDIAN_H_PER_SQRT_GPU * np.sqrt(gpus)
    z = stats.norm.rvs(size=n, random_state=rng)
    duration = np.maximum(median * np.exp(DURATION_SIGMA * np.atleast_1d(z)), 1 / 120)
    limit = TIME_LIMITS_H[
        np.minimum(np.searchsorted(TIME_LIMITS_H, 3 * median), TIME_LIMITS_H.size - 1)
    ]
    u = rng.random(n)
    preempt = np.repeat(scavenge, tasks) & (rng.random(n) < 0.3)
    outcome = np.select(
        [u < 0.08, u < 0.11, u < 0.12, preempt], [1, 2, 3, 4], default=0
    ).astype(np.uint8)
    schema = JOB_SCHEMA

    def enum(name: str, codes: np.ndarray) -> pl.Series:
        dtype = schema[name]
        cats = pl.Series(dtype.categories.to_list(), dtype=dtype)  # type: ignore[union-attr]
        return cats.gather(codes.astype(np.int64)).alias(name)

    return pl.DataFrame(
        {
            "job": np.arange(n, dtype=np.int64),
            "sub": sub.astype(np.int64),
            "task": task.astype(np.int64),
            "submit_h": submit[sub],
            "gpus": gpus.astype(np.int64),
            "duration_h": duration,
            "limit_h": limit,
            "outcome": enum("outcome", outcome),
            "outcome_frac": rng.random(n),
            "requeue": rng.random(n) < 0.7,
            "user": enum("user", sub_user[sub]),
            "name": enum("name", sub_name[sub]),
            "partition": enum("partition", np.repeat(scavenge, tasks)),
        }
    )


@dataclass
class JobArrays:
    """What the scheduler reads of each job, as compact arrays (8 bytes a value).

    A million jobs take about 50 MB here, against about 90 MB as the frame of
    :func:`draw_jobs` (which can be dropped once this is built).
    """

    n: int
    submit_h: array
    gpus: array
    duration_h: array
    limit_h: array
    outcome_frac: array
    requeue: array
    outcome: array

    @classmethod
    def from_frame(cls, jobs: pl.DataFrame) -> "JobArrays":
        """Build from the frame of :func:`draw_jobs`."""

        def col(name: str, code: str) -> array:
            kind = {"d": np.float64, "q": np.int64, "b": np.int8}[code]
            return array(code, jobs[name].to_numpy().astype(kind).tobytes())

        return cls(
            n=jobs.height,
            submit_h=col("submit_h", "d"),
            gpus=col("gpus", "q"),
            duration_h=col("duration_h", "d"),
            limit_h=col("limit_h", "d"),
            outcome_frac=col("outcome_frac", "d"),
            requeue=col("requeue", "b"),
            outcome=array(
                "b", jobs["outcome"].to_physical().to_numpy().astype(np.int8).tobytes()
            ),
        )


def simulate_background(
    cfg: SimConfig,
    jobs: "pl.DataFrame | JobArrays",
    cand: pl.DataFrame,
    progress: object = None,
    *,
    emit: Callable[[pl.DataFrame], None] | None = None,
    chunk: int | None = None,
) -> BackgroundResult:
    """Schedule the background jobs and realise the batch partition's candidates.

    ``cand`` holds candidates on the batch nodes (``node`` >= the run's
    partition), sorted by ``t_h``, with row index ``cid``. Finished attempts
    (and, at the end, running attempts and pending jobs) are passed to
    ``emit`` in frames of at most ``chunk`` rows (default :data:`CHUNK`;
    columns :data:`RAW_ATTEMPT_SCHEMA`, in no particular order); without
    ``emit`` they are kept in ``BackgroundResult.chunks``. Only the jobs'
    arrays (:class:`JobArrays`), the running attempts and the queue are held,
    so memory does not grow with the attempts written.
    """
    res = BackgroundResult()
    chunk = chunk or CHUNK
    sink = emit if emit is not None else res.chunks.append
    horizon = cfg.horizon_h
    g = cfg.gpus_per_node
    base = cfg.run_nodes + cfg.spare_nodes
    pool = cfg.batch_nodes
    if pool < 1:
        return res
    pre = cfg.host_prefix
    width = max(3, len(str(cfg.nodes)))
    owner = np.full((pool, g), -1, dtype=np.int64)
    avail = np.full(pool, g, dtype=np.int64)  # free GPUs; -1 while drained
    down_until = np.zeros(pool)
    running_on = np.zeros(pool, dtype=np.int64)
    busy_since = np.zeros(pool)

    arrays = jobs if isinstance(jobs, JobArrays) else JobArrays.from_frame(jobs)
    del jobs
    n_jobs = arrays.n
    submit, gpus, duration = arrays.submit_h, arrays.gpus, arrays.duration_h
    limit, frac, requeue = arrays.limit_h, arrays.outcome_frac, arrays.requeue
    outcome = arrays.outcome
    outcomes = OUTCOMES.categories.to_list()
    attempts_of = array("i", bytes(4 * n_jobs))
    last_end = array("d", bytes(8 * n_jobs))

    c_cid = cand["cid"].to_list()
    c_mode = cand["failure_mode"].to_list()
    c_node = [x - base for x in cand["node"].to_list()]
    c_gpu = cand["gpu"].to_list()
    c_t = cand["t_h"].to_list()
    c_rep = cand["repair_h"].to_list()

    # job indices; jobs are numbered in submission order, so this is FIFO order
    pending = array("q")
    heap: list[tuple[float, int, int]] = []  # (time, kind, id): 0 end, 1 repair
    active: dict[int, Attempt] = {}  # attempt id -> record
    rows: list[tuple] = []
    next_att = 0

    def out(row: tuple) -> None:
        rows.append(row)
        res.n_attempts += 1
        if len(rows) >= chunk:
            flush()

    def flush() -> None:
        if rows:
            sink(pl.DataFrame(rows, schema=RAW_ATTEMPT_SCHEMA, orient="row"))
            rows.clear()

    def finished(rec: Attempt, end_h: float | None, state: str, code: str) -> None:
        nodes = rec.nodes
        out(
            (
                rec.job,
                rec.attempt,
                rec.submit_h,
                rec.start_h,
                end_h,
                state,
                code,
                len(nodes),
                rec.gpus,
                nodes[0],
                compress_hostlist(pre, width, nodes) if len(nodes) > 1 else None,
            )
        )
        if end_h is not None:
            last_end[rec.job] = end_h

    def occupy(node: int, att: int, slots: np.ndarray, t: float) -> None:
        owner[node, slots] = att
        avail[node] -= slots.size
        if running_on[node] == 0:
            busy_since[node] = t
        running_on[node] += 1

    def release(att: int, t: float) -> Attempt:
        rec = active.pop(att)
        for node in rec.nodes:
            node -= base
            mask = owner[node] == att
            owner[node, mask] = -1
            if avail[node] >= 0:
                avail[node] += int(mask.sum())
            running_on[node] -= 1
            if running_on[node] == 0:
                res.busy_node_h += t - busy_since[node]
        res.busy_gpu_h += (t - rec.start_h) * rec.gpus
        return rec

    def start_job(j: int, t: float) -> bool:
        nonlocal next_att
        need = gpus[j]
        if need < g:
            fit = np.where(avail >= need, avail, g + 1)
            node = int(np.argmin(fit))
            if fit[node] > g:
                return False
            free = np.flatnonzero(owner[node] < 0)[:need]
            chosen = [(node, free)]
        else:
            n_nodes = math.ceil(need / g)
            full = np.flatnonzero(avail == g)
            if full.size < n_nodes:
                return False
            chosen = [(int(x), np.arange(g)) for x in full[:n_nodes]]
        att = next_att
        next_att += 1
        attempts_of[j] += 1
        run_h = min(duration[j], limit[j])
        state, exit_code = "COMPLETED", "0:0"
        if duration[j] > limit[j]:
            state, exit_code = "TIMEOUT", "0:0"
        if outcome[j]:
            run_h = max(frac[j] * run_h, 1 / 360)
            state = outcomes[outcome[j]]
            exit_code = _EXIT[state]
        rec = Attempt(
            job=j,
            attempt=attempts_of[j],
            # a requeued attempt is submitted when the one before it ended
            submit_h=submit[j] if attempts_of[j] == 1 else last_end[j],
            start_h=t,
            nodes=[base + n for n, _ in chosen],
            gpus=need if need < g else len(chosen) * g,
            planned_state=state,
            planned_exit=exit_code,
        )
        active[att] = rec
        for node, slots in chosen:
            occupy(node, att, slots, t)
        heapq.heappush(heap, (t + run_h, 0, att))
        return True

    def schedule(t: float) -> None:
        if not pending:
            return
        k = 0
        most = int(avail.max())
        n_full = int((avail == g).sum())
        while k < len(pending) and k < BACKFILL_DEPTH:
            j = pending[k]
            need = gpus[j]
            fits = need <= most if need < g else math.ceil(need / g) <= n_full
            if fits and start_job(j, t):
                pending.pop(k)
                most = int(avail.max())
                n_full = int((avail == g).sum())
                continue
            if k == 0 and t - submit[j] > RESERVE_AFTER_H:
                return  # reserve the nodes for the job waiting longest
            k += 1

    def interrupt(att: int, t: float, cid: int, mode: str) -> None:
        b = BEHAVIOUR[mode]
        rec = release(att, t)
        finished(rec, t, b.job_state, b.exit_code)
        res.interrupting.setdefault(cid, rec.job)
        res.interruptions.append(
            {
                "t_h": t,
                "job": rec.job,
                "attempt": rec.attempt,
                "node": base + c_node_of[cid],
                "cid": cid,
                "failure_mode": mode,
                "kind": "unexpected",
                "lost_work_h": t - rec.start_h,
            }
        )
        if b.job_state == "NODE_FAIL" and requeue[rec.job]:
            bisect.insort(pending, rec.job)

    c_node_of: dict[int, int] = {}
    i_sub = 0
    i_c = 0
    n_c = len(c_cid)
    step = max(1, n_jobs // 20)
    while True:
        t_sub = submit[i_sub] if i_sub < n_jobs else math.inf
        t_c = c_t[i_c] if i_c < n_c else math.inf
        t_h = heap[0][0] if heap else math.inf
        t = min(t_sub, t_c, t_h)
        if t >= horizon:
            break
        if t == t_h:
            _, kind, ident = heapq.heappop(heap)
            if kind == 0:
                if ident not in active:
                    continue  # interrupted earlier
                rec = release(ident, t)
                finished(rec, t, rec.planned_state, rec.planned_exit)
                if rec.planned_state == "PREEMPTED":
                    outcome[rec.job] = 0  # requeued; runs to completion next time
                    bisect.insort(pending, rec.job)
            else:
                node = ident
                if down_until[node] <= t and avail[node] < 0:
                    avail[node] = int((owner[node] < 0).sum())
            schedule(t)
        elif t == t_c:
            k = i_c
            i_c += 1
            cid, node, gpu, mode = c_cid[k], c_node[k], c_gpu[k], c_mode[k]
            c_node_of[cid] = node
            b = BEHAVIOUR[mode]
            if b.drains or not (b.unit == "gpu" and gpu >= 0):
                hit = set(owner[node][owner[node] >= 0].tolist())
            else:
                hit = {int(owner[node, gpu])} - {-1}
            if b.job_dependent and not hit:
                continue
            res.realised.append(cid)
            if b.interrupts:
                for att in sorted(hit):
                    interrupt(att, t, cid, mode)
            if b.drains:
                until = t + c_rep[k]
                down_until[node] = max(down_until[node], until)
                avail[node] = -1
                heapq.heappush(heap, (down_until[node], 1, node))
                res.reboots.append((base + node, until))
            schedule(t)
        else:
            j = i_sub
            i_sub += 1
            bisect.insort(pending, j)
            schedule(t)
            if callable(progress) and i_sub % step == 0:
                progress(f"scheduled {i_sub:,} of {n_jobs:,} background jobs")
    for att in sorted(active):
        rec = active[att]
        res.busy_gpu_h += (horizon - rec.start_h) * rec.gpus
        for node in (n - base for n in rec.nodes):
            if running_on[node]:
                res.busy_node_h += horizon - busy_since[node]
                running_on[node] = 0
        finished(rec, None, "RUNNING", "0:0")
    active.clear()
    # every job pending at the end: never started, or requeued and waiting
    for j in [*pending, *range(i_sub, n_jobs)]:
        res.n_pending += 1
        out(
            (
                j,
                attempts_of[j] + 1,
                submit[j] if attempts_of[j] == 0 else last_end[j],
                None,
                None,
                "PENDING",
                "0:0",
                -(-gpus[j] // g),
                gpus[j],
                -1,
                None,
            )
        )
    flush()
    return res
