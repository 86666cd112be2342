//! Connection life cycle from one capture: establishment (M18, analyzers.md §3.11), SYN /
//! SYN-ACK / FIN retransmissions, closure (M19, A10), transmission interruption (M20, A11),
//! suspensions (M24 without the handoff association, which needs the radio log), and which
//! host the capture sits next to.

use crate::flow::event::{Dir, Event, EventKind};
use crate::flow::seq::seq_diff;
use crate::wire::{Nanos, Segment};

/// M24/A12: a silence of at least this long in both directions is a `gap` event (the
/// study layer's suspension per handoff) ...
pub const GAP_MIN: Nanos = 200_000_000;
/// Suspension threshold floor (docs/metrics.md A12: 200 ms) ...
pub const SUSPENSION_MIN: Nanos = 200_000_000;
/// ... raised to this many smoothed RTTs on long-RTT paths, where a silence of one RTT is
/// normal ACK clocking, not a suspension.
pub const SUSPENSION_RTTS: i64 = 2;
/// A11: an application gives up when no byte is delivered for 60 s: data outstanding and the
/// receiver's cumulative ACK not advancing for this long, while the connection lives (up to
/// its last packet, or up to the capture end when it was not closed), is an interruption.
pub const GIVE_UP: Nanos = 60_000_000_000;

#[derive(Default)]
pub struct Lifecycle {
    pub first_syn: Option<Nanos>,
    /// Latest SYN before the first SYN-ACK (the one the SYN-ACK answers).
    pub last_syn: Option<Nanos>,
    pub first_synack: Option<Nanos>,
    synack_seq: Option<u32>,
    pub synacks_same_seq: u32,
    pub handshake_ack: Option<Nanos>,
    pub refused: bool,
    fin_seq: [Option<u32>; 2],
    pub fin_retx: [u32; 2],
    pub first_fin: Option<(Nanos, Dir)>,
    /// Relative sequence position of each direction's first FIN (bytes below it are data).
    pub fin_rel: [Option<i64>; 2],
    /// First FIN sent by the server (M19 starts there, A10).
    pub first_fin_server: Option<Nanos>,
    pub first_rst: Option<(Nanos, Dir)>,
    pub last_pkt: Option<Nanos>,
    pub suspensions: u64,
    pub suspensions_stalled: u64,
    pub suspension_total: Nanos,
    pub suspension_max: Nanos,
    /// Delivery stall (A11): the data direction's cumulative ACK when last looked at, since
    /// when data has been outstanding without it advancing, and the longest such stall.
    una_seen: i64,
    stall_since: Option<Nanos>,
    pub stall_max: Nanos,
    pub stall_max_start: Option<Nanos>,
}

/// What the handshake told, when it completed at this segment.
pub struct HandshakeDone {
    /// SYN → SYN-ACK and SYN-ACK → ACK at the capture point.
    pub syn_to_synack: Nanos,
    pub synack_to_ack: Nanos,
}

impl Lifecycle {
    #[inline]
    pub fn on_segment(&mut self, seg: &Segment, dir: Dir) -> Option<HandshakeDone> {
        let f = seg.flags;
        let ts = seg.ts;
        if f.rst() && self.first_rst.is_none() {
            self.first_rst = Some((ts, dir));
            if self.handshake_ack.is_none() && self.first_syn.is_some() {
                self.refused = true;
            }
        }
        if f.syn() && !f.ack() && dir == Dir::C2S {
            self.first_syn.get_or_insert(ts);
            if self.first_synack.is_none() {
                self.last_syn = Some(ts);
            }
        } else if f.syn() && f.ack() && dir == Dir::S2C {
            match self.synack_seq {
                None => {
                    self.synack_seq = Some(seg.seq);
                    self.first_synack = Some(ts);
                }
                Some(s) if s == seg.seq => self.synacks_same_seq += 1,
                _ => {}
            }
        } else if dir == Dir::C2S && f.ack() && !f.syn() && self.handshake_ack.is_none() {
            if let (Some(s), Some(t_sa)) = (self.synack_seq, self.first_synack) {
                if seq_diff(seg.ack, s) >= 1 {
                    self.handshake_ack = Some(ts);
                    // Karn's rule: after a repeated SYN-ACK nobody knows which one the ACK
                    // answers (from the first, the gap holds the SYN-ACK timer's second).
                    if self.synacks_same_seq > 0 {
                        return None;
                    }
                    if let Some(t_syn) = self.last_syn {
                        return Some(HandshakeDone {
                            syn_to_synack: t_sa - t_syn,
                            synack_to_ack: ts - t_sa,
                        });
                    }
                }
            }
        }
        if f.fin() {
            let i = dir.idx();
            match self.fin_seq[i] {
                None => {
                    self.fin_seq[i] = Some(seg.seq.wrapping_add(seg.payload_len));
                    if self.first_fin.is_none() {
                        self.first_fin = Some((ts, dir));
                    }
                    if dir == Dir::S2C {
                        self.first_fin_server = Some(ts);
                    }
                }
                // same FIN position again: a FIN retransmission (one carrying data is counted
                // with the data retransmissions)
                Some(s) if s == seg.seq.wrapping_add(seg.payload_len) && seg.payload_len == 0 => {
                    self.fin_retx[i] += 1
                }
                _ => {}
            }
        }
        None
    }

    /// Called before a segment is processed. Every silence of at least [`GAP_MIN`] between
    /// two consecutive packets (either direction) is a `gap` event (M24, A12: the study layer
    /// associates gaps with handoffs); a silence longer than max(200 ms, 2 SRTT) is also a
    /// suspension. `stalled` = data was outstanding at the silence's start; `srtt` is asked
    /// only after a silence. Returns whether the segment ends a suspension.
    #[inline]
    pub fn gap(
        &mut self,
        ts: Nanos,
        srtt: impl FnOnce() -> Option<Nanos>,
        stalled: bool,
        ev: &mut Vec<Event>,
    ) -> bool {
        let mut ended = false;
        if let Some(prev) = self.last_pkt {
            let d = ts - prev;
            // the one comparison every packet pays; the suspension threshold is never below it
            if d >= GAP_MIN {
                let class = Some(if stalled { "stalled" } else { "idle" });
                let mut g = Event::new(EventKind::Gap, prev);
                g.ts_end = Some(ts);
                g.class = class;
                g.value = Some(GAP_MIN as f64 * 1e-9);
                ev.push(g);
                let thr = SUSPENSION_MIN.max(srtt().unwrap_or(0) * SUSPENSION_RTTS);
                if d > thr {
                    self.suspensions += 1;
                    if stalled {
                        self.suspensions_stalled += 1;
                    }
                    self.suspension_total += d;
                    self.suspension_max = self.suspension_max.max(d);
                    let mut e = Event::new(EventKind::Suspension, prev);
                    e.ts_end = Some(ts);
                    e.class = class;
                    e.value = Some(thr as f64 * 1e-9);
                    ev.push(e);
                    ended = true;
                }
            }
        }
        if self.last_pkt.is_none_or(|p| ts > p) {
            self.last_pkt = Some(ts);
        }
        ended
    }

    /// Called before a segment is processed (and before [`Lifecycle::gap`]), with the data
    /// direction's cumulative ACK and whether data was outstanding after the previous packet:
    /// tracks the longest time data stayed outstanding without the ACK advancing (A11). The
    /// stall starts at the previous packet (the one that made data outstanding or advanced
    /// the ACK), so it is measured at packet granularity.
    #[inline]
    pub fn delivery(&mut self, ts: Nanos, una: i64, outstanding: bool) {
        if !outstanding || una != self.una_seen {
            self.una_seen = una;
            self.stall_since = None;
            if !outstanding {
                return;
            }
        }
        let since = *self.stall_since.get_or_insert(self.last_pkt.unwrap_or(ts));
        self.note_stall(since, ts);
    }

    fn note_stall(&mut self, since: Nanos, until: Nanos) {
        if until - since > self.stall_max {
            self.stall_max = until - since;
            self.stall_max_start = Some(since);
        }
    }

    /// At the end: a connection not closed by FIN or RST lives until the capture ends, so a
    /// stall still under way lasts until then.
    pub fn delivery_end(&mut self, capture_end: Nanos, outstanding: bool) {
        if outstanding && self.first_fin.is_none() && self.first_rst.is_none() {
            let since = self.stall_since.or(self.last_pkt);
            if let Some(since) = since {
                self.note_stall(since, capture_end);
            }
        }
    }

    /// M20 (A11): why the connection counts as interrupted, given whether the data direction
    /// ended with bytes unacknowledged: `rst` / `fin` = it ended so; `no_delivery` = no byte
    /// was delivered for [`GIVE_UP`] while data was outstanding (the application gives up).
    pub fn interruption(&self, unacked: bool) -> Option<&'static str> {
        if unacked && self.first_rst.is_some() {
            Some("rst")
        } else if unacked && self.first_fin.is_some() {
            Some("fin")
        } else if self.stall_max >= GIVE_UP {
            Some("no_delivery")
        } else {
            None
        }
    }

    /// M19 (A10) at this capture: first FIN sent by the server → `last_ts`, the last packet
    /// of the connection in either direction. Null when the server sent no FIN.
    pub fn closure(&self, last_ts: Nanos) -> Option<Nanos> {
        Some(last_ts - self.first_fin_server?)
    }

    /// M18 from this capture: first SYN → the ACK completing the handshake.
    pub fn establishment(&self) -> Option<Nanos> {
        Some(self.handshake_ack? - self.first_syn?)
    }
}
