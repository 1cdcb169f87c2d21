"""Which step of a confirmation round slows the next warm replay? A probe for the device.

    python3 scripts/device/confirm_probe.py [--only D9,C3,C12] [--json OUT.json]

In the committed A/B runs of 2026-12-01 every warm round after the first read 0.5-1.2 µs a
launch slower than the first, whatever the kernel's length. For a few workloads' committed
bests this times the tuned config's warm graph (one replay each, per launch) after each
other step of a round (its own cold graph, the vendor's warm and cold graphs, the default
config's) and after idle pauses, first with no untimed replay before the timed one, then
with one (`TimingSettings.warm_primes`, the protocol's setting). Prints a line per
workload and setting: the warm times in µs, each labelled by what ran just before.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
sys.path[:0] = [ROOT, os.path.join(ROOT, "benchmarks")]

import engine  # noqa: E402
from verify_bests import bests_of, committed_logs  # noqa: E402
from engine.confirm import Role, contenders_for  # noqa: E402

LOGS = committed_logs()


def probe(stopwatch, roles: dict) -> list[tuple[str, float]]:
    """(what ran before, the tuned warm time in µs), along one round's steps and two pauses."""
    tuned, vendor, default = roles.get(Role.TUNED), roles.get(Role.VENDOR), roles.get(Role.DEFAULT)
    seen = []

    def warm(label: str, times: int = 2) -> None:
        for i in range(times):
            seen.append((label if i == 0 else "again", stopwatch.time(tuned, cold=False) * 1e6))

    warm("start", 3)
    stopwatch.time(tuned, cold=True)
    warm("own cold")
    for name, index in (("vendor", vendor), ("default", default)):
        if index is None:
            continue
        stopwatch.time(index, cold=False)
        warm(f"{name} warm")
        stopwatch.time(index, cold=True)
        warm(f"{name} cold")
    for pause in (0.05, 1.0):
        time.sleep(pause)
        warm(f"idle {pause:g} s")
    return seen


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="D9,C3,C12")
    parser.add_argument("--json", default="")
    options = parser.parse_args()
    from engine.gpu.confirming import FreshProcessStopwatch
    from engine.gpu.runner import TimingSettings

    wanted = options.only.split(",")
    results = []
    for primes in (0, 1):
        stopwatch = FreshProcessStopwatch(0, TimingSettings(warm_primes=primes))
        model = stopwatch.target.split("-model=")[1]
        try:
            for name, logged in bests_of(LOGS, model, 1):
                if name not in wanted:
                    continue
                task = engine.create_task(logged[0].task_name, logged[0].args)
                contenders = contenders_for(task, [(r.config_index, r.entity) for r in logged])
                stopwatch.prepare(task, contenders)
                roles = {c.role: i for i, c in reversed(list(enumerate(contenders)))}
                seen = probe(stopwatch, roles)
                results.append({"workload": name, "warm_primes": primes, "seen": seen})
                print(f"{name:8s} primes={primes}: " + " ".join(f"{label}:{us:.2f}" for label, us in seen), flush=True)
        finally:
            stopwatch.close()
    if options.json:
        with open(options.json, "w") as stream:
            json.dump(results, stream, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
