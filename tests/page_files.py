"""The app's pages as files: a page is app_pages/<name>.py, or a folder app_pages/<name>/ whose
page.py draws it beside the modules only that page uses."""

from __future__ import annotations

from pathlib import Path

APP_PAGES = Path(__file__).resolve().parents[1] / "app_pages"


def page_names() -> list[str]:
    """Every page module's name (what teaching/pages.py declares as a page's module)."""
    return sorted(p.stem for p in APP_PAGES.iterdir()
                  if p.stem != "__init__" and (p.suffix == ".py" or (p / "page.py").exists()))


def page_file(name: str) -> Path:
    """The file whose render() draws the page."""
    folder = APP_PAGES / name
    return folder / "page.py" if folder.is_dir() else APP_PAGES / f"{name}.py"


def code_files() -> list[Path]:
    """Every Python file of the pages, their own modules included."""
    return sorted(APP_PAGES.rglob("*.py"))
