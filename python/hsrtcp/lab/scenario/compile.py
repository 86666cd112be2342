"""Compile a realized scenario into files for ``rattan run`` plus ground truth.

Output directory layout (all times relative to the emulated window start = rattan trace
time 0 = first unicast packet into rattan)::

    rattan.toml                  Isolated mode, one left veth per carrier; no [commands]
    traces/bw_{down,up}_p<N>.json     netem-trace RepeatedBwPatternConfig (count 1)
    traces/delay_{down,up}_p<N>.json  netem-trace RepeatedDelayPatternConfig (count 1)
    traces/loss_{down,up}_p<N>.json   netem-trace RepeatedLossPatternConfig (count 1)
    radio.csv                    docs/formats/radio.md
    events.csv                   docs/formats/scenario.md ("events.csv")
    scenario.json                resolved parameters, seed, version, paths, summary

Every trace is exactly the window long; rattan keeps the last value after the end of a trace.
All files are written atomically (temporary file, then rename) and depend only on the
parameters and the seed, so the same seed gives byte-identical files. No file names an
absolute path: rattan.toml names the traces relative to itself and scenario.json a Mahimahi
source relative to the directory, so a moved directory still checks and runs.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hsrtcp import __version__ as HSRTCP_VERSION

from . import cells as _cells
from . import channel as _channel
from . import linklayer as _ll
from . import mahimahi as _mahimahi
from .config import DIRECTIONS, FORMAT_VERSION
from .impair import OUTAGE_BW_BPS, stationary_loss
from .speed import FINE_DT

GENERATOR = "hsrtcp.lab.scenario"
RADIO_COLUMNS = ["ts", "lat", "lon", "speed_kmh", "carrier", "rat", "lac", "cid", "rsrp_dbm", "rsrq_db"]
EVENT_COLUMNS = ["kind", "t_start", "t_end", "path", "carrier", "handoff_id", "from_cid", "to_cid",
                 "from_rat", "to_rat", "outage_kind", "extra_rtt_s", "loss_pattern", "detail"]
_EARTH_R = 6_371_000.0


# ------------------------------------------------------------------------------------------
# segments


@dataclass
class Segments:
    """Piecewise-constant link parameters of one path and direction over the window."""

    path: int
    direction: str
    start_ms: np.ndarray            # int64, first = 0
    end_ms: np.ndarray
    bw_bps: np.ndarray              # int64, >= 1
    delay_us: np.ndarray            # int64
    loss: list[tuple[float, ...]] = field(default_factory=list)

    def runs(self, what: str) -> list[tuple[int, object]]:
        """Merged (duration_ms, value) runs of one parameter: 'bw', 'delay' or 'loss'."""
        vals = {"bw": list(self.bw_bps.tolist()), "delay": list(self.delay_us.tolist()), "loss": self.loss}[what]
        out: list[list] = []
        for s, e, v in zip(self.start_ms.tolist(), self.end_ms.tolist(), vals):
            if out and out[-1][1] == v:
                out[-1][0] += e - s
            else:
                out.append([e - s, v])
        return [(d, v) for d, v in out]


def _ms(t: float) -> int:
    return int(round(t * 1000.0))


def _mark(starts: np.ndarray, s_ms: int, e_ms: int) -> slice:
    return slice(int(np.searchsorted(starts, s_ms, "left")), int(np.searchsorted(starts, e_ms, "left")))


def compose(real) -> tuple[dict[tuple[int, str], Segments], list[_cells.Signal]]:
    """Aligned per-path/direction segments for the window of a Realization."""
    p = real.params
    w0, dur = real.window_start_s, real.duration_s
    d_ms = _ms(dur)
    step_ms = _ms(p["scenario"]["step_s"])
    link, hp = p["link"], p["handoff"]
    seed = p["scenario"]["seed"]
    out: dict[tuple[int, str], Segments] = {}
    signals = []
    for ci, lay in enumerate(real.layouts):
        sig = _cells.signal(p, lay, real.trip, real.horizon_s + FINE_DT)
        signals.append(sig)
        imps = real.impairments[ci]

        def rel(t):  # trip time -> clipped window ms
            return min(max(_ms(t - w0), 0), d_ms)

        spikes, outages, bursts = [], [], []
        for im in imps:
            if im.spike_rtt_s > 0:
                spikes.append((rel(im.t - im.spike_s), rel(im.t), im.spike_rtt_s))
            if im.outage_kind != "none":
                outages.append((rel(im.t), rel(im.t + im.outage_s), im.outage_kind))
            if im.burst_s > 0:
                bursts.append((rel(im.t + im.outage_s), rel(im.t + im.outage_s + im.burst_s)))
        # [speed_channel] events (channel.py): a stall holds both directions like a held
        # outage; a fade sets the loss chain of its window (below holes, bursts and outages)
        sev = real.speed_events[ci] if real.speed_events else []
        for ev in sev:
            if ev.kind == "stall":
                outages.append((rel(ev.t), rel(ev.t + ev.duration_s), "held"))
        fades = [(rel(ev.t), rel(ev.t + ev.duration_s)) for ev in sev if ev.kind == "fade"]
        holes = [(rel(s), rel(e), h) for s, e, h in lay.holes]
        bps = set(range(0, d_ms, step_ms))
        # [ge_loss] / [handoff_episode] (linklayer.py): bad-state periods in window ms
        ge_bad = _window_runs(_ll.ge_bad_runs(p["ge_loss"], seed, _ll.STREAM_GE, ci, real.horizon_s), w0, d_ms) \
            if p.get("ge_loss") else None
        episodes, ep_bad = [], None
        if p.get("handoff_episode"):
            ep = p["handoff_episode"]
            episodes = [(rel(im.t - ep["before_s"]), rel(im.t + im.outage_s + ep["after_s"])) for im in imps]
            episodes = [(a, b) for a, b in episodes if b > a]
            ep_bad = _window_runs(_ll.ge_bad_runs(ep, seed, _ll.STREAM_EPISODE, ci, real.horizon_s), w0, d_ms)
            ep_bad = _clip_runs(ep_bad, episodes)
        for runs in (ge_bad, ep_bad):
            if runs is not None:
                bps.update(runs.ravel().tolist())
        for a, b in episodes:
            bps.update((a, b))
        # recorded capacity (Mahimahi) replaces the radio model's; trace time 0 = window start
        carrier = p["carriers"][ci]
        recorded = {}
        for d in DIRECTIONS:
            if carrier.get(f"trace_{d}"):
                tstep = int(carrier["trace_step_ms"])
                recorded[d] = (tstep, _mahimahi.rates_bps(_mahimahi.read(carrier[f"trace_{d}"]), d_ms, tstep))
                bps.update(range(0, d_ms, tstep))
        for a, b, *_ in spikes + outages + bursts + holes + fades:
            bps.update((a, b))
        bps.discard(d_ms)
        starts = np.array(sorted(x for x in bps if 0 <= x < d_ms), dtype=np.int64)
        ends = np.append(starts[1:], d_ms)
        n_steps = int(math.ceil(d_ms / step_ms))
        step_of = starts // step_ms

        # signal-driven base bandwidth: mean LTE capacity of the fine samples in each step
        ft = sig.t - w0
        in_win = (ft >= -1e-9) & (ft < dur - 1e-9)
        fidx = np.floor((ft[in_win] + 1e-9) / (step_ms / 1000.0)).astype(int)
        base = {}
        for d, arr in (("down", sig.bw_down), ("up", sig.bw_up)):
            v = arr[in_win]
            ok = np.isfinite(v)
            tot = np.bincount(fidx[ok], weights=v[ok], minlength=n_steps)[:n_steps]
            cnt = np.bincount(fidx[ok], minlength=n_steps)[:n_steps]
            base[d] = np.where(cnt > 0, tot / np.maximum(cnt, 1), p["radio"]["min_bps"])
        rh = _cells.rng(seed, _cells.STREAM_HOLE_BW, ci)
        hole_u = {"down": rh.uniform(size=n_steps), "up": rh.uniform(size=n_steps)}
        rj = _cells.rng(seed, _cells.STREAM_JITTER, ci)
        jit = {"down": np.abs(rj.standard_normal(n_steps)), "up": np.abs(rj.standard_normal(n_steps))}

        n = len(starts)
        sc = p.get("speed_channel")
        radio_init = np.ones(n, dtype=bool)  # loss a link layer may retransmit ([harq])
        if sc:
            # speed at the middle of each step: loss and jitter follow it (channel.py)
            mid = w0 + (np.arange(n_steps) + 0.5) * (step_ms / 1000.0)
            v_step = real.trip.v_at(np.minimum(mid, w0 + dur)) * 3.6
        for di, d in enumerate(DIRECTIONS):
            radio = radio_init.copy()
            bw = base[d][step_of].astype(float)
            if d in recorded:
                tstep, rates = recorded[d]
                bw = rates[starts // tstep].astype(float)
            if sc and d == "down" and sc.get("down_bps_static") is not None:
                # radio-limited capacity that follows speed (channel.py); holes and outages below
                bw = np.minimum(bw, _channel.down_bps_at(p, v_step)[step_of])
            if sc:
                jit_ms = _channel.jitter_ms_at(p, v_step)[step_of]
                delay = link["base_owd_ms"] * 1000.0 + jit_ms * 1000.0 * jit[d][step_of]
                bg_step = _channel.loss_at(p, d, v_step)
                loss: list[tuple[float, ...]] = [(float(bg_step[k]),) for k in step_of.tolist()]
                _apply_ge(loss, starts, p.get("ge_loss"), ge_bad, d)
                for a, b in fades:
                    sl = _mark(starts, a, b)
                    for i in range(sl.start, sl.stop):
                        loss[i] = tuple(sc["fade_pattern"])
                        radio[i] = False
            else:
                delay = np.full(n, link["base_owd_ms"] * 1000.0) + link["jitter_ms"] * 1000.0 * jit[d][step_of]
                bg = link["loss_down"] if d == "down" else link["loss_up"]
                loss = [(bg,)] * n
                _apply_ge(loss, starts, p.get("ge_loss"), ge_bad, d)
            for a, b, h in holes:
                sl = _mark(starts, a, b)
                radio[sl] = False
                lo, hi = h[f"{d}_bps"]
                bw[sl] = lo + hole_u[d][step_of[sl]] * (hi - lo)
                delay[sl] += h["extra_owd_ms"] * 1000.0
                for i in range(sl.start, sl.stop):
                    loss[i] = (h[f"loss_{d}"],)
            for a, b, x in spikes:
                delay[_mark(starts, a, b)] += x / 2 * 1e6
            if episodes and d in p["handoff_episode"]["directions"]:
                _apply_episodes(loss, starts, p["handoff_episode"], episodes, ep_bad, radio)
            if d in hp["burst_directions"]:
                pat = tuple(hp["burst_pattern"])
                for a, b in bursts:
                    sl = _mark(starts, a, b)
                    radio[sl] = False
                    for i in range(sl.start, sl.stop):
                        loss[i] = pat
            held_ll = bool(p.get("harq") and p["harq"]["held_outages"])
            for a, b, kind in outages:
                sl = _mark(starts, a, b)
                if kind == "dropped" and d == "up" and hp.get("dropped_uplink") == "held":
                    kind = "held"  # v6: the phone keeps its uplink across the outage (docs/lab.md)
                if not (kind == "held" and held_ll):
                    radio[sl] = False
                if kind == "held":
                    bw[sl] = OUTAGE_BW_BPS
                else:
                    if hp.get("dropped_flush_bps"):  # v6: the queue drains into the total loss
                        bw[sl] = hp["dropped_flush_bps"]
                    for i in range(sl.start, sl.stop):
                        loss[i] = (1.0,)
            bw_i = np.maximum(np.rint(bw).astype(np.int64), OUTAGE_BW_BPS)  # never 0 (rattan#194)
            seg = Segments(ci + 1, d, starts, ends, bw_i, np.rint(delay).astype(np.int64),
                           [tuple(round(float(v), 6) for v in l) for l in loss])
            if p.get("harq") and d in p["harq"]["directions"]:
                seg = _harq(seg, radio, p["harq"], p.get("rlc"), seed, ci, di, w0)
            out[(ci + 1, d)] = seg
    return out, signals


def _window_runs(runs: np.ndarray, w0: float, d_ms: int) -> np.ndarray:
    """Trip-ms periods -> window ms, clipped to [0, d_ms], empty ones dropped."""
    r = np.clip(runs - _ms(w0), 0, d_ms)
    return r[r[:, 1] > r[:, 0]]


def _clip_runs(runs: np.ndarray, windows: list[tuple[int, int]]) -> np.ndarray:
    """The parts of ``runs`` inside any of ``windows`` (window ms)."""
    out = []
    for a, b in windows:
        i0 = int(np.searchsorted(runs[:, 1], a, "right"))
        i1 = int(np.searchsorted(runs[:, 0], b, "left"))
        for s, e in runs[i0:i1].tolist():
            s, e = max(s, a), min(e, b)
            if e > s:
                out.append((s, e))
    return np.array(sorted(set(out)), dtype=np.int64).reshape(-1, 2)


def _in_runs(runs: np.ndarray, t: np.ndarray) -> np.ndarray:
    """Whether each time of ``t`` lies in one of the sorted, disjoint periods ``runs``."""
    if runs is None or len(runs) == 0:
        return np.zeros(len(t), dtype=bool)
    i = np.searchsorted(runs[:, 0], t, "right") - 1
    return (i >= 0) & (t < runs[np.maximum(i, 0), 1])


def _apply_ge(loss: list, starts: np.ndarray, ge: dict | None, bad_runs, d: str) -> None:
    if not ge or d not in ge["directions"]:
        return
    bad = _in_runs(bad_runs, starts)
    for i in range(len(loss)):
        loss[i] = (ge["loss_bad"] if bad[i] else ge["loss_good"],)


def _apply_episodes(loss: list, starts: np.ndarray, ep: dict, episodes, bad_runs, radio) -> None:
    bad = _in_runs(bad_runs, starts)
    for a, b in episodes:
        for i in range(*_mark(starts, a, b).indices(len(loss))):
            loss[i] = (ep["loss_bad"] if bad[i] else ep["loss_good"],)
            radio[i] = True


def _harq(seg: Segments, radio: np.ndarray, hq: dict, rlc: dict | None, seed: int, ci: int, di: int,
          w0: float) -> Segments:
    """[harq] and [rlc] (linklayer.py): radio loss of the eligible segments turned into delay.

    Pieces are the segments cut at every slot boundary (slot grid on trip time); each slot
    has one uniform draw whether eligible or not, so the stream stays aligned. Adjacent pieces
    with equal values are merged again."""
    slot = int(hq["slot_ms"])
    d_ms = int(seg.end_ms[-1])
    off = _ms(w0)
    s0, s1 = off // slot, (off + d_ms - 1) // slot + 1          # trip slots touching the window
    u = _ll_uniform(seed, _ll.STREAM_HARQ, ci, di, s0, s1)
    slot_starts = np.arange(s0, s1, dtype=np.int64) * slot - off
    cuts = np.union1d(seg.start_ms, np.clip(slot_starts, 0, d_ms))
    cuts = cuts[cuts < d_ms]
    si = np.searchsorted(seg.start_ms, cuts, "right") - 1        # segment of each piece
    ki = (cuts + off) // slot - s0                                # slot of each piece
    single = np.array([len(l) == 1 for l in seg.loss])
    q = np.array([l[0] if len(l) == 1 else 0.0 for l in seg.loss], dtype=float)
    elig = (radio & single)[si]
    k, resid = _ll.harq_draw(np.where(elig, q[si], 0.0), u[ki], hq["max_attempts"])
    delay = seg.delay_us[si] + np.where(elig, k * int(hq["rtt_ms"]) * 1000, 0)
    if rlc:
        # what all HARQ attempts lost, RLC sends again: the same draw on the residual
        u2 = _ll_uniform(seed, _ll.STREAM_RLC, ci, di, s0, s1)
        k2, resid = _ll.harq_draw(np.where(elig, resid, 0.0), u2[ki], rlc["max_attempts"])
        delay = delay + np.where(elig, k2 * int(rlc["rtt_ms"]) * 1000, 0)
    resid = np.round(resid, 9)
    # a loss key per piece: the residual loss (>= 0) or -(1 + the segment) for kept chains
    key = np.where(elig, resid, -1.0 - si)
    bw = seg.bw_bps[si]
    keep = np.ones(len(cuts), dtype=bool)
    keep[1:] = (bw[1:] != bw[:-1]) | (delay[1:] != delay[:-1]) | (key[1:] != key[:-1])
    idx = np.flatnonzero(keep)
    st = cuts[idx]
    loss = [(float(resid[j]),) if elig[j] else seg.loss[si[j]] for j in idx.tolist()]
    return Segments(seg.path, seg.direction, st, np.append(st[1:], d_ms), bw[idx], delay[idx].astype(np.int64), loss)


def _ll_uniform(seed: int, stream: int, ci: int, di: int, s0: int, s1: int) -> np.ndarray:
    """Uniforms of trip slots s0..s1-1: blocks of 2^16 slots, each from its own stream, so the
    draw of a slot does not depend on where the window starts."""
    B = 1 << 16
    parts = []
    for b in range(s0 // B, (s1 - 1) // B + 1):
        ub = _cells.rng(seed, stream, ci, di, b).uniform(size=B)
        lo, hi = max(s0, b * B) - b * B, min(s1, (b + 1) * B) - b * B
        parts.append(ub[lo:hi])
    return np.concatenate(parts)


# ------------------------------------------------------------------------------------------
# writers


def _fmt_loss(v) -> str:
    return repr(float(v))


def trace_json(seg: Segments, what: str) -> str:
    """netem-trace JSON (human units) of one parameter of one path/direction."""
    runs = seg.runs(what)
    lines = []
    for dur, v in runs:
        if what == "bw":
            item = f'{{"StaticBwConfig": {{"bw": "{v}bps", "duration": "{dur}ms"}}}}'
        elif what == "delay":
            item = f'{{"StaticDelayConfig": {{"delay": "{v}us", "duration": "{dur}ms"}}}}'
        else:
            item = f'{{"StaticLossConfig": {{"loss": [{", ".join(_fmt_loss(x) for x in v)}], "duration": "{dur}ms"}}}}'
        lines.append("  " + item)
    kind = {"bw": "RepeatedBwPatternConfig", "delay": "RepeatedDelayPatternConfig", "loss": "RepeatedLossPatternConfig"}[what]
    return f'{{"{kind}": {{"count": 1, "pattern": [\n' + ",\n".join(lines) + "\n]}}\n"


def trace_name(what: str, direction: str, path: int) -> str:
    return f"traces/{what}_{direction}_p{path}.json"


def loss_seed(seed: int, path: int, direction: str) -> int:
    """Explicit LossReplay seed per path and direction (rattan's default would be 42 everywhere)."""
    ss = np.random.SeedSequence([seed, 99, path, DIRECTIONS.index(direction)])
    return int(ss.generate_state(1, np.uint64)[0] >> np.uint64(1))


def _toml_str(s: str) -> str:
    return json.dumps(s)  # a JSON string is a valid TOML basic string


#: Smallest byte limit a time-based queue compiles to: one full-size frame.
MIN_QUEUE_BYTES = 1500
#: the time-weighted quantile of a path's bandwidth that sizes a queue_ms queue
NOMINAL_QUANTILE = 0.9


def nominal_rate_bps(seg: Segments) -> float:
    """The rate a time-based queue is sized at: the time-weighted 90th percentile of the
    path's bandwidth in that direction, outages (1 bit/s) left out -- the rate of the link's
    good times, so that a long 2G hole does not shrink the LTE buffer to one frame; rattan
    keeps one queue limit per cell for the whole run, so the limit cannot follow the trace."""
    bw = seg.bw_bps.astype(np.float64)
    dur = (seg.end_ms - seg.start_ms).astype(np.float64)
    keep = (bw > 1.0) & (dur > 0)
    if not keep.any():
        return 1.0
    bw, dur = bw[keep], dur[keep]
    order = np.argsort(bw, kind="stable")
    cum = np.cumsum(dur[order])
    return float(bw[order][np.searchsorted(cum, cum[-1] * NOMINAL_QUANTILE)])


def queue_bytes_for(queue_ms: float, rate_bps: float) -> int:
    """Bytes that drain in ``queue_ms`` at ``rate_bps``, at least one frame."""
    return max(MIN_QUEUE_BYTES, int(math.ceil(rate_bps * queue_ms / 1000.0 / 8.0)))


def rattan_toml(params: dict, outdir: Path, segs: dict | None = None) -> str:
    """The ``rattan run`` config (emulation.md §7.1), without a [commands] section.
    ``segs`` (path, direction) -> :class:`Segments` sizes ``[link] queue_ms`` queues."""
    n = len(params["carriers"])
    link = params["link"]
    seed = params["scenario"]["seed"]
    L = []
    L.append(f"# Generated by {GENERATOR} (hsrtcp {HSRTCP_VERSION}) from scenario "
             f"{params['scenario']['name']!r}, seed {seed}. Do not edit: regenerate.")
    L.append("# Topology: ns-left (phone side, one veth per carrier/path) <-> rattan <-> ns-right (server).")
    L.append("# Path p: uplink  left<p> -> p<p>_up_bw -> p<p>_up_delay -> p<p>_up_loss -> right")
    L.append("#         downlink right -> [down_router] -> p<p>_dn_bw -> p<p>_dn_delay -> p<p>_dn_loss -> left<p>")
    L.append("# All replay cells share one clock starting at the first unicast packet (trace time 0).")
    L.append("# [commands] is left out on purpose: the lab runtime passes --left/--right (Isolated mode")
    L.append("# needs both), e.g. rattan run -c rattan.toml --left bash client.sh --right bash server.sh")
    L.append("")
    L.append("[env]")
    L.append('mode = "Isolated"')
    L.append(f"left_veth_count = {n}")
    L.append("right_veth_count = 1")
    L.append("")
    for p in range(1, n + 1):
        for d, tag in (("up", "up"), ("down", "dn")):
            L.append(f"[cells.p{p}_{tag}_bw]")
            L.append('type = "BwReplay"')
            L.append(f"trace = {_toml_str(trace_name('bw', d, p))}")
            L.append('queue = "DropTail"')
            qc = f"packet_limit = {link['queue_packets']}"
            if link.get("queue_ms") is not None:
                if segs is None or (p, d) not in segs:
                    raise ValueError("queue_ms needs the path's bandwidth segments")
                rate = nominal_rate_bps(segs[(p, d)])
                nb = queue_bytes_for(link["queue_ms"], rate)
                L.append(f"# queue_ms = {link['queue_ms']:g} at the nominal {rate / 1e6:.3f} Mbit/s")
                qc += f", byte_limit = {nb}"
            elif link["queue_bytes"] is not None:
                qc += f", byte_limit = {link['queue_bytes']}"
            L.append(f"queue_config = {{ {qc} }}")
            L.append("")
            L.append(f"[cells.p{p}_{tag}_delay]")
            L.append('type = "DelayReplay"')
            L.append(f"trace = {_toml_str(trace_name('delay', d, p))}")
            L.append("")
            L.append(f"[cells.p{p}_{tag}_loss]")
            L.append('type = "LossReplay"')
            L.append(f"trace = {_toml_str(trace_name('loss', d, p))}")
            L.append(f"seed = {loss_seed(seed, p, d)}")
            L.append("")
    if n > 1:
        L.append("# Splits the downlink by destination: 10.1.<p>.0/24 is the phone's address on path p.")
        L.append("[cells.down_router]")
        L.append('type = "Router"')
        L.append("egress_connections = [" + ", ".join(f'"p{p}_dn_bw"' for p in range(1, n + 1)) + "]")
        for p in range(1, n + 1):
            L.append("[[cells.down_router.routing_table]]")
            L.append(f'prefix = "10.1.{p}.0/24"')
            L.append(f"interface_id = {p - 1}")
        L.append("")
    L.append("[links]")
    for p in range(1, n + 1):
        left = "left" if n == 1 else f"left{p}"
        L.append(f'{left} = "p{p}_up_bw"')
        L.append(f'p{p}_up_bw = "p{p}_up_delay"')
        L.append(f'p{p}_up_delay = "p{p}_up_loss"')
        L.append(f'p{p}_up_loss = "right"')
    L.append('right = "down_router"' if n > 1 else 'right = "p1_dn_bw"')
    for p in range(1, n + 1):
        left = "left" if n == 1 else f"left{p}"
        L.append(f'p{p}_dn_bw = "p{p}_dn_delay"')
        L.append(f'p{p}_dn_delay = "p{p}_dn_loss"')
        L.append(f'p{p}_dn_loss = "{left}"')
    return "\n".join(L) + "\n"


def _latlon(origin, bearing_deg, x_m):
    lat0, lon0 = math.radians(origin[0]), math.radians(origin[1])
    br = math.radians(bearing_deg)
    dn = x_m * math.cos(br)
    de = x_m * math.sin(br)
    lat = np.degrees(lat0 + dn / _EARTH_R)
    lon = np.degrees(lon0 + de / (_EARTH_R * math.cos(lat0)))
    return lat, lon


def _f(v, nd):
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return ""
    return f"{v:.{nd}f}"


def radio_csv(real) -> str:
    """1-Hz rows per carrier plus one row at every serving-cell change (docs/formats/radio.md)."""
    p = real.params
    w0, dur = real.window_start_s, real.duration_s
    recorded = p.get("recorded") is not None
    rows = []
    for ci, lay in enumerate(real.layouts):
        name = lay.name
        ts = np.arange(0, int(math.ceil(dur - 1e-9))) * 1.0
        ho = np.array([h.t for h in lay.handoffs])  # trip times, whole ms
        ho = ho[(ho >= w0) & (ho < w0 + dur)]
        ho = ho[np.abs((ho - w0) - np.rint(ho - w0)) > 5e-4]  # on a whole second: the 1-Hz row shows it
        # evaluate at the exact change instants (ts + w0 could round to just before a change)
        trip_t = np.concatenate([ts + w0, ho])
        ts = np.concatenate([ts, np.round(ho - w0, 3)])
        x = real.trip.x_at(trip_t)
        v = real.trip.v_at(trip_t) * 3.6
        lat, lon = _latlon(p["trip"]["origin"], p["trip"]["bearing_deg"], x)
        cell = lay.serving_at(trip_t)
        # the signal of the serving cell at exactly that instant (a change row shows the new cell)
        sg = _cells.signal(p, lay, real.trip, real.horizon_s + FINE_DT, t=trip_t)
        for k in range(len(ts)):
            c = lay.cells[int(cell[k])]
            # [recorded] cells: the log's area code may be unknown, and channel and generation are said
            extra = "" if not recorded else f",{'' if c.arfcn is None else c.arfcn},{c.generation or ''}"
            rows.append((float(ts[k]), ci, f"{ts[k]:.3f},{lat[k]:.6f},{lon[k]:.6f},{v[k]:.1f},{name},{c.rat},"
                         f"{'' if c.lac is None else c.lac},{c.cid},{_f(float(sg.rsrp[k]), 1)},"
                         f"{_f(float(sg.rsrq[k]), 1)}{extra}"))
    rows.sort(key=lambda r: (r[0], r[1]))
    cols = RADIO_COLUMNS + (["arfcn", "generation"] if recorded else [])
    return ",".join(cols) + "\n" + "".join(r[2] + "\n" for r in rows)


def events_rows(real) -> list[dict]:
    """Ground-truth events of the window (docs/formats/scenario.md), times in window seconds."""
    p = real.params
    w0, dur = real.window_start_s, real.duration_s
    out = []

    def clip(t):
        return min(max(t - w0, 0.0), dur)

    hp = p["handoff"]
    for ci, lay in enumerate(real.layouts):
        name = lay.name
        for s, e, h in lay.holes:
            if e - w0 > 0 and s - w0 < dur:
                out.append(dict(kind="coverage_hole", t_start=clip(s), t_end=clip(e), path=ci + 1, carrier=name,
                                to_rat=h["rat"], detail=f"down {h['down_bps'][0]:.0f}-{h['down_bps'][1]:.0f} bit/s"))
        for im in real.impairments[ci]:
            a, b = lay.cells[im.from_cell], lay.cells[im.to_cell]
            common = dict(path=ci + 1, carrier=name, handoff_id=im.handoff_id)
            if 0 <= im.t - w0 < dur:
                detail = ";".join(x for x in ("inter_system" if im.inter_system else "",
                                              "pingpong" if im.pingpong else "",
                                              "rlf" if im.rlf else "", im.kind or "") if x)
                out.append(dict(kind="handoff", t_start=im.t - w0, t_end=im.t - w0, from_cid=a.cid, to_cid=b.cid,
                                from_rat=a.rat, to_rat=b.rat, detail=detail, **common))
            if im.spike_rtt_s > 0 and im.t - w0 > 0 and im.t - im.spike_s - w0 < dur:
                out.append(dict(kind="rtt_spike", t_start=clip(im.t - im.spike_s), t_end=clip(im.t),
                                extra_rtt_s=im.spike_rtt_s, **common))
            if im.outage_kind != "none" and im.t + im.outage_s - w0 > 0 and im.t - w0 < dur:
                out.append(dict(kind="outage", t_start=clip(im.t), t_end=clip(im.t + im.outage_s),
                                outage_kind=im.outage_kind, **common))
            bs, be = im.t + im.outage_s, im.t + im.outage_s + im.burst_s
            if im.burst_s > 0 and be - w0 > 0 and bs - w0 < dur and hp["burst_directions"]:
                out.append(dict(kind="loss_burst", t_start=clip(bs), t_end=clip(be),
                                loss_pattern=";".join(repr(float(x)) for x in hp["burst_pattern"]),
                                detail="directions " + "+".join(hp["burst_directions"]), **common))
        # [speed_channel] stalls and fades: no handoff_id, detail "speed..."
        for ev in (real.speed_events[ci] if real.speed_events else []):
            if ev.t + ev.duration_s - w0 > 0 and ev.t - w0 < dur:
                if ev.kind == "stall":
                    out.append(dict(kind="stall", t_start=clip(ev.t), t_end=clip(ev.t + ev.duration_s),
                                    path=ci + 1, carrier=name, detail="speed"))
                else:
                    out.append(dict(kind="loss_burst", t_start=clip(ev.t), t_end=clip(ev.t + ev.duration_s),
                                    loss_pattern=";".join(repr(float(x)) for x in p["speed_channel"]["fade_pattern"]),
                                    path=ci + 1, carrier=name, detail="speed fade; directions down+up"))
    order = {"coverage_hole": 0, "rtt_spike": 1, "handoff": 2, "outage": 3, "loss_burst": 4, "stall": 5}
    out.sort(key=lambda r: (round(r["t_start"], 3), r["path"], order[r["kind"]]))
    return out


def events_csv(rows: list[dict]) -> str:
    def cell(r, k):
        v = r.get(k)
        if v is None:
            return ""
        if k in ("t_start", "t_end"):
            return f"{v:.3f}"
        if k == "extra_rtt_s":
            return f"{v:.4f}"
        s = str(v)
        return f'"{s}"' if ("," in s or '"' in s) else s

    return ",".join(EVENT_COLUMNS) + "\n" + "".join(",".join(cell(r, k) for k in EVENT_COLUMNS) + "\n" for r in rows)


# ------------------------------------------------------------------------------------------
# the compiled scenario


@dataclass
class CompiledScenario:
    """What :meth:`Scenario.compile` wrote. ``timeline()`` is the expected link, per second."""

    outdir: Path
    rattan_config: Path
    paths: int
    duration_s: float
    radio_csv: Path
    events_csv: Path
    scenario_json: Path
    seed: int

    @classmethod
    def open(cls, outdir: str | Path) -> "CompiledScenario":
        outdir = Path(outdir)
        try:
            doc = json.loads((outdir / "scenario.json").read_text(encoding="utf-8"))
            paths, duration_s, seed = int(doc["paths"]), float(doc["duration_s"]), int(doc["seed"])
        except (OSError, ValueError, KeyError, TypeError, OverflowError, RecursionError) as exc:
            from .config import ScenarioError

            raise ScenarioError(f"{outdir}: not a compiled scenario directory "
                                f"(scenario.json: {type(exc).__name__}: {exc})") from exc
        return cls(outdir, outdir / "rattan.toml", paths, duration_s, outdir / "radio.csv",
                   outdir / "events.csv", outdir / "scenario.json", seed)

    def trace_file(self, what: str, direction: str, path: int) -> Path:
        return self.outdir / trace_name(what, direction, path)

    def segments(self):
        """Exact piecewise-constant segments read back from the trace files, as a polars
        DataFrame: path, direction, t_start, t_end (s), bw_bps, delay_s, loss_pattern (list),
        loss_rate (long-run drop probability of the pattern)."""
        import polars as pl

        from .traces import read_trace

        rows = []
        for p in range(1, self.paths + 1):
            for d in DIRECTIONS:
                merged = _merge_traces(read_trace(self.trace_file("bw", d, p)),
                                       read_trace(self.trace_file("delay", d, p)),
                                       read_trace(self.trace_file("loss", d, p)))
                for s, e, bw, dl, ls in merged:
                    rows.append(dict(path=p, direction=d, t_start=s / 1000.0, t_end=e / 1000.0, bw_bps=bw,
                                     delay_s=dl / 1e6, loss_pattern=list(ls), loss_rate=stationary_loss(list(ls))))
        return pl.DataFrame(rows, schema={"path": pl.Int64, "direction": pl.Utf8, "t_start": pl.Float64,
                                          "t_end": pl.Float64, "bw_bps": pl.Int64, "delay_s": pl.Float64,
                                          "loss_pattern": pl.List(pl.Float64), "loss_rate": pl.Float64})

    def timeline(self, step_s: float = 1.0):
        """Expected link per ``step_s`` bin, path and direction, as a polars DataFrame.

        Columns: ``t`` (bin start, s), ``path``, ``direction`` ("down" = server -> phone,
        "up" = phone -> server), ``bw_bps`` (time-weighted mean capacity, bit/s of IP bytes),
        ``bw_min_bps``, ``delay_s`` (time-weighted mean one-way delay given to packets entering
        in the bin; queueing not included), ``delay_max_s``, ``loss_rate`` (time-weighted long-run
        drop probability of the loss chains), ``outage`` (true if any part of the bin has a held
        (1 bit/s) or dropped (loss 1.0) outage).
        """
        import polars as pl

        seg = self.segments()
        n_bins = int(math.ceil(self.duration_s / step_s - 1e-9))
        rows = []
        for (p, d), g in seg.group_by(["path", "direction"], maintain_order=True):
            s = g["t_start"].to_numpy()
            e = g["t_end"].to_numpy()
            bw = g["bw_bps"].to_numpy().astype(float)
            dl = g["delay_s"].to_numpy()
            lr = g["loss_rate"].to_numpy()
            out_flag = (bw <= OUTAGE_BW_BPS) | (lr >= 1.0)
            for k in range(n_bins):
                a, b = k * step_s, min((k + 1) * step_s, self.duration_s)
                # segments are sorted and contiguous: only those between i0 and i1 overlap the bin
                i0, i1 = int(np.searchsorted(e, a, "right")), int(np.searchsorted(s, b, "left"))
                sl = slice(i0, i1)
                ov = np.clip(np.minimum(e[sl], b) - np.maximum(s[sl], a), 0.0, None)
                m = ov > 0
                w, bws, dls, lrs = ov[m], bw[sl][m], dl[sl][m], lr[sl][m]
                rows.append(dict(t=a, path=p, direction=d,
                                 bw_bps=float((bws * w).sum() / w.sum()),
                                 bw_min_bps=float(bws.min()),
                                 delay_s=float((dls * w).sum() / w.sum()),
                                 delay_max_s=float(dls.max()),
                                 loss_rate=float((lrs * w).sum() / w.sum()),
                                 outage=bool(out_flag[sl][m].any())))
        return pl.DataFrame(rows).sort(["path", "direction", "t"])

    def events(self):
        """events.csv as a polars DataFrame with its documented types (also when empty)."""
        import polars as pl

        return pl.read_csv(self.events_csv, schema=_events_schema())

    def radio(self):
        """radio.csv as a polars DataFrame with its documented types."""
        import polars as pl

        # ([recorded] scenarios add arfcn and generation)
        return pl.read_csv(self.radio_csv, schema_overrides={
            "ts": pl.Float64, "lat": pl.Float64, "lon": pl.Float64, "speed_kmh": pl.Float64, "carrier": pl.Utf8,
            "rat": pl.Utf8, "lac": pl.Int64, "cid": pl.Int64, "rsrp_dbm": pl.Float64, "rsrq_db": pl.Float64,
            "arfcn": pl.Int64, "generation": pl.Utf8})


def _events_schema():
    import polars as pl

    return {"kind": pl.Utf8, "t_start": pl.Float64, "t_end": pl.Float64, "path": pl.Int64, "carrier": pl.Utf8,
            "handoff_id": pl.Int64, "from_cid": pl.Int64, "to_cid": pl.Int64, "from_rat": pl.Utf8,
            "to_rat": pl.Utf8, "outage_kind": pl.Utf8, "extra_rtt_s": pl.Float64, "loss_pattern": pl.Utf8,
            "detail": pl.Utf8}


def _merge_traces(bw, delay, loss):
    """Overlay three [(duration_ms, value)] run lists into common (start, end, bw, delay, loss)."""
    import bisect

    def edges(runs):
        starts, vals, t = [], [], 0
        for d, v in runs:
            starts.append(t)
            vals.append(v)
            t += d
        return starts, vals, t

    seqs = [edges(r) for r in (bw, delay, loss)]
    end = min(sq[2] for sq in seqs)
    cuts = sorted({x for sq in seqs for x in sq[0]} | {end})
    res = []
    for a, b in zip(cuts, cuts[1:]):
        if a >= end:
            break
        vals = [sq[1][bisect.bisect_right(sq[0], a) - 1] for sq in seqs]
        res.append((a, b, *vals))
    return res


def summary(real) -> dict:
    out = {}
    for ci, lay in enumerate(real.layouts):
        t = real.handoff_times(ci)
        iv = np.diff(t)
        out[lay.name] = {
            "handoffs": int(len(t)),
            "inter_system_handoffs": int(sum(1 for h in lay.handoffs
                                             if h.inter_system and 0 <= h.t - real.window_start_s < real.duration_s)),
            "mean_interval_s": round(float(iv.mean()), 3) if len(iv) else None,
            "share_intervals_le_10s": round(float((iv <= 10.0).mean()), 4) if len(iv) else None,
        }
    return out


#: The manifest of a compiled scenario's files (docs/formats/output.md).
SCENARIO_MANIFEST = "hsrtcp-manifest.scenario.txt"


def _write_all(outdir: Path, files: dict[str, str]) -> None:
    """Write ``files`` into ``outdir`` all together or not at all (:class:`hsrtcp.output.OutputSet`
    with the scenario's own manifest): a failure half-way leaves the previous compile's
    files, and a compile with fewer paths removes the traces of the earlier one. Traces of
    compiles from before the manifest are found by their names."""
    from hsrtcp.output import OutputSet

    earlier = {f"traces/{t.name}" for t in (outdir / "traces").glob("*_p*.json")
               if t.name.split("_")[0] in ("bw", "delay", "loss")} if (outdir / "traces").is_dir() else set()
    with OutputSet(outdir, manifest=SCENARIO_MANIFEST, replaces=frozenset(earlier)) as output:
        for name, text in files.items():
            with open(output.stage(name), "w", encoding="utf-8", newline="") as f:
                f.write(text)
        output.commit()


def _portable(params: dict, outdir: Path) -> dict:
    """``params`` with the Mahimahi sources named relative to ``outdir`` (where
    scenario.json lies, which is what :func:`config.resolve` reads them relative to)."""
    import copy
    import os

    out = copy.deepcopy(params)
    for c in out["carriers"]:
        for k in ("trace_down", "trace_up"):
            if c.get(k):
                c[k] = Path(os.path.relpath(c[k], Path(outdir).resolve())).as_posix()
    return out


def compile_scenario(sc, outdir: Path) -> CompiledScenario:
    real = sc.realize()
    outdir = Path(outdir)
    segs, _signals = compose(real)
    p = real.params
    n = len(real.layouts)
    files: dict[str, str] = {}  # name in outdir -> text; written all together below
    for (path, d), seg in segs.items():
        for what in ("bw", "delay", "loss"):
            files[trace_name(what, d, path)] = trace_json(seg, what)
    files["rattan.toml"] = rattan_toml(p, outdir, segs)
    files["radio.csv"] = radio_csv(real)
    files["events.csv"] = events_csv(events_rows(real))
    doc = {
        "format_version": FORMAT_VERSION,
        "generator": GENERATOR,
        "hsrtcp_version": HSRTCP_VERSION,
        "name": p["scenario"]["name"],
        "seed": p["scenario"]["seed"],
        "window_start_s": real.window_start_s,
        "duration_s": real.duration_s,
        "paths": n,
        "path_map": [{"path": i + 1, "carrier": c["name"], "phone_addr": f"10.1.{i + 1}.1",
                      "left_cell_id": "left" if n == 1 else f"left{i + 1}",
                      "phone_veth": f"vL{i + 1}-L-$RATTAN_ID"} for i, c in enumerate(p["carriers"])],
        "files": {"rattan_config": "rattan.toml", "radio": "radio.csv", "events": "events.csv",
                  "traces": {f"p{pp}_{d}": {w: trace_name(w, d, pp) for w in ("bw", "delay", "loss")}
                             for pp in range(1, n + 1) for d in DIRECTIONS}},
        "loss_seeds": {f"p{pp}_{d}": loss_seed(p["scenario"]["seed"], pp, d) for pp in range(1, n + 1) for d in DIRECTIONS},
        "summary": summary(real),
        "params": _portable(p, outdir),
    }
    files["scenario.json"] = json.dumps(doc, indent=2) + "\n"
    _write_all(outdir, files)
    return CompiledScenario(outdir, outdir / "rattan.toml", n, real.duration_s, outdir / "radio.csv",
                            outdir / "events.csv", outdir / "scenario.json", p["scenario"]["seed"])
