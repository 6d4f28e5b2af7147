"""Bad input and bad model directories: every failure is a ValueError / ModelLoadError whose
message names what is wrong; long texts are truncated and say how many tokens were dropped."""

from __future__ import annotations

import json
import shutil
from concurrent.futures import ThreadPoolExecutor

import pytest
import torch
from safetensors.torch import load_file, save_file

import tiny_models
from model import ModelLoadError, load_model

# --------------------------------------------------------------------------- bad text
LONG = " ".join(tiny_models.CORPUS * 2)  # ~110 words: longer than every tiny model's context


@pytest.mark.parametrize("text", ["", "   ", "\n\t ", "\u3000"])
def test_empty_or_whitespace_text_is_refused(tiny_models_loaded, text):
    lm = tiny_models_loaded["bert"]
    with pytest.raises(ValueError, match="empty"):
        lm.run(text)
    with pytest.raises(ValueError, match="empty"):
        lm.run(["The cat sat.", text])  # one bad text in a batch
    with pytest.raises(ValueError, match="empty"):
        lm.run("The cat sat.", pair=text)


def test_other_bad_text_arguments(tiny_models_loaded):
    lm = tiny_models_loaded["bert"]
    with pytest.raises(ValueError, match="no text"):
        lm.run([])
    with pytest.raises(ValueError, match="strings"):
        lm.run(["fine", 3])
    with pytest.raises(ValueError, match="second sentence for each"):
        lm.run(["one", "two"], pair=["only one"])


@pytest.mark.parametrize("family", ["bert", "roberta", "gpt2", "llama"])
def test_long_text_is_truncated_and_the_dropped_count_is_exact(tiny_models_loaded, tiny_dirs,
                                                               family):
    from transformers import AutoTokenizer

    lm = tiny_models_loaded[family]
    full = AutoTokenizer.from_pretrained(str(tiny_dirs[family]))(LONG)["input_ids"]
    n_ctx = lm.cfg.n_ctx
    assert len(full) > n_ctx + 5, "the text must really be too long for this test"
    trace = lm.run(LONG)
    assert trace.n_tokens == n_ctx
    assert trace.n_dropped == len(full) - n_ctx
    keeps_last = family in ("bert", "roberta")  # encoders keep their closing [SEP] / </s>
    assert trace.token_ids.tolist() == (full[:n_ctx - 1] + [full[-1]] if keeps_last
                                        else full[:n_ctx])
    batch = lm.run([LONG, "I love cats!"])
    assert batch.n_dropped == [len(full) - n_ctx, 0]


def test_bert_keeps_its_closing_sep_when_truncating(tiny_models_loaded):
    trace = tiny_models_loaded["bert"].run(LONG)
    assert trace.tokens[0] == "[CLS]" and trace.tokens[-1] == "[SEP]"
    assert "[UNK]" not in trace.tokens  # the fixture's WordPiece vocabulary covers the corpus


def test_long_sentence_pair_counts_the_dropped_tokens(tiny_models_loaded, tiny_dirs):
    from transformers import AutoTokenizer

    full = AutoTokenizer.from_pretrained(str(tiny_dirs["bert"]))(LONG, LONG)["input_ids"]
    trace = tiny_models_loaded["bert"].run(LONG, pair=LONG)
    assert (trace.n_tokens, trace.n_dropped) == (40, len(full) - 40)
    assert trace.tokens.count("[SEP]") == 2  # both sentences survive, each cut


def test_concurrent_encodes_keep_their_own_truncation(tiny_models_loaded):
    """The fast tokenizer keeps truncation and padding settings on one shared Rust object; before
    HFTokenizer took a lock, ~9% of these calls got another thread's settings (n_dropped 0 or
    negative, or "Unable to create tensor")."""
    lm = tiny_models_loaded["bert"]
    dropped = lm.encode(LONG).n_dropped[0]
    assert dropped > 0

    def encode(i: int):
        batch = [LONG] if i % 2 else ["I love cats!", LONG]
        try:
            return lm.encode(batch).n_dropped
        except ValueError as exc:
            return repr(exc)

    with ThreadPoolExecutor(max_workers=4) as pool:
        results = list(pool.map(encode, range(400)))
    assert results == [[dropped] if i % 2 else [0, dropped] for i in range(400)]


def test_run_ids_truncates_and_checks_its_input(tiny_models_loaded):
    lm = tiny_models_loaded["gpt2"]
    ids = torch.arange(50) % lm.cfg.d_vocab  # [pos], 10 more than n_ctx = 40
    trace = lm.run_ids(ids)
    assert (trace.n_tokens, trace.n_dropped, trace.batched) == (40, 10, False)
    assert torch.equal(trace.token_ids, ids[:40])
    with pytest.raises(ValueError, match=r"\[0, 396\)"):
        lm.run_ids([1, 2, lm.cfg.d_vocab])
    with pytest.raises(ValueError, match="no token ids"):
        lm.run_ids(torch.zeros(1, 0, dtype=torch.long))
    with pytest.raises(ValueError, match=r"\[pos\] or \[batch, pos\]"):
        lm.run_ids(torch.zeros(1, 2, 3, dtype=torch.long))


# ------------------------------------------------------------------- bad directories
def _edit_config(directory, **changes) -> None:
    config = json.loads((directory / "config.json").read_text())
    config.update(changes)
    (directory / "config.json").write_text(json.dumps(config))


def _drop_field(directory, name: str) -> None:
    config = json.loads((directory / "config.json").read_text())
    del config[name]
    (directory / "config.json").write_text(json.dumps(config))


def _truncate(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _drop_tensor(path, name: str) -> None:
    state = load_file(str(path))
    del state[name]
    save_file(state, str(path))


def _only_special_tokens(directory) -> None:
    from transformers import BertTokenizerFast

    for name in ("tokenizer.json", "vocab.txt", "tokenizer_config.json"):
        (directory / name).unlink()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    BertTokenizerFast(vocab={t: i for i, t in enumerate(specials)}).save_pretrained(directory)


BREAKAGES = {  # what is wrong -> (family, how to break it, what the message must say)
    "missing config.json": ("bert", lambda d: (d / "config.json").unlink(), "no config.json"),
    "corrupt config.json": ("bert", lambda d: (d / "config.json").write_text('{"model_type": '),
                            "config.json .* is not valid JSON"),
    "config.json not an object": ("bert", lambda d: (d / "config.json").write_text("[1, 2]"),
                                  "not a JSON object"),
    "config field missing": ("bert", lambda d: _drop_field(d, "num_hidden_layers"),
                             "lacks the field 'num_hidden_layers'"),
    "config field of the wrong type": ("bert", lambda d: _edit_config(d, hidden_size="32"),
                                       "invalid model: .*must be integers"),
    "missing weights": ("bert", lambda d: (d / "model.safetensors").unlink(),
                        "no weights in .*expected model.safetensors"),
    "truncated model.safetensors": ("bert", lambda d: _truncate(d / "model.safetensors"),
                                    "could not read the weights"),
    "garbage model.safetensors": ("bert", lambda d: (d / "model.safetensors").write_bytes(
        b"\x89not a safetensors file" * 100), "could not read the weights"),
    "missing tokenizer": ("llama", lambda d: (d / "tokenizer.json").unlink(),
                          "could not load the tokenizer.*no tokenizer files"),
    "tokenizer of special tokens only": ("bert", _only_special_tokens, "only special tokens"),
    "unsupported model_type": ("bert", lambda d: _edit_config(d, model_type="bloom"),
                               r"unsupported architecture 'bloom'\. Supported: bert and roberta.*"
                               r"gpt2.*llama and mistral"),
    "weights of the wrong shape": ("bert", lambda d: _edit_config(d, intermediate_size=64),
                                   r"do not fit the config: wrong shapes "
                                   r"blocks\.0\.mlp\.W_in\.bias: \(48,\) != \(64,\)"),
    "a tensor missing": ("bert", lambda d: _drop_tensor(
        d / "model.safetensors", "encoder.layer.1.output.dense.weight"),
        "lack 'encoder.layer.1.output.dense.weight' for a bert model"),
    "unsupported rotary scaling": ("llama", lambda d: _edit_config(
        d, rope_parameters={"rope_type": "yarn", "rope_theta": 1e4, "factor": 2.0}),
        "rotary scaling 'yarn' is not supported"),
}


@pytest.mark.parametrize("what", sorted(BREAKAGES))
def test_broken_model_directory_raises_model_load_error(tiny_dirs, tmp_path, what):
    family, breakage, message = BREAKAGES[what]
    directory = tmp_path / "model"
    shutil.copytree(tiny_dirs[family], directory)
    load_model(str(directory))  # intact, the copy loads: the breakage below is the cause
    breakage(directory)
    with pytest.raises(ModelLoadError, match=message):
        load_model(str(directory))


def test_model_load_error_is_a_value_error_and_load_model_is_documented():
    assert issubclass(ModelLoadError, ValueError)
    assert "ModelLoadError" in load_model.__doc__  # was None: the docstring was an expression


@pytest.mark.parametrize("name, message", [
    ("", "no model name"),
    ("   ", "no model name"),
    ("/no/such/model/dir", "neither a bundled model nor a directory|no such model directory"),
    ("nobody-here/not-a-model", "Hub models need a network connection"),
])
def test_unknown_names_raise_model_load_error(name, message):
    with pytest.raises(ModelLoadError, match=message):
        load_model(name)


# ------------------------------------------------------------------ pytorch_model.bin
def test_pytorch_model_bin_loads_with_the_same_weights(tiny_dirs, tiny_models_loaded, tmp_path):
    directory = tmp_path / "bin"
    shutil.copytree(tiny_dirs["gpt2"], directory)
    state = load_file(str(directory / "model.safetensors"))
    (directory / "model.safetensors").unlink()
    torch.save(state, directory / "pytorch_model.bin")
    lm = load_model(str(directory))
    reference = tiny_models_loaded["gpt2"].model.state_dict()
    loaded = lm.model.state_dict()
    assert loaded.keys() == reference.keys()
    assert all(torch.equal(loaded[k], reference[k]) for k in reference)
    assert torch.equal(lm.run("I love cats!").logits,
                       tiny_models_loaded["gpt2"].run("I love cats!").logits)


class _Exploit:
    """A pickle that would create a file if torch.load ran it without weights_only=True."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_pytorch_model_bin_is_read_with_weights_only(tiny_dirs, tmp_path):
    directory = tmp_path / "evil"
    shutil.copytree(tiny_dirs["gpt2"], directory)
    (directory / "model.safetensors").unlink()
    marker = tmp_path / "pwned"
    torch.save({"wte.weight": _Exploit(marker)}, directory / "pytorch_model.bin")
    with pytest.raises(ModelLoadError, match="could not read the weights"):
        load_model(str(directory))
    assert not marker.exists()


def test_code_shipped_in_a_model_directory_is_never_run(tiny_dirs, tmp_path):
    """A directory whose config and tokenizer config point at its own Python (auto_map), as a
    hub repo with custom code does: loading must not import it (trust_remote_code is never
    used). It may load as the plain architecture or be refused, never run the code."""
    directory = tmp_path / "custom-code"
    shutil.copytree(tiny_dirs["gpt2"], directory)
    marker = tmp_path / "pwned"
    (directory / "evil.py").write_text(
        f"open({str(marker)!r}, 'w').write('ran')\n"
        "from transformers import GPT2Config, PreTrainedTokenizerFast\n"
        "class EvilConfig(GPT2Config):\n    pass\n"
        "class EvilTokenizer(PreTrainedTokenizerFast):\n    pass\n")
    for name, auto in [("config.json", {"AutoConfig": "evil.EvilConfig"}),
                       ("tokenizer_config.json",
                        {"AutoTokenizer": [None, "evil.EvilTokenizer"]})]:
        settings = json.loads((directory / name).read_text())
        settings["auto_map"] = auto
        (directory / name).write_text(json.dumps(settings))
    try:
        lm = load_model(str(directory))
    except ModelLoadError:
        pass  # refusing is fine
    else:
        assert lm.run("no code ran").n_tokens > 0
    assert not marker.exists()


def test_two_threads_loading_models_at_once_on_a_fresh_process(tiny_dirs):
    # A fresh interpreter, as on a just-started server: both threads resolve transformers'
    # lazy names at the same moment. Both loads must succeed.
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    script = f"""
import sys, threading
sys.path.insert(0, {str(root)!r})
import model
barrier = threading.Barrier(2)
errors, done = [], []
def load(name):
    barrier.wait()
    try:
        done.append(model.load_model(name).run("two users at once").n_tokens)
    except Exception as exc:
        errors.append(repr(exc))
threads = [threading.Thread(target=load, args=(n,)) for n in ("minilm", {str(tiny_dirs['gpt2'])!r})]
[t.start() for t in threads]
[t.join() for t in threads]
print(errors)
sys.exit(1 if errors or len(done) != 2 else 0)
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            timeout=300, env={**__import__("os").environ, "HF_HUB_OFFLINE": "1"})
    assert result.returncode == 0, result.stdout + result.stderr[-2000:]
