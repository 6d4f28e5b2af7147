"""Where lessons come from: the bundled ones, the operator's folder, and this browser session's
uploads (never shared with other sessions, never read from a path a user typed when hosted)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from teaching.format import (
    MAX_LESSON_BYTES, Lesson, LessonError, ModelShape, check_models, parse_lesson,
)

from server import settings

from .cache import get_model

BUNDLED_DIR = Path(__file__).resolve().parent.parent / "teaching" / "bundled"
EXAMPLE_FILE = BUNDLED_DIR.parent / "example_lesson.toml"  # shown on the Teach page
MAX_FOLDER_FILES = 100
UPLOADS_KEY = "lesson_uploads"  # session state: lesson id -> Lesson
FOLDER_KEY = "teach_folder"  # session state: a lessons folder typed locally (never hosted)


@dataclass(frozen=True)
class Broken:
    """A lesson file that did not load: its name and what is wrong (with the line)."""

    name: str
    problem: str


def model_shape(name: str) -> ModelShape:
    """Layers and heads of a model, loading it if needed (ValueError with a reason)."""
    cfg = get_model(name).model.cfg
    return ModelShape(cfg.n_layers, cfg.n_heads)


def read_lesson(data: bytes, name: str, origin: str, check: bool = True) -> Lesson:
    """Parse and check a lesson file; LessonError names the line and the problem. `check`
    loads each model the lesson names to check it and its layer and head ranges."""
    lesson = parse_lesson(data, Path(name).stem, origin)
    if check:
        check_models(lesson, model_shape, settings.allowed_models())
    return lesson


def _read_folder(folder: Path, origin: str,
                 check: bool = True) -> tuple[list[Lesson], list[Broken]]:
    lessons, broken = [], []
    try:
        files = sorted(folder.glob("*.toml"))[:MAX_FOLDER_FILES]
    except OSError as exc:
        return [], [Broken(folder.name, f"the folder cannot be read ({exc.strerror})")]
    for path in files:
        try:
            if path.stat().st_size > MAX_LESSON_BYTES:
                raise LessonError(0, f"the file is {path.stat().st_size:,} bytes; a lesson may be "
                                  f"at most {MAX_LESSON_BYTES:,} bytes")
            lessons.append(read_lesson(path.read_bytes(), path.name, origin, check))
        except (LessonError, OSError) as exc:
            broken.append(Broken(path.name, str(exc)))
    return lessons, broken


@st.cache_resource(show_spinner=False)
def bundled() -> list[Lesson]:
    """The lessons that ship with the app, parsed once (a broken one is a bug: the tests load
    and check them all against the bundled models)."""
    lessons, broken = _read_folder(BUNDLED_DIR, "bundled", check=False)
    if broken:
        raise RuntimeError(f"a bundled lesson is broken: {broken[0]}")
    return lessons


@st.cache_resource(ttl=60, show_spinner=False)
def _folder(path: str) -> tuple[list[Lesson], list[Broken]]:
    folder = Path(path)
    if not folder.is_dir():
        return [], [Broken(folder.name or path, "the lessons folder does not exist")]
    return _read_folder(folder, "folder")


def catalogue() -> tuple[dict[str, Lesson], list[Broken]]:
    """Every lesson this session may open, by id, and the files that did not load."""
    allowed = settings.allowed_models()
    found: dict[str, Lesson] = {lesson.id: lesson for lesson in bundled()
                                if allowed is None or lesson.models() <= set(allowed)}
    broken: list[Broken] = []
    folders = [settings.lessons_dir()]
    if not settings.hosted():
        folders.append(st.session_state.get(FOLDER_KEY, "").strip())
    for folder in filter(None, folders):
        lessons, problems = _folder(folder)
        found.update({lesson.id: lesson for lesson in lessons})
        broken += problems
    found.update(st.session_state.get(UPLOADS_KEY, {}))
    return found, broken


def add_upload(data: bytes, name: str) -> Lesson:
    """A lesson uploaded in this session (only this session sees it)."""
    lesson = read_lesson(data, name, "upload")
    st.session_state.setdefault(UPLOADS_KEY, {})[lesson.id] = lesson
    return lesson
