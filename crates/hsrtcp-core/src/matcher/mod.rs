//! Two-vantage matcher (issue 4): a phone-side ("client") and a server-side capture of the
//! same connections, read together.
//!
//! What it adds to the single-capture engine is everything that needs both capture points
//! (docs/metrics.md M6–M14, M16, M18, M36; rulings A3–A12; models.md §3):
//!
//! - [`pairing`]: finds the same connection in both captures although carrier NAT rewrote
//!   the phone's address and port — by the client's initial sequence number and the server
//!   port, or, without a captured handshake, by sequence-number proximity on the same server
//!   port. Connections present in one capture only are reported, not dropped.
//! - [`fate`]: matches every packet of a paired connection across the captures (sequence,
//!   acknowledgment, length, window, timestamps, SACK blocks, IP ID; identical packets as a
//!   multiset, oldest first), so every transmission is *delivered* (with its one-way delay)
//!   or *lost*; a packet the receiver acknowledged but its capture never showed is *capture
//!   loss*, counted apart from network loss.
//! - [`clock`]: the offset and drift between the two capture clocks, from the lower envelope of
//!   the one-way delays in each direction, with a hard uncertainty bound.
//! - [`metrics`]: p_d, p_a, the ACK burst loss per round P_a (`ack_burst_loss`), the loss of
//!   retransmissions inside timeout sequences q, one-way-delay summaries, spurious timeouts
//!   with their cause (ACK loss or RTO estimation inaccuracy) and RTO estimation bias t6 − t4,
//!   and the connection establishment time.
//! - [`driver`]: reads both captures as one stream, merged by (coarsely aligned) time, and
//!   keeps unmatched packets only for a bounded window.
//! - [`output`]: a run of capture files and pairs written into Parquet as it goes; [`join`]
//!   joins the matcher's rows with the files' `flows` rows, [`pair_stats`] is each pair's
//!   table row.
//!
//! Times of the two captures are never compared raw: client-capture times are mapped to the
//! server clock with the estimated offset (`t_server = t_client + clock_offset_s`).
pub mod chunk_log;
pub mod clock;
pub mod driver;
pub mod fate;
pub mod join;
pub mod loss_bins;
pub mod metrics;
pub mod output;
pub mod pair_stats;
pub mod pairing;

pub use driver::{
    analyze_pair, match_batches, match_segments, match_streams, BudgetCuts, MatchOptions, PairResult, MATCH_STATE_BUDGET,
};
pub use metrics::MATCH_COLUMNS;
pub use pairing::PairingMethod;

/// Which capture a packet or connection comes from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Side {
    /// The phone-side capture (the connection's opener).
    Client = 0,
    /// The server-side capture.
    Server = 1,
}

impl Side {
    pub fn idx(self) -> usize {
        self as usize
    }
    pub fn other(self) -> Side {
        match self {
            Side::Client => Side::Server,
            Side::Server => Side::Client,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            Side::Client => "client",
            Side::Server => "server",
        }
    }
}
