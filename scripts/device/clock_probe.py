"""At what SM clock do a confirmation's warm and cold graphs run? A probe for the device.

    python3 scripts/device/clock_probe.py --json RUN.json [--layers '7² 512,14² 1024'] [--seconds 3] [--out OUT.json]

On the H100 at b4f399e cuDNN's pick for the 7x7 512->512 layer ran faster cold (an L2 flush before each launch)
than warm, while ours ran 1.1 µs slower (docs/benchmarks/tensor-core-conv-h200.md). A warm graph runs the
tensor pipes back to back; a cold one rests them during each flush (a 100 MB memset). For each confirmed row of a
benchmark's JSON whose workload is a preset's description (tensor_core_conv.json's layers: `workload`, `index`,
`config`) and matches `--layers`, this prepares the tuned config and the vendor baseline in one confirmation process
(engine.gpu.confirming.FreshProcessStopwatch) and replays each one's warm graph, then its cold graph, for
`--seconds` each, back to back, while NVML is sampled every 20 ms (smi_samples.py). Prints a line per
(workload, contender, warm or cold): the median µs a launch, the mean SM clock and power.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "..", ".."), os.path.join(HERE, "..", "..", "benchmarks")]
os.environ.setdefault("CUPY_TF32", "0")

import engine  # noqa: E402
from engine.confirm import Role, Unready, contenders_for  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402
from smi_samples import mean_between, sampled  # noqa: E402

SAMPLE_MS = 20


def preset_of(description: str):
    """The preset a benchmark row's workload describes (the benchmarks write presets' descriptions)."""
    matches = [p for p in PRESETS.values() if p.description == description]
    if not matches:
        raise SystemExit(f"no preset is described as {description!r}")
    return matches[0]


def replayed(stopwatch, index: int, cold: bool, seconds: float) -> tuple[float, float, list[float]]:
    """Replays contender `index`'s warm or cold graph for `seconds`: (start, end, seconds a launch each time)."""
    start, times = time.time(), []
    while time.time() - start < seconds:
        times.append(stopwatch.time(index, cold))
    return start, time.time(), times


def probe_row(stopwatch, row: dict, seconds: float) -> list[dict]:
    preset = preset_of(row["workload"])
    task = engine.create_task(preset.task_name, preset.args)
    entity = [[name, "ot", value] for name, value in row["config"].items()]
    contenders = [c for c in contenders_for(task, [(row["index"], entity)]) if c.role in (Role.TUNED, Role.VENDOR)]
    ready = stopwatch.prepare(task, contenders)
    phases = []
    with sampled(SAMPLE_MS) as samples:
        for index, (contender, state) in enumerate(zip(contenders, ready)):
            if isinstance(state, Unready):
                print(f"{row['workload']}: {contender.role.value} not ready: {state.message}", flush=True)
                continue
            for cold in (False, True):
                time.sleep(0.5)  # each phase starts from an idle GPU
                phases.append((contender.role.value, cold, *replayed(stopwatch, index, cold, seconds)))
    lines = []
    for who, cold, start, end, times in phases:
        clock, power, seen = mean_between(samples, start, end)
        lines.append({"workload": row["workload"], "who": who, "mode": "cold" if cold else "warm",
                      "median_us": statistics.median(times) * 1e6, "replays": len(times),
                      "sm_clock_mhz": clock, "power_w": power, "samples": seen})
        print(f"{row['workload'][:44]:44s} {who:7s} {lines[-1]['mode']}: {lines[-1]['median_us']:8.2f} µs "
              f"({len(times)} replays)  SM clock {clock:6.0f} MHz  power {power:5.0f} W  ({seen} samples)", flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True, help="a benchmark run's JSON with confirmed rows")
    parser.add_argument("--layers", default="", help="comma-separated parts of workload descriptions (default: all)")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--out", default="")
    options = parser.parse_args()
    from engine.gpu.confirming import FreshProcessStopwatch

    with open(options.json) as f:
        rows = json.load(f).get("confirm", [])
    wanted = [part.strip() for part in options.layers.split(",") if part.strip()]
    rows = [row for row in rows if not wanted or any(part in row["workload"] for part in wanted)]
    results = []
    with FreshProcessStopwatch(0) as stopwatch:
        print(json.dumps(stopwatch.environment()), flush=True)
        for row in rows:
            results += probe_row(stopwatch, row, options.seconds)
    if options.out:
        with open(options.out, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
