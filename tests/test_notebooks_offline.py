"""Committed notebooks show their charts offline (issue 14 §1; DESIGN.md §1).

Altair's default notebook output loads Vega from a CDN, so offline or in an
HTML export the chart is blank. The notebooks call
``relkit.charts.enable_offline_rendering()``: every chart output is an
embedded image, and no output names a CDN.
"""

import json
from pathlib import Path

import pytest

NOTEBOOKS = sorted(
    (Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_outputs_need_no_network(path: Path) -> None:
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]
    text = json.dumps(outputs)
    for remote in ("cdn.jsdelivr", "unpkg.com", "vega-embed@"):
        assert remote not in text, f"{path.name} output loads {remote}"
    mimetypes = {m for o in outputs for m in o.get("data", {})}
    assert "application/vnd.vegalite.v5+json" not in mimetypes
    assert "image/svg+xml" in mimetypes  # the charts are there, as images


def test_offline_renderer_refuses_other_formats() -> None:
    from relkit.charts import enable_offline_rendering

    with pytest.raises(ValueError, match="'svg' or 'png'"):
        enable_offline_rendering("html")
