"""Exception and warning classes of relkit.

Every error relkit raises on purpose derives from :class:`RelkitError`, so a
caller (and the command line) can tell a data problem from a bug.
"""

from __future__ import annotations

#: ``typing.TYPE_CHECKING`` without importing typing (start-up, issue 13 §3).
TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "CensoringWarning",
    "ConvergenceError",
    "IngestError",
    "InsufficientDataError",
    "InvalidParameterError",
    "PartialIngestError",
    "RelkitError",
    "RelkitWarning",
    "SchemaError",
]


class RelkitError(Exception):
    """Root of every error relkit raises on purpose."""


class SchemaError(RelkitError, ValueError):
    """A frame or table breaks its column contract (missing column, wrong type)."""


class InsufficientDataError(RelkitError, ValueError):
    """Too few failures or units for the requested estimate."""


class ConvergenceError(RelkitError, RuntimeError):
    """A model fit did not converge; wraps the fitting library's error."""


class IngestError(RelkitError, ValueError):
    """An input file cannot be read as the requested kind.

    Parameters
    ----------
    path : str or Path
        The file being read.
    reason : str
        What is wrong and how to fix it.
    line_no : int, optional
        1-based line number in the file, when the problem is one line.
    """

    def __init__(
        self, path: str | Path, reason: str, line_no: int | None = None
    ) -> None:
        self.path = str(path)
        self.reason = reason
        self.line_no = line_no
        where = f"{self.path}:{line_no}" if line_no is not None else self.path
        super().__init__(f"{where}: {reason}")


class PartialIngestError(IngestError):
    """Some files of a directory could not be ingested; the others were.

    Parameters
    ----------
    path : str or Path
        The directory.
    failures : list of IngestError
        One per file that was refused, with its path and reason.
    results : list
        The ``IngestResult`` of each file that was read (written to the store).
    n_files : int
        Files in the directory that were tried.
    """

    def __init__(
        self,
        path: str | Path,
        failures: list[IngestError],
        results: list[object],
        n_files: int,
    ) -> None:
        self.failures = failures
        self.results = results
        self.n_files = n_files
        refused = "; ".join(str(f) for f in failures)
        reason = (
            f"{len(failures)} of {n_files} file(s) could not be ingested ({refused}); "
            f"the other {len(results)} were ingested. Fix or remove the files "
            "named, then ingest the directory again (files read before are "
            "skipped)."
        )
        super().__init__(path, reason)


class RelkitWarning(UserWarning):
    """Root of relkit's warnings."""


class CensoringWarning(RelkitWarning):
    """Heavy censoring or truncation makes an estimate fragile."""


class InvalidParameterError(RelkitError, ValueError):
    """A scalar argument is outside its allowed range (e.g. a cost <= 0, NaN)."""
