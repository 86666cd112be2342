//! Where the time goes on one capture: reading, decoding, the flow table, the tables.
//! `cargo run --release --example timing -- FILE`
use std::collections::BTreeMap;
use std::path::Path;
use std::time::Instant;

use hsrtcp_core::analyze::analyze_capture;
use hsrtcp_core::capture::CaptureReader;
use hsrtcp_core::flow::CaptureInfo;
use hsrtcp_core::table::parquet::{ParquetDir, ROW_GROUP};
use hsrtcp_core::wire::{decode, Decoded};

fn main() {
    let path = std::env::args().nth(1).expect("usage: timing FILE");
    let path = Path::new(&path);
    let t = Instant::now();
    let mut r = CaptureReader::open(path).expect("open");
    let mut n = 0u64;
    while let Ok(Some(_)) = r.next_frame() {
        n += 1;
    }
    let read = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let mut r = CaptureReader::open(path).expect("open");
    let mut tcp = 0u64;
    while let Ok(Some(f)) = r.next_frame() {
        if let Decoded::Tcp(_) = decode(&f) {
            tcp += 1;
        }
    }
    let dec = t.elapsed().as_secs_f64();
    // The machine is shared and noisy: the best of a few runs is the stable figure.
    let mut rows: BTreeMap<&str, usize> = BTreeMap::new();
    let (full, engine_cpu) = best_of_5(|| {
        rows.clear();
        analyze_capture(path, CaptureInfo::default(), ROW_GROUP, &mut |_| true, &mut |name, b| {
            *rows.entry(name).or_default() += b.num_rows();
        });
    });
    let dir = std::env::temp_dir().join(format!("hsrtcp-timing-{}", std::process::id()));
    let (parquet, _) = best_of_5(|| {
        let out = ParquetDir::create(&dir, "", &[]).expect("output directory");
        let tx = out.sender();
        analyze_capture(path, CaptureInfo::default(), ROW_GROUP, &mut |_| true, &mut |name, b| {
            let _ = tx.send(name, b);
        });
        out.close().expect("parquet written");
    });
    let _ = std::fs::remove_dir_all(&dir);
    let mpps = |s: f64| n as f64 / s / 1e6;
    println!("{n} packets ({tcp} tcp); rows {rows:?}");
    println!("read only      {read:.3} s  {:.1} Mpkt/s", mpps(read));
    println!("read+decode    {dec:.3} s  {:.1} Mpkt/s", mpps(dec));
    println!("full analysis  {full:.3} s (best of 5)  {:.1} Mpkt/s", mpps(full));
    println!("  engine thread CPU {engine_cpu:.3} s  {:.0} ns/packet", engine_cpu * 1e9 / n as f64);
    println!("  into Parquet {parquet:.3} s  {:.1} Mpkt/s", mpps(parquet));
}

/// Fastest wall time and least CPU time of the calling thread over five runs of `run`.
fn best_of_5(mut run: impl FnMut()) -> (f64, f64) {
    let (mut wall, mut cpu) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..5 {
        let (t, c) = (Instant::now(), thread_cpu_s());
        run();
        wall = wall.min(t.elapsed().as_secs_f64());
        cpu = cpu.min(thread_cpu_s() - c);
    }
    (wall, cpu)
}

/// CPU time of the calling thread (the flow engine's; reading runs on its own thread):
/// steadier than wall time on a shared machine.
fn thread_cpu_s() -> f64 {
    let mut t = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes the timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}
