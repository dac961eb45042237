r"""Slurm compressed host lists (``gpu[001-004,010],login01``), strictly.

Why relkit has its own parser: no maintained host-list library on PyPI has a
licence that fits relkit's Apache-2.0 and reads the C20 cases right
(``cases/README.md``, checked 2025 with the releases named here):

- ``python-hostlist`` 2.3.0 (NSC): GPL-2.0-or-later, not Apache-compatible.
- ``ClusterShell`` 1.10.1 (CEA): LGPL-2.1-or-later, a weak copyleft that the
  Apache Software Foundation lists as not compatible (Category X). It also
  returns ``None assigned`` as a host name.
- ``py-hostlist`` 0.0.2.dev0 (LLNL, MIT, a 2021 development release): 5 of the
  8 C20 expressions come out wrong (``dgx-a[07-08]`` -> ``a07``,
  ``gpu[098-101]`` -> ``gpu98``, ``gpu017`` -> nothing, ``gpu[001-`` -> nothing).
- ``hostlists`` 0.10 (Yahoo, Apache-2.0, last release 2020): needs
  ``dnspython3``, which does not install on current Pythons.

The grammar here is the one Slurm prints (``slurm/src/common/hostlist.c``):

.. code-block:: text

    list    := item ("," item)*
    item    := name+ (bracket name*)*        # prefix, then brackets and text
    bracket := "[" range ("," range)* "]"
    range   := digits ("-" digits)?
    name    := [A-Za-z0-9._-]

A range's numbers keep the width of its lower bound (``gpu[098-101]`` gives
``gpu098 ... gpu101``; ``node[9-11]`` gives ``node9, node10, node11``); several
brackets multiply out (``rack[1-2]-node[01-02]`` gives 4 hosts, the first
bracket varying slowest). ``None assigned`` (a job that never ran) and an empty
field are no hosts. Anything else is an error naming the expression: a
missing bracket, a bound that is not a number, a range whose end is below its
start, or one of more than :data:`MAX_RANGE` hosts. Nothing is guessed.
"""

import polars as pl

from relkit.errors import InvalidParameterError

__all__ = ["MAX_RANGE", "NO_HOSTS", "expand_hostlist", "expand_hostlists"]

#: Values that mean "no host" (Slurm prints ``None assigned`` for pending jobs).
NO_HOSTS = ("None assigned", "(null)", "")

#: Largest number of hosts one ``lo-hi`` range may stand for.
MAX_RANGE = 1_000_000

_NAME = r"[A-Za-z0-9._\-]"
_RANGE = r"[0-9]+(?:-[0-9]+)?"
_BRACKET = rf"\[{_RANGE}(?:,{_RANGE})*\]"
_ITEM = rf"{_NAME}+(?:{_BRACKET}{_NAME}*)*"
_LIST = rf"^{_ITEM}(?:,{_ITEM})*$"
_FIRST_BRACKET = r"^([^\[]*)\[([^\]]*)\](.*)$"


def _grammar_reason(expr: str) -> str:
    """Say what is wrong with an expression that does not fit the grammar."""
    if expr.count("[") != expr.count("]"):
        return "unbalanced brackets"
    if ",," in expr or expr.startswith(",") or expr.endswith(","):
        return "an empty item between commas"
    if " " in expr.strip():
        return "a space inside the list"
    return "not a Slurm host list (name[lo-hi,n],name)"


def expand_hostlists(
    expressions: pl.Series,
) -> tuple[pl.DataFrame, pl.Series]:
    r"""Expand many Slurm host lists at once (vectorised).

    Parameters
    ----------
    expressions : pl.Series
        String series of host-list expressions, one per record (nulls and the
        values of :data:`NO_HOSTS` have no hosts).

    Returns
    -------
    hosts : pl.DataFrame
        One row per (record, host): ``index`` (UInt32, the position in
        ``expressions``) and ``host`` (String), in record order and, within a
        record, in the order of the expression. Records with an error have no
        rows.
    errors : pl.Series
        String series as long as ``expressions``: null where the expression is
        valid, else the reason, naming the expression (e.g. ``"malformed host
        list 'gpu[001-': unbalanced brackets"``).

    Examples
    --------
    >>> hosts, errors = expand_hostlists(
    ...     pl.Series(["gpu[001-002],cpu7", "None assigned", "gpu[3-1]"])
    ... )
    >>> hosts.rows()
    [(0, 'gpu001'), (0, 'gpu002'), (0, 'cpu7')]
    >>> errors.to_list()  # doctest: +NORMALIZE_WHITESPACE
    [None, None, "malformed host list 'gpu[3-1]': range 3-1 ends below its start"]
    """
    frame = pl.DataFrame({"expr": expressions.cast(pl.String)}).with_row_index("index")
    frame = frame.with_columns(pl.col("expr").str.strip_chars())
    empty = pl.col("expr").is_null() | pl.col("expr").is_in(list(NO_HOSTS))
    fits = pl.col("expr").str.contains(_LIST)
    frame = frame.with_columns(_empty=empty, _fits=fits.fill_null(value=False))
    bad_grammar = frame.filter(~pl.col("_empty") & ~pl.col("_fits"))
    reasons: dict[int, str] = {
        i: f"malformed host list {e!r}: {_grammar_reason(e)}"
        for i, e in bad_grammar.select("index", "expr").iter_rows()
    }
    # one plain host (no bracket, no comma): the common case needs no parsing
    plain = ~pl.col("expr").str.contains(r"[\[,]")
    ok = frame.filter(~pl.col("_empty") & pl.col("_fits"))
    single = ok.filter(plain).select("index", _item_no=pl.lit(0, pl.Int64), host="expr")
    work = (
        ok.filter(~plain)
        .select(
            "index",
            item=pl.col("expr").str.extract_all(_ITEM),
        )
        .with_columns(_item_no=pl.int_ranges(0, pl.col("item").list.len()))
        .explode("item", "_item_no")
        .with_columns(pl.col("item").cast(pl.String))
    )
    done: list[pl.DataFrame] = [single]
    for _ in range(64):  # one bracket group per pass; 64 is far beyond real lists
        has = pl.col("item").str.contains("[", literal=True)
        done.append(work.filter(~has).select("index", "_item_no", host="item"))
        work = work.filter(has)
        if work.height == 0:
            break
        parts = work.with_columns(
            pl.col("item").str.extract_groups(_FIRST_BRACKET).alias("_g")
        ).with_columns(
            _prefix=pl.col("_g").struct.field("1"),
            _rng=pl.col("_g").struct.field("2").str.split(","),
            _rest=pl.col("_g").struct.field("3"),
        )
        parts = parts.explode("_rng").with_columns(
            _lo_s=pl.col("_rng").str.extract(r"^([0-9]+)"),
            _hi_s=pl.coalesce(
                pl.col("_rng").str.extract(r"-([0-9]+)$"),
                pl.col("_rng").str.extract(r"^([0-9]+)"),
            ),
        )
        parts = parts.with_columns(
            _lo=pl.col("_lo_s").cast(pl.Int64, strict=False),
            _hi=pl.col("_hi_s").cast(pl.Int64, strict=False),
            _width=pl.col("_lo_s").str.len_chars(),
        )
        wrong = parts.filter(
            pl.col("_lo").is_null()
            | pl.col("_hi").is_null()
            | (pl.col("_hi") < pl.col("_lo"))
            | (pl.col("_hi") - pl.col("_lo") >= MAX_RANGE)
        )
        exprs = dict(
            frame.filter(pl.col("index").is_in(wrong["index"].implode()))
            .select("index", "expr")
            .iter_rows()
        )
        for i, rng, lo, hi in wrong.select("index", "_rng", "_lo", "_hi").iter_rows():
            if i in reasons:
                continue
            e = exprs[i]
            if lo is None or hi is None:
                why = f"range {rng!r} is not a number"
            elif hi < lo:
                why = f"range {rng} ends below its start"
            else:
                why = f"range {rng} stands for more than {MAX_RANGE:,} hosts"
            reasons[i] = f"malformed host list {e!r}: {why}"
        if reasons:
            parts = parts.filter(~pl.col("index").is_in(list(reasons)))
        widths = parts["_width"].unique().drop_nulls().to_list()
        padded = pl.col("_num").cast(pl.String)
        if widths:  # a constant width per branch is much faster than a column
            branch = pl.when(pl.col("_width") == widths[0]).then(
                padded.str.zfill(widths[0])
            )
            for w in widths[1:]:
                branch = branch.when(pl.col("_width") == w).then(padded.str.zfill(w))
            padded = branch
        work = (
            parts.select(
                "index",
                "_item_no",
                "_prefix",
                "_rest",
                "_width",
                _num=pl.int_ranges("_lo", pl.col("_hi") + 1),
            )
            .explode("_num")
            .select(
                "index",
                "_item_no",
                item=pl.concat_str("_prefix", padded, "_rest"),
            )
        )
    hosts = pl.concat(done)
    if reasons:
        hosts = hosts.filter(~pl.col("index").is_in(list(reasons)))
    # an item's hosts all finish in one pass, in order; items of one record may
    # finish in different passes: restore record and expression order
    hosts = hosts.sort("index", "_item_no", maintain_order=True)
    found = pl.DataFrame(
        {"index": list(reasons), "error": list(reasons.values())},
        schema={"index": pl.UInt32, "error": pl.String},
    )
    errors = (
        frame.select("index")
        .join(found, on="index", how="left", maintain_order="left")
        .get_column("error")
    )
    return hosts.select(pl.col("index").cast(pl.UInt32), pl.col("host")), errors


def expand_hostlist(expression: str | None) -> list[str]:
    r"""Expand one Slurm host list into host names.

    Parameters
    ----------
    expression : str or None
        A host list as ``sacct``/``squeue``/``scontrol`` print it, e.g.
        ``"gpu[001-004,010],login01"``. None, ``""`` and ``"None assigned"``
        mean no host.

    Returns
    -------
    list of str
        The host names in the order of the expression (zero padding kept).

    Raises
    ------
    InvalidParameterError
        If the expression is not a Slurm host list (unbalanced brackets, a bound
        that is not a number, a range ending below its start, a range of more
        than :data:`MAX_RANGE` hosts); the message names the expression.

    Notes
    -----
    The grammar and the reasons for not using a host-list library are in the
    module docstring of ``relkit.ingest._hostlist``. Slurm's own rule for
    widths: a range's numbers are zero-padded to the width of its lower bound.

    References
    ----------
    .. [1] SchedMD, Slurm ``src/common/hostlist.c`` (hostlist syntax),
       https://github.com/SchedMD/slurm

    Examples
    --------
    >>> expand_hostlist("gpu[098-101]")
    ['gpu098', 'gpu099', 'gpu100', 'gpu101']
    >>> expand_hostlist("rack[1-2]-node[01-02]")
    ['rack1-node01', 'rack1-node02', 'rack2-node01', 'rack2-node02']
    >>> expand_hostlist("None assigned")
    []
    >>> expand_hostlist("gpu[001-")
    Traceback (most recent call last):
    ...
    relkit.errors.InvalidParameterError: malformed host list 'gpu[001-': ...
    """
    hosts, errors = expand_hostlists(pl.Series([expression], dtype=pl.String))
    if errors[0] is not None:
        raise InvalidParameterError(errors[0])
    return hosts["host"].to_list()
