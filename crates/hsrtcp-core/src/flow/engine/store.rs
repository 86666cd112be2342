//! The per-direction segment store: what byte ranges of one direction's data the capture has
//! seen above the highest cumulative ACK, when, how often, and with which TSval / IP ID.
//!
//! Records are sorted, non-overlapping byte ranges (relative, unwrapped sequence numbers,
//! see [`crate::flow::seq`]). Gaps between records are holes: bytes not (yet) seen at the
//! capture point. New data beyond the tail is appended (O(1)); records wholly below the
//! cumulative ACK are popped from the front (O(1) amortized), so memory follows the window,
//! not the capture length. Segment boundaries are not trusted (TSO/GRO giants, re-segmented
//! retransmissions): lookups work on byte ranges.

use std::collections::VecDeque;

use crate::wire::Nanos;

/// Hard bound on records per direction, for captures that miss the ACK direction entirely
/// (the cumulative ACK then never prunes). The oldest records are dropped beyond it.
pub const MAX_RECORDS: usize = 1 << 16;

#[derive(Clone, Copy, Debug)]
pub struct Rec {
    pub start: i64,
    pub end: i64,
    /// First time these bytes were seen.
    pub first_ts: Nanos,
    /// Latest time any of these bytes were seen again.
    pub last_ts: Nanos,
    /// Times seen (1 = never repeated at the capture point).
    pub tx: u32,
    /// TSval of the first copy and of the latest copy (0 when timestamps are off).
    pub tsval_first: u32,
    pub tsval_last: u32,
    /// IPv4 ID of the latest copy (None for IPv6).
    pub ip_id: Option<u16>,
    /// The record was created by a hole fill (not in transmission order).
    pub filled: bool,
}

impl Rec {
    /// A record of bytes [start, end) seen once, at `ts`.
    #[inline]
    fn first_copy(start: i64, end: i64, ts: Nanos, tsval: u32, ip_id: Option<u16>, filled: bool) -> Rec {
        Rec { start, end, first_ts: ts, last_ts: ts, tx: 1, tsval_first: tsval, tsval_last: tsval, ip_id, filled }
    }
}

/// How a new copy of a byte range relates to what was seen before.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Overlap {
    /// Entirely beyond everything seen so far (possibly after a gap).
    New { gap: bool },
    /// Every byte was seen before: a repeated copy.
    Repeat,
    /// No byte was seen before, but the range lies below the highest byte seen: a hole fill.
    Fill,
    /// Some bytes seen before, some not.
    Partial,
}

/// Facts about the earlier copies a repeated or filling range touched.
#[derive(Clone, Copy, Debug, Default)]
pub struct Prior {
    /// Latest time any overlapped byte was seen before this copy.
    pub last_ts: Nanos,
    /// Earliest first-seen time among the overlapped records.
    pub first_ts: Nanos,
    /// TSval / IP ID of the overlapped record starting at the same byte, if any.
    pub same_start_tsval: Option<u32>,
    pub same_start_ip_id: Option<u16>,
    /// Max repeat count among the overlapped records before this copy.
    pub max_tx: u32,
    /// For fills: first-seen time of the record right after the hole (when the hole became
    /// visible at the capture point).
    pub hole_seen_ts: Option<Nanos>,
}

#[derive(Default)]
pub struct Store {
    recs: VecDeque<Rec>,
    /// Records dropped by [`MAX_RECORDS`] (lookups below the kept window then miss).
    pub overflowed: u64,
}

impl Store {
    pub fn len(&self) -> usize {
        self.recs.len()
    }

    pub fn is_empty(&self) -> bool {
        self.recs.is_empty()
    }

    pub fn tail_end(&self) -> Option<i64> {
        self.recs.back().map(|r| r.end)
    }

    /// Drop records wholly below `una` (sorted: one search and one drain, not a pop each).
    pub fn prune_below(&mut self, una: i64) {
        let n = self.recs.partition_point(|r| r.end <= una);
        self.recs.drain(..n);
    }

    /// Index of the first record whose end is beyond `s`.
    fn first_ending_after(&self, s: i64) -> usize {
        self.recs.partition_point(|r| r.end <= s)
    }

    /// The newest record wholly covered by a cumulative ACK at `ack` (end ≤ ack).
    pub fn last_covered(&self, ack: i64) -> Option<&Rec> {
        let i = self.recs.partition_point(|r| r.end <= ack);
        if i == 0 {
            None
        } else {
            self.recs.get(i - 1)
        }
    }

    /// First send time of the records a cumulative ACK at `ack` newly covers (all kept
    /// records ending at or below it), or None if one was seen twice or filled a hole: the
    /// sender takes no RTT sample from re-sent bytes (Karn, RFC 6298 §3).
    pub fn karn_first_ts(&self, ack: i64) -> Option<Nanos> {
        let n = self.recs.partition_point(|r| r.end <= ack);
        let mut first = Nanos::MAX;
        // (`all` walks the deque's two slices in two plain loops)
        let once = self.recs.range(..n).all(|r| {
            first = first.min(r.first_ts);
            r.tx <= 1 && !r.filled
        });
        (once && n > 0).then_some(first)
    }

    /// Latest time bytes re-sent (or filled: the capture missed their first copy) were seen
    /// among the records a cumulative ACK at `ack` reaches.
    pub fn latest_resend_below(&self, ack: i64) -> Option<Nanos> {
        let n = self.recs.partition_point(|r| r.start < ack);
        self.recs.range(..n).filter(|r| r.tx > 1 || r.filled).map(|r| r.last_ts).max()
    }

    /// Record covering byte `b`.
    pub fn covering(&self, b: i64) -> Option<&Rec> {
        let i = self.first_ending_after(b);
        self.recs.get(i).filter(|r| r.start <= b)
    }

    /// Whether `earlier` holds for a copy of data at or beyond `e` seen so far. New data goes
    /// out in sequence order, so the originals' copies beyond the first record still holding its
    /// original (seen once, not a fill) were all sent after that one: only the records up to it
    /// need a look (usually the record right after a hole).
    pub fn any_copy_beyond(&self, e: i64, mut earlier: impl FnMut(&Rec) -> bool) -> bool {
        let mut i = self.recs.partition_point(|r| r.start < e);
        while let Some(r) = self.recs.get(i) {
            if earlier(r) {
                return true;
            }
            if r.tx == 1 && !r.filled {
                return false;
            }
            i += 1;
        }
        false
    }

    /// New data beyond everything seen (nearly every segment) is appended here, inline in
    /// the engine: `Some(gap)`, without a [`Prior`] to build; a copy that starts below the
    /// highest byte seen is left to [`Self::add_below_tail`] (`None`).
    #[inline(always)]
    pub fn append_new(&mut self, s: i64, e: i64, ts: Nanos, tsval: u32, ip_id: Option<u16>) -> Option<bool> {
        let tail = self.recs.back().map(|r| r.end);
        if !tail.is_none_or(|t| s >= t) {
            return None;
        }
        let gap = tail.is_some_and(|t| s > t);
        self.recs.push_back(Rec::first_copy(s, e, ts, tsval, ip_id, false));
        if self.recs.len() > MAX_RECORDS {
            self.recs.pop_front();
            self.overflowed += 1;
        }
        Some(gap)
    }

    /// A copy of [s, e) that starts below the highest byte seen (never new data: that is
    /// [`Self::append_new`]); `merge_fills` lets hole fills extend the record before them
    /// instead of inserting (receiver side: many holes, no RTT use).
    #[allow(clippy::too_many_arguments)]
    pub fn add_below_tail(
        &mut self,
        s: i64,
        e: i64,
        ts: Nanos,
        tsval: u32,
        ip_id: Option<u16>,
        merge_fills: bool,
    ) -> (Overlap, Prior) {
        let mut prior = Prior {
            first_ts: Nanos::MAX,
            last_ts: Nanos::MIN,
            ..Default::default()
        };
        let mut covered = 0i64;
        let mut i = self.first_ending_after(s);
        // Pieces of [s, e) not covered by any record (holes being filled), in order.
        let mut holes: [(i64, i64, usize); 4] = [(0, 0, 0); 4];
        let mut nh = 0usize;
        let mut cur = s;
        while cur < e {
            match self.recs.get_mut(i) {
                Some(r) if r.start < e => {
                    if r.start > cur {
                        // (pieces beyond four holes stay unrecorded: harmless, seen as holes)
                        if nh < holes.len() {
                            holes[nh] = (cur, r.start, i);
                            nh += 1;
                        }
                        prior.hole_seen_ts.get_or_insert(r.first_ts);
                    }
                    let lo = cur.max(r.start);
                    let hi = e.min(r.end);
                    covered += hi - lo;
                    prior.last_ts = prior.last_ts.max(r.last_ts);
                    prior.first_ts = prior.first_ts.min(r.first_ts);
                    prior.max_tx = prior.max_tx.max(r.tx);
                    if r.start == s {
                        prior.same_start_tsval = Some(r.tsval_last);
                        prior.same_start_ip_id = r.ip_id;
                    }
                    r.tx += 1;
                    r.last_ts = ts;
                    r.tsval_last = tsval;
                    r.ip_id = ip_id;
                    cur = hi;
                    i += 1;
                }
                next => {
                    // hole up to the next record (or to e when beyond the tail)
                    let upto = match next {
                        Some(r) => {
                            prior.hole_seen_ts.get_or_insert(r.first_ts);
                            r.start.min(e)
                        }
                        None => e,
                    };
                    if nh < holes.len() {
                        holes[nh] = (cur, upto, i);
                        nh += 1;
                    }
                    cur = upto;
                }
            }
        }
        self.fill_holes(&holes[..nh], ts, tsval, ip_id, merge_fills);
        let len = e - s;
        let kind = if covered == len {
            Overlap::Repeat
        } else if covered == 0 {
            Overlap::Fill
        } else {
            Overlap::Partial
        };
        if prior.first_ts == Nanos::MAX {
            prior.first_ts = ts;
            prior.last_ts = ts;
        }
        (kind, prior)
    }

    /// The second step of `add_below_tail` (the walk above must not shift the indices it
    /// records): insert the new records of the hole pieces, back to front so earlier indices
    /// stay valid; with `merge_fills` a piece right after a record extends it instead.
    fn fill_holes(&mut self, holes: &[(i64, i64, usize)], ts: Nanos, tsval: u32, ip_id: Option<u16>, merge_fills: bool) {
        for &(hs, he, at) in holes.iter().rev() {
            if merge_fills && at > 0 {
                if let Some(p) = self.recs.get_mut(at - 1) {
                    if p.end == hs {
                        p.end = he;
                        continue;
                    }
                }
            }
            self.recs.insert(at, Rec::first_copy(hs, he, ts, tsval, ip_id, true));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A copy of [s, e) seen at `ts` (no TSval, no IP ID), placed as the engine places it.
    fn add(st: &mut Store, s: i64, e: i64, ts: Nanos, merge_fills: bool) -> (Overlap, Prior) {
        match st.append_new(s, e, ts, 0, None) {
            Some(gap) => (Overlap::New { gap }, Prior::default()),
            None => st.add_below_tail(s, e, ts, 0, None, merge_fills),
        }
    }

    #[test]
    fn classifies_new_repeat_fill_partial_and_prunes() {
        let mut st = Store::default();
        assert_eq!(
            add(&mut st, 0, 100, 1, false).0,
            Overlap::New { gap: false }
        );
        assert_eq!(
            add(&mut st, 200, 300, 2, false).0,
            Overlap::New { gap: true }
        );
        assert_eq!(add(&mut st, 0, 100, 3, false).0, Overlap::Repeat);
        let (k, p) = add(&mut st, 100, 200, 4, false);
        assert_eq!(k, Overlap::Fill);
        assert_eq!(p.hole_seen_ts, Some(2));
        assert_eq!(st.len(), 3);
        assert_eq!(add(&mut st, 250, 350, 5, false).0, Overlap::Partial);
        assert_eq!(st.tail_end(), Some(350));
        assert_eq!(st.last_covered(200).unwrap().start, 100);
        st.prune_below(200);
        assert_eq!(st.len(), 2);
        assert_eq!(st.covering(260).unwrap().tx, 2);
    }

    #[test]
    fn merged_fills_keep_ranges_disjoint() {
        let mut st = Store::default();
        add(&mut st, 0, 10, 1, true);
        add(&mut st, 20, 30, 2, true);
        add(&mut st, 40, 50, 3, true);
        assert_eq!(add(&mut st, 5, 45, 4, true).0, Overlap::Partial);
        assert_eq!(st.len(), 3);
        assert_eq!(add(&mut st, 0, 50, 5, true).0, Overlap::Repeat);
    }
}
