"""A class bar's poll keeps its own timer in the browser armed.

A fragment that reruns on its own (`st.fragment(run_every=...)`, the class bar) has its timer
in the browser. Streamlit sends that timer (an auto_rerun message) only when a whole run draws
the fragment, and the browser drops all its timers when a whole run starts. A poll that
reaches the server just as a whole run ends finds that run's script runner stopped, so
Streamlit starts a new runner for the poll and ignores whatever the old runner had not yet
handed over: its "finished", and under load its last messages (seen with an instrumented
replica in bench/bench_class.py runs). Had the timer been among them, the browser would never
poll again, and the student would stay on that view for the rest of the class.

So each of the bar's own reruns sends its timer again: one small message per poll. A browser
that already has the timer at that interval keeps it as it is (same phase); one that lost it
gets it back at the poll that found the new runner.
"""

from __future__ import annotations


def rearm(seconds: float) -> bool:
    """Inside a fragment's own rerun: send the browser this fragment's timer again. False
    when there is nothing to re-arm (not in a fragment, no session) or this Streamlit has no
    way to say which fragment runs."""
    try:
        from streamlit.proto.ForwardMsg_pb2 import ForwardMsg
        from streamlit.runtime.scriptrunner_utils.script_run_context import (
            ThreadState, get_script_run_ctx,
        )
    except ImportError:  # another Streamlit: the whole run's timer alone, as before
        return False
    ctx = get_script_run_ctx()
    fragment = getattr(ThreadState.get(), "fragment_id", None)
    if ctx is None or not fragment:
        return False
    msg = ForwardMsg()
    msg.auto_rerun.interval = seconds
    msg.auto_rerun.fragment_id = fragment
    ctx.enqueue(msg)
    return True
