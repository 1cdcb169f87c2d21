"""The NVRTC builder without a GPU: cache hits and misses, compile errors with their log,
the compile timeout (a deliberately slow source), and the GPU-model slug of a device name."""
from __future__ import annotations

import pytest

from engine.gpu.builder import Builder
from engine.gpu.device import model_slug
from engine.ops.base import KernelSource
from engine.logfile import ErrorNo

ARGS = ("data", "kernel", "output")


def kernel(name: str, body: str) -> KernelSource:
    code = f'extern "C" __global__ void {name}(const float* d, const float* w, float* out) {{ {body} }}'
    return KernelSource(name, code, (1, 1, 1), (32, 1, 1), 0, ARGS, 2)


GOOD = kernel("scale", "out[threadIdx.x] = 2.0f * d[threadIdx.x];")
OTHER = kernel("shift", "out[threadIdx.x] = d[threadIdx.x] + 1.0f;")
BROKEN = kernel("broken", "out[0] = undeclared_value;")
# 10^4 unrolled statements: minutes of compiling, far past any timeout below.
SLOW = KernelSource("slow", """#define R10(s) s s s s s s s s s s
extern "C" __global__ void slow(const float* d, const float* w, float* out) {
  float x = d[threadIdx.x]; int i = threadIdx.x;
  R10(R10(R10(R10(x = x * d[i & 1023] + w[(i * 7) & 1023]; i += 3;))))
  out[threadIdx.x] = x;
}""", (1, 1, 1), (32, 1, 1), 0, ARGS, 2)


@pytest.fixture
def builder(tmp_path):
    with Builder("sm_90", workers=2, cache_dir=tmp_path, timeout=30) as b:
        yield b


def test_a_kernel_compiles_once_and_then_comes_from_the_cache(builder):
    (first,) = builder.build([GOOD])
    assert first.ok and not first.cached and first.seconds > 0
    with open(first.cubin_path, "rb") as cubin:
        assert cubin.read(4) == b"\x7fELF"
    second, other = builder.build([GOOD, OTHER])
    assert second.ok and second.cached and second.cubin_path == first.cubin_path
    assert other.ok and not other.cached and other.cubin_path != first.cubin_path


def test_the_cache_is_keyed_by_architecture_too(tmp_path):
    with Builder("sm_90", workers=1, cache_dir=tmp_path) as hopper, Builder("sm_80", workers=1, cache_dir=tmp_path) as ampere:
        assert hopper.cache_path(GOOD) != ampere.cache_path(GOOD)
        (built,) = ampere.build([GOOD])
        assert built.ok and not built.cached


def test_a_compile_error_is_a_device_compile_error_that_keeps_the_log(builder):
    broken, good = builder.build([BROKEN, GOOD])
    assert broken.error_no == ErrorNo.COMPILE_DEVICE and broken.cubin_path is None
    assert "undeclared_value" in broken.message and "sm_90" in broken.message
    assert good.ok
    assert builder.build([BROKEN])[0].error_no == ErrorNo.COMPILE_DEVICE  # errors are not cached


def test_a_compile_past_the_timeout_is_a_build_timeout_and_the_worker_is_replaced(tmp_path):
    with Builder("sm_90", workers=1, cache_dir=tmp_path, timeout=4) as builder:
        slow, good = builder.build([SLOW, GOOD])
    assert slow.error_no == ErrorNo.BUILD_TIMEOUT and "4 s" in slow.message
    assert good.ok  # the only worker was killed at the timeout; a fresh one compiled this


@pytest.mark.parametrize("name,slug", [
    ("NVIDIA H200", "h200"),
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("NVIDIA A100-SXM4-40GB", "a100"),
    ("Tesla V100-SXM2-16GB", "v100"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ("NVIDIA A100-PCIE-40GB", "a100"),
    ("NVIDIA RTX A4000", "rtxa4000"),
    ("AMD Radeon PRO W6600", "w6600"),
    ("AMD Instinct MI250X", "mi250x"),
    ("NVIDIA_A100_PCIE_40GB", "a100"),  # store_results' spelling
    ("", "unknown"),
])
def test_device_names_become_target_model_slugs(name, slug):
    assert model_slug(name) == slug
