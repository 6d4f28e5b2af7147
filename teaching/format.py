"""The lesson file: a TOML file a teacher can write by hand (see the README for a full example).

    title = "Reading an attention heatmap"
    summary = "Rows, columns, and why every row adds up to one."
    model = "minilm"                    # every step's default; a step may set its own
    text = "The cat sat on the mat."

    [[steps]]
    title = "One head, one picture"
    page = "attention"                  # which page of the app the step opens
    layer = 0                           # page settings (teaching/pages.py lists them)
    head = "{prev.head}"                # ...or a fact computed from the model
    explain = "Markdown shown beside the page. {prev.share:.0%} comes from the run."
    figure = "heatmap"                  # optional: the one figure shown (teaching/figures.py),
                                        # or "page": the whole page, its controls too

    [steps.question]                    # optional: predict, then reveal
    kind = "choice"                     # or "cell": click the brightest cell of a row
    prompt = "Where does this head look?"
    options = ["at the word before", "at itself"]
    answer = "at the word before"
    reveal = "Shown after the learner answers."
    misconception = "whole-matrix-sums"   # optional: the course's misconception it probes

A step may also name the course's ideas it teaches: `teaches = ["softmax-rows"]`
(teaching/course/ideas.toml and misconceptions.toml list the names).

Every error names the line and the problem. Nothing here runs the model: `check_models`
checks the model-dependent parts (names, layer and head ranges) given each model's shape.
What a file may cost (its size, keys, nesting, the formats of its facts) is in `limits.py`,
checked before the TOML parser sees the text.
"""

from __future__ import annotations

import bisect
import itertools
import re
import tomllib
from collections.abc import Callable
from dataclasses import dataclass, field

from .facts import FACTS
from .figures import FIGURES, WHOLE_PAGE
from .limits import MAX_LESSON_BYTES  # noqa: F401 (the pages read the limit from here)
from .limits import (
    FORMAT_SPEC, FORMATS_SAID, MAX_STEP_CHARS, LessonError, check_size, check_text,
)
from .pages import COMMON, PAGES, Setting
from .syllabus import ideas, misconceptions

MAX_STEPS = 60
MAX_FIELD_CHARS = 20_000
LESSON_KEYS = {"id", "title", "summary", "model", "text", "pair", "steps"}
STEP_KEYS = {"title", "page", "explain", "question", "figure", "teaches", *COMMON}
QUESTION_KEYS = {"kind", "prompt", "options", "answer", "row", "reveal", "misconception"}
ID_PATTERN = re.compile(r"[a-z0-9][a-z0-9-]{0,63}")
# {fact.field} or {fact.field:.2f}: the only placeholders. Other braces ($\sqrt{d}$) stay text.
# Any spec is found here, so that one not on FORMAT_SPEC's list is refused, never kept as text.
PLACEHOLDER = re.compile(r"\{([a-z_]+)\.([a-z_]+)(?::([^{}\n]{1,32}))?\}")


@dataclass(frozen=True)
class Question:
    kind: str  # "choice" or "cell"
    prompt: str
    options: tuple[str, ...] = ()
    answer: str = ""  # choice: the right option (it may be a fact placeholder)
    row: str = ""  # cell: the query token whose row is asked about (text or a placeholder)
    reveal: str = ""
    misconception: str = ""  # the course's misconception it probes (teaching/syllabus.py)


@dataclass(frozen=True)
class Step:
    title: str
    page: str
    explain: str
    model: str
    text: str
    pair: str
    settings: dict = field(default_factory=dict)  # setting name -> int, bool or str
    question: Question | None = None
    line: int = 0  # where the step starts in the file
    figure: str = ""  # the one figure the step shows (teaching/figures.py); "" its page's own
    teaches: tuple[str, ...] = ()  # the course's ideas the step teaches (teaching/syllabus.py)


@dataclass(frozen=True)
class Lesson:
    id: str
    title: str
    summary: str
    steps: tuple[Step, ...]
    source: str = ""  # "bundled", "folder" or "upload"

    def models(self) -> set[str]:
        return {s.model for s in self.steps}


class _Lines:
    """Finds the line of a key in the source, for error messages. The lines of every
    `key =` and `[[steps]]` are found in one pass, so a question costs a bisection."""

    KEY = re.compile(r"^[ \t]*([A-Za-z0-9_-]+)[ \t]*=", re.MULTILINE)
    STEPS = re.compile(r"^[ \t]*\[\[[ \t]*steps[ \t]*\]\]", re.MULTILINE)

    def __init__(self, source: str) -> None:
        self.count = source.count("\n") + 1
        self.keys: dict[str, list[int]] = {}
        line, last = 1, 0
        for match in self.KEY.finditer(source):
            line += source.count("\n", last, match.start())
            last = match.start()
            self.keys.setdefault(match.group(1), []).append(line)
        self.steps = [source.count("\n", 0, m.start()) + 1
                      for m in itertools.islice(self.STEPS.finditer(source), MAX_STEPS + 1)]

    def of(self, key: str, step: int | None = None) -> int:
        start = self.steps[step] if step is not None and step < len(self.steps) else 1
        end = self.steps[step + 1] if step is not None and step + 1 < len(self.steps) else None
        found = self.keys.get(key, [])
        at = bisect.bisect_left(found, start)
        if at < len(found) and found[at] < (end or self.count + 1):
            return found[at]
        return start if step is not None else 0


def _text(value, what: str, line: int, required: bool = True) -> str:
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise LessonError(line, f"{what} must be a piece of text in quotes")
    if len(value) > MAX_FIELD_CHARS:
        raise LessonError(line, f"{what} is {len(value):,} characters; the limit is "
                          f"{MAX_FIELD_CHARS:,}")
    _check_placeholders(value, what, line)
    return value


def _check_placeholders(value: str, what: str, line: int) -> None:
    for name, attr, spec in PLACEHOLDER.findall(value):
        if not FORMAT_SPEC.fullmatch(spec):
            raise LessonError(line, f"{what} writes {{{name}.{attr}:{spec}}}, a format a lesson "
                              f"cannot use. A fact may be written as it is, or with {FORMATS_SAID}")
        if name not in FACTS:
            raise LessonError(line, f"{what} uses {{{name}.{attr}}}, but there is no fact "
                              f"called “{name}”. Facts: {', '.join(sorted(FACTS))}")
        if attr not in FACTS[name].fields:
            raise LessonError(line, f"{what} uses {{{name}.{attr}}}; the fact “{name}” has "
                              f"{', '.join(FACTS[name].fields)}")


def _setting(name: str, value, spec: Setting, line: int):
    if isinstance(value, str) and PLACEHOLDER.fullmatch(value) and spec.kind != "text":
        _check_placeholders(value, name, line)
        return value  # a fact: resolved, and range-checked, when the step opens
    if spec.kind in ("layer", "head", "int"):
        if isinstance(value, bool) or not isinstance(value, int) or value < spec.minimum:
            raise LessonError(line, f"{name} must be a whole number of at least {spec.minimum}"
                              f" (or a fact such as \"{{prev.{name}}}\"), not {value!r}")
        return value
    if spec.kind == "bool":
        if not isinstance(value, bool):
            raise LessonError(line, f"{name} must be true or false, not {value!r}")
        return value
    if spec.kind == "choice":
        if value not in spec.choices:
            raise LessonError(line, f"{name} must be one of: "
                              f"{', '.join(repr(c) for c in spec.choices)}; not {value!r}")
        return value
    if spec.kind in ("float", "heads"):
        try:
            return spec.check(value)
        except ValueError as exc:
            raise LessonError(line, f"{name} {exc}") from None
    return _text(value, name, line)


def _question(raw, step: int, where: _Lines) -> Question:
    line = where.of("kind", step)
    if not isinstance(raw, dict):
        raise LessonError(line, "question must be a table: [steps.question]")
    unknown = sorted(set(raw) - QUESTION_KEYS)
    if unknown:
        raise LessonError(where.of(unknown[0], step), f"unknown question key “{unknown[0]}”. "
                          f"Known: {', '.join(sorted(QUESTION_KEYS))}")
    kind = raw.get("kind")
    if kind not in ("choice", "cell"):
        raise LessonError(line, f"question kind must be \"choice\" or \"cell\", not {kind!r}")
    prompt = _text(raw.get("prompt"), "prompt", where.of("prompt", step))
    reveal = _text(raw.get("reveal"), "reveal", where.of("reveal", step), required=False)
    tag = _named(raw.get("misconception"), misconceptions(), "misconception",
                 where.of("misconception", step))
    if kind == "cell":
        row = _text(raw.get("row"), "row (the token whose row is asked about)",
                    where.of("row", step))
        return Question("cell", prompt, row=row, reveal=reveal, misconception=tag)
    options = raw.get("options")
    at = where.of("options", step)
    if not isinstance(options, list) or not 2 <= len(options) <= 8:
        raise LessonError(at, "options must be a list of 2 to 8 answers in quotes")
    options = tuple(_text(o, "an option", at) for o in options)
    answer = _text(raw.get("answer"), "answer", where.of("answer", step))
    if not PLACEHOLDER.search(answer) and answer not in options:
        raise LessonError(where.of("answer", step), f"answer {answer!r} is not one of the "
                          "options")
    return Question("choice", prompt, options=options, answer=answer, reveal=reveal,
                    misconception=tag)


def _named(value, known: dict, what: str, line: int) -> str:
    """A course name (a misconception's or an idea's id), or "" when the key is left out."""
    if value is None:
        return ""
    if not isinstance(value, str) or value not in known:
        raise LessonError(line, f"{what} must be one of the course's names in quotes: "
                          f"{', '.join(sorted(known))}; not {value!r}")
    return value


def _teaches(value, line: int) -> tuple[str, ...]:
    """A step's `teaches`: a list of the course's idea names."""
    if value is None:
        return ()
    if not isinstance(value, list) or not value:
        raise LessonError(line, "teaches must be a list of idea names in quotes, such as "
                          "teaches = [\"softmax-rows\"]")
    return tuple(_named(v, ideas(), "each idea in teaches", line) for v in value)


def _step(raw, index: int, lesson: dict, where: _Lines) -> Step:
    line = where.steps[index] if index < len(where.steps) else 0
    if not isinstance(raw, dict):
        raise LessonError(line, "each step must be a [[steps]] table")
    page = raw.get("page")
    if page not in PAGES:
        raise LessonError(where.of("page", index), f"unknown page {page!r}. Pages: "
                          f"{', '.join(PAGES)}")
    specs = PAGES[page][2]
    unknown = sorted(set(raw) - STEP_KEYS - set(specs))
    if unknown:
        raise LessonError(where.of(unknown[0], index), f"step {index + 1} has an unknown key "
                          f"“{unknown[0]}”. On the {page} page a step may set: "
                          f"{', '.join(sorted(STEP_KEYS | set(specs)))}")
    settings = {name: _setting(name, raw[name], spec, where.of(name, index))
                for name, spec in specs.items() if name in raw}
    common = {k: raw.get(k, lesson.get(k, "")) for k in COMMON}
    model = _text(common["model"], "model", where.of("model", index))
    text = _text(common["text"], "text", where.of("text", index))
    pair = _text(common["pair"], "pair", where.of("pair", index), required=False)
    question = raw.get("question")
    figure = _figure(raw.get("figure"), page, where.of("figure", index))
    step = Step(
        title=_text(raw.get("title"), "title", where.of("title", index)), page=page,
        explain=_text(raw.get("explain"), "explain", where.of("explain", index),
                      required=False),
        model=model, text=text, pair=pair, settings=settings, line=line, figure=figure,
        teaches=_teaches(raw.get("teaches"), where.of("teaches", index)),
        question=None if question is None else _question(question, index, where))
    words = sum(map(len, step_words(step).values()))
    if words > MAX_STEP_CHARS:
        raise LessonError(line, f"step {index + 1} has {words:,} characters of words (title, "
                          f"explain, question); a step may have at most {MAX_STEP_CHARS:,}")
    return step


def _figure(value, page: str, line: int) -> str:
    """A step's `figure`: one its page offers (a page with none shows the whole page)."""
    if value is None:
        return ""
    if value == WHOLE_PAGE:  # the whole page and its controls, e.g. for a class to explore
        return value
    offered = FIGURES.get(page, {})
    if not offered:
        raise LessonError(line, f"the {page} page has no figure to choose: a step on it shows "
                          "the whole page, so leave figure out")
    if value not in offered:
        raise LessonError(line, f"figure must be one of: {', '.join(map(repr, offered))} "
                          f"(on the {page} page); not {value!r}")
    return value


def step_words(step: Step) -> dict[str, str]:
    """Every text of a step that may hold facts, by name (option0, option1... for options)."""
    parts = {"explain": step.explain, "title": step.title}
    q = step.question
    if q is not None:
        parts |= {"prompt": q.prompt, "reveal": q.reveal, "answer": q.answer, "row": q.row}
        parts |= {f"option{i}": o for i, o in enumerate(q.options)}
    return parts


def slug(name: str) -> str:
    """A lesson id from a file name: "My_Lesson 2" -> "my-lesson-2"."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:64] or "lesson"


def parse_lesson(source: str | bytes, lesson_id: str, origin: str = "") -> Lesson:
    """A lesson from the text of its file. Raises LessonError naming the line and problem."""
    if isinstance(source, bytes):
        check_size(len(source))
        try:
            source = source.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise LessonError(0, f"the file is not UTF-8 text (byte {exc.start})") from None
    check_text(source)  # size, keys and nesting, before tomllib sees the text
    try:
        data = tomllib.loads(source)
    except RecursionError:  # not reached within check_text's limits; never a traceback
        raise LessonError(0, "the file nests its lists or tables too deeply") from None
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"line (\d+)", str(exc))
        problem = re.sub(r"\s*\(at (end of document|line \d+, column \d+)\)", "", str(exc))
        raise LessonError(int(found.group(1)) if found else 0,
                          f"this is not valid TOML: {problem}") from None
    where = _Lines(source)
    unknown = sorted(set(data) - LESSON_KEYS)
    if unknown:
        raise LessonError(where.of(unknown[0]), f"unknown key “{unknown[0]}”. A lesson has: "
                          f"{', '.join(sorted(LESSON_KEYS))}")
    lesson_id = data.get("id", slug(lesson_id))
    if not isinstance(lesson_id, str) or not ID_PATTERN.fullmatch(lesson_id):
        raise LessonError(where.of("id"), "id must be lowercase letters, digits and dashes")
    steps = data.get("steps")
    if not isinstance(steps, list) or not steps:
        raise LessonError(0, "a lesson needs at least one [[steps]] table")
    if len(steps) > MAX_STEPS:
        raise LessonError(where.steps[MAX_STEPS] if len(where.steps) > MAX_STEPS else 0,
                          f"{len(steps)} steps; the limit is {MAX_STEPS}")
    return Lesson(
        id=lesson_id, title=_text(data.get("title"), "title", where.of("title")),
        summary=_text(data.get("summary"), "summary", where.of("summary"), required=False),
        steps=tuple(_step(raw, i, data, where) for i, raw in enumerate(steps)), source=origin)


@dataclass(frozen=True)
class ModelShape:
    n_layers: int
    n_heads: int


def check_models(lesson: Lesson, shape_of: Callable[[str], ModelShape],
                 allowed: list[str] | None = None) -> None:
    """Raise LessonError for a model that is not allowed or does not load, and for a layer or
    head out of range. `shape_of(name)` raises ValueError with a reason for a bad model."""
    for step in lesson.steps:
        if allowed is not None and step.model not in allowed:
            raise LessonError(step.line, f"model {step.model!r} is not on this server's list "
                              f"({', '.join(allowed)})")
        try:
            shape = shape_of(step.model)
        except ValueError as exc:
            raise LessonError(step.line, f"model {step.model!r} does not load: {exc}") from None
        check_range(step, shape)


def check_range(step: Step, shape: ModelShape, settings: dict | None = None) -> None:
    """Layer and head settings (resolved ones when given) within the model's size."""
    limits = {"layer": shape.n_layers, "head": shape.n_heads}
    specs = PAGES[step.page][2]
    for name, value in (settings or step.settings).items():
        limit = limits.get(specs[name].kind)
        if limit is not None and isinstance(value, int) and not 0 <= value < limit:
            raise LessonError(step.line, f"{name} {value} is out of range: {step.model} has "
                              f"{specs[name].kind}s 0 to {limit - 1}")
