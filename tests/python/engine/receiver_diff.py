"""Diagnostic (not a test): per-packet comparison of the engine's receiver-side
retransmissions with the two-capture truth, for a pair STEM.server.pcap + STEM.client.pcap
of one connection (tests/data fixtures, or the live testbed's captures). The truth comes
from the server capture (hsrtcp.testing.truth, receiver_truth.py), never from the engine.

    PYTHONPATH=python python tests/python/engine/receiver_diff.py tests/data/reno_nosack_nots

Prints the summed counts (retransmissions, DupACKs: truth / engine) and, for every
retransmission only one side has, the arrivals around it with their IP IDs, send times and
whether the truth calls them re-sends (how the cases in docs/engine.md were found).
"""
import sys
from pathlib import Path
sys.path.insert(0, str(Path(__file__).resolve().parent))
import polars as pl
import hsrtcp
from hsrtcp.testing import truth
from checks import flow_row
from receiver_truth import dupacks_sent, retransmissions_arrived

def main(stem):
    srv, cli = f"{stem}.server.pcap", f"{stem}.client.pcap"
    ct = truth.compute(srv, cli).connections[0]
    ds = hsrtcp.analyze([cli], vantage="client")
    row = flow_row(ds, ct.client_port)
    ev = ds.events.filter(pl.col("flow_id") == row["flow_id"])
    retx = ev.filter(pl.col("kind") == "retransmission")
    eng = {(int(r["seq_start"]), round(r["ts"], 6)): r for r in retx.to_dicts()}
    tru = {(d.seq, round(d.ts_arrived, 6)): d for d in ct.data if d.retrans and d.arrived}
    rt, dt = retransmissions_arrived(ct), dupacks_sent(srv, cli, ct)
    print(f"{stem}: retx truth {rt} engine {row['retransmissions']}  dupacks truth {dt} engine {row['dupacks']}")
    # arrivals in client order, to show context
    arr = sorted((d for d in ct.data if d.arrived), key=lambda d: d.ts_arrived)
    idx = {(d.seq, round(d.ts_arrived, 6)): i for i, d in enumerate(arr)}
    for k in sorted(set(tru) ^ set(eng), key=lambda k: k[1]):
        side = "MISSED(truth only)" if k in tru else "EXTRA(engine only)"
        r = eng.get(k)
        print(f"  {side} seq {k[0]} at {k[1]:.6f} engine class={r and r['class']} cause={r and r['cause']}")
        i = idx.get(k)
        if i is None:
            continue
        for d in arr[max(0, i - 6): i + 3]:
            mark = ">>" if d is arr[i] else "  "
            print(f"     {mark} arr {d.ts_arrived:.6f} sent {d.ts_sent:.6f} seq {d.seq} len {d.length} ipid {d.ip_id} retrans {d.retrans} spur {d.spurious} prev_sent {d.prev_sent_ts}")

if __name__ == "__main__":
    for s in sys.argv[1:]:
        main(s)
