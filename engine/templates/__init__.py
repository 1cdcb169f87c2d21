"""Template registry: task name (as written in logs) -> template class."""
from __future__ import annotations

from .base import BadArgs, DeviceLimits, Template, UnknownTemplate
from .broadcast import BroadcastNCHW
from .conv2d import Conv2dNCHW, Conv2dNoBatching
from .custom import CustomKernel
from .depthwise import DepthwiseConv2dNCHW
from .gemm import Gemm
from .kernel_tuner import KernelTunerKernel

TEMPLATES: dict[str, type[Template]] = {
    cls.name: cls for cls in (Conv2dNCHW, DepthwiseConv2dNCHW, Conv2dNoBatching, Gemm, BroadcastNCHW, CustomKernel,
                              KernelTunerKernel)
}


def get_template(name: str) -> Template:
    """An instance of the template for this task name; UnknownTemplate lists the known ones."""
    cls = TEMPLATES.get(name)
    if cls is None:
        raise UnknownTemplate(f"unknown template {name!r}; known templates: {', '.join(sorted(TEMPLATES))}")
    return cls()


def least_bytes_moved(task_name: str, args: list) -> int | None:
    """`Template.bytes_moved` from a log's args; None for unknown tasks and refused args."""
    cls = TEMPLATES.get(task_name)
    if cls is None:
        return None
    template = cls()
    try:
        return template.bytes_moved(template.parse_args(args))
    except BadArgs:
        return None


__all__ = ["TEMPLATES", "BadArgs", "DeviceLimits", "Template", "UnknownTemplate", "get_template", "least_bytes_moved"]
