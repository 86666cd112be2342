"""Measured vs modelled throughput per flow (seed 001 Fig. 10): PFTK and the enhanced model
(:mod:`hsrtcp.models`, the same computation as ``hsrtcp model fit``), with each model's
median deviation D = |TP_model − TP_trace| / TP_trace (M35, A20) in the legend.

The model inputs p_d, P_a (ack_burst_loss) and q come from two-vantage analyses (flows rows
with vantage ``matched``): a results directory without them is reported, not drawn empty.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from hsrtcp.errors import InputError
from hsrtcp.plot.style import CYCLE, GREY, new_figure, styled
from hsrtcp.plot.tables import Results

DEFAULT_MODELS = ("pftk_full", "enh_rederived")
MARKERS = ["o", "s", "^", "D", "v"]


@styled
def draw(res: Results, flow_id: int | None = None, models: tuple[str, ...] = DEFAULT_MODELS):
    from hsrtcp.models import MODEL_KEYS, MODEL_LABELS
    from hsrtcp.models.fitting import MEASURED, fit_flows

    unknown = [m for m in models if m not in MODEL_KEYS]
    if unknown:
        raise InputError(f"unknown model(s) {', '.join(unknown)}; choose from {', '.join(MODEL_KEYS)}")
    inputs = ["p_d", "p_a", "ack_burst_loss", "q", "rtt_mean", "rto_first_mean", "w_m_packets", "b_packets_per_ack"]
    flows = res.read("flows", ["flow_id", MEASURED], optional=[*inputs, "vantage"], as_float=[MEASURED, *inputs])
    if flow_id is not None:
        flows = flows.filter(flows["flow_id"] == flow_id)
        if flows.is_empty():
            raise InputError(f"{res.file('flows')}: no flow with flow_id {flow_id}")
    for c in inputs:
        if c not in flows.columns:
            flows = flows.with_columns(pl.lit(None, dtype=pl.Float64).alias(c))
    fit = fit_flows(flows, models=tuple(models))
    f = fit.flows
    meas = f[MEASURED].cast(float).fill_null(np.nan).to_numpy()
    fig, ax = new_figure(height=3.0)
    lo, hi, drawn = np.inf, 0.0, 0
    for i, key in enumerate(models):
        pred = f[f"pred_{key}"].cast(float).fill_null(np.nan).to_numpy()
        d = f[f"d_{key}"].cast(float).fill_null(np.nan).to_numpy()
        ok = np.isfinite(meas) & np.isfinite(pred) & (meas > 0) & (pred > 0)
        if not ok.any():
            continue
        drawn += 1
        med = np.nanmedian(d[ok])
        ax.scatter(meas[ok], pred[ok], s=12, marker=MARKERS[i % len(MARKERS)], facecolors="none",
                   edgecolors=CYCLE[i % len(CYCLE)], linewidths=0.8,
                   label=f"{MODEL_LABELS[key]}: median D = {med:.2f} (n = {ok.sum()})", gid=f"model-{key}")
        lo, hi = min(lo, meas[ok].min(), pred[ok].min()), max(hi, meas[ok].max(), pred[ok].max())
    if not drawn:
        missing = sorted({c for m in f["missing_inputs"].to_list() if m for c in m}) if "missing_inputs" in f.columns else []
        raise InputError(f"{res.file('flows')}: no flow has both a measured throughput and the model inputs "
                         f"(inputs null in the flows: {', '.join(missing) or 'throughput_pkts'}; p_d, ack_burst_loss and q "
                         f"come from two-vantage rows, hsrtcp analyze --client C --server S; rto_first_mean and q "
                         f"need a timeout sequence in the flow)")
    ax.plot([lo / 1.5, hi * 1.5], [lo / 1.5, hi * 1.5], color=GREY, linestyle="--", linewidth=0.7, label="y = x")
    from matplotlib.ticker import NullFormatter

    ax.set_xscale("log")
    ax.set_yscale("log")
    for axis in (ax.xaxis, ax.yaxis):
        axis.set_minor_formatter(NullFormatter())  # unlabelled minor ticks: no overlapping labels
    ax.set_xlabel("measured throughput (packets/s)")
    ax.set_ylabel("model throughput (packets/s)")
    ax.set_aspect("equal", adjustable="datalim")
    ax.legend(loc="upper left")
    return fig
