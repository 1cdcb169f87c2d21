"""Tuners by name: `get_tuner("xgb", task, seed=1)`."""
from __future__ import annotations

from .base import Tuner
from .ga import GATuner
from .grid import GridSearchTuner
from .random import RandomTuner
from .samplers import CMAESTuner, TPETuner
from .xgb import XGBTuner

TUNERS: dict[str, type[Tuner]] = {cls.name: cls for cls in (RandomTuner, GridSearchTuner, GATuner, XGBTuner, TPETuner, CMAESTuner)}


# Chosen by benchmarks/tuners.py (docs/benchmarks/tuners.md), not by habit.
DEFAULT_TUNER = "xgb"


class UnknownTuner(ValueError):
    pass


def tuner_class(name: str) -> type[Tuner]:
    """The tuner class registered under `name`; UnknownTuner lists the valid names."""
    try:
        return TUNERS[name]
    except KeyError:
        raise UnknownTuner(f"unknown tuner {name!r}; valid tuners: {', '.join(sorted(TUNERS))}") from None


def get_tuner(name: str, task, **options) -> Tuner:
    """A tuner of `task` by registry name; options go to its constructor (seed, plan_size, ...)."""
    return tuner_class(name)(task, **options)


__all__ = ["DEFAULT_TUNER", "TUNERS", "Tuner", "UnknownTuner", "get_tuner", "tuner_class", "CMAESTuner", "GATuner", "GridSearchTuner", "RandomTuner", "TPETuner", "XGBTuner"]
