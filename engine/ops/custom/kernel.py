"""The GPU half of the custom-kernel template: macros + source, inputs, and the reference.

A config's source is the user's source after one `#define` per size and per
tunable parameter. The reference is either a numpy expression over the input
arguments and sizes, in a small fixed vocabulary (tiling.ARRAY_FUNCTIONS, parsed by
engine.safe_expr), or a trusted kernel of the user's (same arguments, same size
macros, its own launch sizes over the sizes), run once on the GPU with CuPy.
"""
from __future__ import annotations

import numpy as np

from ...safe_expr import ExprError, parse
from ..base import KernelSource, copy_to_constant
from .tiling import ARRAY_FUNCTIONS, CustomParams, SpecError, custom_launch, dim3_exprs

_NUMPY_DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "uint8": np.uint8}


def _macros(values: dict) -> str:
    return "".join(f"#define {name} {value!r}\n" for name, value in values.items())


def generate(params: CustomParams, config) -> KernelSource:
    values = params.values_of(config)
    launch = custom_launch(params, config)
    code = f"// custom kernel {params.kernel_name}, config {config.index}\n{_macros(values)}{params.source}"
    return KernelSource(
        name=params.kernel_name, code=code, grid=launch.grid, block=launch.block,
        shared_bytes=launch.shared_bytes, arg_order=tuple(a.name for a in params.arguments),
        output_index=params.output_index, constants=_constant_indexes(params),
    )


def _constant_indexes(params: CustomParams) -> tuple[tuple[str, int], ...]:
    position = {a.name: i for i, a in enumerate(params.arguments)}
    return tuple((symbol, position[argument]) for symbol, argument in params.constants)


def make_inputs(params: CustomParams, rng: np.random.Generator) -> list[np.ndarray]:
    """Floats uniform in [-1, 1), int32 in [-100, 100), uint8 in [0, 256) (or uniform in an argument's
    own range), the output left to the kernel."""
    arrays = []
    for arg in params.arguments:
        dtype = _NUMPY_DTYPES[arg.dtype]
        if arg.output:
            arrays.append(np.empty(arg.shape, dtype=dtype))
        elif arg.value_range is not None:
            low, high = arg.value_range
            arrays.append(rng.uniform(low, high, size=arg.shape).astype(dtype))
        elif arg.dtype == "int32":
            arrays.append(rng.integers(-100, 100, size=arg.shape, dtype=np.int32))
        elif arg.dtype == "uint8":
            arrays.append(rng.integers(0, 256, size=arg.shape, dtype=np.uint8))
        else:
            arrays.append(rng.uniform(-1.0, 1.0, size=arg.shape).astype(dtype))
    return arrays


def reference(params: CustomParams, inputs: list[np.ndarray]) -> np.ndarray:
    output = params.arguments[params.output_index]
    if "numpy" in params.reference:
        values = {a.name: (x.astype(np.int64) if a.dtype in ("int32", "uint8") else x.astype(np.float64))
                  for a, x in zip(params.arguments, inputs) if not a.output}
        values.update(params.sizes)
        expr = parse(params.reference["numpy"], set(values), ARRAY_FUNCTIONS)
        try:
            result = np.asarray(expr.evaluate(values), dtype=np.float64)
            return np.broadcast_to(result, output.shape).copy()
        except (ExprError, ValueError) as exc:
            raise SpecError(f"custom kernel spec: reference.numpy {expr.text!r} does not give the output's "
                            f"shape {list(output.shape)}: {exc}", field="reference.numpy") from None
    return _trusted_kernel_output(params, inputs)


def _trusted_kernel_output(params: CustomParams, inputs: list[np.ndarray]) -> np.ndarray:
    """Run the spec's trusted kernel once on the GPU (CuPy) and return its output in float64."""
    import cupy as cp

    trusted = params.reference["kernel"]
    grid = tuple(e.evaluate_int(params.sizes, "reference grid") for e in dim3_exprs(trusted["grid"], set(params.sizes), "grid"))
    block = tuple(e.evaluate_int(params.sizes, "reference block") for e in dim3_exprs(trusted["block"], set(params.sizes), "block"))
    module = cp.RawModule(code=_macros(params.sizes) + trusted["source"], options=("--std=c++17",))
    kernel = module.get_function(trusted["kernel_name"])
    arrays = [cp.asarray(x) for x in inputs]
    for symbol, index in _constant_indexes(params):
        if symbol in trusted["source"]:  # a reference that reads the input as given needs no copy
            copy_to_constant(module, symbol, arrays[index])
    kernel(grid, block, tuple(arrays))
    return cp.asnumpy(arrays[params.output_index]).astype(np.float64)
