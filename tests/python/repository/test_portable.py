"""The repository runs from a clone in any directory (docs/design.md, reliability rules): no
tracked file names a machine's absolute path. The data the project uses ships inside it
(e.g. data/mahimahi), so nothing needs a path outside the clone.
"""

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]

# a path from the root into the places a machine keeps its own files and users' data: work,
# home, root, opt, mnt, srv, media, Users, scratch, nfs, data (not a part of one: bench/work/
# is relative). /tmp, /proc, /dev and /etc name what every Linux has; /usr/share a
# distribution's own files (a license's usual place).
MACHINE_PATH = re.compile(rb"(?<![\w.~/-])/(?:work|home|root|opt|mnt|srv|media|Users|scratch|nfs|data)/")

# (file, text) pairs allowed to name such a path, each with the reason.
ALLOWED: set[tuple[str, bytes]] = {
    ("docs/scale.md", b"/" + b"opt/"),  # the Dask cluster recipe: where the reader installs hsrtcp on each host
    ("docs/scale.md", b"/" + b"data/"),  # the same recipe: the cluster's shared mount, as the reader names it
    ("docs/lab.md", b"/" + b"data/"),  # a campaign's sample output, the reader's own bundles directory
}


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
    absolute = [b"/" + b"work/x", b' "/' + b'home/u/a"', b"`/" + b"root/.cache`", b"/" + b"opt/mahimahi/traces",
                b"=/" + b"mnt/data/x.pcap", b"'/" + b"Users/a/b'", b" /" + b"data/field"]
    relative = [b"bench/work/srv.pcap", b"~/work/a", b"./work/a", b"https://example.org/home/a", b"x/root/y",
                b"/tmp/x", b"/etc/passwd", b"data/opt/x", b"tests/data/x", b"/usr/share/common-licenses"]
    assert [s for s in absolute + relative if MACHINE_PATH.search(s)] == absolute
