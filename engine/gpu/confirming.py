"""The GPU's confirmation stopwatch: a fresh measuring process per confirmation.

`FreshProcessStopwatch` spawns a child that owns its own CUDA context (nothing of the
tuning process's state: no warmed caches, no cuDNN choice already made), and serves
`engine.confirm`'s protocol over a pipe. The parent compiles the configs' kernels with
NVRTC (the builder's spawned workers and disk cache: a process with a CUDA context may
not spawn them); the child loads each (or builds the vendor call, `fair_vendor`), checks
its output against the template's numpy reference, and captures three CUDA graphs:

* warm: `number` back-to-back launches on resident inputs (the runner's rule: `number`
  grown until one replay lasts `min_repeat_ms`), timed on the second of two replays in a row;
* cold: `number` times (flush, launch), where the flush writes a buffer twice the size of
  L2, so every launch starts with its inputs evicted;
* flush: the same flushes alone, whose time is taken off the cold replay's.

Before anything is timed the child loads PyTorch's CUDA runtime, cuBLAS and cuDNN
(`fair_vendor.load_vendor_libraries`), as timing a vendor baseline does: a process that has
run PyTorch times a 2 µs kernel about 0.19 µs slower warm on the H200, whichever it ran
first, so every confirmation process starts in that state and the order of the workloads
it measures moves nothing (scripts/device/vendor_probe.py).

A cold replay lasts COLD_REPEAT_FACTOR times `min_repeat_ms`: the flush dominates it, and
the longer replay keeps the subtraction's jitter small against a kernel of a few µs.

One `time` call replays one graph between two CUDA events: seconds per launch.
"""
from __future__ import annotations

import math
import os
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING, Sequence

import numpy as np

from engine.codehash import code_hash, generator_version
from engine.confirm import Contender, Role, Stopwatch, Unready
from engine.logfile import ErrorNo

from .child import Child, ChildDied
from .environment import gpu_uuid, sm_clock_mhz
from .fair_vendor import load_vendor_libraries
from .runner import TimingSettings, accepted_error, cupy_graph, load_kernel, output_error, relative_l2_error

if TYPE_CHECKING:  # pragma: no cover
    from engine.task import Task

PREPARE_TIMEOUT_S = 900.0
TIME_TIMEOUT_S = 120.0
MIN_FLUSH_BYTES = 64 * 1024 * 1024
COLD_REPEAT_FACTOR = 5
COLD_METHOD = "CUDA graph of (L2 flush, launch) x n minus a graph of the flushes alone"


class StopwatchDied(RuntimeError):
    """The measuring process died or hung; the message says which call."""


# ---------------------------------------------------------------- child side


class _Bench:
    """The child's state: the task's resident inputs, and per contender its three graphs."""

    def __init__(self, device_id: int, settings: TimingSettings) -> None:
        import cupy

        self.cp = cupy
        self.device_id = device_id
        cupy.cuda.Device(device_id).use()
        self.settings = settings
        self.stream = cupy.cuda.Stream(non_blocking=True)
        l2 = cupy.cuda.Device(device_id).attributes.get("L2CacheSize", 0)
        self.flush_bytes = max(2 * l2, MIN_FLUSH_BYTES)
        self.flush_buffer = cupy.empty(self.flush_bytes, dtype=cupy.uint8)
        self.prepared: list[dict | None] = []
        self.vendor_libraries = load_vendor_libraries(device_id)

    # -- environment

    def environment(self) -> dict:
        from .device import query_device
        from .nvrtc import nvrtc_version

        cp = self.cp
        info = query_device(self.device_id)
        env = {
            "gpu_uuid": gpu_uuid(self.device_id), "gpu_name": info.name, "driver": info.driver_version,
            "cuda_runtime": info.cuda_version, "nvrtc": nvrtc_version(), "cupy": cp.__version__,
            "sm_clock_mhz": sm_clock_mhz(self.device_id), "pid": os.getpid(),
            "flush_bytes": self.flush_bytes, "cold_method": COLD_METHOD,
        }
        return {**env, **self.vendor_libraries}

    # -- preparing

    def prepare(self, task_name: str, args: list, contenders: Sequence[Contender], seed: int, kernels: dict) -> list:
        """`kernels`: per config contender, (source, build) compiled by the parent, or Unready."""
        from engine import create_task
        from engine.ops.base import DeviceLimits

        from .device import arch_of, query_device

        info = query_device(self.device_id)
        task = create_task(task_name, args, DeviceLimits.for_device(info))
        arch = arch_of(info)
        inputs = task.template.make_inputs(task.params, np.random.default_rng(seed))
        reference = task.template.reference(task.params, inputs)
        cp = self.cp
        with self.stream:
            arrays = [cp.asarray(a) for a in inputs]
            ref = cp.asarray(reference, dtype=cp.float64)
        self.stream.synchronize()
        out = []
        self.prepared = []
        for i, contender in enumerate(contenders):
            try:
                if contender.role == Role.VENDOR:
                    graphs, details = self._prepare_vendor(task, contender, inputs, reference)
                elif isinstance(kernels[i], Unready):
                    raise _NotReady(kernels[i].error_no, kernels[i].message)
                else:
                    graphs, details = self._prepare_config(task, *kernels[i], arch, arrays, ref)
            except _NotReady as exc:
                self.prepared.append(None)
                out.append(exc.unready)
                continue
            self.prepared.append(graphs)
            out.append(details)
        return out

    def _prepare_config(self, task, source, build, arch: str, arrays, ref):
        cp = self.cp
        details = {"code_hash": code_hash(source, arch, generator_version(task.template)), "arch": arch}
        if not build.ok:
            raise _NotReady(build.error_no, build.message[:2000])
        try:
            function = load_kernel(cp, build.cubin_path, source, arrays)
        except Exception as exc:  # a cubin the driver refuses, too much shared memory, a grid not all resident
            raise _NotReady(ErrorNo.INSTANTIATION_ERROR, f"loading the kernel failed: {exc}") from None
        output = arrays[source.output_index]

        def launch():
            function(source.grid, source.block, tuple(arrays), shared_mem=source.shared_bytes)

        try:
            error = output_error(self.stream, output, launch, ref)
        except Exception as exc:
            raise _NotReady(ErrorNo.RUNTIME_DEVICE, f"{type(exc).__name__}: {exc}") from None
        tolerance = accepted_error(source.tolerance, self.settings)
        if not error < tolerance:
            raise _NotReady(ErrorNo.WRONG_ANSWER, f"relative L2 error {error:.3g} over tolerance {tolerance:g}")
        details["relative_error"] = error
        stream = self.stream

        def flush():
            cp.cuda.runtime.memsetAsync(self.flush_buffer.data.ptr, 0, self.flush_bytes, stream.ptr)

        with stream:
            graphs = self._graphs(stream, launch, flush, lambda fn, n: cupy_graph(stream, fn, n))
        return graphs, details

    def _prepare_vendor(self, task, contender: Contender, inputs, reference):
        from .baselines import BaselineUnavailable, torch_graph
        from .fair_vendor import vendor_op

        cp = self.cp
        try:
            import torch
        except ImportError as exc:
            raise _NotReady(ErrorNo.UNKNOWN_ERROR, f"vendor baselines need PyTorch: {exc}") from None
        torch_stream = torch.cuda.Stream()
        events_stream = cp.cuda.ExternalStream(torch_stream.cuda_stream)

        def capture(fn, number):
            return torch_graph(torch_stream, fn, number)

        def time_call(call) -> float:
            with torch.cuda.stream(torch_stream):
                replay = capture(call, 20)
                replay()
                return self._elapsed(events_stream, replay) / 20

        try:
            with torch.cuda.stream(torch_stream):
                op = vendor_op(task, contender.provider, inputs, time_call)
                got = op.call()
            torch_stream.synchronize()
        except BaselineUnavailable as exc:
            raise _NotReady(ErrorNo.UNKNOWN_ERROR, str(exc)) from None
        error = relative_l2_error(got.double().cpu().numpy().reshape(reference.shape), reference)
        if not error < accepted_error(task.template.tolerance(task.params), self.settings):
            raise _NotReady(ErrorNo.WRONG_ANSWER, f"{op.details['library']}'s relative L2 error {error:.3g}")

        def flush():
            cp.cuda.runtime.memsetAsync(self.flush_buffer.data.ptr, 0, self.flush_bytes, torch_stream.cuda_stream)

        with torch.cuda.stream(torch_stream):
            graphs = self._graphs(events_stream, op.call, flush, capture)
        return graphs, {**op.details, "relative_error": error}

    def _graphs(self, stream, launch, flush, capture) -> dict:
        """Warm, cold and flush-only graphs, each with its launch count."""
        settings = self.settings

        def count(single_s: float, factor: int = 1) -> int:
            wanted = math.ceil(factor * settings.min_repeat_ms / 1e3 / max(single_s, 1e-7))
            return int(min(factor * settings.max_number, max(1, wanted)))

        def flushed():
            flush()
            launch()

        launch()  # warm-up: module load, clocks
        number = count(self._elapsed(stream, launch))
        flushed()
        cold_number = count(self._elapsed(stream, flushed), COLD_REPEAT_FACTOR)
        graphs = {"warm": capture(launch, number), "cold": capture(flushed, cold_number),
                  "flush": capture(flush, cold_number), "number": number, "cold_number": cold_number,
                  "stream": stream}
        for name in ("warm", "cold", "flush"):
            graphs[name]()  # warm-up of the graph itself
        return graphs

    def _elapsed(self, stream, replay) -> float:
        cp = self.cp
        begin, end = cp.cuda.Event(), cp.cuda.Event()
        begin.record(stream)
        replay()
        end.record(stream)
        end.synchronize()
        return cp.cuda.get_elapsed_time(begin, end) / 1e3

    # -- timing

    def time(self, index: int, cold: bool) -> float:
        graphs = self.prepared[index]
        stream = graphs["stream"]
        if not cold:
            # One untimed replay first, as tuning's repeats run back to back: in the committed
            # A/B runs every round after the first read 0.5-1.2 us a launch slower than the first,
            # whatever the kernel's length, and two runs' medians then differed by up to 20 %.
            for _ in range(self.settings.warm_primes):
                graphs["warm"]()
            return self._elapsed(stream, graphs["warm"]) / graphs["number"]
        total = self._elapsed(stream, graphs["cold"])
        flushes = self._elapsed(stream, graphs["flush"])
        # Jitter may take a little more than a tiny kernel's time off: never report zero.
        return max(total - flushes, 1e-9 * graphs["cold_number"]) / graphs["cold_number"]


class _NotReady(Exception):
    """Why a contender cannot be timed, as an exception inside the child."""

    def __init__(self, error_no: ErrorNo, message: str) -> None:
        super().__init__(message)
        self.unready = Unready(error_no, message)


def _stopwatch_main(conn: Connection, device_id: int, settings: TimingSettings) -> None:
    """Child loop. In: ("prepare", task name, args, contenders, seed), ("time", i, cold),
    ("environment",), None to stop. Out: ("ok", value) or ("error", message)."""
    from .device import query_device

    bench = _Bench(device_id, settings)
    conn.send(("ok", query_device(device_id)))
    while True:
        message = conn.recv()
        if message is None:
            return
        try:
            if message[0] == "prepare":
                answer = bench.prepare(*message[1:])
            elif message[0] == "time":
                answer = bench.time(*message[1:])
            else:
                answer = bench.environment()
        except Exception as exc:  # the parent raises it as StopwatchDied; the context may be gone
            conn.send(("error", f"{type(exc).__name__}: {exc}"))
            return
        conn.send(("ok", answer))


# ---------------------------------------------------------------- parent side


def kernel_source(task: "Task", contender: Contender):
    """The config's kernel source, or why it has none (Unready)."""
    try:
        config = task.config_space.from_entity(contender.entity)
    except ValueError as exc:
        return Unready(ErrorNo.INSTANTIATION_ERROR, f"not a config of this space: {exc}")
    reason = task.why_invalid(config)
    if reason:
        return Unready(ErrorNo.INSTANTIATION_ERROR, reason)
    try:
        return task.template.kernel(task.params, config)
    except (ValueError, NotImplementedError) as exc:
        return Unready(ErrorNo.INSTANTIATION_ERROR, f"no kernel for this config: {exc}")


class FreshProcessStopwatch(Stopwatch):
    """engine.confirm's Stopwatch on one GPU, measuring in a child process started for it."""

    def __init__(self, device_id: int = 0, settings: TimingSettings | None = None, seed: int = 0) -> None:
        from .device import model_slug  # noqa: F401  (fail early where the GPU half cannot load)

        self.device_id = device_id
        self.settings = settings or TimingSettings()
        self.seed = seed
        self._child = Child(_stopwatch_main, (device_id, self.settings), name=f"gpu-stopwatch-{device_id}")
        self._child.start()
        self.device = self._call(None, PREPARE_TIMEOUT_S, "start")
        self._environment: dict | None = None
        self._builder = None

    @property
    def target(self) -> str:
        return f"cuda -model={self.environment_now()['model']}"

    def environment_now(self) -> dict:
        if self._environment is None:
            env = self._call(("environment",), TIME_TIMEOUT_S, "environment")
            from .device import model_slug

            self._environment = {**env, "model": model_slug(env["gpu_name"])}
        return self._environment

    def prepare(self, task: "Task", contenders: Sequence[Contender]) -> list:
        kernels = self._kernels(task, contenders)
        return self._call(("prepare", task.name, task.args, list(contenders), self.seed, kernels),
                          PREPARE_TIMEOUT_S, "prepare")

    def _kernels(self, task: "Task", contenders: Sequence[Contender]) -> dict:
        """Each config contender's (source, build), compiled here on the host's cores at once
        (the measuring child has a CUDA context and may not spawn compile workers; the kernel
        cache on disk spares a second run every compile), or why it has none."""
        from engine import create_task
        from engine.ops.base import DeviceLimits

        from .builder import Builder
        from .device import arch_of

        arch = arch_of(self.device)
        task = create_task(task.name, task.args, DeviceLimits.for_device(self.device))
        sources = {i: kernel_source(task, c) for i, c in enumerate(contenders) if c.role != Role.VENDOR}
        wanted = {i: source for i, source in sources.items() if not isinstance(source, Unready)}
        if wanted and self._builder is None:
            self._builder = Builder(arch, workers=os.cpu_count() or 1)
        builds = dict(zip(wanted, self._builder.build(wanted.values()))) if wanted else {}
        return {i: source if isinstance(source, Unready) else (source, builds[i]) for i, source in sources.items()}

    def time(self, index: int, cold: bool) -> float:
        return self._call(("time", index, cold), TIME_TIMEOUT_S, "time")

    def environment(self) -> dict:
        self._environment = None  # the SM clock of now, at the start of the rounds
        env = dict(self.environment_now())
        env.pop("model", None)
        return env

    def _call(self, message, timeout: float, what: str):
        try:
            if message is not None:
                self._child.send(message)
            if not self._child.conn.poll(timeout):
                self._child.kill()
                raise StopwatchDied(f"the measuring process did not answer {what} within {timeout:g} s")
            status, value = self._child.recv()
        except ChildDied as exc:
            raise StopwatchDied(f"the measuring process died during {what}: {exc}") from None
        if status == "error":
            self._child.kill()
            raise StopwatchDied(f"the measuring process failed during {what}: {value}")
        return value

    def close(self) -> None:
        if self._builder is not None:
            self._builder.close()
        self._child.stop()

