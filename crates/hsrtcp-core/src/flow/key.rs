//! Connection keys: the unordered pair of endpoints of a TCP 4-tuple.

use std::net::IpAddr;

use crate::wire::Segment;

/// One side of a connection.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Endpoint {
    pub addr: IpAddr,
    pub port: u16,
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
        let s = Endpoint {
            addr: seg.src,
            port: seg.sport,
        };
        let d = Endpoint {
            addr: seg.dst,
            port: seg.dport,
        };
        if s <= d {
            (FlowKey { lo: s, hi: d }, true)
        } else {
            (FlowKey { lo: d, hi: s }, false)
        }
    }
}
