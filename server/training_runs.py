"""Training runs started from the app: a background thread each, bounded per server and per
browser, and freed when discarded.

training/train.py trains; this module runs that for a page. At most MAX_CONCURRENT_RUNS run at
once on the server, and one per browser: starting a run from a browser whose earlier run is
still going (after a reload, or in another tab) stops and discards the earlier one first. A
discarded run (Reset, a replaced run, a session that ended) never saves a model; its folder is
removed and its model and snapshots are let go. Nothing here touches Streamlit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import shutil
import tempfile
import threading
import time
import weakref
from collections.abc import Callable
from pathlib import Path

import torch

from training.saving import save_model
from training.tasks import Task
from training.train import RECIPES, Snapshot, TrainResult, TrainSettings, train

MAX_CONCURRENT_RUNS = 2  # training runs at once in one app process, across all users
STOP_WAIT_SECONDS = 5.0  # how long a new run waits for the browser's earlier run to end


# Bounds for runs started from the app; the training page states them (the number of runs
# at once is server/training_runs.MAX_CONCURRENT_RUNS).
MAX_LAYERS, MAX_HEADS, MAX_D_MODEL = 4, 8, 128
MAX_STEPS, MAX_SECONDS = 3000, 180
MAX_SNAPSHOTS = 100  # per run; the interval grows for long runs
MAX_TEXT_CHARS = 50_000  # "your own text" is cut to this


def app_settings(task: str, n_layers: int, n_heads: int, d_model: int, steps: int,
                 snapshot_every: int, seed: int = 0) -> TrainSettings:
    """Settings for a run from the app: the task's recipe at the learner's size, bounded."""
    if n_layers > MAX_LAYERS or n_heads > MAX_HEADS or d_model > MAX_D_MODEL or \
            steps > MAX_STEPS:
        raise ValueError(f"at most {MAX_LAYERS} layers, {MAX_HEADS} heads, d_model "
                         f"{MAX_D_MODEL} and {MAX_STEPS} steps")
    every = max(snapshot_every, -(-steps // MAX_SNAPSHOTS))
    return dataclasses.replace(RECIPES[task], n_layers=n_layers, n_heads=n_heads,
                               d_model=d_model, steps=steps, snapshot_every=every, seed=seed,
                               warmup=min(50, max(1, steps // 10)), max_seconds=MAX_SECONDS)


SAVE_PREFIX = "attention-lab-model-"


def new_save_dir(max_age_hours: float = 12.0) -> Path:
    """A fresh temporary directory for a model trained in the app. Directories of earlier runs
    older than max_age_hours (sessions that ended without Reset) are removed first."""
    cutoff = time.time() - max_age_hours * 3600
    for old in Path(tempfile.gettempdir()).glob(SAVE_PREFIX + "*"):
        try:
            if old.is_dir() and old.stat().st_mtime < cutoff:
                shutil.rmtree(old, ignore_errors=True)
        except OSError:  # another process removed it first
            continue
    return Path(tempfile.mkdtemp(prefix=SAVE_PREFIX))


class ServerBusy(RuntimeError):
    """Every training slot of this server is taken; try again in a minute."""


_SLOTS = threading.BoundedSemaphore(MAX_CONCURRENT_RUNS)
_THREADS_LOCK = threading.Lock()
_THREADS = {"runs": 0, "before": 1}


@contextlib.contextmanager
def one_cpu_thread():
    """Train on one CPU thread while any run is going, then restore the setting.

    torch's intra-op thread count is process-wide (each new thread copies it). With two, every
    small op of a tiny model meets an OpenMP barrier that waits for a second core, which on a
    busy 2-core server is taken by other users: 40 steps took 27.5 s instead of 0.95 s
    (measured, load average 12). Page runs meanwhile use one thread too, which on 2 cores
    with a training run going is what they would get anyway.
    """
    with _THREADS_LOCK:
        if _THREADS["runs"] == 0:
            _THREADS["before"] = torch.get_num_threads()
        _THREADS["runs"] += 1
        torch.set_num_threads(1)
    try:
        yield
    finally:
        with _THREADS_LOCK:
            _THREADS["runs"] -= 1
            if _THREADS["runs"] == 0:
                torch.set_num_threads(_THREADS["before"])


class TrainingRun:
    """One run in a background thread. The page that started it keeps this object (in its
    browser session) and reads `view()` while it trains.

    When training ends the model is saved to `save_dir` for use in other pages. `save_dir` is
    a folder, or a function that makes one: it is called only once a slot is taken, so a
    refused start leaves nothing on disk."""

    def __init__(self, task: Task, settings: TrainSettings,
                 save_dir: Path | Callable[[], Path] | None = None):
        self.task, self.settings = task, settings
        self._make_dir = save_dir if callable(save_dir) else None
        self.save_dir: Path | None = None if callable(save_dir) else save_dir
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self.status = "ready"  # ready -> running -> done | stopped | failed | discarded
        self.losses: list[float] = []
        self.snapshots: list[Snapshot] = []
        self.result: TrainResult | None = None
        self.error: str | None = None
        self.thread: threading.Thread | None = None
        self.discarded = False
        self._working = False  # the thread owns the clean-up while this is True
        self._slots: threading.BoundedSemaphore | None = None

    def start(self) -> None:
        slots = _SLOTS
        if not slots.acquire(blocking=False):
            raise ServerBusy(f"{MAX_CONCURRENT_RUNS} training runs are already going on this "
                             "server; try again when one has finished.")
        try:
            if self._make_dir is not None:
                self.save_dir = self._make_dir()
            self.thread = threading.Thread(target=self._work, name="attention-lab-training",
                                           daemon=True)
            with self._lock:
                self._slots, self._working, self.status = slots, True, "running"
            self.thread.start()
        except BaseException:
            with self._lock:
                self._working, self.status = False, "failed"
            if self._make_dir is not None and self.save_dir is not None:
                shutil.rmtree(self.save_dir, ignore_errors=True)
            slots.release()
            raise

    def stop(self) -> None:
        """End after the current step, keeping (and saving) the model trained so far."""
        self._stop.set()

    def discard(self) -> None:
        """Stop without saving and free what the run holds: its folder, model and snapshots.
        Done now if the thread has ended, else by the thread as it ends. Idempotent."""
        with self._lock:
            self.discarded = True
            self.status = "discarded"
            self._stop.set()
            working = self._working
        if not working:
            self._free()

    @property
    def running(self) -> bool:
        return self.thread is not None and self.thread.is_alive()

    def join(self, timeout: float | None = None) -> bool:
        """Wait for the thread to end; True when it has."""
        if self.thread is not None:
            self.thread.join(timeout)
        return not self.running

    def _free(self) -> None:
        if self.save_dir is not None:
            shutil.rmtree(self.save_dir, ignore_errors=True)
        with self._lock:
            self.result, self.losses, self.snapshots = None, [], []

    def _on_step(self, step: int, loss: float) -> None:
        with self._lock:
            self.losses.append(loss)

    def _on_snapshot(self, snap: Snapshot) -> None:
        with self._lock:
            self.snapshots.append(snap)

    def _work(self) -> None:
        try:
            with one_cpu_thread():
                result = train(self.task, self.settings, self._on_step, self._on_snapshot,
                               self._stop)
            if self.save_dir is not None and not self.discarded:
                save_model(self.save_dir, self.task, result.model, self.settings,
                           result.snapshots[-1].metrics)
            with self._lock:
                if not self.discarded:
                    self.result = result
                    self.status = "stopped" if result.stopped == "stop requested" else "done"
        except Exception as exc:  # shown on the page; the thread must never die silently
            with self._lock:
                if not self.discarded:
                    self.error, self.status = f"{type(exc).__name__}: {exc}", "failed"
        finally:
            with self._lock:
                self._working = False
                discarded = self.discarded
            if discarded:  # a discard() that came while the thread ran left this to us
                self._free()
            self._slots.release()

    def view(self) -> tuple[str, list[float], list[Snapshot]]:
        """(status, losses, snapshots), copied under the lock so the page reads a consistent
        state while the thread keeps appending."""
        with self._lock:
            return self.status, list(self.losses), list(self.snapshots)


# --------------------------------------------------------------------- one run per browser
_BY_BROWSER: weakref.WeakValueDictionary[str, TrainingRun] = weakref.WeakValueDictionary()
_BY_CLIENT: dict[str, weakref.WeakSet[TrainingRun]] = {}  # client address → its runs
_BY_BROWSER_LOCK = threading.Lock()


def start(run: TrainingRun, browser: str, wait: float = STOP_WAIT_SECONDS,
          client: str | None = None, per_client: int = 0) -> None:
    """Start `run` as this browser's one run. A run the browser started earlier that is still
    going is discarded first, and given `wait` seconds to end and free its slot. With
    `per_client` > 0, a client address (`client`) may have at most that many runs going, so
    a second private window (a new cookie, the same address) does not take a second slot.
    Raises ServerBusy when the server's slots are all taken (by other browsers), or this
    address has its runs going."""
    with _BY_BROWSER_LOCK:
        earlier = _BY_BROWSER.get(browser)
        replaced = earlier is not None and earlier is not run and earlier.running
        if client and per_client > 0:
            going = [r for r in _BY_CLIENT.get(client, ()) if r.running and not r.discarded
                     and r is not earlier and r is not run]
            if len(going) >= per_client:
                raise ServerBusy(
                    f"{len(going)} training run{'s' if len(going) > 1 else ''} from your "
                    f"network address {'are' if len(going) > 1 else 'is'} already going (this "
                    f"server allows {per_client} at a time per address, also across private "
                    "windows). Stop it or wait until it has finished, then start again.")
        if replaced:
            earlier.discard()
            earlier.join(wait)
        run.start()
        _BY_BROWSER[browser] = run
        if client:
            for address in [a for a, runs in _BY_CLIENT.items() if not runs]:
                del _BY_CLIENT[address]  # addresses whose runs are all gone
            _BY_CLIENT.setdefault(client, weakref.WeakSet()).add(run)


# What the training page starts with; the induction lesson's prediction is computed from a run
# with exactly these settings.
DEFAULT_STEPS = {"induction": 800, "chars": 1000, "own": 1000, "reverse": 800}
DEFAULT_SNAPSHOT_EVERY = 25


def default_settings(task: str) -> TrainSettings:
    """The settings of a run started on the training page without changing anything."""
    recipe = RECIPES[task]
    return app_settings(task, recipe.n_layers, recipe.n_heads, recipe.d_model,
                        DEFAULT_STEPS[task], DEFAULT_SNAPSHOT_EVERY)
