//! Tunnel decoder tests: one inner TCP packet wrapped, layer by layer, as each
//! specification lays the headers out (built here, not taken from the decoder), then the
//! malformed and non-TCP cases of each encapsulation.

use std::net::IpAddr;

use super::*;
use crate::wire::{decode_packet, decode_packet_outer, Decoded};

const UE: [u8; 4] = [10, 45, 0, 7];
const SRV: [u8; 4] = [203, 0, 113, 9];
const ENB: [u8; 4] = [192, 0, 2, 1];
const SGW: [u8; 4] = [192, 0, 2, 254];

fn ip(a: [u8; 4]) -> IpAddr {
    IpAddr::from(a)
}

/// IPv4 header (no options) around `payload`.
fn ipv4(proto: u8, src: [u8; 4], dst: [u8; 4], payload: &[u8]) -> Vec<u8> {
    let total = (20 + payload.len()) as u16;
    let mut v = vec![0x45, 0, 0, 0, 0x12, 0x34, 0x40, 0, 64, proto, 0, 0];
    v[2..4].copy_from_slice(&total.to_be_bytes());
    v.extend(src);
    v.extend(dst);
    v.extend(payload);
    v
}

/// IPv6 header (2001:db8::1 -> 2001:db8::2) around `payload`.
fn ipv6(next: u8, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![0x60, 0, 0, 0];
    v.extend((payload.len() as u16).to_be_bytes());
    v.extend([next, 64]);
    v.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
    v.extend([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 2]);
    v.extend(payload);
    v
}

/// The inner packet: UE:40000 -> server:443, ACK with 100 bytes, NOP NOP TS options.
fn inner() -> Vec<u8> {
    let mut t = vec![0x9c, 0x40, 0x01, 0xbb, 0, 0, 0x10, 0, 0, 0, 0x20, 0, 0x80, 0x10, 0x01, 0xf5, 0, 0, 0, 0];
    t.extend([1, 1, 8, 10, 0, 0, 0, 5, 0, 0, 0, 6]);
    t.extend([0xab; 100]);
    ipv4(6, UE, SRV, &t)
}

fn udp(sport: u16, dport: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    v.extend(sport.to_be_bytes());
    v.extend(dport.to_be_bytes());
    v.extend(((8 + payload.len()) as u16).to_be_bytes());
    v.extend([0, 0]);
    v.extend(payload);
    v
}

fn eth(ethertype: u16, payload: &[u8]) -> Vec<u8> {
    let mut v = vec![2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1];
    v.extend(ethertype.to_be_bytes());
    v.extend(payload);
    v
}

/// GTP-U G-PDU with TEID `teid`; `ext`: extension headers (content without length and
/// next-type bytes, a multiple of 4 minus 2 long), which set the E flag.
fn gtpu(teid: u32, ext: &[(u8, Vec<u8>)], payload: &[u8]) -> Vec<u8> {
    let mut opt = Vec::new();
    if !ext.is_empty() {
        opt.extend([0, 7, 0, ext[0].0]); // sequence, N-PDU, first extension's type
        for (i, (_, content)) in ext.iter().enumerate() {
            assert_eq!((content.len() + 2) % 4, 0);
            opt.push(((content.len() + 2) / 4) as u8);
            opt.extend(content);
            opt.push(ext.get(i + 1).map_or(0, |e| e.0));
        }
    }
    let flags = 0x30 | if ext.is_empty() { 0 } else { 0x04 };
    let mut v = vec![flags, 0xff];
    v.extend(((opt.len() + payload.len()) as u16).to_be_bytes());
    v.extend(teid.to_be_bytes());
    v.extend(opt);
    v.extend(payload);
    v
}

fn gtpu_frame(teid: u32, ext: &[(u8, Vec<u8>)], payload: &[u8]) -> Vec<u8> {
    eth(0x0800, &ipv4(17, ENB, SGW, &udp(2152, 2152, &gtpu(teid, ext, payload))))
}

fn decoded(lt: LinkType, f: &[u8]) -> (Segment, Option<Outer>) {
    match decode_packet_outer(lt, f, f.len() as u32, 5) {
        (Decoded::Tcp(s), o) => (s, o),
        other => panic!("expected TCP, got {other:?}"),
    }
}

/// The inner segment as a plain raw-IP capture decodes it.
fn plain() -> Segment {
    let (s, o) = decoded(LinkType::RAW, &inner());
    assert!(o.is_none() && s.outer == 0);
    s
}

/// `f` decodes to the plain inner segment (but for `outer`), wrapped as `chain`.
fn check(lt: LinkType, f: &[u8], chain: &str) -> Outer {
    let (s, o) = decoded(lt, f);
    assert_eq!(Segment { outer: 0, ..s }, plain(), "{chain}");
    assert_ne!(s.outer, 0);
    let o = o.expect("an encapsulation");
    assert_eq!(o.chain_name(), chain);
    o
}

/// Malformed reason of a frame cut by a snaplen from a long packet (so that headers cut by
/// the capture are not mistaken for lying length fields).
fn reason(lt: LinkType, f: &[u8]) -> &'static str {
    match decode_packet(lt, f, 70_000, 0) {
        Decoded::Malformed(r) => r.name(),
        other => panic!("expected malformed, got {other:?}"),
    }
}

#[test]
fn gtpu_with_and_without_extension_headers() {
    let o = check(LinkType::ETHERNET, &gtpu_frame(0xdeadbeef, &[], &inner()), "gtpu");
    assert_eq!((o.src(), o.dst(), o.id()), (Some(ip(ENB)), Some(ip(SGW)), Some(0xdeadbeef)));
    // PDU session container (0x85, 5G N3: QFI) then a PDCP PDU number (0xc0).
    let ext = [(0x85, vec![0x10, 0x09]), (0xc0, vec![0x01, 0x02, 0x00, 0x00, 0x00, 0x00])];
    let o = check(LinkType::ETHERNET, &gtpu_frame(7, &ext, &inner()), "gtpu");
    assert_eq!(o.id(), Some(7));
    // Only the S flag (sequence number): the 4 optional bytes, no extension.
    let mut g = gtpu(9, &[], &[&[0, 1, 0, 0][..], &inner()].concat());
    g[0] |= 0x02;
    check(LinkType::RAW, &ipv4(17, ENB, SGW, &udp(2152, 2152, &g)), "gtpu");
    // Over IPv6 transport.
    let o = check(LinkType::RAW, &ipv6(17, &udp(2152, 2152, &gtpu(3, &[], &inner()))), "gtpu");
    assert_eq!(o.src(), Some("2001:db8::1".parse().unwrap()));
}

#[test]
fn gtpu_signalling_and_non_ip_payloads_are_other_protocols() {
    let mut echo = gtpu(0, &[], &[0, 0, 0, 0]);
    echo[1] = 1; // echo request
    let f = eth(0x0800, &ipv4(17, ENB, SGW, &udp(2152, 2152, &echo)));
    assert_eq!(decode_packet(LinkType::ETHERNET, &f, f.len() as u32, 0), Decoded::NotTcp);
    // An Ethernet PDU session's frame starts with a MAC address, not an IP version.
    let f = gtpu_frame(1, &[], &eth(0x0800, &inner()));
    assert_eq!(decode_packet(LinkType::ETHERNET, &f, f.len() as u32, 0), Decoded::NotTcp);
    // UDP on other ports stays UDP.
    let f = eth(0x0800, &ipv4(17, ENB, SGW, &udp(53, 2153, &gtpu(1, &[], &inner()))));
    assert_eq!(decode_packet(LinkType::ETHERNET, &f, f.len() as u32, 0), Decoded::NotTcp);
}

#[test]
fn gtpu_malformed() {
    let f = gtpu_frame(1, &[], &inner());
    let g = 14 + 20 + 8;
    // Cut inside the mandatory header.
    assert_eq!(reason(LinkType::ETHERNET, &f[..g + 5]), "gtpu_truncated");
    // Version 2 (GTP-C) or protocol type 0 (GTP') on the user plane port.
    let mut v2 = f.clone();
    v2[g] = 0x50;
    assert_eq!(reason(LinkType::ETHERNET, &v2), "gtpu_bad_header");
    let mut pt0 = f.clone();
    pt0[g] = 0x20;
    assert_eq!(reason(LinkType::ETHERNET, &pt0), "gtpu_bad_header");
    // An extension header of length 0 would never end.
    let mut z = gtpu_frame(1, &[(0x85, vec![0x10, 0x09])], &inner());
    z[g + 12] = 0;
    assert_eq!(reason(LinkType::ETHERNET, &z), "gtpu_bad_header");
    // Extension headers cut by the capture.
    let e = gtpu_frame(1, &[(0x85, vec![0x10, 0x09])], &inner());
    assert_eq!(reason(LinkType::ETHERNET, &e[..g + 14]), "gtpu_truncated");
    // GTP's length shorter than the inner packet: the user packet exceeds its tunnel.
    let mut short = f.clone();
    short[g + 3] -= 10;
    assert_eq!(reason(LinkType::ETHERNET, &short), "ip_len_exceeds_frame");
}

#[test]
fn vxlan_geneve_and_their_malformed_headers() {
    let vx = |flags: u8, vni: u32| {
        let mut h = vec![flags, 0, 0, 0];
        h.extend((vni << 8).to_be_bytes());
        h.extend(eth(0x0800, &inner()));
        eth(0x0800, &ipv4(17, ENB, SGW, &udp(51000, 4789, &h)))
    };
    let o = check(LinkType::ETHERNET, &vx(0x08, 5001), "vxlan");
    assert_eq!((o.id(), o.src()), (Some(5001), Some(ip(ENB))));
    assert_eq!(reason(LinkType::ETHERNET, &vx(0x00, 5001)), "vxlan_bad_header");
    assert_eq!(reason(LinkType::ETHERNET, &vx(0x08, 1)[..14 + 28 + 6]), "vxlan_truncated");
    // Geneve: 8 bytes of options (2 units), Ethernet inside; then IPv4 directly.
    let gen = |ver_opt: u8, proto: u16, opts: &[u8], payload: &[u8]| {
        let mut h = vec![ver_opt, 0];
        h.extend(proto.to_be_bytes());
        h.extend((77u32 << 8).to_be_bytes());
        h.extend(opts);
        h.extend(payload);
        eth(0x0800, &ipv4(17, ENB, SGW, &udp(51000, 6081, &h)))
    };
    let o = check(LinkType::ETHERNET, &gen(2, 0x6558, &[0x01, 0x02, 0x80, 0x01, 0, 0, 0, 0], &eth(0x0800, &inner())), "geneve");
    assert_eq!(o.id(), Some(77));
    check(LinkType::ETHERNET, &gen(0, 0x0800, &[], &inner()), "geneve");
    assert_eq!(reason(LinkType::ETHERNET, &gen(0x40, 0x0800, &[], &inner())), "geneve_bad_header");
    let cut = gen(2, 0x6558, &[0x01, 0x02, 0x80, 0x01, 0, 0, 0, 0], &[]);
    assert_eq!(reason(LinkType::ETHERNET, &cut[..cut.len() - 3]), "geneve_truncated");
}

fn gre(flags: u16, proto: u16, fields: &[u8], payload: &[u8]) -> Vec<u8> {
    let mut g = Vec::new();
    g.extend(flags.to_be_bytes());
    g.extend(proto.to_be_bytes());
    g.extend(fields);
    g.extend(payload);
    eth(0x0800, &ipv4(47, ENB, SGW, &g))
}

#[test]
fn gre_keys_erspan_and_pptp() {
    // Plain GRE carrying IPv4, then with checksum, key and sequence number.
    let o = check(LinkType::ETHERNET, &gre(0, 0x0800, &[], &inner()), "gre");
    assert_eq!((o.id(), o.dst()), (None, Some(ip(SGW))));
    let o = check(LinkType::ETHERNET, &gre(0xb000, 0x0800, &[0, 0, 0, 0, 0, 0, 0x30, 0x39, 0, 0, 0, 1], &inner()), "gre");
    assert_eq!(o.id(), Some(12345));
    // Transparent Ethernet bridging (NVGRE-like).
    check(LinkType::ETHERNET, &gre(0x2000, 0x6558, &[0, 0, 1, 0], &eth(0x0800, &inner())), "gre");
    // ERSPAN type II: sequence number, then ver 1, VLAN, session 0x155, index.
    let e2 = [0u8, 0, 0, 9, 0x10, 0x00, 0x01, 0x55, 0, 0, 0, 0];
    let o = check(LinkType::ETHERNET, &gre(0x1000, 0x88be, &e2, &eth(0x0800, &inner())), "gre/erspan");
    assert_eq!(o.id(), Some(0x155));
    // ERSPAN type I: no sequence number, no ERSPAN header.
    check(LinkType::ETHERNET, &gre(0, 0x88be, &[], &eth(0x0800, &inner())), "gre/erspan");
    // ERSPAN type III with the platform-specific subheader (O bit).
    let mut e3 = vec![0u8, 0, 0, 9, 0x20, 0x00, 0x00, 0x2a, 1, 2, 3, 4, 0, 0, 0, 1];
    e3.extend([0; 8]);
    let o = check(LinkType::ETHERNET, &gre(0x1000, 0x22eb, &e3, &eth(0x0800, &inner())), "gre/erspan");
    assert_eq!(o.id(), Some(0x2a));
    // PPTP's enhanced GRE (version 1, key = payload length + call id) carrying PPP.
    let o = check(LinkType::ETHERNET, &gre(0x2001, 0x880b, &[0, 64, 0x12, 0x34], &[&[0xff, 0x03, 0x00, 0x21][..], &inner()].concat()), "gre/ppp");
    assert_eq!(o.id(), Some(0x1234));
    // WCCP redirection, version 2 (a 4-byte redirect header) and version 1 (none).
    check(LinkType::ETHERNET, &gre(0, 0x883e, &[0x00, 0x00, 0x00, 0x00], &inner()), "gre");
    check(LinkType::ETHERNET, &gre(0, 0x883e, &[], &inner()), "gre");
    // MPLS inside GRE.
    let o = check(LinkType::ETHERNET, &gre(0, 0x8847, &[0x00, 0x06, 0x41, 0xff], &inner()), "gre/mpls");
    assert_eq!(o.labels(), &[100]);
}

#[test]
fn gre_and_erspan_malformed() {
    assert_eq!(reason(LinkType::ETHERNET, &gre(0x4000, 0x0800, &[0; 8], &inner())), "gre_bad_header");
    assert_eq!(reason(LinkType::ETHERNET, &gre(0x0002, 0x0800, &[], &inner())), "gre_bad_header");
    // PPTP without its key.
    assert_eq!(reason(LinkType::ETHERNET, &gre(0x0001, 0x880b, &[], &inner())), "gre_bad_header");
    let k = gre(0x2000, 0x0800, &[0, 0, 0, 1], &inner());
    assert_eq!(reason(LinkType::ETHERNET, &k[..14 + 20 + 6]), "gre_truncated");
    let e2 = [0u8, 0, 0, 9, 0x20, 0x00, 0x01, 0x55, 0, 0, 0, 0];
    assert_eq!(reason(LinkType::ETHERNET, &gre(0x1000, 0x88be, &e2, &eth(0x0800, &inner()))), "erspan_bad_header");
    assert_eq!(reason(LinkType::ETHERNET, &gre(0x1000, 0x88be, &e2[..6], &[])), "erspan_truncated");
}

#[test]
fn ip_in_ip_6in4_and_nesting_depth() {
    let o = check(LinkType::RAW, &ipv4(4, ENB, SGW, &inner()), "ipip");
    assert_eq!(o.src(), Some(ip(ENB)));
    check(LinkType::RAW, &ipv6(4, &inner()), "4in6");
    // IPv6 inside IPv4 (6in4): the inner segment is IPv6.
    let mut t6 = inner()[20..].to_vec();
    t6.truncate(20 + 12 + 100);
    let v6 = ipv6(6, &t6);
    let (s, o) = decoded(LinkType::RAW, &ipv4(41, ENB, SGW, &v6));
    assert_eq!((o.unwrap().chain_name(), s.dport, s.payload_len), ("6in4".to_string(), 443, 100));
    let (_, o) = decoded(LinkType::RAW, &ipv6(41, &v6));
    assert_eq!(o.unwrap().chain_name(), "6in6");
    // MAX_DEPTH layers open; one more is too deep.
    let mut f = inner();
    for _ in 0..MAX_DEPTH {
        f = ipv4(4, ENB, SGW, &f);
    }
    let o = check(LinkType::RAW, &f, &vec!["ipip"; MAX_DEPTH].join("/"));
    assert_eq!(o.depth(), MAX_DEPTH);
    assert_eq!(reason(LinkType::RAW, &ipv4(4, ENB, SGW, &f)), "tunnel_too_deep");
    // Mixed nesting: GTP-U inside VXLAN inside an MPLS backbone.
    let mut h = vec![0x08, 0, 0, 0, 0, 0, 0x10, 0];
    h.extend(gtpu_frame(42, &[], &inner()));
    let vx = ipv4(17, [198, 51, 100, 1], [198, 51, 100, 2], &udp(1, 4789, &h));
    let f = eth(0x8847, &[&[0x00, 0x01, 0x00, 0x40, 0x00, 0x06, 0x41, 0x40][..], &vx].concat());
    let o = check(LinkType::ETHERNET, &f, "mpls/vxlan/gtpu");
    // The innermost tunnel's outer addresses and identifier; the backbone's labels.
    assert_eq!((o.src(), o.id(), o.labels()), (Some(ip(ENB)), Some(42), &[16, 100][..]));
}

#[test]
fn mpls_pppoe_and_link_types() {
    // Two MPLS labels (16, 17) then IPv4.
    let f = eth(0x8847, &[&[0x00, 0x01, 0x00, 0x40, 0x00, 0x01, 0x11, 0xff][..], &inner()].concat());
    let o = check(LinkType::ETHERNET, &f, "mpls");
    assert_eq!((o.labels(), o.labels_name().as_deref()), (&[16, 17][..], Some("16/17")));
    // A stack of six: four kept, then "...".
    let mut stack = Vec::new();
    for l in 0..6u32 {
        stack.extend(((l + 20) << 12 | if l == 5 { 0x1ff } else { 0xff }).to_be_bytes());
    }
    let o = check(LinkType::ETHERNET, &eth(0x8847, &[&stack[..], &inner()].concat()), "mpls");
    assert_eq!((o.label_count, o.labels_name().as_deref()), (6, Some("20/21/22/23/...")));
    // An Ethernet pseudowire: bottom label, control word (first nibble 0), Ethernet.
    let pw = eth(0x8847, &[&[0x00, 0x01, 0x11, 0xff, 0, 0, 0, 0][..], &eth(0x0800, &inner())].concat());
    check(LinkType::ETHERNET, &pw, "mpls");
    assert_eq!(reason(LinkType::ETHERNET, &pw[..14 + 8 + 6]), "short_link_header");
    // PPPoE session 0x0001: the session is the tunnel's identifier.
    let ppp = [&[0x11, 0x00, 0x00, 0x01, 0x00, 0x3e, 0x00, 0x21][..], &inner()].concat();
    let o = check(LinkType::ETHERNET, &eth(0x8864, &ppp), "pppoe");
    assert_eq!(o.id(), Some(1));
    check(LinkType::PPP_ETHER, &ppp, "pppoe");
    // Cisco HDLC carrying MPLS; PPP in HDLC framing carrying IPv4 (plain: no tunnel).
    check(LinkType::C_HDLC, &[&[0x0f, 0x00, 0x88, 0x47, 0x00, 0x01, 0x11, 0xff][..], &inner()].concat(), "mpls");
    let (s, o) = decoded(LinkType::PPP_HDLC, &[&[0xff, 0x03, 0x00, 0x21][..], &inner()].concat());
    assert_eq!((s.outer, o, s.dport), (0, None, 443));
    // PPP with a compressed (one-byte) protocol field.
    let (s, _) = decoded(LinkType::PPP, &[&[0x21][..], &inner()].concat());
    assert_eq!(s.payload_len, 100);
}

#[test]
fn outer_fragments_and_lengths() {
    // A first outer fragment: the inner packet may go on beyond it.
    let mut f = ipv4(17, ENB, SGW, &udp(2152, 2152, &gtpu(1, &[], &inner())));
    f[6] = 0x20; // MF
    let cut = f.len() - 40;
    let total = (cut as u16).to_be_bytes();
    let mut first = f[..cut].to_vec();
    first[2..4].copy_from_slice(&total);
    let (s, o) = decoded(LinkType::RAW, &first);
    assert!(s.payload_truncated && s.payload_len == 100 && o.is_some());
    // A later fragment carries no header to open: another protocol.
    let mut later = first.clone();
    later[6..8].copy_from_slice(&[0x00, 0x10]);
    assert_eq!(decode_packet(LinkType::RAW, &later, later.len() as u32, 0), Decoded::NotTcp);
    // A UDP length below 8 on a tunnel port.
    let mut bad = gtpu_frame(1, &[], &inner());
    bad[14 + 20 + 4..14 + 20 + 6].copy_from_slice(&[0, 4]);
    assert_eq!(reason(LinkType::ETHERNET, &bad), "udp_bad_length");
    assert_eq!(reason(LinkType::ETHERNET, &gtpu_frame(1, &[], &inner())[..14 + 20 + 6]), "udp_truncated");
}

#[test]
fn registry_ids_and_the_last_packet_shortcut() {
    let table = OuterTable::default();
    let mut outers = Outers::new(table.clone());
    let frames = [gtpu_frame(1, &[], &inner()), gtpu_frame(1, &[], &inner()), gtpu_frame(2, &[], &inner()), gtpu_frame(1, &[], &inner())];
    let mut batch = Vec::new();
    for f in &frames {
        let frame = crate::capture::Frame { ts: 0, linktype: LinkType::ETHERNET, data: f, orig_len: f.len() as u32, offset: 0, iface: 0, index: 0 };
        crate::wire::decode_append(&frame, &mut batch, &mut outers).unwrap();
    }
    let ids: Vec<u32> = batch.iter().map(|s| s.outer).collect();
    assert_eq!(ids, [1, 1, 2, 1]);
    assert_eq!((outers.packets, table.len()), (4, 2));
    assert_eq!(table.get(2).unwrap().id(), Some(2));
    assert_eq!(table.get(0), None);
    // A plain packet registers nothing.
    let f = eth(0x0800, &inner());
    let frame = crate::capture::Frame { ts: 0, linktype: LinkType::ETHERNET, data: &f, orig_len: f.len() as u32, offset: 0, iface: 0, index: 0 };
    crate::wire::decode_append(&frame, &mut batch, &mut outers).unwrap();
    assert_eq!((batch[4].outer, outers.packets), (0, 4));
}

#[test]
fn the_outer_id_fits_in_the_segments_padding() {
    // The hot path copies every segment into its batch: the id must not make it bigger
    // (168 bytes before the field existed). The frame number (the packets table) took the
    // last byte of padding and four more: 176, one word.
    assert_eq!(std::mem::size_of::<Segment>(), 176);
}

#[test]
fn gtpu_fast_path_ids_match_the_general_decoders() {
    // The fast path keys its last two tunnels by outer addresses and TEID; every packet must
    // still get the id the registry gives its full Outer, whichever path decoded it.
    let table = OuterTable::default();
    let mut outers = Outers::new(table.clone());
    let other_enb = eth(0x0800, &ipv4(17, [192, 0, 2, 2], SGW, &udp(2152, 2152, &gtpu(1, &[], &inner()))));
    let with_ext = gtpu_frame(1, &[(0x85, vec![0x00, 0x09])], &inner());
    let frames = [
        gtpu_frame(1, &[], &inner()),
        gtpu_frame(2, &[], &inner()),
        gtpu_frame(1, &[], &inner()),
        gtpu_frame(3, &[], &inner()),
        gtpu_frame(2, &[], &inner()),
        with_ext, // (extension headers: the general decoder; the same Outer as TEID 1's)
        other_enb,
        gtpu_frame(1, &[], &inner()),
    ];
    let mut batch = Vec::new();
    for f in &frames {
        let frame = crate::capture::Frame { ts: 0, linktype: LinkType::ETHERNET, data: f, orig_len: f.len() as u32, offset: 0, iface: 0, index: 0 };
        crate::wire::decode_append(&frame, &mut batch, &mut outers).unwrap();
    }
    let ids: Vec<u32> = batch.iter().map(|s| s.outer).collect();
    assert_eq!(ids, [1, 2, 1, 3, 2, 1, 4, 1]);
    assert_eq!((outers.packets, table.len()), (8, 4));
    let (o1, o4) = (table.get(1).unwrap(), table.get(4).unwrap());
    assert_eq!((o1.chain_name().as_str(), o1.id(), o1.src(), o1.dst()), ("gtpu", Some(1), Some(ip(ENB)), Some(ip(SGW))));
    assert_eq!((o4.id(), o4.src()), (Some(1), Some(ip([192, 0, 2, 2]))));
    // Single-frame decoding (a registry of its own) gives the same Outer.
    assert_eq!(check(LinkType::ETHERNET, &frames[0], "gtpu"), o1);
}
