"""Which device to run on: CUDA, then Apple MPS, else CPU, with a notice when we fall back."""

from __future__ import annotations

import torch


def _works(device: torch.device) -> bool:
    try:
        (torch.ones(2, device=device) * 2).sum().item()
        return True
    except Exception:  # any driver or runtime failure means "not usable"
        return False


def pick_device(requested: str | torch.device | None = None) -> tuple[torch.device, str | None]:
    """Return (device, notice). The notice explains a fallback to the CPU, else it is None."""
    if requested is not None:
        try:
            device = torch.device(requested)
        except RuntimeError:
            return torch.device("cpu"), f"unknown device {requested!r}; using the CPU"
        if device.type == "cpu" or _works(device):
            return device, None
        return torch.device("cpu"), f"device {requested!r} is not usable here; using the CPU"
    if torch.cuda.is_available():
        device = torch.device("cuda")
        if _works(device):
            return device, None
        return torch.device("cpu"), "CUDA is present but failed a test; using the CPU"
    mps = getattr(torch.backends, "mps", None)
    if mps is not None and mps.is_available() and _works(torch.device("mps")):
        return torch.device("mps"), None
    return torch.device("cpu"), None


def is_device_failure(exc: BaseException) -> bool:
    """True for out-of-memory and other accelerator runtime errors worth retrying on the CPU."""
    if isinstance(exc, torch.cuda.OutOfMemoryError):
        return True
    text = str(exc)
    return isinstance(exc, RuntimeError) and any(
        key in text for key in ("CUDA", "out of memory", "MPS", "cuDNN", "CUBLAS")
    )
