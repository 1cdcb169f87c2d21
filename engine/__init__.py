"""The tuning engine (no Django). `engine.create_task(name, args)` is the entry point;
it is imported on first use so that `import engine.logfile` stays light."""
from __future__ import annotations

__all__ = ["Task", "create_task"]


def __getattr__(name: str):
    if name in __all__:
        from . import task

        return getattr(task, name)
    raise AttributeError(f"module 'engine' has no attribute {name!r}")
from .tune import TuneResult, tune  # noqa: E402  (the tuning loop; light: no templates, no xgboost)
