"""AppTest: the first load of a model in this process runs in a worker thread that reports
the weights going in (ui/download.load_with_progress); later loads are plain cache calls; a
loader's error reaches the page as it was raised."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _script():
    import threading
    import time

    import streamlit as st

    from ui.download import _LOADED, load_with_progress

    calls = st.session_state.setdefault("calls", [])

    def loader(name, _progress=None):
        calls.append((name, _progress is not None, threading.current_thread().name))
        if name == "broken":
            raise ValueError("no such model")
        for done in range(0, 101, 20):
            if _progress is not None:
                _progress("loading", done, 100)
            time.sleep(0.05)
        return f"model {name}"

    _LOADED.discard("m")
    first = load_with_progress("m", loader)
    second = load_with_progress("m", loader)
    st.write(first, second)
    try:
        load_with_progress("broken", loader)
    except ValueError as exc:
        st.error(str(exc))


def test_first_load_reports_progress_from_a_worker_and_later_loads_do_not():
    at = AppTest.from_function(_script, default_timeout=60).run()
    assert not at.exception
    calls = at.session_state["calls"]
    assert calls[0] == ("m", True, "load m")  # the worker, with a progress callback
    assert calls[1][:2] == ("m", False) and calls[1][2] != "load m"  # then a plain call
    assert at.markdown[0].value == "model m model m"
    assert [e.value for e in at.error] == ["no such model"]
    assert not at.get("progress")  # the bar is gone once the model is in


def test_the_bar_says_which_stage_and_how_far():
    from ui.download import Stages

    stages = Stages()
    assert stages.bar() == (0.0, "Reading the model's weights…")
    stages.report("reading", 900_000_000, 1_800_000_000)
    assert stages.bar() == (0.5, "Reading the model's weights: 900.0 of 1,800.0 MB")
    stages.report("loading", 250_000_000, 1_000_000_000)
    assert stages.bar() == (0.25, "Putting the weights into the model: 250.0 of 1,000.0 "
                                  "million numbers")
