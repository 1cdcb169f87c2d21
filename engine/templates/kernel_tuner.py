"""A Kernel Tuner kernel as a task: its space is the tunable parameters, its records come from
Kernel Tuner's files (engine.kernel_tuner). tunerweb holds no source for it, so it replays and
ranks but does not compile: its configs are measured where Kernel Tuner ran them, or through
the custom-kernel template with the kernel's own source (benchmarks/hub_kernels.py)."""
from __future__ import annotations

from ..flops import FlopCountError, register
from ..kernel_tuner import TASK_NAME, KernelTunerWorkload
from ..space import ConfigEntity, ConfigSpace, OtherKnob
from .base import BadArgs, DeviceLimits, Template, knob_features



def _no_flops(args: list) -> int:
    """Kernel Tuner's files carry no FLOP count of the kernel: 0, and pages rank these by time."""
    try:
        KernelTunerWorkload.from_args(args)
    except ValueError as exc:
        raise FlopCountError(f"kernel_tuner: {exc}") from None
    return 0


register(TASK_NAME, _no_flops)


class KernelTunerKernel(Template):
    name = TASK_NAME

    def parse_args(self, args: list) -> KernelTunerWorkload:
        try:
            workload = KernelTunerWorkload.from_args(args)
        except ValueError as exc:
            raise BadArgs(f"kernel_tuner: {exc}") from None
        return workload

    def define_space(self, params: KernelTunerWorkload) -> ConfigSpace:
        return ConfigSpace([OtherKnob(name, list(values)) for name, values in params.tune_params])

    def why_invalid(self, params: KernelTunerWorkload, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        # Kernel Tuner's restrictions are Python; the space a recording holds is the valid space.
        return None

    def features(self, params: KernelTunerWorkload, config: ConfigEntity) -> dict[str, float]:
        return knob_features(config)

    def default_config(self, params: KernelTunerWorkload, space: ConfigSpace) -> ConfigEntity:
        """The lowest index of the space (a recording's restricted space: its first recorded config)."""
        return space.get(next(space.iter_indexes()))

    def kernel(self, params: KernelTunerWorkload, config: ConfigEntity):
        raise BadArgs(f"{params.kernel_name} is a Kernel Tuner kernel without source here: replay its cache, "
                      "or tune its source through the custom template")
