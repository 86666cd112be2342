"""`hsrtcp analyze` and `hsrtcp demo` (click). The plain forms of `hsrtcp analyze` are also
understood by :mod:`hsrtcp.cli.quick`, which must stay in step with the options here
(tests/python/foundation/test_quick_cli.py checks that it does)."""

from __future__ import annotations

import math
from pathlib import Path

import click

from hsrtcp.cli.run_analysis import run

# hsrtcp.context.options.FORMATS (not imported: the context package loads polars)
RADIO_FORMATS = ("auto", "lab", "csv", "nmea", "gpx", "gnettrack", "gsmtap")

# Inside the package, so an installed hsrtcp finds it from any directory.
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


@click.command()
@click.argument("captures", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", type=click.Path(), default="out", show_default=True,
              callback=lambda ctx, param, v: _out_dir(v), help="directory for the result tables")
@click.option("--client", "client", multiple=True, type=click.Path(path_type=Path),
              help="a capture taken at the client (phone) side")
@click.option("--server", "server", multiple=True, type=click.Path(path_type=Path),
              help="a capture taken at the server side")
@click.option("--vantage", type=click.Choice(["client", "server"]),
              help="vantage of the positional CAPTURES")
@click.option("--window", "window_s", type=float, default=30.0, show_default=True,
              help="two-vantage matching: seconds a packet waits for its twin in the other capture")
@click.option("--match-memory", "match_memory_mb", type=click.IntRange(min=1), default=256, show_default=True,
              metavar="MB", help="two-vantage matching: memory for packets waiting in a window, per pair; "
                                 "beyond it windows close early and the run warns (docs/two-vantage.md, Memory)")
@click.option("--csv", is_flag=True, help="also write CSV next to Parquet")
@click.option("--packets", is_flag=True,
              help="also write packets.parquet: a row per TCP segment with its frame number (docs/formats/packets.md)")
@click.option("--plot/--no-plot", default=False, show_default=True,
              help="also draw throughput.png (slower: matplotlib; `hsrtcp plot` draws any figure later)")
@click.option("-j", "--workers", type=click.IntRange(min=1), help="captures analyzed in parallel (default: CPUs)")
@click.option("-q", "--quiet", is_flag=True, help="no progress bar and no summary")
@click.option("--radio", type=click.Path(path_type=Path),
              help="radio/GPS log of the captures (docs/context.md): adds handoffs, classes, coverage")
@click.option("--radio-offset", "radio_offset", type=float, default=0.0, show_default=True,
              help="seconds added to the radio log's times to put them on the capture clock")
@click.option("--radio-format", "radio_format", default="auto", show_default=True,
              type=click.Choice(RADIO_FORMATS), help="format of --radio")
@click.option("--radio-map", "radio_map",
              help="generic CSV columns: FIELD=COLUMN[:UNIT],... e.g. time=Timestamp:ms,speed=Speed:m/s")
@click.option("--carrier", help="carrier of the captures when the radio log has several")
@click.option("--label", "labels", multiple=True, help="KEY=VALUE added to labels.parquet (repeatable)")
@click.option("--corpus", "corpus", is_flag=True,
              help="CAPTURE is a corpus (directory tree, glob or .csv manifest): one partition per input "
                   "(docs/scale.md); implied for a .csv, a quoted glob or a directory that is not a run bundle")
@click.option("--force", is_flag=True, help="corpus: re-analyze inputs whose results are up to date")
@click.option("--scheduler", metavar="tcp://HOST:PORT", help="corpus: run on this Dask scheduler's workers")
@click.option("--dask", "dask_local", is_flag=True, help="corpus: run on a local Dask cluster")
def analyze(captures, out, client, server, vantage, window_s, match_memory_mb, csv, packets, plot, workers, quiet,
            radio, radio_offset, radio_format, radio_map, carrier, labels, corpus, force, scheduler, dask_local):
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
      hsrtcp analyze --client phone.pcap --server server.pcap --radio trip.csv \\
                     --radio-offset 0.04 --carrier M --label site=BJ-TJ -o out
      hsrtcp analyze field-captures/ -o results          (a corpus: docs/scale.md)
      hsrtcp analyze 'field/**/*.pcap' -o results --scheduler tcp://head:8786
    """
    from hsrtcp.scale.discover import is_corpus

    if is_corpus([str(c) for c in captures], corpus):
        from hsrtcp.scale.cli import corpus_command

        for name, given in (("--radio-offset", radio_offset != 0.0), ("--radio-format", radio_format != "auto")):
            if given:
                raise click.UsageError(f"{name} does not apply to a corpus: give it per input in a manifest "
                                       f"(docs/scale.md)")
        if packets:
            raise click.UsageError("--packets is for single runs, not a corpus: analyze the inputs whose "
                                   "packets you need on their own")

        raise SystemExit(corpus_command(captures, out, client=client, server=server, vantage=vantage,
                                        window_s=window_s, csv=csv, workers=workers, quiet=quiet, radio=radio,
                                        carrier=carrier, radio_map=radio_map, labels=labels, force=force,
                                        scheduler=scheduler, dask_local=dask_local))
    if force or scheduler or dask_local:
        raise click.UsageError("--force, --scheduler and --dask are for a corpus (docs/scale.md)")
    if not (captures or client or server):
        raise click.UsageError("give at least one capture (CAPTURE, --client or --server)")
    if len(client) != len(server):
        raise click.UsageError(f"--client and --server are paired by order: got {len(client)} "
                               f"--client and {len(server)} --server")
    if not (math.isfinite(window_s) and window_s > 0):
        raise click.UsageError(f"--window must be a positive number of seconds, got {window_s}")
    for p in captures:
        if p.is_dir():
            from hsrtcp.pair import is_bundle

            if not is_bundle(p):
                raise click.UsageError(f"{p}: a directory that is not a run bundle "
                                       f"(no capture/server.pcap or client.pcap + server.pcap)")
    _check_distinct(captures, client, server)
    context = None
    if (radio is not None or radio_map is not None or carrier is not None or radio_offset != 0.0
            or radio_format != "auto"):
        # the checks of a corpus manifest's radio columns too (hsrtcp.context.options)
        from hsrtcp.context.options import OptionError, check_options

        try:
            context = check_options(radio=radio, radio_format=radio_format, radio_map=radio_map,
                                    radio_offset=radio_offset, carrier=carrier)
        except OptionError as exc:
            raise click.BadParameter(str(exc), param_hint=f"'{exc.option}'") from None
    if context is not None or labels:
        from hsrtcp.context.labels import parse_labels

        try:
            context = dict(context or {}, labels=parse_labels(labels))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    vantages = [vantage] * len(captures)
    raise SystemExit(run(list(captures), vantages, out, csv, plot, workers, quiet,
                          list(client), list(server), window_s, context, match_memory_mb, packets))


def _out_dir(value: str) -> Path:
    """-o: a non-empty path (click turns an empty one into the current directory)."""
    if value == "":
        raise click.BadParameter("the output directory must not be empty", param_hint="'-o' / '--out'")
    return Path(value)


def _check_distinct(captures, client, server) -> None:
    """Each capture once: a file given twice, under another name (a symlink, a hard link) or
    as a byte-identical copy would count its flows twice, and a pair's two sides must be two
    captures (hsrtcp.runner.same_inputs; run bundles' own files are checked when expanded)."""
    from hsrtcp.runner import same_inputs

    message = same_inputs([c for c in captures if not c.is_dir()], client, server)
    if message:
        raise click.UsageError(message)


@click.command()
@click.option("-o", "--out", "out", type=click.Path(), default="out", show_default=True,
              callback=lambda ctx, param, v: _out_dir(v))
def demo(out):
    """Analyze the bundled example (a phone-side and server-side capture of one download)."""
    client = EXAMPLES / "phone.pcap"
    server = EXAMPLES / "server.pcap"
    for f in (client, server):
        if not f.exists():
            raise click.ClickException(f"bundled example missing: {f}")
    click.echo(f"hsrtcp demo: analyzing {client.name} (phone side) and {server.name} (server side)")
    raise SystemExit(run([], [], out, True, True, None, False, [client], [server]))
