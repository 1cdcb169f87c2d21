"""Measurers by name. Imports are lazy: the GPU measurer needs CuPy and a GPU,
and naming it must not be needed to replay a recording on a laptop."""
from __future__ import annotations

from importlib import import_module

from .measure import Measurer

MEASURERS: dict[str, str] = {
    "replay": "engine.replay:ReplayMeasurer",
    "gpu": "engine.gpu.measurer:GpuMeasurer",
}


class UnknownMeasurer(ValueError):
    pass


class MeasurerUnavailable(RuntimeError):
    """A known measurer that cannot load here (its module or a library it needs is missing)."""


def get_measurer_class(name: str) -> type[Measurer]:
    try:
        path = MEASURERS[name]
    except KeyError:
        raise UnknownMeasurer(f"unknown measurer {name!r}; valid measurers: {', '.join(sorted(MEASURERS))}") from None
    module_name, class_name = path.split(":")
    try:
        module = import_module(module_name)
    except ImportError as exc:
        raise MeasurerUnavailable(f"the {name} measurer cannot load here: {exc}") from None
    return getattr(module, class_name)


def make_measurer(name: str, **options) -> Measurer:
    """A measurer by registry name; options go to its constructor."""
    return get_measurer_class(name)(**options)
