"""No tracked file cites a path of one particular machine (issue 9 §6).

Tests, sources, notebooks and docs cite what a reader can reach: a paper and
its DOI, a public URL, a path inside the repository (``datasets/lanl/...``) or
of the shared folder written relative (``shared/cases/README.md C03``, found by
``tests/shared_paths.py``). Absolute paths under the workplace or the root
user's home are of one machine. The check reads the working copy of every file
``git ls-files`` lists (so work not yet committed is held too).
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent

#: An absolute path starting at one of these top folders. The lookbehind keeps
#: URLs (``github.com/x/...``) and relative paths (``a/x/b``) out. The
#: folder names are split so this file does not match itself.
MACHINE_PATH = re.compile(r"(?<![\w.~/-])/(?:" + "wo" + "rk|ro" + "ot" + r")/")


def machine_paths(text: str) -> list[tuple[int, str]]:
    """Return (line number, line) of each line citing a machine path."""
    return [
        (n, line.strip())
        for n, line in enumerate(text.splitlines(), start=1)
        if MACHINE_PATH.search(line)
    ]


def _tracked() -> list[Path]:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout: no list of tracked files")
    out = subprocess.run(
        ["git", "ls-files", "-z"], cwd=REPO, capture_output=True, check=True
    ).stdout
    return [REPO / name for name in out.decode().split("\0") if name]


def test_no_tracked_file_cites_a_machine_path() -> None:
    found = []
    for path in _tracked():
        if not path.is_file():
            continue  # deleted in the working copy, not yet committed
        data = path.read_bytes()
        if b"\0" in data[:8192]:
            continue  # binary (DuckDB, Parquet, images)
        text = data.decode("utf-8", errors="replace")
        rel = path.relative_to(REPO)
        found += [f"{rel}:{n}: {line[:120]}" for n, line in machine_paths(text)]
    assert not found, "machine paths; cite shared/... or a repo path:\n" + "\n".join(
        found
    )


@pytest.mark.parametrize(
    ("text", "hits"),
    [
        ("see " + "/wo" + "rk/shared/cases/README.md C03", [1]),
        ('path = "' + "/ro" + 'ot/.cache/x"', [1]),
        ("ok\n`" + "/wo" + "rk/notes/a.md`", [2]),
        ("see shared/cases/README.md C03", []),
        ("https://github.com/wo" + "rk/x and a/wo" + "rk/b", []),
        ("datasets/paper-tables/PROVENANCE.md", []),
    ],
)
def test_the_pattern(text: str, hits: list[int]) -> None:
    """The checker finds absolute machine paths and leaves the rest."""
    assert [n for n, _ in machine_paths(text)] == hits
