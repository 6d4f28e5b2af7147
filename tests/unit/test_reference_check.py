"""“Check these numbers” (analysis/reference_check.py): passes on the real MiniLM, catches a
deliberately perturbed weight, and gives our own models a statement instead of a table."""

from __future__ import annotations

import math

import pytest
from safetensors.torch import load_file, save_file

import tiny_models
from analysis.ablation import model_directory
from analysis.reference_check import TOLERANCE, reference_check
from model import load_model

TEXT = "The cat sat on the mat."


def test_minilm_agrees_with_hugging_face_within_the_tolerance(minilm):
    check = reference_check(minilm, model_directory("minilm"), TEXT, "A dog chased the ball.")
    assert check.supported and check.reference == "BertModel"
    assert [r.layer for r in check.rows] == ["embeddings"] + [f"layer {i}" for i in range(6)]
    assert check.passed and check.worst <= TOLERANCE
    assert all(r.attention is not None for r in check.rows[1:])
    assert "same" in check.statement and "tokens" in check.statement
    table = check.table()
    assert table[0]["attention"] is None and all(row["within 1e-4"] == "✓" for row in table)


@pytest.mark.parametrize("family", ["gpt2", "bert"])
def test_a_perturbed_weight_is_reported_from_its_layer_on(family, tmp_path):
    directory = getattr(tiny_models, f"make_{family}")(tmp_path / family)
    ours = load_model(str(directory))  # our model keeps the original weights
    clean = reference_check(ours, directory, TEXT)
    assert clean.passed, clean.table()
    # Now the files HF reads differ from ours in one weight of layer 1's attention.
    weights = load_file(str(directory / "model.safetensors"))
    name = next(n for n in weights if (".1.attn.c_attn.weight" in n or
                                       ".1.attention.self.query.weight" in n))
    weights[name] = weights[name] + 0.05
    save_file(weights, str(directory / "model.safetensors"), metadata={"format": "pt"})
    check = reference_check(ours, directory, TEXT)
    assert check.supported and not check.passed
    by_layer = {r.layer: r for r in check.rows}
    assert by_layer["embeddings"].passed and by_layer["layer 0"].passed
    assert by_layer["layer 1"].attention > TOLERANCE and not by_layer["layer 1"].passed
    assert check.table()[2]["within 1e-4"] == "✗"
    assert math.isfinite(check.worst) and check.worst > TOLERANCE


@pytest.mark.parametrize("name", ["tiny-chars", "tiny-reverse"])
def test_our_own_models_get_a_statement_not_a_table(name):
    loaded = load_model(name)
    check = reference_check(loaded, model_directory(name), "abc")
    assert not check.supported and not check.passed and check.rows == []
    assert "own models" in check.statement and "Hugging Face has no code" in check.statement


def test_no_folder_means_no_check(minilm):
    check = reference_check(minilm, None, TEXT)
    assert not check.supported and "no model folder" in check.statement
