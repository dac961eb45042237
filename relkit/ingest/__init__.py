"""Readers of raw files into the store: one module per source family.

:func:`read_file` is the entry point (``relkit ingest --kind KIND``); it
dispatches to :func:`read_events`, :func:`read_assets` (normalised CSV/Parquet
tables), :func:`read_lanl` (the public LANL failure records),
:func:`read_kernel` (dmesg / syslog / journald / kmsg lines) and
:func:`read_nvsmi` (``nvidia-smi -q`` snapshots), :func:`read_sacct` (Slurm
``sacct -P`` dumps), :func:`read_k8s` (Kubernetes pod and job JSON) and
:func:`read_checkpoints` (a training run's checkpoint and step log, JSON Lines
or a CSV of checkpoint times); :func:`read_path` also takes a directory of
kernel logs, and the Parquet of logs parsed on Ray or Spark
(:mod:`relkit.distributed`; kind ``parsed-logs``, :func:`read_parsed_logs`,
one ``kernel`` source per log file). Every input
record ends up as a row or in ``rejects`` with a reason; a file whose bytes were
already ingested as the same kind is skipped, and a file that changed since it
was read from the same path is refused unless ``replace=True`` (``--replace``).
"""

import datetime as dt
import warnings
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Literal

from relkit.errors import IngestError, RelkitWarning
from relkit.ingest._common import IngestResult, looks_like_table
from relkit.ingest._hostlist import expand_hostlist
from relkit.ingest.checkpoints import looks_like_checkpoints, read_checkpoints
from relkit.ingest.k8s import read_k8s
from relkit.ingest.kernel import DATA_SUFFIXES, read_kernel
from relkit.ingest.nvsmi import read_nvsmi
from relkit.ingest.papers import read_cluster_summary, read_paper_table
from relkit.ingest.parsed_logs import read_parsed_logs
from relkit.ingest.public import read_lanl
from relkit.ingest.slurm import parse_job_ids, read_sacct
from relkit.ingest.tables import read_assets, read_events
from relkit.store import Store

__all__ = [
    "KINDS",
    "IngestResult",
    "expand_hostlist",
    "looks_like_checkpoints",
    "parse_job_ids",
    "read_assets",
    "read_checkpoints",
    "read_cluster_summary",
    "read_events",
    "read_file",
    "read_files",
    "read_k8s",
    "read_kernel",
    "read_lanl",
    "read_nvsmi",
    "read_paper_table",
    "read_parsed_logs",
    "read_path",
    "read_sacct",
]

#: Kinds :func:`read_file` understands.
KINDS = (
    "events",
    "assets",
    "lanl",
    "kernel",
    "nvsmi",
    "sacct",
    "k8s",
    "checkpoints",
    "parsed-logs",
)

Kind = Literal[
    "events",
    "assets",
    "lanl",
    "kernel",
    "nvsmi",
    "sacct",
    "k8s",
    "checkpoints",
    "parsed-logs",
]


def read_file(
    store: Store,
    path: str | Path,
    *,
    kind: Kind,
    tz: str | None = None,
    replace: bool = False,
    reference_date: str | dt.date | None = None,
    host: str | None = None,
    host_from_filename: bool = False,
    pseudonymize: bool = False,
    pseudonym_key_file: str | Path | None = None,
    snapshot_ts: str | dt.datetime | None = None,
    as_of: str | dt.datetime | None = None,
    fields: Sequence[str] | str | None = None,
) -> IngestResult:
    r"""Ingest one file of a given kind into the store, atomically.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        The file to read.
    kind : str
        What the file holds, one of :data:`KINDS`: ``events`` (a normalised
        events table), ``assets`` (an assets table), ``lanl`` (the LANL
        failure records, LA-UR-05-7318), ``kernel`` (a kernel/syslog log),
        ``nvsmi`` (``nvidia-smi -q`` snapshots), ``sacct`` (a Slurm ``sacct
        -P`` dump), ``k8s`` (Kubernetes pod/job JSON, ``kubectl get -o
        json``) or ``checkpoints`` (a training run's checkpoint and step log:
        JSON Lines, or a CSV of checkpoint times; see
        :func:`read_checkpoints`); ``parsed-logs`` (the Parquet of
        :mod:`relkit.distributed`) is read by :func:`read_path` only.
    tz : str, optional
        IANA zone of zone-less timestamps in ``events``/``assets``/
        ``checkpoints`` files (e.g. ``"UTC"``). The LANL times are always
        America/Denver; another ``tz`` is an error for ``kind="lanl"``.
    replace : bool, default False
        Re-read the file although it was ingested before (``--replace``): the
        rows of every earlier source of ``kind`` with the same resolved path or
        the same bytes (``sources.content_hash``) are dropped from all tables,
        with their ``sources`` rows, in the transaction that writes the new rows.
    reference_date : str or date, optional
        Kernel logs: the date the log was collected, needed to place year-less
        RFC 3164 syslog stamps (``--reference-date``).
    host : str, optional
        Kernel and nvidia-smi logs: the host, for framings that carry none.
    host_from_filename : bool, default False
        Kernel logs: take the host from the file name (``gpu017.log``).
    pseudonymize : bool, default False
        Job logs (``sacct``, ``k8s``): replace user and job names by keyed
        pseudonyms (see :func:`read_sacct`).
    pseudonym_key_file : str or Path, optional
        Job logs: file holding the pseudonym key (default: the environment
        variable ``RELKIT_PSEUDONYM_KEY``).
    snapshot_ts : str or datetime, optional
        ``k8s``: when the dump was taken (aware), where running containers are
        right-censored (default: ``as_of``).
    as_of : str or datetime, optional
        When the file was collected (``--as-of``; ISO 8601 with a zone, or an
        aware datetime): stored in UTC as ``as_of_ts`` in the source's options.
        A zone-less time is an error.
    fields : sequence of str or str, optional
        ``sacct``: the column names of a header-less dump (``sacct --noheader
        -P``), in the order of its ``--format`` list (``--fields``; see
        :func:`read_sacct`).

    Returns
    -------
    IngestResult
        ``path, kind, source_id, n_lines, n_loaded, n_rejected, skipped, note,
        replaced``; ``n_lines == n_loaded + n_rejected``. ``skipped=True`` (and
        ``source_id=None``) when a file with the same bytes was already
        ingested as ``kind`` and ``replace`` is False: nothing is written, and
        ``note`` says so when the earlier read used other options (``tz``).
        ``replaced`` lists the dropped sources.

    Raises
    ------
    IngestError
        If ``kind`` is unknown; an option is given that ``kind`` does not read
        (e.g. ``host`` for ``sacct``: it would be ignored); the file is missing,
        a directory or unreadable;
        its bytes or header do not fit ``kind`` (the message names the expected
        header and suggests the right ``--kind``; for a file of another kind
        that :func:`looks_like_checkpoints`, ``--kind checkpoints``); zone-less
        timestamps come
        without ``tz``; or, without ``replace``, a file read from the same path
        before has changed since (re-ingesting it would count its old rows
        twice; the message names the earlier source).

    Notes
    -----
    The file's identity, its BLAKE3 digest (:func:`relkit.store.file_digest`;
    also its SHA-256 when the store holds sources of ``kind`` ingested before
    schema 7, whose ``content_hash`` is ``sha256:<hex>``), is computed first.
    One file's rows, rejects and its
    ``sources`` row (with the resolved path in its options) are written, and
    with ``replace`` the earlier sources dropped, inside one
    :meth:`Store.transaction`, so an error leaves the store as it was.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from relkit.store import Store
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "ev.csv"
    >>> _ = f.write_text("ts,host,failure_mode\n2024-01-01 10:00,n1,gpu/xid_79\n")
    >>> store = Store(":memory:")
    >>> read_file(store, f, kind="events", tz="Europe/Berlin").n_loaded
    1
    >>> read_file(store, f, kind="events", tz="Europe/Berlin").skipped
    True
    >>> print(read_file(store, f, kind="events", tz="UTC").note)  # doctest: +ELLIPSIS
    already ingested as source 1 with tz='Europe/Berlin'; pass replace=True ...
    >>> read_file(store, f, kind="events", tz="UTC", replace=True).replaced
    (1,)
    >>> read_file(store, f, kind="assets")  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    relkit.errors.IngestError: ...:1: missing required column(s) ['in_service_ts']...
    """
    _refuse_unread_options(
        path,
        kind,
        tz=tz,
        reference_date=reference_date,
        host=host,
        host_from_filename=host_from_filename or None,
        pseudonymize=pseudonymize or None,
        pseudonym_key_file=pseudonym_key_file,
        snapshot_ts=snapshot_ts,
        fields=fields,
    )
    if kind == "checkpoints":
        return read_checkpoints(store, path, tz=tz, replace=replace, as_of=as_of)
    try:
        return _read_other(
            store,
            path,
            kind=kind,
            tz=tz,
            replace=replace,
            reference_date=reference_date,
            host=host,
            host_from_filename=host_from_filename,
            pseudonymize=pseudonymize,
            pseudonym_key_file=pseudonym_key_file,
            snapshot_ts=snapshot_ts,
            as_of=as_of,
            fields=fields,
        )
    except IngestError as exc:
        if type(exc) is not IngestError or not looks_like_checkpoints(path):
            raise
        msg = (
            f"{exc.reason} This file looks like a training run's checkpoint/step "
            "log (JSON Lines with event and ts, or a table of ts and job_id/run_id): "
            "use --kind checkpoints."
        )
        raise IngestError(exc.path, msg, line_no=exc.line_no) from exc


def _read_other(
    store: Store,
    path: str | Path,
    *,
    kind: str,
    tz: str | None,
    replace: bool,
    reference_date: str | dt.date | None,
    host: str | None,
    host_from_filename: bool,
    pseudonymize: bool,
    pseudonym_key_file: str | Path | None,
    snapshot_ts: str | dt.datetime | None,
    as_of: str | dt.datetime | None,
    fields: Sequence[str] | str | None,
) -> IngestResult:
    """Dispatch :func:`read_file` to the reader of a kind other than checkpoints."""
    if kind == "events":
        return read_events(store, path, tz=tz, replace=replace, as_of=as_of)
    if kind == "assets":
        return read_assets(store, path, tz=tz, replace=replace, as_of=as_of)
    if kind == "lanl":
        if tz is not None and tz != "America/Denver":
            msg = (
                f"--tz {tz} does not apply: LANL times are America/Denver local time. "
                "Drop --tz for --kind lanl."
            )
            raise IngestError(path, msg)
        return read_lanl(store, path, replace=replace, as_of=as_of)
    if kind == "nvsmi":
        return read_nvsmi(store, path, tz=tz, host=host, replace=replace, as_of=as_of)
    if kind == "sacct":
        return read_sacct(
            store,
            path,
            tz=tz,
            replace=replace,
            as_of=as_of,
            pseudonymize=pseudonymize,
            pseudonym_key_file=pseudonym_key_file,
            fields=fields,
        )
    if kind == "k8s":
        return read_k8s(
            store,
            path,
            snapshot_ts=snapshot_ts,
            replace=replace,
            as_of=as_of,
            pseudonymize=pseudonymize,
            pseudonym_key_file=pseudonym_key_file,
        )
    if kind == "parsed-logs":  # many sources in one output: read_path
        msg = "holds one source per log file; read it with read_path()."
        raise IngestError(path, msg)
    if kind == "kernel":
        if Path(path).is_dir():
            msg = "is a directory; read it with read_path() (relkit ingest DIR)."
            raise IngestError(path, msg)
        (result,) = read_kernel(
            store,
            path,
            tz=tz,
            reference_date=reference_date,
            host=host,
            host_from_filename=host_from_filename,
            replace=replace,
            as_of=as_of,
        )
        _warn_wrong_kind([result], kind)
        return result
    msg = f"unknown kind {kind!r}; expected one of {list(KINDS)} (--kind KIND)."
    raise IngestError(path, msg)


def read_path(
    store: Store,
    path: str | Path,
    *,
    kind: Kind,
    tz: str | None = None,
    replace: bool = False,
    reference_date: str | dt.date | None = None,
    host: str | None = None,
    host_from_filename: bool = False,
    pseudonymize: bool = False,
    pseudonym_key_file: str | Path | None = None,
    snapshot_ts: str | dt.datetime | None = None,
    as_of: str | dt.datetime | None = None,
    boot_time: str | dt.datetime | None = None,
    fields: Sequence[str] | str | None = None,
    progress: Callable[[str], None] | None = None,
) -> list[IngestResult]:
    r"""Ingest a file or a directory of files of one kind.

    Parameters
    ----------
    store : Store
        Open, writable store.
    path : str or Path
        A file, or a directory whose files (not sub-directories) are read in
        name order, each its own source: per-host kernel logs, daily sacct
        dumps, monthly event exports. Hidden files are left out with a
        warning. With ``kind="parsed-logs"`` the Parquet output of
        :mod:`relkit.distributed` (a directory or file; each log file its own
        ``kernel`` source, :func:`read_parsed_logs`).
    kind : str
        One of :data:`KINDS`: what the file holds (see :func:`read_file`).
    tz : str, optional
        IANA zone of zone-less timestamps.
    replace : bool, default False
        Re-read files ingested before (see :func:`read_file`).
    reference_date : str or date, optional
        Collection date for year-less syslog stamps (kernel logs).
    host : str, optional
        Host for framings that carry none (kernel, nvidia-smi logs).
    host_from_filename : bool, default False
        Kernel logs: the host is the file name without its suffixes.
    pseudonymize : bool, default False
        Job logs: keyed pseudonyms for user and job names.
    pseudonym_key_file : str or Path, optional
        Job logs: file holding the pseudonym key.
    snapshot_ts : str or datetime, optional
        ``k8s``: when the dump was taken (default: ``as_of``).
    as_of : str or datetime, optional
        When the file was collected (``--as-of``; ISO 8601 with a zone, or an
        aware datetime): stored in UTC as ``as_of_ts`` in the source's options.
        A zone-less time is an error.
    boot_time : str or datetime, optional
        Kernel logs: when the host booted (``--boot-time``), for plain
        ``dmesg`` kernel clocks (see :func:`read_kernel`).
    fields : sequence of str or str, optional
        ``sacct``: the columns of a header-less dump (see :func:`read_file`).
    progress : callable, optional
        Kernel logs: gets a progress line every 2 s of a long read (see
        :func:`read_kernel`); other kinds ignore it.

    Returns
    -------
    list of IngestResult
        One per file read, in order.

    Raises
    ------
    IngestError
        As :func:`read_file`, at the first file that fails (the files before
        it stay ingested and the message says how many), or if a directory
        holds no files.

    Warns
    -----
    RelkitWarning
        If a directory holds hidden files, which are left out; for
        ``kind="kernel"``, if a directory holds data tables (``.csv``,
        ``.psv``, ``.jsonl``, ...), which are not read as logs, or a file gave
        nothing (every line ignored) and looks like a table of another kind.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from relkit.store import Store
    >>> folder = Path(tempfile.mkdtemp())
    >>> for name, day in (("a.csv", "01"), ("b.csv", "02")):
    ...     text = f"ts,host,failure_mode\n2024-01-{day}T00:00:00Z,n1,gpu/xid79\n"
    ...     _ = (folder / name).write_text(text)
    >>> results = read_path(Store(":memory:"), folder, kind="events")
    >>> [(Path(r.path).name, r.n_loaded) for r in results]
    [('a.csv', 1), ('b.csv', 1)]
    """
    if kind == "parsed-logs":  # parsed on Ray or Spark: the options were used there
        _refuse_unread_options(
            path,
            kind,
            tz=tz,
            reference_date=reference_date,
            host=host,
            host_from_filename=host_from_filename or None,
            boot_time=boot_time,
            pseudonymize=pseudonymize or None,
            pseudonym_key_file=pseudonym_key_file,
            snapshot_ts=snapshot_ts,
            fields=fields,
        )
        return read_parsed_logs(store, path, replace=replace, as_of=as_of)
    if kind == "kernel":
        _refuse_unread_options(
            path,
            kind,
            pseudonymize=pseudonymize or None,
            pseudonym_key_file=pseudonym_key_file,
            snapshot_ts=snapshot_ts,
            fields=fields,
        )
        _warn_data_files_left_out(path)
        results = list(
            read_kernel(
                store,
                path,
                tz=tz,
                reference_date=reference_date,
                host=host,
                host_from_filename=host_from_filename,
                replace=replace,
                as_of=as_of,
                boot_time=boot_time,
                progress=progress,
            )
        )
        _warn_wrong_kind(results, kind)
        return results
    if boot_time is not None:
        msg = f"--boot-time is for --kind kernel only; this is --kind {kind}."
        raise IngestError(path, msg)
    files = _directory_files(path)
    results = []
    for file in files:
        try:
            result = read_file(
                store,
                file,
                kind=kind,
                tz=tz,
                replace=replace,
                reference_date=reference_date,
                host=host,
                host_from_filename=host_from_filename,
                pseudonymize=pseudonymize,
                pseudonym_key_file=pseudonym_key_file,
                snapshot_ts=snapshot_ts,
                as_of=as_of,
                fields=fields,
            )
        except IngestError as exc:
            if not results or type(exc) is not IngestError:
                raise
            msg = (
                f"{exc.reason} {len(results)} of {len(files)} files in "
                f"{path} were ingested before this error (kept; re-run skips "
                "them)."
            )
            raise IngestError(exc.path, msg, line_no=exc.line_no) from exc
        results.append(result)
    return results


def _warn_wrong_kind(results: list[IngestResult], kind: str) -> None:
    """Warn for a file that gave nothing and looks like a table of another kind.

    Every line ignored (no event, no reject) is normal for a quiet node's
    syslog, so the warning needs the file to look like a table as well
    (:func:`relkit.ingest._common.looks_like_table`).
    """
    for r in results:
        quiet = r.n_loaded == 0 and r.n_rejected == 0 and r.n_ignored == r.n_lines
        if r.skipped or r.n_lines == 0 or not quiet:
            continue
        if (like := looks_like_table(r.path)) is not None:
            msg = (
                f"{r.path}: read as --kind {kind}, all {r.n_lines:,} lines were "
                f"ignored and nothing was loaded; the file looks like {like}."
            )
            warnings.warn(msg, RelkitWarning, stacklevel=3)


def _warn_data_files_left_out(path: str | Path) -> None:
    """Warn that a kernel-log directory's data tables are not read as logs."""
    p = Path(path)
    if not p.is_dir():
        return
    data = sorted(
        f.relative_to(p).as_posix()
        for f in p.rglob("*")
        if f.is_file()
        and f.suffix.lower() in DATA_SUFFIXES
        and not any(part.startswith(".") for part in f.relative_to(p).parts)
    )
    if data:
        msg = (
            f"{p}: left out {len(data)} data file(s) that are tables, not kernel "
            f"logs ({', '.join(data[:5])}{', ...' if len(data) > 5 else ''}; "
            f"suffixes {sorted(DATA_SUFFIXES)}); ingest each with its own --kind "
            "(sacct -P dumps --kind sacct, CSV tables --kind events/assets/lanl, "
            "JSON Lines --kind checkpoints)."
        )
        warnings.warn(msg, RelkitWarning, stacklevel=3)


def _directory_files(path: str | Path) -> list[Path]:
    """Return ``[path]`` for a file, or a directory's files sorted by name.

    Hidden files (``.name``) are left out with a warning; a directory with
    nothing to read is an error.
    """
    p = Path(path)
    if not p.is_dir():
        return [p]
    entries = sorted(f for f in p.iterdir() if f.is_file())
    hidden = [f.name for f in entries if f.name.startswith(".")]
    files = [f for f in entries if not f.name.startswith(".")]
    if hidden:
        msg = (
            f"{p}: left out {len(hidden)} hidden file(s), e.g. {hidden[:5]}; "
            "ingest one by its path to read it."
        )
        warnings.warn(msg, RelkitWarning, stacklevel=3)
    if not files:
        msg = (
            "the directory holds no files to read (sub-directories are not "
            "searched); give a file or a directory of files of one kind."
        )
        raise IngestError(p, msg)
    return files


#: The kind-specific options of :func:`read_file` / :func:`read_path` and the
#: kinds that read them; any other kind would ignore them, so it refuses them.
_OPTION_KINDS: dict[str, tuple[str, tuple[str, ...]]] = {
    # Kubernetes times are RFC 3339 with a zone: a --tz would change nothing
    "tz": (
        "--tz",
        ("events", "assets", "lanl", "kernel", "nvsmi", "sacct", "checkpoints"),
    ),
    "reference_date": ("--reference-date", ("kernel",)),
    "host": ("--host", ("kernel", "nvsmi")),
    "host_from_filename": ("--host-from-filename", ("kernel",)),
    "boot_time": ("--boot-time", ("kernel",)),
    "pseudonymize": ("--pseudonymize", ("sacct", "k8s")),
    "pseudonym_key_file": ("--pseudonym-key-file", ("sacct", "k8s")),
    "snapshot_ts": ("--snapshot-ts", ("k8s",)),
    "fields": ("--fields", ("sacct",)),
}


def _refuse_unread_options(path: str | Path, kind: str, **given: object) -> None:
    """Raise IngestError for an option given that ``kind`` does not read."""
    for name, value in given.items():
        flag, kinds = _OPTION_KINDS[name]
        if value is not None and kind in KINDS and kind not in kinds:
            msg = (
                f"{flag} is for --kind {' or '.join(kinds)}; --kind {kind} does not "
                f"read it (it would be ignored). Drop {flag}."
            )
            raise IngestError(path, msg)


def read_files(
    store: Store,
    paths: Iterable[str | Path],
    *,
    kind: Kind,
    tz: str | None = None,
    replace: bool = False,
    as_of: str | dt.datetime | None = None,
    progress: Callable[[IngestResult], None] | None = None,
) -> list[IngestResult]:
    """Ingest several files of one kind, each in its own transaction.

    Parameters
    ----------
    store : Store
        Open, writable store.
    paths : iterable of str or Path
        Files, read in the given order.
    kind : {"events", "assets", "lanl"}
        What the files hold (see :func:`read_file`).
    tz : str, optional
        IANA zone of zone-less timestamps.
    replace : bool, default False
        Re-read files ingested before, dropping their earlier rows first (see
        :func:`read_file`).
    as_of : str or datetime, optional
        When the files were collected (see :func:`read_file`).
    progress : callable, optional
        Called with each file's :class:`IngestResult` once it is written (the
        command line uses it to report progress on stderr).

    Returns
    -------
    list of IngestResult
        One per path, in order.

    Raises
    ------
    IngestError
        As :func:`read_file`, at the first file that fails; the files before it
        stay ingested.

    Examples
    --------
    >>> from relkit.store import Store
    >>> read_files(Store(":memory:"), [], kind="events")
    []
    """
    results = []
    for path in paths:
        result = read_file(store, path, kind=kind, tz=tz, replace=replace, as_of=as_of)
        if progress is not None:
            progress(result)
        results.append(result)
    return results
