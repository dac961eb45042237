"""Named simulation presets calibrated on published reliability numbers.

``llama3-54d``
    Llama 3 405B pre-training (Llama Team, arXiv:2407.21783, §3.3.4, Table 5):
    16,384 H100 GPUs (2,048 nodes) training for 54 days, 419 unexpected
    interruptions in the 18 root-cause rows of Table 5 plus 47 planned ones.
    Each row's count becomes a failure rate per node-hour of the run's nodes,
    divided over the row's failure modes; the spare nodes fail at the same
    rates.
``rsc1``
    Meta's RSC-1 research cluster (Kokolis et al., arXiv:2410.21680): 2,000
    nodes of 8 A100 GPUs, node failure rate 6.50 per 1000 node-days, a
    1,024-GPU training run and a background of research jobs whose sizes follow
    the paper's shape (most jobs under one node, most GPU time in jobs of 256
    GPUs or more). The paper does not split r_f by cause here, so the hardware
    mix is borrowed from Table 5's hardware rows.
"""

import math
from typing import Any

from relkit.errors import InvalidParameterError
from relkit.simulate._config import FailureProcess, SimConfig
from relkit.simulate._modes import BEHAVIOUR

__all__ = ["LLAMA3_MODE_WEIGHTS", "PRESETS", "simulation_preset"]

#: Preset names.
PRESETS: tuple[str, ...] = ("llama3-54d", "rsc1")

#: Table 5 row -> (failure mode, share of the row). Rows with several modes of the
#: taxonomy are split by these shares (a modelling choice: the paper does not say).
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
#: mode -> incidents per node-day.
_INFO_PER_NODE_DAY = {"gpu/precursor": 2e-4, "host/memory_ce": 1e-3}

_LLAMA3_DAYS = 54.0
_LLAMA3_RUN_NODES = 2048
_LLAMA3_PLANNED = 47


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


def _llama3(gpus_per_node: int = 8) -> SimConfig:
    base = SimConfig(
        name="llama3-54d",
        nodes=_LLAMA3_RUN_NODES + 64,
        gpus_per_node=gpus_per_node,
        days=_LLAMA3_DAYS,
        run_nodes=_LLAMA3_RUN_NODES,
        spare_nodes=64,
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
    for mode, per_day in _INFO_PER_NODE_DAY.items():
        processes.append(FailureProcess(mode, _per_unit(mode, per_day / 24.0, 8)))
    return base.replace(processes=tuple(processes))


#: RSC-1 node failure rate, failures per node-day (Kokolis et al.).
RSC1_FAILURES_PER_NODE_DAY = 6.50e-3


def _rsc1(gpus_per_node: int = 8) -> SimConfig:
    counts = _table5()
    calendar: dict[str, float] = {}
    job: dict[str, float] = {}
    for row, n in counts.items():
        for mode, share in LLAMA3_MODE_WEIGHTS[row]:
            b = BEHAVIOUR[mode]
            (job if b.job_dependent else calendar)[mode] = n * share
    total = sum(calendar.values())
    per_node_h = RSC1_FAILURES_PER_NODE_DAY / 24.0
    processes = [
        FailureProcess(mode, _per_unit(mode, per_node_h * n / total, gpus_per_node))
        for mode, n in calendar.items()
    ]
    processes += [
        FailureProcess(mode, _per_unit(mode, per_node_h * n / total, gpus_per_node))
        for mode, n in job.items()
    ]
    processes.append(FailureProcess("gpu/application_error", 1e-5))
    for mode, per_day in _INFO_PER_NODE_DAY.items():
        processes.append(FailureProcess(mode, _per_unit(mode, per_day / 24.0, 8)))
    return SimConfig(
        name="rsc1",
        nodes=2000,
        gpus_per_node=gpus_per_node,
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


def simulation_preset(
    name: str,
    *,
    nodes: int | None = None,
    days: float | None = None,
    run_nodes: int | None = None,
    background_jobs: int | None = None,
    **changes: Any,  # noqa: ANN401
) -> SimConfig:
    r"""Return a named simulation preset, optionally resized.

    Parameters
    ----------
    name : {"llama3-54d", "rsc1"}
        The preset (see Notes).
    nodes : int, optional
        Fleet size. The run's nodes and spares keep the preset's share of the
        fleet unless ``run_nodes`` is given; background jobs scale with the
        background nodes.
    days : float, optional
        Simulated span in days; background jobs scale with it.
    run_nodes : int, optional
        Nodes of the training run (0 for none).
    background_jobs : int, optional
        Background jobs submitted over the span (overrides the scaling).
    **changes : Any
        Any other :class:`SimConfig` field, e.g. ``checkpoint_interval_h=1.0``.

    Returns
    -------
    SimConfig
        The validated configuration.

    Raises
    ------
    InvalidParameterError
        If ``name`` is unknown or a value is out of range.

    Notes
    -----
    Failure rates are per unit-hour and do not change with the size: a larger
    fleet or a longer span sees proportionally more failures.

    ``llama3-54d`` turns each Table 5 row count :math:`c` into a rate
    :math:`c / (2048 \cdot 1296\,\mathrm{h} \cdot f)` per node-hour, where
    :math:`f` is the share of time the run holds its nodes (it releases them
    between attempts), so the expected interruptions of the run equal the
    table's counts (419 unexpected) and 47 planned ones arrive as a Poisson
    process. ``rsc1`` spreads 6.50 failures per 1000 node-days over the
    hardware modes in Table 5's proportions.

    References
    ----------
    .. [1] Llama Team, AI @ Meta, "The Llama 3 Herd of Models",
       arXiv:2407.21783 (2024), §3.3.4, Table 5.
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
    fields: dict[str, Any] = {}
    old_batch_node_days = max(base.batch_nodes, 0) * base.days
    if nodes is not None:
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 2:
            msg = f"nodes (--nodes) must be a whole number >= 2; got {nodes!r}."
            raise InvalidParameterError(msg)
        fields["nodes"] = nodes
        if run_nodes is None:
            share = base.run_nodes / base.nodes
            spare_share = base.spare_nodes / base.nodes
            spare = max(1, math.ceil(nodes * spare_share)) if base.run_nodes else 0
            fields["spare_nodes"] = spare
            fields["run_nodes"] = max(0, min(nodes - spare, math.floor(nodes * share)))
    if run_nodes is not None:
        fields["run_nodes"] = run_nodes
        if nodes is None:
            fields["nodes"] = max(base.nodes, run_nodes + base.spare_nodes)
    if days is not None:
        fields["days"] = days
    cfg = base.replace(**fields, **changes) if (fields or changes) else base
    if background_jobs is not None:
        cfg = cfg.replace(background_jobs=background_jobs)
    elif base.background_jobs and old_batch_node_days > 0:
        scaled = base.background_jobs * max(cfg.batch_nodes, 0) * cfg.days
        cfg = cfg.replace(background_jobs=round(scaled / old_batch_node_days))
    return cfg
