"""Lemon nodes from the store's tables (composition over relkit.repairable)."""

import warnings
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import polars as pl

from relkit._answers_survival import gpu_failures
from relkit.errors import InsufficientDataError, RelkitWarning
from relkit.observation import LOG_WINDOW_MIN, observe, restrict_to_mode, split_by
from relkit.repairable import DEFAULT_FDR, lemon_units

__all__ = ["LEMON_FIELDS", "lemons"]

#: ``relkit lemons --format json`` row fields (issue 12 §5), in order.
LEMON_FIELDS = (
    "host",
    "n_failures",
    "expected",
    "p_value",
    "q_value",
    "modes",
    "n_devices",
    "exposure_h",
    "lemon",
)


def lemons(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    failure_mode: str | None = None,
    unit: Literal["node", "gpu"] = "node",
    fdr: float = DEFAULT_FDR,
    within: Sequence[str] = ("system",),
    by_mode: bool = False,
    baseline: Literal["fleet", "others"] = "fleet",
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    window_min: float | None = None,
    gpus_per_node: int = 8,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
    count_unknown_xid: bool = False,
) -> pl.DataFrame:
    """Find the lemon nodes (or GPUs) of a store: failure counts improbably high.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables. Failures and time at risk
        follow the observation model (:func:`relkit.observation.observe`):
        kernel-log signals are incidents already, and repeats of one unit
        within the incident window (10 min, or ``window_min``) count once.
    failure_mode : str, optional
        Test only this mode's failures against this mode's fleet rate
        (:func:`relkit.observation.restrict_to_mode`: a mode such as
        ``gpu/hang``, or a root cause such as ``gpu`` for all of its modes).
    unit : {"node", "gpu"}, default "node"
        Test hosts, or GPUs (host + device). With ``"gpu"`` only failures of
        GPU modes count (the rule of ``relkit survival --unit gpu``,
        :func:`relkit.answers.gpu_mode`); failures of other modes are left
        out with a warning giving their number. A GPU failure naming no
        device counts in the fleet rate, but the GPUs of its host are not
        tested (which one failed is unknown; warned). The units are each
        host's ``gpus`` GPUs.
    fdr : float, default 0.05
        False-discovery rate (Benjamini-Hochberg) at which a unit is a lemon.
    within : sequence of str, default ("system",)
        Unit attributes whose groups each get their own fleet rate: by
        default a node is compared with the nodes of its own system, which
        matters only when the store holds several systems (LANL: 22), and
        is then said in a warning. ``()`` compares every unit with the whole
        store's rate.
    by_mode : bool, default False
        One test per (unit, failure mode), as
        :func:`relkit.repairable.lemon_units`.
    baseline : {"fleet", "others"}, default "fleet"
        The rate of the whole group, or of the rest of the group
        (leave-one-out), as :func:`relkit.repairable.lemon_units` (which says
        why the whole group's is the default).
    window_start, window_end : datetime, optional
        Observation window (UTC), as :func:`relkit.answers.mtbf_by`.
    window_min : float, optional
        Incident window, minutes (default 10 for log signals); also the burst
        window within which repeats of one unit count once.
    gpus_per_node : int, default 8
        GPUs per host when the assets leave ``gpus`` empty (``unit="gpu"``).
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.
    count_unknown_xid : bool, default False
        Count Xid codes outside NVIDIA's catalogue as failures.

    Returns
    -------
    pl.DataFrame
        As :func:`relkit.repairable.lemon_units` (``within`` columns first,
        then ``host``, ``n_failures``, ``exposure_h``, ``expected``,
        ``ratio``, ``p_value``, ``q_value``, ``lemon``, ``modes``,
        ``n_devices``, ``n_folded``), sorted by ``p_value``.

    Raises
    ------
    InsufficientDataError
        If no unit has time at risk, there is no failure (of
        ``failure_mode``), or as :func:`relkit.observation.observe`.
    SchemaError
        If a ``within`` column is not a unit attribute.

    Warns
    -----
    RelkitWarning
        Failures outside every window of their unit (left out), several
        systems compared within their own system, and the notes of
        :func:`relkit.repairable.lemon_units`.

    Notes
    -----
    The test and its sources (exact Poisson tail; Benjamini and Hochberg
    1995, doi:10.1111/j.2517-6161.1995.tb02031.x) are in
    :func:`relkit.repairable.lemon_units`.
    """
    obs = observe(
        events,
        assets,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
        window_start=window_start,
        window_end=window_end,
        window_min=window_min,
        gpus_per_node=gpus_per_node,
        count_unknown_xid=count_unknown_xid,
    )
    within = list(dict.fromkeys(within))
    split_by(within, obs.windows, obs.failures, attributes=obs.attributes)
    if obs.excluded.height:
        warnings.warn(
            f"{obs.excluded.height} failure(s) outside every service window of "
            "their unit are left out (relkit.answers.excluded_failures lists them).",
            RelkitWarning,
            stacklevel=2,
        )
    obs = restrict_to_mode(obs, failure_mode)
    failures = obs.failures
    if failures.height == 0:
        msg = (
            "no failure in the store's observation windows, so no unit can be a "
            "lemon; ingest the failure logs (relkit ingest)."
        )
        raise InsufficientDataError(msg)
    if unit == "gpu":
        # one rule with relkit survival --unit gpu: failures of GPU modes only;
        # those naming no device are handled (and said) by lemon_units
        split = gpu_failures(failures)
        failures = pl.concat([split.failures, split.no_device])
        if split.n_other_modes:
            warnings.warn(
                f"{split.n_other_modes} failure(s) of non-GPU modes (network, "
                "NVSwitch, host, software...) are not counted per GPU: --unit "
                "node counts them.",
                RelkitWarning,
                stacklevel=2,
            )
        if failures.height == 0:
            msg = (
                f"none of the {split.n_other_modes} failure(s) is of a GPU mode "
                "(e.g. gpu/..., hardware/gpu_hbm), so no GPU can be a lemon; use "
                "--unit node (library: unit='node')."
            )
            raise InsufficientDataError(msg)
    windows = obs.windows.filter(pl.col("exposure_h") > 0)
    per_device = windows["device"].is_not_null().any()
    node_by = ["host", *[c for c in within if c != "host"]]
    if unit == "gpu" and per_device:
        exposure = obs.exposure([*node_by, "device"], unit="gpu").drop("n_units")
    else:
        exposure = obs.exposure(node_by, unit="node").drop("n_units")
        if unit == "gpu":
            gpus = windows.group_by("host").agg(
                gpus=pl.col("gpus").fill_null(gpus_per_node).max()
            )
            exposure = exposure.join(gpus, on="host", how="left")
    if "system" in within and windows["system"].n_unique() > 1:
        warnings.warn(
            f"{windows['system'].n_unique()} systems: each unit is compared with "
            "the failure rate of its own system (within=('system',); --within "
            "none compares it with the whole store's rate).",
            RelkitWarning,
            stacklevel=2,
        )
    window_h = (window_min if window_min is not None else LOG_WINDOW_MIN) / 60.0
    return lemon_units(
        failures,
        exposure,
        unit=unit,
        within=[c for c in within if c != "host"],
        by_mode=by_mode,
        baseline=baseline,
        fdr=fdr,
        burst_window_h=window_h,
    )
