"""What ``relkit VERB --help`` says besides the options: a summary and examples.

Every verb's help has a one-line description, an example to copy (issue 14
§4) and each option's default (``cli.HelpFormatter`` adds the default to
an option whose help does not name one). The examples live here, one entry a
verb, so that a verb registered in any ``_cli_*`` module gets its own.
"""

from __future__ import annotations

__all__ = [
    "EXAMPLES",
    "STORE_ENV",
    "UNSET",
    "describe_verbs",
    "store_default",
    "unset_default",
]

#: The environment variable naming the default store of every verb with --db.
STORE_ENV = "RELKIT_DB"

#: Verb -> example command lines shown at the end of its --help.
EXAMPLES: dict[str, tuple[str, ...]] = {
    "ingest": (
        "relkit ingest --db fleet.duckdb --kind sacct --tz UTC sacct.psv",
        "relkit ingest --db fleet.duckdb --kind kernel --tz UTC "
        "--reference-date 2024-03-20 logs/",
    ),
    "mtbf": (
        "relkit mtbf --db fleet.duckdb --by system",
        "relkit mtbf --db fleet.duckdb --by failure_mode --period month --format csv",
    ),
    "events": ("relkit events --db fleet.duckdb --failure-mode gpu/fallen_off_bus",),
    "rejects": ("relkit rejects --db fleet.duckdb --source sacct.psv",),
    "incidents": ("relkit incidents --db fleet.duckdb --window-min 10",),
    "ettr": (
        "relkit ettr --gpus 16384 --failures-per-node-day 0.0065 --restart-h 0.1 "
        "--interval-h 1 --cost-h 0.02",
    ),
    "report": ("relkit report --db fleet.duckdb --out report/",),
    "simulate": ("relkit simulate --out sim/ --nodes 32 --days 10 --run-nodes 16",),
    "demo": ("relkit demo --out out/",),
    "goodput": ("relkit goodput --db fleet.duckdb --run-by job_id",),
    "checkpoint": (
        "relkit checkpoint --mtbf-h 24 --cost-h 0.083 --restart-h 0.17",
        "relkit checkpoint --db fleet.duckdb --gpus 16384",
    ),
    "whatif": (
        "relkit whatif --gpus 4096,16384 --failures-per-node-day 0.0065 "
        "--restart-h 0.1 --cost-h 0.02",
    ),
    "jobs": ("relkit jobs --db fleet.duckdb --format csv > jobs.csv",),
    "interruptions": ("relkit interruptions --db fleet.duckdb",),
    "rootcause": ("relkit rootcause --db fleet.duckdb --summary",),
    "check-table": ("relkit check-table --strict table5.csv",),
    "scale": (
        "relkit scale --failures-per-1000-node-days 6.5 --gpus 1024,16384,131072",
        "relkit scale --db fleet.duckdb --gpus 16384",
    ),
    "job-mttf": ("relkit job-mttf --db fleet.duckdb",),
    "failure-share": (
        "relkit failure-share --db fleet.duckdb --by partition",
        "relkit failure-share --acmetrace",
    ),
    "survival": ("relkit survival --db fleet.duckdb --endpoint tbf --by system",),
    "lemons": ("relkit lemons --db fleet.duckdb --lemons-only",),
    "hazards": ("relkit hazards --db fleet.duckdb --covariates rack --model cox",),
    "trend": ("relkit trend --db fleet.duckdb --by system --clock calendar",),
    "mcf": ("relkit mcf --db fleet.duckdb --by system",),
    "cif": ("relkit cif --db fleet.duckdb --by system",),
    "completion": (
        "relkit completion bash > ~/.local/share/bash-completion/completions/relkit",
        "relkit completion zsh > ~/.zfunc/_relkit",
    ),
}


#: What an option left out means, where its default is None: by option name,
#: or (verb, option name) where the verb decides.
UNSET: dict[str | tuple[str, str], str] = {
    "by": "no grouping, one row for all",
    "failure_mode": "every mode",
    "window_start": "the start of the data",
    "window_end": "the end of the data",
    "period": "the whole window",
    "source": "every file",
    "job": "every job",
    "run": "every run",
    **{
        ("simulate", name): "the preset's"
        for name in (
            "nodes",
            "days",
            "run_nodes",
            "checkpoint_interval_h",
            "checkpoint_cost_h",
            "restart_h",
            "background_jobs",
            "noise_lines_per_node_day",
        )
    },
}


def unset_default(verb: str, name: str) -> str:
    """Say what leaving out an option whose default is None means.

    Parameters
    ----------
    verb : str
        The verb, e.g. ``mtbf``.
    name : str
        The option's ``dest``, e.g. ``window_start``.

    Returns
    -------
    str
        E.g. ``the start of the data``; ``not given`` when nothing more can
        be said in a few words (the help text says the rest).
    """
    return UNSET.get((verb, name)) or UNSET.get(name) or "not given"


def store_default() -> str:
    """Return the default store file: ``$RELKIT_DB``, else ``relkit.duckdb``.

    A blank ``RELKIT_DB`` (spaces only) counts as unset.

    Returns
    -------
    str
        The path --db takes when it is not given.
    """
    import os

    return os.environ.get(STORE_ENV, "").strip() or "relkit.duckdb"


def describe_verbs(choices: dict, helps: dict[str, str | None]) -> None:
    """Give each verb's parser its description and examples, where it has none.

    Parameters
    ----------
    choices : dict
        Verb name -> its ``argparse.ArgumentParser`` (``add_subparsers().choices``).
    helps : dict
        Verb name -> the one-line help it was registered with.
    """
    for name, parser in choices.items():
        if not parser.description and helps.get(name):
            line = helps[name]
            parser.description = line[:1].upper() + line[1:] + "."
        if not parser.epilog and name in EXAMPLES:
            lines = "\n".join(f"  {line}" for line in EXAMPLES[name])
            parser.epilog = f"example{'s' if len(EXAMPLES[name]) > 1 else ''}:\n{lines}"
