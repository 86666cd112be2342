//! Transcripts seen from the data receiver (client / phone capture). Handshake gaps put the
//! capture at the client: SYN→SYN-ACK 50 ms (one RTT), SYN-ACK→ACK 0.1 ms.

mod engine_support;
use engine_support::*;

fn client_side(sack: bool, ts: bool) -> Tx {
    let mut t = Tx::new(1000, 7_000_000);
    t.ts_on = ts;
    t.handshake(0.0, 50.0, 0.1, Some((7, 7)), sack);
    t
}

/// The sender of the IP-ID tests: data segments of 1000 bytes numbered with consecutive
/// IP IDs from 5002 (the SYN-ACK has 5001); a lost one uses up its ID unseen.
struct IdSender {
    id: u16,
}

impl IdSender {
    fn new() -> Self {
        IdSender { id: 5001 }
    }

    fn send(&mut self, t: &mut Tx, ms: f64, seq: u32, arrives: bool) {
        self.id += 1;
        if arrives {
            t.data(ms, seq, 1000).ip_id = Some(self.id);
        }
    }

    /// `n` segments from `seq`, 1 ms apart from `ms`, each acknowledged 0.5 ms later.
    fn in_order(&mut self, t: &mut Tx, ms: f64, seq: u32, n: u32) {
        for k in 0..n {
            self.send(t, ms + k as f64, seq + 1000 * k, true);
            t.ack(ms + 0.5 + k as f64, seq + 1000 * (k + 1));
        }
    }

    /// `n` segments from `seq` beyond a hole at `hole`, 1 ms apart from `ms`, each answered
    /// 0.5 ms later by a DupACK for the hole.
    fn dupacked(&mut self, t: &mut Tx, ms: f64, seq: u32, n: u32, hole: u32) {
        for k in 0..n {
            self.send(t, ms + k as f64, seq + 1000 * k, true);
            t.ack(ms + 0.5 + k as f64, hole);
        }
    }
}

#[test]
fn hole_filled_after_dupacks_is_a_fast_retransmission() {
    let mut t = client_side(true, false);
    t.data(100.0, 1, 1000);
    t.data(100.1, 1001, 1000);
    t.ack(100.15, 2001);
    // 2001..3001 lost before the capture point
    t.data(100.2, 3001, 1000);
    t.sack(100.25, 2001, &[(3001, 4001)]);
    t.data(100.3, 4001, 1000);
    t.sack(100.35, 2001, &[(3001, 5001)]);
    t.data(150.4, 2001, 1000);
    t.ack(150.45, 5001);
    let r = t.run();
    assert_eq!(r.flow_str("capture_near").as_deref(), Some("client"));
    assert_eq!(r.flow_str("data_vantage").as_deref(), Some("receiver"));
    assert_eq!(r.transcript(), "retransmission/fast handshake/complete");
    let i = r.rows("retransmission")[0];
    assert_eq!(str_at(&r.events, "cause", i).as_deref(), Some("hole_fill"));
    assert_eq!(r.flow_u64("retransmissions"), Some(1));
    assert_eq!(r.flow_u64("dupacks"), Some(2));
    // Karn matching would measure the receiver's ACK delay here: no such samples
    assert!(r.rtts("ack").is_empty());
    assert_eq!(r.flow_u64("timeout_sequences"), None);
    assert_eq!(r.flow_u64("bif_max"), None);
    assert_eq!(r.flow_u64("spurious_timeouts_receiver"), Some(0));
}

#[test]
fn reordering_by_older_tsval_is_not_a_retransmission() {
    let mut t = client_side(true, true);
    t.data(100.0, 1, 1000);
    t.data(100.1, 2001, 1000); // overtook 1001
    t.sack(100.15, 1001, &[(2001, 3001)]);
    t.data(101.3, 1001, 1000);
    // sent before 2001 (older TSval), so it was delayed, not re-sent
    let s = t.segs.last_mut().unwrap();
    s.options.timestamp = Some((5_000_099, 0));
    t.ack(101.35, 3001);
    let r = t.run();
    assert_eq!(r.transcript(), "reordering handshake/complete");
    assert_eq!(r.flow_u64("reordering_segments"), Some(1));
    assert_eq!(r.flow_u64("retransmissions"), Some(0));
}

#[test]
fn original_arriving_after_its_own_resend_is_reordering_not_a_second_retransmission() {
    // 1001 is held up on the path; the receiver asks for it, the re-send arrives and fills
    // the hole, then the original (older TSval) arrives: one retransmission, one late
    // original, and the re-send was unnecessary after all (two copies arrived; the
    // two-capture truth of fixture reno_late_original, issue 30 item 1).
    let build = || {
        let mut t = client_side(true, true);
        t.data(100.0, 1, 1000).options.timestamp = Some((5_000_100, 0));
        t.data(100.1, 2001, 1000).options.timestamp = Some((5_000_100, 0));
        t.sack(100.15, 1001, &[(2001, 3001)]);
        t.data(100.2, 3001, 1000).options.timestamp = Some((5_000_100, 0));
        t.sack(100.25, 1001, &[(2001, 4001)]);
        t.data(100.4, 1001, 1000).options.timestamp = Some((5_000_101, 0)); // the re-send
        t.ack(100.45, 4001);
        t.data(100.6, 1001, 1000).options.timestamp = Some((5_000_100, 0)); // the original, late
        t
    };
    let r = build().run_as("client");
    assert_eq!(r.transcript(), "retransmission/fast reordering/late_original spurious_retransmission/receiver handshake/complete");
    assert_eq!(r.flow_u64("retransmissions"), Some(1));
    assert_eq!(r.flow_u64("unnecessary_retransmissions"), Some(1));
    assert_eq!(r.flow_u64("reordering_segments"), Some(1));
    // a second copy of the late original makes that re-send unnecessary only once
    let mut t1 = build();
    t1.data(100.7, 1001, 1000).options.timestamp = Some((5_000_100, 0));
    let r1 = t1.run_as("client");
    assert_eq!(r1.flow_u64("retransmissions"), Some(1));
    assert_eq!(r1.flow_u64("unnecessary_retransmissions"), Some(1));
    // the same bytes re-sent twice (newer TSval both times) stay a retransmission
    let mut t2 = client_side(true, true);
    t2.data(100.0, 1, 1000).options.timestamp = Some((5_000_100, 0));
    t2.data(100.1, 2001, 1000).options.timestamp = Some((5_000_100, 0));
    t2.sack(100.15, 1001, &[(2001, 3001)]);
    t2.data(100.4, 1001, 1000).options.timestamp = Some((5_000_101, 0));
    t2.ack(100.45, 3001);
    t2.data(100.9, 1001, 1000).options.timestamp = Some((5_000_102, 0));
    let r2 = t2.run_as("client");
    assert_eq!(r2.flow_u64("retransmissions"), Some(2));
    assert_eq!(r2.flow_u64("unnecessary_retransmissions"), Some(1));
    assert_eq!(r2.flow_u64("reordering_segments"), Some(0));
}

#[test]
fn reordering_without_timestamps_or_ip_ids_uses_the_rtt_scale() {
    let mut t = client_side(true, false);
    for s in t.segs.iter_mut() {
        s.ip_id = None;
    }
    t.data(100.0, 1, 1000);
    t.data(100.1, 2001, 1000);
    t.data(101.0, 1001, 1000); // 0.9 ms after the hole appeared, RTT 50 ms: reordering
    t.data(101.1, 3001, 1000);
    t.data(160.0, 4001, 1000);
    t.data(160.1, 6001, 1000); // 5001.. lost
    t.sack(160.2, 5001, &[(6001, 7001)]);
    t.data(215.0, 5001, 1000); // ~1 RTT later after a DupACK: retransmission
    for s in t.segs.iter_mut() {
        s.ip_id = None;
    }
    let r = t.run();
    assert_eq!(r.transcript(), "reordering retransmission/fast handshake/complete");
}

#[test]
fn duplicate_after_silence_is_a_spurious_timeout_at_the_receiver() {
    let mut t = client_side(true, false);
    t.data(100.0, 1, 1000);
    t.data(100.1, 1001, 1000);
    t.ack(100.15, 2001); // lost on the way back (invisible here)
    t.data(400.0, 1, 1000); // RTO go-back-N: both segments again
    t.sack(400.05, 2001, &[(1, 1001)]);
    t.data(400.1, 1001, 1000);
    t.data(450.0, 2001, 1000); // new data closes the episode
    t.ack(450.05, 3001);
    let r = t.run();
    assert_eq!(r.transcript(), "suspension/idle retransmission/rto retransmission/rto spurious_timeout/receiver handshake/complete");
    let i = r.rows("spurious_timeout")[0];
    assert_eq!(u64_at(&r.events, "count", i), Some(2));
    assert_eq!(r.flow_u64("spurious_timeouts"), Some(1));
    assert_eq!(r.flow_u64("spurious_timeouts_receiver"), Some(1));
    // M13: both retransmitted segments belong to the spurious episode
    assert!(close(r.flow_f64("spurious_rto_rate").unwrap(), 1.0));
    assert_eq!(r.flow_u64("unnecessary_retransmissions"), Some(2));
}

#[test]
fn timestamps_decide_the_vantage_without_a_handshake_and_give_rtt() {
    // mid-connection capture at the receiver: data echoes the client's TSval one RTT later
    let mut t = Tx::new(1000, 7_000_000);
    t.ts_on = true;
    let mut now = 0.0;
    let mut seq = 1u32;
    for _ in 0..5 {
        t.data(now, seq, 1000);
        t.echo(now - 40.0, true); // echoes the client ACK sent 40 ms ago
        t.ack(now + 0.05, seq + 1000);
        t.echo(now, false); // the client echoes at once
        seq += 1000;
        now += 40.0;
    }
    let r = t.run();
    assert_eq!(r.flow_str("capture_near").as_deref(), Some("client"));
    assert_eq!(
        r.flow_str("capture_near_source").as_deref(),
        Some("timestamps")
    );
    let rtts = r.rtts("ts");
    assert!(!rtts.is_empty());
    assert!(rtts.iter().all(|&x| (x - 0.03995).abs() < 1e-3), "{rtts:?}");
}

#[test]
fn fills_of_data_lost_during_a_silence_belong_to_the_timeout_recovery() {
    let mut t = client_side(true, false);
    t.data(100.0, 1, 1000);
    t.ack(100.05, 1001);
    // 1001..5001 sent and lost in a blackout; the sender backs off
    t.data(1100.0, 1001, 1000); // the RTO retransmission: new to the receiver
    t.ack(1100.05, 2001);
    t.data(1100.1, 5001, 1000); // new data beyond the data lost in the blackout
    t.sack(1100.15, 2001, &[(5001, 6001)]);
    t.data(1100.2, 2001, 1000); // slow-start retransmissions of the lost data
    t.sack(1100.25, 3001, &[(5001, 6001)]);
    t.data(1100.3, 3001, 1000);
    t.ack(1100.35, 6001);
    let r = t.run();
    assert_eq!(r.transcript(), "suspension/idle retransmission/rto retransmission/rto handshake/complete");
}

/// The phone stops reading: its window closes, Linux probes with empty segments one byte
/// below snd_una (tcp_xmit_probe_skb), the phone answers each with the same zero window.
fn zero_window_transcript() -> Tx {
    let mut t = client_side(false, false);
    t.data(100.0, 1, 1000);
    t.data(100.1, 1001, 1000);
    t.raw(100.2, true, A, 1, 2001, 0, 0); // window closed
    t.raw(300.0, false, A, 2000, 1, 0, 509); // probe: seq = snd_una - 1, no payload
    t.raw(300.1, true, A, 1, 2001, 0, 0);
    t.raw(700.0, false, A, 2000, 1, 0, 509); // backed-off probe
    t.raw(700.1, true, A, 1, 2001, 0, 0);
    t.raw(800.0, true, A, 1, 2001, 0, 502); // reads again: window update
    t.raw(800.05, false, A, 2000, 1, 0, 509); // a probe that crossed the update
    t.raw(800.1, true, A, 1, 2001, 0, 502);
    t.data(800.2, 2001, 1000);
    t.ack(800.3, 3001);
    t.raw(9000.0, false, A, 3000, 1, 0, 509); // keepalive shape, window open: not a probe
    t.ack(9000.1, 3001);
    t
}

#[test]
fn linux_zero_window_probes_without_payload_are_counted() {
    let r = zero_window_transcript().run_as("client");
    assert_eq!(r.flow_u64("zero_window_probes"), Some(3));
    let probes = r.rows("window_probe");
    assert_eq!(probes.len(), 3);
    for &i in &probes {
        assert_eq!(str_at(&r.events, "class", i).as_deref(), Some("empty"));
        assert_eq!(i64_at(&r.events, "seq_start", i), Some(2000));
    }
    // the probes are neither retransmissions nor data, and their answers are no DupACKs
    assert_eq!(r.flow_u64("retransmissions"), Some(0));
    assert_eq!(r.flow_u64("data_segments"), Some(3));
    assert_eq!(r.flow_u64("dupacks"), Some(0));
    assert_eq!(r.flow_u64("zero_window_events"), Some(1));
}

#[test]
fn zero_window_probes_seen_at_the_sender_are_counted_alike() {
    let r = zero_window_transcript().run_as("server");
    assert_eq!(r.flow_u64("zero_window_probes"), Some(3));
    assert_eq!(r.flow_u64("retransmissions"), Some(0));
}

#[test]
fn resend_arriving_in_sequence_after_a_partial_ack_is_a_retransmission() {
    // IDs: SYN-ACK 5001, data 5002.. . 1..4001 arrive, 4001 (5006) is lost, 5001..12001
    // (5007..5013) arrive with DupACKs, 12001 (5014) is lost, the fast re-send of 4001 (5015)
    // fills the hole, the phone acknowledges 12001, the re-send of 12001 (5016) arrives in
    // sequence, then new data 13001 (5017).
    let mut t = client_side(false, false);
    let mut s = IdSender::new();
    s.in_order(&mut t, 100.0, 1, 3);
    s.send(&mut t, 103.0, 3001, false); // lost
    s.dupacked(&mut t, 104.0, 4001, 9, 3001);
    s.send(&mut t, 113.0, 13001, false); // the newest original, lost
    s.send(&mut t, 150.0, 3001, true); // fast re-send fills the hole
    t.ack(150.5, 13001);
    s.send(&mut t, 200.0, 13001, true); // partial ACK answered: in sequence, a re-send
    t.ack(200.5, 14001);
    s.send(&mut t, 201.0, 14001, true); // new data
    t.ack(201.5, 15001);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("retransmissions"), Some(2));
    let rows = r.rows("retransmission");
    assert_eq!(i64_at(&r.events, "seq_start", rows[1]), Some(13001));
    assert_eq!(str_at(&r.events, "cause", rows[1]).as_deref(), Some("unseen_original"));
    assert_eq!(str_at(&r.events, "class", rows[1]).as_deref(), Some("fast"));
}

#[test]
fn new_data_after_a_lost_fast_resend_and_a_timeout_is_not_a_retransmission() {
    // Same IDs gap after the newest original, but the gap is the lost fast re-send and the
    // next copy comes a timeout later: the new data after it is new (not judged a re-send).
    let mut t = client_side(false, false);
    let mut s = IdSender::new();
    s.in_order(&mut t, 100.0, 1, 3);
    s.send(&mut t, 103.0, 3001, false);
    s.dupacked(&mut t, 104.0, 4001, 9, 3001);
    s.send(&mut t, 150.0, 3001, false); // fast re-send, lost
    s.send(&mut t, 400.0, 3001, true); // timeout re-send
    t.ack(400.5, 13001);
    s.send(&mut t, 401.0, 13001, true); // new
    t.ack(401.5, 14001);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("retransmissions"), Some(1));
    // the other reading (13001 a re-send) cannot be excluded at the phone
    assert_eq!(r.flow_u64("retransmissions_undecided"), Some(1));
}

/// Handshake RTT 50 ms; a spurious copy of 1 answered by a DupACK candidate (same ACK, same
/// window), and the next data 9.5 ms later.
fn spurious_copy_with_a_dupack_candidate() -> Tx {
    let mut t = client_side(false, false);
    t.data(100.0, 1, 1000);
    t.ack(100.5, 1001);
    t.data(101.0, 1001, 1000);
    t.ack(101.5, 2001);
    t.data(110.0, 1, 1000); // spurious re-send
    t.ack(110.5, 2001); // DupACK: same ACK, same window
    t.data(120.0, 2001, 1000); // 9.5 ms later
    t.ack(120.5, 3001);
    t
}

#[test]
fn dupack_answering_a_repeat_is_undecided_however_soon_new_data_follows() {
    // RFC 5681 (a): the phone has nothing beyond its ACK when a spurious copy arrives. New
    // data 9.5 ms later (a fifth of the SRTT) was sent before the ACK arrived only if the
    // ACK's way up and the data's way down took more than 9.5 ms together, which the phone
    // cannot know: one ACK may be fast (issue 30 item 1, live runs: 5 us up against 36-46 us
    // for its neighbours). Half an SRTT counted such ACKs; both candidates are undecided.
    let mut t = spurious_copy_with_a_dupack_candidate();
    t.data(300.0, 1001, 1000); // another spurious copy, nothing in flight
    t.ack(300.5, 3001);
    t.data(400.0, 3001, 1000); // 100 ms later
    t.ack(400.5, 4001);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("dupacks"), Some(0));
    assert_eq!(r.flow_u64("dupacks_undecided"), Some(2));
}

#[test]
fn resend_in_sequence_behind_a_timeout_resend_is_a_retransmission() {
    // Issue 16, the lab's reno runs: the hole 3001 gets DupACKs (the third at 106.5 ms), its
    // fast re-send (5009) is lost, new data 7001..10001 follows in recovery, P = 9001 (5012)
    // arrives at 172 ms (more than one RTT after the third DupACK, so the sender re-sent
    // nothing after P but at the timeout), 10001 (5013) is lost. The timeout re-send of 3001
    // (5014) fills the hole, the phone acknowledges 10001, and the go-back-N copy of 10001
    // (5015) arrives in sequence: a retransmission. 11001 (5016) is new.
    let mut t = client_side(false, false);
    let mut s = IdSender::new();
    s.in_order(&mut t, 100.0, 1, 3);
    s.send(&mut t, 103.0, 3001, false);
    s.dupacked(&mut t, 104.0, 4001, 3, 3001);
    s.send(&mut t, 160.0, 3001, false); // fast re-send, lost
    s.dupacked(&mut t, 170.0, 7001, 3, 3001);
    s.send(&mut t, 173.0, 10001, false); // original after P, lost
    s.send(&mut t, 400.0, 3001, true); // timeout re-send fills the hole
    t.ack(400.5, 10001);
    s.send(&mut t, 401.0, 10001, true); // go-back-N copy, in sequence
    t.ack(401.5, 11001);
    s.send(&mut t, 402.0, 11001, true); // new
    t.ack(402.5, 12001);
    let r = t.run_as("client");
    // Undecidable at the phone (docs/engine.md): the DupACKs at 170.5-172.5 ms, sent after
    // the third, reach the sender after it sent P; any of them may have been the one that
    // made it re-send (earlier ones lost, or Linux's threshold raised after reordering), and
    // then the missing ID 5013 was that re-send of 3001 and 10001 (5015) is new. The lab has
    // both readings with this phone capture: run r00 of the issue-16 report (the lost ID was
    // the fast re-send of 3001, triggered by the seventh DupACK) and the fixture
    // reno_nosack_nots (the lost ID was the original of the copy). The old rule looked at the
    // third DupACK only and counted 10001 as a re-send, wrong on r00: now it is undecided.
    assert_eq!(r.flow_u64("retransmissions"), Some(1));
    assert_eq!(r.flow_u64("retransmissions_undecided"), Some(1));
}

#[test]
fn dupack_answering_a_timeout_resend_is_not_a_dupack() {
    // Issue 16: the phone has everything, its ACKs are lost, the sender times out and
    // re-sends 2001 (a repeat after a silence); the phone answers with the same ACK and
    // window. The sender, at cwnd 1 with only that copy in flight, had nothing beyond 3001
    // when this ACK arrived: the data after it (29.5 ms later, within one RTT) was sent in
    // answer to it. Two-capture truth of the lab runs: no DupACK.
    let mut t = client_side(false, false); // handshake RTT 50 ms
    t.data(100.0, 1, 1000);
    t.ack(100.5, 1001);
    t.data(101.0, 1001, 1000);
    t.ack(101.5, 2001);
    t.data(102.0, 2001, 1000);
    t.ack(102.5, 3001); // lost on the way
    t.data(400.0, 2001, 1000); // timeout re-send, spurious
    t.ack(400.5, 3001); // same ACK and window
    t.data(430.0, 3001, 1000); // new data sent when that ACK arrived
    t.ack(430.5, 4001);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("dupacks"), Some(0));
}

#[test]
fn tail_lost_and_resent_at_the_timeout_arrives_in_sequence_as_retransmissions() {
    // Issue 16, the lab's reno runs: 1..10001 arrive and are acknowledged (ten IP IDs
    // counting up), the last two originals 10001 (IP ID 5012) and 11001 (5013) are lost,
    // and after the timeout their copies (5014, 5015) arrive exactly in sequence:
    // retransmissions (no hole, no DupACK: the missing IDs can only have been originals).
    // 12001 (5016) is new.
    let mut t = client_side(false, false);
    let mut s = IdSender::new();
    s.in_order(&mut t, 100.0, 1, 10);
    s.send(&mut t, 110.0, 10001, false);
    s.send(&mut t, 111.0, 11001, false);
    s.send(&mut t, 400.0, 10001, true);
    t.ack(400.5, 11001);
    s.send(&mut t, 401.0, 11001, true);
    t.ack(401.5, 12001);
    s.send(&mut t, 402.0, 12001, true);
    t.ack(402.5, 13001);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("retransmissions"), Some(2));
    // no hole, no DupACK since P: decided
    assert_eq!(r.flow_u64("retransmissions_undecided"), Some(0));
    let rows = r.rows("retransmission");
    assert_eq!(i64_at(&r.events, "seq_start", rows[0]), Some(10001));
    assert_eq!(str_at(&r.events, "cause", rows[1]).as_deref(), Some("unseen_original"));
}

#[test]
fn resend_that_overtook_originals_leaves_no_id_missing_after_them() {
    // Issue 16, live run r10 (reno, no SACK/TS): the fast re-send of the hole (IP ID 5028)
    // overtook the two originals sent before it (5026, 5027). When they arrive, the newest
    // original P is 5027, but ID 5028 has been seen: no ID after P is missing, so the data
    // arriving in sequence after a silence (5029) is new. Counting from P's own ID made 5028
    // look missing and judged 5029 a re-send (r10: 77 retransmissions against 76 sent).
    let mut t = client_side(false, false);
    // 20 in order (IDs 5002-5021): enough for the engine to trust IDs counting up
    for k in 0..20u32 {
        t.data(100.0 + k as f64, 1 + 1000 * k, 1000).ip_id = Some(5002 + k as u16);
        t.ack(100.5 + k as f64, 1001 + 1000 * k);
    }
    // 20001 (ID 5022) lost: the hole; three DupACKs make the sender re-send
    for k in 0..3u32 {
        t.data(121.0 + k as f64, 21001 + 1000 * k, 1000).ip_id = Some(5023 + k as u16);
        t.ack(121.5 + k as f64, 20001);
    }
    // originals 24001 (5026) and 25001 (5027) go out before the fast re-send of 20001
    // (5028), which arrives first
    t.data(230.0, 20001, 1000).ip_id = Some(5028);
    t.ack(230.5, 24001);
    t.data(231.0, 24001, 1000).ip_id = Some(5026);
    t.ack(231.5, 25001);
    t.data(232.0, 25001, 1000).ip_id = Some(5027); // P
    t.ack(232.5, 26001);
    // a silence (the application), then new data in sequence with the next ID
    t.data(520.0, 26001, 1000).ip_id = Some(5029);
    t.ack(520.5, 27001);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("retransmissions"), Some(1)); // the fast re-send only
    assert_eq!(r.flow_u64("retransmissions_undecided"), Some(0));
    let rows = r.rows("retransmission");
    assert_eq!(i64_at(&r.events, "seq_start", rows[0]), Some(20001));
}

#[test]
fn dupack_answering_a_repeat_is_undecided_when_data_comes_after_half_an_srtt() {
    // Issue 16, live run r10: the phone answers a spurious copy with nothing beyond its
    // ACK; the next data arrives 40 ms later, within one SRTT (50 ms). Had the ACK's way up
    // taken 45 ms and the data's way down 5 ms, the data was sent after the ACK arrived
    // (nothing in flight then: no DupACK at the sender); had it taken 5 ms, before. The
    // phone cannot tell: undecided (one SRTT counted r10's 393 DupACKs against 392 sent).
    let mut t = spurious_copy_with_a_dupack_candidate();
    t.data(130.0, 1001, 1000); // another spurious copy, no silence before it
    t.ack(130.5, 3001); // candidate
    t.data(170.5, 3001, 1000); // 40 ms later
    t.ack(171.0, 4001);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("dupacks"), Some(0));
    assert_eq!(r.flow_u64("dupacks_undecided"), Some(2));
}

/// Issue 35 (v5 audit, 006): 1..10001 arrive in order, each echoing the client's ACK of
/// 50 ms before; 10001 is lost and 11001 makes the phone SACK at 200.5 ms; at 210 ms a copy
/// of 4001 arrives whose TSecr is `echo` (the client's TSval at that time).
fn copy_after_a_sack(echo: f64) -> Tx {
    let mut t = client_side(true, true);
    for k in 0..10u32 {
        let at = 100.0 + 10.0 * k as f64;
        t.data(at, 1 + 1000 * k, 1000);
        t.echo(at - 50.0, true);
        t.ack(at + 0.5, 1001 + 1000 * k);
        t.echo(at, false);
    }
    t.data(200.0, 11001, 1000);
    t.echo(150.0, true);
    t.sack(200.5, 10001, &[(11001, 12001)]);
    t.echo(200.0, false);
    t.data(210.0, 4001, 1000);
    t.echo(echo, true);
    t
}

#[test]
fn copy_sent_before_any_loss_signal_reached_the_sender_is_the_timer() {
    // TSecr 130: the sender had taken the ACK of 4001 (130.5 ms) and none after it, not the
    // ACK covering 4001..5001 (140.5 ms) nor the SACK; it re-sent the bytes on its timer
    // (v5: copies sent seconds apart arrived bunched 10 ms after a SACK of the phone's and
    // were read as fast re-sends: no spurious timeout named)
    let r = copy_after_a_sack(130.5).run_as("client");
    assert_eq!(r.transcript(), "retransmission/rto spurious_timeout/receiver handshake/complete");
    assert_eq!(r.flow_u64("spurious_timeouts_receiver"), Some(1));
    assert_eq!(r.flow_u64("retrans_fast"), Some(0));
}

#[test]
fn copy_sent_after_the_sender_took_a_sack_may_be_fast() {
    // the same copy echoing the SACK's TSval: the sender had a loss signal, the rule of the
    // phone's DupACKs decides (fast, one spurious retransmission, no timeout)
    let r = copy_after_a_sack(200.5).run_as("client");
    assert_eq!(r.flow_u64("spurious_timeouts_receiver"), Some(0));
    assert_eq!(r.flow_u64("retrans_fast"), Some(1));
}

#[test]
fn copy_of_the_fin_segment_two_rtts_after_it_is_a_probe() {
    // v5 audit (020, 022, 023: 50 KB flows): the last segment, with the FIN, re-sent by a
    // tail-loss probe, arrives 10 ms after its original. The phone's ACK of the FIN counts
    // the FIN's sequence number: the copy is still the newest data (a probe, not a timeout)
    let mut t = client_side(true, false);
    t.data(100.0, 1, 1000);
    t.ack(100.5, 1001);
    t.data(101.0, 1001, 500).flags = hsrtcp_core::wire::TcpFlags(FA);
    t.ack(101.5, 1502);
    t.data(111.0, 1001, 500).flags = hsrtcp_core::wire::TcpFlags(FA);
    t.ack(111.5, 1502);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("retrans_tlp"), Some(1));
    assert_eq!(r.flow_u64("spurious_timeouts"), Some(0));
}

/// After `copy_after_a_sack(130.5)`: the copy of 4001 is D-SACKed at 210.5 ms, the hole
/// 10001 filled at 230 ms, and `n` new segments from 12001 arrive 10 ms apart from 240 ms,
/// each sent after the sender took the ACK before it.
fn episode_then_new_data(n: u32) -> Tx {
    let mut t = copy_after_a_sack(130.5);
    t.sack(210.5, 10001, &[(4001, 5001), (11001, 12001)]);
    t.echo(210.0, false);
    t.data(230.0, 10001, 1000);
    t.echo(210.5, true);
    t.ack(230.5, 12001);
    t.echo(230.0, false);
    for k in 0..n {
        let at = 240.0 + 10.0 * k as f64;
        t.data(at, 12001 + 1000 * k, 1000);
        t.echo(at - 9.5, true);
        t.ack(at + 0.5, 13001 + 1000 * k);
        t.echo(at, false);
    }
    t
}

#[test]
fn timer_copy_after_the_sender_took_the_ack_of_the_episode_is_a_new_timeout() {
    // v5 audit (004 seq 4,504,377; 036 seq 709,201): after the episode of 4001 new data sent
    // after its copy arrives (12001..15001); at 270 ms a copy of 13001 arrives whose sender
    // had taken the ACK of 13001 (TSecr 240) and so the ACK covering 4001: the first episode
    // was over (an episode lasts until the ACK covering its segment), this copy is a second
    // expiration's. The pause since the first copy (60 ms) is within the RTO scale: only
    // the echo tells
    let mut t = episode_then_new_data(3);
    t.data(270.0, 13001, 1000);
    t.echo(240.5, true);
    t.sack(270.5, 15001, &[(13001, 14001)]);
    t.echo(270.0, false);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("spurious_timeouts_receiver"), Some(2));
    let rows = r.rows("spurious_timeout");
    assert_eq!(i64_at(&r.events, "seq_start", rows[1]), Some(13001));
}

#[test]
fn probe_after_the_ack_of_the_episode_is_no_part_of_it() {
    // v5 audit (008 seq 15,699,666; 010; 015): the same, but the copy is of the newest
    // segment, 3 ms after its original: out of the episode it is judged on its own, a probe
    let mut t = episode_then_new_data(2);
    t.data(253.0, 13001, 1000);
    t.echo(240.5, true);
    t.sack(253.5, 14001, &[(13001, 14001)]);
    t.echo(253.0, false);
    let r = t.run_as("client");
    assert_eq!(r.flow_u64("spurious_timeouts_receiver"), Some(1));
    assert_eq!(r.flow_u64("retrans_tlp"), Some(1));
}
