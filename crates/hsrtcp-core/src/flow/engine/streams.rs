//! The two directions' [`Stream`] state of one connection, allocated only when a segment
//! needs it (the first ACK outside the handshake, the first payload, an RTT sample).
//!
//! A stream is about 5.6 KB (segment store, window, counters, recent retransmissions); a
//! connection that never gets past SYN, SYN-ACK or RST (a port scan, a refused or
//! unanswered connection) never touches it, and millions of those would otherwise cost
//! 11 KB each (docs/engine.md, "Memory"). Reads of an absent stream see the default state,
//! which is exactly what an untouched stream would hold.

use std::ops::{Index, IndexMut};
use std::sync::LazyLock;

use super::retrans::Stream;

/// What every absent stream reads as.
static UNTOUCHED: LazyLock<Stream> = LazyLock::new(Stream::default);

#[derive(Default)]
pub struct Streams(Option<Box<[Stream; 2]>>);

impl Streams {
    /// Whether a segment has needed the streams yet.
    pub fn allocated(&self) -> bool {
        self.0.is_some()
    }

    /// The stream of direction index `i` if it was ever touched.
    pub fn get_mut(&mut self, i: usize) -> Option<&mut Stream> {
        self.0.as_mut().map(|s| &mut s[i])
    }

    pub fn iter(&self) -> impl Iterator<Item = &Stream> {
        (0..2).map(move |i| &self[i])
    }
}

impl Index<usize> for Streams {
    type Output = Stream;

    #[inline(always)]
    fn index(&self, i: usize) -> &Stream {
        match &self.0 {
            Some(s) => &s[i],
            None => &UNTOUCHED,
        }
    }
}

impl IndexMut<usize> for Streams {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut Stream {
        // (get_or_insert_with was not inlined: 40 M instructions on the bench capture)
        if self.0.is_none() {
            self.allocate();
        }
        &mut self.0.as_mut().expect("allocated above")[i]
    }
}

impl Streams {
    #[cold]
    #[inline(never)]
    fn allocate(&mut self) {
        self.0 = Some(Box::new([Stream::default(), Stream::default()]));
    }
}
