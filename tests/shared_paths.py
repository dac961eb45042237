"""Where the workplace's shared folder is: cases, reference values, datasets.

The folder ``shared/`` lies beside the clone: CI lays a copy there, and a
developer's checkout (``main/``) has ``shared/`` as its sibling, so both are
``parents[2] / "shared"`` of this file. ``RELKIT_SHARED`` overrides it. Tests
that need it skip when it is absent. Tests cite its files relative, as
``shared/cases/README.md C03``, never by a machine's absolute path.
"""

import os
from pathlib import Path

#: The shared folder's place relative to this file: beside the repository.
BESIDE_CLONE = Path(__file__).resolve().parents[2] / "shared"


def _find() -> Path:
    candidates = [os.environ.get("RELKIT_SHARED"), BESIDE_CLONE]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return BESIDE_CLONE


SHARED = _find()
