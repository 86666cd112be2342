//! Per-1-second-bin accumulators of one direction (the `series` table, M3 with zeros in
//! back-off intervals: bins exist for every second of the connection, so a bin without
//! received bytes is 0, and `backoff` marks bins overlapped by a timeout sequence).

use crate::flow::connection::NANOS_PER_S;
use crate::wire::Nanos;

#[derive(Clone, Copy, Debug, Default)]
pub struct Bin {
    /// Bytes newly acknowledged (cumulative ACK advance) in the bin: goodput.
    pub goodput: u64,
    pub bif_max: u64,
    pub bif_sum: f64,
    pub bif_n: u32,
    pub awnd_min: u64,
    pub awnd_max: u64,
    pub awnd_sum: f64,
    pub awnd_n: u32,
    pub rtt_min: f64,
    pub rtt_max: f64,
    pub rtt_sum: f64,
    pub rtt_n: u32,
    pub retransmissions: u32,
    pub dupacks: u32,
    pub backoff: bool,
}

/// Bins beyond this (a corrupt timestamp years after the first packet) share one scratch
/// bin instead of allocating the gap (about 3 weeks of connection life at 1 s).
const MAX_BINS: usize = 1 << 21;

#[derive(Default)]
pub struct Bins {
    pub bins: Vec<Bin>,
    scratch: Bin,
}

impl Bins {
    #[inline]
    pub fn at(&mut self, first_ts: Nanos, ts: Nanos) -> &mut Bin {
        let i = ((ts.max(first_ts) - first_ts) / NANOS_PER_S) as usize;
        if i >= MAX_BINS {
            return &mut self.scratch;
        }
        if self.bins.len() <= i {
            self.bins.resize(i + 1, Bin::default());
        }
        &mut self.bins[i]
    }

    pub fn get(&self, i: usize) -> Option<&Bin> {
        self.bins.get(i)
    }

    #[inline]
    pub fn bif(&mut self, first_ts: Nanos, ts: Nanos, v: u64) {
        let b = self.at(first_ts, ts);
        b.bif_max = b.bif_max.max(v);
        b.bif_sum += v as f64;
        b.bif_n += 1;
    }

    #[inline]
    pub fn awnd(&mut self, first_ts: Nanos, ts: Nanos, v: u64) {
        let b = self.at(first_ts, ts);
        if b.awnd_n == 0 || v < b.awnd_min {
            b.awnd_min = v;
        }
        b.awnd_max = b.awnd_max.max(v);
        b.awnd_sum += v as f64;
        b.awnd_n += 1;
    }

    #[inline]
    pub fn rtt(&mut self, first_ts: Nanos, ts: Nanos, s: f64) {
        let b = self.at(first_ts, ts);
        if b.rtt_n == 0 || s < b.rtt_min {
            b.rtt_min = s;
        }
        b.rtt_max = b.rtt_max.max(s);
        b.rtt_sum += s;
        b.rtt_n += 1;
    }

    /// Mark every bin overlapped by [from, to] as inside a timeout sequence.
    pub fn backoff(&mut self, first_ts: Nanos, from: Nanos, to: Nanos) {
        let a = ((from.max(first_ts) - first_ts) / NANOS_PER_S) as usize;
        let b = ((to.max(first_ts) - first_ts) / NANOS_PER_S) as usize;
        // capture files are not always in time order: never trust from <= to
        if b < a || b >= MAX_BINS {
            return;
        }
        self.at(first_ts, to);
        for bin in &mut self.bins[a..=b] {
            bin.backoff = true;
        }
    }
}
