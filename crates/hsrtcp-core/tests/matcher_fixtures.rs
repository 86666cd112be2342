//! The two-vantage matcher on the real-kernel fixture pairs of tests/data (namespace testbed,
//! nftables random drops; tests/data/README.md). Witness: the ground truth stored in each
//! fixture's JSON (hsrtcp.testing.truth, an independent Python matcher, itself checked against
//! the router's nft drop counters) and the clock offset the fixture maker added on purpose.

use std::path::{Path, PathBuf};

use arrow_array::cast::AsArray;
use arrow_array::types::{Float64Type, UInt64Type};
use arrow_array::{Array, RecordBatch};
use hsrtcp_core::matcher::{analyze_pair, MatchOptions};

fn data() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// A number from the fixture JSON: the first `"key": N` after `"anchor"` (flat, known layout).
fn json_num(text: &str, anchor: &str, key: &str) -> f64 {
    let from = text.find(anchor).unwrap_or_else(|| panic!("{anchor} not in fixture JSON"));
    let rest = &text[from..];
    let k = format!("\"{key}\":");
    let at = rest.find(&k).unwrap_or_else(|| panic!("{key} not after {anchor}")) + k.len();
    let num: String = rest[at..].trim_start().chars().take_while(|c| c.is_ascii_digit() || *c == '.' || *c == '-' || *c == 'e').collect();
    num.parse().unwrap()
}

fn sum_u64(b: &RecordBatch, c: &str) -> u64 {
    b.column_by_name(c).unwrap().as_primitive::<UInt64Type>().iter().flatten().sum()
}

fn run(name: &str) -> (RecordBatch, String) {
    let d = data();
    let r = analyze_pair(
        &d.join(format!("{name}.client.pcap")),
        &d.join(format!("{name}.server.pcap")),
        MatchOptions::default(),
    );
    assert!(r.stats.iter().all(|s| s.error.is_none()));
    assert_eq!((r.client_only, r.server_only), (0, 0));
    let json = std::fs::read_to_string(d.join(format!("{name}.json"))).unwrap();
    (r.matched.finish(), json)
}

#[test]
fn lost_data_and_acks_equal_the_truth_of_every_fixture() {
    for name in ["drops_cubic", "twovantage_offset", "ipv6_drops", "reno_nosack_nots", "multi_concurrent",
        "ack_blackout", "data_blackout", "bbr_drops", "reuse_4tuple", "any_sll2", "nano"]
    {
        let (m, json) = run(name);
        let t = "\"totals\"";
        assert_eq!(m.num_rows() as f64, json_num(&json, t, "connections"), "{name}");
        for (col, key) in [
            ("data_packets_sent", "data_sent"),
            ("lost_data_packets", "data_lost"),
            ("ack_packets_sent", "acks_sent"),
            ("lost_ack_packets", "acks_lost"),
        ] {
            assert_eq!(sum_u64(&m, col) as f64, json_num(&json, t, key), "{name} {col}");
        }
        assert_eq!(sum_u64(&m, "unknown_fate_packets"), 0, "{name}");
    }
}

#[test]
fn clock_offset_added_on_purpose_is_recovered_within_a_millisecond() {
    let (m, json) = run("twovantage_offset");
    let added = json_num(&json, "\"transfer\"", "time_offset_s");
    let est = m.column_by_name("clock_offset_s").unwrap().as_primitive::<Float64Type>().value(0);
    assert!((est + added).abs() < 1e-3, "estimated {est}, added {added}");
}

/// Feeding the metrics while streaming (bounded memory), in small chunks, gives exactly what
/// feeding them once at the end gives.
#[test]
fn streaming_feed_equals_feeding_at_the_end() {
    let d = data();
    for name in ["drops_cubic", "ack_blackout", "data_blackout", "reno_nosack_nots", "twovantage_offset", "multi_concurrent"] {
        let run = |opts: MatchOptions| {
            let r = analyze_pair(&d.join(format!("{name}.client.pcap")), &d.join(format!("{name}.server.pcap")), opts);
            (r.matched.finish(), r.events.finish())
        };
        let base = MatchOptions { window_s: 0.4, ..MatchOptions::default() };
        let (m1, e1) = run(MatchOptions { consume_after: usize::MAX, ..base.clone() });
        for chunk in [1, 7, 1000] {
            let (m2, e2) = run(MatchOptions { consume_after: 1, sweep_every: 50, feed_chunk: chunk, ..base.clone() });
            for (a, b, what) in [(&m1, &m2, "matched"), (&e1, &e2, "events")] {
                assert_eq!(a.num_rows(), b.num_rows(), "{name} {what} rows");
                for (i, f) in a.schema().fields().iter().enumerate() {
                    assert_eq!(a.column(i), b.column(i), "{name} {what}.{} (chunk {chunk})", f.name());
                }
            }
        }
    }
}

#[test]
fn m6_series_bins_add_up_to_the_truth_of_every_fixture() {
    // M6 per 1-s bin: the bins of all matched flows sum to the truth's data transmissions and
    // losses; loss_rate = lost / sent, null exactly in bins without a transmission. (The
    // bin-by-bin comparison with the truth helper is tests/python/pair.)
    let d = data();
    for name in ["drops_cubic", "twovantage_offset", "ipv6_drops", "multi_concurrent", "data_blackout"] {
        let r = analyze_pair(
            &d.join(format!("{name}.client.pcap")),
            &d.join(format!("{name}.server.pcap")),
            MatchOptions::default(),
        );
        let json = std::fs::read_to_string(d.join(format!("{name}.json"))).unwrap();
        let s = r.series.finish();
        let t = "\"totals\"";
        assert_eq!(sum_u64(&s, "data_sent") as f64, json_num(&json, t, "data_sent"), "{name}");
        assert_eq!(sum_u64(&s, "data_lost") as f64, json_num(&json, t, "data_lost"), "{name}");
        let sent = s.column_by_name("data_sent").unwrap().as_primitive::<UInt64Type>();
        let lost = s.column_by_name("data_lost").unwrap().as_primitive::<UInt64Type>();
        let rate = s.column_by_name("loss_rate").unwrap().as_primitive::<Float64Type>();
        for i in 0..s.num_rows() {
            let want = (sent.value(i) > 0).then(|| lost.value(i) as f64 / sent.value(i) as f64);
            let got = (!rate.is_null(i)).then(|| rate.value(i));
            assert_eq!(got, want, "{name} row {i}");
        }
    }
}

/// A two-vantage run decodes each file once: the matcher takes the segments the flow
/// engines' readers decode (`SegmentStream::open_tapped`). Witness: the matcher reading the
/// files itself (`analyze_pair`); every table byte for byte, and the counters.
#[test]
fn matcher_on_tapped_streams_equals_reading_the_files() {
    use hsrtcp_core::matcher::match_streams;
    use hsrtcp_core::stream::{tap, SegmentStream};
    use hsrtcp_core::table::to_ipc;
    let d = data();
    for name in ["drops_cubic", "twovantage_offset", "ipv6_drops", "multi_concurrent", "reuse_4tuple", "any_sll2", "nano"] {
        let (c, s) = (d.join(format!("{name}.client.pcap")), d.join(format!("{name}.server.pcap")));
        let want = analyze_pair(&c, &s, MatchOptions::default());
        let (tap_c, seg_c) = tap();
        let (tap_s, seg_s) = tap();
        let matcher = std::thread::spawn(move || match_streams(seg_c, seg_s, MatchOptions::default()));
        // The engines' side: read both streams to the end at the same time, as the run does.
        let drain = |p: PathBuf, t| std::thread::spawn(move || SegmentStream::open_tapped(&p, Some(t)).count());
        let (a, b) = (drain(c, tap_c), drain(s, tap_s));
        let (na, nb) = (a.join().unwrap(), b.join().unwrap());
        let got = matcher.join().unwrap();
        assert_eq!([got.stats[0].tcp_packets, got.stats[1].tcp_packets], [na as u64, nb as u64], "{name}");
        assert_eq!(
            [got.stats[0].tcp_packets, got.stats[1].tcp_packets],
            [want.stats[0].tcp_packets, want.stats[1].tcp_packets],
            "{name}"
        );
        assert_eq!((got.pairs, got.client_only, got.server_only), (want.pairs, want.client_only, want.server_only), "{name}");
        assert_eq!(got.coarse_offset, want.coarse_offset, "{name}");
        assert_eq!(got.clock, want.clock, "{name}");
        assert!(want.pairs >= 1, "{name}");
        for (g, w, t) in [(got.matched, want.matched, "matched"), (got.events, want.events, "events"), (got.series, want.series, "series")] {
            assert_eq!(to_ipc(&g.finish()), to_ipc(&w.finish()), "{name}: {t}");
        }
    }
}

/// A big pair's end is replayed on two threads (the taking and order-free tallies on one,
/// the ordered replay on the other: `feed_pipelined`); the bench pair is the only input big
/// enough by default. Forced here on every fixture, with small chunks so that many batches
/// pass between the threads. Witness: the same run in line; every table byte for byte.
#[test]
fn pipelined_end_of_pair_equals_replay_in_line() {
    use hsrtcp_core::table::to_ipc;
    let d = data();
    let mut runs = 0;
    for name in ["drops_cubic", "twovantage_offset", "ipv6_drops", "multi_concurrent", "reuse_4tuple", "ack_blackout", "data_blackout", "clean_200k"] {
        let (c, s) = (d.join(format!("{name}.client.pcap")), d.join(format!("{name}.server.pcap")));
        for chunk in [64, 1 << 15] {
            let run = |pipeline_min: usize| analyze_pair(&c, &s, MatchOptions { feed_chunk: chunk, pipeline_min, ..MatchOptions::default() });
            let (inline, piped) = (run(usize::MAX), run(0));
            assert!(inline.pairs >= 1, "{name}");
            assert_eq!(inline.clock, piped.clock, "{name}");
            for (g, w, t) in [(piped.matched, inline.matched, "matched"), (piped.events, inline.events, "events"), (piped.series, inline.series, "series")] {
                assert_eq!(to_ipc(&g.finish()), to_ipc(&w.finish()), "{name}, chunk {chunk}: {t}");
            }
            runs += 1;
        }
    }
    assert_eq!(runs, 16);
}
