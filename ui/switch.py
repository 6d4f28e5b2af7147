"""No dead ends: when a page does not apply to the model in the sidebar, say why in a line and
offer a bundled model it does apply to, switched with one click.

    reason = needs_lm_head(selection, "The logit lens")
    if reason:
        offer_decoder(selection, reason, key="lens_switch")
        st.stop()
"""

from __future__ import annotations

import streamlit as st

from model import BUNDLED

from server import settings

from . import class_session, page_registry
from .examples import KNOWN_KIND, is_app_example, known_sentence
from .model_names import NAMES, description
from .sidebar import LINK_MODEL_KEY, model_label, refusal_note, use_known_sentence
from .text import md_escape

MODEL_KEY = "sb_model_choice"  # the sidebar's model picker (ui/sidebar.py)
PAIR_KEY = "sb_pair"
TEXT_KEY = "sb_text"
PENDING_KEY = "_decoder_pending"  # a page asked to open on the default decoder next run
OPENED_KEY = "_decoder_opened"  # {"page", "reason"}: a page that opened on it, and why
# Bundled decoders with a language-model head, best first for a learner's English text.
DECODERS = ("tiny-words", "tiny-chars", "tiny-induction")
WHAT_THEY_ARE = {
    "tiny-words": "reads whole words of simple sentences about a small world of names and "
                  "objects",
    "tiny-chars": "reads one character at a time and knows only our own sentences about "
                  "attention",
    "tiny-induction": "continues repeated letters (a-z and digits)",
}
OPENS_ON = DECODERS[0]  # where a decoder-lab page opens when the sidebar's model cannot do it


def bundled_decoders() -> list[str]:
    """The bundled decoders this server offers (a hosted server may list fewer)."""
    allowed = settings.allowed_models()
    return [name for name in DECODERS if allowed is None or name in allowed]


def _keeps_text(name: str) -> bool:
    """Does switching to `name` keep the sidebar's text? Not when the text is still one of the
    app's own examples and `name` knows only one kind of text: then it gets a sentence of
    that kind (the learner's own text is always kept)."""
    return known_sentence(name) is None or not is_app_example(str(
        st.session_state.get(TEXT_KEY, "")))


def _switch_to(name: str) -> None:
    """on_click: set the sidebar's picker before it is drawn on the next run."""
    if not _keeps_text(name):
        use_known_sentence(name)
    st.session_state[MODEL_KEY] = name
    st.session_state[PAIR_KEY] = ""  # character models read one text, not a sentence pair


def needs_lm_head(selection, what: str) -> str | None:
    """Why `what` ("The logit lens") does not apply to the sidebar's model, in one or two
    plain sentences (Markdown, user text escaped); None when the model has a language-model
    head (the last layer, that turns each vector into a score for every token of the
    vocabulary)."""
    loaded = selection.model
    if loaded is None or loaded.cfg.has_lm_head:
        return None
    if selection.link_refused:  # the model shown instead of the link's: one sentence for both
        return refusal_note(selection, what)
    name = md_escape(NAMES.get(selection.model_name) or model_label(selection.model_name))
    if getattr(loaded, "headless", False):
        return (f"{what} needs the model's language-model head, and {name} was saved without "
                "one: its folder holds the decoder's layers but no `lm_head` weights, so "
                "nothing turns a vector into next-token scores. Attention and the other pages "
                "work as usual.")
    if hasattr(loaded.model, "dec_cfg"):  # tiny-reverse: the encoder reads the text
        return (f"{what} follows one stack of layers that predicts the next token of your "
                f"text. In {name} the encoder reads your text and a separate decoder writes "
                "the answer, so there is no next token of your text to predict.")
    return (f"{what} needs a decoder, a model trained to predict the next token. {name} is an "
            "encoder: it turns a text into vectors and has no layer that scores next tokens.")


def offer_decoder(selection, reason: str, key: str = "switch") -> None:
    """Show `reason` and a button per bundled decoder that switches the sidebar's model."""
    slot = getattr(selection, "refusal_slot", None)
    if slot is not None:  # the link's refused model: `reason` says it (needs_lm_head)
        slot.empty()
    st.info(reason)
    names = bundled_decoders()
    if not names:
        st.caption("This server offers no decoder; whoever runs it can add one to its list of "
                   "models.")
        return
    pair = str(st.session_state.get(PAIR_KEY, "")).strip()
    row = st.container(horizontal=True)  # wraps on a narrow screen instead of squeezing
    for i, name in enumerate(names):
        row.button(f"Switch to {name}", key=f"{key}_{name}", on_click=_switch_to, args=(name,),
                   type="primary" if i == 0 else "secondary",
                   help=description(name))
    told = "; ".join(f"{n} {WHAT_THEY_ARE[n]}" for n in names)
    st.caption(f"They come with the app and work offline: {told}." if len(names) > 1 else
               f"It comes with the app and works offline: {told}.")
    if pair:
        st.caption("Switching clears the second sentence: these models read one text at a "
                   "time.")
    swapped = [n for n in names if not _keeps_text(n)]
    if swapped:
        kind = KNOWN_KIND.get(swapped[0], "sentence")
        st.caption(f"Switching to {swapped[0]} also puts in a {kind} of the kind it learned "
                   "from, so its guesses mean something.")


def _opens_on_decoder(selection) -> bool:
    """Should a decoder-lab page the sidebar's model cannot run open on OPENS_ON? When the
    learner has just come to it from another page (or opened the app on it), the server
    offers it, and nothing chose the model on purpose: not the learner typing a folder or hub
    id, not the link that opened the session naming it (kept while it is the sidebar's
    model), not a live class they follow; not a link's refused model either."""
    came_from = page_registry.came_from()
    shown = st.session_state.get(page_registry.SHOWN_KEY)
    if came_from == shown or OPENS_ON not in bundled_decoders() or selection.link_refused:
        return False
    if selection.model_name not in BUNDLED:  # a folder or hub id the learner typed: kept
        return False
    if st.session_state.get(LINK_MODEL_KEY) == selection.model_name:  # a link's choice: kept
        return False
    student = class_session.student()
    return student is None or not student.following


def open_on_decoder(selection, reason: str, key: str) -> None:
    """A decoder-lab page (its render()) that the sidebar's model cannot run: just opened, it
    opens on OPENS_ON (the run starts again with it in the sidebar, and the page says why);
    else `reason` and a button per bundled decoder (`offer_decoder`)."""
    if _opens_on_decoder(selection):
        st.session_state[PENDING_KEY] = {"page": st.session_state[page_registry.SHOWN_KEY],
                                         "reason": reason}
        st.rerun()
    st.session_state.pop(OPENED_KEY, None)  # the learner chose this model here
    offer_decoder(selection, reason, key)


def take_pending() -> None:
    """app.py, before the sidebar is drawn: a page asked to open on the default decoder."""
    pending = st.session_state.pop(PENDING_KEY, None)
    if pending is not None:
        _switch_to(OPENS_ON)
        st.session_state[OPENED_KEY] = pending


def opened_note(selection, key: str) -> None:
    """On a page that opened on OPENS_ON: why, in one line, with the other bundled decoders
    a click away. Said while the learner stays on the page with that model."""
    opened = st.session_state.get(OPENED_KEY)
    if opened is None:
        return
    if opened["page"] != st.session_state.get(page_registry.SHOWN_KEY) or \
            selection.model_name != OPENS_ON:
        del st.session_state[OPENED_KEY]
        return
    st.info(f"{opened['reason']} So the page opened on {OPENS_ON}, a decoder that comes with "
            f"the app: it {WHAT_THEY_ARE[OPENS_ON]}.")
    others = [n for n in bundled_decoders() if n != OPENS_ON]
    row = st.container(horizontal=True)
    for name in others:
        row.button(f"Switch to {name}", key=f"{key}_{name}", on_click=_switch_to, args=(name,),
                   help=description(name))
