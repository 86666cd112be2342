//! Spurious-retransmission evidence (docs/metrics.md M12, M13, M16; analyzers.md §3.5):
//!
//! - receiver side: the retransmitted bytes had all arrived before (M12, definitive);
//! - sender side, D-SACK (RFC 2883 §4, RFC 3708): an ACK whose first SACK block lies below
//!   its cumulative ACK, or inside its second block, reports a duplicate arrival; it is
//!   attributed to the latest retransmission of that range;
//! - sender side, Eifel (RFC 3522): the first ACK that acknowledges the timed-out segment
//!   echoes a TSecr older than the TSval of the first RTO retransmission, so it was sent for
//!   the original.

use crate::wire::Nanos;
use super::kinds::RetransClass;

/// A D-SACK block in relative sequence numbers, if the ACK carries one.
/// `blocks` are relative [left, right) pairs in wire order; `ack` the relative cumulative ACK.
pub fn dsack(blocks: &[(i64, i64)], ack: i64) -> Option<(i64, i64)> {
    let &(l, r) = blocks.first()?;
    if r <= l {
        return None;
    }
    if l < ack {
        return Some((l, r.min(ack).max(l + 1)));
    }
    if let Some(&(l2, r2)) = blocks.get(1) {
        if l >= l2 && r <= r2 {
            return Some((l, r));
        }
    }
    None
}

/// One recent retransmission, kept to attribute late D-SACKs.
#[derive(Clone, Copy, Debug)]
pub struct RecentRetx {
    pub start: i64,
    pub end: i64,
    pub ts: Nanos,
    pub class: RetransClass,
    /// RTO episode id (for RTO retransmissions).
    pub episode: Option<u32>,
    pub attributed: bool,
    /// TSval and IP ID of the re-sent copy: an original is older in both.
    pub tsval: Option<u32>,
    pub ip_id: Option<u16>,
}

const RECENT: usize = 64;

/// Fixed-size ring of the latest retransmissions.
pub struct RecentRing {
    buf: [Option<RecentRetx>; RECENT],
    next: usize,
}

impl Default for RecentRing {
    fn default() -> Self {
        RecentRing {
            buf: [None; RECENT],
            next: 0,
        }
    }
}

impl RecentRing {
    pub fn push(&mut self, r: RecentRetx) {
        self.buf[self.next] = Some(r);
        self.next = (self.next + 1) % RECENT;
    }

    /// The latest retransmission starting at byte `s`, whatever its attribution.
    pub fn latest_at(&self, s: i64) -> Option<RecentRetx> {
        (1..=RECENT)
            .filter_map(|k| self.buf[(self.next + RECENT - k) % RECENT])
            .find(|x| x.start == s)
    }

    /// The latest retransmission starting at byte `s` if it is not attributed yet; marks it
    /// attributed (receiver: one late original makes one re-send unnecessary, once).
    pub fn claim_latest_at(&mut self, s: i64) -> Option<RecentRetx> {
        for k in 1..=RECENT {
            let i = (self.next + RECENT - k) % RECENT;
            if let Some(x) = self.buf[i].as_mut() {
                if x.start == s {
                    if x.attributed {
                        return None;
                    }
                    x.attributed = true;
                    return Some(*x);
                }
            }
        }
        None
    }

    /// The latest not-yet-attributed retransmission overlapping [l, r); marks it attributed
    /// so one duplicate report is not counted twice.
    pub fn attribute(&mut self, l: i64, r: i64) -> Option<RecentRetx> {
        for k in 1..=RECENT {
            let i = (self.next + RECENT - k) % RECENT;
            if let Some(x) = self.buf[i].as_mut() {
                if !x.attributed && x.start < r && l < x.end {
                    x.attributed = true;
                    return Some(*x);
                }
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dsack_forms_of_rfc2883() {
        // example 1: duplicate below the cumulative ACK
        assert_eq!(dsack(&[(3000, 3500)], 4000), Some((3000, 3500)));
        // example 3: duplicate above the ACK, inside the second (regular) SACK block
        assert_eq!(
            dsack(&[(5000, 5500), (4500, 6000)], 4000),
            Some((5000, 5500))
        );
        // plain SACK
        assert_eq!(dsack(&[(5000, 5500), (6000, 6500)], 4000), None);
        assert_eq!(dsack(&[], 4000), None);
    }
}
