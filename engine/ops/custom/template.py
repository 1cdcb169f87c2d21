"""A user's own CUDA kernel with tunable macros, in Kernel Tuner's manner (the spec: `tiling`)."""
from __future__ import annotations

import dataclasses
import math

import numpy as np

from ...safe_expr import ExprError
from ...space import ENUMERATE_LIMIT, ConfigEntity, ConfigSpace, OtherKnob
from ..base import DeviceLimits, KernelSource, LaunchShape, Template, first_valid, knob_features, why_launch_fails
from . import kernel
from .tiling import TEMPLATE_NAME, CustomParams, SpecError, custom_launch, parse_spec


class CustomKernel(Template):
    name = TEMPLATE_NAME

    def parse_args(self, args: list) -> CustomParams:
        if not isinstance(args, list) or len(args) != 1:
            raise SpecError("custom kernel args are [SPEC], SPEC a JSON object (see engine.ops.custom.tiling)", field="args")
        return parse_spec(args[0])

    def define_space(self, params: CustomParams) -> ConfigSpace:
        return ConfigSpace([OtherKnob(name, list(values)) for name, values in params.tune_params])

    def why_invalid(self, params: CustomParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        values = params.values_of(config)
        try:
            for restriction in params.restrictions:
                if not restriction.evaluate(values):
                    return f"restriction {restriction.text!r} is false"
            launch = custom_launch(params, config)
        except ExprError as exc:
            return str(exc)
        for what, dims in (("block", launch.block), ("grid", launch.grid)):
            if min(dims) < 1:
                return f"{what} {list(dims)} has a size below 1"
        if launch.shared_bytes < 0:
            return f"shared_bytes {launch.shared_bytes} is negative"
        # The runner opts in to more than 48 KB of dynamic shared memory when a kernel asks for it.
        opted_in = dataclasses.replace(limits, max_shared_memory_per_block=limits.max_shared_memory_optin)
        return why_launch_fails(LaunchShape(launch.block, launch.grid, launch.shared_bytes, 0), opted_in)

    def features(self, params: CustomParams, config: ConfigEntity) -> dict[str, float]:
        out = knob_features(config)
        try:
            launch = custom_launch(params, config)
        except ExprError:
            return {**out, "threads_per_block": float("nan"), "blocks": float("nan"), "shared_bytes": float("nan")}
        out.update({"threads_per_block": math.prod(launch.block), "blocks": math.prod(launch.grid),
                    "shared_bytes": launch.shared_bytes})
        return out

    def default_config(self, params: CustomParams, space: ConfigSpace) -> ConfigEntity:
        """The spec's `default` values when given, else the valid config of lowest index."""
        if params.default:
            entity = [[name, "ot", params.default.get(name, values[0])] for name, values in params.tune_params]
            try:
                return first_valid(space, space.from_entity(entity))
            except ValueError as exc:
                raise SpecError(f"custom kernel spec: default: {exc}", field="default") from None
        for index in range(min(len(space), ENUMERATE_LIMIT)):
            if space.is_valid(space.get(index)):
                return space.get(index)
        return first_valid(space, space.get(0))

    def bytes_moved(self, params: CustomParams) -> int:
        """Every argument read or written once: the least traffic the kernel can need."""
        return sum(math.prod(a.shape) * np.dtype(a.dtype).itemsize for a in params.arguments)

    def flops(self, params: CustomParams) -> int:
        return params.flops

    # -- GPU half
    def kernel(self, params: CustomParams, config: ConfigEntity) -> KernelSource:
        return kernel.generate(params, config)

    def make_inputs(self, params: CustomParams, rng: np.random.Generator) -> list[np.ndarray]:
        return kernel.make_inputs(params, rng)

    def reference(self, params: CustomParams, inputs: list[np.ndarray]) -> np.ndarray:
        return kernel.reference(params, inputs)
