"""The walkthrough's attention steps for one layer, in three stages: the projections (input,
norm, Q, K, V, heads, rotation), the scores (transpose, Q·Kᵀ, scaling, mask, softmax) and the
output (weighted values, heads joined, output projection). Shown, Step and Walk are in steps.py.
"""

from __future__ import annotations

import torch

from model.attention import attention_scale, layer_mask, layer_window, scores_from
from .steps import BHQK, BTD, JOIN, Shown, Walk


def _join_heads(x: torch.Tensor) -> torch.Tensor:
    batch, heads, pos, d_head = x.shape  # [batch, heads, pos, d_head]
    return x.transpose(1, 2).reshape(batch, pos, heads * d_head)  # [batch, pos, heads*d_head]


def attention_steps(w: Walk, layer: int) -> None:
    """Every attention step of one layer, in order."""
    projection_steps(w, layer)
    score_steps(w, layer)
    output_steps(w, layer)


def _names(w: Walk, layer: int):
    """What the three stages share: the config, the group, head counts and the names of the
    widths on screen."""
    cfg = w.cfg
    h, kv, dh = cfg.n_heads, cfg.n_kv_heads, cfg.d_head
    width = "d_model" if h * dh == cfg.d_model else "heads·d_head"
    kv_dim, kv_width = ("kv_heads", "kv_heads·d_head") if kv != h else ("heads", width)
    return cfg, f"Layer {layer}", h, kv, dh, width, kv_dim, kv_width


def _k_name(w: Walk, layer: int) -> str:
    """The keys the scores use: rotated where the model rotates them."""
    rotated = w.names.attn(layer, "rot_k", required=False)
    return rotated if w.has(rotated) else w.names.attn(layer, "k")


def projection_steps(w: Walk, layer: int) -> None:
    """The layer's input, its norm (pre-LN), Q, K and V, the split into heads, rotation."""
    cfg, g, h, kv, dh, width, kv_dim, kv_width = _names(w, layer)
    came = "the embeddings' output" if layer == 0 else f"the output of layer {layer - 1}"
    w.add("layer_input", g, "The layer's input",
          f"Layer {layer} of {cfg.n_layers} reads {came}: the residual stream, one vector per "
          "token.",
          "Every layer has the same shape in and out, which is why layers can be stacked. Each "
          "one reads the stream and adds its results to it.",
          r"X^{(\ell)} = \text{output of layer } \ell - 1",
          [w.shown("X", w.names.resid(layer, "pre"), BTD)], "values", layer)
    if w.pre_ln:
        w.add("ln1", g, f"{w.norm} before attention",
              "Pre-LN: the block normalizes a copy of its input for attention; the stream "
              "itself stays as it is.",
              "GPT-2 and Llama put the norm first. The residual stream stays an untouched "
              "running sum, which makes deep models easier to train than BERT's post-LN order.",
              w.norm_formula, [w.shown("normalized X", w.names.norm(layer, "ln1"), BTD)],
              "values", layer)
    qkv = {n: w.hook(w.names.attn(layer, n)) for n in "qkv"}  # [batch, heads, pos, d_head] each
    w.add("qkv_proj", g, "Q, K, V projections",
          "Three learned linear maps turn every token's vector into a query (what it looks "
          "for), a key (what it offers) and a value (what it passes on)."
          + (f" {kv} key/value heads serve {h} query heads (grouped-query attention), so K and "
             "V are narrower." if kv != h else ""),
          "Three matrix products over all tokens at once; in Hugging Face's code they are "
          f"`nn.Linear({cfg.d_model}, {h * dh}"
          + ("" if cfg.attn_bias else ", bias=False") + ")` layers"
          + ("" if cfg.attn_bias else " (no bias: this model adds nothing after the product)")
          + ". This model keeps the same weights split per head, so these tensors are its hook "
          "tensors with the heads side by side again.",
          (r"\begin{aligned} Q &= XW_Q + b_Q \\ K &= XW_K + b_K \\ V &= XW_V + b_V "
           r"\end{aligned}" if cfg.attn_bias
           else r"Q = XW_Q,\quad K = XW_K,\quad V = XW_V"),
          [Shown(n.upper(), _join_heads(qkv[n]), ("batch", "pos", wd), w.names.attn(layer, n),
                 JOIN.format(f"hook_{n}", nh) + ": the heads side by side, as one Linear "
                 "layer outputs them", "with the heads laid side by side (no arithmetic)")
           for n, wd, nh in (("q", width, "heads"), ("k", kv_width, kv_dim),
                             ("v", kv_width, kv_dim))], None, layer)
    w.add("split_heads", g, "Split into heads",
          (f"Each row is cut into {h} heads of {cfg.d_model} / {h} = {dh} numbers each, and "
           if h * dh == cfg.d_model else
           f"Each row of {h * dh} numbers is cut into {h} heads of {dh} numbers each (this "
           f"model picks the head size on its own: {h} × {dh} = {h * dh}, not the "
           f"{cfg.d_model} numbers of a token's vector), and ")
          + "the head axis moves before the sequence.",
          "Nothing is computed: Hugging Face's code does `view` then `transpose(1, 2)`. Each "
          "head will build its own attention pattern; that is what 'multi-head' means.",
          r"Q_h = Q[:, :, h\,d_h : (h+1)\,d_h]"
          + (r",\qquad d_h = d_{model} / H" if h * dh == cfg.d_model else ""),
          [w.shown(f"{n.upper()} per head", w.names.attn(layer, n),
                   ("batch", "heads" if n == "q" else kv_dim, "pos", "d_head")) for n in "qkv"],
          None, layer)
    if cfg.qk_norm:
        w.add("qk_norm", g, f"{w.norm} of each head's q and k",
              f"Each head's query and key ({dh} numbers) are normalized on their own, with "
              "learned weights shared by all heads.",
              "Qwen3 and Gemma 3 do this so that q·k cannot grow without bound as training "
              "goes on; values are not normalized.", w.norm_formula,
              [w.shown("normalized Q", w.names.norm(layer, "q_norm"),
                       ("batch", "heads", "pos", "d_head")),
               w.shown("normalized K", w.names.norm(layer, "k_norm"),
                       ("batch", kv_dim, "pos", "d_head"))], None, layer)
    k_name = _k_name(w, layer)
    rot = cfg.rotary_dim or dh
    if k_name.endswith("rot_k"):
        w.add("rotary", g, "Rotary positions (RoPE)",
              "Each pair of numbers in q and k is rotated by an angle proportional to the "
              "position, so q·k depends on how far apart two tokens are."
              + (f" Only the first {rot} of each head's {dh} numbers turn; the rest pass "
                 "through unchanged." if rot < dh else ""),
              "This is where a Llama-style model learns about order. Values are not rotated.",
              r"\tilde q_j = R_{\theta j}\, q_j,\quad \tilde k_j = R_{\theta j}\, k_j",
              [w.shown("rotated Q", w.names.attn(layer, "rot_q"),
                       ("batch", "heads", "pos", "d_head")),
               w.shown("rotated K", k_name, ("batch", kv_dim, "pos", "d_head"))], None, layer)


def score_steps(w: Walk, layer: int) -> None:
    """The transposed key, the scores, the scaling, the mask and the softmax."""
    cfg, g, h, kv, dh, width, kv_dim, kv_width = _names(w, layer)
    k_name = _k_name(w, layer)
    k_used, k_how = w.hook(k_name), "`.transpose(-1, -2)` of the hook tensor"
    k_plain = "turned on its side: rows become columns (no arithmetic)"
    if kv != h:
        k_used = k_used.repeat_interleave(h // kv, dim=1)  # [batch, heads, pos, d_head]
        k_how = (f"`.repeat_interleave({h // kv}, dim=1).transpose(-1, -2)` of the hook tensor: "
                 f"each key head serves {h // kv} query heads")
        k_plain = (f"each key head repeated for the {h // kv} query heads it serves, and "
                   "turned on its side (no arithmetic)")
    w.add("k_transpose", g, "Transpose the key",
          "So that every query meets every key in one matrix product, the last two axes of K "
          "swap: the sequence now runs along the columns.",
          "A transpose copies nothing; it reads the same numbers in another order.",
          r"K_h^\top \in \mathbb{R}^{d_h \times T}",
          [Shown("Kᵀ", k_used.transpose(-1, -2), ("batch", "heads", "d_head", "pos"), k_name,
                 k_how, k_plain)], None, layer)
    qk = w.hook(w.names.attn(layer, "qk"))  # [batch, heads, q_pos, k_pos]
    w.add("scores", g, "Scores Q·Kᵀ",
          "Row i, column j is the dot product of query i with key j: how well token j matches "
          "what token i looks for. Rows are queries, columns are keys.",
          "One [pos, pos] matrix per head and per text; large and positive means a strong match.",
          r"S_h = Q_h K_h^\top", [w.shown("scores", w.names.attn(layer, "qk"), BHQK)], "scores",
          layer)
    _scale_step(w, layer, qk)
    if w.has("rel_bias.hook_bias"):  # T5: a learned number per head and distance
        _relative_bias_step(w, layer)
    window = layer_window(cfg, layer)
    mask = layer_mask(cfg, layer, w.trace.attention_mask, torch.float32)
    padded = bool((w.trace.attention_mask == 0).any())
    side = "before it" if cfg.causal else "on either side of it"
    what = (f"a sliding window: each query sees only itself and the {window - 1} keys {side}; "
            "everything else is −∞" if window else
            "causal: the upper triangle (keys after the query) is −∞" if cfg.causal else
            "padding: the columns of padding keys are −∞" if padded else
            "all zeros, since this input has no padding")
    w.add("mask", g, "Add the mask",
          f"A matrix of 0 and −∞ is added to the scores. Here it is {what}"
          + (", and so are the padding columns" if (cfg.causal or window) and padded else "")
          + ".",
          "−∞ becomes exactly 0 after the softmax: a blocked key gets no attention at all. Like "
          "Hugging Face, the model adds float32's minimum (about −3.4·10³⁸) rather than a true "
          "−∞, so a row with every key blocked stays finite; the previews write it −∞. An "
          "encoder's mask is one row per text, [batch, 1, 1, pos], broadcast over heads and "
          "queries. Rows are queries and columns keys, so the causal mask hides the upper "
          "triangle (books that draw keys as rows show it as the lower one).",
          r"\begin{aligned} S''_h &= S'_h + M \\ M_{ij} &= \begin{cases} 0 & \text{query } i "
          r"\text{ may see key } j \\ -\infty & \text{otherwise} \end{cases} \end{aligned}",
          [Shown("mask M", mask, ("batch", "heads (broadcast)", "q_pos" if cfg.causal or window
                                  else "q_pos (broadcast)", "k_pos"),
                 "trace.attention_mask", f"`attention_mask_bias(attention_mask, causal="
                 f"{cfg.causal}, window={window})`, the function the forward pass calls",
                 "turned into 0 (may look) and −∞ (blocked), as the model itself does"),
           w.shown("masked scores", w.names.attn(layer, "scores"), BHQK)], "mask", layer,
          "S′ (“S prime”) is the table of scores of head h from the step before: how well "
          "each query matches each key, scaled. M is the mask. S″ (“S double prime”) is the "
          "sum of the two: the same scores, with −∞ where a query may not look. The softmax "
          "turns S″ into attention.")
    w.add("softmax", g, "Softmax over keys",
          "Each row is exponentiated and divided by its sum: weights between 0 and 1 that add "
          "up to 1, how much query i attends to each key.",
          "This is the pattern the Attention page draws. Dropout on it exists in training only.",
          r"A_{ij} = \frac{e^{S''_{ij}}}{\sum_k e^{S''_{ik}}}",
          [w.shown("attention pattern", w.names.attn(layer, "pattern"), BHQK)], "pattern", layer,
          "S″ is the table of masked scores from the step before; A is the attention pattern: "
          "row i holds how much query i looks at each key j.")


def output_steps(w: Walk, layer: int) -> None:
    """The weighted sum of the values, the heads joined, the output projection."""
    cfg, g, h, kv, dh, width, kv_dim, kv_width = _names(w, layer)
    w.add("weighted_values", g, "Weighted sum of the values",
          "Each query's new vector is a mix of all value vectors, weighted by its row of "
          "attention: information flows from the tokens it attends to.",
          "Per head, [pos, pos] @ [pos, d_head] → [pos, d_head].",
          r"Z_h = A_h V_h",
          [w.shown("Z (context)", w.names.attn(layer, "z"), ("batch", "heads", "pos", "d_head"))],
          "values", layer)
    z = w.hook(w.names.attn(layer, "z"))  # [batch, heads, pos, d_head]
    w.add("join_heads", g, "Join the heads",
          f"The head axis moves back after the sequence and the {h} heads are laid side by "
          f"side: one row of {h} × {dh} numbers per token again.",
          "Hugging Face's code does `permute(0, 2, 1, 3)` then `view`: still no arithmetic. "
          "The heads are mixed in the next step.", r"\operatorname{concat}(Z_1, \dots, Z_H)",
          [Shown("permuted", z.transpose(1, 2), ("batch", "pos", "heads", "d_head"),
                 w.names.attn(layer, "z"), "`hook_z.transpose(1, 2)`",
                 "with the head axis moved after the positions (no arithmetic)"),
           Shown("joined", _join_heads(z), ("batch", "pos", width), w.names.attn(layer, "z"),
                 JOIN.format("hook_z", "heads"), "with the heads laid side by side "
                 "(no arithmetic)")], "values", layer)
    w.add("attn_out", g, "Output projection",
          "A last linear map W_O mixes the heads and brings the result back to "
          f"{cfg.d_model} numbers per token.",
          "Each head writes into the residual stream through its own slice of W_O.",
          r"\text{Attn}(X) = \operatorname{concat}(Z_1, \dots, Z_H)\, W_O"
          + (" + b_O" if cfg.has_out_bias else ""),
          [w.shown("attention output", w.names.out(layer, "attn"), BTD)], "values", layer)


def _scale_step(w: Walk, layer: int, qk: torch.Tensor) -> None:
    """Scores times the model's scale: 1/√d_head for most models, 1/√query_pre_attn_scalar
    for Gemma 2 and 3, none for GPT-Neo; then Gemma 2's soft cap."""
    cfg, g, dh = w.cfg, f"Layer {layer}", w.cfg.d_head
    scale = attention_scale(cfg)
    how = (f"`hook_qk * {scale:.6g}`; the forward pass fuses this with the mask: "
           "`torch.add(mask, qk, alpha=scale)`")
    shown = [Shown("scaled scores", qk * scale, BHQK, w.names.attn(layer, "qk"), how,
                   f"every score multiplied by {scale:.4g}")]
    if cfg.attn_scale is None:
        title, formula = f"Divide by √{dh}", r"S'_h = \frac{Q_h K_h^\top}{\sqrt{d_h}}"
        summary = (f"Every score is divided by the square root of the {dh} numbers each head "
                   f"works on: √{dh} ≈ {dh ** 0.5:.2f} (d_head in the formula). This keeps the "
                   "softmax from becoming too peaked.")
    elif scale == 1.0:
        title, formula = "No scaling", r"S'_h = Q_h K_h^\top"
        why = ("T5 was trained that way; it folds the division into how its query weights "
               "start" if cfg.positions == "relative" else "it was trained that way")
        summary = (f"This model does not divide the scores at all ({why}): the softmax sees "
                   "the raw dot products.")
    else:
        title, formula = f"Multiply by {scale:.4g}", r"S'_h = s \, Q_h K_h^\top"
        summary = (f"Every score is multiplied by {scale:.4g}, the scale this model was "
                   f"trained with (one over the square root of {1 / scale ** 2:.4g}, not of "
                   f"the {dh} numbers each head works on).")
    if cfg.attn_softcap is not None:
        cap = cfg.attn_softcap
        capped = scores_from(qk, torch.zeros((), dtype=qk.dtype), scale, cap)  # no mask yet
        summary += (f" Then every score is squashed into (−{cap:g}, {cap:g}) by "
                    f"{cap:g}·tanh(score / {cap:g}): large scores stop growing.")
        formula += rf",\quad S'_h \leftarrow {cap:g}\tanh(S'_h / {cap:g})"
        shown.append(Shown("capped scores", capped, BHQK, w.names.attn(layer, "qk"),
                           f"`torch.tanh(hook_qk * {scale:.6g} / {cap:g}) * {cap:g}`",
                           "squashed into the cap"))
    w.add("scale", g, title, summary,
          "A dot product of d_head random numbers spreads like √d_head. Without a division, "
          "wide heads would give near one-hot softmaxes and tiny gradients.",
          formula, shown, "scores", layer,
          "S′ (“S prime”) is the table of scores of head h after this step; Qₕ and Kₕ are "
          "its queries and keys.")


def _relative_bias_step(w: Walk, layer: int) -> None:
    """T5: the relative position bias, added to the scores of every layer."""
    g = f"Layer {layer}: attention"
    bias = w.hook("rel_bias.hook_bias")  # [1, heads, q_pos, k_pos]
    w.add("relative_bias", g, "Add the position bias",
          "This model has no position vectors. Instead, each head adds a learned number to "
          "every score that depends only on how far the key is from the query: one number per "
          "distance nearby, one per range of distances further away.",
          "T5's relative position bias: a table of [bucket, head] numbers, looked up by the "
          "bucket of key position − query position (the encoder tells before from after; the "
          "decoder only looks back). It is computed once and added in every layer, together "
          "with the mask; the scores are not divided by √d_head.",
          r"S'_h \leftarrow S'_h + B_h,\quad B_{h,ij} = b_h(\text{bucket}(j - i))",
          [Shown("position bias B", bias, ("batch (broadcast)", "heads", "q_pos", "k_pos"),
                 "rel_bias.hook_bias", "`W_bias[bucket(k_pos - q_pos)]`, heads first",
                 "the number each head adds at each distance")], None, layer)
