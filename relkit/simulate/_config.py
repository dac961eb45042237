"""Parameters of a simulated cluster: the fleet, its failure processes, the work."""

import math
from dataclasses import asdict, dataclass, replace
from datetime import UTC, datetime
from typing import Any

from relkit.errors import InvalidParameterError
from relkit.simulate._modes import behaviour

__all__ = ["FailureProcess", "SimConfig"]


@dataclass(frozen=True)
class FailureProcess:
    """One failure process: a mode failing at a rate per GPU-hour or node-hour.

    Parameters
    ----------
    failure_mode : str
        A mode of the simulator (the taxonomy's logged modes and the Llama 3
        Table 5 causes that no log names; see :data:`relkit.simulate.BEHAVIOURS`).
    rate_per_unit_h : float
        Failures per unit-hour (per GPU-hour for GPU modes, per node-hour for
        node modes), >= 0. For Weibull processes the mean rate 1/mean life.
    weibull_shape : float, default 1.0
        Shape β of the Weibull time between failures of one unit (a renewal
        process from age 0 at the start); 1.0 is exponential (Poisson). Below 1
        the hazard decreases (infant mortality), above 1 it increases (wear-out).
    repair_h : float, optional
        Mean repair time in hours (exponential) of a failure that drains its
        node; defaults to the mode's own (:data:`relkit.simulate.BEHAVIOURS`).
    """

    failure_mode: str
    rate_per_unit_h: float
    weibull_shape: float = 1.0
    repair_h: float | None = None


FRAMINGS: tuple[str, ...] = ("iso", "rfc3339", "rfc3164", "dmesg_T", "dmesg_iso")
#: GPU models the kernel-log writer knows (they differ in the Xid codes printed).
GPU_MODELS: tuple[str, ...] = ("H100", "A100")
#: Modes whose only kernel-log form (Xid 172) an A100 fleet never prints.
A100_UNLOGGABLE: tuple[str, ...] = ("gpu/sram_uncorrectable",)


@dataclass(frozen=True)
class SimConfig:
    r"""A simulated GPU cluster, its failure processes and its workload.

    The defaults are the ``llama3-54d`` run's: its fleet and span are Llama 3's
    (arXiv:2407.21783, doi:10.48550/arXiv.2407.21783), while the checkpoint
    interval and cost, restart, requeue, step time and planned downtime are
    assumed, not from a source (the paper gives none); see
    :mod:`relkit.simulate._presets` for where every preset value comes from.

    Parameters
    ----------
    name : str
        Label (the preset's name), written to the ground truth and the assets'
        ``system`` column.
    nodes : int
        Nodes in the fleet, >= 2.
    gpus_per_node : int
        GPUs per node, 1 to 8.
    gpu_model : {"H100", "A100"}
        GPU of the nodes: decides which Xid codes and texts the kernel logs
        print (A100 drivers print no Xid 140 or 172, so an A100 fleet cannot
        have ``gpu/sram_uncorrectable``).
    days : float
        Simulated span in days, > 0 (at most 3650).
    start : datetime
        Start of the simulation, UTC.
    run_nodes : int
        Nodes of the large training run (0 for none); it runs from ``start`` on
        its own partition of ``run_nodes + spare_nodes`` nodes.
    spare_nodes : int
        Nodes held ready for the run to restart on while failed nodes are
        repaired.
    processes : tuple of FailureProcess
        The failure processes, one per mode.
    checkpoint_interval_h : float
        Compute time Δt between two checkpoints of the run, hours, at least
        one training step (``step_time_s``) and at least 1e-4.
    checkpoint_cost_h : float
        Blocking write time w of a (persistent) checkpoint, hours, >= 0.
    restart_h : float
        Restart overhead u₀ of each attempt (start-up plus restore), hours, >= 0.
    requeue_h : float
        Time from an interruption to the next attempt's start when nodes are
        free (scheduler requeue and queue time), hours, >= 0.
    persistent_every : int
        Every k-th checkpoint is persistent, the others in host memory (two
        levels); 1 = all persistent. A failure that drains a node loses the
        in-memory checkpoints.
    memory_checkpoint_cost_h : float
        Blocking write time of an in-memory checkpoint, hours, >= 0.
    step_time_s : float
        Time of one training step, seconds, > 0.
    planned_per_day : float
        Planned interruptions of the run (maintenance, upgrades) per day, >= 0.
    planned_downtime_h : float
        Time the run waits after a planned interruption, hours, >= 0.
    background_jobs : int
        Smaller jobs submitted over the span to the other nodes (Kokolis et al.
        size mix), >= 0.
    lemon_nodes : int
        Nodes whose hardware failure rates are multiplied by
        ``lemon_multiplier``.
    lemon_multiplier : float
        Rate multiplier of lemon nodes, >= 1.
    rate_trend : float
        Shape β of a power-law trend in calendar time of the hardware modes
        with exponential gaps (calendar modes that count as failures): each
        unit's failures are a non-homogeneous Poisson process of intensity
        :math:`\lambda(t) = \bar\lambda\,\beta\,(t/T)^{\beta-1}` over the
        span :math:`T`, the power-law (Crow-AMSAA) model of MIL-HDBK-189, so
        the mean rate over the span stays :math:`\bar\lambda`. β > 1: the rate
        rises, β < 1: it falls, 1 (default): constant (no trend). Processes
        with a Weibull shape other than 1 keep their renewal process.
    batches : tuple of (str, float, float)
        Hardware batches: name, fraction of nodes, rate multiplier (hardware
        modes). Fractions must sum to 1.
    nodes_per_rack : int
        Nodes per rack (the assets' ``rack`` attribute).
    noise_lines_per_node_day : float
        Ordinary log lines per node-day besides failure lines (the bulk of a
        log), >= 0.
    framings : tuple of str
        Log framings drawn per host: ``iso`` (journalctl short-iso),
        ``rfc3339`` (rsyslog), ``rfc3164`` (classic syslog, year-less; left
        out for spans over 360 days), ``dmesg_T`` and ``dmesg_iso`` (dmesg
        with wall stamps; the host's user-space lines go to a ``.syslog``
        file in ``iso`` framing).
    local_tz : str
        IANA zone of zone-less stamps (sacct, RFC 3164, dmesg -T).
    host_prefix : str
        Host names are the prefix and a zero-padded number (``gpu0001``).
    first_job_id : int
        First Slurm job id.
    """

    name: str = "custom"
    nodes: int = 2112
    gpus_per_node: int = 8
    gpu_model: str = "H100"
    days: float = 54.0
    start: datetime = datetime(2024, 3, 4, tzinfo=UTC)
    run_nodes: int = 2048
    spare_nodes: int = 64
    processes: tuple[FailureProcess, ...] = ()
    checkpoint_interval_h: float = 0.25
    checkpoint_cost_h: float = 10.0 / 3600.0
    restart_h: float = 3.0 / 60.0
    requeue_h: float = 1.0 / 60.0
    persistent_every: int = 1
    memory_checkpoint_cost_h: float = 0.0
    step_time_s: float = 10.0
    planned_per_day: float = 0.0
    planned_downtime_h: float = 0.25
    background_jobs: int = 0
    lemon_nodes: int = 0
    lemon_multiplier: float = 10.0
    rate_trend: float = 1.0
    batches: tuple[tuple[str, float, float], ...] = (("b1", 1.0, 1.0),)
    nodes_per_rack: int = 16
    noise_lines_per_node_day: float = 24.0
    framings: tuple[str, ...] = FRAMINGS
    local_tz: str = "UTC"
    host_prefix: str = "gpu"
    first_job_id: int = 1001

    @property
    def horizon_h(self) -> float:
        """Simulated span in hours."""
        return self.days * 24.0

    @property
    def batch_nodes(self) -> int:
        """Nodes of the background partition (outside the run's partition)."""
        return self.nodes - self.run_nodes - self.spare_nodes

    def failures_per_node_day(self, *, counted_only: bool = True) -> float:
        """Return the fleet-mean failure rate of the processes, per node-day.

        Parameters
        ----------
        counted_only : bool, default True
            Sum the modes that count as failures and interrupt a job (the node
            failure rate r_f of Kokolis et al.); False sums every mode that
            interrupts a job (user-code errors such as
            ``gpu/application_error`` too).

        Returns
        -------
        float
            Failures per node-day: per calendar node-day for calendar modes,
            per node-day with a job running for job-dependent ones (NCCL
            errors, software bugs, silent data corruption), which strike only
            then. Hardware rates are fleet means (lemon and batch multipliers
            average to 1).

        Examples
        --------
        >>> cfg = SimConfig(processes=(FailureProcess("host/ssd", 1e-4),))
        >>> round(cfg.failures_per_node_day(), 6)
        0.0024
        """
        total = 0.0
        for p in self.processes:
            b = behaviour(p.failure_mode)
            if not b.interrupts or (counted_only and not b.counts_as_failure):
                continue
            per_node = self.gpus_per_node if b.unit == "gpu" else 1
            total += p.rate_per_unit_h * per_node
        return total * 24.0

    def replace(self, **changes: Any) -> "SimConfig":  # noqa: ANN401
        """Return a copy with some fields changed, checked.

        Parameters
        ----------
        **changes : Any
            Field names and new values.

        Returns
        -------
        SimConfig
            The new, validated configuration.
        """
        return replace(self, **changes).validated()

    def to_dict(self) -> dict[str, Any]:
        """Return the parameters as JSON-ready values.

        Returns
        -------
        dict
            Every field; ``start`` as ISO 8601 text.
        """
        out = asdict(self)
        out["start"] = self.start.isoformat().replace("+00:00", "Z")
        out["processes"] = [asdict(p) for p in self.processes]
        out["batches"] = [list(b) for b in self.batches]
        out["framings"] = list(self.framings)
        if self.rate_trend == 1.0:  # no trend: the output of earlier versions
            del out["rate_trend"]
        return out

    def validated(self) -> "SimConfig":
        """Check every field; return self.

        Returns
        -------
        SimConfig
            ``self``, unchanged.

        Raises
        ------
        InvalidParameterError
            If a field is out of range; the message names the field (as its
            command-line flag where there is one) and the allowed range.
        """
        _int(self.nodes, "nodes", 2, 10**6)
        _int(self.gpus_per_node, "gpus_per_node", 1, 8)
        _num(self.days, "days", 1e-3, 3650.0)
        _int(self.run_nodes, "run_nodes", 0, self.nodes)
        _int(self.spare_nodes, "spare_nodes", 0, self.nodes)
        if self.run_nodes + self.spare_nodes > self.nodes:
            msg = (
                f"the training run's {self.run_nodes} nodes (--run-nodes) and its "
                f"{self.spare_nodes} spare nodes (spare_nodes, a preset value) exceed "
                f"the fleet's {self.nodes} nodes (--nodes); raise --nodes to at least "
                f"{self.run_nodes + self.spare_nodes} or lower --run-nodes."
            )
            raise InvalidParameterError(msg)
        _int(self.background_jobs, "background_jobs", 0, 10**8)
        if self.background_jobs and self.batch_nodes < 1:
            msg = (
                f"--background-jobs {self.background_jobs} needs nodes outside the "
                f"training run's partition, but all {self.nodes} nodes are the run's "
                f"{self.run_nodes} plus {self.spare_nodes} spares; raise --nodes to at "
                f"least {self.run_nodes + self.spare_nodes + 1} or lower --run-nodes."
            )
            raise InvalidParameterError(msg)
        _num(self.step_time_s, "step_time_s", 1e-3, 1e5)
        step_h = self.step_time_s / 3600.0
        if not (
            isinstance(self.checkpoint_interval_h, int | float)
            and not isinstance(self.checkpoint_interval_h, bool)
            and math.isfinite(self.checkpoint_interval_h)
            and max(1e-4, step_h) <= self.checkpoint_interval_h <= 1e4
        ):
            msg = (
                "checkpoint_interval_h (--checkpoint-interval-h) must be a number from "
                f"{max(1e-4, step_h):.6g} to 10000 hours; got "
                f"{self.checkpoint_interval_h!r}. A checkpoint is taken after whole "
                f"training steps of {self.step_time_s:g} s (step_time_s, a preset "
                "value), so the interval is at least one step; e.g. "
                f"--checkpoint-interval-h {max(1e-4, step_h, 0.01):.6g}."
            )
            raise InvalidParameterError(msg)
        _num(self.checkpoint_cost_h, "checkpoint_cost_h", 0.0, 1e3)
        _num(self.restart_h, "restart_h", 0.0, 1e3)
        _num(self.requeue_h, "requeue_h", 0.0, 1e3)
        _int(self.persistent_every, "persistent_every", 1, 10**4)
        _num(self.memory_checkpoint_cost_h, "memory_checkpoint_cost_h", 0.0, 1e3)
        _num(self.planned_per_day, "planned_per_day", 0.0, 1e3)
        _num(self.planned_downtime_h, "planned_downtime_h", 0.0, 1e3)
        _int(self.lemon_nodes, "lemon_nodes", 0, self.nodes)
        if self.gpu_model not in GPU_MODELS:
            msg = (
                f"gpu_model (a preset value) must be one of {list(GPU_MODELS)}; "
                f"got {self.gpu_model!r}."
            )
            raise InvalidParameterError(msg)
        _num(self.lemon_multiplier, "lemon_multiplier", 1.0, 1e6)
        _num(self.rate_trend, "rate_trend", 0.1, 10.0)
        _int(self.nodes_per_rack, "nodes_per_rack", 1, 10**6)
        _num(self.noise_lines_per_node_day, "noise_lines_per_node_day", 0.0, 1e6)
        _int(self.first_job_id, "first_job_id", 1, 10**9)
        if not self.batches or not math.isclose(
            sum(b[1] for b in self.batches), 1.0, abs_tol=1e-9
        ):
            msg = (
                f"batches fractions must sum to 1, found {self.batches!r}; e.g. "
                "(('b1', 0.7, 1.0), ('b2', 0.3, 2.0))."
            )
            raise InvalidParameterError(msg)
        for _, frac, mult in self.batches:
            _num(frac, "batch fraction", 0.0, 1.0)
            _num(mult, "batch rate multiplier", 0.0, 1e6)
        bad = [f for f in self.framings if f not in FRAMINGS]
        if bad or not self.framings:
            msg = f"framings must be some of {list(FRAMINGS)}, found {bad or '()'}."
            raise InvalidParameterError(msg)
        if set(self.framings) == {"rfc3164"} and self.days > 360:
            msg = (
                "framing 'rfc3164' has no year, so a span over 360 days cannot be "
                "dated; add another framing or shorten --days."
            )
            raise InvalidParameterError(msg)
        if not self.host_prefix or not self.host_prefix.replace("-", "").isalpha():
            msg = (
                f"host_prefix must be letters (and '-'), found {self.host_prefix!r}; "
                "e.g. 'gpu'."
            )
            raise InvalidParameterError(msg)
        if self.start.tzinfo is None:
            msg = f"start must be a UTC datetime, found naive {self.start}."
            raise InvalidParameterError(msg)
        try:
            from zoneinfo import ZoneInfo

            ZoneInfo(self.local_tz)
        except Exception as exc:  # ZoneInfoNotFoundError, ValueError
            msg = f"local_tz {self.local_tz!r} is not an IANA zone, e.g. 'UTC'."
            raise InvalidParameterError(msg) from exc
        seen: set[str] = set()
        for p in self.processes:
            behaviour(p.failure_mode)
            if p.failure_mode in A100_UNLOGGABLE and self.gpu_model == "A100":
                msg = (
                    f"mode {p.failure_mode!r} is written as Xid 172, which A100 "
                    "drivers do not print (on A100 an uncorrectable SRAM error is an "
                    "Xid 48 like an HBM one); use gpu/hbm_uncorrectable, or "
                    "gpu_model='H100'."
                )
                raise InvalidParameterError(msg)
            if p.failure_mode in seen:
                msg = f"two failure processes for mode {p.failure_mode!r}; keep one."
                raise InvalidParameterError(msg)
            seen.add(p.failure_mode)
            _num(p.rate_per_unit_h, f"rate of {p.failure_mode}", 0.0, 1.0)
            _num(p.weibull_shape, f"Weibull shape of {p.failure_mode}", 0.05, 20.0)
            if p.repair_h is not None:
                _num(p.repair_h, f"repair_h of {p.failure_mode}", 0.0, 1e5)
        return self


#: SimConfig fields that ``relkit simulate`` sets, and their flags.
CLI_FLAGS: dict[str, str] = {
    "nodes": "--nodes",
    "days": "--days",
    "run_nodes": "--run-nodes",
    "checkpoint_interval_h": "--checkpoint-interval-h",
    "checkpoint_cost_h": "--checkpoint-cost-h",
    "restart_h": "--restart-h",
    "background_jobs": "--background-jobs",
    "noise_lines_per_node_day": "--noise-lines-per-node-day",
    "lemon_nodes": "--lemon-nodes",
    "lemon_multiplier": "--lemon-multiplier",
    "rate_trend": "--rate-trend",
}


def _flag(name: str) -> str:
    """Name a field as the user can set it: its flag, or the preset value it is."""
    if name in CLI_FLAGS:
        return f"{name} ({CLI_FLAGS[name]})"
    if name.startswith("Weibull shape of "):
        mode = name.removeprefix("Weibull shape of ")
        return f"{name} (--weibull-shape {mode}=BETA)"
    field = name
    if " of " in name:
        field = "processes"
    elif name.startswith("batch "):
        field = "batches"
    return (
        f"{name} (a preset value with no command-line flag; library: "
        f"SimConfig.replace({field}=...))"
    )


def _num(value: object, name: str, low: float, high: float) -> float:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    x = float(value) if ok else math.nan  # type: ignore[arg-type]
    if not (math.isfinite(x) and low <= x <= high):
        msg = f"{_flag(name)} must be a number from {low:g} to {high:g}; got {value!r}."
        raise InvalidParameterError(msg)
    return x


def _int(value: object, name: str, low: int, high: int) -> int:
    ok = isinstance(value, int) and not isinstance(value, bool)
    if not ok or not (low <= value <= high):  # type: ignore[operator]
        msg = (
            f"{_flag(name)} must be a whole number from {low} to {high}; got {value!r}."
        )
        raise InvalidParameterError(msg)
    return int(value)  # type: ignore[arg-type]
