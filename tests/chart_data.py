"""Reading the figures an AppTest run drew: each plotly chart's spec by its key, and plotly's
JSON arrays (a plain list, or a typed array {"dtype", "bdata", "shape"}) as numpy."""

from __future__ import annotations

import base64
import json

import numpy as np


def chart_specs(at) -> dict[str, dict]:
    """key -> the plotly figure (data and layout) of every chart on the page."""
    return {el.key: json.loads(el.proto.spec) for el in at.get("plotly_chart")}


def plotly_array(value) -> np.ndarray:
    """A plotly JSON array as numpy."""
    if isinstance(value, dict) and "bdata" in value:
        flat = np.frombuffer(base64.b64decode(value["bdata"]), dtype=np.dtype(value["dtype"]))
        shape = [int(s) for s in str(value.get("shape", flat.size)).split(",")]
        return flat.reshape(shape)
    return np.asarray(value, dtype=float)
