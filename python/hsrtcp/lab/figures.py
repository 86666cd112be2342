"""Lab figures with the ground truth drawn in: what the path did beside what the flow got.

:func:`truth_overlay` draws one run (a bundle): per path the flow used, the capacity the
emulated path offered (the compiled trace) against the throughput the phone received, the
scheduled outages (held / dropped), loss bursts, RTT spikes, coverage holes and handoffs of
events.csv, and — on a strip below, when the run's analysis is given — what the analyzer
inferred from the captures alone: its silences (``gap`` events of the sender), timeouts and
spurious timeouts, and the handoffs it read from the radio log. A reader sees at once where
they agree. :func:`overlay` is flent's picture of the arms of one pair (the throughput of
each over the same path's capacity and outages); :func:`throughput_delay` Pantheon's picture
of several arms: one point per run (mean RTT, goodput), the arm's mean as a larger mark.

Every ground-truth element carries an SVG id naming what it is and its times
(``truth-outage-held-p1-3.000-3.812``), and each path's axes ``truth-axes-p<k>`` spans the
window [0, duration], so a test or a script can check where each one was drawn.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.bundle import manifest

BIN_S = 0.2  # delivered-throughput bins
_SERVER = "10.2.1.1"
_COLORS = ["tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple", "tab:brown", "tab:pink", "tab:gray"]


def _arrivals(cap: Path, t0: float) -> np.ndarray:
    from hsrtcp import pcapio

    rows = [(p.ts - t0, p.ip_len) for p in pcapio.read_tcp(cap) if p.src == _SERVER and p.payload_len]
    return np.array(rows, dtype=float).reshape(-1, 2)


def _inferences(analysis: Path, t0: float) -> dict[str, pl.DataFrame]:
    """The analyzer's events of the run's connections, times relative to t0: the sender's
    silences (gap, class stalled), timeout sequences, spurious timeouts; the radio log's
    handoffs as the context layer read them."""
    from hsrtcp.results import ResultsDir

    out = {}
    res = ResultsDir(analysis)  # the checked reader: a table of a newer version is refused
    if res.has("events") and res.has("flows"):
        ev = res.read("events", ["flow_id", "kind", "class", "ts", "ts_end"])
        fl = res.read("flows", ["flow_id", "vantage"])
        server = fl.filter(pl.col("vantage") == "server")["flow_id"].to_list()
        rel = [(pl.col("ts") - t0).alias("t"), (pl.col("ts_end") - t0).alias("t_end")]
        out["gap"] = ev.filter((pl.col("kind") == "gap") & pl.col("flow_id").is_in(server)
                               & (pl.col("class") == "stalled")).select(rel)
        out["timeout"] = ev.filter((pl.col("kind") == "timeout_sequence") & pl.col("flow_id").is_in(server)).select(rel)
        out["spurious"] = (ev.filter(pl.col("kind") == "spurious_timeout").select(rel)
                           .unique(subset=["t"]).sort("t"))
    if res.has("handoffs"):
        h = res.read("handoffs")
        if "ts" in h.columns:
            out["handoff"] = h.select((pl.col("ts") - t0).alias("t"), *(["carrier"] if "carrier" in h.columns else []))
    return out


def truth_overlay(bundle: str | Path, out: str | Path, analysis: str | Path | None = None, fmt: str | None = None) -> Path:
    """Draw the run of ``bundle`` with its ground truth (see the module docstring) into
    ``out`` (SVG, PNG or PDF by its suffix, or ``fmt``)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    from hsrtcp.lab.compare import flow_paths
    from hsrtcp.lab.scenario import CompiledScenario

    bundle = Path(bundle)
    m = manifest(bundle)
    cs = CompiledScenario.open(bundle / "scenario")
    seg = cs.segments().filter(pl.col("direction") == "down")
    ev = cs.events()
    t0 = float(m["t0"])
    paths = flow_paths(m)
    inf = _inferences(Path(analysis), t0) if analysis else {}
    n = len(paths)
    fig, axes = plt.subplots(n + (1 if inf else 0), 1, figsize=(7.2, 2.3 * n + (1.2 if inf else 0)), sharex=True,
                             gridspec_kw={"height_ratios": [3] * n + ([1.2] if inf else [])}, squeeze=False)
    axes = axes[:, 0]
    for ax, p in zip(axes, paths):
        ax.patch.set_gid(f"truth-axes-p{p}")
        s = seg.filter(pl.col("path") == p).sort("t_start")
        tt = np.append(s["t_start"].to_numpy(), s["t_end"].to_numpy()[-1])
        bw = s["bw_bps"].to_numpy().astype(float) / 1e6
        ax.fill_between(tt, np.append(bw, bw[-1]), step="post", color="0.85", lw=0, label="capacity offered")
        cap = bundle / "capture" / f"phone_p{p}.pcap"
        if cap.is_file():
            arr = _arrivals(cap, t0)
            if len(arr):
                # arrivals onto the emulator's clock (one path delay earlier), as compare does
                base = float(s["delay_s"].min())
                edges = np.arange(0.0, cs.duration_s + BIN_S, BIN_S)
                got, _ = np.histogram(arr[:, 0] - base, bins=edges, weights=arr[:, 1])
                ax.step(edges[:-1], got * 8 / BIN_S / 1e6, where="post", color=_COLORS[0], lw=1.0,
                        label=f"delivered ({BIN_S:g}-s bins)")
        for r in ev.filter(pl.col("path") == p).iter_rows(named=True):
            a, b, kind = r["t_start"], r["t_end"], r["kind"]
            if kind == "outage":
                held = r["outage_kind"] == "held"
                art = ax.axvspan(a, b, color="tab:red" if held else "black", alpha=0.35 if held else 0.5, lw=0)
                art.set_gid(f"truth-outage-{r['outage_kind']}-p{p}-{a:.3f}-{b:.3f}")
            elif kind == "loss_burst":
                art = ax.axvspan(a, b, ymin=0.0, ymax=0.08, color="tab:olive", lw=0)
                art.set_gid(f"truth-loss_burst-p{p}-{a:.3f}-{b:.3f}")
            elif kind == "rtt_spike":
                art = ax.axvspan(a, b, ymin=0.92, ymax=1.0, color="tab:cyan", lw=0)
                art.set_gid(f"truth-rtt_spike-p{p}-{a:.3f}-{b:.3f}")
            elif kind in ("coverage_hole", "stall"):
                art = ax.axvspan(a, b, color="0.6" if kind == "coverage_hole" else "tab:orange", alpha=0.25, lw=0)
                art.set_gid(f"truth-{kind}-p{p}-{a:.3f}-{b:.3f}")
            elif kind == "handoff":
                art = ax.axvline(a, color="tab:purple", lw=0.8, ls="--")
                art.set_gid(f"truth-handoff-p{p}-{a:.3f}")
        ax.set_ylabel(f"path {p}\nMbit/s")
        ax.set_xlim(0, cs.duration_s)
        ax.set_ylim(0, None)
    handles = [Patch(color="0.85", label="capacity offered"),
               matplotlib.lines.Line2D([], [], color=_COLORS[0], label="delivered"),
               Patch(color="tab:red", alpha=0.35, label="outage, held"), Patch(color="black", alpha=0.5, label="outage, dropped"),
               Patch(color="tab:olive", label="loss burst"), Patch(color="tab:cyan", label="RTT spike"),
               matplotlib.lines.Line2D([], [], color="tab:purple", ls="--", label="handoff")]
    axes[0].legend(handles=handles, fontsize=6, ncol=4, loc="upper center", bbox_to_anchor=(0.5, 1.45), frameon=False)
    if inf:
        ax = axes[-1]
        ax.set_xlim(0, cs.duration_s)
        for r in inf.get("gap", pl.DataFrame()).iter_rows(named=True):
            ax.broken_barh([(r["t"], r["t_end"] - r["t"])], (2.6, 0.8), color="tab:orange")
        for name, y, marker in (("timeout", 1.5, "x"), ("spurious", 1.5, "^")):
            d = inf.get(name)
            if d is not None and d.height:
                ax.plot(d["t"].to_list(), [y] * d.height, marker, color="k", ms=5, ls="none")
        h = inf.get("handoff")
        if h is not None and h.height:
            ax.vlines(h["t"].to_list(), 0.1, 0.9, color="tab:purple", lw=0.8)
        ax.set_yticks([0.5, 1.5, 3.0], ["radio-log\nhandoffs", "RTO x / spurious ^", "silences\n(stalled)"], fontsize=6)
        ax.set_ylim(0, 3.6)
        ax.set_ylabel("analyzer", fontsize=7)
    axes[-1].set_xlabel("time since the path's clock started (t0), s")
    fig.suptitle(f"{m.get('run_id')}: {m.get('cc') or ' '.join(m.get('command') or [])}, "
                 f"scenario {(m.get('scenario') or {}).get('name')} seed {(m.get('seeds') or {}).get('scenario')}",
                 fontsize=8, y=0.995)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, format=fmt or out.suffix.lstrip(".") or "svg")
    plt.close(fig)
    return out


def overlay(runs: list[tuple[str, str | Path]], out: str | Path, fmt: str | None = None) -> Path:
    """flent's overlay for runs of one path (the arms of a pair): the capacity offered and the
    scheduled outages once, the throughput each run's phone received on top of each other.
    ``runs``: (label, bundle) pairs; the first bundle's compiled path is drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from hsrtcp.lab.compare import flow_paths
    from hsrtcp.lab.scenario import CompiledScenario

    first = Path(runs[0][1])
    m0 = manifest(first)
    p = flow_paths(m0)[0]
    cs = CompiledScenario.open(first / "scenario")
    s = cs.segments().filter((pl.col("direction") == "down") & (pl.col("path") == p)).sort("t_start")
    fig, ax = plt.subplots(figsize=(7.2, 2.8))
    ax.patch.set_gid(f"truth-axes-p{p}")
    tt = np.append(s["t_start"].to_numpy(), s["t_end"].to_numpy()[-1])
    bw = s["bw_bps"].to_numpy().astype(float) / 1e6
    ax.fill_between(tt, np.append(bw, bw[-1]), step="post", color="0.85", lw=0, label="capacity offered")
    for r in cs.events().filter((pl.col("path") == p) & (pl.col("kind") == "outage")).iter_rows(named=True):
        art = ax.axvspan(r["t_start"], r["t_end"], color="tab:red" if r["outage_kind"] == "held" else "black",
                         alpha=0.3, lw=0)
        art.set_gid(f"truth-outage-{r['outage_kind']}-p{p}-{r['t_start']:.3f}-{r['t_end']:.3f}")
    edges = np.arange(0.0, cs.duration_s + BIN_S, BIN_S)
    base = float(s["delay_s"].min())
    for i, (label, b) in enumerate(runs):
        b = Path(b)
        m = manifest(b)
        arr = _arrivals(b / "capture" / f"phone_p{p}.pcap", float(m["t0"]))
        if len(arr):
            got, _ = np.histogram(arr[:, 0] - base, bins=edges, weights=arr[:, 1])
            ax.step(edges[:-1], got * 8 / BIN_S / 1e6, where="post", color=_COLORS[i % len(_COLORS)], lw=1.0,
                    label=label)
    ax.set_xlim(0, cs.duration_s)
    ax.set_ylim(0, None)
    ax.set_xlabel("time since t0, s")
    ax.set_ylabel(f"path {p}, Mbit/s")
    ax.legend(fontsize=6, ncol=4, loc="upper right")
    fig.suptitle(f"{(m0.get('scenario') or {}).get('name')} seed {(m0.get('seeds') or {}).get('scenario')}: "
                 f"{', '.join(label for label, _ in runs)}", fontsize=8)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, format=fmt or out.suffix.lstrip(".") or "svg")
    plt.close(fig)
    return out


def throughput_delay(runs: pl.DataFrame, out: str | Path, fmt: str | None = None) -> Path:
    """Pantheon's throughput-delay picture: a point per run (mean RTT, goodput), the arm's
    mean as a large mark; the delay axis runs right to left so better is up and right."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4.8, 3.6))
    ok = runs.filter(pl.col("goodput_bps").is_not_null() & pl.col("rtt_mean_s").is_not_null())
    for i, (arm,) in enumerate(ok.select("arm").unique(maintain_order=True).rows()):
        a = ok.filter(pl.col("arm") == arm)
        col = _COLORS[i % len(_COLORS)]
        x, y = a["rtt_mean_s"].to_numpy() * 1e3, a["goodput_bps"].to_numpy() / 1e6
        ax.scatter(x, y, s=14, color=col, alpha=0.6, label=f"{arm} ({a.height} runs)").set_gid(f"runs-{arm}")
        ax.scatter([x.mean()], [y.mean()], s=90, color=col, marker="D", edgecolor="k").set_gid(f"mean-{arm}")
    ax.invert_xaxis()
    ax.set_xlabel("mean RTT (ms; better to the right)")
    ax.set_ylabel("goodput (Mbit/s)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    out = Path(out)
    fig.savefig(out, format=fmt or out.suffix.lstrip(".") or "svg")
    plt.close(fig)
    return out
