"""Reading a run bundle directory (docs/formats/bundle.md): is it one, its client/server
capture pairs, its manifest. The one reader, for the analysis, the corpus run and the
context; the writer is :mod:`hsrtcp.lab.bundle`, which this module does not import (a
bundle is read where no lab is installed)."""

from __future__ import annotations

import os

from hsrtcp.errors import InputError

#: The file that makes a directory a run bundle the lab wrote (docs/formats/bundle.md).
MANIFEST = "manifest.json"


def bundle_pairs(path: str | os.PathLike) -> list[tuple[os.PathLike, os.PathLike]]:
    """The (client, server) capture pairs of a run bundle directory.

    Accepts the lab's bundle layout (``capture/phone_p1.pcap`` … ``capture/server.pcap``,
    docs/formats/bundle.md) and a plain directory with ``client.pcap`` and ``server.pcap``.
    An MPTCP bundle with several phone paths gives one pair per path.
    """
    from pathlib import Path

    d = Path(path)
    if not d.is_dir():
        raise InputError(f"{d}: not a directory")
    cap = d / "capture"
    if (cap / "server.pcap").exists():
        phones = sorted(cap.glob("phone_p*.pcap"))
        if not phones:
            raise InputError(f"{d}: run bundle without a phone capture (capture/phone_p*.pcap)")
        return [(p, cap / "server.pcap") for p in phones]
    for c, s in (("client.pcap", "server.pcap"), ("client.pcap.gz", "server.pcap.gz"),
                 ("client.pcapng", "server.pcapng")):
        if (d / c).exists() and (d / s).exists():
            return [(d / c, d / s)]
    raise InputError(f"{d}: no client/server capture pair (expected capture/phone_p1.pcap and "
                     f"capture/server.pcap, or client.pcap and server.pcap)")


def is_bundle(path: str | os.PathLike) -> bool:
    """A directory with a manifest.json, a capture/server.pcap or a client.pcap and server.pcap."""
    p = os.fspath(path)
    has = lambda *parts: os.path.exists(os.path.join(p, *parts))  # noqa: E731
    return os.path.isdir(p) and (has(MANIFEST) or has("capture", "server.pcap")
                                 or (has("client.pcap") and has("server.pcap")))


def phone_path(capture: str | os.PathLike) -> int | None:
    """The emulated path a bundle's phone capture was taken on (``capture/phone_p2.pcap``: 2),
    None for any other name."""
    import re

    m = re.fullmatch(r"phone_p(\d+)\.pcap", os.path.basename(os.fspath(capture)))
    return int(m.group(1)) if m else None


def has_manifest(path: str | os.PathLike) -> bool:
    """A directory with a manifest.json (a run bundle the lab wrote)."""
    return os.path.isfile(os.path.join(os.fspath(path), MANIFEST))


def run_bundles(folder: str | os.PathLike) -> list:
    """The run bundles directly below ``folder`` (``<run_id>/manifest.json``), by name; hidden
    directories (a run being written) are not bundles."""
    from pathlib import Path

    return sorted(m.parent for m in Path(folder).glob(f"*/{MANIFEST}") if not m.parent.name.startswith("."))


def manifest(bundle: str | os.PathLike) -> dict:
    """The bundle's manifest.json, which must be there: any problem reading it (missing,
    unreadable, not UTF-8, not JSON, not a JSON object) is an InputError naming the file."""
    import json  # (with re, 10-20 ms of start-up: not on the pair CLI's path)

    from pathlib import Path

    p = Path(bundle) / MANIFEST
    try:
        m = json.loads(p.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: invalid JSON at line {exc.lineno} column {exc.colno}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"{p}: not a readable bundle manifest ({exc})") from None
    if not isinstance(m, dict):
        raise InputError(f"{p}: not a bundle manifest (a JSON object)")
    return m


def file_sha256(path: str | os.PathLike) -> str:
    """The SHA-256 (hex) of a file's bytes, as a manifest lists each file of its bundle; the
    one file hash of the package (the lab's manifests and run configs, the audit's captures)."""
    import hashlib

    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def manifest_sha256(bundle: str | os.PathLike) -> str:
    """The SHA-256 of the bundle's manifest.json as it is on disk: the bundle's identity (the
    manifest holds every file's hash), e.g. to reuse an analysis of the very same bundle."""
    return file_sha256(os.path.join(os.fspath(bundle), MANIFEST))


def read_manifest(bundle: str | os.PathLike) -> dict | None:
    """The bundle's manifest.json if it has one (for labels in reports), else None; a manifest
    that is there but cannot be read is an InputError, as in :func:`manifest`."""
    return manifest(bundle) if has_manifest(bundle) else None
