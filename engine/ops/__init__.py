"""The operators, one package each (`tiling`: params and rules; `kernel`: CUDA source;
`template`: the Template), and the registry of their templates by task name."""
from __future__ import annotations

from .base import BadArgs, DeviceLimits, KernelSource, Template, UnknownTemplate
from .broadcast.template import BroadcastNCHW
from .conv2d.template import Conv2dNCHW, Conv2dNoBatching
from .custom.template import CustomKernel
from .depthwise.template import DepthwiseConv2dNCHW
from .gemm.template import Gemm

TEMPLATES: dict[str, type[Template]] = {
    cls.name: cls for cls in (Conv2dNCHW, DepthwiseConv2dNCHW, Conv2dNoBatching, Gemm, BroadcastNCHW, CustomKernel)
}


def get_template(name: str) -> Template:
    """An instance of the template for this task name; UnknownTemplate lists the known ones."""
    cls = TEMPLATES.get(name)
    if cls is None:
        raise UnknownTemplate(f"unknown template {name!r}; known templates: {', '.join(sorted(TEMPLATES))}")
    return cls()


__all__ = ["TEMPLATES", "BadArgs", "DeviceLimits", "KernelSource", "Template", "UnknownTemplate", "get_template"]
