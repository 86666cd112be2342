//! hsrtcp-core: the Python-free core of hsrtcp.
//!
//! Layers, each depending only on the ones before it:
//!
//! - [`capture`]: streaming pcap / pcapng reader (plain or gzip), frames with timestamps.
//! - [`wire`]: tolerant link / IP / TCP decoding into [`wire::Segment`] values.
//! - [`flow`]: the flow table and the per-connection TCP state machines.
//! - [`matcher`]: two-vantage (phone + server capture) pairing, clock alignment, loss attribution.
//! - [`table`]: columnar builders that turn results into Arrow record batches.
pub mod analyze;
pub mod capture;
pub mod flow;
pub mod matcher;
pub mod mptcp;
pub mod stream;
pub mod table;
pub mod wire;
