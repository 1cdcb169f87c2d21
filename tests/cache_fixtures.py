"""Every test its own cache keys: a test's database is rolled back or made again, so the
next test's ids may be the same and must not meet what this one cached."""
import uuid

import pytest


@pytest.fixture(autouse=True)
def _own_cache_keys(settings):
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": f"test-{uuid.uuid4().hex}"}}
