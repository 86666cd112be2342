//! The matcher's state budget (issue 16; docs/two-vantage.md, "Memory"): a window of capture
//! time can hold any number of packets, so what the matcher holds is bounded in bytes too.
//!
//! Two hand-built downloads, every packet in both captures, one-way delay 1 ms:
//! - dense: 1 M data segments per second (a 10-Gbit/s-class capture). Under a budget it
//!   cannot hold two windows of it, and the settled packets go to the metrics a tenth of a
//!   second behind the merge instead: the matched row is the unbounded run's, bit for bit;
//! - one timestamp per capture (a broken clock): nothing settles by time, so the matcher
//!   drops buffered segments and closes windows early, and says so.

use std::net::IpAddr;

use arrow_array::RecordBatch;
use hsrtcp_core::matcher::{match_segments, BudgetCuts, MatchOptions};
use hsrtcp_core::wire::{Segment, TcpFlags, TcpOptions};

const MSS: u32 = 1448;
const T0: i64 = 1_700_000_000_000_000_000;

fn seg(ts: i64, from_phone: bool, seq: u32, ack: u32, flags: u16, len: u32) -> Segment {
    let phone: IpAddr = [10, 8, 0, 2].into();
    let server: IpAddr = [10, 8, 0, 1].into();
    let (src, dst, sport, dport) = if from_phone { (phone, server, 40000, 443) } else { (server, phone, 443, 40000) };
    Segment {
        ts,
        src,
        dst,
        sport,
        dport,
        seq,
        ack,
        flags: TcpFlags(flags),
        window: 500,
        payload_len: len,
        ip_id: None,
        options: TcpOptions::default(),
        payload_truncated: false,
        outer: 0,
        frame: 0,
    }
}

/// (phone capture, server capture) of a download of `n` segments, one every `gap_ns`
/// (0: every packet of a capture at one time, the phone's capture read first).
fn download(n: u32, gap_ns: i64) -> (Vec<Segment>, Vec<Segment>) {
    const A: u16 = TcpFlags::ACK;
    let owd = if gap_ns == 0 { 0 } else { 1_000_000 };
    let t = |i: i64| T0 + i * gap_ns;
    let (cisn, sisn) = (1000u32, 5000u32);
    let mut phone = vec![
        seg(t(0), true, cisn, 0, TcpFlags::SYN, 0),
        seg(t(0) + 2 * owd, false, sisn, cisn + 1, TcpFlags::SYN | A, 0),
        seg(t(0) + 2 * owd, true, cisn + 1, sisn + 1, A, 0),
    ];
    let mut server = vec![
        seg(t(0) + owd, true, cisn, 0, TcpFlags::SYN, 0),
        seg(t(0) + owd, false, sisn, cisn + 1, TcpFlags::SYN | A, 0),
        seg(t(0) + 3 * owd, true, cisn + 1, sisn + 1, A, 0),
    ];
    for i in 0..n {
        let seq = sisn + 1 + i * MSS;
        let ts = t(3 + i as i64) + 3 * owd;
        server.push(seg(ts, false, seq, cisn + 1, A, MSS));
        phone.push(seg(ts + owd, false, seq, cisn + 1, A, MSS));
        phone.push(seg(ts + owd, true, cisn + 1, seq + MSS, A, 0));
        server.push(seg(ts + 2 * owd, true, cisn + 1, seq + MSS, A, 0));
    }
    server.sort_by_key(|s| s.ts);
    (phone, server)
}

/// What the budget cost, the rows (paired and one-sided), and the matched table.
struct Run {
    budget: BudgetCuts,
    pairs: u64,
    rows: u64,
}

fn run(caps: &(Vec<Segment>, Vec<Segment>), budget: usize) -> (Run, RecordBatch) {
    let opts = MatchOptions { state_budget: budget, ..MatchOptions::default() };
    let r = match_segments(caps.0.clone(), caps.1.clone(), opts);
    let run = Run { budget: r.budget, pairs: r.pairs, rows: r.pairs + r.client_only + r.server_only };
    (run, r.matched.finish())
}

#[test]
fn a_dense_capture_stays_within_the_budget_with_the_same_verdicts() {
    let caps = download(800_000, 1_000); // 0.8 s, 1.6 M packets per capture
    let (free, exact) = run(&caps, usize::MAX);
    let budget = 64 << 20; // half of it holds 0.1 s of this capture (200,000 packets)
    assert!(free.budget.peak_bytes > 2 * budget as u64, "the test must need the budget: {:?}", free.budget);
    let (bounded, got) = run(&caps, budget);
    assert_eq!((bounded.budget.flushes, bounded.budget.dropped), (0, 0), "{:?}", bounded.budget);
    // one sweep (16,384 packets) may pass before the budget is looked at
    assert!(bounded.budget.peak_bytes <= budget as u64 + (16_384 * 112), "{:?}", bounded.budget);
    assert_eq!(got, exact, "the matched row must not depend on the budget");
    let lost = got.column_by_name("lost_data_packets").expect("column");
    assert_eq!(lost.as_any().downcast_ref::<arrow_array::UInt64Array>().map(|c| c.value(0)), Some(0));
}

#[test]
fn one_timestamp_per_capture_is_bounded_and_reported() {
    let caps = download(200_000, 0);
    let (free, _) = run(&caps, usize::MAX);
    let budget = 4 << 20;
    assert!(free.budget.peak_bytes > 10 * budget as u64, "{:?}", free.budget);
    assert_eq!((free.budget.flushes, free.budget.dropped), (0, 0));
    let (bounded, rows) = run(&caps, budget);
    let b = bounded.budget;
    assert!(b.flushes > 0 && b.dropped > 0, "{b:?}");
    // the relief works at sweeps; the buffer a pairing feeds is the one allowance
    assert!(b.peak_bytes <= 2 * budget as u64, "{b:?}");
    assert_eq!(rows.num_rows() as u64, bounded.rows);
    assert_eq!(bounded.pairs, 1);
}
