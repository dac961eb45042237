"""numpydoc validation of every public function and class (STYLE.md §6, always on)."""

import importlib
import inspect
import pkgutil

import pytest
from numpydoc.validate import validate

import relkit

#: numpydoc checks enforced: docstring present, summary form, every parameter
#: documented and no phantom ones, a Returns section where something is returned.
CHECKS = {"GL08", "SS01", "SS02", "SS03", "SS05", "PR01", "PR02", "RT01"}


def _public_objects() -> list[str]:
    """Every function or class a public module exports, named where it is defined."""
    names = []
    for info in pkgutil.walk_packages(relkit.__path__, "relkit."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if obj.__module__.startswith("relkit"):
                names.append(f"{obj.__module__}.{obj.__qualname__}")
    return sorted(set(names))


@pytest.mark.parametrize("qualname", _public_objects())
def test_numpydoc(qualname: str) -> None:
    result = validate(qualname)
    errors = [(code, msg) for code, msg in result["errors"] if code in CHECKS]
    assert not errors, f"{qualname}: {errors}"


def test_public_objects_found() -> None:
    assert "relkit.store.Store" in _public_objects()
