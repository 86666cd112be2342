//! The `mptcp`, `mptcp_subflows` and `mptcp_series` tables (docs/formats/mptcp.md).

pub use crate::table::registry::{MPTCP_COLUMNS, MPTCP_SERIES_COLUMNS, MPTCP_SUBFLOW_COLUMNS, MPTCP_VERSION};
use crate::table::TableBuilder;
use crate::wire::Nanos;

use super::{Conn, Tracker, DOWN, NANOS_PER_S, UP};

fn s(ts: Nanos) -> f64 {
    ts as f64 * 1e-9
}

impl Conn {
    fn ended(&self) -> &'static str {
        let ends = || self.subflows.iter().filter_map(|r| r.end.map(|e| e.end_reason));
        if self.fastclose {
            "fastclose"
        } else if self.data_fin[UP] && self.data_fin[DOWN] {
            "data_fin"
        } else if ends().any(|e| e == "rst") {
            "rst"
        } else if !self.subflows.is_empty() && ends().count() == self.subflows.len() && ends().all(|e| e == "fin") {
            "fin"
        } else {
            "open"
        }
    }
}

/// The MPTCP tables being built.
pub struct MptcpTables {
    pub conns: TableBuilder,
    pub subflows: TableBuilder,
    pub series: TableBuilder,
}

impl Default for MptcpTables {
    fn default() -> Self {
        MptcpTables {
            conns: TableBuilder::new(&[MPTCP_COLUMNS]),
            subflows: TableBuilder::new(&[MPTCP_SUBFLOW_COLUMNS]),
            series: TableBuilder::new(&[MPTCP_SERIES_COLUMNS]),
        }
    }
}

impl Tracker {
    /// Write every connection (call after every subflow's [`Tracker::subflow_done`]).
    pub fn write(&self, capture: &str, vantage: Option<&str>, out: &mut MptcpTables) {
        for (id, c) in self.conns.list.iter().enumerate() {
            let idsn = |k: Option<u64>| k.map(|k| super::keys::token_and_idsn(k, c.version.unwrap_or(1)).1);
            let token = c.token.map(u64::from);
            out.conns
                .row()
                .str("capture", Some(capture))
                .str("vantage", vantage)
                .u64("connection_id", id as u64)
                .u64("token", token)
                .u64("client_token", c.client_token.map(u64::from))
                .u64("version", c.version.map(u64::from))
                .u64("client_key", c.client_key)
                .u64("server_key", c.server_key)
                .u64("client_idsn", idsn(c.client_key))
                .u64("server_idsn", idsn(c.server_key))
                .u64("subflows", c.subflows.len() as u64)
                .f64("first_ts", s(c.first_ts))
                .f64("last_ts", s(c.last_ts))
                .u64("data_bytes_down", c.data_bytes[DOWN])
                .u64("data_bytes_up", c.data_bytes[UP])
                .u64("reinjections", c.reinjections)
                .u64("reinjected_bytes", c.reinjected_bytes)
                .u64("data_retransmissions", c.data_retransmissions)
                .bool("data_fin_down", c.data_fin[DOWN])
                .bool("data_fin_up", c.data_fin[UP])
                .bool("fastclose", c.fastclose)
                .u64("mp_fail", c.mp_fail)
                .u64("add_addr", c.add_addr)
                .u64("remove_addr", c.remove_addr)
                .u64("prio_changes", c.prio_changes)
                .bool("fallback", c.fallback)
                .str("ended", Some(c.ended()))
                .u64("malformed_options", c.malformed);
            let mut rows: Vec<_> = c.subflows.iter().collect();
            rows.sort_by_key(|r| r.index);
            for r in rows {
                let (down, up) = match r.end {
                    Some(e) if r.flipped => (Some(e.payload_c2s), Some(e.payload_s2c)),
                    Some(e) => (Some(e.payload_s2c), Some(e.payload_c2s)),
                    None => (None, None),
                };
                let share = (c.data_bytes[DOWN] > 0).then(|| r.data_bytes_down as f64 / c.data_bytes[DOWN] as f64);
                out.subflows
                    .row()
                    .str("capture", Some(capture))
                    .u64("connection_id", id as u64)
                    .u64("token", token)
                    .u64("subflow", r.index as u64)
                    .u64("flow_id", r.ids.flow_id)
                    .str("client_addr", Some(&r.ids.client.0.to_string()))
                    .u64("client_port", r.ids.client.1 as u64)
                    .str("server_addr", Some(&r.ids.server.0.to_string()))
                    .u64("server_port", r.ids.server.1 as u64)
                    .u64("address_id", r.address_id.map(u64::from))
                    .f64("join_ts", r.join_ts.map(s))
                    .bool("backup", r.backup)
                    .u64("prio_changes", r.prio_changes as u64)
                    .u64("payload_bytes_down", down)
                    .u64("payload_bytes_up", up)
                    .u64("data_bytes_down", r.data_bytes_down)
                    .f64("share_down", share)
                    .u64("reinjected_bytes_down", r.reinjected_bytes_down)
                    .f64("first_ts", r.end.map(|e| s(e.first_ts)))
                    .f64("last_ts", r.end.map(|e| s(e.last_ts)))
                    .str("end_reason", r.end.map(|e| e.end_reason));
            }
            let last_bin = ((c.last_ts - c.first_ts).max(0) / NANOS_PER_S) as usize;
            for (bin, &(bytes, acked)) in c.bins.iter().enumerate() {
                let start = c.first_ts + bin as i64 * NANOS_PER_S;
                let bin_s = if bin == last_bin { (c.last_ts - start) as f64 * 1e-9 } else { 1.0 };
                out.series
                    .row()
                    .str("capture", Some(capture))
                    .u64("connection_id", id as u64)
                    .u64("token", token)
                    .u64("bin", bin as u64)
                    .f64("t", s(start))
                    .f64("bin_s", (bin_s > 0.0).then_some(bin_s))
                    .u64("data_bytes_down", bytes)
                    .u64("data_acked_down", acked);
            }
        }
    }
}
