"""The walkthrough's steps inside one layer: attention (Q, K, V, scores, mask, softmax, the
weighted sum, the output projection) and the feed-forward network with its residual connections
and norms, in the encoder (post-LN) or decoder (pre-LN) order.

Split from model/walkthrough.py, which defines `Shown`, `Step` and the `_Walk` builder and calls
`attention_steps` and `mlp_steps` for the chosen layer; import the public API from there.
"""

from __future__ import annotations

import torch

from .transformer import attention_mask_bias
from .walkthrough import BHQK, BTD, JOIN, Shown, _Walk


def _join_heads(x: torch.Tensor) -> torch.Tensor:
    batch, heads, seq, d_head = x.shape  # [batch, heads, seq, d_head]
    return x.transpose(1, 2).reshape(batch, seq, heads * d_head)  # [batch, seq, heads*d_head]


def attention_steps(w: _Walk, layer: int) -> None:
    cfg, p, g = w.cfg, f"blocks.{layer}.", f"Layer {layer}"
    h, kv, dh = cfg.n_heads, cfg.kv_heads, cfg.d_head
    width = "d_model" if h * dh == cfg.d_model else "heads·d_head"
    kv_dim, kv_width = ("kv_heads", "kv_heads·d_head") if kv != h else ("heads", width)
    came = "the embeddings' output" if layer == 0 else f"the output of layer {layer - 1}"
    w.add("layer_input", g, "The layer's input",
          f"Layer {layer} of {cfg.n_layers} reads {came}: the residual stream, one vector per "
          "token.",
          "Every layer has the same shape in and out, which is why layers can be stacked. Each "
          "one reads the stream and adds its results to it.",
          r"X^{(\ell)} = \text{output of layer } \ell - 1",
          [w.shown("X", p + "hook_resid_pre", BTD)], "values", layer)
    if w.pre_ln:
        w.add("ln1", g, f"{w.norm} before attention",
              "Pre-LN: the block normalizes a copy of its input for attention; the stream "
              "itself stays as it is.",
              "GPT-2 and Llama put the norm first. The residual stream stays an untouched "
              "running sum, which makes deep models easier to train than BERT's post-LN order.",
              w.norm_formula, [w.shown("normalized X", p + "ln1.hook_normalized", BTD)],
              "values", layer)
    qkv = {n: w.hook(f"{p}attn.hook_{n}") for n in "qkv"}  # [batch, heads, seq, d_head] each
    w.add("qkv_proj", g, "Q, K, V projections",
          "Three learned linear maps turn every token's vector into a query (what it looks "
          "for), a key (what it offers) and a value (what it passes on)."
          + (f" {kv} key/value heads serve {h} query heads (grouped-query attention), so K and "
             "V are narrower." if kv != h else ""),
          "Three matrix products over all tokens at once; in Hugging Face's BERT they are "
          "`nn.Linear(d_model, d_model)` layers. This model keeps the same weights split per "
          "head, so these tensors are its hook tensors with the heads side by side again.",
          r"Q = XW_Q + b_Q,\quad K = XW_K + b_K,\quad V = XW_V + b_V",
          [Shown(n.upper(), _join_heads(qkv[n]), ("batch", "seq", wd), f"{p}attn.hook_{n}",
                 JOIN.format(f"hook_{n}", nh) + ": the heads side by side, as one Linear "
                 "layer outputs them")
           for n, wd, nh in (("q", width, "heads"), ("k", kv_width, kv_dim),
                             ("v", kv_width, kv_dim))], None, layer)
    w.add("split_heads", g, "Split into heads",
          f"Each row is cut into {h} heads of d_head = d_model / heads = {cfg.d_model} / {h} = "
          f"{dh} numbers, and the head axis moves before the sequence.",
          "Nothing is computed: Hugging Face's code does `view` then `transpose(1, 2)`. Each "
          "head will build its own attention pattern; that is what 'multi-head' means.",
          r"Q_h = Q[:, :, h\,d_h : (h+1)\,d_h],\qquad d_h = d_{model} / H",
          [w.shown(f"{n.upper()} per head", f"{p}attn.hook_{n}",
                   ("batch", "heads" if n == "q" else kv_dim, "seq", "d_head")) for n in "qkv"],
          None, layer)
    k_name = p + ("attn.hook_rot_k" if w.has(p + "attn.hook_rot_k") else "attn.hook_k")
    if k_name.endswith("rot_k"):
        w.add("rotary", g, "Rotary positions (RoPE)",
              "Each pair of numbers in q and k is rotated by an angle proportional to the "
              "position, so q·k depends on how far apart two tokens are.",
              "This is where a Llama-style model learns about order. Values are not rotated.",
              r"\tilde q_j = R_{\theta j}\, q_j,\quad \tilde k_j = R_{\theta j}\, k_j",
              [w.shown("rotated Q", p + "attn.hook_rot_q", ("batch", "heads", "seq", "d_head")),
               w.shown("rotated K", k_name, ("batch", kv_dim, "seq", "d_head"))], None, layer)
    k_used, k_how = w.hook(k_name), "`.transpose(-1, -2)` of the hook tensor"
    if kv != h:
        k_used = k_used.repeat_interleave(h // kv, dim=1)  # [batch, heads, seq, d_head]
        k_how = (f"`.repeat_interleave({h // kv}, dim=1).transpose(-1, -2)` of the hook tensor: "
                 f"each key head serves {h // kv} query heads")
    w.add("k_transpose", g, "Transpose the key",
          "So that every query meets every key in one matrix product, the last two axes of K "
          "swap: the sequence now runs along the columns.",
          "A transpose copies nothing; it reads the same numbers in another order.",
          r"K_h^\top \in \mathbb{R}^{d_h \times T}",
          [Shown("Kᵀ", k_used.transpose(-1, -2), ("batch", "heads", "d_head", "seq"), k_name,
                 k_how)], None, layer)
    qk = w.hook(p + "attn.hook_qk")  # [batch, heads, q_pos, k_pos]
    w.add("scores", g, "Scores Q·Kᵀ",
          "Row i, column j is the dot product of query i with key j: how well token j matches "
          "what token i looks for. Rows are queries, columns are keys.",
          "One [seq, seq] matrix per head and per text; large and positive means a strong match.",
          r"S_h = Q_h K_h^\top", [w.shown("scores", p + "attn.hook_qk", BHQK)], "scores", layer)
    w.add("scale", g, "Divide by √d_head",
          f"Every score is divided by √d_head = √{dh} ≈ {dh ** 0.5:.2f}, which keeps the "
          "softmax from becoming too peaked.",
          "A dot product of d_head random numbers spreads like √d_head. Without the division, "
          "wide heads would give near one-hot softmaxes and tiny gradients.",
          r"S'_h = \frac{Q_h K_h^\top}{\sqrt{d_h}}",
          [Shown("scaled scores", qk * dh ** -0.5, BHQK, p + "attn.hook_qk",
                 f"`hook_qk * {dh ** -0.5:.6g}`; the forward pass fuses this with the mask: "
                 "`torch.add(mask, qk, alpha=scale)`")], "scores", layer)
    mask = attention_mask_bias(w.trace.attention_mask, cfg.causal, torch.float32)
    padded = bool((w.trace.attention_mask == 0).any())
    what = ("causal: the upper triangle (keys after the query) is −∞" if cfg.causal else
            "padding: the columns of padding keys are −∞" if padded else
            "all zeros, since this input has no padding")
    w.add("mask", g, "Add the mask",
          f"A matrix of 0 and −∞ is added to the scores. Here it is {what}"
          + (", and so are the padding columns" if cfg.causal and padded else "") + ".",
          "−∞ becomes exactly 0 after the softmax: a blocked key gets no attention at all. Like "
          "Hugging Face, the model adds float32's minimum (about −3.4·10³⁸) rather than a true "
          "−∞, so a row with every key blocked stays finite; the previews write it −∞. An "
          "encoder's mask is one row per text, [batch, 1, 1, seq], broadcast over heads and "
          "queries. Rows are queries and columns keys, so the causal mask hides the upper "
          "triangle (seed 004 draws the transpose).",
          r"S''_h = S'_h + M,\quad M_{ij} = \begin{cases} 0 & \text{query } i \text{ may see key }"
          r" j \\ -\infty & \text{otherwise} \end{cases}",
          [Shown("mask M", mask, ("batch", "heads (broadcast)",
                                  "q_pos" if cfg.causal else "q_pos (broadcast)", "k_pos"),
                 "trace.attention_mask", f"`attention_mask_bias(attention_mask, causal="
                 f"{cfg.causal})`, the function the forward pass calls"),
           w.shown("masked scores", p + "attn.hook_scores", BHQK)], "mask", layer)
    w.add("softmax", g, "Softmax over keys",
          "Each row is exponentiated and divided by its sum: weights between 0 and 1 that add "
          "up to 1, how much query i attends to each key.",
          "This is the pattern the Attention page draws. Dropout on it exists in training only.",
          r"A_{ij} = \frac{e^{S''_{ij}}}{\sum_k e^{S''_{ik}}}",
          [w.shown("attention pattern", p + "attn.hook_pattern", BHQK)], "pattern", layer)
    w.add("weighted_values", g, "Weighted sum of the values",
          "Each query's new vector is a mix of all value vectors, weighted by its row of "
          "attention: information flows from the tokens it attends to.",
          "Per head, [seq, seq] @ [seq, d_head] → [seq, d_head].",
          r"Z_h = A_h V_h",
          [w.shown("Z (context)", p + "attn.hook_z", ("batch", "heads", "seq", "d_head"))],
          "values", layer)
    z = w.hook(p + "attn.hook_z")  # [batch, heads, seq, d_head]
    w.add("join_heads", g, "Join the heads",
          f"The head axis moves back after the sequence and the {h} heads are laid side by "
          f"side: one row of {h} × {dh} numbers per token again.",
          "Hugging Face's code does `permute(0, 2, 1, 3)` then `view`: still no arithmetic. "
          "The heads are mixed in the next step.", r"\operatorname{concat}(Z_1, \dots, Z_H)",
          [Shown("permuted", z.transpose(1, 2), ("batch", "seq", "heads", "d_head"),
                 p + "attn.hook_z", "`hook_z.transpose(1, 2)`"),
           Shown("joined", _join_heads(z), ("batch", "seq", width), p + "attn.hook_z",
                 JOIN.format("hook_z", "heads"))], "values", layer)
    w.add("attn_out", g, "Output projection",
          "A last linear map W_O mixes the heads and brings the result back to d_model.",
          "Each head writes into the residual stream through its own slice of W_O.",
          r"\text{Attn}(X) = \operatorname{concat}(Z_1, \dots, Z_H)\, W_O + b_O",
          [w.shown("attention output", p + "hook_attn_out", BTD)], "values", layer)


def mlp_steps(w: _Walk, layer: int) -> None:
    cfg, p, g, name = w.cfg, f"blocks.{layer}.", f"Layer {layer}", w.norm
    if w.pre_ln:
        w.add("resid_attn", g, "Residual connection",
              "The attention output is added to the layer's input: the stream keeps what it "
              "had and gains what attention found.",
              "No norm on the stream in a pre-LN model; the next norm works on a copy.",
              r"X_{\text{mid}} = X + \text{Attn}(\mathrm{Norm}(X))",
              [w.shown("X + Attn", p + "hook_resid_mid", BTD)], "values", layer)
    else:
        w.add("add_norm_attn", g, f"Add & {name}",
              f"The attention output is added to the layer's input (the residual connection), "
              f"then {name} normalizes each token's vector. Dropout before the sum does nothing "
              "at inference.",
              "BERT's post-LN order: the norm sits on the stream itself, after the sum. The "
              "residual path lets each layer refine the vectors instead of replacing them.",
              r"X_{\text{mid}} = \mathrm{Norm}(X + \text{Attn}(X))",
              [Shown("X + Attn", w.hook(p + "hook_resid_pre") + w.hook(p + "hook_attn_out"), BTD,
                     p + "hook_attn_out", "`hook_resid_pre + hook_attn_out`"),
               w.shown(f"{name}(X + Attn)", p + "hook_resid_mid", BTD)], "values", layer)
    if not w.has(p + "hook_mlp_out"):  # attention-only model
        return
    up = ("batch", "seq", "d_mlp")
    if w.pre_ln:
        w.add("ln2", g, f"{name} before the MLP",
              "Pre-LN again: a normalized copy of the stream goes into the feed-forward network.",
              "The same formula as before attention, with its own learned weights.",
              w.norm_formula, [w.shown("normalized", p + "ln2.hook_normalized", BTD)], "values",
              layer)
    w.add("mlp_up", g, "Feed-forward: " + ("gate and up-projections" if cfg.gated_mlp else
                                           "up-projection"),
          f"{'Two linear maps widen' if cfg.gated_mlp else 'A linear map widens'} each token's "
          f"vector from {cfg.d_model} to d_mlp = {cfg.d_mlp} numbers"
          + (": a gate and an up-projection." if cfg.gated_mlp else "."),
          "The feed-forward network works on every token alone: tokens do not mix here. Most "
          "of a transformer's parameters live in it.",
          r"G = X W_{\text{gate}},\quad U = X W_{\text{up}}" if cfg.gated_mlp else
          r"H = X W_{\text{in}} + b_{\text{in}}",
          [w.shown("gate", p + "mlp.hook_pre", up), w.shown("up", p + "mlp.hook_pre_linear", up)]
          if cfg.gated_mlp else [w.shown("H", p + "mlp.hook_pre", up)], "values", layer)
    act = {"gelu": "GELU", "gelu_new": "GELU (tanh approximation)", "relu": "ReLU",
           "silu": "SiLU"}[cfg.act]
    w.add("mlp_act", g, "Activation: " + ("SwiGLU" if cfg.gated_mlp else act),
          f"{act} of the gate, multiplied number by number with the up-projection: the gate "
          "decides how much of each number passes." if cfg.gated_mlp else
          f"{act} is applied to every number: negative values are pushed to (or near) 0, "
          "positive ones pass almost unchanged.",
          "Without a non-linearity the projections would collapse into one linear map."
          + ("" if cfg.gated_mlp else " The figure plots the real numbers before and after."),
          r"\mathrm{SiLU}(G) \odot U,\quad \mathrm{SiLU}(g) = g\,\sigma(g)" if cfg.gated_mlp
          else r"\mathrm{GELU}(h) = h\,\Phi(h)" if cfg.act.startswith("gelu")
          else rf"\mathrm{{{act}}}(H)",
          ([] if cfg.gated_mlp else [w.shown("before", p + "mlp.hook_pre", up)])
          + [w.shown("activated", p + "mlp.hook_post", up)],
          "values" if cfg.gated_mlp else "activation", layer)
    w.add("mlp_down", g, "Feed-forward: down-projection",
          f"A last linear map brings each token back from {cfg.d_mlp} to {cfg.d_model} numbers.",
          "The output has the stream's shape, so it can be added to it.",
          r"\text{MLP}(X) = \mathrm{act}(\dots)\, W_{\text{out}} + b_{\text{out}}",
          [w.shown("MLP output", p + "hook_mlp_out", BTD)], "values", layer)
    if w.pre_ln:
        w.add("resid_mlp", g, "Residual connection",
              "The MLP output is added to the stream. This is the layer's output.",
              "The next layer, or the final norm, reads this stream.",
              r"X^{(\ell+1)} = X_{\text{mid}} + \text{MLP}(\mathrm{Norm}(X_{\text{mid}}))",
              [w.shown("layer output", p + "hook_resid_post", BTD)], "values", layer)
    else:
        w.add("add_norm_mlp", g, f"Add & {name} again",
              f"The MLP output is added to its input and {name} normalizes the sum. This is the "
              "layer's output.",
              "The same pattern as after attention: residual connection, then the norm (post-LN).",
              r"X^{(\ell+1)} = \mathrm{Norm}(X_{\text{mid}} + \text{MLP}(X_{\text{mid}}))",
              [Shown("X_mid + MLP", w.hook(p + "hook_resid_mid") + w.hook(p + "hook_mlp_out"),
                     BTD, p + "hook_mlp_out", "`hook_resid_mid + hook_mlp_out`"),
               w.shown("layer output", p + "hook_resid_post", BTD)], "values", layer)
