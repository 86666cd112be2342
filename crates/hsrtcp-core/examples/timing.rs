//! Where the time goes on one capture: reading, decoding, the flow table, the tables.
//! `cargo run --release --example timing -- FILE`
use std::path::Path;
use std::time::Instant;

use hsrtcp_core::analyze::analyze_capture;
use hsrtcp_core::capture::CaptureReader;
use hsrtcp_core::flow::CaptureInfo;
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
    let t = Instant::now();
    let res = analyze_capture(path, CaptureInfo::default(), &mut |_| {});
    let full = t.elapsed().as_secs_f64();
    let t = Instant::now();
    let o = res.output;
    let sizes = [o.flows.finish().num_rows(), o.events.finish().num_rows(), o.series.finish().num_rows()];
    let fin = t.elapsed().as_secs_f64();
    let mpps = |s: f64| n as f64 / s / 1e6;
    println!("{n} packets ({tcp} tcp); rows flows/events/series {sizes:?}");
    println!("read only      {read:.3} s  {:.1} Mpkt/s", mpps(read));
    println!("read+decode    {dec:.3} s  {:.1} Mpkt/s", mpps(dec));
    println!("full analysis  {full:.3} s  {:.1} Mpkt/s", mpps(full));
    println!("finish tables  {fin:.3} s");
}
