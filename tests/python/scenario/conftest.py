from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
SCENARIOS = REPO / "scenarios"


@pytest.fixture(scope="session")
def scenarios_dir() -> Path:
    return SCENARIOS


@pytest.fixture(scope="session")
def compiled_examples(tmp_path_factory):
    """Every example scenario compiled once (bt-300kmh shortened to its first 700 s)."""
    from hsrtcp.lab import scenario as S

    out = {}
    base = tmp_path_factory.mktemp("examples")
    for f in sorted(SCENARIOS.glob("*.toml")):
        sc = S.load(f)
        dur = 700.0 if sc.name == "bt-300kmh" else None
        out[sc.name] = sc.compile(base / sc.name, duration=dur)
    return out
