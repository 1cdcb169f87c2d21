"""A synthetic but realistic AutoTVM log, for the import and leaderboard benchmarks.

Workloads are the design's ResNet-18 conv2d layers C1-C12 (`conv2d_nchw.cuda`) and
MobileNet depthwise layers D1-D9 (`depthwise_conv2d_nchw.cuda`), batch 1, fp32, with
TVM's args. Each record is one tuning trial on one of a few GPU models: a config whose
split knobs are random factorizations of the real axis extents (`[-1, f3, f2, f1]`, as
the design's index rule writes them), unroll knobs from their real choices, a time
drawn around a plausible GFLOPS for that GPU, and about one trial in eight a failure
(error numbers 1, 2, 4, 7 with AutoTVM's `[1e9]` cost). Trials are spread over the
workloads in proportion to their config-space size, as a tuner's budget often is.
"""
from __future__ import annotations

import random
from typing import Iterator

from engine.flops import conv2d_output_size, flop_count
from engine.records import ErrorNo, Record, make_target

# GPU model slug and a typical tuned GFLOPS for these layers.
GPUS = {"h200": 9000.0, "a100": 7000.0, "v100": 4500.0, "rtx4090": 8000.0, "t4": 2000.0}

RESNET = [  # (H, CI, CO, K, stride, pad)
    (224, 3, 64, 7, 2, 3), (56, 64, 64, 3, 1, 1), (56, 64, 64, 1, 1, 0), (56, 64, 128, 3, 2, 1),
    (56, 64, 128, 1, 2, 0), (28, 128, 128, 3, 1, 1), (28, 128, 256, 3, 2, 1), (28, 128, 256, 1, 2, 0),
    (14, 256, 256, 3, 1, 1), (14, 256, 512, 3, 2, 1), (14, 256, 512, 1, 2, 0), (7, 512, 512, 3, 1, 1),
]
MOBILENET = [  # (H, C, stride)
    (112, 32, 1), (112, 64, 2), (56, 128, 1), (56, 128, 2), (28, 256, 1), (28, 256, 2), (14, 512, 1), (14, 512, 2), (7, 1024, 1),
]
FAILURES = [ErrorNo.INSTANTIATION_ERROR, ErrorNo.COMPILE_DEVICE, ErrorNo.RUNTIME_DEVICE, ErrorNo.RUN_TIMEOUT]


def _tensor(*shape: int) -> list:
    return ["TENSOR", list(shape), "float32"]


def workloads() -> list[tuple[str, list, dict[str, int]]]:
    """(task, args, split extents by knob) of every benchmark layer."""
    found = []
    for h, ci, co, k, s, p in RESNET:
        out = conv2d_output_size(h, k, s, p, p)
        args = [_tensor(1, ci, h, h), _tensor(co, ci, k, k), [s, s], [p, p, p, p], [1, 1], "float32"]
        found.append(("conv2d_nchw.cuda", args, {"tile_f": co, "tile_y": out, "tile_x": out, "tile_rc": ci, "tile_ry": k, "tile_rx": k}))
    for h, c, s in MOBILENET:
        out = conv2d_output_size(h, 3, s, 1, 1)
        args = [_tensor(1, c, h, h), _tensor(c, 1, 3, 3), [s, s], [1, 1, 1, 1], [1, 1], "float32"]
        found.append(("depthwise_conv2d_nchw.cuda", args, {"tile_f": c, "tile_y": out, "tile_x": out}))
    return found


def _split(rng: random.Random, extent: int, parts: int) -> list[int]:
    """`[-1, f_{k-1}, ..., f_1]`: inner factors whose product divides the extent."""
    factors, left = [], extent
    for _ in range(parts - 1):
        choice = rng.choice([d for d in range(1, left + 1) if left % d == 0])
        factors.append(choice)
        left //= choice
    return [-1, *reversed(factors)]


def _entity(rng: random.Random, task: str, extents: dict[str, int]) -> list:
    entity = []
    for knob, extent in extents.items():
        parts = 4 if knob in ("tile_f", "tile_y", "tile_x") else 2
        entity.append([knob, "sp", _split(rng, extent, parts)])
    unroll_steps = [0, 512, 1500] if task == "conv2d_nchw.cuda" else [0, 256, 1500]
    entity.append(["auto_unroll_max_step", "ot", rng.choice(unroll_steps)])
    entity.append(["unroll_explicit", "ot", rng.choice([0, 1])])
    return entity


def synthetic_records(count: int, seed: int = 0, gpus: dict[str, float] = GPUS) -> Iterator[Record]:
    rng = random.Random(seed)
    layers = workloads()
    flops = [flop_count(task, args) for task, args, _ in layers]
    weights = [len(extents) for _, _, extents in layers]
    models = list(gpus)
    clock = 1_760_000_000.0
    for _ in range(count):
        layer = rng.choices(range(len(layers)), weights)[0]
        task, args, extents = layers[layer]
        model = rng.choice(models)
        clock += rng.uniform(0.5, 3.0)
        failed = rng.random() < 0.125
        if failed:
            error, costs = rng.choice(FAILURES), ()
        else:
            # Tuning trials span from awful to near-best: GFLOPS as a fraction of the tuned figure.
            seconds = flops[layer] / (gpus[model] * 1e9 * rng.betavariate(2, 5))
            error, costs = ErrorNo.NO_ERROR, tuple(seconds * rng.uniform(0.98, 1.02) for _ in range(3))
        yield Record(
            target=make_target(model),
            task_name=task,
            args=args,
            config_index=rng.randrange(10**8),
            entity=_entity(rng, task, extents),
            costs=costs,
            error_no=error,
            all_cost=rng.uniform(0.5, 4.0),
            timestamp=clock,
            tvm_version="tunerweb-0.1",
        )
