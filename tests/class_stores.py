"""Fixtures for the class store tests: one clock the test moves, and the same store API on
each backend (SQLite in a real temp file; Redis on a real redis-server the run starts).

    from class_stores import Clock, clock, redis_url, store  # noqa: F401  (pytest fixtures)
"""

from __future__ import annotations

import secrets

import pytest

from redis_server import running_redis

BACKENDS = ("sqlite", "redis")
START = 1_800_000_000.0  # a whole number of rate windows, so a test knows where one begins


class Clock:
    """A clock a test moves by hand: `clock.now += 31`."""

    def __init__(self, now: float = START):
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture(scope="session")
def redis_url():
    """One real redis-server for the session. If it is missing the tests fail saying so."""
    with running_redis() as url:
        yield url


def make_backend(kind: str, tmp_path, clock, request, hours: float | None = None):
    if kind == "sqlite":
        from teaching.class_store_sqlite import SqliteClassStore

        return SqliteClassStore(tmp_path / "classes.sqlite", clock=clock, hours=hours)
    from teaching.class_store_redis import RedisClassStore

    url = request.getfixturevalue("redis_url")
    prefix = f"test-{secrets.token_hex(4)}:"  # each test sees only its own keys
    return RedisClassStore(url, clock=clock, hours=hours, prefix=prefix)


@pytest.fixture(params=BACKENDS)
def store(request, tmp_path, clock):
    made = make_backend(request.param, tmp_path, clock, request)
    yield made
    made.close()


def leftovers(store) -> list[str]:
    """Everything the store still holds about any class (the global count of wrong codes
    aside): table rows for SQLite, keys for Redis. Empty once every class has expired."""
    if type(store).__name__ == "SqliteClassStore":
        db = store._db()
        found = []
        for table in ("classes", "members", "questions", "answers", "rejoin"):
            found += [f"{table}: {row}" for row in db.execute(f"SELECT * FROM {table}")]
        found += [f"rates: {row}" for row in
                  db.execute("SELECT * FROM rates WHERE class_id IS NOT NULL")]
        return found
    return sorted(key for key in store.redis.scan_iter(match=f"{store.prefix}*")
                  if not key.startswith(f"{store.prefix}failed"))
