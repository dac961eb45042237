"""Where the workplace's shared folder is: cases, reference values, datasets.

CI lays a copy of ``shared/`` beside the clone; a developer's checkout has it at
``/work/shared``. ``RELKIT_SHARED`` overrides both. Tests that need it skip when
it is absent.
"""

import os
from pathlib import Path


def _find() -> Path:
    candidates = [
        os.environ.get("RELKIT_SHARED"),
        Path(__file__).resolve().parents[2] / "shared",
        "/work/shared",
    ]
    for candidate in candidates:
        if candidate and Path(candidate).is_dir():
            return Path(candidate)
    return Path(__file__).resolve().parents[2] / "shared"


SHARED = _find()
