"""Run as `python bench/<script>.py`, a benchmark has bench/ on sys.path but not the repository
root. Importing this module puts the root there, so `model`, `ui` and `tests.harness` import."""

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
