"""The ten exhaustive recordings benchmarks/tuners.py compares tuners on, each in two forms:
our task and replay records, and the same configs as a Kernel Tuner cache file.

- `c12`: the H200 recording of ResNet-18's C12 layer (tests/data, 2,616 configs of the
  844,800 of `conv2d_nchw.cuda`; the tuners see the 2,616, see benchmarks/tuners.py).
- `broadcast`: fp16 [256, 64, 56, 56] exp on the H200, every one of its 160 configs
  (docs/benchmarks/operators-h200-logs, session 3's 32-bit general run).
- `conv-<GPU>`, `dedisp-<GPU>`: Kernel Tuner's brute-forced hub caches (../shared/data/
  benchmark_hub, 4,362 and 11,130 configs) on the A100, A4000, MI250X and W6600, read as
  records of one workload on four GPU models, so each GPU's space can be tuned with the
  other three GPUs' records as transfer history.

Kernel Tuner sees the same configs: its parameters are the knobs (the option positions of
our recordings' knobs, the hub caches' own values), restricted to the recorded configs.
"""
from __future__ import annotations

import functools
import gzip
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import engine
from engine.logfile import ErrorNo, Record, make_target
from engine.replay import load_recording, restrict_to_recording
from engine.space import ConfigEntity, ConfigSpace, OtherKnob
from engine.task import Task
from engine.ops.base import BadArgs, DeviceLimits, Template, knob_features

ROOT = Path(__file__).resolve().parent.parent
C12_RECORDING = ROOT / "tests/data/c12_h200_recording.log.gz"
BROADCAST_RECORDING = ROOT / "docs/benchmarks/operators-h200-logs/2026-12-01/session3/s9-broadcast-32bit-general.log.gz"
BROADCAST_ARGS = [["TENSOR", [256, 64, 56, 56], "float16"], "exp"]
HUB_GPUS = ("A100", "A4000", "MI250X", "W6600")
HUB_KERNELS = {"conv": "convolution_milo", "dedisp": "dedispersion_milo"}
# Kernel Tuner's failure strings and the error numbers a replay answers them with.
HUB_FAILURES = {"InvalidConfig": ErrorNo.INSTANTIATION_ERROR, "CompilationFailedConfig": ErrorNo.COMPILE_DEVICE,
                "RuntimeFailedConfig": ErrorNo.RUNTIME_DEVICE}


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
@dataclass(frozen=True)
class CacheParams:
    kernel: str
    tune_params: tuple[tuple[str, tuple], ...]


class KernelTunerCache(Template):
    """A Kernel Tuner cache's parameters as a space of plain knobs; its records say what ran."""

    name = "kernel_tuner_cache"

    def parse_args(self, args: list) -> CacheParams:
        if not (isinstance(args, list) and len(args) == 2 and isinstance(args[1], dict)):
            raise BadArgs("args are [kernel name, {parameter: [values]}]")
        return CacheParams(args[0], tuple((k, tuple(v)) for k, v in args[1].items()))

    def define_space(self, params: CacheParams) -> ConfigSpace:
        return ConfigSpace([OtherKnob(name, list(values)) for name, values in params.tune_params])

    def why_invalid(self, params, config, limits) -> str | None:
        return None  # the recording restricts the space to the configs Kernel Tuner ran

    def features(self, params, config: ConfigEntity) -> dict[str, float]:
        return knob_features(config)

    def default_config(self, params, space: ConfigSpace) -> ConfigEntity:
        return space.get(next(space.iter_indexes()))

    def flops(self, params) -> int:
        return 10**9  # scores are compared within one workload only: any constant orders them

    # Replayed only: a cache holds no source to compile or check.
    def kernel(self, params, config):
        raise BadArgs("a replayed Kernel Tuner cache has no kernel source")

    def make_inputs(self, params, rng):
        raise BadArgs("a replayed Kernel Tuner cache has no kernel source")

    def reference(self, params, inputs):
        raise BadArgs("a replayed Kernel Tuner cache has no kernel source")


def _hub_records(kernel: str, gpu: str, cache: dict, args: list, space: ConfigSpace) -> list[Record]:
    records = []
    for entry in cache["cache"].values():
        values = {k: entry[k] for k in cache["tune_params_keys"]}
        entity = [[k, "ot", v] for k, v in values.items()]
        failed = HUB_FAILURES.get(entry["time"]) if isinstance(entry["time"], str) else None
        costs = (1e9,) if failed else (float(entry["time"]) / 1e3,)
        records.append(Record(target=make_target(gpu.lower()), task_name=KernelTunerCache.name, args=args,
                              config_index=space.index_of(entity), entity=entity, costs=costs,
                              error_no=failed or ErrorNo.NO_ERROR, all_cost=0.0, timestamp=0.0))
    return records


def hub_spaces(hub: Path) -> list[BenchSpace]:
    """Two kernels x four GPUs; each space's transfer records are the other GPUs'."""
    out = []
    template = KernelTunerCache()
    for short, kernel in HUB_KERNELS.items():
        caches = {}
        for gpu in HUB_GPUS:
            with gzip.open(hub / "cachefiles" / kernel / f"{gpu}.json.gz", "rt", encoding="utf-8") as stream:
                caches[gpu] = json.load(stream)
        tune_params = caches[HUB_GPUS[0]]["tune_params"]
        args = [kernel, tune_params]
        params = template.parse_args(args)
        space = template.define_space(params)
        task = Task(name=template.name, args=args, params=params, template=template, config_space=space,
                    flops=template.flops(params), limits=DeviceLimits())
        by_gpu = {gpu: _hub_records(kernel, gpu, caches[gpu], args, space) for gpu in HUB_GPUS}
        for gpu in HUB_GPUS:
            cache = caches[gpu]
            bench = BenchSpace(
                f"{short}-{gpu}", restrict_to_recording(task, by_gpu[gpu]), by_gpu[gpu],
                transfer=[r for other in HUB_GPUS if other != gpu for r in by_gpu[other]],
                kt_params={k: list(v) for k, v in cache["tune_params"].items()},
                kt_cache={key: {**{k: entry[k] for k in cache["tune_params_keys"]}, "time": entry["time"],
                                "times": [entry["time"]]} for key, entry in cache["cache"].items()},
            )
            out.append(bench)
    return out


def all_spaces(hub: Path | None) -> list[BenchSpace]:
    spaces = [c12_space(), broadcast_space()]
    if hub is not None:
        spaces += hub_spaces(hub)
    return spaces
