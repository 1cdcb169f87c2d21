"""Tensor-core implicit-GEMM convolution (engine.ops.conv2d_tc) on this GPU: correct on the ResNet-50
batch-32 layers, a fixed sweep of configs per layer, the bests confirmed against cuDNN.

    python benchmarks/tensor_core_conv.py check   --json OUT.json [--budget-s 40] [--layers TCC-7-512-512-k3-f16,...]
    python benchmarks/tensor_core_conv.py tune    --json OUT.json --log OUT.log [--budget-s 100] [--layers ...]
    python benchmarks/tensor_core_conv.py confirm --json OUT.json [--budget-s 60] [--top 3] [--rounds 5]
    python benchmarks/tensor_core_conv.py table   --json OUT.json   # the confirmed table again, from the JSON
    python benchmarks/tensor_core_conv.py configs                    # every config the phases try, one per line

* check: each of the six layers (engine.workloads.CONV_TC) in fp16 and bf16, the default config,
  two other mma.sync tiles (`CHECK_PICKS`: the shared-memory epilogue, split K where the layer allows it)
  and the wgmma tiles of `CHECK_WGMMA_PICKS` valid on the layer (a deeper ring; split K where the
  layer has few tiles), through the GPU measurer: its float64 reference and the
  precision's tolerance; a failing config is reported.
* tune: per layer, fp16 first, then bf16: the hand-picked tiles (`TUNE_PICKS`, those valid on the
  layer: mma.sync's, wgmma's with either loader, stream-K's, the transposed product's, clusters sharing
  the pixel rows and clusters of 4 and 8 blocks), the default and
  a seeded random sample of valid configs; every record to an AutoTVM log.
* confirm: each tuned layer's fastest config (`--top K`: the pick among its K fastest by the worse of
  the warm and cold ratios) re-timed by the confirmation protocol (engine.confirm: a fresh measuring
  process, interleaved with cuDNN of the same precision on channels-last tensors, cudnn.benchmark's
  exhaustive search, and the default config, warm and cold); the table last.

The command line, the JSON, the per-phase budget, the rows and the confirmation are benchmarks/phases.py's.
"""
from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import engine  # noqa: E402
from phases import (check_listed, confirm_tuned_bests, median, phase_parser, print_configs, read_json,  # noqa: E402
                    tune_listed)
from engine.workloads import CONV_TC  # noqa: E402

TEMPLATE = "conv2d_nhwc_tensorcore"
KNOBS = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "stages", "raster", "epilogue", "split_k",
         "mainloop", "consumers", "producer", "ring", "loader", "cluster", "persistent", "stream_k", "swap_ab",
         "block_m_extra", "cluster_shares", "wide_cluster")
MMA_SYNC = ("mma_sync", 1, 0, 0, "cp_async", 1, 0, 0)
# CUTLASS-like implicit-GEMM tiles (BM, BN, BK, WM, WN, stages, raster): 64-256 pixels by 64-256
# channels, 4 to 16 warps, 32- or 64-deep steps, 2-5 stages; each with either epilogue.
TILES = [
    (128, 64, 32, 64, 32, 3, 1), (128, 64, 64, 64, 32, 3, 1), (128, 64, 32, 64, 32, 4, 1), (128, 64, 64, 64, 32, 2, 1),
    (256, 64, 32, 64, 32, 3, 1), (256, 64, 64, 64, 32, 3, 1), (256, 64, 32, 32, 64, 3, 1), (256, 64, 32, 64, 32, 4, 1),
    (128, 128, 32, 64, 32, 3, 1), (128, 128, 64, 64, 32, 3, 1), (128, 128, 32, 64, 64, 4, 1), (128, 128, 64, 64, 64, 3, 8),
    (256, 128, 32, 64, 64, 3, 1), (256, 128, 32, 64, 32, 3, 8), (128, 256, 32, 64, 64, 3, 8), (64, 64, 64, 32, 32, 4, 1),
    (64, 128, 32, 32, 64, 4, 1), (64, 64, 32, 32, 32, 5, 1), (128, 64, 32, 32, 32, 4, 1), (64, 64, 64, 32, 32, 3, 1),
    (64, 128, 64, 32, 32, 3, 1),
]
# Split K over a cluster, for the layers of few tiles (7x7 and 14x14 at batch 32).
SPLIT_TILES = [(64, 64, 64, 32, 32, 4, 1), (128, 64, 64, 64, 32, 3, 1), (128, 128, 64, 64, 32, 3, 1),
               (64, 128, 64, 32, 64, 4, 1), (64, 64, 32, 32, 32, 4, 1)]
# wgmma tiles (BM, BN, stages, raster, consumers, producer): 64-256 pixels by 64-256 channels, a
# warp-specialised producer or none, one or two consumer warpgroups (block_k 64, the 128-byte row).
WGMMA_TILES = [
    (128, 64, 4, 1, 2, 0), (128, 64, 4, 1, 2, 1), (128, 64, 5, 1, 2, 1), (256, 64, 4, 1, 2, 1), (256, 64, 3, 1, 2, 0),
    (128, 128, 4, 1, 2, 1), (128, 128, 4, 8, 2, 0), (128, 128, 5, 1, 2, 1), (128, 256, 3, 1, 2, 1), (128, 256, 4, 8, 2, 1),
    (256, 128, 3, 1, 2, 1), (64, 128, 4, 1, 1, 1), (64, 256, 4, 1, 1, 1), (64, 64, 5, 1, 1, 1), (128, 128, 4, 1, 1, 1),
    (64, 128, 5, 1, 1, 0),
]


# Deeper rings (stages + ring: 5 to 9 stages), where shared memory holds them: more of the gathered rows in flight.
WGMMA_RINGS = [
    (128, 64, 4, 1, 2, 0, 2), (128, 64, 5, 1, 2, 1, 2), (256, 64, 3, 1, 2, 0, 2), (128, 128, 4, 8, 2, 0, 2),
    (128, 128, 5, 1, 2, 1, 2), (64, 128, 5, 1, 1, 1, 4), (64, 128, 4, 1, 1, 1, 2), (64, 64, 5, 1, 1, 1, 4),
]
# Split K over a cluster, the layers of few tiles (7x7, 14x14): larger tiles that still fill the SMs.
WGMMA_SPLITS = [
    (128, 128, 4, 1, 2, 0, 0, 2), (128, 128, 4, 1, 2, 1, 0, 2), (128, 128, 5, 8, 2, 1, 2, 2), (128, 128, 4, 1, 2, 1, 0, 4),
    (128, 256, 3, 1, 2, 1, 0, 2), (128, 256, 3, 1, 2, 1, 0, 4), (256, 128, 3, 1, 2, 1, 0, 2), (256, 128, 3, 1, 2, 1, 0, 4),
    (64, 128, 5, 1, 1, 1, 0, 2), (64, 256, 4, 1, 1, 1, 0, 2),
]


# The TMA loader (A by im2col, B's rows by boxes; a producer warpgroup), tiles (BM, BN, stages, raster,
# consumers, ring, split_k, cluster, persistent): the cp_async tiles that won, with clusters of 2
# multicasting B, persistent blocks, and split K on the layers of few tiles.
TMA_TILES = [
    (128, 64, 4, 1, 2, 0, 1, 1, 0), (128, 64, 5, 1, 2, 2, 1, 1, 0), (128, 64, 4, 1, 1, 0, 1, 1, 0),
    (128, 64, 4, 1, 2, 0, 1, 2, 0), (128, 64, 4, 1, 2, 2, 1, 1, 1), (256, 64, 4, 1, 2, 0, 1, 1, 0),
    (128, 128, 4, 1, 2, 0, 1, 1, 0), (128, 128, 5, 1, 2, 0, 1, 1, 0), (128, 128, 4, 8, 2, 2, 1, 1, 0),
    (128, 128, 4, 1, 2, 0, 1, 2, 0), (128, 128, 4, 1, 2, 0, 1, 1, 1), (128, 128, 4, 1, 2, 0, 1, 2, 1),
    (128, 256, 3, 1, 2, 0, 1, 1, 0), (128, 256, 4, 1, 2, 0, 1, 1, 0), (128, 256, 4, 1, 2, 0, 1, 2, 0),
    (128, 256, 4, 1, 2, 0, 1, 1, 1), (256, 128, 4, 1, 2, 0, 1, 1, 0), (256, 128, 4, 1, 2, 0, 1, 2, 0),
    (64, 128, 5, 1, 1, 0, 1, 1, 0), (64, 256, 4, 1, 1, 0, 1, 1, 0), (64, 128, 4, 1, 1, 2, 1, 2, 0),
    (128, 128, 4, 1, 2, 0, 2, 1, 0), (128, 128, 4, 1, 2, 2, 4, 1, 0), (128, 64, 5, 1, 2, 0, 2, 1, 0),
    (128, 256, 3, 1, 2, 0, 2, 1, 0), (64, 128, 5, 1, 1, 0, 2, 1, 0), (128, 128, 4, 1, 2, 2, 1, 1, 1),
    (128, 64, 4, 1, 2, 4, 1, 1, 1), (128, 64, 4, 1, 1, 2, 1, 1, 0),
    # after the a4194cb profile of the two short layers: cuDNN's one-warpgroup m64n128 tile with deeper rings, one
    # consumer over 128 rows, 64x256 split in two; 7-stage 128x128 rings (cuDNN's 1x1 kernel keeps 7 stages)
    (64, 128, 5, 1, 1, 2, 1, 1, 0), (64, 128, 5, 1, 1, 4, 1, 1, 1), (64, 128, 4, 1, 1, 4, 1, 1, 0),
    (64, 256, 4, 1, 1, 0, 2, 1, 0), (128, 128, 4, 1, 1, 0, 2, 1, 0), (128, 128, 4, 1, 1, 0, 1, 1, 1),
    (128, 64, 4, 1, 1, 4, 1, 1, 1), (64, 64, 5, 1, 1, 4, 1, 1, 1), (128, 128, 3, 1, 2, 4, 1, 1, 1),
    (128, 128, 5, 1, 2, 2, 1, 1, 1), (64, 256, 5, 1, 1, 0, 1, 1, 1),
    # after de96dff's profile (blocks stepping through K together share their reads in L2's coalescer): 64x128
    # in 97 KB, two blocks an SM, so the 1x1 layer's 196 tiles fit one wave (c978e21: its pick, cold 0.79 -> 0.81-0.85;
    # 64x64 at two or three blocks an SM and 64x128 split in two lost everywhere)
    (64, 128, 4, 1, 1, 0, 1, 1, 0),
]
# The transposed product (swap_ab: out^T = W A^T, the pixels the instruction's N), tiles (BM + extra, BN, stages,
# raster, consumers, ring, cluster, persistent, what a cluster shares), after d0a386d's profile of the 14x14 1x1
# layer: cuDNN's kernel runs 132 blocks of 96 pixels by 128 channels (6272 pixels: 66 x 2 tiles, one an SM) with
# 7 stages, in 2-block clusters that share the pixel rows; ours 98 tiles of 128x128 left 34 SMs idle. 96 x 128 with
# 6 to 8 stages, one or two consumers, clusters of 2 sharing W's rows or the pixels', persistent; the layers'
# other shapes transposed (96 x 64: 264 tiles, two waves; 96 x 256; 160 and 192 pixels; 64 and 128 swapped).
SWAPPED_TILES = [
    ((64, 32), 128, 4, 1, 2, 2, 1, 0), ((64, 32), 128, 5, 1, 2, 2, 1, 0), ((64, 32), 128, 4, 1, 2, 4, 1, 0),
    ((64, 32), 128, 5, 1, 1, 2, 1, 0), ((64, 32), 128, 5, 1, 2, 2, 2, 0), ((64, 32), 128, 5, 1, 2, 2, 1, 1),
    ((64, 32), 64, 4, 1, 1, 4, 1, 0), ((64, 32), 256, 4, 1, 2, 0, 1, 0), ((128, 32), 128, 4, 1, 2, 2, 1, 0),
    ((128, 64), 128, 4, 1, 2, 0, 1, 0), ((64, 0), 128, 5, 1, 2, 2, 1, 0), ((64, 0), 128, 5, 1, 1, 4, 1, 1),
    ((128, 0), 128, 4, 1, 2, 2, 1, 1),
    ((64, 32), 128, 5, 1, 2, 2, 2, 0, "a"), ((64, 32), 128, 4, 1, 2, 4, 2, 0, "a"), ((64, 32), 128, 5, 1, 1, 2, 2, 0, "a"),
    ((64, 32), 128, 5, 1, 2, 2, 2, 1, "a"), ((64, 0), 128, 5, 1, 1, 4, 2, 0, "a"),
]
# Clusters sharing the pixel rows on the unswapped kernel: the 1x1 layer's two 128-channel tiles of each 128
# pixels, and cuDNN's 7x7 tile (64 x 128, one warpgroup, 2-block clusters) with its deeper rings.
SHARED_A_TILES = [(128, 128, 4, 1, 2, 2, 1, 2, 0), (128, 128, 4, 1, 2, 2, 1, 2, 1), (64, 128, 5, 1, 1, 4, 1, 2, 0),
                  (64, 128, 5, 1, 1, 2, 1, 2, 1)]
# Clusters of 4 and 8 blocks (wide_cluster), tiles (BM, BN, stages, raster, consumers, ring, persistent, blocks,
# what they share), after b4f399e's profile of the 7x7 3x3 layer: cuDNN's pick runs 128 x 64 tiles, two consumer
# warpgroups, in 8-block clusters (a pixel tile's 8 channel tiles, sharing the pixels); ours 64 x 128 with 4-block
# clusters (its 4 channel tiles); 64 x 64 in clusters of 8; clusters of 4 sharing W's rows.
WIDE_CLUSTER_TILES = [
    (128, 64, 4, 1, 2, 0, 0, 8, "a"), (128, 64, 5, 1, 2, 0, 0, 8, "a"), (128, 64, 4, 1, 2, 2, 0, 8, "a"),
    (128, 64, 4, 1, 2, 2, 1, 8, "a"), (128, 64, 4, 1, 2, 0, 0, 4, "a"), (64, 128, 5, 1, 1, 4, 0, 4, "a"),
    (64, 128, 4, 1, 1, 0, 0, 4, "a"), (64, 64, 5, 1, 1, 4, 0, 8, "a"), (128, 128, 4, 1, 2, 2, 0, 4, "a"),
    (128, 64, 4, 1, 2, 0, 0, 4, "b"), (128, 128, 4, 1, 2, 0, 0, 4, "b"),
]
# Stream-K (persistent blocks sharing every tile's K steps evenly), tiles (BM, BN, stages, raster,
# consumers, ring), for the layers whose 98-104 tiles leave a quarter of the SMs idle.
STREAM_K_TILES = [
    (128, 128, 4, 1, 2, 0), (128, 128, 5, 1, 2, 0), (128, 128, 4, 1, 2, 2), (128, 256, 4, 1, 2, 0),
    (128, 256, 3, 1, 2, 0), (256, 128, 4, 1, 2, 0), (128, 64, 4, 1, 2, 2), (128, 64, 5, 1, 2, 2),
    (128, 64, 4, 1, 1, 2), (64, 256, 4, 1, 1, 0), (64, 128, 5, 1, 1, 0), (128, 128, 4, 8, 2, 2),
]


def wgmma_pick(bm, bn, stages, raster, consumers, producer, ring=0, split_k=1) -> tuple:
    return (bm, bn, 64, 16, 16, stages, raster, "registers", split_k, "wgmma", consumers, producer, ring,
            "cp_async", 1, 0, 0)


def tma_pick(bm, bn, stages, raster, consumers, ring, split_k, cluster, persistent, stream_k=0, swap_ab=0,
             block_m_extra=0, shares="b", wide_cluster=0) -> tuple:
    return (bm, bn, 64, 16, 16, stages, raster, "registers", split_k, "wgmma", consumers, 1, ring,
            "tma", cluster, persistent, stream_k, swap_ab, block_m_extra, shares, wide_cluster)


def swapped_pick(bm, bn, stages, raster, consumers, ring, cluster, persistent, shares="b") -> tuple:
    rows, extra = bm
    return tma_pick(rows, bn, stages, raster, consumers, ring, 1, cluster, persistent, 0, 1, extra, shares)


def shared_a_pick(bm, bn, stages, raster, consumers, ring, split_k, cluster, persistent) -> tuple:
    return tma_pick(bm, bn, stages, raster, consumers, ring, split_k, cluster, persistent, shares="a")


def wide_cluster_pick(bm, bn, stages, raster, consumers, ring, persistent, blocks, shares) -> tuple:
    return tma_pick(bm, bn, stages, raster, consumers, ring, 1, 2, persistent, shares=shares, wide_cluster=blocks)


def stream_k_pick(bm, bn, stages, raster, consumers, ring) -> tuple:
    return tma_pick(bm, bn, stages, raster, consumers, ring, 1, 1, 1, 1)


TUNE_PICKS = ([(*tile, epilogue, 1, *MMA_SYNC) for tile in TILES for epilogue in ("registers", "shared")]
              + [(*tile, "registers", split, *MMA_SYNC) for tile in SPLIT_TILES for split in (2, 4, 8)]
              + [wgmma_pick(*tile) for tile in WGMMA_TILES + WGMMA_RINGS + WGMMA_SPLITS]
              + [tma_pick(*tile) for tile in TMA_TILES] + [stream_k_pick(*tile) for tile in STREAM_K_TILES]
              + [swapped_pick(*tile) for tile in SWAPPED_TILES] + [shared_a_pick(*tile) for tile in SHARED_A_TILES]
              + [wide_cluster_pick(*tile) for tile in WIDE_CLUSTER_TILES])
CHECK_PICKS = [(64, 128, 32, 32, 64, 4, 1, "shared", 1, *MMA_SYNC), (64, 64, 64, 32, 32, 4, 1, "registers", 4, *MMA_SYNC),
               (128, 128, 32, 64, 64, 3, 8, "shared", 1, *MMA_SYNC)]
CHECK_WGMMA_PICKS = [wgmma_pick(128, 128, 4, 1, 2, 1), wgmma_pick(128, 64, 4, 1, 2, 0, 2), wgmma_pick(64, 128, 4, 1, 1, 1),
                     wgmma_pick(128, 128, 4, 1, 2, 1, 0, 2), wgmma_pick(128, 256, 3, 1, 2, 1, 0, 4),
                     tma_pick(128, 128, 4, 1, 2, 0, 1, 1, 0), tma_pick(128, 64, 5, 1, 2, 2, 1, 2, 0),
                     tma_pick(128, 128, 4, 1, 2, 0, 2, 1, 0), tma_pick(128, 256, 4, 1, 2, 0, 1, 2, 1),
                     stream_k_pick(128, 128, 4, 1, 2, 0), stream_k_pick(128, 64, 4, 1, 2, 2),
                     swapped_pick((64, 32), 128, 5, 1, 2, 2, 1, 0), swapped_pick((64, 32), 128, 5, 1, 2, 2, 2, 0),
                     swapped_pick((128, 0), 128, 4, 1, 2, 2, 1, 1), swapped_pick((64, 32), 128, 5, 1, 2, 2, 2, 0, "a"),
                     shared_a_pick(128, 128, 4, 1, 2, 2, 1, 2, 0), wide_cluster_pick(128, 64, 4, 1, 2, 0, 0, 8, "a"),
                     wide_cluster_pick(64, 128, 5, 1, 1, 4, 0, 4, "a"), wide_cluster_pick(128, 64, 4, 1, 2, 0, 0, 4, "b")]
RANDOM_TUNES = 12


def picked(task, tiles) -> list:
    configs = []
    for values in tiles:
        config = task.config_space.from_entity([[name, "ot", v] for name, v in zip(KNOBS, values)])
        if task.why_invalid(config) is None:
            configs.append(config)
    return configs


def distinct(configs: list) -> list:
    return list({c.index: c for c in configs}.values())


def layer_tasks(precisions, names: str = "") -> list[tuple[str, object]]:
    """(name, task) per layer, precision by precision in the order given; `names` (--layers, comma-separated
    presets such as TCC-7-512-512-k3-f16): only those."""
    wanted = {name for name in names.split(",") if name}
    unknown = sorted(wanted - {p.name for p in CONV_TC})
    if unknown:
        raise SystemExit(f"--layers: no preset {', '.join(unknown)}; the layers are {', '.join(p.name for p in CONV_TC)}")
    return [(p.description, engine.create_task(p.task_name, p.args))
            for precision in precisions for p in CONV_TC if p.args[0][2] == precision and (not wanted or p.name in wanted)]


def check_configs(task) -> list:
    return distinct([task.default_config(), *picked(task, CHECK_PICKS)[:2], *picked(task, CHECK_WGMMA_PICKS)])


def tune_configs(task) -> list:
    return distinct([*picked(task, TUNE_PICKS), task.default_config(),
                     *task.config_space.sample(np.random.default_rng(18), RANDOM_TUNES)])


def run_check(options) -> int:
    return check_listed(options, layer_tasks(["float16", "bfloat16"], options.layers), check_configs, name_key="layer")


def run_tune(options) -> int:
    return tune_listed(options, layer_tasks(["float16", "bfloat16"], options.layers), tune_configs)


def run_confirm(options) -> int:
    print(table(confirm_tuned_bests(options, TEMPLATE, "cudnn", "cuDNN")))
    return 0


def table(rows: list[dict]) -> str:
    lines = ["| layer (batch 32, NHWC) | ours warm µs | TFLOP/s | cuDNN warm µs | cuDNN / ours warm | cuDNN / ours cold "
             "| default warm µs | config (its knobs' values, in the space's order) |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        ours, vendor, default = row.get("ours", {}), row.get("cudnn", {}), row.get("default", {})
        ow, oc = median(ours.get("warm_us", [])), median(ours.get("cold_us", []))
        vw, vc = median(vendor.get("warm_us", [])), median(vendor.get("cold_us", []))
        dw = median(default.get("warm_us", []))

        def cell(v, f):
            return "—" if v is None else format(v, f)

        lines.append(f"| {row['workload']} | {cell(ow, '.2f')} | {cell(ow and row['flops'] / ow / 1e6, '.0f')} | "
                     f"{cell(vw, '.2f')} | {cell(ow and vw and vw / ow, '.2f')} | {cell(oc and vc and vc / oc, '.2f')} | "
                     f"{cell(dw, '.2f')} | {'×'.join(str(v) for v in row['config'].values())} |")
    return "\n".join(lines)


def list_configs(layers: str) -> int:
    """Every (workload, config) the check and tune phases generate, for compiling beforehand."""
    return print_configs((task, distinct([*check_configs(task), *tune_configs(task)]))
                         for _, task in layer_tasks(["float16", "bfloat16"], layers))


def main(argv=None) -> int:
    parser = phase_parser(__doc__, "tensor_core_conv")
    parser.add_argument("--layers", default="", help="check, tune and list only these presets, comma-separated")
    options = parser.parse_args(argv)
    if options.phase == "configs":
        return list_configs(options.layers)
    if options.phase == "table":
        print(table(read_json(options.json).get("confirm", [])))
        return 0
    return {"check": run_check, "tune": run_tune, "confirm": run_confirm}[options.phase](options)


if __name__ == "__main__":
    sys.exit(main())
