"""The public surface: ``relkit.__all__`` lists exactly the public names."""

from inspect import ismodule

import relkit


def test_all_matches_public_names() -> None:
    """Once every lazily imported name is resolved, no other public name is left."""
    for name in relkit.__all__:
        getattr(relkit, name)  # PEP 562: imported on first use
    public = {
        n for n, v in vars(relkit).items() if not n.startswith("_") and not ismodule(v)
    }
    assert sorted(relkit.__all__) == sorted(public | {"__version__"} - {"annotations"})


def test_every_exported_name_resolves() -> None:
    for name in relkit.__all__:
        assert getattr(relkit, name) is not None
