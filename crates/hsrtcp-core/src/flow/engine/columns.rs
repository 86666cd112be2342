//! The engine's columns of `flows` (docs/formats/flows.md), one group per concern: each
//! group declares its columns and writes them side by side, so a column is named once in
//! a declaration and once in the writer next to it (a name written but not declared panics
//! in the table builder; the unit test below writes every group). Unless said otherwise a
//! column describes the data direction (flows.data_dir).

use super::kinds::DataVantage;
use super::rtt::RttBook;
use super::retrans::{Counts, Stream};
use super::Engine;
use crate::flow::connection::ConnBase;
use crate::flow::event::Dir;
use crate::table::{col, ColType, ColumnDef, Row};
use ColType::{Bool, Str, F64, U64};

const fn c(name: &'static str, ty: ColType, doc: &'static str) -> ColumnDef {
    col(name, ty, doc)
}

/// What every group reads: the data direction's stream and counters, and the vantage.
pub(super) struct View<'a> {
    pub e: &'a Engine,
    pub c: &'a ConnBase,
    pub d: Dir,
    pub st: &'a Stream,
    pub k: &'a Counts,
    pub book: &'a RttBook,
    pub vs: DataVantage,
    pub sender: bool,
    pub known: bool,
    pub mss: i64,
}

impl View<'_> {
    fn only(ok: bool, v: u64) -> Option<u64> {
        ok.then_some(v)
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// One concern's columns and its writer.
pub(super) struct Group {
    pub columns: &'static [ColumnDef],
    pub write: fn(&View, &mut Row<'_>),
}

/// The groups in the table's column order.
pub(super) const GROUPS: &[Group] = &[
    Group { columns: VANTAGE, write: vantage },
    Group { columns: RTT, write: rtt },
    Group { columns: RETRANS, write: retrans },
    Group { columns: TIMEOUTS, write: timeouts },
    Group { columns: SPURIOUS, write: spurious },
    Group { columns: ACKS, write: acks },
    Group { columns: WINDOWS, write: windows },
    Group { columns: VOLUME, write: volume },
    Group { columns: LIFECYCLE, write: lifecycle },
];

const fn count() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < GROUPS.len() {
        n += GROUPS[i].columns.len();
        i += 1;
    }
    n
}

const N: usize = count();

const fn flatten() -> [ColumnDef; N] {
    let mut out = [GROUPS[0].columns[0]; N];
    let (mut i, mut k) = (0, 0);
    while i < GROUPS.len() {
        let mut j = 0;
        while j < GROUPS[i].columns.len() {
            out[k] = GROUPS[i].columns[j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// Every engine column of `flows`, the groups' declarations end to end.
pub const FLOW_COLUMNS: &[ColumnDef] = &flatten();

const VANTAGE: &[ColumnDef] = &[
    c("capture_near", Str, "host the capture sits next to: client or server (given by the caller or inferred)"),
    c("capture_near_source", Str, "how capture_near was decided: given, handshake (SYN/SYN-ACK/ACK gaps differ 4x), timestamps (TSval echo delays differ 2x), loss_pattern (first repeat = sender, first hole fill = receiver); null = unknown"),
    c("data_vantage", Str, "capture point relative to the data direction: sender or receiver; null = unknown (vantage-dependent columns are then null)"),
];

fn vantage(v: &View, row: &mut Row<'_>) {
    let near = v.e.near.map(|n| if n == Dir::C2S { "client" } else { "server" });
    row.str("capture_near", near)
        .str("capture_near_source", v.e.near_source)
        .str("data_vantage", v.vs.as_str());
}

const RTT: &[ColumnDef] = &[
    c("rtt_count", U64, "RTT samples behind rtt_min..rtt_std: ACK matching (Karn, M7) at the sender, TSval echo at the receiver"),
    c("rtt_min", F64, "smallest RTT sample, s"),
    c("rtt_mean", F64, "mean RTT, s (M7; model input RTT, models.md §3.5)"),
    c("rtt_median", F64, "median RTT, s (log-histogram, within 1 %)"),
    c("rtt_max", F64, "largest RTT sample, s"),
    c("rtt_std", F64, "standard deviation of the RTT samples, s"),
    c("rtt_ack_samples", U64, "RTT samples from data→ACK matching with Karn's rule (sender vantage only)"),
    c("rtt_ts_samples", U64, "RTT samples from the TSval→TSecr echo of the capture side"),
    c("rtt_ts_mean", F64, "mean of the TSval-echo RTT samples, s"),
    c("rtt_handshake", F64, "RTT of the handshake at the capture point (client: SYN→SYN-ACK; server: SYN-ACK→ACK), s"),
];

fn rtt(v: &View, row: &mut Row<'_>) {
    let book = v.book;
    // the primary samples: ACK matching at the sender, TSval echo elsewhere
    let prim = if v.sender { &book.ack } else { &book.ts };
    row.u64("rtt_count", v.known.then_some(prim.count))
        .f64("rtt_min", prim.min())
        .f64("rtt_mean", prim.mean())
        .f64("rtt_median", prim.median())
        .f64("rtt_max", prim.max())
        .f64("rtt_std", prim.std())
        .u64("rtt_ack_samples", View::only(v.sender, book.ack.count))
        .u64("rtt_ts_samples", View::only(v.known, book.ts.count))
        .f64("rtt_ts_mean", book.ts.mean())
        .f64("rtt_handshake", book.handshake);
}

const RETRANS: &[ColumnDef] = &[
    c("data_segments", U64, "data segments of the data direction seen (retransmissions included)"),
    c("retransmissions", U64, "retransmitted data segments: at the sender every re-sent segment; at the receiver the repeats and late hole fills that arrived (zero-window probes, reordering and network duplicates excluded)"),
    c("retransmitted_bytes", U64, "payload bytes of those retransmissions"),
    c("retrans_fast", U64, "retransmissions of class fast (fast retransmit after DupACKs/SACK)"),
    c("retrans_sack_refill", U64, "retransmissions of class sack_refill (later SACK holes in one recovery)"),
    c("retrans_rto", U64, "retransmissions of class rto (timeout and the timeout recovery after it)"),
    c("retrans_tlp", U64, "retransmissions of class tlp (tail-loss probe: a copy of the newest data without loss signals)"),
    c("retransmissions_undecided", U64, "receiver only: in-sequence data segments that may be re-sends or new data, undecidable at the receiver (docs/engine.md); the re-sends that arrived lie in [retransmissions, retransmissions + retransmissions_undecided]"),
    c("retrans_unclassified", U64, "retransmissions not classified because the vantage is unknown"),
    c("reordering_segments", U64, "hole fills that were sent before the data that overtook them, and (receiver) originals arriving after their own re-send (not retransmissions)"),
    c("network_duplicates", U64, "repeated copies with the same IP ID and TSval as the earlier copy (network or capture duplicates)"),
    c("zero_window_probes", U64, "zero-window probes (events kind window_probe): segments of <= 1 byte sent against a zero window, and segments without payload one byte below the cumulative ACK (Linux) while the window is zero or has not been used since it reopened"),
    c("unnecessary_retransmissions", U64, "retransmissions shown unnecessary: repeats at the receiver, D-SACKed at the sender"),
    c("dsack_blocks", U64, "ACKs carrying a D-SACK block (RFC 2883) for the data direction"),
];

fn retrans(v: &View, row: &mut Row<'_>) {
    let (k, known) = (v.k, v.known);
    row.u64("data_segments", k.data_segments)
        .u64("retransmissions", k.retransmissions)
        .u64("retransmitted_bytes", k.retransmitted_bytes)
        .u64("retrans_fast", View::only(known, k.fast))
        .u64("retrans_sack_refill", View::only(known, k.sack_refill))
        .u64("retrans_rto", View::only(known, k.rto))
        .u64("retrans_tlp", View::only(known, k.tlp))
        .u64("retransmissions_undecided", View::only(known && !v.sender, k.undecided))
        .u64("retrans_unclassified", k.unclassified)
        .u64("reordering_segments", k.reordering)
        .u64("network_duplicates", k.network_duplicates)
        .u64("zero_window_probes", k.zero_window_probes)
        .u64("unnecessary_retransmissions", View::only(known, k.unnecessary))
        .u64("dsack_blocks", k.dsack_blocks);
}

const TIMEOUTS: &[ColumnDef] = &[
    c("timeout_sequences", U64, "timeout sequences (M10), sender vantage"),
    c("timeouts", U64, "RTO expirations in them (1 + back-offs each)"),
    c("timeout_retransmissions", U64, "retransmissions sent during timeout sequences"),
    c("timeout_duration_mean", F64, "mean duration of finished timeout sequences, s (M10; S1: 0.65 s static, 5.05 s HSR)"),
    c("timeout_duration_max", F64, "longest finished timeout sequence, s"),
    c("rto_first_mean", F64, "T (A19): mean over timeout sequences of (first RTO retransmission - time the timer was armed), s"),
    c("q_estimate", F64, "single-capture estimate of q (M11): re-sent timed-out segments / retransmissions in timeout sequences (sender vantage; the two-capture q is in the matched flows)"),
];

fn timeouts(v: &View, row: &mut Row<'_>) {
    let (k, sender) = (v.k, v.sender);
    let at_sender = |x: Option<f64>| if sender { x } else { None };
    row.u64("timeout_sequences", View::only(sender, k.timeout_sequences))
        .u64("timeouts", View::only(sender, k.timeouts))
        .u64("timeout_retransmissions", View::only(sender, k.timeout_retransmissions))
        .f64("timeout_duration_mean", at_sender(ratio(k.timeout_duration_sum, k.timeout_finished as f64)))
        .f64("timeout_duration_max", (sender && k.timeout_finished > 0).then_some(k.timeout_duration_max))
        .f64("rto_first_mean", at_sender(ratio(k.rto_first_sum, k.timeout_sequences as f64)))
        .f64("q_estimate", at_sender(ratio(k.timeout_repeated as f64, k.timeout_retransmissions as f64)));
}

const SPURIOUS: &[ColumnDef] = &[
    c("spurious_timeouts", U64, "RTO episodes found spurious by any method the vantage allows (M12)"),
    c("spurious_timeouts_receiver", U64, "found at the receiver: the retransmitted bytes had all arrived (M12)"),
    c("spurious_timeouts_dsack", U64, "found at the sender by D-SACK (RFC 2883/3708)"),
    c("spurious_timeouts_eifel", U64, "found at the sender by the timestamp test (Eifel, RFC 3522)"),
    c("spurious_rto_rate", F64, "M13: retransmitted segments of spurious RTO episodes / all retransmissions"),
    c("spurious_timeout_share", F64, "A5 event-based variant: spurious RTO episodes / RTO episodes (S1's 49.24 %)"),
    c("rto_bias_mean", F64, "M16: mean (ACK of the original arrives - RTO retransmission) over Eifel-detected spurious RTOs, s"),
];

fn spurious(v: &View, row: &mut Row<'_>) {
    let (k, sender, known) = (v.k, v.sender, v.known);
    let eifel = sender && v.c.timestamps() == Some(true);
    let rate = ratio(k.spurious_rto_segments as f64, k.retransmissions as f64);
    let share = ratio(k.spurious_timeouts as f64, k.timeout_sequences as f64);
    row.u64("spurious_timeouts", View::only(known, k.spurious_timeouts))
        .u64("spurious_timeouts_receiver", View::only(v.vs == DataVantage::Receiver, k.spurious_receiver))
        .u64("spurious_timeouts_dsack", View::only(sender, k.spurious_dsack))
        .u64("spurious_timeouts_eifel", View::only(eifel, k.spurious_eifel))
        .f64("spurious_rto_rate", if known { rate } else { None })
        .f64("spurious_timeout_share", if sender { share } else { None })
        .f64("rto_bias_mean", ratio(k.rto_bias_sum, k.rto_bias_n as f64));
}

const ACKS: &[ColumnDef] = &[
    c("pure_acks", U64, "pure ACKs (no payload, SYN, FIN, RST) acknowledging the data direction"),
    c("dupacks", U64, "DupACKs: pure ACK, same ACK number and window as the previous ACK, data outstanding (M15, RFC 5681)"),
    c("dupacks_undecided", U64, "receiver only: pure ACKs answering a repeat, with nothing seen beyond their ACK number, that the receiver cannot tell to be DupACKs or not (docs/engine.md); the DupACKs sent lie in [dupacks, dupacks + dupacks_undecided]"),
    c("dupack_rate", F64, "M15: dupacks / pure_acks"),
    c("bif_max", U64, "largest bytes in flight sampled at ACK arrivals (M17, A13), sender vantage"),
    c("bif_mean", F64, "mean bytes in flight at ACK arrivals, sender vantage"),
];

fn acks(v: &View, row: &mut Row<'_>) {
    let (k, sender) = (v.k, v.sender);
    row.u64("pure_acks", k.pure_acks)
        .u64("dupacks", k.dupacks)
        .u64("dupacks_undecided", View::only(v.known && !sender, k.dupacks_undecided))
        .f64("dupack_rate", ratio(k.dupacks as f64, k.pure_acks as f64))
        .u64("bif_max", (sender && k.bif_n > 0).then_some(k.bif_max))
        .f64("bif_mean", if sender { ratio(k.bif_sum, k.bif_n as f64) } else { None });
}

const WINDOWS: &[ColumnDef] = &[
    c("awnd_min", U64, "smallest advertised window of the data receiver, bytes (scaled; null when the scale is unknown)"),
    c("awnd_max", U64, "largest advertised window, bytes"),
    c("awnd_mean", F64, "mean advertised window over the receiver's ACKs, bytes"),
    c("zero_window_segments", U64, "segments of the data receiver advertising a zero window"),
    c("zero_window_events", U64, "zero-window episodes (events kind zero_window)"),
    c("zero_window_duration", F64, "total time the window stayed at zero, s"),
    c("full_window_segments", U64, "new data segments reaching the right edge of the advertised window"),
    c("full_window_events", U64, "full-window episodes (events kind full_window)"),
    c("rwnd_limited_fraction", F64, "share of new data segments sent with bytes in flight within one MSS of the advertised window (sender vantage)"),
    c("limited_by", Str, "rwnd when rwnd_limited_fraction >= 0.5, else cwnd (congestion window or application; seed 000 §VI-B)"),
    c("mss_data", U64, "segment size used for packet counts: the receiver's MSS option, else the largest payload seen"),
    c("w_m_packets", U64, "W_m (A18): floor(max advertised window / mss_data)"),
    c("b_packets_per_ack", F64, "b (models.md §3.3): segments acknowledged / ACKs that advanced snd_una, outside recovery"),
];

fn windows(v: &View, row: &mut Row<'_>) {
    let (w, k, mss) = (&v.st.win, v.k, v.mss);
    let limited = ratio(w.rwnd_limited_sends as f64, w.new_data_sends as f64);
    let by = (v.sender && w.new_data_sends > 0)
        .then(|| if w.rwnd_limited_sends * 2 >= w.new_data_sends { "rwnd" } else { "cwnd" });
    row.u64("awnd_min", w.awnd_min())
        .u64("awnd_max", w.awnd_max())
        .f64("awnd_mean", w.awnd_mean())
        .u64("zero_window_segments", w.zero_segments)
        .u64("zero_window_events", w.zero_events)
        .f64("zero_window_duration", Some(w.zero_total as f64 * 1e-9))
        .u64("full_window_segments", w.full_segments)
        .u64("full_window_events", w.full_events)
        .f64("rwnd_limited_fraction", if v.sender { limited } else { None })
        .str("limited_by", by)
        .u64("mss_data", Some(mss as u64))
        .u64("w_m_packets", w.awnd_max().map(|x| x / mss.max(1) as u64))
        .f64("b_packets_per_ack", ratio(k.acked_bytes_ca as f64 / mss as f64, k.advancing_acks_ca as f64));
}

const VOLUME: &[ColumnDef] = &[
    c("throughput_pkts", F64, "M4: acknowledged bytes / mss_data / flow duration, packets/s"),
    c("goodput_bytes", U64, "bytes cumulatively acknowledged (advance of the ACK number)"),
];

fn volume(v: &View, row: &mut Row<'_>) {
    let dur = (v.c.last_ts - v.c.first_ts) as f64 * 1e-9;
    let acked = v.st.ack_seen;
    row.f64("throughput_pkts", if acked { ratio(v.k.acked_bytes as f64 / v.mss as f64, dur) } else { None })
        .u64("goodput_bytes", acked.then_some(v.k.acked_bytes));
}

const LIFECYCLE: &[ColumnDef] = &[
    c("establishment_s", F64, "M18 at this capture: first SYN -> ACK completing the handshake, s"),
    c("syn_retransmissions", U64, "SYNs after the first (client)"),
    c("synack_retransmissions", U64, "SYN-ACKs repeated with the same sequence number (server)"),
    c("handshake_refused", Bool, "a RST ended the handshake"),
    c("fin_retransmissions_client", U64, "FINs the client repeated at the same sequence position"),
    c("fin_retransmissions_server", U64, "FINs the server repeated at the same sequence position"),
    c("closer", Str, "side whose FIN (or RST when no FIN) came first: client or server"),
    c("closure_s", F64, "M19/A10: first FIN sent by the server -> last packet of the connection (either direction), s; null when the server sent no FIN"),
    c("acked_bytes", U64, "highest byte of the data direction acknowledged by the receiver: bytes from the first data byte (ISN + 1 when the SYN was captured) to the cumulative ACK, FIN excluded (compare with the object size for M20)"),
    c("interrupted", Bool, "M20/A11: ended by rst or fin before all data sent was acknowledged, or no byte delivered for 60 s while data was outstanding (application give-up); null while open with data unacknowledged at the capture end"),
    c("interruption_reason", Str, "rst, fin or no_delivery when interrupted"),
    c("suspensions", U64, "silences in both directions longer than max(200 ms, 2 SRTT) (events kind suspension)"),
    c("suspensions_stalled", U64, "of those, silences with data outstanding"),
    c("suspension_total", F64, "summed suspension time, s"),
    c("suspension_max", F64, "longest suspension, s"),
    c("segment_store_overflow", U64, "segment records dropped by the per-direction bound (one-sided captures); nonzero means retransmission tests were partly blind"),
];

fn lifecycle(v: &View, row: &mut Row<'_>) {
    let (e, c, st, d) = (v.e, v.c, v.st, v.d);
    let life = &e.life;
    let s = |n: i64| n as f64 * 1e-9;
    let closer = life.first_fin.or(life.first_rst).map(|(_, w)| if w == Dir::C2S { "client" } else { "server" });
    let acked = st.ack_seen.then(|| {
        // the FIN's sequence number is no byte of the object
        let start = (c.half[d.idx()].syn_count > 0) as i64;
        let end = life.fin_rel[d.idx()].unwrap_or(i64::MAX);
        (st.una.min(end) - start).max(0) as u64
    });
    row.f64("establishment_s", life.establishment().map(s))
        .u64("syn_retransmissions", (c.half[0].syn_count > 0).then(|| c.half[0].syn_count as u64 - 1))
        .u64("synack_retransmissions", life.first_synack.map(|_| life.synacks_same_seq as u64))
        .bool("handshake_refused", life.first_syn.map(|_| life.refused))
        .u64("fin_retransmissions_client", life.fin_retx[0] as u64)
        .u64("fin_retransmissions_server", life.fin_retx[1] as u64)
        .str("closer", closer)
        .f64("closure_s", life.closure(c.last_ts).map(s))
        .u64("acked_bytes", acked)
        .bool("interrupted", e.interrupted(c))
        .str("interruption_reason", e.interruption_reason(c))
        .u64("suspensions", life.suspensions)
        .u64("suspensions_stalled", life.suspensions_stalled)
        .f64("suspension_total", Some(s(life.suspension_total)))
        .f64("suspension_max", (life.suspensions > 0).then_some(s(life.suspension_max)))
        .u64("segment_store_overflow", e.streams.iter().map(|x| x.store.overflowed).sum::<u64>());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_declare_every_column_once_in_order() {
        let names: Vec<&str> = FLOW_COLUMNS.iter().map(|c| c.name).collect();
        let by_group: Vec<&str> = GROUPS.iter().flat_map(|g| g.columns.iter().map(|c| c.name)).collect();
        assert_eq!(names, by_group);
        let mut seen = std::collections::HashSet::new();
        assert!(names.iter().all(|n| seen.insert(*n)), "a column declared twice");
        assert_eq!(names.first(), Some(&"capture_near"));
        assert_eq!(names.last(), Some(&"segment_store_overflow"));
    }
}
