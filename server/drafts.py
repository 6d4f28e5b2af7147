"""Teach drafts, kept on the server per browser so that a reload (or a second tab) finds the
draft where it was. Bounded: at most MAX_DRAFTS browsers (the least recently used draft goes
first) and, per draft, MAX_DRAFT_BYTES of words (below a lesson file's own limit, so that a
hundred drafts hold at most ~20 MB of the server's memory)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

MAX_DRAFTS = 100  # browsers with a draft on this server; at most ~20 MB in all
MAX_DRAFT_BYTES = 200_000  # one draft's words, as JSON (a lesson file may hold more)
_LOCK = threading.Lock()
_DRAFTS: OrderedDict[str, dict] = OrderedDict()


def empty() -> dict:
    return {"title": "", "summary": "", "steps": []}


def draft_for(browser: str) -> dict:
    """This browser's draft (a new empty one the first time), marked as just used. The dict
    is the stored one: the Teach page edits it in place."""
    with _LOCK:
        draft = _DRAFTS.pop(browser, None) or empty()
        _DRAFTS[browser] = draft
        while len(_DRAFTS) > MAX_DRAFTS:
            _DRAFTS.popitem(last=False)
        return draft


def room_for(draft: dict, step: dict) -> bool:
    """Does `step` still fit the draft (MAX_DRAFT_BYTES, which also fits one lesson file)?"""
    size = len(json.dumps(draft, ensure_ascii=False, default=str)) + \
        len(json.dumps(step, ensure_ascii=False, default=str))
    return size <= MAX_DRAFT_BYTES


def forget_all() -> None:
    """Every draft gone (for tests)."""
    with _LOCK:
        _DRAFTS.clear()
