"""`hsrtcp users RESULTS... [-o DIR]`: flows grouped by phone (docs/passive.md; table in
docs/formats/users.md). Exit codes: 0 done, 2 usage, 3 input error."""

from __future__ import annotations

from pathlib import Path

import click


@click.command("users")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), help="write users.parquet here")
@click.option("--by", type=click.Choice(["client", "bearer"]), default="client", show_default=True,
              help="client: the inner client (phone) address; bearer: GTP-U SGW address/uplink TEID")
@click.option("--map", "mapping", type=click.Path(path_type=Path, dir_okay=False),
              help="CSV 'address,user' (addresses or CIDR prefixes) naming the users")
@click.option("--session-gap", type=click.FloatRange(min=0), default=60.0, show_default=True,
              help="seconds without any open flow that end a user's session")
@click.option("--top", type=click.IntRange(min=0), default=10, show_default=True, help="users printed")
def users(results, out, by, mapping, session_gap, top) -> None:
    """One row per user: flows, bytes, active time, sessions and gaps, servers, bearers,
    handovers (seed 002's users' behaviour on passive traces)."""
    from hsrtcp.passive import users as u

    table = u.users(u.read_flows(list(results)), by=by, mapping=u.read_mapping(mapping) if mapping else None,
                    session_gap_s=session_gap)
    click.echo(f"{table.height} users, {int(table['flows'].sum() or 0)} flows, "
               f"{int(table['bytes'].sum() or 0)} bytes")
    for r in table.sort("bytes", descending=True).head(top).iter_rows(named=True):
        click.echo(f"  {r['user']} ({r['key']}): {r['flows']} flows, {r['bytes']} bytes, active {r['active_s']:.1f} s, "
                   f"{r['sessions']} sessions, {r['handovers']} handovers")
    if out:
        click.echo(f"wrote {u.write(table, out)}")
