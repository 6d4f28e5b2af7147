"""Widget callbacks (clicks in head grids and tables, buttons that set state), for every page.

They live here, not in the pages, on purpose. Streamlit keeps every callback of every chart it
has seen in the session (a new text gives a chart a new identity), and a function defined in a
page script keeps that script's globals alive: its trace, its figures. These functions' globals
are this small module, and they are bound (functools.partial) to names and numbers only.
"""

from __future__ import annotations

from functools import partial

import streamlit as st

from viz.heads import picked_head

from . import view_state


def _clicked_points(chart_key: str) -> list:
    event = st.session_state.get(chart_key)
    return getattr(getattr(event, "selection", None), "points", None) or []


def open_on_attention(layer: int, head: int, text: str | None = None) -> None:
    """Open the attention page on this head (raw attention), with the same model and text
    (or with `text` in the sidebar)."""
    view_state.go("attention", {"layer": int(layer), "head": int(head)}, text)


def _open_chosen(box_key: str) -> None:
    layer, head = st.session_state[box_key]
    open_on_attention(layer, head)


def open_chosen_head(box_key: str):
    """An on_click callback opening the (layer, head) chosen in the select box box_key."""
    return partial(_open_chosen, box_key)


def _pick(chart_key: str, n_heads: int, layer_key: str | None, head_key: str | None) -> None:
    picked = picked_head(_clicked_points(chart_key), n_heads)
    if picked is None:
        return
    if layer_key is None:
        open_on_attention(*picked)
    else:
        st.session_state[layer_key], st.session_state[head_key] = picked


def pick_head(chart_key: str, n_heads: int, layer_key: str | None = None,
              head_key: str | None = None):
    """An on_select callback: a click in the head grid `chart_key` sets layer_key/head_key,
    or (by default) opens that head on the attention page."""
    return partial(_pick, chart_key, n_heads, layer_key, head_key)


def _toggle(chart_key: str, n_heads: int, chosen_key: str) -> None:
    head = picked_head(_clicked_points(chart_key), n_heads)
    if head is None:
        return
    chosen = list(st.session_state.get(chosen_key, []))
    st.session_state[chosen_key] = [h for h in chosen if h != head] if head in chosen else \
        chosen + [head]


def toggle_head(chart_key: str, n_heads: int, chosen_key: str):
    """An on_select callback: a click adds the head to the list `chosen_key`, or removes it."""
    return partial(_toggle, chart_key, n_heads, chosen_key)


def _set(values: dict) -> None:
    st.session_state.update(values)


def set_state(**values):
    """An on_click callback that sets session-state keys to these (small) values."""
    return partial(_set, values)


def _copy(source: str, target: str) -> None:
    st.session_state[target] = st.session_state.get(source, "")


def copy_state(source: str, target: str):
    """An on_click callback that copies one session-state value into another key."""
    return partial(_copy, source, target)


def _add_layer(layer_key: str, chosen_key: str, n_heads: int) -> None:
    layer = st.session_state[layer_key]
    chosen = list(st.session_state.get(chosen_key, []))
    st.session_state[chosen_key] = chosen + [(layer, h) for h in range(n_heads)
                                             if (layer, h) not in chosen]


def add_layer_heads(layer_key: str, chosen_key: str, n_heads: int):
    """An on_click callback adding every head of the layer in layer_key to the list chosen_key."""
    return partial(_add_layer, layer_key, chosen_key, n_heads)


def _step(key: str, delta: int, low: int, high: int, reset: dict) -> None:
    st.session_state[key] = min(max(st.session_state.get(key, low) + delta, low), high)
    st.session_state.update(reset)


def step_state(key: str, delta: int, low: int, high: int, **reset):
    """An on_click callback moving an integer key by delta within [low, high] (and setting the
    keys in `reset`): Previous/Next buttons."""
    return partial(_step, key, delta, low, high, reset)
