"""Write a simulation as the raw files a cluster produces, plus its ground truth."""

import json
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np
import polars as pl

from relkit.errors import InvalidParameterError
from relkit.simulate._kernel import write_kernel_logs
from relkit.simulate._run import RUN_ID
from relkit.simulate._sacct import write_sacct
from relkit.simulate._simulate import Simulation, gpu_uuids, horizon_end

__all__ = ["OUTPUT_FILES", "write_simulation"]

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


def _prepare_out(out: Path, *, force: bool) -> None:
    if out.exists() and not out.is_dir():
        msg = f"--out {out}: exists and is not a directory; give a directory path."
        raise InvalidParameterError(msg)
    if out.exists() and any(out.iterdir()):
        if not force:
            msg = (
                f"--out {out} is not empty; give an empty or new directory, or pass "
                "--force (library: force=True) to overwrite the simulation files "
                f"there ({', '.join(OUTPUT_FILES)})."
            )
            raise InvalidParameterError(msg)
        kernel = out / "kernel"
        if kernel.is_dir():
            for f in kernel.iterdir():
                if f.is_file() and f.suffix in (".log", ".syslog"):
                    f.unlink()
        for name in OUTPUT_FILES[1:]:
            if (out / name).is_file():
                (out / name).unlink()
    out.mkdir(parents=True, exist_ok=True)


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
    records: list[tuple[datetime, int, dict[str, Any]]] = []
    for k, row in enumerate(runs.iter_rows(named=True), start=1):
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
        mine = ck.filter(pl.col("attempt") == k)
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
                records.append(
                    (
                        datetime.fromtimestamp(ts, tz=start.tzinfo),
                        2,
                        {**base, "event": "step_end", "step": s},
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
    records.sort(key=lambda r: (r[0], r[2]["attempt"], r[1]))
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
        Overwrite the simulation files of a non-empty ``out``.
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
        If ``out`` is a file, or a non-empty directory and ``force`` is False.

    Notes
    -----
    Everything is streamed: the kernel logs a batch of hosts at a time (memory
    bounded by the batch, not the 10⁷ lines of a large run) and ``sacct.psv``
    in chunks of attempts. The same simulation always writes the same bytes.

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
    """
    started = time.perf_counter()
    out = Path(out)
    _prepare_out(out, force=force)
    say = progress or (lambda _msg: None)
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
    n_sacct = write_sacct(out / "sacct.psv", sim.jobs, cfg, progress=say)
    say(f"sacct.psv: {n_sacct:,} rows")
    with (out / "checkpoints.jsonl").open("w", encoding="utf-8") as fh:
        for rec in _run_records(sim):
            fh.write(json.dumps(rec) + "\n")
    truth = ground_truth(sim, log_lines=n_lines, sacct_rows=n_sacct)
    (out / "ground_truth.json").write_text(
        json.dumps(truth, indent=1) + "\n", encoding="utf-8"
    )
    ettr = sim.runs["ettr_frac"][0] if sim.runs.height else None
    return {
        "out": out,
        "seed": sim.seed,
        "preset": cfg.name,
        "nodes": cfg.nodes,
        "days": cfg.days,
        "n_incidents": sim.incidents.height,
        "n_interruptions": sim.interruptions.height,
        "n_attempts": sim.jobs.height,
        "log_lines": n_lines,
        "sacct_rows": n_sacct,
        "ettr_frac": ettr,
        "seconds": round(time.perf_counter() - started, 2),
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
    sim: Simulation, *, log_lines: int | None = None, sacct_rows: int | None = None
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
        "processes": sim.processes.to_dicts(),
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
            "job_attempts": sim.jobs.height,
            "log_lines": log_lines,
            "sacct_rows": sacct_rows,
        },
        "run_interruptions_by_table5_row": dict(table5.iter_rows()),  # type: ignore[arg-type]
        "incidents": _frame_rows(sim.incidents.drop("cid", "t_h", "node", "gpu")),
        "interruptions": _frame_rows(sim.interruptions),
    }


def _second() -> Any:  # noqa: ANN401
    from datetime import timedelta

    return timedelta(microseconds=1)
