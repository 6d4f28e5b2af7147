"""The start page's stored example (ui/start_example.py): the model's own numbers, checked
against a fresh run, and readable without torch so the first page draws before it loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

os.environ["HF_HUB_OFFLINE"] = "1"
from model import load_model  # noqa: E402
from ui import start_example  # noqa: E402
from ui.examples import SHORT  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


def test_the_stored_example_is_what_the_model_computes_now():
    shown = start_example.stored()
    assert shown is not None, "assets/start_example.json is missing: python -m ui.start_example"
    loaded = load_model(start_example.EXAMPLE_MODEL)
    fresh = start_example.example(loaded, loaded.run(SHORT))
    assert shown["tokens"] == fresh["tokens"] and shown["text"] == SHORT
    assert (shown["layer"], shown["head"]) == (fresh["layer"], fresh["head"])
    assert shown["share"] == pytest.approx(fresh["share"], abs=1e-6)
    np.testing.assert_allclose(shown["pattern"], fresh["pattern"], atol=2e-6)
    trace = loaded.run(SHORT)
    np.testing.assert_allclose(shown["pattern"], trace.attentions[shown["layer"], shown["head"]],
                               atol=2e-6)


@pytest.mark.parametrize("content", [None, "{not json", json.dumps({"model": "minilm"}),
                                     "stale", "ragged"])
def test_a_missing_broken_or_stale_file_is_not_used(tmp_path, monkeypatch, content):
    good = json.loads(start_example.EXAMPLE_FILE.read_text())
    path = tmp_path / "example.json"
    if content == "stale":
        content = json.dumps(good | {"text": "Another sentence."})
    elif content == "ragged":
        content = json.dumps(good | {"pattern": good["pattern"][:-1]})
    if content is not None:
        path.write_text(content)
    monkeypatch.setattr(start_example, "EXAMPLE_FILE", path)
    assert start_example.stored() is None


def test_the_start_page_draws_before_torch_is_imported():
    """What app.py imports before it runs the start page, and what the start page imports,
    load neither torch nor transformers (a fresh process, so nothing was imported before)."""
    code = ("import sys\n"
            "from ui import (busy, lesson_link, page_style, projector, sessions, settings,\n"
            "                teacher_tools, uploads, urlstate)\n"
            "import ui.charts, ui.start_example, viz.attention, viz.labels\n"
            "assert ui.start_example.stored() is not None\n"
            "print(sorted(m for m in ('torch', 'transformers') if m in sys.modules))\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, HF_HUB_OFFLINE="1"), timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
    start = (ROOT / "app_pages" / "start.py").read_text()
    top = start[:start.index("def ")]  # the page's own module-level imports
    assert "torch" not in top and "ui.cache" not in top and "from model" not in top
