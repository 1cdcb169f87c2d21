"""CUDA kernels generated from a template and a config: source text plus launch geometry.

A `KernelSource` is everything the builder and the runner need and nothing
else: the builder compiles `code` (the entry point is `name`, declared
`extern "C"`), the runner launches it on `grid` x `block` with `shared_bytes`
of dynamic shared memory, passing the task's input arrays in `arg_order` with
the output array at `output_index`, after copying each `constants` input (symbol,
argument index) into the module's `__constant__` symbol of that name.
"""
from __future__ import annotations

from dataclasses import dataclass

Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class KernelSource:
    name: str
    code: str
    grid: Dim3
    block: Dim3
    shared_bytes: int
    arg_order: tuple[str, ...]
    output_index: int
    constants: tuple[tuple[str, int], ...] = ()


def copy_to_constant(module, symbol: str, array) -> None:
    """Copy a device array into a module's `__constant__` symbol; ValueError when it does not fit."""
    target = module.get_global(symbol)
    if array.nbytes > target.mem.size:
        raise ValueError(f"{array.nbytes} bytes do not fit the {target.mem.size}-byte __constant__ {symbol}")
    target.copy_from_device(array.data, array.nbytes)
