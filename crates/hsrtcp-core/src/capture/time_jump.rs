//! Time jumps: records whose capture time is far from the records around them.
//!
//! A corrupt record header (seconds 0xFFFFFFFF, a record at time 0 before real ones) or a
//! clock stepped on the capturing host (a phone setting its clock from the network) makes
//! one record, or everything after it, jump by days or decades. Whatever follows the time
//! (per-second bins, durations, silences) would then span the jump: one bad header asked
//! for 20 GB of bins before this guard existed (issue 16).
//!
//! The rule, with `TIME_JUMP` = 1 day: a record more than `TIME_JUMP` away (forward or
//! backward) from the capture's clock (the latest record delivered) is held back and
//! judged by the record after it:
//! - that record is near the clock again: the held record was a lone outlier. It is
//!   skipped and counted (`malformed_reasons` "time_jump");
//! - that record is near the held one: the clock really stepped. Forward (or a capture
//!   paused for more than a day): both are delivered and the clock follows; nothing is
//!   skipped. Backward: the records after the step are not comparable with those before it
//!   (every duration, silence and rate across it would be wrong), so reading stops there, as
//!   at damage: the records before it are kept and the capture is marked truncated;
//! - neither: the held record is skipped and the new one is held in its place.
//!
//! The first record of a capture is held the same way until a second one agrees with it; when
//! the second disagrees, both are held and the third tells which one to skip (so a first
//! record at time 0 before real ones is skipped, and so is a bad second one). A record still
//! held when the capture ends is skipped unless it is the capture's only one. Every jump is counted
//! and the first is described with its byte offset; correct captures never hold a record
//! longer than the next one and come out unchanged.

use crate::Nanos;

/// Records this far (forward or backward) from the capture's clock are a time jump.
pub const TIME_JUMP: Nanos = 86_400 * 1_000_000_000;

/// The first time jump of a capture.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TimeJump {
    /// Byte offset of the jumping record's header in the (decompressed) file.
    pub offset: u64,
    /// Its capture time.
    pub ts: Nanos,
    /// The capture's clock before it (`None` for the first records of the capture).
    pub from: Option<Nanos>,
    /// What was done about it.
    pub action: JumpAction,
}

/// What the guard did about a time jump.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JumpAction {
    /// A lone outlier: the record was skipped.
    Skipped,
    /// The clock stepped forward: followed.
    Followed,
    /// The clock stepped back: reading stopped before the record.
    Stopped,
}

impl std::fmt::Display for TimeJump {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = |t: Nanos| t as f64 * 1e-9;
        write!(f, "record at byte offset {} has time {:.6} s", self.offset, s(self.ts))?;
        match self.from {
            Some(from) => write!(f, ", {:+.0} s from the capture's clock ({:.6} s)", s(self.ts - from), s(from))?,
            None => write!(f, ", more than a day from the records after it")?,
        }
        f.write_str(match self.action {
            JumpAction::Skipped => " (record skipped)",
            JumpAction::Followed => " (clock step followed)",
            JumpAction::Stopped => " (clock stepped back: reading stopped there)",
        })
    }
}

/// What to do with the record just read (and with a held one).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Deliver it.
    Deliver,
    /// Hold it back until the next record tells.
    Hold,
    /// Deliver the held record, then this one.
    ReleaseHeld,
    /// Skip the held record, deliver this one.
    SkipHeld,
    /// Skip the held record, hold this one instead.
    SkipHeldAndHold,
    /// Start of capture, two records disagree: hold this one as well.
    HoldSecond,
    /// Deliver the second held record, then this one (the first is skipped).
    ReleaseSecond,
    /// Skip the first held record; the second becomes the first, this one the second.
    ShiftHold,
    /// The clock stepped back at the held record: deliver neither it nor this one, stop.
    StepBack,
}

#[derive(Clone, Debug, Default)]
pub struct ClockGuard {
    /// The capture's clock: the latest time delivered.
    clock: Option<Nanos>,
    /// Time and offset of the record held back.
    held: Option<(Nanos, u64)>,
    /// At the start of a capture, a second record that disagreed with the held one.
    second: Option<(Nanos, u64)>,
    /// `clock` is known and nothing is held: the state of a correct capture after its
    /// second record, where [`ClockGuard::accept_steady`] judges a record with one comparison.
    steady: bool,
    /// Jumps found (skipped outliers and followed steps).
    pub jumps: u64,
    /// Records skipped as outliers.
    pub skipped: u64,
    pub first: Option<TimeJump>,
    /// The backward clock step that stopped reading ([`Verdict::StepBack`]).
    pub stepped_back: Option<TimeJump>,
}

#[inline]
fn near(a: Nanos, b: Nanos) -> bool {
    a.abs_diff(b) <= TIME_JUMP as u64
}

impl ClockGuard {
    /// The common case of [`ClockGuard::check`], for the reader's record loop: when the
    /// guard is steady and `ts` is near the clock, the record is delivered (the clock
    /// follows it) and this returns true; otherwise it changes nothing and returns false,
    /// and the record goes through `check`.
    #[inline(always)]
    pub fn accept_steady(&mut self, ts: Nanos) -> bool {
        let c = self.clock.unwrap_or(0);
        if self.steady && near(ts, c) {
            if ts > c {
                self.clock = Some(ts);
            }
            return true;
        }
        false
    }

    /// Judge the next record (time `ts`, header at `offset`).
    pub fn check(&mut self, ts: Nanos, offset: u64) -> Verdict {
        let v = self.judge(ts, offset);
        self.steady = self.clock.is_some() && self.held.is_none();
        v
    }

    #[inline]
    fn judge(&mut self, ts: Nanos, offset: u64) -> Verdict {
        match (self.clock, self.held) {
            (Some(c), None) if near(ts, c) => {
                self.clock = Some(c.max(ts));
                Verdict::Deliver
            }
            (_, None) => {
                self.held = Some((ts, offset));
                Verdict::Hold
            }
            (clock, Some((h, h_off))) => self.judge_held(clock, h, h_off, ts, offset),
        }
    }

    #[cold]
    fn judge_held(&mut self, clock: Option<Nanos>, h: Nanos, h_off: u64, ts: Nanos, offset: u64) -> Verdict {
        if let Some((h2, h2_off)) = self.second {
            // start of capture, two candidates: the one this record agrees with is right
            if near(ts, h) {
                self.found(TimeJump { offset: h2_off, ts: h2, from: None, action: JumpAction::Skipped });
            } else {
                self.found(TimeJump { offset: h_off, ts: h, from: None, action: JumpAction::Skipped });
            }
            self.skipped += 1;
            self.second = None;
            if near(ts, h) || near(ts, h2) {
                self.held = None;
                self.clock = Some(ts.max(if near(ts, h) { h } else { h2 }));
                return if near(ts, h) { Verdict::ReleaseHeld } else { Verdict::ReleaseSecond };
            }
            self.held = Some((h2, h2_off));
            self.second = Some((ts, offset));
            return Verdict::ShiftHold;
        }
        if clock.is_none() && !near(ts, h) {
            self.second = Some((ts, offset));
            return Verdict::HoldSecond;
        }
        if near(ts, h) {
            if let Some(c) = clock {
                if !near(h, c) && h < c {
                    let j = TimeJump { offset: h_off, ts: h, from: Some(c), action: JumpAction::Stopped };
                    self.found(j);
                    self.stepped_back = Some(j);
                    self.held = None;
                    return Verdict::StepBack;
                }
                if !near(h, c) {
                    self.found(TimeJump { offset: h_off, ts: h, from: Some(c), action: JumpAction::Followed });
                }
            }
            self.held = None;
            self.clock = Some(h.max(ts));
            return Verdict::ReleaseHeld;
        }
        self.found(TimeJump { offset: h_off, ts: h, from: clock, action: JumpAction::Skipped });
        self.skipped += 1;
        match clock {
            Some(c) if near(ts, c) => {
                self.held = None;
                self.clock = Some(c.max(ts));
                Verdict::SkipHeld
            }
            _ => {
                self.held = Some((ts, offset));
                Verdict::SkipHeldAndHold
            }
        }
    }

    /// The capture ended: whether the record still held (if any) is delivered.
    pub fn at_end(&mut self) -> bool {
        self.steady = false;
        if let Some((h2, h2_off)) = self.second.take() {
            // two records that disagree and nothing after them: neither can be trusted
            let (h, h_off) = self.held.take().expect("a second is held with a first");
            self.found(TimeJump { offset: h_off, ts: h, from: None, action: JumpAction::Skipped });
            self.found(TimeJump { offset: h2_off, ts: h2, from: None, action: JumpAction::Skipped });
            self.skipped += 2;
            return false;
        }
        match self.held.take() {
            None => false,
            // the capture's only record: nothing to disagree with
            Some(_) if self.clock.is_none() && self.jumps == 0 => true,
            Some((h, h_off)) => {
                self.found(TimeJump { offset: h_off, ts: h, from: self.clock, action: JumpAction::Skipped });
                self.skipped += 1;
                false
            }
        }
    }

    fn found(&mut self, j: TimeJump) {
        self.jumps += 1;
        self.first.get_or_insert(j);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: Nanos = 1_000_000_000;
    const T0: Nanos = 1_700_000_000 * S;

    /// The times delivered, in order, for records at `times` (offsets = index).
    fn run(times: &[Nanos]) -> (Vec<Nanos>, ClockGuard) {
        let mut g = ClockGuard::default();
        let mut out = Vec::new();
        let (mut held, mut second) = (None, None);
        for (i, &t) in times.iter().enumerate() {
            // the reader's order: the fast path first, then the full judgement
            if g.accept_steady(t) {
                out.push(t);
                continue;
            }
            match g.check(t, i as u64) {
                Verdict::Deliver => out.push(t),
                Verdict::Hold => held = Some(t),
                Verdict::ReleaseHeld => {
                    out.push(held.take().unwrap());
                    out.push(t);
                }
                Verdict::SkipHeld => {
                    held = None;
                    out.push(t);
                }
                Verdict::SkipHeldAndHold => held = Some(t),
                Verdict::HoldSecond => second = Some(t),
                Verdict::ReleaseSecond => {
                    out.push(second.take().unwrap());
                    out.push(t);
                }
                Verdict::ShiftHold => {
                    held = second.replace(t);
                }
                Verdict::StepBack => return (out, g),
            }
        }
        if g.at_end() {
            out.push(held.unwrap());
        }
        (out, g)
    }

    #[test]
    fn correct_captures_pass_unchanged() {
        let t: Vec<Nanos> = (0..100).map(|i| T0 + i * S / 10).collect();
        let (out, g) = run(&t);
        assert_eq!(out, t);
        assert_eq!((g.jumps, g.skipped), (0, 0));
        // a long but not absurd pause, out-of-order records, a single record
        let t = [T0, T0 + 3600 * S, T0 + 3600 * S - S, T0 + 7200 * S];
        assert_eq!(run(&t).0, t);
        assert_eq!(run(&[T0]).0, [T0]);
    }

    #[test]
    fn a_lone_outlier_is_skipped_and_described() {
        let bad = 0xFFFF_FFFF * S;
        let (out, g) = run(&[T0, T0 + S, bad, T0 + 2 * S, T0 + 3 * S]);
        assert_eq!(out, [T0, T0 + S, T0 + 2 * S, T0 + 3 * S]);
        assert_eq!((g.jumps, g.skipped), (1, 1));
        assert_eq!(g.first, Some(TimeJump { offset: 2, ts: bad, from: Some(T0 + S), action: JumpAction::Skipped }));
        // backwards, and at the very start (time 0), and at the very end
        assert_eq!(run(&[T0, 0, T0 + S]).0, [T0, T0 + S]);
        let (out, g) = run(&[0, T0, T0 + S]);
        assert_eq!(out, [T0, T0 + S]);
        assert_eq!(g.first.unwrap().from, None);
        assert_eq!(run(&[T0, T0 + S, bad]).0, [T0, T0 + S]);
        // a bad second record, three candidates in a row, two records that disagree
        assert_eq!(run(&[T0, bad, T0 + S, T0 + 2 * S]).0, [T0, T0 + S, T0 + 2 * S]);
        assert_eq!(run(&[0, bad, T0, T0 + S]).0, [T0, T0 + S]);
        assert_eq!(run(&[T0, bad]).0, [] as [Nanos; 0]);
    }

    #[test]
    fn a_clock_step_is_followed_and_counted() {
        let later = T0 + 10_000_000 * S;
        let (out, g) = run(&[T0, T0 + S, later, later + S, later + 2 * S]);
        assert_eq!(out.len(), 5);
        assert_eq!((g.jumps, g.skipped), (1, 0));
        assert_eq!(g.first.unwrap().action, JumpAction::Followed);
        assert!(g.first.unwrap().to_string().contains("byte offset 2"));
    }

    #[test]
    fn a_clock_stepped_back_stops_before_the_step() {
        // times after a backward step cannot be compared with those before: the records
        // before it are kept, nothing after it (issue 30 item 6)
        let earlier = T0 - 10_000_000 * S;
        let (out, g) = run(&[T0, T0 + S, earlier, earlier + S, earlier + 2 * S]);
        assert_eq!(out, [T0, T0 + S]);
        assert_eq!((g.jumps, g.skipped), (1, 0));
        let j = g.first.unwrap();
        assert_eq!((j.offset, j.action), (2, JumpAction::Stopped));
        assert!(j.to_string().contains("reading stopped"), "{j}");
        // a lone record in the past is still an outlier, skipped
        assert_eq!(run(&[T0, T0 + S, earlier, T0 + 2 * S]).0, [T0, T0 + S, T0 + 2 * S]);
    }
}
