"""Bundled public datasets: where their files are.

The data live in the repository's ``datasets/`` directory, next to the
``relkit`` package (an editable install or a source checkout), each with its
``PROVENANCE.md`` and ``ATTRIBUTION.md``; a built wheel carries the same files
under ``relkit/_bundled/``.
"""

from pathlib import Path

from relkit.errors import InvalidParameterError, RelkitError

__all__ = ["DATASETS", "path"]

#: Dataset name -> file, relative to the repository's ``datasets/`` directory.
DATASETS: dict[str, str] = {
    "lanl": "lanl/LA-UR-05-7318-failure-data-1996-2005.csv",
    "gpud": "gpud",
    "llama3_table5": "paper-tables/llama3_table5_unexpected_interruptions.csv",
    "kokolis_rsc": "paper-tables/kokolis2024_rsc_headline_stats.csv",
    "acmetrace": "acmetrace/cluster_summary.csv",
    "synthetic": "synthetic/llama3-54d-264n-seed1",
}

_ROOTS = (
    Path(__file__).resolve().parent / "_bundled",  # inside a built wheel
    Path(__file__).resolve().parent.parent / "datasets",  # source checkout
)


def path(name: str) -> Path:
    """Return the path of a bundled dataset file.

    Parameters
    ----------
    name : str
        Dataset name, one of :data:`DATASETS` (``"lanl"``: LANL failure records
        1996-2005, LA-UR-05-7318, 23,739 records; read it with
        :func:`relkit.ingest.read_lanl` or ``relkit ingest --kind lanl``;
        ``"gpud"``: a directory of two NVIDIA kernel-log excerpts with Xid errors
        from the gpud project, Apache-2.0, for ``relkit ingest --kind kernel``;
        ``"llama3_table5"``: Llama 3 Table 5, the 18 root-cause rows of the
        419 unexpected interruptions, typed in, for ``relkit check-table``;
        ``"kokolis_rsc"``: Kokolis et al.'s headline figures for Meta's RSC-1
        and RSC-2 (node failure rates, job MTTFs), one row per printed value;
        ``"acmetrace"``: the AcmeTrace cluster summary, 5 clusters, CC BY 4.0,
        Hu et al. NSDI 2024; ``"synthetic"``: a directory written by
        ``relkit simulate`` (preset ``llama3-54d``, 264 nodes, 54 days, seed 1):
        per-host kernel logs, ``sacct.psv``, ``checkpoints.jsonl``,
        ``assets.csv`` and ``ground_truth.json``).

    Returns
    -------
    Path
        Absolute path of the file (of the directory for ``"gpud"`` and
        ``"synthetic"``).

    Raises
    ------
    InvalidParameterError
        If ``name`` is not a bundled dataset.
    RelkitError
        If the file is missing (relkit installed without its ``datasets/``).

    Examples
    --------
    >>> path("lanl").name
    'LA-UR-05-7318-failure-data-1996-2005.csv'
    >>> path("nope")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: unknown dataset 'nope'; bundled: [...]
    """
    if name not in DATASETS:
        msg = f"unknown dataset {name!r}; bundled: {sorted(DATASETS)}"
        raise InvalidParameterError(msg)
    candidates = [root / DATASETS[name] for root in _ROOTS]
    file = next((f for f in candidates if f.exists()), candidates[-1])
    if not file.exists():
        msg = (
            f"dataset {name!r}: {file} is missing. The data ship in the repository's "
            "datasets/ directory; install relkit from a source checkout "
            "(pip install -e .)."
        )
        raise RelkitError(msg)
    return file
