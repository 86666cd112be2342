//! The two-vantage matcher on hand-built packet exchanges whose every time is known, so the
//! expected numbers follow from the definitions by arithmetic (docs/metrics.md M8, M9, M12, M14,
//! M16, M18, M36, A9):
//!
//! True timeline (seconds): one-way delay 10 ms both ways; the server capture runs on true
//! time, the client capture's clock is 0.5 s behind (θ = server − client = +0.5 s).
//! - 0.000 client SYN, 0.010 SYN-ACK, 0.020 handshake ACK (arrives 0.030: M18 = 0.030 s);
//! - round 1: segments 0–4 (1000 B) sent 0.030…0.034, each ACKed on arrival;
//! - round 2: segments 5–9 sent 0.051…0.055 (after the first ACK arrived at 0.050); their
//!   ACKs (sent 0.061…0.065) are lost (scenario A) or all lost but the last, which arrives at
//!   0.400 (scenario B);
//! - the RTO fires 300 ms after the last advancing ACK (ACK of segment 4 at 0.054): segment 5
//!   is retransmitted at 0.354, arrives 0.364, its duplicate ACK arrives 0.374.

use std::net::IpAddr;

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use hsrtcp_core::matcher::{match_segments, MatchOptions};
use hsrtcp_core::wire::{SackBlock, Segment, TcpFlags, TcpOptions};

const THETA: f64 = 0.5;
const OWD: f64 = 0.010;
const CISN: u32 = 1000;
const SISN: u32 = 5000;

struct Pkt {
    t: f64,
    from_client: bool,
    flags: u16,
    seq: u32,
    ack: u32,
    len: u32,
    /// Arrival delay; None = lost in the network.
    delay: Option<f64>,
}

fn seg(ts: f64, p: &Pkt, ipid: u16) -> Segment {
    let c: IpAddr = [10, 0, 1, 2].into();
    let s: IpAddr = [10, 0, 2, 2].into();
    let (src, dst, sport, dport) = if p.from_client { (c, s, 40000, 5201) } else { (s, c, 5201, 40000) };
    // TSval = sender's true time in ms (distinguishes a retransmission from its original)
    let options = TcpOptions { timestamp: Some(((p.t * 1000.0).round() as u32, 0)), ..TcpOptions::default() };
    Segment {
        ts: (1_700_000_000.0e9 + ts * 1e9).round() as i64,
        src,
        dst,
        sport,
        dport,
        seq: p.seq,
        ack: p.ack,
        flags: TcpFlags(p.flags),
        window: 500,
        payload_len: p.len,
        ip_id: Some(ipid),
        options,
        payload_truncated: false,
        outer: 0,
        frame: 0,
    }
}

/// Both captures of the exchange: (client capture, server capture), each in time order.
fn captures(pkts: &[Pkt]) -> (Vec<Segment>, Vec<Segment>) {
    let (mut cli, mut srv) = (Vec::new(), Vec::new());
    for (i, p) in pkts.iter().enumerate() {
        let id = i as u16;
        let (tx_cap, rx_cap) = if p.from_client { (&mut cli, &mut srv) } else { (&mut srv, &mut cli) };
        let shift = |t: f64, client_cap: bool| if client_cap { t - THETA } else { t };
        tx_cap.push(seg(shift(p.t, p.from_client), p, id));
        if let Some(d) = p.delay {
            rx_cap.push(seg(shift(p.t + d, !p.from_client), p, id));
        }
    }
    cli.sort_by_key(|s| s.ts);
    srv.sort_by_key(|s| s.ts);
    (cli, srv)
}

const A: u16 = TcpFlags::ACK;

fn exchange(late_last_ack: bool) -> Vec<Pkt> {
    let mut v = vec![
        Pkt { t: 0.000, from_client: true, flags: TcpFlags::SYN, seq: CISN, ack: 0, len: 0, delay: Some(OWD) },
        Pkt { t: 0.010, from_client: false, flags: TcpFlags::SYN | A, seq: SISN, ack: CISN + 1, len: 0, delay: Some(OWD) },
        Pkt { t: 0.020, from_client: true, flags: A, seq: CISN + 1, ack: SISN + 1, len: 0, delay: Some(OWD) },
    ];
    let data_seq = |k: u32| SISN + 1 + 1000 * k;
    for k in 0..10u32 {
        let t = if k < 5 { 0.030 + 0.001 * k as f64 } else { 0.051 + 0.001 * (k - 5) as f64 };
        v.push(Pkt { t, from_client: false, flags: A, seq: data_seq(k), ack: CISN + 1, len: 1000, delay: Some(OWD) });
        let ack_delay = match k {
            0..=4 => Some(OWD),
            9 if late_last_ack => Some(0.400 - (t + OWD)),
            _ => None,
        };
        v.push(Pkt { t: t + OWD, from_client: true, flags: A, seq: CISN + 1, ack: data_seq(k + 1), len: 0, delay: ack_delay });
    }
    v.push(Pkt { t: 0.354, from_client: false, flags: A, seq: data_seq(5), ack: CISN + 1, len: 1000, delay: Some(OWD) });
    v.push(Pkt { t: 0.364, from_client: true, flags: A, seq: CISN + 1, ack: data_seq(10), len: 0, delay: Some(OWD) });
    v.sort_by(|a, b| a.t.total_cmp(&b.t));
    v
}

fn run(late_last_ack: bool) -> (RecordBatch, RecordBatch) {
    let (cli, srv) = captures(&exchange(late_last_ack));
    let r = match_segments(cli, srv, MatchOptions::default());
    (r.matched.finish(), r.events.finish())
}

fn u(b: &RecordBatch, c: &str) -> Option<u64> {
    let a = b.column_by_name(c).unwrap().as_primitive::<UInt64Type>();
    a.is_valid(0).then(|| a.value(0))
}

fn f(b: &RecordBatch, c: &str) -> Option<f64> {
    let a = b.column_by_name(c).unwrap().as_primitive::<Float64Type>();
    a.is_valid(0).then(|| a.value(0))
}

fn s(b: &RecordBatch, c: &str, i: usize) -> Option<String> {
    let a = b.column_by_name(c).unwrap().as_string::<i32>();
    a.is_valid(i).then(|| a.value(i).to_string())
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 2e-6)
}

#[test]
fn ack_burst_loss_makes_an_ack_loss_spurious_timeout() {
    let (m, ev) = run(false);
    assert_eq!(m.num_rows(), 1);
    assert_eq!(s(&m, "pairing", 0).as_deref(), Some("isn"));
    // 11 data transmissions, none lost; 12 pure ACKs sent (handshake ACK, 10, 1 dup), 5 lost
    assert_eq!((u(&m, "data_packets_sent"), u(&m, "lost_data_packets")), (Some(11), Some(0)));
    assert_eq!((u(&m, "ack_packets_sent"), u(&m, "lost_ack_packets")), (Some(12), Some(5)));
    assert!(close(f(&m, "p_a"), 5.0 / 12.0));
    // clock: symmetric 10-ms delays give θ exactly, bound = half the round trip
    assert!(close(f(&m, "clock_offset_s"), THETA), "{:?}", f(&m, "clock_offset_s"));
    assert!(close(f(&m, "clock_offset_uncertainty_s"), OWD));
    assert!(close(f(&m, "establishment_time_s"), 0.030));
    assert!(close(f(&m, "owd_down_median_s"), OWD) && close(f(&m, "owd_up_max_s"), OWD));
    // one timeout sequence, its retransmission delivered: q = 0/1
    assert_eq!((u(&m, "rto_sequences"), u(&m, "rto_retransmissions")), (Some(1), Some(1)));
    assert_eq!(f(&m, "q"), Some(0.0));
    // rounds 1 and 2 count; round 2 ended in the RTO with all its ACKs lost
    assert_eq!((u(&m, "rounds"), u(&m, "ack_burst_loss_rounds")), (Some(2), Some(1)));
    assert_eq!(f(&m, "ack_burst_loss"), Some(0.5));
    assert_eq!(u(&m, "spurious_timeouts_ack_loss"), Some(1));
    assert_eq!(u(&m, "spurious_timeouts_rto_estimation"), Some(0));
    assert_eq!(ev.num_rows(), 1);
    assert_eq!(s(&ev, "cause", 0).as_deref(), Some("ack_loss"));
    assert!(f(&ev, "value").is_none(), "no bias without an arriving ACK (A8)");
    assert!(close(f(&ev, "ts").map(|t| t - 1_700_000_000.0), 0.354));
}

#[test]
fn late_ack_makes_an_rto_estimation_spurious_timeout_with_its_bias() {
    let (m, ev) = run(true);
    assert_eq!((u(&m, "ack_packets_sent"), u(&m, "lost_ack_packets")), (Some(12), Some(4)));
    assert_eq!(u(&m, "spurious_timeouts_rto_estimation"), Some(1));
    assert_eq!(u(&m, "ack_burst_loss_rounds"), Some(0));
    assert_eq!(s(&ev, "cause", 0).as_deref(), Some("rto_estimation"));
    // M16: t6 (ACK of the original reaches the server, 0.400) - t4 (RTO retransmission, 0.354)
    assert!(close(f(&ev, "value"), 0.046), "{:?}", f(&ev, "value"));
    assert!(close(f(&m, "rto_bias_mean_s"), 0.046));
}

#[test]
fn a_lost_retransmission_counts_in_q_and_a_lost_original_is_not_spurious() {
    // Segment 5's original is lost too, and its first RTO retransmission as well; the
    // second (backed-off, 0.654) arrives. Every ACK of round 2 arrives.
    let mut v = exchange(false);
    let s5 = SISN + 1 + 5000;
    for p in v.iter_mut() {
        if !p.from_client && p.seq == s5 && p.t < 0.1 {
            p.delay = None; // original lost
        }
        if p.from_client && p.t > 0.06 && p.t < 0.07 {
            p.delay = Some(OWD); // ACKs of round 2 (dupACKs now) arrive
            p.ack = s5;
        }
        if !p.from_client && p.seq == s5 && (p.t - 0.354).abs() < 1e-9 {
            p.delay = None; // first retransmission lost
        }
    }
    // dupACKs don't re-arm the timer: the RTO is still at 0.354 (0.054 + 0.3)
    v.retain(|p| !(p.from_client && (p.t - 0.364).abs() < 1e-9));
    v.push(Pkt { t: 0.654, from_client: false, flags: A, seq: s5, ack: CISN + 1, len: 1000, delay: Some(OWD) });
    v.push(Pkt { t: 0.664, from_client: true, flags: A, seq: CISN + 1, ack: SISN + 1 + 10_000, len: 0, delay: Some(OWD) });
    v.sort_by(|a, b| a.t.total_cmp(&b.t));
    let (cli, srv) = captures(&v);
    let r = match_segments(cli, srv, MatchOptions::default());
    let (m, ev) = (r.matched.finish(), r.events.finish());
    assert_eq!((u(&m, "data_packets_sent"), u(&m, "lost_data_packets")), (Some(12), Some(2)));
    assert!(close(f(&m, "p_d"), 2.0 / 12.0));
    assert_eq!((u(&m, "rto_retransmissions"), u(&m, "rto_retransmissions_lost")), (Some(2), Some(1)));
    assert_eq!(f(&m, "q"), Some(0.5));
    assert_eq!(u(&m, "spurious_timeouts_2v"), Some(0));
    assert_eq!(ev.num_rows(), 0);
}

#[test]
fn ack_clocked_resends_after_an_rto_are_not_new_timeouts() {
    // Regression (study campaign): segments 5–9 of round 2 are all lost. The RTO fires at
    // 0.354 (0.054 + 0.3) and re-sends segment 5; its ACK (advancing to 6) arrives 0.374.
    // Linux, in the RTO recovery (CA_Loss), then re-sends 6 and 7 — paced 5 ms after that
    // ACK — and 8 and 9 after theirs. Those heads were last sent > 180 ms before, but an
    // advancing ACK had just re-armed the timer: they are ACK-clocked, not timeouts. The
    // kernel counts one RTO recovery here (TCP_INFO total_rto_recoveries = 1); the matcher
    // counted three rto_sequences (one per ACK-clocked head re-send).
    let mut v = exchange(false);
    let sq = |k: u32| SISN + 1 + 1000 * k;
    // round 2's originals are lost, so the client sends no ACK for them
    for p in v.iter_mut() {
        if !p.from_client && p.t > 0.05 && p.t < 0.06 {
            p.delay = None;
        }
    }
    v.retain(|p| !(p.from_client && p.t > 0.06 && p.t < 0.07));
    v.retain(|p| !(p.from_client && (p.t - 0.364).abs() < 1e-9));
    // the RTO retransmission of 5 (0.354, kept from `exchange`) is ACKed up to 6
    v.push(Pkt { t: 0.364, from_client: true, flags: A, seq: CISN + 1, ack: sq(6), len: 0, delay: Some(OWD) });
    // ACK-clocked re-sends in the recovery: 6, 7 at 0.379; 8, 9 at 0.404 (after 6, 7's ACKs at 0.399)
    for (k, t) in [(6u32, 0.379), (7, 0.3791), (8, 0.404), (9, 0.4041)] {
        v.push(Pkt { t, from_client: false, flags: A, seq: sq(k), ack: CISN + 1, len: 1000, delay: Some(OWD) });
        v.push(Pkt { t: t + OWD, from_client: true, flags: A, seq: CISN + 1, ack: sq(k + 1), len: 0, delay: Some(OWD) });
    }
    v.sort_by(|a, b| a.t.total_cmp(&b.t));
    let (cli, srv) = captures(&v);
    let r = match_segments(cli, srv, MatchOptions::default());
    let m = r.matched.finish();
    // 15 data transmissions (10 originals, 5 re-sends), the 5 originals of round 2 lost
    assert_eq!((u(&m, "data_packets_sent"), u(&m, "lost_data_packets")), (Some(15), Some(5)));
    assert_eq!(u(&m, "rto_sequences"), Some(1), "one RTO, then ACK-clocked recovery");
    assert_eq!((u(&m, "rto_retransmissions"), u(&m, "rto_retransmissions_lost")), (Some(1), Some(0)));
    assert_eq!(u(&m, "spurious_timeouts_2v"), Some(0));
}

#[test]
fn an_rto_before_any_ack_reached_the_sender_is_a_timeout() {
    // Found by the pair fuzz target (27 Nov: "attempt to subtract with overflow" in
    // Replay::on_tx): the captures start mid-connection (no handshake), and no ACK has
    // reached the server when its first segment's timer fires. The "time since the last
    // ACK" and "time since the last DupACK" were taken from Nanos::MIN and wrapped in release
    // builds, so this RTO was never counted. Segments 0-4 arrive, every ACK of them is lost;
    // segment 0 is re-sent 300 ms later and its ACK arrives.
    let sq = |k: u32| SISN + 1 + 1000 * k;
    let mut v = Vec::new();
    for k in 0..5u32 {
        let t = 0.030 + 0.001 * k as f64;
        v.push(Pkt { t, from_client: false, flags: A, seq: sq(k), ack: CISN + 1, len: 1000, delay: Some(OWD) });
        v.push(Pkt { t: t + OWD, from_client: true, flags: A, seq: CISN + 1, ack: sq(k + 1), len: 0, delay: None });
    }
    v.push(Pkt { t: 0.330, from_client: false, flags: A, seq: sq(0), ack: CISN + 1, len: 1000, delay: Some(OWD) });
    v.push(Pkt { t: 0.340, from_client: true, flags: A, seq: CISN + 1, ack: sq(5), len: 0, delay: Some(OWD) });
    v.sort_by(|a, b| a.t.total_cmp(&b.t));
    let (cli, srv) = captures(&v);
    let r = match_segments(cli, srv, MatchOptions::default());
    let m = r.matched.finish();
    assert_eq!(m.num_rows(), 1);
    assert_eq!(u(&m, "rto_sequences"), Some(1));
    assert_eq!(u(&m, "rto_retransmissions"), Some(1));
    // the original had arrived and the phone's ACKs of it were all lost: spurious, ACK loss
    assert_eq!(u(&m, "spurious_timeouts_2v"), Some(1));
    assert_eq!(u(&m, "spurious_timeouts_ack_loss"), Some(1));
}

#[test]
fn a_head_re_sent_soon_after_an_advancing_ack_with_a_sack_block_is_no_timeout() {
    // Issue 35 (v5 run 039, server frames 1054-1055): the phone's ACK of segment 5 and
    // segment 6 are lost; segment 7's ACK (ACK 6, SACK 7) advances and reaches the server
    // late, 0.220; 17.6 ms later RACK's reordering timer re-sends 6, 186 ms after its
    // original. The kernel counts no RTO; the matcher counted a timeout because only a
    // duplicate ACK (one that does not advance) stopped its timing rule.
    let sq = |k: u32| SISN + 1 + 1000 * k;
    let mut v: Vec<Pkt> = exchange(false).into_iter().filter(|p| p.t < 0.05).collect();
    for k in 5..10u32 {
        let t = 0.051 + 0.001 * (k - 5) as f64;
        let lost = k == 6;
        v.push(Pkt { t, from_client: false, flags: A, seq: sq(k), ack: CISN + 1, len: 1000, delay: (!lost).then_some(OWD) });
        // the ACK of 5 is lost; those of 7-9 acknowledge 6 with SACK blocks
        let (ack, delay) = match k {
            5 => (sq(6), None),
            6 => continue,
            7 => (sq(6), Some(0.220 - (t + OWD))),
            _ => (sq(6), Some(0.300 - (t + OWD))),
        };
        v.push(Pkt { t: t + OWD, from_client: true, flags: A, seq: CISN + 1, ack, len: 0, delay });
    }
    v.push(Pkt { t: 0.2376, from_client: false, flags: A, seq: sq(6), ack: CISN + 1, len: 1000, delay: Some(OWD) });
    v.push(Pkt { t: 0.2476, from_client: true, flags: A, seq: CISN + 1, ack: sq(10), len: 0, delay: Some(OWD) });
    v.sort_by(|a, b| a.t.total_cmp(&b.t));
    // SACK blocks [7, k + 1) on the ACKs drawn by k = 7, 8, 9 (IP ID: the place in `v`)
    let blocks: Vec<(u16, u32)> = v
        .iter()
        .enumerate()
        .filter(|(_, p)| p.from_client && p.ack == sq(6) && p.t > 0.062)
        .map(|(i, p)| (i as u16, sq(6 + ((p.t - OWD - 0.051) * 1000.0).round() as u32)))
        .collect();
    assert_eq!(blocks.len(), 3);
    let (mut cli, mut srv) = captures(&v);
    for s in cli.iter_mut().chain(srv.iter_mut()) {
        if let Some(&(_, right)) = blocks.iter().find(|(id, _)| s.ip_id == Some(*id) && s.sport == 40000) {
            s.options.sack[0] = SackBlock { left: sq(7), right };
            s.options.sack_count = 1;
        }
    }
    let r = match_segments(cli, srv, MatchOptions::default());
    let m = r.matched.finish();
    assert_eq!((u(&m, "data_packets_sent"), u(&m, "lost_data_packets")), (Some(11), Some(1)));
    assert_eq!(u(&m, "rto_sequences"), Some(0), "a RACK re-send, not a timeout");
}

/// Both captures of `v` with SACK offered on both SYNs and the given SACK blocks put on the
/// client's ACKs sent at the given true times (seconds; `(t, [left, right) pairs)`).
fn sack_captures(v: &[Pkt], blocks: &[(f64, &[(u32, u32)])]) -> (Vec<Segment>, Vec<Segment>) {
    let (mut cli, mut srv) = captures(v);
    let mut put = vec![0; blocks.len()];
    for s in cli.iter_mut().chain(srv.iter_mut()) {
        if s.flags.syn() {
            s.options.sack_permitted = true;
        }
        // the sender's true time is its TSval (ms), on the client's packets too
        let ms = s.options.timestamp.map(|(tsval, _)| tsval);
        if let Some(i) = blocks.iter().position(|(bt, _)| s.sport == 40000 && ms == Some((bt * 1000.0).round() as u32)) {
            for (k, &(left, right)) in blocks[i].1.iter().enumerate() {
                s.options.sack[k] = SackBlock { left, right };
            }
            s.options.sack_count = blocks[i].1.len() as u8;
            put[i] += 1;
        }
    }
    assert!(put.iter().all(|&n| n == 2), "each ACK with blocks is in both captures: {put:?}");
    (cli, srv)
}

#[test]
fn a_duplicate_ack_that_only_reports_a_duplicate_is_no_loss_evidence() {
    // Segment 5 (0.051) is lost in an outage. At 0.290 the network delivers a late copy of
    // segment 4 (RFC 2883's replicated packet): the phone answers with a duplicate ACK whose
    // only block is a D-SACK below its ACK (arrives 0.300). Nothing sent after 5 was
    // delivered, so RACK has no evidence (RFC 8985) and Linux counts a D-SACK ACK as no
    // duplicate ACK: only the timer re-sends 5, at 0.354. The matcher took that ACK for a
    // duplicate ACK and the re-send for RACK's.
    let sq = |k: u32| SISN + 1 + 1000 * k;
    let mut v: Vec<Pkt> = exchange(false).into_iter().filter(|p| p.t < 0.05).collect();
    v.push(Pkt { t: 0.051, from_client: false, flags: A, seq: sq(5), ack: CISN + 1, len: 1000, delay: None });
    v.push(Pkt { t: 0.290, from_client: true, flags: A, seq: CISN + 1, ack: sq(5), len: 0, delay: Some(OWD) });
    v.push(Pkt { t: 0.354, from_client: false, flags: A, seq: sq(5), ack: CISN + 1, len: 1000, delay: Some(OWD) });
    v.push(Pkt { t: 0.364, from_client: true, flags: A, seq: CISN + 1, ack: sq(6), len: 0, delay: Some(OWD) });
    v.sort_by(|a, b| a.t.total_cmp(&b.t));
    let (mut cli, srv) = sack_captures(&v, &[(0.290, &[(sq(4), sq(5))])]);
    // the network's copy of segment 4 at the phone (the server sent it once)
    let dup = cli.iter().find(|s| s.sport == 5201 && s.seq == sq(4)).copied().unwrap();
    cli.push(Segment { ts: dup.ts + 256_000_000, ..dup });
    cli.sort_by_key(|s| s.ts);
    let r = match_segments(cli, srv, MatchOptions::default());
    let m = r.matched.finish();
    assert_eq!(u(&m, "rto_sequences"), Some(1), "the timer's re-send: a D-SACK is no loss evidence");
    assert_eq!(u(&m, "spurious_timeouts_2v"), Some(0));
}

/// Segments 5-7 (0.051-0.053); 5 is lost, 6 and 7 arrive. 6's duplicate ACK (SACK 6) at
/// 0.072 makes RACK re-send 5 at 0.075 (too soon for a timeout), and that copy is lost too.
/// 7's duplicate ACK (SACK 6-7) is held in the network and arrives at 0.300; the head is
/// re-sent at 0.354. `later`: segment 8, sent at 0.080 after 5's last copy, arrives too, and
/// its duplicate ACK (SACK 6-8) arrives last, at 0.301.
fn sack_sent_before_or_after(later: bool) -> RecordBatch {
    let sq = |k: u32| SISN + 1 + 1000 * k;
    let mut v: Vec<Pkt> = exchange(false).into_iter().filter(|p| p.t < 0.05).collect();
    for (k, t) in [(5u32, 0.051), (6, 0.052), (7, 0.053)] {
        v.push(Pkt { t, from_client: false, flags: A, seq: sq(k), ack: CISN + 1, len: 1000, delay: (k != 5).then_some(OWD) });
    }
    v.push(Pkt { t: 0.062, from_client: true, flags: A, seq: CISN + 1, ack: sq(5), len: 0, delay: Some(OWD) });
    v.push(Pkt { t: 0.063, from_client: true, flags: A, seq: CISN + 1, ack: sq(5), len: 0, delay: Some(0.300 - 0.063) });
    v.push(Pkt { t: 0.075, from_client: false, flags: A, seq: sq(5), ack: CISN + 1, len: 1000, delay: None });
    let top = if later { 9 } else { 8 };
    if later {
        v.push(Pkt { t: 0.080, from_client: false, flags: A, seq: sq(8), ack: CISN + 1, len: 1000, delay: Some(OWD) });
        v.push(Pkt { t: 0.090, from_client: true, flags: A, seq: CISN + 1, ack: sq(5), len: 0, delay: Some(0.301 - 0.090) });
    }
    v.push(Pkt { t: 0.354, from_client: false, flags: A, seq: sq(5), ack: CISN + 1, len: 1000, delay: Some(OWD) });
    v.push(Pkt { t: 0.364, from_client: true, flags: A, seq: CISN + 1, ack: sq(top), len: 0, delay: Some(OWD) });
    v.sort_by(|a, b| a.t.total_cmp(&b.t));
    let (b6, b7, b8) = ([(sq(6), sq(7))], [(sq(6), sq(8))], [(sq(6), sq(9))]);
    let mut blocks = vec![(0.062, &b6[..]), (0.063, &b7[..])];
    if later {
        blocks.push((0.090, &b8[..]));
    }
    let (cli, srv) = sack_captures(&v, &blocks);
    let r = match_segments(cli, srv, MatchOptions::default());
    let m = r.matched.finish();
    assert_eq!((u(&m, "data_packets_sent"), u(&m, "lost_data_packets")), (Some(10 + later as u64), Some(2)));
    m
}

#[test]
fn a_sack_of_data_sent_before_the_heads_last_copy_is_no_loss_evidence() {
    // The ACK at 0.300 SACKs only data sent before 5's last copy: RACK cannot mark 5 lost
    // again (RFC 8985: only a delivery of data sent after it does), so the timer re-sent it.
    // The matcher took any SACK block above the ACK for evidence.
    let m = sack_sent_before_or_after(false);
    assert_eq!(u(&m, "rto_sequences"), Some(1), "the timer's re-send: RACK had no evidence against 5's last copy");
    // the same ACK SACKing segment 8, sent after 5's last copy: RACK's evidence, no timeout
    assert_eq!(u(&sack_sent_before_or_after(true), "rto_sequences"), Some(0));
}
