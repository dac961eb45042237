"""How each simulated failure mode behaves: unit, visibility, effect on jobs (data).

Every mode of :data:`relkit.taxonomy.FAILURE_MODES` that a kernel log can show
has a row here, plus the Llama 3 Table 5 root causes that leave no kernel-log
line (software bugs, power supplies, SSDs, ...): those interrupt jobs and are
recorded in the ground truth, but no log line names them, as on a real cluster.
"""

from dataclasses import dataclass
from typing import Literal

Unit = Literal["gpu", "node"]


@dataclass(frozen=True)
class ModeBehaviour:
    """What a failure of one mode does (static data, one row per mode).

    Parameters
    ----------
    failure_mode : str
        Taxonomy mode (``gpu/fallen_off_bus``) or a simulator-only cause of a
        Llama 3 Table 5 row that leaves no kernel-log line (``host/ssd``).
    unit : {"gpu", "node"}
        The unit whose process fails: one GPU, or the node (its NIC port,
        NVSwitch, memory controller or CPU is then drawn as the device).
    logged : bool
        Written to the kernel logs (and so recovered by the kernel ingest).
    job_dependent : bool
        Seen only while a job runs on the unit (NCCL errors, software bugs,
        application Xids): realised only where the unit is allocated.
    interrupts : bool
        Ends the job attempt holding the unit.
    drains : bool
        The node is drained until repaired (and reboots then).
    job_state : str
        ``sacct`` state of the interrupted attempt (``NODE_FAIL``, ``FAILED``).
    exit_code : str
        ``sacct`` ExitCode of that attempt (``code:signal``).
    repair_h : float
        Mean repair time in hours (exponential), when ``drains``. The values
        (4 h for a GPU reset or GSP fault up to 72 h for a chassis or silent
        data corruption hunt) are assumed, not from a source: neither Llama 3
        nor Kokolis et al. publish repair times by cause.
    counts_as_failure : bool
        Counts for MTBF (the taxonomy's flag; True for the simulator-only
        Table 5 causes).
    """

    failure_mode: str
    unit: Unit
    logged: bool
    job_dependent: bool
    interrupts: bool
    drains: bool
    job_state: str
    exit_code: str
    repair_h: float
    counts_as_failure: bool


def _m(
    mode: str,
    unit: Unit,
    *,
    logged: bool = True,
    job: bool = False,
    interrupts: bool = True,
    drains: bool = True,
    state: str = "NODE_FAIL",
    exit_code: str = "0:0",
    repair_h: float = 24.0,
    counts: bool = True,
) -> ModeBehaviour:
    return ModeBehaviour(
        mode, unit, logged, job, interrupts, drains, state, exit_code, repair_h, counts
    )


_ROWS = [
    # logged hardware modes (kernel Xid / SXid / mlx5 / EDAC / MCE lines)
    _m("gpu/fallen_off_bus", "gpu", state="NODE_FAIL", repair_h=48.0),
    _m("gpu/hbm_uncorrectable", "gpu", state="FAILED", exit_code="1:0", repair_h=24.0),
    _m("gpu/sram_uncorrectable", "gpu", state="FAILED", exit_code="1:0"),
    _m("gpu/gsp_firmware", "gpu", state="FAILED", exit_code="1:0", repair_h=4.0),
    _m("gpu/nvlink", "gpu", state="FAILED", exit_code="1:0", repair_h=12.0),
    _m("gpu/hang", "gpu", state="FAILED", exit_code="0:9", repair_h=4.0),
    # an Xid code outside NVIDIA's catalogue: kept, not counted (issue 10 §1)
    _m(
        "gpu/unknown_xid",
        "gpu",
        state="FAILED",
        exit_code="1:0",
        repair_h=8.0,
        counts=False,
    ),
    _m("nvswitch/sxid", "node", state="NODE_FAIL", repair_h=24.0),
    _m("network/link_down", "node", state="NODE_FAIL", repair_h=6.0),
    _m("host/memory_ue", "node", state="NODE_FAIL", repair_h=48.0),
    _m("host/mce", "node", state="NODE_FAIL", repair_h=48.0),
    # logged, visible only while a job runs (printed by NCCL / the application)
    _m("network/nccl_error", "node", job=True, state="FAILED", exit_code="1:0"),
    _m(
        "network/nccl_watchdog",
        "node",
        job=True,
        drains=False,
        state="FAILED",
        exit_code="0:6",
    ),
    _m(
        "gpu/application_error",
        "gpu",
        job=True,
        drains=False,
        state="FAILED",
        exit_code="1:0",
        counts=False,
    ),
    # logged information: never interrupts, never counts
    _m("gpu/precursor", "gpu", interrupts=False, drains=False, counts=False),
    _m("host/memory_ce", "node", interrupts=False, drains=False, counts=False),
    # Llama 3 Table 5 causes that no kernel-log line names
    _m(
        "software/bug",
        "node",
        logged=False,
        job=True,
        drains=False,
        state="FAILED",
        exit_code="1:0",
    ),
    _m(
        "software/dependency",
        "node",
        logged=False,
        job=True,
        drains=False,
        state="FAILED",
        exit_code="1:0",
    ),
    _m("host/unplanned_maintenance", "node", logged=False, repair_h=8.0),
    _m(
        "gpu/silent_data_corruption",
        "gpu",
        logged=False,
        job=True,
        state="FAILED",
        exit_code="1:0",
        repair_h=72.0,
    ),
    _m(
        "gpu/thermal_interface",
        "gpu",
        logged=False,
        state="FAILED",
        exit_code="1:0",
        repair_h=48.0,
    ),
    _m("host/ssd", "node", logged=False, repair_h=24.0),
    _m("host/power_supply", "node", logged=False, repair_h=24.0),
    _m("host/chassis", "node", logged=False, repair_h=72.0),
    _m("host/io_board", "node", logged=False, repair_h=48.0),
]

#: Failure mode -> behaviour.
BEHAVIOUR: dict[str, ModeBehaviour] = {row.failure_mode: row for row in _ROWS}

#: Simulator-only modes (not in the taxonomy) -> the Llama 3 Table 5 row they stand
#: for; taxonomy modes take their row from relkit.taxonomy.
SIM_ONLY_TABLE5: dict[str, str] = {
    "software/bug": "Software Bug",
    "software/dependency": "Dependency",
    "host/unplanned_maintenance": "Host Maintenance",
    "gpu/silent_data_corruption": "Silent Data Corruption",
    "gpu/thermal_interface": "GPU Thermal Interface + Sensor",
    "host/ssd": "SSD",
    "host/power_supply": "Power Supply",
    "host/chassis": "Server Chassis",
    "host/io_board": "IO Expansion Board",
}


def table5_row(mode: str) -> str | None:
    """Return the Llama 3 Table 5 row of a mode (taxonomy or simulator-only)."""
    if mode in SIM_ONLY_TABLE5:
        return SIM_ONLY_TABLE5[mode]
    from relkit.taxonomy import FAILURE_MODES

    rows = FAILURE_MODES.filter(FAILURE_MODES["failure_mode"] == mode)
    return None if rows.height == 0 else rows["llama3_row"][0]


def behaviour(mode: str) -> ModeBehaviour:
    """Return the behaviour of a mode, or raise with the known modes."""
    from relkit.errors import InvalidParameterError

    if mode not in BEHAVIOUR:
        msg = (
            f"the simulator has no failure process for mode {mode!r}; known modes: "
            f"{sorted(BEHAVIOUR)}."
        )
        raise InvalidParameterError(msg)
    return BEHAVIOUR[mode]
