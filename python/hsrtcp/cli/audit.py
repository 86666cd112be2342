"""`hsrtcp audit RUNS... -o DIR`: how often the detectors are right, against the lab's truth
(docs/accuracy.md; files in docs/formats/audit.md).

RUNS: run bundles, directories of bundles (a campaign's output), or testbed capture pairs
named by their phone side (NAME.client.pcap, NAME.server.pcap beside it). Exit codes: 0 done,
2 usage, 3 input error (a run that cannot be read; a capture cut or corrupt: the verdicts of
what was read are still written).
"""

from __future__ import annotations

from pathlib import Path

import click


@click.command("audit")
@click.argument("runs", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("-o", "--out", type=click.Path(path_type=Path), required=True,
              help="directory for verdicts.csv, confusion.csv, connections.csv, runs.csv, audit.json")
@click.option("-q", "--quiet", is_flag=True, help="no summary")
def audit(runs, out, quiet) -> None:
    """Judge the spurious-timeout detectors (M12 by method, M14 causes, M10 timeouts, M13
    packets) of every run against the truth of its two captures: confusion counts, precision
    and recall with 95 % Wilson intervals, per detector and condition."""
    from hsrtcp.audit import audit as run_audit
    from hsrtcp.audit import tables, write

    if out.exists() and not out.is_dir():
        raise click.BadParameter(f"{out} exists and is not a directory", param_hint="-o/--out")
    for r in runs:
        if out.resolve() == r.resolve():
            raise click.BadParameter("the output directory is one of the runs", param_hint="-o/--out")
    a = run_audit(runs)
    if not quiet:
        conf = a.confusion()
        if conf.is_empty() and a.radio.is_empty():
            click.echo("no connection with both captures: nothing to judge")
        # the engine's detectors, then the radio log's (handoffs, M24) as the same rows
        for c in (conf, tables(a.radio) if not a.radio.is_empty() else conf.clear()):
            for r in c.filter(c["breakdown"] == "all").iter_rows(named=True) if not c.is_empty() else ():
                click.echo(_line(r))
    for p in write(a, out, base=Path.cwd()):
        if not quiet:
            click.echo(f"wrote {p}")
    for e in a.errors:
        click.echo(f"error: {e}", err=True)
    if a.errors:
        from hsrtcp.errors import ExitCode

        raise SystemExit(ExitCode.INPUT)


def _line(r: dict) -> str:
    prec = "–" if r["precision"] is None else f"{r['precision']:.2f} [{r['precision_lo']:.2f}, {r['precision_hi']:.2f}]"
    rec = "–" if r["recall"] is None else f"{r['recall']:.2f} [{r['recall_lo']:.2f}, {r['recall_hi']:.2f}]"
    return (f"{r['detector']:<17} {r['vantage']:<6} TP {r['tp']:>3} FP {r['fp']:>3} FN {r['fn']:>3} "
            f"TN {r['tn']:>3}  precision {prec}  recall {rec}  {r['confidence']}"
            + (f"  ({r['out_of_reach']} out of reach)" if r["out_of_reach"] else ""))
