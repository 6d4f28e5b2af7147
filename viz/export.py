"""Getting things out of the app: figure export settings, a matrix as CSV, a trace as NPZ."""

from __future__ import annotations

import csv
import io
import json

import numpy as np

from .labels import is_label, plain_text
from .style import to_numpy

IMAGE_FORMATS = ("png", "svg", "jpeg", "webp")
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")  # what spreadsheets may run as a formula


def plotly_config(fmt: str = "png", filename: str = "attention") -> dict:
    """The `config` for st.plotly_chart / fig.show: the toolbar's camera button saves `fmt`.

    "png" saves at twice the on-screen resolution; "svg" saves a vector file for papers
    ({"toImageButtonOptions": {"format": "svg"}} is all plotly needs for that).
    """
    if fmt not in IMAGE_FORMATS:
        raise ValueError(f"fmt must be one of {IMAGE_FORMATS}, got {fmt!r}")
    options = {"format": fmt, "filename": filename}
    if fmt != "svg":
        options["scale"] = 2
    return {
        "displaylogo": False,
        "displayModeBar": True,  # always visible, so the download button is easy to find
        "toImageButtonOptions": options,
        "modeBarButtonsToAdd": ["toImage"],
        "modeBarButtonsToRemove": ["lasso2d", "select2d"],
    }


PLOTLY_CONFIG = plotly_config("png")


def safe_cell(text: str) -> str:
    """A text cell that a spreadsheet will not run: a leading = + - @ (or tab/CR) gets a quote."""
    return "'" + text if text.startswith(FORMULA_STARTS) else text


def _cell_text(token: str) -> str:
    return safe_cell(plain_text(token) if is_label(token) else token)


def matrix_csv(matrix, q_tokens, k_tokens) -> str:
    """The matrix as CSV: a header row "query \\ key", then the key tokens; one row per query,
    starting with its token. Labels from `axis_labels` are written as plain text (no HTML
    entities); every text cell is guarded against formula injection."""
    m = to_numpy(matrix, "matrix", ndim=2, dtype=np.float64)
    q_tokens, k_tokens = list(q_tokens), list(k_tokens)
    if m.shape != (len(q_tokens), len(k_tokens)):
        raise ValueError(f"matrix must be [len(q_tokens), len(k_tokens)] = "
                         f"[{len(q_tokens)}, {len(k_tokens)}], got {list(m.shape)}")
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["query \\ key"] + [_cell_text(t) for t in k_tokens])
    for token, row in zip(q_tokens, m):
        writer.writerow([_cell_text(token)] + [f"{v:.6g}" for v in row])
    return out.getvalue()


def trace_npz(trace) -> bytes:
    """A compressed NPZ of one trace: tokens, token ids, masks, attentions, hidden states and
    the model's name and config (as JSON). Loads with np.load(..., allow_pickle=False)."""
    rows = trace.batch_tokens
    width = max((len(r) for r in rows), default=0)
    tokens = np.array([list(r) + [""] * (width - len(r)) for r in rows], dtype=str)
    arrays = {
        "tokens": tokens if trace.batched else tokens[0],  # [pos] or [batch, pos]
        "token_ids": np.asarray(trace.token_ids),
        "attention_mask": np.asarray(trace.attention_mask),
        "special_mask": np.asarray(trace.special_mask),
        "model_name": np.array(trace.model_name),
        "config_json": np.array(json.dumps(trace.cfg.to_dict())),
    }
    for name in ("attentions", "hidden_states"):
        try:
            arrays[name] = np.asarray(getattr(trace, name))
        except KeyError:  # the run kept only part of the cache
            continue
    buffer = io.BytesIO()
    np.savez_compressed(buffer, **arrays)
    return buffer.getvalue()
