//! Encapsulations: TCP inside tunnels, as an operator's core (GTP-U on S1-U/N3), a cloud
//! tap (VXLAN, Geneve, GRE, ERSPAN) or a carrier backbone (MPLS) captures it.
//!
//! The hot path (`decode_packet_into`) decodes plain frames; anything it finds not to be TCP
//! comes here ([`decode_slow`], never inlined), is parsed again with the link layer's
//! recorder on, and every encapsulation met on the way to a TCP header is opened and
//! recorded in an [`Outer`]: the chain of encapsulations (outermost first), the IP addresses
//! of the header around the innermost IP-based tunnel, that tunnel's identifier (GTP-U TEID,
//! VXLAN/Geneve VNI, GRE key, ERSPAN session, PPPoE session) and the MPLS labels. The inner
//! 4-tuple identifies the flow; the [`Outer`] goes into the capture's [`Outers`] registry and
//! the segment carries its id (`Segment::outer`).
//!
//! Opened: MPLS label stacks (also Ethernet pseudowires with a control word), PPPoE and PPP
//! (on links, in GRE), IP-in-IP, 6in4, 4in6 and 6in6, GRE (RFC 2784/2890, and version 1 of
//! PPTP, RFC 2637), ERSPAN types I, II and III inside GRE, VXLAN (UDP 4789, RFC 7348),
//! Geneve (UDP 6081, RFC 8926) and GTP-U version 1 G-PDUs (UDP 2152, 3GPP TS 29.281) with
//! their extension headers. The UDP ports are the IANA ones tshark uses by default.
//!
//! At most [`MAX_DEPTH`] encapsulations are opened per frame; a frame nested deeper is
//! malformed (`tunnel_too_deep`). A header that contradicts its protocol, or that the
//! captured bytes cut, is malformed with a reason naming the encapsulation; GTP-U
//! signalling (echo, error indication, end marker), ERSPAN-less GRE payloads other than IP,
//! Ethernet, MPLS and PPP, and later outer fragments are packets of another protocol.
//! Lengths: an inner packet must fit in what its tunnel carried (the outer IP length, the
//! UDP length, GTP-U's own length); a larger inner IP length is `ip_len_exceeds_frame`, as
//! for a plain frame. A first outer fragment lets the inner packet go on beyond it.

use std::mem::MaybeUninit;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};
use std::sync::{Arc, Mutex};

use rustc_hash::FxHashMap;

use super::link::{self, LinkRec, Net};
use super::bytes::{be16, be32};
use super::{ip, mal, tcp, MalformedReason, Segment, Stop};
use crate::capture::{Frame, LinkType};

/// Encapsulations opened around one TCP packet, at most.
pub const MAX_DEPTH: usize = 8;
/// MPLS labels kept per frame (outermost first); deeper ones are counted, not kept.
pub const MAX_LABELS: usize = 4;
/// Distinct [`Outer`]s one capture's registry keeps (about 150 MB). Packets of further
/// ones decode as usual and their flows' tunnel columns stay null (docs/formats/flows.md).
pub const MAX_OUTERS: usize = 1 << 20;
/// `Segment::outer` of a tunneled packet whose [`Outer`] the full registry could not keep.
pub const OUTER_UNKEPT: u32 = u32::MAX;

const GTPU_PORT: u16 = 2152;
const VXLAN_PORT: u16 = 4789;
const GENEVE_PORT: u16 = 6081;

/// One kind of encapsulation. `name()` is stable: it is stored in result tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Encap {
    Mpls = 1,
    Pppoe,
    Ppp,
    Gre,
    Erspan,
    Vxlan,
    Geneve,
    Gtpu,
    /// IPv4 in IPv4 (protocol 4).
    IpIp,
    /// IPv6 in IPv4 (protocol 41).
    SixIn4,
    /// IPv4 in IPv6.
    FourIn6,
    /// IPv6 in IPv6.
    SixIn6,
}

impl Encap {
    const ALL: [Encap; 12] = [
        Encap::Mpls,
        Encap::Pppoe,
        Encap::Ppp,
        Encap::Gre,
        Encap::Erspan,
        Encap::Vxlan,
        Encap::Geneve,
        Encap::Gtpu,
        Encap::IpIp,
        Encap::SixIn4,
        Encap::FourIn6,
        Encap::SixIn6,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Encap::Mpls => "mpls",
            Encap::Pppoe => "pppoe",
            Encap::Ppp => "ppp",
            Encap::Gre => "gre",
            Encap::Erspan => "erspan",
            Encap::Vxlan => "vxlan",
            Encap::Geneve => "geneve",
            Encap::Gtpu => "gtpu",
            Encap::IpIp => "ipip",
            Encap::SixIn4 => "6in4",
            Encap::FourIn6 => "4in6",
            Encap::SixIn6 => "6in6",
        }
    }

    fn from_code(c: u8) -> Option<Encap> {
        Encap::ALL.get((c as usize).wrapping_sub(1)).copied()
    }
}

/// The encapsulation of one packet: what is kept of it per flow. Plain bytes and integers
/// without padding (`repr(C)`, 72 bytes), so that the registry compares a packet's with the
/// previous one's as nine words (the per-packet cost of a tunneled capture).
#[derive(Clone, Copy, Debug, Default)]
#[repr(C, align(8))]
pub struct Outer {
    /// [`Encap`] codes, outermost first; 0 after the last.
    chain: [u8; MAX_DEPTH],
    /// Source then destination of the IP header around the innermost IP-based tunnel (an
    /// IPv4 address in the first 4 bytes of each half); `family` says which (0: none).
    addrs: [u8; 32],
    family: u8,
    depth: u8,
    /// MPLS label stack entries passed (the first [`MAX_LABELS`] are kept).
    pub label_count: u8,
    /// A link-layer encapsulation found the chain full (the decoder then stops).
    too_deep: u8,
    /// The identifier (see [`Outer::id`]) and whether there is one.
    id: u32,
    labels: [u32; MAX_LABELS],
    has_id: u8,
    _pad: [u8; 7],
}

const OUTER_WORDS: usize = 9;
const _: () = assert!(std::mem::size_of::<Outer>() == OUTER_WORDS * 8);

impl Outer {
    #[inline]
    fn words(&self) -> &[u64; OUTER_WORDS] {
        // SAFETY: repr(C), align 8, 72 bytes of integer fields and explicit padding (no
        // implicit padding: the sizes add up to 72, asserted above), all initialised.
        unsafe { &*(self as *const Outer as *const [u64; OUTER_WORDS]) }
    }
}

impl PartialEq for Outer {
    #[inline]
    fn eq(&self, other: &Outer) -> bool {
        // (branch-free over the nine words: a slice comparison calls memcmp)
        let (a, b) = (self.words(), other.words());
        (0..OUTER_WORDS).fold(0, |acc, i| acc | (a[i] ^ b[i])) == 0
    }
}

impl Eq for Outer {}

impl std::hash::Hash for Outer {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        self.words().hash(h)
    }
}

impl Outer {
    /// Identifier of the innermost tunnel that has one: GTP-U TEID, VXLAN/Geneve VNI, GRE
    /// key (PPTP: call id), ERSPAN session id, PPPoE session id.
    pub fn id(&self) -> Option<u32> {
        (self.has_id != 0).then_some(self.id)
    }

    #[inline]
    fn set_id(&mut self, id: u32) {
        self.id = id;
        self.has_id = 1;
    }

    /// The encapsulations, outermost first.
    pub fn chain(&self) -> impl Iterator<Item = Encap> + '_ {
        self.chain.iter().map_while(|&c| Encap::from_code(c))
    }

    pub fn depth(&self) -> usize {
        self.depth as usize
    }

    /// Source of the IP header around the innermost IP-based tunnel.
    pub fn src(&self) -> Option<IpAddr> {
        self.addr(0)
    }

    /// Its destination.
    pub fn dst(&self) -> Option<IpAddr> {
        self.addr(16)
    }

    fn addr(&self, at: usize) -> Option<IpAddr> {
        let a = &self.addrs[at..at + 16];
        match self.family {
            4 => Some(IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3]))),
            6 => Some(IpAddr::V6(Ipv6Addr::from(<[u8; 16]>::try_from(a).expect("16 bytes")))),
            _ => None,
        }
    }

    /// Record the addresses of an IP header (`d`: the header, version 4 or 6, checked).
    fn set_addrs(&mut self, d: &[u8]) {
        self.addrs = [0; 32];
        if d[0] >> 4 == 4 {
            self.family = 4;
            self.addrs[..4].copy_from_slice(&d[12..16]);
            self.addrs[16..20].copy_from_slice(&d[16..20]);
        } else {
            self.family = 6;
            self.addrs.copy_from_slice(&d[8..40]);
        }
    }

    /// `gtpu`, `mpls/gre/erspan`, ...: the chain's names joined by `/`.
    pub fn chain_name(&self) -> String {
        self.chain().map(Encap::name).collect::<Vec<_>>().join("/")
    }

    /// The MPLS labels kept (20-bit values), outermost first.
    pub fn labels(&self) -> &[u32] {
        &self.labels[..(self.label_count as usize).min(MAX_LABELS)]
    }

    /// Labels as `16/1024`; a stack deeper than [`MAX_LABELS`] ends in `/...`.
    pub fn labels_name(&self) -> Option<String> {
        if self.label_count == 0 {
            return None;
        }
        let mut s: Vec<String> = self.labels().iter().map(u32::to_string).collect();
        if self.label_count as usize > MAX_LABELS {
            s.push("...".into());
        }
        Some(s.join("/"))
    }

    #[inline]
    fn push(&mut self, e: Encap) -> Result<(), Stop> {
        let Some(slot) = self.chain.get_mut(self.depth as usize) else {
            return Err(mal(MalformedReason::TunnelTooDeep));
        };
        *slot = e as u8;
        self.depth += 1;
        Ok(())
    }
}

impl LinkRec for Outer {
    const RECORD: bool = true;

    fn mpls(&mut self, entry: u32) {
        // One chain entry per stack (a stack ends at its bottom-of-stack bit).
        if self.chain().last() != Some(Encap::Mpls) || self.label_count == 0 {
            self.too_deep |= self.push(Encap::Mpls).is_err() as u8;
        }
        if (self.label_count as usize) < MAX_LABELS {
            self.labels[self.label_count as usize] = entry >> 12;
        }
        self.label_count = self.label_count.saturating_add(1);
    }

    fn pppoe(&mut self, session: u16) {
        self.too_deep |= self.push(Encap::Pppoe).is_err() as u8;
        self.set_id(session as u32);
    }
}

/// The registry's shared side: every [`Outer`] by id (id `n` at index `n - 1`). The flow
/// table reads it when it writes a flow's row; the reader thread appends to it.
#[derive(Clone, Debug, Default)]
pub struct OuterTable(Arc<Mutex<Vec<Outer>>>);

impl OuterTable {
    /// The [`Outer`] of an id (`None` for 0, [`OUTER_UNKEPT`] and unknown ids).
    pub fn get(&self, id: u32) -> Option<Outer> {
        let v = self.0.lock().unwrap_or_else(|p| p.into_inner());
        v.get((id as usize).wrapping_sub(1)).copied()
    }

    pub fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(|p| p.into_inner()).len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// One capture's registry of encapsulations, on the decoding side: gives each distinct
/// [`Outer`] an id (1, 2, ...) and publishes it in its [`OuterTable`] before the segment
/// carrying the id leaves the reader. `Outers::default()` has no table: every tunneled
/// segment gets id 1 and only the last [`Outer`] is kept (single-frame decoding).
#[derive(Debug, Default)]
pub struct Outers {
    ids: FxHashMap<Outer, u32>,
    /// The last packet's encapsulation and id (0: none yet).
    last: Outer,
    last_id: u32,
    /// The last two distinct fast-path GTP-U tunnels (outer addresses and TEID) and their
    /// ids (0: none), the latest first.
    gtpu_key: [(u64, u32); 2],
    gtpu_id: [u32; 2],
    table: Option<OuterTable>,
    /// TCP segments decoded from inside an encapsulation.
    pub packets: u64,
    /// Of those, segments whose [`Outer`] was not kept (the registry was full).
    pub unkept: u64,
}

impl Outers {
    pub fn new(table: OuterTable) -> Self {
        Outers { table: Some(table), ..Default::default() }
    }

    /// The [`Outer`] registered last.
    pub fn last(&self) -> Option<Outer> {
        (self.last_id != 0).then_some(self.last)
    }

    #[inline]
    fn intern(&mut self, o: &Outer) -> u32 {
        self.packets += 1;
        // Consecutive packets mostly share a tunnel: one comparison instead of a hash.
        if self.last_id != 0 && self.last == *o {
            return self.last_id;
        }
        self.intern_new(o)
    }

    /// [`Self::intern`] for a packet of [`decode_ip_not_tcp`]'s fast path (`d`: from its outer
    /// IPv4 header on): the id of one of the last two such tunnels (a bearer's uplink and
    /// downlink TEIDs alternate packet by packet) when the addresses and TEID are the same.
    #[inline]
    fn intern_gtpu_v4(&mut self, d: &[u8]) -> u32 {
        let key = gtpu_v4_key(d);
        for i in 0..2 {
            if self.gtpu_id[i] != 0 && self.gtpu_key[i] == key {
                self.packets += 1;
                return self.gtpu_id[i];
            }
        }
        self.intern_gtpu_v4_new(d, key)
    }

    #[inline(never)]
    fn intern_gtpu_v4_new(&mut self, d: &[u8], key: (u64, u32)) -> u32 {
        let id = self.intern(&gtpu_v4_outer(d));
        // (an unkept one is looked up again each time: it is counted per packet)
        if id != OUTER_UNKEPT {
            (self.gtpu_key[1], self.gtpu_id[1]) = (self.gtpu_key[0], self.gtpu_id[0]);
            (self.gtpu_key[0], self.gtpu_id[0]) = (key, id);
        }
        id
    }

    #[inline(never)]
    fn intern_new(&mut self, o: &Outer) -> u32 {
        let Some(table) = &self.table else {
            (self.last, self.last_id) = (*o, 1);
            return 1;
        };
        let id = match self.ids.get(o) {
            Some(&id) => id,
            None if self.ids.len() >= MAX_OUTERS => {
                self.unkept += 1;
                return OUTER_UNKEPT;
            }
            None => {
                let mut v = table.0.lock().unwrap_or_else(|p| p.into_inner());
                v.push(*o);
                let id = v.len() as u32;
                self.ids.insert(*o, id);
                id
            }
        };
        (self.last, self.last_id) = (*o, id);
        id
    }
}

/// What comes after a layer, at an offset in the frame.
#[derive(Clone, Copy, Debug)]
enum Next {
    /// An IP header (or, for `Net::Guess`, whatever an MPLS stack carries).
    Ip(usize, Net),
    /// An Ethernet header (VXLAN, Geneve, GRE's transparent bridging, ERSPAN, pseudowires).
    Eth(usize),
    /// An MPLS label stack (MPLS in GRE).
    Mpls(usize),
    /// A PPP header (PPTP's GRE).
    Ppp(usize),
}

/// Decode a frame the hot path found not to be plain TCP: open its encapsulations, decode
/// the TCP packet inside, and register how it was encapsulated. Writes `out` exactly when
/// it returns `Ok`, like the hot path.
/// `plain`: where the hot path found an IP header that is not TCP's (it has passed the
/// link layer without recording anything), or `None` when it stopped at the link layer.
#[cold]
#[inline(never)]
pub(super) fn decode_slow(
    frame: Frame,
    out: &mut MaybeUninit<Segment>,
    outers: &mut Outers,
    plain: Option<(usize, Net)>,
) -> Result<(), Stop> {
    let Frame { linktype, data, orig_len, ts, .. } = frame;
    let mut o = Outer::default();
    // Where the current layer's packet ends on the wire (it may go on beyond the capture).
    let mut end = (orig_len as usize).max(data.len());
    let (off, net) = match plain {
        Some(x) => x,
        None => link::locate_rec(linktype, data, &mut o)?,
    };
    let mut next = Next::Ip(off, net);
    // The hot path's IP header is known not to be TCP: straight to its tunnel.
    let mut known_not_tcp = plain.is_some();
    // Every round moves on by a header at least (offsets only grow): it ends within the frame.
    loop {
        let (off, net) = match next {
            Next::Ip(off, net) => (off, net),
            Next::Eth(off) => shift(off, link::locate_rec(LinkType::ETHERNET, &data[off..], &mut o)?),
            Next::Mpls(off) => link::ethertype(data, off, 0x8847, &mut o)?,
            Next::Ppp(off) => {
                o.push(Encap::Ppp)?;
                link::ppp(data, off, &mut o)?
            }
        };
        if o.too_deep != 0 {
            return Err(mal(MalformedReason::TunnelTooDeep));
        }
        if off > data.len() || off >= end {
            return Err(mal(MalformedReason::ShortIpHeader));
        }
        let d = &data[off..];
        let net = match net {
            // What an MPLS stack carries: IP by its nibble, or an Ethernet pseudowire
            // behind a control word (RFC 4385: first nibble 0).
            Net::Guess => match d.first().map(|b| b >> 4) {
                Some(4 | 6) => Net::Sniff,
                Some(0) if d.len() >= 4 + 14 => {
                    next = Next::Eth(off + 4);
                    continue;
                }
                Some(0) => return Err(mal(MalformedReason::ShortLinkHeader)),
                _ => return Err(Stop::NotTcp),
            },
            n => n,
        };
        if !known_not_tcp {
            match ip::locate(net, d, end - off) {
                Ok(ip) => {
                    tcp::decode_into(&d[ip.l4_off..], ip, ts, out)?;
                    if o.depth > 0 {
                        let id = outers.intern(&o);
                        // SAFETY: decode_into returned Ok, so it wrote the segment.
                        unsafe { (*out.as_mut_ptr()).outer = id };
                    }
                    return Ok(());
                }
                Err(Stop::NotTcp) => {}
                Err(e) => return Err(e),
            }
        }
        known_not_tcp = false;
        let (n, inner_end) = match open_ip(d, end - off, &mut o)? {
            Some((n, e)) => (n, e),
            None => return Err(Stop::NotTcp),
        };
        next = match n {
            Next::Ip(at, net) => Next::Ip(off + at, net),
            Next::Eth(at) => Next::Eth(off + at),
            Next::Mpls(at) => Next::Mpls(off + at),
            Next::Ppp(at) => Next::Ppp(off + at),
        };
        end = off.saturating_add(inner_end);
    }
}

/// The hot path found an IP header that is not TCP's at `plain`. The operator's common case
/// is decoded here in a straight line: IPv4 / UDP 2152 / GTP-U G-PDU without optional
/// fields / TCP in IPv4 or IPv6, its registry id found by comparing 12 outer bytes with the
/// previous such packet's (no [`Outer`] built). Anything else, and a user packet that is not
/// TCP, goes to [`decode_slow`], which decodes it from the start: its result is the same.
#[inline(never)]
pub(super) fn decode_ip_not_tcp(
    frame: Frame,
    out: &mut MaybeUninit<Segment>,
    outers: &mut Outers,
    plain: (usize, Net),
) -> Result<(), Stop> {
    let Frame { data, orig_len, ts, .. } = frame;
    let off = plain.0;
    let end = (orig_len as usize).max(data.len());
    if let Some((inner, inner_end)) = gtpu_v4_plain_at(data, off, end) {
        // (an empty G-PDU is short_ip_header: decode_slow says so)
        if inner < inner_end {
            let d = &data[inner..];
            match ip::locate(Net::Sniff, d, inner_end - inner) {
                Ok(ip) => {
                    tcp::decode_into(&d[ip.l4_off..], ip, ts, out)?;
                    let id = outers.intern_gtpu_v4(&data[off..]);
                    // SAFETY: decode_into returned Ok, so it wrote the segment.
                    unsafe { (*out.as_mut_ptr()).outer = id };
                    return Ok(());
                }
                Err(Stop::NotTcp) => {}
                Err(e) => return Err(e),
            }
        }
    }
    decode_slow(frame, out, outers, Some(plain))
}

#[inline]
fn shift(by: usize, (off, net): (usize, Net)) -> (usize, Net) {
    (off + by, net)
}

/// IPv4 (no options, not a fragment, lengths consistent) / UDP port 2152 / GTP-U v1 G-PDU
/// without optional fields / an IPv4 or IPv6 packet, at `off`: record it in `o` and return
/// where the inner packet starts and ends. `None`: anything else (the general decoder
/// judges it, malformed or not).
#[inline]
fn gtpu_v4_plain_at(data: &[u8], off: usize, end: usize) -> Option<(usize, usize)> {
    let d = data.get(off..off + 20 + 8 + 8 + 1)?;
    let total = be16(d, 2) as usize;
    // version 4 and IHL 5, UDP, no fragment offset or MF, GTP flags 0x30 and type 255.
    if d[0] != 0x45 || d[9] != 17 || be16(d, 6) & 0x3fff != 0 || (d[28], d[29]) != (0x30, 0xff) {
        return None;
    }
    let (sport, dport, udp_len, gtp_len) = (be16(d, 20), be16(d, 22), be16(d, 24) as usize, be16(d, 30) as usize);
    if (sport != GTPU_PORT && dport != GTPU_PORT) || !matches!(d[36] >> 4, 4 | 6) {
        return None;
    }
    if total < 28 || off + total > end || udp_len < 16 || udp_len > total - 20 || gtp_len + 8 > udp_len - 8 {
        return None;
    }
    Some((off + 36, off + 36 + gtp_len))
}

/// The [`Outer`] of a packet [`gtpu_v4_plain_at`] accepted (`d`: from its outer IPv4 header
/// on): what the general decoder records for it.
fn gtpu_v4_outer(d: &[u8]) -> Outer {
    let mut o = Outer::default();
    o.chain[0] = Encap::Gtpu as u8;
    o.depth = 1;
    o.set_addrs(d);
    o.set_id(be32(d, 32));
    o
}

/// What identifies [`gtpu_v4_outer`]'s result: the outer addresses and the TEID.
#[inline]
fn gtpu_v4_key(d: &[u8]) -> (u64, u32) {
    (u64::from_ne_bytes(d[12..20].try_into().expect("8 bytes")), u32::from_ne_bytes(d[32..36].try_into().expect("4 bytes")))
}

/// The IP header at the start of `d` (a packet of `wire` bytes on the wire) that is not
/// TCP: if it carries a tunnel this decoder opens, record it in `o` and say where the inner
/// layer starts and where the tunnel's payload ends (offsets from `d`'s start).
fn open_ip(d: &[u8], wire: usize, o: &mut Outer) -> Result<Option<(Next, usize)>, Stop> {
    let Some(h) = outer_ip(d, wire)? else { return Ok(None) };
    let v4 = d[0] >> 4 == 4;
    let p = h.payload;
    let set_addrs = |o: &mut Outer| o.set_addrs(d);
    match h.proto {
        4 | 41 => {
            let (e, net) = match (v4, h.proto) {
                (true, 4) => (Encap::IpIp, Net::V4),
                (true, _) => (Encap::SixIn4, Net::V6),
                (false, 4) => (Encap::FourIn6, Net::V4),
                (false, _) => (Encap::SixIn6, Net::V6),
            };
            o.push(e)?;
            set_addrs(o);
            // The inner header says its own version; a wrong one is bad_ip_version.
            Ok(Some((Next::Ip(p, net), h.end)))
        }
        47 => {
            let r = gre(d, p, h.end, o)?;
            if r.is_some() {
                set_addrs(o);
            }
            Ok(r)
        }
        17 => {
            if d.len() < p + 4 {
                return Ok(None); // (the ports are cut: no telling a tunnel)
            }
            let (sport, dport) = (be16(d, p), be16(d, p + 2));
            if !(dport == GTPU_PORT || sport == GTPU_PORT || dport == VXLAN_PORT || dport == GENEVE_PORT) {
                return Ok(None);
            }
            if d.len() < p + 8 {
                return Err(mal(MalformedReason::UdpTruncated));
            }
            let udp_len = be16(d, p + 4) as usize;
            // Length 0: a jumbogram or an offloaded giant; the IP length bounds it.
            let udp_end = match udp_len {
                0 => h.end,
                n if n < 8 => return Err(mal(MalformedReason::UdpBadLength)),
                n => (p + n).min(h.end),
            };
            let u = p + 8;
            let r = if dport == GTPU_PORT || sport == GTPU_PORT {
                gtpu(d, u, udp_end, o)?
            } else if dport == VXLAN_PORT {
                vxlan(d, u, udp_end, o)?
            } else if dport == GENEVE_PORT {
                geneve(d, u, udp_end, o)?
            } else {
                None
            };
            if r.is_some() {
                set_addrs(o);
            }
            Ok(r)
        }
        _ => Ok(None),
    }
}

/// An IP header that is not TCP's: protocol, payload offset and end.
struct OuterIp {
    proto: u8,
    payload: usize,
    /// Where the packet ends (offset from its start; beyond the capture when cut, and
    /// unbounded for a first fragment, whose payload goes on in the next fragments).
    end: usize,
}

/// Parse an IP header far enough to open a tunnel in it. `None`: a later fragment, or a
/// header (IPv6 ESP, no next header) that hides what it carries.
fn outer_ip(d: &[u8], wire: usize) -> Result<Option<OuterIp>, Stop> {
    match d.first().map(|b| b >> 4) {
        Some(4) => {
            let (ihl, total) = ip::v4_lengths(d, wire)?;
            let frag = be16(d, 6);
            if frag & 0x1fff != 0 {
                return Ok(None);
            }
            let more_fragments = frag & 0x2000 != 0;
            Ok(Some(OuterIp {
                proto: d[9],
                payload: ihl,
                end: if more_fragments { usize::MAX / 2 } else { total },
            }))
        }
        Some(6) => {
            if d.len() < 40 {
                return Err(mal(MalformedReason::ShortIpHeader));
            }
            let plen = match be16(d, 4) as usize {
                0 => wire.saturating_sub(40),
                n => n,
            };
            if plen > wire.saturating_sub(40) {
                return Err(mal(MalformedReason::IpLenExceedsFrame));
            }
            let (mut next, mut p, mut more_fragments) = (d[6], 40usize, false);
            // Every extension header is at least 8 bytes: the loop ends within the frame.
            while let Some(h) = ip::v6_ext_header(d, p, next)? {
                if next == ip::FRAGMENT {
                    if h.fragment >> 3 != 0 {
                        return Ok(None);
                    }
                    more_fragments = h.fragment & 1 != 0;
                }
                next = h.next;
                p += h.len;
            }
            if p - 40 > plen {
                return Err(mal(MalformedReason::IpTotalLenTooSmall));
            }
            Ok(Some(OuterIp {
                proto: next,
                payload: p,
                end: if more_fragments { usize::MAX / 2 } else { 40 + plen },
            }))
        }
        // ip::locate has judged the version against the link layer already.
        _ => Ok(None),
    }
}

/// GRE at `g` (RFC 2784 with RFC 2890's key and sequence number; version 1: PPTP's enhanced
/// GRE, RFC 2637), and ERSPAN inside it.
fn gre(d: &[u8], g: usize, end: usize, o: &mut Outer) -> Result<Option<(Next, usize)>, Stop> {
    if d.len() < g + 4 {
        return Err(mal(MalformedReason::GreTruncated));
    }
    let flags = be16(d, g);
    let proto = be16(d, g + 2);
    let (c, r, k, s, a) = (flags & 0x8000 != 0, flags & 0x4000 != 0, flags & 0x2000 != 0, flags & 0x1000 != 0, flags & 0x0080 != 0);
    let mut h = g + 4;
    let key_at;
    match flags & 7 {
        0 => {
            // Source routing (RFC 1701's R bit) is deprecated and its list unbounded.
            if r {
                return Err(mal(MalformedReason::GreBadHeader));
            }
            h += 4 * c as usize;
            key_at = k.then_some(h);
            h += 4 * k as usize + 4 * s as usize;
        }
        1 => {
            // PPTP: key present (payload length, call id), no checksum or routing.
            if !k || c || r || proto != 0x880B {
                return Err(mal(MalformedReason::GreBadHeader));
            }
            key_at = Some(h);
            h += 4 + 4 * s as usize + 4 * a as usize;
        }
        _ => return Err(mal(MalformedReason::GreBadHeader)),
    }
    if d.len() < h {
        return Err(mal(MalformedReason::GreTruncated));
    }
    let next = match proto {
        0x0800 => Next::Ip(h, Net::V4),
        0x86DD => Next::Ip(h, Net::V6),
        0x6558 => Next::Eth(h),
        0x8847 | 0x8848 => Next::Mpls(h),
        0x880B => Next::Ppp(h),
        // WCCP redirection (a web cache's GRE): version 2 puts a 4-byte redirect header
        // before the IPv4 packet, version 1 none (told apart by the IP version nibble).
        0x883E => match d.get(h).map(|b| b >> 4) {
            Some(4) | None => Next::Ip(h, Net::V4),
            _ => Next::Ip(h + 4, Net::V4),
        },
        // ERSPAN type II (with the sequence number) or type I (without, no header).
        0x88BE => {
            o.push(Encap::Gre)?;
            o.push(Encap::Erspan)?;
            if !s {
                return Ok(Some((Next::Eth(h), end)));
            }
            if d.len() < h + 8 {
                return Err(mal(MalformedReason::ErspanTruncated));
            }
            if d[h] >> 4 != 1 {
                return Err(mal(MalformedReason::ErspanBadHeader));
            }
            o.set_id((be16(d, h + 2) & 0x3ff) as u32);
            return Ok(Some((Next::Eth(h + 8), end)));
        }
        // ERSPAN type III: 12 bytes, 8 more with the platform-specific subheader (O bit).
        0x22EB => {
            o.push(Encap::Gre)?;
            o.push(Encap::Erspan)?;
            if d.len() < h + 12 {
                return Err(mal(MalformedReason::ErspanTruncated));
            }
            if d[h] >> 4 != 2 {
                return Err(mal(MalformedReason::ErspanBadHeader));
            }
            o.set_id((be16(d, h + 2) & 0x3ff) as u32);
            let l = if d[h + 11] & 1 != 0 { 20 } else { 12 };
            if d.len() < h + l {
                return Err(mal(MalformedReason::ErspanTruncated));
            }
            return Ok(Some((Next::Eth(h + l), end)));
        }
        _ => return Ok(None),
    };
    o.push(Encap::Gre)?;
    if let Some(at) = key_at {
        o.set_id(if flags & 7 == 1 { be16(d, at + 2) as u32 } else { be32(d, at) });
    }
    Ok(Some((next, end)))
}

/// GTP-U version 1 at `g` (3GPP TS 29.281 §5): a G-PDU carries an IP packet of the user.
fn gtpu(d: &[u8], g: usize, end: usize, o: &mut Outer) -> Result<Option<(Next, usize)>, Stop> {
    if d.len() < g + 8 {
        return Err(mal(MalformedReason::GtpuTruncated));
    }
    let flags = d[g];
    // Version 1, protocol type 1 (GTP, not GTP'); version 2 is GTP-C's, never on 2152.
    if flags >> 5 != 1 || flags & 0x10 == 0 {
        return Err(mal(MalformedReason::GtpuBadHeader));
    }
    // Echo, error indication, supported extension headers, end marker: no user packet.
    if d[g + 1] != 255 {
        return Ok(None);
    }
    let len = be16(d, g + 2) as usize; // bytes after the first 8
    let teid = be32(d, g + 4);
    let mut p = g + 8;
    if flags & 0x07 != 0 {
        // Sequence number(2), N-PDU number(1), next extension header type(1).
        if d.len() < g + 12 {
            return Err(mal(MalformedReason::GtpuTruncated));
        }
        let mut next = d[g + 11];
        p = g + 12;
        // Each extension header: length in 4-byte units (≥ 1), content, next type. Every
        // round moves on by at least 4 bytes, so the loop ends within the frame.
        while next != 0 {
            let Some(&units) = d.get(p) else { return Err(mal(MalformedReason::GtpuTruncated)) };
            if units == 0 {
                return Err(mal(MalformedReason::GtpuBadHeader));
            }
            let l = units as usize * 4;
            if d.len() < p + l {
                return Err(mal(MalformedReason::GtpuTruncated));
            }
            next = d[p + l - 1];
            p += l;
        }
    }
    if g + 8 + len < p {
        return Err(mal(MalformedReason::GtpuBadHeader));
    }
    // The user packet: IPv4 or IPv6 by its nibble (an Ethernet or unstructured PDU
    // session is not IP: another protocol; nothing captured: short_ip_header below).
    if d.get(p).is_some_and(|b| !matches!(b >> 4, 4 | 6)) {
        return Ok(None);
    }
    o.push(Encap::Gtpu)?;
    o.set_id(teid);
    Ok(Some((Next::Ip(p, Net::Sniff), (g + 8 + len).min(end))))
}

/// VXLAN at `v` (RFC 7348): flags(1) reserved(3) VNI(3) reserved(1), then Ethernet.
fn vxlan(d: &[u8], v: usize, end: usize, o: &mut Outer) -> Result<Option<(Next, usize)>, Stop> {
    if d.len() < v + 8 {
        return Err(mal(MalformedReason::VxlanTruncated));
    }
    // The I flag says the VNI is valid; it must be set.
    if d[v] & 0x08 == 0 {
        return Err(mal(MalformedReason::VxlanBadHeader));
    }
    o.push(Encap::Vxlan)?;
    o.set_id(be32(d, v + 4) >> 8);
    Ok(Some((Next::Eth(v + 8), end)))
}

/// Geneve at `v` (RFC 8926 §3.4): ver(2) option length(6, 4-byte units) flags(1)
/// protocol(2) VNI(3) reserved(1), options, then the protocol's packet.
fn geneve(d: &[u8], v: usize, end: usize, o: &mut Outer) -> Result<Option<(Next, usize)>, Stop> {
    if d.len() < v + 8 {
        return Err(mal(MalformedReason::GeneveTruncated));
    }
    if d[v] >> 6 != 0 {
        return Err(mal(MalformedReason::GeneveBadHeader));
    }
    let h = v + 8 + (d[v] & 0x3f) as usize * 4;
    if d.len() < h {
        return Err(mal(MalformedReason::GeneveTruncated));
    }
    let next = match be16(d, v + 2) {
        0x6558 => Next::Eth(h),
        0x0800 => Next::Ip(h, Net::V4),
        0x86DD => Next::Ip(h, Net::V6),
        _ => return Ok(None),
    };
    o.push(Encap::Geneve)?;
    o.set_id(be32(d, v + 4) >> 8);
    Ok(Some((next, end)))
}

#[cfg(test)]
#[path = "tunnel_tests.rs"]
mod tests;
