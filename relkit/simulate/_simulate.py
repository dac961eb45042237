"""Run a simulation in memory: fleet, failures, workload, log lines, frames."""

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta

import numpy as np
import polars as pl

from relkit.errors import InvalidParameterError
from relkit.schema import UTC
from relkit.simulate._assemble import (
    background_attempts,
    checkpoints_frame,
    fleet_truth,
    incidents_frame,
    interruptions_frame,
    job_ids,
    lines_frame,
    processes_frame,
    run_attempts,
    runs_frame,
)
from relkit.simulate._background import (
    JobArrays,
    draw_jobs,
    simulate_background,
)
from relkit.simulate._config import SimConfig
from relkit.simulate._fleet import build_fleet, draw_failures
from relkit.simulate._kernel import DMESG, SECONDS
from relkit.simulate._run import simulate_run

__all__ = ["Simulation", "simulate_cluster"]


@dataclass(frozen=True)
class Simulation:
    """A simulated cluster with its ground truth, as polars frames.

    Parameters
    ----------
    config : SimConfig
        The parameters simulated.
    seed : int
        The seed of ``np.random.default_rng``.
    assets : pl.DataFrame
        The fleet in the ``--kind assets`` file shape, one row per host:
        ``host``, ``in_service_ts`` (ISO text), ``out_of_service_ts`` (empty),
        ``gpus``, ``system``, ``rack``, ``batch``, ``partition``.
    fleet : pl.DataFrame
        The hidden truth per host: ``host``, ``batch``, ``lemon`` (bool),
        ``rate_multiplier`` (hardware rates, fleet mean 1).
    processes : pl.DataFrame
        One row per failure process (their total rate per node-day is
        :meth:`SimConfig.failures_per_node_day`): ``failure_mode``, ``unit`` (``gpu`` or
        ``node``), ``rate_per_unit_h``, ``rate_per_node_h``, ``weibull_shape``,
        ``table5_row``, ``logged``, ``job_dependent``, ``counts_as_failure``,
        ``exposure_unit_h`` (unit-hours at risk: the whole span, or for
        job-dependent modes the unit-hours a job ran), ``expected_n``
        (rate x exposure; null for Weibull processes) and ``n_injected``.
    incidents : pl.DataFrame
        Every injected incident, sorted by time: ``incident_id``, ``ts``
        (UTC), ``host``, ``node``, ``gpu``, ``device`` (as the kernel ingest
        keys it: GPU PCI ``0000:18:00``, ``"pci netdev"`` of a NIC port,
        ``mc0``, ``cpu3``, ``mlx5_2``; null when none), ``failure_mode``,
        ``table5_row``, ``logged``, ``counts_as_failure``, ``repair_h``,
        ``interrupted_job_id`` (null when no job was interrupted), ``n_lines``.
    interruptions : pl.DataFrame
        Every job interruption: ``ts`` (UTC; when the attempt ended, as
        sacct's End shows it: for a planned stop, after the final checkpoint
        write), ``run_id`` (null for background jobs), ``job_id``,
        ``attempt``, ``host``, ``failure_mode``, ``table5_row``, ``kind``
        (``unexpected`` or ``planned``), ``lost_work_h`` (work done since the
        last surviving checkpoint, to be redone; the whole attempt for
        background jobs), ``incident_id``.
    jobs : pl.DataFrame
        One row per job attempt (the rows of ``sacct.psv`` without steps):
        ``job_id``, ``job_id_raw``, ``attempt``, ``name``, ``user``, ``uid``,
        ``partition``, ``state``, ``exit_code``, ``submit_ts``, ``start_ts``,
        ``end_ts`` (UTC; null when pending or still running), ``n_nodes``,
        ``n_gpus``, ``node_list`` (Slurm host list, ``None assigned`` when
        pending), ``first_node`` (host), ``sort_key`` (JobIDRaw as
        a number), ``start_step`` and ``end_step`` (training-run attempts only:
        the step restored and the step reached). Sorted by ``sort_key`` and
        ``attempt``, the order of ``sacct -D -P``.
    runs : pl.DataFrame
        One row per training run: ``run_id``, ``n_nodes``, ``n_gpus``,
        ``wall_h``, ``productive_h``, ``ettr_frac`` (productive / wall, the
        true ETTR), ``lost_work_h``, ``n_attempts``, ``n_unexpected``,
        ``n_planned``, ``checkpoint_interval_h``, ``n_checkpoints``,
        ``failures_per_node_day`` (the interrupting rate of the run's nodes).
    checkpoints : pl.DataFrame
        The run's checkpoint saves: ``run_id``, ``attempt``, ``job_id``,
        ``step``, ``start_ts``, ``end_ts``, ``save_s``, ``level``.
    lines : pl.DataFrame
        The failure log lines of every logged incident: ``incident_id``,
        ``ts`` (exact, UTC), ``host``, ``node``, ``file`` (under ``kernel/``),
        ``stream``, ``tag``, ``msg``, ``is_event``, ``failure_mode``,
        ``device``, ``code``, ``severity``.
    framings : list of str
        Framing of each host's log (index = node).
    reboots : list of (int, float)
        Node index and hours since start of every reboot after a repair.
    boot_h : np.ndarray
        Hours since start of each node's boot before the span (negative).
    """

    config: SimConfig
    seed: int
    assets: pl.DataFrame
    fleet: pl.DataFrame
    processes: pl.DataFrame
    incidents: pl.DataFrame
    interruptions: pl.DataFrame
    jobs: pl.DataFrame
    runs: pl.DataFrame
    checkpoints: pl.DataFrame
    lines: pl.DataFrame
    framings: list[str]
    reboots: list[tuple[int, float]] = field(repr=False)
    boot_h: np.ndarray = field(repr=False)

    @property
    def events(self) -> pl.DataFrame:
        """The failure-log events as the kernel ingest stores them.

        Returns
        -------
        pl.DataFrame
            The store's ``events`` columns (:data:`relkit.schema.POLARS_SCHEMAS`),
            one row per event line written, with ``ts`` truncated to the
            precision of the host's framing; ``source_id`` numbers the files and
            ``line_no`` the event lines within a file (not the file's line
            numbers, which include noise).
        """
        from relkit import taxonomy
        from relkit.schema import POLARS_SCHEMAS

        default = {
            "gpu/sympathetic": "info",
            "network/link_up": "info",
            "gpu/precursor": "warning",
            "host/memory_ce": "warning",
        }
        mode_severity = getattr(taxonomy, "MODE_SEVERITY", default)

        ev = self.lines.filter(pl.col("is_event"))
        seconds = pl.col("_framing").is_in(SECONDS)
        ev = (
            ev.with_columns(
                _framing=pl.when(
                    pl.col("node")
                    .replace_strict(
                        dict(enumerate(self.framings)), return_dtype=pl.String
                    )
                    .is_in(DMESG)
                    & (pl.col("stream") == "user")
                )
                .then(pl.lit("iso"))
                .otherwise(
                    pl.col("node").replace_strict(
                        dict(enumerate(self.framings)), return_dtype=pl.String
                    )
                )
            )
            .with_columns(
                ts=pl.when(seconds)
                .then(pl.col("ts").dt.truncate("1s"))
                .otherwise(pl.col("ts")),
                severity=pl.coalesce(
                    pl.col("severity").str.to_lowercase(),
                    pl.col("failure_mode").replace_strict(
                        mode_severity, default="error", return_dtype=pl.String
                    ),
                ),
            )
            .sort("file", "ts", "incident_id")
        )
        files = ev["file"].unique().sort()
        source = pl.col("file").replace_strict(
            {f: k + 1 for k, f in enumerate(files.to_list())}, return_dtype=pl.Int32
        )
        out = ev.with_columns(
            source_id=source,
            line_no=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("file"),
            system=pl.lit(self.config.name),
            detail=pl.lit(None, dtype=pl.String),
            repaired_ts=pl.lit(None, dtype=UTC),
            repair_s=pl.lit(None, dtype=pl.Float64),
            flags=pl.lit(None, dtype=pl.String),
            count=pl.lit(1, dtype=pl.Int64),
            mono_s=pl.lit(None, dtype=pl.Float64),
        )
        schema = POLARS_SCHEMAS["events"]
        return out.select(schema.names()).cast(dict(schema)).sort("ts", "source_id")

    def _repr_html_(self) -> str:
        """Return a small HTML summary for Jupyter (sizes, not the frames)."""
        from relkit.display import html_table

        cfg = self.config
        return html_table(
            f"Simulation {cfg.name!r}, seed {self.seed}",
            {
                "nodes": cfg.nodes,
                "gpus_per_node": cfg.gpus_per_node,
                "days": cfg.days,
                "start": cfg.start.isoformat(),
                "failure processes": self.processes.height,
                "incidents": self.incidents.height,
                "interruptions": self.interruptions.height,
                "jobs": self.jobs.height,
                "runs": self.runs.height,
                "checkpoints": self.checkpoints.height,
                "log lines": self.lines.height,
            },
        )

    @property
    def assets_table(self) -> pl.DataFrame:
        """The assets as the store holds them after ``--kind assets``.

        Returns
        -------
        pl.DataFrame
            The store's ``assets`` columns, one row per host, every host in
            service from the start of the simulation.
        """
        from relkit.schema import POLARS_SCHEMAS

        start = self.config.start
        attrs = [
            json.dumps({"rack": r, "batch": b, "partition": p})
            for r, b, p in self.assets.select("rack", "batch", "partition").iter_rows()
        ]
        schema = POLARS_SCHEMAS["assets"]
        return (
            pl.DataFrame(
                {
                    "source_id": 1,
                    "line_no": pl.int_range(2, self.assets.height + 2, eager=True),
                    "host": self.assets["host"],
                    "device": None,
                    "system": self.assets["system"],
                    "gpus": self.assets["gpus"],
                    "in_service_ts": start,
                    "out_of_service_ts": None,
                    "observed_from_ts": None,
                    "attrs": attrs,
                    "flags": None,
                }
            )
            .select(schema.names())
            .cast(dict(schema))
        )


def _planned(cfg: SimConfig, rng: np.random.Generator) -> np.ndarray:
    from scipy import stats

    if cfg.planned_per_day <= 0 or not cfg.run_nodes:
        return np.zeros(0)
    n = int(stats.poisson.rvs(cfg.planned_per_day * cfg.days, random_state=rng))
    return np.sort(rng.random(n) * cfg.horizon_h)


def simulate_cluster(
    config: SimConfig,
    *,
    seed: int,
    progress: Callable[[str], None] | None = None,
) -> Simulation:
    """Simulate a GPU cluster with known ground truth, in memory.

    Parameters
    ----------
    config : SimConfig
        Fleet, failure processes and workload, e.g. from
        :func:`simulation_preset`.
    seed : int
        Seed of ``np.random.default_rng``, >= 0. The same seed and config give
        the same simulation (independent streams are spawned for the fleet,
        the failures, the workload and the logs).
    progress : callable, optional
        Called with a short message at each stage (the command line prints it
        on stderr).

    Returns
    -------
    Simulation
        Frames of the fleet, every injected incident, every job attempt and
        interruption, the training run's checkpoints and true ETTR, and the
        failure log lines; :attr:`Simulation.events` gives the events the
        kernel ingest would store.

    Raises
    ------
    InvalidParameterError
        If ``seed`` is not a whole number >= 0 or the config is invalid.

    Notes
    -----
    Failures of each mode are a Poisson process per unit (or a Weibull renewal
    process), realised on calendar time for hardware modes and only while a job
    runs on the unit for job-dependent ones (NCCL errors, software bugs,
    application Xids). A failure on a job's node ends the attempt; the run is
    requeued, restarts after u₀ from its last surviving checkpoint and loses
    the work since; the failed node is drained until repaired. The true ETTR is
    the run's productive time (unique steps computed) over its wall time.

    References
    ----------
    .. [1] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024). doi:10.48550/arXiv.2407.21783
    .. [2] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine
       Learning Research Clusters", HPCA 2025, arXiv:2410.21680.
       doi:10.1109/HPCA61900.2025.00096

    Examples
    --------
    >>> from relkit.simulate import simulation_preset
    >>> cfg = simulation_preset("llama3-54d", nodes=66, days=5)
    >>> sim = simulate_cluster(cfg, seed=1)
    >>> sim.runs.select("run_id", "n_nodes").row(0)
    ('run-1', 64)
    >>> simulate_cluster(cfg, seed=-1)
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: seed (--seed) must be a whole number >= 0; ...
    """
    sim, _ = run_simulation(config, seed=seed, progress=progress, sink=None)
    return sim


def run_simulation(
    config: SimConfig,
    *,
    seed: int,
    progress: Callable[[str], None] | None,
    sink: Callable[[pl.DataFrame], None] | None,
) -> tuple[Simulation, int]:
    """Simulate; return the simulation and its number of job attempts.

    With a ``sink``, the background attempts go to it in chunks (named, in the
    columns of ``Simulation.jobs``) as the scheduler finishes them, and the
    returned ``jobs`` holds only the training run's attempts; without one,
    ``jobs`` holds every attempt.
    """
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        msg = f"seed (--seed) must be a whole number >= 0; got {seed!r}."
        raise InvalidParameterError(msg)
    cfg = config.validated()
    say = progress or (lambda _msg: None)
    rng = np.random.default_rng(seed)
    r_fleet, r_fail, r_plan, r_work, r_log = rng.spawn(5)
    fleet = build_fleet(cfg, r_fleet)
    say(f"fleet: {cfg.nodes:,} nodes x {cfg.gpus_per_node} GPUs over {cfg.days:g} days")
    cand = (
        draw_failures(cfg, fleet, r_fail)
        .with_row_index("cid")
        .with_columns(pl.col("cid").cast(pl.Int64))
    )
    say(f"failure processes: {cand.height:,} candidate failures")
    pool = cfg.run_nodes + cfg.spare_nodes
    run = simulate_run(cfg, cand.filter(pl.col("node") < pool), _planned(cfg, r_plan))
    say(f"training run: {len(run.attempts):,} attempts")
    jobs = draw_jobs(cfg, r_work)
    n_jobs = jobs.height
    ids = job_ids(cfg, run, jobs)
    labels = jobs.select("name", "user", "partition")
    arrays = JobArrays.from_frame(jobs)
    del jobs  # the scheduler needs the arrays only, the names the labels
    hosts = fleet.hosts
    kept: list[pl.DataFrame] = []
    deliver = sink if sink is not None else kept.append

    def named(chunk: pl.DataFrame) -> None:
        deliver(background_attempts(cfg, chunk, labels, ids, hosts))

    bg = simulate_background(
        cfg, arrays, cand.filter(pl.col("node") >= pool), say, emit=named
    )
    del arrays
    if cfg.background_jobs:
        say(f"background: {n_jobs:,} jobs, {bg.n_attempts:,} attempts")
    run_rows = run_attempts(cfg, run, ids, hosts)
    attempts = (
        pl.concat([run_rows, *kept], how="vertical_relaxed").sort("sort_key", "attempt")
        if kept
        else run_rows
    )
    kept.clear()
    incidents = incidents_frame(cfg, cand, run, bg, ids, hosts)
    r_frame, r_storm, r_boot = r_log.spawn(3)
    usable = [f for f in cfg.framings if f != "rfc3164" or cfg.days <= 360]
    framings = [usable[k] for k in r_frame.integers(0, len(usable), cfg.nodes)]
    boot_h = -(1.0 + 29.0 * r_boot.random(cfg.nodes)) * 24.0
    lines = lines_frame(cfg, incidents, hosts, framings, r_storm)
    incidents = incidents.join(
        lines.group_by("incident_id").agg(n_lines=pl.len().cast(pl.Int64)),
        on="incident_id",
        how="left",
    ).with_columns(pl.col("n_lines").fill_null(0))
    interruptions = interruptions_frame(cfg, run, bg, incidents, hosts, ids)
    sim = Simulation(
        config=cfg,
        seed=seed,
        assets=fleet.assets(cfg),
        fleet=fleet_truth(fleet),
        processes=processes_frame(cfg, run, bg, incidents),
        incidents=incidents,
        interruptions=interruptions,
        jobs=attempts,
        runs=runs_frame(cfg, run),
        checkpoints=checkpoints_frame(cfg, run, ids),
        lines=lines,
        framings=framings,
        reboots=run.reboots + bg.reboots,
        boot_h=boot_h,
    )
    return sim, len(run.attempts) + bg.n_attempts


def gpu_uuids(seed: int, nodes: int, gpus_per_node: int) -> dict[int, list[str]]:
    """Stable GPU UUIDs per node (for the driver's GPU map lines)."""
    rng = np.random.default_rng([seed, 7])
    raw = rng.integers(0, 2**63, size=(nodes, gpus_per_node, 2), dtype=np.int64)
    return {
        n: [
            "GPU-" + str(uuid.UUID(int=(int(a) << 64) | int(b)))
            for a, b in raw[n].tolist()
        ]
        for n in range(nodes)
    }


def horizon_end(cfg: SimConfig) -> object:
    """End of the simulated span (UTC datetime)."""
    return cfg.start + timedelta(hours=cfg.horizon_h)
