//! Closure (M19, A10), interruption (M20, A11) and `acked_bytes` from server-side transcripts
//! (handshake RTT 50 ms; times in ms).

mod engine_support;
use engine_support::*;

fn server_side() -> Tx {
    let mut t = Tx::new(1000, 7_000_000);
    t.handshake(0.0, 0.1, 50.0, Some((7, 7)), true);
    t
}

#[test]
fn closure_starts_at_the_servers_first_fin_even_when_the_client_closed_first() {
    let mut t = server_side();
    t.data(50.2, 1, 1000);
    t.ack(100.2, 1001);
    t.raw(200.0, true, FA, 1, 1001, 0, 502); // the client closes first
    t.raw(200.1, false, A, 1001, 2, 0, 509);
    t.raw(250.0, false, FA, 1001, 2, 0, 509); // the server's FIN, 50 ms later
    t.raw(300.0, true, A, 2, 1002, 0, 502); // last packet
    let r = t.run();
    assert_eq!(r.flow_str("closer").as_deref(), Some("client"));
    // M19: server FIN (250.0) -> last packet (300.0), not the client's FIN (200.0)
    assert!(close(r.flow_f64("closure_s").unwrap(), 0.050), "{:?}", r.flow_f64("closure_s"));
}

#[test]
fn no_closure_time_without_a_server_fin() {
    let mut t = server_side();
    t.data(50.2, 1, 1000);
    t.ack(100.2, 1001);
    t.raw(200.0, true, FA, 1, 1001, 0, 502);
    t.raw(250.0, false, A, 1001, 2, 0, 509);
    let r = t.run();
    assert_eq!(r.flow_f64("closure_s"), None);
}

#[test]
fn no_byte_delivered_for_60_s_is_an_interruption_although_packets_keep_coming() {
    // A11: the server keeps retransmitting every 10 s (so the connection is never silent for
    // 60 s) but the receiver's ACK stays at 1001 for 70 s until the capture ends.
    let mut t = server_side();
    t.data(50.2, 1, 1000);
    t.ack(100.2, 1001);
    t.data(100.3, 1001, 1000);
    for k in 1..=7 {
        t.data(100.3 + 10_000.0 * k as f64, 1001, 1000);
        t.ack(100.4 + 10_000.0 * k as f64, 1001);
    }
    let r = t.run();
    assert_eq!(r.flow_bool("interrupted"), Some(true));
    assert_eq!(r.flow_str("interruption_reason").as_deref(), Some("no_delivery"));
    assert_eq!(r.flow_u64("acked_bytes"), Some(1000));
    let i = r.rows("interruption");
    assert_eq!(i.len(), 1);
    // the stall starts at the packet that left data outstanding (the new segment at 100.3 ms)
    let ts = f64_at(&r.events, "ts", i[0]).unwrap() - T0 as f64 * 1e-9;
    assert!((ts - 0.1003).abs() < 1e-3, "{ts}");
}

#[test]
fn a_stall_shorter_than_60_s_is_no_interruption() {
    let mut t = server_side();
    t.data(50.2, 1, 1000);
    t.ack(100.2, 1001);
    t.data(100.3, 1001, 1000);
    for k in 1..=5 {
        t.data(100.3 + 10_000.0 * k as f64, 1001, 1000);
    }
    t.ack(50_200.0, 2001); // 50 s without delivery, then everything arrives
    t.raw(50_300.0, false, FA, 2001, 1, 0, 509);
    t.raw(50_350.0, true, FA, 1, 2002, 0, 502);
    t.raw(50_400.0, false, A, 2002, 2, 0, 509);
    let r = t.run();
    assert_eq!(r.flow_bool("interrupted"), Some(false));
    assert_eq!(r.flow_str("interruption_reason"), None);
    assert_eq!(r.flow_u64("acked_bytes"), Some(2000)); // the FIN is not a byte of the object
}

#[test]
fn reset_before_all_bytes_are_acknowledged_reports_how_far_the_receiver_got() {
    let mut t = server_side();
    t.burst(50.2, 5);
    t.ack(100.2, 4001);
    t.raw(150.0, true, RA, 1, 4001, 0, 0);
    let r = t.run();
    assert_eq!(r.flow_bool("interrupted"), Some(true));
    assert_eq!(r.flow_str("interruption_reason").as_deref(), Some("rst"));
    assert_eq!(r.flow_u64("acked_bytes"), Some(4000));
}
