"""What a corpus holds: :func:`discover` turns a directory tree, a glob or a CSV manifest
into :class:`Input` s (single captures, client/server pairs, run bundles), and
:func:`is_corpus` tells a corpus argument from today's ``hsrtcp analyze`` arguments.

Rules (docs/scale.md, "What a corpus is"):

- a directory that is a run bundle (:func:`hsrtcp.bundle.is_bundle`) is one ``bundle`` input;
  its files are not looked at one by one;
- in any other directory, ``NAME.client.EXT`` and ``NAME.server.EXT`` (same NAME and EXT)
  are one ``pair`` input; every other capture file is a ``capture`` input (vantage from a
  ``.client.`` / ``.server.`` in its name, else unknown);
- hidden files and directories, and results directories of hsrtcp (they hold a lock file
  ``.hsrtcp.lock``), are skipped, so RESULTS may live inside the corpus.

Input ids name the hive partitions ``input=<id>``: the path relative to the corpus root
(a pair without its ``.client.EXT``), ``/`` spelled ``--``; a path with other characters
than ``[A-Za-z0-9._-]`` gets them replaced by ``_`` and a short hash of the real path, so
ids stay unique and the same from one run to the next.
"""

from __future__ import annotations

import glob
import os
import re

from hsrtcp.inputs import Input, input_id  # noqa: F401  (Input: also this module's API)

CAPTURE_SUFFIXES = (".pcap", ".pcapng", ".cap", ".pcap.gz", ".pcapng.gz", ".cap.gz")
_SIDE = re.compile(r"^(?P<stem>.+)\.(?P<side>client|server)(?P<ext>\.(?:pcap|pcapng|cap)(?:\.gz)?)$")
LOCK_NAME = ".hsrtcp.lock"


def is_capture_name(name: str) -> bool:
    return name.lower().endswith(CAPTURE_SUFFIXES)


def has_magic(arg: str) -> bool:
    return glob.has_magic(arg)


def is_corpus(captures: list[str], flag: bool) -> bool:
    """Whether ``hsrtcp analyze CAPTURES`` is a corpus run: ``--corpus``, or one argument
    that is a ``.csv`` file, a directory that is not a run bundle (a usage error before
    corpora existed), or a quoted glob (one that names no existing file as such)."""
    if flag:
        return True
    if len(captures) != 1:
        return False
    a = os.fspath(captures[0])
    if os.path.isfile(a) and a.lower().endswith(".csv"):
        return True
    if os.path.isdir(a):
        from hsrtcp.bundle import is_bundle

        return not is_bundle(a)
    return not os.path.exists(a) and has_magic(a)


def discover(spec: str | os.PathLike) -> list[Input]:
    """The inputs of a corpus given as a directory, a glob or a ``.csv`` manifest, in a
    stable order. Raises ValueError (a usage error) when the corpus names nothing."""
    s = os.fspath(spec)
    if os.path.isfile(s) and s.lower().endswith(".csv"):
        from hsrtcp.scale.manifest import read_manifest

        return read_manifest(s)
    if os.path.isdir(s):
        from hsrtcp.bundle import is_bundle

        if is_bundle(s):
            return [Input(input_id(os.path.basename(os.path.abspath(s))), "bundle", [s])]
        found = sorted(_walk(s, s), key=lambda i: i.id)
        if not found:
            raise ValueError(f"{s}: no capture files ({', '.join(CAPTURE_SUFFIXES)}) or run bundles in this directory tree")
        return found
    if has_magic(s):
        matches = sorted(glob.glob(s, recursive=True))
        if not matches:
            raise ValueError(f"{s}: the glob matches nothing")
        root = _glob_root(s)
        return sorted(_from_paths(matches, root), key=lambda i: i.id)
    raise ValueError(f"{s}: not a directory, a glob or a .csv manifest")


def _glob_root(pattern: str) -> str:
    parts = pattern.split(os.sep)
    fixed = []
    for p in parts:
        if has_magic(p):
            break
        fixed.append(p)
    root = os.sep.join(fixed)
    return root if os.path.isdir(root or ".") and root else "."


def _skip_dir(path: str, name: str) -> bool:
    return name.startswith(".") or os.path.exists(os.path.join(path, LOCK_NAME))


def _walk(top: str, root: str) -> list[Input]:
    from hsrtcp.bundle import is_bundle

    out: list[Input] = []
    for d, dirs, files in os.walk(top):
        dirs[:] = sorted(x for x in dirs if not _skip_dir(os.path.join(d, x), x))
        bundles = [x for x in dirs if is_bundle(os.path.join(d, x))]
        for b in bundles:
            p = os.path.join(d, b)
            out.append(Input(input_id(os.path.relpath(p, root)), "bundle", [p]))
        dirs[:] = [x for x in dirs if x not in bundles]
        out += _group([os.path.join(d, f) for f in sorted(files) if not f.startswith(".") and is_capture_name(f)], root)
    return out


def _from_paths(paths: list[str], root: str) -> list[Input]:
    from hsrtcp.bundle import is_bundle

    out: list[Input] = []
    files: list[str] = []
    for p in paths:
        if os.path.isdir(p):
            if is_bundle(p):
                out.append(Input(input_id(os.path.relpath(p, root)), "bundle", [p]))
            else:
                out += _walk(p, root)
        elif is_capture_name(p):
            files.append(p)
    by_dir: dict[str, list[str]] = {}
    for f in files:
        by_dir.setdefault(os.path.dirname(f), []).append(f)
    for d in sorted(by_dir):
        out += _group(sorted(by_dir[d]), root)
    return out


def _group(files: list[str], root: str) -> list[Input]:
    """Captures of one directory: pairs by name, the rest single."""
    sides: dict[tuple[str, str], dict[str, str]] = {}
    for f in files:
        m = _SIDE.match(os.path.basename(f))
        if m:
            sides.setdefault((m["stem"], m["ext"]), {})[m["side"]] = f
    paired = set()
    out: list[Input] = []
    for (stem, _ext), s in sorted(sides.items()):
        if "client" in s and "server" in s:
            rel = os.path.relpath(os.path.join(os.path.dirname(s["client"]), stem), root)
            out.append(Input(input_id(rel), "pair", [s["client"], s["server"]]))
            paired.update(s.values())
    for f in files:
        if f in paired:
            continue
        m = _SIDE.match(os.path.basename(f))
        out.append(Input(input_id(os.path.relpath(f, root)), "capture", [f], vantage=m["side"] if m else None))
    # a pair id (NAME) cannot collide with a capture id (NAME.EXT): captures keep their extension
    return sorted(out, key=lambda i: i.id)
