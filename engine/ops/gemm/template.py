"""Dense fp32 GEMM on CUDA, row-major (the schedule and its knobs: `tiling`)."""
from __future__ import annotations

import dataclasses

import numpy as np

from ...space import ConfigEntity, ConfigSpace, OtherKnob
from ..base import (FLOAT_BYTES, MAX_TENSOR_ELEMENTS, DeviceLimits, KernelSource, BadArgs, Template, first_valid,
                    knob_features, launch_features, why_launch_fails, why_no_cluster)
from . import kernel, tma
from .tiling import BLOCK_K_CHOICES, LOADERS, MULTICASTS, PIPELINES, TEMPLATE_NAME, GemmParams, GemmTiling, gemm_shapes, gemm_tiling


class Gemm(Template):
    name = TEMPLATE_NAME
    baseline_provider = "cublas"
    loaders = LOADERS

    def tiling(self, params: GemmParams, config: ConfigEntity) -> GemmTiling:
        return gemm_tiling(params, config)

    def parse_args(self, args: list) -> GemmParams:
        m, n, k = gemm_shapes(args)
        for what, arg in (("A", args[0]), ("B", args[1])):
            if arg[2] != "float32":
                raise BadArgs(f"{what} dtype {arg[2]!r} is not supported (only float32)")
        for what, elements in (("A", m * k), ("B", k * n), ("C", m * n)):
            if elements > MAX_TENSOR_ELEMENTS:
                raise BadArgs(f"{what} would have {elements} elements, more than 2^31 - 1")
        return GemmParams(m, n, k, list(args))

    def define_space(self, params: GemmParams) -> ConfigSpace:
        return ConfigSpace(self.knobs(params))

    def knobs(self, params: GemmParams) -> list[OtherKnob]:
        knobs = [
            OtherKnob("block_m", [16, 32, 64, 128, 256]),
            OtherKnob("block_n", [16, 32, 64, 128, 256]),
            OtherKnob("block_k", list(BLOCK_K_CHOICES)),
            OtherKnob("warp_m", [16, 32, 64, 128]),
            OtherKnob("warp_n", [16, 32, 64, 128]),
            OtherKnob("thread_m", [1, 2, 4, 8]),
            OtherKnob("thread_n", [1, 2, 4, 8]),
            OtherKnob("warp_lanes_n", [2, 4, 8, 16]),
            OtherKnob("vector_a", [1, 2, 4]),
            OtherKnob("vector_b", [1, 2, 4]),
            OtherKnob("pipeline", list(PIPELINES)),
            OtherKnob("smem_pad", [0, 4]),
            OtherKnob("split_k", params.split_k_choices),
            OtherKnob("unroll_k", [1, 4, 32]),
            # Last, defaults first: logs from before these knobs load as before, same index.
            OtherKnob("slice_k", [1, 2, 4], default=1),
            OtherKnob("split_reduce", ["workspace", "cluster"], default="workspace"),
            OtherKnob("loader", list(self.loaders), default="threads"),
        ]
        if any(loader.startswith("tma") for loader in self.loaders):  # a TMA loader's; the conv's space has none
            knobs.append(OtherKnob("multicast", list(MULTICASTS), default=1))
        return knobs

    def why_invalid(self, params: GemmParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        tiling = self.tiling(params, config)
        reason = tiling.why_not_tiled()
        if reason:
            return reason
        if tiling.uses_tma and not limits.wgmma:
            return (f"loader {tiling.loader} is built for sm_90a (TMA copies, mbarrier transaction counts, "
                    "setmaxnreg): Hopper GPUs only")
        reason = (why_no_cluster(tiling.split_k if tiling.uses_cluster else 1, f"split_k {tiling.split_k} splits",
                                     limits)
                  or why_no_cluster(tiling.multicast, f"multicast {tiling.multicast} tile columns", limits))
        if reason:
            return reason
        # The kernel opts in to more than 48 KB of dynamic shared memory when it needs it.
        opted_in = dataclasses.replace(limits, max_shared_memory_per_block=limits.max_shared_memory_optin)
        return why_launch_fails(tiling.launch(), opted_in)

    def features(self, params: GemmParams, config: ConfigEntity) -> dict[str, float]:
        tiling = self.tiling(params, config)
        out = knob_features(config)
        covered = tiling.grid[0] * tiling.block_n * tiling.grid[1] * tiling.block_m
        out.update({
            "stages": tiling.stages,
            "cp_async": float(tiling.uses_cp_async),
            **launch_features(threads=tiling.threads, work_per_thread=tiling.accumulators, registers=tiling.registers,
                              shared_bytes=tiling.shared_bytes, grid=tiling.grid),
            "tile_waste": covered / (params.m * params.n),
            "k_steps_per_block": tiling.k_per_split / tiling.block_k,
            # FLOPs per float staged through shared memory, and per float a thread reads from it.
            "block_intensity": 2 * tiling.block_m * tiling.block_n / (tiling.block_m + tiling.block_n),
            "thread_intensity": tiling.accumulators / (tiling.iter_m * tiling.thread_m + tiling.iter_n * tiling.thread_n),
        })
        return out

    def default_vectors(self, params: GemmParams) -> tuple[int, int]:
        """The default config's vector_a and vector_b: 16 bytes where rows allow."""
        return 4 if params.k % 4 == 0 else 1, 4 if params.n % 4 == 0 else 1

    def default_config(self, params: GemmParams, space: ConfigSpace) -> ConfigEntity:
        """A textbook 64x64x8 tile, 128 threads of 4x8 registers, register prefetch."""
        vector_a, vector_b = self.default_vectors(params)
        entity = [
            ["block_m", "ot", 64], ["block_n", "ot", 64], ["block_k", "ot", 8],
            ["warp_m", "ot", 32], ["warp_n", "ot", 32], ["thread_m", "ot", 4], ["thread_n", "ot", 8],
            ["warp_lanes_n", "ot", 4],
            ["vector_a", "ot", vector_a], ["vector_b", "ot", vector_b],
            ["pipeline", "ot", "prefetch"], ["smem_pad", "ot", 4], ["split_k", "ot", 1], ["unroll_k", "ot", 32],
            ["slice_k", "ot", 1], ["split_reduce", "ot", "workspace"], ["loader", "ot", "threads"],
        ]
        return first_valid(space, space.from_entity(entity))

    def flops(self, params: GemmParams) -> int:
        return params.flops

    # -- GPU half
    def kernel(self, params: GemmParams, config: ConfigEntity) -> KernelSource:
        tiling = self.tiling(params, config)
        return (tma if tiling.uses_tma else kernel).generate(tiling)

    def make_inputs(self, params: GemmParams, rng: np.random.Generator) -> list[np.ndarray]:
        return kernel.make_inputs(params, rng)

    def reference(self, params: GemmParams, inputs: list[np.ndarray]) -> np.ndarray:
        return kernel.reference(inputs[0], inputs[1])

    def bytes_moved(self, params: GemmParams) -> int:
        """A and B read once, C written once: the least traffic any schedule needs."""
        return FLOAT_BYTES * (params.m * params.k + params.k * params.n + params.m * params.n)
