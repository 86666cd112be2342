"""`hsrtcp mptcp RESULTS... [--baseline B] -o DIR`: seed 004's MPTCP instance metrics
(docs/mptcp.md; tables in docs/formats/mptcp-metrics.md).

RESULTS: run bundles, campaign directories of bundles, or `hsrtcp analyze` results
directories with server-vantage rows. Exit codes: 0 done, 2 usage, 3 input error (a
capture cut or corrupt: the metrics of what was read are still printed and written).
"""

from __future__ import annotations

from pathlib import Path

import click

from hsrtcp.cli.options import Number, count
from hsrtcp.errors import ExitCode

# Rates are counted per second over the instance: a longer span (11.6 days) is a typo.
MAX_SECONDS = 1_000_000


@click.command("mptcp")
@click.argument("results", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--baseline", type=click.Path(path_type=Path), multiple=True,
              help="single-path runs giving R_n, paired with the MPTCP instances by order "
                   "(default: the instance's own concurrent single-path flows)")
@click.option("-o", "--out", type=click.Path(path_type=Path), help="write mptcp_*.parquet here")
@click.option("--barrier", type=Number(0, 1), default=0.90, show_default=True,
              help="M31: positive needs U_t > barrier (strict)")
@click.option("--duration", "duration_s", type=Number(0, MAX_SECONDS, min_open=True),
              help="instance duration in s for R = bits / duration (default: the bundle's flow duration)")
@click.option("--window", type=count(1, MAX_SECONDS), default=10, show_default=True, help="A25 window, s")
@click.option("--before", type=Number(0), default=0.5, show_default=True, help="A25 (i): r' ≥ before × r in the window")
@click.option("--drop", type=Number(0, 1), default=0.5, show_default=True, help="A25 (ii): r'(t_d) ≤ drop × window mean")
@click.option("--after", type=Number(0), default=0.3, show_default=True, help="A25 (iii): r' ≤ after × r afterwards")
@click.option("--min-after", type=count(1, MAX_SECONDS), default=20, show_default=True,
              help="A25 (iii): at least this many seconds after t_d")
@click.option("--hold", type=count(1, MAX_SECONDS), default=3, show_default=True,
              help="the fall lasts: mean r' over [t_d, t_d + hold) ≤ drop × window mean (1: A25 as written)")
def mptcp(results, baseline, out, barrier, duration_s, window, before, drop, after, min_after, hold) -> None:
    """U_c, U_t (M29/M30), R'_n/R_n (M32), instance classes (M31), subflow degradation (M33, A25)
    and k_t (M34, A26) of every MPTCP instance; prints a summary, writes Parquet with -o."""
    from hsrtcp.mptcp import instance_metrics, write
    from hsrtcp.mptcp.degradation import DegradationRule
    from hsrtcp.mptcp.summary import lines

    rule = DegradationRule(window_s=window, before=before, drop=drop, after=after, min_after_s=min_after,
                           hold_s=hold)
    frames = instance_metrics(list(results), list(baseline) or None, barrier=barrier, rule=rule,
                              duration_s=duration_s)
    for line in lines(frames):
        click.echo(line)
    if out:
        for p in write(frames, out):
            click.echo(f"wrote {p}")
    errors = [e for e in frames["instances"]["capture_error"].to_list() if e]
    for e in errors:
        click.echo(f"error: {e} (the metrics above use the packets read before it)", err=True)
    if errors:
        raise SystemExit(ExitCode.INPUT)
