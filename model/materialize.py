"""Building a model from a checkpoint without holding its weights twice.

The plain way (build the model, which allocates and randomly fills every parameter, then copy
the checkpoint's tensors in, each first turned into float32) holds the model about three times
over at its peak for a bfloat16 checkpoint: the checkpoint (half the float32 size), the
model's own random parameters (the full size), and float32 copies of the checkpoint (the full
size again). Here:

1. `params_on_meta()`: the model is built with its parameters on the "meta" device (shapes,
   no memory, no random filling). Only parameters: buffers computed in a constructor (rotary
   frequencies, a sinusoidal table) stay real. It is a parameter-registration hook that acts
   only inside the block, in this thread (a context variable), so a model built at the same
   time by another user is not touched.
2. `read_safetensors(path)`: the file read into ordinary memory, tensor by tensor, instead of
   mapped: a mapped file's pages stay resident (and counted) for as long as any one of its
   tensors lives, which kept the whole half-precision checkpoint in memory to the end.
3. `fill(model, state)`: each parameter becomes its checkpoint tensor in float32, taken out
   of `state` as it goes, so each half-precision tensor is freed as soon as its float32 copy
   exists. Peak: the float32 model plus what is left of the checkpoint, about 1.0 to 1.1 times
   the float32 size (BENCHMARKS.md). A float32 checkpoint's tensors are used as they are.
"""

from __future__ import annotations

import contextlib
import contextvars
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import torch
from torch import nn
from torch.nn.modules.module import register_module_parameter_registration_hook

SAFETENSORS_DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8,
    "U8": torch.uint8, "BOOL": torch.bool,
}
MAX_HEADER_BYTES = 100 * 2**20  # the format's own limit

_ON_META: contextvars.ContextVar[bool] = contextvars.ContextVar("params_on_meta", default=False)


def _to_meta(module: nn.Module, name: str, param: nn.Parameter | None):
    if _ON_META.get() and param is not None and param.device.type != "meta":
        return nn.Parameter(param.to("meta"), requires_grad=param.requires_grad)
    return None


register_module_parameter_registration_hook(_to_meta)  # acts only inside params_on_meta()


@contextlib.contextmanager
def params_on_meta() -> Iterator[None]:
    """Parameters registered inside this block (in this thread) live on the meta device."""
    token = _ON_META.set(True)
    try:
        yield
    finally:
        _ON_META.reset(token)


def fill(model: nn.Module, state: dict[str, torch.Tensor],
         progress: Callable[[int, int], None] | None = None) -> None:
    """Put state's tensors (names and shapes checked by the caller) into the model's meta
    parameters as float32, emptying `state` as it goes. Names that hold the same tensor (tied
    embeddings) get one parameter. progress(numbers done, numbers in all) after each tensor."""
    groups: dict[int, list[str]] = {}
    for key, tensor in state.items():
        groups.setdefault(id(tensor), []).append(key)
    total = sum(state[keys[0]].numel() for keys in groups.values())
    done = 0
    for keys in list(groups.values()):
        source = state.pop(keys[0])
        for key in keys[1:]:
            state.pop(key)
        value = source.to(torch.float32).contiguous()  # [same shape]; no copy if it already is
        del source
        param = None
        for key in keys:
            path, _, attr = key.rpartition(".")
            module = model.get_submodule(path)
            if attr in module._buffers:
                module._buffers[attr] = value
                continue
            old = module._parameters[attr]
            if param is None:
                if value.stride() != old.stride():  # the module's own layout (attention.py)
                    value = torch.empty_strided(old.shape, old.stride()).copy_(value)
                param = nn.Parameter(value, requires_grad=old.requires_grad)
            module._parameters[attr] = param
        done += value.numel()
        if progress is not None:
            progress(done, total)
    left = [n for n, p in list(model.named_parameters()) + list(model.named_buffers())
            if p.device.type == "meta"]
    if left:
        raise ValueError(f"no weights for {left[:5]}")


def read_safetensors(path: Path, progress: Callable[[int], None] | None = None
                     ) -> dict[str, torch.Tensor]:
    """A .safetensors file's tensors, each read into its own memory (no mapping): 8 bytes of
    header length, a JSON header {name: {dtype, shape, data_offsets}}, then the data. Every
    offset and size is checked against the file before it is read (ValueError).
    progress(bytes read so far) after each tensor."""
    size = Path(path).stat().st_size
    with open(path, "rb") as f:
        n_header = int.from_bytes(f.read(8), "little")
        if not 0 < n_header <= min(MAX_HEADER_BYTES, size - 8):
            raise ValueError("not a safetensors file (bad header length)")
        header = json.loads(f.read(n_header))
        if not isinstance(header, dict):
            raise ValueError("not a safetensors file (the header is not an object)")
        start, out = 8 + n_header, {}
        for name, info in sorted(header.items(), key=lambda kv: _offsets(kv)[0]):
            if name == "__metadata__":
                continue
            dtype = SAFETENSORS_DTYPES.get(info.get("dtype"))
            shape, (begin, end) = info.get("shape"), _offsets((name, info))
            if dtype is None or not isinstance(shape, list) or not all(
                    isinstance(n, int) and n >= 0 for n in shape):
                raise ValueError(f"tensor {name!r}: unsupported dtype or bad shape")
            n_bytes = math.prod(shape) * torch.empty((), dtype=dtype).element_size()
            if not 0 <= begin <= end <= size - start or end - begin != n_bytes:
                raise ValueError(f"tensor {name!r}: its data offsets do not fit the file")
            buffer = bytearray(n_bytes)
            f.seek(start + begin)
            if f.readinto(buffer) != n_bytes:
                raise ValueError(f"tensor {name!r}: the file ends early")
            out[name] = (torch.frombuffer(buffer, dtype=dtype) if n_bytes else
                         torch.empty(0, dtype=dtype)).reshape(shape)
            if progress is not None:
                progress(start + end)
    return out


def _offsets(item) -> tuple[int, int]:
    name, info = item
    if name == "__metadata__":
        return (-1, -1)
    offsets = info.get("data_offsets") if isinstance(info, dict) else None
    if not (isinstance(offsets, list) and len(offsets) == 2
            and all(isinstance(o, int) for o in offsets)):
        raise ValueError(f"tensor {name!r}: bad data_offsets")
    return offsets[0], offsets[1]
