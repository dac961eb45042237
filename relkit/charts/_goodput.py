"""Goodput charts: a run's wall time, down through badput to productive time."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Literal

import polars as pl

from relkit.charts._theme import chart_title
from relkit.errors import InsufficientDataError, InvalidParameterError, SchemaError
from relkit.schema import require_columns

if TYPE_CHECKING:
    import altair as alt

__all__ = ["badput_waterfall_chart"]

#: Badput columns of a ``runs`` frame in waterfall order, with their plain names.
_BADPUT_STEPS = (
    ("badput_init_h", "initialisation"),
    ("badput_checkpoint_h", "checkpoint save"),
    ("badput_restore_h", "restore"),
    ("badput_lost_progress_h", "lost progress"),
    ("badput_recovery_h", "recovery"),
    ("badput_queue_h", "queue"),
    ("badput_other_h", "other"),
)
#: waterfall bar kind -> colour
_WATERFALL_KINDS = {
    "wall time": "#4c78a8",
    "badput": "#e45756",
    "unaccounted": "#bab0ac",
    "productive": "#54a24b",
}
_UNACCOUNTED = "unaccounted"
#: display unit -> hours per unit
_HOURS_PER = {"s": 1 / 3600, "min": 1 / 60, "h": 1.0}


def _amount_text(value: float) -> str:
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def _waterfall_steps(run: dict[str, Any], *, where: str) -> list[dict[str, Any]]:
    """Bars of one run's waterfall in hours: wall time, badput steps, productive."""
    rid = run["run_id"]
    for col in ("wall_h", "productive_h"):
        value = run[col]
        if value is None or not (math.isfinite(value) and value >= 0):
            msg = f"{where}: run {rid!r} has {col} = {value!r}; need a number >= 0."
            raise SchemaError(msg)
    wall, productive = float(run["wall_h"]), float(run["productive_h"])
    steps = [("wall time", "wall time", 0.0, wall, wall)]
    top = wall
    for col, label in _BADPUT_STEPS:
        value = run[col]
        if value is None:  # not measured: its time shows as unaccounted
            continue
        if not (math.isfinite(value) and value >= 0):
            msg = f"{where}: run {rid!r} has {col} = {value!r}; need a number >= 0."
            raise SchemaError(msg)
        if value > 0:
            steps.append((label, "badput", top - value, top, value))
            top -= value
    residual = top - productive
    tolerance = 1e-6 * wall + 1e-12
    if residual < -tolerance:
        msg = (
            f"{where}: run {rid!r}: productive_h + badput = "
            f"{wall - residual:.6g} h exceeds wall_h = {wall:.6g} h by "
            f"{-residual:.3g} h; time is counted twice. Check the runs frame."
        )
        raise SchemaError(msg)
    if residual > tolerance:
        steps.append((_UNACCOUNTED, "unaccounted", productive, top, residual))
    steps.append(("productive", "productive", 0.0, productive, productive))
    return [
        {
            "run_id": rid,
            "step": label,
            "step_order": order,
            "kind": kind,
            "low_h": low,
            "high_h": high,
            "amount_h": amount,
            "share_of_wall": amount / wall if wall > 0 else None,
        }
        for order, (label, kind, low, high, amount) in enumerate(steps)
    ]


def _run_title(run: dict[str, Any]) -> Any:  # noqa: ANN401 (alt.TitleParams)
    import altair as alt

    ettr = run["ettr"]
    ettr_text = "n/a" if ettr is None or not math.isfinite(ettr) else f"{ettr:.1%}"
    evidence = run["evidence"] if run["evidence"] is not None else "(missing)"
    return alt.TitleParams(
        text=f"Run {run['run_id']}: where the wall time went",
        subtitle=f"ETTR {ettr_text} (productive / wall time); evidence: {evidence}",
    )


def badput_waterfall_chart(
    runs: pl.DataFrame,
    *,
    run_id: str | None = None,
    unit: Literal["auto", "s", "min", "h"] = "auto",
    max_runs: int = 12,
    title: str | None = None,
) -> alt.LayerChart | alt.VConcatChart:
    r"""Draw a waterfall of a run's wall time, down through badput to productive time.

    The first bar is the run's wall time; each badput category then takes its
    share off the top, as a floating bar, until the last bar, the productive
    time, is left. Categories in plain words, in this order: initialisation,
    checkpoint save, restore, lost progress, recovery, queue, other. A
    category that is 0 is left out (no empty bar); a category that is null
    (not measured) is left out too, and its time shows in a grey bar
    "unaccounted" (in no category), which is drawn whenever wall time
    exceeds productive time plus the categories (beyond 1e-6 of wall time).
    The title names the run, the subtitle its ETTR and evidence label.

    Parameters
    ----------
    runs : pl.DataFrame
        One row per run (e.g. the runs frame of :mod:`relkit.jobs`), columns
        ``run_id`` (cast to text), ``evidence`` (text: how the split was
        measured), ``wall_h``, ``productive_h`` (h, >= 0), ``ettr`` or
        ``ettr_frac`` (fraction in [0, 1], shown as given; null prints "n/a")
        and the badput columns
        ``badput_init_h``, ``badput_checkpoint_h``, ``badput_restore_h``,
        ``badput_lost_progress_h``, ``badput_recovery_h``, ``badput_queue_h``,
        ``badput_other_h`` (h, >= 0 or null).
    run_id : str, optional
        The run to draw. Default: every run of the frame, in frame order.
    unit : {"auto", "s", "min", "h"}, default "auto"
        Unit of the time axis and labels. ``"auto"`` picks seconds when the
        longest wall time drawn is under 2 min, minutes under 2 h, else hours.
    max_runs : int, default 12
        Most runs drawn at once without ``run_id`` (one waterfall each).
    title : str, optional
        Title above several waterfalls; with one run it replaces the run's
        headline (the subtitle with ETTR and evidence stays).

    Returns
    -------
    altair.LayerChart or altair.VConcatChart
        One run: a bar layer (``low``..``high`` on x "Wall time (<unit>)", y the
        step, colour the kind: "wall time", "badput", "unaccounted",
        "productive") and a text layer (the amount, badput with a minus sign,
        right of each bar). Several runs: one such layer per run, stacked
        vertically, each with its own x scale. Dataset columns: ``run_id``,
        ``step``, ``step_order`` (0 = wall time), ``kind``, ``low_h``,
        ``high_h``, ``amount_h`` (h), ``share_of_wall`` (fraction), ``low``,
        ``high``, ``amount`` (in the display unit) and ``label``; rows in
        step order.

    Raises
    ------
    SchemaError
        If a column is missing, ``run_id`` repeats, a duration is negative,
        NaN or (for ``wall_h``, ``productive_h``) null, productive time plus
        badput exceeds wall time, or the frame holds more than ``max_runs``
        runs and no ``run_id`` is given.
    InvalidParameterError
        If ``run_id`` is not in the frame, ``unit`` is unknown or
        ``max_runs`` < 1.
    InsufficientDataError
        If the frame has no rows.

    Notes
    -----
    Wall time :math:`W = P + \sum_k B_k + U`, with productive time :math:`P`,
    badput categories :math:`B_k` and the unaccounted rest :math:`U \ge 0`;
    ETTR is :math:`P/W` (Kokolis et al., HPCA 2025, arXiv:2410.21680).

    Examples
    --------
    Case C18: 64 s of wall time, 15 s productive.

    >>> import polars as pl
    >>> run = pl.DataFrame(
    ...     {
    ...         "run_id": ["run-7"],
    ...         "evidence": ["step log"],
    ...         "wall_h": [64 / 3600],
    ...         "productive_h": [15 / 3600],
    ...         "ettr": [15 / 64],
    ...         "badput_init_h": [5 / 3600],
    ...         "badput_checkpoint_h": [0.0],
    ...         "badput_restore_h": [5 / 3600],
    ...         "badput_lost_progress_h": [9 / 3600],
    ...         "badput_recovery_h": [30 / 3600],
    ...         "badput_queue_h": [0.0],
    ...         "badput_other_h": [0.0],
    ...     }
    ... )
    >>> spec = badput_waterfall_chart(run).to_dict()
    >>> [(r["step"], r["label"]) for r in spec["datasets"][spec["data"]["name"]]]
    [('wall time', '64 s'), ('initialisation', '−5 s'), ('restore', '−5 s'),
     ('lost progress', '−9 s'), ('recovery', '−30 s'), ('productive', '15 s')]
    >>> spec["title"]["subtitle"]
    'ETTR 23.4% (productive / wall time); evidence: step log'
    """
    import altair as alt

    where = "badput_waterfall_chart"
    if "ettr" not in runs.columns and "ettr_frac" in runs.columns:
        runs = runs.rename({"ettr_frac": "ettr"})  # relkit.jobs.measure_goodput's runs
    cols = [
        "run_id",
        "evidence",
        "wall_h",
        "productive_h",
        "ettr",
        *(col for col, _ in _BADPUT_STEPS),
    ]
    require_columns(runs, cols, where=where)
    if unit not in ("auto", *_HOURS_PER):
        msg = f"{where}: unit must be 'auto', 's', 'min' or 'h'; found {unit!r}."
        raise InvalidParameterError(msg)
    if max_runs < 1:
        msg = f"{where}: max_runs must be >= 1; found {max_runs!r}."
        raise InvalidParameterError(msg)
    data = runs.select(cols).with_columns(
        pl.col("run_id").cast(pl.String),
        pl.col("evidence").cast(pl.String),
        *(pl.col(c).cast(pl.Float64) for c in cols[2:]),
    )
    if data.height == 0:
        msg = f"{where}: the runs frame has no rows; nothing to draw."
        raise InsufficientDataError(msg)
    ids = data["run_id"].to_list()
    if dups := sorted({i for i in ids if ids.count(i) > 1}, key=str):
        msg = (
            f"{where}: run_id must be unique (one row per run); repeated: "
            f"{dups[:5]}. Aggregate attempts into runs first."
        )
        raise SchemaError(msg)
    if run_id is not None:
        data = data.filter(pl.col("run_id") == str(run_id))
        if data.height == 0:
            msg = (
                f"{where}: no run {run_id!r} in the frame; its runs include {ids[:5]}."
            )
            raise InvalidParameterError(msg)
    elif data.height > max_runs:
        msg = (
            f"{where}: the frame holds {data.height:,} runs; at most {max_runs} "
            "waterfalls are drawn at once. Pass run_id='...', or pick runs, e.g. "
            "runs.sort('wall_h', descending=True).head(6), or raise max_runs."
        )
        raise SchemaError(msg)
    rows = data.to_dicts()
    if unit == "auto":
        longest = max(float(r["wall_h"] or 0.0) for r in rows)
        unit = "s" if longest < 2 / 60 else "min" if longest < 2 else "h"
    per = _HOURS_PER[unit]
    frames = []
    for run in rows:
        steps = _waterfall_steps(run, where=where)
        for step in steps:
            for col in ("low", "high", "amount"):
                step[col] = step[f"{col}_h"] / per
            sign = "−" if step["kind"] in ("badput", "unaccounted") else ""
            step["label"] = f"{sign}{_amount_text(step['amount'])} {unit}"
        frames.append(pl.DataFrame(steps))
    seen = {k for steps in frames for k in steps["kind"]}
    kinds = [k for k in _WATERFALL_KINDS if k in seen]  # one legend for all runs
    colour = (
        alt.Color("kind:N")
        .scale(domain=kinds, range=[_WATERFALL_KINDS[k] for k in kinds])
        .title(None)
        .legend(orient="bottom")
    )
    charts = []
    for run, steps in zip(rows, frames, strict=True):
        y = alt.Y("step:N").sort(steps["step"].to_list()).title(None)
        bars = (
            alt.Chart(steps)
            .mark_bar()
            .encode(
                x=alt.X("low:Q").title(f"Wall time ({unit})"),
                x2="high:Q",
                y=y,
                color=colour,
                tooltip=[
                    alt.Tooltip("run_id:N").title("run"),
                    alt.Tooltip("step:N"),
                    alt.Tooltip("amount:Q").format(",.3g").title(f"time ({unit})"),
                    alt.Tooltip("share_of_wall:Q").format(".1%").title("of wall"),
                ],
            )
        )
        labels = (
            alt.Chart(steps)
            .mark_text(align="left", dx=4)
            .encode(x="high:Q", y=y, text="label:N")
        )
        headline = _run_title(run)
        if title is not None and len(rows) == 1:
            headline.text = title
        charts.append(alt.layer(bars, labels, title=headline))
    if len(charts) == 1:
        return charts[0]
    return alt.vconcat(*charts, title=chart_title(title)).resolve_scale(
        x="independent", y="independent"
    )
