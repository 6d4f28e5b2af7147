"""The shared sidebar: model picker, text (with ready examples) and the device in use."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import streamlit as st

from model import BUNDLED, LoadedModel, ModelLoadError, Trace
from model.hub import HubUnreachable
from model.registry import HubOffline

from server import settings

from . import charts, view_state, words_card
from .cache import get_model, get_trace
from .examples import EXAMPLES, LEARNED_FROM, SHORT, known_label, known_sentence
from .model_names import NAMES, about_loaded, description, in_groups, short_label
from .text import md_escape
from .urlstate import link_was_unreadable, url_default, write_to_url

OTHER = "Other: local directory or hub id"
LINK_MODEL_KEY = "_link_model"  # the model the link that opened the session named


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
    load_error: str | None = None  # why the model could not be loaded (Markdown, escaped)
    link_refused: str | None = None  # a model the link asked for that this server refused
    refusal_slot: object = field(default=None, repr=False, compare=False)  # where it was said

    @property
    def trace(self) -> Trace | None:
        if self.model is None or not self.ran:
            return None
        return get_trace(self.model_name, self.text, self.pair)


def _use_model(name: str) -> None:
    """on_click: choose this model in the picker before it is drawn again."""
    view_state.choose_model(name)


def _apply_example() -> None:
    text, pair = EXAMPLES[view_state.chosen_example()]
    view_state.set_texts(text, pair, keep_example=True)


def use_known_sentence(name: str) -> None:
    """on_click: put a sentence of the kind `name` was trained on in the text box."""
    sentence = known_sentence(name)
    if sentence:
        view_state.set_texts(sentence, "")


def _known_text_note(name: str) -> None:
    """For a model trained on one narrow kind of text: what it learned from, in one line, and
    a one-click sentence of that kind (unless the text box already holds it)."""
    line, sentence = LEARNED_FROM.get(name), known_sentence(name)
    if not line:
        return
    st.caption(line)
    if sentence and st.session_state.get(view_state.TEXT_KEY) != sentence:
        st.button(known_label(name), key="sb_known_text", on_click=use_known_sentence,
                  args=(name,), help=f"Puts “{md_escape(sentence)}” in the text box.")


def model_label(name: str) -> str:
    """How a model is named on screen and in links: a server directory by its folder name."""
    looks_like_path = name.startswith(("/", "~", ".")) or name.count("/") > 1
    return Path(name).name or name if looks_like_path else name


def _model_choice(page: str | None) -> tuple[str, str]:
    """(name to load, label for the link); `page`: the page's path."""
    allowed = settings.allowed_models()
    trained = st.session_state.get("trained_models", {})  # label -> directory, this session
    options = in_groups(allowed if allowed is not None else list(BUNDLED)) + list(trained)
    options += [OTHER] if allowed is None else []
    by_label = {model_label(n): n for n in options if n != OTHER and n not in trained}
    wanted = url_default("sb_model", None)
    if wanted is not None and view_state.MODEL_KEY not in st.session_state:
        wanted = by_label.get(wanted, wanted)
        st.session_state[LINK_MODEL_KEY] = wanted  # the link chose the model (ui/switch.py)
        if wanted in options:
            st.session_state[view_state.MODEL_KEY] = wanted
        elif allowed is None:
            st.session_state[view_state.MODEL_KEY] = OTHER
            st.session_state[view_state.OTHER_KEY] = wanted
        else:  # said on the page, in one sentence with what the page needs (refusal_note)
            st.session_state[REFUSED_KEY] = {"asked": wanted}
    choice = st.selectbox(
        "Model", options, key=view_state.MODEL_KEY,
        format_func=lambda n: n if n == OTHER or n in trained else
        short_label(n) if n in BUNDLED else model_label(n),
    )
    _note_fallback(choice, page)
    about = None if choice in trained else description(choice)
    if about:
        st.caption(about)
    _known_text_note(choice)
    words_card.draw(choice)
    if choice in trained:
        return trained[choice], choice
    if choice != OTHER:
        return choice, model_label(choice)
    other = st.text_input(
        "Model directory or hub id", key=view_state.OTHER_KEY,
        placeholder="/path/to/model or gpt2", help="A local Hugging Face model directory "
        "(config.json, model.safetensors, tokenizer files), or a hub id such as gpt2, "
        "downloaded into the Hugging Face cache on first use.",
    ).strip()
    return other, other


REFUSED_KEY = "_link_refused"  # {"asked": name, "shown": the model shown instead, "page"}


def _note_fallback(choice: str, page: str | None) -> None:
    """Remember the model shown instead of a refused one, and on which page; forget the
    refusal once the learner picks another model or opens another page."""
    refused = st.session_state.get(REFUSED_KEY)
    if refused is not None and (refused.setdefault("shown", choice),
                                refused.setdefault("page", page)) != (choice, page):
        del st.session_state[REFUSED_KEY]


def refusal_note(selection: Selection, what: str | None = None) -> str:
    """The one sentence saying the link's model is not offered here (Markdown, escaped), and,
    for a page that needs a decoder, that `what` ("Generation") needs one."""
    asked = (f"This server does not offer “{md_escape(selection.link_refused)}”, the model "
             "the link asked for")
    if what is None:
        shown = md_escape(short_label(model_label(selection.model_name)))
        return f"{asked}, so the page shows {shown} instead."
    return (f"{asked}, and {what[0].lower() + what[1:]} needs a decoder (a model that predicts "
            "the next token): pick one below.")


HEADLESS_NOTE = ("This decoder was saved without its language-model head (no `lm_head` "
                 "weights), so it cannot score next tokens: the logit lens and generation "
                 "are off for it. Everything else works.")


def hub_offline_message(name: str) -> str:
    """A hub id typed while HF_HUB_OFFLINE=1 keeps the app off the hub: why, and what to do."""
    return (f"“{md_escape(name)}” is not a bundled model or a folder on this computer, so it "
            "would come from the Hugging Face hub, and hub models need a network connection, "
            "but this app was started with HF_HUB_OFFLINE=1, which keeps it off the hub: "
            "start it without that setting to download models by name, or pick a bundled "
            "model.")


def hub_unreachable_message(name: str) -> str:
    """A hub id the cache lacks, and the hub cannot be reached: why, and the bundled models
    to pick instead, named as the model box names them ("MiniLM (reads text)")."""
    allowed = settings.allowed_models()  # the labels are ours: no user text in them
    offered = [short_label(n) for n in in_groups(list(BUNDLED))
               if allowed is None or n in allowed]
    return (f"“{md_escape(name)}” would be downloaded from the Hugging Face hub, but this "
            "computer cannot reach it (no network connection), so pick one of the bundled "
            f"models, which work offline: {', '.join(offered)}.")


def _selection(name: str, text: str, pair: str) -> Selection:
    """The choice, with texts cut to the server's limit (the page says so)."""
    selection = Selection(model_name=name, text=text, pair=pair)
    limit = settings.max_chars()
    for field in ("text", "pair"):
        value = getattr(selection, field)
        if len(value) > limit:
            selection.cut_chars += len(value) - limit
            setattr(selection, field, value[:limit])
    return selection


def _link(label: str, selection: Selection) -> None:
    """Put the choice in the page's link, and say when a text is too long to go in it."""
    left_out = write_to_url(model=label, text=selection.text, pair=selection.pair)
    if left_out:
        st.caption("This text is too long for the page's link, even compressed: a link to "
                   "this page opens with the example text. Share the text itself instead.")
    if link_was_unreadable():
        st.warning("The text in the link you opened could not be read (it may have been "
                   "cut when it was copied), so the example text is shown instead.")


def render(page: str | None = None) -> Selection:
    """Draw the sidebar and run the model on the text (`page`: the page's path). Shows errors
    instead of raising."""
    sb = st.sidebar
    with sb:
        name, label = _model_choice(page)
        st.session_state.setdefault(view_state.TEXT_KEY, url_default("sb_text", SHORT))
        st.session_state.setdefault(view_state.PAIR_KEY, url_default("sb_pair", ""))
        st.selectbox("Examples", list(EXAMPLES), key=view_state.EXAMPLE_KEY, index=None,
                     placeholder="Pick a ready example…", on_change=_apply_example)
        text = st.text_area("Text", key=view_state.TEXT_KEY, height=140,
                            help=f"Up to {settings.max_chars():,} characters. Beyond the "
                            "model's context the extra tokens are cut, and the page says how "
                            "many.")
        pair = st.text_input("Second sentence (optional)", key=view_state.PAIR_KEY,
                             help="For a sentence pair: BERT marks it with token type 1.")
        selection = _selection(name, text, pair)
        selection.link_refused = st.session_state.get(REFUSED_KEY, {}).get("asked")
        _link(label, selection)
        st.radio("Figure downloads", charts.FORMATS, key=charts.FORMAT_KEY, horizontal=True,
                 help="What the camera button in each figure's toolbar saves: PNG, or SVG "
                 "(vector) for slides and papers.")
    if not name:
        sb.info("Type a model directory or hub id.")
        return selection
    try:
        selection.model = get_model(name)
    except ModelLoadError as exc:
        selection.load_error = (
            hub_offline_message(exc.name) if isinstance(exc, HubOffline)
            else hub_unreachable_message(exc.name) if isinstance(exc, HubUnreachable)
            else f"Could not load this model: {md_escape(str(exc))}")
        sb.error(selection.load_error)
        return selection
    if name not in BUNDLED:  # a folder or hub id: what it is and its size, from its config
        sb.caption(about_loaded(selection.model))  # (the config's model_type escaped in it)
    kind = selection.model.device.type
    sb.caption("Runs on the processor (CPU)" if kind == "cpu" else
               "Runs on the graphics card (GPU)" if kind == "cuda" else f"Runs on: {kind}",
               help="Where the model's arithmetic happens. A graphics card is faster; the "
               "numbers are the same.")
    if selection.model.notice:
        sb.warning(md_escape(selection.model.notice))
    if selection.model.headless:
        sb.info(HEADLESS_NOTE)
    if not selection.text.strip():
        return selection
    try:
        get_trace(name, selection.text, selection.pair)
        selection.ran = True
    except ValueError as exc:
        sb.error(md_escape(str(exc)))
    return selection


_INPUT_KEYS = (view_state.MODEL_KEY, view_state.OTHER_KEY, view_state.TEXT_KEY,
               view_state.PAIR_KEY)


def brings_new_input() -> bool:
    """Before the sidebar is drawn: has the model or text changed since this session's last
    run? Then this run will most likely compute (the run queue's wait estimate counts it as a
    long one from the start). The first run of a session opens a page: not counted."""
    last = st.session_state.get("_last_input")
    return last is not None and last != tuple(st.session_state.get(k) for k in _INPUT_KEYS)


def remember_input() -> None:
    """After the sidebar is drawn: the model and text this run used."""
    st.session_state["_last_input"] = tuple(st.session_state.get(k) for k in _INPUT_KEYS)


def require_trace(selection: Selection, context_note: bool = True, notes: bool = True) -> Trace:
    """Stop the page with a friendly message unless there is a trace to show. Notes on what
    was cut are shown above the page (`notes=False`: the page shows them itself, with
    `trace_notes`); `context_note=False` leaves out the one saying the run read only the
    first tokens, for a page that reads a long text another way and says so."""
    if selection.model is None:
        if selection.load_error:  # where the eye is, not only in the sidebar
            st.error(selection.load_error)
            default = next(iter(BUNDLED))
            if default != selection.model_name and settings.model_refusal(default) is None:
                st.button(f"Use the bundled {NAMES.get(default, default)} instead",
                          key="sb_back_to_default", on_click=_use_model, args=(default,),
                          help="It comes with the app and works offline.")
        else:
            st.info("Pick a model in the sidebar to begin. The bundled MiniLM works offline.")
        st.stop()
    if selection.link_refused:  # a page that offers a decoder instead says it its own way
        selection.refusal_slot = st.empty()
        selection.refusal_slot.warning(refusal_note(selection))
    if not selection.text.strip():
        st.info("Type some text in the sidebar (or pick an example) to see its attention.")
        st.stop()
    trace = selection.trace
    if trace is None:
        st.stop()
    if notes:
        trace_notes(selection, trace, context_note)
    return trace


def trace_notes(selection: Selection, trace: Trace, context_note: bool = True) -> None:
    """What was cut from the text, a notice of the run, and special tokens typed in it."""
    notes = []
    if selection.cut_chars:
        notes.append(f"The text was cut by {selection.cut_chars:,} characters "
                     f"(limit {settings.max_chars():,}).")
    dropped = trace.dropped[0]
    if dropped and context_note:
        notes.append(f"The text is longer than the model's context of {trace.cfg.n_ctx} "
                     f"tokens: it ran on the first {trace.n_tokens} tokens and "
                     f"{dropped:,} {'was' if dropped == 1 else 'were'} dropped.")
    if trace.notice:
        notes.append(md_escape(trace.notice))
    for note in notes:
        st.warning(note)
    typed = trace.typed_special[0] if trace.typed_special else []
    if typed:
        names = list(dict.fromkeys(f"“{md_escape(trace.batch_tokens[0][i])}”" for i in typed))
        names = ", ".join(names[:-1]) + " and " + names[-1] if len(names) > 1 else names[0]
        it = "them" if len(typed) > 1 else "it"
        st.caption(f"The text itself contains the special token{'s' * (len(typed) > 1)} "
                   f"{names}. The model reads {it} as the real thing, so every page counts "
                   f"{it} as special, like the ones the tokenizer adds: hidden by “Hide "
                   "special tokens”, counted in “To special tokens”.")
