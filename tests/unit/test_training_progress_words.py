"""The training page's progress line: plain words, and a run the time limit cut short does not
say "done" (on a busy server it stopped at step 438 of 800 and the bar read "· done")."""

from __future__ import annotations

from app_pages.training import progress_text


def test_a_run_cut_by_the_time_limit_says_so():
    line = progress_text(438, 800, "done", "time limit")
    assert line == "Step 438 of 800 · stopped at the time limit"


def test_other_states_in_plain_words():
    assert progress_text(800, 800, "done", None).endswith("· finished")
    assert progress_text(12, 800, "running", None).endswith("· training…")
    assert progress_text(1200, 2000, "stopped", "stop requested") == \
        "Step 1,200 of 2,000 · stopped by you"
