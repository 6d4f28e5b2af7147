"""Long texts in a link (ui/urlstate.py): compressed under `textz=` and read back exactly;
a crafted value (bad base64, a zip bomb, megabytes, junk) is refused without using memory."""

from __future__ import annotations

import base64
import tracemalloc
import zlib

import pytest

from server.settings import MAX_URL_PACKED
from ui.urlstate import pack_text, unpack_text

LOCAL, HOSTED = 200_000, 5_000


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


@pytest.mark.parametrize("text", [
    "The cat sat on the mat. " * 200,  # 4,800 characters of English
    "Ünïcödé — 猫が座った 🙂 " * 150,  # multi-byte UTF-8, emoji
    "line one\nline two\ttabbed\r\n" * 100,
    "x",
])
def test_a_text_round_trips_exactly(text):
    packed = pack_text(text)
    assert set(packed) <= set("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    assert unpack_text(packed, LOCAL) == text


def test_a_long_english_text_fits_the_link_compressed():
    from ui.examples import LONG

    text = (LONG + " ") * 2
    assert len(text) > 1_500 and len(pack_text(text)) <= MAX_URL_PACKED


@pytest.mark.parametrize("value", [
    "", "!!!!", "abc$def", "a b", "A", "AAAAA",  # not base64url, or impossible lengths
    "not-zlib-data-at-all",  # base64 that is not zlib
    _b64(zlib.compress(b"hello")[:-3]),  # cut short
    _b64(zlib.compress(b"hello") + b"junk after the end"),
    _b64(zlib.compress(b"\xff\xfe\xfa invalid utf-8")),
    "A" * (MAX_URL_PACKED + 1),  # too long to even look at
    "A" * 5_000_000,
    None, 12, ["abc"],
])
def test_a_hostile_value_is_refused(value):
    assert unpack_text(value, LOCAL) is None


def test_a_zip_bomb_stops_at_the_size_a_text_may_have():
    bomb = _b64(zlib.compress(b"a" * 4_000_000, 9))  # 4 MB from a few kilobytes
    assert len(bomb) <= MAX_URL_PACKED  # it passes the length check: decompression must stop
    tracemalloc.start()
    try:
        assert unpack_text(bomb, LOCAL) is None  # 4 MB > 200,000 characters of UTF-8
        assert unpack_text(bomb, HOSTED) is None
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 * LOCAL + 2**20  # bounded by the limit, never the 4 MB


def test_the_limit_counts_utf8_bytes_of_the_servers_text_limit():
    text = "a" * (HOSTED * 4)
    assert unpack_text(pack_text(text), HOSTED) == text  # the sidebar then cuts it, and says so
    assert unpack_text(pack_text(text + "a"), HOSTED) is None
