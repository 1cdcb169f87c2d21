"""Marks for tests that need CuPy and a CUDA GPU: a module that imports this is skipped
where either is missing (CI has neither) and carries the `gpu` marker everywhere."""
import pytest

cupy = pytest.importorskip("cupy")
try:
    HAS_GPU = cupy.cuda.runtime.getDeviceCount() > 0
except Exception:  # CuPy installed, but no driver or no device
    HAS_GPU = False

GPU_ONLY = [pytest.mark.gpu, pytest.mark.skipif(not HAS_GPU, reason="needs a CUDA GPU")]
