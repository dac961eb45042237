"""Committed notebooks show their charts offline (issue 14 §1; DESIGN.md §1).

Altair's default notebook output loads Vega from a CDN, so offline or in an
HTML export the chart is blank. The notebooks call
``relkit.charts.enable_offline_rendering()``: every chart output is an
embedded image, and no output names a CDN.
"""

import json
from pathlib import Path
from types import ModuleType

import pytest

NOTEBOOKS = sorted(
    (Path(__file__).resolve().parent.parent / "notebooks").glob("*.ipynb")
)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.name for p in NOTEBOOKS])
def test_notebook_outputs_need_no_network(path: Path) -> None:
    """The committed outputs pass the rule nbval applies to executed ones."""
    cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
    outputs = [o for c in cells if c["cell_type"] == "code" for o in c["outputs"]]
    assert _checks().offline_problems(outputs, outputs) == []
    mimetypes = {m for o in outputs for m in o.get("data", {})}
    assert "image/svg+xml" in mimetypes  # the charts are there, as images


def _checks() -> ModuleType:
    """notebooks/conftest.py, the one home of the offline-output rule."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "notebook_checks",
        Path(__file__).resolve().parent.parent / "notebooks" / "conftest.py",
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_offline_rule_refuses_what_loads_at_view_time() -> None:
    """Outputs that fetch or run code when viewed are refused; an SVG image is not."""
    rule = _checks().offline_problems
    svg = {"data": {"image/svg+xml": "<svg/>", "text/plain": "Chart"}}
    vegalite = {"data": {"application/vnd.vegalite.v5+json": {}}}
    html = {"data": {"text/html": '<div></div><script src="https://x/vega@6">'}}
    assert rule([svg], [svg]) == []
    assert len(rule([vegalite], [vegalite])) == 1
    assert len(rule([html], [html])) == 1
    assert rule([vegalite], [svg])[-1].startswith("output mimetypes")


def test_offline_renderer_refuses_other_formats() -> None:
    from relkit.charts import enable_offline_rendering

    with pytest.raises(ValueError, match="'svg' or 'png'"):
        enable_offline_rendering("html")


# --- executed offline: nbval with the network blocked (make nbval) ------------

ROOT = Path(__file__).resolve().parent.parent
OFFLINE_ENV = {"RELKIT_BLOCK_NETWORK": "1", "PYTHONPATH": str(ROOT / ".ci" / "offline")}

SETUP = "import altair as alt\nimport polars as pl\n"
CHART = (
    'alt.Chart(pl.DataFrame({"time_h": [1.0, 2.0, 4.0]}))'
    '.mark_tick().encode(x=alt.X("time_h:Q", title="Time (h)"))'
)
NETWORK = (
    "import socket\n"
    "try:\n"
    '    socket.create_connection(("192.0.2.1", 80), timeout=2)\n'
    "except OSError as err:\n"
    '    print("blocked" if "network blocked" in str(err) else f"other: {err}")\n'
)


def _notebook(*sources: str) -> "nbformat.NotebookNode":  # noqa: F821
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(s) for s in sources]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    return nb


def test_nbval_offline_check_fails_a_cdn_chart(tmp_path: Path) -> None:
    """The notebooks' nbval run refuses a chart drawn by Altair's default renderer.

    A tiny notebook, run the way ``make nbval`` runs the real ones (network
    blocked, notebooks/conftest.py's checks), committed with each chart as the
    SVG image that relkit's offline renderer gives (made here in-process by
    IPython's display formatter). Cell 1 draws its chart offline (passes);
    cell 2 prints "blocked" only when the kernel's connection to a
    non-loopback address is refused by ``.ci/offline/sitecustomize.py``
    (passes only with the block); cell 4 draws after cell 3 switched back to
    Altair's default renderer, whose output loads Vega from a CDN (must fail,
    naming why).
    """
    import os
    import subprocess
    import sys

    import altair as alt
    import nbformat
    import polars as pl
    from IPython.core.formatters import DisplayFormatter

    from relkit.charts import enable_offline_rendering

    with enable_offline_rendering():
        data, _ = DisplayFormatter().format(eval(CHART, {"alt": alt, "pl": pl}))
    assert sorted(data) == ["image/svg+xml", "text/plain"]
    offline = SETUP + "from relkit.charts import enable_offline_rendering\n"
    offline += "_ = enable_offline_rendering()"
    nb = _notebook(
        offline, CHART, NETWORK, '_ = alt.renderers.enable("default")', CHART
    )
    outputs = [
        [],
        [nbformat.v4.new_output("execute_result", data=data, execution_count=2)],
        [nbformat.v4.new_output("stream", text="blocked\n")],
        [],
        [nbformat.v4.new_output("execute_result", data=data, execution_count=5)],
    ]
    for k, (cell, outs) in enumerate(zip(nb.cells, outputs, strict=True)):
        cell.execution_count = k + 1
        cell.outputs = outs
    nbformat.write(nb, tmp_path / "charts.ipynb")
    (tmp_path / "conftest.py").write_text(
        (ROOT / "notebooks" / "conftest.py").read_text(encoding="utf-8")
    )
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "--nbval",
            "--nbval-current-env",
            "--rootdir",
            str(tmp_path),
            "-rA",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, **OFFLINE_ENV},
        timeout=300,
        check=False,
    )
    out = done.stdout
    assert done.returncode == 1, out[-3000:]
    for k in (0, 1, 2, 3):
        assert f"PASSED charts.ipynb::Cell {k}" in out, out[-3000:]
    assert "FAILED charts.ipynb::Cell 4" in out, out[-3000:]
    # Altair 6 in a kernel with no front end: HTML that loads vega@6 from jsDelivr
    assert "text/html output has a <script> or a remote address" in out
    assert "differ from committed [['image/svg+xml', 'text/plain']]" in out
