"""The implicit-GEMM conv's CUDA source (the fp32 GEMM's generator over a ConvGemmTiling: B gathered,
C scattered), its inputs and its float64 reference (the direct conv's)."""
from __future__ import annotations

import numpy as np

from ..base import KernelSource
from ..conv2d import kernel as direct_kernel
from ..gemm import kernel as gemm_kernel
from .tiling import ConvGemmParams, ConvGemmTiling


def generate(t: ConvGemmTiling) -> KernelSource:
    return gemm_kernel.generate(t)


def make_inputs(params: ConvGemmParams, rng: np.random.Generator) -> list[np.ndarray]:
    """The direct conv's data, weights and output, then the GEMM's split-K workspace and counters."""
    return direct_kernel.make_inputs(params.conv, rng) + gemm_kernel.split_k_buffers(params)


def reference(params: ConvGemmParams, data: np.ndarray, weight: np.ndarray) -> np.ndarray:
    return direct_kernel.reference(params.conv, data, weight)
