"""Warm a replica for the class's view before its students' reruns ask for it.

When the teacher moves on, every following student's app reruns into the new view at about the
same moment (their polls are half a second apart at most), and on a replica that has not drawn
that view yet they all wait for the same first-time work: the page's modules imported (the
head statistics page brings pandas: a third of a second on a quiet 2-core machine, and the
import lock makes every other run wait) and the model's run of the view's text. Measured on a
replica of the class bench, that was most of a lesson's slow first step.

So the first poll on a replica that sees a class view does that work once, before its own
rerun: `warm(link)` imports the modules of the view's page (and, for a lesson step, of the
lesson's page and of the next step's page) and computes the runs of the view (and of the next
step, so a "Next" click finds it warm) in the shared cache. The runs go through ui/cache.py as
any run does: a slot of the run queue, the memory ceiling and the memory budget (a run bigger
than the budget is not kept; the least recently used leave first). A poll never waits in the
queue (a student must see the teacher move on even while heavy work holds every slot): when
no slot is free at once, the runs are left to the students' own runs, in their turn. Over the
memory ceiling nothing is computed: the student's own run then says so.
A link is warmed once per process; at most WARM_RUNS runs per link, each one the model's
ordinary run of a text the teacher chose, so its cost is the cost of the view itself.
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict

from teaching.pages import BY_PATH

from .class_drift import UNFOLLOWED  # pages a class never shows

WARM_RUNS = 2  # the view's run and the next lesson step's
REMEMBERED = 256  # links warmed in this process (oldest forgotten first: warmed again)

_LOCK = threading.Lock()
_WARMED: OrderedDict[str, bool] = OrderedDict()


def _first_time(link: str) -> bool:
    """True once per process for each link (the caller warms it)."""
    with _LOCK:
        if link in _WARMED:
            return False
        _WARMED[link] = True
        while len(_WARMED) > REMEMBERED:
            _WARMED.popitem(last=False)
        return True


def forget() -> None:
    """Tests: every link counts as not warmed yet."""
    with _LOCK:
        _WARMED.clear()


def plan(link: str) -> tuple[list[str], list[tuple[str, str, str]]]:
    """(pages whose modules to import, runs (model, text, pair) to compute) for a class link:
    a page's view, or a lesson step with the step after it."""
    from .view_state import ViewState

    page, params = ViewState.split_link(link)
    if page not in BY_PATH:
        return [], []
    if page != "lessons":
        view = ViewState.from_link(page, params)
        return [page], ([(view.model, view.text, view.pair)] if view.model else [])
    from .lesson_library import catalogue
    from .urlstate import url_int

    lesson = catalogue()[0].get(params.get("lesson", ""))
    number = url_int(params.get("step", "1"))
    if lesson is None or number is None or not 1 <= number <= len(lesson.steps):
        return ["lessons"], []
    steps = lesson.steps[number - 1: number + 1]  # this step and the next
    runs = list(dict.fromkeys((s.model, s.text, s.pair) for s in steps))
    return ["lessons", *dict.fromkeys(s.page for s in steps)], runs[:WARM_RUNS]


def import_pages(pages) -> None:
    from .page_registry import module_name

    for page in pages:
        if page in BY_PATH:
            importlib.import_module(module_name(page))


def warm(link: str | None) -> bool:
    """Once per process per link: the view's page modules imported and its runs computed in the
    shared cache (through the run queue and the memory budget). True when this call warmed."""
    if not link or not _first_time(link):
        return False
    pages, runs = plan(link)
    import_pages(pages)
    from . import cache

    queue = cache.run_queue()
    if cache.memory_ceiling().over():  # the student's own run says so, in its page
        return True
    if queue.holds_slot():  # a teacher's whole run, in app.py's slot
        _compute(runs)
        return True
    with queue.slot_if_free(computes=True) as free:
        if free:  # else the queue is busy: the students' runs compute it in their turn
            _compute(runs)
    return True


def _compute(runs) -> None:
    """The runs in the shared cache (ui/cache.cached_run: the memory budget), in the slot
    this thread holds."""
    from . import cache

    for model, text, pair in runs:
        if cache.memory_ceiling().over():  # the student's own run says so, in its page
            return
        try:
            cache.cached_run(model, text, pair)
        except Exception:  # noqa: BLE001 - e.g. a model this server does not offer: the
            return  # student's own run of the view says what is wrong, on its page


def warm_first_poll() -> None:
    """The first class poll in this process imports every page a class can be taken to (about
    half a second on a quiet 2-core machine, once, while the class is still joining): a page's
    first run in a process would otherwise import it while its students' runs wait on the
    import lock (the head statistics page brings pandas: a third of a second)."""
    if _first_time(""):
        import_pages(page for page in BY_PATH if page not in UNFOLLOWED)
