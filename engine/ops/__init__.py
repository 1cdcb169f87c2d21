"""The operators, one package each (`tiling`: params and rules; `kernel`: CUDA source;
`template`: the Template), and the registry of their templates by task name."""
from __future__ import annotations

from .base import BadArgs, DeviceLimits, KernelSource, Template, UnknownTemplate
from .broadcast.template import BroadcastNCHW
from .conv2d.template import Conv2dNCHW, Conv2dNoBatching
from .conv2d_igemm.template import Conv2dNCHWImplicitGemm
from .conv2d_tc.template import Conv2dNHWCTensorCore
from .conv2d_winograd.template import Conv2dNCHWWinograd
from .conv2d_winograd_nonfused.template import Conv2dNCHWWinogradNonfused
from .custom.template import CustomKernel
from .depthwise.template import DepthwiseConv2dNCHW
from .gemm.template import Gemm
from .gemm_tc.template import GemmTensorCore
from ..kernel_tuner.template import KernelTunerKernel

TEMPLATES: dict[str, type[Template]] = {
    cls.name: cls for cls in (Conv2dNCHW, Conv2dNCHWImplicitGemm, Conv2dNCHWWinograd, Conv2dNCHWWinogradNonfused,
                              DepthwiseConv2dNCHW, Conv2dNoBatching,
                              Conv2dNHWCTensorCore, Gemm, GemmTensorCore, BroadcastNCHW, CustomKernel)
}
# Tasks whose records come from elsewhere and which tunerweb replays and ranks but cannot compile
# (a Kernel Tuner kernel: engine.kernel_tuner); jobs run them on replay workers only.
RECORDED_TEMPLATES: dict[str, type[Template]] = {KernelTunerKernel.name: KernelTunerKernel}


def get_template(name: str) -> Template:
    """An instance of the template for this task name; UnknownTemplate lists the known ones."""
    cls = TEMPLATES.get(name) or RECORDED_TEMPLATES.get(name)
    if cls is None:
        known = ", ".join(sorted([*TEMPLATES, *RECORDED_TEMPLATES]))
        raise UnknownTemplate(f"unknown template {name!r}; known templates: {known}")
    return cls()


__all__ = ["RECORDED_TEMPLATES", "TEMPLATES", "BadArgs", "DeviceLimits", "KernelSource", "Template", "UnknownTemplate", "get_template"]
