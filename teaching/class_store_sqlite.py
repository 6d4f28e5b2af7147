"""The live class store in one SQLite file (the default backend).

Standard library only. The file is in WAL mode, so readers never wait for the writer; every
change runs in one `BEGIN IMMEDIATE` transaction (a check and the write it guards, e.g. "is the
class full?" and the new member, cannot interleave with another process's), and a busy
connection waits up to 10 s instead of failing. Each thread of each process has its own
connection. A class survives a restart of the server: it is all in the file. Expired classes
are invisible at once (every query asks `expires > now`) and their rows are deleted by
`expire()` and whenever a class is started, joined or ended.

The file is made when the store is opened (the first class of a server process), never after:
a file that goes missing while classes run (deleted, moved, a disk unmounted) is an outage
(StoreDown, "cannot find its records"), not a new empty store in which every class is unknown
and so ended. Each transaction checks that the file at the path is the one its connection has
open (a connection would go on in a deleted file that no other process sees), and reopens it
when it was put back. A file locked past the busy timeout is an outage too.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import threading
import time
import weakref
from pathlib import Path
from typing import Callable

from teaching import class_store_base as cs
from teaching.class_codes import new_code, new_key, normalise_code
from teaching.class_store_answers import SqliteAnswers
from teaching.class_store_sqlite_members import SqliteMembers
from teaching.class_store_rejoin import SQLITE_SCHEMA, SqliteRejoin, sqlite_upgrade

SCHEMA = (
    """CREATE TABLE IF NOT EXISTS classes (id TEXT PRIMARY KEY, code TEXT UNIQUE NOT NULL,
        teacher_key TEXT UNIQUE NOT NULL, started REAL NOT NULL, expires REAL NOT NULL,
        version INTEGER NOT NULL, link TEXT NOT NULL, ended INTEGER NOT NULL,
        joined INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS classes_expires ON classes (expires)",
    """CREATE TABLE IF NOT EXISTS members (member_key TEXT PRIMARY KEY, class_id TEXT NOT NULL,
        name TEXT NOT NULL, following INTEGER NOT NULL, seen REAL NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS members_class ON members (class_id, seen)",
    """CREATE TABLE IF NOT EXISTS questions (class_id TEXT NOT NULL, question TEXT NOT NULL,
        revealed INTEGER NOT NULL, PRIMARY KEY (class_id, question))""",
    """CREATE TABLE IF NOT EXISTS answers (class_id TEXT NOT NULL, question TEXT NOT NULL,
        member_key TEXT NOT NULL, choice TEXT NOT NULL,
        PRIMARY KEY (class_id, question, member_key))""",
    """CREATE TABLE IF NOT EXISTS rates (bucket TEXT PRIMARY KEY, class_id TEXT,
        win INTEGER NOT NULL, n INTEGER NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS rates_class ON rates (class_id)",
) + SQLITE_SCHEMA
CLASS_TABLES = ("answers", "questions", "members", "rates", "rejoin")  # each has a class_id column


class SqliteClassStore(SqliteMembers, SqliteAnswers, SqliteRejoin, cs.ClassStore):
    busy_seconds = 10.0  # a change waits this long for a lock, then the store is out of touch

    def __init__(self, path: str | os.PathLike, clock: Callable[[], float] = time.time,
                 hours: float | None = None):
        super().__init__(clock, hours)
        self.path = Path(path).expanduser().absolute()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        sqlite3.connect(self.path).close()  # the file is made here, and only here
        self._local = threading.local()
        self._connections: list[sqlite3.Connection] = []
        self._lock = threading.Lock()
        # This process's writers take turns here, in order, rather than in SQLite's busy
        # handler (which sleeps and retries, so one writer can wait behind many others).
        self._writing = threading.Lock()
        mine = weakref.ref(self)  # a forked child starts with fresh locks and no connections
        os.register_at_fork(after_in_child=lambda: (store := mine()) and store._forget())
        db = self._db()
        for statement in SCHEMA:
            db.execute(statement)
        sqlite_upgrade(db)

    # -- connections and transactions -------------------------------------------------------
    def _db(self) -> sqlite3.Connection:
        """This thread's connection to the file now at the path (a new one after a fork:
        connections never cross one; and after the file was replaced). StoreDown when the file
        is missing or cannot be opened."""
        try:
            found = os.stat(self.path)
        except OSError as exc:
            raise self._lost(cs.STORE_MISSING, f"{self.path} is missing") from exc
        file = (found.st_dev, found.st_ino)
        db = getattr(self._local, "db", None)
        if db is None or self._local.pid != os.getpid() or self._local.file != file:
            if db is not None and self._local.pid == os.getpid():
                self._close(db)  # the file it had open was deleted or replaced
            try:
                db = sqlite3.connect(self.path.as_uri() + "?mode=rw", uri=True,
                                     timeout=self.busy_seconds, isolation_level=None,
                                     check_same_thread=False)
                db.execute(f"PRAGMA busy_timeout = {int(self.busy_seconds * 1000)}")
                db.execute("PRAGMA journal_mode = WAL")
                db.execute("PRAGMA synchronous = NORMAL")
            except sqlite3.Error as exc:
                raise self._lost(cs.STORE_DOWN, f"{self.path}: {exc}") from exc
            self._local.db, self._local.pid, self._local.file = db, os.getpid(), file
            with self._lock:
                self._connections.append(db)
        return db

    def _close(self, db: sqlite3.Connection) -> None:
        with self._lock:
            if db in self._connections:
                self._connections.remove(db)
        db.close()

    def _tx(self, work, *args, write: bool = True):
        """Run work(db, now, *args) in one transaction. A ClassError it *returns* is raised
        after the commit, so a counter it bumped (a failed code, a join) is kept."""
        db = self._db()
        try:
            with self._writing if write else contextlib.nullcontext():
                db.execute("BEGIN IMMEDIATE" if write else "BEGIN")
                result = work(db, self.clock(), *args)
                db.execute("COMMIT")
        except BaseException as exc:
            if db.in_transaction:
                with contextlib.suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
            if isinstance(exc, sqlite3.OperationalError):  # locked past the timeout, disk full
                raise self._lost(cs.STORE_DOWN, f"{self.path}: {exc}") from exc
            raise
        self._back()
        if isinstance(result, cs.ClassError):
            raise result
        return result

    def _forget(self) -> None:
        """In a forked child: the parent's locks may be held by a thread that is not here."""
        self._lock, self._writing = threading.Lock(), threading.Lock()
        self._connections, self._local = [], threading.local()

    def close(self) -> None:
        with self._lock:
            for db in self._connections:
                db.close()
            self._connections.clear()
        self._local = threading.local()

    # -- helpers (inside a transaction) ------------------------------------------------------
    @staticmethod
    def _bump(db, bucket: str, class_id: str | None, now: float, limit: int) -> bool:
        """Count one more event in this window; False (and not counted) over the limit."""
        win = cs.window(now)
        row = db.execute("SELECT win, n FROM rates WHERE bucket = ?", (bucket,)).fetchone()
        n = row[1] + 1 if row and row[0] == win else 1
        if n > limit:
            return False
        db.execute("INSERT INTO rates (bucket, class_id, win, n) VALUES (?, ?, ?, ?) "
                   "ON CONFLICT (bucket) DO UPDATE SET win = excluded.win, n = excluded.n",
                   (bucket, class_id, win, n))
        return True

    @staticmethod
    def _guessing(db, now: float, bucket: str) -> bool:
        row = db.execute("SELECT win, n FROM rates WHERE bucket = ?", (bucket,)).fetchone()
        return bool(row and row[0] == cs.window(now) and row[1] >= cs.FAILED_CODES_PER_WINDOW)

    def _by_code(self, db, now: float, code: object,
                 client: object) -> str | None | cs.ClassError:
        """The live class for a code, counting this client's unknown codes; Refused while
        this client is guessing (other clients are not held up)."""
        bucket = f"failed:{cs.client_bucket(client)}"
        if self._guessing(db, now, bucket):
            return cs.Refused(cs.GUESSING)
        stored = normalise_code(code)
        row = stored and db.execute(
            "SELECT id FROM classes WHERE code = ? AND expires > ? AND ended = 0",
            (stored, now)).fetchone()
        if not row:
            self._bump(db, bucket, None, now, cs.FAILED_CODES_PER_WINDOW)
            return None
        return row[0]

    @staticmethod
    def _teacher(db, now: float, key: object, ended_ok: bool = False) -> str | None:
        if not isinstance(key, str):
            return None
        row = db.execute("SELECT id, ended FROM classes WHERE teacher_key = ? AND expires > ?",
                         (key, now)).fetchone()
        return row[0] if row and (ended_ok or not row[1]) else None

    @staticmethod
    def _delete(db, ids: list[str]) -> None:
        for class_id in ids:
            for table in CLASS_TABLES:
                db.execute(f"DELETE FROM {table} WHERE class_id = ?", (class_id,))
            db.execute("DELETE FROM classes WHERE id = ?", (class_id,))

    def _sweep(self, db, now: float) -> int:
        """Delete the classes whose time is up, and clients' counts of past windows."""
        db.execute("DELETE FROM rates WHERE class_id IS NULL AND win < ?", (cs.window(now),))
        ids = [r[0] for r in db.execute("SELECT id FROM classes WHERE expires <= ?", (now,))]
        self._delete(db, ids)
        return len(ids)

    # -- the API -----------------------------------------------------------------------------
    def start_class(self) -> cs.NewClass:
        return self._tx(self._start)

    def _start(self, db, now: float):
        self._sweep(db, now)
        (live,) = db.execute("SELECT COUNT(*) FROM classes").fetchone()
        if live >= cs.MAX_LIVE_CLASSES:
            return cs.Refused(cs.TOO_MANY_CLASSES)
        for _ in range(50):  # a code already in use is drawn again (rare: 1 in ~2 million)
            new = cs.NewClass(class_id=new_key(), join_code=new_code(), teacher_key=new_key())
            try:
                db.execute("INSERT INTO classes VALUES (?, ?, ?, ?, ?, 0, '', 0, 0)",
                           (new.class_id, new.join_code, new.teacher_key, now,
                            now + self.lifetime))
                return new
            except sqlite3.IntegrityError:
                continue
        return cs.Refused(cs.TOO_MANY_CLASSES)

    def class_by_code(self, code: str, client: str = "") -> str | None:
        def work(db, now):
            found = self._by_code(db, now, code, client)
            return found if isinstance(found, str) else None  # None while guessing, too
        return self._tx(work)

    def teacher_class(self, teacher_key: str) -> str | None:
        return self._tx(self._teacher, teacher_key, write=False)

    def join_code(self, teacher_key: str) -> str | None:
        def work(db, now):
            row = db.execute("SELECT code FROM classes WHERE teacher_key = ? AND expires > ?",
                             (teacher_key if isinstance(teacher_key, str) else "", now)).fetchone()
            return row[0] if row else None
        return self._tx(work, write=False)

    def join(self, code: str, name: str = "", client: str = "") -> cs.Member:
        return self._tx(self._join, code, cs.member_name(name), client)

    def _join(self, db, now: float, code: str, name: str, client: str):
        self._sweep(db, now)
        class_id = self._by_code(db, now, code, client)
        if not isinstance(class_id, str):
            return class_id or cs.ClassNotFound(cs.UNKNOWN_CODE)
        if not self._room(db, now, class_id):
            return cs.ClassFull(cs.FULL)
        if not (self._bump(db, f"joins:{class_id}:{cs.client_bucket(client)}", class_id, now,
                           cs.JOINS_PER_CLIENT)
                and self._bump(db, f"joins:{class_id}", class_id, now, cs.JOINS_PER_WINDOW)):
            return cs.Refused(cs.JOIN_RUSH)
        db.execute("UPDATE classes SET joined = joined + 1 WHERE id = ?", (class_id,))
        (number,) = db.execute("SELECT joined FROM classes WHERE id = ?", (class_id,)).fetchone()
        member = cs.Member(member_key=new_key(), name=name or f"Student {number}",
                           class_id=class_id)
        db.execute("INSERT INTO members VALUES (?, ?, ?, 1, ?)",
                   (member.member_key, class_id, member.name, now))
        return member

    def set_view(self, teacher_key: str, link: str) -> int:
        link = cs.check_link(link)

        def work(db, now):
            class_id = self._teacher(db, now, teacher_key)
            if class_id is None:
                return cs.NotTeacher(cs.NOT_TEACHER)
            db.execute("UPDATE classes SET version = version + 1, link = ? WHERE id = ?",
                       (link, class_id))
            return db.execute("SELECT version FROM classes WHERE id = ?",
                              (class_id,)).fetchone()[0]
        return self._tx(work)

    def view(self, class_id: str) -> cs.ClassView:
        if not cs.is_token(class_id):
            raise cs.ClassNotFound(cs.GONE)

        def work(db, now):
            row = db.execute("SELECT version, link, ended FROM classes WHERE id = ? "
                             "AND expires > ?", (class_id, now)).fetchone()
            if row is None:
                return cs.ClassNotFound(cs.GONE)
            revealed = db.execute("SELECT question FROM questions WHERE class_id = ? AND "
                                  "revealed = 1", (class_id,))
            return cs.ClassView(version=row[0], link=row[1],
                                revealed=frozenset(r[0] for r in revealed), ended=bool(row[2]))
        return self._tx(work, write=False)

    def _touch(self, class_id: str, member_key: str, following: bool | None) -> None:
        if not (cs.is_token(class_id) and cs.is_token(member_key)):
            raise cs.ClassNotFound(cs.NOT_A_MEMBER)

        def work(db, now):
            changed = db.execute(
                "UPDATE members SET seen = ?, following = COALESCE(?, following) "
                "WHERE member_key = ? AND class_id = (SELECT id FROM classes WHERE id = ? "
                "AND expires > ?)", (now, following, member_key, class_id, now)).rowcount
            return None if changed else cs.ClassNotFound(cs.NOT_A_MEMBER)
        self._tx(work)

    def set_following(self, class_id: str, member_key: str, following: bool) -> None:
        self._touch(class_id, member_key, bool(following))

    def seen(self, class_id: str, member_key: str) -> None:
        self._touch(class_id, member_key, None)

    def headcount(self, teacher_key: str) -> cs.Headcount:
        def work(db, now):
            class_id = self._teacher(db, now, teacher_key, ended_ok=True)
            if class_id is None:
                return cs.NotTeacher(cs.NOT_TEACHER)
            members, following = db.execute(
                "SELECT COUNT(*), COALESCE(SUM(following), 0) FROM members "
                "WHERE class_id = ? AND seen > ?", (class_id, now - cs.PRESENT_SECONDS)).fetchone()
            return cs.Headcount(members=members, following=following,
                                looking_around=members - following)
        return self._tx(work, write=False)

    def answer(self, class_id: str, member_key: str, question: str, choice: str) -> bool:
        if not (cs.answer_fits(question, choice) and cs.is_token(class_id)
                and cs.is_token(member_key)):
            return False
        return self._tx(self._answer, class_id, member_key, question, choice)

    def _answer(self, db, now, class_id, member_key, question, choice) -> bool:
        if not db.execute("SELECT 1 FROM classes WHERE id = ? AND expires > ? AND ended = 0",
                          (class_id, now)).fetchone():
            return False
        if not db.execute("SELECT 1 FROM members WHERE member_key = ? AND class_id = ?",
                          (member_key, class_id)).fetchone():
            return False
        row = db.execute("SELECT revealed FROM questions WHERE class_id = ? AND question = ?",
                         (class_id, question)).fetchone()
        if row is not None and row[0]:
            return False
        if row is None and self._questions(db, class_id) >= cs.MAX_QUESTIONS:
            return False
        if not self._bump(db, f"answers:{member_key}", class_id, now, cs.ANSWERS_PER_WINDOW):
            return False
        known = row is not None and db.execute(
            "SELECT 1 FROM answers WHERE class_id = ? AND question = ? AND member_key = ?",
            (class_id, question, member_key)).fetchone()
        if not known and not self._bump(db, f"answers-kept:{class_id}", class_id, 0,
                                        cs.MAX_ANSWERS):  # window 0: counts for ever
            return False
        if row is None:
            db.execute("INSERT INTO questions VALUES (?, ?, 0)", (class_id, question))
        db.execute("INSERT INTO answers VALUES (?, ?, ?, ?) ON CONFLICT DO UPDATE "
                   "SET choice = excluded.choice", (class_id, question, member_key, choice))
        db.execute("UPDATE members SET seen = ? WHERE member_key = ?", (now, member_key))
        return True

    @staticmethod
    def _questions(db, class_id: str) -> int:
        return db.execute("SELECT COUNT(*) FROM questions WHERE class_id = ?",
                          (class_id,)).fetchone()[0]

    def tally(self, teacher_key: str, question: str, with_names: bool = False) -> cs.Tally:
        def work(db, now):
            class_id = self._teacher(db, now, teacher_key, ended_ok=True)
            if class_id is None:
                return cs.NotTeacher(cs.NOT_TEACHER)
            rows = db.execute("SELECT a.choice, m.name FROM answers a JOIN members m "
                              "ON m.member_key = a.member_key WHERE a.class_id = ? AND "
                              "a.question = ?", (class_id, str(question))).fetchall()
            return cs.make_tally(question, rows, with_names)
        return self._tx(work, write=False)

    def reveal(self, teacher_key: str, question: str) -> None:
        if not cs.answer_fits(question, "-"):
            raise cs.Refused(cs.BAD_QUESTION)

        def work(db, now):
            class_id = self._teacher(db, now, teacher_key)
            if class_id is None:
                return cs.NotTeacher(cs.NOT_TEACHER)
            changed = db.execute("UPDATE questions SET revealed = 1 WHERE class_id = ? AND "
                                 "question = ?", (class_id, question)).rowcount
            if not changed:
                if self._questions(db, class_id) >= cs.MAX_QUESTIONS:
                    return cs.Refused(cs.TOO_MANY_QUESTIONS)
                db.execute("INSERT INTO questions VALUES (?, ?, 1)", (class_id, question))
            return None
        self._tx(work)

    def end_class(self, teacher_key: str) -> None:
        def work(db, now):
            self._sweep(db, now)
            class_id = self._teacher(db, now, teacher_key, ended_ok=True)
            if class_id is None:
                return cs.NotTeacher(cs.NOT_TEACHER)
            db.execute("UPDATE classes SET ended = 1 WHERE id = ?", (class_id,))
            return None
        self._tx(work)

    def expire(self, now: float | None = None) -> int:
        return self._tx(lambda db, clock_now: self._sweep(db, clock_now if now is None else now))
