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
    # the live class as its own domain (what a class learned); lessons never import it
    "classroom": {"model", "analysis", "training", "teaching", "classroom"},
    # the process's runtime (run queue, memory, sessions, uploads, training runs): draws nothing
    "server": {"model", "analysis", "training", "server"},
    "ui": {"model", "analysis", "training", "teaching", "viz", "server", "classroom", "ui"},
    "app_pages": {"model", "analysis", "training", "teaching", "viz", "server", "classroom",
                  "ui"},  # the pages
    "app": {"server", "ui"},  # app.py: the router
}
NO_STREAMLIT = {"model", "analysis", "training", "teaching", "viz", "classroom"}
# server/ may ask Streamlit's runtime about sessions, the request and the secrets, but draws
# nothing: of `streamlit` itself it reads only these names, of its submodules only the runtime.
SERVER_READS = {"context", "secrets", "runtime"}
NO_TORCH = {"viz"}
MAX_FILE_LINES, MAX_FUNCTION_LINES = 400, 80
CHECKED_FOR_SIZE = ("model", "analysis", "training", "teaching", "viz", "classroom", "server", "ui",
                    "app_pages", "bench", "tests")


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


def _script_dirs(path: Path) -> list[str]:
    """Where a bare `import x` of this file may land besides the root: a benchmark runs as
    `python bench/x.py` (bench/ on sys.path), a test under pytest has its own folder and tests/
    on sys.path (the rootdir conftest's folder)."""
    rel = path.relative_to(ROOT)
    if rel.parts[0] == "bench":
        return ["bench"]
    if rel.parts[0] == "tests":
        return [".".join(rel.parts[:-1]), "tests"]
    return []


def graph(paths: list[Path]) -> dict[str, set[str]]:
    """Our modules -> our modules they import."""
    ours = {_module(p): p for p in paths}

    def resolve(module: str, path: Path) -> str | None:
        for name in [f"{d}.{module}" for d in _script_dirs(path)] + [module]:
            if name in ours:
                return name
        return None

    edges = {}
    for name, path in ours.items():
        found = {resolve(m, path) for m in imports_of(path)}
        edges[name] = {m for m in found if m and m != name}
    return edges


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


def streamlit_drawing(path: Path) -> list[str]:
    """What a file uses of Streamlit beyond its runtime: `st.<name>` and `from streamlit
    import <name>` outside SERVER_READS, and any submodule but `streamlit.runtime`."""
    wrong, aliases = [], set()
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            aliases |= {a.asname or a.name for a in node.names if a.name == "streamlit"}
            wrong += [a.name for a in node.names if a.name.startswith("streamlit.")
                      and not a.name.startswith("streamlit.runtime")]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "streamlit":
                wrong += [f"streamlit.{a.name}" for a in node.names if a.name not in SERVER_READS]
            elif node.module.startswith("streamlit.") and not node.module.startswith(
                    "streamlit.runtime"):
                wrong.append(node.module)
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name)
                and node.value.id in aliases and node.attr not in SERVER_READS):
            wrong.append(f"streamlit.{node.attr}")
    return [f"{path.relative_to(ROOT)} uses {name}" for name in sorted(set(wrong))]


def test_imports_only_go_down():
    assert upward_imports(_sources()) == []


def test_the_server_draws_nothing():
    assert [w for p in sorted((ROOT / "server").rglob("*.py")) for w in streamlit_drawing(p)] == []


def test_the_server_check_catches_a_drawing(tmp_path, monkeypatch):
    """A server module may read the request and the runtime, but a button is refused."""
    (tmp_path / "server").mkdir()
    path = tmp_path / "server" / "x.py"
    path.write_text("import streamlit as st\nfrom streamlit import runtime\n"
                    "from streamlit.elements import image\n"
                    "ip = st.context.ip_address\nst.button('go')\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert streamlit_drawing(path) == ["server/x.py uses streamlit.button",
                                       "server/x.py uses streamlit.elements"]


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


def _bench_and_tests() -> list[Path]:
    return _sources() + sorted((ROOT / "bench").rglob("*.py")) + sorted(
        (ROOT / "tests").rglob("*.py"))


def test_there_is_no_import_cycle_in_benchmarks_and_tests():
    assert find_cycle(graph(_bench_and_tests())) is None


def test_tests_use_the_harness_never_a_benchmark():
    """bench/ holds benchmark scripts only; what tests and benchmarks share is tests/harness/."""
    edges = graph(_bench_and_tests())
    assert sorted(f"{name} imports {m}" for name, found in edges.items()
                  if name.startswith("tests.") for m in found if m.startswith("bench.")) == []


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


def test_a_cycle_through_a_benchmark_script_is_caught(tmp_path, monkeypatch):
    """A benchmark imports its neighbours by bare name (bench/ is on sys.path when it runs),
    so a cycle through them, and through the harness, is found."""
    for name, text in {"bench/bench_a.py": "import helper\n",
                       "bench/helper.py": "from tests.harness import driver\n",
                       "tests/harness/__init__.py": "",
                       "tests/harness/driver.py": "from bench_a import run\n"}.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    paths = sorted(tmp_path.rglob("*.py"))
    assert find_cycle(graph(paths)) is None  # the harness's bare import is not bench's
    (tmp_path / "tests/harness/driver.py").write_text("from bench.bench_a import run\n")
    assert find_cycle(graph(paths)) == ["bench.bench_a", "bench.helper", "tests.harness.driver",
                                        "bench.bench_a"]


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
