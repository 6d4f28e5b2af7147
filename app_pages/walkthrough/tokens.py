"""The walkthrough's first step: every position's token, id and mask (and token type) in one
scrolling table that shows them all and says how many there are. (A plotly table showed the
first 30 rows of a long text and hid the rest below its edge without a word.) And how every
table of the walkthrough writes its numbers."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from viz.labels import looks_byte_level, visible_text

ROW_PX = 35  # one row of st.dataframe
MAX_HEIGHT = 420  # taller tables scroll inside this height


def token_frame(batch_tokens, input_ids, attention_mask, token_type_ids=None) -> pd.DataFrame:
    """One row per position: for each text of the batch its token, id, mask (and type)."""
    columns: dict[str, list] = {}
    several = len(batch_tokens) > 1
    for b, tokens in enumerate(batch_tokens):
        tag = f" ({b + 1})" if several else ""
        byte_level = looks_byte_level(tokens)  # plain text: a table shows no markup
        columns[f"token{tag}"] = [visible_text(t, byte_level) for t in tokens]
        columns[f"id{tag}"] = [int(i) for i in input_ids[b].tolist()]
        columns[f"mask{tag}"] = [int(m) for m in attention_mask[b].tolist()]
        if token_type_ids is not None:
            columns[f"type{tag}"] = [int(t) for t in token_type_ids[b].tolist()]
    frame = pd.DataFrame(columns)
    frame.index.name = "position"
    return frame


def show_tokens(trace, with_types: bool) -> None:
    """The table, all rows (it scrolls), with a caption that counts them."""
    frame = token_frame(trace.batch_tokens, trace.input_ids, trace.attention_mask,
                        trace.token_type_ids if with_types else None)
    n = len(frame)
    padded = (trace.attention_mask == 0).any().item()
    st.markdown("**Tokens, ids and mask**")
    height = min(MAX_HEIGHT, ROW_PX * (n + 1) + 3)
    st.dataframe(frame, key="wk_tokens", height=height, width="stretch")
    scroll = "; scroll the table to see them all" if ROW_PX * (n + 1) + 3 > MAX_HEIGHT else ""
    st.caption(f"All {n} positions{scroll}." + (
        " Mask 0 marks padding: no query attends to it." if padded else ""))


def column_formats(frame: pd.DataFrame, decimals: int) -> dict:
    """Every number with the same fixed decimals ("2.370" under "4.319", never "2.37"), so a
    column reads as a column; text cells ("−∞", "61%") right-aligned like the numbers."""
    formats = {}
    for name, column in frame.items():
        if column.dtype.kind == "f":
            formats[name] = st.column_config.NumberColumn(format=f"%.{decimals}f")
        elif column.dtype.kind == "O":
            formats[name] = st.column_config.TextColumn(alignment="right")
    return formats
