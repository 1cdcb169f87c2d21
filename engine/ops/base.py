"""What every template provides, the device limits its validity rules read, and the
kernel source it generates.

A template names a task (the `task_name` written in logs), checks the log's `args`,
defines the config space, counts FLOPs and bytes, says why a config cannot run on a
device (before anything is compiled), describes a config to the cost model, picks an
untuned default, and generates a config's CUDA source with its inputs and numpy
reference. Each operator's template lives in `engine/ops/<op>/template.py`.
"""
from __future__ import annotations

import dataclasses
import math
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Iterator

import numpy as np

from ..baselines import DEFAULT_CONFIG_BASELINE
from ..columns import ConfigColumns, SplitColumn, knob_number
from ..space import ConfigEntity, ConfigSpace, SplitValue

if TYPE_CHECKING:  # pragma: no cover
    from ..measure import DeviceInfo

# Tensors beyond this many elements are a typo, not a workload (and overflow int32 indexing).
MAX_TENSOR_ELEMENTS = 2**31 - 1
FLOAT_BYTES = 4
# Registers a thread needs besides accumulators and operands: indexes, addresses, loop counters.
REGISTER_OVERHEAD = 24
# Threads resident at once on an H200 (132 SMs x 2048): blocks x threads over this is "waves".
REFERENCE_THREAD_SLOTS = 132 * 2048
# A Hopper SM's register file (a block's most), and a warpgroup's threads: ptxas budgets a block's
# registers by whole warpgroups (launch_register_budget).
REGISTER_FILE, WARPGROUP = 65536, 128


Dim3 = tuple[int, int, int]


@dataclass(frozen=True)
class TensorMap:
    """A TMA tensor map (CUtensorMap) the runner encodes for one input array at load time and
    copies into the module's 128-byte, 64-byte aligned `__constant__` `symbol`: the array is a
    row-major `rows x columns` matrix of `element_bytes` elements, copied `box_rows x
    box_columns` at a time into shared memory with the 128-byte swizzle (a box row is 128
    bytes; elements past the matrix's edges arrive as zeros)."""

    symbol: str
    argument: int
    rows: int
    columns: int
    box_rows: int
    box_columns: int
    element_bytes: int


@dataclass(frozen=True)
class Im2colTensorMap:
    """A TMA tensor map in im2col mode for an NHWC input `shape` (N, H, W, C) of `element_bytes`
    elements, in `__constant__` `symbol` like TensorMap's. One copy brings `pixels` consecutive
    output pixels' input rows of `channels` channels (one 128-byte swizzled row each): it starts
    at a pixel's filter corner, walks W then H then N by `strides` (h, w) within the corners'
    box, from `lower` (h, w) to the input's last row and column plus `upper` (h, w), and reads
    each corner plus the copy's filter offset (zeros outside the input: the padding)."""

    symbol: str
    argument: int
    shape: tuple[int, int, int, int]
    lower: tuple[int, int]
    upper: tuple[int, int]
    strides: tuple[int, int]
    channels: int
    pixels: int
    element_bytes: int


@dataclass(frozen=True)
class KernelSource:
    """Everything the builder and the runner need and nothing else: the builder compiles
    `code` (the entry point is `name`, declared `extern "C"`), the runner launches it on
    `grid` x `block` with `shared_bytes` of dynamic shared memory, passing the task's input
    arrays in `arg_order` with the output array at `output_index`, after copying each
    `constants` input (symbol, argument index) into the module's `__constant__` of that name
    and encoding each of `tensor_maps` for its input into its own `__constant__`.
    `tolerance`, where set, is the largest relative L2 error this kernel's output may have
    (a reduced-precision kernel's own); None leaves the measurer's (1e-4, fp32)."""

    name: str
    code: str
    grid: Dim3
    block: Dim3
    shared_bytes: int
    arg_order: tuple[str, ...]
    output_index: int
    constants: tuple[tuple[str, int], ...] = ()
    tolerance: float | None = None
    tensor_maps: tuple[TensorMap | Im2colTensorMap, ...] = ()
    co_resident: bool = False  # its blocks wait on one another: the whole grid is resident at once


# A source that uses sm_90's arch-specific instructions (wgmma.mma_async) starts with this
# line: for "sm_90" NVRTC then compiles it for "sm_90a" (engine.gpu.nvrtc.target_arch), the cubin
# running on compute capability 9.0 only; every caller keeps asking for the device's plain arch.
ARCH_SPECIFIC_MARK = "// tunerweb: arch-specific sm_90a"


def copy_to_constant(module, symbol: str, array) -> None:
    """Copy a device array into a CuPy module's `__constant__` symbol; ValueError when it does not fit."""
    target = module.get_global(symbol)
    size = target.mem.size or constant_bytes(module, symbol)
    if array.nbytes > size:
        raise ValueError(f"{array.nbytes} bytes do not fit the {size}-byte __constant__ {symbol}")
    target.copy_from_device(array.data, array.nbytes)


def constant_bytes(module, symbol: str) -> int:
    """The size of a module's global from the driver: CuPy 14's get_global reports 0 bytes."""
    from cuda.bindings import driver

    loaded = getattr(module, "module", module)  # a RawModule holds its loaded cupy.cuda.Module
    err, _, size = driver.cuModuleGetGlobal(driver.CUmodule(loaded.ptr), symbol.encode())
    if err != driver.CUresult.CUDA_SUCCESS:
        raise ValueError(f"the module has no __constant__ {symbol} ({err.name})")
    return int(size)


class BadArgs(ValueError):
    """A task's args that do not describe a workload this template can run."""


class UnknownTemplate(KeyError):
    """A task name with no template; the message lists the known ones."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class DeviceLimits:
    """Per-block launch limits of a CUDA device; templates' validity rules read these."""

    max_threads_per_block: int = 1024
    max_block_dims: tuple[int, int, int] = (1024, 1024, 64)
    max_grid_dims: tuple[int, int, int] = (2**31 - 1, 65535, 65535)
    max_shared_memory_per_block: int = 48 * 1024
    max_shared_memory_optin: int = 227 * 1024
    max_registers_per_thread: int = 255
    regs_per_block: int = 65536
    warp_size: int = 32
    max_vector_bytes: int = 16
    # Blocks a thread block cluster may hold (portable size; sm_90 and newer), 1: no clusters.
    max_cluster_size: int = 8
    # sm_90's warpgroup MMA (wgmma.mma_async, compiled for sm_90a): Hopper only, neither
    # older GPUs nor sm_100 and later have it.
    wgmma: bool = True
    # Streaming multiprocessors (an H200's 132): a grid whose blocks wait on one another (stream-K)
    # must fit on them at once.
    multiprocessors: int = 132

    @classmethod
    def for_h200(cls) -> "DeviceLimits":
        """NVIDIA H200 (sm_90): 227 KB opt-in shared memory, 48 KB without opting in."""
        return cls()

    @classmethod
    def for_v100(cls) -> "DeviceLimits":
        return cls(max_shared_memory_optin=96 * 1024, max_cluster_size=1, wgmma=False, multiprocessors=80)

    @classmethod
    def for_model(cls, model: str) -> "DeviceLimits":
        """Limits for a target `-model=` slug; the H200's for models it does not know."""
        return {"v100": cls.for_v100}.get(model, cls.for_h200)()

    @classmethod
    def for_device(cls, device: "DeviceInfo") -> "DeviceLimits":
        """Limits for the GPU a measurer times on: its model's, without clusters where its
        compute capability (when known: a replay's recording may not say) is below 9.0, and
        without wgmma where it is known and not 9.x."""
        limits = cls.for_model(device.model)
        major = device.compute_capability.split(".")[0]
        if major.isdigit() and int(major) < 9:
            limits = dataclasses.replace(limits, max_cluster_size=1)
        if major.isdigit() and int(major) != 9:
            limits = dataclasses.replace(limits, wgmma=False)
        if device.sm_count:
            limits = dataclasses.replace(limits, multiprocessors=device.sm_count)
        return limits


def reason_vector_width(elements: int, element_bytes: int, limits: DeviceLimits) -> str | None:
    """A vector load/store wider than the device's widest (16 bytes on NVIDIA) cannot be issued."""
    width = elements * element_bytes
    if elements < 1 or elements & (elements - 1):
        return f"vector width {elements} is not a power of two"
    if width > limits.max_vector_bytes:
        return f"vector of {width} bytes exceeds the {limits.max_vector_bytes}-byte maximum"
    return None


@dataclass(frozen=True)
class LaunchShape:
    """What a config asks of one kernel launch, for the shared launch rules."""

    block: tuple[int, int, int]
    grid: tuple[int, int, int]
    shared_bytes: int
    registers: int  # per-thread estimate
    shared_detail: str = ""

    @property
    def threads(self) -> int:
        return math.prod(self.block)


def launch_register_budget(threads: int) -> int:
    """Registers per thread that __launch_bounds__(threads, 1) leaves: the register file over
    the block's warps rounded up to whole warpgroups (as ptxas counts them: 9 warps get what 12
    would), allocated 8 a thread at a time, at most 255."""
    warpgroups = -(-threads // WARPGROUP)
    return min(REGISTER_FILE // (warpgroups * WARPGROUP * 8) * 8, 255)


def _launch_checks(launch: LaunchShape, limits: DeviceLimits) -> Iterator[tuple[Any, Callable[[], str]]]:
    """(broken, reason) for every launch limit in the order they are reported: `broken` is a
    bool for one launch and a bool array for a batch of them (`LaunchShape` of arrays), so
    `why_launch_fails` and `launch_fails` read the same rules."""
    threads = launch.threads
    yield threads > limits.max_threads_per_block, \
        lambda: f"{threads} threads per block exceed the limit of {limits.max_threads_per_block}"
    for axis, size, most in zip("xyz", launch.block, limits.max_block_dims):
        yield size > most, lambda axis=axis, size=size, most=most: \
            f"block dimension {axis} of {size} threads exceeds the limit of {most}"
    for axis, size, most in zip("xyz", launch.grid, limits.max_grid_dims):
        yield size > most, lambda axis=axis, size=size, most=most: \
            f"grid dimension {axis} of {size} blocks exceeds the limit of {most}"

    def shared() -> str:
        detail = f" ({launch.shared_detail})" if launch.shared_detail else ""
        return (f"shared memory of {launch.shared_bytes} bytes per block exceeds the limit of "
                f"{limits.max_shared_memory_per_block}{detail}")

    yield launch.shared_bytes > limits.max_shared_memory_per_block, shared
    yield launch.registers > limits.max_registers_per_thread, \
        lambda: f"about {launch.registers} registers per thread exceed the limit of {limits.max_registers_per_thread}"
    yield launch.registers * threads > limits.regs_per_block, \
        lambda: (f"about {launch.registers} registers x {threads} threads exceed the "
                 f"{limits.regs_per_block} registers of a block")


def why_no_cluster(blocks: int, what: str, limits: DeviceLimits) -> str | None:
    """Why `blocks` blocks (`what`, in words) cannot form one thread block cluster on this device, or None."""
    if blocks <= limits.max_cluster_size:
        return None
    most = f"at most {limits.max_cluster_size} blocks" if limits.max_cluster_size > 1 else "this GPU has no clusters"
    return f"{what} cannot form one thread block cluster ({most})"


def why_launch_fails(launch: LaunchShape, limits: DeviceLimits) -> str | None:
    """Launch limits every CUDA template shares: threads, block and grid sizes, shared memory, registers."""
    for broken, reason in _launch_checks(launch, limits):
        if broken:
            return reason()
    return None


def launch_fails(launch: LaunchShape, limits: DeviceLimits) -> np.ndarray:
    """`why_launch_fails(...) is not None` for a batch of launches (a `LaunchShape` of arrays)."""
    failed = np.zeros(np.shape(launch.threads), dtype=bool)
    for broken, _ in _launch_checks(launch, limits):
        failed |= broken
    return failed


def launch_features(*, threads: int, work_per_thread: int, registers: int, shared_bytes: int,
                    grid: Dim3) -> dict[str, float]:
    """A launch's shape for the cost model: threads, a thread's outputs, registers and shared memory,
    blocks, and waves of the reference GPU's thread slots."""
    blocks = math.prod(grid)
    return {
        "threads_per_block": threads,
        "work_per_thread": work_per_thread,
        "registers_estimate": registers,
        "shared_bytes": shared_bytes,
        "blocks": blocks,
        "waves": blocks * threads / REFERENCE_THREAD_SLOTS,
    }


def knob_features(config: "ConfigEntity | ConfigColumns") -> dict[str, Any]:
    """Every knob as numbers, in knob order: log2 of each split part, a plain knob's value as
    `engine.columns.knob_number` makes it (a text value is its option's position). For
    `ConfigColumns`, the same numbers as arrays, read from tables built with that function."""
    out: dict[str, Any] = {}
    if isinstance(config, ConfigColumns):
        for knob in config.space.knobs:
            value = config[knob.name]
            if isinstance(value, SplitColumn):
                for part, log2 in enumerate(value.log2):
                    out[f"{knob.name}.{part}"] = log2
            else:
                out[knob.name] = value.number
        return out
    for knob, digit in zip(config.space.knobs, config.digits):
        value = config[knob.name]
        if isinstance(value, SplitValue):
            for part, size in enumerate(value.size):
                out[f"{knob.name}.{part}"] = math.log2(size)
        else:
            out[knob.name] = knob_number(digit, value.val)
    return out


def first_valid(space: ConfigSpace, preferred: ConfigEntity) -> ConfigEntity:
    """The preferred config when valid, else a fixed-seed valid sample (still deterministic);
    BadArgs when the space has no valid config at all."""
    if space.is_valid(preferred):
        return preferred
    found = space.sample(np.random.default_rng(0), 1)
    if not found:
        raise BadArgs(f"no valid config: every config of this space is rejected "
                      f"(the preferred one because {space.why_invalid(preferred)})")
    return found[0]


class Template(ABC):
    """One tunable operator; stateless, its params come from `parse_args`."""

    name: str = ""
    # The vendor library a tuned kernel is held against ("cudnn", "cublas": engine.baselines),
    # measured by engine.gpu.baselines; templates without one are held against their default config.
    baseline_provider: str = DEFAULT_CONFIG_BASELINE

    @abstractmethod
    def parse_args(self, args: list) -> Any:
        """Check a log's `args`; raise BadArgs with a one-line reason when they are unusable."""

    @abstractmethod
    def define_space(self, params: Any) -> ConfigSpace:
        """The knobs (without device rules: `Task` adds `why_invalid` as the space's rule)."""

    def space_on(self, params: Any, limits: DeviceLimits) -> ConfigSpace:
        """The knobs as a device's task draws them: define_space's, unless the template keeps random draws
        off configs the device cannot run at all (the same knobs and indexes either way)."""
        return self.define_space(params)

    @abstractmethod
    def flops(self, params: Any) -> int:
        """FLOPs of one run (a multiply-add counts two, as AutoTVM counts)."""

    def bytes_moved(self, params: Any) -> int | None:
        """Bytes one run must read and write at the least, where the template counts them
        (pages then show GB/s beside GFLOPS); None where it does not."""
        return None

    @abstractmethod
    def why_invalid(self, params: Any, config: ConfigEntity, limits: DeviceLimits) -> str | None:
        """Why this config cannot run on a device with these limits, or None."""

    @abstractmethod
    def features(self, params: Any, config: ConfigEntity) -> dict[str, float]:
        """Numbers describing a config for the cost model; same keys, same order, for every config."""

    # -- the batch path (engine.columns): many configs at once, for the tuners' search --------
    # The one way a template says it has one: `has_batch_path` True, and both methods below
    # defined (the convs: engine.ops.conv2d.tiling.TiledConvBatchPath). Callers check the flag
    # and, where it is False, ask `features` and `why_invalid` config by config.
    has_batch_path: bool = False

    def features_of_columns(self, params: Any, columns: ConfigColumns) -> dict[str, Any]:
        """`features` of many configs at once: the same names, each an array over the configs
        (or one number where it is the same for all). A template whose `features` code is
        plain arithmetic on knob values returns `self.features(params, columns)`: one definition."""
        raise NotImplementedError(f"{self.name} has no batch path (has_batch_path is False)")

    def invalid_of_columns(self, params: Any, columns: ConfigColumns, limits: DeviceLimits) -> np.ndarray:
        """Where `why_invalid` would give a reason, for many configs at once (a bool array)."""
        raise NotImplementedError(f"{self.name} has no batch path (has_batch_path is False)")

    @abstractmethod
    def default_config(self, params: Any, space: ConfigSpace) -> ConfigEntity:
        """An untuned but valid config, the same every time."""

    # -- GPU half: the op's kernel module -------------------------------------------------
    @abstractmethod
    def kernel(self, params: Any, config: ConfigEntity) -> KernelSource:
        """The config's CUDA source, every size a compile-time constant, and its launch."""

    @abstractmethod
    def make_inputs(self, params: Any, rng: np.random.Generator) -> list[np.ndarray]:
        """Arrays in the kernel's `arg_order`, the output among them."""

    @abstractmethod
    def reference(self, params: Any, inputs: list[np.ndarray]) -> np.ndarray:
        """What the output must hold, computed with numpy on the CPU."""

    def tolerance(self, params: Any) -> float | None:
        """The largest relative L2 error its kernels (and its vendor baseline) may have against
        the reference, where the template's precision sets one; None: the measurer's (fp32)."""
        return None
