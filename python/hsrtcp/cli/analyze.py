"""`hsrtcp analyze` and `hsrtcp demo`."""

from __future__ import annotations

import sys
from pathlib import Path

import click

EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def _run(captures: list[Path], vantages: list[str | None], out: Path, csv: bool, plot: bool,
         workers: int | None, quiet: bool, client: list[Path] | None = None,
         server: list[Path] | None = None, window_s: float = 30.0) -> int:
    """Analyze, write the tables to ``out``, draw the plot, print the summary; the exit code.

    Single captures go straight to Parquet (:func:`hsrtcp.analyze_to`: flat memory, and
    polars is imported only for --csv and the plot); two-vantage pairs and run bundles go
    through :func:`hsrtcp.analyze`, whose matcher works on the tables in memory.
    """
    if client or server or any(p.is_dir() for p in captures):
        import hsrtcp

        ds = hsrtcp.analyze(captures, vantage=vantages, workers=workers, progress=not quiet,
                            client=client or None, server=server or None, window_s=window_s)
        written = ds.write(out, csv=csv)
        flows = None if quiet else ds.flows.to_dicts()
        capture_rows, errors = ds.captures.to_dicts(), ds.errors
    else:
        from hsrtcp.streaming import analyze_to, parquet_to_csv

        w = analyze_to(captures, out, vantage=vantages, workers=workers, progress=not quiet,
                       keep_flows=not quiet)
        written = list(w.paths) + (parquet_to_csv(w.paths) if csv else [])
        flows, capture_rows, errors = w.flows, w.captures, w.errors
    if plot:
        import polars as pl

        from hsrtcp.report.throughput import plot_throughput

        png = plot_throughput(pl.read_parquet(out / "flows.parquet"),
                              pl.read_parquet(out / "series.parquet"), out / "throughput.png")
        if png:
            written.append(png)
    if not quiet:
        from rich.console import Console

        from hsrtcp.report.summary import print_summary

        # Piped output (logs, CI) gets a wide table instead of rich's 80-column default.
        console = Console(stderr=False, width=None if sys.stdout.isatty() else 180)
        print_summary(flows, capture_rows, console)
        console.print(f"wrote {', '.join(p.name for p in written)} to {out}/")
    # Input errors still write the partial results, then exit 3.
    return 3 if errors else 0


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
@click.option("--window", "window_s", type=float, default=30.0, show_default=True,
              help="two-vantage matching: seconds a packet waits for its twin in the other capture")
@click.option("--csv", is_flag=True, help="also write CSV next to Parquet")
@click.option("--plot/--no-plot", default=True, show_default=True, help="write throughput.png")
@click.option("-j", "--workers", type=int, help="captures analyzed in parallel (default: CPUs)")
@click.option("-q", "--quiet", is_flag=True, help="no progress bar and no summary")
def analyze(captures, out, client, server, vantage, window_s, csv, plot, workers, quiet):
    """Analyze capture files (pcap/pcapng, plain or .gz) into flows, events and series tables.

    --client and --server captures are paired by order (the first --client with the first
    --server, ...) and also analyzed together: flows then carry rows with vantage "matched"
    (data and ACK loss p_d / p_a, ACK burst loss, q, one-way delays, clock offset, spurious
    timeouts with their cause). A CAPTURE that is a run-bundle directory is analyzed as its
    phone/server pair.

    \b
    Examples:
      hsrtcp analyze trace.pcap -o out
      hsrtcp analyze --client phone.pcap --server server.pcap -o out
      hsrtcp analyze --client a.phone.pcap --server a.server.pcap \\
                     --client b.phone.pcap --server b.server.pcap -o out
      hsrtcp analyze RUNS/run-0001 -o out
    """
    if not (captures or client or server):
        raise click.UsageError("give at least one capture (CAPTURE, --client or --server)")
    if len(client) != len(server):
        raise click.UsageError(f"--client and --server are paired by order: got {len(client)} "
                               f"--client and {len(server)} --server")
    if window_s <= 0:
        raise click.UsageError("--window must be positive")
    for p in captures:
        if p.is_dir():
            from hsrtcp.pair import is_bundle

            if not is_bundle(p):
                raise click.UsageError(f"{p}: a directory that is not a run bundle "
                                       f"(no capture/server.pcap or client.pcap + server.pcap)")
    vantages = [vantage] * len(captures)
    raise SystemExit(_run(list(captures), vantages, out, csv, plot, workers, quiet,
                          list(client), list(server), window_s))


@click.command()
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=Path("out"),
              show_default=True)
def demo(out):
    """Analyze the bundled example (a phone-side and server-side capture of one download)."""
    client = EXAMPLES / "phone.pcap"
    server = EXAMPLES / "server.pcap"
    for f in (client, server):
        if not f.exists():
            raise click.ClickException(f"bundled example missing: {f}")
    click.echo(f"hsrtcp demo: analyzing {client.name} (phone side) and {server.name} (server side)")
    raise SystemExit(_run([], [], out, True, True, None, False, [client], [server]))
