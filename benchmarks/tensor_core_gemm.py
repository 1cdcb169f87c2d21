"""Tensor-core GEMM (engine.ops.gemm_tc) on this GPU: correct, tuned briefly, confirmed against cuBLAS.

    python benchmarks/tensor_core_gemm.py check   --json OUT.json [--budget-s 60]
    python benchmarks/tensor_core_gemm.py tune    --json OUT.json --log OUT.log [--budget-s 90]
    python benchmarks/tensor_core_gemm.py confirm --json OUT.json [--budget-s 70] [--top 3] [--rounds 5]
    python benchmarks/tensor_core_gemm.py table   --json OUT.json   # the confirmed table again, from the JSON
    python benchmarks/tensor_core_gemm.py configs          # every config the phases try, one per line
    python benchmarks/tensor_core_gemm.py check --only wgmma   # the wgmma mainloop's configs alone, quick

* check: per precision (bf16, fp16, tf32), a handful of configs (`check_configs`) on small
  shapes with tails (M, N, K not multiples of any tile) and a decode shape, through the GPU
  measurer: its float64 reference and the precision's tolerance; a failing config is reported.
* tune: per precision, 4096^3 and the 16x4096x4096 decode step, then bf16's other decode steps
  (64 and 128 x 4096 x 4096, 16 x 4096 x 14336) and 8192^3, tf32 last; a fixed candidate list
  (hand-picked tiles, split-K ones on decode shapes, then a seeded random sample of valid
  configs: `tune_configs`), all records to an AutoTVM log.
* confirm: each tuned workload's fastest config (`--top K`: the pick among its K fastest by the worse
  of the warm and cold ratios; a JSON with a `picked` section: those picks) re-timed by the confirmation
  protocol (engine.confirm, a fresh measuring process, interleaved with cuBLAS of the same precision and
  the default config, warm and cold; benchmarks/phases.py); prints the table last.

`--square` tunes only bf16 and fp16 at 4096^3 and 8192^3 (issue 18's goal of 0.95 of cuBLAS);
`--decode` only bf16's decode steps (16, 64 and 128 x 4096 x 4096 and x 4096 x 14336: issue 18's
goal of beating cuBLAS there); `--shapes 64x4096x14336,...` tunes only the workloads of those tags.
`--tf32` checks and tunes only tf32, at 4096^3 and 8192^3 (issue 18's goal of 0.90 of cuBLAS), with the
wgmma configs of engine.ops.gemm_tc.wgmma_tf32 (C's transpose, B^T from registers) beside mma_sync's.
`--c16` gives every bf16 and fp16 workload of check and tune a C in its own precision (the third
argument of engine.ops.gemm_tc's workloads), against cuBLAS writing the same C; without it C is
float32, against cuBLAS writing float32 (torch.mm's out_dtype).
`--only wgmma` (or `mma_sync`) keeps one mainloop's configs (and precisions: tf32's wgmma runs with `--tf32`);
check then also runs four wgmma configs at 4096^3 (cp_async, tma, tma in clusters, and those
persistent), and prints each correct config's relative L2 error against the reference next to
the tolerance.

Each phase merges its section into the JSON (a phase killed by its timeout leaves the others')
and stops starting new work after `--budget-s`. The candidate lists are fixed, so the same
configs can be compiled beforehand for sm_90 on a machine without a GPU (`configs`).
"""
from __future__ import annotations

import contextlib
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import numpy as np  # noqa: E402

import engine  # noqa: E402
from phases import (check_listed, confirm_tuned_bests, median, phase_parser, print_configs, read_json,  # noqa: E402
                    tune_listed)
from engine.ops.gemm_tc.tiling import WGMMA_BLOCK_K  # noqa: E402
from engine.workloads import GEMM_TC_PRECISIONS, gemm_tc_args  # noqa: E402

PRECISIONS = list(GEMM_TC_PRECISIONS.values())  # bfloat16, float16, tf32
CHECK_SHAPES = [(200, 264, 136), (16, 512, 1024), (130, 64, 520)]  # (M, N, K); tails everywhere
TUNE_SHAPES = [("4096^3", 4096, 4096, 4096), ("16x4096x4096", 16, 4096, 4096)]
# bf16 only, after every precision's two (the budget stops starting workloads, so last goes first):
# the other decode steps of issue 18 and the large square.
MORE_BF16_SHAPES = [("64x4096x4096", 64, 4096, 4096), ("128x4096x4096", 128, 4096, 4096),
                    ("16x4096x14336", 16, 4096, 14336), ("8192^3", 8192, 8192, 8192)]
RANDOM_CHECKS = 3
RANDOM_TUNES = 8
DECODE_M = 128  # M up to this: a decode step (few tiles of C; split-K and narrow tiles)
KNOBS = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "warps_k", "stages", "raster")
# Hand-picked tiles: CUTLASS-like 128x256 / 256x128 with 64x64 warps for the square shapes; for
# a decode step one 16-row tile of A and narrow, deep tiles of B over many blocks (sliced K).
SQUARE_PICKS = [
    (128, 256, 32, 64, 64, 1, 3, 8), (256, 128, 32, 64, 64, 1, 3, 8), (128, 256, 32, 64, 64, 1, 4, 8),
    (128, 128, 32, 64, 64, 1, 4, 8), (128, 128, 64, 64, 64, 1, 3, 8), (128, 256, 64, 64, 64, 1, 3, 16),
]
DECODE_PICKS = [
    (16, 32, 128, 16, 32, 4, 4, 1), (16, 32, 128, 16, 16, 4, 4, 1), (16, 16, 128, 16, 16, 4, 4, 1),
    (16, 64, 128, 16, 32, 4, 3, 1), (16, 32, 64, 16, 16, 2, 4, 1), (16, 64, 64, 16, 16, 4, 4, 1),
]
# The wgmma mainloop (16-bit precisions on sm_90): its own knobs, the mma_sync-only ones at
# their first values. Square: CUTLASS-like 128x256 with two consumer warpgroups and a producer;
# decode: one m64 consumer (48 of its rows idle at M = 16) over narrow tiles of B.
# every knob from loader on may be left out (their defaults: cp_async, 1, 0, 1, 0, 0, 0, normal, 0, 0)
WGMMA_KNOBS = ("block_m", "block_n", "stages", "raster", "consumers", "producer", "loader", "cluster", "persistent",
               "split_k", "turns", "pingpong", "ring", "l2_hint", "stream_k", "swap_ab", "cluster_shares")
WGMMA_FIXED = (("warp_m", 16), ("warp_n", 16), ("warps_k", 1), ("mainloop", "wgmma"))  # and block_k, by precision
# TMA loads (a producer thread issues them; the consumers keep 232 registers): both 2-consumer
# tiles of 128 accumulators a thread, 3 and 4 stages, raster groups; alone and in 2-block
# clusters that multicast B (raster then counts rows of clusters); persistent (132 blocks walk the tiles).
PINGPONG_SQUARE_PICKS = [
    (128, 128, 4, 8, 2, 1, "tma", 1, 1, 1, 0, 1), (128, 128, 4, 16, 2, 1, "tma", 1, 1, 1, 0, 1),
    (128, 128, 4, 4, 2, 1, "tma", 1, 1, 1, 0, 1), (128, 128, 3, 8, 2, 1, "tma", 1, 1, 1, 0, 1),
    (128, 128, 4, 8, 2, 1, "tma", 2, 1, 1, 0, 1), (64, 256, 4, 8, 2, 1, "tma", 1, 1, 1, 0, 1),
    (64, 256, 4, 8, 2, 1, "tma", 2, 1, 1, 0, 1), (64, 256, 3, 8, 2, 1, "tma", 1, 1, 1, 0, 1),
]
WGMMA_SQUARE_PICKS = [
    (128, 256, 4, 8, 2, 1), (128, 256, 3, 8, 2, 1), (128, 256, 4, 8, 2, 0), (256, 128, 4, 8, 2, 1),
    (128, 128, 4, 8, 1, 1), (128, 128, 4, 8, 1, 0),
    (128, 256, 4, 8, 2, 1, "tma"), (128, 256, 3, 8, 2, 1, "tma"), (128, 256, 4, 16, 2, 1, "tma"),
    (128, 256, 4, 4, 2, 1, "tma"), (128, 256, 4, 1, 2, 1, "tma"), (256, 128, 4, 8, 2, 1, "tma"),
    (256, 128, 3, 8, 2, 1, "tma"), (256, 128, 4, 16, 2, 1, "tma"), (128, 128, 4, 8, 1, 1, "tma"),
    (128, 256, 4, 8, 2, 1, "tma", 2), (128, 256, 4, 4, 2, 1, "tma", 2), (128, 256, 4, 16, 2, 1, "tma", 2),
    (128, 256, 3, 8, 2, 1, "tma", 2), (256, 128, 4, 8, 2, 1, "tma", 2), (256, 128, 4, 4, 2, 1, "tma", 2),
    (128, 256, 4, 8, 2, 1, "tma", 1, 1), (128, 256, 4, 8, 2, 1, "tma", 2, 1), (128, 256, 4, 16, 2, 1, "tma", 2, 1),
    (256, 128, 4, 8, 2, 1, "tma", 2, 1),
    # around the best of the first TMA run (128x256, 4 stages, raster 8, persistent): raster, stages, 256x128
    (128, 256, 4, 4, 2, 1, "tma", 1, 1), (128, 256, 4, 16, 2, 1, "tma", 1, 1), (128, 256, 3, 8, 2, 1, "tma", 1, 1),
    (256, 128, 4, 8, 2, 1, "tma", 1, 1), (256, 128, 4, 16, 2, 1, "tma", 1, 1),
    # pingpong: each consumer a whole 128x128 or 64x256 tile (128 accumulators a thread), the two in turn
    *PINGPONG_SQUARE_PICKS,
]
WGMMA_DECODE_PICKS = [(64, 64, 4, 1, 1, 1), (64, 128, 4, 1, 1, 1), (64, 64, 4, 1, 1, 0), (64, 256, 3, 1, 1, 1),
                      (64, 64, 4, 1, 1, 1, "tma"), (64, 128, 4, 1, 1, 1, "tma")]
# The check's wgmma configs: every knob value at least once, tails in M, N and K.
WGMMA_CHECK_PICKS = [
    (64, 64, 2, 1, 1, 0), (64, 64, 2, 1, 1, 1), (64, 128, 3, 4, 1, 1), (128, 256, 4, 1, 2, 1),
    (128, 256, 4, 1, 2, 0), (256, 128, 3, 1, 4, 0), (128, 128, 4, 1, 1, 0),
    (64, 64, 2, 1, 1, 1, "tma"), (64, 128, 3, 4, 1, 1, "tma"), (128, 256, 4, 1, 2, 1, "tma"),
    (256, 128, 3, 1, 2, 1, "tma"), (64, 128, 3, 1, 1, 1, "tma", 2), (128, 256, 4, 1, 2, 1, "tma", 2),
    (64, 64, 3, 1, 1, 1, "tma", 1, 0, 2), (64, 128, 4, 1, 1, 1, "tma", 1, 0, 4), (128, 128, 3, 1, 2, 1, "tma", 1, 0, 8),
    (64, 64, 4, 1, 1, 1, "tma", 1, 0, 2, 0, 0, 8), (64, 128, 4, 4, 1, 1, "tma", 1, 0, 1, 0, 0, 4),
    (128, 64, 4, 1, 2, 1, "tma", 1, 0, 1, 0, 0, 4), (64, 64, 2, 1, 1, 1, "tma", 1, 0, 1, 0, 0, 12),
    (64, 64, 4, 1, 1, 1, "tma", 1, 0, 2, 0, 0, 4, "stream_b"),
    (128, 128, 3, 1, 2, 1, "tma", 2, 0, 1, 0, 0, 0, "stream_b"),
    (64, 64, 4, 1, 1, 1, "tma", 1, 1, 1, 0, 0, 0, "normal", 2),
    (128, 64, 3, 1, 2, 1, "tma", 1, 1, 1, 0, 0, 4, "stream_b", 1),
    (64, 64, 4, 1, 1, 1, "tma", 1, 1, 1, 0, 0, 0, "stream_b", 4),
    # swap_ab: narrow tiles of A's rows, a cluster sharing one panel of B by rows, split K, a 16-bit C's pairs
    (32, 64, 4, 1, 1, 1, "tma", 2, 0, 1, 0, 0, 8, "normal", 0, 1), (16, 128, 3, 1, 1, 1, "tma", 1, 0, 2, 0, 0, 0,
                                                                    "stream_b", 0, 1),
    (64, 128, 4, 1, 2, 1, "tma", 1, 1, 1, 0, 0, 0, "normal", 2, 1), (128, 128, 3, 1, 2, 1, "tma", 1, 0, 1, 0, 0, 0,
                                                                     "normal", 0, 1),
    (32, 64, 3, 4, 1, 1, "tma", 1, 0, 1, 0, 0, 0, "normal", 0, 1),
    # clusters sharing A: with split K (2 columns x 2 splits), alone (a spare column past N), persistent
    (64, 64, 4, 1, 1, 1, "tma", 2, 0, 2, 0, 0, 4, "normal", 0, 0, "a"), (64, 64, 3, 1, 1, 1, "tma", 2, 0, 1, 0, 0, 0,
                                                                       "stream_b", 0, 0, "a"),
    (128, 128, 3, 1, 2, 1, "tma", 2, 1, 1, 0, 0, 0, "normal", 0, 0, "a"),
]
# split_k with TMA loads: a decode step's 16 to 64 tiles of C (M <= 64: one 64-row tile, or two
# at M = 128) times 2 to 8 splits over 128 to 256 blocks, each streaming its share of B's K.
WGMMA_SPLIT_DECODE_PICKS = [
    (64, 64, 4, 1, 1, 1, "tma", 1, 0, 2), (64, 64, 4, 1, 1, 1, "tma", 1, 0, 4), (64, 64, 4, 1, 1, 1, "tma", 1, 0, 8),
    (64, 128, 4, 1, 1, 1, "tma", 1, 0, 2), (64, 128, 4, 1, 1, 1, "tma", 1, 0, 4), (64, 128, 4, 1, 1, 1, "tma", 1, 0, 8),
    (64, 256, 3, 1, 1, 1, "tma", 1, 0, 4), (64, 256, 4, 1, 1, 1, "tma", 1, 0, 8), (64, 128, 3, 1, 1, 1, "tma", 1, 0, 4),
    (128, 128, 4, 1, 2, 1, "tma", 1, 0, 4), (128, 64, 4, 1, 2, 1, "tma", 1, 0, 4),
    # deep rings (ring: 8 to 14 stages, what shared memory holds; cuBLAS's decode kernels run 11 to 16), unsplit
    # and split (14 stages only unsplit: a split's partial tile does not fit beside them)
    *[(64, 64, 4, 1, 1, 1, "tma", 1, 0, split, 0, 0, ring) for split in (1, 2, 4, 8) for ring in (4, 8)],
    (64, 64, 2, 1, 1, 1, "tma", 1, 0, 1, 0, 0, 12),
    *[(block_m, block_n, 4, 1, block_m // 64, 1, "tma", 1, 0, split, 0, 0, 4)
      for block_m, block_n in ((64, 128), (128, 64)) for split in (1, 2, 4, 8)],
    # B's boxes evict-first and A's evict-last (l2_hint stream_b) on the decode bests so far and their neighbours
    *[(block_m, block_n, 4, 1, block_m // 64, 1, "tma", 1, 0, split, 0, 0, ring, "stream_b")
      for block_m, block_n, split, ring in ((64, 64, 2, 4), (64, 64, 2, 8), (64, 64, 1, 4), (64, 64, 4, 4),
                                            (64, 128, 2, 4), (64, 128, 1, 4), (128, 64, 2, 4), (128, 64, 1, 4))],
    # the M = 64 best's ring between 6 and 11 stages, either hint
    *[(64, 64, stages, 1, 1, 1, "tma", 1, 0, 2, 0, 0, ring, hint)
      for stages in (2, 3) for ring in (4, 8) for hint in ("normal", "stream_b")],
    # split K without a cluster (stream_k 2, 4: each tile's K steps in that many shares, a block each, partials
    # summed in global memory): wide tiles over 128 blocks, which clusters of 4 could not all hold at once
    *[(block_m, block_n, 4, 1, block_m // 64, 1, "tma", 1, 1, 1, 0, 0, ring, hint, shares)
      for block_m, block_n, ring, shares in ((64, 128, 4, 4), (64, 64, 4, 2), (128, 64, 4, 2), (128, 128, 0, 4),
                                             (64, 256, 0, 4))
      for hint in ("normal", "stream_b")],
    # swapped operands (swap_ab: C^T = B^T A^T): A's few rows are the instruction's N, so a stage is mostly B.
    # 16- to 64-row tiles in 2-block clusters that read each of B's boxes once (cuBLAS's M = 64 kernel is
    # named 64x32 with 16 stages and a 1x2 cluster), split K over a cluster or in global memory
    *[(block_m, 64, 4, 1, 1, 1, "tma", 2, 0, 1, 0, 0, ring, hint, 0, 1)
      for block_m, ring in ((16, 8), (16, 12), (32, 8), (32, 12), (64, 8)) for hint in ("normal", "stream_b")],
    *[(block_m, block_n, 4, 1, 1, 1, "tma", 1, 0, 2, 0, 0, 4, hint, 0, 1)
      for block_m, block_n in ((16, 64), (32, 64), (64, 64), (16, 128)) for hint in ("normal", "stream_b")],
    *[(block_m, 64, 4, 1, 1, 1, "tma", 1, 1, 1, 0, 0, 4, "stream_b", 2, 1) for block_m in (32, 64)],  # 32: M = 16 only
    # clusters of 2 tile columns sharing A (cluster_shares a: cuBLAS's decode kernels run 1x2 clusters), times 1 to 4
    # splits of K (clusters of up to 8 blocks): the M = 64 picks' tiles and rings, each block's A halved
    *[(block_m, block_n, 4, 1, block_m // 64, 1, "tma", 2, 0, split, 0, 0, ring, hint, 0, 0, "a")
      for block_m, block_n, split, ring in ((64, 64, 2, 4), (64, 64, 2, 8), (64, 64, 4, 4), (64, 64, 1, 8),
                                            (64, 128, 2, 4), (64, 128, 1, 4), (128, 64, 2, 4))
      for hint in ("normal", "stream_b")],
    *[(block_m, 64, 4, 1, 1, 1, "tma", 2, 0, 2, 0, 0, 4, "normal", 0, 1, "a") for block_m in (32, 64)],
]
WGMMA_SQUARE_CHECKS = [(128, 256, 4, 8, 2, 1), (128, 256, 4, 8, 2, 1, "tma"), (128, 256, 4, 8, 2, 1, "tma", 2),
                       (128, 256, 4, 8, 2, 1, "tma", 2, 1), (128, 128, 4, 8, 2, 1, "tma", 1, 1, 1, 0, 1),
                       (64, 256, 4, 8, 2, 1, "tma", 2, 1, 1, 0, 1)]  # run at 4096^3 by check --only wgmma
# tf32 on wgmma (tma loader, producer 1, split_k 1): a consumer's tile is block_m rows (the
# instruction's N, up to 256) by 64 or 128 of the block's columns; 2 consumers with and without
# turns, 3 and 4 stages (4 of a 256x128 tile fill 192 KB), raster groups, clusters, persistent.
TF32_SQUARE_PICKS = [
    (256, 128, 4, 8, 2, 1, "tma"), (256, 128, 4, 8, 2, 1, "tma", 1, 0, 1, 1), (256, 128, 3, 8, 2, 1, "tma", 1, 0, 1, 1),
    (256, 128, 4, 16, 2, 1, "tma", 1, 0, 1, 1), (256, 128, 4, 4, 2, 1, "tma", 1, 0, 1, 1),
    (256, 128, 4, 8, 2, 1, "tma", 2, 0, 1, 1), (256, 128, 4, 8, 2, 1, "tma", 1, 1, 1, 1),
    (256, 128, 4, 8, 2, 1, "tma", 2, 1, 1, 1), (256, 128, 4, 8, 2, 1, "tma", 2, 1, 1, 0),
    (256, 128, 4, 8, 2, 1, "tma", 1, 1, 1, 0),
    (128, 256, 4, 8, 2, 1, "tma"), (128, 256, 4, 8, 2, 1, "tma", 1, 0, 1, 1), (128, 256, 4, 8, 2, 1, "tma", 1, 1, 1, 1),
    (128, 256, 4, 8, 2, 1, "tma", 2, 1, 1, 1), (128, 256, 3, 8, 2, 1, "tma", 1, 0, 1, 1),
    (128, 128, 4, 8, 2, 1, "tma", 1, 0, 1, 1), (256, 64, 4, 8, 1, 1, "tma"), (128, 128, 4, 8, 1, 1, "tma"),
]
# The tf32 check's wgmma configs on the small shapes: 1 and 2 consumers, turns, narrow and wide
# instructions, clusters, persistent (with tails in M, N and K there).
TF32_CHECK_PICKS = [
    (64, 64, 2, 1, 1, 1, "tma"), (128, 128, 3, 4, 2, 1, "tma", 1, 0, 1, 1), (256, 128, 4, 1, 2, 1, "tma", 1, 0, 1, 1),
    (16, 128, 2, 1, 1, 1, "tma"), (64, 128, 3, 1, 2, 1, "tma", 2, 0, 1, 1), (128, 256, 4, 1, 2, 1, "tma", 1, 1, 1, 1),
    (256, 128, 4, 1, 2, 1, "tma", 2, 1, 1, 0),
]
TF32_SQUARE_CHECKS = [(256, 128, 4, 8, 2, 1, "tma"), (256, 128, 4, 8, 2, 1, "tma", 1, 0, 1, 1),
                      (256, 128, 4, 8, 2, 1, "tma", 2, 1, 1, 1)]  # run at 4096^3 by check --tf32
# split_k (mma_sync): a tile's K over a cluster of that many blocks, so a decode step's few
# tiles of C keep every SM streaming B. Per decode M, the mma_sync knobs then split_k.
SPLIT_KNOBS = (*KNOBS, "split_k")
SPLIT_DECODE_PICKS = {
    16: [(16, 32, 128, 16, 32, 4, 4, 1, 2), (16, 32, 128, 16, 16, 4, 4, 1, 4), (16, 64, 128, 16, 32, 4, 4, 1, 4),
         (16, 64, 64, 16, 32, 2, 4, 1, 8), (16, 32, 64, 16, 16, 2, 4, 1, 8), (16, 128, 128, 16, 32, 4, 3, 1, 8),
         (16, 64, 128, 16, 16, 4, 4, 1, 2)],
    64: [(64, 64, 64, 32, 32, 1, 4, 1, 4), (64, 64, 128, 32, 32, 2, 3, 1, 4), (32, 64, 128, 16, 32, 4, 3, 1, 4),
         (64, 128, 64, 32, 64, 1, 4, 1, 2), (64, 32, 128, 32, 16, 4, 3, 1, 8), (64, 64, 64, 32, 32, 1, 4, 1, 8),
         (64, 128, 32, 64, 32, 1, 4, 1, 1), (64, 64, 64, 32, 32, 1, 4, 1, 1)],
    128: [(128, 64, 64, 64, 32, 1, 4, 1, 4), (64, 64, 64, 32, 32, 1, 4, 1, 4), (128, 128, 64, 64, 64, 1, 3, 1, 2),
          (128, 64, 128, 32, 32, 2, 3, 1, 4), (128, 128, 32, 64, 64, 1, 4, 1, 4), (64, 128, 64, 32, 64, 1, 4, 1, 2),
          (128, 128, 32, 64, 64, 1, 4, 1, 1)],
}
WGMMA_MORE_DECODE_PICKS = [(128, 64, 4, 1, 2, 0), (128, 128, 4, 1, 1, 0), (128, 128, 4, 1, 2, 1), (64, 128, 4, 1, 1, 0),
                           (128, 128, 4, 1, 2, 1, "tma")]
# The check's split-K configs: uneven splits, sliced K, tails (those valid on each shape).
SPLIT_CHECK_PICKS = [(16, 32, 32, 16, 16, 1, 3, 1, 2), (32, 64, 32, 16, 32, 2, 3, 1, 4),
                     (16, 16, 64, 16, 16, 4, 4, 1, 8), (64, 64, 32, 32, 32, 1, 2, 1, 2), (16, 32, 32, 16, 16, 2, 4, 1, 8)]


def task_of(m: int, n: int, k: int, precision: str):
    """The workload; --c16: a 16-bit precision's C in that precision too."""
    return engine.create_task("gemm_tensorcore", gemm_tc_args(m, n, k, precision, precision if C16 else "float32"))


def picked(task, tiles, knobs=KNOBS, fixed=()) -> list:
    """The hand-picked tiles that are valid for this task, as configs."""
    configs = []
    for values in tiles:
        config = task.config_space.from_entity([[name, "ot", v] for name, v in (*zip(knobs, values), *fixed)])
        if task.why_invalid(config) is None:
            configs.append(config)
    return configs


def wgmma_picked(task, tiles) -> list:
    return picked(task, tiles, WGMMA_KNOBS, (*WGMMA_FIXED, ("block_k", WGMMA_BLOCK_K[task.params.precision])))


ONLY = "all"  # --only: all, wgmma or mma_sync
SQUARE = False  # --square: tune the large square shapes only
DECODE = False  # --decode: tune bf16's decode steps only
SHAPES: list[str] = []  # --shapes: tune only the workloads of these tags (16x4096x14336, 8192^3, ...)
TF32 = False  # --tf32: check and tune tf32 only, at 4096^3 and 8192^3
C16 = False  # --c16: every bf16 and fp16 workload writes C in its precision


def kept(configs: list) -> list:
    return [c for c in configs if ONLY == "all" or c["mainloop"].val == ONLY]


def distinct(configs: list) -> list:
    return list({c.index: c for c in configs}.values())


def check_configs(task) -> list:
    tf32 = task.params.precision == "tf32"
    if task.params.m == task.params.n == task.params.k == 4096:  # check --only wgmma's (or --tf32's) one large shape
        return wgmma_picked(task, TF32_SQUARE_CHECKS if tf32 else WGMMA_SQUARE_CHECKS)
    picks = picked(task, DECODE_PICKS if task.params.m <= 16 else SQUARE_PICKS)[:3]
    wgmma = wgmma_picked(task, TF32_CHECK_PICKS) if tf32 and TF32 else wgmma_picked(task, WGMMA_CHECK_PICKS)
    return kept(distinct([task.default_config(), *picks, *wgmma,
                          *picked(task, SPLIT_CHECK_PICKS, SPLIT_KNOBS),
                          *task.config_space.sample(np.random.default_rng(task.params.m + task.params.k), RANDOM_CHECKS)]))


def tune_configs(task) -> list:
    m = task.params.m
    decode = m <= DECODE_M
    picks = picked(task, DECODE_PICKS if m <= 16 else [] if decode else SQUARE_PICKS)
    if decode:
        picks += picked(task, SPLIT_DECODE_PICKS[min(size for size in SPLIT_DECODE_PICKS if size >= m)], SPLIT_KNOBS)
    wgmma = wgmma_picked(task, (WGMMA_DECODE_PICKS + (WGMMA_MORE_DECODE_PICKS if m > 16 else [])
                                + WGMMA_SPLIT_DECODE_PICKS) if decode
                         else TF32_SQUARE_PICKS if TF32 else WGMMA_SQUARE_PICKS)
    return kept(distinct([*picks, *wgmma, task.default_config(),
                          *task.config_space.sample(np.random.default_rng(18), RANDOM_TUNES)]))


def precisions() -> list[str]:
    if TF32:
        return ["tf32"]
    return [p for p in PRECISIONS if not (ONLY == "wgmma" and p == "tf32")]


def check_tasks() -> list:
    tasks = [task_of(m, n, k, p) for p in precisions() for m, n, k in CHECK_SHAPES]
    large = "tf32" if TF32 else "bfloat16"
    return tasks + ([task_of(4096, 4096, 4096, large)] if ONLY == "wgmma" or TF32 else [])


SQUARE_GOAL = [("4096^3", 4096, 4096, 4096), ("8192^3", 8192, 8192, 8192)]  # issue 18's bf16 and fp16 goal
DECODE_GOAL = [("16x4096x4096", 16, 4096, 4096), *MORE_BF16_SHAPES[:3],  # issue 18's decode steps, bf16
               ("64x4096x14336", 64, 4096, 14336), ("128x4096x14336", 128, 4096, 14336)]


def tune_tasks() -> list[tuple[str, object]]:
    """Every precision but tf32 first, then the more bf16 shapes, then tf32 (its 4096^3 runs long);
    --square: bf16 and fp16 at 4096^3 and 8192^3 only (the goal of 0.95 of cuBLAS); --decode: bf16's
    decode steps; --shapes: only the workloads of those tags. A 16-bit C (--c16) is said in the name."""
    tasks = _tune_tasks()
    tags = [name.split()[-1] for name, _ in tasks]
    unknown = [tag for tag in SHAPES if tag not in tags]
    if unknown:
        raise SystemExit(f"--shapes: no workload tagged {', '.join(unknown)} here; "
                         f"the list's tags: {', '.join(dict.fromkeys(tags))}")
    return [(name if task.params.c_dtype == "float32" else f"{name} → {task.params.c_dtype}", task)
            for (name, task), tag in zip(tasks, tags) if not SHAPES or tag in SHAPES]


def _tune_tasks() -> list[tuple[str, object]]:
    first = [p for p in precisions() if p != "tf32"]
    if TF32:
        return [(f"tf32 {tag}", task_of(m, n, k, "tf32")) for tag, m, n, k in SQUARE_GOAL]
    if SQUARE:
        return [(f"{p} {tag}", task_of(m, n, k, p)) for tag, m, n, k in SQUARE_GOAL for p in first]
    if DECODE:
        return [(f"bfloat16 {tag}", task_of(m, n, k, "bfloat16")) for tag, m, n, k in DECODE_GOAL]
    tasks = [(f"{p} {tag}", task_of(m, n, k, p)) for p in first for tag, m, n, k in TUNE_SHAPES]
    tasks += [(f"bfloat16 {tag}", task_of(m, n, k, "bfloat16")) for tag, m, n, k in MORE_BF16_SHAPES]
    return tasks + [(f"tf32 {tag}", task_of(m, n, k, "tf32")) for tag, m, n, k in TUNE_SHAPES if "tf32" in precisions()]


def relative_error(builder, task, config) -> float:
    """The config's relative L2 error against the reference, run once here (after the measurer
    ran it in its child without a fault or a timeout; its cubin is in the builder's cache), its
    tensor maps (loader tma) encoded for these arrays."""
    import cupy as cp

    from engine.gpu.runner import load_kernel, relative_l2_error

    source = task.template.kernel(task.params, config)
    inputs = task.template.make_inputs(task.params, np.random.default_rng(1))
    (build,) = builder.build([source])
    if not build.ok:
        return float("nan")
    arrays = [cp.asarray(x) for x in inputs]
    load_kernel(cp, build.cubin_path, source, arrays)(source.grid, source.block, tuple(arrays), shared_mem=source.shared_bytes)
    return relative_l2_error(cp.asnumpy(arrays[source.output_index]), task.template.reference(task.params, inputs))


def run_check(options) -> int:
    """check_listed's, with each correct wgmma or tf32 config's relative error beside its tolerance
    (`--only wgmma`, `--tf32`); the builder for that starts at the first such row."""
    from engine.gpu.builder import Builder
    from engine.gpu.device import arch_of

    named = [(f"{t.params.precision:9} {t.params.m}x{t.params.n}x{t.params.k}", t) for t in check_tasks()]
    with contextlib.ExitStack() as stack:
        builders = []

        def with_relative_error(measurer, task, config, row) -> None:
            if not (ONLY == "wgmma" or TF32):
                return
            if not builders:
                builders.append(stack.enter_context(Builder(arch_of(measurer.device), workers=1)))
            row["relative_error"] = relative_error(builders[0], task, config)
            row["error"] = (f"relative L2 error {row['relative_error']:.3g} "
                            f"(tolerance {task.template.tolerance(task.params):g})")

        return check_listed(options, named, check_configs, annotate=with_relative_error)


def run_tune(options) -> int:
    return tune_listed(options, tune_tasks(), tune_configs)


def run_confirm(options) -> int:
    rows = confirm_tuned_bests(options, "gemm_tensorcore", "cublas", "cuBLAS")
    print(table(rows))
    return 0


def table(rows: list[dict]) -> str:
    lines = ["| workload | ours warm µs | TFLOP/s | cuBLAS warm µs | cuBLAS / ours warm | cuBLAS / ours cold | config |",
             "|---|---:|---:|---:|---:|---:|---|"]
    for row in rows:
        ours, vendor = row.get("ours", {}), row.get("cublas", {})
        ow, oc = median(ours.get("warm_us", [])), median(ours.get("cold_us", []))
        vw, vc = median(vendor.get("warm_us", [])), median(vendor.get("cold_us", []))
        cell = (lambda v, f: "—" if v is None else format(v, f))
        lines.append(f"| {row['workload']} | {cell(ow, '.2f')} | {cell(ow and row['flops'] / ow / 1e6, '.0f')} | "
                     f"{cell(vw, '.2f')} | {cell(ow and vw and vw / ow, '.2f')} | {cell(oc and vc and vc / oc, '.2f')} | "
                     f"{'x'.join(str(v) for v in row['config'].values())} |")
    return "\n".join(lines)


def list_configs() -> int:
    """Every (workload, config) the check and tune phases generate, for compiling beforehand."""
    return print_configs([*((task, check_configs(task)) for task in check_tasks()),
                          *((task, tune_configs(task)) for _, task in tune_tasks())])


def main(argv=None) -> int:
    parser = phase_parser(__doc__, "tensor_core_gemm")
    parser.add_argument("--only", choices=["all", "wgmma", "mma_sync"], default="all",
                        help="one mainloop's configs (and its precisions) only")
    parser.add_argument("--square", action="store_true", help="tune bf16 and fp16 at 4096^3 and 8192^3 only")
    parser.add_argument("--decode", action="store_true",
                        help="tune bf16 16x, 64x, 128x4096x4096 and 16x, 64x, 128x4096x14336 only")
    parser.add_argument("--shapes", default="",
                        help="comma-separated tags (64x4096x14336, 8192^3, ...): tune only these of the list")
    parser.add_argument("--tf32", action="store_true", help="check and tune tf32 only, at 4096^3 and 8192^3")
    parser.add_argument("--c16", action="store_true", help="bf16 and fp16 workloads write C in their precision")
    options = parser.parse_args(argv)
    global ONLY, SQUARE, DECODE, TF32, C16, SHAPES
    ONLY, SQUARE, DECODE, TF32, C16 = options.only, options.square, options.decode, options.tf32, options.c16
    SHAPES = [tag.strip() for tag in options.shapes.split(",") if tag.strip()]
    if options.phase == "configs":
        return list_configs()
    if options.phase == "table":
        print(table(read_json(options.json).get("confirm", [])))
        return 0
    return {"check": run_check, "tune": run_tune, "confirm": run_confirm}[options.phase](options)


if __name__ == "__main__":
    sys.exit(main())
