r"""Lemon units: nodes or GPUs that fail improbably often for their time at risk.

A unit whose failure count is far above what the fleet's rate predicts for its
exposure is a *lemon*. Each unit is tested with the exact Poisson upper tail
and the tests of all units are corrected for multiplicity with the
Benjamini-Hochberg false-discovery rate.
"""

import math
import warnings
from collections.abc import Sequence
from typing import Literal

import numpy as np
import polars as pl

from relkit.errors import InsufficientDataError, RelkitWarning, SchemaError

__all__ = ["DEFAULT_BURST_WINDOW_H", "DEFAULT_FDR", "lemon_units"]

#: Repeats of one unit closer than this (hours) are one failure: relkit's
#: incident window of 10 minutes (:data:`relkit.observation.LOG_WINDOW_MIN`).
DEFAULT_BURST_WINDOW_H = 10.0 / 60.0
#: False-discovery rate at which a unit is called a lemon.
DEFAULT_FDR = 0.05

Baseline = Literal["others", "fleet"]
Unit = Literal["node", "gpu"]


def _fold_bursts(
    failures: pl.DataFrame, keys: list[str], window_h: float | None
) -> tuple[pl.DataFrame, int]:
    """Keep the first failure of each burst of one unit; return it and the count folded.

    A failure within ``window_h`` of the previous failure of the same unit joins
    its burst (the chain rule of the incident fold).
    """
    if not window_h or failures.height == 0:
        return failures, 0
    if "ts" not in failures.columns:
        msg = (
            f"lemon_units: burst_window_h={window_h} folds repeats by time, but "
            f"the failures have no 'ts' column (columns: {failures.columns}). "
            "Pass failures with their UTC time 'ts', or burst_window_h=None when "
            "they are incidents already."
        )
        raise SchemaError(msg)
    gap_h = pl.col("ts").diff().over(keys).dt.total_microseconds() / 3.6e9
    kept = (
        failures.sort([*keys, "ts"], nulls_last=True)
        .with_columns(_gap_h=gap_h)
        .filter(pl.col("_gap_h").is_null() | (pl.col("_gap_h") > window_h))
        .drop("_gap_h")
    )
    return kept, failures.height - kept.height


def _benjamini_hochberg(p: np.ndarray) -> np.ndarray:
    """BH-adjusted p-values (q-values) by scipy."""
    from scipy import stats

    if p.size == 0:
        return p
    return np.asarray(stats.false_discovery_control(p, method="bh"), dtype=float)


def _modes_text(counts: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """Per unit, ``mode×n`` joined by ', ', most frequent first (ties by name)."""
    return (
        counts.sort(
            [*keys, "_n", "failure_mode"],
            descending=[False] * len(keys) + [True, False],
        )
        .group_by(keys, maintain_order=True)
        .agg(
            modes=pl.format("{}×{}", pl.col("failure_mode"), pl.col("_n")).str.join(
                ", "
            )
        )
    )


def lemon_units(
    failures: pl.DataFrame,
    exposure: pl.DataFrame,
    *,
    unit: Unit = "node",
    within: Sequence[str] = (),
    by_mode: bool = False,
    baseline: Baseline = "fleet",
    fdr: float = DEFAULT_FDR,
    burst_window_h: float | None = DEFAULT_BURST_WINDOW_H,
) -> pl.DataFrame:
    r"""Rank units by how improbably many failures they had for their exposure.

    Parameters
    ----------
    failures : pl.DataFrame
        One row per failure: ``host`` (str), ``failure_mode`` (str), ``ts``
        (``Datetime(UTC)``; needed unless ``burst_window_h`` is None),
        ``device`` (str, the GPU; needed for ``unit="gpu"``, optional
        otherwise: it gives ``n_devices``) and the ``within`` columns.
        Failures should be incidents already (relkit's
        :attr:`relkit.observation.Observation.failures`); raw repeats of one
        unit within ``burst_window_h`` are folded into one and counted in
        ``n_folded`` (and said in a warning).
    exposure : pl.DataFrame
        Time at risk of every unit, failed or not: ``host``, ``exposure_h``
        (hours the unit was at risk, > 0) and the ``within`` columns, one row
        per host. For ``unit="gpu"``: either a ``device`` column (one row per
        GPU) or a ``gpus`` column (the host's GPU count, each GPU at risk for
        the host's ``exposure_h``).
    unit : {"node", "gpu"}, default "node"
        The unit tested: a host, or a GPU (host + device).
    within : sequence of str, default ()
        Columns that split the fleet into groups (e.g. ``system``): a unit's
        expected count uses the failure rate of its own group, and the
        Benjamini-Hochberg correction runs over all units of all groups.
    by_mode : bool, default False
        Test each (unit, failure mode) pair against that mode's fleet rate
        (one row per pair, ``failure_mode`` column added). Summing per-mode
        expected counts over the modes gives the all-mode expected count
        exactly (every mode shares the unit's exposure), so the all-mode test
        is unchanged by stratifying; the per-mode test finds units that are
        lemons for one mode only.
    baseline : {"fleet", "others"}, default "fleet"
        Rate behind ``expected``. ``"fleet"`` (default): the whole group's
        rate, the unit included. ``"others"``: the rate of the rest of the
        group (leave-one-out), so a big lemon does not raise its own baseline
        (in a fleet of 20 with one unit at 10× the rate, the whole-fleet rate
        is 1.45× the others' and the lemon's expected count 1.45× larger).
        ``"fleet"`` is the default because the leave-one-out test treats the
        others' estimated rate as known: when the others had few failures it
        is anti-conservative, and when they had none every unit with a
        failure gets p = 0 (in ten units with one failure, that unit would be
        a lemon). Use ``"others"`` on large groups, where it is the more
        powerful; a unit alone in its group is then not tested (warned).
    fdr : float, default 0.05
        False-discovery rate in (0, 1): a unit is a ``lemon`` when its
        ``q_value`` ≤ ``fdr``.
    burst_window_h : float or None, default 1/6 (10 minutes)
        Repeats of one unit within this many hours of its previous failure
        (chained, any mode) count once; None or 0 does not fold.

    Returns
    -------
    pl.DataFrame
        One row per unit with time at risk (per unit and mode with
        ``by_mode``), sorted by ``p_value``, then ``n_failures`` descending,
        then the key: ``*within``, ``host``, ``device`` (``unit="gpu"``),
        ``failure_mode`` (``by_mode``), ``n_failures`` (Int64, after folding),
        ``exposure_h``, ``expected`` (baseline rate × ``exposure_h``),
        ``ratio`` (``n_failures / expected``; null when expected is 0),
        ``p_value`` (:math:`P(N \ge n)`), ``q_value`` (Benjamini-Hochberg),
        ``lemon`` (bool), ``modes`` (e.g. ``"gpu/hbm_uncorrectable×3,
        gpu/fallen_off_bus×1"``, most frequent first; "" without failures),
        ``n_devices`` (distinct non-null devices among its failures),
        ``n_folded`` (repeats folded into its failures). With ``unit="gpu"``
        and a ``gpus`` column, GPUs of a host that never failed are tested
        (p = 1, counted by the correction) but not listed, as they have no
        device name; a warning says how many.

    Raises
    ------
    SchemaError
        If a required column is missing, or ``exposure`` lists a unit twice.
    InsufficientDataError
        If no unit has time at risk, or no failure falls on a unit with time
        at risk.
    ValueError
        If ``fdr`` is not in (0, 1), ``burst_window_h`` is negative, or
        ``unit``/``baseline`` is not one of the choices.

    Warns
    -----
    RelkitWarning
        When repeats were folded, failures of units absent from ``exposure``
        (or with no time at risk) were left out, or a group has no failure
        (its units cannot be lemons).

    Notes
    -----
    For unit :math:`i` with :math:`n_i` failures over :math:`e_i` hours in a
    group of total failures :math:`N` and exposure :math:`E`, the baseline
    rate is :math:`\lambda_{-i} = (N - n_i)/(E - e_i)` (``"others"``) or
    :math:`\lambda = N/E` (``"fleet"``, the default), the expected count
    :math:`\mu_i = \lambda e_i`, and the p-value the exact Poisson upper tail
    :math:`p_i = P(X \ge n_i \mid X \sim \mathrm{Poisson}(\mu_i))`
    (``scipy.stats.poisson.sf(n_i - 1, mu_i)``), which is 1 for
    :math:`n_i = 0`. The null hypothesis is that every unit of a group fails
    as a Poisson process of one rate. Under ``"others"`` a group in which only
    unit :math:`i` failed gives :math:`\mu_i = 0` and :math:`p_i = 0` for
    :math:`n_i > 0` (nothing else failed); the ``ratio`` is then null.

    The p-values of all units (all groups) are adjusted by the
    Benjamini-Hochberg step-up procedure [1]_
    (``scipy.stats.false_discovery_control``), which keeps the expected share
    of false lemons among the units called lemons at most ``fdr`` for
    independent (or positively dependent) tests.

    References
    ----------
    .. [1] Y. Benjamini and Y. Hochberg, "Controlling the false discovery
       rate: a practical and powerful approach to multiple testing", J. R.
       Stat. Soc. B 57(1), 289-300 (1995).
       doi:10.1111/j.2517-6161.1995.tb02031.x

    Examples
    --------
    >>> from datetime import datetime, timedelta, UTC
    >>> t0 = datetime(2025, 3, 1, tzinfo=UTC)
    >>> failures = pl.DataFrame(
    ...     {
    ...         "host": ["n1"] * 6 + ["n2"],
    ...         "failure_mode": ["gpu/hbm_uncorrectable"] * 5 + ["gpu/hang"] * 2,
    ...         "ts": [t0 + timedelta(days=d) for d in range(7)],
    ...     }
    ... )
    >>> exposure = pl.DataFrame(
    ...     {"host": [f"n{k}" for k in range(1, 11)], "exposure_h": [720.0] * 10}
    ... )
    >>> out = lemon_units(failures, exposure)
    >>> out.select("host", "n_failures", pl.col("expected").round(4), "lemon").head(
    ...     2
    ... ).rows()
    [('n1', 6, 0.7, True), ('n2', 1, 0.7, False)]
    >>> out["modes"][0]
    'gpu/hbm_uncorrectable×5, gpu/hang×1'
    >>> lemon_units(failures, exposure, fdr=1.5)
    Traceback (most recent call last):
    ...
    ValueError: lemon_units: fdr must be a number in (0, 1), e.g. 0.05; got 1.5.
    """
    from scipy import stats

    if not (isinstance(fdr, int | float) and 0.0 < fdr < 1.0):
        msg = f"lemon_units: fdr must be a number in (0, 1), e.g. 0.05; got {fdr!r}."
        raise ValueError(msg)
    if unit not in ("node", "gpu"):
        msg = f"lemon_units: unit must be 'node' or 'gpu'; got {unit!r}."
        raise ValueError(msg)
    if baseline not in ("others", "fleet"):
        msg = f"lemon_units: baseline must be 'others' or 'fleet'; got {baseline!r}."
        raise ValueError(msg)
    if burst_window_h is not None and not (
        math.isfinite(burst_window_h) and burst_window_h >= 0
    ):
        msg = (
            "lemon_units: burst_window_h must be hours >= 0 (or None); got "
            f"{burst_window_h!r}."
        )
        raise ValueError(msg)
    within = list(dict.fromkeys(within))
    per_device_exposure = unit == "gpu" and "device" in exposure.columns
    need_f = ["host", "failure_mode", *within] + (["device"] if unit == "gpu" else [])
    need_e = ["host", "exposure_h", *within]
    if unit == "gpu":
        need_e.append("device" if per_device_exposure else "gpus")
    for frame, need, name in (
        (failures, need_f, "failures"),
        (exposure, need_e, "exposure"),
    ):
        if missing := [c for c in need if c not in frame.columns]:
            msg = (
                f"lemon_units: {name} lacks column(s) {missing}; it has "
                f"{frame.columns}. "
                + (
                    "For unit='gpu' exposure needs 'device' (one row per GPU) or "
                    "'gpus' (GPUs per host)."
                    if name == "exposure" and unit == "gpu"
                    else "Rename or add them (relkit.answers.lemons builds both "
                    "from a store)."
                )
            )
            raise SchemaError(msg)
    keys = ["host", "device"] if unit == "gpu" else ["host"]
    e_keys = keys if per_device_exposure else ["host"]
    dup = exposure.group_by(e_keys).len().filter(pl.col("len") > 1)
    if dup.height:
        msg = (
            f"lemon_units: exposure lists {dup.height} unit(s) more than once, "
            f"e.g. {dup.select(e_keys).head(3).rows()}; sum their windows first "
            "(one row per unit)."
        )
        raise SchemaError(msg)

    exp = exposure.select(
        *within,
        *e_keys,
        "exposure_h",
        *(["gpus"] if unit == "gpu" and not per_device_exposure else []),
    )
    n_zero = exp.filter(~(pl.col("exposure_h") > 0)).height
    exp = exp.filter(pl.col("exposure_h") > 0)
    if exp.height == 0:
        msg = (
            "lemon_units: no unit has time at risk (exposure_h > 0), so no "
            "failure count can be compared with an expected one. Give the units' "
            "service windows (relkit ingest --kind assets)."
        )
        raise InsufficientDataError(msg)

    # fold bursts per unit (any mode), then keep failures on units at risk
    fkeys = [*within, *keys]
    host_keys = [*within, "host"]
    f = failures.select(
        *dict.fromkeys(
            [
                *fkeys,
                "failure_mode",
                *(["ts"] if "ts" in failures.columns else []),
                *(["device"] if "device" in failures.columns else []),
            ]
        )
    )
    if "device" not in f.columns:
        f = f.with_columns(device=pl.lit(None, dtype=pl.String))
    f, n_folded_total = _fold_bursts(f, fkeys, burst_window_h)
    folded = (
        failures.select(fkeys).group_by(fkeys).len("_raw") if n_folded_total else None
    )
    if n_folded_total:
        warnings.warn(
            f"lemon_units: {n_folded_total} repeat(s) of a unit within "
            f"{burst_window_h:g} h of its previous failure were folded into it "
            "(one burst counts once; burst_window_h=None keeps them).",
            RelkitWarning,
            stacklevel=2,
        )
    # null keys (a host with no rack) are a group of their own, as in mtbf --by
    at_risk_hosts = exp.select(host_keys).unique()
    if per_device_exposure:
        named_f = f.filter(pl.col("device").is_not_null()).join(
            exp.select(*within, *e_keys),
            on=[*within, *e_keys],
            how="semi",
            nulls_equal=True,
        )
        nodev_f = f.filter(pl.col("device").is_null()).join(
            at_risk_hosts, on=host_keys, how="semi", nulls_equal=True
        )
        on_units = pl.concat([named_f, nodev_f])
    else:
        on_units = f.join(at_risk_hosts, on=host_keys, how="semi", nulls_equal=True)
    n_off = f.height - on_units.height
    if n_off:
        hosts = (
            f.join(
                on_units.select(fkeys).unique(), on=fkeys, how="anti", nulls_equal=True
            )["host"]
            .unique()
            .sort()
            .head(5)
            .to_list()
        )
        warnings.warn(
            f"lemon_units: {n_off} failure(s) of unit(s) with no time at risk in "
            f"exposure (e.g. {hosts}"
            + (f"; {n_zero} unit(s) have exposure_h <= 0" if n_zero else "")
            + ") were left out: a count with no exposure cannot be tested.",
            RelkitWarning,
            stacklevel=2,
        )
    f = on_units
    if f.height == 0:
        msg = (
            "lemon_units: no failure falls on a unit with time at risk "
            f"({failures.height} failure(s) given, {exp.height} unit(s) at risk), "
            "so there is nothing to test. Check that failures and exposure name "
            "the same hosts."
        )
        raise InsufficientDataError(msg)

    # GPU failures naming no device count in their group's rate, but which GPU
    # failed is unknown: the GPUs of their hosts are not tested
    blind = (
        f.filter(pl.col("device").is_null()).select(host_keys).unique()
        if unit == "gpu"
        else pl.DataFrame(schema={c: f.schema[c] for c in host_keys})
    )

    # the tested units (rows); every unit's exposure (group totals)
    silent_schema = {
        **{c: exp.schema[c] for c in within},
        "exposure_h": pl.Float64,
        "n": pl.Int64,
    }
    if unit == "gpu" and not per_device_exposure:
        named = (
            f.filter(pl.col("device").is_not_null())
            .select(*host_keys, "device")
            .unique()
            .join(exp.select(*host_keys, "exposure_h"), on=host_keys, nulls_equal=True)
        )
        n_named = named.group_by(host_keys).len("_named")
        hosts = exp.join(
            n_named, on=host_keys, how="left", nulls_equal=True
        ).with_columns(
            _named=pl.col("_named").fill_null(0).cast(pl.Int64),
            _g=pl.col("gpus").fill_null(0).cast(pl.Int64),
        )
        crowded = hosts.filter(pl.col("_named") > pl.col("_g"))
        if crowded.height:
            warnings.warn(
                f"lemon_units: {crowded.height} host(s) have failures on more GPU "
                "devices than their 'gpus' count (e.g. "
                f"{crowded.select('host', '_named', '_g').head(3).rows()} as (host, "
                "devices named, gpus)); each named device is a unit. Check the "
                "assets' gpus, or that only GPU modes name a device.",
                RelkitWarning,
                stacklevel=2,
            )
        hosts = hosts.with_columns(_n=pl.max_horizontal("_g", "_named"))
        unit_e = hosts.select(*within, "host", _e=pl.col("exposure_h") * pl.col("_n"))
        n_blind_units = int(
            hosts.join(blind, on=host_keys, how="semi", nulls_equal=True)["_n"].sum()
        )
        units = named.join(blind, on=host_keys, how="anti", nulls_equal=True)
        silent_units = (
            hosts.join(blind, on=host_keys, how="anti", nulls_equal=True)
            .select(
                *within,
                "exposure_h",
                n=(pl.col("_n") - pl.col("_named")).cast(pl.Int64),
            )
            .filter(pl.col("n") > 0)
        )
    else:
        unit_e = exp.select(*within, "host", _e=pl.col("exposure_h"))
        n_blind_units = exp.join(
            blind, on=host_keys, how="semi", nulls_equal=True
        ).height
        units = exp.join(blind, on=host_keys, how="anti", nulls_equal=True).select(
            *within, *keys, "exposure_h"
        )
        silent_units = pl.DataFrame(schema=silent_schema)
    if blind.height:
        n_nodev = f.filter(pl.col("device").is_null()).height
        warnings.warn(
            f"lemon_units: {n_nodev} GPU failure(s) name no device (on "
            f"{blind.height} host(s), e.g. {blind['host'].sort().head(3).to_list()}): "
            "they count in their group's failure rate, but which GPU failed is "
            f"unknown, so the {n_blind_units} GPU(s) of those host(s) are not "
            "tested (unit='node', relkit lemons --unit node, tests the hosts).",
            RelkitWarning,
            stacklevel=2,
        )

    def _group_totals(frame: pl.DataFrame, expr: pl.Expr) -> pl.DataFrame:
        return frame.group_by(within).agg(expr) if within else frame.select(expr)

    def _with_totals(frame: pl.DataFrame, totals: pl.DataFrame) -> pl.DataFrame:
        if within:
            return frame.join(totals, on=within, how="left", nulls_equal=True)
        return frame.join(totals, how="cross")

    group_e = _group_totals(unit_e, pl.col("_e").sum().alias("_E"))
    modes = sorted(f["failure_mode"].drop_nulls().unique().to_list())
    strata = modes if by_mode else [None]
    rows: list[pl.DataFrame] = []
    for mode in strata:
        fm = f if mode is None else f.filter(pl.col("failure_mode") == mode)
        counts = fm.group_by(fkeys).agg(
            n_failures=pl.len().cast(pl.Int64),
            n_devices=pl.col("device").drop_nulls().n_unique().cast(pl.Int64),
        )
        group_n = _group_totals(fm, pl.len().cast(pl.Int64).alias("_N"))
        r = units.join(counts, on=fkeys, how="left", nulls_equal=True).with_columns(
            pl.col("n_failures").fill_null(0), pl.col("n_devices").fill_null(0)
        )
        r = _with_totals(_with_totals(r, group_n), group_e).with_columns(
            pl.col("_N").fill_null(0)
        )
        if baseline == "others":
            rate = (pl.col("_N") - pl.col("n_failures")) / (
                pl.col("_E") - pl.col("exposure_h")
            )
            # alone in its group: no others to compare with, not tested
            rate = pl.when(pl.col("_E") > pl.col("exposure_h")).then(rate)
        else:
            rate = pl.col("_N") / pl.col("_E")
        r = r.with_columns(expected=rate * pl.col("exposure_h")).drop("_N", "_E")
        if mode is not None:
            r = r.with_columns(failure_mode=pl.lit(mode))
        rows.append(r)
    out = pl.concat(rows)
    n = out["n_failures"].to_numpy()
    mu = out["expected"].to_numpy()
    alone = np.isnan(mu)
    p = np.where((n > 0) & ~alone, stats.poisson.sf(n - 1, np.nan_to_num(mu)), 1.0)
    if alone.any():
        warnings.warn(
            f"lemon_units: {int(alone.sum())} unit(s) are alone in their group "
            f"({within or 'the fleet'}), so baseline='others' has no rate to compare "
            "them with: expected is null and p_value 1 (baseline='fleet' tests "
            "them against their own group's rate).",
            RelkitWarning,
            stacklevel=2,
        )
    n_silent = int(silent_units["n"].sum()) * len(strata) if silent_units.height else 0
    q_all = _benjamini_hochberg(np.concatenate([p, np.ones(n_silent)]))
    out = out.with_columns(
        p_value=pl.Series(p, dtype=pl.Float64),
        q_value=pl.Series(q_all[: p.size], dtype=pl.Float64),
    ).with_columns(
        lemon=pl.col("q_value") <= fdr,
        ratio=pl.when(pl.col("expected") > 0).then(
            pl.col("n_failures") / pl.col("expected")
        ),
    )
    # the modes behind each row, and repeats folded per unit
    mkeys = [*fkeys, *(["failure_mode"] if by_mode else [])]
    mode_counts = f.group_by([*fkeys, "failure_mode"]).agg(_n=pl.len())
    text = _modes_text(mode_counts, fkeys)
    if by_mode:
        text = mode_counts.with_columns(
            modes=pl.format("{}×{}", pl.col("failure_mode"), pl.col("_n"))
        ).drop("_n")
    out = out.join(text, on=mkeys, how="left", nulls_equal=True).with_columns(
        pl.col("modes").fill_null("")
    )
    if folded is not None:
        kept = f.group_by(fkeys).len("_kept")
        nf = folded.join(kept, on=fkeys, how="left", nulls_equal=True).select(
            *fkeys,
            n_folded=(pl.col("_raw") - pl.col("_kept").fill_null(0)).cast(pl.Int64),
        )
        out = out.join(nf, on=fkeys, how="left", nulls_equal=True)
    else:
        out = out.with_columns(n_folded=pl.lit(0, dtype=pl.Int64))
    out = out.with_columns(pl.col("n_folded").fill_null(0))
    if within:
        # a group with no failure at all (a GPU group's failures naming no
        # device count: they are in its rate)
        dead = (
            exp.select(within)
            .unique()
            .join(f.select(within).unique(), on=within, how="anti", nulls_equal=True)
            .sort(within, nulls_last=True)
        )
        if dead.height:
            what = "failure of a GPU" if unit == "gpu" else "failure"
            warnings.warn(
                f"lemon_units: {dead.height} group(s) of {within} had no {what} "
                f"(e.g. {dead.head(3).rows()}): their units are tested (p = 1) "
                "but cannot be lemons.",
                RelkitWarning,
                stacklevel=2,
            )
    if n_silent:
        warnings.warn(
            f"lemon_units: {n_silent // len(strata)} GPU(s) without a failure have "
            "no device name; they are tested (p = 1, counted by the "
            "Benjamini-Hochberg correction and in the fleet exposure) but not "
            "listed.",
            RelkitWarning,
            stacklevel=2,
        )
    cols = [
        *within,
        *keys,
        *(["failure_mode"] if by_mode else []),
        "n_failures",
        "exposure_h",
        "expected",
        "ratio",
        "p_value",
        "q_value",
        "lemon",
        "modes",
        "n_devices",
        "n_folded",
    ]
    return out.select(cols).sort(
        ["p_value", "n_failures", *within, *keys],
        descending=[False, True] + [False] * (len(within) + len(keys)),
        nulls_last=True,
    )
