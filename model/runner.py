"""Running a loaded model: text in, a Trace of every hook point out.

`LoadedModel` is what load_model (loading.py) returns: the native transformer, its tokenizer and
the device. It is shared between the users of a hosted app, and nothing in `run` changes it.
"""

from __future__ import annotations

import copy
import functools
import threading
import weakref
from collections.abc import Callable

import torch

from .config import TransformerConfig
from .device import is_device_failure
from .hooks import caching_hook, hooks, hooks_active
from .tokenizer import Encoding, special_by_id
from .trace import EncoderDecoderTrace, Trace, TraceCache
from .transformer import HookedTransformer


# model -> module_recipes(model). Weak keys: an unloaded model is dropped. The recipes hold
# the model's sub-modules, never the model itself, so they do not keep it alive.
_RECIPES: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()
_RECIPES_LOCK = threading.Lock()


def module_recipes(model: torch.nn.Module) -> dict[str, tuple]:
    """name -> (function, names of its inputs), as the model's modules declare them (their
    `recipes()`: attention's q·k, z and output, the MLP's pre-activations, activation and
    output, the residual sums between the parts), the module paths put in front. Walked once
    per model: the walk is ~0.5 ms, the same for every run."""
    with _RECIPES_LOCK:
        found = _RECIPES.get(model)
    if found is not None:
        return found
    found = {}
    for path, module in model.named_modules():
        recipes = getattr(module, "recipes", None)
        if recipes is None or not path:  # the root's own would hold the model: none has one
            continue
        for hook, (fn, sources) in recipes().items():
            found[f"{path}.{hook}"] = (fn, tuple(f"{path}.{source}" for source in sources))
    with _RECIPES_LOCK:
        _RECIPES[model] = found
    return found


def lazy_recipes(model: torch.nn.Module, names: list[str],
                 masks: dict[str, torch.Tensor]) -> dict[str, tuple]:
    """name -> (function, names of its inputs) for the kept hook points a Trace can recompute
    from other kept ones with the very function the forward pass used (module_recipes, and
    the scores from q·k with Attention.scores_from). `masks`: the additive mask each attention
    module got, by module path; the scores of a module not in it are kept."""
    recipes = dict(module_recipes(model))
    for path, mask in masks.items():
        recipes[f"{path}.hook_scores"] = (
            functools.partial(model.get_submodule(path).scores_from, mask=mask),
            (f"{path}.hook_qk",))
    wanted = set(names)
    # usable when it is wanted and every input is kept or itself recomputed
    return {name: recipe for name, recipe in recipes.items()
            if name in wanted and all(source in wanted for source in recipe[1])}


def record(model: torch.nn.Module, names: list[str], forward: Callable[[], object],
           masks: Callable[[], dict[str, torch.Tensor]]):
    """forward() under no_grad, keeping the tensors of the hook points in `names`: (its
    output, hook name -> tensor). On the CPU, with no outside hook able to edit a tensor on its
    way, what lazy_recipes can recompute bit for bit is recomputed on first read instead of
    kept (inside each block everything but the pattern and the block's output, from its input:
    q, k, v, q·k, the scores given masks() (the mask of each attention module by path), z, the
    norms, the MLP's parts and the streams between the parts): fresh memory written per layer
    is most of what a full trace costs beyond the arithmetic (BENCHMARKS.md, "Forward pass").
    So a full trace keeps about what Hugging Face keeps with output_attentions and
    output_hidden_states; reading everything back costs about one more forward pass."""
    cache: dict[str, torch.Tensor] = {}
    store = caching_hook(cache)
    # no_grad, not inference_mode: a Trace's tensors are handed to users, and inference
    # tensors refuse in-place edits and any later use next to a parameter (x @ W_O).
    with torch.no_grad():
        on_cpu = next(model.parameters()).device.type == "cpu"
        recipes = lazy_recipes(model, names, masks()) if on_cpu and not hooks_active() else {}
        with hooks(model.hook_names, [(n, store) for n in names if n not in recipes]):
            out = forward()
    return out, (TraceCache(names, cache, recipes) if recipes else cache)


class LoadedModel:
    """A model ready to run: the native transformer, its tokenizer and where it runs.

    The object is shared between users of a hosted app: nothing in `run` changes it.
    """

    def __init__(self, name: str, model: HookedTransformer, tokenizer, device: torch.device,
                 notice: str | None = None) -> None:
        self.name = name
        self.model = model.eval()
        self.cfg: TransformerConfig = model.cfg
        self.tokenizer = tokenizer
        self.device = device
        self.notice = notice
        self._cpu_copy: HookedTransformer | None = None
        self._lock = threading.Lock()

    @property
    def hook_names(self) -> tuple[str, ...]:
        return self.model.hook_names

    @property
    def headless(self) -> bool:
        """A decoder loaded without its language-model head (a bare GPT2Model or LlamaModel
        checkpoint): it reads text like any decoder but cannot score the next token, so the
        logit lens and generation do not apply."""
        return self.cfg.causal and not self.cfg.has_lm_head

    def encode(self, text: str | list[str], pair: str | list[str] | None = None) -> Encoding:
        texts = [text] if isinstance(text, str) else list(text)
        pairs = None if pair is None else ([pair] if isinstance(pair, str) else list(pair))
        if not texts:
            raise ValueError("no text given: type something to run the model on")
        for t in texts + (pairs or []):
            if not isinstance(t, str):
                raise ValueError(f"texts must be strings, got {type(t).__name__}")
            if not t.strip():
                raise ValueError("the text is empty (or only whitespace): type something to run")
        if pairs is not None and len(pairs) != len(texts):
            raise ValueError("give one second sentence for each first sentence")
        return self.tokenizer.encode(texts, pairs, self.cfg.n_ctx)

    def run(self, text: str | list[str], pair: str | list[str] | None = None,
            keep=None) -> Trace:
        """Run text (or a batch of texts, or sentence pairs) and record every hook point.

        `keep` optionally limits the cache to hook names for which keep(name) is true.
        """
        enc = self.encode(text, pair)
        trace = self._run(enc, keep)
        trace.texts = [text] if isinstance(text, str) else list(text)
        trace.batched = not isinstance(text, str)
        return trace

    def run_ids(self, input_ids, attention_mask=None, token_type_ids=None, keep=None) -> Trace:
        """Run token ids directly ([pos] or [batch, pos]), bypassing the tokenizer."""
        ids = torch.as_tensor(input_ids, dtype=torch.long)
        if ids.dim() not in (1, 2):
            raise ValueError(f"token ids must be [pos] or [batch, pos], not {tuple(ids.shape)}")
        batched = ids.dim() == 2
        ids = ids if batched else ids[None]
        if ids.numel() == 0:
            raise ValueError("no token ids given")
        if int(ids.max()) >= self.cfg.d_vocab or int(ids.min()) < 0:
            raise ValueError(f"token ids must lie in [0, {self.cfg.d_vocab})")
        mask = torch.ones_like(ids) if attention_mask is None else torch.as_tensor(attention_mask)
        types = torch.zeros_like(ids) if token_type_ids is None else torch.as_tensor(token_type_ids)
        mask, types = mask.reshape(ids.shape).long(), types.reshape(ids.shape).long()
        n = self.cfg.n_ctx
        enc = Encoding(
            input_ids=ids[:, :n], attention_mask=mask[:, :n], token_type_ids=types[:, :n],
            special_mask=special_by_id(ids[:, :n], getattr(self.tokenizer, "special_ids", ()),
                                       mask[:, :n]),  # by id, as encode marks them
            tokens=[self.tokenizer.tokens(row) for row in ids[:, :n].tolist()],
            n_dropped=[max(0, int(m.sum()) - n) for m in mask],
        )
        trace = self._run(enc, keep)
        trace.batched = batched
        return trace

    def _forward(self, model: HookedTransformer, enc: Encoding, device, keep):
        names = [n for n in model.hook_names if keep is None or keep(n)]
        ids, mask = enc.input_ids.to(device), enc.attention_mask.to(device)

        def masks():  # as run_blocks makes them
            layers = model.layer_masks(mask, model.embed.W_E.weight.dtype)
            return {f"blocks.{i}.attn": m for i, m in enumerate(layers)}

        return record(model, names, lambda: model(ids, mask, enc.token_type_ids.to(device)),
                      masks)

    def _cpu_model(self) -> HookedTransformer:
        with self._lock:
            if self._cpu_copy is None:
                self._cpu_copy = copy.deepcopy(self.model).to("cpu")
            return self._cpu_copy

    def _run(self, enc: Encoding, keep) -> Trace:
        notice = None
        try:
            out, cache = self._forward(self.model, enc, self.device, keep)
        except RuntimeError as exc:
            if self.device.type == "cpu" or not is_device_failure(exc):
                raise
            notice = f"{self.device.type.upper()} failed ({exc.__class__.__name__}); ran on the CPU"
            out, cache = self._forward(self._cpu_model(), enc, torch.device("cpu"), keep)
        if self.device.type != "cpu" and notice is None:
            cache = {k: v.float().cpu() for k, v in cache.items()}
        return Trace(
            model_name=self.name, cfg=self.cfg, batch_tokens=enc.tokens,
            input_ids=enc.input_ids, attention_mask=enc.attention_mask,
            token_type_ids=enc.token_type_ids, special_mask=enc.special_mask,
            dropped=enc.n_dropped, cache=cache, batched=enc.input_ids.shape[0] > 1,
            typed_special=enc.typed_special,
            logits=None if out.logits is None else out.logits.float().cpu(),
            pooled=None if out.pooled is None else out.pooled.float().cpu(),
            final=out.final.float().cpu(), notice=notice or self.notice,
        )


class EncoderDecoderModel(LoadedModel):
    """`run(text)` encodes the text, decodes greedily, and records both sides."""

    def _run(self, enc: Encoding, keep) -> EncoderDecoderTrace:
        model, tok, dev = self.model, self.tokenizer, self.device
        src, mask = enc.input_ids.to(dev), enc.attention_mask.to(dev)  # [batch, src_pos]
        start, eos = self._special()
        with torch.no_grad():
            out = model.greedy(src, mask, start, eos, self._max_len(src.shape[1]))  # [batch, 1+out]
        dec_in = out[:, :-1] if out.shape[1] > 1 else out  # [batch, out_pos]
        names = [n for n in model.hook_names if keep is None or keep(n)]
        result, cache = record(
            model, names, lambda: model(src, mask, decoder_input_ids=dec_in),
            lambda: model.attention_masks(mask, dec_in, model.embed.W_E.weight.dtype))
        if dev.type != "cpu":
            cache = {k: v.float().cpu() for k, v in cache.items()}
        written = [tok.tokens(r) for r in out[:, 1:].tolist()]
        texts = [self._text(r, eos) for r in out[:, 1:].tolist()]
        return EncoderDecoderTrace(
            model_name=self.name, cfg=self.cfg, batch_tokens=enc.tokens,
            input_ids=enc.input_ids, attention_mask=enc.attention_mask,
            token_type_ids=enc.token_type_ids, special_mask=enc.special_mask,
            dropped=enc.n_dropped, cache=cache, batched=enc.input_ids.shape[0] > 1,
            typed_special=enc.typed_special, final=result.final.float().cpu(),
            notice=self.notice, dec_cfg=model.dec_cfg,
            decoder_tokens=[tok.tokens(r) for r in dec_in.tolist()], output_tokens=written,
            outputs=texts, decoder_logits=result.decoder_logits.float().cpu(),
            decoder_ids=dec_in.cpu(),
        )

    def _special(self) -> tuple[int, int]:
        """The decoder's first input token and the token that ends its output."""
        return self.tokenizer.bos_id, self.tokenizer.eos_id

    def _max_len(self, n_src: int) -> int:
        return n_src  # tiny-reverse writes the word backwards: as long as the source

    def _text(self, ids: list[int], eos: int) -> str:
        ids = ids[: ids.index(eos)] if eos in ids else ids
        return "".join(self.tokenizer.tokens(ids))


class Seq2SeqModel(EncoderDecoderModel):
    """A Hugging Face encoder-decoder (BART, Marian, T5): its own start and end tokens, and an
    output that may be longer than the source (a translation)."""

    def _special(self) -> tuple[int, int]:
        return self.model.spec.start_id, self.model.spec.eos_id

    def _max_len(self, n_src: int) -> int:
        return min(self.model.dec_cfg.n_ctx, 2 * n_src + 8)

    def _text(self, ids: list[int], eos: int) -> str:
        ids = ids[: ids.index(eos)] if eos in ids else ids
        return self.tokenizer.decode(ids, skip_special=True)
