"""How big a simulation's output will be, estimated before simulating it."""

import math
import shutil
from dataclasses import dataclass
from pathlib import Path

from relkit.errors import InvalidParameterError
from relkit.simulate._config import SimConfig
from relkit.simulate._modes import BEHAVIOUR

__all__ = ["SIZE_LIMITS", "OutputEstimate", "check_size", "estimate_output"]

#: Refuse a simulation (unless ``--yes-big``) above any of these expected counts:
#: kernel log lines and background jobs (the issue's benchmark scale is 10^7
#: lines and 10^6 jobs), injected incidents (each is listed in
#: ``ground_truth.json``) and the run's checkpoint records (held in memory).
SIZE_LIMITS: dict[str, float] = {
    "log_lines": 5e8,
    "jobs": 1e7,
    "incidents": 2e6,
    "checkpoints": 2e6,
}
#: Bytes per written item, measured on the presets' output (rounded up).
_BYTES = {"log_line": 125, "sacct_row": 130, "checkpoint": 330, "incident": 450}


@dataclass(frozen=True)
class OutputEstimate:
    """Expected size of a simulation's output (means, not bounds).

    Parameters
    ----------
    log_lines : float
        Kernel and syslog lines.
    jobs : float
        Background jobs.
    job_attempts : float
        Job attempts (``sacct.psv`` allocation rows).
    incidents : float
        Injected incidents (candidate failures of every process).
    checkpoints : float
        Checkpoint saves of the training run.
    bytes : float
        Bytes written under ``--out``.
    """

    log_lines: float
    jobs: float
    job_attempts: float
    incidents: float
    checkpoints: float
    bytes: float


def estimate_output(config: SimConfig) -> OutputEstimate:
    """Estimate a simulation's output from its parameters, without simulating.

    Parameters
    ----------
    config : SimConfig
        The simulation.

    Returns
    -------
    OutputEstimate
        Expected counts and bytes.

    Examples
    --------
    >>> from relkit.simulate import simulation_preset
    >>> est = estimate_output(simulation_preset("llama3-54d", nodes=264))
    >>> round(est.log_lines, -3)
    344000.0
    """
    cfg = config
    node_h = cfg.nodes * cfg.horizon_h
    incidents = 0.0
    interrupting = 0.0
    for p in cfg.processes:
        b = BEHAVIOUR[p.failure_mode]
        per_node_h = p.rate_per_unit_h * (cfg.gpus_per_node if b.unit == "gpu" else 1)
        incidents += per_node_h * node_h
        if b.interrupts:
            interrupting += per_node_h
    log_lines = (
        cfg.noise_lines_per_node_day * cfg.nodes * cfg.days
        + 2.0 * cfg.nodes  # closing lines
        + 16.0 * incidents  # storms and the boots after repairs
    )
    run_attempts = (
        interrupting * cfg.run_nodes * cfg.horizon_h + cfg.planned_per_day * cfg.days
        if cfg.run_nodes
        else 0.0
    )
    checkpoints = cfg.horizon_h / cfg.checkpoint_interval_h if cfg.run_nodes else 0.0
    job_attempts = 1.1 * cfg.background_jobs + run_attempts + bool(cfg.run_nodes)
    size = (
        log_lines * _BYTES["log_line"]
        + 4.0 * job_attempts * _BYTES["sacct_row"]
        + 2.0 * checkpoints * _BYTES["checkpoint"]
        + incidents * _BYTES["incident"]
        + cfg.nodes * 60.0
    )
    return OutputEstimate(
        log_lines=log_lines,
        jobs=float(cfg.background_jobs),
        job_attempts=job_attempts,
        incidents=incidents,
        checkpoints=checkpoints,
        bytes=size,
    )


def check_size(config: SimConfig, out: Path, *, allow_big: bool) -> OutputEstimate:
    """Estimate the output; refuse it above a limit or the free disk space.

    Raises :class:`~relkit.errors.InvalidParameterError` (unless
    ``allow_big``) when an estimate passes :data:`SIZE_LIMITS` or the bytes
    the free space of the file system holding ``out``.
    """
    est = estimate_output(config)
    if allow_big:
        return est
    existing = out
    while not existing.exists():
        existing = existing.parent
    free = shutil.disk_usage(existing).free
    over = [
        f"{_num(getattr(est, k))} {k.replace('_', ' ')} (limit {_num(v)})"
        for k, v in SIZE_LIMITS.items()
        if getattr(est, k) > v
    ]
    if est.bytes > free:
        over.append(
            f"{_bytes(est.bytes)} of files (free on {existing}: {_bytes(free)})"
        )
    if over:
        msg = (
            f"this simulation would write about {_num(est.log_lines)} log lines, "
            f"{_num(est.jobs)} background jobs ({_num(est.job_attempts)} job "
            f"attempts), {_num(est.incidents)} incidents and {_bytes(est.bytes)} "
            f"in all, over the limit: {'; '.join(over)}. Shrink it (--nodes, "
            "--days, --noise-lines-per-node-day, --background-jobs, "
            "--checkpoint-interval-h) or pass --yes-big (library: "
            "allow_big=True) to run it anyway."
        )
        raise InvalidParameterError(msg)
    return est


def _num(x: float) -> str:
    if x < 1e6:
        return f"{x:,.0f}"
    return f"{x:.2g}".replace("e+0", "e").replace("e+", "e")


def _bytes(x: float) -> str:
    units = ("B", "kB", "MB", "GB", "TB", "PB")
    k = min(len(units) - 1, int(math.log10(max(x, 1.0)) // 3))
    return f"{x / 10 ** (3 * k):.3g} {units[k]}"
