//! Errors of the capture reader. Every error about the input names the file and the byte
//! offset where the problem starts, so a user can look at it with `xxd -s OFFSET`.

use std::fmt;
use std::io;

/// A byte position in the capture. For gzip-compressed captures offsets count bytes of the
/// decompressed stream (the compressed position of a record is not well defined).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ByteOffset {
    pub offset: u64,
    pub decompressed: bool,
}

impl fmt::Display for ByteOffset {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.decompressed {
            write!(f, "{} of the decompressed stream", self.offset)
        } else {
            write!(f, "{}", self.offset)
        }
    }
}

/// Why reading a capture stopped. After any error the reader is finished:
/// [`super::CaptureReader::next_frame`] returns `Ok(None)` from then on.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    /// The file could not be opened or read.
    #[error("{file}: cannot read at byte {at}: {source}")]
    Io {
        file: String,
        at: ByteOffset,
        #[source]
        source: io::Error,
    },
    /// Zero bytes: not even a file header.
    #[error("{file}: empty file (0 bytes), not a capture")]
    Empty { file: String },
    /// The first bytes are not a pcap, pcapng or gzip magic number.
    #[error("{file}: not a pcap, pcapng or gzip-compressed capture at byte {at}: starts with {magic}{hint}")]
    WrongMagic {
        file: String,
        at: ByteOffset,
        /// The first bytes in hex.
        magic: String,
        /// What the bytes look like instead (", looks like zstd", …), possibly empty.
        hint: &'static str,
    },
    /// The file ends inside the file header (pcap) or section header (pcapng).
    #[error("{file}: truncated file header at byte {at} (need {need} bytes, {have} left)")]
    TruncatedHeader {
        file: String,
        at: ByteOffset,
        need: u64,
        have: u64,
    },
    /// The file ends inside a record: the record header or its data is cut.
    #[error("{file}: truncated record at byte {at} (header says {need} bytes, {have} left)")]
    TruncatedRecord {
        file: String,
        at: ByteOffset,
        need: u64,
        have: u64,
    },
    /// A record or block claims a length no capture tool writes: the file is corrupt here.
    #[error("{file}: absurd {what} at byte {at}: {len} bytes (limit {limit})")]
    AbsurdLength {
        file: String,
        at: ByteOffset,
        what: &'static str,
        len: u64,
        limit: u64,
    },
    /// A pcapng block (or pcap header field) that breaks the format rules.
    #[error("{file}: malformed {what} at byte {at}: {detail}")]
    Malformed {
        file: String,
        at: ByteOffset,
        what: &'static str,
        detail: String,
    },
    /// The capture's clock stepped back by more than a day (two records in a row agree on
    /// the earlier time): times after the step cannot be compared with those before it, so
    /// reading stops at the first record after it (capture/time_jump.rs).
    #[error("{file}: the capture's clock steps back {back_s:.0} s at byte {at} (record time {to_s:.6} s after {from_s:.6} s): times after it cannot be compared with those before, reading stopped there")]
    ClockStepBack {
        file: String,
        at: ByteOffset,
        back_s: f64,
        from_s: f64,
        to_s: f64,
    },
    /// The gzip stream is corrupt or ends early; frames before it were delivered.
    #[error("{file}: gzip error at byte {at}: {source}")]
    Gzip {
        file: String,
        at: ByteOffset,
        #[source]
        source: io::Error,
    },
}

impl CaptureError {
    /// The file name given to the reader.
    pub fn file(&self) -> &str {
        self.place().0
    }

    /// Byte offset of the problem (decompressed stream for gzip input); 0 for an empty file.
    pub fn offset(&self) -> u64 {
        self.place().1
    }

    /// The file and the byte offset, from one list of the variants.
    fn place(&self) -> (&str, u64) {
        match self {
            CaptureError::Empty { file } => (file, 0),
            CaptureError::Io { file, at, .. }
            | CaptureError::WrongMagic { file, at, .. }
            | CaptureError::TruncatedHeader { file, at, .. }
            | CaptureError::TruncatedRecord { file, at, .. }
            | CaptureError::AbsurdLength { file, at, .. }
            | CaptureError::Malformed { file, at, .. }
            | CaptureError::ClockStepBack { file, at, .. }
            | CaptureError::Gzip { file, at, .. } => (file, at.offset),
        }
    }

    /// A stable snake_case name of the kind, for counters and tests.
    pub fn kind(&self) -> &'static str {
        match self {
            CaptureError::Io { .. } => "io",
            CaptureError::Empty { .. } => "empty",
            CaptureError::WrongMagic { .. } => "wrong_magic",
            CaptureError::TruncatedHeader { .. } => "truncated_header",
            CaptureError::TruncatedRecord { .. } => "truncated_record",
            CaptureError::AbsurdLength { .. } => "absurd_length",
            CaptureError::Malformed { .. } => "malformed",
            CaptureError::ClockStepBack { .. } => "clock_step_back",
            CaptureError::Gzip { .. } => "gzip",
        }
    }
}
