"""docs/seeds.md: the gallery of the committed lab campaign (tests/data/study) with RESULTS
analyzed, at generation time, from captures committed in tests/data (``--packets`` on): the
items that need per-flow samples, one flow's series or the packets table are then drawn;
and, as RESULTS read as they are, the committed tables of runs whose captures are too large
to commit (:data:`hsrtcp.figures.inputs.COMMITTED_TABLES`: seed 004's MPTCP instances).

``python -m hsrtcp.figures.committed`` rewrites docs/seeds.md; ``--check`` writes nothing and
exits 1 when it differs. The analyzed tables live in a temporary directory only (they can be
made again from the captures, so none is committed).
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from hsrtcp.figures.inputs import COMMITTED_RESULTS as RESULTS
from hsrtcp.figures.inputs import COMMITTED_TABLES as TABLES

ROOT = Path(__file__).resolve().parents[3]
STUDY = "tests/data/study"
SEEDS_MD = "docs/seeds.md"


def _split(args: tuple[str, ...], root: Path) -> tuple[list, str | None, list, list]:
    """The analyze arguments of :data:`RESULTS` as (captures, vantage, clients, servers)."""
    captures, clients, servers, vantage = [], [], [], None
    it = iter(args)
    for a in it:
        if a == "--vantage":
            vantage = next(it)
        elif a == "--client":
            clients.append(root / next(it))
        elif a == "--server":
            servers.append(root / next(it))
        else:
            captures.append(root / a)
    return captures, vantage, clients, servers


def analyze_committed(into: Path, root: Path = ROOT) -> list[Path]:
    """``hsrtcp analyze ... --packets`` (as the command runs it: bundles with their radio log
    and truth, pairs matched) of every entry of :data:`RESULTS` into ``into/NAME``."""
    from hsrtcp.cli.run_analysis import run

    out = []
    for name, args, _ in RESULTS:
        d = into / name
        captures, vantage, clients, servers = _split(args, root)
        rc = run(captures, [vantage] * len(captures), d, False, False, 1, True, clients, servers, packets=True)
        if rc != 0:  # committed inputs that do not analyze are a defect, not an input error
            raise RuntimeError(f"hsrtcp analyze {' '.join(args)} --packets -o {d} exited {rc}")
        out.append(d)
    return out


def committed_tables(root: Path = ROOT) -> list[Path]:
    """The directories of :data:`TABLES`, read as committed."""
    return [root / rel for _, rel, _ in TABLES]


def gallery(into: Path, root: Path = ROOT):
    from hsrtcp.figures import build

    return build(root / STUDY, analyze_committed(into, root) + committed_tables(root))


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
