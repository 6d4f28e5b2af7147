"""The project's layout holds: each folder is one layer, imports only go down, no cycles, and
files and functions stay small enough to read."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Each layer and the project layers it may import (itself included). Everything else that
# is ours is "up" and refused. Third-party imports are free, except the ones listed below.
ALLOWED = {
    "model": {"model"},  # the engine: config, hooks, layers, loading, running
    "analysis": {"model", "analysis"},  # numbers computed from runs
    "training": {"model", "analysis", "training"},  # the loop, the tasks, the save format
    "teaching": {"model", "analysis", "training", "teaching"},  # lesson files and their facts
    "viz": {"viz"},  # figures: arrays in, plotly out
    "ui": {"model", "analysis", "training", "teaching", "viz", "ui"},  # Streamlit glue
    "app_pages": {"model", "analysis", "training", "teaching", "viz", "ui"},  # one file per page
    "app": {"ui"},  # app.py: the router
}
NO_STREAMLIT = {"model", "analysis", "training", "teaching", "viz"}
NO_TORCH = {"viz"}
MAX_FILE_LINES, MAX_FUNCTION_LINES = 400, 80
CHECKED_FOR_SIZE = ("model", "analysis", "training", "teaching", "viz", "ui", "app_pages", "bench",
                    "tests")


def _layer(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return "app" if rel.parts == ("app.py",) else rel.parts[0]


def _module(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def _sources() -> list[Path]:
    return [ROOT / "app.py"] + [p for layer in ALLOWED if layer != "app"
                                for p in sorted((ROOT / layer).rglob("*.py"))]


def imports_of(path: Path) -> set[str]:
    """Every module this file imports, anywhere in it (lazy imports inside functions too),
    with relative imports resolved."""
    package = _module(path).split(".")
    if path.name != "__init__.py":
        package = package[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}  # from pkg import mod
    return found


def graph(paths: list[Path]) -> dict[str, set[str]]:
    """Our modules -> our modules they import."""
    ours = {_module(p): p for p in paths}
    return {name: {m for m in imports_of(path) if m in ours and m != name}
            for name, path in ours.items()}


def find_cycle(edges: dict[str, set[str]]) -> list[str] | None:
    """One import cycle as a list of modules (first == last), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(edges.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state and (cycle := visit(nxt)):
                return cycle
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(edges):
        if node not in state and (cycle := visit(node)):
            return cycle
    return None


def _own_page_folder(path: Path, module: str) -> bool:
    """A page's folder (app_pages/<page>/) imports its own modules; no page imports another."""
    rel = path.relative_to(ROOT).parts
    return (len(rel) == 3 and rel[0] == "app_pages"
            and module.split(".")[:2] == ["app_pages", rel[1]])


def upward_imports(paths: list[Path]) -> list[str]:
    wrong = []
    for path in paths:
        layer = _layer(path)
        for module in sorted(imports_of(path)):
            top = module.split(".")[0]
            if _own_page_folder(path, module):
                continue
            if top in ALLOWED and top != "app" and top not in ALLOWED[layer]:
                wrong.append(f"{path.relative_to(ROOT)} imports {module} ({layer} -> {top})")
            if layer in NO_STREAMLIT and top == "streamlit":
                wrong.append(f"{path.relative_to(ROOT)} imports streamlit")
            if layer in NO_TORCH and top == "torch":
                wrong.append(f"{path.relative_to(ROOT)} imports torch")
    return wrong


def test_imports_only_go_down():
    assert upward_imports(_sources()) == []


def test_a_page_folder_imports_its_own_modules_and_no_other_page(tmp_path, monkeypatch):
    for name, text in {"app_pages/__init__.py": "", "app_pages/a/__init__.py": "",
                       "app_pages/a/page.py": "from .parts import x\nfrom app_pages.b import y\n",
                       "app_pages/a/parts.py": "", "app_pages/b.py": ""}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert upward_imports([tmp_path / "app_pages/a/page.py"]) == [
        "app_pages/a/page.py imports app_pages.b (app_pages -> app_pages)",
        "app_pages/a/page.py imports app_pages.b.y (app_pages -> app_pages)"]


def test_there_is_no_import_cycle():
    assert find_cycle(graph(_sources())) is None


def test_the_checks_catch_a_cycle_and_an_upward_import(tmp_path, monkeypatch):
    """The two checks above can fail: a made-up tree with a cycle and an engine module that
    imports the app's glue."""
    for name, text in {"model/__init__.py": "", "model/a.py": "from .b import x\n",
                       "model/b.py": "from model import a\nimport ui.cache\n",
                       "ui/__init__.py": "", "ui/cache.py": ""}.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    paths = sorted(tmp_path.rglob("*.py"))
    assert find_cycle(graph(paths)) == ["model.a", "model.b", "model.a"]
    assert upward_imports(paths) == ["model/b.py imports ui.cache (model -> ui)"]


@pytest.mark.parametrize("folder", CHECKED_FOR_SIZE)
def test_files_and_functions_stay_small(folder):
    too_long = []
    for path in sorted((ROOT / folder).rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        rel = path.relative_to(ROOT)
        if len(text.splitlines()) > MAX_FILE_LINES:
            too_long.append(f"{rel}: {len(text.splitlines())} lines")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    too_long.append(f"{rel}:{node.lineno} {node.name}(): {lines} lines")
    assert too_long == []
