"""`hsrtcp congestion RESULTS CAPTURE... [-o DIR]`: the congestion control each flow's sender
ran, inferred from the capture (docs/passive.md, "Congestion control"; table in
docs/formats/congestion.md). Exit codes: 0 done, 2 usage, 3 input error."""

from __future__ import annotations

from pathlib import Path

import click

FLOW_COLUMNS = ["flow_id", "capture", "client_addr", "client_port", "server_addr", "server_port", "first_ts",
                "last_ts", "c2s_payload_bytes", "s2c_payload_bytes", "data_vantage", "rtt_median", "rtt_mean",
                "mss_data"]


@click.command("congestion")
@click.argument("results", type=click.Path(path_type=Path))
@click.argument("captures", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), help="write congestion.parquet here")
def congestion(results, captures, out) -> None:
    """Sender's congestion control per flow (reno, cubic, bbr or unknown) from its response
    to loss and BBR's ProbeRTT; captures at the sender only (receiver side: unknown)."""
    from hsrtcp.cli.captures import match_captures
    from hsrtcp.passive import congestion as c
    from hsrtcp.results import ResultsDir

    rd = ResultsDir(results)
    flows = rd.read("flows", FLOW_COLUMNS)
    names = set(rd.read("captures", ["capture"])["capture"].to_list())
    table = c.infer(flows, match_captures(results, names, captures))
    counts = table.group_by("congestion_control").len().sort("congestion_control")
    click.echo(f"{table.height} flows: " + ", ".join(f"{k} {v}" for k, v in counts.iter_rows()))
    if out:
        for p in c.write(table, out):
            click.echo(f"wrote {p}")
