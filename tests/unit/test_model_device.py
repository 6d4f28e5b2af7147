"""Device choice and fallback. This machine has no GPU, so CUDA is simulated: its presence by
monkeypatching torch.cuda.is_available, its failures by monkeypatching `_works` and
`LoadedModel._forward`."""

from __future__ import annotations

import pytest
import torch

from model import LoadedModel, device
from model.device import is_device_failure, pick_device

HAS_ACCELERATOR = torch.cuda.is_available() or (
    getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available())


@pytest.mark.skipif(HAS_ACCELERATOR, reason="this machine has a GPU")
def test_pick_device_is_the_cpu_here_without_a_notice():
    assert pick_device() == (torch.device("cpu"), None)


def test_no_accelerator_means_the_cpu_without_a_notice(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    monkeypatch.setattr(device, "_works", lambda dev: pytest.fail(f"{dev} was tried"))
    assert pick_device() == (torch.device("cpu"), None)


def test_works_really_runs_a_tensor_on_the_device():
    assert device._works(torch.device("cpu"))
    assert not device._works(torch.device("meta"))  # meta tensors have no values to .item()


def test_cuda_present_but_failing_falls_back_to_cpu_with_a_notice(monkeypatch):
    tried = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(device, "_works", lambda dev: tried.append(dev) or False)
    dev, notice = pick_device()
    assert dev == torch.device("cpu")
    assert tried == [torch.device("cuda")]  # the check was really consulted
    assert "CUDA" in notice and "CPU" in notice


def test_cuda_present_and_working_is_chosen(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(device, "_works", lambda dev: True)
    assert pick_device() == (torch.device("cuda"), None)


def test_requested_devices(monkeypatch):
    assert pick_device("cpu") == (torch.device("cpu"), None)
    monkeypatch.setattr(device, "_works", lambda dev: False)
    dev, notice = pick_device("cuda:1")
    assert dev == torch.device("cpu") and "'cuda:1' is not usable" in notice
    dev, notice = pick_device("warp-drive")
    assert dev == torch.device("cpu") and "unknown device 'warp-drive'" in notice


@pytest.mark.parametrize("exc, expected", [
    (torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB"), True),
    (RuntimeError("CUDA error: device-side assert triggered"), True),
    (RuntimeError("MPS backend out of memory"), True),
    (RuntimeError("mat1 and mat2 shapes cannot be multiplied"), False),
    (ValueError("CUDA"), False),
])
def test_is_device_failure(exc, expected):
    assert is_device_failure(exc) is expected


@pytest.fixture
def fake_cuda_model(tiny_models_loaded):
    """The tiny BERT, as if it had been loaded onto a CUDA device."""
    cpu = tiny_models_loaded["bert"]
    return LoadedModel("tiny-bert", cpu.model, cpu.tokenizer, torch.device("cuda"))


def test_out_of_memory_during_a_run_falls_back_to_the_cpu(fake_cuda_model, tiny_models_loaded,
                                                          monkeypatch):
    reference = tiny_models_loaded["bert"].run("The cat sat on the mat.")  # plain CPU run
    calls = []
    real_forward = LoadedModel._forward

    def flaky_forward(self, model, enc, dev, keep):
        calls.append((model, dev))
        if dev.type == "cuda":
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 9.00 GiB")
        return real_forward(self, model, enc, dev, keep)

    monkeypatch.setattr(LoadedModel, "_forward", flaky_forward)
    trace = fake_cuda_model.run("The cat sat on the mat.")

    assert [d.type for _, d in calls] == ["cuda", "cpu"]
    assert calls[0][0] is fake_cuda_model.model
    assert calls[1][0] is not fake_cuda_model.model  # a CPU copy; the shared model is untouched
    assert "CUDA failed (OutOfMemoryError); ran on the CPU" in trace.notice
    assert reference.notice is None
    assert torch.equal(trace.attentions, reference.attentions)
    assert torch.equal(trace.pooled, reference.pooled)

    fake_cuda_model.run("I love cats!")  # the CPU copy is made once and reused
    assert [d.type for _, d in calls] == ["cuda", "cpu", "cuda", "cpu"]
    assert calls[3][0] is calls[1][0]


def test_errors_that_are_not_device_failures_are_not_hidden(fake_cuda_model, monkeypatch):
    def broken_forward(self, model, enc, dev, keep):
        raise RuntimeError("mat1 and mat2 shapes cannot be multiplied")

    monkeypatch.setattr(LoadedModel, "_forward", broken_forward)
    with pytest.raises(RuntimeError, match="shapes cannot be multiplied"):
        fake_cuda_model.run("The cat sat.")


def test_out_of_memory_on_the_cpu_is_raised(tiny_models_loaded, monkeypatch):
    def oom(self, model, enc, dev, keep):
        raise torch.cuda.OutOfMemoryError("out of memory")

    monkeypatch.setattr(LoadedModel, "_forward", oom)
    with pytest.raises(torch.cuda.OutOfMemoryError):
        tiny_models_loaded["bert"].run("The cat sat.")  # nowhere to fall back to


@pytest.mark.skipif(HAS_ACCELERATOR, reason="this machine has a GPU")
def test_asking_for_cuda_without_one_loads_on_the_cpu_and_says_so(tiny_dirs):
    from model import load_model

    lm = load_model(str(tiny_dirs["gpt2"]), device="cuda")
    assert lm.device == torch.device("cpu")
    assert "'cuda' is not usable here; using the CPU" in lm.notice
    assert lm.run("I love cats!").notice == lm.notice  # every trace carries the notice
