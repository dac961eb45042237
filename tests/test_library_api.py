"""The library as a data scientist meets it (issue 14 §5).

Arguments that cannot be swapped silently, one default confidence level that
every output states, failure rates accepted in either unit with the unit in the
name, results that show themselves in Jupyter, no bare tuples, and directory
ingest in the public API.
"""

import argparse
import dataclasses
import importlib
import inspect
import math
import typing
from pathlib import Path

import polars as pl
import pytest

import relkit
from relkit import checkpoint, metrics, scale
from relkit.defaults import DEFAULT_CONFIDENCE
from relkit.errors import IngestError, InvalidParameterError, RelkitWarning

#: Modules whose public functions a notebook user calls directly.
PUBLIC_MODULES = (
    "relkit",
    "relkit.answers",
    "relkit.checkpoint",
    "relkit.ingest",
    "relkit.jobs",
    "relkit.metrics",
    "relkit.repairable",
    "relkit.scale",
    "relkit.survival",
)


def _public_functions() -> dict[str, typing.Callable[..., object]]:
    found: dict[str, typing.Callable[..., object]] = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in module.__all__:
            value = getattr(module, attr)
            if inspect.isfunction(value):
                found.setdefault(f"{value.__module__}.{value.__qualname__}", value)
    return found


# ---------------------------------------------------------------- keyword-only


SWAPPABLE = [
    ("young_interval_h", lambda: checkpoint.young_interval_h(24.0, 5 / 60)),
    ("daly_interval_h", lambda: checkpoint.daly_interval_h(24.0, 5 / 60)),
    ("exact_interval_h", lambda: checkpoint.exact_interval_h(24.0, 5 / 60)),
    ("checkpoint_intervals", lambda: checkpoint.checkpoint_intervals(24.0, 5 / 60)),
    ("checkpoint_efficiency", lambda: checkpoint.checkpoint_efficiency(1, 24, 0.1)),
    ("mtbf_bounds", lambda: metrics.mtbf_bounds(14980.0, 7)),
    ("failure_rate_bounds", lambda: metrics.failure_rate_bounds(2048 * 54, 419)),
    ("mttf_at_scale_h", lambda: metrics.mttf_at_scale_h(2048, 6.5e-3)),
    ("node_failure_rate", lambda: scale.node_failure_rate(100.0, 3)),
    ("scale_projection", lambda: scale.scale_projection(6.5e-3, [1024])),
]


@pytest.mark.parametrize(("name", "call"), SWAPPABLE, ids=[n for n, _ in SWAPPABLE])
def test_swapped_positional_calls_raise_type_error(
    name: str, call: typing.Callable[[], object]
) -> None:
    """Two numbers of different meaning side by side are keyword-only."""
    with pytest.raises(TypeError, match="positional argument"):
        call()


def test_at_most_one_positional_float_beside_another() -> None:
    """No public function takes two positional floats of different meaning.

    Every public function whose positional parameters include two or more
    annotated ``float`` (or ``int``) scalars would let a caller swap them.
    """
    scalar = (float, int, "float", "int", float | None, "float | None")
    offenders = []
    for qualname, fn in _public_functions().items():
        positional = [
            p.name
            for p in inspect.signature(fn).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
            and p.annotation in scalar
        ]
        if len(positional) >= 2:
            offenders.append((qualname, positional))
    assert offenders == []


def test_the_issue_example_warns_and_names_the_fix() -> None:
    """Swapped values (δ = 24 h, M = 5 min) warn instead of returning 3e-126 quietly.

    The efficiency itself is Daly's η(τ) = τ e^{-R/M} / (M (e^{(τ+δ)/M} − 1)),
    evaluated here by hand at the returned τ.
    """
    with pytest.warns(RelkitWarning, match="not swapped") as seen:
        ci = checkpoint.checkpoint_intervals(cost_h=24.0, mtbf_h=5 / 60)
    assert len(seen) == 1
    m, d = 5 / 60, 24.0
    tau = ci.exact_h
    by_hand = tau / (m * math.expm1((tau + d) / m))
    assert ci.efficiency_at_exact == pytest.approx(by_hand, rel=1e-9)
    assert ci.efficiency_at_exact < 1e-100


def test_the_right_order_is_quiet() -> None:
    """Daly 2006, Fig. 3 (δ = 5 min, M = 24 h): τ ≈ 117 min, and no warning."""
    ci = checkpoint.checkpoint_intervals(cost_h=5 / 60, mtbf_h=24.0)
    assert ci.daly_h * 60 == pytest.approx(117, abs=0.5)


def test_plan_checkpoints_warns_once_for_degenerate_rows() -> None:
    """Rows with mtbf_h <= cost_h get their intervals and one warning for all."""
    frame = pl.DataFrame({"system": ["a", "b", "c"], "mtbf_h": [24.0, 0.05, 0.02]})
    with pytest.warns(RelkitWarning, match="2 row") as seen:
        out = checkpoint.plan_checkpoints(frame, cost_h=0.1, restart_h=0.0)
    assert len(seen) == 1
    # 0.1 >= 2 * 0.05: Daly's second case, tau = M
    assert out["daly_branch"].to_list() == ["delta<2M", "delta>=2M", "delta>=2M"]
    assert out["daly_h"].to_list()[1:] == [0.05, 0.02]


def test_ettr_model_warns_when_a_rate_per_1000_is_given_per_node_day() -> None:
    """RSC-1's 6.5 per 1000 node-days passed as 6.5 per node-day on 2,048 nodes:
    λ = 2048 · 6.5 / 24 = 554.7 per hour, so λ·u₀ = 55 ≥ 1 with u₀ = 0.1 h and
    the first-order model gives ETTR = 0 at every interval (Kokolis et al.)."""
    kw = {"n_nodes": 2048, "restart_h": 0.1, "interval_h": 1.0}
    with pytest.warns(RelkitWarning, match="failures_per_1000_node_days"):
        wrong = checkpoint.ettr_model(failures_per_node_day=6.5, **kw)
    assert (wrong.ettr, wrong.ettr_at_optimal) == (0.0, 0.0)
    right = checkpoint.ettr_model(failures_per_1000_node_days=6.5, **kw)
    assert right.mttf_h == pytest.approx(24 / (2048 * 6.5e-3), rel=1e-12)


# ---------------------------------------------------------------- one confidence


def test_default_confidence_is_095_and_defined_once() -> None:
    """0.95 two-sided, lifelines' alpha = 0.05; re-exported, not redefined."""
    assert DEFAULT_CONFIDENCE == 0.95
    assert metrics.DEFAULT_CONFIDENCE is DEFAULT_CONFIDENCE
    assert relkit.DEFAULT_CONFIDENCE is DEFAULT_CONFIDENCE


def test_every_confidence_parameter_defaults_to_the_same_object() -> None:
    """Introspect every public function with a ``confidence`` parameter."""
    seen = {}
    for qualname, fn in _public_functions().items():
        param = inspect.signature(fn).parameters.get("confidence")
        if param is not None:
            seen[qualname] = param.default
    assert len(seen) >= 15  # mtbf, survival fits, competing risks, MCF, ...
    wrong = {q: d for q, d in seen.items() if d is not DEFAULT_CONFIDENCE}
    assert wrong == {}


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def test_cli_confidence_defaults_are_the_library_default() -> None:
    """Every ``--confidence`` option of every verb defaults to the constant."""
    from relkit.cli import build_parser

    defaults = {
        verb: action.default
        for verb, sub in _subparsers(build_parser()).items()
        for action in sub._actions
        if "--confidence" in action.option_strings
    }
    assert {"mtbf", "hazards", "mcf", "trend"} <= set(defaults)
    assert {v: d for v, d in defaults.items() if d is not DEFAULT_CONFIDENCE} == {}


def test_report_assumptions_use_the_default() -> None:
    from relkit._report_common import ReportAssumptions

    assert ReportAssumptions().confidence is DEFAULT_CONFIDENCE


def test_outputs_state_their_level() -> None:
    """MTBF (Epstein & Sobel) and rate (Garwood) results carry their level.

    7 failures in 14,980 h at 0.9: 1,139.3 h to 4,559.7 h (the doctest of
    mtbf_bounds; MIL-HDBK-781A chi-square bounds).
    """
    b = metrics.mtbf_bounds(7, exposure_h=14980.0, confidence=0.9)
    assert (round(b.lower_h, 1), round(b.upper_h, 1), b.confidence) == (
        1139.3,
        4559.7,
        0.9,
    )
    assert metrics.mtbf_bounds(7, exposure_h=14980.0).confidence == 0.95
    assert metrics.failure_rate_bounds(3, exposure=10.0).confidence == 0.95
    assert scale.node_failure_rate(3, node_hours=240.0).confidence == 0.95
    exposure = pl.DataFrame({"exposure_h": [1000.0]})
    out = metrics.mtbf(pl.DataFrame({"x": [1, 2]}), exposure)
    assert out["confidence"].to_list() == [0.95]


# ---------------------------------------------------------------- rate units


def test_rate_in_either_unit_gives_the_same_answer() -> None:
    """Kokolis et al. (arXiv:2410.21680): RSC-1, 6.50 per 1000 node-days,
    2,048 nodes: MTTF = 24 / (2048 · 0.0065) = 1.8029 h, whichever unit."""
    by_hand = 24 / (2048 * 0.0065)
    per_day = metrics.mttf_at_scale_h(n_nodes=2048, failures_per_node_day=6.5e-3)
    per_1000 = metrics.mttf_at_scale_h(n_nodes=2048, failures_per_1000_node_days=6.5)
    assert per_day == pytest.approx(by_hand, rel=1e-12)
    assert per_1000 == pytest.approx(by_hand, rel=1e-12)
    a = scale.scale_projection([16384], failures_per_node_day=6.5e-3)
    b = scale.scale_projection([16384], failures_per_1000_node_days=6.5)
    assert a["mttf_h"].to_list() == pytest.approx(b["mttf_h"].to_list(), rel=1e-12)
    kw = {"n_nodes": 2000, "restart_h": 5 / 60, "interval_h": 1.0}
    assert checkpoint.expected_ettr(
        failures_per_1000_node_days=6.5, **kw
    ) == pytest.approx(
        checkpoint.expected_ettr(failures_per_node_day=6.5e-3, **kw), rel=1e-12
    )


def test_mtbf_rate_goes_into_scale_projection_unchanged() -> None:
    """The rate mtbf() prints feeds scale_projection under the same name.

    3 failures in 480 node-hours = 20 node-days: 150 per 1000 node-days; a job
    of 10 nodes then fails every 24 / (10 · 0.15) = 16 h (hand computation).
    """
    out = metrics.mtbf(
        pl.DataFrame({"x": [1, 2, 3]}), pl.DataFrame({"exposure_h": [480.0]})
    )
    rate = out["failures_per_1000_node_days"].item()
    assert rate == pytest.approx(150.0)
    proj = scale.scale_projection([80], failures_per_1000_node_days=rate)
    assert proj["mttf_h"].item() == pytest.approx(16.0, rel=1e-12)


@pytest.mark.parametrize(
    "rates",
    [{}, {"failures_per_node_day": 6.5e-3, "failures_per_1000_node_days": 6.5}],
    ids=["neither", "both"],
)
def test_exactly_one_rate_unit(rates: dict[str, float]) -> None:
    with pytest.raises(InvalidParameterError, match="exactly one of"):
        metrics.mttf_at_scale_h(n_nodes=8, **rates)
    with pytest.raises(InvalidParameterError, match="exactly one of"):
        scale.scale_projection([8], **rates)
    with pytest.raises(InvalidParameterError, match="exactly one of"):
        checkpoint.ettr_model(n_nodes=8, restart_h=0.1, interval_h=1.0, **rates)


# ---------------------------------------------------------------- Jupyter


def test_result_objects_show_a_table_in_jupyter() -> None:
    """Every public result class with ``to_dict`` also has ``_repr_html_``."""
    missing = [
        name
        for name in relkit.__all__
        if name != "SimConfig"  # an input (simulation settings), not a result
        and inspect.isclass(value := getattr(relkit, name))
        and hasattr(value, "to_dict")
        and not hasattr(value, "_repr_html_")
    ]
    assert missing == []
    html = checkpoint.checkpoint_intervals(cost_h=5 / 60, mtbf_h=24.0)._repr_html_()
    assert "<table" in html
    assert "<th style='text-align:left'>daly_h</th><td>1.945</td>" in html  # 116.7 min


def test_results_are_frozen_or_named() -> None:
    """Result classes exported at the top level are frozen dataclasses or tuples."""
    for name in ("MTBFBounds", "CheckpointIntervals", "ETTRModel", "NodeFailureRate"):
        cls = getattr(relkit, name)
        assert dataclasses.is_dataclass(cls)
        assert cls.__dataclass_params__.frozen
    assert issubclass(relkit.FailureRateBounds, tuple)
    assert relkit.FailureRateBounds._fields == ("rate", "lower", "upper", "confidence")


def _bare_tuple(annotation: object) -> bool:
    if isinstance(annotation, str):
        return annotation.startswith("tuple[") and not annotation.endswith(", ...]")
    if typing.get_origin(annotation) is tuple:
        args = typing.get_args(annotation)
        return not (len(args) == 2 and args[1] is Ellipsis)
    return False


def test_no_public_function_returns_a_bare_tuple() -> None:
    """A homogeneous ``tuple[X, ...]`` is a sequence; a fixed tuple needs names."""
    bare = [
        q
        for q, fn in _public_functions().items()
        if _bare_tuple(inspect.signature(fn).return_annotation)
    ]
    assert bare == []


def _events_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "events"
    folder.mkdir()
    for name, day in (("a.csv", "01"), ("b.csv", "02")):
        (folder / name).write_text(
            f"ts,host,failure_mode\n2024-01-{day}T00:00:00Z,n{day},gpu/xid79\n"
        )
    return folder


def test_store_repr_shows_path_version_and_tables(tmp_path: Path) -> None:
    db = tmp_path / "fleet.duckdb"
    with relkit.Store(db) as store:
        relkit.read_path(store, _events_dir(tmp_path), kind="events")
        text = repr(store)
        html = store._repr_html_()
    assert text.splitlines()[0] == f"Store({str(db)!r}, schema version 7, read-write)"
    counts = dict(line.split()[:2] for line in text.splitlines()[1:])
    assert counts["events"] == "2"
    assert counts["sources"] == "2"
    assert "fleet.duckdb" in html
    assert "<td><code>events</code></td>" in html
    assert repr(store).endswith("closed)")


def test_read_path_reads_a_directory(tmp_path: Path) -> None:
    """Each file of the directory becomes its own source, in name order."""
    folder = _events_dir(tmp_path)
    (folder / ".DS_Store").write_text("junk")
    store = relkit.Store(":memory:")
    with pytest.warns(RelkitWarning, match="hidden file"):
        results = relkit.read_path(store, folder, kind="events")
    assert [(Path(r.path).name, r.n_loaded) for r in results] == [
        ("a.csv", 1),
        ("b.csv", 1),
    ]
    assert store.table("events")["host"].to_list() == ["n01", "n02"]
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(IngestError, match="holds no files"):
        relkit.read_path(store, empty, kind="events")


# ---------------------------------------------------------------- the CLI's rates


def _cli_json(capsys: pytest.CaptureFixture[str], *argv: str) -> object:
    import json

    from relkit.cli import main

    code = main([*argv, "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize(
    ("verb", "extra"),
    [
        ("ettr", ["--gpus", "16384", "--restart-h", "0.0833", "--interval-h", "1"]),
        ("scale", ["--gpus", "16384"]),
        ("whatif", ["--gpus", "16384", "--restart-h", "0.1", "--cost-h", "0.01"]),
    ],
)
def test_cli_takes_the_rate_in_either_unit(
    capsys: pytest.CaptureFixture[str], verb: str, extra: list[str]
) -> None:
    """6.5 per 1000 node-days and 0.0065 per node-day give the same answer;
    MTTF at 16,384 GPUs = 24 / (2048 · 0.0065) = 1.8029 h (Kokolis et al.)."""
    per_1000 = _cli_json(capsys, verb, *extra, "--failures-per-1000-node-days", "6.5")
    per_day = _cli_json(capsys, verb, *extra, "--failures-per-node-day", "0.0065")
    assert per_1000 == per_day
    row = per_1000[0] if isinstance(per_1000, list) else per_1000
    assert row["mttf_h"] == pytest.approx(24 / (2048 * 0.0065), rel=1e-9)


def test_cli_refuses_both_rate_units(capsys: pytest.CaptureFixture[str]) -> None:
    from relkit.cli import main

    with pytest.raises(SystemExit) as info:
        main(
            [
                "ettr",
                "--gpus=8",
                "--restart-h=0.1",
                "--interval-h=1",
                "--failures-per-node-day=0.0065",
                "--failures-per-1000-node-days=6.5",
            ]
        )
    assert info.value.code == 2
    assert "not allowed with argument" in capsys.readouterr().err
