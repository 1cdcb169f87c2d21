"""Django's cache on the Redis the broker uses, failing open, and `cached()`, the one way the
pages use it.

The cache only spares work: whatever it holds is keyed by a version read from the database
(a workload's records, a run's records), so an entry is never served once what it was made
from has changed. A Redis that is down, slow or full must not make a page fail or wait: an
error is a miss, and Redis is then left alone for RETRY_SECONDS (each request would otherwise
pay the connect timeout).
"""
from __future__ import annotations

import logging
import time
from functools import lru_cache
from typing import Any, Callable

from django.core.cache import cache
from django.core.cache.backends.base import DEFAULT_TIMEOUT
from django.core.cache.backends.redis import RedisCache
from django.db import connection
from redis.exceptions import RedisError

log = logging.getLogger(__name__)
RETRY_SECONDS = 5.0
ENTRY_SECONDS = 3600  # bounds what an entry of a database restored under it could show
_MISSING = object()


class FailOpenRedisCache(RedisCache):
    """RedisCache whose reads miss and whose writes are dropped while Redis is unreachable."""

    # Django gives each thread a cache object of its own; what one found out, all threads skip.
    _down_until: dict[str, float] = {}

    def _guarded(self, fallback, call: Callable[[], Any]):
        where = str(self._servers)
        if time.monotonic() < self._down_until.get(where, 0.0):
            return fallback
        try:
            return call()
        except (RedisError, OSError) as exc:
            self._down_until[where] = time.monotonic() + RETRY_SECONDS
            log.warning("cache unavailable for %.0f s, serving without it: %s", RETRY_SECONDS, exc)
            return fallback

    def get(self, key, default=None, version=None):
        return self._guarded(default, lambda: super(FailOpenRedisCache, self).get(key, default, version))

    def set(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        self._guarded(None, lambda: super(FailOpenRedisCache, self).set(key, value, timeout, version))

    def add(self, key, value, timeout=DEFAULT_TIMEOUT, version=None):
        return self._guarded(True, lambda: super(FailOpenRedisCache, self).add(key, value, timeout, version))

    def incr(self, key, delta=1, version=None):
        return self._guarded(0, lambda: super(FailOpenRedisCache, self).incr(key, delta, version))

    def delete(self, key, version=None):
        return self._guarded(False, lambda: super(FailOpenRedisCache, self).delete(key, version))


@lru_cache(maxsize=1)
def database_incarnation() -> str:
    """When this database was first migrated: a database made again (a test run, the load
    benchmark) has ids that restart, and must not meet the entries of its predecessor."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT MIN(applied) FROM django_migrations")
        (applied,) = cursor.fetchone()
    return applied.isoformat() if hasattr(applied, "isoformat") else str(applied)


def cached(key: str, compute: Callable[[], Any], keep: Callable[[Any], bool] = lambda value: True,
           seconds: int = ENTRY_SECONDS) -> Any:
    """`compute()`, or what it returned before under `key`; `key` must name a version of
    everything the value is made from. A value `keep` refuses is returned but not stored;
    `seconds` is for values whose version will not last (Redis need not hold them an hour)."""
    key = f"{database_incarnation()}:{key}"
    value = cache.get(key, _MISSING)
    if value is _MISSING:
        value = compute()
        if keep(value):
            cache.set(key, value, min(seconds, ENTRY_SECONDS))
    return value
