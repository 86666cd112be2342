//! The TCP behaviour engine: per-connection analysis of RTT, retransmissions, timeouts,
//! spurious timeouts, DupACKs, windows, handshake/closure and suspensions (issue 3).
//!
//! Contract with the rest of the flow layer:
//! - [`Engine::on_segment`] is called for every segment after the foundation accounting
//!   in [`ConnBase`] (volumes, SYN options, FIN/RST) was updated for it.
//! - [`Engine::finish`] is called once when the connection is retired or the capture ends.
//! - [`FLOW_COLUMNS`] / [`Engine::write_flow`] add columns to the `flows` table,
//!   [`SERIES_COLUMNS`] / [`Engine::write_series_bin`] to the `series` table.

use crate::flow::connection::ConnBase;
use crate::flow::event::{Dir, Event};
use crate::table::{ColumnDef, Row};
use crate::wire::{Nanos, Segment};

pub const FLOW_COLUMNS: &[ColumnDef] = &[];
pub const SERIES_COLUMNS: &[ColumnDef] = &[];

#[derive(Default)]
pub struct Engine {}

impl Engine {
    pub fn on_segment(&mut self, _c: &mut ConnBase, _seg: &Segment, _dir: Dir, _ev: &mut Vec<Event>) {}

    pub fn finish(&mut self, _c: &mut ConnBase, _capture_end: Nanos, _ev: &mut Vec<Event>) {}

    pub fn write_flow(&self, _c: &ConnBase, _row: &mut Row<'_>) {}

    /// Values for 1-second bin `bin` (counted from the connection's first packet).
    pub fn write_series_bin(&self, _c: &ConnBase, _bin: usize, _row: &mut Row<'_>) {}
}
