"""Rows the tests of one module share, made once (Django's setUpTestData, for pytest): a
module-scoped fixture makes them inside a transaction, each test runs in a savepoint of it (so
what a test changes is undone after it), and the transaction is rolled back when the module's
tests are done. Only for `django_db` tests without `transaction=True`."""
from contextlib import contextmanager

from django.db import transaction


@contextmanager
def rows_for_the_module(django_db_blocker):
    with django_db_blocker.unblock(), transaction.atomic():
        yield
        transaction.set_rollback(True)
