"""The start page's example, computed from the bundled model and stored in
assets/start_example.json, so the first page a visitor opens is drawn before torch and the
model are loaded (a cold start pays seconds for those). The numbers are the model's own: they
come from one run (`example`), `python -m ui.start_example` writes the file again, and
tests/unit/test_start_example.py fails when the stored file no longer equals a fresh run.

The example is the head that looks most at the previous token on the app's short example
sentence (the lesson fact "prev"), with its whole attention pattern. Reading the file imports
neither torch nor the model.
"""

from __future__ import annotations

import json
from pathlib import Path

from .examples import SHORT

EXAMPLE_MODEL = "minilm"  # the bundled pretrained model: works offline
EXAMPLE_FILE = Path(__file__).resolve().parent.parent / "assets" / "start_example.json"
KEYS = ("model", "text", "tokens", "layer", "head", "share", "pattern")


def example(loaded, trace) -> dict:
    """What the start page shows, from one run: tokens, the head, its pattern and its share."""
    from teaching.facts import FactInputs, compute  # the engine: only when computing

    prev = compute("prev", FactInputs(loaded, trace))
    pattern = trace.attentions[prev["layer"], prev["head"]]  # [q_pos, k_pos]
    return {"model": EXAMPLE_MODEL, "text": SHORT, "tokens": list(trace.tokens),
            "layer": prev["layer"], "head": prev["head"], "share": prev["share"],
            "pattern": [[round(float(v), 6) for v in row] for row in pattern.tolist()]}


def stored() -> dict | None:
    """The stored example, or None when the file is missing, unreadable or not for the
    current example sentence (the page then computes it live)."""
    try:
        data = json.loads(EXAMPLE_FILE.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or set(KEYS) - set(data) or data["text"] != SHORT:
        return None
    n = len(data["tokens"])
    if len(data["pattern"]) != n or any(len(row) != n for row in data["pattern"]):
        return None
    return data


def main() -> None:
    from model import load_model

    loaded = load_model(EXAMPLE_MODEL)
    EXAMPLE_FILE.write_text(json.dumps(example(loaded, loaded.run(SHORT))) + "\n")
    print(f"wrote {EXAMPLE_FILE}")


if __name__ == "__main__":
    main()
