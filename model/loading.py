"""`load_model(name_or_path)`: one way in for bundled names, local directories and hub ids.

Weights are read only from safetensors, or from pytorch_model.bin with
`torch.load(weights_only=True)`. `trust_remote_code` is never used.
"""

from __future__ import annotations

import copy
import json
import os
import re
import threading
from pathlib import Path

import torch

from .allocator import keep_freed_memory
from .config import TransformerConfig
from .convert import CONVERTERS
from .device import is_device_failure, pick_device
from .hooks import caching_hook, hooks, hooks_active
from .registry import (
    BUNDLED, OWN_MODEL_TYPE, ModelLoadError, config_from_hf,
)
from .tokenizer import CharTokenizer, Encoding, HFTokenizer
from .trace import Trace, TraceCache
from .transformer import HookedTransformer, attention_mask_bias

HUB_ID = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$|^[A-Za-z0-9][\w.-]*$")
HUB_FILES = ["*.json", "*.safetensors", "*.txt", "*.model", "tokenizer*"]


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
            special_mask=1 - mask[:, :n],
            tokens=[self.tokenizer.tokens(row) for row in ids[:, :n].tolist()],
            n_dropped=[max(0, int(m.sum()) - n) for m in mask],
        )
        trace = self._run(enc, keep)
        trace.batched = batched
        return trace

    def _forward(self, model: HookedTransformer, enc: Encoding, device, keep):
        cache: dict[str, torch.Tensor] = {}
        names = [n for n in model.hook_names if keep is None or keep(n)]
        # hook_scores = mask + scale * hook_qk, elementwise. On the CPU, with no outside hook
        # able to edit q·k or the scores, it is recomputed bit for bit on first read instead of
        # kept: one [batch, head, pos, pos] tensor per layer less to allocate (see BENCHMARKS.md).
        derive = device.type == "cpu" and not hooks_active()
        lazy = {n for n in names if derive and n.endswith(".attn.hook_scores")
                and n[: -len("hook_scores")] + "hook_qk" in names}
        store = caching_hook(cache)
        # no_grad, not inference_mode: a Trace's tensors are handed to users, and inference
        # tensors refuse in-place edits and any later use next to a parameter (x @ W_O).
        with torch.no_grad(), hooks(model.hook_names,
                                    [(n, store) for n in names if n not in lazy]):
            out = model(
                enc.input_ids.to(device), enc.attention_mask.to(device),
                enc.token_type_ids.to(device),
            )
        if lazy:
            mask = attention_mask_bias(enc.attention_mask.to(device), self.cfg.causal,
                                       out.final.dtype)
            derived = {n: (n[: -len("hook_scores")] + "hook_qk", mask,
                           model.get_submodule(n.rsplit(".", 1)[0]).scale) for n in lazy}
            cache = TraceCache(names, cache, derived)
        return out, cache

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
            logits=None if out.logits is None else out.logits.float().cpu(),
            pooled=None if out.pooled is None else out.pooled.float().cpu(),
            final=out.final.float().cpu(), notice=notice or self.notice,
        )


# ---------------------------------------------------------------------------- loading
SHARD_INDEX = "model.safetensors.index.json"
MAX_JSON_BYTES = 16 * 2**20  # config.json, the shard index: far above any real one


def read_json(path: Path):
    """The content of a small JSON file in a model directory, or a ModelLoadError saying why not."""
    if path.stat().st_size > MAX_JSON_BYTES:
        raise ModelLoadError(f"{path.name} in {path.parent} is larger than {MAX_JSON_BYTES:,} "
                             "bytes; is it a model directory?")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ModelLoadError(f"{path.name} in {path.parent} is not valid JSON: {exc}") from exc


def _files_root(directory: Path) -> Path:
    """Where a model's files may really live: the directory itself or, for a hub download
    (<repo>/snapshots/<revision>/ whose files link to <repo>/blobs/), the repo's folder."""
    real = directory.resolve()
    if real.parent.name == "snapshots" and (real.parent.parent / "blobs").is_dir():
        return real.parent.parent
    return real


def inside(directory: Path, name: str) -> Path:
    """directory / name, refused if the name or a symlink leads outside the directory."""
    path = directory / name
    try:
        ok = (bool(name) and not Path(name).is_absolute() and ".." not in Path(name).parts
              and path.resolve().is_relative_to(_files_root(directory)))
    except (OSError, ValueError, RuntimeError):  # a NUL byte in the name, a symlink loop
        ok = False
    if not ok:
        raise ModelLoadError(f"{directory} names the weights file {name!r}, which lies outside "
                             "the model directory; refusing to read it")
    return path


def _shard_names(directory: Path) -> list[str]:
    data = read_json(directory / SHARD_INDEX)
    weight_map = data.get("weight_map") if isinstance(data, dict) else None
    if not isinstance(weight_map, dict) or not weight_map or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in weight_map.items()):
        raise ModelLoadError(f"{SHARD_INDEX} in {directory} is broken: its \"weight_map\" must "
                             "map tensor names to shard file names")
    return sorted(set(weight_map.values()))


def weight_files(directory: Path) -> list[Path]:
    """The files holding a directory's weights, each checked to lie inside it."""
    for name in ("model.safetensors", SHARD_INDEX, "pytorch_model.bin"):
        if (directory / name).is_file():
            names = _shard_names(directory) if name == SHARD_INDEX else [name]
            return [inside(directory, n) for n in names]  # every name checked before any read
    raise ModelLoadError(
        f"no weights in {directory}: expected model.safetensors (or its sharded index) "
        "or pytorch_model.bin"
    )


def read_weights(directory: Path) -> dict[str, torch.Tensor]:
    from safetensors.torch import load_file

    files = weight_files(directory)
    try:
        if files[0].suffix == ".bin":
            state = torch.load(str(files[0]), map_location="cpu", weights_only=True)
        else:
            state = {}
            for file in files:
                state.update(load_file(str(file)))
    except Exception as exc:  # safetensors / pickle errors have many types
        raise ModelLoadError(f"could not read the weights in {directory}: {exc}") from exc
    if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise ModelLoadError(f"the weights in {directory} are not a dict of named tensors")
    return state


def build_model(cfg: TransformerConfig, state: dict[str, torch.Tensor]) -> HookedTransformer:
    """Instantiate and fill a model, after checking every name and shape."""
    model = HookedTransformer(cfg)
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    missing = sorted(set(expected) - set(got))
    unexpected = sorted(set(got) - set(expected))
    wrong = sorted(k for k in set(expected) & set(got) if expected[k] != got[k])
    if missing or unexpected or wrong:
        parts = []
        if missing:
            parts.append(f"missing {missing[:5]}")
        if unexpected:
            parts.append(f"unexpected {unexpected[:5]}")
        if wrong:
            parts.append("wrong shapes " + ", ".join(f"{k}: {got[k]} != {expected[k]}"
                                                      for k in wrong[:5]))
        raise ModelLoadError("the weights do not fit the config: " + "; ".join(parts))
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)
    return model


def _load_directory(directory: Path) -> tuple[HookedTransformer, object]:
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise ModelLoadError(f"{directory} has no config.json; is it a model directory?")
    hf = read_json(config_file)
    if not isinstance(hf, dict):
        raise ModelLoadError(f"config.json in {directory} is not a JSON object")
    if hf.get("model_type") == OWN_MODEL_TYPE:
        try:
            cfg = TransformerConfig.from_dict(hf["config"])
        except (KeyError, TypeError, ValueError) as exc:
            problem = f"it lacks {exc.args[0]!r}" if isinstance(exc, KeyError) else exc
            raise ModelLoadError(f"config.json in {directory} is not a valid "
                                 f"{OWN_MODEL_TYPE} config: {problem}") from exc
        tokenizer_file = directory / "tokenizer.json"
        try:  # before the weights: it is small, and must fit the model's vocabulary
            tokenizer = CharTokenizer.from_file(tokenizer_file, cfg.d_vocab)
        except (OSError, ValueError) as exc:  # missing file, bad JSON, bad "chars"
            raise ModelLoadError(f"could not load the character tokenizer {tokenizer_file}: "
                                 f"{exc}") from exc
        return build_model(cfg, read_weights(directory)), tokenizer
    cfg = config_from_hf(hf)
    state = read_weights(directory)
    try:
        converted = CONVERTERS[cfg.family](state, cfg)
    except KeyError as exc:
        raise ModelLoadError(
            f"the weights in {directory} lack {exc.args[0]!r} for a {hf['model_type']} model"
        ) from exc
    except (RuntimeError, IndexError, ValueError) as exc:  # a reshape the tensors do not fit
        raise ModelLoadError(f"the weights in {directory} do not fit config.json: {exc}") from exc
    model = build_model(cfg, converted)
    try:
        tokenizer = HFTokenizer(directory)
    except Exception as exc:  # transformers raises OSError, ValueError, TypeError...
        raise ModelLoadError(
            f"could not load the tokenizer from {directory} (tokenizer.json or vocab files): {exc}"
        ) from exc
    return model, tokenizer


def resolve(name_or_path: str) -> Path:
    """Bundled name, then local directory, then (with network) a hub id."""
    if name_or_path in BUNDLED:
        return BUNDLED[name_or_path]()
    path = Path(name_or_path).expanduser()
    if path.is_dir():
        return path
    looks_like_path = name_or_path.startswith((".", "/", "~")) or os.sep in name_or_path.strip("/")
    if not HUB_ID.match(name_or_path) or name_or_path.count("/") > 1:
        raise ModelLoadError(f"{name_or_path!r} is neither a bundled model nor a directory")
    if looks_like_path and name_or_path.count("/") != 1:
        raise ModelLoadError(f"no such model directory: {name_or_path}")
    from huggingface_hub import snapshot_download

    offline = os.environ.get("HF_HUB_OFFLINE", "0") not in ("0", "", "false", "False")
    try:
        return Path(snapshot_download(name_or_path, allow_patterns=HUB_FILES,
                                      local_files_only=offline))
    except Exception as exc:  # network, auth, not found
        where = "the local hub cache (HF_HUB_OFFLINE is set)" if offline else "the hub"
        raise ModelLoadError(
            f"{name_or_path!r} is not a bundled name ({', '.join(BUNDLED)}), not a local "
            f"directory, and could not be fetched from {where}: {exc.__class__.__name__}"
        ) from exc


def load_model(name_or_path: str, device: str | torch.device | None = None) -> LoadedModel:
    """Load a model by bundled name ('minilm'), local HF directory, or hub id.

    Raises ModelLoadError with a message naming what is wrong. Supported families: see
    `model.registry.SUPPORTED`.
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ModelLoadError("no model name given")
    directory = resolve(name_or_path.strip())
    from .seq2seq import is_encoder_decoder, load_encoder_decoder  # seq2seq imports this module
    if is_encoder_decoder(directory):
        return load_encoder_decoder(directory, name_or_path.strip(), device)
    model, tokenizer = _load_directory(directory)
    dev, notice = pick_device(device)
    keep_freed_memory()
    try:
        model = model.to(dev)
    except RuntimeError as exc:
        if dev.type == "cpu":
            raise
        dev, notice = torch.device("cpu"), f"could not move the model to {dev}: {exc}; using CPU"
    return LoadedModel(name_or_path.strip(), model, tokenizer, dev, notice)
