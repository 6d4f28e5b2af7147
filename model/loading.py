"""`load_model(name_or_path)`: one way in for bundled names, local directories and hub ids.
It returns a LoadedModel (runner.py), or an EncoderDecoderModel for the encoder-decoder.

Weights are read only from safetensors, or from pytorch_model.bin with
`torch.load(weights_only=True)`. `trust_remote_code` is never used.
"""

from __future__ import annotations

import dataclasses
import json
import os
from pathlib import Path

import torch

from .allocator import keep_freed_memory
from .config import MAX_PARAMS, TransformerConfig
from .convert import CONVERTERS, lm_head_missing
from .convert_decoders import DECODER_CONVERTERS
from .encoders import ENCODER_CONVERTERS
from .runner import EncoderDecoderModel, LoadedModel, Seq2SeqModel
from .seq2seq import EncoderDecoder, check_pair
from .seq2seq_families import SEQ2SEQ_BUILDERS, SEQ2SEQ_CONVERTERS
from .seq2seq_stacks import Seq2SeqTransformer
from .device import pick_device
from .hub import HUB_ID, fetch
from .materialize import fill, params_on_meta, read_safetensors
from .registry import BUNDLED, OWN_MODEL_TYPE, ModelLoadError, config_from_hf
from .tokenizer import CharTokenizer, HFTokenizer, ReversalTokenizer, own_tokenizer
from .transformer import HookedTransformer



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


def read_weights(directory: Path, progress=None) -> dict[str, torch.Tensor]:
    """Every tensor of a directory's weight files; progress(bytes read, bytes in all)."""
    files = weight_files(directory)
    try:
        if files[0].suffix == ".bin":
            state = torch.load(str(files[0]), map_location="cpu", weights_only=True)
        else:
            state, total, before = {}, sum(f.stat().st_size for f in files), 0
            for file in files:  # read, not mapped: each tensor's memory is its own
                state.update(read_safetensors(file, progress and (
                    lambda n, offset=before: progress(offset + n, total))))
                before += file.stat().st_size
    except Exception as exc:  # safetensors / pickle errors have many types
        raise ModelLoadError(f"could not read the weights in {directory}: {exc}") from exc
    if not isinstance(state, dict) or not all(
            isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()):
        raise ModelLoadError(f"the weights in {directory} are not a dict of named tensors")
    return state


def build_model(cfg: TransformerConfig, state: dict[str, torch.Tensor],
                progress=None) -> HookedTransformer:
    """Instantiate and fill a model, after checking every name and shape. `state` is emptied:
    each tensor is freed once its float32 copy is in the model (model/materialize.py), and
    progress(numbers done, numbers in all) is called as the weights go in."""
    with params_on_meta():  # shapes only: no memory, no random filling
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
    fill(model, state, progress)
    return model


def read_config(directory: Path) -> dict:
    """config.json of a model directory, read once per load."""
    config_file = directory / "config.json"
    if not config_file.is_file():
        raise ModelLoadError(f"{directory} has no config.json; is it a model directory?")
    hf = read_json(config_file)
    if not isinstance(hf, dict):
        raise ModelLoadError(f"config.json in {directory} is not a JSON object")
    return hf


def is_encoder_decoder(config: dict) -> bool:
    return config.get("model_type") == OWN_MODEL_TYPE and \
        config.get("architecture") == "encoder_decoder"


def _stage(progress, stage: str):
    """progress(stage, done, total) as a two-number callback for one stage (or None)."""
    return None if progress is None else (lambda done, total: progress(stage, done, total))


def _load_directory(directory: Path, hf: dict, progress=None) -> tuple[HookedTransformer, object]:
    if hf.get("model_type") == OWN_MODEL_TYPE:
        try:
            cfg = TransformerConfig.from_dict(hf["config"])
        except (KeyError, TypeError, ValueError) as exc:
            problem = f"it lacks {exc.args[0]!r}" if isinstance(exc, KeyError) else exc
            raise ModelLoadError(f"config.json in {directory} is not a valid "
                                 f"{OWN_MODEL_TYPE} config: {problem}") from exc
        tokenizer_file = directory / "tokenizer.json"
        try:  # before the weights: it is small, and must fit the model's vocabulary
            tokenizer = own_tokenizer(tokenizer_file, cfg.d_vocab)
        except (OSError, ValueError, KeyError) as exc:  # missing file, bad JSON, bad "chars"
            raise ModelLoadError(f"could not load the character tokenizer (or word tokenizer) "
                                 f"{tokenizer_file}: {exc}") from exc
        return build_model(cfg, read_weights(directory, _stage(progress, "reading")),
                           _stage(progress, "loading")), tokenizer
    cfg = config_from_hf(hf)
    state = read_weights(directory, _stage(progress, "reading"))
    if lm_head_missing(state, cfg):  # a bare decoder: load it all the same, without the head
        cfg = dataclasses.replace(cfg, has_lm_head=False)
    try:
        converters = {**CONVERTERS, **DECODER_CONVERTERS}
        convert = ENCODER_CONVERTERS.get(hf["model_type"]) or converters[cfg.family]
        converted = convert(state, cfg)
    except KeyError as exc:
        raise ModelLoadError(
            f"the weights in {directory} lack {exc.args[0]!r} for a {hf['model_type']} model"
        ) from exc
    except (RuntimeError, IndexError, ValueError) as exc:  # a reshape the tensors do not fit
        raise ModelLoadError(f"the weights in {directory} do not fit config.json: {exc}") from exc
    del state  # the converted tensors alone: each is freed as the model takes it in
    model = build_model(cfg, converted, _stage(progress, "loading"))
    try:
        tokenizer = HFTokenizer(directory)
    except Exception as exc:  # transformers raises OSError, ValueError, TypeError...
        raise ModelLoadError(
            f"could not load the tokenizer from {directory} (tokenizer.json or vocab files): {exc}"
        ) from exc
    return model, tokenizer


def resolve(name_or_path: str) -> Path:
    """Bundled name, then local directory, then a hub id: from the Hugging Face cache, or
    downloaded into it on first use (model/hub.py)."""
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
    return fetch(name_or_path)  # the HF cache, or a download on first use (model/hub.py)


def load_model(name_or_path: str, device: str | torch.device | None = None,
               foreign: bool = False, progress=None) -> LoadedModel:
    """Load a model by bundled name ('minilm'), local HF directory, or hub id.

    Raises ModelLoadError with a message naming what is wrong. Supported families: see
    `model.registry.SUPPORTED`. With foreign=True, an architecture the engine does not know
    is run through Hugging Face's own code, for its attention only (model/foreign.py).
    progress(stage, done, total) is called as the weights are read ("reading": bytes) and as
    they go into the model ("loading": numbers).
    """
    if not isinstance(name_or_path, str) or not name_or_path.strip():
        raise ModelLoadError("no model name given")
    directory = resolve(name_or_path.strip())
    config = read_config(directory)
    if is_encoder_decoder(config):
        return load_encoder_decoder(directory, config, name_or_path.strip(), device)
    if isinstance(config.get("model_type"), str) and config["model_type"] in SEQ2SEQ_BUILDERS:
        return load_seq2seq(directory, config, name_or_path.strip(), device, progress)
    if foreign and config.get("model_type") != OWN_MODEL_TYPE:
        from .foreign import knows, load_foreign

        if not knows(config):
            return load_foreign(directory, config, name_or_path.strip(), weight_files(directory))
    model, tokenizer = _load_directory(directory, config, progress)
    dev, notice = pick_device(device)
    keep_freed_memory()
    try:
        model = model.to(dev)
    except RuntimeError as exc:
        if dev.type == "cpu":
            raise
        dev, notice = torch.device("cpu"), f"could not move the model to {dev}: {exc}; using CPU"
    return LoadedModel(name_or_path.strip(), model, tokenizer, dev, notice)


def load_encoder_decoder(directory: Path, data: dict, name: str,
                         device=None) -> EncoderDecoderModel:
    """Load an encoder-decoder saved by training/saving.py (config.json with "architecture":
    "encoder_decoder", "config" for the encoder, "decoder", and "special" tokens)."""
    directory = Path(directory)
    try:
        enc_cfg = TransformerConfig.from_dict(data["config"])
        dec_cfg = TransformerConfig.from_dict(data["decoder"])
        check_pair(enc_cfg, dec_cfg)
        special = data["special"]
        if not isinstance(special, dict):
            raise TypeError('"special" must be an object with the pad, bos and eos characters')
    except (KeyError, TypeError, ValueError) as exc:
        problem = f"config.json lacks {exc.args[0]!r}" if isinstance(exc, KeyError) else exc
        raise ModelLoadError(f"{directory} is not a valid encoder-decoder: {problem}") from exc
    if enc_cfg.n_params + dec_cfg.n_params > MAX_PARAMS:  # each passed; both together may not
        raise ModelLoadError(f"the encoder and decoder in {directory} hold about "
                             f"{enc_cfg.n_params + dec_cfg.n_params:.2g} parameters; the limit "
                             f"is {MAX_PARAMS:,} (MAX_PARAMS in model/config.py)")
    tokenizer_file = directory / "tokenizer.json"
    try:
        chars = CharTokenizer.from_file(tokenizer_file, enc_cfg.d_vocab)  # checks the file
        tokenizer = ReversalTokenizer(chars.chars, special.get("pad"), special.get("bos"),
                                      special.get("eos"), chars.chars[chars.unk_id])
    except (OSError, ValueError) as exc:
        raise ModelLoadError(f"could not load the character tokenizer {tokenizer_file}: "
                             f"{exc}") from exc
    model = EncoderDecoder(enc_cfg, dec_cfg)
    _load_exactly(model, read_weights(directory))
    dev, notice = pick_device(device)
    return EncoderDecoderModel(name, model.to(dev), tokenizer, dev, notice)


def _load_exactly(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Load `state` into an encoder–decoder after checking it has exactly the model's names and
    shapes (a message naming the first few that differ), as float32, strict."""
    expected = {k: tuple(v.shape) for k, v in model.state_dict().items()}
    got = {k: tuple(v.shape) for k, v in state.items()}
    if expected != got:
        wrong = sorted(set(expected) ^ set(got)) or sorted(k for k in got if got[k] != expected[k])
        raise ModelLoadError(f"the weights do not fit the config: {wrong[:5]}")
    model.load_state_dict({k: v.float() for k, v in state.items()}, strict=True)


def load_seq2seq(directory: Path, hf: dict, name: str, device=None,
                 progress=None) -> Seq2SeqModel:
    """A Hugging Face BART, Marian or T5 directory (model/seq2seq_families.py)."""
    kind = hf["model_type"]
    try:
        enc_cfg, dec_cfg, spec = SEQ2SEQ_BUILDERS[kind](hf)
    except KeyError as exc:
        raise ModelLoadError(f"config.json lacks the field {exc.args[0]!r}") from exc
    except (ValueError, TypeError) as exc:
        raise ModelLoadError(f"config.json describes an invalid {kind} model: {exc}") from exc
    if enc_cfg.n_params + dec_cfg.n_params > MAX_PARAMS:
        raise ModelLoadError(f"the encoder and decoder in {directory} hold about "
                             f"{enc_cfg.n_params + dec_cfg.n_params:.2g} parameters; the limit "
                             f"is {MAX_PARAMS:,} (MAX_PARAMS in model/config.py)")
    state = read_weights(directory, _stage(progress, "reading"))
    try:
        converted = SEQ2SEQ_CONVERTERS[kind](state, enc_cfg, dec_cfg, spec)
    except KeyError as exc:
        raise ModelLoadError(f"the weights in {directory} lack {exc.args[0]!r} for a {kind} "
                             "model") from exc
    except (RuntimeError, IndexError, ValueError) as exc:
        raise ModelLoadError(f"the weights in {directory} do not fit config.json: {exc}") from exc
    del state
    model = Seq2SeqTransformer(enc_cfg, dec_cfg, spec)
    _load_exactly(model, converted)
    try:
        tokenizer = HFTokenizer(directory)
    except Exception as exc:  # transformers raises OSError, ValueError, TypeError...
        raise ModelLoadError(f"could not load the tokenizer from {directory}: {exc}") from exc
    dev, notice = pick_device(device)
    keep_freed_memory()
    return Seq2SeqModel(name, model.to(dev), tokenizer, dev, notice)
