"""The dependency rules of DESIGN.md §1 and STYLE.md §1, checked on the source.

Only ``store`` and ``ingest`` may import DuckDB, only ``survival`` lifelines,
only ``charts`` Altair; analysis modules never import the CLI or the report.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "relkit"

#: heavy dependency -> modules (dotted, relative to relkit) allowed to import it
ALLOWED = {
    "duckdb": ("store", "ingest"),
    "lifelines": ("survival",),
    "altair": ("charts",),
    "vl_convert": ("_html", "charts"),
}
#: modules that only present results, and may not be imported by analysis
PRESENTATION = ("cli", "report")


def _modules() -> list[tuple[str, Path]]:
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).with_suffix("")
        out.append((".".join(rel.parts), path))
    return out


def _imports(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
    return names


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_heavy_dependencies_stay_in_their_room(module: str, path: Path) -> None:
    for name in _imports(path):
        top = name.split(".")[0]
        if top in ALLOWED:
            allowed = ALLOWED[top]
            assert module.split(".")[0] in allowed, f"relkit.{module} imports {name}"


@pytest.mark.parametrize(("module", "path"), _modules(), ids=[m for m, _ in _modules()])
def test_analysis_does_not_import_presentation(module: str, path: Path) -> None:
    if module.split(".")[0] in (*PRESENTATION, "__main__"):
        return
    for name in _imports(path):
        parts = name.split(".")
        if parts[0] == "relkit" and len(parts) > 1:
            assert parts[1] not in PRESENTATION, f"relkit.{module} imports {name}"


def test_the_rule_catches_a_violation(tmp_path: Path) -> None:
    """The checker itself: a module importing duckdb outside store/ingest is found."""
    bad = tmp_path / "metrics.py"
    bad.write_text("import duckdb\nfrom altair import Chart\n")
    assert _imports(bad) == {"duckdb", "altair"}
