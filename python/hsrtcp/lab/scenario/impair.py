"""Per-handoff impairments and their composition into aligned per-direction segments.

Around a handoff at time h (all three touch the same instant, on every trace of the path):

- RTT spike (probability ``spike_p``): [h − spike_s, h), extra RTT X ~ log-normal(median
  ``spike_median_ms``), added as X/2 one-way delay in each direction (FIFO ``DelayReplay``:
  packets entering during the spike are held, later ones queue behind — emulation.md T4);
- outage: [h, h + o). o ~ log-normal(median ``outage_median_s``), or a radio link failure with
  probability ``rlf_p`` (median ``rlf_median_s``), or an inter-system handoff (median
  ``inter_system_median_s``); capped at ``outage_max_s``. Kind "held" = bandwidth 1 bit/s in
  both directions (packets wait in the queue; never 0 — rattan 0.1.1 panics on a zero
  bandwidth, stack-rs/rattan#194); "dropped" = loss pattern [1.0] in both directions;
- loss burst: [h + o, h + o + burst_s) with the conditional chain ``burst_pattern`` in the
  ``burst_directions``.

Precedence where windows overlap: outage > burst > background for loss; held outage > signal
bandwidth for bandwidth; spike delays add up with the base delay.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .cells import STREAM_IMPAIR, CarrierLayout, rng

OUTAGE_BW_BPS = 1  # the "no capacity" value: rattan must never see 0 (bug #194)


@dataclass
class Impairment:
    handoff_id: int      # sequence number over the carrier's handoffs (from 0)
    carrier: int
    t: float             # trip time of the handoff
    from_cell: int
    to_cell: int
    inter_system: bool
    pingpong: bool
    outage_s: float
    outage_kind: str     # held | dropped | none
    rlf: bool
    spike_rtt_s: float   # 0 = no spike
    spike_s: float
    burst_s: float
    kind: str | None = None  # [recorded]: the log's 3GPP handoff type


def _lognormal(r: np.random.Generator, median: float, sigma: float) -> float:
    return float(median * np.exp(sigma * r.standard_normal()))


def draw(params: dict, lay: CarrierLayout) -> list[Impairment]:
    """One Impairment per handoff of the carrier; a fixed number of draws per handoff keeps
    the stream aligned, so truncating a scenario never changes the earlier handoffs."""
    h = params["handoff"]
    r = rng(params["scenario"]["seed"], STREAM_IMPAIR, lay.index)
    out = []
    for k, ho in enumerate(lay.handoffs):
        u_rlf, u_kind, u_spike = r.uniform(size=3)
        z_out, z_spike = r.standard_normal(2)
        rlf = (not ho.inter_system) and u_rlf < h["rlf_p"]
        median = h["inter_system_median_s"] if ho.inter_system else (h["rlf_median_s"] if rlf else h["outage_median_s"])
        o = min(h["outage_max_s"], float(median * np.exp(h["outage_sigma"] * z_out)))
        if ho.kind is not None:  # [recorded]: the outage by the log's 3GPP type (recorded.py)
            from .recorded import outage_s

            rlf = ho.kind == "reestablishment"
            o = min(h["outage_max_s"], outage_s(params, ho.outage_class, ho.execution_s, float(z_out)))
        o = round(o, 3)
        kind = h["outage_kind"]
        if kind == "mixed":
            kind = "dropped" if u_kind < h["dropped_p"] else "held"
        if o <= 0.0:
            kind = "none"
        spike = 0.0
        if u_spike < h["spike_p"] and h["spike_s"] > 0:
            spike = round(float(h["spike_median_ms"] * np.exp(h["spike_sigma"] * z_spike)) / 1000.0, 4)
        out.append(Impairment(k, lay.index, ho.t, ho.from_cell, ho.to_cell, ho.inter_system, ho.pingpong,
                              o, kind, rlf, spike, h["spike_s"] if spike > 0 else 0.0, h["burst_s"], ho.kind))
    return out


def stationary_loss(pattern: list[float]) -> float:
    """Long-run drop probability of a rattan/netem-trace conditional loss chain.

    ``pattern[k]`` = P(drop | k consecutive drops before), the last value repeating. State =
    number of consecutive drops, capped at len − 1; solved exactly as a small Markov chain.
    """
    p = list(pattern)
    n = len(p)
    if n == 1:
        return float(p[0])
    # transition matrix over states 0..n-1
    m = np.zeros((n, n))
    for k, pk in enumerate(p):
        m[k, min(k + 1, n - 1)] += pk
        m[k, 0] += 1 - pk
    w, v = np.linalg.eig(m.T)
    i = int(np.argmin(np.abs(w - 1.0)))
    pi = np.real(v[:, i])
    pi = pi / pi.sum()
    return float(np.dot(pi, p))
