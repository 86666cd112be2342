//! Connection keys: the unordered pair of endpoints of a TCP 4-tuple.

use std::net::IpAddr;

use crate::wire::Segment;

/// One side of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    pub addr: IpAddr,
    pub port: u16,
}

impl Endpoint {
    /// The sending and receiving endpoints of a segment.
    #[inline]
    pub fn of(seg: &Segment) -> (Endpoint, Endpoint) {
        (Endpoint { addr: seg.src, port: seg.sport }, Endpoint { addr: seg.dst, port: seg.dport })
    }
}

/// Who opened the connection whose first captured packet is `seg`: (client, server,
/// decided by a SYN). Mid-connection the ephemeral (higher) port is most likely the client.
/// The single-capture rows and the matcher share this rule so their epochs and roles agree.
pub fn roles_of(seg: &Segment) -> (Endpoint, Endpoint, bool) {
    let (s, d) = Endpoint::of(seg);
    if seg.flags.syn() && !seg.flags.ack() {
        (s, d, true)
    } else if seg.flags.syn() {
        (d, s, true)
    } else if s.port >= d.port {
        (s, d, false)
    } else {
        (d, s, false)
    }
}

/// A 4-tuple without direction: `lo` sorts before `hi`, so both directions share one key.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct FlowKey {
    pub lo: Endpoint,
    pub hi: Endpoint,
}

impl FlowKey {
    /// The key of a segment and whether the segment travels from `lo` to `hi`.
    #[inline]
    pub fn of(seg: &Segment) -> (FlowKey, bool) {
        let (s, d) = Endpoint::of(seg);
        if s <= d {
            (FlowKey { lo: s, hi: d }, true)
        } else {
            (FlowKey { lo: d, hi: s }, false)
        }
    }

    /// Whether `seg` belongs to this key: `Some(true)` when `lo` sent it, `Some(false)` when
    /// `hi` did, `None` when it is another connection's. Cheaper than building the
    /// segment's own key (no ordering of addresses), for the hot "same as last packet" test,
    /// and the side it finds spares the connection its own address comparison.
    #[inline]
    pub fn side_of(&self, seg: &Segment) -> Option<bool> {
        let (lo, hi) = (&self.lo, &self.hi);
        if seg.sport == lo.port && seg.dport == hi.port && seg.src == lo.addr && seg.dst == hi.addr {
            Some(true)
        } else if seg.sport == hi.port && seg.dport == lo.port && seg.src == hi.addr && seg.dst == lo.addr {
            Some(false)
        } else {
            None
        }
    }
}

/// How a segment's 4-tuple relates to the previous segment's in the capture: the reader
/// thread finds it while decoding, so the flow table's "same connection as the last
/// packet" test costs the engine thread (the critical path) a byte instead of four
/// address and port comparisons.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
#[repr(u8)]
pub enum Link {
    /// Another 4-tuple, or not known (the first segment; a caller without the hint).
    #[default]
    Unknown,
    /// The same sender and receiver as the previous segment.
    Same,
    /// The previous segment's receiver sent it to that segment's sender.
    Reversed,
}

/// The 4-tuple of the previous segment, to find each segment's [`Link`].
#[derive(Clone, Copy, Debug, Default)]
pub struct LinkTracker {
    prev: Option<(IpAddr, IpAddr, u16, u16)>,
}

impl LinkTracker {
    /// The link of `seg` to the segment seen before it; `seg` becomes the previous one.
    #[inline]
    pub fn next(&mut self, seg: &Segment) -> Link {
        let link = match self.prev {
            Some((src, dst, sport, dport)) => {
                if seg.sport == sport && seg.dport == dport && seg.src == src && seg.dst == dst {
                    Link::Same
                } else if seg.sport == dport && seg.dport == sport && seg.src == dst && seg.dst == src {
                    Link::Reversed
                } else {
                    Link::Unknown
                }
            }
            None => Link::Unknown,
        };
        if link == Link::Unknown {
            self.prev = Some((seg.src, seg.dst, seg.sport, seg.dport));
        } else if link == Link::Reversed {
            let p = self.prev.as_mut().expect("linked");
            *p = (p.1, p.0, p.3, p.2);
        }
        link
    }
}
