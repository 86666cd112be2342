//! Receiver vantage, timestamps on: which of the phone's ACKs the sender had taken when it
//! sent a copy. A segment's TSecr echoes the TSval of the latest ACK its sender took
//! (RFC 7323 §4.3; Linux stores it from every in-window ACK before it handles the loss the
//! ACK shows), so the phone can tell whether any ACK that could show a loss had reached the
//! sender. Arrival gaps cannot: after a delay episode copies sent seconds apart arrive
//! bunched, and the phone's RTT samples (tens of seconds) hide every time scale.

use std::collections::VecDeque;

use crate::flow::seq::seq_lt;

/// Loss-signal ACKs kept (oldest dropped first; a question reaching below them is not
/// answered).
const KEPT: usize = 64;

/// `a` ≤ `b` on the TSval clock.
#[inline]
fn le(a: u32, b: u32) -> bool {
    !seq_lt(b, a)
}

/// What the phone told the sender, by TSval.
#[derive(Default)]
pub(super) struct Heard {
    /// TSvals of the phone's ACKs that could make a sender re-send before its timer (a SACK
    /// block, data held beyond the ACK number, or sent after a re-send arrived: RACK marks
    /// by what a later-sent copy delivered), oldest first.
    signals: VecDeque<u32>,
    /// The newest signal dropped for room.
    dropped: Option<u32>,
    /// Smallest TSecr of the data arrived since an advance last left no hole: a bound below
    /// the ACK each of those segments' sender had taken when it sent them.
    tsecr_low: Option<u32>,
    /// A re-send arrived since the phone's last ACK.
    resend_since_ack: bool,
}

impl Heard {
    /// A data segment arrived with TSecr `tsecr`.
    #[inline]
    pub fn on_data(&mut self, tsecr: u32) {
        if self.tsecr_low.is_none_or(|l| seq_lt(tsecr, l)) {
            self.tsecr_low = Some(tsecr);
        }
    }

    /// A re-send arrived (the phone's next ACK tells the sender what a later copy delivered).
    #[inline]
    pub fn on_resend(&mut self) {
        self.resend_since_ack = true;
    }

    /// The phone sent an ACK with `tsval`; `holds_beyond`: it carries a SACK block or data
    /// beyond its ACK number had arrived.
    #[inline]
    pub fn on_ack(&mut self, tsval: u32, holds_beyond: bool) {
        if (holds_beyond || self.resend_since_ack) && self.signals.back() != Some(&tsval) {
            if self.signals.len() == KEPT {
                self.dropped = self.signals.pop_front();
            }
            self.signals.push_back(tsval);
        }
        self.resend_since_ack = false;
    }

    /// The ACK advanced; `no_hole`: nothing beyond it had arrived. Returns the TSecr bound
    /// for the bytes it covers (0 when no data carried one).
    #[inline]
    pub fn on_advance(&mut self, no_hole: bool) -> u32 {
        let low = self.tsecr_low.unwrap_or(0);
        if no_hole {
            self.tsecr_low = None;
        }
        low
    }

    /// A copy of bytes the phone had acknowledged left its sender (TSecr `echo`) before the
    /// sender took the ACK that covered them (TSval `cover`), and no loss signal of the
    /// phone reached the sender between the bytes' original (TSecr at least `low`) and this
    /// copy: nothing but a timer made it re-send them. False when unknown.
    pub fn no_signal_heard(&self, echo: u32, cover: u32, low: u32) -> bool {
        if low == 0 || !seq_lt(echo, cover) {
            return false;
        }
        // the newest signal the sender had taken when it sent the copy
        match self.signals.iter().rev().find(|&&t| le(t, echo)) {
            Some(&t) => seq_lt(t, low),
            None => self.dropped.is_none_or(|d| seq_lt(d, low)),
        }
    }
}
