"""The relkit Altair theme, offline rendering and the checks every chart shares.

:func:`enable_theme` registers and enables the theme, :func:`enable_offline_rendering`
switches notebooks to images drawn in-process; :func:`check_rows` holds a chart's
dataset to :data:`MAX_ROWS` rows and :func:`chart_title` turns ``None`` into no title.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import polars as pl

from relkit.errors import SchemaError

if TYPE_CHECKING:
    from altair.utils.plugin_registry import PluginEnabler

__all__ = [
    "MAX_ROWS",
    "THEME_NAME",
    "chart_title",
    "check_rows",
    "enable_offline_rendering",
    "enable_theme",
]

#: Largest dataset a chart embeds (Altair raises ``MaxRowsError`` above it).
MAX_ROWS = 5000
#: Name under which :func:`enable_theme` registers relkit's Altair theme.
THEME_NAME = "relkit"

_FONT = (
    "system-ui, -apple-system, 'Segoe UI', Roboto, 'Helvetica Neue', Arial, sans-serif"
)


def _theme() -> dict[str, Any]:
    return {
        "config": {
            "font": _FONT,
            "view": {"continuousWidth": 560, "continuousHeight": 320, "stroke": None},
            "title": {"fontSize": 15, "anchor": "start", "offset": 10},
            "axis": {
                "labelFontSize": 12,
                "titleFontSize": 13,
                "titleFontWeight": "normal",
                "gridColor": "#e6e6e6",
            },
            "legend": {"labelFontSize": 12, "titleFontSize": 12, "labelLimit": 320},
            "header": {"labelFontSize": 12, "titleFontSize": 13},
            "range": {"category": {"scheme": "tableau10"}},
        }
    }


def enable_offline_rendering(fmt: str = "svg") -> PluginEnabler:
    """Render Altair charts in notebooks as static images, with no network.

    Altair's default output loads Vega from a CDN (jsDelivr), so a notebook
    opened offline, or exported to HTML, shows blank charts. The ``svg`` and
    ``png`` renderers draw the chart in-process with vl-convert and embed the
    image in the output, so it shows wherever the notebook is opened.

    Parameters
    ----------
    fmt : {"svg", "png"}, default "svg"
        The image format of notebook outputs.

    Returns
    -------
    altair.utils.plugin_registry.PluginEnabler
        Altair's enabler; usable as a context manager to restore the previous
        renderer on exit.

    Raises
    ------
    ValueError
        If ``fmt`` is neither ``"svg"`` nor ``"png"``.

    Examples
    --------
    >>> import altair as alt
    >>> with enable_offline_rendering():
    ...     alt.renderers.active
    'svg'
    """
    import altair as alt

    if fmt not in ("svg", "png"):
        msg = f"fmt must be 'svg' or 'png' (rendered offline), found {fmt!r}"
        raise ValueError(msg)
    return alt.renderers.enable(fmt)


def enable_theme() -> PluginEnabler:
    """Register and enable the ``"relkit"`` Altair theme.

    The theme sets readable system fonts, 12–15 px labels and titles, a 560 px
    wide continuous view and the Tableau-10 category colours. This is the one
    global action relkit takes; everything else is a pure function.

    Returns
    -------
    altair.utils.plugin_registry.PluginEnabler
        Altair's enabler. Ignore it to keep the theme on, or use it as a context
        manager to restore the previous theme on exit.

    Examples
    --------
    >>> import altair as alt
    >>> before = alt.theme.active
    >>> with enable_theme():
    ...     alt.theme.active
    'relkit'
    >>> alt.theme.active == before
    True
    """
    import altair as alt

    alt.theme.register(THEME_NAME, enable=False)(_theme)
    return alt.theme.enable(THEME_NAME)


def check_rows(frame: pl.DataFrame, *, where: str, fix: str) -> None:
    """Raise SchemaError when a chart would embed more than MAX_ROWS rows."""
    if frame.height > MAX_ROWS:
        msg = (
            f"{where}: the chart would embed {frame.height:,} rows; at most "
            f"{MAX_ROWS:,} are allowed (Altair's MaxRowsError). {fix}"
        )
        raise SchemaError(msg)


def chart_title(title: str | None) -> Any:  # noqa: ANN401 (alt.Undefined or str)
    """Return the title, or Altair's ``Undefined`` (no title) for None."""
    import altair as alt

    return alt.Undefined if title is None else title
