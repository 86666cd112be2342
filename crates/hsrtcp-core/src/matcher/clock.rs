//! Clock alignment between the client and the server capture (ruling A9, analyzers.md §3.6).
//!
//! Every packet seen in both captures gives a *raw* one-way delay: the receiver's capture time
//! minus the sender's, each on its own clock. With `t_server = t_client + θ(t)`:
//!
//! - downlink (server → client): `d = t_cli_rx − t_srv_tx = D − θ`
//! - uplink (client → server):   `u = t_srv_rx − t_cli_tx = U + θ`
//!
//! where `D, U ≥ 0` are the true one-way delays. Queueing only ever adds delay, so the
//! informative points are the *lower envelope* of each direction. We fit a line under each
//! cloud (Moon, Skelly and Towsley's linear program: the line below every point that
//! minimises the summed distance; its optimum lies on an edge of the lower convex hull) and
//! take, assuming equal minimum delays both ways,
//!
//! `θ(t) = (L_u(t) − L_d(t)) / 2`, drift `= (slope_u − slope_d) / 2`.
//!
//! Causality gives a hard bound that needs no symmetry assumption: `D ≥ 0` and `U ≥ 0` put
//! θ in `[−L_d, L_u]`, so the estimate is at most `(L_u + L_d)/2` — half the smallest
//! round trip — away from the truth. That half-width is reported as the uncertainty.
//!
//! Samples are reduced to the minimum per 100 ms of server time and direction, so memory
//! grows with capture duration (36 k points per hour), not with packets. The percentile
//! variant of A9 (10th percentile) is biased by queueing on a loaded path; the minimum is not.

use rustc_hash::FxHashMap;

use crate::wire::Nanos;

const BIN: Nanos = 100_000_000;

/// One fitted clock relation.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ClockFit {
    /// θ at `t_ref` in seconds: server clock − client clock.
    pub offset_s: f64,
    /// dθ/dt (dimensionless; × 1e6 for ppm).
    pub drift: f64,
    /// Reference time (server clock, ns) of `offset_s`.
    pub t_ref: Nanos,
    /// Half-width of the causality bound at `t_ref` (seconds).
    pub uncertainty_s: f64,
    /// Samples (100-ms minima) used per direction: [down, up].
    pub samples: [usize; 2],
}

impl ClockFit {
    /// The identity (no samples): θ = 0, uncertainty unknown.
    pub fn none() -> Self {
        ClockFit { offset_s: 0.0, drift: 0.0, t_ref: 0, uncertainty_s: f64::NAN, samples: [0, 0] }
    }

    pub fn known(&self) -> bool {
        self.samples[0] > 0 && self.samples[1] > 0
    }

    /// θ(t) in nanoseconds at server time `t`.
    pub fn offset_at(&self, t: Nanos) -> Nanos {
        let dt = (t - self.t_ref) as f64 * 1e-9;
        ((self.offset_s + self.drift * dt) * 1e9).round() as Nanos
    }

    /// A client-clock time on the server clock.
    pub fn to_server(&self, t_client: Nanos) -> Nanos {
        // θ changes by ppm: evaluating it at the client time is off by θ·drift, far below 1 ns.
        t_client + self.offset_at(t_client)
    }

    /// A server-clock time on the client clock.
    pub fn to_client(&self, t_server: Nanos) -> Nanos {
        t_server - self.offset_at(t_server)
    }
}

/// Collects raw one-way delays and fits the clock relation.
#[derive(Clone, Debug, Default)]
pub struct ClockEstimator {
    /// [down, up]: 100-ms bin → (server time, raw delay) of the bin's minimum.
    bins: [FxHashMap<i64, (Nanos, Nanos)>; 2],
    /// [down, up]: the bin of the latest sample and its minimum so far, not yet in `bins`
    /// (samples come nearly in time order, so most need no hashing; the matcher adds one
    /// per packet seen in both captures).
    open: [Option<(i64, (Nanos, Nanos))>; 2],
}

/// `e` after a later minimum candidate `c` of the same bin: the first smallest delay stays.
fn keep_min(e: &mut (Nanos, Nanos), c: (Nanos, Nanos)) {
    if c.1 < e.1 {
        *e = c;
    }
}

impl ClockEstimator {
    /// A server→client packet sent at `t_srv_tx`, seen at the client at `t_cli_rx`.
    pub fn add_down(&mut self, t_srv_tx: Nanos, t_cli_rx: Nanos) {
        self.add(0, t_srv_tx, t_cli_rx - t_srv_tx);
    }

    /// A client→server packet sent at `t_cli_tx`, seen at the server at `t_srv_rx`.
    pub fn add_up(&mut self, t_cli_tx: Nanos, t_srv_rx: Nanos) {
        self.add(1, t_srv_rx, t_srv_rx - t_cli_tx);
    }

    fn add(&mut self, d: usize, x: Nanos, y: Nanos) {
        let bin = x.div_euclid(BIN);
        match &mut self.open[d] {
            Some((b, e)) if *b == bin => keep_min(e, (x, y)),
            slot => {
                if let Some((b, e)) = slot.replace((bin, (x, y))) {
                    keep_min(self.bins[d].entry(b).or_insert(e), e);
                }
            }
        }
    }

    /// Each bin's minimum of direction `d`, the open bin's included.
    fn minima(&self, d: usize) -> Vec<(Nanos, Nanos)> {
        let open = self.open[d];
        let open_bin = open.map(|o| o.0);
        let mut v: Vec<(Nanos, Nanos)> =
            self.bins[d].iter().filter(|(k, _)| Some(**k) != open_bin).map(|(_, e)| *e).collect();
        if let Some((b, c)) = open {
            let mut e = self.bins[d].get(&b).copied().unwrap_or(c);
            keep_min(&mut e, c);
            v.push(e);
        }
        v
    }

    pub fn fit(&self) -> ClockFit {
        let pts: Vec<Vec<(f64, f64)>> = (0..2)
            .map(|d| {
                let mut v = self.minima(d);
                v.sort_unstable();
                v.into_iter().map(|(x, y)| (x as f64 * 1e-9, y as f64 * 1e-9)).collect()
            })
            .collect();
        let samples = [pts[0].len(), pts[1].len()];
        if samples[0] == 0 || samples[1] == 0 {
            return ClockFit { samples, ..ClockFit::none() };
        }
        // Common reference: the middle of the observed span (keeps intercepts well scaled).
        let lo = pts[0][0].0.min(pts[1][0].0);
        let hi = pts[0].last().unwrap().0.max(pts[1].last().unwrap().0);
        let t_ref = (lo + hi) / 2.0;
        let (ad, bd) = lower_envelope(&pts[0], t_ref);
        let (au, bu) = lower_envelope(&pts[1], t_ref);
        ClockFit {
            offset_s: (au - ad) / 2.0,
            drift: (bu - bd) / 2.0,
            t_ref: (t_ref * 1e9).round() as Nanos,
            uncertainty_s: ((au + ad) / 2.0).max(0.0),
            samples,
        }
    }
}

/// The line `a + b·(t − t_ref)` below all points minimising the summed vertical distance
/// (the optimum is an edge of the lower convex hull, or the lowest point with slope 0 when
/// there is only one point or the span is too short to see a slope).
pub fn lower_envelope(pts: &[(f64, f64)], t_ref: f64) -> (f64, f64) {
    let n = pts.len() as f64;
    let lowest = pts.iter().map(|p| p.1).fold(f64::INFINITY, f64::min);
    let span = pts.last().map(|p| p.0).unwrap_or(0.0) - pts.first().map(|p| p.0).unwrap_or(0.0);
    if pts.len() < 5 || span < 2.0 {
        // Under 2 s even 100 ppm of drift moves the clock by < 0.2 ms, less than the slope's
        // own noise from so few 100-ms minima: fit the offset only.
        return (lowest, 0.0);
    }
    // Andrew's monotone chain, lower hull (points sorted by x).
    let mut hull: Vec<(f64, f64)> = Vec::new();
    for &p in pts {
        while hull.len() >= 2 {
            let (a, b) = (hull[hull.len() - 2], hull[hull.len() - 1]);
            let cross = (b.0 - a.0) * (p.1 - a.1) - (b.1 - a.1) * (p.0 - a.0);
            if cross <= 0.0 {
                hull.pop();
            } else {
                break;
            }
        }
        hull.push(p);
    }
    let sx: f64 = pts.iter().map(|p| p.0 - t_ref).sum();
    // Objective Σ (y_i − a − b·x_i) = Σy − n·a − b·Σx: maximise n·a + b·Σx over hull edges.
    let mut best = (lowest, 0.0);
    let mut best_val = n * lowest;
    for w in hull.windows(2) {
        let (p, q) = (w[0], w[1]);
        if q.0 - p.0 <= 0.0 {
            continue;
        }
        let b = (q.1 - p.1) / (q.0 - p.0);
        let a = p.1 + b * (t_ref - p.0);
        let val = n * a + b * sx;
        if val > best_val {
            best_val = val;
            best = (a, b);
        }
    }
    best
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The open bin changes nothing: each bin's minimum (the first of equal ones) as a plain
    /// map of every sample gives it, with samples out of order, revisiting bins, and ties.
    #[test]
    fn open_bin_keeps_the_minima_of_a_plain_map() {
        let mut est = ClockEstimator::default();
        let mut model: [FxHashMap<i64, (Nanos, Nanos)>; 2] = Default::default();
        let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
        let mut t: Nanos = 0;
        for i in 0..50_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += (x % 3_000_000) as Nanos;
            // now and then a sample from up to a second back (another bin, revisited)
            let at = if x % 17 == 0 { t - (x % 1_000_000_000) as Nanos } else { t };
            let y = (x >> 20) as Nanos % 5_000 * 1_000; // coarse: many ties
            let d = i % 2;
            if d == 0 { est.add_down(at, at + y) } else { est.add_up(at - y, at) }
            let e = model[d].entry(at.div_euclid(BIN)).or_insert((at, y));
            if y < e.1 {
                *e = (at, y);
            }
            if i % 9_999 == 0 || i == 49_999 {
                for d in 0..2 {
                    let mut got = est.minima(d);
                    let mut want: Vec<_> = model[d].values().copied().collect();
                    got.sort_unstable();
                    want.sort_unstable();
                    assert_eq!(got, want, "direction {d} after {i} samples");
                }
            }
        }
    }

    #[test]
    fn offset_and_drift_from_noisy_delays() {
        // θ(t) = 0.25 s + 20 ppm·t, one-way delays 10 ms + queueing up to 40 ms.
        let mut est = ClockEstimator::default();
        let theta = |t: f64| 0.25 + 20e-6 * t;
        let mut rng = 12345u64;
        let mut rnd = || {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng % 1000) as f64 / 1000.0
        };
        for i in 0..6000 {
            let t = 1000.0 + i as f64 * 0.05; // 300 s
            let dq = if i % 7 == 0 { 0.0 } else { 0.04 * rnd() };
            let uq = if i % 11 == 0 { 0.0 } else { 0.04 * rnd() };
            let srv_tx = t;
            let cli_rx = srv_tx + 0.010 + dq - theta(srv_tx);
            est.add_down((srv_tx * 1e9) as Nanos, (cli_rx * 1e9) as Nanos);
            let srv_rx = t + 0.01;
            let cli_tx = srv_rx - 0.010 - uq - theta(srv_rx);
            est.add_up((cli_tx * 1e9) as Nanos, (srv_rx * 1e9) as Nanos);
        }
        let f = est.fit();
        let tr = f.t_ref as f64 * 1e-9;
        assert!((f.offset_s - theta(tr)).abs() < 1e-4, "{f:?} vs {}", theta(tr));
        assert!((f.drift * 1e6 - 20.0).abs() < 2.0, "{f:?}");
        assert!((f.uncertainty_s - 0.010).abs() < 1e-3, "{f:?}");
    }
}
