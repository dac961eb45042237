"""The failure-mode taxonomy of GPU cluster logs, as data.

Every signal the kernel-log readers classify (NVIDIA Xid and NVSwitch SXid lines,
mlx5/InfiniBand link events, NCCL errors, host EDAC/MCE lines) carries one
``failure_mode`` of :data:`FAILURE_MODES`. The table says which component the mode
belongs to, its category (hardware / software / network / user / maintenance /
unknown / info), whether an incident of the mode counts as a failure for MTBF, and
the matching row of the Llama 3 interruption table (:data:`LLAMA3_TABLE5`), so that
incident counts can be printed in the paper's shape (:func:`table5_shape`).

The Xid catalogue, whole
------------------------
Every code of NVIDIA's Xid catalogue for Ampere and newer GPUs ("Analyzing Xid
Errors with the Xid Catalog", :data:`XID_CATALOGUE_SOURCE`, spreadsheet
``Xid-Catalog.xlsx``) has a failure mode: the catalogue lists 172 codes (1-172),
109 of them in use and 63 marked "Unused" (deprecated, or Volta and older). The
catalogue's facts (code, mnemonic, short name, the two resolution buckets and
the A100/H100/B100/GB200 applicability) are kept as data in ``xid_catalogue.csv``
next to this module, read into :data:`XID_CATALOGUE`; the version relkit
transcribed is :data:`XID_CATALOGUE_VERSION` (the newest driver release the
catalogue names, R575 / CUDA 12.9, for Xid 143, 160 and 161).

The catalogue's *immediate* resolution bucket decides the category and whether
the code counts as a failure (:data:`XID_BUCKET_RULE`):

- ``IGNORE`` -> ``info``, not a failure (e.g. 43, 63, 92, 137);
- ``RESTART_APP`` -> ``user`` (the application), not a hardware failure
  (e.g. 13, 31, 68, 69);
- ``RESET_GPU``, ``RESTART_BM``, ``WORKFLOW_XID_48``, ``WORKFLOW_NVLINK_ERR``,
  ``WORKFLOW_NVLINK5_ERR``, ``CONTACT_SUPPORT``, ``CHECK_MECHANICALS`` ->
  ``hardware``, counted (e.g. 79, 48, 109, 74, 143, 147, 61, 54);
- ``WORKFLOW_XID_45``, ``XID_154`` and ``CHECK_UVM`` (Xid 159, whose
  investigatory bucket is ``SYMPATHETIC_REPORT_SOLO``; a reset only where UVM
  or vGPU is used) -> ``info``: sympathetic, folded into the root incident of
  the same GPU (:mod:`relkit.incidents`), not a failure;
- ``UPDATE_SWFW`` (78, vGPU start) and ``RESTART_VM`` (151, key rotation) ->
  ``software``, not a hardware failure: a driver/firmware or VM action fixes it.

Eleven codes (162-172) have no bucket in the catalogue; relkit decides them
(:data:`XID_NO_BUCKET_MODES`): 162-165 power-smoothing circuitry state and
lifetime -> ``info``; 166 and 170 (confidential-computing NVLink) ->
``software``; 168 (errors in the write-protected region, reduced memory) ->
``info`` precursor; 167 PCIe fatal timeout -> hardware, as the GPU lost on PCIe;
169 SEC2 micro-controller halt -> hardware, as 62; 171 and 172 (uncorrectable
DRAM / SRAM, "additional to Xid 48") -> hardware, as the Xid 48 they detail.

One code is taken out of its bucket's rule (:data:`XID_BUCKET_EXCEPTIONS`):
Xid 94, a contained uncorrectable memory error. Its bucket, ``RESTART_APP``,
says the application ends and the GPU keeps serving; but what failed is GPU
memory, and on A100/H100 an uncorrectable DRAM error often shows only as Xid 94
with the Xid 63 row remap beside it (IGNORE), so by the bucket alone the error
would count nowhere and the job it ended would be blamed on the user. It is
``gpu/hbm_uncorrectable``, counted, as Llama 3 counts GPU HBM3 errors; an Xid 48
or 95 near it on the same GPU folds with it into one incident.

Every mode's codes agree on category and counts-as-failure (a test holds it).
Whether a failure of a mode loses the node (drained or replaced, so an
in-memory checkpoint on it is gone) is :data:`LOSES_NODE`, by the rule of
:data:`LOSES_NODE_RULE` (counted hardware and network failures) with the
exceptions of :data:`LOSES_NODE_EXCEPTIONS`.
A code outside the catalogue (e.g. Xid 999) is ``gpu/unknown_xid``: kept,
category ``unknown``, not counted as a failure unless asked
(``relkit mtbf --count-unknown-xid``). The Xid meanings in the descriptions
are the catalogue's short names.
"""

import io
from importlib.resources import files
from typing import Any

import polars as pl

from relkit.errors import InvalidParameterError, SchemaError
from relkit.schema import require_columns

__all__ = [
    "ATTRIBUTED_STATES",
    "CATEGORIES",
    "FAILURE_MODES",
    "INFRA_CAUSES",
    "LAUNCH_STATES",
    "LLAMA3_TABLE5",
    "LOSES_NODE",
    "LOSES_NODE_EXCEPTIONS",
    "LOSES_NODE_RULE",
    "MODE_SEVERITY",
    "NOT_IN_TABLE5",
    "OPEN_STATES",
    "PLANNED_FLAGS",
    "SEVERITIES",
    "STATED_SEVERITY",
    "STATE_CAUSE",
    "STATE_PRIORITY",
    "UNKNOWN_XID_MODE",
    "XID_BUCKET_EXCEPTIONS",
    "XID_BUCKET_RULE",
    "XID_CATALOGUE",
    "XID_CATALOGUE_SOURCE",
    "XID_CATALOGUE_VERSION",
    "XID_MODES",
    "XID_NO_BUCKET_MODES",
    "failure_mode_info",
    "mode_for_xid",
    "table5_shape",
    "unknown_xid_note",
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

#: Where the Xid catalogue of :data:`XID_CATALOGUE` was read.
XID_CATALOGUE_SOURCE = (
    "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html "
    "(spreadsheet https://docs.nvidia.com/deploy/xid-errors/Xid-Catalog.xlsx)"
)

#: The catalogue version transcribed: its codes and the newest driver release it
#: names (Xid 143, 160, 161: "CUDA 12.9; GPU driver R575"; the page carries no
#: revision number of its own).
XID_CATALOGUE_VERSION = "Xid 1-172, GPU driver R575 / CUDA 12.9"

#: The catalogue's immediate resolution bucket -> (category, counts_as_failure).
XID_BUCKET_RULE: dict[str, tuple[str, bool]] = {
    "IGNORE": ("info", False),
    "RESTART_APP": ("user", False),
    "RESET_GPU": ("hardware", True),
    "RESTART_BM": ("hardware", True),
    "WORKFLOW_XID_48": ("hardware", True),
    "WORKFLOW_NVLINK_ERR": ("hardware", True),
    "WORKFLOW_NVLINK5_ERR": ("hardware", True),
    "CONTACT_SUPPORT": ("hardware", True),
    "CHECK_MECHANICALS": ("hardware", True),
    "WORKFLOW_XID_45": ("info", False),
    "XID_154": ("info", False),
    "CHECK_UVM": ("info", False),
    "UPDATE_SWFW": ("software", False),
    "RESTART_VM": ("software", False),
}

# the mode of a bucket's codes, unless _XID_COMPONENT names a closer one
_BUCKET_MODE = {
    "IGNORE": "gpu/informational",
    "RESTART_APP": "gpu/application_error",
    "RESET_GPU": "gpu/reset_required",
    "RESTART_BM": "gpu/fallen_off_bus",
    "WORKFLOW_XID_48": "gpu/hbm_uncorrectable",
    "WORKFLOW_NVLINK_ERR": "gpu/nvlink",
    "WORKFLOW_NVLINK5_ERR": "gpu/nvlink",
    "CONTACT_SUPPORT": "gpu/contact_support",
    "CHECK_MECHANICALS": "gpu/power_mechanical",
    "WORKFLOW_XID_45": "gpu/sympathetic",
    "XID_154": "gpu/sympathetic",
    "CHECK_UVM": "gpu/sympathetic",
    "UPDATE_SWFW": "gpu/driver_software",
    "RESTART_VM": "gpu/driver_software",
}

# codes whose component is known; each mode agrees with the code's bucket rule
_XID_COMPONENT = {
    **dict.fromkeys((46, 109, 158), "gpu/hang"),
    **dict.fromkeys((61, 62, 119, 120), "gpu/gsp_firmware"),
    **dict.fromkeys((64, 95, 140), "gpu/hbm_uncorrectable"),
    **dict.fromkeys((136, 155), "gpu/nvlink"),
    143: "gpu/fallen_off_bus",
    **dict.fromkeys((63, 92, 121, 157), "gpu/precursor"),
    94: "gpu/hbm_uncorrectable",  # XID_BUCKET_EXCEPTIONS
}

#: Codes whose mode is not their bucket's, with the reason. The bucket says
#: what to do next, not what failed; where the two part, the failure decides.
XID_BUCKET_EXCEPTIONS: dict[int, str] = {
    94: (
        "contained memory error: an uncorrectable ECC error the driver contained "
        "to the application using the memory. The immediate bucket is "
        "RESTART_APP (that application ends, the GPU keeps serving), but what "
        "failed is GPU memory and the job it ends is interrupted by hardware: "
        "gpu/hbm_uncorrectable, counted, Llama 3 Table 5 'GPU HBM3 Memory'. An "
        "Xid 48 or 95 of the same GPU within the window is the same mode and "
        "folds into one incident, so one error is one failure."
    ),
}

#: Codes the catalogue gives no resolution bucket -> the mode relkit decides.
XID_NO_BUCKET_MODES: dict[int, str] = {
    **dict.fromkeys((162, 163, 164, 165), "gpu/power_smoothing"),
    **dict.fromkeys((166, 170), "gpu/driver_software"),
    167: "gpu/fallen_off_bus",
    168: "gpu/precursor",
    169: "gpu/gsp_firmware",
    171: "gpu/hbm_uncorrectable",
    172: "gpu/sram_uncorrectable",
}


def _read_catalogue() -> pl.DataFrame:
    """Read ``xid_catalogue.csv`` (shipped inside the package) into a frame."""
    data = files("relkit").joinpath("xid_catalogue.csv").read_bytes()
    flags = ("a100", "h100", "b100", "gb200")
    raw = pl.read_csv(
        io.BytesIO(data),
        schema={
            "code": pl.Int64,
            "mnemonic": pl.String,
            "name": pl.String,
            "resolution_bucket": pl.String,
            "investigatory_bucket": pl.String,
            **dict.fromkeys(flags, pl.String),
        },
    )
    return raw.with_columns(
        (pl.col(f) == "YES").alias(f"applies_{f}") for f in flags
    ).drop(flags)


_CATALOGUE_FACTS = _read_catalogue()

#: Xid code -> failure mode, for every code of NVIDIA's Xid catalogue
#: (:data:`XID_CATALOGUE`); any other code is ``gpu/unknown_xid``.
XID_MODES: dict[int, str] = {
    code: (
        XID_NO_BUCKET_MODES[code]
        if bucket is None
        else _XID_COMPONENT.get(code, _BUCKET_MODE[bucket])
    )
    for code, bucket in _CATALOGUE_FACTS.select("code", "resolution_bucket").iter_rows()
}

#: The mode of an Xid code outside NVIDIA's catalogue (kept, not counted).
UNKNOWN_XID_MODE = "gpu/unknown_xid"
_UNKNOWN_XID = UNKNOWN_XID_MODE

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
        "whole host, 'None of the NVIDIA devices were initialized'. Also Xid "
        "143 GPU initialization error (RESET_GPU) and Xid 167 PCIe fatal "
        "timeout (no bucket in the catalogue; relkit counts it as a GPU lost "
        "on PCIe). Xid 79's bucket is RESTART_BM.",
    ),
    (
        "gpu/hbm_uncorrectable",
        "GPU HBM",
        "hardware",
        True,
        "GPU HBM3 Memory",
        "Uncorrectable GPU DRAM (HBM) errors: Xid 48 double-bit ECC error "
        "(WORKFLOW_XID_48), 95 uncontained memory error, 140 ECC unrecovered "
        "error, 64 memory remapping failure (RESET_GPU), 171 uncorrectable DRAM "
        "error (no bucket: it details the Xid 48 it accompanies), and Xid 94 "
        "contained memory error (bucket RESTART_APP; see XID_BUCKET_EXCEPTIONS).",
    ),
    (
        "gpu/sram_uncorrectable",
        "GPU SRAM",
        "hardware",
        True,
        "GPU SRAM Memory",
        "Xid 172 uncorrectable SRAM error (on-chip SRAM; no bucket in the "
        "catalogue: it details the Xid 48 it accompanies, counted as that is).",
    ),
    (
        "gpu/gsp_firmware",
        "GPU System Processor",
        "hardware",
        True,
        "GPU System Processor",
        "GPU System Processor and firmware: Xid 119 GSP RPC timeout, 120 GSP "
        "error, 62 internal micro-controller halt (RESET_GPU); 61 PMU "
        "breakpoint ('Unused' on Ampere and newer, CONTACT_SUPPORT); 169 SEC2 "
        "micro-controller halt (no bucket; counted as 62).",
    ),
    (
        "gpu/nvlink",
        "NVLink",
        "hardware",
        True,
        "Faulty GPU",
        "NVLink errors: Xid 74 NVLink error (WORKFLOW_NVLINK_ERR), 136 link "
        "training failed, 155 NVLink SW-defined error (RESET_GPU; the catalogue "
        "notes intentional link downs raise it too), 144-150 NVLink5 unit "
        "errors SAW, RLW, TLW, TREX, NVLPW_CTRL, NETIR, MSE "
        "(WORKFLOW_NVLINK5_ERR; relkit does not decode their sub-units).",
    ),
    (
        "gpu/hang",
        "GPU",
        "hardware",
        True,
        "Faulty GPU",
        "GPU hang (RESET_GPU): Xid 46 GPU stopped processing, 109 context "
        "switch timeout, 158 GPU fatal timeout. Counted even right after an "
        "application Xid on the same GPU (relkit.incidents).",
    ),
    (
        "gpu/application_error",
        "application",
        "user",
        False,
        None,
        "The catalogue's RESTART_APP codes: the application is restarted, "
        "never counted as hardware. Xid 13 graphics engine exception, 31 GPU "
        "memory page fault, 8, 11, 25, 32, 69, 80 push-buffer and class errors, "
        "39-41, 70-72, 75-77, 85, 126-135 copy engines, 60, 68, 82-84, 86, 88, "
        "89, 96-105, 139 video/JPEG/optical-flow engines. Xid 43 was here "
        "before issue 10; its bucket is IGNORE, so it is gpu/informational.",
    ),
    (
        "gpu/sympathetic",
        "GPU",
        "info",
        False,
        None,
        "Follows another error: Xid 45 preemptive clean-up after a previous error "
        "(catalogue: 'Solo: RESTART_FM / Not Solo: IGNORE (follow other Xid)'), "
        "154 GPU recovery action changed (XID_154), 159 CHI non-data error "
        "(CHECK_UVM, investigatory SYMPATHETIC_REPORT_SOLO). Folded into the "
        "root incident of the same GPU; alone it is an info incident.",
    ),
    (
        "gpu/precursor",
        "GPU HBM",
        "info",
        False,
        None,
        "Warnings usable as covariates (IGNORE): Xid 63 memory remapping "
        "event, 92 high single-bit ECC error rate, 121 corrected C2C link "
        "errors, 157 resource retirement failure; 168 errors in the "
        "write-protected region (no bucket; memory capacity reduced). From "
        "nvidia-smi -q: corrected ECC counts that rose, a pending row remap or "
        "page retirement.",
    ),
    (
        "gpu/reset_required",
        "GPU",
        "hardware",
        True,
        "Faulty GPU",
        "Other RESET_GPU codes: Xid 110 security fault, 156 resource retirement "
        "event (the retirement takes effect at the reset).",
    ),
    (
        "gpu/contact_support",
        "GPU",
        "hardware",
        True,
        "Faulty GPU",
        "CONTACT_SUPPORT codes: the 'Unused' codes of the catalogue (deprecated, "
        "or Volta and older GPUs) and 142 NVENC3 error. Counted by the bucket; "
        "61 is gpu/gsp_firmware.",
    ),
    (
        "gpu/power_mechanical",
        "GPU power/seating",
        "hardware",
        True,
        "Faulty GPU",
        "CHECK_MECHANICALS: Xid 54 auxiliary power not connected to the GPU "
        "board (seating and cables to be checked).",
    ),
    (
        "gpu/informational",
        "GPU",
        "info",
        False,
        None,
        "The catalogue's IGNORE codes without a closer mode: Xid 14 injected "
        "error, 37, 38 driver firmware error, 43 GPU stopped processing (a user "
        "fault; the GPU stays healthy; gpu/application_error before issue 10), "
        "44, 66, 67, 93, 106-108, 137 NVLink privilege error (XID_137_FLOW), "
        "141, 152, 153, 160, 161.",
    ),
    (
        "gpu/power_smoothing",
        "GPU power smoothing",
        "info",
        False,
        None,
        "Xid 162-165 power-smoothing circuitry re-engaged, disengaged, low and "
        "zero lifetime (no bucket in the catalogue; state and wear, not an "
        "outage).",
    ),
    (
        "gpu/driver_software",
        "GPU driver/firmware",
        "software",
        False,
        None,
        "Fixed by software, not hardware: Xid 78 vGPU start error "
        "(UPDATE_SWFW), 151 key rotation error (RESTART_VM), 166 and 170 "
        "confidential-computing NVLink errors (no bucket).",
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
        False,
        None,
        "Any Xid code outside NVIDIA's catalogue (XID_CATALOGUE); kept, never "
        "dropped, not counted unless asked (relkit mtbf --count-unknown-xid).",
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
        "EDAC uncorrected or machine-check uncorrected memory errors, and the "
        "kernel's 'Memory failure: 0x...: recovery action for ...' lines.",
    ),
    (
        "host/mce",
        "CPU",
        "hardware",
        True,
        "CPU",
        "Machine-check records that are uncorrected (MCi_STATUS bit 61 UC set, "
        "'Machine Check Exception', or Uncorrected/Fatal/PANIC wording) and "
        "'Kernel panic - not syncing: Fatal machine check'.",
    ),
    (
        "host/mce_notice",
        "CPU",
        "info",
        False,
        None,
        "'mce: [Hardware Error]: Machine check events logged': a notice that "
        "records were logged; the EDAC / machine-check lines around it decide.",
    ),
    (
        "host/mce_corrected",
        "CPU",
        "info",
        False,
        None,
        "A machine-check record whose MCi_STATUS UC bit (61) is clear: a "
        "corrected error, counted, not a failure.",
    ),
    (
        "host/ghes_fatal",
        "host (firmware-first)",
        "hardware",
        True,
        None,
        "APEI GHES '{N}[Hardware Error]: event severity: fatal': the firmware "
        "reports a fatal hardware error (the host panics).",
    ),
    (
        "host/ghes_nonfatal",
        "host (firmware-first)",
        "info",
        False,
        None,
        "APEI GHES event severity corrected, recoverable or info: no failure "
        "(a recoverable memory error is counted by its 'Memory failure' line).",
    ),
    (
        "network/link_down_at_boot",
        "NIC port",
        "info",
        False,
        None,
        "A link down within the first minutes after boot on a port not yet up "
        "(flag boot_time): port bring-up, not an outage.",
    ),
    (
        "host/kernel_panic",
        "host",
        "unknown",
        True,
        None,
        "'Kernel panic - not syncing: <reason>': the node crashed; the cause is "
        "unknown. A panic after a machine-check, fatal GHES or uncorrected memory "
        "record of its host (within 60 s) joins that record's incident instead, "
        "and the machine-check handler's own panics are host/mce.",
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

#: The rule of :data:`LOSES_NODE`, in words.
LOSES_NODE_RULE = (
    "A failure loses the node when recovery drains, resets or replaces the node, "
    "so that what the job kept in host or GPU memory (an in-memory checkpoint) "
    "is gone: the modes that count as failures and whose category is hardware "
    "(GPU, GPU memory, NVLink, NVSwitch, host CPU and memory, firmware-first "
    "fatal errors) or network (a NIC port's link down; NCCL's transport retry "
    "count exceeded, a NIC or link fault whose node is drained as for a link "
    "down). Every other mode keeps the node: software, user (application "
    "errors), info, maintenance and unknown, such as an NCCL watchdog timeout, "
    "after which the job restarts on the same nodes."
)

#: Modes whose ``loses_node`` is not the rule's (:data:`LOSES_NODE_RULE`), with
#: the reason; the value is the opposite of the rule's.
LOSES_NODE_EXCEPTIONS: dict[str, str] = {
    "host/kernel_panic": (
        "category unknown (the cause is not known) and so kept by the rule, but "
        "the node crashed: it reboots, and host memory with it"
    ),
    "gpu/unknown_xid": (
        "category unknown and not counted as a failure, so kept by the rule, but "
        "a GPU error outside NVIDIA's catalogue ends the job and the node is "
        "drained until the code is understood (as relkit.simulate drains it)"
    ),
}


def _loses_node(mode: str, category: str, *, counts: bool) -> bool:
    by_rule = counts and category in ("hardware", "network")
    return not by_rule if mode in LOSES_NODE_EXCEPTIONS else by_rule


#: Failure mode -> whether a failure of the mode loses the node (True: the node
#: is drained or replaced, so state in its memory is gone; False: the node stays
#: up and an in-memory checkpoint on it survives), for every mode of
#: :data:`FAILURE_MODES`: :data:`LOSES_NODE_RULE` with the exceptions of
#: :data:`LOSES_NODE_EXCEPTIONS`. It splits interruptions between the levels of
#: a two-level checkpoint (``relkit.checkpoint.node_keeping_share``). It is a
#: mapping, not a column of :data:`FAILURE_MODES`, because that frame is the
#: store's ``failure_modes`` table, whose columns the store schema fixes.
LOSES_NODE: dict[str, bool] = {
    mode: _loses_node(mode, category, counts=counts)
    for mode, category, counts in FAILURE_MODES.select(
        "failure_mode", "category", "counts_as_failure"
    ).iter_rows()
}

#: NVIDIA's Xid catalogue, one row per code (1-172, :data:`XID_CATALOGUE_VERSION`,
#: :data:`XID_CATALOGUE_SOURCE`): ``code``, ``mnemonic``, ``name`` (the short
#: name), ``resolution_bucket`` (immediate action; null where the catalogue has
#: none), ``investigatory_bucket``, ``failure_mode``, ``category``,
#: ``counts_as_failure`` (from the mode, :data:`XID_BUCKET_RULE`) and
#: ``applies_a100``, ``applies_h100``, ``applies_b100``, ``applies_gb200``.
XID_CATALOGUE: pl.DataFrame = (
    _CATALOGUE_FACTS.with_columns(
        failure_mode=pl.col("code").replace_strict(XID_MODES, return_dtype=pl.String)
    )
    .join(
        FAILURE_MODES.select("failure_mode", "category", "counts_as_failure"),
        on="failure_mode",
        how="left",
        maintain_order="left",
    )
    .select(
        "code",
        "mnemonic",
        "name",
        "resolution_bucket",
        "investigatory_bucket",
        "failure_mode",
        "category",
        "counts_as_failure",
        pl.col("^applies_.*$"),
    )
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
    "gpu/reset_required": "error",
    "gpu/contact_support": "error",
    "gpu/power_mechanical": "error",
    "gpu/informational": "info",
    "gpu/power_smoothing": "warning",
    "gpu/driver_software": "error",
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
    "host/mce_notice": "info",
    "host/mce_corrected": "warning",
    "host/ghes_fatal": "fatal",
    "host/ghes_nonfatal": "warning",
    "network/link_down_at_boot": "info",
    "host/kernel_panic": "fatal",
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
        The mode of :data:`XID_MODES` (every code of NVIDIA's catalogue,
        :data:`XID_CATALOGUE`); ``"gpu/unknown_xid"`` for any other code (kept,
        never dropped, not counted as a failure by default).

    Raises
    ------
    InvalidParameterError
        If ``code`` is not a whole number >= 0 (e.g. ``"sxid:20009"``; NVSwitch
        SXid codes are never Xid codes).

    References
    ----------
    .. [1] NVIDIA, "Analyzing Xid Errors with the Xid Catalog",
       https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html

    Examples
    --------
    >>> mode_for_xid(79), mode_for_xid("45"), mode_for_xid(147), mode_for_xid(999)
    ('gpu/fallen_off_bus', 'gpu/sympathetic', 'gpu/nvlink', 'gpu/unknown_xid')
    >>> mode_for_xid(68), mode_for_xid(137), mode_for_xid(165)
    ('gpu/application_error', 'gpu/informational', 'gpu/power_smoothing')
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


def unknown_xid_note(events: pl.DataFrame, *, counted: bool = False) -> str | None:
    """Say how many Xid lines have a code outside NVIDIA's catalogue, and which.

    Parameters
    ----------
    events : pl.DataFrame
        Event rows with ``failure_mode`` and ``code`` (the store's ``events``
        table, or a kernel reader's rows).
    counted : bool, default False
        Whether the caller counts them as failures (``relkit mtbf
        --count-unknown-xid``); the sentence says so instead of how to.

    Returns
    -------
    str or None
        One sentence for the ingest summary or stderr, or None when no event is
        ``gpu/unknown_xid``. Codes are listed by count, most frequent first (at
        most 10, then how many more).

    Raises
    ------
    SchemaError
        If ``failure_mode`` or ``code`` is missing.

    References
    ----------
    .. [1] NVIDIA, "Analyzing Xid Errors with the Xid Catalog",
       https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html

    Examples
    --------
    >>> ev = pl.DataFrame(
    ...     {"failure_mode": ["gpu/unknown_xid", "gpu/hang"], "code": ["999", "109"]}
    ... )
    >>> note = unknown_xid_note(ev)
    >>> note[:12], "(Xid 999 x1)" in note, note[-32:]
    ('1 Xid line(s', True, '--count-unknown-xid` counts them')
    """
    require_columns(events, ["failure_mode", "code"], where="unknown_xid_note")
    unknown = events.filter(pl.col("failure_mode") == _UNKNOWN_XID)
    if unknown.height == 0:
        return None
    codes = (
        unknown.group_by("code")
        .agg(n=pl.len())
        .sort(["n", "code"], descending=[True, False], nulls_last=True)
    )
    shown = ", ".join(f"Xid {c} x{n}" for c, n in codes.head(10).iter_rows())
    if codes.height > 10:
        shown += f", and {codes.height - 10} more code(s)"
    head = (
        f"{unknown.height} Xid line(s) with a code outside NVIDIA's Xid catalogue "
        f"({shown}) are kept as {_UNKNOWN_XID}"
    )
    if counted:
        return f"{head} and counted as failures (--count-unknown-xid)"
    return (
        f"{head} and not counted as failures; `relkit mtbf --count-unknown-xid` "
        "counts them"
    )


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
        (bool), ``llama3_row`` (str or None), ``description``, ``xid_codes``
        (sorted list of the Xid codes of the mode; empty for non-Xid modes)
        and ``loses_node`` (bool, :data:`LOSES_NODE`).

    Raises
    ------
    SchemaError
        If ``mode`` is not in the taxonomy; the message lists the known modes.

    Examples
    --------
    >>> info = failure_mode_info("gpu/hang")
    >>> info["category"], info["counts_as_failure"], info["xid_codes"]
    ('hardware', True, [46, 109, 158])
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
    info["loses_node"] = LOSES_NODE[mode]
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


# -- scheduler-state vocabulary (job attempts and their interruptions) ----------

#: Scheduler state -> (cause, kind) when no incident explains the end.
STATE_CAUSE: dict[str, tuple[str, str]] = {
    "NODE_FAIL": ("infrastructure", "unexpected"),
    "BOOT_FAIL": ("infrastructure", "unexpected"),
    "LAUNCH_FAILED": ("infrastructure", "unexpected"),
    "FAILED": ("user", "unexpected"),
    "OUT_OF_MEMORY": ("user", "unexpected"),
    "SPECIAL_EXIT": ("user", "unexpected"),
    "REQUEUED": ("unknown", "unexpected"),
    "CANCELLED": ("user_action", "not_failure"),
    "TIMEOUT": ("policy", "not_failure"),
    "DEADLINE": ("policy", "not_failure"),
    "PREEMPTED": ("scheduler", "not_failure"),
    "REVOKED": ("scheduler", "not_failure"),
}

#: States of attempts that have not ended (right-censored or queued).
OPEN_STATES = (
    "RUNNING",
    "PENDING",
    "SUSPENDED",
    "REQUEUE_HOLD",
    "REQUEUE_FED",
    "RESV_DEL_HOLD",
    "RESIZING",
    "CONFIGURING",
    "COMPLETING",
    "SIGNALING",
    "STAGE_OUT",
    "STOPPED",
    "POWER_UP_NODE",
    "UPDATE_DB",
)

#: States whose end is explained by a failure incident on the job's nodes when
#: one is found (others are decided by the user or the scheduler).
ATTRIBUTED_STATES = ("NODE_FAIL", "BOOT_FAIL", "LAUNCH_FAILED", "FAILED", "REQUEUED")


#: States of attempts that failed as they started: an incident just before
#: the start may explain them.
LAUNCH_STATES = ("BOOT_FAIL", "LAUNCH_FAILED")

#: Causes that are infrastructure failures (for job MTTF and secondary losses).
INFRA_CAUSES = ("hardware", "network", "infrastructure")

#: Component state that speaks for a heterogeneous job (first match wins).
STATE_PRIORITY = (
    "NODE_FAIL",
    "BOOT_FAIL",
    "LAUNCH_FAILED",
    "FAILED",
    "OUT_OF_MEMORY",
    "SPECIAL_EXIT",
    "REQUEUED",
    "PREEMPTED",
    "TIMEOUT",
    "DEADLINE",
    "CANCELLED",
    "REVOKED",
    *OPEN_STATES,
    "COMPLETED",
)

#: Flags of a job record that mark a deliberate requeue (``planned``): a
#: ``REQUEUED`` Slurm attempt whose steps were cancelled and none failed
#: (:func:`relkit.ingest.read_sacct`), a pod evicted through the Eviction API
#: (:func:`relkit.ingest.read_k8s`).
PLANNED_FLAGS = ("steps_cancelled", "evicted_by_api")
