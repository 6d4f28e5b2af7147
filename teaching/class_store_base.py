"""The live class's store, shared part: what a class holds, the errors, the bounds, the base
class both backends implement. Import it all from teaching.class_store (which adds
`open_store()` and says what a class is); the backends import this module so that no import
goes in a circle.

Every bound below is enforced by the store itself, so no page can forget one. Rate limits count
in fixed windows of `RATE_WINDOW` seconds. Times come from the store's `clock` (time.time by
default) so tests can move time without sleeping.
"""

from __future__ import annotations

import abc
import logging
import os
import re
import time
from dataclasses import dataclass
from typing import Callable

from teaching.class_codes import MAX_NAME_CHARS, clean_name  # noqa: F401 (a bound too)

MAX_MEMBERS = 300  # members per class
MAX_CHOICE_CHARS = 100  # one answer's text ("row,col" or an option label)
MAX_QUESTION_CHARS = 200  # a question id ("<lesson id>:<step>", "cell:<page>:<n>")
MAX_QUESTIONS = 200  # distinct questions answered or revealed per class
MAX_ANSWERS = 15_000  # answers kept per class: 300 members x 50 questions, or 75 x 200
MAX_LINK_BYTES = 8_192  # the teacher's view as a link
MAX_LIVE_CLASSES = 500  # classes not yet expired, per store
RATE_WINDOW = 10.0  # seconds; the rate limits below count per window
ANSWERS_PER_WINDOW = 10  # per member
JOINS_PER_WINDOW = 30  # per class
JOINS_PER_CLIENT = 10  # per class and client: no one client takes a class's whole budget
FAILED_CODES_PER_WINDOW = 50  # unknown codes tried, per client (never all clients together)
PRESENT_SECONDS = 30.0  # a member not seen for this long is not counted as present
# A class's places count its members present (seen in the last PRESENT_SECONDS); a member who
# leaves is gone. The rows it keeps are bounded too: past this many, a join makes room by
# dropping the member absent longest (never one present).
MAX_MEMBER_ROWS = 2 * MAX_MEMBERS
# The teacher's role comes back by itself (a reload, a replica that died) only to the browser
# whose teacher tab was last seen this recently; after that only the teacher link leads.
TEACHER_AWAY_SECONDS = 120.0
DEFAULT_CLASS_HOURS = 4.0
_TOKEN = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ClassError(ValueError):
    """A class problem with a plain-English message that a page can show as it is."""


class ClassNotFound(ClassError):
    """No live class for this code or id (never existed, ended or expired)."""


class ClassFull(ClassError):
    """The class already has MAX_MEMBERS members."""


class NotTeacher(ClassError):
    """The key given is not the teacher key of a live class."""


class Refused(ClassError):
    """Too many tries (rate limit), too many classes, or input that cannot be kept."""


class StoreDown(ClassError):
    """The store cannot be reached just now (Redis down, restarting or paused; the SQLite file
    locked for too long, or missing). An interruption, never the class's end: the class is
    still there when the store answers again. Only ClassNotFound (a class ended or expired)
    and NotTeacher say a class is gone."""


@dataclass(frozen=True)
class NewClass:
    class_id: str
    join_code: str  # stored form, 6 characters; show it with class_codes.format_code
    teacher_key: str


@dataclass(frozen=True)
class Member:
    member_key: str
    name: str
    class_id: str = ""


@dataclass(frozen=True)
class ClassView:
    version: int
    link: str
    revealed: frozenset[str]
    ended: bool


@dataclass(frozen=True)
class Headcount:
    members: int
    following: int
    looking_around: int


@dataclass(frozen=True)
class Tally:
    question: str
    counts: dict[str, int]
    answered: int
    names: dict[str, list[str]] | None  # None unless the teacher asked for names


GUESSING = "Too many wrong codes were tried just now. Please wait a few seconds and try again."
UNKNOWN_CODE = "No live class has that code. Check it with your teacher."
NOT_TEACHER = "This is not the teacher link of a live class (it may have ended or expired)."
FULL = f"This class is full: it already has {MAX_MEMBERS} members."
JOIN_RUSH = "Many people are joining this class right now. Please try again in a few seconds."
LEFT = "You have left the class."
TOO_MANY_CLASSES = (f"The server already has {MAX_LIVE_CLASSES} live classes, its limit. "
                    "Please end a class you no longer use, or try again later.")
LINK_TOO_LONG = (f"This view is too long to share with the class (over {MAX_LINK_BYTES:,} "
                 "bytes). Try a shorter text.")
TOO_MANY_QUESTIONS = f"This class already has {MAX_QUESTIONS} questions, its limit."
BAD_QUESTION = f"A question id must be text of 1 to {MAX_QUESTION_CHARS} characters."
STORE_DOWN = "The class server is not answering just now. Please try again in a moment."
STORE_MISSING = ("The class server cannot find its records just now. Please try again in a "
                 "moment.")
GONE = "This class is over: it is no longer on the server."
NOT_A_MEMBER = "You are not in this class any more. Please join again with the code."


def class_hours() -> float:
    """ATTENTION_LAB_CLASS_HOURS, checked: a positive number of hours (default 4)."""
    raw = os.environ.get("ATTENTION_LAB_CLASS_HOURS", "").strip()
    if not raw:
        return DEFAULT_CLASS_HOURS
    try:
        hours = float(raw)
    except ValueError:
        hours = -1.0
    if not 0 < hours <= 24 * 30:
        raise ValueError(f"ATTENTION_LAB_CLASS_HOURS must be a number of hours between 0 and 720 "
                         f"(it is {raw!r}).")
    return hours


def member_name(raw: object) -> str:
    """A display name, cleaned (class_codes.clean_name); Refused when it cannot be a name."""
    try:
        return clean_name(raw)
    except ValueError as exc:
        raise Refused(str(exc)) from None


def check_link(link: object) -> str:
    if not isinstance(link, str) or len(link.encode("utf-8", "surrogatepass")) > MAX_LINK_BYTES:
        raise Refused(LINK_TOO_LONG)
    return link


def is_token(value: object) -> bool:
    """A class id or member key as the store makes them (URL-safe base64, short). Anything
    else is unknown at once, before it reaches a query or a Redis key."""
    return isinstance(value, str) and _TOKEN.fullmatch(value) is not None


def answer_fits(question: object, choice: object) -> bool:
    """A question id and a choice the store will keep (bounded text)."""
    return (isinstance(question, str) and 0 < len(question) <= MAX_QUESTION_CHARS
            and isinstance(choice, str) and 0 < len(choice) <= MAX_CHOICE_CHARS)


def make_tally(question: str, rows, with_names: bool) -> Tally:
    """(choice, name) pairs, one per member who answered -> a Tally."""
    counts: dict[str, int] = {}
    names: dict[str, list[str]] = {}
    for choice, name in rows:
        counts[choice] = counts.get(choice, 0) + 1
        names.setdefault(choice, []).append(name)
    return Tally(question=question, counts=counts, answered=sum(counts.values()),
                 names={c: sorted(n) for c, n in names.items()} if with_names else None)


def client_bucket(client: object) -> str:
    """How the store names a client (the address a join comes from) in its rate limits: a
    short hash, so any text an operator's proxy passes on makes a bounded key."""
    import hashlib

    text = client if isinstance(client, str) else ""
    return hashlib.sha256(("attention-lab-client:" + text[:200]).encode()).hexdigest()[:24]


def window(now: float) -> int:
    """The rate-limit window a moment falls in."""
    return int(now // RATE_WINDOW)


class ClassStore(abc.ABC):
    """The live class store. Both backends implement every method; all are safe across
    threads and processes. What a class is: teaching/class_store.py."""

    def __init__(self, clock: Callable[[], float] = time.time, hours: float | None = None):
        self.clock = clock
        self.lifetime = (class_hours() if hours is None else float(hours)) * 3600.0

    @abc.abstractmethod
    def start_class(self) -> NewClass:
        """A new class: raises Refused when MAX_LIVE_CLASSES are live."""

    @abc.abstractmethod
    def class_by_code(self, code: str, client: str = "") -> str | None:
        """The class id for a join code (any case, dash optional); None when unknown, ended or
        expired, and also None while this client has tried too many wrong codes."""

    @abc.abstractmethod
    def teacher_class(self, teacher_key: str) -> str | None:
        """The class id for a teacher key; None when unknown, ended or expired."""

    @abc.abstractmethod
    def join_code(self, teacher_key: str) -> str | None:
        """The class's join code (stored form) for its teacher link, so a teacher who opens
        the link on another machine can show it; None when the key is unknown or expired."""

    @abc.abstractmethod
    def join(self, code: str, name: str = "", client: str = "") -> Member:
        """Join by code from `client` (the address it comes from, "" when unknown: one
        client): ClassNotFound, ClassFull (MAX_MEMBERS present), Refused (this client's
        wrong codes, the class's or this client's join rate, a bad name). An empty name
        becomes "Student <n>" (n: the order of joining)."""

    @abc.abstractmethod
    def leave(self, class_id: str, member_key: str) -> None:
        """The member leaves: gone from the class with its answers, its place free at once.
        Unknown members and classes are fine (nothing to do)."""

    @abc.abstractmethod
    def set_view(self, teacher_key: str, link: str) -> int:
        """Show `link` to the class; returns the new version. NotTeacher; Refused (too long)."""

    @abc.abstractmethod
    def view(self, class_id: str) -> ClassView:
        """The teacher's current view; ClassNotFound once the class has expired. An ended
        class still answers, with ended=True."""

    @abc.abstractmethod
    def set_following(self, class_id: str, member_key: str, following: bool) -> None:
        """Following the teacher or looking around; ClassNotFound for an unknown member."""

    @abc.abstractmethod
    def seen(self, class_id: str, member_key: str) -> None:
        """Heartbeat; ClassNotFound for an unknown member."""

    @abc.abstractmethod
    def headcount(self, teacher_key: str) -> Headcount:
        """Members seen in the last PRESENT_SECONDS (an ended class still answers until it
        expires); NotTeacher for an unknown or expired key."""

    @abc.abstractmethod
    def answer(self, class_id: str, member_key: str, question: str, choice: str) -> bool:
        """Keep one answer per member per question (a new one replaces the old). False when
        rate-limited, revealed, too long, too many questions or answers in the class, ended,
        or not a member."""

    @abc.abstractmethod
    def tally(self, teacher_key: str, question: str, with_names: bool = False) -> Tally:
        """Answers counted per choice (names sorted per choice when asked); an ended class
        still answers until it expires. NotTeacher for an unknown or expired key."""

    @abc.abstractmethod
    def reveal(self, teacher_key: str, question: str) -> None:
        """Show the answer to everyone; later answers to it are refused. NotTeacher, Refused."""

    @abc.abstractmethod
    def end_class(self, teacher_key: str) -> None:
        """End the class: no more joins, view changes, answers or reveals; view() shows
        ended=True and tally/headcount still answer until it expires. Ending twice is fine;
        NotTeacher for an unknown key."""

    @abc.abstractmethod
    def expire(self, now: float | None = None) -> int:
        """Delete every class whose time is up (all its data); returns how many."""

    def close(self) -> None:
        """Let go of connections (a store can be opened again later)."""

    # -- outages: said once in the server's log when they begin and when they end ----------
    _down = False

    def _lost(self, message: str, cause: object) -> StoreDown:
        """The StoreDown to raise for `cause`; the server's log says so at an outage's start."""
        if not self._down:
            self._down = True
            logging.getLogger("attention_lab.class_store").warning(
                "The live class store cannot be reached (%s); classes go on when it is back.",
                cause)
        return StoreDown(message)

    def _back(self) -> None:
        if self._down:
            self._down = False
            logging.getLogger("attention_lab.class_store").warning(
                "The live class store answers again.")


# -- rejoin: a browser that comes back (a new session, maybe on another replica) ------------
MAX_REMEMBERED = MAX_MEMBERS + 20  # browsers remembered per class: its members, its teacher's


@dataclass(frozen=True)
class Remembered:
    """Where a browser was: a student's member key (with the name it joined under and whether
    it was following the teacher or looking around), or the teacher key for the teacher's own
    browser (the store keeps no copy of it: it is the class's own)."""

    class_id: str
    member_key: str = ""
    teacher_key: str = ""
    name: str = ""
    following: bool = True

    @property
    def teacher(self) -> bool:
        return bool(self.teacher_key)


def browser_hash(browser: object) -> str | None:
    """How the store names a browser: a hash of its id (None for no id)."""
    if not isinstance(browser, str) or not 0 < len(browser) <= 200:
        return None
    import hashlib

    return hashlib.sha256(("attention-lab-rejoin:" + browser).encode()).hexdigest()


class Rejoin(abc.ABC):
    """Remembering which class a browser is in, so that a new session of the same browser
    (a reload, a replica that died) comes back to it. One entry per browser (a new one
    replaces the old); it goes with its class; at most MAX_REMEMBERED per class."""

    @abc.abstractmethod
    def remember(self, class_id: str, browser: str, member_key: str) -> bool:
        """This browser is this member of this class; False when the member is unknown, the
        class is over, or the class has MAX_REMEMBERED browsers already."""

    @abc.abstractmethod
    def remember_teacher(self, teacher_key: str, browser: str) -> bool:
        """This browser leads the class of this teacher key, and its teacher tab is here now
        (the teacher's session says so again every few seconds). False as for remember."""

    @abc.abstractmethod
    def recall(self, browser: str) -> Remembered | None:
        """Where this browser was, while its class is live and not ended (and a student is
        still a member); None otherwise. A teacher's browser only while its teacher tab was
        seen in the last TEACHER_AWAY_SECONDS: after that the entry is dropped, and only the
        teacher link leads the class from this browser."""

    @abc.abstractmethod
    def forget(self, browser: str) -> None:
        """This browser left its class: never bring it back."""

    @abc.abstractmethod
    def answers_of(self, class_id: str, member_key: str) -> dict[str, str]:
        """One member's own answers, question -> choice (a new session of that student's
        browser shows them again); {} for an unknown member or class."""

