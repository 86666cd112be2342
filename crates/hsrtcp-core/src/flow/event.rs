//! Events: one row per notable thing that happened in a connection.
//!
//! The flow engine pushes [`Event`] values; they become the `events` table (schema
//! [`EVENT_COLUMNS`], documented in docs/formats/events.md).

pub use crate::table::registry::{EVENTS_VERSION, EVENT_COLUMNS};
use crate::table::{Cell, TableBuilder};
use crate::wire::Nanos;

/// Which way the packet(s) of an event travelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dir {
    /// client → server (the opener to the listener)
    C2S,
    /// server → client
    S2C,
}

impl Dir {
    pub fn name(self) -> &'static str {
        match self {
            Dir::C2S => "c2s",
            Dir::S2C => "s2c",
        }
    }
    pub fn rev(self) -> Dir {
        match self {
            Dir::C2S => Dir::S2C,
            Dir::S2C => Dir::C2S,
        }
    }
    pub fn idx(self) -> usize {
        self as usize
    }
}

/// What an event is about (events.kind; each kind's meaning, class, cause and value are in
/// docs/formats/events.md): a closed set, so a mistyped kind is a compile error.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EventKind {
    Handshake,
    Close,
    Gap,
    Interruption,
    Suspension,
    ZeroWindow,
    FullWindow,
    WindowProbe,
    Retransmission,
    Duplicate,
    Reordering,
    SpuriousRetransmission,
    SpuriousTimeout,
    TimeoutSequence,
    SackBlock,
}

impl EventKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Handshake => "handshake",
            Self::Close => "close",
            Self::Gap => "gap",
            Self::Interruption => "interruption",
            Self::Suspension => "suspension",
            Self::ZeroWindow => "zero_window",
            Self::FullWindow => "full_window",
            Self::WindowProbe => "window_probe",
            Self::Retransmission => "retransmission",
            Self::Duplicate => "duplicate",
            Self::Reordering => "reordering",
            Self::SpuriousRetransmission => "spurious_retransmission",
            Self::SpuriousTimeout => "spurious_timeout",
            Self::TimeoutSequence => "timeout_sequence",
            Self::SackBlock => "sack_block",
        }
    }
}

/// One event. `kind` names what happened; `class` refines it (retransmission class,
/// spurious-timeout detection method, end reason …); `cause` explains it when known.
#[derive(Clone, Debug, PartialEq)]
pub struct Event {
    pub kind: EventKind,
    pub class: Option<&'static str>,
    pub cause: Option<&'static str>,
    pub ts: Nanos,
    pub ts_end: Option<Nanos>,
    pub dir: Option<Dir>,
    /// Relative sequence range (bytes from the direction's first sequence number).
    pub seq_start: Option<i64>,
    pub seq_end: Option<i64>,
    pub count: Option<u64>,
    /// A kind-specific number, documented per kind (e.g. RTO bias in seconds).
    pub value: Option<f64>,
    /// Number of the capture record of the packet the event was found at, when the event's
    /// time is that packet's (set by the flow table: flow/table.rs, `stamp_frames`).
    pub frame: Option<u64>,
}

impl Event {
    /// An event about the bytes [s, e) of one direction.
    pub fn on_bytes(kind: EventKind, ts: Nanos, dir: Dir, s: i64, e: i64) -> Self {
        Event {
            dir: Some(dir),
            seq_start: Some(s),
            seq_end: Some(e),
            ..Event::new(kind, ts)
        }
    }

    pub fn new(kind: EventKind, ts: Nanos) -> Self {
        Event {
            kind,
            class: None,
            cause: None,
            ts,
            ts_end: None,
            dir: None,
            seq_start: None,
            seq_end: None,
            count: None,
            value: None,
            frame: None,
        }
    }
}

pub fn nanos_to_s(t: Nanos) -> f64 {
    t as f64 * 1e-9
}

/// Append `e` as one `events` row (schema [`EVENT_COLUMNS`]). Whole rows in schema order:
/// events are the long table (an RTT sample per ACK).
pub fn write_event(t: &mut TableBuilder, flow_id: u64, e: &Event) {
    t.append_row(&[
        Cell::U64(Some(flow_id)),
        Cell::Str(Some(e.kind.as_str())),
        Cell::Str(e.class),
        Cell::Str(e.cause),
        Cell::F64(Some(nanos_to_s(e.ts))),
        Cell::F64(e.ts_end.map(nanos_to_s)),
        Cell::F64(e.ts_end.map(|x| nanos_to_s(x - e.ts))),
        Cell::Str(e.dir.map(Dir::name)),
        Cell::I64(e.seq_start),
        Cell::I64(e.seq_end),
        Cell::U64(e.count),
        Cell::F64(e.value),
        Cell::U64(e.frame),
    ]);
}
