"""The tensor-core GEMM's workloads and TMA wgmma configs by knob name, for the tests of its TMA
schedules (tests/test_gemm_tc_rings.py, _l2_hint.py, _stream_k.py, _swap_ab.py)."""
from __future__ import annotations

import math

import numpy as np

import engine
from engine.ops.gemm_tc.tiling import WGMMA_BLOCK_K
from engine.workloads import gemm_tc_args


def task_of(m: int, n: int, k: int, precision: str = "bfloat16", c_dtype: str = "float32"):
    return engine.create_task("gemm_tensorcore", gemm_tc_args(m, n, k, precision, c_dtype))


def tma_config(task, **values):
    """A wgmma config with the tma loader and a producer, one consumer, raster 1 and the precision's
    block_k, where `values` say nothing else."""
    base = dict(warp_m=16, warp_n=16, warps_k=1, raster=1, block_k=WGMMA_BLOCK_K[task.params.precision],
                mainloop="wgmma", consumers=1, producer=1, loader="tma")
    return task.config_space.from_entity([[name, "ot", v] for name, v in {**base, **values}.items()])


def space_before(space, name: str) -> int:
    """The size the space had before knob `name` came: it and every knob after it were appended last."""
    at = space.knob_names.index(name)
    return len(space) // math.prod(len(knob.options) for knob in space.knobs[at:])


def assert_appended_knobs_keep_indexes(task, name: str, seed: int, draws: int = 60) -> None:
    """A config whose knobs from `name` on stand at their first values (the kernels before them) has
    the index it had before they came, and every config's earlier knobs are those of its index mod that size."""
    space = task.config_space
    before = space_before(space, name)
    firsts = {knob.name: knob.options[0] for knob in space.knobs[space.knob_names.index(name):]}
    for config in space.sample(np.random.default_rng(seed), draws):
        assert (config.index < before) == all(config[n].val == v for n, v in firsts.items())
        assert config.values() | firsts == space.get(config.index % before).values()
