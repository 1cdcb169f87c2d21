"""AutoTVM's `apply_history_best` step (its conv2d tutorial's last one): the best config of a log, as a callable kernel.

`load_best_kernel(log, task)` picks the log's best record for the task's
workload (AutoTVM's rule, `engine.logfile.pick_best`) on this GPU's model (or
any model when this GPU has none in the log), generates and compiles its
kernel for this GPU, and returns a callable on CuPy arrays. `check_and_time`
is the CLI's and the GPU tests' round trip: reference check, then timing by
the runner's rule.
"""
from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.ops.base import KernelSource
from engine.logfile import Record, pick_best, read_log_file

from .nvrtc import compile_to_cubin
from .runner import TimingSettings, cupy_graph, load_kernel, poison, relative_l2_error, time_launches

if TYPE_CHECKING:  # pragma: no cover
    from engine.task import Task


class NoBestConfig(LookupError):
    """The log has no error-free record of this task's workload."""


def best_record(records: list[Record], task: "Task", model: str | None = None) -> Record:
    candidates = {key: r for key, r in pick_best(records).items() if (key[1], key[2]) == task.workload_key}
    if not candidates:
        raise NoBestConfig(f"no error-free record of {task.name} {task.args} in the log")
    on_model = [r for (m, _, _), r in candidates.items() if m == model]
    if on_model:
        return on_model[0]
    return min(candidates.values(), key=lambda r: r.mean_cost)


@dataclass
class BestKernel:
    """A compiled kernel of `task`: call it with the input CuPy arrays (output optional)."""

    task: "Task"
    record: Record
    source: KernelSource
    output_shape: tuple[int, ...]
    _function: object
    output_dtype: str = "float32"  # the template's output array's (float16, or uint16 for bfloat16 bits)
    # A kernel with tensor maps (TMA) is loaded for the arrays it runs on: again whenever they
    # change (never during a graph capture, whose launches repeat the arrays of the call before).
    _cubin: bytes = b""
    _bound_to: tuple[int, ...] = ()

    def __call__(self, *arrays, out=None):
        import cupy as cp

        if out is None:
            out = cp.empty(self.output_shape, dtype=self.output_dtype)
        args = list(arrays)
        args.insert(self.source.output_index, out)
        pointers = tuple(a.data.ptr for a in args)
        if self.source.tensor_maps and pointers != self._bound_to:
            self._function, self._bound_to = load_function(cp, self._cubin, self.source, args), pointers
        self._function(self.source.grid, self.source.block, tuple(args), shared_mem=self.source.shared_bytes)
        return out


def load_best_kernel(log_path: str, task: "Task") -> BestKernel:
    records = read_log_file(log_path).records  # a log that cannot be read says so before CuPy is needed
    import cupy as cp

    from .device import model_slug

    device = cp.cuda.Device()
    name = cp.cuda.runtime.getDeviceProperties(device.id)["name"]
    record = best_record(records, task, model_slug(name.decode() if isinstance(name, bytes) else name))
    config = task.config_space.from_entity(record.entity)
    source = task.template.kernel(task.params, config)
    cubin, _ = compile_to_cubin(source.code, f"sm_{device.compute_capability}")
    function = None if source.tensor_maps else load_function(cp, cubin, source)  # else at the first call
    output = task.template.make_inputs(task.params, np.random.default_rng(0))[source.output_index]
    return BestKernel(task, record, source, tuple(output.shape), function, output.dtype.name, cubin)


def load_function(cp, cubin: bytes, source: KernelSource, arrays=None):
    """The CuPy function of `source`'s compiled cubin, opted in to its shared memory (its tensor
    maps encoded for `arrays`); runner.NotResidentAtOnce for a grid of blocks that wait on one another which
    this GPU cannot hold at once. CuPy loads modules from files; the file is gone once the module is loaded."""
    with tempfile.NamedTemporaryFile(suffix=".cubin", delete=False) as handle:
        handle.write(cubin)
    try:
        return load_kernel(cp, handle.name, source, arrays)
    finally:
        os.unlink(handle.name)


@dataclass(frozen=True)
class CheckedTiming:
    relative_error: float
    costs: tuple[float, ...]

    @property
    def median(self) -> float:
        return float(np.median(self.costs))


def check_and_time(kernel: BestKernel, seed: int = 1, settings: TimingSettings | None = None) -> CheckedTiming:
    """Run the kernel on fresh random inputs, compare with the numpy reference, time it."""
    import cupy as cp

    settings = settings or TimingSettings()
    task = kernel.task
    inputs = task.template.make_inputs(task.params, np.random.default_rng(seed))
    reference = task.template.reference(task.params, inputs)
    arrays = [cp.asarray(a) for i, a in enumerate(inputs) if i != kernel.source.output_index]
    out = cp.empty(kernel.output_shape, dtype=kernel.output_dtype)
    poison(out)
    kernel(*arrays, out=out)
    error = relative_l2_error(cp.asnumpy(out), reference)
    stream = cp.cuda.Stream(non_blocking=True)

    def launch():
        kernel(*arrays, out=out)

    with stream:
        costs = time_launches(cp, stream, launch, lambda number: cupy_graph(stream, launch, number), settings)
    return CheckedTiming(error, costs)
