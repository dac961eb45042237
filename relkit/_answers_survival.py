"""Survival per endpoint, failure mode and unit, from the store's tables.

Composition (private module of :mod:`relkit.answers`, which re-exports the
public names): :func:`relkit.observation.observe` says what was at risk and
when; :mod:`relkit.survival` builds the survival tables and fits them.

Endpoints (issue 12 §2):

- ``"tbf"``: time between failures of a unit (node, GPU or system).
- ``"first-failure"``: a unit's age at its first failure.
- ``"removal"``: a unit's age at removal from service after a failure.

Age is time in service (:func:`relkit.observation.to_service_clock`): a gap
between two service windows is not age.
"""

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal

import polars as pl

from relkit import survival
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InsufficientDataError, RelkitWarning, SchemaError
from relkit.observation import (
    Observation,
    observe,
    restrict_to_mode,
    split_by,
    system_incidents,
    to_service_clock,
)
from relkit.taxonomy import FAILURE_MODES

__all__ = [
    "ENDPOINTS",
    "GPU_COMPONENTS",
    "EndpointTable",
    "GPUFailures",
    "endpoint_table",
    "first_failure_survival",
    "gpu_failures",
    "gpu_mode",
    "survival_by",
    "survival_table",
    "time_between_failures",
]

Endpoint = Literal["tbf", "first-failure", "removal"]
Unit = Literal["node", "gpu", "system"]

#: The survival endpoints, as ``--endpoint`` spells them.
ENDPOINTS: tuple[str, ...] = ("tbf", "first-failure", "removal")

#: The taxonomy's components (:data:`relkit.taxonomy.FAILURE_MODES`) that are
#: parts of a GPU: a failure of a mode with one of them is a failure of a GPU.
GPU_COMPONENTS: tuple[str, ...] = tuple(
    sorted(
        c
        for c in FAILURE_MODES["component"].drop_nulls().unique().to_list()
        if c.startswith("GPU") or c == "NVLink"
    )
)
_TAXONOMY_MODES = FAILURE_MODES["failure_mode"].to_list()
_GPU_TAXONOMY_MODES = FAILURE_MODES.filter(pl.col("component").is_in(GPU_COMPONENTS))[
    "failure_mode"
].to_list()
#: A mode outside the taxonomy names a GPU when ``gpu`` is one of the words
#: of its name (``gpu/...``, ``hardware/gpu_hbm``, ``hardware/gpu_off_bus``).
_GPU_WORD = r"(^|[^a-z0-9])gpus?([^a-z0-9]|$)"


def gpu_mode(column: str = "failure_mode") -> pl.Expr:
    """Select the failure modes that are failures of a GPU (one rule for relkit).

    Parameters
    ----------
    column : str, default "failure_mode"
        The column of failure modes (lower-case strings, ``root/sub``).

    Returns
    -------
    pl.Expr
        Boolean: True for a GPU mode, False otherwise (null mode: False).

    Notes
    -----
    A mode of relkit's taxonomy (:data:`relkit.taxonomy.FAILURE_MODES`) is a
    GPU mode when its ``component`` is a part of a GPU
    (:data:`GPU_COMPONENTS`: GPU, GPU HBM, GPU SRAM, GPU System Processor,
    NVLink, ...); NVSwitch, NIC port, CPU and host memory modes are not, even
    when their events name a PCI device, a netdev, a CPU or a memory
    controller. A mode outside the taxonomy (a user's own events file, e.g.
    the README's ``hardware/gpu_hbm``) is a GPU mode when ``gpu`` is a word of
    its name (``gpu/...``, ``hardware/gpu_off_bus``), since relkit knows
    nothing else about it.

    Examples
    --------
    >>> modes = pl.DataFrame(
    ...     {
    ...         "failure_mode": [
    ...             "gpu/hbm_uncorrectable",
    ...             "nvswitch/sxid",
    ...             "host/mce",
    ...             "hardware/gpu_hbm",
    ...             "network/nic",
    ...         ]
    ...     }
    ... )
    >>> modes.select(gpu_mode())["failure_mode"].to_list()
    [True, False, False, True, False]
    """
    mode = pl.col(column)
    in_taxonomy = mode.is_in(_TAXONOMY_MODES)
    return (
        pl.when(in_taxonomy)
        .then(mode.is_in(_GPU_TAXONOMY_MODES))
        .otherwise(mode.str.to_lowercase().str.contains(_GPU_WORD))
        .fill_null(value=False)
    )


@dataclass(frozen=True)
class GPUFailures:
    """Failures split by the GPU rule (:func:`gpu_failures`).

    Parameters
    ----------
    failures : pl.DataFrame
        The failures of GPU modes that name their device: the ones a GPU
        (``host`` + ``device``) can be charged with.
    no_device : pl.DataFrame
        Failures of GPU modes with no device: a GPU of the host failed, but
        which one is unknown.
    n_other_modes : int
        Failures of modes that are not GPU modes (network, NVSwitch, host,
        software...): they are per node.
    """

    failures: pl.DataFrame
    no_device: pl.DataFrame
    n_other_modes: int

    @property
    def note(self) -> str | None:
        """Say what the rule left out, with the numbers; None when nothing."""
        parts = []
        if self.n_other_modes:
            parts.append(
                f"{self.n_other_modes} failure(s) of non-GPU modes (network, "
                "NVSwitch, host, software...)"
            )
        if self.no_device.height:
            parts.append(
                f"{self.no_device.height} GPU failure(s) with no device (on "
                f"{self.no_device['host'].n_unique()} host(s), e.g. "
                f"{self.no_device['host'].unique().sort().head(3).to_list()})"
            )
        if not parts:
            return None
        return (
            "; ".join(parts)
            + " are not counted per GPU: --unit node counts them (library: "
            "unit='node')"
        )


def gpu_failures(failures: pl.DataFrame) -> GPUFailures:
    """Split failures into GPU failures with a device and the rest.

    Parameters
    ----------
    failures : pl.DataFrame
        Failures with ``host``, ``failure_mode`` and ``device`` (null when
        the event names none).

    Returns
    -------
    GPUFailures
        The failures of GPU modes (:func:`gpu_mode`) that name a device, those
        that name none, and the number of failures of other modes.

    Raises
    ------
    SchemaError
        If ``failures`` lacks ``host``, ``failure_mode`` or ``device``.
    """
    if missing := [
        c for c in ("host", "failure_mode", "device") if c not in failures.columns
    ]:
        msg = (
            f"gpu_failures: failures lack column(s) {missing}; they have "
            f"{failures.columns}."
        )
        raise SchemaError(msg)
    is_gpu = failures.select(gpu_mode())["failure_mode"]
    on_gpu = failures.filter(is_gpu)
    has_device = on_gpu["device"].is_not_null()
    return GPUFailures(
        failures=on_gpu.filter(has_device),
        no_device=on_gpu.filter(~has_device),
        n_other_modes=failures.height - on_gpu.height,
    )


def _unique(by: Sequence[str]) -> list[str]:
    """Return the grouping columns in order, each once."""
    return list(dict.fromkeys(by))


@dataclass(frozen=True)
class EndpointTable:
    """A survival table of one endpoint and what was left out of it.

    Parameters
    ----------
    table : pl.DataFrame
        ``*by, unit_id, entry_h, stop_h, observed`` and ``origin_known``
        (and ``exit`` for ``"removal"``).
    excluded : pl.DataFrame
        ``*by`` keys present and ``n``: failures left out, per group.
    counts : tuple of pl.DataFrame
        Counts per group, each frame with some ``by`` keys and ``n_*``
        columns (``n_origin_unknown`` and the endpoint's own).
    n_node_level : int
        Failures of non-GPU modes (:func:`gpu_mode`), left out of
        ``unit="gpu"`` answers.
    n_gpu_no_device : int
        Failures of GPU modes that name no device, left out of ``unit="gpu"``
        answers (which GPU failed is unknown).
    resolution_h : float or None
        Resolution of the time stamps of the failures (and earlier failures)
        that built the table (:func:`relkit.survival.timestamp_resolution_h`),
        None when there is none.
    """

    table: pl.DataFrame
    excluded: pl.DataFrame
    counts: tuple[pl.DataFrame, ...]
    n_node_level: int = 0
    resolution_h: float | None = None
    n_gpu_no_device: int = 0


def _resolved_unit(endpoint: str, unit: str | None) -> str:
    """Check the endpoint and unit; the default unit of each endpoint."""
    if endpoint not in ENDPOINTS:
        msg = f"unknown endpoint {endpoint!r}; choose one of {list(ENDPOINTS)}."
        raise SchemaError(msg)
    unit = unit or ("system" if endpoint == "tbf" else "node")
    if unit not in ("node", "gpu", "system"):
        msg = f"unknown unit {unit!r}; choose 'node', 'gpu' or 'system'."
        raise SchemaError(msg)
    if unit == "system" and endpoint != "tbf":
        msg = (
            f"endpoint {endpoint!r} is an age of a node or a GPU; a system has no "
            "age in service. Use --unit node or --unit gpu (library: unit='node')."
        )
        raise SchemaError(msg)
    return unit


def _gpu_level() -> pl.Expr:
    """Select failures of a GPU mode (:func:`gpu_mode`) that name their device."""
    return gpu_mode() & pl.col("device").is_not_null()


def _on_gpus(
    obs: Observation, failure_mode: str | None
) -> tuple[pl.DataFrame, pl.DataFrame, pl.DataFrame, pl.DataFrame, GPUFailures]:
    """Windows, failures, prior failures and exclusions with GPUs as units.

    A GPU is ``host:device``. With per-GPU assets its windows are its own;
    with node assets each of a host's ``gpus`` GPUs has the host's windows:
    those named by a failure carry their device, the others are named
    ``host:#k`` and never fail.
    """
    split = gpu_failures(obs.failures)
    failures = split.failures
    if failure_mode is not None and failures.height == 0:
        what = (
            f"is not a GPU mode: its {split.n_other_modes} failure(s) are per node"
            if split.n_other_modes
            else f"names no device in its {split.no_device.height} failure(s), so "
            "no GPU can be charged with them"
        )
        msg = f"mode {failure_mode!r} {what}. Use --unit node (library: unit='node')."
        raise SchemaError(msg)
    prior = obs.prior_failures.filter(_gpu_level())
    excluded = obs.excluded.filter(_gpu_level())
    key = pl.concat_str("host", pl.lit(":"), "device").alias("host")
    windows = obs.windows
    if windows["device"].is_not_null().any():
        windows = windows.filter(pl.col("device").is_not_null()).with_columns(key)
    else:
        named = pl.concat([failures, prior], how="diagonal_relaxed").select(
            "host", "device"
        )
        gpus = windows.group_by("host").agg(_g=pl.col("gpus").max().fill_null(0))
        devices = (
            named.unique()
            .sort("host", "device")
            .group_by("host", maintain_order=True)
            .agg(_named=pl.col("device"))
        )
        per_host = gpus.join(devices, on="host", how="left").with_columns(
            pl.col("_named").fill_null([])
        )
        rows = [
            (host, dev)
            for host, g, named_devs in per_host.iter_rows()
            for dev in [*named_devs, *(f"#{k}" for k in range(len(named_devs), g))]
        ]
        pairs = pl.DataFrame(
            rows, schema={"host": pl.String, "_dev": pl.String}, orient="row"
        )
        windows = (
            windows.drop("device")
            .join(pairs, on="host")
            .with_columns(device=pl.col("_dev"))
            .drop("_dev")
            .with_columns(key)
        )
    return (
        windows,
        failures.with_columns(key),
        prior.with_columns(key),
        excluded.with_columns(key),
        split,
    )


def _count_excluded(
    excluded: pl.DataFrame, windows: pl.DataFrame, by: list[str]
) -> pl.DataFrame:
    """Failures in no window of their unit, per group of ``by`` (``n``)."""
    parts = pl.col("failure_mode").str.split_exact("/", 1)
    ex = excluded.with_columns(
        root_cause=parts.struct.field("field_0"),
        sub_cause=pl.coalesce(
            parts.struct.field("field_1"), parts.struct.field("field_0")
        ),
    )
    attrs = [c for c in by if c not in ex.columns and c in windows.columns]
    if attrs:
        host_attrs = windows.select("host", *attrs).unique("host", keep="first")
        ex = ex.join(host_attrs, on="host", how="left")
    keys = [c for c in by if c in ex.columns]
    if not keys:
        return pl.DataFrame({"n": [ex.height]})
    return ex.group_by(keys).agg(n=pl.len())


def _tbf_endpoint(
    obs: Observation,
    windows: pl.DataFrame,
    failures: pl.DataFrame,
    prior: pl.DataFrame,
    *,
    by: list[str],
    unit: str,
    window_end: datetime | None,
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Time-between-failures table and its exclusions (per ``unit``)."""
    args: dict = {"unit": "system" if unit == "system" else "node", "by": by}
    if unit == "system":
        unit_by, _ = split_by(by, obs.windows, obs.failures, attributes=obs.attributes)
        if bad := [c for c in unit_by if c != "system"]:
            msg = (
                f"cannot group the system's time between failures by {bad}: a "
                "system's outages span its nodes. Group by system and failure "
                "attributes, or use per-node gaps (--unit node; library: "
                "unit='node')."
            )
            raise SchemaError(msg)
        event_by = [c for c in by if c != "system"]
        keys = ["system", *event_by]
        failures = system_incidents(failures, by=keys)
        prior = system_incidents(prior, by=keys).with_columns(prior=pl.lit(True))
        both = pl.concat([failures, prior], how="diagonal_relaxed")
        windows = windows.filter(pl.col("exposure_h") > 0)
        end = obs.observed_until if window_end is None else window_end
        if end is None:
            end = windows["out_of_service_ts"].max()
    else:
        windows, both = to_service_clock(windows, failures, prior)
        end = windows["out_of_service_ts"].max()
    args["window_end"] = end
    table = survival.build_tbf_table(both, windows, with_origin=True, **args)
    excluded = survival.build_tbf_exclusions(both, windows, **args)
    return table, excluded


#: Reason of :func:`relkit.survival.build_tbf_exclusions` for a failure that
#: is the first record of a unit with no known start: the origin of its clock.
_ORIGIN_REASON = "first gap of a unit that entered observation at this failure"


def _split_origin_failures(
    tbf_excl: pl.DataFrame, windows: pl.DataFrame, by: list[str]
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Take the failures that are the origin of a unit's clock out of exclusions.

    A unit whose window starts at its first record (no install date; with no
    assets, each host from its first to its last record) starts its clock at
    that record; when the record is a failure, it begins the unit's first gap
    and is no gap itself. A host whose only records are one instant (a window
    of zero length) has no gap at all; its failures are origins too. Neither
    is a failure outside a service window (``relkit rejects`` lists none of
    them), so they are counted as ``n_origin_failures``, not ``n_excluded``.

    Returns
    -------
    tuple
        ``(exclusions without them, counts)``: ``counts`` has ``*by`` (those
        the exclusions carry) and ``n_origin_failures``.
    """
    positive = windows.filter(pl.col("exposure_h") > 0)["host"].unique()
    instant = windows.filter(
        (pl.col("exposure_h") <= 0) & ~pl.col("host").is_in(positive.implode())
    )["host"].unique()
    is_origin = (pl.col("reason") == _ORIGIN_REASON) | (
        (pl.col("reason") == "failure of a node not in assets")
        & pl.col("unit_id").is_in(instant.implode())
    )
    origins = tbf_excl.filter(is_origin)
    keys = [c for c in by if c in origins.columns]
    counts = (
        origins.group_by(keys).agg(n_origin_failures=pl.col("n").sum().cast(pl.Int64))
        if keys
        else pl.DataFrame(
            {"n_origin_failures": [int(origins["n"].sum())]},
            schema={"n_origin_failures": pl.Int64},
        )
    )
    return tbf_excl.filter(~is_origin), counts


def _first_failure_endpoint(
    windows: pl.DataFrame,
    failures: pl.DataFrame,
    prior: pl.DataFrame,
    *,
    by: list[str],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Age-at-first-failure table and counts (``n_failed_before_entry``)."""
    units, on_clock = to_service_clock(windows, failures, prior)
    counted = on_clock.filter(~pl.col("prior")).drop("prior")
    before = on_clock.filter(pl.col("prior"))
    table = survival.build_first_failure_table(
        counted, units, by=by, window_end=units["out_of_service_ts"].max()
    ).with_columns(origin_known=pl.lit(True))
    # a unit that failed before it entered observation is not at risk of a
    # first failure (of that mode): its first failure was not seen
    event_by = [c for c in by if c not in units.columns]
    failed_before = before.select(
        *event_by, unit_id=pl.col("host").cast(pl.String)
    ).unique()
    n_before = table.join(failed_before, on=["unit_id", *event_by], how="semi")
    table = table.join(failed_before, on=["unit_id", *event_by], how="anti")
    unknown = units.filter(pl.col("in_service_ts").is_null())
    unit_by = [c for c in by if c in units.columns]
    return table, (
        _per_group(n_before, by, "n_failed_before_entry"),
        _per_group(unknown, unit_by, "n_origin_unknown"),
    )


def _removal_endpoint(
    windows: pl.DataFrame,
    failures: pl.DataFrame,
    prior: pl.DataFrame,
    *,
    by: list[str],
) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Age-at-removal-after-failure table and its classes' counts."""
    units, on_clock = to_service_clock(windows, failures, prior)
    real = windows.filter(pl.col("exposure_h") > 0)
    last = (
        real.sort("host", "out_of_service_ts")
        .group_by("host", maintain_order=True)
        .last()
        .select(
            "host",
            removed=pl.col("exit_basis").fill_null("") == "out_of_service_ts",
            _last_s=pl.coalesce("in_service_ts", "observed_from_ts"),
            _last_e="out_of_service_ts",
        )
    )
    length_us = (pl.col("_last_e") - pl.col("_last_s")).dt.total_microseconds()
    units = units.join(last, on="host", how="left").with_columns(
        removed=pl.col("removed").fill_null(False),
        last_window_start_ts=pl.col("out_of_service_ts")
        - pl.duration(microseconds=length_us),
    )
    counted = on_clock.filter(~pl.col("prior")).drop("prior")
    table = survival.build_removal_table(counted, units, by=by).with_columns(
        origin_known=pl.lit(True)
    )
    names = {
        survival.REMOVAL_EXITS[0]: "n_removed_after_failure",
        survival.REMOVAL_EXITS[1]: "n_removed_without_failure",
        survival.REMOVAL_EXITS[2]: "n_in_service",
    }
    classes = [
        (pl.col("exit") == e).sum().cast(pl.Int64).alias(n) for e, n in names.items()
    ]
    counts = table.group_by(by).agg(classes) if by else table.select(classes)
    unit_by = [c for c in by if c in units.columns]
    unknown = units.filter(pl.col("in_service_ts").is_null())
    return table, (counts, _per_group(unknown, unit_by, "n_origin_unknown"))


def _per_group(frame: pl.DataFrame, by: list[str], name: str) -> pl.DataFrame:
    if not by:
        return pl.DataFrame({name: [frame.height]}, schema={name: pl.Int64})
    return frame.group_by(by).agg(pl.len().cast(pl.Int64).alias(name))


def survival_table(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    endpoint: Endpoint = "tbf",
    by: Sequence[str] = (),
    unit: Unit | None = None,
    failure_mode: str | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Build the survival table of an endpoint, ready to fit or plot.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    endpoint : {"tbf", "first-failure", "removal"}, default "tbf"
        Time between failures, age at first failure, or age at removal after
        failure (see :func:`survival_by`, Notes).
    by : sequence of str, default ()
        Grouping columns, as in :func:`relkit.answers.mtbf_by`.
    unit : {"node", "gpu", "system"}, optional
        The unit; ``"system"`` for ``"tbf"`` and ``"node"`` otherwise by
        default. ``"system"`` only for ``"tbf"``.
    failure_mode : str, optional
        Count only the failures of this mode
        (:func:`relkit.observation.restrict_to_mode`: a mode such as
        ``gpu/hang``, or a root cause such as ``gpu`` for all of its modes).
    window_start, window_end : datetime, optional
        The observation window (UTC).
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, unit_id, entry_h, stop_h, observed`` (hours on the
        unit's clock; see :func:`relkit.survival.build_tbf_table`), plus
        ``exit`` for ``"removal"``.

    Raises
    ------
    SchemaError
        As :func:`survival_by`.
    InsufficientDataError
        As :func:`survival_by`.
    """
    built = endpoint_table(
        events,
        assets,
        endpoint=endpoint,
        by=by,
        unit=unit,
        failure_mode=failure_mode,
        window_start=window_start,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    return built.table.drop("origin_known")


def endpoint_table(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    endpoint: Endpoint = "tbf",
    by: Sequence[str] = (),
    unit: Unit | None = None,
    failure_mode: str | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> EndpointTable:
    """Survival table of an endpoint with its exclusions and counts.

    Parameters and errors as :func:`survival_table`.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    endpoint, by, unit, failure_mode, window_start, window_end
        As :func:`survival_table`.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    EndpointTable
        The table (with ``origin_known``), exclusions and counts.

    Raises
    ------
    SchemaError
        As :func:`survival_by`.
    InsufficientDataError
        As :func:`survival_by`.
    """
    by = _unique(by)
    unit = _resolved_unit(endpoint, unit)
    obs = observe(
        events,
        assets,
        window_start=window_start,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    split_by(by, obs.windows, obs.failures, attributes=obs.attributes)
    obs = restrict_to_mode(obs, failure_mode)
    n_node = n_no_device = 0
    if unit == "gpu":
        windows, failures, prior, excluded, split = _on_gpus(obs, failure_mode)
        n_node, n_no_device = split.n_other_modes, split.no_device.height
        if n_no_device:
            warnings.warn(
                f"{n_no_device} GPU failure(s) name no device (on "
                f"{split.no_device['host'].n_unique()} host(s), e.g. "
                f"{split.no_device['host'].unique().sort().head(3).to_list()}) "
                "and are not counted per GPU (n_gpu_no_device): which GPU failed "
                "is unknown; --unit node counts them.",
                RelkitWarning,
                stacklevel=2,
            )
    else:
        windows, failures, prior = obs.windows, obs.failures, obs.prior_failures
        excluded = obs.excluded
    if endpoint == "tbf":
        table, tbf_excl = _tbf_endpoint(
            obs, windows, failures, prior, by=by, unit=unit, window_end=window_end
        )
        unknown = table.filter(~pl.col("origin_known"))
        tbf_excl, origins = _split_origin_failures(tbf_excl, obs.windows, by)
        counts: tuple[pl.DataFrame, ...] = (
            _per_group(unknown, by, "n_origin_unknown"),
            origins,
        )
        excl = (
            tbf_excl.filter(pl.all_horizontal(pl.col(by).is_not_null()))
            .group_by(by)
            .agg(n=pl.col("n").sum())
            if by
            else pl.DataFrame({"n": [int(tbf_excl["n"].sum())]})
        )
        n_outside = excluded.height
        if n_outside:
            # failures in no window of their unit: counted overall only when
            # ungrouped, as relkit did before endpoints (their unit has no
            # row); grouped, they count in their group
            if by:
                excl = pl.concat(
                    [excl, _count_excluded(excluded, windows, by)],
                    how="diagonal_relaxed",
                )
            else:
                excl = excl.with_columns(pl.col("n") + n_outside)
    elif endpoint == "first-failure":
        table, counts = _first_failure_endpoint(windows, failures, prior, by=by)
        excl = _count_excluded(excluded, windows, by)
    else:
        table, counts = _removal_endpoint(windows, failures, prior, by=by)
        excl = _count_excluded(excluded, windows, by)
    stamps = pl.concat([failures["ts"], prior["ts"]]).drop_nulls()
    return EndpointTable(
        table=table,
        excluded=excl,
        counts=counts,
        n_node_level=n_node,
        n_gpu_no_device=n_no_device,
        resolution_h=survival.timestamp_resolution_h(stamps) if stamps.len() else None,
    )


def survival_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    endpoint: Endpoint = "tbf",
    unit: Unit | None = None,
    failure_mode: str | None = None,
    all_models: bool = False,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Fit lifetime models to an endpoint's survival table, per group.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    by : sequence of str, default ()
        Grouping columns, as in :func:`relkit.answers.mtbf_by`;
        ``failure_mode`` gives one row per mode.
    endpoint : {"tbf", "first-failure", "removal"}, default "tbf"
        What is timed (Notes).
    unit : {"node", "gpu", "system"}, optional
        Node (host), GPU (``host:device``) or, for ``"tbf"`` only, the whole
        group (simultaneous failures of many nodes are one system incident).
        Default: ``"system"`` for ``"tbf"`` (relkit's answer before
        endpoints), ``"node"`` for the ages.
    failure_mode : str, optional
        Count only the failures of this mode
        (:func:`relkit.observation.restrict_to_mode`: a mode such as
        ``gpu/hang``, or a root cause such as ``gpu`` for all of its modes).
    all_models : bool, default False
        All six models' rows per group (:data:`relkit.survival.MODELS`:
        :func:`relkit.survival.fit_lifetime_models`, adding gamma and
        generalized gamma), ranked by AIC, instead of one row per group with the
        best of the four default models (:data:`relkit.survival.DEFAULT_MODELS`,
        :func:`relkit.survival.fit_lifetimes`).
    window_start : datetime, optional
        Start of observation (UTC): a unit's last failure before it is the
        origin of its first gap (``"tbf"``); a unit that failed before it is
        not at risk of a first failure.
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of data.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    pl.DataFrame
        One row per group (per group and model with ``all_models``):
        ``endpoint``, ``unit``, ``failure_mode`` (the mode; null when every
        mode counts), the ``by`` columns, the columns of
        :func:`relkit.survival.fit_lifetimes` (or ``fit_lifetime_models``,
        with ``rank`` by AIC among fits whose status is ok when the fitting
        code does not give one), then ``n_origin_unknown`` (``"tbf"``: first
        gaps measured from the tracking start of units with no known start,
        left-truncated there, a forward-recurrence time exact only under a
        constant hazard; ages: units left out because their age is unknown),
        ``n_origin_failures`` (``"tbf"`` only: failures that are the first
        record of a unit with no known start, the origin of its first gap and
        no gap themselves), ``n_excluded`` (failures outside every window of
        their unit, see :func:`relkit.answers.excluded_failures`),
        ``n_node_level``
        (``unit="gpu"``: failures naming no GPU, left out), ``resolution_h``
        (the resolution of the failures' time stamps, h, e.g. 1/60 for LANL's
        minute stamps: zero-length gaps are interval-censored in
        ``(0, resolution_h]``, counted in ``n_zero`` and said in ``status``);
        for
        ``"first-failure"`` ``n_failed_before_entry`` (units left out: they
        failed before observation began); for ``"removal"``
        ``n_removed_after_failure``, ``n_removed_without_failure`` and
        ``n_in_service``.

    Raises
    ------
    SchemaError
        If a ``by`` column is not a known attribute; the endpoint or unit is
        unknown; ``unit="system"`` with an age endpoint; with ``unit="gpu"``
        a ``failure_mode`` none of whose failures names a GPU.
    InsufficientDataError
        As :func:`relkit.observation.observe`; or when ``failure_mode`` has
        no counted failure (the message names the modes that have).

    Notes
    -----
    - ``"tbf"``: per unit, the gaps between consecutive failures, the last one
      censored at the unit's exit from observation (see
      :func:`relkit.survival.build_tbf_table`). Per mode (``failure_mode`` or
      ``by=["failure_mode"]``) a gap runs between two failures *of that
      mode*: a failure of another mode does not end the spell (the unit is
      repaired and stays at risk of this mode). Nodes and GPUs are timed on
      their in-service clock, systems in calendar time.
    - ``"first-failure"``: a unit's age (time in service since its install)
      at its first failure (of the mode). Units already in service when
      tracking began enter late (left truncation, ``entry_h``); units never
      failing are right-censored at removal or the end of data. Units whose
      install date is unknown have no age and are left out
      (``n_origin_unknown``); so are units that failed before they entered
      observation (``n_failed_before_entry``).
    - ``"removal"``: a unit removed from service (its last window ends at a
      declared ``out_of_service_ts`` before the end of data) with a failure
      (of the mode) in its last service window is an event at its age at
      removal; a unit removed without one is censored at removal (a
      competing exit, assumed independent); a unit still in service is
      censored at its age at the end of data
      (:func:`relkit.survival.build_removal_table`).
    - ``unit="gpu"``: a GPU is ``host:device``; only failures of GPU modes
      (:func:`gpu_mode`) naming a device count; failures of other modes
      (network, NVSwitch, host, software) are node-level, left out and
      counted in ``n_node_level``, and GPU failures naming no device are left
      out with a warning (use ``unit="node"`` for them). With node assets a
      host's ``gpus`` GPUs share its windows.

    References
    ----------
    .. [1] B. Schroeder and G. A. Gibson, "A large-scale study of failures in
       high-performance computing systems", DSN 2006. doi:10.1109/DSN.2006.5
    .. [2] J. P. Klein and M. L. Moeschberger, *Survival Analysis*, 2nd ed.,
       Springer 2003, §3.4 (left truncation). doi:10.1007/b97377
    """
    by = _unique(by)
    unit = _resolved_unit(endpoint, unit)
    built = endpoint_table(
        events,
        assets,
        endpoint=endpoint,
        by=by,
        unit=unit,  # type: ignore[arg-type]
        failure_mode=failure_mode,
        window_start=window_start,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    table = built.table.drop("origin_known", "exit", strict=False)
    extra = {"resolution_h": built.resolution_h}
    if all_models:
        fits = survival.fit_lifetime_models(
            table, by=by, models=survival.MODELS, **extra
        )
        if "rank" not in fits.columns:
            ok = pl.col("status").str.starts_with("ok")
            rank = pl.when(ok).then(pl.col("aic")).rank("ordinal")
            fits = fits.with_columns(
                rank=(rank.over(by) if by else rank).cast(pl.Int64)
            )
        fits = fits.sort([*by, "rank", "model"], nulls_last=True)
    else:
        fits = survival.fit_lifetimes(table, by=by, **extra)
    fits = _with_counts(fits, built, by)
    lead = ["endpoint", "unit", "failure_mode"]
    fits = fits.with_columns(
        endpoint=pl.lit(endpoint),
        unit=pl.lit(unit),
        n_node_level=pl.lit(built.n_node_level, dtype=pl.Int64),
        resolution_h=pl.lit(built.resolution_h, dtype=pl.Float64),
    )
    if "failure_mode" not in by:
        fits = fits.with_columns(failure_mode=pl.lit(failure_mode, dtype=pl.String))
    return fits.select(
        *lead, *[c for c in by if c != "failure_mode"], pl.exclude(*lead, *by)
    )


def _with_counts(
    fits: pl.DataFrame, built: EndpointTable, by: list[str]
) -> pl.DataFrame:
    """Join ``n_origin_unknown``, ``n_excluded`` and the endpoint's counts."""
    excl = built.excluded.rename({"n": "n_excluded"})
    keys = [c for c in by if c in excl.columns]
    if keys:
        excl = excl.group_by(keys).agg(pl.col("n_excluded").sum())
        fits = fits.join(
            excl.cast({c: fits.schema[c] for c in keys}), on=keys, how="left"
        )
    else:
        fits = fits.with_columns(n_excluded=pl.lit(int(excl["n_excluded"].sum())))
    names: list[str] = []
    for counts in built.counts:
        ckeys = [c for c in by if c in counts.columns]
        cols = [c for c in counts.columns if c not in ckeys]
        names += cols
        if ckeys:
            counts = counts.group_by(ckeys).agg(pl.col(cols).sum())
            fits = fits.join(
                counts.cast({c: fits.schema[c] for c in ckeys}), on=ckeys, how="left"
            )
        else:
            fits = fits.with_columns(
                pl.lit(int(counts[c].sum())).alias(c) for c in cols
            )
    return fits.with_columns(pl.col("n_excluded", *names).fill_null(0).cast(pl.Int64))


def time_between_failures(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    by: Sequence[str] = (),
    unit: Unit = "system",
    failure_mode: str | None = None,
    window_start: datetime | None = None,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Build the time-between-failures table of each group, ready to fit.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    by : sequence of str, default ()
        Grouping columns, as in :func:`relkit.answers.mtbf_by`.
    unit : {"node", "gpu", "system"}, default "system"
        Gaps between failures of the same node, GPU, or of the whole group.
        For ``"system"``, simultaneous failures of many nodes are one system
        incident (:func:`relkit.observation.system_incidents`).
    failure_mode : str, optional
        Only this mode's failures (a failure of another mode does not end a
        gap).
    window_start : datetime, optional
        Start of observation (UTC): a unit's last failure before it is the
        origin of its first gap (entry = window start - that failure).
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of data.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    pl.DataFrame
        Columns ``*by, unit_id, entry_h, stop_h, observed, origin_known`` as
        :func:`relkit.survival.build_tbf_table` with ``with_origin=True``.

    Raises
    ------
    SchemaError
        If a ``by`` column is not a known attribute.
    InsufficientDataError
        As :func:`relkit.observation.observe`.
    """
    return endpoint_table(
        events,
        assets,
        endpoint="tbf",
        by=by,
        unit=unit,
        failure_mode=failure_mode,
        window_start=window_start,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    ).table


def first_failure_survival(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    systems: Sequence[str] | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Kaplan-Meier curve of each node's time to its first failure, per system.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    systems : sequence of str, optional
        Systems to include; all by default.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Level of the pointwise confidence band.
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of data.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    pl.DataFrame
        Columns as :func:`relkit.survival.kaplan_meier` with ``system`` first.

    Raises
    ------
    InsufficientDataError
        As :func:`relkit.observation.observe`; or when no unit (of ``systems``)
        has time at risk.

    Notes
    -----
    Time runs from a node's entry into service. Nodes already in service when
    tracking began enter late (left truncation); nodes never failing are
    right-censored at decommission or the end of data.
    """
    obs = observe(
        events,
        assets,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    failures, windows = obs.failures, obs.windows.filter(pl.col("exposure_h") > 0)
    if systems is not None:
        failures = failures.filter(pl.col("system").is_in(list(systems)))
        windows = windows.filter(pl.col("system").is_in(list(systems)))
    if windows.height == 0:
        msg = (
            "first_failure_survival: no unit has time at risk"
            + (f" in systems {list(systems)}" if systems is not None else "")
            + " (every unit was observed for no measurable time), so there is "
            "no time to first failure to estimate. Ingest the whole logs, or an "
            "assets table with the units' service windows."
        )
        raise InsufficientDataError(msg)
    # age is time in service: a gap between service windows does not count
    units, on_clock = to_service_clock(windows, failures, failures.head(0))
    table = survival.build_first_failure_table(
        on_clock, units, by=["system"], window_end=units["out_of_service_ts"].max()
    )
    return survival.kaplan_meier(table, by=["system"], confidence=confidence)
