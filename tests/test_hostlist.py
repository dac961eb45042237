"""Slurm host lists (case C20 of shared/cases/README.md) and the vectorised expander."""

import polars as pl
import pytest
from shared_paths import SHARED

from relkit.errors import InvalidParameterError
from relkit.ingest import expand_hostlist
from relkit.ingest._hostlist import expand_hostlists

C20 = SHARED / "cases" / "C20-slurm-hostlist-expressions.txt"


@pytest.mark.parametrize(
    ("expression", "hosts"),
    [
        ("gpu[001-004,010]", ["gpu001", "gpu002", "gpu003", "gpu004", "gpu010"]),
        ("dgx-a[07-08],login01", ["dgx-a07", "dgx-a08", "login01"]),
        (
            "rack[1-2]-node[01-02]",
            ["rack1-node01", "rack1-node02", "rack2-node01", "rack2-node02"],
        ),
        ("gpu[098-101]", ["gpu098", "gpu099", "gpu100", "gpu101"]),
        ("node[9-11]", ["node9", "node10", "node11"]),
        ("gpu017", ["gpu017"]),
        ("None assigned", []),
    ],
)
def test_ref_c20_expressions(expression: str, hosts: list[str]) -> None:
    """C20 expected values (cases/README.md): width kept, brackets multiplied,
    ``None assigned`` is no host."""
    assert expand_hostlist(expression) == hosts


def test_ref_c20_file_line_by_line() -> None:
    """C20: 8 expressions, the 8th (``gpu[001-``) is an error naming it, never a
    host; the counts of the others are 5, 3, 4, 4, 3, 1, 0 (cases/README.md)."""
    if not C20.exists():
        pytest.skip("shared cases not present")
    lines = C20.read_text().splitlines()
    hosts, errors = expand_hostlists(pl.Series(lines))
    counts = hosts.group_by("index").len().sort("index")
    assert dict(counts.rows()) == {0: 5, 1: 3, 2: 4, 3: 4, 4: 3, 5: 1}
    assert errors.to_list()[:7] == [None] * 7
    assert errors[7] is not None
    assert "gpu[001-" in errors[7]
    assert "gpu[001-" not in hosts["host"].to_list()


def test_malformed_lists_name_the_expression() -> None:
    """Our grammar (Slurm hostlist.c): these are errors, never guesses."""
    for bad in ("gpu[001-", "gpu[3-1]", "gpu[a-b]", "gpu[1-2],,x", "[1-2]", "g 1"):
        with pytest.raises(InvalidParameterError, match="malformed host list"):
            expand_hostlist(bad)


def test_pavilion_combined_list() -> None:
    """hpc/pavilion2 PR #526's valid combined list (cited in C20)."""
    got = expand_hostlist("foo003,foo0[10-12],foo[103-104],foo[10,12-14],foo-m11-16")
    assert got == [
        "foo003",
        "foo010",
        "foo011",
        "foo012",
        "foo103",
        "foo104",
        "foo10",
        "foo12",
        "foo13",
        "foo14",
        "foo-m11-16",
    ]


def test_prop_order_kept_across_items() -> None:
    """Items of one list come out in order although they expand in different passes."""
    assert expand_hostlist("a[1-2]x,b,c[3,5]d[1-2]") == [
        "a1x",
        "a2x",
        "b",
        "c3d1",
        "c3d2",
        "c5d1",
        "c5d2",
    ]
