"""The offline HTML report and the demo: the main job end to end.

:func:`write_report` reads the store and writes ``report.html`` (charts drawn
by Vega libraries inlined in the page, so it opens with no network) plus
``tables/*.csv`` (and, with ``images=True``, ``images/<chart>.png`` and
``.svg``). Its sections follow the data: Summary, Data, Failures (when the
store has events), Interruptions (jobs), Goodput (a checkpoint log), Survival,
Scale, the per-system sections of LANL-shaped data, Assumptions; a section
the data cannot support is left out, and the Data section says why in one
line. Each section builder follows the contract of
:mod:`relkit._report_common`.
"""

import html
import multiprocessing
import os
import threading
import warnings
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import polars as pl

from relkit import _html, answers, charts
from relkit._report_common import ReportAssumptions, ReportContext, Sections
from relkit._report_data import data_section
from relkit._report_failures import (
    JOB_TABLES,
    answer_tables,
    failures_sections,
    system_sections,
)
from relkit._report_goodput import goodput_sections
from relkit._report_interruptions import interruptions_sections
from relkit._report_scale import scale_sections
from relkit._report_survival import survival_sections
from relkit.errors import InsufficientDataError, RelkitError, RelkitWarning
from relkit.observation import Observation, observe
from relkit.store import Store

__all__ = ["DEFAULT_TITLE", "ReportAssumptions", "run_demo", "write_report"]

Progress = Callable[[str], None]

#: The page's title unless the caller gives one.
DEFAULT_TITLE = "relkit reliability report"


def _quiet(_: str) -> None:
    return None


#: The report's section builders after Summary and Data, in page order.
BUILDERS: tuple[tuple[str, Callable[[ReportContext], Sections]], ...] = (
    ("Failures", failures_sections),
    ("Interruptions", interruptions_sections),
    ("Goodput", goodput_sections),
    ("Survival", survival_sections),
    ("Scale", scale_sections),
    ("Per system", system_sections),
)


def _summary(ctx: ReportContext, shown: list[str]) -> tuple[str, str]:
    """One paragraph with the key number of each section present."""
    t, a = ctx.tables, ctx.assumptions
    said: list[str] = []
    if "mtbf_fleet" in t and t["mtbf_fleet"].height:
        o = t["mtbf_fleet"].row(0, named=True)
        low, mid, high = (
            _html.format_value(o[c], "mtbf_h")
            for c in ("mtbf_lower_h", "mtbf_h", "mtbf_upper_h")
        )
        mtbf = (
            f"node MTBF {mid} h ({a.confidence:.0%} bounds {low}–{high} h)"
            if o["mtbf_h"] is not None
            else "no MTBF estimate"
        )
        said.append(
            f"{o['n_failures']:,} counted "
            f"failure{'' if o['n_failures'] == 1 else 's'} over "
            f"{_html.format_value(o['exposure_h'], 'exposure_h')} node-hours, {mtbf}"
        )
    if "incidents" in t:
        inc = t["incidents"]
        top = t.get("mtbf_by_mode")
        lead = ""
        if top is not None and top.height and top["n_failures"][0]:
            lead = (
                f"; most frequent: {top.row(0)[0]} ({top['n_failures'][0]:,} failures)"
            )
        said.append(
            f"{ctx.st['events'].height:,} events folded into {inc.height:,} "
            f"incidents{lead}"
        )
    if "xid_codes" in t:
        x = t["xid_codes"].sort("events", descending=True)
        said.append(
            f"{x.height:,} Xid code(s), most logged Xid {x['xid'][0]} "
            f"({x['name'][0]}, {x['events'][0]:,} lines)"
        )
    if "interruptions_by_cause" in t:
        c = t["interruptions_by_cause"]
        n = {
            k: int(c.filter(kind=k)["interruptions"].sum())
            for k in ("unexpected", "planned")
        }
        top_cause = c.filter(kind="unexpected")
        lead = (
            f", most from {top_cause['cause'][0]} ({top_cause['interruptions'][0]:,})"
            if top_cause.height
            else ""
        )
        said.append(
            f"{n['unexpected']:,} unexpected and {n['planned']:,} planned job "
            f"interruptions{lead}"
        )
    if "goodput_runs" in t and t["goodput_runs"].height:
        r = t["goodput_runs"].row(0, named=True)
        ettr = r.get("ettr_frac", r.get("ettr"))
        if ettr is not None:
            said.append(
                f"run {r['run_id']}: measured ETTR {_html.format_value(ettr, 'ettr')}"
            )
    if "checkpoint_decision" in t and t["checkpoint_decision"].height:
        d = t["checkpoint_decision"].row(0, named=True)
        if d.get("interval_h"):
            said.append(
                f"recommended checkpoint interval {d['interval_h'] * 60:.1f} min"
            )
    if "lemons" in t and "lemon" in t["lemons"].columns:
        n_lemons = int(t["lemons"]["lemon"].sum())
        said.append(f"{n_lemons:,} lemon node(s)")
    trend_text = trend_verdict(t.get("trend"))
    if trend_text:
        said.append(trend_text)
    scale = t.get("scale_projection")
    if scale is not None and scale.height and {"gpus", "mttf_h"} <= set(scale.columns):
        top = scale.sort("gpus").row(-1, named=True)
        mttf = top["mttf_h"]
        every = (
            f"{mttf * 60:.0f} min"
            if mttf < 1
            else f"{_html.format_value(mttf, 'mttf_h')} h"
        )
        said.append(f"a job on {top['gpus']:,} GPUs would fail every {every}")
    if "mtbf_by_system" in t and "Per system" in shown:
        systems = t["mtbf_by_system"].filter(pl.col("system").is_not_null())
        said.append(f"{systems.height:,} systems compared")
    text = "; ".join(said) if said else "no section has numbers to show"
    return (
        "Summary",
        f'<p class="relkit-summary">{html.escape(text[0].upper() + text[1:])}.</p>'
        "<p>Sections: "
        + html.escape(", ".join(["Data", *shown, "Assumptions"]))
        + ".</p>",
    )


def trend_verdict(trend: pl.DataFrame | None, *, alpha: float = 0.05) -> str:
    """Say the Laplace trend verdict over every group of ``trend`` at once.

    Parameters
    ----------
    trend : polars.DataFrame or None
        ``answers.trend_by`` output: ``laplace_direction`` (``"improving"``,
        ``"deteriorating"``, ``"no evidence"`` or null when no test ran),
        ``laplace_p_value`` and ``mil_hdbk_189_p_value``; one row per system
        or one row for the fleet.
    alpha : float
        The tests' significance level (trend_by's default 0.05), stated.

    Returns
    -------
    str
        ``"6 of 23 systems deteriorating, 13 improving, 4 no evidence
        (Laplace, 5 %)"`` for several groups; for one group its direction with
        both the Laplace and MIL-HDBK-189 p-values when they disagree at
        ``alpha``; ``""`` when no test was computed (every direction null).
        Laplace test: Cox & Lewis 1966; MIL-HDBK-189C (2011) §5.
    """
    if trend is None or not trend.height or "laplace_direction" not in trend.columns:
        return ""
    tested = trend.filter(pl.col("laplace_direction").is_not_null())
    if not tested.height:
        return ""
    level = f"{alpha:.0%}".replace("%", " %")
    if tested.height == 1:
        row = tested.row(0, named=True)
        direction = row["laplace_direction"]
        p_lap = row.get("laplace_p_value")
        p_mil = row.get("mil_hdbk_189_p_value")
        verdict = (
            "no evidence of a trend in the failure rate"
            if direction == "no evidence"
            else f"failure rate {direction}"
        )
        if (
            p_lap is not None
            and p_mil is not None
            and (p_lap < alpha) != (p_mil < alpha)
        ):
            return (
                f"{verdict} by the Laplace test (p {p_lap:.2g}) but not by "
                f"MIL-HDBK-189 (p {p_mil:.2g}) at {level}"
                if p_lap < alpha
                else f"{verdict} by the Laplace test (p {p_lap:.2g}), though "
                f"MIL-HDBK-189 finds a trend (p {p_mil:.2g}) at {level}"
            )
        return f"{verdict} (Laplace, {level})"
    counts = {
        d: tested.filter(pl.col("laplace_direction") == d).height
        for d in ("deteriorating", "improving", "no evidence")
    }
    return (
        f"{counts['deteriorating']:,} of {tested.height:,} systems deteriorating, "
        f"{counts['improving']:,} improving, {counts['no evidence']:,} no evidence "
        f"(Laplace, {level})"
    )


def _write_images(ctx: ReportContext, out_dir: Path) -> None:
    """Write ``images/<div_id>.png`` and ``.svg`` of every chart (vl-convert)."""
    images = out_dir / "images"
    images.mkdir(parents=True, exist_ok=True)
    for div_id, spec in ctx.charts:
        ctx.progress(f"image {div_id}.png and .svg")
        (images / f"{div_id}.svg").write_text(_html.chart_svg(spec), encoding="utf-8")
        (images / f"{div_id}.png").write_bytes(_html.chart_png(spec))


def _assumptions_section(a: ReportAssumptions) -> tuple[str, str]:
    rows = pl.DataFrame(
        {
            "assumption": [
                "confidence of bounds (two-sided)",
                "checkpoint write, min",
                "restart after a failure, min",
                "failures for a system's checkpoint plan",
                "systems with survival curves",
            ],
            "value": [
                f"{a.confidence:.0%}",
                f"{a.cost_h * 60:g}",
                f"{a.restart_h * 60:g}",
                f"{a.min_failures:,}",
                f"{a.top_systems:,}",
            ],
            "option": ["--confidence", "--cost-h", "--restart-h", "", ""],
        }
    )
    return (
        "Assumptions",
        "<p>Stated assumptions of this report (the command-line options that "
        "set them in brackets); all times are UTC.</p>" + _html.table_html(rows),
    )


def write_report(
    store: Store,
    out_dir: Path,
    *,
    title: str = DEFAULT_TITLE,
    assumptions: ReportAssumptions | None = None,
    images: bool = False,
    progress: Progress = _quiet,
) -> Path:
    """Write ``report.html`` and ``tables/*.csv`` for the data in a store.

    The sections follow the data: Summary; Data (sources, rejects, the
    observation model, and one line for each section left out, saying why);
    failures (MTBF by mode, incidents, Xid codes, a heatmap) when the store
    has events; interruptions (Pareto by cause, Llama 3 Table 5's shape,
    planned and unexpected) when it has jobs; goodput when it has a
    checkpoint log; survival; scale; the per-system sections of LANL-shaped
    data; Assumptions.

    Parameters
    ----------
    store : Store
        An open store (read only is enough).
    out_dir : Path
        Output directory, created if missing.
    title : str, default "relkit reliability report"
        The page's title.
    assumptions : ReportAssumptions, optional
        Confidence level and checkpoint/restart costs; defaults as documented there.
    images : bool, default False
        Also write every chart as ``images/<id>.png`` and ``images/<id>.svg``
        (for slides), rendered offline by vl-convert.
    progress : callable, optional
        Called with a short message before each long step, and with warnings.

    Returns
    -------
    Path
        The written ``report.html``.

    Raises
    ------
    InsufficientDataError
        If the store holds no rows at all (no events, assets, jobs or
        checkpoints).
    """
    a = assumptions or ReportAssumptions()
    check_out_dir(Path(out_dir))
    with charts.enable_theme():  # restores the caller's Altair theme afterwards
        return _write_report(
            store, Path(out_dir), title, a, images=images, progress=progress
        )


def check_out_dir(out_dir: Path) -> None:
    """Refuse an output directory the report cannot write, before any work.

    Parameters
    ----------
    out_dir : Path
        Where ``report.html``, ``tables/`` and ``images/`` go; created if
        missing.

    Raises
    ------
    RelkitError
        One line naming the path and the fix: ``out_dir`` (or one of its
        parents) is a file, it cannot be created or written, or
        ``out_dir/report.html``, ``out_dir/tables`` or ``out_dir/images`` is
        of the wrong kind (a directory where a file goes, or the reverse).
    """
    from relkit.errors import RelkitError

    try:
        out_dir.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        msg = f"{out_dir}: exists and is not a directory; give a directory path"
        raise RelkitError(msg) from None
    except OSError as exc:
        msg = (
            f"{out_dir}: cannot create the output directory ({exc.strerror}); "
            "give a writable directory path"
        )
        raise RelkitError(msg) from None
    wrong = [
        (out_dir / "report.html", "is a directory where the page goes", True),
        (out_dir / "tables", "is a file where the tables directory goes", False),
        (out_dir / "images", "is a file where the images directory goes", False),
    ]
    for path, said, is_file in wrong:
        if path.exists() and path.is_dir() == is_file:
            msg = f"{path} {said}; remove it or give another --out directory"
            raise RelkitError(msg)
    probe = out_dir / ".relkit-write-test"
    try:
        probe.write_text("", encoding="utf-8")
        probe.unlink()
    except OSError as exc:
        msg = (
            f"{out_dir}: cannot write there ({exc.strerror}); give a writable "
            "directory path"
        )
        raise RelkitError(msg) from None


def _observation(st: dict[str, pl.DataFrame]) -> Observation:
    """Observe the store; an empty model when no unit is at risk (jobs only).

    A store of job records only has no units at risk (no assets, no timed log
    lines); :func:`relkit.observation.observe` refuses it, but the report
    still has its job sections. The empty model has the frames' columns and no
    rows, and its basis says why.
    """
    try:
        return observe(**answer_tables(st))
    except InsufficientDataError:
        if st["events"].height or st["assets"].height:
            raise
    one = datetime(2000, 1, 1, tzinfo=UTC)
    shape = (
        st["assets"]
        .clear()
        .vstack(
            pl.DataFrame(
                {"host": ["-"], "in_service_ts": [one]},
                schema_overrides={
                    "in_service_ts": st["assets"].schema["in_service_ts"]
                },
            ).select(
                pl.col(c).cast(d)
                if c in ("host", "in_service_ts")
                else pl.lit(None, d).alias(c)
                for c, d in st["assets"].schema.items()
            )
        )
    )
    model = observe(st["events"].clear(), shape, window_end=one + timedelta(hours=1))
    return replace(
        model,
        failures=model.failures.clear(),
        excluded=model.excluded.clear(),
        windows=model.windows.clear(),
        prior_failures=model.prior_failures.clear(),
        exposure_basis="none: the store has no failure logs or assets, so no unit "
        "is at risk",
        observed_until=None,
        notes=(),
    )


def _noted(build: Callable[[ReportContext], Sections], ctx: ReportContext) -> Sections:
    """Run a section builder; its RelkitWarnings become notes on the page and stderr."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RelkitWarning)
        found = build(ctx)
    notes: list[str] = []
    for w in caught:
        if issubclass(w.category, RelkitWarning):
            notes.append(str(w.message))
        else:  # not relkit's to state: pass on as it came
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    notes = list(dict.fromkeys(notes))
    for note in notes:
        ctx.progress(f"note: {note}")
    if notes and not isinstance(found, str) and found:
        title, body = found[-1]
        found = [
            *found[:-1],
            (
                title,
                body
                + "".join(
                    f'<p class="relkit-note">Note: {html.escape(n)}</p>' for n in notes
                ),
            ),
        ]
    return found


def _write_report(
    store: Store,
    out_dir: Path,
    title: str,
    a: ReportAssumptions,
    *,
    images: bool,
    progress: Progress,
) -> Path:
    st = answers.store_tables(store)
    for name in JOB_TABLES:
        st[name] = store.table(name)
    if not any(st[n].height for n in ("sources", "events", "assets", *JOB_TABLES)):
        msg = (
            "the store holds no rows: ingest failure logs, job records or a "
            "checkpoint log first, e.g. relkit ingest --kind kernel LOGS, "
            "--kind sacct DUMP, --kind checkpoints FILE or --kind lanl FILE"
        )
        raise InsufficientDataError(msg)
    obs = _observation(st)
    ctx = ReportContext(store=store, st=st, obs=obs, assumptions=a, progress=progress)
    from relkit._report_data import data_notes

    for note in data_notes(ctx):
        progress(f"warning: {note}")
    shown: list[str] = []
    left_out: list[str] = []
    body: list[tuple[str, str]] = []
    for name, build in BUILDERS:
        try:
            found = _noted(build, ctx)
        except RelkitError as exc:
            progress(f"warning: {name}: {exc}")
            found = f"{name}: not computed: {exc}"
        except Exception as exc:  # a bug in one section must not lose the report
            if os.environ.get("RELKIT_DEBUG"):
                raise
            found = (
                f"{name}: not computed: internal error {type(exc).__name__}: {exc} "
                "(a bug in relkit; RELKIT_DEBUG=1 shows the traceback)"
            )
            progress(f"warning: {found}")
        if isinstance(found, str):
            left_out.append(found if found.startswith(name) else f"{name}: {found}")
            continue
        shown.append(name)
        body.extend(found)
    sections = [_summary(ctx, shown), data_section(ctx, left_out), *body]
    sections.append(_assumptions_section(a))
    tables_dir = out_dir / "tables"
    tables_dir.mkdir(parents=True, exist_ok=True)
    for name, frame in ctx.tables.items():
        _csv_ready(frame).write_csv(tables_dir / f"{name}.csv")
    pl.DataFrame([{**asdict(a), "given": ",".join(a.given)}]).write_csv(
        tables_dir / "assumptions.csv"
    )
    if images:
        _write_images(ctx, out_dir)
    page = out_dir / "report.html"
    page.write_text(_html.render_page(title, sections), encoding="utf-8")
    return page


def _csv_ready(frame: pl.DataFrame) -> pl.DataFrame:
    """Join lists by ``; `` and write structs as JSON, so that CSV can hold them."""
    fixes = []
    for name, dtype in frame.schema.items():
        if isinstance(dtype, pl.List):
            fixes.append(pl.col(name).cast(pl.List(pl.String)).list.join("; "))
        elif isinstance(dtype, pl.Struct):
            fixes.append(pl.col(name).struct.json_encode())
    return frame.with_columns(fixes) if fixes else frame


def _fresh(out_dir: Path) -> None:
    """Remove what an earlier demo wrote in ``out_dir`` (stores, tables, images)."""
    for sub in (out_dir, out_dir / "lanl"):
        for old in ("relkit.duckdb", "gpu-logs.duckdb", "jobs.duckdb"):
            for leftover in (sub / old, sub / f"{old}.wal"):
                leftover.unlink(missing_ok=True)
        for folder, pattern in (("tables", "*.csv"), ("images", "*.*")):
            for leftover in (sub / folder).glob(pattern):
                leftover.unlink()


def run_demo(out_dir: Path, *, progress: Progress = _quiet) -> dict[str, Any]:
    """Write the report of the bundled simulated run and of the LANL failure data.

    The simulated run (``datasets/synthetic``: a Llama 3-like 54-day run on
    264 nodes; assets, ``sacct`` dump, kernel logs and checkpoint log) is
    ingested into one store, ``out_dir/relkit.duckdb``, whose report
    ``out_dir/report.html`` has the failure, Xid, interruption (Table 5),
    goodput, survival and scale sections. The LANL failure data goes to
    ``out_dir/lanl/`` (its own store and report); the gpud kernel-log
    excerpts are counted by failure mode.

    Parameters
    ----------
    out_dir : Path
        Output directory: ``relkit.duckdb``, ``report.html``, ``tables/``,
        ``lanl/report.html`` and ``lanl/tables/``; what an earlier demo wrote
        there is replaced.
    progress : callable, optional
        Called with a short message before each long step.

    Returns
    -------
    dict
        Summary: the two reports' paths; the simulated run's interruptions
        (found and injected), by cause, its measured ETTR and the recommended
        checkpoint interval (see ``relkit._demo_jobs``); LANL records read,
        loaded, rejected, systems and fleet MTBF (h); the gpud excerpts' lines
        and incidents per failure mode (``tables/gpu_incidents_by_mode.csv``).
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    _fresh(out_dir)
    # the LANL report runs beside the simulated run's, in a second process
    # (each is mostly one core's work); its messages are relayed as they come
    spawn = multiprocessing.get_context("spawn")
    try:
        messages = spawn.Queue()
    except OSError as exc:  # no POSIX semaphores (some sandboxes): one at a time
        progress(f"note: the LANL report runs after the other ({exc})")
        page, jobs = _simulated_demo(out_dir, progress)
        lanl = _lanl_demo(str(out_dir / "lanl"), progress)
        return _gpud_demo(out_dir, page, jobs, lanl)
    relay = threading.Thread(target=_relay, args=(messages, progress), daemon=True)
    relay.start()
    pool = ProcessPoolExecutor(
        max_workers=1, mp_context=spawn, initializer=_set_queue, initargs=(messages,)
    )
    try:
        lanl_done = pool.submit(_lanl_demo, str(out_dir / "lanl"))
        sim = _simulated_demo(out_dir, progress)
        lanl = lanl_done.result()
    finally:
        pool.shutdown(wait=False, cancel_futures=True)
        messages.put(None)
        relay.join(timeout=5)
    page, jobs = sim
    return _gpud_demo(out_dir, page, jobs, lanl, progress)


def _simulated_demo(out_dir: Path, progress: Progress) -> tuple[Path, dict[str, Any]]:
    """Ingest the simulated run, write its report (the demo's main one), sum it up."""
    from relkit._demo_jobs import ingest_simulated_run, simulated_interruptions

    with Store(out_dir / "relkit.duckdb") as store:
        truth = ingest_simulated_run(store, progress)
        page = write_report(
            store,
            out_dir,
            title="relkit report: a simulated Llama 3-like training run",
            progress=progress,
        )
        jobs = simulated_interruptions(store, out_dir, truth, progress)
    return page, jobs


#: The demo's LANL process's message queue (set by :func:`_set_queue`).
_QUEUE: Any = None


def _set_queue(queue: Any) -> None:  # noqa: ANN401 - a multiprocessing queue
    """Set the LANL process's channel; its relkit warnings go there as notes."""
    global _QUEUE  # the worker process's one channel
    _QUEUE = queue
    shown = warnings.showwarning

    def show(message: Warning | str, category: type[Warning], *rest: Any) -> None:  # noqa: ANN401
        if issubclass(category, RelkitWarning):
            queue.put(f"note: {message}")
        else:
            shown(message, category, *rest)

    warnings.showwarning = show


def _relay(queue: Any, progress: Progress) -> None:  # noqa: ANN401
    """Pass the LANL process's messages to ``progress`` until None arrives."""
    while (message := queue.get()) is not None:
        progress(f"LANL: {message}")


def _lanl_demo(lanl_dir: str, progress: Progress | None = None) -> dict[str, Any]:
    """Ingest the LANL failure data and write its report (in the demo's 2nd process)."""
    from relkit import datasets
    from relkit.ingest import read_file

    if progress is None:
        progress = _QUEUE.put if _QUEUE is not None else _quiet
    out = Path(lanl_dir)
    out.mkdir(parents=True, exist_ok=True)
    with Store(out / "relkit.duckdb") as store:
        progress("ingesting the LANL failure data (23,739 records)")
        read_file(store, datasets.path("lanl"), kind="lanl")
        lanl_page = write_report(
            store,
            out,
            title="relkit report: LANL failure data 1996-2005",
            progress=progress,
        )
        st = answers.store_tables(store)
        sources = st["sources"].filter(pl.col("kind") == "lanl").row(0, named=True)
        overall = answers.mtbf_by(**st).row(0, named=True)
        return {
            "lanl_report": str(lanl_page),
            "dataset": "LANL failure data 1996-2005 (LA-UR-05-7318)",
            "records": sources["n_lines"],
            "loaded": sources["n_loaded"],
            "rejected": sources["n_rejected"],
            "systems": st["events"]["system"].n_unique(),
            "node_mtbf_h": overall["mtbf_h"],
            "failures_per_1000_node_days": overall["failures_per_1000_node_days"],
        }


def _gpud_demo(
    out_dir: Path,
    page: Path,
    jobs: dict[str, Any],
    lanl: dict[str, Any],
    progress: Progress,
) -> dict[str, Any]:
    """Count the gpud kernel-log excerpts' incidents; assemble the demo's summary."""
    from relkit import datasets
    from relkit.ingest import read_path

    progress("ingesting NVIDIA kernel-log excerpts (gpud fixtures; times read as UTC)")

    with Store(out_dir / "gpu-logs.duckdb") as gpu_store:
        logs = read_path(
            gpu_store,
            datasets.path("gpud"),
            kind="kernel",
            tz="UTC",
            host_from_filename=True,
        )
        incidents = answers.incident_table(
            gpu_store.table("events"),
            end_of_log=answers.log_end(gpu_store.table("sources")),
        )
    by_mode = (
        incidents.group_by("failure_mode", "category")
        .agg(n_incidents=pl.len(), n_events=pl.col("n_events").sum())
        .sort("failure_mode")
    )
    by_mode.write_csv(out_dir / "tables" / "gpu_incidents_by_mode.csv")
    return {
        "report": str(page),
        **jobs,
        **lanl,
        "gpu_log_lines": sum(r.n_lines for r in logs),
        "gpu_incidents": ", ".join(
            f"{r['failure_mode']} ({r['category']}): {r['n_incidents']}"
            for r in by_mode.iter_rows(named=True)
        ),
    }
