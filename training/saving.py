"""The own-model save format: config.json (model_type "attention-lab"), model.safetensors and
tokenizer.json, which load_model opens like any model directory; and the downloads of it."""

from __future__ import annotations

import dataclasses
import io
import json
import os
import zipfile
from pathlib import Path

import torch

from model.registry import OWN_MODEL_TYPE

from .tasks import Task
from .train import TrainSettings


def save_model(directory: Path, task: Task, model: torch.nn.Module, s: TrainSettings,
               metrics: dict[str, float] | None = None, **training) -> Path:
    """Write config.json, model.safetensors and tokenizer.json: loadable with load_model."""
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    config = {"model_type": OWN_MODEL_TYPE, "config": model.cfg.to_dict()}
    if task.encoder_decoder:
        config.update(architecture="encoder_decoder", decoder=model.dec_cfg.to_dict(),
                      special=task.special)
    config["training"] = {"settings": dataclasses.asdict(s), "metrics": metrics or {},
                          **training}
    (directory / "config.json").write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")
    # clone: tied embeddings share one tensor, which safetensors will not write twice
    state = {k: v.detach().clone().contiguous() for k, v in model.state_dict().items()}
    save_file(state, str(directory / "model.safetensors"), metadata={"format": "pt"})
    os.chmod(directory / "model.safetensors", 0o644)  # safetensors writes it owner-only
    (directory / "tokenizer.json").write_text(json.dumps(task.tokenizer_data(),
                                                         ensure_ascii=False) + "\n",
                                              encoding="utf-8")
    return directory


def model_archive(directory: Path) -> bytes:
    """A zip of a saved model directory (unzip it and load_model the folder)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for name in ("config.json", "model.safetensors", "tokenizer.json"):
            archive.write(Path(directory) / name, arcname=name)
    return buffer.getvalue()


def weights_file(directory: Path) -> bytes:
    """model.safetensors alone, with config.json and the vocabulary in its metadata."""
    from safetensors.torch import load_file, save

    directory = Path(directory)
    metadata = {"format": "pt",
                "attention_lab_config": (directory / "config.json").read_text("utf-8"),
                "tokenizer": (directory / "tokenizer.json").read_text("utf-8")}
    return save(load_file(str(directory / "model.safetensors")), metadata=metadata)


# ------------------------------------------------------------------------------------ CLI
