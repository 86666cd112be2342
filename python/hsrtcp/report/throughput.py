"""Per-flow throughput over time (targets.md M3: 1-s bins, zeros kept)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from hsrtcp.report.summary import capture_label, flow_number, row_data_bytes


def plot_throughput(flows: pl.DataFrame, series: pl.DataFrame, path: str | Path,
                    max_flows: int = 8) -> Path | None:
    """Draw throughput (Mbit/s per 1-s bin) of the largest flows; returns the PNG path,
    or None when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if flows.is_empty() or series.is_empty():
        return None
    top = sorted((r for r in flows.to_dicts() if row_data_bytes(r) > 0), key=row_data_bytes,
                 reverse=True)[:max_flows]
    if not top:
        return None
    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=110)
    for r in top:
        s = series.filter(pl.col("flow_id") == r["flow_id"]).sort("bin")
        if s.is_empty():
            continue
        label = (f"{capture_label(r)} #{flow_number(r['flow_id'])} "
                 f"{r['server_addr']}:{r['server_port']} {r['data_dir']}")
        # each bin drawn over [start, start + 1 s): repeat the last value at its end
        t = s["t_rel"].to_numpy()
        mbps = s["bytes"].to_numpy() * 8 / 1e6
        ax.step(list(t) + [t[-1] + 1.0], list(mbps) + [mbps[-1]], where="post", label=label,
                linewidth=1.2)
    ax.set_xlabel("time since the connection's first packet (s)")
    ax.set_ylabel("throughput (Mbit/s, 1-s bins)")
    ax.set_title("Per-flow throughput (payload bytes in the data direction; 0 = nothing received)")
    ax.grid(alpha=0.3)
    ax.set_ylim(bottom=0)
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp.png")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)
    return path
