"""The packets rows a matched row's fate counters are made of (shared by the fate tests)."""

from __future__ import annotations

import polars as pl


def pure_ack(p):
    # ACK flag only among SYN/FIN/RST/ACK, no payload (docs/metrics.md M9)
    return (p["len"] == 0) & ((p["flags"] & 0x17) == 16)


def sides(m: dict, packets: pl.DataFrame):
    """For matched row ``m``: the rows of the data sender's flow, of the data receiver's flow,
    the data segments at the sender and the pure ACKs at the receiver."""
    ddir = m["matched_data_dir"]
    rdir = "c2s" if ddir == "s2c" else "s2c"
    snd, rcv = ((m["server_flow_id"], m["client_flow_id"]) if ddir == "s2c"
                else (m["client_flow_id"], m["server_flow_id"]))
    at_snd = packets.filter(pl.col("flow_id") == snd)
    at_rcv = packets.filter(pl.col("flow_id") == rcv)
    data = at_snd.filter(pl.col("dir") == ddir, pl.col("len") > 0)
    acks = at_rcv.filter(pl.col("dir") == rdir, pure_ack(at_rcv))
    return at_snd, at_rcv, data, acks
