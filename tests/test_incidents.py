"""Incident de-duplication (issue 3 §3): cases C03 and C05, and invariants.

The event frames below mirror shared/cases/C03-xid-storm-dedup.log and
C05-roce-ib-link-flap.log line by line (line_no = the file's line number), as the
kernel-log reader stores them; lines that are not events (GPU map, RPC history,
rate-limit notice, cron) are absent, as they are from the store.
"""

import inspect
from datetime import UTC, datetime, timedelta
from pathlib import Path

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from shared_paths import SHARED

from relkit.errors import InvalidParameterError, SchemaError
from relkit.incidents import (
    INCIDENT_SCHEMA,
    build_incidents,
    count_failures,
    incidents_as_failures,
    ungrouped_events,
)
from relkit.schema import POLARS_SCHEMAS
from relkit.taxonomy import FAILURE_MODES, mode_for_xid, table5_shape

CASES = SHARED / "cases"
EVENTS_SCHEMA = POLARS_SCHEMAS["events"]


def _events(rows: list[dict]) -> pl.DataFrame:
    """A store-shaped events frame from partial rows (missing columns null)."""
    base = dict.fromkeys(EVENTS_SCHEMA.names())
    full = [{**base, "source_id": 1, "count": 1, **r} for r in rows]
    return pl.DataFrame(full, schema=EVENTS_SCHEMA, orient="row")


def _t(day: int, month: int, h: int, m: int, s: float) -> datetime:
    whole = int(s)
    return datetime(2025, month, day, h, m, whole, round((s - whole) * 1e6), tzinfo=UTC)


# -- C03 -------------------------------------------------------------------------
C03_HOST = "gpu-node-01"


def c03_events() -> pl.DataFrame:
    """C03 as stored: 20 Xid lines plus the Xid-less 'fallen off the bus' line.

    Times are the ``dmesg -T`` stamps read with ``--tz UTC``; the rate-limit line
    (line 10) is not an event, the parser flags the next Xid (line 11).
    """

    def xid(line: int, hms: tuple[int, int, int], code: int, pci: str, **kw) -> dict:
        return {
            "line_no": line,
            "ts": _t(23, 2, *hms),
            "host": C03_HOST,
            "device": pci,
            "code": str(code),
            "failure_mode": mode_for_xid(code),
            **kw,
        }

    gsp, app = "0000:9b:00", "0000:61:00"
    rows = [
        xid(2, (16, 24, 18), 119, gsp),
        xid(8, (16, 24, 24), 119, gsp),
        xid(9, (16, 24, 30), 119, gsp),
        xid(11, (16, 27, 12), 119, gsp, flags="rate_limited"),
        xid(12, (16, 30, 13), 119, gsp),
        xid(13, (18, 35, 31), 13, app),
        *(xid(line, (18, 35, 32), 45, app) for line in range(14, 26)),
        xid(26, (19, 2, 11), 79, app),
        {
            "line_no": 27,
            "ts": _t(23, 2, 19, 2, 11),
            "host": C03_HOST,
            "device": app,
            "failure_mode": "gpu/fallen_off_bus",
        },
        xid(28, (19, 2, 14), 79, app),
    ]
    return _events(rows)


def test_ref_c03_frame_mirrors_the_log() -> None:
    """C03 README: 20 raw Xid lines (the 'fallen off the bus' line has no Xid)."""
    ev = c03_events()
    assert ev["code"].is_not_null().sum() == 20
    assert ev.height == 21


@pytest.mark.parametrize("window_min", [4.0, 10.0, 60.0])
def test_ref_c03_xid_storm_three_incidents(window_min: float) -> None:
    """C03 (cases/README.md): 20 Xid lines -> 3 incidents for any window 4-60 min.

    GSP timeout on 9b 16:24:18-16:30:13 (5 lines, rate-limited: lower bound,
    hardware); Xid 13 on 61 at 18:35:31 with the 12 Xid 45 folded in (user, not a
    failure); off-bus on 61 at 19:02:11 with the second Xid 79 and the
    'fallen off the bus' line (3 lines, hardware).
    """
    inc = build_incidents(c03_events(), window_min=window_min)
    assert inc.schema == INCIDENT_SCHEMA
    assert inc.height == 3
    by_mode = {r["failure_mode"]: r for r in inc.iter_rows(named=True)}
    assert set(by_mode) == {
        "gpu/gsp_firmware",
        "gpu/application_error",
        "gpu/fallen_off_bus",
    }

    gsp = by_mode["gpu/gsp_firmware"]
    assert gsp["device"] == "0000:9b:00"
    assert gsp["start_ts"] == _t(23, 2, 16, 24, 18)
    assert gsp["end_ts"] == _t(23, 2, 16, 30, 13)
    assert gsp["n_events"] == 5
    assert gsp["lower_bound_count"] is True
    assert gsp["category"] == "hardware"
    assert gsp["counts_as_failure"] is True
    assert gsp["root_code"] == "119"

    app = by_mode["gpu/application_error"]
    assert app["device"] == "0000:61:00"
    assert app["start_ts"] == _t(23, 2, 18, 35, 31)
    assert app["root_code"] == "13"
    assert app["n_sympathetic"] == 12
    assert app["n_events"] == 13
    assert app["category"] == "user"
    assert app["counts_as_failure"] is False
    assert app["lower_bound_count"] is False

    bus = by_mode["gpu/fallen_off_bus"]
    assert bus["device"] == "0000:61:00"
    assert bus["start_ts"] == _t(23, 2, 19, 2, 11)
    assert bus["end_ts"] == _t(23, 2, 19, 2, 14)
    assert bus["n_events"] == 3
    assert bus["root_code"] == "79"
    assert bus["n_sympathetic"] == 0
    assert bus["category"] == "hardware"

    assert inc["is_open"].any() is False
    assert inc["down_s"].null_count() == 3
    assert inc["n_events"].sum() == 21


def test_ref_c03_mtbf_counts_two_failures() -> None:
    """C03: MTBF for hardware/infra modes uses 2 failures, not 20 lines."""
    inc = build_incidents(c03_events())
    total = count_failures(inc, by=())
    assert total["n_failures"].item() == 2
    assert total["n_events"].item() == 8
    assert total["n_lower_bound"].item() == 1
    per_mode = count_failures(inc)
    assert per_mode.rows() == [
        ("gpu/fallen_off_bus", 1, 3, 0),
        ("gpu/gsp_firmware", 1, 5, 1),
    ]
    failures = incidents_as_failures(inc)
    assert failures.height == 2
    assert failures["ts"].to_list() == [
        _t(23, 2, 16, 24, 18),
        _t(23, 2, 19, 2, 11),
    ]
    assert failures["code"].to_list() == ["119", "79"]
    assert failures["repair_s"].null_count() == 2  # logs do not show GPU repairs
    shape = table5_shape(inc)
    counts = dict(zip(shape["component"], shape["n_interruptions"], strict=True))
    assert counts["Faulty GPU"] == 1
    assert counts["GPU System Processor"] == 1
    assert shape["n_interruptions"].sum() == 2


def test_ref_c03_solo_xid45_is_its_own_info_incident() -> None:
    """C03 sources (Xid catalogue): 'Solo: RESTART_FM'; a lone Xid 45 burst is one
    info incident, not 12 and not a failure."""
    ev = c03_events().filter(pl.col("code") == "45")
    inc = build_incidents(ev)
    assert inc.height == 1
    row = inc.row(0, named=True)
    assert row["failure_mode"] == "gpu/sympathetic"
    assert row["category"] == "info"
    assert row["n_events"] == 12
    assert row["n_sympathetic"] == 12
    assert row["counts_as_failure"] is False


def test_sympathetic_never_folds_across_devices() -> None:
    """Xid 45 on another GPU of the host within seconds stays separate."""
    ev = c03_events().with_columns(
        device=pl.when(pl.col("code") == "45")
        .then(pl.lit("0000:9b:00"))
        .otherwise(pl.col("device"))
    )
    inc = build_incidents(ev, window_min=10.0)
    app = inc.filter(pl.col("failure_mode") == "gpu/application_error")
    assert app["n_sympathetic"].item() == 0
    symp = inc.filter(pl.col("failure_mode") == "gpu/sympathetic")
    assert symp["n_events"].item() == 12
    assert symp["device"].item() == "0000:9b:00"


def test_sympathetic_folds_into_earlier_incident_that_still_covers_it() -> None:
    """An Xid 45 inside a long GSP storm folds into it, even when a shorter
    incident of another mode started later and ended before the Xid 45."""
    d = "0000:aa:00"
    t0 = datetime(2025, 1, 1, 10, tzinfo=UTC)
    rows = [
        {"line_no": i, "ts": t0 + timedelta(minutes=m), "host": "h", "device": d}
        | {"code": c, "failure_mode": mode_for_xid(int(c))}
        for i, (m, c) in enumerate(
            [(0, "119"), (8, "119"), (16, "119"), (24, "119"), (5, "46"), (20, "45")]
        )
    ]
    inc = build_incidents(_events(rows), window_min=10.0)
    gsp = inc.filter(pl.col("failure_mode") == "gpu/gsp_firmware")
    assert gsp["n_sympathetic"].item() == 1
    assert gsp["n_events"].item() == 5
    assert inc.filter(pl.col("failure_mode") == "gpu/hang")["n_events"].item() == 1


# -- C05 -------------------------------------------------------------------------
PORT_A = "0000:5c:00 enp92s0np0"
PORT_1D = "0000:1d:00 enp29s0np0"
C05_END = _t(2, 5, 12, 0, 0)


def c05_events() -> pl.DataFrame:
    """C05 as stored: 17 events (the cron line 18 is not one); line 3 duplicates
    line 2 and carries the duplicate_line flag."""

    def link(line: int, host: str, port: str, hms: tuple, *, up: bool, **kw) -> dict:
        return {
            "line_no": line,
            "ts": _t(2, 5, *hms),
            "host": host,
            "device": port,
            "failure_mode": "network/link_up" if up else "network/link_down",
            **kw,
        }

    flaps = [
        (4, (8, 0, 4.9), True),
        (5, (8, 0, 9.2), False),
        (6, (8, 0, 12.0), True),
        (7, (8, 0, 20.5), False),
        (8, (8, 0, 23.3), True),
        (9, (8, 0, 31.0), False),
        (10, (8, 0, 33.8), True),
        (11, (8, 0, 38.4), False),
        (12, (8, 0, 41.6), True),
        (13, (8, 0, 44.0), False),
        (14, (8, 0, 47.5), True),
    ]
    rows = [
        {
            "line_no": 1,
            "ts": _t(2, 5, 7, 59, 58.41),
            "host": "host-a",
            "device": "0000:5c:00",
            "failure_mode": "network/cable_module",
            "severity": "error",
        },
        link(2, "host-a", PORT_A, (8, 0, 1.1), up=False),
        link(3, "host-a", PORT_A, (8, 0, 1.1), up=False, flags="duplicate_line"),
        *(link(n, "host-a", PORT_A, hms, up=up) for n, hms, up in flaps),
        link(15, "host-c", PORT_1D, (9, 0, 0), up=True),
        {
            "line_no": 16,
            "ts": _t(2, 5, 9, 0, 2),
            "host": "host-c",
            "device": "0000:5c:00",
            "failure_mode": "network/pcie_power",
            "severity": "warning",
        },
        link(17, "host-b", PORT_1D, (11, 30, 0), up=False),
    ]
    return _events(rows)


def test_ref_c05_two_link_incidents() -> None:
    """C05 (cases/README.md), debounce 5 min: host-a port 08:00:01.1-08:00:47.5 with
    6 down transitions (the duplicate is not a 7th) and 18.9 s down, the cable
    high-temperature event linked as context; host-b port open, down >= 1800 s at
    the end of the observation (12:00:00)."""
    inc = build_incidents(c05_events(), flap_debounce_min=5.0, end_of_log=C05_END)
    links = inc.filter(pl.col("failure_mode") == "network/link_down")
    assert links.height == 2

    a = links.filter(pl.col("host") == "host-a").row(0, named=True)
    assert a["device"] == PORT_A
    assert a["start_ts"] == _t(2, 5, 8, 0, 1.1)
    assert a["end_ts"] == _t(2, 5, 8, 0, 47.5)
    assert a["n_down_transitions"] == 6
    # 7 down lines (one duplicate) + 6 up lines + the cable line as context
    assert a["n_events"] == 14
    assert a["n_context"] == 1
    assert a["down_s"] == pytest.approx(18.9, abs=1e-6)
    assert a["is_open"] is False
    assert a["category"] == "network"
    assert a["counts_as_failure"] is True

    b = links.filter(pl.col("host") == "host-b").row(0, named=True)
    assert b["device"] == PORT_1D
    assert b["is_open"] is True
    assert b["end_ts"] is None
    assert b["start_ts"] == _t(2, 5, 11, 30, 0)
    assert b["down_s"] == pytest.approx(1800.0)
    assert b["n_down_transitions"] == 1
    assert b["counts_as_failure"] is True
    assert b["n_context"] == 0


def test_ref_c05_boot_link_up_and_warnings_are_not_failures() -> None:
    """C05: host-c's boot 'Link up' is no recovery of host-b's port (key is host +
    PCI + netdev) and no incident; the PCIe power line and the cable event are
    not link failures (the cable event is context of host-a's link incident, no
    incident of its own); MTBF for link_down counts 2 incidents, not 8 lines."""
    ev = c05_events()
    inc = build_incidents(ev, end_of_log=C05_END)
    assert inc.filter(pl.col("host") == "host-c")["failure_mode"].to_list() == [
        "network/pcie_power"
    ]
    warn = inc.filter(pl.col("failure_mode") == "network/pcie_power").row(0, named=True)
    assert warn["counts_as_failure"] is False
    assert warn["category"] == "info"
    assert inc.filter(pl.col("failure_mode") == "network/cable_module").height == 0
    assert inc["n_context"].to_list() == [1, 0, 0]  # host-a link, host-b, host-c
    assert inc.filter(pl.col("failure_mode") == "network/link_up").height == 0

    orphans = ungrouped_events(ev)
    assert orphans.select("host", "line_no", "reason").rows() == [
        ("host-c", 15, "link_up_without_down")
    ]
    assert ev.filter(pl.col("failure_mode") == "network/link_down").height == 8
    counts = count_failures(inc)
    # 2 failures behind 15 lines: host-a 13 link lines + 1 cable line, host-b 1
    assert counts.rows() == [("network/link_down", 2, 15, 0)]
    assert inc["n_events"].sum() + orphans.height == ev.height


def test_ref_c05_incidents_as_failures_repair_time() -> None:
    """C05: the closed flap incident is repaired after 18.9 s down; the open one's
    repair is unknown (null), not 0 and not its 1800 s lower bound."""
    inc = build_incidents(c05_events(), end_of_log=C05_END)
    failures = incidents_as_failures(inc)
    assert failures.columns == [
        "ts",
        "host",
        "device",
        "system",
        "failure_mode",
        "code",
        "severity",
        "repair_s",
        "repaired_ts",
        "source_id",
        "line_no",
        "flags",
    ]
    assert failures["flags"].unique().to_list() == ["incident"]
    assert failures["host"].to_list() == ["host-a", "host-b"]
    assert failures["repair_s"][0] == pytest.approx(18.9)
    assert failures["repaired_ts"][0] == _t(2, 5, 8, 0, 47.5)
    assert failures["repair_s"][1] is None
    assert failures["line_no"].to_list() == [2, 17]


def test_ref_c05_mtbf_by_counts_two_link_failures() -> None:
    """C05: MTBF for the link mode counts 2 incidents, not the 8 'Link down' lines;
    incidents_as_failures feeds relkit.answers.mtbf_by unchanged."""
    from relkit.answers import mtbf_by

    failures = incidents_as_failures(build_incidents(c05_events(), end_of_log=C05_END))
    start = datetime(2025, 5, 2, 7, tzinfo=UTC)
    assets = pl.DataFrame(
        [
            dict.fromkeys(POLARS_SCHEMAS["assets"].names())
            | {"source_id": 9, "line_no": i, "host": host, "in_service_ts": start}
            for i, host in enumerate(["host-a", "host-b", "host-c"], start=1)
        ],
        schema=POLARS_SCHEMAS["assets"],
        orient="row",
    )
    result = mtbf_by(failures, assets, by=["failure_mode"], window_end=C05_END)
    assert result.select("failure_mode", "n_failures").rows() == [
        ("network/link_down", 2)
    ]
    assert result["mttr_h"].item() == pytest.approx(18.9 / 3600)


def test_c05_default_end_of_log_is_the_last_event() -> None:
    """Without end_of_log the observation ends at the last event (11:30:00, the
    cron line is no event): host-b is still open, censored at 0 s down."""
    inc = build_incidents(c05_events())
    b = inc.filter(pl.col("host") == "host-b").row(0, named=True)
    assert b["is_open"] is True
    assert b["down_s"] == 0.0


def _cable(line: int, host: str, ts: datetime, pci: str = "0000:5c:00") -> dict:
    return {
        "line_no": line,
        "ts": ts,
        "host": host,
        "device": pci,
        "failure_mode": "network/cable_module",
        "severity": "warning",
    }


def test_cable_context_needs_same_host_pci_and_window() -> None:
    """C05's rule, varied: a cable event joins the link incident of its host and
    PCI address (any netdev) within window_min of the incident's span; on another
    host, another PCI address, or 30 min before, it stays its own non-failure
    incident. host-a's flap incident is 08:00:01.1-08:00:47.5 as in C05."""
    ev = c05_events()
    extra = [
        _cable(20, "host-a", _t(2, 5, 8, 9, 0)),  # 8 min 12 s after the end: joins
        _cable(21, "host-a", _t(2, 5, 7, 30, 0)),  # 30 min before: alone
        _cable(22, "host-c", _t(2, 5, 8, 0, 30)),  # other host: alone
        _cable(23, "host-a", _t(2, 5, 8, 0, 30), "0000:5d:00"),  # other PCI: alone
    ]
    inc = build_incidents(pl.concat([ev, _events(extra)]), end_of_log=C05_END)
    a = inc.filter(
        (pl.col("host") == "host-a") & (pl.col("failure_mode") == "network/link_down")
    ).row(0, named=True)
    assert (a["n_context"], a["n_events"]) == (2, 15)  # lines 1 and 20
    assert (a["start_ts"], a["end_ts"]) == (_t(2, 5, 8, 0, 1.1), _t(2, 5, 8, 0, 47.5))
    assert a["down_s"] == pytest.approx(18.9, abs=1e-6)
    assert a["n_down_transitions"] == 6
    alone = inc.filter(pl.col("failure_mode") == "network/cable_module")
    assert alone.select("host", "device", "line_no").rows() == [
        ("host-a", "0000:5c:00", 21),
        ("host-a", "0000:5d:00", 23),
        ("host-c", "0000:5c:00", 22),
    ]
    assert alone["counts_as_failure"].to_list() == [False, False, False]
    assert count_failures(inc)["n_failures"].to_list() == [2]


def test_cable_context_joins_another_netdev_and_an_open_incident() -> None:
    """host-b's port 0000:1d:00 enp29s0np0 is down from 11:30 to the end (12:00):
    a cable event on 0000:1d:00 at 11:55 is inside the open incident (distance 0)
    and joins it, whatever the netdev; the incident stays open and starts at
    11:30."""
    ev = pl.concat(
        [
            c05_events(),
            _events([_cable(30, "host-b", _t(2, 5, 11, 55, 0), "0000:1d:00")]),
        ]
    )
    inc = build_incidents(ev, end_of_log=C05_END)
    b = inc.filter(pl.col("host") == "host-b").row(0, named=True)
    assert (b["failure_mode"], b["n_context"], b["n_events"]) == (
        "network/link_down",
        1,
        2,
    )
    assert (b["is_open"], b["start_ts"], b["end_ts"]) == (
        True,
        _t(2, 5, 11, 30, 0),
        None,
    )
    assert b["down_s"] == pytest.approx(1800.0)
    assert inc.height == 3  # host-a link, host-b link, host-c PCIe power


def test_host_level_gpu_line_joins_the_nearest_gpu_incident() -> None:
    """A gpu/fallen_off_bus event without a device (the host-level 'None of the
    NVIDIA devices were initialized') joins the fallen-off-bus incident of a GPU
    on the same host within the window, without moving its start; on a host with
    no such incident it is a host-level failure of its own."""
    t0 = datetime(2025, 5, 2, 9, tzinfo=UTC)
    rows = [
        {
            "line_no": 1,
            "ts": t0,
            "host": "n1",
            "device": "0002:21:00",
            "failure_mode": "gpu/fallen_off_bus",
        },
        {
            "line_no": 2,
            "ts": t0 + timedelta(seconds=1),
            "host": "n1",
            "device": None,
            "code": "none_initialized",
            "failure_mode": "gpu/fallen_off_bus",
        },
        {
            "line_no": 3,
            "ts": t0 + timedelta(seconds=1),
            "host": "n2",
            "device": None,
            "code": "none_initialized",
            "failure_mode": "gpu/fallen_off_bus",
        },
    ]
    inc = build_incidents(_events(rows))
    assert inc.select(
        "host", "device", "n_events", "n_context", "root_code"
    ).rows() == [
        ("n1", "0002:21:00", 2, 1, None),
        ("n2", None, 1, 0, "none_initialized"),
    ]
    assert inc["end_ts"][0] == t0
    assert inc["counts_as_failure"].to_list() == [True, True]


def test_flap_debounce_splits_incidents() -> None:
    """A down more than the debounce after the last recovery is a new incident;
    within it, the same one (gpud's flap windows, C05 sources)."""
    t0 = datetime(2025, 5, 2, 8, tzinfo=UTC)
    seq = [(0, False), (10, True), (200, False), (210, True), (900, False)]
    rows = [
        {
            "line_no": i,
            "ts": t0 + timedelta(seconds=s),
            "host": "h",
            "device": PORT_A,
            "failure_mode": "network/link_up" if up else "network/link_down",
        }
        for i, (s, up) in enumerate(seq)
    ]
    end = t0 + timedelta(seconds=1000)
    inc = build_incidents(_events(rows), flap_debounce_min=5.0, end_of_log=end)
    assert inc["n_down_transitions"].to_list() == [2, 1]
    assert inc["down_s"].to_list() == pytest.approx([20.0, 100.0])
    assert inc["is_open"].to_list() == [False, True]
    one = build_incidents(_events(rows), flap_debounce_min=20.0, end_of_log=end)
    assert one.height == 1
    assert one["n_down_transitions"].item() == 3
    assert one["down_s"].item() == pytest.approx(120.0)


def test_repeated_down_without_up_is_not_a_new_transition() -> None:
    """A second 'Link down' while down (a later time) is no transition."""
    t0 = datetime(2025, 5, 2, 8, tzinfo=UTC)
    rows = [
        {
            "line_no": i,
            "ts": t0 + timedelta(seconds=s),
            "host": "h",
            "device": PORT_A,
            "failure_mode": mode,
        }
        for i, (s, mode) in enumerate(
            [
                (0, "network/link_down"),
                (30, "network/link_down"),
                (60, "network/link_up"),
                (90, "network/link_up"),
            ]
        )
    ]
    inc = build_incidents(_events(rows))
    assert inc.height == 1
    assert inc["n_down_transitions"].item() == 1
    assert inc["down_s"].item() == pytest.approx(60.0)
    assert inc["end_ts"].item() == t0 + timedelta(seconds=60)
    assert ungrouped_events(_events(rows))["line_no"].to_list() == [3]


# -- no wall time, rules of the taxonomy, errors ----------------------------------
def test_null_ts_events_are_accounted_for() -> None:
    """Issue 3 §1 / C01: events without wall time are kept, never guessed or
    dropped silently: not grouped, listed by ungrouped_events."""
    ev = pl.concat(
        [
            c03_events(),
            _events(
                [
                    {
                        "line_no": 40,
                        "ts": None,
                        "host": C03_HOST,
                        "device": "0000:3b:00",
                        "code": "79",
                        "failure_mode": "gpu/fallen_off_bus",
                        "flags": "no_wall_time",
                        "mono_s": 1843.308145,
                    }
                ]
            ),
        ]
    )
    inc = build_incidents(ev)
    assert inc.height == 3
    assert "0000:3b:00" not in inc["device"].to_list()
    missing = ungrouped_events(ev)
    assert missing.columns == [*ev.columns, "reason"]
    assert missing.select("line_no", "reason").rows() == [(40, "no_wall_time")]
    assert inc["n_events"].sum() + missing.height == ev.height


def test_sxid_counts_only_when_fatal() -> None:
    """Contract: nvswitch/sxid counts as a failure only with severity fatal."""
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    rows = [
        {
            "line_no": i,
            "ts": t0 + timedelta(hours=i),
            "host": "h",
            "device": "nvswitch2",
            "code": "sxid:20009",
            "failure_mode": "nvswitch/sxid",
            "severity": sev,
        }
        for i, sev in enumerate(["Non-fatal", "Fatal"])
    ]
    inc = build_incidents(_events(rows))
    assert inc["counts_as_failure"].to_list() == [False, True]
    assert inc["severity"].to_list() == ["Non-fatal", "Fatal"]


def test_modes_outside_taxonomy_are_grouped_and_counted() -> None:
    """A mode the taxonomy does not name (e.g. LANL's) is kept and counted.

    Its category is the part before "/" when that is a taxonomy category
    (issue 9 §4; relkit.taxonomy.CATEGORIES holds "hardware"), no longer
    "unknown".
    """
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    rows = [
        {"line_no": i, "ts": t0 + timedelta(minutes=i), "host": "n", "code": None}
        | {"failure_mode": "hardware/memory", "system": "20"}
        for i in range(3)
    ]
    inc = build_incidents(_events(rows))
    assert inc.select("category", "counts_as_failure", "n_events", "system").rows() == [
        ("hardware", True, 3, "20")
    ]


# -- normalised events (modes outside the taxonomy), issue 9 §4 --------------------
def _uce(host: str, minute: int, line: int, **kw: object) -> dict:
    """One ``gpu_memory_uce`` row of a normalised events table at 00:MM."""
    ts = datetime(2025, 3, 1, 0, minute, tzinfo=UTC)
    return {
        "line_no": line,
        "ts": ts,
        "host": host,
        "failure_mode": "gpu_memory_uce",
        **kw,
    }


def _uce_rows(**kw: object) -> list[dict]:
    """n1 at 00:00, 00:04, 00:09, 00:30 and n2 at 00:01 (brief of issue 9 C)."""
    spots = [("n1", 0), ("n1", 4), ("n1", 9), ("n1", 30), ("n2", 1)]
    return [_uce(h, m, i, **kw) for i, (h, m) in enumerate(spots, start=2)]


def test_normalised_mode_folds_like_a_kernel_mode() -> None:
    """Hand count with window 10 min: gaps on n1 are 4, 5 (fold) and 21 min (new).

    n1: 00:00-00:09 with 3 events, then 00:30 alone; n2: 00:01 alone -> 3
    incidents. The mode is not in the taxonomy and names no category before a
    "/", so the category is "unknown" and it counts as a failure.
    """
    inc = build_incidents(_events(_uce_rows()), window_min=10.0)
    t = [datetime(2025, 3, 1, 0, m, tzinfo=UTC) for m in (0, 9, 30, 1)]
    got = inc.select(
        "host", "start_ts", "end_ts", "n_events", "category", "counts_as_failure"
    ).rows()
    assert got == [
        ("n1", t[0], t[1], 3, "unknown", True),
        ("n1", t[2], t[2], 1, "unknown", True),
        ("n2", t[3], t[3], 1, "unknown", True),
    ]
    assert count_failures(inc, by=()).rows() == [(3, 5, 0)]


def test_normalised_mode_window_edges() -> None:
    """Gap <= window folds: window 5 min keeps 00:04-00:09 (5 min) together.

    n1 gaps are 4, 5 and 21 min: window 5 -> {00:00, 00:04, 00:09}, {00:30};
    window 4.9 -> {00:00, 00:04}, {00:09}, {00:30}; plus n2's one incident.
    """
    ev = _events(_uce_rows())
    assert build_incidents(ev, window_min=5.0)["n_events"].to_list() == [3, 1, 1]
    assert build_incidents(ev, window_min=4.9)["n_events"].to_list() == [2, 1, 1, 1]


def test_category_column_of_the_events_wins() -> None:
    """The events' own category and counts_as_failure come first (issue 9 §4)."""
    rows = _uce_rows(category="hardware", counts_as_failure=False)
    ev = _events(rows).with_columns(
        category=pl.lit("hardware"), counts_as_failure=pl.lit(value=False)
    )
    modes = pl.DataFrame(
        {
            "failure_mode": ["gpu_memory_uce"],
            "category": ["software"],
            "counts_as_failure": [True],
        }
    )
    inc = build_incidents(ev, failure_modes=modes)
    assert set(inc.select("category", "counts_as_failure").rows()) == {
        ("hardware", False)
    }


def test_failure_modes_table_gives_category_and_count() -> None:
    """Without columns on the events, the store's failure_modes row decides."""
    modes = pl.DataFrame(
        {
            "failure_mode": ["gpu_memory_uce", "other"],
            "category": ["hardware", "user"],
            "counts_as_failure": [False, True],
        }
    )
    inc = build_incidents(_events(_uce_rows()), failure_modes=modes)
    assert inc.select("category", "counts_as_failure").unique().rows() == [
        ("hardware", False)
    ]
    assert count_failures(inc, by=()).rows() == [(0, 0, 0)]


def test_text_counts_column_and_null_fallthrough() -> None:
    """counts_as_failure as text; a null category falls through to the prefix.

    "hardware/memory" rows: category null on the events -> "hardware" from the
    prefix; counts "no" -> False; "yes" -> True (one incident each, 60 min
    apart with window 10).
    """
    t0 = datetime(2025, 3, 1, tzinfo=UTC)
    rows = [
        {"line_no": 2, "ts": t0, "host": "n1", "failure_mode": "hardware/memory"},
        {
            "line_no": 3,
            "ts": t0 + timedelta(minutes=60),
            "host": "n1",
            "failure_mode": "hardware/memory",
        },
    ]
    ev = _events(rows).with_columns(
        category=pl.lit(None, dtype=pl.String),
        counts_as_failure=pl.Series(["no", "yes"]),
    )
    assert build_incidents(ev).select("category", "counts_as_failure").rows() == [
        ("hardware", False),
        ("hardware", True),
    ]


def test_taxonomy_modes_ignore_the_optional_columns() -> None:
    """A taxonomy mode keeps the taxonomy's category (Xid 79: gpu/fallen_off_bus)."""
    rows = [
        {
            "line_no": 2,
            "ts": datetime(2025, 3, 1, tzinfo=UTC),
            "host": "n1",
            "device": "0000:3b:00",
            "code": "79",
            "failure_mode": "gpu/fallen_off_bus",
        }
    ]
    ev = _events(rows).with_columns(
        category=pl.lit("user"), counts_as_failure=pl.lit(value=False)
    )
    inc = build_incidents(ev)
    expected = FAILURE_MODES.filter(pl.col("failure_mode") == "gpu/fallen_off_bus")
    assert (
        inc.select("category", "counts_as_failure").rows()
        == expected.select("category", "counts_as_failure").rows()
    )


def test_bad_failure_modes_and_counts_are_refused() -> None:
    ev = _events(_uce_rows())
    with pytest.raises(SchemaError, match="counts_as_failure"):
        build_incidents(ev, failure_modes=pl.DataFrame({"failure_mode": ["x"]}))
    twice = pl.DataFrame(
        {
            "failure_mode": ["gpu_memory_uce"] * 2,
            "category": ["hardware", "user"],
            "counts_as_failure": [True, True],
        }
    )
    with pytest.raises(SchemaError, match="repeated"):
        build_incidents(ev, failure_modes=twice)
    with pytest.raises(SchemaError, match="true/false"):
        build_incidents(ev.with_columns(counts_as_failure=pl.lit("maybe")))


def test_empty_and_all_null_ts() -> None:
    empty = _events([])
    assert build_incidents(empty).schema == INCIDENT_SCHEMA
    assert build_incidents(empty).height == 0
    only_null = _events([{"line_no": 1, "host": "h", "failure_mode": "gpu/hang"}])
    assert build_incidents(only_null).height == 0
    assert ungrouped_events(only_null)["reason"].to_list() == ["no_wall_time"]
    assert count_failures(build_incidents(empty), by=()).rows() == [(0, 0, 0)]


def test_errors_name_the_problem() -> None:
    ev = c03_events()
    with pytest.raises(SchemaError, match="flags"):
        build_incidents(ev.drop("flags"))
    with pytest.raises(SchemaError, match="UTC"):
        build_incidents(ev.with_columns(pl.col("ts").dt.replace_time_zone(None)))
    with pytest.raises(InvalidParameterError, match="window_min"):
        build_incidents(ev, window_min=-1)
    with pytest.raises(InvalidParameterError, match="flap_debounce_min"):
        build_incidents(ev, flap_debounce_min=float("nan"))
    with pytest.raises(InvalidParameterError, match="time zone"):
        build_incidents(ev, end_of_log=datetime(2025, 2, 24))
    with pytest.raises(InvalidParameterError, match="before the last event"):
        build_incidents(ev, end_of_log=_t(23, 2, 12, 0, 0))
    with pytest.raises(SchemaError, match="lower_bound_count"):
        count_failures(pl.DataFrame({"failure_mode": ["x"], "counts_as_failure": [1]}))


# -- properties -----------------------------------------------------------------
_MODES = [
    "gpu/hang",
    "gpu/application_error",
    "gpu/sympathetic",
    "gpu/fallen_off_bus",
    "network/link_down",
    "network/link_up",
    "host/memory_ce",
]
_T0 = datetime(2025, 1, 1, tzinfo=UTC)


@st.composite
def event_frames(draw: st.DrawFn) -> pl.DataFrame:
    n = draw(st.integers(0, 40))
    rows = []
    for i in range(n):
        has_ts = draw(st.booleans()) or draw(st.booleans())
        rows.append(
            {
                "line_no": i + 1,
                "ts": _T0 + timedelta(seconds=draw(st.integers(0, 7200)))
                if has_ts
                else None,
                "host": draw(st.sampled_from(["a", "b"])),
                "device": draw(st.sampled_from(["d0", "d1", None])),
                "code": draw(st.sampled_from(["45", "13", None])),
                "failure_mode": draw(st.sampled_from(_MODES)),
                "flags": draw(
                    st.sampled_from([None, "rate_limited", "duplicate_line"])
                ),
            }
        )
    return _events(rows)


_PROP = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


@_PROP
@given(ev=event_frames(), window=st.floats(0, 90), debounce=st.floats(0, 30))
def test_prop_every_event_in_one_incident_or_listed(
    ev: pl.DataFrame, window: float, debounce: float
) -> None:
    """Σ n_events over incidents == events grouped; the rest are listed."""
    inc = build_incidents(ev, window_min=window, flap_debounce_min=debounce)
    missing = ungrouped_events(ev, flap_debounce_min=debounce)
    assert inc["n_events"].sum() + missing.height == ev.height
    assert missing.filter(pl.col("reason") == "no_wall_time").height == (
        ev["ts"].null_count()
    )
    assert (inc["n_events"] >= 1).all()
    assert (inc["n_sympathetic"] <= inc["n_events"]).all()
    assert inc.filter(pl.col("is_open") & pl.col("end_ts").is_not_null()).height == 0
    assert (inc["down_s"].drop_nulls() >= 0).all()


@_PROP
@given(ev=event_frames(), window=st.floats(0, 90))
def test_prop_incidents_of_one_key_never_overlap(
    ev: pl.DataFrame, window: float
) -> None:
    """Per (host, device, failure_mode), each incident ends before the next starts."""
    inc = build_incidents(ev, window_min=window)
    far = datetime(2100, 1, 1, tzinfo=UTC)
    checked = (
        inc.with_columns(_end=pl.col("end_ts").fill_null(far))
        .sort("host", "device", "failure_mode", "start_ts", nulls_last=True)
        .with_columns(
            _next=pl.col("start_ts").shift(-1).over("host", "device", "failure_mode")
        )
    )
    assert (checked["start_ts"] <= checked["_end"]).all()
    overlapping = checked.filter(pl.col("_next") <= pl.col("_end"))
    assert overlapping.height == 0, overlapping


@_PROP
@given(ev=event_frames(), w1=st.floats(0, 60), extra=st.floats(0, 60))
def test_prop_larger_window_never_more_incidents(
    ev: pl.DataFrame, w1: float, extra: float
) -> None:
    """Widening the gap window can merge incidents, never split them."""
    small = build_incidents(ev, window_min=w1).height
    large = build_incidents(ev, window_min=w1 + extra).height
    assert large <= small


# -- end to end with the kernel-log reader, once it exists -------------------------
@pytest.mark.parametrize(
    ("case", "n_incidents"),
    [("C03-xid-storm-dedup.log", 3), ("C05-roce-ib-link-flap.log", None)],
)
def test_ref_end_to_end_with_kernel_reader(
    tmp_path: Path, case: str, n_incidents: int | None
) -> None:
    """C03/C05 read by relkit.ingest.kernel.read_kernel, then de-duplicated."""
    kernel = pytest.importorskip("relkit.ingest.kernel")
    read_kernel = getattr(kernel, "read_kernel", None)
    if read_kernel is None:
        pytest.skip("relkit.ingest.kernel has no read_kernel yet")
    path = CASES / case
    if not path.exists():
        pytest.skip(f"{path} is absent")
    from relkit.store import Store

    params = inspect.signature(read_kernel).parameters
    kwargs: dict[str, str] = {}
    if "tz" in params:
        kwargs["tz"] = "UTC"
    if "host" in params and case.startswith("C03"):  # dmesg -T lines name no host
        kwargs["host"] = C03_HOST
    with Store(tmp_path / "k.duckdb") as store:
        read_kernel(store, path, **kwargs)
        events = store.table("events")
    if case.startswith("C03"):
        inc = build_incidents(events, window_min=10.0)
        assert inc.height == n_incidents
        assert sorted(inc["failure_mode"]) == [
            "gpu/application_error",
            "gpu/fallen_off_bus",
            "gpu/gsp_firmware",
        ]
        assert count_failures(inc, by=())["n_failures"].item() == 2
        gsp = inc.filter(pl.col("failure_mode") == "gpu/gsp_firmware")
        assert gsp["n_events"].item() == 5
    else:
        end = datetime(2025, 5, 2, 12, tzinfo=UTC)
        inc = build_incidents(events, end_of_log=end)
        links = inc.filter(pl.col("failure_mode") == "network/link_down").sort("host")
        assert links.height == 2
        assert links["n_down_transitions"].to_list() == [6, 1]
        assert links["down_s"][0] == pytest.approx(18.9, abs=1e-6)
        assert links["is_open"].to_list() == [False, True]
        # the cable high-temperature line (line 1) is context of host-a's incident
        assert links["n_context"].to_list() == [1, 0]
        assert links["n_events"].to_list() == [14, 1]
        assert inc.filter(pl.col("failure_mode") == "network/cable_module").height == 0


# -- issue 10 §1: an application Xid then a reset Xid; codes outside the catalogue --
def _xid(line: int, sec: float, code: int, pci: str = "0000:3b:00") -> dict:
    return {
        "line_no": line,
        "ts": _t(1, 3, 10, 0, sec),
        "host": "node7",
        "device": pci,
        "code": str(code),
        "failure_mode": mode_for_xid(code),
    }


def test_ref_app_xid_then_ctxsw_timeout_counts_the_hang_once() -> None:
    """Xid 13 at 10:00:00, Xid 109 at 10:00:03, Xid 45 at 10:00:04, one GPU.

    Expected by hand from NVIDIA's catalogue: 13 is RESTART_APP (the
    application's, not counted), 109 is RESET_GPU (the GPU is out until reset:
    one hardware failure), 45 is WORKFLOW_XID_45 (follows the others: folded).
    So 2 incidents, 1 failure; the 45 joins the nearer incident (109, 1 s).
    """
    ev = _events([_xid(1, 0.0, 13), _xid(2, 3.0, 109), _xid(3, 4.0, 45)])
    inc = build_incidents(ev).sort("start_ts")
    assert inc["failure_mode"].to_list() == ["gpu/application_error", "gpu/hang"]
    assert inc["category"].to_list() == ["user", "hardware"]
    assert inc["counts_as_failure"].to_list() == [False, True]
    assert inc["n_sympathetic"].to_list() == [0, 1]
    assert inc["root_code"].to_list() == ["13", "109"]
    assert count_failures(inc, by=())["n_failures"].item() == 1


def test_app_xid_then_hang_on_another_gpu_is_still_one_failure() -> None:
    """Xid 31 on 0000:3b:00 and Xid 109 on 0000:5e:00: still one failure (the
    hang), and the application's incident never counts (hand count)."""
    ev = _events([_xid(1, 0.0, 31), _xid(2, 2.0, 109, pci="0000:5e:00")])
    inc = build_incidents(ev)
    assert inc.filter(pl.col("counts_as_failure"))["failure_mode"].to_list() == [
        "gpu/hang"
    ]


def test_unknown_xid_counts_only_when_asked() -> None:
    """Xid 999 (not in the catalogue, 1-172) and Xid 79: 1 failure by default,
    2 with count_unknown_xid=True; the unknown one keeps category 'unknown'."""
    ev = _events([_xid(1, 0.0, 999), _xid(2, 0.0, 79, pci="0000:5e:00")])
    default = build_incidents(ev)
    assert (
        default.filter(pl.col("failure_mode") == "gpu/unknown_xid").row(0, named=True)[
            "category"
        ]
        == "unknown"
    )
    assert default["counts_as_failure"].sum() == 1
    counted = build_incidents(ev, count_unknown_xid=True)
    assert counted["counts_as_failure"].sum() == 2


def test_ref_cli_unknown_xid_named_and_counted_on_request(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A journalctl short-iso log written for this test: boot line, Xid 999 on
    0000:3b:00, Xid 79 on 0000:5e:00 a day later, a last line two days after
    boot. By hand: 1 failure (79) by default, the stderr of ingest and mtbf
    names Xid 999 and the option; --count-unknown-xid gives 2."""
    import json

    from relkit.cli import main

    log = tmp_path / "node7.log"
    log.write_text(
        "2025-03-01T00:00:05+00:00 node7 kernel: Linux version 6.8.0-45-generic "
        "(buildd@lcy02) #45-Ubuntu SMP\n"
        "2025-03-01T10:00:00+00:00 node7 kernel: NVRM: Xid (PCI:0000:3b:00): 999, "
        "pid=4242, name=python3, Ch 00000010\n"
        "2025-03-02T11:30:00+00:00 node7 kernel: NVRM: Xid (PCI:0000:5e:00): 79, "
        "pid='<unknown>', name=<unknown>, GPU has fallen off the bus.\n"
        "2025-03-03T00:00:00+00:00 node7 kernel: systemd-journald[512]: Journal "
        "stopped\n"
    )
    db = str(tmp_path / "k.duckdb")
    assert main(["ingest", "--db", db, "--kind", "kernel", str(log)]) == 0
    _, err = capsys.readouterr()
    assert "Xid 999 x1" in err
    assert "--count-unknown-xid" in err

    assert main(["mtbf", "--db", db, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)[0]["n_failures"] == 1
    assert "Xid 999 x1" in err
    assert "not counted" in err
    assert "--count-unknown-xid" in err

    assert main(["mtbf", "--db", db, "--count-unknown-xid", "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)[0]["n_failures"] == 2
    assert "counted as failures (--count-unknown-xid)" in err

    assert main(["incidents", "--db", db, "--format", "json"]) == 0
    out, err = capsys.readouterr()
    rows = {r["failure_mode"]: r["counts_as_failure"] for r in json.loads(out)}
    assert rows == {"gpu/unknown_xid": False, "gpu/fallen_off_bus": True}
    assert "Xid 999" in err


def test_ref_xid171_172_detail_the_xid48_they_follow() -> None:
    """NVIDIA's Xid catalogue: 171/172 are "additional to Xid 48 ... to
    differentiate DRAM/SRAM". Hand count: n1 prints Xid 48, 172 and 45 within
    2 s -> one SRAM failure (3 events, the 172 as context); n2 prints 48 then 171
    -> one HBM failure; n3 prints a lone 172 -> one SRAM failure of its own; n4
    prints a 171, then a 48 an hour later (beyond the 10 min window) -> two HBM
    failures. 5 counted failures, where counting every line's mode gave 7."""
    t = datetime(2025, 6, 1, tzinfo=UTC)
    rows = [
        ("n1", 0, "48", "gpu/hbm_uncorrectable"),
        ("n1", 1, "172", "gpu/sram_uncorrectable"),
        ("n1", 2, "45", "gpu/sympathetic"),
        ("n2", 100, "48", "gpu/hbm_uncorrectable"),
        ("n2", 101, "171", "gpu/hbm_uncorrectable"),
        ("n3", 200, "172", "gpu/sram_uncorrectable"),
        ("n4", 0, "171", "gpu/hbm_uncorrectable"),
        ("n4", 3600, "48", "gpu/hbm_uncorrectable"),
    ]
    events = _events(
        [
            {
                "line_no": i + 1,
                "ts": t + timedelta(seconds=s),
                "host": host,
                "device": "0000:3b:00",
                "code": code,
                "failure_mode": mode,
            }
            for i, (host, s, code, mode) in enumerate(rows)
        ]
    )
    got = build_incidents(events).sort("host", "start_ts")
    assert got.select("host", "failure_mode", "n_events", "root_code").rows() == [
        ("n1", "gpu/sram_uncorrectable", 3, "48"),
        ("n2", "gpu/hbm_uncorrectable", 2, "48"),
        ("n3", "gpu/sram_uncorrectable", 1, "172"),
        ("n4", "gpu/hbm_uncorrectable", 1, "171"),
        ("n4", "gpu/hbm_uncorrectable", 1, "48"),
    ]
    assert got["counts_as_failure"].sum() == 5
