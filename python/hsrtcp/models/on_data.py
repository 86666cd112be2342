"""Seed 001's comparison on the lab's data: PFTK and the enhanced model per flow class and
workload, with the error statistic D (seed 001 eq. 22), from the committed study tables.

The committed ``study_flows`` table (tests/data/study/, docs/formats/study.md) holds p_d, q,
the mean RTT, the mean timeout-sequence duration, the measured throughput and the ACK-loss
spurious timeouts of every connection, but not every model input. What is missing is derived
here, only from committed data, and each flow says where its inputs came from:

=========  ==========================================================================
input      source
=========  ==========================================================================
p_d        ``p_d`` (two-vantage data loss rate)
RTT        ``rtt_mean_s``
q          ``q``; a flow without a timeout sequence has none: q = p_d (PFTK's
           assumption, ``q_source`` = ``p_d``)
P_a        not committed (no ``ack_burst_loss``): CA rounds ended by an ACK burst
           loss / CA rounds ≈ ``spurious_ackl`` / (``duration_s`` / ``rtt_mean_s``),
           the spurious timeouts caused by ACK loss over the flow's rounds
T          not committed (no ``rto_first_mean``): from the mean timeout-sequence
           duration, E[A^TO] = T·f(p)/(1−p) inverted with p = 1 − (1−q)(1−P_a)
           (eq. 11, :func:`rto_from_recovery_duration`); a flow without one gets
           RTT + 0.2 s, Linux's smallest RTO (``t_source`` = ``floor``)
b          not committed: 2 (Linux delayed ACKs)
W_m        not committed: no limit (the lab's receive buffers are far above the
           20-packet bottleneck queue); a flow with p_d = 0 and P_a = 0 then has no
           prediction (unbounded)
TP_trace   ``throughput_mean_bps`` (bytes the phone received per second) / (8 · MSS),
           MSS = 1448 bytes (1500-byte MTU, timestamps on in the campaign)
p_a        the per-ACK loss the lab applied (the scenario's uplink loss at its speed,
           scenarios/*.toml), for P_a = p_a^w as printed
=========  ==========================================================================

The predictions and D come from :func:`hsrtcp.models.fitting.fit_flows`; this module only
builds its input table, groups the result and describes P_a.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from hsrtcp.errors import InputError, ModelDomainError
from hsrtcp.models.common import rto_from_recovery_duration
from hsrtcp.models.enhanced import independent_ack_burst_loss
from hsrtcp.models.evaluate import MODEL_KEYS
from hsrtcp.models.fitting import fit_flows
from hsrtcp.schemas import SEED_CLASSES

__all__ = ["B", "CLASSES", "MSS_BYTES", "RTO_MIN_S", "WORKLOADS", "OnData", "lab_ack_loss", "model_inputs",
           "on_data"]

MSS_BYTES = 1448
B = 2.0
RTO_MIN_S = 0.2
CLASSES = SEED_CLASSES  # (a public name of this module)
WORKLOADS = ("50KB", "2MB", "duration")
_NEEDED = ("flow_id", "scenario", "flow_class", "workload", "p_d", "q", "rtt_mean_s", "timeout_duration_mean_s",
           "timeout_sequences", "spurious_ackl", "duration_s", "throughput_mean_bps")


def lab_ack_loss(scenario_toml: str | Path) -> float:
    """The per-ACK loss p_a the lab applied in a scenario: its uplink loss at its trip speed
    (the [speed_channel] blend of the standing and the cruise value)."""
    from hsrtcp.lab.scenario import config
    from hsrtcp.lab.scenario.channel import loss_at

    params = config.resolve(config.read_toml(scenario_toml), str(scenario_toml))
    if params.get("speed_channel") is None:
        return float(params["link"]["loss_up"])
    return float(loss_at(params, "up", params["trip"]["speed_kmh"]))


def _class_of(flow_class: pl.Expr) -> pl.Expr:
    out = pl.lit(None, dtype=pl.String)
    for cls, members in reversed(CLASSES.items()):
        out = pl.when(flow_class.is_in(list(members))).then(pl.lit(cls)).otherwise(out)
    return out


def model_inputs(flows: pl.DataFrame, ack_loss: dict[str, float]) -> pl.DataFrame:
    """The flows table :func:`fit_flows` reads (its column names), one row per connection,
    with ``cls``, ``workload``, ``cell`` (class/workload), ``p_a`` (lab), ``t_source``,
    ``q_source`` and the as-printed P_a (``P_a_printed``: p_a^w, ``P_a_printed_per_ack``:
    p_a^(w/b), w the re-derived E[W] as a fixed point; null where p_d = 0)."""
    missing = [c for c in _NEEDED if c not in flows.columns]
    if missing:
        raise InputError(f"study_flows: column(s) {', '.join(missing)} missing")
    scenarios = set(flows["scenario"].unique().to_list())
    unknown = sorted(s for s in scenarios - set(ack_loss) if s is not None)
    if None in scenarios:  # flows not from a lab scenario (passive captures): no lab ACK loss at all
        unknown.append(f"null ({flows['scenario'].null_count()} flows without a scenario)")
    if unknown:
        raise InputError(f"study_flows: no lab ACK loss for scenario(s) {', '.join(unknown)}")
    f = flows.select(_NEEDED).with_columns(_class_of(pl.col("flow_class")).alias("cls"))
    n = f.height
    col = {c: f[c].cast(pl.Float64).fill_null(np.nan).to_numpy() for c in
           ("p_d", "q", "rtt_mean_s", "timeout_duration_mean_s", "spurious_ackl", "duration_s",
            "throughput_mean_bps")}
    rtt = col["rtt_mean_s"]
    with np.errstate(all="ignore"):
        rounds = col["duration_s"] / rtt
        P_a = np.where(rounds > 0, col["spurious_ackl"] / rounds, np.nan)
    q_meas = ~np.isnan(col["q"])
    q = np.where(q_meas, col["q"], col["p_d"])
    # T from the sequence duration where the flow had one and eq. 11's p is < 1
    p_seq = 1.0 - (1.0 - q) * (1.0 - P_a)
    t_meas = ~np.isnan(col["timeout_duration_mean_s"]) & (p_seq < 1.0) & ~np.isnan(p_seq)
    T = np.full(n, np.nan)
    if t_meas.any():
        T[t_meas] = rto_from_recovery_duration(col["timeout_duration_mean_s"][t_meas], p_seq[t_meas])
    T = np.where(t_meas, T, rtt + RTO_MIN_S)
    p_a = np.array([ack_loss[s] for s in f["scenario"].to_list()], dtype=float)
    printed = np.full(n, np.nan)
    printed_ack = np.full(n, np.nan)
    for i in np.flatnonzero(col["p_d"] > 0):
        try:
            printed[i] = independent_ack_burst_loss(p_a[i], col["p_d"][i], B)
            printed_ack[i] = independent_ack_burst_loss(p_a[i], col["p_d"][i], B, per_ack=True)
        except ModelDomainError:
            pass
    return f.select("flow_id", "cls", "workload").with_columns(
        (pl.col("cls") + pl.lit("/") + pl.col("workload")).alias("cell"),
        pl.Series("p_d", col["p_d"], nan_to_null=True),
        pl.Series("q", q, nan_to_null=True),
        pl.Series("rtt_mean", rtt, nan_to_null=True),
        pl.Series("rto_first_mean", T, nan_to_null=True),
        pl.lit(np.inf).alias("w_m_packets"),
        pl.lit(B).alias("b_packets_per_ack"),
        pl.Series("ack_burst_loss", P_a, nan_to_null=True),
        pl.Series("throughput_pkts", col["throughput_mean_bps"] / (8.0 * MSS_BYTES), nan_to_null=True),
        pl.Series("p_a", p_a),
        pl.Series("P_a_printed", printed, nan_to_null=True),
        pl.Series("P_a_printed_per_ack", printed_ack, nan_to_null=True),
        pl.Series("t_source", np.where(t_meas, "sequence", "floor")),
        pl.Series("q_source", np.where(q_meas, "measured", "p_d")),
    )


@dataclass
class OnData:
    """Per flow: inputs, predictions (packets/s) and D for every model with the trace P_a
    (``pred_<model>``, ``d_<model>``), and the re-derived variant with P_a as printed
    (``pred_printed``, ``d_printed``) and with P_a = 0 (``pred_pa0``, ``d_pa0``)."""

    flows: pl.DataFrame

    def cells(self) -> pl.DataFrame:
        """Per class and workload (and ``all``) and model: flows, flows with D, mean and median D."""
        keys = [*MODEL_KEYS, "printed", "pa0"]
        both = pl.concat([self.flows, self.flows.with_columns(pl.lit("all").alias("workload"))])
        return (both.group_by("cls", "workload", maintain_order=True)
                .agg(pl.len().alias("n_flows"),
                     *[pl.col(f"d_{k}").is_not_null().sum().alias(f"n_{k}") for k in keys],
                     *[pl.col(f"d_{k}").mean().alias(f"mean_{k}") for k in keys],
                     *[pl.col(f"d_{k}").median().alias(f"median_{k}") for k in keys]))

    def paired(self, a: str, b: str) -> pl.DataFrame:
        """Per class, over the flows where both models have D: n, mean D of each, and the flows
        where ``a`` is closer to the measurement than ``b``."""
        both = self.flows.filter(pl.col(f"d_{a}").is_not_null() & pl.col(f"d_{b}").is_not_null())
        return (both.group_by("cls", maintain_order=True)
                .agg(pl.len().alias("n"), pl.col(f"d_{a}").mean().alias("mean_a"),
                     pl.col(f"d_{b}").mean().alias("mean_b"),
                     (pl.col(f"d_{a}") < pl.col(f"d_{b}")).sum().alias("a_better")))


def on_data(flows: pl.DataFrame, ack_loss: dict[str, float]) -> OnData:
    """Fit every model to the study's connections (see the module docstring for the inputs)."""
    inp = model_inputs(flows, ack_loss)
    main = fit_flows(inp).flows
    printed = fit_flows(inp.with_columns(pl.col("P_a_printed").alias("ack_burst_loss")),
                        models=("enh_rederived",)).flows
    pa0 = fit_flows(inp.with_columns(pl.lit(0.0).alias("ack_burst_loss")), models=("enh_rederived",)).flows
    out = inp.with_columns(
        *[main[f"{w}_{k}"] for k in MODEL_KEYS for w in ("pred", "d")],
        printed["pred_enh_rederived"].alias("pred_printed"), printed["d_enh_rederived"].alias("d_printed"),
        pa0["pred_enh_rederived"].alias("pred_pa0"), pa0["d_enh_rederived"].alias("d_pa0"),
        main["notes"],
    )
    return OnData(out)


def on_committed(root: str | Path, flows_rel: str = "tests/data/study/study_flows.parquet") -> OnData:
    """:func:`on_data` on the committed campaign (scenarios/<scenario>.toml for p_a)."""
    from hsrtcp.results import read_table

    root = Path(root)
    flows = read_table(root / flows_rel)
    ack = {s: lab_ack_loss(root / "scenarios" / f"{s}.toml") for s in flows["scenario"].unique().to_list()}
    return on_data(flows, ack)


# ---------------------------------------------------------------------------------------------
# the generated region of docs/models.md (python -m hsrtcp.docsgen, region models-on-data)

_LABELS = {"pftk_full": "PFTK full", "pftk_approx": "PFTK approx.", "enh_as_printed": "enh. as printed",
           "enh_corrected": "enh. corrected", "enh_rederived": "enh. re-derived"}


def _f(v, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "—"
    return f"{v:.{digits}g}"


def _e(v) -> str:
    if v is None or (isinstance(v, float) and np.isnan(v)):
        return "—"
    return "0" if v == 0 else f"{v:.1e}"


def _d(v) -> str:
    return "—" if v is None else f"{v:.2f}"


def _pct(k: int, n: int) -> str:
    return f"{k}/{n}" if n else "0/0"


def markdown(res: OnData) -> str:
    """The tables and the sentences that only read them."""
    f = res.flows
    cls_order = list(CLASSES)
    lines: list[str] = []
    # 1. inputs
    lines += ["Inputs per class (700 connections of tests/data/study/study_flows.parquet; how each input is "
              "derived: `hsrtcp.models.on_data`):", "",
              "| class | flows | p_d > 0 | T from a timeout sequence | q measured | P_a > 0 | mean P_a | lab p_a |",
              "|---|---|---|---|---|---|---|---|"]
    for c in cls_order:
        g = f.filter(pl.col("cls") == c)
        lines.append(f"| {c} | {g.height} | {int((g['p_d'] > 0).sum())} | {int((g['t_source'] == 'sequence').sum())} "
                     f"| {int((g['q_source'] == 'measured').sum())} | {int((g['ack_burst_loss'] > 0).sum())} "
                     f"| {_e(g['ack_burst_loss'].mean())} | {_f(g['p_a'][0])} |")
    # 2. D per class and workload
    cells = res.cells()
    lines += ["", "D = |TP_model − TP_trace| / TP_trace (seed 001 eq. 22, a fraction): mean (median) over the "
              "flows with a prediction; n = flows with D for PFTK / for the enhanced variants:", "",
              "| class | workload | flows | n | " + " | ".join(_LABELS[k] for k in MODEL_KEYS) + " |",
              "|---|---|---|---|" + "---|" * len(MODEL_KEYS)]
    for c in cls_order:
        for w in ("all", *WORKLOADS):
            r = cells.filter((pl.col("cls") == c) & (pl.col("workload") == w))
            if r.height == 0:
                continue
            r = r.row(0, named=True)
            ds = " | ".join(f"{_d(r[f'mean_{k}'])} ({_d(r[f'median_{k}'])})" for k in MODEL_KEYS)
            lines.append(f"| {c} | {w} | {r['n_flows']} | {r['n_pftk_full']} / {r['n_enh_rederived']} | {ds} |")
    # 3. paired: each enhanced variant against PFTK full
    lines += ["", "Each enhanced variant against PFTK full on the same flows (both defined): mean D of the "
              "variant − mean D of PFTK, and the flows where the variant is closer to the measurement:", "",
              "| class | flows | " + " | ".join(_LABELS[k] for k in MODEL_KEYS[2:]) + " |",
              "|---|---|" + "---|" * 3]
    paired = {k: res.paired(k, "pftk_full") for k in MODEL_KEYS[2:]}
    for c in cls_order:
        row, n = [], 0
        for k in MODEL_KEYS[2:]:
            p = paired[k].filter(pl.col("cls") == c)
            if p.height == 0:
                row.append("—")
                continue
            p = p.row(0, named=True)
            n = p["n"]
            row.append(f"{p['mean_a'] - p['mean_b']:+.3f} (closer in {_pct(p['a_better'], p['n'])})")
        lines.append(f"| {c} | {n} | " + " | ".join(row) + " |")
    # 4. P_a as printed
    lines += ["", "P_a as printed (p_a^w, w = the re-derived E[W] as a fixed point; per ACK: p_a^(w/b)) over the "
              "flows with p_d > 0, against the P_a of the trace, and what each does to the re-derived prediction "
              "(relative to P_a = 0):", "",
              "| class | flows | p_a^w min | median | max | p_a^(w/b) median | max | max change, p_a^w "
              "| trace P_a > 0: flows | median change, trace P_a |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for c in cls_order:
        g = f.filter((pl.col("cls") == c) & pl.col("P_a_printed").is_not_null())
        rel = ((g["pred_printed"] - g["pred_pa0"]) / g["pred_pa0"]).abs()
        t = f.filter((pl.col("cls") == c) & (pl.col("ack_burst_loss") > 0) & pl.col("pred_pa0").is_not_null()
                     & pl.col("pred_enh_rederived").is_not_null())
        trel = (t["pred_enh_rederived"] - t["pred_pa0"]) / t["pred_pa0"]
        pr, pa = g["P_a_printed"], g["P_a_printed_per_ack"]
        lines.append(f"| {c} | {g.height} | {_e(pr.min())} | {_e(pr.median())} | {_e(pr.max())} | {_e(pa.median())} "
                     f"| {_e(pa.max())} | {_e(rel.max())} | {t.height} | "
                     f"{f'{100 * trel.median():+.1f} %' if t.height else '—'} |")
    # 5. what the tables say, in numbers
    n_all = f.height
    none = f.filter(pl.all_horizontal([pl.col(f"pred_{k}").is_null() for k in MODEL_KEYS]))
    lossless = none.filter((pl.col("p_d") == 0) & (pl.col("ack_burst_loss") == 0)).height
    below = {k: f.filter(pl.col(f"pred_{k}").is_not_null()) for k in ("pftk_full", "enh_rederived")}
    share = {k: (g["pred_" + k] < g["throughput_pkts"]).sum() / g.height for k, g in below.items()}
    ratio = {k: (g["pred_" + k] / g["throughput_pkts"]).median() for k, g in below.items()}
    q1 = f.filter((pl.col("q") >= 1) & pl.col("pred_enh_rederived").is_null()).height
    others = f", {none.height - lossless} for other reasons" if none.height > lossless else ""
    lines += ["", f"No model predicts {none.height} of the {n_all} connections: {lossless} without a data loss "
                  f"and without an ACK burst loss (no window limit is committed, so every model is unbounded "
                  f"there){others}; the enhanced variants also leave out {q1} flows whose every timeout "
                  f"retransmission was lost (q = 1, outside their domain). Of the flows with a prediction, PFTK full predicts "
                  f"below the measurement for {100 * share['pftk_full']:.0f} % (median prediction/measurement "
                  f"{ratio['pftk_full']:.2f}), the re-derived enhanced model for {100 * share['enh_rederived']:.0f} % "
                  f"({ratio['enh_rederived']:.2f})."]
    return "\n".join(lines) + "\n"
