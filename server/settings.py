"""Run-time settings. Hosted mode (a shared server for a class) is one switch:
the environment variable ATTENTION_LAB_HOSTED=1, or `hosted = true` in .streamlit/secrets.toml.

In hosted mode models come only from an allowlist (ATTENTION_LAB_MODELS="minilm,tiny-chars" or
`models = [...]` in secrets.toml; by default the bundled models), texts are shorter, the caches
smaller, training smaller and shorter, and error details are hidden from users.
"""

from __future__ import annotations

import os

# Bound for one text in characters. Beyond the model's context tokens are cut anyway;
# this bound only keeps tokenization and the URL reasonable.
MAX_CHARS_LOCAL = 200_000
MAX_CHARS_HOSTED = 5_000
MAX_URL_TEXT = 1_500  # longer texts go in the shareable link compressed (ui/urlstate.py)
# The compressed texts of one link, in characters: the whole link stays under the 8 KB a
# request line may have behind common proxies (nginx's default), so a shared link opens.
MAX_URL_PACKED = 6_000
MODEL_CACHE_ENTRIES = 3
TRACE_CACHE_ENTRIES = 12
# The memory budget: every run and everything derived from one (rollout, figures, statistics,
# sweeps) that the server keeps between reruns, shared by all users of one server process
# (server/budget.py). Sessions keep only names and small choices. A 512-token MiniLM run with what
# the app keeps is ~90 MB. Configurable: ATTENTION_LAB_MEMORY_MB, or `memory_mb` in
# secrets.toml.
MEMORY_MB_LOCAL = 3 * 1024
MEMORY_MB_HOSTED = 1024
MEMORY_ENTRIES_LOCAL = 96
MEMORY_ENTRIES_HOSTED = 128
# The last line of defence (server/gate.py, MemoryCeiling): over model + budget + this margin of
# resident memory, new computations are refused with a message until it falls.
# ATTENTION_LAB_MEMORY_MARGIN_MB or `memory_margin_mb`; ATTENTION_LAB_MEMORY_CEILING_MB or
# `memory_ceiling_mb` sets the whole ceiling instead (0: no ceiling).
MEMORY_MARGIN_MB = 1024
# Runs and figures nobody has read for this long leave the budget, and the memory goes back to
# the system (a class that has gone). ATTENTION_LAB_IDLE_SECONDS or `idle_seconds`. Locally one
# user may read a page for a while: a slider moved then should not have to run it again.
IDLE_SECONDS_HOSTED = 180
IDLE_SECONDS_LOCAL = 1800
# Training runs at once per client address (0: no such limit, only one per browser). A class
# behind one school router shares one address, so this is off unless the operator sets it:
# ATTENTION_LAB_TRAINING_PER_CLIENT or `training_runs_per_client`.
TRAINING_RUNS_PER_CLIENT = 0
# Page runs computing at once; the others queue and see their place (server/gate.py). Hosted: one
# per core of the 2-core class server (bench/bench_load.py).
RUN_SLOTS_LOCAL = 4
RUN_SLOTS_HOSTED = 2
# Hosted: one torch thread per forward pass. With many users at once, two-thread passes on a
# 2-core server wait on each other's OpenMP workers; bench/bench_load.py (BENCHMARKS.md).
# Locally torch keeps its default (one thread per core): one user, the fastest single pass.
HOSTED_TORCH_THREADS = 1


def _secret(name: str, default=None):
    try:
        import streamlit as st

        return st.secrets.get(name, default)
    except Exception:  # no secrets.toml, or secrets unreadable
        return default


def _flag(value) -> bool:
    return str(value).strip().lower() in ("1", "true", "yes", "on")


def hosted() -> bool:
    if _flag(os.environ.get("ATTENTION_LAB_HOSTED", "")):
        return True
    return _flag(_secret("hosted", False))


def max_chars() -> int:
    return MAX_CHARS_HOSTED if hosted() else MAX_CHARS_LOCAL


def allowed_models() -> list[str] | None:
    """The model names a hosted server accepts, or None (anything) outside hosted mode."""
    if not hosted():
        return None
    from model import BUNDLED

    listed = os.environ.get("ATTENTION_LAB_MODELS")
    names = listed.split(",") if listed else _secret("models", None) or list(BUNDLED)
    return [str(n).strip() for n in names if str(n).strip()]


def model_refusal(name: str) -> str | None:
    """Why this model name may not be loaded here, or None when it may."""
    allowed = allowed_models()
    if allowed is not None and name not in allowed:
        return ("This shared server only loads the models in its list: "
                f"{', '.join(allowed)}. Local directories and other hub models work when you "
                "run the app on your own machine.")
    return None


def _number(env: str, secret: str, default: int | None) -> int | None:
    """An operator's whole-number setting: the environment, else secrets.toml, else default
    (also for a value that is not a whole number)."""
    value = os.environ.get(env) or _secret(secret, None)
    try:
        return int(str(value).strip()) if value not in (None, "") else default
    except ValueError:
        return default


def memory_budget() -> tuple[int, int]:
    """(entries, bytes) of the server's one memory budget."""
    default = MEMORY_MB_HOSTED if hosted() else MEMORY_MB_LOCAL
    megabytes = _number("ATTENTION_LAB_MEMORY_MB", "memory_mb", default)
    entries = MEMORY_ENTRIES_HOSTED if hosted() else MEMORY_ENTRIES_LOCAL
    return entries, max(64, megabytes) * 2**20


def memory_ceiling(model_bytes: int) -> int | None:
    """Resident bytes over which new work is refused: the explicit ceiling if the operator
    set one (0: none), else the models + the budget + the margin."""
    explicit = _number("ATTENTION_LAB_MEMORY_CEILING_MB", "memory_ceiling_mb", None)
    if explicit is not None:
        return explicit * 2**20 if explicit > 0 else None
    margin = max(0, _number("ATTENTION_LAB_MEMORY_MARGIN_MB", "memory_margin_mb",
                            MEMORY_MARGIN_MB))
    return model_bytes + memory_budget()[1] + margin * 2**20


def idle_seconds() -> int:
    default = IDLE_SECONDS_HOSTED if hosted() else IDLE_SECONDS_LOCAL
    return max(1, _number("ATTENTION_LAB_IDLE_SECONDS", "idle_seconds", default))


def training_runs_per_client() -> int:
    """At most this many training runs at once from one client address; 0: no such limit."""
    return max(0, _number("ATTENTION_LAB_TRAINING_PER_CLIENT", "training_runs_per_client",
                          TRAINING_RUNS_PER_CLIENT))


def client_header() -> str | None:
    """The request header that carries the client's address when a reverse proxy the operator
    runs passes it on (ATTENTION_LAB_CLIENT_HEADER or `client_header`: "X-Real-IP", or
    "X-Forwarded-For", whose last address is the one the proxy added); None: the connection's
    own address. Only set it behind such a proxy: a browser can send any header itself."""
    value = os.environ.get("ATTENTION_LAB_CLIENT_HEADER") or _secret("client_header", None)
    return str(value).strip() or None if value else None


def run_slots() -> int:
    return RUN_SLOTS_HOSTED if hosted() else RUN_SLOTS_LOCAL


def use_hosted_threads() -> None:
    """Set torch to HOSTED_TORCH_THREADS for the whole process (a training run that lowers it
    for a while restores this value when it ends)."""
    import torch

    if torch.get_num_threads() != HOSTED_TORCH_THREADS:
        torch.set_num_threads(HOSTED_TORCH_THREADS)


def lessons_dir() -> str | None:
    """A folder of lesson files (*.toml) the operator offers: ATTENTION_LAB_LESSONS, or
    `lessons_dir` in secrets.toml. In hosted mode it is the only folder read; no path a user
    types is ever opened there."""
    value = os.environ.get("ATTENTION_LAB_LESSONS") or _secret("lessons_dir", None)
    return str(value).strip() or None if value else None
