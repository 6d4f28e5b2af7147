"""Parts of the live class's pages that need no app run: the QR code of the join link (its
modules are the link's QR code), join codes as shown, the class's answers as figures (lesson
words escaped, the model's answer marked), and a student's poll, which answers while every
slot of the run queue is held by heavy work."""

from __future__ import annotations

import io
import threading

import numpy as np
import pytest
import segno
from PIL import Image

from teaching.class_store import make_store
from ui import class_follow, class_session
from ui.class_session import Membership
from ui.class_teach import qr_png
from server.gate import RunQueue
from viz.class_tally import cell_tally, choice_tally

LINK = "http://classroom.example:8501/join?code=ABC-DEF"


def test_the_qr_code_holds_the_join_link():
    image = np.array(Image.open(io.BytesIO(qr_png(LINK))).convert("L")) < 128  # dark modules
    wanted = np.array(segno.make(LINK, error="m").matrix, dtype=bool)
    n, border = wanted.shape[0], 3
    scale = image.shape[0] // (n + 2 * border)
    assert image.shape == ((n + 2 * border) * scale,) * 2
    modules = image[border * scale::scale, border * scale::scale][:n, :n]
    assert (modules == wanted).all()
    assert not (modules == np.array(segno.make(LINK + "X", error="m").matrix, bool)).all()


@pytest.mark.parametrize("typed, shown", [("abcdef", "ABC-DEF"), ("ABC-DEF", "ABC-DEF"),
                                          (" a b c d e f ", "ABC-DEF"), ("abc", "ABC")])
def test_a_code_is_shown_as_people_read_it(typed, shown):
    assert class_session.shown_code(typed) == shown


def test_links_carry_the_code_and_the_key_as_query_values():
    assert class_session.join_link("abcdef", "http://h:1") == "http://h:1/join?code=ABC-DEF"
    assert class_session.teacher_link("k-_y", "") == "/teach?class=k-_y"


def test_a_choice_tally_escapes_the_options_and_marks_the_models_answer():
    fig = choice_tally(["<b>bold</b>", "plain"], [2, 1], answer=1)
    bar = fig.data[0]
    assert bar.y[0] == "1. &lt;b&gt;bold&lt;/b&gt;" and bar.y[1].startswith("✔ 2.")
    assert list(bar.x) == [2, 1] and bar.marker.color[0] != bar.marker.color[1]
    assert "2 (67%)" in bar.text[0]
    before = choice_tally(["a", "b"], [0, 0])
    assert len(set(before.data[0].marker.color)) == 1  # no answer shown before the reveal
    with pytest.raises(ValueError, match="one count per option"):
        choice_tally(["a", "b"], [1])


def test_a_cell_tally_draws_shares_and_after_the_reveal_the_row_beside_them():
    fig = cell_tally(["[CLS]", "the", "<i>"], [1, 3, 0], [0.2, 0.5, 0.3], row_label="the")
    picks, row = fig.data
    assert list(picks.y) == [0.25, 0.75, 0.0] and list(row.y) == [0.2, 0.5, 0.3]
    assert picks.x[2] == "2·&lt;i&gt;"
    assert len(cell_tally(["a", "b"], [0, 0]).data) == 1
    with pytest.raises(ValueError, match="one weight per token"):
        cell_tally(["a", "b"], [0, 1], [1.0])


def test_a_students_poll_answers_while_heavy_work_holds_every_slot(tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'classes.sqlite'}"
    monkeypatch.setenv("ATTENTION_LAB_CLASS_STORE", url)
    store = class_session.store()
    new = store.start_class()
    member = store.join(new.join_code, "")
    m = Membership("student", new.class_id, member_key=member.member_key, version=0)
    queue = RunQueue(2)
    import ui.cache

    monkeypatch.setattr(ui.cache, "run_queue", lambda: queue)
    release, held = threading.Event(), threading.Barrier(3)

    def heavy():
        with queue.slot():
            held.wait()
            release.wait(60)

    workers = [threading.Thread(target=heavy) for _ in range(2)]
    for w in workers:
        w.start()
    held.wait()
    try:
        assert class_follow.poll(m) is False  # nothing moved: no rerun
        store.set_view(new.teacher_key, "/heads?model=minilm")
        said = []
        poller = threading.Thread(target=lambda: said.append(class_follow.poll(m)))
        poller.start()
        poller.join(30)  # the heavy runs hold their slots for 60 s
        assert not poller.is_alive() and queue.waiting == 0  # it never queued behind them
        assert said == [True]  # the view moved: the app reruns
    finally:
        release.set()
        for w in workers:
            w.join()
    store.end_class(new.teacher_key)
    assert class_follow.poll(m) is True and m.ended
    assert make_store(url).view(new.class_id).ended
