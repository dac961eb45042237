"""Defects the issue 14 review found in the command line, one test each.

Expected values are worked by hand in each docstring (or read from the CSV
output of the same command, where the point is how the table writes a value
that CSV keeps in full).
"""

from pathlib import Path

import pytest

from relkit._cli_format import probability_text, reading_frame, reading_value
from relkit.cli import main


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _table(out: str) -> list[dict[str, str]]:
    """Parse a markdown table printed by the CLI into rows of cell text."""
    lines = [line for line in out.splitlines() if line.startswith("|")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    return [
        dict(zip(head, (c.strip() for c in line.strip("|").split("|")), strict=True))
        for line in lines[2:]
    ]


def test_small_values_keep_three_significant_digits(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A 1,048,576-GPU fleet's MTTF is 0.0282 h, not 0.

    By hand: 8 GPUs a node, so 1,048,576 GPUs = 131,072 nodes; at 6.5 failures
    per 1000 node-days (0.0065 per node-day) MTTF = 24 / (131072 * 0.0065) =
    24 / 851.968 = 0.028170 h -> 0.0282 (three significant digits); one node:
    24 / 0.0065 = 3,692.3 h -> 3,692.
    """
    code, out, _ = run(
        capsys, "scale", "--failures-per-1000-node-days", "6.5", "--gpus", "8,1048576"
    )
    assert code == 0
    rows = _table(out)
    assert [r["mttf_h"] for r in rows] == ["3,692", "0.0282"]


def test_reading_value_never_rounds_to_zero_or_one() -> None:
    """Hand-written cases of the rule: >= 3 significant digits, no false 0 or 1.

    0.0002 at 3 places would read 0.000 -> 0.000200; 0.9999974 at 4 places
    would read 1.0000 -> 0.999997 (the first place where it is not 1);
    0.38037 at 2 places (2 digits) -> 0.380; 3.4e-6 -> exponent 3.40e-06; 0.95
    at 2 places is exact and stays 0.95; an exact 0 is 0.
    """
    assert reading_value(0.0002, 3) == "0.000200"
    assert reading_value(0.9999974, 4) == "0.999997"
    assert reading_value(0.38037, 2) == "0.380"
    assert reading_value(3.4e-6, 4) == "3.40e-06"
    assert reading_value(0.95, 2) == "0.95"
    assert reading_value(0.0, 4) == "0"
    assert reading_value(4543944.5333, 0) == "4,543,945"


def test_p_and_q_values_have_their_own_rule() -> None:
    """p/q-values: 3 significant digits, exponent below 1e-4, 0 as <1e-300.

    By hand: 0.00074 -> 0.000740; 1.26e-138 -> 1.26e-138; 0.0485 -> 0.0485;
    6.3e-135 -> 6.30e-135; a Laplace p-value that underflowed to 0.0 is below
    the smallest double, written <1e-300.
    """
    assert probability_text(0.00074) == "0.000740"
    assert probability_text(1.26e-138) == "1.26e-138"
    assert probability_text(0.0485) == "0.0485"
    assert probability_text(6.3e-135) == "6.30e-135"
    assert probability_text(0.0) == "<1e-300"


def test_lanl_lemons_p_values_are_not_zero(
    lanl_db: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """LANL's top lemon (s19-n1024, 119 failures against 3.207 expected) has
    p = P(X >= 119 | Poisson(3.207)), about 1.3e-138 (CSV), shown in exponent
    form, never as 0; the table's value matches the CSV's to 3 digits."""
    import polars as pl

    code, out, _ = run(capsys, "lemons", "--db", str(lanl_db), "--format", "csv")
    assert code == 0
    from io import StringIO

    full = pl.read_csv(StringIO(out))
    code, out, _ = run(capsys, "lemons", "--db", str(lanl_db))
    rows = _table(out)
    assert rows[0]["host"] == full["host"][0]
    assert float(rows[0]["p_value"]) == pytest.approx(full["p_value"][0], rel=5e-3)
    assert float(rows[0]["q_value"]) == pytest.approx(full["q_value"][0], rel=5e-3)
    assert full["p_value"][0] < 1e-100
    assert all(r["p_value"] not in ("0", "0.000") for r in rows)


def test_an_estimate_and_its_bounds_share_places() -> None:
    """cumulative_incidence, lower and upper are written with the same places.

    By hand: the family's values 0.1234, 0.1, 0.15 have median 0.1234 -> four
    significant digits = 4 places for all three (a place is dropped only when
    it is 0 in every value of the family, and 0.1234's last place is not):
    0.1234, 0.1000, 0.1500 (before, lower and upper were written 0.1 / 0.15).
    """
    import polars as pl

    frame = pl.DataFrame(
        {"cumulative_incidence": [0.1234], "lower": [0.1], "upper": [0.15]}
    )
    shown = reading_frame(frame)
    assert [shown[c][0].strip() for c in shown.columns] == [
        "0.1234",
        "0.1000",
        "0.1500",
    ]
