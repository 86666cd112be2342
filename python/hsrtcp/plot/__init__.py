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
import inspect
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
    res, flow_id = _results(results, kind, flow_id)
    if "view" in inspect.signature(module.draw).parameters:  # the window decides what detail fits
        options = dict(options, view=(start, end))
    fig = module.draw(res, flow_id, **options)
    if start is not None or end is not None:
        zoom(fig.axes[0], start, end)
    if not drawn(fig):
        from hsrtcp.errors import InputError

        raise InputError(f"{results}: nothing to draw for {kind}" + (f" --flow {flow_id}" if flow_id is not None else "")
                         + " (no finite value in the tables it reads)")
    return fig


def _results(results, kind: str, flow_id):
    """The results directory to draw from and the flow in it. A corpus results directory
    (docs/scale.md: one ``input=<id>`` partition per input) is read as one: the flow's name
    (unique in the corpus; a flow_id repeats across inputs) or, without one, the largest flow
    of all inputs finds the partition, whose figure names its flows as the corpus does; the
    figures over many flows (cdf, model, throughput without --flow) pool every input's."""
    import polars as pl

    from hsrtcp.errors import InputError
    from hsrtcp.plot.tables import SELECT_COLUMNS, Corpus, Results, data_bytes_expr
    from hsrtcp.results import flow_names, input_id, partitions, select_flow

    parts = partitions(results)
    if len(parts) == 1 and os.path.normpath(parts[0]) == os.path.normpath(os.fspath(results)):
        return Results(results), flow_id
    if kind not in PER_FLOW or (kind == "throughput" and flow_id is None):
        if kind == "model" and flow_id is not None:  # a flow_id names a flow of one input only
            raise InputError(f"{results}: a corpus results directory ({len(parts)} inputs): model --flow takes "
                             f"one input's directory ({parts[0]}); without --flow it draws every input's flows")
        return Corpus(results, parts), flow_id
    cols = ["flow_id", "vantage", "first_ts", "data_dir", "c2s_payload_bytes", "s2c_payload_bytes"]
    flows = pl.concat([Results(p).read("flows", cols, optional=SELECT_COLUMNS)
                       .with_columns(input=pl.lit(input_id(p)))
                       for p in parts], how="diagonal_relaxed")
    where = os.path.join(os.fspath(results), "input=*", "flows.parquet")
    if flow_id is None:
        single = flows.filter(pl.col("vantage").fill_null("") != "matched").with_columns(_b=data_bytes_expr())
        if single.is_empty():
            raise InputError(f"{where}: no flows (nothing to draw)")
        row = single.sort(["_b", "first_ts"], descending=[True, False]).row(0, named=True)
    else:
        row = select_flow(flows, flow_id, where)
    res = Results(os.path.join(os.fspath(results), f"input={row['input']}"))
    res.names = flow_names(flows).filter(pl.col("input") == row["input"]).drop("input")
    return res, row["flow_id"]


def drawn(fig) -> bool:
    """Whether any axes of ``fig`` shows a finite data point (a line, marker or bar)."""
    import numpy as np

    for ax in fig.axes:
        for line in ax.get_lines():
            x, y = (np.asarray(v, dtype=float) for v in line.get_data())
            if np.any(np.isfinite(x) & np.isfinite(y)) and line.get_transform() == ax.transData:
                return True
        if any(len(c.get_offsets()) or len(c.get_paths()) for c in ax.collections):
            return True
        if any(p.get_height() for p in ax.patches if hasattr(p, "get_height")):
            return True
    return False


def plot(kind: str, results: str | os.PathLike, out: str | os.PathLike, flow_id: int | None = None,
         **options) -> str:
    """Draw ``kind`` from ``results`` into ``out`` (.png, .svg or .pdf); returns the path.
    ``options``: ``start``/``end`` and the kind's own (cdf: table, metric, by, logx; model:
    models)."""
    from hsrtcp.plot.style import check_format, save

    check_format(out)
    return save(figure(kind, results, flow_id, **options), out)
