"""The one input model, :class:`Input`, and a corpus input's partition id (:func:`input_id`).

An input is what one analysis takes as a whole: a single capture, a client/server pair or a
run bundle. A corpus run (:mod:`hsrtcp.scale.discover`, :mod:`hsrtcp.scale.manifest`) makes
one per partition ``input=<id>/``; the context of a results directory
(:func:`hsrtcp.context.enrich.describe_inputs`) makes one per input of the run and adds what
the analysis derives (its number, its captures, the bundle's t0). Below both: no hsrtcp
imports. The id rules are in :mod:`hsrtcp.scale.discover`'s module docstring.
"""

from __future__ import annotations

import hashlib
import os
import re
from dataclasses import dataclass, field

_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@dataclass
class Input:
    """One input: what a corpus run analyzes into ``input=<id>/``, or one input of a run."""

    id: str
    kind: str  # "capture" | "pair" | "bundle"
    #: the capture file; the client and server files; the bundle directory
    files: list[str]
    vantage: str | None = None
    #: the input's radio log: a corpus row's, or a bundle's own (None: none, or unusable)
    radio: str | None = None
    radio_format: str = "auto"
    radio_offset: float = 0.0
    radio_map: dict | None = None
    carrier: str | None = None
    labels: dict[str, str] = field(default_factory=dict)
    # Derived when a run's context is computed (hsrtcp.context.enrich.describe_inputs):
    #: the input's place in the run: the context tables' ``input_id``
    number: int = 0
    #: each capture as the flows table spells it -> phone path k (None: the server side)
    captures: dict[str, int | None] = field(default_factory=dict)
    #: a bundle's clock origin (manifest ``t0``, epoch seconds)
    t0: float | None = None
    #: why the bundle manifest's radio or t0 is unusable
    radio_problem: str | None = None

    @property
    def source(self) -> str:
        """How the input is named in messages, the failures table and labels.parquet."""
        return " + ".join(self.files)


def input_id(rel: str) -> str:
    """The partition id of a path relative to the corpus root (hsrtcp.scale.discover's module docstring)."""
    rel = rel.replace(os.sep, "/").strip("/")
    joined = rel.replace("/", "--")
    safe = _SAFE.sub("_", joined)
    if safe != joined or not safe or safe.startswith("."):
        safe = f"{safe.lstrip('.') or 'input'}-{hashlib.blake2b(rel.encode('utf-8', 'surrogateescape'), digest_size=4).hexdigest()}"
    return safe
