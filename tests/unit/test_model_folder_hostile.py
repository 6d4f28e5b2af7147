"""Broken or hostile local model folders: every one gives a ModelLoadError that says what is
wrong, before anything big is allocated and without reading a file outside the folder.

Each case here was, before the checks, an uncaught exception (TypeError, AttributeError,
RuntimeError), an attempt to allocate terabytes, a model that loaded anyway, or a read outside
the directory.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import safetensors.torch
import torch
from safetensors.torch import load_file, save_file

from model import ModelLoadError, TransformerConfig, load_model, loading
from model.config import MAX_PARAMS
from model.transformer import HookedTransformer

REVERSE = Path(__file__).resolve().parents[2] / "weights" / "tiny-reverse"
HUGE = 10**12  # vocab_size 10**12 at d_model 32 would be 128 TB of float32


def own_dir(directory: Path, chars: str = "abc ?") -> Path:
    """A tiny directory in this project's own format (what model.train writes)."""
    cfg = TransformerConfig(family="own", positions="sinusoidal", d_model=8, n_heads=2,
                            n_layers=1, n_ctx=16, d_vocab=len(chars), d_mlp=16, has_lm_head=True)
    torch.manual_seed(0)
    model = HookedTransformer(cfg)
    directory.mkdir(parents=True)
    (directory / "config.json").write_text(json.dumps(
        {"model_type": "attention_lab", "config": cfg.to_dict()}))
    save_file({k: v.contiguous() for k, v in model.state_dict().items()},
              str(directory / "model.safetensors"))
    (directory / "tokenizer.json").write_text(json.dumps({"chars": chars, "unk": "?"}))
    return directory


def copy_of(source: Path, directory: Path) -> Path:
    shutil.copytree(source, directory)
    load_model(str(directory))  # intact, the copy loads: the breakage is the cause
    return directory


def edit_json(path: Path, edit) -> None:
    data = json.loads(path.read_text())
    edit(data)
    path.write_text(json.dumps(data))


def _never(*args, **kwargs):
    raise AssertionError("the model was allocated before its config was checked")


@pytest.fixture
def no_allocation(monkeypatch):
    """Building a model fails the test: a refusal must come before any tensor is allocated."""
    monkeypatch.setattr(loading, "HookedTransformer", _never)
    monkeypatch.setattr(loading, "EncoderDecoder", _never)


# ------------------------------------------------------------- 1. the character tokenizer
CHAR_BREAKAGES = {  # what is wrong -> (tokenizer.json content, what the message must say)
    "chars is a number": ({"chars": 5}, "'chars' must be a non-empty string"),
    "chars is a list": ({"chars": ["a", "b", "c", " ", "?"]}, "'chars' must be a non-empty str"),
    "chars is empty": ({"chars": ""}, "'chars' must be a non-empty string"),
    "a repeated character": ({"chars": "abca?"}, r"each character once; repeated: \['a'\]"),
    "too few characters": ({"chars": "ab?"}, r"gives 3 tokens .* vocabulary \(d_vocab\) is 5"),
    "too many characters": ({"chars": "abcde?"}, r"gives 6 tokens"),
    "unk not a character": ({"chars": "abc ?", "unk": "??"}, "'unk' must be a single character"),
    "unk a number": ({"chars": "abc ?", "unk": 3}, "'unk' must be a single character"),
    "unk not in chars": ({"chars": "abc ?", "unk": "#"}, "'unk' must be one of the characters"),
    "not an object": ([1, 2], "expected a JSON object"),
    "no chars": ({"unk": "?"}, "expected a JSON object"),
}


@pytest.mark.parametrize("what", sorted(CHAR_BREAKAGES))
def test_broken_char_tokenizer_file_is_refused(tmp_path, what):
    content, message = CHAR_BREAKAGES[what]
    directory = own_dir(tmp_path / "own")
    load_model(str(directory))
    (directory / "tokenizer.json").write_text(json.dumps(content))
    with pytest.raises(ModelLoadError, match=message) as info:
        load_model(str(directory))
    assert str(directory / "tokenizer.json") in str(info.value)  # names the file


REVERSE_BREAKAGES = {  # the encoder-decoder reads the same file, plus its special characters
    "chars is a number": (lambda d: _tokenizer(d, {"chars": 5}), "'chars' must be a non-empty"),
    "a repeated character": (lambda d: _tokenizer(d, {"chars": "_^$" + "abcdefghij" * 2 + "a?"}),
                             "each character once"),
    "pad missing from chars": (lambda d: _tokenizer(d, {"chars": REVERSE_CHARS[1:]}),
                               r"gives 29 tokens .* \(d_vocab\) is 30"),
    "pad of two characters": (lambda d: edit_json(d / "config.json", lambda c: c["special"].update(
        pad="__")), "the pad token must be one of the characters"),
    "special not an object": (lambda d: edit_json(d / "config.json", lambda c: c.update(
        special="_^$")), '"special" must be an object'),
}
REVERSE_CHARS = "_^$abcdefghijklmnopqrstuvwxyz?"


def _tokenizer(directory: Path, content) -> None:
    (directory / "tokenizer.json").write_text(json.dumps(content))


@pytest.mark.parametrize("what", sorted(REVERSE_BREAKAGES))
def test_broken_encoder_decoder_tokenizer_is_refused(tmp_path, what):
    breakage, message = REVERSE_BREAKAGES[what]
    directory = copy_of(REVERSE, tmp_path / "rev")
    assert json.loads((directory / "tokenizer.json").read_text())["chars"] == REVERSE_CHARS
    breakage(directory)
    with pytest.raises(ModelLoadError, match=message):
        load_model(str(directory))


# ----------------------------------------------------------------------- 2. absurd sizes
@pytest.mark.parametrize("family, field, ours", [
    ("bert", "vocab_size", "d_vocab"), ("gpt2", "vocab_size", "d_vocab"),
    ("llama", "vocab_size", "d_vocab"), ("gpt2", "n_positions", "n_ctx"),
    ("llama", "num_hidden_layers", "n_layers"), ("bert", "intermediate_size", "d_mlp"),
])
def test_absurd_hf_sizes_are_refused_before_allocating(tiny_dirs, tmp_path, no_allocation,
                                                       family, field, ours):
    directory = tmp_path / "model"
    shutil.copytree(tiny_dirs[family], directory)
    edit_json(directory / "config.json", lambda c: c.update({field: HUGE}))
    with pytest.raises(ModelLoadError, match=rf"{ours}=1,000,000,000,000 \(limit [\d,]+\)"):
        load_model(str(directory))


def test_too_many_parameters_in_total_are_refused(tiny_dirs, tmp_path, no_allocation):
    # Each size is plausible on its own; together 2 x 1e6 x 16384 = 3.3e10 embedding parameters
    # (token embedding and LM head), plus the blocks.
    directory = tmp_path / "model"
    shutil.copytree(tiny_dirs["gpt2"], directory)
    edit_json(directory / "config.json", lambda c: c.update(vocab_size=10**6, n_embd=16384))
    with pytest.raises(ModelLoadError, match=r"about [\d.]+e\+10 parameters, most of them in "
                                             r"the token embedding .*limit is 16,000,000,000"):
        load_model(str(directory))


def test_absurd_own_model_sizes_are_refused_before_allocating(tmp_path, no_allocation):
    directory = own_dir(tmp_path / "own")
    edit_json(directory / "config.json", lambda c: c["config"].update(d_vocab=HUGE))
    with pytest.raises(ModelLoadError, match=r"d_vocab=1,000,000,000,000 \(limit"):
        load_model(str(directory))
    edit_json(directory / "config.json", lambda c: c["config"].update(
        d_vocab=5, d_model=4096, n_heads=4, n_layers=200, d_mlp=4096))
    with pytest.raises(ModelLoadError, match="parameters, most of them in the blocks"):
        load_model(str(directory))


def test_absurd_encoder_decoder_sizes_are_refused_before_allocating(tmp_path, no_allocation):
    directory = tmp_path / "rev"
    shutil.copytree(REVERSE, directory)
    edit_json(directory / "config.json", lambda c: [c[k].update(d_vocab=HUGE)
                                                    for k in ("config", "decoder")])
    with pytest.raises(ModelLoadError, match=r"d_vocab=1,000,000,000,000 \(limit"):
        load_model(str(directory))
    # Each half is under the limit (9.7e9 and 1.3e10 with its cross-attention); together not.
    big = {"d_vocab": 30, "d_model": 4096, "n_heads": 4, "n_layers": 48, "d_mlp": 16384}
    edit_json(directory / "config.json",
              lambda c: [c[k].update(big) for k in ("config", "decoder")])
    with pytest.raises(ModelLoadError, match="encoder and decoder .* hold about [\\d.]+e\\+10 parameters"):
        load_model(str(directory))


# ------------------------------------------------------------ 3. shards outside the folder
@pytest.fixture
def reads(monkeypatch) -> list[str]:
    """Every safetensors file opened while the test runs."""
    opened: list[str] = []
    real = safetensors.torch.load_file

    def spy(path, *args, **kwargs):
        opened.append(str(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(safetensors.torch, "load_file", spy)
    return opened


def _sharded(tiny_dirs, tmp_path) -> tuple[Path, Path]:
    """A GPT-2 directory whose weights file sits outside it, at tmp_path/outside/: a real,
    loadable safetensors file, so following the index would succeed."""
    directory = copy_of(tiny_dirs["gpt2"], tmp_path / "model")
    outside = tmp_path / "outside" / "model.safetensors"
    outside.parent.mkdir()
    shutil.move(directory / "model.safetensors", outside)
    return directory, outside


def _index(directory: Path, names, shard_of) -> None:
    (directory / "model.safetensors.index.json").write_text(json.dumps(
        {"metadata": {}, "weight_map": {k: shard_of(k) for k in names}}))


@pytest.mark.parametrize("shard", ["relative", "absolute", "etc/passwd", "symlink"])
def test_shards_outside_the_directory_are_never_read(tiny_dirs, tmp_path, reads, shard):
    directory, outside = _sharded(tiny_dirs, tmp_path)
    if shard == "symlink":
        (directory / "model-00001-of-00001.safetensors").symlink_to(outside)
    name = {"relative": "../outside/model.safetensors", "absolute": str(outside),
            "etc/passwd": "../../../../etc/passwd",
            "symlink": "model-00001-of-00001.safetensors"}[shard]
    _index(directory, load_file(str(outside)), lambda key: name)
    reads.clear()
    with pytest.raises(ModelLoadError, match="outside the model directory"):
        load_model(str(directory))
    assert reads == []


def test_a_symlinked_single_weights_file_outside_is_never_read(tiny_dirs, tmp_path, reads):
    directory, outside = _sharded(tiny_dirs, tmp_path)
    (directory / "model.safetensors").symlink_to(outside)
    reads.clear()
    with pytest.raises(ModelLoadError, match="outside the model directory"):
        load_model(str(directory))
    assert reads == []


def test_shards_inside_the_directory_still_load(tiny_dirs, tmp_path):
    directory, outside = _sharded(tiny_dirs, tmp_path)
    state = load_file(str(outside))
    (directory / "shards").mkdir()
    first = sorted(state)[: len(state) // 2]
    save_file({k: state[k] for k in first}, str(directory / "model-00001-of-00002.safetensors"))
    save_file({k: v for k, v in state.items() if k not in first},
              str(directory / "shards" / "model-00002-of-00002.safetensors"))
    _index(directory, state, lambda k: "model-00001-of-00002.safetensors" if k in first
           else "shards/model-00002-of-00002.safetensors")
    reference = load_model(str(tiny_dirs["gpt2"])).model.state_dict()
    loaded = load_model(str(directory)).model.state_dict()
    assert loaded.keys() == reference.keys()
    assert all(torch.equal(loaded[k], reference[k]) for k in reference)


def test_a_hub_cache_snapshot_whose_files_link_to_its_blobs_still_loads(tiny_dirs, tmp_path):
    """huggingface_hub stores <repo>/snapshots/<rev>/<file> as links to <repo>/blobs/<hash>."""
    repo = tmp_path / "models--someone--tiny-gpt2"
    snapshot = repo / "snapshots" / "0123abc"
    snapshot.mkdir(parents=True)
    (repo / "blobs").mkdir()
    for i, file in enumerate(sorted(Path(tiny_dirs["gpt2"]).iterdir())):
        shutil.copy(file, repo / "blobs" / f"blob{i}")
        (snapshot / file.name).symlink_to(Path("..", "..", "blobs", f"blob{i}"))
    assert load_model(str(snapshot)).cfg.family == "gpt2"


@pytest.mark.parametrize("index", [
    {"weight_map": ["model.safetensors"]}, {"weight_map": {"wte.weight": 5}},
    {"weight_map": {}}, {"metadata": {}}, [1, 2],
])
def test_a_weight_map_that_is_not_names_to_files_is_refused(tiny_dirs, tmp_path, index):
    directory, _ = _sharded(tiny_dirs, tmp_path)
    (directory / "model.safetensors.index.json").write_text(json.dumps(index))
    with pytest.raises(ModelLoadError, match='"weight_map" must map tensor names to shard file'):
        load_model(str(directory))


# ------------------------------------------------------- 4. other holes in the same path
def _config(**fields):
    return lambda d: edit_json(d / "config.json", lambda c: c.update(fields))


def _state_as_a_list(directory: Path) -> None:
    (directory / "model.safetensors").unlink()
    torch.save([torch.zeros(3)], directory / "pytorch_model.bin")  # weights_only allows it


def _giant(name: str):
    def breakage(directory: Path) -> None:
        with open(directory / name, "r+b") as f:  # sparse: no disk used, 20 MB long
            f.truncate(20 * 2**20)
    return breakage


OTHER_BREAKAGES = {  # what is wrong -> (family, how to break it, what the message must say)
    "heads as a word": ("bert", _config(num_attention_heads="twelve"),
                        "num_attention_heads = 'twelve', but sizes .* must be integers"),
    "heads as a list": ("bert", _config(num_attention_heads=[4]),
                        r"num_attention_heads = \[4\], but sizes .* must be integers"),
    "width as a float": ("gpt2", _config(n_embd=32.0), "n_embd = 32.0, but sizes"),
    "model_type as a list": ("bert", _config(model_type=["bert"]),
                             r"unsupported architecture \['bert'\]"),
    "rope parameters as a list": ("llama", _config(rope_parameters=[1]),
                                  r"rope_parameters \(or rope_scaling\) must be an object"),
    "a flag as a word": ("gpt2", _config(tie_word_embeddings="no"),
                         "flags must be true or false, got tie_embeddings='no'"),
    "heads the weights cannot be split into": (
        "bert", _config(hidden_size=30, num_attention_heads=3),
        "the weights in .* do not fit config.json"),
    "pytorch_model.bin holding a list": ("gpt2", _state_as_a_list, "not a dict of named tensors"),
    "a giant config.json": ("bert", _giant("config.json"), "larger than 16,777,216 bytes"),
    "own: norm_eps as a word": ("own", lambda d: edit_json(
        d / "config.json", lambda c: c["config"].update(norm_eps="small")),
        "norm_eps must be a finite number"),
    "own: causal as a word": ("own", lambda d: edit_json(
        d / "config.json", lambda c: c["config"].update(causal="yes")), "causal='yes'"),
    "own: a giant tokenizer.json": ("own", _giant("tokenizer.json"),
                                    "tokenizer.json: the file is larger than"),
}


@pytest.mark.parametrize("what", sorted(OTHER_BREAKAGES))
def test_other_broken_fields_raise_model_load_error(tiny_dirs, tmp_path, what):
    family, breakage, message = OTHER_BREAKAGES[what]
    directory = (own_dir(tmp_path / "model") if family == "own"
                 else copy_of(tiny_dirs[family], tmp_path / "model"))
    breakage(directory)
    with pytest.raises(ModelLoadError, match=message):
        load_model(str(directory))


def test_legitimate_configs_pass_the_size_checks(minilm):
    assert minilm.cfg.n_params < 30e6  # MiniLM-L6: 22.7M parameters
    for name in ("tiny-induction", "tiny-chars", "tiny-reverse"):
        assert load_model(name).cfg.n_params < 1e6
    gpt2_xl = TransformerConfig(family="gpt2", d_model=1600, n_heads=25, n_layers=48, n_ctx=1024,
                                d_vocab=50257, d_mlp=6400, has_lm_head=True)
    assert 1.5e9 < gpt2_xl.n_params < 2e9  # the largest GPT-2 is allowed, and so is a 7B
    assert gpt2_xl.n_params * 4 < MAX_PARAMS
