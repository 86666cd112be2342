//! The matcher's settings of the two pair fuzz targets (`pair`, `pair_output`).

use hsrtcp_core::matcher::MatchOptions;

/// Small sweeps and feeds, so the matcher's incremental paths (settle, feed, retire) run on
/// small inputs too; a short window, so settling happens within a few seconds of capture
/// time; with `small_budget` a state budget of 2 KB, so the budget's relief (dropped
/// buffers, early feeding, early window closes) runs on small inputs too.
pub fn small_match_options(small_budget: bool) -> MatchOptions {
    let state_budget = if small_budget { 2048 } else { MatchOptions::default().state_budget };
    MatchOptions { window_s: 2.0, sweep_every: 64, feed_chunk: 16, consume_after: 32, state_budget, ..MatchOptions::default() }
}
