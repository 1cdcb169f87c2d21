"""At what SM clock do a confirmation's warm and cold graphs run? A probe for the device.

    python3 scripts/device/clock_probe.py --json RUN.json [--layers '7² 512,14² 1024'] [--seconds 3] [--out OUT.json]

On the H100 at b4f399e cuDNN's pick for the 7x7 512->512 layer ran faster cold (an L2 flush before each launch)
than warm, while ours ran 1.1 µs slower (docs/benchmarks/tensor-core-conv-h200.md). A warm graph runs the
tensor pipes back to back; a cold one rests them during each flush (a 100 MB memset). For each confirmed row of a
benchmark's JSON whose workload is one of `--template`'s presets (tensor_core_conv.json's layers: `workload`,
`index`, `config`) and matches `--layers`, this prepares the tuned config and the vendor baseline in one
confirmation process (engine.gpu.confirming.FreshProcessStopwatch) and replays each one's warm graph, then its cold
measurement, for `--seconds` each after half a second idle, while NVML is sampled every 20 ms (smi_samples.py).
A cold measurement replays the cold graph and then the flushes' graph alone (the confirmation subtracts the one
from the other), so a cold phase's clock is that of flushes and kernels together, as the cold figures' own is.
Prints a line per (workload, contender, warm or cold): the median µs a launch, the mean SM clock and power over
the phase less its first half second (power.draw is a one-second average: read it loosely).
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))

import engine  # noqa: E402
from engine.confirm import Role, Unready, contenders_for  # noqa: E402
from engine.workloads import PRESETS  # noqa: E402
from conv_ncu import confirmed_rows, picked  # noqa: E402  (this folder's conv profiler: the same --json and --layers)
from smi_samples import mean_between, sampled  # noqa: E402

SAMPLE_MS = 20
SETTLE_S = 0.5  # each phase's first half second, whose samples are left out of its means


def preset_of(template: str, description: str):
    """The template's preset a benchmark row's workload describes (the benchmarks write presets' descriptions;
    other templates' presets may share one)."""
    matches = [p for p in PRESETS.values() if p.task_name == template and p.description == description]
    if len(matches) != 1:
        raise SystemExit(f"{len(matches)} presets of {template} are described as {description!r}")
    return matches[0]


def replayed(stopwatch, index: int, cold: bool, seconds: float) -> tuple[float, float, list[float]]:
    """Replays contender `index`'s warm or cold graph for `seconds`: (start, end, seconds a launch each time)."""
    start, times = time.time(), []
    while time.time() - start < seconds:
        times.append(stopwatch.time(index, cold))
    return start, time.time(), times


def probe_row(stopwatch, template: str, row: dict, seconds: float, gpu: str) -> list[dict]:
    preset = preset_of(template, row["workload"])
    task = engine.create_task(preset.task_name, preset.args)
    entity = [[name, "ot", value] for name, value in row["config"].items()]
    contenders = [c for c in contenders_for(task, [(row["index"], entity)]) if c.role in (Role.TUNED, Role.VENDOR)]
    ready = stopwatch.prepare(task, contenders)
    phases = []
    with sampled(SAMPLE_MS, gpu) as samples:
        for index, (contender, state) in enumerate(zip(contenders, ready)):
            if isinstance(state, Unready):
                print(f"{row['workload']}: {contender.role.value} not ready: {state.message}", flush=True)
                continue
            for cold in (False, True):
                time.sleep(SETTLE_S)  # each phase starts from an idle GPU
                phases.append((contender.role.value, cold, *replayed(stopwatch, index, cold, seconds)))
    lines = []
    for who, cold, start, end, times in phases:
        clock, power, seen = mean_between(samples, start + SETTLE_S, end)
        lines.append({"workload": row["workload"], "who": who, "mode": "cold" if cold else "warm",
                      "median_us": statistics.median(times) * 1e6, "replays": len(times),
                      "sm_clock_mhz": clock, "power_w": power, "samples": seen})
        print(f"{row['workload'][:44]:44s} {who:7s} {lines[-1]['mode']}: {lines[-1]['median_us']:8.2f} µs "
              f"({len(times)} replays)  SM clock {clock:6.0f} MHz  power {power:5.0f} W  ({seen} samples)", flush=True)
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", required=True, help="a benchmark run's JSON with confirmed rows")
    parser.add_argument("--template", default="conv2d_nhwc_tensorcore", help="the template the rows' presets are of")
    parser.add_argument("--layers", default="", help="comma-separated parts of workload descriptions (default: all)")
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--out", default="")
    options = parser.parse_args()
    from engine.gpu.confirming import FreshProcessStopwatch

    rows = [row for row in confirmed_rows(options.json) if picked(row["workload"], options.layers)]
    results = []
    with FreshProcessStopwatch(0) as stopwatch:
        environment = stopwatch.environment()
        print(json.dumps(environment), flush=True)
        for row in rows:
            results += probe_row(stopwatch, options.template, row, options.seconds, environment["gpu_uuid"])
    if options.out:
        with open(options.out, "w") as f:  # NaN where a phase had no sample
            json.dump({"environment": environment, "json": options.json, "phases": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
