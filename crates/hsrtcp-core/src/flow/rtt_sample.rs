//! RTT samples: one row per sample in the `rtt` table (docs/formats/rtt.md).
//!
//! Samples are the longest output of a bulk transfer (one per ACK at the sender), so they
//! have their own narrow table instead of 12-column `events` rows: a sample is 24 bytes
//! while the connection holds it and 32 while it waits for its batch.

use std::sync::Arc;

use arrow_array::{ArrayRef, Float64Array, RecordBatch, UInt64Array};
use arrow_buffer::ScalarBuffer;
use arrow_schema::Schema;

use crate::flow::event::{nanos_to_s, Dir};
pub use crate::table::registry::{RTT_COLUMNS, RTT_VERSION};
use crate::table::{schema_of, str_column};
use crate::wire::Nanos;

/// How a sample was taken (docs/metrics.md M7 and A-rulings on RTT).
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

/// Rows of the `rtt` table being collected: plain (flow id, sample) pairs, turned into
/// Arrow columns in one pass per batch. Going cell by cell through a generic
/// [`crate::table::TableBuilder`] cost about 400 instructions a row, 6 % of the engine
/// thread on a bulk download; column by column it is a few dozen.
pub struct RttRows {
    rows: Vec<(u64, RttSample)>,
    schema: Arc<Schema>,
}

impl RttRows {
    pub fn with_capacity(capacity: usize) -> Self {
        RttRows { rows: Vec::with_capacity(capacity), schema: Arc::new(schema_of(RTT_COLUMNS)) }
    }

    pub fn rows(&self) -> usize {
        self.rows.len()
    }

    /// Append (flow id, sample) pairs, in order.
    pub fn extend(&mut self, pairs: impl IntoIterator<Item = (u64, RttSample)>) {
        self.rows.extend(pairs);
    }

    /// The rows so far as one batch (schema [`RTT_COLUMNS`]); the collection starts over,
    /// keeping its memory: a fresh buffer per batch cost a page fault every 4 KiB.
    pub fn take_batch(&mut self) -> RecordBatch {
        let rows = &self.rows;
        let flow_id: Vec<u64> = rows.iter().map(|(id, _)| *id).collect();
        let ts: Vec<f64> = rows.iter().map(|(_, s)| nanos_to_s(s.ts)).collect();
        let rtt: Vec<f64> = rows.iter().map(|(_, s)| nanos_to_s(s.rtt)).collect();
        let dir = str_column(rows.iter().map(|(_, s)| s.dir.name()), rows.len());
        let method = str_column(rows.iter().map(|(_, s)| s.method.name()), rows.len());
        let cols: Vec<ArrayRef> = vec![
            Arc::new(UInt64Array::new(ScalarBuffer::from(flow_id), None)),
            Arc::new(Float64Array::new(ScalarBuffer::from(ts), None)),
            dir,
            method,
            Arc::new(Float64Array::new(ScalarBuffer::from(rtt), None)),
        ];
        self.rows.clear();
        RecordBatch::try_new(self.schema.clone(), cols).expect("rtt columns match RTT_COLUMNS")
    }
}
