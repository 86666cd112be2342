//! The `pair_stats` table: one row per (client, server) pair of a two-vantage run
//! (docs/formats/matched.md), and the warning of a pair whose matcher hit its state budget.

use arrow_array::RecordBatch;

use crate::flow::event::nanos_to_s;
use crate::matcher::PairResult;
pub use crate::table::registry::{PAIR_STATS_COLUMNS, PAIR_STATS_VERSION};
use crate::table::TableBuilder;

/// The `pair_stats` row of one pair; `names`: the client's and the server's capture as shown.
pub fn stats_row(r: &PairResult, names: [&str; 2]) -> RecordBatch {
    let mut t = TableBuilder::new(&[PAIR_STATS_COLUMNS]);
    {
        let mut row = t.row();
        let c = r.clock;
        let known = c.known();
        row.i64("client_packets", r.stats[0].packets as i64)
            .i64("client_tcp_packets", r.stats[0].tcp_packets as i64)
            .str("client_error", r.stats[0].error.as_deref())
            .i64("server_packets", r.stats[1].packets as i64)
            .i64("server_tcp_packets", r.stats[1].tcp_packets as i64)
            .str("server_error", r.stats[1].error.as_deref())
            .f64("coarse_offset_s", nanos_to_s(r.coarse_offset))
            .bool("clock_known", known)
            .f64("clock_offset_s", known.then_some(c.offset_s))
            .f64("clock_ref_ts", known.then(|| nanos_to_s(c.t_ref)))
            .f64("clock_drift_ppm", known.then_some(c.drift * 1e6))
            .f64("clock_offset_uncertainty_s", known.then_some(c.uncertainty_s))
            .i64("clock_samples_down", c.samples[0] as i64)
            .i64("clock_samples_up", c.samples[1] as i64)
            .i64("pairs", r.pairs as i64)
            .i64("client_only", r.client_only as i64)
            .i64("server_only", r.server_only as i64)
            .i64("budget_flushes", r.budget.flushes as i64)
            .i64("budget_dropped_segments", r.budget.dropped as i64)
            .str("client_capture", Some(names[0]))
            .str("server_capture", Some(names[1]));
    }
    t.finish()
}

/// The warning for a pair whose matcher hit its state budget of `budget` bytes
/// (docs/two-vantage.md, "Memory").
pub fn budget_warning(r: &PairResult, names: [&str; 2], budget: usize) -> Option<String> {
    let b = r.budget;
    (b.flushes > 0 || b.dropped > 0).then(|| {
        format!(
            "{} + {}: a window of capture time held more packets than the matcher's budget \
             ({} MB, --match-memory): {} early window closes, {} segments dropped before pairing; the \
             verdicts of the packets then in flight are approximate (pair_stats budget_*; \
             docs/two-vantage.md, Memory)",
            names[0],
            names[1],
            budget >> 20,
            b.flushes,
            b.dropped
        )
    })
}
