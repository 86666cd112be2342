//! Flows: the flow table and the per-connection state machines.
//!
//! Read first: RFC 9293 (TCP), RFC 7323 (window scale, timestamps), RFC 2018 and 2883
//! (SACK, D-SACK), RFC 6298 (RTO), RFC 3522 (Eifel), RFC 5682 (F-RTO), RFC 8684 (MPTCP).
pub mod connection;
pub mod embryo;
pub mod engine;
pub mod event;
pub mod key;
pub mod packets;
pub mod rtt_sample;
pub mod seq;
pub mod table;
pub mod tunnel;

pub use connection::{ConnBase, Connection};
pub use event::{Dir, Event};
pub use rtt_sample::{RttMethod, RttSample};
pub use table::{CaptureInfo, FlowTable, Output};
