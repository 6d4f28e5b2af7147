"""The start page, at "/": what the app is, one real head doing something you can see, and three
ways in."""

from __future__ import annotations

import streamlit as st

from model import ModelLoadError
from teaching.facts import FactInputs, compute
from ui.cache import cached_run, get_model
from ui.charts import chart_config
from ui.examples import SHORT
from viz.attention import attention_heatmap
from viz.labels import axis_labels

EXAMPLE_MODEL = "minilm"  # the bundled pretrained model: the example works offline


def _example() -> None:
    """The head of the bundled model that looks most at the previous word, on a short
    sentence: a stripe anyone can see. Which head and how much come from the run."""
    try:
        loaded = get_model(EXAMPLE_MODEL)
    except ModelLoadError:
        return
    trace = cached_run(EXAMPLE_MODEL, SHORT, "")
    prev = compute("prev", FactInputs(loaded, trace))
    labels = axis_labels(trace.tokens)
    st.subheader("A real model reading a sentence", anchor=False)
    st.markdown(f"This is one *attention head* of MiniLM, a small relative of BERT, reading "
                f"“{SHORT}” Each row is one token looking at all the others: the brighter a "
                "square, the more attention it pays there.")
    fig = attention_heatmap(trace.attentions[prev["layer"], prev["head"]].numpy(), labels,
                            labels, title=f"MiniLM, layer {prev['layer']}, head {prev['head']}")
    st.plotly_chart(fig, key="start_example", config=chart_config(
        "attention", fig, layer=prev["layer"], head=prev["head"]), width="content")
    st.markdown(f"**What to notice:** the bright stripe just left of the diagonal. In this head "
                f"every token looks at the token **just before it**: {prev['share']:.0%} of each "
                "row goes there, on average. Nobody programmed that; the model learned it.")


WAYS_IN = (
    ("app_pages/lessons.py", "Take a lesson", "Short guided tours. Guess first, then see."),
    ("app_pages/attention.py", "Explore freely", "Your own text, every head of every layer."),
    ("app_pages/teach.py", "Teach with it", "Write a lesson; send a class one link."),
)


def _ways_in() -> None:
    for column, (target, label, line) in zip(st.columns(len(WAYS_IN)), WAYS_IN):
        with column.container(border=True):
            st.page_link(target, label=f"**{label}** ▸")
            st.caption(line)


def page() -> None:
    st.title("Attention Lab")
    st.markdown("See what happens inside a transformer, the kind of model behind chatbots and "
                "translators. Give it a sentence and watch how each word gathers information "
                "from the others, head by head and layer by layer.")
    _ways_in()
    _example()
    st.caption("Attention shows where a head looks, not why the model answers as it does: a "
               "head can look hard at a token and still pass on very little of it.")
    st.page_link("app_pages/effect.py", label="Put attention beside what really changes the "
                 "answer ▸")


page()
