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

__all__ = ["B", "CLASSES", "MSS_BYTES", "RTO_MIN_S", "WORKLOADS", "OnData", "lab_ack_loss", "model_inputs",
           "on_data"]

MSS_BYTES = 1448
B = 2.0
RTO_MIN_S = 0.2
#: the study's classes (docs/study.md) and the flow classes each one gathers
CLASSES = {"static": ("static",), "high_0": ("high_0",), "high_1_16": ("high_1_8", "high_9_16")}
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
    unknown = sorted(set(flows["scenario"].unique().to_list()) - set(ack_loss))
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
    root = Path(root)
    flows = pl.read_parquet(root / flows_rel)
    ack = {s: lab_ack_loss(root / "scenarios" / f"{s}.toml") for s in flows["scenario"].unique().to_list()}
    return on_data(flows, ack)
