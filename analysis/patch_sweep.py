"""The one patching sweep every patching grid runs (a decoder's, an encoder's, an
encoder–decoder's): cell by cell of a [rows, columns] grid, in chunks of up to `chunk`
columns of one row, each chunk one batched run in which copy i has cell (row, columns[i])
put back from the clean run. What a run is (from which layer, through which stack, read
by which metric) is the caller's `run(row, columns)`; `put_back` makes the patched copies.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

Progress = Callable[[int, int], None]


def counter(progress: Progress | None, total: int) -> Callable[[int], None]:
    """A function that adds n cells done and tells progress(done, total)."""
    done = [0]

    def tick(n: int) -> None:
        done[0] += n
        if progress is not None:
            progress(done[0], total)
    return tick


def sweep(n_rows: int, n_cols: int, chunk: int,
          run: Callable[[int, torch.Tensor], torch.Tensor],
          tick: Callable[[int], None] | None = None) -> torch.Tensor:
    """[n_rows, n_cols] float64: run(row, columns [b]) -> the raw metric [b] of b patched
    copies, called for up to `chunk` columns of one row at a time; tick(b) after each."""
    grid = torch.zeros(n_rows, n_cols, dtype=torch.float64)  # [row, column]
    for row in range(n_rows):
        for start in range(0, n_cols, chunk):
            cols = torch.arange(start, min(start + chunk, n_cols))  # [b]: one copy per column
            grid[row, cols] = run(row, cols)
            if tick is not None:
                tick(cols.numel())
    return grid


def put_back(copies: torch.Tensor, clean: torch.Tensor, index: torch.Tensor) -> torch.Tensor:
    """copies [b, n, ...] with copy i's entry index[i] along dim 1 (a position, or a head)
    set to clean[0, index[i]] (clean: [1, n, ...]); in place, returned."""
    idx = index.to(copies.device)
    copies[torch.arange(idx.numel(), device=copies.device), idx] = clean[0, idx]
    return copies


def put_back_hook(clean: torch.Tensor, index: torch.Tensor) -> Callable:
    """A hook that puts back, as `put_back` does, into a copy of the tensor it sees."""
    def patch(x: torch.Tensor, _name: str) -> torch.Tensor:
        return put_back(x.clone(), clean, index)
    return patch
