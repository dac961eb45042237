"""Start-up of the ``relkit`` command against a bare ``python -c pass``.

Issue 13 §3: ``relkit --help``, ``relkit --version`` and a failing argument
check must take no more than 3x the interpreter's own start-up, so building the
argument parser imports none of DuckDB, polars, scipy, lifelines, Altair,
pyarrow, numpy (``tests/test_startup.py`` checks that structurally; this bench
gives the times).

In one run, interleaved round by round so that a busy machine slows every
command alike, it times ``--runs`` fresh child processes of the same
interpreter (``sys.executable``) for each of:

- ``python``: ``python -c pass``, the baseline;
- ``version``: ``relkit --version`` (exit 0);
- ``help``: ``relkit --help`` (exit 0);
- ``bad_option``: ``relkit mtbf --no-such-option`` (exit 2, argparse's usage
  error).

``relkit`` is the console script installed beside the interpreter (what a user
runs), or ``python -m relkit`` when there is none. The children may write
bytecode to a temporary ``PYTHONPYCACHEPREFIX`` (never into the source tree) and
one warm-up round fills it first, as an installed wheel's compiled files would;
``--no-bytecode`` measures with ``PYTHONDONTWRITEBYTECODE=1`` and no cache
instead (every relkit module compiled from source on every start).

It prints one JSON line per command (median and min in ms, ratio of the medians
to ``python``) and a summary line with every ratio and the target (<= 3).
Progress goes to stderr.

Usage: ``python bench/bench_startup.py [--runs N] [--no-bytecode]``.
"""

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Each relkit command's time over ``python -c pass`` must be at most this.
TARGET_RATIO = 3.0


def relkit_command() -> tuple[list[str], str]:
    """Return how to run ``relkit`` with this interpreter, and how it is named."""
    script = Path(sys.executable).parent / "relkit"
    if script.is_file():
        return [sys.executable, str(script)], "console script"
    return [sys.executable, "-m", "relkit"], "python -m relkit"


def commands() -> dict[str, tuple[list[str], int, str]]:
    """Return name -> (argv, expected exit code, label) of every timed command."""
    relkit, _ = relkit_command()
    python = [sys.executable, "-c", "pass"]
    todo = {
        "version": (["--version"], 0),
        "help": (["--help"], 0),
        "bad_option": (["mtbf", "--no-such-option"], 2),
    }
    out = {"python": (python, 0, "python -c pass")}
    for name, (args, code) in todo.items():
        out[name] = ([*relkit, *args], code, " ".join(["relkit", *args]))
    return out


def _log(msg: str) -> None:
    print(f"bench startup: {msg}", file=sys.stderr, flush=True)


def _time(argv: list[str], expected: int, env: dict[str, str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, capture_output=True, env=env, check=False)
    seconds = time.perf_counter() - start
    if done.returncode != expected:
        msg = (
            f"{' '.join(argv)} exited {done.returncode}, expected {expected}: "
            f"{done.stderr.decode(errors='replace').strip()[-500:]}"
        )
        raise RuntimeError(msg)
    return seconds


def startup_benchmark(runs: int = 15, *, bytecode: bool = True) -> dict[str, object]:
    """Time every command ``runs`` times; print one JSON line per command.

    Returns the summary: median ms per command and its ratio to ``python``.
    """
    cache = tempfile.mkdtemp(prefix="relkit-pycache-")
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
        env["PYTHONPYCACHEPREFIX"] = cache
    else:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
        env.pop("PYTHONPYCACHEPREFIX", None)
    todo = commands()
    try:
        for argv, expected, _ in todo.values():  # warm-up: fills the bytecode cache
            _time(argv, expected, env)
        times: dict[str, list[float]] = {name: [] for name in todo}
        for n in range(runs):
            _log(f"round {n + 1}/{runs}")
            for name, (argv, expected, _) in todo.items():
                times[name].append(_time(argv, expected, env))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    base = statistics.median(times["python"])
    ratios = {}
    for name, (_, expected, label) in todo.items():
        median = statistics.median(times[name])
        ratio = median / base
        rec = {
            "measure": name,
            "command": label,
            "exit_code": expected,
            "median_ms": round(median * 1e3, 1),
            "min_ms": round(min(times[name]) * 1e3, 1),
            "ratio_to_python": round(ratio, 2),
            "runs": runs,
        }
        print(json.dumps(rec), flush=True)
        if name != "python":
            ratios[f"{name}_over_python"] = round(ratio, 2)
    return {
        "benchmark": "startup",
        "relkit": relkit_command()[1],
        "bytecode_cached": bytecode,
        "python_ms": round(base * 1e3, 1),
        **ratios,
        "meets_target": all(r <= TARGET_RATIO for r in ratios.values()),
        "targets": dict.fromkeys(ratios, f"<= {TARGET_RATIO:g}"),
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument(
        "--no-bytecode",
        action="store_true",
        help="no bytecode cache: every start compiles relkit from source",
    )
    args = parser.parse_args()
    summary = startup_benchmark(args.runs, bytecode=not args.no_bytecode)
    print(json.dumps(summary), flush=True)


if __name__ == "__main__":
    main()
