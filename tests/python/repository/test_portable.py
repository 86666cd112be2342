"""The repository runs from a clone in any directory (docs/design.md, reliability rules): no
tracked file names a machine's absolute path. The data the project uses ships inside it
(e.g. data/mahimahi), so nothing needs a path outside the clone.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# a path from the root into work, home or root (not a part of one: bench/work/ is relative)
MACHINE_PATH = re.compile(rb"(?<![\w.~/-])/(?:work|home|root)/")

# (file, text) pairs allowed to name such a path, each with the reason. Empty today.
ALLOWED: set[tuple[str, bytes]] = set()


def _tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as exc:
        pytest.skip(f"not a git checkout ({exc}): the tracked files are unknown")
    return [p for p in out.decode().split("\0") if p]


def test_no_tracked_file_names_a_machine_path():
    files = _tracked()
    assert len(files) > 100
    found = []
    for name in files:
        path = ROOT / name
        if not path.is_file():  # deleted in the work tree, not yet committed
            continue
        data = path.read_bytes()
        for m in MACHINE_PATH.finditer(data):
            line_no = data.count(b"\n", 0, m.start()) + 1
            line = data.splitlines()[line_no - 1]
            if (name, m.group()) in ALLOWED:
                continue
            found.append(f"{name}:{line_no}: {line.strip()[:120].decode(errors='replace')}")
    assert not found, "absolute machine paths in tracked files:\n" + "\n".join(found[:40])


def test_the_pattern_finds_machine_paths_only():
    # built from parts, so that this file does not match itself
    absolute = [b"/" + b"work/x", b' "/' + b'home/u/a"', b"`/" + b"root/.cache`"]
    relative = [b"bench/work/srv.pcap", b"~/work/a", b"./work/a", b"https://example.org/home/a", b"x/root/y"]
    assert [s for s in absolute + relative if MACHINE_PATH.search(s)] == absolute
