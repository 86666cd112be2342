"""One picture of a compiled scenario: speed, RSRP per carrier, bandwidth per path, and the
handoffs / outages / coverage holes, on one time axis (seconds since the window start)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from .compile import CompiledScenario

_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray"]


def _step(seg, path, direction):
    g = seg.filter((seg["path"] == path) & (seg["direction"] == direction)).sort("t_start")
    t = np.append(g["t_start"].to_numpy(), g["t_end"].to_numpy()[-1])
    v = g["bw_bps"].to_numpy().astype(float)
    return t, np.append(v, v[-1])


def show(outdir: str | Path, png: str | Path, title: str | None = None) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cs = CompiledScenario.open(outdir)
    radio = cs.radio()
    ev = cs.events()
    seg = cs.segments()
    carriers = list(dict.fromkeys(radio["carrier"].to_list()))
    fig, ax = plt.subplots(4, 1, figsize=(12, 9), sharex=True,
                           gridspec_kw={"height_ratios": [1, 1.3, 1.6, 1.1]})
    first = radio.filter(radio["carrier"] == carriers[0])
    ax[0].plot(first["ts"], first["speed_kmh"], color="k", lw=1)
    ax[0].set_ylabel("speed\nkm/h")
    for i, c in enumerate(carriers):
        r = radio.filter(radio["carrier"] == c)
        ax[1].plot(r["ts"], r["rsrp_dbm"], color=_COLORS[i % 8], lw=0.8, label=f"{c} (path {i + 1})")
    for lvl, name in ((-85, "Good"), (-95, "Average"), (-105, "Weak")):  # S3 levels (M26)
        ax[1].axhline(lvl, color="0.7", lw=0.6, ls=":")
        ax[1].text(0, lvl, f" {name}", fontsize=7, color="0.5", va="bottom")
    ax[1].set_ylabel("RSRP\ndBm")
    ax[1].legend(loc="lower right", fontsize=7)
    for p in range(1, cs.paths + 1):
        col = _COLORS[(p - 1) % 8]
        t, v = _step(seg, p, "down")
        ax[2].step(t, v / 1e6, where="post", color=col, lw=0.9, label=f"path {p} down")
        t, v = _step(seg, p, "up")
        ax[2].step(t, v / 1e6, where="post", color=col, lw=0.7, ls="--", label=f"path {p} up")
    ax[2].set_yscale("log")
    ax[2].set_ylim(5e-7, None)
    ax[2].set_ylabel("capacity\nMbit/s (log)")
    ax[2].legend(loc="lower right", fontsize=7, ncol=2)
    # events: one row per path
    for p in range(1, cs.paths + 1):
        e = ev.filter(ev["path"] == p)
        y = p
        col = _COLORS[(p - 1) % 8]
        for r in e.iter_rows(named=True):
            if r["kind"] == "coverage_hole":
                ax[3].axvspan(r["t_start"], r["t_end"], ymin=(y - 0.5) / (cs.paths + 1), ymax=(y + 0.5) / (cs.paths + 1),
                              color="0.85")
            elif r["kind"] == "outage":
                ax[3].broken_barh([(r["t_start"], max(r["t_end"] - r["t_start"], 0.05))], (y - 0.3, 0.6),
                                  color="k" if r["outage_kind"] == "dropped" else "tab:red")
            elif r["kind"] == "stall":  # [speed_channel]: both directions held, no handoff
                ax[3].broken_barh([(r["t_start"], max(r["t_end"] - r["t_start"], 0.05))], (y - 0.3, 0.6),
                                  color="tab:orange")
            elif r["kind"] == "loss_burst":
                ax[3].broken_barh([(r["t_start"], r["t_end"] - r["t_start"])], (y - 0.15, 0.3), color="tab:olive")
            elif r["kind"] == "rtt_spike":
                ax[3].broken_barh([(r["t_start"], r["t_end"] - r["t_start"])], (y + 0.3, 0.15), color="tab:cyan")
            elif r["kind"] == "handoff":
                ax[3].plot([r["t_start"]] * 2, [y - 0.45, y + 0.45], color=col, lw=1.2)
                for a in ax[:3]:
                    a.axvline(r["t_start"], color=col, lw=0.4, alpha=0.35)
    ax[3].set_yticks(range(1, cs.paths + 1), [f"path {p}\n{carriers[p - 1]}" for p in range(1, cs.paths + 1)])
    ax[3].set_ylim(0.4, cs.paths + 0.6)
    ax[3].set_xlabel("time since window start (s)")
    from matplotlib.patches import Patch

    ax[3].legend(handles=[Patch(color="tab:red", label="outage (held)"), Patch(color="k", label="outage (dropped)"),
                          Patch(color="tab:olive", label="loss burst"), Patch(color="tab:cyan", label="RTT spike"),
                          Patch(color="0.85", label="coverage hole"), Patch(color="tab:orange", label="stall (speed)")],
                 loc="upper right", fontsize=7, ncol=6)
    ax[3].set_xlim(0, cs.duration_s)
    fig.suptitle(title or f"{Path(outdir).name}: seed {cs.seed}, {cs.paths} path(s), {cs.duration_s:.0f} s")
    fig.tight_layout()
    png = Path(png)
    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=110)
    plt.close(fig)
    return png
