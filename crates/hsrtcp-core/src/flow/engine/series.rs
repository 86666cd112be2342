//! Per-1-second-bin accumulators of one direction (the `series` table, M3 with zeros in
//! back-off intervals: bins exist for every second of the connection, so a bin without
//! received bytes is 0, and `backoff` marks bins overlapped by a timeout sequence), stored
//! as [`Runs`] so that a long silence or a time jump inside a connection costs nothing.

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
    pub awnd_sum: u64,
    pub awnd_n: u32,
    pub rtt_min: f64,
    pub rtt_max: f64,
    pub rtt_sum: f64,
    pub rtt_n: u32,
    pub retransmissions: u32,
    pub dupacks: u32,
    pub backoff: bool,
}

/// Silences of a connection longer than this (no packet in either direction) get no
/// `series` rows, and no bin is allocated across a gap this long: a time jump inside a
/// connection costs nothing (docs/formats/series.md). Above the longest RTO back-off (120 s
/// on Linux), so the zero bins of a timeout sequence are always there.
pub const SILENCE_WITHOUT_ROWS: Nanos = 300 * NANOS_PER_S;
const GAP_BINS: usize = (SILENCE_WITHOUT_ROWS / NANOS_PER_S) as usize;

/// Per-second values stored as runs of consecutive bins: a run grows over gaps shorter
/// than [`SILENCE_WITHOUT_ROWS`] and a longer gap starts a new run, so memory follows the
/// seconds in which something happened, not the time between the first and last of them.
/// The current (last) run is the one nearly every packet touches: one test more than a
/// plain vector.
#[derive(Clone, Debug)]
pub struct Runs<T> {
    /// (first bin, values) in increasing order of first bin, never overlapping.
    runs: Vec<(usize, Vec<T>)>,
}

impl<T> Default for Runs<T> {
    fn default() -> Self {
        Runs { runs: Vec::new() }
    }
}

impl<T: Default + Clone> Runs<T> {
    /// The value of bin `i`, allocated (default) if absent.
    #[inline]
    pub fn at(&mut self, i: usize) -> &mut T {
        if let Some((start, len)) = self.runs.last().map(|r| (r.0, r.1.len())) {
            let k = i.wrapping_sub(start);
            let n = self.runs.len() - 1;
            if k < len {
                return &mut self.runs[n].1[k];
            }
            if k < len + GAP_BINS {
                self.runs[n].1.resize(k + 1, T::default());
                return &mut self.runs[n].1[k];
            }
        }
        self.at_cold(i)
    }

    /// [`Self::at`] beyond the last run's reach or before its start.
    #[cold]
    fn at_cold(&mut self, i: usize) -> &mut T {
        let p = self.runs.partition_point(|r| r.0 <= i);
        if p > 0 {
            let (start, len) = (self.runs[p - 1].0, self.runs[p - 1].1.len());
            let k = i - start;
            let room = self.runs.get(p).map_or(usize::MAX, |next| next.0 - start);
            if k < len + GAP_BINS && k < room {
                if k >= len {
                    self.runs[p - 1].1.resize(k + 1, T::default());
                }
                return &mut self.runs[p - 1].1[k];
            }
        }
        self.runs.insert(p, (i, vec![T::default()]));
        &mut self.runs[p].1[0]
    }

    /// The value of bin `i` if it was ever touched.
    pub fn get(&self, i: usize) -> Option<&T> {
        let p = self.runs.partition_point(|r| r.0 <= i);
        let (start, v) = self.runs.get(p.checked_sub(1)?)?;
        v.get(i - start)
    }

    /// The allocated bins in [a, b], in order.
    fn range_mut(&mut self, a: usize, b: usize) -> impl Iterator<Item = &mut T> {
        self.runs.iter_mut().flat_map(move |(start, v)| {
            let (s, n) = (*start, v.len());
            let lo = a.max(s).min(s + n) - s;
            let hi = (b.saturating_add(1)).max(s).min(s + n) - s;
            v[lo..hi].iter_mut()
        })
    }
}

/// One sample `v` into a bin's smallest, largest, sum and count (the smallest is set by the
/// first sample: `min` starts at 0).
#[inline]
fn fold<T: Copy + PartialOrd + std::ops::AddAssign>(min: &mut T, max: &mut T, sum: &mut T, n: &mut u32, v: T) {
    if *n == 0 || v < *min {
        *min = v;
    }
    if v > *max {
        *max = v;
    }
    *sum += v;
    *n += 1;
}

#[derive(Default)]
pub struct Bins {
    pub bins: Runs<Bin>,
}

impl Bins {
    /// The index of the bin of `ts`.
    #[inline]
    fn index(first_ts: Nanos, ts: Nanos) -> usize {
        ((ts.max(first_ts) - first_ts) / NANOS_PER_S) as usize
    }

    /// The times [from, to) whose bin is `i` (before the first packet: bin 0).
    pub fn span(first_ts: Nanos, i: usize) -> (Nanos, Nanos) {
        let from = if i == 0 { Nanos::MIN } else { first_ts + i as Nanos * NANOS_PER_S };
        (from, first_ts + (i as Nanos + 1) * NANOS_PER_S)
    }

    #[inline]
    pub fn at(&mut self, first_ts: Nanos, ts: Nanos) -> &mut Bin {
        self.bins.at(Self::index(first_ts, ts))
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

    /// An advertised window at `ts`; returns its bin's index (for [`Self::awnd_repeats`]).
    #[inline]
    pub fn awnd(&mut self, first_ts: Nanos, ts: Nanos, v: u64) -> usize {
        let i = Self::index(first_ts, ts);
        let b = self.bins.at(i);
        fold(&mut b.awnd_min, &mut b.awnd_max, &mut b.awnd_sum, &mut b.awnd_n, v);
        i
    }

    /// `n` more samples of window `v` in bin `i`, which holds one already (its smallest and
    /// largest stay).
    pub fn awnd_repeats(&mut self, i: usize, v: u64, n: u64) {
        let b = self.bins.at(i);
        b.awnd_sum += v * n;
        b.awnd_n += n as u32;
    }

    #[inline]
    pub fn rtt(&mut self, first_ts: Nanos, ts: Nanos, s: f64) {
        let b = self.at(first_ts, ts);
        fold(&mut b.rtt_min, &mut b.rtt_max, &mut b.rtt_sum, &mut b.rtt_n, s);
    }

    /// Mark every bin overlapped by [from, to] as inside a timeout sequence.
    pub fn backoff(&mut self, first_ts: Nanos, from: Nanos, to: Nanos) {
        let a = ((from.max(first_ts) - first_ts) / NANOS_PER_S) as usize;
        let b = ((to.max(first_ts) - first_ts) / NANOS_PER_S) as usize;
        // capture files are not always in time order: never trust from <= to
        if b < a {
            return;
        }
        self.at(first_ts, to);
        // (bins across a silence without rows are not allocated, and not marked)
        for bin in self.bins.range_mut(a, b) {
            bin.backoff = true;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn runs_allocate_only_near_what_was_touched() {
        let mut r: Runs<u64> = Runs::default();
        *r.at(0) += 1;
        *r.at(3) += 2;
        *r.at(10_000_000) += 5; // a jump: a new run, not ten million bins
        *r.at(10_000_001) += 1;
        *r.at(2) += 7; // late packet before the jump
        *r.at(usize::MAX / 2) += 1;
        assert_eq!(r.runs.iter().map(|x| x.1.len()).sum::<usize>(), 4 + 2 + 1);
        assert_eq!(r.get(2), Some(&7));
        assert_eq!(r.get(3), Some(&2));
        assert_eq!(r.get(4), None);
        assert_eq!(r.get(10_000_000), Some(&5));
        assert_eq!(r.range_mut(1, 10_000_000).count(), 4);
        // before the first run: a run of its own, inserted in order
        let mut r: Runs<u64> = Runs::default();
        *r.at(1000) += 1;
        *r.at(5) += 1;
        assert_eq!((r.get(5), r.get(1000), r.get(6)), (Some(&1), Some(&1), None));
    }

    #[test]
    fn backoff_across_a_jump_allocates_nothing_in_between() {
        let mut b = Bins::default();
        let t0 = 1_700_000_000 * NANOS_PER_S;
        b.at(t0, t0).goodput = 1;
        b.backoff(t0, t0, t0 + 10_000_000 * NANOS_PER_S);
        assert!(b.get(0).unwrap().backoff);
        assert!(b.get(10_000_000).unwrap().backoff);
        assert_eq!(b.bins.runs.len(), 2);
    }
}
