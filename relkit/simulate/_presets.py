"""Named simulation presets calibrated on published reliability numbers.

``llama3-54d``
    Llama 3 405B pre-training (Llama Team [1]_, §3.3.4, Table 5): 16,384 H100
    GPUs (2,048 nodes) training for 54 days, 419 unexpected interruptions in
    the 18 root-cause rows of Table 5 plus 47 planned ones (the paper's text,
    as quoted in ``datasets/paper-tables/PROVENANCE.md`` in the repository). Each
    row's count becomes a failure rate per node-hour of the run's nodes,
    divided over the row's failure modes by :data:`LLAMA3_MODE_WEIGHTS`; the
    spare nodes fail at the same rates.
``rsc1``
    Meta's RSC-1 research cluster (Kokolis et al. [2]_): 2,000 nodes of 8 A100
    GPUs, a node failure rate r_f of 6.50 per 1000 node-days, a 1,024-GPU
    training run and a background of research jobs whose sizes follow the
    paper's shape (most jobs under one node, most GPU time in jobs of 256 GPUs
    or more). The paper does not split r_f by cause, so the mix of causes is
    borrowed from Table 5 of [1]_.

Where each value comes from
---------------------------
Sourced: the Table 5 counts, 54 days, 2,048 nodes x 8 GPUs and 47 planned
interruptions [1]_; RSC-1's r_f = 6.50 per 1000 node-days, its 16,000 A100
GPUs (2,000 nodes) and the 150 M GPU-hours over 4 M jobs behind the background
job lengths [2]_ (``kokolis2024_rsc_headline_stats.csv``: r_f and the GPU count
are quoted by secondary write-ups, not read in the paper).

Assumed, not from a source (modelling choices, written here so that nobody
mistakes them for measurements):

- :data:`LLAMA3_MODE_WEIGHTS`, the split of a Table 5 row over several modes;
- the mean repair times of :data:`relkit.simulate.BEHAVIOURS` (4 to 72 hours);
- the rates of the information modes (:data:`INFO_PER_NODE_DAY`) and of
  ``gpu/application_error`` in ``rsc1`` (1e-5 per GPU-hour, user-code
  errors, not node failures, so outside r_f);
- the run's checkpoint interval (15 min), blocking write (10 s), restart (3 min),
  requeue (1 min), step time (10 s) and planned downtime (15 min) of
  ``llama3-54d`` (:class:`SimConfig`'s defaults: the paper gives none of them),
  and ``rsc1``'s checkpoint every hour with a 1 min write, 10 min restart and 2
  min requeue (the regime in which Kokolis et al. use their ETTR model);
- ``rsc1``'s lemon nodes (0.5 % of the fleet, hardware rates x 20; the paper
  describes lemon nodes but the share and the factor here are invented), its
  two hardware batches (60 % and 40 %, the second failing x 1.5), its 128-node
  run with 8 spares and its 240,000 background jobs a month;
- ``llama3-54d``'s background partition, used only when background jobs are
  asked for: a quarter of the fleet (704 more nodes), the run keeping its 2,048.

References
----------
.. [1] Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783
   (2024), §3.3.4, Table 5. doi:10.48550/arXiv.2407.21783
.. [2] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine
   Learning Research Clusters", HPCA 2025, arXiv:2410.21680.
   doi:10.1109/HPCA61900.2025.00096
"""

import math
from collections.abc import Mapping
from typing import Any

from relkit.errors import InvalidParameterError
from relkit.simulate._config import FailureProcess, SimConfig
from relkit.simulate._modes import BEHAVIOUR

__all__ = [
    "INFO_PER_NODE_DAY",
    "LLAMA3_MODE_WEIGHTS",
    "PRESETS",
    "RSC1_FAILURES_PER_NODE_DAY",
    "simulation_preset",
]

#: Preset names.
PRESETS: tuple[str, ...] = ("llama3-54d", "rsc1")

#: Table 5 row -> (failure mode, share of the row). Rows with several modes of the
#: taxonomy are split by these shares: assumed, not from a source (the paper does
#: not split its rows).
LLAMA3_MODE_WEIGHTS: dict[str, tuple[tuple[str, float], ...]] = {
    "Faulty GPU": (
        ("gpu/fallen_off_bus", 0.5),
        ("gpu/nvlink", 0.25),
        ("gpu/hang", 0.25),
    ),
    "GPU HBM3 Memory": (("gpu/hbm_uncorrectable", 1.0),),
    "Software Bug": (("software/bug", 1.0),),
    "Network Switch/Cable": (("network/link_down", 0.6), ("nvswitch/sxid", 0.4)),
    "Host Maintenance": (("host/unplanned_maintenance", 1.0),),
    "GPU SRAM Memory": (("gpu/sram_uncorrectable", 1.0),),
    "GPU System Processor": (("gpu/gsp_firmware", 1.0),),
    "NIC": (("network/nccl_error", 1.0),),
    "NCCL Watchdog Timeouts": (("network/nccl_watchdog", 1.0),),
    "Silent Data Corruption": (("gpu/silent_data_corruption", 1.0),),
    "GPU Thermal Interface + Sensor": (("gpu/thermal_interface", 1.0),),
    "SSD": (("host/ssd", 1.0),),
    "Power Supply": (("host/power_supply", 1.0),),
    "Server Chassis": (("host/chassis", 1.0),),
    "IO Expansion Board": (("host/io_board", 1.0),),
    "Dependency": (("software/dependency", 1.0),),
    "CPU": (("host/mce", 1.0),),
    "System Memory": (("host/memory_ue", 1.0),),
}

#: Information modes added to every preset (never interrupt, never count):
#: mode -> incidents per node-day. Assumed, not from a source.
INFO_PER_NODE_DAY: dict[str, float] = {"gpu/precursor": 2e-4, "host/memory_ce": 1e-3}

#: RSC-1 node failure rate r_f, failures per node-day (Kokolis et al.; quoted as
#: 6.50 per 1000 node-days in kokolis2024_rsc_headline_stats.csv).
RSC1_FAILURES_PER_NODE_DAY = 6.50e-3

#: ``gpu/application_error`` in ``rsc1``, per GPU-hour: assumed, not from a source.
RSC1_APPLICATION_ERRORS_PER_GPU_H = 1e-5

_LLAMA3_DAYS = 54.0
_LLAMA3_RUN_NODES = 2048
_LLAMA3_SPARES = 64
_LLAMA3_PLANNED = 47
#: Nodes added to llama3-54d's fleet for background jobs (a quarter of the fleet).
_LLAMA3_BACKGROUND_NODES = 704


def _table5() -> dict[str, int]:
    from relkit.taxonomy import LLAMA3_TABLE5

    return dict(
        zip(
            LLAMA3_TABLE5["component"].to_list(),
            LLAMA3_TABLE5["interruption_count"].to_list(),
            strict=True,
        )
    )


def _per_unit(mode: str, per_node_h: float, gpus_per_node: int) -> float:
    unit = BEHAVIOUR[mode].unit
    return per_node_h / gpus_per_node if unit == "gpu" else per_node_h


def _info_processes() -> list[FailureProcess]:
    return [
        FailureProcess(mode, _per_unit(mode, per_day / 24.0, 8))
        for mode, per_day in INFO_PER_NODE_DAY.items()
    ]


def _llama3(gpus_per_node: int = 8) -> SimConfig:
    base = SimConfig(
        name="llama3-54d",
        nodes=_LLAMA3_RUN_NODES + _LLAMA3_SPARES,
        gpus_per_node=gpus_per_node,
        gpu_model="H100",
        days=_LLAMA3_DAYS,
        run_nodes=_LLAMA3_RUN_NODES,
        spare_nodes=_LLAMA3_SPARES,
        planned_per_day=_LLAMA3_PLANNED / _LLAMA3_DAYS,
    )
    counts = _table5()
    horizon = _LLAMA3_DAYS * 24.0
    # the run holds its nodes except between attempts: requeue after each
    # unexpected interruption, the planned downtime after each planned one
    gap_h = sum(counts.values()) * base.requeue_h
    gap_h += _LLAMA3_PLANNED * base.planned_downtime_h
    held_frac = 1.0 - gap_h / horizon
    exposure = _LLAMA3_RUN_NODES * horizon * held_frac
    processes = []
    for row, n in counts.items():
        for mode, share in LLAMA3_MODE_WEIGHTS[row]:
            per_node_h = n * share / exposure
            processes.append(
                FailureProcess(mode, _per_unit(mode, per_node_h, gpus_per_node))
            )
    processes += _info_processes()
    return base.replace(processes=tuple(processes))


def _rsc1(gpus_per_node: int = 8) -> SimConfig:
    weights: dict[str, float] = {}
    for row, n in _table5().items():
        for mode, share in LLAMA3_MODE_WEIGHTS[row]:
            # A100 drivers print SRAM and HBM uncorrectable errors alike (Xid 48)
            key = "gpu/hbm_uncorrectable" if mode == "gpu/sram_uncorrectable" else mode
            weights[key] = weights.get(key, 0.0) + n * share
    counted = sum(
        w
        for m, w in weights.items()
        if BEHAVIOUR[m].counts_as_failure and BEHAVIOUR[m].interrupts
    )
    per_node_h = RSC1_FAILURES_PER_NODE_DAY / 24.0
    processes = [
        FailureProcess(mode, _per_unit(mode, per_node_h * w / counted, gpus_per_node))
        for mode, w in weights.items()
    ]
    processes.append(
        FailureProcess("gpu/application_error", RSC1_APPLICATION_ERRORS_PER_GPU_H)
    )
    processes += _info_processes()
    return SimConfig(
        name="rsc1",
        nodes=2000,
        gpus_per_node=gpus_per_node,
        gpu_model="A100",
        days=30.0,
        run_nodes=128,
        spare_nodes=8,
        processes=tuple(processes),
        checkpoint_interval_h=1.0,
        checkpoint_cost_h=1.0 / 60.0,
        restart_h=10.0 / 60.0,
        requeue_h=2.0 / 60.0,
        planned_per_day=0.0,
        background_jobs=240_000,
        lemon_nodes=10,
        lemon_multiplier=20.0,
        batches=(("2021-q3", 0.6, 1.0), ("2022-q1", 0.4, 1.5)),
        noise_lines_per_node_day=24.0,
        start=SimConfig().start.replace(year=2023, month=5, day=1),
    ).validated()


def _template(base: SimConfig, *, background: bool) -> SimConfig:
    """Return the fleet whose shares a resized preset keeps.

    A preset without a background partition (``llama3-54d``) gets one of a
    quarter of the fleet when background jobs are asked for, so the run keeps
    its size on the default fleet and its share on any other.
    """
    if background and base.batch_nodes < 1 and base.run_nodes:
        return base.replace(nodes=base.nodes + _LLAMA3_BACKGROUND_NODES)
    return base


def _sizes(
    tpl: SimConfig, *, nodes: int | None, run_nodes: int | None
) -> tuple[int, int, int]:
    """Return (nodes, run_nodes, spare_nodes) of a resized preset."""
    spare_per_run = tpl.spare_nodes / tpl.run_nodes if tpl.run_nodes else 0.0
    if run_nodes is not None:
        spare = math.ceil(run_nodes * spare_per_run) if run_nodes else 0
        if nodes is None:
            partition = tpl.run_nodes + tpl.spare_nodes
            scale = tpl.nodes / partition if partition else 1.0
            nodes = max(2, math.ceil((run_nodes + spare) * scale))
        return nodes, run_nodes, spare
    if nodes is None:
        return tpl.nodes, tpl.run_nodes, tpl.spare_nodes
    if not tpl.run_nodes:
        return nodes, 0, 0
    spare = max(1, math.ceil(nodes * tpl.spare_nodes / tpl.nodes))
    run = max(1, math.floor(nodes * tpl.run_nodes / tpl.nodes))
    return nodes, max(0, min(nodes - spare, run)), spare


def _check_nodes(value: object, flag: str, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        name = flag.removeprefix("--").replace("-", "_")
        msg = f"{name} ({flag}) must be a whole number >= {low}; got {value!r}."
        raise InvalidParameterError(msg)


def simulation_preset(
    name: str,
    *,
    nodes: int | None = None,
    days: float | None = None,
    run_nodes: int | None = None,
    background_jobs: int | None = None,
    weibull_shapes: Mapping[str, float] | None = None,
    **changes: Any,  # noqa: ANN401
) -> SimConfig:
    r"""Return a named simulation preset, optionally resized.

    Parameters
    ----------
    name : {"llama3-54d", "rsc1"}
        The preset (see Notes).
    nodes : int, optional
        Fleet size, >= 2. Unless ``run_nodes`` is given, the run and its spares
        keep the preset's share of the fleet (the run at least one node),
        lemon nodes keep theirs (rounded, possibly 0), and background jobs
        scale with the background nodes.
    days : float, optional
        Simulated span in days; background jobs scale with it.
    run_nodes : int, optional
        Nodes of the training run (0 for none). Its spares keep the preset's
        ratio to the run (1 per 32 run nodes in ``llama3-54d``, 1 per 16 in
        ``rsc1``, rounded up); without ``nodes`` the fleet keeps the preset's
        ratio to the run's partition.
    background_jobs : int, optional
        Background jobs submitted over the span (overrides the scaling). On
        ``llama3-54d``, whose fleet is all the run's, asking for background
        jobs adds a background partition of a quarter of the fleet: 704 more
        nodes on the default fleet (the run keeps its 2,048), or a quarter of
        ``nodes``.
    weibull_shapes : mapping of str to float, optional
        Weibull shape β per failure mode of the preset (``--weibull-shape
        MODE=BETA``); other modes stay exponential (β = 1).
    **changes : Any
        Any other :class:`SimConfig` field, e.g. ``checkpoint_interval_h=1.0``.

    Returns
    -------
    SimConfig
        The validated configuration.

    Raises
    ------
    InvalidParameterError
        If ``name`` is unknown, a value is out of range (the message names the
        command-line flag, or says which preset value it is), background jobs
        are asked for but no node is left outside the run's partition (the
        message gives a ``--nodes`` that leaves one), or ``weibull_shapes``
        names a mode the preset has no process for.

    Notes
    -----
    Failure rates are per unit-hour and do not change with the size: a larger
    fleet or a longer span sees proportionally more failures.

    ``llama3-54d`` turns each Table 5 row count :math:`c` into a rate
    :math:`c / (2048 \cdot 1296\,\mathrm{h} \cdot f)` per node-hour, where
    :math:`f` is the share of time the run holds its nodes (it releases them
    between attempts), so the expected interruptions of the run equal the
    table's counts (419 unexpected) and 47 planned ones arrive as a Poisson
    process.

    ``rsc1`` gives every mode that counts as a failure and interrupts a job
    (hardware, network and the software rows of Table 5, in Table 5's
    proportions; SRAM errors are folded into ``gpu/hbm_uncorrectable``, as A100
    logs print them) a share of :math:`r_f = 6.50` failures per 1000
    node-days, the RSC-1 node failure rate of Kokolis et al., so their sum is
    :math:`r_f` (:meth:`SimConfig.failures_per_node_day`). Kokolis et al. count
    failures per node-day of jobs, so the job-dependent modes (NCCL, software,
    silent data corruption), which strike only while a job runs on the node,
    are included at their rate per allocated node-day. User-code errors
    (``gpu/application_error``, 1e-5 per GPU-hour, assumed) and the
    information modes come on top and are not node failures.

    Every value and its source (or the words "assumed, not from a source") is
    listed in this module's docstring (:mod:`relkit.simulate._presets`).

    References
    ----------
    .. [1] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024), §3.3.4, Table 5.
       doi:10.48550/arXiv.2407.21783
    .. [2] A. Kokolis et al., "Revisiting Reliability in Large-Scale Machine
       Learning Research Clusters", HPCA 2025, arXiv:2410.21680.
       doi:10.1109/HPCA61900.2025.00096

    Examples
    --------
    >>> cfg = simulation_preset("llama3-54d")
    >>> cfg.nodes, cfg.run_nodes, cfg.days
    (2112, 2048, 54.0)
    >>> simulation_preset("llama3-54d", nodes=64).run_nodes
    62
    >>> cfg = simulation_preset("llama3-54d", nodes=264, background_jobs=5)
    >>> cfg.run_nodes, cfg.spare_nodes, cfg.batch_nodes
    (192, 6, 66)
    >>> round(simulation_preset("rsc1").failures_per_node_day() * 1000, 2)
    6.5
    >>> simulation_preset("nope")
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: unknown preset 'nope'; ...
    """
    if name == "llama3-54d":
        base = _llama3()
    elif name == "rsc1":
        base = _rsc1()
    else:
        msg = f"unknown preset {name!r}; choose one of {list(PRESETS)} (--preset)."
        raise InvalidParameterError(msg)
    if nodes is not None:
        _check_nodes(nodes, "--nodes", 2)
    if run_nodes is not None:
        _check_nodes(run_nodes, "--run-nodes", 0)
    if background_jobs is not None:
        _check_nodes(background_jobs, "--background-jobs", 0)
    wants_background = bool(background_jobs) or (
        background_jobs is None and base.background_jobs > 0
    )
    tpl = _template(base, background=bool(background_jobs))
    fields: dict[str, Any] = {}
    if nodes is not None or run_nodes is not None or tpl is not base:
        n, run, spare = _sizes(tpl, nodes=nodes, run_nodes=run_nodes)
        given_spare = "spare_nodes" in changes
        spare = changes.pop("spare_nodes", spare)  # a given spare count wins
        need = run + spare + (1 if background_jobs else 0)
        if run_nodes is not None and need > n:
            also = " and a node for the background jobs" if background_jobs else ""
            msg = (
                f"--run-nodes {run} and its {spare} spare node(s) ("
                + (
                    "spare_nodes as given"
                    if given_spare
                    else f"spare_nodes, a preset value: {tpl.spare_nodes} per "
                    f"{tpl.run_nodes} run nodes, rounded up"
                )
                + f"){also} do not fit in --nodes {n}; raise --nodes to at "
                f"least {need} or lower --run-nodes."
            )
            raise InvalidParameterError(msg)
        fields.update(nodes=n, run_nodes=run, spare_nodes=spare)
        if n != base.nodes and "lemon_nodes" not in changes:
            fields["lemon_nodes"] = round(n * base.lemon_nodes / base.nodes)
        if bool(background_jobs) and n - run - spare < 1:
            better = next(
                m
                for m in range(n + 1, 2 * n + 10)
                if (s := _sizes(tpl, nodes=m, run_nodes=run_nodes))[0] - s[1] - s[2]
                >= 1
            )
            keep = "" if run_nodes is None else f" --run-nodes {run_nodes}"
            msg = (
                f"--background-jobs {background_jobs} needs nodes outside the "
                f"training run's partition, but --nodes {n} leaves none (the run "
                f"holds {run} node(s) and {spare} spare(s)); use --nodes {better}"
                f"{keep} or more, or lower --run-nodes."
            )
            raise InvalidParameterError(msg)
    if days is not None:
        fields["days"] = days
    cfg = base.replace(**fields, **changes) if (fields or changes) else base
    if weibull_shapes:
        cfg = _with_shapes(cfg, weibull_shapes)
    if background_jobs is not None:
        cfg = cfg.replace(background_jobs=background_jobs)
    elif wants_background and base.batch_nodes > 0:
        scaled = base.background_jobs * max(cfg.batch_nodes, 0) * cfg.days
        cfg = cfg.replace(
            background_jobs=round(scaled / (base.batch_nodes * base.days))
        )
    return cfg


def _with_shapes(cfg: SimConfig, shapes: Mapping[str, float]) -> SimConfig:
    have = {p.failure_mode for p in cfg.processes}
    unknown = sorted(set(shapes) - have)
    if unknown:
        msg = (
            f"--weibull-shape names mode(s) {unknown} that preset {cfg.name!r} has "
            f"no failure process for; its modes are {sorted(have)}, e.g. "
            "--weibull-shape gpu/fallen_off_bus=0.7."
        )
        raise InvalidParameterError(msg)
    procs = tuple(
        FailureProcess(
            p.failure_mode,
            p.rate_per_unit_h,
            weibull_shape=shapes.get(p.failure_mode, p.weibull_shape),
            repair_h=p.repair_h,
        )
        for p in cfg.processes
    )
    return cfg.replace(processes=procs)
