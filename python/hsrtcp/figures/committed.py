"""docs/seeds.md: the gallery of the committed lab campaign (tests/data/study) with RESULTS
analyzed, at generation time, from captures committed in tests/data (``--packets`` on): the
items that need per-flow samples, one flow's series or the packets table are then drawn.

``python -m hsrtcp.figures.committed`` rewrites docs/seeds.md; ``--check`` writes nothing and
exits 1 when it differs. The analyzed tables live in a temporary directory only (they can be
made again from the captures, so none is committed).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
STUDY = "tests/data/study"
SEEDS_MD = "docs/seeds.md"

#: (results directory name, hsrtcp analyze arguments relative to the repository root, why)
RESULTS: tuple[tuple[str, tuple[str, ...], str], ...] = (
    ("lab_truth_run", ("tests/data/lab_truth/run",),
     "a Rattan run at 300 km/h, phone and server captures, radio log (handoffs, context)"),
    ("ack_blackout", ("--client", "tests/data/ack_blackout.client.pcap",
                      "--server", "tests/data/ack_blackout.server.pcap"),
     "netns pair: ACKs blacked out, a spurious timeout caused by ACK loss"),
    ("data_blackout", ("--client", "tests/data/data_blackout.client.pcap",
                       "--server", "tests/data/data_blackout.server.pcap"),
     "netns pair: data blacked out, a timeout recovery with re-sent segments lost"),
    ("mptcp", ("--vantage", "client", "tests/data/mptcp/two_paths.client.pcap",
               "tests/data/mptcp/reinject.client.pcap"),
     "kernel MPTCP v1 over two paths (docs/mptcp.md fixtures)"),
)


def analyze_committed(into: Path, root: Path = ROOT) -> list[Path]:
    """``hsrtcp analyze --packets`` of every entry of :data:`RESULTS` into ``into/NAME``."""
    from hsrtcp.cli import main

    out = []
    for name, args, _ in RESULTS:
        d = into / name
        argv = ["analyze", *(str(root / a) if a.startswith("tests/") else a for a in args),
                "--packets", "-q", "-j", "1", "-o", str(d)]
        rc = main(argv)
        if rc != 0:
            raise RuntimeError(f"hsrtcp {' '.join(argv)} exited {rc}")
        out.append(d)
    return out


def gallery(into: Path, root: Path = ROOT):
    from hsrtcp.figures import build

    return build(root / STUDY, analyze_committed(into, root))


def seeds_md(root: Path = ROOT) -> str:
    with tempfile.TemporaryDirectory(prefix="hsrtcp-seeds-") as tmp:
        return gallery(Path(tmp), root).seeds()


def main(argv=None) -> int:
    import argparse

    from hsrtcp.errors import ExitCode

    ap = argparse.ArgumentParser(prog="python -m hsrtcp.figures.committed",
                                 description="Rewrite docs/seeds.md from the committed campaign and captures.")
    ap.add_argument("--check", action="store_true", help="write nothing; exit 1 when docs/seeds.md differs")
    ap.add_argument("--root", default=str(ROOT), help="repository root (default: this checkout)")
    a = ap.parse_args(argv)
    root = Path(a.root)
    text = seeds_md(root)
    path = root / SEEDS_MD
    old = path.read_text(encoding="utf-8") if path.is_file() else None
    if a.check:
        if old != text:
            print(f"differs from its data: {SEEDS_MD}", file=sys.stderr)
            return ExitCode.FAILED
        return ExitCode.OK
    if old != text:
        path.write_text(text, encoding="utf-8")
        print(f"rewritten: {SEEDS_MD}", file=sys.stderr)
    return ExitCode.OK


if __name__ == "__main__":
    sys.exit(main())
