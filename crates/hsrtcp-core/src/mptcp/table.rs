//! The `mptcp`, `mptcp_subflows` and `mptcp_series` tables (docs/formats/mptcp.md).

use crate::table::{col, ColType, ColumnDef, TableBuilder};
use crate::wire::Nanos;

use super::{Conn, Tracker, DOWN, NANOS_PER_S, UP};

/// Schema version of the three tables (one page, docs/formats/mptcp.md).
pub const MPTCP_VERSION: u32 = 1;

/// One row per MPTCP connection per capture.
pub const MPTCP_COLUMNS: &[ColumnDef] = &[
    col("capture", ColType::Str, "capture file the row comes from"),
    col("vantage", ColType::Str, "where the capture was taken: client, server, or null if not said"),
    col("connection_id", ColType::U64, "MPTCP connection number in this capture (0, 1, ...; joins mptcp_subflows and mptcp_series)"),
    col("token", ColType::U64, "the server's token (RFC 8684 §3.2: top 32 bits of SHA-256 of its key; SHA-1 for v0): what MP_JOIN SYNs towards the server carry; null if the server never sent its key (fallback at the handshake)"),
    col("client_token", ColType::U64, "the client's token; null if its key was not seen"),
    col("version", ColType::U64, "MPTCP version of the MP_CAPABLE options: 0 (RFC 6824) or 1 (RFC 8684); null if no MP_CAPABLE was seen"),
    col("client_key", ColType::U64, "client key from MP_CAPABLE; null when not seen"),
    col("server_key", ColType::U64, "server key from MP_CAPABLE; null when not seen"),
    col("client_idsn", ColType::U64, "client's initial data sequence number (low 64 bits of the key's hash)"),
    col("server_idsn", ColType::U64, "server's initial data sequence number"),
    col("subflows", ColType::U64, "subflows grouped into this connection (rows of mptcp_subflows)"),
    col("first_ts", ColType::F64, "first MPTCP segment (the initial SYN when captured), seconds since the Unix epoch"),
    col("last_ts", ColType::F64, "last packet of any of its subflows, seconds since the Unix epoch"),
    col("data_bytes_down", ColType::U64, "distinct data-level (DSN) bytes mapped server -> client (M29)"),
    col("data_bytes_up", ColType::U64, "distinct data-level bytes mapped client -> server"),
    col("reinjections", ColType::U64, "DSS mappings that re-sent DSN bytes an earlier subflow had carried (RFC 8684 §3.3.6, M31)"),
    col("reinjected_bytes", ColType::U64, "DSN bytes of those reinjections, both directions"),
    col("data_retransmissions", ColType::U64, "mappings that re-sent DSN bytes on the same subflow as new subflow data (data-level retransmission)"),
    col("data_fin_down", ColType::Bool, "the server sent DATA_FIN"),
    col("data_fin_up", ColType::Bool, "the client sent DATA_FIN"),
    col("fastclose", ColType::Bool, "an MP_FASTCLOSE was seen"),
    col("mp_fail", ColType::U64, "MP_FAIL options"),
    col("add_addr", ColType::U64, "ADD_ADDR announcements (echoes not counted)"),
    col("remove_addr", ColType::U64, "REMOVE_ADDR options"),
    col("prio_changes", ColType::U64, "MP_PRIO options (backup flag changes) on any subflow"),
    col("fallback", ColType::Bool, "fell back to TCP: the server answered MP_CAPABLE without it, an infinite mapping, or a subflow sent payload without any DSS mapping"),
    col("ended", ColType::Str, "fastclose, data_fin (DATA_FIN both ways), rst (a subflow reset), fin (every subflow closed with FIN), open"),
    col("malformed_options", ColType::U64, "MPTCP options of its subflows whose length contradicts their subtype (per reason in captures.malformed_reasons)"),
];

/// One row per subflow of an MPTCP connection.
pub const MPTCP_SUBFLOW_COLUMNS: &[ColumnDef] = &[
    col("capture", ColType::Str, "capture file the row comes from"),
    col("connection_id", ColType::U64, "mptcp.connection_id"),
    col("token", ColType::U64, "mptcp.token"),
    col("subflow", ColType::U64, "0 for the initial (MP_CAPABLE) subflow, then 1, 2, ... for joined subflows in the order of their SYNs (flows.mptcp_subflow)"),
    col("flow_id", ColType::U64, "flows.flow_id of the subflow's TCP connection"),
    col("client_addr", ColType::Str, "the subflow's TCP client address (the side that sent its SYN)"),
    col("client_port", ColType::U64, "its port"),
    col("server_addr", ColType::Str, "the subflow's TCP server address"),
    col("server_port", ColType::U64, "its port"),
    col("address_id", ColType::U64, "MP_JOIN address id of the SYN; null for subflow 0"),
    col("join_ts", ColType::F64, "the subflow's SYN (first MPTCP segment), seconds since the Unix epoch"),
    col("backup", ColType::Bool, "the MP_JOIN SYN asked for a backup subflow"),
    col("prio_changes", ColType::U64, "MP_PRIO options sent on this subflow"),
    col("payload_bytes_down", ColType::U64, "subflow-level TCP payload server -> client (MPTCP roles), retransmissions included"),
    col("payload_bytes_up", ColType::U64, "subflow-level TCP payload client -> server"),
    col("data_bytes_down", ColType::U64, "DSN bytes first mapped on this subflow, server -> client (reinjections excluded)"),
    col("share_down", ColType::F64, "data_bytes_down / the connection's data_bytes_down (M29); null when the connection has none"),
    col("reinjected_bytes_down", ColType::U64, "DSN bytes this subflow carried server -> client that another subflow had carried before (M31)"),
    col("first_ts", ColType::F64, "first packet of the subflow, seconds since the Unix epoch"),
    col("last_ts", ColType::F64, "last packet of the subflow"),
    col("end_reason", ColType::Str, "flows.end_reason of the subflow"),
];

/// Data-level time series per MPTCP connection (M5).
pub const MPTCP_SERIES_COLUMNS: &[ColumnDef] = &[
    col("capture", ColType::Str, "capture file the row comes from"),
    col("connection_id", ColType::U64, "mptcp.connection_id"),
    col("token", ColType::U64, "mptcp.token"),
    col("bin", ColType::U64, "1-second bin index from the connection's first_ts"),
    col("t", ColType::F64, "bin start, seconds since the Unix epoch"),
    col("bin_s", ColType::F64, "length of the bin in seconds: 1 but for the last, which ends at the connection's last packet"),
    col("data_bytes_down", ColType::U64, "DSN bytes server -> client first mapped in this bin, on any subflow (M5 at data level)"),
    col("data_acked_down", ColType::U64, "advance of the client's DATA_ACK in this bin (bytes)"),
];

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
