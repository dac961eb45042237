"""Jobs: attempts, interruptions, runs and their goodput, the Table 5 root causes.

Failures matter because they interrupt jobs. :func:`build_job_attempts` turns
the store's ``jobs`` and ``job_nodes`` into one row per logical job attempt
(Slurm's heterogeneous components merged); :func:`build_interruptions` ties
each attempt that ended abnormally to the failure incidents logged on its nodes
shortly before its end (an interval join: polars ``join_where`` on host and
time, never a cross product)
and gives it a cause; :func:`root_cause_table` counts the interruptions in the
rows of Llama 3's Table 5, planned and unexpected apart, and
:func:`interruption_summary` gives the mean time between them.
:func:`measure_goodput` follows a training run across its attempts and
measures its goodput (ETTR) with the badput breakdown, from step records,
checkpoint save times or the scheduler's records alone (modelled), and
:func:`interruption_losses` charges each interruption the GPU-hours it really
cost (``lost_gpu_h``; ``lost_gpu_h_upper`` is the whole attempt).

Causes (``cause``):

- from the matched incident's taxonomy category: ``hardware``, ``network``,
  ``software``, ``user`` (application Xids), ``maintenance``, ``unknown``;
- without an incident, from the scheduler's state: ``infrastructure``
  (``NODE_FAIL``, ``BOOT_FAIL``, ``LAUNCH_FAILED``, a Kubernetes taint
  eviction), ``user`` (``FAILED`` with an exit code, ``OUT_OF_MEMORY``),
  ``unknown`` (``REQUEUED`` without a sign of a deliberate requeue, a
  failure whose exit code is not recorded),
  ``user_action`` (``CANCELLED``), ``policy`` (``TIMEOUT``, ``DEADLINE``),
  ``scheduler`` (``PREEMPTED``), ``secondary`` (preempted to make room for the
  requeue of a job a failure interrupted).

Kinds (``kind``): ``unexpected`` (failures, and interruptions of unknown
cause), ``planned`` (a deliberate requeue with no failure incident: a
``REQUEUED`` Slurm attempt whose steps were cancelled, not failed, as
``scontrol requeue`` leaves them, or a Kubernetes pod evicted through the
Eviction API by ``kubectl drain``; an operator's or automation's action, such
as Llama 3's 47 planned interruptions), ``secondary``, and ``not_failure``
(user actions, time limits, preemption). A ``REQUEUED`` attempt without such
a sign (no step rows, or failed steps) is "interrupted, cause unknown" (case
C08 of ``cases/README.md``): requeues follow failures too (``RequeueExit``,
a job script that requeues itself after a crash).
"""

from relkit.jobs._attempts import (
    ATTEMPT_SCHEMA,
    JOB_FIELDS,
    build_job_attempts,
    drop_repeated_records,
    job_table,
)
from relkit.jobs._attribution import (
    DEFAULT_SLACK_MIN,
    INTERRUPTION_SCHEMA,
    JobInterruptions,
    build_interruptions,
    job_interruptions,
)
from relkit.jobs._goodput import (
    DUPLICATE_TOLERANCE_S,
    GOODPUT_ATTEMPT_SCHEMA,
    GOODPUT_RUN_SCHEMA,
    LOST_BASIS,
    MATCH_TOLERANCE_S,
    RECORD_KINDS,
    Goodput,
    interruption_losses,
    measure_goodput,
)
from relkit.jobs._rootcause import (
    InterruptionSummary,
    interruption_summary,
    root_cause_table,
)
from relkit.taxonomy import INFRA_CAUSES, OPEN_STATES, PLANNED_FLAGS, STATE_CAUSE

__all__ = [
    "ATTEMPT_SCHEMA",
    "DEFAULT_SLACK_MIN",
    "DUPLICATE_TOLERANCE_S",
    "GOODPUT_ATTEMPT_SCHEMA",
    "GOODPUT_RUN_SCHEMA",
    "INFRA_CAUSES",
    "INTERRUPTION_SCHEMA",
    "JOB_FIELDS",
    "LOST_BASIS",
    "MATCH_TOLERANCE_S",
    "OPEN_STATES",
    "PLANNED_FLAGS",
    "RECORD_KINDS",
    "STATE_CAUSE",
    "Goodput",
    "InterruptionSummary",
    "JobInterruptions",
    "build_interruptions",
    "build_job_attempts",
    "drop_repeated_records",
    "interruption_losses",
    "interruption_summary",
    "job_interruptions",
    "job_table",
    "measure_goodput",
    "root_cause_table",
]
