"""``python -m hsrtcp.findings RUNS RESULTS -o OUT``: the findings of a paired campaign.

Exit codes as the CLI's: 0 ok, 2 usage, 3 input (a message naming the file), 4 internal.
"""

from __future__ import annotations

import sys

import click

from hsrtcp.errors import ExitCode, InputError


@click.command()
@click.argument("runs", type=click.Path(file_okay=False))
@click.argument("results", type=click.Path(file_okay=False))
@click.option("--out", "-o", required=True, type=click.Path(file_okay=False), help="Output directory.")
@click.option("--bootstrap", default=2000, show_default=True, type=click.IntRange(0, 100_000),
              help="Bootstrap resamples per interval (0: no intervals).")
@click.option("--seed", default=0, show_default=True, type=int, help="Seed of the bootstrap.")
@click.option("--min-pairs", default=3, show_default=True, type=click.IntRange(1, 1000),
              help="Fewer pairs than this: no effect is given.")
@click.option("--also-runs", multiple=True, type=click.Path(file_okay=False),
              help="Another campaign's runs directory read with RUNS (e.g. the A/A campaign); repeatable.")
@click.option("--no-figures", is_flag=True, help="Tables only.")
@click.option("--include-noisy", is_flag=True,
              help="Keep the runs marked noisy (ran above their campaign's max_load; left out by default).")
def main(runs, results, out, bootstrap, seed, min_pairs, also_runs, no_figures, include_noisy) -> None:
    """Paired effect sizes of a campaign with [[variants]] (campaigns/mitigations.toml):
    RUNS holds its bundles, RESULTS/<run_id> their hsrtcp analyze outputs."""
    from hsrtcp.findings import build

    try:
        f = build(runs, results, seed=seed, n_boot=bootstrap, min_pairs=min_pairs, also_runs=list(also_runs),
                  include_noisy=include_noisy)
        paths = f.write(out, figures=not no_figures)
    except InputError as exc:
        click.echo(f"error: {exc}", err=True)
        sys.exit(ExitCode.INPUT)
    ok = f.arms.filter(f.arms["status"] == "ok").height
    click.echo(f"{ok} of {f.arms.height} runs used; {len(paths)} files in {out}", err=True)
    for n in f.notes:
        click.echo(f"note: {n}", err=True)


if __name__ == "__main__":
    main()
