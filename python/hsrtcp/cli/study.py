"""`hsrtcp study` (click): the seeds' grouped tables from results directories
(:mod:`hsrtcp.study`; schemas in docs/formats/study.md, the tables explained in docs/study.md)."""

from __future__ import annotations

import os
from pathlib import Path

import click


@click.command()
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), required=True,
              help="directory for the study tables (Parquet) and study.json")
@click.option("--by", "by", default="", metavar="COL[,COL...]",
              help="extra dimensions: cc, carrier, scenario, flow_type, workload, result, generations "
                   "(2G ... 5G SA), or any flows/context/labels column")
@click.option("--min-flows", type=int, default=1, show_default=True,
              help="cells with fewer flows give null and a note instead of a number (intervals need 5 "
                   "flows in any case: below, a value without an interval and a note)")
@click.option("--bootstrap", "n_boot", type=int, default=1000, show_default=True,
              help="bootstrap resamples per confidence interval (0: no intervals)")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the bootstrap")
@click.option("--scheduler", default=None, metavar="ADDRESS",
              help="read the partitions on a running Dask cluster (tcp://HOST:PORT), one task per partition; "
                   "the output's parent directory must be the same path on every worker")
@click.option("-q", "--quiet", is_flag=True, help="no summary, no progress")
def study(results, out, by, min_flows, n_boot, seed, scheduler, quiet):
    """Group one or many results directories (of `hsrtcp analyze`) into the seeds' tables:
    flows per class, throughput/RTT/loss, spurious RTO rate and causes (seed 000 Tables
    VII-VIII), DupACK rate (IX), establishment/closure, failure rate by size, timeout
    recovery and q (seed 001), handoff intervals and suspensions (seed 003), coverage.

    \b
    Examples:
      hsrtcp study out/run1 out/run2 -o study
      hsrtcp study results/* -o study --by cc,workload --min-flows 10
    """
    if min_flows < 1:
        raise click.UsageError("--min-flows must be at least 1")
    if n_boot < 0:
        raise click.UsageError("--bootstrap must be 0 or more")
    from hsrtcp.study import refuse_out
    from hsrtcp.study import study as build

    problem = refuse_out(out, results)  # before the work: never into the tables it reads
    if problem:
        raise click.BadParameter(problem, param_hint="-o/--out")
    # one partition at a time in bounded memory (hsrtcp.study.stream); HSRTCP_STUDY_STREAM=0
    # selects the in-memory path of before (the bench compares both)
    stream = os.environ.get("HSRTCP_STUDY_STREAM", "1") != "0"
    if scheduler and not stream:
        raise click.UsageError("--scheduler needs the streaming path (HSRTCP_STUDY_STREAM=0 is set)")
    # the spooled rows next to the output (a shared mount on a cluster); else the temp directory
    spool = os.path.dirname(os.path.abspath(out))
    spool = spool if os.path.isdir(spool) and os.access(spool, os.W_OK) else None
    try:
        s = build(list(results), by=by, min_flows=min_flows, bootstrap=n_boot, seed=seed,
                  **({"stream": True, "scheduler": scheduler, "progress": not quiet, "spool_dir": spool,
                      "processes": True, "write_ahead": True}
                     if stream else {}))
    except ValueError as exc:
        from hsrtcp.errors import InputError

        if isinstance(exc, InputError):
            raise
        raise click.UsageError(str(exc)) from exc
    s.write(out)  # (an OutputError naming the path: exit 3)
    if not quiet:
        click.echo(s.summary())
        click.echo(f"tables written to {out}/ ({', '.join(s.tables)}; study.json)")
    failures = s.tables.get("failures")
    if failures is not None and failures.height:
        from hsrtcp.errors import InputError

        first = failures["reason"][0]
        raise InputError(f"{failures.height} of {s.partitions} results directories could not be read and were "
                         f"skipped (failures.parquet in {out}; the tables count the others); first: {first}")
