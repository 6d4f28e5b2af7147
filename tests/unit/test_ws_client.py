"""The load bench's protocol-level session (tests/harness/ws_client.py), without a server: the rerun
messages it builds and how it reads the server's messages."""

from __future__ import annotations

import asyncio
import json

import pytest
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.harness.ws_client import Run, WsSession, figure_shows

FRAGMENT = "frag123"


def _element(path: list[int], fragment: str = "", **fill) -> ForwardMsg:
    msg = ForwardMsg()
    msg.metadata.delta_path[:] = path
    msg.delta.fragment_id = fragment
    for kind, setter in fill.items():
        setter(getattr(msg.delta.new_element, kind))
    return msg


def _finished(status: str) -> ForwardMsg:
    msg = ForwardMsg()
    msg.script_finished = ForwardMsg.ScriptFinishedStatus.Value(status)
    return msg


def _slider(wid: str, value: float = 0, set_value: bool = False):
    def fill(s):
        s.id, s.max = wid, 5
        s.default[:] = [0]
        s.value[:] = [value]
        s.set_value = set_value
    return fill


def _heatmap(x: list[str], title: str):
    def fill(p):
        p.id = "$$ID-abc-attn_heatmap"
        p.spec = json.dumps({"data": [{"x": x}], "layout": {"title": {"text": title}}})
    return fill


def _first_run(session: WsSession) -> None:
    new = ForwardMsg()
    new.new_session.page_script_hash = "hash42"
    session.handle(new)
    session.handle(_element([1, 0], text_area=lambda t: (setattr(t, "id", "$$ID-1-sb_text"),
                                                         setattr(t, "default", "Hi"))))
    session.handle(_element([0, 1], FRAGMENT, slider=_slider("$$ID-2-attn_layer")))
    session.handle(_element([0, 2], FRAGMENT, slider=_slider("$$ID-3-attn_head", 3, True)))
    info = ForwardMsg()
    info.page_info_changed.query_string = "model=minilm&layer=0&head=3"
    session.handle(info)


def test_first_rerun_names_the_page_by_its_path_then_by_the_hash_it_was_given() -> None:
    session = WsSession("http://127.0.0.1:9/attention?model=minilm")
    first = session.rerun_msg().rerun_script
    assert (first.page_name, first.page_script_hash) == ("attention", "")
    assert first.query_string == "model=minilm" and not first.widget_states.widgets
    _first_run(session)
    assert session.widgets["attn_head"]["value"] == 3  # set by the server: taken
    assert session.widgets["sb_text"]["value"] == "Hi"  # the default
    session.widgets["sb_text"]["value"] = "A new text"
    later = session.rerun_msg(FRAGMENT).rerun_script
    assert (later.page_name, later.page_script_hash) == ("", "hash42")
    assert later.query_string == "model=minilm&layer=0&head=3"
    assert later.fragment_id == FRAGMENT
    states = {w.id: w for w in later.widget_states.widgets}
    assert states["$$ID-1-sb_text"].string_value == "A new text"
    assert list(states["$$ID-3-attn_head"].double_array_value.data) == [3.0]


def test_a_run_ends_at_its_own_finish_and_counts_busy_lines_and_errors() -> None:
    session = WsSession("http://127.0.0.1:9/attention", busy_pattern="in line")
    _first_run(session)
    session.run = run = Run(want=("session3", None), done=asyncio.Event())
    busy = "Yours is number {} in line"
    for place in (2, 1):  # one busy line, updated: seen once
        session.handle(_element([0, 0], alert=lambda a, p=place: setattr(a, "body", busy.format(p))))
    session.handle(_element([0, 0], empty=lambda e: e.SetInParent()))
    session.handle(_finished("FINISHED_EARLY_FOR_RERUN"))
    assert not run.done.is_set()  # replaced by a rerun: not the end
    session.handle(_element([0, 3], FRAGMENT, plotly_chart=_heatmap(["0·Session", "3"], "x")))
    session.handle(_element([0, 4], exception=lambda e: (setattr(e, "type", "ValueError"),
                                                         setattr(e, "message", "bad"))))
    session.handle(_finished("FINISHED_SUCCESSFULLY"))
    assert run.done.is_set() and run.status == "FINISHED_SUCCESSFULLY"
    assert run.busy == 1 and "number 2" in run.busy_text
    assert run.errors == 1 and run.error_text == "ValueError: bad"
    assert run.heatmap_ms is not None and run.shows


def test_a_cached_message_comes_back_by_its_hash() -> None:
    session = WsSession("http://127.0.0.1:9/attention")
    session.run = run = Run(want=(None, "layer 2, head 3"), done=asyncio.Event())
    big = _element([0, 3], plotly_chart=_heatmap(["a"], "Layer 2, head 3"))
    big.hash, big.metadata.cacheable = "h1", True
    session.handle(big)
    assert list(session.rerun_msg().rerun_script.cached_message_hashes) == ["h1"]
    session.run = run = Run(want=(None, "layer 2, head 3"), done=asyncio.Event())
    ref = ForwardMsg()
    ref.ref_hash = "h1"
    session.handle(ref)
    assert run.shows and run.errors == 0
    missing = ForwardMsg()
    missing.ref_hash = "nope"
    session.handle(missing)
    assert run.errors == 1


@pytest.mark.parametrize("want, shown", [(("round12", None), True), (("round13", None), False),
                                         ((None, "layer 1, head 2"), True),
                                         ((None, "layer 1, head 3"), False)])
def test_figure_shows_the_marker_or_the_title(want: tuple, shown: bool) -> None:
    spec = json.dumps({"data": [{"x": ["0·[CLS]", "1·round", "2·12"]}],
                       "layout": {"title": {"text": "Layer 1, head 2"}}})
    assert figure_shows(spec, want) is shown


def test_a_button_is_sent_only_in_the_rerun_that_presses_it_and_warnings_are_kept():
    session = WsSession("http://127.0.0.1:1/effect?model=minilm", heatmap_key="eff_strip",
                        keys=("sb_text", "eff_run"))
    session.handle(_element([0, 3], button=lambda b: (setattr(b, "id", "$$ID-9-eff_run"),
                                                      setattr(b, "label", "Measure"))))
    assert session.widgets["eff_run"]["button"]
    assert not session.widget_states()  # not pressed: the browser sends no trigger
    session.clicking = "eff_run"
    pressed = session.widget_states()
    assert [(s.id, s.trigger_value) for s in pressed] == [("$$ID-9-eff_run", True)]
    session.clicking = None

    session.run = Run()
    warning = _element([0, 4], alert=lambda a: (setattr(a, "body", "short of memory"),
                                                setattr(a, "format", 2)))
    info = _element([0, 5], alert=lambda a: (setattr(a, "body", "an info box"),
                                             setattr(a, "format", 3)))
    session.handle(warning)
    session.handle(info)
    assert session.run.note_text == "short of memory" and session.run.errors == 0
