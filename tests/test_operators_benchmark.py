"""benchmarks/operators.py's broadcast comparison, on the H200 log of its session-3 run: a tactic
is compared only where its whole valid space was measured (that run cut its first fp16
workload short after one batch of 48, which had read as a 1.38x win for tile_broadcast)."""
import gzip
import sys
from pathlib import Path

import engine
from engine.logfile import read_records
from engine.workloads import PRESETS

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import operators  # noqa: E402

LOG = ROOT / "docs/benchmarks/operators-h200-logs/2026-12-01/session3/s3-broadcast.log.gz"


def row_for(preset_name: str) -> dict:
    preset = PRESETS[preset_name]
    task = engine.create_task(preset.task_name, preset.args)
    with gzip.open(LOG, "rt") as stream:
        records = [r for r in read_records(stream) if r.workload_key == task.workload_key]
    row = {"workload": preset.description, "bytes": task.template.bytes_moved(task.params),
           "default_us": None, "configs_per_s": None}
    row.update(operators.tactic_bests(task, records))
    return row


def test_a_search_cut_short_is_reported_not_compared():
    row = row_for("B-exp-a-f16")
    assert row["general_measured"] + row["tile_broadcast_measured"] == 48
    assert row["general_measured"] < row["general_valid"]
    cells = [c.strip() for c in operators.broadcast_table([row], None, "fp16")[-1].split("|")]
    assert cells[4] == "—"  # no ratio
    assert cells[5] == "not compared: measured general 24 of 80, tile_broadcast 24 of 80"


def test_a_row_compares_its_best_with_a_copy_of_the_same_bytes():
    row = {**row_for("B-exp-b-f16"), "same_bytes_copy_us": 11.7}
    cells = [c.strip() for c in operators.broadcast_table([row], None, "fp16")[-1].split("|")]
    best = min(row["general_us"], row["tile_broadcast_us"])
    assert cells[9] == "11.7" and cells[10] == f"{11.7 / best * 100:.0f}"
    assert [c.strip() for c in operators.broadcast_table([row_for("B-exp-b-f16")], None, "fp16")[-1].split("|")][9:11] == ["—", "—"]


def test_whole_spaces_are_compared():
    row = row_for("B-exp-b-f16")
    assert row["general_measured"] == row["general_valid"] > 0
    assert row["tile_broadcast_measured"] == row["tile_broadcast_valid"] > 0
    cells = [c.strip() for c in operators.broadcast_table([row], None, "fp16")[-1].split("|")]
    assert cells[5] == "tile_broadcast" and float(cells[4]) > 1.5
