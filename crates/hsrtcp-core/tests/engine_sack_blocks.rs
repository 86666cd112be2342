//! `sack_block` events (RFC 2018, D-SACK RFC 2883): one row per block of every ACK carrying a
//! SACK option, dir = the direction of the data SACKed, edges relative to that direction's
//! ISN, count = the block's 1-based position in the option. The peer witness (tshark, on
//! real captures) is tests/python/engine/test_engine_peers.py.

mod engine_support;
use engine_support::*;

const T0_S: f64 = T0 as f64 * 1e-9;

/// (ms since T0, dir, class, seq_start, seq_end, count) of every sack_block row, in order.
fn blocks(r: &Res) -> Vec<(f64, String, String, i64, i64, u64)> {
    r.rows("sack_block")
        .into_iter()
        .map(|i| {
            (
                ((f64_at(&r.events, "ts", i).unwrap() - T0_S) * 1e3).round(),
                str_at(&r.events, "dir", i).unwrap(),
                str_at(&r.events, "class", i).unwrap(),
                i64_at(&r.events, "seq_start", i).unwrap(),
                i64_at(&r.events, "seq_end", i).unwrap(),
                u64_at(&r.events, "count", i).unwrap(),
            )
        })
        .collect()
}

fn row(ms: f64, dir: &str, class: &str, s: i64, e: i64, k: u64) -> (f64, String, String, i64, i64, u64) {
    (ms, dir.into(), class.into(), s, e, k)
}

#[test]
fn one_row_per_block_with_its_position_and_dsack_class() {
    // the server's ISN sits just below 2^32: the relative edges must unwrap across zero
    let mut t = Tx::new(1000, u32::MAX - 2500);
    t.handshake(0.0, 0.1, 50.0, Some((7, 7)), true);
    for k in 0..6u32 {
        t.data(60.0 + k as f64, 1 + 1000 * k, 1000);
    }
    t.ack(110.0, 1001);
    t.sack(111.0, 1001, &[(2001, 3001)]);
    t.sack(112.0, 1001, &[(4001, 5001), (2001, 3001)]);
    t.data(113.0, 1001, 1000);
    t.data(114.0, 3001, 1000);
    t.ack(163.0, 6001);
    // a late duplicate of [3001, 4001): D-SACK below the cumulative ACK (RFC 2883 §4.1.1)
    t.sack(170.0, 6001, &[(3001, 4001)]);
    // D-SACK inside the second block (§4.2.1) and a third, ordinary block
    t.sack(171.0, 6001, &[(7001, 8001), (7001, 9001), (10001, 11001)]);
    // the server SACKs client data: dir c2s, edges relative to the client's ISN
    t.raw(172.0, false, A, 6001, 1, 0, 509);
    t.raw(173.0, false, A, 6001, 1, 0, 509).options.sack_count = 0;
    {
        let s = t.raw(174.0, false, A, 6001, 1, 0, 509);
        s.options.sack[0] = hsrtcp_core::wire::SackBlock { left: 1000 + 501, right: 1000 + 801 };
        s.options.sack_count = 1;
    }
    let r = t.run();
    assert_eq!(
        blocks(&r),
        vec![
            row(111.0, "s2c", "sack", 2001, 3001, 1),
            row(112.0, "s2c", "sack", 4001, 5001, 1),
            row(112.0, "s2c", "sack", 2001, 3001, 2),
            row(170.0, "s2c", "dsack", 3001, 4001, 1),
            row(171.0, "s2c", "dsack", 7001, 8001, 1),
            row(171.0, "s2c", "sack", 7001, 9001, 2),
            row(171.0, "s2c", "sack", 10001, 11001, 3),
            row(174.0, "c2s", "sack", 501, 801, 1),
        ]
    );
    // the same rule as flows.dsack_blocks (ACKs carrying a D-SACK of the data direction)
    assert_eq!(r.flow_u64("dsack_blocks"), Some(2));
    // sack_block rows describe bytes, nothing else
    for i in r.rows("sack_block") {
        assert_eq!(f64_at(&r.events, "ts_end", i), None);
        assert_eq!(f64_at(&r.events, "value", i), None);
        assert_eq!(str_at(&r.events, "cause", i), None);
    }
}

#[test]
fn no_rows_without_a_sack_option() {
    let mut t = Tx::new(1000, 7_000_000);
    t.handshake(0.0, 0.1, 50.0, None, false);
    t.data(60.0, 1, 1000);
    t.data(61.0, 1001, 1000);
    t.ack(110.0, 1001);
    t.ack(111.0, 1001);
    t.ack(112.0, 2001);
    let r = t.run();
    assert!(r.rows("sack_block").is_empty());
}
