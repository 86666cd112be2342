"""The corpus form of ``hsrtcp analyze`` (click side): options checked, then
:func:`hsrtcp.scale.run.run_corpus`. Kept here so :mod:`hsrtcp.cli.analyze` only hooks in."""

from __future__ import annotations

import os

import click


def corpus_command(captures, out, *, client, server, vantage, window_s, csv, workers, quiet, radio, carrier,
                   radio_map, labels, force, scheduler, dask_local) -> int:
    if len(captures) != 1:
        raise click.UsageError(f"a corpus is one argument (a directory, a quoted glob or a .csv manifest), "
                               f"got {len(captures)}")
    if client or server:
        raise click.UsageError("a corpus finds its pairs itself (NAME.client.pcap + NAME.server.pcap, or the "
                               "manifest's pair column): no --client/--server with a corpus")
    for name, given in (("--vantage", vantage), ("--csv", csv), ("--radio", radio), ("--carrier", carrier),
                        ("--radio-map", radio_map)):
        if given:
            raise click.UsageError(f"{name} does not apply to a corpus: give it per input in a manifest "
                                   f"(docs/scale.md)")
    if scheduler and dask_local:
        raise click.UsageError("--scheduler and --dask exclude each other")
    if workers is not None and workers < 1:
        raise click.UsageError("-j must be at least 1")
    from hsrtcp.context.labels import parse_labels
    from hsrtcp.errors import ExitCode, OutputError
    from hsrtcp.output import shown
    from hsrtcp.scale.dask import SchedulerError
    from hsrtcp.scale.lock import LockedError
    from hsrtcp.scale.run import Terminated, run_corpus

    try:
        lab = parse_labels(labels)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from None
    try:
        return run_corpus(os.fspath(captures[0]), os.fspath(out), force=force, workers=workers,
                          scheduler=scheduler, dask_local=dask_local, quiet=quiet, window_s=window_s, labels=lab)
    except Terminated:
        click.echo("terminated (SIGTERM)", err=True)
        return ExitCode.TERMINATED
    except KeyboardInterrupt:  # the run stopped cleanly (no thread left): an ordinary exit
        click.echo("interrupted", err=True)
        return ExitCode.INTERRUPTED
    except (LockedError, SchedulerError, OutputError) as exc:
        click.echo(f"error: {shown(str(exc))}", err=True)
        return ExitCode.INPUT
    except OSError as exc:  # RESULTS not writable, disk full ...: a message, not a traceback
        where = exc.filename if exc.filename is not None else out
        click.echo(f"error: {shown(where)}: {exc.strerror or exc}", err=True)
        return ExitCode.INPUT
    except ValueError as exc:
        if exc.__class__ is ValueError:  # the corpus names nothing: a usage error
            raise click.UsageError(str(exc)) from None
        raise
