"""What the [speed_channel] of the study scenarios gives, from the compiled traces alone (no TCP).

Usage: PYTHONPATH=python python scripts/speed_channel_stats.py [SCENARIO.toml ...]
(default: the three study scenarios; seeds 170-179, the campaign's draws). Prints, per
scenario, the time-weighted data/ACK loss, the share of time the link is held (stalls and
held outages), and the RTT a packet sent every 10 ms would see: the wait for a held window to
end + the down delay, then the same for its ACK on the way up (queueing behind other packets
ignored). These are the numbers of docs/formats/scenario.md "[speed_channel]".
"""

import sys
import tempfile

import numpy as np
import polars as pl

from hsrtcp.lab import scenario as S

STUDY = ["scenarios/study-static.toml", "scenarios/study-300-nohandoff.toml", "scenarios/study-300-handoffs.toml"]


def _direction(seg: pl.DataFrame, d: str):
    g = seg.filter(pl.col("direction") == d).sort("t_start")
    s, e = g["t_start"].to_numpy(), g["t_end"].to_numpy()
    held = g["bw_bps"].to_numpy() <= 1
    delay = g["delay_s"].to_numpy()
    w = e - s
    loss = float((g["loss_rate"].to_numpy() * w).sum() / w.sum())
    held_share = float((w * held).sum() / w.sum())

    def one_way(t: np.ndarray) -> np.ndarray:
        i = np.clip(np.searchsorted(s, t, "right") - 1, 0, len(s) - 1)
        wait = np.zeros_like(t)
        for k, j in enumerate(i):
            if held[j]:
                while held[j] and j < len(s) - 1:
                    j += 1
                wait[k] = s[j] - t[k]
        j = np.clip(np.searchsorted(s, t + wait, "right") - 1, 0, len(s) - 1)
        return wait + delay[j]

    return one_way, loss, held_share


def stats(path: str, seeds=range(170, 180)) -> dict:
    rows = []
    for seed in seeds:
        cs = S.load(path).with_overrides(seed=seed).compile(tempfile.mkdtemp())
        seg = cs.segments()
        down, loss_d, held = _direction(seg, "down")
        up, loss_u, _ = _direction(seg, "up")
        t = np.arange(0.0, cs.duration_s - 30.0, 0.01)
        d1 = down(t)
        rtt = d1 + up(t + d1)
        jitter = np.abs(np.diff(rtt[::100]))  # A30: consecutive 1-s samples
        rows.append([loss_d, loss_u, held, (rtt >= 0.4).mean(), (rtt > 0.1).mean(), (jitter <= 0.0076).mean(),
                     rtt.var()])
    m = np.array(rows).mean(axis=0)
    return dict(zip(["loss_down", "loss_up", "held", "rtt_ge_0.4s", "rtt_gt_100ms", "jitter_le_7.6ms",
                     "rtt_var_s2"], m.tolist()))


if __name__ == "__main__":
    for p in sys.argv[1:] or STUDY:
        r = stats(p)
        print(f"{p}: loss {r['loss_down']:.4%} / {r['loss_up']:.4%}, held {r['held']:.2%}, "
              f"RTT >= 0.4 s {r['rtt_ge_0.4s']:.2%}, RTT > 100 ms {r['rtt_gt_100ms']:.1%}, "
              f"jitter <= 7.6 ms {r['jitter_le_7.6ms']:.1%}, RTT variance {r['rtt_var_s2']:.3g} s^2")
