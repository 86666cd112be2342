"""`hsrtcp figures` (click): every table and figure of the seed studies that the data allows,
with coverage.md and seeds.md (:mod:`hsrtcp.figures`; docs/figures.md)."""

from __future__ import annotations

from pathlib import Path

import click


@click.command()
@click.argument("study_dir", metavar="STUDY", type=click.Path(path_type=Path))
@click.argument("results", nargs=-1, type=click.Path(path_type=Path))
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), required=True,
              help="directory for the items (seedNNN-table-X.md/.csv, seedNNN-fig-NN.pdf/.csv), coverage.md, seeds.md")
@click.option("--only", default="", metavar="ID[,ID...]", help="make these items only (ids: --list)")
@click.option("--list", "list_", is_flag=True, help="list every item's id, title and needs, and exit")
@click.option("-q", "--quiet", is_flag=True, help="no summary")
def figures(study_dir, results, out, only, list_, quiet):
    """Make the seeds' numbered tables and figures from a study directory (hsrtcp study -o STUDY)
    and, for what the study tables do not keep, results directories of hsrtcp analyze or
    directories of MPTCP instance tables (hsrtcp mptcp -o DIR: seed 004's instances).
    coverage.md says for every item whether it was made and which input or column is missing.

    \b
    Examples:
      hsrtcp figures study -o gallery
      hsrtcp figures study results/* -o gallery
    """
    from hsrtcp.figures import build, refuse_out
    from hsrtcp.figures.inputs import Inputs
    from hsrtcp.figures.items import ITEMS

    if list_:
        for i in ITEMS:
            click.echo(f"{i.id}\t{i.title}\t{i.needs or i.diagram}")
        return
    ids = [x.strip() for x in only.split(",") if x.strip()]
    known = {i.id for i in ITEMS}
    bad = [x for x in ids if x not in known]
    if bad:
        raise click.BadParameter(f"unknown item {', '.join(bad)} (hsrtcp figures --list names them)",
                                 param_hint="--only")
    inputs = Inputs(study_dir, list(results))  # an InputError (exit 3) for a directory that is not a study
    problem = refuse_out(out, inputs)
    if problem:
        raise click.BadParameter(problem, param_hint="-o/--out")
    g = build(study_dir, list(results), only=ids or None)
    g.write(out)
    if not quiet:
        c = g.counts()
        click.echo(f"{len(g.outcomes)} items: made {c['made']}, partly {c['partly']}, not made {c['not made']}, "
                   f"drawings {c['drawing']}; written to {out}/ (coverage.md says what is missing)")
