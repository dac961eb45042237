"""Benchmark of cumulative incidence (issue 12 §7): 32,000 units, 4 modes.

- ``cif_32000``: :func:`relkit.survival.cumulative_incidence` (Aalen-Johansen
  for every mode, with delta-method bands, n_at_risk and n_events) on 32,000
  units with continuous (untied) times, 4 failure modes and 30 % right
  censoring, against a baseline on the same table in the same run:
  scikit-survival's ``cumulative_incidence_competing_risks`` (all modes at
  once) when it is importable, else lifelines' ``AalenJohansenFitter``
  fitted once per mode with ``calculate_variance=False`` (point estimates
  only, so the baseline does less than relkit). The issue's target is a
  ratio within 3x of scikit-survival's. scikit-survival is GPL-3 and not a
  relkit dependency; install it yourself to use it as the baseline.

Prints the baseline used on stderr and one JSON line per result on stdout.
Not run by the tests. Usage: ``python bench/bench_cif.py [--units N]
[--repeat R]``.
"""

import argparse
import json
import statistics
import sys
import time
import warnings
from collections.abc import Callable

import numpy as np
import polars as pl

from relkit.survival import cumulative_incidence

MODES = ("gpu", "network", "host", "software")


def make_table(n: int, seed: int = 0) -> tuple[pl.DataFrame, np.ndarray, np.ndarray]:
    """Survival table of ``n`` units and the (time, event code) arrays."""
    rng = np.random.default_rng(seed)
    time_h = rng.weibull(0.8, n) * 1000.0
    code = rng.integers(1, len(MODES) + 1, n)
    code[rng.random(n) < 0.3] = 0  # right-censored
    table = pl.DataFrame(
        {
            "stop_h": time_h,
            "observed": code > 0,
            "failure_mode": [MODES[k - 1] if k else None for k in code],
        }
    )
    return table, time_h, code


def baseline(time_h: np.ndarray, code: np.ndarray) -> tuple[str, Callable[[], object]]:
    """The scikit-survival baseline if importable, else lifelines per mode."""
    try:
        from sksurv.nonparametric import cumulative_incidence_competing_risks
    except ImportError:
        from lifelines import AalenJohansenFitter

        def lifelines_all() -> object:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                return [
                    AalenJohansenFitter(calculate_variance=False).fit(
                        time_h, code, event_of_interest=k
                    )
                    for k in range(1, len(MODES) + 1)
                ]

        return "lifelines AalenJohansenFitter x 4 modes (no variance)", lifelines_all

    return (
        "scikit-survival cumulative_incidence_competing_risks",
        lambda: cumulative_incidence_competing_risks(code, time_h),
    )


def cif_benchmark(units: int = 32_000, repeat: int = 5) -> dict[str, object]:
    """Time relkit against the baseline, interleaved; return the median ratio."""
    table, time_h, code = make_table(units)
    name, base = baseline(time_h, code)
    print(f"bench cif: baseline is {name}", file=sys.stderr, flush=True)

    def subject() -> object:
        return cumulative_incidence(table)

    subject()  # warm-up: imports, caches
    base()
    ratios, subject_s, baseline_s = [], [], []
    for n in range(repeat):
        print(f"bench cif: round {n + 1}/{repeat}", file=sys.stderr, flush=True)
        start = time.perf_counter()
        base()
        b = time.perf_counter() - start
        start = time.perf_counter()
        subject()
        s = time.perf_counter() - start
        ratios.append(s / b)
        subject_s.append(s)
        baseline_s.append(b)
    return {
        "benchmark": f"cif_{units}",
        "baseline": name,
        "ratio_median": round(statistics.median(ratios), 3),
        "ratio_min": round(min(ratios), 3),
        "subject_median_s": round(statistics.median(subject_s), 4),
        "baseline_median_s": round(statistics.median(baseline_s), 4),
        "repeat": repeat,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=32_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(json.dumps(cif_benchmark(args.units, args.repeat)))


if __name__ == "__main__":
    main()
