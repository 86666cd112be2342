//! `ChunkLog`: a first-in first-out log with indexed access, kept in fixed-size chunks.
//!
//! Why not a `VecDeque`: a pair's packet log grows to tens of megabytes while the matcher
//! waits out its window (the whole capture, for a pair shorter than the window). A growing
//! `VecDeque` doubles and copies: every byte is written twice, and every new page is
//! faulted in twice (perf on the bench pair: the matcher thread took two thirds of the
//! run's 22,000 page faults, half of them in the copies). Chunks are written once, and a
//! consumed chunk is kept for the next one instead of going back to the allocator.

use std::collections::VecDeque;

/// Elements per chunk: a power of two (the index splits with a shift), and small enough
/// (80 KB of 40-byte packets) that the allocator serves chunks from its heap, not from a
/// fresh mapping each time.
const CHUNK: usize = 2048;

#[derive(Debug, Clone)]
pub struct ChunkLog<T> {
    /// Every chunk is full (`CHUNK` elements) except the last; the first one's elements
    /// before `head` are consumed.
    chunks: VecDeque<Vec<T>>,
    head: usize,
    len: usize,
    /// One consumed chunk kept for the next push that needs one.
    spare: Option<Vec<T>>,
}

impl<T> Default for ChunkLog<T> {
    fn default() -> Self {
        ChunkLog { chunks: VecDeque::new(), head: 0, len: 0, spare: None }
    }
}

impl<T: Copy> ChunkLog<T> {
    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn push_back(&mut self, x: T) {
        if self.chunks.back().is_none_or(|c| c.len() == CHUNK) {
            let chunk = self.spare.take().unwrap_or_else(|| Vec::with_capacity(CHUNK));
            self.chunks.push_back(chunk);
        }
        self.chunks.back_mut().expect("a chunk with room").push(x);
        self.len += 1;
    }

    #[inline]
    fn place(&self, i: usize) -> (usize, usize) {
        let j = self.head + i;
        (j / CHUNK, j % CHUNK)
    }

    /// The `i`-th element from the front.
    #[inline]
    pub fn get(&self, i: usize) -> Option<&T> {
        if i >= self.len {
            return None;
        }
        let (c, k) = self.place(i);
        Some(&self.chunks[c][k])
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> Option<&mut T> {
        if i >= self.len {
            return None;
        }
        let (c, k) = self.place(i);
        Some(&mut self.chunks[c][k])
    }

    pub fn front(&self) -> Option<&T> {
        self.get(0)
    }

    pub fn pop_front(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let x = self.chunks[0][self.head];
        self.head += 1;
        self.len -= 1;
        if self.head == CHUNK || self.len == 0 {
            let mut done = self.chunks.pop_front().expect("the front chunk");
            done.clear();
            self.spare.get_or_insert(done);
            self.head = 0;
        }
        Some(x)
    }

    /// The elements from the front.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        let head = self.head;
        self.chunks.iter().enumerate().flat_map(move |(n, c)| if n == 0 { &c[head..] } else { &c[..] })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Against a VecDeque, through pushes and pops that cross chunk edges and empty the
    /// log several times.
    #[test]
    fn behaves_like_a_vecdeque() {
        let mut log = ChunkLog::default();
        let mut model = VecDeque::new();
        let mut next = 0u64;
        // (pushes, pops) rounds: within a chunk, across several, down to empty, uneven
        for (push, pop) in [(5, 2), (3 * CHUNK + 7, CHUNK), (10, 2 * CHUNK + 20), (CHUNK, 0), (1, CHUNK + 1), (0, 3), (4 * CHUNK, 4 * CHUNK - 1)] {
            for _ in 0..push {
                log.push_back(next);
                model.push_back(next);
                next += 1;
            }
            for _ in 0..pop {
                assert_eq!(log.pop_front(), model.pop_front());
            }
            assert_eq!(log.len(), model.len());
            assert_eq!(log.is_empty(), model.is_empty());
            assert_eq!(log.front(), model.front());
            assert!(log.iter().eq(model.iter()));
            for i in [0, 1, CHUNK - 1, CHUNK, model.len().saturating_sub(1), model.len(), model.len() + 5] {
                assert_eq!(log.get(i), model.get(i), "index {i} of {}", model.len());
            }
            let mid = model.len() / 2;
            if let Some(x) = log.get_mut(mid) {
                *x += 1_000_000;
                model[mid] += 1_000_000;
            }
        }
        assert!(log.iter().eq(model.iter()));
    }
}
