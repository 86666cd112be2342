"""`hsrtcp plot KIND RESULTS [--flow ID] -o FILE.{png,svg,pdf}`: a figure from result tables.

Parquet in, picture out: RESULTS is the directory `hsrtcp analyze` wrote (or, for ``cdf``,
a study directory of `hsrtcp study`); the captures are never read. docs/plot.md shows every
kind with the tables and columns it draws.
"""

from __future__ import annotations

from pathlib import Path

import click

from hsrtcp.cli.options import Number
from hsrtcp.plot import KINDS

# A window within 1e9 s (32 years) of the flow's start: matplotlib cannot lay out an axis
# whose span overflows a float.
WINDOW = Number(-1e9, 1e9)


class FlowSpec(click.ParamType):
    """A --flow value: short id, 4-tuple or flow_id (:func:`hsrtcp.results.parse_flow`);
    anything else is a usage error (exit 2), an unknown flow an input error (exit 3)."""

    name = "FLOW"

    def convert(self, value, param, ctx):
        from hsrtcp.results import parse_flow

        try:
            kind, parsed = parse_flow(value)
        except ValueError as exc:
            self.fail(str(exc), param, ctx)
        return parsed if kind == "id" else str(value).strip()


@click.command()
@click.argument("kind", type=click.Choice(KINDS))
@click.argument("results", type=click.Path(path_type=Path))
@click.option("--flow", "flow_id", type=FlowSpec(),
              help="the flow: its short id (f3, f3s; a connection's name draws its matched row), its 4-tuple "
                   "10.0.1.2:41068-10.0.2.2:5201, or its flow_id (default: the flow with the most data; "
                   "throughput: the 8 largest)")
@click.option("-o", "--out", "out", type=click.Path(path_type=Path), required=True,
              help="output file; the format from its suffix: .png, .svg or .pdf")
@click.option("--from", "start", type=WINDOW, help="per-flow kinds: start of the time window shown, "
                                                   "seconds since the flow's first packet")
@click.option("--to", "end", type=WINDOW, help="per-flow kinds: end of the time window shown (s)")
@click.option("--table", help="cdf: table to read the metric from (default: series, or a study's "
                              "throughput_samples)")
@click.option("--metric", help="cdf: numeric column (default: 1-s throughput in bit/s)")
@click.option("--by", help="cdf: column to group by (default: flow_class when context or a study "
                           "is there, else vantage)")
@click.option("--logx", is_flag=True, help="cdf: logarithmic x axis")
@click.option("--models", default="pftk_full,enh_rederived", show_default=True,
              help="model: comma-separated models (pftk_full, pftk_approx, enh_as_printed, "
                   "enh_corrected, enh_rederived)")
def plot(kind, results, flow_id, out, start, end, table, metric, by, logx, models):
    """Draw a figure of KIND from the result tables in RESULTS into OUT.

    \b
    Kinds:
      tsg         time-sequence graph of one flow: data, ACK and window lines,
                  SACK blocks, retransmissions by class, spurious timeouts,
                  outages, handoffs
      throughput  throughput per 1-s bin (handoff stems with --flow and context tables)
      window      bytes in flight and advertised window, retransmissions marked
      rtt         RTT samples over time (binned for long flows)
      cdf         CDFs per class (a study directory) or of any column grouped by any column
      model       measured vs PFTK / enhanced model throughput per flow, with D

    \b
    Examples:
      hsrtcp plot tsg out --flow f1 -o tsg.pdf
      hsrtcp plot tsg out --flow 10.0.1.2:41068-10.0.2.2:5201 -o tsg.pdf
      hsrtcp plot tsg out --flow 1099511627776 --from 12 --to 13 -o zoom.svg
      hsrtcp plot throughput out -o throughput.svg
      hsrtcp plot cdf out --table flows --metric rtt_mean --by vantage -o rtt_cdf.pdf
    """
    from hsrtcp.plot import plot as draw
    from hsrtcp.plot.style import check_format

    try:
        check_format(out)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="-o/--out") from None
    options = {}
    if kind == "cdf":
        options = {"table": table, "metric": metric, "by": by, "logx": logx}
    elif table or metric or by or logx:
        raise click.UsageError("--table, --metric, --by and --logx apply to cdf only")
    if kind == "model":
        options = {"models": tuple(m.strip() for m in models.split(",") if m.strip())}
    if start is not None or end is not None:
        from hsrtcp.plot import PER_FLOW

        if kind not in PER_FLOW:
            raise click.UsageError(f"--from/--to apply to {', '.join(PER_FLOW)} only")
        if start is not None and end is not None and end <= start:
            raise click.UsageError("--to must be after --from")
        options.update(start=start, end=end)
    path = draw(kind, results, out, flow_id, **options)
    click.echo(f"wrote {path}", err=True)  # stderr: `-o /dev/stdout` carries the figure
