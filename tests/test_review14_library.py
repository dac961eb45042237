"""Issue 14 §5 review: library defects that were silent or misleading.

Each test names where its expected value comes from (a hand computation in the
docstring, or a peer library computed in the test).
"""

import polars as pl
import pytest

from relkit import answers, repairable
from relkit.errors import InvalidParameterError


def _trend_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    ev = pl.DataFrame({"unit_id": ["a"] * 5, "time_h": [1.0, 2, 4, 8, 16]})
    un = pl.DataFrame({"unit_id": ["a"], "exit_h": [100.0]})
    return ev, un


@pytest.mark.parametrize("alpha", [0.95, 0.9, 0.51, 0.0, 1.0])
def test_trend_tests_refuses_a_confidence_level_as_alpha(alpha: float) -> None:
    """alpha 0.95 would name a trend at p = 0.8 (review: LANL systems 5, 6).

    A significance level lies in (0, 0.5]; the message names the likely mix-up
    with --confidence.
    """
    ev, un = _trend_frames()
    with pytest.raises(InvalidParameterError, match=r"significance level.*confidence"):
        repairable.trend_tests(ev, un, alpha=alpha)


def test_trend_tests_alpha_boundary_and_laplace_value() -> None:
    """alpha 0.5 is accepted; the Laplace statistic is hand-derived.

    Times 1, 2, 4, 8, 16 in (0, 100]: U = (sum t / n - T/2) / (T sqrt(1/(12 n)))
    = (6.2 - 50) / (100 * sqrt(1/60)) = -43.8 / 12.9099 = -3.3927 (improving).
    """
    ev, un = _trend_frames()
    out = repairable.trend_tests(ev, un, alpha=0.5)
    lap = out.filter(pl.col("test") == "laplace")
    assert lap["statistic"][0] == pytest.approx(-3.3927, abs=1e-4)
    assert lap["direction"][0] == "improving"


def test_trend_by_refuses_alpha_095_on_lanl(lanl_tables) -> None:
    """On LANL, trend_by(alpha=0.95) used to label systems 5 and 6
    "deteriorating" at p 0.67 / 0.80 (review reproduction); now refused."""
    events, assets = lanl_tables
    with pytest.raises(InvalidParameterError, match="did you mean --confidence"):
        answers.trend_by(events, assets, by=["system"], alpha=0.95)
