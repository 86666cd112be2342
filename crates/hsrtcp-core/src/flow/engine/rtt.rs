//! RTT bookkeeping: a bounded summary of samples (count, min, mean, std, max and a median
//! from a log-spaced histogram) and an RFC 6298 smoothed estimator that the classifiers use
//! as the flow's own time scale (so thresholds follow the path from sub-millisecond LANs to
//! multi-second HSR stalls instead of fixed WAN floors).
//!
//! The samples themselves leave the engine as rows of the `rtt` table (docs/formats/rtt.md),
//! handed on in chunks like events; nothing else here grows with the number of samples.

use crate::flow::rtt_sample::{RttMethod, RttSample};
use crate::wire::Nanos;

/// Histogram resolution: bins grow by 2 % so the median is within ±1 % of the exact one.
const HIST_RATIO_LN: f64 = 0.019_802_627_3; // ln(1.02)
/// Smallest value the histogram resolves (1 µs); smaller samples land in bin 0.
const HIST_MIN_S: f64 = 1e-6;
/// 1 µs .. ~ 10^4 s.
const HIST_BINS: usize = 1170;

/// The histogram bin of `s` seconds: floor(ln(s / 1 µs) / ln 1.02), 0 below 1 µs.
///
/// Computed from the float's exponent and a short series for the mantissa's logarithm
/// instead of libm's `ln` and two divisions, which were 6 % of the engine thread on a bulk
/// download (a sample per ACK). The series' error is below 1e-7 in ln, a few millionths
/// of a bin: a sample lands in a neighbouring bin only within that distance of an edge.
#[inline]
fn hist_bin(s: f64) -> usize {
    if s.is_nan() || s <= HIST_MIN_S {
        return 0;
    }
    let x = s * (1.0 / HIST_MIN_S);
    let bits = x.to_bits();
    let exp = ((bits >> 52) & 0x7ff) as i64 - 1023;
    // the mantissa as a number in [1, 2)
    let m = f64::from_bits((bits & 0x000f_ffff_ffff_ffff) | 0x3ff0_0000_0000_0000);
    // ln m = 2 atanh(t), t = (m - 1) / (m + 1) in [0, 1/3): odd series up to t^11
    let t = (m - 1.0) / (m + 1.0);
    let t2 = t * t;
    let series = 1.0 + t2 * (1.0 / 3.0 + t2 * (1.0 / 5.0 + t2 * (1.0 / 7.0 + t2 * (1.0 / 9.0 + t2 * (1.0 / 11.0)))));
    let ln_x = exp as f64 * std::f64::consts::LN_2 + 2.0 * t * series;
    (ln_x * (1.0 / HIST_RATIO_LN)) as usize
}

/// Summary of a stream of RTT samples in seconds, O(1) memory per flow.
#[derive(Clone, Debug, Default)]
pub struct RttSummary {
    pub count: u64,
    sum: f64,
    sumsq: f64,
    pub min: f64,
    pub max: f64,
    /// Allocated at the first sample (flows without samples pay nothing).
    hist: Vec<u32>,
}

impl RttSummary {
    pub fn add(&mut self, s: f64) {
        if self.count == 0 {
            self.min = s;
            self.max = s;
            self.hist = vec![0; HIST_BINS];
        } else {
            self.min = self.min.min(s);
            self.max = self.max.max(s);
        }
        self.count += 1;
        self.sum += s;
        self.sumsq += s * s;
        self.hist[hist_bin(s).min(HIST_BINS - 1)] += 1;
    }

    pub fn mean(&self) -> Option<f64> {
        (self.count > 0).then(|| self.sum / self.count as f64)
    }

    /// Population standard deviation.
    pub fn std(&self) -> Option<f64> {
        let m = self.mean()?;
        Some((self.sumsq / self.count as f64 - m * m).max(0.0).sqrt())
    }

    pub fn min(&self) -> Option<f64> {
        (self.count > 0).then_some(self.min)
    }

    pub fn max(&self) -> Option<f64> {
        (self.count > 0).then_some(self.max)
    }

    /// Median from the histogram (geometric bin centre, clamped to [min, max]); exact for
    /// one sample, within ±1 % otherwise.
    pub fn median(&self) -> Option<f64> {
        if self.count == 0 {
            return None;
        }
        if self.count == 1 {
            return Some(self.min);
        }
        let half = self.count.div_ceil(2);
        let mut acc = 0u64;
        for (i, &n) in self.hist.iter().enumerate() {
            acc += n as u64;
            if acc >= half {
                let v = HIST_MIN_S * ((i as f64 + 0.5) * HIST_RATIO_LN).exp();
                return Some(v.clamp(self.min, self.max));
            }
        }
        Some(self.max)
    }
}

/// RFC 6298 §2 smoothed RTT and variation, in nanoseconds.
#[derive(Clone, Copy, Debug, Default)]
pub struct RttEstimator {
    pub srtt: Option<Nanos>,
    pub rttvar: Nanos,
    /// Smallest sample seen (the path's propagation floor as far as we know).
    pub min: Option<Nanos>,
}

impl RttEstimator {
    pub fn sample(&mut self, r: Nanos) {
        let r = r.max(0);
        match self.srtt {
            None => {
                self.srtt = Some(r);
                self.rttvar = r / 2;
            }
            Some(s) => {
                self.rttvar = (3 * self.rttvar + (s - r).abs()) / 4;
                self.srtt = Some((7 * s + r) / 8);
            }
        }
        self.min = Some(self.min.map_or(r, |m| m.min(r)));
    }

    /// RFC 6298 RTO without any clock-granularity floor: SRTT + 4·RTTVAR.
    pub fn rto(&self) -> Option<Nanos> {
        self.srtt.map(|s| s + 4 * self.rttvar)
    }
}

/// First capture time of each distinct TSval one side sent, pruned by the peer's echoes, so
/// it holds about one RTT of TSvals (Linux ticks TSval every 1 ms). Used for RFC 7323 echo
/// RTT samples and for telling which side of the path the capture is on.
#[derive(Default)]
pub struct TsRing {
    q: std::collections::VecDeque<(u32, Nanos)>,
}

/// Bound for a peer that never echoes (one-sided captures).
const TS_RING_MAX: usize = 4096;

impl TsRing {
    /// A segment carrying `tsval` was seen at `ts`.
    #[inline]
    pub fn sent(&mut self, tsval: u32, ts: Nanos) {
        match self.q.back() {
            Some(&(v, _)) if v == tsval || crate::flow::seq::seq_lt(tsval, v) => {}
            _ => {
                self.q.push_back((tsval, ts));
                if self.q.len() > TS_RING_MAX {
                    self.q.pop_front();
                }
            }
        }
    }

    /// The peer echoed `tsecr`: the first time that TSval was seen, if still known. Older
    /// TSvals are dropped (echoes only move forward), so each TSval answers once.
    #[inline]
    pub fn echoed(&mut self, tsecr: u32) -> Option<Nanos> {
        while let Some(&(v, t)) = self.q.front() {
            if crate::flow::seq::seq_lt(v, tsecr) {
                self.q.pop_front();
            } else if v == tsecr {
                self.q.pop_front();
                return Some(t);
            } else {
                return None;
            }
        }
        None
    }
}

/// The connection's RTT samples: one estimator (all methods feed it) and one summary per
/// method. Every sample is also kept for the `rtt` table and lands in its 1-s series bin.
#[derive(Default)]
pub struct RttBook {
    pub est: RttEstimator,
    /// Data→ACK matching with Karn's rule (sender vantage, M7).
    pub ack: RttSummary,
    /// TSval→TSecr echo loop of the side the capture is on (RFC 7323 §4).
    pub ts: RttSummary,
    /// SYN→SYN-ACK (client vantage) or SYN-ACK→ACK (server vantage), seconds.
    pub handshake: Option<f64>,
    /// ACK-matching candidates (dir, time, rtt) seen before the vantage was known; bounded.
    held: Vec<(crate::flow::event::Dir, Nanos, Nanos)>,
    /// Samples not yet handed on to the `rtt` table (the flow table takes them in chunks).
    pub samples: Vec<RttSample>,
}

/// Bound on held candidates (the vantage is normally known within the first window).
const HELD_MAX: usize = 4096;

impl RttBook {
    pub fn hold(&mut self, dir: crate::flow::event::Dir, ts: Nanos, rtt: Nanos) {
        if self.held.len() < HELD_MAX {
            self.held.push((dir, ts, rtt));
        }
    }

    /// The vantage became known: the held candidates of the direction whose sender the
    /// capture sits at are RTT samples (returned for the caller to book); the rest go.
    pub fn take_held(&mut self, sender_dir: crate::flow::event::Dir) -> Vec<(Nanos, Nanos)> {
        let out = self
            .held
            .iter()
            .filter(|h| h.0 == sender_dir)
            .map(|h| (h.1, h.2))
            .collect();
        self.held = Vec::new();
        out
    }

    pub fn sample(
        &mut self,
        method: RttMethod,
        dir: crate::flow::event::Dir,
        ts: Nanos,
        rtt: Nanos,
        bins: Option<(&mut super::series::Bins, Nanos)>,
    ) {
        let s = rtt as f64 * 1e-9;
        match method {
            RttMethod::Ack => self.ack.add(s),
            RttMethod::Timestamp => self.ts.add(s),
            RttMethod::Handshake => self.handshake = Some(s),
        }
        // (the handshake fed the estimator when it completed)
        if method != RttMethod::Handshake {
            self.est.sample(rtt);
        }
        if let Some((b, first)) = bins {
            b.rtt(first, ts, s);
        }
        self.samples.push(RttSample { ts, rtt, dir, method });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_matches_exact_statistics() {
        let xs = [0.010, 0.012, 0.011, 0.250, 0.013, 0.0105, 0.0115];
        let mut s = RttSummary::default();
        for &x in &xs {
            s.add(x);
        }
        let mut v = xs.to_vec();
        v.sort_by(|a, b| a.partial_cmp(b).unwrap());
        let med = v[v.len() / 2];
        assert!(
            (s.median().unwrap() - med).abs() / med < 0.011,
            "{:?} vs {med}",
            s.median()
        );
        let mean = xs.iter().sum::<f64>() / xs.len() as f64;
        assert!((s.mean().unwrap() - mean).abs() < 1e-12);
        assert_eq!(s.min(), Some(0.010));
        assert_eq!(s.max(), Some(0.250));
        let var = xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / xs.len() as f64;
        assert!((s.std().unwrap() - var.sqrt()).abs() < 1e-9);
        assert_eq!(RttSummary::default().median(), None);
    }

    #[test]
    fn histogram_bins_agree_with_the_logarithm() {
        // 200,000 values spread log-uniformly over 1 µs .. 1000 s (a fixed LCG, no rand crate)
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut off_by_one = 0;
        for _ in 0..200_000 {
            state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
            let u = (state >> 11) as f64 / (1u64 << 53) as f64;
            let s = 1e-6 * 1e9f64.powf(u);
            let exact = (s / HIST_MIN_S).ln() / HIST_RATIO_LN;
            let got = hist_bin(s);
            if got != exact as usize {
                // only a hair from a bin edge
                assert!((exact - exact.round()).abs() < 1e-4, "{s}: bin {got}, ln gives {exact}");
                off_by_one += 1;
            }
        }
        assert!(off_by_one < 20, "{off_by_one} values in a neighbouring bin");
        assert_eq!((hist_bin(0.0), hist_bin(1e-6), hist_bin(f64::NAN)), (0, 0, 0));
        assert_eq!(hist_bin(1.02e-6 * 1.000_001), 1);
        assert_eq!(hist_bin(1.02e-6 * 0.999_999), 0);
    }

    #[test]
    fn estimator_follows_rfc6298() {
        let mut e = RttEstimator::default();
        e.sample(100);
        assert_eq!((e.srtt, e.rttvar, e.rto()), (Some(100), 50, Some(300)));
        e.sample(200);
        // rttvar = 3/4*50 + 1/4*|100-200| = 62 (integer), srtt = 7/8*100 + 1/8*200 = 112
        assert_eq!((e.srtt, e.rttvar), (Some(112), 62));
        assert_eq!(e.min, Some(100));
    }
}
