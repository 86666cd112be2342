//! The tracker's per-segment shortcuts against what the full path decides: the subflow found
//! by the flow table's slot, and a DSS option repeated byte for byte.

use super::*;
use crate::wire::{parse_options, TcpFlags};

const T: u32 = 0xdead_beef;

fn ids(flow_id: u64) -> SubflowIds {
    let a = |x: u8| (IpAddr::from([10, 0, 0, x]), 40_000 + flow_id as u16);
    SubflowIds { flow_id, client: a(1), server: a(2) }
}

fn seg(flags: u16, payload_len: u32, options: &[u8]) -> Segment {
    Segment {
        ts: 1_700_000_000_000_000_000,
        src: IpAddr::from([10, 0, 0, 1]),
        dst: IpAddr::from([10, 0, 0, 2]),
        sport: 40_000,
        dport: 80,
        seq: 1,
        ack: 1,
        flags: TcpFlags(flags),
        window: 1000,
        payload_len,
        ip_id: None,
        options: parse_options(options),
        payload_truncated: false,
        outer: 0,
        frame: 0,
    }
}

/// MP_JOIN SYN towards the server naming `token`.
fn join(token: u32) -> Segment {
    let mut o = vec![30, 12, 0x10, 1];
    o.extend(token.to_be_bytes());
    o.extend([0; 4]);
    seg(TcpFlags::SYN, 0, &o)
}

/// DSS with only a data ACK: 32 bits (flags A) or 64 bits (A a).
fn data_ack(ack: u64, wide: bool) -> Segment {
    let o = if wide {
        let mut o = vec![30, 12, 0x20, 0x03];
        o.extend(ack.to_be_bytes());
        o
    } else {
        let mut o = vec![30, 8, 0x20, 0x01];
        o.extend((ack as u32).to_be_bytes());
        o
    };
    seg(TcpFlags::ACK, 0, &o)
}

fn end() -> SubflowEnd {
    SubflowEnd { payload_c2s: 0, payload_s2c: 0, first_ts: 0, last_ts: 0, end_reason: "open", synack_seen: false }
}

#[test]
fn repeated_32_bit_data_ack_widens_against_the_moved_reference() {
    let mut t = Tracker::default();
    for (slot, flow) in [(0, 1), (1, 2)] {
        t.on_segment(slot, flow, true, &join(T), || ids(flow));
    }
    t.on_segment(0, 1, true, &data_ack(0x100, false), || ids(1));
    // the other subflow moves the data ACK 3 * 2^30 on
    t.on_segment(1, 2, true, &data_ack(0xc000_0100, true), || ids(2));
    // the first repeats its 32-bit option byte for byte: next to 0xc000_0100 its low half
    // 0x100 stands for 0x1_0000_0100 (RFC 8684 §3.3.1: the lower 32 bits of the data ACK),
    // an advance the full path counts
    t.on_segment(0, 1, true, &data_ack(0x100, false), || ids(1));
    let c = &t.conns.list[0];
    assert_eq!(c.ack_ref[DOWN], Some(0x1_0000_0100));
    assert_eq!(c.bins[0].1, (0xc000_0100 - 0x100) + (1 << 30));
}

#[test]
fn a_reused_slot_is_a_new_subflow() {
    let mut t = Tracker::default();
    t.on_segment(0, 10, true, &join(T), || ids(10));
    // the flow table retired flow 10 and gave its slot to flow 11 before writing flow 10
    t.on_segment(0, 11, true, &join(T + 1), || ids(11));
    assert_eq!(t.subflow_done(10, end()), Some((Some(T), 1)));
    // (writing flow 10 must not forget that slot 0 now holds flow 11)
    t.on_segment(0, 11, true, &data_ack(5000, true), || ids(11));
    assert_eq!(t.subflow_done(11, end()), Some((Some(T + 1), 1)));
    assert_eq!(t.conns.list[0].ack_ref[DOWN], None);
    assert_eq!(t.conns.list[1].ack_ref[DOWN], Some(5000));
}

/// MP_CAPABLE v1 (RFC 8684 §3.1): `keys` as sent (sender's, then receiver's), and the
/// data-level length of the initiator's first data segment.
fn capable(flags: u16, payload_len: u32, keys: &[u64], data_len: Option<u16>) -> Segment {
    let mut o = vec![30, 0, 0x01, 0x01];
    for k in keys {
        o.extend(k.to_be_bytes());
    }
    if let Some(n) = data_len {
        o.extend(n.to_be_bytes());
    }
    o[1] = o.len() as u8;
    seg(flags, payload_len, &o)
}

#[test]
fn data_on_the_initiators_mp_capable_is_mapped_not_a_fallback() {
    let (ck, sk) = (0x1111_2222_3333_4444u64, 0x5555_6666_7777_8888u64);
    let mut t = Tracker::default();
    let ack = TcpFlags::ACK;
    t.on_segment(0, 1, true, &capable(TcpFlags::SYN, 0, &[], None), || ids(1));
    t.on_segment(0, 1, false, &capable(TcpFlags::SYN | ack, 0, &[sk], None), || ids(1));
    t.on_segment(0, 1, true, &capable(ack, 0, &[ck, sk], None), || ids(1));
    // the client's request: 146 bytes mapped by the MP_CAPABLE's data-level length
    t.on_segment(0, 1, true, &capable(ack | TcpFlags::PSH, 146, &[ck, sk], Some(146)), || ids(1));
    let c = &t.conns.list[0];
    assert_eq!(c.data_bytes[UP], 146);
    let idsn = keys::token_and_idsn(ck, 1).1;
    assert_eq!(c.dsn_ref[UP], Some(idsn.wrapping_add(1)));
    let e = SubflowEnd { payload_c2s: 146, ..end() };
    assert!(t.subflow_done(1, e).is_some());
    assert!(!t.conns.list[0].fallback, "payload mapped by MP_CAPABLE is no fallback");
}
