//! Closed sets of the engine, each with the one string it writes to the tables
//! (docs/formats/flows.md, events.md): a name mistyped at a use is a compile error.

use crate::flow::event::Dir;

/// Where the capture sits relative to one direction's data (analyzers.md §3).
#[derive(Clone, Copy, PartialEq, Eq, Debug, Default)]
pub enum DataVantage {
    /// Not decided yet (vantage-dependent columns are then null).
    #[default]
    Unknown,
    Sender,
    Receiver,
}

impl DataVantage {
    /// The vantage for the data of `dir` when the capture sits next to the sender of `near`.
    #[inline]
    pub fn of(near: Option<Dir>, dir: Dir) -> Self {
        match near {
            None => Self::Unknown,
            Some(n) if n == dir => Self::Sender,
            Some(_) => Self::Receiver,
        }
    }

    pub fn known(self) -> bool {
        self != Self::Unknown
    }

    /// flows.data_vantage
    pub fn as_str(self) -> Option<&'static str> {
        match self {
            Self::Unknown => None,
            Self::Sender => Some("sender"),
            Self::Receiver => Some("receiver"),
        }
    }
}

/// Retransmission classes (events.class of kind `retransmission`, docs/formats/events.md;
/// packets.retrans), in the order of [`super::Tally::retrans`].
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum RetransClass {
    Fast,
    SackRefill,
    Rto,
    Tlp,
    /// The vantage is unknown.
    Unclassified,
}

impl RetransClass {
    pub const ALL: [Self; 5] = [Self::Fast, Self::SackRefill, Self::Rto, Self::Tlp, Self::Unclassified];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Fast => "fast",
            Self::SackRefill => "sack_refill",
            Self::Rto => "rto",
            Self::Tlp => "tlp",
            Self::Unclassified => "unclassified",
        }
    }
}

/// How a retransmission or a timeout was found unnecessary (events.class of kinds
/// `spurious_timeout` and `spurious_retransmission`, docs/formats/events.md).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum SpuriousMethod {
    /// At the sender: a D-SACK block (RFC 2883, RFC 3708).
    Dsack,
    /// At the sender: the ACK echoes a timestamp older than the re-send (RFC 3522).
    Eifel,
    /// At the receiver: the bytes had all arrived before.
    Receiver,
    /// Both captures matched: the phone had the original before the re-send arrived.
    TwoVantage,
}

impl SpuriousMethod {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dsack => "dsack",
            Self::Eifel => "eifel",
            Self::Receiver => "receiver",
            Self::TwoVantage => "two_vantage",
        }
    }
}
