"""The failure-mode taxonomy of GPU cluster logs, as data.

Every signal the kernel-log readers classify (NVIDIA Xid and NVSwitch SXid lines,
mlx5/InfiniBand link events, NCCL errors, host EDAC/MCE lines) carries one
``failure_mode`` of :data:`FAILURE_MODES`. The table says which component the mode
belongs to, its category (hardware / software / network / user / maintenance /
unknown / info), whether an incident of the mode counts as a failure for MTBF, and
the matching row of the Llama 3 interruption table (:data:`LLAMA3_TABLE5`), so that
incident counts can be printed in the paper's shape (:func:`table5_shape`).

The Xid meanings quoted in the descriptions are those of NVIDIA's Xid catalogue
("Xid Errors", https://docs.nvidia.com/deploy/xid-errors/).
"""

from typing import Any

import polars as pl

from relkit.errors import InvalidParameterError, SchemaError
from relkit.schema import require_columns

__all__ = [
    "CATEGORIES",
    "FAILURE_MODES",
    "LLAMA3_TABLE5",
    "MODE_SEVERITY",
    "NOT_IN_TABLE5",
    "SEVERITIES",
    "STATED_SEVERITY",
    "XID_MODES",
    "failure_mode_info",
    "mode_for_xid",
    "table5_shape",
]

#: The categories a failure mode may have.
CATEGORIES = (
    "hardware",
    "software",
    "network",
    "user",
    "maintenance",
    "unknown",
    "info",
)

#: Xid code -> failure mode, for every code the taxonomy names (NVIDIA Xid catalogue).
XID_MODES: dict[int, str] = {
    79: "gpu/fallen_off_bus",
    48: "gpu/hbm_uncorrectable",
    94: "gpu/hbm_uncorrectable",
    95: "gpu/hbm_uncorrectable",
    140: "gpu/hbm_uncorrectable",
    64: "gpu/hbm_uncorrectable",
    171: "gpu/hbm_uncorrectable",
    172: "gpu/sram_uncorrectable",
    119: "gpu/gsp_firmware",
    120: "gpu/gsp_firmware",
    62: "gpu/gsp_firmware",
    74: "gpu/nvlink",
    136: "gpu/nvlink",
    **dict.fromkeys(range(144, 151), "gpu/nvlink"),
    46: "gpu/hang",
    109: "gpu/hang",
    13: "gpu/application_error",
    31: "gpu/application_error",
    43: "gpu/application_error",
    45: "gpu/sympathetic",
    154: "gpu/sympathetic",
    63: "gpu/precursor",
    92: "gpu/precursor",
}

_UNKNOWN_XID = "gpu/unknown_xid"

# failure_mode, component, category, counts_as_failure, llama3_row, description
_ROWS: list[tuple[str, str, str, bool, str | None, str]] = [
    (
        "gpu/fallen_off_bus",
        "GPU",
        "hardware",
        True,
        "Faulty GPU",
        "Xid 79 'GPU has fallen off the bus': the GPU stopped answering on PCIe; "
        "also the 'GPU has fallen off the bus' lines without an Xid (one line, or "
        "'The NVIDIA GPU <pci>' ... 'fallen off the bus' over several lines) and "
        "GPUs missing at boot: 'RmInitAdapter failed!', 'rm_init_adapter failed', "
        "'GPU does not have the necessary power cables connected' and, for the "
        "whole host, 'None of the NVIDIA devices were initialized'.",
    ),
    (
        "gpu/hbm_uncorrectable",
        "GPU HBM",
        "hardware",
        True,
        "GPU HBM3 Memory",
        "Uncorrectable GPU DRAM (HBM) errors: Xid 48 double-bit ECC error, 94 "
        "contained ECC error, 95 uncontained ECC error, 140 unrecovered ECC error, "
        "64 ECC page retirement or row-remapper recording failure, 171 "
        "uncorrectable DRAM error.",
    ),
    (
        "gpu/sram_uncorrectable",
        "GPU SRAM",
        "hardware",
        True,
        "GPU SRAM Memory",
        "Xid 172 'Uncorrectable SRAM error' (on-chip SRAM, reported in addition "
        "to Xid 48).",
    ),
    (
        "gpu/gsp_firmware",
        "GPU System Processor",
        "hardware",
        True,
        "GPU System Processor",
        "GPU System Processor and firmware: Xid 119 GSP RPC timeout, 120 GSP "
        "error, 62 internal micro-controller halt.",
    ),
    (
        "gpu/nvlink",
        "NVLink",
        "hardware",
        True,
        "Faulty GPU",
        "NVLink errors: Xid 74 NVLink error, 136 link training failed, 144-150 "
        "NVLink5 unit errors (SAW, RLW, TLW, TREX, NVLPW_CTRL, NETIR, MSE).",
    ),
    (
        "gpu/hang",
        "GPU",
        "hardware",
        True,
        "Faulty GPU",
        "GPU hang: Xid 46 GPU stopped processing, 109 context switch timeout.",
    ),
    (
        "gpu/application_error",
        "application",
        "user",
        False,
        None,
        "Caused by the application, never counted as hardware: Xid 13 graphics "
        "engine exception, 31 GPU memory page fault, 43 GPU stopped processing "
        "(channel reset by the driver after a user fault).",
    ),
    (
        "gpu/sympathetic",
        "GPU",
        "info",
        False,
        None,
        "Follows another error: Xid 45 preemptive clean-up after a previous error "
        "(catalogue: 'Solo: RESTART_FM / Not Solo: IGNORE (follow other Xid)'), "
        "154 GPU recovery action changed. Folded into the root incident of the "
        "same GPU; alone it is an info incident.",
    ),
    (
        "gpu/precursor",
        "GPU HBM",
        "info",
        False,
        None,
        "Warnings usable as covariates: Xid 63 ECC page retirement or row "
        "remapping recording event, 92 high single-bit ECC error rate.",
    ),
    (
        "gpu/row_remap_failure",
        "GPU HBM",
        "hardware",
        True,
        "GPU HBM3 Memory",
        "nvidia-smi -q 'Remapping Failure Occurred: Yes': the GPU ran out of spare "
        "rows to remap a failing HBM row; the RMA signal.",
    ),
    (
        "gpu/counter_reset",
        "GPU",
        "info",
        False,
        None,
        "nvidia-smi -q volatile ECC counters dropped between snapshots: a GPU "
        "reset, reboot or driver reload, not a failure.",
    ),
    (
        _UNKNOWN_XID,
        "GPU",
        "unknown",
        True,
        None,
        "Any Xid code the taxonomy does not name; kept, never dropped.",
    ),
    (
        "nvswitch/sxid",
        "NVSwitch",
        "hardware",
        True,
        "Network Switch/Cable",
        "NVSwitch SXid lines (never read as Xid). Counts as a failure only when "
        "its severity is fatal (relkit.incidents applies this per incident).",
    ),
    (
        "network/link_down",
        "NIC port",
        "network",
        True,
        "Network Switch/Cable",
        "mlx5 / InfiniBand / RoCE 'Link down' of one port (host, PCI, netdev); "
        "down/up flaps of one port form one incident.",
    ),
    (
        "network/link_up",
        "NIC port",
        "info",
        False,
        None,
        "'Link up': the recovery marker of a link-down incident.",
    ),
    (
        "network/cable_module",
        "cable/transceiver",
        "network",
        False,
        None,
        "mlx5_port_module_event cable or module errors (e.g. high temperature); "
        "context for link incidents.",
    ),
    (
        "network/pcie_power",
        "NIC",
        "info",
        False,
        None,
        "mlx5_pcie_event 'insufficient power on the PCIe slot': a warning.",
    ),
    (
        "network/nccl_error",
        "NIC",
        "network",
        True,
        "NIC",
        "NCCL 'Got completion ... status 12' (transport retry count exceeded) "
        "network errors.",
    ),
    (
        "network/nccl_watchdog",
        "NCCL",
        "unknown",
        True,
        "NCCL Watchdog Timeouts",
        "NCCL collective watchdog timeout; the cause is unknown.",
    ),
    (
        "host/memory_ce",
        "host memory",
        "info",
        False,
        None,
        "EDAC corrected memory errors, with the count the line reports.",
    ),
    (
        "host/memory_ue",
        "host memory",
        "hardware",
        True,
        "System Memory",
        "EDAC uncorrected or machine-check uncorrected memory errors.",
    ),
    (
        "host/mce",
        "CPU",
        "hardware",
        True,
        "CPU",
        "Other machine-check exceptions (CPU).",
    ),
]

#: The taxonomy: one row per failure mode (the store's ``failure_modes`` table).
FAILURE_MODES: pl.DataFrame = pl.DataFrame(
    _ROWS,
    schema={
        "failure_mode": pl.String,
        "component": pl.String,
        "category": pl.String,
        "counts_as_failure": pl.Boolean,
        "llama3_row": pl.String,
        "description": pl.String,
    },
    orient="row",
)

#: The severity vocabulary of events, lowest first: ``info`` (a state change or
#: notice, no fault), ``warning`` (a fault that was corrected or is a precursor),
#: ``error`` (a fault; the default when a line states no severity), ``critical``
#: (the unit needs replacement, e.g. nvidia-smi's row-remapping failure) and
#: ``fatal`` (the line states ``Fatal``: the unit stopped until reset).
SEVERITIES = ("info", "warning", "error", "critical", "fatal")

#: Severity of a failure mode's events when the line states none; every mode of
#: :data:`FAILURE_MODES` has one, from :data:`SEVERITIES`.
MODE_SEVERITY: dict[str, str] = {
    "gpu/fallen_off_bus": "error",
    "gpu/hbm_uncorrectable": "error",
    "gpu/sram_uncorrectable": "error",
    "gpu/gsp_firmware": "error",
    "gpu/nvlink": "error",
    "gpu/hang": "error",
    "gpu/application_error": "error",
    "gpu/sympathetic": "info",
    "gpu/precursor": "warning",
    "gpu/row_remap_failure": "critical",
    "gpu/counter_reset": "info",
    _UNKNOWN_XID: "error",
    "nvswitch/sxid": "error",
    "network/link_down": "error",
    "network/link_up": "info",
    "network/cable_module": "warning",
    "network/pcie_power": "warning",
    "network/nccl_error": "error",
    "network/nccl_watchdog": "error",
    "host/memory_ce": "warning",
    "host/memory_ue": "error",
    "host/mce": "error",
}

#: Severity words printed inside NVIDIA Xid / SXid lines (lower case, without
#: ``-``) -> :data:`SEVERITIES`. NVIDIA marks NVSwitch and NVLink errors
#: ``Fatal`` or ``Non-fatal``; a non-fatal error is still an ``error``.
STATED_SEVERITY: dict[str, str] = {"fatal": "fatal", "nonfatal": "error"}

_TABLE5 = [
    ("Faulty GPU", "GPU", 148, 0.301),
    ("GPU HBM3 Memory", "GPU", 72, 0.172),
    ("Software Bug", "Dependency", 54, 0.129),
    ("Network Switch/Cable", "Network", 35, 0.084),
    ("Host Maintenance", "Unplanned Maintenance", 32, 0.076),
    ("GPU SRAM Memory", "GPU", 19, 0.045),
    ("GPU System Processor", "GPU", 17, 0.041),
    ("NIC", "Host", 7, 0.017),
    ("NCCL Watchdog Timeouts", "Unknown", 7, 0.017),
    ("Silent Data Corruption", "GPU", 6, 0.014),
    ("GPU Thermal Interface + Sensor", "GPU", 6, 0.014),
    ("SSD", "Host", 3, 0.007),
    ("Power Supply", "Host", 3, 0.007),
    ("Server Chassis", "Host", 2, 0.005),
    ("IO Expansion Board", "Host", 2, 0.005),
    ("Dependency", "Dependency", 2, 0.005),
    ("CPU", "Host", 2, 0.005),
    ("System Memory", "Host", 2, 0.005),
]

#: Llama 3 405B pre-training, Table 5: root causes of the 419 unexpected
#: interruptions in 54 days on 16,384 H100 GPUs (Llama Team, "The Llama 3 Herd of
#: Models", arXiv:2407.21783, 2024, Table 5), typed in row by row.
#: ``frac_as_printed`` is the printed percentage / 100, kept as printed: the
#: printed values sum to 0.949 and Faulty GPU prints 30.1 % where 148/419 = 35.3 %.
LLAMA3_TABLE5: pl.DataFrame = pl.DataFrame(
    _TABLE5,
    schema={
        "component": pl.String,
        "category": pl.String,
        "interruption_count": pl.Int64,
        "frac_as_printed": pl.Float64,
    },
    orient="row",
)

#: The ``component`` of :func:`table5_shape`'s last row: failures of modes with no
#: Table 5 row (e.g. ``gpu/unknown_xid``).
NOT_IN_TABLE5 = "(no Table 5 row)"


def _known_modes() -> list[str]:
    return FAILURE_MODES["failure_mode"].to_list()


def mode_for_xid(code: int | str) -> str:
    """Return the failure mode of an NVIDIA Xid code.

    Parameters
    ----------
    code : int or str
        The Xid code, as a number or as decimal digits (the store's ``code``
        column holds text such as ``"79"``).

    Returns
    -------
    str
        The mode of :data:`XID_MODES`; ``"gpu/unknown_xid"`` for any other code
        (kept, never dropped).

    Raises
    ------
    InvalidParameterError
        If ``code`` is not a whole number >= 0 (e.g. ``"sxid:20009"``; NVSwitch
        SXid codes are never Xid codes).

    References
    ----------
    .. [1] NVIDIA, "Xid Errors" (Xid catalogue),
       https://docs.nvidia.com/deploy/xid-errors/

    Examples
    --------
    >>> mode_for_xid(79), mode_for_xid("45"), mode_for_xid(147), mode_for_xid(999)
    ('gpu/fallen_off_bus', 'gpu/sympathetic', 'gpu/nvlink', 'gpu/unknown_xid')
    >>> mode_for_xid("sxid:20009")
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: an Xid code is a whole number >= 0, found ...
    """
    value: int | None = None
    if isinstance(code, bool):
        value = None
    elif isinstance(code, int):
        value = code
    elif isinstance(code, str) and code.strip().isdigit():
        value = int(code.strip())
    if value is None or value < 0:
        msg = (
            f"an Xid code is a whole number >= 0, found {code!r}. NVSwitch codes "
            "('sxid:...') have mode 'nvswitch/sxid'; pass only the number, "
            "e.g. mode_for_xid(79)."
        )
        raise InvalidParameterError(msg)
    return XID_MODES.get(value, _UNKNOWN_XID)


def failure_mode_info(mode: str) -> dict[str, Any]:
    """Return the taxonomy row of one failure mode.

    Parameters
    ----------
    mode : str
        A failure mode of :data:`FAILURE_MODES`, e.g. ``"gpu/fallen_off_bus"``.

    Returns
    -------
    dict
        Keys ``failure_mode``, ``component``, ``category``, ``counts_as_failure``
        (bool), ``llama3_row`` (str or None), ``description``, and ``xid_codes``
        (sorted list of the Xid codes of the mode; empty for non-Xid modes).

    Raises
    ------
    SchemaError
        If ``mode`` is not in the taxonomy; the message lists the known modes.

    Examples
    --------
    >>> info = failure_mode_info("gpu/application_error")
    >>> info["category"], info["counts_as_failure"], info["xid_codes"]
    ('user', False, [13, 31, 43])
    >>> failure_mode_info("gpu/xid79")
    Traceback (most recent call last):
    ...
    relkit.errors.SchemaError: unknown failure mode 'gpu/xid79'; ...
    """
    rows = FAILURE_MODES.filter(pl.col("failure_mode") == mode)
    if rows.height == 0:
        msg = (
            f"unknown failure mode {mode!r}; the taxonomy knows "
            f"{_known_modes()}. Map an Xid code with mode_for_xid(code)."
        )
        raise SchemaError(msg)
    info = rows.row(0, named=True)
    info["xid_codes"] = sorted(c for c, m in XID_MODES.items() if m == mode)
    return info


def table5_shape(incidents: pl.DataFrame) -> pl.DataFrame:
    """Count failure incidents in the rows of Llama 3 Table 5.

    Parameters
    ----------
    incidents : pl.DataFrame
        Incidents from :func:`relkit.incidents.build_incidents`: columns
        ``failure_mode`` (str) and ``counts_as_failure`` (bool). Only rows with
        ``counts_as_failure`` are counted.

    Returns
    -------
    pl.DataFrame
        19 rows: the 18 rows of :data:`LLAMA3_TABLE5` in the paper's order, then
        :data:`NOT_IN_TABLE5` (failures of modes without a Table 5 row, e.g.
        ``gpu/unknown_xid``). Columns ``component``, ``category`` (Table 5's
        category; null on the last row), ``n_interruptions`` (Int64, 0 where
        none) and ``frac`` (``n_interruptions`` / all counted incidents, in
        [0, 1]; null when there are none).

    Raises
    ------
    SchemaError
        If a column is missing, or an incident's ``failure_mode`` is not in the
        taxonomy.

    Notes
    -----
    ``frac`` is recomputed as count / total, never copied from the paper's printed
    percentages (which do not sum to 100 %).

    References
    ----------
    .. [1] Llama Team, AI @ Meta, "The Llama 3 Herd of Models", arXiv:2407.21783
       (2024), Table 5.

    Examples
    --------
    >>> import polars as pl
    >>> inc = pl.DataFrame(
    ...     {
    ...         "failure_mode": ["gpu/fallen_off_bus", "gpu/application_error"],
    ...         "counts_as_failure": [True, False],
    ...     }
    ... )
    >>> table5_shape(inc).filter(pl.col("n_interruptions") > 0)
    shape: (1, 4)
    ┌────────────┬──────────┬─────────────────┬──────┐
    │ component  ┆ category ┆ n_interruptions ┆ frac │
    │ ---        ┆ ---      ┆ ---             ┆ ---  │
    │ str        ┆ str      ┆ i64             ┆ f64  │
    ╞════════════╪══════════╪═════════════════╪══════╡
    │ Faulty GPU ┆ GPU      ┆ 1               ┆ 1.0  │
    └────────────┴──────────┴─────────────────┴──────┘
    """
    require_columns(
        incidents, ["failure_mode", "counts_as_failure"], where="table5_shape"
    )
    counted = incidents.filter(pl.col("counts_as_failure").fill_null(value=False))
    unknown = (
        counted.filter(~pl.col("failure_mode").is_in(_known_modes()))["failure_mode"]
        .unique()
        .sort()
        .to_list()
    )
    if unknown:
        msg = (
            f"table5_shape: failure mode(s) {unknown[:5]} are not in the taxonomy "
            f"{_known_modes()}; build the incidents from kernel-log events "
            "(relkit.incidents.build_incidents)."
        )
        raise SchemaError(msg)
    rows = counted.join(
        FAILURE_MODES.select("failure_mode", "llama3_row"), on="failure_mode"
    ).select(component=pl.col("llama3_row").fill_null(NOT_IN_TABLE5))
    counts = rows.group_by("component").agg(n_interruptions=pl.len().cast(pl.Int64))
    shape = pl.concat(
        [
            LLAMA3_TABLE5.select("component", "category"),
            pl.DataFrame(
                {"component": [NOT_IN_TABLE5], "category": [None]},
                schema={"component": pl.String, "category": pl.String},
            ),
        ]
    )
    total = counted.height
    return shape.join(counts, on="component", how="left", maintain_order="left").select(
        "component",
        "category",
        pl.col("n_interruptions").fill_null(0),
        frac=(
            pl.col("n_interruptions").fill_null(0) / total
            if total
            else pl.lit(None, dtype=pl.Float64)
        ),
    )
