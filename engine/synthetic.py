"""Synthetic recordings: a plausible analytic GPU cost for direct-conv configs, plus noise.

Until real recordings exist, tuners are compared (benchmarks/tuners.py) and
tested against a replay of this. It is deterministic: the same task, count and
seed give the same records, byte for byte (timestamps included).

The model, on an H200-like GPU (67 TFLOP/s fp32 peak, 132 SMs), reading the
template's own description of a config (`task.features`):

    time = flops / (peak * efficiency) + 4 us launch
    efficiency = fill * latency * reuse * registers * unroll * banks * noise

- fill: fraction of the 32 lanes of each warp used (`warp_fill`) times the
  share of SMs given a block in the last wave (`blocks` over 132).
- latency: resident threads hide memory latency, saturating:
  min(1, (threads_per_block * blocks / (132 * 512)) ** 0.5).
- reuse: outputs per thread amortise operand loads, saturating:
  work / (work + 6) for `work_per_thread`, halved per doubling past 64.
- registers: more than 128 estimated registers per thread halve occupancy.
- unroll: explicit unrolling with a step of 512 or more speeds the inner loop
  by 15 %; no unrolling costs 10 %.
- banks: a thread-x extent that is not a multiple of 8 (the C12 space's 7 is
  typical) causes shared-memory bank conflicts: 0.85.
- noise: log-normal, sigma 0.03, seeded by the config index.

Configs with more than 160 estimated registers fail to compile (error 3,
"too many registers"), and 1 % of configs, chosen by index, fail at run time
(error 4), so a tuner must cope with failures. The GPU model written in the
records' target is `synthetic-h200`.
"""
from __future__ import annotations

import zlib

import numpy as np

from .measure import MeasureResult, to_record
from .logfile import ErrorNo, Record, make_target

MODEL = "synthetic-h200"
PEAK_FLOPS = 67e12
SMS = 132
LAUNCH_SECONDS = 4e-6
NOISE_SIGMA = 0.03
RUNTIME_FAILURE_SHARE = 0.01
MAX_REGISTERS = 160


def _config_rng(seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(str(index).encode())])


def synthetic_result(task, config, seed: int = 0) -> MeasureResult:
    """The synthetic measurement of one config; deterministic in (task, config, seed)."""
    f = task.features(config)
    rng = _config_rng(seed, config.index)
    noise, failure_draw = rng.lognormal(0.0, NOISE_SIGMA), rng.random()
    if f["registers_estimate"] > MAX_REGISTERS:
        return MeasureResult.failure(ErrorNo.COMPILE_DEVICE, "too many registers", all_cost=0.3)
    if failure_draw < RUNTIME_FAILURE_SHARE:
        return MeasureResult.failure(ErrorNo.RUNTIME_DEVICE, "illegal memory access", all_cost=0.4)

    blocks, threads, work = f["blocks"], f["threads_per_block"], f["work_per_thread"]
    waves = np.ceil(blocks / SMS)
    fill = f["warp_fill"] * blocks / (waves * SMS)
    latency = min(1.0, (threads * blocks / (SMS * 512)) ** 0.5)
    reuse = work / (work + 6) / max(1.0, work / 64)
    registers = 0.5 if f["registers_estimate"] > 128 else 1.0
    unroll = 1.15 if (f["unroll_explicit"] and f["unroll_step"] >= 512) else (0.9 if f["unroll_step"] == 0 else 1.0)
    tx = config["tile_x"].size[2] * config["tile_x"].size[3]
    banks = 1.0 if tx % 8 == 0 else 0.85
    efficiency = fill * latency * reuse * registers * unroll * banks * noise
    cost = task.flops / (PEAK_FLOPS * min(efficiency, 1.0)) + LAUNCH_SECONDS
    return MeasureResult(error_no=ErrorNo.NO_ERROR, costs=(cost,), all_cost=0.5 + cost, timestamp=0.0)


def synthetic_recording(task, n_configs: int, seed: int = 0) -> list[Record]:
    """Records of `n_configs` distinct valid configs of `task`, sampled with `seed`, in index order."""
    rng = np.random.default_rng(seed)
    configs = sorted(task.config_space.sample(rng, n_configs), key=lambda c: c.index)
    target = make_target(MODEL)
    records = []
    for number, config in enumerate(configs):
        result = synthetic_result(task, config, seed)
        # Fixed, increasing timestamps keep the file identical from run to run.
        result = MeasureResult(result.error_no, result.costs, result.error_msg, result.all_cost, 1.7e9 + number)
        records.append(to_record(task, config, result, target))
    return records
