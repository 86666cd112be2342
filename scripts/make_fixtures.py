#!/usr/bin/env python3
"""Regenerate the capture fixtures in tests/data/ (and tests/data/README.md).

Run as root from the repository root:  .venv/bin/python scripts/make_fixtures.py [NAME ...]

Every fixture is a real kernel-TCP download through the namespace testbed
(hsrtcp.testing.netbed): client — router — server, veth MTU 1500, offloads off, tcpdump -s 128
on the server's veth (s0, sender side) and the client's veth (c0, receiver side). The drops are
random (nftables numgen), so a re-run produces different packets; the JSON next to each pair
is regenerated with it and holds the parameters, the server's TCP_INFO per connection, the
router's nft drop counters and the ground truth (hsrtcp.testing.truth) — tests read their
expected values from that JSON, never from constants.

Derived files (other formats of the same packets) and crafted broken files are rebuilt from
the fresh captures. With NAME arguments only those fixtures are remade (derived files and the
README are always rebuilt from whatever is on disk); ``--derived-only`` rebuilds just those,
without root and without touching the captures; ``--retruth`` recomputes the truth section of
every NAME.json from the captures on disk (after a change of hsrtcp.testing.truth).
"""

from __future__ import annotations

import gzip
import json
import shutil
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "python"))

from hsrtcp.testing import truth as truth_mod  # noqa: E402
from hsrtcp.testing.netbed import Testbed, missing_requirements  # noqa: E402
from hsrtcp.testing.pcapio import read_records, rewrite_pcap  # noqa: E402

DATA = ROOT / "tests" / "data"
BROKEN = DATA / "broken"
CMD = ".venv/bin/python scripts/make_fixtures.py"

# name -> (testbed kwargs, transfer kwargs, what it exercises)
FIXTURES: dict[str, tuple[dict, dict, str]] = {
    "clean_200k": (
        {"cc": "cubic"}, {"nbytes": 200_000},
        "clean short download, no loss: volumes, handshake, closure, RTT baseline"),
    "drops_cubic": (
        {"cc": "cubic", "p_data": 0.02, "p_ack": 0.05}, {"nbytes": 1_000_000},
        "random data (2 %) and pure-ACK (5 %) drops, SACK+TS+WS on: retransmissions, FR vs RTO, "
        "DupACKs, data loss (M8) and ACK loss (M9) truth"),
    "reno_nosack_nots": (
        {"cc": "reno", "p_data": 0.02, "p_ack": 0.02,
         "sysctls": {"tcp_sack": 0, "tcp_timestamps": 0}}, {"nbytes": 500_000},
        "reno with SACK and timestamps off (NewReno recovery, no TS for RTT/Eifel)"),
    "zero_window": (
        {"cc": "cubic"}, {"nbytes": 300_000, "rcvbuf": 4096, "pause_after": 60_000, "pause_s": 1.0},
        "receiver stops reading for 1 s with SO_RCVBUF 4096: zero window, window probes, full window"),
    "small_50k": (
        {"cc": "cubic"}, {"nbytes": 50_000},
        "50 KB transfer (the seeds' short flows for handshake/closure metrics)"),
    "twovantage_offset": (
        {"cc": "cubic", "p_data": 0.02, "p_ack": 0.05}, {"nbytes": 1_000_000, "time_offset_s": 1.234567},
        "two-vantage pair with drops; the client capture's clock is shifted by +1.234567 s "
        "(clock alignment A9, ACK-loss attribution M14)"),
    "multi_sequential": (
        {"cc": "cubic"}, {"nbytes": 100_000, "conns": 3, "gap_s": 0.05},
        "three sequential connections (different client ports) in one capture"),
    "multi_concurrent": (
        {"cc": "cubic", "p_data": 0.01}, {"nbytes": 200_000, "conns": 3, "concurrent": True},
        "three concurrent connections, interleaved packets, 1 % data drops"),
    "reuse_4tuple": (
        {"cc": "cubic"}, {"nbytes": 100_000, "conns": 2, "gap_s": 0.1, "client_port": 40000},
        "the same 4-tuple used twice (client port 40000) after a full close: connection epochs"),
    "ipv6_drops": (
        {"cc": "cubic", "p_data": 0.02, "p_ack": 0.05}, {"nbytes": 500_000, "ipv6": True},
        "IPv6 download with data and ACK drops (no IP ID: matching by TSval)"),
    "bbr_drops": (
        {"cc": "bbr", "p_data": 0.01}, {"nbytes": 1_000_000},
        "bbr with 1 % data drops (bbr ignores loss for its rate)"),
    "ack_blackout": (
        {"cc": "cubic", "p_ack": 1.0, "drop_window": (0.3, 0.6), "rate_bps": 10_000_000},
        {"nbytes": 1_000_000},
        "every pure ACK dropped from 0.3 s to 0.6 s, 10 Mbit/s tbf toward the client: spurious "
        "RTOs caused by ACK loss (M12-M14), tbf queue drops"),
    "data_blackout": (
        {"cc": "cubic", "p_data": 1.0, "drop_window": (0.3, 1.2), "rate_bps": 10_000_000},
        {"nbytes": 1_000_000},
        "every data segment dropped from 0.3 s to 1.2 s: RTO with exponential backoff, lost "
        "retransmissions inside the timeout recovery phase (M10, M11)"),
    "ack_delay": (
        {"cc": "cubic", "rate_bps": 10_000_000, "uplink_rate_schedule": [(0.2, 2000), (0.6, None)]},
        {"nbytes": 1_000_000},
        "client→server limited to 2 kbit/s from 0.2 s to 0.6 s (tbf, 200 kB queue, nothing dropped): "
        "ACKs delayed by hundreds of ms, spurious RTO caused by RTO estimation / ACK delay "
        "(M14 RTOEI, M16 bias)"),
    "any_sll2": (
        {"cc": "cubic", "p_data": 0.01}, {"nbytes": 200_000, "client_iface": "any"},
        "client side captured with tcpdump -i any: LINUX_SLL2 (link type 276); tcptrace cannot read it"),
    "sll1": (
        {"cc": "cubic", "p_data": 0.01},
        {"nbytes": 200_000, "client_iface": "any", "client_linktype": "LINUX_SLL"},
        "client side captured with tcpdump -i any -y LINUX_SLL: Linux cooked v1 (link type 113)"),
    "nano": (
        {"cc": "cubic", "p_data": 0.01}, {"nbytes": 200_000, "nano": True},
        "nanosecond-resolution pcap (magic a1b23c4d, tcpdump --time-stamp-precision=nano)"),
}


def make(name: str) -> None:
    bed_kw, xfer_kw, _ = FIXTURES[name]
    with tempfile.TemporaryDirectory() as tmp:
        with Testbed(workdir=tmp, **bed_kw) as bed:
            run = bed.transfer(name, **xfer_kw)
        t = truth_mod.from_run(run)
        for side, src in (("server", run.server_pcap), ("client", run.client_pcap)):
            shutil.copyfile(src, DATA / f"{name}.{side}.pcap")
    meta = {
        "made_by": f"{CMD} {name}",
        "testbed": {k: v for k, v in bed_kw.items()},
        "transfer": xfer_kw,
        "params": run.params,
        "sysctls": run.sysctls,
        "notes": run.notes,
        "client_addr": run.client_addr,
        "server_addr": run.server_addr,
        "server_port": run.server_port,
        "connections": run.connections,
        "client": run.client,
        "nft": run.nft,
        "capture_stats": run.capture_stats,
        "time_offset_s": run.time_offset_s,
        "truth": t.summary(),
    }
    (DATA / f"{name}.json").write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
    tot = t.totals()
    print(f"{name}: data {tot['data_sent']} lost {tot['data_lost']} retrans {tot['data_retrans']} "
          f"spurious {tot['spurious_retrans']} acks {tot['acks_sent']} lost {tot['acks_lost']} "
          f"nft {run.nft} total_retrans {[c['tcp_info']['total_retrans'] for c in run.connections]}")


def derived() -> list[tuple[str, str, str]]:
    """Other encodings of drops_cubic.server.pcap; returns README rows."""
    rows = []
    src = DATA / "drops_cubic.server.pcap"
    ng = DATA / "drops_cubic.server.pcapng"
    if shutil.which("editcap"):
        subprocess.run(["editcap", "-F", "pcapng", str(src), str(ng)], check=True)
        rows.append((ng.name, "`editcap -F pcapng drops_cubic.server.pcap`",
                     "pcapng (SHB/IDB/EPB) reading; same packets as drops_cubic.server.pcap"))
    be = DATA / "drops_cubic.server.be.pcap"
    rewrite_pcap(src, be, big_endian=True)
    rows.append((be.name, "`scripts/pcap_byteswap.py drops_cubic.server.pcap` (hsrtcp.testing.pcapio.rewrite_pcap)",
                 "big-endian classic pcap; same packets as drops_cubic.server.pcap"))
    two = DATA / "two_interfaces.pcapng"
    if shutil.which("mergecap"):
        subprocess.run(["mergecap", "-F", "pcapng", "-w", str(two), str(DATA / "any_sll2.client.pcap"),
                        str(DATA / "any_sll2.server.pcap")], check=True)
        rows.append((two.name, "`mergecap -F pcapng any_sll2.client.pcap any_sll2.server.pcap`",
                     "pcapng with two interfaces of different link types (LINUX_SLL2 and Ethernet), "
                     "interleaved by time; every packet appears twice (both vantages); libpcap/tcpdump "
                     "refuse mixed link types, tshark reads it"))
    for f in (src, ng):
        if f.exists():
            gz = f.with_name(f.name + ".gz")
            with open(f, "rb") as i, open(gz, "wb") as raw, \
                    gzip.GzipFile(fileobj=raw, mode="wb", mtime=0, filename="") as o:
                shutil.copyfileobj(i, o)  # mtime 0: identical bytes on every re-run
            rows.append((gz.name, f"gzip of {f.name}", "transparent gzip decompression"))
    return rows


def broken() -> list[tuple[str, str, str]]:
    """Crafted damaged files made from clean_200k.server.pcap (and its pcapng conversion)."""
    BROKEN.mkdir(exist_ok=True)
    good = (DATA / "clean_200k.server.pcap").read_bytes()
    recs = list(read_records(DATA / "clean_200k.server.pcap"))
    rows = []

    def put(name, data, what):
        (BROKEN / name).write_bytes(data)
        rows.append((f"broken/{name}", "crafted by scripts/make_fixtures.py from clean_200k.server.pcap", what))

    put("wrong_magic.pcap", b"ABCD" + good[4:], "unknown magic number: rejected at offset 0")
    put("truncated_global_header.pcap", good[:10], "file ends inside the 24-byte global header")
    cut = recs[5].offset + 16 + len(recs[5].data) // 2
    put("record_cut.pcap", good[:cut],
        f"last record (6th, at offset {recs[5].offset}) cut in the middle of its data: 5 good packets, then a truncation error")
    b = bytearray(good)
    struct.pack_into("<I", b, recs[3].offset + 8, 0x7FFFFFFF)
    put("absurd_caplen.pcap", bytes(b[: recs[6].offset]),
        f"4th record (offset {recs[3].offset}) claims caplen 0x7fffffff: 3 good packets, then an error")
    put("empty.pcap", b"", "zero-byte file")
    put("header_only.pcap", good[:24], "valid global header, no records (zero packets, not an error)")
    # garbage link-layer and header bytes inside otherwise valid records
    frames = [(r.ts_ns, bytearray(r.data)) for r in recs[:12]]
    frames[1] = (frames[1][0], bytearray(b"\xde\xad\xbe\xef" * 10))  # random bytes, odd ethertype
    frames[2] = (frames[2][0], frames[2][1][:10])  # shorter than an Ethernet header
    frames[3][1][14] = 0x43  # IPv4 with IHL 3 (< 5)
    frames[4][1][14 + 20 + 12] = 0x20  # TCP data offset 2 (< 5)
    struct.pack_into("!H", frames[5][1], 14 + 2, 65535)  # IP total length beyond the frame
    frames[6][1][12:14] = b"\x08\x00"
    frames[6][1][14] = 0x65  # version 6 inside an IPv4 ethertype
    from hsrtcp.testing.pcapio import write_pcap

    tmp = BROKEN / "garbage_linklayer.pcap"
    write_pcap(tmp, [(t, bytes(d)) for t, d in frames], snaplen=128,
               orig_lens=[r.orig_len for r in recs[:12]])
    rows.append(("broken/garbage_linklayer.pcap", "crafted from the first 12 records of clean_200k.server.pcap",
                 "records 2-7 malformed (random bytes, 10-byte frame, IPv4 IHL 3, TCP doff 2, IP total "
                 "length 65535, IPv6 version in an IPv4 ethertype); records 1 and 8-12 valid"))
    ng = DATA / "drops_cubic.server.pcapng"
    if ng.exists():
        b = bytearray(ng.read_bytes())
        shb_len = struct.unpack_from("<I", b, 4)[0]
        idb_len = struct.unpack_from("<I", b, shb_len + 4)[0]
        first_epb = shb_len + idb_len
        struct.pack_into("<I", b, first_epb + 4, 7)
        (BROKEN / "pcapng_bad_block_length.pcapng").write_bytes(bytes(b[: first_epb + 4096]))
        rows.append(("broken/pcapng_bad_block_length.pcapng", "crafted from drops_cubic.server.pcapng",
                     f"first packet block (offset {first_epb}) has block length 7 (not a multiple of 4)"))
    return rows


def readme(extra: list[tuple[str, str, str]]) -> None:
    lines = [
        "# Test fixtures",
        "",
        "Made by `scripts/make_fixtures.py` (root, namespace testbed `hsrtcp.testing.netbed`):",
        "real Linux kernel TCP (kernel 6.x), client — router — server namespaces, veth MTU 1500,",
        "TSO/GSO/GRO/SG/checksum offloads off, nftables random drop in the router",
        "(`numgen random mod 1000000 < K`) of server→client data segments and client→server pure",
        "ACKs, captures with `tcpdump -s 128 --immediate-mode` on the server's veth (`*.server.pcap`,",
        "sender side) and the client's veth (`*.client.pcap`, receiver side); addresses 10.0.1.2",
        "(client) and 10.0.2.2:5201 (server), IPv6 fd00:1::2 and fd00:2::2. Regenerate all with",
        f"`{CMD}` or one with `{CMD} NAME` (drops are random: the packets change, and so does the JSON).",
        "",
        "Each `NAME.json` holds the exact parameters, the server socket's TCP_INFO per connection",
        "(`connections[i].tcp_info`: total_retrans, dsack_dups, rto, rtt, segs_out, data_segs_out …,",
        "microseconds as the kernel reports them), the client results, the router's nft counters",
        "(`nft.data_dropped`, `nft.ack_dropped`: exact drop counts) and the ground truth of",
        "`hsrtcp.testing.truth` (`truth.totals`, `truth.connections`). Tests take expected values from",
        "it.",
        "",
        "| file | origin | exercises |",
        "|---|---|---|",
    ]
    for name, (bed_kw, xfer_kw, what) in FIXTURES.items():
        origin = f"testbed {json.dumps(bed_kw)} transfer {json.dumps(xfer_kw)}"
        for suffix, side in ((".server.pcap", "server side (sender)"), (".client.pcap", "client side (receiver)"),
                             (".json", "metadata + TCP_INFO + nft counters + truth")):
            if (DATA / (name + suffix)).exists():
                lines.append(f"| {name}{suffix} | {origin}; {side} | {what} |")
    for f, origin, what in extra:
        lines.append(f"| {f} | {origin} | {what} |")
    lines += subdirectory_rows()
    lines.append("")
    (DATA / "README.md").write_text("\n".join(lines))


def subdirectory_rows() -> list[str]:
    """Rows for the folders other generators fill (mptcp/, study/ ...): each has a README of
    its own that says how its files were made; this index points there."""
    rows = []
    for sub in sorted(p for p in DATA.iterdir() if p.is_dir() and (p / "README.md").is_file()):
        for f in sorted(q for q in sub.rglob("*") if q.is_file() and q.name != "README.md"):
            rel = f.relative_to(DATA).as_posix()
            rows.append(f"| {rel} | see {sub.name}/README.md | described there |")
    return rows


def main(argv: list[str]) -> int:
    if argv == ["--retruth"]:
        # recompute the "truth" section of every NAME.json from the captures on disk (after a
        # change of hsrtcp.testing.truth), keeping the packets and the kernel/router witnesses
        for js in sorted(DATA.glob("*.json")):
            meta = json.loads(js.read_text())
            t = truth_mod.compute(DATA / f"{js.stem}.server.pcap", DATA / f"{js.stem}.client.pcap",
                                  client_time_offset_s=meta.get("time_offset_s") or 0.0)
            meta["truth"] = t.summary()
            js.write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        return 0
    if argv == ["--derived-only"]:
        # rebuild derived encodings, crafted files and the README from the captures on disk
        readme(derived() + broken())
        return 0
    why = missing_requirements()
    names = argv or list(FIXTURES)
    unknown = [n for n in names if n not in FIXTURES]
    if unknown:
        print(f"unknown fixture(s): {', '.join(unknown)}; known: {', '.join(FIXTURES)}", file=sys.stderr)
        return 2
    if why:
        print(f"cannot make fixtures: {why}", file=sys.stderr)
        return 1
    DATA.mkdir(parents=True, exist_ok=True)
    for n in names:
        make(n)
    rows = derived() + broken()
    readme(rows)
    total = sum(p.stat().st_size for p in DATA.rglob("*") if p.is_file())
    print(f"tests/data: {total / 1e6:.2f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
