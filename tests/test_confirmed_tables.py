"""benchmarks/verify_bests.py's rows and benchmarks/confirmed_tables.py's docs tables and
agreement check, fed by replayed confirmations (no GPU: the same JSON a device run writes)."""
import json
import sys
from pathlib import Path

import numpy as np
import pytest

from engine import create_task
from engine.confirm import ReplayStopwatch, confirm_contenders, contenders_for
from engine.logfile import ErrorNo, Record, make_target
from engine.workloads import PRESETS

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
import confirmed_tables  # noqa: E402
import verify_bests  # noqa: E402

TARGET = make_target("h200")


def recording_of(preset: str, ours_us: float, vendor_us: float | None, jitter: float) -> tuple:
    task = create_task(PRESETS[preset].task_name, PRESETS[preset].args)
    config = task.config_space.sample(np.random.default_rng(0), 1)[0]
    default = task.default_config()
    records = []
    for k in range(5):
        for entity, index, cost, version in (
            (config.to_entity(), config.index, ours_us, "tunerweb-0.1"),
            (default.to_entity(), default.index, ours_us * 3, "tunerweb-0.1"),
            *([([], 0, vendor_us, f"baseline:{task.template.baseline_provider}")] if vendor_us else []),
        ):
            records.append(Record(target=TARGET, task_name=task.name, args=task.args, config_index=index,
                                  entity=entity, costs=(cost * 1e-6 * (1 + jitter * k),), error_no=ErrorNo.NO_ERROR,
                                  all_cost=0.1, timestamp=1.8e9 + k, tvm_version=version))
    return task, config, records


def run_json(jitter: float) -> dict:
    rows, confirmations = [], []
    for preset, ours, vendor in (("C12", 60.0, 107.0), ("G5", 15.0, 17.0), ("B-exp-a", 100.0, None)):
        task, config, records = recording_of(preset, ours, vendor, jitter)
        contenders = contenders_for(task, [(config.index, config.to_entity())])
        result = confirm_contenders(task, contenders, ReplayStopwatch(records, TARGET))
        logged = [r for r in records if r.config_index == config.index and r.entity][:1]
        rows.append(verify_bests.row_of(preset, logged, result))
        confirmations.append(result.to_dict())
    meta = {"date": "2026-12-01 10:00 UTC", "commit": "abc1234", "command": "python benchmarks/verify_bests.py ...",
            "rounds": 5, "top_k": 1, "wall_s": 1.0, "environment": confirmations[0]["environment"]}
    return {"meta": meta, "rows": rows, "failed": [], "confirmations": confirmations}


def test_a_row_gives_logged_and_re_measured_time_and_the_vendor_ratio_warm_and_cold():
    row = run_json(0.01)["rows"][0]
    assert row["workload"] == "C12" and row["logged_us"] == pytest.approx(60.0)
    assert row["ours"]["warm"]["median"] == pytest.approx(60.0 * 1.02e-6)
    assert row["vendor_ratio_warm"] == pytest.approx(107 / 60)
    assert row["vendor_ratio_cold"] == pytest.approx(107 / 60)
    assert row["remeasured_over_logged"] == pytest.approx(1.02)


def test_the_tables_say_which_goals_hold_and_two_runs_agree(tmp_path, capsys):
    docs = tmp_path / "docs"
    (docs / "conv2d-h200-logs").mkdir(parents=True)
    (docs / "conv2d-h200-logs" / "summary.json").write_text(json.dumps({"rows": [{"layer": "C12", "speedup_vs_cudnn": 0.9}]}))
    (docs / "conv2d-h200.md").write_text("# ResNet-18 on the H200\n\nold table\n")
    (docs / "operators-h200.md").write_text("# Operators\n\nold table\n")
    run, other = tmp_path / "a.json", tmp_path / "b.json"
    run.write_text(json.dumps(run_json(0.01)))
    other.write_text(json.dumps(run_json(0.012)))

    status = confirmed_tables.main([str(run), "--compare", str(other), "--write-docs", "--docs", str(docs)])

    out = capsys.readouterr().out
    assert status == 0 and "beyond 3%: none." in out
    conv2d = (docs / "conv2d-h200.md").read_text()
    assert conv2d.startswith("# ResNet-18 on the H200\n\n<!-- confirmed:begin -->") and "old table" in conv2d
    assert "| C12 | 60.00 | 61.20 (60.00–62.40) |" in conv2d and "no: claimed 0.90×, now 1.78×" in conv2d
    operators = (docs / "operators-h200.md").read_text()
    assert "| G5 |" in operators and "faster than cuBLAS | yes |" in operators
    assert "| B-exp-a |" in operators and "| 1.32 | 32% | **no** |" in operators  # 134 MB in 102 µs
    confirmed_tables.main([str(run), "--write-docs", "--docs", str(docs)])  # a second write replaces the block
    assert (docs / "conv2d-h200.md").read_text().count("<!-- confirmed:begin -->") == 1


@pytest.mark.django_db
def test_the_leaderboard_gives_back_the_runs_confirmed_medians(tmp_path):
    run = tmp_path / "a.json"
    data = run_json(0.01)
    run.write_text(json.dumps(data))

    medians = confirmed_tables.leaderboard_medians(run)

    assert medians == {r["workload"]: pytest.approx(r["ours"]["warm"]["median"]) for r in data["rows"]}


def test_each_vendor_figure_is_the_fastest_process_s(tmp_path, capsys):
    """cuDNN's search picks differently in different processes: the tables keep its best."""
    run, slower, faster = run_json(0.01), run_json(0.01), run_json(0.01)
    for data, factor in ((slower, 1.3), (faster, 0.8)):
        row = data["rows"][0]  # C12
        for cache in ("warm", "cold"):
            spread = row["vendor"][cache]
            row["vendor"][cache] = {**spread, **{k: spread[k] * factor for k in ("median", "min", "max")}}
    paths = []
    for name, data in (("a.json", run), ("b.json", slower), ("c.json", faster)):
        paths.append(tmp_path / name)
        paths[-1].write_text(json.dumps(data))
    docs = tmp_path / "docs"
    docs.mkdir()
    for page in ("conv2d-h200.md", "operators-h200.md"):
        (docs / page).write_text("# page\n")

    confirmed_tables.main([str(paths[0]), "--vendor-runs", str(paths[1]), str(paths[2]), "--write-docs", "--docs", str(docs)])

    conv2d = (docs / "conv2d-h200.md").read_text()
    vendor_us = run["rows"][0]["vendor"]["warm"]["median"] * 0.8e6
    assert f"| {vendor_us:.2f} (" in conv2d and "fastest of the 3 fresh processes that timed it (this run's and b.json, c.json" in conv2d
    assert f"{vendor_us / (run['rows'][0]['ours']['warm']['median'] * 1e6):.2f}× (" in conv2d


def test_a_vendor_figure_of_another_library_build_is_not_taken():
    run, other = run_json(0.01), run_json(0.01)
    row = other["rows"][0]  # C12
    row["vendor"]["warm"] = {**row["vendor"]["warm"], "median": row["vendor"]["warm"]["median"] * 0.5}
    row["vendor"]["details"] = {**row["vendor"].get("details", {}), "library_version": "another build"}

    confirmed_tables.keep_fastest_vendor(run, [other])

    assert run["rows"][0]["vendor_processes"] == 1
    assert run["rows"][0]["vendor"]["warm"]["median"] == pytest.approx(other["rows"][0]["vendor"]["warm"]["median"] * 2)
