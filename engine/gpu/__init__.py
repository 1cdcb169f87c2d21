"""The GPU half of the engine: compile (NVRTC, process pool, disk cache), run and time
(a killable child per GPU), the GPU measurer, baselines and apply-best.

`query_device` (engine.gpu.device) and `FreshProcessStopwatch` (engine.gpu.confirming)
are named here for the web side's workers; they load on first use, since they need CuPy
and a GPU."""
from __future__ import annotations

from importlib import import_module

_EXPORTS = {"query_device": "engine.gpu.device", "FreshProcessStopwatch": "engine.gpu.confirming"}
__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        return getattr(import_module(_EXPORTS[name]), name)
    raise AttributeError(f"module 'engine.gpu' has no attribute {name!r}")
