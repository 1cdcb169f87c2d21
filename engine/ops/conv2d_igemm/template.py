"""NCHW fp32 conv2d as an implicit GEMM on the CUDA cores (`tiling` says how)."""
from __future__ import annotations

import numpy as np

from ...space import ConfigEntity, OtherKnob
from ..base import DeviceLimits, KernelSource
from ..conv2d.tiling import nchw_conv_params
from ..gemm.template import Gemm
from ..gemm.tiling import BLOCK_K_CHOICES
from . import kernel
from .tiling import (LOADERS, TEMPLATE_NAME, ConvGemmParams, ConvGemmTiling, conv_gemm_params, conv_gemm_tiling,
                     plain_pointwise, step_channel_choices)


class Conv2dNCHWImplicitGemm(Gemm):
    """The GEMM's space and rules (but for its TMA loaders) over the convolution's GEMM view;
    the workload, inputs, reference and cuDNN baseline are `conv2d_nchw.cuda`'s."""

    name = TEMPLATE_NAME
    baseline_provider = "cudnn"
    loaders = LOADERS

    def parse_args(self, args: list) -> ConvGemmParams:
        return conv_gemm_params(nchw_conv_params(self.name, args))

    def tiling(self, params: ConvGemmParams, config: ConfigEntity) -> ConvGemmTiling:
        return conv_gemm_tiling(params, config)

    def knobs(self, params: ConvGemmParams) -> list[OtherKnob]:
        # last, default first: logs from before it keep their configs' indexes
        return [*super().knobs(params), OtherKnob("step_channels", step_channel_choices(params.conv), default=0)]

    def why_invalid(self, params: ConvGemmParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        channels, block_k = config["step_channels"].val, config["block_k"].val
        if channels and block_k != BLOCK_K_CHOICES[0]:
            return (f"step_channels {channels} sets the K step ({channels} channels of {params.conv.kh}x"
                    f"{params.conv.kw} taps); block_k stays at {BLOCK_K_CHOICES[0]}, not {block_k}")
        return super().why_invalid(params, config, limits)

    def default_vectors(self, params: ConvGemmParams) -> tuple[int, int]:
        """The GEMM's, but B a float at a time where it is gathered."""
        vector_a, _ = super().default_vectors(params)
        plain = plain_pointwise(params.conv) and params.conv.oh * params.conv.ow % 4 == 0
        return vector_a, 4 if plain else 1

    def bytes_moved(self, params: ConvGemmParams) -> int:
        return params.conv.bytes_moved

    # -- GPU half
    def kernel(self, params: ConvGemmParams, config: ConfigEntity) -> KernelSource:
        return kernel.generate(self.tiling(params, config))

    def make_inputs(self, params: ConvGemmParams, rng: np.random.Generator) -> list[np.ndarray]:
        return kernel.make_inputs(params, rng)

    def reference(self, params: ConvGemmParams, inputs: list[np.ndarray]) -> np.ndarray:
        return kernel.reference(params, inputs[0], inputs[1])
