"""How numbers read on every page and in every CSV: times in µs, GFLOPS and GB/s to one decimal."""
from __future__ import annotations

from django import template

register = template.Library()

EMPTY = "—"


@register.filter
def usec(seconds: float | None) -> str:
    """Seconds shown as microseconds, two decimals; — for no time (None, or a missing value)."""
    if not isinstance(seconds, (int, float)):
        return EMPTY
    return f"{seconds * 1e6:.2f}"


@register.filter
def gflops(value: float | None) -> str:
    if value is None:
        return EMPTY
    return f"{value:.1f}"


@register.filter
def bandwidth(seconds: float | None, bytes_moved: int | None) -> str:
    """GB/s of a run that moved `bytes_moved` bytes in `seconds`, one decimal."""
    if not seconds or not bytes_moved:
        return EMPTY
    return f"{bytes_moved / seconds / 1e9:.1f}"


@register.filter
def interval(spread) -> str:
    """A spread's min–max in µs, e.g. `12.30–12.91`; a single value reads as itself."""
    if spread is None:
        return EMPTY
    if spread.min == spread.max:
        return usec(spread.min)
    return f"{usec(spread.min)}–{usec(spread.max)}"


@register.filter
def ratio_interval(value) -> str:
    """A Ratio's interval, e.g. `1.31–1.47×`."""
    if value is None:
        return EMPTY
    return f"{value.low:.2f}–{value.high:.2f}×"


@register.filter
def ratio(value: float | None) -> str:
    """A speedup or time ratio, e.g. `1.84×`."""
    if not isinstance(value, (int, float)):
        return EMPTY
    return f"{value:.2f}×"


@register.filter
def knob(value) -> str:
    """A knob value as the log writes it: `[-1, 2, 8, 1]`, `1500`; missing is —."""
    if value is None:
        return EMPTY
    if isinstance(value, list):
        return "[" + ", ".join(str(v) for v in value) + "]"
    return str(value)


@register.filter
def percent(value: float | None) -> str:
    """A share such as "% of peak", one decimal; — where there is none."""
    if not isinstance(value, (int, float)):
        return EMPTY
    return f"{value:.1f}"
