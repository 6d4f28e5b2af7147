"""What only the Redis store has to show: every key expires with its class (so Redis cleans up
even with no replica running), two replicas share one class and change it without losing a
step, a Redis that is down gives a plain message, and the test server itself fails loudly
when redis-server is missing (CI installs it)."""

from __future__ import annotations

import threading
import time

import pytest

import redis_server
from class_stores import Clock, redis_url  # noqa: F401 (a fixture)
from teaching import class_store as cs
from teaching.class_store_redis import DEFAULT_PREFIX, RedisClassStore


def _store(url, clock=time.time, hours=None, prefix=None):
    return RedisClassStore(url, clock=clock, hours=hours,
                           prefix=prefix or f"test-{time.monotonic_ns()}:")


def _busy_class(store):
    new = store.start_class()
    members = [store.join(new.join_code, f"s{i}") for i in range(3)]
    store.set_view(new.teacher_key, "/heads")
    for member in members:
        store.answer(new.class_id, member.member_key, "q:1", "A")
        store.set_following(new.class_id, member.member_key, False)
    store.reveal(new.teacher_key, "q:2")
    return new


def test_every_key_lives_no_longer_than_its_class(redis_url):
    store = _store(redis_url, hours=2)
    _busy_class(store)
    keys = list(store.redis.scan_iter(match=f"{store.prefix}*"))
    assert len(keys) >= 10  # code, teacher, class, members, following, seen, questions, ...
    ttls = {key: store.redis.pttl(key) for key in keys}
    assert all(0 < ttl <= 2 * 3600 * 1000 for ttl in ttls.values()), ttls
    rate_keys = [key for key in keys if ":rate:" in key]
    assert rate_keys and all(ttls[key] <= 20_000 for key in rate_keys)


def test_redis_itself_deletes_a_class_when_its_time_is_up(redis_url):
    store = _store(redis_url, hours=0.6 / 3600)  # a class of 0.6 s, on the real clock
    new = _busy_class(store)
    assert store.class_by_code(new.join_code) == new.class_id
    deadline = time.monotonic() + 10
    while list(store.redis.scan_iter(match=f"{store.prefix}c:*")) and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(0.1)
    assert list(store.redis.scan_iter(match=f"{store.prefix}*")) == []  # codes, list: all
    assert store.class_by_code(new.join_code) is None


def test_two_replicas_share_one_class_and_lose_no_version(redis_url):
    prefix = f"test-{time.monotonic_ns()}:"
    one, two = _store(redis_url, prefix=prefix), _store(redis_url, prefix=prefix)
    new = one.start_class()
    member = two.join(new.join_code, "Ann")
    versions: list[int] = []

    def change(store, n):
        for i in range(n):
            versions.append(store.set_view(new.teacher_key, f"/heads?i={i}"))

    threads = [threading.Thread(target=change, args=(s, 40)) for s in (one, two, one, two)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(versions) == list(range(1, 161))  # every change got its own version
    assert two.view(new.class_id).version == 160
    assert one.answer(new.class_id, member.member_key, "q:1", "B")
    assert two.tally(new.teacher_key, "q:1", with_names=True).names == {"B": ["Ann"]}
    one.close()
    assert two.headcount(new.teacher_key).members == 1  # a replica gone changes nothing


def test_a_code_freed_by_expiry_is_not_taken_from_a_newer_class(redis_url):
    clock = Clock()
    store = _store(redis_url, clock=clock)
    old = store.start_class()
    clock.now += 4 * 3600
    # Another replica's new class happens to draw the old class's code (allowed: the old one's
    # time is up) before this replica deletes the old class.
    store.redis.set(store.key(f"code:{old.join_code}"), "the-newer-class")
    assert store.expire() == 1
    assert store.redis.get(store.key(f"code:{old.join_code}")) == "the-newer-class"
    assert store.redis.get(store.key(f"teacher:{old.teacher_key}")) is None


def test_the_prefix_comes_from_the_url_and_open_store_picks_redis(redis_url):
    store = RedisClassStore(f"{redis_url}?prefix=lab-a:")
    assert store.prefix == "lab-a:"
    new = store.start_class()
    keys = set(store.redis.scan_iter(match="lab-a:*"))
    assert keys == {"lab-a:live", f"lab-a:c:{new.class_id}", f"lab-a:code:{new.join_code}",
                    f"lab-a:teacher:{new.teacher_key}"}
    assert store.expire(now=time.time() + 5 * 3600) == 1
    assert isinstance(cs.open_store(redis_url), RedisClassStore)
    assert cs.open_store(redis_url).prefix == DEFAULT_PREFIX


def test_a_redis_that_is_down_gives_a_plain_message():
    store = _store(f"redis://127.0.0.1:{redis_server.free_port()}/0")
    with pytest.raises(cs.StoreDown, match="not answering"):
        store.join("ABCDEF")
    with pytest.raises(cs.StoreDown):
        store.expire()


def test_without_redis_server_the_tests_fail_and_say_how_to_install_it(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(redis_server, "REDIS_SERVER", str(tmp_path / "redis-server"))
    with pytest.raises(redis_server.RedisMissing, match="apt-get install -y redis-server"):
        with redis_server.running_redis():
            pass
    broken = tmp_path / "broken-redis"
    broken.write_text("#!/bin/sh\necho 'no such option' >&2\nexit 1\n")
    broken.chmod(0o755)
    with pytest.raises(redis_server.RedisMissing, match="stopped at start|did not answer"):
        with redis_server.running_redis(binary=str(broken), timeout=5):
            pass


def test_a_class_with_thousands_of_keys_is_deleted_whole(redis_url):
    clock = Clock()
    store = _store(redis_url, clock=clock)
    new = _busy_class(store)
    pipe = store.redis.pipeline(transaction=False)
    for i in range(9000):  # more keys than one script call can take at once
        pipe.set(store.key(f"c:{new.class_id}:rate:a:m{i}:1"), 1, ex=60)
    pipe.execute()
    assert store.expire(now=clock.now + 4 * 3600) == 1
    assert list(store.redis.scan_iter(match=f"{store.prefix}*")) == []
