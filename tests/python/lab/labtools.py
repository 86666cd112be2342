"""Helpers for the lab tests: tiny hand-written Rattan configs and capture matching.

The configs are written by hand (fixed bandwidth/delay/loss, an outage as a 1 bps BwReplay
segment) so these tests do not depend on the scenario compiler.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from hsrtcp.testing import pcapio

# A small scenario file for the campaign-file tests (10 s at 300 km/h, no radio link failure).
SMALL_SCENARIO = """
[scenario]
name = "s"
seed = 42
duration_s = 10
[trip]
speed_kmh = 300
area = "rural"
[link]
base_owd_ms = 20
[handoff]
rlf_p = 0.0
"""


# A 12-s rural trip at 300 km/h whose handoffs all succeed (short outages): the scenario of
# the emulate tests, by name and seed.
RURAL_TRIP = """
[scenario]
name = "{name}"
seed = {seed}
duration_s = 12
[trip]
speed_kmh = 300
area = "rural"
[handoff]
rlf_p = 0.0
outage_median_s = 0.3
"""


def hsrtcp_run(*args, cwd=None, timeout: float = 180) -> subprocess.CompletedProcess:
    """``python -m hsrtcp ARGS`` in its own process, as a user runs it (this tree's package)."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    return subprocess.run([sys.executable, "-m", "hsrtcp", *map(str, args)], capture_output=True, text=True,
                          env=env, cwd=cwd, timeout=timeout)


def emulate_measure(path: list, run: Path, *client, **kw) -> subprocess.CompletedProcess:
    """``hsrtcp emulate PATH -o RUN -- hsrtcp measure client $HSRTCP_SERVER CLIENT...``: the
    measure client over the emulated path given by ``path`` (``["-s", scenario]`` or inline)."""
    return hsrtcp_run("emulate", *path, "-o", run, "--", sys.executable, "-m", "hsrtcp", "measure", "client",
                      "$HSRTCP_SERVER", *client, **kw)


def write_bw_trace(path: Path, segments: list[tuple[str, float]]) -> Path:
    """netem-trace JSON: [(bandwidth, seconds), ...], played once (count = 1)."""
    pattern = [{"StaticBwConfig": {"bw": bw, "duration": f"{d}s"}} for bw, d in segments]
    path.write_text(json.dumps({"RepeatedBwPatternConfig": {"count": 1, "pattern": pattern}}))
    return path


def write_loss_trace(path: Path, segments: list[tuple[float, float]]) -> Path:
    pattern = [{"StaticLossConfig": {"loss": [p], "duration": f"{d}s"}} for p, d in segments]
    path.write_text(json.dumps({"RepeatedLossPatternConfig": {"count": 1, "pattern": pattern}}))
    return path


def one_path_config(d: Path, *, down_bw: str = "bw_down.json", up_bw: str = "20Mbps", up_delay: str = "15ms",
                    down_delay: str = "25ms", down_loss: str | None = None, loss_seed: int = 7) -> Path:
    """left → up_bw → up_delay → right ; right [→ down_loss] → down_bw (BwReplay) → down_delay → left.

    The loss cell comes first on the downlink so its decision time is the moment the packet
    leaves the server (what the server capture shows), not after an unknown queueing delay.
    """
    lines = [
        '[env]', 'mode = "Isolated"', 'left_veth_count = 1', '',
        '[cells.up_bw]', 'type = "Bw"', f'bandwidth = "{up_bw}"', 'queue = "Infinite"', '',
        '[cells.up_delay]', 'type = "Delay"', f'delay = "{up_delay}"', '',
        '[cells.down_bw]', 'type = "BwReplay"', f'trace = "{down_bw}"', 'queue = "Infinite"', '',
        '[cells.down_delay]', 'type = "Delay"', f'delay = "{down_delay}"', '',
    ]
    links = ['[links]', 'left = "up_bw"', 'up_bw = "up_delay"', 'up_delay = "right"',
             'down_bw = "down_delay"', 'down_delay = "left"']
    if down_loss:
        lines += ['[cells.down_loss]', 'type = "LossReplay"', f'trace = "{down_loss}"', f'seed = {loss_seed}', '']
        links += ['right = "down_loss"', 'down_loss = "down_bw"']
    else:
        links += ['right = "down_bw"']
    path = d / "rattan.toml"
    path.write_text("\n".join(lines + links) + "\n")
    return path


def one_path_campaign(d: Path, campaign: str, *, down_bw: str = "20Mbps") -> Path:
    """``d/c.toml`` holding ``campaign`` (its TOML), over rattan.toml: one path whose
    downlink plays ``down_bw`` for 60 s (:func:`one_path_config`)."""
    write_bw_trace(d / "bw_down.json", [(down_bw, 60)])
    one_path_config(d)
    (d / "c.toml").write_text(campaign)
    return d / "c.toml"


def two_path_config(d: Path, *, p2_up_bw_trace: str | None = None) -> Path:
    """Two carriers (research/emulation.md §5.2): path 1 = 20 Mbit/s, 10 ms each way; path 2 =
    10 Mbit/s, 30 ms each way. The downlink splits by destination with a Router cell."""
    p2_up = (['type = "BwReplay"', f'trace = "{p2_up_bw_trace}"'] if p2_up_bw_trace
             else ['type = "Bw"', 'bandwidth = "10Mbps"'])
    text = "\n".join([
        '[env]', 'mode = "Isolated"', 'left_veth_count = 2', 'right_veth_count = 1', '',
        '[cells.p1_up_bw]', 'type = "Bw"', 'bandwidth = "20Mbps"', 'queue = "DropTail"',
        'queue_config = { packet_limit = 1000 }', '',
        '[cells.p1_up_delay]', 'type = "Delay"', 'delay = "10ms"', '',
        '[cells.p2_up_bw]', *p2_up, 'queue = "DropTail"', 'queue_config = { packet_limit = 1000 }', '',
        '[cells.p2_up_delay]', 'type = "Delay"', 'delay = "30ms"', '',
        '[cells.down_router]', 'type = "Router"', 'egress_connections = ["p1_dn_bw", "p2_dn_bw"]',
        'routing_table = [{ prefix = "10.1.1.0/24", interface_id = 0 }, { prefix = "10.1.2.0/24", interface_id = 1 }]', '',
        '[cells.p1_dn_bw]', 'type = "Bw"', 'bandwidth = "20Mbps"', 'queue = "DropTail"',
        'queue_config = { packet_limit = 1000 }', '',
        '[cells.p1_dn_delay]', 'type = "Delay"', 'delay = "10ms"', '',
        '[cells.p2_dn_bw]', 'type = "Bw"', 'bandwidth = "10Mbps"', 'queue = "DropTail"',
        'queue_config = { packet_limit = 1000 }', '',
        '[cells.p2_dn_delay]', 'type = "Delay"', 'delay = "30ms"', '',
        '[links]',
        'left1 = "p1_up_bw"', 'p1_up_bw = "p1_up_delay"', 'p1_up_delay = "right"',
        'left2 = "p2_up_bw"', 'p2_up_bw = "p2_up_delay"', 'p2_up_delay = "right"',
        'right = "down_router"',
        'p1_dn_bw = "p1_dn_delay"', 'p1_dn_delay = "left1"',
        'p2_dn_bw = "p2_dn_delay"', 'p2_dn_delay = "left2"',
    ]) + "\n"
    path = d / "rattan.toml"
    path.write_text(text)
    return path


def match(sent: list[pcapio.TcpPacket], received: list[pcapio.TcpPacket]) -> list[tuple[pcapio.TcpPacket, pcapio.TcpPacket | None]]:
    """Pair each sent TCP packet with its arrival on the other side of the emulator.

    Key: 4-tuple, sequence and acknowledgment numbers, IP id and payload length — the emulator
    forwards packets unchanged, and Linux gives every packet of a connection its own IP id,
    so a retransmission (same seq, new IP id) is a different packet. Unmatched = dropped.
    """
    def key(p):
        return (p.src, p.sport, p.dst, p.dport, p.seq, p.ack, p.ip_id, p.payload_len)

    arrivals: dict = {}
    for p in received:
        arrivals.setdefault(key(p), []).append(p)
    out = []
    for p in sent:
        lst = arrivals.get(key(p))
        out.append((p, lst.pop(0) if lst else None))
    return out




def have_tshark() -> bool:
    return shutil.which("tshark") is not None


def two_path_outage_config(d: Path, *, outage_start_s: float, outage_s: float, total_s: float,
                           p1_bw: str = "20Mbps") -> Path:
    """:func:`two_path_config`'s two carriers with a total outage of path 1 only (both directions,
    1 bps from ``outage_start_s`` for ``outage_s``); path 2 stays up throughout."""
    # the trace outlasts the run by 60 s (played once: count = 1)
    segs = [(p1_bw, outage_start_s), ("1bps", outage_s), (p1_bw, total_s - outage_start_s - outage_s + 60)]
    write_bw_trace(d / "p1_outage.json", segs)
    cfg = two_path_config(d)
    text = cfg.read_text()
    for cell in ("p1_up_bw", "p1_dn_bw"):
        text = text.replace(f'[cells.{cell}]\ntype = "Bw"\nbandwidth = "20Mbps"',
                            f'[cells.{cell}]\ntype = "BwReplay"\ntrace = "p1_outage.json"')
    assert text.count("p1_outage.json") == 2, text
    cfg.write_text(text)
    return cfg


def send_buffer_stall(tcpinfo, t0: float, start: float, *, stalled: int = 0, holder: int = 1,
                      min_limited_s: float = 0.3, min_held_bytes: int = 256_000) -> int | None:
    """The first whole second t >= ``start`` (on the clock of ``t0``, epoch seconds) in which
    the server's TCP_INFO shows MPTCP subflow ``stalled`` send-buffer limited (its
    ``sndbuf_limited_s`` grew in t and by at least ``min_limited_s`` over [t, t + 3)) while subflow
    ``holder`` had at least ``min_held_bytes`` queued and not sent; None if no such second.

    ``tcpinfo`` is the bundle's tcpinfo.parquet as a polars frame (rows of every flow; the
    MPTCP flow's rows carry the subflow index)."""
    import polars as pl

    rows = tcpinfo.filter(pl.col("flow_id").str.contains("mptcp")).with_columns(
        ((pl.col("ts") - t0).floor().cast(pl.Int64)).alias("sec"))
    per = rows.group_by("subflow", "sec").agg(pl.col("sndbuf_limited_s").max(), pl.col("notsent_bytes").max())
    limited = {r["sec"]: r["sndbuf_limited_s"] for r in per.filter(pl.col("subflow") == stalled).iter_rows(named=True)}
    held = {r["sec"]: r["notsent_bytes"] for r in per.filter(pl.col("subflow") == holder).iter_rows(named=True)}
    secs = sorted(limited)
    # the counter is cumulative: the growth up to second t is max(t) - max(previous sampled second)
    grew = {t: limited[t] - limited[p] for p, t in zip(secs, secs[1:])}
    for t in sorted(grew):
        # the stall starts in a second of its own growth, not in the quiet seconds before it
        if t < start or held.get(t, 0) < min_held_bytes or grew[t] < min_limited_s / 3:
            continue
        if sum(grew.get(t + k, 0.0) for k in range(3)) >= min_limited_s:
            return t
    return None
