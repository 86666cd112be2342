"""Make `hsrtcp` importable from the source tree when it is not installed in the venv."""

import importlib.util
import sys
from pathlib import Path

if importlib.util.find_spec("hsrtcp") is None:
    sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "python"))
