"""Run in a fresh Python process by tests/unit/test_hub_download.py, as a new start of the app
would be: the environment (HF_ENDPOINT, HF_HOME, HF_HUB_OFFLINE) is read at import, as
huggingface_hub reads it. Prints one JSON line with what happened.

    python tests/hub_client.py load <name>      fetch with a byte counter, then load and run
    python tests/hub_client.py app <name>       the app's Attention page (AppTest) on <name>
    python tests/hub_client.py link <name>      the Attention page opened by a link naming it
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]


def load(name: str) -> dict:
    from model import load_model
    from model.hub import Download, fetch
    from model.registry import ModelLoadError

    progress, seen = Download(name), []
    report = progress.report

    def record(n, total):
        report(n, total)
        seen.append([progress.done, progress.total])

    progress.report = record
    started = time.monotonic()
    try:
        if name != "minilm":
            fetch(name, progress)
        loaded = load_model(name)
        trace = loaded.run("The cat sat on the mat.")
    except ModelLoadError as exc:
        return {"error": str(exc), "kind": type(exc).__name__, "seen": seen,
                "seconds": time.monotonic() - started}
    return {"seen": seen, "n_layers": loaded.cfg.n_layers,
            "pattern_shape": list(trace.attentions.shape)}


def app(name: str) -> dict:
    from streamlit.testing.v1 import AppTest

    from page_links import switch

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    switch(at, "attention")
    at.run()
    if name != "minilm":
        at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
        at.text_input(key="sb_model_other").input(name).run()
    charts = [el.key for el in at.get("plotly_chart")]
    return {"exception": [str(e.value) for e in at.exception], "charts": charts,
            "sidebar_captions": [c.value for c in at.sidebar.caption],
            "errors": [e.value for e in at.error] + [e.value for e in at.sidebar.error]}


def link(name: str) -> dict:
    from streamlit.testing.v1 import AppTest

    from page_links import switch

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.query_params["model"] = name
    switch(at, "attention")
    at.run()
    return {"exception": [str(e.value) for e in at.exception],
            "charts": [el.key for el in at.get("plotly_chart")],
            "model": at.selectbox(key="sb_model_choice").value,
            "warnings": [w.value for w in at.warning]}


if __name__ == "__main__":
    print(json.dumps({"load": load, "app": app, "link": link}[sys.argv[1]](sys.argv[2])))
