"""Which congestion control a sender ran, inferred from a capture (issue 36 item 4).

Published methods identify a sender's congestion control from how its window reacts to loss
(the multiplicative decrease: Reno halves, CUBIC keeps 0.7 of the window, BBR keeps its
model's window and does not back off) and from BBR's own rhythm (ProbeRTT: inflight cut to
four packets for at least 200 ms about every 10 s). hsrtcp measures both on every flow whose
capture is at the sender:

* **loss responses**: a recovery episode starts with the first retransmission while no
  episode is open (bytes in flight then: W), and ends when the cumulative ACK passes
  everything sent before it; the flight after it is the largest bytes in flight at the ACKs
  of the next smoothed RTT (W'; a window-limited sender fills its window once per RTT). Episodes ended by a timeout (a retransmission of the first
  unacknowledged byte after a silence longer than max(200 ms, 2 RTT)) reset the window to
  one segment whatever the algorithm: they are not counted; nor are episodes that start with
  fewer than 8 segments in flight (whole segments blur the ratio), or after which the sender
  ran out of data (its flight then shows the application, not the window), or whose next RTT
  had fewer than 4 ACKs or a median flight under 2 segments (a path faster than the sender:
  the window limits nothing). The response is
  the median of W'/W over the episodes.
* **ProbeRTT dips**: runs of ACKs during which bytes in flight stay at or under 4 segments
  for at least 150 ms and then grow again (a transfer's idle end never does), not following a
  timeout (whose slow restart also runs on a few segments).

Decision (:func:`decide`), "unknown" rather than a guess: at least :data:`MIN_EPISODES`
episodes are needed; a median response below 0.55 is ``reno`` (β = 0.5), 0.55–0.8 ``cubic``
(β = 0.7), 0.8 or more ``bbr`` (no decrease; thresholds: :data:`RENO_BELOW`); ProbeRTT dips spaced 8–12 s apart also say
``bbr``; otherwise ``unknown``. hsrbbr (the project's BBR variant) is ``bbr`` to this method.
A capture at the receiver cannot see the flight (what was sent but has not arrived): its
flows are ``unknown`` (vantage). The thresholds and the accuracy per scenario are measured
in the lab, where every run's congestion control is known: docs/passive.md.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

import dpkt
import polars as pl

#: episodes needed before the response is trusted
MIN_EPISODES = 3
#: a loss episode counts when the flight at its start was at least this many segments
MIN_WINDOW_SEGMENTS = 8
#: Response thresholds: midpoints between the medians of training runs (reno 0.44, 0.50;
#: cubic 0.59, 0.68; bbr 0.93, 0.97 at 5 and 20 Mbit/s, 0 and 0.5 % random loss), runs that are
#: not in the validation campaign of docs/passive.md. Below β (0.5, 0.7) because the flight
#: when a loss is found still counts the segments SACKed beyond the hole.
RENO_BELOW = 0.55
CUBIC_BELOW = 0.80
#: ACKs needed in the RTT after an episode, and a median flight of 2 segments, to read the window
MIN_ACKS_AFTER = 4
#: ProbeRTT: flight at or under this many segments ...
PROBE_RTT_SEGMENTS = 4
#: ... for at least this long (BBR holds it 200 ms; a capture sees the ACK-side view)
PROBE_RTT_MIN_S = 0.15

SCHEMA_VERSION = 1
CONGESTION_SCHEMA = {"flow_id": pl.UInt64, "capture": pl.String, "congestion_control": pl.String,
                     "reason": pl.String, "episodes": pl.UInt32, "response_median": pl.Float64,
                     "probe_rtt_dips": pl.UInt32}


@dataclass
class _Sender:
    """The data direction of one flow, seen at its sender."""

    flow_id: int
    first_ts: float
    last_ts: float
    rtt: float
    mss: int
    snd_max: int | None = None  # relative to the first data byte seen (mod 2^32 unwrapped)
    base: int | None = None
    una: int = 0
    last_progress: float = 0.0
    episode: tuple[float, int, int] | None = None  # (start, W, recovery point)
    after: tuple[float, list[int], int, int] | None = None  # (end, flights, W, snd_max then) of the episode just closed
    responses: list[float] = field(default_factory=list)
    timeouts: int = 0
    last_timeout: float = float("-inf")
    low_since: float | None = None
    dips: list[float] = field(default_factory=list)

    def _rel(self, seq: int) -> int:
        if self.base is None:
            self.base = seq
        d = (seq - self.base) % 2**32
        return d if d < 2**31 else d - 2**32

    def data(self, ts: float, seq: int, n: int) -> None:
        s = self._rel(seq)
        end = s + n
        if self.snd_max is None:
            self.snd_max, self.una, self.last_progress = end, s, ts
            return
        if s < self.snd_max:
            timeout = s <= self.una and ts - self.last_progress > max(0.2, 2 * self.rtt)
            if timeout:
                # the window restarts at one segment whatever the algorithm; also when the
                # episode began with a tail loss probe or a fast retransmit
                self.timeouts += 1
                self.last_timeout = ts
                self.episode = (ts, -1, max(self.snd_max, self.episode[2] if self.episode else 0))
                self.after = None
            elif self.episode is None:
                self.episode = (ts, self.snd_max - self.una, self.snd_max)
                self.after = None
        if end > self.snd_max:
            self.snd_max = end

    def ack(self, ts: float, ack: int) -> None:
        if self.snd_max is None:
            return
        a = self._rel(ack)
        if a > self.una:
            self.una, self.last_progress = a, ts
        flight = max(0, self.snd_max - self.una)  # a FIN's ACK passes the last data byte
        if self.episode is not None and self.una >= self.episode[2]:
            start, w, _ = self.episode
            self.episode = None
            # a small window's reaction is lost in rounding to whole segments
            if w >= MIN_WINDOW_SEGMENTS * self.mss:
                self.after = (ts, [], w, self.snd_max)
        elif self.after is not None:
            end, flights, w, sent_then = self.after
            if ts - end <= self.rtt:
                flights.append(flight)
            else:
                # only a sender that kept sending shows its window: one that ran out of data
                # (the transfer's end, an application pause) shows the application's
                # and one whose flight stays near empty (a path faster than the sender: a
                # few ACKs per RTT, under two segments out) is not limited by its window
                if (len(flights) >= MIN_ACKS_AFTER and self.snd_max > sent_then + self.mss
                        and sorted(flights)[len(flights) // 2] >= 2 * self.mss):
                    flights.sort()
                    self.responses.append(flights[-1] / w)
                self.after = None
        # ProbeRTT keeps sending (four segments in flight): a dip ends when the flight grows
        # again, and counts if it lasted; a transfer's idle end never grows again
        if flight <= PROBE_RTT_SEGMENTS * self.mss:
            if self.low_since is None:
                self.low_since = ts
        else:
            # a timeout's slow restart also runs on a few segments: not a ProbeRTT
            if (self.low_since is not None and ts - self.low_since >= PROBE_RTT_MIN_S
                    and self.last_timeout < self.low_since - self.rtt):
                self.dips.append(self.low_since)
            self.low_since = None


def decide(responses: list[float], dips: list[float]) -> tuple[str, str]:
    """(congestion control, reason) from the loss responses and the ProbeRTT dips."""
    gaps = [b - a for a, b in zip(dips, dips[1:])]
    if sum(1 for g in gaps if 8.0 <= g <= 12.0) >= 1:
        return "bbr", "probe_rtt"
    if len(responses) < MIN_EPISODES:
        return "unknown", f"{len(responses)} loss episodes (needs {MIN_EPISODES})"
    m = sorted(responses)[len(responses) // 2]
    if m < RENO_BELOW:
        return "reno", "response"
    if m < CUBIC_BELOW:
        return "cubic", "response"
    return "bbr", "response"


def infer(flows: pl.DataFrame, captures: dict[str, str | os.PathLike]) -> pl.DataFrame:
    """The congestion table of ``flows`` (rows of the given captures: name -> path)."""
    from hsrtcp.passive.apps import address, ip_packets

    rows = []
    for cap, path in captures.items():
        fl = flows.filter(pl.col("capture") == cap)
        senders: dict[tuple, list[_Sender]] = {}
        acks: dict[tuple, list[_Sender]] = {}
        for r in fl.iter_rows(named=True):
            down = (r["s2c_payload_bytes"] or 0) >= (r["c2s_payload_bytes"] or 0)
            src = (r["server_addr"], r["server_port"]) if down else (r["client_addr"], r["client_port"])
            dst = (r["client_addr"], r["client_port"]) if down else (r["server_addr"], r["server_port"])
            if r["data_vantage"] != "sender":
                reason = "receiver vantage: the flight is not visible" if r["data_vantage"] == "receiver" \
                    else "vantage unknown"
                rows.append((r["flow_id"], cap, "unknown", reason, 0, None, 0))
                continue
            s = _Sender(r["flow_id"], r["first_ts"], r["last_ts"], r["rtt_median"] or r["rtt_mean"] or 0.1,
                        r["mss_data"] or 1448)
            senders.setdefault((*src, *dst), []).append(s)
            acks.setdefault((*dst, *src), []).append(s)
        if not senders:
            continue
        for ts, pkt in ip_packets(path):
            t = pkt.data
            if not isinstance(t, dpkt.tcp.TCP):
                continue
            key = (address(pkt.src), t.sport, address(pkt.dst), t.dport)
            for s in senders.get(key, ()):
                if s.first_ts - 1e-6 <= ts <= s.last_ts + 1e-6 and t.data:
                    s.data(ts, t.seq, len(t.data))
            for s in acks.get(key, ()):
                if s.first_ts - 1e-6 <= ts <= s.last_ts + 1e-6 and t.flags & dpkt.tcp.TH_ACK:
                    s.ack(ts, t.ack)
        for group in senders.values():
            for s in group:
                cc, reason = decide(s.responses, s.dips)
                med = sorted(s.responses)[len(s.responses) // 2] if s.responses else None
                rows.append((s.flow_id, cap, cc, reason, len(s.responses), med, len(s.dips)))
    return pl.DataFrame(rows, schema=CONGESTION_SCHEMA, orient="row")


def write(table: pl.DataFrame, out_dir: str | os.PathLike) -> list:
    from pathlib import Path

    from hsrtcp.output import OutputSet
    with OutputSet(out_dir, manifest=".hsrtcp-congestion", replaces=frozenset()) as output:
        with output.file("congestion.parquet") as p:
            table.write_parquet(p, metadata={"hsrtcp.schema": "congestion",
                                             "hsrtcp.schema_version": str(SCHEMA_VERSION)})
        return [Path(p) for p in output.commit()]


def accuracy(rows: list[dict]) -> dict[tuple[str, str], dict[str, dict[str, int]]]:
    """Confusion counts per (scenario, vantage): truth -> inferred -> runs, from the rows of
    the lab campaign's summary (scripts/cc_accuracy.py)."""
    out: dict = {}
    for r in rows:
        m = out.setdefault((r["scenario"], r["vantage"]), {})
        m.setdefault(r["truth"], {}).setdefault(r["inferred"], 0)
        m[r["truth"]][r["inferred"]] += 1
    return out


def accuracy_markdown(csv_path: str | os.PathLike) -> str:
    """The accuracy tables of docs/passive.md from the committed summary: per vantage, a
    confusion matrix over all scenarios, then per scenario the share named rightly and the
    share named wrongly (an ``unknown`` is neither)."""
    import csv

    with open(csv_path, newline="") as f:
        rows = list(csv.DictReader(f))
    labels = ["reno", "cubic", "bbr", "unknown"]
    algos = [a for a in ("reno", "cubic", "bbr", "hsrbbr") if any(r.get("algorithm", r["truth"]) == a for r in rows)]
    lines = []
    for vantage in ("sender", "receiver"):
        vr = [r for r in rows if r["vantage"] == vantage]
        if not vr:
            continue
        lines += [f"**{vantage.capitalize()}-side captures** ({len(vr)} runs): rows the sender's algorithm "
                  "(hsrbbr is right when named bbr), columns what hsrtcp said.", "",
                  "| sender | " + " | ".join(labels) + " |", "|---|" + "---|" * len(labels)]
        for a in algos:
            cnt = [sum(1 for r in vr if r.get("algorithm", r["truth"]) == a and r["inferred"] == x) for x in labels]
            lines.append(f"| {a} | " + " | ".join(str(c) for c in cnt) + " |")
        lines.append("")
    lines += ["Per scenario, sender side: runs named rightly / wrongly / unknown.", "",
              "| scenario | " + " | ".join(algos) + " |", "|---|" + "---|" * len(algos)]
    for sc in dict.fromkeys(r["scenario"] for r in rows):
        cells = []
        for a in algos:
            sr = [r for r in rows if r["scenario"] == sc and r["vantage"] == "sender"
                  and r.get("algorithm", r["truth"]) == a]
            right = sum(1 for r in sr if r["inferred"] == r["truth"])
            unknown = sum(1 for r in sr if r["inferred"] == "unknown")
            cells.append(f"{right} / {len(sr) - right - unknown} / {unknown}")
        lines.append(f"| {sc} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
