//! `gap` events (M24, A12): every silence of at least 200 ms between two consecutive packets
//! of a connection, either direction, whatever the RTT — unlike `suspension`, whose threshold
//! is max(200 ms, 2·SRTT). Transcripts from the server side with a 300 ms RTT, so that
//! 2·SRTT = 600 ms and the silences between 200 and 600 ms are gaps but not suspensions.

mod engine_support;
use engine_support::*;

const T0_S: f64 = T0 as f64 * 1e-9;

fn long_rtt_server() -> Tx {
    let mut t = Tx::new(1000, 7_000_000);
    // SYN 0, SYN-ACK 0.1 ms, ACK 300.1 ms: a 300 ms handshake RTT at the server
    t.handshake(0.0, 0.1, 300.0, Some((7, 7)), true);
    t
}

fn rel(gaps: &[(f64, f64, f64, String, f64)]) -> Vec<(f64, f64, String)> {
    gaps.iter()
        .map(|(a, b, d, c, v)| {
            assert!((b - a - d).abs() < 1e-6, "duration_s = ts_end - ts");
            assert_eq!(*v, 0.2, "value = the 200 ms threshold");
            ((a - T0_S) * 1e3, (b - T0_S) * 1e3, c.clone())
        })
        .collect()
}

fn near(a: f64, b: f64) -> bool {
    // event times are float seconds since the epoch: ~0.1 µs resolution
    (a - b).abs() < 1e-3
}

#[test]
fn every_silence_of_200_ms_is_a_gap_even_below_two_srtt() {
    let mut t = long_rtt_server();
    t.data(300.2, 1, 1000); // 0.1 ms after the handshake ACK: no gap
    t.ack(600.2, 1001); // 300 ms with data outstanding: gap, stalled (< 2·SRTT: no suspension)
    t.data(850.2, 1001, 1000); // 250 ms, nothing outstanding: gap, idle
    t.ack(1049.2, 2001); // 199 ms: no gap
    t.data(1249.2, 2001, 1000); // exactly 200 ms: a gap (>= 0.2 s)
    t.ack(2049.2, 3001); // 800 ms stalled: gap AND suspension (> 2·SRTT = 600 ms)
    let r = t.run();
    let g = rel(&r.gaps());
    let want = [
        (0.1, 300.1, "idle"), // SYN-ACK -> handshake ACK: no data yet
        (300.2, 600.2, "stalled"),
        (600.2, 850.2, "idle"),
        (1049.2, 1249.2, "idle"),
        (1249.2, 2049.2, "stalled"),
    ];
    assert_eq!(g.len(), want.len(), "gaps: {g:?}");
    for ((a, b, c), (wa, wb, wc)) in g.iter().zip(want) {
        assert!(near(*a, wa) && near(*b, wb) && c == wc, "{g:?}");
    }
    // the engine's suspension rule sees only the handshake's silence (no SRTT yet: 200 ms)
    // and the 800 ms one, not the three between 200 ms and 2·SRTT
    assert_eq!(r.flow_u64("suspensions"), Some(2));
    assert_eq!(r.kinds().iter().filter(|k| k.starts_with("suspension")).count(), 2);
}

#[test]
fn gaps_count_packets_of_both_directions() {
    // the server keeps sending while the ACKs are lost: no silence in "either direction",
    // so no gap although the client sends nothing for a second
    let mut t = long_rtt_server();
    for k in 0..10u32 {
        t.data(300.2 + 150.0 * k as f64, 1 + 1000 * k, 1000);
    }
    t.ack(1650.2, 10001);
    let r = t.run();
    let g = rel(&r.gaps());
    assert_eq!(g.len(), 1, "only the handshake's 300 ms: {g:?}");
    assert!(near(g[0].0, 0.1) && near(g[0].1, 300.1));
}
