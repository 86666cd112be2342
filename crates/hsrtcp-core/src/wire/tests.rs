//! Decoder unit tests. Frames are hex written by hand from the RFC header layouts; each
//! says what it is. Addresses: 10.0.0.1 → 10.0.0.2, 2001:db8::1 → 2001:db8::2.

use std::net::IpAddr;

use super::*;
use super::mptcp::{DssMapping, Mptcp, MptcpMalformed};
use crate::capture::LinkType;

fn hex(s: &str) -> Vec<u8> {
    let s: String = s.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn tcp(lt: LinkType, data: &[u8]) -> Segment {
    match decode_packet(lt, data, data.len() as u32, 7) {
        Decoded::Tcp(s) => s,
        other => panic!("expected TCP, got {other:?}"),
    }
}

/// A frame captured whole, decoded.
fn decode_whole(lt: LinkType, data: &[u8]) -> Decoded {
    decode_packet(lt, data, data.len() as u32, 0)
}

/// Malformed reason of a frame captured with a snaplen from a long packet (so that headers
/// cut by the capture are not mistaken for lying length fields).
fn reason(lt: LinkType, data: &[u8]) -> &'static str {
    match decode_packet(lt, data, 70_000, 0) {
        Decoded::Malformed(r) => r.name(),
        other => panic!("expected malformed, got {other:?}"),
    }
}

const ETH_V4: &str = "020000000002 020000000001 0800";
const ETH_V6: &str = "020000000002 020000000001 86dd";

/// IPv4 header, 60 bytes total, id 0x1c46, DF, TTL 64, TCP, 10.0.0.1 → 10.0.0.2.
const IP4_60: &str = "4500 003c 1c46 4000 4006 0000 0a000001 0a000002";
/// Linux SYN: 40000 → 80, seq 1000, data offset 10 words, SYN, window 64240, options
/// MSS 1460, SACK-permitted, TS 100/0, NOP, WS 7.
const TCP_SYN: &str = "9c40 0050 000003e8 00000000 a002 faf0 0000 0000
                       020405b4 0402 080a0000006400000000 01 030307";

fn syn_v4() -> Vec<u8> {
    hex(&format!("{IP4_60} {TCP_SYN}"))
}

/// The IPv4 SYN decoded behind the link-layer header `link` (hex).
fn syn_behind(lt: LinkType, link: &str) -> Segment {
    tcp(lt, &[hex(link), syn_v4()].concat())
}

#[test]
fn ethernet_ipv4_syn_all_fields() {
    let s = syn_behind(LinkType::ETHERNET, ETH_V4);
    assert_eq!(s.ts, 7);
    assert_eq!(s.src, "10.0.0.1".parse::<IpAddr>().unwrap());
    assert_eq!(s.dst, "10.0.0.2".parse::<IpAddr>().unwrap());
    assert_eq!((s.sport, s.dport, s.seq, s.ack), (40000, 80, 1000, 0));
    assert!(s.flags.syn() && !s.flags.ack());
    assert_eq!(s.window, 64240);
    assert_eq!(s.ip_id, Some(0x1c46));
    assert_eq!(s.payload_len, 0);
    assert_eq!(s.seq_len(), 1);
    assert!(!s.payload_truncated);
    let o = s.options;
    assert_eq!(o.mss, Some(1460));
    assert!(o.sack_permitted);
    assert_eq!(o.timestamp, Some((100, 0)));
    assert_eq!(o.wscale, Some(7));
    assert!(!o.truncated);
    assert_eq!(o.sack_count, 0);
    assert!(o.mptcp.is_none());
}

#[test]
fn ethernet_padding_is_not_payload() {
    // Pure ACK (IP total 40) padded by the NIC to the 60-byte Ethernet minimum.
    let f = hex(&format!(
        "{ETH_V4} 4500 0028 0001 4000 4006 0000 0a000001 0a000002
         9c40 0050 000003e9 000007d1 5010 0200 0000 0000  000000000000"
    ));
    assert_eq!(f.len(), 60);
    let s = tcp(LinkType::ETHERNET, &f);
    assert_eq!(
        (s.payload_len, s.ack, s.payload_truncated),
        (0, 2001, false)
    );
    assert!(s.flags.ack());
}

#[test]
fn vlan_and_qinq_tags() {
    // 802.1Q tag VID 100, then IPv4.
    let s = syn_behind(LinkType::ETHERNET, "020000000002 020000000001 8100 0064 0800");
    assert_eq!(s.options.mss, Some(1460));
    // 802.1ad outer tag VID 10 + 802.1Q inner tag VID 100.
    let s = syn_behind(LinkType::ETHERNET, "020000000002 020000000001 88a8 000a 8100 0064 0800");
    assert_eq!(s.sport, 40000);
    // Tag cut short.
    assert_eq!(
        reason(
            LinkType::ETHERNET,
            &hex("020000000002 020000000001 8100 00")
        ),
        "short_link_header"
    );
}

#[test]
fn pppoe_and_mpls() {
    // PPPoE session (ver/type 11, code 0, session 1, length 62), PPP protocol 0x0021 IPv4.
    let s = syn_behind(LinkType::ETHERNET, "020000000002 020000000001 8864 1100 0001 003e 0021");
    assert_eq!(s.dport, 80);
    // Two MPLS labels (16, then 17 with bottom-of-stack), then IPv4 by its nibble.
    let s = syn_behind(LinkType::ETHERNET, "020000000002 020000000001 8847 00010040 000111ff");
    assert_eq!(s.seq, 1000);
    // MPLS carrying an Ethernet pseudowire control word (nibble 0) cut inside the
    // pseudowire's Ethernet header (whole ones decode: tunnel_tests.rs).
    let d = hex("020000000002 020000000001 8847 000111ff 00000000 020000000002");
    assert_eq!(decode_whole(LinkType::ETHERNET, &d), Decoded::Malformed(MalformedReason::ShortLinkHeader));
}

#[test]
fn linux_cooked_v1_and_v2() {
    // SLL v1: outgoing (4), ARPHRD_ETHER (1), address length 6, address + 2 pad, 0x0800.
    let s = syn_behind(LinkType::LINUX_SLL, "0004 0001 0006 020000000001 0000 0800");
    assert_eq!(s.options.wscale, Some(7));
    // SLL2: protocol 0x0800, reserved, ifindex 2, ARPHRD_ETHER, host (0), addrlen 6, address.
    let s = syn_behind(LinkType::LINUX_SLL2, "0800 0000 00000002 0001 00 06 0200000000010000");
    assert_eq!(s.options.timestamp, Some((100, 0)));
    assert_eq!(
        reason(LinkType::LINUX_SLL2, &hex("0800 0000 00000002 0001 00 06")),
        "short_link_header"
    );
    // SLL v1 carrying ARP (0x0806).
    let d = hex("0000 0001 0006 020000000001 0000 0806 0001 0800 0604 0001");
    assert_eq!(decode_whole(LinkType::LINUX_SLL, &d), Decoded::NotTcp);
}

#[test]
fn raw_ip_link_types() {
    let v4 = syn_v4();
    for lt in [
        LinkType::RAW,
        LinkType::RAW_12,
        LinkType::RAW_14,
        LinkType::IPV4,
    ] {
        assert_eq!(tcp(lt, &v4).sport, 40000, "{lt}");
    }
    // IPv4 bytes under the IPv6 link type, and a version-5 header under raw IP.
    assert_eq!(reason(LinkType::IPV6, &v4), "bad_ip_version");
    let mut v5 = v4.clone();
    v5[0] = 0x55;
    assert_eq!(reason(LinkType::RAW, &v5), "bad_ip_version");
    assert_eq!(reason(LinkType::RAW, &[]), "short_ip_header");
}

#[test]
fn bsd_null_and_openbsd_loop() {
    let v4 = syn_v4();
    // NULL, little-endian writer: AF_INET = 2.
    assert_eq!(
        tcp(LinkType::NULL, &[hex("02000000"), v4.clone()].concat()).dport,
        80
    );
    // NULL from a big-endian writer.
    assert_eq!(
        tcp(LinkType::NULL, &[hex("00000002"), v4.clone()].concat()).dport,
        80
    );
    // LOOP: network order.
    assert_eq!(
        tcp(LinkType::LOOP, &[hex("00000002"), v4].concat()).dport,
        80
    );
    // IPv6 families of NetBSD/OpenBSD (24), FreeBSD (28), macOS (30), Linux (10).
    let v6 = ipv6_syn();
    for af in ["18000000", "1c000000", "1e000000", "0a000000"] {
        assert_eq!(
            tcp(LinkType::NULL, &[hex(af), v6.clone()].concat()).sport,
            40000,
            "AF {af}"
        );
    }
    // AF_APPLETALK-ish 16: another protocol.
    let d = [hex("10000000"), syn_v4()].concat();
    assert_eq!(decode_whole(LinkType::NULL, &d), Decoded::NotTcp);
    assert_eq!(reason(LinkType::NULL, &hex("0200")), "short_link_header");
}

#[test]
fn ppp_link_type() {
    let s = tcp(LinkType::PPP, &[hex("ff03 0021"), syn_v4()].concat());
    assert_eq!(s.sport, 40000);
}

/// IPv6, payload length 40, next header TCP, hop limit 64, 2001:db8::1 → 2001:db8::2,
/// carrying the same SYN.
fn ipv6_syn() -> Vec<u8> {
    hex(&format!(
        "6000 0000 0028 06 40 20010db8000000000000000000000001 20010db8000000000000000000000002 {TCP_SYN}"
    ))
}

#[test]
fn ipv6_plain_and_extension_headers() {
    let s = tcp(LinkType::ETHERNET, &[hex(ETH_V6), ipv6_syn()].concat());
    assert_eq!(s.src, "2001:db8::1".parse::<IpAddr>().unwrap());
    assert_eq!(s.ip_id, None);
    assert_eq!(s.options.mss, Some(1460));
    // Hop-by-hop (8 bytes: next 60, len 0, PadN 4) + destination options (8 bytes: next 6)
    // + TCP: payload length 56.
    let d = hex(&format!(
        "6000 0000 0038 00 40 20010db8000000000000000000000001 20010db8000000000000000000000002
         3c00 0104 00000000  0600 0104 00000000 {TCP_SYN}"
    ));
    let s = tcp(LinkType::RAW, &d);
    assert_eq!((s.sport, s.payload_len), (40000, 0));
    // Routing header type 4 cut after 4 bytes.
    let d = hex("6000 0000 0010 2b 40 20010db8000000000000000000000001 20010db8000000000000000000000002 0601 0400");
    assert_eq!(reason(LinkType::RAW, &d), "ipv6_ext_header_truncated");
    // Extension headers longer than the payload length says.
    let d = hex(&format!(
        "6000 0000 0004 00 40 20010db8000000000000000000000001 20010db8000000000000000000000002
         0600 0104 00000000 {TCP_SYN}"
    ));
    assert_eq!(reason(LinkType::RAW, &d), "ip_total_len_too_small");
}

#[test]
fn ipv6_fragments() {
    // First fragment (offset 0, M=1, id 7): decodes, with the fragment's TCP length.
    let d = hex(&format!(
        "6000 0000 0030 2c 40 20010db8000000000000000000000001 20010db8000000000000000000000002
         0600 0001 00000007 {TCP_SYN}"
    ));
    assert_eq!(tcp(LinkType::RAW, &d).options.wscale, Some(7));
    // Later fragment (offset 185 × 8) of TCP.
    let d = hex(
        "6000 0000 0010 2c 40 20010db8000000000000000000000001 20010db8000000000000000000000002
         0600 05c8 00000007 0000000000000000",
    );
    assert_eq!(reason(LinkType::RAW, &d), "ip_fragment");
    // Later fragment of UDP: just not TCP.
    let mut u = d.clone();
    u[40] = 17;
    assert_eq!(
        decode_packet(LinkType::RAW, &u, u.len() as u32, 0),
        Decoded::NotTcp
    );
}

#[test]
fn ipv4_options_fragments_and_other_protocols() {
    // IHL 6: one option word (NOP NOP NOP EOL), total 64.
    let d = hex(&format!(
        "4600 0040 1c46 4000 4006 0000 0a000001 0a000002 01010100 {TCP_SYN}"
    ));
    let s = tcp(LinkType::RAW, &d);
    assert_eq!((s.sport, s.options.mss), (40000, Some(1460)));
    // First fragment (MF, offset 0) decodes.
    let d = hex(&format!(
        "4500 003c 1c46 2000 4006 0000 0a000001 0a000002 {TCP_SYN}"
    ));
    assert_eq!(tcp(LinkType::RAW, &d).seq, 1000);
    // Later fragment (offset 185 × 8) of TCP.
    let d =
        hex("4500 0024 1c46 00b9 4006 0000 0a000001 0a000002 0000000000000000 00000000 00000000");
    assert_eq!(reason(LinkType::RAW, &d), "ip_fragment");
    // UDP 5353 → 5353.
    let d = hex("4500 001c 0001 0000 4011 0000 0a000001 0a000002 14e9 14e9 0008 0000");
    assert_eq!(decode_whole(LinkType::RAW, &d), Decoded::NotTcp);
}

#[test]
fn ipv4_header_errors() {
    assert_eq!(
        reason(LinkType::RAW, &hex("4500 003c 1c46")),
        "short_ip_header"
    );
    // IHL 4 (16 bytes) is below the minimum.
    let d = hex(&format!(
        "4400 003c 1c46 4000 4006 0000 0a000001 0a000002 {TCP_SYN}"
    ));
    assert_eq!(reason(LinkType::RAW, &d), "bad_ip_header_len");
    // IHL 15 (60 bytes) but only 40 captured.
    let d = hex("4f00 003c 1c46 4000 4006 0000 0a000001 0a000002 00000000 00000000 00000000 00000000 00000000");
    assert_eq!(reason(LinkType::RAW, &d), "short_ip_header");
    // Total length 12 < header length 20.
    let d = hex(&format!(
        "4500 000c 1c46 4000 4006 0000 0a000001 0a000002 {TCP_SYN}"
    ));
    assert_eq!(reason(LinkType::RAW, &d), "ip_total_len_too_small");
    // Total length 30: only 10 bytes of TCP according to IP.
    let d = hex(&format!(
        "4500 001e 1c46 4000 4006 0000 0a000001 0a000002 {TCP_SYN}"
    ));
    assert_eq!(reason(LinkType::RAW, &d), "ip_total_len_too_small");
    assert_eq!(reason(LinkType(147), &syn_v4()), "unknown_linktype");
    assert_eq!(
        reason(LinkType::ETHERNET, &hex("0200000000020200")),
        "short_link_header"
    );
}

#[test]
fn ip_length_beyond_the_wire_length() {
    // IPv4 total length 65535 in a 1514-byte Ethernet frame captured with snaplen 128.
    let mut d = hex(&format!(
        "{ETH_V4} 4500 ffff 0002 4000 4006 0000 0a000001 0a000002
         9c40 0050 000003e9 000007d1 5010 01f5 0000 0000"
    ));
    d.resize(128, 0);
    assert_eq!(
        decode_packet(LinkType::ETHERNET, &d, 1514, 0),
        Decoded::Malformed(MalformedReason::IpLenExceedsFrame)
    );
    // The same header with total length 1500 is a normal snaplen-cut segment.
    d[16..18].copy_from_slice(&1500u16.to_be_bytes());
    let Decoded::Tcp(s) = decode_packet(LinkType::ETHERNET, &d, 1514, 0) else {
        panic!()
    };
    assert_eq!((s.payload_len, s.payload_truncated), (1460, true));
    // IPv6 payload length 1460 in a frame that was 1000 bytes on the wire.
    let mut v6 = ipv6_syn();
    v6[4..6].copy_from_slice(&1460u16.to_be_bytes());
    assert_eq!(
        decode_packet(LinkType::RAW, &v6, 1000, 0),
        Decoded::Malformed(MalformedReason::IpLenExceedsFrame)
    );
}

#[test]
fn tcp_header_errors() {
    // 12 bytes of TCP captured.
    let d = hex("4500 003c 1c46 4000 4006 0000 0a000001 0a000002 9c40 0050 000003e8 00000000");
    assert_eq!(reason(LinkType::RAW, &d), "short_tcp_header");
    // Data offset 4 words.
    let d = hex("4500 0028 1c46 4000 4006 0000 0a000001 0a000002 9c40 0050 000003e8 00000000 4010 faf0 0000 0000");
    assert_eq!(reason(LinkType::RAW, &d), "bad_tcp_data_offset");
    // Data offset 15 words (60 bytes) but the IP packet holds only 20 bytes of TCP.
    let d = hex("4500 0028 1c46 4000 4006 0000 0a000001 0a000002 9c40 0050 000003e8 00000000 f010 faf0 0000 0000");
    assert_eq!(reason(LinkType::RAW, &d), "bad_tcp_data_offset");
}

/// 1448 bytes of data after a 32-byte header (NOP NOP TS), captured with snaplen 96.
fn data_segment_snap96() -> (Vec<u8>, u32) {
    let full = hex(&format!(
        "{ETH_V4} 4500 05dc 0002 4000 4006 0000 0a000001 0a000002
         9c40 0050 000003e9 000007d1 8018 01f5 0000 0000 0101 080a 00000065 000000c8"
    ));
    (full, 14 + 1500)
}

#[test]
fn payload_length_from_ip_header_not_caplen() {
    let (d, orig) = data_segment_snap96();
    assert_eq!(d.len(), 66);
    let Decoded::Tcp(s) = decode_packet(LinkType::ETHERNET, &d, orig, 0) else {
        panic!()
    };
    assert_eq!(s.payload_len, 1448);
    assert!(s.payload_truncated);
    assert_eq!(s.seq_len(), 1448);
    assert_eq!(s.options.timestamp, Some((101, 200)));
    assert!(!s.options.truncated);
    assert!(s.flags.psh() && s.flags.ack());
}

#[test]
fn options_cut_by_snaplen() {
    // Same segment cut 6 bytes into the timestamp option: the NOPs are kept, TS is lost.
    let (d, orig) = data_segment_snap96();
    let cut = &d[..14 + 20 + 20 + 2 + 6];
    let Decoded::Tcp(s) = decode_packet(LinkType::ETHERNET, cut, orig, 0) else {
        panic!()
    };
    assert!(s.options.truncated);
    assert_eq!(s.options.timestamp, None);
    assert_eq!(s.payload_len, 1448);
    // SYN cut after the MSS option: MSS kept, the rest lost.
    let d = hex(&format!("{ETH_V4} {IP4_60} {TCP_SYN}"));
    let Decoded::Tcp(s) = decode_packet(LinkType::ETHERNET, &d[..14 + 20 + 20 + 4 + 1], 74, 0)
    else {
        panic!()
    };
    assert_eq!(s.options.mss, Some(1460));
    assert!(s.options.truncated && !s.options.sack_permitted);
}

#[test]
fn gso_total_length_zero_uses_wire_length() {
    // IPv4 total length 0 (Linux GSO), 65226 bytes on the wire, 128 captured.
    let mut d = hex(&format!(
        "{ETH_V4} 4500 0000 0003 4000 4006 0000 0a000001 0a000002
         9c40 0050 000003e9 000007d1 8010 01f5 0000 0000 0101 080a 00000065 000000c8"
    ));
    d.resize(128, 0xab);
    let orig = 14 + 20 + 32 + 65160;
    let Decoded::Tcp(s) = decode_packet(LinkType::ETHERNET, &d, orig, 0) else {
        panic!()
    };
    assert_eq!(s.payload_len, 65160);
    assert!(s.payload_truncated);
    // A GRO-merged giant with a real total length above the MSS is taken as is.
    let mut g = d.clone();
    g[16..18].copy_from_slice(&(20u16 + 32 + 43440).to_be_bytes());
    let Decoded::Tcp(s) = decode_packet(LinkType::ETHERNET, &g, 14 + 20 + 32 + 43440, 0) else {
        panic!()
    };
    assert_eq!(s.payload_len, 43440);
    // IPv6 payload length 0 without a jumbo option (BIG TCP): length from the wire.
    let mut v6 = hex(
        "6000 0000 0000 06 40 20010db8000000000000000000000001 20010db8000000000000000000000002
         9c40 0050 000003e9 000007d1 5010 01f5 0000 0000",
    );
    v6.resize(128, 0);
    let Decoded::Tcp(s) = decode_packet(LinkType::RAW, &v6, 40 + 20 + 150_000, 0) else {
        panic!()
    };
    assert_eq!(s.payload_len, 150_000);
}

#[test]
fn ipv6_jumbogram_option() {
    // Payload length 0 + hop-by-hop jumbo payload option (C2, len 4, 100028 = 0x186bc).
    let mut d = hex(
        "6000 0000 0000 00 40 20010db8000000000000000000000001 20010db8000000000000000000000002
         0600 c204 000186bc  9c40 0050 000003e9 000007d1 5010 01f5 0000 0000",
    );
    d.resize(200, 0);
    let Decoded::Tcp(s) = decode_packet(LinkType::RAW, &d, 40 + 100_028, 0) else {
        panic!()
    };
    assert_eq!(s.payload_len, 100_028 - 8 - 20);
}

#[test]
fn sack_blocks_one_to_four() {
    // NOP NOP SACK with 1..4 blocks; the 4-block form fills all 36 bytes of room (+ 2 NOPs).
    for n in 1..=4usize {
        let mut opts = vec![1u8, 1, 5, (2 + 8 * n) as u8];
        for k in 0..n as u32 {
            opts.extend_from_slice(&(5000 + 1000 * k).to_be_bytes());
            opts.extend_from_slice(&(5500 + 1000 * k).to_be_bytes());
        }
        let o = parse_options(&opts);
        assert_eq!(o.sack_count as usize, n);
        assert_eq!(
            o.sack_blocks()[n - 1],
            SackBlock {
                left: 5000 + 1000 * (n as u32 - 1),
                right: 5500 + 1000 * (n as u32 - 1)
            }
        );
        assert!(!o.truncated);
    }
    // TS + 3 SACK blocks (a typical Linux SACK ACK): 01 01 08 0a … 01 01 05 1a …
    let o = parse_options(&hex(
        "0101080a 0000000a 00000014 0101051a 00001388 0000157c 00001770 00001964 00001b58 00001d4c",
    ));
    assert_eq!(o.timestamp, Some((10, 20)));
    assert_eq!(o.sack_count, 3);
    assert_eq!(
        o.sack[0],
        SackBlock {
            left: 5000,
            right: 5500
        }
    );
    assert_eq!(
        o.sack[2],
        SackBlock {
            left: 7000,
            right: 7500
        }
    );
}

#[test]
fn mptcp_options() {
    // MP_CAPABLE v1 on a SYN: kind 30, len 4, subtype 0 / version 1, flags 0x81.
    let o = parse_options(&hex("1e04 0181"));
    let m = o.mptcp.unwrap();
    assert_eq!(
        (m.subtype, m.flags, m.len, m.body()),
        (0, 1, 4, &[0x81u8][..])
    );
    // DSS with 8-byte data ACK and 8-byte DSN mapping + checksum: len 28, flags A a M m.
    let o = parse_options(&hex(
        "1e1c 200f 0000000000000064 00000000000003e8 00000001 05a8 abcd",
    ));
    let m = o.mptcp.unwrap();
    assert_eq!((m.subtype, m.len), (2, 28));
    assert_eq!(m.body().len(), 25);
    assert_eq!(m.body()[0], 0x0f);
    assert_eq!(&m.body()[21..25], &[0x05, 0xa8, 0xab, 0xcd]);
    assert_eq!(o.mptcp_count, 1);
    // DSS (len 8, data ACK only) followed by MP_PRIO (len 3): first kept, both counted.
    let o = parse_options(&hex("1e08 2001 000003e8 1e03 5001"));
    assert_eq!(o.mptcp.unwrap().subtype, 2);
    assert_eq!(o.mptcp_count, 2);
}

/// The first MPTCP option of `hex` options, decoded.
fn mptcp(h: &str) -> Result<Mptcp, MptcpMalformed> {
    parse_options(&hex(h)).mptcp.expect("an MPTCP option").decode()
}

#[test]
fn mp_capable_v1_v0_decoding() {
    // v1 SYN (len 4): version 1, checksum-required flag A, no key.
    assert_eq!(
        mptcp("1e04 0181"),
        Ok(Mptcp::Capable { version: 1, checksum_required: true, sender_key: None, receiver_key: None, data_len: None })
    );
    // SYN-ACK (len 12): the sender's key.
    assert_eq!(
        mptcp("1e0c 0101 0123456789abcdef"),
        Ok(Mptcp::Capable { version: 1, checksum_required: false, sender_key: Some(0x0123456789abcdef), receiver_key: None, data_len: None })
    );
    // third ACK (len 20): both keys; first data (len 22): and the data-level length.
    assert_eq!(
        mptcp("1e16 0101 0000000000000001 0000000000000002 05a8"),
        Ok(Mptcp::Capable { version: 1, checksum_required: false, sender_key: Some(1), receiver_key: Some(2), data_len: Some(1448) })
    );
    // v0 SYN (RFC 6824): len 12 with the key, version nibble 0.
    assert_eq!(
        mptcp("1e0c 0081 00000000000000ff"),
        Ok(Mptcp::Capable { version: 0, checksum_required: true, sender_key: Some(255), receiver_key: None, data_len: None })
    );
    for bad in ["1e05 0181 00", "1e0d 0101 0123456789abcdef00", "1e13 0101 00000000000000010000000000000002"] {
        assert_eq!(mptcp(bad), Err(MptcpMalformed::CapableLen), "{bad}");
    }
}

#[test]
fn mp_join_decoding() {
    // SYN (len 12): backup flag, address id 2, token, nonce.
    assert_eq!(mptcp("1e0c 1102 deadbeef 11223344"), Ok(Mptcp::Join { backup: true, address_id: Some(2), token: Some(0xdeadbeef) }));
    // SYN-ACK (len 16): address id, truncated HMAC, nonce; no token.
    assert_eq!(
        mptcp("1e10 1003 0102030405060708 0a0b0c0d"),
        Ok(Mptcp::Join { backup: false, address_id: Some(3), token: None })
    );
    // third ACK (len 24): the full HMAC only.
    assert_eq!(
        mptcp(&format!("1e18 1000 {}", "ab".repeat(20))),
        Ok(Mptcp::Join { backup: false, address_id: None, token: None })
    );
    assert_eq!(mptcp("1e0b 1102 deadbeef 112233"), Err(MptcpMalformed::JoinLen));
}

#[test]
fn dss_decoding() {
    // 8-byte data ACK, 8-byte DSN, subflow seq, data-level length, checksum: len 28.
    assert_eq!(
        mptcp("1e1c 200f 0000000000000064 00000000000003e8 00000001 05a8 abcd"),
        Ok(Mptcp::Dss {
            data_ack: Some((100, true)),
            mapping: Some(DssMapping { dsn: 1000, dsn64: true, subflow_seq: 1, data_len: 1448, checksum: Some(0xabcd) }),
            data_fin: false
        })
    );
    // 4-byte data ACK and 4-byte DSN, no checksum, DATA_FIN: len 18 (flags F M A).
    assert_eq!(
        mptcp("1e12 2015 0000000a 00000014 00000005 0001"),
        Ok(Mptcp::Dss {
            data_ack: Some((10, false)),
            mapping: Some(DssMapping { dsn: 20, dsn64: false, subflow_seq: 5, data_len: 1, checksum: None }),
            data_fin: true
        })
    );
    // data ACK only (len 8), and the infinite mapping (data-level length 0).
    assert_eq!(mptcp("1e08 2001 000003e8"), Ok(Mptcp::Dss { data_ack: Some((1000, false)), mapping: None, data_fin: false }));
    match mptcp("1e0e 2004 00000001 00000000 0000") {
        Ok(Mptcp::Dss { mapping: Some(m), .. }) => assert_eq!(m.data_len, 0),
        other => panic!("{other:?}"),
    }
    // lengths that contradict the flags: too short for an 8-byte ACK, one byte too long,
    // a checksum's two bytes without a mapping
    for bad in ["1e08 2003 00000001", "1e09 2001 00000001 00", "1e0a 2001 00000001 0000", "1e03 20"] {
        assert_eq!(mptcp(bad), Err(MptcpMalformed::DssLen), "{bad}");
    }
}

#[test]
fn add_remove_addr_prio_fail_fastclose_decoding() {
    // ADD_ADDR v1 IPv4 with HMAC (len 16), with port and HMAC (18), echo (8)
    let v4: IpAddr = "10.31.2.2".parse().unwrap();
    assert_eq!(mptcp("1e10 3002 0a1f0202 0102030405060708"), Ok(Mptcp::AddAddr { echo: false, address_id: 2, addr: v4, port: None }));
    assert_eq!(mptcp("1e12 3002 0a1f0202 1451 0102030405060708"), Ok(Mptcp::AddAddr { echo: false, address_id: 2, addr: v4, port: Some(5201) }));
    assert_eq!(mptcp("1e08 3102 0a1f0202"), Ok(Mptcp::AddAddr { echo: true, address_id: 2, addr: v4, port: None }));
    // IPv6 with HMAC (len 28); v0 IPv4 (nibble = IP version 4, len 8)
    let v6: IpAddr = "fd00::1".parse().unwrap();
    assert_eq!(
        mptcp("1e1c 3005 fd000000000000000000000000000001 0102030405060708"),
        Ok(Mptcp::AddAddr { echo: false, address_id: 5, addr: v6, port: None })
    );
    assert_eq!(mptcp("1e08 3401 0a1f0202"), Ok(Mptcp::AddAddr { echo: false, address_id: 1, addr: v4, port: None }));
    assert_eq!(mptcp("1e0b 3002 0a1f0202 010203"), Err(MptcpMalformed::AddAddrLen));
    // REMOVE_ADDR with two ids; none is malformed
    assert_eq!(mptcp("1e05 4002 03"), Ok(Mptcp::RemoveAddr { count: 2 }));
    assert_eq!(mptcp("1e03 40"), Err(MptcpMalformed::RemoveAddrLen));
    // MP_PRIO v1 (len 3) and v0 (len 4, address id)
    assert_eq!(mptcp("1e03 51"), Ok(Mptcp::Prio { backup: true, address_id: None }));
    assert_eq!(mptcp("1e04 5007"), Ok(Mptcp::Prio { backup: false, address_id: Some(7) }));
    assert_eq!(mptcp("1e05 5007 00"), Err(MptcpMalformed::PrioLen));
    // MP_FAIL and MP_FASTCLOSE (len 12), MP_TCPRST (len 4)
    assert_eq!(mptcp("1e0c 6000 0000000000001000"), Ok(Mptcp::Fail { dsn: 4096 }));
    assert_eq!(mptcp("1e0b 6000 00000000000010"), Err(MptcpMalformed::FailLen));
    assert_eq!(mptcp("1e0c 7000 0123456789abcdef"), Ok(Mptcp::FastClose { receiver_key: 0x0123456789abcdef }));
    assert_eq!(mptcp("1e0d 7000 0123456789abcdef00"), Err(MptcpMalformed::FastCloseLen));
    assert_eq!(mptcp("1e04 8001"), Ok(Mptcp::TcpRst { reason: 1 }));
    assert_eq!(mptcp("1e05 8001 00"), Err(MptcpMalformed::TcpRstLen));
}

#[test]
fn mptcp_options_after_the_first_are_noted() {
    // DSS then MP_PRIO (backup) then ADD_ADDR: subtype bits and the backup flag
    let o = parse_options(&hex("1e08 2001 000003e8 1e03 5101 1e08 3102 0a1f0202"));
    assert_eq!(o.mptcp_count, 3);
    assert_eq!(o.mptcp_more, (1 << 5) | (1 << 3));
    assert!(o.mptcp_more_backup);
    // a second option with a length its subtype does not allow: bit 15
    let o = parse_options(&hex("1e08 2001 000003e8 1e05 500000"));
    assert_eq!(o.mptcp_more, 1 << 15);
}

#[test]
fn unknown_and_broken_options() {
    // TFO cookie (kind 34, len 10) is skipped by length, then TS decodes.
    let o = parse_options(&hex("220a 0102030405060708 080a 00000001 00000002"));
    assert_eq!(o.timestamp, Some((1, 2)));
    assert!(!o.truncated);
    // MSS with a wrong length (3) is skipped like an unknown option.
    let o = parse_options(&hex("0203 05 0402"));
    assert_eq!(o.mss, None);
    assert!(o.sack_permitted);
    // Length 0 would loop forever: decoding stops, marked truncated.
    let o = parse_options(&hex("0204 05b4 0800 0000"));
    assert_eq!(o.mss, Some(1460));
    assert!(o.truncated);
    // Length beyond the end.
    assert!(parse_options(&hex("080a 0000")).truncated);
    // Kind with no length byte.
    assert!(parse_options(&hex("0101 08")).truncated);
    // EOL stops; what follows is padding.
    let o = parse_options(&hex("0402 00 0204 05b4"));
    assert!(o.sack_permitted && o.mss.is_none() && !o.truncated);
}

#[test]
fn malformed_names_are_unique_snake_case() {
    let mut names: Vec<_> = MalformedReason::ALL.iter().map(|r| r.name()).collect();
    assert!(names.iter().all(|n| n
        .chars()
        .all(|c| c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit())));
    names.sort();
    names.dedup();
    assert_eq!(names.len(), MalformedReason::ALL.len());
}

/// xorshift64*: deterministic pseudo-random numbers without a dependency.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

/// A segment already in the batch when `decode_append` runs.
fn earlier_segment() -> Segment {
    Segment { ts: -1, ..tcp(LinkType::RAW, &syn_v4()) }
}

#[test]
fn random_mutations_never_panic() {
    let seeds: Vec<(LinkType, Vec<u8>)> = vec![
        (
            LinkType::ETHERNET,
            hex(&format!("{ETH_V4} {IP4_60} {TCP_SYN}")),
        ),
        (LinkType::ETHERNET, [hex(ETH_V6), ipv6_syn()].concat()),
        (
            LinkType::LINUX_SLL,
            hex(&format!(
                "0004 0001 0006 020000000001 0000 0800 {IP4_60} {TCP_SYN}"
            )),
        ),
        (
            LinkType::LINUX_SLL2,
            hex("86dd 0000 00000002 0001 00 06 0200000000010000")
                .into_iter()
                .chain(ipv6_syn())
                .collect(),
        ),
        (LinkType::RAW, ipv6_syn()),
        (LinkType::NULL, [hex("02000000"), syn_v4()].concat()),
        (
            LinkType::ETHERNET,
            hex(&format!(
                "020000000002 020000000001 88a8 000a 8100 0064 0800 {IP4_60} {TCP_SYN}"
            )),
        ),
        (
            LinkType::RAW,
            hex(&format!(
            "6000 0000 0038 00 40 20010db8000000000000000000000001 20010db8000000000000000000000002
             3c00 0104 00000000  0600 0104 00000000 {TCP_SYN}")),
        ),
        // Tunnels (tunnel.rs): GTP-U, VXLAN, GRE with ERSPAN II, Geneve, an MPLS pseudowire.
        (
            LinkType::ETHERNET,
            hex(&format!("{ETH_V4} 4500 0060 0001 0000 4011 0000 c0000201 c00002fe
                 0868 0868 004c 0000  30ff 003c 00000001 {IP4_60} {TCP_SYN}")),
        ),
        (
            LinkType::ETHERNET,
            hex(&format!("{ETH_V4} 4500 006e 0001 0000 4011 0000 c0000201 c00002fe
                 c350 12b5 005a 0000  08000000 00138900 {ETH_V4} {IP4_60} {TCP_SYN}")),
        ),
        (
            LinkType::ETHERNET,
            hex(&format!("{ETH_V4} 4500 006e 0001 0000 402f 0000 c0000201 c00002fe
                 1000 88be 00000009 1000 0155 00000000 {ETH_V4} {IP4_60} {TCP_SYN}")),
        ),
        (
            LinkType::ETHERNET,
            hex(&format!("{ETH_V4} 4500 0060 0001 0000 4011 0000 c0000201 c00002fe
                 c350 17c1 004c 0000  0000 0800 00004d00 {IP4_60} {TCP_SYN}")),
        ),
        (
            LinkType::ETHERNET,
            hex(&format!("020000000002 020000000001 8847 000111ff 00000000 {ETH_V4} {IP4_60} {TCP_SYN}")),
        ),
    ];
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut tcp_n, mut other) = (0u32, 0u32);
    for round in 0..200_000 {
        let (lt, base) = &seeds[round % seeds.len()];
        let mut d = base.clone();
        for _ in 0..1 + rng.below(6) {
            match rng.below(4) {
                0 => {
                    let i = rng.below(d.len());
                    d[i] = rng.next() as u8;
                }
                1 => d.truncate(rng.below(d.len() + 1)),
                2 => {
                    let i = rng.below(d.len() + 1);
                    d.insert(i, rng.next() as u8);
                }
                _ => {
                    // Flip a length-ish field to an extreme.
                    let i = rng.below(d.len().max(1));
                    if i < d.len() {
                        d[i] = if rng.below(2) == 0 { 0 } else { 0xff };
                    }
                }
            }
            if d.is_empty() {
                break;
            }
        }
        let orig = (d.len() + rng.below(70_000)) as u32;
        // The in-place path the capture reader uses gives the same answer, appends exactly
        // the segment on TCP and leaves the batch alone otherwise.
        let frame = crate::capture::Frame { ts: 0, linktype: *lt, data: &d, orig_len: orig, offset: 0, iface: 0, index: 0 };
        let mut batch = vec![earlier_segment()];
        let appended = decode_append(&frame, &mut batch, &mut Outers::default());
        match (decode_packet(*lt, &d, orig, 0), appended) {
            (Decoded::Tcp(s), Ok(())) => assert_eq!(&batch[..], &[earlier_segment(), s][..]),
            (other, Err(stop)) => assert_eq!((other, batch.len()), (Decoded::from(stop), 1)),
            (a, b) => panic!("decode gave {a:?}, decode_append {b:?}"),
        }
        match decode_packet(*lt, &d, orig, 0) {
            Decoded::Tcp(s) => {
                tcp_n += 1;
                assert!(s.options.sack_count <= 4);
                // The payload can never exceed what the IP header (or the wire) allows.
                assert!(s.payload_len as usize <= orig.max(d.len() as u32) as usize);
            }
            _ => other += 1,
        }
    }
    // The mutations must exercise both outcomes, or this test proves nothing.
    assert!(
        tcp_n > 10_000 && other > 10_000,
        "tcp {tcp_n} other {other}"
    );
}

#[test]
fn mptcp_decoding_never_panics_on_any_length_subtype_and_flags() {
    // Every subtype and low nibble, every length an option area allows, two byte patterns:
    // a value or a malformed reason, and `length_ok` agrees with the decoder.
    for subtype in 0..16u8 {
        for nibble in 0..16u8 {
            for len in 3..=40usize {
                for fill in [0x00u8, 0xff, 0x0f] {
                    let mut o = vec![30, len as u8, (subtype << 4) | nibble];
                    o.extend(std::iter::repeat(fill).take(len - 3));
                    let m = parse_options(&o).mptcp.expect("an MPTCP option");
                    let r = m.decode();
                    if subtype <= 8 && len <= 35 {
                        let dss_flags = o.get(3).copied().unwrap_or(0);
                        assert_eq!(r.is_ok(), super::mptcp::length_ok(subtype, nibble, len as u8, dss_flags), "{o:02x?}");
                    }
                }
            }
        }
    }
}
