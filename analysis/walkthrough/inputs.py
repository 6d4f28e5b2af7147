"""The walkthrough's first steps: the text as tokens and ids, the attention mask, and the
embeddings (token, position, token type) with their sum and norm.
"""

from __future__ import annotations

import torch

from model.transformer import attention_mask_bias
from .steps import BTD, Shown, Walk, plural


def input_steps(w: Walk) -> None:
    t, cfg = w.trace, w.cfg
    n_pad = int((t.attention_mask == 0).sum())
    n_special = int((t.special_mask.bool() & t.attention_mask.bool()).sum())
    n_typed = sum(len(row) for row in (t.typed_special or []))
    n_added = n_special - n_typed  # special tokens typed in the text were not added
    typed = (f" (and it reads the {plural(n_typed, 'special token')} typed in the text as "
             "the real markers)" if n_typed else "")
    added = (f", adding {plural(n_added, 'special token')}" if n_added
             else ", adding no special tokens")
    w.add("tokens", "Input", "Text → tokens → ids",
          f"The tokenizer cuts the text into pieces and looks each one up in a vocabulary of "
          f"{cfg.d_vocab:,} entries{added}{typed}. The model sees only "
          f"these integers: one row per text, {plural(t.n_tokens, 'position')}.",
          "A token is a word, a piece of a word or a punctuation mark; its id is a row number "
          "in the embedding table. BERT-style models add [CLS] at the start and [SEP] after each "
          "sentence, GPT-2 adds nothing, Llama a beginning-of-sequence token. Texts that share "
          "a batch must have one length, so the shorter ones are padded on the right.",
          r"\begin{aligned} \text{text} &\xrightarrow{\text{tokenizer}} (t_0, \dots, t_{T-1}) \\"
          r" &\mapsto \text{ids} \in \{0, \dots, V-1\}^{B \times T} \end{aligned}",
          [Shown("input ids", t.input_ids, ("batch", "pos"), "trace.input_ids")], "tokens")
    padding = ("1 marks a real token, 0 a padding token that only fills a row up to the "
               "batch's length. " + (f"Here {plural(n_pad, 'position')} {'is' if n_pad == 1 else 'are'} padding."
                                     if n_pad else
                                     "All ones: nothing is padded in this input."))
    shown = [Shown("attention mask", t.attention_mask, ("batch", "pos"), "trace.attention_mask")]
    if cfg.causal:
        _causal_mask_step(w, padding, shown)
    else:
        w.add("attention_mask", "Input", "The attention mask", padding,
              "Padding makes the tensor rectangular but must not change the result. Inside "
              "every attention layer the mask becomes a matrix with −∞ in the padded columns, "
              "so after the softmax no token gives any weight to padding. Padding tokens still "
              "get vectors of their own; they are simply never looked at.",
              r"m_{b,j} = \begin{cases} 1 & \text{token } j \text{ of text } b \text{ is real} "
              r"\\ 0 & \text{padding} \end{cases}", shown, "tokens")
    if cfg.n_token_types:
        w.add("token_types", "Input", "Token types (segments)",
              f"Type 0 marks the first sentence, type 1 the second; here "
              f"{plural(int(t.token_type_ids.sum()), 'position')} "
              f"{'has' if int(t.token_type_ids.sum()) == 1 else 'have'} type 1.",
              "BERT was trained on sentence pairs (does B follow A? does this answer fit the "
              "question?). The type tells each token which sentence it belongs to.",
              r"\text{type}_{b,j} \in \{0, 1\}",
              [Shown("token type ids", t.token_type_ids, ("batch", "pos"),
                     "trace.token_type_ids")], "tokens")


def _causal_mask_step(w: Walk, padding: str, shown: list[Shown]) -> None:
    """A decoder's step 2: the padding mask and the causal mask, and the two together."""
    allowed = attention_mask_bias(w.trace.attention_mask, True, torch.float32)[:, 0] == 0
    shown.append(Shown("may attend (both masks)", allowed.long(), ("batch", "q_pos", "k_pos"),
                       "trace.attention_mask", "`attention_mask_bias(attention_mask, causal="
                       "True) == 0`: the padding mask and the causal mask together",
                       "combined with the causal mask: 1 where a query may look at a key"))
    w.add("attention_mask", "Input", "The attention masks: padding and causal",
          "A decoder has two masks. The padding mask: " + padding[0].lower() + padding[1:]
          + " The causal mask: token i may look only at itself and the tokens before it. "
          "Together: query i may attend to key j when j ≤ i and j is a real token (1 in the "
          "figure, 0 in grey).",
          "The causal mask is what makes a decoder a language model: while it reads token i it "
          "cannot peek at token i + 1, the token it must predict. Padding makes the tensor "
          "rectangular but must not change the result. Inside every attention layer the "
          "combined mask becomes a matrix with −∞ where it is 0, so after the softmax those "
          "keys get no weight at all.",
          r"\text{may attend}_{b,i,j} = \underbrace{[\,j \le i\,]}_{\text{causal}}\cdot"
          r"\underbrace{m_{b,j}}_{\text{padding}}", shown, "allowed")


def embedding_steps(w: Walk) -> None:
    cfg = w.cfg
    width = cfg.d_embed or cfg.d_model  # ELECTRA: embeddings narrower than the model
    dims = ("batch", "pos", "d_embed") if cfg.d_embed else BTD
    rope = (" A rotary model adds no position vector: positions enter inside attention, where "
            "q and k are rotated by an angle that grows with the position (RoPE)."
            if cfg.positions == "rotary" else "")
    w.add("embed_tok", "Embeddings", "Token embeddings",
          f"Each id picks one row of the token embedding table W_E [{cfg.d_vocab:,}, "
          f"{width}]: a learned vector of {width} numbers.{rope}",
          "Looking up a row is the same as multiplying a one-hot vector by W_E. Tokens used in "
          "similar ways end up with similar rows."
          + (" The original transformer multiplies by √d_model so the embeddings are not "
             "drowned by the positional encoding." if cfg.embed_scale else ""),
          r"E_{\text{tok}}[b, j] = " + (r"\sqrt{d_{model}}\," if cfg.embed_scale else "")
          + r"W_E[\text{ids}_{b,j}]", [w.shown("token embedding", w.names.embed("tok"), dims)],
          "values")
    if w.has(w.names.embed("type", required=False)):
        w.add("embed_type", "Embeddings", "Token type embeddings",
              f"Each token type picks a row of a small table with {cfg.n_token_types} rows.",
              "With a single sentence every token gets row 0: the same vector everywhere.",
              r"E_{\text{type}}[b, j] = W_{\text{type}}[\text{type}_{b,j}]",
              [w.shown("token type embedding", w.names.embed("type"), dims)], "values")
    if w.has(w.names.embed("pos", required=False)):
        learned = cfg.positions == "learned"
        w.add("embed_pos", "Embeddings", "Position embeddings" if learned else
              "Positional encoding",
              f"Position j picks row j of a learned table of {cfg.n_ctx + cfg.position_offset} "
              "rows, so one word at two places gets two vectors." if learned else
              "A fixed table of sines and cosines of different frequencies, one row per "
              "position; nothing here is learned.",
              "Without positions, attention could not tell 'dog bites man' from 'man bites "
              "dog'. The table is [pos, d_model], added to every text of the batch; the hook "
              "records it already broadcast to [batch, pos, d_model]."
              + (" RoBERTa numbers positions from the padding id + 1." if cfg.position_offset
                 else ""),
              r"E_{\text{pos}}[b, j] = W_{\text{pos}}[j]" if learned else
              r"\begin{aligned} PE_{j,2i} &= \sin\big(j / 10000^{2i/d}\big) \\ PE_{j,2i+1} &= "
              r"\cos\big(j / 10000^{2i/d}\big) \end{aligned}",
              [w.shown("position embedding", w.names.embed("pos"), dims)], "values")
    if w.has(w.names.embed("sum", required=False)):
        parts = " + ".join(rf"E_{{\text{{{p}}}}}" for p in ("tok", "type", "pos")
                           if w.has(w.names.embed(p, required=False)))
        w.add("embed_sum", "Embeddings", "Sum of the embeddings",
              "The parts are added number by number: one vector per token that knows both what "
              "the token is and where it stands.",
              "Adding rather than concatenating keeps the width at d_model; training learns to "
              "keep the parts in different directions. Dropout would follow in training; at "
              "inference it does nothing.", rf"X = {parts}",
              [w.shown("sum", w.names.embed("sum"), dims)], "values")
    if w.has(w.names.embed("ln", required=False)):
        w.add("embed_norm", "Embeddings", f"{w.norm} of the embeddings",
              f"{w.norm} rescales each token's vector to mean 0 and variance 1, then applies a "
              "learned gain γ and bias β. Dropout comes next in the code but does nothing at "
              "inference, so this is the embeddings' output.",
              "The statistics are taken over the d_model numbers of one token, never across "
              "tokens or texts.", w.norm_formula,
              [w.shown("normalized embeddings", w.names.embed("ln"), dims)], "values")
    if w.has(w.names.embed("project", required=False)):
        w.add("embed_project", "Embeddings", "Widened to the model's width",
              f"This model keeps its embeddings narrow ({width} numbers per token) and one "
              f"learned linear layer widens each token's vector to the {cfg.d_model} numbers "
              "every layer works with.",
              "ELECTRA does this: a small embedding table saves parameters, and the layers "
              "still get their full width.", r"X' = X\,W_{	ext{proj}} + b_{	ext{proj}}",
              [w.shown("widened embeddings", w.names.embed("project"), BTD)], "values")


# ---------------------------------------------------------------------------- the stack, end
