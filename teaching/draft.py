"""A lesson being written in the app ("record this view as a step"), saved as a lesson file."""

from __future__ import annotations

import json

from .pages import PAGES


def _value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, (list, tuple)):  # (layer, head) pairs
        return "[" + ", ".join(_value(v) for v in value) + "]"
    return json.dumps(str(value), ensure_ascii=False)  # a TOML basic string


def to_toml(title: str, summary: str, steps: list[dict]) -> str:
    """The text of a lesson file. Each step is a dict with page, title, explain, model, text,
    pair, the page's settings and an optional question (kind, prompt, options, answer, row,
    reveal)."""
    lines = [f"title = {_value(title or 'My lesson')}"]
    if summary:
        lines.append(f"summary = {_value(summary)}")
    for step in steps:
        lines += ["", "[[steps]]"]
        for key in ("title", "page", "model", "text", "pair"):
            if step.get(key) not in (None, ""):
                lines.append(f"{key} = {_value(step[key])}")
        for key in PAGES[step["page"]][2]:
            if key in step.get("settings", {}):
                lines.append(f"{key} = {_value(step['settings'][key])}")
        if step.get("explain"):  # none written: the step has none (never a made-up one)
            lines.append(f"explain = {_value(step['explain'])}")
        question = step.get("question")
        if question:
            lines += ["", "[steps.question]"]
            for key in ("kind", "prompt", "row", "answer", "reveal"):
                if question.get(key):
                    lines.append(f"{key} = {_value(question[key])}")
            if question.get("options"):
                lines.append("options = [" + ", ".join(_value(o) for o in question["options"])
                             + "]")
    return "\n".join(lines) + "\n"
