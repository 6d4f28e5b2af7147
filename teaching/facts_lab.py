"""The course's facts beyond the heatmap: the shapes of one layer, the embedding sum, the
residual stream, and the decoder lab (logit lens, generation, attribution, ablation,
patching). Each is computed from the model and the step's text, like those of `facts.py`,
which adds them to FACTS; tests/lab_fact_checks.py checks each against an independent
computation.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from .fact_base import Fact, FactError, FactInputs, plain


def _dims(f: FactInputs) -> dict:
    cfg = f.trace.cfg
    widen = cfg.d_mlp / cfg.d_model if cfg.d_mlp else 0.0
    return {"d_model": cfg.d_model, "heads": cfg.n_heads, "d_head": cfg.d_head,
            "scale": math.sqrt(cfg.d_head), "d_mlp": cfg.d_mlp, "widen": widen,
            "tokens": f.trace.n_tokens, "scores": f.trace.n_tokens ** 2}


def embed_parts(model) -> list[str]:
    """The parts a model adds up before its first layer, in plain words."""
    embed = model.embed
    parts = ["token"]
    if getattr(embed, "W_type", None) is not None:
        parts.append("token type")
    if hasattr(embed, "W_pos") or hasattr(embed, "pe"):
        parts.append("position")
    return parts


def _embed(f: FactInputs) -> dict:
    """The embedding sum's parts, and the first word the text has twice: how alike its two
    copies are as they enter the first layer (the same token, another position)."""
    tokens = [plain(t).lower() for t in f.trace.tokens]
    special = f.trace.special_mask[0].bool().tolist()
    pair = next(((i, j) for i, t in enumerate(tokens) for j in range(i + 1, len(tokens))
                 if tokens[j] == t and not special[i] and t.strip()), None)
    if pair is None:
        raise FactError("the text has no token twice, so there are no two copies to compare")
    h = f.trace.hidden_states[0].double()  # [pos, d_model], the first layer's input
    cos = float(torch.nn.functional.cosine_similarity(h[pair[0]], h[pair[1]], dim=0))
    parts = embed_parts(f.model.model)
    norm = getattr(f.model.model.embed, "ln", None) is not None
    return {"word": plain(f.trace.tokens[pair[0]]), "first": pair[0], "second": pair[1],
            "cos": cos, "same": "yes, exactly the same" if cos > 1 - 1e-6
            else "no, they differ", "parts": " + ".join(parts), "count": len(parts),
            "norm": "then a LayerNorm" if norm else "with no norm after it"}


def _resid(f: FactInputs) -> dict:
    """How much one layer changes each token's vector: the cosine of a token's vector before
    and after each layer, averaged over the tokens."""
    h = f.trace.hidden_states.double()  # [n_layers + 1, pos, d_model]
    cos = torch.nn.functional.cosine_similarity(h[:-1], h[1:], dim=-1).mean(-1)  # [layer]
    low = int(cos.argmin())
    return {"cos": float(cos.mean()), "low": float(cos[low]), "low_layer": low,
            "kept": "mostly kept" if float(cos.mean()) > 0.5 else "mostly replaced"}


def _lens(f: FactInputs) -> dict:
    """The logit lens at the last position: the top guess after every layer."""
    from analysis.logit_lens import lens_unavailable, logit_lens

    model = f.model.model
    why = lens_unavailable(model.cfg)
    if why:
        raise FactError(why)
    lens = logit_lens(model, f.trace.hidden_states, f.trace.input_ids[0], k=1)
    tops = [int(lens.top_ids[r, -1, 0]) for r in range(lens.n_rows)]
    settle = next(r for r in range(lens.n_rows) if all(t == tops[-1] for t in tops[r:]))
    word = lambda i: plain(f.model.tokenizer.decode([i])) or "a space"  # noqa: E731
    return {"final": word(tops[-1]), "prob": float(lens.top_probs[-1, -1, 0]),
            "first": word(tops[0]), "settles": lens.row_names[settle], "rows": lens.n_rows,
            "changed": "yes, it changes" if len(set(tops)) > 1 else "no, it stays the same",
            "last": plain(f.trace.tokens[-1]) or "a space"}


GENERATED = 12  # the characters the generation fact writes


def _gen(f: FactInputs) -> dict:
    """Greedy writing from the step's text: each new token the likeliest one."""
    from analysis.generation import generate

    out = generate(f.model, f.trace.texts[0], GENERATED)
    first = out.steps[0]
    second = out.steps[1].top_probs
    return {"written": out.new_text, "n": len(out.steps),
            "first": plain(f.model.tokenizer.decode([first.chosen])) or "a space",
            "prob": first.chosen_prob, "runner_up": float(first.top_probs[1]),
            "sure": "more than half" if first.chosen_prob > 0.5 else "half or less",
            "second_prob": float(second[0])}


def _attrib(f: FactInputs) -> dict:
    """Direct logit attribution of the predicted next token at the last position."""
    from analysis.attribution import attribute

    a = attribute(f.model, f.trace.texts[0])
    parts = a.components()
    name, value = max(parts, key=lambda p: p[1])
    layer, head = divmod(int(np.argmax(a.heads)), a.heads.shape[1])
    last = a.heads.shape[0] - 1
    kind = ("the token embedding" if name == "token embedding" else
            f"a head in the {'last' if layer == last else 'first'} layer"
            if name.endswith(f"layer {layer} head {head}") and layer in (0, last) else
            "another part")
    return {"layer": layer, "head": head, "head_value": float(a.heads.max()), "kind": kind,"target": plain(f.model.tokenizer.decode([a.target])) or "a space",
            "logit": a.value, "total": a.total(), "top": name, "top_value": value,
            "top_share": value / a.value, "parts": len(parts)}


def _ablate(f: FactInputs) -> dict:
    """The sharpest head (the most attention on one key, on average) beside the head whose
    removal changes the output most (the ablation page's sweep, heads set to zero)."""
    from analysis.ablation import Inputs, importance_sweep, model_directory, sentence_pooling

    a = f.trace.attentions.double()  # [n_layers, head, q, k]
    sharp = a.amax(-1).mean(-1)  # [n_layers, head]
    s_layer, s_head = divmod(int(sharp.argmax()), sharp.shape[1])
    pooling = None if f.trace.cfg.causal else sentence_pooling(model_directory(
        f.trace.model_name))
    sweep = importance_sweep(f.model, Inputs.encode(f.model, f.trace.texts[0]),
                             pooling=pooling or ("mean" if not f.trace.cfg.causal else None))
    effect = sweep["loss" if f.trace.cfg.causal else "sentence"]  # [n_layers, head]
    t_layer, t_head = divmod(int(np.argmax(effect)), effect.shape[1])
    rank = int((effect > effect[s_layer, s_head]).sum()) + 1
    return {"sharp_layer": s_layer, "sharp_head": s_head, "sharp_share": float(sharp.max()),
            "sharp_effect": float(effect[s_layer, s_head]), "top_layer": t_layer,
            "top_head": t_head, "top_effect": float(effect.max()), "rank": rank,
            "heads": int(effect.size),
            "same": "yes, the same head" if (s_layer, s_head) == (t_layer, t_head)
            else "no, another head"}


PRESET_LENGTH, PRESET_SYMBOLS, PRESET_SEQS = 10, 36, 16  # the patching page's preset defaults


def _patch(f: FactInputs) -> dict:
    """The patching page's induction preset (its default settings): the head whose clean
    output brings back most of the right answer."""
    from analysis.patching import induction_preset

    grid = induction_preset(f.model, PRESET_LENGTH, PRESET_SYMBOLS, seed=0,
                            n_seqs=PRESET_SEQS)["heads"]
    layer, head = divmod(int(np.argmax(grid)), grid.shape[1])
    return {"layer": layer, "head": head, "restored": float(grid.max()),
            "heads": int(grid.size)}


def _shift(f: FactInputs) -> dict:
    """A decoder's training pairs from the step's text: the input, and the same text shifted
    one token to the left as the targets ("outputs shifted right", seen from the input)."""
    if not f.trace.cfg.causal:
        raise FactError("the shifted targets belong to a decoder")
    words = [plain(t) or " " for t in f.trace.tokens]
    return {"inputs": "".join(words[:-1]), "targets": "".join(words[1:]),
            "first": words[0], "second": words[1], "pairs": len(words) - 1}


def _effect(f: FactInputs) -> dict:
    """The step's head beside occlusion: the token its target row looks at most, and the token
    whose removal changes the effect page's target most (a decoder's next-token
    log-probability at the last position; an encoder's similarity to the second text)."""
    from analysis.ablation import Inputs
    from analysis.effect import attention_scores, occlusion, query_weights
    from analysis.effect_target import make_target

    inputs = Inputs.encode(f.model, f.trace.texts[0])
    target = make_target(f.model, inputs)  # the page's target when the sidebar has one text
    layer, head = int(f.settings.get("layer", 0)), int(f.settings.get("head", 0))
    enc = f.trace
    n = enc.n_tokens
    looked = attention_scores(enc.attentions, layer, head, query_weights(target, n))  # [k]
    effect = np.abs(occlusion(f.model, target, inputs))  # [k]
    keep = ~enc.special_mask[0].bool().numpy() & np.isfinite(effect)
    i = int(np.argmax(np.where(keep, looked, -1.0)))
    j = int(np.argmax(np.where(keep, effect, -1.0)))
    word = lambda k: plain(enc.tokens[k]) or "a space"  # noqa: E731
    return {"looked": word(i), "share": float(looked[i]), "mattered": word(j),
            "same": "yes, the same token" if i == j else "no, another token"}


LAB_FACTS: dict[str, Fact] = {
    "dims": Fact(("d_model", "heads", "d_head", "scale", "d_mlp", "widen", "tokens", "scores"),
                 _dims, describe="the sizes of one layer and the scale √d_head"),
    "embed": Fact(("word", "cos", "same", "parts", "count", "norm"), _embed,
                  describe="the embedding sum's parts; two copies of a word entering layer 0"),
    "resid": Fact(("cos", "low", "low_layer", "kept"), _resid,
                  describe="how alike a token's vector is before and after each layer"),
    "lens": Fact(("final", "prob", "first", "settles", "rows", "changed", "last"), _lens,
                 describe="the logit lens's top guess at the last position, layer by layer"),
    "gen": Fact(("written", "n", "first", "prob", "runner_up", "sure", "second_prob"), _gen,
                describe="what a decoder writes next, greedily, and how sure it is"),
    "attrib": Fact(("layer", "head", "head_value", "kind", "target", "logit", "total", "top",
                    "top_value", "top_share", "parts"), _attrib, describe="which part wrote most of the next token's logit"),
    "ablate": Fact(("sharp_layer", "sharp_head", "sharp_share", "sharp_effect", "top_layer",
                    "top_head", "top_effect", "rank", "heads", "same"), _ablate,
                   describe="the sharpest head beside the head whose removal matters most"),
    "patch": Fact(("layer", "head", "restored", "heads"), _patch,
                  describe="the head patching finds on the induction preset"),
    "effect": Fact(("looked", "share", "mattered", "same"), _effect, uses_settings=True,
                   describe="the token the step's head looks at most beside the one that matters"),
    "shift": Fact(("inputs", "targets", "first", "second", "pairs"), _shift,
                  describe="a decoder's inputs and its targets, one token later"),
}
