//! Streaming capture input: pcap and pcapng, plain or gzip-compressed.
//!
//! [`CaptureReader`] turns any file or byte stream into a sequence of [`Frame`]s — capture
//! time in nanoseconds, link type, the captured bytes and the original length — in bounded
//! memory whatever the file size: a plain file is read in place through a memory map whose
//! pages behind the reader are dropped as it goes (mapped.rs), any other stream through one
//! buffer of 128 KiB, grown only up to the largest accepted record (256 KiB by default).
//!
//! What is detected, by magic number and never by file name:
//! - pcap with microsecond or nanosecond timestamps, either byte order, and the "modified"
//!   (Kuznetzov, 24-byte record header) variant;
//! - pcapng, several sections (each with its own byte order) and several interfaces per
//!   section, each with its own link type, `if_tsresol` (powers of ten and of two) and
//!   `if_tsoffset`; enhanced, simple and obsolete packet blocks; other blocks are skipped;
//! - gzip around either (multi-member streams too).
//!
//! Records whose time jumps by more than a day are held back and skipped when they are
//! lone outliers ([`time_jump`]; counted in [`CaptureReader::time_jumps`]).
//!
//! Damage is reported once, as a [`CaptureError`] naming the file and the byte offset, after
//! every complete record before it has been delivered.
mod error;
mod linktype;
mod mapped;
mod reader;
pub mod time_jump;

pub use error::{ByteOffset, CaptureError};
pub use linktype::LinkType;
pub use reader::{BadTimes, CaptureFormat, CaptureReader, Frame, MAX_CAPLEN, MAX_CAPLEN_HARD};
