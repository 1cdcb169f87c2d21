"""One CUDA compile through NVRTC (cuda-python's bindings): source in, cubin out.

Needs no GPU and no CUDA context, so it runs in the builder's spawned workers
and on machines without a GPU (CI compiles every template this way).
"""
from __future__ import annotations

from functools import lru_cache

from engine.ops.base import ARCH_SPECIFIC_MARK


class NvrtcUnavailable(RuntimeError):
    """cuda-python or libnvrtc is not installed here."""


class CompileError(RuntimeError):
    """NVRTC rejected the source; the message holds the compiler log."""


BASE_OPTIONS = ("--std=c++17",)
# A source marked ARCH_SPECIFIC_MARK (engine.ops.base) is compiled for "sm_90a" when "sm_90"
# is asked for: the same GPU with its arch-specific instructions (wgmma.mma_async) allowed.


def target_arch(code: str, arch: str) -> str:
    """The architecture NVRTC compiles `code` for, asked for `arch`."""
    return arch + "a" if arch == "sm_90" and code.startswith(ARCH_SPECIFIC_MARK) else arch


def _nvrtc():
    try:
        from cuda.bindings import nvrtc
    except ImportError as exc:  # pragma: no cover - depends on the install
        raise NvrtcUnavailable(
            "NVRTC needs cuda-python: pip install 'cuda-bindings>=13,<14' 'nvidia-cuda-nvrtc>=13,<14'"
        ) from exc
    return nvrtc


@lru_cache(maxsize=1)
def nvrtc_version() -> str:
    nvrtc = _nvrtc()
    try:
        err, major, minor = nvrtc.nvrtcVersion()
    except Exception as exc:  # the bindings raise when libnvrtc itself cannot be loaded
        raise NvrtcUnavailable(f"libnvrtc could not be loaded: {exc}") from exc
    _check(nvrtc, err, "nvrtcVersion")
    return f"{major}.{minor}"


def _check(nvrtc, err, what: str) -> None:
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        raise CompileError(f"{what} failed: {err.name}")


def _log(nvrtc, program) -> str:
    err, size = nvrtc.nvrtcGetProgramLogSize(program)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS or size <= 1:
        return ""
    buffer = b" " * size
    nvrtc.nvrtcGetProgramLog(program, buffer)
    return buffer.rstrip(b"\0").decode(errors="replace").strip()


def compile_to_cubin(code: str, arch: str, options: tuple[str, ...] = (), name: str = "kernel.cu") -> tuple[bytes, str]:
    """Compile `code` for `arch` (such as "sm_90"); returns (cubin, compiler log).

    Raises CompileError with the full log when the source does not compile.
    """
    nvrtc = _nvrtc()
    nvrtc_version()  # a clear NvrtcUnavailable before any other NVRTC call
    arch = target_arch(code, arch)
    err, program = nvrtc.nvrtcCreateProgram(code.encode(), name.encode(), 0, [], [])
    _check(nvrtc, err, "nvrtcCreateProgram")
    try:
        flags = [f"--gpu-architecture={arch}".encode(), *(o.encode() for o in BASE_OPTIONS + tuple(options))]
        (err,) = nvrtc.nvrtcCompileProgram(program, len(flags), flags)
        log = _log(nvrtc, program)
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise CompileError(f"NVRTC {err.name} for {arch}:\n{log}")
        err, size = nvrtc.nvrtcGetCUBINSize(program)
        _check(nvrtc, err, "nvrtcGetCUBINSize")
        cubin = b" " * size
        (err,) = nvrtc.nvrtcGetCUBIN(program, cubin)
        _check(nvrtc, err, "nvrtcGetCUBIN")
        return cubin, log
    finally:
        nvrtc.nvrtcDestroyProgram(program)
