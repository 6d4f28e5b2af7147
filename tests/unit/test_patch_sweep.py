"""The patching sweep's pieces (analysis/patch_sweep.py) and the residual grid's row rule
(HookNames.resid_row): every cell run once, in chunks of one row, progress counted to the
total; copy i gets exactly its own cell put back; row l is block l's input, the last row the
last block's output."""

from __future__ import annotations

import pytest
import torch

from analysis.patch_sweep import counter, put_back, put_back_hook, sweep
from model.hook_names import HookNameError, hook_names


def test_every_cell_runs_once_in_chunks_of_one_row():
    calls, seen = [], []

    def run(row, cols):
        calls.append((row, cols.tolist()))
        return row * 10.0 + cols.double()

    grid = sweep(2, 5, 2, run, counter(lambda done, total: seen.append((done, total)), 10))
    assert calls == [(0, [0, 1]), (0, [2, 3]), (0, [4]), (1, [0, 1]), (1, [2, 3]), (1, [4])]
    assert torch.equal(grid, torch.tensor([[0, 1, 2, 3, 4], [10, 11, 12, 13, 14]]).double())
    assert seen[-1] == (10, 10) and [d for d, _ in seen] == [2, 4, 5, 7, 9, 10]


def test_each_copy_gets_only_its_own_cell_back():
    corrupted = torch.zeros(1, 4, 3)
    clean = torch.arange(12.0).reshape(1, 4, 3)
    copies = put_back(corrupted.repeat(2, 1, 1), clean, torch.tensor([1, 3]))
    assert torch.equal(copies[0, 1], clean[0, 1]) and torch.equal(copies[1, 3], clean[0, 3])
    assert float(copies.abs().sum()) == float(clean[0, 1].sum() + clean[0, 3].sum())
    seen = corrupted.repeat(2, 1, 1)
    patched = put_back_hook(clean, torch.tensor([0, 2]))(seen, "any")
    assert float(seen.abs().sum()) == 0  # the hook edits a copy, never the tensor it sees
    assert torch.equal(patched[1, 2], clean[0, 2])


def test_the_last_row_is_the_last_blocks_output(tiny_chars):
    names = hook_names(tiny_chars.cfg)
    n = tiny_chars.cfg.n_layers
    assert names.resid_row(0) == names.resid(0, "pre")
    assert names.resid_row(n) == names.resid(n - 1, "post")
    assert names.resid_rows() == [*names.every_layer("resid", "pre"), names.resid(n - 1, "post")]
    with pytest.raises(HookNameError, match="rows are numbered 0 to"):
        names.resid_row(n + 1)
