"""A capture with many TCP connections, made from the project's fixtures (tests/data/README.md):
copy k of a single-connection server-side fixture gets client port 20000 + k and is shifted in
time to start 10 ms after copy k-1 ended. Packets stay the real kernel's packets; only the
client port (and the TCP checksum's validity, which hsrtcp does not check) changes.

    python tests/python/report/many_flows.py OUT.pcap [N]     # default N = 1000
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "data"
SOURCES = ("drops_cubic", "small_50k", "clean_200k", "reno_nosack_nots", "zero_window")
CLIENT = bytes([10, 0, 1, 2])


def _records(path: Path) -> tuple[bytes, list[tuple[float, bytes, bytes]]]:
    """Global header and (ts, record header tail, packet) of a little-endian µs pcap."""
    raw = path.read_bytes()
    assert struct.unpack_from("<I", raw, 0)[0] == 0xA1B2C3D4, f"{path}: expected a little-endian µs pcap"
    out, off = [], 24
    while off + 16 <= len(raw):
        sec, usec, incl, orig = struct.unpack_from("<IIII", raw, off)
        out.append((sec + usec / 1e6, struct.pack("<II", incl, orig), raw[off + 16: off + 16 + incl]))
        off += 16 + incl
    return raw[:24], out


def _with_client_port(pkt: bytes, port: int) -> bytes:
    ip = 14  # Ethernet (the fixtures' link type 1)
    ihl = (pkt[ip] & 0x0F) * 4
    tcp = ip + ihl
    b = bytearray(pkt)
    at = tcp if pkt[ip + 12: ip + 16] == CLIENT else tcp + 2  # client's port: source c2s, destination s2c
    struct.pack_into(">H", b, at, port)
    return bytes(b)


def make_capture(out: Path, n: int = 1000) -> Path:
    sources = [_records(DATA / f"{name}.server.pcap") for name in SOURCES]
    header = sources[0][0]
    parts = [header]
    t = sources[0][1][0][0]
    for k in range(n):
        _hdr, recs = sources[k % len(sources)]
        shift = t - recs[0][0]
        for ts, tail, pkt in recs:
            usec = round((ts + shift) * 1e6)
            parts.append(struct.pack("<II", usec // 1_000_000, usec % 1_000_000) + tail)
            parts.append(_with_client_port(pkt, 20000 + k))
        t = recs[-1][0] + shift + 0.01
    out.write_bytes(b"".join(parts))
    return out


if __name__ == "__main__":
    make_capture(Path(sys.argv[1]), int(sys.argv[2]) if len(sys.argv) > 2 else 1000)
