"""One view of the app: a page, the sidebar's model and text(s), and that page's settings.

Links, lesson steps, "Record this view as a step" and jumps from one page to another all carry
a `ViewState` and go through this module: `apply` puts one in the session (the settings it
does not name go back to the page's defaults, so a view looks the same however it is reached),
`current` reads back what the page on screen used, `to_link`/`from_link` turn one into a link
and back. The settings come from the pages' declarations (teaching/pages.py); a page reads its
own through `page_view(path)`, which remembers what the page used this run.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import partial
from urllib.parse import parse_qsl, urlencode

import streamlit as st

from teaching.pages import BY_PATH, PageSpec

from server import settings as app_settings

from .urlstate import (  # noqa: F401 - url_int: a page reads a number of its own link here
    MAX_URL_TEXT, pack_text, unpack_text, url_int, url_param, write_to_url,
)

MODEL_KEY, OTHER_KEY = "sb_model_choice", "sb_model_other"  # the sidebar's model picker
TEXT_KEY, PAIR_KEY, EXAMPLE_KEY = "sb_text", "sb_pair", "sb_example"
OTHER = "Other: local directory or hub id"  # the picker's last option (ui/sidebar.py)
TRAINED_KEY = "trained_models"  # label -> directory of a model trained in this session
TRAINED_PREFIX = "trained: "  # a trained model's label: "trained: induction"
USED_KEY = "_view_used"  # page path -> names of the settings the page read on its last run
JUMP_KEY = "_view_jump"  # the page a jump asked for, switched to at the top of the next run
DEFAULT_MODEL = "minilm"  # the picker's first option


def trained_label(task: str) -> str:
    """The label a model trained on `task` goes by in this session's model picker."""
    return TRAINED_PREFIX + task


def trained_task(label: str) -> str:
    """The task of a trained model's label ("" for any other label)."""
    return label[len(TRAINED_PREFIX):].strip() if label.startswith(TRAINED_PREFIX) else ""


@dataclass(frozen=True)
class ViewState:
    """What a view draws. `settings` holds only values that differ from the page's declared
    defaults (see `normal`), so two views that draw the same thing compare equal."""

    page: str
    model: str
    text: str
    pair: str = ""
    settings: dict = field(default_factory=dict)

    @property
    def spec(self) -> PageSpec:
        return BY_PATH[self.page]

    def normal(self) -> ViewState:
        """The same view with every setting checked and the ones at their default left out."""
        kept = {}
        for name, value in self.settings.items():
            setting = self.spec.by_name.get(name)
            if setting is None:
                continue
            try:
                value = setting.check(_plain(value))
            except ValueError:
                continue
            if value != setting.default:
                kept[name] = value
        return ViewState(self.page, self.model, self.text, self.pair, kept)

    def params(self) -> dict[str, str]:
        """The view as link parameters (a long text compressed, as the sidebar writes it)."""
        out = {"model": self.model}
        for name, value in (("text", self.text), ("pair", self.pair)):
            if value:
                out[name if len(value) <= MAX_URL_TEXT else f"{name}z"] = (
                    value if len(value) <= MAX_URL_TEXT else pack_text(value))
        for name, value in self.normal().settings.items():
            setting = self.spec.by_name[name]
            out[setting.url] = setting.to_url(value)
        return out

    def to_link(self, base: str = "") -> str:
        """The view's address: `base` (the server's address, or "" for a path) + /page?..."""
        return f"{base.rstrip('/')}/{self.page}?{urlencode(self.params())}"

    @staticmethod
    def split_link(link: str) -> tuple[str, dict[str, str]]:
        """(page path, parameters) of a link `to_link` made ("/" is the start page)."""
        path, _, query = link.partition("?")
        return path.strip("/") or "start", dict(parse_qsl(query))

    @classmethod
    def from_link(cls, page: str, params: Mapping[str, str]) -> ViewState:
        """The view a link asks for (unreadable values are left out: defaults)."""
        spec = BY_PATH[page]
        texts = {}
        for name in ("text", "pair"):
            packed = params.get(f"{name}z")
            texts[name] = (unpack_text(packed, app_settings.max_chars()) if packed else None) \
                or str(params.get(name, ""))
        found = {}
        for setting in spec.settings:
            raw = params.get(setting.url)
            value = None if raw is None else setting.from_url(str(raw))
            if value is not None:
                found[setting.name] = value
        return cls(page, str(params.get("model", "")), texts["text"], texts["pair"],
                   found).normal()


def _plain(value):
    """A session value as a setting holds it (numpy and tuple values from widgets)."""
    if hasattr(value, "item") and not isinstance(value, (list, tuple)):
        value = value.item()
    if isinstance(value, (list, tuple)) and value and isinstance(value[0], (list, tuple)):
        return [tuple(int(v) for v in pair) for pair in value]
    return list(value) if isinstance(value, tuple) else value


# --------------------------------------------------------------------------- the session
def selected_model() -> str:
    """The sidebar's model as a link names it: a bundled name, a trained model's label (never
    its folder on the server), or what was typed under "Other"."""
    state = st.session_state
    choice = state.get(MODEL_KEY) or DEFAULT_MODEL
    return str(state.get(OTHER_KEY, "")).strip() if choice == OTHER else str(choice)


def choose_model(name: str) -> None:
    """Pick `name` in the sidebar's model picker (before the picker is drawn again)."""
    from model import BUNDLED  # here: the start page draws before torch loads

    allowed = app_settings.allowed_models()
    trained = st.session_state.get(TRAINED_KEY, {})
    if name in BUNDLED or name in trained or (allowed is not None and name in allowed):
        st.session_state[MODEL_KEY] = name
    elif allowed is None and name:  # a local directory or a hub id (never in hosted mode)
        st.session_state[MODEL_KEY] = OTHER
        st.session_state[OTHER_KEY] = name


def set_texts(text: str, pair: str | None = None, keep_example: bool = False) -> None:
    """Put `text` (and `pair`, when given) in the sidebar's text boxes; unless the example
    picker put them there (keep_example), it lets go of the example it showed."""
    st.session_state[TEXT_KEY] = text
    if pair is not None:
        st.session_state[PAIR_KEY] = pair
    if not keep_example:
        st.session_state.pop(EXAMPLE_KEY, None)


def chosen_example() -> str | None:
    """The example picked in the sidebar, if any."""
    return st.session_state.get(EXAMPLE_KEY)


def apply(view: ViewState) -> None:
    """Put the session in this view: the sidebar's model and texts, and the page's settings
    (the ones the view does not name go back to the page's defaults). For callbacks and for
    app.py before the sidebar is drawn."""
    view = view.normal()
    state = st.session_state
    choose_model(view.model)
    state[TEXT_KEY], state[PAIR_KEY] = view.text, view.pair
    state.pop(EXAMPLE_KEY, None)
    spec = view.spec
    for setting in spec.settings:
        key = spec.key(setting.name)
        if setting.name in view.settings:
            state[key] = _widget_value(view.settings[setting.name])
        else:
            state.pop(key, None)


CHOSEN_KEY = "selection"  # the sidebar's choice of this run, for glue that is not a page


def keep_chosen(selection) -> None:
    """app.py: the sidebar's choice of this run. Pages are given it (their render); the glue
    that names a download or writes a link reads it with `chosen()`."""
    st.session_state[CHOSEN_KEY] = selection


def chosen():
    """The sidebar's choice of this run (None before the sidebar ran)."""
    return st.session_state.get(CHOSEN_KEY)


def _widget_value(value):
    return [tuple(pair) for pair in value] if isinstance(value, list) else value


def current_inputs() -> tuple[str, str, str]:
    """(model, text, pair) as the sidebar has them now."""
    state = st.session_state
    selection = chosen()
    text = getattr(selection, "text", None)
    pair = getattr(selection, "pair", None)
    return (selected_model(), state.get(TEXT_KEY, "") if text is None else text,
            state.get(PAIR_KEY, "") if pair is None else pair)


def current(page: str) -> ViewState:
    """What the page on screen shows: the sidebar's inputs and the settings it used on its
    last run (only those: a setting a page did not draw is not part of the view)."""
    spec = BY_PATH[page]
    used = st.session_state.get(USED_KEY, {}).get(page, set())
    values = {name: st.session_state[spec.key(name)] for name in spec.by_name
              if name in used and spec.key(name) in st.session_state}
    return ViewState(page, *current_inputs(), values).normal()


# ------------------------------------------------------------------------------- jumps
def go(page: str, values: dict, text: str | None = None) -> None:
    """From a callback: open `page` with these settings, keeping the model and the texts
    (or with `text` in the sidebar instead, and no second sentence)."""
    model, current_text, pair = current_inputs()
    if text is not None:
        current_text, pair = text, ""
    apply(ViewState(page, model, current_text, pair, values))
    st.session_state[JUMP_KEY] = page


def jump(page: str, **values):
    """An on_click callback: `go` to `page` with these settings."""
    return partial(go, page, values)


def open_view(view: ViewState) -> None:
    """From a callback: open exactly this view (its own model and texts)."""
    apply(view)
    st.session_state[JUMP_KEY] = view.page


def take_jump() -> str | None:
    """The page a jump asked for (once)."""
    return st.session_state.pop(JUMP_KEY, None)


# ---------------------------------------------------------------------- a page's settings
class PageView:
    """A page's own settings in the session, by declared name. Reading one through `key`,
    `get` or `setdefault` marks it as used by this view; an undeclared name is a KeyError."""

    def __init__(self, spec: PageSpec):
        self.spec = spec

    def _use(self, name: str) -> str:
        key = self.spec.key(name)  # KeyError: the page reads a setting it did not declare
        st.session_state.setdefault(USED_KEY, {}).setdefault(self.spec.path, set()).add(name)
        return key

    def key(self, name: str) -> str:
        """The widget key of a setting (the widget draws and changes it)."""
        return self._use(name)

    def get(self, name: str, default=None):
        return st.session_state.get(self._use(name), default)

    def __getitem__(self, name: str):
        return st.session_state[self._use(name)]

    def __setitem__(self, name: str, value) -> None:
        st.session_state[self.spec.key(name)] = value

    def __contains__(self, name: str) -> bool:
        return self.spec.key(name) in st.session_state

    def peek(self, name: str, default=None):
        """The session's value, without counting it as used (for a value the page reads only
        when it also draws the setting's widget)."""
        return st.session_state.get(self.spec.key(name), default)

    def linked(self, name: str) -> bool:
        """Does the link name this setting (whatever the session holds)?"""
        return url_param(self.spec.by_name[name].url) is not None

    def given(self, name: str):
        """The value the session or the link gives this setting, or None (nothing is set)."""
        key = self.spec.key(name)
        if key in st.session_state:
            return st.session_state[key]
        setting = self.spec.by_name[name]
        raw = url_param(setting.url)
        return None if raw is None else setting.from_url(str(raw))

    def setdefault(self, name: str, default=None):
        """The session's value, else the link's, else `default` (or the declared default
        when `default` is None)."""
        key = self._use(name)
        if key not in st.session_state:
            value = self.given(name)
            if value is None:
                value = self.spec.by_name[name].default if default is None else default
            st.session_state[key] = _widget_value(value)
        return st.session_state[key]

    def write_link(self, stopped: bool = False) -> None:
        """Put the settings this view uses in the page's link (the others out). `stopped`: the
        page stopped early (a message, a wait), so a setting it did not reach yet keeps what
        the link says: the run after the wait opens the view the link asked for."""
        used = st.session_state.get(USED_KEY, {}).get(self.spec.path, set())
        view = ViewState(self.spec.path, "", "", "",
                         {n: st.session_state[self.spec.key(n)] for n in used
                          if self.spec.key(n) in st.session_state}).normal()
        write_to_url(**{s.url: (s.to_url(view.settings[s.name]) if s.name in view.settings
                                else None) for s in self.spec.settings
                        if not stopped or s.name in used})


def page_view(path: str) -> PageView:
    return PageView(BY_PATH[path])


def start_run() -> None:
    """At the top of a whole run (not a fragment's): no page has used anything yet."""
    st.session_state[USED_KEY] = {}
