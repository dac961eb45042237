"""Pieces of relkit's offline HTML report (private; used by :mod:`relkit.report`).

The report is one self-contained file: Vega, Vega-Lite and vega-embed are
inlined as JavaScript (bundled by ``vl-convert-python``, no network access), and
each chart also carries a static SVG rendered by vl-convert, shown when
JavaScript is off or the interactive chart fails. Chart specs arrive as plain
dicts (``chart.to_dict()``), so this module does not import Altair.
"""

import datetime as dt
import functools
import html
import json
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

import polars as pl

from relkit.errors import InvalidParameterError

__all__ = [
    "ID_COLUMNS",
    "chart_div",
    "chart_png",
    "chart_svg",
    "format_value",
    "inline_vega_scripts",
    "natural_sort",
    "render_page",
    "table_html",
    "vega_versions",
]

_EMBED_SNIPPET = "window.vegaEmbed = vegaEmbed;"
_DIV_ID = re.compile(r"[A-Za-z][A-Za-z0-9_-]{0,63}")
_SCHEMA_VERSION = re.compile(r"/vega-lite/v(\d+)\.(\d+)")
_EMBED_OPTIONS = '{renderer: "svg", actions: false}'

_CSS = """
:root { color-scheme: light; }
body { font-family: system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue",
  Arial, sans-serif; color: #222; background: #fff; margin: 0; line-height: 1.45; }
main { max-width: 64rem; margin: 0 auto; padding: 1.5rem 1.25rem 3rem; }
h1 { font-size: 1.7rem; margin: 0 0 1rem; }
h2 { font-size: 1.3rem; margin: 2.2rem 0 0.6rem; border-bottom: 1px solid #ddd;
  padding-bottom: 0.2rem; }
nav ol { columns: 2; padding-left: 1.4rem; }
figure.relkit-chart { margin: 1rem 0; overflow-x: auto; }
html.js .relkit-static { display: none; }
.relkit-table { overflow-x: auto; margin: 0.8rem 0; }
table { border-collapse: collapse; font-size: 0.85rem;
  font-variant-numeric: tabular-nums; }
th, td { padding: 0.25rem 0.6rem; border-bottom: 1px solid #e3e3e3;
  text-align: left; vertical-align: top; white-space: nowrap; }
th { background: #f5f5f5; font-weight: 600; }
td.num, th.num { text-align: right; }
.relkit-wide th { white-space: normal; min-width: 3.5rem; }
.relkit-wide td { white-space: normal; }
.relkit-wide td.num { white-space: nowrap; }
@media print {
  .relkit-table { overflow: visible; }
  .relkit-table table { font-size: 8pt; width: 100%; }
  .relkit-table th, .relkit-table td { white-space: normal; word-break: break-word; }
}
td.wrap { white-space: normal; min-width: 14rem; }
p.relkit-summary { font-size: 1.02rem; }
p.relkit-left-out { color: #555; margin: 0.2rem 0; }
td.null { color: #999; }
p.relkit-note, footer { color: #666; font-size: 0.85rem; }
""".strip()


def _script_safe(js: str) -> str:
    r"""Make JavaScript safe inside an HTML ``<script>`` element.

    ``</script`` would end the element and ``<!--`` changes how the HTML
    parser reads script text; both can only occur inside JavaScript string,
    template or regex literals, where ``\/`` and ``\!`` mean ``/`` and ``!``.
    """
    js = re.sub(r"</(script)", r"<\\/\1", js, flags=re.IGNORECASE)
    return js.replace("<!--", "<\\!--")


def _json_for_script(obj: object) -> str:
    """JSON text that cannot end a ``<script>`` element."""
    text = json.dumps(obj, allow_nan=False, separators=(",", ":"))
    for char, code in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(char, code)
    return text.replace("\u2028", "\\u2028").replace("\u2029", "\\u2029")


def _latest_vegalite() -> str:
    import vl_convert as vlc

    versions = vlc.get_vegalite_versions()
    return max(versions, key=lambda v: tuple(int(p) for p in v.split(".")))


def _resolve_vl_version(vl_version: str | None) -> str:
    import vl_convert as vlc

    if vl_version is None:
        return _latest_vegalite()
    available = vlc.get_vegalite_versions()
    if vl_version not in available:
        msg = (
            f"Vega-Lite version {vl_version!r} is not bundled with vl-convert; "
            f"available: {available}. Pass one of them, or None for the newest."
        )
        raise InvalidParameterError(msg)
    return vl_version


def _spec_vl_version(spec: Mapping[str, Any]) -> str:
    """Pick the vl-convert version matching a spec's ``$schema``, else the newest."""
    import vl_convert as vlc

    match = _SCHEMA_VERSION.search(str(spec.get("$schema", "")))
    if match:
        version = f"{match.group(1)}.{match.group(2)}"
        if version in vlc.get_vegalite_versions():
            return version
    return _latest_vegalite()


def vega_versions(*, vl_version: str | None = None) -> dict[str, str]:
    """Report the versions of the JavaScript libraries that get inlined.

    Parameters
    ----------
    vl_version : str, optional
        Vega-Lite version as vl-convert names it (e.g. ``"6.4"``); default the
        newest that vl-convert bundles.

    Returns
    -------
    dict of str to str
        Keys ``vega``, ``vega-lite``, ``vega-embed`` and ``vl-convert``.

    Raises
    ------
    InvalidParameterError
        If vl-convert does not bundle ``vl_version``.

    Examples
    --------
    >>> sorted(vega_versions())
    ['vega', 'vega-embed', 'vega-lite', 'vl-convert']
    """
    import vl_convert as vlc

    return {
        "vega": vlc.get_vega_version(),
        "vega-lite": _resolve_vl_version(vl_version),
        "vega-embed": vlc.get_vega_embed_version(),
        "vl-convert": vlc.__version__,
    }


@functools.cache
def _bundle(vl_version: str) -> str:
    import vl_convert as vlc

    return _script_safe(vlc.javascript_bundle(_EMBED_SNIPPET, vl_version=vl_version))


def inline_vega_scripts(*, vl_version: str | None = None) -> str:
    """Return a ``<script>`` element with Vega, Vega-Lite and vega-embed inlined.

    The JavaScript comes from :func:`vl_convert.javascript_bundle` (about
    0.9 MB, built once per process and cached), so the page needs no network
    access. It defines one global, ``window.vegaEmbed``; the bundle runs in a
    strict-mode function scope so its internal names do not leak.

    Parameters
    ----------
    vl_version : str, optional
        Vega-Lite version as vl-convert names it (e.g. ``"6.4"``); default the
        newest that vl-convert bundles (Altair 6 writes Vega-Lite 6 specs).

    Returns
    -------
    str
        One ``<script>`` element; its ``data-*`` attributes name the versions.

    Raises
    ------
    InvalidParameterError
        If vl-convert does not bundle ``vl_version``.

    Examples
    --------
    >>> tag = inline_vega_scripts()
    >>> tag.startswith("<script data-relkit=") and "window.vegaEmbed=" in tag
    True
    >>> "src=" in tag.split(">", 1)[0]
    False
    """
    versions = vega_versions(vl_version=vl_version)
    attrs = " ".join(
        f'data-{name.replace("-", "")}="{html.escape(v)}"'
        for name, v in versions.items()
    )
    return (
        f'<script data-relkit="vega-bundle" {attrs}>\n'
        f"/* Vega {versions['vega']}, Vega-Lite {versions['vega-lite']}, "
        f"vega-embed {versions['vega-embed']} (BSD-3-Clause), bundled by "
        f"vl-convert {versions['vl-convert']}. */\n"
        '(function () {\n"use strict";\n'
        f"{_bundle(versions['vega-lite'])}\n"
        "})();\n</script>"
    )


def chart_svg(spec: Mapping[str, Any]) -> str:
    """Render a Vega-Lite spec to a static SVG string with vl-convert.

    Parameters
    ----------
    spec : Mapping
        A Vega-Lite spec, e.g. ``chart.to_dict()``; its ``$schema`` picks the
        Vega-Lite version when vl-convert bundles it.

    Returns
    -------
    str
        An ``<svg>`` element (no XML declaration), suitable for inline HTML.

    Raises
    ------
    ValueError
        If vl-convert cannot compile or render the spec.

    Examples
    --------
    >>> spec = {
    ...     "data": {"values": [{"a": 1, "b": 2}]},
    ...     "mark": "point",
    ...     "encoding": {"x": {"field": "a", "type": "quantitative"}},
    ... }
    >>> chart_svg(spec)[:4]
    '<svg'
    """
    import vl_convert as vlc

    svg = vlc.vegalite_to_svg(dict(spec), vl_version=_spec_vl_version(spec))
    return re.sub(r"^\s*<\?xml[^>]*\?>\s*", "", svg)


def chart_png(spec: Mapping[str, Any], *, scale: float = 2.0) -> bytes:
    """Render a Vega-Lite spec to a PNG image with vl-convert (no network).

    Parameters
    ----------
    spec : Mapping
        A Vega-Lite spec, e.g. ``chart.to_dict()``; its ``$schema`` picks the
        Vega-Lite version when vl-convert bundles it.
    scale : float, default 2.0
        Pixels per chart unit (2: sharp on slides and high-density screens).

    Returns
    -------
    bytes
        The PNG file's bytes.

    Raises
    ------
    ValueError
        If vl-convert cannot compile or render the spec.

    Examples
    --------
    >>> spec = {
    ...     "data": {"values": [{"a": 1, "b": 2}]},
    ...     "mark": "point",
    ...     "encoding": {"x": {"field": "a", "type": "quantitative"}},
    ... }
    >>> chart_png(spec)[1:4]
    b'PNG'
    """
    import vl_convert as vlc

    return vlc.vegalite_to_png(
        dict(spec), vl_version=_spec_vl_version(spec), scale=scale
    )


def chart_div(
    chart_spec: Mapping[str, Any], div_id: str, *, static_svg: bool = True
) -> str:
    """Embed a Vega-Lite spec as a chart that renders offline.

    The chart is drawn by ``vegaEmbed(el, spec, {renderer: "svg", actions:
    false})`` from the inlined bundle (:func:`inline_vega_scripts` must be on
    the page, as :func:`render_page` puts it). With ``static_svg``, a
    vl-convert SVG of the same spec sits next to it: hidden while JavaScript
    runs (``html.js``), removed once the interactive chart has rendered, and
    shown again if it fails.

    Parameters
    ----------
    chart_spec : Mapping
        A Vega-Lite spec, e.g. ``chart.to_dict()``; must be JSON-serialisable
        without NaN or infinity.
    div_id : str
        Element id: a letter, then letters, digits, ``_`` or ``-`` (≤ 64
        characters); unique within the page.
    static_svg : bool, default True
        Also include the static SVG fallback.

    Returns
    -------
    str
        A ``<figure>`` with the chart's ``<div>`` (and fallback), followed by
        the ``<script>`` that embeds it.

    Raises
    ------
    InvalidParameterError
        If ``div_id`` is not a valid id.
    ValueError
        If the spec holds NaN or infinity (not valid JSON).

    Examples
    --------
    >>> spec = {
    ...     "data": {"values": [{"a": 1}]},
    ...     "mark": "tick",
    ...     "encoding": {"x": {"field": "a", "type": "quantitative"}},
    ... }
    >>> piece = chart_div(spec, "ticks", static_svg=False)
    >>> piece.startswith('<figure class="relkit-chart"><div id="ticks"')
    True
    >>> 'renderer: "svg", actions: false' in piece
    True
    >>> chart_div(spec, "1 bad")
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: chart_div: div_id must be a letter then ...
    """
    if not isinstance(div_id, str) or not _DIV_ID.fullmatch(div_id):
        msg = (
            "chart_div: div_id must be a letter then up to 63 letters, digits, "
            f"'_' or '-'; found {div_id!r}. Use e.g. 'mtbf-system'."
        )
        raise InvalidParameterError(msg)
    spec_json = _json_for_script(dict(chart_spec))
    fallback = (
        f'<div id="{div_id}-static" class="relkit-static">{chart_svg(chart_spec)}</div>'
        if static_svg
        else ""
    )
    script = (
        "<script>\n(function () {\n"
        f'  var el = document.getElementById("{div_id}");\n'
        f'  var fallback = document.getElementById("{div_id}-static");\n'
        "  function showFallback(reason) {\n"
        '    if (fallback) { fallback.style.display = "block"; }\n'
        '    else { el.textContent = "Chart not rendered: " + reason; }\n'
        "  }\n"
        '  if (typeof window.vegaEmbed !== "function") {\n'
        '    showFallback("vega-embed is not loaded"); return;\n'
        "  }\n"
        f"  window.vegaEmbed(el, {spec_json}, {_EMBED_OPTIONS})\n"
        "    .then(function () { if (fallback) { fallback.remove(); } })\n"
        "    .catch(function (err) { showFallback(String(err)); });\n"
        "})();\n</script>"
    )
    return (
        f'<figure class="relkit-chart"><div id="{div_id}" class="relkit-vega"></div>'
        f"{fallback}</figure>\n{script}"
    )


#: Column names read as shares (a fraction in [0, 1]), printed as percent.
_SHARE = re.compile(r"(^|_)(frac|share|ettr)($|_)")
#: Column names read as rates, printed to 3 significant digits.
_RATE = re.compile(r"(^|_)(rate|per)($|_)")
#: Column names read as hours.
_HOURS = re.compile(r"_h($|_)")
#: Cells with more characters than this wrap (``class="wrap"``).
_LONG = 40
#: Id columns sorted naturally (2 before 10, n2 before n10) by :func:`table_html`.
ID_COLUMNS = ("system", "host", "rack", "node", "unit")


def _significant(value: float, digits: int) -> str:
    """``value`` to ``digits`` significant digits, with thousands separators."""
    if value == 0:
        return "0"
    if abs(value) >= 10 ** (digits - 1):
        return f"{value:,.0f}"
    text = f"{value:.{digits}g}"
    return text


def format_value(value: object, column: str | None = None) -> str:
    """Format one table cell as plain text (not yet HTML-escaped).

    Parameters
    ----------
    value : object
        A cell value from a polars frame.
    column : str, optional
        The column's name; it picks the format of a float by the house
        naming rule (STYLE.md: the unit is in the name): hours (``*_h``) as
        whole numbers from 100 h on and to 3 significant digits below; shares
        (``frac``, ``*_frac``, ``share``, ``*ettr*``) as percent with one
        decimal; rates (``*rate*``, ``*_per_*``) to 3 significant digits.

    Returns
    -------
    str
        ``""`` for null; integers with thousands separators; other floats
        with 4 significant digits below 10,000 and as rounded integers with
        separators from there on; ``nan``, ``inf``, ``-inf`` spelt so;
        datetimes as ``YYYY-MM-DD HH:MM:SS`` plus ``UTC`` when UTC; booleans
        ``true``/``false``.

    Examples
    --------
    >>> [format_value(v) for v in (None, 1234567, 0.000123456, 2.5, 98765.4)]
    ['', '1,234,567', '0.0001235', '2.5', '98,765']
    >>> format_value(1234.56, "mtbf_h"), format_value(12.345, "mtbf_h")
    ('1,235', '12.3')
    >>> (
    ...     format_value(0.97215, "ettr_frac"),
    ...     format_value(0.0123456, "failure_rate_per_h"),
    ... )
    ('97.2 %', '0.0123')
    >>> format_value(float("nan")), format_value(True)
    ('nan', 'true')
    """
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        name = (column or "").lower()
        if _SHARE.search(name):
            return _percent(value)
        if _HOURS.search(name) and not _RATE.search(name) and 0 < abs(value) < 0.1:
            # below 0.1 h: minutes or seconds (0.0178 h is "1.07 min")
            if abs(value) * 60 >= 1:
                return f"{_significant(value * 60, 3)} min"
            return f"{_significant(value * 3600, 3)} s"
        if _HOURS.search(name) or _RATE.search(name):
            return _significant(value, 3)
        return f"{value:,.0f}" if abs(value) >= 1e4 else f"{value:.4g}"
    if isinstance(value, dt.datetime):
        text = value.strftime("%Y-%m-%d %H:%M:%S")
        if value.tzinfo is not None:
            offset = value.utcoffset()
            text += " UTC" if offset == dt.timedelta(0) else value.strftime(" %z")
        return text
    if isinstance(value, dt.date):
        return value.isoformat()
    return str(value)


def _percent(value: float) -> str:
    """Percent with one decimal, more where one would round to 0 % or 100 %."""
    for digits in range(1, 5):
        text = f"{value * 100:.{digits}f}"
        if (0 < value < 1) and float(text) in (0.0, 100.0):
            continue
        return f"{text} %"
    return f"{value * 100:.4g} %"


def natural_sort(frame: pl.DataFrame, column: str) -> pl.DataFrame:
    """Sort a frame by id naturally: ``2`` before ``10``, ``n2`` before ``n10``.

    Parameters
    ----------
    frame : pl.DataFrame
        Any frame with ``column``.
    column : str
        The id column (cast to text); nulls go last. The sort is stable.

    Returns
    -------
    pl.DataFrame
        The rows in natural order of ``column``.

    Examples
    --------
    >>> import polars as pl
    >>> natural_sort(pl.DataFrame({"host": ["n10", "n2", None, "n1"]}), "host")[
    ...     "host"
    ... ].to_list()
    ['n1', 'n2', 'n10', None]
    """
    from relkit.charts import natural_order

    ids = frame[column].cast(pl.String)
    order = natural_order(ids.drop_nulls().unique().to_list())
    rank = pl.DataFrame(
        {"_id": order, "_rank": list(range(len(order)))},
        schema={"_id": pl.String, "_rank": pl.Int64},
    )
    return (
        frame.with_columns(_id=ids)
        .join(rank, on="_id", how="left", maintain_order="left")
        .sort("_rank", nulls_last=True, maintain_order=True)
        .drop("_id", "_rank")
    )


#: Columns said once above a table (not repeated) when every row has one value.
SAME_SAID_ONCE = frozenset(
    {
        "confidence",
        "unit",
        "exposure_basis",
        "observed_until",
        "n_excluded",
        "n_folded",
        "clock",
    }
)


def table_html(frame: pl.DataFrame, max_rows: int = 50) -> str:
    """Render a polars frame as an escaped HTML table that fits the page.

    Parameters
    ----------
    frame : pl.DataFrame
        Any frame; column names and cells are HTML-escaped.
    max_rows : int, default 50
        Show at most this many rows (≥ 0); a note says how many were left out.

    Returns
    -------
    str
        A ``<div class="relkit-table">`` with the ``<table>``; numeric columns
        are right-aligned (``class="num"``), values formatted by
        :func:`format_value` with their column's name, nulls shown empty
        (``class="null"``), cells over 40 characters wrap
        (``class="wrap"``). Columns that are null in every row are left out
        and named in a note under the table; a table of more than 8 columns
        gets ``class="relkit-table relkit-wide"``, whose headers wrap after
        an underscore (``<wbr>``) and whose text cells wrap. When the first
        column is an id (:data:`ID_COLUMNS`) and the rows are in its text
        order, they are put in natural order (``n2`` before ``n10``).

    Raises
    ------
    InvalidParameterError
        If ``max_rows`` is negative.

    Examples
    --------
    >>> import polars as pl
    >>> frame = pl.DataFrame({"system": ["<2>"], "mtbf_h": [12345.678]})
    >>> print(table_html(frame))
    <div class="relkit-table"><table>
    <thead><tr><th>system</th><th class="num">mtbf_h</th></tr></thead>
    <tbody>
    <tr><td>&lt;2&gt;</td><td class="num">12,346</td></tr>
    </tbody></table></div>
    """
    if max_rows < 0:
        msg = f"table_html: max_rows must be >= 0; found {max_rows!r}."
        raise InvalidParameterError(msg)
    empty = (
        [c for c in frame.columns if frame[c].null_count() == frame.height]
        if frame.height
        else []
    )
    frame = frame.drop(empty)
    same = (
        [c for c in frame.columns if c in SAME_SAID_ONCE and frame[c].n_unique() == 1]
        if frame.height > 1
        else []
    )
    same_said = ", ".join(f"{c} {format_value(frame[c][0], c)}" for c in same)
    frame = frame.drop(same)
    if frame.width and frame.columns[0] in ID_COLUMNS and frame.height > 1:
        ids = frame[frame.columns[0]].cast(pl.String)
        if ids.is_sorted() and ids.null_count() == 0:
            frame = natural_sort(frame, frame.columns[0])
    numeric = [dtype.is_numeric() for dtype in frame.dtypes]
    names = frame.columns

    def cls(i: int, *, null: bool = False, long: bool = False) -> str:
        names = (
            (["num"] if numeric[i] else [])
            + (["null"] if null else [])
            + (["wrap"] if long else [])
        )
        return f' class="{" ".join(names)}"' if names else ""

    wide = frame.width > 8
    head = "".join(
        f"<th{cls(i)}>"
        + (html.escape(name).replace("_", "_<wbr>") if wide else html.escape(name))
        + "</th>"
        for i, name in enumerate(names)
    )
    body = [
        "<tr>"
        + "".join(
            f"<td{cls(i, null=v is None, long=len(text) > _LONG)}>"
            f"{html.escape(text)}</td>"
            for i, v in enumerate(row)
            for text in (format_value(v, names[i]),)
        )
        + "</tr>"
        for row in frame.head(max_rows).iter_rows()
    ]
    note = ""
    if frame.height > max_rows:
        note = (
            f'<p class="relkit-note">Showing the first {max_rows:,} of '
            f"{frame.height:,} rows.</p>"
        )
    if empty:
        note += (
            '<p class="relkit-note">Empty in every row, not shown: '
            + html.escape(", ".join(empty))
            + ".</p>"
        )
    above = (
        f'<p class="relkit-note">In every row: {html.escape(same_said)}.</p>'
        if same
        else ""
    )
    return (
        f'<div class="relkit-table{" relkit-wide" if wide else ""}">{above}<table>\n'
        f"<thead><tr>{head}</tr></thead>\n<tbody>\n"
        + "".join(f"{r}\n" for r in body)
        + f"</tbody></table>{note}</div>"
    )


def _slug(text: str, used: set[str]) -> str:
    base = re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "section"
    slug, n = f"sec-{base}", 2
    while slug in used:
        slug, n = f"sec-{base}-{n}", n + 1
    used.add(slug)
    return slug


def render_page(
    title: str,
    sections: Iterable[tuple[str, str]],
    *,
    include_vega: bool = True,
    footer: str | None = None,
) -> str:
    """Assemble a complete, self-contained HTML page.

    Parameters
    ----------
    title : str
        Page title (escaped), used for ``<title>`` and the ``<h1>``.
    sections : iterable of (str, str)
        ``(heading, html)`` pairs in order; the heading is escaped, the body is
        trusted HTML (from :func:`chart_div`, :func:`table_html`, or text the
        caller escaped).
    include_vega : bool, default True
        Inline the Vega libraries (:func:`inline_vega_scripts`); turn off for a
        page without interactive charts.
    footer : str, optional
        Escaped text for the footer; default names relkit and the inlined
        library versions. No timestamp, so the same input gives the same page.

    Returns
    -------
    str
        The HTML document: inline CSS, no external resources, a table of
        contents linking to one ``<section>`` per pair.

    Raises
    ------
    InvalidParameterError
        If a section is not a (heading, html) pair of strings.

    Examples
    --------
    >>> page = render_page("R & D", [("Data", "<p>ok</p>")], include_vega=False)
    >>> page.startswith("<!DOCTYPE html>"), "<h1>R &amp; D</h1>" in page
    (True, True)
    >>> '<section id="sec-data"><h2>Data</h2>' in page
    True
    """
    from relkit import __version__

    used: set[str] = set()
    toc, parts = [], []
    for pair in sections:
        if not (
            isinstance(pair, tuple)
            and len(pair) == 2
            and all(isinstance(p, str) for p in pair)
        ):
            msg = (
                "render_page: each section must be a (heading, html) pair of "
                f"strings; found {pair!r:.80}."
            )
            raise InvalidParameterError(msg)
        heading, body = pair
        slug = _slug(heading, used)
        toc.append(f'<li><a href="#{slug}">{html.escape(heading)}</a></li>')
        parts.append(
            f'<section id="{slug}"><h2>{html.escape(heading)}</h2>\n{body}\n</section>'
        )
    if footer is None:
        footer = f"Generated by relkit {__version__}."
        if include_vega:
            v = vega_versions()
            footer += (
                f" Charts: Vega {v['vega']}, Vega-Lite {v['vega-lite']} and "
                f"vega-embed {v['vega-embed']}, inlined in this file (no network "
                "access needed); static SVG copies show when JavaScript is off."
            )
    scripts = inline_vega_scripts() if include_vega else ""
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en">',
            "<head>",
            '<meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{html.escape(title)}</title>",
            f"<style>\n{_CSS}\n</style>",
            '<script>document.documentElement.className += " js";</script>',
            scripts,
            "</head>",
            "<body>",
            "<main>",
            f"<h1>{html.escape(title)}</h1>",
            f"<nav><ol>{''.join(toc)}</ol></nav>" if toc else "",
            *parts,
            f"<footer><p>{html.escape(footer)}</p></footer>",
            "</main>",
            "</body>",
            "</html>",
            "",
        ]
    )
