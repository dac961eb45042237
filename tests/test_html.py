"""Tests of relkit._html: a self-contained page whose charts render offline."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
import vl_convert as vlc

from relkit import _html, charts
from relkit.errors import InvalidParameterError

SCRIPT = re.compile(r"<script([^>]*)>(.*?)</script>", re.DOTALL | re.IGNORECASE)


@pytest.fixture(scope="module")
def km_spec() -> dict:
    km = pl.DataFrame(
        {
            "time_h": [0.0, 10.0, 25.0],
            "survival": [1.0, 0.8, 0.5],
            "survival_lower": [1.0, 0.6, 0.3],
            "survival_upper": [1.0, 0.95, 0.7],
            "n_at_risk": [10, 8, 4],
        }
    )
    return charts.kaplan_meier_chart(km, title="KM </script> & <b>").to_dict()


@pytest.fixture(scope="module")
def ettr_spec() -> dict:
    curve = pl.DataFrame(
        {
            "interval_h": [0.1, 0.5, 1.0, 5.0, 10.0],
            "ettr_frac": [0.8, 0.9, 0.93, 0.85, 0.7],
        }
    )
    return charts.ettr_chart(curve, optimum_interval_h=1.0).to_dict()


@pytest.fixture(scope="module")
def page(km_spec: dict, ettr_spec: dict) -> str:
    table = pl.DataFrame({"system": ["2", "18"], "mtbf_h": [123.456, None]})
    return _html.render_page(
        "relkit <test> report",
        [
            ("Survival", _html.chart_div(km_spec, "km")),
            (
                "Checkpoints",
                _html.chart_div(ettr_spec, "ettr") + _html.table_html(table),
            ),
        ],
    )


# --- the inlined bundle ------------------------------------------------------


def test_bundle_inlines_vega_libraries_without_network() -> None:
    tag = _html.inline_vega_scripts()
    versions = _html.vega_versions()
    opening = tag.split(">", 1)[0]
    assert "src=" not in opening
    assert len(tag) > 500_000  # the real libraries, not a loader stub
    assert "window.vegaEmbed=" in tag  # vega-embed's global
    assert ".vega-embed" in tag  # vega-embed's stylesheet
    assert f'"{versions["vega"]}"' in tag  # vega's version constant
    assert re.search(rf'"{re.escape(versions["vega-lite"])}\.\d+"', tag)  # vega-lite
    assert f'data-vegaembed="{versions["vega-embed"]}"' in opening
    assert versions["vega"] == vlc.get_vega_version()
    # nothing inside can close the <script> element early
    assert tag.lower().count("</script") == 1
    assert tag.endswith("</script>")
    assert "<!--" not in tag


def test_bundle_is_cached_and_versions_validated() -> None:
    assert _html.inline_vega_scripts() is not None
    assert _html._bundle.cache_info().currsize >= 1
    with pytest.raises(InvalidParameterError, match="not bundled"):
        _html.inline_vega_scripts(vl_version="1.0")


def test_script_safe_escapes_closing_tags() -> None:
    js = 'var s = "</SCRIPT><!-- x";'
    assert _html._script_safe(js) == 'var s = "<\\/SCRIPT><\\!-- x";'


# --- chart pieces ------------------------------------------------------------


def test_chart_svg_renders(km_spec: dict) -> None:
    svg = _html.chart_svg(km_spec)
    assert svg.startswith("<svg")
    assert svg.rstrip().endswith("</svg>")
    assert "S(t) = P(no failure by t)" in svg
    assert "Time (h)" in svg


def test_chart_div_escapes_spec_and_embeds_svg(km_spec: dict) -> None:
    piece = _html.chart_div(km_spec, "km-first")
    assert piece.startswith('<figure class="relkit-chart"><div id="km-first"')
    assert '<div id="km-first-static" class="relkit-static"><svg' in piece
    (attrs, body), *_ = SCRIPT.findall(piece.split("</figure>", 1)[1])
    assert attrs == ""
    assert 'renderer: "svg", actions: false' in body
    # the title "KM </script> & <b>" is JSON-escaped inside the script
    assert "</script>" not in body
    assert "\\u003c/script\\u003e" in body
    spec_json = re.search(r"vegaEmbed\(el, (\{.*\}), \{renderer", body).group(1)
    assert json.loads(spec_json) == km_spec


def test_chart_div_without_static_and_bad_ids(km_spec: dict) -> None:
    piece = _html.chart_div(km_spec, "km", static_svg=False)
    assert "<svg" not in piece
    for bad in ["", "1abc", "a b", 'x"><script>', "a" * 65]:
        with pytest.raises(InvalidParameterError, match="div_id"):
            _html.chart_div(km_spec, bad)
    with pytest.raises(ValueError, match="JSON"):
        _html.chart_div({"data": {"values": [{"a": float("nan")}]}}, "nan")


# --- tables ------------------------------------------------------------------


def test_table_html_escapes_formats_and_truncates() -> None:
    frame = pl.DataFrame(
        {
            "name": ["<b>x</b>", None, "a&b"],
            "n_failures": [1234567, 2, 3],
            "mtbf_h": [98765.4321, 0.000123456, float("inf")],
            "ok": [True, False, None],
        }
    )
    out = _html.table_html(frame, max_rows=2)
    assert "<b>x</b>" not in out
    assert "&lt;b&gt;x&lt;/b&gt;" in out
    assert '<th class="num">n_failures</th>' in out
    assert '<td class="num">1,234,567</td>' in out
    assert '<td class="num">98,765</td>' in out
    # hours below 0.1 h in seconds: 0.000123456 h × 3600 = 0.444 s (3 digits)
    assert '<td class="num">0.444 s</td>' in out
    assert '<td class="null"></td>' in out
    assert "a&amp;b" not in out  # third row cut
    assert "Showing the first 2 of 3 rows." in out
    assert out.count("<tr>") == 3  # header + 2 rows
    with pytest.raises(InvalidParameterError, match="max_rows"):
        _html.table_html(frame, max_rows=-1)


def test_format_value_datetimes() -> None:
    import datetime as dt

    utc = dt.datetime(2025, 4, 1, 12, 30, tzinfo=dt.UTC)
    assert _html.format_value(utc) == "2025-04-01 12:30:00 UTC"
    assert _html.format_value(utc.replace(tzinfo=None)) == "2025-04-01 12:30:00"
    assert _html.format_value(dt.date(2025, 4, 1)) == "2025-04-01"
    assert _html.format_value(-0.5) == "-0.5"
    assert _html.format_value(float("-inf")) == "-inf"


def test_format_value_by_the_columns_unit() -> None:
    """Issue 14 §2, numbers for reading, by the unit in the column's name
    (STYLE.md): hours whole with separators from 100 h (8,344.6 -> 8,345), 3
    significant digits below (12.345 -> 12.3); rates 3 significant digits
    (0.0123456 -> 0.0123); shares as percent with one decimal (0.97216 ->
    97.2 %); other floats as before (4 significant digits)."""
    fv = _html.format_value
    assert fv(8344.6, "mtbf_h") == "8,345"
    assert fv(100.4, "exposure_h") == "100"
    assert fv(12.345, "mtbf_lower_h") == "12.3"
    assert fv(0.0, "lost_gpu_h") == "0"
    assert fv(0.0123456, "failure_rate_per_h") == "0.0123"
    assert fv(2.876, "failures_per_1000_node_days") == "2.88"
    assert fv(0.97216, "ettr_frac") == "97.2 %"
    assert fv(0.98171, "expected_ettr") == "98.2 %"
    assert fv(0.0357, "share") == "3.6 %"
    assert fv(0.97216, "llama3_share") == "97.2 %"
    assert fv(1.23456, "weibull_shape") == "1.235"
    assert fv(7, "mtbf_h") == "7"  # integers keep their digits


def test_table_html_fits_the_page() -> None:
    """All-null columns are left out and named; more than 8 columns wrap; a
    leading id column in text order is put in natural order (n2 before n10),
    while rows sorted by something else keep their order."""
    frame = pl.DataFrame(
        {
            "host": ["n1", "n10", "n2"],
            "empty": [None, None, None],
            **{f"c{i}": [1, 2, 3] for i in range(8)},
        }
    )
    out = _html.table_html(frame)
    assert "<th>empty</th>" not in out
    assert "Empty in every row, not shown: empty." in out
    assert out.startswith('<div class="relkit-table relkit-wide">')
    assert re.findall(r"<tr><td>(n\d+)</td>", out) == ["n1", "n2", "n10"]
    by_count = pl.DataFrame({"host": ["n2", "n10", "n1"], "n": [5, 3, 1]})
    kept = _html.table_html(by_count)
    assert re.findall(r"<tr><td>(n\d+)</td>", kept) == ["n2", "n10", "n1"]
    assert 'class="relkit-table"' in kept


def test_natural_sort_of_ids() -> None:
    """System ids as LANL writes them (2 ... 24) and host names: numbers by
    value, nulls last."""
    frame = pl.DataFrame({"system": ["10", "2", None, "24", "3"]})
    assert _html.natural_sort(frame, "system")["system"].to_list() == [
        "2",
        "3",
        "10",
        "24",
        None,
    ]
    hosts = pl.DataFrame({"host": ["gpu10", "gpu9", "cpu1", "gpu100"]})
    assert _html.natural_sort(hosts, "host")["host"].to_list() == [
        "cpu1",
        "gpu9",
        "gpu10",
        "gpu100",
    ]


def test_chart_png_is_a_png(km_spec: dict) -> None:
    """vl-convert's PNG of a chart: the 8 signature bytes of PNG (RFC 2083 §3.1)."""
    png = _html.chart_png(km_spec)
    assert png[:8] == b"\x89PNG\r\n\x1a\n"


# --- the page ----------------------------------------------------------------


def test_page_is_self_contained(page: str) -> None:
    assert page.startswith("<!DOCTYPE html>")
    assert "<title>relkit &lt;test&gt; report</title>" in page
    # no external resources: no script src, stylesheet link, import or url()
    assert not re.search(r"<script[^>]*\bsrc\s*=", page, re.IGNORECASE)
    assert not re.search(r"(src|href)\s*=\s*[\"']?\s*(https?:)?//", page, re.I)
    assert "<link" not in page.lower()
    assert "@import" not in page
    assert 'href="#sec-survival"' in page
    assert '<section id="sec-checkpoints">' in page
    # the bundle comes before the charts that use it, once
    scripts = SCRIPT.findall(page)
    bundles = [i for i, (a, _) in enumerate(scripts) if "vega-bundle" in a]
    assert len(bundles) == 1
    embeds = [i for i, (_, b) in enumerate(scripts) if "window.vegaEmbed(el" in b]
    assert len(embeds) == 2
    assert bundles[0] < min(embeds)
    versions = _html.vega_versions()
    assert f"Vega {versions['vega']}" in page
    assert "Generated by relkit" in page


def test_page_without_vega_is_small() -> None:
    page = _html.render_page(
        "t", [("A", "<p>a</p>"), ("A", "<p>b</p>")], include_vega=False
    )
    assert len(page) < 5_000
    assert 'id="sec-a"' in page
    assert 'id="sec-a-2"' in page
    with pytest.raises(InvalidParameterError, match="pair"):
        _html.render_page("t", [("only heading",)])  # type: ignore[list-item]


# Minimal DOM for running the page's scripts in Node.js: just enough for
# vega-embed's SVG renderer (element tree, attributes, style, classList).
DOM_SHIM = r"""
const fs = require("fs");
globalThis.window = globalThis;
class El {
  constructor(tag) {
    this.tagName = tag; this.nodeName = tag; this.childNodes = []; this.attrs = {};
    this.textContent = ""; this.parentNode = null; this.className = "";
    this.style = { setProperty(k, v) { this[k] = v; },
                   removeProperty(k) { delete this[k]; },
                   getPropertyValue(k) { return this[k]; } };
    const s = new Set();
    this.classList = { add: (...c) => c.forEach(x => s.add(x)),
                       remove: (...c) => c.forEach(x => s.delete(x)),
                       contains: c => s.has(c) };
  }
  get ownerDocument() { return globalThis.document; }
  get children() { return this.childNodes; }
  get firstChild() { return this.childNodes[0] || null; }
  get lastChild() { return this.childNodes[this.childNodes.length - 1] || null; }
  sib(d) {
    if (!this.parentNode) return null;
    const c = this.parentNode.childNodes; return c[c.indexOf(this) + d] || null;
  }
  get nextSibling() { return this.sib(1); }
  get previousSibling() { return this.sib(-1); }
  appendChild(c) { return this.insertBefore(c, null); }
  insertBefore(c, ref) {
    if (c.parentNode) c.parentNode.removeChild(c);
    c.parentNode = this; const i = ref ? this.childNodes.indexOf(ref) : -1;
    if (i < 0) this.childNodes.push(c); else this.childNodes.splice(i, 0, c); return c;
  }
  removeChild(c) {
    const i = this.childNodes.indexOf(c);
    if (i >= 0) this.childNodes.splice(i, 1); c.parentNode = null; return c;
  }
  remove() { if (this.parentNode) this.parentNode.removeChild(this); }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  setAttributeNS(n, k, v) { this.attrs[k] = String(v); }
  getAttribute(k) { return k in this.attrs ? this.attrs[k] : null; }
  removeAttribute(k) { delete this.attrs[k]; }
  hasAttribute(k) { return k in this.attrs; }
  addEventListener() {} removeEventListener() {}
  getBoundingClientRect() { return { left: 0, top: 0, width: 600, height: 400 }; }
  querySelector() { return null; } querySelectorAll() { return []; }
  get outerHTML() {
    const a = Object.entries(this.attrs).map(([k, v]) => ` ${k}="${v}"`).join("");
    return `<${this.tagName}${a}>${this.textContent}` +
      this.childNodes.map(c => c.outerHTML).join("") + `</${this.tagName}>`;
  }
}
const byId = {};
globalThis.document = {
  createElement: t => new El(t), createElementNS: (n, t) => new El(t),
  createTextNode: t => { const e = new El("#text"); e.textContent = t; return e; },
  head: new El("head"), body: new El("body"), documentElement: new El("html"),
  getElementById: id => byId[id] || null, querySelector: () => null,
  addEventListener() {}, removeEventListener() {},
};
globalThis.ShadowRoot = class {}; globalThis.HTMLElement = El; globalThis.Element = El;
const page = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
for (const id of page.ids) {
  const fig = new El("figure"); const el = new El("div");
  fig.appendChild(el); byId[id] = el;
  if (page.static) {
    const s = new El("div"); fig.appendChild(s); byId[id + "-static"] = s;
  }
}
for (const code of page.scripts) { (0, eval)(code); }
setTimeout(() => {
  const out = {};
  for (const id of page.ids) {
    const fallback = byId[id + "-static"];
    out[id] = { html: byId[id].outerHTML,
                staticRemoved: fallback ? fallback.parentNode === null : null,
                fallbackDisplay: fallback ? fallback.style.display || "" : null };
  }
  console.log(JSON.stringify(out));
}, 3000);
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_page_scripts_render_charts_offline_in_node(page: str, tmp_path: Path) -> None:
    """Run the page's own <script> code (bundle + embeds) in Node.js, no network.

    A ~60-line DOM shim stands in for the browser; vega-embed must draw every
    chart as SVG into its div and then remove the static fallback.
    """
    ids = re.findall(r'<div id="([^"]+)" class="relkit-vega">', page)
    assert ids == ["km", "ettr"]
    scripts = [body for _, body in SCRIPT.findall(page)]
    (tmp_path / "page.json").write_text(
        json.dumps({"ids": ids, "static": True, "scripts": scripts})
    )
    (tmp_path / "run.js").write_text(DOM_SHIM)
    done = subprocess.run(
        ["node", str(tmp_path / "run.js"), str(tmp_path / "page.json")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    km, ettr = result["km"], result["ettr"]
    assert '<svg xmlns="http://www.w3.org/2000/svg"' in km["html"]
    assert ">S(t) = P(no failure by t)<" in km["html"]
    assert ">Time (h)<" in km["html"]
    assert ">KM </script> & <b><" in km["html"]  # title survived the escaping
    assert ">Checkpoint interval (h)<" in ettr["html"]
    assert ">optimum 1 h: ETTR 93.0%<" in ettr["html"]
    assert km["staticRemoved"] is True
    assert ettr["staticRemoved"] is True


@pytest.mark.skipif(shutil.which("node") is None, reason="Node.js is not installed")
def test_page_falls_back_to_static_svg_without_bundle(
    page: str, tmp_path: Path
) -> None:
    """Without vega-embed (e.g. the bundle failed), each static SVG is shown."""
    ids = re.findall(r'<div id="([^"]+)" class="relkit-vega">', page)
    scripts = [b for a, b in SCRIPT.findall(page) if "vega-bundle" not in a]
    (tmp_path / "page.json").write_text(
        json.dumps({"ids": ids, "static": True, "scripts": scripts})
    )
    (tmp_path / "run.js").write_text(DOM_SHIM.replace("3000);", "10);"))
    done = subprocess.run(
        ["node", str(tmp_path / "run.js"), str(tmp_path / "page.json")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    for id_ in ("km", "ettr"):
        assert result[id_]["staticRemoved"] is False
        assert result[id_]["fallbackDisplay"] == "block"
        assert "<svg" not in result[id_]["html"]
