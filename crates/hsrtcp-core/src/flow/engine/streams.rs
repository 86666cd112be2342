//! The engine state a connection needs only once it carries data (or completes its
//! handshake): the two directions' [`Stream`]s and the [`RttBook`], in one box allocated
//! at the first segment that writes to either (the first ACK outside the handshake, the
//! first payload, the handshake's RTT sample).
//!
//! A stream is about 5.6 KB (segment store, window, counters, recent retransmissions) and
//! the RTT book 232 bytes; a connection that never gets past SYN, SYN-ACK or RST (a port
//! scan, a refused or unanswered connection) never touches them, and millions of those
//! would otherwise cost 11 KB each (docs/engine.md, "Memory"). Reads of absent state see
//! the default state, which is exactly what untouched state would hold. One box for both:
//! a data segment reaches its stream and the RTT book through the same pointer.

use std::ops::{Index, IndexMut};
use std::sync::LazyLock;

use super::retrans::Stream;
use super::rtt::RttBook;

/// The state behind the box.
#[derive(Default)]
pub struct Body {
    pub streams: [Stream; 2],
    pub rtt: RttBook,
}

/// What absent state reads as.
static UNTOUCHED: LazyLock<Body> = LazyLock::new(Body::default);

#[derive(Default)]
pub struct Streams(Option<Box<Body>>);

impl Streams {
    /// Whether a segment has needed the state yet.
    pub fn allocated(&self) -> bool {
        self.0.is_some()
    }

    pub fn iter(&self) -> impl Iterator<Item = &Stream> {
        (0..2).map(move |i| &self[i])
    }

    /// The RTT book (the default one while nothing was allocated).
    #[inline(always)]
    pub fn rtt(&self) -> &RttBook {
        match &self.0 {
            Some(b) => &b.rtt,
            None => &UNTOUCHED.rtt,
        }
    }

    /// The RTT book to write to (allocating the state).
    #[inline(always)]
    pub fn rtt_mut(&mut self) -> &mut RttBook {
        &mut self.body().rtt
    }

    /// The RTT book if it was allocated (to drain it without allocating).
    pub fn rtt_if_allocated(&mut self) -> Option<&mut RttBook> {
        self.0.as_mut().map(|b| &mut b.rtt)
    }

    /// Stream `i` and the RTT book together (allocating the state).
    #[inline(always)]
    pub fn with_rtt(&mut self, i: usize) -> (&mut Stream, &mut RttBook) {
        let b = self.body();
        (&mut b.streams[i], &mut b.rtt)
    }

    #[inline(always)]
    fn body(&mut self) -> &mut Body {
        // (get_or_insert_with was not inlined: 40 M instructions on the bench capture)
        if self.0.is_none() {
            self.allocate();
        }
        self.0.as_mut().expect("allocated above")
    }

    #[cold]
    #[inline(never)]
    fn allocate(&mut self) {
        self.0 = Some(Box::default());
    }
}

impl Index<usize> for Streams {
    type Output = Stream;

    #[inline(always)]
    fn index(&self, i: usize) -> &Stream {
        match &self.0 {
            Some(b) => &b.streams[i],
            None => &UNTOUCHED.streams[i],
        }
    }
}

impl IndexMut<usize> for Streams {
    #[inline(always)]
    fn index_mut(&mut self, i: usize) -> &mut Stream {
        &mut self.body().streams[i]
    }
}
