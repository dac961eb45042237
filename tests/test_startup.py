"""Start-up stays light (issue 13 §3): no heavy import before a verb runs.

``relkit --help``, ``relkit --version`` and a failing argument check must not
import DuckDB, polars, scipy, lifelines, Altair, pyarrow, numpy or pandas; nor
may ``import relkit`` (PEP 562: the public names are imported on first use).
These tests check *which modules are loaded*, in a fresh interpreter each time,
never how long it took: the times are in ``bench/bench_startup.py``.
"""

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import relkit

#: Packages a start-up must not import (issue 13 §3, plus pandas via lifelines).
HEAVY = frozenset(
    {"duckdb", "polars", "scipy", "lifelines", "altair", "pyarrow", "numpy", "pandas"}
)
INIT = Path(relkit.__file__)


def _python(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], capture_output=True, text=True, check=False
    )


def _loaded_heavy(code: str) -> list[str]:
    """Run ``code`` in a fresh interpreter; return the heavy packages it loaded."""
    probe = (
        f"{code}\nimport sys, json\n"
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} "
        f"& set({sorted(HEAVY)!r}))))"
    )
    done = _python("-c", probe)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _imported(importtime_stderr: str) -> set[str]:
    """Top-level package names listed by ``python -X importtime`` on stderr."""
    names = set()
    for line in importtime_stderr.splitlines():
        if line.startswith("import time:") and "|" in line:
            name = line.rsplit("|", 1)[1].strip()
            names.add(name.split(".")[0])
    return names


def test_building_the_parser_imports_no_heavy_package() -> None:
    assert _loaded_heavy("import relkit.cli; relkit.cli.build_parser()") == []


def test_import_relkit_imports_no_heavy_package() -> None:
    assert _loaded_heavy("import relkit") == []


def test_first_use_of_a_public_name_imports_its_module() -> None:
    """The lazy import happens, and only on use: polars arrives with ``Store``."""
    assert "polars" in _loaded_heavy("import relkit; relkit.Store")


@pytest.mark.parametrize(
    ("argv", "code", "stream", "says"),
    [
        (["--help"], 0, "stdout", "usage: relkit"),
        (["--version"], 0, "stdout", "relkit 0.1.0"),
        (["mtbf", "--no-such-option"], 2, "stderr", "unrecognized arguments"),
        (["ingest"], 2, "stderr", "the following arguments are required"),
        (["mtbf", "--help"], 0, "stdout", "usage: relkit mtbf"),
    ],
    ids=["help", "version", "bad-option", "missing-argument", "verb-help"],
)
def test_cli_exits_as_before_without_heavy_imports(
    argv: list[str], code: int, stream: str, says: str
) -> None:
    """Exit codes as argparse gives them (0 for help/version, 2 for usage).

    Run through ``python -m relkit`` (``relkit/__main__.py``, the same
    ``relkit.cli.main`` as the console script); ``-X importtime`` lists every
    module the process imported.
    """
    done = _python("-X", "importtime", "-m", "relkit", *argv)
    assert done.returncode == code, done.stderr[-2000:]
    assert says in getattr(done, stream)
    loaded = _imported(done.stderr)
    assert "relkit" in loaded  # the probe sees the imports at all
    assert not loaded & HEAVY, sorted(loaded & HEAVY)


def test_public_name_resolves_and_computes() -> None:
    """``relkit.mtbf_bounds`` still works, lazily imported.

    Expected: the exact chi-square bounds of a time-terminated test (MIL-HDBK-781A;
    Epstein 1960, doi:10.1080/00401706.1960.10489909) computed here with
    scipy: lower = 2T / chi2.ppf(0.95, 2r + 2), upper = 2T / chi2.ppf(0.05, 2r),
    for r = 7 failures in T = 14,980 h at 90 % two-sided.
    """
    from scipy.stats import chi2

    from relkit import mtbf_bounds

    b = relkit.mtbf_bounds(7, exposure_h=14980.0, confidence=0.9)
    assert mtbf_bounds is relkit.mtbf_bounds
    assert b.mtbf_h == pytest.approx(14980.0 / 7)
    assert b.lower_h == pytest.approx(2 * 14980.0 / chi2.ppf(0.95, 16))
    assert b.upper_h == pytest.approx(2 * 14980.0 / chi2.ppf(0.05, 14))


def test_dir_lists_every_public_name_and_unknown_names_fail() -> None:
    assert set(relkit.__all__) <= set(dir(relkit))
    with pytest.raises(AttributeError, match="no_such_name"):
        _ = relkit.no_such_name
    with pytest.raises(ImportError):
        from relkit import no_such_name  # noqa: F401


def test_submodules_resolve_as_attributes() -> None:
    """``relkit.charts`` etc. work after a bare ``import relkit``, as when eager."""
    probe = "import relkit\nprint(relkit.charts.__name__, relkit.metrics.__name__)"
    done = _python("-c", probe)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["relkit.charts", "relkit.metrics"]


def _type_checking_imports() -> dict[str, str]:
    """Name -> module of the imports under ``if typing.TYPE_CHECKING:``."""
    tree = ast.parse(INIT.read_text(encoding="utf-8"))
    out: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for sub in node.body:
                assert isinstance(sub, ast.ImportFrom)
                for alias in sub.names:
                    out[alias.asname or alias.name] = str(sub.module)
    return out


def test_lazy_map_matches_the_typed_imports() -> None:
    """The names type checkers see are the names ``__getattr__`` imports.

    Both lists are written in ``relkit/__init__.py``; each name must come from
    the same module in both, and the object must be that module's.
    """
    typed = _type_checking_imports()
    lazy = {name: module for module, names in relkit._EXPORTS.items() for name in names}
    assert typed == lazy
    eager = {n for n in relkit.__all__ if n not in lazy} - {"__version__"}
    assert all(n in vars(relkit) for n in eager)  # the light errors module
    for name, module in lazy.items():
        assert name in relkit.__all__
        assert getattr(relkit, name) is getattr(sys.modules[module], name)


def test_cli_default_slack_matches_the_library() -> None:
    """``--slack-min``'s default is written out in the CLI; it must stay the same."""
    from relkit._cli_jobs import DEFAULT_SLACK_MIN as CLI_DEFAULT
    from relkit.jobs import DEFAULT_SLACK_MIN

    assert CLI_DEFAULT == DEFAULT_SLACK_MIN


def test_version_fast_path_prints_the_package_version(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`relkit --version` answers before any verb's parser is built, with
    relkit.__version__ (the same text argparse's --version action prints)."""
    import relkit
    from relkit.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"relkit {relkit.__version__}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["mtbf", "--bad"],
        ["ingest"],
        ["ingest", "--kind", "nope", "x"],
        ["survival", "--unit", "bogus"],
        ["nosuch"],
        [],
        ["--help"],
        ["mtbf", "--help"],
        ["cif", "--db", "x.duckdb", "--by", "system"],
    ],
)
def test_one_verb_parser_says_what_the_full_one_says(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """build_parser(only=VERB), what `relkit VERB ...` builds, parses and
    refuses exactly as the parser with every verb's options: same namespace
    (bar the function), same help and error text, same exit code."""
    from relkit.cli import build_parser

    said = []
    for only in (None, argv[0] if argv and not argv[0].startswith("-") else ""):
        try:
            ns = vars(build_parser(only=only).parse_args(argv))
            ns.pop("func", None)
            code = None
        except SystemExit as exc:
            ns, code = None, exc.code
        said.append((ns, code, capsys.readouterr()))
    assert said[0] == said[1]
