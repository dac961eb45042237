"""Seeded synthetic GPU clusters and training runs with known ground truth.

No public job trace with restarts and checkpoints can be shipped, and the
statistics need data whose true answer is known. :func:`simulate_cluster`
draws a fleet (nodes x GPUs, racks, hardware batches, lemon nodes), one failure
process per failure mode of :mod:`relkit.taxonomy` (exponential or Weibull),
a large training run with checkpoints and restarts and, optionally, a
background of research jobs under a Slurm-like scheduler.
:func:`write_simulation` writes it as the raw files a cluster produces
(per-host kernel logs, a ``sacct -D -P`` dump with every requeued attempt, a
checkpoint log, an assets table) plus ``ground_truth.json``, so that relkit's
own ingest reads them back and every stage can be checked against the truth;
:func:`simulate_to_files` does both in bounded memory (``relkit simulate``),
after :func:`estimate_output` says the output fits.

Presets (:func:`simulation_preset`): ``llama3-54d`` (Llama 3 405B, Table 5 of
arXiv:2407.21783, doi:10.48550/arXiv.2407.21783) and ``rsc1`` (Meta's RSC-1,
Kokolis et al., HPCA 2025, arXiv:2410.21680, doi:10.1109/HPCA61900.2025.00096).
Where each preset value comes from, or that it is assumed, is listed in
:mod:`relkit.simulate._presets`.
"""

from relkit.simulate._config import FailureProcess, SimConfig
from relkit.simulate._modes import BEHAVIOUR as BEHAVIOURS
from relkit.simulate._modes import ModeBehaviour
from relkit.simulate._presets import PRESETS, simulation_preset
from relkit.simulate._simulate import Simulation, simulate_cluster
from relkit.simulate._size import SIZE_LIMITS, OutputEstimate, estimate_output
from relkit.simulate._write import OUTPUT_FILES, simulate_to_files, write_simulation

__all__ = [
    "BEHAVIOURS",
    "OUTPUT_FILES",
    "PRESETS",
    "SIZE_LIMITS",
    "FailureProcess",
    "ModeBehaviour",
    "OutputEstimate",
    "SimConfig",
    "Simulation",
    "estimate_output",
    "simulate_cluster",
    "simulate_to_files",
    "simulation_preset",
    "write_simulation",
]
