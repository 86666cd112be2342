"""Content keys: when an input is "the same" as one already analyzed (docs/scale.md, "Resume").

:func:`content_hash` identifies what an input holds: for every file, its size and a
BLAKE2b of its first and last MiB (a sampled hash: reading whole files would cost as much
I/O as the analysis itself; bench/corpus.py measures both). Two inputs with the same
content hash are duplicates. :func:`state_key` adds what else decides the results: the
files' modification times (an edit in the middle of a file that keeps its size changes
the mtime), the radio log, the labels and options, and the hsrtcp version. A partition
whose recorded state key equals the input's is up to date and is skipped on a re-run.
"""

from __future__ import annotations

import hashlib
import json
import os

SAMPLE = 1 << 20  # bytes hashed at each end of a file


def _files(path: str) -> list[str]:
    """A file, or every file under a directory (a run bundle), sorted."""
    if not os.path.isdir(path):
        return [path]
    out = []
    for d, dirs, files in os.walk(path):
        dirs.sort()
        out += [os.path.join(d, f) for f in sorted(files)]
    return out


def file_digest(path: str, full: bool = False) -> tuple[str, int, int]:
    """(BLAKE2b of size + first and last MiB, or of the whole file when ``full``, size, mtime_ns).
    Raises OSError for an unreadable file."""
    h = hashlib.blake2b(digest_size=16)
    with open(path, "rb") as f:
        st = os.fstat(f.fileno())
        h.update(st.st_size.to_bytes(8, "little"))
        if full or st.st_size <= 2 * SAMPLE:
            while chunk := f.read(1 << 20):
                h.update(chunk)
        else:
            h.update(f.read(SAMPLE))
            f.seek(-SAMPLE, os.SEEK_END)
            h.update(f.read(SAMPLE))
    return h.hexdigest(), st.st_size, st.st_mtime_ns


def content_hash(files: list[str]) -> tuple[str, int, list[int]]:
    """(hash of the input's content, total bytes, mtimes) over its files (directories walked)."""
    h = hashlib.blake2b(digest_size=16)
    total, mtimes = 0, []
    for top in files:
        for f in _files(top):
            digest, size, mtime = file_digest(f)
            rel = os.path.relpath(f, top) if f != top else ""
            h.update(f"{rel}\0{digest}\0".encode("utf-8", "surrogateescape"))
            total += size
            mtimes.append(mtime)
    return h.hexdigest(), total, mtimes


def state_key(content: str, mtimes: list[int], settings: dict, version: str) -> str:
    """The key a partition records: content, mtimes, radio log, labels, options, version."""
    doc = json.dumps({"content": content, "mtimes": mtimes, "settings": settings, "version": version},
                     sort_keys=True, default=str)
    return hashlib.blake2b(doc.encode(), digest_size=16).hexdigest()
