"""`hsrtcp report RESULTS [STUDY] -o report.html`: one self-contained HTML report (docs/report.md).

RESULTS is the -o directory of `hsrtcp analyze`; STUDY, optional, the -o directory of
`hsrtcp study`. Exit codes: 0 written, 2 usage, 3 input error (missing or older-schema
table, no flows, bad study, charting library not installed).
"""

from __future__ import annotations

from pathlib import Path

import click

from hsrtcp.cli.options import count


@click.command("report")
@click.argument("results", type=click.Path(path_type=Path))
@click.argument("study", type=click.Path(path_type=Path), required=False)
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), default=Path("report.html"),
              show_default=True, help="HTML file to write")
@click.option("--top", type=count(0), default=50, show_default=True,
              help="embed the per-flow charts of the N largest flows by data bytes (the flow table lists all)")
@click.option("--width", type=count(100, 1_000_000), default=1200, show_default=True,
              help="chart width in pixels that long series are downsampled to (per pixel column)")
@click.option("--gallery/--no-gallery", default=True, show_default=True,
              help="the studies' gallery: what `hsrtcp figures` makes from STUDY (else a study of RESULTS)")
@click.option("-q", "--quiet", is_flag=True, help="no progress, no closing line (errors are still shown)")
def report(results: Path, study: Path | None, out: Path, top: int, width: int, gallery: bool, quiet: bool) -> None:
    """Write a self-contained HTML report: captures and read errors, a sortable flow table,
    per-class tables and CDFs (from STUDY), per-flow time-sequence, throughput, window and RTT
    charts, model fit, MPTCP, lab provenance. Opens offline in any browser."""
    from hsrtcp.errors import InputError
    from hsrtcp.report.assets import MissingAssetError
    from hsrtcp.report.build import build_report

    try:
        # the phases on stderr: a bar on a terminal, else a line each (a corpus takes minutes)
        info = build_report(results, study, out, top=top, width=width, gallery=gallery, progress=not quiet)
    except MissingAssetError as exc:
        raise InputError(str(exc)) from None
    if not quiet:
        click.echo(f"wrote {info.path} ({info.bytes / 1e6:.2f} MB: {info.flows} flows, charts for {info.detailed}; "
                   f"{info.seconds:.2f} s)", err=True)  # stderr: `-o /dev/stdout` carries the page
