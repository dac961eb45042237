"""Regular expressions and code tables of the kernel/syslog classifier.

Everything here is data: the line framings (how a log line carries its time and
host), the signal patterns (which message is which failure mode) and the Xid
catalogue mapping. :mod:`relkit.ingest.kernel` applies them with polars'
vectorised regex engine (Rust ``regex`` syntax: no look-around, no
back-references; alternation is leftmost-first).

References
----------
.. [1] NVIDIA, "Xid Errors" (XID catalogue), https://docs.nvidia.com/deploy/xid-errors/
.. [2] leptonai/gpud ``pkg/nvidia-query/xid`` and NVIDIA NVSentinel
   ``syslog-health-monitor`` parsers (line shapes only; no code copied).
.. [3] NVIDIA open-gpu-kernel-modules, ``src/nvidia/arch/nvalloc/unix/src/osinit.c``
   ("RmInitAdapter failed! (0x%x:0x%x:%d)", "GPU does not have the necessary
   power cables connected.") and ``kernel-open/nvidia/nv.c`` ("rm_init_adapter
   failed, device minor number %d", "None of the NVIDIA devices were
   initialized.", "The NVIDIA probe routine failed for %d device(s).").
.. [4] Linux ``drivers/net/ethernet/broadcom/bnxt/bnxt.c`` (bnxt_report_link),
   ``intel/ice/ice_main.c`` (ice_print_link_msg), ``intel/i40e/i40e_main.c``
   (i40e_print_link_message): ``netdev_info(dev, "NIC Link is Down")`` and
   ``"NIC Link is Up, ..."`` / ``"NIC Link is up ..."``.
.. [5] mcelog (https://github.com/andikleen/mcelog), record output as syslog
   lines ``mcelog[pid]: Hardware event. This is not a software error.``, ``CPU
   n BANK m``, ``MCA: ...``, ``STATUS <hex> MCGSTATUS <hex>``, ``MCGCAP ...``;
   ``page.c``: ``Corrected memory errors on page ... exceed threshold ...``.
.. [6] Linux ``drivers/edac/mce_amd.c`` (``amd_decode_mce``,
   ``decode_error_status``, ``decode_smca_error``): ``HW_ERR "CPU:%d
   (%x:%x:%x) MC%d_STATUS[%s|%s|%s|%s|%s..." "]: 0x%016llx"``, the second
   field ``UE`` (MCi_STATUS bit 61), ``-`` (deferred) or ``CE``; ``"%s Ext.
   Error Code: %d"`` with the SMCA bank name (``Unified Memory Controller``).
"""

#: A PCI address as the kernel prints it: domain (4 or 8 hex), bus, device and an
#: optional function; captured without the function.
PCI = r"[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
#: The address inside ``Xid (...)`` / ``SXid (...)``: as :data:`PCI`, or bus and
#: device without the domain (``Xid (PCI:3b:00)``). The Xid catalogue [1]_ prints
#: ``PCI:dddd:bb:dd`` and a host with one PCI segment has domain 0000, so the
#: classifier reads a missing domain as 0000 (``0000:3b:00``).
PCI_XID = r"(?:[0-9A-Fa-f]{4,8}:)?[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}"
_FN = r"(?:\.[0-7])?"

_ISO_TS = (
    r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:[.,]\d{1,9})?"
    r"(?:[Zz]|[+-]\d{2}:?\d{2})?"
)
#: RFC 3164 stamp; ``journalctl -o short-precise`` adds microseconds.
_RFC_TS = r"[A-Z][a-z]{2} [ \d]?\d \d{2}:\d{2}:\d{2}(?:\.\d{1,6})?"
#: A host name or syslog tag as the framings read it.
_WORD = r"[^\s:\[\]]+"
#: Syslog tag and an optional nested kernel clock after the host: ``kernel: [ 9.1] ``.
_TAG = (
    r"(?:(?P<{p}_tag>[^\s:\[\]]+)(?:\[\d+\])?:\s+)?"
    r"(?:\[\s*(?P<{p}_mono>\d+\.\d+)\]\s?)?"
)
_KMSG = r"^\d{1,4},\d+,(?P<k_us>\d+),[^;]*;"
_X_PREFIX = r"^(?:[a-z]+\s*:\s*[a-z]+\s*:\s*)?"

#: One regex, one branch per framing, tried left to right. Group names carry the
#: framing's prefix: k kmsg, d dmesg (``dmesg -r``: a ``<4>`` priority first),
#: t dmesg -T, i ISO syslog with host, x ISO without host (``dmesg --time-format
#: iso``, or a syslog line with a tag and no host), r RFC 3164, s RFC 3164 without
#: host (``Feb 23 03:28:16 kernel: ...``), b BGL, u Thunderbird, h LANL HPC.
FRAMING = "|".join(
    [
        _KMSG + r"(?P<k_msg>.*)$",
        r"^(?:<\d{1,3}>)?\[\s*(?P<d_mono>\d+\.\d+)\]\s?(?P<d_msg>.*)$",
        (
            r"^\[(?:[A-Z][a-z]{2} )?(?P<t_wall>[A-Z][a-z]{2} [ \d]\d "
            r"\d{2}:\d{2}:\d{2} \d{4})\]\s?(?P<t_msg>.*)$"
        ),
        (
            rf"^(?:<\d{{1,3}}>)?(?P<i_wall>{_ISO_TS})\s+(?P<i_host>[^\s:\[\]]+)\s+"
            + _TAG.format(p="i")
            + r"(?P<i_msg>.*)$"
        ),
        (
            rf"{_X_PREFIX}(?P<x_wall>{_ISO_TS})\s+(?:(?:(?P<x_tag>{_WORD})(?:\[\d+\])?:\s+)?"
            r"\[\s*(?P<x_mono>\d+\.\d+)\]\s?)?(?P<x_msg>.*)$"
        ),
        (
            rf"^(?:<\d{{1,3}}>)?(?P<r_wall>{_RFC_TS})\s+"
            r"(?P<r_host>[^\s:\[\]]+)\s+" + _TAG.format(p="r") + r"(?P<r_msg>.*)$"
        ),
        (
            rf"^(?:<\d{{1,3}}>)?(?P<s_wall>{_RFC_TS})\s+(?P<s_tag>{_WORD})(?:\[\d+\])?:\s+"
            r"(?:\[\s*(?P<s_mono>\d+\.\d+)\]\s?)?(?P<s_msg>.*)$"
        ),
        (
            r"^(?P<b_label>\S+) (?P<b_epoch>\d{9,10}) \d{4}\.\d{2}\.\d{2} "
            r"(?P<b_host>\S+) \d{4}-\d{2}-\d{2}-\d{2}\.\d{2}\.\d{2}\.\d{6} \S+ "
            r"(?P<b_msg>.*)$"
        ),
        (
            r"^(?P<u_label>\S+) (?P<u_epoch>\d{9,10}) \d{4}\.\d{2}\.\d{2} "
            r"(?P<u_host>\S+) (?P<u_msg>.*)$"
        ),
        (
            r"^(?P<h_id>\d+) (?P<h_host>\S+) (?P<h_comp>\S+) (?P<h_state>\S+) "
            r"(?P<h_epoch>\d{9,10}) (?P<h_flag>-?\d+) (?P<h_msg>.*)$"
        ),
    ]
)

#: Lines whose framing (in :data:`FRAMING`) carries a kernel clock: kmsg, dmesg,
#: and ISO / RFC 3164 syslog with ``[ mono]`` after the host and tag. A match
#: test only; the clock is the first ``[ sss.uuuuuu]`` of such a line (or the
#: kmsg microseconds), the host the word after the syslog stamp
#: (:data:`CLOCK_HOST`). ``tests/test_ingest_kernel.py`` checks that both agree
#: with :data:`FRAMING`.
CLOCK = "|".join(
    [
        _KMSG,
        r"^(?:<\d{1,3}>)?\[\s*\d+\.\d+\]",
        (
            rf"^(?:<\d{{1,3}}>)?(?:{_ISO_TS}|{_RFC_TS})\s+{_WORD}\s+"
            rf"(?:{_WORD}(?:\[\d+\])?:\s+)?\[\s*\d+\.\d+\]"
        ),
        rf"^(?:<\d{{1,3}}>)?{_RFC_TS}\s+{_WORD}(?:\[\d+\])?:\s+\[\s*\d+\.\d+\]",
        rf"{_X_PREFIX}{_ISO_TS}\s+(?:{_WORD}(?:\[\d+\])?:\s+)?\[\s*\d+\.\d+\]",
    ]
)
#: The kernel clock of a :data:`CLOCK` line that is not kmsg (first bracket).
CLOCK_MONO = r"\[\s*(\d+\.\d+)\]"
#: The host of a :data:`CLOCK` line (ISO and RFC 3164 syslog with a host).
CLOCK_HOST = rf"^(?:<\d{{1,3}}>)?(?:{_ISO_TS}|{_RFC_TS})\s+({_WORD})\s"
#: Lines whose host may come from an NCCL ``host:pid:tid [rank] `` message
#: prefix; clock lines matching it take the full framing.
NCCL_HOST_HINT = r":\d+:\d+ \[\d+\] "

#: Host of an NCCL/torch line printed by the application: ``host:pid:tid [rank]``.
NCCL_HOST = r"^(?P<host>[A-Za-z0-9][A-Za-z0-9._-]*):\d+:\d+ \[\d+\] "

#: Cheap pre-filter: a line can only be a signal (or a counted context line) if
#: it contains one of these. Lines that do not are ``ignored`` as ``no_signal``.
KEYWORDS = (
    r"Xid|NVRM|fallen off the bus|mlx5_|Link (?:down|up|DOWN|ACTIVE|INIT|ARMED)|"
    r"port state changed|Port module event|NCCL|Watchdog|watchdog|"
    r"EDAC|Hardware Error|[Mm]achine [Cc]heck|hardware memory error|"
    r"Memory failure|Linux version \d|Kernel panic|NIC Link is|mcelog|"
    # journalctl's marker lines and a run of NUL bytes (:data:`JOURNAL_MARKER`)
    r"^-- |^\x00"
)

#: Lines ``journalctl`` prints between entries, never a log entry: ``-- Journal
#: begins at ..., ends at ... --`` (``-- Logs begin at ...`` before systemd
#: 246), ``-- Reboot --``, ``-- Boot <32 hex> --`` (systemd 255) and ``-- No
#: entries --``. Ignored with reason ``journal_marker``; they name no host.
JOURNAL_MARKER = (
    r"^-- (?:Journal begins at |Logs begin at |Reboot --|Boot [0-9a-f]{32} --|"
    r"No entries --|Journal ends at )"
)

#: An InfiniBand device name (``mlx5_0``, ``mlx4_1``, ``bnxt_re0``) and port states.
_IBDEV = r"(?P<ibdev>\b[a-z][a-z0-9]*_[a-z]*\d+)"
_IB_STATES = r"DOWN|ACTIVE|INIT|ARMED"

#: Signal patterns, tried in order on the message (the line without framing).
#: Each entry: name, regex with named groups (any of pci, code, rest, netdev,
#: state, n, kind, cpu, uuid, every).
SIGNALS: list[tuple[str, str]] = [
    # the mcelog daemon's record lines in syslog (tag ``mcelog``; the classifier
    # puts "mcelog: " in front of their message): one record is one event, on
    # its "STATUS <MCi_STATUS> MCGSTATUS <hex>" line [5]_; its "CPU n BANK m"
    # and "MCA: ..." lines are kept as context for that event, the others are
    # context only
    (
        "mcelog_status",
        r"^mcelog: STATUS (?P<status>[0-9a-fA-F]{1,16}) MCGSTATUS "
        r"(?P<mcgstatus>[0-9a-fA-F]+)",
    ),
    ("mcelog_cpu", r"^mcelog: CPU (?P<cpu>\d+) BANK (?P<bank>\d+)\b"),
    ("mcelog_mca", r"^mcelog: (?P<rest>MCA: .*)$"),
    (
        "mcelog_ce_threshold",
        r"^mcelog: (?P<rest>Corrected memory errors on page .*exceed threshold.*)$",
    ),
    ("mcelog_context", r"^mcelog: "),
    ("journal_marker", JOURNAL_MARKER),
    # a line of NUL bytes only (the reader turns it into one NUL): what a power
    # loss leaves in a syslog file that was being written
    ("nul_run", r"^\x00$"),
    # the AMD decoder's record (drivers/edac/mce_amd.c amd_decode_mce): one
    # record is one event, on its "CPU:%d (%x:%x:%x) MC%d_STATUS[%s|%s|...]:
    # 0x%016llx" line [6]_; the second flag is UE, CE or "-" (deferred). Its
    # other lines ("Uncorrected, software restartable error.", "Error Addr:",
    # "IPID:", "... Ext. Error Code: ...", "cache level: ...") are context; a
    # "Unified Memory Controller" / "DRAM ECC error" line makes an uncorrected
    # record host/memory_ue (link_context)
    (
        "mce_amd",
        r"\[Hardware Error\]: CPU:(?P<cpu>\d+) \((?P<fms>[0-9a-fA-F:]+)\) "
        r"MC(?P<bank>\d+)_STATUS\[(?P<over>[^|\]]*)\|(?P<kind>UE|CE|-)\|"
        r"(?P<flags>[^\]]*)\]: 0x(?P<status>[0-9a-fA-F]{1,16})\b",
    ),
    (
        "mce_amd_memory",
        r"\[Hardware Error\]: (?:Unified Memory Controller Ext\. Error Code|.*"
        r"DRAM ECC error)",
    ),
    # the second and third lines of a multi-line SXid report (NVIDIA Fabric
    # Manager User Guide, "NVSwitch SXid errors"): "SXid (PCI:...): N, Severity S
    # Engine instance E Sub-engine instance U" and "SXid (PCI:...): N, Data {...}"
    # detail the first line's error; context, never a second event
    (
        "sxid_detail",
        rf"SXid \((?:PCI:)?(?P<pci>{PCI_XID}){_FN}\):\s*\d+,\s*"
        r"(?:Severity \d+ Engine instance|Data \{)",
    ),
    (
        "sxid",
        rf"SXid \((?:PCI:)?(?P<pci>{PCI_XID}){_FN}\):\s*(?P<code>\d+)"
        r"(?:,\s*)?(?P<rest>.*)$",
    ),
    (
        "xid",
        rf"(?:^|[^A-Za-z])Xid \((?:PCI:)?(?P<pci>{PCI_XID}){_FN}\):\s*(?P<code>\d+)\s*"
        r"(?:$|,\s*(?P<rest>.*)$)",
    ),
    # a well-formed address but no numeric code; any other "Xid (" has a bad address
    ("xid_bad", rf"(?:^|[^A-Za-z])Xid \((?:PCI:)?{PCI_XID}{_FN}\)"),
    ("xid_bad_pci", r"(?:^|[^A-Za-z])Xid \("),
    ("gpu_map", rf"NVRM: GPU at PCI:(?P<pci>{PCI}){_FN}: (?P<uuid>GPU-[0-9A-Fa-f-]+)"),
    (
        "rate_limit",
        rf"Rate limiting .*GPU at (?:PCI:)?(?P<pci>{PCI}){_FN}.*"
        r"printing 1 of every (?P<every>\d+)",
    ),
    ("driver_load", r"NVRM: loading NVIDIA"),
    (
        "fallen",
        rf"GPU (?:at )?(?:PCI:)?(?P<pci>{PCI}){_FN}\b.*fallen off the bus",
    ),
    # GPUs not detected or not initialised at boot (open-gpu-kernel-modules
    # osinit.c RmInitAdapter / nv.c nv_start_device, nvidia_init_module) [3]_
    (
        "gpu_init_failed",
        rf"NVRM: (?:GPU (?P<pci>{PCI}){_FN}: )?"
        r"(?P<rest>(?:RmInitAdapter|rm_init_adapter) failed.*)$",
    ),
    (
        "gpu_power_cables",
        rf"NVRM: (?:GPU (?P<pci>{PCI}){_FN}: )?"
        r"(?P<rest>GPU does not have the necessary power cables connected.*)$",
    ),
    (
        "gpu_none_initialized",
        r"NVRM: (?P<rest>None of the NVIDIA devices were initialized.*)$",
    ),
    # the driver does not support the GPU (configuration, not a failure): context
    (
        "gpu_unsupported",
        rf"NVRM: (?:The NVIDIA GPU (?P<pci>{PCI}){_FN}\b)?.*(?:installed in this "
        r"system (?:is not supported|requires use of the NVIDIA open)|does not "
        r"include the required GPU)",
    ),
    # first line of a multi-line "The NVIDIA GPU <pci> ... has / fallen off the bus"
    ("gpu_header", rf"NVRM: The NVIDIA GPU (?P<pci>{PCI}){_FN}\b"),
    # a later line of that message: no PCI address on it
    ("fallen_continued", r"NVRM: (?P<rest>.*fallen off the bus.*)$"),
    ("nvrm", r"NVRM:"),
    (
        "link",
        rf"mlx5_core (?P<pci>{PCI}){_FN} (?P<netdev>[^\s:]+):\s+Link "
        r"(?P<state>down|up)",
    ),
    # Ethernet NIC drivers' netdev_info link messages (Broadcom bnxt_en, Intel
    # ice / i40e / ixgbe): "<driver> <pci> <netdev>: NIC Link is Down" and "NIC
    # Link is Up, 100000 Mbps ..." / "NIC Link is up 100 Gbps ..." [4]_
    (
        "nic_link",
        rf"^[a-z][a-z0-9_]* (?P<pci>{PCI}){_FN} (?P<netdev>[^\s:]+):\s+NIC Link is "
        r"(?P<state>[Dd]own|[Uu]p)\b",
    ),
    # InfiniBand port state per port (ib_core / mlx5_ib): "mlx5_0: Port: 1 Link
    # DOWN" and "... port 1 ... port state changed to DOWN"; INIT/ARMED are context
    (
        "ib_port",
        rf"{_IBDEV}:? [Pp]ort:? (?P<port>\d+),? Link (?P<state>{_IB_STATES})\b",
    ),
    (
        "ib_port_state",
        rf"{_IBDEV}\b(?:.*?\b[Pp]ort:? (?P<port>\d+)\b)?.*?[Pp]ort state changed "
        rf"to (?P<state>{_IB_STATES})\b",
    ),
    # mlx5 module events (mlx5_port_module_event): "Cable plugged" is no fault;
    # the kernel prints them with or without the function:line:(pid) prefix
    (
        "cable_plugged",
        rf"mlx5_core (?P<pci>{PCI}){_FN}: (?:mlx5_port_module_event[^:]*:[^:]*:\s*)?"
        r"Port module event: module \d+, Cable plugged",
    ),
    (
        "cable",
        rf"mlx5_core (?P<pci>{PCI}){_FN}: (?:mlx5_port_module_event[^:]*:[^:]*:\s*"
        r"(?P<rest>.*(?:[Cc]able|[Mm]odule).*)$|(?P<rest2>Port module event.*)$)",
    ),
    (
        "pcie_power",
        rf"mlx5_core (?P<pci>{PCI}){_FN}: mlx5_pcie_event[^:]*:[^:]*:\s*"
        r"(?P<rest>.*insufficient power.*)$",
    ),
    (
        "nccl_error",
        r"Got completion (?:from peer (?P<peer>\S+) )?with (?:status=|error )"
        r"(?P<code>\d+)(?P<rest>.*)$",
    ),
    # PyTorch ProcessGroupNCCL: "NCCL error in: <file>:<line>, <ncclGetErrorString>"
    (
        "nccl_torch",
        r"NCCL error in: (?P<where>[^,]*?\.(?:cpp|cc|cu|h|py):\d+),?\s*"
        r"(?P<rest>.*)$",
    ),
    (
        "nccl_watchdog",
        r"(?P<rest>(?:Watchdog caught collective operation timeout|"
        r"ProcessGroupNCCL.*[Ww]atchdog).*)$",
    ),
    (
        "edac",
        r"EDAC (?:[A-Za-z0-9_]+ )?MC(?P<mc>\d+): (?:(?P<n>\d+) )?(?P<kind>CE|UE)\b\s*"
        r"(?P<rest>.*)$",
    ),
    # APEI GHES (drivers/acpi/apei/ghes.c): "{N}[Hardware Error]: event severity: X"
    (
        "ghes",
        r"\[Hardware Error\]: event severity: (?P<sev>fatal|recoverable|corrected|"
        r"info)\b(?P<rest>.*)$",
    ),
    ("mce_notice", r"(?P<rest>Machine check events logged.*)$"),
    (
        "mce",
        r"\[Hardware Error\]: CPU (?P<cpu>\d+): Machine Check(?P<exc> Exception)?:"
        r"(?P<rest>.*)$",
    ),
    # the closing line of a panic report repeats the panic: context, no 2nd event
    ("panic_end", r"---\[ end Kernel panic - not syncing"),
    # a crash asked for with SysRq-c (echo c > /proc/sysrq-trigger: an
    # operator, a kdump test): no failure; ignored
    ("sysrq_panic", r"Kernel panic - not syncing: sysrq triggered crash"),
    # panics printed by the machine-check handler (arch/x86/kernel/cpu/mce/core.c)
    (
        "mce_panic",
        r"(?P<rest>Kernel panic - not syncing: (?:.*[Mm]achine [Cc]heck|Timeout: Not "
        r"all CPUs entered broadcast exception handler|Some CPUs didn't answer in "
        r"synchronization).*)$",
    ),
    # any other panic: the node crashed (host/kernel_panic, unless it follows a
    # machine-check / GHES / memory record of its host: see link_context)
    ("kernel_panic", r"(?P<rest>Kernel panic - not syncing: .*)$"),
    ("memory_ue", r"(?P<rest>Uncorrected hardware memory error.*)$"),
    # mm/memory-failure.c: pr_fmt "Memory failure: ", "%#lx: recovery action for
    # %s: %s" is the outcome of one poisoned page; its other lines are context
    (
        "memory_failure",
        r"Memory failure: (?P<pfn>(?:0x)?[0-9a-fA-F]+): (?P<rest>recovery action "
        r"for .*)$",
    ),
    ("memory_failure_context", r"Memory failure: "),
    ("boot_marker", r"^Linux version \d"),
    ("edac_decode", r"EDAC "),
    ("mce_decode", r"\[Hardware Error\]|Machine [Cc]heck"),
]

#: Reason (for ``ignored`` lines) of the context patterns that are never events.
CONTEXT_REASON: dict[str, str] = {
    "sxid_detail": "sxid_detail",
    "gpu_map": "gpu_uuid_map",
    "gpu_header": "gpu_message_header",
    "gpu_unsupported": "gpu_unsupported_by_driver",
    "rate_limit": "rate_limit_notice",
    "driver_load": "driver_load",
    "nvrm": "nvrm_context",
    "edac_decode": "edac_context",
    "mce_decode": "mce_context",
    "cable_plugged": "cable_plugged",
    "memory_failure_context": "memory_failure_context",
    "boot_marker": "boot_marker",
    "mcelog_context": "mcelog_context",
    "panic_end": "kernel_panic_end",
    "sysrq_panic": "sysrq_triggered_crash",
    "journal_marker": "journal_marker",
    "nul_run": "nul_bytes",
    "mce_amd_memory": "mce_amd_memory",
}

#: Signals of GPUs missing or not initialised at boot -> their ``code`` (mode
#: ``gpu/fallen_off_bus``; ``None`` for a "fallen off the bus" line that continues
#: a multi-line message). ``none_initialized`` is a host-level line: no device.
GPU_BOOT_CODES: dict[str, str | None] = {
    "gpu_init_failed": "init_failed",
    "gpu_power_cables": "power_cables",
    "gpu_none_initialized": "none_initialized",
    "fallen_continued": None,
}
