"""Build the GSMTAP fixtures of tests/data/radio (README.md there) and their expected tables.

    .venv/bin/python tests/data/radio/make_fixtures.py

Every message is encoded with pycrate's 3GPP RRC definitions (hsrtcp.context.rrc builders)
and written as GSMTAP in a pcap (hsrtcp.context.gsmtap.write_gsmtap). The expected handoff
tables (``*.handoffs.csv``) are written from the event lists below — what each scripted
event is by construction — not by the reader under test. Same script, same bytes.
"""

from __future__ import annotations

import csv
import json
import struct
from pathlib import Path

from hsrtcp.context import rrc
from hsrtcp.context.gsmtap import gsmtap_v2, udp_ipv4, write_gsmtap

HERE = Path(__file__).resolve().parent
T0 = 1714816800.0  # 2024-05-04 10:00:00 UTC
EARFCN = 1300      # the serving channel the GSMTAP headers give (as SCAT writes them)
COLUMNS = ("ts", "type", "old_cid", "new_cid", "old_generation", "new_generation", "target_pci",
           "target_arfcn", "execution_s", "cause", "ping_pong")


def _row(ts, kind, old, new, og, ng, tpci=None, tarfcn=None, ex=None, cause=None, pp=False):
    return dict(ts=T0 + ts, type=kind, old_cid=old, new_cid=new, old_generation=og, new_generation=ng,
                target_pci=tpci, target_arfcn=tarfcn, execution_s=ex, cause=cause, ping_pong=pp)


def hsr_trip():
    """A 120-s LTE/EN-DC train trip: measurement reports every 0.5 s and the events below."""
    m = [(T0 + k * 0.5, "LTE", "UL_DCCH", rrc.lte_measurement_report(1, 40 + k % 20, 18), EARFCN)
         for k in range(240)]

    def cmd(t, payload, arfcn=EARFCN):
        m.append((T0 + t, "LTE", "DL_DCCH", payload, arfcn))

    def done(t, tid, arfcn=EARFCN):
        m.append((T0 + t, "LTE", "UL_DCCH", rrc.lte_reconfiguration_complete(tid), arfcn))

    rows = []
    # 1. intra-frequency handover to PCI 101 (no carrierFreq: the source's EARFCN 1300)
    cmd(10.0, rrc.lte_reconfiguration(1, target_pci=101)), done(10.035, 1)
    rows.append(_row(10.0, "intra_freq", None, 101, "4G", "4G", 101, EARFCN, 0.035))
    # 2. inter-frequency handover to PCI 202 on EARFCN 3050
    cmd(22.0, rrc.lte_reconfiguration(2, target_pci=202, target_earfcn=3050)), done(22.047, 2, 3050)
    rows.append(_row(22.0, "inter_freq", 101, 202, "4G", "4G", 202, 3050, 0.047))
    # 3. EN-DC: NR secondary cell group added (NR PCI 500, SSB ARFCN 632628)
    cmd(30.0, rrc.lte_reconfiguration(3, scg=(500, 632628)), 3050), done(30.042, 3, 3050)
    rows.append(_row(30.0, "scg_add", 202, 202, "4G", "5G NSA", 500, 632628, 0.042))
    # 4. handover of the LTE anchor while in EN-DC (NSA handover), SCG moved to NR PCI 501
    cmd(41.0, rrc.lte_reconfiguration(0, target_pci=303, target_earfcn=3050, scg=(501, 632628)), 3050)
    done(41.043, 0, 3050)
    rows.append(_row(41.0, "mcg_ho", 202, 303, "5G NSA", "5G NSA", 303, 3050, 0.043))
    # 5. SCG modification: the NR primary cell changes to PCI 502
    cmd(50.0, rrc.lte_reconfiguration(1, scg=(502, 632628)), 3050), done(50.033, 1, 3050)
    rows.append(_row(50.0, "scg_modify", 303, 303, "5G NSA", "5G NSA", 502, 632628, 0.033))
    # 6. SCG release
    cmd(58.0, rrc.lte_reconfiguration(2, scg="release"), 3050), done(58.0535, 2, 3050)
    rows.append(_row(58.0, "scg_release", 303, 303, "5G NSA", "4G", None, None, 0.0535))
    # 7. a handover that fails: re-establishment (cause handoverFailure) from the source PCI 303
    cmd(64.0, rrc.lte_reconfiguration(3, target_pci=404), 3050)
    m.append((T0 + 64.8, "LTE", "UL_CCCH", rrc.lte_reestablishment_request(303, "handoverFailure"), 3050))
    m.append((T0 + 64.9, "LTE", "UL_DCCH", rrc.lte_reestablishment_complete(0), 3050))
    rows.append(_row(64.0, "intra_freq", 303, 404, "4G", "4G", 404, 3050, None, "failed"))
    rows.append(_row(64.8, "reestablishment", 303, None, "4G", "4G", None, None, 0.1, "handoverFailure"))
    # 8. from the re-established (unnamed) cell to PCI 101 on EARFCN 1300
    cmd(75.0, rrc.lte_reconfiguration(0, target_pci=101, target_earfcn=EARFCN), 3050), done(75.033, 0)
    rows.append(_row(75.0, "inter_freq", None, 101, "4G", "4G", 101, EARFCN, 0.033))
    # 9. to PCI 55 and back to 101 within 10 s: the return is a ping-pong
    cmd(80.0, rrc.lte_reconfiguration(1, target_pci=55)), done(80.030, 1)
    rows.append(_row(80.0, "intra_freq", 101, 55, "4G", "4G", 55, EARFCN, 0.030))
    cmd(84.0, rrc.lte_reconfiguration(2, target_pci=101)), done(84.031, 2)
    rows.append(_row(84.0, "intra_freq", 55, 101, "4G", "4G", 101, EARFCN, 0.031, pp=True))
    # 10. an SCG added and released 4 s later: the release returns to the state before (ping-pong)
    cmd(95.0, rrc.lte_reconfiguration(3, scg=(510, 632628))), done(95.042, 3)
    rows.append(_row(95.0, "scg_add", 101, 101, "4G", "5G NSA", 510, 632628, 0.042))
    cmd(99.0, rrc.lte_reconfiguration(0, scg="release")), done(99.05, 0)
    rows.append(_row(99.0, "scg_release", 101, 101, "5G NSA", "4G", None, None, 0.05, pp=True))
    # 11. inter-RAT handover to UMTS (no completion on the LTE side)
    cmd(110.0, rrc.lte_mobility_from_eutra(1, "utra"))
    rows.append(_row(110.0, "inter_rat", 101, None, "4G", "3G"))
    # other traffic of a diagnostic capture, counted and left aside: LTE paging, a GSM frame
    extra = [(T0 + 5.25, udp_ipv4(_v2(0x0D, 6, b"\x40\x00"))), (T0 + 5.5, udp_ipv4(_v2(0x01, 1, bytes(23))))]
    return m, extra, rows


def _v2(gtype: int, sub: int, payload: bytes) -> bytes:
    """A GSMTAP v2 header of any type and subtype."""
    return struct.pack(">BBBBHbbIBBBB", 2, 4, gtype, 0, 0, 0, 0, 0, sub, 0, 0, 0) + payload


def sa_trip():
    """5G stand-alone: NR RRC in GSMTAP v3, measurement reports every 0.5 s for 40 s."""
    m = [(T0 + k * 0.5, "NR", "UL_DCCH", rrc.nr_measurement_report(1), 640000) for k in range(80)]
    rows = []

    def ho(t, tid, pci, ssb, ex, old, pp=False):
        m.append((T0 + t, "NR", "DL_DCCH", rrc.nr_reconfiguration(tid, pci, ssb), ssb))
        m.append((T0 + t + ex, "NR", "UL_DCCH", rrc.nr_reconfiguration_complete(tid), ssb))
        rows.append(_row(t, "sa_ho", old, pci, "5G SA", "5G SA", pci, ssb, ex, pp=pp))

    ho(5.0, 0, 700, 640000, 0.066, None)
    ho(15.0, 1, 701, 640000, 0.07, 700)
    m.append((T0 + 25.0, "NR", "UL_CCCH", rrc.nr_reestablishment_request(701, "otherFailure"), 640000))
    m.append((T0 + 25.2, "NR", "UL_DCCH", rrc.nr_reestablishment_complete(0), 640000))
    rows.append(_row(25.0, "reestablishment", 701, None, "5G SA", "5G SA", None, None, 0.2, "otherFailure"))
    ho(35.0, 2, 702, 650000, 0.061, None)
    return sorted(m, key=lambda x: x[0]), rows


def bad_input():
    """Valid handoffs with bad datagrams between them: each reason once or more (bad_input.json)."""
    good = [(T0 + 1.0, "LTE", "DL_DCCH", rrc.lte_reconfiguration(1, target_pci=11), EARFCN),
            (T0 + 1.04, "LTE", "UL_DCCH", rrc.lte_reconfiguration_complete(1), EARFCN),
            (T0 + 9.0, "LTE", "DL_DCCH", rrc.lte_reconfiguration(2, target_pci=12), EARFCN),
            (T0 + 9.05, "LTE", "UL_DCCH", rrc.lte_reconfiguration_complete(2), EARFCN)]
    recon = rrc.lte_reconfiguration(3, target_pci=13)
    ho = gsmtap_v2("DL_DCCH", recon, EARFCN)
    bad = [
        # an RRC reconfiguration cut to 3 bytes: the type is readable, the message is not
        (T0 + 2.0, udp_ipv4(gsmtap_v2("DL_DCCH", recon[:3], EARFCN)), "undecodable LTE RRC"),
        (T0 + 2.5, udp_ipv4(gsmtap_v2("DL_DCCH", b"", EARFCN)), "undecodable LTE RRC"),
        # GSMTAP type 0x7f does not exist
        (T0 + 3.0, udp_ipv4(ho[:2] + b"\x7f" + ho[3:]), "unknown GSMTAP type"),
        # the UDP header says 40 bytes more than the packet holds
        (T0 + 4.0, _longer_udp(udp_ipv4(ho), 40), "truncated UDP payload"),
        # a GSMTAP header whose length field runs past the datagram
        (T0 + 5.0, udp_ipv4(ho[:1] + bytes([60]) + ho[2:16]), "truncated GSMTAP header"),
        (T0 + 6.0, udp_ipv4(b"\x09" + ho[1:]), "unknown GSMTAP version"),
    ]
    msgs = sorted([(t, p) for t, p, _ in bad] + [(g[0], udp_ipv4(gsmtap_v2(g[2], g[3], g[4]))) for g in good])
    counts: dict[str, int] = {}
    for _, _, reason in bad:
        counts[reason] = counts.get(reason, 0) + 1
    rows = [_row(1.0, "intra_freq", None, 11, "4G", "4G", 11, EARFCN, 0.04),
            _row(9.0, "intra_freq", 11, 12, "4G", "4G", 12, EARFCN, 0.05)]
    return msgs, counts, rows


def _longer_udp(ip: bytes, extra: int) -> bytes:
    """``ip`` with its UDP length field ``extra`` bytes larger than the payload it carries."""
    ulen = struct.unpack_from(">H", ip, 24)[0]
    return ip[:24] + struct.pack(">H", ulen + extra) + ip[26:]


def _write_rows(path: Path, rows: list[dict]) -> None:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(COLUMNS)
        for r in rows:
            w.writerow(["" if r[c] is None else (f"{r[c]:.6f}" if isinstance(r[c], float) else str(r[c]).lower()
                                                 if isinstance(r[c], bool) else r[c]) for c in COLUMNS])


def main() -> None:
    msgs, extra, rows = hsr_trip()
    write_gsmtap(HERE / "hsr_trip.gsmtap.pcap", sorted(msgs + extra, key=lambda x: x[0]))
    _write_rows(HERE / "hsr_trip.handoffs.csv", rows)
    msgs, rows = sa_trip()
    write_gsmtap(HERE / "sa_trip.gsmtap.pcap", msgs)
    _write_rows(HERE / "sa_trip.handoffs.csv", rows)
    msgs, counts, rows = bad_input()
    write_gsmtap(HERE / "bad_input.gsmtap.pcap", msgs)
    _write_rows(HERE / "bad_input.handoffs.csv", rows)
    (HERE / "bad_input.json").write_text(json.dumps({"left_aside": counts}, indent=2, sort_keys=True) + "\n")


if __name__ == "__main__":
    main()
