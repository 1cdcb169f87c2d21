"""benchmarks/tuners.py's --keep: rows of tuners not rerun are read back from an earlier output."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
import tuners as tuners_benchmark  # noqa: E402

EARLIER = """## Median trials to 95 %

| tuner | conv-A100 |
|---|---:|
| xgb | 122.5 |

### conv-A100: 4362 configs, 1 within 95% of the best, budget 872

| tuner | seeds | median trials [95 % CI] | seeds failing | seconds |
|---|---:|---:|---:|---:|
| xgb | 10 | 122.5 [94–176] | 0% | 11.4 |
| tpe (budget 200) | 2 | 101 [67–135] | 0% | 19.1 (kept) |
| kt:basinhopping | 10 | > 872 [> 872–> 872] | 100% | 191.7 |

### c12: 2616 configs, 8 within 95% of the best, budget 523

| tuner | seeds | median trials [95 % CI] | seeds failing | seconds |
|---|---:|---:|---:|---:|
| xgb | 10 | 36 [16–40] | 0% | 19.0 |
"""


def test_kept_rows_are_the_earlier_tables_for_the_tuners_not_rerun(tmp_path):
    path = tmp_path / "tuners.md"
    path.write_text(EARLIER, encoding="utf-8")
    kept = tuners_benchmark.read_kept_rows(path, {"conv-A100"}, running={"xgb"})
    assert kept == {
        ("conv-A100", "tpe"): (101.0, 67.0, 135.0, 0.0, 2, 19.1),
        ("conv-A100", "kt:basinhopping"): (873, 873, 873, 1.0, 10, 191.7),  # "> budget" is budget + 1
    }


def test_a_later_output_replaces_an_earlier_ones_row_and_keeps_the_rest(tmp_path):
    earlier, later = tmp_path / "committed.md", tmp_path / "rerun.md"
    earlier.write_text(EARLIER, encoding="utf-8")
    later.write_text("""### conv-A100: 4362 configs, 1 within 95% of the best, budget 872

| tuner | seeds | median trials [95 % CI] | seeds failing | seconds |
|---|---:|---:|---:|---:|
| tpe (budget 200) | 50 | > 200 [> 200–> 200] | 76% | 824.2 |
""", encoding="utf-8")
    kept = tuners_benchmark.read_kept([earlier, later], {"conv-A100"}, running={"xgb"})
    assert kept[("conv-A100", "tpe")] == (201, 201, 201, 0.76, 50, 824.2)
    assert kept[("conv-A100", "kt:basinhopping")] == (873, 873, 873, 1.0, 10, 191.7)
    assert tuners_benchmark.read_kept([later, earlier], {"conv-A100"}, running={"xgb"})[("conv-A100", "tpe")][4] == 2


def test_keep_only_merges_the_kept_spaces_and_runs_nothing(tmp_path, capsys):
    earlier, merged = tmp_path / "committed.md", tmp_path / "merged.md"
    earlier.write_text(EARLIER, encoding="utf-8")
    assert tuners_benchmark.main(["--keep-only", "--keep", str(earlier), "--hub", str(tmp_path / "no-hub"),
                                  "--jobs", "1", "--out", str(merged)]) == 0
    text = merged.read_text(encoding="utf-8")
    # c12 is the one space of the kept file loaded without the hub: no broadcast, no random run
    assert "### c12: 2616 configs" in text and "### broadcast" not in text
    assert "| xgb | 10 | 36 [16–40] | 0% | 19.0 (kept) |" in text
    assert "| random |" not in text and "nothing run" in text


def test_keep_only_refuses_tuners_to_run(tmp_path):
    with pytest.raises(SystemExit):
        tuners_benchmark.main(["--keep-only", "--keep", str(tmp_path / "x.md"), "--tuners", "random"])
