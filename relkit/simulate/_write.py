"""Write a simulation as the raw files a cluster produces, plus its ground truth.

The run's log, ``checkpoints.jsonl``, has one JSON record per line in time order
(``ts`` in UTC with ``Z``; ``run``, ``attempt``, ``job_id`` on every record;
``event`` one of ``job_start``, ``step_end``, ``checkpoint_saved``,
``checkpoint_restored``, ``failure``, ``job_end``), read back by
``relkit ingest --kind checkpoints``. Its ``step`` fields follow the
convention of :mod:`relkit.ingest.checkpoints` (and of case C18):

- ``step_end``: ``step`` is the 0-based index of the step that ended, so
  ``"step": 179`` means 180 steps are done;
- ``checkpoint_saved`` and ``checkpoint_restored``: ``step`` is the number of
  steps the checkpoint holds (the index of the next step to run);
- ``job_end``: ``final_step`` is the number of steps done.
"""

import contextlib
import json
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from relkit.errors import InvalidParameterError
from relkit.simulate._config import SimConfig
from relkit.simulate._kernel import write_kernel_logs
from relkit.simulate._run import RUN_ID
from relkit.simulate._sacct import SacctSpool, write_sacct
from relkit.simulate._simulate import (
    Simulation,
    gpu_uuids,
    horizon_end,
    run_simulation,
)
from relkit.simulate._size import check_size

__all__ = ["OUTPUT_FILES", "simulate_to_files", "write_simulation"]

#: Files (and the directory) written under ``out``.
OUTPUT_FILES = (
    "kernel",
    "sacct.psv",
    "checkpoints.jsonl",
    "assets.csv",
    "ground_truth.json",
)
#: The run logs a ``step_end`` record every this many steps.
PROGRESS_EVERY_STEPS = 180


def _iso(value: datetime | None) -> str | None:
    if value is None:
        return None
    return value.isoformat(timespec="microseconds").replace("+00:00", "Z")


def check_out(out: str | Path, *, force: bool) -> Path:
    """Check an output directory before anything is simulated; return it.

    Refuses an empty path, a path under a file, a file, a non-empty directory
    (unless ``force``) and a place that cannot be written (a probe directory
    is created and removed in the nearest existing directory).
    """
    if isinstance(out, str) and not out.strip():
        msg = (
            "--out is empty; give the directory to write into, e.g. --out sim/ "
            "(library: out='sim')."
        )
        raise InvalidParameterError(msg)
    out = Path(out)
    if out.exists() and not out.is_dir():
        msg = f"--out {out}: exists and is not a directory; give a directory path."
        raise InvalidParameterError(msg)
    existing = out
    while not existing.exists():
        existing = existing.parent
    if not existing.is_dir():
        msg = (
            f"--out {out}: {existing} is a file, so no directory can be made under "
            f"it; give a path whose parents are directories, e.g. --out "
            f"{existing.parent / 'sim'}."
        )
        raise InvalidParameterError(msg)
    if out.is_dir() and any(out.iterdir()) and not force:
        msg = (
            f"--out {out} is not empty; give an empty or new directory, or pass "
            "--force (library: force=True) to overwrite the simulation files "
            f"there ({', '.join(OUTPUT_FILES)})."
        )
        raise InvalidParameterError(msg)
    try:
        probe = tempfile.mkdtemp(prefix=".relkit-probe-", dir=existing)
        Path(probe).rmdir()
    except OSError as exc:
        msg = (
            f"--out {out}: cannot write in {existing} ({exc.strerror or exc}); "
            "choose a directory you can write to, e.g. under your home directory."
        )
        raise InvalidParameterError(msg) from exc
    return out


@contextmanager
def _staging(out: Path, *, force: bool) -> Iterator[Path]:
    """Yield a temporary directory inside ``out``; move its files there at the end.

    On any error or interrupt (Ctrl-C) the partial files are removed, and so
    are ``out`` and the parents this call created, so the next run starts
    clean. On success the simulation files of a forced ``out`` are replaced.
    """
    created = []
    for parent in [out, *out.parents]:
        if parent.exists():
            break
        created.append(parent)
    out.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".relkit-simulate-", dir=out))
    try:
        yield tmp
        if force:
            _remove_old(out)
        for item in sorted(tmp.iterdir()):
            target = out / item.name
            if item.is_dir() and target.is_dir():  # kernel/ kept for other files
                for f in sorted(item.iterdir()):
                    f.replace(target / f.name)
                item.rmdir()
            else:
                item.replace(target)
        tmp.rmdir()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        for d in created:  # innermost first
            with contextlib.suppress(OSError):
                d.rmdir()  # only if still empty
        raise


def _remove_old(out: Path) -> None:
    """Remove the simulation files a previous run wrote in ``out``."""
    kernel = out / "kernel"
    if kernel.is_dir():
        for f in kernel.iterdir():
            if f.is_file() and f.suffix in (".log", ".syslog"):
                f.unlink()
        if not any(kernel.iterdir()):
            kernel.rmdir()
    for name in OUTPUT_FILES[1:]:
        if (out / name).is_file():
            (out / name).unlink()


def _run_records(sim: Simulation) -> Iterator[dict[str, Any]]:
    """Yield the run's log: attempts, progress, checkpoints, failures, in time order."""
    cfg = sim.config
    runs = sim.jobs.filter(pl.col("partition") == "train").sort("start_ts")
    if runs.height == 0:
        return
    step_s = cfg.step_time_s
    ck = sim.checkpoints
    intr = sim.interruptions.filter(pl.col("run_id") == RUN_ID)
    failure_at = {
        (r["job_id"], r["attempt"]): r
        for r in intr.filter(pl.col("kind") == "unexpected").iter_rows(named=True)
    }
    by_attempt = ck.partition_by("attempt", as_dict=True)
    empty = ck.clear()
    for k, row in enumerate(runs.iter_rows(named=True), start=1):
        # attempts do not overlap in time, so sorting each one's records in turn
        # puts the whole log in time order without holding it
        records: list[tuple[datetime, int, dict[str, Any]]] = []
        start, end = row["start_ts"], row["end_ts"]
        base = {"run": RUN_ID, "attempt": k, "job_id": row["job_id"]}
        records.append(
            (
                start,
                0,
                {
                    **base,
                    "event": "job_start",
                    "nodes": row["n_nodes"],
                    "gpus": row["n_gpus"],
                },
            )
        )
        s0, s1 = row["start_step"], row["end_step"]
        restored = start.timestamp() + cfg.restart_h * 3600.0
        if s0 > 0 and (end is None or restored < end.timestamp()):
            records.append(
                (
                    datetime.fromtimestamp(restored, tz=start.tzinfo),
                    1,
                    {
                        **base,
                        "event": "checkpoint_restored",
                        "step": s0,
                        "restore_s": round(cfg.restart_h * 3600.0, 3),
                    },
                )
            )
        mine = by_attempt.get((k,), empty)
        c_steps = mine["step"].to_numpy()
        c_cost = mine["save_s"].to_numpy()
        first = (s0 // PROGRESS_EVERY_STEPS + 1) * PROGRESS_EVERY_STEPS
        marks = np.arange(first, s1 + 1, PROGRESS_EVERY_STEPS)
        if marks.size:
            before = np.searchsorted(c_steps, marks, side="left")
            paid = np.concatenate([[0.0], np.cumsum(c_cost)])[before]
            t = restored + (marks - s0) * step_s + paid
            for s, ts in zip(marks.tolist(), t.tolist(), strict=True):
                if end is not None and ts > end.timestamp():
                    break
                # s steps are done: the one that ended has index s - 1
                records.append(
                    (
                        datetime.fromtimestamp(ts, tz=start.tzinfo),
                        2,
                        {**base, "event": "step_end", "step": s - 1},
                    )
                )
        for c in mine.iter_rows(named=True):
            records.append(
                (
                    c["end_ts"],
                    3,
                    {
                        **base,
                        "event": "checkpoint_saved",
                        "step": c["step"],
                        "start_ts": _iso(c["start_ts"]),
                        "save_s": round(c["save_s"], 3),
                        "level": c["level"],
                    },
                )
            )
        if end is None:
            yield from _sorted_records(records)
            continue
        hit = failure_at.get((row["job_id"], row["attempt"]))
        if hit is not None:
            records.append(
                (
                    end,
                    4,
                    {
                        **base,
                        "event": "failure",
                        "cause": row["state"],
                        "node": hit["host"],
                    },
                )
            )
        else:
            records.append(
                (
                    end,
                    4,
                    {
                        **base,
                        "event": "job_end",
                        "status": row["state"],
                        "final_step": s1,
                    },
                )
            )
        yield from _sorted_records(records)


def _sorted_records(
    records: list[tuple[datetime, int, dict[str, Any]]],
) -> Iterator[dict[str, Any]]:
    records.sort(key=lambda r: (r[0], r[1]))
    for ts, _, rec in records:
        yield {"ts": _iso(ts), **rec}


def write_simulation(
    sim: Simulation,
    out: str | Path,
    *,
    force: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Write a simulation as raw cluster files and its ground truth.

    Parameters
    ----------
    sim : Simulation
        From :func:`simulate_cluster`.
    out : str or Path
        Output directory; created if missing. Written inside it:
        ``kernel/<host>.log`` (and ``<host>.syslog`` for hosts whose kernel
        log is ``dmesg``), ``sacct.psv``, ``checkpoints.jsonl``,
        ``assets.csv`` and ``ground_truth.json``.
    force : bool, default False
        Overwrite the simulation files of a non-empty ``out`` (other files
        there are kept).
    progress : callable, optional
        Called with a short message now and then (stderr on the command line).

    Returns
    -------
    dict
        Summary: ``out``, ``seed``, ``preset``, ``nodes``, ``days``,
        ``n_incidents``, ``n_interruptions``, ``n_attempts``, ``log_lines``,
        ``sacct_rows``, ``ettr_frac`` of the run (or None), ``seconds``, and
        ``ingest`` (the commands that read the files back).

    Raises
    ------
    InvalidParameterError
        Before anything is written: if ``out`` is empty text, a file, under a
        file, a non-empty directory while ``force`` is False, or in a place
        that cannot be written (the message names the path and the fix).
    OSError
        If writing fails midway (disk full, I/O error); the partial files are
        removed first, as on ``KeyboardInterrupt``, so the next run does not
        find a half-written ``out``.

    Notes
    -----
    ``checkpoints.jsonl`` holds the run's records (``job_start``, a
    ``step_end`` every :data:`PROGRESS_EVERY_STEPS` steps,
    ``checkpoint_saved``, ``checkpoint_restored``, ``failure``, ``job_end``).
    A ``step_end`` record's ``step`` is the 0-based index of the step that
    ended (``179`` after 180 steps, as in case C18); a checkpoint's ``step``
    and ``job_end``'s ``final_step`` are counts of steps done. It is read by
    ``relkit ingest --kind checkpoints`` (:func:`relkit.ingest.read_checkpoints`).

    The files are written into a temporary directory inside ``out`` and moved
    into place at the end. The kernel logs are written a batch of hosts at a
    time and ``sacct.psv`` (a ``sacct -D -P`` dump) in chunks of attempts;
    ``sim`` itself holds every attempt in memory, so for runs with millions of
    background jobs use :func:`simulate_to_files`, which writes the same bytes
    without holding them. The same simulation always writes the same bytes.

    Examples
    --------
    >>> import tempfile
    >>> from relkit.simulate import simulate_cluster, simulation_preset
    >>> sim = simulate_cluster(
    ...     simulation_preset("llama3-54d", nodes=66, days=2), seed=3
    ... )
    >>> info = write_simulation(sim, tempfile.mkdtemp())
    >>> sorted(p.name for p in info["out"].iterdir())
    ['assets.csv', 'checkpoints.jsonl', 'ground_truth.json', 'kernel', 'sacct.psv']
    >>> write_simulation(sim, "")
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: --out is empty; ...
    """
    started = time.perf_counter()
    out = check_out(out, force=force)
    say = progress or (lambda _msg: None)
    with _staging(out, force=force) as tmp:
        info = _write_files(
            sim,
            tmp,
            say,
            sacct=lambda path: write_sacct(path, sim.jobs, sim.config, progress=say),
            n_attempts=sim.jobs.height,
        )
    return {"out": out, **info, "seconds": round(time.perf_counter() - started, 2)}


def simulate_to_files(
    config: SimConfig,
    out: str | Path,
    *,
    seed: int,
    force: bool = False,
    allow_big: bool = False,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Simulate a cluster and write its files in bounded memory.

    The same files as ``write_simulation(simulate_cluster(config, seed=seed),
    out)``, byte for byte, but the background jobs' attempts are written to
    ``sacct.psv`` in chunks as the scheduler finishes them instead of being
    held (what ``relkit simulate`` runs). The output's size is estimated first
    (:func:`estimate_output`) and a simulation too large is refused before
    anything is simulated.

    Parameters
    ----------
    config : SimConfig
        Fleet, failure processes and workload, e.g. from
        :func:`simulation_preset`.
    out : str or Path
        Output directory (see :func:`write_simulation`).
    seed : int
        Seed of ``np.random.default_rng``, >= 0.
    force : bool, default False
        Overwrite the simulation files of a non-empty ``out``.
    allow_big : bool, default False
        Run even above the size limits (``--yes-big``).
    progress : callable, optional
        Called with a short message at each stage.

    Returns
    -------
    dict
        The summary of :func:`write_simulation`.

    Raises
    ------
    InvalidParameterError
        Before anything is simulated: ``out`` as in :func:`write_simulation`;
        an invalid ``seed`` or config; or, unless ``allow_big``, an estimate
        above a limit of :data:`SIZE_LIMITS` or above the free space of
        ``out``'s file system (the message gives the estimate).
    OSError
        If writing fails midway; the partial files are removed first, as on
        ``KeyboardInterrupt``.

    Examples
    --------
    >>> import tempfile
    >>> from relkit.simulate import simulation_preset
    >>> cfg = simulation_preset("rsc1", nodes=40, days=1)
    >>> info = simulate_to_files(cfg, tempfile.mkdtemp(), seed=1)
    >>> info["n_attempts"] > 100
    True
    """
    started = time.perf_counter()
    out = check_out(out, force=force)
    say = progress or (lambda _msg: None)
    cfg = config.validated()
    estimate = check_size(cfg, out, allow_big=allow_big)
    say(
        f"estimated output: {estimate.log_lines:,.0f} log lines, "
        f"{estimate.job_attempts:,.0f} job attempts, {estimate.bytes / 1e6:,.0f} MB"
    )
    with _staging(out, force=force) as tmp:
        spool = SacctSpool(tmp / ".sacct-runs", cfg)
        sim, n_attempts = run_simulation(cfg, seed=seed, progress=say, sink=spool.add)
        spool.add(sim.jobs)  # the training run's attempts
        info = _write_files(sim, tmp, say, sacct=spool.finish, n_attempts=n_attempts)
    return {"out": out, **info, "seconds": round(time.perf_counter() - started, 2)}


def _write_files(
    sim: Simulation,
    out: Path,
    say: Callable[[str], None],
    *,
    sacct: Callable[[Path], int],
    n_attempts: int,
) -> dict[str, Any]:
    cfg = sim.config
    sim.assets.write_csv(out / "assets.csv")
    uuids = gpu_uuids(sim.seed, cfg.nodes, cfg.gpus_per_node)
    rng = np.random.default_rng([sim.seed, 11])
    n_lines = write_kernel_logs(
        out / "kernel",
        cfg,
        hosts=sim.assets["host"].to_list(),
        framings=sim.framings,
        boot_h=sim.boot_h,
        storms=sim.lines,
        reboots=sim.reboots,
        uuids=uuids,
        rng=rng,
        progress=say,
    )
    say(f"kernel logs: {n_lines:,} lines")
    n_sacct = sacct(out / "sacct.psv")
    say(f"sacct.psv: {n_sacct:,} rows")
    with (out / "checkpoints.jsonl").open("w", encoding="utf-8") as fh:
        for rec in _run_records(sim):
            fh.write(json.dumps(rec) + "\n")
    truth = ground_truth(
        sim, log_lines=n_lines, sacct_rows=n_sacct, job_attempts=n_attempts
    )
    (out / "ground_truth.json").write_text(
        json.dumps(truth, indent=1) + "\n", encoding="utf-8"
    )
    ettr = sim.runs["ettr_frac"][0] if sim.runs.height else None
    return {
        "seed": sim.seed,
        "preset": cfg.name,
        "nodes": cfg.nodes,
        "days": cfg.days,
        "n_incidents": sim.incidents.height,
        "n_interruptions": sim.interruptions.height,
        "n_attempts": n_attempts,
        "log_lines": n_lines,
        "sacct_rows": n_sacct,
        "ettr_frac": ettr,
        "ingest": truth["ingest"],
    }


def _frame_rows(frame: pl.DataFrame) -> list[dict[str, Any]]:
    cols = {
        c: pl.col(c).dt.strftime("%Y-%m-%dT%H:%M:%S%.6fZ")
        for c, t in frame.schema.items()
        if isinstance(t, pl.Datetime)
    }
    return frame.with_columns(**cols).to_dicts()


def ground_truth(
    sim: Simulation,
    *,
    log_lines: int | None = None,
    sacct_rows: int | None = None,
    job_attempts: int | None = None,
) -> dict[str, Any]:
    """Return the ground truth of a simulation as JSON-ready values."""
    from relkit import __version__

    cfg = sim.config
    end = horizon_end(cfg)
    ref = (end - _second()).date().isoformat()  # type: ignore[operator]
    run = sim.interruptions.filter(pl.col("run_id").is_not_null())
    table5 = (
        run.filter(pl.col("kind") == "unexpected")
        .group_by("table5_row")
        .len()
        .sort("table5_row", nulls_last=True)
    )
    return {
        "generator": "relkit.simulate",
        "relkit_version": __version__,
        "seed": sim.seed,
        "preset": cfg.name,
        "span": {"start": _iso(cfg.start), "end": _iso(end)},  # type: ignore[arg-type]
        "config": cfg.to_dict(),
        "ingest": {
            "assets": "relkit ingest --kind assets assets.csv",
            "checkpoints": "relkit ingest --kind checkpoints checkpoints.jsonl",
            "kernel": (
                f"relkit ingest --kind kernel --tz {cfg.local_tz} --reference-date "
                f"{ref} --host-from-filename kernel/"
            ),
            "incidents": "relkit incidents --window-min 10 --flap-debounce-min 5",
            "sacct_tz": cfg.local_tz,
        },
        "fleet": {
            "nodes": cfg.nodes,
            "gpus_per_node": cfg.gpus_per_node,
            "run_nodes": cfg.run_nodes,
            "spare_nodes": cfg.spare_nodes,
            "lemon_hosts": sim.fleet.filter(pl.col("lemon"))["host"].to_list(),
            "framings": dict(
                zip(sim.assets["host"].to_list(), sim.framings, strict=True)
            ),
        },
        "failure_rate_per_node_day": {
            "r_f": cfg.failures_per_node_day(),
            "interrupting": cfg.failures_per_node_day(counted_only=False),
            "definition": (
                "r_f: fleet-mean rate of the modes that count as failures and "
                "interrupt a job (the node failure rate of Kokolis et al.), per "
                "calendar node-day for calendar modes and per node-day with a job "
                "running for job-dependent ones; interrupting: also the modes that "
                "interrupt but do not count (user-code errors)"
            ),
        },
        "processes": sim.processes.to_dicts(),
        **_trend_truth(cfg),
        "runs": sim.runs.to_dicts(),
        "counts": {
            "incidents": sim.incidents.height,
            "logged_failure_incidents": sim.incidents.filter(
                pl.col("logged") & pl.col("counts_as_failure")
            ).height,
            "interruptions_unexpected": sim.interruptions.filter(
                pl.col("kind") == "unexpected"
            ).height,
            "interruptions_planned": sim.interruptions.filter(
                pl.col("kind") == "planned"
            ).height,
            "job_attempts": sim.jobs.height if job_attempts is None else job_attempts,
            "log_lines": log_lines,
            "sacct_rows": sacct_rows,
        },
        "run_interruptions_by_table5_row": dict(table5.iter_rows()),  # type: ignore[arg-type]
        "incidents": _frame_rows(sim.incidents.drop("cid", "t_h", "node", "gpu")),
        "interruptions": _frame_rows(sim.interruptions),
    }


def _trend_truth(cfg: SimConfig) -> dict[str, Any]:
    """Return the injected rate trend, when there is one (nothing otherwise)."""
    if cfg.rate_trend == 1.0:
        return {}
    from relkit.simulate._modes import BEHAVIOUR

    modes = [
        p.failure_mode
        for p in cfg.processes
        if p.weibull_shape == 1.0
        and p.rate_per_unit_h > 0
        and not BEHAVIOUR[p.failure_mode].job_dependent
        and BEHAVIOUR[p.failure_mode].counts_as_failure
    ]
    return {
        "rate_trend": {
            "model": "power-law NHPP (Crow-AMSAA) in calendar time from the start",
            "beta": cfg.rate_trend,
            "intensity": "rate_per_unit_h * beta * (t / T) ** (beta - 1), T = span",
            "direction": "rising" if cfg.rate_trend > 1 else "falling",
            "failure_modes": modes,
        }
    }


def _second() -> Any:  # noqa: ANN401
    from datetime import timedelta

    return timedelta(microseconds=1)
