//! Wrap-aware TCP sequence arithmetic.
//!
//! Sequence numbers are 32-bit modular (RFC 9293 §3.4). Each direction of a connection maps
//! them onto a 64-bit "relative" space that starts at 0 at the first sequence number seen
//! (the ISN when the SYN was captured) and never wraps, so every comparison above this module
//! is plain integer arithmetic. The mapping takes the shortest signed distance to the last
//! mapped value, which is right as long as consecutive packets are less than 2^31 bytes apart.

/// Signed distance `a - b` on the 32-bit sequence circle (RFC 1982 style).
#[inline]
pub fn seq_diff(a: u32, b: u32) -> i32 {
    a.wrapping_sub(b) as i32
}

/// `a` is strictly before `b` in sequence space.
#[inline]
pub fn seq_lt(a: u32, b: u32) -> bool {
    seq_diff(a, b) < 0
}

/// Unwraps one direction's 32-bit sequence numbers into a monotone 64-bit space.
#[derive(Clone, Copy, Debug)]
pub struct SeqSpace {
    base: u32,
    last_raw: u32,
    last_rel: i64,
}

impl SeqSpace {
    /// A space whose relative 0 is `base` (the ISN, or the first sequence number seen).
    pub fn new(base: u32) -> Self {
        SeqSpace { base, last_raw: base, last_rel: 0 }
    }

    pub fn base(&self) -> u32 {
        self.base
    }

    /// Relative position of `raw`; may be negative for data before the first seen packet.
    /// Updates the reference point so long transfers (> 4 GiB) keep unwrapping.
    #[inline]
    pub fn unwrap(&mut self, raw: u32) -> i64 {
        let rel = self.last_rel + seq_diff(raw, self.last_raw) as i64;
        self.last_raw = raw;
        self.last_rel = rel;
        rel
    }

    /// Relative position without moving the reference point (for ACK numbers and SACK edges).
    #[inline]
    pub fn peek(&self, raw: u32) -> i64 {
        self.last_rel + seq_diff(raw, self.last_raw) as i64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wraps_forward_across_zero() {
        let mut s = SeqSpace::new(u32::MAX - 99);
        assert_eq!(s.unwrap(u32::MAX - 99), 0);
        assert_eq!(s.unwrap(u32::MAX), 99);
        assert_eq!(s.unwrap(0), 100);
        assert_eq!(s.unwrap(1000), 1100);
        // a retransmission from before the wrap still maps to its old place
        assert_eq!(s.unwrap(u32::MAX - 49), 50);
        assert!(seq_lt(u32::MAX, 5));
        assert!(!seq_lt(5, u32::MAX));
    }

    #[test]
    fn keeps_counting_past_four_gib() {
        let mut s = SeqSpace::new(7);
        let mut raw = 7u32;
        let mut expect = 0i64;
        for _ in 0..5000 {
            raw = raw.wrapping_add(1_000_000);
            expect += 1_000_000;
            assert_eq!(s.unwrap(raw), expect);
        }
        assert!(expect > 4 * (1i64 << 30));
        assert_eq!(s.peek(raw.wrapping_sub(10)), expect - 10);
    }
}
