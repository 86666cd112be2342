//! The engine's columns of `flows` (docs/formats/flows.md), one group per concern: each
//! group's columns are declared once in the table registry (table/registry.tsv, FLOW_*_COLUMNS,
//! in this order) and written here by the group's writer (a name written but not declared
//! panics in the table builder; the unit test below writes every group). Unless said
//! otherwise a column describes the data direction (flows.data_dir).

use super::kinds::DataVantage;
use super::rtt::RttBook;
use super::retrans::{Counts, Stream};
use super::Engine;
use crate::flow::connection::ConnBase;
use crate::flow::event::Dir;
use crate::table::registry;
use crate::table::{ColumnDef, Row};

/// What every group reads: the data direction's stream and counters, and the vantage.
pub(super) struct View<'a> {
    pub e: &'a Engine,
    pub c: &'a ConnBase,
    pub d: Dir,
    pub st: &'a Stream,
    pub k: &'a Counts,
    pub book: &'a RttBook,
    pub vs: DataVantage,
    pub sender: bool,
    pub known: bool,
    pub mss: i64,
}

impl View<'_> {
    fn only(ok: bool, v: u64) -> Option<u64> {
        ok.then_some(v)
    }
}

fn ratio(a: f64, b: f64) -> Option<f64> {
    (b > 0.0).then(|| a / b)
}

/// One concern's columns and its writer.
pub(super) struct Group {
    pub columns: &'static [ColumnDef],
    pub write: fn(&View, &mut Row<'_>),
}

/// The groups in the table's column order.
pub(super) const GROUPS: &[Group] = &[
    Group { columns: registry::FLOW_VANTAGE_COLUMNS, write: vantage },
    Group { columns: registry::FLOW_RTT_COLUMNS, write: rtt },
    Group { columns: registry::FLOW_RETRANS_COLUMNS, write: retrans },
    Group { columns: registry::FLOW_TIMEOUTS_COLUMNS, write: timeouts },
    Group { columns: registry::FLOW_SPURIOUS_COLUMNS, write: spurious },
    Group { columns: registry::FLOW_ACKS_COLUMNS, write: acks },
    Group { columns: registry::FLOW_WINDOWS_COLUMNS, write: windows },
    Group { columns: registry::FLOW_VOLUME_COLUMNS, write: volume },
    Group { columns: registry::FLOW_LIFECYCLE_COLUMNS, write: lifecycle },
];

const fn count() -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < GROUPS.len() {
        n += GROUPS[i].columns.len();
        i += 1;
    }
    n
}

const N: usize = count();

const fn flatten() -> [ColumnDef; N] {
    let mut out = [GROUPS[0].columns[0]; N];
    let (mut i, mut k) = (0, 0);
    while i < GROUPS.len() {
        let mut j = 0;
        while j < GROUPS[i].columns.len() {
            out[k] = GROUPS[i].columns[j];
            k += 1;
            j += 1;
        }
        i += 1;
    }
    out
}

/// Every engine column of `flows`, the groups' declarations end to end.
pub const FLOW_COLUMNS: &[ColumnDef] = &flatten();

fn vantage(v: &View, row: &mut Row<'_>) {
    let near = v.e.near.map(|n| if n == Dir::C2S { "client" } else { "server" });
    row.str("capture_near", near)
        .str("capture_near_source", v.e.near_source)
        .str("data_vantage", v.vs.as_str());
}

fn rtt(v: &View, row: &mut Row<'_>) {
    let book = v.book;
    // the primary samples: ACK matching at the sender, TSval echo elsewhere
    let prim = if v.sender { &book.ack } else { &book.ts };
    row.u64("rtt_count", v.known.then_some(prim.count))
        .f64("rtt_min", prim.min())
        .f64("rtt_mean", prim.mean())
        .f64("rtt_median", prim.median())
        .f64("rtt_max", prim.max())
        .f64("rtt_std", prim.std())
        .u64("rtt_ack_samples", View::only(v.sender, book.ack.count))
        .u64("rtt_ts_samples", View::only(v.known, book.ts.count))
        .f64("rtt_ts_mean", book.ts.mean())
        .f64("rtt_handshake", book.handshake);
}

fn retrans(v: &View, row: &mut Row<'_>) {
    let (k, known) = (v.k, v.known);
    row.u64("data_segments", k.data_segments)
        .u64("retransmissions", k.retransmissions)
        .u64("retransmitted_bytes", k.retransmitted_bytes)
        .u64("retrans_fast", View::only(known, k.fast))
        .u64("retrans_sack_refill", View::only(known, k.sack_refill))
        .u64("retrans_rto", View::only(known, k.rto))
        .u64("retrans_tlp", View::only(known, k.tlp))
        .u64("retransmissions_undecided", View::only(known && !v.sender, k.undecided))
        .u64("retrans_unclassified", k.unclassified)
        .u64("reordering_segments", k.reordering)
        .u64("network_duplicates", k.network_duplicates)
        .u64("zero_window_probes", k.zero_window_probes)
        .u64("unnecessary_retransmissions", View::only(known, k.unnecessary))
        .u64("dsack_blocks", k.dsack_blocks);
}

fn timeouts(v: &View, row: &mut Row<'_>) {
    let (k, sender) = (v.k, v.sender);
    let at_sender = |x: Option<f64>| if sender { x } else { None };
    row.u64("timeout_sequences", View::only(sender, k.timeout_sequences))
        .u64("timeouts", View::only(sender, k.timeouts))
        .u64("timeout_retransmissions", View::only(sender, k.timeout_retransmissions))
        .f64("timeout_duration_mean", at_sender(ratio(k.timeout_duration_sum, k.timeout_finished as f64)))
        .f64("timeout_duration_max", (sender && k.timeout_finished > 0).then_some(k.timeout_duration_max))
        .f64("rto_first_mean", at_sender(ratio(k.rto_first_sum, k.timeout_sequences as f64)))
        .f64("q_estimate", at_sender(ratio(k.timeout_repeated as f64, k.timeout_retransmissions as f64)));
}

fn spurious(v: &View, row: &mut Row<'_>) {
    let (k, sender, known) = (v.k, v.sender, v.known);
    let eifel = sender && v.c.timestamps() == Some(true);
    let rate = ratio(k.spurious_rto_segments as f64, k.retransmissions as f64);
    let share = ratio(k.spurious_timeouts as f64, k.timeout_sequences as f64);
    row.u64("spurious_timeouts", View::only(known, k.spurious_timeouts))
        .u64("spurious_timeouts_receiver", View::only(v.vs == DataVantage::Receiver, k.spurious_receiver))
        .u64("spurious_timeouts_dsack", View::only(sender, k.spurious_dsack))
        .u64("spurious_timeouts_eifel", View::only(eifel, k.spurious_eifel))
        .u64("spurious_timeouts_undecided", View::only(sender, k.spurious_undecided))
        .f64("spurious_rto_rate", if known { rate } else { None })
        .f64("spurious_timeout_share", if sender { share } else { None })
        .f64("rto_bias_mean", ratio(k.rto_bias_sum, k.rto_bias_n as f64));
}

fn acks(v: &View, row: &mut Row<'_>) {
    let (k, sender) = (v.k, v.sender);
    row.u64("pure_acks", k.pure_acks)
        .u64("dupacks", k.dupacks)
        .u64("dupacks_undecided", View::only(v.known && !sender, k.dupacks_undecided))
        .f64("dupack_rate", ratio(k.dupacks as f64, k.pure_acks as f64))
        .u64("bif_max", (sender && k.bif_n > 0).then_some(k.bif_max))
        .f64("bif_mean", if sender { ratio(k.bif_sum, k.bif_n as f64) } else { None });
}

fn windows(v: &View, row: &mut Row<'_>) {
    let (w, k, mss) = (&v.st.win, v.k, v.mss);
    let limited = ratio(w.rwnd_limited_sends as f64, w.new_data_sends as f64);
    let by = (v.sender && w.new_data_sends > 0)
        .then(|| if w.rwnd_limited_sends * 2 >= w.new_data_sends { "rwnd" } else { "cwnd" });
    row.u64("awnd_min", w.awnd_min())
        .u64("awnd_max", w.awnd_max())
        .f64("awnd_mean", w.awnd_mean())
        .u64("zero_window_segments", w.zero_segments)
        .u64("zero_window_events", w.zero_events)
        .f64("zero_window_duration", Some(w.zero_total as f64 * 1e-9))
        .u64("full_window_segments", w.full_segments)
        .u64("full_window_events", w.full_events)
        .f64("rwnd_limited_fraction", if v.sender { limited } else { None })
        .str("limited_by", by)
        .u64("mss_data", Some(mss as u64))
        .u64("w_m_packets", w.awnd_max().map(|x| x / mss.max(1) as u64))
        .f64("b_packets_per_ack", ratio(k.acked_bytes_ca as f64 / mss as f64, k.advancing_acks_ca as f64));
}

fn volume(v: &View, row: &mut Row<'_>) {
    let dur = (v.c.last_ts - v.c.first_ts) as f64 * 1e-9;
    let acked = v.st.ack_seen;
    row.f64("throughput_pkts", if acked { ratio(v.k.acked_bytes as f64 / v.mss as f64, dur) } else { None })
        .u64("goodput_bytes", acked.then_some(v.k.acked_bytes));
}

fn lifecycle(v: &View, row: &mut Row<'_>) {
    let (e, c, st, d) = (v.e, v.c, v.st, v.d);
    let life = &e.life;
    let s = |n: i64| n as f64 * 1e-9;
    let closer = life.first_fin.or(life.first_rst).map(|(_, w)| if w == Dir::C2S { "client" } else { "server" });
    let acked = st.ack_seen.then(|| {
        // the FIN's sequence number is no byte of the object
        let start = (c.half[d.idx()].syn_count > 0) as i64;
        let end = life.fin_rel[d.idx()].unwrap_or(i64::MAX);
        (st.una.min(end) - start).max(0) as u64
    });
    row.f64("establishment_s", life.establishment().map(s))
        .u64("syn_retransmissions", (c.half[0].syn_count > 0).then(|| c.half[0].syn_count as u64 - 1))
        .u64("synack_retransmissions", life.first_synack.map(|_| life.synacks_same_seq as u64))
        .bool("handshake_refused", life.first_syn.map(|_| life.refused))
        .u64("fin_retransmissions_client", life.fin_retx[0] as u64)
        .u64("fin_retransmissions_server", life.fin_retx[1] as u64)
        .str("closer", closer)
        .f64("closure_s", life.closure(c.last_ts).map(s))
        .u64("acked_bytes", acked)
        .bool("interrupted", e.interrupted(c))
        .str("interruption_reason", e.interruption_reason(c))
        .u64("suspensions", life.suspensions)
        .u64("suspensions_stalled", life.suspensions_stalled)
        .f64("suspension_total", Some(s(life.suspension_total)))
        .f64("suspension_max", (life.suspensions > 0).then_some(s(life.suspension_max)))
        .u64("segment_store_overflow", e.streams.iter().map(|x| x.store.overflowed).sum::<u64>());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_declare_every_column_once_in_order() {
        let names: Vec<&str> = FLOW_COLUMNS.iter().map(|c| c.name).collect();
        let by_group: Vec<&str> = GROUPS.iter().flat_map(|g| g.columns.iter().map(|c| c.name)).collect();
        assert_eq!(names, by_group);
        let mut seen = std::collections::HashSet::new();
        assert!(names.iter().all(|n| seen.insert(*n)), "a column declared twice");
        assert_eq!(names.first(), Some(&"capture_near"));
        assert_eq!(names.last(), Some(&"segment_store_overflow"));
    }

    /// The registry's `flows` table is the foundation's columns, then these groups in order.
    #[test]
    fn the_flows_table_is_the_groups_in_order() {
        let names = |defs: &[ColumnDef]| defs.iter().map(|c| c.name).collect::<Vec<_>>();
        let parts: Vec<_> = registry::FLOWS_TABLE.parts.iter().map(|p| names(p)).collect();
        let mut groups = vec![names(registry::FLOW_COLUMNS)];
        groups.extend(GROUPS.iter().map(|g| names(g.columns)));
        assert_eq!(parts, groups, "registry.tsv [table flows] lists other parts than flow/table.rs + GROUPS");
    }
}
