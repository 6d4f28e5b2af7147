"""The queue's "should start in about N s" (server/gate.py) is honest when cheap reruns and long
runs share the slots (issue 18: place 1 behind two long runs was told "about 1 s"), and says a
range until its own estimates have held (issue 38)."""

from __future__ import annotations

import contextlib

from analysis.pace import Span
from server.gate import FIRST_GUESS_SECONDS, RunQueue


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _history(queue: RunQueue, clock: Clock, seconds: list[float]) -> None:
    """Runs that held a slot for these many seconds, one after another."""
    for held in seconds:
        with queue.slot():
            clock.now += held


# Under a class's load: every new text is a long run; between them, reruns that find their run
# in the cache hold a slot for a tenth of a second.
MIXED = ([0.1] * 4 + [10.0]) * 3


def test_place_one_behind_two_long_runs_is_told_what_is_left_of_them():
    clock = Clock()
    queue = RunQueue(slots=2, clock=clock)
    _history(queue, clock, MIXED)
    mean = sum(MIXED) / len(MIXED)  # 2.1 s: what a mean of the holds would promise
    with contextlib.ExitStack() as running:
        running.enter_context(queue.slot())
        running.enter_context(queue.slot())
        clock.now += 2.0  # both have run 2 s, longer than any cheap rerun: they are long ones
        first = queue.estimate(1)
        assert 7.0 <= first <= 9.0  # 8 s left of a 10 s run
        assert first > 3 * mean
        later = [queue.estimate(place) for place in (2, 3, 4)]
        assert first <= later[0] <= later[1] <= later[2]
        clock.now += 7.5  # nearly done: the estimate falls as they go on
        assert queue.estimate(1) < first


def test_a_run_longer_than_any_seen_is_not_assumed_to_end_now():
    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    _history(queue, clock, [1.0, 1.0, 1.0])
    with queue.slot():
        clock.now += 6.0  # longer than every run in the history
        assert queue.estimate(1) >= 2.0  # not 0: it is still running


def test_with_free_slots_or_no_history_the_estimate_is_small_and_defined():
    clock = Clock()
    queue = RunQueue(slots=2, clock=clock)
    assert queue.estimate(1) == 0.0  # a free slot: no wait at all
    with queue.slot(), queue.slot():
        assert queue.estimate(1) == FIRST_GUESS_SECONDS  # nothing learnt yet: a first guess
    _history(queue, clock, [0.2] * 10)
    assert queue.estimate(1) == 0.0


def test_a_run_that_computes_is_expected_to_take_what_computing_runs_took():
    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    for held, computes in [(0.1, False)] * 12 + [(9.0, True), (11.0, True)]:
        with queue.slot():
            if computes:
                queue.mark_computing()
            clock.now += held
    with queue.slot():
        cheap = queue.estimate(1)  # just started, kind not known: mostly cheap reruns
        queue.mark_computing()  # a cache miss: the page computes a new text
        assert cheap < 2.0 <= 8.0 <= queue.estimate(1) <= 11.0  # 10 s, the computing mean
    assert queue.estimate(1) == 0.0  # a free slot


def test_the_first_computing_run_gets_a_guess_not_the_cheap_history():
    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    _history(queue, clock, [0.2] * 10)  # the pages opening: all cheap
    with queue.slot():
        queue.mark_computing()
        clock.now += 1.0
        assert queue.estimate(1) >= 5.0  # not 0.2 s: no computing run has finished yet


def test_runs_waiting_ahead_add_the_mean_of_recent_runs():
    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    _history(queue, clock, [2.0, 4.0, 6.0])
    with queue.slot():
        assert queue.estimate(4) == queue.estimate(1) + 3 * 4.0


def test_at_the_front_of_a_burst_runs_that_bring_a_new_text_count_as_long_from_the_start():
    """A class submits at once: the slots are taken by runs that have not reached their cache
    miss yet. Told at the door that they bring new texts, the queue does not promise place 1 a
    cheap rerun's wait (issue 18: 1-2 s shown for real waits of 10-45 s)."""
    import threading

    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    for held, computes in [(0.1, False)] * 12 + [(10.0, True)] * 4:  # pages opening, then texts
        with queue.slot(computes=computes):
            clock.now += held
    cheap_mean = (12 * 0.1 + 4 * 10.0) / 16
    with contextlib.ExitStack() as running:
        running.enter_context(queue.slot(computes=True))
        clock.now += 0.5
        assert 8.0 <= queue.estimate(1) <= 10.0  # what is left of a 10 s run, not 0.1 s
        seen: list[tuple[int, Span]] = []
        done = threading.Event()

        def waiter():  # a third new text joins the line; a fourth behind it
            with queue.slot(on_wait=lambda place, s: seen.append((place, s)), computes=True):
                done.set()

        thread = threading.Thread(target=waiter)
        thread.start()
        while not seen:
            done.wait(0.01)
        place, span = seen[0]  # shown as a span: this queue has not seen a wait yet
        assert place == 1 and span.low > 2.0 and span.low <= 9.5 <= span.high
        # the new text waiting ahead of place 2 adds a computing run's 10 s, not the mean of all
        assert queue.estimate(2) == queue.estimate(1) + 10.0 > queue.estimate(1) + cheap_mean
    thread.join(timeout=5)
    assert done.is_set()


def test_without_the_hint_the_kind_is_learnt_at_the_cache_miss_as_before():
    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    for held, computes in [(0.1, False)] * 12 + [(10.0, True)] * 2:
        with queue.slot(computes=computes):
            clock.now += held
    with queue.slot():
        assert queue.estimate(1) < 2.0  # a rerun of a cached text, as far as the queue knows


def test_the_app_tells_the_queue_when_a_rerun_brings_a_new_text(monkeypatch):
    import types

    import ui.sidebar as sidebar

    state: dict = {"sb_model_choice": "minilm", "sb_text": "one"}
    monkeypatch.setattr(sidebar, "st", types.SimpleNamespace(session_state=state))
    assert not sidebar.brings_new_input()  # a session's first run opens a page
    sidebar.remember_input()
    assert not sidebar.brings_new_input()  # a slider moved: the same text
    state["sb_text"] = "two"
    assert sidebar.brings_new_input()
    sidebar.remember_input()
    state["sb_model_choice"] = "tiny-chars"
    assert sidebar.brings_new_input()


def test_one_cheap_computing_run_does_not_set_the_wait_for_a_class_of_long_texts():
    """The first computing run of a server is often the short default text (0.2 s); the first
    burst of long texts behind it must not be promised a fraction of a second."""
    from server.gate import FIRST_GUESS_COMPUTING_SECONDS, PRIOR_RUNS

    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    with queue.slot(computes=True):
        clock.now += 0.2
    with queue.slot(computes=True):
        clock.now += 0.5
        expected = (0.2 + (PRIOR_RUNS - 1) * FIRST_GUESS_COMPUTING_SECONDS) / PRIOR_RUNS
        assert queue.estimate(1) >= expected - 0.5 - 1e-9 > 4.0
    for _ in range(PRIOR_RUNS):  # enough real history: the guess is gone
        with queue.slot(computes=True):
            clock.now += 1.0
    with queue.slot(computes=True):
        assert queue.estimate(2) <= 2.0


# ------------------------------------------------ what the busy line says: a span, not a guess
def _waited(queue: RunQueue, clock: Clock, seconds: float) -> list:
    """One run holds the only slot for `seconds` while a second one waits for it; returns the
    spans the waiting one was shown."""
    import threading

    shown, holding, waiting = [], threading.Event(), threading.Event()

    def hold():
        with queue.slot():
            holding.set()
            waiting.wait(5)
            clock.now += seconds

    def on_wait(place, span):
        shown.append(span)
        waiting.set()

    holder = threading.Thread(target=hold)
    holder.start()
    holding.wait(5)
    with queue.slot(on_wait=on_wait):
        pass
    holder.join()
    return shown


def test_the_wait_is_a_range_until_the_queue_has_seen_its_estimates_hold():
    from ui.time_words import span_words

    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    _history(queue, clock, [4.0] * 8)  # runs of 4 s: a waiter is told about 4 s ...
    first = _waited(queue, clock, 4.0)[0]
    assert span_words(first).startswith("between")  # ... as a range: nothing seen to hold yet
    assert first.low <= 4.0 <= first.high
    for _ in range(3):
        _waited(queue, clock, 4.0)  # waits that took what they were told
    said = _waited(queue, clock, 4.0)[0]
    assert span_words(said) == "about 4 s"
    assert said.high <= 2 * 4.0 and said.low >= 4.0 / 2


def test_a_queue_whose_estimates_were_far_too_low_says_so_in_its_range():
    """Recorded at the front of a burst (BENCHMARKS.md): told 1-2 s, waited 10-45 s."""
    from ui.time_words import span_words

    clock = Clock()
    queue = RunQueue(slots=1, clock=clock)
    queue.waits.extend([(1, 1.0, 10.0), (1, 2.0, 45.0), (2, 2.0, 25.0)])
    span = queue.span(2.0)  # real waits were 10-22 times the estimate: so is this one
    assert span.low > 2.0 * 5 and span.high >= 2.0 * 22.5
    said = float(span_words(span).removeprefix("about ").removesuffix(" s"))
    assert span.high / 2 <= said <= 2 * span.low  # "about N s": within 2x of all of it
    queue.waits.extend([(1, 2.0, 1.0)] * 3)  # and then some far shorter: a range
    assert span_words(queue.span(2.0)).startswith("between")
    # "about a second" told, 3 s waited: a short estimate that did not hold counts too
    queue = RunQueue(slots=1, clock=clock)
    queue.waits.extend([(1, 0.1, 0.3), (1, 0.2, 0.1), (2, 0.4, 0.6)])  # these held
    assert queue.span(0.2).narrow and queue.span(0.2).high < 1.5
    queue.waits.extend([(1, 0.2, 3.0), (2, 0.3, 2.7)])
    assert not queue.span(0.2).narrow and queue.span(0.2).high >= 2.7


def test_the_line_says_about_only_for_a_narrow_span_and_else_the_most():
    from ui.busy import when

    assert when(Span(5.0, 10.0)) == "in about 7 s"
    assert when(Span(2.0, 19.0)) == "within 19 s"
    assert when(Span(0.2, 3.5)) == "within 4 s"
    assert when(Span(0.4, 0.8)) == when(Span(0.1, 2.9)) == "in a few seconds"
