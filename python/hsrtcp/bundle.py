"""Reading a run bundle directory (docs/formats/bundle.md): is it one, its client/server
capture pairs, its manifest. The one reader, for the analysis, the corpus run and the
context; the writer is :mod:`hsrtcp.lab.bundle`, which this module does not import (a
bundle is read where no lab is installed)."""

from __future__ import annotations

import os

from hsrtcp.errors import InputError


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
    return os.path.isdir(p) and (has("manifest.json") or has("capture", "server.pcap")
                                 or (has("client.pcap") and has("server.pcap")))


def read_manifest(bundle: str | os.PathLike) -> dict | None:
    """The bundle's manifest.json, if any (for labels in reports)."""
    import json  # (with re, 10-20 ms of start-up: not on the pair CLI's path)

    from pathlib import Path

    p = Path(bundle) / "manifest.json"
    if not p.exists():
        return None
    try:
        return json.loads(p.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"{p}: invalid JSON at line {exc.lineno} column {exc.colno}") from exc
