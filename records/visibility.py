"""Who may read which records: those of a private tuning job only its owner and staff, on
every page, API answer and download. The one rule; record queries take a `viewer` and ask
here. A viewer is a user (AnonymousUser for nobody logged in) or ALL_RECORDS, for the
command line and the workers, which see everything."""
from __future__ import annotations

from django.contrib.auth.models import AnonymousUser
from django.db.models import Q


class _AllRecords:
    """A viewer that sees every record: the command line and the workers."""

    is_staff = True
    is_authenticated = True
    pk = None


ALL_RECORDS = _AllRecords()
PUBLIC = AnonymousUser()


def batches_q(viewer, prefix: str = "") -> Q:
    """The import batches `viewer` may read (`prefix` leads from another model to a batch)."""
    if viewer.is_staff:
        return Q()
    readable = Q(**{f"{prefix}private_to__isnull": True})
    if viewer.is_authenticated:
        readable |= Q(**{f"{prefix}private_to": viewer.pk})
    return readable


def records_q(viewer, prefix: str = "") -> Q:
    """The records `viewer` may read (`prefix` leads from another model to a record, e.g.
    "records__" from a workload). A record without a batch is public."""
    return batches_q(viewer, f"{prefix}batch__")
