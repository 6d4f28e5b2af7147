"""Loading without holding the weights twice (model/materialize.py): the safetensors reader,
parameters built on the meta device in this thread only, tied weights kept tied, a bfloat16
checkpoint loaded exactly, and the progress of the weights going in. The memory it saves is
measured in bench/bench_load_memory.py (BENCHMARKS.md)."""

from __future__ import annotations

import json
import shutil
import struct
import threading

import pytest
import torch
from safetensors.torch import load_file, save_file
from torch import nn

import tiny_models
from model import ModelLoadError, load_model
from model.materialize import params_on_meta, read_safetensors


def test_the_reader_gives_what_safetensors_gives(tmp_path):
    tensors = {"w": torch.randn(3, 5).to(torch.bfloat16), "b": torch.randn(7),
               "ids": torch.arange(4), "half": torch.randn(2, 2).half(),
               "empty": torch.zeros(0, 3), "flag": torch.tensor([True, False])}
    save_file(tensors, str(tmp_path / "m.safetensors"), metadata={"format": "pt"})
    ours, theirs = read_safetensors(tmp_path / "m.safetensors"), load_file(
        str(tmp_path / "m.safetensors"))
    assert sorted(ours) == sorted(theirs)
    for name in theirs:
        assert ours[name].dtype == theirs[name].dtype and torch.equal(ours[name], theirs[name])
    # each tensor owns its memory: no two share a storage
    assert len({t.untyped_storage().data_ptr() for t in ours.values() if t.numel()}) == 5


@pytest.mark.parametrize("offsets", [[0, 400], [-8, 8], [8, 0]])
def test_offsets_outside_the_file_are_refused(tmp_path, offsets):
    header = json.dumps({"w": {"dtype": "F32", "shape": [2], "data_offsets": offsets}}).encode()
    (tmp_path / "m.safetensors").write_bytes(struct.pack("<Q", len(header)) + header + b"\0" * 8)
    with pytest.raises(ValueError, match="offsets"):
        read_safetensors(tmp_path / "m.safetensors")


def test_a_broken_weights_file_in_a_folder_gives_a_message(tiny_dirs, tmp_path):
    folder = tmp_path / "bert"
    shutil.copytree(tiny_dirs["bert"], folder)
    (folder / "model.safetensors").write_bytes(b"\xff" * 64)
    with pytest.raises(ModelLoadError, match="could not read the weights"):
        load_model(str(folder))


def test_meta_parameters_only_in_this_thread_and_only_inside_the_block():
    seen = {}

    def elsewhere():
        seen["other"] = nn.Linear(4, 4).weight.device.type

    with params_on_meta():
        inside = nn.Linear(4, 4)
        thread = threading.Thread(target=elsewhere)
        thread.start()
        thread.join()
    assert inside.weight.device.type == "meta" and seen["other"] == "cpu"
    assert nn.Linear(4, 4).weight.device.type == "cpu"


def test_a_bfloat16_checkpoint_loads_exactly_with_its_ties_and_progress(tmp_path):
    folder = tiny_models.make_gpt2(tmp_path / "gpt2")
    state = load_file(str(folder / "model.safetensors"))
    save_file({k: v.to(torch.bfloat16) for k, v in state.items()},
              str(folder / "model.safetensors"), metadata={"format": "pt"})
    steps, read = [], []
    loaded = load_model(str(folder), progress=lambda stage, done, total: (
        steps if stage == "loading" else read).append((done, total)))
    model = loaded.model
    assert model.unembed.weight is model.embed.W_E.weight  # tied: one parameter
    assert all(p.dtype == torch.float32 and p.device.type == "cpu" for p in model.parameters())
    expected = state["transformer.wte.weight"].to(torch.bfloat16).float()
    assert torch.equal(model.embed.W_E.weight, expected)
    done = [d for d, _ in steps]
    total = sum(p.numel() for p in model.parameters())
    assert done == sorted(done) and steps[-1] == (total, total) and len(steps) > 10
    size = (folder / "model.safetensors").stat().st_size  # reading: bytes, up to the file's end
    assert [d for d, _ in read] == sorted(d for d, _ in read) and read[-1] == (size, size)
    assert loaded.run("The cat sat on the mat.").logits.isfinite().all()


def test_attention_weights_keep_the_linear_layout_through_loading(tiny_models_loaded):
    # layers.py stores W_Q, W_K, W_V and W_O as nn.Linear's [out, in] matrix seen per head, so
    # the forward pass multiplies by the stored matrix with no copy; fill() must keep that
    # layout when it puts the checkpoint's (contiguous) tensors in.
    for family in ("bert", "llama"):
        attn = tiny_models_loaded[family].model.blocks[0].attn
        for w in (attn.W_Q, attn.W_K, attn.W_V):
            n_heads, d_model, d_head = w.shape
            rows = w.transpose(1, 2).reshape(n_heads * d_head, d_model)
            assert not w.is_contiguous() and rows.data_ptr() == w.data_ptr()  # a view
        w_o = attn.W_O.reshape(-1, attn.W_O.shape[-1]).T  # [d_model, head*d_head]
        assert w_o.is_contiguous() and w_o.data_ptr() == attn.W_O.data_ptr()
