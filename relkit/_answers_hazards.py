"""Hazard ratios by asset attribute, from the store's tables (composition).

:func:`hazards_by` builds a per-node survival table from the observation model
(:mod:`relkit.observation`), joins the nodes' asset attributes and fits
:func:`relkit.survival.cox_hazards` or :func:`relkit.survival.weibull_aft`,
with a log-rank test between the levels of each covariate.
"""

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from typing import Literal

import polars as pl

from relkit import survival
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InsufficientDataError, SchemaError
from relkit.observation import observe, restrict_to_mode, to_service_clock

__all__ = ["hazards_by"]

#: Columns of the observation's windows that are not asset attributes.
_NOT_ATTRIBUTES = {
    "source_id",
    "line_no",
    "host",
    "device",
    "gpus",
    "in_service_ts",
    "out_of_service_ts",
    "observed_from_ts",
    "attrs",
    "flags",
    "in_service_unknown",
    "exit_basis",
    "left_truncated",
    "exposure_h",
}


def hazards_by(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    covariates: Sequence[str],
    failure_mode: str | None = None,
    endpoint: Literal["first-failure", "tbf"] = "first-failure",
    model: Literal["cox", "weibull_aft"] = "cox",
    categorical: Sequence[str] = (),
    confidence: float = DEFAULT_CONFIDENCE,
    window_end: datetime | None = None,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> survival.HazardModel:
    """Regress the nodes' failure hazard on their asset attributes.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables.
    covariates : sequence of str
        Asset attributes (rack, batch, model, ``system``, any assets column).
    failure_mode : str, optional
        Count only this failure mode
        (:func:`relkit.observation.restrict_to_mode`: a mode such as
        ``gpu/hang``, or a root cause such as ``gpu`` for all of its modes); all
        failures by default.
    endpoint : {"first-failure", "tbf"}, default "first-failure"
        ``"first-failure"``: each node's age at its first failure (left
        truncated at its entry into observation, right-censored at its end).
        ``"tbf"``: every gap between a node's failures, with robust variance
        clustered on the node.
    model : {"cox", "weibull_aft"}, default "cox"
        The regression (:func:`relkit.survival.cox_hazards` or
        :func:`relkit.survival.weibull_aft`).
    categorical : sequence of str, default ()
        Numeric attributes to treat as categorical.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Level of the intervals.
    window_end : datetime, optional
        End of observation (UTC); defaults to the end of data.
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    relkit.survival.HazardModel
        The fit with ``logrank`` (one test per covariate) and ``notes`` that
        also say which nodes were left out (unknown install date for the
        first-failure endpoint; no value of a covariate).

    Raises
    ------
    SchemaError
        If a covariate is not an attribute of the assets (the message lists
        those available), or ``failure_mode`` matches no failure mode.
    InsufficientDataError
        As :func:`relkit.observation.observe`; or when nothing can be fitted.
    ConvergenceError
        As :func:`relkit.survival.cox_hazards`.

    Notes
    -----
    Age is time in service (:func:`relkit.observation.to_service_clock`): a
    gap between service windows is neither age nor exposure. A node counts
    each of its failures once (the observation model's node failures).
    """
    covariates = list(dict.fromkeys(covariates))
    obs = observe(
        events,
        assets,
        window_end=window_end,
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    available = ["system", *[a for a in obs.attributes if a != "system"]]
    if bad := [c for c in covariates if c not in available]:
        msg = (
            f"unknown covariate(s) {bad}: the assets have the attributes "
            f"{available}. Name some of them, e.g. --covariates "
            f"{','.join(available[:2])}."
        )
        raise SchemaError(msg)
    notes: list[str] = list(obs.notes)
    obs = restrict_to_mode(obs, failure_mode)
    failures, prior = obs.failures, obs.prior_failures
    windows = obs.windows.filter(pl.col("exposure_h") > 0)
    if windows.height == 0:
        msg = "no node has time at risk, so there is no hazard to regress."
        raise InsufficientDataError(msg)
    units, on_clock = to_service_clock(windows, failures, prior)
    end = units["out_of_service_ts"].max()
    if endpoint == "first-failure":
        table = survival.build_first_failure_table(
            on_clock.filter(~pl.col("prior")), units, window_end=end
        )
        n_unknown = units.height - table["unit_id"].n_unique()
        if n_unknown:
            notes.append(
                f"{n_unknown} of {units.height} node(s) left out: install date "
                "unknown, so their age at first failure is unknown (use "
                "--endpoint tbf to use their gaps)"
            )
        cluster = None
    elif endpoint == "tbf":
        table = survival.build_tbf_table(
            on_clock, units, unit="node", window_end=end, with_origin=True
        ).drop("origin_known")
        cluster = "unit_id"
    else:
        msg = f"endpoint must be 'first-failure' or 'tbf', found {endpoint!r}."
        raise SchemaError(msg)
    attrs = (
        windows.select("host", *covariates)
        .unique(subset="host", keep="first", maintain_order=True)
        .rename({"host": "unit_id"})
    )
    varying = (
        windows.group_by("host")
        .agg(pl.col(covariates).n_unique())
        .filter(pl.any_horizontal(pl.col(covariates) > 1))
    )
    if varying.height:
        notes.append(
            f"{varying.height} node(s) change a covariate between service "
            "windows; the first window's value is used"
        )
    table = table.join(attrs, on="unit_id", how="left")
    fit = survival.cox_hazards if model == "cox" else survival.weibull_aft
    result = fit(
        table,
        covariates=covariates,
        categorical=categorical,
        confidence=confidence,
        cluster_col=cluster,
    )
    logrank = survival.logrank_by(table, group=covariates)
    if endpoint == "tbf":
        notes.append(
            "log-rank on gaps treats the gaps of one node as independent "
            "(no clustering)"
            + (
                "; the model's intervals are clustered on the node"
                if model == "cox"
                else ""
            )
        )
    return dataclasses.replace(result, logrank=logrank, notes=(*notes, *result.notes))
