//! SACK blocks as events (RFC 2018; D-SACK, RFC 2883): one `sack_block` row per block of
//! every ACK that carries a SACK option, so the time–sequence graph can be drawn from the
//! tables alone (issue 18: "figures come from the tables only"). docs/formats/events.md.
//!
//! Only ACKs with a SACK option pay anything: the caller tests the block count first.

use super::spurious::dsack;
use crate::flow::event::{Dir, Event, EventKind};
use crate::wire::Nanos;

/// Class of an ordinary block (data received above the cumulative ACK).
pub const SACK: &str = "sack";
/// Class of a D-SACK block: the first block, below the cumulative ACK or inside the second
/// block (the rule of [`dsack`], which also counts `flows.dsack_blocks`).
pub const DSACK: &str = "dsack";

/// One `sack_block` event per block of an ACK seen at `ts`. `dir` is the direction of the
/// data the blocks describe (the ACK's reverse), `ack` the relative cumulative ACK and
/// `blocks` the relative [left, right) edges in option order; `count` is the 1-based
/// position of the block in the option.
#[cold]
pub fn push_blocks(ev: &mut Vec<Event>, ts: Nanos, dir: Dir, ack: i64, blocks: &[(i64, i64)]) {
    let first_is_dsack = dsack(blocks, ack).is_some();
    for (k, &(l, r)) in blocks.iter().enumerate() {
        ev.push(Event {
            class: Some(if k == 0 && first_is_dsack { DSACK } else { SACK }),
            count: Some(k as u64 + 1),
            ..Event::on_bytes(EventKind::SackBlock, ts, dir, l, r)
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn classes(ack: i64, blocks: &[(i64, i64)]) -> Vec<(&'static str, i64, i64, u64)> {
        let mut ev = Vec::new();
        push_blocks(&mut ev, 7, Dir::S2C, ack, blocks);
        ev.iter()
            .map(|e| {
                assert_eq!((e.kind, e.ts, e.dir), (EventKind::SackBlock, 7, Some(Dir::S2C)));
                (e.class.unwrap(), e.seq_start.unwrap(), e.seq_end.unwrap(), e.count.unwrap())
            })
            .collect()
    }

    #[test]
    fn ordinary_blocks_in_option_order() {
        assert_eq!(
            classes(1001, &[(3001, 4001), (5001, 6001)]),
            vec![(SACK, 3001, 4001, 1), (SACK, 5001, 6001, 2)]
        );
    }

    #[test]
    fn dsack_below_the_ack_or_inside_the_second_block() {
        // RFC 2883 §4.1.1: the duplicate lies below the cumulative ACK
        assert_eq!(classes(4001, &[(2001, 3001)]), vec![(DSACK, 2001, 3001, 1)]);
        // RFC 2883 §4.2.1: the duplicate lies inside the second block (above the ACK)
        assert_eq!(
            classes(1001, &[(3001, 4001), (3001, 5001)]),
            vec![(DSACK, 3001, 4001, 1), (SACK, 3001, 5001, 2)]
        );
        // a first block merely next to the second one is ordinary
        assert_eq!(
            classes(1001, &[(3001, 4001), (5001, 6001), (3001, 4001)]),
            vec![(SACK, 3001, 4001, 1), (SACK, 5001, 6001, 2), (SACK, 3001, 4001, 3)]
        );
    }
}
