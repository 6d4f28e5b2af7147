"""The names of hook points, built from the layout of the module tree, so nobody types them.

A hook point's name is its path in the module tree (`blocks.3.attn.hook_pattern`). This file
writes that path down once, from the same facts the modules are built from (the block kind,
rotary positions, a gated MLP, ...), and refuses a name the model does not have with a
sentence that says why, instead of producing a string that matches nothing:

    names = hook_names(cfg)
    names.attn(3, "pattern")   # "blocks.3.attn.hook_pattern"
    names.resid(3, "pre")      # "blocks.3.hook_resid_pre"
    names.resid(3, "mid")      # GPT-NeoX: HookNameError (its parallel blocks have no such stream)
    names.embed("pos", required=False)  # None for a model without a position embedding

`tests/unit/test_hook_names.py` checks, for every family, that the names this can produce are
exactly the model's `hook_names`.
"""

from __future__ import annotations

import functools
import operator

from .config import TransformerConfig

RESID = ("pre", "mid", "post")  # the stream before the block, between its parts, after it
OUTS = ("attn", "mlp")  # what attention / the MLP add (hook_attn_out, hook_mlp_out)
ATTN = ("q", "k", "v", "rot_q", "rot_k", "qk", "scores", "pattern", "z")
MLP = ("pre", "pre_linear", "post")
NORMS = ("ln1", "ln2", "ln1_post", "ln2_post", "q_norm", "k_norm")
EMBED = ("tok", "type", "pos", "sum", "project", "ln")
# The encoder–decoder's decoder blocks (model/seq2seq.py): cross-attention between the parts
DECODER_RESID = ("pre", "mid", "cross", "post")
DECODER_OUTS = ("attn", "cross", "mlp")
DECODER_NORMS = ("ln1", "ln_cross", "ln2")
CROSS_ATTN = ("q", "k", "v", "qk", "scores", "pattern", "z")


class HookNameError(KeyError):
    """A hook point this model does not have (a KeyError, as a missing cache entry is)."""

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


def _one_of(what: str, choices: tuple[str, ...], kind: str) -> None:
    if what not in choices:
        raise HookNameError(f"{what!r} is not among the {kind} hook points; choose one of "
                            f"{', '.join(choices)}")


class HookNames:
    """Hook point names of one stack of blocks (a model, or the encoder–decoder's decoder)."""

    def __init__(self, cfg: TransformerConfig, decoder: bool = False) -> None:
        self.cfg = cfg
        self.decoder = decoder  # the encoder–decoder's decoder: names under "decoder."
        self.prefix = "decoder." if decoder else ""

    # -------------------------------------------------------------------------- helpers
    def _refuse(self, name: str, why: str, required: bool) -> None:
        if required:
            raise HookNameError(f"this model has no {name}: {why}")
        return None

    def _block(self, layer: int) -> str:
        try:
            number = operator.index(layer)  # an int, or a numpy integer
        except TypeError:
            number = None
        if number is None or isinstance(layer, bool) or not 0 <= number < self.cfg.n_layers:
            raise HookNameError(f"layer {layer!r} does not exist: the layers are numbered "
                                f"0 to {self.cfg.n_layers - 1}")
        return f"{self.prefix}blocks.{number}."

    @property
    def _has_mlp(self) -> bool:
        return not self.cfg.attn_only

    # ------------------------------------------------------------------ inside a block
    def resid(self, layer: int, where: str, required: bool = True) -> str | None:
        """The residual stream: "pre" (the block's input), "mid", "post" (its output);
        the decoder's blocks also have "cross" (after cross-attention)."""
        _one_of(where, DECODER_RESID if self.decoder else RESID, "residual stream")
        block = self._block(layer)
        if where == "mid" and self.cfg.block == "parallel":
            return self._refuse("residual stream between attention and the MLP",
                                "its parallel blocks (GPT-NeoX) feed the block's input to "
                                "both, so nothing lies in between; use 'pre' or 'post'",
                                required)
        return f"{block}hook_resid_{where}"

    def resid_row(self, row: int) -> str:
        """Row `row` of a residual grid with n_layers + 1 rows (the patching grids):
        row l < n_layers is block l's input (resid "pre"), the last row the last block's
        output (resid "post")."""
        n_layers = self.cfg.n_layers
        if not 0 <= row <= n_layers:
            raise HookNameError(f"row {row!r} does not exist: the rows are numbered 0 to "
                                f"{n_layers}")
        return self.resid(row, "pre") if row < n_layers else self.resid(n_layers - 1, "post")

    def resid_rows(self) -> list[str]:
        """Every row of a residual grid, in order (`resid_row`)."""
        return [self.resid_row(row) for row in range(self.cfg.n_layers + 1)]

    def out(self, layer: int, part: str, required: bool = True) -> str | None:
        """What a block's "attn" or "mlp" part computed (before it joins the stream)."""
        _one_of(part, DECODER_OUTS if self.decoder else OUTS, "block output")
        block = self._block(layer)
        if part == "mlp" and not self._has_mlp:
            return self._refuse("MLP output", "it is an attention-only model", required)
        return f"{block}hook_{part}_out"

    def attn(self, layer: int, what: str, required: bool = True) -> str | None:
        """Inside attention: q, k, v, rot_q, rot_k, qk, scores, pattern, z."""
        _one_of(what, ATTN, "attention")
        block = self._block(layer)
        if what in ("rot_q", "rot_k") and self.cfg.positions != "rotary":
            return self._refuse(f"rotated {what[-1]}", "it has no rotary positions", required)
        return f"{block}attn.hook_{what}"

    def cross_attn(self, layer: int, what: str) -> str:
        """Inside the decoder's cross-attention (encoder–decoder models)."""
        _one_of(what, CROSS_ATTN, "cross-attention")
        if not self.decoder:
            raise HookNameError("only the decoder of an encoder–decoder model has "
                                "cross-attention; use hook_names(cfg, decoder=True)")
        return f"{self._block(layer)}cross_attn.hook_{what}"

    def mlp(self, layer: int, what: str, required: bool = True) -> str | None:
        """Inside the MLP: pre (before the activation), pre_linear (gated MLPs), post."""
        _one_of(what, MLP, "MLP")
        block = self._block(layer)
        if not self._has_mlp:
            return self._refuse("MLP", "it is an attention-only model", required)
        if what == "pre_linear" and not self.cfg.gated_mlp:
            return self._refuse("ungated up-projection", "its MLP has no gate", required)
        return f"{block}mlp.hook_{what}"

    def norm(self, layer: int, which: str, required: bool = True) -> str | None:
        """A norm's output in a block: ln1, ln2, ln1_post, ln2_post (sandwich blocks),
        q_norm, k_norm (per-head q/k norms); the decoder's blocks: ln1, ln_cross, ln2."""
        _one_of(which, DECODER_NORMS if self.decoder else NORMS, "norm")
        block = self._block(layer)
        if which == "ln2" and not self._has_mlp:
            return self._refuse("norm before the MLP", "it is an attention-only model",
                                required)
        if which.endswith("_post") and self.cfg.block != "sandwich":
            return self._refuse(f"{which} norm", "only sandwich blocks (Gemma 2 and 3) have a "
                                "norm after each part", required)
        if which in ("q_norm", "k_norm"):
            if not self.cfg.qk_norm:
                return self._refuse(f"{which}", "its heads' queries and keys are not "
                                    "normalized", required)
            return f"{block}attn.{which}.hook_normalized"
        return f"{block}{which}.hook_normalized"

    # -------------------------------------------------------------- outside the blocks
    def embed(self, part: str, required: bool = True) -> str | None:
        """The embeddings: tok, type, pos, sum, project (ELECTRA), ln (BERT's norm)."""
        _one_of(part, EMBED, "embedding")
        cfg, base = self.cfg, f"{self.prefix}embed."
        positions = cfg.positions in ("learned", "sinusoidal")
        learned = cfg.positions == "learned"
        missing = {
            "type": (not (learned and cfg.n_token_types), "it has no token type embeddings"),
            "pos": (not positions, "its positions are rotations of q and k, not embeddings"),
            "sum": (not positions, "its only embedding is the token's"),
            "project": (not (learned and cfg.d_embed and cfg.d_embed != cfg.d_model),
                        "its embeddings are as wide as the model"),
            "ln": (not (learned and cfg.embed_norm), "it has no norm after the embeddings"),
        }
        lacking, why = missing.get(part, (False, ""))
        if lacking:
            return self._refuse(f"{part} embedding hook", why, required)
        return f"{base}ln.hook_normalized" if part == "ln" else f"{base}hook_{part}"

    def final_norm(self, required: bool = True) -> str | None:
        """The final norm's output (decoders and pre-LN encoders)."""
        if self.cfg.block == "post_ln" and not self.decoder:
            return self._refuse("final norm", "its blocks end with a norm already (post-LN)",
                                required)
        return f"{self.prefix}ln_final.hook_normalized"

    def logits(self, required: bool = True) -> str | None:
        if not (self.cfg.has_lm_head or self.decoder):
            return self._refuse("logits", "it has no language-model head", required)
        return f"{self.prefix}hook_logits"

    def pooler(self, required: bool = True) -> str | None:
        if not self.cfg.has_pooler or self.decoder:
            return self._refuse("pooler", "it has no [CLS] pooler", required)
        return "pooler.hook_out"

    # ------------------------------------------------------------------------- lists
    def layer_of(self, name: str) -> int | None:
        """The layer a block's hook name belongs to ("blocks.3.attn.hook_z" -> 3), else None."""
        head = f"{self.prefix}blocks."
        number = name[len(head):].split(".", 1)[0] if name.startswith(head) else ""
        return int(number) if number.isdigit() else None

    def every_layer(self, method: str, what: str) -> list[str]:
        """One name per layer, e.g. every_layer("attn", "pattern")."""
        return [getattr(self, method)(layer, what) for layer in range(self.cfg.n_layers)]


_SUFFIXES = {
    "resid": (DECODER_RESID, "hook_resid_{}"), "out": (DECODER_OUTS, "hook_{}_out"),
    "attn": (ATTN, "attn.hook_{}"), "cross_attn": (CROSS_ATTN, "cross_attn.hook_{}"),
    "mlp": (MLP, "mlp.hook_{}"), "embed": (EMBED, "embed.hook_{}"),
}
_ENDS = {"final_norm": "ln_final.hook_normalized", "logits": "hook_logits",
         "pooler": "pooler.hook_out"}


def suffix(kind: str, what: str | None = None) -> str:
    """How a hook's name ends whatever the layer, for tests over the names of every layer and
    for tables keyed by kind: suffix("attn", "qk") is "attn.hook_qk", suffix("resid", "pre")
    "hook_resid_pre", suffix("norm", "ln1") "ln1.hook_normalized", suffix("logits")
    "hook_logits". It does not check that a model has that hook (`hook_names(cfg)` does)."""
    if kind in _ENDS and what is None:
        return _ENDS[kind]
    if kind == "norm":
        _one_of(what, tuple(dict.fromkeys(NORMS + DECODER_NORMS)), "norm")
        return f"{'attn.' if what in ('q_norm', 'k_norm') else ''}{what}.hook_normalized"
    if kind == "embed" and what == "ln":
        return "embed.ln.hook_normalized"
    if kind not in _SUFFIXES:
        raise HookNameError(f"{kind!r} is not a kind of hook point; choose one of "
                            f"{', '.join([*_SUFFIXES, 'norm', *_ENDS])}")
    choices, form = _SUFFIXES[kind]
    _one_of(what, choices + (RESID if kind == "resid" else ()), kind)
    return form.format(what)


@functools.lru_cache(maxsize=64)
def hook_names(cfg: TransformerConfig, decoder: bool = False) -> HookNames:
    """The hook point names of a model with config `cfg` (`decoder=True`: the encoder–decoder's
    decoder, whose config is the model's `dec_cfg`)."""
    return HookNames(cfg, decoder)
