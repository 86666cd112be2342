"""The committed capture fixtures (tests/data/) with their recorded witnesses.

    from hsrtcp.testing.fixtures import fixture, names
    fx = fixture("drops_cubic")
    fx.server_pcap, fx.client_pcap            # paths
    fx.meta["connections"][0]["tcp_info"]     # kernel truth (server socket, after the FIN)
    fx.meta["nft"]["data_dropped"]            # router truth
    fx.truth().totals()["data_lost"]          # two-capture truth, recomputed

The data directory is ``tests/data`` of the source tree, or ``$HSRTCP_TEST_DATA``.
What each fixture exercises is listed in tests/data/README.md.
"""

from __future__ import annotations

import json
import os
import shutil
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from hsrtcp.testing import truth as _truth


def data_dir() -> Path:
    env = os.environ.get("HSRTCP_TEST_DATA")
    return Path(env) if env else Path(__file__).resolve().parents[3] / "tests" / "data"


def names() -> list[str]:
    """Names of the two-sided testbed fixtures (each has NAME.json)."""
    return sorted(p.stem for p in data_dir().glob("*.json"))


def corpus(dest: Path, captures) -> Path:
    """A new corpus directory ``dest`` holding copies of the tests/data files ``captures``."""
    dest.mkdir()
    for name in captures:
        shutil.copy(data_dir() / name, dest / name)
    return dest


@dataclass(frozen=True)
class Fixture:
    name: str
    server_pcap: Path
    client_pcap: Path

    @cached_property
    def meta(self) -> dict:
        return json.loads((self.server_pcap.parent / f"{self.name}.json").read_text())

    def truth(self) -> _truth.Truth:
        return _truth.compute(self.server_pcap, self.client_pcap,
                              client_time_offset_s=self.meta.get("time_offset_s") or 0.0)


def fixture(name: str) -> Fixture:
    d = data_dir()
    if not (d / f"{name}.json").exists():
        raise KeyError(f"no fixture {name!r} in {d}; known: {', '.join(names())}")
    return Fixture(name, d / f"{name}.server.pcap", d / f"{name}.client.pcap")
