"""Hook names come from one helper (model/hook_names.py): for every family, the names it can
produce are exactly the model's own `hook_names`, it refuses what a family lacks with a
sentence (GPT-NeoX's parallel blocks have no stream between attention and the MLP), and no
hand-typed `blocks.…` hook name comes back into analysis/, ui/, viz/ or training/."""

from __future__ import annotations

import atexit
import functools
import re
import shutil
import tempfile
from pathlib import Path

import pytest

import tiny_decoders
import tiny_encoders
import tiny_foreign
from model import load_model
from model.hook_names import (
    ATTN, CROSS_ATTN, DECODER_NORMS, DECODER_OUTS, DECODER_RESID, EMBED, MLP, NORMS, OUTS, RESID,
    HookNameError, hook_names, suffix,
)

ROOT = Path(__file__).resolve().parents[2]
BUNDLED = ("minilm", "tiny-chars", "tiny-induction", "tiny-reverse")
DECODERS = sorted({*tiny_decoders.BUILDERS, *tiny_decoders.VARIANTS})
ENCODERS = sorted(tiny_encoders.BUILDERS)


def _tries(names) -> list:
    """Every call the helper accepts, as (method, args)."""
    d = names.decoder
    block = {"resid": DECODER_RESID if d else RESID, "out": DECODER_OUTS if d else OUTS,
             "attn": ATTN, "mlp": MLP, "norm": DECODER_NORMS if d else NORMS}
    if d:
        block["cross_attn"] = CROSS_ATTN
    calls = [(m, (layer, w)) for m, whats in block.items() for w in whats
             for layer in range(names.cfg.n_layers)]
    return calls + [("embed", (p,)) for p in EMBED] + [("final_norm", ()), ("logits", ()),
                                                       ("pooler", ())]


def producible(names) -> set[str]:
    """Every name the helper produces for this config (refusals left out); each ends with
    what `suffix` says a hook of that kind ends with."""
    out = set()
    for method, args in _tries(names):
        try:
            name = getattr(names, method)(*args)
        except HookNameError:
            continue
        assert name.endswith(suffix(method, *args[1:] if args and method != "embed" else args))
        out.add(name)
    return out


@functools.cache
def _model(family: str):
    if family in BUNDLED:
        return load_model(family)
    if family in ENCODERS:
        folder = Path(tempfile.mkdtemp(prefix="tiny_encoders_"))
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
        return load_model(str(tiny_encoders.BUILDERS[family](folder / family)))
    return load_model(str(tiny_decoders.saved(family)))


def _check(lm) -> None:
    expected = set(lm.hook_names)
    made = producible(hook_names(lm.cfg))
    if hasattr(lm.model, "dec_cfg"):  # the encoder–decoder: its decoder's names too
        made |= producible(hook_names(lm.model.dec_cfg, decoder=True))
    assert made - expected == set(), "the helper makes names the model does not have"
    assert expected - made == set(), "the model has names the helper cannot make"


@pytest.mark.parametrize("family", sorted(["bert", "roberta", "gpt2", "llama"]))
def test_every_name_the_helper_makes_exists_in_the_tiny_families(tiny_models_loaded, family):
    _check(tiny_models_loaded[family])


@pytest.mark.parametrize("family", DECODERS + ENCODERS + list(BUNDLED))
def test_every_name_the_helper_makes_exists_in_the_other_families(family):
    _check(_model(family))


def test_a_model_only_hugging_face_runs_has_the_pattern_names_the_helper_makes(tmp_path):
    """An architecture the engine does not know records only the attention patterns."""
    lm = load_model(str(tiny_foreign.make_bloom(tmp_path / "bloom")), foreign=True)
    assert list(lm.hook_names) == hook_names(lm.cfg).every_layer("attn", "pattern")


def test_parallel_blocks_have_no_middle_stream_and_the_helper_says_so():
    lm = _model("neox")
    assert lm.cfg.block == "parallel"
    assert not any(n.endswith("hook_resid_mid") for n in lm.hook_names)
    names = hook_names(lm.cfg)
    with pytest.raises(HookNameError, match="parallel blocks"):
        names.resid(0, "mid")
    assert names.resid(0, "mid", required=False) is None
    assert names.resid(0, "post") == "blocks.0.hook_resid_post"  # the rest still works


def test_bad_layers_and_unknown_parts_are_refused_in_words():
    names = hook_names(_model("tiny-chars").cfg)
    n = names.cfg.n_layers
    with pytest.raises(HookNameError, match=f"0 to {n - 1}"):
        names.attn(n, "pattern")
    with pytest.raises(HookNameError, match="choose one of"):
        names.attn(0, "patern")
    with pytest.raises(HookNameError, match="cross-attention"):
        names.cross_attn(0, "pattern")
    assert names.attn(n - 1, "pattern") == f"blocks.{n - 1}.attn.hook_pattern"
    with pytest.raises(HookNameError, match="kind of hook point"):
        suffix("attention", "pattern")
    assert suffix("attn", "pattern") == "attn.hook_pattern"


# --------------------------------------------------------------- no hand-typed names again
SCANNED = ("analysis", "ui", "viz", "training", "app_pages")
# a string literal (plain or f-string) that starts a block's hook name: "blocks.3.…",
# f"blocks.{layer}.…", "decoder.blocks.…"
HAND_TYPED = re.compile(r"""(?:\bf)?["'](?:decoder\.)?blocks\.(?:\d|\{)""")


# Module paths that are not hook points (a parameter's or buffer's name shown as a source)
NOT_HOOKS = ('"blocks.0.attn.rotary.inv_freq"',)


def hand_typed(source: str) -> list[int]:
    return [i for i, line in enumerate(source.splitlines(), 1)
            if HAND_TYPED.search(line) and not any(path in line for path in NOT_HOOKS)]


def test_the_source_scan_catches_a_hand_typed_name():
    assert hand_typed('x = cache[f"blocks.{layer}.attn.hook_z"]\n') == [1]
    assert hand_typed("x = cache['blocks.0.hook_resid_pre']\n") == [1]
    assert hand_typed('x = f"decoder.blocks.{i}.cross_attn.hook_pattern"\n') == [1]
    assert hand_typed("x = names.attn(layer, 'z')  # blocks.3.attn.hook_z in words\n") == []


def test_no_hand_typed_block_hook_names_in_the_analyses_pages_and_figures():
    found = [f"{path.relative_to(ROOT)}:{line}" for folder in SCANNED
             for path in sorted((ROOT / folder).rglob("*.py"))
             for line in hand_typed(path.read_text(encoding="utf-8"))]
    assert found == [], "use model.hook_names.hook_names(cfg) instead of typing: " + \
        ", ".join(found)
