"""nbval settings: compare text/plain outputs, skip inherently variable ones.

Altair's HTML output carries a fresh uuid4 per render, so ``text/html`` is not
compared (polars tables are still compared through their ``text/plain`` form).
Static SVG renderings are not compared either: a bar's coordinates carry float
noise in their last digits (a rate summed over thousands of units in a
parallel group-by, in an order that can differ between runs: the lemon chart
failed 2 runs of 5 on 536.8055572618384), while the numbers drawn are compared
in the tables beside the charts.
"""

import pytest


def pytest_collectstart(collector: pytest.Collector) -> None:
    """Skip comparing HTML, JavaScript, SVG and stderr outputs of notebook cells."""
    if collector.path is not None and collector.path.suffix == ".ipynb":
        collector.skip_compare += (  # type: ignore[attr-defined]
            "text/html",
            "application/javascript",
            "application/vnd.vegalite.v5+json",
            "application/vnd.vegalite.v6+json",
            "image/svg+xml",
            "stderr",
        )
