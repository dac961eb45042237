"""The fleet (hosts, racks, batches, lemons) and its failure processes."""

import math
from dataclasses import dataclass

import numpy as np
import polars as pl

from relkit.simulate._config import SimConfig
from relkit.simulate._modes import BEHAVIOUR

#: PCI bus of each GPU of an HGX H100 board, in GPU index order.
GPU_BUS = ("18", "2a", "3a", "5d", "9a", "ab", "ba", "db")
#: PCI bus of each compute NIC (ConnectX-7, RoCE) and its netdev name.
NIC_BUS = ("1a", "40", "53", "66", "9c", "c0", "ce", "e4")
#: PCI bus of the four NVSwitches.
SWITCH_BUS = ("05", "06", "07", "08")
N_MEMORY_CONTROLLERS = 4
N_CPUS = 112

#: Minimum hours between two incidents of one (host, device): storms never merge.
SEPARATION_H = 0.5


def gpu_pci(gpu: int) -> str:
    """Normalised PCI address (``0000:18:00``) of GPU ``gpu``."""
    return f"0000:{GPU_BUS[gpu]}:00"


def nic_netdev(port: int) -> str:
    """RoCE netdev name of NIC ``port`` (``enp26s0np0``)."""
    return f"enp{int(NIC_BUS[port], 16)}s0np0"


def host_names(config: SimConfig) -> list[str]:
    """Host names ``<prefix><number>``, zero padded to the fleet's width."""
    width = max(3, len(str(config.nodes)))
    return [f"{config.host_prefix}{i + 1:0{width}d}" for i in range(config.nodes)]


@dataclass(frozen=True)
class Fleet:
    """Hosts and their per-node rate multipliers (hardware modes)."""

    hosts: list[str]
    rack: np.ndarray
    batch: np.ndarray
    lemon: np.ndarray
    multiplier: np.ndarray

    def assets(self, config: SimConfig) -> pl.DataFrame:
        """Return the fleet in the ``--kind assets`` shape (one row per host)."""
        start = config.start.strftime("%Y-%m-%dT%H:%M:%SZ")
        names = [b[0] for b in config.batches]
        partition = np.full(config.nodes, "batch", dtype=object)
        partition[: config.run_nodes + config.spare_nodes] = "train"
        return pl.DataFrame(
            {
                "host": self.hosts,
                "in_service_ts": [start] * config.nodes,
                "out_of_service_ts": [""] * config.nodes,
                "gpus": [config.gpus_per_node] * config.nodes,
                "system": [config.name] * config.nodes,
                "rack": [f"r{r + 1:03d}" for r in self.rack.tolist()],
                "batch": [names[b] for b in self.batch.tolist()],
                "partition": partition.tolist(),
            }
        )


def build_fleet(config: SimConfig, rng: np.random.Generator) -> Fleet:
    """Draw the fleet: racks in order, batches at random, lemon nodes at random.

    Hardware rates are multiplied per node by the batch's multiplier and, on
    lemon nodes, by ``lemon_multiplier``; the multipliers are normalised to a
    fleet mean of 1, so a process's rate stays the fleet-average rate.
    """
    n = config.nodes
    fracs = np.array([b[1] for b in config.batches], dtype=float)
    batch = rng.choice(len(fracs), size=n, p=fracs / fracs.sum())
    mult = np.array([b[2] for b in config.batches], dtype=float)[batch]
    lemon = np.zeros(n, dtype=bool)
    if config.lemon_nodes:
        lemon[rng.choice(n, size=config.lemon_nodes, replace=False)] = True
    mult = mult * np.where(lemon, config.lemon_multiplier, 1.0)
    mean = mult.mean()
    mult = mult / mean if mean > 0 else np.ones(n)
    return Fleet(
        hosts=host_names(config),
        rack=np.arange(n) // config.nodes_per_rack,
        batch=batch,
        lemon=lemon,
        multiplier=mult,
    )


def _exponential_times(
    rates: np.ndarray,
    horizon_h: float,
    rng: np.random.Generator,
    trend: float = 1.0,
) -> tuple[np.ndarray, np.ndarray]:
    """Poisson process per unit with the given mean rates: (unit index, time h).

    With ``trend`` β != 1 the process is the power-law NHPP of intensity
    ``rate β (t/T)^(β-1)``: given its count, each time is ``T U^(1/β)`` for a
    uniform ``U`` (the inverse of Λ(t)/Λ(T) = (t/T)^β), drawn from the same
    uniforms as the constant-rate process.
    """
    from scipy import stats

    counts = stats.poisson.rvs(rates * horizon_h, random_state=rng)
    counts = np.atleast_1d(np.asarray(counts, dtype=np.int64))
    units = np.repeat(np.arange(rates.size), counts)
    times = stats.uniform.rvs(
        loc=0.0, scale=horizon_h, size=int(counts.sum()), random_state=rng
    )
    times = np.atleast_1d(np.asarray(times, dtype=float))
    if trend != 1.0:
        times = horizon_h * (times / horizon_h) ** (1.0 / trend)
    return units, times


def _weibull_times(
    rates: np.ndarray, shape: float, horizon_h: float, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Weibull renewal process per unit from age 0: (unit index, time h).

    The scale of each unit gives a mean life 1/rate: η = 1/(rate Γ(1 + 1/β)).
    """
    from scipy import stats

    live = rates > 0
    idx = np.flatnonzero(live)
    scale = 1.0 / (rates[idx] * math.gamma(1.0 + 1.0 / shape))
    clock = np.zeros(idx.size)
    out_u, out_t = [], []
    while idx.size:
        gaps = stats.weibull_min.rvs(shape, scale=scale, random_state=rng)
        clock = clock + np.atleast_1d(gaps)
        hit = clock < horizon_h
        out_u.append(idx[hit])
        out_t.append(clock[hit])
        idx, scale, clock = idx[hit], scale[hit], clock[hit]
    if not out_u:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    return np.concatenate(out_u), np.concatenate(out_t)


def _device(mode: str, gpu: int, sub: int) -> str | None:
    """Return the device key the kernel ingest gives a failure of ``mode``."""
    if BEHAVIOUR[mode].unit == "gpu":
        return gpu_pci(gpu)
    if mode == "network/link_down":
        return f"0000:{NIC_BUS[sub % 8]}:00 {nic_netdev(sub % 8)}"
    if mode == "network/nccl_error":
        return f"mlx5_{sub % 8}"
    if mode == "nvswitch/sxid":
        return f"0000:{SWITCH_BUS[sub % 4]}:00"
    if mode in ("host/memory_ue", "host/memory_ce"):
        return f"mc{sub % N_MEMORY_CONTROLLERS}"
    if mode == "host/mce":
        return f"cpu{sub % N_CPUS}"
    return None


def draw_failures(
    config: SimConfig, fleet: Fleet, rng: np.random.Generator
) -> pl.DataFrame:
    """Draw every candidate failure of every process over the span.

    Returns one row per candidate, sorted by time: ``failure_mode``, ``node``
    (index), ``gpu`` (index, -1 for node modes), ``device``, ``t_h`` (hours
    since start), ``repair_h`` (drawn, 0 when the mode does not drain).
    Job-dependent candidates are realised later only where a job runs.
    Candidates of one (host, device) closer than :data:`SEPARATION_H` after the
    previous one's end (a link stays down until repaired) are moved later, so
    no two storms merge into one incident.
    """
    from scipy import stats

    horizon = config.horizon_h
    g = config.gpus_per_node
    parts = []
    for p in config.processes:
        b = BEHAVIOUR[p.failure_mode]
        if p.rate_per_unit_h <= 0:
            continue
        n_units = config.nodes * (g if b.unit == "gpu" else 1)
        node_of = np.arange(n_units) // (g if b.unit == "gpu" else 1)
        hardware = not b.job_dependent and b.counts_as_failure
        mult = fleet.multiplier[node_of] if hardware else np.ones(n_units)
        rates = p.rate_per_unit_h * mult
        if p.weibull_shape == 1.0:
            trend = config.rate_trend if hardware else 1.0
            units, times = _exponential_times(rates, horizon, rng, trend)
        else:
            units, times = _weibull_times(rates, p.weibull_shape, horizon, rng)
        order = np.lexsort((units, times))
        units, times = units[order], times[order]
        k = units.size
        repair_mean = p.repair_h if p.repair_h is not None else b.repair_h
        repair = (
            np.atleast_1d(stats.expon.rvs(scale=repair_mean, size=k, random_state=rng))
            if (b.drains or p.failure_mode == "network/link_down") and k
            else np.zeros(k)
        )
        sub = rng.integers(0, 1 << 16, size=k)
        parts.append(
            pl.DataFrame(
                {
                    "failure_mode": [p.failure_mode] * k,
                    "node": (units // g if b.unit == "gpu" else units).astype(np.int64),
                    "gpu": (units % g if b.unit == "gpu" else np.full(k, -1)).astype(
                        np.int64
                    ),
                    "sub": sub.astype(np.int64),
                    "t_h": times.astype(float),
                    "repair_h": repair.astype(float),
                },
                schema={
                    "failure_mode": pl.String,
                    "node": pl.Int64,
                    "gpu": pl.Int64,
                    "sub": pl.Int64,
                    "t_h": pl.Float64,
                    "repair_h": pl.Float64,
                },
            )
        )
    schema = {
        "failure_mode": pl.String,
        "node": pl.Int64,
        "gpu": pl.Int64,
        "device": pl.String,
        "t_h": pl.Float64,
        "repair_h": pl.Float64,
    }
    if not parts:
        return pl.DataFrame(schema=schema)
    cand = pl.concat(parts)
    devices = [
        _device(m, gpu, s)
        for m, gpu, s in zip(
            cand["failure_mode"].to_list(),
            cand["gpu"].to_list(),
            cand["sub"].to_list(),
            strict=True,
        )
    ]
    cand = cand.with_columns(device=pl.Series(devices, dtype=pl.String)).drop("sub")
    return _separate(cand, horizon).select(list(schema)).sort("t_h", "node", "gpu")


def _separate(cand: pl.DataFrame, horizon_h: float) -> pl.DataFrame:
    """Move candidates of one (node, device) apart; drop those pushed past the end."""
    cand = cand.sort("node", "device", "t_h", nulls_last=True)
    nodes = cand["node"].to_list()
    devices = cand["device"].to_list()
    modes = cand["failure_mode"].to_list()
    t = cand["t_h"].to_numpy().copy()
    repair = cand["repair_h"].to_numpy()
    prev_key: tuple[int, str | None] | None = None
    busy_until = -math.inf
    for i in range(t.size):
        key = (nodes[i], devices[i])
        if key != prev_key:
            prev_key, busy_until = key, -math.inf
        t[i] = max(t[i], busy_until + SEPARATION_H)
        span = repair[i] if modes[i] == "network/link_down" else 0.1
        busy_until = t[i] + span
    return cand.with_columns(t_h=pl.Series(t)).filter(pl.col("t_h") < horizon_h)
