"""A Kernel Tuner kernel as a task: its space is the tunable parameters, its records come from
Kernel Tuner's files (engine.kernel_tuner). tunerweb holds no source for it, so it replays and
ranks but does not compile: its configs are measured where Kernel Tuner ran them, or through
the custom-kernel template with the kernel's own source (benchmarks/hub_kernels_h200.py)."""
from __future__ import annotations

import numpy as np

from ..ops.base import BadArgs, DeviceLimits, KernelSource, Template, knob_features
from ..space import ConfigEntity, ConfigSpace, OtherKnob
from .workload import TASK_NAME, KernelTunerWorkload

_NO_SOURCE = ("is a Kernel Tuner kernel without source here: replay its cache, "
              "or tune its source through the custom template")


class KernelTunerKernel(Template):
    name = TASK_NAME

    def parse_args(self, args: list) -> KernelTunerWorkload:
        try:
            return KernelTunerWorkload.from_args(args)
        except ValueError as exc:
            raise BadArgs(f"kernel_tuner: {exc}") from None

    def define_space(self, params: KernelTunerWorkload) -> ConfigSpace:
        return ConfigSpace([OtherKnob(name, list(values)) for name, values in params.tune_params])

    def flops(self, params: KernelTunerWorkload) -> int:
        """Kernel Tuner's files carry no FLOP count of the kernel: 0, and pages rank these by time."""
        return 0

    def why_invalid(self, params: KernelTunerWorkload, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        # Kernel Tuner's restrictions are Python; the space a recording holds is the valid space.
        return None

    def features(self, params: KernelTunerWorkload, config: ConfigEntity) -> dict[str, float]:
        return knob_features(config)

    def default_config(self, params: KernelTunerWorkload, space: ConfigSpace) -> ConfigEntity:
        """The lowest index of the space (a recording's restricted space: its first recorded config)."""
        return space.get(next(space.iter_indexes()))

    def kernel(self, params: KernelTunerWorkload, config: ConfigEntity) -> KernelSource:
        raise BadArgs(f"{params.kernel_name} {_NO_SOURCE}")

    def make_inputs(self, params: KernelTunerWorkload, rng: np.random.Generator) -> list[np.ndarray]:
        raise BadArgs(f"{params.kernel_name} {_NO_SOURCE}")

    def reference(self, params: KernelTunerWorkload, inputs: list[np.ndarray]) -> np.ndarray:
        raise BadArgs(f"{params.kernel_name} {_NO_SOURCE}")
