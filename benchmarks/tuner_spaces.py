"""The ten exhaustive recordings benchmarks/tuners.py compares tuners on, each in two forms:
our task and replay records, and the same configs as a Kernel Tuner cache file.

- `c12`: the H200 recording of ResNet-18's C12 layer (tests/data, 2,616 configs of the
  844,800 of `conv2d_nchw.cuda`; the tuners see the 2,616, see benchmarks/tuners.py).
- `broadcast`: fp16 [256, 64, 56, 56] exp on the H200, every one of its 160 configs
  (docs/benchmarks/operators-h200-logs, session 3's 32-bit general run).
- `conv-<GPU>`, `dedisp-<GPU>`: Kernel Tuner's brute-forced hub caches (../shared/data/
  benchmark_hub, 4,362 and 11,130 configs) on the A100, A4000, MI250X and W6600, read by
  engine.kernel_tuner as records of one workload on four GPU models (as tunerweb imports
  them), so each GPU's space can be tuned with the other three GPUs' records as transfer
  history.

Kernel Tuner sees the same configs: its parameters are the knobs (the option positions of
our recordings' knobs, the hub caches' own values), restricted to the recorded configs.
"""
from __future__ import annotations

import functools
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engine
from engine import kernel_tuner
from engine.logfile import Record
from engine.replay import load_recording, restrict_to_recording
from engine.task import Task

ROOT = Path(__file__).resolve().parent.parent
C12_RECORDING = ROOT / "tests/data/c12_h200_recording.log.gz"
BROADCAST_RECORDING = ROOT / "docs/benchmarks/operators-h200-logs/2026-12-01/session3/s9-broadcast-32bit-general.log.gz"
BROADCAST_ARGS = [["TENSOR", [256, 64, 56, 56], "float16"], "exp"]
HUB_GPUS = ("A100", "A4000", "MI250X", "W6600")
HUB_KERNELS = {"conv": "convolution_milo", "dedisp": "dedispersion_milo"}


@dataclass
class BenchSpace:
    name: str
    task: Task                      # its space restricted to the recorded configs
    records: list[Record]           # one GPU model, one workload
    transfer: list[Record] = field(default_factory=list)  # the same workload on other GPUs
    kt_params: dict[str, list] = field(default_factory=dict)
    kt_cache: dict[str, dict] = field(default_factory=dict)  # Kernel Tuner's cache entries

    @functools.cached_property
    def best_cost(self) -> float:
        return min(r.mean_cost for r in self.records if r.ok)

    def kt_key(self, values: dict[str, Any]) -> str:
        return ",".join(str(values[k]) for k in self.kt_params)

    def write_kt_cache(self, path: Path) -> Path:
        body = {"device_name": self.name, "kernel_name": "kernel", "problem_size": [1], "objective": "time",
                "tune_params_keys": list(self.kt_params), "tune_params": self.kt_params, "cache": self.kt_cache}
        path.write_text(json.dumps(body), encoding="utf-8")
        return path


def _recorded_space(name: str, task: Task, records: list[Record]) -> BenchSpace:
    """Our recording as Kernel Tuner parameters: each knob's option positions the recording uses."""
    task = restrict_to_recording(task, records)
    space = task.config_space
    params = {knob.name: space.used_options(p) for p, knob in enumerate(space.knobs)}
    bench = BenchSpace(name, task, records, kt_params=params)
    for record in records:
        digits = space.get(space.index_of(record.entity)).digits
        values = dict(zip(params, digits))
        time_ms = record.mean_cost * 1e3 if record.ok else "RuntimeFailedConfig"
        bench.kt_cache.setdefault(bench.kt_key(values), {**values, "time": time_ms, "times": [time_ms]})
    return bench


def c12_space() -> BenchSpace:
    records = load_recording(C12_RECORDING)
    first = records[0]
    return _recorded_space("c12", engine.create_task(first.task_name, first.args), records)


def broadcast_space() -> BenchSpace:
    key = ("broadcast_nchw", json.dumps(BROADCAST_ARGS, separators=(",", ":"), sort_keys=True))
    records = [r for r in load_recording(BROADCAST_RECORDING) if r.workload_key == key]
    return _recorded_space("broadcast", engine.create_task("broadcast_nchw", BROADCAST_ARGS), records)


# -- the hub caches -----------------------------------------------------------------------
def _hub_cache(hub: Path, kernel: str, gpu: str) -> tuple[dict, list[Record]]:
    """A hub cache as engine.kernel_tuner reads it: the document and its records (model `gpu`,
    lower-case, which also names the MI250X, whose file has an empty device name)."""
    path = hub / "cachefiles" / kernel / f"{gpu}.json.gz"
    text = kernel_tuner.read_text(path)
    document, _ = kernel_tuner.load_cache_json(text)
    found = kernel_tuner.parse_cache(text, device=gpu.lower())
    if found.bad_entries:
        raise ValueError(f"{path}: {len(found.bad_entries)} malformed entries, the first {found.bad_entries[0]}")
    return document, found.records


def hub_spaces(hub: Path) -> list[BenchSpace]:
    """Two kernels x four GPUs, each one `kernel_tuner` workload (the one a hub import makes);
    each space's transfer records are the other GPUs'."""
    out = []
    for short, kernel in HUB_KERNELS.items():
        caches = {gpu: _hub_cache(hub, kernel, gpu) for gpu in HUB_GPUS}
        first = caches[HUB_GPUS[0]][1][0]
        task = engine.create_task(first.task_name, first.args)
        for gpu in HUB_GPUS:
            document, records = caches[gpu]
            out.append(BenchSpace(
                f"{short}-{gpu}", restrict_to_recording(task, records), records,
                transfer=[r for other in HUB_GPUS if other != gpu for r in caches[other][1]],
                kt_params={k: list(v) for k, v in document["tune_params"].items()},
                kt_cache={key: {**{k: entry[k] for k in document["tune_params_keys"]}, "time": entry["time"],
                                "times": [entry["time"]]} for key, entry in document["cache"].items()},
            ))
    return out


def all_spaces(hub: Path | None) -> list[BenchSpace]:
    spaces = [c12_space(), broadcast_space()]
    if hub is not None:
        spaces += hub_spaces(hub)
    return spaces
