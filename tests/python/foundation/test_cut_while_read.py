"""A capture file cut while it is read (REV19's review of s19's memory-mapped reader): the run
ends with the records read before the cut and an error naming the file, whatever signal
handlers the process has. A handler installed after the first read (Python's faulthandler,
enabled by pytest and by ``python -X faulthandler``) made the map's cut a crash (SIGBUS,
rc 135); a plain file is read with read() again (crates/hsrtcp-core/src/capture/mod.rs).

The cut happens in the progress callback, from the reader's own thread of control: no timing.
The run is a child process, so that a crash fails the test instead of ending pytest."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"

CHILD = r"""
import faulthandler, os, sys
from hsrtcp.api import analyze_one
src, path = sys.argv[1], sys.argv[2]
body = open(src, "rb").read()
with open(path, "wb") as f:  # about 8 MB: read on well past the cut
    f.write(body[:24])
    for _ in range(20):
        f.write(body[24:])
analyze_one(src)  # a first read, before the handler below
faulthandler.enable()
def cut(done):
    if os.path.getsize(path) > 1 << 20:
        os.truncate(path, 1 << 20)
t = analyze_one(path, progress=cut)
print(t["captures"]["error"][0])
"""


def test_a_file_cut_while_read_ends_with_an_error_not_a_crash(tmp_path):
    p = subprocess.run([sys.executable, "-c", CHILD, str(DATA / "reno_lost_dupack.client.pcap"),
                        str(tmp_path / "cut.pcap")], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "cut.pcap" in p.stdout and "truncated record" in p.stdout, p.stdout
