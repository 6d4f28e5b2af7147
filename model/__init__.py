"""The native hooked transformer: config, hook points, layers, loading and running."""

from .config import TransformerConfig
from .hooks import HookPoint, hooks
from .loading import load_model
from .runner import LoadedModel
from .registry import BUNDLED, ModelLoadError
from .trace import Trace
from .transformer import HookedTransformer

__all__ = [
    "BUNDLED", "HookPoint", "HookedTransformer", "LoadedModel", "ModelLoadError", "Trace",
    "TransformerConfig", "hooks", "load_model",
]
