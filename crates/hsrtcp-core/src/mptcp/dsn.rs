//! Which subflow first carried each range of the data sequence space of one direction, to
//! tell new data from reinjections and data-level retransmissions (docs/metrics.md M30/M31,
//! A23-A24).
//!
//! A DSS mapping says "DSN bytes [dsn, dsn + len) ride on subflow `s` from subflow sequence
//! `ssn`". Compared with what was mapped before:
//! - bytes never mapped are new data (counted once per connection: `data_bytes`);
//! - bytes mapped before on *another* subflow are a reinjection (RFC 8684 §3.3.6);
//! - bytes mapped before on the *same* subflow at another subflow sequence number are a
//!   data-level retransmission (sent again as new subflow data);
//! - the same bytes at the same subflow sequence are a TCP retransmission of the subflow
//!   (or the mapping repeated on each segment of an offloaded burst): not data level.

use std::collections::VecDeque;

/// Ranges kept per direction before the oldest half is forgotten (bounds memory on very
/// long connections; reinjections reach back a few round trips, not millions of mappings).
const MAX_RANGES: usize = 1 << 16;

#[derive(Clone, Copy, Debug)]
struct Range {
    start: u64,
    end: u64,
    subflow: u16,
    /// Subflow sequence number of the range's first byte.
    ssn: u32,
}

/// What one mapping brought.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MapOutcome {
    /// Bytes never mapped before.
    pub new_bytes: u64,
    /// Bytes another subflow had carried.
    pub reinjected: u64,
    /// Bytes this subflow had carried at another subflow sequence number.
    pub retransmitted: u64,
}

/// The data sequence space of one direction: disjoint ranges in DSN order. A deque, not a
/// search tree: mappings arrive nearly in DSN order, so a new one is mostly appended at the
/// back (one comparison), and the few out of order land near it.
#[derive(Debug, Default)]
pub struct DsnMap {
    ranges: VecDeque<Range>,
}

impl DsnMap {
    /// Account the mapping [dsn, dsn + len) carried by `subflow` from `ssn`.
    pub fn map(&mut self, dsn: u64, len: u64, subflow: u16, ssn: u32) -> MapOutcome {
        let mut o = MapOutcome::default();
        if len == 0 {
            return o;
        }
        let end = dsn.saturating_add(len);
        // The first range that ends after `dsn` (ranges are disjoint and sorted, so their
        // ends are sorted too); the common case, new data after everything, tests the back.
        let first = match self.ranges.back() {
            Some(r) if r.end > dsn => self.ranges.partition_point(|r| r.end <= dsn),
            _ => self.ranges.len(),
        };
        if self.ranges.get(first).is_none_or(|r| r.start >= end) {
            // Overlaps nothing mapped before: all new.
            o.new_bytes = end - dsn;
            self.insert(first, dsn, end, subflow, ssn);
            self.forget_oldest();
            return o;
        }
        // Overlapping ranges [first, last): what they carried, and the gaps between them.
        let mut gaps: Vec<(u64, u64)> = Vec::new();
        let mut at = dsn;
        let mut i = first;
        while let Some(r) = self.ranges.get(i).filter(|r| r.start < end) {
            let (a, b) = (r.start.max(dsn), r.end.min(end));
            if r.subflow != subflow {
                o.reinjected += b - a;
            } else {
                let then = r.ssn.wrapping_add((a - r.start) as u32);
                let now = ssn.wrapping_add((a - dsn) as u32);
                if then != now {
                    o.retransmitted += b - a;
                }
            }
            if a > at {
                gaps.push((at, a));
            }
            at = at.max(b);
            i += 1;
        }
        if end > at {
            gaps.push((at, end));
        }
        // Insert the gaps as this subflow's (from the back, so earlier positions hold).
        for &(a, b) in gaps.iter().rev() {
            o.new_bytes += b - a;
            let pos = self.ranges.partition_point(|r| r.start < a);
            self.insert(pos, a, b, subflow, ssn.wrapping_add((a - dsn) as u32));
        }
        self.forget_oldest();
        o
    }

    /// Add [a, b) at position `pos` (the first range starting at or after `a`), merged with
    /// the range before it when that one continues it exactly.
    fn insert(&mut self, pos: usize, a: u64, b: u64, subflow: u16, ssn: u32) {
        if let Some(r) = pos.checked_sub(1).and_then(|p| self.ranges.get_mut(p)) {
            if r.end == a && r.subflow == subflow && r.ssn.wrapping_add((a - r.start) as u32) == ssn {
                r.end = b;
                return;
            }
        }
        self.ranges.insert(pos, Range { start: a, end: b, subflow, ssn });
    }

    fn forget_oldest(&mut self) {
        if self.ranges.len() > MAX_RANGES {
            self.ranges.drain(..MAX_RANGES / 2);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.ranges.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn new_reinjected_and_retransmitted_bytes() {
        let mut m = DsnMap::default();
        // subflow 0 carries [1000, 2000) then [2000, 3000) contiguously: one range
        assert_eq!(m.map(1000, 1000, 0, 1).new_bytes, 1000);
        assert_eq!(m.map(2000, 1000, 0, 1001).new_bytes, 1000);
        assert_eq!(m.len(), 1);
        // the same mapping again (TCP retransmission / repeated option): nothing new
        assert_eq!(m.map(2000, 1000, 0, 1001), MapOutcome::default());
        // subflow 1 re-sends [2500, 3500): 500 reinjected, 500 new
        assert_eq!(m.map(2500, 1000, 1, 1), MapOutcome { new_bytes: 500, reinjected: 500, retransmitted: 0 });
        // subflow 0 sends [1000, 1500) again as new subflow data (ssn 2001): data-level retransmission
        assert_eq!(m.map(1000, 500, 0, 2001), MapOutcome { new_bytes: 0, reinjected: 0, retransmitted: 500 });
        // a mapping spanning a hole and two owners
        assert_eq!(m.map(3000, 1000, 0, 2501), MapOutcome { new_bytes: 500, reinjected: 500, retransmitted: 0 });
    }
}
