"""Goodput and the checkpoint decision, answered from the store's tables (composition).

Re-exported by :mod:`relkit.answers`. :func:`run_goodput` measures each
training run's ETTR and badput from the store's ``checkpoints`` records and
job attempts (:func:`relkit.jobs.measure_goodput`); :func:`decide_checkpoints`
turns a run's measured failure behaviour (interruptions per hour of running,
restart overhead, queue wait and checkpoint cost, as measured) into a
recommended checkpoint interval with bounds
(:func:`relkit.checkpoint.checkpoint_decision`).
"""

from collections.abc import Sequence
from datetime import datetime
from typing import Any, NamedTuple

import numpy as np
import polars as pl

from relkit import checkpoint, survival
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import InsufficientDataError, InvalidParameterError
from relkit.jobs import Goodput, build_job_attempts, measure_goodput

__all__ = [
    "FIRST_ORDER_LOAD_LIMIT",
    "MIN_FAILURES_FOR_WEIBULL",
    "SWEEP_GPUS",
    "WEIBULL_TEST_CONFIDENCE",
    "LossesFilled",
    "PerModePlan",
    "decide_checkpoints",
    "decision_curve",
    "decision_scale_sweep",
    "interruptions_with_losses",
    "per_mode_checkpoint_plan",
    "run_goodput",
]

#: A run needs at least this many interruptions before the shape of its
#: time-to-interruption distribution is fitted and, when its confidence
#: interval excludes 1, used instead of the exponential.
MIN_FAILURES_FOR_WEIBULL = 10

#: Above this load λ(u₀ + q + Δt/2) the first-order E[ETTR] of Kokolis et al.
#: is replaced by the exact exponential renewal-reward model (Daly 2006); its
#: first-order error grows with the load (at 0.49 the first-order optimum's
#: ETTR is 0.39 against the exact model's 0.46, second review of issue 11).
FIRST_ORDER_LOAD_LIMIT = 0.1

#: Two-sided level of the Weibull shape interval that decides the model: the
#: exponential is kept unless 1 is outside it (about 5 % of exponential runs
#: switch by chance; at the bounds' 90 % it was 9 % of 68 simulated runs).
WEIBULL_TEST_CONFIDENCE = DEFAULT_CONFIDENCE


def run_goodput(
    checkpoints: pl.DataFrame | None,
    jobs: pl.DataFrame | None = None,
    job_nodes: pl.DataFrame | None = None,
    *,
    run: str | None = None,
    run_by: str | None = None,
    assumed_interval_h: float | None = None,
    assumed_cost_h: float = 0.0,
    assumed_restart_h: float = 0.0,
    as_of: datetime | None = None,
) -> Goodput:
    """Measure the goodput of the store's training runs.

    Parameters
    ----------
    checkpoints : pl.DataFrame or None
        The store's ``checkpoints`` table (``relkit ingest --kind
        checkpoints``); may be empty.
    jobs, job_nodes : pl.DataFrame, optional
        The store's ``jobs`` and ``job_nodes`` tables; their attempts give
        submit times (queue), attempt bounds for checkpoint-time logs, and the
        runs when there are no checkpoint records (``run_by``).
    run, run_by, assumed_interval_h, assumed_cost_h, assumed_restart_h, as_of
        As :func:`relkit.jobs.measure_goodput`.

    Returns
    -------
    relkit.jobs.Goodput
        Per run and per attempt frames, and the notes to show.

    Raises
    ------
    InsufficientDataError
        If the store has neither checkpoint records nor job records.
    InvalidParameterError, SchemaError
        As :func:`relkit.jobs.measure_goodput`.
    """
    has_records = checkpoints is not None and checkpoints.height > 0
    attempts = None
    if jobs is not None and jobs.height > 0:
        attempts = build_job_attempts(
            jobs, job_nodes if job_nodes is not None else jobs.clear()
        )
    if not has_records and attempts is None:
        msg = (
            "the store has no checkpoint records and no job records, so there is no "
            "run to measure; ingest a run's checkpoint/step log with "
            "`relkit ingest --kind checkpoints FILE`, or its scheduler records "
            "(--kind sacct or --kind k8s) with --assume-interval-h"
        )
        raise InsufficientDataError(msg)
    return measure_goodput(
        checkpoints if has_records else None,
        attempts,
        run=run,
        run_by=run_by,
        assumed_interval_h=assumed_interval_h,
        assumed_cost_h=assumed_cost_h,
        assumed_restart_h=assumed_restart_h,
        as_of=as_of,
    )


def _per_failure(attempts: pl.DataFrame) -> dict[str, float]:
    """Mean restart overhead and downtime per interruption of one run's attempts.

    The restart overhead u₀ of an interruption is the start-up and restore of
    the attempt after it; its downtime q (recovery and queue) runs from the
    failure to that attempt's start. Interruptions with no attempt after them
    (the run's last) give neither.
    """
    after = (
        attempts.sort("start_ts")
        .with_columns(
            _next_startup=pl.col("init_h").shift(-1),
            _next_restore=pl.col("restore_h").shift(-1),
            _has_next=pl.col("start_ts").shift(-1).is_not_null(),
        )
        .filter((pl.col("ended_by") == "failure") & pl.col("_has_next"))
    )
    if after.height == 0:
        return {"restart_h": 0.0, "queue_h": 0.0, "n_restarts": 0.0}
    means = after.select(
        restart_h=(
            pl.col("_next_startup").fill_null(0.0)
            + pl.col("_next_restore").fill_null(0.0)
        ).mean(),
        queue_h=(
            pl.col("recovery_h").fill_null(0.0) + pl.col("queue_h").fill_null(0.0)
        ).mean(),
    ).row(0, named=True)
    return {
        **{k: float(v or 0.0) for k, v in means.items()},
        "n_restarts": after.height,
    }


def _weibull_model(
    attempts: pl.DataFrame, confidence: float = WEIBULL_TEST_CONFIDENCE
) -> tuple[list[tuple[float, float, float]] | None, str]:
    """Fit a Weibull to a run's times to interruption; keep it if its shape is not 1."""
    durations = attempts.filter(pl.col("end_ts").is_not_null()).select(
        entry_h=pl.lit(0.0),
        stop_h=(pl.col("end_ts") - pl.col("start_ts")).dt.total_microseconds() / 3.6e9,
        observed=pl.col("ended_by") == "failure",
    )
    n = int(durations["observed"].sum())
    if n < MIN_FAILURES_FOR_WEIBULL:
        return None, (
            f"only {n} interruptions: the time to interruption is taken as "
            "exponential (no Weibull shape fitted below "
            f"{MIN_FAILURES_FOR_WEIBULL})"
        )
    fit = survival.fit_lifetimes(
        durations.filter(pl.col("stop_h") > 0),
        models=("weibull",),
        confidence=confidence,
    ).row(0, named=True)
    shape, low, high = (
        fit["weibull_shape"],
        fit["weibull_shape_lower"],
        fit["weibull_shape_upper"],
    )
    if shape is None or low is None or high is None:
        return None, f"no Weibull fit of the attempts ({fit['status']}): exponential"
    text = (
        f"Weibull shape of the time to interruption {shape:.3g} "
        f"[{low:.3g}, {high:.3g}] at {confidence:.0%}"
    )
    if low <= 1.0 <= high:
        return None, text + ": 1 is inside, so failures are taken as exponential"
    return [(float(shape), float(fit["weibull_scale_h"]), 1.0)], (
        text + ": 1 is outside, so the interval is the renewal-reward maximiser "
        "of that Weibull (each attempt renews it)"
    )


def decide_checkpoints(
    goodput: Goodput,
    *,
    run: str | None = None,
    gpus: int | None = None,
    confidence: float = DEFAULT_CONFIDENCE,
    cost_h: float | None = None,
    restart_h: float | None = None,
) -> pl.DataFrame:
    """Recommend each measured run's checkpoint interval from its measured failures.

    Parameters
    ----------
    goodput : relkit.jobs.Goodput
        From :func:`run_goodput`.
    run : str, optional
        Only this run.
    gpus : int, optional
        Target job size in GPUs; the run's interruption rate is scaled by
        ``gpus / n_gpus`` (failures proportional to the job's size, Kokolis et
        al. 2025). Default: the run's own size.
    confidence : float, default DEFAULT_CONFIDENCE (0.95)
        Two-sided level of the bounds on the rate, the interval and the ETTR.
    cost_h, restart_h : float, optional
        Checkpoint write and restart overhead to use instead of the measured
        ones (hours), e.g. for a run whose log has no save durations.

    Returns
    -------
    pl.DataFrame
        One row per run: ``run_id, evidence, gpus, measured_gpus, n_failures,
        exposure_h, measured_interval_h, measured_ettr, cost_h, restart_h,
        queue_h`` and the fields of
        :class:`relkit.checkpoint.CheckpointDecision` (``interval_h,
        interval_lower_h, interval_upper_h, expected_ettr,
        expected_ettr_lower, expected_ettr_upper, failure_rate_per_h, ...,
        method, assumptions``).

    Raises
    ------
    InsufficientDataError
        If a run has no measured checkpoint cost and none is given, or no
        running time.
    InvalidParameterError
        If ``run`` is not a measured run or ``gpus`` is not >= 1.

    Notes
    -----
    The rate is the run's own interruptions per hour of running (attempt
    start to end), so failures that leave no log line count too; its exact
    Poisson bounds carry to the interval and the ETTR
    (:func:`relkit.checkpoint.checkpoint_decision`). u₀ is the mean start-up
    and restore of the attempts after an interruption, q the mean time from
    the failure to the next attempt's start, w the median blocking save.
    With at least :data:`MIN_FAILURES_FOR_WEIBULL` interruptions a Weibull is
    fitted to the attempts' times to interruption (planned stops and the open
    end censored); when its shape's ``confidence`` interval excludes 1 the
    interval is that model's renewal-reward maximiser
    (:func:`relkit.checkpoint.renewal_optimum`), each attempt renewing it.
    """
    runs = goodput.runs
    if run is not None:
        runs = runs.filter(pl.col("run_id") == run)
        if runs.height == 0:
            known = ", ".join(goodput.runs["run_id"].to_list()) or "none"
            msg = f"run {run!r} was not measured; runs: {known}"
            raise InvalidParameterError(msg)
    if gpus is not None and (
        isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1
    ):
        msg = f"gpus must be a whole number >= 1, e.g. --gpus 16384; got {gpus!r}"
        raise InvalidParameterError(msg)
    rows: list[dict[str, Any]] = []
    for r in runs.iter_rows(named=True):
        mine = goodput.attempts.filter(pl.col("run_id") == r["run_id"])
        ran = (
            mine.filter(pl.col("end_ts").is_not_null())
            .select(
                (
                    (pl.col("end_ts") - pl.col("start_ts")).dt.total_microseconds()
                    / 3.6e9
                ).sum()
            )
            .item()
        )
        exposure_h = float(ran or 0.0)
        if exposure_h <= 0.0:
            msg = f"run {r['run_id']}: no running time measured, so no failure rate"
            raise InsufficientDataError(msg)
        per = _per_failure(mine)
        w = cost_h
        if w is None:
            if r["checkpoint_save_s"] is None or r["checkpoint_save_s"] <= 0:
                msg = (
                    f"run {r['run_id']}: its log gives no checkpoint save time; "
                    "give the blocking write with --cost-h"
                )
                raise InsufficientDataError(msg)
            w = r["checkpoint_save_s"] / 3600.0
        u0 = per["restart_h"] if restart_h is None else restart_h
        n_fail = int(r["n_interruptions"] or 0)
        measured_gpus = r["n_gpus"]
        scale = 1.0
        target = measured_gpus
        if gpus is not None:
            if not measured_gpus:
                msg = (
                    f"run {r['run_id']}: its GPU count is not recorded, so the rate "
                    "cannot be scaled to --gpus"
                )
                raise InsufficientDataError(msg)
            scale = gpus / measured_gpus
            target = gpus
        model, model_note = (None, "no interruption: nothing to fit")
        if n_fail:
            model, model_note = _weibull_model(mine, confidence)
        shape = scale_h = None
        if model is not None:
            shape = model[0][0]
            scale_h = model[0][1] * scale ** (-1.0 / shape)  # hazard x scale
        kwargs = {
            "n_failures": n_fail,
            "exposure_h": exposure_h,
            "restart_h": u0,
            "cost_h": w,
            "queue_h": per["queue_h"],
            "confidence": confidence,
            "scale": scale,
        }
        decision = checkpoint.checkpoint_decision(**kwargs, model=model)
        load_note = None
        if model is None and n_fail:
            load = decision.failure_rate_per_h * (
                u0 + per["queue_h"] + (decision.interval_h or 0.0) / 2.0
            )
            if load > FIRST_ORDER_LOAD_LIMIT:
                exact = [(1.0, exposure_h / n_fail, 1.0)]  # exponential, mean 1/λ
                decision = checkpoint.checkpoint_decision(**kwargs, model=exact)
                load_note = (
                    f"first-order load λ(u0 + q + Δt/2) = {load:.3g} is above "
                    f"{FIRST_ORDER_LOAD_LIMIT}, where Kokolis et al.'s first-order "
                    "model is only approximate: the exact exponential renewal-reward "
                    "model (Daly 2006, doi:10.1016/j.future.2004.11.016) is used"
                )
        out = decision.to_dict()
        assumptions = [
            f"measured on run {r['run_id']} ({r['evidence']}): {n_fail} "
            f"interruptions in {exposure_h:.4g} h of running",
            model_note,
            *out.pop("assumptions"),
        ]
        if load_note is not None:
            assumptions.append(load_note)
        if not per["n_restarts"]:
            assumptions.append(
                "no failure was followed by a restart in the log, so the restart "
                "overhead u0 and queue wait q are unknown and taken as 0"
                + ("" if restart_h is not None else " (give --restart-h, restart_h=)")
            )
        else:
            assumptions.append(
                f"u0 and q are the means over the {per['n_restarts']} restarts "
                "after a failure"
            )
        if cost_h is not None:
            assumptions.append(f"checkpoint write w = {cost_h:.4g} h as given")
        if restart_h is not None:
            assumptions.append(f"restart overhead u0 = {restart_h:.4g} h as given")
        rows.append(
            {
                "run_id": r["run_id"],
                "evidence": r["evidence"],
                "gpus": target,
                "measured_gpus": measured_gpus,
                "n_failures": n_fail,
                "exposure_h": exposure_h,
                "measured_interval_h": r["checkpoint_interval_h"],
                "measured_ettr": r["ettr_frac"],
                "cost_h": w,
                "restart_h": u0,
                "queue_h": per["queue_h"],
                "weibull_shape": shape,
                "weibull_scale_h": scale_h,
                **out,
                "assumptions": assumptions,
            }
        )
    return pl.DataFrame(rows)


def _scaled_components(
    row: dict[str, Any], rate_per_h: float
) -> list[tuple[float, float, float]]:
    """Scale the decision's Weibull model's hazard to ``rate_per_h``."""
    shape, scale_h = row["weibull_shape"], row["weibull_scale_h"]
    factor = rate_per_h / row["failure_rate_per_h"]
    return [(shape, scale_h * factor ** (-1.0 / shape), 1.0)]


def decision_curve(
    decision: dict[str, Any], *, intervals_h: Sequence[float] | None = None
) -> pl.DataFrame:
    """Tabulate the expected ETTR against the interval for a decision, with bounds.

    Parameters
    ----------
    decision : dict
        One row of :func:`decide_checkpoints` (``row(i, named=True)``) with
        failures counted (``failure_rate_per_h`` > 0).
    intervals_h : sequence of float, optional
        Intervals in hours; default 61 points from a tenth to ten times the
        recommended interval, log-spaced.

    Returns
    -------
    pl.DataFrame
        ``interval_h, ettr_frac, ettr_lower, ettr_upper``: the model of the
        decision (exponential or the fitted Weibull by renewal-reward) at the
        measured rate and at its upper and lower confidence bounds.

    Raises
    ------
    InsufficientDataError
        If the decision has no failure rate (no interruption measured).
    """
    rate = decision.get("failure_rate_per_h")
    centre = decision.get("interval_h") or decision.get("young_interval_h")
    if not rate or not centre:
        msg = (
            f"run {decision.get('run_id')}: no interruption measured, so there is "
            "no ETTR curve to draw"
        )
        raise InsufficientDataError(msg)
    grid = (
        np.asarray(intervals_h, dtype=float)
        if intervals_h is not None
        else np.geomspace(centre / 10.0, centre * 10.0, 61)
    )
    rates = {
        "ettr_frac": rate,
        "ettr_lower": decision["failure_rate_upper_per_h"],
        "ettr_upper": decision["failure_rate_lower_per_h"] or rate,
    }
    out: dict[str, list[float]] = {"interval_h": grid.tolist()}
    for name, r in rates.items():
        if decision.get("weibull_shape") is not None:
            comps = _scaled_components(decision, r)
            out[name] = [
                checkpoint.renewal_ettr(
                    float(t),
                    cost_h=decision["cost_h"],
                    restart_h=decision["restart_h"],
                    components=comps,
                    downtime_h=decision["queue_h"],
                )
                for t in grid
            ]
        else:
            out[name] = [
                checkpoint.expected_ettr(
                    n_nodes=1,
                    failures_per_node_day=r * 24.0,
                    restart_h=decision["restart_h"],
                    interval_h=float(t),
                    cost_h=decision["cost_h"],
                    queue_h=decision["queue_h"],
                )
                for t in grid
            ]
    return pl.DataFrame(out)


#: GPU counts of :func:`decision_scale_sweep`: 1,024 to 262,144.
SWEEP_GPUS = tuple(2**k for k in range(10, 19))


def decision_scale_sweep(
    decision: dict[str, Any], *, gpus: Sequence[int] = SWEEP_GPUS
) -> pl.DataFrame:
    """Tabulate the expected ETTR at the optimal interval against job size.

    Parameters
    ----------
    decision : dict
        One row of :func:`decide_checkpoints` with failures counted.
    gpus : sequence of int, default 1,024 to 262,144
        Job sizes in GPUs.

    Returns
    -------
    pl.DataFrame
        ``gpus, interval_h, mttf_h, expected_ettr, expected_ettr_lower,
        expected_ettr_upper``: Kokolis et al.'s E[ETTR] at the optimal
        interval (:func:`relkit.checkpoint.whatif`) with the measured rate per
        GPU, restart, queue and checkpoint cost, failures proportional to size
        (MTTF(N) = 1/(N r), arXiv:2410.21680); bounds from the rate's bounds.

    Raises
    ------
    InsufficientDataError
        If the decision has no failure rate or no GPU count.
    """
    rate, size = decision.get("failure_rate_per_h"), decision.get("gpus")
    if not rate or not size:
        msg = (
            f"run {decision.get('run_id')}: no failure rate or GPU count, so no "
            "sweep over job size"
        )
        raise InsufficientDataError(msg)
    per_gpu_day = {
        "expected_ettr": rate * 24.0 / size,
        "expected_ettr_lower": decision["failure_rate_upper_per_h"] * 24.0 / size,
        "expected_ettr_upper": (decision["failure_rate_lower_per_h"] or rate)
        * 24.0
        / size,
    }
    out = None
    for name, r in per_gpu_day.items():
        table = checkpoint.whatif(
            gpus=list(gpus),
            failures_per_node_day=r * 8.0,
            restart_h=decision["restart_h"],
            cost_h=decision["cost_h"],
            queue_h=decision["queue_h"],
            gpus_per_node=8,
        ).select("gpus", "interval_h", "mttf_h", pl.col("expected_ettr").alias(name))
        out = (
            table
            if out is None
            else out.join(table.select("gpus", name), on="gpus", how="left")
        )
    assert out is not None
    return out.sort("gpus")


class LossesFilled(NamedTuple):
    """Interruptions with their lost GPU-hours, and what could not be filled.

    Unpacks as ``interruptions, note``.

    Parameters
    ----------
    interruptions : pl.DataFrame
        The interruptions with ``lost_gpu_h`` and ``lost_basis`` filled where possible.
    note : str, optional
        What could not be filled and why; None when every figure is filled.
    """

    interruptions: pl.DataFrame
    note: str | None


def interruptions_with_losses(
    interruptions: pl.DataFrame,
    checkpoints: pl.DataFrame | None,
    jobs: pl.DataFrame | None = None,
    job_nodes: pl.DataFrame | None = None,
) -> LossesFilled:
    """Fill the interruptions' really lost GPU-hours from the store's checkpoint log.

    Parameters
    ----------
    interruptions : pl.DataFrame
        From :func:`relkit.jobs.job_interruptions` (``lost_gpu_h`` null).
    checkpoints : pl.DataFrame or None
        The store's ``checkpoints`` table; may be empty.
    jobs, job_nodes : pl.DataFrame, optional
        The store's job tables (attempt bounds and submit times).

    Returns
    -------
    interruptions : pl.DataFrame
        With ``lost_gpu_h`` and ``lost_basis`` filled where a measured run's
        attempt matches (:func:`relkit.jobs.interruption_losses`).
    note : str or None
        What could not be filled and why, to show the user; None when every
        interruption has its figure.
    """
    from relkit.jobs import interruption_losses

    n = interruptions.height
    if n == 0:
        return LossesFilled(interruptions, None)
    if checkpoints is None or checkpoints.height == 0:
        return LossesFilled(
            interruptions,
            (
                "lost_gpu_h needs the run's checkpoint log (relkit ingest --kind "
                "checkpoints); without it only lost_gpu_h_upper, the whole attempt's "
                "GPU-hours, is known"
            ),
        )
    goodput = run_goodput(checkpoints, jobs, job_nodes)
    out = interruption_losses(interruptions, goodput.attempts)
    missing = out.filter(pl.col("lost_gpu_h").is_null()).height
    note = None
    if missing:
        note = (
            f"{missing} of {n} interruptions match no attempt of a run in the "
            "checkpoint log (same job id, end within 120 s): their lost_gpu_h is "
            "null and only lost_gpu_h_upper (the whole attempt) is known"
        )
    return LossesFilled(out, note)


class PerModePlan(NamedTuple):
    """The per-mode failure models of a run and the checkpoint optimum they give.

    Unpacks as ``modes, optimum``.

    Parameters
    ----------
    modes : pl.DataFrame
        One row per failure mode with its Weibull fit and whether it was used.
    optimum : RenewalOptimum
        The renewal-reward optimum of the job's survival.
    """

    modes: pl.DataFrame
    optimum: "checkpoint.RenewalOptimum"


def per_mode_checkpoint_plan(
    events: pl.DataFrame,
    assets: pl.DataFrame,
    *,
    n_nodes: int,
    cost_h: float,
    restart_h: float,
    queue_h: float = 0.0,
    min_failures: int = 5,
    sources: pl.DataFrame | None = None,
    log_spans: pl.DataFrame | None = None,
    failure_modes: pl.DataFrame | None = None,
) -> PerModePlan:
    """Find the checkpoint interval of a job on ``n_nodes`` from per-mode Weibull fits.

    Parameters
    ----------
    events, assets : pl.DataFrame
        The store's ``events`` and ``assets`` tables (failure logs and the
        units at risk).
    n_nodes : int
        Nodes the job spans, >= 1.
    cost_h, restart_h, queue_h : float
        Blocking checkpoint write w (> 0), restart overhead u₀ and queue
        wait per interruption (>= 0), hours.
    min_failures : int, default 5
        Modes with fewer failures are left out of the model (and flagged).
    sources, log_spans, failure_modes : pl.DataFrame, optional
        The store's tables of the same names.

    Returns
    -------
    modes : pl.DataFrame
        One row per failure mode: ``failure_mode, n_failures, weibull_shape,
        weibull_shape_lower, weibull_shape_upper, weibull_scale_h, used``.
    optimum : relkit.checkpoint.RenewalOptimum
        The renewal-reward maximiser of the job's survival
        S(t) = Π_mode S_mode(t)^N and Young's interval at the same MTTF.

    Raises
    ------
    InsufficientDataError
        If no mode has ``min_failures`` failures with a Weibull fit.
    InvalidParameterError
        If ``n_nodes`` or a duration is out of range.

    Notes
    -----
    Each mode's fit is of the time between its failures on one node
    (:func:`relkit.answers.survival_by` with ``unit="node"``); the job fails
    at the first failure of any mode on any of its N nodes, modes and nodes
    independent and each renewed when an attempt starts, so its survival is
    the product of the per-mode survivals to the power N (a Weibull
    component ``(shape, scale_h, N)`` per mode of
    :func:`relkit.checkpoint.renewal_ettr`). With decreasing hazards (shapes
    below 1, as Schroeder & Gibson found on LANL's systems, DSN 2006,
    doi:10.1109/DSN.2006.5) the optimum departs from Young's interval
    (doi:10.1145/361147.361115). The model holds only the modes the failure
    logs record: failures that leave no log line (software, user errors) are
    missing from it, while a run's own interruption rate
    (:func:`decide_checkpoints`) counts them.
    """
    from relkit.answers import survival_by

    if isinstance(n_nodes, bool) or not isinstance(n_nodes, int) or n_nodes < 1:
        msg = f"n_nodes must be a whole number >= 1; got {n_nodes!r}"
        raise InvalidParameterError(msg)
    fits = survival_by(
        events,
        assets,
        by=["failure_mode"],
        unit="node",
        sources=sources,
        log_spans=log_spans,
        failure_modes=failure_modes,
    )
    modes = fits.select(
        "failure_mode",
        "n_failures",
        "weibull_shape",
        "weibull_shape_lower",
        "weibull_shape_upper",
        "weibull_scale_h",
        used=(pl.col("n_failures") >= min_failures)
        & pl.col("weibull_shape").is_not_null()
        & pl.col("weibull_scale_h").is_not_null(),
    ).sort("failure_mode")
    used = modes.filter("used")
    if used.height == 0:
        msg = (
            f"no failure mode has {min_failures} failures with a Weibull fit, so "
            "there is no per-mode failure model; lower min_failures or use the "
            "run's measured rate (relkit checkpoint --db)"
        )
        raise InsufficientDataError(msg)
    components = [
        (float(r["weibull_shape"]), float(r["weibull_scale_h"]), float(n_nodes))
        for r in used.iter_rows(named=True)
    ]
    optimum = checkpoint.renewal_optimum(
        cost_h=cost_h, restart_h=restart_h, components=components, downtime_h=queue_h
    )
    return PerModePlan(modes, optimum)
