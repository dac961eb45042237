"""The main job on real data: MTBF, survival and checkpoint plans for LANL."""

import itertools
from datetime import UTC, datetime
from pathlib import Path

import polars as pl
import pytest
from shared_paths import SHARED

from relkit import answers, metrics
from relkit.errors import InsufficientDataError, SchemaError

Tables = tuple[pl.DataFrame, pl.DataFrame]


def test_ref_failure_counts_by_root_cause(lanl_tables: Tables) -> None:
    """shared/reference/README.md, real-data facts: LANL counts by root cause."""
    out = answers.mtbf_by(*lanl_tables, by=["root_cause"])
    got = dict(out.select("root_cause", "n_failures").iter_rows())
    assert got == {
        "hardware": 14341,
        "software": 5361,
        "undetermined": 2652,
        "network": 421,
        "facilities": 362,
        "human_error": 149,
        "unrecorded": 453,
    }


def test_mtbf_bounds_match_the_chi_square_formula(lanl_tables: Tables) -> None:
    """Each row's bounds are metrics.mtbf_bounds(r, exposure_h=T) (Epstein & Sobel)."""
    out = answers.mtbf_by(*lanl_tables, by=["system"], confidence=0.9)
    for row in out.iter_rows(named=True):
        b = metrics.mtbf_bounds(
            row["n_failures"], exposure_h=row["exposure_h"], confidence=0.9
        )
        assert row["mtbf_h"] == pytest.approx(row["exposure_h"] / row["n_failures"])
        assert (row["mtbf_lower_h"], row["mtbf_upper_h"]) == pytest.approx(
            (b.lower_h, b.upper_h)
        )
        assert row["failures_per_1000_node_days"] == pytest.approx(
            1000 * 24 * row["n_failures"] / row["exposure_h"]
        )


def test_ref_system_20_exposure_by_hand(lanl_tables: Tables) -> None:
    """System 20: 512 nodes in production from Dec 2001 (`1-Dec`), still in service.

    Hand computation: 2001-12-01 00:00 MST = 07:00Z; the data end is the last
    repair in the file. Node-hours = 512 × (end − start) in hours; 2,478 failures
    (PROVENANCE.md records per system).
    """
    events, assets = lanl_tables
    end = max(events["ts"].max(), events["repaired_ts"].max())
    start = datetime(2001, 12, 1, 7, 0, tzinfo=UTC)
    row = (
        answers.mtbf_by(events, assets, by=["system"])
        .filter(system="20")
        .row(0, named=True)
    )
    assert row["n_failures"] == 2478
    assert row["exposure_h"] == pytest.approx(
        512 * (end - start).total_seconds() / 3600
    )


def test_zero_failure_groups_have_only_a_lower_bound(lanl_tables: Tables) -> None:
    """Issue 2 §3: no point estimate (not 0, ∞ or NaN), one-sided lower bound kept.

    Lower bound for r = 0 over T hours at c = 0.9: 2T/χ²(0.9; 2) = T / 2.302585.
    """
    out = answers.mtbf_by(*lanl_tables, by=["system", "root_cause"], confidence=0.9)
    zero = out.filter(pl.col("n_failures") == 0)
    assert zero.height > 0
    assert zero["mtbf_h"].null_count() == zero.height
    assert zero["mtbf_lower_one_sided_h"].to_numpy() == pytest.approx(
        zero["exposure_h"].to_numpy() / 2.302585093, rel=1e-6
    )
    # every (system, root cause) pair is present: 23 systems x 7 causes
    assert out.height == 23 * 7


def test_ref_weibull_shape_below_one_for_the_five_largest_systems(
    lanl_tables: Tables,
) -> None:
    """Schroeder & Gibson, DSN 2006 (doi:10.1109/DSN.2006.5): the time between
    failures of a system is Weibull with decreasing hazard (shape < 1)."""
    fits = answers.survival_by(*lanl_tables, by=["system"], unit="system")
    top = fits.filter(pl.col("system").is_in(["2", "18", "19", "16", "20"]))
    assert top.height == 5
    assert (top["weibull_shape_upper"] < 1).all()
    assert (top["best_model"] != "exponential").all()


def test_ref_checkpoint_plan_uses_the_job_mtbf(lanl_tables: Tables) -> None:
    """A job over all 512 nodes of system 20 fails whenever any node does.

    Its MTBF is the calendar time (node-hours / 512, ≈ 33,085 h) over the
    system's outages: 2,478 node failures are 2,386 outages once failures of
    many nodes at one instant count once (13.87 h; it was 13.35 h when each
    node record counted as an interruption); Young's interval is √(2 δ M) (Young 1974,
    doi:10.1145/361147.361115) with δ = 5 min.
    """
    events, assets = lanl_tables
    plan = answers.checkpoint_plan_by_system(
        events, assets, cost_h=5 / 60, restart_h=1 / 6
    )
    row = plan.filter(system="20").row(0, named=True)
    assert row["n_nodes"] == 512
    # one interruption per outage: node records of system 20 starting
    # within 60 s of the previous one are one system incident (issue 9 §4)
    starts = sorted(events.filter(system="20")["ts"].to_list())
    outages = 1 + sum(
        (b - a).total_seconds() > 60 for a, b in itertools.pairwise(starts)
    )
    assert row["n_failures"] == 2478
    assert row["n_interruptions"] == outages == 2386
    node_h = row["node_mtbf_h"] * row["n_failures"]
    assert row["mtbf_h"] == pytest.approx(node_h / 512 / outages)
    assert row["mtbf_h"] == pytest.approx(13.87, abs=0.01)
    assert row["young_h"] == pytest.approx((2 * (5 / 60) * row["mtbf_h"]) ** 0.5)
    assert plan["mtbf_h"].is_sorted()
    assert (plan["exact_h"] < plan["young_h"]).all()


def test_unknown_grouping_column_says_what_is_allowed(lanl_tables: Tables) -> None:
    with pytest.raises(SchemaError, match="root_cause"):
        answers.mtbf_by(*lanl_tables, by=["rack_id"])


def test_empty_store_says_how_to_ingest() -> None:
    from relkit.schema import POLARS_SCHEMAS

    empty_events = pl.DataFrame(schema=POLARS_SCHEMAS["events"])
    empty_assets = pl.DataFrame(schema=POLARS_SCHEMAS["assets"])
    with pytest.raises(InsufficientDataError, match="relkit ingest"):
        answers.mtbf_by(empty_events, empty_assets)


def test_every_failure_is_a_gap(lanl_tables: Tables) -> None:
    """Nothing lost: per node, every one of the 23,739 failures ends a gap.

    4 LANL nodes have no production date ("before tracking": systems 7, 22,
    24; system 17 has no node numbers). Their first gap is no longer dropped
    (issue 9 §3): it runs from the tracking start, left-truncated there, and is
    counted in n_origin_unknown.
    """
    out = answers.survival_by(*lanl_tables, unit="node").row(0, named=True)
    assert out["n_excluded"] == 0
    assert out["n_origin_unknown"] == 4
    assert out["n_failures"] == 23739


def _other_fleet(events: pl.DataFrame, assets: pl.DataFrame) -> Tables:
    """A second, unrelated fleet dated 2024 (source 99), no `system` on its events."""
    t0 = datetime(2024, 1, 1, tzinfo=UTC)
    new_assets = pl.DataFrame(
        {
            "source_id": [99, 99],
            "host": ["gpu001", "gpu002"],
            "system": ["clusterA", "clusterA"],
            "gpus": [8, 8],
            "in_service_ts": [t0, t0],
        }
    ).cast({"source_id": pl.Int32, "gpus": pl.Int32})
    new_events = pl.DataFrame(
        {
            "source_id": [98, 98],
            "ts": [datetime(2024, 3, 1, tzinfo=UTC), datetime(2024, 4, 10, tzinfo=UTC)],
            "host": ["gpu001", "gpu002"],
            "failure_mode": ["hardware/gpu", "network/nic"],
        }
    ).cast({"source_id": pl.Int32})
    return (
        pl.concat([events, new_events], how="diagonal_relaxed"),
        pl.concat([assets, new_assets], how="diagonal_relaxed"),
    )


def test_another_fleet_in_the_store_does_not_change_lanl(lanl_tables: Tables) -> None:
    """Each asset file's observation ends at the last record about its hosts.

    Adding a 2024 fleet must leave LANL's system 10 exactly as before; the new
    cluster's exposure is 2 nodes × (2024-04-10 − 2024-01-01) = 2 × 2,400 h, with
    its events' system taken from the assets.
    """
    before = answers.mtbf_by(*lanl_tables, by=["system"])
    after = answers.mtbf_by(*_other_fleet(*lanl_tables), by=["system"])
    assert after.filter(system="10").row(0) == before.filter(system="10").row(0)
    new = after.filter(system="clusterA").row(0, named=True)
    assert new["n_failures"] == 2
    assert new["exposure_h"] == pytest.approx(2 * 100 * 24)


def test_failures_on_unknown_hosts_are_excluded_and_named(lanl_tables: Tables) -> None:
    """One failure on a host the inventory lacks is left out and named, never a
    refusal of the other 23,739 (issue 9 §1)."""
    events, assets = lanl_tables
    ghost = events.head(1).with_columns(host=pl.lit("ghost"), system=pl.lit(None))
    both = pl.concat([events, ghost])
    out = answers.mtbf_by(both, assets).row(0, named=True)
    assert (out["n_failures"], out["n_excluded"]) == (23_739, 1)
    excluded = answers.excluded_failures(both, assets)
    assert excluded["host"].to_list() == ["ghost"]
    assert excluded["reason"][0].startswith("host not in the assets table")


def test_duplicate_grouping_columns_are_merged(lanl_tables: Tables) -> None:
    out = answers.mtbf_by(*lanl_tables, by=["root_cause", "root_cause"])
    assert out.columns[0] == "root_cause"
    assert out.height == 7


def test_failures_outside_service_windows_are_excluded(lanl_tables: Tables) -> None:
    """A failure before its node entered production cannot be counted honestly:
    it is excluded with its reason, and the rest of the store is answered."""
    events, assets = lanl_tables
    early = (
        events.filter(host="s20-n27")
        .head(1)
        .with_columns(ts=pl.lit(datetime(1999, 1, 1, tzinfo=UTC)))
    )
    both = pl.concat([events, early])
    out = answers.mtbf_by(both, assets, by=["system"]).filter(system="20")
    assert out.select("n_failures", "n_excluded").row(0) == (2478, 1)
    excluded = answers.excluded_failures(both, assets)
    assert excluded["host"].to_list() == ["s20-n27"]
    assert excluded["reason"][0].startswith(
        "before the unit entered service (2001-12-01T07:00Z)"
    )


def test_declared_window_end_extends_open_ended_units(lanl_tables: Tables) -> None:
    """A declared end says the user watched until then (issue 9 §1): the 2024
    fleet's 2 open-ended nodes are at risk for all of 2024, 2 × 366 × 24 =
    17,568 node-hours, though its data ends on 2024-04-10; LANL nodes that
    were retired are not revived (an explicit out_of_service_ts holds)."""
    events, assets = _other_fleet(*lanl_tables)
    out = answers.mtbf_by(
        events,
        assets,
        by=["system"],
        window_start=datetime(2024, 1, 1, tzinfo=UTC),
        window_end=datetime(2025, 1, 1, tzinfo=UTC),
    )
    new = out.filter(system="clusterA").row(0, named=True)
    assert new["n_failures"] == 2
    assert new["exposure_h"] == pytest.approx(2 * 366 * 24)
    assert new["exposure_basis"] == "assets: open-ended units to --window-end"
    # LANL system 7 (one node, decommissioned 2002) has no time in 2024
    assert out.filter(system="7").height == 0


def test_adjacent_declared_windows_count_a_failure_once(lanl_tables: Tables) -> None:
    """Declared windows are half-open [start, end): a failure at the boundary
    (2024-03-01 00:00) belongs to the second window only."""
    events, assets = _other_fleet(*lanl_tables)
    cut = datetime(2024, 3, 1, tzinfo=UTC)
    first = answers.mtbf_by(
        events, assets, window_start=datetime(2024, 1, 1, tzinfo=UTC), window_end=cut
    ).row(0, named=True)
    second = answers.mtbf_by(
        events, assets, window_start=cut, window_end=datetime(2024, 5, 1, tzinfo=UTC)
    ).row(0, named=True)
    assert (first["n_failures"], second["n_failures"]) == (0, 2)


def test_one_unit_in_two_inventories_is_refused(lanl_tables: Tables) -> None:
    """The same host in service at once in two assets files would count twice."""
    events, assets = _other_fleet(*lanl_tables)
    again = assets.filter(source_id=99).with_columns(source_id=pl.lit(100, pl.Int32))
    with pytest.raises(InsufficientDataError, match=r"gpu001 in sources 99 and 100"):
        answers.mtbf_by(events, pl.concat([assets, again]))


def test_event_naming_another_system_is_refused(lanl_tables: Tables) -> None:
    events, assets = _other_fleet(*lanl_tables)
    wrong = events.with_columns(
        system=pl.when(pl.col("host") == "gpu001")
        .then(pl.lit("clusterB"))
        .otherwise("system")
    )
    with pytest.raises(InsufficientDataError, match=r"gpu001 \(event: 'clusterB'"):
        answers.mtbf_by(wrong, assets, by=["system"])


def test_assets_without_system_still_fit() -> None:
    """Assets with only host and in_service_ts: system is null everywhere, so
    both are in system "unassigned", which holds every failure (none lost)."""
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    assets = pl.DataFrame(
        {"source_id": [1, 1], "host": ["a", "b"], "in_service_ts": [t0, t0]}
    ).cast({"source_id": pl.Int32})
    events = pl.DataFrame(
        {
            "source_id": [2] * 4,
            "ts": [datetime(2025, 1, d, tzinfo=UTC) for d in (3, 9, 17, 30)],
            "host": ["a", "b", "a", "b"],
            "failure_mode": ["hardware/gpu"] * 4,
        }
    ).cast({"source_id": pl.Int32})
    from relkit.schema import POLARS_SCHEMAS

    assets = pl.concat(
        [pl.DataFrame(schema=POLARS_SCHEMAS["assets"]), assets], how="diagonal_relaxed"
    )
    events = pl.concat(
        [pl.DataFrame(schema=POLARS_SCHEMAS["events"]), events], how="diagonal_relaxed"
    )
    fits = answers.survival_by(events, assets, by=["system"])
    assert fits["system"].to_list() == ["unassigned"]
    assert fits["n_failures"].to_list() == [4]
    per_node = answers.survival_by(events, assets, by=["system"], unit="node")
    assert per_node["n_failures"].to_list() == [4]
    assert answers.mtbf_by(events, assets, by=["system"])["n_failures"].to_list() == [4]
    assert fits["n_excluded"].to_list() == [0]


def test_by_device_is_refused_when_assets_are_nodes(lanl_tables: Tables) -> None:
    """Node-level assets: devices are not units, so grouping by device would give
    each device its node's (or the fleet's) time at risk (issue 9 §3)."""
    events, assets = _other_fleet(*lanl_tables)
    events = events.with_columns(
        device=pl.when(pl.col("host").is_in(["gpu001", "gpu002"]))
        .then(pl.lit("0000:3b:00"))
        .otherwise(None)
    )
    with pytest.raises(SchemaError, match="cannot group by device: the assets list"):
        answers.mtbf_by(events, assets, by=["device"])


C03 = SHARED / "cases" / "C03-xid-storm-dedup.log"


@pytest.mark.skipif(not C03.exists(), reason="shared/cases not present")
def test_ref_c03_mtbf_counts_incidents_not_lines(tmp_path: Path) -> None:
    """Case C03 (shared/cases/README.md): 20 Xid lines are 3 incidents, of which 2
    are hardware/infra failures (GSP timeout, off-bus); the Xid 13 + 12 Xid 45
    application crash is not a failure. With no assets, the one host is assumed
    at risk over the log span (16:24:18 → 19:02:14 = 2.632 h)."""
    from relkit.ingest import read_file
    from relkit.store import Store

    with Store(":memory:") as store:
        read_file(store, C03, kind="kernel", tz="UTC", host="gpu001")
        events, assets = store.table("events"), store.table("assets")
    out = answers.mtbf_by(events, assets, by=["failure_mode"])
    counts = dict(out.select("failure_mode", "n_failures").iter_rows())
    assert counts == {"gpu/fallen_off_bus": 1, "gpu/gsp_firmware": 1}
    assert out["exposure_basis"].unique().to_list() == [answers.ASSUMED_BASIS]
    assert out["exposure_h"][0] == pytest.approx((2 * 3600 + 37 * 60 + 56) / 3600)


@pytest.mark.skipif(not C03.exists(), reason="shared/cases not present")
def test_assumed_exposure_is_each_hosts_own_log_span(tmp_path: Path) -> None:
    """Another host's log, months later, leaves C03's host at risk over its own
    log's span only (2.632 h); the lone-line host adds zero time at risk."""
    from relkit.ingest import read_file
    from relkit.store import Store

    other = tmp_path / "other.log"
    other.write_text(
        "2025-08-01T00:00:00+00:00 gpu999 kernel: NVRM: Xid (PCI:0000:3b:00): 13, "
        "Graphics Exception\n"
    )
    with Store(":memory:") as store:
        read_file(store, C03, kind="kernel", tz="UTC", host="gpu001")
        read_file(store, other, kind="kernel")
        events, assets = store.table("events"), store.table("assets")
    out = answers.mtbf_by(events, assets, by=["host"])
    gpu001 = out.filter(host="gpu001").row(0, named=True)
    assert gpu001["exposure_h"] == pytest.approx((2 * 3600 + 37 * 60 + 56) / 3600)
    assert gpu001["n_failures"] == 2


def test_events_without_wall_time_say_so_not_no_assets(tmp_path: Path) -> None:
    """Plain dmesg with no boot anchor: the 3 events (2 on n1, 1 on n2) keep a null
    ts (issue 3 §1: never guessed). mtbf must say that 3 events were ingested but
    none has a wall time and how to get one, not 'no assets (0 events)'; the same
    holds with an assets table, where it would otherwise count 0 failures."""
    from relkit.ingest import read_file
    from relkit.schema import POLARS_SCHEMAS
    from relkit.store import Store

    n1, n2 = tmp_path / "n1.log", tmp_path / "n2.log"
    n1.write_text(
        "[    5.100000] NVRM: Xid (PCI:0000:1b:00): 79, pid=1, GPU has fallen off\n"
        "[    9.000000] NVRM: Xid (PCI:0000:1b:00): 48, pid=1, DBE\n"
    )
    n2.write_text("[   12.000000] EDAC MC0: 1 UE memory read error on DIMM A1\n")
    with Store(":memory:") as store:
        read_file(store, n1, kind="kernel", host="n1")
        read_file(store, n2, kind="kernel", host="n2")
        events, assets = store.table("events"), store.table("assets")
    assert events.height == 3
    assert events["ts"].null_count() == 3
    with pytest.raises(InsufficientDataError) as err:
        answers.mtbf_by(events, assets)
    msg = str(err.value)
    assert msg.startswith("3 event(s) were ingested (on 2 host(s), e.g. ['n1', 'n2'])")
    assert "none has a wall time" in msg
    assert "boot anchor" in msg
    assert "dmesg -T" in msg
    assert "relkit ingest --kind kernel --tz UTC" in msg
    assert "no assets" not in msg

    start = datetime(2025, 1, 1, tzinfo=UTC)
    declared = pl.DataFrame(
        [
            dict.fromkeys(POLARS_SCHEMAS["assets"].names())
            | {"source_id": 9, "line_no": i, "host": h, "in_service_ts": start}
            for i, h in enumerate(["n1", "n2"], start=1)
        ],
        schema=POLARS_SCHEMAS["assets"],
        orient="row",
    )
    with pytest.raises(InsufficientDataError, match="none has a wall time"):
        answers.mtbf_by(events, declared, window_end=datetime(2025, 2, 1, tzinfo=UTC))
