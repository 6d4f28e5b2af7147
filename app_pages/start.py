"""The start page, at "/": what the app is, one real head doing something you can see, and three
ways in."""

from __future__ import annotations

import streamlit as st

from ui import projector
from ui.page_registry import page_link
from ui.start_example import EXAMPLE_MODEL, example, stored
from ui.view_state import ViewState, open_view
from viz.attention_spec import attention_heatmap_spec, chart_width

TRY_KEY = "start_try_text"


def _live_example() -> dict | None:
    """The example computed now (when the stored one is missing or stale): loads the model."""
    from model import ModelLoadError
    from ui.cache import cached_run, get_model
    from ui.examples import SHORT

    try:
        loaded = get_model(EXAMPLE_MODEL)
    except ModelLoadError:
        return None
    return example(loaded, cached_run(EXAMPLE_MODEL, SHORT, ""))


def _example() -> None:
    """The head of the bundled model that looks most at the previous word, on a short
    sentence: a stripe anyone can see. Which head and how much come from a run of the model
    (stored beside the app, ui/start_example.py, so this page draws before torch loads)."""
    shown = stored() or _live_example()
    if shown is None:
        return
    layer, head = shown["layer"], shown["head"]
    st.subheader("A real model reading a sentence", anchor=False)
    st.markdown(f"This is one *attention head* of MiniLM, a small relative of BERT, reading "
                f"“{shown['text']}” Each row is one token looking at all the others: the "
                "brighter a square, the more attention it pays there.")
    st.caption("A stored example: it is always this sentence and this model. The model and "
               "text in the sidebar are used by every other page; try your own sentence below.")
    # Vega-Lite, not plotly, on this one page: it draws about a second sooner on a first visit
    # (viz/attention_spec.py); the attention page's plotly heatmap looks the same.
    room = projector.on()  # larger, like every plotly figure in projector mode
    st.vega_lite_chart(attention_heatmap_spec(shown["pattern"], shown["tokens"],
                                              f"MiniLM, layer {layer}, head {head}", room=room),
                       key="start_example", width=chart_width(shown["tokens"], room))
    st.markdown(f"**What to notice:** the bright stripe just left of the diagonal. In this head "
                f"every token after the first looks at the token **just before it**: "
                f"{_share(shown['share'])} of its row goes there, on average. Nobody programmed "
                "that; the model learned it.")
    _try_yours(shown)


def _open_attention(text: str, layer: int, head: int) -> None:
    """A callback: the attention page with this sentence, on the example's model and head."""
    typed = str(st.session_state.get(TRY_KEY, "")).strip()
    open_view(ViewState("attention", EXAMPLE_MODEL, typed or text, "",
                        {"layer": layer, "head": head}))


def _try_yours(shown: dict) -> None:
    """One click from the example to the same head on the learner's own sentence."""
    # 2:1, so the button's words stay on one line in projector mode's larger font at 1024 px
    box, button = st.columns([2, 1], vertical_alignment="bottom")
    box.text_input("Your sentence", key=TRY_KEY, max_chars=500,
                   placeholder=shown["text"])
    button.button("Try it with your sentence ▸", key="start_try", type="primary",
                  on_click=_open_attention,
                  args=(shown["text"], shown["layer"], shown["head"]),
                  help="Opens the attention page on this head, with your sentence.")


def _share(share: float) -> str:
    """A share as a learner reads it: "more than 99%" rather than a rounded-up "100%"."""
    return "more than 99%" if 0.99 < share < 1 and f"{share:.0%}" == "100%" else f"{share:.0%}"


WAYS_IN = (
    ("lessons", "Take a lesson", "Short guided tours. Guess first, then see."),
    ("attention", "Explore freely", "Your own text, every head of every layer."),
    ("teach", "Teach with it", "Write a lesson; send a class one link."),
)


def _ways_in() -> None:
    for column, (target, label, line) in zip(st.columns(len(WAYS_IN)), WAYS_IN):
        with column.container(border=True):
            page_link(st, target, label=f"**{label}** ▸", icon="")
            st.caption(line)


def render(selection) -> None:
    st.title("Attention Lab", anchor=False)
    st.markdown("See what happens inside a transformer, the kind of model behind chatbots and "
                "translators. See how each word of a sentence gathers information from the "
                "others, head by head and layer by layer.")
    ways_in = st.container()
    with st.container():  # drawn below the ways in, but sent first: the chart's code starts
        _example()        # loading in the browser a little sooner on a first visit
    with ways_in:
        _ways_in()
    st.caption("Attention shows where a head looks, not why the model answers as it does: a "
               "head can look hard at a token and still pass on very little of it.")
    page_link(st, "effect", label="Put attention beside what really changes the answer ▸",
              icon="")

