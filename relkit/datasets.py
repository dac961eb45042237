"""Bundled public datasets: where their files are.

The data live in the repository's ``datasets/`` directory, next to the
``relkit`` package (an editable install or a source checkout), each with its
``PROVENANCE.md`` and ``ATTRIBUTION.md``.
"""

from pathlib import Path

from relkit.errors import InvalidParameterError, RelkitError

__all__ = ["DATASETS", "path"]

#: Dataset name -> file, relative to the repository's ``datasets/`` directory.
DATASETS: dict[str, str] = {
    "lanl": "lanl/LA-UR-05-7318-failure-data-1996-2005.csv",
}

_ROOT = Path(__file__).resolve().parent.parent / "datasets"


def path(name: str) -> Path:
    """Return the path of a bundled dataset file.

    Parameters
    ----------
    name : str
        Dataset name, one of :data:`DATASETS` (``"lanl"``: LANL failure records
        1996-2005, LA-UR-05-7318, 23,739 records; read it with
        :func:`relkit.ingest.read_lanl` or ``relkit ingest --kind lanl``).

    Returns
    -------
    Path
        Absolute path of the file.

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
    >>> path("nope")
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: unknown dataset 'nope'; bundled: ['lanl']
    """
    if name not in DATASETS:
        msg = f"unknown dataset {name!r}; bundled: {sorted(DATASETS)}"
        raise InvalidParameterError(msg)
    file = _ROOT / DATASETS[name]
    if not file.is_file():
        msg = (
            f"dataset {name!r}: {file} is missing. The data ship in the repository's "
            "datasets/ directory; install relkit from a source checkout "
            "(pip install -e .)."
        )
        raise RelkitError(msg)
    return file
