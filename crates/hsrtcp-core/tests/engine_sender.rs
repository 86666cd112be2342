//! Transcripts seen from the data sender (server capture): feed these segments, expect
//! exactly these events. Handshake gaps put the capture at the server: SYN→SYN-ACK 0.1 ms,
//! SYN-ACK→ACK 50 ms (one RTT).

mod engine_support;
use engine_support::*;

fn server_side(sack: bool, ts: bool) -> Tx {
    let mut t = Tx::new(1000, 7_000_000);
    t.ts_on = ts;
    t.handshake(0.0, 0.1, 50.0, Some((7, 7)), sack);
    t
}

#[test]
fn the_callers_vantage_reaches_the_engine() {
    // The same server-side transcript: inferred from the handshake without a hint, taken as
    // given with one — and a wrong hint is obeyed (the caller's word beats inference).
    let mut t = server_side(true, false);
    t.data(50.2, 1, 1000);
    t.ack(100.2, 1001);
    let inferred = t.run();
    assert_eq!(
        inferred.flow_str("capture_near_source").as_deref(),
        Some("handshake")
    );
    let given = t.run_as("server");
    assert_eq!(given.flow_str("capture_near").as_deref(), Some("server"));
    assert_eq!(
        given.flow_str("capture_near_source").as_deref(),
        Some("given")
    );
    assert_eq!(given.flow_str("data_vantage").as_deref(), Some("sender"));
    let told_client = t.run_as("client");
    assert_eq!(
        told_client.flow_str("capture_near").as_deref(),
        Some("client")
    );
    assert_eq!(
        told_client.flow_str("data_vantage").as_deref(),
        Some("receiver")
    );
}

#[test]
fn clean_transfer_rtt_by_karn_handshake_and_close() {
    let mut t = server_side(true, false);
    t.burst(50.2, 4);
    t.ack(100.2, 2001);
    t.ack(100.4, 4001);
    t.raw(100.5, false, FA, 4001, 1, 0, 509);
    t.raw(150.5, true, FA, 1, 4002, 0, 502);
    t.raw(150.6, false, A, 4002, 2, 0, 509);
    let r = t.run();
    assert_eq!(r.transcript(), "handshake/complete close/fin");
    assert_eq!(r.flow_str("capture_near").as_deref(), Some("server"));
    assert_eq!(
        r.flow_str("capture_near_source").as_deref(),
        Some("handshake")
    );
    assert_eq!(r.flow_str("data_vantage").as_deref(), Some("sender"));
    // one sample per advancing ACK, from the newest segment it covers
    let rtts = r.rtts("ack");
    assert_eq!(rtts.len(), 2);
    assert!(rtts.iter().all(|&x| close(x, 0.0499)), "{rtts:?}");
    assert!(close(r.flow_f64("rtt_handshake").unwrap(), 0.050));
    assert_eq!(r.flow_u64("rtt_count"), Some(2));
    assert!(close(r.flow_f64("rtt_mean").unwrap(), 0.0499));
    assert_eq!(r.flow_u64("retransmissions"), Some(0));
    assert_eq!(r.flow_u64("bif_max"), Some(2000));
    assert_eq!(r.flow_u64("awnd_max"), Some(502 << 7));
    assert_eq!(r.flow_u64("pure_acks"), Some(2));
    assert_eq!(r.flow_u64("dupacks"), Some(0));
    assert!(close(r.flow_f64("establishment_s").unwrap(), 0.0501));
    assert!(close(r.flow_f64("closure_s").unwrap(), 0.0501));
    assert_eq!(r.flow_str("closer").as_deref(), Some("server"));
    assert_eq!(r.flow_bool("interrupted"), Some(false));
    assert_eq!(r.flow_u64("goodput_bytes"), Some(4001));
}

#[test]
fn fast_retransmit_after_three_dupacks_and_karn_skips_the_ack_after_it() {
    let mut t = server_side(true, false);
    t.burst(50.2, 6);
    t.ack(100.2, 2001);
    t.sack(100.4, 2001, &[(3001, 4001)]);
    t.sack(100.5, 2001, &[(3001, 5001)]);
    t.sack(100.6, 2001, &[(3001, 6001)]);
    t.data(100.7, 2001, 1000);
    t.ack(150.7, 6001);
    t.data(150.8, 6001, 1000);
    t.ack(200.8, 7001);
    let r = t.run();
    assert_eq!(r.transcript(), "retransmission/fast handshake/complete");
    let rtts = r.rtts("ack");
    // 100.2 covers [1001,2001) sent at 50.3; the ACK at 150.7 is skipped (a retransmission
    // was sent after the segments it covers); 200.8 covers new data sent at 150.8
    assert_eq!(rtts.len(), 2, "{rtts:?}");
    assert!(close(rtts[0], 0.0499) && close(rtts[1], 0.050));
    assert_eq!(r.flow_u64("dupacks"), Some(3));
    assert_eq!(r.flow_u64("pure_acks"), Some(6));
    assert!(close(r.flow_f64("dupack_rate").unwrap(), 0.5));
    assert_eq!(r.flow_u64("retrans_fast"), Some(1));
    assert_eq!(r.flow_u64("timeout_sequences"), Some(0));
    let i = r.rows("retransmission")[0];
    assert_eq!(i64_at(&r.events, "seq_start", i), Some(2001));
    assert_eq!(i64_at(&r.events, "seq_end", i), Some(3001));
}

#[test]
fn timeout_sequence_with_backoff_genuine_by_eifel() {
    let mut t = server_side(false, true);
    t.data(50.2, 1, 1000);
    t.data(50.3, 1001, 1000);
    t.data(300.3, 1, 1000); // RTO
    t.data(800.3, 1, 1000); // backed-off RTO of the same segment
    t.ack(850.3, 1001);
    t.echo(800.3, false); // echoes the second retransmission: it was needed
    t.data(850.4, 1001, 1000);
    t.ack(900.4, 2001);
    let r = t.run();
    // the back-off silences are suspensions too (M24 has no cause filter)
    assert_eq!(
        r.transcript(),
        "suspension/stalled retransmission/rto suspension/stalled retransmission/rto timeout_sequence/recovered retransmission/rto handshake/complete"
    );
    let i = r.rows("timeout_sequence")[0];
    assert_eq!(u64_at(&r.events, "count", i), Some(2));
    assert!(close(f64_at(&r.events, "duration_s", i).unwrap(), 0.8001));
    assert!(close(f64_at(&r.events, "value", i).unwrap(), 0.2501));
    assert_eq!(r.flow_u64("timeouts"), Some(2));
    assert_eq!(r.flow_u64("timeout_retransmissions"), Some(2));
    assert!(close(r.flow_f64("rto_first_mean").unwrap(), 0.2501));
    assert!(close(r.flow_f64("timeout_duration_mean").unwrap(), 0.8001));
    assert!(close(r.flow_f64("q_estimate").unwrap(), 0.5));
    assert_eq!(r.flow_u64("spurious_timeouts"), Some(0));
    assert_eq!(r.flow_u64("spurious_timeouts_eifel"), Some(0));
    assert!(close(r.flow_f64("spurious_rto_rate").unwrap(), 0.0));
    // M3: the bins of the back-off are marked
    assert_eq!(bool_at(&r.series, "backoff", 0), Some(true));
}

#[test]
fn spurious_timeout_found_by_eifel_and_dsack() {
    let mut t = server_side(true, true);
    t.data(50.2, 1, 1000);
    // RTO; the original had arrived, its ACK is late. Later than a lone segment's probe
    // timeout (2·SRTT + 200 ms, SRTT 50 ms): sooner it would be Linux's tail-loss probe
    t.data(400.2, 1, 1000);
    t.ack(401.0, 1001);
    t.echo(50.2, false); // echoes the ORIGINAL's TSval: Eifel says spurious
    t.sack(410.0, 1001, &[(1, 1001)]); // D-SACK for the duplicate
    t.echo(400.2, false);
    let r = t.run();
    assert_eq!(r.transcript(), "suspension/stalled retransmission/rto timeout_sequence/recovered spurious_timeout/eifel spurious_timeout/dsack handshake/complete");
    assert_eq!(r.flow_u64("spurious_timeouts"), Some(1));
    assert_eq!(r.flow_u64("spurious_timeouts_eifel"), Some(1));
    assert_eq!(r.flow_u64("spurious_timeouts_dsack"), Some(1));
    assert!(close(r.flow_f64("spurious_rto_rate").unwrap(), 1.0));
    // M16: the original's ACK arrived 0.8 ms after the retransmission
    assert!(close(r.flow_f64("rto_bias_mean").unwrap(), 0.0008));
    assert_eq!(r.flow_u64("unnecessary_retransmissions"), Some(1));
}

#[test]
fn tail_loss_probe_re_sends_the_last_segment() {
    let mut t = server_side(true, false);
    t.burst(50.2, 4);
    t.ack(100.2, 2001);
    t.data(200.0, 3001, 1000); // probe: last segment, no loss evidence
    t.sack(250.0, 2001, &[(3001, 4001)]);
    t.data(250.1, 2001, 1000);
    t.ack(300.1, 4001);
    let r = t.run();
    assert_eq!(r.transcript(), "retransmission/tlp retransmission/fast handshake/complete");
    assert_eq!(r.flow_u64("retrans_tlp"), Some(1));
}

#[test]
fn sack_recovery_refills_the_second_hole() {
    let mut t = server_side(true, false);
    t.burst(50.2, 8);
    t.ack(100.2, 2001);
    t.sack(100.4, 2001, &[(3001, 4001)]);
    t.sack(100.5, 2001, &[(3001, 5001)]);
    t.sack(100.7, 2001, &[(6001, 7001), (3001, 5001)]);
    t.data(100.8, 2001, 1000);
    t.sack(100.9, 2001, &[(6001, 8001), (3001, 5001)]);
    t.data(101.0, 5001, 1000);
    t.sack(150.8, 5001, &[(6001, 8001)]);
    t.ack(151.0, 8001);
    let r = t.run();
    assert_eq!(r.transcript(), "retransmission/fast retransmission/sack_refill handshake/complete");
    assert_eq!(r.flow_u64("retrans_sack_refill"), Some(1));
    assert_eq!(r.flow_u64("retransmissions"), Some(2));
}

#[test]
fn sequence_numbers_wrap_around_inside_a_retransmission() {
    // the server ISN sits 1500 bytes below 2^32: byte 1501 of the stream is raw 0
    let mut t = Tx::new(1000, u32::MAX - 1499);
    t.handshake(0.0, 0.1, 50.0, Some((7, 7)), true);
    t.burst(50.2, 4);
    t.sack(100.3, 1001, &[(2001, 3001)]);
    t.sack(100.4, 1001, &[(2001, 4001)]);
    t.sack(100.5, 1001, &[(2001, 5001)]);
    t.data(100.6, 1001, 1000); // raw seq u32::MAX-498 .. 501 crosses zero
    t.ack(150.6, 5001);
    let r = t.run();
    assert_eq!(r.transcript(), "retransmission/fast handshake/complete");
    let i = r.rows("retransmission")[0];
    assert_eq!(i64_at(&r.events, "seq_start", i), Some(1001));
    assert_eq!(i64_at(&r.events, "seq_end", i), Some(2001));
    assert_eq!(r.flow_u64("goodput_bytes"), Some(5000));
    assert_eq!(r.flow_u64("dupacks"), Some(2));
}

#[test]
fn window_scaling_zero_window_and_probe_is_not_a_retransmission() {
    let mut t = Tx::new(1000, 7_000_000);
    t.handshake(0.0, 0.1, 50.0, Some((2, 7)), false);
    t.data(50.2, 1, 1000);
    t.raw(100.2, true, A, 1, 1001, 0, 0); // receiver window closes
    t.data(300.0, 1001, 1); // zero-window probe
    t.raw(350.0, true, A, 1, 1001, 0, 0);
    t.raw(600.0, true, A, 1, 1001, 0, 3000); // window update: 3000 << 2
    t.data(600.1, 1001, 1000);
    t.ack(650.1, 2001);
    let r = t.run();
    assert_eq!(r.transcript(), "window_probe/one_byte suspension/stalled zero_window/reopened handshake/complete");
    let i = r.rows("zero_window")[0];
    assert!(close(f64_at(&r.events, "duration_s", i).unwrap(), 0.4998));
    assert_eq!(r.flow_u64("zero_window_probes"), Some(1));
    assert_eq!(r.flow_u64("retransmissions"), Some(0));
    assert_eq!(r.flow_u64("zero_window_segments"), Some(2));
    assert_eq!(r.flow_u64("awnd_min"), Some(0));
    // the client's shift (2) scales the client's windows; the SYN window is never scaled
    assert_eq!(r.flow_u64("awnd_max"), Some(3000 << 2));
    assert_eq!(r.flow_u64("w_m_packets"), Some((3000 << 2) / 1460));
}

#[test]
fn network_duplicate_is_not_a_retransmission() {
    let mut t = server_side(true, false);
    t.data(50.2, 1, 1000);
    let dup = *t.segs.last().unwrap();
    let mut d = dup;
    d.ts += 100_000;
    t.segs.push(d);
    t.ack(100.2, 1001);
    let r = t.run();
    assert_eq!(r.transcript(), "duplicate/network handshake/complete");
    assert_eq!(r.flow_u64("network_duplicates"), Some(1));
    assert_eq!(r.flow_u64("retransmissions"), Some(0));
}

#[test]
fn reset_with_unacknowledged_data_is_an_interruption_and_silence_a_suspension() {
    let mut t = server_side(true, false);
    t.data(50.2, 1, 1000);
    t.data(50.3, 1001, 1000);
    t.ack(100.2, 1001);
    t.raw(1500.0, true, RA, 1, 1001, 0, 0);
    let r = t.run();
    assert_eq!(r.transcript(), "suspension/stalled handshake/complete close/rst interruption/rst");
    assert_eq!(r.flow_bool("interrupted"), Some(true));
    assert_eq!(r.flow_str("interruption_reason").as_deref(), Some("rst"));
    assert_eq!(r.flow_u64("suspensions_stalled"), Some(1));
    assert!(close(r.flow_f64("suspension_max").unwrap(), 1.3998));
}

#[test]
fn series_bins_carry_goodput_bytes_in_flight_window_and_rtt() {
    let mut t = server_side(true, false);
    // second 0: two segments, ACKed at 100 ms; second 1: two segments, one ACK at 1100 ms
    t.data(50.2, 1, 1000);
    t.data(50.3, 1001, 1000);
    t.ack(100.3, 2001);
    t.data(1050.0, 2001, 1000);
    t.data(1050.1, 3001, 1000);
    t.ack(1100.0, 3001); // bif after it: 1000
    t.ack(1100.1, 4001);
    let r = t.run();
    let s = &r.series;
    assert_eq!(s.num_rows(), 2);
    assert_eq!(u64_at(s, "goodput_bytes", 0), Some(2000));
    assert_eq!(u64_at(s, "goodput_bytes", 1), Some(2000));
    assert_eq!(u64_at(s, "bif_max", 0), Some(0));
    assert_eq!(u64_at(s, "bif_max", 1), Some(1000));
    assert!(close(f64_at(s, "bif_mean", 1).unwrap(), 500.0));
    assert_eq!(u64_at(s, "awnd_min", 1), Some(502 << 7));
    assert_eq!(u64_at(s, "rtt_count", 0), Some(1));
    assert!(close(f64_at(s, "rtt_mean", 0).unwrap(), 0.050));
    assert_eq!(u64_at(s, "rtt_count", 1), Some(2));
    assert!(close(f64_at(s, "rtt_max", 1).unwrap(), 0.050));
    assert_eq!(bool_at(s, "backoff", 1), Some(false));
    // M4 and b from the same transcript: 4000 bytes in 4 segments of the receiver's MSS
    // (1460, from its SYN) over 1.1001 s; b = segments per advancing ACK outside recovery
    assert!(close(r.flow_f64("throughput_pkts").unwrap(), 4000.0 / 1460.0 / 1.1001));
    assert!(close(r.flow_f64("b_packets_per_ack").unwrap(), 4000.0 / 1460.0 / 3.0));
}

#[test]
fn dsack_alone_finds_a_spurious_timeout_without_timestamps() {
    let mut t = server_side(true, false);
    t.data(50.2, 1, 1000);
    t.data(400.2, 1, 1000); // RTO (after the lone probe's time); the original had arrived, its ACK was lost
    t.sack(400.3, 1001, &[(1, 1001)]); // the duplicate is reported below the cumulative ACK
    let r = t.run();
    assert_eq!(r.transcript(), "suspension/stalled retransmission/rto spurious_timeout/dsack timeout_sequence/recovered handshake/complete");
    assert_eq!(r.flow_u64("spurious_timeouts_dsack"), Some(1));
    assert_eq!(r.flow_u64("spurious_timeouts_eifel"), None); // timestamps off
    assert_eq!(r.flow_u64("spurious_timeouts"), Some(1));
}

#[test]
fn dsacks_of_other_segments_do_not_prove_a_needed_timeout_spurious() {
    // The head [1,1001) is lost, [1001,2001) is held in a queue. The RTO re-send of the head
    // is needed (no copy of the head is ever D-SACKed); its ACK is partial, so the recovery
    // re-sends [1001,2001) too, and then the held original arrives first: the D-SACK is for
    // that later segment's re-send. RFC 3708 without timestamps: the timeout was spurious
    // only if every re-send of the timed-out segment was D-SACKed, and none was.
    let mut t = server_side(true, false);
    t.data(50.2, 1, 1000);
    t.data(50.3, 1001, 1000);
    t.data(400.2, 1, 1000); // RTO of the head (after the probe time)
    t.ack(450.2, 1001); // partial ACK: the head's re-send filled the hole
    t.data(450.3, 1001, 1000); // the recovery re-sends the next segment
    t.ack(480.0, 2001); // the held original arrived
    t.sack(500.3, 2001, &[(1001, 2001)]); // its re-send arrived as a duplicate
    let r = t.run();
    assert_eq!(r.transcript(), "suspension/stalled retransmission/rto timeout_sequence/recovered retransmission/rto spurious_retransmission/dsack handshake/complete");
    assert_eq!(r.flow_u64("timeouts"), Some(1));
    assert_eq!(r.flow_u64("spurious_timeouts_dsack"), Some(0));
    assert_eq!(r.flow_u64("spurious_timeouts"), Some(0));
    // the later segment's re-send was needless all the same
    assert_eq!(r.flow_u64("unnecessary_retransmissions"), Some(1));
    let i = r.rows("spurious_retransmission")[0];
    assert_eq!(i64_at(&r.events, "seq_start", i), Some(1001));
    assert_eq!(str_at(&r.events, "cause", i).as_deref(), Some("rto"));
}

/// The head [1,1001) and [1001,2001) sent; the head re-sent by the timer and once more
/// backed off; then the first ACK past the head D-SACKs it (the ACK of its first arrival
/// was lost). `echo`: that D-SACK's TSecr (ms of the copy it names), `late_dsack`: the first
/// re-send's D-SACK arrives after it.
fn backoff_dsacked_at_close(ts: bool, echo: Option<f64>, late_dsack: bool) -> Res {
    let mut t = server_side(true, ts);
    t.data(50.2, 1, 1000);
    t.data(50.3, 1001, 1000);
    t.data(300.3, 1, 1000); // RTO
    t.data(800.3, 1, 1000); // backed-off RTO
    t.sack(801.0, 2001, &[(1, 1001)]);
    if let Some(ms) = echo {
        t.echo(ms, false);
    }
    if late_dsack {
        t.sack(802.0, 2001, &[(1, 1001)]);
    }
    t.run()
}

#[test]
fn a_timeout_whose_first_arrival_went_unacknowledged_is_undecided() {
    // The D-SACK echoes the back-off copy itself (no news) and RFC 3708 sees 1 of 2 re-sends
    // D-SACKed: an earlier copy arrived (spurious, a D-SACK lost) or the first RTO re-send
    // did (needed, its ACK lost). Fixture cubic_lost_evidence is the first.
    for r in [backoff_dsacked_at_close(true, Some(800.3), false), backoff_dsacked_at_close(false, None, false)] {
        assert_eq!((r.flow_u64("timeouts"), r.flow_u64("timeout_sequences")), (Some(2), Some(1)));
        assert_eq!(r.flow_u64("spurious_timeouts"), Some(0));
        assert_eq!(r.flow_u64("spurious_timeouts_undecided"), Some(1));
    }
    // the echo names the first RTO re-send as the copy that arrived: needed, decided
    let r = backoff_dsacked_at_close(true, Some(300.3), false);
    assert_eq!((r.flow_u64("spurious_timeouts"), r.flow_u64("spurious_timeouts_undecided")), (Some(0), Some(0)));
    // every re-send D-SACKed in the end (RFC 3708): spurious, decided after the close
    let r = backoff_dsacked_at_close(false, None, true);
    assert_eq!((r.flow_u64("spurious_timeouts"), r.flow_u64("spurious_timeouts_undecided")), (Some(1), Some(0)));
    assert_eq!(r.flow_u64("spurious_timeouts_dsack"), Some(1));
}

#[test]
fn a_timeout_acknowledged_before_any_dsack_stays_decided() {
    // the first ACK past the head is its first arrival's (no D-SACK yet): RFC 3708 decides
    let mut t = server_side(true, false);
    t.data(50.2, 1, 1000);
    t.data(50.3, 1001, 1000);
    t.data(300.3, 1, 1000);
    t.data(800.3, 1, 1000);
    t.ack(801.0, 2001);
    t.sack(802.0, 2001, &[(1, 1001)]);
    let r = t.run();
    assert_eq!((r.flow_u64("spurious_timeouts"), r.flow_u64("spurious_timeouts_undecided")), (Some(0), Some(0)));
}

#[test]
fn a_head_re_sent_an_rto_after_its_send_is_the_timers_however_soon_after_an_ack() {
    // Issue 35 (v5 run 001, server frames 9961-9967): the path's RTT swelled to 300-550 ms.
    // A tail-loss probe of the last segment, then an ACK advances to the head, and 0.30 s
    // later the head is re-sent, 0.85 s after its original: no DupACK, no SACK block, nothing
    // re-sent after the head acknowledged (RACK cannot have marked it), so only the timer,
    // measured from the head's send while the probe timer is pending. The kernel counted an
    // RTO; the engine took it for the tail of a fast recovery (too soon after an ACK).
    let mut t = Tx::new(1000, 7_000_000);
    t.handshake(0.0, 0.1, 300.0, Some((7, 7)), true);
    t.data(300.2, 1, 1000);
    t.ack(600.2, 1001);
    t.data(600.3, 1001, 1000);
    t.data(600.4, 2001, 1000); // the head to be
    t.data(600.5, 3001, 1000);
    t.data(1100.5, 3001, 1000); // tail-loss probe of the last segment
    t.ack(1150.0, 2001); // advances to the head
    t.data(1450.0, 2001, 1000); // the head again: 300 ms after that ACK
    t.ack(1750.0, 4001);
    let r = t.run();
    assert_eq!((r.flow_u64("retrans_tlp"), r.flow_u64("retrans_fast")), (Some(1), Some(0)));
    assert_eq!((r.flow_u64("retrans_rto"), r.flow_u64("timeouts")), (Some(1), Some(1)));
}
