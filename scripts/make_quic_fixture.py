"""Make tests/data/passive/quic.pcap: real QUIC connections for the application witness.

aioquic (a maintained QUIC implementation, only needed to regenerate this file) runs a server
and clients on the loopback interface while tcpdump records it:

- QUIC version 1 to 127.0.0.1:4433 with server name ``www.youtube.com``;
- QUIC version 2 (RFC 9369) to 127.0.0.1:4434 with ``api.spotify.com``;
- QUIC version 1 to 127.0.0.1:4435 with a server name long enough (a 1,500-byte padding
  extension added by the client: ``--big``) that the ClientHello spans two Initial packets.

Each client opens the connection, sends one HTTP/3-less stream message, and closes. The
server certificate is self-signed for the names (generated here; never reused).

Run as root (tcpdump on lo): ``.venv/bin/python scripts/make_quic_fixture.py OUT.pcap``.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from aioquic.asyncio import connect, serve
from aioquic.quic.configuration import QuicConfiguration
from aioquic.quic.packet import QuicProtocolVersion

from _selfsigned import self_signed  # scripts/ (this file's folder)

CASES = [  # (port, version, server name, pad the ClientHello past one packet)
    (4433, QuicProtocolVersion.VERSION_1, "www.youtube.com", False),
    (4434, QuicProtocolVersion.VERSION_2, "api.spotify.com", False),
    (4435, QuicProtocolVersion.VERSION_1, "edge-042.cdninstagram.com", True),
]


def _certificate(tmp: Path) -> tuple[Path, Path]:
    return self_signed(tmp, "hsrtcp quic fixture", [n for _, _, n, _ in CASES])


async def _run(cert: Path, key: Path) -> None:
    async def echo(reader, writer):
        writer.write(await reader.read(100))
        writer.write_eof()

    for port, version, name, big in CASES:
        scfg = QuicConfiguration(is_client=False, alpn_protocols=["hsrtcp"])
        scfg.load_cert_chain(cert, key)
        server = await serve("127.0.0.1", port, configuration=scfg,
                             stream_handler=lambda r, w: asyncio.ensure_future(echo(r, w)))
        ccfg = QuicConfiguration(is_client=True, alpn_protocols=["hsrtcp"], server_name=name,
                                 supported_versions=[version], verify_mode=False)
        if big:
            # many ALPN entries make a ClientHello larger than one 1,200-byte Initial
            ccfg.alpn_protocols = ["hsrtcp"] + [f"x-fixture-{i:03d}" for i in range(120)]
            scfg.alpn_protocols = ccfg.alpn_protocols
        async with connect("127.0.0.1", port, configuration=ccfg) as client:
            r, w = await client.create_stream()
            w.write(b"hello over quic")
            w.write_eof()
            await r.read()
        server.close()
        await asyncio.sleep(0.2)


def main() -> None:
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "quic.pcap").resolve()
    with tempfile.TemporaryDirectory() as t:
        cert, key = _certificate(Path(t))
        raw = Path(t) / "raw.pcap"
        ports = " or ".join(f"udp port {p}" for p, *_ in CASES)
        dump = subprocess.Popen(["tcpdump", "-i", "lo", "-s", "0", "-U", "-w", str(raw), ports],
                                stderr=subprocess.DEVNULL)
        time.sleep(1.0)
        try:
            asyncio.run(_run(cert, key))
            time.sleep(0.5)
        finally:
            dump.terminate()
            dump.wait()
        os.replace(raw, out)
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
