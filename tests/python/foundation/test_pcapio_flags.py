"""The TCP flags of hsrtcp.pcapio's packets (the dpkt reader the lab, the audit and the truth
use), by name: each property reads its own bit of RFC 9293's header."""

from __future__ import annotations

import pytest

from hsrtcp import pcapio


@pytest.mark.parametrize("bits, want", [
    (0x01, {"fin"}), (0x02, {"syn"}), (0x04, {"rst"}), (0x10, {"has_ack"}),
    (0x12, {"syn", "has_ack"}), (0x14, {"rst", "has_ack"}), (0x08, set()),  # PSH alone
])
def test_each_flag_property_reads_its_bit(bits, want):
    p = pcapio.TcpPacket(0, 4, "10.0.0.1", "10.0.0.2", 1, 2, 0, 0, bits, 0, 0, None, 5)
    assert {n for n in ("syn", "fin", "rst", "has_ack") if getattr(p, n)} == want


def test_a_clean_transfer_opens_and_closes_once(data_dir):
    # clean_200k (tests/data/README.md): handshake, 200 kB, FIN each way, no reset
    ps = list(pcapio.read_tcp(data_dir / "clean_200k.server.pcap"))
    assert [(p.syn, p.has_ack) for p in ps[:3]] == [(True, False), (True, True), (False, True)]
    assert (sum(p.fin for p in ps), sum(p.rst for p in ps), sum(p.syn for p in ps)) == (2, 0, 2)
