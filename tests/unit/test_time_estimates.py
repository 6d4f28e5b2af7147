"""Time estimates that hold (analysis/pace.py, ui/heavy.py): the span a heavy analysis is said
to take scales with its work, with the machine's load and with how long recent runs of its
kind really took; "about N s" is said only when N is within 2× of the whole span. The load
and the recent runs are injected: nothing here is timed."""

from __future__ import annotations

import math

import pytest

from analysis import cost, pace
from analysis.pace import Machine, Pace, Span, cores_for, estimate, slowdown
from model.config import TransformerConfig
from ui import heavy

IDLE = Machine(cores=2, threads=1, load=0.0, running=0.0)


def _machine(others: float, threads: int = 1, cores: int = 2) -> Machine:
    return Machine(cores, threads, others, others)


# ------------------------------------------------------------------------------ the load
def test_a_run_gets_the_cores_it_can_use_while_they_are_free():
    assert cores_for(2, 1, 0) == 1
    assert cores_for(2, 2, 0) == 2
    assert cores_for(2, 1, 1) == 1  # one core each


def test_beside_busy_tasks_a_run_gets_its_threads_share():
    assert cores_for(2, 1, 3) == pytest.approx(0.5)  # 4 tasks on 2 cores
    assert cores_for(2, 2, 4) == pytest.approx(2 / 3)  # 2 of 6 threads on 2 cores


def test_time_grows_with_the_load_in_proportion_once_the_cores_are_full():
    one_thread = [slowdown(_machine(n), n) for n in (1, 3, 7)]  # 2, 4, 8 tasks on 2 cores
    assert one_thread == pytest.approx([1, 2, 4])
    spans = [estimate(10.0, _machine(n), [1.0, 1.0], first=False) for n in (3, 7)]
    assert spans[1].middle == pytest.approx(2 * spans[0].middle)


def test_threads_outnumbering_the_cores_wait_for_each_other():
    alone = slowdown(_machine(0, threads=2), 0)
    shared = slowdown(_machine(4, threads=2), 4)
    assert alone == pytest.approx(0.5)  # both cores
    fair_share = 1 / cores_for(2, 2, 4)
    assert shared == pytest.approx((1 + math.sqrt(2)) * fair_share)
    assert pace.thread_wait(2, 1, 50) == 1  # one thread waits for nobody
    assert pace.thread_wait(2, 2, 0) == 1  # both threads on free cores


def test_the_wait_grows_with_the_tasks_per_core():
    waits = [pace.thread_wait(2, 2, others) for others in (2, 8, 32)]
    assert waits == pytest.approx([2, 3, 5])


def test_the_span_covers_both_readings_of_the_load():
    lagging = Machine(cores=2, threads=1, load=1.0, running=5.0)  # two sessions just started
    span = estimate(10.0, lagging, [1.0, 1.0], first=False)
    quiet = estimate(10.0, _machine(1.0), [1.0, 1.0], first=False)
    busy = estimate(10.0, _machine(5.0), [1.0, 1.0], first=False)
    assert span.low == pytest.approx(quiet.low)
    assert span.high == pytest.approx(busy.high)


# ---------------------------------------------------------------------- recent runs
def test_the_span_scales_with_the_work():
    small, large = (estimate(s, IDLE, [1.0, 1.2], first=False) for s in (4.0, 12.0))
    assert large.low == pytest.approx(3 * small.low)
    assert large.high == pytest.approx(3 * small.high)


def test_runs_that_took_twice_their_estimate_double_the_next_one():
    on_time = estimate(10.0, IDLE, [1.0, 1.0, 1.0], first=False)
    slow = estimate(10.0, IDLE, [2.0, 2.0, 2.0], first=False)
    assert slow.middle == pytest.approx(2 * on_time.middle)
    assert slow.narrow and on_time.narrow


def test_before_runs_of_its_kind_the_prior_gives_a_wide_span():
    prior = estimate(10.0, IDLE, [], first=True)
    learned = estimate(10.0, IDLE, [1.0, 1.0], first=False)
    assert prior.high / prior.low > learned.high / learned.low
    assert not prior.narrow
    assert prior.low < learned.middle < prior.high


def test_one_run_is_not_yet_enough_to_replace_the_prior():
    assert pace.ratio_span([3.0])[0] == pace.PRIOR
    assert pace.ratio_span([3.0, 3.0])[0] == 3.0


def test_the_first_run_adds_the_warm_up():
    warm = estimate(1.0, IDLE, [1.0, 1.0], first=False)
    first = estimate(1.0, IDLE, [1.0, 1.0], first=True)
    assert first.low == pytest.approx(warm.low * (1 + pace.WARM_UP_SECONDS))


def test_recent_runs_that_scatter_widen_the_span():
    steady = estimate(10.0, IDLE, [1.0, 1.1, 0.9], first=False)
    scattered = estimate(10.0, IDLE, [0.5, 1.0, 4.0], first=False)
    assert scattered.low == pytest.approx(5.0)
    assert scattered.high == pytest.approx(40.0)
    assert steady.narrow and not scattered.narrow


def test_the_pace_keeps_each_kind_apart_and_only_recent_runs():
    p = Pace(history=3)
    for real in (1, 2, 3, 4):
        p.record("effect", 2.0, real)
    p.record("sweep", 1.0, 5.0)
    p.record("sweep", 0.0, 5.0)  # nothing estimated: nothing to learn
    assert p.ratios("effect") == [1.0, 1.5, 2.0]
    assert p.ratios("sweep") == [5.0]
    assert not p.seen("patching")


# ------------------------------------------------------------------------- the words
@pytest.mark.parametrize("low, high", [(2, 5), (10, 29), (40, 119), (100, 300)])
def test_about_n_is_within_2x_of_the_whole_span(low, high):
    span = Span(low, high)
    assert span.narrow
    assert span.middle / 2 <= low and high <= 2 * span.middle
    words = heavy.span_words(span)
    n = float(words.split()[1]) * (60 if words.endswith("min") else 1)
    assert words.startswith("about ")
    assert n / 2 <= low and high <= 2 * n + 30  # rounded to a whole second or minute


@pytest.mark.parametrize("low, high, words", [
    (2, 20, "between 2 and 20 s"), (20, 300, "between 20 s and 5 min"),
    (120, 600, "between 2 and 10 min"),
    (0.2, 1.2, "about a second")])
def test_a_wide_span_is_said_as_a_range(low, high, words):
    assert heavy.span_words(Span(low, high)) == words


def test_a_span_must_be_ordered():
    with pytest.raises(ValueError):
        Span(3.0, 2.0)


# --------------------------------------------------------------- the page's side
def test_a_timed_run_teaches_the_pace_what_it_took(monkeypatch):
    clock = iter([100.0, 130.0])
    monkeypatch.setattr(heavy.time, "monotonic", lambda: next(clock))
    monkeypatch.setattr(heavy, "machine_now", lambda: IDLE)
    plan = cost.Plan(1, 1, 10.0, "effect")
    p = Pace()
    with heavy.timed(plan, p):
        pass
    expected = pace.at_start(10.0, IDLE, first=True)
    assert p.ratios("effect") == [pytest.approx(30.0 / expected)]
    with pytest.raises(RuntimeError), heavy.timed(plan, p):
        raise RuntimeError("a run that fails")
    assert len(p.ratios("effect")) == 1


def test_the_next_estimate_follows_what_the_runs_took(monkeypatch):
    p = Pace()
    plan = cost.Plan(1, 1, 10.0, "effect")
    for _ in range(3):  # each run took three times what the load alone said
        p.record("effect", pace.at_start(10.0, IDLE, first=False), 3 * 10.0)
    span = heavy.time_span(plan, IDLE, p)
    assert span.low <= 30.0 <= span.high
    assert span.narrow


def test_the_machine_is_read_from_the_system():
    machine = heavy.machine_now()
    assert machine.cores >= 1 and machine.threads >= 1
    assert machine.load >= 0 and machine.running >= 0


# ------------------------------------------------------------------------- the work
CFG = TransformerConfig(family="gpt2", d_model=64, n_heads=4, n_layers=2, n_ctx=128, d_vocab=100, d_mlp=256)


def test_the_effect_plan_counts_every_part_of_the_work():
    base = cost.effect_plan(CFG, 32, 8, occlusion=False)
    more_steps = cost.effect_plan(CFG, 32, 32, occlusion=False)
    with_occlusion = cost.effect_plan(CFG, 32, 8, occlusion=True)
    assert base.kind == "effect"
    assert more_steps.seconds > base.seconds
    assert with_occlusion.seconds - base.seconds >= cost.forward_seconds(CFG, 32, 32)


def test_more_pieces_cost_more_passes():
    whole = cost.effect_plan(CFG, 64, 32, occlusion=True)
    pieces = cost.effect_plan(CFG, 64, 32, occlusion=True, allowance=1)  # one step a pass
    forwards, backwards = cost.effect_passes(64, 32, 1, 1)
    assert (forwards, backwards) == (1 + 2 + 1 + 64, 1 + 32)
    assert pieces.seconds - whole.seconds == pytest.approx(
        cost.overhead_seconds(CFG, forwards, backwards)
        - cost.overhead_seconds(CFG, *cost.effect_passes(
            64, 32, cost.chunk("integrated_gradients", CFG, 64, 32),
            cost.chunk("occlusion", CFG, 64, 64))))


def test_a_decoders_next_token_logits_are_counted():
    decoder = TransformerConfig(family="gpt2", d_model=64, n_heads=4, n_layers=2, n_ctx=128, d_vocab=50_000,
                          d_mlp=256, causal=True, has_lm_head=True)
    plain = TransformerConfig(family="gpt2", d_model=64, n_heads=4, n_layers=2, n_ctx=128, d_vocab=50_000,
                        d_mlp=256, causal=True)
    extra = cost.effect_seconds(decoder, 16, 8, False) - cost.effect_seconds(plain, 16, 8, False)
    assert extra == pytest.approx((3 + 3 * 9) * 64 * 50_000 / cost.MACS_PER_SECOND)
    assert math.isfinite(extra)


def test_other_scheduling_groups_share_the_cpu_before_nice_levels_do():
    assert pace.others_beside(2, 3.0, 0) == 3.0  # one group: its tasks as they are
    # one other group with work: the run's group gets half the machine, whatever its size
    assert cores_for(2, 2, pace.others_beside(2, 0.0, 1)) == pytest.approx(1.0)
    assert cores_for(2, 1, pace.others_beside(1, 0.0, 3)) == pytest.approx(0.5)
    # a busy task in the run's own group halves that half again
    assert cores_for(2, 1, pace.others_beside(1, 1.0, 1)) == pytest.approx(0.5)
