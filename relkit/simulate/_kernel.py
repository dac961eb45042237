"""Per-host kernel and syslog logs: failure storms, boots and noise, in five framings.

Every realised incident of a logged mode becomes a short storm of lines in the
shapes relkit's kernel ingest reads (:mod:`relkit.ingest._kernel_patterns`):
NVIDIA Xid lines (with Xid 45 clean-up lines folded into their root), "fallen
off the bus", NVSwitch SXid, mlx5 ``Link down``/``Link up`` flaps, EDAC and
machine-check lines, NCCL errors and watchdog timeouts. Storms of one
(host, device) are at least half an hour apart, so each is exactly one incident
under the 10-minute gap window and the 5-minute flap debounce.

The Xid codes follow the fleet's GPU (``SimConfig.gpu_model``): an A100 prints
no Xid 140 or 172, which are HBM3-era (H100) codes. Each host boots the Linux
kernel and NVIDIA driver released before the span starts (:data:`BANNERS`), and
each log file ends with an ordinary line just before the span's end, when the
logs were collected (:func:`closing_lines`).

Hosts are given one framing each (mixed on purpose): ``iso`` (journalctl
``-o short-iso``), ``rfc3339`` (rsyslog), ``rfc3164`` (classic syslog, local
time without year, with the kernel clock), ``dmesg_T`` and ``dmesg_iso``
(``dmesg`` with wall stamps, kernel lines only; the host's user-space lines go
to a ``.syslog`` file in ``iso`` framing).
"""

import math
from collections.abc import Callable
from datetime import date, datetime
from pathlib import Path

import numpy as np
import polars as pl

from relkit.simulate._config import SimConfig
from relkit.simulate._fleet import GPU_BUS, NIC_BUS, SWITCH_BUS, nic_netdev

#: Framings whose file holds kernel lines only (user-space lines go elsewhere).
DMESG = ("dmesg_T", "dmesg_iso")
#: Framings whose stamps have whole seconds only.
SECONDS = ("iso", "rfc3164", "dmesg_T")
#: Hosts written per batch (bounded memory).
HOST_BATCH = 32

LINE_SCHEMA = {
    "incident_id": pl.Int64,
    "t_h": pl.Float64,
    "node": pl.Int64,
    "stream": pl.String,
    "tag": pl.String,
    "msg": pl.String,
    "is_event": pl.Boolean,
    "failure_mode": pl.String,
    "device": pl.String,
    "code": pl.String,
    "severity": pl.String,
}

_S = 1.0 / 3600.0  # one second in hours
#: Boot banners by release: (first day, ``Linux version`` line, NVIDIA driver
#: version and build stamp). Each host boots the newest pair released before the
#: span starts, so a 2023 span does not print a 2024 driver. The versions are
#: real releases; the build hosts and stamps are plausible, not copied from a log.
BANNERS: tuple[tuple[date, str, str], ...] = (
    (
        date(2021, 7, 13),
        "Linux version 5.4.0-80-generic (buildd@lcy01-amd64-030) (gcc version "
        "9.3.0 (Ubuntu 9.3.0-17ubuntu1~20.04)) #90-Ubuntu SMP",
        "470.57.02  Tue Jul 13 16:14:05 UTC 2021",
    ),
    (
        date(2023, 1, 28),
        "Linux version 5.15.0-58-generic (buildd@lcy02-amd64-101) (gcc (Ubuntu "
        "11.3.0-1ubuntu1~22.04) 11.3.0) #64-Ubuntu SMP",
        "525.85.12  Sat Jan 28 02:10:06 UTC 2023",
    ),
    (
        date(2024, 2, 22),
        "Linux version 5.15.0-97-generic (buildd@lcy02-amd64-102) (gcc (Ubuntu "
        "11.4.0-1ubuntu1~22.04) 11.4.0) #107-Ubuntu SMP",
        "535.161.08  Thu Feb 22 23:36:17 UTC 2024",
    ),
)


def banners(start: datetime) -> tuple[str, str]:
    """Return the ``Linux version`` line and the driver banner for a span start."""
    day = start.date()
    older = [b for b in BANNERS if b[0] < day] or [BANNERS[0]]
    _, linux, driver = older[-1]
    return linux, f"NVRM: loading NVIDIA UNIX x86_64 Kernel Module  {driver}"


def _hex(rng: np.random.Generator, digits: int) -> str:
    return "".join(f"{int(x):x}" for x in rng.integers(0, 16, size=digits))


class _Storm:
    """Collects the lines of one incident."""

    def __init__(
        self, inc: dict, rng: np.random.Generator, gpu_model: str = "H100"
    ) -> None:
        self.inc = inc
        self.rng = rng
        self.gpu_model = gpu_model
        self.rows: list[dict] = []
        self.pid = int(rng.integers(2000, 4_000_000))
        self.name = "python3" if rng.random() < 0.5 else "pt_main_thread"

    def add(
        self,
        dt_s: float,
        msg: str,
        *,
        mode: str | None = None,
        code: str | None = None,
        device: str | None = None,
        severity: str | None = None,
        stream: str = "kernel",
        tag: str = "kernel",
    ) -> None:
        self.rows.append(
            {
                "incident_id": self.inc["incident_id"],
                "t_h": self.inc["t_h"] + dt_s * _S,
                "node": self.inc["node"],
                "stream": stream,
                "tag": tag,
                "msg": msg,
                "is_event": mode is not None,
                "failure_mode": mode,
                "device": device,
                "code": code,
                "severity": severity,
            }
        )

    def xid(self, dt_s: float, code: int, text: str, mode: str) -> None:
        pci = self.inc["device"]
        pid = f"pid={self.pid}, name={self.name}, " if text else ""
        body = f", {pid}{text}" if text else ""
        self.add(
            dt_s,
            f"NVRM: Xid (PCI:{pci}): {code}{body}",
            mode=mode,
            code=str(code),
            device=pci,
        )

    def sympathetic(self, dt_s: float, n: int) -> None:
        for k in range(n):
            self.xid(
                dt_s + 0.001 * k,
                45,
                f"Ch {16 + 8 * k:08x}",
                "gpu/sympathetic",
            )


def _gpu_storm(st: _Storm) -> None:
    mode = st.inc["failure_mode"]
    rng = st.rng
    if mode == "gpu/fallen_off_bus":
        st.xid(0.0, 79, "GPU has fallen off the bus.", mode)
        st.add(
            0.004,
            f"NVRM: GPU {st.inc['device']}.0: GPU has fallen off the bus.",
            mode=mode,
            device=st.inc["device"],
        )
        if rng.random() < 0.5:
            st.xid(1.0 + 2 * rng.random(), 79, "GPU has fallen off the bus.", mode)
    elif mode == "gpu/hbm_uncorrectable":
        # Xid 140 ("unrecovered ECC error") is printed for HBM3 (H100) only
        codes = [48, 94, 95, 140] if st.gpu_model == "H100" else [48, 94, 95]
        code = int(rng.choice(codes))
        text = {
            48: "Ch 00000008, An uncorrectable double bit error (DBE) has been "
            "detected on GPU in the framebuffer at partition 3, subpartition 0.",
            94: "Contained: SM (0x1). RST: No, D-RST: No",
            95: "Uncontained: FBHUB. RST: Yes, D-RST: No",
            140: "An uncorrectable ECC error detected (possible firmware handling "
            "failure) DRAM:-1840691385, LTC:0, MMU:0, RM:0",
        }[code]
        st.xid(0.0, code, text, mode)
        st.sympathetic(0.5, int(rng.integers(0, 3)))
    elif mode == "gpu/sram_uncorrectable":
        st.xid(0.0, 172, "Uncorrectable SRAM error detected.", mode)
        st.sympathetic(0.3, int(rng.integers(0, 2)))
    elif mode == "gpu/gsp_firmware":
        n = int(rng.integers(1, 6))
        t = 0.0
        k = GPU_BUS.index(st.inc["device"][5:7])
        for i in range(n):
            st.xid(
                t,
                119,
                f"Timeout after 6s of waiting for RPC response from GPU{k} GSP! "
                "Expected function 76 (GSP_RM_CONTROL) (0x20801702 0x4).",
                mode,
            )
            if i == 0 and n > 2 and rng.random() < 0.5:
                st.add(
                    t + 0.01,
                    "NVRM: Rate limiting GSP RPC error prints for GPU at "
                    f"PCI:{st.inc['device']} (printing 1 of every 30).  The GPU "
                    "likely needs to be reset.",
                )
            t += 20.0 + 70.0 * rng.random()
    elif mode == "gpu/nvlink":
        for i in range(int(rng.integers(1, 4))):
            link = int(rng.integers(0, 18))
            st.xid(
                0.2 * i,
                74,
                f"NVLink: fatal error detected on link {link}(0x0, 0x0, 0x10000, "
                "0x0, 0x0, 0x0, 0x0)",
                mode,
            )
    elif mode == "gpu/hang":
        if rng.random() < 0.7:
            st.xid(0.0, 109, "Ctx Switch Timeout Error, TSG 0x1, ESR 0x0", mode)
        else:
            st.xid(0.0, 46, "", mode)
        st.sympathetic(1.0, int(rng.integers(0, 3)))
    elif mode == "gpu/unknown_xid":
        # 173: the first code after NVIDIA's catalogue (1-172)
        st.xid(0.0, 173, "Ch 00000010", mode)
    elif mode == "gpu/application_error":
        # Xid 43's bucket is IGNORE: gpu/informational, not this mode
        code = int(rng.choice([13, 31]))
        text = {
            13: "Graphics SM Warp Exception on (GPC 2, TPC 1, SM 0): Out Of Range "
            "Address",
            31: "Ch 00000010, intr 10000000. MMU Fault: ENGINE GRAPHICS "
            "GPCCLIENT_T1_0 faulted @ 0x7f5e_3f000000. Fault is of type "
            "FAULT_PDE ACCESS_TYPE_VIRT_READ",
        }[code]
        st.xid(0.0, code, text, mode)
        st.sympathetic(1.0, int(rng.integers(0, 13)))
    elif mode == "gpu/precursor":
        if rng.random() < 0.7:
            st.xid(
                0.0,
                63,
                f"Row Remapper: New row (0x{_hex(rng, 16)}) was marked for "
                "remapping, reset gpu to activate.",
                mode,
            )
        else:
            st.xid(0.0, 92, "High single-bit ECC error rate", mode)


def _node_storm(st: _Storm, host: str) -> None:
    mode = st.inc["failure_mode"]
    rng = st.rng
    dev = st.inc["device"]
    if mode == "nvswitch/sxid":
        k = SWITCH_BUS.index(dev[5:7])
        link = int(rng.integers(0, 64))
        st.add(
            0.0,
            f"nvidia-nvswitch{k}: SXid (PCI:{dev}.0): 24007, Fatal, Link {link:02d} "
            "sourcetrack timeout error (First)",
            mode=mode,
            code="sxid:24007",
            device=dev,
            severity="Fatal",
        )
        st.add(
            0.001,
            f"nvidia-nvswitch{k}: SXid (PCI:{dev}.0): 24007, Severity 1 Engine "
            f"instance {link:02d} Sub-engine instance 00",
            mode=mode,
            code="sxid:24007",
            device=dev,
        )
    elif mode == "network/link_down":
        pci, netdev = dev.split(" ")
        pref = f"mlx5_core {pci}.0 {netdev}: Link "
        t = 0.0
        for _ in range(int(rng.integers(0, 3))):  # short flaps first
            st.add(t, pref + "down", mode="network/link_down", device=dev)
            t += 1.0 + 6.0 * rng.random()
            st.add(t, pref + "up", mode="network/link_up", device=dev)
            t += 2.0 + 10.0 * rng.random()
        st.add(t, pref + "down", mode="network/link_down", device=dev)
        down_s = max(3.0, st.inc["repair_h"] * 3600.0)
        st.add(t + down_s, pref + "up", mode="network/link_up", device=dev)
    elif mode in ("host/memory_ue", "host/memory_ce"):
        mc = int(dev[2:])
        kind = "UE" if mode == "host/memory_ue" else "CE"
        chan = int(rng.integers(0, 8))
        n_lines = 1 if kind == "UE" else int(rng.integers(1, 4))
        if kind == "UE":
            st.add(-0.002, f"EDAC sbridge MC{mc}: HANDLING MCE MEMORY ERROR")
        for i in range(n_lines):
            count = 1 if kind == "UE" else int(rng.integers(1, 6))
            st.add(
                i * (30.0 + 60.0 * rng.random()),
                f"EDAC MC{mc}: {count} {kind} memory read error on "
                f"CPU_SrcID#{mc // 2}_MC#{mc}_Chan#{chan}_DIMM#0 (channel:{chan} "
                f"slot:0 page:0x{_hex(rng, 5)} offset:0x0 grain:32 syndrome:0x0 - "
                f"err_code:0x0000:0x009f socket:{mc // 2} imc:{mc} rank:0 bg:0 ba:0 "
                f"row:0x{_hex(rng, 4)} col:0x0)",
                mode=mode,
                code=kind,
                device=dev,
            )
    elif mode == "host/mce":
        cpu = int(dev[3:])
        st.add(
            0.0,
            f"mce: [Hardware Error]: CPU {cpu}: Machine Check: 0 Bank 5: "
            f"be{_hex(rng, 14)}",
            mode=mode,
            device=dev,
        )
        st.add(
            0.001,
            "mce: [Hardware Error]: RIP !INEXACT! 10:<ffffffff8104d4d5> "
            "{intel_idle+0x95/0x140}",
        )
        st.add(
            0.002,
            f"mce: [Hardware Error]: TSC {_hex(rng, 11)} ADDR {_hex(rng, 7)} "
            f"MISC {_hex(rng, 10)}",
        )
        st.add(0.003, "mce: [Hardware Error]: Run the above through 'mcelog --ascii'")
    elif mode == "network/nccl_error":
        k = int(dev.split("_")[1])
        rank = int(rng.integers(0, 8))
        tid = st.pid + int(rng.integers(1, 200))
        pre = f"{host}:{st.pid}:{tid} [{rank}] "
        tag = f"python3[{st.pid}]"
        peer = ".".join(str(int(x)) for x in rng.integers(1, 255, size=3))
        st.add(
            0.0,
            pre + "transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from "
            f"peer 10.{peer}<{int(rng.integers(30000, 60000))}> with status=12 "
            "opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.0.0.1 "
            f"remoteGidsfe80::1 hca mlx5_{k}",
            mode=mode,
            code="wc_status:12",
            device=f"mlx5_{k}",
            stream="user",
            tag=tag,
        )
        st.add(
            0.001, pre + "NCCL INFO transport/net.cc:1134 -> 6", stream="user", tag=tag
        )
    elif mode == "network/nccl_watchdog":
        rank = int(rng.integers(0, 4096))
        seq = int(rng.integers(1, 10**6))
        tag = f"python3[{st.pid}]"
        st.add(
            0.0,
            f"[rank{rank}]:[E ProcessGroupNCCL.cpp:563] [Rank {rank}] Watchdog "
            f"caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
            "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, "
            "Timeout(ms)=600000) ran for 600017 milliseconds before timing out.",
            mode=mode,
            stream="user",
            tag=tag,
        )
        st.add(
            0.002,
            f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1537] [PG 0 Rank {rank}] Timeout "
            f"at NCCL work: {seq}, last enqueued NCCL work: {seq}, last completed "
            f"NCCL work: {seq - 1}.",
            stream="user",
            tag=tag,
        )


def storm_lines(
    incidents: pl.DataFrame,
    hosts: list[str],
    rng: np.random.Generator,
    *,
    gpu_model: str = "H100",
) -> pl.DataFrame:
    """Draw the log lines of every logged incident (columns :data:`LINE_SCHEMA`).

    ``gpu_model`` picks the Xid codes an uncorrectable memory error prints:
    48, 94, 95 on A100; also 140 on H100.
    """
    rows: list[dict] = []
    for inc in incidents.filter(pl.col("logged")).iter_rows(named=True):
        st = _Storm(inc, rng, gpu_model)
        if inc["failure_mode"].startswith("gpu/"):
            _gpu_storm(st)
        else:
            _node_storm(st, hosts[inc["node"]])
        rows.extend(st.rows)
    return pl.DataFrame(rows, schema=LINE_SCHEMA, orient="row")


# -- boots and noise ----------------------------------------------------------------
_BIG = (1, 60000)
#: A field filled with the line's own Unix time (audit stamps), not drawn.
_EPOCH = (-1, -1)
#: Kernel noise: message format and the (low, high) range of each field.
_KERNEL_NOISE: list[tuple[str, list[tuple[int, int]]]] = [
    (
        "perf: interrupt took too long ({} > {}), lowering "
        "kernel.perf_event_max_sample_rate to {}",
        [(2501, 9999), (2500, 2500), (10000, 79750)],
    ),
    ("IPv6: ADDRCONF(NETDEV_CHANGE): ib{}: link becomes ready", [(0, 7)]),
    (
        'audit: type=1400 audit({}.{}:{}): apparmor="DENIED" '
        'operation="open" profile="snap.lxd.daemon" name="/proc/{}/mounts" '
        'comm="lxd"',
        [_EPOCH, (100, 999), (100, 9999), _BIG],
    ),
    ("EXT4-fs (nvme0n1p2): re-mounted. Opts: errors=remount-ro. Quota mode: none.", []),
    ("loop{}: detected capacity change from 0 to {}", [(0, 31), (8, 409600)]),
    ("nvme nvme{}: I/O {} QID {} timeout, completion polled", [(0, 7), _BIG, (1, 64)]),
    (
        "TCP: request_sock_TCP: Possible SYN flooding on port {}. Sending cookies.  "
        "Check SNMP counters.",
        [(29500, 29510)],
    ),
]
#: User-space noise: tag format, tag field ranges, message format, field ranges.
_USER_NOISE: list[tuple[str, list[tuple[int, int]], str, list[tuple[int, int]]]] = [
    ("systemd[1]", [], "Started Session {} of User root.", [_BIG]),
    ("systemd[1]", [], "session-{}.scope: Deactivated successfully.", [_BIG]),
    (
        "CRON[{}]",
        [_BIG],
        "(root) CMD (   cd / && run-parts --report /etc/cron.hourly)",
        [],
    ),
    (
        "sshd[{}]",
        [_BIG],
        "Accepted publickey for root from 10.{}.{}.{} port {} ssh2",
        [(0, 255), (0, 255), (1, 254), (32768, 60999)],
    ),
    (
        "slurmd[{}]",
        [(1000, 9999)],
        "launch task StepId={}.0 request from UID:{} GID:{}",
        [(1001, 999999), (10001, 10300), (10001, 10300)],
    ),
    (
        "chronyd[{}]",
        [(500, 2000)],
        "Selected source 10.0.0.{} (ntp{}.cluster)",
        [(1, 4), (1, 4)],
    ),
    (
        "dcgm-exporter[{}]",
        [(1000, 9999)],
        'level=info msg="Collected {} metrics"',
        [(50, 200)],
    ),
]


def _fill(
    fmt: str,
    ranges: list[tuple[int, int]],
    n: int,
    rng: np.random.Generator,
    epoch: np.ndarray | None = None,
) -> pl.Series:
    if n == 0:
        return pl.Series([], dtype=pl.String)
    if not ranges:
        return pl.Series([fmt] * n, dtype=pl.String)
    cols = {
        f"f{i}": epoch if r == _EPOCH else rng.integers(r[0], r[1] + 1, size=n)
        for i, r in enumerate(ranges)
    }
    return pl.DataFrame(cols).select(pl.format(fmt, *map(pl.col, cols))).to_series()


def noise_lines(
    cfg: SimConfig, nodes: np.ndarray, rng: np.random.Generator
) -> pl.DataFrame:
    """Ordinary lines (no failure keyword) of some hosts over the span."""
    from scipy import stats

    lam = cfg.noise_lines_per_node_day * cfg.days
    counts = np.atleast_1d(stats.poisson.rvs(lam, size=nodes.size, random_state=rng))
    total = int(counts.sum())
    node = np.repeat(nodes, counts)
    t_h = rng.random(total) * cfg.horizon_h
    epoch0 = int(cfg.start.timestamp())
    t_s = (t_h * 3600.0).astype(np.int64)
    kernel = rng.random(total) < 0.4
    parts = []
    for is_kernel, templates in ((True, _KERNEL_NOISE), (False, _USER_NOISE)):
        idx = np.flatnonzero(kernel == is_kernel)
        which = rng.integers(0, len(templates), size=idx.size)
        for k, tpl in enumerate(templates):
            sel = idx[which == k]
            if not sel.size:
                continue
            if is_kernel:
                fmt, ranges = tpl  # type: ignore[misc]
                tags = pl.Series(["kernel"] * sel.size)
            else:
                tag_fmt, tag_ranges, fmt, ranges = tpl  # type: ignore[misc]
                tags = _fill(tag_fmt, tag_ranges, sel.size, rng)
            parts.append(
                pl.DataFrame(
                    {
                        "t_h": t_h[sel],
                        "node": node[sel],
                        "stream": "kernel" if is_kernel else "user",
                        "tag": tags,
                        "msg": _fill(
                            fmt, ranges, sel.size, rng, epoch=epoch0 + t_s[sel]
                        ),
                    }
                )
            )
    if not parts:
        return pl.DataFrame(
            schema={k: LINE_SCHEMA[k] for k in ("t_h", "node", "stream", "tag", "msg")}
        )
    return pl.concat(parts, how="vertical_relaxed")


def boot_lines(
    boots: list[tuple[int, float]], cfg: SimConfig, uuids: dict[int, list[str]]
) -> pl.DataFrame:
    """Kernel lines of each boot: version, driver load, GPU UUID map."""
    rows = []
    linux, driver = banners(cfg.start)
    for node, t in boots:
        rows.append((t, node, linux))
        rows.append((t + 12.0 * _S, node, driver))
        for g in range(cfg.gpus_per_node):
            rows.append(
                (
                    t + (13.0 + 0.1 * g) * _S,
                    node,
                    f"NVRM: GPU at PCI:0000:{GPU_BUS[g]}:00: {uuids[node][g]}",
                )
            )
        for port in range(2):
            rows.append(
                (
                    t + (9.0 + port) * _S,
                    node,
                    f"mlx5_core 0000:{NIC_BUS[port]}:00.0 {nic_netdev(port)}: "
                    "renamed from eth0",
                )
            )
    return pl.DataFrame(
        rows,
        schema={"t_h": pl.Float64, "node": pl.Int64, "msg": pl.String},
        orient="row",
    ).with_columns(stream=pl.lit("kernel"), tag=pl.lit("kernel"))


def closing_lines(
    cfg: SimConfig, nodes: np.ndarray, framings: list[str]
) -> pl.DataFrame:
    """Return the last line of each log file, one microsecond before the end.

    Logs are collected at the end of the span, so each file ends there, as a
    collected log does (its last line is ordinary, not a failure): rsyslog's
    files with the ``rsyslogd was HUPed`` line of the log rotation, journal
    exports (``iso``, and the ``.syslog`` of ``dmesg`` hosts) with logrotate's
    systemd line, ``dmesg`` files with the kernel's audit record of it. relkit
    reads a host's observation up to the last line of its logs
    (``log_end_ts``), so the hosts are observed over the whole span even when
    nothing else is logged near its end.
    """
    end_us = round(cfg.horizon_h * 3.6e9)
    t_h = (end_us - 1) / 3.6e9
    epoch = int((cfg.start.timestamp() * 1e6 + end_us - 1) // 1e6)
    rows = []
    for node in nodes.tolist():
        framing = framings[node]
        pid = 700 + (node * 7919) % 2000
        journal = ("user", "systemd[1]", "logrotate.service: Deactivated successfully.")
        if framing in DMESG:
            serial = 1000 + node % 9000
            rows.append(
                (
                    t_h,
                    node,
                    "kernel",
                    "kernel",
                    f"audit: type=1131 audit({epoch}.{(end_us - 1) % 10**6 // 1000:03d}"
                    f":{serial}): pid=1 uid=0 auid=4294967295 ses=4294967295 "
                    'subj=unconfined msg=\'unit=logrotate comm="systemd" '
                    'exe="/usr/lib/systemd/systemd" hostname=? addr=? terminal=? '
                    "res=success'",
                )
            )
            rows.append((t_h, node, *journal))
        elif framing == "iso":
            rows.append((t_h, node, *journal))
        else:
            rows.append(
                (
                    t_h,
                    node,
                    "user",
                    "rsyslogd",
                    '[origin software="rsyslogd" swVersion="8.2112.0" '
                    f'x-pid="{pid}" x-info="https://www.rsyslog.com"] rsyslogd '
                    "was HUPed",
                )
            )
    return pl.DataFrame(
        rows,
        schema={
            "t_h": pl.Float64,
            "node": pl.Int64,
            "stream": pl.String,
            "tag": pl.String,
            "msg": pl.String,
        },
        orient="row",
    )


# -- framing ------------------------------------------------------------------------
def _format(frame: pl.DataFrame, cfg: SimConfig) -> pl.Series:
    """Render lines (``ts``, ``framing``, ``host``, ``tag``, ``msg``, ``mono``)."""
    ts = pl.col("ts")
    local = ts.dt.convert_time_zone(cfg.local_tz)
    mono_us = (pl.col("mono") * 1e6).round(0).cast(pl.Int64)
    mono = pl.format(
        "[{}.{}] ",
        (mono_us // 1_000_000).cast(pl.String).str.pad_start(5, " "),
        (mono_us % 1_000_000).cast(pl.String).str.pad_start(6, "0"),
    )
    head = pl.format("{} {}: ", pl.col("host"), pl.col("tag"))
    framing = pl.col("framing")
    kernel = pl.col("stream") == "kernel"
    line = (
        pl.when(framing == "iso")
        .then(pl.concat_str(ts.dt.strftime("%Y-%m-%dT%H:%M:%S+0000 "), head))
        .when(framing == "rfc3339")
        .then(pl.concat_str(ts.dt.strftime("%Y-%m-%dT%H:%M:%S%.6f+00:00 "), head))
        .when(framing == "rfc3164")
        .then(
            pl.concat_str(
                local.dt.strftime("%b %e %H:%M:%S "),
                head,
                pl.when(kernel).then(mono).otherwise(pl.lit("")),
            )
        )
        .when(framing == "dmesg_T")
        .then(local.dt.strftime("[%a %b %e %H:%M:%S %Y] "))
        .otherwise(ts.dt.strftime("kern  :info  : %Y-%m-%dT%H:%M:%S,%6f+00:00 "))
    )
    return frame.select(pl.concat_str(line, pl.col("msg"))).to_series()


def write_kernel_logs(
    out: Path,
    cfg: SimConfig,
    *,
    hosts: list[str],
    framings: list[str],
    boot_h: np.ndarray,
    storms: pl.DataFrame,
    reboots: list[tuple[int, float]],
    uuids: dict[int, list[str]],
    rng: np.random.Generator,
    progress: Callable[[str], None] | None = None,
) -> int:
    """Write every host's log under ``out``, a batch of hosts at a time.

    Returns the number of lines written. Each host's lines are sorted by time;
    lines after the end of the span are not written (the logs were collected
    then), and each file ends with an ordinary line just before the span ends
    (:func:`closing_lines`), so every host has a log even with no other line.
    """
    out.mkdir(parents=True, exist_ok=True)
    start = cfg.start
    horizon = cfg.horizon_h
    n_nodes = len(hosts)
    n_batches = math.ceil(n_nodes / HOST_BATCH)
    streams = rng.spawn(n_batches)
    reb = pl.DataFrame(
        reboots, schema={"node": pl.Int64, "t_h": pl.Float64}, orient="row"
    )
    written = 0
    every = max(1, n_batches // 10)
    for b in range(n_batches):
        lo, hi = b * HOST_BATCH, min(n_nodes, (b + 1) * HOST_BATCH)
        nodes = np.arange(lo, hi)
        noise = noise_lines(cfg, nodes, streams[b])
        these = reb.filter(pl.col("node").is_between(lo, hi - 1))
        boots = boot_lines(
            list(zip(these["node"].to_list(), these["t_h"].to_list(), strict=True)),
            cfg,
            uuids,
        )
        ev = storms.filter(pl.col("node").is_between(lo, hi - 1)).select(
            "t_h", "node", "stream", "tag", "msg"
        )
        cols = ["t_h", "node", "stream", "tag", "msg"]
        last = closing_lines(cfg, nodes, framings)
        lines = pl.concat(
            [ev.select(cols), boots.select(cols), noise.select(cols), last],
            how="vertical_relaxed",
        ).with_row_index("_seq")
        lines = lines.filter((pl.col("t_h") >= 0) & (pl.col("t_h") < horizon))
        # the kernel clock: seconds since the node's last boot
        boot_table = pl.concat(
            [
                pl.DataFrame({"node": nodes, "boot_h": boot_h[lo:hi]}),
                these.rename({"t_h": "boot_h"}),
            ]
        ).sort("boot_h")
        lines = (
            lines.sort("t_h")
            .join_asof(
                boot_table,
                left_on="t_h",
                right_on="boot_h",
                by="node",
                check_sortedness=False,
            )
            .with_columns(
                mono=((pl.col("t_h") - pl.col("boot_h")) * 3600.0).clip(0.0),
                ts=pl.lit(start).dt.cast_time_unit("us")
                + pl.duration(microseconds=(pl.col("t_h") * 3.6e9).round(0)),
                host=pl.col("node").replace_strict(
                    dict(enumerate(hosts)), return_dtype=pl.String
                ),
                framing=pl.col("node").replace_strict(
                    dict(enumerate(framings)), return_dtype=pl.String
                ),
            )
        )
        lines = lines.with_columns(
            file=pl.when(pl.col("framing").is_in(DMESG) & (pl.col("stream") == "user"))
            .then(pl.format("{}.syslog", pl.col("host")))
            .otherwise(pl.format("{}.log", pl.col("host"))),
            framing=pl.when(
                pl.col("framing").is_in(DMESG) & (pl.col("stream") == "user")
            )
            .then(pl.lit("iso"))
            .otherwise(pl.col("framing")),
        ).sort("file", "t_h", "_seq")
        text = lines.select("file", line=_format(lines, cfg))
        for (name,), part in text.group_by("file", maintain_order=True):
            body = "\n".join(part["line"].to_list()) + "\n"
            (out / str(name)).write_text(body, encoding="utf-8")
            written += part.height
        if progress is not None and (b + 1) % every == 0:
            progress(f"kernel logs: {hi:,} of {n_nodes:,} hosts, {written:,} lines")
    return written
