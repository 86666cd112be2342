//! Two-vantage flow metrics from the per-packet fates of one paired connection.
//!
//! Definitions (targets.md §1, rulings §7, models.md §3):
//!
//! - **p_d** (M8, A15): data transmissions of the data sender (retransmissions included) lost
//!   in the network / data transmissions with a verdict. Capture loss is not network loss.
//! - **p_a** (M9): pure ACKs sent by the receiver (seen in its capture) never seen at the data
//!   sender / pure ACKs sent.
//! - **Timeout sequences** (M10, models.md §3.6) from a replay of the sender's capture: a
//!   retransmission of the head segment (the one holding snd_una) at least `RTO_FLOOR` after
//!   the timer was armed — the later of the last ACK that advanced snd_una and the head's
//!   previous transmission (Linux re-arms the timer on both) — is an RTO retransmission;
//!   consecutive RTO retransmissions of the same head are one sequence, which ends at the
//!   first ACK that covers the head.
//! - **q** (M11, A17): RTO retransmissions of the sequences' head segments lost in the network
//!   / RTO retransmissions, pooled over the flow's sequences.
//! - **Spurious timeout** (M12): an earlier transmission of the head was received before the
//!   first RTO retransmission arrived. **Cause** (M14, A6): `ack_loss` iff the receiver sent an
//!   ACK covering the head before the RTO fired (receiver time mapped to the sender clock) and
//!   none of those ACKs reached the sender; otherwise `rto_estimation` (the ACK arrived too
//!   late, or was sent only after the RTO fired).
//! - **RTO estimation bias** (M16, A8): t6 − t4, t4 = the first RTO retransmission, t6 = the
//!   sender's receipt of the first ACK of the original (sent by the receiver after the
//!   original arrived and before a retransmission did); defined only when that ACK arrived.
//! - **ACK burst loss P_a** (M36, A16, models.md §3.4) measured from rounds: a round starts
//!   with a data transmission and ends at the first ACK above its first sequence number (or at
//!   an RTO). A round outside timeout recovery with ≥ 1 delivered segment is counted; it has an
//!   ACK burst loss when it ended in an RTO, the receiver had sent ≥ 1 ACK for the round's data
//!   before the RTO fired, and none of them arrived.
//! - **One-way delays**: receiver time − sender time with the client clock mapped to the
//!   server clock, per direction (min, median, 95th percentile, max).
//! - **Establishment time** (M18, A9): the server's receipt of the first ACK of its SYN-ACK −
//!   the client's first SYN mapped to the server clock.

use rustc_hash::FxHashMap;

use crate::flow::event::{nanos_to_s, Event};
use crate::flow::Dir;
use crate::matcher::clock::ClockFit;
use crate::matcher::fate::{sender_side, Fate, Pkt, NONE};
use crate::matcher::Side;
use crate::table::{col, ColType, ColumnDef, Row};
use crate::wire::Nanos;

/// Shortest gap treated as a retransmission timeout: Linux's minimum RTO is 200 ms; 10 %
/// below it absorbs timer slack and capture timestamping.
pub const RTO_FLOOR: Nanos = 180_000_000;
/// A head retransmission within this time after an ACK arrival was triggered by that ACK
/// (fast retransmit / SACK recovery), not by the timer.
pub const ACK_TRIGGER: Nanos = 500_000;

/// Columns of the `matched` table (docs/formats/matched.md). Python merges them into the
/// `flows` rows with vantage "matched".
pub const MATCH_COLUMNS: &[ColumnDef] = &[
    col("flow_id", ColType::U64, "id of the matched row (unique in the result set)"),
    col("pairing", ColType::Str, "how the connection was found in both captures: isn, seq_proximity; client_only / server_only when only one capture has it"),
    col("client_capture", ColType::Str, "the client-side (phone) capture"),
    col("server_capture", ColType::Str, "the server-side capture"),
    col("cv_client_addr", ColType::Str, "client address as the client capture shows it (before NAT)"),
    col("cv_client_port", ColType::U64, "client port in the client capture"),
    col("cv_server_addr", ColType::Str, "server address in the client capture"),
    col("cv_server_port", ColType::U64, "server port in the client capture"),
    col("cv_epoch", ColType::U64, "connection epoch in the client capture (flows.epoch of its client-vantage row)"),
    col("sv_client_addr", ColType::Str, "client address as the server capture shows it (after NAT)"),
    col("sv_client_port", ColType::U64, "client port in the server capture"),
    col("sv_server_addr", ColType::Str, "server address in the server capture"),
    col("sv_server_port", ColType::U64, "server port in the server capture"),
    col("sv_epoch", ColType::U64, "connection epoch in the server capture (flows.epoch of its server-vantage row)"),
    col("matched_data_dir", ColType::Str, "direction of the bulk data as seen over both captures: s2c or c2s"),
    col("clock_offset_s", ColType::F64, "server clock minus client clock at the middle of the flow, seconds (A9; lower envelope of one-way delays)"),
    col("clock_drift_ppm", ColType::F64, "rate of change of clock_offset_s, parts per million (0 when the captures overlap < 10 s)"),
    col("clock_offset_uncertainty_s", ColType::F64, "half-width of the causality bound on clock_offset_s (half the smallest round trip), seconds"),
    col("data_packets_sent", ColType::U64, "data transmissions of the data sender with a verdict (retransmissions included; M8 denominator)"),
    col("lost_data_packets", ColType::U64, "data transmissions lost in the network (seen leaving, never arriving; M8 numerator)"),
    col("p_d", ColType::F64, "data loss rate lost_data_packets / data_packets_sent (M8)"),
    col("ack_packets_sent", ColType::U64, "pure ACKs sent by the data receiver, seen in its capture (M9 denominator)"),
    col("lost_ack_packets", ColType::U64, "of those, never seen at the data sender (M9 numerator)"),
    col("p_a", ColType::F64, "ACK loss rate lost_ack_packets / ack_packets_sent (M9)"),
    col("rounds", ColType::U64, "rounds outside timeout recovery with >= 1 delivered segment (P_a denominator, models.md 3.4)"),
    col("ack_burst_loss_rounds", ColType::U64, "rounds that ended in an RTO after every ACK the receiver sent for them was lost"),
    col("ack_burst_loss", ColType::F64, "P_a: ack_burst_loss_rounds / rounds, measured from rounds (M36, A16)"),
    col("rto_sequences", ColType::U64, "timeout sequences found in the sender's capture (M10)"),
    col("rto_retransmissions", ColType::U64, "RTO retransmissions of the sequences' head segments with a verdict (M11 denominator)"),
    col("rto_retransmissions_lost", ColType::U64, "of those, lost in the network (M11 numerator)"),
    col("q", ColType::F64, "loss rate of retransmissions inside timeout sequences (M11, A17)"),
    col("spurious_timeouts_2v", ColType::U64, "timeout sequences whose segment had already been received (M12, from both captures)"),
    col("spurious_timeouts_ack_loss", ColType::U64, "spurious timeouts caused by ACK loss (M14 ACKL)"),
    col("spurious_timeouts_rto_estimation", ColType::U64, "spurious timeouts caused by RTO estimation inaccuracy (M14 RTOEI)"),
    col("rto_bias_mean_s", ColType::F64, "mean RTO estimation bias t6 - t4 over spurious timeouts where it is defined, seconds (M16)"),
    col("rto_bias_max_s", ColType::F64, "largest RTO estimation bias t6 - t4, seconds (M16)"),
    col("owd_down_min_s", ColType::F64, "one-way delay server -> client, minimum, seconds (clock-corrected)"),
    col("owd_down_median_s", ColType::F64, "one-way delay server -> client, median, seconds"),
    col("owd_down_p95_s", ColType::F64, "one-way delay server -> client, 95th percentile, seconds"),
    col("owd_down_max_s", ColType::F64, "one-way delay server -> client, maximum, seconds"),
    col("owd_up_min_s", ColType::F64, "one-way delay client -> server, minimum, seconds"),
    col("owd_up_median_s", ColType::F64, "one-way delay client -> server, median, seconds"),
    col("owd_up_p95_s", ColType::F64, "one-way delay client -> server, 95th percentile, seconds"),
    col("owd_up_max_s", ColType::F64, "one-way delay client -> server, maximum, seconds"),
    col("establishment_time_s", ColType::F64, "client's first SYN to the server's receipt of the handshake ACK, server clock, seconds (M18, A9)"),
    col("capture_loss_client_packets", ColType::U64, "packets the client's stack sent or received that the client capture missed"),
    col("capture_loss_server_packets", ColType::U64, "packets the server's stack sent or received that the server capture missed"),
    col("unknown_fate_packets", ColType::U64, "packets sent while the other capture was not running (no verdict)"),
];

/// What one paired connection contributes beyond its packet log.
pub struct PairFacts<'a> {
    pub log: &'a [Vec<Pkt>; 2],
    pub clock: &'a ClockFit,
    /// First client SYN in the client capture (client clock).
    pub first_syn_client: Option<Nanos>,
    /// First handshake ACK in the server capture (server clock).
    pub hs_ack_server: Option<Nanos>,
}

/// One timeout sequence found in the sender's capture.
#[derive(Clone, Debug)]
pub struct TimeoutSeq {
    /// Head segment [s, e) (relative sequence numbers).
    pub s: i64,
    pub e: i64,
    pub t_arm: Nanos,
    /// Log indices of the RTO retransmissions r_1 … r_k.
    pub r: Vec<u32>,
    pub t_end: Option<Nanos>,
    /// Position of r_1 in the time-sorted transmission list.
    pub pos: usize,
    pub spurious: bool,
    pub cause: Option<&'static str>,
    pub bias: Option<f64>,
}

/// Results for one paired connection.
#[derive(Clone, Debug, Default)]
pub struct PairMetrics {
    pub data_dir: Option<Dir>,
    pub data_sent: u64,
    pub data_lost: u64,
    pub acks_sent: u64,
    pub acks_lost: u64,
    pub rounds: u64,
    pub burst_rounds: u64,
    pub rto_retx: u64,
    pub rto_retx_lost: u64,
    pub seqs: Vec<TimeoutSeq>,
    pub owd: [Vec<f64>; 2],
    pub establishment: Option<f64>,
    pub capture_loss: [u64; 2],
    pub unknown: u64,
    pub mid_ts: Nanos,
}

fn map_time(clock: &ClockFit, t: Nanos, from: Side, to: Side) -> Nanos {
    match (from, to) {
        (Side::Client, Side::Server) => clock.to_server(t),
        (Side::Server, Side::Client) => clock.to_client(t),
        _ => t,
    }
}

fn got(f: Fate) -> bool {
    matches!(f, Fate::Delivered | Fate::CaptureLost)
}

/// Compute every two-vantage metric of one paired connection.
pub fn compute(f: &PairFacts<'_>) -> PairMetrics {
    let mut m = PairMetrics::default();
    let log = f.log;
    let bytes = |d: usize| log[d].iter().map(|p| p.len as u64).sum::<u64>();
    let dir = match (bytes(0), bytes(1)) {
        (0, 0) => Dir::S2C,
        (c, s) if s >= c => Dir::S2C,
        _ => Dir::C2S,
    };
    if bytes(0) + bytes(1) > 0 {
        m.data_dir = Some(dir);
    }
    let (d, r) = (dir.idx(), dir.rev().idx());
    let snd = sender_side(dir);
    let rcv = snd.other();

    for p in &log[d] {
        if p.len > 0 && p.tx_ts != NONE && matches!(p.fate, Fate::Delivered | Fate::Lost | Fate::CaptureLost) {
            m.data_sent += 1;
            m.data_lost += (p.fate == Fate::Lost) as u64;
        }
    }
    for p in &log[r] {
        if p.pure_ack() && p.tx_ts != NONE && matches!(p.fate, Fate::Delivered | Fate::Lost | Fate::CaptureLost) {
            m.acks_sent += 1;
            m.acks_lost += (p.fate == Fate::Lost) as u64;
        }
    }
    // Capture loss per capture point: [client, server].
    for dd in [Dir::C2S, Dir::S2C] {
        let tx = sender_side(dd);
        for p in &log[dd.idx()] {
            match p.fate {
                Fate::CaptureLost => m.capture_loss[tx.other().idx()] += 1,
                Fate::SenderMissed => m.capture_loss[tx.idx()] += 1,
                Fate::Unknown => m.unknown += 1,
                _ => {}
            }
        }
    }
    // One-way delays on the server clock.
    let (mut lo, mut hi) = (Nanos::MAX, Nanos::MIN);
    for dd in [Dir::C2S, Dir::S2C] {
        for p in &log[dd.idx()] {
            if p.fate == Fate::Delivered {
                let (tx, rx) = match dd {
                    Dir::S2C => (p.tx_ts, f.clock.to_server(p.rx_ts)),
                    Dir::C2S => (f.clock.to_server(p.tx_ts), p.rx_ts),
                };
                m.owd[dd.idx()].push(nanos_to_s(rx - tx));
                lo = lo.min(tx);
                hi = hi.max(tx);
            }
        }
    }
    m.mid_ts = if lo <= hi { lo + (hi - lo) / 2 } else { 0 };
    if let (Some(syn), Some(ack)) = (f.first_syn_client, f.hs_ack_server) {
        m.establishment = Some(nanos_to_s(ack - f.clock.to_server(syn)));
    }

    // ---- sender replay: timeout sequences and rounds ----
    let mut txs: Vec<u32> = (0..log[d].len() as u32)
        .filter(|&i| {
            let p = &log[d][i as usize];
            p.len > 0 && p.tx_ts != NONE
        })
        .collect();
    txs.sort_by_key(|&i| log[d][i as usize].tx_ts);
    let mut acks_in: Vec<u32> = (0..log[r].len() as u32)
        .filter(|&i| {
            let p = &log[r][i as usize];
            p.rx_ts != NONE && p.ack != i64::MIN
        })
        .collect();
    acks_in.sort_by_key(|&i| log[r][i as usize].rx_ts);
    // The receiver's ACKs as its capture saw them leave (receiver clock).
    let mut acks_out: Vec<u32> = (0..log[r].len() as u32)
        .filter(|&i| {
            let p = &log[r][i as usize];
            p.tx_ts != NONE && p.ack != i64::MIN
        })
        .collect();
    acks_out.sort_by_key(|&i| log[r][i as usize].tx_ts);
    let ack_out_ts: Vec<Nanos> = acks_out.iter().map(|&i| log[r][i as usize].tx_ts).collect();

    // ACKs the receiver sent in [t_from, t_to) (receiver clock) acknowledging beyond `above`.
    let acks_sent_between = |t_from: Nanos, t_to: Nanos, above: i64| -> Vec<u32> {
        let a = ack_out_ts.partition_point(|&t| t < t_from);
        let b = ack_out_ts.partition_point(|&t| t < t_to);
        acks_out[a..b.max(a)].iter().copied().filter(|&i| log[r][i as usize].ack > above).collect()
    };

    if let Some(&first) = txs.first() {
        let p0 = log[d][first as usize];
        let mut snd_una = p0.seq;
        let mut snd_nxt = p0.seq;
        let mut last_adv = p0.tx_ts;
        let mut last_ack_any = Nanos::MIN;
        let mut last_tx_of: FxHashMap<i64, Nanos> = FxHashMap::default();
        let mut open: Option<TimeoutSeq> = None;
        // Round: (first sequence, transmissions, started inside timeout recovery)
        let mut round: Option<(i64, Vec<u32>, bool)> = None;
        let (mut ti, mut ai) = (0usize, 0usize);
        let eval_round = |rd: &(i64, Vec<u32>, bool), rto_at: Option<Nanos>, m: &mut PairMetrics| {
            if rd.2 {
                return;
            }
            let delivered: Vec<&Pkt> = rd.1.iter().map(|&i| &log[d][i as usize]).filter(|p| got(p.fate)).collect();
            if delivered.is_empty() {
                return;
            }
            m.rounds += 1;
            if let Some(t_r) = rto_at {
                let lo_seq = delivered.iter().map(|p| p.seq).min().unwrap();
                let t0 = delivered.iter().filter(|p| p.rx_ts != NONE).map(|p| p.rx_ts).min();
                let t0 = t0.unwrap_or(Nanos::MIN);
                let sent = acks_sent_between(t0, map_time(f.clock, t_r, snd, rcv), lo_seq);
                if !sent.is_empty() && sent.iter().all(|&i| !got(log[r][i as usize].fate)) {
                    m.burst_rounds += 1;
                }
            }
        };
        loop {
            let next_tx = txs.get(ti).map(|&i| log[d][i as usize].tx_ts);
            let next_ack = acks_in.get(ai).map(|&i| log[r][i as usize].rx_ts);
            let take_ack = match (next_tx, next_ack) {
                (None, None) => break,
                (Some(_), None) => false,
                (None, Some(_)) => true,
                (Some(t), Some(a)) => a <= t,
            };
            if take_ack {
                let p = log[r][acks_in[ai] as usize];
                ai += 1;
                last_ack_any = p.rx_ts;
                if p.ack > snd_una {
                    snd_una = p.ack;
                    last_adv = p.rx_ts;
                    if let Some(o) = open.as_mut() {
                        if p.ack >= o.e {
                            o.t_end = Some(p.rx_ts);
                            m.seqs.push(open.take().unwrap());
                        }
                    }
                    if let Some(rd) = round.as_ref() {
                        if p.ack > rd.0 {
                            eval_round(rd, None, &mut m);
                            round = None;
                        }
                    }
                }
                continue;
            }
            let i = txs[ti];
            let pos = ti;
            ti += 1;
            let p = log[d][i as usize];
            let end = p.end();
            let mut is_rto = false;
            if p.seq < snd_nxt && p.seq <= snd_una && snd_una < end {
                let prev = last_tx_of.get(&p.seq).copied().unwrap_or(Nanos::MIN);
                let t_arm = last_adv.max(prev);
                if p.tx_ts - t_arm >= RTO_FLOOR && p.tx_ts - last_ack_any >= ACK_TRIGGER {
                    is_rto = true;
                    match open.as_mut() {
                        Some(o) if o.s == p.seq => o.r.push(i),
                        _ => {
                            if let Some(o) = open.take() {
                                m.seqs.push(o);
                            }
                            open = Some(TimeoutSeq {
                                s: p.seq,
                                e: end,
                                t_arm,
                                r: vec![i],
                                t_end: None,
                                pos,
                                spurious: false,
                                cause: None,
                                bias: None,
                            });
                        }
                    }
                }
            }
            if is_rto {
                if let Some(rd) = round.take() {
                    eval_round(&rd, Some(p.tx_ts), &mut m);
                }
            }
            snd_nxt = snd_nxt.max(end);
            last_tx_of.insert(p.seq, p.tx_ts);
            match round.as_mut() {
                None => round = Some((p.seq, vec![i], open.is_some())),
                Some(rd) => rd.1.push(i),
            }
        }
        if let Some(o) = open.take() {
            m.seqs.push(o);
        }
    }

    // ---- per sequence: q, spurious, cause, bias ----
    for o in m.seqs.iter_mut() {
        for &i in &o.r {
            match log[d][i as usize].fate {
                Fate::Lost => {
                    m.rto_retx += 1;
                    m.rto_retx_lost += 1;
                }
                Fate::Delivered | Fate::CaptureLost => m.rto_retx += 1,
                _ => {}
            }
        }
        let r1 = log[d][o.r[0] as usize];
        let t_r = r1.tx_ts;
        // First arrival of any RTO retransmission of this sequence (receiver clock).
        let retx_arrival = o
            .r
            .iter()
            .map(|&i| log[d][i as usize])
            .filter(|p| p.rx_ts != NONE)
            .map(|p| p.rx_ts)
            .min();
        // Earlier transmissions of the head that the receiver got.
        let horizon = t_r - 600 * 1_000_000_000;
        let mut orig_arrival: Option<Nanos> = None;
        for &j in txs[..o.pos].iter().rev() {
            let q = log[d][j as usize];
            if q.tx_ts < horizon {
                break;
            }
            if q.seq <= o.s && o.s < q.end() && got(q.fate) {
                let arr = if q.rx_ts != NONE { q.rx_ts } else { map_time(f.clock, q.tx_ts, snd, rcv) };
                if retx_arrival.is_none_or(|ra| arr <= ra) {
                    orig_arrival = Some(orig_arrival.map_or(arr, |x: Nanos| x.min(arr)));
                }
            }
        }
        let Some(orig) = orig_arrival else { continue };
        o.spurious = true;
        let t_r_rcv = map_time(f.clock, t_r, snd, rcv);
        let before = acks_sent_between(orig, t_r_rcv, o.s);
        let ack_loss = !before.is_empty() && before.iter().all(|&i| log[r][i as usize].fate == Fate::Lost);
        o.cause = Some(if ack_loss { "ack_loss" } else { "rto_estimation" });
        if !ack_loss {
            // ACKs of the original: sent after it arrived, before a retransmission arrived.
            let until = retx_arrival.unwrap_or(Nanos::MAX);
            let t6 = acks_sent_between(orig, until, o.s)
                .iter()
                .map(|&i| log[r][i as usize])
                .filter(|a| a.rx_ts != NONE)
                .map(|a| a.rx_ts)
                .min();
            o.bias = t6.map(|t6| nanos_to_s(t6 - t_r));
        }
    }
    m
}

fn quantile(sorted: &[f64], q: f64) -> Option<f64> {
    if sorted.is_empty() {
        return None;
    }
    // Nearest-rank on the sorted samples.
    let k = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1;
    Some(sorted[k])
}

fn ratio(n: u64, d: u64) -> Option<f64> {
    (d > 0).then(|| n as f64 / d as f64)
}

/// Write the metric columns of one matched row (identity columns are written by the driver).
pub fn write_metrics(m: &mut PairMetrics, clock: &ClockFit, row: &mut Row<'_>) {
    let spurious: Vec<&TimeoutSeq> = m.seqs.iter().filter(|o| o.spurious).collect();
    let biases: Vec<f64> = spurious.iter().filter_map(|o| o.bias).collect();
    let n_ackl = spurious.iter().filter(|o| o.cause == Some("ack_loss")).count() as u64;
    row.str("matched_data_dir", m.data_dir.map(Dir::name))
        .u64("data_packets_sent", m.data_sent)
        .u64("lost_data_packets", m.data_lost)
        .f64("p_d", ratio(m.data_lost, m.data_sent))
        .u64("ack_packets_sent", m.acks_sent)
        .u64("lost_ack_packets", m.acks_lost)
        .f64("p_a", ratio(m.acks_lost, m.acks_sent))
        .u64("rounds", m.rounds)
        .u64("ack_burst_loss_rounds", m.burst_rounds)
        .f64("ack_burst_loss", ratio(m.burst_rounds, m.rounds))
        .u64("rto_sequences", m.seqs.len() as u64)
        .u64("rto_retransmissions", m.rto_retx)
        .u64("rto_retransmissions_lost", m.rto_retx_lost)
        .f64("q", ratio(m.rto_retx_lost, m.rto_retx))
        .u64("spurious_timeouts_2v", spurious.len() as u64)
        .u64("spurious_timeouts_ack_loss", n_ackl)
        .u64("spurious_timeouts_rto_estimation", spurious.len() as u64 - n_ackl)
        .f64("rto_bias_mean_s", (!biases.is_empty()).then(|| biases.iter().sum::<f64>() / biases.len() as f64))
        .f64("rto_bias_max_s", biases.iter().copied().reduce(f64::max))
        .f64_finite("establishment_time_s", m.establishment)
        .u64("capture_loss_client_packets", m.capture_loss[Side::Client.idx()])
        .u64("capture_loss_server_packets", m.capture_loss[Side::Server.idx()])
        .u64("unknown_fate_packets", m.unknown);
    for (dd, names) in [
        (Dir::S2C, ["owd_down_min_s", "owd_down_median_s", "owd_down_p95_s", "owd_down_max_s"]),
        (Dir::C2S, ["owd_up_min_s", "owd_up_median_s", "owd_up_p95_s", "owd_up_max_s"]),
    ] {
        let v = &mut m.owd[dd.idx()];
        v.sort_by(|a, b| a.total_cmp(b));
        row.f64(names[0], v.first().copied())
            .f64(names[1], quantile(v, 0.5))
            .f64(names[2], quantile(v, 0.95))
            .f64(names[3], v.last().copied());
    }
    if clock.known() {
        row.f64("clock_offset_s", nanos_to_s(clock.offset_at(m.mid_ts)))
            .f64("clock_drift_ppm", clock.drift * 1e6)
            .f64_finite("clock_offset_uncertainty_s", Some(clock.uncertainty_s));
    }
}

/// One `spurious_timeout` event per spurious timeout sequence (sender clock).
pub fn spurious_events(m: &PairMetrics, log: &[Vec<Pkt>; 2]) -> Vec<Event> {
    let Some(dir) = m.data_dir else { return Vec::new() };
    m.seqs
        .iter()
        .filter(|o| o.spurious)
        .map(|o| {
            let mut e = Event::new("spurious_timeout", log[dir.idx()][o.r[0] as usize].tx_ts);
            e.class = Some("two_vantage");
            e.cause = o.cause;
            e.ts_end = o.t_end;
            e.dir = Some(dir);
            e.seq_start = Some(o.s);
            e.seq_end = Some(o.e);
            e.count = Some(o.r.len() as u64);
            e.value = o.bias;
            e
        })
        .collect()
}
