"""A synthetic but realistic AutoTVM log, for the import and leaderboard benchmarks.

Workloads are the design's ResNet-18 conv2d layers C1-C12 (`conv2d_nchw.cuda`) and
MobileNet depthwise layers D1-D9 (`depthwise_conv2d_nchw.cuda`), batch 1, fp32, the
presets of engine/workloads.py. Each record is one tuning trial on one of a few GPU
models: a valid config drawn from the workload's real config space (so index and entity
agree, as in a real log), a time drawn around a plausible GFLOPS for that GPU, and about
one trial in eight a failure (error numbers 1, 2, 4, 7 with AutoTVM's `[1e9]` cost).
Trials are spread evenly over the workloads.
"""
from __future__ import annotations

import random
from typing import Iterator

import numpy as np

from engine import create_task
from engine.logfile import ErrorNo, Record, make_target
from engine.workloads import MOBILENET_DW, RESNET18

# GPU model slug and a typical tuned GFLOPS for these layers.
GPUS = {"h200": 9000.0, "a100": 7000.0, "v100": 4500.0, "rtx4090": 8000.0, "t4": 2000.0}
FAILURES = [ErrorNo.INSTANTIATION_ERROR, ErrorNo.COMPILE_DEVICE, ErrorNo.RUNTIME_DEVICE, ErrorNo.RUN_TIMEOUT]
# Distinct configs drawn per workload; records pick among them (their times and
# timestamps differ, so every record is still a distinct line).
CONFIGS_PER_WORKLOAD = 500


def workloads() -> list[tuple[str, list]]:
    """(task, args) of every benchmark layer."""
    return [(preset.task_name, preset.args) for preset in (*RESNET18, *MOBILENET_DW)]


def synthetic_records(count: int, seed: int = 0, gpus: dict[str, float] = GPUS) -> Iterator[Record]:
    rng = random.Random(seed)
    layers = workloads()
    tasks = [create_task(task, args) for task, args in layers]
    sampler = np.random.default_rng(seed)
    configs = [task.config_space.sample(sampler, CONFIGS_PER_WORKLOAD) for task in tasks]
    models = list(gpus)
    clock = 1_760_000_000.0
    for _ in range(count):
        layer = rng.randrange(len(layers))
        task = tasks[layer]
        config = rng.choice(configs[layer])
        model = rng.choice(models)
        clock += rng.uniform(0.5, 3.0)
        failed = rng.random() < 0.125
        if failed:
            error, costs = rng.choice(FAILURES), ()
        else:
            # Tuning trials span from awful to near-best: GFLOPS as a fraction of the tuned figure.
            seconds = task.flops / (gpus[model] * 1e9 * rng.betavariate(2, 5))
            error, costs = ErrorNo.NO_ERROR, tuple(seconds * rng.uniform(0.98, 1.02) for _ in range(3))
        yield Record(
            target=make_target(model),
            task_name=task.name,
            args=task.args,
            config_index=config.index,
            entity=config.to_entity(),
            costs=costs,
            error_no=error,
            all_cost=rng.uniform(0.5, 4.0),
            timestamp=clock,
            tvm_version="tunerweb-0.1",
        )
