"""The forward pass as a classroom walkthrough: an ordered list of steps over one full Trace.

Each `Step` shows one or a few real tensors (`Shown`): what the step does, a longer teacher's
note, the formula, and where the tensor came from (a hook name, or a Trace field). Shapes are
read from the tensors, never written here. Where the tensor on screen is not a hook tensor
itself (Q as one [batch, seq, d_model] matrix before the head split, the transposed key, the
scores before the mask) it is derived from the real hook tensor by a reshape, a transpose or
the forward pass's own arithmetic, and `Shown.how` says which.

Two orders, chosen by the config: post-LN encoders (BERT: embeddings and LayerNorm, attention,
add & norm, feed-forward, add & norm, pooler on [CLS]) and pre-LN decoders (GPT-2, Llama: norm
first, causal mask, final norm, unembedding, next-token probabilities).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from .trace import Trace
from .transformer import attention_mask_bias

BLOCKED = torch.finfo(torch.float32).min / 2  # the model writes −∞ as float32's minimum
BTD = ("batch", "seq", "d_model")
BHQK = ("batch", "heads", "q_pos", "k_pos")
LN = r"\mathrm{LN}(x) = \gamma \odot \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}} + \beta"
RMS = r"\mathrm{RMSNorm}(x) = \gamma \odot \frac{x}{\sqrt{\operatorname{mean}(x^2) + \varepsilon}}"
JOIN = "`{}.transpose(1, 2).reshape(batch, seq, {}·d_head)`"


@dataclass(frozen=True)
class Shown:
    """One real tensor on screen. `source`: the hook name (or `trace.<field>`) it comes from;
    `how`: the reshape, transpose or arithmetic that derives it from the source ("" if none)."""

    label: str
    tensor: torch.Tensor
    dims: tuple[str, ...]
    source: str
    how: str = ""

    def __post_init__(self) -> None:
        if len(self.dims) != self.tensor.dim():
            raise ValueError(f"{self.label}: {len(self.dims)} dim names {self.dims} for a "
                             f"tensor of shape {list(self.tensor.shape)}")

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.tensor.shape)


@dataclass(frozen=True)
class Step:
    key: str  # stable id, e.g. "qkv_proj"
    group: str  # "Input", "Embeddings", "Layer 2", "All layers", "Output"
    title: str
    summary: str  # one or two sentences, always shown
    teacher: str  # the longer explanation behind the teacher toggle
    formula: str  # LaTeX
    shown: tuple[Shown, ...]
    figure: str | None = None  # tokens, values, scores, mask, pattern, activation, stack, top
    layer: int | None = None


@dataclass(frozen=True)
class Preview:
    values: np.ndarray  # [rows, cols]: the first rows and columns of a 2-D slice
    row_dim: str
    col_dim: str
    n_rows: int  # full lengths of the two dimensions
    n_cols: int
    fixed: dict[str, int]  # leading dimensions, held at one index


def preview(shown: Shown, pick: dict[str, int] | None = None, rows: int = 6,
            cols: int = 8) -> Preview:
    """The first rows and columns of the real tensor. Dimensions before the last two are held
    at `pick[dim]` (e.g. {"batch": 1, "heads": 3}; clamped), else 0. The model's blocked cells
    come back as -inf."""
    x, fixed = shown.tensor, {}
    for dim in shown.dims[:-2]:
        fixed[dim] = min(max(int((pick or {}).get(dim, 0)), 0), x.shape[0] - 1)
        x = x[fixed[dim]]
    values = x[:rows, :cols].numpy()  # [rows, cols]
    if values.dtype.kind == "f":
        values = np.where(values <= BLOCKED, -np.inf, values)
    return Preview(values, shown.dims[-2], shown.dims[-1], x.shape[0], x.shape[1], fixed)


def top_tokens(probs: torch.Tensor, k: int = 10) -> tuple[list[int], list[float]]:
    """The k most likely ids of one probability row [vocab], most likely first."""
    top = torch.topk(probs, min(k, probs.shape[-1]))
    return top.indices.tolist(), top.values.tolist()


def _join_heads(x: torch.Tensor) -> torch.Tensor:
    batch, heads, seq, d_head = x.shape  # [batch, heads, seq, d_head]
    return x.transpose(1, 2).reshape(batch, seq, heads * d_head)  # [batch, seq, heads*d_head]


class _Walk:
    def __init__(self, trace: Trace) -> None:
        self.trace, self.cfg, self.steps = trace, trace.cfg, []
        self.pre_ln = trace.cfg.block == "pre_ln"
        self.norm = "RMSNorm" if trace.cfg.norm == "rmsnorm" else "LayerNorm"
        self.norm_formula = RMS if trace.cfg.norm == "rmsnorm" else LN

    def hook(self, name: str) -> torch.Tensor:
        if name not in self.trace.cache:
            raise ValueError(f"the walkthrough needs a full trace (run with keep=None); this "
                             f"one has no {name!r}")
        return self.trace.cache[name]

    def has(self, name: str) -> bool:
        return name in self.trace.cache

    def add(self, key, group, title, summary, teacher, formula, shown, figure=None, layer=None):
        self.steps.append(Step(key, group, title, summary, teacher, formula, tuple(shown),
                               figure, layer))

    def shown(self, label: str, name: str, dims: tuple[str, ...]) -> Shown:
        return Shown(label, self.hook(name), dims, name)


# ------------------------------------------------------------------------ input, embeddings
def _input_steps(w: _Walk) -> None:
    t, cfg = w.trace, w.cfg
    n_pad = int((t.attention_mask == 0).sum())
    n_special = int((t.special_mask.bool() & t.attention_mask.bool()).sum())
    w.add("tokens", "Input", "Text → tokens → ids",
          f"The tokenizer cuts the text into pieces and looks each one up in a vocabulary of "
          f"{cfg.d_vocab:,} entries, adding {n_special} special token(s). The model sees only "
          f"these integers: one row per text, {t.n_tokens} positions.",
          "A token is a word, a piece of a word or a punctuation mark; its id is a row number "
          "in the embedding table. BERT-style models add [CLS] at the start and [SEP] after each "
          "sentence, GPT-2 adds nothing, Llama a beginning-of-sequence token. Texts that share "
          "a batch must have one length, so the shorter ones are padded on the right.",
          r"\text{text} \xrightarrow{\text{tokenizer}} (t_0, \dots, t_{T-1}) \mapsto "
          r"\text{ids} \in \{0, \dots, V-1\}^{B \times T}",
          [Shown("input ids", t.input_ids, ("batch", "seq"), "trace.input_ids")], "tokens")
    w.add("attention_mask", "Input", "The attention mask",
          "1 marks a real token, 0 a padding token that only fills a row up to the batch's "
          "length. " + (f"Here {n_pad} position(s) are padding." if n_pad else
                        "All ones: nothing is padded in this input."),
          "Padding makes the tensor rectangular but must not change the result. Inside every "
          "attention layer the mask becomes a matrix with −∞ in the padded columns, so after "
          "the softmax no token gives any weight to padding. Padding tokens still get vectors "
          "of their own; they are simply never looked at.",
          r"m_{b,j} = \begin{cases} 1 & \text{token } j \text{ of text } b \text{ is real} \\ "
          r"0 & \text{padding} \end{cases}",
          [Shown("attention mask", t.attention_mask, ("batch", "seq"), "trace.attention_mask")],
          "tokens")
    if cfg.n_token_types:
        w.add("token_types", "Input", "Token types (segments)",
              f"Type 0 marks the first sentence, type 1 the second; here "
              f"{int(t.token_type_ids.sum())} position(s) have type 1.",
              "BERT was trained on sentence pairs (does B follow A? does this answer fit the "
              "question?). The type tells each token which sentence it belongs to.",
              r"\text{type}_{b,j} \in \{0, 1\}",
              [Shown("token type ids", t.token_type_ids, ("batch", "seq"),
                     "trace.token_type_ids")], "tokens")


def _embedding_steps(w: _Walk) -> None:
    cfg = w.cfg
    rope = (" A rotary model adds no position vector: positions enter inside attention, where "
            "q and k are rotated by an angle that grows with the position (RoPE)."
            if cfg.positions == "rotary" else "")
    w.add("embed_tok", "Embeddings", "Token embeddings",
          f"Each id picks one row of the token embedding table W_E [{cfg.d_vocab:,}, "
          f"{cfg.d_model}]: a learned vector of d_model numbers.{rope}",
          "Looking up a row is the same as multiplying a one-hot vector by W_E. Tokens used in "
          "similar ways end up with similar rows."
          + (" The original transformer multiplies by √d_model so the embeddings are not "
             "drowned by the positional encoding." if cfg.embed_scale else ""),
          r"E_{\text{tok}}[b, j] = " + (r"\sqrt{d_{model}}\," if cfg.embed_scale else "")
          + r"W_E[\text{ids}_{b,j}]", [w.shown("token embedding", "embed.hook_tok", BTD)],
          "values")
    if w.has("embed.hook_type"):
        w.add("embed_type", "Embeddings", "Token type embeddings",
              f"Each token type picks a row of a small table with {cfg.n_token_types} rows.",
              "With a single sentence every token gets row 0: the same vector everywhere.",
              r"E_{\text{type}}[b, j] = W_{\text{type}}[\text{type}_{b,j}]",
              [w.shown("token type embedding", "embed.hook_type", BTD)], "values")
    if w.has("embed.hook_pos"):
        learned = cfg.positions == "learned"
        w.add("embed_pos", "Embeddings", "Position embeddings" if learned else
              "Positional encoding",
              f"Position j picks row j of a learned table of {cfg.n_ctx + cfg.position_offset} "
              "rows, so one word at two places gets two vectors." if learned else
              "A fixed table of sines and cosines of different frequencies, one row per "
              "position; nothing here is learned.",
              "Without positions, attention could not tell 'dog bites man' from 'man bites "
              "dog'. The table is [seq, d_model], added to every text of the batch; the hook "
              "records it already broadcast to [batch, seq, d_model]."
              + (" RoBERTa numbers positions from the padding id + 1." if cfg.position_offset
                 else ""),
              r"E_{\text{pos}}[b, j] = W_{\text{pos}}[j]" if learned else
              r"PE_{j,2i} = \sin\big(j / 10000^{2i/d}\big),\;PE_{j,2i+1} = "
              r"\cos\big(j / 10000^{2i/d}\big)",
              [w.shown("position embedding", "embed.hook_pos", BTD)], "values")
    if w.has("embed.hook_sum"):
        parts = " + ".join(rf"E_{{\text{{{p}}}}}" for p in ("tok", "type", "pos")
                           if w.has(f"embed.hook_{p}"))
        w.add("embed_sum", "Embeddings", "Sum of the embeddings",
              "The parts are added number by number: one vector per token that knows both what "
              "the token is and where it stands.",
              "Adding rather than concatenating keeps the width at d_model; training learns to "
              "keep the parts in different directions. Dropout would follow in training; at "
              "inference it does nothing.", rf"X = {parts}",
              [w.shown("sum", "embed.hook_sum", BTD)], "values")
    if w.has("embed.ln.hook_normalized"):
        w.add("embed_norm", "Embeddings", f"{w.norm} of the embeddings",
              f"{w.norm} rescales each token's vector to mean 0 and variance 1, then applies a "
              "learned gain γ and bias β. Dropout comes next in the code but does nothing at "
              "inference, so this is the embeddings' output.",
              "The statistics are taken over the d_model numbers of one token, never across "
              "tokens or texts.", w.norm_formula,
              [w.shown("normalized embeddings", "embed.ln.hook_normalized", BTD)], "values")


# ------------------------------------------------------------------------------ one layer
def _attention_steps(w: _Walk, layer: int) -> None:
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


def _mlp_steps(w: _Walk, layer: int) -> None:
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


# ---------------------------------------------------------------------------- the stack, end
def _stack_step(w: _Walk) -> None:
    n = w.cfg.n_layers
    names = ["blocks.0.hook_resid_pre"] + [f"blocks.{i}.hook_resid_post" for i in range(n)]
    stack = torch.stack([w.hook(name) for name in names], dim=1)  # [batch, layer, seq, d_model]
    w.add("stack", "All layers", f"Repeat for all {n} layers",
          f"The same block runs {n} times, each time with its own weights; each layer's output "
          "is the next one's input. Move the layer slider to walk through another layer.",
          "The figure shows the length of every token's vector after each layer: the stream "
          "keeps its shape while its contents change.",
          r"X^{(\ell+1)} = \text{Block}_\ell(X^{(\ell)}),\quad \ell = 0, \dots, L-1",
          [Shown("all layers", stack, ("batch", "layer", "seq", "d_model"),
                 "blocks.*.hook_resid_post", "`torch.stack([blocks.0.hook_resid_pre, "
                 "blocks.0.hook_resid_post, …], dim=1)`"),
           Shown("vector lengths", stack.norm(dim=-1), ("batch", "layer", "seq"),
                 "blocks.*.hook_resid_post", "`stack.norm(dim=-1)`")], "stack")


def _end_steps(w: _Walk) -> None:
    cfg, last = w.cfg, f"blocks.{w.cfg.n_layers - 1}.hook_resid_post"
    if w.has("ln_final.hook_normalized"):
        w.add("final_norm", "Output", f"Final {w.norm}",
              "After the last layer, a pre-LN model normalizes the stream once more.",
              "Every layer added to the stream without normalizing it, so its scale has grown; "
              "this norm prepares it for the unembedding.", w.norm_formula,
              [w.shown("final", "ln_final.hook_normalized", BTD)], "values")
    if w.has("hook_logits"):
        logits = w.hook("hook_logits")  # [batch, seq, vocab]
        w.add("unembed", "Output", "Unembedding to logits",
              f"A linear map scores all {cfg.d_vocab:,} vocabulary entries at every position."
              + (" Its weights are the token embedding table, reused (tied)."
                 if cfg.tie_embeddings else ""),
              "Row j is the model's guess for the token after position j, which the causal "
              "mask kept it from seeing.", r"\text{logits} = X_{\text{final}}\, W_U",
              [w.shown("logits", "hook_logits", ("batch", "seq", "vocab"))])
        last_real = w.trace.attention_mask.sum(dim=1).clamp(min=1) - 1  # [batch]
        probs = logits[torch.arange(logits.shape[0]), last_real].softmax(-1)  # [batch, vocab]
        w.add("next_token", "Output", "Next-token probabilities",
              "The softmax of the last real token's logits: the model's probabilities for the "
              "next token. The bars show the most likely ones.",
              "Generation picks one (the most likely, or a random draw), appends it and runs "
              "again. Right padding is skipped: each text uses its own last real token.",
              r"p(t_T \mid t_{<T}) = \operatorname{softmax}(\text{logits}_{T-1})",
              [Shown("probabilities", probs, ("batch", "vocab"), "hook_logits",
                     "`hook_logits[b, last real position of b].softmax(-1)`")], "top")
        return
    w.add("output", "Output", "The encoder's output",
          "The last layer's output is the model's result: one contextual vector per token.",
          "A task head reads these vectors: a classifier, a span finder, a sentence embedding.",
          r"H = X^{(L)}", [w.shown("last hidden state", last, BTD)], "values")
    if w.has("pooler.hook_out"):
        w.add("pooler", "Output", "[CLS] and the pooler",
              "BERT keeps the first token's vector ([CLS]) as a summary of the input and passes "
              "it through a dense layer and tanh: one vector per text.",
              "A classifier (seed 001's sentiment head) reads this pooled vector. Sentence "
              "models like all-MiniLM-L6-v2 ignore the pooler and average the token vectors.",
              r"p = \tanh\big(W_p\, h_{[\mathrm{CLS}]} + b_p\big)",
              [Shown("[CLS] vector", w.hook(last)[:, 0], ("batch", "d_model"), last,
                     "`[:, 0]`, the first position"),
               w.shown("pooled", "pooler.hook_out", ("batch", "d_model"))])


def walkthrough(trace: Trace, layer: int = 0) -> list[Step]:
    """Every step of the forward pass of `trace` (a full trace: run with keep=None), with the
    layer steps for `layer`, in the encoder (post-LN) or decoder (pre-LN) order."""
    if not 0 <= layer < trace.cfg.n_layers:
        raise ValueError(f"layer must be in [0, {trace.cfg.n_layers - 1}], got {layer}")
    w = _Walk(trace)
    for build in (_input_steps, _embedding_steps):
        build(w)
    _attention_steps(w, layer)
    _mlp_steps(w, layer)
    _stack_step(w)
    _end_steps(w)
    return w.steps
