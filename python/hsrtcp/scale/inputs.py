"""A corpus's unit of work, :class:`Input`, and its partition id (:func:`input_id`): below both
:mod:`hsrtcp.scale.discover` and :mod:`hsrtcp.scale.manifest`, which make Inputs (the
discoverer reads a manifest through the manifest reader, so the reader cannot import the
discoverer back). The id rules are in discover's module docstring.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class Input:
    """One unit of work of a corpus run: what is analyzed into ``input=<id>/``."""

    id: str
    kind: str  # "capture" | "pair" | "bundle"
    #: the capture file; the client and server files; the bundle directory
    files: list[str]
    vantage: str | None = None
    radio: str | None = None
    radio_format: str = "auto"
    radio_offset: float = 0.0
    radio_map: dict | None = None
    carrier: str | None = None
    labels: dict[str, str] = field(default_factory=dict)

    @property
    def source(self) -> str:
        """How the input is named in messages and the failures table."""
        return " + ".join(self.files)


def input_id(rel: str) -> str:
    """The partition id of a path relative to the corpus root (hsrtcp.scale.discover's module docstring)."""
    rel = rel.replace(os.sep, "/").strip("/")
    joined = rel.replace("/", "--")
    safe = _SAFE.sub("_", joined)
    if safe != joined or not safe or safe.startswith("."):
        safe = f"{safe.lstrip('.') or 'input'}-{hashlib.blake2b(rel.encode('utf-8', 'surrogateescape'), digest_size=4).hexdigest()}"
    return safe
