"""Keyed pseudonyms for personal data in job records (user names, job names).

A pseudonym is ``HMAC-SHA256(key, field + NUL + value)``, the first 16 hex
digits, behind a field prefix (``user-3f9a...``). The same key gives the same
pseudonym in every file and every run, so jobs of one user stay linked across
files without the name being stored; without the key the names cannot be
recovered by hashing candidate names (which a plain hash would allow). The
key comes from the environment variable :data:`KEY_ENV` or from a file; it is
never written to the store.
"""

import hashlib
import hmac
import os
from pathlib import Path

import polars as pl

from relkit.errors import RelkitError

__all__ = ["KEY_ENV", "MIN_KEY_BYTES", "load_pseudonym_key", "pseudonymize"]

#: Environment variable holding the pseudonym key.
KEY_ENV = "RELKIT_PSEUDONYM_KEY"

#: Shortest key accepted, in bytes (a short key can be guessed, and with it
#: every name tried against the pseudonyms).
MIN_KEY_BYTES = 16

#: Prefix of each field's pseudonyms.
_PREFIX = {"user": "user-", "name": "job-"}


def load_pseudonym_key(key_file: str | Path | None = None) -> bytes:
    """Return the pseudonym key from a file or the environment.

    Parameters
    ----------
    key_file : str or Path, optional
        File whose bytes (surrounding white space stripped) are the key. Without
        it, the environment variable :data:`KEY_ENV` is used.

    Returns
    -------
    bytes
        The key, at least :data:`MIN_KEY_BYTES` long.

    Raises
    ------
    RelkitError
        If no key is found, the file cannot be read, or the key is shorter than
        :data:`MIN_KEY_BYTES` bytes; the message says how to make one.
    """
    make = (
        "Make one with e.g. `python -c 'import secrets; print(secrets.token_hex(32))'"
        f" > key.txt` and pass --pseudonym-key-file key.txt, or export {KEY_ENV}."
    )
    if key_file is not None:
        try:
            key = Path(key_file).read_bytes().strip()
        except OSError as exc:
            msg = f"pseudonym key file {key_file}: cannot be read ({exc.strerror})."
            raise RelkitError(msg) from exc
        where = f"key file {key_file}"
    else:
        key = os.environ.get(KEY_ENV, "").strip().encode()
        where = f"${KEY_ENV}"
        if not key:
            msg = f"--pseudonymize needs a key: {KEY_ENV} is not set. {make}"
            raise RelkitError(msg)
    if len(key) < MIN_KEY_BYTES:
        msg = (
            f"the pseudonym key in {where} has {len(key)} bytes; at least "
            f"{MIN_KEY_BYTES} are needed. {make}"
        )
        raise RelkitError(msg)
    return key


def pseudonymize(values: pl.Series, *, key: bytes, field: str) -> pl.Series:
    """Replace each non-null value by its keyed pseudonym.

    Parameters
    ----------
    values : pl.Series
        String values (user names or job names); nulls stay null.
    key : bytes
        The secret key (see :func:`load_pseudonym_key`).
    field : {"user", "name"}
        Which field: it prefixes the pseudonym (``user-``, ``job-``) and is
        mixed into the hash, so a user and a job of the same name differ.

    Returns
    -------
    pl.Series
        Pseudonyms, same length and name as ``values``.

    Examples
    --------
    >>> s = pl.Series("user", ["alice", None, "alice"])
    >>> p = pseudonymize(s, key=b"0123456789abcdef", field="user")
    >>> p[0] == p[2], p[1], p[0].startswith("user-"), len(p[0])
    (True, None, True, 21)
    """
    prefix = _PREFIX[field]
    unique = values.drop_nulls().unique().to_list()
    mapping = {
        v: prefix
        + hmac.new(key, f"{field}\0{v}".encode(), hashlib.sha256).hexdigest()[:16]
        for v in unique
    }
    return values.replace_strict(mapping, default=None, return_dtype=pl.String)
