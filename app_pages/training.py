"""Train a tiny transformer in the browser session and watch its attention form."""

from __future__ import annotations

import numpy as np
import streamlit as st
import torch

from server import sessions, settings
from server import training_runs as runs
from training import saving
from training import train as tr
from training.tasks import EOS, REVERSAL_LETTERS, make_task
from ui import view_state
from ui.charts import chart_config
from ui.text import md_escape
from viz.training import loss_curve, snapshot_grid

VIEW = view_state.page_view("training")  # its settings (teaching/pages.py declares them)
TASKS = {  # choice -> (task key, description)
    "induction": ("induction", "Random letters in which a stretch repeats. To predict the "
                  "repeat, the model learns to copy: first a head in layer 0 that looks at the "
                  "token just before (a previous-token head), then a head in layer 1 that finds "
                  "where the current letter came before and looks at the letter after it (an "
                  "induction head)."),
    "chars": ("chars", "A character-level language model on text this project wrote itself."),
    "own": ("chars", "A character-level language model on your own text (at least 400 "
            "characters; the last 15% is held out)."),
    "reverse": ("reverse", "An encoder–decoder that reverses short words; watch its "
                "cross-attention become an anti-diagonal."),
}
LABELS = {"induction": "Induction heads", "chars": "Characters: our own text",
          "own": "Characters: your own text", "reverse": "Reversal (encoder–decoder)"}
DEFAULT_STEPS = runs.DEFAULT_STEPS  # also what the induction lesson's prediction assumes
D_MODELS = [16, 32, 48, 64, 96, 128]
MIN_LAYERS = 1  # one layer with one head: the smallest model that still has attention
HEADS = [1, 2, 4, 8]


def _defaults() -> None:
    """Reset the size to the task's shipped recipe when the task changes."""
    choice = VIEW["task"]
    recipe = tr.RECIPES[TASKS[choice][0]]
    st.session_state["train_layers"] = recipe.n_layers
    st.session_state["train_heads"] = recipe.n_heads
    st.session_state["train_d_model"] = recipe.d_model
    st.session_state["train_steps"] = DEFAULT_STEPS[choice]


def _reset() -> None:
    """Discard this session's run (a callback only: it may clear the sidebar's model choice).
    A run still going stops without saving; its folder goes when its thread ends."""
    run = st.session_state.pop("train_run", None)
    if run is not None:
        run.discard()
        trained = st.session_state.get("trained_models", {})
        for label in [k for k, path in trained.items() if path == str(run.save_dir)]:
            del trained[label]
            if st.session_state.get("sb_model_choice") == label:
                del st.session_state["sb_model_choice"]  # the sidebar falls back to its default
    sessions.forget(sessions.current_session_id(), "train_run")
    for key in ("train_snap", "train_sample", "train_was_running"):
        st.session_state.pop(key, None)


def _use_in_other_pages(label: str) -> None:
    """Open the attention page with this session's trained model (the sidebar lists it)."""
    model, text, pair = view_state.current_inputs()
    view_state.apply(view_state.ViewState("attention", label, text, pair))
    st.session_state[view_state.JUMP_KEY] = "attention"


def _start(choice: str) -> None:
    _reset()
    key = TASKS[choice][0]
    text = None
    if choice == "own":
        text = st.session_state.get("train_text", "")[: runs.MAX_TEXT_CHARS]
    try:
        task = make_task(key, text)
        s = runs.app_settings(key, st.session_state["train_layers"],
                            st.session_state["train_heads"], st.session_state["train_d_model"],
                            st.session_state["train_steps"], st.session_state["train_every"])
    except ValueError as exc:
        st.session_state["train_error"] = str(exc)
        return
    run = runs.TrainingRun(task, s, runs.new_save_dir)  # the folder is made once a slot is free
    try:
        runs.start(run, sessions.browser_id(),  # ends this browser's earlier run, if going
                   client=sessions.client_address(),
                   per_client=settings.training_runs_per_client())
    except runs.ServerBusy as exc:
        st.session_state["train_error"] = str(exc)
        return
    st.session_state["train_run"] = run
    sessions.on_session_end(sessions.current_session_id(), "train_run", run.discard)
    st.session_state["train_follow"] = True
    st.session_state["train_was_running"] = True


def _axes(run) -> tuple[list[str], list[str], bool]:
    """Row tokens, column tokens, and whether the snapshot is a causal self-attention."""
    q_tokens, k_tokens = run.task.probe()
    if run.task.encoder_decoder:
        written = q_tokens[1:] + [EOS]
        return [f"{a}→{b}" for a, b in zip(q_tokens, written)], k_tokens, False
    return q_tokens, k_tokens, True


def _metric_series(snapshots) -> tuple[dict, dict, tuple | None]:
    evals, scores, baseline = {}, {}, None
    for name in snapshots[0].metrics if snapshots else ():
        steps = [s.step for s in snapshots]
        values = [s.metrics[name] for s in snapshots]
        if name == "unigram baseline":
            baseline = (name, values[-1])
        elif "loss" in name:
            evals[name] = (steps, values)
        else:
            scores[name] = (steps, values)
    return evals, scores, baseline


STATUS_WORDS = {"running": "training…", "done": "finished", "stopped": "stopped by you",
                "failed": "failed"}


def progress_text(step: int, steps: int, status: str, stopped: str | None) -> str:
    """The progress bar's line in plain words: a run cut by the time limit is not "done"."""
    words = ("stopped at the time limit" if stopped == "time limit"
             else STATUS_WORDS.get(status, status))
    return f"Step {step:,} of {steps:,} · {words}"


def _live() -> None:
    run = st.session_state.get("train_run")
    if run is None:
        return
    if run.discarded:  # replaced from another tab: the whole page says so
        st.rerun()
    status, losses, snapshots = run.view()
    s = run.settings
    if status != "running" and st.session_state.get("train_was_running"):
        st.session_state["train_was_running"] = False
        st.session_state["train_follow"] = False  # finished: offer the time slider
        st.session_state["train_snap"] = len(snapshots) - 1
        st.rerun()  # the whole page: show the finished run's controls
    st.session_state["train_was_running"] = status == "running"
    seconds = snapshots[-1].seconds if snapshots else 0.0
    st.progress(min(1.0, len(losses) / s.steps), text=progress_text(
        len(losses), s.steps, status, run.result.stopped if run.result is not None else None))
    if status == "running":
        st.button("Stop", key="train_stop", on_click=run.stop, type="primary")
    if run.error:
        st.error(f"Training failed: {md_escape(run.error)}")
    if run.result is not None and run.result.stopped == "time limit":
        st.warning(f"Stopped at the time limit of {runs.MAX_SECONDS} s after {len(losses):,} "
                   "steps; the model trained so far is kept.")
    if not losses:
        st.info("Starting…")
        return
    evals, scores, baseline = _metric_series(snapshots)
    st.plotly_chart(loss_curve(losses, evals, scores, baseline, total_steps=s.steps,
                               title=f"Loss, step {len(losses):,}"),
                    key="train_loss", config=chart_config("training"))
    if snapshots:
        latest = ", ".join(f"{k}: {v:.3f}" for k, v in snapshots[-1].metrics.items())
        st.caption(f"At step {snapshots[-1].step:,} ({seconds:.0f} s): {latest}.")
    held = evals.get("held-out loss")
    if held and len(held[1]) > 2 and held[1][-1] > 1.2 * min(held[1]):
        best = held[0][held[1].index(min(held[1]))]
        st.info(f"The held-out loss was lowest at step {best:,} and has risen since, while the "
                "training loss kept falling: the model is memorising its training text "
                "(overfitting) rather than learning what generalises. More text, a smaller "
                "model or fewer steps help.")
    _snapshots(run, snapshots)


def _snapshots(run, snapshots) -> None:
    if not snapshots:
        return
    st.subheader("Attention while it learns")
    last = len(snapshots) - 1
    cols = st.columns([4, 2, 2])
    follow = cols[2].toggle("Follow the latest", key="train_follow",
                            help="Turn off to drag through training time.")
    if follow or last == 0:
        index = last
        cols[0].caption(f"Showing the latest snapshot (step {snapshots[last].step:,}). "
                        "Turn off “Follow the latest” to watch the patterns form.")
    else:
        if st.session_state.get("train_snap", last) > last:
            st.session_state["train_snap"] = last
        st.session_state.setdefault("train_snap", last)
        index = cols[0].select_slider(
            "Training time", list(range(last + 1)), key="train_snap",
            format_func=lambda i: f"step {snapshots[i].step:,}",
            help=f"A snapshot every {run.settings.snapshot_every} steps, of the same example.")
    snap = snapshots[index]
    n_layers = snap.patterns.shape[0]
    if st.session_state.get("train_layer", n_layers - 1) >= n_layers:
        st.session_state["train_layer"] = n_layers - 1
    st.session_state.setdefault("train_layer", n_layers - 1)
    layer = cols[1].selectbox("Layer", list(range(n_layers)), key="train_layer")
    rows, keys, causal = _axes(run)
    what = "Cross-attention" if run.task.encoder_decoder else "Self-attention"
    fig = snapshot_grid(snap.patterns[layer].astype(np.float32), rows, keys,
                        f"{what}, layer {layer}, step {snap.step:,}", causal=causal)
    st.plotly_chart(fig, key="train_snapshot", config=chart_config("training"), width="content")
    example = md_escape("".join(run.task.probe()[1]))
    if run.task.encoder_decoder:
        st.caption("Rows are decoder steps (the character read → the character written); "
                   "columns are the source word. Reversal is right when each row looks at the "
                   "letter it writes: an anti-diagonal.")
    else:
        st.caption(f"The same fixed example at every snapshot: “{example}”, one character per "
                   "row and per column. Causal: keys after the query (upper right) are masked "
                   "and grey." + (" An induction head lights up a stripe: in the repeated half, "
                                  "each character looks at the character that followed its "
                                  "first copy." if run.task.key == "induction" else ""))


def _finished(run) -> None:
    status, losses, snapshots = run.view()
    if status not in ("done", "stopped") or run.result is None:
        return
    st.subheader("Your trained model")
    model, task = run.result.model, run.task
    if task.key == "induction":
        st.caption("Open it in the Attention page and type a few characters twice, like "
                   "abcdefgabcdefg: layer 1 shows the induction stripe, layer 0 the "
                   "previous-token diagonal.")
    elif task.key == "chars":
        prompt = st.text_input("Start of the text", value="The ", key="train_prompt",
                               max_chars=200)
        if st.button("Write 200 characters", key="train_write"):
            st.session_state["train_sample"] = tr.generate(model, task.chars, prompt, 200)
        if "train_sample" in st.session_state:
            st.code(prompt + st.session_state["train_sample"], language=None, wrap_lines=True)
    elif task.key == "reverse":
        word = st.text_input("A word to reverse (a–z, up to 10 letters)", value="attention",
                             key="train_word", max_chars=10)
        out = _reverse(model, task, word)
        st.code(f"{word.lower()} → {out or '(only the end token: train longer)'}", language=None)
    c1, c2, c3 = st.columns(3)
    c1.download_button("Download the model (zip)", lambda: saving.model_archive(run.save_dir),
                       file_name=f"tiny-{task.key}.zip", mime="application/zip",
                       key="train_zip", help="config.json, model.safetensors and tokenizer.json;"
                       " unzip and open the folder with load_model.")
    c2.download_button("Weights only (safetensors)", lambda: saving.weights_file(run.save_dir),
                       file_name=f"tiny-{task.key}.safetensors",
                       mime="application/octet-stream", key="train_safetensors")
    label = view_state.trained_label(task.key)
    st.session_state.setdefault(view_state.TRAINED_KEY, {})[label] = str(run.save_dir)
    c3.button("Open it in the other pages", key="train_use", on_click=_use_in_other_pages,
              args=(label,))
    st.caption("Saved for this browser session: deleted on Reset, when you start another run, "
               f"or within {sessions.FREED_WITHIN_SECONDS} seconds of closing this tab.")


def _reverse(model, task, word: str) -> str:
    letters = [c for c in word.lower() if c in REVERSAL_LETTERS][: task.max_len]
    if not letters:
        return ""
    src = torch.tensor([[task.chars.index(c) for c in letters] + [task.eos_id]])  # [1, src_pos]
    out = model.greedy(src, torch.ones_like(src), task.bos_id, task.eos_id,
                       src.shape[1])  # [1, 1 + out_pos]
    return "".join(task.chars[i] for i in out[0, 1:].tolist()).split(EOS)[0]


def render(selection) -> None:
    st.title("Train a tiny transformer", anchor=False)  # no link icon: it wrapped to a blank line
    st.caption(
        "Pick a task and press Start training. A small model learns it on this server while the "
        "page updates every second: watch its loss fall and its attention patterns form.",
        help=f"Limits: at most {runs.MAX_LAYERS} layers, {runs.MAX_HEADS} heads, vectors of "
        f"{runs.MAX_D_MODEL} numbers, {runs.MAX_STEPS:,} steps and {runs.MAX_SECONDS} seconds per "
        f"run. One run at a time per browser (a new one ends the one still going) and "
        f"{runs.MAX_CONCURRENT_RUNS} on the server at once; other users are not blocked. If you "
        f"close the tab, its run stops and is deleted within {sessions.FREED_WITHIN_SECONDS} "
        "seconds.")

    run = st.session_state.get("train_run")
    if run is not None and run.discarded:  # a run started in another tab of this browser ended it
        for key in ("train_run", "train_snap", "train_sample", "train_was_running"):
            st.session_state.pop(key, None)
        sessions.forget(sessions.current_session_id(), "train_run")
        st.warning("This run was stopped and discarded: a newer run was started from this "
                   "browser, or this tab was disconnected for too long.")
        run = None
    busy = run is not None and run.view()[0] == "running"
    VIEW.setdefault("task")
    if "train_layers" not in st.session_state:
        _defaults()
    choice = st.selectbox("Task", list(TASKS), key=VIEW.key("task"), format_func=LABELS.get,
                          on_change=_defaults, disabled=busy)
    st.caption(TASKS[choice][1])
    if choice == "own":
        st.text_area("Your text", key="train_text", height=160, disabled=busy,
                     max_chars=runs.MAX_TEXT_CHARS, placeholder="Paste a few paragraphs…")
    c = st.columns(5)
    c[0].slider("Layers", MIN_LAYERS, runs.MAX_LAYERS, key="train_layers", disabled=busy)
    c[1].select_slider("Heads", HEADS, key="train_heads", disabled=busy)
    c[2].select_slider("Width", D_MODELS, key="train_d_model", disabled=busy,
                       help="How many numbers each token's vector holds inside the model (its "
                       "d_model). Each head works on width ÷ heads of them.")
    c[3].slider("Steps", 50, runs.MAX_STEPS, step=50, key="train_steps", disabled=busy)
    c[4].select_slider("Snapshot every", [10, 25, 50, 100], value=runs.DEFAULT_SNAPSHOT_EVERY,
                       key="train_every",
                       disabled=busy, help=f"Steps between attention snapshots (at most "
                       f"{runs.MAX_SNAPSHOTS} per run).")
    b = st.columns([1, 1, 4])
    b[0].button("Start training", key="train_start", type="primary", disabled=busy,
                on_click=_start, args=(choice,))
    b[1].button("Reset", key="train_reset", on_click=_reset)
    if "train_error" in st.session_state:
        st.error(md_escape(st.session_state.pop("train_error")))

    run = st.session_state.get("train_run")
    if run is not None:
        if run.view()[0] == "running":
            # Every second, outside the run queue: it only draws the snapshots the training
            # thread made (bounded by the training slots) and computes nothing; a cache miss in it
            # would wait its turn anyway (ui/cache.turn_to_compute).
            st.fragment(run_every=1.0)(_live)()
        else:
            _live()
            _finished(run)


def figure(name: str, selection) -> None:
    """A lesson step's part of this page (teaching/figures.py): the step's task at its shipped
    size, started with one button, its loss and attention snapshots drawn as it trains."""
    choice = VIEW.setdefault("task")
    run = st.session_state.get("train_run")
    busy = run is not None and not run.discarded and run.view()[0] == "running"
    if not busy:
        _defaults()  # the recipe the lesson's numbers assume
    st.caption(TASKS[choice][1])
    st.button("Start training", key="train_start", type="primary", disabled=busy,
              on_click=_start_shipped, args=(choice,))
    if "train_error" in st.session_state:
        st.error(md_escape(st.session_state.pop("train_error")))
    if run is not None and not run.discarded:
        st.fragment(run_every=1.0)(_live)() if busy else _live()


def _start_shipped(choice: str) -> None:
    """Start with the shipped snapshot interval (its slider, not drawn here, keeps no value)."""
    drawn = "train_every" in st.session_state
    st.session_state.setdefault("train_every", runs.DEFAULT_SNAPSHOT_EVERY)
    try:
        _start(choice)
    finally:
        if not drawn:
            st.session_state.pop("train_every", None)
