"""`hsrtcp analyze` and `hsrtcp demo`."""

from __future__ import annotations

from pathlib import Path

import click

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _run(captures: list[Path], vantages: list[str | None], out: Path, csv: bool, plot: bool,
         workers: int | None, quiet: bool) -> int:
    from rich.console import Console

    import hsrtcp
    from hsrtcp.report.summary import print_summary
    from hsrtcp.report.throughput import plot_throughput

    console = Console(stderr=False)
    ds = hsrtcp.analyze(captures, vantage=vantages, workers=workers, progress=not quiet)
    written = ds.write(out, csv=csv)
    if plot:
        png = plot_throughput(ds.flows, ds.series, out / "throughput.png")
        if png:
            written.append(png)
    if not quiet:
        print_summary(ds.flows, ds.captures, console)
        console.print(f"wrote {', '.join(p.name for p in written)} to {out}/")
    # Input errors still write the partial results, then exit 3.
    return 3 if ds.errors else 0


@click.command()
@click.argument("captures", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=Path("out"),
              show_default=True, help="directory for the result tables")
@click.option("--client", "client", multiple=True, type=click.Path(path_type=Path),
              help="a capture taken at the client (phone) side")
@click.option("--server", "server", multiple=True, type=click.Path(path_type=Path),
              help="a capture taken at the server side")
@click.option("--vantage", type=click.Choice(["client", "server"]),
              help="vantage of the positional CAPTURES")
@click.option("--csv", is_flag=True, help="also write CSV next to Parquet")
@click.option("--plot/--no-plot", default=True, show_default=True, help="write throughput.png")
@click.option("-j", "--workers", type=int, help="captures analyzed in parallel (default: CPUs)")
@click.option("-q", "--quiet", is_flag=True, help="no progress bar and no summary")
def analyze(captures, out, client, server, vantage, csv, plot, workers, quiet):
    """Analyze capture files (pcap/pcapng, plain or .gz) into flows, events and series tables.

    \b
    Examples:
      hsrtcp analyze trace.pcap -o out
      hsrtcp analyze --client phone.pcap --server server.pcap -o out
    """
    files = list(captures) + list(client) + list(server)
    if not files:
        raise click.UsageError("give at least one capture (CAPTURE, --client or --server)")
    vantages = [vantage] * len(captures) + ["client"] * len(client) + ["server"] * len(server)
    raise SystemExit(_run(files, vantages, out, csv, plot, workers, quiet))


@click.command()
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=Path("out"),
              show_default=True)
def demo(out):
    """Analyze the bundled example (a phone-side and server-side capture of one download)."""
    client = EXAMPLES / "client.pcap"
    server = EXAMPLES / "server.pcap"
    for f in (client, server):
        if not f.exists():
            raise click.ClickException(f"bundled example missing: {f}")
    click.echo(f"hsrtcp demo: analyzing {client.name} (phone side) and {server.name} (server side)")
    raise SystemExit(_run([client, server], ["client", "server"], out, True, True, None, False))
