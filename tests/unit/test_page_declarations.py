"""Every page is declared once (teaching/pages.py): the files, the README, the widget keys and
the link keys all follow from the declarations, and nothing else types a page's keys."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from page_files import code_files, page_names
from teaching.pages import BY_PATH, LESSON_PAGES, PAGE_SPECS, PageSpec, Setting

ROOT = Path(__file__).resolve().parents[2]
SIDEBAR_PARAMS = {"model", "text", "pair", "textz", "pairz", "projector", "lesson"}


def _readme_rows() -> list[str]:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    start = lines.index("| page | what it shows |") + 2
    rows = []
    for line in lines[start:]:
        if not line.startswith("| "):
            break
        rows.append(line.split(" | ")[0].removeprefix("| "))
    return rows


def test_the_readme_page_table_is_the_declared_pages_in_order():
    wanted = [f"{spec.title} (`{'/' if i == 0 else '/' + spec.path}`)"
              for i, spec in enumerate(PAGE_SPECS)]
    assert _readme_rows() == wanted


def test_the_readme_names_every_page_a_lesson_step_can_open():
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = re.search(r"Each step opens one\npage of the app \((.*?)\) with a model",
                       text, re.S).group(1)
    assert set(re.findall(r"`([a-z-]+)`", listed)) == set(LESSON_PAGES)


def test_every_page_file_is_declared_and_every_declaration_has_its_file():
    assert set(page_names()) == {spec.module for spec in PAGE_SPECS}
    assert len(BY_PATH) == len(PAGE_SPECS)  # no path declared twice


@pytest.mark.parametrize("spec", PAGE_SPECS, ids=lambda s: s.path)
def test_keys_and_link_keys_are_unique_and_leave_the_sidebar_its_own(spec):
    urls = [s.url for s in spec.settings]
    assert len(set(urls)) == len(urls)
    assert not set(urls) & SIDEBAR_PARAMS
    keys = [spec.key(s.name) for s in spec.settings]
    assert len(set(keys)) == len(keys) and all(k.startswith(spec.prefix + "_") for k in keys)
    with pytest.raises(KeyError):
        spec.key("not declared")
    for setting in spec.settings:  # a declared default is a value the setting accepts
        if setting.default is not None:
            assert setting.check(setting.default) == setting.default or setting.kind == "heads"


@pytest.mark.parametrize("spec", [BY_PATH[p] for p in LESSON_PAGES], ids=lambda s: s.path)
def test_a_lesson_steps_link_names_every_setting_apart_from_the_lessons_own(spec):
    """/lessons?lesson=<id>&step=<n>&<a setting moved in the step>: the walkthrough's own
    "step" is "wkstep" there; every other setting keeps its page link key."""
    from ui.lesson_step import LESSON_LINK_KEYS, step_link_key

    keys = [step_link_key(spec, s) for s in spec.settings]
    assert len(set(keys)) == len(keys)
    assert not set(keys) & (SIDEBAR_PARAMS | set(LESSON_LINK_KEYS))
    assert [k for k, s in zip(keys, spec.settings) if k != s.url] == (
        ["wkstep"] if spec.path == "walkthrough" else [])


def test_no_page_or_glue_module_types_a_page_settings_key():
    """Pages reach their settings through ui/view_state.py, by declared name."""
    keys = {spec.key(name) for spec in PAGE_SPECS for name in spec.by_name}
    found = []
    for path in code_files() + sorted((ROOT / "ui").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        found += [f"{path.name}: {key}" for key in keys
                  if re.search(rf"[\"']{key}[\"']|\b{key}=", text)]
    assert found == []


@pytest.mark.parametrize(("setting", "value", "text"), [
    (Setting("n", "int", 1, minimum=1, maximum=200, url="n"), 17, "17"),
    (Setting("t", "float", 1.0, minimum=0.05, maximum=3.0, url="t"), 0.25, "0.25"),
    (Setting("b", "bool", False, url="b"), True, "1"),
    (Setting("c", "choice", 64, (4, 64, 256), url="c"), 256, "256"),
    (Setting("s", "text", url="s"), "Ça va? & = ?", "Ça va? & = ?"),
    (Setting("h", "heads", [], url="h"), [(0, 1), (5, 11)], "0.1,5.11"),
])
def test_a_setting_goes_into_a_link_and_back(setting, value, text):
    assert setting.to_url(value) == text
    assert setting.from_url(text) == value


@pytest.mark.parametrize(("setting", "raw"), [
    (Setting("n", "int", 1, minimum=1, maximum=200, url="n"), "201"),
    (Setting("n", "int", 1, minimum=1, maximum=200, url="n"), "²"),
    (Setting("n", "int", 1, minimum=1, maximum=200, url="n"), "9" * 5000),
    (Setting("t", "float", 1.0, minimum=0.05, maximum=3.0, url="t"), "nan"),
    (Setting("b", "bool", False, url="b"), "yes"),
    (Setting("c", "choice", 64, (4, 64), url="c"), "65"),
    (Setting("h", "heads", [], url="h"), "0.1,x"),
    (Setting("h", "heads", [], url="h"), "-1.2"),
])
def test_a_link_value_a_setting_cannot_hold_is_left_out(setting, raw):
    assert setting.from_url(raw) is None


def test_a_bad_declaration_is_refused():
    with pytest.raises(ValueError):
        Setting("x", "colour")
    spec = PageSpec("p", "p", "P", "S", "", "p", (Setting("a", "bool", url="a"),))
    assert spec.key("a") == "p_a"


def test_pages_reach_their_link_only_through_the_view_state_and_nothing_execs_a_page():
    for path in code_files():
        assert "urlstate" not in path.read_text(encoding="utf-8"), path.name
    running_code = re.compile(r"\brunpy\b|\brun_path\(|(?<![\w.])(exec|eval|compile)\(")
    for path in [ROOT / "app.py", *sorted((ROOT / "ui").glob("*.py")),
                 *code_files()]:
        assert not running_code.search(path.read_text(encoding="utf-8")), path.name


def test_the_check_for_running_code_would_see_it():
    running_code = re.compile(r"\brunpy\b|\brun_path\(|(?<![\w.])(exec|eval|compile)\(")
    assert all(running_code.search(s) for s in ("import runpy", "exec(code)",
                                                "x = compile(src, 'f', 'exec')"))
    assert not running_code.search('COMMENT = re.compile("#")')


# Imports page modules in a fresh process with no Streamlit script run: any Streamlit element
# or widget is refused, and Streamlit warns on stderr when something reads the session.
IMPORT_PAGES = r"""
import importlib, inspect, json, sys
from streamlit.delta_generator import DeltaGenerator

def refuse(self, *args, **kwargs):
    raise RuntimeError("a Streamlit element was drawn on import")

DeltaGenerator._enqueue = refuse
found = {}
for name in sys.argv[1:]:
    render = getattr(importlib.import_module(name), "render", None)
    found[name] = callable(render) and list(inspect.signature(render).parameters) == [
        "selection"]
print(json.dumps(found))
"""


def _import_problems(modules: list[str], where: Path) -> list[str]:
    """What importing these modules did that a page's import must not do (empty: nothing)."""
    out = subprocess.run([sys.executable, "-c", IMPORT_PAGES, *modules], cwd=where,
                         capture_output=True, text=True, timeout=300,
                         env=dict(os.environ, HF_HUB_OFFLINE="1"))
    if out.returncode != 0:
        return [out.stderr[-2000:]]
    problems = [f"{name}: no render(selection)"
                for name, ok in json.loads(out.stdout.strip().splitlines()[-1]).items() if not ok]
    return problems + [line for line in out.stderr.splitlines()
                       if "ScriptRunContext" in line or "Session state" in line]


def test_every_page_module_imports_without_drawing_and_has_a_render_function():
    """A page draws only when its render() runs: importing it creates no element or widget
    and touches no session (that would need a script run), and render takes the sidebar's
    choice."""
    assert _import_problems([f"app_pages.{spec.module}" for spec in PAGE_SPECS], ROOT) == []


@pytest.mark.parametrize("source", [
    "import streamlit as st\nst.title('Drawn')\ndef render(selection):\n    pass\n",
    "import streamlit as st\nX = st.session_state.get('x')\ndef render(selection):\n    pass\n",
    "import streamlit as st\ndef render():\n    pass\n",
], ids=["draws", "reads-the-session", "render-takes-no-selection"])
def test_a_page_that_works_on_import_is_caught(tmp_path, source):
    """The check above sees a page that draws or reads the session at import time, as a page
    written as a script does."""
    (tmp_path / "scripted.py").write_text(source, encoding="utf-8")
    assert _import_problems(["scripted"], tmp_path) != []
