"""A user's own CUDA kernel with tunable macros, in Kernel Tuner's manner.

The task's args are one JSON object, the kernel spec, so records log it in
AutoTVM's format like any workload (`["cuda -model=h200", "custom", [SPEC], {}]`):

    {
      "kernel_name": "vector_add",              # the extern "C" entry point in `source`
      "source": "extern \"C\" __global__ void vector_add(...) {...}",
      "sizes": {"N": 1048576},                  # problem sizes, #defined, usable in expressions
      "tune_params": [["block_size_x", [64, 128, 256]], ["tile", [1, 2, 4]]],
      "restrictions": ["block_size_x * tile <= 1024"],
      "block": ["block_size_x", 1, 1],          # expressions over sizes and tune params
      "grid": ["ceil_div(N, block_size_x * tile)", 1, 1],
      "shared_bytes": "0",                      # optional expression (dynamic shared memory)
      "arguments": [                             # arrays, in kernel order; exactly one output
        {"name": "a", "shape": ["N"], "dtype": "float32"},
        {"name": "b", "shape": ["N"], "dtype": "float32", "range": [0, 1]},   # inputs uniform in [lo, hi)
        {"name": "c", "shape": ["N"], "dtype": "float32", "output": true}
      ],
      "constants": {"d_b": "b"},                # optional: __constant__ symbol <- input argument (cmem_args)
      "reference": {"numpy": "a + b"},          # or {"kernel": {"source", "kernel_name", "grid", "block"}}
      "flops": "N",                             # optional expression; 0 when absent
      "default": {"block_size_x": 256, "tile": 1}   # optional untuned config
    }

Each tunable parameter is a knob (an "ot" knob, values in the given order) and
reaches the source as `#define name value`, as do the sizes. Restrictions, launch
sizes, shapes and FLOPs are parsed by engine.safe_expr (a whitelist walker, never
`eval`); a numpy reference uses its small array vocabulary (ARRAY_FUNCTIONS).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

import numpy as np

from ...safe_expr import Expr, ExprError, parse
from ...space import ConfigEntity
from ..base import MAX_TENSOR_ELEMENTS, BadArgs

TEMPLATE_NAME = "custom"
CUSTOM_TEMPLATE = TEMPLATE_NAME  # as the front door names it
DTYPES = ("float32", "float64", "int32", "uint8")
MAX_SOURCE_CHARS = 200_000
MAX_PARAMS = 24
MAX_VALUES = 1000
MAX_RESTRICTIONS = 64
MAX_ARGUMENTS = 16
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")
SPEC_KEYS = {"kernel_name", "source", "sizes", "tune_params", "restrictions", "block", "grid", "shared_bytes",
             "arguments", "reference", "flops", "default", "constants"}
ARGUMENT_KEYS = {"name", "shape", "dtype", "output", "range"}


class SpecError(BadArgs):
    """A custom kernel spec that cannot be used; the message says which field and why, and
    `field` names it as the spec spells it (`source`, `sizes.N`, `tune_params[2]`, ...)."""

    def __init__(self, message: str, field: str = "spec") -> None:
        super().__init__(message)
        self.field = field


def _fail(where: str, why: str) -> SpecError:
    return SpecError(f"custom kernel spec: {where}: {why}", field=where)


def checked_identifier(name, where: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.fullmatch(name) or name.startswith("__"):
        raise _fail(where, f"{name!r} is not a plain C identifier (letters, digits, _; not starting with __)")
    return name


def _expression(text, names: set[str], where: str) -> Expr:
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    try:
        return parse(text, names)
    except ExprError as exc:
        raise _fail(where, str(exc)) from None


@dataclass(frozen=True)
class Argument:
    name: str
    shape: tuple[int, ...]
    dtype: str
    output: bool
    value_range: tuple[float, float] | None = None  # inputs drawn uniformly from [lo, hi)


@dataclass(frozen=True)
class CustomParams:
    kernel_name: str
    source: str
    sizes: dict
    tune_params: tuple[tuple[str, tuple], ...]
    restrictions: tuple[Expr, ...]
    block: tuple[Expr, Expr, Expr]
    grid: tuple[Expr, Expr, Expr]
    shared_bytes: Expr
    arguments: tuple[Argument, ...]
    reference: dict
    flops: int
    default: dict
    args: list = field(default_factory=list, compare=False, repr=False)
    # __constant__ symbol -> the input argument copied into it before each launch (Kernel Tuner's cmem_args).
    constants: tuple[tuple[str, str], ...] = ()

    @property
    def output_index(self) -> int:
        return next(i for i, a in enumerate(self.arguments) if a.output)

    def values_of(self, config: ConfigEntity) -> dict:
        """Sizes and this config's tunable values: the names expressions and macros see."""
        return {**self.sizes, **config.values()}


def dim3_exprs(raw, names: set[str], where: str) -> tuple[Expr, Expr, Expr]:
    if not isinstance(raw, list) or not 1 <= len(raw) <= 3:
        raise _fail(where, "must be a list of one to three expressions")
    padded = list(raw) + [1] * (3 - len(raw))
    return tuple(_expression(e, names, f"{where}[{i}]") for i, e in enumerate(padded))  # type: ignore[return-value]


def parse_spec(spec) -> CustomParams:
    """Check a kernel spec (the task's single arg) field by field; SpecError names the field."""
    if not isinstance(spec, dict):
        raise _fail("args", "must be [SPEC] with SPEC a JSON object")
    unknown = sorted(set(spec) - SPEC_KEYS)
    if unknown:
        raise _fail("spec", f"unknown field(s) {', '.join(unknown)}; known: {', '.join(sorted(SPEC_KEYS))}")
    for key in ("kernel_name", "source", "tune_params", "block", "grid", "arguments", "reference"):
        if key not in spec:
            raise _fail(key, "is required")
    name = checked_identifier(spec["kernel_name"], "kernel_name")
    source = spec["source"]
    if not isinstance(source, str) or not source.strip():
        raise _fail("source", "must be the kernel's CUDA source text")
    if len(source) > MAX_SOURCE_CHARS:
        raise _fail("source", f"{len(source)} characters is more than {MAX_SOURCE_CHARS}")
    if name not in source:
        raise _fail("source", f"does not mention the kernel_name {name!r}")

    sizes_raw = spec.get("sizes", {})
    if not isinstance(sizes_raw, dict):
        raise _fail("sizes", "must be an object of name: positive integer")
    sizes = {}
    for key, value in sorted(sizes_raw.items()):  # as canonical args spell them: one source per workload
        checked_identifier(key, "sizes")
        if not isinstance(value, int) or isinstance(value, bool) or not 0 < value <= MAX_TENSOR_ELEMENTS:
            raise _fail(f"sizes.{key}", f"{value!r} is not a positive integer below 2^31")
        sizes[key] = value

    raw_params = spec["tune_params"]
    if not isinstance(raw_params, list) or not 1 <= len(raw_params) <= MAX_PARAMS:
        raise _fail("tune_params", f"must be a list of 1 to {MAX_PARAMS} [name, [values...]] pairs")
    tune_params = []
    for i, pair in enumerate(raw_params):
        if not (isinstance(pair, list) and len(pair) == 2 and isinstance(pair[1], list)):
            raise _fail(f"tune_params[{i}]", "must be [name, [values...]]")
        pname = checked_identifier(pair[0], f"tune_params[{i}]")
        if pname in sizes or pname in {p for p, _ in tune_params}:
            raise _fail(f"tune_params[{i}]", f"{pname!r} is already a size or a tunable parameter")
        values = pair[1]
        if not 1 <= len(values) <= MAX_VALUES or not all(
                isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values):
            raise _fail(f"tune_params[{i}]", f"needs 1 to {MAX_VALUES} numbers")
        if len(set(values)) != len(values):
            raise _fail(f"tune_params[{i}]", "values repeat")
        tune_params.append((pname, tuple(values)))
    names = set(sizes) | {p for p, _ in tune_params}

    restrictions_raw = spec.get("restrictions", [])
    if not isinstance(restrictions_raw, list) or len(restrictions_raw) > MAX_RESTRICTIONS:
        raise _fail("restrictions", f"must be a list of at most {MAX_RESTRICTIONS} expressions")
    restrictions = tuple(_expression(r, names, f"restrictions[{i}]") for i, r in enumerate(restrictions_raw))

    arguments = _arguments(spec["arguments"], set(sizes), sizes)
    reference = spec["reference"]
    if not (isinstance(reference, dict) and len(reference) == 1 and set(reference) <= {"numpy", "kernel"}):
        raise _fail("reference", 'must be {"numpy": expression} or {"kernel": {...}}')
    check_reference(reference, arguments, sizes)

    flops = 0
    if "flops" in spec:
        try:
            flops = _expression(spec["flops"], set(sizes), "flops").evaluate_int(sizes, "flops")
        except ExprError as exc:
            raise _fail("flops", str(exc)) from None
        if flops < 0:
            raise _fail("flops", f"{flops} is negative")
    default = spec.get("default", {})
    if not isinstance(default, dict):
        raise _fail("default", "must be an object of tunable parameter: value")
    constants = _constants(spec.get("constants", {}), arguments)
    return CustomParams(
        kernel_name=name, source=source, sizes=sizes, tune_params=tuple(tune_params), restrictions=restrictions,
        block=dim3_exprs(spec["block"], names, "block"), grid=dim3_exprs(spec["grid"], names, "grid"),
        shared_bytes=_expression(spec.get("shared_bytes", 0), names, "shared_bytes"),
        arguments=arguments, reference=reference, flops=flops, default=default, args=[spec], constants=constants,
    )


def _constants(raw, arguments: tuple[Argument, ...]) -> tuple[tuple[str, str], ...]:
    if not isinstance(raw, dict) or len(raw) > MAX_ARGUMENTS:
        raise _fail("constants", f"must be an object of at most {MAX_ARGUMENTS} symbol: input argument name")
    inputs = {a.name for a in arguments if not a.output}
    for symbol, argument in raw.items():
        checked_identifier(symbol, "constants")
        if argument not in inputs:
            raise _fail(f"constants.{symbol}", f"{argument!r} is not an input argument ({', '.join(sorted(inputs))})")
    return tuple(raw.items())


def _arguments(raw, size_names: set[str], sizes: dict) -> tuple[Argument, ...]:
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_ARGUMENTS:
        raise _fail("arguments", f"must be a list of 1 to {MAX_ARGUMENTS} array arguments")
    out = []
    for i, arg in enumerate(raw):
        where = f"arguments[{i}]"
        if not isinstance(arg, dict) or not {"name", "shape", "dtype"} <= set(arg) <= ARGUMENT_KEYS:
            raise _fail(where, 'must be {"name", "shape", "dtype"[, "output", "range"]}')
        name = checked_identifier(arg["name"], where)
        if arg["dtype"] not in DTYPES:
            raise _fail(where, f"dtype {arg['dtype']!r} is not one of {', '.join(DTYPES)}")
        if not isinstance(arg["shape"], list) or not 1 <= len(arg["shape"]) <= 4:
            raise _fail(where, "shape must list one to four sizes (integers or expressions over sizes)")
        try:
            shape = tuple(_expression(d, size_names, f"{where}.shape").evaluate_int(sizes, f"{where}.shape")
                          for d in arg["shape"])
        except ExprError as exc:
            raise _fail(where, str(exc)) from None
        if any(d < 1 for d in shape) or math.prod(shape) > MAX_TENSOR_ELEMENTS:
            raise _fail(where, f"shape {list(shape)} must be positive with fewer than 2^31 elements")
        output = arg.get("output", False)
        if not isinstance(output, bool):
            raise _fail(where, "output must be true or false")
        out.append(Argument(name, shape, arg["dtype"], output, _value_range(arg.get("range"), where)))
    outputs = [a for a in out if a.output]
    if len(outputs) != 1:
        raise _fail("arguments", "exactly one argument must be the output")
    if outputs[0].dtype in ("int32", "uint8"):
        raise _fail("arguments", "the output must be float32 or float64 (it is checked against the reference)")
    if len({a.name for a in out}) != len(out):
        raise _fail("arguments", "argument names repeat")
    return tuple(out)


def _value_range(raw, where: str) -> tuple[float, float] | None:
    if raw is None:
        return None
    if not (isinstance(raw, list) and len(raw) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in raw) and raw[0] < raw[1]):
        raise _fail(f"{where}.range", "must be [low, high] with low < high")
    return float(raw[0]), float(raw[1])


# The numpy vocabulary of a `{"numpy": ...}` reference, parsed by engine.safe_expr.
ARRAY_FUNCTIONS = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt, "rsqrt": lambda a: 1.0 / np.sqrt(a), "abs": np.abs,
    "tanh": np.tanh, "sin": np.sin, "cos": np.cos, "maximum": np.maximum, "minimum": np.minimum,
    "where": np.where, "matmul": np.matmul, "transpose": np.transpose,
}


def _inputs(arguments) -> list[Argument]:
    return [a for a in arguments if not a.output]


def check_reference(reference: dict, arguments: tuple[Argument, ...], sizes: dict) -> None:
    """SpecError unless the reference is a valid numpy expression or trusted-kernel spec."""
    if "numpy" in reference:
        names = {a.name for a in _inputs(arguments)} | set(sizes)
        try:
            parse(reference["numpy"], names, ARRAY_FUNCTIONS)
        except ExprError as exc:
            raise _fail("reference.numpy", str(exc)) from None
        return
    trusted = reference["kernel"]
    if not isinstance(trusted, dict) or set(trusted) != {"source", "kernel_name", "grid", "block"}:
        raise SpecError('custom kernel spec: reference.kernel must be {"source", "kernel_name", "grid", "block"}',
                        field="reference.kernel")
    name = checked_identifier(trusted["kernel_name"], "reference.kernel.kernel_name")
    if not isinstance(trusted["source"], str) or name not in trusted["source"] or len(trusted["source"]) > MAX_SOURCE_CHARS:
        raise SpecError(f"custom kernel spec: reference.kernel.source must be CUDA source that defines {name!r}",
                        field="reference.kernel.source")
    for key in ("grid", "block"):
        for expr in dim3_exprs(trusted[key], set(sizes), f"reference.kernel.{key}"):
            try:
                expr.evaluate_int(sizes, f"reference.kernel.{key}")
            except ExprError as exc:
                raise _fail(f"reference.kernel.{key}", str(exc)) from None


@dataclass(frozen=True)
class CustomLaunch:
    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    shared_bytes: int


def custom_launch(params: CustomParams, config: ConfigEntity) -> CustomLaunch:
    """Block, grid and shared memory of a config; ExprError when an expression fails."""
    values = params.values_of(config)
    block = tuple(e.evaluate_int(values, "block") for e in params.block)
    grid = tuple(e.evaluate_int(values, "grid") for e in params.grid)
    return CustomLaunch(block, grid, params.shared_bytes.evaluate_int(values, "shared_bytes"))  # type: ignore[arg-type]
