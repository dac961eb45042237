"""The failure-mode taxonomy (issue 3 §2) and Llama 3 Table 5."""

from pathlib import Path

import polars as pl
import pytest

from relkit.errors import InvalidParameterError, SchemaError
from relkit.schema import POLARS_SCHEMAS
from relkit.taxonomy import (
    CATEGORIES,
    FAILURE_MODES,
    LLAMA3_TABLE5,
    LOSES_NODE,
    LOSES_NODE_EXCEPTIONS,
    LOSES_NODE_RULE,
    MODE_SEVERITY,
    NOT_IN_TABLE5,
    SEVERITIES,
    STATED_SEVERITY,
    XID_BUCKET_EXCEPTIONS,
    XID_BUCKET_RULE,
    XID_CATALOGUE,
    XID_CATALOGUE_SOURCE,
    XID_CATALOGUE_VERSION,
    XID_MODES,
    XID_NO_BUCKET_MODES,
    failure_mode_info,
    mode_for_xid,
    table5_shape,
)

#: Issue 3 §2's contract codes, as issue 10 §1 (the whole catalogue, its bucket
#: deciding) leaves them: 94 (RESTART_APP) and 43 (IGNORE) moved out.
CONTRACT_XIDS = {
    "gpu/fallen_off_bus": [79],
    "gpu/hbm_uncorrectable": [48, 94, 95, 140, 64, 171],
    "gpu/sram_uncorrectable": [172],
    "gpu/gsp_firmware": [119, 120, 62],
    "gpu/nvlink": [74, 136, 144, 145, 146, 147, 148, 149, 150],
    "gpu/hang": [46, 109],
    "gpu/application_error": [13, 31],
    "gpu/sympathetic": [45, 154],
    "gpu/precursor": [63, 92],
    "gpu/informational": [43],
}

#: failure_mode -> (category, counts_as_failure, llama3_row), from the contract.
CONTRACT_ROWS = {
    "gpu/fallen_off_bus": ("hardware", True, "Faulty GPU"),
    "gpu/hbm_uncorrectable": ("hardware", True, "GPU HBM3 Memory"),
    "gpu/sram_uncorrectable": ("hardware", True, "GPU SRAM Memory"),
    "gpu/gsp_firmware": ("hardware", True, "GPU System Processor"),
    "gpu/nvlink": ("hardware", True, "Faulty GPU"),
    "gpu/hang": ("hardware", True, "Faulty GPU"),
    "gpu/application_error": ("user", False, None),
    "gpu/sympathetic": ("info", False, None),
    "gpu/precursor": ("info", False, None),
    "gpu/unknown_xid": ("unknown", False, None),  # issue 10 §1: not by default
    # issue 10 §1: modes of the rest of NVIDIA's Xid catalogue
    "gpu/reset_required": ("hardware", True, "Faulty GPU"),
    "gpu/contact_support": ("hardware", True, "Faulty GPU"),
    "gpu/power_mechanical": ("hardware", True, "Faulty GPU"),
    "gpu/informational": ("info", False, None),
    "gpu/power_smoothing": ("info", False, None),
    "gpu/driver_software": ("software", False, None),
    # nvidia-smi -q signals (issue 3 §1): the RMA signal counts, a reset never does
    "gpu/row_remap_failure": ("hardware", True, "GPU HBM3 Memory"),
    "gpu/counter_reset": ("info", False, None),
    "nvswitch/sxid": ("hardware", True, "Network Switch/Cable"),
    "network/link_down": ("network", True, "Network Switch/Cable"),
    "network/link_up": ("info", False, None),
    "network/cable_module": ("network", False, None),
    "network/pcie_power": ("info", False, None),
    "network/nccl_error": ("network", True, "NIC"),
    "network/nccl_watchdog": ("unknown", True, "NCCL Watchdog Timeouts"),
    "host/memory_ce": ("info", False, None),
    "host/memory_ue": ("hardware", True, "System Memory"),
    "host/mce": ("hardware", True, "CPU"),
    # issue 10 §2: notices, corrected records and boot-time link downs never count
    "host/mce_notice": ("info", False, None),
    "host/mce_corrected": ("info", False, None),
    "host/ghes_fatal": ("hardware", True, None),
    "host/ghes_nonfatal": ("info", False, None),
    "network/link_down_at_boot": ("info", False, None),
    # review of issue 10: a panic without a machine-check record is a node crash
    "host/kernel_panic": ("unknown", True, None),
}


@pytest.mark.parametrize(
    ("code", "mode"),
    [(c, m) for m, codes in CONTRACT_XIDS.items() for c in codes],
)
def test_ref_every_contract_xid_maps_to_its_mode(code: int, mode: str) -> None:
    """CONTRACTS3.md taxonomy table / NVIDIA Xid catalogue: code -> mode."""
    assert XID_MODES[code] == mode
    assert mode_for_xid(code) == mode
    assert mode_for_xid(str(code)) == mode


def test_ref_xid_modes_are_the_whole_catalogue() -> None:
    """Issue 10 §1: every code of the catalogue is mapped, and no other.

    Hand count of the catalogue page (analyzing-xid-catalog.html, "Xids" sheet):
    codes 1 to 172, one row each; 63 rows have the short name "Unused", 109
    are in use ("about 110" in the issue). Coverage = mapped / in catalogue.
    """
    catalogue = set(XID_CATALOGUE["code"].to_list())
    assert catalogue == set(range(1, 173))
    assert XID_CATALOGUE.height == 172
    assert (XID_CATALOGUE["name"] == "Unused").sum() == 63
    assert set(XID_MODES) == catalogue
    coverage = len(catalogue & set(XID_MODES)) / len(catalogue)
    assert coverage == 1.0
    assert XID_CATALOGUE["failure_mode"].null_count() == 0
    assert (XID_CATALOGUE["failure_mode"] != "gpu/unknown_xid").all()


@pytest.mark.parametrize("code", [0, 173, 200, 20009, 999])
def test_ref_unknown_xid_is_kept_as_unknown(code: int) -> None:
    """Issue 3 §2: unknown codes are kept with mode gpu/unknown_xid, not dropped."""
    assert mode_for_xid(code) == "gpu/unknown_xid"


@pytest.mark.parametrize("bad", ["sxid:20009", "abc", -1, "", True])
def test_mode_for_xid_refuses_non_codes(bad: object) -> None:
    """C01: an SXid code is never read as Xid 20009; malformed codes raise."""
    with pytest.raises(InvalidParameterError, match="whole number"):
        mode_for_xid(bad)  # type: ignore[arg-type]


def test_ref_failure_modes_table_matches_contract() -> None:
    """CONTRACTS3.md: one row per mode, category/counts/llama3_row as listed."""
    # the store's table adds declared_source_id (schema 4): NULL for these rows
    store_schema = dict(POLARS_SCHEMAS["failure_modes"])
    assert store_schema.pop("declared_source_id") == pl.Int32
    assert dict(FAILURE_MODES.schema) == store_schema
    assert FAILURE_MODES["failure_mode"].is_unique().all()
    got = {
        r["failure_mode"]: (r["category"], r["counts_as_failure"], r["llama3_row"])
        for r in FAILURE_MODES.iter_rows(named=True)
    }
    assert got == CONTRACT_ROWS
    assert set(FAILURE_MODES["category"]) <= set(CATEGORIES)
    assert FAILURE_MODES["description"].str.len_chars().min() > 20
    assert FAILURE_MODES["component"].null_count() == 0


def test_ref_table5_rows_named_by_taxonomy_exist() -> None:
    """Every llama3_row of the taxonomy is a component of Table 5."""
    rows = set(FAILURE_MODES["llama3_row"].drop_nulls())
    assert rows <= set(LLAMA3_TABLE5["component"])


@pytest.mark.parametrize("code", [13, 31, 68, 69])
def test_ref_application_errors_never_hardware(code: int) -> None:
    """Issue 3 §2, C03: Xid 13/31 are application-caused, never a failure; the
    catalogue's RESTART_APP bucket puts 68 (NVDEC0) and 69 (class error) there."""
    info = failure_mode_info(mode_for_xid(code))
    assert info["category"] == "user"
    assert info["category"] != "hardware"
    assert info["counts_as_failure"] is False
    assert info["llama3_row"] is None


def test_failure_mode_info_lists_codes_and_refuses_unknown() -> None:
    info = failure_mode_info("gpu/nvlink")
    assert info["xid_codes"] == [74, 136, *range(144, 151), 155]
    assert "NVIDIA" in info["description"] or "Xid" in info["description"]
    assert failure_mode_info("network/link_down")["xid_codes"] == []
    with pytest.raises(SchemaError, match="gpu/fallen_off_bus"):
        failure_mode_info("gpu/xid79")


def test_ref_llama3_table5_totals() -> None:
    """Llama 3 (arXiv:2407.21783) Table 5: 18 rows, 419 unexpected interruptions.

    PROVENANCE.md: 54 days / 419 = 3.09 h between unexpected interruptions.
    """
    assert LLAMA3_TABLE5.height == 18
    assert LLAMA3_TABLE5["interruption_count"].sum() == 419
    assert 54 * 24 / LLAMA3_TABLE5["interruption_count"].sum() == pytest.approx(
        3.09, abs=0.005
    )
    gpu = LLAMA3_TABLE5.filter(pl.col("category") == "GPU")["interruption_count"]
    assert gpu.sum() == 268  # PROVENANCE.md: 268/419 = 64.0 %, not the quoted 58.7 %


def test_ref_printed_percentages_are_not_fixed() -> None:
    """PROVENANCE.md: printed % sum to 94.9 and Faulty GPU prints 30.1 % (148/419 =
    35.3 %). The transcription keeps the printed value; table5_shape recomputes."""
    printed = LLAMA3_TABLE5["frac_as_printed"]
    assert printed.sum() == pytest.approx(0.949, abs=1e-9)
    faulty = LLAMA3_TABLE5.row(0, named=True)
    assert faulty["component"] == "Faulty GPU"
    assert faulty["interruption_count"] == 148
    assert faulty["frac_as_printed"] == pytest.approx(0.301)

    # one incident per interruption, in Table 5's rows: frac = count / 419
    mode_of_row = {
        r["llama3_row"]: r["failure_mode"]
        for r in FAILURE_MODES.filter(pl.col("llama3_row").is_not_null())
        .unique("llama3_row", keep="first", maintain_order=True)
        .iter_rows(named=True)
    }
    modes = [
        mode_of_row.get(r["component"], "gpu/unknown_xid")
        for r in LLAMA3_TABLE5.iter_rows(named=True)
        for _ in range(r["interruption_count"])
    ]
    inc = pl.DataFrame({"failure_mode": modes, "counts_as_failure": True})
    shape = table5_shape(inc)
    row = shape.row(0, named=True)
    assert row["component"] == "Faulty GPU"
    assert row["n_interruptions"] == 148
    assert row["frac"] == pytest.approx(148 / 419)
    assert round(row["frac"], 4) == 0.3532
    assert shape["frac"].sum() == pytest.approx(1.0)


def test_table5_shape_has_every_row_and_zeros() -> None:
    """Every Table 5 component is present (0 where none), plus the 'other' row."""
    inc = pl.DataFrame(
        {
            "failure_mode": [
                "gpu/hbm_uncorrectable",
                "gpu/hbm_uncorrectable",
                "gpu/unknown_xid",
                "gpu/application_error",
                "nvswitch/sxid",
            ],
            "counts_as_failure": [True, True, True, False, False],
        }
    )
    shape = table5_shape(inc)
    assert shape.height == 19
    assert shape["component"].to_list()[:18] == LLAMA3_TABLE5["component"].to_list()
    assert shape["component"][-1] == NOT_IN_TABLE5
    counts = dict(zip(shape["component"], shape["n_interruptions"], strict=True))
    assert counts["GPU HBM3 Memory"] == 2
    assert counts[NOT_IN_TABLE5] == 1
    assert counts["Faulty GPU"] == 0
    assert counts["Network Switch/Cable"] == 0  # a non-fatal SXid is no failure
    assert shape["n_interruptions"].sum() == 3
    assert dict(zip(shape["component"], shape["frac"], strict=True))[
        "GPU HBM3 Memory"
    ] == pytest.approx(2 / 3)


def test_table5_shape_empty_and_errors() -> None:
    empty = pl.DataFrame(
        schema={"failure_mode": pl.String, "counts_as_failure": pl.Boolean}
    )
    shape = table5_shape(empty)
    assert shape.height == 19
    assert shape["n_interruptions"].sum() == 0
    assert shape["frac"].null_count() == 19
    with pytest.raises(SchemaError, match="counts_as_failure"):
        table5_shape(pl.DataFrame({"failure_mode": ["gpu/hang"]}))
    bad = pl.DataFrame({"failure_mode": ["hardware/cpu"], "counts_as_failure": [True]})
    with pytest.raises(SchemaError, match="hardware/cpu"):
        table5_shape(bad)


def test_severity_vocabulary_is_lower_case_data() -> None:
    """Issue 3 (events' severity column): one lower-case vocabulary, kept as data.
    Every mode has a default severity from it; 'Fatal' stated on a line is fatal
    and 'Non-fatal' an error; the defaults below are the classifier's contract."""
    assert SEVERITIES == ("info", "warning", "error", "critical", "fatal")
    assert all(s == s.lower() for s in SEVERITIES)
    assert set(MODE_SEVERITY) == set(FAILURE_MODES["failure_mode"])
    assert set(MODE_SEVERITY.values()) <= set(SEVERITIES)
    assert STATED_SEVERITY == {"fatal": "fatal", "nonfatal": "error"}
    assert {m: MODE_SEVERITY[m] for m in ("gpu/sympathetic", "network/link_up")} == {
        "gpu/sympathetic": "info",
        "network/link_up": "info",
    }
    assert MODE_SEVERITY["gpu/precursor"] == "warning"
    assert MODE_SEVERITY["gpu/row_remap_failure"] == "critical"  # nvidia-smi's value
    assert MODE_SEVERITY["gpu/fallen_off_bus"] == "error"


def test_ref_boot_failures_are_the_faulty_gpu_row() -> None:
    """Issue 3 §2: GPUs missing at boot share gpu/fallen_off_bus, Llama 3 Table 5
    row 'Faulty GPU' (148 of 419 interruptions), hardware, counted."""
    info = failure_mode_info("gpu/fallen_off_bus")
    assert (info["llama3_row"], info["category"], info["counts_as_failure"]) == (
        "Faulty GPU",
        "hardware",
        True,
    )
    assert "RmInitAdapter failed!" in info["description"]
    assert "None of the NVIDIA devices were initialized" in info["description"]


# -- issue 10 §1: NVIDIA's Xid catalogue, whole --------------------------------
#: Codes the issue names, with the mode and (category, counts) the catalogue's
#: immediate bucket gives them (catalogue page, read row by row).
ISSUE10_CODES = {
    61: ("gpu/gsp_firmware", "hardware", True),  # Unused, CONTACT_SUPPORT
    68: ("gpu/application_error", "user", False),  # RESTART_APP
    69: ("gpu/application_error", "user", False),  # RESTART_APP
    137: ("gpu/informational", "info", False),  # IGNORE (XID_137_FLOW)
    143: ("gpu/fallen_off_bus", "hardware", True),  # RESET_GPU
    155: ("gpu/nvlink", "hardware", True),  # RESET_GPU
    156: ("gpu/reset_required", "hardware", True),  # RESET_GPU
    157: ("gpu/precursor", "info", False),  # IGNORE
    158: ("gpu/hang", "hardware", True),  # RESET_GPU
    159: ("gpu/sympathetic", "info", False),  # CHECK_UVM
    160: ("gpu/informational", "info", False),  # IGNORE
    161: ("gpu/informational", "info", False),  # IGNORE
    162: ("gpu/power_smoothing", "info", False),  # no bucket
    163: ("gpu/power_smoothing", "info", False),
    164: ("gpu/power_smoothing", "info", False),
    165: ("gpu/power_smoothing", "info", False),
    166: ("gpu/driver_software", "software", False),  # no bucket, CC mode
    167: ("gpu/fallen_off_bus", "hardware", True),  # no bucket, PCIe fatal
    168: ("gpu/precursor", "info", False),  # no bucket
    169: ("gpu/gsp_firmware", "hardware", True),  # no bucket, as 62
    170: ("gpu/driver_software", "software", False),  # no bucket, CC mode
    171: ("gpu/hbm_uncorrectable", "hardware", True),  # no bucket, as Xid 48
    172: ("gpu/sram_uncorrectable", "hardware", True),  # no bucket, as Xid 48
}


@pytest.mark.parametrize(("code", "expected"), sorted(ISSUE10_CODES.items()))
def test_ref_issue10_named_codes_map_right(
    code: int, expected: tuple[str, str, bool]
) -> None:
    """Issue 10 §1 names 61, 68, 69, 137, 143 and 155-172 (none mapped before)."""
    mode, category, counts = expected
    assert mode_for_xid(code) == mode
    row = XID_CATALOGUE.filter(pl.col("code") == code).row(0, named=True)
    assert (row["failure_mode"], row["category"], row["counts_as_failure"]) == (
        mode,
        category,
        counts,
    )


@pytest.mark.parametrize(
    ("code", "bucket", "investigatory"),
    [
        (13, "RESTART_APP", "WORKFLOW_XID_13"),
        (43, "IGNORE", "CONTACT_SUPPORT"),
        (45, "WORKFLOW_XID_45", "Solo: RESTART_FM Not Solo: IGNORE (follow other Xid)"),
        (48, "WORKFLOW_XID_48", "WORKFLOW_XID_48"),
        (79, "RESTART_BM", "CONTACT_SUPPORT"),
        (94, "RESTART_APP", "IGNORE (sympathetic)"),
        (109, "RESET_GPU", "CONTACT_SUPPORT"),
        (137, "IGNORE", "XID_137_FLOW"),
        (142, "CONTACT_SUPPORT", None),
        (154, "XID_154", "N/A Informational only regarding another Xid"),
        (159, "CHECK_UVM", "SYMPATHETIC_REPORT_SOLO"),
        (162, None, None),
    ],
)
def test_ref_catalogue_keeps_both_buckets(
    code: int, bucket: str | None, investigatory: str | None
) -> None:
    """The catalogue's own buckets are columns, as the page prints them."""
    row = XID_CATALOGUE.filter(pl.col("code") == code).row(0, named=True)
    assert row["resolution_bucket"] == bucket
    assert row["investigatory_bucket"] == investigatory


def test_every_mode_agrees_with_the_bucket_rule() -> None:
    """Each code's (category, counts_as_failure) is its bucket's, and so every
    mode's codes agree; codes without a bucket take relkit's documented choice."""
    for row in XID_CATALOGUE.iter_rows(named=True):
        got = (row["category"], row["counts_as_failure"])
        bucket = row["resolution_bucket"]
        if bucket is None:
            assert row["code"] in XID_NO_BUCKET_MODES
            assert row["failure_mode"] == XID_NO_BUCKET_MODES[row["code"]]
        elif row["code"] in XID_BUCKET_EXCEPTIONS:
            assert got == ("hardware", True), row
        else:
            assert got == XID_BUCKET_RULE[bucket], row
    per_mode = XID_CATALOGUE.group_by("failure_mode").agg(
        pl.col("category").n_unique(), pl.col("counts_as_failure").n_unique()
    )
    assert (per_mode["category"] == 1).all()
    assert (per_mode["counts_as_failure"] == 1).all()
    # the rule itself, as the issue states it
    assert XID_BUCKET_RULE["IGNORE"] == ("info", False)
    assert XID_BUCKET_RULE["RESTART_APP"] == ("user", False)
    for hard in (
        "RESET_GPU",
        "RESTART_BM",
        "WORKFLOW_XID_48",
        "WORKFLOW_NVLINK_ERR",
        "WORKFLOW_NVLINK5_ERR",
        "CONTACT_SUPPORT",
        "CHECK_MECHANICALS",
    ):
        assert XID_BUCKET_RULE[hard] == ("hardware", True)
    assert XID_BUCKET_RULE["WORKFLOW_XID_45"] == ("info", False)
    assert XID_BUCKET_RULE["XID_154"] == ("info", False)
    assert set(XID_CATALOGUE["resolution_bucket"].drop_nulls()) == set(XID_BUCKET_RULE)
    # blank in the catalogue: 162-172, hand count 11
    assert sorted(XID_NO_BUCKET_MODES) == list(range(162, 173))


def test_catalogue_version_and_source_are_recorded() -> None:
    """Issue 10 §1: the taxonomy records the catalogue's version and source."""
    import relkit.taxonomy as tax

    assert "docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html" in (
        XID_CATALOGUE_SOURCE
    )
    assert "Xid-Catalog.xlsx" in XID_CATALOGUE_SOURCE
    assert "R575" in XID_CATALOGUE_VERSION
    assert "1-172" in XID_CATALOGUE_VERSION
    doc = tax.__doc__ or ""
    assert "172 codes" in doc
    assert "R575" in doc
    assert "XID_CATALOGUE_SOURCE" in doc


def test_catalogue_columns_and_applies_flags() -> None:
    """XID_CATALOGUE's columns; applicability read from the page (Xid 74 NVLink:
    A100 and H100 only; 121 C2C: GB200 only; 54 aux power: all but GB200)."""
    assert XID_CATALOGUE.columns[:8] == [
        "code",
        "mnemonic",
        "name",
        "resolution_bucket",
        "investigatory_bucket",
        "failure_mode",
        "category",
        "counts_as_failure",
    ]
    flags = ["applies_a100", "applies_h100", "applies_b100", "applies_gb200"]
    assert XID_CATALOGUE.columns[8:] == flags

    def applies(code: int) -> list[bool]:
        return list(XID_CATALOGUE.filter(pl.col("code") == code).select(flags).row(0))

    assert applies(74) == [True, True, False, False]
    assert applies(121) == [False, False, False, True]
    assert applies(54) == [True, True, True, False]
    row = XID_CATALOGUE.filter(pl.col("code") == 79).row(0, named=True)
    assert row["mnemonic"] == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert row["name"] == "GPU has fallen off the bus"


def test_catalogue_is_shipped_inside_the_package() -> None:
    """The data file sits in relkit/ (hatch's wheel ships the package directory,
    non-.py files included), read with importlib.resources, not a repo path."""
    from importlib.resources import files

    data = files("relkit").joinpath("xid_catalogue.csv")
    assert data.is_file()
    header = data.read_text().splitlines()[0]
    assert header.startswith("code,mnemonic,name,resolution_bucket")
    assert "Trigger" not in data.read_text()  # facts only, no trigger prose


def test_unknown_xid_is_not_a_failure_by_default() -> None:
    """Issue 10 §1: a code outside the catalogue (Xid 999) is kept as
    gpu/unknown_xid, category unknown, not counted."""
    info = failure_mode_info(mode_for_xid(999))
    assert info["failure_mode"] == "gpu/unknown_xid"
    assert (info["category"], info["counts_as_failure"]) == ("unknown", False)


def test_store_gets_the_new_modes_when_opened_for_writing(tmp_path: Path) -> None:
    """Issue 10 §1: a store seeded by an older taxonomy (here: without the
    catalogue's new modes and with unknown_xid counted) gets the current rows on
    its next open for writing; `relkit events` joins that table."""
    from relkit.store import Store

    db = tmp_path / "old.duckdb"
    with Store(db) as store:
        con = store.connection
        con.execute(
            "DELETE FROM failure_modes WHERE failure_mode = 'gpu/reset_required'"
        )
        con.execute(
            "UPDATE failure_modes SET counts_as_failure = true "
            "WHERE failure_mode = 'gpu/unknown_xid'"
        )
    with Store(db) as store:
        modes = store.table("failure_modes")
    assert set(modes["failure_mode"]) == set(FAILURE_MODES["failure_mode"])
    assert modes.height == FAILURE_MODES.height
    row = modes.filter(pl.col("failure_mode") == "gpu/unknown_xid").row(0, named=True)
    assert row["counts_as_failure"] is False


def test_xid94_contained_memory_error_is_a_gpu_memory_failure() -> None:
    """Xid 94 is the one exception to the bucket rule: its bucket RESTART_APP
    would make a contained uncorrectable ECC error a user fault that counts
    nowhere (its Xid 63 row remap beside it is IGNORE); relkit counts it as
    gpu/hbm_uncorrectable, Llama 3's "GPU HBM3 Memory" row."""
    assert set(XID_BUCKET_EXCEPTIONS) == {94}
    row = XID_CATALOGUE.filter(pl.col("code") == 94).row(0, named=True)
    assert row["resolution_bucket"] == "RESTART_APP"
    assert (row["failure_mode"], row["category"], row["counts_as_failure"]) == (
        "gpu/hbm_uncorrectable",
        "hardware",
        True,
    )
    assert failure_mode_info("gpu/hbm_uncorrectable")["llama3_row"] == (
        "GPU HBM3 Memory"
    )


# ---------------------------------------------------------------- loses_node


def test_loses_node_covers_every_mode_by_rule_and_exceptions() -> None:
    """LOSES_NODE_RULE: a counted hardware or network failure loses the node; the
    exceptions (each with its reason) are the opposite of the rule."""
    assert set(LOSES_NODE) == set(FAILURE_MODES["failure_mode"])
    assert set(LOSES_NODE_EXCEPTIONS) <= set(LOSES_NODE)
    assert all(len(reason) > 40 for reason in LOSES_NODE_EXCEPTIONS.values())
    assert "hardware" in LOSES_NODE_RULE
    assert "network" in LOSES_NODE_RULE
    for mode, category, counts in FAILURE_MODES.select(
        "failure_mode", "category", "counts_as_failure"
    ).iter_rows():
        by_rule = counts and category in ("hardware", "network")
        expected = (not by_rule) if mode in LOSES_NODE_EXCEPTIONS else by_rule
        assert LOSES_NODE[mode] is expected, mode
    assert all(isinstance(v, bool) for v in LOSES_NODE.values())


@pytest.mark.parametrize(
    ("mode", "loses"),
    [
        # GPU / host hardware, NVSwitch, node-level link down: drained or replaced
        ("gpu/fallen_off_bus", True),
        ("gpu/hbm_uncorrectable", True),
        ("gpu/nvlink", True),
        ("nvswitch/sxid", True),
        ("host/memory_ue", True),
        ("host/mce", True),
        ("host/ghes_fatal", True),
        ("network/link_down", True),
        ("host/kernel_panic", True),  # exception: the node crashed and reboots
        ("gpu/unknown_xid", True),  # exception: drained until understood
        # software, user errors, network errors that leave the node up, info
        ("gpu/application_error", False),
        ("gpu/driver_software", False),
        ("network/nccl_watchdog", False),
        ("network/link_up", False),
        ("gpu/precursor", False),
        ("host/memory_ce", False),
    ],
)
def test_ref_loses_node_of_named_modes(mode: str, loses: object) -> None:
    """Issue 11 §2: True where recovery drains or replaces the node (GPU/host
    hardware, NVSwitch, node-level link down); False for software, user errors,
    network errors that leave the node up, and information."""
    assert LOSES_NODE[mode] is loses
    assert failure_mode_info(mode)["loses_node"] is loses


def test_loses_node_agrees_with_the_simulators_drains() -> None:
    """For every mode the simulator has that interrupts jobs and the taxonomy
    knows, loses_node is the simulator's `drains` (relkit/simulate/_modes.py)."""
    from relkit.simulate._modes import BEHAVIOUR

    checked = {
        mode: b.drains
        for mode, b in BEHAVIOUR.items()
        if b.interrupts and mode in LOSES_NODE
    }
    assert len(checked) >= 13  # the logged modes that end jobs
    wrong = {m: (LOSES_NODE[m], d) for m, d in checked.items() if LOSES_NODE[m] != d}
    assert not wrong, wrong
    # both sides of the split are exercised
    assert set(checked.values()) == {True, False}
    # simulator-only causes (software/bug, host/ssd, ...) are not taxonomy modes
    others = {m for m, b in BEHAVIOUR.items() if b.interrupts} - set(checked)
    assert others.isdisjoint(FAILURE_MODES["failure_mode"])
