"""“Check these numbers”, for any page: on a click, run Hugging Face's own implementation of
the sidebar's model on the sidebar's text and show the worst difference per layer
(analysis/reference_check.py). Only on demand; the reference model is freed right after."""

from __future__ import annotations

import pandas as pd
import streamlit as st

from analysis.ablation import model_directory
from analysis.reference_check import TOLERANCE, reference_check, unsupported_reason

RESULT_KEY = "_reference_check"  # (model, text, pair) -> the last result, in this session


def _run(selection) -> None:
    with st.spinner("Loading Hugging Face's implementation and running it on your text…"):
        check = reference_check(selection.model, model_directory(selection.model_name),
                                selection.text, selection.pair or None)
    st.session_state[RESULT_KEY] = ((selection.model_name, selection.text, selection.pair),
                                    check)


def _show(check) -> None:
    if not check.supported:
        st.info(check.statement)
        return
    verdict = (f"Every layer agrees within {TOLERANCE:g}" if check.passed else
               f"Some layers differ by more than {TOLERANCE:g}")
    (st.success if check.passed else st.error)(
        f"{verdict} (worst difference {check.worst:.1e}). {check.statement}")
    table = pd.DataFrame(check.table())
    number = "%.1e"
    st.dataframe(table, hide_index=True, width="content", column_config={
        "attention": st.column_config.NumberColumn(
            "attention (worst |difference|)", format=number,
            help="The largest difference between the two attention patterns of this layer, "
            "over every head and every pair of tokens. Attention weights run from 0 to 1."),
        "hidden states": st.column_config.NumberColumn(
            "token vectors (worst |difference|)", format=number,
            help="The largest difference between the two sets of token vectors after this "
            "layer, over every token and every number in each vector."),
    })


def check_numbers(selection, key: str) -> None:
    """An expander with the button and, after a click, the table or a plain statement.
    `key` prefixes the widget keys (one per page). A model Hugging Face cannot run (one of
    this project's own, or no model folder) gets no button that could only say so: one short
    caption instead."""
    reason = unsupported_reason(selection.model, model_directory(selection.model_name))
    if reason:
        st.caption("No check against Hugging Face here. " + reason.split(" (")[0])
        return
    with st.expander("Check these numbers against Hugging Face"):
        st.caption("Runs the Hugging Face library's own version of this model (loaded from the "
                   "same files) on the same tokens, and compares every layer's attention and "
                   f"token vectors with the ones shown here. A layer passes at {TOLERANCE:g}. "
                   "It takes a few seconds; the second model is freed afterwards.")
        if st.button("Check these numbers", key=f"{key}_check_numbers"):
            _run(selection)
        saved = st.session_state.get(RESULT_KEY)
        if saved and saved[0] == (selection.model_name, selection.text, selection.pair):
            _show(saved[1])
