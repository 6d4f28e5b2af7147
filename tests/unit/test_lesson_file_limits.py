"""A lesson file is an upload: nothing in it may cost the server more than the limits in
teaching/limits.py. Each hostile file is parsed in a child process with 1 GiB more address
space than it starts with and a CPU limit, so a regression fails the test, not the machine."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from teaching.facts import FactError
from teaching.format import PLACEHOLDER, LessonError, parse_lesson
from teaching.limits import (
    FORMAT_SPEC, MAX_KEY_PARTS, MAX_KEYS, MAX_LESSON_BYTES, MAX_NESTING, MAX_PIECES,
    MAX_STEP_CHARS,
)
from teaching.render import fill, fill_all

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parents[2]
EXTRA_BYTES = 1 << 30  # address space the parse may add (tomllib on the key bomb passes 2.8 GB)
CPU_SECONDS = 30  # far above the ~0.1 s a file within the limits takes
GUARDED = textwrap.dedent("""
    import json, resource, sys, time
    sys.path.insert(0, sys.argv[1])
    from teaching.format import LessonError, parse_lesson
    source = open(sys.argv[2], "rb").read()
    status = open("/proc/self/status").read()
    virtual = int(status.split("VmSize:")[1].split()[0]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (virtual + int(sys.argv[3]),) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (int(sys.argv[4]),) * 2)
    start = time.process_time()
    try:
        lesson = parse_lesson(source, "hostile")
        out = {"steps": len(lesson.steps)}
    except LessonError as exc:
        out = {"line": exc.line, "problem": exc.problem}
    out["seconds"] = time.process_time() - start
    print(json.dumps(out))
""")
HEAD = 'title = "Hostile"\nmodel = "minilm"\ntext = "The cat sat on the mat."\n'
STEP = '\n[[steps]]\ntitle = "One"\npage = "attention"\nexplain = "Look."\n'


def guarded_parse(source: str | bytes, tmp_path: Path) -> dict:
    """parse_lesson in a child process under the memory and CPU limits: its outcome, as
    {"steps": n} or {"line": n, "problem": "..."}."""
    path = tmp_path / "hostile.toml"
    path.write_bytes(source if isinstance(source, bytes) else source.encode("utf-8"))
    try:
        done = subprocess.run([sys.executable, "-c", GUARDED, str(ROOT), str(path),
                               str(EXTRA_BYTES), str(CPU_SECONDS)],
                              capture_output=True, text=True, timeout=240)
    except subprocess.TimeoutExpired:
        pytest.fail("parsing the file did not finish in 240 s")
    assert done.returncode == 0, f"the parse crashed or ran out: {done.stderr[-2000:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_one_dotted_key_of_25000_parts_is_refused_before_tomllib(tmp_path):
    got = guarded_parse(HEAD + "a" + ".a" * 25_000 + " = 1\n" + STEP, tmp_path)
    assert got.get("line") == 4, got
    assert f"at most {MAX_KEY_PARTS} parts" in got["problem"]


def test_a_dotted_table_header_as_large_as_a_file_may_be_is_refused(tmp_path):
    parts = (MAX_LESSON_BYTES - 200) // 2
    got = guarded_parse(HEAD + STEP + "[a" + ".a" * parts + "]\n", tmp_path)
    assert got.get("line") == 9 and "dotted key" in got["problem"], got


@pytest.mark.parametrize("opening, closing", [("[", "]"), ("{a=", "}")],
                         ids=["arrays", "inline-tables"])
def test_deep_nesting_is_a_message_naming_the_line_not_a_recursion_error(tmp_path, opening,
                                                                       closing):
    got = guarded_parse(HEAD + STEP + "x = " + opening * 900 + "1" + closing * 900 + "\n",
                        tmp_path)
    assert got.get("line") == 9, got
    assert f"nested more than {MAX_NESTING} deep" in got["problem"]


def test_nesting_within_the_limit_still_reaches_the_lesson_checks(tmp_path):
    got = guarded_parse(HEAD + STEP + "x = " + "[" * MAX_NESTING + "]" * MAX_NESTING + "\n",
                        tmp_path)
    assert got.get("line") == 9 and "unknown key “x”" in got["problem"], got


def test_many_keys_are_refused(tmp_path):
    keys = "".join(f"k{i} = {i}\n" for i in range(MAX_KEYS + 500))
    got = guarded_parse(HEAD + STEP + keys, tmp_path)
    # 7 keys and a [[steps]] header come first: k0 on line 9 is the 8th, the refused one the
    # (MAX_KEYS + 1)th
    assert got.get("line") == 9 + MAX_KEYS + 1 - 8, got
    assert f"more than {MAX_KEYS:,} keys" in got["problem"]


def test_a_list_of_very_many_values_is_refused(tmp_path):
    got = guarded_parse(HEAD + STEP + "x = [" + "1," * (MAX_PIECES + 10) + "]\n", tmp_path)
    assert got.get("line") == 9 and f"more than {MAX_PIECES:,}" in got["problem"], got


def test_an_oversize_file_is_refused_with_the_numbers(tmp_path):
    source = HEAD + STEP + "#" + "x" * MAX_LESSON_BYTES + "\n"
    got = guarded_parse(source, tmp_path)
    assert got.get("line") == 0, got
    assert f"{len(source):,} bytes" in got["problem"]
    assert f"at most {MAX_LESSON_BYTES:,} bytes (1 MB)" in got["problem"]


def test_a_lesson_as_large_as_allowed_parses_in_bounds(tmp_path):
    """Just under the size limit, with every line-finding question asked across a million
    lines: the lesson loads (no line search per key that grows with the file)."""
    steps = "".join(STEP.replace('"One"', f'"Step {i}"') + "layer = 1\nhead = 2\n"
                    for i in range(60))
    source = HEAD + steps
    source += "\n" * (MAX_LESSON_BYTES - len(source.encode()) - 10)
    got = guarded_parse(source, tmp_path)
    assert got.get("steps") == 60, got


@pytest.mark.parametrize("spec", ["99999999", ">99999999", "09999999", "x^9999", "_<80",
                                  "+.2f", ".9f", "#x", "10.2f"])
def test_a_fact_format_with_a_width_fill_or_sign_is_refused_naming_the_line(tmp_path, spec):
    explain = " ".join([f"{{prev.share:{spec}}}"] * 10)
    got = guarded_parse(HEAD + STEP.replace('"Look."', json.dumps(explain)), tmp_path)
    assert got.get("line") == 8, got
    assert f"{{prev.share:{spec}}}" in got["problem"] and "never a width" in got["problem"]


@pytest.mark.parametrize("spec", [".0%", ".1%", ".2f", ".3f", ".1f", ",", "d", ",d", ".2e"])
def test_the_formats_a_lesson_needs_are_allowed(spec):
    assert FORMAT_SPEC.fullmatch(spec)
    lesson = parse_lesson(HEAD + STEP.replace('"Look."', f'"{{prev.share:{spec}}}"'), "x")
    assert PLACEHOLDER.search(lesson.steps[0].explain)


def test_the_formats_the_shipped_lessons_use_are_all_allowed():
    files = sorted((ROOT / "teaching" / "bundled").glob("*.toml"))
    specs = {spec for path in files + [ROOT / "teaching" / "example_lesson.toml"]
             for _, _, spec in PLACEHOLDER.findall(path.read_text())}
    assert {".0%", ".2f"} <= specs
    assert all(FORMAT_SPEC.fullmatch(spec) for spec in specs), specs


def test_fill_refuses_a_width_even_from_text_that_skipped_the_parser():
    with pytest.raises(FactError, match="never a width"):
        fill("{prev.share:099999999}", {"prev": {"share": 0.5}})


def test_filled_texts_stop_at_the_step_limit_before_they_are_built():
    facts = {"run": {"first": "w" * 1_000}}
    text = "{run.first} " * 60  # 60 kB once filled: within the limit alone
    assert len(fill(text, facts)) == 60 * 1_001
    with pytest.raises(FactError, match=f"longer than {MAX_STEP_CHARS:,} characters"):
        fill_all({"explain": text, "reveal": text}, facts)  # 120 kB together
    with pytest.raises(FactError, match="longer than"):
        fill("{run.first}" * 200, facts)


def test_a_step_with_more_words_than_the_limit_is_refused_at_its_line():
    big = "w" * 19_000
    question = ('\n[steps.question]\nkind = "choice"\nprompt = "P"\nanswer = "a"\noptions = ['
                + ", ".join(f'"{c}{big}"' for c in "abcdefg") + ', "a"]\n')
    with pytest.raises(LessonError) as caught:
        parse_lesson(HEAD + STEP + question, "x")
    assert caught.value.line == 5, caught.value
    assert f"at most {MAX_STEP_CHARS:,}" in caught.value.problem


def test_quotes_and_comments_do_not_fool_the_scanner():
    tricky = ('explain = """[[[[[[[[[[ a.a.a.a.a.a.a.a.a.a {{{{{{{{{{ ""quoted"" """"\n'
              "# [[[[[[[[[[ a.a.a.a.a.a.a.a.a.a\n"
              "[steps.question]\nkind = 'choice'\nprompt = '[[[[[[[[[[[[ a.a.a.a.a.a.a.a.a.a'\n"
              'options = ["a\\\\", \'b\\\', "c.c.c.c.c.c.c.c.c.c"]\nanswer = "a\\\\"\n'
              "reveal = '''it's a.a.a.a.a.a.a.a.a.a [[[[[[[[[['''\n")
    lesson = parse_lesson(HEAD + STEP.replace('explain = "Look."\n', tricky), "x")
    assert lesson.steps[0].question.options[1] == "b\\"
    assert lesson.steps[0].explain.startswith("[[[[[[[[[[") and lesson.steps[0].explain.endswith(
        '""quoted"" "')
    # ...and what follows a tricky string is still counted
    deep = HEAD + STEP + "x = ['''it''''', \"a\\\\\", " + "[" * 20 + "]" * 20 + "]\n"
    with pytest.raises(LessonError, match="nested more than"):
        parse_lesson(deep, "x")


def _minilm_runner(minilm):
    def runner(model, text, pair):
        return minilm, minilm.run(text, pair or None)
    return runner


def test_a_step_whose_facts_fill_past_the_limit_is_a_message_naming_its_line(minilm):
    from teaching.resolve import step_texts

    long = json.dumps("{rows.summary}" * 1_428)  # 19,992 characters, ~38,500 once filled
    question = (f'\n[steps.question]\nkind = "choice"\nprompt = {long}\n'
                f'options = [{long}, {long}]\nanswer = {long}\n')
    source = HEAD + STEP.replace('"Look."', long) + question
    step = parse_lesson(source, "x").steps[0]  # within the limit as written
    with pytest.raises(FactError) as caught:
        step_texts(step, _minilm_runner(minilm), with_answer=False)
    assert str(caught.value).startswith("line 5:"), caught.value
    assert f"longer than {MAX_STEP_CHARS:,} characters" in str(caught.value)


CELL = ('\n[steps.question]\nkind = "cell"\nprompt = "Which key?"\nrow = "{row}"\n'
        'reveal = "“{{cell.token}}” looks hardest at “{{cell.brightest}}”."\n')


@pytest.mark.parametrize("with_answer", [False, True], ids=["asked", "answered"])
def test_a_cell_question_whose_row_is_not_in_the_text_is_a_message_naming_the_line(
        minilm, with_answer):
    from teaching.resolve import step_texts

    runner = _minilm_runner(minilm)
    step = parse_lesson(HEAD + STEP + CELL.format(row="dog"), "x").steps[0]
    with pytest.raises(FactError) as caught:
        step_texts(step, runner, with_answer=with_answer)
    assert str(caught.value).startswith("line 5:"), caught.value
    assert "row of “dog”" in str(caught.value) and "no such word" in str(caught.value)
    good = parse_lesson(HEAD + STEP + CELL.format(row="mat"), "x").steps[0]
    _, texts, _ = step_texts(good, runner)
    assert texts["row"] == "mat" and texts["reveal"].startswith("“mat” looks hardest at “")
