"""nbval settings: compare text/plain outputs, skip inherently variable ones.

Altair's HTML output carries a fresh uuid4 per render, so ``text/html`` is not
compared (polars tables are still compared through their ``text/plain`` form).
"""

import pytest


def pytest_collectstart(collector: pytest.Collector) -> None:
    """Skip comparing HTML, JavaScript and stderr outputs of notebook cells."""
    if collector.path is not None and collector.path.suffix == ".ipynb":
        collector.skip_compare += (  # type: ignore[attr-defined]
            "text/html",
            "application/javascript",
            "application/vnd.vegalite.v5+json",
            "application/vnd.vegalite.v6+json",
            "stderr",
        )
