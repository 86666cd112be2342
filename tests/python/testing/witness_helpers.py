"""Helpers for the witness tests: where the fixtures are and what their JSON says."""

from __future__ import annotations

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
DATA = ROOT / "tests" / "data"


def fixture_names() -> list[str]:
    """Names of the two-sided testbed fixtures (each has NAME.json, NAME.server/client.pcap)."""
    return sorted(p.stem for p in DATA.glob("*.json"))


def load_meta(name: str) -> dict:
    return json.loads((DATA / f"{name}.json").read_text())


def pcaps(name: str) -> tuple[Path, Path]:
    return DATA / f"{name}.server.pcap", DATA / f"{name}.client.pcap"
