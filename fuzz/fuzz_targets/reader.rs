//! Any bytes as a capture file: the reader must never panic, hang or allocate without
//! bound; every frame it yields is also decoded. Seed corpus: `tests/data/*.pcap*`.
#![no_main]

use hsrtcp_core::capture::CaptureReader;
use hsrtcp_core::wire::decode;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(mut r) = CaptureReader::from_reader(Box::new(std::io::Cursor::new(data.to_vec())), "fuzz".into()) else {
        return;
    };
    // Each record consumes at least 12 bytes, so the loop is bounded by the input.
    let mut n = 0usize;
    loop {
        match r.next_frame() {
            Ok(Some(f)) => {
                assert!(f.offset < data.len() as u64 * 64 + 64);
                let _ = decode(&f);
                n += 1;
                assert!(n <= data.len());
            }
            Ok(None) => break,
            Err(e) => {
                assert!(e.to_string().starts_with("fuzz: "));
                break;
            }
        }
    }
    assert!(matches!(r.next_frame(), Ok(None)));
});
