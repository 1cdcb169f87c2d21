"""What a measurement ran on, beyond the device's name: the board, the software, the clock.

Read without a CUDA context (nvidia-smi, or NVML where pynvml is installed), so the GPU
measurer's parent, which spawns compile workers, may ask it before every batch.
"""
from __future__ import annotations

import subprocess
from importlib import metadata

from engine.measure import DeviceInfo


def _smi(device_id: int, query: str) -> str | None:
    try:
        out = subprocess.run(["nvidia-smi", "-i", str(device_id), f"--query-gpu={query}", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=10)
        value = out.stdout.strip().splitlines()[0].strip()
        return value or None
    except Exception:  # no nvidia-smi here, or it failed: the field reads as not recorded
        return None


def sm_clock_mhz(device_id: int) -> int | None:
    """The SM clock now (NVML, else nvidia-smi); None where neither answers."""
    try:
        import pynvml

        pynvml.nvmlInit()
        return int(pynvml.nvmlDeviceGetClockInfo(pynvml.nvmlDeviceGetHandleByIndex(device_id), pynvml.NVML_CLOCK_SM))
    except Exception:  # no NVML here: ask the command-line tool
        value = _smi(device_id, "clocks.sm")
        return int(value) if value and value.isdigit() else None


def gpu_uuid(device_id: int) -> str | None:
    return _smi(device_id, "uuid")


def cupy_version() -> str | None:
    """CuPy's version without importing it (its wheel is named cupy-cuda13x and so on)."""
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if name == "cupy" or name.startswith("cupy-cuda"):
            return dist.version
    return None


def measuring_environment(device_id: int, device: DeviceInfo) -> dict:
    """The environment a batch of measurements on `device` records."""
    from .nvrtc import nvrtc_version

    return {
        "gpu_uuid": gpu_uuid(device_id), "gpu_name": device.name, "driver": device.driver_version,
        "cuda_runtime": device.cuda_version, "nvrtc": nvrtc_version(), "cupy": cupy_version(),
        "sm_clock_mhz": sm_clock_mhz(device_id),
    }
