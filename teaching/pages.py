"""Every page of the app, declared once: where it lives, its title, and its settings.

Navigation (app.py), the link of a view and a jump to it (ui/view_state.py), a lesson step
(teaching/format.py checks a step's settings against these), "Record this view as a step" and
the README's page table all come from this one list. A setting's widget key is derived from it
(`PageSpec.key`: the page's prefix and the setting's name, "attn_layer") and typed nowhere
else (tests/unit/test_page_declarations.py fails on a literal one). The page's other widgets
and its session values (a chart, a button, the training page's model size) take keys with the
same prefix, so that a page's keys read together. This module imports no Streamlit, so lesson
files are checked without the app.

Adding a page: one module in app_pages/ (or a folder with its page.py) whose
`render(selection)` draws it, and one `PageSpec(...)` line in PAGE_SPECS.
"""

from __future__ import annotations

from dataclasses import dataclass, field

MAX_SETTING_TEXT = 2_000  # a text setting (a second prompt) in a link or a lesson file
KINDS = ("layer", "head", "int", "float", "bool", "choice", "text", "heads")


@dataclass(frozen=True)
class Setting:
    """One setting of a page: what a link, a lesson step and a recording may carry.

    kind: "layer"/"head" (a whole number, checked against the model), "int" and "float"
    (within minimum..maximum), "bool", "choice" (one of `choices`), "text", or "heads" (a
    list of (layer, head) pairs). default None: the page works it out from the model or text.
    url: the key of this setting in a page link (short, as links are read by people)."""

    name: str
    kind: str
    default: object = None
    choices: tuple = ()
    minimum: float = 0
    maximum: float | None = None
    url: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"setting {self.name}: unknown kind {self.kind!r}")

    def check(self, value):
        """The value as this setting holds it, or ValueError saying what it should be."""
        kind = self.kind
        if kind in ("layer", "head", "int"):
            if isinstance(value, bool) or not isinstance(value, int):
                raise ValueError(f"must be a whole number, not {value!r}")
            return self._within(value, "a whole number")
        if kind == "float":
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise ValueError(f"must be a number, not {value!r}")
            return self._within(float(value), "a number")
        if kind == "bool":
            if not isinstance(value, bool):
                raise ValueError(f"must be true or false, not {value!r}")
            return value
        if kind == "choice":
            if value not in self.choices:
                raise ValueError("must be one of: " + ", ".join(repr(c) for c in self.choices)
                                 + f"; not {value!r}")
            return value
        if kind == "heads":
            return self._heads(value)
        if not isinstance(value, str) or len(value) > MAX_SETTING_TEXT:
            raise ValueError(f"must be a text of at most {MAX_SETTING_TEXT:,} characters")
        return value

    def _within(self, value, what: str):
        high = self.maximum
        if not (self.minimum <= value and (high is None or value <= high)):  # NaN too
            span = f"from {self.minimum:g} to {high:g}" if high is not None else \
                f"of at least {self.minimum:g}"
            raise ValueError(f"must be {what} {span}, not {value!r}")
        return value

    @staticmethod
    def _heads(value) -> list[tuple[int, int]]:
        if not isinstance(value, (list, tuple)) or len(value) > 4096:
            raise ValueError("must be a list of [layer, head] pairs")
        pairs = []
        for pair in value:
            if (not isinstance(pair, (list, tuple)) or len(pair) != 2 or any(
                    isinstance(v, bool) or not isinstance(v, int) or v < 0 for v in pair)):
                raise ValueError(f"must be a list of [layer, head] pairs, not {pair!r}")
            pairs.append((int(pair[0]), int(pair[1])))
        return pairs

    # A link holds strings: these two turn a value into one and back (None: not readable).
    def to_url(self, value) -> str:
        if self.kind == "bool":
            return "1" if value else "0"
        if self.kind == "heads":
            return ",".join(f"{layer}.{head}" for layer, head in value)
        if self.kind == "float":
            return f"{float(value):g}"
        return str(value)

    def from_url(self, raw: str):
        try:
            if self.kind in ("layer", "head", "int"):
                if not (raw.isascii() and raw.isdecimal() and len(raw) <= 7):
                    return None
                return self.check(int(raw))
            if self.kind == "float":
                return self.check(float(raw)) if len(raw) <= 12 else None
            if self.kind == "bool":
                return {"1": True, "0": False}.get(raw)
            if self.kind == "choice":  # by its text: a choice may be a number (steps)
                return next((c for c in self.choices if str(c) == raw), None)
            if self.kind == "heads":
                return self.check([tuple(int(v) for v in item.split("."))
                                   for item in raw.split(",") if item]) if len(raw) < 20_000 \
                    else None
            return self.check(raw)
        except ValueError:
            return None


@dataclass(frozen=True)
class PageSpec:
    """A page: its path in the URL (also its name in lesson files), the module in app_pages/,
    title, sidebar section, icon, the prefix of its widget keys and its settings."""

    path: str
    module: str
    title: str
    section: str
    icon: str
    prefix: str = ""
    settings: tuple[Setting, ...] = ()
    what: str = ""  # one line for the README's page table
    lesson: bool = True  # a lesson step may open it
    by_name: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        self.by_name.update({s.name: s for s in self.settings})

    def key(self, name: str) -> str:
        """The session-state key of one setting (KeyError for a setting not declared)."""
        return f"{self.prefix}_{self.by_name[name].name}"


def _s(name, kind, default=None, choices=(), minimum=0, maximum=None, url=""):
    return Setting(name, kind, default, tuple(choices), minimum, maximum, url or name)


ATTENTION_VIEWS = ("All heads", "Token lines", "Where a row comes from (Q·K)", "Why this score",
                   "Download")
ATTENTION_MODES = ("Raw attention", "Attention rollout")
HEAD_STATS = ("entropy", "special", "first", "punctuation", "previous", "self", "next",
              "distance")
EFFECT_STEPS = (4, 8, 16, 32, 64, 128, 256)
EFFECT_MEASURES = ("attention", "rollout", "attention_norm", "gradient_x_input",
                   "integrated_gradients", "occlusion")  # analysis/effect.py's METHODS

PAGE_SPECS: tuple[PageSpec, ...] = (
    PageSpec("start", "start", "Start here", "Start", ":material/home:", lesson=False),
    PageSpec("lessons", "lessons", "Lessons", "Start", ":material/school:", lesson=False),
    PageSpec("teach", "teach", "Teach with it", "Start", ":material/co_present:", lesson=False),
    PageSpec("join", "join", "Join a class", "Start", ":material/group_add:", lesson=False),
    PageSpec("attention", "attention", "Attention", "Explore", ":material/grid_on:", "attn", (
        _s("layer", "layer"), _s("head", "head"),
        _s("mode", "choice", ATTENTION_MODES[0], ATTENTION_MODES),
        _s("average", "bool", False, url="avg"),
        _s("hide_special", "bool", False, url="hide"),
        _s("view", "choice", ATTENTION_VIEWS[0], ATTENTION_VIEWS),
        _s("window", "text"),  # "first-last" token positions; unset: what fits the screen
        _s("cross_layer", "layer", url="xlayer"),  # encoder-decoder models only
        _s("cross_head", "head", 0, url="xhead"),
        _s("cell_query", "int", url="cq"), _s("cell_key", "int", url="ck"),  # Why this score
        # an encoder–decoder's cell: in the encoder, the decoder's self- or cross-attention
        _s("cell_in", "choice", "encoder", ("encoder", "decoder", "cross"), url="cin"))),
    PageSpec("effect", "effect", "Attention vs effect", "Explore", ":material/balance:", "eff", (
        _s("layer", "layer", url="elayer"), _s("head", "head", 0, url="ehead"),
        _s("average", "bool", False, url="eavg"), _s("pos", "int", url="epos"),
        _s("steps", "choice", 64, EFFECT_STEPS, url="esteps"),
        _s("baseline", "choice", "pad", ("pad", "zero", "mask"), url="ebase"),
        _s("occlusion", "choice", "remove", ("remove", "pad", "mask"), url="eocc"),
        _s("words", "choice", "integrated_gradients", EFFECT_MEASURES, url="ewords"))),
    PageSpec("heads", "heads", "Head statistics", "Explore", ":material/leaderboard:", "hs", (
        _s("stat", "choice", "entropy", HEAD_STATS, url="hstat"),)),
    PageSpec("compare", "compare", "Compare two inputs", "Explore",
             ":material/compare_arrows:", "cmp", (
                 _s("text_b", "text", url="textb"), _s("layer", "layer", 0, url="clayer"),
                 _s("head", "head", 0, url="chead"))),
    PageSpec("ablation", "ablation", "Head ablation", "Explore", ":material/content_cut:", "abl", (
        _s("heads", "heads", [], url="abheads"),
        _s("mode", "choice", "zero", ("zero", "mean"), url="abmode"))),
    PageSpec("logit-lens", "logit_lens", "Logit lens", "Explore", ":material/visibility:",
             "lens", (_s("pos", "int", url="lpos"),)),
    PageSpec("generate", "generate", "Generate, step by step", "Decoder lab",
             ":material/edit_note:", "gen", (
                 _s("n", "int", 40, minimum=1, maximum=200, url="gn"),
                 _s("mode", "choice", "greedy", ("greedy", "sample"), url="gmode"),
                 _s("temp", "float", 1.0, minimum=0.05, maximum=3.0, url="gt"),
                 _s("topk", "int", 0, maximum=1_000_000, url="gk"),
                 _s("topp", "float", 1.0, minimum=0.05, maximum=1.0, url="gp"),
                 _s("seed", "int", 0, maximum=999_999, url="gseed"),
                 _s("step", "int", 1, minimum=1, maximum=200, url="gstep"),
                 _s("layer", "layer", url="glayer"), _s("head", "head", url="ghead"))),
    PageSpec("attribution", "attribution", "Which parts made the logit", "Decoder lab",
             ":material/stacked_bar_chart:", "attr", (
                 _s("pos", "int", url="apos"),
                 _s("mode", "choice", "one", ("one", "diff"), url="amode"),
                 _s("target", "int", url="atarget"), _s("base", "int", url="abase"))),
    PageSpec("patching", "patching", "Patching: find the circuit", "Decoder lab",
             ":material/cable:", "pt", (
                 _s("mode", "choice", choices=("prompts", "preset"), url="pmode"),
                 _s("corrupt", "text", url="pcorrupt"),
                 _s("answer", "int", url="panswer"), _s("wrong", "int", url="pwrong"),
                 _s("which", "choice", "first", ("first", "second"), url="pwhich"),
                 _s("len", "int", 10, minimum=4, maximum=24, url="plen"),
                 _s("seed", "int", 0, maximum=9999, url="pseed"),
                 _s("seqs", "int", 16, minimum=1, maximum=32, url="pseqs"),
                 _s("all", "bool", False, url="pall"))),
    PageSpec("walkthrough", "walkthrough", "Forward pass, step by step", "Learn",
             ":material/footprint:", "wk", (
                 _s("step", "int", 1, minimum=1), _s("layer", "layer", 0, url="wlayer"),
                 _s("head", "head", 0, url="whead"), _s("batch", "bool", False, url="wbatch"),
                 _s("teacher", "bool", False, url="teacher"))),
    PageSpec("positions", "positions", "Positional encodings", "Learn", ":material/waves:",
             "pos", (_s("n_positions", "int", minimum=2, maximum=512, url="npos"),
                     _s("d_model", "int", minimum=8, maximum=768, url="pwidth"),
                     _s("grouped", "bool", False, url="grouped"),
                     _s("skip_first", "bool", url="pskip"))),
    PageSpec("embeddings", "embeddings", "Embeddings", "Learn", ":material/scatter_plot:", "emb", (
        _s("method", "choice", "PCA", ("PCA", "t-SNE", "UMAP"), url="emethod"),
        _s("layer", "int", 0, url="emlayer"),
        _s("dims", "choice", "2D", ("2D", "3D"), url="edims"))),
    PageSpec("training", "training", "Train a tiny transformer", "Train",
             ":material/model_training:", "train", (
                 _s("task", "choice", "induction", ("induction", "chars", "reverse"),
                    url="task"),)),
)

BY_PATH: dict[str, PageSpec] = {spec.path: spec for spec in PAGE_SPECS}
LESSON_PAGES = tuple(spec.path for spec in PAGE_SPECS if spec.lesson)

# lesson page name -> (url path, title on screen, settings): the form teaching/format.py reads.
PAGES: dict[str, tuple[str, str, dict[str, Setting]]] = {
    spec.path: (spec.path, spec.title, dict(spec.by_name)) for spec in PAGE_SPECS
    if spec.lesson}

# Settings every step has, whatever its page: what the sidebar shows.
COMMON = ("model", "text", "pair")
