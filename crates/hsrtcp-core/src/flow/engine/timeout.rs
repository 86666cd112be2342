//! Recovery episodes and timeout sequences (docs/metrics.md M10, A19; models.md §3.6).
//!
//! A *recovery episode* starts at a fast retransmit or at an RTO retransmission and lasts
//! until the cumulative ACK passes the recovery point (the highest byte sent when it began,
//! RFC 6582 / RFC 6675); retransmissions inside it inherit its mechanism.
//!
//! A *timeout sequence* is the M10 timeout-recovery phase of one RTO episode: it starts when
//! the RTO timer that first expired was armed — the later of the last transmission of the
//! timed-out segment and the last ACK that advanced snd_una (Linux re-arms the timer on each
//! such ACK, RFC 6298 §5.3) — and ends at the first ACK that advances snd_una past the start
//! of the timed-out segment. Every further retransmission of that segment before the end is
//! one more timeout (exponential back-off).

use crate::wire::Nanos;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RecoveryKind {
    Fast,
    Rto,
}

#[derive(Clone, Copy, Debug)]
pub struct Recovery {
    pub kind: RecoveryKind,
    /// Highest byte sent (exclusive) when the episode began.
    pub point: i64,
    pub id: u32,
}

#[derive(Clone, Copy, Debug)]
pub struct TimeoutSeq {
    pub id: u32,
    /// When the first expiring RTO timer was armed (M10 start).
    pub armed: Nanos,
    /// First RTO retransmission (r_1) time and its TSval (for the Eifel test).
    pub first_retx: Nanos,
    pub first_tsval: Option<u32>,
    /// The timed-out segment.
    pub seg_start: i64,
    pub seg_end: i64,
    /// RTOs in the sequence (1 + back-offs).
    pub timeouts: u32,
    /// All retransmissions sent while the sequence was open.
    pub retransmissions: u32,
    /// Retransmissions sent before the first ACK of any kind arrived after r_1 (M13 numerator
    /// when the timeout is spurious).
    pub retx_before_ack: u32,
    pub ack_seen_after: bool,
    /// Retransmissions of the timed-out segment that were retransmitted again (lost, or
    /// their ACK lost): the single-capture estimate of q's numerator.
    pub repeated: u32,
    pub last_retx: Nanos,
}

/// Summary of a closed (or still open) RTO episode kept for late spurious verdicts (D-SACK
/// can arrive after the sequence ended).
#[derive(Clone, Copy, Debug, Default)]
pub struct EpisodeMark {
    pub id: u32,
    pub first_retx: Nanos,
    pub retx_before_ack: u32,
    /// TSval of the first RTO re-send (D-SACK echo test).
    pub first_tsval: Option<u32>,
    /// First byte of the timed-out segment: only D-SACKs of it judge the timeout.
    pub head_start: i64,
    /// Re-sends of the timed-out segment (first expiry and back-offs), and D-SACKs of them.
    pub head_resends: u32,
    pub dsacked: u32,
    /// A D-SACK of the head echoed a copy other than itself: the echo rule gave the verdict.
    pub echo_decided: bool,
    /// Counted in `spurious_timeouts_undecided` (until a later D-SACK decides it).
    pub undecided: bool,
    pub spurious_dsack: bool,
    pub spurious_eifel: bool,
    pub spurious_receiver: bool,
}

impl EpisodeMark {
    pub fn any_spurious(&self) -> bool {
        self.spurious_dsack || self.spurious_eifel || self.spurious_receiver
    }
}

/// The sender's retransmission timer as far as its capture shows it (RFC 6298 §2, §5.5,
/// §5.7), kept apart from the flow's RTT (M7): a timer cannot have fired sooner than this.
///
/// Two things make the sender's RTO far longer than the flow's RTT scale after a stall that
/// held packets (issue 30, lab "stalls-held"): it samples segments sent before the stall and
/// acknowledged after it (Karn's rule only skips retransmitted ones; M7's stricter rule skips
/// everything sent before a retransmission), and an expiry doubles the RTO until the next
/// such sample. ACK-clocked re-sends paced at the rate that follows were taken for timeouts.
#[derive(Clone, Copy, Debug, Default)]
pub struct SenderTimer {
    est: crate::flow::engine::rtt::RttEstimator,
    /// Interval of the latest expiry seen (armed -> re-send), kept until a valid sample:
    /// the backed-off RTO is twice it, so it is a lower bound with a margin of two for an
    /// arming time the capture dates too early.
    expired: Option<Nanos>,
}

impl SenderTimer {
    /// An RTT sample the sender could take (none of the acknowledged bytes re-sent).
    pub fn sample(&mut self, r: Nanos) {
        self.est.sample(r);
        self.expired = None;
    }

    /// The timer expired `interval` after it was armed.
    pub fn expired(&mut self, interval: Nanos) {
        if interval > 0 {
            self.expired = Some(self.expired.map_or(interval, |e| e.max(interval)));
        }
    }

    /// A lower bound of the sender's current RTO (None before any evidence).
    pub fn rto(&self) -> Option<Nanos> {
        match (self.est.rto(), self.expired) {
            (Some(a), Some(b)) => Some(a.max(b)),
            (a, b) => a.or(b),
        }
    }
}
