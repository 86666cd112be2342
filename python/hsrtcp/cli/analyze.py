"""`hsrtcp analyze` and `hsrtcp demo` (click). The options of `hsrtcp analyze` are declared
once in :mod:`hsrtcp.cli.analyze_options`; the command is built from that table here, and the
quick path (:mod:`hsrtcp.cli.quick`) reads the same table."""

from __future__ import annotations

from pathlib import Path

import click

from hsrtcp.cli import analyze_options as spec
from hsrtcp.cli.options import Number
from hsrtcp.cli.quick import start
from hsrtcp.cli.run_analysis import run

# Inside the package, so an installed hsrtcp finds it from any directory.
EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def _click_type(option: spec.Option):
    """click's parameter type for an option's kind (what analyze_options.convert checks on the quick path)."""
    return {spec.PATH: click.Path(path_type=Path), spec.OUT: click.Path(), spec.TEXT: None,
            spec.COUNT: click.IntRange(min=1), spec.SECONDS: Number(min=0, min_open=True), spec.FLOAT: float,
            spec.CHOICE: click.Choice(option.choices) if option.choices else None}[option.kind]


def _with_options(command):
    """Decorate ``command`` with :data:`hsrtcp.cli.analyze_options.OPTIONS`, in their order."""
    for o in reversed(spec.OPTIONS):
        kw = {"help": o.help, "show_default": o.show_default, "metavar": o.metavar}
        if o.kind == spec.FLAG:
            if o.off:  # --plot/--no-plot
                decls = [f"{on}/{off}" for on, off in zip(o.opts, o.off)]
                kw["default"] = False
            else:
                decls = list(o.opts)
                kw["is_flag"] = True
        else:
            decls = list(o.opts)
            kw.update(type=_click_type(o), multiple=o.multiple)
            if not o.multiple and o.default is not None:
                kw["default"] = o.default
        if o.kind == spec.OUT:
            kw["callback"] = lambda ctx, param, v: _out_dir(v)
        command = click.option(*decls, o.name, **kw)(command)
    return command


@click.command()
@click.argument("captures", nargs=-1, type=click.Path(path_type=Path))
@_with_options
def analyze(**p):
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

    captures, client, server = p["captures"], p["client"], p["server"]
    if is_corpus([str(c) for c in captures], p["corpus"]):
        from hsrtcp.scale.cli import corpus_command

        for name, given in (("--radio-offset", p["radio_offset"] != 0.0),
                            ("--radio-format", p["radio_format"] != "auto")):
            if given:
                raise click.UsageError(f"{name} does not apply to a corpus: give it per input in a manifest "
                                       f"(docs/scale.md)")
        if p["packets"]:
            raise click.UsageError("--packets is for single runs, not a corpus: analyze the inputs whose "
                                   "packets you need on their own")

        raise SystemExit(corpus_command(captures, p["out"], client=client, server=server, vantage=p["vantage"],
                                        window_s=p["window_s"], csv=p["csv"], workers=p["workers"],
                                        quiet=p["quiet"], radio=p["radio"], carrier=p["carrier"],
                                        radio_map=p["radio_map"], labels=p["labels"], force=p["force"],
                                        scheduler=p["scheduler"], dask_local=p["dask_local"]))
    if p["force"] or p["scheduler"] or p["dask_local"]:
        raise click.UsageError("--force, --scheduler and --dask are for a corpus (docs/scale.md)")
    if not (captures or client or server):
        raise click.UsageError("give at least one capture (CAPTURE, --client or --server)")
    if len(client) != len(server):
        raise click.UsageError(f"--client and --server are paired by order: got {len(client)} "
                               f"--client and {len(server)} --server")
    for c in captures:
        if c.is_dir():
            from hsrtcp.bundle import is_bundle

            if not is_bundle(c):
                raise click.UsageError(f"{c}: a directory that is not a run bundle "
                                       f"(no capture/server.pcap or client.pcap + server.pcap)")
    _check_distinct(captures, client, server)
    context = None
    if (p["radio"] is not None or p["radio_map"] is not None or p["carrier"] is not None
            or p["radio_offset"] != 0.0 or p["radio_format"] != "auto"):
        # the checks of a corpus manifest's radio columns too (hsrtcp.context.options)
        from hsrtcp.context.options import OptionError, check_options

        try:
            context = check_options(radio=p["radio"], radio_format=p["radio_format"], radio_map=p["radio_map"],
                                    radio_offset=p["radio_offset"], carrier=p["carrier"])
        except OptionError as exc:
            raise click.BadParameter(str(exc), param_hint=f"'{exc.option}'") from None
    if context is not None or p["labels"]:
        from hsrtcp.context.labels import parse_labels

        try:
            context = dict(context or {}, labels=parse_labels(p["labels"]))
        except ValueError as exc:
            raise click.UsageError(str(exc)) from None
    raise SystemExit(start(p, context))


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
