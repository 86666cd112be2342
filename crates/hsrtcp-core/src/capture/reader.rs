//! The streaming reader: one growable buffer, refilled from any `Read`, records parsed in
//! place and handed out as borrowed [`Frame`]s.
//!
//! Memory is bounded by the largest record accepted (see [`MAX_CAPLEN`]), never by the file
//! size. Block and record *layouts* are parsed with `pcap-parser`'s block parsers; this module
//! owns buffering, format detection, gzip, per-interface timestamp scaling and error positions.

use std::fs::File;
use std::io::{self, BufReader, Cursor, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use flate2::read::MultiGzDecoder;
use pcap_parser::pcapng::{
    parse_interfacedescriptionblock_be, parse_interfacedescriptionblock_le,
    parse_sectionheaderblock, InterfaceDescriptionBlock,
};

use super::error::{ByteOffset, CaptureError};
use super::linktype::LinkType;
use super::mapped::Mapped;
use super::time_jump::{ClockGuard, Verdict};
use crate::Nanos;

/// Largest captured length accepted per record: tcpdump's maximum snaplen (262144). Larger
/// values only come from corrupt files; a pcap header announcing a larger snaplen raises the
/// bound up to [`MAX_CAPLEN_HARD`].
pub const MAX_CAPLEN: u32 = 262_144;
/// Upper bound for the per-record limit whatever the file header says.
pub const MAX_CAPLEN_HARD: u32 = 16 << 20;
/// Largest pcapng header block (SHB, IDB) accepted: options beyond this are corruption.
const MAX_META_BLOCK: u32 = 1 << 20;
/// Room for EPB options (comments, flags, hashes) on top of the packet bytes.
const MAX_PACKET_OPTIONS: u32 = 1 << 16;

/// Default read buffer. Large reads keep syscalls and gzip calls per packet negligible;
/// 128 KB rather than 1 MB keeps what the kernel just copied in the core's cache for the
/// decoder (reader thread -2.5 ms of CPU on the bench capture, docs/engine.md "Cost").
const BUF_SIZE: usize = 1 << 17;
/// A refill keeps reading until at least this many bytes are buffered (or EOF).
const MIN_FILL: usize = BUF_SIZE / 4;

const SHB_TYPE: u32 = 0x0A0D_0D0A;
const IDB_TYPE: u32 = 0x0000_0001;
const OPB_TYPE: u32 = 0x0000_0002;
const SPB_TYPE: u32 = 0x0000_0003;
const EPB_TYPE: u32 = 0x0000_0006;

/// One captured record. Borrows the reader's buffer: valid until the next `next_frame` call.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Frame<'a> {
    /// Capture time, nanoseconds since the Unix epoch (pcapng `if_tsresol`/`if_tsoffset` applied).
    pub ts: Nanos,
    /// Link type of the interface this record was captured on.
    pub linktype: LinkType,
    /// The captured bytes (`caplen` of them; may be fewer than `orig_len` with a snaplen).
    pub data: &'a [u8],
    /// Length of the packet on the wire.
    pub orig_len: u32,
    /// Byte offset of the record header in the (decompressed) file.
    pub offset: u64,
    /// pcapng interface id (0 for pcap).
    pub iface: u32,
    /// Number of the record in the file, 1-based, counting every packet record (also those
    /// skipped for a corrupt time): Wireshark's `frame.number`.
    pub index: u64,
}

/// The container format found by [`CaptureReader`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFormat {
    /// Classic libpcap format.
    Pcap {
        nanosecond: bool,
        big_endian: bool,
        modified: bool,
    },
    PcapNg,
}

#[derive(Clone, Copy, Debug)]
struct PcapState {
    big_endian: bool,
    /// Multiplier from the fractional timestamp field to nanoseconds (1000 or 1).
    frac_to_ns: i64,
    /// Fractions of a second per second (10^6 or 10^9): a fraction field at or above it is
    /// corrupt (it would add up to 71 minutes to the record's time).
    frac_limit: u32,
    /// Record header length: 16, or 24 for the "modified" (Kuznetzov) format.
    rec_hdr: usize,
    linktype: LinkType,
    limit: u32,
}

/// Timestamp scaling of one pcapng interface.
#[derive(Clone, Copy, Debug)]
struct Iface {
    linktype: LinkType,
    snaplen: u32,
    units_per_sec: u64,
    /// Nanoseconds per unit when integral (µs, ns, ms …), else 0 and the slow path divides.
    ns_per_unit: u64,
    /// `if_tsoffset` in nanoseconds.
    offset_ns: i128,
}

impl Iface {
    /// The time of `units`, or `None` beyond ±2^63 ns (about 292 years from 1970), which only
    /// a corrupt timestamp, `if_tsresol` or `if_tsoffset` reaches.
    #[inline]
    fn nanos(&self, units: u64) -> Option<Nanos> {
        let ns = if self.ns_per_unit != 0 {
            units as i128 * self.ns_per_unit as i128
        } else {
            (units as u128 * 1_000_000_000u128 / self.units_per_sec as u128) as i128
        };
        Nanos::try_from(ns + self.offset_ns).ok()
    }
}

/// Records skipped for a corrupt time, per reason (`malformed_reasons` of the captures table).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BadTimes {
    /// pcap: the fraction of a second is ≥ 10^6 (µs files) or ≥ 10^9 (ns files).
    pub fraction: u64,
    /// pcapng: the time lies beyond ±2^63 ns.
    pub out_of_range: u64,
}

impl BadTimes {
    /// (reason, count) for the non-zero counts.
    pub fn reasons(&self) -> impl Iterator<Item = (&'static str, u64)> {
        [("bad_ts_fraction", self.fraction), ("ts_out_of_range", self.out_of_range)]
            .into_iter()
            .filter(|&(_, n)| n > 0)
    }
}

#[derive(Debug)]
struct NgState {
    big_endian: bool,
    ifaces: Vec<Iface>,
    /// Simple packet blocks carry no time; they get the previous packet's.
    last_ts: Nanos,
}

#[derive(Debug)]
enum Format {
    Pcap(PcapState),
    PcapNg(NgState),
}

/// Counts the bytes pulled from the underlying (possibly compressed) source, for progress.
struct Counting<R> {
    inner: R,
    n: Arc<AtomicU64>,
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let k = self.inner.read(buf)?;
        self.n.fetch_add(k as u64, Ordering::Relaxed);
        Ok(k)
    }
}

/// Streaming reader of pcap and pcapng captures, plain or gzip-compressed (detected by magic
/// number, not by file name).
///
/// ```no_run
/// # use hsrtcp_core::capture::CaptureReader;
/// let mut r = CaptureReader::open("trace.pcapng.gz".as_ref())?;
/// while let Some(frame) = r.next_frame()? {
///     println!("{} {} bytes", frame.ts, frame.orig_len);
/// }
/// # Ok::<(), hsrtcp_core::capture::CaptureError>(())
/// ```
///
/// Contract: `next_frame` returns the records in file order, `Ok(None)` at a clean end of
/// file, and `Err` once for a damaged file (after all complete records before the damage);
/// after an error or the end it keeps returning `Ok(None)`.
pub struct CaptureReader {
    name: String,
    src: Box<dyn Read + Send>,
    raw_bytes: Arc<AtomicU64>,
    gzip: bool,
    /// The read buffer (empty when the file is mapped).
    owned: Vec<u8>,
    /// The whole file, when it is a plain regular file (mapped.rs): read in place.
    map: Option<Mapped>,
    pos: usize,
    end: usize,
    /// Stream offset of `buf[0]`.
    base: u64,
    eof: bool,
    /// A read error met after enough bytes were buffered: reported when they run out.
    pending: Option<io::Error>,
    done: bool,
    format: Format,
    /// Time-jump guard (time_jump.rs) and the records it holds back (a second one only at
    /// the start of a capture), copied out of `buf`.
    clock: ClockGuard,
    held: [(Option<RecMeta>, Vec<u8>); 2],
    /// A record read while judging the held one, delivered at the next call (still in `buf`).
    deferred: Option<(RecMeta, usize, usize)>,
    /// An error met while a record was held, reported after that record.
    deferred_err: Option<CaptureError>,
    bad_times: BadTimes,
    /// Packet records met so far (the last one's [`Frame::index`]).
    records: u64,
}

impl std::fmt::Debug for CaptureReader {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CaptureReader")
            .field("name", &self.name)
            .field("gzip", &self.gzip)
            .field("offset", &(self.base + self.pos as u64))
            .field("format", &self.format)
            .finish()
    }
}

#[inline]
fn rd32(b: &[u8], at: usize, big_endian: bool) -> u32 {
    let v = u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]]);
    // A conditional swap instead of two loads: no branch in the record loop.
    if big_endian {
        v.swap_bytes()
    } else {
        v
    }
}

/// The fields of a pcap record header: seconds, fraction, captured and original length.
#[inline(always)]
fn pcap_record_header(b: &[u8], big_endian: bool) -> (u32, u32, u32, u32) {
    (rd32(b, 0, big_endian), rd32(b, 4, big_endian), rd32(b, 8, big_endian), rd32(b, 12, big_endian))
}

/// What a non-capture file most likely is, from its first bytes.
fn magic_hint(b: &[u8]) -> &'static str {
    match b {
        [0x28, 0xb5, 0x2f, 0xfd, ..] => ", looks like zstd (decompress it first: zstd -d)",
        [0xfd, b'7', b'z', b'X', ..] => ", looks like xz (decompress it first: xz -d)",
        [b'B', b'Z', b'h', ..] => ", looks like bzip2 (decompress it first: bunzip2)",
        [0x04, 0x22, 0x4d, 0x18, ..] => ", looks like lz4",
        [b'P', b'K', 3, 4, ..] => ", looks like a zip archive",
        [b's', b'n', b'o', b'o', ..] => ", looks like a snoop capture (convert with editcap)",
        _ if !b.is_empty()
            && b.iter()
                .all(|c| c.is_ascii_graphic() || c.is_ascii_whitespace()) =>
        {
            ", looks like text"
        }
        _ => "",
    }
}

impl CaptureReader {
    /// Open a capture file. The name in errors is the path as given.
    pub fn open(path: &Path) -> Result<Self, CaptureError> {
        let name = path.display().to_string();
        let file = File::open(path).map_err(|source| CaptureError::Io {
            file: name.clone(),
            at: ByteOffset {
                offset: 0,
                decompressed: false,
            },
            source,
        })?;
        // A plain regular file is read in place (mapped.rs); gzip, pipes and the rest with read().
        if let Some(map) = Mapped::new(&file).filter(|m| !m.starts_with(&[0x1f, 0x8b])) {
            return Self::start(Self::new(Box::new(io::empty()), name, Some(map)));
        }
        Self::from_reader(Box::new(file), name)
    }

    /// Read a capture from any byte stream (file, pipe, socket, memory). `name` is used in
    /// error messages.
    pub fn from_reader(r: Box<dyn Read + Send>, name: String) -> Result<Self, CaptureError> {
        Self::start(Self::new(r, name, None))
    }

    /// A reader of `r`, or of `map` (the whole input, `r` then unused), before the format
    /// is read.
    fn new(r: Box<dyn Read + Send>, name: String, map: Option<Mapped>) -> Self {
        let raw_bytes = Arc::new(AtomicU64::new(0));
        let src: Box<dyn Read + Send> = Box::new(Counting {
            inner: r,
            n: raw_bytes.clone(),
        });
        let mapped = map.as_ref().map(|m| m.len());
        CaptureReader {
            name,
            src,
            raw_bytes,
            gzip: false,
            owned: if mapped.is_some() { Vec::new() } else { vec![0; BUF_SIZE] },
            map,
            pos: 0,
            end: mapped.unwrap_or(0),
            base: 0,
            eof: mapped.is_some(),
            pending: None,
            done: false,
            clock: ClockGuard::default(),
            held: Default::default(),
            deferred: None,
            deferred_err: None,
            bad_times: BadTimes::default(),
            records: 0,
            format: Format::Pcap(PcapState {
                big_endian: false,
                frac_to_ns: 1000,
                frac_limit: 1_000_000,
                rec_hdr: 16,
                linktype: LinkType::ETHERNET,
                limit: MAX_CAPLEN,
            }),
        }
    }

    /// Detect the format (gzip around it too) and read the file header.
    fn start(mut me: Self) -> Result<Self, CaptureError> {
        me.fill(4)?;
        if me.avail() == 0 {
            return Err(CaptureError::Empty { file: me.name });
        }
        if me.avail() >= 2 && me.buf()[0] == 0x1f && me.buf()[1] == 0x8b {
            // Gzip: put the sniffed bytes back in front of the rest of the stream.
            let prefix = Cursor::new(me.buf()[me.pos..me.end].to_vec());
            let rest = std::mem::replace(&mut me.src, Box::new(io::empty()));
            let chained = BufReader::with_capacity(1 << 17, prefix.chain(rest));
            me.src = Box::new(MultiGzDecoder::new(chained));
            me.gzip = true;
            me.pos = 0;
            me.end = 0;
            me.eof = false;
            me.fill(4)?;
            if me.avail() == 0 {
                return Err(CaptureError::TruncatedHeader {
                    file: me.name.clone(),
                    at: me.at(0),
                    need: 24,
                    have: 0,
                });
            }
        }
        if me.avail() < 4 {
            return Err(CaptureError::TruncatedHeader {
                file: me.name.clone(),
                at: me.at(0),
                need: 24,
                have: me.avail() as u64,
            });
        }
        let magic = [me.buf()[0], me.buf()[1], me.buf()[2], me.buf()[3]];
        match magic {
            [0x0a, 0x0d, 0x0d, 0x0a] => {
                me.format = Format::PcapNg(NgState {
                    big_endian: false,
                    ifaces: Vec::new(),
                    last_ts: 0,
                })
            }
            _ => match u32::from_le_bytes(magic) {
                0xa1b2_c3d4 | 0xa1b2_3c4d | 0xa1b2_cd34 | 0xd4c3_b2a1 | 0x4d3c_b2a1
                | 0x34cd_b2a1 => me.read_pcap_header()?,
                _ => {
                    let n = me.avail().min(8);
                    let hex: Vec<String> = me.buf()[..n].iter().map(|b| format!("{b:02x}")).collect();
                    return Err(CaptureError::WrongMagic {
                        file: me.name.clone(),
                        at: me.at(0),
                        magic: hex.join(" "),
                        hint: magic_hint(&me.buf()[..n]),
                    });
                }
            },
        }
        Ok(me)
    }

    /// The name used in error messages.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The container format.
    pub fn format(&self) -> CaptureFormat {
        match &self.format {
            Format::Pcap(p) => CaptureFormat::Pcap {
                nanosecond: p.frac_to_ns == 1,
                big_endian: p.big_endian,
                modified: p.rec_hdr == 24,
            },
            Format::PcapNg(_) => CaptureFormat::PcapNg,
        }
    }

    /// Whether the input was gzip-compressed.
    pub fn is_gzip(&self) -> bool {
        self.gzip
    }

    /// Bytes of the input file consumed so far: compressed bytes for gzip input (read-ahead
    /// included, so it runs up to one buffer ahead), else the offset of the next record.
    /// Meant for progress bars against the file size.
    pub fn bytes_read(&self) -> u64 {
        if self.gzip {
            self.raw_bytes.load(Ordering::Relaxed)
        } else {
            self.base + self.pos as u64
        }
    }

    /// Offset of the next record in the (decompressed) stream.
    pub fn offset(&self) -> u64 {
        self.base + self.pos as u64
    }

    /// Time jumps found so far (time_jump.rs): how many, how many records were skipped for
    /// them, and the first one with its byte offset.
    pub fn time_jumps(&self) -> &ClockGuard {
        &self.clock
    }

    /// Records skipped so far because their time is corrupt (counted per reason, never
    /// delivered).
    pub fn bad_times(&self) -> BadTimes {
        self.bad_times
    }

    /// The next record, `Ok(None)` at the end, `Err` once if the file is damaged. Records
    /// that jump in time are held back one record and skipped when they are lone outliers
    /// ([`super::time_jump`]).
    #[inline]
    pub fn next_frame(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        if let Some(m) = &mut self.map {
            m.release_below(self.pos);
        }
        // The common case, once per record: a little-endian pcap file, nothing held back,
        // deferred or ended, the whole record in the buffer and its time near the capture's
        // clock. Everything else (refills, other formats, errors, time jumps) goes the long
        // way, which reads the same record again from the same position.
        if let Format::Pcap(st) = self.format {
            if !st.big_endian && self.deferred.is_none() && !self.done {
                let (p, h) = (self.pos, st.rec_hdr);
                if self.avail() >= h {
                    let (sec, frac, caplen, orig_len) = pcap_record_header(&self.buf()[p..p + 16], false);
                    let total = h + caplen as usize;
                    let ts = sec as i64 * 1_000_000_000 + frac as i64 * st.frac_to_ns;
                    if caplen <= st.limit
                        && frac < st.frac_limit
                        && self.avail() >= total
                        && self.clock.accept_steady(ts)
                        && !self.map_lost(p + total)
                    {
                        self.records += 1;
                        let rec = RecMeta { ts, linktype: st.linktype, orig_len, offset: self.base + p as u64, iface: 0, index: self.records };
                        self.pos = p + total;
                        return Ok(Some(frame(rec, &self.buf()[p + h..p + total])));
                    }
                }
            }
        }
        self.next_frame_judged()
    }

    /// [`Self::next_frame`] the long way: every format, buffer refills, errors and the
    /// time-jump guard's full judgement.
    #[inline(never)]
    fn next_frame_judged(&mut self) -> Result<Option<Frame<'_>>, CaptureError> {
        if let Some((rec, start, len)) = self.deferred.take() {
            return Ok(Some(frame(rec, &self.buf()[start..start + len])));
        }
        loop {
            if self.done {
                return self.deferred_err.take().map_or(Ok(None), Err);
            }
            let r = match self.format {
                Format::Pcap(st) => self.next_pcap(st),
                Format::PcapNg(_) => self.next_pcapng(),
            };
            // A page of the mapped file lost under this record or the one before: its bytes
            // read as zeros, so the file ends at this record, with an error.
            let (at, end) = match &r {
                Ok(Some((rec, start, len))) => (rec.offset, start + len),
                _ => (self.base + self.pos as u64, 0),
            };
            let r = if self.map_lost(end) { Err(self.shrank(at)) } else { r };
            let (rec, start, len) = match r {
                Ok(Some(x)) => x,
                Ok(None) | Err(_) => {
                    self.done = true;
                    let err = r.err();
                    if self.clock.at_end() {
                        self.deferred_err = err;
                        return Ok(Some(self.release(0)));
                    }
                    return err.map_or(Ok(None), Err);
                }
            };
            if self.clock.accept_steady(rec.ts) {
                return Ok(Some(frame(rec, &self.buf()[start..start + len])));
            }
            match self.clock.check(rec.ts, rec.offset) {
                Verdict::Deliver | Verdict::SkipHeld => {
                    return Ok(Some(frame(rec, &self.buf()[start..start + len])));
                }
                Verdict::Hold | Verdict::SkipHeldAndHold => self.hold(0, rec, start, len),
                Verdict::HoldSecond => self.hold(1, rec, start, len),
                Verdict::ShiftHold => {
                    self.held.swap(0, 1);
                    self.hold(1, rec, start, len);
                }
                v @ (Verdict::ReleaseHeld | Verdict::ReleaseSecond) => {
                    self.deferred = Some((rec, start, len));
                    return Ok(Some(self.release((v == Verdict::ReleaseSecond) as usize)));
                }
                Verdict::StepBack => {
                    self.done = true;
                    self.held = Default::default();
                    let j = self.clock.stepped_back.expect("a step back is recorded");
                    let s = |t: Nanos| t as f64 * 1e-9;
                    let from = j.from.unwrap_or(j.ts);
                    return Err(CaptureError::ClockStepBack {
                        file: self.name.clone(),
                        at: ByteOffset { offset: j.offset, decompressed: self.gzip },
                        back_s: s(from - j.ts),
                        from_s: s(from),
                        to_s: s(j.ts),
                    });
                }
            }
        }
    }

    /// Copy a record out of the buffer to judge it by the next one (rare: time jumps and
    /// the first record of a capture).
    #[cold]
    fn hold(&mut self, slot: usize, rec: RecMeta, start: usize, len: usize) {
        let mut data = std::mem::take(&mut self.held[slot].1);
        data.clear();
        data.extend_from_slice(&self.buf()[start..start + len]);
        self.held[slot] = (Some(rec), data);
    }

    /// The held record of `slot`, delivered; the other one (if any) is dropped.
    fn release(&mut self, slot: usize) -> Frame<'_> {
        self.held[1 - slot].0 = None;
        let rec = self.held[slot].0.take().expect("the guard released a held record");
        frame(rec, &self.held[slot].1)
    }

    // ---- buffer management -------------------------------------------------------------

    /// The buffered bytes: the read buffer, or the whole mapped file.
    #[inline(always)]
    fn buf(&self) -> &[u8] {
        match &self.map {
            Some(m) => m,
            None => &self.owned,
        }
    }

    /// Whether the mapped file lost pages while being read (mapped.rs), up to byte `end`
    /// (exclusive) of the map: the byte before it is read first, so that a record's last
    /// page is known to be there before the record is delivered.
    #[inline(always)]
    fn map_lost(&self, end: usize) -> bool {
        match &self.map {
            Some(m) => {
                if end > 0 {
                    std::hint::black_box(m[end - 1]);
                }
                m.truncated()
            }
            None => false,
        }
    }

    /// The error for a mapped file that lost pages, at the record at byte `at`.
    #[cold]
    fn shrank(&self, at: u64) -> CaptureError {
        let source = io::Error::new(io::ErrorKind::UnexpectedEof, "the file shrank while it was being read");
        CaptureError::Io { file: self.name.clone(), at: ByteOffset { offset: at, decompressed: false }, source }
    }

    #[inline]
    fn avail(&self) -> usize {
        self.end - self.pos
    }

    fn at(&self, pos_in_buf: usize) -> ByteOffset {
        ByteOffset {
            offset: self.base + pos_in_buf as u64,
            decompressed: self.gzip,
        }
    }

    /// Make `need` bytes available at `pos`. `Ok(false)` when the input ends first.
    #[inline]
    fn fill(&mut self, need: usize) -> Result<bool, CaptureError> {
        if self.avail() >= need {
            return Ok(true);
        }
        self.refill(need)
    }

    #[cold]
    fn refill(&mut self, need: usize) -> Result<bool, CaptureError> {
        if let Some(e) = self.pending.take() {
            return Err(self.read_error(e));
        }
        if self.eof {
            return Ok(false);
        }
        // Move the partial record to the front; it is shorter than one record.
        self.owned.copy_within(self.pos..self.end, 0);
        self.base += self.pos as u64;
        self.end -= self.pos;
        self.pos = 0;
        if self.owned.len() < need {
            self.owned.resize(need.next_power_of_two(), 0);
        }
        let target = need.max(MIN_FILL.min(self.owned.len()));
        while self.end < target {
            match self.src.read(&mut self.owned[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    break;
                }
                Ok(n) => self.end += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => {
                    if self.end >= need {
                        self.pending = Some(e);
                        break;
                    }
                    return Err(self.read_error(e));
                }
            }
        }
        Ok(self.end >= need)
    }

    fn read_error(&self, source: io::Error) -> CaptureError {
        let at = self.at(self.end);
        if self.gzip {
            CaptureError::Gzip {
                file: self.name.clone(),
                at,
                source,
            }
        } else {
            CaptureError::Io {
                file: self.name.clone(),
                at,
                source,
            }
        }
    }

    /// Skip `n` bytes from `pos` without buffering them. `Ok(false)` if the input ends first.
    fn skip(&mut self, n: u64) -> Result<bool, CaptureError> {
        if (self.avail() as u64) >= n {
            self.pos += n as usize;
            return Ok(true);
        }
        let mut left = n - self.avail() as u64;
        self.base += self.end as u64;
        self.pos = 0;
        self.end = 0;
        while left > 0 {
            if !self.fill(1)? {
                return Ok(false);
            }
            let take = (self.avail() as u64).min(left) as usize;
            self.pos += take;
            left -= take as u64;
        }
        Ok(true)
    }

    fn truncated(&self, need: u64, have: u64) -> CaptureError {
        CaptureError::TruncatedRecord {
            file: self.name.clone(),
            at: self.at(self.pos),
            need,
            have,
        }
    }

    fn malformed(&self, what: &'static str, detail: String) -> CaptureError {
        CaptureError::Malformed {
            file: self.name.clone(),
            at: self.at(self.pos),
            what,
            detail,
        }
    }

    fn absurd(&self, what: &'static str, len: u64, limit: u64) -> CaptureError {
        CaptureError::AbsurdLength {
            file: self.name.clone(),
            at: self.at(self.pos),
            what,
            len,
            limit,
        }
    }

    // ---- pcap --------------------------------------------------------------------------

    fn read_pcap_header(&mut self) -> Result<(), CaptureError> {
        if !self.fill(24)? {
            return Err(CaptureError::TruncatedHeader {
                file: self.name.clone(),
                at: self.at(self.pos),
                need: 24,
                have: self.avail() as u64,
            });
        }
        let h = match pcap_parser::pcap::parse_pcap_header(&self.buf()[self.pos..self.pos + 24]) {
            Ok((_, h)) => h,
            Err(e) => return Err(self.malformed("pcap file header", format!("{e:?}"))),
        };
        if h.version_major != 2 {
            return Err(self.malformed(
                "pcap file header",
                format!(
                    "version {}.{}, expected 2.x",
                    h.version_major, h.version_minor
                ),
            ));
        }
        // Upper bits of the link type field carry FCS information (pcap spec §LinkType).
        let linktype = LinkType(h.network.0 as u32 & 0xFFFF);
        let limit = h.snaplen.clamp(MAX_CAPLEN, MAX_CAPLEN_HARD);
        self.format = Format::Pcap(PcapState {
            big_endian: h.is_bigendian(),
            frac_to_ns: if h.is_nanosecond_precision() { 1 } else { 1000 },
            frac_limit: if h.is_nanosecond_precision() { 1_000_000_000 } else { 1_000_000 },
            rec_hdr: if h.is_modified_format() || h.magic_number == 0x34cd_b2a1 {
                24
            } else {
                16
            },
            linktype,
            limit,
        });
        self.pos += 24;
        Ok(())
    }

    #[inline]
    fn next_pcap(
        &mut self,
        st: PcapState,
    ) -> Result<Option<(RecMeta, usize, usize)>, CaptureError> {
        let h = st.rec_hdr;
        loop {
            if !self.fill(h)? {
                if self.avail() == 0 {
                    return Ok(None);
                }
                return Err(self.truncated(h as u64, self.avail() as u64));
            }
            let (sec, frac, caplen, orig_len) = pcap_record_header(&self.buf()[self.pos..self.pos + 16], st.big_endian);
            if caplen > st.limit {
                return Err(self.absurd("record length", caplen as u64, st.limit as u64));
            }
            let total = h + caplen as usize;
            if !self.fill(total)? {
                return Err(self.truncated(caplen as u64, (self.avail() - h) as u64));
            }
            if frac >= st.frac_limit {
                // corrupt time: the record is skipped and counted, reading goes on
                self.bad_times.fraction += 1;
                self.records += 1;
                self.pos += total;
                continue;
            }
            return Ok(Some(self.pcap_record(st, sec, frac, caplen, orig_len)));
        }
    }

    #[inline]
    fn pcap_record(&mut self, st: PcapState, sec: u32, frac: u32, caplen: u32, orig_len: u32) -> (RecMeta, usize, usize) {
        let h = st.rec_hdr;
        let total = h + caplen as usize;
        self.records += 1;
        let rec = RecMeta {
            ts: sec as i64 * 1_000_000_000 + frac as i64 * st.frac_to_ns,
            linktype: st.linktype,
            orig_len,
            offset: self.base + self.pos as u64,
            iface: 0,
            index: self.records,
        };
        let start = self.pos + h;
        self.pos += total;
        (rec, start, caplen as usize)
    }

    // ---- pcapng ------------------------------------------------------------------------

    fn next_pcapng(&mut self) -> Result<Option<(RecMeta, usize, usize)>, CaptureError> {
        loop {
            if !self.fill(12)? {
                if self.avail() == 0 {
                    return Ok(None);
                }
                return Err(self.truncated(12, self.avail() as u64));
            }
            let p = self.pos;
            let b: [u8; 12] = self.buf()[p..p + 12].try_into().expect("12 bytes");
            let Format::PcapNg(ng) = &mut self.format else {
                unreachable!()
            };
            if b[..4] == [0x0a, 0x0d, 0x0d, 0x0a] {
                // Section header: its byte-order magic decides how to read everything after.
                ng.big_endian = match [b[8], b[9], b[10], b[11]] {
                    [0x4d, 0x3c, 0x2b, 0x1a] => false,
                    [0x1a, 0x2b, 0x3c, 0x4d] => true,
                    m => {
                        return Err(self.malformed(
                            "pcapng section header",
                            format!("byte-order magic {m:02x?}, expected 1a2b3c4d"),
                        ));
                    }
                };
            }
            let be = ng.big_endian;
            let btype = rd32(&b, 0, be);
            let blen = rd32(&b, 4, be);
            if blen < 12 || !blen.is_multiple_of(4) {
                return Err(self.malformed(
                    "pcapng block",
                    format!(
                        "block type {btype:#x} has length {blen}, must be ≥ 12 and a multiple of 4"
                    ),
                ));
            }
            match btype {
                SHB_TYPE | IDB_TYPE => {
                    self.need_block("pcapng header block length", blen, MAX_META_BLOCK)?;
                    if btype == SHB_TYPE {
                        self.section_header(blen)?;
                    } else {
                        self.interface_description(blen)?;
                    }
                    self.pos += blen as usize;
                }
                EPB_TYPE | SPB_TYPE | OPB_TYPE => {
                    self.need_block("pcapng packet block length", blen, MAX_CAPLEN + MAX_PACKET_OPTIONS + 32)?;
                    // (a record Wireshark numbers, also when skipped for its time below)
                    self.records += 1;
                    if let Some(r) = self.packet_block(btype, blen)? {
                        return Ok(Some(r));
                    }
                }
                _ => {
                    // Statistics, name resolution, secrets, custom …: not needed here.
                    let start = self.base + self.pos as u64;
                    if !self.skip(blen as u64)? {
                        let have = self.base + self.end as u64 - start;
                        return Err(CaptureError::TruncatedRecord {
                            file: self.name.clone(),
                            at: ByteOffset {
                                offset: start,
                                decompressed: self.gzip,
                            },
                            need: blen as u64,
                            have,
                        });
                    }
                }
            }
        }
    }

    /// The whole block of `blen` bytes in the buffer; a length over `limit` is corrupt.
    #[inline]
    fn need_block(&mut self, what: &'static str, blen: u32, limit: u32) -> Result<(), CaptureError> {
        if blen > limit {
            return Err(self.absurd(what, blen as u64, limit as u64));
        }
        if !self.fill(blen as usize)? {
            return Err(self.truncated(blen as u64, self.avail() as u64));
        }
        Ok(())
    }

    fn section_header(&mut self, blen: u32) -> Result<(), CaptureError> {
        let block = &self.buf()[self.pos..self.pos + blen as usize];
        match parse_sectionheaderblock(block) {
            Ok((_, shb)) if shb.major_version == 1 => {}
            Ok((_, shb)) => {
                return Err(self.malformed(
                    "pcapng section header",
                    format!(
                        "version {}.{}, expected 1.x",
                        shb.major_version, shb.minor_version
                    ),
                ))
            }
            Err(e) => return Err(self.malformed("pcapng section header", format!("{e:?}"))),
        }
        let Format::PcapNg(ng) = &mut self.format else {
            unreachable!()
        };
        // Interface ids are per section.
        ng.ifaces.clear();
        Ok(())
    }

    fn interface_description(&mut self, blen: u32) -> Result<(), CaptureError> {
        let Format::PcapNg(ng) = &self.format else {
            unreachable!()
        };
        let be = ng.big_endian;
        let block = &self.buf()[self.pos..self.pos + blen as usize];
        let parsed = if be {
            parse_interfacedescriptionblock_be(block)
        } else {
            parse_interfacedescriptionblock_le(block)
        };
        let iface = match parsed {
            Ok((_, idb)) => iface_from_idb(&idb, be),
            Err(e) => Err(format!("{e:?}")),
        };
        match iface {
            Ok(i) => {
                let Format::PcapNg(ng) = &mut self.format else {
                    unreachable!()
                };
                ng.ifaces.push(i);
                Ok(())
            }
            Err(detail) => Err(self.malformed("pcapng interface description", detail)),
        }
    }

    /// Parse a packet block already in the buffer; returns the frame or `None` to go on.
    #[inline]
    fn packet_block(
        &mut self,
        btype: u32,
        blen: u32,
    ) -> Result<Option<(RecMeta, usize, usize)>, CaptureError> {
        let Format::PcapNg(ng) = &self.format else {
            unreachable!()
        };
        let be = ng.big_endian;
        let p = self.pos;
        let block = &self.buf()[p..p + blen as usize];
        let (if_id, units, caplen, orig_len, data_at) = match btype {
            EPB_TYPE => {
                if blen < 32 {
                    return Err(self.malformed(
                        "pcapng enhanced packet block",
                        format!("length {blen} < 32"),
                    ));
                }
                let caplen = rd32(block, 20, be);
                if caplen > MAX_CAPLEN {
                    return Err(self.absurd("captured length", caplen as u64, MAX_CAPLEN as u64));
                }
                if caplen as u64 > blen as u64 - 32 {
                    return Err(self.malformed(
                        "pcapng enhanced packet block",
                        format!("captured length {caplen} exceeds the block length {blen}"),
                    ));
                }
                // The fixed fields are read here rather than through pcap-parser's EPB parser:
                // that one also parses the options into a Vec and cost 46 % of the pcapng
                // read time (measured on 1 M records); the options are not needed.
                let trailer = rd32(block, blen as usize - 4, be);
                if trailer != blen {
                    return Err(self.malformed(
                        "pcapng enhanced packet block",
                        format!("trailing block length {trailer} differs from the leading {blen}"),
                    ));
                }
                let units = (rd32(block, 12, be) as u64) << 32 | rd32(block, 16, be) as u64;
                (rd32(block, 8, be), units, caplen, rd32(block, 24, be), 28)
            }
            OPB_TYPE => {
                // Obsolete packet block (pcapng draft ≤ 1.0): 16-bit interface id and drops count.
                if blen < 32 {
                    return Err(
                        self.malformed("pcapng packet block", format!("length {blen} < 32"))
                    );
                }
                let w = rd32(block, 8, be);
                let if_id = if be { w >> 16 } else { w & 0xFFFF };
                let units = (rd32(block, 12, be) as u64) << 32 | rd32(block, 16, be) as u64;
                let caplen = rd32(block, 20, be);
                if caplen as u64 > blen as u64 - 32 {
                    return Err(self.malformed(
                        "pcapng packet block",
                        format!("captured length {caplen} exceeds the block length {blen}"),
                    ));
                }
                (if_id, units, caplen, rd32(block, 24, be), 28)
            }
            _ => {
                // Simple packet block: interface 0, no timestamp, caplen implied by the block.
                if blen < 16 {
                    return Err(
                        self.malformed("pcapng simple packet block", format!("length {blen} < 16"))
                    );
                }
                let orig_len = rd32(block, 8, be);
                let mut caplen = orig_len.min(blen - 16);
                if let Some(i) = ng.ifaces.first() {
                    if i.snaplen != 0 {
                        caplen = caplen.min(i.snaplen);
                    }
                }
                (0, u64::MAX, caplen, orig_len, 12)
            }
        };
        let Some(iface) = ng.ifaces.get(if_id as usize).copied() else {
            return Err(self.malformed(
                "pcapng packet block",
                format!(
                    "refers to interface {if_id} but the section has {} interface description(s)",
                    ng.ifaces.len()
                ),
            ));
        };
        let ts = if units == u64::MAX {
            ng.last_ts
        } else {
            match iface.nanos(units) {
                Some(t) => t,
                None => {
                    // corrupt time: the block is skipped and counted, reading goes on
                    self.bad_times.out_of_range += 1;
                    self.pos += blen as usize;
                    return Ok(None);
                }
            }
        };
        let Format::PcapNg(ng) = &mut self.format else {
            unreachable!()
        };
        ng.last_ts = ts;
        let rec = RecMeta {
            ts,
            linktype: iface.linktype,
            orig_len,
            offset: self.base + p as u64,
            iface: if_id,
            index: self.records,
        };
        self.pos += blen as usize;
        Ok(Some((rec, p + data_at, caplen as usize)))
    }
}

#[inline]
fn frame(rec: RecMeta, data: &[u8]) -> Frame<'_> {
    Frame { ts: rec.ts, linktype: rec.linktype, data, orig_len: rec.orig_len, offset: rec.offset, iface: rec.iface, index: rec.index }
}

/// Per-record values gathered before the frame borrows the buffer.
#[derive(Clone, Copy)]
struct RecMeta {
    ts: Nanos,
    linktype: LinkType,
    orig_len: u32,
    offset: u64,
    iface: u32,
    index: u64,
}

/// Interface parameters from an IDB. `if_tsresol` and `if_tsoffset` are read here with the
/// section's byte order (pcap-parser 0.16 reads `if_tsoffset` as little-endian always and
/// rejects every power-of-two resolution).
fn iface_from_idb(idb: &InterfaceDescriptionBlock, big_endian: bool) -> Result<Iface, String> {
    let mut tsresol = 6u8;
    let mut tsoffset = 0i64;
    for opt in &idb.options {
        match opt.code.0 {
            9 if !opt.value.is_empty() => tsresol = opt.value[0],
            14 if opt.value.len() >= 8 => {
                let a: [u8; 8] = opt.value[..8].try_into().expect("8 bytes");
                tsoffset = if big_endian {
                    i64::from_be_bytes(a)
                } else {
                    i64::from_le_bytes(a)
                };
            }
            _ => {}
        }
    }
    let units_per_sec = if tsresol & 0x80 == 0 {
        if tsresol > 19 {
            return Err(format!("if_tsresol 10^-{tsresol} is finer than 10^-19"));
        }
        10u64.pow(tsresol as u32)
    } else {
        let k = tsresol & 0x7f;
        if k > 63 {
            return Err(format!("if_tsresol 2^-{k} is finer than 2^-63"));
        }
        1u64 << k
    };
    let ns_per_unit = if 1_000_000_000 % units_per_sec == 0 {
        1_000_000_000 / units_per_sec
    } else {
        0
    };
    Ok(Iface {
        linktype: LinkType(idb.linktype.0 as u32 & 0xFFFF),
        snaplen: idb.snaplen,
        units_per_sec,
        ns_per_unit,
        offset_ns: tsoffset as i128 * 1_000_000_000,
    })
}
