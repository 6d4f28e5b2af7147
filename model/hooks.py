"""Hook points: named identity modules that callbacks can read or replace.

A `HookPoint`'s public name is its path in the module tree (`blocks.0.attn.hook_pattern`),
assigned once by `name_hook_points`. Callbacks are never attached to the module itself:
`hooks(...)` puts them in a context variable that only the current thread (or task) sees,
and takes them away in `finally`. So a model object shared by every user of a hosted app is
never mutated by a request, and two requests running at once cannot see each other's hooks.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Callable, Iterable, Iterator

import torch
from torch import nn

# A callback gets (tensor, hook_name) and returns a replacement tensor, or None to keep it.
HookFn = Callable[[torch.Tensor, str], "torch.Tensor | None"]
NameFilter = "str | Callable[[str], bool]"

_ACTIVE: contextvars.ContextVar[dict[str, list[HookFn]] | None] = contextvars.ContextVar(
    "active_hooks", default=None
)


class HookPoint(nn.Module):
    """Identity on the forward pass; the place where a callback can see or edit a tensor."""

    def __init__(self) -> None:
        super().__init__()
        self.name = ""  # filled in by name_hook_points()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        active = _ACTIVE.get()
        if active is None:
            return x
        for fn in active.get(self.name, ()):
            out = fn(x, self.name)
            if out is not None:
                x = out
        return x

    def extra_repr(self) -> str:
        return self.name


def name_hook_points(root: nn.Module) -> list[str]:
    """Give every HookPoint under `root` its module path as a name; return the names in order."""
    names = []
    for path, module in root.named_modules():
        if isinstance(module, HookPoint):
            module.name = path
            names.append(path)
    return names


def hooks_active() -> bool:
    """True inside a `hooks(...)` block (some callback may edit tensors)."""
    return bool(_ACTIVE.get())


@contextlib.contextmanager
def hooks(
    all_names: Iterable[str], fwd_hooks: Iterable[tuple["NameFilter", HookFn]]
) -> Iterator[None]:
    """Activate `(name_or_predicate, fn)` pairs for forward passes run inside the block.

    Hooks already active in an enclosing block stay active and run first.
    """
    names = list(all_names)
    known = set(names)
    current = _ACTIVE.get() or {}
    merged = {name: list(fns) for name, fns in current.items()}
    for hook_filter, fn in fwd_hooks:
        if callable(hook_filter):
            hits = [name for name in names if hook_filter(name)]
        elif hook_filter in known:  # a name: looked up, not compared with every name
            hits = [hook_filter]
        else:
            raise KeyError(f"no hook point named {hook_filter!r}")
        for name in hits:
            merged.setdefault(name, []).append(fn)
    token = _ACTIVE.set(merged)
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def caching_hook(cache: dict[str, torch.Tensor]) -> HookFn:
    """A callback that stores each tensor it sees (detached, same storage) under its hook name."""

    def store(x: torch.Tensor, name: str) -> None:
        cache[name] = x.detach()

    return store
