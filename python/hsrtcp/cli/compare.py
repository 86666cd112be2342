"""`hsrtcp compare RUNS... --by cc|arm -o OUT`: the arms of lab runs side by side, paired
(:mod:`hsrtcp.lab.compare`; docs/lab.md, "Comparing arms")."""

from __future__ import annotations

import os
from pathlib import Path

import click


@click.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--by", "by", type=click.Choice(["cc", "arm"]), default="cc", show_default=True,
              help="what an arm is: the congestion control, or a campaign variant's name")
@click.option("-o", "--out", "out", required=True, type=click.Path(file_okay=False, path_type=Path),
              help="directory for runs.csv, arms.csv, effects.csv, outages.csv, compare.txt and the "
                   "bundles' analyses (analyses/<run_id>, reused while a bundle is unchanged)")
@click.option("--reference", default=None, help="the arm the others are paired against (default: the first run's)")
@click.option("--bootstrap", "n_boot", type=click.IntRange(0), default=2000, show_default=True,
              help="bootstrap resamples of the pairs per interval (0: no intervals)")
@click.option("--min-pairs", type=click.IntRange(1), default=3, show_default=True,
              help="fewer pairs give no effect ('too few pairs')")
@click.option("--seed", type=int, default=0, show_default=True, help="seed of the bootstrap")
@click.option("--figures/--no-figures", default=True, show_default=True,
              help="figures/<run_id>.svg (each run with its ground truth: capacity offered against "
                   "throughput delivered, outages, loss bursts, RTT spikes, handoffs, and what the analyzer "
                   "inferred) and figures/throughput-delay.svg")
def compare(runs, by, out, reference, n_boot, min_pairs, seed, figures) -> None:
    """Compare the arms of lab runs: RUNS are campaign folders or bundles (`hsrtcp emulate`
    runs). Per arm: goodput, RTT, spurious RTOs, timeout recovery and, for every scheduled
    outage a flow crossed on its own path, the capacity it used in the 2 s after the outage
    and how long it took to use 80 % of it again; then each arm against the reference, paired
    run by run (same scenario, window, trip seed, flow and repetition) with bootstrap
    intervals over the pairs.

    \b
    Examples:
      hsrtcp compare runs/cc -o cmp                      # cubic vs bbr vs ...
      hsrtcp compare runs/mitigations --by arm --reference cubic -o cmp
    """
    from hsrtcp.lab import compare as cp

    for r in runs:
        if os.path.exists(out) and os.path.samefile(r, out) or Path(out).resolve().is_relative_to(Path(r).resolve()):
            raise click.BadParameter(f"{out} is inside the runs {r}: choose a directory outside them "
                                     "(a campaign folder holds its bundles only)", param_hint="-o/--out")
    try:
        c = cp.compare(list(runs), out, by=by, reference=reference, seed=seed, n_boot=n_boot, min_pairs=min_pairs)
    except ValueError as exc:
        from hsrtcp.errors import InputError

        if isinstance(exc, InputError):
            raise
        raise click.UsageError(str(exc)) from None
    cp.write(c, out, figures=figures)
    click.echo(c.text())
    click.echo(f"tables in {out}/ (runs.csv, arms.csv, effects.csv, outages.csv, compare.txt"
               + (", fairness.csv" if not c.fairness.is_empty() else "") + ("; figures/" if figures else "") + ")")
