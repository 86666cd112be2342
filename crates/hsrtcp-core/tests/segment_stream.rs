//! `SegmentStream` hands over exactly the file's TCP segments, in file order, once each —
//! whatever the pace of the consumer. Its buffers are recycled between the reader thread
//! and the consumer; a recycled buffer that kept its old contents once replayed a whole
//! batch (2,048 stale segments) and then grew without bound, so this runs many batches with
//! a slow and a fast consumer.

mod common;

use common::*;
use hsrtcp_core::stream::SegmentStream;

const N: u32 = 40_000; // about 20 batches

fn capture(dir: &std::path::Path) -> std::path::PathBuf {
    let recs: Vec<Rec> = (0..N)
        .map(|i| {
            let data = eth_tcp(i, 10);
            let orig = data.len() as u32;
            Rec {
                sec: 1_700_000_000 + i / 1000,
                frac: i % 1000,
                data,
                orig,
            }
        })
        .collect();
    let p = dir.join("stream.pcap");
    std::fs::write(&p, pcap(false, false, 1, &recs)).unwrap();
    p
}

fn seqs(path: &std::path::Path, slow: bool) -> Vec<u32> {
    let mut s = SegmentStream::open(path);
    let mut out = Vec::new();
    let mut batches = 0;
    while let Some(b) = s.next_batch() {
        assert!(
            b.len() <= 2048,
            "a batch of {} segments: buffers are not bounded",
            b.len()
        );
        out.extend(b.iter().map(|seg| seg.seq));
        batches += 1;
        if slow && batches % 2 == 0 {
            // let the reader run ahead and pick up recycled buffers
            std::thread::sleep(std::time::Duration::from_millis(3));
        }
    }
    let stats = s.finish();
    assert_eq!(stats.tcp_packets, N as u64);
    assert!(stats.error.is_none(), "{:?}", stats.error);
    out
}

#[test]
fn every_segment_once_in_order_at_any_consumer_pace() {
    let dir = std::env::temp_dir().join(format!("hsrtcp-stream-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let p = capture(&dir);
    let want: Vec<u32> = (0..N).map(|i| 1000 + i).collect();
    for slow in [false, true] {
        let got = seqs(&p, slow);
        assert_eq!(got.len(), want.len(), "slow={slow}");
        assert!(
            got == want,
            "slow={slow}: segments replayed or out of order"
        );
    }
    // the per-segment iterator sees the same
    let it: Vec<u32> = SegmentStream::open(&p).map(|s| s.seq).collect();
    assert!(it == want);
    std::fs::remove_dir_all(&dir).ok();
}
