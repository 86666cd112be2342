//! Tolerant decoding of link, network and TCP headers into [`Segment`] values.
mod segment;
pub use segment::*;
