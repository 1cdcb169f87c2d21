"""NCHW broadcasts on CUDA: CINN's general tiling and its TileBroadcastTactic (see `tiling`)."""
from __future__ import annotations

import math

import numpy as np

from ...space import ConfigEntity, ConfigSpace, OtherKnob
from ..base import (MAX_TENSOR_ELEMENTS, REFERENCE_THREAD_SLOTS, BadArgs, DeviceLimits, KernelSource, Template,
                    knob_features, reason_vector_width, why_launch_fails)
from . import kernel
from .tiling import (ELEMENT_BYTES, TEMPLATE_NAME, VECTOR_CHOICES, BroadcastParams, broadcast_layout,
                     broadcast_shape)


class BroadcastNCHW(Template):
    name = TEMPLATE_NAME

    def parse_args(self, args: list) -> BroadcastParams:
        shape, op = broadcast_shape(args)
        if not isinstance(args[0][2], str) or args[0][2] not in ELEMENT_BYTES:
            raise BadArgs(f"dtype {args[0][2]!r} is not supported (only {' and '.join(ELEMENT_BYTES)})")
        if math.prod(shape) > MAX_TENSOR_ELEMENTS:
            raise BadArgs(f"x would have {math.prod(shape)} elements, more than 2^31 - 1")
        return BroadcastParams(*shape, op=op, dtype=args[0][2], args=list(args))

    def define_space(self, params: BroadcastParams) -> ConfigSpace:
        return ConfigSpace([
            OtherKnob("tactic", ["general", "tile_broadcast"]),
            OtherKnob("threads", [64, 128, 256, 512, 1024]),
            OtherKnob("elems_per_thread", [1, 2, 4, 8]),
            OtherKnob("vector", VECTOR_CHOICES[params.dtype]),
        ])

    def why_invalid(self, params: BroadcastParams, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        layout = broadcast_layout(params, config)
        return (reason_vector_width(layout.vector, params.element_bytes, limits) or layout.why_not()
                or why_launch_fails(layout.launch(), limits))

    def features(self, params: BroadcastParams, config: ConfigEntity) -> dict[str, float]:
        layout = broadcast_layout(params, config)
        out = knob_features(config)
        blocks = math.prod(layout.grid)
        threads = math.prod(layout.block)
        out.update({
            "threads_per_block": threads,
            "blocks": blocks,
            "waves": blocks * threads / REFERENCE_THREAD_SLOTS,
            "floats_per_thread": params.total / (blocks * threads),
            "broadcast_per_element": layout.broadcast_evaluations / params.total,
        })
        return out

    def default_config(self, params: BroadcastParams, space: ConfigSpace) -> ConfigEntity:
        """The general tactic, 256 threads, one 16-byte vector each where N*C*H*W allows."""
        vector = 16 // params.element_bytes
        entity = [["tactic", "ot", "general"], ["threads", "ot", 256], ["elems_per_thread", "ot", 1],
                  ["vector", "ot", vector if params.total % vector == 0 else 1]]
        return space.from_entity(entity)

    def bytes_moved(self, params: BroadcastParams) -> int:
        """Least traffic of a run: x read (div, mul_rsqrt), v read, out written."""
        return params.element_bytes * (params.total * (2 if params.reads_x else 1) + params.c)

    def flops(self, params: BroadcastParams) -> int:
        return params.flops

    # -- GPU half
    def kernel(self, params: BroadcastParams, config: ConfigEntity) -> KernelSource:
        return kernel.generate(broadcast_layout(params, config))

    def make_inputs(self, params: BroadcastParams, rng: np.random.Generator) -> list[np.ndarray]:
        return kernel.make_inputs(params, rng)

    def reference(self, params: BroadcastParams, inputs: list[np.ndarray]) -> np.ndarray:
        return kernel.reference(params, inputs)
