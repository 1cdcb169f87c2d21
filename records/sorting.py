"""`?sort=COLUMN` or `?sort=-COLUMN` (descending) on any table, checked against the table's
own columns, so the sort is a permalink and nothing else from the URL reaches `order_by`.

A table declares its columns once: name in the URL -> a database expression (for querysets,
sorted server side before paginating) or a function of a row (for tables built in Python).
Missing values sort last either way. A bad sort is answered with the page and its message
(400), also where CSV was asked for, never with an unsorted file.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

from django.db.models import F, QuerySet


@dataclass(frozen=True)
class Sorting:
    columns: Mapping[str, Any]  # name -> field path, expression, or callable(row)
    column: str | None
    descending: bool
    error: str | None = None
    name: str = "sort"  # the URL parameter: a page with two sortable tables gives each its own

    @property
    def param(self) -> str:
        """The value of `sort` that keeps this sort (for pager and CSV links)."""
        return "" if self.column is None else ("-" if self.descending else "") + self.column

    def toggled(self, column: str) -> str:
        """The `sort` value a column header links to: ascending first, then flipped."""
        return f"-{column}" if self.column == column and not self.descending else column

    def arrow(self, column: str) -> str:
        if self.column != column:
            return ""
        return "▼" if self.descending else "▲"

    def queryset(self, queryset: QuerySet, tiebreak: Iterable[str] = ("id",)) -> QuerySet:
        """`queryset` in this order (ties by `tiebreak`); unchanged when no column was asked for."""
        if self.column is None:
            return queryset
        key = self.columns[self.column]
        descending = self.descending
        expression = F(key) if isinstance(key, str) else key
        ordered = expression.desc(nulls_last=True) if descending else expression.asc(nulls_last=True)
        return queryset.order_by(ordered, *tiebreak)

    def rows(self, rows: Iterable[Any]) -> list[Any]:
        """Rows built in Python, in this order (stable: ties keep their order)."""
        rows = list(rows)
        if self.column is None:
            return rows
        key: Callable[[Any], Any] = self.columns[self.column]
        present = [row for row in rows if key(row) is not None]
        missing = [row for row in rows if key(row) is None]
        return sorted(present, key=key, reverse=self.descending) + missing


def sorting_from(query: Mapping[str, str], columns: Mapping[str, Any], name: str = "sort") -> Sorting:
    """The table's sort as the query's `name` asks for it; an unknown column is reported, not applied."""
    asked = (query.get(name) or "").strip()
    if not asked:
        return Sorting(columns, None, False, name=name)
    descending = asked.startswith("-")
    column = asked.lstrip("-")
    if column not in columns:
        known = ", ".join(columns)
        return Sorting(columns, None, False, error=f"Cannot sort by {column!r}; sort by one of: {known}.", name=name)
    return Sorting(columns, column, descending, name=name)
