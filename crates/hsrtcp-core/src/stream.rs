//! `SegmentStream`: a capture file read and decoded on a background thread, handed over as
//! batches of [`Segment`]s. Reading and decoding cost about as much as a light flow engine,
//! so overlapping them with the engine on a second core nearly halves the wall time; memory
//! stays bounded (a few batches in flight, buffers reused once every consumer is done).

use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crate::capture::CaptureReader;
use crate::flow::key::{Link, LinkTracker};
use crate::wire::{decode_append, Nanos, OuterTable, Outers, Segment, Stop};

const BATCH: usize = 2048;
/// Batches the reader may be ahead of the engine. The two take turns being the slower one
/// (and, on two cores, being preempted by the Parquet writer): a lead of 4 batches left
/// each waiting for the other; 8 took the README command's wall 1-3 % shorter for 1.3 MB
/// more memory (bench/README.md, s20).
const IN_FLIGHT: usize = 8;
/// Batches the reader keeps a share of, to reuse the first one every consumer is done with
/// (more than can be in flight: the stream's and a tap's queues and their current batches).
const REUSE: usize = IN_FLIGHT + TAP_IN_FLIGHT + 8;

/// Counters of one capture file, filled by the reader thread.
#[derive(Clone, Debug, Default)]
pub struct CaptureStats {
    pub packets: u64,
    pub tcp_packets: u64,
    pub other_packets: u64,
    pub malformed: Vec<(&'static str, u64)>,
    pub first_ts: Option<Nanos>,
    pub last_ts: Option<Nanos>,
    /// The error that stopped reading (names the file and the byte offset).
    pub error: Option<String>,
    /// Time jumps of more than a day between records (capture::time_jump): how many, the
    /// first one's byte offset, and a message naming the file and that offset.
    pub time_jumps: u64,
    pub time_jump_offset: Option<u64>,
    pub time_jump: Option<String>,
    /// TCP segments decoded from inside an encapsulation (wire::tunnel).
    pub tunneled_packets: u64,
}

impl CaptureStats {
    fn count_malformed(&mut self, reason: &'static str) {
        match self.malformed.iter_mut().find(|(r, _)| *r == reason) {
            Some((_, n)) => *n += 1,
            None => self.malformed.push((reason, 1)),
        }
    }

    pub fn malformed_total(&self) -> u64 {
        self.malformed.iter().map(|(_, n)| n).sum()
    }
}

struct Batch {
    /// Shared with the tap, if any (the batch is decoded once for both consumers).
    segs: Arc<Vec<Segment>>,
    /// Each segment's [`Link`] to the one before it (found here, off the engine's thread).
    links: Vec<Link>,
    bytes_read: u64,
}

/// A copy of every batch of decoded segments, for a second consumer of the same capture
/// (the two-vantage matcher reads the segments the flow engine reads, decoded once).
pub type Tap = SyncSender<Arc<Vec<Segment>>>;

/// Decoded TCP segments of one capture, in file order.
pub struct SegmentStream {
    rx: Receiver<Batch>,
    /// The batch in hand (for the segment iterator; `next_batch` hands it out whole).
    cursor: Cursor,
    links: Vec<Link>,
    bytes_read: u64,
    worker: Option<JoinHandle<CaptureStats>>,
}

impl SegmentStream {
    /// Start reading `path`. Never fails: an unreadable file gives an empty stream whose
    /// [`SegmentStream::finish`] reports the error.
    pub fn open(path: &Path) -> Self {
        Self::open_tapped(path, None)
    }

    /// As [`SegmentStream::open`], and every batch is also sent to `tap` (shared, not
    /// copied: nothing per packet). The tap is closed at the end of
    /// the file; if its receiver goes away, reading goes on without it. A full tap holds
    /// the reader back, so its consumer must keep reading.
    pub fn open_tapped(path: &Path, tap: Option<Tap>) -> Self {
        Self::open_with(path, tap, OuterTable::default())
    }

    /// As [`SegmentStream::open_tapped`], registering the encapsulations of tunneled
    /// segments in `outers` (their `Segment::outer` ids point there).
    pub fn open_with(path: &Path, tap: Option<Tap>, outers: OuterTable) -> Self {
        let path: PathBuf = path.to_path_buf();
        let (tx, rx) = sync_channel::<Batch>(IN_FLIGHT);
        let worker = std::thread::Builder::new()
            .name("hsrtcp-reader".into())
            .spawn(move || read_all(&path, tx, tap, Outers::new(outers)))
            .expect("spawn reader thread");
        SegmentStream { rx, cursor: Cursor::default(), links: Vec::new(), bytes_read: 0, worker: Some(worker) }
    }

    /// Bytes of the file consumed so far (for progress bars).
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The next batch of segments, or `None` at the end. Prefer this in hot loops.
    pub fn next_batch(&mut self) -> Option<&[Segment]> {
        self.next_batch_linked().map(|(segs, _)| segs)
    }

    /// [`Self::next_batch`] with each segment's [`Link`] to the segment before it in the
    /// file ([`crate::flow::FlowTable::push_linked`]).
    pub fn next_batch_linked(&mut self) -> Option<(&[Segment], &[Link])> {
        // Dropping our share hands the batch back to the reader once the tap is done too
        // (read_all, `Reuse`).
        self.cursor.batch = None;
        let b = self.rx.recv().ok()?;
        self.bytes_read = b.bytes_read;
        self.links = b.links;
        let current: &[Segment] = self.cursor.batch.insert(b.segs);
        self.cursor.pos = current.len();
        Some((current, &self.links))
    }

    /// Wait for the reader thread and return the file's counters.
    pub fn finish(mut self) -> CaptureStats {
        drop(std::mem::replace(&mut self.rx, sync_channel(1).1));
        match self.worker.take().map(|w| w.join()) {
            Some(Ok(stats)) => stats,
            _ => CaptureStats { error: Some("internal error: reader thread panicked".into()), ..Default::default() },
        }
    }
}

impl Iterator for SegmentStream {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        let SegmentStream { rx, cursor, links, bytes_read, .. } = self;
        cursor.next(|| {
            let b = rx.recv().ok()?;
            (*bytes_read, *links) = (b.bytes_read, b.links);
            Some(b.segs)
        })
    }
}

/// A batch of segments handed out one by one (by the stream and by a tap's receiver).
#[derive(Default)]
struct Cursor {
    batch: Option<Arc<Vec<Segment>>>,
    pos: usize,
}

impl Cursor {
    /// The next segment; when the batch in hand is used up, the next batch from `more`.
    fn next(&mut self, mut more: impl FnMut() -> Option<Arc<Vec<Segment>>>) -> Option<Segment> {
        loop {
            if let Some(s) = self.batch.as_ref().and_then(|c| c.get(self.pos)) {
                self.pos += 1;
                return Some(*s);
            }
            // Dropping our share first hands the batch back to the reader sooner (`Reuse`).
            self.batch = None;
            self.batch = Some(more()?);
            self.pos = 0;
        }
    }
}

fn send_tap(tap: &mut Option<Tap>, segs: &Arc<Vec<Segment>>) {
    if let Some(t) = tap {
        if !segs.is_empty() && t.send(Arc::clone(segs)).is_err() {
            *tap = None;
        }
    }
}

/// The reader's shares of the batches it sent: a batch whose consumers have all dropped it
/// (the stream's engine and, in a two-vantage run, the matcher's tap) is filled again instead
/// of a new allocation. A buffer returned through a channel by one consumer could not be
/// reused while the other still read it; counting the shares needs no channel.
struct Reuse(std::collections::VecDeque<Arc<Vec<Segment>>>);

impl Reuse {
    fn next(&mut self) -> Vec<Segment> {
        // Only this thread clones these Arcs, so a count of one cannot rise before the unwrap.
        if let Some(i) = self.0.iter().position(|a| Arc::strong_count(a) == 1) {
            if let Ok(mut v) = Arc::try_unwrap(self.0.remove(i).expect("found")) {
                v.clear(); // a stale batch left in a reused buffer would be replayed
                return v;
            }
        }
        Vec::with_capacity(BATCH)
    }

    fn keep(&mut self, sent: &Arc<Vec<Segment>>) {
        if self.0.len() == REUSE {
            self.0.pop_front(); // a slow consumer holds them all: let it free the oldest
        }
        self.0.push_back(Arc::clone(sent));
    }
}

fn read_all(path: &Path, tx: SyncSender<Batch>, mut tap: Option<Tap>, mut outers: Outers) -> CaptureStats {
    let mut stats = CaptureStats::default();
    let mut reader = match CaptureReader::open(path) {
        Ok(r) => r,
        Err(e) => {
            stats.error = Some(e.to_string());
            return stats;
        }
    };
    let mut reuse = Reuse(Default::default());
    let mut segs = Vec::with_capacity(BATCH);
    let (mut links, mut tracker) = (Vec::with_capacity(BATCH), LinkTracker::default());
    // Per-packet counters in plain locals (into `stats` at the end): the loop runs a
    // million times per capture and the optional times cost a test each.
    let (mut packets, mut tcp_packets) = (0u64, 0u64);
    let mut last_ts = Nanos::MIN;
    loop {
        match reader.next_frame() {
            Ok(Some(frame)) => {
                if packets == 0 {
                    stats.first_ts = Some(frame.ts);
                }
                packets += 1;
                last_ts = last_ts.max(frame.ts);
                match decode_append(&frame, &mut segs, &mut outers) {
                    Ok(()) => {
                        tcp_packets += 1;
                        links.push(tracker.next(segs.last().expect("just decoded")));
                        if segs.len() == BATCH {
                            let full = Arc::new(std::mem::replace(&mut segs, reuse.next()));
                            reuse.keep(&full);
                            send_tap(&mut tap, &full);
                            let links = std::mem::replace(&mut links, Vec::with_capacity(BATCH));
                            if tx.send(Batch { segs: full, links, bytes_read: reader.bytes_read() }).is_err() {
                                break; // the consumer stopped listening
                            }
                        }
                    }
                    Err(Stop::NotTcp) => stats.other_packets += 1,
                    Err(Stop::Malformed(reason)) => stats.count_malformed(reason.name()),
                }
            }
            Ok(None) => break,
            Err(e) => {
                stats.error = Some(e.to_string());
                break;
            }
        }
    }
    let segs = Arc::new(segs);
    send_tap(&mut tap, &segs);
    drop(tap); // the end of the file for the tap's consumer
    let _ = tx.send(Batch { segs, links, bytes_read: reader.bytes_read() });
    let jumps = reader.time_jumps();
    if let Some(first) = jumps.first {
        stats.time_jumps = jumps.jumps;
        stats.time_jump_offset = Some(first.offset);
        // a backward step alone is said once, by the error that stopped reading
        if jumps.jumps > 1 || jumps.stepped_back.is_none() {
            stats.time_jump = Some(format!(
                "{}: {} time jump(s) of more than a day, {} record(s) skipped; first: {first}",
                reader.name(),
                jumps.jumps,
                jumps.skipped
            ));
        }
        if jumps.skipped > 0 {
            stats.malformed.push(("time_jump", jumps.skipped));
        }
    }
    // records whose time field is corrupt: skipped by the reader, counted per reason
    stats.malformed.extend(reader.bad_times().reasons());
    stats.packets = packets;
    stats.tcp_packets = tcp_packets;
    stats.tunneled_packets = outers.packets;
    stats.last_ts = (packets > 0).then_some(last_ts);
    stats
}

/// Batches a tap may hold before its reader waits (a few: memory stays bounded).
const TAP_IN_FLIGHT: usize = 8;

/// A tap and the segments it receives, one by one, until the file's end.
pub fn tap() -> (Tap, Tapped) {
    let (tx, rx) = sync_channel(TAP_IN_FLIGHT);
    (tx, Tapped { rx, cursor: Cursor::default() })
}

/// The receiving end of a [`Tap`].
pub struct Tapped {
    rx: Receiver<Arc<Vec<Segment>>>,
    cursor: Cursor,
}

impl Tapped {
    /// The batches themselves, shared with the reader (no copy of a segment): the matcher
    /// merges two captures by reference into these.
    pub fn batches(self) -> impl Iterator<Item = Arc<Vec<Segment>>> {
        let Tapped { rx, cursor: Cursor { batch: current, pos } } = self;
        let rest = current.filter(|c| pos < c.len()).map(|c| Arc::new(c[pos..].to_vec()));
        rest.into_iter().chain(rx)
    }
}

impl Iterator for Tapped {
    type Item = Segment;

    fn next(&mut self) -> Option<Segment> {
        let Tapped { rx, cursor } = self;
        cursor.next(|| rx.recv().ok())
    }
}
