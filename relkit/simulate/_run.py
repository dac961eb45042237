"""The large training run: attempts, checkpoints, restarts and lost work.

The run holds ``run_nodes`` nodes of its own partition (``run_nodes +
spare_nodes`` nodes). Each attempt starts with the restart overhead u₀
(start-up and restore), then computes Δt of steps and writes a blocking
checkpoint of cost w, again and again, until a failure on one of its nodes
ends it. The next attempt starts ``requeue_h`` later on the first healthy
nodes (failed nodes are drained until repaired) and restarts from the last
checkpoint that survived: the work since then is lost and done again.
"""

import math
from dataclasses import dataclass, field

import numpy as np
import polars as pl

from relkit.simulate._config import SimConfig
from relkit.simulate._modes import BEHAVIOUR
from relkit.simulate._sacct import node_ranges

RUN_ID = "run-1"


@dataclass
class RunResult:
    """Everything the run simulation produces (plain lists, hours since start)."""

    attempts: list[dict] = field(default_factory=list)
    interruptions: list[dict] = field(default_factory=list)
    checkpoints: list[dict] = field(default_factory=list)
    progress: list[dict] = field(default_factory=list)
    realised: list[int] = field(default_factory=list)
    interrupting: dict[int, int] = field(default_factory=dict)
    reboots: list[tuple[int, float]] = field(default_factory=list)
    summary: dict = field(default_factory=dict)
    busy_node_h: float = 0.0


@dataclass
class _Progress:
    """Step bookkeeping across attempts."""

    steps_per_ckpt: int
    step_h: float
    persistent: int = 0  # step of the last persistent checkpoint
    latest: int = 0  # step of the last checkpoint of any level
    restore: int = 0  # step the next attempt restores


def _advance(
    cfg: SimConfig,
    prog: _Progress,
    attempt: int,
    start_h: float,
    stop_h: float,
    result: RunResult,
) -> tuple[int, bool]:
    """Run one attempt from ``start_h`` to ``stop_h``; record its checkpoints.

    Returns the step reached at ``stop_h`` (whole steps) and whether a
    checkpoint write was in progress then.
    """
    step = prog.restore
    t = start_h + cfg.restart_h
    if stop_h <= t:
        return step, False
    dt_h = prog.steps_per_ckpt * prog.step_h
    while True:
        if stop_h <= t + dt_h:
            done = math.floor((stop_h - t) / prog.step_h + 1e-9)
            return step + min(done, prog.steps_per_ckpt), False
        step += prog.steps_per_ckpt
        t += dt_h
        index = step // prog.steps_per_ckpt
        persistent = index % cfg.persistent_every == 0
        cost = cfg.checkpoint_cost_h if persistent else cfg.memory_checkpoint_cost_h
        if stop_h < t + cost:
            return step, True
        result.checkpoints.append(
            {
                "attempt": attempt,
                "step": step,
                "start_h": t,
                "end_h": t + cost,
                "level": "persistent" if persistent else "memory",
            }
        )
        t += cost
        prog.latest = step
        if persistent:
            prog.persistent = step


def simulate_run(
    cfg: SimConfig,
    cand: pl.DataFrame,
    planned_h: np.ndarray,
) -> RunResult:
    """Simulate the run on its partition, realising the partition's candidates.

    ``cand`` holds the candidate failures of the run's partition (nodes
    ``0 .. run_nodes + spare_nodes - 1``) sorted by ``t_h``, with a row index
    ``cid``. Calendar candidates are realised everywhere (and drain their node);
    job-dependent ones only on the nodes of a running attempt.
    """
    result = RunResult()
    horizon = cfg.horizon_h
    pool = cfg.run_nodes + cfg.spare_nodes
    n_run = cfg.run_nodes
    down_until = np.zeros(pool)
    cids = cand["cid"].to_list()
    modes = cand["failure_mode"].to_list()
    nodes = cand["node"].to_list()
    times = cand["t_h"].to_list()
    repairs = cand["repair_h"].to_list()
    beh = [BEHAVIOUR[m] for m in modes]
    n_cand = len(cids)
    i = 0
    step_h = cfg.step_time_s / 3600.0
    spc = max(1, round(cfg.checkpoint_interval_h / step_h))
    prog = _Progress(steps_per_ckpt=spc, step_h=step_h)
    planned = [float(x) for x in planned_h]
    p = 0

    def idle(k: int) -> None:
        """Realise candidate k on a node the run does not hold (or between)."""
        if beh[k].job_dependent:
            return
        result.realised.append(cids[k])
        if beh[k].drains:
            node = nodes[k]
            until = times[k] + repairs[k]
            down_until[node] = max(down_until[node], until)
            result.reboots.append((node, until))

    t = 0.0
    job_seq = 0
    attempt_in_job = 0
    attempt = 0
    new_job = True
    last_end = 0.0
    first_start: float | None = None
    final_step: int | None = None
    while n_run and t < horizon:
        # wait until enough nodes are up, realising what happens meanwhile
        while True:
            while i < n_cand and times[i] < t:
                idle(i)
                i += 1
            up = np.flatnonzero(down_until <= t)
            if up.size >= n_run:
                break
            t = float(np.sort(down_until)[n_run - 1])
            if t >= horizon:
                break
        if t >= horizon:
            break
        alloc = up[:n_run]
        held = np.zeros(pool, dtype=bool)
        held[alloc] = True
        if new_job:
            job_seq += 1
            attempt_in_job = 0
        attempt += 1
        attempt_in_job += 1
        start = t
        if first_start is None:
            first_start = start
        # the first event that ends this attempt: a failure on a held node, a
        # planned interruption, or the end of the span
        end_h, cause_k, is_planned = horizon, -1, False
        while p < len(planned) and planned[p] < start:
            p += 1
        next_planned = planned[p] if p < len(planned) else math.inf
        while i < n_cand and times[i] < horizon:
            if next_planned <= times[i]:
                end_h, is_planned = next_planned, True
                p += 1
                break
            k = i
            i += 1
            if not held[nodes[k]]:
                idle(k)
                continue
            result.realised.append(cids[k])
            if beh[k].drains:
                until = times[k] + repairs[k]
                down_until[nodes[k]] = max(down_until[nodes[k]], until)
                result.reboots.append((nodes[k], until))
            if beh[k].interrupts:
                end_h, cause_k = times[k], k
                break
        else:
            if next_planned < horizon:
                end_h, is_planned = next_planned, True
                p += 1
        reached, writing = _advance(cfg, prog, attempt, start, end_h, result)
        row = {
            "job_seq": job_seq,
            "attempt": attempt,
            "attempt_in_job": attempt_in_job,
            "submit_h": last_end,
            "start_h": start,
            "end_h": None,
            "ranges": node_ranges(alloc),
            "state": "RUNNING",
            "exit_code": "0:0",
            "start_step": prog.restore,
            "end_step": reached,
        }
        result.attempts.append(row)
        if end_h >= horizon:
            final_step = reached
            result.busy_node_h += (horizon - start) * n_run
            break
        if is_planned:
            # graceful stop: finish any write, save a persistent checkpoint, requeue
            save_start = end_h
            save_end = save_start + cfg.checkpoint_cost_h
            result.checkpoints.append(
                {
                    "attempt": attempt,
                    "step": reached,
                    "start_h": save_start,
                    "end_h": save_end,
                    "level": "persistent",
                }
            )
            prog.persistent = prog.latest = prog.restore = reached
            row.update(end_h=save_end, state="REQUEUED", end_step=reached)
            # recorded when the attempt ends, after its final checkpoint, as
            # sacct's End shows it (the stop was asked checkpoint_cost_h before)
            result.interruptions.append(
                {
                    "t_h": save_end,
                    "job_seq": job_seq,
                    "attempt": attempt,
                    "node": None,
                    "cid": None,
                    "failure_mode": None,
                    "kind": "planned",
                    "lost_work_h": 0.0,
                }
            )
            result.busy_node_h += (save_end - start) * n_run
            t = save_end + cfg.planned_downtime_h
            last_end = save_end
            new_job = False
            continue
        b = beh[cause_k]
        restore = prog.persistent if b.drains else prog.latest
        lost = (reached - restore) * step_h
        row.update(end_h=end_h, state=b.job_state, exit_code=b.exit_code)
        result.interrupting[cids[cause_k]] = len(result.attempts) - 1
        result.interruptions.append(
            {
                "t_h": end_h,
                "job_seq": job_seq,
                "attempt": attempt,
                "node": nodes[cause_k],
                "cid": cids[cause_k],
                "failure_mode": modes[cause_k],
                "kind": "unexpected",
                "lost_work_h": lost,
                "in_write": writing,
            }
        )
        prog.restore = restore
        prog.latest = restore
        result.busy_node_h += (end_h - start) * n_run
        t = end_h + cfg.requeue_h
        last_end = end_h
        # Slurm requeues a NODE_FAIL job under its id; a FAILED run is resubmitted
        new_job = b.job_state != "NODE_FAIL"
    if final_step is None:
        final_step = prog.restore
    # what is left after the run's last event is realised as idle time
    while i < n_cand and times[i] < horizon:
        idle(i)
        i += 1
    if n_run and first_start is not None:
        wall = horizon - first_start
        productive = final_step * step_h
        lost = sum(x["lost_work_h"] for x in result.interruptions)
        result.summary = {
            "run_id": RUN_ID,
            "n_nodes": n_run,
            "n_gpus": n_run * cfg.gpus_per_node,
            "first_start_h": first_start,
            "wall_h": wall,
            "productive_h": productive,
            "final_step": final_step,
            "ettr_frac": productive / wall if wall > 0 else None,
            "lost_work_h": lost,
            "n_attempts": attempt,
            "n_unexpected": sum(
                1 for x in result.interruptions if x["kind"] == "unexpected"
            ),
            "n_planned": sum(1 for x in result.interruptions if x["kind"] == "planned"),
            "steps_per_checkpoint": spc,
            "checkpoint_interval_h": spc * step_h,
            "n_checkpoints": len(result.checkpoints),
        }
    return result
