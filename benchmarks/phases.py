"""What the phase scripts (tensor_core_gemm, tensor_core_conv, simt_gemm) share: their command
line, the JSON each phase merges its section into, the check and the tune over fixed lists and the
confirmation.

The confirmation re-times each workload's tuned best in a fresh process, interleaved with the
vendor's baseline and the default config, warm and cold. With `--top K` it takes each workload's K
fastest tuned configs into one confirmation instead and keeps the one whose worse ratio to the
vendor, warm or cold, is highest (`worse_ratio`): a goal of "faster than the vendor, warm and cold"
is one config's, and the tune ranks by warm alone, unless `--cold-screen N` has it time its N fastest
cold too; `--top K` then adds the K fastest cold to the candidates (`ColdScreen`). The picks go into the JSON's `picked` section; a
later confirmation of a JSON that has one (a copy without the `confirm` rows: the second fresh
process) re-times those picks alone, so the figure quoted is not the one that chose.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from contextlib import nullcontext
from datetime import datetime, timezone

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import engine  # noqa: E402
from provenance import git_describe  # noqa: E402
from engine.logfile import format_record  # noqa: E402
from engine.measure import to_record  # noqa: E402

# The tune keeps this many of each workload's fastest configs in the JSON: what --top may confirm.
TUNED_KEPT = 5
# --cold-screen N: after the warm tune, each workload's N fastest configs are timed cold too (L2 flushed, this
# many times each, in one fresh process for the phase), and `confirm --top K` times the K fastest warm and the
# K fastest cold. The goal is one config faster than the vendor warm and cold, and the config that is fastest
# cold need not be among the fastest warm (a decode step's weights marked evict-first: 11.5 us warm at tuning
# against 8.4, so never confirmed, docs/benchmarks/tensor-core-gemm-h200.md).
COLD_SCREEN_TIMINGS = 3


def phase_parser(doc: str, name: str) -> argparse.ArgumentParser:
    """The command line every phase script (tensor_core_gemm, tensor_core_conv, simt_gemm) starts from:
    the phase, its JSON and log (`name`.json, .log), the budget, the confirmation's rounds and candidates."""
    parser = argparse.ArgumentParser(description=doc.splitlines()[0])
    parser.add_argument("phase", choices=["check", "tune", "confirm", "table", "configs"])
    parser.add_argument("--json", default=f"{name}.json")
    parser.add_argument("--log", default=f"{name}.log")
    parser.add_argument("--budget-s", type=float, default=90.0, help="start no new workload after this many seconds")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--top", type=int, default=1, choices=range(1, TUNED_KEPT + 1), metavar=f"1..{TUNED_KEPT}",
                        help="confirm: each workload's this many fastest tuned configs (and as many fastest cold, "
                             "where the tune screened them), keeping the one whose worse ratio to the vendor (warm "
                             "or cold) is highest")
    parser.add_argument("--cold-screen", type=int, default=0, metavar="N",
                        help="tune: time each workload's N fastest configs cold as well, for confirm --top")
    return parser


def print_configs(tasks_and_configs) -> int:
    """Each (task, configs)'s configs as [args, index] lines, for compiling beforehand."""
    for task, configs in tasks_and_configs:
        for config in configs:
            print(json.dumps([task.args, config.index]))
    return 0


def merge_json(path: str, section: str, value) -> None:
    data = {}
    if os.path.exists(path):
        with open(path) as stream:
            data = json.load(stream)
    data[section] = value
    data.setdefault("meta", {}).update({"commit": git_describe(), section + "_date":
                                        datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")})
    _write_json(path, data)


def _write_json(path: str, data: dict) -> None:
    """Whole or not at all: a phase killed by its timeout mid-write leaves the JSON it had."""
    with open(path + ".tmp", "w") as stream:
        json.dump(data, stream, indent=1)
    os.replace(path + ".tmp", path)


def drop_sections(path: str, *sections: str) -> None:
    """A JSON's sections that a new tune makes stale (its confirmations and their picks), gone."""
    if not os.path.exists(path):
        return
    data = read_json(path)
    if any(section in data for section in sections):
        for section in sections:
            data.pop(section, None)
        _write_json(path, data)


def read_json(path: str) -> dict:
    with open(path) as stream:
        return json.load(stream)


def result_row(task, config, result) -> dict:
    return {"workload": engine.canonical_args(task.args), "precision": getattr(task.params, "precision", "float32"),
            "config": config.values(), "index": config.index, "ok": result.ok,
            "error_no": int(result.error_no), "error": result.error_msg[:300],
            "us": result.mean_cost * 1e6 if result.ok else None,
            "tflops": task.flops / result.mean_cost / 1e12 if result.ok else None}


def median(values: list[float]) -> float | None:
    return float(np.median(values)) if values else None


def check_listed(options, named_tasks, configs_of, build_timeout: float = 30, name_key: str | None = None,
                 annotate=None) -> int:
    """Each (name, task)'s listed configs (`configs_of(task)`) run by the GPU measurer against the
    template's reference, each row printed and merged into the JSON as its workload is done (under
    `name_key` too, where given); `annotate(measurer, task, config, row)` adds to a correct row. Exit
    status 1 where a config failed."""
    from engine.gpu.measurer import GpuMeasurer

    started, rows = time.time(), []
    with GpuMeasurer(build_timeout=build_timeout) as measurer:
        for name, task in named_tasks:
            if time.time() - started > options.budget_s:
                print(f"budget spent: {name} not checked")
                break
            configs = configs_of(task)
            for config, result in zip(configs, measurer.measure(task, configs)):
                row = {**result_row(task, config, result), **({name_key: name} if name_key else {})}
                if row["ok"] and annotate:
                    annotate(measurer, task, config, row)
                rows.append(row)
                print(f"check {name} {'ok  ' if row['ok'] else 'FAIL'} {row['config']} {row['error'][:160]}"
                      + (f" {row['us']:.1f} us" if row["ok"] else ""), flush=True)
            merge_json(options.json, "check", rows)
    failed = [r for r in rows if not r["ok"]]
    print(f"check: {len(rows) - len(failed)} of {len(rows)} configs correct ({time.time() - started:.0f} s)")
    return 1 if failed else 0


def tune_listed(options, named_tasks, configs_of, run_timeout: float | None = None) -> int:
    """Each (name, task)'s listed configs (`configs_of(task)`) timed by the GPU measurer, every record
    logged; each workload's TUNED_KEPT fastest merged into the JSON as it is done. `run_timeout`: the
    measurer's limit on one config's run (its default where None), for workloads whose reference
    check alone takes seconds."""
    from engine.gpu.measurer import GpuMeasurer

    started, bests = time.time(), {}
    drop_sections(options.json, "confirm", "picked")  # they confirmed another tune's configs
    timeouts = {} if run_timeout is None else {"run_timeout": run_timeout}
    screen = ColdScreen() if options.cold_screen else None
    with GpuMeasurer(build_timeout=30, **timeouts) as measurer, open(options.log, "a") as log, screen or nullcontext():
        for name, task in named_tasks:
            if time.time() - started > options.budget_s:
                print(f"budget spent: {name} not tuned")
                break
            configs = configs_of(task)
            results = measurer.measure(task, configs)
            for config, result in zip(configs, results):
                log.write(format_record(to_record(task, config, result, measurer.device.target)) + "\n")
            rows = [result_row(task, c, r) for c, r in zip(configs, results)]
            good = sorted((r for r in rows if r["ok"]), key=lambda r: r["us"])
            failures = [r for r in rows if not r["ok"]]
            bests[name] = {"args": task.args, "trials": len(rows), "failures": failures, "top": good[:TUNED_KEPT]}
            best = good[0] if good else None
            found = f"{best['us']:.2f} us {best['tflops']:.1f} TFLOP/s {best['config']}" if best else "none"
            print(f"tune {name}: {len(good)} of {len(rows)} ok, best {found}", flush=True)
            merge_json(options.json, "tune", bests)  # kept whatever the cold screen does
            if screen and good and time.time() - started <= options.budget_s:
                bests[name]["cold"] = screen.fastest_cold(task, good[:options.cold_screen])
                coldest = bests[name]["cold"][:1]
                print(f"tune {name}: fastest cold " + (f"{median(coldest[0]['cold_us']):.2f} us, config "
                                                       f"{coldest[0]['index']}" if coldest else "none"), flush=True)
                merge_json(options.json, "tune", bests)
    print(f"tune: {time.time() - started:.0f} s")
    return 0


class ColdScreen:
    """The tune's cold timings (--cold-screen), in a fresh measuring process started at the first workload
    (or another engine.confirm Stopwatch that `stopwatch` makes)."""

    def __init__(self, stopwatch=None) -> None:
        self.new_stopwatch = stopwatch or _fresh_process_stopwatch
        self.stopwatch = None

    def __enter__(self) -> "ColdScreen":
        return self

    def __exit__(self, *exc) -> None:
        if self.stopwatch is not None:
            self.stopwatch.close()

    def fastest_cold(self, task, rows: list[dict]) -> list[dict]:
        """The tune's `rows`, each timed cold COLD_SCREEN_TIMINGS times, fastest cold (median) first; a config
        that does not load in the measuring process is left out. A process that dies, or will not start, ends
        this workload's screen and the tune goes on (the next workload starts another)."""
        from engine.confirm import Contender, Role
        from engine.gpu.confirming import StopwatchDied

        contenders = [Contender(Role.TUNED, entity=task.config_space.get(row["index"]).to_entity(),
                                config_index=row["index"]) for row in rows]
        screened = []
        try:
            self.stopwatch = self.stopwatch or self.new_stopwatch()
            prepared = self.stopwatch.prepare(task, contenders)
            for i, (row, ready) in enumerate(zip(rows, prepared)):
                if isinstance(ready, dict):
                    timings = [self.stopwatch.time(i, cold=True) * 1e6 for _ in range(COLD_SCREEN_TIMINGS)]
                    screened.append({"index": row["index"], "config": row["config"], "cold_us": timings})
        except StopwatchDied as exc:
            print(f"cold screen of {task.name}: {exc}")
            if self.stopwatch is not None:
                self.stopwatch.close()
            self.stopwatch = None
        return sorted(screened, key=lambda r: median(r["cold_us"]))


def _fresh_process_stopwatch():
    from engine.gpu.confirming import FreshProcessStopwatch

    return FreshProcessStopwatch()


def worse_ratio(ours: dict, vendor: dict) -> float:
    """The vendor's median over ours, warm or cold, whichever is lower (0 where either has no timings)."""
    ratios = [median(vendor.get(key, [])) / median(ours[key]) if vendor.get(key) and ours.get(key) else 0.0
              for key in ("warm_us", "cold_us")]
    return min(ratios)


def pick_index(candidates: dict[int, dict], vendor: dict) -> int:
    """Of `candidates` (config index -> its confirmation timings), the one whose worse ratio to the vendor
    is highest; where that ties (a vendor without timings scores every candidate 0), one with timings of
    its own, the fastest warm."""
    def rank(item: tuple[int, dict]) -> tuple:
        warm = median(item[1].get("warm_us", []))
        return worse_ratio(item[1], vendor), warm is not None, -(warm or 0.0)
    return max(candidates.items(), key=rank)[0]


def confirmed_indexes(name: str, found: dict, picked: dict, top: int) -> list[int]:
    """The configs a workload's confirmation times: with `top` 1, an earlier confirmation's pick where
    it is still among the tuned fastest, warm or cold (the second confirmation), else the `top` fastest
    tuned and, where the tune screened them cold, the `top` fastest cold after them."""
    fastest = [row["index"] for row in found["top"]]
    coldest = [row["index"] for row in found.get("cold", [])]
    if top == 1 and name in picked:
        if picked[name] in fastest + coldest:
            return [picked[name]]
        print(f"{name}: the picked config {picked[name]} is not among the tuned fastest: confirming the fastest")
    elif top == 1 and picked:
        print(f"{name}: no pick from the first confirmation (it was cut short): confirming the fastest")
    return fastest[:top] + [index for index in coldest[:top] if index not in fastest[:top]]


def line_of(row: dict, vendor: str = "cublas", label: str = "cuBLAS") -> str:
    """A confirmed row as the confirmation prints it: ours and the vendor's median warm µs."""
    ours, theirs = row.get("ours", {}), row.get(vendor, {})
    return (f"confirm {row['workload']}: ours {median(ours.get('warm_us', [])) or ours.get('error', '?')} us, "
            f"{label} {median(theirs.get('warm_us', [])) or theirs.get('error', '?')} us")


def confirm_tuned_bests(options, template: str, vendor: str, label: str) -> list[dict]:
    """Each workload's configs (`confirmed_indexes`) re-timed in a fresh process, interleaved with the
    vendor's baseline (its timings under `vendor`, printed as `label`) and the default config, warm and
    cold; of several, `pick_index`'s, its index into the JSON's `picked` where the vendor was timed. The
    rows are merged into the JSON as they come (a run cut short keeps them) and returned."""
    from engine.confirm import Role, confirm_contenders, contenders_for
    from engine.gpu.confirming import FreshProcessStopwatch, StopwatchDied

    started, rows = time.time(), []
    data = read_json(options.json)
    tuned, picked = data.get("tune", {}), data.get("picked", {})
    stopwatch = FreshProcessStopwatch()
    try:
        for name, found in tuned.items():
            if not found["top"] or time.time() - started > options.budget_s:
                print(f"{name}: not confirmed ({'nothing tuned' if not found['top'] else 'budget spent'})")
                continue
            task = engine.create_task(template, found["args"])
            configs = [task.config_space.get(i) for i in confirmed_indexes(name, found, picked, options.top)]
            contenders = contenders_for(task, [(c.index, c.to_entity()) for c in configs])
            try:
                confirmation = confirm_contenders(task, contenders, stopwatch, options.rounds)
            except StopwatchDied as exc:
                print(f"{name}: {exc}")
                stopwatch.close()
                stopwatch = FreshProcessStopwatch()
                continue
            timed, candidates = {}, {}
            for timing in confirmation.timings:
                role = {Role.TUNED: "ours", Role.VENDOR: vendor, Role.DEFAULT: "default"}[timing.contender.role]
                entry = {"warm_us": [t * 1e6 for t in timing.warm], "cold_us": [t * 1e6 for t in timing.cold],
                         "error": timing.error, "details": timing.details}
                if role == "ours":
                    candidates[timing.contender.config_index] = entry
                else:
                    timed[role] = entry
            best = task.config_space.get(pick_index(candidates, timed.get(vendor, {})))
            row = {"workload": name, "config": best.values(), "index": best.index, "flops": task.flops,
                   "ours": candidates[best.index], **timed}
            if len(configs) > 1 or found.get("cold"):  # a pick among candidates, or the one warm and cold
                row["candidates"] = [{"index": c.index, "config": c.values(), **candidates[c.index]} for c in configs]
                if timed.get(vendor, {}).get("warm_us"):
                    picked[name] = best.index
                    merge_json(options.json, "picked", picked)
            rows.append(row)
            print(line_of(row, vendor, label), flush=True)
            merge_json(options.json, "confirm", rows)
    finally:
        stopwatch.close()
    print(f"\nconfirm: {options.rounds} interleaved rounds, {time.time() - started:.0f} s, commit {git_describe()}")
    return rows
