//! Any bytes as a capture file: the reader must never panic, hang or grow without bound;
//! every frame it yields is also decoded.
//!
//! The first byte picks a valid file header to put in front of the rest (none, pcap µs LE,
//! pcap ns BE, pcapng LE with two interfaces, or gzip of a pcap), so the fuzzer spends its
//! time on records and blocks rather than on finding a magic number.
#![no_main]

use std::io::Write;

use hsrtcp_core::capture::CaptureReader;
use hsrtcp_core::wire::decode;
use libfuzzer_sys::fuzz_target;

const PCAP_LE_US: [u8; 24] = [
    0xd4, 0xc3, 0xb2, 0xa1, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0, 1, 0, 0, 0,
];
const PCAP_BE_NS: [u8; 24] = [
    0xa1, 0xb2, 0x3c, 0x4d, 0, 2, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 128, 0, 0, 0, 113,
];
/// SHB (28 bytes) + IDB Ethernet (20 bytes) + IDB SLL2 with if_tsresol 9 (28 bytes), LE.
const PCAPNG_LE: [u8; 76] = [
    0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0, 0x4d, 0x3c, 0x2b, 0x1a, 1, 0, 0, 0, 0xff, 0xff, 0xff,
    0xff, 0xff, 0xff, 0xff, 0xff, 28, 0, 0, 0, //
    1, 0, 0, 0, 20, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 20, 0, 0, 0, //
    1, 0, 0, 0, 28, 0, 0, 0, 0x14, 1, 0, 0, 0, 0, 0, 0, 9, 0, 1, 0, 9, 0, 0, 0, 28, 0, 0, 0,
];

fn run(bytes: Vec<u8>) {
    let len = bytes.len() as u64;
    let Ok(mut r) =
        CaptureReader::from_reader(Box::new(std::io::Cursor::new(bytes)), "fuzz".into())
    else {
        return;
    };
    // Each record takes at least 16 bytes of the (decompressed) input, so this ends.
    let mut n = 0u64;
    loop {
        match r.next_frame() {
            Ok(Some(f)) => {
                let _ = decode(&f);
                n += 1;
            }
            Ok(None) => break,
            Err(e) => {
                assert!(e.to_string().starts_with("fuzz: "));
                break;
            }
        }
    }
    assert!(r.is_gzip() || n <= len / 12);
    assert!(matches!(r.next_frame(), Ok(None)));
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, rest)) = data.split_first() else {
        return;
    };
    let with = |h: &[u8]| [h, rest].concat();
    match sel % 5 {
        0 => run(rest.to_vec()),
        1 => run(with(&PCAP_LE_US)),
        2 => run(with(&PCAP_BE_NS)),
        3 => run(with(&PCAPNG_LE)),
        _ => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
            e.write_all(&with(&PCAP_LE_US)).unwrap();
            run(e.finish().unwrap());
        }
    }
});
