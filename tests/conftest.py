"""Shared test setup: offline Hugging Face, the repository on sys.path, and session fixtures.

Tiny random-weight checkpoints are built once per session (a few hundred milliseconds each) and
the real bundled MiniLM is loaded once, so the model tests stay fast on a small machine.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

# Before anything imports transformers or huggingface_hub: never touch the network.
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ["TRANSFORMERS_OFFLINE"] = "1"

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # bare `pytest` (as CI runs it) does not add the working dir
    sys.path.insert(0, str(ROOT))

import pytest  # noqa: E402

import tiny_models  # noqa: E402

BUILDERS = {
    "bert": tiny_models.make_bert,
    "roberta": tiny_models.make_roberta,
    "gpt2": tiny_models.make_gpt2,
    "llama": tiny_models.make_llama,
}


@pytest.fixture(scope="session")
def tiny_dirs(tmp_path_factory) -> dict[str, Path]:
    """One saved checkpoint directory per family, shared read-only by every test."""
    root = tmp_path_factory.mktemp("tiny_models")
    return {name: build(root / name) for name, build in BUILDERS.items()}


@pytest.fixture(scope="session")
def tiny_models_loaded(tiny_dirs):
    """family -> LoadedModel, loaded through load_model(str(path)) like a user's directory."""
    from model import load_model

    return {name: load_model(str(path)) for name, path in tiny_dirs.items()}


@pytest.fixture(scope="session")
def minilm():
    from model import load_model

    return load_model("minilm")


@pytest.fixture(scope="session")
def tiny_chars():
    """The bundled character-level decoder, loaded once."""
    from model import load_model

    return load_model("tiny-chars")


@pytest.fixture(scope="session")
def minilm_hf():
    """The same bundled checkpoint through transformers, for end-to-end parity."""
    from transformers import AutoModel, AutoTokenizer

    from model.registry import BUNDLED

    path = str(BUNDLED["minilm"]())
    model = AutoModel.from_pretrained(path, attn_implementation="eager").eval()
    return model, AutoTokenizer.from_pretrained(path)


LAYERS = ("unit", "parity", "app", "browser")  # one folder each; `pytest -m "not browser"`


def pytest_collection_modifyitems(items) -> None:
    """Every test is marked with its folder: unit, parity, app or browser."""
    for item in items:
        folder = Path(str(item.fspath)).parent.name
        if folder in LAYERS:
            item.add_marker(getattr(pytest.mark, folder))
