"""The sidebar groups models by what they are (reads text / writes text / translates), read
from each config, and says the size of a folder's model from its config too."""

from __future__ import annotations

import os
from pathlib import Path

os.environ["HF_HUB_OFFLINE"] = "1"
from streamlit.testing.v1 import AppTest  # noqa: E402

from page_links import switch  # noqa: E402

import tiny_encoders  # noqa: E402
import tiny_foreign  # noqa: E402
from model import BUNDLED, load_model  # noqa: E402
from ui.model_names import GROUPS, group, in_groups, short_label  # noqa: E402

APP = str(Path(__file__).resolve().parents[2] / "app.py")


def expected_group(name: str) -> str:
    """Independently of ui/model_names: from what the loaded model is."""
    loaded = load_model(name)
    if hasattr(loaded.model, "dec_cfg"):
        return "translates"
    return "writes text" if loaded.cfg.causal else "reads text"


def test_each_bundled_model_is_in_the_group_its_config_says_and_the_box_is_in_group_order():
    for name in BUNDLED:
        assert group(name) == expected_group(name)
        assert short_label(name).endswith(f"({group(name)})")
    at = AppTest.from_file(APP, default_timeout=120).run()
    options = at.selectbox(key="sb_model_choice").options
    shown = [o for o in options if any(o == short_label(n) for n in BUNDLED)]
    assert shown == [short_label(n) for n in in_groups(list(BUNDLED))]
    ranks = [GROUPS.index(group(n)) for n in in_groups(list(BUNDLED))]
    assert ranks == sorted(ranks) and set(ranks) == {0, 1, 2}
    assert at.selectbox(key="sb_model_choice").value == "minilm"  # still the default


def test_a_folder_model_gets_its_group_and_size_from_its_config(tmp_path):
    folders = {"reads text": tiny_encoders.make_distilbert(tmp_path / "distilbert"),
               "writes text": tiny_foreign.make_bloom(tmp_path / "bloom")}
    at = AppTest.from_file(APP, default_timeout=120)
    switch(at, "attention")
    at.run()
    at.selectbox(key="sb_model_choice").set_value("Other: local directory or hub id").run()
    for kind, folder in folders.items():
        at.text_input(key="sb_model_other").input(str(folder)).run()
        assert not at.exception
        loaded = load_model(str(folder), foreign=True)
        n = sum(p.numel() for p in loaded.model.parameters())
        about = [c.value for c in at.sidebar.caption if c.value.startswith("It ")]
        assert len(about) == 1 and about[0].startswith(f"It {kind} (")
        assert f"{loaded.cfg.n_layers} layers × {loaded.cfg.n_heads} heads" in about[0]
        assert f"{n:,} parameters" in about[0]  # tiny: the whole count
