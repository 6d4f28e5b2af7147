"""The shared sidebar: model picker, text (with ready examples) and the device in use."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from model import BUNDLED, LoadedModel, ModelLoadError, Trace
from model.registry import BUNDLED_DESCRIPTIONS

from . import charts, settings
from .cache import get_model, get_trace
from .examples import EXAMPLES, SHORT
from .text import md_escape
from .urlstate import url_default, write_to_url

OTHER = "Other: local directory or hub id"


@dataclass
class Selection:
    """What the sidebar chose. It lives in the session state, so it holds names, never a run:
    `trace` is looked up in the server's shared memory budget on each use (and recomputed if
    it was evicted), so a session costs almost nothing between reruns."""

    model_name: str
    text: str
    pair: str
    model: LoadedModel | None = None  # shared by every session, never mutated
    cut_chars: int = 0
    ran: bool = False  # the text ran without an error

    @property
    def trace(self) -> Trace | None:
        if self.model is None or not self.ran:
            return None
        return get_trace(self.model_name, self.text, self.pair)


def _apply_example() -> None:
    text, pair = EXAMPLES[st.session_state["sb_example"]]
    st.session_state["sb_text"] = text
    st.session_state["sb_pair"] = pair


def model_label(name: str) -> str:
    """How a model is named on screen and in links: a server directory by its folder name."""
    looks_like_path = name.startswith(("/", "~", ".")) or name.count("/") > 1
    return Path(name).name or name if looks_like_path else name


def _model_choice() -> tuple[str, str]:
    """(name to load, label for the link)."""
    allowed = settings.allowed_models()
    trained = st.session_state.get("trained_models", {})  # label -> directory, this session
    options = (allowed if allowed is not None else list(BUNDLED)) + list(trained)
    options += [OTHER] if allowed is None else []
    by_label = {model_label(n): n for n in options if n != OTHER and n not in trained}
    wanted = url_default("sb_model", None)
    if wanted is not None and "sb_model_choice" not in st.session_state:
        wanted = by_label.get(wanted, wanted)
        if wanted in options:
            st.session_state["sb_model_choice"] = wanted
        elif allowed is None:
            st.session_state["sb_model_choice"] = OTHER
            st.session_state["sb_model_other"] = wanted
        else:
            st.sidebar.warning("The link asked for a model this server does not offer; "
                               "showing the default model instead.")
    choice = st.selectbox(
        "Model", options, key="sb_model_choice",
        format_func=lambda n: n if n == OTHER or n in trained else
        f"{n} — {BUNDLED_DESCRIPTIONS[n]}" if n in BUNDLED_DESCRIPTIONS else model_label(n),
    )
    if choice in trained:
        return trained[choice], choice
    if choice != OTHER:
        return choice, model_label(choice)
    other = st.text_input(
        "Model directory or hub id", key="sb_model_other",
        placeholder="/path/to/model or gpt2", help="A local Hugging Face model directory "
        "(config.json, model.safetensors, tokenizer files), or a hub id when online.",
    ).strip()
    return other, other


def render() -> Selection:
    """Draw the sidebar and run the model on the text. Shows errors instead of raising."""
    sb = st.sidebar
    with sb:
        name, label = _model_choice()
        st.session_state.setdefault("sb_text", url_default("sb_text", SHORT))
        st.session_state.setdefault("sb_pair", url_default("sb_pair", ""))
        st.selectbox("Examples", list(EXAMPLES), key="sb_example", index=None,
                     placeholder="Pick a ready example…", on_change=_apply_example)
        text = st.text_area("Text", key="sb_text", height=140,
                            help=f"Up to {settings.max_chars():,} characters. Beyond the "
                            "model's context the extra tokens are cut, and the page says how "
                            "many.")
        pair = st.text_input("Second sentence (optional)", key="sb_pair",
                             help="For a sentence pair: BERT marks it with token type 1.")
        st.radio("Figure downloads", charts.FORMATS, key=charts.FORMAT_KEY, horizontal=True,
                 help="What the camera button in each figure's toolbar saves: PNG, or SVG "
                 "(vector) for slides and papers.")
    selection = Selection(model_name=name, text=text, pair=pair)
    limit = settings.max_chars()
    for field in ("text", "pair"):
        value = getattr(selection, field)
        if len(value) > limit:
            selection.cut_chars += len(value) - limit
            setattr(selection, field, value[:limit])
    write_to_url(model=label, text=selection.text, pair=selection.pair)
    if not name:
        sb.info("Type a model directory or hub id.")
        return selection
    try:
        selection.model = get_model(name)
    except ModelLoadError as exc:
        sb.error(f"Could not load this model: {md_escape(str(exc))}")
        return selection
    sb.caption(f"Device: {selection.model.device}")
    if selection.model.notice:
        sb.warning(md_escape(selection.model.notice))
    if not selection.text.strip():
        return selection
    try:
        get_trace(name, selection.text, selection.pair)
        selection.ran = True
    except ValueError as exc:
        sb.error(md_escape(str(exc)))
    return selection


def require_trace(selection: Selection) -> Trace:
    """Stop the page with a friendly message unless there is a trace to show."""
    if selection.model is None:
        st.info("Pick a model in the sidebar to begin. The bundled MiniLM works offline.")
        st.stop()
    if not selection.text.strip():
        st.info("Type some text in the sidebar (or pick an example) to see its attention.")
        st.stop()
    trace = selection.trace
    if trace is None:
        st.stop()
    notes = []
    if selection.cut_chars:
        notes.append(f"The text was cut by {selection.cut_chars:,} characters "
                     f"(limit {settings.max_chars():,}).")
    dropped = trace.dropped[0]
    if dropped:
        notes.append(f"The text is longer than the model's context of {trace.cfg.n_ctx} "
                     f"tokens: it ran on the first {trace.n_tokens} tokens and "
                     f"{dropped:,} were dropped.")
    if trace.notice:
        notes.append(md_escape(trace.notice))
    for note in notes:
        st.warning(note)
    return trace
