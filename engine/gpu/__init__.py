"""The GPU half of the engine: compile (NVRTC, process pool, disk cache), run and time
(a killable child per GPU), the GPU measurer, baselines and apply-best.

`query_device` is named here for the web side's workers (engine.gpu.device); it loads
on first use, since it needs CuPy and a GPU."""
from __future__ import annotations

__all__ = ["query_device"]


def __getattr__(name: str):
    if name == "query_device":
        from .device import query_device

        return query_device
    raise AttributeError(f"module 'engine.gpu' has no attribute {name!r}")
