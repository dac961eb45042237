"""The house rules of DESIGN.md §2 "Layers" and STYLE.md §1, §3, checked on the source.

The layer map below is the single statement of which room (module or package)
sits on which layer. The checker parses every module of ``relkit/`` with
:mod:`ast` (imports inside functions and under ``TYPE_CHECKING`` included) and
holds five rules:

``unmapped``
    Every module of ``relkit/`` belongs to a room of :data:`ROOMS`.
``upward``
    An import never runs up: a module imports only rooms of its own layer or of
    a lower one. Imports inside one layer are allowed (``checkpoint`` uses
    ``metrics``; ``cli`` uses ``report``).
``analysis-reads-store``
    Analysis never imports the store or ingest (DESIGN.md §1: analysis gets
    polars frames and never sees a DuckDB connection); composition reads the
    store and hands frames down.
``private-module``
    A private module (``_x.py``, or any module under a ``_x`` package) belongs to
    the room the map lists it in, and only modules of that room import it
    (``relkit.ingest._common`` is for ``relkit.ingest.*``; ``relkit._html`` for
    the report room). Another room imports the room's public module instead.
``private-name``
    A private name never crosses modules: ``from relkit.y import _z`` and
    ``y._z`` on an imported relkit module fail even inside one room. A helper
    shared by two modules is public in a private module (``_x.helper``), which
    keeps it out of the API and visible to the checker. Dunder names are not
    private; ``from relkit import __version__`` is package metadata, not a
    dependency on the API layer.

The heavy dependencies of STYLE.md §1 (DuckDB only in store and ingest,
lifelines only in survival, Altair only in charts) are a sixth rule.

Known violations inside modules another change is rewriting are marked
``xfail(strict=True)`` in :data:`KNOWN_VIOLATIONS` with the module and the
reason, so the test passes today and fails as soon as the module is fixed and
the mark is stale.
"""

import ast
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "relkit"

# -- the layer map (DESIGN.md §2 "Layers"), lowest layer first -----------------
BASE, SOURCES, ANALYSIS, COMPOSITION, CHARTS, PRESENTATION = range(6)
LAYER_NAMES = ("base", "sources", "analysis", "composition", "charts", "presentation")

#: room -> (layer, modules). A module is dotted, relative to ``relkit``; a
#: package name covers every module under it; a name with no file is absent.
ROOMS: dict[str, tuple[int, tuple[str, ...]]] = {
    # base: no relkit imports but each other
    "errors": (BASE, ("errors",)),
    "schema": (BASE, ("schema",)),
    "taxonomy": (BASE, ("taxonomy",)),
    "datasets": (BASE, ("datasets",)),  # where the bundled files are; paths only
    "defaults": (BASE, ("defaults", "display")),  # stdlib only: defaults, reprs
    # sources: the only code that touches raw files or DuckDB, and the simulator
    "store": (SOURCES, ("store",)),
    "ingest": (SOURCES, ("ingest", "distributed")),  # distributed: parse on Ray
    "simulate": (SOURCES, ("simulate",)),
    # analysis: frames in, frames or small results out
    "observation": (ANALYSIS, ("observation", "exposure")),
    "metrics": (ANALYSIS, ("metrics",)),
    "incidents": (ANALYSIS, ("incidents",)),
    "survival": (ANALYSIS, ("survival",)),
    "checkpoint": (
        ANALYSIS,
        (
            "checkpoint",
            "_ettr_model",
            "_checks",
            "_two_level",
            "_renewal",
            "_whatif",
            "_decision",
        ),
    ),
    "jobs": (ANALYSIS, ("jobs",)),
    "repairable": (ANALYSIS, ("repairable",)),
    "scale": (ANALYSIS, ("scale",)),
    "published": (ANALYSIS, ("published",)),
    # composition: reads store tables and calls analysis
    "answers": (
        COMPOSITION,
        (
            "answers",
            "_answers_goodput",
            "_answers_survival",
            "_answers_competing",
            "_answers_hazards",
            "_answers_repairable",
            "_answers_lemons",
        ),
    ),
    # charts: the only Altair user
    "charts": (CHARTS, ("charts",)),
    # presentation: thin users of the library
    "report": (
        PRESENTATION,
        (
            "report",
            "_html",
            "_demo_jobs",
            "_report_common",
            "_report_data",
            "_report_failures",
            "_report_interruptions",
            "_report_goodput",
            "_report_scale",
            "_report_survival",
        ),
    ),
    "cli": (
        PRESENTATION,
        (
            "cli",
            "_cli_jobs",
            "_cli_goodput",
            "_cli_survival",
            "_cli_competing",
            "_cli_hazards",
            "_cli_repairable",
            "_cli_lemons",
            "_cli_distributed",
            "_cli_report",
            "_cli_format",
            "_cli_help",
            "__main__",
        ),
    ),
    "api": (PRESENTATION, ("__init__",)),
}
#: rooms analysis may not import (DESIGN.md §1).
STORE_ROOMS = ("store", "ingest")
#: package metadata importable from anywhere (not a dependency on ``__init__``).
METADATA = frozenset({"__version__"})

#: heavy dependency -> rooms allowed to import it (STYLE.md §1).
HEAVY = {
    "duckdb": ("store", "ingest"),
    "lifelines": ("survival",),
    "altair": ("charts",),
    "vl_convert": ("charts", "report"),
}

#: (rule, module) -> reason, for violations in modules owned by another change.
KNOWN_VIOLATIONS: dict[tuple[str, str], str] = {}


# -- the checker ----------------------------------------------------------------
@dataclass(frozen=True)
class Violation:
    """One broken rule: which, where (module, line) and what."""

    rule: str
    module: str
    line: int
    message: str


def modules(package: Path) -> dict[str, Path]:
    """Map dotted module names (relative to the package) to their files."""
    out = {}
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package).with_suffix("")
        parts = rel.parts
        if parts[-1] == "__init__" and len(parts) > 1:
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def room_of(module: str, rooms: Mapping[str, tuple[int, Sequence[str]]]) -> str | None:
    """Return the room of a dotted module: the longest matching map entry."""
    best, size = None, -1
    for room, (_, members) in rooms.items():
        for member in members:
            if (module == member or module.startswith(member + ".")) and len(
                member
            ) > size:
                best, size = room, len(member)
    return best


def is_private(module: str) -> bool:
    """Return True for a private module: a ``_x`` part that is not a dunder."""
    return any(p.startswith("_") and not p.startswith("__") for p in module.split("."))


def _private_name(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class Edge:
    """One import of a relkit module: target module and imported names."""

    target: str  # dotted, relative to the package; "__init__" for the package
    names: tuple[str, ...]
    line: int


def imports(
    path: Path, module: str, known: set[str], package: str = "relkit"
) -> tuple[list[Edge], set[str]]:
    """Return the relkit imports of a file and the top-level names it imports.

    ``from relkit import x`` is an import of module ``x`` when ``x`` is a module
    of the package, else of the package's ``__init__``. Relative imports are
    resolved against ``module``.
    """
    tree = ast.parse(path.read_text(encoding="utf-8"))
    edges: list[Edge] = []
    external: set[str] = set()
    aliases: dict[str, str] = {}

    def rel(dotted: str) -> str | None:
        if dotted == package:
            return "__init__"
        if dotted.startswith(package + "."):
            return dotted[len(package) + 1 :]
        return None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                target = rel(alias.name)
                if target is None:
                    external.add(alias.name)
                    continue
                edges.append(Edge(target, (), node.lineno))
                if alias.asname:
                    aliases[alias.asname] = target
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                here = module.split(".")
                is_pkg = path.name == "__init__.py"
                anchor = here if is_pkg else here[:-1]
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([package, *anchor, *([base] if base else [])])
            target = rel(base)
            if target is None:
                external.add(base)
                continue
            prefix = "" if target == "__init__" else target + "."
            plain: list[str] = []
            for alias in node.names:
                sub = prefix + alias.name
                if sub in known:
                    edges.append(Edge(sub, (), node.lineno))
                    aliases[alias.asname or alias.name] = sub
                else:
                    plain.append(alias.name)
            if plain:
                edges.append(Edge(target, tuple(plain), node.lineno))
    # private attributes of imported relkit modules: ``exposure._helper``
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and _private_name(node.attr)
        ):
            edges.append(Edge(aliases[node.value.id], (node.attr,), node.lineno))
    return edges, external


def check(
    package: Path,
    rooms: Mapping[str, tuple[int, Sequence[str]]] = ROOMS,
    *,
    name: str = "relkit",
) -> list[Violation]:
    """Check every module of ``package`` against the layer map; list violations."""
    found = modules(package)
    known = set(found)
    out: list[Violation] = []
    for module, path in found.items():
        room = room_of(module, rooms)
        edges, external = imports(path, module, known, name)
        if room is None:
            out.append(Violation("unmapped", module, 1, f"{module} is in no room"))
            continue
        layer = rooms[room][0]
        for top in sorted({e.split(".")[0] for e in external}):
            if top in HEAVY and room not in HEAVY[top]:
                msg = f"{module} imports {top} (allowed in {HEAVY[top]})"
                out.append(Violation("heavy-dependency", module, 1, msg))
        for edge in edges:
            target = edge.target
            if target == "__init__" and set(edge.names) <= METADATA:
                continue
            if target == module:
                continue
            t_room = room_of(target, rooms)
            if t_room is None:
                continue  # reported as unmapped for the target itself
            t_layer = rooms[t_room][0]
            where = f"{name}.{module}:{edge.line} imports {name}.{target}"
            if t_layer > layer:
                msg = (
                    f"{where}: {LAYER_NAMES[layer]} ({room}) imports "
                    f"{LAYER_NAMES[t_layer]} ({t_room})"
                )
                out.append(Violation("upward", module, edge.line, msg))
            if layer == ANALYSIS and t_room in STORE_ROOMS:
                msg = f"{where}: analysis reads frames, never the store or ingest"
                out.append(Violation("analysis-reads-store", module, edge.line, msg))
            if is_private(target) and t_room != room:
                msg = f"{where}: a private module of room {t_room}, used from {room}"
                out.append(Violation("private-module", module, edge.line, msg))
            if private := [n for n in edge.names if _private_name(n)]:
                msg = f"{where}: private name(s) {private} cross modules"
                out.append(Violation("private-name", module, edge.line, msg))
    return out


# -- the rules on relkit ----------------------------------------------------------
RULES = (
    "unmapped",
    "upward",
    "analysis-reads-store",
    "private-module",
    "private-name",
    "heavy-dependency",
)
_VIOLATIONS = check(PACKAGE)


def _cases() -> list:
    cases = []
    for rule in RULES:
        for module in modules(PACKAGE):
            marks = []
            if (rule, module) in KNOWN_VIOLATIONS:
                reason = KNOWN_VIOLATIONS[(rule, module)]
                marks = [pytest.mark.xfail(reason=reason, strict=True)]
            cases.append(pytest.param(rule, module, marks=marks, id=f"{rule}-{module}"))
    return cases


@pytest.mark.parametrize(("rule", "module"), _cases())
def test_module_keeps_the_rule(rule: str, module: str) -> None:
    broken = [v.message for v in _VIOLATIONS if v.rule == rule and v.module == module]
    assert not broken, "\n".join(broken)


def test_every_room_exists() -> None:
    """Each room of the map names at least one module that exists (no typos)."""
    present = modules(PACKAGE)
    empty = [
        room
        for room, (_, members) in ROOMS.items()
        if not any(room_of(m, {room: ROOMS[room]}) for m in present)
    ]
    assert not empty, f"rooms with no module: {empty}"


def test_known_violations_name_modules_of_the_map() -> None:
    """Every xfail entry names a rule and a mapped module (no stale typos)."""
    for rule, module in KNOWN_VIOLATIONS:
        assert rule in RULES
        assert room_of(module, ROOMS) is not None, module


# -- the checker's self-test -----------------------------------------------------
#: a tiny package that keeps every rule: base, store, analysis, composition, CLI.
CLEAN = {
    "__init__.py": "from pkg.answers import answer\n__version__ = '0'\n",
    "errors.py": "class Oops(Exception):\n    pass\n",
    "store.py": "import duckdb\nfrom pkg.errors import Oops\n",
    "metrics.py": "from pkg.errors import Oops\nfrom pkg._helpers import helper\n",
    "_helpers.py": "def helper():\n    return 1\n",
    "incidents.py": "from pkg import metrics\nx = metrics.helper\n",
    "answers.py": "from pkg.store import Oops\nfrom pkg.metrics import Oops\n"
    "def answer():\n    from pkg import __version__\n",
    "cli.py": "from pkg.answers import answer\nfrom pkg import answers\n",
}
SELF_ROOMS: dict[str, tuple[int, tuple[str, ...]]] = {
    "errors": (BASE, ("errors",)),
    "store": (SOURCES, ("store",)),
    "metrics": (ANALYSIS, ("metrics", "_helpers")),
    "incidents": (ANALYSIS, ("incidents",)),
    "answers": (COMPOSITION, ("answers",)),
    "cli": (PRESENTATION, ("cli",)),
    "api": (PRESENTATION, ("__init__",)),
}
#: rule -> (file, text) that breaks exactly that rule when added to CLEAN.
BREAKS = {
    "unmapped": ("stray.py", "x = 1\n"),
    "upward": ("incidents.py", "def f():\n    from pkg.answers import answer\n"),
    "analysis-reads-store": ("incidents.py", "from pkg.store import Oops\n"),
    "private-module": ("answers.py", "from pkg._helpers import helper\n"),
    "private-name": ("incidents.py", "from pkg.metrics import _cache\n"),
    "heavy-dependency": ("metrics.py", "import duckdb\n"),
}


def _write(root: Path, files: Mapping[str, str]) -> Path:
    package = root / "pkg"
    package.mkdir()
    for name, text in files.items():
        (package / name).write_text(text, encoding="utf-8")
    return package


def test_checker_passes_a_clean_package(tmp_path: Path) -> None:
    assert check(_write(tmp_path, CLEAN), SELF_ROOMS, name="pkg") == []


@pytest.mark.parametrize("rule", RULES)
def test_checker_catches_each_rule(tmp_path: Path, rule: str) -> None:
    """A module written to break one rule is reported under that rule, only."""
    name, text = BREAKS[rule]
    package = _write(tmp_path, {**CLEAN, name: text})
    found = check(package, SELF_ROOMS, name="pkg")
    assert {v.rule for v in found} == {rule}, found
    assert {v.module for v in found} == {name.removesuffix(".py")}


def test_checker_catches_private_attribute_and_relative_import(tmp_path: Path) -> None:
    """``module._name`` on an imported module and a relative upward import count."""
    package = _write(
        tmp_path,
        {
            **CLEAN,
            "incidents.py": "from pkg import metrics\nx = metrics._cache\n",
            "metrics.py": "from .answers import answer\n",
        },
    )
    found = {(v.rule, v.module) for v in check(package, SELF_ROOMS, name="pkg")}
    assert found == {("private-name", "incidents"), ("upward", "metrics")}


def test_relkit_violations_are_the_known_ones() -> None:
    """The whole list at once, so a new violation reads as one message."""
    known = set(KNOWN_VIOLATIONS)
    new = [v.message for v in _VIOLATIONS if (v.rule, v.module) not in known]
    assert not new, "\n".join(new)
