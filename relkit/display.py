"""How relkit's result objects show themselves in Jupyter (small HTML tables).

Imports only the standard library, so any room may use it.
"""

import html
import math
import re
from collections.abc import Mapping

__all__ = ["format_value", "html_table", "natural_key"]


def format_value(value: object) -> str:
    """Format one value for reading: floats to 4 significant digits, ints with commas.

    Floats of 10,000 or more are written whole with commas (333,333, not
    3.333e+05); below 0.001, in scientific notation.

    Parameters
    ----------
    value : object
        A number, string, None or anything with a ``str``.

    Returns
    -------
    str
        The text shown in a table cell (None shows as an em dash).

    Examples
    --------
    >>> format_value(2140.0), format_value(12345), format_value(None)
    ('2,140', '12,345', '—')
    >>> format_value(1e6 / 3), format_value(2.5e-5)
    ('333,333', '2.5e-05')
    """
    if value is None:
        return "—"
    if isinstance(value, bool):
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        if not math.isfinite(value):
            return str(value)
        if 1e4 <= abs(value) < 1e15:  # .4g would write 333,333 as 3.333e+05
            return f"{value:,.0f}"
        return f"{value:,.4g}" if abs(value) >= 1e-3 or value == 0 else f"{value:.4g}"
    return str(value)


def html_table(title: str, fields: Mapping[str, object]) -> str:
    """Return a two-column HTML table (field, value) with a caption.

    Parameters
    ----------
    title : str
        The caption.
    fields : mapping of str to object
        Field names and values, shown in the given order.

    Returns
    -------
    str
        An HTML ``<table>``, values escaped and formatted by :func:`format_value`.

    Examples
    --------
    >>> html_table("t", {"mtbf_h": 2.5})  # doctest: +ELLIPSIS
    '<table class="relkit-result"><caption>t</caption>...<td>2.5</td></tr></table>'
    """
    rows = "".join(
        f"<tr><th style='text-align:left'>{html.escape(str(k))}</th>"
        f"<td>{html.escape(format_value(v))}</td></tr>"
        for k, v in fields.items()
    )
    return (
        f'<table class="relkit-result"><caption>{html.escape(title)}</caption>'
        f"{rows}</table>"
    )


def natural_key(text: object) -> tuple:
    """Return a sort key that orders numbers inside names by value.

    The one rule of "natural order" for ids everywhere (report tables and
    charts, CLI tables): ``2`` before ``10``, ``n2`` before ``n10``.

    Parameters
    ----------
    text : object
        A name such as ``gpu10`` or ``2``; None sorts last.

    Returns
    -------
    tuple
        ``(is_missing, parts)``, parts alternating text (lower case) and whole
        numbers, so ``gpu2`` < ``gpu10`` and ``2`` < ``10``.

    Examples
    --------
    >>> sorted(["n10", "n2", "m1", "2", "10", None], key=natural_key)
    ['2', '10', 'm1', 'n2', 'n10', None]
    """
    if text is None:
        return (1, ())
    parts = re.split(r"(\d+)", str(text))
    return (0, tuple(int(p) if i % 2 else p.lower() for i, p in enumerate(parts)))
