"""The CPU emulator's thread machinery: its fibers meet at barriers, run ahead where a kernel
forgets one, and report a deadlock instead of hanging."""
import numpy as np
import pytest

import cuda_on_cpu
from engine.ops.base import KernelSource

pytestmark = pytest.mark.skipif(not cuda_on_cpu.available(), reason="needs g++ to run kernels on the CPU")

REVERSE = r"""
extern "C" __global__ void reverse(const float* in, float* out) {
    __shared__ float staged[64];
    const int t = threadIdx.x;
    staged[t] = in[blockIdx.x * 64 + t];
    %s
    out[blockIdx.x * 64 + t] = staged[63 - t];
}
"""


def reverse_kernel(barrier: str) -> KernelSource:
    return KernelSource(name="reverse", code=REVERSE % barrier, grid=(3, 1, 1), block=(64, 1, 1),
                        shared_bytes=0, arg_order=("in", "out"), output_index=1)


def test_a_block_meets_at_syncthreads_and_reads_what_the_others_wrote():
    values = np.arange(192, dtype=np.float32)
    out = np.full(192, np.nan, dtype=np.float32)
    cuda_on_cpu.run(reverse_kernel("__syncthreads();"), [values, out])
    assert np.array_equal(out, values.reshape(3, 64)[:, ::-1].ravel())


def test_without_the_barrier_a_thread_runs_ahead_and_reads_slots_not_written_yet():
    values = np.arange(1, 193, dtype=np.float32)
    out = np.full(192, np.nan, dtype=np.float32)
    cuda_on_cpu.run(reverse_kernel(""), [values, out])
    assert not np.array_equal(out, values.reshape(3, 64)[:, ::-1].ravel())


def test_threads_left_waiting_at_a_barrier_the_others_skip_raise():
    source = reverse_kernel("if (t < 32) __syncthreads();")
    with pytest.raises(RuntimeError, match="reverse deadlocked"):
        cuda_on_cpu.run(source, [np.zeros(192, np.float32), np.zeros(192, np.float32)])
