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
    names = []
    for info in pkgutil.walk_packages(relkit.__path__, "relkit."):
        if any(part.startswith("_") for part in info.name.split(".")):
            continue
        module = importlib.import_module(info.name)
        exported = getattr(module, "__all__", [])
        for name in exported:
            obj = getattr(module, name)
            if (
                inspect.isfunction(obj) or inspect.isclass(obj)
            ) and obj.__module__ == info.name:
                names.append(f"{info.name}.{name}")
    return sorted(set(names))


@pytest.mark.parametrize("qualname", _public_objects())
def test_numpydoc(qualname: str) -> None:
    result = validate(qualname)
    errors = [(code, msg) for code, msg in result["errors"] if code in CHECKS]
    assert not errors, f"{qualname}: {errors}"


def test_public_objects_found() -> None:
    assert "relkit.store.Store" in _public_objects()
