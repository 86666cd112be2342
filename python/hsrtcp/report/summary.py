"""The flow summary table printed by `hsrtcp analyze`."""

from __future__ import annotations

from pathlib import Path

import polars as pl
from rich.console import Console
from rich.table import Table

from hsrtcp.units import human_bytes, human_rate


def data_bytes(flows: pl.DataFrame) -> pl.Expr:
    """Payload bytes in each flow's data direction (s2c unless the flow is an upload)."""
    return (
        pl.when(pl.col("data_dir") == "c2s")
        .then(pl.col("c2s_payload_bytes"))
        .otherwise(pl.col("s2c_payload_bytes"))
    )


def print_summary(flows: pl.DataFrame, captures: pl.DataFrame, console: Console | None = None,
                  limit: int = 20) -> None:
    console = console or Console()
    for row in captures.iter_rows(named=True):
        line = (f"[bold]{Path(row['capture']).name}[/]: {row['packets']:,} packets, "
                f"{row['tcp_packets']:,} TCP, {row['flows']:,} connections")
        if row["malformed_packets"]:
            line += f", [yellow]{row['malformed_packets']:,} malformed ({row['malformed_reasons']})[/]"
        console.print(line)
        if row["error"]:
            console.print(f"  [red]error:[/] {row['error']} (results before it are kept, marked truncated)")
    if flows.is_empty():
        console.print("no TCP connections found")
        return
    f = flows.with_columns(data_bytes(flows).alias("_bytes")).sort("_bytes", descending=True)
    t = Table(title=f"TCP connections ({len(flows):,}; largest {min(limit, len(flows))} shown)",
              show_lines=False)
    for name, justify in [("flow", "right"), ("capture", "left"), ("client → server", "left"),
                          ("data", "left"), ("duration", "right"), ("bytes", "right"),
                          ("mean rate", "right"), ("packets", "right"), ("end", "left")]:
        t.add_column(name, justify=justify)
    for r in f.head(limit).iter_rows(named=True):
        dur = r["duration_s"] or 0.0
        rate = r["_bytes"] * 8 / dur if dur > 0 else None
        t.add_row(
            str(r["flow_id"] & ((1 << 40) - 1)) if r["flow_id"] is not None else "",
            Path(r["capture"]).name,
            f"{r['client_addr']}:{r['client_port']} → {r['server_addr']}:{r['server_port']}"
            + ("" if r["roles_from_syn"] else " (?)"),
            r["data_dir"] or "-",
            f"{dur:.2f} s",
            human_bytes(r["_bytes"]),
            human_rate(rate) if rate is not None else "-",
            f"{(r['c2s_packets'] or 0) + (r['s2c_packets'] or 0):,}",
            r["end_reason"] + (" (truncated)" if r["truncated"] else ""),
        )
    console.print(t)
