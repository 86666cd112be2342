"""Column types of the tables Python writes (docs/formats/): the context tables, the lab's
ground truth and the MPTCP instance metrics.

They live here, below both their writers (:mod:`hsrtcp.context`, :mod:`hsrtcp.lab.truth`,
:mod:`hsrtcp.mptcp`) and :mod:`hsrtcp.results`, which checks every table a consumer reads
against them: the checker needs no writer, and no writer imports the checker back.
Imports polars only."""

from __future__ import annotations

import polars as pl

#: radio (docs/formats/radio.md): the normalized radio/GPS log (hsrtcp.context.schema)
RADIO_SCHEMA: dict[str, pl.DataType] = {
    "ts": pl.Float64,
    "lat": pl.Float64,
    "lon": pl.Float64,
    "speed_kmh": pl.Float64,
    "carrier": pl.String,
    "rat": pl.String,
    "lac": pl.Int64,
    "cid": pl.Int64,
    "rsrp_dbm": pl.Float64,
    "rsrq_db": pl.Float64,
    "arfcn": pl.Int64,
    "generation": pl.String,
    "source": pl.String,
    "line": pl.Int64,
}

#: context (docs/formats/context.md): one row per flow (hsrtcp.context.classes)
CONTEXT_SCHEMA = {
    "flow_id": pl.UInt64, "run_id": pl.String, "carrier": pl.String, "handoffs": pl.Int64,
    "handoffs_intra": pl.Int64, "handoffs_inter": pl.Int64, "ping_pongs": pl.Int64,
    "speed_min_kmh": pl.Float64, "speed_mean_kmh": pl.Float64, "speed_max_kmh": pl.Float64,
    "speed_samples": pl.Int64, "speed_class": pl.String, "flow_class": pl.String,
    "class_reason": pl.String, "rats": pl.String, "rat_change": pl.Boolean,
    "rsrp_mean_dbm": pl.Float64, "signal_s3": pl.String, "signal_s4_good_share": pl.Float64,
    "usable": pl.Boolean, "first_ts": pl.Float64, "last_ts": pl.Float64,
    "generations": pl.String, "generation_changes": pl.Int64,
}

#: handoffs (docs/formats/handoffs.md): one row per serving-cell change (hsrtcp.context.handoffs)
HANDOFF_SCHEMA = {"run_id": pl.String, "carrier": pl.String, "ts": pl.Float64, "old_rat": pl.String,
                  "old_lac": pl.Int64, "old_cid": pl.Int64, "new_rat": pl.String, "new_lac": pl.Int64,
                  "new_cid": pl.Int64, "system": pl.String, "ping_pong": pl.Boolean,
                  "interval_s": pl.Float64, "source": pl.String, "line": pl.Int64,
                  "old_generation": pl.String, "new_generation": pl.String, "old_arfcn": pl.Int64,
                  "new_arfcn": pl.Int64, "type": pl.String, "target_pci": pl.Int64,
                  "target_arfcn": pl.Int64, "execution_s": pl.Float64, "cause": pl.String}

#: suspensions (docs/formats/suspensions.md) (hsrtcp.context.suspension)
SUSPENSION_SCHEMA = {"flow_id": pl.UInt64, "run_id": pl.String, "carrier": pl.String,
                     "handoff_ts": pl.Float64, "system": pl.String, "ping_pong": pl.Boolean,
                     "suspension_s": pl.Float64, "gap_start_ts": pl.Float64, "gap_end_ts": pl.Float64,
                     "stalled": pl.Boolean, "stalled_vantage": pl.String, "reason": pl.String}

#: labels (docs/formats/labels.md): one row per analyzed input (hsrtcp.context.labels)
LABEL_SCHEMA = {"input_id": pl.Int64, "run_id": pl.String, "source": pl.String, "capture": pl.String,
                "client_capture": pl.String, "server_capture": pl.String, "scenario": pl.String,
                "cc": pl.String, "flow_type": pl.String, "flow_size_bytes": pl.Int64,
                "flow_duration_s": pl.Float64, "repetition": pl.Int64, "campaign": pl.String,
                "mptcp": pl.Boolean}

#: coverage (docs/formats/coverage.md) (hsrtcp.context.coverage)
COVERAGE_SCHEMA = {"run_id": pl.String, "carrier": pl.String, "lte_s": pl.Float64,
                   "total_s": pl.Float64, "lte_coverage": pl.Float64}

#: truth_events (docs/formats/truth.md) (hsrtcp.lab.truth)
TRUTH_EVENTS_SCHEMA = {
    "run_id": pl.String, "path": pl.Int64, "carrier": pl.String, "kind": pl.String, "handoff_id": pl.Int64,
    "ts": pl.Float64, "ts_end": pl.Float64, "t_start": pl.Float64, "t_end": pl.Float64,
    "outage_kind": pl.String, "extra_rtt_s": pl.Float64, "loss_pattern": pl.String,
    "from_cid": pl.Int64, "to_cid": pl.Int64, "from_rat": pl.String, "to_rat": pl.String, "detail": pl.String,
}

#: truth_capacity (docs/formats/truth.md) (hsrtcp.lab.truth)
TRUTH_CAPACITY_SCHEMA = {
    "run_id": pl.String, "path": pl.Int64, "carrier": pl.String, "direction": pl.String,
    "ts": pl.Float64, "ts_end": pl.Float64, "t_start": pl.Float64, "t_end": pl.Float64,
    "bw_bps": pl.Float64, "delay_s": pl.Float64, "loss_rate": pl.Float64,
}

#: mptcp_instances' kernel columns: column -> (side, nstat counter) (hsrtcp.mptcp.kernel)
MPTCP_KERNEL_COUNTERS = {
    "kernel_mp_capable_syn_rx": ("server", "MPTcpExtMPCapableSYNRX"),
    "kernel_mp_join_syn_tx": ("client", "MPTcpExtMPJoinSynTx"),
    "kernel_mp_join_syn_rx": ("server", "MPTcpExtMPJoinSynRx"),
    "kernel_mp_join_ack_rx": ("server", "MPTcpExtMPJoinAckRx"),
    "kernel_mptcp_retrans": ("server", "MPTcpExtMPTCPRetrans"),
    "kernel_duplicate_data": ("client", "MPTcpExtDuplicateData"),
    "kernel_subflow_stale": ("server", "MPTcpExtSubflowStale"),
    "kernel_subflow_recover": ("server", "MPTcpExtSubflowRecover"),
}

#: mptcp_instances' columns from the core's mptcp table: column -> its column there
MPTCP_CORE_COLUMNS = {"core_subflows": "subflows", "core_reinjections": "reinjections",
                      "core_reinjected_bytes": "reinjected_bytes", "core_data_retransmissions": "data_retransmissions"}

#: mptcp_instances (docs/formats/mptcp-metrics.md): the typed columns (hsrtcp.mptcp.metrics)
MPTCP_INSTANCE_TYPES = {"token": pl.Int64, "repetition": pl.Int64, "scenario_seed": pl.Int64, "duration_s": pl.Float64,
                        "u_c": pl.Float64, "u_t": pl.Float64, "first_degradation_s": pl.Int64,
                        "rate_single_path_sum_bps": pl.Float64, "rate_single_path_max_bps": pl.Float64,
                        "baseline": pl.Utf8, "status": pl.Utf8, "capture_error": pl.Utf8, "scenario": pl.Utf8, "cc": pl.Utf8,
                        **{c: pl.Int64 for c in MPTCP_KERNEL_COUNTERS}, **{c: pl.Int64 for c in MPTCP_CORE_COLUMNS}}

#: mptcp_paths: the typed columns
MPTCP_PATH_TYPES = {"token": pl.Int64, "single_path_flow_id": pl.UInt64, "subflow_flow_id": pl.UInt64,
                    "rate_subflow_bps": pl.Float64, "rate_single_path_bps": pl.Float64,
                    "subflow_utilization": pl.Float64, "degraded": pl.Boolean, "degradation_onset_s": pl.Int64, "fall_onset_s": pl.Int64,
                    "degradation_before_ratio": pl.Float64, "degradation_drop_ratio": pl.Float64,
                    "degradation_after_ratio": pl.Float64, "k_t_subflow_mean": pl.Float64,
                    "k_t_single_path_mean": pl.Float64}

#: mptcp_kt
MPTCP_KT_SCHEMA = {"instance": pl.Utf8, "token": pl.Int64, "path": pl.Int64, "role": pl.Utf8, "flow_id": pl.UInt64,
                   "loss1_s": pl.Float64, "loss2_s": pl.Float64, "interval_s": pl.Float64,
                   "bif_after_loss1": pl.Float64, "bif_before_loss2": pl.Float64, "k_t": pl.Float64,
                   "bif_time_mean": pl.Float64, "k_t_literal": pl.Float64}

#: mptcp_rates
MPTCP_RATE_SCHEMA = {"instance": pl.Utf8, "token": pl.Int64, "path": pl.Int64, "role": pl.Utf8, "flow_id": pl.UInt64,
                     "t": pl.Int64, "rate_bps": pl.Float64}


#: context.flow_class: the flow classes (M21 a-e, A2), in table order (hsrtcp.context.classes)
FLOW_CLASSES = ("static", "low", "high_0", "high_1_8", "high_9_16", "high_17+", "other", "unknown")
#: The one order of class groups, for the study's tables, the figures, the report and the
#: plots: the flow classes with high_1_16 (high_1_8 and high_9_16 together, seed 000's) before
#: its two parts, and "all" last.
CLASS_ORDER = ("static", "low", "high_0", "high_1_16", "high_1_8", "high_9_16", "high_17+", "other",
               "unknown", "all")
#: flows.vantage: the capture side of a row, and "matched" for the row joining a connection's
#: two sides (docs/formats/flows.md, matched.md)
CLIENT, SERVER, MATCHED = "client", "server", "matched"
VANTAGES = (CLIENT, SERVER, MATCHED)
#: events.kind: what the behaviour engine writes, in the order of docs/formats/events.md's table
EVENT_KINDS = ("retransmission", "reordering", "duplicate", "timeout_sequence", "spurious_timeout",
               "spurious_retransmission", "zero_window", "window_probe", "full_window", "suspension", "gap",
               "handshake", "close", "interruption", "sack_block")
#: the class of a retransmission (events.class of kind "retransmission", packets.retrans);
#: "unclassified" where the vantage is unknown
RETRANS_CLASSES = ("fast", "sack_refill", "rto", "tlp", "unclassified")
#: events.class of kind "spurious_timeout": how it was detected
SPURIOUS_METHODS = ("receiver", "dsack", "eifel", "two_vantage")
#: series: the length of a bin in files written before ``bin_s`` (series version 1: every
#: bin counted as one second, docs/formats/series.md)
SERIES_BIN_S = 1.0
#: The study's classes (seed 000, docs/metrics.md M21), in :data:`CLASS_ORDER`, and the flow
#: classes each one gathers.
SEED_CLASSES = {"static": ("static",), "high_0": ("high_0",), "high_1_16": ("high_1_8", "high_9_16")}


def class_rank(name: str | None) -> int:
    """Sort key of a class group: its place in :data:`CLASS_ORDER`, other names after all of them."""
    return CLASS_ORDER.index(name) if name in CLASS_ORDER else len(CLASS_ORDER)
