"""An architecture the engine does not know, run through Hugging Face's own code, is sized from
its config before anything is allocated, and whatever Hugging Face's code raises reaches the
user as a message (model/foreign.py)."""

from __future__ import annotations

import json
import shutil

import pytest

import tiny_foreign
from model import ModelLoadError, load_model
from model.allocator import rss_bytes
from model.config import MAX_PARAMS

# BLOOM at these sizes: 64 layers of 12 x 8,192² plus a 250,880-token embedding, ~53.6e9
BIG_BLOOM = dict(hidden_size=8192, n_layer=64, n_head=64, vocab_size=250880)


@pytest.fixture(scope="module")
def bloom_dir(tmp_path_factory):
    return tiny_foreign.make_bloom(tmp_path_factory.mktemp("foreign") / "bloom")


def test_a_config_of_50_billion_parameters_is_refused_before_any_allocation(
        bloom_dir, tmp_path, monkeypatch):
    from transformers import AutoModel

    small = load_model(str(bloom_dir), foreign=True)  # BLOOM's code imported first: code is
    assert small.run("The cat sat.").attentions.shape[:2] == (2, 3)  # not the model's memory
    folder = tmp_path / "huge"
    shutil.copytree(bloom_dir, folder)
    data = json.loads((folder / "config.json").read_text())
    data.update(BIG_BLOOM)
    (folder / "config.json").write_text(json.dumps(data))
    (folder / "model.safetensors").write_bytes(b"\0" * 4)  # the weights file says nothing

    def allocate(*args, **kwargs):
        raise AssertionError("from_pretrained was called: it allocates the whole model")

    monkeypatch.setattr(AutoModel, "from_pretrained", allocate)
    before = rss_bytes()
    with pytest.raises(ModelLoadError, match=r"about 5[0-9]\.\d billion parameters") as refused:
        load_model(str(folder), foreign=True)
    assert rss_bytes() - before < 100 * 2**20
    assert f"{MAX_PARAMS / 1e9:.0f} billion" in str(refused.value)
    assert "GB" in str(refused.value)


def test_an_error_inside_hugging_faces_code_is_a_message(tmp_path):
    lm = load_model(str(tiny_foreign.make_mixtral(tmp_path / "mixtral")), foreign=True)
    with pytest.raises(ValueError, match="Hugging Face's own code for this model .mixtral.") \
            as failed:
        lm.run("The cat sat on the mat.")
    assert type(failed.value) is ValueError and "no attention to show" in str(failed.value)
    assert isinstance(failed.value.__cause__, RuntimeError)
    fits = load_model(str(tiny_foreign.make_mixtral(tmp_path / "fits", 48)), foreign=True)
    assert fits.run("The cat sat on the mat.").attentions.shape[:2] == (2, 4)  # the same code


def test_a_config_hugging_faces_checks_reject_is_a_message(bloom_dir, tmp_path):
    folder = tmp_path / "typo"
    shutil.copytree(bloom_dir, folder)
    data = json.loads((folder / "config.json").read_text())
    data["layer_norm_epsilon"] = "small"  # transformers 5's strict config raises its own kind
    (folder / "config.json").write_text(json.dumps(data))
    with pytest.raises(ModelLoadError, match="does not fit Hugging Face's 'bloom' code"):
        load_model(str(folder), foreign=True)
