"""Per-flow throughput over time (targets.md M3: 1-s bins, zeros kept)."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from hsrtcp.report.summary import capture_label, flow_number


def data_bytes(flows: pl.DataFrame) -> pl.Expr:
    """Payload bytes in each flow's data direction (s2c unless the flow is an upload)."""
    return (
        pl.when(pl.col("data_dir") == "c2s")
        .then(pl.col("c2s_payload_bytes"))
        .otherwise(pl.col("s2c_payload_bytes"))
    )


def plot_throughput(flows: pl.DataFrame, series: pl.DataFrame, path: str | Path,
                    max_flows: int = 8) -> Path | None:
    """Draw throughput (Mbit/s per 1-s bin) of the largest flows; returns the PNG path,
    or None when there is nothing to draw."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if flows.is_empty() or series.is_empty():
        return None
    top = (flows.with_columns(data_bytes(flows).alias("_b"))
           .filter(pl.col("_b") > 0).sort("_b", descending=True).head(max_flows))
    if top.is_empty():
        return None
    fig, ax = plt.subplots(figsize=(10, 4.5), dpi=110)
    for r in top.iter_rows(named=True):
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
