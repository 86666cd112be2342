//! M6's per-second loss counts of one matched connection, stored as runs of touched seconds.
//!
//! A dense vector indexed by second would let one packet with a far-off time (a clock step,
//! a hostile capture: the pair fuzz target found one 79 years out) ask for gigabytes. As in
//! the single-capture series (docs/formats/series.md), a stretch of more than [`GAP_BINS`]
//! seconds without a data transmission costs neither memory nor rows; `bin` keeps counting
//! real seconds, so such a gap shows as a jump in it.

/// Longer stretches without a transmission start a new run (the series' 300-s rule).
pub const GAP_BINS: u64 = 300;

/// Runs of consecutive 1-s bins, sorted by first bin. A bin more than [`GAP_BINS`] after the
/// end of the run before it starts a new run; the writer fills gaps of at most [`GAP_BINS`]
/// between runs (an out-of-order bin can leave one).
#[derive(Clone, Debug, Default)]
pub struct LossBins {
    runs: Vec<(u64, Vec<[u64; 2]>)>,
}

impl LossBins {
    /// Count one data transmission in bin `k` (`lost`: it never reached the receiver).
    #[inline]
    pub fn add(&mut self, k: u64, lost: bool) {
        let b = self.bin(k);
        b[0] += 1;
        b[1] += lost as u64;
    }

    fn bin(&mut self, k: u64) -> &mut [u64; 2] {
        // the common case: in or just after the last run (transmissions come in time order)
        let pos = match self.runs.iter().rposition(|(s, _)| *s <= k) {
            Some(i) if k - self.runs[i].0 <= self.runs[i].1.len() as u64 + GAP_BINS => i,
            Some(i) => {
                self.runs.insert(i + 1, (k, Vec::new()));
                i + 1
            }
            None => {
                self.runs.insert(0, (k, Vec::new()));
                0
            }
        };
        let (s, v) = &mut self.runs[pos];
        let off = (k - *s) as usize;
        if off >= v.len() {
            v.resize(off + 1, [0, 0]);
        }
        &mut v[off]
    }

    /// Every bin to write, in order: `(bin, [sent, lost])`, zero bins inside a run and in
    /// gaps of at most [`GAP_BINS`] between runs (and from bin 0, the connection's first
    /// packet, to the first run), nothing in longer gaps.
    pub fn rows(&self) -> impl Iterator<Item = (u64, [u64; 2])> + '_ {
        let mut prev_end: Option<u64> = Some(0);
        self.runs.iter().flat_map(move |(s, v)| {
            let fill = match prev_end {
                Some(e) if *s > e && *s - e <= GAP_BINS => e..*s,
                _ => 0..0,
            };
            prev_end = Some(*s + v.len() as u64);
            fill.map(|k| (k, [0, 0])).chain(v.iter().enumerate().map(move |(i, b)| (*s + i as u64, *b)))
        })
    }

    /// Bins held in memory (tests: bounded whatever the times).
    pub fn held(&self) -> usize {
        self.runs.iter().map(|(_, v)| v.len()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dense_counts_are_one_run_with_zero_bins_between() {
        let mut b = LossBins::default();
        b.add(0, false);
        b.add(3, true);
        b.add(3, false);
        let rows: Vec<_> = b.rows().collect();
        assert_eq!(rows, vec![(0, [1, 0]), (1, [0, 0]), (2, [0, 0]), (3, [2, 1])]);
    }

    #[test]
    fn a_far_off_time_costs_one_bin_not_gigabytes() {
        let mut b = LossBins::default();
        b.add(1, false);
        b.add(2_500_000_000, true); // 79 years later
        b.add(0, false);
        assert_eq!(b.held(), 3);
        let rows: Vec<_> = b.rows().collect();
        assert_eq!(rows, vec![(0, [1, 0]), (1, [1, 0]), (2_500_000_000, [1, 1])]);
    }

    #[test]
    fn out_of_order_bins_before_the_first_run_are_kept_and_short_gaps_filled() {
        let mut b = LossBins::default();
        b.add(1000, false);
        b.add(998, true); // a new run before the first, 2 s before it: the gap is filled
        b.add(10, false); // far before: its own run, no rows for the 988 s between
        let rows: Vec<_> = b.rows().collect();
        let mut want: Vec<_> = (0..10).map(|k| (k, [0, 0])).collect(); // from bin 0 on
        want.extend([(10, [1, 0]), (998, [1, 1]), (999, [0, 0]), (1000, [1, 0])]);
        assert_eq!(rows, want);
    }
}
