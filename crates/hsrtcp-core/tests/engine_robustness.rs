//! Hostile input never panics the engine: random flags, sequence and ACK numbers that jump
//! and wrap, SACK blocks pointing anywhere, timestamps going backwards and jumping ahead.

mod engine_support;
use engine_support::*;
use hsrtcp_core::wire::{SackBlock, TcpFlags};

struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        self.0 >> 33
    }
}

#[test]
fn random_segments_never_panic_and_rows_stay_consistent() {
    for seed in 0..40u64 {
        let mut r = Lcg(seed + 1);
        let mut t = Tx::new(r.next() as u32, r.next() as u32);
        t.ts_on = seed.is_multiple_of(2);
        t.handshake(0.0, 0.1, 30.0, Some((7, 7)), true);
        let mut now = 31.0;
        let mut seq = 1u32;
        for _ in 0..3000 {
            let k = r.next() % 100;
            now += match r.next() % 50 {
                0 => -5.0,     // capture out of time order
                1 => 20_000.0, // a 20 s jump (the series table has one row per second)
                n => n as f64 * 0.05,
            };
            if k < 55 {
                let len = [1u32, 100, 1448, 2896, 0][(r.next() % 5) as usize];
                let s = if r.next().is_multiple_of(6) {
                    seq.wrapping_sub((r.next() % 20000) as u32)
                } else {
                    seq
                };
                t.data(now, s, len);
                seq = seq.wrapping_add(len);
            } else {
                let ack = seq.wrapping_sub((r.next() % 5000) as u32);
                let s = t.ack(now, ack);
                s.window = (r.next() % 3) as u16 * 300;
                if r.next().is_multiple_of(3) {
                    s.options.sack_count = (r.next() % 5) as u8;
                    for b in 0..s.options.sack_count as usize {
                        let l = r.next() as u32;
                        s.options.sack[b] = SackBlock {
                            left: l,
                            right: l.wrapping_add((r.next() % 9000) as u32),
                        };
                    }
                }
                if r.next().is_multiple_of(40) {
                    s.flags = TcpFlags(TcpFlags::RST | TcpFlags::ACK);
                }
            }
            if let Some(last) = t.segs.last_mut() {
                if let Some((v, _)) = last.options.timestamp {
                    last.options.timestamp = Some((v, r.next() as u32));
                }
            }
        }
        let res = t.run();
        assert!(res.flows.num_rows() >= 1);
        let rtx = res.rows("retransmission").len() as u64;
        let sum: u64 = (0..res.flows.num_rows())
            .map(|i| u64_at(&res.flows, "retransmissions", i).unwrap())
            .sum();
        assert_eq!(
            rtx, sum,
            "seed {seed}: one event per counted retransmission"
        );
    }
}
