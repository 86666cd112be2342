"""The flow summary table printed by `hsrtcp analyze`.

It works on plain rows (a list of dicts, as ``DataFrame.to_dicts()`` gives them, or as
:func:`hsrtcp.analyze_to` returns them) so that printing it does not need polars.
"""

from __future__ import annotations

from pathlib import Path

from rich.console import Console
from rich.table import Table

from hsrtcp.runner import ID_SHIFT
from hsrtcp.units import human_bytes, human_rate


def row_data_bytes(row: dict) -> int:
    """Payload bytes in a flow row's data direction (s2c unless the flow is an upload)."""
    key = "c2s_payload_bytes" if row.get("data_dir") == "c2s" else "s2c_payload_bytes"
    return row.get(key) or 0


def flow_number(flow_id: int) -> int:
    """A flow's number within its capture (the capture's index lives above ``ID_SHIFT``)."""
    return flow_id & ((1 << ID_SHIFT) - 1)


def capture_label(row: dict) -> str:
    """File name(s) of a flow row's capture(s) and its vantage: "a.pcap + b.pcap (matched)"."""
    names = " + ".join(Path(c).name for c in row["capture"].split(" + "))
    return f"{names} ({row.get('vantage') or '?'})"


def print_summary(flows: list[dict], captures: list[dict], console: Console | None = None,
                  limit: int = 20) -> None:
    """Print one line per capture and a table of the ``limit`` largest flows (by data bytes)."""
    console = console or Console()
    for row in captures:
        line = (f"[bold]{Path(row['capture']).name}[/]: {row['packets']:,} packets, "
                f"{row['tcp_packets']:,} TCP, {row['flows']:,} connections")
        if row["malformed_packets"]:
            line += f", [yellow]{row['malformed_packets']:,} malformed ({row['malformed_reasons']})[/]"
        console.print(line)
        if row["error"]:
            console.print(f"  [red]error:[/] {row['error']} (results before it are kept, marked truncated)")
    if not flows:
        console.print("no TCP connections found")
        return
    top = sorted(flows, key=lambda r: (-row_data_bytes(r), r["flow_id"]))[:limit]
    t = Table(title=f"TCP connections ({len(flows):,} rows; largest {min(limit, len(flows))} shown)",
              show_lines=False)
    for name, justify in [("flow", "right"), ("capture (vantage)", "left"), ("client → server", "left"),
                          ("data", "left"), ("duration", "right"), ("bytes", "right"),
                          ("mean rate", "right"), ("packets", "right"), ("retx", "right"),
                          ("RTOs", "right"), ("spurious", "right"), ("RTT", "right"), ("end", "left")]:
        t.add_column(name, justify=justify)
    for r in top:
        dur = r["duration_s"] or 0.0
        data = row_data_bytes(r)
        rate = data * 8 / dur if dur > 0 else None
        rtt = r.get("rtt_mean")
        t.add_row(
            str(flow_number(r["flow_id"])) if r["flow_id"] is not None else "",
            capture_label(r),
            f"{r['client_addr']}:{r['client_port']} → {r['server_addr']}:{r['server_port']}"
            + ("" if r["roles_from_syn"] else " (?)"),
            r["data_dir"] or "-",
            f"{dur:.2f} s",
            human_bytes(data),
            human_rate(rate) if rate is not None else "-",
            f"{(r['c2s_packets'] or 0) + (r['s2c_packets'] or 0):,}",
            _count(r.get("retransmissions")),
            _count(r.get("timeouts")),
            _count(r.get("spurious_timeouts")),
            f"{rtt * 1e3:.1f} ms" if rtt is not None else "-",
            r["end_reason"] + (" (truncated)" if r["truncated"] else ""),
        )
    console.print(t)
    _print_matched(top, console)


def _count(v) -> str:
    """A count, or '-' where the vantage cannot tell (null, never 0)."""
    return "-" if v is None else f"{v:,}"


def _pct(v) -> str:
    return "-" if v is None else f"{100 * v:.2f} %"


def _print_matched(flows: list[dict], console: Console) -> None:
    """One line per two-vantage row: what only both captures together can tell."""
    for r in (r for r in flows if r.get("vantage") == "matched"):
        parts = [f"data loss p_d {_pct(r.get('p_d'))}", f"ACK loss p_a {_pct(r.get('p_a'))}",
                 f"ACK burst loss P_a {_pct(r.get('ack_burst_loss'))}"]
        if r.get("q") is not None:
            parts.append(f"q {_pct(r['q'])}")
        if r.get("spurious_timeouts"):
            parts.append(f"spurious timeouts {r['spurious_timeouts']} (ACK loss "
                         f"{r.get('spurious_timeouts_ack_loss') or 0}, RTO estimation "
                         f"{r.get('spurious_timeouts_rto_estimation') or 0})")
        if r.get("clock_offset_s") is not None:
            unc = r.get("clock_offset_uncertainty_s")
            parts.append(f"clock offset {r['clock_offset_s'] * 1e3:+.3f} ms"
                         + (f" ± {unc * 1e3:.3f}" if unc is not None else ""))
        console.print(f"[bold]flow {flow_number(r['flow_id'])} (matched)[/]: " + ", ".join(parts))
