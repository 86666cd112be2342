"""The repository states its license in one way everywhere: LICENSE, Cargo.toml, pyproject.toml."""

import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]


def test_license_file_is_mit_and_agrees_with_the_manifests():
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n")
    assert "Copyright (c) 2026 hsrtcp developers" in text
    assert "Permission is hereby granted, free of charge" in text
    cargo = tomllib.loads((ROOT / "Cargo.toml").read_text(encoding="utf-8"))
    assert cargo["workspace"]["package"]["license"] == "MIT"
    for crate in ("hsrtcp-core", "hsrtcp-py"):
        c = tomllib.loads((ROOT / "crates" / crate / "Cargo.toml").read_text(encoding="utf-8"))
        assert c["package"]["license"] == {"workspace": True}
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == {"text": "MIT"}
