//! Advertised window (AWND, M17: window field × 2^wscale of the latest ACK, RFC 7323 §2.3),
//! zero-window and full-window episodes, and whether new data was sent against the
//! receiver's window (rwnd-limited) or below it (cwnd- or application-limited; seed 000
//! §VI-B estimates SWND = min(CWND, AWND) by bytes in flight).

use crate::flow::event::{Dir, Event, EventKind};
use crate::wire::Nanos;

#[derive(Default)]
pub struct WindowStats {
    /// Latest, smallest and largest scaled window of the receiver of this direction, valid
    /// once `awnd_n` > 0 (plain values, not `Option`s: every ACK updates them; the accessors
    /// below read them as options).
    awnd: u64,
    awnd_min: u64,
    awnd_max: u64,
    /// (integers: exact at any length, and no conversion per ACK)
    pub awnd_sum: u64,
    pub awnd_n: u64,
    /// The latest window's raw field and known scale shift ([`Self::repeats`]).
    last: Option<(u16, u8)>,
    pub zero_segments: u64,
    pub zero_events: u64,
    pub zero_total: Nanos,
    zero_open: Option<Nanos>,
    /// A zero window was advertised and no new data has arrived since: the sender may
    /// still be probing it (a window update it missed, or one sent while a probe was on
    /// its way), so below-window probes still count.
    zero_since_data: bool,
    pub full_segments: u64,
    pub full_events: u64,
    full_open: Option<(Nanos, i64)>,
    full_last: Nanos,
    pub new_data_sends: u64,
    pub rwnd_limited_sends: u64,
}

/// Windows that repeat the latest one ([`WindowStats::repeats`]) inside the 1-s bin of its
/// last full sample: every data segment of a bulk transfer carries one in its ACK field.
/// They are counted here and added to the statistics and the bin at once
/// (`Stream::fold_window_repeats`), when the window or the bin changes and at the end.
#[derive(Default)]
pub struct Repeats {
    /// The times [from, to) of bin `bin` (empty until a first sample).
    pub span: (Nanos, Nanos),
    pub bin: usize,
    pub n: u64,
}

impl Repeats {
    #[inline]
    pub fn covers(&self, ts: Nanos) -> bool {
        ts >= self.span.0 && ts < self.span.1
    }
}

impl WindowStats {
    /// A window advertised by the receiver of `dir` (the raw field and its scale shift;
    /// `shift` None: scale unknown, the window is not interpreted).
    #[inline]
    pub fn on_window(
        &mut self,
        raw: u16,
        shift: Option<u8>,
        ts: Nanos,
        dir: Dir,
        ev: &mut Vec<Event>,
    ) -> Option<u64> {
        if raw == 0 {
            self.zero_segments += 1;
            self.zero_since_data = true;
            if self.zero_open.is_none() {
                self.zero_open = Some(ts);
            }
        } else if let Some(t0) = self.zero_open.take() {
            self.close_zero(t0, Some(ts), dir, ev);
        }
        self.last = shift.map(|s| (raw, s));
        let w = (raw as u64) << shift?;
        self.awnd = w;
        if self.awnd_n == 0 || w < self.awnd_min {
            self.awnd_min = w;
        }
        self.awnd_max = self.awnd_max.max(w);
        self.awnd_sum += w;
        self.awnd_n += 1;
        Some(w)
    }

    /// Whether a window repeats the latest one (open, scale known): such a sample changes
    /// only the sum and count, which [`Self::add_repeats`] adds for many at once.
    #[inline]
    pub fn repeats(&self, raw: u16, shift: Option<u8>) -> bool {
        raw != 0 && shift.is_some_and(|s| self.last == Some((raw, s)))
    }

    /// `n` more samples of the latest window (each one [`Self::repeats`]).
    pub fn add_repeats(&mut self, n: u64) {
        self.awnd_sum += self.awnd * n;
        self.awnd_n += n;
    }

    fn close_zero(&mut self, t0: Nanos, t1: Option<Nanos>, dir: Dir, ev: &mut Vec<Event>) {
        self.zero_events += 1;
        let mut e = Event::new(EventKind::ZeroWindow, t0);
        e.dir = Some(dir);
        e.ts_end = t1;
        e.class = Some(if t1.is_some() {
            "reopened"
        } else {
            "unfinished"
        });
        if let Some(t1) = t1 {
            self.zero_total += t1 - t0;
        }
        ev.push(e);
    }

    pub fn zero_now(&self) -> bool {
        self.zero_open.is_some()
    }

    /// The sender may be probing a zero window: it is zero now, or it was and no new data
    /// has been sent since it reopened.
    pub fn probing(&self) -> bool {
        self.zero_since_data
    }

    /// New data [s, e) was sent with the cumulative ACK at `una`; `quantum` is the window's
    /// granularity (2^wscale), `mss` the segment size. Full window: the segment reaches the
    /// right edge of the advertised window (within one quantum; Wireshark's test is exact
    /// equality, which scaled windows rarely hit).
    #[allow(clippy::too_many_arguments)]
    #[inline]
    pub fn on_new_data(
        &mut self,
        s: i64,
        e: i64,
        una: Option<i64>,
        quantum: i64,
        mss: i64,
        ts: Nanos,
        dir: Dir,
        ev: &mut Vec<Event>,
    ) {
        let _ = s;
        self.zero_since_data = false;
        let (Some(una), Some(w)) = (una, self.awnd()) else {
            return;
        };
        self.new_data_sends += 1;
        let edge = una + w as i64;
        if e - una >= w as i64 - mss {
            self.rwnd_limited_sends += 1;
        }
        if w > 0 && e > edge - quantum.max(1) {
            self.full_segments += 1;
            if self.full_open.is_none() {
                self.full_open = Some((ts, e));
            }
            self.full_last = ts;
        } else if let Some(open) = self.full_open.take() {
            self.close_full(open, dir, ev);
        }
    }

    /// A full-window episode that started at `t0` (segment end `at`) is over.
    fn close_full(&mut self, (t0, at): (Nanos, i64), dir: Dir, ev: &mut Vec<Event>) {
            self.full_events += 1;
            let mut x = Event::new(EventKind::FullWindow, t0);
            x.dir = Some(dir);
            x.ts_end = Some(self.full_last);
            x.seq_end = Some(at);
            ev.push(x);
    }

    pub fn finish(&mut self, dir: Dir, ev: &mut Vec<Event>) {
        if let Some(t0) = self.zero_open.take() {
            self.close_zero(t0, None, dir, ev);
        }
        if let Some(open) = self.full_open.take() {
            self.close_full(open, dir, ev);
        }
    }

    /// The latest scaled window, once one was seen with a known scale.
    #[inline]
    pub fn awnd(&self) -> Option<u64> {
        (self.awnd_n > 0).then_some(self.awnd)
    }

    pub fn awnd_min(&self) -> Option<u64> {
        (self.awnd_n > 0).then_some(self.awnd_min)
    }

    pub fn awnd_max(&self) -> Option<u64> {
        (self.awnd_n > 0).then_some(self.awnd_max)
    }

    pub fn awnd_mean(&self) -> Option<f64> {
        (self.awnd_n > 0).then(|| self.awnd_sum as f64 / self.awnd_n as f64)
    }
}
