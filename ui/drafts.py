"""Teach drafts, kept on the server per browser so that a reload (or a second tab) finds the
draft where it was. Bounded: at most MAX_DRAFTS browsers (the least recently used draft goes
first) and, per draft, what fits one lesson file (teaching/format.py's MAX_LESSON_BYTES)."""

from __future__ import annotations

import json
import threading
from collections import OrderedDict

MAX_DRAFTS = 100  # browsers with a draft on this server; at most ~20 MB in all
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
    """Does `step` still fit the draft, as the words of one lesson file?"""
    from teaching.format import MAX_LESSON_BYTES  # here: it loads the engine (torch)

    size = len(json.dumps(draft, ensure_ascii=False, default=str)) + \
        len(json.dumps(step, ensure_ascii=False, default=str))
    return size <= MAX_LESSON_BYTES


def forget_all() -> None:
    """Every draft gone (for tests)."""
    with _LOCK:
        _DRAFTS.clear()
