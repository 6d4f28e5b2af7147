"""The SQLite class store's members: a place for one more, and a member gone (Leave, or the
row absent longest when the class's rows are full). A mixin of SqliteClassStore."""
from __future__ import annotations

from teaching import class_store_base as cs


class SqliteMembers:
    def _room(self, db, now: float, class_id: str) -> bool:
        """A place for one more: fewer than MAX_MEMBERS present, and a row to keep it in (the
        member absent longest is dropped to make one)."""
        (present,) = db.execute("SELECT COUNT(*) FROM members WHERE class_id = ? AND seen > ?",
                                (class_id, now - cs.PRESENT_SECONDS)).fetchone()
        if present >= cs.MAX_MEMBERS:
            return False
        (rows,) = db.execute("SELECT COUNT(*) FROM members WHERE class_id = ?",
                             (class_id,)).fetchone()
        if rows >= cs.MAX_MEMBER_ROWS:
            (oldest,) = db.execute("SELECT member_key FROM members WHERE class_id = ? ORDER BY "
                                   "seen LIMIT 1", (class_id,)).fetchone()
            self._drop_member(db, class_id, oldest)
        return True

    @staticmethod
    def _drop_member(db, class_id: str, member_key: str) -> None:
        """A member gone from its class, with its answers and the browsers that led to it."""
        gone = db.execute("DELETE FROM answers WHERE class_id = ? AND member_key = ?",
                          (class_id, member_key)).rowcount
        if gone:
            db.execute("UPDATE rates SET n = MAX(0, n - ?) WHERE bucket = ?",
                       (gone, f"answers-kept:{class_id}"))
        db.execute("DELETE FROM rejoin WHERE class_id = ? AND member_key = ?",
                   (class_id, member_key))
        db.execute("DELETE FROM members WHERE class_id = ? AND member_key = ?",
                   (class_id, member_key))

    def leave(self, class_id: str, member_key: str) -> None:
        if cs.is_token(class_id) and cs.is_token(member_key):
            self._tx(lambda db, now: self._drop_member(db, class_id, member_key))
