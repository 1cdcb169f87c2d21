"""Time compiled kernels on one GPU, in a child process that can be killed and restarted.

The child holds each task's inputs and reference output on the GPU. For each
kernel it poisons the output with NaN, runs it once, checks the relative L2
error against the reference (WRONG_ANSWER above the tolerance; NaN never
passes), then times it AutoTVM's way: `number` launches per measurement, with
`number` grown until one measurement lasts `min_repeat_ms`, measured `repeat`
times. The launches of one measurement are captured in a CUDA graph and
replayed between two CUDA events, so host launch overhead stays out of the
time. Costs are seconds per launch, one per repeat.

Failures: a cubin the driver cannot load, or without the kernel's entry, is
COMPILE_DEVICE; a launch the GPU refuses (too many registers or threads, too
much shared memory, including a refused opt-in to more than 48 KB) is
INSTANTIATION_ERROR, as is a `co_resident` kernel (its blocks wait on one
another) whose grid the driver's occupancy says cannot be resident at once,
which is not launched (it would wait for blocks that never start, until the
timeout); a fault that poisons the CUDA context
(illegal address, launch failure) is RUNTIME_DEVICE and ends the child; a
kernel still running at the timeout gets RUN_TIMEOUT and the child is killed.
Either way the parent restarts the child and sends it the jobs it had queued.
"""
from __future__ import annotations

import math
import time
from collections import deque
from dataclasses import dataclass
from multiprocessing.connection import Connection, wait
from typing import Hashable, Sequence

import numpy as np

from engine.ops.base import KernelSource, copy_to_constant
from engine.measure import DeviceInfo
from engine.measure import MeasurerUnavailable
from engine.logfile import ErrorNo

from .child import Child, ChildDied
from .tensor_map import fill_tensor_maps

DEFAULT_TIMEOUT_S = 4.0
STARTUP_TIMEOUT_S = 120.0
DEFAULT_SHARED_LIMIT = 48 * 1024

# CUDA error numbers (the runtime's and the driver's agree on these).
_REFUSED_LAUNCH = {1, 9, 701}  # invalid value, invalid configuration, launch out of resources
_CONTEXT_FATAL = {700, 702, 714, 715, 716, 717, 718, 719, 720}  # illegal address ... launch failure


class GpuUnavailable(MeasurerUnavailable):
    """No GPU runner could start here (no CuPy, no driver, no GPU)."""


@dataclass(frozen=True)
class TimingSettings:
    min_repeat_ms: float = 2.0
    repeat: int = 5
    max_number: int = 1000
    tolerance: float = 1e-4
    warm_primes: int = 1  # confirmations: untimed replays before each timed warm replay


@dataclass(frozen=True)
class RunResult:
    error_no: ErrorNo
    costs: tuple[float, ...] = ()
    message: str = ""
    seconds: float = 0.0

    @property
    def ok(self) -> bool:
        return self.error_no == ErrorNo.NO_ERROR



def opt_in_shared_memory(function, source: KernelSource) -> None:
    """Past DEFAULT_SHARED_LIMIT of dynamic shared memory a launch must opt in, or the driver refuses it."""
    if source.shared_bytes > DEFAULT_SHARED_LIMIT:
        function.max_dynamic_shared_size_bytes = source.shared_bytes


def fits_at_once(blocks_per_sm: int, sms: int, grid: Sequence[int]) -> bool:
    """Whether every block of `grid` can be resident at once: `blocks_per_sm` of them (the driver's occupancy
    of the kernel, its block and shared memory) on each of `sms` SMs."""
    return blocks_per_sm * sms >= math.prod(grid)


def why_not_resident_at_once(cp, function, source: KernelSource, sms: int | None = None) -> str | None:
    """Why a `co_resident` kernel's grid cannot be resident on this GPU at once, by the driver's occupancy of
    the loaded `function` (shared memory opted in) on `sms` SMs (None: the current device's): launched, its
    blocks would wait on blocks that never start. None for other kernels, and for one that fits."""
    if not source.co_resident:
        return None
    if sms is None:
        sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    threads = math.prod(source.block)
    per_sm = cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(function.kernel.ptr, threads,
                                                                      source.shared_bytes)
    if fits_at_once(per_sm, sms, source.grid):
        return None
    return (f"the grid's {math.prod(source.grid)} blocks wait on one another, so all must be resident at once, but "
            f"the driver fits {per_sm} blocks of {threads} threads and {source.shared_bytes} bytes of shared memory "
            f"an SM, {per_sm * sms} on this GPU's {sms} SMs")


def load_entry(cp, cubin_path: str, source: KernelSource, arrays=None):
    """The source's entry point in a compiled cubin; with the task's device `arrays`, its
    `__constant__` inputs filled from them and its tensor maps encoded for them (a kernel with
    tensor maps runs on those arrays only, so it needs them). Its shared memory is not opted in yet."""
    module = cp.RawModule(path=cubin_path)
    function = module.get_function(source.name)
    if arrays is None:
        if source.tensor_maps:
            raise ValueError(f"{source.name} copies through tensor maps: it is loaded for its arrays")
        return function
    for symbol, index in source.constants:
        copy_to_constant(module, symbol, arrays[index])
    fill_tensor_maps(module, source, arrays)
    return function


class NotResidentAtOnce(RuntimeError):
    """A `co_resident` kernel whose grid this GPU cannot hold at once: launched, it would hang."""


def load_kernel(cp, cubin_path: str, source: KernelSource, arrays=None):
    """`load_entry`, ready to launch with its shared memory; NotResidentAtOnce for a kernel whose blocks wait on
    one another and whose grid the current GPU cannot hold at once."""
    function = load_entry(cp, cubin_path, source, arrays)
    opt_in_shared_memory(function, source)
    reason = why_not_resident_at_once(cp, function, source)
    if reason:
        raise NotResidentAtOnce(reason)
    return function


def accepted_error(tolerance: float | None, settings: TimingSettings) -> float:
    """The error a kernel's or baseline's output may have: its precision's where it has one."""
    return settings.tolerance if tolerance is None else tolerance


# bfloat16 travels as its bit pattern in a uint16 array (numpy has no bfloat16; no template
# outputs integers of that width): such an output is read as bfloat16 and poisoned with its NaN.
BFLOAT16_NAN_BITS = 0x7FC0


def output_values(got):
    """An output array's values in float64, numpy or CuPy (a uint16 one holds bfloat16 bits)."""
    if got.dtype == "uint16":
        return (got.astype("uint32") << 16).view("float32").astype("float64")
    return got.astype("float64")


def poison(out) -> None:
    """Fill an output with NaN (bfloat16's, for a uint16 one), so what a kernel leaves unwritten fails."""
    out.fill(BFLOAT16_NAN_BITS if out.dtype == "uint16" else math.nan)


def relative_l2_error(got, reference) -> float:
    """||got - reference|| / ||reference|| in float64, for numpy and CuPy arrays alike: the
    check every kernel and baseline passes. An all-zero reference divides by 1; a NaN in
    `got` gives NaN, which no tolerance accepts."""
    difference = (output_values(got) - reference).ravel()
    scale = math.sqrt(float((reference.astype("float64", copy=False).ravel() ** 2).sum())) or 1.0
    return math.sqrt(float((difference ** 2).sum())) / scale


# ---------------------------------------------------------------- child side


def output_error(stream, out, launch, reference) -> float:
    """Poison `out` with NaN, run `launch()` once on `stream`, and give its relative L2 error
    against `reference` (NaN when the kernel left any output unwritten)."""
    with stream:
        poison(out)
        launch()
        stream.synchronize()
        return relative_l2_error(out, reference)


def time_launches(cp, stream, launch, make_replay, settings: TimingSettings) -> tuple[float, ...]:
    """The timing rule every measurement here follows (tuned kernels and baselines alike).

    `launch()` enqueues one run on `stream`; `make_replay(number)` captures `number` runs
    in a CUDA graph and returns a callable that replays it on `stream`. Returns seconds per
    run, one value per repeat.
    """
    begin, end = cp.cuda.Event(), cp.cuda.Event()
    launch()  # warm-up: module load, caches, clocks
    begin.record(stream)
    launch()
    end.record(stream)
    end.synchronize()
    single_ms = max(cp.cuda.get_elapsed_time(begin, end), 1e-4)
    number = int(min(settings.max_number, max(1, math.ceil(settings.min_repeat_ms / single_ms))))
    replay = make_replay(number)
    replay()  # warm-up of the graph itself
    costs = []
    for _ in range(settings.repeat):
        begin.record(stream)
        replay()
        end.record(stream)
        end.synchronize()
        costs.append(cp.cuda.get_elapsed_time(begin, end) / 1e3 / number)
    return tuple(costs)


def cupy_graph(stream, launch, number: int):
    with stream:
        stream.begin_capture()
        try:
            for _ in range(number):
                launch()
        finally:
            graph = stream.end_capture()
    return lambda: graph.launch(stream)



class _Fatal(Exception):
    """The CUDA context is unusable; the child must exit after reporting."""


def _cuda_status(exc: BaseException) -> int | None:
    status = getattr(exc, "status", None)
    return int(status) if isinstance(status, int) else None


class _GpuSide:
    def __init__(self, device_id: int, settings: TimingSettings):
        import cupy

        self.cp = cupy
        cupy.cuda.Device(device_id).use()
        self.settings = settings
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.sms = int(cupy.cuda.runtime.getDeviceProperties(device_id)["multiProcessorCount"])
        self.tasks: dict[Hashable, tuple[list, object]] = {}

    def add_task(self, key: Hashable, inputs: list[np.ndarray], reference: np.ndarray) -> None:
        cp = self.cp
        with self.stream:
            arrays = [cp.asarray(a) for a in inputs]
            ref = cp.asarray(reference, dtype=cp.float64)
        self.stream.synchronize()
        self.tasks[key] = (arrays, ref)

    def run(self, task_key: Hashable, cubin_path: str, source: KernelSource) -> RunResult:
        cp = self.cp
        start = time.perf_counter()
        arrays, ref = self.tasks[task_key]
        out = arrays[source.output_index]
        try:
            kernel = load_entry(cp, cubin_path, source, arrays)
        except Exception as exc:  # a cubin the driver cannot load, no entry or symbol of that name in it
            return RunResult(ErrorNo.COMPILE_DEVICE, message=f"loading the kernel failed: {exc}",
                             seconds=time.perf_counter() - start)
        try:
            opt_in_shared_memory(kernel, source)
        except Exception as exc:  # more shared memory than this device lets a block opt in to
            return RunResult(ErrorNo.INSTANTIATION_ERROR,
                             message=f"{source.shared_bytes} bytes of shared memory refused: {exc}",
                             seconds=time.perf_counter() - start)
        try:
            reason = why_not_resident_at_once(cp, kernel, source, self.sms)
        except Exception as exc:  # no occupancy for it: launched, it might hang
            reason = f"the driver's occupancy of a kernel whose blocks wait on one another is unknown: {exc}"
        if reason:
            return RunResult(ErrorNo.INSTANTIATION_ERROR, message=reason, seconds=time.perf_counter() - start)

        def launch():
            kernel(source.grid, source.block, tuple(arrays), shared_mem=source.shared_bytes)  # on the current stream

        try:
            error = output_error(self.stream, out, launch, ref)
            tolerance = accepted_error(source.tolerance, self.settings)
            if not error < tolerance:  # NaN fails too
                return RunResult(
                    ErrorNo.WRONG_ANSWER,
                    message=f"relative L2 error {error:.3g} over tolerance {tolerance:g}",
                    seconds=time.perf_counter() - start,
                )
            with self.stream:
                costs = time_launches(cp, self.stream, launch, lambda number: cupy_graph(self.stream, launch, number),
                                      self.settings)
        except Exception as exc:
            status = _cuda_status(exc)
            if status in _REFUSED_LAUNCH:
                return RunResult(ErrorNo.INSTANTIATION_ERROR, message=f"launch refused: {exc}",
                                 seconds=time.perf_counter() - start)
            if status in _CONTEXT_FATAL:
                raise _Fatal(f"{type(exc).__name__}: {exc}") from exc
            raise _Fatal(f"unexpected {type(exc).__name__} (context state unknown): {exc}") from exc
        return RunResult(ErrorNo.NO_ERROR, costs, seconds=time.perf_counter() - start)


def _runner_main(conn: Connection, device_id: int, settings: TimingSettings) -> None:
    """Child loop. Messages in: ("task", key, inputs, reference),
    ("run", job_id, task_key, cubin_path, source), None to stop. Out: ("ready", DeviceInfo),
    ("result", job_id, RunResult, fatal)."""
    from .device import query_device

    gpu = _GpuSide(device_id, settings)
    conn.send(("ready", query_device(device_id)))
    while True:
        message = conn.recv()
        if message is None:
            return
        if message[0] == "task":
            gpu.add_task(*message[1:])
            continue
        _, job_id, task_key, cubin_path, source = message
        start = time.perf_counter()
        try:
            result = gpu.run(task_key, cubin_path, source)
        except _Fatal as exc:
            conn.send(("result", job_id, RunResult(ErrorNo.RUNTIME_DEVICE, message=str(exc),
                                                   seconds=time.perf_counter() - start), True))
            return  # a poisoned context cannot run anything else
        conn.send(("result", job_id, result, False))


# ---------------------------------------------------------------- parent side


@dataclass
class _Job:
    job_id: Hashable
    task_key: Hashable
    cubin_path: str
    source: KernelSource


class Runner:
    """The parent's handle on the runner child; `submit` queues, `poll` collects."""

    def __init__(self, device_id: int = 0, timeout: float = DEFAULT_TIMEOUT_S, settings: TimingSettings | None = None,
                 child_main=None):
        """`child_main` replaces the child's loop (same messages); the restart tests run one without a GPU."""
        self.timeout = timeout
        self.settings = settings or TimingSettings()
        self._child = Child(child_main or _runner_main, (device_id, self.settings), name=f"gpu-runner-{device_id}")
        self.device: DeviceInfo | None = None
        self.restarts = 0
        self._tasks: dict[Hashable, tuple] = {}
        self._child_tasks: set[Hashable] = set()
        self._in_flight: deque[_Job] = deque()
        self._head_since = 0.0
        self._done: list[tuple[Hashable, RunResult]] = []

    # -- lifecycle

    def start(self) -> DeviceInfo:
        self._child.start()
        self._child_tasks = set()
        if not self._child.conn.poll(STARTUP_TIMEOUT_S):
            self._child.kill()
            raise GpuUnavailable(f"the GPU runner did not start within {STARTUP_TIMEOUT_S:g} s")
        try:
            _, info = self._child.recv()
        except ChildDied as exc:
            raise GpuUnavailable(f"the GPU runner could not start ({exc}): is CuPy installed and a CUDA GPU "
                                 "visible? Its error is printed above") from None
        self.device = info
        return info

    def close(self) -> None:
        self._child.stop()

    def __enter__(self) -> "Runner":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- work

    def add_task(self, key: Hashable, inputs: Sequence[np.ndarray], reference: np.ndarray) -> None:
        """Inputs (the output buffer among them, where each kernel's `output_index` says) and
        the expected output of one task; kernels submitted under `key` run on them."""
        self._tasks[key] = (list(inputs), reference)

    def has_task(self, key: Hashable) -> bool:
        return key in self._tasks

    def submit(self, job_id: Hashable, task_key: Hashable, cubin_path: str, source: KernelSource) -> None:
        if task_key not in self._tasks:
            raise KeyError(f"task {task_key!r} was not added to the runner")
        job = _Job(job_id, task_key, cubin_path, source)
        if not self._in_flight:
            self._head_since = time.monotonic()
        self._in_flight.append(job)
        try:
            self._send(job)
        except ChildDied:
            if len(self._in_flight) == 1:  # it died while idle: nobody to blame, start a fresh one
                self._restart()
            # else it died on an earlier job: `poll` blames that one and resends this one

    def connections(self) -> list[Connection]:
        return [self._child.conn] if self._in_flight and self._child.conn is not None else []

    def next_deadline(self) -> float | None:
        return self._head_since + self.timeout if self._in_flight else None

    def poll(self, wait_s: float = 0.0) -> list[tuple[Hashable, RunResult]]:
        if not self._done and self._in_flight:
            limit = max(0.0, min(wait_s, self.next_deadline() - time.monotonic()))
            wait(self.connections(), timeout=limit)
        self._collect()
        done, self._done = self._done, []
        return done

    def run(self, task_key: Hashable, builds: Sequence[tuple[str, KernelSource]]) -> list[RunResult]:
        """Blocking form: (cubin path, source) pairs in, results in the same order."""
        for i, (path, source) in enumerate(builds):
            self.submit(i, task_key, path, source)
        results: dict[int, RunResult] = {}
        while len(results) < len(builds):
            results.update(self.poll(wait_s=1.0))
        return [results[i] for i in range(len(builds))]

    # -- internals

    def _ensure_child(self) -> None:
        if self._child.conn is None:
            self.start()

    def _send(self, job: _Job) -> None:
        self._ensure_child()
        if job.task_key not in self._child_tasks:
            self._child.send(("task", job.task_key, *self._tasks[job.task_key]))
            self._child_tasks.add(job.task_key)
        self._child.send(("run", job.job_id, job.task_key, job.cubin_path, job.source))

    def _collect(self) -> None:
        while self._in_flight:
            conn = self._child.conn
            if conn is not None and conn.poll():
                try:
                    _, job_id, result, fatal = self._child.recv()
                except ChildDied as exc:
                    self._fail_head(ErrorNo.RUNTIME_DEVICE, f"the runner died running this kernel: {exc}")
                    continue
                self._in_flight.popleft()
                self._head_since = time.monotonic()
                self._done.append((job_id, result))
                if fatal:
                    self._restart()
                continue
            if time.monotonic() - self._head_since > self.timeout:
                self._fail_head(ErrorNo.RUN_TIMEOUT, f"still running after {self.timeout:g} s")
                continue
            return

    def _fail_head(self, error_no: ErrorNo, message: str) -> None:
        job = self._in_flight.popleft()
        self._done.append((job.job_id, RunResult(error_no, message=message,
                                                 seconds=time.monotonic() - self._head_since)))
        self._restart()

    def _restart(self) -> None:
        """Kill the child (stuck or poisoned) and give a fresh one the jobs still queued."""
        self._child.kill()
        self.restarts += 1
        self._child_tasks = set()
        self.start()
        self._head_since = time.monotonic()
        for job in self._in_flight:
            self._send(job)
