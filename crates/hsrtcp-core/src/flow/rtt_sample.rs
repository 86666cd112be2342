//! RTT samples: one row per sample in the `rtt` table (docs/formats/rtt.md).
//!
//! Samples are the longest output of a bulk transfer (one per ACK at the sender), so they
//! have their own narrow table instead of 12-column `events` rows: a sample is 24 bytes
//! while the connection holds it and five cells when written.

use crate::flow::event::{nanos_to_s, Dir};
use crate::table::{col, Cell, ColType, ColumnDef, TableBuilder};
use crate::wire::Nanos;

/// How a sample was taken (targets.md M7 and A-rulings on RTT).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RttMethod {
    /// Data→ACK matching with Karn's rule, at the sender (M7).
    Ack,
    /// TSval→TSecr echo loop of the side the capture is on (RFC 7323 §4).
    Timestamp,
    /// SYN→SYN-ACK at the client, SYN-ACK→ACK at the server.
    Handshake,
}

impl RttMethod {
    pub fn name(self) -> &'static str {
        match self {
            RttMethod::Ack => "ack",
            RttMethod::Timestamp => "ts",
            RttMethod::Handshake => "handshake",
        }
    }
}

/// One RTT sample: taken at `ts` (the closing packet), `rtt` long, timing the data of `dir`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct RttSample {
    pub ts: Nanos,
    pub rtt: Nanos,
    pub dir: Dir,
    pub method: RttMethod,
}

pub const RTT_COLUMNS: &[ColumnDef] = &[
    col("flow_id", ColType::U64, "flow the sample belongs to (flows.flow_id)"),
    col("ts", ColType::F64, "time of the packet that closed the sample, seconds since the Unix epoch"),
    col("dir", ColType::Str, "direction of the data (or TSval) being timed: c2s or s2c"),
    col("method", ColType::Str, "ack (data→ACK matching with Karn's rule, M7), ts (TSval→TSecr echo), handshake"),
    col("rtt_s", ColType::F64, "the round-trip time, seconds"),
];

/// Append `s` as one `rtt` row (schema [`RTT_COLUMNS`]).
#[inline]
pub fn write_rtt_sample(t: &mut TableBuilder, flow_id: u64, s: &RttSample) {
    t.append_row(&[
        Cell::U64(Some(flow_id)),
        Cell::F64(Some(nanos_to_s(s.ts))),
        Cell::Str(Some(s.dir.name())),
        Cell::Str(Some(s.method.name())),
        Cell::F64(Some(nanos_to_s(s.rtt))),
    ]);
}
