//! The encapsulation of each connection's packets (wire::tunnel), kept beside the flow
//! table rather than in the connections: plain captures pay one test per packet
//! (`Segment::outer != 0`) and nothing per connection.

use rustc_hash::FxHashMap;

use crate::table::Row;
use crate::wire::tunnel::OUTER_UNKEPT;
use crate::wire::{Outer, OuterTable};

/// What one connection's packets were wrapped in: the first and the current registry id per
/// direction (c2s, s2c; 0 = none seen), and how often a direction's id changed.
#[derive(Clone, Copy, Debug, Default)]
pub struct FlowOuter {
    first: [u32; 2],
    current: [u32; 2],
    changes: u64,
}

/// The tunnel side of a flow table: the capture's registry and each tunneled connection's
/// [`FlowOuter`] by flow id, until its row is written.
#[derive(Debug, Default)]
pub struct FlowOuters {
    table: OuterTable,
    flows: FxHashMap<u64, FlowOuter>,
    /// The last (flow table slot, direction, id) noted: a bulk transfer repeats it packet
    /// after packet, and the test costs the flow table a few instructions.
    last: (usize, usize, u32),
}

impl FlowOuters {
    pub fn set_table(&mut self, table: OuterTable) {
        self.table = table;
    }

    /// Whether the connection in flow table slot `slot` was noted last, with this direction
    /// and id (then [`Self::note`] has nothing to do).
    #[inline]
    pub fn seen(&self, slot: usize, dir: usize, id: u32) -> bool {
        self.last == (slot, dir, id)
    }

    /// Slot `slot` holds a new connection now.
    #[inline]
    pub fn forget_slot(&mut self, slot: usize) {
        if self.last.0 == slot {
            self.last.2 = 0;
        }
    }

    /// A packet of connection `flow_id` (in flow table slot `slot`), direction `dir` (0 c2s,
    /// 1 s2c), came in the encapsulation `id` (not 0).
    #[inline(never)]
    pub fn note(&mut self, slot: usize, flow_id: u64, dir: usize, id: u32) {
        self.last = (slot, dir, id);
        let f = self.flows.entry(flow_id).or_default();
        if f.first[dir] == 0 {
            f.first[dir] = id;
        } else if f.current[dir] != id {
            f.changes += 1;
        }
        f.current[dir] = id;
    }

    /// Bytes held for open connections (for the flow table's memory estimate).
    pub fn bytes(&self) -> usize {
        self.flows.capacity() * (std::mem::size_of::<(u64, FlowOuter)>() + 1)
    }

    /// Write connection `flow_id`'s tunnel columns into its `flows` row and forget it.
    pub fn write(&mut self, flow_id: u64, r: &mut Row<'_>) {
        let Some(f) = self.flows.remove(&flow_id) else { return };
        let get = |id: u32| if id == 0 || id == OUTER_UNKEPT { None } else { self.table.get(id) };
        let (c2s, s2c): (Option<Outer>, Option<Outer>) = (get(f.first[0]), get(f.first[1]));
        let Some(main) = c2s.or(s2c) else {
            // Tunneled, but the registry was full: say so rather than look plain.
            r.str("tunnel", Some("unkept"));
            return;
        };
        // The client's side of the outer header: the c2s source, or the s2c destination.
        let client = c2s.and_then(|o| o.src()).or_else(|| s2c.and_then(|o| o.dst()));
        let server = c2s.and_then(|o| o.dst()).or_else(|| s2c.and_then(|o| o.src()));
        r.str("tunnel", Some(&main.chain_name()))
            .str("tunnel_client_addr", client.map(|a| a.to_string()).as_deref())
            .str("tunnel_server_addr", server.map(|a| a.to_string()).as_deref())
            .u64("tunnel_id_c2s", c2s.and_then(|o| o.id()).map(u64::from))
            .u64("tunnel_id_s2c", s2c.and_then(|o| o.id()).map(u64::from))
            .str("mpls_labels_c2s", c2s.and_then(|o| o.labels_name()).as_deref())
            .str("mpls_labels_s2c", s2c.and_then(|o| o.labels_name()).as_deref())
            .u64("tunnel_changes", f.changes);
    }
}
