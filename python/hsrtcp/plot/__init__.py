"""Figures from result tables (Parquet in, picture out): `hsrtcp plot KIND RESULTS -o FILE`.

One module per kind, each with ``draw(results, flow_id=None, **options) -> Figure``:

=============  ==================================================================
``tsg``        time–sequence graph of a flow (:mod:`hsrtcp.plot.tsg`)
``throughput`` throughput over time, handoff stems (:mod:`hsrtcp.plot.throughput`)
``window``     bytes in flight and advertised window (:mod:`hsrtcp.plot.window`)
``rtt``        RTT samples over time (:mod:`hsrtcp.plot.rtt`)
``cdf``        CDFs per class, from a study or any column (:mod:`hsrtcp.plot.cdf`)
``model``      measured vs PFTK / enhanced model (:mod:`hsrtcp.plot.model`)
=============  ==================================================================

The style (one column wide, Okabe–Ito colours, vector output) is :mod:`hsrtcp.plot.style`;
reading and checking the tables :mod:`hsrtcp.plot.tables`. docs/plot.md is the guide.
"""

from __future__ import annotations

import importlib
import os

KINDS = ("tsg", "throughput", "window", "rtt", "cdf", "model")


PER_FLOW = ("tsg", "throughput", "window", "rtt")


def figure(kind: str, results: str | os.PathLike, flow_id: int | None = None,
           start: float | None = None, end: float | None = None, **options):
    """The matplotlib Figure of ``kind`` drawn from the results directory ``results``;
    per-flow kinds can show only ``start``..``end`` (seconds since the flow's first packet)."""
    from hsrtcp.plot.style import zoom
    from hsrtcp.plot.tables import Results

    if kind not in KINDS:
        raise ValueError(f"unknown figure kind {kind!r}; choose from {', '.join(KINDS)}")
    if (start is not None or end is not None) and kind not in PER_FLOW:
        raise ValueError(f"a time window applies to {', '.join(PER_FLOW)} only")
    if start is not None and end is not None and end <= start:
        raise ValueError(f"the time window must end after it starts ({start} .. {end})")
    module = importlib.import_module(f"hsrtcp.plot.{kind}")
    fig = module.draw(Results(results), flow_id, **options)
    if start is not None or end is not None:
        zoom(fig.axes[0], start, end)
    return fig


def plot(kind: str, results: str | os.PathLike, out: str | os.PathLike, flow_id: int | None = None,
         **options) -> str:
    """Draw ``kind`` from ``results`` into ``out`` (.png, .svg or .pdf); returns the path.
    ``options``: ``start``/``end`` and the kind's own (cdf: table, metric, by, logx; model:
    models)."""
    from hsrtcp.plot.style import check_format, save

    check_format(out)
    return save(figure(kind, results, flow_id, **options), out)
