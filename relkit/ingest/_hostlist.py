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
field are no hosts. A host named twice is kept once. Anything else is an error
naming the expression: a missing bracket, a bound that is not a number, a range
whose end is below its start, or a list of more hosts than its record's
``NNodes`` (or :data:`MAX_HOSTS`), refused before it is expanded when it would
pass twice that. Nothing is guessed.
"""

import polars as pl

from relkit.errors import InvalidParameterError

__all__ = [
    "MAX_HOSTS",
    "NO_HOSTS",
    "expand_hostlist",
    "expand_hostlists",
    "expand_hostlists_counted",
]

#: Values that mean "no host" (Slurm prints ``None assigned`` for pending jobs).
NO_HOSTS = ("None assigned", "(null)", "")

#: Most hosts one host list may name: ten times the largest GPU clusters of
#: 2024 (Llama 3 trained on 2,048 nodes; xAI's Colossus had about 12,500), so
#: that ``gpu[1-999999]`` on 30 lines cannot take 3 GB of memory.
MAX_HOSTS = 100_000

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
    *,
    max_hosts: pl.Series | int | None = None,
) -> tuple[pl.DataFrame, pl.Series]:
    r"""Expand many Slurm host lists at once (vectorised).

    Parameters
    ----------
    expressions : pl.Series
        String series of host-list expressions, one per record (nulls and the
        values of :data:`NO_HOSTS` have no hosts).
    max_hosts : pl.Series or int, optional
        Most hosts each record may name (e.g. its ``NNodes``): one number for
        all, or an integer series as long as ``expressions`` (null: no limit
        but :data:`MAX_HOSTS`). Never above :data:`MAX_HOSTS`.

    Returns
    -------
    hosts : pl.DataFrame
        One row per (record, distinct host): ``index`` (UInt32, the position
        in ``expressions``) and ``host`` (String), in record order and,
        within a record, in the order of the expression (a host named twice
        is kept once, where it first appears). Records with an error have no
        rows.
    errors : pl.Series
        String series as long as ``expressions``: null where the expression is
        valid, else the reason, naming the expression (e.g. ``"malformed host
        list 'gpu[001-': unbalanced brackets"``).

    Notes
    -----
    A list naming more distinct hosts than its limit is an error, and so is
    one whose expansion would pass twice its limit (or :data:`MAX_HOSTS`)
    with repeats: ``gpu[1-999999]`` is refused before it is expanded, so a
    hostile file cannot fill the memory.

    Examples
    --------
    >>> hosts, errors = expand_hostlists(
    ...     pl.Series(["gpu[001-002],cpu7", "None assigned", "gpu[3-1]"])
    ... )
    >>> hosts.rows()
    [(0, 'gpu001'), (0, 'gpu002'), (0, 'cpu7')]
    >>> errors.to_list()  # doctest: +NORMALIZE_WHITESPACE
    [None, None, "malformed host list 'gpu[3-1]': range 3-1 ends below its start"]
    >>> _, errors = expand_hostlists(pl.Series(["g[1-3]", "g[1-2],g1"]), max_hosts=2)
    >>> errors.to_list()
    ["host list 'g[1-3]' names 3 hosts, more than the record's NNodes = 2", None]
    """
    hosts, errors, _ = expand_hostlists_counted(expressions, max_hosts=max_hosts)
    return hosts.sort("index", maintain_order=True), errors


def _limits(n: int, max_hosts: pl.Series | int | None) -> pl.Series:
    if max_hosts is None:
        return pl.Series([MAX_HOSTS] * n, dtype=pl.Int64)
    if isinstance(max_hosts, int):
        return pl.Series([min(max_hosts, MAX_HOSTS)] * n, dtype=pl.Int64)
    caps = max_hosts.cast(pl.Int64, strict=False)
    return caps.clip(upper_bound=MAX_HOSTS).fill_null(MAX_HOSTS)


def expand_hostlists_counted(
    expressions: pl.Series,
    *,
    max_hosts: pl.Series | int | None = None,
) -> tuple[pl.DataFrame, pl.Series, pl.Series]:
    """Expand host lists as :func:`expand_hostlists`, counting repeated hosts.

    Returns ``(hosts, errors, n_repeated)``; ``n_repeated`` (Int64, one per
    record) is how many host names the expression repeated (dropped). The
    hosts of a record are in expression order, but the records are not in
    order (they finish in different passes).
    """
    empty = pl.col("expr").is_null() | pl.col("expr").is_in(list(NO_HOSTS))
    fits = pl.col("expr").str.contains(_LIST)
    # one plain host (no bracket, no comma): the common case needs no parsing
    plain = ~pl.col("expr").str.contains(r"[\[,]")
    frame = (
        pl.DataFrame({"expr": expressions.cast(pl.String)})
        .with_row_index("index")
        .with_columns(_cap=_limits(len(expressions), max_hosts))
        .lazy()
        .with_columns(pl.col("expr").str.strip_chars())
        .with_columns(_empty=empty, _fits=fits.fill_null(value=False), _plain=plain)
        .collect(engine="streaming")
    )
    bad_grammar = frame.filter(~pl.col("_empty") & ~pl.col("_fits"))
    reasons: dict[int, str] = {
        i: f"malformed host list {e!r}: {_grammar_reason(e)}"
        for i, e in bad_grammar.select("index", "expr").iter_rows()
    }
    ok = frame.filter(~pl.col("_empty") & pl.col("_fits"))
    single = ok.filter("_plain").select(
        "index", _item_no=pl.lit(0, pl.Int64), host="expr"
    )
    too_many_single = single.join(
        frame.select("index", "_cap").filter(pl.col("_cap") < 1), on="index"
    )
    work = (
        ok.lazy()
        .filter(~pl.col("_plain"))
        .select(
            "index",
            item=pl.col("expr").str.extract_all(_ITEM),
        )
        .with_columns(_item_no=pl.int_ranges(0, pl.col("item").list.len()))
        .explode("item", "_item_no")
        .with_columns(pl.col("item").cast(pl.String))
        .collect(engine="streaming")
    )
    multi_item = work.height > 0 and bool((work["_item_no"] > 0).any())
    # a record may grow up to twice its limit while it expands (repeats are
    # dropped at the end); beyond that it is refused before it is expanded
    guard = (
        frame.select("index", _guard=(2 * pl.col("_cap")).clip(upper_bound=MAX_HOSTS))
        if max_hosts is not None
        else frame.select("index", _guard=pl.lit(MAX_HOSTS, pl.Int64))
    )
    exprs_of = frame.select("index", "expr", "_cap")
    for i, e, cap in (
        exprs_of.join(too_many_single, on="index")
        .select("index", "expr", "_cap")
        .iter_rows()
    ):
        reasons[i] = _over_limit(e, 1, cap)
    done: list[pl.DataFrame] = [single]
    for _ in range(64):  # one bracket group per pass; 64 is far beyond real lists
        has = pl.col("item").str.contains("[", literal=True)
        done.append(work.filter(~has).select("index", "_item_no", host="item"))
        work = work.filter(has)
        if work.height == 0:
            break
        parts = (
            work.lazy()
            .with_columns(pl.col("item").str.extract_groups(_FIRST_BRACKET).alias("_g"))
            .with_columns(
                _prefix=pl.col("_g").struct.field("1"),
                _rng=pl.col("_g").struct.field("2").str.split(","),
                _rest=pl.col("_g").struct.field("3"),
            )
            .explode("_rng")
            .with_columns(
                _lo_s=pl.col("_rng").str.extract(r"^([0-9]+)"),
                _hi_s=pl.coalesce(
                    pl.col("_rng").str.extract(r"-([0-9]+)$"),
                    pl.col("_rng").str.extract(r"^([0-9]+)"),
                ),
            )
            .with_columns(
                _lo=pl.col("_lo_s").cast(pl.Int64, strict=False),
                _hi=pl.col("_hi_s").cast(pl.Int64, strict=False),
                _width=pl.col("_lo_s").str.len_chars(),
            )
            .collect(engine="streaming")
        )
        wrong = parts.filter(
            pl.col("_lo").is_null()
            | pl.col("_hi").is_null()
            | (pl.col("_hi") < pl.col("_lo"))
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
            else:
                why = f"range {rng} ends below its start"
            reasons[i] = f"malformed host list {e!r}: {why}"
        if reasons:
            parts = parts.filter(~pl.col("index").is_in(list(reasons)))
        # the rows this pass makes per record, with those already made
        grow = (
            parts.group_by("index")
            .agg(_n=(pl.col("_hi") - pl.col("_lo") + 1).sum())
            .join(guard, on="index")
            .filter(pl.col("_n") > pl.col("_guard"))
        )
        if grow.height:
            over = exprs_of.join(grow, on="index")
            for i, e, cap, n in over.select("index", "expr", "_cap", "_n").iter_rows():
                reasons.setdefault(i, _over_limit(e, n, cap, at_least=True))
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
            parts.lazy()
            .select(
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
            .collect(engine="streaming")
        )
    hosts = pl.concat(done)
    if reasons:
        hosts = hosts.filter(~pl.col("index").is_in(list(reasons)))
    # an item's hosts all finish in one pass, in order; items of one record may
    # finish in different passes: restore the expression order (records stay
    # in pass order; expand_hostlists sorts them)
    if multi_item:
        hosts = hosts.sort("index", "_item_no", maintain_order=True)
    hosts = hosts.select(pl.col("index").cast(pl.UInt32), "host")
    # repeats are possible only where the list has a comma
    maybe = frame.filter(pl.col("expr").str.contains(",", literal=True))["index"]
    n_repeated = pl.repeat(0, frame.height, dtype=pl.Int64, eager=True).alias(
        "n_repeated"
    )
    if maybe.len():
        sub = hosts.filter(pl.col("index").is_in(maybe.cast(pl.UInt32).implode()))
        repeat = sub.filter(pl.col("host").is_duplicated().over("index"))
        if repeat.height:
            first = repeat.select(
                "index", _keep=pl.col("host").is_first_distinct().over("index")
            )
            dropped = first.filter(~pl.col("_keep")).group_by("index").len()
            n_repeated = n_repeated.scatter(
                dropped["index"].cast(pl.Int64), dropped["len"].cast(pl.Int64)
            )
            hosts = hosts.filter(
                ~(
                    pl.col("index").is_in(dropped["index"].implode())
                    & ~pl.col("host").is_first_distinct().over("index")
                )
            )
    counts = (
        hosts.group_by("index")
        .len()
        .join(exprs_of.with_columns(pl.col("index").cast(pl.UInt32)), on="index")
    )
    over = counts.filter(pl.col("len") > pl.col("_cap"))
    for i, e, cap, n in over.select("index", "expr", "_cap", "len").iter_rows():
        reasons.setdefault(int(i), _over_limit(e, n, cap))
    if over.height:
        hosts = hosts.filter(~pl.col("index").is_in(over["index"].implode()))
    found = pl.DataFrame(
        {"index": list(reasons), "error": list(reasons.values())},
        schema={"index": pl.UInt32, "error": pl.String},
    )
    errors = (
        frame.select("index")
        .join(found, on="index", how="left", maintain_order="left")
        .get_column("error")
    )
    return hosts, errors, n_repeated


def _over_limit(expr: str, n: int, cap: int, *, at_least: bool = False) -> str:
    what = f"at least {n:,}" if at_least else f"{n:,}"
    limit = (
        f"relkit's limit of {MAX_HOSTS:,} hosts per list"
        if cap >= MAX_HOSTS
        else f"the record's NNodes = {cap:,}"
    )
    plural = "" if n == 1 and not at_least else "s"
    return f"host list {expr!r} names {what} host{plural}, more than {limit}"


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
        The host names in the order of the expression (zero padding kept; a
        host named twice is kept where it first appears).

    Raises
    ------
    InvalidParameterError
        If the expression is not a Slurm host list (unbalanced brackets, a bound
        that is not a number, a range ending below its start, more than
        :data:`MAX_HOSTS` hosts); the message names the expression.

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
