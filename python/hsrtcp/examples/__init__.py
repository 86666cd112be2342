"""The bundled example: a phone-side and a server-side capture of one real TCP download
made in the project's namespace testbed (origin and ground truth in README.md and
truth.json beside this file). It travels inside the package, so ``hsrtcp demo`` and the
paths below work from any directory, in a checkout or an installed wheel.

``python -m hsrtcp.examples`` prints the paths (for ``hsrtcp analyze "$(...)"`` in a shell).
"""

from __future__ import annotations

from pathlib import Path

#: The directory holding the example files.
DIR = Path(__file__).resolve().parent
#: Client ("phone") side, captured on the client's veth (the receiver).
PHONE = DIR / "phone.pcap"
#: Server side, captured on the server's veth (the sender).
SERVER = DIR / "server.pcap"
#: Parameters and ground truth of the run (TCP_INFO, the router's drop counters).
TRUTH = DIR / "truth.json"
