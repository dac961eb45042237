"""A scheduler dump ingested in the wrong zone must not give a wrong goodput.

Second review of issue 11: job 7001 runs three attempts (10 h, 6 h and 8 h,
each after a 30 min queue) and a CSV of its 22 checkpoint save times (UTC,
60 s each). Worked by hand: wall 25 h; queue 1 h; saves 22 x 60 s = 0.3667 h;
lost after the last save of attempt 1 (09:40 to 10:00) 20 min and of attempt
2 (15:30 to 16:30) 60 min, 1.3333 h; startup to the first save 40 min - 0 in
the model (the first save's start - the attempt start - Δt): productive 22.3 h,
ETTR 0.892. The same dump read with --tz Asia/Tokyo or Europe/Berlin shifts
the attempts by whole hours: some saves fall outside every attempt, and the
run must be refused with the fix, not measured at 0.557 or 0.866.
"""

from pathlib import Path

import pytest

from relkit.cli import main

HEADER = (
    "JobID|JobIDRaw|JobName|User|Partition|State|ExitCode|Submit|Start|End|"
    "Elapsed|NNodes|AllocTRES|NodeList"
)
ATTEMPTS = [  # (state, submit, start, end, elapsed)
    ("REQUEUED", "01T00:00", "01T00:00", "01T10:00", "10:00:00"),
    ("REQUEUED", "01T10:00", "01T10:30", "01T16:30", "06:00:00"),
    ("COMPLETED", "01T16:30", "01T17:00", "02T01:00", "08:00:00"),
]
SACCT = (
    "\n".join(
        [HEADER]
        + [
            f"7001|7001|train|u|p|{state}|0:0|2024-05-{sub}:00|2024-05-{start}:00|"
            f"2024-05-{end}:00|{elapsed}|64|gres/gpu=512,node=64|gpu[001-064]"
            for state, sub, start, end, elapsed in ATTEMPTS
        ]
    )
    + "\n"
)

SAVES = [f"2024-05-01T{h:02d}:40:00Z" for h in range(10)]
SAVES += [f"2024-05-01T{h:02d}:30:00Z" for h in range(11, 16)]
SAVES += [f"2024-05-01T{h:02d}:00:00Z" for h in range(18, 24)]
SAVES += ["2024-05-02T00:00:00Z"]


def _store(tmp_path: Path, tz: str, capsys: pytest.CaptureFixture[str]) -> str:
    (tmp_path / "a.psv").write_text(SACCT, encoding="utf-8")
    rows = ["job_id,ts,save_s"] + [f"7001,{ts},60" for ts in SAVES]
    (tmp_path / "a.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    db = str(tmp_path / f"{tz.replace('/', '_')}.duckdb")
    for argv in (
        ("--kind", "sacct", "--tz", tz, str(tmp_path / "a.psv")),
        ("--kind", "checkpoints", str(tmp_path / "a.csv")),
    ):
        assert main(["ingest", "--db", db, *argv]) == 0
    capsys.readouterr()
    return db


def test_right_zone_measures_the_hand_value(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    db = _store(tmp_path, "UTC", capsys)
    assert main(["goodput", "--db", db, "--format", "json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert len(SAVES) == row["n_checkpoints"] == 22
    assert row["wall_h"] == pytest.approx(25.0)
    assert row["productive_h"] == pytest.approx(22.3)
    assert row["ettr"] == pytest.approx(0.892)


@pytest.mark.parametrize("tz", ["Asia/Tokyo", "Europe/Berlin", "America/New_York"])
def test_wrong_zone_is_refused_with_the_fix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], tz: str
) -> None:
    db = _store(tmp_path, tz, capsys)
    assert main(["goodput", "--db", db]) == 1
    captured = capsys.readouterr()
    assert captured.out == ""
    assert "fall outside every job attempt" in captured.err
    assert "--tz" in captured.err


def test_step_records_with_a_shifted_dump_say_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """C18's step records under job ids 7001/7002 with a sacct dump of those jobs
    read as Asia/Tokyo (9 h off): the steps still give 15/64, and the note says
    no scheduler attempt matched, naming --tz, instead of dropping the dump's
    queue times silently."""
    import json

    from shared_paths import SHARED

    c18 = (SHARED / "cases" / "C18-goodput-disruption-rework.jsonl").read_text(
        encoding="utf-8"
    )
    lines = []
    for line in c18.splitlines():
        rec = json.loads(line)
        rec["job_id"] = str(7000 + rec["attempt"])
        lines.append(json.dumps(rec))
    (tmp_path / "c18.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    rows = [
        HEADER,
        "7001|7001|t|u|p|NODE_FAIL|0:0|2025-08-01T00:00:00|2025-08-01T00:00:00|"
        "2025-08-01T00:00:20|00:00:20|1|gres/gpu=8,node=1|gpu017",
        "7002|7002|t|u|p|COMPLETED|0:0|2025-08-01T00:00:40|2025-08-01T00:00:50|"
        "2025-08-01T00:01:04|00:00:14|1|gres/gpu=8,node=1|gpu018",
    ]
    (tmp_path / "s.psv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    db = str(tmp_path / "s.duckdb")
    assert (
        main(
            ["ingest", "--db", db, "--kind", "checkpoints", str(tmp_path / "c18.jsonl")]
        )
        == 0
    )
    assert (
        main(
            [
                "ingest",
                "--db",
                db,
                "--kind",
                "sacct",
                "--tz",
                "Asia/Tokyo",
                str(tmp_path / "s.psv"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["goodput", "--db", db, "--format", "json"]) == 0
    captured = capsys.readouterr()
    (row,) = json.loads(captured.out)
    assert row["ettr"] == pytest.approx(15 / 64)
    assert "none of its attempts matches" in captured.err
    assert "--tz" in captured.err
