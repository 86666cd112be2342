"""`hsrtcp apps RESULTS CAPTURE... [-o DIR]`: each flow's application and the breakdown per
class (docs/passive.md; tables in docs/formats/applications.md). Exit codes: 0 done, 2 usage,
3 input error."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("apps")
@click.argument("results", type=click.Path(path_type=Path))
@click.argument("captures", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path),
              help="write applications.parquet and application_breakdown.parquet here")
@click.option("--classes", type=click.Path(path_type=Path, dir_okay=False),
              help='class map, TOML or JSON: {"classes": {"domain.suffix": "class"}, "ports": {"443": "https"}}')
def apps(results, captures, out, classes) -> None:
    """Application of every flow (TLS SNI, HTTP Host, DNS answers in the capture, ports last)
    and of every QUIC connection (the SNI of its decrypted Initial packets), and flows, bytes
    and shares per class."""
    from hsrtcp.cli.captures import match_captures
    from hsrtcp.passive import apps as a
    from hsrtcp.results import ResultsDir

    flows = ResultsDir(results).read("flows", ["flow_id", "capture", "client_addr", "client_port", "server_addr",
                                               "server_port", "first_ts", "last_ts", "c2s_payload_bytes",
                                               "s2c_payload_bytes"])
    # the captures the analysis read (a capture of only QUIC or UDP has no flows but is one)
    names = set(ResultsDir(results).read("captures", ["capture"])["capture"].to_list())
    table = a.applications(flows, match_captures(results, names, captures), classes)
    bd = a.breakdown(flows, table)
    named = table.filter(pl_not_null(table))
    click.echo(f"{table.height} flows, {named.height} named "
               + ", ".join(f"{k} {v}" for k, v in table.group_by("source").len().sort("source").iter_rows() if k))
    for r in bd.iter_rows(named=True):
        quic_part = f" ({r['quic_flows']} QUIC)" if r["quic_flows"] else ""
        click.echo(f"  {r['class']}: {r['flows']} flows{quic_part}, {r['bytes']} bytes ({100 * (r['byte_share'] or 0):.1f} %)")
    if out:
        for p in a.write(table, bd, out):
            click.echo(f"wrote {p}")


def pl_not_null(df):
    import polars as pl
    return pl.col("name").is_not_null()
