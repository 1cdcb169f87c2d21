"""Step 2's tables (benchmarks/conv_picks.py): one run picks each layer's template by the worse of its
warm and cold ratios, the others are quoted; a re-tuned workload's latest config is the one quoted;
cuDNN's side is its fastest process's; the goals are judged per run."""
from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
from conv_picks import main, picks, tables  # noqa: E402


def spread(us: float) -> dict:
    return {"median": us * 1e-6, "min": us * 0.99e-6, "max": us * 1.01e-6, "n": 5}


def row(workload: str, index: int, ours: tuple[float, float], vendor: tuple[float, float]) -> dict:
    return {"workload": workload, "config_index": index,
            "ours": {"warm": spread(ours[0]), "cold": spread(ours[1])},
            "vendor": {"warm": spread(vendor[0]), "cold": spread(vendor[1])}}


def run(commit: str, *rows: dict) -> dict:
    return {"meta": {"commit": commit}, "rows": list(rows), "label": f"{commit} a"}


# C4: the direct schedule is faster warm, the implicit GEMM faster on the worse side (cold).
PICK = run("p", row("C4", 1, (8.0, 20.0), (16.0, 24.0)), row("IG-C4", 2, (9.0, 10.0), (16.0, 24.0)),
           row("IG-56-64-64-k3-b32", 5, (300.0, 300.0), (240.0, 240.0)))


def test_the_pick_takes_the_template_whose_worse_ratio_is_higher_and_the_latest_config():
    later = run("q", row("IG-C4", 2, (9.1, 10.1), (16.0, 24.0)), row("C4", 1, (8.0, 20.0), (16.0, 24.0)),
                row("IG-56-64-64-k3-b32", 6, (270.0, 270.0), (240.0, 240.0)))  # tuned again: config 6
    assert picks(PICK, [later]) == {"C4": ("IG-C4", 2), "56-64-64-k3-b32": ("IG-56-64-64-k3-b32", 6)}


def test_quoted_figures_use_cudnns_fastest_process_and_judge_each_goal():
    slow_vendor = run("q", row("IG-C4", 2, (9.0, 10.0), (30.0, 40.0)),
                      row("IG-56-64-64-k3-b32", 5, (200.0, 200.0), (240.0, 240.0)))
    text = tables(PICK, [slow_vendor])
    c4 = next(line for line in text.splitlines() if line.startswith("| C4 "))
    assert "1.78× [1.74–1.81]" in c4 and "2.40×" in c4 and "holds" in c4  # 16 / 9 warm, 24 / 10 cold: the pick's cuDNN
    batched = next(line for line in text.splitlines() if line.startswith("| 56-64-64-k3-b32 "))
    assert "1.20×" in batched and "holds (≥ 1.1×)" in batched
    assert "geometric mean over the 1 batch-1 layers 1.78× warm, 2.40× cold (≥ 1.6× holds)" in text
    assert "| p a |" not in text  # the picking run is not quoted


def test_a_layer_timed_at_parity_misses_the_goal_and_the_command_line_writes_markdown(tmp_path):
    parity = run("r", row("IG-C4", 2, (16.0, 24.0), (16.0, 24.0)))
    assert "| no (> 1 beyond the interval) |" in tables(PICK, [parity])
    paths = []
    for name, content in (("confirm-a.json", PICK), ("confirm-b.json", parity)):
        path = tmp_path / name
        path.write_text(json.dumps({k: v for k, v in content.items() if k != "label"}))
        paths.append(path)
    assert main(["--pick", str(paths[0]), str(paths[1]), "--markdown", str(tmp_path / "t.md")]) == 0
    assert "| C4 | implicit GEMM (2) | r b |" in (tmp_path / "t.md").read_text()


def test_a_winograd_preset_is_one_more_schedule_of_its_layer():
    pick = run("p", row("IG-28-128-128-k3-b32", 5, (250.0, 250.0), (121.0, 121.0)),
               row("WG-28-128-128-k3-b32", 7, (110.0, 112.0), (121.0, 121.0)), row("WG-C6", 3, (9.0, 9.5), (29.0, 41.0)))
    assert picks(pick, [pick]) == {"28-128-128-k3-b32": ("WG-28-128-128-k3-b32", 7), "C6": ("WG-C6", 3)}
    quoted_run = run("q", row("WG-28-128-128-k3-b32", 7, (110.0, 110.0), (121.0, 121.0)))
    line = next(line for line in tables(pick, [quoted_run]).splitlines() if line.startswith("| 28-128-128-k3-b32 "))
    assert "| Winograd (7) | q a |" in line and "1.10×" in line and "holds (≥ 1.1×)" in line
