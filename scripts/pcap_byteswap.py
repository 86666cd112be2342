#!/usr/bin/env python3
"""Rewrite a classic pcap in the other byte order (or shift its clock).

    scripts/pcap_byteswap.py IN OUT              # little-endian <-> big-endian
    scripts/pcap_byteswap.py IN OUT --shift 1.5  # same byte order, timestamps + 1.5 s

Packet bytes are untouched; only the global and record headers are rewritten
(hsrtcp.testing.pcapio.rewrite_pcap). Used for tests/data/drops_cubic.server.be.pcap.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "python"))

from hsrtcp.testing.pcapio import capture_info, rewrite_pcap  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    ap.add_argument("--shift", type=float, default=None, help="add this many seconds, keep byte order")
    a = ap.parse_args()
    if a.shift is not None:
        n = rewrite_pcap(a.src, a.dst, time_offset_s=a.shift)
    else:
        big = capture_info(a.src)["endian"] == "little"
        n = rewrite_pcap(a.src, a.dst, big_endian=big)
    print(f"{a.dst}: {n} records")
    return 0


if __name__ == "__main__":
    sys.exit(main())
