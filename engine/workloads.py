"""The benchmark workloads (README: ResNet-18 direct, as implicit GEMMs and by Winograd, batched convs, MobileNet, GEMM, tensor-core GEMM and conv, broadcast) as named presets: (task name, args as in a log's `input`).

Args are spelled exactly as TopHub spells them (4-element padding, dilation [1, 1],
dtype last), so a preset and a TopHub record of the same shape are the same workload.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Preset:
    name: str
    group: str
    task_name: str
    args: list
    description: str


def conv2d_args(size: int, ci: int, co: int, kernel: int, stride: int, pad: int, batch: int = 1) -> list:
    return [
        ["TENSOR", [batch, ci, size, size], "float32"],
        ["TENSOR", [co, ci, kernel, kernel], "float32"],
        [stride, stride],
        [pad, pad, pad, pad],
        [1, 1],
        "float32",
    ]


def depthwise_args(size: int, channels: int, stride: int, multiplier: int = 1) -> list:
    """K3 p1, batch 1; `multiplier` output channels per input channel (MobileNet's: 1)."""
    return [
        ["TENSOR", [1, channels, size, size], "float32"],
        ["TENSOR", [channels, multiplier, 3, 3], "float32"],
        [stride, stride],
        [1, 1, 1, 1],
        [1, 1],
        "float32",
    ]


def gemm_args(m: int, n: int, k: int) -> list:
    """C[M, N] = A[M, K] . B[K, N], row-major fp32."""
    return [["TENSOR", [m, k], "float32"], ["TENSOR", [k, n], "float32"]]


def gemm_tc_args(m: int, n: int, k: int, precision: str, c_dtype: str = "float32") -> list:
    """A tensor-core GEMM's args (engine.ops.gemm_tc): float16/bfloat16 tensors, C float32 or
    (`c_dtype`) in their precision, or float32 ones with the "tf32" compute mode (whose C is
    float32 whatever `c_dtype` says: so `c_dtype=precision` asks every precision for its own C)."""
    dtype = "float32" if precision == "tf32" else precision
    tensors = [["TENSOR", [m, k], dtype], ["TENSOR", [k, n], dtype]]
    if precision == "tf32":
        return tensors + ["tf32"]
    return tensors if c_dtype == "float32" else tensors + [c_dtype]


def conv2d_tc_args(batch: int, size: int, ci: int, co: int, kernel: int, stride: int, pad: int, precision: str) -> list:
    """A tensor-core NHWC conv's args (engine.ops.conv2d_tc): KRSC weights, one 16-bit precision."""
    return [
        ["TENSOR", [batch, size, size, ci], precision],
        ["TENSOR", [co, kernel, kernel, ci], precision],
        [stride, stride],
        [pad, pad, pad, pad],
        [1, 1],
        precision,
    ]


def broadcast_args(shape: list[int], op: str, dtype: str = "float32") -> list:
    return [["TENSOR", list(shape), dtype], op]


# (name, H=W, CI, CO, K, stride, pad): ResNet-18 at batch 1, TVM OSDI'18 Table 2.
_RESNET18 = [
    ("C1", 224, 3, 64, 7, 2, 3),
    ("C2", 56, 64, 64, 3, 1, 1),
    ("C3", 56, 64, 64, 1, 1, 0),
    ("C4", 56, 64, 128, 3, 2, 1),
    ("C5", 56, 64, 128, 1, 2, 0),
    ("C6", 28, 128, 128, 3, 1, 1),
    ("C7", 28, 128, 256, 3, 2, 1),
    ("C8", 28, 128, 256, 1, 2, 0),
    ("C9", 14, 256, 256, 3, 1, 1),
    ("C10", 14, 256, 512, 3, 2, 1),
    ("C11", 14, 256, 512, 1, 2, 0),
    ("C12", 7, 512, 512, 3, 1, 1),
]

# (shape tag, H=W, CI, CO, K, stride, pad) x batch: ResNet-18's and ResNet-50's stride-1 3x3 layers and
# ResNet-50's 1x1 ones, batched, fp32 NCHW, as implicit GEMMs (issue 18 step 2). ResNet-18's C1-C12 are
# implicit-GEMM presets too: "IG-C1" ... "IG-C12" (engine.ops.conv2d_igemm, the same args).
_CONV_BATCHED = [("56-64-64-k3", 56, 64, 64, 3, 1, 1), ("28-128-128-k3", 28, 128, 128, 3, 1, 1),
                 ("14-256-256-k3", 14, 256, 256, 3, 1, 1), ("7-512-512-k3", 7, 512, 512, 3, 1, 1),
                 ("56-64-256-k1", 56, 64, 256, 1, 1, 0), ("56-256-64-k1", 56, 256, 64, 1, 1, 0),
                 ("14-1024-256-k1", 14, 1024, 256, 1, 1, 0)]
CONV_BATCHES = (16, 32)

# (name, H=W, C, stride): MobileNet depthwise, K3 p1, batch 1.
_MOBILENET_DW = [
    ("D1", 112, 32, 1),
    ("D2", 112, 64, 2),
    ("D3", 56, 128, 1),
    ("D4", 56, 128, 2),
    ("D5", 28, 256, 1),
    ("D6", 28, 256, 2),
    ("D7", 14, 512, 1),
    ("D8", 14, 512, 2),
    ("D9", 7, 1024, 1),
]

# (name, M, N, K): GEMMs are written M x N x K. The skinny two are conv layers as
# implicit GEMMs (M = output channels, N = output pixels, K = CI x KH x KW): ResNet-18 C12
# (512 x 7*7 x 512*9) and a 56x56 layer of 64 input and 128 output channels (128 x 56*56 x 64*9).
_GEMM = [
    ("G1", 4096, 4096, 4096),
    ("G2", 8192, 8192, 8192),
    ("G3", 1024, 1024, 1024),
    ("G4", 512, 49, 4608),
    ("G5", 128, 3136, 576),
]

# (shape tag, M, N, K) x precision: tensor-core GEMMs (issue 18). Square ones, and the skinny
# GEMMs of an LLM decode step: M = 16, 64, 128 tokens against 4096x4096 and 4096x14336 weights.
_GEMM_TC = [("4096", 4096, 4096, 4096), ("8192", 8192, 8192, 8192)] + [
    (f"d{m}x{n}", m, n, 4096) for n in (4096, 14336) for m in (16, 64, 128)]
GEMM_TC_PRECISIONS = {"bf16": "bfloat16", "f16": "float16", "tf32": "tf32"}

# (shape tag, H=W, CI, CO, K, stride, pad) x precision: ResNet-50's convolutions at batch 32, NHWC on
# tensor cores (issue 18 step 4; cuDNN's channels-last fp16 times on the H200 are its goal).
_CONV_TC = [("56-64-64-k3", 56, 64, 64, 3, 1, 1), ("56-64-256-k1", 56, 64, 256, 1, 1, 0),
            ("28-128-128-k3", 28, 128, 128, 3, 1, 1), ("14-256-256-k3", 14, 256, 256, 3, 1, 1),
            ("7-512-512-k3", 7, 512, 512, 3, 1, 1), ("14-1024-256-k1", 14, 1024, 256, 1, 1, 0)]
CONV_TC_BATCH = 32
CONV_TC_PRECISIONS = {"f16": "float16", "bf16": "bfloat16"}

# (shape tag, [N, C, H, W]) x op: the CINN TileBroadcastTactic's workloads.
_BROADCAST_SHAPES = [("a", [128, 256, 32, 32]), ("b", [256, 64, 56, 56]), ("c", [64, 512, 7, 7])]
_BROADCAST_OPS = ["exp", "div", "rsqrt", "mul_rsqrt"]

PRESETS: dict[str, Preset] = {}
for _name, _hw, _ci, _co, _k, _s, _p in _RESNET18:
    PRESETS[_name] = Preset(
        _name, "ResNet-18", "conv2d_nchw.cuda", conv2d_args(_hw, _ci, _co, _k, _s, _p),
        f"{_hw}² {_ci}→{_co} K{_k} s{_s} p{_p}",
    )
for _name, _hw, _ci, _co, _k, _s, _p in _RESNET18:
    PRESETS[f"IG-{_name}"] = Preset(
        f"IG-{_name}", "ResNet-18 implicit GEMM", "conv2d_nchw_implicit_gemm", conv2d_args(_hw, _ci, _co, _k, _s, _p),
        f"{_hw}² {_ci}→{_co} K{_k} s{_s} p{_p}",
    )
for _batch in CONV_BATCHES:
    for _tag, _hw, _ci, _co, _k, _s, _p in _CONV_BATCHED:
        _name = f"IG-{_tag}-b{_batch}"
        PRESETS[_name] = Preset(_name, f"Batched conv implicit GEMM, batch {_batch}", "conv2d_nchw_implicit_gemm",
                                conv2d_args(_hw, _ci, _co, _k, _s, _p, _batch),
                                f"{_hw}² {_ci}→{_co} K{_k} s{_s} p{_p} batch {_batch}")
# Winograd presets, the 3x3 stride-1 layers above with the same args: WG- the fused kernel's
# (engine.ops.conv2d_winograd), WN- the unfused persistent one's (engine.ops.conv2d_winograd_nonfused).
for _prefix, _kind, _task in (("WG", "Winograd", "conv2d_nchw_winograd_fused"),
                              ("WN", "Winograd unfused", "conv2d_nchw_winograd_nonfused")):
    for _name, _hw, _ci, _co, _k, _s, _p in _RESNET18:
        if (_k, _s) == (3, 1):
            PRESETS[f"{_prefix}-{_name}"] = Preset(f"{_prefix}-{_name}", f"ResNet-18 {_kind}", _task,
                                                   conv2d_args(_hw, _ci, _co, _k, _s, _p),
                                                   f"{_hw}² {_ci}→{_co} K{_k} s{_s} p{_p}")
    for _batch in CONV_BATCHES:
        for _tag, _hw, _ci, _co, _k, _s, _p in _CONV_BATCHED:
            if (_k, _s) == (3, 1):
                _name = f"{_prefix}-{_tag}-b{_batch}"
                PRESETS[_name] = Preset(_name, f"Batched conv {_kind}, batch {_batch}", _task,
                                        conv2d_args(_hw, _ci, _co, _k, _s, _p, _batch),
                                        f"{_hw}² {_ci}→{_co} K{_k} s{_s} p{_p} batch {_batch}")
for _name, _hw, _c, _s in _MOBILENET_DW:
    PRESETS[_name] = Preset(
        _name, "MobileNet depthwise", "depthwise_conv2d_nchw.cuda", depthwise_args(_hw, _c, _s),
        f"{_hw}² {_c} K3 s{_s} p1",
    )

for _name, _m, _n, _k in _GEMM:
    PRESETS[_name] = Preset(_name, "GEMM", "gemm", gemm_args(_m, _n, _k), f"{_m}×{_n}×{_k} (M×N×K)")
for _tag, _m, _n, _k in _GEMM_TC:
    for _short, _precision in GEMM_TC_PRECISIONS.items():
        _name = f"TC-{_tag}-{_short}"
        PRESETS[_name] = Preset(_name, f"Tensor-core GEMM {_short}", "gemm_tensorcore",
                                gemm_tc_args(_m, _n, _k, _precision), f"{_m}×{_n}×{_k} (M×N×K) {_precision}")
        if _precision != "tf32":  # the same inputs with C in their precision, as an LLM's layers write it
            _name = f"TC-{_tag}-{_short}c"
            PRESETS[_name] = Preset(_name, f"Tensor-core GEMM {_short}, {_short} C", "gemm_tensorcore",
                                    gemm_tc_args(_m, _n, _k, _precision, c_dtype=_precision),
                                    f"{_m}×{_n}×{_k} (M×N×K) {_precision} → {_precision}")
for _tag, _hw, _ci, _co, _k, _s, _p in _CONV_TC:
    for _short, _precision in CONV_TC_PRECISIONS.items():
        _name = f"TCC-{_tag}-{_short}"
        PRESETS[_name] = Preset(_name, f"Tensor-core conv {_short}", "conv2d_nhwc_tensorcore",
                                conv2d_tc_args(CONV_TC_BATCH, _hw, _ci, _co, _k, _s, _p, _precision),
                                f"{_hw}² {_ci}→{_co} K{_k} s{_s} p{_p} batch {CONV_TC_BATCH} NHWC {_precision}")
for _op in _BROADCAST_OPS:
    for _tag, _shape in _BROADCAST_SHAPES:
        _name = f"B-{_op}-{_tag}"
        PRESETS[_name] = Preset(_name, "NCHW broadcast", "broadcast_nchw", broadcast_args(_shape, _op),
                                f"{_op} {'×'.join(map(str, _shape))}")
        # fp16, as the models of Paddle CINN's TileBroadcastTactic ran: half the bytes per element, the same work per element.
        PRESETS[_name + "-f16"] = Preset(_name + "-f16", "NCHW broadcast fp16", "broadcast_nchw",
                                         broadcast_args(_shape, _op, "float16"),
                                         f"{_op} {'×'.join(map(str, _shape))} fp16")

RESNET18 = [PRESETS[row[0]] for row in _RESNET18]
MOBILENET_DW = [PRESETS[row[0]] for row in _MOBILENET_DW]
GEMM = [PRESETS[row[0]] for row in _GEMM]
GEMM_TC = [PRESETS[f"TC-{row[0]}-{short}"] for short in GEMM_TC_PRECISIONS for row in _GEMM_TC]
GEMM_TC_16BIT_C = [PRESETS[f"TC-{row[0]}-{short}c"] for short in GEMM_TC_PRECISIONS if short != "tf32" for row in _GEMM_TC]
CONV_TC = [PRESETS[f"TCC-{row[0]}-{short}"] for short in CONV_TC_PRECISIONS for row in _CONV_TC]
BROADCAST = [PRESETS[f"B-{op}-{tag}"] for op in _BROADCAST_OPS for tag, _ in _BROADCAST_SHAPES]
BROADCAST_FP16 = [PRESETS[f"B-{op}-{tag}-f16"] for op in _BROADCAST_OPS for tag, _ in _BROADCAST_SHAPES]


# A custom kernel in Kernel Tuner's manner (engine.ops.custom): the classic
# shared-memory transpose, for the operators benchmark and the tests. Not a preset: the job
# system runs only custom kernels that staff added (jobs.custom_kernels).
_TRANSPOSE_SOURCE = r"""
extern "C" __global__ void transpose(const float* __restrict__ a, float* __restrict__ b) {
    extern __shared__ float tile[];  // TILE x (TILE + PAD): PAD = 1 moves the column reads off one bank
    const int x = blockIdx.x * TILE + threadIdx.x, y0 = blockIdx.y * TILE;
    for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS)
        if (x < COLS && y0 + j < ROWS) tile[j * (TILE + PAD) + threadIdx.x] = a[(size_t)(y0 + j) * COLS + x];
    __syncthreads();
    const int ox = blockIdx.y * TILE + threadIdx.x, oy0 = blockIdx.x * TILE;
    for (int j = threadIdx.y; j < TILE; j += BLOCK_ROWS)
        if (ox < ROWS && oy0 + j < COLS) b[(size_t)(oy0 + j) * ROWS + ox] = tile[threadIdx.x * (TILE + PAD) + j];
}
"""


def transpose_spec(rows: int, cols: int) -> dict:
    """b = a^T for a [rows, cols], tuned over tile size, rows per thread block and padding."""
    return {
        "kernel_name": "transpose", "source": _TRANSPOSE_SOURCE, "sizes": {"ROWS": rows, "COLS": cols},
        "tune_params": [["TILE", [16, 32, 64]], ["BLOCK_ROWS", [1, 2, 4, 8, 16, 32]], ["PAD", [0, 1]]],
        "restrictions": ["TILE % BLOCK_ROWS == 0"],
        "block": ["TILE", "BLOCK_ROWS"], "grid": ["ceil_div(COLS, TILE)", "ceil_div(ROWS, TILE)"],
        "shared_bytes": "TILE * (TILE + PAD) * 4",
        "arguments": [{"name": "a", "shape": ["ROWS", "COLS"], "dtype": "float32"},
                      {"name": "b", "shape": ["COLS", "ROWS"], "dtype": "float32", "output": True}],
        "reference": {"numpy": "transpose(a)"},
        "default": {"TILE": 32, "BLOCK_ROWS": 32, "PAD": 0},
    }


def get_preset(name: str) -> Preset:
    try:
        return PRESETS[name]
    except KeyError:
        raise KeyError(f"unknown preset {name!r}; known: {', '.join(PRESETS)}") from None
