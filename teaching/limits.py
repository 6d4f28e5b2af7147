"""What a lesson file may cost, checked on its raw text before the TOML parser sees it.

A lesson file comes from a teacher's upload, so nothing in it may cost the server more than a
stated amount. Python's `tomllib` has no limits of its own: one dotted key of 25,000 parts
(`a.a.a…`, 50 kB) takes it past 2.8 GB, and 900 nested brackets raise RecursionError. So the
raw text is scanned first, with just enough TOML to tell strings and comments from keys and
brackets (a dot or a bracket inside quotes counts for nothing), and a file over any of these
limits is refused with a message naming the line:

- at most `MAX_LESSON_BYTES` (1 MB) of UTF-8 text;
- a dotted key (`steps.question`) has at most `MAX_KEY_PARTS` parts;
- lists and inline tables nest at most `MAX_NESTING` deep;
- at most `MAX_KEYS` keys and table headers, and `MAX_PIECES` keys, values, brackets and
  commas in all.

Within them, parsing the costliest file takes about 0.1 s of CPU and adds at most 10 MB
(measured on 2 cores: `bench/bench_lesson_limits.py`, BENCHMARKS.md; tomllib on a 50 kB
dotted-key bomb alone passed 1 GiB). A fact in a lesson's text is written with
one of the formats in `FORMAT_SPEC` (a number of decimals, a percentage, commas: never a width
or a fill), and a step's words with every fact filled in are at most `MAX_STEP_CHARS`
characters, so showing a step costs at most a few hundred kB however its facts are written.
"""

from __future__ import annotations

import re

MAX_LESSON_BYTES = 1_000_000  # the upload box says "1MB" and refuses larger files itself
MAX_KEY_PARTS = 8  # a lesson needs 2: [steps.question]
MAX_NESTING = 8  # a lesson needs 1: options = [...]; a [[steps]] header counts 2
MAX_KEYS = 3_000  # 60 steps of ~20 keys each need ~1,300
MAX_PIECES = 50_000  # keys, values, brackets, commas and dots, strings counted as one each
MAX_STEP_CHARS = 100_000  # one step's texts together, facts filled in
# {fact.field:spec}: the formats a lesson needs. Decimals 0-6 (".0%", ".2f"), a thousands
# comma (",", ",d"), a type (d, f, e, g, %). No width, fill, alignment or sign.
FORMAT_SPEC = re.compile(r",?(?:\.[0-6])?[dfeg%]?")
FORMATS_SAID = (":.0% (a percentage), :.2f (two decimals), :d or :, (a whole number, with "
                "commas); at most 6 decimals, and never a width")

# One token of TOML, as far as limits go. Strings first (so nothing inside them counts), then
# whitespace and comments (one token for any run of them), then the characters that matter.
_TOKEN = re.compile(r'''
    (?P<str>"""(?:[^"\\]++|\\[\s\S]|"(?!""))*+""""{0,2}          # multi-line basic
          | \'\'\'[\s\S]*?\'\'\'\'{0,2}                            # multi-line literal
          | "(?:[^"\\\n]++|\\.)*+"                                # basic
          | '[^'\n]*+')                                           # literal
  | (?P<ws>(?:[ \t\r\n]++|\#[^\n]*+)++)
  | (?P<sym>[\[\]{}=.,])
  | (?P<bare>[^\s\#"'\[\]{}=.,]++)
  | (?P<other>[\s\S])
''', re.VERBOSE)


class LessonError(ValueError):
    """A problem in a lesson file, with the line it is on (0 when it has no line)."""

    def __init__(self, line: int, problem: str) -> None:
        self.line, self.problem = line, problem
        super().__init__(f"line {line}: {problem}" if line else problem)


def check_size(size: int) -> None:
    if size > MAX_LESSON_BYTES:
        raise LessonError(0, f"the file is {size:,} bytes; a lesson may be at most "
                         f"{MAX_LESSON_BYTES:,} bytes (1 MB)")


class _Scan:
    """The running counts of one scan; `refuse` names the line of the token at `pos`."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.dots = self.depth = self.keys = self.pieces = 0
        self.line_start = True

    def refuse(self, pos: int, problem: str) -> None:
        raise LessonError(self.source.count("\n", 0, pos) + 1, problem)

    def symbol(self, char: str, pos: int) -> None:
        if char == ".":
            self.dots += 1
            if self.dots >= MAX_KEY_PARTS:
                self.refuse(pos, f"a dotted key (such as steps.question) may have at most "
                            f"{MAX_KEY_PARTS} parts")
            return
        self.dots = 0
        if char in "[{":
            if char == "[" and self.depth == 0 and self.line_start:
                self.count_key(pos)  # a [table] or [[table]] header
            self.depth += 1
            if self.depth > MAX_NESTING:
                self.refuse(pos, f"lists and {{tables}} are nested more than {MAX_NESTING} "
                            "deep (a lesson needs one list: options = [...])")
        elif char in "]}":
            self.depth = max(0, self.depth - 1)
        elif char == "=":
            self.count_key(pos)

    def count_key(self, pos: int) -> None:
        self.keys += 1
        if self.keys > MAX_KEYS:
            self.refuse(pos, f"more than {MAX_KEYS:,} keys and [tables]; a lesson of 60 "
                        "steps needs fewer than half as many")


def check_text(source: str) -> None:
    """Refuse (LessonError naming the line) a lesson text over a limit, before parsing it."""
    check_size(len(source.encode("utf-8")))
    scan = _Scan(source)
    for token in _TOKEN.finditer(source):
        kind = token.lastgroup
        if kind == "ws":
            if "\n" in token.group():
                scan.dots, scan.line_start = 0, True
            continue
        scan.pieces += 1
        if scan.pieces > MAX_PIECES:
            scan.refuse(token.start(), f"more than {MAX_PIECES:,} keys, values and brackets; "
                        "a lesson needs a few thousand")
        if kind == "sym":
            scan.symbol(token.group(), token.start())
        elif kind == "other":
            scan.dots = 0
        scan.line_start = False


def limits_said() -> str:
    """The limits in a sentence, for the Teach page (Markdown)."""
    return (f"So that no file can slow the server for everyone, a lesson file is at most "
            f"{MAX_LESSON_BYTES // 1_000_000} MB, with at most {MAX_KEYS:,} keys, dotted keys "
            f"of at most {MAX_KEY_PARTS} parts and lists nested at most {MAX_NESTING} deep; a "
            f"step's words, with the facts filled in, are at most {MAX_STEP_CHARS:,} "
            "characters. A fact is written as it is (`{prev.head}`) or with a number of "
            "decimals: `{prev.share:.0%}` for a percentage, `{prev.share:.2f}` for two "
            "decimals, `{run.vocab:,}` for commas; at most 6 decimals, and never a width.")
