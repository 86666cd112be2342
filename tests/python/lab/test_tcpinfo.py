"""TCP_INFO decoding, witnessed by `ss -ti` on the same live socket (loopback, no root)."""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import time

import pytest

from hsrtcp.lab import tcpinfo


@pytest.fixture
def pair():
    lst = socket.socket()
    lst.bind(("127.0.0.1", 0))
    lst.listen()
    cli = socket.socket()
    cli.setsockopt(socket.IPPROTO_TCP, 13, b"reno")
    cli.connect(lst.getsockname())
    srv, _ = lst.accept()
    yield cli, srv
    for s in (cli, srv, lst):
        s.close()


def test_fields_agree_with_ss(pair):
    if shutil.which("ss") is None:
        pytest.skip("ss (iproute2) not installed")
    cli, srv = pair
    cli.sendall(b"x" * 200_000)
    got = 0
    while got < 200_000:
        got += len(srv.recv(1 << 20))
    deadline = time.monotonic() + 5  # wait until everything is acknowledged: counters settle
    while tcpinfo.read(cli)["bytes_acked"] < 200_000 and time.monotonic() < deadline:
        time.sleep(0.01)
    info = tcpinfo.read(cli)
    port = cli.getsockname()[1]
    out = subprocess.run(["ss", "-tin", "state", "established", "sport", "=", f":{port}"],
                         capture_output=True, text=True, check=True).stdout
    ss = dict(re.findall(r"\b(cwnd|mss|rcvmss|advmss|pmtu|bytes_sent|segs_out|rcv_space):(\d+)", out))
    assert info["state"] == 1  # established
    assert info["snd_mss"] == int(ss["mss"])
    assert info["rcv_mss"] == int(ss["rcvmss"])
    assert info["advmss"] == int(ss["advmss"])
    assert info["pmtu"] == int(ss["pmtu"])
    assert info["rcv_space"] == int(ss["rcv_space"])
    # counters may move between the two reads only if traffic flows; it does not now
    assert info["bytes_sent"] == int(ss["bytes_sent"])
    assert info["segs_out"] == int(ss["segs_out"])
    rto_ms = float(re.search(r"\brto:([\d.]+)", out).group(1))
    assert info["rto_s"] == pytest.approx(rto_ms / 1000, abs=1e-3)
    assert info["snd_wscale"] == int(re.search(r"wscale:(\d+),", out).group(1))


def test_offsets_are_the_kernels():
    # include/uapi/linux/tcp.h: the offsets the layout's sizes must add up to
    want = {"rto_s": 8, "snd_mss": 16, "last_data_sent_s": 44, "pmtu": 60, "rtt_s": 68, "snd_ssthresh": 76,
            "rcv_rtt_s": 92, "pacing_rate_bps": 104, "bytes_acked": 120, "segs_out": 136, "min_rtt_s": 148,
            "delivery_rate_bps": 160, "busy_time_s": 168, "delivered": 192, "bytes_sent": 200,
            "dsack_dups": 216, "total_rto": 240, "total_rto_time_s": 244}
    offsets = {f.name: f.offset for f in tcpinfo._FIELDS}
    assert {k: offsets[k] for k in want} == want
    assert len(tcpinfo._FIELDS) == 57 and offsets["total_rto_time_s"] + 4 == 248  # sizeof(struct tcp_info) with total_rto_time


def test_units_and_missing_fields():
    info = tcpinfo.decode(bytes(104))  # an old kernel's shorter struct
    assert info["total_retrans"] == 0
    assert info["delivery_rate_bps"] is None and info["dsack_dups"] is None
    assert info["snd_ssthresh"] == 0
    raw = bytearray(256)
    raw[8:12] = (204_000).to_bytes(4, "little")  # rto 204 ms in µs
    raw[76:80] = (0x7FFFFFFF).to_bytes(4, "little")  # "infinite" ssthresh
    raw[160:168] = (1_250_000).to_bytes(8, "little")  # delivery rate 1.25 MB/s
    raw[112:120] = (2**64 - 1).to_bytes(8, "little")  # max pacing rate: unlimited
    info = tcpinfo.decode(bytes(raw))
    assert info["rto_s"] == 0.204
    assert info["snd_ssthresh"] is None
    assert info["delivery_rate_bps"] == 10_000_000
    assert info["max_pacing_rate_bps"] is None


def test_mptcp_subflows_on_loopback():
    try:
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    except OSError:
        pytest.skip("no MPTCP in this kernel")
    lst.bind(("127.0.0.1", 0))
    lst.listen()
    cli = socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262)
    cli.connect(lst.getsockname())
    srv, _ = lst.accept()
    cli.sendall(b"y" * 50_000)
    srv.recv(1 << 20)
    subs = tcpinfo.read_mptcp_subflows(cli)
    assert len(subs) == 1 and subs[0]["state"] == 1 and subs[0]["bytes_acked"] > 0
    plain = socket.socket()
    assert tcpinfo.read_mptcp_subflows(plain) == []
    for s in (cli, srv, lst, plain):
        s.close()
