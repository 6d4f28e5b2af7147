"""The link of a view: the sidebar's model and texts (read once per browser session, written
after each run) and a page's own settings (ui/view_state.py reads and writes those, by the keys
the pages declare in teaching/pages.py); the page is the URL path.

A text up to MAX_URL_TEXT characters goes in the link as it is (`text=`, readable). A longer
one goes compressed (`textz=`: zlib, then base64url), as long as the compressed texts fit
MAX_URL_PACKED characters; beyond that the link does not carry the text and the sidebar says
so. A `textz=` from a link is decoded strictly: only base64url characters, a bounded length,
and decompression stops at the size a text may have, so a crafted link (bad base64, a zip
bomb, megabytes of junk) is refused without using memory or breaking the page.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib

import streamlit as st

from server import settings
from server.settings import MAX_URL_PACKED, MAX_URL_TEXT

URL_KEYS = {"model": "sb_model", "text": "sb_text", "pair": "sb_pair"}  # the sidebar's
PACKED = {"textz": "text", "pairz": "pair"}  # compressed param -> its plain param
BASE64URL = re.compile(r"[A-Za-z0-9_-]+")
UTF8_MAX_BYTES = 4  # per character


def pack_text(text: str) -> str:
    """The text compressed for a link: zlib (level 9), then base64url without padding."""
    return base64.urlsafe_b64encode(zlib.compress(text.encode("utf-8"), 9)).rstrip(b"=").decode()


def unpack_text(value, max_chars: int) -> str | None:
    """The text of a `textz=` value, or None when it is not one we could have written.
    Bounded before any work: the value's length, its alphabet, and the decompressed size
    (at most max_chars characters of UTF-8) so a zip bomb stops after that many bytes."""
    if not isinstance(value, str) or not 0 < len(value) <= MAX_URL_PACKED:
        return None
    if not BASE64URL.fullmatch(value) or len(value) % 4 == 1:  # 1 left over: not base64
        return None
    try:
        data = base64.urlsafe_b64decode(value + "=" * (-len(value) % 4))
    except (binascii.Error, ValueError):
        return None
    limit = max_chars * UTF8_MAX_BYTES
    inflate = zlib.decompressobj()
    try:
        raw = inflate.decompress(data, limit + 1)  # never more than limit + 1 bytes
    except zlib.error:
        return None
    if len(raw) > limit or not inflate.eof or inflate.unused_data:
        return None  # too big, cut short, or junk after the end
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return None


URL_INT_DIGITS = 6  # no layer, head or step of any model here needs more


def url_int(value) -> int | None:
    """A small non-negative integer from a link, or None. Strict on purpose: `str.isdigit()`
    accepts "²" and other Unicode digits that int() refuses, and int() of 5,000 digits
    raises; a link anyone can send must never break a page."""
    text = str(value).strip()
    if not 0 < len(text) <= URL_INT_DIGITS or not text.isascii() or not text.isdecimal():
        return None
    return int(text)


def load_from_url() -> None:
    """Seed session state from the query string, the first time this session runs."""
    if st.session_state.get("_url_loaded"):
        return
    st.session_state["_url_loaded"] = True
    params = st.query_params
    for packed, plain in PACKED.items():  # a compressed text wins over a plain one
        if packed in params:
            text = unpack_text(params[packed], settings.max_chars())
            if text is None:
                st.session_state["_url_unreadable"] = True
            else:
                st.session_state.setdefault(f"_url_{URL_KEYS[plain]}", text)
    for param, key in URL_KEYS.items():
        if param in params:
            st.session_state.setdefault(f"_url_{key}", params[param])


def link_was_unreadable() -> bool:
    """True once if the link held a compressed text that could not be read."""
    return st.session_state.pop("_url_unreadable", False)


def url_default(key: str, default):
    """The value the URL asked for (once), else the default."""
    return st.session_state.pop(f"_url_{key}", default)


def url_param(name: str) -> str | None:
    """A raw value from the link (a page's own key), or None. On the lessons page the link
    belongs to the lesson (its `step` is not the walkthrough's), so pages read nothing."""
    if st.session_state.get("_url_frozen"):
        return None
    return st.query_params.get(name)


def write_to_url(**values) -> list[str]:
    """Set these keys in the link and keep the others; None or "" removes a key. The sidebar
    writes model, text and pair once per run; a page writes only its own keys (layer, head,
    step...). A long text or pair goes compressed; the names of those that do not fit even
    so are returned (the link then opens with the default text)."""
    if st.session_state.get("_url_frozen"):  # the lessons page: the link is the lesson's
        return []
    params = dict(st.query_params)
    left_out = []
    room = MAX_URL_PACKED  # shared by the compressed text and pair
    for name, value in values.items():
        value = "" if value is None else str(value)
        packed_name = next((p for p, plain in PACKED.items() if plain == name), None)
        if packed_name is not None:
            params.pop(packed_name, None)
        if not value:
            params.pop(name, None)
        elif packed_name is None or len(value) <= MAX_URL_TEXT:
            params[name] = value
        else:
            params.pop(name, None)
            packed = pack_text(value)
            if len(packed) <= room:
                params[packed_name] = packed
                room -= len(packed)
            else:
                left_out.append(name)
    if dict(st.query_params) != params:
        st.query_params.from_dict(params)
    return left_out
