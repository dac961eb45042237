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


def test_repeated_hosts_kept_once_and_counted() -> None:
    """Review of issue 5: ``gpu[001-002],gpu001`` names 2 hosts; the repeat is
    dropped where it repeats, and counted."""
    from relkit.ingest._hostlist import expand_hostlists_counted

    assert expand_hostlist("gpu[001-002],gpu001") == ["gpu001", "gpu002"]
    hosts, _, repeats = expand_hostlists_counted(
        pl.Series(["gpu[001-002],gpu001", "g[1-3,2-4]", "x"])
    )
    assert repeats.to_list() == [1, 2, 0]
    assert hosts.filter(index=1)["host"].to_list() == ["g1", "g2", "g3", "g4"]


def test_expansion_capped_by_nnodes_and_max_hosts() -> None:
    """Review of issue 5 (h/huge.psv: 30 x ``gpu[1-999999]`` took 3.3 GB): a
    list naming more hosts than its record's NNodes, or than MAX_HOSTS
    (100,000), is an error, refused before it expands past twice the limit."""
    from relkit.ingest._hostlist import MAX_HOSTS, expand_hostlists

    hosts, errors = expand_hostlists(
        pl.Series(["gpu[1-999999]", "gpu[1-999999]", "gpu[1-4]", "gpu[1-4]"]),
        max_hosts=pl.Series([None, 2, 4, 3]),
    )
    assert MAX_HOSTS == 100_000
    assert "at least 999,999 hosts, more than relkit's limit of 100,000" in errors[0]
    assert "more than the record's NNodes = 2" in errors[1]
    assert errors[2] is None
    assert (
        errors[3]
        == "host list 'gpu[1-4]' names 4 hosts, more than the record's NNodes = 3"
    )
    assert hosts["index"].unique().to_list() == [2]
    with pytest.raises(InvalidParameterError, match="100,000"):
        expand_hostlist("gpu[1-200000]")
