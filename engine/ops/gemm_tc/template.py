"""Tensor-core GEMM (fp16, bf16, tf32 inputs; fp32 accumulation; C fp32 or 16-bit), row-major (`tiling`)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...space import ConfigEntity, ConfigSpace, OtherKnob
from ..base import (MAX_TENSOR_ELEMENTS, REFERENCE_THREAD_SLOTS, BadArgs, DeviceLimits, KernelSource, Template,
                    first_valid, knob_features, why_launch_fails, why_no_cluster)
from . import kernel, wgmma, wgmma_tf32
from .tiling import (CLUSTER_SHARES, CLUSTERS, L2_HINTS, LOADERS, MAINLOOPS, RINGS, STREAM_K_SHARES, SWAP_AB, WGMMA_BLOCK_K,
                     GemmTcTiling, gemm_tc_tiling)
from .workload import TEMPLATE_NAME, TF32_MODE, GemmTcParams, gemm_tc_shapes


# Each mainloop's configs leave the other's knobs at their first values (tiling's rules say
# why otherwise): random draws keep them there, so they land on valid configs of either
# mainloop (without, about 1 in 700 draws was valid on a decode shape, and 2% of those wgmma).
# split_k is both mainloops' (wgmma's with the tma loader on shapes of few tiles), so it is not pinned.
# wgmma's block_k is one 128-byte row of the precision's elements.
# turns are tf32's alone and pingpong the 16-bit precisions', so each pins the other at 0 on wgmma;
# stream_k, swap_ab and clusters sharing A are the 16-bit precisions' too (tf32's kernel computes C's transpose always).
# Draws keep every wgmma config's cluster_shares at b: a is a cluster's alone, and drawn freely it would double
# wgmma's share of the draws and halve the valid ones (a tiny GEMM's space then ran out of draws); a walk's one-knob
# moves and the benchmarks' lists reach it.
def mainloop_pins(precision: str) -> tuple[str, dict]:
    wgmma = {"block_k": WGMMA_BLOCK_K[precision], "warp_m": 16, "warp_n": 16, "warps_k": 1}
    return ("mainloop", {
        "mma_sync": {"consumers": 1, "producer": 0, "loader": LOADERS[0], "cluster": 1, "persistent": 0, "turns": 0,
                     "pingpong": 0, "ring": 0, "l2_hint": L2_HINTS[0], "stream_k": 0, "swap_ab": 0,
                     "cluster_shares": CLUSTER_SHARES[0]},
        "wgmma": ({**wgmma, "pingpong": 0, "stream_k": 0, "swap_ab": 0, "cluster_shares": CLUSTER_SHARES[0]}
                  if precision == TF32_MODE
                  else {**wgmma, "turns": 0, "cluster_shares": CLUSTER_SHARES[0]}),
    })


def drawn_on(space: ConfigSpace, limits: DeviceLimits) -> ConfigSpace:
    """A device without wgmma draws no wgmma config (each knob added for wgmma halved the share of the
    rest: on a decode shape about 1 draw in 5,000 to 7,000 was valid before sm_80 stopped drawing them)."""
    if limits.wgmma:
        return space
    controller, by_value = space.pins
    return space.with_pins((controller, {**by_value, "wgmma": None}))


class GemmTensorCore(Template):
    name = TEMPLATE_NAME
    baseline_provider = "cublas"

    def parse_args(self, args: list) -> GemmTcParams:
        m, n, k, precision, c_dtype = gemm_tc_shapes(args)
        for what, elements in (("A", m * k), ("B", k * n), ("C", m * n)):
            if elements > MAX_TENSOR_ELEMENTS:
                raise BadArgs(f"{what} would have {elements} elements, more than 2^31 - 1")
        return GemmTcParams(m, n, k, precision, c_dtype, list(args))

    def define_space(self, params: GemmTcParams) -> ConfigSpace:
        return ConfigSpace([
            OtherKnob("block_m", [16, 32, 64, 128, 256]),
            OtherKnob("block_n", [16, 32, 64, 128, 256]),
            OtherKnob("block_k", [16, 32, 64, 128]),
            OtherKnob("warp_m", [16, 32, 64]),
            OtherKnob("warp_n", [16, 32, 64]),
            OtherKnob("warps_k", [1, 2, 4]),
            OtherKnob("stages", [2, 3, 4]),
            OtherKnob("raster", [1, 4, 8, 16]),
            # Added after the mma_sync records: last, their first value the old kernel's, so
            # every earlier config keeps its index and every earlier log loads.
            OtherKnob("mainloop", list(MAINLOOPS), default="mma_sync"),
            OtherKnob("consumers", [1, 2, 4], default=1),
            OtherKnob("producer", [0, 1], default=0),
            # After wgmma's knobs, for the same reason: decode shapes (few tiles) cut K over a cluster.
            OtherKnob("split_k", [1, 2, 4, 8], default=1),
            # After split_k, for the same reason: how the wgmma mainloop's stages are loaded.
            OtherKnob("loader", list(LOADERS), default=LOADERS[0]),
            OtherKnob("cluster", list(CLUSTERS), default=1),
            OtherKnob("persistent", [0, 1], default=0),
            # After persistent, for the same reason: tf32's two consumers issue each stage in turn.
            OtherKnob("turns", [0, 1], default=0),
            # After turns, for the same reason: 16-bit persistent blocks' two consumers take whole tiles in turn.
            OtherKnob("pingpong", [0, 1], default=0),
            # After pingpong, for the same reason: stages added to `stages` (the TMA loader's deep rings,
            # for decode steps that stream B: cuBLAS runs 11 to 16 there).
            OtherKnob("ring", list(RINGS), default=0),
            # After ring, for the same reason: the L2 eviction priorities of the TMA copies (a decode
            # step's weights are read once).
            OtherKnob("l2_hint", list(L2_HINTS), default=L2_HINTS[0]),
            # After l2_hint, for the same reason: the implicit-GEMM conv's stream-K schedule (persistent blocks
            # share all tiles' K steps evenly, 1, or each tile's in 2 or 4 shares, a block each, with no cluster).
            OtherKnob("stream_k", list(STREAM_K_SHARES), default=0),
            # After stream_k, for the same reason: C^T = B^T A^T, so a decode step's few rows of A make
            # narrow tiles (tiling's SWAP_AB).
            OtherKnob("swap_ab", list(SWAP_AB), default=0),
            # After swap_ab, for the same reason: what a cluster's blocks share, B (neighbouring tile rows) or A
            # (neighbouring tile columns: a decode step's one row of tiles reads A once a cluster; with split K
            # the cluster is those columns times the splits).
            OtherKnob("cluster_shares", list(CLUSTER_SHARES), default=CLUSTER_SHARES[0]),
        ], pins=mainloop_pins(params.precision))

    def space_on(self, params: GemmTcParams, limits: DeviceLimits) -> ConfigSpace:
        return drawn_on(self.define_space(params), limits)

    def why_invalid(self, params: GemmTcParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        return why_tiling_invalid(gemm_tc_tiling(params, config), limits)

    def features(self, params: GemmTcParams, config: ConfigEntity) -> dict[str, float]:
        return tiling_features(gemm_tc_tiling(params, config), config)

    def default_config(self, params: GemmTcParams, space: ConfigSpace) -> ConfigEntity:
        """CUTLASS's everyday Ampere tile: 128x128x32, four warps of 64x64, three stages."""
        entity = [
            ["block_m", "ot", 128], ["block_n", "ot", 128], ["block_k", "ot", 32],
            ["warp_m", "ot", 64], ["warp_n", "ot", 64], ["warps_k", "ot", 1],
            ["stages", "ot", 3], ["raster", "ot", 1],
        ]
        return first_valid(space, space.from_entity(entity))

    def flops(self, params: GemmTcParams) -> int:
        return params.flops

    def bytes_moved(self, params: GemmTcParams) -> int:
        return params.bytes_moved

    # -- GPU half
    def kernel(self, params: GemmTcParams, config: ConfigEntity) -> KernelSource:
        tiling = gemm_tc_tiling(params, config)
        if not tiling.wgmma:
            return kernel.generate(tiling)
        return wgmma_tf32.generate(tiling) if tiling.precision == TF32_MODE else wgmma.generate(tiling)

    def make_inputs(self, params: GemmTcParams, rng: np.random.Generator) -> list[np.ndarray]:
        return kernel.make_inputs(params, rng)

    def reference(self, params: GemmTcParams, inputs: list[np.ndarray]) -> np.ndarray:
        return kernel.reference(params, inputs[0], inputs[1])

    def tolerance(self, params: GemmTcParams) -> float:
        return kernel.TOLERANCE[params.precision]


def why_tiling_invalid(tiling: GemmTcTiling, limits: DeviceLimits) -> str | None:
    """Why a tiling cannot run on this device (the tensor-core templates' one rule book)."""
    if tiling.wgmma and not limits.wgmma:
        return "the wgmma mainloop needs an sm_90 GPU (Hopper): this device has no wgmma"
    reason = tiling.why_not_tiled()
    if reason:
        return reason
    what = (f"split_k {tiling.split_k} splits" if tiling.cluster == 1 else f"{tiling.cluster} blocks"
            if tiling.split_k == 1 else f"{tiling.cluster} tile columns x {tiling.split_k} splits")
    reason = why_no_cluster(tiling.cluster * tiling.split_k, what, limits)
    if reason:
        return reason
    if tiling.stream_k and tiling.grid[0] > limits.multiprocessors:
        return (f"stream_k's {tiling.grid[0]} blocks wait on one another, so all must be resident at once: "
                f"more than this GPU's {limits.multiprocessors} SMs")
    # The kernel opts in to more than 48 KB of dynamic shared memory when it needs it.
    opted_in = dataclasses.replace(limits, max_shared_memory_per_block=limits.max_shared_memory_optin)
    return why_launch_fails(tiling.launch(), opted_in)


def tiling_features(tiling: GemmTcTiling, config: ConfigEntity) -> dict[str, float]:
    """The cost model's description of a tensor-core tiling (of a GEMM, or a convolution's implicit one)."""
    out = knob_features(config)
    blocks = math.prod(tiling.grid)
    out.update({
        "threads_per_block": tiling.threads,
        "accumulators": tiling.accumulators,
        "registers_estimate": tiling.registers,
        "shared_bytes": tiling.shared_bytes,
        "blocks": blocks,
        "waves": blocks * tiling.threads / REFERENCE_THREAD_SLOTS,
        "tile_waste": tiling.tile_blocks * tiling.block_m * tiling.block_n / (tiling.m * tiling.n),
        "k_steps": tiling.k_tiles,
        "block_intensity": 2 * tiling.block_m * tiling.block_n / (tiling.block_m + tiling.block_n),
        "warp_intensity": 2 * math.prod(tiling.warp_tile) / sum(tiling.warp_tile),
    })
    return out
