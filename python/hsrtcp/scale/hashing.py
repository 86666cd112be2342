"""Content keys: when an input is "the same" as one already analyzed (docs/scale.md, "Resume").

:func:`content_hash` identifies what an input holds: for every file, its size and a
BLAKE2b of its first and last MiB (a sampled hash: reading whole files would cost as much
I/O as the analysis itself; bench/corpus.py measures both). Two inputs with the same
content hash are duplicates. :func:`state_key` adds what else decides the results: the
files' modification times (an edit in the middle of a file that keeps its size changes
the mtime), the radio log, the labels and options, and the hsrtcp version. A partition
whose recorded state key equals the input's is up to date and is skipped on a re-run.

Only regular files are read: a FIFO would block the run forever and a device such as
``/dev/zero`` never ends (both report size 0, so they would be read "whole"). Anything else
is :class:`NotRegularFile`, an OSError that becomes the input's failure row.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat

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


class NotRegularFile(OSError):
    """A path that is not a regular file (FIFO, device, socket): never opened for reading."""


_WHAT = {stat.S_IFIFO: "a FIFO", stat.S_IFCHR: "a character device", stat.S_IFBLK: "a block device",
         stat.S_IFSOCK: "a socket", stat.S_IFDIR: "a directory"}


def special_kind(mode: int) -> str | None:
    """What a ``st_mode`` is when it is not a regular file ("a FIFO" ...), else None."""
    return None if stat.S_ISREG(mode) else _WHAT.get(stat.S_IFMT(mode), "not a regular file")


def _regular(path: str, mode: int) -> None:
    what = special_kind(mode)
    if what is not None:
        raise NotRegularFile(0, f"is {what}, not a regular file; only regular files are analyzed", path)


def file_digest(path: str, full: bool = False) -> tuple[str, int, int]:
    """(BLAKE2b of size + first and last MiB, or of the whole file when ``full``, size, mtime_ns).
    Raises OSError for an unreadable file, :class:`NotRegularFile` for what is not a file."""
    # stat before open: opening a FIFO blocks, opening some devices acts (a tape rewinds)
    _regular(path, os.stat(path).st_mode)
    h = hashlib.blake2b(digest_size=16)
    # O_NONBLOCK: a FIFO put in its place since the stat does not block the open either
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    with open(fd, "rb") as f:
        st = os.fstat(fd)
        _regular(path, st.st_mode)
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
