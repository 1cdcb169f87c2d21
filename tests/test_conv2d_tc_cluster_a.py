"""The implicit-GEMM conv's clusters that share A (`cluster_shares` a): a 2-block cluster takes neighbouring
channel tiles of one pixel tile, each block's producer brings its half of the pixel rows by an im2col copy
multicast into both, and each loads all of its own B rows. Without a GPU: the rules, the old configs' indexes,
the tile walk (a cluster's spare channel tile past N), the answers on the CPU (tests/cuda_on_cpu.py multicasts
the im2col copy into each block of the mask) and NVRTC's sm_90a compile."""
from __future__ import annotations

import pytest

import cuda_on_cpu
from gemm_tc_configs import assert_appended_knobs_keep_indexes
from engine.ops.conv2d_tc.tiling import conv_tc_tiling
from engine.ops.gemm_tc.tiling import CLUSTER_SHARES
from test_conv2d_tc_tma import tma_config
from test_conv2d_tensorcore import OUTPUT_ROUNDING, PRECISIONS, task_of

RESNET_14_1X1 = (32, 14, 1024, 256, 1, 1, 0)


def test_the_knob_comes_last_so_earlier_configs_keep_their_index():
    task = task_of(*RESNET_14_1X1)
    names = task.config_space.knob_names
    assert names[names.index("block_m_extra") + 1] == "cluster_shares"  # appended after it, as each knob since
    assert task.config_space.knobs[names.index("cluster_shares")].options == list(CLUSTER_SHARES) == ["b", "a"]
    assert_appended_knobs_keep_indexes(task, "cluster_shares", seed=13)


def test_cudnns_cluster_on_the_14x14_layer_reads_each_pixel_row_once():
    """96 pixels by 128 channels, transposed, in clusters of the two channel tiles of each pixel tile."""
    task = task_of(*RESNET_14_1X1)
    config = tma_config(task, block_m=64, block_m_extra=32, block_n=128, consumers=2, stages=5, ring=2, swap_ab=1,
                        cluster=2, cluster_shares="a")
    assert task.why_invalid(config) is None
    tiling = conv_tc_tiling(task.params, config)
    assert (tiling.tile_grid, tiling.grid, tiling.a_box_rows) == ((66, 2), (132, 1, 1), 48)
    source = task.template.kernel(task.params, config)
    a_map, b_map = source.tensor_maps
    assert (a_map.pixels, b_map.box_rows) == (48, 128)  # half the pixels a block, all of its B rows
    assert "tma_load_im2col_multicast(stage + rank * 6144," in source.code  # 48 rows of 128 bytes further
    assert "tma_load_2d(stage + 12288, &b_tensor_map, k0, col0, bar)" in source.code  # B's 128 rows, its own
    assert "pq = (row0 + rank * 48) %" in source.code and "tile_n = cluster_n * 2 + rank" in source.code
    assert "barrier_arrive_expect_tx(bar, 28672)" in source.code  # each block's stage whole: 96 + 128 rows of 128 bytes


def test_a_clusters_spare_channel_tile_is_not_stored():
    """N = 192 in 64-channel tiles is 3 tiles, no tail, in 2 clusters: the fourth tile lies past N, its stores tested."""
    task = task_of(2, 8, 64, 192, 3, 1, 1)
    config = tma_config(task, block_m=64, block_n=64, stages=3, cluster=2, cluster_shares="a")
    tiling = conv_tc_tiling(task.params, config)
    assert (tiling.tiles_n, tiling.tile_grid) == (3, (2, 4))
    assert "if (col < 192)" in task.template.kernel(task.params, config).code
    unclustered = tma_config(task, block_m=64, block_n=64, stages=3)
    assert "if (col < 192)" not in task.template.kernel(task.params, unclustered).code


def test_sharing_a_without_a_cluster_says_why():
    task = task_of(*RESNET_14_1X1)
    assert "with cluster 1 (or tf32) it is b's kernel" in task.why_invalid(tma_config(task, cluster_shares="a"))


CPU_KNOBS = ("block_m", "block_m_extra", "block_n", "stages", "consumers", "ring", "persistent", "swap_ab", "split_k")
CPU_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, knob values of CPU_KNOBS)
    (2, 7, 64, 256, 1, 1, 0, (64, 32, 128, 3, 2, 0, 0, 1, 1)),    # cuDNN's tile: 96 pixels x 128 channels, transposed
    (2, 8, 64, 192, 3, 1, 1, (64, 0, 64, 3, 1, 0, 0, 0, 1)),      # 3x3, a spare channel tile past N
    (3, 9, 64, 128, 3, 2, 1, (128, 32, 64, 3, 1, 0, 0, 1, 1)),    # stride 2, 75 pixels of 160: the second half all zeros
    (2, 8, 128, 256, 1, 1, 0, (64, 0, 128, 4, 1, 2, 1, 1, 1)),    # persistent blocks, a ring of 6
    (1, 4, 64, 128, 3, 1, 1, (64, 0, 64, 3, 1, 0, 0, 0, 2)),      # split K: clusters of 2 channel tiles x 2 splits
    (1, 6, 64, 192, 3, 1, 1, (64, 32, 64, 3, 1, 0, 0, 1, 4)),     # transposed, 4 splits, a spare channel tile
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("precision, lag", [(p, 0) for p in PRECISIONS] + [("float16", 2)])
@pytest.mark.parametrize("case", CPU_CASES, ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}s{c[5]}-{c[7][0] + c[7][1]}x{c[7][2]}"
                                                 f"-c{c[7][4]}r{c[7][5]}p{c[7][6]}sw{c[7][7]}s{c[7][8]}" for c in CPU_CASES])
def test_the_kernel_computes_the_reference_on_the_cpu(case, precision, lag):
    """lag 2: the cluster's second block runs behind the first, so a copy into its stage before it released
    the stage would show."""
    *layer, values = case
    task = task_of(*layer, precision)
    config = tma_config(task, cluster=2, cluster_shares="a", **dict(zip(CPU_KNOBS, values)))
    assert task.why_invalid(config) is None
    launches = 2 if config["split_k"].val > 1 else 1  # the output poisoned before each: the sum leaves nothing behind
    assert cuda_on_cpu.error_against_reference(task, config, launches, lag=lag) < OUTPUT_ROUNDING[precision] + 1e-5
