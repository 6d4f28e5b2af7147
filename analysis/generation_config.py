"""A model folder's generation_config.json: the defaults its authors chose for writing text
(Hugging Face's `generate` reads them). Generate starts from them and says where each came from.

Read from a folder on disk, or from a hub model already in the local Hugging Face cache (never
a network request). Only the fields the Generate page uses are read; each is checked, and a
value that does not fit is left out with a note, never an error.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

FILE = "generation_config.json"
MAX_BYTES = 1 << 20  # a generation_config.json is a few hundred bytes
TOKEN_FIELDS = ("decoder_start_token_id", "bos_token_id", "forced_bos_token_id", "pad_token_id",
                "eos_token_id")


@dataclass
class GenerationDefaults:
    """What generation_config.json sets (None: not set, or not usable)."""

    path: str | None = None  # where it was read, or None: the model has none
    decoder_start_token_id: int | None = None
    bos_token_id: int | None = None
    forced_bos_token_id: int | None = None
    pad_token_id: int | None = None
    eos_token_ids: tuple[int, ...] = ()
    max_new_tokens: int | None = None
    do_sample: bool | None = None
    temperature: float | None = None
    top_k: int | None = None
    top_p: float | None = None
    notes: list[str] = field(default_factory=list)  # fields left out, in words

    def fields_set(self) -> list[str]:
        """The names of the fields the file set and the page uses, for one line on screen."""
        names = [n for n in (*TOKEN_FIELDS[:4], "max_new_tokens", "do_sample", "temperature",
                             "top_k", "top_p") if getattr(self, n) is not None]
        return names + (["eos_token_id"] if self.eos_token_ids else [])


def _token(value, d_vocab: int) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < d_vocab:
        return None
    return value


def model_folder(name: str) -> Path | None:
    """The folder a model was loaded from: a directory on disk, or a hub id's snapshot in the
    local cache (no network); None for a bundled model or one not on disk."""
    path = Path(name).expanduser()
    if path.is_dir():
        return path
    if not name or name.count("/") > 1 or name.startswith((".", "/", "~")):
        return None
    try:
        from huggingface_hub import try_to_load_from_cache
        found = try_to_load_from_cache(name, FILE)
    except Exception:  # noqa: BLE001 - an id the cache cannot take: no defaults
        return None
    return Path(found).parent if isinstance(found, str) else None


def read_defaults(folder: Path | None, d_vocab: int) -> GenerationDefaults:
    """The defaults in folder/generation_config.json (an empty GenerationDefaults without one)."""
    if folder is None or not (folder / FILE).is_file():
        return GenerationDefaults()
    path = folder / FILE
    try:
        if path.stat().st_size > MAX_BYTES:
            raise ValueError("it is too large")
        raw = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(raw, dict):
            raise ValueError("it is not a JSON object")
    except (OSError, ValueError) as exc:
        return GenerationDefaults(notes=[f"{FILE} could not be read ({exc}), so it is ignored."])
    out = GenerationDefaults(path=str(path))
    for name in TOKEN_FIELDS[:4]:
        if raw.get(name) is not None:
            setattr(out, name, _token(raw[name], d_vocab))
    eos = raw.get("eos_token_id")
    eos = eos if isinstance(eos, list) else [] if eos is None else [eos]
    out.eos_token_ids = tuple(t for t in (_token(e, d_vocab) for e in eos) if t is not None)
    n = raw.get("max_new_tokens")
    out.max_new_tokens = n if isinstance(n, int) and not isinstance(n, bool) and n > 0 else None
    if isinstance(raw.get("do_sample"), bool):
        out.do_sample = raw["do_sample"]
    for name, low, high in (("temperature", 0.0, 100.0), ("top_p", 0.0, 1.0)):
        value = raw.get(name)
        if isinstance(value, (int, float)) and not isinstance(value, bool) \
                and low < value <= high:
            setattr(out, name, float(value))
    k = raw.get("top_k")
    out.top_k = k if isinstance(k, int) and not isinstance(k, bool) and k > 0 else None
    bad = [n for n in TOKEN_FIELDS if raw.get(n) is not None and getattr(
        out, "eos_token_ids" if n == "eos_token_id" else n) in (None, ())]
    if bad:
        out.notes.append(f"{FILE} names token ids outside the vocabulary for {', '.join(bad)}; "
                         "those are ignored.")
    return out


def generation_defaults(loaded) -> GenerationDefaults:
    """The loaded model's generation_config.json defaults (none for a bundled model)."""
    return read_defaults(model_folder(loaded.name), loaded.cfg.d_vocab)
