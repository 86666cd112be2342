//! Where the matcher's time goes on a pair, on segments decoded beforehand (so reading and
//! decoding are not in it): the whole of `match_batches`, best of five.
//! `cargo run --release --example pair_timing -- CLIENT SERVER`
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use hsrtcp_core::capture::CaptureReader;
use hsrtcp_core::matcher::{match_batches, MatchOptions};
use hsrtcp_core::wire::{decode, Decoded, Segment};

fn batches(path: &Path) -> Vec<Arc<Vec<Segment>>> {
    let mut r = CaptureReader::open(path).expect("open");
    let mut out = Vec::new();
    let mut cur = Vec::with_capacity(2048);
    while let Ok(Some(f)) = r.next_frame() {
        if let Decoded::Tcp(s) = decode(&f) {
            cur.push(s);
            if cur.len() == 2048 {
                out.push(Arc::new(std::mem::replace(&mut cur, Vec::with_capacity(2048))));
            }
        }
    }
    out.push(Arc::new(cur));
    out
}

fn main() {
    let a: Vec<String> = std::env::args().skip(1).collect();
    let (c, s) = (batches(Path::new(&a[0])), batches(Path::new(&a[1])));
    let mut best = f64::MAX;
    for _ in 0..5 {
        let t = Instant::now();
        let r = match_batches(c.clone().into_iter(), s.clone().into_iter(), MatchOptions::default());
        let e = t.elapsed().as_secs_f64();
        best = best.min(e);
        eprintln!("{:.4} s, {} pairs", e, r.pairs);
    }
    println!("match_batches best {best:.4} s");
}
