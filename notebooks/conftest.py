"""nbval settings: compare text/plain outputs, skip inherently variable ones.

Altair's HTML output carries a fresh uuid4 per render, so ``text/html`` is not
compared (polars tables are still compared through their ``text/plain`` form).
Static SVG renderings are not compared either: a bar's coordinates carry float
noise in their last digits (a rate summed over thousands of units in a
parallel group-by, in an order that can differ between runs: the lemon chart
failed 2 runs of 5 on 536.8055572618384), while the numbers drawn are compared
in the tables beside the charts.

Every executed output is also checked offline-safe (issue 14 §3): no Vega-Lite
or JavaScript mimetype, no ``<script>`` or remote address in HTML, and each
output's set of mimetypes equals the committed one (so a chart committed as
an SVG image must still render as one, even though its contents are not
compared). ``make nbval`` runs the kernels with the network blocked
(``.ci/offline/sitecustomize.py``).
"""

import re
from collections.abc import Callable

import pytest

#: Mimetypes that need Vega or JavaScript loaded when the notebook is viewed.
NEEDS_NETWORK = ("application/vnd.vega", "application/javascript")
#: What in an HTML output would fetch or run something at view time.
REMOTE = re.compile(r"<script|https?://", re.IGNORECASE)


def offline_problems(test: list[dict], ref: list[dict]) -> list[str]:
    """Why executed outputs ``test`` would not show offline, or differ from ``ref``."""
    problems = []
    for out in test:
        for mime, value in out.get("data", {}).items():
            text = value if isinstance(value, str) else "".join(value)
            if mime.startswith(NEEDS_NETWORK):
                problems.append(f"output {mime} needs Vega/JavaScript at view time")
            elif mime == "text/html" and REMOTE.search(text):
                problems.append("text/html output has a <script> or a remote address")
    kinds = [sorted(o["data"]) for o in test if "data" in o]
    committed = [sorted(o["data"]) for o in ref if "data" in o]
    if kinds != committed:
        problems.append(f"output mimetypes {kinds} differ from committed {committed}")
    return problems


def _offline_compare(
    item: pytest.Item, compare: Callable[..., bool]
) -> Callable[..., bool]:
    def check(test: list[dict], ref: list[dict], skip_compare: object = None) -> bool:
        problems = offline_problems(test, ref)
        if problems:
            item.comparison_traceback = problems  # type: ignore[attr-defined]
            return False
        return compare(test, ref, skip_compare)

    return check


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Check each cell's executed outputs are offline-safe before nbval compares."""
    for item in items:
        if item.path.suffix == ".ipynb" and hasattr(item, "compare_outputs"):
            item.compare_outputs = _offline_compare(item, item.compare_outputs)  # type: ignore[attr-defined]


def pytest_collectstart(collector: pytest.Collector) -> None:
    """Skip comparing HTML, SVG and stderr outputs of notebook cells.

    Vega-Lite and JavaScript outputs are not skipped but refused
    (:func:`offline_problems`).
    """
    if collector.path is not None and collector.path.suffix == ".ipynb":
        collector.skip_compare += (  # type: ignore[attr-defined]
            "text/html",
            "image/svg+xml",
            "stderr",
        )
