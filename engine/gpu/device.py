"""What GPU this is, read through CuPy: name, `-model=` slug, compute capability, sizes, versions.

`query_device` creates a CUDA context, so it runs inside the runner's child
process (never in a parent that later spawns compile workers); `model_slug`
is plain text work and runs anywhere.
"""
from __future__ import annotations

import re

from engine.measure import DeviceInfo

_VENDOR_WORDS = {"nvidia", "tesla", "geforce", "quadro", "amd", "radeon", "instinct"}
# Trailing words that name a board's packaging or memory, not the chip: "H100 80GB HBM3", "A100-SXM4-40GB".
_PACKAGING = re.compile(r"^(\d+gb|hbm\d*e?|sxm\d*|pcie|nvl|mig.*|\d+c)$")


def model_slug(name: str) -> str:
    """The target's `-model=` value for a device name: "NVIDIA H200" gives "h200",
    "Tesla V100-SXM2-16GB" gives "v100", "NVIDIA GeForce RTX 4090" gives "rtx4090",
    "AMD Radeon PRO W6600" gives "w6600", "AMD Instinct MI250X" gives "mi250x"
    (docs/gpu-names.md lists more)."""
    # "Radeon PRO" is AMD's workstation line; the chip's name follows it.
    lowered = re.sub(r"\bradeon[\s\-_]+pro\b", "radeon", name.lower())
    words = [w for w in re.split(r"[\s\-_]+", lowered) if w and w not in _VENDOR_WORDS]
    kept: list[str] = []
    for word in words:
        if _PACKAGING.match(word):
            break
        kept.append(re.sub(r"[^a-z0-9.]", "", word))
    return "".join(kept) or "unknown"


def _version(number: int) -> str:
    """CUDA's 13000 spelling as "13.0"."""
    return f"{number // 1000}.{(number % 1000) // 10}"


def _attribute(runtime, attribute: int, device_id: int) -> int | None:
    try:
        return int(runtime.deviceGetAttribute(attribute, device_id))
    except Exception:  # attributes retired by newer CUDA versions read as unknown
        return None


# cudaDeviceAttr numbers (stable across CUDA versions).
_CLOCK_RATE_KHZ = 13
_MEMORY_CLOCK_RATE_KHZ = 36
_MEMORY_BUS_WIDTH_BITS = 37


def query_device(device_id: int = 0) -> DeviceInfo:
    import cupy

    runtime = cupy.cuda.runtime
    props = runtime.getDeviceProperties(device_id)
    name = props["name"].decode() if isinstance(props["name"], bytes) else str(props["name"])
    clock = _attribute(runtime, _CLOCK_RATE_KHZ, device_id)
    memory_clock = _attribute(runtime, _MEMORY_CLOCK_RATE_KHZ, device_id)
    return DeviceInfo(
        model=model_slug(name),
        name=name,
        compute_capability=f"{props['major']}.{props['minor']}",
        sm_count=int(props["multiProcessorCount"]),
        memory_bytes=int(props["totalGlobalMem"]),
        clock_mhz=clock // 1000 if clock else None,
        memory_clock_mhz=memory_clock // 1000 if memory_clock else None,
        memory_bus_bits=_attribute(runtime, _MEMORY_BUS_WIDTH_BITS, device_id),
        driver_version=_version(runtime.driverGetVersion()),
        cuda_version=_version(runtime.runtimeGetVersion()),
    )


def arch_of(info: DeviceInfo) -> str:
    """NVRTC's architecture for a device: compute capability 9.0 gives "sm_90"."""
    return "sm_" + info.compute_capability.replace(".", "")
