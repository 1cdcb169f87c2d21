"""The implicit-GEMM conv's clusters of 4 and 8 blocks (`wide_cluster`): a 2-block cluster widened, its blocks
neighbouring channel tiles of one pixel tile each bringing a quarter or an eighth of the pixel rows into all of them
(sharing A, cuDNN's 7x7 tile), or neighbouring pixel tiles sharing W's rows. Without a GPU: the rule, the old
configs' indexes, the tile walk and copies, the answers on the CPU (tests/cuda_on_cpu.py multicasts each copy into
every block of the mask) and NVRTC's sm_90a compile."""
from __future__ import annotations

import pytest

import cuda_on_cpu
from gemm_tc_configs import assert_appended_knobs_keep_indexes
from engine.ops.conv2d_tc.tiling import WIDE_CLUSTERS, conv_tc_tiling
from test_conv2d_tc_tma import tma_config
from test_conv2d_tensorcore import OUTPUT_ROUNDING, PRECISIONS, random_valid_configs, sm_90_build_failures, task_of

RESNET_7_3X3 = (32, 7, 512, 512, 3, 1, 1)


def test_the_knob_comes_last_so_earlier_configs_keep_their_index():
    task = task_of(*RESNET_7_3X3)
    assert task.config_space.knob_names[-2:] == ["cluster_shares", "wide_cluster"]
    assert task.config_space.knobs[-1].options == list(WIDE_CLUSTERS) == [0, 4, 8]
    assert_appended_knobs_keep_indexes(task, "wide_cluster", seed=14)


def test_cudnns_7x7_cluster_gives_each_block_an_eighth_of_the_pixels():
    """128 pixels by 64 channels, two consumers, in clusters of a pixel tile's 8 channel tiles (N = 512)."""
    task = task_of(*RESNET_7_3X3)
    config = tma_config(task, block_m=128, block_n=64, consumers=2, stages=4, cluster=2, cluster_shares="a",
                        wide_cluster=8)
    assert task.why_invalid(config) is None
    tiling = conv_tc_tiling(task.params, config)
    assert (tiling.cluster, tiling.tile_grid, tiling.grid, tiling.a_box_rows) == (8, (13, 8), (104, 1, 1), 16)
    source = task.template.kernel(task.params, config)
    assert source.tensor_maps[0].pixels == 16
    assert "__cluster_dims__(8, 1, 1)" in source.code
    assert "tma_load_im2col_multicast(stage + rank * 2048," in source.code  # 16 rows of 128 bytes further
    assert "tile_n = cluster_n * 8 + rank" in source.code
    assert ", 255)" in source.code  # the copy lands in all 8 blocks


def test_a_wide_cluster_widens_only_a_two_block_one():
    task = task_of(*RESNET_7_3X3)
    reason = task.why_invalid(tma_config(task, cluster=1, wide_cluster=4))
    assert "it takes cluster 2, not 1" in reason
    assert task.why_invalid(tma_config(task, block_m=128, block_n=64, cluster=2, wide_cluster=4)) is None


def test_half_of_a_wide_cluster_at_least_has_a_tile():
    """N = 256 in 64-channel tiles is 4: a cluster of 8 sharing A would leave 4 blocks idle; of 4, none."""
    task = task_of(32, 14, 1024, 256, 1, 1, 0)
    eight = tma_config(task, block_m=128, block_n=64, consumers=2, cluster=2, cluster_shares="a", wide_cluster=8)
    assert "takes 8 neighbouring channel tiles, and this layer has 4: half of its blocks" in task.why_invalid(eight)
    four = tma_config(task, block_m=128, block_n=64, consumers=2, cluster=2, cluster_shares="a", wide_cluster=4)
    assert task.why_invalid(four) is None
    small = task_of(1, 4, 64, 64, 3, 1, 1)  # 16 pixels: one pixel tile for 4 blocks sharing B
    reason = small.why_invalid(tma_config(small, block_m=64, block_n=64, cluster=2, wide_cluster=4))
    assert "takes 4 neighbouring pixel tiles, and this layer has 1" in reason


def test_a_share_must_be_whole_swizzle_atoms():
    """Sharing A among 8 blocks, a 96-pixel tile (transposed) would leave each 12 rows: not whole 8-row atoms."""
    task = task_of(*RESNET_7_3X3)
    reason = task.why_invalid(tma_config(task, block_m=64, block_m_extra=32, block_n=64, consumers=1, swap_ab=1,
                                         cluster=2, cluster_shares="a", wide_cluster=8))
    assert "do not part into whole 8-row atoms among a cluster of 8" in reason


def test_split_k_times_a_wide_cluster_is_more_than_one_cluster_holds():
    task = task_of(*RESNET_7_3X3)
    reason = task.why_invalid(tma_config(task, block_m=128, block_n=64, consumers=2, cluster=2, cluster_shares="a",
                                         wide_cluster=8, split_k=2))
    assert "8 tile columns x 2 splits cannot form one thread block cluster (at most 8 blocks)" in reason


WIDE_KNOBS = ("block_m", "block_n", "stages", "consumers", "ring", "persistent", "swap_ab", "cluster_shares",
              "wide_cluster")
WIDE_CPU_CASES = [  # (batch, H=W, C, K, kernel, stride, pad, knob values of WIDE_KNOBS)
    (2, 5, 64, 512, 3, 1, 1, (128, 64, 3, 2, 0, 0, 0, "a", 8)),   # cuDNN's 7x7 tile: 8 channel tiles, 50 of 128 pixels
    (2, 6, 64, 192, 1, 1, 0, (64, 64, 3, 1, 0, 0, 0, "a", 4)),    # 3 channel tiles in a cluster of 4: one past N
    (3, 5, 64, 320, 3, 2, 1, (64, 64, 3, 1, 2, 0, 0, "a", 4)),    # stride 2, 27 pixels in shares of 16, 3 tiles past N
    (3, 8, 64, 64, 3, 1, 1, (64, 64, 3, 1, 0, 0, 0, "b", 4)),     # W's 64 rows shared by 4 pixel tiles (one past M)
    (2, 6, 64, 512, 1, 1, 0, (64, 64, 2, 1, 2, 1, 0, "a", 8)),    # persistent blocks in whole clusters of 8, a ring of 4
    (2, 24, 64, 512, 1, 1, 0, (64, 64, 2, 1, 2, 1, 0, "a", 8)),   # 144 tiles on 128 persistent blocks: some walk on
    (2, 6, 64, 512, 1, 1, 0, (64, 64, 3, 1, 0, 0, 1, "a", 8)),    # transposed: the pixels the instruction's N, 8 each
    (8, 5, 64, 128, 3, 1, 1, (64, 64, 3, 1, 0, 0, 1, "b", 4)),    # transposed, W's rows shared by 4 pixel tiles
]


@pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")
@pytest.mark.parametrize("precision, lag", [(p, 0) for p in PRECISIONS] + [("float16", 2)])
@pytest.mark.parametrize("case", WIDE_CPU_CASES, ids=[f"{c[1]}x{c[2]}-{c[3]}-k{c[4]}s{c[5]}-{c[7][0]}x{c[7][1]}"
                                                      f"-c{c[7][3]}r{c[7][4]}p{c[7][5]}sw{c[7][6]}{c[7][7]}{c[7][8]}"
                                                      for c in WIDE_CPU_CASES])
def test_the_kernel_computes_the_reference_on_the_cpu(case, precision, lag):
    """lag 2: the cluster's last block runs behind the others, so a copy into a stage before it released it
    would show."""
    *layer, values = case
    task = task_of(*layer, precision)
    config = tma_config(task, cluster=2, **dict(zip(WIDE_KNOBS, values)))
    assert task.why_invalid(config) is None
    assert cuda_on_cpu.error_against_reference(task, config, 1, lag=lag) < OUTPUT_ROUNDING[precision] + 1e-5


def wide_cluster_configs(task, count: int, seed: int, shares: str, blocks: int) -> list:
    """`count` of the task's valid configs in clusters of `blocks` (4 or 8) sharing `shares` (a or b), at random."""
    return random_valid_configs(task, count, seed, WIDE_KNOBS,
                                lambda task, **values: tma_config(task, cluster=2, **values),
                                only={"wide_cluster": [blocks], "cluster_shares": [shares]})


def test_random_valid_wide_cluster_configs_compile_for_sm_90(tmp_path):
    picked = []
    for precision, layer in [("float16", RESNET_7_3X3), ("bfloat16", (32, 14, 1024, 256, 1, 1, 0))]:
        task = task_of(*layer, precision)
        picked += [(task, config) for shares, blocks in (("a", 8), ("a", 4), ("b", 4))
                   for config in wide_cluster_configs(task, 2 if shares == "a" else 1, 91, shares, blocks)]
    # 14x14 1024->256 has 4 channel tiles of 64: too few for 8 blocks sharing A
    assert len(picked) == 8 and {config["wide_cluster"].val for _, config in picked} == {4, 8}
    assert sm_90_build_failures(picked, tmp_path) == []
