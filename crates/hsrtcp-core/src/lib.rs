//! hsrtcp-core: the Python-free core of hsrtcp.
//!
//! Layers, each depending only on the ones before it:
//!
//! - [`capture`]: streaming pcap / pcapng reader (plain or gzip), frames with timestamps.
//! - [`wire`]: tolerant link / IP / TCP decoding into [`wire::Segment`] values.
//! - [`flow`]: the flow table and the per-connection TCP state machines.
//! - [`matcher`]: two-vantage (phone + server capture) pairing, clock alignment, loss attribution.
//! - [`table`]: columnar builders that turn results into Arrow record batches.
/// Capture time in nanoseconds since the Unix epoch (i64 covers years 1678..2262): the one
/// time type of the core, at its root so that the capture reader does not depend on `wire`.
pub type Nanos = i64;

pub mod analyze;
pub mod capture;
pub mod flow;
pub mod matcher;
pub mod mptcp;
pub mod stream;
pub mod table;
pub mod wire;
