"""Table furniture shared by every page: sortable column headers and how moments in time read."""
from __future__ import annotations

from datetime import datetime, timezone

from django import template
from django.utils.html import format_html
from django.utils.timesince import timesince

register = template.Library()


@register.simple_tag(takes_context=True)
def sort_header(context, sorting, column: str, label: str, css: str = ""):
    """A `<th>` whose link sorts the table by `column` (then flips it), keeping the other
    query parameters but the page number."""
    query = context["request"].GET.copy()
    query.pop("page", None)
    query[sorting.name] = sorting.toggled(column)
    arrow = sorting.arrow(column)
    return format_html(
        '<th{}><a class="sort" href="?{}" data-sort="{}">{}</a>{}</th>',
        format_html(' class="{}"', css) if css else "", query.urlencode(), column, label,
        format_html(' <span class="arrow">{}</span>', arrow) if arrow else "",
    )


@register.filter
def when(moment):
    """An ISO timestamp (UTC, to the minute) with how long ago as a hint: a datetime or unix seconds."""
    if moment in (None, ""):
        return "—"
    if isinstance(moment, (int, float)):
        moment = datetime.fromtimestamp(moment, tz=timezone.utc)
    moment = moment.astimezone(timezone.utc)
    return format_html(
        '<time datetime="{}" title="{}">{}</time> <span class="muted ago">({} ago)</span>',
        moment.isoformat(), moment.isoformat(), moment.strftime("%Y-%m-%d %H:%M UTC"),
        timesince(moment).split(",")[0],
    )
