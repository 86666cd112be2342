//! Throughput of reading + decoding (not a pass/fail test: speed is measured, not asserted).
//!
//! Run: `cargo test --release -p hsrtcp-core --test read_decode_speed -- --ignored --nocapture`
//! With `HSRTCP_BENCH_PCAP=/path/to/capture` it times that file instead of a generated
//! 1 M-packet, snaplen-128 Ethernet/IPv4 capture (data segments with timestamps and ACKs
//! with SACK blocks, like a bulk download seen at the server).

mod common;

use std::time::Instant;

use common::*;
use hsrtcp_core::capture::CaptureReader;
use hsrtcp_core::wire::{decode, Decoded};

fn generated(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut recs = Vec::with_capacity(1_000_000);
    for i in 0..1_000_000u32 {
        let (mut f, orig) = if i % 3 == 2 {
            // ACK with TS + 2 SACK blocks (40-byte option space used: 32 of it here).
            let mut f = eth_tcp(i, 0);
            f[14 + 20 + 12] = 0xd0; // data offset 13 words
            f.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2, 1, 1, 5, 18]);
            f.extend_from_slice(&[0, 0, 0x10, 0, 0, 0, 0x20, 0, 0, 0, 0x30, 0, 0, 0, 0x40, 0]);
            f[14 + 2..14 + 4].copy_from_slice(&(20u16 + 52).to_be_bytes());
            let n = f.len() as u32;
            (f, n)
        } else {
            // 1448-byte data segment with NOP NOP TS, cut at 128 bytes.
            let mut f = eth_tcp(i, 0);
            f[14 + 20 + 12] = 0x80;
            f.extend_from_slice(&[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]);
            f[14 + 2..14 + 4].copy_from_slice(&(20u16 + 32 + 1448).to_be_bytes());
            f.resize(128, 0x61);
            (f, 14 + 20 + 32 + 1448)
        };
        f.truncate(128);
        recs.push(Rec {
            sec: 1_700_000_000 + i / 100_000,
            frac: i % 1_000_000,
            data: f,
            orig,
        });
    }
    let plain = pcap(false, false, 1, &recs);
    let mut blocks = vec![
        Ng::Shb,
        Ng::Idb {
            linktype: 1,
            snaplen: 128,
            tsresol: None,
            tsoffset: None,
        },
    ];
    blocks.extend(recs.iter().map(|r| Ng::Epb {
        iface: 0,
        units: r.sec as u64 * 1_000_000 + r.frac as u64,
        data: r.data.clone(),
        orig: r.orig,
    }));
    let files = [
        ("1m.pcap", plain.clone()),
        ("1m.pcapng", pcapng(false, &blocks)),
        ("1m.pcap.gz", gzip(&plain)),
    ];
    files
        .into_iter()
        .map(|(name, bytes)| {
            let p = dir.join(name);
            std::fs::write(&p, bytes).unwrap();
            p
        })
        .collect()
}

#[test]
#[ignore = "timing run, see the module doc"]
fn read_decode_throughput() {
    let paths = match std::env::var_os("HSRTCP_BENCH_PCAP") {
        Some(p) => vec![std::path::PathBuf::from(p)],
        None => {
            let dir = std::env::temp_dir().join("hsrtcp-bench");
            std::fs::create_dir_all(&dir).unwrap();
            generated(&dir)
        }
    };
    for path in paths {
        time_one(&path);
    }
}

fn time_one(path: &std::path::Path) {
    let size = std::fs::metadata(path).unwrap().len();
    // Warm the page cache, then best of three.
    let _ = std::fs::read(path).unwrap();
    let mut best = f64::MAX;
    let (mut n, mut tcp, mut payload) = (0u64, 0u64, 0u64);
    for _ in 0..3 {
        let t = Instant::now();
        let mut r = CaptureReader::open(path).unwrap();
        (n, tcp, payload) = (0, 0, 0);
        while let Some(f) = r.next_frame().unwrap() {
            n += 1;
            if let Decoded::Tcp(s) = decode(&f) {
                tcp += 1;
                payload += s.payload_len as u64;
            }
        }
        best = best.min(t.elapsed().as_secs_f64());
    }
    let t = Instant::now();
    let mut r = CaptureReader::open(path).unwrap();
    let mut m = 0u64;
    while let Some(_f) = r.next_frame().unwrap() {
        m += 1;
    }
    let read_only = t.elapsed().as_secs_f64();
    println!(
        "{}: {size} bytes, {n} records ({tcp} TCP, {payload} payload bytes)\n  read+decode {:.3} s = {:.2} M packets/s = {:.1} ns/packet\n  read only   {:.3} s = {:.1} ns/packet ({m} records)",
        path.display(),
        best,
        n as f64 / best / 1e6,
        best * 1e9 / n as f64,
        read_only,
        read_only * 1e9 / m as f64
    );
}
