"""What a class learned: the concept check taken by a live class, before and after the course.

Each student answers the two forms of the check (teaching/concept_check.py) on their own
screen; the store keeps every answer under the question id `question_id(form, item)` and gives
the teacher a tally of choices per question, without names unless the teacher asks. From the
tallies and each item's right answer (computed from the model, as for a learner alone) come:
- a row per item: the share of the class right before and after, and the move between them;
- a row per misconception: the same shares over every item that probes it;
- the items that moved least, and the results as CSV (item, misconception, shares; no names).
Nothing here reads a name: a tally's names never enter a row.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Mapping
from dataclasses import dataclass

from teaching.concept_check import FORMS
from teaching.format import Lesson
from teaching.syllabus import misconceptions

Tallies = Mapping[str, Mapping[int, Mapping[str, int]]]  # form -> item -> choice -> students


def question_id(form: str, item: int) -> str:
    """The store's id of one item of one form ("check-before:3")."""
    return f"check-{form}:{item}"


@dataclass(frozen=True)
class Share:
    """How many of the class answered a question, and how many of them were right."""

    right: int = 0
    answered: int = 0

    @property
    def value(self) -> float | None:
        """The share right (None when nobody answered)."""
        return self.right / self.answered if self.answered else None

    def __add__(self, other: Share) -> Share:
        return Share(self.right + other.right, self.answered + other.answered)


def share(counts: Mapping[str, int], right: str) -> Share:
    """One question's tally (choice -> students) against its right answer."""
    return Share(int(counts.get(right, 0)), int(sum(counts.values())))


@dataclass(frozen=True)
class ItemRow:
    item: int
    misconception: str
    before: Share
    after: Share

    @property
    def moved(self) -> float | None:
        """After minus before, in shares of the class (None until both were answered)."""
        if self.before.value is None or self.after.value is None:
            return None
        return self.after.value - self.before.value


def item_rows(forms: Mapping[str, Lesson], tallies: Tallies,
              rights: Mapping[str, Mapping[int, str]]) -> list[ItemRow]:
    """A row per item of the check (`rights`: form -> item -> the right option's words)."""
    rows = []
    for number, step in enumerate(forms["before"].steps, 1):
        got = {form: share(tallies.get(form, {}).get(number, {}),
                           rights.get(form, {}).get(number, "")) for form in FORMS}
        rows.append(ItemRow(number, step.question.misconception, got["before"], got["after"]))
    return rows


@dataclass(frozen=True)
class MisconceptionRow:
    misconception: str
    items: tuple[int, ...]
    before: Share
    after: Share


def misconception_rows(rows: list[ItemRow]) -> list[MisconceptionRow]:
    """The class's map: a row per misconception, its items' answers added up, in the order
    the check first probes them."""
    grouped: dict[str, list[ItemRow]] = {}
    for row in rows:
        grouped.setdefault(row.misconception, []).append(row)
    return [MisconceptionRow(tag, tuple(r.item for r in group),
                             sum((r.before for r in group), Share()),
                             sum((r.after for r in group), Share()))
            for tag, group in grouped.items()]


def moved_least(rows: list[ItemRow], count: int = 3) -> list[ItemRow]:
    """The items whose share right rose least (fell most) from before to after, answered in
    both forms; ties by the lower share after."""
    both = [r for r in rows if r.moved is not None]
    return sorted(both, key=lambda r: (r.moved, r.after.value, r.item))[:count]


def _percent(s: Share) -> str:
    return "" if s.value is None else f"{100 * s.value:.1f}"


def results_csv(rows: list[ItemRow]) -> str:
    """The class's results, one line per item: the misconception in plain words, the share
    right and the number who answered before and after. No names, no member."""
    beliefs = misconceptions()
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["question", "the mix-up it probes", "right before (%)", "answered before",
                     "right after (%)", "answered after"])
    for r in rows:
        belief = beliefs[r.misconception].belief if r.misconception in beliefs else r.misconception
        writer.writerow([r.item, belief, _percent(r.before), r.before.answered,
                         _percent(r.after), r.after.answered])
    return out.getvalue()
