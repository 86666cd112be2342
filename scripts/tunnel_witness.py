#!/usr/bin/env python3
"""tshark against hsrtcp on a directory of captures written by others: TCP conversations per
capture, grouped by the encapsulation hsrtcp found (issue 36's witness on tcpdump's public
test captures, tests/*.pcap* of the tcpdump repository).

    .venv/bin/python scripts/tunnel_witness.py DIR [--out summary.json]

For every pcap/pcapng under DIR: ``tshark -n -q -z conv,tcp`` (conversations and their
frames) and ``hsrtcp.analyze`` (flows). A capture "agrees" when both find the same number of
conversations; with ``--strict`` also the same endpoint pairs and frames per pair. Printed:
per encapsulation (hsrtcp's ``flows.tunnel``; ``plain`` without one) the captures and
conversations on each side, then every capture where they differ.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

import hsrtcp  # noqa: E402
from hsrtcp.testing import peers  # noqa: E402


def tshark_pairs(path: Path) -> list[tuple]:
    out = []
    for key, recs in peers.tshark_conv(path).items():
        a, b = sorted([(key[0], key[1]), (key[2], key[3])])
        out += [(a, b, r["frames"]) for r in recs]
    return sorted(out)


def hsrtcp_pairs(path: Path) -> tuple[list[tuple], set[str], str | None]:
    ds = hsrtcp.analyze([str(path)])
    out, kinds = [], set()
    for r in ds.flows.iter_rows(named=True):
        a, b = sorted([(r["client_addr"], r["client_port"]), (r["server_addr"], r["server_port"])])
        out.append((a, b, r["c2s_packets"] + r["s2c_packets"]))
        kinds.add(r["tunnel"] or "plain")
    err = ds.captures["error"][0] if ds.captures.height else None
    return sorted(out), kinds, err


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("dir", type=Path)
    ap.add_argument("--out", type=Path)
    ap.add_argument("--strict", action="store_true", help="compare endpoint pairs and frames, not only counts")
    a = ap.parse_args()
    files = sorted(p for p in a.dir.rglob("*") if p.suffix in (".pcap", ".pcapng", ".cap") or p.name.endswith(".pcap.gz"))
    groups: dict[str, dict] = defaultdict(lambda: {"captures": 0, "agree": 0, "agree_strict": 0,
                                                    "tshark_conversations": 0, "hsrtcp_conversations": 0})
    differ = []
    for p in files:
        try:
            t = tshark_pairs(p)
        except Exception as e:  # tshark refuses some damaged files outright
            t, terr = [], str(e).splitlines()[0][:120]
        else:
            terr = None
        try:
            h, kinds, herr = hsrtcp_pairs(p)
        except Exception as e:  # an input error: hsrtcp reports it, the tables may be partial
            h, kinds, herr = [], set(), str(e).splitlines()[0][:120]
        if not t and not h:
            continue
        kind = "+".join(sorted(kinds - {"plain"})) or "plain"
        ok = (t == h) if a.strict else (len(t) == len(h))
        g = groups[kind]
        g["captures"] += 1
        g["agree"] += len(t) == len(h)
        g["agree_strict"] += t == h
        g["tshark_conversations"] += len(t)
        g["hsrtcp_conversations"] += len(h)
        if not ok:
            differ.append({"capture": p.name, "tunnel": kind, "tshark": len(t), "hsrtcp": len(h),
                           "tshark_error": terr, "hsrtcp_error": herr})
    print(f"{'encapsulation':<22} {'captures':>8} {'agree':>6} {'strict':>6} {'tshark conv':>12} {'hsrtcp conv':>12}")
    for k in sorted(groups, key=lambda k: (k == "plain", k)):
        g = groups[k]
        print(f"{k:<22} {g['captures']:>8} {g['agree']:>6} {g['agree_strict']:>6} {g['tshark_conversations']:>12} "
              f"{g['hsrtcp_conversations']:>12}")
    print(f"\n{len(differ)} captures differ:")
    for d in differ:
        print(f"  {d['capture']}: tunnel {d['tunnel']}, tshark {d['tshark']}, hsrtcp {d['hsrtcp']}"
              + (f"; hsrtcp: {d['hsrtcp_error']}" if d["hsrtcp_error"] else ""))
    if a.out:
        # (no machine paths in a summary that may be committed: errors name files relative to DIR)
        text = json.dumps({"dir": a.dir.name, "strict": a.strict, "groups": groups, "differ": differ},
                          indent=1, default=str).replace(str(a.dir) + "/", "")
        a.out.write_text(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
